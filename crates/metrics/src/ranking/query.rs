//! Per-query ranking metrics over one judged ranking.
//!
//! A judged ranking is the list of relevance gains of the retrieved documents in rank order
//! (position 1 first); a gain of 0 means not relevant (or unjudged). A document counts as relevant
//! when its gain is at least 1, as trec_eval's default relevance level.
//!
//! Each function counts what it needs from the gains and hands the counts to the shared formulas
//! in [`super::kernel`], which the trec_eval-compatible engine ([`super::measures`]) uses too:
//! `precision` is `P_k`, `recall` is `recall_k`, `hit_rate` is `success_k`, `reciprocal_rank` is
//! `recip_rank` and `ndcg_cut` is `ndcg_cut_k`.

use super::kernel;

/// Whether `gain` counts as relevant at trec_eval's default level 1.
fn is_relevant(gain: f64) -> bool {
    gain >= 1.0
}

fn found_in_top(gains: &[f64], k: usize) -> usize {
    gains.iter().take(k).filter(|&&g| is_relevant(g)).count()
}

/// Hit rate at `k`: 1 if any of the first `k` documents is relevant, else 0 (trec_eval `success_k`).
pub fn hit_rate(gains: &[f64], k: usize) -> f64 {
    kernel::success(found_in_top(gains, k))
}

/// Recall at `k`: relevant documents in the first `k` divided by `num_relevant`
/// (trec_eval `recall_k`). `None` when `num_relevant` is 0 (undefined).
pub fn recall(gains: &[f64], num_relevant: usize, k: usize) -> Option<f64> {
    kernel::recall(found_in_top(gains, k), num_relevant)
}

/// Precision at `k`: relevant documents in the first `k` divided by `k`, even when fewer than
/// `k` documents were retrieved (trec_eval `P_k`). `k = 0` gives 0.
pub fn precision(gains: &[f64], k: usize) -> f64 {
    kernel::precision(found_in_top(gains, k), k)
}

/// Reciprocal rank within the first `k`: `1 / rank` of the first relevant document, 0 if none
/// (trec_eval `recip_rank` when `k` is the whole ranking).
pub fn reciprocal_rank(gains: &[f64], k: usize) -> f64 {
    kernel::reciprocal_rank(gains.iter().take(k).position(|&g| is_relevant(g)))
}

/// Normalised discounted cumulative gain at `k`, as trec_eval's `ndcg_cut_k`: linear gains,
/// discount `log2(rank + 1)`, ideal ranking from `judged_gains` (the gains of every judged
/// document of the query, any order) sorted descending. `None` when the ideal DCG is 0.
pub fn ndcg_cut(gains: &[f64], judged_gains: &[f64], k: usize) -> Option<f64> {
    let positive = |g: f64| if g > 0.0 { g } else { 0.0 };
    let mut ideal: Vec<f64> = judged_gains.iter().copied().filter(|&g| g > 0.0).collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let ideal_dcg = kernel::dcg(ideal, k);
    kernel::ndcg(
        kernel::dcg(gains.iter().copied().map(positive), k),
        ideal_dcg,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seed 000's worked example: gold {q1:{d3}, q2:{d7,d2}, q3:{d11}, q4:{d5}} over the ranked
    /// lists of the seed gives Recall@5 = 0.750, MRR = 0.625, nDCG@5 = 0.6270362672.
    #[test]
    fn seed_000_worked_example() {
        // Gains in rank order (top 5) from the seed's ranked lists.
        let q1 = [0.0, 1.0, 0.0, 0.0, 0.0]; // d8 d3 d1 d4 d2: d3 at rank 2
        let q2 = [1.0, 0.0, 0.0, 1.0, 0.0]; // d2 d6 d4 d7 d1: d2 at 1, d7 at 4
        let q3 = [1.0, 0.0, 0.0, 0.0, 0.0]; // d11 at rank 1
        let q4 = [0.0, 0.0, 0.0, 0.0, 0.0]; // d5 never retrieved
        let queries: [(&[f64], usize); 4] = [(&q1, 1), (&q2, 2), (&q3, 1), (&q4, 1)];
        let mean = |f: &dyn Fn(&[f64], usize) -> f64| -> f64 {
            queries.iter().map(|(g, n)| f(g, *n)).sum::<f64>() / 4.0
        };
        let recall5 = mean(&|g, n| recall(g, n, 5).unwrap());
        let mrr = mean(&|g, _| reciprocal_rank(g, usize::MAX));
        let ndcg5 = mean(&|g, n| ndcg_cut(g, &vec![1.0; n], 5).unwrap());
        assert!((recall5 - 0.75).abs() < 1e-12, "{recall5}");
        assert!((mrr - 0.625).abs() < 1e-12, "{mrr}");
        assert!((ndcg5 - 0.6270362672).abs() < 1e-10, "{ndcg5}");
    }
}
