//! `oloproof compare`: two stored runs, case by case, under a policy declared before the data.
//!
//! This module owns the comparison policy (`compare.yaml`: [`Policy`]), the pairing of two
//! [`LoadedRun`]s by case id, the paired difference of every criterion, the exploratory
//! per-slice differences, the policy's decisions and the gate, and the content-addressed
//! [`Comparison`] record. It reads nothing but the two runs and writes nothing but the record
//! ([`record_comparison`]); rendering belongs to `oloproof-report`.
//!
//! **Pairing.** Cases are paired by id over the cases both runs hold; cases in one run only are
//! listed, never compared. On each criterion, a shared case whose verdict is `missing` (an error)
//! or absent (not run) in either run is counted `missing` — never a pass — and one `excluded` in
//! either run is counted `excluded`; the others are paired.
//!
//! **Differences** (candidate − baseline, in points: 100 × the difference of fractions), with
//! 95 % intervals rounded outward to 0.1 points (`docs/statistics.md`):
//! - pass/fail criteria, and rates whose paired values are all 0 or 1: the difference of paired
//!   proportions `(b − c)/n` with Tango's score interval
//!   ([`oloproof_stats::paired_proportion_difference`]; T. Tango, *Statistics in Medicine* 17,
//!   1998);
//! - scores: the mean paired difference with the paired percentile bootstrap interval
//!   ([`oloproof_stats::paired_bootstrap_test`]; Efron and Tibshirani 1993, §16.4), seeded with the
//!   baseline run's recorded `bootstrap.seed` and resample count.
//!
//! - lower-is-better amounts (latency, tokens, cost: [`SummaryKind::lower_is_better`]): no
//!   points, but each run's statistic over the paired cases (the criterion's quantile, or its
//!   mean) and the ratio candidate / baseline with a paired percentile bootstrap interval
//!   ([`oloproof_stats::paired_ratio`]: the same resampled cases in both runs), rounded
//!   outward to 0.001. A `guardrail` decision (`max_increase_percent: 10`) passes when the
//!   ratio's upper bound lies below 1.10, fails when its lower bound lies above, and is
//!   otherwise `INSUFFICIENT_EVIDENCE`. Cases excluded in either run (a cached stage has no
//!   latency) are not paired. Amounts are left out of the per-case changes.
//!
//! **Decisions** read the *printed* (outward-rounded) interval, so the numbers a reader sees are
//! the numbers that decided; outward rounding only ever makes a decision more cautious.
//!
//! **Identity.** The comparison id is `sha256:` + the hash of the canonical JSON of its content
//! (run ids, policy, seed, lines, decisions, per-case changes): the same comparison of the same
//! runs under the same policy gets the same id.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::error::EngineError;
use oloproof_core::case::Case;
use oloproof_core::comparison::{
    BootstrapSettings, CaseChange, CaseSets, ChangeDirection, Comparison, DecisionKind,
    DecisionOptions, DecisionResult, DecisionVerdict, DifferenceLine, DifferenceMethod, Gate,
    PairwiseComparison, PairwiseOptions, PolicyOptions, SettingDifference, SliceLine,
    VerdictChange, COMPARISON_SCHEMA_VERSION, PAIRWISE_DECISION_NAME,
};
use oloproof_core::run::LoadedRun;
use oloproof_core::source::{did_you_mean, SourceError, YamlDocument};
use oloproof_core::store::Store;
use oloproof_core::summary::SummaryKind;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use oloproof_stats::{
    non_inferiority, paired_bootstrap_test, paired_proportion_difference, superiority, Interval,
    PairedCounts, Verdict3,
};
use serde_json::Value;

use crate::summary::{slice_value, CaseOutcome, CONFIDENCE, PROPORTION_STEP};

/// Reason codes of decisions that are not read off an interval (those are
/// [`oloproof_stats::reason`]).
pub mod reason {
    /// `no_regression`: a listed case went from pass to fail, or its score dropped.
    pub const CASE_REGRESSED: &str = "case_regressed";
    /// `no_regression`: a listed case is missing (an error, or not run) in either run.
    pub const CASE_MISSING: &str = "case_missing";
    /// `no_regression`: no listed case regressed.
    pub const NO_CASE_REGRESSED: &str = "no_case_regressed";
    /// The criterion's share of missing cases exceeds the policy's `max_missing_rate`.
    pub const TOO_MANY_MISSING: &str = "too_many_missing";
    /// Nothing was paired on the criterion (every shared case missing or excluded).
    pub const NO_PAIRED_OBSERVATIONS: &str = "no_paired_observations";
}

// ----------------------------------------------------------------------------------------------
// Policy
// ----------------------------------------------------------------------------------------------

/// A validated comparison policy, with the document it came from (to locate errors found once
/// the runs are known: an unknown criterion or case id).
#[derive(Debug, Clone)]
pub struct Policy {
    options: PolicyOptions,
    doc: YamlDocument,
    /// The pairwise judge came from `--pairwise` (errors name the flag, not the file).
    judge_from_flag: bool,
}

/// Checks a `pairwise:` block: a judge name, `min_win_rate` in `[0, 1)`, a decision name
/// that no other decision has, non-empty model names.
fn check_pairwise_options(
    doc: &YamlDocument,
    p: &PairwiseOptions,
    names: &HashMap<&str, usize>,
) -> Result<(), SourceError> {
    if p.judge.trim().is_empty() {
        let mut err = doc.error_at("pairwise.judge", true, "the pairwise judge name is empty");
        err.expected = Some("the name of a judge declared in oloproof.yaml".into());
        return Err(err);
    }
    if !(p.min_win_rate.is_finite() && (0.0..1.0).contains(&p.min_win_rate)) {
        let mut err = doc.error_at(
            "pairwise.min_win_rate",
            true,
            "`min_win_rate` must lie in [0, 1)",
        );
        err.expected = Some("a share of the decided cases, such as 0.5".into());
        return Err(err);
    }
    if p.name.trim().is_empty() {
        return Err(doc.error_at("pairwise.name", true, "the decision name is empty"));
    }
    if let Some(i) = names.get(p.name.as_str()) {
        let key = if doc.locate("pairwise.name").is_some() {
            "pairwise.name"
        } else {
            "pairwise"
        };
        let mut err = doc.error_at(
            key,
            key == "pairwise.name",
            format!("decision `{}` is declared twice", p.name),
        );
        err.help = Some(format!(
            "rename one (the other is decisions[{i}]); the pairwise decision is named with `pairwise.name`"
        ));
        return Err(err);
    }
    for key in ["generator_model", "baseline_generator_model"] {
        let value = match key {
            "generator_model" => &p.generator_model,
            _ => &p.baseline_generator_model,
        };
        if value.as_ref().is_some_and(|m| m.trim().is_empty()) {
            let mut err = doc.error_at(&format!("pairwise.{key}"), true, "the model name is empty");
            err.expected = Some("a model name such as gpt-4o-mini".into());
            return Err(err);
        }
    }
    Ok(())
}

