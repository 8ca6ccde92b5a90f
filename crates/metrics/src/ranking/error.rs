//! Errors of the ranking engine.

/// What can go wrong while judging rankings or reading measure specifications.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RankingError {
    /// A document appears twice in one topic of a run (trec_eval refuses this too).
    #[error("duplicate document '{doc}' in one topic of the run")]
    DuplicateDocument {
        /// The repeated document identifier.
        doc: String,
    },
    /// A document is judged twice for one topic.
    #[error("duplicate judgment for document '{doc}' in one topic of the qrels")]
    DuplicateJudgment {
        /// The repeated document identifier.
        doc: String,
    },
    /// A relevance value too large to index levels by.
    #[error("relevance value {rel} is too large")]
    RelevanceTooLarge {
        /// The offending value.
        rel: i64,
    },
    /// A `-m` measure name that trec_eval does not know.
    #[error("illegal measure '{spec}'")]
    UnknownMeasure {
        /// The specification as given.
        spec: String,
    },
    /// Parameters of a measure that cannot be used.
    #[error("bad parameters for measure '{measure}': {reason}")]
    BadParameters {
        /// The measure name.
        measure: String,
        /// Why the parameters were refused.
        reason: String,
    },
}
