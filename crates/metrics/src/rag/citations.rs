//! ALCE citation recall and precision (Gao et al. 2023, "Enabling Large Language Models to
//! Generate Text with Citations", `eval.py`'s `compute_autoais`), with the entailment model
//! abstracted as a callback so an NLI classifier, an LLM judge or human labels can decide it.
//!
//! For each sentence `s` of an answer with citations `C` (ALCE's `[n]` markers, 1-based into
//! the documents shown to the model, at most `at_most_citations` of them, 3 by default):
//!
//! * **recall**: `s` scores 1 when the concatenation of its cited documents entails it — a
//!   sentence without citations, or citing a document that does not exist, scores 0;
//!   recall = entailed sentences / sentences.
//! * **precision**: each citation of an entailed sentence counts as relevant unless the sentence
//!   has several citations and that document alone does not entail it while the others
//!   together still do (it was not needed). precision = relevant citations / citations counted,
//!   and 0 when nothing was counted (as ALCE does). Citations of an out-of-range sentence are not
//!   counted; those of a sentence whose joint set fails are counted and all irrelevant.
//!
//! The entailment checks are asked in two rounds, as ALCE does lazily: every sentence's joint
//! set first, then, for entailed sentences with several citations only, each single document
//! and each leave-one-out set. A deterministic oracle gives exactly ALCE's numbers.
//!
//! One deliberate difference: ALCE turns `[0]` into index −1, which Python reads as the last
//! document; here `[0]` is out of range.
//!
//! ```
//! use oloproof_metrics::rag::citations::{citation_quality, parse_cited_sentence};
//!
//! let docs = ["Refunds within 14 days.", "Shipping is free over 50 EUR."];
//! let sentences = vec![
//!     parse_cited_sentence("Refunds are accepted within 14 days [1][2]."),
//!     parse_cited_sentence("Shipping is free over 50 EUR [2]."),
//!     parse_cited_sentence("Support answers by phone."),
//! ];
//! // A toy oracle: the cited documents entail the sentence when one of them states its number.
//! let quality = citation_quality(&sentences, docs.len(), Some(3), |checks| {
//!     Ok::<_, ()>(checks.iter().map(|c| {
//!         let number = if c.sentence == 0 { "14" } else { "50" };
//!         c.documents.iter().any(|&d| docs[d].contains(number))
//!     }).collect())
//! }).unwrap().unwrap();
//! assert_eq!(quality.recall, 2.0 / 3.0);
//! // Of three citations, [2] in the first sentence was not needed.
//! assert_eq!(quality.precision, 2.0 / 3.0);
//! assert_eq!(quality.overcited, 1);
//! ```

/// ALCE's default for `--at_most_citations`.
pub const DEFAULT_AT_MOST_CITATIONS: usize = 3;

/// One sentence of an answer: its text with citation markers removed, and the documents it
/// cites (0-based; `None` for a marker that names no document, such as `[0]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CitedSentence {
    /// The sentence without its citation markers (what the entailment model checks).
    pub text: String,
    /// The cited documents in marker order, duplicates kept (as ALCE keeps them).
    pub citations: Vec<Option<usize>>,
}

/// Splits ALCE's citation markers off a sentence: every `[` followed by digits starts a
/// citation (`[1]`, `[1][3]`, `[1, 3]` cites 1 only, as ALCE's `\[\d+` does); the text is
/// ALCE's `remove_citations` (drops ` [n`, `[n`, ` |` and every `]`), then trimmed.
pub fn parse_cited_sentence(sentence: &str) -> CitedSentence {
    let bytes = sentence.as_bytes();
    let mut citations = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'[' {
            let start = i + 1;
            let mut end = start;
            while end < bytes.len() && bytes[end].is_ascii_digit() {
                end += 1;
            }
            if end > start {
                let n: Option<usize> = sentence[start..end].parse().ok();
                citations.push(n.and_then(|n| n.checked_sub(1)));
                i = end;
                continue;
            }
        }
        i += 1;
    }
    CitedSentence {
        text: remove_citations(sentence).trim().to_string(),
        citations,
    }
}