impl Policy {
    /// Parses and validates a policy file (`path` as the user named it, for error locations).
    ///
    /// Errors point at `file:line:col`: unknown keys (with a suggestion), wrong types, no
    /// decisions, duplicate names, a missing criterion, a margin that is not a positive number,
    /// keys that do not belong to the decision's kind, `max_missing_rate` outside `[0, 1]`.
    pub fn parse(path: &str, text: &str) -> Result<Policy, SourceError> {
        let doc = YamlDocument::parse(path, text)?;
        let options: PolicyOptions = doc.deserialize(&doc.value)?;
        let pairwise_decides = options.pairwise.as_ref().is_some_and(|p| !p.exploratory);
        if options.decisions.is_empty() && !pairwise_decides {
            let mut err = doc.error_at("decisions", false, "the policy declares no decisions");
            err.help = Some(
                "declare at least one decision; a gate without decisions would pass anything"
                    .into(),
            );
            return Err(err);
        }
        if !(0.0..=1.0).contains(&options.max_missing_rate) {
            let mut err = doc.error_at(
                "max_missing_rate",
                true,
                "`max_missing_rate` must lie in [0, 1]",
            );
            err.expected = Some("a share such as 0.05".into());
            return Err(err);
        }
        let mut names: HashMap<&str, usize> = HashMap::new();
        for (i, d) in options.decisions.iter().enumerate() {
            let at = |key: &str| format!("decisions[{i}].{key}");
            if d.max_increase_percent.is_some() && d.kind != DecisionKind::Guardrail {
                let mut err = doc.error_at(
                    &at("max_increase_percent"),
                    false,
                    format!(
                        "`max_increase_percent` does not apply to a {} decision",
                        d.kind.as_str()
                    ),
                );
                err.help = Some("`max_increase_percent` is the margin of `kind: guardrail`".into());
                return Err(err);
            }
            if d.name.trim().is_empty() {
                return Err(doc.error_at(&at("name"), true, "the decision name is empty"));
            }
            if let Some(first) = names.insert(d.name.as_str(), i) {
                let mut err = doc.error_at(
                    &at("name"),
                    true,
                    format!("decision `{}` is declared twice", d.name),
                );
                err.help = Some(format!("rename one (the other is decisions[{first}])"));
                return Err(err);
            }
            let misplaced = |key: &str, why: &str| {
                let mut err = doc.error_at(
                    &at(key),
                    false,
                    format!("`{key}` does not apply to a {} decision", d.kind.as_str()),
                );
                err.help = Some(why.to_string());
                err
            };
            match d.kind {
                DecisionKind::PairwisePreference => {
                    let mut err = doc.error_at(
                        &at("kind"),
                        true,
                        "a pairwise_preference decision is declared in the policy's `pairwise:` block",
                    );
                    err.help = Some(format!(
                        "remove decisions[{i}] and add `pairwise: {{judge: NAME, name: {}, min_win_rate: 0.5}}`",
                        d.name
                    ));
                    return Err(err);
                }
                DecisionKind::Guardrail => {
                    if d.criterion.is_none() {
                        let mut err = doc.error_at(
                            &format!("decisions[{i}]"),
                            true,
                            "missing key `criterion`",
                        );
                        err.key_path = Some(at("criterion"));
                        err.help = Some(
                            "add `criterion:` with the latency, tokens or cost criterion to guard"
                                .into(),
                        );
                        return Err(err);
                    }
                    if d.cases.is_some() {
                        return Err(misplaced(
                            "cases",
                            "`cases` lists the cases of a no_regression decision",
                        ));
                    }
                    if d.margin_points.is_some() {
                        return Err(misplaced(
                            "margin_points",
                            "a guardrail's margin is `max_increase_percent`, a share of the baseline's value",
                        ));
                    }
                    match d.max_increase_percent {
                        None => {
                            let mut err = doc.error_at(
                                &format!("decisions[{i}]"),
                                true,
                                "missing key `max_increase_percent`",
                            );
                            err.key_path = Some(at("max_increase_percent"));
                            err.help = Some(
                                "add `max_increase_percent:`, the largest increase you accept, e.g. 10 (not more than 10 % worse)"
                                    .into(),
                            );
                            return Err(err);
                        }
                        Some(m) if !(m.is_finite() && m >= 0.0) => {
                            let mut err = doc.error_at(
                                &at("max_increase_percent"),
                                true,
                                "the largest increase must be a number of percent ≥ 0",
                            );
                            err.expected = Some("a number such as 10".into());
                            return Err(err);
                        }
                        Some(_) => {}
                    }
                }
                DecisionKind::NonInferiority | DecisionKind::Superiority => {
                    if d.criterion.is_none() {
                        let mut err = doc.error_at(
                            &format!("decisions[{i}]"),
                            true,
                            "missing key `criterion`",
                        );
                        err.key_path = Some(at("criterion"));
                        err.help = Some("add `criterion:` with the criterion to compare".into());
                        return Err(err);
                    }
                    if d.cases.is_some() {
                        return Err(misplaced(
                            "cases",
                            "`cases` lists the cases of a no_regression decision",
                        ));
                    }
                }
                DecisionKind::NoRegression => {
                    if d.margin_points.is_some() {
                        return Err(misplaced(
                            "margin_points",
                            "a no_regression decision watches cases; margins belong to non_inferiority",
                        ));
                    }
                    match &d.cases {
                        None => {
                            let mut err = doc.error_at(
                                &format!("decisions[{i}]"),
                                true,
                                "missing key `cases`",
                            );
                            err.key_path = Some(at("cases"));
                            err.help = Some("add `cases: [case_id, …]`".into());
                            return Err(err);
                        }
                        Some(cases) if cases.is_empty() => {
                            return Err(doc.error_at(
                                &at("cases"),
                                true,
                                "a no_regression decision needs at least one case",
                            ));
                        }
                        Some(_) => {}
                    }
                }
            }
            match (d.kind, d.margin_points) {
                (DecisionKind::NonInferiority, None) => {
                    let mut err = doc.error_at(
                        &format!("decisions[{i}]"),
                        true,
                        "missing key `margin_points`",
                    );
                    err.key_path = Some(at("margin_points"));
                    err.help = Some(
                        "add `margin_points:`, the largest loss in points you accept, e.g. 5"
                            .into(),
                    );
                    return Err(err);
                }
                (DecisionKind::NonInferiority, Some(m)) if !(m.is_finite() && m > 0.0) => {
                    let mut err = doc.error_at(
                        &at("margin_points"),
                        true,
                        "the margin must be a positive number of points",
                    );
                    err.expected = Some("a number above 0, e.g. 5".into());
                    return Err(err);
                }
                (DecisionKind::Superiority, Some(_)) => {
                    return Err(misplaced(
                        "margin_points",
                        "superiority compares with zero; use kind: non_inferiority for a margin",
                    ));
                }
                _ => {}
            }
        }
        if let Some(p) = &options.pairwise {
            check_pairwise_options(&doc, p, &names)?;
        }
        Ok(Policy {
            options,
            doc,
            judge_from_flag: false,
        })
    }

    /// Applies `compare --pairwise JUDGE`: the judge of the policy's `pairwise:` block (the
    /// flag wins over the file), or, without a block, a report-only pairwise comparison
    /// (`exploratory`: no decision).
    pub fn with_pairwise_judge(mut self, judge: &str) -> Policy {
        match &mut self.options.pairwise {
            Some(p) => p.judge = judge.to_string(),
            None => {
                self.options.pairwise = Some(PairwiseOptions {
                    judge: judge.to_string(),
                    name: PAIRWISE_DECISION_NAME.to_string(),
                    min_win_rate: 0.5,
                    generator_model: None,
                    baseline_generator_model: None,
                    allow_uncalibrated: false,
                    exploratory: true,
                })
            }
        }
        self.judge_from_flag = true;
        self
    }

    /// The pairwise options, when the policy or `--pairwise` asks for a pairwise comparison.
    pub fn pairwise(&self) -> Option<&PairwiseOptions> {
        self.options.pairwise.as_ref()
    }

    /// Checks the pairwise judge against the judges declared in `oloproof.yaml` (`declared`,
    /// by name): it must exist and be able to answer a chat prompt (not a local embedding or
    /// pair-classifier model), and, when the pairwise comparison decides, hold a passing
    /// pairwise calibration unless the block says `allow_uncalibrated: true`.
    ///
    /// Errors point at `pairwise.judge` in the policy, or name the `--pairwise` flag when
    /// the judge came from it.
    pub fn check_pairwise_judge(
        &self,
        declared: &BTreeMap<String, Value>,
        calibrated: impl FnOnce(&str) -> Result<bool, EngineError>,
    ) -> Result<(), CompareError> {
        let Some(p) = &self.options.pairwise else {
            return Ok(());
        };
        let names: Vec<&str> = declared.keys().map(String::as_str).collect();
        let located = |message: String, expected: Option<String>, help: Option<String>| {
            if self.judge_from_flag {
                let mut text = format!("--pairwise {}: {message}", p.judge);
                if let Some(e) = expected {
                    text.push_str(&format!("; expected {e}"));
                }
                if let Some(h) = help {
                    text.push_str(&format!("; {h}"));
                }
                CompareError::PairwiseJudge(text)
            } else {
                let mut err = self.doc.error_at("pairwise.judge", true, message);
                err.expected = expected;
                err.help = help;
                CompareError::Policy(err)
            }
        };
        let Some(settings) = declared.get(&p.judge) else {
            let expected = if names.is_empty() {
                "a judge declared under `judges:` in oloproof.yaml (it declares none)".to_string()
            } else {
                format!("a judge declared in oloproof.yaml: {}", names.join(", "))
            };
            let help = did_you_mean(&p.judge, names.iter().copied())
                .map(|s| format!("did you mean `{s}`?"))
                .or_else(|| {
                    names.is_empty().then(|| {
                        "declare one, e.g. `judges: {gpt: {provider: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY}}`".to_string()
                    })
                });
            return Err(located(
                format!("no judge named `{}`", p.judge),
                Some(expected),
                help,
            ));
        };
        let local_kind = settings.get("provider").and_then(Value::as_str) == Some("local")
            && settings.get("kind").and_then(Value::as_str) != Some("generate");
        if local_kind {
            return Err(located(
                format!(
                    "judge `{}` is a local {} model: it cannot answer the pairwise prompt",
                    p.judge,
                    settings
                        .get("kind")
                        .and_then(Value::as_str)
                        .unwrap_or("non-chat")
                ),
                Some(
                    "an LLM judge (an HTTP provider, or `provider: local` with `kind: generate`)"
                        .into(),
                ),
                None,
            ));
        }
        if !p.exploratory && !p.allow_uncalibrated && !calibrated(&p.judge)? {
            return Err(located(
                format!(
                    "judge `{}` has no passing calibration for pairwise preference, so it may not decide",
                    p.judge
                ),
                None,
                Some(format!(
                    "calibrate it against human preferences first (`oloproof calibrate --judge {} --evaluator pairwise --labels prefs.jsonl`, \
                     lines with question, answer, answer_b and label A, B or tie), or add `allow_uncalibrated: true` to `pairwise:` \
                     (recorded and printed with the decision), or use `--pairwise {}` without a `pairwise:` block for a report without a decision",
                    p.judge, p.judge
                )),
            ));
        }
        Ok(())
    }

    /// The policy as the file says it.
    pub fn options(&self) -> &PolicyOptions {
        &self.options
    }

