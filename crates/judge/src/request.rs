//! The values a judge call takes and returns.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions (OpenAI `system` message; Anthropic top-level `system`).
    System,
    /// The user turn.
    User,
    /// A previous reply of the model (used by the repair attempt).
    Assistant,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// The text.
    pub content: String,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message {
            role: Role::System,
            content: content.into(),
        }
    }
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: content.into(),
        }
    }
    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// One rendered judge prompt: what [`JudgeClient::complete`](crate::JudgeClient::complete)
/// sends. Templates in [`templates`](crate::templates) build these.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeRequest {
    /// The template's id (e.g. `claim_verification`).
    pub template_id: String,
    /// The template's version; bumping it invalidates cached judgments.
    pub template_version: u32,
    /// The rendered messages.
    pub messages: Vec<Message>,
    /// The JSON schema the reply must satisfy (the subset of [`schema`](crate::schema)).
    pub schema: Value,
    /// Which self-consistency repeat this is (0 for a single call).
    pub repeat_index: u32,
    /// The template's reply budget: the `max_tokens` sent when the judge's settings set none,
    /// sized to what a complete reply of this request needs (a single verdict, or so many
    /// tokens per listed item; see [`templates`](crate::templates)). 0 in a request written
    /// without one: the client then sends [`DEFAULT_MAX_TOKENS`](crate::DEFAULT_MAX_TOKENS).
    #[serde(default)]
    pub reply_tokens: u32,
}

/// Tokens billed for a call (summed over the repair attempt when there is one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens (OpenAI `prompt_tokens`, Anthropic `input_tokens`).
    pub input_tokens: u64,
    /// Completion tokens (OpenAI `completion_tokens`, Anthropic `output_tokens`).
    pub output_tokens: u64,
}

impl Usage {
    /// The sum of two usages.
    pub fn plus(self, other: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens + other.input_tokens,
            output_tokens: self.output_tokens + other.output_tokens,
        }
    }
}

/// A validated judgment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeResponse {
    /// The reply exactly as received (for OpenAI the message content; for Anthropic the tool
    /// call's `input` as JSON text, or the text reply in `prompt` mode).
    pub raw: String,
    /// The parsed reply, valid against the request's schema and the caller's check.
    pub parsed: Value,
    /// Tokens billed, including a failed first answer when a repair was needed.
    pub usage: Usage,
    /// Cost from `usage` and the judge's `prices`, when prices are configured.
    pub cost_usd: Option<f64>,
    /// HTTP attempts made (1 when the first request succeeded; retries and the repair count).
    pub attempts: u32,
    /// Whether the reply came from the repair attempt.
    pub repaired: bool,
}
