//! The ratio of two paired samples' statistics (candidate / baseline: a p95 latency, a mean
//! cost) with a paired percentile bootstrap interval: the guardrail of `oloproof compare`
//! ("p95 latency not more than 10 % worse").
//!
//! Each resample draws `n` case indices with replacement (ChaCha8, seeded) and takes the
//! statistic of the candidate's and of the baseline's values *at the same cases*, so the
//! pairing (a slow case is slow in both runs) narrows the interval as a paired test does
//! (Efron and Tibshirani, *An Introduction to the Bootstrap*, 1993, §14 and §16.4). Resamples
//! whose baseline statistic is 0 have no ratio and are skipped. The quantile is numpy's linear
//! sample quantile. A percentile bootstrap of a tail quantile is only as good as the tail it
//! sees: with few cases beyond the quantile (fewer than ~10 for a p95, i.e. n < 200) the
//! interval is too narrow, which the documentation says beside the decision.

use crate::{Interval, StatsError};

/// The statistic a ratio compares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RatioStatistic {
    /// The mean.
    Mean,
    /// The `q` sample quantile (numpy's linear method), `0 < q < 1`.
    Quantile(f64),
}

impl RatioStatistic {
    fn of(self, values: &mut [f64]) -> f64 {
        match self {
            RatioStatistic::Mean => values.iter().sum::<f64>() / values.len() as f64,
            RatioStatistic::Quantile(q) => {
                values.sort_unstable_by(f64::total_cmp);
                crate::quantile::quantile_sorted(values, q, crate::quantile::QuantileMethod::Linear)
            }
        }
    }
}

/// The ratio of the statistics and its paired bootstrap interval ([`paired_ratio`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedRatio {
    /// `statistic(candidate) / statistic(baseline)`; `None` when the baseline's is 0.
    pub ratio: Option<f64>,
    /// The percentile interval of the resampled ratios; `None` when no resample had one.
    pub interval: Option<Interval>,
}

/// The ratio `statistic(candidate) / statistic(baseline)` of paired samples (`candidate[i]`
/// and `baseline[i]` are one case) with its paired percentile bootstrap interval (module docs).
///
/// # Errors
///
/// [`StatsError::LengthMismatch`], [`StatsError::TooFewPairs`] below 2 pairs,
/// [`StatsError::NonFinite`], [`StatsError::NoResamples`], [`StatsError::InvalidConfidence`],
/// [`StatsError::InvalidQuantile`].
///
/// ```
/// use oloproof_stats::{paired_ratio, RatioStatistic};
///
/// let baseline = [100.0, 120.0, 90.0, 300.0, 110.0, 105.0];
/// let candidate: Vec<f64> = baseline.iter().map(|x| x * 1.5).collect();
/// let r = paired_ratio(&candidate, &baseline, RatioStatistic::Quantile(0.95), 2_000, 1, 0.95)?;
/// assert!((r.ratio.unwrap() - 1.5).abs() < 1e-12);
/// let ci = r.interval.unwrap(); // every resample has the same ratio
/// assert!((ci.lo - 1.5).abs() < 1e-12 && (ci.hi - 1.5).abs() < 1e-12);
/// # Ok::<(), oloproof_stats::StatsError>(())
/// ```
pub fn paired_ratio(
    candidate: &[f64],
    baseline: &[f64],
    statistic: RatioStatistic,
    resamples: usize,
    seed: u64,
    confidence: f64,
) -> Result<PairedRatio, StatsError> {
    if candidate.len() != baseline.len() {
        return Err(StatsError::LengthMismatch {
            left: candidate.len(),
            right: baseline.len(),
        });
    }
    if candidate.len() < 2 {
        return Err(StatsError::TooFewPairs {
            got: candidate.len(),
            needed: 2,
        });
    }
    if let RatioStatistic::Quantile(q) = statistic {
        if !(q > 0.0 && q < 1.0) {
            return Err(StatsError::InvalidQuantile { q });
        }
    }
    crate::error::check_finite(candidate)?;
    crate::error::check_finite(baseline)?;
    crate::error::check_confidence(confidence)?;
    if resamples == 0 {
        return Err(StatsError::NoResamples);
    }
    let ratio_of = |c: &mut [f64], b: &mut [f64]| {
        let den = statistic.of(b);
        (den != 0.0).then(|| statistic.of(c) / den)
    };
    let ratio = ratio_of(&mut candidate.to_vec(), &mut baseline.to_vec());
    let resampled = |idx: &[usize]| {
        let mut c: Vec<f64> = idx.iter().map(|&i| candidate[i]).collect();
        let mut b: Vec<f64> = idx.iter().map(|&i| baseline[i]).collect();
        ratio_of(&mut c, &mut b)
    };
    let interval = crate::percentile_bootstrap_statistic(
        candidate.len(),
        resamples,
        seed,
        confidence,
        &resampled,
    )?;
    Ok(PairedRatio { ratio, interval })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paired_resampling_follows_the_cases() {
        // The candidate is the baseline plus 10 %, case by case: every paired resample gives
        // 1.1 exactly for the mean, whatever cases it draws.
        let base: Vec<f64> = (1..=50).map(|i| f64::from(i * i)).collect();
        let cand: Vec<f64> = base.iter().map(|x| x * 1.1).collect();
        let r = paired_ratio(&cand, &base, RatioStatistic::Mean, 500, 3, 0.95).unwrap();
        let ci = r.interval.unwrap();
        assert!(
            (ci.lo - 1.1).abs() < 1e-12 && (ci.hi - 1.1).abs() < 1e-12,
            "{ci:?}"
        );
        // Same seed, same interval.
        let again = paired_ratio(&cand, &base, RatioStatistic::Mean, 500, 3, 0.95).unwrap();
        assert_eq!(r, again);
        // Unrelated noise widens it around the true ratio.
        let noisy: Vec<f64> = base
            .iter()
            .enumerate()
            .map(|(i, x)| x * if i % 2 == 0 { 1.3 } else { 0.9 })
            .collect();
        let r = paired_ratio(&noisy, &base, RatioStatistic::Quantile(0.95), 2000, 3, 0.95).unwrap();
        let ci = r.interval.unwrap();
        assert!(
            ci.lo < r.ratio.unwrap() && r.ratio.unwrap() < ci.hi,
            "{r:?}"
        );
    }

    #[test]
    fn undefined_ratios_and_bad_input() {
        let zero = [0.0, 0.0, 0.0];
        let r = paired_ratio(&[1.0, 2.0, 3.0], &zero, RatioStatistic::Mean, 100, 1, 0.95).unwrap();
        assert_eq!(
            r,
            PairedRatio {
                ratio: None,
                interval: None
            }
        );
        assert!(matches!(
            paired_ratio(&[1.0], &[1.0], RatioStatistic::Mean, 10, 1, 0.95),
            Err(StatsError::TooFewPairs { .. })
        ));
        assert!(matches!(
            paired_ratio(&[1.0, 2.0], &[1.0], RatioStatistic::Mean, 10, 1, 0.95),
            Err(StatsError::LengthMismatch { .. })
        ));
        assert!(matches!(
            paired_ratio(
                &[1.0, 2.0],
                &[1.0, 2.0],
                RatioStatistic::Quantile(1.0),
                10,
                1,
                0.95
            ),
            Err(StatsError::InvalidQuantile { .. })
        ));
    }
}