    /// Checks the policy's criteria and case ids against the two runs, with located errors.
    pub fn check(&self, candidate: &LoadedRun, baseline: &LoadedRun) -> Result<(), SourceError> {
        if self.options.pairwise.is_some() {
            let in_candidate: HashSet<&str> = candidate
                .cases
                .iter()
                .map(|(c, _, _)| c.id.as_str())
                .collect();
            if !baseline
                .cases
                .iter()
                .any(|(c, _, _)| in_candidate.contains(c.id.as_str()))
            {
                let key = if self.doc.locate("pairwise").is_some() {
                    "pairwise"
                } else {
                    "decisions"
                };
                let mut err = self.doc.error_at(
                    key,
                    false,
                    format!(
                        "runs {} and {} share no case: there is nothing to judge in pairs",
                        candidate.record.id, baseline.record.id
                    ),
                );
                err.expected =
                    Some("two runs of the same case file (cases are paired by id)".into());
                err.help = Some(
                    "compare a run with another run of the same cases, e.g. `oloproof run . --set …` then `oloproof compare NEW OLD --policy …`"
                        .into(),
                );
                return Err(err);
            }
        }
        let in_candidate: HashSet<&str> =
            candidate.criteria.iter().map(|(c, _)| c.as_str()).collect();
        let shared = shared_criteria(candidate, baseline);
        let all: HashSet<&str> = baseline
            .criteria
            .iter()
            .chain(&candidate.criteria)
            .map(|(c, _)| c.as_str())
            .collect();
        let case_ids: HashSet<&str> = baseline
            .cases
            .iter()
            .chain(&candidate.cases)
            .map(|(c, _, _)| c.id.as_str())
            .collect();
        for (i, d) in self.options.decisions.iter().enumerate() {
            if let Some(criterion) = &d.criterion {
                let kind = shared.iter().find(|(c, _)| c == criterion).map(|(_, k)| *k);
                let key = format!("decisions[{i}].kind");
                match (d.kind, kind) {
                    (DecisionKind::Guardrail, Some(k)) if !k.lower_is_better() => {
                        let mut err = self.doc.error_at(
                            &key,
                            true,
                            format!(
                                "`{criterion}` is not a lower-is-better amount: a guardrail bounds the increase of latency, tokens or cost"
                            ),
                        );
                        err.help = Some(
                            "use `kind: non_inferiority` with `margin_points:` for a quality criterion".into(),
                        );
                        return Err(err);
                    }
                    (DecisionKind::NonInferiority | DecisionKind::Superiority, Some(k))
                        if k.lower_is_better() =>
                    {
                        let mut err = self.doc.error_at(
                            &key,
                            true,
                            format!(
                                "`{criterion}` is lower-is-better (milliseconds, tokens or dollars): points of a difference do not apply"
                            ),
                        );
                        err.help = Some(format!(
                            "use `kind: guardrail` with `max_increase_percent: 10` (the ratio candidate / baseline of its {})",
                            k.quantile().map_or("mean".to_string(), |q| format!("p{}", q * 100.0))
                        ));
                        return Err(err);
                    }
                    _ => {}
                }
                if !shared.iter().any(|(c, _)| c == criterion) {
                    let key = format!("decisions[{i}].criterion");
                    let message = if all.contains(&criterion.as_str()) {
                        let which = if in_candidate.contains(criterion.as_str()) {
                            "candidate"
                        } else {
                            "baseline"
                        };
                        format!("criterion `{criterion}` is only in the {which} run")
                    } else {
                        format!("unknown criterion `{criterion}`")
                    };
                    let mut err = self.doc.error_at(&key, true, message);
                    let names: Vec<&str> = shared.iter().map(|(c, _)| c.as_str()).collect();
                    err.expected = Some(format!(
                        "a criterion of both runs: {}",
                        if names.is_empty() {
                            "(none)".to_string()
                        } else {
                            names.join(", ")
                        }
                    ));
                    err.help = did_you_mean(criterion, names.iter().copied())
                        .map(|s| format!("did you mean `{s}`?"));
                    return Err(err);
                }
            } else if d.kind == DecisionKind::NoRegression
                && !shared.iter().any(|(_, k)| *k == SummaryKind::Proportion)
            {
                let mut err = self.doc.error_at(
                    &format!("decisions[{i}]"),
                    true,
                    "the runs share no pass/fail criterion to watch",
                );
                err.help = Some("name the criterion with `criterion:`".into());
                return Err(err);
            }
            for (j, case) in d.cases.iter().flatten().enumerate() {
                if !case_ids.contains(case.as_str()) {
                    let mut err = self.doc.error_at(
                        &format!("decisions[{i}].cases[{j}]"),
                        true,
                        format!("unknown case `{case}`: in neither run"),
                    );
                    err.help = did_you_mean(case, case_ids.iter().copied())
                        .map(|s| format!("did you mean `{s}`?"));
                    return Err(err);
                }
            }
        }
        Ok(())
    }
}

/// A decision's outcome in the comparison record's words.
fn decision_verdict(v: Verdict3) -> DecisionVerdict {
    match v {
        Verdict3::Pass => DecisionVerdict::Pass,
        Verdict3::Fail => DecisionVerdict::Fail,
        Verdict3::InsufficientEvidence => DecisionVerdict::InsufficientEvidence,
    }
}

/// Why a comparison could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompareError {
    /// The policy does not fit the runs (unknown criterion or case, a pairwise judge that is
    /// not declared or not calibrated, no shared case to judge in pairs).
    #[error("{0}")]
    Policy(#[from] SourceError),
    /// The `--pairwise` judge is not usable (not declared, not a chat judge, uncalibrated).
    #[error("{0}")]
    PairwiseJudge(String),
    /// The policy has a `pairwise:` block but no pairwise judgments were given
    /// ([`compare_with_pairwise`]).
    #[error("the policy declares a pairwise comparison, but no pairwise judgments were made")]
    PairwiseNotJudged,
    /// The calibration lookup failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

// ----------------------------------------------------------------------------------------------
// Comparing
// ----------------------------------------------------------------------------------------------

/// How one shared case enters one criterion's comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pair {
    /// Observed in both: `(candidate, baseline)` values.
    Paired(f64, f64),
    Missing,
    Excluded,
}

fn pair(candidate: Option<&CriterionVerdict>, baseline: Option<&CriterionVerdict>) -> Pair {
    let (Some(c), Some(b)) = (candidate, baseline) else {
        return Pair::Missing;
    };
    match (&c.verdict, &b.verdict) {
        (Verdict::Missing { .. }, _) | (_, Verdict::Missing { .. }) => Pair::Missing,
        (Verdict::Excluded { .. }, _) | (_, Verdict::Excluded { .. }) => Pair::Excluded,
        (cv, bv) => match (cv.value(), bv.value()) {
            (Some(x), Some(y)) => Pair::Paired(x, y),
            _ => Pair::Missing,
        },
    }
}

/// Criteria of both runs, in the baseline's order, with the baseline's kind (downgraded to
/// `Mean` if the candidate summarises it as a mean).
fn shared_criteria(candidate: &LoadedRun, baseline: &LoadedRun) -> Vec<(String, SummaryKind)> {
    baseline
        .criteria
        .iter()
        .filter_map(|(name, kind)| {
            let (_, other) = candidate.criteria.iter().find(|(c, _)| c == name)?;
            let kind = match (kind, other) {
                // A lower-is-better amount keeps its kind when both runs agree on it; one
                // summarised differently is compared as a plain mean.
                (a, b) if a == b && a.lower_is_better() => *a,
                (a, b) if a.lower_is_better() || b.lower_is_better() => SummaryKind::Mean,
                (SummaryKind::Proportion, SummaryKind::Proportion) => SummaryKind::Proportion,
                (SummaryKind::Mean, _) | (_, SummaryKind::Mean) => SummaryKind::Mean,
                _ => SummaryKind::Rate,
            };
            Some((name.clone(), kind))
        })
        .collect()
}

/// `x` points on the 0.1-point grid, as the nearest double to the decimal (so that it prints,
/// and reads back from JSON, exactly), without a negative zero.
fn tenths(x: f64) -> f64 {
    let t = (x * 10.0).round() / 10.0;
    if t == 0.0 {
        0.0
    } else {
        t
    }
}

/// A fraction interval in points, rounded outward to 0.1 points.
fn to_points(i: Interval) -> [f64; 2] {
    let r = i.round_outward(PROPORTION_STEP);
    [tenths(r.lo * 100.0), tenths(r.hi * 100.0)]
}

/// The difference line of `criterion` over `pairs`.
fn difference(
    criterion: &str,
    kind: SummaryKind,
    pairs: &[Pair],
    bootstrap: BootstrapSettings,
) -> DifferenceLine {
    let mut line = DifferenceLine {
        criterion: criterion.to_string(),
        method: None,
        estimate_points: None,
        interval_points: None,
        no_interval: None,
        paired: 0,
        missing: 0,
        excluded: 0,
        improved: None,
        regressed: None,
        values: None,
        ratio: None,
        ratio_interval: None,
    };
    let mut cand = Vec::new();
    let mut base = Vec::new();
    for p in pairs {
        match p {
            Pair::Paired(c, b) => {
                cand.push(*c);
                base.push(*b);
            }
            Pair::Missing => line.missing += 1,
            Pair::Excluded => line.excluded += 1,
        }
    }
    line.paired = cand.len() as u64;
    if cand.is_empty() {
        return line;
    }
    if kind.lower_is_better() {
        ratio_line(&mut line, kind, &cand, &base, bootstrap);
        return line;
    }
    let binary = |v: &[f64]| v.iter().all(|x| *x == 0.0 || *x == 1.0);
    if kind != SummaryKind::Mean && binary(&cand) && binary(&base) {
        let mut counts = PairedCounts::default();
        for (c, b) in cand.iter().zip(&base) {
            match (*c == 1.0, *b == 1.0) {
                (true, true) => counts.both_pass += 1,
                (true, false) => counts.candidate_only += 1,
                (false, true) => counts.baseline_only += 1,
                (false, false) => counts.both_fail += 1,
            }
        }
        line.method = Some(DifferenceMethod::TangoScore);
        line.improved = Some(counts.candidate_only);
        line.regressed = Some(counts.baseline_only);
        line.estimate_points = Some(tenths(
            100.0 * (counts.candidate_only as f64 - counts.baseline_only as f64)
                / line.paired as f64,
        ));
        match paired_proportion_difference(counts, CONFIDENCE) {
            Ok(ci) => line.interval_points = Some(to_points(ci)),
            Err(e) => line.no_interval = Some(e.to_string()),
        }
    } else {
        line.method = Some(DifferenceMethod::PairedBootstrap);
        let n = cand.len() as f64;
        line.estimate_points = Some(tenths(
            100.0 * cand.iter().zip(&base).map(|(c, b)| c - b).sum::<f64>() / n,
        ));
        match paired_bootstrap_test(
            &cand,
            &base,
            bootstrap.resamples,
            bootstrap.seed,
            CONFIDENCE,
        ) {
            Ok(result) => {
                line.estimate_points = Some(tenths(100.0 * result.mean_difference));
                line.interval_points = Some(to_points(result.interval));
            }
            Err(e) if e.is_insufficient_data() => {
                line.no_interval = Some("too few pairs".to_string());
            }
            Err(e) => line.no_interval = Some(e.to_string()),
        }
    }
    line
}

