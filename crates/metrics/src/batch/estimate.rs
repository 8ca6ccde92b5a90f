//! The headline value of a batch metric and its 95 % interval: one [`Estimate`] type, and the
//! one mean, proportion, paired-difference and ratio helpers every metric uses.
//!
//! No NaN: an undefined value (no item the metric applies to) is `None`, and an interval that
//! cannot be computed (fewer than two items, `n = 0`) is absent.

use serde_json::{json, Value};

use super::error::{unless_insufficient, MetricError};

/// Bootstrap resamples of a mean.
pub const MEAN_RESAMPLES: usize = 10_000;
/// Bootstrap resamples of a statistic recomputed from summed counts (a ratio of sums, an F1).
pub const RATIO_RESAMPLES: usize = 1000;
/// How [`Estimate::mean`] computes its interval.
pub const MEAN_METHOD: &str = "percentile bootstrap over items, seed 0, 10000 resamples";
/// How [`Estimate::proportion`] computes its interval.
pub const PROPORTION_METHOD: &str = "Clopper-Pearson exact binomial";
/// How [`Estimate::paired_difference`] computes its interval.
pub const PAIRED_METHOD: &str = "paired bootstrap of the mean difference, seed 0, 10000 resamples";

/// A two-sided 95 % interval and how it was computed.
#[derive(Debug, Clone, PartialEq)]
pub struct Interval {
    /// Lower bound.
    pub lo: f64,
    /// Upper bound.
    pub hi: f64,
    /// The method, as printed (`Clopper-Pearson exact binomial`, …).
    pub method: String,
}

/// A metric's headline value with its optional interval.
///
/// `value` is `None` when the metric is undefined on the input (no item it applies to); it is
/// never NaN or infinite ([`Estimate::point`] maps a non-finite number to `None`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Estimate {
    /// The value, `None` when undefined.
    pub value: Option<f64>,
    /// Its 95 % interval, where one makes sense and can be computed.
    pub interval: Option<Interval>,
}

impl Estimate {
    /// A value without an interval (a non-finite number is taken as undefined).
    pub fn point(value: Option<f64>) -> Self {
        Estimate {
            value: value.filter(|v| v.is_finite()),
            interval: None,
        }
    }

    /// This estimate with the interval `bounds` (`[lo, hi]`) computed by `method`, or without
    /// one when `bounds` is `None`.
    pub fn with_interval(mut self, bounds: Option<[f64; 2]>, method: &str) -> Self {
        self.interval = bounds.map(|[lo, hi]| Interval {
            lo,
            hi,
            method: method.to_string(),
        });
        self
    }

    /// The arithmetic mean of `values` (`None` when empty) with a 95 % percentile bootstrap
    /// interval over items (`oloproof_stats::percentile_bootstrap_mean_grouped`, seed 0,
    /// [`MEAN_RESAMPLES`] resamples) when there are at least two values: one value has no
    /// sampling variability to resample, so it gets no interval rather than a zero-width one.
    pub fn mean(values: &[f64]) -> Result<Self, MetricError> {
        let bounds = if values.len() >= 2 {
            unless_insufficient(oloproof_stats::percentile_bootstrap_mean_grouped(
                values,
                MEAN_RESAMPLES,
                0,
                0.95,
            ))?
            .map(|ci| [ci.lo, ci.hi])
        } else {
            None
        };
        Ok(Estimate::point(mean(values)).with_interval(bounds, MEAN_METHOD))
    }

    /// The proportion `k / n` (`None` when `n = 0`) with its Clopper-Pearson exact 95 %
    /// interval. Errors when `k > n`.
    pub fn proportion(k: u64, n: u64) -> Result<Self, MetricError> {
        let value = (n > 0).then(|| k as f64 / n as f64);
        Ok(Estimate::point(value).with_interval(proportion_interval(k, n)?, PROPORTION_METHOD))
    }

    /// The mean paired difference `mean(a − b)` (`None` when empty) with the interval of
    /// `oloproof_stats::paired_bootstrap_test` (seed 0, 10000 resamples; at least two pairs),
    /// and that test's two-sided p-value.
    pub fn paired_difference(a: &[f64], b: &[f64]) -> Result<(Self, Option<f64>), MetricError> {
        let diff: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
        let test = unless_insufficient(oloproof_stats::paired_bootstrap_test(
            a,
            b,
            MEAN_RESAMPLES,
            0,
            0.95,
        ))?;
        let estimate = Estimate::point(mean(&diff)).with_interval(
            test.as_ref().map(|r| [r.interval.lo, r.interval.hi]),
            PAIRED_METHOD,
        );
        Ok((estimate, test.map(|r| r.p_value)))
    }
}

