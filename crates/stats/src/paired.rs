//! Paired tests for comparing two systems on the same cases: the paired t-test, Fisher's
//! randomization (sign-flip) test and the paired bootstrap test, all two-sided and all on the
//! per-case differences `dᵢ = aᵢ − bᵢ`.
//!
//! Which to use: the randomization test makes no distributional assumption and is exact for small
//! samples (it enumerates every sign vector when that fits the budget); the t-test is the classic
//! choice and matches `scipy.stats.ttest_rel`; the bootstrap test also returns an interval for the
//! mean difference. M. D. Smucker, J. Allan and B. Carterette, "A comparison of statistical
//! significance tests for information retrieval evaluation", CIKM 2007, found the three agree
//! closely on IR data and recommend the randomization test.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::bootstrap::{percentile_interval, resample_means};
use crate::error::{check_confidence, check_finite, StatsError};
use crate::interval::Interval;

/// Relative tolerance for "at least as extreme as observed" (relative to `Σ|dᵢ|` or `max|dᵢ|`):
/// a resampled statistic that equals the observed one mathematically but differs by rounding
/// (the same numbers summed in another order) still counts.
const TIE_TOLERANCE: f64 = 1e-12;

/// The result of a two-sided test: its statistic and p-value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TestResult {
    /// The test statistic (its meaning is documented on each test).
    pub statistic: f64,
    /// The two-sided p-value, in `[0, 1]`.
    pub p_value: f64,
}

/// The result of [`paired_bootstrap_test`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedBootstrap {
    /// The observed mean difference `d̄ = mean(a − b)`.
    pub mean_difference: f64,
    /// The two-sided bootstrap p-value for `H₀: E[d] = 0`.
    pub p_value: f64,
    /// The percentile bootstrap interval of the mean difference.
    pub interval: Interval,
}

/// The paired (dependent samples) Student t-test of `H₀: E[a − b] = 0`, two-sided.
///
/// With `dᵢ = aᵢ − bᵢ`, `n` pairs, `d̄` their mean and `s` their sample standard deviation
/// (divisor `n − 1`):
///
/// ```text
/// t = d̄ / (s / √n),    p = 2 · P(T_{n−1} ≥ |t|)
/// ```
///
/// `statistic` is `t`. Matches `scipy.stats.ttest_rel(a, b)` (compared to 1e-9 relative in the
/// tests). Reference: Student, "The probable error of a mean", *Biometrika* 6 (1908).
///
/// **Zero variance** (all differences identical, where scipy returns NaN or an infinite `t`):
/// if every `dᵢ = 0` the result is `t = 0, p = 1` (no evidence of a difference); if every
/// `dᵢ = c ≠ 0` it is `t = ±∞` (sign of `c`) and `p = 0`. The statistic is never NaN, but may be
/// infinite in that second case.
///
/// # Errors
///
/// [`StatsError::LengthMismatch`], [`StatsError::TooFewPairs`] for fewer than 2 pairs,
/// [`StatsError::NonFinite`] for a NaN or infinite value.
///
/// # Example
///
/// ```
/// use oloproof_stats::paired_t_test;
///
/// let baseline = [0.50, 0.61, 0.42, 0.70, 0.55, 0.48];
/// let candidate = [0.58, 0.66, 0.47, 0.71, 0.63, 0.52];
/// let result = paired_t_test(&candidate, &baseline)?;
/// assert!(result.statistic > 0.0 && result.p_value < 0.01);
/// # Ok::<(), oloproof_stats::StatsError>(())
/// ```
pub fn paired_t_test(a: &[f64], b: &[f64]) -> Result<TestResult, StatsError> {
    let d = differences(a, b, 2)?;
    let n = d.len() as f64;
    if let Some(c) = constant(&d) {
        return Ok(if c == 0.0 {
            TestResult {
                statistic: 0.0,
                p_value: 1.0,
            }
        } else {
            TestResult {
                statistic: f64::INFINITY.copysign(c),
                p_value: 0.0,
            }
        });
    }
    let mean = d.iter().sum::<f64>() / n;
    let variance = d.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
    let t = mean / (variance / n).sqrt();
    let p_value = match StudentsT::new(0.0, 1.0, n - 1.0) {
        Ok(dist) => (2.0 * dist.sf(t.abs())).min(1.0),
        // Unreachable: n ≥ 2 makes the degrees of freedom positive.
        Err(_) => 1.0,
    };
    Ok(TestResult {
        statistic: t,
        p_value,
    })
}

