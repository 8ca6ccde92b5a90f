//! `oloproof calibrate`: what a judge must pass before it may gate.
//!
//! The judge scores human-labelled items with the same evaluator it will be used for; agreement
//! is reported as raw agreement, Cohen's kappa (unweighted, linear and quadratic weights, as
//! scikit-learn's `cohen_kappa_score`), Spearman and Kendall's tau-b, each with a percentile
//! bootstrap interval (seed recorded), plus the confusion matrix. The acceptance threshold
//! (`calibration.<judge>.min_kappa`) is read from the config, declared before measuring. A
//! calibration is recorded under the identity of what was calibrated — the judge's settings
//! (provider, model, base URL, sampling), the evaluator type and every template version, plus
//! the options of an evaluator that has its own decision rule (a classifier's label,
//! threshold and polarity: [`Evaluator::calibrated_options`]) — so changing the model, a
//! template or the threshold invalidates it; `compare` and `gate` refuse to gate on a judged
//! criterion without a passing calibration of that identity.

use std::collections::BTreeMap;

use oloproof_core::calibration::{Calibration, Estimate};
use oloproof_core::config::CalibrationOptions;

use crate::evaluators::Evaluator;
use oloproof_core::identity::content_hash;
use oloproof_core::passage::Passage;
use oloproof_core::store::{Store, StoreLocation};
use oloproof_core::trace::Trace;
use oloproof_core::verdict::Verdict;
use oloproof_metrics::agreement::{cohen_kappa, kendall_tau_b, spearman, KappaWeights};
use serde_json::{json, Map, Value};

use crate::judged::{JudgeEnv, JudgeRegistry, StoreJudgeCache};
use crate::EngineError;

/// Resamples of the agreement intervals.
pub const CALIBRATION_RESAMPLES: usize = 2_000;
/// Seed of the agreement intervals (recorded with the calibration).
pub const CALIBRATION_SEED: u64 = 20_260_916;

/// One human-labelled item: `{"id", "question", "answer", "contexts": [..], "reference"?,
/// "output"?, "label"}`; `output` holds further output fields (an object), for an evaluator
/// that reads a field other than `answer` (e.g. a classifier with `field: summary`).
#[derive(Debug, Clone, PartialEq)]
pub struct LabelledItem {
    /// 1-based line in the labels file.
    pub line: usize,
    /// Item id.
    pub id: String,
    /// The question.
    pub question: String,
    /// The answer being judged.
    pub answer: String,
    /// The context passages.
    pub contexts: Vec<String>,
    /// The reference answer, if any.
    pub reference: Option<String>,
    /// The second answer, for a pairwise judge (`answer` is A, this is B).
    pub answer_b: Option<String>,
    /// Further output fields (`answer` and `citations` are set from the item).
    pub output: Map<String, Value>,
    /// The human label (0/1 for pass/fail judges, a score otherwise; for a pairwise judge
    /// 1 = A better, 0 = B better, 0.5 = tie, also written `"A"`, `"B"`, `"tie"`).
    pub label: f64,
}

/// Reads a labels file; errors name `file:line` and the field.
pub fn read_labels(path: &std::path::Path) -> Result<Vec<LabelledItem>, EngineError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| EngineError::Usage(format!("cannot read {shown}: {e}")))?;
    let mut items = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |field: &str, what: &str| {
            EngineError::Usage(format!("{shown}:{}: field `{field}`: {what}", i + 1))
        };
        let row: Map<String, Value> = serde_json::from_str(line).map_err(|e| {
            EngineError::Usage(format!(
                "{shown}:{}:{}: malformed JSON object: {e}",
                i + 1,
                e.column()
            ))
        })?;
        let string = |k: &str| -> Result<String, EngineError> {
            row.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| at(k, "expected a string"))
        };
        let label = match row.get("label") {
            Some(Value::Bool(b)) => f64::from(u8::from(*b)),
            Some(Value::Number(n)) => n
                .as_f64()
                .filter(|x| x.is_finite())
                .ok_or_else(|| at("label", "expected a finite number"))?,
            // A pairwise preference.
            Some(Value::String(s)) if s == "A" => 1.0,
            Some(Value::String(s)) if s == "B" => 0.0,
            Some(Value::String(s)) if s == "tie" => 0.5,
            _ => {
                return Err(at(
                    "label",
                    "expected a number (0/1 for pass/fail judges), a boolean, or \"A\", \"B\", \"tie\" for a pairwise judge",
                ))
            }
        };
        let contexts = match row.get("contexts") {
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| at("contexts", "expected an array of strings"))
                })
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
            Some(_) => return Err(at("contexts", "expected an array of strings")),
        };
        let output = match row.get("output") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(map)) => map.clone(),
            Some(_) => {
                return Err(at(
                    "output",
                    "expected an object of further output fields, e.g. {\"summary\": \"…\"}",
                ))
            }
        };
        items.push(LabelledItem {
            line: i + 1,
            id: row
                .get("id")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("line-{}", i + 1)),
            question: string("question")?,
            answer: string("answer")?,
            contexts,
            reference: row
                .get("reference")
                .and_then(Value::as_str)
                .map(str::to_string),
            answer_b: match row.get("answer_b") {
                None | Some(Value::Null) => None,
                Some(_) => Some(string("answer_b")?),
            },
            output,
            label,
        });
    }
    if items.is_empty() {
        return Err(EngineError::Usage(format!("{shown} has no labelled items")));
    }
    Ok(items)
}

