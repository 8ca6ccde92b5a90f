//! Offline claim support, a heuristic: is each claim of an answer backed by some sentence of
//! its context, judged without a language model?
//!
//! The answer is split into claims with [`split_sentences`](super::sentences::split_sentences)
//! (numbers such as `3.5` and `1,000`, negations and abbreviations such as `e.g.`, `Dr.`,
//! `U.S.` stay inside their sentence), and citation markers such as `[2]` are removed.
//! Questions and pieces of fewer than three words ("Yes.", "No.", "Sure!") state nothing that
//! could be checked, and are not claims. A claim
//! is **supported** when both hold:
//!
//! 1. its best similarity to a context sentence — a cosine of sentence embeddings, or an
//!    entailment probability — is at least the threshold; and
//! 2. every number and named entity of the claim appears in the context (seed 000, "contrôle
//!    d'ancrage des entités": a number or name absent from the context makes the claim
//!    unsupported), checked with [`grounding`](super::context::grounding).
//!
//! The similarities are computed by the caller (the model lives outside this crate); this
//! module splits, checks and records the evidence. It is a heuristic: it catches invented
//! numbers and names and answers about something else, not a subtle contradiction phrased
//! with the context's own words (a negation flipped keeps a high cosine).
//!
//! ```
//! use oloproof_metrics::rag::claims::{check_claims, split_claims};
//!
//! let claims = split_claims("Refunds take 14 days [1]. Dr. Lee approves them in 2 days.");
//! assert_eq!(claims, vec!["Refunds take 14 days.", "Dr. Lee approves them in 2 days."]);
//! let sentences = vec!["Refunds are paid within 14 days.".to_string()];
//! // Similarities from some embedding model: claims × sentences.
//! let sims = vec![vec![0.9], vec![0.7]];
//! let s = check_claims(&claims, &sentences, &sentences.join("\n"), &sims, 0.6);
//! assert!(s.claims[0].supported);
//! assert!(!s.claims[1].supported); // "Dr", "Lee" and "2" are not in the context
//! assert_eq!(s.claims[1].ungrounded, vec!["Dr", "Lee", "2"]);
//! assert_eq!(s.supported_fraction(), Some(0.5));
//! assert_eq!(s.all_supported(), Some(false));
//! ```

use super::context::{grounding, Entity};
use super::sentences::split_sentences;

/// The evidence for one claim.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimCheck {
    /// The claim text.
    pub claim: String,
    /// Index of the most similar context sentence (`None` without context sentences).
    pub best_sentence: Option<usize>,
    /// Its similarity (`None` without context sentences).
    pub similarity: Option<f64>,
    /// Numbers and names of the claim found in the context.
    pub grounded: Vec<String>,
    /// Numbers and names of the claim absent from the context.
    pub ungrounded: Vec<String>,
    /// Similarity at or above the threshold and nothing ungrounded.
    pub supported: bool,
}

/// Claim support of one answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClaimSupport {
    /// One check per claim, in answer order.
    pub claims: Vec<ClaimCheck>,
}

impl ClaimSupport {
    /// Supported claims over claims; `None` when the answer has no claim.
    pub fn supported_fraction(&self) -> Option<f64> {
        let n = self.claims.len();
        (n > 0).then(|| self.claims.iter().filter(|c| c.supported).count() as f64 / n as f64)
    }

    /// Whether every claim is supported; `None` when the answer has no claim.
    pub fn all_supported(&self) -> Option<bool> {
        (!self.claims.is_empty()).then(|| self.claims.iter().all(|c| c.supported))
    }
}

/// Removes citation markers (`[1]`, `[2, 3]`, `[doc-7]`) and the space before them.
fn strip_citations(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find(']') else {
            break;
        };
        let inner = &rest[open + 1..open + close];
        let is_marker = !inner.is_empty()
            && inner.len() <= 24
            && inner
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, ',' | ' ' | '-' | '_' | ':' | '#'));
        if is_marker {
            out.push_str(rest[..open].trim_end());
        } else {
            out.push_str(&rest[..open + close + 1]);
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    out
}

/// Words of a claim needed for it to state something checkable.
pub const MIN_CLAIM_WORDS: usize = 3;

/// The claims of `answer`: its declarative sentences without citation markers; questions and
/// sentences of fewer than [`MIN_CLAIM_WORDS`] words are dropped.
pub fn split_claims(answer: &str) -> Vec<String> {
    split_sentences(answer)
        .into_iter()
        .map(|s| strip_citations(&s).trim().to_string())
        .filter(|s| {
            let words = s
                .split_whitespace()
                .filter(|w| w.chars().any(char::is_alphanumeric))
                .count();
            words >= MIN_CLAIM_WORDS && !s.ends_with('?')
        })
        .collect()
}

