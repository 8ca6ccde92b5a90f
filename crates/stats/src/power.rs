//! Power and sample size for two-sided tests of a difference in proportions or in means, as
//! statsmodels' `statsmodels.stats.power` computes them.
//!
//! - **Proportions, unpaired** ([`Design::Proportions`]): the z-test of `NormalIndPower` with
//!   Cohen's effect size `h = 2·asin(√p₁) − 2·asin(√p₂)` ([`cohen_h`], statsmodels'
//!   `proportion_effectsize`). With `n₂ = ratio·n₁` and `n = 1/(1/n₁ + 1/n₂)`, power is
//!   `Φ̄(z_{1−α/2} − h√n) + Φ(z_{α/2} − h√n)`.
//! - **Means, unpaired** ([`Design::MeansIndependent`]): the pooled two-sample t-test of
//!   `TTestIndPower` with Cohen's `d`: `df = n₁ + n₂ − 2`, noncentrality `d·√n` with `n` as
//!   above, power `1 − F_{df,δ}(t_{1−α/2}) + F_{df,δ}(t_{α/2})` where `F_{df,δ}` is the
//!   noncentral t distribution function (scipy's `nctdtr`).
//! - **Paired** ([`Design::Paired`]): the one-sample t-test on differences of `TTestPower`
//!   (`df = n − 1`, `δ = d·√n`), `d` being the mean difference over its standard deviation.
//!   For paired pass/fail outcomes (two systems on the same cases) use
//!   [`paired_proportions_effect_size`]: the paired t-test on the ±1/0 differences, whose
//!   `d = (p₁₀ − p₀₁)/√(p₁₀ + p₀₁ − (p₁₀ − p₀₁)²)` comes from the discordant shares. This is
//!   the large-sample equivalent of McNemar's test expressed as statsmodels' paired t power; it
//!   is documented here rather than being a statsmodels function of its own.
//!
//! [`sample_size`] solves `power(n) = target` for `n₁` (per group; the number of pairs when
//! paired) by bisection to machine precision on `[2, ∞)`, the bracket statsmodels'
//! `solve_power` searches. statsmodels stops its root finder at `xtol = 1e-5`, so its answers
//! agree with these to about 1e-5; round up for a plan.
//!
//! The noncentral t distribution function is Lenth's algorithm AS 243 (*Applied Statistics* 38,
//! 1989) with a tighter error bound (1e-15).
//!
//! ```
//! use oloproof_stats::power::{cohen_h, power, sample_size, Design};
//!
//! // 70 % vs 80 % pass rate, two-sided α = 0.05, 80 % power, equal groups.
//! let h = cohen_h(0.8, 0.7);
//! let n = sample_size(Design::Proportions { ratio: 1.0 }, h, 0.05, 0.8)?;
//! assert_eq!(n.ceil(), 292.0);
//! assert!((power(Design::Proportions { ratio: 1.0 }, h, n, 0.05)? - 0.8).abs() < 1e-12);
//!
//! // Means: Cohen's d = 0.5, two-sided α = 0.05, 80 % power: 64 per group.
//! let n = sample_size(Design::MeansIndependent { ratio: 1.0 }, 0.5, 0.05, 0.8)?;
//! assert_eq!(n.ceil(), 64.0);
//! # Ok::<(), oloproof_stats::power::PowerError>(())
//! ```

use statrs::distribution::{Continuous, ContinuousCDF, Normal, StudentsT};
use statrs::function::beta::beta_reg;
use statrs::function::gamma::ln_gamma;

/// Why a power computation is undefined.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PowerError {
    /// `alpha` or the target power is not strictly between 0 and 1.
    #[error("{what} must be strictly between 0 and 1, got {value}")]
    OutOfUnitInterval {
        /// `alpha` or `power`.
        what: &'static str,
        /// The value given.
        value: f64,
    },
    /// A sample size below what the test needs, a non-positive ratio, or a non-finite value.
    #[error("{what}: {value} is not allowed ({why})")]
    BadValue {
        /// The argument.
        what: &'static str,
        /// The value given.
        value: f64,
        /// What is required.
        why: &'static str,
    },
    /// An effect size of 0 cannot be detected.
    #[error("an effect size of 0 cannot be detected")]
    ZeroEffect,
    /// The smallest sample size the test accepts (2) already exceeds the target power.
    #[error("the target power is reached below the smallest sample size (2)")]
    BelowMinimum,
}

