//! The string similarities of Ragas' `NonLLMStringSimilarity`: `1 − normalized_distance(reference,
//! response)` of rapidfuzz's `distance.Levenshtein`, `Hamming`, `Jaro` and `JaroWinkler`.
//!
//! Strings are compared as sequences of Unicode scalar values (a Python `str`). Formulas
//! (rapidfuzz 3.x):
//!
//! - Levenshtein: `d / max(|a|, |b|)` with unit costs ([`crate::ingest::error_rate::levenshtein`]).
//! - Hamming (`pad=True`): mismatches over the shorter length plus the length difference, over
//!   `max(|a|, |b|)`.
//! - Jaro: `m` matches within `⌊max(|a|, |b|) / 2⌋ − 1` positions, `t` = half the matched
//!   characters out of order (integer division), `sim = (m/|a| + m/|b| + (m − t)/m) / 3`, and the
//!   distance is `1 − sim`.
//! - Jaro–Winkler: `sim + ℓ · 0.1 · (1 − sim)` when `sim > 0.7`, `ℓ` the common prefix (at most 4).
//!
//! Two empty strings have distance 0 (similarity 1) under every measure; one empty string has
//! distance 1. The similarity is computed as Ragas does, `1 − (1 − sim)` for Jaro and
//! Jaro–Winkler, so the floating-point result is the same.

/// Ragas' `DistanceMeasure`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DistanceMeasure {
    /// `levenshtein` (Ragas' default).
    Levenshtein,
    /// `hamming`.
    Hamming,
    /// `jaro`.
    Jaro,
    /// `jaro_winkler`.
    JaroWinkler,
}

impl DistanceMeasure {
    /// Every measure, in Ragas' order.
    pub const ALL: [DistanceMeasure; 4] = [
        DistanceMeasure::Levenshtein,
        DistanceMeasure::Hamming,
        DistanceMeasure::Jaro,
        DistanceMeasure::JaroWinkler,
    ];

    /// Ragas' value of the enum (`levenshtein`, `hamming`, `jaro`, `jaro_winkler`).
    pub fn name(self) -> &'static str {
        match self {
            DistanceMeasure::Levenshtein => "levenshtein",
            DistanceMeasure::Hamming => "hamming",
            DistanceMeasure::Jaro => "jaro",
            DistanceMeasure::JaroWinkler => "jaro_winkler",
        }
    }

    /// The measure named `name` (as [`name`](Self::name)).
    pub fn parse(name: &str) -> Option<DistanceMeasure> {
        DistanceMeasure::ALL.into_iter().find(|m| m.name() == name)
    }

    /// rapidfuzz's `normalized_distance(a, b)` in `[0, 1]`.
    pub fn normalized_distance(self, a: &str, b: &str) -> f64 {
        let a: Vec<char> = a.chars().collect();
        let b: Vec<char> = b.chars().collect();
        let max = a.len().max(b.len());
        match self {
            DistanceMeasure::Levenshtein => {
                if max == 0 {
                    return 0.0;
                }
                crate::ingest::error_rate::levenshtein(&a, &b) as f64 / max as f64
            }
            DistanceMeasure::Hamming => {
                if max == 0 {
                    return 0.0;
                }
                let mismatches = a.iter().zip(&b).filter(|(x, y)| x != y).count();
                (mismatches + max - a.len().min(b.len())) as f64 / max as f64
            }
            DistanceMeasure::Jaro => 1.0 - jaro(&a, &b),
            DistanceMeasure::JaroWinkler => 1.0 - jaro_winkler(&a, &b),
        }
    }

    /// Ragas' `NonLLMStringSimilarity` score: `1 − normalized_distance(reference, response)`.
    pub fn similarity(self, reference: &str, response: &str) -> f64 {
        1.0 - self.normalized_distance(reference, response)
    }
}

/// Jaro similarity of two scalar-value sequences (rapidfuzz's `Jaro.similarity`).
pub fn jaro(a: &[char], b: &[char]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let window = (a.len().max(b.len()) / 2).saturating_sub(1);
    let mut b_used = vec![false; b.len()];
    let mut a_matched = Vec::new();
    for (i, ca) in a.iter().enumerate() {
        let lo = i.saturating_sub(window);
        let hi = (i + window + 1).min(b.len());
        for j in lo..hi {
            if !b_used[j] && b[j] == *ca {
                b_used[j] = true;
                a_matched.push(*ca);
                break;
            }
        }
    }
    let m = a_matched.len();
    if m == 0 {
        return 0.0;
    }
    let b_matched = b.iter().zip(&b_used).filter(|(_, u)| **u).map(|(c, _)| c);
    let out_of_order = a_matched
        .iter()
        .zip(b_matched)
        .filter(|(x, y)| x != y)
        .count();
    let t = (out_of_order / 2) as f64;
    let m = m as f64;
    let mut sim = 0.0;
    sim += m / a.len() as f64;
    sim += m / b.len() as f64;
    sim += (m - t) / m;
    sim / 3.0
}

/// Jaro–Winkler similarity (prefix weight 0.1, prefix at most 4, applied above 0.7).
pub fn jaro_winkler(a: &[char], b: &[char]) -> f64 {
    let prefix = a.iter().zip(b).take(4).take_while(|(x, y)| x == y).count();
    let mut sim = jaro(a, b);
    if sim > 0.7 {
        sim += prefix as f64 * 0.1 * (1.0 - sim);
    }
    sim
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn textbook_values() {
        let c = |s: &str| s.chars().collect::<Vec<_>>();
        // Winkler's examples: MARTHA/MARHTA 0.944 (Jaro) and 0.961 (Jaro–Winkler).
        assert!((jaro(&c("MARTHA"), &c("MARHTA")) - 0.944_444).abs() < 1e-6);
        assert!((jaro_winkler(&c("MARTHA"), &c("MARHTA")) - 0.961_111).abs() < 1e-6);
        assert!((jaro(&c("DIXON"), &c("DICKSONX")) - 0.766_667).abs() < 1e-6);
        assert_eq!(
            DistanceMeasure::Hamming.normalized_distance("karolin", "kathrin"),
            3.0 / 7.0
        );
        assert_eq!(
            DistanceMeasure::Hamming.normalized_distance("abc", "abcde"),
            0.4
        );
        assert_eq!(
            DistanceMeasure::Levenshtein.similarity("kitten", "sitting"),
            1.0 - 3.0 / 7.0
        );
        for m in DistanceMeasure::ALL {
            assert_eq!(m.similarity("", ""), 1.0, "{m:?}");
            assert_eq!(m.similarity("", "x"), 0.0, "{m:?}");
            assert_eq!(DistanceMeasure::parse(m.name()), Some(m));
        }
        // Scalar values, not bytes: one substitution.
        assert_eq!(DistanceMeasure::Levenshtein.similarity("é", "e"), 0.0);
        assert_eq!(DistanceMeasure::Levenshtein.similarity("éa", "ea"), 0.5);
    }
}