/// ALCE's `remove_citations`: `re.sub(r"\[\d+", "", re.sub(r" \[\d+", "", s))`, then
/// `.replace(" |", "").replace("]", "")`.
pub fn remove_citations(sentence: &str) -> String {
    let strip = |text: &str, with_space: bool| -> String {
        let bytes = text.as_bytes();
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        let mut last = 0;
        while i < bytes.len() {
            let bracket = if with_space {
                bytes[i] == b' ' && bytes.get(i + 1) == Some(&b'[')
            } else {
                bytes[i] == b'['
            };
            if bracket {
                let digits = i + if with_space { 2 } else { 1 };
                let mut end = digits;
                while end < bytes.len() && bytes[end].is_ascii_digit() {
                    end += 1;
                }
                if end > digits {
                    out.push_str(&text[last..i]);
                    last = end;
                    i = end;
                    continue;
                }
            }
            i += 1;
        }
        out.push_str(&text[last..]);
        out
    };
    strip(&strip(sentence, true), false)
        .replace(" |", "")
        .replace(']', "")
}

/// One entailment question: do these documents, concatenated in this order, entail this
/// sentence?
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntailmentCheck {
    /// Index of the sentence in the slice given to [`citation_quality`].
    pub sentence: usize,
    /// The documents (0-based), in citation order.
    pub documents: Vec<usize>,
    /// What the check is for.
    pub role: CheckRole,
}

/// Why [`citation_quality`] asks an [`EntailmentCheck`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckRole {
    /// The sentence's whole citation set (recall).
    Joint,
    /// One cited document alone (precision, condition A).
    Single,
    /// The citation set without one document (precision, condition B).
    LeaveOneOut,
}

/// What happened to one sentence.
#[derive(Debug, Clone, PartialEq)]
pub struct SentenceOutcome {
    /// The sentence without markers.
    pub text: String,
    /// Its citations after truncation to `at_most_citations` (0-based; `None` out of range).
    pub citations: Vec<Option<usize>>,
    /// Why recall was decided without a check (`no_citations`, `citation_out_of_range`).
    pub unchecked: Option<&'static str>,
    /// Whether the joint set entails the sentence (its recall).
    pub entailed: bool,
    /// Citations of this sentence counted in precision's numerator.
    pub relevant_citations: usize,
    /// Citations of this sentence counted in precision's denominator.
    pub counted_citations: usize,
    /// Citations judged unnecessary (not entailing alone, the rest entailing without them).
    pub overcited: usize,
}

/// ALCE citation quality of one answer.
#[derive(Debug, Clone, PartialEq)]
pub struct CitationQuality {
    /// Entailed sentences / sentences.
    pub recall: f64,
    /// Relevant citations / counted citations (0 when none was counted).
    pub precision: f64,
    /// Sentences with more than one citation.
    pub multi_cited: usize,
    /// Of those, the ones their joint set entails.
    pub multi_cited_supported: usize,
    /// Unnecessary citations among the supported multi-cited sentences.
    pub overcited: usize,
    /// Citations counted in precision's denominator.
    pub citations: usize,
    /// One outcome per sentence.
    pub sentences: Vec<SentenceOutcome>,
}

