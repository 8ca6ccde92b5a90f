//! Distribution-free confidence intervals for a population quantile from order statistics
//! (latency p50/p95/p99, cost p99): no assumption on the shape of the distribution, only that
//! the observations are independent draws from it.
//!
//! For a sample of `n` and the `p` quantile `ξ_p`, the number of observations below `ξ_p` is
//! `B ~ Binomial(n, p)`, so the order statistics bracket `ξ_p` with a probability read off the
//! binomial distribution (Hahn and Meeker, *Statistical Intervals*, 1991, §5.2; Conover,
//! *Practical Nonparametric Statistics*, 3rd ed., §3.2). With `a = (1 − confidence)/2`, the
//! equal-tailed interval is `[x₍ₗ₎, x₍ᵤ₎]` (1-based ranks of the sorted sample) with
//!
//! ```text
//! l = min { k : P(B ≤ k) ≥ a }            (binom.ppf(a))
//! u = min { k : P(B > k) ≤ a } + 1        (binom.isf(a) + 1)
//! ```
//!
//! which is exactly `scipy.stats.quantile_test(x, p=p).confidence_interval(confidence)`
//! (two-sided). Its coverage is at least `confidence` for every continuous distribution (the
//! binomial is discrete, so it is conservative).
//!
//! A bound does not exist when the sample is too small: the lower one needs `(1 − p)ⁿ < a`,
//! the upper one `pⁿ ≤ a` — at 95 % confidence, `n ≥ 72` for the upper bound of a p95 and
//! `n ≥ 368` for a p99. Such a bound is `None` (scipy's NaN), never the sample's extreme;
//! [`quantile_interval_min_n`] says how many observations both bounds need.
//!
//! ```
//! use oloproof_stats::{quantile_interval, quantile_interval_min_n};
//!
//! let ms: Vec<f64> = (1..=100).map(f64::from).collect();
//! let ci = quantile_interval(&ms, 0.5, 0.95)?;
//! assert_eq!((ci.lower, ci.upper), (Some(40.0), Some(61.0)));
//! let p95 = quantile_interval(&ms[..60], 0.95, 0.95)?;
//! assert_eq!(p95.upper, None); // 60 observations cannot bound a p95 from above at 95 %
//! assert_eq!(quantile_interval_min_n(0.95, 0.95), 72);
//! # Ok::<(), oloproof_stats::StatsError>(())
//! ```

use statrs::function::beta::beta_reg;

use crate::StatsError;

/// An order-statistic interval of a quantile ([`quantile_interval`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuantileInterval {
    /// The lower bound, `x₍ₗ₎`; `None` when the sample is too small to have one.
    pub lower: Option<f64>,
    /// The upper bound, `x₍ᵤ₎`; `None` when the sample is too small to have one.
    pub upper: Option<f64>,
    /// `l`, the 1-based rank of the lower bound in the sorted sample (`None` with it).
    pub lower_rank: Option<usize>,
    /// `u`, the 1-based rank of the upper bound in the sorted sample (`None` with it).
    pub upper_rank: Option<usize>,
}

/// `P(B ≤ k)` for `B ~ Binomial(n, p)`, `0 ≤ k < n`: `I_{1−p}(n − k, k + 1)`.
fn binomial_cdf(k: u64, n: u64, p: f64) -> f64 {
    beta_reg((n - k) as f64, (k + 1) as f64, 1.0 - p)
}

/// `P(B > k)` for `B ~ Binomial(n, p)`, `0 ≤ k < n`: `I_p(k + 1, n − k)` (computed directly,
/// not as `1 − cdf`, so that small tails keep their precision).
fn binomial_sf(k: u64, n: u64, p: f64) -> f64 {
    beta_reg((k + 1) as f64, (n - k) as f64, p)
}

