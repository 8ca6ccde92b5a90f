//! The report of `oloproof monitor` (online evaluation of production traffic), as the engine
//! computes it, `--json` prints it, the store keeps it (artifact kind `monitors`, ids `mon_…`)
//! and `oloproof report` and the viewer render it.
//!
//! [`MonitorReport`] is the whole: the traffic read, the windows and their horizon, the tiered
//! selection, per window and segment the criteria's aggregates with their intervals
//! ([`CriterionAggregate`]), the SLO decisions ([`SloDecision`]), the alerts
//! ([`AlertReport`]), drift ([`DriftReport`]), the error share and the review queue. Every part
//! reads back from its JSON ([`MonitorReport`]'s fields are written in a fixed order, so the
//! same report always gives the same bytes).
//!
//! ```
//! use oloproof_core::monitor_report::{SloDecision, SloState};
//! let d: SloDecision = serde_json::from_value(serde_json::json!({
//!     "state": "not_demonstrated", "share": 0.97, "lower_bound": 0.927, "upper_bound": 0.99,
//!     "good": 97, "n": 100, "allowed_failures": 5, "failures": 3, "budget_left": 2
//! })).unwrap();
//! assert_eq!(d.state, SloState::NotDemonstrated);
//! assert_eq!(d.state.as_str(), "not_demonstrated");
//! assert!(d.state.fails());
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::summary::CriterionSummary;

/// Version of [`MonitorReport`]'s JSON.
pub const MONITOR_SCHEMA_VERSION: u32 = 1;

/// The whole report of one `monitor` invocation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MonitorReport {
    /// [`MONITOR_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// What was read.
    pub traffic: TrafficCounts,
    /// The windows and the horizon.
    pub window: WindowInfo,
    /// Segment keys.
    pub segments: Vec<String>,
    /// The selection of every tier.
    pub sampling: SamplingReport,
    /// Per window: segments, feedback, change markers.
    pub windows: Vec<WindowReport>,
    /// Every SLO per segment over the horizon.
    pub slos: Vec<SloReport>,
    /// Every alert per segment over the horizon.
    pub alerts: Vec<AlertReport>,
    /// Error traces over the horizon against `--max-error-rate`.
    pub errors: ErrorShare,
    /// Why the evaluation is incomplete (exit 4), empty when it is not.
    pub incomplete: Vec<String>,
    /// The review queue, when asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewReport>,
    /// Drift, when `monitor.drift` is configured (its alerts are in `alerts`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<DriftReport>,
    /// Shadow evaluation, when `monitor.shadow` is configured: the config's `system:` over a
    /// window's questions, compared with production (its gate joins [`Self::breached`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadow: Option<crate::shadow::ShadowReport>,
}

impl MonitorReport {
    /// Whether an alert fired or an SLO is not met (exit 3).
    pub fn breached(&self) -> bool {
        self.alerts.iter().any(|a| a.fired)
            || self.slos.iter().any(|s| s.decision.state.fails())
            || self.shadow.as_ref().is_some_and(|s| s.blocked())
    }
}

/// Records read.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrafficCounts {
    /// The file as named.
    pub path: String,
    /// sha256 of its bytes.
    pub sha256: String,
    /// Records loaded.
    pub records: u64,
    /// Records placed in a window.
    pub timed: u64,
    /// Records without a readable `production.timestamp`: counted, not placed.
    pub untimed: u64,
    /// The first untimed records, with why.
    pub untimed_examples: Vec<UntimedRecord>,
    /// Rows of the file not loaded (malformed lines within the allowed error rate).
    pub skipped_rows: u64,
}

/// A record left out of the windows.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UntimedRecord {
    /// Its case id.
    pub id: String,
    /// `no production.timestamp`, or the unreadable value.
    pub reason: String,
}

/// The windows.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WindowInfo {
    /// `monitor.window.size` as written.
    pub size: String,
    /// `monitor.window.rolling` as written (default: the size).
    pub rolling: String,
    /// Windows in the horizon.
    pub horizon_windows: i64,
    /// Start of the horizon (RFC 3339), when any record is timed.
    pub horizon_start: Option<String>,
    /// End of the horizon (exclusive: the end of the latest window).
    pub horizon_end: Option<String>,
}

/// The selection.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SamplingReport {
    /// The draw's seed.
    pub seed: u64,
    /// `target_judgments`.
    pub target_judgments: u64,
    /// `always`.
    pub always: Vec<String>,
    /// Per tier.
    pub tiers: Vec<TierReport>,
}

