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
    /// The pairwise judge prefers the candidate's answers in at least `min_win_rate` of the
    /// decided cases (declared in the policy's `pairwise:` block, never in `decisions:`).
    PairwisePreference,
    /// A lower-is-better criterion (latency, tokens, cost) is not more than
    /// `max_increase_percent` % above the baseline's: the ratio candidate / baseline with a
    /// paired bootstrap interval lies below `1 + max_increase_percent / 100`.
    Guardrail,
}

impl DecisionKind {
    /// `non_inferiority`, `superiority`, `no_regression`, `pairwise_preference`, `guardrail`.
    pub const fn as_str(self) -> &'static str {
        match self {
            DecisionKind::NonInferiority => "non_inferiority",
            DecisionKind::Superiority => "superiority",
            DecisionKind::NoRegression => "no_regression",
            DecisionKind::PairwisePreference => "pairwise_preference",
            DecisionKind::Guardrail => "guardrail",
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
    /// A guardrail's largest increase, in percent of the baseline's value (≥ 0; `10`: not
    /// more than 10 % worse).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_increase_percent: Option<f64>,
    /// The cases `no_regression` watches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cases: Option<Vec<String>>,
}

/// `compare.yaml` as the file says it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PolicyOptions {
    /// The decisions, all of which must pass for the gate to pass (may be left out when a
    /// `pairwise:` block decides).
    #[serde(default)]
    pub decisions: Vec<DecisionOptions>,
    /// Largest share of a decision's shared cases that may be missing (default 0).
    #[serde(default)]
    pub max_missing_rate: f64,
    /// The pairwise A/B comparison and its decision (`pairwise:`), if declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairwise: Option<PairwiseOptions>,
}

/// Default name of the pairwise decision.
pub const PAIRWISE_DECISION_NAME: &str = "pairwise-preference";

fn default_pairwise_name() -> String {
    PAIRWISE_DECISION_NAME.to_string()
}

fn default_min_win_rate() -> f64 {
    0.5
}

/// `pairwise:` of `compare.yaml`: the candidate's and the baseline's answers judged head to
/// head by one judge, in both orders, and the decision on the candidate's win rate.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PairwiseOptions {
    /// The judge, by its name in `oloproof.yaml`'s `judges:`.
    pub judge: String,
    /// The decision's name (default `pairwise-preference`).
    #[serde(default = "default_pairwise_name")]
    pub name: String,
    /// The decision passes when the lower bound of the exact 95 % interval of the candidate's
    /// win rate among decided cases (wins and losses; ties dropped) lies above this share
    /// (default 0.5: the candidate is preferred).
    #[serde(default = "default_min_win_rate")]
    pub min_win_rate: f64,
    /// The candidate's generator model, when its traces do not record one (`usage.model` or
    /// `model` in the generation output): compared with the judge's model family to flag
    /// self-preference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_model: Option<String>,
    /// The baseline's generator model, likewise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_generator_model: Option<String>,
    /// Decide with a judge that has no passing calibration for pairwise preference (default
    /// false: refused). Recorded with the comparison and printed beside the decision.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_uncalibrated: bool,
    /// Report only: judge and report the pairs, but add no decision to the gate (what
    /// `compare --pairwise JUDGE` does without a `pairwise:` block).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exploratory: bool,
}

