//! Tokenising for BERT-family encoders (the rows `encoder` runs).

use crate::error::{LocalError, Result};

/// One tokenised input: token ids and token type ids (segment ids), special tokens included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Encoded {
    pub ids: Vec<u32>,
    pub type_ids: Vec<u32>,
}

impl Encoded {
    pub fn len(&self) -> usize {
        self.ids.len()
    }
}

/// Tokenises single texts with special tokens, truncated to `max_length` tokens (special tokens
/// included, as Hugging Face's `truncation=True, max_length=…`).
pub(crate) fn encode_singles<S: AsRef<str> + Sync>(
    tokenizer: &tokenizers::Tokenizer,
    texts: &[S],
    max_length: usize,
) -> Result<Vec<Encoded>> {
    let inputs = texts
        .iter()
        .map(|t| tokenizers::EncodeInput::Single(t.as_ref().into()))
        .collect();
    encode(tokenizer, inputs, max_length)
}

/// Tokenises `(first, second)` pairs with special tokens, truncating the longer side first
/// until the pair fits `max_length`.
pub(crate) fn encode_pairs(
    tokenizer: &tokenizers::Tokenizer,
    pairs: &[(String, String)],
    max_length: usize,
) -> Result<Vec<Encoded>> {
    let inputs = pairs
        .iter()
        .map(|(a, b)| tokenizers::EncodeInput::Dual(a.as_str().into(), b.as_str().into()))
        .collect();
    encode(tokenizer, inputs, max_length)
}

/// Tokenises `inputs` with special tokens, longest-first truncation to `max_length`.
fn encode(
    tokenizer: &tokenizers::Tokenizer,
    inputs: Vec<tokenizers::EncodeInput<'_>>,
    max_length: usize,
) -> Result<Vec<Encoded>> {
    let mut tok = tokenizer.clone();
    tok.with_truncation(Some(tokenizers::TruncationParams {
        max_length,
        strategy: tokenizers::TruncationStrategy::LongestFirst,
        stride: 0,
        direction: tokenizers::TruncationDirection::Right,
    }))
    .map_err(LocalError::inference)?;
    let encodings = tok
        .encode_batch(inputs, true)
        .map_err(LocalError::inference)?;
    Ok(encodings
        .into_iter()
        .map(|e| Encoded {
            ids: e.get_ids().to_vec(),
            type_ids: e.get_type_ids().to_vec(),
        })
        .collect())
}