/// A judge as a calibration identifies it: its settings as written in `judges:`, plus, for a
/// `provider: local` model, `model_identity` — the content hash of its files (`None` when the
/// model cannot be loaded), so a different model at the same path needs its own calibration.
pub fn calibrated_judge(judges: &BTreeMap<String, Value>, name: &str) -> Value {
    let mut value = judges.get(name).cloned().unwrap_or(Value::Null);
    if value.get("provider").and_then(Value::as_str) == Some("local") {
        // Settings that do not parse or a model that does not load have no identity (`None`,
        // as documented); validating the config reports them to the user.
        let identity = serde_json::from_value::<oloproof_judge::JudgeSettings>(value.clone())
            .ok()
            .and_then(|s| oloproof_judge::JudgeClient::new(name, s).ok())
            .and_then(|c| c.model_identity());
        if let Value::Object(map) = &mut value {
            map.insert(
                "model_identity".into(),
                identity.map(Value::String).unwrap_or(Value::Null),
            );
        }
    }
    value
}

/// What a calibration is about: hashed into the identity `compare` checks.
pub fn calibration_identity(judge_settings: &Value, evaluator_type: &str) -> String {
    calibration_identity_with(judge_settings, evaluator_type, None)
}

/// [`calibration_identity`] with the evaluator's calibrated options
/// ([`Evaluator::calibrated_options`]: a classifier's label, threshold, polarity and window
/// rule) hashed in too; without them (`None`) it is [`calibration_identity`] exactly, so the
/// calibrations of the other evaluators keep their identity.
pub fn calibration_identity_with(
    judge_settings: &Value,
    evaluator_type: &str,
    options: Option<&Value>,
) -> String {
    let templates: Vec<Value> = oloproof_judge::templates::ALL
        .iter()
        .map(|t| json!([t.id, t.version]))
        .collect();
    let mut what =
        json!({"judge": judge_settings, "evaluator": evaluator_type, "templates": templates});
    if let (Some(options), Value::Object(map)) = (options, &mut what) {
        map.insert("evaluator_options".into(), options.clone());
    }
    content_hash(&what)
}

