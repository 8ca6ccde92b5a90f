//! Context assembly: what `generate` receives.
//!
//! The rule, exactly as the guide states it: take the first `top_k` candidates in the system's
//! order (never re-ranked); then walk them in order and keep a passage when its token count
//! (from the system's `count_tokens`, never estimated) fits the remaining `token_budget`,
//! dropping it otherwise. Every candidate keeps its original 1-based position, and the
//! assembly records why each dropped candidate was dropped.

use serde::{Deserialize, Serialize};

use crate::passage::Passage;

/// A passage handed to `generate`, with its position in the retrieval.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ContextPassage {
    /// 1-based position in the system's candidate order; `None` for a passage that was not
    /// retrieved (a gold passage substituted by `diagnose`).
    pub position: Option<usize>,
    /// Token count from the system, when a budget applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<usize>,
    /// The passage.
    #[serde(flatten)]
    pub passage: Passage,
}

/// Why a candidate is not in the context.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// Ranked below `top_k`.
    BelowTopK,
    /// Within `top_k`, but its tokens exceeded the remaining budget.
    TokenBudget,
}

/// A candidate left out of the context.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DroppedPassage {
    /// 1-based position in the system's candidate order.
    pub position: usize,
    /// Document id.
    pub doc_id: String,
    /// Chunk id, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_id: Option<String>,
    /// Why it was left out.
    pub reason: DropReason,
    /// Its token count, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<usize>,
}

/// The assembled context.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Context {
    /// Passages given to `generate`, in order.
    pub passages: Vec<ContextPassage>,
    /// Candidates left out, in position order.
    pub dropped: Vec<DroppedPassage>,
    /// Whether the token budget removed any passage within `top_k`.
    pub truncated: bool,
    /// Tokens used, when a budget applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_used: Option<usize>,
}

/// The candidates that a budget would have to count: the first `top_k`.
pub fn within_top_k(candidates: &[Passage], top_k: usize) -> &[Passage] {
    &candidates[..candidates.len().min(top_k)]
}

/// The context made of gold passages only (the `gold-context` intervention): no position, no
/// token budget.
pub fn gold(passages: &[crate::case::GoldPassage]) -> Context {
    Context {
        passages: passages
            .iter()
            .map(|g| ContextPassage {
                position: None,
                tokens: None,
                passage: Passage {
                    doc_id: g.doc_id.clone(),
                    chunk_id: g.chunk_id.clone(),
                    score: None,
                    text: Some(g.text.clone()),
                    metadata: None,
                },
            })
            .collect(),
        dropped: Vec::new(),
        truncated: false,
        tokens_used: None,
    }
}

/// Where the gold passages go among distractors (the lost-in-the-middle harness).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum GoldSlot {
    /// Before every distractor.
    First,
    /// After the first half of the distractors (`⌊d/2⌋` of them).
    Middle,
    /// After every distractor.
    Last,
}

impl GoldSlot {
    /// All slots, in order.
    pub const ALL: [GoldSlot; 3] = [GoldSlot::First, GoldSlot::Middle, GoldSlot::Last];

    /// `first`, `middle` or `last`.
    pub fn name(self) -> &'static str {
        match self {
            GoldSlot::First => "first",
            GoldSlot::Middle => "middle",
            GoldSlot::Last => "last",
        }
    }
}

/// The gold passages placed at `slot` among `distractors` (in their order), without positions
/// or a token budget: the context of the lost-in-the-middle harness.
pub fn gold_among(
    gold_passages: &[crate::case::GoldPassage],
    distractors: &[Passage],
    slot: GoldSlot,
) -> Context {
    let gold_context = gold(gold_passages).passages;
    let others: Vec<ContextPassage> = distractors
        .iter()
        .map(|p| ContextPassage {
            position: None,
            tokens: None,
            passage: p.clone(),
        })
        .collect();
    let at = match slot {
        GoldSlot::First => 0,
        GoldSlot::Middle => others.len() / 2,
        GoldSlot::Last => others.len(),
    };
    let mut passages = others;
    for (i, g) in gold_context.into_iter().enumerate() {
        passages.insert(at + i, g);
    }
    Context {
        passages,
        dropped: Vec::new(),
        truncated: false,
        tokens_used: None,
    }
}

