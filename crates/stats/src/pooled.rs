//! Summaries of a sample kept as (count, mean, spread), and their exact pooling: the sample
//! standard deviation, and the mean and normal interval of several groups pooled together
//! when only each group's count, mean and sample variance were kept (a score history).

use statrs::distribution::{ContinuousCDF, Normal};

use crate::{Interval, StatsError};

/// Sample standard deviation (divisor `n − 1`); `None` below two values.
pub fn sample_std_dev(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
    Some((ss / (n - 1.0)).sqrt())
}

/// One group of a pooled sample: how many values, their mean and sample variance (`n − 1`;
/// ignored for a group of one).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupSummary {
    /// Values in the group (at least 1).
    pub count: u64,
    /// Their mean.
    pub mean: f64,
    /// Their sample variance.
    pub variance: f64,
}

/// The pooled mean of `groups` and, with two or more values in all, the normal interval
/// `mean ± z · s / √N` at `confidence`, where `s²` is the exact sample variance of the union:
/// `(Σ (nᵢ − 1) vᵢ + Σ nᵢ mᵢ² − N m²) / (N − 1)`. `None` without values.
///
/// # Errors
/// [`StatsError`] when `confidence` is not in `(0, 1)` or an input is not finite.
///
/// ```
/// use oloproof_stats::pooled::{pooled_mean_interval, sample_std_dev, GroupSummary};
///
/// let (a, b) = ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]);
/// let group = |v: &[f64]| GroupSummary {
///     count: v.len() as u64,
///     mean: v.iter().sum::<f64>() / v.len() as f64,
///     variance: sample_std_dev(v).unwrap().powi(2),
/// };
/// let (mean, ci) = pooled_mean_interval(&[group(&a), group(&b)], 0.95)?.unwrap();
/// let all = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0];
/// let half = 1.959963984540054 * sample_std_dev(&all).unwrap() / 7f64.sqrt();
/// assert!((mean - 4.0).abs() < 1e-12);
/// assert!((ci.unwrap().lo - (4.0 - half)).abs() < 1e-12);
/// # Ok::<(), oloproof_stats::StatsError>(())
/// ```
pub fn pooled_mean_interval(
    groups: &[GroupSummary],
    confidence: f64,
) -> Result<Option<(f64, Option<Interval>)>, StatsError> {
    crate::error::check_confidence(confidence)?;
    let mut total = 0.0;
    let (mut sum, mut sum_sq) = (0.0, 0.0);
    for (index, g) in groups.iter().enumerate().filter(|(_, g)| g.count > 0) {
        for value in [g.mean, g.variance] {
            if !value.is_finite() {
                return Err(StatsError::NonFinite { index, value });
            }
        }
        let n = g.count as f64;
        let variance = if g.count > 1 { g.variance } else { 0.0 };
        total += n;
        sum += g.mean * n;
        sum_sq += (n - 1.0) * variance + n * g.mean * g.mean;
    }
    if total == 0.0 {
        return Ok(None);
    }
    let mean = sum / total;
    if total < 2.0 {
        return Ok(Some((mean, None)));
    }
    let variance = ((sum_sq - total * mean * mean) / (total - 1.0)).max(0.0);
    let z = Normal::standard().inverse_cdf(0.5 + 0.5 * confidence);
    let half = z * (variance / total).sqrt();
    Ok(Some((mean, Some(Interval::new(mean - half, mean + half)))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooling_groups_equals_the_union() {
        let values = [0.2, 0.9, 0.4, 0.4, 1.0, 0.0, 0.7, 0.3];
        let split = [&values[..3], &values[3..4], &values[4..]];
        let groups: Vec<GroupSummary> = split
            .iter()
            .map(|v| GroupSummary {
                count: v.len() as u64,
                mean: v.iter().sum::<f64>() / v.len() as f64,
                variance: sample_std_dev(v).map_or(0.0, |s| s * s),
            })
            .collect();
        let (mean, ci) = pooled_mean_interval(&groups, 0.95).unwrap().unwrap();
        let n = values.len() as f64;
        let m = values.iter().sum::<f64>() / n;
        let half = 1.959_963_984_540_054 * sample_std_dev(&values).unwrap() / n.sqrt();
        assert!((mean - m).abs() < 1e-12);
        let ci = ci.unwrap();
        assert!((ci.lo - (m - half)).abs() < 1e-12 && (ci.hi - (m + half)).abs() < 1e-12);
        assert_eq!(pooled_mean_interval(&[], 0.95).unwrap(), None);
        let one = [GroupSummary {
            count: 1,
            mean: 0.5,
            variance: 0.0,
        }];
        assert_eq!(pooled_mean_interval(&one, 0.95).unwrap(), Some((0.5, None)));
        assert!(pooled_mean_interval(&groups, 1.5).is_err());
        assert_eq!(sample_std_dev(&[1.0]), None);
        assert!(
            (sample_std_dev(&[1.0, 2.0, 3.0, 4.0]).unwrap() - (5f64 / 3.0).sqrt()).abs() < 1e-15
        );
    }
}
