//! Result types of a run that every reader of the store shares: how a criterion's verdicts
//! are summarised.

/// How a criterion's verdicts are summarised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SummaryKind {
    /// Pass/fail: a proportion with the exact Clopper–Pearson interval.
    Proportion,
    /// A score in [0, 1] shown as a percentage: exact interval when every observed value is 0
    /// or 1, percentile bootstrap otherwise.
    Rate,
    /// A score: mean with a percentile bootstrap interval.
    Mean,
}
