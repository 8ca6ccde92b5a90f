//! Agreement between raters and rank correlation: Cohen's kappa (plain and weighted),
//! Krippendorff's alpha (nominal, ordinal, interval, ratio; missing values allowed), Spearman's
//! rho and Kendall's tau-b.
//!
//! Each is computed as its reference library does and compared with it on random inputs in
//! `tests/classify_reference.rs`: scikit-learn's `cohen_kappa_score`, the `krippendorff`
//! package's `alpha`, scipy's `spearmanr` and `kendalltau(variant="b")`. Undefined values
//! (a constant variable, a single category) are `None`, never NaN.
//!
//! ```
//! use oloproof_metrics::agreement::{cohen_kappa, KappaWeights};
//!
//! // scikit-learn's docstring example.
//! let a = ["negative", "positive", "negative", "neutral", "positive"];
//! let b = ["negative", "positive", "negative", "neutral", "negative"];
//! assert_eq!(cohen_kappa(&a, &b, KappaWeights::None)?, Some(0.6875));
//! # Ok::<(), oloproof_metrics::agreement::AgreementError>(())
//! ```

/// Errors of the agreement statistics.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AgreementError {
    /// The two raters (or variables) have a different number of items.
    #[error("{left} items on one side, {right} on the other")]
    LengthMismatch {
        /// Items of the first.
        left: usize,
        /// Items of the second.
        right: usize,
    },
    /// A value is NaN or infinite.
    #[error("value {value} is not finite")]
    NotFinite {
        /// The value.
        value: f64,
    },
    /// Krippendorff's alpha needs at least two distinct values in the data.
    #[error("there has to be more than one value in the domain")]
    SingleValue,
    /// Krippendorff's alpha needs a unit coded by at least two coders.
    #[error("there has to be at least one unit with values assigned by at least two coders")]
    NoPairableUnit,
}

/// Weights of Cohen's kappa (scikit-learn's `weights`), over the positions `i`, `j` of the two
/// categories in the sorted list of categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KappaWeights {
    /// Unweighted: disagreement 1 off the diagonal.
    #[default]
    None,
    /// `|i − j|`.
    Linear,
    /// `(i − j)²`.
    Quadratic,
}

impl std::str::FromStr for KappaWeights {
    type Err = crate::error::UnknownWord;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" | "" => Ok(KappaWeights::None),
            "linear" => Ok(KappaWeights::Linear),
            "quadratic" => Ok(KappaWeights::Quadratic),
            _ => Err(crate::error::UnknownWord {
                what: "weights",
                value: s.to_string(),
                expected: "linear, quadratic or none",
            }),
        }
    }
}

/// Cohen's kappa of two raters' labels, as scikit-learn's `cohen_kappa_score(a, b, weights=…)`:
/// `κ = 1 − Σ w·O / Σ w·E`, where `O` is the confusion matrix over the sorted union of
/// categories, `E` the outer product of its marginals divided by the number of items, and `w`
/// the weights ([`KappaWeights`]; weighted kappa uses category positions, so `T`'s order must
/// be the scale's order). J. Cohen, *Educational and Psychological Measurement* 20 (1960);
/// weighted: Cohen, *Psychological Bulletin* 70 (1968).
///
/// `None` when undefined: no items, or `Σ w·E = 0` (both raters used one and the same
/// category; scikit-learn warns and returns its `replace_undefined_by`).
pub fn cohen_kappa<T: Ord>(
    a: &[T],
    b: &[T],
    weights: KappaWeights,
) -> Result<Option<f64>, AgreementError> {
    if a.len() != b.len() {
        return Err(AgreementError::LengthMismatch {
            left: a.len(),
            right: b.len(),
        });
    }
    let mut labels: Vec<&T> = a.iter().chain(b).collect();
    labels.sort_unstable();
    labels.dedup();
    let k = labels.len();
    let index = |x: &T| labels.binary_search(&x).unwrap_or_default();
    let mut confusion = vec![0f64; k * k];
    let (mut rows, mut cols) = (vec![0f64; k], vec![0f64; k]);
    for (x, y) in a.iter().zip(b) {
        let (i, j) = (index(x), index(y));
        confusion[i * k + j] += 1.0;
        rows[i] += 1.0;
        cols[j] += 1.0;
    }
    let n = a.len() as f64;
    if a.is_empty() {
        return Ok(None);
    }
    let w = |i: usize, j: usize| -> f64 {
        let d = i.abs_diff(j) as f64;
        match weights {
            KappaWeights::None => f64::from(u8::from(i != j)),
            KappaWeights::Linear => d,
            KappaWeights::Quadratic => d * d,
        }
    };
    let (mut observed, mut expected) = (0.0, 0.0);
    for i in 0..k {
        for j in 0..k {
            let wij = w(i, j);
            observed += wij * confusion[i * k + j];
            expected += wij * (rows[i] * cols[j] / n);
        }
    }
    if expected == 0.0 {
        return Ok(None);
    }
    Ok(Some(1.0 - observed / expected))
}

