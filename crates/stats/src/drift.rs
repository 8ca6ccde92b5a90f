//! Two-sample drift statistics over embedding vectors (`oloproof monitor`'s query drift) and
//! the binned divergence of a one-dimensional projection.
//!
//! - [`mmd_permutation_test`]: the unbiased estimate of the squared maximum mean discrepancy
//!   `MMD²_u` between two samples of vectors with a Gaussian RBF kernel whose bandwidth is set
//!   by the median heuristic ([`median_bandwidth`]), and its permutation p-value.
//!   A. Gretton, K. M. Borgwardt, M. J. Rasch, B. Schölkopf and A. Smola, "A Kernel
//!   Two-Sample Test", *JMLR* 13 (2012): eq. 3 (the unbiased statistic, Lemma 6) and §8 (the
//!   bandwidth: the median distance between points of the pooled sample). On L2-normalised
//!   sentence embeddings `‖a − b‖² = 2 − 2 cos(a, b)`, so this kernel is already a function of
//!   the cosine, and unlike the cosine (linear) kernel it is characteristic: it sees a change
//!   of spread or of shape, not only of the mean direction. No separate cosine kernel is
//!   offered for that reason.
//! - [`binned_divergence`]: the Jensen–Shannon distance (base 2, as
//!   `scipy.spatial.distance.jensenshannon(p, q, base=2)`) between the histograms of a
//!   reference and a current sample of scalars, over equal-frequency bins cut at the
//!   reference's quantiles ([`reference_edges`]). Jensen–Shannon rather than KL or PSI: it is
//!   symmetric, bounded in `[0, 1]` in base 2, and finite when a bin is empty on one side
//!   (KL and PSI are infinite there unless an arbitrary smoothing is added). The scalar the
//!   monitor bins is [`cosine_to_centroid`]: each query's cosine similarity to the mean of the
//!   reference embeddings.
//! - [`cosine`]: the cosine similarity of two vectors (probe drift: a re-embedded probe
//!   against its stored vector).
//!
//! Samples too small for a statistic are [`StatsError::TooFewObservations`] (or
//! [`StatsError::EmptySample`]), vectors of different lengths [`StatsError::DimensionMismatch`],
//! a NaN or infinite coordinate [`StatsError::NonFinite`]: never a NaN result.

use rand::distr::{Distribution, Uniform};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::error::check_finite;
use crate::StatsError;

/// Relative tolerance of the permutation test's `≥` comparison (a permuted statistic equal to
/// the observed one up to rounding counts as at least as extreme).
const TIE_TOLERANCE: f64 = 1e-12;

/// The outcome of [`mmd_permutation_test`].
#[derive(Debug, Clone, PartialEq)]
pub struct MmdTest {
    /// The unbiased `MMD²_u` of the two samples as given (it can be slightly negative when
    /// the samples come from one distribution).
    pub mmd2: f64,
    /// The kernel bandwidth `σ` used ([`median_bandwidth`] of the pooled sample).
    pub bandwidth: f64,
    /// `(b + 1) / (B + 1)`, `b` the permutations whose statistic is at least `mmd2`.
    pub p_value: f64,
    /// `B`.
    pub permutations: usize,
    /// Size of the first sample.
    pub m: usize,
    /// Size of the second sample.
    pub n: usize,
}

