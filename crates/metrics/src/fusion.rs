//! Rank fusion: combining several rankings of the same topic into one.
//!
//! Methods: reciprocal rank fusion (RRF, Cormack, Clarke & Büttcher, SIGIR 2009), optionally
//! weighted; the Comb family of Fox & Shaw (TREC-2, 1994): CombSUM, CombMNZ, CombMAX, CombMIN,
//! CombMED, CombANZ; a weighted sum; and the convex combination `α·first + (1 − α)·second`
//! (typically dense and sparse retrieval). Score-based methods first normalise each input
//! ranking with a [`Normalization`].
//!
//! **Input order.** Each input ranking is first put in trec_eval's order (score descending,
//! ties by document identifier in descending byte order, see
//! [`crate::ranking::rank`]); ranks used by RRF and by rank normalisation are positions in that
//! order, starting at 1.
//!
//! **Tie rule.** The fused ranking is sorted by fused score descending, ties broken by document
//! identifier in descending byte order — the rule trec_eval applies when it reads the fused run
//! back, so the written ranks and the evaluated ranks agree.
//!
//! # Example: the seed-000 RRF example
//!
//! ```
//! use oloproof_metrics::fusion::{fuse, FusionMethod, FusionOptions};
//! use oloproof_metrics::ranking::Retrieved;
//!
//! let ranked = |docs: &[&'static str]| -> Vec<Retrieved<&'static str>> {
//!     docs.iter().enumerate().map(|(i, d)| Retrieved::new(*d, -(i as f64))).collect()
//! };
//! let dense = ranked(&["d3", "d7", "d1", "d4", "d2", "d9", "d10"]);
//! let sparse = ranked(&["d2", "d3", "d8", "d1", "d11", "d4", "d6"]);
//! let fused = fuse(&[dense, sparse], &FusionOptions::new(FusionMethod::Rrf { k: 60.0 }));
//! assert_eq!(fused[0].doc, "d3"); // 1/61 + 1/62 = 0.03252
//! assert!((fused[0].score - (1.0 / 61.0 + 1.0 / 62.0)).abs() < 1e-15);
//! assert_eq!((fused[1].doc, fused[2].doc), ("d2", "d1"));
//! ```

use crate::ranking::{rank, Compat, Retrieved};

/// How each input ranking's scores are normalised before score-based fusion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Normalization {
    /// Scores as given.
    None,
    /// `(s − min) / (max − min)`; all scores equal map to 1.
    #[default]
    MinMax,
    /// `(s − mean) / sd` (population standard deviation); zero spread maps to 0.
    ZScore,
    /// `s / Σ s`; a zero sum leaves the scores unchanged.
    Sum,
    /// `s / max`; a zero maximum leaves the scores unchanged.
    Max,
    /// Rank-based: `(n − r + 1) / n` for the document at rank `r` of `n`.
    Rank,
}

/// A fusion method.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum FusionMethod {
    /// Reciprocal rank fusion: `Σᵢ wᵢ / (k + rankᵢ(d))` over the rankings containing `d`.
    Rrf {
        /// The constant `k` (60 in the original paper).
        k: f64,
    },
    /// CombSUM: `Σᵢ sᵢ(d)`.
    CombSum,
    /// CombMNZ: `|{i : d ∈ rankingᵢ}| · Σᵢ sᵢ(d)`.
    CombMnz,
    /// CombMAX: `maxᵢ sᵢ(d)`.
    CombMax,
    /// CombMIN: `minᵢ sᵢ(d)`.
    CombMin,
    /// CombMED: median of `sᵢ(d)` (mean of the two middle values for an even count).
    CombMed,
    /// CombANZ: `Σᵢ sᵢ(d) / |{i : d ∈ rankingᵢ}|`.
    CombAnz,
    /// Weighted sum `Σᵢ wᵢ sᵢ(d)`.
    WeightedSum,
    /// Convex combination of exactly two rankings: `α·s₁(d) + (1 − α)·s₂(d)`, a missing
    /// document contributing 0.
    Convex {
        /// Weight of the first ranking.
        alpha: f64,
    },
}

/// Options of [`fuse`].
#[derive(Debug, Clone, PartialEq)]
pub struct FusionOptions {
    /// The method.
    pub method: FusionMethod,
    /// Normalisation for score-based methods (ignored by RRF).
    pub normalization: Normalization,
    /// One weight per ranking for `Rrf` and `WeightedSum` (empty: all 1).
    pub weights: Vec<f64>,
    /// Keep at most this many fused documents (`None`: all).
    pub depth: Option<usize>,
}

impl FusionOptions {
    /// The weight of input `i` (1 when not given).
    fn weight(&self, i: usize) -> f64 {
        self.weights.get(i).copied().unwrap_or(1.0)
    }

    /// Options for `method` with min-max normalisation, unit weights and no depth limit.
    pub fn new(method: FusionMethod) -> Self {
        Self {
            method,
            normalization: Normalization::MinMax,
            weights: Vec::new(),
            depth: None,
        }
    }
}

