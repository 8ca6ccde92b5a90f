//! Per-document checks of an ingestion pipeline: extraction completeness, Unicode normalisation
//! agreement, title accuracy and context compression.

use std::collections::HashMap;

use unicode_normalization::UnicodeNormalization;

/// The length of the longest common subsequence of `a` and `b`, by Hyyrö's bit-parallel
/// algorithm (Allison and Dix, 1986; Hyyrö, 2004): `O(|a|·|b| / 64)` time, `O(σ·|a| / 64)` space
/// for `σ` distinct items of `a`.
///
/// ```
/// use oloproof_metrics::ingest::document::lcs_len;
/// let a: Vec<char> = "Phobos and Deimos".chars().collect();
/// let b: Vec<char> = "Phobs and Deirnos".chars().collect();
/// assert_eq!(lcs_len(&a, &b), 15);
/// ```
pub fn lcs_len<T: Eq + std::hash::Hash>(a: &[T], b: &[T]) -> usize {
    let n = a.len();
    if n == 0 || b.is_empty() {
        return 0;
    }
    let words = n.div_ceil(64);
    let mut masks: HashMap<&T, Vec<u64>> = HashMap::new();
    for (i, x) in a.iter().enumerate() {
        masks.entry(x).or_insert_with(|| vec![0; words])[i / 64] |= 1 << (i % 64);
    }
    let mut v = vec![u64::MAX; words];
    for y in b {
        let Some(m) = masks.get(y) else { continue };
        // V' = (V + (V & M)) | (V & !M), with the carry rippling across words.
        let mut carry = 0u64;
        for (vw, &mw) in v.iter_mut().zip(m) {
            let u = *vw & mw;
            let (s1, c1) = vw.overflowing_add(u);
            let (s2, c2) = s1.overflowing_add(carry);
            carry = u64::from(c1 || c2);
            *vw = s2 | (*vw & !mw);
        }
    }
    let tail = n % 64;
    v.iter()
        .enumerate()
        .map(|(i, &w)| {
            let w = if i == words - 1 && tail != 0 {
                w | (u64::MAX << tail)
            } else {
                w
            };
            w.count_zeros() as usize
        })
        .sum()
}

/// Extraction completeness of one document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Completeness {
    /// Characters of the expected text recovered, in order, by the extraction (the length of the
    /// longest common subsequence).
    pub recovered: u64,
    /// Characters of the expected (manually cleaned) text.
    pub expected: u64,
    /// Characters of the extracted text.
    pub extracted: u64,
}

impl Completeness {
    /// `recovered / expected` (in `[0, 1]`); `None` when nothing is expected.
    pub fn ratio(&self) -> Option<f64> {
        (self.expected > 0).then(|| self.recovered as f64 / self.expected as f64)
    }

    /// `extracted / expected` (seed 000's `extracted_chars / expected_chars`, which rewards
    /// garbage as much as text; can exceed 1); `None` when nothing is expected.
    pub fn length_ratio(&self) -> Option<f64> {
        (self.expected > 0).then(|| self.extracted as f64 / self.expected as f64)
    }

    /// Adds another document (micro pooling: ratios of sums).
    pub fn add(&mut self, o: Completeness) {
        self.recovered += o.recovered;
        self.expected += o.expected;
        self.extracted += o.extracted;
    }
}

/// Completeness of `extracted` against `expected`, over Unicode scalar values.
///
/// ```
/// use oloproof_metrics::ingest::document::completeness;
/// let c = completeness("Table 1 Results", "Table 1: Results (footnote a)");
/// assert_eq!(c.recovered, 15);
/// assert_eq!(c.expected, 29);
/// ```
pub fn completeness(extracted: &str, expected: &str) -> Completeness {
    let x: Vec<char> = extracted.chars().collect();
    let e: Vec<char> = expected.chars().collect();
    Completeness {
        recovered: lcs_len(&e, &x) as u64,
        expected: e.len() as u64,
        extracted: x.len() as u64,
    }
}

/// Whether the NFC and NFKC forms of `text` are identical (Python:
/// `unicodedata.normalize("NFC", t) == unicodedata.normalize("NFKC", t)`). The tables are those of
/// the `unicode-normalization` crate, which can be a newer Unicode version than a given Python's.
///
/// ```
/// use oloproof_metrics::ingest::document::nfc_nfkc_agree;
/// assert!(nfc_nfkc_agree("Mars, café"));
/// assert!(!nfc_nfkc_agree("ﬁle")); // the ligature decomposes under NFKC only
/// ```
pub fn nfc_nfkc_agree(text: &str) -> bool {
    text.nfc().eq(text.nfkc())
}

/// Context compression totals: tokens before and after compression, summed over requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Compression {
    /// Context tokens before compression (input to the compressor).
    pub before: u64,
    /// Context tokens after compression (what reaches the model).
    pub after: u64,
}

impl Compression {
    /// Seed 000's compression ratio, input tokens / output tokens (`4.0` = four times smaller),
    /// as a ratio of sums; `None` when nothing is left after compression.
    pub fn ratio(&self) -> Option<f64> {
        (self.after > 0).then(|| self.before as f64 / self.after as f64)
    }

    /// The share of tokens kept, `after / before` (the inverse); `None` when `before` is 0.
    pub fn kept(&self) -> Option<f64> {
        (self.before > 0).then(|| self.after as f64 / self.before as f64)
    }

    /// Adds a request.
    pub fn add(&mut self, o: Compression) {
        self.before += o.before;
        self.after += o.after;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_lcs(a: &[u8], b: &[u8]) -> usize {
        let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
        for i in 1..=a.len() {
            for j in 1..=b.len() {
                d[i][j] = if a[i - 1] == b[j - 1] {
                    d[i - 1][j - 1] + 1
                } else {
                    d[i - 1][j].max(d[i][j - 1])
                };
            }
        }
        d[a.len()][b.len()]
    }

    #[test]
    fn lcs_matches_the_quadratic_dp_across_word_boundaries() {
        let mut state = 11u64;
        let mut next = |n: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % n) as u8
        };
        for len in [1usize, 5, 63, 64, 65, 127, 128, 129, 300] {
            let a: Vec<u8> = (0..len).map(|_| next(4)).collect();
            let b: Vec<u8> = (0..len * 3 / 4 + 1).map(|_| next(4)).collect();
            assert_eq!(lcs_len(&a, &b), naive_lcs(&a, &b), "len {len}");
            assert_eq!(lcs_len(&b, &a), naive_lcs(&b, &a), "len {len}");
        }
        assert_eq!(lcs_len::<u8>(&[], &[1]), 0);
    }

    #[test]
    fn ratios() {
        let mut c = completeness("abc", "abcd");
        assert_eq!(c.ratio(), Some(0.75));
        c.add(completeness("xyzw", ""));
        assert_eq!(c.length_ratio(), Some(7.0 / 4.0));
        assert_eq!(completeness("a", "").ratio(), None);
        let mut z = Compression {
            before: 1000,
            after: 250,
        };
        assert_eq!(z.ratio(), Some(4.0));
        z.add(Compression {
            before: 0,
            after: 0,
        });
        assert_eq!(z.kept(), Some(0.25));
        assert_eq!(Compression::default().ratio(), None);
    }
}