/// The test whose power is computed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Design {
    /// Two independent proportions, z-test on Cohen's h (statsmodels' `NormalIndPower`);
    /// `ratio = n₂/n₁`.
    Proportions {
        /// Size of group 2 relative to group 1.
        ratio: f64,
    },
    /// Two independent means, pooled t-test on Cohen's d (statsmodels' `TTestIndPower`);
    /// `ratio = n₂/n₁`.
    MeansIndependent {
        /// Size of group 2 relative to group 1.
        ratio: f64,
    },
    /// Paired differences, one-sample t-test (statsmodels' `TTestPower`).
    Paired,
}

/// Cohen's h between two proportions: `2·asin(√p₁) − 2·asin(√p₂)` (statsmodels'
/// `proportion_effectsize(p1, p2)`).
pub fn cohen_h(p1: f64, p2: f64) -> f64 {
    2.0 * (p1.sqrt().asin() - p2.sqrt().asin())
}

/// Cohen's d of the paired ±1/0 differences of two pass/fail outcomes from the discordant
/// shares: `p10` (first passes, second fails) and `p01` (the reverse). See the module
/// documentation. `None` when there is no discordance.
pub fn paired_proportions_effect_size(p10: f64, p01: f64) -> Option<f64> {
    let mean = p10 - p01;
    let var = p10 + p01 - mean * mean;
    (var > 0.0).then(|| mean / var.sqrt())
}

/// `erfc(z)` for `z ≥ 0`: the series `erf(z) = 2/√π·e^{−z²}·Σ 2ⁿz^{2n+1}/(1·3···(2n+1))` below
/// 2, the continued fraction `erfc(z) = e^{−z²}/√π · 1/(z + (1/2)/(z + 1/(z + (3/2)/(z + …))))`
/// (modified Lentz) from 2 on. Both to about 1e-16; statrs' `erfc` is off by up to ~1e-11, too
/// much to reproduce scipy's power values.
fn erfc_nonneg(z: f64) -> f64 {
    let two_over_sqrt_pi = std::f64::consts::FRAC_2_SQRT_PI;
    if z < 2.0 {
        let mut term = z;
        let mut sum = z;
        let z2 = z * z;
        for n in 1..200 {
            term *= 2.0 * z2 / (2 * n + 1) as f64;
            sum += term;
            if term < 1e-17 * sum {
                break;
            }
        }
        1.0 - two_over_sqrt_pi * (-z2).exp() * sum
    } else {
        // Lentz on b0 + a1/(b1 + a2/(b2 + …)) with b = z, a_k = k/2.
        let tiny = 1e-300;
        let mut f = z;
        let mut c = z;
        let mut d = 0.0;
        for k in 1..500 {
            let a = k as f64 / 2.0;
            d = z + a * d;
            if d.abs() < tiny {
                d = tiny;
            }
            c = z + a / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let delta = c * d;
            f *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        (-z * z).exp() / (std::f64::consts::PI.sqrt() * f)
    }
}

/// Standard normal distribution function `Φ(x)`.
fn norm_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let tail = 0.5 * erfc_nonneg(z);
    if x < 0.0 {
        tail
    } else {
        1.0 - tail
    }
}

/// Standard normal quantile: statrs' inverse refined by Newton steps on [`norm_cdf`].
fn norm_ppf(p: f64) -> f64 {
    let Ok(normal) = Normal::new(0.0, 1.0) else {
        return f64::NAN;
    };
    let mut x = normal.inverse_cdf(p);
    for _ in 0..4 {
        let density = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
        if density <= 0.0 {
            break;
        }
        x -= (norm_cdf(x) - p) / density;
    }
    x
}

/// The upper `p` quantile of Student's t with `df` degrees of freedom, refined by Newton steps
/// (statrs' inverse as the start).
fn t_isf(p: f64, df: f64) -> f64 {
    let Ok(t) = StudentsT::new(0.0, 1.0, df) else {
        return f64::NAN;
    };
    let mut x = t.inverse_cdf(1.0 - p);
    for _ in 0..8 {
        let f = t.sf(x) - p;
        let d = t.pdf(x);
        if d <= 0.0 || !f.is_finite() {
            break;
        }
        let step = f / d;
        x += step;
        if step.abs() <= 1e-15 * x.abs().max(1.0) {
            break;
        }
    }
    x
}

