//! Sample quantiles exactly as numpy's `np.quantile(a, q, method=…)` (numpy 2.x), for latency
//! percentiles (p50/p95/p99 per pipeline stage, freshness lag, cost per request).
//!
//! The default is numpy's `linear` method (Hyndman and Fan's definition 7, also R's default):
//! with the sample sorted `x₀ ≤ … ≤ x_{n−1}` and `h = (n − 1)·q`, the quantile is
//! `x_⌊h⌋ + (h − ⌊h⌋)(x_⌊h⌋+1 − x_⌊h⌋)`. The other methods of numpy are offered
//! ([`QuantileMethod`]), each transcribed from numpy's `_QuantileMethods`, including numpy's
//! interpolation formula (`_lerp`: `a + (b − a)·γ`, or `b − (b − a)(1 − γ)` when `γ ≥ 0.5`) and
//! its bounds (a virtual index below 0 takes the minimum, at or above `n − 1` the maximum).
//! R. J. Hyndman and Y. Fan, "Sample quantiles in statistical packages", *The American
//! Statistician* 50 (1996).
//!
//! ```
//! use oloproof_stats::quantile::{quantile, QuantileMethod};
//!
//! let ms = [120.0, 80.0, 95.0, 300.0, 110.0];
//! assert_eq!(quantile(&ms, 0.5, QuantileMethod::Linear)?, 110.0);
//! assert_eq!(quantile(&ms, 0.95, QuantileMethod::Linear)?, 264.0);
//! assert_eq!(quantile(&ms, 0.95, QuantileMethod::Lower)?, 120.0);
//! # Ok::<(), oloproof_stats::quantile::QuantileError>(())
//! ```

/// Errors of [`quantile`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum QuantileError {
    /// No values.
    #[error("no values")]
    Empty,
    /// A value is NaN or infinite.
    #[error("value {0} is not finite")]
    NotFinite(f64),
    /// The quantile is outside `[0, 1]`.
    #[error("quantile {0} is outside [0, 1]")]
    BadQuantile(f64),
}

/// numpy's quantile methods (`np.quantile(..., method=NAME)`), named as numpy names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QuantileMethod {
    /// H&F 1: `x` at `⌈nq⌉ − 1`.
    InvertedCdf,
    /// H&F 2: as `inverted_cdf`, averaging at discontinuities.
    AveragedInvertedCdf,
    /// H&F 3: nearest order statistic, the even one at ties.
    ClosestObservation,
    /// H&F 4: `h = nq − 1`.
    InterpolatedInvertedCdf,
    /// H&F 5: `h = nq − 1/2`.
    Hazen,
    /// H&F 6: `h = (n + 1)q − 1`.
    Weibull,
    /// H&F 7, numpy's default: `h = (n − 1)q`.
    #[default]
    Linear,
    /// H&F 8: `h = (n + 1/3)q − 2/3`.
    MedianUnbiased,
    /// H&F 9: `h = (n + 1/4)q − 5/8`.
    NormalUnbiased,
    /// `x` at `⌊(n − 1)q⌋`.
    Lower,
    /// `x` at `⌈(n − 1)q⌉`.
    Higher,
    /// Mean of `lower` and `higher`.
    Midpoint,
    /// `x` at `(n − 1)q` rounded half to even.
    Nearest,
}

impl QuantileMethod {
    /// Every method, in numpy's order.
    pub const ALL: [QuantileMethod; 13] = [
        QuantileMethod::InvertedCdf,
        QuantileMethod::AveragedInvertedCdf,
        QuantileMethod::ClosestObservation,
        QuantileMethod::InterpolatedInvertedCdf,
        QuantileMethod::Hazen,
        QuantileMethod::Weibull,
        QuantileMethod::Linear,
        QuantileMethod::MedianUnbiased,
        QuantileMethod::NormalUnbiased,
        QuantileMethod::Lower,
        QuantileMethod::Higher,
        QuantileMethod::Midpoint,
        QuantileMethod::Nearest,
    ];

    /// numpy's name of the method.
    pub fn name(self) -> &'static str {
        match self {
            QuantileMethod::InvertedCdf => "inverted_cdf",
            QuantileMethod::AveragedInvertedCdf => "averaged_inverted_cdf",
            QuantileMethod::ClosestObservation => "closest_observation",
            QuantileMethod::InterpolatedInvertedCdf => "interpolated_inverted_cdf",
            QuantileMethod::Hazen => "hazen",
            QuantileMethod::Weibull => "weibull",
            QuantileMethod::Linear => "linear",
            QuantileMethod::MedianUnbiased => "median_unbiased",
            QuantileMethod::NormalUnbiased => "normal_unbiased",
            QuantileMethod::Lower => "lower",
            QuantileMethod::Higher => "higher",
            QuantileMethod::Midpoint => "midpoint",
            QuantileMethod::Nearest => "nearest",
        }
    }
}

impl std::str::FromStr for QuantileMethod {
    type Err = crate::error::UnknownQuantileMethod;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        QuantileMethod::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = QuantileMethod::ALL.iter().map(|m| m.name()).collect();
                crate::error::UnknownQuantileMethod {
                    name: s.to_string(),
                    expected: names.join(", "),
                }
            })
    }
}

