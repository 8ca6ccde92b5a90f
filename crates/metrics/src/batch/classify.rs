//! Classification, NER, agreement, calibration and latency metrics: `seqeval`,
//! `classification_report`, `routing_accuracy`, `relation_f1`, `cohen_kappa`,
//! `krippendorff_alpha`, `spearman`, `kendall_tau`, `ece`, `self_consistency`, `abstention`,
//! `latency`, `sample_size`.

use crate::agreement::{self, KappaWeights, Level};
use crate::calibration;
use crate::classify::relation::relation_f1;
use crate::classify::report::{classification_report, ZeroDivision};
use crate::classify::seqeval::{self, Mode, Scheme};
use oloproof_stats::quantile::{quantiles, QuantileMethod};
use serde_json::{json, Map, Value};

use super::{
    bootstrap_statistic, kind, opt, proportion_interval, Estimate, MetricError, MetricInput,
    MetricOutput, MetricSpec, OptionSpec,
};

pub(crate) fn metrics() -> Vec<MetricSpec> {
    vec![
        MetricSpec {
            name: "seqeval",
            summary: "entity-level NER precision/recall/F1 per type and averaged, exactly as seqeval 1.2.2",
            fields: "true: [tag, …]  gold tags of one sentence (IOB1/IOB2/IOE1/IOE2/IOBES/BILOU, e.g. B-PER)\npred: [tag, …]  predicted tags, same length",
            options: const { &[
                OptionSpec::value("mode", "default (conlleval-like, lenient) or strict (needs --scheme)", Some("default")),
                OptionSpec::value("scheme", "IOB1, IOB2, IOE1, IOE2, IOBES or BILOU (strict mode)", None),
                OptionSpec::value("average", "micro, macro or weighted: which F1 is the value", Some("micro")),
                OptionSpec::value("suffix", "true if tags end with their prefix (PER-B)", Some("false")),
                OptionSpec::value("zero-division", "0 or 1: value of a precision/recall with zero denominator", Some("0")),
            ] },
            run: seqeval_metric,
        },
        MetricSpec {
            name: "classification_report",
            summary: "per-class precision/recall/F1 and averages, as scikit-learn's classification_report",
            fields: "true: label (string or number)\npred: label",
            options: const { &[
                OptionSpec::value("average", "macro, weighted or micro: which F1 is the value", Some("macro")),
                OptionSpec::value("zero-division", "0, 1 or nan (undefined values left out of averages)", Some("0")),
            ] },
            run: classification_report_metric,
        },
        MetricSpec {
            name: "routing_accuracy",
            summary: "share of queries sent to the expected route, with per-route precision/recall",
            fields: "expected_route: string\nroute: string  the route the router chose",
            options: &[],
            run: routing_accuracy,
        },
        MetricSpec {
            name: "relation_f1",
            summary: "micro precision/recall/F1 over exact (head, relation, tail) triples",
            fields: "gold: [[head, relation, tail], …]\npredicted: [[head, relation, tail], …]",
            options: &[],
            run: relation_metric,
        },
        MetricSpec {
            name: "cohen_kappa",
            summary: "Cohen's kappa between two raters, as scikit-learn's cohen_kappa_score",
            fields: "rater_a: label (string or number; numbers are ordered numerically for weights)\nrater_b: label",
            options: const { &[OptionSpec::value("weights", "none, linear or quadratic", Some("none"))] },
            run: cohen_kappa,
        },
        MetricSpec {
            name: "krippendorff_alpha",
            summary: "Krippendorff's alpha over units coded by several coders, as the krippendorff package",
            fields: "ratings: [value or null, …]  one unit; one entry per coder, null when missing\n(strings are allowed with --level nominal)",
            options: const { &[OptionSpec::value("level", "nominal, ordinal, interval or ratio", Some("nominal"))] },
            run: krippendorff,
        },
        MetricSpec {
            name: "spearman",
            summary: "Spearman's rank correlation (average ranks for ties), as scipy's spearmanr",
            fields: "x: number\ny: number",
            options: &[],
            run: spearman,
        },
        MetricSpec {
            name: "kendall_tau",
            summary: "Kendall's tau-b (ties corrected), as scipy's kendalltau",
            fields: "x: number\ny: number",
            options: &[],
            run: kendall,
        },
        MetricSpec {
            name: "ece",
            summary: "expected calibration error, equal-width bins [m/M, (m+1)/M), plus the reliability diagram",
            fields: "confidence: number in [0, 1]\ncorrect: boolean (or 0/1)",
            options: const { &[OptionSpec::value("bins", "number of equal-width bins", Some("10"))] },
            run: ece,
        },
        MetricSpec {
            name: "self_consistency",
            summary: "mean share of sampled answers agreeing with the majority answer (Wang et al. 2023)",
            fields: "samples: [string, …]  the sampled answers of one item",
            options: const { &[OptionSpec::value("normalize", "squad (SQuAD answer normalisation) or none", Some("squad"))] },
            run: self_consistency,
        },
        MetricSpec {
            name: "abstention",
            summary: "abstention F1, with precision (right refusals) and recall (out-of-scope cases refused)",
            fields: "expected_abstention: boolean  the case has no answer in the corpus\nabstained: boolean  the system refused",
            options: &[],
            run: abstention,
        },
        MetricSpec {
            name: "latency",
            summary: "latency quantiles (p50/p95/p99 by default) per stage, by numpy's quantile methods",
            fields: "latency_ms: number\nstage: string (optional; quantiles per stage and overall)",
            options: const { &[
                OptionSpec::value("method", "numpy method: linear, lower, higher, nearest, midpoint, inverted_cdf, hazen, …", Some("linear")),
                OptionSpec::value("q", "comma-separated quantiles; the value is the last one", Some("0.5,0.95,0.99")),
            ] },
            run: latency,
        },
        MetricSpec {
            name: "sample_size",
            summary: "cases needed to detect a difference between two systems (two-sided), as statsmodels' power classes",
            fields: "baseline: number or boolean  the baseline's score or pass/fail on a pilot case\ncandidate: number or boolean  the candidate's, same case",
            options: const { &[
                OptionSpec::value("design", "paired (same cases: TTestPower on differences) or unpaired (NormalIndPower on Cohen's h for pass/fail, TTestIndPower for scores)", Some("paired")),
                OptionSpec::value("alpha", "two-sided significance level", Some("0.05")),
                OptionSpec::value("power", "target power", Some("0.8")),
                OptionSpec::value("mde", "minimum difference to detect, in score units (default: the observed mean difference)", None),
            ] },
            run: sample_size,
        },
    ]
}

