//! Token estimates for `--dry-run`, before anything is sent.
//!
//! The estimate is deliberately simple and provider-independent: each message counts
//! `ceil(chars / 4) + 4` tokens (about four characters per token for English text with BPE
//! tokenizers, plus the per-message framing of chat formats), and a request adds 3 tokens for
//! the reply primer. Counting is by Unicode scalar values. Expect it within roughly ±25% of the
//! billed `prompt_tokens` for English prose; it is an estimate for budgeting, never for billing.

use crate::request::{JudgeRequest, Message};

/// Framing tokens per message.
pub const PER_MESSAGE_OVERHEAD: u64 = 4;
/// Tokens per request for the reply primer.
pub const PER_REQUEST_OVERHEAD: u64 = 3;

/// Estimated input tokens of a request made of `messages`.
pub fn estimate_tokens(messages: &[Message]) -> u64 {
    PER_REQUEST_OVERHEAD
        + messages
            .iter()
            .map(|m| (m.content.chars().count() as u64).div_ceil(4) + PER_MESSAGE_OVERHEAD)
            .sum::<u64>()
}

/// Estimated input tokens of `request`: its messages plus `ceil(len / 4)` for the schema's
/// JSON text (sent as `response_format`, as a tool, or in the prompt, depending on the mode).
pub fn estimate_request_tokens(request: &JudgeRequest) -> u64 {
    estimate_tokens(&request.messages)
        + (request.schema.to_string().chars().count() as u64).div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chars_over_four_plus_overhead() {
        assert_eq!(estimate_tokens(&[]), 3);
        let m = [Message::system("abcd"), Message::user("abcde")];
        assert_eq!(estimate_tokens(&m), 3 + (1 + 4) + (2 + 4));
    }
}
