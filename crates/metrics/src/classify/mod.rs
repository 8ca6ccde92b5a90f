//! Classification-style metrics: entity-level NER scores as seqeval, per-class reports as
//! scikit-learn, accuracy, routing accuracy and relation-extraction F1.
//!
//! - [`seqeval`]: entity extraction from tag sequences (IOB1, IOB2, IOE1, IOE2, IOBES, BILOU)
//!   in seqeval's default (conlleval-like) and strict modes, and the entity-level
//!   precision/recall/F1 report (micro, macro, weighted, per type with support).
//! - [`report`]: scikit-learn's `precision_recall_fscore_support` / `classification_report`
//!   for single-label classification, accuracy and routing accuracy.
//! - [`relation`]: micro precision/recall/F1 over `(head, relation, tail)` triples.
//!
//! Every function is a pure computation; ill-formed input (ragged sequences, unknown tag
//! prefixes in strict mode) is a [`ClassifyError`], and undefined values are `None`, never NaN.
//!
//! ```
//! use oloproof_metrics::classify::seqeval::{evaluate, Mode, Options};
//!
//! // seqeval's own docstring example: MISC is shifted by one token, PER is right.
//! let truth = vec![
//!     vec!["O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"],
//!     vec!["B-PER", "I-PER", "O"],
//! ];
//! let pred = vec![
//!     vec!["O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"],
//!     vec!["B-PER", "I-PER", "O"],
//! ];
//! let report = evaluate(&truth, &pred, &Options::default())?;
//! assert_eq!(report.micro.f1, 0.5);
//! assert_eq!(report.per_type[1].name, "PER");
//! assert_eq!(report.per_type[1].scores.f1, 1.0);
//! # Ok::<(), oloproof_metrics::classify::ClassifyError>(())
//! ```

pub mod relation;
pub mod report;
pub mod seqeval;

/// Errors of the classification metrics.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ClassifyError {
    /// The two sides have a different number of sequences or items.
    #[error("{what}: {left} on one side, {right} on the other")]
    LengthMismatch {
        /// What differs (`sentences`, `tokens of sentence 3`, …).
        what: String,
        /// Length of the truth side.
        left: usize,
        /// Length of the prediction side.
        right: usize,
    },
    /// A tag cannot be read (empty tag; in strict mode a prefix outside `IOBESUL`).
    #[error("tag {tag:?}: {reason}")]
    BadTag {
        /// The tag as given.
        tag: String,
        /// Why it is rejected.
        reason: String,
    },
}