fn option<T>(input: &MetricInput, name: &str) -> Result<Option<T>, MetricError>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    input
        .option(name)
        .map(|v| {
            v.parse()
                .map_err(|e: T::Err| MetricError::usage(format!("--{name}: {e}")))
        })
        .transpose()
}

fn array_field<'a>(
    line: usize,
    row: &'a Map<String, Value>,
    field: &str,
) -> Result<&'a Vec<Value>, MetricError> {
    match row.get(field) {
        Some(Value::Array(a)) => Ok(a),
        Some(other) => Err(MetricError::at(
            line,
            field,
            format!("expected an array, found {}", kind(other)),
        )),
        None => Err(MetricError::at(line, field, "missing field".to_string())),
    }
}

fn strings(line: usize, row: &Map<String, Value>, field: &str) -> Result<Vec<String>, MetricError> {
    array_field(line, row, field)?
        .iter()
        .map(|v| match v {
            Value::String(s) => Ok(s.clone()),
            other => Err(MetricError::at(
                line,
                field,
                format!("expected an array of strings, found {} in it", kind(other)),
            )),
        })
        .collect()
}

fn bool_field(line: usize, row: &Map<String, Value>, field: &str) -> Result<bool, MetricError> {
    match row.get(field) {
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::Number(n)) if n.as_f64() == Some(0.0) => Ok(false),
        Some(Value::Number(n)) if n.as_f64() == Some(1.0) => Ok(true),
        Some(other) => Err(MetricError::at(
            line,
            field,
            format!("expected a boolean (or 0/1), found {}", kind(other)),
        )),
        None => Err(MetricError::at(line, field, "missing field".to_string())),
    }
}

