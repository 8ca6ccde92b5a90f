//! The shared formulas: one implementation of each ranking formula, used both by the per-query
//! functions in [`super::query`] and by the trec_eval-compatible engine in [`super::measures`].
//!
//! Every function here is a small, total computation over counts or gains; callers decide how
//! those counts are obtained (from a list of gains, or from a judged ranking).

/// Discount of the document at zero-based position `index` (rank `index + 1`):
/// `log2(rank + 1)`, the Järvelin–Kekäläinen discount used by trec_eval's `ndcg*` measures.
#[inline]
pub fn discount(index: usize) -> f64 {
    (index as f64 + 2.0).log2()
}

/// Precision: `found / k` (trec_eval `P_k` divides by `k` even when fewer than `k` documents
/// were retrieved). `k = 0` gives 0.
#[inline]
pub fn precision(found: usize, k: usize) -> f64 {
    if k == 0 {
        0.0
    } else {
        found as f64 / k as f64
    }
}

/// Recall: `found / num_relevant`; `None` when `num_relevant` is 0 (trec_eval then reports 0).
#[inline]
pub fn recall(found: usize, num_relevant: usize) -> Option<f64> {
    if num_relevant == 0 {
        None
    } else {
        Some(found as f64 / num_relevant as f64)
    }
}

/// Reciprocal rank from the zero-based position of the first relevant document:
/// `1 / (index + 1)`, or 0 if there is none (trec_eval `recip_rank`).
#[inline]
pub fn reciprocal_rank(first_relevant: Option<usize>) -> f64 {
    first_relevant.map_or(0.0, |i| 1.0 / (i as f64 + 1.0))
}

/// Success (hit): 1 if at least one relevant document was found, else 0 (trec_eval `success_k`).
#[inline]
pub fn success(found: usize) -> f64 {
    if found > 0 {
        1.0
    } else {
        0.0
    }
}

/// Discounted cumulative gain of the first `k` gains, in rank order:
/// `Σ_{i<k, g_i ≠ 0} g_i / log2(i + 2)` (Järvelin & Kekäläinen 2002, trec_eval `ndcg_cut`).
/// Terms are added in rank order, as trec_eval does, so sums agree to the last bit.
#[inline]
pub fn dcg<I: IntoIterator<Item = f64>>(gains: I, k: usize) -> f64 {
    let mut sum = 0.0;
    for (i, g) in gains.into_iter().take(k).enumerate() {
        if g != 0.0 {
            sum += g / discount(i);
        }
    }
    sum
}

/// Normalised DCG: `dcg / ideal_dcg`, `None` when the ideal DCG is not positive.
#[inline]
pub fn ndcg(dcg: f64, ideal_dcg: f64) -> Option<f64> {
    if ideal_dcg > 0.0 {
        Some(dcg / ideal_dcg)
    } else {
        None
    }
}

/// Average precision from the sum of precisions at each relevant retrieved document:
/// `sum / num_relevant`, 0 when `num_relevant` is 0 (trec_eval `map`).
#[inline]
pub fn average_precision(sum_precisions: f64, num_relevant: usize) -> f64 {
    if num_relevant == 0 {
        0.0
    } else {
        sum_precisions / num_relevant as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dcg_discounts_by_log2_rank_plus_one() {
        assert_eq!(dcg([1.0], 10), 1.0);
        assert!((dcg([0.0, 1.0], 10) - 1.0 / 3f64.log2()).abs() < 1e-15);
        assert_eq!(dcg([1.0, 1.0], 1), 1.0);
    }

    #[test]
    fn precision_divides_by_k() {
        assert_eq!(precision(1, 4), 0.25);
        assert_eq!(precision(0, 0), 0.0);
        assert_eq!(recall(1, 0), None);
        assert_eq!(reciprocal_rank(Some(1)), 0.5);
    }
}
