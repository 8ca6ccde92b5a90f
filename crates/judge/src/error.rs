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
        "judge `{judge}`: no response from {url} within {timeout_s}s after {attempts} attempt(s); raise `timeout_s` in the judge's settings (a model server on this machine may rather need a lower `max_tokens`, or as many `max_concurrency` as it has parallel slots)"
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
    /// attempt (or the repair request itself failed). `raw` is the last reply as received;
    /// the message names the last failure and, when it differs, the first.
    #[error(
        "judge output is invalid after a repair attempt: {error}{}",
        first_error.as_deref().filter(|f| *f != error.as_str()).map(|f| format!(" (the first reply: {f})")).unwrap_or_default()
    )]
    InvalidOutput {
        /// The last failure: the validation error of the last reply, or why the repair
        /// request failed.
        error: String,
        /// The validation error of the first reply, when the last failure is another one.
        first_error: Option<String>,
        /// The last raw reply.
        raw: String,
        /// Tokens spent on the failed attempts (they are billed all the same).
        usage: Usage,
        /// HTTP requests made, the repair included.
        attempts: u32,
    },
    /// The reply was cut off at `max_tokens`, and again on the one retry with a larger limit.
    /// A cut-off reply is never sent back to the model (that only makes the prompt longer).
    #[error(
        "judge `{judge}`: the reply was cut off at max_tokens ({max_tokens}) and again at {retry_max_tokens} on the retry; raise `max_tokens` in the judge's settings, or use a template with shorter replies"
    )]
    Truncated {
        /// The judge's name.
        judge: String,
        /// The configured `max_tokens`.
        max_tokens: u32,
        /// The larger limit of the retry.
        retry_max_tokens: u32,
        /// The last (cut-off) reply.
        raw: String,
        /// Tokens spent on both replies.
        usage: Usage,
        /// HTTP requests made.
        attempts: u32,
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
            JudgeError::Truncated { .. } => "truncated",
            JudgeError::Unsupported { .. } => "unsupported",
        }
    }

    /// HTTP requests made before the call gave up (0 when nothing was sent: settings, a
    /// missing key, an unsupported operation; 1 for a malformed response).
    pub fn attempts(&self) -> u32 {
        match self {
            JudgeError::Http { attempts, .. }
            | JudgeError::Transport { attempts, .. }
            | JudgeError::Timeout { attempts, .. }
            | JudgeError::InvalidOutput { attempts, .. }
            | JudgeError::Truncated { attempts, .. } => *attempts,
            JudgeError::Protocol { .. } => 1,
            JudgeError::Settings { .. }
            | JudgeError::MissingApiKey { .. }
            | JudgeError::Unsupported { .. } => 0,
        }
    }

    /// The last reply as received, when the provider answered but the reply was unusable.
    pub fn raw(&self) -> Option<&str> {
        match self {
            JudgeError::InvalidOutput { raw, .. } | JudgeError::Truncated { raw, .. } => Some(raw),
            _ => None,
        }
    }

    /// Tokens billed for the failed call (replies that were received but unusable).
    pub fn usage(&self) -> Usage {
        match self {
            JudgeError::InvalidOutput { usage, .. } | JudgeError::Truncated { usage, .. } => *usage,
            _ => Usage::default(),
        }
    }
}

/// Why a judge's reply was rejected: it is not JSON, it does not match the template's schema,
/// or its ids or chunk numbers do not match the request. The message names the failing
/// location (`$.verdicts[2].verdict`); it is what the one repair attempt shows the judge, and
/// what [`JudgeError::InvalidOutput`] reports when the repair fails too.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ReplyError {
    message: String,
}

impl ReplyError {
    /// A rejection with this message.
    pub fn new(message: impl Into<String>) -> Self {
        ReplyError {
            message: message.into(),
        }
    }

    /// What is wrong with the reply.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// A judge's settings that cannot work, found before any call is made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// A value serde cannot check is out of range, empty, or not for this provider.
    #[error("{0}")]
    Invalid(String),
    /// `path` uses `${VAR}` and the variable is unset or empty.
    #[error("`path` uses the environment variable `{0}`, which is not set")]
    UnsetVariable(String),
    /// `path` opens a `${` it never closes (the whole `path` is shown).
    #[error("`path`: unclosed `${{` in `{0}`")]
    UnclosedVariable(String),
    /// An `hf://` model path that is malformed, of the wrong form for `kind`, or that cannot
    /// be resolved to the Hugging Face cache (the message of `oloproof_local::hub`).
    #[error("{0}")]
    Hub(String),
    /// `provider: local` in a build without local-model support.
    #[error("{}", crate::local::WITHOUT_LOCAL_MODELS)]
    WithoutLocalModels,
}

/// Why a probability-weighted (G-Eval) score cannot be computed from a reply's
/// log-probabilities; the parsed score is reported instead, with this as the `fallback`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WeightedScoreError {
    /// The provider sent no log-probabilities.
    #[error("the provider returned no log-probabilities")]
    NoLogprobs,
    /// `logprobs.content` is not an array of tokens.
    #[error("the log-probabilities are not a token list")]
    NotATokenList,
    /// The reply's tokens never spell `"score"`.
    #[error("no `\"score\"` in the tokens")]
    NoScoreKey,
    /// Nothing follows `"score"`.
    #[error("no value after `\"score\"`")]
    NoScoreValue,
    /// No token covers the score's first character.
    #[error("no token at the score")]
    NoScoreToken,
    /// The score token lists no alternatives.
    #[error("the score token has no `top_logprobs`")]
    NoTopLogprobs,
    /// None of the alternatives is a score 1 to 5 with a finite probability.
    #[error("no score 1-5 among the score token's alternatives")]
    NoScoreAlternative,
}