/// A label: a string, or a number shown as JSON shows it.
fn label(line: usize, row: &Map<String, Value>, field: &str) -> Result<Value, MetricError> {
    match row.get(field) {
        Some(v @ (Value::String(_) | Value::Number(_) | Value::Bool(_))) => Ok(v.clone()),
        Some(other) => Err(MetricError::at(
            line,
            field,
            format!("expected a string or number label, found {}", kind(other)),
        )),
        None => Err(MetricError::at(line, field, "missing field".to_string())),
    }
}

fn label_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Maps labels to ranks that keep numeric order when every label is a number, string order
/// otherwise.
fn ordered_ranks(values: &[Value]) -> Vec<usize> {
    let numeric: Option<Vec<f64>> = values.iter().map(Value::as_f64).collect();
    match numeric {
        Some(x) => {
            let mut sorted = x.clone();
            sorted.sort_by(f64::total_cmp);
            sorted.dedup();
            x.iter()
                .map(|v| sorted.partition_point(|s| s < v))
                .collect()
        }
        None => {
            let text: Vec<String> = values.iter().map(label_text).collect();
            let mut sorted = text.clone();
            sorted.sort();
            sorted.dedup();
            text.iter()
                .map(|v| sorted.partition_point(|s| s < v))
                .collect()
        }
    }
}

/// Percentile bootstrap over items ([`bootstrap_statistic`]) of a statistic of summed counts
/// `[a, b, c]` (true positives, predicted, gold).
fn ratio_bootstrap(
    counts: &[[u64; 3]],
    ratio: impl Fn(u64, u64, u64) -> Option<f64>,
) -> Result<Option<[f64; 2]>, MetricError> {
    let statistic = |idx: &[usize]| {
        let mut sum = [0u64; 3];
        for &i in idx {
            for (s, c) in sum.iter_mut().zip(counts[i]) {
                *s += c;
            }
        }
        ratio(sum[0], sum[1], sum[2])
    };
    bootstrap_statistic(counts.len(), &statistic)
}

const RATIO_METHOD: &str = "percentile bootstrap over items, seed 0, 1000 resamples";

fn seqeval_metric(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let scheme: Option<Scheme> = option(input, "scheme")?;
    let mode =
        match (input.option("mode").unwrap_or("default"), scheme) {
            ("default", _) => Mode::Default,
            ("strict", Some(s)) => Mode::Strict(s),
            ("strict", None) => return Err(MetricError::usage(
                "--mode strict needs --scheme (IOB1, IOB2, IOE1, IOE2, IOBES or BILOU); seqeval \
                 silently falls back to the default mode without one"
                    .into(),
            )),
            (other, _) => {
                return Err(MetricError::usage(format!(
                    "--mode {other}: expected default or strict"
                )))
            }
        };
    let suffix = match input.option("suffix").unwrap_or("false") {
        "true" => true,
        "false" => false,
        other => {
            return Err(MetricError::usage(format!(
                "--suffix {other}: expected true or false"
            )))
        }
    };
    let zero_division = match input.option("zero-division").unwrap_or("0") {
        "0" | "warn" => seqeval::ZeroDivision::Zero,
        "1" => seqeval::ZeroDivision::One,
        other => {
            return Err(MetricError::usage(format!(
                "--zero-division {other}: expected 0 or 1"
            )))
        }
    };
    let options = seqeval::Options {
        mode,
        suffix,
        zero_division,
    };
    let mut truth = Vec::with_capacity(input.rows.len());
    let mut pred = Vec::with_capacity(input.rows.len());
    for (line, row) in &input.rows {
        let t = strings(*line, row, "true")?;
        let p = strings(*line, row, "pred")?;
        if t.len() != p.len() {
            return Err(MetricError::at(
                *line,
                "pred",
                format!("{} tags but `true` has {}", p.len(), t.len()),
            ));
        }
        truth.push(t);
        pred.push(p);
    }
    // Report a bad tag at its line.
    if let Mode::Strict(scheme) = mode {
        for ((line, _), (t, p)) in input.rows.iter().zip(truth.iter().zip(&pred)) {
            for (field, tags) in [("true", t), ("pred", p)] {
                seqeval::strict_entities(tags, scheme, suffix)
                    .map_err(|e| MetricError::at(*line, field, e.to_string()))?;
            }
        }
    }
    let report = seqeval::evaluate(&truth, &pred, &options)
        .map_err(|e| MetricError::usage(e.to_string()))?;
    let average = input.option("average").unwrap_or("micro");
    let chosen = match average {
        "micro" => Some(report.micro),
        "macro" => report.macro_avg,
        "weighted" => Some(report.weighted),
        other => {
            return Err(MetricError::usage(format!(
                "--average {other}: expected micro, macro or weighted"
            )))
        }
    };
    let mut extra = Map::new();
    extra.insert("precision".into(), opt(chosen.map(|s| s.precision)));
    extra.insert("recall".into(), opt(chosen.map(|s| s.recall)));
    extra.insert("support".into(), json!(report.micro.support));
    extra.insert("average".into(), json!(average));
    extra.insert("accuracy".into(), opt(report.accuracy));
    let scores = |s: &seqeval::Scores| json!({"precision": s.precision, "recall": s.recall, "f1": s.f1, "support": s.support});
    extra.insert(
        "per_type".into(),
        Value::Array(
            report
                .per_type
                .iter()
                .map(|t| {
                    let mut v = scores(&t.scores);
                    v["type"] = json!(t.name);
                    v
                })
                .collect(),
        ),
    );
    extra.insert("micro".into(), scores(&report.micro));
    extra.insert(
        "macro".into(),
        report.macro_avg.as_ref().map_or(Value::Null, scores),
    );
    extra.insert("weighted".into(), scores(&report.weighted));
    let mut interval = None;
    let mut items = Vec::new();
    if average == "micro" {
        let counts = seqeval::sentence_counts(&truth, &pred, &options)
            .map_err(|e| MetricError::usage(e.to_string()))?;
        interval = ratio_bootstrap(&counts, |tp, p, t| {
            (p + t > 0).then(|| 2.0 * tp as f64 / (p + t) as f64)
        })?;
        items = counts
            .iter()
            .map(|c| json!({"true_positives": c[0], "predicted": c[1], "true": c[2]}))
            .collect();
    }
    Ok(MetricOutput {
        estimate: Estimate::point(chosen.map(|s| s.f1)).with_interval(interval, RATIO_METHOD),
        extra,
        items,
    })
}

