//! Ragas' deterministic (non-LLM) metrics, computed as `ragas==0.4.3` computes them.
//!
//! Each function mirrors one Ragas metric class (its `_single_turn_ascore`) and the library it
//! calls, so the values are the same to the last bit (checked against the real packages in
//! `tests/ragas_reference.rs`):
//!
//! - [`distance`]: `NonLLMStringSimilarity` — `1 − normalized_distance` of rapidfuzz's
//!   Levenshtein, Hamming, Jaro and Jaro–Winkler (Unicode scalar values, as rapidfuzz sees a
//!   Python `str`).
//! - [`context`]: `NonLLMContextPrecisionWithReference` and `NonLLMContextRecall` (string
//!   similarity between retrieved and reference contexts, thresholded).
//! - [`bleu`]: `BleuScore` — sacrebleu's `corpus_bleu` (13a tokenizer, exponential smoothing)
//!   on Ragas' `". "` sentence split.
//! - [`rouge`]: `RougeScore` — Google's `rouge_score` (`rouge1` / `rougeL`, precision, recall or
//!   F-measure) with its Porter stemmer ([`porter`], NLTK's default mode).
//! - [`exact_match`] (`ExactMatch`) and [`string_presence`] (`StringPresence`): plain string
//!   equality and containment (no normalisation, unlike SQuAD's [`crate::text::exact_match`]).
//!
//! ```
//! use oloproof_metrics::ragas::{bleu, context, distance::DistanceMeasure, rouge};
//!
//! // Ragas' ExactMatch is byte equality; StringPresence is containment.
//! assert_eq!(oloproof_metrics::ragas::exact_match("Paris", "paris"), 0.0);
//! assert_eq!(oloproof_metrics::ragas::string_presence("Paris", "It is Paris."), 1.0);
//! // Levenshtein: one edit over four characters.
//! assert_eq!(DistanceMeasure::Levenshtein.similarity("cats", "cat"), 0.75);
//! // The first and third retrieved contexts match the reference (similarity 1 and 0.8):
//! // average precision (1/1 + 2/3) / 2.
//! let p = context::precision_with_reference(&["a b c", "zzz", "a b d"], &["a b c"], DistanceMeasure::Levenshtein, 0.5).unwrap();
//! assert!((p - (1.0 + 2.0 / 3.0) / 2.0).abs() < 1e-9);
//! // ROUGE-1 F-measure with stemming: "cats" and "cat" are one token.
//! let r = rouge::rouge_score("the cats sat", "the cat sat", rouge::RougeType::Rouge1, rouge::RougeMode::Fmeasure);
//! assert_eq!(r, 1.0);
//! // BLEU needs four-grams: a three-word answer scores 0 without smoothing of the order.
//! assert_eq!(bleu::bleu_score("the cat sat", "the cat sat"), 0.0);
//! ```

pub mod bleu;
pub mod context;
pub mod distance;
pub mod porter;
pub mod rouge;

/// Ragas' `ExactMatch`: `1.0` when `response` is the same string as `reference`, else `0.0`
/// (`float(sample.reference == sample.response)`; case, spaces and punctuation count).
pub fn exact_match(reference: &str, response: &str) -> f64 {
    if reference == response {
        1.0
    } else {
        0.0
    }
}

/// Ragas' `StringPresence` (column `string_present`): `1.0` when `reference` occurs in
/// `response` as a substring (`float(reference in response)`; an empty reference is always
/// present), else `0.0`.
pub fn string_presence(reference: &str, response: &str) -> f64 {
    if response.contains(reference) {
        1.0
    } else {
        0.0
    }
}
