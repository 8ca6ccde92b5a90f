//! Ragas' `RougeScore`: Google's `rouge_score` package (`RougeScorer([rouge_type],
//! use_stemmer=True).score(reference, response)`), `rouge1` or `rougeL`, precision, recall or
//! F-measure.
//!
//! Tokens (`rouge_score.tokenize`): the text lowercased, split on every character outside
//! `[a-z0-9]`, each token longer than 3 characters stemmed with the Porter stemmer
//! ([`super::porter`], NLTK's default mode). With `r` reference and `p` response tokens:
//!
//! - `rouge1`: `c = Σ_w min(count_ref(w), count_resp(w))`, precision `c / max(p, 1)`, recall
//!   `c / max(r, 1)`.
//! - `rougeL`: `c` = the longest common subsequence; 0 for every mode when either side has no
//!   token.
//! - F-measure `2·P·R / (P + R)`, 0 when `P + R = 0` (Lin, "ROUGE: A package for automatic
//!   evaluation of summaries", ACL workshop 2004).

use std::collections::HashMap;

/// Ragas' `rouge_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RougeType {
    /// `rouge1`: unigram overlap.
    Rouge1,
    /// `rougeL`: longest common subsequence (Ragas' default).
    RougeL,
}

impl RougeType {
    /// `rouge1` or `rougeL`.
    pub fn name(self) -> &'static str {
        match self {
            RougeType::Rouge1 => "rouge1",
            RougeType::RougeL => "rougeL",
        }
    }
}

/// Ragas' `mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RougeMode {
    /// `precision`: share of the response's tokens matched.
    Precision,
    /// `recall`: share of the reference's tokens matched.
    Recall,
    /// `fmeasure` (Ragas' default).
    Fmeasure,
}

impl RougeMode {
    /// `precision`, `recall` or `fmeasure`.
    pub fn name(self) -> &'static str {
        match self {
            RougeMode::Precision => "precision",
            RougeMode::Recall => "recall",
            RougeMode::Fmeasure => "fmeasure",
        }
    }
}

/// Precision, recall and F-measure of one ROUGE type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RougeScores {
    /// Matched over the response's tokens.
    pub precision: f64,
    /// Matched over the reference's tokens.
    pub recall: f64,
    /// Their harmonic mean.
    pub fmeasure: f64,
}

/// Ragas' `RougeScore` value.
pub fn rouge_score(reference: &str, response: &str, kind: RougeType, mode: RougeMode) -> f64 {
    let s = rouge(reference, response, kind);
    match mode {
        RougeMode::Precision => s.precision,
        RougeMode::Recall => s.recall,
        RougeMode::Fmeasure => s.fmeasure,
    }
}

/// `rouge_score`'s scores of `kind` (target = `reference`, prediction = `response`).
pub fn rouge(reference: &str, response: &str, kind: RougeType) -> RougeScores {
    let target = tokenize(reference);
    let prediction = tokenize(response);
    match kind {
        RougeType::Rouge1 => {
            let mut counts: HashMap<&str, (usize, usize)> = HashMap::new();
            for t in &target {
                counts.entry(t).or_default().0 += 1;
            }
            for t in &prediction {
                counts.entry(t).or_default().1 += 1;
            }
            let common: usize = counts.values().map(|(a, b)| (*a).min(*b)).sum();
            let precision = common as f64 / prediction.len().max(1) as f64;
            let recall = common as f64 / target.len().max(1) as f64;
            scores(precision, recall)
        }
        RougeType::RougeL => {
            if target.is_empty() || prediction.is_empty() {
                return RougeScores {
                    precision: 0.0,
                    recall: 0.0,
                    fmeasure: 0.0,
                };
            }
            let lcs = lcs_length(&target, &prediction);
            scores(
                lcs as f64 / prediction.len() as f64,
                lcs as f64 / target.len() as f64,
            )
        }
    }
}

fn scores(precision: f64, recall: f64) -> RougeScores {
    let fmeasure = if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    };
    RougeScores {
        precision,
        recall,
        fmeasure,
    }
}

/// Length of the longest common subsequence (one row of the dynamic programme at a time).
fn lcs_length(a: &[String], b: &[String]) -> usize {
    let mut prev = vec![0usize; b.len() + 1];
    let mut row = vec![0usize; b.len() + 1];
    for x in a {
        for (j, y) in b.iter().enumerate() {
            row[j + 1] = if x == y {
                prev[j] + 1
            } else {
                prev[j + 1].max(row[j])
            };
        }
        std::mem::swap(&mut prev, &mut row);
    }
    prev[b.len()]
}

/// `rouge_score.tokenize.tokenize(text, PorterStemmer())`.
pub fn tokenize(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|t| !t.is_empty())
        .map(|t| {
            if t.len() > 3 {
                super::porter::stem(t)
            } else {
                t.to_string()
            }
        })
        .filter(|t| !t.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rouge_follows_the_package() {
        assert_eq!(tokenize("The Cats, running!"), ["the", "cat", "run"]);
        let s = rouge(
            "the cat sat on the mat",
            "the cat on mat",
            RougeType::RougeL,
        );
        assert_eq!(s.precision, 1.0);
        assert!((s.recall - 4.0 / 6.0).abs() < 1e-15);
        let s = rouge("a b", "", RougeType::Rouge1);
        assert_eq!((s.precision, s.recall, s.fmeasure), (0.0, 0.0, 0.0));
        assert_eq!(
            rouge_score("x y", "y x", RougeType::RougeL, RougeMode::Fmeasure),
            0.5
        );
    }
}