/// One tier's selection and run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TierReport {
    /// 0-based.
    pub tier: usize,
    /// Its criteria.
    pub evaluators: Vec<String>,
    /// `auto` or the share, as configured.
    pub rate: Value,
    /// Whether it takes the traces earlier tiers flagged.
    pub takes_flagged: bool,
    /// The recorded run that judged the selection (none when nothing was selected).
    pub run_id: Option<String>,
    /// Traces selected.
    pub selected: u64,
    /// Selected traces per reason (a trace may have several): `sampled`, `errors`,
    /// `negative_feedback`, `flagged`.
    pub by_reason: BTreeMap<String, u64>,
    /// Judgments served by the judgment cache and made afresh.
    pub judgments_cached: u64,
    /// Judgments made by this invocation (0 on a re-run of the same traffic).
    pub judgments_fresh: u64,
    /// Traces this tier flagged for the later tiers.
    pub flagged: u64,
    /// Every selected trace: id, window, segment, draw, rate and reasons.
    pub selection: Vec<Selected>,
}

/// One selected trace.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Selected {
    /// Case id.
    pub id: String,
    /// Trace id (`production.trace_id`, else the case id).
    pub trace_id: String,
    /// Window start (RFC 3339).
    pub window: String,
    /// Segment.
    pub segment: String,
    /// Its draw in [0, 1).
    pub draw: f64,
    /// The tier's rate in its segment and window.
    pub rate: f64,
    /// Why it was judged.
    pub reasons: Vec<String>,
}

/// One window.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WindowReport {
    /// Start (RFC 3339, inclusive).
    pub start: String,
    /// End (exclusive).
    pub end: String,
    /// Whether it is in the horizon.
    pub in_horizon: bool,
    /// Per segment.
    pub segments: Vec<SegmentWindow>,
    /// Feedback signals of the window.
    pub feedback: FeedbackCounts,
    /// What changed in it.
    pub changes: ChangeMarkers,
}

/// One segment in one window.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SegmentWindow {
    /// `intent=refund` (`all` without segment keys).
    pub segment: String,
    /// Traces.
    pub traces: u64,
    /// Error traces.
    pub errors: u64,
    /// Per criterion.
    pub criteria: Vec<CriterionAggregate>,
}

/// One criterion's aggregates in a segment and window.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CriterionAggregate {
    /// The mean (or pass rate) with its interval and counts (observed · missing · excluded),
    /// over the traces the rate drew.
    pub summary: CriterionSummary,
    /// Traces judged outside the random sample (always-included, flagged): not in the
    /// estimates.
    pub targeted: u64,
    /// p10 of the scores, with the order-statistic interval (scores only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p10: Option<QuantileEstimate>,
    /// p25 likewise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p25: Option<QuantileEstimate>,
    /// The share of observed values at or under a threshold (the SLO's `score_above`, else the
    /// tier's `flag_below`), with its Wilson interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub under: Option<ShareEstimate>,
}

/// A sample quantile with its distribution-free interval.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QuantileEstimate {
    /// The sample quantile (numpy's linear).
    pub value: f64,
    /// The 95 % order-statistic interval, when the sample is large enough.
    pub interval: Option<[f64; 2]>,
    /// Why there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_interval: Option<String>,
}

/// A share with its 95 % Wilson interval.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShareEstimate {
    /// The threshold (`value ≤ threshold` counts).
    pub threshold: f64,
    /// How many.
    pub k: u64,
    /// Of how many.
    pub n: u64,
    /// `k / n`.
    pub share: Option<f64>,
    /// The interval.
    pub interval: Option<[f64; 2]>,
}

/// Feedback signals of a window ([`crate::production::Feedback`]'s names).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FeedbackCounts {
    /// Thumbs up.
    pub thumbs_up: u64,
    /// Thumbs down.
    pub thumbs_down: u64,
    /// The comments given with a thumbs-down, counted.
    pub down_reasons: BTreeMap<String, u64>,
    /// Regenerations.
    pub regenerated: u64,
    /// Copies.
    pub copied: u64,
    /// Follow-up questions.
    pub follow_up: u64,
    /// Other scores by name (counted, not interpreted).
    pub other: BTreeMap<String, u64>,
}

