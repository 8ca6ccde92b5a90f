//! Near-duplicate detection: MinHash signatures (Broder, 1997) with LSH banding (Indyk and
//! Motwani, 1998), and the scores of a detector's pairs against labelled duplicates.
//!
//! **Shingles.** [`shingles`] lowercases the text and takes every run of `k` consecutive
//! characters (Unicode scalar values), as seed 000's `shingles(text, k=5)`. A text shorter than
//! `k` has no shingle.
//!
//! **Hash family.** Each shingle's UTF-8 bytes are hashed to 64 bits with FNV-1a followed by the
//! SplitMix64 finaliser, then reduced modulo the Mersenne prime `p = 2^61 - 1`. Permutation `i`
//! is the universal hash `h_i(x) = (a_i x + b_i) mod p` with `a_i` in `[1, p)` and `b_i` in
//! `[0, p)` drawn from a SplitMix64 stream started at the seed. The signature slot `i` is the
//! minimum of `h_i` over the shingles (`u64::MAX` for an empty set). This is datasketch's
//! `MinHash` scheme (affine permutations modulo `2^61 - 1`) with a different base hash and
//! generator, so the estimates agree with datasketch's in distribution, not value by value.
//!
//! **Estimate.** `Ĵ(A, B)` = share of signature slots that are equal; unbiased for the Jaccard
//! similarity `|A ∩ B| / |A ∪ B|` with variance `J(1 - J) / k`.
//!
//! **Banding.** With `b` bands of `r` rows (`b·r ≤ k`), two documents are candidates when all `r`
//! slots of at least one band agree; the probability is `1 - (1 - J^r)^b`. [`optimal_bands`]
//! chooses `(b, r)` for a Jaccard threshold as datasketch's `MinHashLSH` does.

use std::collections::{HashMap, HashSet};

/// The Mersenne prime `2^61 - 1`.
pub const MERSENNE_61: u64 = (1 << 61) - 1;

/// The distinct `k`-character shingles of the lowercased text.
///
/// ```
/// use oloproof_metrics::ingest::minhash::shingles;
/// let s = shingles("Abcdef", 5);
/// assert!(s.contains("abcde") && s.contains("bcdef") && s.len() == 2);
/// assert!(shingles("abc", 5).is_empty());
/// ```
pub fn shingles(text: &str, k: usize) -> HashSet<String> {
    let chars: Vec<char> = text.to_lowercase().chars().collect();
    if k == 0 || chars.len() < k {
        return HashSet::new();
    }
    chars.windows(k).map(|w| w.iter().collect()).collect()
}

/// `|A ∩ B| / |A ∪ B|`; `None` when both sets are empty.
pub fn jaccard<T: Eq + std::hash::Hash>(a: &HashSet<T>, b: &HashSet<T>) -> Option<f64> {
    let inter = a.intersection(b).count();
    let union = a.len() + b.len() - inter;
    (union > 0).then(|| inter as f64 / union as f64)
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The base hash of a shingle: FNV-1a 64, SplitMix64 finaliser, reduced modulo `2^61 - 1`.
pub fn base_hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let mut state = h;
    splitmix(&mut state) % MERSENNE_61
}

/// `k` seeded affine permutations modulo `2^61 - 1`.
#[derive(Debug, Clone)]
pub struct MinHasher {
    a: Vec<u64>,
    b: Vec<u64>,
}

impl MinHasher {
    /// `num_perm` permutations drawn from a SplitMix64 stream started at `seed`.
    pub fn new(num_perm: usize, seed: u64) -> MinHasher {
        let mut state = seed;
        let mut a = Vec::with_capacity(num_perm);
        let mut b = Vec::with_capacity(num_perm);
        for _ in 0..num_perm {
            a.push(1 + splitmix(&mut state) % (MERSENNE_61 - 1));
            b.push(splitmix(&mut state) % MERSENNE_61);
        }
        MinHasher { a, b }
    }

    /// The number of permutations `k`.
    pub fn num_perm(&self) -> usize {
        self.a.len()
    }

