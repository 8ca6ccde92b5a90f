//! Query-time retrieval changes measured by recall: recall@k of one ranked list, and the union
//! recall of several query rewrites (multi-query retrieval, seed 000 Part 4). Uplift against a
//! baseline is a paired difference of these per-query values; the interval comes from
//! `oloproof_stats::paired_bootstrap_test`.

use std::collections::BTreeSet;

use crate::ranking::kernel;

/// Recall@k: `|gold ∩ top_k(ranked)| / |gold|`, each id counted once — trec_eval's
/// `recall_k` with binary relevance. `None` when `gold` is empty.
///
/// ```
/// use std::collections::BTreeSet;
/// use oloproof_metrics::rag::query::recall_at_k;
///
/// let gold: BTreeSet<String> = ["a".into(), "b".into()].into();
/// let ranked = vec!["x".to_string(), "a".into(), "b".into()];
/// assert_eq!(recall_at_k(&gold, &ranked, 2), Some(0.5));
/// ```
pub fn recall_at_k(gold: &BTreeSet<String>, ranked: &[String], k: usize) -> Option<f64> {
    let found = crate::rag::filters::found_in_top_k(gold, ranked, k);
    kernel::recall(found, gold.len())
}

/// Multi-query union recall: the union of the top-`k` of each rewrite's ranked list, scored
/// against `gold` — `|gold ∩ ⋃_i top_k(ranked_i)| / |gold|` (what LangChain's
/// `MultiQueryRetriever` returns before any reranking, as a set). The union may hold up to
/// `N·k` documents; [`UnionRecall::union_size`] reports it. `None` when `gold` is empty.
pub fn union_recall_at_k(
    gold: &BTreeSet<String>,
    rewrites: &[Vec<String>],
    k: usize,
) -> Option<UnionRecall> {
    let union: BTreeSet<&String> = rewrites.iter().flat_map(|r| r.iter().take(k)).collect();
    let found = union.iter().filter(|d| gold.contains(**d)).count();
    kernel::recall(found, gold.len()).map(|recall| UnionRecall {
        recall,
        union_size: union.len(),
    })
}

/// The result of [`union_recall_at_k`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UnionRecall {
    /// Recall of the union.
    pub recall: f64,
    /// Distinct documents in the union (what the generator would have to read).
    pub union_size: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn recall_counts_each_id_once_and_cuts_at_k() {
        let gold: BTreeSet<String> = ids(&["a", "b"]).into_iter().collect();
        assert_eq!(recall_at_k(&gold, &ids(&["a", "a", "b"]), 2), Some(0.5));
        assert_eq!(recall_at_k(&gold, &ids(&["a", "a", "b"]), 3), Some(1.0));
        assert_eq!(recall_at_k(&BTreeSet::new(), &ids(&["a"]), 3), None);
    }

    #[test]
    fn union_of_rewrites() {
        let gold: BTreeSet<String> = ids(&["a", "b", "c"]).into_iter().collect();
        let r = union_recall_at_k(&gold, &[ids(&["a", "x"]), ids(&["b", "a"])], 2).unwrap();
        assert_eq!(r.recall, 2.0 / 3.0);
        assert_eq!(r.union_size, 3);
        let none = union_recall_at_k(&gold, &[], 2).unwrap();
        assert_eq!(none.recall, 0.0);
    }
}
