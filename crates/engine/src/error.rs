//! Engine errors.

use oloproof_core::trace::StageError;

/// Why a run could not start or finish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] oloproof_core::config::ConfigError),
    /// The case file is invalid.
    #[error(transparent)]
    Cases(#[from] oloproof_core::case::CaseFileError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] oloproof_store::StoreError),
    /// A stored run's evaluator entry no longer builds.
    #[error(transparent)]
    StoredEvaluator(#[from] oloproof_core::run::StoredEvaluatorError),
    /// The system could not be started or refused the handshake.
    #[error("the system could not be started: {}{}", .0.summary(), render_tail(&.0.stderr_tail))]
    System(StageError),
    /// A stored record could not be read back.
    #[error("stored record of {what} is unreadable: {source}")]
    Corrupt {
        /// What was read.
        what: String,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// Writing the Python shim failed.
    #[error("cannot write the Python shim under {path}: {source}")]
    Shim {
        /// The folder.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The request does not make sense for this run (unknown criterion, …).
    #[error("{0}")]
    Usage(String),
    /// A run cannot be resumed.
    #[error("run {run_id} cannot be resumed: {reason}")]
    NotResumable {
        /// The run.
        run_id: String,
        /// Why.
        reason: String,
    },
}

fn render_tail(tail: &[String]) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!("\nworker stderr (last lines):\n  {}", tail.join("\n  "))
    }
}
