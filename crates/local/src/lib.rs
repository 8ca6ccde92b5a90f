//! Local models for Oloproof, run in-process on the CPU with candle: a model is a path on disk,
//! or an `hf://ORG/NAME` path that [`hub`] resolves in (downloading into) the Hugging Face cache.
//!
//! * [`SentenceEmbedder`] — any BERT-family sentence embedder (BERT, RoBERTa, XLM-RoBERTa,
//!   CamemBERT) in the Hugging Face / sentence-transformers layout (all-MiniLM-L6-v2 and the
//!   like), reproducing
//!   sentence-transformers' vectors: the model's max length, mean / CLS / max pooling, L2
//!   normalisation; batches run packed, without padding, through a BERT encoder with fused
//!   attention, GELU and layer-norm passes between candle's matrix products.
//! * [`PairClassifier`] — a BERT, RoBERTa (XLM-RoBERTa, CamemBERT) or DeBERTa-v2/v3
//!   sequence-pair classifier (a cross-encoder or an NLI model) in safetensors, or any ONNX
//!   export run by ONNX Runtime (feature `onnx`, the library loaded from `ORT_DYLIB_PATH`),
//!   with the entailment label
//!   from `config.json`'s `id2label` or the options, and long premises scored as the maximum
//!   over overlapping windows.
//! * [`SequenceClassifier`] — the same networks fed one text (toxicity, PII, refusal or
//!   sentiment classifiers): each label's probability, softmax or sigmoid as `transformers`'
//!   `text-classification` pipeline chooses from `config.json`'s `problem_type`, long texts
//!   scored window by window.
//! * [`ChatModel`] — a GGUF llama-family chat model through candle's quantized llama, with
//!   the chat template read from the GGUF, greedy decoding.
//!
//! Every model runs its forward passes in its own thread pool (`threads`, default all cores).
//! Errors ([`LocalError`]) name the file and what was expected. The crate reads model files
//! (and, for `hf://` paths with the `hub` feature, the network); it knows nothing of judges,
//! caches or runs, which are `oloproof-judge`'s.
//!
//! ```
//! use std::path::Path;
//! use oloproof_local::{ChatTemplate, EmbedderOptions, LocalError, SentenceEmbedder};
//!
//! // A missing folder is reported with what it should hold.
//! let err = SentenceEmbedder::load(Path::new("models/none"), &EmbedderOptions::default())
//!     .unwrap_err();
//! assert!(matches!(err, LocalError::MissingPath { .. }));
//! assert!(err.to_string().contains("tokenizer.json"), "{err}");
//!
//! // SmolLM2's GGUF carries a ChatML template.
//! let t = ChatTemplate::detect("{% for m in messages %}<|im_start|>{{ m.role }}…").unwrap();
//! assert_eq!(
//!     t.render(&[("user", "Hi")]),
//!     "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
//! );
//! ```

#![warn(missing_docs)]

mod bert;
mod classify;
mod deberta;
mod embed;
mod encoder;
mod error;
mod files;
mod generate;
pub mod hub;
#[cfg(feature = "onnx")]
mod onnx;
mod sequence;
pub mod testing;

pub use classify::{ClassifierOptions, PairClassifier, PairScore, DEFAULT_WINDOW_OVERLAP};
pub use embed::{EmbedderOptions, Pooling, SentenceEmbedder, DEFAULT_BATCH_SIZE};
pub use error::{LocalError, Result};
pub use generate::{ChatModel, ChatTemplate, GenerateOptions, Generation};
#[cfg(feature = "onnx")]
pub use onnx::OnnxClassifierRaw;
pub use sequence::{Activation, SequenceClassifier, SequenceOptions, TextScores};

/// sha256 of a file (hex), streamed: used to check a model file against a known digest.
pub fn sha256_file(path: &std::path::Path) -> Result<String> {
    files::sha256_file(path)
}