/// numpy's `_lerp`.
fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let diff = b - a;
    if t >= 0.5 {
        b - diff * (1.0 - t)
    } else {
        a + diff * t
    }
}

/// numpy's `_discrete_interpolation_to_boundaries`: `previous` where `cond(gamma, index)`,
/// else `previous + 1`, clipped below at 0.
fn discrete(index: f64, cond: impl Fn(f64, f64) -> bool) -> i64 {
    let previous = index.floor();
    let gamma = index - previous;
    let chosen = if cond(gamma, index) {
        previous
    } else {
        previous + 1.0
    };
    (chosen as i64).max(0)
}

/// The `q`-quantile of an already sorted, non-empty, finite sample.
pub(crate) fn quantile_sorted(sorted: &[f64], q: f64, method: QuantileMethod) -> f64 {
    let n = sorted.len();
    let nf = n as f64;
    let at = |i: i64| sorted[(i.max(0) as usize).min(n - 1)];
    let virtual_index = |alpha: f64, beta: f64| nf * q + (alpha + q * (1.0 - alpha - beta)) - 1.0;
    use QuantileMethod as M;
    let continuous = match method {
        M::InvertedCdf => return at(discrete(nf * q - 1.0, |g, _| g == 0.0)),
        M::ClosestObservation => {
            return at(discrete(nf * q - 1.0 - 0.5, |g, i| {
                g == 0.0 && i.floor().rem_euclid(2.0) == 1.0
            }))
        }
        M::Lower => return at(((nf - 1.0) * q).floor() as i64),
        M::Higher => return at(((nf - 1.0) * q).ceil() as i64),
        M::Nearest => return at(((nf - 1.0) * q).round_ties_even() as i64),
        M::AveragedInvertedCdf => nf * q - 1.0,
        M::InterpolatedInvertedCdf => virtual_index(0.0, 1.0),
        M::Hazen => virtual_index(0.5, 0.5),
        M::Weibull => virtual_index(0.0, 0.0),
        M::Linear => (nf - 1.0) * q,
        M::MedianUnbiased => virtual_index(1.0 / 3.0, 1.0 / 3.0),
        M::NormalUnbiased => virtual_index(3.0 / 8.0, 3.0 / 8.0),
        M::Midpoint => 0.5 * (((nf - 1.0) * q).floor() + ((nf - 1.0) * q).ceil()),
    };
    let v = continuous;
    // numpy's _get_indexes: out-of-range virtual indexes take the last or first value.
    let (previous, next) = if v >= nf - 1.0 {
        (-1.0, -1.0)
    } else if v < 0.0 {
        (0.0, 0.0)
    } else {
        let p = v.floor();
        (p, p + 1.0)
    };
    let mut gamma = v - previous;
    gamma = match method {
        M::AveragedInvertedCdf => {
            if gamma == 0.0 {
                0.5
            } else {
                1.0
            }
        }
        M::Midpoint => {
            if v % 1.0 == 0.0 {
                0.0
            } else {
                0.5
            }
        }
        _ => gamma,
    };
    let index = |i: f64| {
        if i < 0.0 {
            sorted[n - 1]
        } else {
            sorted[i as usize]
        }
    };
    lerp(index(previous), index(next), gamma)
}

fn check(values: &[f64], qs: &[f64]) -> Result<(), QuantileError> {
    if values.is_empty() {
        return Err(QuantileError::Empty);
    }
    if let Some(&v) = values.iter().find(|v| !v.is_finite()) {
        return Err(QuantileError::NotFinite(v));
    }
    if let Some(&q) = qs.iter().find(|q| !(0.0..=1.0).contains(*q)) {
        return Err(QuantileError::BadQuantile(q));
    }
    Ok(())
}

/// The `q`-quantile (`0 ≤ q ≤ 1`) of `values` by numpy's `method` (see the module
/// documentation); errors on an empty or non-finite sample or `q` outside `[0, 1]`.
pub fn quantile(values: &[f64], q: f64, method: QuantileMethod) -> Result<f64, QuantileError> {
    Ok(quantiles(values, &[q], method)?[0])
}

/// Several quantiles of one sample (sorted once).
pub fn quantiles(
    values: &[f64],
    qs: &[f64],
    method: QuantileMethod,
) -> Result<Vec<f64>, QuantileError> {
    check(values, qs)?;
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    Ok(qs
        .iter()
        .map(|&q| quantile_sorted(&sorted, q, method))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_docstring_examples() {
        let a = [10.0, 7.0, 4.0, 3.0, 2.0, 1.0];
        assert_eq!(quantile(&a, 0.5, QuantileMethod::Linear).unwrap(), 3.5);
        assert_eq!(quantile(&[1.0], 0.99, QuantileMethod::Hazen).unwrap(), 1.0);
        assert_eq!(quantile(&a, 0.5, QuantileMethod::InvertedCdf).unwrap(), 3.0);
        assert_eq!(
            quantile(&a, 0.5, QuantileMethod::AveragedInvertedCdf).unwrap(),
            3.5
        );
        assert_eq!(
            quantile(&[], 0.5, QuantileMethod::Linear),
            Err(QuantileError::Empty)
        );
        assert_eq!(
            quantile(&a, 1.5, QuantileMethod::Linear),
            Err(QuantileError::BadQuantile(1.5))
        );
    }
}
