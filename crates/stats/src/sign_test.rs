//! The exact sign test and the "rate at least" decision of a pairwise A/B comparison.
//!
//! In a pairwise comparison each decided case is a win or a loss for the candidate; a tie
//! carries no sign and is dropped before the test (W. J. Dixon and A. M. Mood, "The statistical
//! sign test", *JASA* 41, 1946). Under the null hypothesis that neither answer is preferred,
//! the wins among `n = wins + losses` decided cases follow Binomial(n, ½).
//!
//! [`win_rate_at_least`] reads the exact (Clopper–Pearson) interval of the win rate among the
//! decided cases against the policy's `min_win_rate`, with the same boundary rule as
//! [`non_inferiority`](crate::non_inferiority): PASS and FAIL need the interval strictly on one
//! side of the threshold.

use crate::decision::{Decision, Verdict3};
use crate::error::StatsError;
use crate::interval::Interval;

/// Reason codes of [`win_rate_at_least`].
pub mod win_rate_reason {
    /// The interval's lower bound lies strictly above `min_win_rate`.
    pub const INTERVAL_ABOVE_MIN_WIN_RATE: &str = "interval_above_min_win_rate";
    /// The interval's upper bound lies strictly below `min_win_rate`.
    pub const INTERVAL_BELOW_MIN_WIN_RATE: &str = "interval_below_min_win_rate";
    /// The interval contains `min_win_rate` (or a bound is NaN).
    pub const INTERVAL_OVERLAPS_MIN_WIN_RATE: &str = "interval_overlaps_min_win_rate";
}

/// The result of an exact two-sided sign test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SignTest {
    /// Cases with a positive sign (the candidate won).
    pub positive: u64,
    /// Cases with a negative sign (the baseline won).
    pub negative: u64,
    /// The two-sided exact p-value, in `(0, 1]` (it underflows to 0 only beyond ~1,070
    /// unanimous cases).
    pub p_value: f64,
}

/// The exact two-sided sign test of `positive` against `negative` signs (ties dropped by the
/// caller).
///
/// With `n = positive + negative` and `m = min(positive, negative)`:
///
/// ```text
/// p = min(1, 2 · P(X ≤ m)),   X ~ Binomial(n, ½),   P(X ≤ m) = 2⁻ⁿ · Σ_{i=0}^{m} C(n, i)
/// ```
///
/// For p = ½ the distribution is symmetric, so this equals `scipy.stats.binomtest(positive, n,
/// 0.5, alternative="two-sided").pvalue` (its "sum of the outcomes no more likely than the one
/// observed" definition), against which the tests compare it to 1e-9 relative. The sum is
/// taken from its largest term `C(n, m) / 2ⁿ` downwards, the term in logarithms
/// (`Σ ln((n − m + i) / i)`), so nothing overflows for any `n`.
///
/// # Errors
///
/// [`StatsError::EmptySample`] when there is no sign at all (`positive + negative = 0`): with
/// no decided case there is no test (never a p-value of 1); [`StatsError::CountOverflow`] when
/// the sum exceeds `u64::MAX`.
///
/// # Example
///
/// ```
/// use oloproof_stats::sign_test;
///
/// // 9 wins, 1 loss: p = 2 · (1 + 10) / 1024.
/// let t = sign_test(9, 1)?;
/// assert!((t.p_value - 22.0 / 1024.0).abs() < 1e-15);
/// assert_eq!(sign_test(5, 5)?.p_value, 1.0);
/// # Ok::<(), oloproof_stats::StatsError>(())
/// ```
pub fn sign_test(positive: u64, negative: u64) -> Result<SignTest, StatsError> {
    let n = positive
        .checked_add(negative)
        .ok_or(StatsError::CountOverflow)?;
    if n == 0 {
        return Err(StatsError::EmptySample);
    }
    let m = positive.min(negative);
    let p_value = if 2 * m == n {
        1.0
    } else {
        (2.0 * lower_tail_half(n, m)).min(1.0)
    };
    Ok(SignTest {
        positive,
        negative,
        p_value,
    })
}

/// `P(X ≤ m)` for `X ~ Binomial(n, ½)` and `m < n / 2`.
fn lower_tail_half(n: u64, m: u64) -> f64 {
    let nf = n as f64;
    // ln C(n, m) = Σ_{i=1}^{m} ln((n − m + i) / i).
    let mut ln_top = 0.0;
    for i in 1..=m {
        ln_top += ((nf - m as f64 + i as f64) / i as f64).ln();
    }
    ln_top -= nf * std::f64::consts::LN_2;
    // Σ_{i ≤ m} C(n, i) / C(n, m), from the largest term down: each ratio is
    // C(n, i − 1) / C(n, i) = i / (n − i + 1) < 1, so the terms shrink and the sum stops once
    // they no longer change it.
    let mut sum = 1.0;
    let mut term = 1.0;
    let mut i = m;
    while i > 0 {
        term *= i as f64 / (nf - i as f64 + 1.0);
        let next = sum + term;
        if next == sum {
            break;
        }
        sum = next;
        i -= 1;
    }
    (ln_top + sum.ln()).exp()
}