fn normalize<D>(ranking: &[Retrieved<D>], norm: Normalization) -> Vec<f64> {
    let s: Vec<f64> = ranking.iter().map(|r| r.score).collect();
    let n = s.len() as f64;
    match norm {
        Normalization::None => s,
        Normalization::MinMax => {
            let (lo, hi) = s
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
                    (l.min(x), h.max(x))
                });
            if hi > lo {
                s.iter().map(|x| (x - lo) / (hi - lo)).collect()
            } else {
                vec![1.0; s.len()]
            }
        }
        Normalization::ZScore => {
            let mean = s.iter().sum::<f64>() / n;
            let sd = (s.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n).sqrt();
            if sd > 0.0 {
                s.iter().map(|x| (x - mean) / sd).collect()
            } else {
                vec![0.0; s.len()]
            }
        }
        Normalization::Sum => {
            let total: f64 = s.iter().sum();
            if total != 0.0 {
                s.iter().map(|x| x / total).collect()
            } else {
                s
            }
        }
        Normalization::Max => {
            let max = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if max != 0.0 && max.is_finite() {
                s.iter().map(|x| x / max).collect()
            } else {
                s
            }
        }
        Normalization::Rank => (0..s.len()).map(|i| (n - i as f64) / n).collect(),
    }
}

