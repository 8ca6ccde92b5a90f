//! The comparison record of two runs under a policy (`oloproof compare`), as stored and read
//! back: the policy as declared, the paired difference of every criterion, the exploratory
//! per-slice lines, the decisions, the gate and the per-case changes.
//!
//! These are data. Pairing the runs, the intervals and the decisions are computed by
//! `oloproof_engine::compare`; the store keeps the record as JSON under its content-addressed
//! id ([`Comparison::compute_id`]); the report and the viewer render it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::identity::content_hash;

/// Schema version of stored comparisons.
pub const COMPARISON_SCHEMA_VERSION: u32 = 1;

/// What a decision tests.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// The candidate is not worse than the baseline by `margin_points` or more.
    NonInferiority,
    /// The candidate is better than the baseline.
    Superiority,
    /// None of the listed cases regressed.
    NoRegression,
}

impl DecisionKind {
    /// `non_inferiority`, `superiority`, `no_regression`.
    pub const fn as_str(self) -> &'static str {
        match self {
            DecisionKind::NonInferiority => "non_inferiority",
            DecisionKind::Superiority => "superiority",
            DecisionKind::NoRegression => "no_regression",
        }
    }
}

/// One entry of `decisions:` as the policy file says it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DecisionOptions {
    /// A unique name, printed in the report.
    pub name: String,
    /// What the decision tests.
    pub kind: DecisionKind,
    /// The criterion (required for `non_inferiority` and `superiority`; for `no_regression`,
    /// default every pass/fail criterion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// The non-inferiority margin, in points (> 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin_points: Option<f64>,
    /// The cases `no_regression` watches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cases: Option<Vec<String>>,
}

/// `compare.yaml` as the file says it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PolicyOptions {
    /// The decisions, all of which must pass for the gate to pass.
    pub decisions: Vec<DecisionOptions>,
    /// Largest share of a decision's shared cases that may be missing (default 0).
    #[serde(default)]
    pub max_missing_rate: f64,
}

/// Which interval a difference line carries.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DifferenceMethod {
    /// Difference of paired proportions with Tango's score interval.
    TangoScore,
    /// Mean paired difference with the paired percentile bootstrap interval.
    PairedBootstrap,
}

/// The paired difference of one criterion over a set of shared cases.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DifferenceLine {
    /// Criterion.
    pub criterion: String,
    /// How the interval was computed; `None` when nothing was paired.
    pub method: Option<DifferenceMethod>,
    /// Candidate − baseline, in points; `None` when nothing was paired.
    pub estimate_points: Option<f64>,
    /// 95 % interval in points, rounded outward to 0.1; `None` when it is undefined.
    pub interval_points: Option<[f64; 2]>,
    /// Why there is no interval although something was paired (e.g. too few pairs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_interval: Option<String>,
    /// Cases observed in both runs.
    pub paired: u64,
    /// Cases missing (an error, or not run) in either run.
    pub missing: u64,
    /// Cases excluded in either run.
    pub excluded: u64,
    /// Pass/fail only: cases only the candidate passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub improved: Option<u64>,
    /// Pass/fail only: cases only the baseline passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regressed: Option<u64>,
}

impl DifferenceLine {
    /// Share of the line's cases that are missing (0 when it has no cases).
    pub fn missing_share(&self) -> f64 {
        let total = self.paired + self.missing + self.excluded;
        if total == 0 {
            0.0
        } else {
            self.missing as f64 / total as f64
        }
    }
}

/// An exploratory difference within one slice value (baseline's slice values).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SliceLine {
    /// Slice key (`metadata.topic`).
    pub key: String,
    /// Slice value (`billing`).
    pub value: String,
    /// The difference within the slice.
    pub line: DifferenceLine,
}

/// A setting that differs between the runs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SettingDifference {
    /// Key path (`system.token_budget`, `evaluators[1].k`).
    pub path: String,
    /// The baseline's value.
    pub baseline: Value,
    /// The candidate's value.
    pub candidate: Value,
}

/// Which cases the runs share.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CaseSets {
    /// Cases in both runs (the compared ones).
    pub shared: u64,
    /// Case ids in the candidate run only.
    pub only_in_candidate: Vec<String>,
    /// Case ids in the baseline run only.
    pub only_in_baseline: Vec<String>,
    /// Shared case ids whose content (input, expected, metadata) differs between the runs.
    pub content_differs: Vec<String>,
}

