//! Why a connector could not use a system's reply or reach its worker. Each connector turns
//! these into the [`StageError`](oloproof_core::trace::StageError) of the stage that failed;
//! the messages are the ones a user reads in the trace.

use crate::reply::excerpt;

/// A protocol response whose `ok` value does not have the shape its operation promises.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReplyError {
    /// A `retrieve` reply that is not a retrieval.
    #[error("bad retrieve reply ({source}): {}", excerpt(.reply, 300))]
    Retrieve {
        /// The reply, as received.
        reply: String,
        /// Why it does not parse.
        #[source]
        source: serde_json::Error,
    },
    /// A `count_tokens` reply that is not one non-negative integer per passage.
    #[error("expected {expected} non-negative integers, got {}", excerpt(.reply, 200))]
    TokenCounts {
        /// Passages sent.
        expected: usize,
        /// The reply, as received.
        reply: String,
    },
    /// A `generate` reply that is neither an object nor a string.
    #[error("generate must return an object or a string, got {}", excerpt(.reply, 200))]
    Generation {
        /// The reply, as received.
        reply: String,
    },
    /// A `rewrite` reply that is not a non-empty list of query strings.
    #[error("bad rewrite reply ({reason}): {}", excerpt(.reply, 300))]
    Rewrite {
        /// What is wrong with it.
        reason: String,
        /// The reply, as received.
        reply: String,
    },
    /// A `fuse` reply without a list of passages under `candidates`.
    #[error("bad fuse reply ({reason}): {}", excerpt(.reply, 300))]
    Fuse {
        /// What is wrong with it.
        reason: String,
        /// The reply, as received.
        reply: String,
    },
    /// A `retrieve_batch` reply that is not one result per call.
    #[error("bad retrieve_batch reply ({reason}): {}", excerpt(.reply, 300))]
    RetrieveBatch {
        /// What is wrong with it.
        reason: String,
        /// The reply, or the entry, as received.
        reply: String,
    },
    /// A `rerank` reply without a list of passages under `candidates`.
    #[error("bad rerank reply: {}", excerpt(.reply, 300))]
    Rerank {
        /// The reply, as received.
        reply: String,
    },
    /// A `rerank` reply whose `order` does not name the given candidates.
    #[error("bad rerank reply: {reason}: {}", excerpt(.reply, 300))]
    RerankOrder {
        /// What is wrong with `order`.
        reason: String,
        /// The reply, as received.
        reply: String,
    },
}

/// Why a request line could not be written to a worker: it is already gone, so it cannot have
/// received the request.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Gone {
    /// The process has exited (the text is its exit status).
    #[error("{0}")]
    Exited(String),
    /// Its stdin is closed, and it has not (yet) exited.
    #[error("its stdin is closed ({0})")]
    StdinClosed(#[source] std::io::Error),
}