/// Fuses the rankings of one topic. Each input is re-ranked with trec_eval's rule first; the
/// output is sorted by fused score with the tie rule of the module documentation.
pub fn fuse<D>(rankings: &[Vec<Retrieved<D>>], options: &FusionOptions) -> Vec<Retrieved<D>>
where
    D: AsRef<[u8]> + Clone + Ord,
{
    // Every (document, input, value), grouped by document with a stable sort: a document's
    // values stay in input order, so each sum adds them in the same order as ever.
    let mut entries: Vec<(D, usize, f64)> = Vec::with_capacity(rankings.iter().map(Vec::len).sum());
    for (i, ranking) in rankings.iter().enumerate() {
        entries.extend(input_values(ranking, i, options).map(|(doc, v)| (doc, i, v)));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let fused = entries
        .chunk_by(|a, b| a.0 == b.0)
        .map(|group| {
            let score = fused_score(options, group.iter().map(|&(_, i, v)| (i, v)));
            Retrieved::new(group[0].0.clone(), score)
        })
        .collect();
    ranked_to_depth(fused, options)
}

/// Input `i`'s documents in trec_eval's order, each with the value it brings to the fusion:
/// `wᵢ / (k + rank)` for RRF, its normalised score otherwise.
fn input_values<D: AsRef<[u8]> + Clone>(
    ranking: &[Retrieved<D>],
    i: usize,
    options: &FusionOptions,
) -> impl Iterator<Item = (D, f64)> {
    let mut r = ranking.to_vec();
    rank(&mut r, Compat::V10);
    let values: Vec<f64> = match options.method {
        FusionMethod::Rrf { k } => (0..r.len())
            .map(|pos| options.weight(i) / (k + pos as f64 + 1.0))
            .collect(),
        _ => normalize(&r, options.normalization),
    };
    r.into_iter().map(|x| x.doc).zip(values)
}

/// A document's fused score from its `(input, value)` pairs, in input order (sums add them in
/// that order).
fn fused_score(options: &FusionOptions, vals: impl Iterator<Item = (usize, f64)> + Clone) -> f64 {
    let values = vals.clone().map(|(_, v)| v);
    let sum: f64 = values.clone().sum();
    let count = vals.clone().count() as f64;
    match options.method {
        FusionMethod::Rrf { .. } | FusionMethod::CombSum => sum,
        FusionMethod::CombMnz => sum * count,
        FusionMethod::CombAnz => sum / count,
        FusionMethod::CombMax => values.fold(f64::NEG_INFINITY, f64::max),
        FusionMethod::CombMin => values.fold(f64::INFINITY, f64::min),
        FusionMethod::CombMed => {
            let mut x: Vec<f64> = values.collect();
            x.sort_by(f64::total_cmp);
            let m = x.len() / 2;
            if x.len() % 2 == 1 {
                x[m]
            } else {
                (x[m - 1] + x[m]) / 2.0
            }
        }
        FusionMethod::WeightedSum => vals.map(|(i, v)| options.weight(i) * v).sum(),
        FusionMethod::Convex { alpha } => vals
            .map(|(i, v)| match i {
                0 => alpha * v,
                1 => (1.0 - alpha) * v,
                _ => 0.0,
            })
            .sum(),
    }
}

/// The fused list in trec_eval's order, cut to the options' depth.
fn ranked_to_depth<D: AsRef<[u8]>>(
    mut fused: Vec<Retrieved<D>>,
    options: &FusionOptions,
) -> Vec<Retrieved<D>> {
    rank(&mut fused, Compat::V10);
    if let Some(d) = options.depth {
        fused.truncate(d);
    }
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranked(docs: &[&'static str]) -> Vec<Retrieved<&'static str>> {
        docs.iter()
            .enumerate()
            .map(|(i, d)| Retrieved::new(*d, 100.0 - i as f64))
            .collect()
    }

    /// Seed 000: dense [d3,d7,d1,d4,d2,d9,d10], sparse [d2,d3,d8,d1,d11,d4,d6], k = 60 gives
    /// d3 = 0.03252 (1/61 + 1/62), d2 = 0.03178, d1 = 0.03150.
    #[test]
    fn seed_000_rrf() {
        let dense = ranked(&["d3", "d7", "d1", "d4", "d2", "d9", "d10"]);
        let sparse = ranked(&["d2", "d3", "d8", "d1", "d11", "d4", "d6"]);
        let f = fuse(
            &[dense, sparse],
            &FusionOptions::new(FusionMethod::Rrf { k: 60.0 }),
        );
        let top: Vec<(&str, String)> = f[..3]
            .iter()
            .map(|r| (r.doc, format!("{:.5}", r.score)))
            .collect();
        assert_eq!(
            top,
            [
                ("d3", "0.03252".to_string()),
                ("d2", "0.03178".to_string()),
                ("d1", "0.03150".to_string())
            ]
        );
    }

    #[test]
    fn comb_family() {
        let a = vec![Retrieved::new("x", 3.0), Retrieved::new("y", 1.0)];
        let b = vec![Retrieved::new("y", 10.0), Retrieved::new("z", 0.0)];
        let run = |m| fuse(&[a.clone(), b.clone()], &FusionOptions::new(m));
        let sum = run(FusionMethod::CombSum);
        assert_eq!(sum[0].doc, "y"); // 0 + 1 = 1, x = 1: tie falls to docno descending
        assert_eq!(sum[0].score, 1.0);
        let mnz = run(FusionMethod::CombMnz);
        assert_eq!((mnz[0].doc, mnz[0].score), ("y", 2.0));
        let convex = run(FusionMethod::Convex { alpha: 0.75 });
        assert_eq!((convex[0].doc, convex[0].score), ("x", 0.75));
        let med = run(FusionMethod::CombMed);
        assert_eq!(
            med.iter().find(|r| r.doc == "y").map(|r| r.score),
            Some(0.5)
        );
    }

    /// The fusion grouped as it was before the sort: a `BTreeMap` of each document's
    /// `(input, value)` pairs. The grouping is what this reference checks; the values and the
    /// score of a group are the module's own.
    fn fuse_with_a_map(
        rankings: &[Vec<Retrieved<String>>],
        options: &FusionOptions,
    ) -> Vec<Retrieved<String>> {
        let mut scores: std::collections::BTreeMap<String, Vec<(usize, f64)>> =
            std::collections::BTreeMap::new();
        for (i, ranking) in rankings.iter().enumerate() {
            for (doc, v) in input_values(ranking, i, options) {
                scores.entry(doc).or_default().push((i, v));
            }
        }
        let fused = scores
            .into_iter()
            .map(|(doc, vals)| Retrieved::new(doc, fused_score(options, vals.iter().copied())))
            .collect();
        ranked_to_depth(fused, options)
    }

    /// Every method and normalization, on generated rankings with repeated documents, tied
    /// and equal scores, weights and depths: the same documents and bit-identical scores as
    /// the map-based reference.
    #[test]
    fn fusion_matches_the_map_based_reference() {
        // A fixed xorshift stream: no dependency for a test's randomness.
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let methods = [
            FusionMethod::Rrf { k: 60.0 },
            FusionMethod::CombSum,
            FusionMethod::CombMnz,
            FusionMethod::CombMax,
            FusionMethod::CombMin,
            FusionMethod::CombMed,
            FusionMethod::CombAnz,
            FusionMethod::WeightedSum,
            FusionMethod::Convex { alpha: 0.3 },
        ];
        let norms = [
            Normalization::None,
            Normalization::MinMax,
            Normalization::ZScore,
            Normalization::Sum,
            Normalization::Max,
            Normalization::Rank,
        ];
        for round in 0..3000 {
            let lists = 1 + next(4) as usize;
            let rankings: Vec<Vec<Retrieved<String>>> = (0..lists)
                .map(|_| {
                    (0..next(12))
                        .map(|_| {
                            let doc = format!("d{}", next(15));
                            let score = (next(7) as f64) * 0.5 - 1.0;
                            Retrieved::new(doc, score)
                        })
                        .collect()
                })
                .collect();
            let mut options = FusionOptions::new(methods[round % methods.len()]);
            options.normalization = norms[(round / methods.len()) % norms.len()];
            options.weights = (0..lists).map(|_| 0.25 + next(4) as f64 * 0.5).collect();
            options.depth = (next(3) > 0).then(|| next(20) as usize);
            let ours = fuse(&rankings, &options);
            let theirs = fuse_with_a_map(&rankings, &options);
            let bits = |f: &[Retrieved<String>]| {
                f.iter()
                    .map(|r| (r.doc.clone(), r.score.to_bits()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(bits(&ours), bits(&theirs), "round {round}: {options:?}");
        }
    }
}
