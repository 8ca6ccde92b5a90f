//! Per-criterion and per-slice summaries with honest intervals and denominators.
//!
//! - Pass/fail criteria: `k / n`, the exact Clopper–Pearson 95 % interval rounded outward to
//!   0.1 percentage points.
//! - Scores: the mean and a percentile bootstrap interval (seed and resample count recorded).
//!   A rate (recall, precision) whose observed values are all 0 or 1 is a proportion and gets
//!   the exact interval.
//! - Every row states `n observed · m missing · e excluded`; missing and excluded verdicts are
//!   never averaged in as zeros.
//!
//! The summary's types are data every reader of the store shares and live in
//! `oloproof_core::summary`; this module computes them.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use oloproof_core::case::Case;
use oloproof_core::summary::{
    CacheCounts, CriterionSummary, Percentiles, RepeatAgreement, RunSummary, SliceSummary,
    SUMMARY_SCHEMA_VERSION,
};
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use serde_json::Value;

use crate::evaluators::best_relevant_position;
use oloproof_core::summary::SummaryKind;

/// Confidence level of every interval.
pub const CONFIDENCE: f64 = 0.95;
/// Exact intervals are rounded outward to this step (0.1 percentage points).
pub const PROPORTION_STEP: f64 = 0.001;

/// Marks every call of a verdict's detail as served from the cache (`cached: true`): a verdict
/// re-used from the judgment cache sent nothing, whatever its first run spent.
pub fn mark_calls_cached(detail: &mut Value) {
    if let Some(calls) = detail.get_mut("calls").and_then(Value::as_array_mut) {
        for c in calls {
            if let Some(obj) = c.as_object_mut() {
                obj.insert("cached".into(), Value::Bool(true));
            }
        }
    }
}