/// Whether the code, model or configuration changed in a window: the distinct values seen
/// (the code version fields of the metadata, the models of every stage's `usage`, the
/// config hash), and whether they
/// differ from the previous window's or hold more than one value.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ChangeMarkers {
    /// Code versions seen.
    pub code: Vec<String>,
    /// Models seen.
    pub model: Vec<String>,
    /// Config hashes seen.
    pub config: Vec<String>,
    /// The code changed.
    pub code_changed: bool,
    /// The model changed.
    pub model_changed: bool,
    /// The config changed.
    pub config_changed: bool,
}

/// One SLO in one segment.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SloReport {
    /// The criterion.
    pub criterion: String,
    /// The segment.
    pub segment: String,
    /// Good means strictly above this.
    pub score_above: f64,
    /// The promised share.
    pub min_share: f64,
    /// One-sided confidence of the lower bound.
    pub confidence: f64,
    /// The decision and the budget.
    pub decision: SloDecision,
}

/// One alert in one segment.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AlertReport {
    /// The alert's `type`.
    #[serde(rename = "type")]
    pub kind: String,
    /// What it watches (`total`, a criterion, `regenerated`).
    pub subject: String,
    /// The segment.
    pub segment: String,
    /// Whether it fired.
    pub fired: bool,
    /// `fired`, `ok` or `insufficient` (no interval to decide on).
    pub status: String,
    /// Why, in words, with the numbers.
    pub why: String,
    /// The traces behind it.
    pub n: u64,
    /// The point value (shown, not decided on).
    pub value: Option<f64>,
    /// The interval decided on.
    pub interval: Option<[f64; 2]>,
    /// What changed in the horizon.
    pub changes: ChangeMarkers,
}

/// Error traces over the horizon.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorShare {
    /// Error traces.
    pub errors: u64,
    /// Traces.
    pub traces: u64,
    /// The allowed share.
    pub max_error_rate: f64,
}

/// The review queue.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReviewReport {
    /// Seed of the blind sample (the sampling seed).
    pub seed: u64,
    /// Rows in the queue.
    pub rows: u64,
    /// Rows per reason (a row may have several): `random`, `low_confidence`, `thumbs_down`.
    pub by_reason: BTreeMap<String, u64>,
    /// Each row's id and reasons (kept out of the rows, which stay blind).
    pub reasons: BTreeMap<String, Vec<String>>,
}

/// Where an SLO stands.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SloState {
    /// The Wilson lower bound reaches the promised share.
    Met,
    /// The lower bound is under the promise but the upper bound is not: the sample cannot
    /// show the SLO holds (more judgments would decide).
    NotDemonstrated,
    /// Even the upper bound is under the promise: the SLO is broken.
    Violated,
    /// Nothing was judged over the horizon.
    NoData,
}

impl SloState {
    /// Whether `monitor` exits 3 for it: every state but `met` (an SLO is promised, so what
    /// cannot be shown to hold does not hold).
    pub fn fails(self) -> bool {
        self != SloState::Met
    }

    /// The state as `--json` writes it: `met`, `not_demonstrated`, `violated`, `no_data`.
    pub fn as_str(self) -> &'static str {
        match self {
            SloState::Met => "met",
            SloState::NotDemonstrated => "not_demonstrated",
            SloState::Violated => "violated",
            SloState::NoData => "no_data",
        }
    }

    /// The state in words, as reports show it: `met`, `not demonstrated`, `violated`,
    /// `no data`.
    pub fn label(self) -> &'static str {
        match self {
            SloState::Met => "met",
            SloState::NotDemonstrated => "not demonstrated",
            SloState::Violated => "violated",
            SloState::NoData => "no data",
        }
    }
}

/// The decision on a quality SLO from `good` of `n` judged answers.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SloDecision {
    /// Met, not demonstrated, violated or no data.
    pub state: SloState,
    /// `good / n`, shown but never decided on.
    pub share: Option<f64>,
    /// The one-sided Wilson lower bound at the SLO's confidence (the lower end of the two-sided
    /// `2c − 1` interval), which the decision reads.
    pub lower_bound: Option<f64>,
    /// The upper end of the same interval.
    pub upper_bound: Option<f64>,
    /// Answers scored above the threshold.
    pub good: u64,
    /// Judged answers.
    pub n: u64,
    /// Failures the promise allows on `n` answers: `floor((1 − min_share) · n)`.
    pub allowed_failures: u64,
    /// `n − good`.
    pub failures: u64,
    /// `allowed_failures − failures`: negative once the budget is spent.
    pub budget_left: i64,
}