/// Fisher's paired randomization test (the sign-flip permutation test) of the mean difference,
/// two-sided.
///
/// Under `H₀` each pair is exchangeable, so each difference `dᵢ = aᵢ − bᵢ` is as likely to have
/// had the opposite sign. The statistic is the observed mean difference `d̄` (returned as
/// `statistic`); the p-value is the share of sign vectors `s ∈ {±1}ⁿ` whose `|mean(sᵢdᵢ)|` is at
/// least `|d̄|` (up to a relative rounding tolerance of 1e-12 of `Σ|dᵢ|`, so mathematically equal
/// statistics tie):
///
/// - **Exact** when `2ⁿ ≤ permutations`: every sign vector is enumerated (the identity included)
///   and `p = #{|T*| ≥ |T|} / 2ⁿ`. The seed is unused. This equals
///   `scipy.stats.permutation_test(..., permutation_type="samples")` in its exact mode.
/// - **Monte Carlo** otherwise: `permutations` random sign vectors and
///   `p = (1 + #{|T*_b| ≥ |T|}) / (permutations + 1)`, which counts the observed arrangement as
///   one draw and is never 0 (B. Phipson and G. K. Smyth, "Permutation p-values should never be
///   zero", *SAGMB* 9 (2010)). Signs come from `ChaCha8Rng::seed_from_u64(seed)`: one
///   `next_u64()` per block of 64 pairs per permutation, bit `i mod 64` set meaning a flipped
///   sign for pair `i`.
///
/// Reference: R. A. Fisher, *The Design of Experiments* (1935), §21; Smucker et al. (CIKM 2007).
///
/// # Errors
///
/// [`StatsError::LengthMismatch`], [`StatsError::TooFewPairs`] for no pairs,
/// [`StatsError::NonFinite`], and [`StatsError::NoResamples`] for `permutations = 0`.
///
/// # Example
///
/// ```
/// use oloproof_stats::randomization_test;
///
/// let a = [1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0];
/// let b = [0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0];
/// // 2⁸ = 256 ≤ 10,000: exact. Five +1 differences, three zeros: p = 2 · 2³ / 2⁸.
/// let result = randomization_test(&a, &b, 10_000, 0)?;
/// assert_eq!(result.statistic, 0.625);
/// assert_eq!(result.p_value, 0.0625);
/// # Ok::<(), oloproof_stats::StatsError>(())
/// ```
pub fn randomization_test(
    a: &[f64],
    b: &[f64],
    permutations: usize,
    seed: u64,
) -> Result<TestResult, StatsError> {
    let d = differences(a, b, 1)?;
    if permutations == 0 {
        return Err(StatsError::NoResamples);
    }
    let n = d.len();
    let observed_sum: f64 = d.iter().sum();
    let threshold = observed_sum.abs() - TIE_TOLERANCE * d.iter().map(|x| x.abs()).sum::<f64>();
    let statistic = observed_sum / n as f64;

    let exact = n < usize::BITS as usize - 1 && (1usize << n) <= permutations;
    let p_value = if exact {
        let total = 1usize << n;
        let mut count = 0usize;
        for mask in 0..total {
            let sum: f64 = d
                .iter()
                .enumerate()
                .map(|(i, x)| if mask >> i & 1 == 1 { -x } else { *x })
                .sum();
            count += usize::from(sum.abs() >= threshold);
        }
        count as f64 / total as f64
    } else {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut count = 0usize;
        for _ in 0..permutations {
            let mut sum = 0.0;
            for block in d.chunks(64) {
                let bits = rng.next_u64();
                for (i, x) in block.iter().enumerate() {
                    sum += if bits >> i & 1 == 1 { -x } else { *x };
                }
            }
            count += usize::from(sum.abs() >= threshold);
        }
        (count + 1) as f64 / (permutations + 1) as f64
    };
    Ok(TestResult { statistic, p_value })
}