/// [`RepeatAgreement`] of every criterion whose verdicts record several repeats
/// (`detail.repeats > 1`, values in `detail.result.repeats[*].value`).
pub fn repeat_agreement(
    criteria: &[(String, SummaryKind)],
    outcomes: &[CaseOutcome<'_>],
) -> Vec<RepeatAgreement> {
    let mut out = Vec::new();
    for (name, kind) in criteria {
        let mut repeats = 0u32;
        let mut units: Vec<Vec<Option<f64>>> = Vec::new();
        for o in outcomes {
            let Some(v) = o.verdicts.iter().find(|v| &v.criterion == name) else {
                continue;
            };
            let n = v.detail["repeats"].as_u64().unwrap_or(1) as u32;
            let Some(per_repeat) = v.detail["result"]["repeats"].as_array() else {
                continue;
            };
            if n < 2 {
                continue;
            }
            repeats = repeats.max(n);
            units.push(per_repeat.iter().map(|r| r["value"].as_f64()).collect());
        }
        if repeats < 2 {
            continue;
        }
        let defined: Vec<&Vec<Option<f64>>> = units
            .iter()
            .filter(|u| u.iter().flatten().count() >= 2)
            .collect();
        let identical = defined
            .iter()
            .filter(|u| {
                let mut values = u.iter().flatten();
                let first = values.next();
                values.all(|v| Some(v) == first)
            })
            .count() as u64;
        let level = if *kind == SummaryKind::Proportion {
            oloproof_metrics::agreement::Level::Nominal
        } else {
            oloproof_metrics::agreement::Level::Interval
        };
        // Its errors (one value in the domain, no unit with two repeats) all mean alpha is
        // undefined here, which is `None`, never zero; the scores are finite by construction.
        let alpha = oloproof_metrics::agreement::krippendorff_alpha(&units, level)
            .ok()
            .flatten();
        out.push(RepeatAgreement {
            criterion: name.clone(),
            repeats,
            cases: defined.len() as u64,
            identical,
            alpha,
            level: if *kind == SummaryKind::Proportion {
                "nominal"
            } else {
                "interval"
            }
            .to_string(),
        });
    }
    out
}

/// The failure modes a judge named in one verdict's detail (`failure_mode` keys at any depth:
/// the judgment, its claims, its repeats and ensemble members), each once.
pub fn failure_modes(detail: &Value) -> BTreeSet<String> {
    fn walk(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    match (k.as_str(), v) {
                        ("failure_mode", Value::String(mode)) => {
                            out.insert(mode.clone());
                        }
                        // The judge calls' raw replies repeat what the result holds.
                        ("calls", _) => {}
                        _ => walk(v, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    walk(detail, &mut out);
    out
}

/// Whether the summary reads anything of a verdict's `detail`: a failure mode a judge named
/// ([`failure_modes`]), judge calls (`calls` and `failed_call`, which
/// [`JudgeUsage::add_detail`](oloproof_core::summary::JudgeUsage::add_detail) counts) or
/// per-repeat values (`result.repeats`, which [`repeat_agreement`] reads). A detail it does not
/// read (a rule evaluator's, e.g. `{"best_relevant_position": 1}`) need not be held for the
/// summary.
pub fn summary_reads_detail(detail: &Value) -> bool {
    detail.get("calls").is_some()
        || detail.get("failed_call").is_some()
        || detail["result"]["repeats"].is_array()
        || !failure_modes(detail).is_empty()
}

/// One finished case as the summary reads it.
pub struct CaseOutcome<'a> {
    /// The case.
    pub case: &'a Case,
    /// Its trace.
    pub trace: &'a Trace,
    /// Its verdicts.
    pub verdicts: &'a [CriterionVerdict],
}

/// Summarises verdicts of one criterion.
pub fn summarize_criterion(
    criterion: &str,
    kind: SummaryKind,
    verdicts: &[&Verdict],
    seed: u64,
    resamples: usize,
) -> CriterionSummary {
    let mut values = Vec::new();
    let mut missing = 0;
    let mut excluded = 0;
    let mut reasons = BTreeMap::new();
    for v in verdicts {
        match v {
            Verdict::Missing { .. } => missing += 1,
            Verdict::Excluded { reason } => {
                excluded += 1;
                *reasons.entry(reason.clone()).or_insert(0) += 1;
            }
            other => values.extend(other.value()),
        }
    }
    let n = values.len() as u64;
    let binary = values.iter().all(|v| *v == 0.0 || *v == 1.0);
    let as_proportion = kind == SummaryKind::Proportion || (kind == SummaryKind::Rate && binary);
    let mut s = CriterionSummary {
        criterion: criterion.to_string(),
        kind,
        value: None,
        interval: None,
        interval_method: None,
        no_interval: None,
        passed: None,
        observed: n,
        missing,
        excluded,
        excluded_reasons: reasons,
        failure_modes: BTreeMap::new(),
    };
    if n == 0 {
        // A pass/fail criterion with nothing observed reads `0 / 0 observed`, not a mean.
        if as_proportion {
            s.passed = Some(0);
        }
        return s;
    }
    if let SummaryKind::Quantile(q) = kind {
        summarize_quantile(&mut s, &values, q.get());
        return s;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    s.value = Some(mean);
    if as_proportion {
        let k = values.iter().filter(|v| **v >= 1.0).count() as u64;
        s.passed = Some(k);
        if let Ok(ci) = oloproof_stats::clopper_pearson(k, n, CONFIDENCE) {
            let ci = ci.round_outward(PROPORTION_STEP);
            s.interval = Some([ci.lo, ci.hi]);
            s.interval_method = Some("clopper_pearson".into());
        }
    } else if let Ok(ci) =
        oloproof_stats::percentile_bootstrap_mean_grouped(&values, resamples, seed, CONFIDENCE)
    {
        s.interval = Some([ci.lo, ci.hi]);
        s.interval_method = Some("percentile_bootstrap".into());
    }
    s
}

/// A quantile criterion's value and interval: numpy's linear sample quantile (as the run's
/// `latency_ms` percentiles) and the distribution-free order-statistic interval
/// ([`oloproof_stats::quantile_interval`], exact coverage ≥ 95 % whatever the distribution).
/// Both bounds or none: a sample too small to have one of them says so in `no_interval`,
/// naming the number of observations needed, rather than showing the sample's extreme.
fn summarize_quantile(s: &mut CriterionSummary, values: &[f64], q: f64) {
    // The values are finite (verdict scores are) and non-empty (checked by the caller).
    s.value = oloproof_stats::quantile(values, q).ok();
    s.interval_method = Some("order_statistic".into());
    match oloproof_stats::quantile_interval(values, q, CONFIDENCE) {
        Ok(oloproof_stats::QuantileInterval {
            lower: Some(lo),
            upper: Some(hi),
            ..
        }) => s.interval = Some([lo, hi]),
        Ok(_) => {
            s.no_interval = Some(format!(
                "{} observed: a distribution-free 95% interval of a p{} needs at least {}",
                values.len(),
                q * 100.0,
                oloproof_stats::quantile_interval_min_n(q, CONFIDENCE)
            ));
        }
        Err(e) => s.no_interval = Some(e.to_string()),
    }
}

/// The value of slice `key` for a case.
pub fn slice_value(key: &str, outcome: &CaseOutcome<'_>) -> String {
    match key {
        "relevant_position" => match best_relevant_position(outcome.case, outcome.trace) {
            Some(Some(p)) => p.to_string(),
            Some(None) => "none".to_string(),
            None => "n/a".to_string(),
        },
        "context_truncated" => match &outcome.trace.context {
            Some(c) => c.truncated.to_string(),
            None => "n/a".to_string(),
        },
        other => {
            // `diagnostic_matrix`: Rubrex's evidence conditions (seed 004).
            let other = if other == "diagnostic_matrix" {
                "metadata.evidence_condition"
            } else {
                other
            };
            let path = other.strip_prefix("metadata.").unwrap_or(other);
            match outcome.case.metadata_at(path) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => "(none)".to_string(),
                Some(v) => v.to_string(),
            }
        }
    }
}

/// Sorts slice values: numbers numerically first, then text.
fn slice_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x.total_cmp(&y),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        _ => a.cmp(b),
    }
}

/// What the summary needs besides the outcomes.
pub struct SummaryInputs<'a> {
    /// Run id.
    pub run_id: &'a str,
    /// System name and version.
    pub system: (&'a str, &'a str),
    /// `(criterion, kind)` in evaluator order.
    pub criteria: &'a [(String, SummaryKind)],
    /// Slice keys.
    pub slices: &'a [String],
    /// `min_slice_support`.
    pub min_slice_support: usize,
    /// Bootstrap seed.
    pub seed: u64,
    /// Bootstrap resamples.
    pub resamples: usize,
    /// Total cases in the run.
    pub total_cases: u64,
    /// Cache use.
    pub cache: CacheCounts,
}

