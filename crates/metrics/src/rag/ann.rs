//! Recall@k of an approximate-nearest-neighbour index against exact brute-force neighbours
//! computed from the same vectors (seed 000, "Recall@k sous approximation": FAISS
//! `IndexHNSWFlat`/`IndexIVFFlat` against `IndexFlatIP`/`IndexFlatL2`).
//!
//! Distances, smaller is nearer:
//! * [`Distance::Cosine`]: `1 − a·b / (‖a‖·‖b‖)` (a zero vector has cosine 0 with everything);
//! * [`Distance::Dot`]: `−a·b` (maximum inner product, FAISS `IndexFlatIP`);
//! * [`Distance::L2`]: `‖a − b‖₂` (FAISS `IndexFlatL2` reports its square; the order is the
//!   same).
//!
//! All arithmetic is in `f64` (float32 vectors are widened first).

use super::npy::Matrix;

/// How nearness is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distance {
    /// `1 − cosine similarity`.
    Cosine,
    /// Negative inner product.
    Dot,
    /// Euclidean distance.
    L2,
}

impl Distance {
    /// Parses `cosine`, `dot` or `l2`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "cosine" => Some(Distance::Cosine),
            "dot" | "ip" => Some(Distance::Dot),
            "l2" | "euclidean" => Some(Distance::L2),
            _ => None,
        }
    }

    /// The distance between `a` and `b` (same length).
    pub fn between(self, a: &[f64], b: &[f64]) -> f64 {
        match self {
            Distance::Dot => -dot(a, b),
            Distance::L2 => a
                .iter()
                .zip(b)
                .map(|(x, y)| (x - y) * (x - y))
                .sum::<f64>()
                .sqrt(),
            Distance::Cosine => {
                let norm = (dot(a, a) * dot(b, b)).sqrt();
                if norm == 0.0 {
                    1.0
                } else {
                    1.0 - dot(a, b) / norm
                }
            }
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The `k` rows of `corpus` nearest to `query`, nearest first, as `(row, distance)`; equal
/// distances are ordered by row index. Fewer than `k` when the corpus is smaller.
pub fn exact_neighbours(
    corpus: &Matrix,
    query: &[f64],
    k: usize,
    distance: Distance,
) -> Vec<(usize, f64)> {
    let mut all: Vec<(usize, f64)> = (0..corpus.rows)
        .map(|i| (i, distance.between(corpus.row(i), query)))
        .collect();
    let order = |a: &(usize, f64), b: &(usize, f64)| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0));
    let k = k.min(all.len());
    if k < all.len() && k > 0 {
        all.select_nth_unstable_by(k - 1, order);
    }
    all.truncate(k);
    all.sort_unstable_by(order);
    all
}

/// Recall of one query's approximate neighbours.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnnRecall {
    /// `|top_k(approx) ∩ exact_k| / |exact_k|` by row identity (FAISS's "intersection"
    /// recall; ties in the exact list are broken by row index).
    pub ids: f64,
    /// ann-benchmarks' tie-robust `knn` recall: the share of the first `k` approximate
    /// neighbours whose distance is at most the `k`-th exact distance plus `epsilon`,
    /// divided by `k` (Aumüller, Bernhardsson and Faithfull, "ANN-Benchmarks", 2020).
    pub distance: f64,
}

/// Scores `approx` (row indices, nearest first; duplicates count once) against the exact
/// neighbours `exact` from [`exact_neighbours`] (`exact.len()` is the effective `k`). `None`
/// when `exact` is empty.
pub fn ann_recall(
    corpus: &Matrix,
    query: &[f64],
    approx: &[usize],
    exact: &[(usize, f64)],
    distance: Distance,
    epsilon: f64,
) -> Option<AnnRecall> {
    let k = exact.len();
    let threshold = exact.last()?.1 + epsilon;
    let mut seen = std::collections::BTreeSet::new();
    let top: Vec<usize> = approx
        .iter()
        .copied()
        .filter(|r| seen.insert(*r))
        .take(k)
        .collect();
    let exact_rows: std::collections::BTreeSet<usize> = exact.iter().map(|(r, _)| *r).collect();
    let hits = top.iter().filter(|r| exact_rows.contains(r)).count();
    let close = top
        .iter()
        .filter(|r| distance.between(corpus.row(**r), query) <= threshold)
        .count();
    Some(AnnRecall {
        ids: hits as f64 / k as f64,
        distance: close as f64 / k as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus() -> Matrix {
        Matrix {
            rows: 4,
            cols: 2,
            data: vec![1.0, 0.0, 0.0, 1.0, 0.7, 0.7, -1.0, 0.0],
        }
    }

    #[test]
    fn exact_neighbours_by_each_distance() {
        let c = corpus();
        let q = [1.0, 0.1];
        let rows = |d| {
            exact_neighbours(&c, &q, 2, d)
                .into_iter()
                .map(|(r, _)| r)
                .collect::<Vec<_>>()
        };
        assert_eq!(rows(Distance::L2), vec![0, 2]);
        assert_eq!(rows(Distance::Cosine), vec![0, 2]);
        assert_eq!(rows(Distance::Dot), vec![0, 2]);
        let far = [10.0, 10.0];
        let dot: Vec<usize> = exact_neighbours(&c, &far, 1, Distance::Dot)
            .into_iter()
            .map(|(r, _)| r)
            .collect();
        assert_eq!(dot, vec![2]);
        assert_eq!(exact_neighbours(&c, &q, 10, Distance::L2).len(), 4);
    }

    #[test]
    fn recall_counts_hits_and_ties() {
        let c = corpus();
        let q = [1.0, 0.1];
        let exact = exact_neighbours(&c, &q, 2, Distance::L2);
        let r = ann_recall(&c, &q, &[0, 3], &exact, Distance::L2, 1e-3).unwrap();
        assert_eq!(r.ids, 0.5);
        assert_eq!(r.distance, 0.5);
        let r = ann_recall(&c, &q, &[0, 0, 2], &exact, Distance::L2, 1e-3).unwrap();
        assert_eq!(r.ids, 1.0);
        // Two rows at the same distance: either is a correct neighbour for the distance recall.
        let tie = Matrix {
            rows: 3,
            cols: 1,
            data: vec![1.0, -1.0, 5.0],
        };
        let exact = exact_neighbours(&tie, &[0.0], 1, Distance::L2);
        let r = ann_recall(&tie, &[0.0], &[1], &exact, Distance::L2, 0.0).unwrap();
        assert_eq!((r.ids, r.distance), (0.0, 1.0));
        assert_eq!(ann_recall(&tie, &[0.0], &[1], &[], Distance::L2, 0.0), None);
    }
}
