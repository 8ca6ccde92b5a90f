//! The percentile bootstrap of any statistic of paired items (e.g. Cohen's kappa of a judge
//! against human labels).

use rand::distr::{Distribution, Uniform};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::bootstrap::percentile_interval;
use crate::{Interval, StatsError};

/// Percentile bootstrap interval of `statistic` over `n` items: each resample draws `n` item
/// indices with replacement (ChaCha8 seeded with `seed`) and evaluates `statistic` on them;
/// resamples where the statistic is undefined (`None`, e.g. kappa when every item falls in one
/// category) are skipped. `None` when no resample is defined.
///
/// ```
/// use oloproof_stats::percentile_bootstrap_statistic;
/// let x = [1.0, 2.0, 3.0, 4.0, 5.0];
/// let mean = |idx: &[usize]| Some(idx.iter().map(|&i| x[i]).sum::<f64>() / idx.len() as f64);
/// let ci = percentile_bootstrap_statistic(x.len(), 2_000, 1, 0.95, &mean)?.unwrap();
/// assert!(ci.lo < 3.0 && 3.0 < ci.hi);
/// # Ok::<(), oloproof_stats::StatsError>(())
/// ```
pub fn percentile_bootstrap_statistic(
    n: usize,
    resamples: usize,
    seed: u64,
    confidence: f64,
    statistic: &dyn Fn(&[usize]) -> Option<f64>,
) -> Result<Option<Interval>, StatsError> {
    if !(confidence > 0.0 && confidence < 1.0) {
        return Err(StatsError::InvalidConfidence { confidence });
    }
    if n == 0 {
        return Err(StatsError::EmptySample);
    }
    if resamples == 0 {
        return Err(StatsError::NoResamples);
    }
    let index = Uniform::new(0, n).map_err(|_| StatsError::EmptySample)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut draws = Vec::with_capacity(resamples);
    let mut idx = vec![0usize; n];
    for _ in 0..resamples {
        for slot in idx.iter_mut() {
            *slot = index.sample(&mut rng);
        }
        if let Some(v) = statistic(&idx).filter(|v| v.is_finite()) {
            draws.push(v);
        }
    }
    if draws.is_empty() {
        return Ok(None);
    }
    Ok(Some(percentile_interval(&mut draws, confidence)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_skips_undefined() {
        let stat = |idx: &[usize]| {
            if idx.iter().all(|&i| i == idx[0]) {
                None
            } else {
                Some(idx.len() as f64)
            }
        };
        let a = percentile_bootstrap_statistic(3, 500, 9, 0.95, &stat).unwrap();
        assert_eq!(
            a,
            percentile_bootstrap_statistic(3, 500, 9, 0.95, &stat).unwrap()
        );
        assert_eq!(a, Some(Interval::new(3.0, 3.0)));
        assert!(percentile_bootstrap_statistic(0, 10, 1, 0.95, &stat).is_err());
        let never = |_: &[usize]| None;
        assert_eq!(
            percentile_bootstrap_statistic(4, 10, 1, 0.95, &never).unwrap(),
            None
        );
    }
}