/// Assembles the context from `candidates`.
///
/// `budget` is `Some((token_budget, token_counts))` where `token_counts[i]` counts
/// `within_top_k(candidates, top_k)[i]`; `None` means no budget.
///
/// # Panics
/// If `token_counts` is shorter than the candidates within `top_k` (a connector bug).
pub fn assemble(
    candidates: &[Passage],
    top_k: usize,
    budget: Option<(usize, &[usize])>,
) -> Context {
    let mut passages = Vec::new();
    let mut dropped = Vec::new();
    let mut remaining = budget.map(|(b, _)| b);
    let mut truncated = false;
    for (i, p) in candidates.iter().enumerate() {
        let position = i + 1;
        if i >= top_k {
            dropped.push(DroppedPassage {
                position,
                doc_id: p.doc_id.clone(),
                chunk_id: p.chunk_id.clone(),
                reason: DropReason::BelowTopK,
                tokens: None,
            });
            continue;
        }
        let tokens = budget.map(|(_, counts)| counts[i]);
        match (remaining, tokens) {
            (Some(left), Some(t)) if t > left => {
                truncated = true;
                dropped.push(DroppedPassage {
                    position,
                    doc_id: p.doc_id.clone(),
                    chunk_id: p.chunk_id.clone(),
                    reason: DropReason::TokenBudget,
                    tokens,
                });
            }
            _ => {
                if let (Some(left), Some(t)) = (remaining.as_mut(), tokens) {
                    *left -= t;
                }
                passages.push(ContextPassage {
                    position: Some(position),
                    tokens,
                    passage: p.clone(),
                });
            }
        }
    }
    let tokens_used = budget.map(|(b, _)| b - remaining.unwrap_or(b));
    Context {
        passages,
        dropped,
        truncated,
        tokens_used,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(id: &str) -> Passage {
        Passage {
            doc_id: id.into(),
            chunk_id: None,
            score: None,
            text: Some(id.into()),
            metadata: None,
        }
    }

    #[test]
    fn gold_slots() {
        let g = [crate::case::GoldPassage {
            doc_id: "g".into(),
            chunk_id: None,
            text: "gold".into(),
            metadata: None,
        }];
        let d = [p("a"), p("b"), p("c"), p("d")];
        let ids = |c: Context| {
            c.passages
                .iter()
                .map(|x| x.passage.doc_id.clone())
                .collect::<Vec<_>>()
                .join(",")
        };
        assert_eq!(ids(gold_among(&g, &d, GoldSlot::First)), "g,a,b,c,d");
        assert_eq!(ids(gold_among(&g, &d, GoldSlot::Middle)), "a,b,g,c,d");
        assert_eq!(ids(gold_among(&g, &d, GoldSlot::Last)), "a,b,c,d,g");
        assert_eq!(ids(gold_among(&g, &[], GoldSlot::Middle)), "g");
    }

    #[test]
    fn keeps_top_k_in_system_order_without_budget() {
        let c = assemble(&[p("a"), p("b"), p("c")], 2, None);
        let ids: Vec<_> = c
            .passages
            .iter()
            .map(|x| (x.passage.doc_id.as_str(), x.position.unwrap_or(0)))
            .collect();
        assert_eq!(ids, [("a", 1), ("b", 2)]);
        assert_eq!(c.dropped[0].reason, DropReason::BelowTopK);
        assert!(!c.truncated);
        assert_eq!(c.tokens_used, None);
    }

    #[test]
    fn drops_what_does_not_fit_and_keeps_later_passages_that_do() {
        let c = assemble(
            &[p("a"), p("b"), p("c"), p("d")],
            3,
            Some((40, &[30, 20, 10])),
        );
        let kept: Vec<_> = c.passages.iter().filter_map(|x| x.position).collect();
        assert_eq!(kept, [1, 3]);
        assert_eq!(c.dropped[0].position, 2);
        assert_eq!(c.dropped[0].reason, DropReason::TokenBudget);
        assert_eq!(c.dropped[0].tokens, Some(20));
        assert_eq!(c.dropped[1].reason, DropReason::BelowTopK);
        assert!(c.truncated);
        assert_eq!(c.tokens_used, Some(40));
    }

    #[test]
    fn exact_fit_is_kept_and_oversized_first_passage_is_dropped() {
        let c = assemble(&[p("a"), p("b")], 2, Some((10, &[10, 1])));
        assert_eq!(c.passages.len(), 1);
        assert!(c.truncated);
        let c = assemble(&[p("a"), p("b")], 2, Some((10, &[11, 10])));
        assert_eq!(c.passages[0].position, Some(2));
        let c = assemble(&[], 2, Some((10, &[])));
        assert!(c.passages.is_empty() && !c.truncated);
    }
}