/// Level of measurement of Krippendorff's alpha (its distance function).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// `δ = 0` for equal values, 1 otherwise.
    Nominal,
    /// `δ(c, k) = (Σ_{g=c..k} n_g − (n_c + n_k)/2)²` over the ordered values.
    Ordinal,
    /// `δ = (c − k)²`.
    Interval,
    /// `δ = ((c − k)/(c + k))²` (0 when `c + k = 0`).
    Ratio,
}

impl std::str::FromStr for Level {
    type Err = crate::error::UnknownWord;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "nominal" => Ok(Level::Nominal),
            "ordinal" => Ok(Level::Ordinal),
            "interval" => Ok(Level::Interval),
            "ratio" => Ok(Level::Ratio),
            _ => Err(crate::error::UnknownWord {
                what: "level",
                value: s.to_string(),
                expected: "nominal, ordinal, interval or ratio",
            }),
        }
    }
}

fn finite(values: impl IntoIterator<Item = f64>) -> Result<(), AgreementError> {
    for value in values {
        if !value.is_finite() {
            return Err(AgreementError::NotFinite { value });
        }
    }
    Ok(())
}

/// Krippendorff's alpha, as the `krippendorff` package's `alpha(reliability_data,
/// level_of_measurement=…)` (K. Krippendorff, *Computing Krippendorff's Alpha-Reliability*,
/// 2011): `α = 1 − Σ o·δ / Σ e·δ` with the coincidence matrix
/// `o_ck = Σ_u (n_uc n_uk − [c = k] n_uc) / (m_u − 1)` over units `u` coded `m_u ≥ 2` times,
/// `n_c = Σ_k o_ck`, `n = Σ_c n_c`, expected coincidences `e_ck = (n_c n_k − [c = k] n_c) /
/// (n − 1)` and the [`Level`]'s distance `δ`. The value domain is the sorted set of values that
/// occur.
///
/// `units[u][r]` is coder `r`'s value for unit `u` (`None`: missing). Errors as the package
/// does when fewer than two distinct values occur or no unit has two values; `None` when
/// `Σ e·δ = 0`.
///
/// ```
/// use oloproof_metrics::agreement::{krippendorff_alpha, Level};
///
/// // The package's docstring example (3 coders × 15 units, transposed to units × coders).
/// let coders = [
///     [None, None, None, None, None, Some(3.), Some(4.), Some(1.), Some(2.), Some(1.), Some(1.), Some(3.), Some(3.), None, Some(3.)],
///     [Some(1.), None, Some(2.), Some(1.), Some(3.), Some(3.), Some(4.), Some(3.), None, None, None, None, None, None, None],
///     [None, None, Some(2.), Some(1.), Some(3.), Some(4.), Some(4.), None, Some(2.), Some(1.), Some(1.), Some(3.), Some(3.), None, Some(4.)],
/// ];
/// let units: Vec<Vec<Option<f64>>> = (0..15).map(|u| coders.iter().map(|c| c[u]).collect()).collect();
/// let nominal = krippendorff_alpha(&units, Level::Nominal)?.unwrap();
/// assert!((nominal - 0.691358).abs() < 1e-6);
/// let interval = krippendorff_alpha(&units, Level::Interval)?.unwrap();
/// assert!((interval - 0.810845).abs() < 1e-6);
/// # Ok::<(), oloproof_metrics::agreement::AgreementError>(())
/// ```
pub fn krippendorff_alpha(
    units: &[Vec<Option<f64>>],
    level: Level,
) -> Result<Option<f64>, AgreementError> {
    finite(units.iter().flatten().flatten().copied())?;
    let mut domain: Vec<f64> = units.iter().flatten().flatten().map(|v| v + 0.0).collect();
    domain.sort_unstable_by(f64::total_cmp);
    domain.dedup();
    let v = domain.len();
    if v <= 1 {
        return Err(AgreementError::SingleValue);
    }
    let index = |x: f64| {
        domain
            .binary_search_by(|d| d.total_cmp(&(x + 0.0)))
            .unwrap_or_default()
    };
    let mut o = vec![0f64; v * v];
    let mut pairable = false;
    let mut counts: Vec<(usize, f64)> = Vec::new();
    for unit in units {
        counts.clear();
        for x in unit.iter().flatten() {
            let i = index(*x);
            match counts.iter_mut().find(|c| c.0 == i) {
                Some(c) => c.1 += 1.0,
                None => counts.push((i, 1.0)),
            }
        }
        let m: f64 = counts.iter().map(|c| c.1).sum();
        if m < 2.0 {
            continue;
        }
        pairable = true;
        for &(c, nc) in &counts {
            for &(k, nk) in &counts {
                let num = nc * nk - if c == k { nc } else { 0.0 };
                o[c * v + k] += num / (m - 1.0);
            }
        }
    }
    if !pairable {
        return Err(AgreementError::NoPairableUnit);
    }
    let n_v: Vec<f64> = (0..v).map(|k| (0..v).map(|c| o[c * v + k]).sum()).collect();
    let n: f64 = n_v.iter().sum();
    let delta = |c: usize, k: usize| -> f64 {
        match level {
            Level::Nominal => f64::from(u8::from(c != k)),
            Level::Ordinal => {
                let (lo, hi) = (c.min(k), c.max(k));
                let between: f64 = n_v[lo..=hi].iter().sum();
                let d = between - (n_v[c] + n_v[k]) / 2.0;
                d * d
            }
            Level::Interval => {
                let d = domain[c] - domain[k];
                d * d
            }
            Level::Ratio => {
                let s = domain[c] + domain[k];
                if s == 0.0 {
                    0.0
                } else {
                    let r = (domain[c] - domain[k]) / s;
                    r * r
                }
            }
        }
    };
    let (mut observed, mut expected) = (0.0, 0.0);
    for c in 0..v {
        for k in 0..v {
            let d = delta(c, k);
            observed += o[c * v + k] * d;
            let e = (n_v[c] * n_v[k] - if c == k { n_v[c] } else { 0.0 }) / (n - 1.0);
            expected += e * d;
        }
    }
    if expected == 0.0 || !expected.is_finite() {
        return Ok(None);
    }
    Ok(Some(1.0 - observed / expected))
}

