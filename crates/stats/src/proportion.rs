//! Confidence intervals for a binomial proportion `k / n`: the exact Clopper–Pearson interval
//! (what a run's pass rates report) and the Wilson score interval (what monitoring uses).

use statrs::distribution::{Beta, ContinuousCDF, Normal};
use statrs::function::beta::{beta_reg, ln_beta};

use crate::error::{check_confidence, StatsError};
use crate::interval::Interval;

/// The exact (Clopper–Pearson) two-sided confidence interval for a binomial proportion.
///
/// With `α = 1 − confidence`, `k` successes out of `n` trials:
///
/// ```text
/// lo = B⁻¹(α/2;     k,     n − k + 1)    (lo = 0 when k = 0)
/// hi = B⁻¹(1 − α/2; k + 1, n − k)        (hi = 1 when k = n)
/// ```
///
/// where `B⁻¹(q; a, b)` is the `q` quantile of the Beta(a, b) distribution. The interval inverts
/// two one-sided binomial tests, so its coverage is at least `confidence` for every true
/// proportion (it is conservative). Reference: C. J. Clopper and E. S. Pearson, "The use of
/// confidence or fiducial limits illustrated in the case of the binomial", *Biometrika* 26 (1934);
/// identical to `scipy.stats.binomtest(k, n).proportion_ci(confidence, method="exact")`, against
/// which the tests compare it to 1e-9 relative.
///
/// Accuracy: for `k ∈ {0, 1, n − 1, n}` the bounds come from closed forms (one Beta parameter is
/// 1). Otherwise the Beta quantile comes from statrs and is polished with safeguarded Newton
/// steps on statrs's regularized incomplete beta function; the tests check 1e-9 relative
/// agreement with `scipy.special.betaincinv` for `n` up to 20,000. Beyond that statrs's
/// incomplete beta (a capped continued fraction and a log-gamma prefactor) loses digits:
/// around 1e-8 relative at `n ≈ 10⁶`, still far below the 0.1-point display grid.
///
/// # Errors
///
/// - [`StatsError::EmptySample`] when `n = 0`: with no trials there is no interval (rather than
///   the vacuous `[0, 1]` or a NaN).
/// - [`StatsError::SuccessesExceedTrials`] when `k > n`.
/// - [`StatsError::InvalidConfidence`] unless `0 < confidence < 1`.
///
/// # Example
///
/// ```
/// use oloproof_stats::{clopper_pearson, Interval};
///
/// // 9 passes out of 13 cases, 95 %, as a report prints it (rounded outward to 0.1 points).
/// let ci = clopper_pearson(9, 13, 0.95)?.round_outward(0.001);
/// assert_eq!(ci, Interval::new(0.385, 0.910));
/// # Ok::<(), oloproof_stats::StatsError>(())
/// ```
pub fn clopper_pearson(k: u64, n: u64, confidence: f64) -> Result<Interval, StatsError> {
    check_proportion(k, n, confidence)?;
    let tail = (1.0 - confidence) / 2.0;
    let (kf, nf) = (k as f64, n as f64);
    // Where one Beta parameter is 1 the quantile has a closed form: I_x(1, b) = 1 − (1 − x)^b
    // and I_x(a, 1) = x^a. They cover k ∈ {0, 1, n − 1, n} exactly, whatever n.
    let lo = match k {
        0 => 0.0,
        _ if k == n => (tail.ln() / nf).exp(),
        1 => -(f64::ln_1p(-tail) / nf).exp_m1(),
        _ => beta_quantile(kf, nf - kf + 1.0, tail),
    };
    let hi = match n - k {
        0 => 1.0,
        _ if k == 0 => -(tail.ln() / nf).exp_m1(),
        1 => (f64::ln_1p(-tail) / nf).exp(),
        _ => beta_quantile(kf + 1.0, nf - kf, 1.0 - tail),
    };
    Ok(Interval { lo, hi })
}

