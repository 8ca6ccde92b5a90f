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
    /// Input records read as nothing at all — a JSON line that is not JSON or not
    /// `TracesData`, protobuf cut or corrupt outside any span — whose spans (if any) cannot
    /// be counted; each is under its problem kind in [`Self::problems`].
    #[serde(default)]
    pub records_dropped: u64,
    /// [`Self::records_dropped`] by problem kind.
    #[serde(default)]
    pub records_dropped_by: BTreeMap<String, u64>,
    /// OTLP log records read (`import --logs`): each is used (added to its span as an event)
    /// or skipped with its reason.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub log_records_read: u64,
    /// Log records added to a span of a record as one of its events.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub log_records_used: u64,
    /// Log records read and not used, by reason (`not_an_event`, `no_span`,
    /// `trace_not_imported`, `span_not_in_trace`, `after_its_trace`, `bad_id`: see
    /// [`crate::otlp::logs::skipped`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub log_records_skipped: BTreeMap<String, u64>,
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

    /// Whether the accounting adds up: spans read = used + dropped, and log records read =
    /// used + skipped.
    pub fn adds_up(&self) -> bool {
        self.spans_read == self.spans_used + self.dropped()
            && self.log_records_read
                == self.log_records_used + self.log_records_skipped.values().sum::<u64>()
    }

    /// Spans dropped, all kinds.
    pub fn dropped(&self) -> u64 {
        self.spans_dropped.values().sum()
    }

    /// Counts a dropped span under `kind` and notes its problem.
    pub fn drop_span(&mut self, problem: Problem) {
        *self.spans_dropped.entry(problem.kind.clone()).or_default() += 1;
        self.note(problem);
    }

    /// Counts an input record that could not be read at all under `kind` and notes its
    /// problem.
    pub fn drop_record(&mut self, problem: Problem) {
        self.records_dropped += 1;
        *self
            .records_dropped_by
            .entry(problem.kind.clone())
            .or_default() += 1;
        self.note(problem);
    }

    /// Adds `other`'s counts to these (the located problems kept up to [`Self::FIRST`]).
    pub fn merge(&mut self, other: ImportSummary) {
        self.spans_read += other.spans_read;
        self.spans_used += other.spans_used;
        self.records += other.records;
        self.records_dropped += other.records_dropped;
        for (k, n) in other.records_dropped_by {
            *self.records_dropped_by.entry(k).or_default() += n;
        }
        for (k, n) in other.spans_dropped {
            *self.spans_dropped.entry(k).or_default() += n;
        }
        self.log_records_read += other.log_records_read;
        self.log_records_used += other.log_records_used;
        for (k, n) in other.log_records_skipped {
            *self.log_records_skipped.entry(k).or_default() += n;
        }
        for (k, n) in other.problems {
            *self.problems.entry(k).or_default() += n;
        }
        for p in other.first {
            if self.first.len() < Self::FIRST {
                self.first.push(p);
            }
        }
    }
}

/// Whether a count is zero (serde's `skip_serializing_if`: summaries without logs read as
/// before).
fn is_zero(n: &u64) -> bool {
    *n == 0
}