/// Ratio intervals are rounded outward to this step.
const RATIO_STEP: f64 = 0.001;

/// `x` on the 0.001 grid, as the nearest double to the decimal.
fn thousandths(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The line of a lower-is-better criterion: each run's statistic over the paired cases (the
/// kind's quantile, or the mean), their ratio candidate / baseline, and its paired percentile
/// bootstrap interval ([`oloproof_stats::paired_ratio`], the baseline's seed and resamples),
/// rounded outward to 0.001. No points: a difference of milliseconds is not a share.
fn ratio_line(
    line: &mut DifferenceLine,
    kind: SummaryKind,
    cand: &[f64],
    base: &[f64],
    bootstrap: BootstrapSettings,
) {
    use oloproof_stats::RatioStatistic;
    let statistic = match kind.quantile() {
        Some(q) => RatioStatistic::Quantile(q),
        None => RatioStatistic::Mean,
    };
    let of = |v: &[f64]| match statistic {
        RatioStatistic::Quantile(q) => oloproof_stats::quantile(v, q).ok(),
        RatioStatistic::Mean => Some(v.iter().sum::<f64>() / v.len() as f64),
    };
    line.method = Some(DifferenceMethod::PairedBootstrapRatio);
    if let (Some(c), Some(b)) = (of(cand), of(base)) {
        line.values = Some([c, b]);
        line.ratio = (b != 0.0).then(|| thousandths(c / b));
    }
    match oloproof_stats::paired_ratio(
        cand,
        base,
        statistic,
        bootstrap.resamples,
        bootstrap.seed,
        CONFIDENCE,
    ) {
        Ok(r) => match r.interval {
            Some(ci) => {
                let ci = ci.round_outward(RATIO_STEP);
                line.ratio_interval = Some([thousandths(ci.lo), thousandths(ci.hi)]);
            }
            None => line.no_interval = Some("the baseline's value is 0: no ratio".to_string()),
        },
        Err(e) if e.is_insufficient_data() => {
            line.no_interval = Some("too few pairs".to_string());
        }
        Err(e) => line.no_interval = Some(e.to_string()),
    }
}

/// The differing leaves of two JSON values, as `path: baseline → candidate`.
fn diff_values(path: &str, baseline: &Value, candidate: &Value, out: &mut Vec<SettingDifference>) {
    if baseline == candidate {
        return;
    }
    match (baseline, candidate) {
        (Value::Object(b), Value::Object(c)) => {
            let mut keys: Vec<&String> = b.keys().collect();
            keys.extend(c.keys().filter(|k| !b.contains_key(*k)));
            for k in keys {
                let child = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                diff_values(
                    &child,
                    b.get(k).unwrap_or(&Value::Null),
                    c.get(k).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        (Value::Array(b), Value::Array(c)) if b.len() == c.len() => {
            for (i, (x, y)) in b.iter().zip(c).enumerate() {
                diff_values(&format!("{path}[{i}]"), x, y, out);
            }
        }
        _ => out.push(SettingDifference {
            path: path.to_string(),
            baseline: baseline.clone(),
            candidate: candidate.clone(),
        }),
    }
}

fn setting_differences(candidate: &LoadedRun, baseline: &LoadedRun) -> Vec<SettingDifference> {
    let mut out = Vec::new();
    let system = |r: &LoadedRun| serde_json::to_value(&r.settings.system).unwrap_or(Value::Null);
    diff_values("system", &system(baseline), &system(candidate), &mut out);
    let evaluators =
        |r: &LoadedRun| serde_json::to_value(&r.settings.options.evaluators).unwrap_or(Value::Null);
    diff_values(
        "evaluators",
        &evaluators(baseline),
        &evaluators(candidate),
        &mut out,
    );
    out
}

/// Sorts slice values: numbers numerically first, then text (as run summaries do).
fn slice_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x.total_cmp(&y),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        _ => a.cmp(b),
    }
}

/// A verdict as a change line shows it.
fn verdict_word(v: Option<&CriterionVerdict>) -> String {
    match v.map(|v| &v.verdict) {
        None | Some(Verdict::Missing { .. }) => "missing".to_string(),
        Some(Verdict::Excluded { .. }) => "excluded".to_string(),
        Some(Verdict::Pass) => "pass".to_string(),
        Some(Verdict::Fail) => "fail".to_string(),
        Some(Verdict::Score { value }) => format!("{value:.3}"),
    }
}

/// The verdict change of one criterion on one case, if any.
fn change(
    criterion: &str,
    candidate: Option<&CriterionVerdict>,
    baseline: Option<&CriterionVerdict>,
) -> Option<VerdictChange> {
    let status = |v: Option<&CriterionVerdict>| match v.map(|v| &v.verdict) {
        None | Some(Verdict::Missing { .. }) => None,
        Some(other) => Some(other.clone()),
    };
    let (c, b) = (status(candidate), status(baseline));
    let same = match (&c, &b) {
        (Some(Verdict::Excluded { .. }), Some(Verdict::Excluded { .. })) => true,
        _ => c == b,
    };
    if same {
        return None;
    }
    let direction = match (
        c.as_ref().and_then(Verdict::value),
        b.as_ref().and_then(Verdict::value),
    ) {
        (Some(x), Some(y)) if x < y => ChangeDirection::Regression,
        (Some(x), Some(y)) if x > y => ChangeDirection::Improvement,
        _ => ChangeDirection::Other,
    };
    Some(VerdictChange {
        criterion: criterion.to_string(),
        baseline: verdict_word(baseline),
        candidate: verdict_word(candidate),
        direction,
    })
}

fn verdict_of<'a>(
    verdicts: &'a [CriterionVerdict],
    criterion: &str,
) -> Option<&'a CriterionVerdict> {
    verdicts.iter().find(|v| v.criterion == criterion)
}

/// One shared case: the baseline's case and trace, and both runs' verdicts.
struct SharedCase<'a> {
    case: &'a Case,
    trace: Option<&'a Trace>,
    baseline: &'a [CriterionVerdict],
    candidate: &'a [CriterionVerdict],
}