/// The Wilson score two-sided confidence interval for a binomial proportion.
///
/// With `p̂ = k / n` and `z = Φ⁻¹((1 + confidence) / 2)` the standard normal quantile:
///
/// ```text
///          2n·p̂ + z²  ∓  z · √(z² + 4n·p̂(1 − p̂))
/// lo, hi = ─────────────────────────────────────
///                       2(n + z²)
/// ```
///
/// It inverts the score test, so unlike the Wald interval `p̂ ± z·√(p̂(1−p̂)/n)` it stays inside
/// `[0, 1]` and does not collapse to a point at `k = 0` or `k = n`; its coverage is close to
/// nominal on average rather than guaranteed (prefer [`clopper_pearson`] for small release
/// gates). Bounds are clamped to `[0, 1]`, with `lo = 0` exactly when `k = 0` and `hi = 1` exactly
/// when `k = n`. Reference: E. B. Wilson, "Probable inference, the law of succession, and
/// statistical inference", *JASA* 22 (1927); identical to
/// `scipy.stats.binomtest(k, n).proportion_ci(confidence, method="wilson")`.
///
/// **Monitoring.** A quality SLO such as "at least 95 % of judged answers score above 0.8" is
/// checked on a sample, so compare the *lower* Wilson bound of the observed rate with the target,
/// not the point estimate (seed 002, §5.5 "rate under threshold"). For a one-sided bound at level
/// `c`, take `lo` of the two-sided interval at `2c − 1` (a one-sided 95 % bound is the `lo` of
/// `wilson(k, n, 0.90)`).
///
/// # Errors
///
/// As [`clopper_pearson`]: `n = 0`, `k > n`, or a confidence outside (0, 1).
///
/// # Example
///
/// ```
/// use oloproof_stats::wilson;
///
/// // 970 good answers out of 1000 against a 95 % target: the one-sided 95 % lower bound clears it.
/// let lower = wilson(970, 1000, 0.90)?.lo;
/// assert!(lower > 0.95);
/// # Ok::<(), oloproof_stats::StatsError>(())
/// ```
pub fn wilson(k: u64, n: u64, confidence: f64) -> Result<Interval, StatsError> {
    check_proportion(k, n, confidence)?;
    let z = Normal::standard().inverse_cdf(0.5 + 0.5 * confidence);
    let (kf, nf) = (k as f64, n as f64);
    let p = kf / nf;
    let q = 1.0 - p;
    let z2 = z * z;
    let denominator = 2.0 * (nf + z2);
    let center = (2.0 * nf * p + z2) / denominator;
    let half = z * (z2 + 4.0 * nf * p * q).sqrt() / denominator;
    let lo = if k == 0 {
        0.0
    } else {
        (center - half).clamp(0.0, 1.0)
    };
    let hi = if k == n {
        1.0
    } else {
        (center + half).clamp(0.0, 1.0)
    };
    Ok(Interval { lo, hi })
}

fn check_proportion(k: u64, n: u64, confidence: f64) -> Result<(), StatsError> {
    check_confidence(confidence)?;
    if n == 0 {
        return Err(StatsError::EmptySample);
    }
    if k > n {
        return Err(StatsError::SuccessesExceedTrials {
            successes: k,
            trials: n,
        });
    }
    Ok(())
}