/// Which interval a difference line carries.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DifferenceMethod {
    /// Difference of paired proportions with Tango's score interval.
    TangoScore,
    /// Mean paired difference with the paired percentile bootstrap interval.
    PairedBootstrap,
    /// A lower-is-better criterion: the ratio of the candidate's statistic (its quantile or
    /// mean) to the baseline's, with the paired percentile bootstrap interval over cases.
    PairedBootstrapRatio,
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
    /// Lower-is-better criteria: the candidate's statistic and the baseline's over the paired
    /// cases (a quantile or a mean, in the criterion's unit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<[f64; 2]>,
    /// Lower-is-better criteria: candidate / baseline of `values` (`None` with a baseline of 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    /// Lower-is-better criteria: the ratio's 95 % paired bootstrap interval, rounded outward
    /// to 0.001.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_interval: Option<[f64; 2]>,
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
    /// `pairwise_preference`: the smallest win rate it accepts, in points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_win_rate_points: Option<f64>,
    /// `guardrail`: the largest increase it accepts, in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_increase_percent: Option<f64>,
    /// `guardrail`: the ratio interval it read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_interval: Option<[f64; 2]>,
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
    /// The pairwise A/B comparison, when the policy or `--pairwise` asked for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairwise: Option<PairwiseComparison>,
    /// Per pipeline stage, both runs side by side, when both recorded pipelines (absent for
    /// two-stage runs, so their comparisons keep their ids): descriptive, not decisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<StageDeltas>,
}

/// One stage's latency in both runs, over the shared cases that timed it in both (paired by
/// case; a cached stage is not timed). Percentiles are numpy's linear method
/// (`oloproof_stats::quantile`), as in the run summary.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StageLatencyLine {
    /// `rewrite`, `retrieve`, `fuse`, `rerank`, `count_tokens`, `generate` or `total` (the
    /// sum of the stages a case timed).
    pub stage: String,
    /// Shared cases timed in both runs.
    pub paired: u64,
    /// The baseline's `[p50, p95]` in milliseconds.
    pub baseline_ms: [f64; 2],
    /// The candidate's `[p50, p95]` in milliseconds.
    pub candidate_ms: [f64; 2],
}

/// Mean recall@k of one ranking stage in both runs, over the shared cases with relevance
/// labels whose traces have that stage in both runs (document unit, trec_eval `recall_k`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StageRecallLine {
    /// `lane:NAME`, `fused`, `reranked` (the final list of a system with a rerank stage) or
    /// `final` (the final list otherwise).
    pub stage: String,
    /// The cut-off: the baseline's `top_k`.
    pub k: usize,
    /// Cases measured in both runs.
    pub paired: u64,
    /// The baseline's mean recall@k.
    pub baseline: f64,
    /// The candidate's mean recall@k.
    pub candidate: f64,
}

/// What each pipeline stage did in both runs of a comparison.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StageDeltas {
    /// Per stage latency, in pipeline order, then `total`.
    pub latency: Vec<StageLatencyLine>,
    /// Per ranking stage recall, in pipeline order (lanes, fused, reranked/final).
    pub recall: Vec<StageRecallLine>,
}

impl Comparison {
    /// The content the id hashes: everything but the id.
    pub fn content(&self) -> Value {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut value {
            map.remove("id");
            // Judge usage (tokens, cost, cache hits) depends on what was cached, not on what
            // was judged: the same comparison re-run from the cache keeps its id.
            if let Some(Value::Object(p)) = map.get_mut("pairwise") {
                p.shift_remove("usage");
            }
        }
        value
    }

    /// Whether the pairwise judge failed on more than the policy's `max_missing_rate` of the
    /// shared cases: the comparison is incomplete (`oloproof compare` exits 4, whatever the
    /// gate).
    pub fn pairwise_incomplete(&self) -> bool {
        self.pairwise.as_ref().is_some_and(|p| {
            p.judge_errors > 0
                && p.judge_errors as f64 / p.cases.len().max(1) as f64
                    > self.policy.max_missing_rate
        })
    }

    /// `sha256:` + the content hash.
    pub fn compute_id(&self) -> String {
        format!("sha256:{}", content_hash(&self.content()))
    }
}

/// One side of a pairwise comparison.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The candidate run's answer.
    Candidate,
    /// The baseline run's answer.
    Baseline,
}

impl Side {
    /// `candidate` or `baseline`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Side::Candidate => "candidate",
            Side::Baseline => "baseline",
        }
    }
}

/// Which answer one judge call (or the case) preferred.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Preference {
    /// The candidate's answer.
    Candidate,
    /// The baseline's answer.
    Baseline,
    /// Neither.
    Tie,
}