/// Distribution function of the noncentral t distribution, `P(T ≤ t)` with `df` degrees of
/// freedom and noncentrality `delta` (scipy's `nctdtr(df, delta, t)`), by AS 243.
pub fn noncentral_t_cdf(t: f64, df: f64, delta: f64) -> f64 {
    if t == 0.0 {
        return norm_cdf(-delta);
    }
    let (tt, del, negate) = if t < 0.0 {
        (-t, -delta, true)
    } else {
        (t, delta, false)
    };
    const ERRMAX: f64 = 1e-15;
    const ITRMAX: usize = 100_000;
    let x = tt * tt / (tt * tt + df);
    let lambda = del * del;
    let mut p = 0.5 * (-0.5 * lambda).exp();
    let mut q = (2.0 / std::f64::consts::PI).sqrt() * p * del;
    let mut s = 0.5 - p;
    let mut a = 0.5;
    let b = 0.5 * df;
    let rxb = (1.0 - x).powf(b);
    let albeta = std::f64::consts::PI.sqrt().ln() + ln_gamma(b) - ln_gamma(0.5 + b);
    let mut xodd = beta_reg(a, b, x);
    let mut godd = 2.0 * rxb * (a * x.ln() - albeta).exp();
    let mut xeven = 1.0 - rxb;
    let mut geven = b * x * rxb;
    let mut tnc = p * xodd + q * xeven;
    let mut en = 1.0;
    for _ in 0..ITRMAX {
        a += 1.0;
        xodd -= godd;
        xeven -= geven;
        godd *= x * (a + b - 1.0) / a;
        geven *= x * (a + b - 0.5) / (a + 0.5);
        p *= lambda / (2.0 * en);
        q *= lambda / (2.0 * en + 1.0);
        s -= p;
        en += 1.0;
        tnc += p * xodd + q * xeven;
        let errbd = 2.0 * s * (xodd - godd);
        if errbd.abs() <= ERRMAX && en > lambda / 2.0 {
            break;
        }
    }
    tnc += norm_cdf(-del);
    let tnc = tnc.clamp(0.0, 1.0);
    if negate {
        1.0 - tnc
    } else {
        tnc
    }
}

/// statsmodels' `ttest_power(d, nobs, alpha, df, alternative="two-sided")`.
fn ttest_power(d: f64, nobs: f64, alpha: f64, df: f64) -> f64 {
    let crit = t_isf(alpha / 2.0, df);
    let nc = d * nobs.sqrt();
    (1.0 - noncentral_t_cdf(crit, df, nc)) + noncentral_t_cdf(-crit, df, nc)
}

/// statsmodels' `normal_power(d, nobs, alpha, alternative="two-sided")`.
fn normal_power(d: f64, nobs: f64, alpha: f64) -> f64 {
    let crit_upp = -norm_ppf(alpha / 2.0);
    let crit_low = norm_ppf(alpha / 2.0);
    let shift = d * nobs.sqrt();
    norm_cdf(-(crit_upp - shift)) + norm_cdf(crit_low - shift)
}

fn check_unit(what: &'static str, value: f64) -> Result<(), PowerError> {
    if value > 0.0 && value < 1.0 {
        Ok(())
    } else {
        Err(PowerError::OutOfUnitInterval { what, value })
    }
}

fn check_design(design: Design) -> Result<(), PowerError> {
    match design {
        Design::Proportions { ratio } | Design::MeansIndependent { ratio }
            if !(ratio > 0.0 && ratio.is_finite()) =>
        {
            Err(PowerError::BadValue {
                what: "ratio",
                value: ratio,
                why: "must be positive and finite",
            })
        }
        _ => Ok(()),
    }
}