/// A decision's outcome, as reports and stored comparisons spell it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum DecisionVerdict {
    /// Established.
    #[serde(rename = "PASS")]
    Pass,
    /// The opposite is established.
    #[serde(rename = "FAIL")]
    Fail,
    /// Neither.
    #[serde(rename = "INSUFFICIENT_EVIDENCE")]
    InsufficientEvidence,
}

impl DecisionVerdict {
    /// `PASS`, `FAIL`, `INSUFFICIENT_EVIDENCE`.
    pub const fn as_str(self) -> &'static str {
        match self {
            DecisionVerdict::Pass => "PASS",
            DecisionVerdict::Fail => "FAIL",
            DecisionVerdict::InsufficientEvidence => "INSUFFICIENT_EVIDENCE",
        }
    }
}

/// One decision of the policy, decided.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DecisionResult {
    /// The decision's name.
    pub name: String,
    /// Its kind.
    pub kind: DecisionKind,
    /// The criteria it read (one, or for `no_regression` without `criterion`, every pass/fail
    /// criterion of both runs).
    pub criteria: Vec<String>,
    /// Non-inferiority margin, in points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin_points: Option<f64>,
    /// The cases a `no_regression` decision watches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cases: Vec<String>,
    /// The outcome.
    pub verdict: DecisionVerdict,
    /// Why (a reason code).
    pub reason: String,
    /// The interval it read, in points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_points: Option<[f64; 2]>,
    /// Evidence: the regressed or missing case ids, or the missing share.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub detail: Vec<String>,
}

/// The gate: every decision passed, or not.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum Gate {
    /// Every decision passed.
    #[serde(rename = "PASS")]
    Pass,
    /// At least one decision did not pass. (Gate reports written before one vocabulary was
    /// chosen for every gating command said `FAIL`; they read back as `BLOCK`.)
    #[serde(rename = "BLOCK", alias = "FAIL")]
    Block,
}

/// Which way a verdict moved.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum ChangeDirection {
    /// Pass → fail, or a lower score.
    Regression,
    /// To or from missing or excluded.
    Other,
    /// Fail → pass, or a higher score.
    Improvement,
}

/// One criterion's verdict change on one case.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct VerdictChange {
    /// Criterion.
    pub criterion: String,
    /// The baseline's verdict (`pass`, `fail`, `0.631`, `missing`, `excluded`).
    pub baseline: String,
    /// The candidate's verdict.
    pub candidate: String,
    /// Which way it moved.
    pub direction: ChangeDirection,
}

/// A shared case whose verdict changed on some criterion.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CaseChange {
    /// Case id.
    pub case_id: String,
    /// The case's worst change (a regression on any criterion makes it a regression).
    pub direction: ChangeDirection,
    /// Its changes, in criterion order.
    pub changes: Vec<VerdictChange>,
}

/// Seed and resample count of the paired bootstraps (the baseline run's).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct BootstrapSettings {
    /// Seed.
    pub seed: u64,
    /// Resamples.
    pub resamples: usize,
}

/// A comparison of two runs under a policy.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Comparison {
    /// `sha256:<hex>` of the canonical JSON of every other field.
    pub id: String,
    /// [`COMPARISON_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The candidate run.
    pub candidate: String,
    /// The baseline run.
    pub baseline: String,
    /// Confidence level of every interval.
    pub confidence: f64,
    /// The bootstrap's seed and resamples.
    pub bootstrap: BootstrapSettings,
    /// The policy as declared.
    pub policy: PolicyOptions,
    /// Shared and unshared cases.
    pub cases: CaseSets,
    /// Settings that differ (system and evaluators).
    pub setting_differences: Vec<SettingDifference>,
    /// Criteria of the candidate run only (not compared).
    pub criteria_only_in_candidate: Vec<String>,
    /// Criteria of the baseline run only (not compared).
    pub criteria_only_in_baseline: Vec<String>,
    /// One line per criterion of both runs, in the baseline's order.
    pub criteria: Vec<DifferenceLine>,
    /// Per slice value and criterion: exploratory, not decisions.
    pub exploratory: Vec<SliceLine>,
    /// The policy's decisions, in declaration order.
    pub decisions: Vec<DecisionResult>,
    /// The gate.
    pub gate: Gate,
    /// Shared cases whose verdict changed, regressions first.
    pub changes: Vec<CaseChange>,
}

impl Comparison {
    /// The content the id hashes: everything but the id.
    pub fn content(&self) -> Value {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut value {
            map.remove("id");
        }
        value
    }

    /// `sha256:` + the content hash.
    pub fn compute_id(&self) -> String {
        format!("sha256:{}", content_hash(&self.content()))
    }
}