fn report_output(
    truth: &[String],
    pred: &[String],
    zero_division: ZeroDivision,
    average: &str,
) -> Result<MetricOutput, MetricError> {
    let report = classification_report(truth, pred, zero_division)
        .map_err(|e| MetricError::usage(e.to_string()))?;
    let Some(report) = report else {
        return Ok(MetricOutput::value(None));
    };
    let chosen = match average {
        "micro" | "accuracy" => report.micro,
        "macro" => report.macro_avg,
        "weighted" => report.weighted,
        other => {
            return Err(MetricError::usage(format!(
                "--average {other}: expected macro, weighted or micro"
            )))
        }
    };
    let scores = |s: &crate::classify::report::ClassScores| json!({"precision": opt(s.precision), "recall": opt(s.recall), "f1": opt(s.f1), "support": s.support});
    let mut extra = Map::new();
    extra.insert("accuracy".into(), json!(report.accuracy));
    let n = truth.len() as u64;
    let correct = report
        .per_class
        .iter()
        .map(|c| c.true_positives)
        .sum::<u64>();
    extra.insert(
        "accuracy_interval".into(),
        json!(proportion_interval(correct, n)?),
    );
    extra.insert("n".into(), json!(n));
    extra.insert(
        "per_class".into(),
        Value::Array(
            report
                .per_class
                .iter()
                .map(|c| {
                    let mut v = scores(&c.scores);
                    v["label"] = json!(c.label);
                    v
                })
                .collect(),
        ),
    );
    extra.insert("macro".into(), scores(&report.macro_avg));
    extra.insert("weighted".into(), scores(&report.weighted));
    Ok(MetricOutput {
        extra,
        ..MetricOutput::value(chosen.f1)
    })
}

fn classification_report_metric(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let zd: ZeroDivision = option(input, "zero-division")?.unwrap_or_default();
    let mut truth = Vec::new();
    let mut pred = Vec::new();
    for (line, row) in &input.rows {
        truth.push(label_text(&label(*line, row, "true")?));
        pred.push(label_text(&label(*line, row, "pred")?));
    }
    let mut out = report_output(
        &truth,
        &pred,
        zd,
        input.option("average").unwrap_or("macro"),
    )?;
    out.items = truth
        .iter()
        .zip(&pred)
        .map(|(t, p)| json!({"correct": t == p}))
        .collect();
    Ok(out)
}

