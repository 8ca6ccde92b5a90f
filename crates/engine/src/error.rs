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
    /// A record could not be serialised to be stored (it is never stored empty).
    #[error("cannot serialise {what} to store it: {source}")]
    Serialise {
        /// What was being stored.
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

/// Why a Rubrex evaluator cannot decide a case: its verdict is `missing` with this message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RubrexError {
    /// The system's output declares a behaviour that is not one of the known ones.
    #[error(transparent)]
    DeclaredBehavior(#[from] oloproof_core::error::DeclaredBehaviorError),
    /// A passage of the context has a `metadata.status` that is not one of the known ones.
    #[error("passage `{doc_id}`: {source}")]
    EvidenceStatus {
        /// The passage's document id.
        doc_id: String,
        /// What is wrong with its status.
        #[source]
        source: oloproof_core::error::EvidenceStatusError,
    },
    /// The output has neither an answer to classify nor a declared behaviour.
    #[error("the system's output has no `answer` and declares no `behavior`")]
    NoAnswerNorBehavior,
    /// The output has no answer whose claims could be judged.
    #[error("the system's output has no `answer`")]
    NoAnswer,
    /// The evaluator names a judge that `judges:` does not define.
    #[error("no judge named `{0}`")]
    UnknownJudge(String),
    /// The evaluator needs a judge, and this evaluation has none.
    #[error("no judges are configured for this evaluation")]
    NoJudges,
    /// Neither annotations nor a judge can say which claims are supported.
    #[error("the record has no `claims` annotations and the evaluator has no `judge:`")]
    NoSupport,
    /// The judge's call failed.
    #[error("judge `{judge}`: {source}")]
    Judge {
        /// The judge's name.
        judge: String,
        /// Why the call failed.
        #[source]
        source: oloproof_judge::JudgeError,
    },
}

/// Why one planned question of `oloproof generate` could not be drafted: the judge's call
/// failed. Shown as `KIND: message`, the kind being [`JudgeError::kind`](oloproof_judge::JudgeError::kind).
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", .source.kind())]
pub struct DraftError {
    /// The failed call.
    #[source]
    pub source: oloproof_judge::JudgeError,
}
