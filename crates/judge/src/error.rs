//! The judge's error type.
//!
//! Every final failure of a judge call is one of these values. The engine turns it into a
//! `missing` verdict carrying the message: a failed judgment is never a pass or a fail. No
//! variant ever carries an API key (keys are read from the environment at call time and are
//! only written into the request header).

use crate::request::Usage;

/// What went wrong with a judge call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JudgeError {
    /// The settings cannot work (e.g. an empty model name or a zero concurrency).
    #[error("judge `{judge}`: invalid settings: {message}")]
    Settings {
        /// The judge's name in `judges:`.
        judge: String,
        /// What is wrong.
        message: String,
    },
    /// The environment variable named by `api_key_env` is unset or empty.
    #[error("judge `{judge}`: the environment variable `{env}` (api_key_env) is not set")]
    MissingApiKey {
        /// The judge's name in `judges:`.
        judge: String,
        /// The variable's name (never its value).
        env: String,
    },
    /// The provider answered with an error status, after all retries.
    #[error(
        "judge `{judge}`: {url} answered HTTP {status} after {attempts} attempt(s): {message}"
    )]
    Http {
        /// The judge's name.
        judge: String,
        /// The endpoint.
        url: String,
        /// The last HTTP status.
        status: u16,
        /// The provider's error message (from its error body), or an excerpt of the body.
        message: String,
        /// Attempts made.
        attempts: u32,
    },
    /// The endpoint could not be reached or the response could not be read, after all retries.
    #[error("judge `{judge}`: cannot reach {url} after {attempts} attempt(s): {message}")]
    Transport {
        /// The judge's name.
        judge: String,
        /// The endpoint.
        url: String,
        /// What the transport said.
        message: String,
        /// Attempts made.
        attempts: u32,
    },
    /// No response within `timeout_s`, on every attempt.
    #[error(
        "judge `{judge}`: no response from {url} within {timeout_s}s after {attempts} attempt(s)"
    )]
    Timeout {
        /// The judge's name.
        judge: String,
        /// The endpoint.
        url: String,
        /// The per-request timeout.
        timeout_s: f64,
        /// Attempts made.
        attempts: u32,
    },
    /// The provider's 2xx response did not have the documented shape (no choices, no tool call).
    #[error("judge `{judge}`: unexpected response from {url}: {message}")]
    Protocol {
        /// The judge's name.
        judge: String,
        /// The endpoint.
        url: String,
        /// What was missing or malformed.
        message: String,
    },
    /// The judge's output failed schema or semantic validation, also after the one repair
    /// attempt. `raw` is the last reply as received.
    #[error("judge output is invalid after a repair attempt: {error}")]
    InvalidOutput {
        /// The validation error of the last reply.
        error: String,
        /// The last raw reply.
        raw: String,
        /// Tokens spent on the failed attempts (they are billed all the same).
        usage: Usage,
    },
    /// The operation is not available for this provider (e.g. embeddings with `anthropic`).
    #[error("judge `{judge}`: {message}")]
    Unsupported {
        /// The judge's name.
        judge: String,
        /// What is not supported.
        message: String,
    },
}

impl JudgeError {
    /// A short stable name of the variant, for `missing` reasons and counters.
    pub fn kind(&self) -> &'static str {
        match self {
            JudgeError::Settings { .. } => "settings",
            JudgeError::MissingApiKey { .. } => "missing_api_key",
            JudgeError::Http { .. } => "http",
            JudgeError::Transport { .. } => "transport",
            JudgeError::Timeout { .. } => "timeout",
            JudgeError::Protocol { .. } => "protocol",
            JudgeError::InvalidOutput { .. } => "invalid_output",
            JudgeError::Unsupported { .. } => "unsupported",
        }
    }
}