/// Power of the two-sided test of `design` at level `alpha` with effect size `effect`
/// (Cohen's h for proportions, Cohen's d for means) and `nobs1` observations in group 1 (pairs
/// when paired), as statsmodels' `power(effect_size, nobs1, alpha, ratio)`. Errors on `alpha`
/// outside (0, 1), a non-finite effect, or `nobs1` too small for the test (t-tests need more
/// than 1 degree of freedom's worth: `nobs1 > 1`).
pub fn power(design: Design, effect: f64, nobs1: f64, alpha: f64) -> Result<f64, PowerError> {
    check_unit("alpha", alpha)?;
    check_design(design)?;
    if !effect.is_finite() {
        return Err(PowerError::BadValue {
            what: "effect size",
            value: effect,
            why: "must be finite",
        });
    }
    if !(nobs1 > 1.0 && nobs1.is_finite()) {
        return Err(PowerError::BadValue {
            what: "nobs1",
            value: nobs1,
            why: "must be finite and greater than 1",
        });
    }
    Ok(match design {
        Design::Proportions { ratio } => {
            let nobs2 = nobs1 * ratio;
            normal_power(effect, 1.0 / (1.0 / nobs1 + 1.0 / nobs2), alpha)
        }
        Design::MeansIndependent { ratio } => {
            let nobs2 = nobs1 * ratio;
            let df = nobs1 - 1.0 + nobs2 - 1.0;
            ttest_power(effect, 1.0 / (1.0 / nobs1 + 1.0 / nobs2), alpha, df)
        }
        Design::Paired => ttest_power(effect, nobs1, alpha, nobs1 - 1.0),
    })
}

/// The (fractional) `nobs1` at which [`power`] equals `target` (statsmodels'
/// `solve_power(effect_size, nobs1=None, alpha, power, ratio)`), searched on `[2, ∞)`; round
/// it up for a plan. Errors on a zero effect, `alpha` or `target` outside (0, 1), or when the
/// power at 2 already exceeds the target.
pub fn sample_size(
    design: Design,
    effect: f64,
    alpha: f64,
    target: f64,
) -> Result<f64, PowerError> {
    check_unit("power", target)?;
    if effect == 0.0 {
        return Err(PowerError::ZeroEffect);
    }
    let f = |n: f64| power(design, effect, n, alpha).map(|p| p - target);
    let mut lo = 2.0;
    if f(lo)? >= 0.0 {
        return Err(PowerError::BelowMinimum);
    }
    let mut hi = 50.0;
    while f(hi)? < 0.0 {
        lo = hi;
        hi *= 10.0;
        if hi > 1e15 {
            return Err(PowerError::BadValue {
                what: "effect size",
                value: effect,
                why: "too small: more than 1e15 observations needed",
            });
        }
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if f(mid)? < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(0.5 * (lo + hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noncentral_t_against_scipy() {
        // scipy.special.nctdtr(df, nc, t)
        let cases = [
            (10.0, 1.0, 2.0, 0.8076115625303752),
            (5.0, -0.5, 1.5, 0.9607323253380313),
            (30.0, 3.0, -1.0, 3.75076354935703e-05),
            (3.5, 2.0, 2.0, 0.4501568528395969),
        ];
        for (df, nc, t, expected) in cases {
            let ours = noncentral_t_cdf(t, df, nc);
            assert!(
                (ours - expected).abs() < 1e-12,
                "{df} {nc} {t}: {ours} vs {expected}"
            );
        }
    }

    #[test]
    fn normal_against_scipy() {
        // scipy.stats.norm.cdf / ppf
        assert!((norm_cdf(-1.0) - 0.15865525393145707).abs() < 1e-15);
        assert!((norm_cdf(-5.0) / 2.866515718791939e-07 - 1.0).abs() < 1e-14);
        assert!((norm_cdf(0.3) - 0.6179114221889527).abs() < 1e-15);
        assert!((norm_ppf(0.025) + 1.959963984540054).abs() < 1e-14);
    }

    #[test]
    fn errors() {
        assert_eq!(
            sample_size(Design::Paired, 0.0, 0.05, 0.8),
            Err(PowerError::ZeroEffect)
        );
        assert!(matches!(
            power(Design::Paired, 0.5, 10.0, 1.5),
            Err(PowerError::OutOfUnitInterval { .. })
        ));
        assert_eq!(
            sample_size(Design::Paired, 50.0, 0.05, 0.8),
            Err(PowerError::BelowMinimum)
        );
        assert_eq!(paired_proportions_effect_size(0.0, 0.0), None);
    }
}
