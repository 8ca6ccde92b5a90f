//! What an import could not read, counted by kind, with the first few located.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::span::Location;

/// One problem met while reading or assembling spans.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Problem {
    /// A stable kind (`not_traces_data`, `truncated_protobuf`, `missing_parent`,
    /// `duplicate_span_id`, `end_before_start`, `wrong_attribute_type`, …).
    pub kind: String,
    /// Where.
    pub at: Location,
    /// What, in a sentence, with the fix when there is one.
    pub message: String,
}

/// The import's accounting: spans read = spans assembled into records + spans dropped (each
/// dropped span counted under a problem kind). Problems that keep the span (a missing parent,
/// a wrong attribute type) are counted too, beside.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ImportSummary {
    /// Spans decoded from the input.
    pub spans_read: u64,
    /// Spans that went into a record.
    pub spans_used: u64,
    /// Spans dropped, by problem kind.
    pub spans_dropped: BTreeMap<String, u64>,
    /// Records (traces) written.
    pub records: u64,
    /// Every problem by kind (dropping or not).
    pub problems: BTreeMap<String, u64>,
    /// The first problems, located (at most [`ImportSummary::FIRST`]).
    pub first: Vec<Problem>,
}

impl ImportSummary {
    /// How many problems are kept with their location.
    pub const FIRST: usize = 10;

    /// Counts a problem, keeping it when fewer than [`Self::FIRST`] are kept.
    pub fn note(&mut self, problem: Problem) {
        *self.problems.entry(problem.kind.clone()).or_default() += 1;
        if self.first.len() < Self::FIRST {
            self.first.push(problem);
        }
    }

    /// Whether the accounting adds up: read = used + dropped.
    pub fn adds_up(&self) -> bool {
        self.spans_read == self.spans_used + self.spans_dropped.values().sum::<u64>()
    }
}