/// Is the win rate at least `min_win_rate`? Reads `interval`, a confidence interval of the win
/// rate among decided cases (same units as `min_win_rate`: fractions with fractions, points
/// with points).
///
/// ```text
/// lo > min             PASS                    interval_above_min_win_rate
/// hi < min             FAIL                    interval_below_min_win_rate
/// otherwise            INSUFFICIENT_EVIDENCE   interval_overlaps_min_win_rate
/// ```
///
/// A NaN bound or threshold is `INSUFFICIENT_EVIDENCE`, never `PASS`.
///
/// # Example
///
/// ```
/// use oloproof_stats::{win_rate_at_least, Interval, Verdict3};
///
/// // 18 wins of 20 decided cases: exact 95 % interval [68.3, 98.8] points, clear of 50.
/// let d = win_rate_at_least(Interval::new(68.3, 98.8), 50.0);
/// assert_eq!((d.verdict, d.reason), (Verdict3::Pass, "interval_above_min_win_rate"));
/// assert_eq!(win_rate_at_least(Interval::new(20.0, 60.0), 50.0).verdict, Verdict3::InsufficientEvidence);
/// ```
pub fn win_rate_at_least(interval: Interval, min_win_rate: f64) -> Decision {
    use win_rate_reason::*;
    if interval.lo > min_win_rate {
        Decision {
            verdict: Verdict3::Pass,
            reason: INTERVAL_ABOVE_MIN_WIN_RATE,
        }
    } else if interval.hi < min_win_rate {
        Decision {
            verdict: Verdict3::Fail,
            reason: INTERVAL_BELOW_MIN_WIN_RATE,
        }
    } else {
        Decision {
            verdict: Verdict3::InsufficientEvidence,
            reason: INTERVAL_OVERLAPS_MIN_WIN_RATE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exact `2 · Σ_{i ≤ m} C(n, i) / 2ⁿ` in integers, for small `n`.
    fn exact(positive: u64, negative: u64) -> f64 {
        let n = positive + negative;
        let m = positive.min(negative);
        if 2 * m == n {
            return 1.0;
        }
        let mut c: u128 = 1;
        let mut total: u128 = 0;
        for i in 0..=m {
            if i > 0 {
                c = c * u128::from(n - i + 1) / u128::from(i);
            }
            total += c;
        }
        (2.0 * total as f64 / 2f64.powi(n as i32)).min(1.0)
    }

    #[test]
    fn small_samples_match_the_integer_sums() {
        for n in 1..=60u64 {
            for k in 0..=n {
                let ours = sign_test(k, n - k).unwrap().p_value;
                let theirs = exact(k, n - k);
                assert!(
                    (ours - theirs).abs() <= 1e-13 * theirs,
                    "({k}, {}): {ours} vs {theirs}",
                    n - k
                );
            }
        }
    }

    #[test]
    fn symmetric_unanimous_and_empty() {
        assert_eq!(
            sign_test(3, 7),
            Ok(SignTest {
                positive: 3,
                negative: 7,
                p_value: sign_test(7, 3).unwrap().p_value
            })
        );
        // One sign: p = 2 · 2⁻¹ = 1; ten unanimous: 2 · 2⁻¹⁰.
        assert_eq!(sign_test(1, 0).unwrap().p_value, 1.0);
        assert_eq!(sign_test(10, 0).unwrap().p_value, 2.0 / 1024.0);
        assert_eq!(sign_test(0, 0), Err(StatsError::EmptySample));
        assert_eq!(sign_test(u64::MAX, 1), Err(StatsError::CountOverflow));
        // Large and balanced-ish: finite, in (0, 1].
        let p = sign_test(50_500, 49_500).unwrap().p_value;
        assert!(p > 0.0 && p < 0.01, "{p}");
    }

    #[test]
    fn win_rate_boundaries_do_not_settle() {
        let d = |lo, hi| win_rate_at_least(Interval::new(lo, hi), 50.0);
        assert_eq!(d(50.0, 80.0).verdict, Verdict3::InsufficientEvidence);
        assert_eq!(d(50.1, 80.0).verdict, Verdict3::Pass);
        assert_eq!(d(10.0, 50.0).verdict, Verdict3::InsufficientEvidence);
        assert_eq!(
            d(10.0, 49.9).reason,
            win_rate_reason::INTERVAL_BELOW_MIN_WIN_RATE
        );
        assert_eq!(
            d(f64::NAN, f64::NAN).verdict,
            Verdict3::InsufficientEvidence
        );
    }
}