/// The evaluator `oloproof calibrate --judge JUDGE --evaluator TYPE [--criterion NAME]` scores
/// the labelled items with, from the config's (validated) `evaluators`:
///
/// * with `criterion`: the config's entry reporting that criterion, of type `TYPE` and
///   calling `JUDGE`;
/// * a judged evaluator without options of its own (`{type: TYPE, judge: JUDGE}` builds and
///   has no [`Evaluator::calibrated_options`]): that bare entry, whatever the config says;
/// * otherwise (a classifier, whose label and threshold are what is calibrated): the config's
///   one entry of type `TYPE` calling `JUDGE`.
///
/// Errors ([`EngineError::Usage`]) say which entries exist when none or several fit, and name
/// the judged types when `TYPE` is not one.
pub fn calibration_evaluator(
    evaluators: &[oloproof_core::config::EvaluatorEntry],
    judge: &str,
    type_name: &str,
    criterion: Option<&str>,
) -> Result<Box<dyn Evaluator>, EngineError> {
    let configured: Vec<Box<dyn Evaluator>> = crate::evaluators::build_all(evaluators)?
        .into_iter()
        .filter(|e| {
            e.identity().type_name == type_name
                && e.judge_choice().is_some()
                && e.judge_names().iter().any(|n| n == judge)
        })
        .collect();
    let criteria = |list: &[Box<dyn Evaluator>]| -> String {
        list.iter()
            .map(|e| e.criterion().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(wanted) = criterion {
        let listed = criteria(&configured);
        return configured
            .into_iter()
            .find(|e| e.criterion() == wanted)
            .ok_or_else(|| {
                EngineError::Usage(format!(
                    "no `{type_name}` entry of `evaluators:` calling judge `{judge}` reports criterion `{wanted}`{}",
                    if listed.is_empty() {
                        String::new()
                    } else {
                        format!(" (those that do report: {listed})")
                    }
                ))
            });
    }
    // A bare entry that does not build (a type without `judge:`, or one needing options of
    // its own) is no candidate: the error below says what to do.
    let bare = crate::evaluators::from_json(&json!({"type": type_name, "judge": judge}))
        .ok()
        .filter(|e| e.judge_choice().is_some());
    let bare = match bare {
        Some(e) if e.calibrated_options().is_none() => return Ok(e),
        other => other,
    };
    let mut configured = configured;
    match configured.len() {
        1 => Ok(configured.remove(0)),
        0 => match bare {
            Some(e) => Ok(e),
            None => Err(EngineError::Usage(format!(
                "`{type_name}` is not a judged evaluator; use groundedness_judge, faithfulness, \
                 context_recall, …, or declare the `{type_name}` entry with `judge: {judge}` under \
                 `evaluators:` (an evaluator with options of its own, such as `classifier`'s \
                 label and threshold, is calibrated as the config declares it)"
            ))),
        },
        _ => Err(EngineError::Usage(format!(
            "several `{type_name}` entries call judge `{judge}` (criteria: {}): choose one with `--criterion`",
            criteria(&configured)
        ))),
    }
}

fn category(x: f64) -> i64 {
    (x * 1000.0).round() as i64
}

fn label_text(c: i64) -> String {
    let x = c as f64 / 1000.0;
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

fn estimate(n: usize, stat: &dyn Fn(&[usize]) -> Option<f64>) -> Estimate {
    let all: Vec<usize> = (0..n).collect();
    let value = stat(&all);
    let interval = if value.is_some() {
        oloproof_stats::percentile_bootstrap_statistic(
            n,
            CALIBRATION_RESAMPLES,
            CALIBRATION_SEED,
            0.95,
            stat,
        )
        // The bootstrap fails only for no items or a bad level, neither possible here.
        .ok()
        .flatten()
        .map(|ci| [ci.lo, ci.hi])
    } else {
        None
    };
    Estimate { value, interval }
}

/// Runs `evaluator` (a judged evaluator of the config) on the labelled items and records the
/// calibration.
pub fn calibrate(
    store: &mut dyn Store,
    location: &StoreLocation,
    judges: &BTreeMap<String, Value>,
    judge_name: &str,
    evaluator: &dyn Evaluator,
    thresholds: &CalibrationOptions,
    items: &[LabelledItem],
) -> Result<Calibration, EngineError> {
    calibrate_scored(
        store, location, judges, judge_name, evaluator, thresholds, items,
    )
    .map(|(c, _)| c)
}

/// One labelled item as the evaluator scored it: the human label and the verdict's detail
/// (a classifier's `probability` among it), for [`threshold_sweep`].
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredItem {
    /// Item id.
    pub id: String,
    /// The human label.
    pub label: f64,
    /// The verdict's status (`pass`, `fail`, `missing`, …).
    pub status: String,
    /// The verdict's detail.
    pub detail: Value,
}

/// [`calibrate`], also returning every item as scored (for [`threshold_sweep`]). The
/// calibration recorded is the same.
pub fn calibrate_scored(
    store: &mut dyn Store,
    location: &StoreLocation,
    judges: &BTreeMap<String, Value>,
    judge_name: &str,
    evaluator: &dyn Evaluator,
    thresholds: &CalibrationOptions,
    items: &[LabelledItem],
) -> Result<(Calibration, Vec<ScoredItem>), EngineError> {
    let registry =
        JudgeRegistry::from_options(judges).map_err(|e| EngineError::Usage(e.to_string()))?;
    let settings = judges
        .get(judge_name)
        .ok_or_else(|| EngineError::Usage(format!("no judge named `{judge_name}`")))?;
    // `store` is open at this path, so a reader that cannot open is a real failure: calling
    // every judge again, uncached and billed, without a word would be worse than stopping.
    let cache = StoreJudgeCache::new(Some(oloproof_store::open_reader(location)?));
    let env = JudgeEnv {
        judges: &registry,
        cache: &cache,
    };
    let mut human = Vec::new();
    let mut machine = Vec::new();
    let mut missing = Vec::new();
    let mut scored = Vec::with_capacity(items.len());
    for item in items {
        let line = json!({
            "id": item.id,
            "input": {"question": item.question},
            "expected": item.reference.as_ref().map(|r| json!({"answer": r})).unwrap_or(json!({})),
        });
        let case: oloproof_core::case::Case =
            serde_json::from_value(line).map_err(|source| EngineError::Corrupt {
                what: format!("labelled item {}", item.id),
                source,
            })?;
        let mut trace = Trace::new(&item.id);
        let passages: Vec<Passage> = item
            .contexts
            .iter()
            .enumerate()
            .map(|(i, t)| Passage {
                doc_id: format!("c{}", i + 1),
                chunk_id: None,
                score: None,
                text: Some(t.clone()),
                metadata: None,
            })
            .collect();
        trace.context = Some(oloproof_core::context::assemble(
            &passages,
            passages.len(),
            None,
        ));
        let mut generation = item.output.clone();
        generation.insert("answer".into(), Value::String(item.answer.clone()));
        if let Some(b) = &item.answer_b {
            generation.insert("answer_b".into(), Value::String(b.clone()));
        }
        generation.insert(
            "citations".into(),
            json!(passages
                .iter()
                .map(|p| p.doc_id.clone())
                .collect::<Vec<_>>()),
        );
        trace.generation = Some(generation);
        let verdict = evaluator.evaluate(&case, &trace, Some(&env));
        scored.push(ScoredItem {
            id: item.id.clone(),
            label: item.label,
            status: verdict.verdict.status().to_string(),
            detail: verdict.detail.clone(),
        });
        match verdict.verdict.value() {
            Some(v) => {
                human.push(item.label);
                machine.push(v);
            }
            None => missing.push(item.id.clone()),
        }
        if matches!(verdict.verdict, Verdict::Missing { .. }) && missing.last() != Some(&item.id) {
            missing.push(item.id.clone());
        }
    }
    store.put_cache_entries(&cache.take_writes())?;
    let n = human.len();
    let h: Vec<i64> = human.iter().map(|x| category(*x)).collect();
    let m: Vec<i64> = machine.iter().map(|x| category(*x)).collect();
    let pick = |idx: &[usize], v: &[i64]| -> Vec<i64> { idx.iter().map(|&i| v[i]).collect() };
    let pickf = |idx: &[usize], v: &[f64]| -> Vec<f64> { idx.iter().map(|&i| v[i]).collect() };
    let (hr, mr) = (&h, &m);
    let kappa_with = |w: KappaWeights| {
        move |idx: &[usize]| {
            // Equal lengths by construction: an error here is an undefined kappa (`None`).
            cohen_kappa(&pick(idx, hr), &pick(idx, mr), w)
                .ok()
                .flatten()
        }
    };
    let agreement = estimate(n, &|idx: &[usize]| {
        (!idx.is_empty())
            .then(|| idx.iter().filter(|&&i| h[i] == m[i]).count() as f64 / idx.len() as f64)
    });
    let kappa = estimate(n, &kappa_with(KappaWeights::None));
    let kappa_linear = estimate(n, &kappa_with(KappaWeights::Linear));
    let kappa_quadratic = estimate(n, &kappa_with(KappaWeights::Quadratic));
    let rho = estimate(n, &|idx: &[usize]| {
        // Equal lengths, finite scores: an error is an undefined rho (`None`).
        spearman(&pickf(idx, &human), &pickf(idx, &machine))
            .ok()
            .flatten()
            .map(|s| s.rho)
    });
    let tau = estimate(n, &|idx: &[usize]| {
        // Equal lengths, finite scores: an error is an undefined tau (`None`).
        kendall_tau_b(&pickf(idx, &human), &pickf(idx, &machine))
            .ok()
            .flatten()
    });
    let mut confusion: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for (a, b) in h.iter().zip(&m) {
        *confusion
            .entry(label_text(*a))
            .or_default()
            .entry(label_text(*b))
            .or_default() += 1;
    }
    let weights = thresholds.weights.clone().unwrap_or_else(|| "none".into());
    let gate_kappa = match weights.as_str() {
        "linear" => kappa_linear.value,
        "quadratic" => kappa_quadratic.value,
        _ => kappa.value,
    };
    let passed = missing.is_empty() && gate_kappa.is_some_and(|k| k >= thresholds.min_kappa);
    let mut judge_identity = settings.clone();
    if let (Some(model), Value::Object(map)) = (
        registry.client(judge_name).and_then(|c| c.model_identity()),
        &mut judge_identity,
    ) {
        map.insert("model_identity".into(), Value::String(model));
    }
    let identity = calibration_identity_with(
        &judge_identity,
        evaluator.identity().type_name.as_str(),
        evaluator.calibrated_options().as_ref(),
    );
    let mut c = Calibration {
        id: String::new(),
        judge: judge_name.to_string(),
        evaluator: evaluator.identity().type_name.as_str().to_string(),
        identity: identity.clone(),
        n,
        missing,
        agreement,
        kappa,
        kappa_linear,
        kappa_quadratic,
        spearman: rho,
        kendall_tau_b: tau,
        confusion,
        min_kappa: thresholds.min_kappa,
        weights,
        passed,
        bootstrap: [CALIBRATION_SEED, CALIBRATION_RESAMPLES as u64],
    };
    let value = serde_json::to_value(&c).map_err(|source| EngineError::Corrupt {
        what: "calibration".into(),
        source,
    })?;
    c.id = format!("sha256:{}", content_hash(&value));
    let stored = serde_json::to_string(&c).map_err(|source| EngineError::Corrupt {
        what: "calibration".into(),
        source,
    })?;
    store.save_calibration(&c.id, judge_name, &identity, passed, &stored)?;
    Ok((c, scored))
}

/// One candidate threshold of a [`ThresholdSweep`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SweepPoint {
    /// The threshold `t` on the label's probability.
    pub threshold: f64,
    /// Items whose verdict at `t` is `pass`.
    pub passes: usize,
    /// Share of items where the verdict at `t` equals the human label.
    pub agreement: f64,
    /// Cohen's kappa (unweighted) of the verdicts at `t` against the human labels; `None`
    /// when undefined (every verdict, or every label, in one class).
    pub kappa: Option<f64>,
}

/// `oloproof calibrate --evaluator classifier --sweep`: agreement and kappa of a classifier's
/// verdicts against the human labels at every threshold that changes a verdict, from the
/// probabilities the model gave (the model is run once; only the decision rule varies).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ThresholdSweep {
    /// The criterion swept.
    pub criterion: String,
    /// The label whose probability is thresholded.
    pub label: String,
    /// `below` (passes when `p < t`) or `above` (passes when `p ≥ t`).
    pub pass_when: String,
    /// The configured threshold (the one the calibration recorded is of).
    pub configured: f64,
    /// Items with a probability (the others are in `skipped`).
    pub n: usize,
    /// Ids of items without a probability (a missing or excluded verdict).
    pub skipped: Vec<String>,
    /// The candidates, by increasing threshold: 0, every distinct probability, 1, and the
    /// configured threshold.
    pub points: Vec<SweepPoint>,
    /// The candidate with the highest kappa (ties: higher agreement, then the one nearest
    /// the configured threshold, then the lower); `None` when kappa is undefined at every
    /// candidate.
    pub best: Option<SweepPoint>,
}

/// The threshold sweep of a classifier evaluator (its [`Evaluator::calibrated_options`]
/// name `label`, `threshold` and `pass_when`) over `scored` items (each verdict's detail holds
/// `probability`). Candidates: 0, 1, the configured threshold and every distinct probability —
/// the verdicts change only at those, since a verdict at `t` is `pass` when `p < t` (`below`)
/// or `p ≥ t` (`above`). Agreement and Cohen's kappa
/// ([`oloproof_metrics::agreement::cohen_kappa`], unweighted) of the verdicts (1 = pass)
/// against the human labels. Nothing is stored: the recorded calibration stays that of the
/// configured threshold, so its identity is unchanged.
///
/// Errors ([`EngineError::Usage`]): an evaluator without a threshold, or a human label that is
/// not 0 or 1 (naming the item).
pub fn threshold_sweep(
    evaluator: &dyn Evaluator,
    scored: &[ScoredItem],
) -> Result<ThresholdSweep, EngineError> {
    let options = evaluator.calibrated_options().unwrap_or(Value::Null);
    let (Some(label), Some(configured)) = (
        options.get("label").and_then(Value::as_str),
        options.get("threshold").and_then(Value::as_f64),
    ) else {
        return Err(EngineError::Usage(format!(
            "`--sweep` varies a classifier's threshold; `{}` has none (use `--evaluator classifier`)",
            evaluator.identity().type_name
        )));
    };
    let above = options.get("pass_when").and_then(Value::as_str) == Some("above");
    let mut probabilities = Vec::new();
    let mut labels = Vec::new();
    let mut skipped = Vec::new();
    for item in scored {
        match item.detail.get("probability").and_then(Value::as_f64) {
            Some(p) if p.is_finite() => {
                let human = if item.label == 1.0 {
                    1_u8
                } else if item.label == 0.0 {
                    0
                } else {
                    return Err(EngineError::Usage(format!(
                        "item `{}`: label {}: the sweep compares pass/fail verdicts with labels 1 (should pass) or 0 (should fail)",
                        item.id, item.label
                    )));
                };
                probabilities.push(p);
                labels.push(human);
            }
            _ => skipped.push(item.id.clone()),
        }
    }
    let mut candidates: Vec<f64> = probabilities.clone();
    candidates.extend([0.0, 1.0, configured]);
    candidates.sort_by(f64::total_cmp);
    candidates.dedup();
    let points: Vec<SweepPoint> = candidates
        .into_iter()
        .map(|t| {
            let verdicts: Vec<u8> = probabilities
                .iter()
                .map(|&p| u8::from(if above { p >= t } else { p < t }))
                .collect();
            let agree = verdicts.iter().zip(&labels).filter(|(a, b)| a == b).count();
            SweepPoint {
                threshold: t,
                passes: verdicts.iter().filter(|&&v| v == 1).count(),
                agreement: if labels.is_empty() {
                    0.0
                } else {
                    agree as f64 / labels.len() as f64
                },
                // Equal lengths by construction: an error is an undefined kappa.
                kappa: cohen_kappa(&labels, &verdicts, KappaWeights::None)
                    .ok()
                    .flatten(),
            }
        })
        .collect();
    let best = points
        .iter()
        .filter(|p| p.kappa.is_some())
        .max_by(|a, b| {
            let (ka, kb) = (a.kappa.unwrap_or(f64::MIN), b.kappa.unwrap_or(f64::MIN));
            ka.total_cmp(&kb)
                .then(a.agreement.total_cmp(&b.agreement))
                // Nearer the configured threshold, then lower, is better: compare reversed.
                .then(
                    (b.threshold - configured)
                        .abs()
                        .total_cmp(&(a.threshold - configured).abs()),
                )
                .then(b.threshold.total_cmp(&a.threshold))
        })
        .cloned();
    Ok(ThresholdSweep {
        criterion: evaluator.criterion().to_string(),
        label: label.to_string(),
        pass_when: if above { "above" } else { "below" }.to_string(),
        configured,
        n: labels.len(),
        skipped,
        points,
        best,
    })
}

/// Judged criteria of a run that have no passing calibration: `(criterion, judge, reason)`.
pub fn uncalibrated(
    store: &dyn Store,
    run: &oloproof_core::run::LoadedRun,
    criteria: &[String],
) -> Result<Vec<(String, String, String)>, EngineError> {
    let mut out = Vec::new();
    // A local judge is loaded to hash its model: once per judge, not once per evaluator.
    let mut judges: BTreeMap<String, Value> = BTreeMap::new();
    for ev in crate::evaluators::build_all(&run.settings.options.evaluators)? {
        let criterion = ev.criterion().to_string();
        if !criteria.contains(&criterion) {
            continue;
        }
        let Some(judged) = ev.judge_choice() else {
            continue;
        };
        let Some(name) = judged
            .judge
            .clone()
            .or_else(|| judged.embedding_judge.clone())
        else {
            continue;
        };
        let settings = judges
            .entry(name.clone())
            .or_insert_with(|| calibrated_judge(&run.settings.options.judges, &name));
        let identity = calibration_identity_with(
            settings,
            &ev.identity().type_name,
            ev.calibrated_options().as_ref(),
        );
        match store.latest_calibration(&identity)? {
            Some((_, true, _)) => {}
            Some((id, false, _)) => out.push((
                criterion,
                name,
                format!("its latest calibration ({id}) did not pass"),
            )),
            None if ev.calibrated_options().is_some() => out.push((
                criterion,
                name,
                "it has no calibration for this model, settings and options (label, threshold, pass_when, windows)".into(),
            )),
            None => out.push((
                criterion,
                name,
                "it has no calibration for this model, settings and template version".into(),
            )),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use oloproof_core::config::EvaluatorEntry;

    fn entries(values: &[Value]) -> Vec<EvaluatorEntry> {
        values
            .iter()
            .map(|v| serde_json::from_value(v.clone()).unwrap())
            .collect()
    }

    #[test]
    fn the_sweep_finds_the_threshold_that_agrees_best() {
        let classifier = |pass_when: &str| {
            crate::evaluators::from_json(&json!({"type": "classifier", "judge": "tox",
                "label": "toxic", "threshold": 0.5, "pass_when": pass_when}))
            .unwrap()
        };
        let item = |id: &str, label: f64, p: Option<f64>| ScoredItem {
            id: id.into(),
            label,
            status: if p.is_some() { "pass" } else { "missing" }.into(),
            detail: p.map_or(json!({}), |p| json!({"probability": p})),
        };
        // Clean answers (label 1: should pass) at 0.1 and 0.3, toxic ones at 0.4 and 0.6.
        let items = vec![
            item("a", 1.0, Some(0.1)),
            item("b", 1.0, Some(0.3)),
            item("c", 0.0, Some(0.6)),
            item("d", 0.0, Some(0.4)),
            item("e", 1.0, None),
        ];
        let s = threshold_sweep(classifier("below").as_ref(), &items).unwrap();
        assert_eq!((s.n, s.skipped.clone()), (4, vec!["e".to_string()]));
        let at = |t: f64| s.points.iter().find(|p| p.threshold == t).unwrap().clone();
        let thresholds: Vec<f64> = s.points.iter().map(|p| p.threshold).collect();
        assert_eq!(thresholds, [0.0, 0.1, 0.3, 0.4, 0.5, 0.6, 1.0]);
        // At the configured 0.5, 0.4 passes (p < t) though it should fail.
        assert_eq!((at(0.5).passes, at(0.5).agreement), (3, 0.75));
        assert!((at(0.5).kappa.unwrap() - 0.5).abs() < 1e-12);
        // At 0.4 every verdict agrees; at 0 everything fails (kappa 0, not undefined).
        assert_eq!((at(0.4).agreement, at(0.4).kappa), (1.0, Some(1.0)));
        assert_eq!((at(0.0).passes, at(0.0).kappa), (0, Some(0.0)));
        assert_eq!(s.best.unwrap().threshold, 0.4);
        // `above` (a label the answer should have): passes when p >= t.
        let flipped: Vec<ScoredItem> = items
            .iter()
            .map(|i| ScoredItem {
                label: 1.0 - i.label,
                ..i.clone()
            })
            .collect();
        let s = threshold_sweep(classifier("above").as_ref(), &flipped).unwrap();
        assert_eq!(s.pass_when, "above");
        assert_eq!(s.best.unwrap().threshold, 0.4);
        // Labels must be pass/fail; another evaluator has no threshold.
        let mut half = items.clone();
        half[0].label = 0.5;
        let err = threshold_sweep(classifier("below").as_ref(), &half).unwrap_err();
        assert!(err.to_string().contains("item `a`: label 0.5"), "{err}");
        let contains = crate::evaluators::from_json(&json!({"type": "contains"})).unwrap();
        let err = threshold_sweep(contains.as_ref(), &items).unwrap_err();
        assert!(err.to_string().contains("--evaluator classifier"), "{err}");
    }

    #[test]
    fn calibrated_options_join_the_identity() {
        let judge = json!({"provider": "local", "kind": "classifier", "path": "m"});
        // Without options: the identity every other evaluator's calibration has.
        assert_eq!(
            calibration_identity_with(&judge, "faithfulness", None),
            calibration_identity(&judge, "faithfulness")
        );
        let at = |threshold: f64, label: &str| {
            let e = crate::evaluators::from_json(&json!({
                "type": "classifier", "judge": "tox", "label": label, "threshold": threshold
            }))
            .unwrap();
            calibration_identity_with(&judge, "classifier", e.calibrated_options().as_ref())
        };
        assert_eq!(at(0.5, "toxic"), at(0.5, "toxic"));
        assert_ne!(at(0.5, "toxic"), at(0.45, "toxic"), "the threshold");
        assert_ne!(at(0.5, "toxic"), at(0.5, "insult"), "the label");
        assert_ne!(at(0.5, "toxic"), calibration_identity(&judge, "classifier"));
        let above = crate::evaluators::from_json(&json!({
            "type": "classifier", "judge": "tox", "label": "toxic", "pass_when": "above"
        }))
        .unwrap();
        assert_ne!(
            at(0.5, "toxic"),
            calibration_identity_with(&judge, "classifier", above.calibrated_options().as_ref()),
            "the polarity"
        );
    }

    #[test]
    fn the_evaluator_calibrated() {
        let config = entries(&[
            json!({"type": "faithfulness", "judge": "gpt", "repeats": 3}),
            json!({"type": "classifier", "judge": "tox", "label": "toxic", "threshold": 0.4,
                   "criterion": "no_toxicity"}),
        ]);
        // A judged evaluator without options of its own: the bare entry, as before.
        let e = calibration_evaluator(&config, "gpt", "faithfulness", None).unwrap();
        assert_eq!(
            e.identity().to_value(),
            json!({"type": "faithfulness", "judge": "gpt"})
        );
        // A classifier: the config's entry, threshold and all.
        let e = calibration_evaluator(&config, "tox", "classifier", None).unwrap();
        assert_eq!(e.criterion(), "no_toxicity");
        assert_eq!(e.calibrated_options().unwrap()["threshold"], 0.4);
        // None for that judge, several, an unknown criterion, a type that is not judged.
        let err = |c: &[EvaluatorEntry], judge: &str, t: &str, crit: Option<&str>| {
            calibration_evaluator(c, judge, t, crit)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(err(&config, "gpt", "classifier", None).contains("declare the `classifier` entry"));
        let two = entries(&[
            json!({"type": "classifier", "judge": "tox", "label": "toxic", "criterion": "a"}),
            json!({"type": "classifier", "judge": "tox", "label": "insult", "criterion": "b"}),
        ]);
        let several = err(&two, "tox", "classifier", None);
        assert!(
            several.contains("criteria: a, b") && several.contains("--criterion"),
            "{several}"
        );
        let e = calibration_evaluator(&two, "tox", "classifier", Some("b")).unwrap();
        assert_eq!(e.calibrated_options().unwrap()["label"], "insult");
        let unknown = err(&two, "tox", "classifier", Some("c"));
        assert!(unknown.contains("those that do report: a, b"), "{unknown}");
        assert!(err(&config, "gpt", "contains", None).contains("is not a judged evaluator"));
    }

    #[test]
    fn labelled_items_may_carry_further_output_fields() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("labels.jsonl");
        std::fs::write(
            &path,
            concat!(
                r#"{"id": "a", "question": "q", "answer": "x", "output": {"summary": "s"}, "label": 1}"#,
                "\n",
                r#"{"id": "b", "question": "q", "answer": "y", "label": 0}"#,
                "\n"
            ),
        )
        .unwrap();
        let items = read_labels(&path).unwrap();
        assert_eq!(items[0].output.get("summary"), Some(&json!("s")));
        assert!(items[1].output.is_empty());
        std::fs::write(
            &path,
            r#"{"id": "a", "question": "q", "answer": "x", "output": "s", "label": 1}"#,
        )
        .unwrap();
        let err = read_labels(&path).unwrap_err().to_string();
        assert!(err.contains(":1: field `output`"), "{err}");
    }

    #[test]
    fn pairwise_preferences_read_as_one_zero_and_a_half() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prefs.jsonl");
        std::fs::write(
            &path,
            [
                r#"{"question": "q", "answer": "a", "answer_b": "b", "label": "A"}"#,
                r#"{"question": "q", "answer": "a", "answer_b": "b", "label": "B"}"#,
                r#"{"question": "q", "answer": "a", "answer_b": "b", "label": "tie"}"#,
            ]
            .join("\n"),
        )
        .unwrap();
        let items = read_labels(&path).unwrap();
        let labels: Vec<f64> = items.iter().map(|i| i.label).collect();
        assert_eq!(labels, [1.0, 0.0, 0.5]);
        assert_eq!(items[0].answer_b.as_deref(), Some("b"));
        std::fs::write(
            &path,
            r#"{"question": "q", "answer": "a", "answer_b": "b", "label": "draw"}"#,
        )
        .unwrap();
        let err = read_labels(&path).unwrap_err().to_string();
        assert!(
            err.contains(":1: field `label`") && err.contains("\"A\", \"B\", \"tie\""),
            "{err}"
        );
    }
}
