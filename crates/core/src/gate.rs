//! The gate report of one run (`oloproof gate`): every threshold's outcome, pooled over a
//! window of the score history when the policy asks, and the gate over all of them.
//!
//! These are data. The policy and the decision are `oloproof_engine::gate`; the report renders
//! them. The gate's words (`PASS`, `BLOCK`) are the comparison's ([`Gate`]).

use serde::{Deserialize, Serialize};

use crate::comparison::Gate;
use crate::history::HistoryInterval;
use crate::summary::SummaryKind;

/// What a threshold compares.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// The point estimate.
    #[default]
    Value,
    /// The interval's lower bound.
    LowerBound,
    /// The interval's upper bound.
    UpperBound,
}

impl Bound {
    /// `value`, `lower_bound`, `upper_bound`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Bound::Value => "value",
            Bound::LowerBound => "lower_bound",
            Bound::UpperBound => "upper_bound",
        }
    }
}

/// One threshold's verdict: PASS or FAIL (the gate over all of them is a [`Gate`]: PASS or
/// BLOCK).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum GateVerdict {
    /// Every condition holds.
    Pass,
    /// A condition does not hold, or could not be checked.
    Fail,
}

impl GateVerdict {
    /// `PASS`, `FAIL`.
    pub const fn as_str(self) -> &'static str {
        match self {
            GateVerdict::Pass => "PASS",
            GateVerdict::Fail => "FAIL",
        }
    }
}

/// What a window pooled.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Pooled {
    /// The window as written (`last_7_days`).
    pub window: String,
    /// Runs pooled (the gated one included).
    pub runs: u64,
    /// Their run ids, oldest first.
    pub run_ids: Vec<String>,
    /// Each pooled run's judges of the criterion, when the runs were not all judged by the
    /// same judge models (the report warns; `require_same_judge: true` refuses); empty
    /// otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mixed_judges: Vec<RunJudges>,
}

/// The judge models that scored one run's criterion.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RunJudges {
    /// The run.
    pub run_id: String,
    /// Its judges as `provider/model`, sorted (empty: no judge recorded).
    pub judges: Vec<String>,
}

/// One threshold's outcome.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ThresholdResult {
    /// The criterion.
    pub criterion: String,
    /// How it is summarised.
    pub kind: Option<SummaryKind>,
    /// What was compared.
    pub on: Bound,
    /// `min` or `max`.
    pub op: String,
    /// The threshold.
    pub threshold: f64,
    /// The (pooled) value.
    pub value: Option<f64>,
    /// The (pooled) interval; `None` when there is none.
    pub interval: Option<HistoryInterval>,
    /// The number compared with the threshold.
    pub compared: Option<f64>,
    /// Passes (pass/fail criteria).
    pub passed: Option<u64>,
    /// Observed cases.
    pub observed: u64,
    /// Missing cases.
    pub missing: u64,
    /// Excluded cases.
    pub excluded: u64,
    /// `missing / (observed + missing + excluded)`.
    pub missing_share: f64,
    /// The window, when the threshold pooled the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooled: Option<Pooled>,
    /// PASS or FAIL.
    pub verdict: GateVerdict,
    /// Reason codes (`oloproof_engine::gate::reason`: `below_min`, `too_many_missing`, …),
    /// the deciding one first.
    pub reasons: Vec<String>,
}

/// The gate over one run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GateReport {
    /// The gated run.
    pub run_id: String,
    /// System name.
    pub system: String,
    /// System version.
    pub version: String,
    /// Cases in the run.
    pub cases: u64,
    /// The run's commit, when known.
    pub commit: Option<String>,
    /// The policy file as given.
    pub policy: String,
    /// `max_missing_rate` in force.
    pub max_missing_rate: f64,
    /// Every threshold, in policy order.
    pub thresholds: Vec<ThresholdResult>,
    /// `PASS` when every threshold passes, else `BLOCK`: the same outcome, in the same words,
    /// as `compare`'s gate.
    pub gate: Gate,
}