/// Decides one declared decision.
fn decide(
    d: &DecisionOptions,
    policy: &PolicyOptions,
    lines: &[DifferenceLine],
    shared_kinds: &[(String, SummaryKind)],
    shared: &[SharedCase<'_>],
    shared_ids: &HashSet<&str>,
) -> DecisionResult {
    let criteria: Vec<String> = match &d.criterion {
        Some(c) => vec![c.clone()],
        None => shared_kinds
            .iter()
            .filter(|(_, k)| *k == SummaryKind::Proportion)
            .map(|(c, _)| c.clone())
            .collect(),
    };
    let mut result = DecisionResult {
        name: d.name.clone(),
        kind: d.kind,
        criteria: criteria.clone(),
        margin_points: d.margin_points,
        // No `cases:` list is an empty one (the decision covers every shared case).
        cases: d.cases.clone().unwrap_or_default(),
        verdict: DecisionVerdict::InsufficientEvidence,
        reason: String::new(),
        interval_points: None,
        min_win_rate_points: None,
        max_increase_percent: d.max_increase_percent,
        ratio_interval: None,
        detail: Vec::new(),
    };
    let line_of = |c: &str| lines.iter().find(|l| l.criterion == c);
    let too_many_missing = criteria
        .iter()
        .filter_map(|c| line_of(c))
        .find(|l| l.missing_share() > policy.max_missing_rate);
    let too_many = |result: &mut DecisionResult, l: &DifferenceLine| {
        result.verdict = DecisionVerdict::InsufficientEvidence;
        result.reason = reason::TOO_MANY_MISSING.to_string();
        result.detail = vec![format!(
            "{}: {} of {} missing, above the allowed {:.1}%",
            l.criterion,
            l.missing,
            l.paired + l.missing + l.excluded,
            policy.max_missing_rate * 100.0
        )];
    };
    match d.kind {
        DecisionKind::NonInferiority | DecisionKind::Superiority => {
            let Some(line) = criteria.first().and_then(|c| line_of(c)) else {
                result.reason = reason::NO_PAIRED_OBSERVATIONS.to_string();
                return result;
            };
            result.interval_points = line.interval_points;
            if let Some(l) = too_many_missing {
                too_many(&mut result, l);
                return result;
            }
            let Some([lo, hi]) = line.interval_points else {
                result.reason = reason::NO_PAIRED_OBSERVATIONS.to_string();
                return result;
            };
            let interval = Interval::new(lo, hi);
            let decision = match d.kind {
                DecisionKind::NonInferiority => {
                    non_inferiority(interval, d.margin_points.unwrap_or(f64::NAN))
                }
                _ => superiority(interval),
            };
            result.verdict = decision_verdict(decision.verdict);
            result.reason = decision.reason.to_string();
        }
        DecisionKind::Guardrail => {
            let Some(line) = criteria.first().and_then(|c| line_of(c)) else {
                result.reason = reason::NO_PAIRED_OBSERVATIONS.to_string();
                return result;
            };
            result.ratio_interval = line.ratio_interval;
            if let Some(l) = too_many_missing {
                too_many(&mut result, l);
                return result;
            }
            let Some([lo, hi]) = line.ratio_interval else {
                result.reason = reason::NO_PAIRED_OBSERVATIONS.to_string();
                if let Some(why) = &line.no_interval {
                    result.detail = vec![format!("{}: {why}", line.criterion)];
                } else if line.paired == 0 && line.excluded > 0 {
                    result.detail = vec![format!(
                        "{}: {} cases excluded in either run (a cached stage has no latency: measure both runs with --no-cache)",
                        line.criterion, line.excluded
                    )];
                }
                return result;
            };
            let limit = 1.0 + d.max_increase_percent.unwrap_or(f64::NAN) / 100.0;
            let decision = oloproof_stats::ratio_at_most(Interval::new(lo, hi), limit);
            result.verdict = decision_verdict(decision.verdict);
            result.reason = decision.reason.to_string();
        }
        // Refused by `Policy::parse`; decided by `pairwise::decide` instead.
        DecisionKind::PairwisePreference => {
            result.reason = reason::NO_PAIRED_OBSERVATIONS.to_string();
        }
        DecisionKind::NoRegression => {
            let mut regressed = Vec::new();
            let mut missing = Vec::new();
            for id in d.cases.iter().flatten() {
                let Some(case) = shared_ids
                    .contains(id.as_str())
                    .then(|| shared.iter().find(|s| &s.case.id == id))
                    .flatten()
                else {
                    missing.push(format!("{id}: in one run only"));
                    continue;
                };
                let mut case_missing = Vec::new();
                for c in &criteria {
                    match pair(verdict_of(case.candidate, c), verdict_of(case.baseline, c)) {
                        Pair::Paired(x, y) if x < y => regressed.push(format!(
                            "{id}: {c} {} → {}",
                            verdict_word(verdict_of(case.baseline, c)),
                            verdict_word(verdict_of(case.candidate, c))
                        )),
                        Pair::Missing => case_missing.push(c.as_str()),
                        _ => {}
                    }
                }
                if !case_missing.is_empty() {
                    missing.push(format!("{id}: {} missing", case_missing.join(", ")));
                }
            }
            if !regressed.is_empty() {
                result.verdict = DecisionVerdict::Fail;
                result.reason = reason::CASE_REGRESSED.to_string();
                result.detail = regressed;
            } else if !missing.is_empty() {
                result.reason = reason::CASE_MISSING.to_string();
                result.detail = missing;
            } else if let Some(l) = too_many_missing {
                too_many(&mut result, l);
            } else {
                result.verdict = DecisionVerdict::Pass;
                result.reason = reason::NO_CASE_REGRESSED.to_string();
            }
        }
    }
    result
}

/// Compares `candidate` with `baseline` under `policy`.
///
/// Pure: reads the two loaded runs and returns the comparison with its id; record it with
/// [`record_comparison`].
pub fn compare(
    candidate: &LoadedRun,
    baseline: &LoadedRun,
    policy: &Policy,
) -> Result<Comparison, CompareError> {
    compare_with_pairwise(candidate, baseline, policy, None)
}

/// [`compare`], with the pairwise judgments of [`crate::pairwise::judge_pairs`] when the
/// policy asks for them: the record carries them, and unless they are exploratory their
/// decision ([`crate::pairwise::decide`]) joins the policy's decisions (last) and the gate.
///
/// # Errors
///
/// [`CompareError::Policy`] when the policy does not fit the runs;
/// [`CompareError::PairwiseNotJudged`] when the policy has a `pairwise:` block and `pairwise`
/// is `None`.
pub fn compare_with_pairwise(
    candidate: &LoadedRun,
    baseline: &LoadedRun,
    policy: &Policy,
    pairwise: Option<PairwiseComparison>,
) -> Result<Comparison, CompareError> {
    if policy.options.pairwise.is_some() && pairwise.is_none() {
        return Err(CompareError::PairwiseNotJudged);
    }
    let _span = tracing::info_span!(
        "compare",
        candidate = %candidate.record.id,
        baseline = %baseline.record.id
    )
    .entered();
    policy.check(candidate, baseline)?;
    let bootstrap = BootstrapSettings {
        seed: baseline.settings.options.bootstrap.seed,
        resamples: baseline.settings.options.bootstrap.resamples,
    };
    let by_id: HashMap<&str, usize> = candidate
        .cases
        .iter()
        .enumerate()
        .map(|(i, (c, _, _))| (c.id.as_str(), i))
        .collect();
    let baseline_ids: HashSet<&str> = baseline
        .cases
        .iter()
        .map(|(c, _, _)| c.id.as_str())
        .collect();
    let mut shared = Vec::new();
    let mut sets = CaseSets {
        shared: 0,
        only_in_candidate: Vec::new(),
        only_in_baseline: Vec::new(),
        content_differs: Vec::new(),
    };
    for (case, trace, verdicts) in &baseline.cases {
        match by_id.get(case.id.as_str()) {
            Some(&i) => {
                let (other, _, other_verdicts) = &candidate.cases[i];
                // A `Case` always serialises (derived, string keys): `.ok()` drops no error.
                if serde_json::to_value(case).ok() != serde_json::to_value(other).ok() {
                    sets.content_differs.push(case.id.clone());
                }
                shared.push(SharedCase {
                    case,
                    trace: trace.as_ref(),
                    baseline: verdicts,
                    candidate: other_verdicts,
                });
            }
            None => sets.only_in_baseline.push(case.id.clone()),
        }
    }
    sets.only_in_candidate = candidate
        .cases
        .iter()
        .map(|(c, _, _)| c.id.clone())
        .filter(|id| !baseline_ids.contains(id.as_str()))
        .collect();
    sets.shared = shared.len() as u64;
    let shared_ids: HashSet<&str> = shared.iter().map(|s| s.case.id.as_str()).collect();

    let kinds = shared_criteria(candidate, baseline);
    let only = |a: &LoadedRun, b: &LoadedRun| -> Vec<String> {
        a.criteria
            .iter()
            .filter(|(c, _)| !b.criteria.iter().any(|(o, _)| o == c))
            .map(|(c, _)| c.clone())
            .collect()
    };
    let pairs_of = |members: &[&SharedCase<'_>], criterion: &str| -> Vec<Pair> {
        members
            .iter()
            .map(|s| {
                pair(
                    verdict_of(s.candidate, criterion),
                    verdict_of(s.baseline, criterion),
                )
            })
            .collect()
    };
    let all: Vec<&SharedCase<'_>> = shared.iter().collect();
    let lines: Vec<DifferenceLine> = kinds
        .iter()
        .map(|(c, k)| difference(c, *k, &pairs_of(&all, c), bootstrap))
        .collect();

    let mut exploratory = Vec::new();
    for key in &baseline.settings.options.slices {
        let mut groups: BTreeMap<String, Vec<&SharedCase<'_>>> = BTreeMap::new();
        for s in &shared {
            let empty;
            let trace = match s.trace {
                Some(t) => t,
                None => {
                    empty = Trace::new(&s.case.id);
                    &empty
                }
            };
            let outcome = CaseOutcome {
                case: s.case,
                trace,
                verdicts: s.baseline,
            };
            groups
                .entry(slice_value(key, &outcome))
                .or_default()
                .push(s);
        }
        let mut groups: Vec<(String, Vec<&SharedCase<'_>>)> = groups.into_iter().collect();
        groups.sort_by(|a, b| slice_order(&a.0, &b.0));
        for (value, members) in groups {
            for (c, k) in &kinds {
                exploratory.push(SliceLine {
                    key: key.clone(),
                    value: value.clone(),
                    line: difference(c, *k, &pairs_of(&members, c), bootstrap),
                });
            }
        }
    }

    let mut decisions: Vec<DecisionResult> = policy
        .options
        .decisions
        .iter()
        .map(|d| decide(d, &policy.options, &lines, &kinds, &shared, &shared_ids))
        .collect();
    if let (Some(options), Some(p)) = (&policy.options.pairwise, &pairwise) {
        if !options.exploratory {
            decisions.push(crate::pairwise::decide(
                p,
                options,
                policy.options.max_missing_rate,
            ));
        }
    }
    let gate = if decisions.iter().all(|d| d.verdict == DecisionVerdict::Pass) {
        Gate::Pass
    } else {
        Gate::Block
    };

    let mut changes: Vec<CaseChange> = shared
        .iter()
        .filter_map(|s| {
            // Amounts (latency, cost) move on every case: they are compared by their line.
            let changes: Vec<VerdictChange> = kinds
                .iter()
                .filter(|(_, k)| !k.lower_is_better())
                .filter_map(|(c, _)| {
                    change(c, verdict_of(s.candidate, c), verdict_of(s.baseline, c))
                })
                .collect();
            let direction = changes.iter().map(|c| c.direction).min()?;
            Some(CaseChange {
                case_id: s.case.id.clone(),
                direction,
                changes,
            })
        })
        .collect();
    changes.sort_by_key(|c| c.direction);

    let mut comparison = Comparison {
        id: String::new(),
        schema_version: COMPARISON_SCHEMA_VERSION,
        candidate: candidate.record.id.clone(),
        baseline: baseline.record.id.clone(),
        confidence: CONFIDENCE,
        bootstrap,
        policy: policy.options.clone(),
        cases: sets,
        setting_differences: setting_differences(candidate, baseline),
        criteria_only_in_candidate: only(candidate, baseline),
        criteria_only_in_baseline: only(baseline, candidate),
        criteria: lines,
        exploratory,
        decisions,
        gate,
        changes,
        pairwise,
        stages: crate::stage_deltas::stage_deltas(candidate, baseline),
    };
    comparison.id = comparison.compute_id();
    Ok(comparison)
}

/// Records a comparison in the store (re-recording the same id replaces it).
///
/// A comparison that cannot be serialised is an error, never an empty record.
pub fn record_comparison(
    store: &mut dyn Store,
    comparison: &Comparison,
) -> Result<(), EngineError> {
    let json = serde_json::to_string(comparison).map_err(|source| EngineError::Serialise {
        what: format!("comparison {}", comparison.id),
        source,
    })?;
    store.save_comparison(
        &comparison.id,
        &comparison.candidate,
        &comparison.baseline,
        &json,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use oloproof_core::config::validate;
    use oloproof_core::settings::RunSettings;
    use std::path::PathBuf;

    const CONFIG: &str = "system:
  rag:
    object: app:X
    depth: 6
    top_k: 2
    token_budget: 40
cases: cases.jsonl
evaluators:
  - {type: contains, criterion: answer_correct}
  - {type: recall, k: 2}
  - {type: ndcg, k: 6}
slices: [metadata.topic]
";

    const POLICY: &str = "decisions:
  - {name: answers-not-worse, criterion: answer_correct, kind: non_inferiority, margin_points: 5}
  - {name: recall-better, criterion: recall_at_2, kind: superiority}
  - {name: no-critical-regressions, kind: no_regression, cases: [c0, c1]}
max_missing_rate: 0.0
";

    fn settings(token_budget: usize) -> RunSettings {
        let doc = YamlDocument::parse("oloproof.yaml", CONFIG).unwrap();
        let options = validate(
            &doc,
            &doc.value,
            &[],
            std::path::Path::new("."),
            &crate::evaluators::Catalog,
        )
        .unwrap();
        // Built from JSON so that fields added later with a default do not break the test.
        serde_json::from_value(serde_json::json!({
            "config_path": "oloproof.yaml",
            "config_dir": ".",
            "options": options,
            "system": {
                "name": "x", "version": "1", "depth": 6, "top_k": 2,
                "token_budget": token_budget, "index_version": null, "params": {},
            },
            "workers": 1,
            "timeout_s": 60.0,
            "use_cache": true,
        }))
        .unwrap()
    }

    /// A run whose case `i` has `verdicts(i)` = (answer_correct, recall_at_2, ndcg_at_6).
    fn run(
        id: &str,
        n: usize,
        token_budget: usize,
        verdicts: impl Fn(usize) -> [Verdict; 3],
    ) -> LoadedRun {
        let settings = settings(token_budget);
        let criteria = vec![
            ("answer_correct".to_string(), SummaryKind::Proportion),
            ("recall_at_2".to_string(), SummaryKind::Rate),
            ("ndcg_at_6".to_string(), SummaryKind::Mean),
        ];
        let cases = (0..n)
            .map(|i| {
                let case: Case = serde_json::from_value(serde_json::json!({
                    "id": format!("c{i}"),
                    "input": {"question": format!("q{i}")},
                    "metadata": {"topic": if i % 2 == 0 { "even" } else { "odd" }},
                }))
                .unwrap();
                let vs = verdicts(i)
                    .into_iter()
                    .zip(&criteria)
                    .map(|(verdict, (c, _))| CriterionVerdict {
                        criterion: c.clone(),
                        verdict,
                        detail: Value::Null,
                    })
                    .collect();
                let trace = Trace::new(&case.id);
                (case, Some(trace), vs)
            })
            .collect();
        LoadedRun {
            record: oloproof_core::run::RunRecord {
                id: id.to_string(),
                created_ms: 0,
                status: oloproof_core::store::RunStatus::Complete,
                config_path: "oloproof.yaml".into(),
                settings_json: serde_json::to_string(&settings).unwrap(),
                identity: String::new(),
                system_json: "{}".into(),
                summary_json: None,
                parent: None,
                case_count: n as i64,
                done_count: n as i64,
            },
            settings,
            cases,
            criteria,
        }
    }

    fn same(i: usize) -> [Verdict; 3] {
        [
            Verdict::pass_if(!i.is_multiple_of(3)),
            Verdict::score(if i.is_multiple_of(4) { 0.0 } else { 1.0 }),
            Verdict::score(0.5 + (i % 5) as f64 / 10.0),
        ]
    }

    fn policy(text: &str) -> Policy {
        Policy::parse("compare.yaml", text).unwrap()
    }

    fn line<'a>(c: &'a Comparison, criterion: &str) -> &'a DifferenceLine {
        c.criteria
            .iter()
            .find(|l| l.criterion == criterion)
            .unwrap()
    }

    #[test]
    fn thirteen_concordant_pairs_give_tangos_interval_and_block() {
        let base = run("run_b", 13, 40, same);
        let cand = run("run_c", 13, 120, same);
        let c = compare(&cand, &base, &policy(POLICY)).unwrap();
        let a = line(&c, "answer_correct");
        assert_eq!(a.method, Some(DifferenceMethod::TangoScore));
        assert_eq!(a.estimate_points, Some(0.0));
        let [lo, hi] = a.interval_points.unwrap();
        assert!(
            (lo + 22.9).abs() < 1e-9 && (hi - 22.9).abs() < 1e-9,
            "{lo} {hi}"
        );
        assert_eq!((a.paired, a.missing, a.excluded), (13, 0, 0));
        // A rate whose values are all 0/1 is a proportion; nDCG is a mean (bootstrap, [0, 0]).
        assert_eq!(
            line(&c, "recall_at_2").method,
            Some(DifferenceMethod::TangoScore)
        );
        let n = line(&c, "ndcg_at_6");
        assert_eq!(n.method, Some(DifferenceMethod::PairedBootstrap));
        assert_eq!(n.interval_points, Some([0.0, 0.0]));
        let d = &c.decisions[0];
        assert_eq!(d.verdict, DecisionVerdict::InsufficientEvidence);
        assert_eq!(d.reason, "interval_overlaps_margin");
        assert_eq!(c.decisions[1].reason, "interval_overlaps_zero");
        assert_eq!(c.decisions[2].verdict, DecisionVerdict::Pass);
        assert_eq!(c.decisions[2].reason, "no_case_regressed");
        assert_eq!(c.decisions[2].criteria, ["answer_correct"]);
        assert_eq!(c.gate, Gate::Block);
        assert!(c.changes.is_empty());
        assert_eq!(
            c.setting_differences,
            [SettingDifference {
                path: "system.token_budget".into(),
                baseline: serde_json::json!(40),
                candidate: serde_json::json!(120),
            }]
        );
        // Exploratory lines: one per slice value and criterion, in the baseline's slice values.
        assert_eq!(c.exploratory.len(), 2 * 3);
        assert_eq!(c.exploratory[0].value, "even");
        assert_eq!(c.exploratory[0].line.paired, 7);
    }

    #[test]
    fn missing_is_never_a_pass_and_excluded_is_counted_apart() {
        let base = run("run_b", 10, 40, same);
        let cand = run("run_c", 10, 40, |i| {
            let mut v = same(i);
            if i == 1 {
                v = [
                    Verdict::Missing {
                        error: "boom".into(),
                    },
                    Verdict::Missing {
                        error: "boom".into(),
                    },
                    Verdict::Missing {
                        error: "boom".into(),
                    },
                ];
            }
            if i == 2 {
                v[1] = Verdict::Excluded {
                    reason: "no_relevance_labels".into(),
                };
            }
            v
        });
        let c = compare(&cand, &base, &policy(POLICY)).unwrap();
        let a = line(&c, "answer_correct");
        assert_eq!((a.paired, a.missing, a.excluded), (9, 1, 0));
        let r = line(&c, "recall_at_2");
        assert_eq!((r.paired, r.missing, r.excluded), (8, 1, 1));
        // max_missing_rate 0: the answer decision cannot be decided; c1 is watched and missing.
        assert_eq!(c.decisions[0].reason, "too_many_missing");
        assert_eq!(c.decisions[2].reason, "case_missing");
        assert_eq!(c.decisions[2].detail, ["c1: answer_correct missing"]);
        // The case whose verdicts went missing is a change, not a regression.
        assert_eq!(c.changes.len(), 2);
        assert!(c
            .changes
            .iter()
            .all(|ch| ch.direction == ChangeDirection::Other));
    }

    #[test]
    fn unshared_cases_are_listed_not_compared() {
        let base = run("run_b", 10, 40, same);
        let mut cand = run("run_c", 12, 40, same);
        cand.cases.remove(0);
        let c = compare(
            &cand,
            &base,
            &policy(POLICY.replace("c0, c1", "c1").as_str()),
        )
        .unwrap();
        assert_eq!(c.cases.shared, 9);
        assert_eq!(c.cases.only_in_baseline, ["c0"]);
        assert_eq!(c.cases.only_in_candidate, ["c10", "c11"]);
        assert_eq!(line(&c, "answer_correct").paired, 9);
    }

    #[test]
    fn regressions_fail_the_watch_and_come_first() {
        let base = run("run_b", 13, 40, same);
        let cand = run("run_c", 13, 40, |i| {
            let mut v = same(i);
            match i {
                1 => v[0] = Verdict::Fail,       // pass → fail
                3 => v[0] = Verdict::Pass,       // fail → pass
                5 => v[2] = Verdict::score(0.9), // 0.5 → 0.9
                _ => {}
            }
            v
        });
        let c = compare(&cand, &base, &policy(POLICY)).unwrap();
        let a = line(&c, "answer_correct");
        assert_eq!(
            (a.improved, a.regressed, a.estimate_points),
            (Some(1), Some(1), Some(0.0))
        );
        let watch = &c.decisions[2];
        assert_eq!(
            (watch.verdict, watch.reason.as_str()),
            (DecisionVerdict::Fail, "case_regressed")
        );
        assert_eq!(watch.detail, ["c1: answer_correct pass → fail"]);
        let order: Vec<(&str, ChangeDirection)> = c
            .changes
            .iter()
            .map(|ch| (ch.case_id.as_str(), ch.direction))
            .collect();
        assert_eq!(
            order,
            [
                ("c1", ChangeDirection::Regression),
                ("c3", ChangeDirection::Improvement),
                ("c5", ChangeDirection::Improvement)
            ]
        );
        assert_eq!(c.changes[2].changes[0].baseline, "0.500");
    }

    #[test]
    fn a_clear_improvement_passes_the_gate() {
        let base = run("run_b", 200, 40, |i| {
            let mut v = same(i);
            v[0] = Verdict::pass_if(i % 2 == 0);
            v[1] = Verdict::score(if i % 2 == 0 { 1.0 } else { 0.0 });
            v
        });
        let cand = run("run_c", 200, 40, same);
        let p = policy(
            "decisions:
  - {name: answers-not-worse, criterion: answer_correct, kind: non_inferiority, margin_points: 5}
  - {name: recall-better, criterion: recall_at_2, kind: superiority}
",
        );
        let c = compare(&cand, &base, &p).unwrap();
        assert_eq!(c.decisions[0].reason, "interval_above_margin");
        assert_eq!(c.decisions[1].reason, "interval_above_zero");
        assert_eq!(c.gate, Gate::Pass);
    }

    #[test]
    fn nothing_paired_has_no_interval() {
        let base = run("run_b", 3, 40, same);
        let cand = run("run_c", 3, 40, |_| {
            [
                Verdict::Missing { error: "x".into() },
                Verdict::Missing { error: "x".into() },
                Verdict::Missing { error: "x".into() },
            ]
        });
        let p = policy("decisions:\n  - {name: a, criterion: answer_correct, kind: superiority}\nmax_missing_rate: 1\n");
        let c = compare(&cand, &base, &p).unwrap();
        let a = line(&c, "answer_correct");
        assert_eq!((a.paired, a.method, a.interval_points), (0, None, None));
        assert_eq!(c.decisions[0].reason, "no_paired_observations");
    }

    #[test]
    fn the_id_is_stable_and_content_addressed() {
        let base = run("run_b", 13, 40, same);
        let cand = run("run_c", 13, 120, same);
        let a = compare(&cand, &base, &policy(POLICY)).unwrap();
        let b = compare(&cand, &base, &policy(POLICY)).unwrap();
        assert_eq!(a.id, b.id);
        assert!(a.id.starts_with("sha256:") && a.id.len() == 7 + 64);
        assert_eq!(a.id, a.compute_id());
        let other = compare(
            &cand,
            &base,
            &policy(&POLICY.replace("margin_points: 5", "margin_points: 6")),
        )
        .unwrap();
        assert_ne!(a.id, other.id);
        // Round trip through the store.
        let dir = tempdir();
        let mut store: Box<dyn Store> =
            Box::new(oloproof_store::SqliteStore::open(&dir.join("s.db")).unwrap());
        record_comparison(store.as_mut(), &a).unwrap();
        let back = store
            .load_comparison(a.id.trim_start_matches("sha256:"))
            .unwrap()
            .unwrap();
        assert_eq!(back, a);
        assert_eq!(back.compute_id(), a.id);
        let _ = std::fs::remove_dir_all(dir);
    }

    fn tempdir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "oloproof-compare-test-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn policy_error(text: &str) -> SourceError {
        Policy::parse("compare.yaml", text).unwrap_err()
    }

    fn check_error(text: &str) -> SourceError {
        let base = run("run_b", 3, 40, same);
        let cand = run("run_c", 3, 40, same);
        compare(&cand, &base, &policy(text))
            .map(|_| ())
            .map_err(|e| match e {
                CompareError::Policy(e) => e,
                other => panic!("not a policy error: {other}"),
            })
            .unwrap_err()
    }

    /// `compare.yaml:LINE:COL` of the first `needle` on line `line` of `text`.
    fn at(text: &str, line: usize, needle: &str) -> String {
        let col = text.lines().nth(line - 1).unwrap().find(needle).unwrap() + 1;
        format!("compare.yaml:{line}:{col}")
    }

    #[test]
    fn policy_errors_are_located() {
        let text = "decisions:\n  - {name: a, criterion: answer_correct, kind: non_inferiority, margn_points: 5}\n";
        let e = policy_error(text);
        assert_eq!(e.message, "unknown key `margn_points`");
        assert_eq!(e.location(), at(text, 2, "margn_points"));
        assert_eq!(e.help.as_deref(), Some("did you mean `margin_points`?"));

        let text = "decisions:\n  - {name: a, criterion: answer_correct, kind: non_inferiority, margin_points: -5}\n";
        let e = policy_error(text);
        assert_eq!(e.message, "the margin must be a positive number of points");
        assert_eq!(e.location(), at(text, 2, "-5"));

        let text = "decisions:\n  - {name: a, criterion: x, kind: superiority}\n  - {name: a, criterion: y, kind: superiority}\n";
        let e = policy_error(text);
        assert_eq!(e.message, "decision `a` is declared twice");
        assert_eq!(e.location(), at(text, 3, "a,"));

        let e = policy_error("decisions:\n  - {name: a, criterion: x, kind: non_inferiority}\n");
        assert_eq!(e.message, "missing key `margin_points`");

        let e = policy_error(
            "decisions:\n  - {name: a, criterion: x, kind: superiority, margin_points: 1}\n",
        );
        assert_eq!(
            e.message,
            "`margin_points` does not apply to a superiority decision"
        );

        let e = policy_error("decisions:\n  - {name: a, criterion: x, kind: better}\n");
        assert_eq!(e.message, "unknown value `better`");

        let e = policy_error("decisions: []\n");
        assert_eq!(e.message, "the policy declares no decisions");

        let text =
            "decisions:\n  - {name: a, criterion: x, kind: superiority}\nmax_missing_rate: 2\n";
        let e = policy_error(text);
        assert_eq!(e.location(), at(text, 3, "2"));
    }

    #[test]
    fn policy_errors_found_against_the_runs_are_located() {
        let text = "decisions:\n  - {name: a, criterion: answer_corect, kind: superiority}\n";
        let e = check_error(text);
        assert_eq!(e.message, "unknown criterion `answer_corect`");
        assert_eq!(e.location(), at(text, 2, "answer_corect"));
        assert_eq!(e.help.as_deref(), Some("did you mean `answer_correct`?"));

        let text = "decisions:\n  - {name: a, kind: no_regression, cases: [c0, c9]}\n";
        let e = check_error(text);
        assert_eq!(e.message, "unknown case `c9`: in neither run");
        assert_eq!(e.location(), at(text, 2, "c9"));
    }

    const PAIRWISE_POLICY: &str = "decisions:
  - {name: answers-not-worse, criterion: answer_correct, kind: non_inferiority, margin_points: 5}
pairwise:
  judge: pj
  min_win_rate: 0.5
";

    fn judges() -> BTreeMap<String, Value> {
        let mut j = BTreeMap::new();
        j.insert(
            "pj".to_string(),
            serde_json::json!({"provider": "openai", "model": "gpt-4o"}),
        );
        j.insert(
            "embed".to_string(),
            serde_json::json!({"provider": "local", "kind": "embedding", "path": "m"}),
        );
        j
    }

    #[test]
    fn pairwise_blocks_are_validated_with_locations() {
        let p = policy(PAIRWISE_POLICY);
        assert_eq!(p.pairwise().unwrap().judge, "pj");
        assert_eq!(p.pairwise().unwrap().name, "pairwise-preference");
        // A pairwise block alone is a policy.
        let only = policy("decisions: []\npairwise: {judge: pj}\n");
        assert!(only.options().decisions.is_empty());
        // … unless it only reports.
        let e = policy_error("decisions: []\npairwise: {judge: pj, exploratory: true}\n");
        assert_eq!(e.message, "the policy declares no decisions");

        let text = "decisions: []\npairwise: {judge: pj, min_win_rate: 1.5}\n";
        let e = policy_error(text);
        assert_eq!(e.message, "`min_win_rate` must lie in [0, 1)");
        assert_eq!(e.location(), at(text, 2, "1.5"));

        let text = "decisions: []\npairwise: {judge: pj, min_winrate: 0.6}\n";
        let e = policy_error(text);
        assert_eq!(e.message, "unknown key `min_winrate`");
        assert_eq!(e.help.as_deref(), Some("did you mean `min_win_rate`?"));

        let text = "decisions:\n  - {name: p, kind: pairwise_preference}\n";
        let e = policy_error(text);
        assert_eq!(
            e.message,
            "a pairwise_preference decision is declared in the policy's `pairwise:` block"
        );
        assert_eq!(e.location(), at(text, 2, "pairwise_preference"));

        let text = "decisions:\n  - {name: a, criterion: x, kind: superiority}\npairwise: {judge: pj, name: a}\n";
        let e = policy_error(text);
        assert_eq!(e.message, "decision `a` is declared twice");
        assert_eq!(e.location(), at(text, 3, "a}"));
    }

    #[test]
    fn pairwise_judges_must_be_declared_chat_judges_and_calibrated_to_decide() {
        let p = policy(PAIRWISE_POLICY);
        let ok = |_: &str| -> Result<bool, EngineError> { Ok(true) };
        let uncalibrated = |_: &str| -> Result<bool, EngineError> { Ok(false) };
        assert!(p.check_pairwise_judge(&judges(), ok).is_ok());
        let located = |r: Result<(), CompareError>| match r {
            Err(CompareError::Policy(e)) => e,
            other => panic!("not located: {other:?}"),
        };
        let e = located(p.check_pairwise_judge(&judges(), uncalibrated));
        assert_eq!(
            e.message,
            "judge `pj` has no passing calibration for pairwise preference, so it may not decide"
        );
        assert_eq!(e.location(), at(PAIRWISE_POLICY, 4, "pj"));
        let waived = policy(&format!("{PAIRWISE_POLICY}  allow_uncalibrated: true\n"));
        assert!(waived.check_pairwise_judge(&judges(), uncalibrated).is_ok());

        let typo = policy(&PAIRWISE_POLICY.replace("judge: pj", "judge: pjj"));
        let e = located(typo.check_pairwise_judge(&judges(), ok));
        assert_eq!(e.message, "no judge named `pjj`");
        assert_eq!(
            e.expected.as_deref(),
            Some("a judge declared in oloproof.yaml: embed, pj")
        );
        assert_eq!(e.help.as_deref(), Some("did you mean `pj`?"));
        let local = policy(&PAIRWISE_POLICY.replace("judge: pj", "judge: embed"));
        let e = located(local.check_pairwise_judge(&judges(), ok));
        assert!(
            e.message.contains("is a local embedding model"),
            "{}",
            e.message
        );

        // From the flag, without a block: a report only, so no calibration is needed; an
        // unknown judge names the flag and the declared judges.
        let flag = policy(POLICY).with_pairwise_judge("pj");
        assert!(flag.pairwise().unwrap().exploratory);
        assert!(flag.check_pairwise_judge(&judges(), uncalibrated).is_ok());
        match policy(POLICY)
            .with_pairwise_judge("nope")
            .check_pairwise_judge(&judges(), ok)
        {
            Err(CompareError::PairwiseJudge(m)) => assert_eq!(
                m,
                "--pairwise nope: no judge named `nope`; expected a judge declared in oloproof.yaml: embed, pj"
            ),
            other => panic!("{other:?}"),
        }
        // The flag overrides the block's judge, which still decides.
        let over = policy(PAIRWISE_POLICY).with_pairwise_judge("embed");
        assert!(!over.pairwise().unwrap().exploratory);
        assert!(matches!(
            over.check_pairwise_judge(&judges(), ok),
            Err(CompareError::PairwiseJudge(_))
        ));
    }

    #[test]
    fn runs_without_a_shared_case_cannot_be_judged_in_pairs() {
        let base = run("run_b", 3, 40, same);
        let mut cand = run("run_c", 3, 40, same);
        for (c, _, _) in &mut cand.cases {
            c.id = format!("x-{}", c.id);
        }
        let text = "decisions: []\npairwise: {judge: pj}\n";
        let e = policy(text).check(&cand, &base).unwrap_err();
        assert_eq!(
            e.message,
            "runs run_c and run_b share no case: there is nothing to judge in pairs"
        );
        assert_eq!(e.location(), "compare.yaml:2:1");
        assert!(e.help.unwrap().contains("oloproof compare NEW OLD"));
    }

    fn pairwise_record(wins: u64, losses: u64, cached: u64) -> PairwiseComparison {
        serde_json::from_value(serde_json::json!({
            "judge": "pj", "template": "pairwise@1", "order_seed": 1, "calibrated": true,
            "tally": {"wins": wins, "losses": losses, "ties": 0,
                "win_rate_points": 100.0 * wins as f64 / (wins + losses) as f64},
            "missing": 0, "excluded": 0, "judge_errors": 0,
            "interval_points": oloproof_stats::clopper_pearson(wins, wins + losses, 0.95)
                .map(|ci| [ci.lo * 100.0, ci.hi * 100.0]).unwrap(),
            "sign_test_p": 0.01,
            "consistency": {"judged": wins + losses, "agreed": wins + losses,
                "first_position_preferred": 0, "second_position_preferred": 0, "tie_calls": 0,
                "candidate_shown_first": 0, "baseline_shown_first": 0},
            "self_preference": {"judge_model": "gpt-4o", "judge_family": "gpt",
                "generators": [], "same_family": []},
            "length": {"cases": 0, "candidate_longer": {"wins": 0, "losses": 0, "ties": 0},
                "candidate_shorter": {"wins": 0, "losses": 0, "ties": 0},
                "same_length": {"wins": 0, "losses": 0, "ties": 0}},
            "cases": (0..wins + losses).map(|i| serde_json::json!({
                "case_id": format!("c{i}"), "outcome": if i < wins { "win" } else { "loss" },
                "chars": [1, 1], "words": [1, 1]})).collect::<Vec<_>>(),
            "usage": {"calls": 2 * (wins + losses), "cached": cached, "failed": 0,
                "input_tokens": 10, "output_tokens": 1},
        }))
        .unwrap()
    }

    #[test]
    fn the_pairwise_decision_joins_the_gate_and_usage_leaves_the_id_alone() {
        let base = run("run_b", 200, 40, |i| {
            let mut v = same(i);
            v[0] = Verdict::pass_if(i % 2 == 0);
            v
        });
        let cand = run("run_c", 200, 40, same);
        let text = "decisions:
  - {name: answers-not-worse, criterion: answer_correct, kind: non_inferiority, margin_points: 5}
pairwise: {judge: pj, name: preferred}
";
        let p = policy(text);
        assert!(matches!(
            compare(&cand, &base, &p),
            Err(CompareError::PairwiseNotJudged)
        ));
        let c = compare_with_pairwise(&cand, &base, &p, Some(pairwise_record(18, 2, 0))).unwrap();
        assert_eq!(c.decisions.len(), 2);
        let d = &c.decisions[1];
        assert_eq!(
            (d.name.as_str(), d.kind),
            ("preferred", DecisionKind::PairwisePreference)
        );
        assert_eq!(d.verdict, DecisionVerdict::Pass);
        assert_eq!(c.gate, Gate::Pass);
        let cached =
            compare_with_pairwise(&cand, &base, &p, Some(pairwise_record(18, 2, 40))).unwrap();
        assert_eq!(cached.id, c.id, "cache hits do not change the comparison");
        let lost =
            compare_with_pairwise(&cand, &base, &p, Some(pairwise_record(2, 18, 0))).unwrap();
        assert_eq!(lost.decisions[1].verdict, DecisionVerdict::Fail);
        assert_eq!(lost.gate, Gate::Block);
        assert_ne!(lost.id, c.id);
        // Exploratory: recorded, not decided.
        let flag = policy(POLICY.replace("c0, c1", "c0").as_str()).with_pairwise_judge("pj");
        let e =
            compare_with_pairwise(&cand, &base, &flag, Some(pairwise_record(2, 18, 0))).unwrap();
        assert_eq!(e.decisions.len(), 3);
        assert!(e.pairwise.is_some());
        // An old record without the pairwise fields reads back.
        let mut old =
            serde_json::to_value(compare(&cand, &base, &policy(POLICY)).unwrap()).unwrap();
        old.as_object_mut().unwrap().shift_remove("pairwise");
        let back: Comparison = serde_json::from_value(old).unwrap();
        assert!(back.pairwise.is_none() && back.policy.pairwise.is_none());
        assert_eq!(back.id, back.compute_id());
    }

    /// A guardrail on a quantile: the ratio of the candidate's p95 to the baseline's, paired by
    /// case, decided on its interval; amounts stay out of the per-case changes.
    #[test]
    fn a_guardrail_bounds_the_ratio_of_a_quantile() {
        let q = SummaryKind::Quantile(oloproof_core::summary::QuantileLevel::new(0.95).unwrap());
        let ms = |scale: f64| {
            move |i: usize| {
                [
                    Verdict::Pass,
                    Verdict::score(1.0),
                    Verdict::score(scale * (100.0 + (i % 10) as f64 * 20.0)),
                ]
            }
        };
        let timed = |id: &str, scale: f64| {
            let mut r = run(id, 60, 40, ms(scale));
            r.criteria[2].1 = q;
            r
        };
        let base = timed("b", 1.0);
        let p = policy(
            "decisions:\n  - {name: p95, kind: guardrail, criterion: ndcg_at_6, max_increase_percent: 10}\n",
        );
        let slow = compare(&timed("c", 1.5), &base, &p).unwrap();
        let l = line(&slow, "ndcg_at_6");
        assert_eq!(l.method, Some(DifferenceMethod::PairedBootstrapRatio));
        assert_eq!((l.ratio, l.ratio_interval), (Some(1.5), Some([1.5, 1.5])));
        assert_eq!(l.estimate_points, None);
        let [c, b] = l.values.unwrap();
        assert!(
            (b - 280.0).abs() < 1e-9 && (c - 420.0).abs() < 1e-9,
            "{c} {b}"
        );
        assert_eq!(slow.decisions[0].verdict, DecisionVerdict::Fail);
        assert_eq!(slow.decisions[0].reason, "ratio_above_limit");
        assert_eq!(slow.gate, Gate::Block);
        assert!(
            slow.changes.is_empty(),
            "latency moves are not verdict changes"
        );
        let fast = compare(&timed("c", 0.8), &base, &p).unwrap();
        assert_eq!(fast.decisions[0].verdict, DecisionVerdict::Pass);
        assert_eq!(fast.decisions[0].reason, "ratio_below_limit");
        // Mixed: some cases slower, some faster; the paired interval straddles 1.10.
        let mixed = {
            let mut r = run("m", 60, 40, |i| {
                let f = if i % 2 == 0 { 1.3 } else { 0.9 };
                ms(f)(i)
            });
            r.criteria[2].1 = q;
            r
        };
        let c = compare(&mixed, &base, &p).unwrap();
        let [lo, hi] = line(&c, "ndcg_at_6").ratio_interval.unwrap();
        assert!(lo < hi, "{lo} {hi}");
        // Points do not apply to a latency; a guardrail does not apply to a pass rate.
        let err = policy(
            "decisions:\n  - {name: p95, kind: non_inferiority, criterion: ndcg_at_6, margin_points: 5}\n",
        )
        .check(&mixed, &base)
        .unwrap_err();
        assert!(err.message.contains("lower-is-better"), "{}", err.message);
        let err = policy(
            "decisions:\n  - {name: g, kind: guardrail, criterion: answer_correct, max_increase_percent: 10}\n",
        )
        .check(&mixed, &base)
        .unwrap_err();
        assert!(
            err.message.contains("not a lower-is-better"),
            "{}",
            err.message
        );
        for (text, wanted) in [
            ("decisions:\n  - {name: g, kind: guardrail, criterion: x}\n", "missing key `max_increase_percent`"),
            ("decisions:\n  - {name: g, kind: guardrail, criterion: x, max_increase_percent: -1}\n", "≥ 0"),
            ("decisions:\n  - {name: g, kind: superiority, criterion: x, max_increase_percent: 5}\n", "does not apply"),
        ] {
            let err = Policy::parse("compare.yaml", text).unwrap_err();
            assert!(err.message.contains(wanted), "{text}: {}", err.message);
        }
    }
}