/// The arithmetic mean, `None` for an empty slice.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The Clopper-Pearson exact 95 % interval of `k / n`: `None` when `n = 0`, an error when
/// `k > n`.
pub fn proportion_interval(k: u64, n: u64) -> Result<Option<[f64; 2]>, MetricError> {
    Ok(unless_insufficient(oloproof_stats::clopper_pearson(k, n, 0.95))?.map(|ci| [ci.lo, ci.hi]))
}

/// `{"value": k/n, "interval": [lo, hi], "k": k, "n": n}` for a secondary rate (value and
/// interval `null` when `n = 0`).
pub fn rate_json(k: u64, n: u64) -> Result<Value, MetricError> {
    let ci = proportion_interval(k, n)?;
    Ok(json!({"value": (n > 0).then(|| k as f64 / n as f64), "interval": ci, "k": k, "n": n}))
}

/// 95 % percentile bootstrap over `n` items (`oloproof_stats::percentile_bootstrap_statistic`,
/// seed 0, [`RATIO_RESAMPLES`] resamples) of `statistic`, a function of the resampled item
/// indices; resamples where it is undefined are skipped. `None` with fewer than two items.
pub fn bootstrap_statistic(
    n: usize,
    statistic: &dyn Fn(&[usize]) -> Option<f64>,
) -> Result<Option<[f64; 2]>, MetricError> {
    if n < 2 {
        return Ok(None);
    }
    Ok(
        unless_insufficient(oloproof_stats::percentile_bootstrap_statistic(
            n,
            RATIO_RESAMPLES,
            0,
            0.95,
            statistic,
        ))?
        .flatten()
        .map(|ci| [ci.lo, ci.hi]),
    )
}

/// 95 % bootstrap interval of the ratio of sums `Σ num / Σ den` over items (see
/// [`bootstrap_statistic`]); resamples with a zero denominator are skipped.
pub fn ratio_of_sums_interval(num: &[f64], den: &[f64]) -> Result<Option<[f64; 2]>, MetricError> {
    bootstrap_statistic(num.len(), &|idx: &[usize]| {
        let (a, b) = idx
            .iter()
            .fold((0.0, 0.0), |(a, b), &i| (a + num[i], b + den[i]));
        (b > 0.0).then(|| a / b)
    })
}

/// `Option<f64>` as JSON (`null` when undefined).
pub fn opt(x: Option<f64>) -> Value {
    x.map_or(Value::Null, |v| json!(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_input_is_undefined_not_nan() {
        let m = Estimate::mean(&[]).unwrap();
        assert_eq!(m.value, None);
        assert_eq!(m.interval, None);
        let p = Estimate::proportion(0, 0).unwrap();
        assert_eq!(p.value, None);
        assert_eq!(p.interval, None);
        assert_eq!(Estimate::point(Some(f64::NAN)).value, None);
        assert_eq!(Estimate::point(Some(f64::INFINITY)).value, None);
    }

    /// Two of the three copies this helper replaced gave one item the zero-width interval
    /// [x, x] (the bootstrap of a constant); one value has no sampling variability to
    /// resample, so it gets no interval, as the third copy did.
    #[test]
    fn one_value_has_no_interval() {
        let one = Estimate::mean(&[0.4]).unwrap();
        assert_eq!(one.value, Some(0.4));
        assert_eq!(one.interval, None);
        let two = Estimate::mean(&[0.0, 1.0]).unwrap();
        assert_eq!(two.value, Some(0.5));
        let ci = two.interval.unwrap();
        assert!(ci.lo <= 0.5 && 0.5 <= ci.hi);
        assert_eq!(ci.method, MEAN_METHOD);
    }

    #[test]
    fn proportion_has_the_exact_interval() {
        let p = Estimate::proportion(1, 2).unwrap();
        assert_eq!(p.value, Some(0.5));
        let ci = p.interval.unwrap();
        // scipy.stats.binomtest(1, 2).proportion_ci(method="exact")
        assert!((ci.lo - 0.012579117).abs() < 1e-6);
        assert!((ci.hi - 0.987420883).abs() < 1e-6);
        assert!(Estimate::proportion(3, 2).is_err());
    }

    #[test]
    fn paired_difference_needs_two_pairs_for_an_interval() {
        let (e, p) = Estimate::paired_difference(&[1.0], &[0.0]).unwrap();
        assert_eq!(e.value, Some(1.0));
        assert_eq!((e.interval, p), (None, None));
        let (e, p) = Estimate::paired_difference(&[1.0, 0.5, 1.0], &[0.0, 0.5, 0.5]).unwrap();
        assert!(e.interval.is_some() && p.is_some());
    }
}