    /// The signature of a set of items (each given as bytes).
    pub fn signature<'a>(&self, items: impl IntoIterator<Item = &'a [u8]>) -> Vec<u64> {
        let mut sig = vec![u64::MAX; self.a.len()];
        for item in items {
            let x = u128::from(base_hash(item));
            for ((s, &a), &b) in sig.iter_mut().zip(&self.a).zip(&self.b) {
                let h = ((u128::from(a) * x + u128::from(b)) % u128::from(MERSENNE_61)) as u64;
                if h < *s {
                    *s = h;
                }
            }
        }
        sig
    }

    /// The signature of a text's `k`-shingles.
    pub fn text_signature(&self, text: &str, k: usize) -> Vec<u64> {
        let s = shingles(text, k);
        self.signature(s.iter().map(|x| x.as_bytes()))
    }
}

/// The share of equal slots: the MinHash estimate of the Jaccard similarity. `None` when the
/// signatures are empty or of different lengths.
pub fn estimate_jaccard(a: &[u64], b: &[u64]) -> Option<f64> {
    if a.is_empty() || a.len() != b.len() {
        return None;
    }
    let equal = a.iter().zip(b).filter(|(x, y)| x == y).count();
    Some(equal as f64 / a.len() as f64)
}

/// `∫ f` on `[lo, hi]` by adaptive Simpson to an absolute tolerance of `1e-13`.
fn integrate(f: &dyn Fn(f64) -> f64, lo: f64, hi: f64) -> f64 {
    fn simpson(a: f64, b: f64, fa: f64, fm: f64, fb: f64) -> f64 {
        (b - a) / 6.0 * (fa + 4.0 * fm + fb)
    }
    #[allow(clippy::too_many_arguments)]
    fn go(
        f: &dyn Fn(f64) -> f64,
        a: f64,
        b: f64,
        fa: f64,
        fm: f64,
        fb: f64,
        whole: f64,
        eps: f64,
        depth: u32,
    ) -> f64 {
        let m = (a + b) / 2.0;
        let (lm, rm) = ((a + m) / 2.0, (m + b) / 2.0);
        let (flm, frm) = (f(lm), f(rm));
        let left = simpson(a, m, fa, flm, fm);
        let right = simpson(m, b, fm, frm, fb);
        if depth == 0 || (left + right - whole).abs() <= 15.0 * eps {
            return left + right + (left + right - whole) / 15.0;
        }
        go(f, a, m, fa, flm, fm, left, eps / 2.0, depth - 1)
            + go(f, m, b, fm, frm, fb, right, eps / 2.0, depth - 1)
    }
    if hi <= lo {
        return 0.0;
    }
    // Start from 16 panels so narrow features are not missed.
    let panels = 16;
    let w = (hi - lo) / panels as f64;
    (0..panels)
        .map(|i| {
            let (a, b) = (lo + w * i as f64, lo + w * (i + 1) as f64);
            let (fa, fm, fb) = (f(a), f((a + b) / 2.0), f(b));
            go(f, a, b, fa, fm, fb, simpson(a, b, fa, fm, fb), 1e-13, 40)
        })
        .sum()
}

/// The `(bands, rows)` that minimise `0.5·FP + 0.5·FN`, where `FP = ∫_0^t P(s) ds` and
/// `FN = ∫_t^1 (1 - P(s)) ds` with `P(s) = 1 - (1 - s^r)^b`, over `b` in `1..=k` and `r` in
/// `1..=k/b` (datasketch `MinHashLSH._optimal_param` with its default weights; the first minimum
/// in that order wins). `None` unless `0 ≤ threshold ≤ 1` and `num_perm ≥ 1`.
pub fn optimal_bands(threshold: f64, num_perm: usize) -> Option<(usize, usize)> {
    if !(0.0..=1.0).contains(&threshold) || num_perm == 0 {
        return None;
    }
    let mut best = (f64::INFINITY, (0, 0));
    for b in 1..=num_perm {
        for r in 1..=num_perm / b {
            let (bf, rf) = (b as f64, r as f64);
            let fp = integrate(&|s: f64| 1.0 - (1.0 - s.powf(rf)).powf(bf), 0.0, threshold);
            let fn_ = integrate(&|s: f64| (1.0 - s.powf(rf)).powf(bf), threshold, 1.0);
            let error = fp * 0.5 + fn_ * 0.5;
            // datasketch keeps the first of exactly tied choices; allow for quadrature noise.
            if error < best.0 - 1e-12 {
                best = (error, (b, r));
            }
        }
    }
    Some(best.1)
}