fn check_pair(x: &[f64], y: &[f64]) -> Result<(), AgreementError> {
    if x.len() != y.len() {
        return Err(AgreementError::LengthMismatch {
            left: x.len(),
            right: y.len(),
        });
    }
    finite(x.iter().chain(y).copied())
}

/// Ranks with ties averaged, 1-based (scipy's `rankdata(method="average")`).
pub fn average_ranks(x: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    let mut ranks = vec![0.0; x.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i + 1;
        while j < order.len() && x[order[j]] == x[order[i]] {
            j += 1;
        }
        // Positions i..j (0-based) share the mean of ranks i+1..=j.
        let rank = (i + 1 + j) as f64 / 2.0;
        for &k in &order[i..j] {
            ranks[k] = rank;
        }
        i = j;
    }
    ranks
}

/// Spearman's rank correlation and its two-sided p-value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spearman {
    /// ρ: Pearson's correlation of the average ranks.
    pub rho: f64,
    /// Two-sided p-value from `t = ρ·√((n − 2)/((1 + ρ)(1 − ρ)))` with `n − 2` degrees of
    /// freedom (scipy's `spearmanr`); `None` for `n ≤ 2`.
    pub p_value: Option<f64>,
}

/// Spearman's ρ as scipy's `spearmanr(x, y)`: Pearson's correlation of the average ranks
/// (ties share their mean rank), clipped to `[−1, 1]`. `None` when fewer than two items or
/// either variable is constant (scipy: NaN with a warning).
pub fn spearman(x: &[f64], y: &[f64]) -> Result<Option<Spearman>, AgreementError> {
    check_pair(x, y)?;
    let n = x.len();
    if n < 2 {
        return Ok(None);
    }
    let (rx, ry) = (average_ranks(x), average_ranks(y));
    let mean = (n as f64 + 1.0) / 2.0;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in rx.iter().zip(&ry) {
        let (dx, dy) = (a - mean, b - mean);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if sxx == 0.0 || syy == 0.0 {
        return Ok(None);
    }
    let rho = (sxy / (sxx * syy).sqrt()).clamp(-1.0, 1.0);
    let dof = n as f64 - 2.0;
    let p_value = (n > 2).then(|| {
        let t = rho * (dof / ((rho + 1.0) * (1.0 - rho))).sqrt();
        if t.is_infinite() || t.is_nan() {
            0.0
        } else {
            use statrs::distribution::{ContinuousCDF, StudentsT};
            StudentsT::new(0.0, 1.0, dof).map_or(f64::NAN, |d| 2.0 * d.sf(t.abs()))
        }
    });
    Ok(Some(Spearman { rho, p_value }))
}

/// Pairs `n(n−1)/2` minus pairs tied within runs of equal values of a sorted slice.
fn tied_pairs<T: PartialEq>(sorted: &[T]) -> u64 {
    let mut ties = 0u64;
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i + 1;
        while j < sorted.len() && sorted[j] == sorted[i] {
            j += 1;
        }
        let t = (j - i) as u64;
        ties += t * (t - 1) / 2;
        i = j;
    }
    ties
}

