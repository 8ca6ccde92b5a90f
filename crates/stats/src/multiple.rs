//! Multiple-comparison adjustment: Holm's step-down method, for reporting several criteria or
//! metrics compared at once (`oloproof trec --compare`, `oloproof compare`).

/// Holm–Bonferroni adjusted p-values, in the order of the input.
///
/// Sort the `m` p-values ascending, `p₍₁₎ ≤ … ≤ p₍ₘ₎`; the adjusted value of the `i`-th smallest
/// (1-based) is
///
/// ```text
/// p̃₍ᵢ₎ = min(1, max_{j ≤ i} (m − j + 1) · p₍ⱼ₎)
/// ```
///
/// so adjusted values are monotone in the raw ones and capped at 1. Rejecting every hypothesis
/// with `p̃ ≤ α` controls the family-wise error rate at `α` under any dependence. Reference:
/// S. Holm, "A simple sequentially rejective multiple test procedure", *Scandinavian Journal of
/// Statistics* 6 (1979); identical to `statsmodels.stats.multitest.multipletests(p,
/// method="holm")[1]` and R's `p.adjust(p, "holm")`.
///
/// Ties keep their input order (a stable sort), which does not change the result. A NaN p-value
/// is treated as 1: it is never rejected and does not change the adjustment of the others (it
/// sorts last, where it can only raise its own value). Values outside `[0, 1]` are clamped into
/// it. An empty input gives an empty output.
///
/// # Example
///
/// ```
/// use oloproof_stats::holm;
///
/// let adjusted = holm(&[0.01, 0.04, 0.03]);
/// assert_eq!(adjusted, vec![0.03, 0.06, 0.06]);
/// ```
pub fn holm(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let clean: Vec<f64> = p_values
        .iter()
        .map(|&p| if p.is_nan() { 1.0 } else { p.clamp(0.0, 1.0) })
        .collect();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| clean[i].total_cmp(&clean[j]));
    let mut adjusted = vec![0.0; m];
    let mut running_max = 0.0_f64;
    for (rank, &index) in order.iter().enumerate() {
        let scaled = ((m - rank) as f64 * clean[index]).min(1.0);
        running_max = running_max.max(scaled);
        adjusted[index] = running_max;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // R: p.adjust(c(0.01, 0.02, 0.03, 0.04, 0.05), "holm") → 0.05 0.08 0.09 0.09 0.09
        let adjusted = holm(&[0.05, 0.01, 0.04, 0.02, 0.03]);
        let expected = [0.09, 0.05, 0.09, 0.08, 0.09];
        for (a, e) in adjusted.iter().zip(expected) {
            assert!((a - e).abs() < 1e-15, "{adjusted:?}");
        }
    }

    #[test]
    fn capped_and_monotone() {
        let raw = [0.5, 0.001, 0.3, 0.3, 0.9];
        let adjusted = holm(&raw);
        assert!(adjusted.iter().all(|&p| (0.0..=1.0).contains(&p)));
        for i in 0..raw.len() {
            assert!(adjusted[i] >= raw[i]);
            for j in 0..raw.len() {
                if raw[i] <= raw[j] {
                    assert!(adjusted[i] <= adjusted[j]);
                }
            }
        }
        assert_eq!(adjusted[0], 1.0);
        assert_eq!(adjusted[2], adjusted[3]);
    }

    #[test]
    fn edge_cases() {
        assert!(holm(&[]).is_empty());
        assert_eq!(holm(&[0.2]), vec![0.2]);
        assert_eq!(holm(&[f64::NAN, 0.01]), vec![1.0, 0.02]);
        assert_eq!(holm(&[-0.5, 2.0]), vec![0.0, 1.0]);
    }
}