/// Candidate pairs `(i, j)`, `i < j`, sorted: documents whose signatures agree on every row of at
/// least one of `bands` bands of `rows` rows (the first `bands·rows` slots are used). Empty when
/// the signatures are shorter than `bands·rows`.
pub fn lsh_candidate_pairs(
    signatures: &[Vec<u64>],
    bands: usize,
    rows: usize,
) -> Vec<(usize, usize)> {
    let mut pairs: HashSet<(usize, usize)> = HashSet::new();
    if rows == 0 || signatures.iter().any(|s| s.len() < bands * rows) {
        return Vec::new();
    }
    for band in 0..bands {
        let mut buckets: HashMap<&[u64], Vec<usize>> = HashMap::new();
        for (i, s) in signatures.iter().enumerate() {
            buckets
                .entry(&s[band * rows..(band + 1) * rows])
                .or_default()
                .push(i);
        }
        for members in buckets.values() {
            for (x, &i) in members.iter().enumerate() {
                for &j in &members[x + 1..] {
                    pairs.insert((i.min(j), i.max(j)));
                }
            }
        }
    }
    let mut pairs: Vec<_> = pairs.into_iter().collect();
    pairs.sort_unstable();
    pairs
}

/// Precision, recall and F1 of detected duplicate pairs against labelled ones, plus the merge
/// rates after transitive closure.
#[derive(Debug, Clone, PartialEq)]
pub struct PairScores {
    /// Distinct detected pairs.
    pub detected: usize,
    /// Distinct labelled pairs.
    pub labelled: usize,
    /// Pairs both detected and labelled.
    pub true_positives: usize,
    /// `tp / detected`; `None` when nothing was detected.
    pub precision: Option<f64>,
    /// `tp / labelled`; `None` when nothing is labelled.
    pub recall: Option<f64>,
    /// Harmonic mean of precision and recall; `None` when either is undefined, `0` when both are 0.
    pub f1: Option<f64>,
}

/// Pair-level precision / recall / F1. Pairs are unordered (`(a, b)` = `(b, a)`), duplicates and
/// self-pairs are ignored.
pub fn pair_scores<T: Ord + Clone>(detected: &[(T, T)], labelled: &[(T, T)]) -> PairScores {
    let norm = |p: &[(T, T)]| -> std::collections::BTreeSet<(T, T)> {
        p.iter()
            .filter(|(a, b)| a != b)
            .map(|(a, b)| {
                if a <= b {
                    (a.clone(), b.clone())
                } else {
                    (b.clone(), a.clone())
                }
            })
            .collect()
    };
    let (d, l) = (norm(detected), norm(labelled));
    let tp = d.intersection(&l).count();
    let precision = (!d.is_empty()).then(|| tp as f64 / d.len() as f64);
    let recall = (!l.is_empty()).then(|| tp as f64 / l.len() as f64);
    let f1 = match (precision, recall) {
        (Some(p), Some(r)) if p + r > 0.0 => Some(2.0 * p * r / (p + r)),
        (Some(_), Some(_)) => Some(0.0),
        _ => None,
    };
    PairScores {
        detected: d.len(),
        labelled: l.len(),
        true_positives: tp,
        precision,
        recall,
        f1,
    }
}

/// Merge errors of a deduplication that merges the connected components of its detected pairs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MergeRates {
    /// Document pairs put in the same group by the detector (after transitive closure).
    pub merged_pairs: u64,
    /// Document pairs in the same labelled group.
    pub duplicate_pairs: u64,
    /// Pairs in the same group in both.
    pub both: u64,
    /// Share of merged pairs that are not labelled duplicates (merges that corrupt answers);
    /// `None` when nothing was merged.
    pub false_merge_rate: Option<f64>,
    /// Share of labelled duplicate pairs left in different groups (index space wasted); `None`
    /// when nothing is labelled duplicate.
    pub missed_merge_rate: Option<f64>,
}