fn routing_accuracy(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let mut truth = Vec::new();
    let mut pred = Vec::new();
    for (line, row) in &input.rows {
        truth.push(input.str_field(*line, row, "expected_route")?.to_string());
        pred.push(input.str_field(*line, row, "route")?.to_string());
    }
    let mut out = report_output(&truth, &pred, ZeroDivision::Zero, "micro")?;
    let n = truth.len() as u64;
    let correct = truth.iter().zip(&pred).filter(|(t, p)| t == p).count() as u64;
    out.estimate = Estimate::proportion(correct, n)?;
    out.extra.remove("accuracy_interval");
    out.items = truth
        .iter()
        .zip(&pred)
        .map(|(t, p)| json!({"correct": t == p}))
        .collect();
    Ok(out)
}

type OwnedTriple = (String, String, String);

fn triples(
    line: usize,
    row: &Map<String, Value>,
    field: &str,
) -> Result<Vec<OwnedTriple>, MetricError> {
    array_field(line, row, field)?
        .iter()
        .map(|t| match t.as_array().map(|a| a.as_slice()) {
            Some([Value::String(h), Value::String(r), Value::String(t)]) => {
                Ok((h.clone(), r.clone(), t.clone()))
            }
            _ => Err(MetricError::at(
                line,
                field,
                format!("expected [head, relation, tail] strings, found {t}"),
            )),
        })
        .collect()
}

fn relation_metric(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let mut items = Vec::new();
    for (line, row) in &input.rows {
        items.push((
            triples(*line, row, "gold")?,
            triples(*line, row, "predicted")?,
        ));
    }
    let (all, per) = relation_f1(&items);
    let counts: Vec<[u64; 3]> = items
        .iter()
        .map(|item| {
            let (s, _) = relation_f1(std::slice::from_ref(item));
            [s.true_positives, s.predicted, s.gold]
        })
        .collect();
    let interval = ratio_bootstrap(&counts, |tp, p, g| {
        (p > 0 && g > 0).then(|| {
            if tp == 0 {
                0.0
            } else {
                2.0 * tp as f64 / (p + g) as f64
            }
        })
    })?;
    let mut extra = Map::new();
    extra.insert("precision".into(), opt(all.precision));
    extra.insert("recall".into(), opt(all.recall));
    extra.insert("true_positives".into(), json!(all.true_positives));
    extra.insert("predicted".into(), json!(all.predicted));
    extra.insert("gold".into(), json!(all.gold));
    extra.insert(
        "per_relation".into(),
        Value::Array(
            per.iter()
                .map(|(r, s)| json!({"relation": r, "precision": opt(s.precision), "recall": opt(s.recall), "f1": opt(s.f1), "gold": s.gold, "predicted": s.predicted}))
                .collect(),
        ),
    );
    Ok(MetricOutput {
        estimate: Estimate::point(all.f1).with_interval(interval, RATIO_METHOD),
        extra,
        items: counts
            .iter()
            .map(|c| json!({"true_positives": c[0], "predicted": c[1], "gold": c[2]}))
            .collect(),
    })
}

fn cohen_kappa(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let weights: KappaWeights = option(input, "weights")?.unwrap_or_default();
    let mut values = Vec::new();
    for (line, row) in &input.rows {
        values.push(label(*line, row, "rater_a")?);
        values.push(label(*line, row, "rater_b")?);
    }
    let ranks = ordered_ranks(&values);
    let a: Vec<usize> = ranks.iter().step_by(2).copied().collect();
    let b: Vec<usize> = ranks.iter().skip(1).step_by(2).copied().collect();
    let kappa =
        agreement::cohen_kappa(&a, &b, weights).map_err(|e| MetricError::usage(e.to_string()))?;
    let agree = a.iter().zip(&b).filter(|(x, y)| x == y).count();
    let mut extra = Map::new();
    extra.insert("n".into(), json!(a.len()));
    extra.insert(
        "observed_agreement".into(),
        opt((!a.is_empty()).then(|| agree as f64 / a.len() as f64)),
    );
    Ok(MetricOutput {
        extra,
        items: a
            .iter()
            .zip(&b)
            .map(|(x, y)| json!({"agree": x == y}))
            .collect(),
        ..MetricOutput::value(kappa)
    })
}