/// Everything drift found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DriftReport {
    /// The embedding judge.
    pub embedder: Option<String>,
    /// Its model's content identity.
    pub model_identity: Option<String>,
    /// `first`, `previous` or the reference window's start, as configured.
    pub reference: String,
    /// Significance level applied to the Holm-adjusted p-values.
    pub alpha: f64,
    /// Permutations per test.
    pub permutations: usize,
    /// Timed records without a question text (not embedded; counted).
    pub without_question: u64,
    /// One test per window (and segment) against its reference.
    pub queries: Vec<QueryDrift>,
    /// The probe set, when configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probes: Option<ProbeDrift>,
    /// One entry per `drift.performance` item.
    pub performance: Vec<PerformanceDrift>,
}

/// Query drift of one window (and segment) against its reference.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QueryDrift {
    /// Window start.
    pub window: String,
    /// The reference window's start (none when there is none).
    pub reference_window: Option<String>,
    /// `all`, or the segment.
    pub segment: String,
    /// Whether the window is in the horizon (only those are adjusted and alerted on).
    pub in_horizon: bool,
    /// `drift`, `no_drift`, or `insufficient` (see `why`).
    pub status: String,
    /// Reference queries tested.
    pub reference_queries: u64,
    /// Window queries tested.
    pub window_queries: u64,
    /// Window queries left out by `max_queries`.
    pub subsampled_out: u64,
    /// Unbiased MMD².
    pub mmd2: Option<f64>,
    /// Kernel bandwidth (median heuristic).
    pub bandwidth: Option<f64>,
    /// Permutation p-value.
    pub p_value: Option<f64>,
    /// Holm-adjusted over the horizon's tests.
    pub p_adjusted: Option<f64>,
    /// Jensen–Shannon distance (base 2) of the binned cosine to the reference centroid.
    pub js_distance: Option<f64>,
    /// Bins of that histogram (after ties).
    pub bins: Option<usize>,
    /// Why there is no test, or the numbers in words.
    pub why: String,
}

/// Probe drift.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProbeDrift {
    /// The probe file as configured.
    pub file: String,
    /// The stored vectors file as configured or derived.
    pub vectors: String,
    /// `baseline_written` (first run), `compared`.
    pub status: String,
    /// Probes read.
    pub probes: u64,
    /// Probes compared with a stored vector.
    pub compared: u64,
    /// Probes without a stored vector (added after the baseline), or whose text changed.
    pub unmatched: Vec<String>,
    /// Smallest cosine.
    pub min_cosine: Option<f64>,
    /// Mean cosine.
    pub mean_cosine: Option<f64>,
    /// The threshold.
    pub threshold: f64,
    /// Probes under it, with their cosine.
    pub below: Vec<(String, f64)>,
    /// Model identity stored with the vectors.
    pub stored_model: Option<String>,
    /// Model identity now.
    pub current_model: Option<String>,
}

/// One performance-drift item.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PerformanceDrift {
    /// `regeneration`, `thumbs_down`, `follow_up`, or the criterion.
    pub subject: String,
    /// The segment key.
    pub by: Vec<String>,
    /// The fixed band, when configured.
    pub band: Option<[f64; 2]>,
    /// Per window and segment.
    pub windows: Vec<PerformanceWindow>,
}

/// One window and segment of a performance-drift item.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PerformanceWindow {
    /// Window start.
    pub window: String,
    /// Segment.
    pub segment: String,
    /// Whether in the horizon.
    pub in_horizon: bool,
    /// `out_of_band`, `in_band`, `reference` (the reference window itself), `insufficient`.
    pub status: String,
    /// Traces (signal) or sampled observed judgments (criterion).
    pub n: u64,
    /// The share or mean.
    pub value: Option<f64>,
    /// Its 95 % interval (Wilson for shares, the run summary's for a criterion).
    pub interval: Option<[f64; 2]>,
    /// The band decided on (fixed, or the reference's control limits).
    pub band: Option<[f64; 2]>,
    /// The reference's value and size behind control limits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<(f64, u64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slo_states_read_back_as_written() {
        for s in [
            SloState::Met,
            SloState::NotDemonstrated,
            SloState::Violated,
            SloState::NoData,
        ] {
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(json, format!("\"{}\"", s.as_str()));
            assert_eq!(serde_json::from_str::<SloState>(&json).unwrap(), s);
        }
        assert_eq!(SloState::NotDemonstrated.label(), "not demonstrated");
    }
}