/// ALCE citation recall and precision of one answer's `sentences` over `documents` documents.
///
/// `entails` answers a batch of [`EntailmentCheck`]s with one flag each, in order; it is
/// called at most twice (joint sets, then precision's single and leave-one-out sets). Returns
/// `None` when there are no sentences (ALCE skips such items in its means). An error from
/// `entails` is returned as is.
pub fn citation_quality<E>(
    sentences: &[CitedSentence],
    documents: usize,
    at_most_citations: Option<usize>,
    mut entails: impl FnMut(&[EntailmentCheck]) -> Result<Vec<bool>, E>,
) -> Result<Option<CitationQuality>, E> {
    if sentences.is_empty() {
        return Ok(None);
    }
    let mut outcomes: Vec<SentenceOutcome> = sentences
        .iter()
        .map(|s| {
            let mut citations = s.citations.clone();
            let unchecked = if citations.is_empty() {
                Some("no_citations")
            } else if citations.iter().any(|c| c.is_none_or(|d| d >= documents)) {
                Some("citation_out_of_range")
            } else {
                if let Some(k) = at_most_citations {
                    citations.truncate(k);
                }
                None
            };
            let counted = if unchecked.is_none() {
                citations.len()
            } else {
                0
            };
            SentenceOutcome {
                text: s.text.clone(),
                citations,
                unchecked,
                entailed: false,
                relevant_citations: 0,
                counted_citations: counted,
                overcited: 0,
            }
        })
        .collect();

    let joint: Vec<EntailmentCheck> = outcomes
        .iter()
        .enumerate()
        .filter(|(_, o)| o.unchecked.is_none())
        .map(|(i, o)| EntailmentCheck {
            sentence: i,
            documents: o.citations.iter().flatten().copied().collect(),
            role: CheckRole::Joint,
        })
        .collect();
    let flags = if joint.is_empty() {
        Vec::new()
    } else {
        entails(&joint)?
    };
    for (check, &flag) in joint.iter().zip(&flags) {
        outcomes[check.sentence].entailed = flag;
    }

    // Precision, round two: for each citation of a supported multi-cited sentence, the
    // document alone and the set without it (one occurrence removed, as `list.remove`).
    let mut second = Vec::new();
    for (i, o) in outcomes.iter().enumerate() {
        if o.entailed && o.citations.len() > 1 {
            let docs: Vec<usize> = o.citations.iter().flatten().copied().collect();
            for (j, &d) in docs.iter().enumerate() {
                second.push(EntailmentCheck {
                    sentence: i,
                    documents: vec![d],
                    role: CheckRole::Single,
                });
                let mut rest = docs.clone();
                rest.remove(j);
                second.push(EntailmentCheck {
                    sentence: i,
                    documents: rest,
                    role: CheckRole::LeaveOneOut,
                });
            }
        }
    }
    let second_flags = if second.is_empty() {
        Vec::new()
    } else {
        entails(&second)?
    };
    let mut multi_cited = 0;
    let mut multi_cited_supported = 0;
    let mut pairs = second.iter().zip(&second_flags);
    for o in outcomes.iter_mut() {
        if o.citations.len() > 1 {
            multi_cited += 1;
        }
        if o.entailed && o.citations.len() > 1 {
            multi_cited_supported += 1;
            for _ in 0..o.citations.len() {
                let alone = pairs.next().is_some_and(|(_, &f)| f);
                let without = pairs.next().is_some_and(|(_, &f)| f);
                if alone || !without {
                    o.relevant_citations += 1;
                } else {
                    o.overcited += 1;
                }
            }
        } else {
            o.relevant_citations = usize::from(o.entailed);
        }
    }
    let n = outcomes.len() as f64;
    let entailed = outcomes.iter().filter(|o| o.entailed).count() as f64;
    let relevant: usize = outcomes.iter().map(|o| o.relevant_citations).sum();
    let counted: usize = outcomes.iter().map(|o| o.counted_citations).sum();
    Ok(Some(CitationQuality {
        recall: entailed / n,
        precision: if counted > 0 {
            relevant as f64 / counted as f64
        } else {
            0.0
        },
        multi_cited,
        multi_cited_supported,
        overcited: outcomes.iter().map(|o| o.overcited).sum(),
        citations: counted,
        sentences: outcomes,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oracle(
        truth: impl Fn(usize, &[usize]) -> bool,
    ) -> impl FnMut(&[EntailmentCheck]) -> Result<Vec<bool>, ()> {
        move |checks| {
            Ok(checks
                .iter()
                .map(|c| truth(c.sentence, &c.documents))
                .collect())
        }
    }

    #[test]
    fn markers_are_parsed_and_removed_as_alce_does() {
        let s = parse_cited_sentence("Refunds take 14 days [1][3].");
        assert_eq!(s.text, "Refunds take 14 days.");
        assert_eq!(s.citations, vec![Some(0), Some(2)]);
        // `[1, 2]` cites 1 only (ALCE's `\[\d+`); the `, 2` stays in the text.
        let s = parse_cited_sentence("A claim [1, 2].");
        assert_eq!(s.citations, vec![Some(0)]);
        assert_eq!(s.text, "A claim, 2.");
        assert_eq!(parse_cited_sentence("Zero [0].").citations, vec![None]);
        assert_eq!(remove_citations("a [12] b | c [x]"), "a b c [x");
        assert_eq!(remove_citations("x |y"), "xy");
    }

    #[test]
    fn sentences_without_citations_or_out_of_range_score_zero() {
        let sentences = vec![
            parse_cited_sentence("No citation here."),
            parse_cited_sentence("Out of range [5]."),
            parse_cited_sentence("Fine [1]."),
        ];
        let mut calls = 0;
        let q = citation_quality(&sentences, 2, Some(3), |checks| {
            calls += 1;
            assert_eq!(checks.len(), 1, "only the in-range sentence is checked");
            Ok::<_, ()>(vec![true])
        })
        .unwrap()
        .unwrap();
        assert_eq!(calls, 1);
        assert_eq!(q.recall, 1.0 / 3.0);
        // Only the in-range sentence's citation is counted.
        assert_eq!((q.citations, q.precision), (1, 1.0));
        assert_eq!(q.sentences[0].unchecked, Some("no_citations"));
        assert_eq!(q.sentences[1].unchecked, Some("citation_out_of_range"));
    }

    #[test]
    fn unsupported_joint_set_counts_its_citations_as_irrelevant() {
        let sentences = vec![parse_cited_sentence("Claim [1][2].")];
        let q = citation_quality(&sentences, 2, None, oracle(|_, _| false))
            .unwrap()
            .unwrap();
        assert_eq!((q.recall, q.precision, q.citations), (0.0, 0.0, 2));
        assert_eq!(q.multi_cited, 1);
        assert_eq!(q.multi_cited_supported, 0);
    }

    #[test]
    fn a_needed_pair_keeps_both_citations() {
        // Neither document alone entails; together they do: both are relevant.
        let sentences = vec![parse_cited_sentence("Combined claim [1][2].")];
        let q = citation_quality(&sentences, 2, None, oracle(|_, d| d.len() == 2))
            .unwrap()
            .unwrap();
        assert_eq!((q.recall, q.precision, q.overcited), (1.0, 1.0, 0));
    }

    #[test]
    fn at_most_citations_truncates_before_counting() {
        let sentences = vec![parse_cited_sentence("Claim [1][2][3][4].")];
        let mut seen = Vec::new();
        let q = citation_quality(&sentences, 4, Some(3), |checks| {
            seen.extend(checks.iter().cloned());
            Ok::<_, ()>(checks.iter().map(|c| c.documents.contains(&0)).collect())
        })
        .unwrap()
        .unwrap();
        assert_eq!(seen[0].documents, vec![0, 1, 2]);
        assert_eq!(q.citations, 3);
        // Document 1 entails alone; 2 and 3 are unnecessary.
        assert_eq!((q.precision, q.overcited), (1.0 / 3.0, 2));
    }

    #[test]
    fn no_sentences_is_undefined_and_errors_propagate() {
        assert_eq!(
            citation_quality(&[], 1, None, oracle(|_, _| true)),
            Ok(None)
        );
        let sentences = vec![parse_cited_sentence("Claim [1].")];
        let r = citation_quality(&sentences, 1, None, |_| Err::<Vec<bool>, _>("judge down"));
        assert_eq!(r, Err("judge down"));
    }

    #[test]
    fn duplicate_citations_are_kept_as_alce_keeps_them() {
        let sentences = vec![parse_cited_sentence("Claim [1][1].")];
        let q = citation_quality(&sentences, 1, None, oracle(|_, _| true))
            .unwrap()
            .unwrap();
        assert_eq!((q.citations, q.precision), (2, 1.0));
    }
}
