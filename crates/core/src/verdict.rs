//! How one criterion judged one case.

use serde::{Deserialize, Serialize};

/// One criterion on one case: a score, a pass/fail, missing (an error) or excluded (a reason).
/// Never a bare NaN: an undefined score is `Excluded` with its reason.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Verdict {
    /// Passed.
    Pass,
    /// Failed.
    Fail,
    /// A score (finite).
    Score {
        /// The value.
        value: f64,
    },
    /// Could not be computed because something failed; the error says what.
    Missing {
        /// The error.
        error: String,
    },
    /// Not applicable to this case; the reason says why (e.g. `no_relevance_labels`).
    Excluded {
        /// The reason code.
        reason: String,
    },
}

impl Verdict {
    /// A score, turned into `Missing` if it is not finite (so NaN can never reach a summary).
    pub fn score(value: f64) -> Verdict {
        if value.is_finite() {
            Verdict::Score { value }
        } else {
            Verdict::Missing {
                error: format!("non-finite score {value}"),
            }
        }
    }

    /// Pass or fail from a boolean.
    pub fn pass_if(ok: bool) -> Verdict {
        if ok {
            Verdict::Pass
        } else {
            Verdict::Fail
        }
    }

    /// Short status word: `pass`, `fail`, `score`, `missing`, `excluded`.
    pub fn status(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Score { .. } => "score",
            Verdict::Missing { .. } => "missing",
            Verdict::Excluded { .. } => "excluded",
        }
    }

    /// The numeric value: 1/0 for pass/fail, the score, `None` otherwise.
    pub fn value(&self) -> Option<f64> {
        match self {
            Verdict::Pass => Some(1.0),
            Verdict::Fail => Some(0.0),
            Verdict::Score { value } => Some(*value),
            _ => None,
        }
    }
}

/// A verdict with its criterion and the evidence behind it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CriterionVerdict {
    /// Criterion name.
    pub criterion: String,
    /// The verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// Evidence (e.g. best relevant position, invalid citations).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub detail: serde_json::Value,
}