/// The sentences of every passage, in order.
pub fn context_sentences<S: AsRef<str>>(passages: &[S]) -> Vec<String> {
    passages
        .iter()
        .flat_map(|p| split_sentences(p.as_ref()))
        .map(|s| strip_citations(&s).trim().to_string())
        .filter(|s| s.chars().any(char::is_alphanumeric))
        .collect()
}

pub use crate::ingest::chunking::cosine;

/// Checks each claim against the context: `similarity[i][j]` is claim `i`'s similarity to
/// `sentences[j]`, `context` the whole context text (for the entity check).
pub fn check_claims(
    claims: &[String],
    sentences: &[String],
    context: &str,
    similarity: &[Vec<f64>],
    threshold: f64,
) -> ClaimSupport {
    let claims = claims
        .iter()
        .enumerate()
        .map(|(i, claim)| {
            let best = similarity.get(i).and_then(|row| {
                row.iter()
                    .take(sentences.len())
                    .copied()
                    .enumerate()
                    .filter(|(_, s)| s.is_finite())
                    .max_by(|a, b| a.1.total_cmp(&b.1))
            });
            let g = grounding(claim, context);
            let text = |e: &Vec<Entity>| e.iter().map(Entity::text).collect::<Vec<_>>();
            let (grounded, ungrounded) = (text(&g.grounded), text(&g.ungrounded));
            let supported = best.is_some_and(|(_, s)| s >= threshold) && ungrounded.is_empty();
            ClaimCheck {
                claim: claim.clone(),
                best_sentence: best.map(|(j, _)| j),
                similarity: best.map(|(_, s)| s),
                grounded,
                ungrounded,
                supported,
            }
        })
        .collect();
    ClaimSupport { claims }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_keep_numbers_negations_and_abbreviations() {
        let claims = split_claims(
            "Shipping to the U.S. costs $1,000.50 [2]. It does not include duties, e.g. VAT. \
             Dr. Smith said 3.5% is the fee! [3] Really? Yes.",
        );
        assert_eq!(
            claims,
            vec![
                "Shipping to the U.S. costs $1,000.50.",
                "It does not include duties, e.g. VAT.",
                "Dr. Smith said 3.5% is the fee!",
            ]
        );
        assert!(split_claims("").is_empty());
        assert!(split_claims(" [1] ... ").is_empty());
        // Brackets that are not markers stay.
        assert_eq!(
            split_claims("The fee [see the table below, which lists every fee] applies."),
            vec!["The fee [see the table below, which lists every fee] applies."]
        );
    }

    #[test]
    fn a_claim_needs_similarity_and_grounded_entities() {
        let sentences = context_sentences(&[
            "Refunds are paid within 14 days. Premium members get free returns.",
            "Support is open on weekdays [4].",
        ]);
        assert_eq!(sentences.len(), 3);
        assert_eq!(sentences[2], "Support is open on weekdays.");
        let context = "Refunds are paid within 14 days. Premium members get free returns.\nSupport is open on weekdays.";
        let claims = vec![
            "Refunds take 14 days.".to_string(),
            "Refunds take 30 days.".to_string(),
            "Premium members get free returns.".to_string(),
            "The office is in Paris.".to_string(),
        ];
        let sims = vec![
            vec![0.8, 0.1, 0.2],
            vec![0.79, 0.1, 0.2],
            vec![0.1, 0.99, 0.1],
            vec![0.2, 0.1, 0.3],
        ];
        let s = check_claims(&claims, &sentences, context, &sims, 0.6);
        let supported: Vec<bool> = s.claims.iter().map(|c| c.supported).collect();
        assert_eq!(supported, vec![true, false, true, false]);
        assert_eq!(s.claims[0].best_sentence, Some(0));
        assert_eq!(s.claims[1].ungrounded, vec!["30"]);
        assert_eq!(s.claims[2].grounded, vec!["Premium"]);
        assert_eq!(s.claims[3].similarity, Some(0.3));
        assert_eq!(s.supported_fraction(), Some(0.5));
        // Without context sentences nothing is supported.
        let none = check_claims(&claims[..1], &[], "", &[vec![]], 0.0);
        assert!(!none.claims[0].supported && none.claims[0].similarity.is_none());
        assert_eq!(ClaimSupport::default().all_supported(), None);
    }

    #[test]
    fn cosine_of_vectors() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-12);
        assert!(cosine(&[1.0, 0.0], &[0.0, 2.0]).abs() < 1e-12);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
    }
}