/// `min { k ∈ 0..=n : P(B ≤ k) ≥ a }` (the CDF is increasing: bisection).
fn binomial_ppf(a: f64, n: u64, p: f64) -> u64 {
    let (mut lo, mut hi) = (0u64, n); // P(B ≤ n) = 1 ≥ a
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if binomial_cdf(mid, n, p) >= a {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// `min { k ∈ 0..=n : P(B > k) ≤ a }` (the survival function is decreasing: bisection).
fn binomial_isf(a: f64, n: u64, p: f64) -> u64 {
    let (mut lo, mut hi) = (0u64, n); // P(B > n) = 0 ≤ a
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if binomial_sf(mid, n, p) <= a {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

fn check(q: f64, confidence: f64) -> Result<(), StatsError> {
    if !(confidence > 0.0 && confidence < 1.0) {
        return Err(StatsError::InvalidConfidence { confidence });
    }
    if !(q > 0.0 && q < 1.0) {
        return Err(StatsError::InvalidQuantile { q });
    }
    Ok(())
}

/// The equal-tailed distribution-free `confidence` interval of the `q` quantile of the
/// population `values` were drawn from (module docs: the ranks, the coverage, scipy's
/// `quantile_test(...).confidence_interval`).
///
/// # Errors
///
/// [`StatsError::EmptySample`] for no values, [`StatsError::NonFinite`] for a NaN or infinite
/// one, [`StatsError::InvalidQuantile`] unless `0 < q < 1`, [`StatsError::InvalidConfidence`]
/// unless `0 < confidence < 1`.
pub fn quantile_interval(
    values: &[f64],
    q: f64,
    confidence: f64,
) -> Result<QuantileInterval, StatsError> {
    check(q, confidence)?;
    if values.is_empty() {
        return Err(StatsError::EmptySample);
    }
    if let Some((index, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(StatsError::NonFinite { index, value });
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let n = sorted.len() as u64;
    let a = (1.0 - confidence) / 2.0;
    // 1-based rank l = ppf(a); it exists when l ≥ 1.
    let l = binomial_ppf(a, n, q);
    // 0-based index isf(a), i.e. 1-based rank isf(a) + 1; it exists when that rank ≤ n.
    let u0 = binomial_isf(a, n, q);
    let lower_rank = (l >= 1).then_some(l as usize);
    let upper_rank = (u0 < n).then_some(u0 as usize + 1);
    Ok(QuantileInterval {
        lower: lower_rank.map(|r| sorted[r - 1]),
        upper: upper_rank.map(|r| sorted[r - 1]),
        lower_rank,
        upper_rank,
    })
}

/// The smallest sample size whose [`quantile_interval`] of the `q` quantile at `confidence`
/// has both bounds: the smallest `n` with `(1 − q)ⁿ < a` and `qⁿ ≤ a`, `a = (1 − confidence)/2`
/// (6 for a median, 72 for a p95 and 368 for a p99 at 95 %). 0 for a `q` or `confidence`
/// outside `(0, 1)`.
pub fn quantile_interval_min_n(q: f64, confidence: f64) -> u64 {
    if check(q, confidence).is_err() {
        return 0;
    }
    let a = (1.0 - confidence) / 2.0;
    let mut n = 1u64;
    // Terminates: both powers tend to 0 (q in (0, 1)); capped far above any real sample.
    while n < 100_000_000 {
        let nf = n as f64;
        if (1.0 - q).powf(nf) < a && q.powf(nf) <= a {
            return n;
        }
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_of_a_median_and_a_tail() {
        let x: Vec<f64> = (1..=100).map(f64::from).collect();
        let ci = quantile_interval(&x, 0.5, 0.95).unwrap();
        // scipy.stats.quantile_test(range(1, 101), p=0.5).confidence_interval(): (40, 61).
        assert_eq!((ci.lower_rank, ci.upper_rank), (Some(40), Some(61)));
        let ci = quantile_interval(&x, 0.95, 0.95).unwrap();
        // (90, 100) with scipy.
        assert_eq!((ci.lower, ci.upper), (Some(90.0), Some(100.0)));
        // Order does not matter.
        let mut rev = x.clone();
        rev.reverse();
        assert_eq!(quantile_interval(&rev, 0.95, 0.95).unwrap(), ci);
    }

    #[test]
    fn small_samples_have_no_bound_rather_than_an_extreme() {
        let x = [3.0, 1.0, 2.0];
        let ci = quantile_interval(&x, 0.5, 0.95).unwrap();
        assert_eq!((ci.lower, ci.upper), (None, None));
        let x: Vec<f64> = (1..=71).map(f64::from).collect();
        assert_eq!(quantile_interval(&x, 0.95, 0.95).unwrap().upper, None);
        let x: Vec<f64> = (1..=72).map(f64::from).collect();
        assert_eq!(quantile_interval(&x, 0.95, 0.95).unwrap().upper, Some(72.0));
        assert_eq!(quantile_interval_min_n(0.5, 0.95), 6);
        assert_eq!(quantile_interval_min_n(0.95, 0.95), 72);
        assert_eq!(quantile_interval_min_n(0.99, 0.95), 368);
        let x: Vec<f64> = (1..=6).map(f64::from).collect();
        let ci = quantile_interval(&x, 0.5, 0.95).unwrap();
        assert_eq!((ci.lower, ci.upper), (Some(1.0), Some(6.0)));
    }

    #[test]
    fn bad_inputs_are_errors() {
        assert_eq!(
            quantile_interval(&[], 0.5, 0.95),
            Err(StatsError::EmptySample)
        );
        assert!(matches!(
            quantile_interval(&[1.0, f64::NAN], 0.5, 0.95),
            Err(StatsError::NonFinite { index: 1, .. })
        ));
        assert!(matches!(
            quantile_interval(&[1.0], 1.0, 0.95),
            Err(StatsError::InvalidQuantile { .. })
        ));
        assert!(matches!(
            quantile_interval(&[1.0], 0.5, 1.0),
            Err(StatsError::InvalidConfidence { .. })
        ));
    }

    /// Coverage on a known distribution: the interval holds the true p95 of U(0, 1) in at
    /// least 95 % of 2,000 samples of 200 (it is conservative).
    #[test]
    fn covers_the_true_quantile() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut covered = 0;
        for _ in 0..2000 {
            let x: Vec<f64> = (0..200).map(|_| rng.random::<f64>()).collect();
            let ci = quantile_interval(&x, 0.95, 0.95).unwrap();
            if ci.lower.unwrap() <= 0.95 && 0.95 <= ci.upper.unwrap() {
                covered += 1;
            }
        }
        assert!(covered >= 1880, "covered {covered} of 2000");
    }
}