/// Merge rates of `n` documents: the detector's groups are the connected components of
/// `detected` (indices below `n`), the labelled groups are given by `gold_group[i]`. Pair counts
/// come from the contingency table of the two partitions (`Σ C(n_ij, 2)`), so the cost is linear.
///
/// ```
/// use oloproof_metrics::ingest::minhash::merge_rates;
/// // Documents 0,1,2 are one duplicate group; the detector chained 0-1 and 2-3.
/// let r = merge_rates(4, &[(0, 1), (2, 3)], &[0, 0, 0, 1]);
/// assert_eq!((r.merged_pairs, r.duplicate_pairs, r.both), (2, 3, 1));
/// assert_eq!(r.false_merge_rate, Some(0.5));
/// assert_eq!(r.missed_merge_rate, Some(2.0 / 3.0));
/// ```
pub fn merge_rates<G: Eq + std::hash::Hash>(
    n: usize,
    detected: &[(usize, usize)],
    gold_group: &[G],
) -> MergeRates {
    let mut parent: Vec<usize> = (0..n).collect();
    fn find(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    for &(a, b) in detected {
        if a < n && b < n {
            let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
            if ra != rb {
                parent[ra.max(rb)] = ra.min(rb);
            }
        }
    }
    let pairs = |c: u64| c * c.saturating_sub(1) / 2;
    let mut pred: HashMap<usize, u64> = HashMap::new();
    let mut gold: HashMap<&G, u64> = HashMap::new();
    let mut cell: HashMap<(usize, &G), u64> = HashMap::new();
    for (i, g) in gold_group.iter().enumerate().take(n) {
        let p = find(&mut parent, i);
        *pred.entry(p).or_default() += 1;
        *gold.entry(g).or_default() += 1;
        *cell.entry((p, g)).or_default() += 1;
    }
    let merged_pairs: u64 = pred.values().map(|&c| pairs(c)).sum();
    let duplicate_pairs: u64 = gold.values().map(|&c| pairs(c)).sum();
    let both: u64 = cell.values().map(|&c| pairs(c)).sum();
    MergeRates {
        merged_pairs,
        duplicate_pairs,
        both,
        false_merge_rate: (merged_pairs > 0)
            .then(|| (merged_pairs - both) as f64 / merged_pairs as f64),
        missed_merge_rate: (duplicate_pairs > 0)
            .then(|| (duplicate_pairs - both) as f64 / duplicate_pairs as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_example_finds_d1_d2() {
        // Seed 000: 5-shingles, 128 permutations, MinHashLSH(threshold=0.8) → query(d1) = [d1, d2].
        let docs = [
            "Mars has two moons, Phobos and Deimos.",
            "Mars has two moons, Phobos and Deimos!",
            "Curiosity rover landed on Mars in 2012.",
        ];
        let hasher = MinHasher::new(128, 1);
        let sigs: Vec<Vec<u64>> = docs.iter().map(|d| hasher.text_signature(d, 5)).collect();
        let (b, r) = optimal_bands(0.8, 128).unwrap();
        assert_eq!((b, r), (9, 13)); // datasketch's choice for (0.8, 128)
        assert_eq!(lsh_candidate_pairs(&sigs, b, r), [(0, 1)]);
        let exact = jaccard(&shingles(docs[0], 5), &shingles(docs[1], 5)).unwrap();
        assert_eq!(exact, 33.0 / 35.0);
        let est = estimate_jaccard(&sigs[0], &sigs[1]).unwrap();
        assert!((est - exact).abs() < 0.1, "{est}");
    }

    #[test]
    fn estimate_is_close_on_average() {
        let hasher = MinHasher::new(256, 7);
        let a: Vec<String> = (0..200).map(|i| format!("s{i}")).collect();
        let b: Vec<String> = (100..300).map(|i| format!("s{i}")).collect(); // J = 100/300
        let sa = hasher.signature(a.iter().map(|s| s.as_bytes()));
        let sb = hasher.signature(b.iter().map(|s| s.as_bytes()));
        let est = estimate_jaccard(&sa, &sb).unwrap();
        assert!((est - 1.0 / 3.0).abs() < 0.1, "{est}");
    }

    #[test]
    fn pair_scores_and_edges() {
        let s = pair_scores(&[(1, 2), (2, 1), (3, 4)], &[(2, 1), (5, 6)]);
        assert_eq!((s.detected, s.labelled, s.true_positives), (2, 2, 1));
        assert_eq!(
            (s.precision, s.recall, s.f1),
            (Some(0.5), Some(0.5), Some(0.5))
        );
        let none = pair_scores::<u8>(&[], &[]);
        assert_eq!((none.precision, none.recall, none.f1), (None, None, None));
        assert_eq!(jaccard::<u8>(&HashSet::new(), &HashSet::new()), None);
        assert_eq!(estimate_jaccard(&[], &[]), None);
        assert_eq!(optimal_bands(1.5, 8), None);
        let r = merge_rates::<u8>(3, &[], &[0, 1, 2]);
        assert_eq!((r.false_merge_rate, r.missed_merge_rate), (None, None));
    }
}