/// The paired bootstrap test of `H₀: E[a − b] = 0`, two-sided, with the percentile interval of
/// the mean difference from the same resamples.
///
/// Draws `resamples` resamples of the differences `dᵢ = aᵢ − bᵢ` with replacement (the stream of
/// [`percentile_bootstrap_mean`](crate::percentile_bootstrap_mean), same seed, same draws), with
/// means `m*_b`, and the observed mean `d̄`:
///
/// - `interval`: the `α/2` and `1 − α/2` quantiles of the `m*_b` (numpy's linear definition),
///   `α = 1 − confidence`.
/// - `p_value`: the null is imposed by centring the resampled means on zero (equivalent to
///   resampling `dᵢ − d̄`): `p = (1 + #{|m*_b − d̄| ≥ |d̄|}) / (resamples + 1)`, with a relative
///   rounding tolerance of 1e-12 of `max|dᵢ|` on the comparison (B. Efron and R. J. Tibshirani,
///   *An Introduction to the Bootstrap*, 1993, §16.4, algorithm 16.2, unstudentized).
///
/// All differences zero gives `p = 1` and the interval `[0, 0]`. All differences equal to
/// `c ≠ 0` gives the interval `[c, c]` and the smallest p-value, `1 / (resamples + 1)`: the
/// bootstrap reads zero spread as certainty, so with only a handful of pairs prefer
/// [`randomization_test`].
///
/// # Errors
///
/// [`StatsError::LengthMismatch`], [`StatsError::TooFewPairs`] for fewer than 2 pairs,
/// [`StatsError::NonFinite`], [`StatsError::NoResamples`], [`StatsError::InvalidConfidence`].
///
/// # Example
///
/// ```
/// use oloproof_stats::paired_bootstrap_test;
///
/// let baseline = [0.50, 0.61, 0.42, 0.70, 0.55, 0.48, 0.66, 0.59];
/// let candidate = [0.58, 0.66, 0.47, 0.71, 0.63, 0.52, 0.64, 0.65];
/// let result = paired_bootstrap_test(&candidate, &baseline, 10_000, 7, 0.95)?;
/// assert!(result.interval.lo > 0.0 && result.p_value < 0.05);
/// # Ok::<(), oloproof_stats::StatsError>(())
/// ```
pub fn paired_bootstrap_test(
    a: &[f64],
    b: &[f64],
    resamples: usize,
    seed: u64,
    confidence: f64,
) -> Result<PairedBootstrap, StatsError> {
    check_confidence(confidence)?;
    let d = differences(a, b, 2)?;
    if resamples == 0 {
        return Err(StatsError::NoResamples);
    }
    if let Some(c) = constant(&d) {
        return Ok(PairedBootstrap {
            mean_difference: c,
            p_value: if c == 0.0 {
                1.0
            } else {
                1.0 / (resamples + 1) as f64
            },
            interval: Interval::new(c, c),
        });
    }
    let mean = d.iter().sum::<f64>() / d.len() as f64;
    let mut means = resample_means(&d, resamples, seed)?;
    let threshold = mean.abs() - TIE_TOLERANCE * d.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
    let count = means
        .iter()
        .filter(|m| (*m - mean).abs() >= threshold)
        .count();
    let interval = percentile_interval(&mut means, confidence);
    Ok(PairedBootstrap {
        mean_difference: mean,
        p_value: (count + 1) as f64 / (resamples + 1) as f64,
        interval,
    })
}

/// `aᵢ − bᵢ`, after checking lengths, the minimum number of pairs and finiteness.
fn differences(a: &[f64], b: &[f64], needed: usize) -> Result<Vec<f64>, StatsError> {
    if a.len() != b.len() {
        return Err(StatsError::LengthMismatch {
            left: a.len(),
            right: b.len(),
        });
    }
    if a.len() < needed {
        return Err(StatsError::TooFewPairs {
            got: a.len(),
            needed,
        });
    }
    check_finite(a)?;
    check_finite(b)?;
    Ok(a.iter().zip(b).map(|(x, y)| x - y).collect())
}