/// The squared Euclidean distance of two vectors of one length.
fn sq_dist(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Checks that every vector of both samples is finite and of the first vector's length.
fn check_vectors(samples: &[&[Vec<f64>]]) -> Result<usize, StatsError> {
    let dimension = samples
        .iter()
        .flat_map(|s| s.first())
        .map(Vec::len)
        .next()
        .ok_or(StatsError::EmptySample)?;
    let mut index = 0;
    for sample in samples {
        for v in *sample {
            if v.len() != dimension {
                return Err(StatsError::DimensionMismatch {
                    index,
                    expected: dimension,
                    got: v.len(),
                });
            }
            check_finite(v).map_err(|_| StatsError::NonFinite {
                index,
                value: v.iter().copied().find(|x| !x.is_finite()).unwrap_or(0.0),
            })?;
            index += 1;
        }
    }
    Ok(dimension)
}

/// The median heuristic bandwidth of a pooled sample: the median (numpy's `np.median`, the
/// mean of the two middle values for an even count) of the Euclidean distances `‖zᵢ − zⱼ‖`
/// over all pairs `i < j`. When that median is 0 (more than half the pairs are duplicates),
/// the median of the nonzero distances; when every distance is 0, `1` (every kernel value is
/// then 1 whatever `σ`).
///
/// # Errors
///
/// [`StatsError::TooFewObservations`] for fewer than 2 vectors; a length mismatch or a
/// non-finite coordinate as [`mmd_permutation_test`].
pub fn median_bandwidth(pooled: &[Vec<f64>]) -> Result<f64, StatsError> {
    if pooled.len() < 2 {
        return Err(StatsError::TooFewObservations {
            got: pooled.len(),
            needed: 2,
        });
    }
    check_vectors(&[pooled])?;
    let mut d = Vec::with_capacity(pooled.len() * (pooled.len() - 1) / 2);
    for i in 0..pooled.len() {
        for j in i + 1..pooled.len() {
            d.push(sq_dist(&pooled[i], &pooled[j]).sqrt());
        }
    }
    Ok(bandwidth_of(d))
}

fn bandwidth_of(distances: Vec<f64>) -> f64 {
    // The median is the crate's one quantile (numpy's linear method at 0.5).
    let median = |values: &[f64]| crate::quantile(values, 0.5).ok();
    match median(&distances) {
        Some(m) if m > 0.0 => m,
        _ => {
            let positive: Vec<f64> = distances.into_iter().filter(|d| *d > 0.0).collect();
            median(&positive).unwrap_or(1.0)
        }
    }
}

/// `MMD²_u` of a split of a kernel matrix: members of the first sample are those with
/// `first[i]`. `1/(m(m−1)) Σ_{i≠j∈X} k + 1/(n(n−1)) Σ_{i≠j∈Y} k − 2/(mn) Σ_{i∈X, j∈Y} k`.
fn mmd2_of_split(kernel: &[f64], size: usize, first: &[bool], m: usize, n: usize) -> f64 {
    let (mut xx, mut yy, mut xy) = (0.0, 0.0, 0.0);
    for i in 0..size {
        let row = &kernel[i * size..(i + 1) * size];
        for j in i + 1..size {
            match (first[i], first[j]) {
                (true, true) => xx += row[j],
                (false, false) => yy += row[j],
                _ => xy += row[j],
            }
        }
    }
    let (m, n) = (m as f64, n as f64);
    2.0 * xx / (m * (m - 1.0)) + 2.0 * yy / (n * (n - 1.0)) - 2.0 * xy / (m * n)
}

/// The unbiased `MMD²_u` of samples `x` and `y` with the Gaussian kernel
/// `k(a, b) = exp(−‖a − b‖² / (2σ²))` of bandwidth `σ` (Gretton et al. 2012, eq. 3).
///
/// # Errors
///
/// [`StatsError::TooFewObservations`] when a sample has fewer than 2 vectors (the
/// within-sample means are undefined); [`StatsError::DimensionMismatch`] or
/// [`StatsError::NonFinite`] for a bad vector (its index counts `x` then `y`);
/// [`StatsError::InvalidBandwidth`] for a `σ` that is not positive and finite.
pub fn mmd2_unbiased(x: &[Vec<f64>], y: &[Vec<f64>], bandwidth: f64) -> Result<f64, StatsError> {
    let (kernel, size) = kernel_matrix(x, y, Some(bandwidth))?.0;
    let first: Vec<bool> = (0..size).map(|i| i < x.len()).collect();
    Ok(mmd2_of_split(&kernel, size, &first, x.len(), y.len()))
}

/// The pooled kernel matrix (row-major) and its size, and the bandwidth (given, or the median
/// heuristic).
#[allow(clippy::type_complexity)]
fn kernel_matrix(
    x: &[Vec<f64>],
    y: &[Vec<f64>],
    bandwidth: Option<f64>,
) -> Result<((Vec<f64>, usize), f64), StatsError> {
    let smaller = x.len().min(y.len());
    if smaller < 2 {
        return Err(StatsError::TooFewObservations {
            got: smaller,
            needed: 2,
        });
    }
    check_vectors(&[x, y])?;
    if let Some(b) = bandwidth {
        if !(b.is_finite() && b > 0.0) {
            return Err(StatsError::InvalidBandwidth { bandwidth: b });
        }
    }
    let pooled: Vec<&Vec<f64>> = x.iter().chain(y).collect();
    let size = pooled.len();
    let mut sq = vec![0.0; size * size];
    for i in 0..size {
        for j in i + 1..size {
            let d = sq_dist(pooled[i], pooled[j]);
            sq[i * size + j] = d;
            sq[j * size + i] = d;
        }
    }
    let sigma = match bandwidth {
        Some(b) => b,
        None => {
            let mut d = Vec::with_capacity(size * (size - 1) / 2);
            for i in 0..size {
                for j in i + 1..size {
                    d.push(sq[i * size + j].sqrt());
                }
            }
            bandwidth_of(d)
        }
    };
    let scale = 2.0 * sigma * sigma;
    let kernel = sq.into_iter().map(|d| (-d / scale).exp()).collect();
    Ok(((kernel, size), sigma))
}

/// The kernel two-sample test of `H₀: x and y come from one distribution`: `MMD²_u`
/// ([`mmd2_unbiased`]) with the [`median_bandwidth`] of the pooled sample (computed once; it
/// does not depend on the split, so the permutation distribution is valid), and the one-sided
/// permutation p-value `(b + 1) / (B + 1)`, where `b` counts the `B` random relabellings of
/// the pooled sample into groups of `m` and `n` whose `MMD²_u` is at least the observed one.
/// The `+ 1`s count the observed labelling among the permutations, so the p-value is never 0
/// and the test keeps its level (B. Phipson and G. K. Smyth, "Permutation P-values Should
/// Never Be Zero", *Stat. Appl. Genet. Mol. Biol.* 9(1), 2010).
///
/// Each permutation is a Fisher–Yates shuffle of the pooled indices with
/// `ChaCha8Rng::seed_from_u64(seed)` and `rand::distr::Uniform::new(0, i + 1)` (the crate's
/// random stream), so a seed gives the same p-value on every machine. Cost:
/// `O(B (m + n)²)` additions after one `O((m + n)² d)` kernel matrix.
///
/// # Errors
///
/// As [`mmd2_unbiased`]; [`StatsError::NoResamples`] for `permutations = 0`.
pub fn mmd_permutation_test(
    x: &[Vec<f64>],
    y: &[Vec<f64>],
    permutations: usize,
    seed: u64,
) -> Result<MmdTest, StatsError> {
    if permutations == 0 {
        return Err(StatsError::NoResamples);
    }
    let ((kernel, size), bandwidth) = kernel_matrix(x, y, None)?;
    let (m, n) = (x.len(), y.len());
    let mut first: Vec<bool> = (0..size).map(|i| i < m).collect();
    let observed = mmd2_of_split(&kernel, size, &first, m, n);
    let threshold = observed - TIE_TOLERANCE * observed.abs().max(1.0);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut order: Vec<usize> = (0..size).collect();
    let mut count = 0usize;
    for _ in 0..permutations {
        for i in (1..size).rev() {
            // `Uniform::new(0, i + 1)` is valid for every i ≥ 0.
            let j = Uniform::new(0, i + 1).map_or(0, |u| u.sample(&mut rng));
            order.swap(i, j);
        }
        for (pos, &idx) in order.iter().enumerate() {
            first[idx] = pos < m;
        }
        if mmd2_of_split(&kernel, size, &first, m, n) >= threshold {
            count += 1;
        }
    }
    Ok(MmdTest {
        mmd2: observed,
        bandwidth,
        p_value: (count + 1) as f64 / (permutations + 1) as f64,
        permutations,
        m,
        n,
    })
}

/// The cosine similarity `a·b / (‖a‖ ‖b‖)` of two vectors, clamped to `[−1, 1]`.
///
/// # Errors
///
/// [`StatsError::DimensionMismatch`] for vectors of different lengths,
/// [`StatsError::NonFinite`] for a bad coordinate, [`StatsError::ZeroVector`] when either
/// has norm 0 (the angle is undefined).
pub fn cosine(a: &[f64], b: &[f64]) -> Result<f64, StatsError> {
    if a.len() != b.len() {
        return Err(StatsError::DimensionMismatch {
            index: 1,
            expected: a.len(),
            got: b.len(),
        });
    }
    check_finite(a)?;
    check_finite(b)?;
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    if na == 0.0 || nb == 0.0 {
        return Err(StatsError::ZeroVector);
    }
    Ok((dot / (na * nb)).clamp(-1.0, 1.0))
}

/// Each of `points`' cosine similarity to the centroid (coordinate-wise mean) of `reference`:
/// the one-dimensional projection [`binned_divergence`] reads for query drift. A point of norm
/// 0 has similarity 0.
///
/// # Errors
///
/// [`StatsError::EmptySample`] for an empty reference; [`StatsError::DimensionMismatch`] or
/// [`StatsError::NonFinite`] for a bad vector (index over `reference` then `points`);
/// [`StatsError::ZeroVector`] when the centroid is 0 (the reference's vectors cancel out).
pub fn cosine_to_centroid(
    reference: &[Vec<f64>],
    points: &[Vec<f64>],
) -> Result<Vec<f64>, StatsError> {
    if reference.is_empty() {
        return Err(StatsError::EmptySample);
    }
    let dimension = check_vectors(&[reference, points])?;
    let mut centroid = vec![0.0; dimension];
    for v in reference {
        for (c, x) in centroid.iter_mut().zip(v) {
            *c += x / reference.len() as f64;
        }
    }
    if centroid.iter().all(|c| *c == 0.0) {
        return Err(StatsError::ZeroVector);
    }
    Ok(points
        .iter()
        .map(|p| cosine(&centroid, p).unwrap_or(0.0))
        .collect())
}

/// The number of bins [`binned_divergence`] uses by default for a reference of `n` values:
/// `min(10, ⌊n / 5⌋)` — deciles of the reference (the usual binning of a population
/// stability index) when it has at least 50 values, fewer so that every bin holds at least 5
/// reference values in expectation; below 10 values (2 bins) there is no binning.
pub fn default_bins(n: usize) -> Option<usize> {
    let k = (n / 5).min(10);
    (k >= 2).then_some(k)
}

/// The interior edges of `bins` equal-frequency bins of `reference`: its quantiles at
/// `i / bins` for `i = 1 … bins − 1` (numpy's linear definition, [`crate::quantile`]),
/// duplicates removed (ties can merge bins). A value `v` falls in bin
/// `#{edges e : e < v}` — numpy's `searchsorted(edges, v, side="left")` — so a value equal
/// to an edge goes to the lower bin.
///
/// # Errors
///
/// [`StatsError::EmptySample`] for an empty reference, [`StatsError::NonFinite`] for a bad
/// value, [`StatsError::TooFewObservations`] for `bins < 2`.
pub fn reference_edges(reference: &[f64], bins: usize) -> Result<Vec<f64>, StatsError> {
    if reference.is_empty() {
        return Err(StatsError::EmptySample);
    }
    if bins < 2 {
        return Err(StatsError::TooFewObservations {
            got: bins,
            needed: 2,
        });
    }
    check_finite(reference)?;
    let mut edges: Vec<f64> = Vec::with_capacity(bins - 1);
    for i in 1..bins {
        let e = crate::quantile(reference, i as f64 / bins as f64)?;
        if edges.last() != Some(&e) {
            edges.push(e);
        }
    }
    Ok(edges)
}

/// Counts `values` per bin of `edges` (as [`reference_edges`] describes): `edges.len() + 1`
/// counts.
pub fn bin_counts(values: &[f64], edges: &[f64]) -> Vec<u64> {
    let mut counts = vec![0u64; edges.len() + 1];
    for v in values {
        let bin = edges.partition_point(|e| e < v);
        counts[bin] += 1;
    }
    counts
}

/// The Jensen–Shannon distance, base 2, between two histograms (counts or weights, each
/// normalised to sum 1): `sqrt((KL(p‖m) + KL(q‖m)) / 2)` with `m = (p + q) / 2` and
/// `0 · log 0 = 0`, as `scipy.spatial.distance.jensenshannon(p, q, base=2)`. In `[0, 1]`.
///
/// # Errors
///
/// [`StatsError::LengthMismatch`] for histograms of different lengths,
/// [`StatsError::NonFinite`] for a NaN, infinite or negative weight, [`StatsError::EmptySample`]
/// when either sums to 0.
pub fn jensen_shannon_distance(p: &[f64], q: &[f64]) -> Result<f64, StatsError> {
    if p.len() != q.len() {
        return Err(StatsError::LengthMismatch {
            left: p.len(),
            right: q.len(),
        });
    }
    for w in [p, q] {
        if let Some(index) = w.iter().position(|x| !(x.is_finite() && *x >= 0.0)) {
            return Err(StatsError::NonFinite {
                index,
                value: w[index],
            });
        }
    }
    let (sp, sq) = (p.iter().sum::<f64>(), q.iter().sum::<f64>());
    if sp == 0.0 || sq == 0.0 {
        return Err(StatsError::EmptySample);
    }
    let mut js = 0.0;
    for (a, b) in p.iter().zip(q) {
        let (a, b) = (a / sp, b / sq);
        let m = (a + b) / 2.0;
        if a > 0.0 {
            js += a * (a / m).log2();
        }
        if b > 0.0 {
            js += b * (b / m).log2();
        }
    }
    Ok((js / 2.0).max(0.0).sqrt().min(1.0))
}

/// The outcome of [`binned_divergence`].
#[derive(Debug, Clone, PartialEq)]
pub struct BinnedDivergence {
    /// The interior bin edges ([`reference_edges`]).
    pub edges: Vec<f64>,
    /// Reference values per bin.
    pub reference_counts: Vec<u64>,
    /// Current values per bin.
    pub current_counts: Vec<u64>,
    /// [`jensen_shannon_distance`] of the two histograms.
    pub js_distance: f64,
}

/// Bins `reference` and `current` on `bins` equal-frequency bins of the reference
/// ([`reference_edges`]; default [`default_bins`] of the reference's size) and gives the
/// [`jensen_shannon_distance`] of the two histograms.
///
/// # Errors
///
/// [`StatsError::TooFewObservations`] when the reference is too small to bin (fewer than 10
/// values by default) or ties leave a single bin (`got` is then the number of bins), or the
/// current sample is empty; [`StatsError::NonFinite`] for a bad value.
pub fn binned_divergence(
    reference: &[f64],
    current: &[f64],
    bins: Option<usize>,
) -> Result<BinnedDivergence, StatsError> {
    let k = match bins.or_else(|| default_bins(reference.len())) {
        Some(k) => k,
        None => {
            return Err(StatsError::TooFewObservations {
                got: reference.len(),
                needed: 10,
            })
        }
    };
    if current.is_empty() {
        return Err(StatsError::TooFewObservations { got: 0, needed: 1 });
    }
    check_finite(current)?;
    let edges = reference_edges(reference, k)?;
    if edges.is_empty() {
        return Err(StatsError::TooFewObservations { got: 1, needed: 2 });
    }
    let reference_counts = bin_counts(reference, &edges);
    let current_counts = bin_counts(current, &edges);
    let to_f = |c: &[u64]| c.iter().map(|x| *x as f64).collect::<Vec<_>>();
    let js_distance = jensen_shannon_distance(&to_f(&reference_counts), &to_f(&current_counts))?;
    Ok(BinnedDivergence {
        edges,
        reference_counts,
        current_counts,
        js_distance,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cloud(center: &[f64], n: usize, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let u = Uniform::new(-0.5, 0.5).unwrap();
        (0..n)
            .map(|_| center.iter().map(|c| c + u.sample(&mut rng)).collect())
            .collect()
    }

    #[test]
    fn same_distribution_is_not_significant_and_a_shift_is() {
        let a = cloud(&[0.0, 0.0, 0.0], 40, 1);
        let b = cloud(&[0.0, 0.0, 0.0], 40, 2);
        let c = cloud(&[1.0, 0.0, 0.0], 40, 3);
        let same = mmd_permutation_test(&a, &b, 500, 9).unwrap();
        let shifted = mmd_permutation_test(&a, &c, 500, 9).unwrap();
        assert!(same.p_value > 0.05, "{same:?}");
        assert!(shifted.p_value <= 1.0 / 501.0 + 1e-15, "{shifted:?}");
        assert!(shifted.mmd2 > same.mmd2);
        // Deterministic by seed.
        assert_eq!(same, mmd_permutation_test(&a, &b, 500, 9).unwrap());
        assert_eq!((same.m, same.n, same.permutations), (40, 40, 500));
    }

    #[test]
    fn degenerate_inputs_are_typed_never_nan() {
        let one = vec![vec![1.0, 2.0]];
        let two = vec![vec![1.0, 2.0], vec![2.0, 1.0]];
        assert_eq!(
            mmd_permutation_test(&one, &two, 10, 0),
            Err(StatsError::TooFewObservations { got: 1, needed: 2 })
        );
        assert_eq!(
            mmd_permutation_test(&two, &two, 0, 0),
            Err(StatsError::NoResamples)
        );
        let ragged = vec![vec![1.0, 2.0], vec![1.0]];
        assert!(matches!(
            mmd_permutation_test(&two, &ragged, 10, 0),
            Err(StatsError::DimensionMismatch {
                index: 3,
                expected: 2,
                got: 1
            })
        ));
        let nan = vec![vec![1.0, f64::NAN], vec![1.0, 1.0]];
        assert!(matches!(
            mmd_permutation_test(&two, &nan, 10, 0),
            Err(StatsError::NonFinite { index: 2, .. })
        ));
        // Every point identical: MMD² 0, p = 1, bandwidth 1.
        let same = vec![vec![0.5, 0.5]; 4];
        let t = mmd_permutation_test(&same, &same, 20, 0).unwrap();
        assert_eq!((t.mmd2, t.p_value, t.bandwidth), (0.0, 1.0, 1.0));
        assert!(cosine(&[0.0, 0.0], &[1.0, 0.0]).is_err());
        assert_eq!(
            binned_divergence(&[1.0; 9], &[1.0], None),
            Err(StatsError::TooFewObservations { got: 9, needed: 10 })
        );
        // A constant reference is one edge, every value in the lower bin: defined.
        let flat = binned_divergence(&[1.0; 50], &[1.0], None).unwrap();
        assert_eq!(flat.edges, vec![1.0]);
        assert_eq!(flat.js_distance, 0.0);
        assert_eq!(
            jensen_shannon_distance(&[0.0, 0.0], &[1.0, 0.0]),
            Err(StatsError::EmptySample)
        );
    }

    #[test]
    fn jensen_shannon_bounds() {
        assert_eq!(
            jensen_shannon_distance(&[1.0, 2.0], &[2.0, 4.0]).unwrap(),
            0.0
        );
        assert!((jensen_shannon_distance(&[1.0, 0.0], &[0.0, 3.0]).unwrap() - 1.0).abs() < 1e-15);
    }

    #[test]
    fn bins_follow_searchsorted_left() {
        let edges = reference_edges(&[1.0, 2.0, 3.0, 4.0], 2).unwrap();
        assert_eq!(edges, vec![2.5]);
        assert_eq!(bin_counts(&[2.5, 2.6, 0.0], &edges), vec![2, 1]);
        let tied = reference_edges(&[1.0, 1.0, 1.0, 1.0, 2.0], 4).unwrap();
        assert_eq!(tied, vec![1.0]);
    }
}