impl Preference {
    /// `candidate`, `baseline` or `tie`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Preference::Candidate => "candidate",
            Preference::Baseline => "baseline",
            Preference::Tie => "tie",
        }
    }
}

/// How one shared case ended in the pairwise comparison.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum PairwiseOutcome {
    /// Both orders preferred the candidate.
    Win,
    /// Both orders preferred the baseline.
    Loss,
    /// The orders disagreed, or both said tie.
    Tie,
    /// Not judged because something failed: a side's generation (or its trace) or the judge
    /// call. Counted, never a tie or a win.
    Missing,
    /// Not judged because a side has no answer to judge (no string `answer`).
    Excluded,
}

impl PairwiseOutcome {
    /// `win`, `loss`, `tie`, `missing`, `excluded`.
    pub const fn as_str(self) -> &'static str {
        match self {
            PairwiseOutcome::Win => "win",
            PairwiseOutcome::Loss => "loss",
            PairwiseOutcome::Tie => "tie",
            PairwiseOutcome::Missing => "missing",
            PairwiseOutcome::Excluded => "excluded",
        }
    }
}

/// One judge call of a pairwise case: which answer was shown first (as `A`) and which one the
/// judge preferred, in the comparison's words.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PairwiseCall {
    /// The answer shown as `A`.
    pub shown_first: Side,
    /// The preferred answer (`A`/`B` mapped back to the sides).
    pub preferred: Preference,
    /// The judge's justification, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One shared case of a pairwise comparison.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PairwiseCase {
    /// Case id.
    pub case_id: String,
    /// How it ended.
    pub outcome: PairwiseOutcome,
    /// For `missing` and `excluded`: a snake_case reason code (`candidate_failed`,
    /// `baseline_no_answer`, `judge_error`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For `missing`: what failed (the stage error or the judge error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The answer shown first in the first call (drawn from the order seed and the case id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<Side>,
    /// The two calls, in the order they were made (empty when the case was not judged).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<PairwiseCall>,
    /// Whether the two orders agreed (`None` when the case was not judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistent: Option<bool>,
    /// Characters of the candidate's and the baseline's answers (`None`: no answer).
    pub chars: [Option<u64>; 2],
    /// Words (whitespace-separated) of the candidate's and the baseline's answers.
    pub words: [Option<u64>; 2],
}

impl PairwiseCase {
    /// Candidate − baseline characters, when both answers exist.
    pub fn char_difference(&self) -> Option<i64> {
        Some(self.chars[0]? as i64 - self.chars[1]? as i64)
    }
    /// Candidate − baseline words, when both answers exist.
    pub fn word_difference(&self) -> Option<i64> {
        Some(self.words[0]? as i64 - self.words[1]? as i64)
    }
}

/// Wins, losses and ties of a group of cases, with the win rate among the decided ones.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct PairwiseTally {
    /// Cases both orders gave to the candidate.
    pub wins: u64,
    /// Cases both orders gave to the baseline.
    pub losses: u64,
    /// Cases the orders disagreed on, or both called a tie.
    pub ties: u64,
    /// `100 · wins / (wins + losses)`, to 0.1 points; `None` with no decided case.
    pub win_rate_points: Option<f64>,
}

/// Position consistency: how often the two orders of a case agreed, and which position the
/// single calls preferred (a judge biased towards `A` prefers the first position).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct PositionConsistency {
    /// Cases judged in both orders.
    pub judged: u64,
    /// Of those, cases whose two orders agreed (same winner, or tie twice).
    pub agreed: u64,
    /// `100 · agreed / judged`, to 0.1 points; `None` when nothing was judged.
    pub agreed_points: Option<f64>,
    /// Single calls that preferred the answer shown first (`A`).
    pub first_position_preferred: u64,
    /// Single calls that preferred the answer shown second (`B`).
    pub second_position_preferred: u64,
    /// Single calls that said tie.
    pub tie_calls: u64,
    /// Judged cases whose first call showed the candidate first.
    pub candidate_shown_first: u64,
    /// Judged cases whose first call showed the baseline first.
    pub baseline_shown_first: u64,
}