/// `Some(c)` when every value equals `c` exactly.
fn constant(values: &[f64]) -> Option<f64> {
    let first = *values.first()?;
    values.iter().all(|&x| x == first).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_test_known_value() {
        // scipy.stats.ttest_rel([1, 2, 3, 4, 5], [1.5, 1.5, 2, 3, 3.5])
        // → statistic 2.0641873861685593, pvalue 0.10793882229227657
        let r = paired_t_test(&[1.0, 2.0, 3.0, 4.0, 5.0], &[1.5, 1.5, 2.0, 3.0, 3.5]).unwrap();
        assert!((r.statistic - 2.064_187_386_168_559_3).abs() < 1e-12);
        assert!((r.p_value - 0.107_938_822_292_276_57).abs() < 1e-12);
    }

    #[test]
    fn t_test_zero_variance() {
        let same = [0.3, 0.5, 0.9];
        assert_eq!(
            paired_t_test(&same, &same).unwrap(),
            TestResult {
                statistic: 0.0,
                p_value: 1.0
            }
        );
        let r = paired_t_test(&[2.0, 3.0, 4.0], &[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(r.statistic, f64::INFINITY);
        assert_eq!(r.p_value, 0.0);
        let r = paired_t_test(&[1.0, 2.0], &[2.0, 3.0]).unwrap();
        assert_eq!(r.statistic, f64::NEG_INFINITY);
    }

    #[test]
    fn t_test_errors() {
        assert_eq!(
            paired_t_test(&[1.0], &[1.0, 2.0]),
            Err(StatsError::LengthMismatch { left: 1, right: 2 })
        );
        assert_eq!(
            paired_t_test(&[1.0], &[2.0]),
            Err(StatsError::TooFewPairs { got: 1, needed: 2 })
        );
        assert!(matches!(
            paired_t_test(&[1.0, f64::NAN], &[2.0, 1.0]),
            Err(StatsError::NonFinite { index: 1, .. })
        ));
    }

    #[test]
    fn randomization_exact_small_cases() {
        // One nonzero difference among n: only its sign matters, p = 1.
        let r = randomization_test(&[1.0, 0.0, 0.0], &[0.0, 0.0, 0.0], 100, 0).unwrap();
        assert_eq!(r.p_value, 1.0);
        // All n differences equal and positive: only the identity and the full flip tie.
        let r = randomization_test(&[1.0; 6], &[0.0; 6], 1000, 0).unwrap();
        assert_eq!(r.p_value, 2.0 / 64.0);
        // No difference at all: every arrangement ties.
        let r = randomization_test(&[0.5; 4], &[0.5; 4], 1000, 0).unwrap();
        assert_eq!(
            r,
            TestResult {
                statistic: 0.0,
                p_value: 1.0
            }
        );
        // Rounding: flipping 0.1, 0.2 and −0.3 gives 0.49999999999999994, a tie with the
        // observed 0.5 in exact arithmetic (10 of 16 sign vectors reach |Σ| ≥ 0.5, not 8).
        let r = randomization_test(&[0.1, 0.2, -0.3, 0.5], &[0.0; 4], 16, 0).unwrap();
        assert_eq!(r.p_value, 10.0 / 16.0);
    }

    #[test]
    fn randomization_monte_carlo() {
        let a: Vec<f64> = (0..40).map(|i| f64::from(i % 5) / 4.0 + 0.05).collect();
        let b: Vec<f64> = (0..40).map(|i| f64::from((i + 2) % 5) / 4.0).collect();
        let r1 = randomization_test(&a, &b, 5000, 11).unwrap();
        let r2 = randomization_test(&a, &b, 5000, 11).unwrap();
        let r3 = randomization_test(&a, &b, 5000, 12).unwrap();
        assert_eq!(r1, r2);
        assert_ne!(r1.p_value, r3.p_value);
        assert!(r1.p_value > 0.0 && r1.p_value <= 1.0);
        // A large consistent effect is detected, with the smallest attainable p.
        let shifted: Vec<f64> = a.iter().map(|x| x + 1.0).collect();
        let r = randomization_test(&shifted, &a, 999, 1).unwrap();
        assert_eq!(r.p_value, 1.0 / 1000.0);
        // Under the null (symmetric noise) the p-value is not small.
        let noise: Vec<f64> = (0..40)
            .map(|i| if i % 2 == 0 { 0.1 } else { -0.1 })
            .collect();
        let zeros = vec![0.0; 40];
        let r = randomization_test(&noise, &zeros, 999, 1).unwrap();
        assert_eq!(r.p_value, 1.0);
    }

    #[test]
    fn randomization_errors() {
        assert_eq!(
            randomization_test(&[], &[], 10, 0),
            Err(StatsError::TooFewPairs { got: 0, needed: 1 })
        );
        assert_eq!(
            randomization_test(&[1.0], &[0.0], 0, 0),
            Err(StatsError::NoResamples)
        );
    }

    #[test]
    fn bootstrap_test_properties() {
        let baseline = [0.50, 0.61, 0.42, 0.70, 0.55, 0.48, 0.66, 0.59];
        let candidate = [0.58, 0.66, 0.47, 0.71, 0.63, 0.52, 0.64, 0.65];
        let r = paired_bootstrap_test(&candidate, &baseline, 4000, 5, 0.95).unwrap();
        assert!((r.mean_difference - 0.043_75).abs() < 1e-12);
        assert!(r.interval.contains(r.mean_difference));
        assert!(r.interval.lo > 0.0);
        assert!(r.p_value < 0.05);
        assert_eq!(
            r,
            paired_bootstrap_test(&candidate, &baseline, 4000, 5, 0.95).unwrap()
        );
        // Swapping the systems mirrors the interval and keeps the p-value.
        let s = paired_bootstrap_test(&baseline, &candidate, 4000, 5, 0.95).unwrap();
        assert!((s.mean_difference + r.mean_difference).abs() < 1e-15);
        assert!((s.interval.lo + r.interval.hi).abs() < 1e-12);
        assert_eq!(s.p_value, r.p_value);
        // Interval equals the percentile bootstrap of the differences with the same seed.
        let d: Vec<f64> = candidate
            .iter()
            .zip(&baseline)
            .map(|(x, y)| x - y)
            .collect();
        let direct = crate::percentile_bootstrap_mean(&d, 4000, 5, 0.95).unwrap();
        assert_eq!(direct, r.interval);
    }

    #[test]
    fn bootstrap_test_degenerate() {
        let r = paired_bootstrap_test(&[0.2, 0.4], &[0.2, 0.4], 100, 0, 0.95).unwrap();
        assert_eq!(r.p_value, 1.0);
        assert_eq!(r.interval, Interval::new(0.0, 0.0));
        let r = paired_bootstrap_test(&[1.0, 1.0, 1.0], &[0.0, 0.0, 0.0], 99, 0, 0.95).unwrap();
        assert_eq!(r.p_value, 0.01);
        assert_eq!(r.interval, Interval::new(1.0, 1.0));
        assert_eq!(
            paired_bootstrap_test(&[1.0], &[0.0], 99, 0, 0.95),
            Err(StatsError::TooFewPairs { got: 1, needed: 2 })
        );
    }

    #[test]
    fn bootstrap_test_null_is_not_significant() {
        let a = [0.1, 0.5, 0.3, 0.9, 0.7, 0.2, 0.4, 0.8, 0.6, 0.0];
        let b = [0.2, 0.4, 0.4, 0.8, 0.6, 0.3, 0.3, 0.9, 0.5, 0.1];
        let r = paired_bootstrap_test(&a, &b, 2000, 3, 0.95).unwrap();
        assert!(r.p_value > 0.5, "{r:?}");
        assert!(r.interval.contains(0.0));
    }
}