/// The `q` quantile of Beta(a, b) for `0 < q < 1`, `a, b > 0`: statrs's AS 109 estimate,
/// polished by Newton steps on `I_x(a, b) − q` kept inside a shrinking bisection bracket.
fn beta_quantile(a: f64, b: f64, q: f64) -> f64 {
    let start = Beta::new(a, b).map_or(0.5, |beta| beta.inverse_cdf(q));
    let ln_norm = ln_beta(a, b);
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    let mut x = if start > 0.0 && start < 1.0 {
        start
    } else {
        0.5
    };
    for _ in 0..100 {
        let f = beta_reg(a, b, x) - q;
        if f == 0.0 {
            return x;
        }
        if f > 0.0 {
            hi = x;
        } else {
            lo = x;
        }
        let ln_density = (a - 1.0) * x.ln() + (b - 1.0) * (1.0 - x).ln() - ln_norm;
        let newton = x - f / ln_density.exp();
        let next = if newton > lo && newton < hi && newton.is_finite() {
            newton
        } else {
            0.5 * (lo + hi)
        };
        if (next - x).abs() <= 4.0 * f64::EPSILON * x.abs() || hi - lo <= f64::EPSILON * hi {
            return next;
        }
        x = next;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    fn percent(ci: Interval) -> (f64, f64) {
        let ci = ci.round_outward(0.001);
        (ci.lo * 100.0, ci.hi * 100.0)
    }

    /// The seed's table: 95 % Clopper–Pearson, rounded outward to 0.1 points.
    #[test]
    fn pinned_seed_numbers() {
        let ci = clopper_pearson(9, 13, 0.95).unwrap().round_outward(0.001);
        assert_eq!(ci, Interval::new(0.385, 0.910));
        let (lo, _) = percent(clopper_pearson(12, 13, 0.95).unwrap());
        assert!((lo - 63.9).abs() < 1e-9, "{lo}");
        let ci = clopper_pearson(13, 13, 0.95).unwrap().round_outward(0.001);
        assert_eq!(ci, Interval::new(0.752, 1.0));
    }

    #[test]
    fn exact_endpoints() {
        let ci = clopper_pearson(0, 10, 0.95).unwrap();
        assert_eq!(ci.lo, 0.0);
        // hi = 1 − (α/2)^(1/n) when k = 0.
        assert!((ci.hi - (1.0 - 0.025_f64.powf(0.1))).abs() < 1e-14);
        let ci = clopper_pearson(10, 10, 0.95).unwrap();
        assert_eq!(ci.hi, 1.0);
        assert!((ci.lo - 0.025_f64.powf(0.1)).abs() < 1e-14);
        let ci = clopper_pearson(1, 1, 0.95).unwrap();
        assert!((ci.lo - 0.025).abs() < 1e-15 && ci.hi == 1.0);
    }

    #[test]
    fn known_values() {
        // R: binom.test(9, 13)$conf.int → 0.3857383 0.9090796
        let ci = clopper_pearson(9, 13, 0.95).unwrap();
        assert!((ci.lo - 0.385_738_3).abs() < 1e-7 && (ci.hi - 0.909_079_6).abs() < 1e-7);
        // Symmetry: the interval for n − k is the mirror image.
        let a = clopper_pearson(3, 17, 0.9).unwrap();
        let b = clopper_pearson(14, 17, 0.9).unwrap();
        assert!((a.lo - (1.0 - b.hi)).abs() < 1e-14 && (a.hi - (1.0 - b.lo)).abs() < 1e-14);
    }

    #[test]
    fn large_n_and_extreme_confidence() {
        let ci = clopper_pearson(1, 1_000_000, 0.999).unwrap();
        assert!(ci.lo > 0.0 && ci.lo < 1e-8 && ci.hi < 1e-4);
        let ci = clopper_pearson(500_000, 1_000_000, 0.5).unwrap();
        assert!(ci.lo < 0.5 && ci.hi > 0.5 && ci.width() < 0.001);
        let ci = clopper_pearson(5, 10, 1e-6).unwrap();
        assert!(ci.contains(0.5));
    }

    #[test]
    fn errors_instead_of_nan() {
        assert_eq!(clopper_pearson(0, 0, 0.95), Err(StatsError::EmptySample));
        assert_eq!(wilson(0, 0, 0.95), Err(StatsError::EmptySample));
        assert_eq!(
            clopper_pearson(3, 2, 0.95),
            Err(StatsError::SuccessesExceedTrials {
                successes: 3,
                trials: 2
            })
        );
        assert!(matches!(
            wilson(1, 2, 1.0),
            Err(StatsError::InvalidConfidence { .. })
        ));
    }

    #[test]
    fn wilson_known_values() {
        // Wilson (1927) for 9/13 at 95 % (z = 1.959963984540054).
        let ci = wilson(9, 13, 0.95).unwrap();
        let z: f64 = 1.959_963_984_540_054;
        let (n, p) = (13.0, 9.0 / 13.0);
        let center = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
        let half = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
        assert!((ci.lo - (center - half)).abs() < 1e-12);
        assert!((ci.hi - (center + half)).abs() < 1e-12);
        let ci = wilson(0, 20, 0.95).unwrap();
        assert_eq!(ci.lo, 0.0);
        assert!(ci.hi > 0.1);
        let ci = wilson(20, 20, 0.95).unwrap();
        assert_eq!(ci.hi, 1.0);
    }

    #[test]
    fn wilson_is_narrower_than_clopper_pearson() {
        for (k, n) in [(1, 10), (5, 10), (9, 13), (50, 100)] {
            let w = wilson(k, n, 0.95).unwrap();
            let cp = clopper_pearson(k, n, 0.95).unwrap();
            assert!(w.width() < cp.width(), "{k}/{n}");
        }
    }

    #[test]
    fn beta_quantile_inverts_beta_reg() {
        // Clopper–Pearson only needs a, b ≥ 1.
        for &(a, b) in &[
            (1.0, 1.0),
            (1.0, 7.0),
            (2.0, 30.0),
            (300.0, 2.0),
            (2e3, 3e3),
        ] {
            for &q in &[1e-10, 0.025, 0.5, 0.975, 1.0 - 1e-10] {
                let x = beta_quantile(a, b, q);
                // Absolute: statrs's beta_reg jitters by ~1e-11 for a, b ≈ 1e5 (see clopper_pearson).
                assert!((beta_reg(a, b, x) - q).abs() <= 1e-12, "{a} {b} {q}");
            }
        }
    }
}