/// Where a generator model name came from.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ModelSource {
    /// The run's traces: `usage.model` or `model` of the generation output.
    Recorded,
    /// The policy's `generator_model` / `baseline_generator_model`.
    Declared,
}

/// A generator model seen on one side of the comparison.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GeneratorModel {
    /// Which run generated with it.
    pub side: Side,
    /// The model name as recorded or declared.
    pub model: String,
    /// Its family (see `oloproof_engine::pairwise::model_family`).
    pub family: String,
    /// Where the name came from.
    pub source: ModelSource,
    /// Cases whose trace records it (0 for a declared model).
    pub cases: u64,
}

/// Self-preference risk: a judge tends to prefer answers of its own model family.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SelfPreference {
    /// The judge's model name.
    pub judge_model: String,
    /// Its family.
    pub judge_family: String,
    /// Every generator model known, recorded or declared.
    pub generators: Vec<GeneratorModel>,
    /// The sides whose generator shares the judge's family (flagged, not refused).
    pub same_family: Vec<Side>,
}

/// Answer lengths beside the preference: a length-biased judge shows as a high win rate when
/// the candidate's answer is longer and a low one when it is shorter.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct LengthSummary {
    /// Cases where both answers exist.
    pub cases: u64,
    /// Mean candidate − baseline characters over those cases.
    pub mean_char_difference: Option<f64>,
    /// Mean candidate − baseline words over those cases.
    pub mean_word_difference: Option<f64>,
    /// Decided or tied cases whose candidate answer has more characters.
    pub candidate_longer: PairwiseTally,
    /// … fewer characters.
    pub candidate_shorter: PairwiseTally,
    /// … as many characters.
    pub same_length: PairwiseTally,
}

/// Judge calls of a pairwise comparison (not part of the comparison id: a re-run served from
/// the cache sends nothing and keeps the id).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct PairwiseUsage {
    /// Calls answered (sent or cached).
    pub calls: u64,
    /// Of those, answered from the judge-call cache.
    pub cached: u64,
    /// Calls that failed (their cases are `missing`).
    pub failed: u64,
    /// Input tokens billed.
    pub input_tokens: u64,
    /// Output tokens billed.
    pub output_tokens: u64,
    /// Dollars, when the judge has prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// The pairwise A/B comparison of a [`Comparison`]: every shared case's two answers judged
/// head to head in both orders (a winner only when the orders agree, else a tie).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PairwiseComparison {
    /// The judge's name in `judges:`.
    pub judge: String,
    /// Template id and version (`pairwise@2`).
    pub template: String,
    /// Seed of the per-case order draw (the baseline run's recorded `bootstrap.seed`).
    pub order_seed: u64,
    /// Whether the judge holds a passing calibration for pairwise preference.
    pub calibrated: bool,
    /// Report only (no decision).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exploratory: bool,
    /// Wins, losses, ties and the win rate among decided cases.
    pub tally: PairwiseTally,
    /// Cases not judged because a side or the judge failed.
    pub missing: u64,
    /// Cases not judged because a side has no answer.
    pub excluded: u64,
    /// Of the missing cases, those whose judge call failed.
    pub judge_errors: u64,
    /// Exact (Clopper–Pearson) 95 % interval of the win rate among decided cases, in points,
    /// rounded outward to 0.1; `None` with no decided case.
    pub interval_points: Option<[f64; 2]>,
    /// Two-sided exact sign test of wins against losses (ties dropped); `None` with no decided
    /// case.
    pub sign_test_p: Option<f64>,
    /// How often the two orders agreed.
    pub consistency: PositionConsistency,
    /// The judge's and the generators' model families.
    pub self_preference: SelfPreference,
    /// Answer lengths beside the preference.
    pub length: LengthSummary,
    /// Every shared case, in the baseline's order.
    pub cases: Vec<PairwiseCase>,
    /// Judge calls, tokens and cost (left out of the comparison id).
    #[serde(default)]
    pub usage: PairwiseUsage,
}
