//! The percentile bootstrap of a mean, drawn as multinomial counts over distinct values.
//!
//! Resampling `n` values with replacement and averaging is the same, in distribution, as
//! drawing how many times each distinct value `v_j` (observed `m_j` times) is picked —
//! `(N_1, …, N_k) ~ Multinomial(n; m_1/n, …, m_k/n)` — and taking `Σ N_j·v_j / n`. The
//! multinomial is drawn exactly by conditional binomials:
//! `N_j ~ Binomial(n − Σ_{i<j} N_i, m_j / (n − Σ_{i<j} m_i))`. With `k` distinct values a
//! resample costs `k` binomial draws instead of `n` uniform ones: evaluation scores such as nDCG
//! at a small cut-off, recall with one relevant document, or any 0/1 score take a handful of
//! values, so 10,000 resamples of 10,000 cases cost milliseconds.
//!
//! The draws differ from [`crate::percentile_bootstrap_mean`]'s for the same seed (another
//! sampling scheme), but the method — percentile interval of the resample means — is the same,
//! and a seed still fixes the result on every machine.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Binomial, Distribution};

use crate::bootstrap::percentile_interval;
use crate::{percentile_bootstrap_mean, Interval, StatsError};

/// Above this many distinct values the plain resampler is used.
pub const MAX_GROUPED_LEVELS: usize = 256;

/// Percentile bootstrap interval of the mean of `values`, drawing each resample as multinomial
/// counts over the distinct values (see the module docs); falls back to
/// [`percentile_bootstrap_mean`] when there are more than [`MAX_GROUPED_LEVELS`] distinct values.
///
/// Errors as [`percentile_bootstrap_mean`]: empty input, a non-finite value, no resamples, a
/// confidence outside (0, 1).
///
/// ```
/// use oloproof_stats::percentile_bootstrap_mean_grouped;
/// let scores = [1.0, 1.0, 0.5, 0.0, 1.0, 0.63];
/// let ci = percentile_bootstrap_mean_grouped(&scores, 10_000, 7, 0.95)?;
/// assert!(ci.lo < 0.69 && 0.69 < ci.hi);
/// assert_eq!(ci, percentile_bootstrap_mean_grouped(&scores, 10_000, 7, 0.95)?);
/// # Ok::<(), oloproof_stats::StatsError>(())
/// ```
pub fn percentile_bootstrap_mean_grouped(
    values: &[f64],
    resamples: usize,
    seed: u64,
    confidence: f64,
) -> Result<Interval, StatsError> {
    let mut sorted = values.to_vec();
    if let Some((index, &value)) = sorted.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(StatsError::NonFinite { index, value });
    }
    sorted.sort_by(f64::total_cmp);
    let mut levels: Vec<(f64, u64)> = Vec::new();
    for v in sorted {
        match levels.last_mut() {
            Some((last, count)) if *last == v => *count += 1,
            _ => levels.push((v, 1)),
        }
    }
    if levels.len() <= 1 || levels.len() > MAX_GROUPED_LEVELS || resamples == 0 {
        // Empty, constant, too many levels or invalid: the plain resampler answers (and
        // reports errors) exactly.
        return percentile_bootstrap_mean(values, resamples, seed, confidence);
    }
    if !(confidence > 0.0 && confidence < 1.0) {
        return percentile_bootstrap_mean(values, resamples, seed, confidence);
    }
    let n = values.len() as u64;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut means = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let mut left = n;
        let mut mass_left = n;
        let mut sum = 0.0;
        for (j, &(value, count)) in levels.iter().enumerate() {
            if left == 0 {
                break;
            }
            let drawn = if j + 1 == levels.len() {
                left
            } else {
                let p = count as f64 / mass_left as f64;
                Binomial::new(left, p.min(1.0))
                    .map(|b| b.sample(&mut rng))
                    .unwrap_or(0)
            };
            sum += drawn as f64 * value;
            left -= drawn;
            mass_left -= count;
        }
        means.push(sum / n as f64);
    }
    Ok(percentile_interval(&mut means, confidence))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_the_plain_resampler_in_distribution() {
        // Same method, different draws: the intervals agree to Monte Carlo error.
        let values: Vec<f64> = (0..400).map(|i| [1.0, 0.63, 0.5, 0.0][i % 4]).collect();
        let grouped = percentile_bootstrap_mean_grouped(&values, 20_000, 3, 0.95).unwrap();
        let plain = percentile_bootstrap_mean(&values, 20_000, 3, 0.95).unwrap();
        assert!(
            (grouped.lo - plain.lo).abs() < 0.006,
            "{grouped:?} vs {plain:?}"
        );
        assert!(
            (grouped.hi - plain.hi).abs() < 0.006,
            "{grouped:?} vs {plain:?}"
        );
    }

    #[test]
    fn binary_values_match_the_normal_approximation() {
        let values: Vec<f64> = (0..1000)
            .map(|i| if i % 4 == 0 { 1.0 } else { 0.0 })
            .collect();
        let ci = percentile_bootstrap_mean_grouped(&values, 10_000, 11, 0.95).unwrap();
        let se = (0.25f64 * 0.75 / 1000.0).sqrt();
        assert!((ci.lo - (0.25 - 1.96 * se)).abs() < 0.004, "{ci:?}");
        assert!((ci.hi - (0.25 + 1.96 * se)).abs() < 0.004, "{ci:?}");
    }

    #[test]
    fn edge_cases() {
        assert_eq!(
            percentile_bootstrap_mean_grouped(&[0.7; 5], 100, 1, 0.95).unwrap(),
            Interval::new(0.7, 0.7)
        );
        assert!(percentile_bootstrap_mean_grouped(&[], 100, 1, 0.95).is_err());
        assert!(percentile_bootstrap_mean_grouped(&[1.0, f64::NAN], 100, 1, 0.95).is_err());
        assert!(percentile_bootstrap_mean_grouped(&[1.0, 0.0], 0, 1, 0.95).is_err());
        let a = percentile_bootstrap_mean_grouped(&[1.0, 0.0, 0.5], 1000, 1, 0.95).unwrap();
        let b = percentile_bootstrap_mean_grouped(&[1.0, 0.0, 0.5], 1000, 2, 0.95).unwrap();
        assert_eq!(
            a,
            percentile_bootstrap_mean_grouped(&[0.5, 1.0, 0.0], 1000, 1, 0.95).unwrap()
        );
        assert!(a.lo >= 0.0 && a.hi <= 1.0);
        let _ = b;
    }
}