/// A set of cases summarised together: the whole run (`None`) or one slice value.
type Group<'o, 'c> = (Option<(String, String)>, Vec<&'o CaseOutcome<'c>>);

/// Summarises a run's finished cases. Criterion summaries of the whole run and of every slice
/// value are independent (each bootstrap has its own seeded stream), so they are computed on all
/// cores; the result does not depend on the number of threads.
pub fn summarize(inputs: &SummaryInputs<'_>, outcomes: &[CaseOutcome<'_>]) -> RunSummary {
    let mut groups: Vec<Group<'_, '_>> = vec![(None, outcomes.iter().collect())];
    for key in inputs.slices {
        let mut by_value: BTreeMap<String, Vec<&CaseOutcome<'_>>> = BTreeMap::new();
        for o in outcomes {
            by_value.entry(slice_value(key, o)).or_default().push(o);
        }
        let mut values: Vec<(String, Vec<&CaseOutcome<'_>>)> = by_value.into_iter().collect();
        values.sort_by(|a, b| slice_order(&a.0, &b.0));
        for (value, members) in values {
            groups.push((Some((key.clone(), value)), members));
        }
    }
    let jobs: Vec<(usize, usize)> = (0..groups.len())
        .flat_map(|g| (0..inputs.criteria.len()).map(move |c| (g, c)))
        .collect();
    // Each verdict's failure modes, read once (a verdict is in the whole run's group and in
    // one group per slice key), by the verdict's address; only verdicts that name any.
    let modes_of: HashMap<usize, BTreeSet<String>> = outcomes
        .iter()
        .flat_map(|o| o.verdicts.iter())
        .filter_map(|v| {
            let modes = failure_modes(&v.detail);
            (!modes.is_empty()).then_some((v as *const CriterionVerdict as usize, modes))
        })
        .collect();
    let run_job = |&(g, c): &(usize, usize)| -> CriterionSummary {
        let (name, kind) = &inputs.criteria[c];
        let judged: Vec<&CriterionVerdict> = groups[g]
            .1
            .iter()
            .filter_map(|o| o.verdicts.iter().find(|v| &v.criterion == name))
            .collect();
        let verdicts: Vec<&Verdict> = judged.iter().map(|v| &v.verdict).collect();
        let mut s = summarize_criterion(name, *kind, &verdicts, inputs.seed, inputs.resamples);
        for v in judged {
            for mode in modes_of
                .get(&(v as *const CriterionVerdict as usize))
                .into_iter()
                .flatten()
            {
                *s.failure_modes.entry(mode.clone()).or_insert(0) += 1;
            }
        }
        s
    };
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(jobs.len().max(1));
    let mut results: Vec<Option<CriterionSummary>> = vec![None; jobs.len()];
    if threads <= 1 {
        for (slot, job) in results.iter_mut().zip(&jobs) {
            *slot = Some(run_job(job));
        }
    } else {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let computed: Vec<Vec<(usize, CriterionSummary)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    scope.spawn(|| {
                        let mut mine = Vec::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(job) = jobs.get(i) else { break };
                            mine.push((i, run_job(job)));
                        }
                        mine
                    })
                })
                .collect();
            handles
                .into_iter()
                // A worker that panicked must not leave its criteria silently unsummarised.
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        for (i, s) in computed.into_iter().flatten() {
            results[i] = Some(s);
        }
    }
    let mut per_group: Vec<Vec<CriterionSummary>> = vec![Vec::new(); groups.len()];
    for ((g, _), s) in jobs.iter().zip(results) {
        per_group[*g].extend(s);
    }
    let mut per_group = per_group.into_iter();
    let criteria = per_group.next().unwrap_or_default(); // group 0 (all cases) always exists
    let slices: Vec<SliceSummary> = groups
        .iter()
        .skip(1)
        .zip(per_group)
        .filter_map(|((label, members), criteria)| {
            let (key, value) = label.clone()?;
            let support = members.len() as u64;
            Some(SliceSummary {
                key,
                value,
                support,
                below_min_support: support < inputs.min_slice_support as u64,
                criteria,
            })
        })
        .collect();
    let mut latency = BTreeMap::new();
    for stage in oloproof_core::trace::LATENCY_STAGES
        .iter()
        .filter(|s| **s != "total")
    {
        let values: Vec<f64> = outcomes
            .iter()
            .filter_map(|o| o.trace.latency_ms.get(stage))
            .collect();
        if values.is_empty() {
            continue;
        }
        let q = |p: f64| oloproof_stats::quantile(&values, p).unwrap_or(0.0);
        latency.insert(
            stage.to_string(),
            Percentiles {
                n: values.len() as u64,
                p50: q(0.5),
                p95: q(0.95),
                p99: q(0.99),
            },
        );
    }
    RunSummary {
        schema_version: SUMMARY_SCHEMA_VERSION,
        run_id: inputs.run_id.to_string(),
        system: inputs.system.0.to_string(),
        version: inputs.system.1.to_string(),
        cases: inputs.total_cases,
        done: outcomes.len() as u64,
        errors: outcomes.iter().filter(|o| o.trace.error.is_some()).count() as u64,
        criteria,
        slices,
        min_slice_support: inputs.min_slice_support as u64,
        cache: inputs.cache,
        latency_ms: latency,
        bootstrap_seed: inputs.seed,
        bootstrap_resamples: inputs.resamples,
        judges: None,
        repeat_agreement: repeat_agreement(inputs.criteria, outcomes),
        incomplete_criteria: Vec::new(),
        external_scores: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Summary inputs for a test run `r` of `total_cases` cases: slices of one case count,
    /// 100 resamples seeded with 1.
    fn test_inputs<'a>(
        criteria: &'a [(String, SummaryKind)],
        slices: &'a [String],
        total_cases: u64,
    ) -> SummaryInputs<'a> {
        SummaryInputs {
            run_id: "r",
            system: ("s", "1"),
            criteria,
            slices,
            min_slice_support: 1,
            seed: 1,
            resamples: 100,
            total_cases,
            cache: CacheCounts::default(),
        }
    }

    /// The outcomes of a test run: each case with its trace and verdicts, by index.
    fn test_outcomes<'a>(
        cases: &'a [Case],
        traces: &'a [Trace],
        verdicts: &'a [Vec<CriterionVerdict>],
    ) -> Vec<CaseOutcome<'a>> {
        (0..cases.len())
            .map(|i| CaseOutcome {
                case: &cases[i],
                trace: &traces[i],
                verdicts: &verdicts[i],
            })
            .collect()
    }

    fn pf(k: usize, n: usize) -> Vec<Verdict> {
        (0..n).map(|i| Verdict::pass_if(i < k)).collect()
    }

    fn cp(k: usize, n: usize) -> CriterionSummary {
        let v = pf(k, n);
        let refs: Vec<&Verdict> = v.iter().collect();
        summarize_criterion("c", SummaryKind::Proportion, &refs, 1, 1000)
    }

    /// The guide's numbers: 9/13 → [38.5%, 91.0%], 12/13 → lower 63.9%, 13/13 → [75.2%, 100.0%].
    #[test]
    fn seed_intervals() {
        assert_eq!(cp(9, 13).interval, Some([0.385, 0.910]));
        assert_eq!(cp(12, 13).interval.unwrap()[0], 0.639);
        assert_eq!(cp(13, 13).interval, Some([0.752, 1.0]));
    }

    #[test]
    fn failure_modes_are_counted_in_the_run_and_in_each_slice() {
        let cases: Vec<Case> = (0..4)
            .map(|i| {
                serde_json::from_value(serde_json::json!({
                    "id": format!("c{i}"), "input": {},
                    "metadata": {"topic": if i < 3 { "billing" } else { "shipping" }}
                }))
                .unwrap()
            })
            .collect();
        let traces: Vec<Trace> = cases.iter().map(|c| Trace::new(&c.id)).collect();
        let detail = |modes: &[&str]| {
            serde_json::json!({"claims": modes.iter().map(|m| serde_json::json!({"failure_mode": m})).collect::<Vec<_>>(),
                               "calls": [{"failure_mode": "in_a_raw_reply"}]})
        };
        let verdicts: Vec<Vec<CriterionVerdict>> = [
            detail(&["fabrication", "wrong_entity"]),
            detail(&["fabrication", "fabrication"]),
            Value::Null,
            detail(&["wrong_entity"]),
        ]
        .into_iter()
        .map(|detail| {
            vec![CriterionVerdict {
                criterion: "faithfulness".into(),
                verdict: Verdict::Score { value: 0.0 },
                detail,
            }]
        })
        .collect();
        let outcomes = test_outcomes(&cases, &traces, &verdicts);
        let criteria = [("faithfulness".to_string(), SummaryKind::Mean)];
        let slices = ["metadata.topic".to_string()];
        let inputs = test_inputs(&criteria, &slices, 4);
        let summary = summarize(&inputs, &outcomes);
        let modes = |m: &BTreeMap<String, u64>| -> Vec<(String, u64)> {
            m.iter().map(|(k, v)| (k.clone(), *v)).collect()
        };
        // Counted once per verdict that names a mode; a judge call's raw reply is not read.
        assert_eq!(
            modes(&summary.criteria[0].failure_modes),
            [
                ("fabrication".to_string(), 2),
                ("wrong_entity".to_string(), 2)
            ]
        );
        let slice = |value: &str| {
            let s = summary.slices.iter().find(|s| s.value == value).unwrap();
            modes(&s.criteria[0].failure_modes)
        };
        assert_eq!(
            slice("billing"),
            [
                ("fabrication".to_string(), 2),
                ("wrong_entity".to_string(), 1)
            ]
        );
        assert_eq!(slice("shipping"), [("wrong_entity".to_string(), 1)]);
    }

    /// Dropping the details the summary does not read changes nothing of the summary: failure
    /// modes, judge usage and repeat agreement all come out the same, and the rule details
    /// (most of them) are dropped.
    #[test]
    fn details_the_summary_does_not_read_can_be_dropped() {
        use serde_json::json;
        let cases: Vec<Case> = (0..8)
            .map(|i| {
                serde_json::from_value(json!({
                    "id": format!("c{i}"), "input": {},
                    "metadata": {"topic": if i % 2 == 0 { "billing" } else { "shipping" }}
                }))
                .unwrap()
            })
            .collect();
        let traces: Vec<Trace> = cases.iter().map(|c| Trace::new(&c.id)).collect();
        // Each judge detail carries one thing the summary reads, so each test of
        // `summary_reads_detail` is needed.
        let judged = |i: usize| match i % 4 {
            0 => json!({"result": {"failure_mode": "fabrication", "score": 0.2}}),
            1 => json!({"calls": [{"input_tokens": 10, "output_tokens": 2, "cost_usd": 0.001},
                                  {"cached": true}]}),
            2 => {
                json!({"repeats": 3, "result": {"repeats": [{"value": 1.0}, {"value": 0.5}, {"value": 1.0}]}})
            }
            _ => json!({"failed_call": {"attempts": 3, "input_tokens": 7}}),
        };
        let verdicts: Vec<Vec<CriterionVerdict>> = (0..8)
            .map(|i| {
                vec![
                    CriterionVerdict {
                        criterion: "recall_at_2".into(),
                        verdict: Verdict::Score { value: (i % 2) as f64 },
                        detail: json!({"best_relevant_position": i % 3}),
                    },
                    CriterionVerdict {
                        criterion: "faithfulness".into(),
                        verdict: Verdict::Score { value: 0.25 * (i % 4) as f64 },
                        detail: judged(i),
                    },
                    CriterionVerdict {
                        criterion: "answer_correct".into(),
                        verdict: Verdict::pass_if(i % 3 != 0),
                        detail: json!({"matched": null, "nested": [{"mode": "not a failure_mode key"}]}),
                    },
                ]
            })
            .collect();
        let criteria = [
            ("recall_at_2".to_string(), SummaryKind::Mean),
            ("faithfulness".to_string(), SummaryKind::Mean),
            ("answer_correct".to_string(), SummaryKind::Proportion),
        ];
        let slices = ["metadata.topic".to_string()];
        let inputs = test_inputs(&criteria, &slices, 8);
        let summarise = |verdicts: &[Vec<CriterionVerdict>]| {
            let outcomes = test_outcomes(&cases, &traces, verdicts);
            let mut usage = oloproof_core::summary::JudgeUsage::default();
            for v in outcomes.iter().flat_map(|o| o.verdicts) {
                usage.add_detail(&v.detail);
            }
            (
                serde_json::to_value(summarize(&inputs, &outcomes)).unwrap(),
                serde_json::to_value(usage).unwrap(),
            )
        };
        let mut slim = verdicts.clone();
        let mut dropped = 0;
        for v in slim.iter_mut().flatten() {
            if !summary_reads_detail(&v.detail) {
                v.detail = Value::Null;
                dropped += 1;
            }
        }
        // Every rule detail is dropped, no judge detail is.
        assert_eq!(dropped, 16);
        let (full, full_usage) = summarise(&verdicts);
        let (slimmed, slimmed_usage) = summarise(&slim);
        assert_eq!(full, slimmed);
        assert_eq!(full_usage, slimmed_usage);
        // What the summary read of the judge details is there to compare.
        assert_eq!(full["criteria"][1]["failure_modes"]["fabrication"], 2);
        assert_eq!(full["repeat_agreement"][0]["criterion"], "faithfulness");
        assert_eq!(full_usage["failed_calls"], 2);
        assert_eq!(full_usage["cached_calls"], 2);
    }

    #[test]
    fn missing_and_excluded_are_counted_not_averaged() {
        let v = [
            Verdict::Score { value: 1.0 },
            Verdict::Score { value: 0.5 },
            Verdict::Missing { error: "x".into() },
            Verdict::Excluded {
                reason: "no_relevance_labels".into(),
            },
        ];
        let refs: Vec<&Verdict> = v.iter().collect();
        let s = summarize_criterion("ndcg", SummaryKind::Mean, &refs, 7, 1000);
        assert_eq!((s.observed, s.missing, s.excluded), (2, 1, 1));
        assert_eq!(s.value, Some(0.75));
        assert_eq!(s.excluded_reasons["no_relevance_labels"], 1);
        let none: Vec<&Verdict> = vec![&v[2]];
        let s = summarize_criterion("ndcg", SummaryKind::Mean, &none, 7, 1000);
        assert_eq!((s.value, s.interval), (None, None));
    }

    #[test]
    fn binary_rates_are_proportions() {
        let v = [Verdict::Score { value: 1.0 }, Verdict::Score { value: 0.0 }];
        let refs: Vec<&Verdict> = v.iter().collect();
        let s = summarize_criterion("recall_at_2", SummaryKind::Rate, &refs, 1, 100);
        assert_eq!(s.passed, Some(1));
        assert_eq!(s.interval_method.as_deref(), Some("clopper_pearson"));
        let v = [Verdict::Score { value: 0.5 }, Verdict::Score { value: 1.0 }];
        let refs: Vec<&Verdict> = v.iter().collect();
        let s = summarize_criterion("recall_at_2", SummaryKind::Rate, &refs, 1, 100);
        assert_eq!(s.passed, None);
        assert_eq!(s.interval_method.as_deref(), Some("percentile_bootstrap"));
    }

    #[test]
    fn quantile_criteria_get_the_order_statistic_interval_or_say_why_not() {
        let kind = SummaryKind::Quantile(oloproof_core::summary::QuantileLevel::new(0.95).unwrap());
        let mut v: Vec<Verdict> = (1..=100)
            .map(|i| Verdict::Score {
                value: f64::from(i),
            })
            .collect();
        v.push(Verdict::Excluded {
            reason: "cached".into(),
        });
        let refs: Vec<&Verdict> = v.iter().collect();
        let s = summarize_criterion("latency_total_p95", kind, &refs, 1, 100);
        // numpy.quantile(range(1, 101), 0.95) = 95.05; scipy's interval (90, 100).
        assert!((s.value.unwrap() - 95.05).abs() < 1e-12);
        assert_eq!(s.interval, Some([90.0, 100.0]));
        assert_eq!(s.interval_method.as_deref(), Some("order_statistic"));
        assert_eq!((s.observed, s.excluded, s.passed), (100, 1, None));
        let few: Vec<&Verdict> = refs[..60].to_vec();
        let s = summarize_criterion("latency_total_p95", kind, &few, 1, 100);
        assert_eq!(s.interval, None);
        assert_eq!(
            s.no_interval.as_deref(),
            Some("60 observed: a distribution-free 95% interval of a p95 needs at least 72")
        );
        // Every case excluded: no value, never 0.
        let cached = [Verdict::Excluded {
            reason: "cached".into(),
        }];
        let refs: Vec<&Verdict> = cached.iter().collect();
        let s = summarize_criterion("latency_total_p95", kind, &refs, 1, 100);
        assert_eq!((s.value, s.interval, s.excluded), (None, None, 1));
    }
}