/// Counts strict inversions (`v[i] > v[j]`, `i < j`) by merge sort, sorting `v`.
fn inversions(v: &mut [f64], buf: &mut Vec<f64>) -> u64 {
    let n = v.len();
    if n < 2 {
        return 0;
    }
    let mid = n / 2;
    let mut count = inversions(&mut v[..mid], buf) + inversions(&mut v[mid..], buf);
    buf.clear();
    let (mut i, mut j) = (0, mid);
    while i < mid && j < n {
        if v[j] < v[i] {
            count += (mid - i) as u64;
            buf.push(v[j]);
            j += 1;
        } else {
            buf.push(v[i]);
            i += 1;
        }
    }
    buf.extend_from_slice(&v[i..mid]);
    buf.extend_from_slice(&v[j..n]);
    v.copy_from_slice(buf);
    count
}

/// Kendall's tau-b as scipy's `kendalltau(x, y, variant="b")`, in `O(n log n)` (Knight, *JASA*
/// 61, 1966): `τ_b = (P − Q) / √((n₀ − n₁)(n₀ − n₂))` with `n₀ = n(n−1)/2`, `n₁`, `n₂` the
/// pairs tied in `x`, in `y`, `P − Q = n₀ − n₁ − n₂ + n₃ − 2·Q` (`n₃`: tied in both), clipped
/// to `[−1, 1]`. `None` when fewer than two items or either variable is constant.
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> Result<Option<f64>, AgreementError> {
    check_pair(x, y)?;
    let n = x.len();
    if n < 2 {
        return Ok(None);
    }
    let mut pairs: Vec<(f64, f64)> = x.iter().zip(y).map(|(a, b)| (a + 0.0, b + 0.0)).collect();
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let xs: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let x_ties = tied_pairs(&xs);
    let joint_ties = tied_pairs(&pairs);
    let mut ys: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    let mut buf = Vec::with_capacity(n);
    let discordant = inversions(&mut ys, &mut buf);
    let y_ties = tied_pairs(&ys);
    let total = (n as u64) * (n as u64 - 1) / 2;
    if x_ties == total || y_ties == total {
        return Ok(None);
    }
    let con_minus_dis =
        total as f64 - x_ties as f64 - y_ties as f64 + joint_ties as f64 - 2.0 * discordant as f64;
    let tau = con_minus_dis / ((total - x_ties) as f64).sqrt() / ((total - y_ties) as f64).sqrt();
    Ok(Some(tau.clamp(-1.0, 1.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kappa_weights_and_undefined() {
        let a = [0, 1, 2, 2, 1];
        let b = [0, 2, 2, 1, 1];
        let plain = cohen_kappa(&a, &b, KappaWeights::None).unwrap().unwrap();
        let quad = cohen_kappa(&a, &b, KappaWeights::Quadratic)
            .unwrap()
            .unwrap();
        assert!(quad > plain);
        assert_eq!(cohen_kappa(&[1, 1], &[1, 1], KappaWeights::None), Ok(None));
        assert_eq!(cohen_kappa::<u8>(&[], &[], KappaWeights::None), Ok(None));
    }

    #[test]
    fn krippendorff_errors() {
        let units = vec![vec![Some(1.0), Some(1.0)], vec![Some(1.0), None]];
        assert_eq!(
            krippendorff_alpha(&units, Level::Nominal),
            Err(AgreementError::SingleValue)
        );
        let units = vec![vec![Some(1.0), None], vec![Some(2.0), None]];
        assert_eq!(
            krippendorff_alpha(&units, Level::Nominal),
            Err(AgreementError::NoPairableUnit)
        );
    }

    #[test]
    fn correlations() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        let y = [5.0, 6.0, 7.0, 8.0, 7.0];
        // scipy: spearmanr -> 0.8207826816681233, kendalltau -> 0.7378647873726218.
        let s = spearman(&x, &y).unwrap().unwrap();
        assert!((s.rho - 0.8207826816681233).abs() < 1e-12);
        let t = kendall_tau_b(&x, &y).unwrap().unwrap();
        assert!((t - 0.7378647873726218).abs() < 1e-12);
        assert_eq!(kendall_tau_b(&x, &[1.0; 5]), Ok(None));
        assert_eq!(spearman(&[1.0; 3], &x[..3]), Ok(None));
    }
}