fn krippendorff(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let level: Level = option(input, "level")?.unwrap_or(Level::Nominal);
    let mut raw: Vec<(usize, Vec<Value>)> = Vec::new();
    for (line, row) in &input.rows {
        raw.push((*line, array_field(*line, row, "ratings")?.clone()));
    }
    // Strings are coded by their sorted position (nominal only: order is meaningless there).
    let mut texts: Vec<&str> = raw
        .iter()
        .flat_map(|(_, r)| r.iter().filter_map(Value::as_str))
        .collect();
    texts.sort_unstable();
    texts.dedup();
    if !texts.is_empty() && level != Level::Nominal {
        return Err(MetricError::usage(
            "string ratings need --level nominal (other levels need numbers)".into(),
        ));
    }
    let mut units = Vec::with_capacity(raw.len());
    for (line, ratings) in &raw {
        let unit = ratings
            .iter()
            .map(|v| match v {
                Value::Null => Ok(None),
                Value::Number(n) => Ok(n.as_f64()),
                Value::String(s) => Ok(Some(texts.partition_point(|t| *t < s.as_str()) as f64)),
                other => Err(MetricError::at(
                    *line,
                    "ratings",
                    format!("expected numbers, strings or null, found {}", kind(other)),
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        units.push(unit);
    }
    let alpha = agreement::krippendorff_alpha(&units, level)
        .map_err(|e| MetricError::usage(e.to_string()))?;
    let mut extra = Map::new();
    extra.insert("units".into(), json!(units.len()));
    extra.insert(
        "level".into(),
        json!(input.option("level").unwrap_or("nominal")),
    );
    Ok(MetricOutput {
        extra,
        ..MetricOutput::value(alpha)
    })
}

fn xy(input: &MetricInput) -> Result<(Vec<f64>, Vec<f64>), MetricError> {
    let mut x = Vec::new();
    let mut y = Vec::new();
    for (line, row) in &input.rows {
        x.push(input.f64_field(*line, row, "x")?);
        y.push(input.f64_field(*line, row, "y")?);
    }
    Ok((x, y))
}

fn spearman(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let (x, y) = xy(input)?;
    let s = agreement::spearman(&x, &y).map_err(|e| MetricError::usage(e.to_string()))?;
    let mut extra = Map::new();
    extra.insert("n".into(), json!(x.len()));
    extra.insert("p_value".into(), opt(s.and_then(|s| s.p_value)));
    Ok(MetricOutput {
        extra,
        ..MetricOutput::value(s.map(|s| s.rho))
    })
}

fn kendall(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let (x, y) = xy(input)?;
    let tau = agreement::kendall_tau_b(&x, &y).map_err(|e| MetricError::usage(e.to_string()))?;
    let mut extra = Map::new();
    extra.insert("n".into(), json!(x.len()));
    Ok(MetricOutput {
        extra,
        ..MetricOutput::value(tau)
    })
}

fn ece(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let bins: usize = input.parsed("bins", "a positive integer")?.unwrap_or(10);
    if bins == 0 {
        return Err(MetricError::usage(
            "--bins 0: expected a positive integer".into(),
        ));
    }
    let mut confidence = Vec::new();
    let mut correct = Vec::new();
    for (line, row) in &input.rows {
        let c = input.f64_field(*line, row, "confidence")?;
        if !(0.0..=1.0).contains(&c) {
            return Err(MetricError::at(
                *line,
                "confidence",
                format!("{c} is outside [0, 1]"),
            ));
        }
        confidence.push(c);
        correct.push(bool_field(*line, row, "correct")?);
    }
    let result = calibration::ece(&confidence, &correct, bins)
        .map_err(|e| MetricError::usage(e.to_string()))?;
    let Some(result) = result else {
        return Ok(MetricOutput::value(None));
    };
    let mut extra = Map::new();
    extra.insert("mce".into(), json!(result.mce));
    extra.insert("n".into(), json!(confidence.len()));
    extra.insert("bins".into(), json!(bins));
    extra.insert(
        "reliability".into(),
        Value::Array(
            result
                .bins
                .iter()
                .map(|b| json!({"lower": b.lower, "upper": b.upper, "count": b.count, "mean_confidence": opt(b.mean_confidence), "accuracy": opt(b.accuracy)}))
                .collect(),
        ),
    );
    Ok(MetricOutput {
        extra,
        items: confidence
            .iter()
            .map(|&c| json!({"bin": calibration::bin_index(c, bins)}))
            .collect(),
        ..MetricOutput::value(Some(result.ece))
    })
}

fn self_consistency(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let squad = match input.option("normalize").unwrap_or("squad") {
        "squad" => true,
        "none" => false,
        other => {
            return Err(MetricError::usage(format!(
                "--normalize {other}: expected squad or none"
            )))
        }
    };
    let mut values = Vec::new();
    let mut items = Vec::new();
    for (line, row) in &input.rows {
        let samples = strings(*line, row, "samples")?;
        let normalized: Vec<String> = if squad {
            samples
                .iter()
                .map(|s| crate::text::normalize_answer(s))
                .collect()
        } else {
            samples.clone()
        };
        let Some(c) = calibration::self_consistency(&normalized) else {
            return Err(MetricError::at(*line, "samples", "no samples".into()));
        };
        values.push(c.agreement);
        items.push(json!({"agreement": c.agreement, "majority": samples[c.majority], "distinct": c.distinct, "samples": samples.len()}));
    }
    let mut out = MetricOutput::mean(&values)?;
    out.items = items;
    Ok(out)
}

fn abstention(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let mut cases = Vec::new();
    for (line, row) in &input.rows {
        cases.push((
            bool_field(*line, row, "expected_abstention")?,
            bool_field(*line, row, "abstained")?,
        ));
    }
    let a = calibration::abstention(&cases);
    let mut extra = Map::new();
    extra.insert("precision".into(), opt(a.precision));
    extra.insert(
        "precision_interval".into(),
        json!(proportion_interval(a.correct, a.abstained)?),
    );
    extra.insert("recall".into(), opt(a.recall));
    extra.insert(
        "recall_interval".into(),
        json!(proportion_interval(a.correct, a.expected)?),
    );
    extra.insert("correct_abstentions".into(), json!(a.correct));
    extra.insert("abstentions".into(), json!(a.abstained));
    extra.insert("expected_abstentions".into(), json!(a.expected));
    Ok(MetricOutput {
        extra,
        items: cases
            .iter()
            .map(|(e, ab)| json!({"correct": e == ab}))
            .collect(),
        ..MetricOutput::value(a.f1)
    })
}

fn latency(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let method: QuantileMethod = option(input, "method")?.unwrap_or_default();
    let qs: Vec<f64> = input
        .option("q")
        .unwrap_or("0.5,0.95,0.99")
        .split(',')
        .map(|q| match q.trim().parse::<f64>() {
            Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
            _ => Err(MetricError::usage(format!(
                "--q: `{q}` is not a quantile in [0, 1]"
            ))),
        })
        .collect::<Result<_, _>>()?;
    if qs.is_empty() {
        return Err(MetricError::usage("--q: no quantile".into()));
    }
    let mut all = Vec::new();
    let mut stages: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for (line, row) in &input.rows {
        let v = input.f64_field(*line, row, "latency_ms")?;
        all.push(v);
        if row.contains_key("stage") {
            let stage = input.str_field(*line, row, "stage")?;
            stages.entry(stage.to_string()).or_default().push(v);
        }
    }
    if all.is_empty() {
        return Ok(MetricOutput::value(None));
    }
    let name = |q: f64| format!("p{}", (q * 1000.0).round() / 10.0);
    let table = |values: &[f64]| -> Result<Map<String, Value>, MetricError> {
        let v = quantiles(values, &qs, method).map_err(|e| MetricError::usage(e.to_string()))?;
        let mut m = Map::new();
        m.insert("n".into(), json!(values.len()));
        for (q, x) in qs.iter().zip(&v) {
            m.insert(name(*q), json!(x));
        }
        Ok(m)
    };
    let overall = quantiles(&all, &qs, method).map_err(|e| MetricError::usage(e.to_string()))?;
    let mut extra = Map::new();
    extra.insert("method".into(), json!(method.name()));
    extra.insert("n".into(), json!(all.len()));
    for (q, x) in qs.iter().zip(&overall) {
        extra.insert(name(*q), json!(x));
    }
    if !stages.is_empty() {
        let mut per = Map::new();
        for (stage, values) in &stages {
            per.insert(stage.clone(), Value::Object(table(values)?));
        }
        extra.insert("stages".into(), Value::Object(per));
    }
    Ok(MetricOutput {
        extra,
        ..MetricOutput::value(overall.last().copied())
    })
}

fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = if x.len() > 1 {
        x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var)
}

fn sample_size(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    use oloproof_stats::power::{self, Design};
    let alpha: f64 = input.parsed("alpha", "a number in (0, 1)")?.unwrap_or(0.05);
    let target: f64 = input.parsed("power", "a number in (0, 1)")?.unwrap_or(0.8);
    let mde: Option<f64> = input.parsed("mde", "a number")?;
    let paired = match input.option("design").unwrap_or("paired") {
        "paired" => true,
        "unpaired" => false,
        other => {
            return Err(MetricError::usage(format!(
                "--design {other}: expected paired or unpaired"
            )))
        }
    };
    let mut baseline = Vec::new();
    let mut candidate = Vec::new();
    for (line, row) in &input.rows {
        baseline.push(input.f64_field(*line, row, "baseline")?);
        candidate.push(input.f64_field(*line, row, "candidate")?);
    }
    if baseline.len() < 2 {
        return Err(MetricError::usage(
            "sample_size needs at least two pilot cases to estimate the variance".into(),
        ));
    }
    let binary = baseline
        .iter()
        .chain(&candidate)
        .all(|&v| v == 0.0 || v == 1.0);
    let (mean_b, var_b) = mean_var(&baseline);
    let (mean_c, var_c) = mean_var(&candidate);
    let mde = mde.unwrap_or(mean_c - mean_b);
    if mde == 0.0 {
        return Err(MetricError::usage(
            "the observed difference is 0: give the difference to detect with --mde".into(),
        ));
    }
    let (design, effect, effect_kind) = if paired {
        let diffs: Vec<f64> = candidate
            .iter()
            .zip(&baseline)
            .map(|(c, b)| c - b)
            .collect();
        let (_, var_d) = mean_var(&diffs);
        (
            Design::Paired,
            mde / var_d.sqrt(),
            "Cohen's d of paired differences (sample sd)",
        )
    } else if binary {
        let p2 = (mean_b + mde).clamp(0.0, 1.0);
        (
            Design::Proportions { ratio: 1.0 },
            power::cohen_h(p2, mean_b),
            "Cohen's h",
        )
    } else {
        let pooled = ((var_b + var_c) / 2.0).sqrt();
        (
            Design::MeansIndependent { ratio: 1.0 },
            mde / pooled,
            "Cohen's d (pooled sample sd)",
        )
    };
    if !effect.is_finite() {
        return Err(MetricError::usage(
            "the pilot differences have no variance: the effect size is undefined".into(),
        ));
    }
    let n = power::sample_size(design, effect, alpha, target)
        .map_err(|e| MetricError::usage(e.to_string()))?;
    let current = power::power(design, effect, baseline.len() as f64, alpha)
        .map_err(|e| MetricError::usage(e.to_string()))?;
    let mut extra = Map::new();
    extra.insert("n_exact".into(), json!(n));
    extra.insert(
        "unit".into(),
        json!(if paired {
            "paired cases"
        } else {
            "cases per system"
        }),
    );
    extra.insert("effect_size".into(), json!(effect));
    extra.insert("effect_kind".into(), json!(effect_kind));
    extra.insert("mde".into(), json!(mde));
    extra.insert("alpha".into(), json!(alpha));
    extra.insert("target_power".into(), json!(target));
    extra.insert("pilot_cases".into(), json!(baseline.len()));
    extra.insert("power_at_pilot_size".into(), json!(current));
    Ok(MetricOutput {
        extra,
        ..MetricOutput::value(Some(n.ceil()))
    })
}
