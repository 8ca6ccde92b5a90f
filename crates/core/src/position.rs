//! The lost-in-the-middle harness's result (`oloproof lost-in-the-middle`): the criterion's
//! pass rate with the gold passages first, in the middle and last among the same distractors.
//!
//! These are data: the child runs are `oloproof_engine::position`, the report renders them.

use serde::{Deserialize, Serialize};

use crate::context::GoldSlot;
use crate::summary::CriterionSummary;

/// One position's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PositionResult {
    /// `first`, `middle` or `last`.
    pub position: GoldSlot,
    /// The child run.
    pub run_id: String,
    /// The criterion's summary over the cases at this position.
    pub summary: CriterionSummary,
}

/// The harness's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PositionReport {
    /// The parent run.
    pub run_id: String,
    /// The pass/fail criterion.
    pub criterion: String,
    /// Distractors asked for.
    pub distractors: usize,
    /// Cases run (gold context and a recorded retrieval).
    pub cases: usize,
    /// Cases left out, with why.
    pub left_out: Vec<(String, String)>,
    /// Per position, in order first, middle, last.
    pub positions: Vec<PositionResult>,
}
