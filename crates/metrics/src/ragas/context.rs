//! Ragas' `NonLLMContextPrecisionWithReference` and `NonLLMContextRecall`: retrieved contexts
//! matched to reference contexts by a string similarity ([`DistanceMeasure`]), no LLM.
//!
//! - Precision: each retrieved context `rcᵢ` is relevant when `maxⱼ sim(rcᵢ, refⱼ) ≥ threshold`;
//!   the score is Ragas' average precision `Σᵢ vᵢ · (Σ_{k≤i} v_k / i) / (Σ vᵢ + 1e−10)`
//!   (`_calculate_average_precision`, with its `1e−10`, so no relevant context gives 0).
//! - Recall: each reference context is found when `maxᵢ sim(rcᵢ, ref) > threshold` (strictly
//!   greater, as Ragas); the score is the share found.
//!
//! The arithmetic is done in Ragas' order so the values are identical. Undefined cases return
//! `None` where Ragas would fail or give NaN: no reference context (Ragas: `max()` of an empty
//! list, or `0/0`). With no retrieved context, precision is 0 (as Ragas) and recall is 0
//! (Ragas raises on `max([])` and reports NaN; nothing retrieved recalls nothing).

use super::distance::DistanceMeasure;

/// Ragas' `NonLLMContextPrecisionWithReference`; `None` without reference contexts.
pub fn precision_with_reference<S: AsRef<str>, R: AsRef<str>>(
    retrieved: &[S],
    reference: &[R],
    measure: DistanceMeasure,
    threshold: f64,
) -> Option<f64> {
    if reference.is_empty() {
        return None;
    }
    let verdicts: Vec<u32> = retrieved
        .iter()
        .map(|rc| {
            let best = reference
                .iter()
                .map(|r| measure.similarity(rc.as_ref(), r.as_ref()))
                .fold(f64::NEG_INFINITY, f64::max);
            u32::from(best >= threshold)
        })
        .collect();
    Some(average_precision(&verdicts))
}

/// Ragas' `_calculate_average_precision` over 0/1 verdicts in rank order.
pub fn average_precision(verdicts: &[u32]) -> f64 {
    let denominator = verdicts.iter().sum::<u32>() as f64 + 1e-10;
    let mut numerator = 0.0;
    let mut running = 0u32;
    for (i, v) in verdicts.iter().enumerate() {
        running += v;
        numerator += (running as f64 / (i + 1) as f64) * *v as f64;
    }
    numerator / denominator
}

/// Ragas' `NonLLMContextRecall`; `None` without reference contexts.
pub fn recall<S: AsRef<str>, R: AsRef<str>>(
    retrieved: &[S],
    reference: &[R],
    measure: DistanceMeasure,
    threshold: f64,
) -> Option<f64> {
    if reference.is_empty() {
        return None;
    }
    let found = reference
        .iter()
        .filter(|r| {
            retrieved
                .iter()
                .map(|rc| measure.similarity(rc.as_ref(), r.as_ref()))
                .any(|s| s > threshold)
        })
        .count();
    Some(found as f64 / reference.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn average_precision_follows_ragas() {
        // Relevant at ranks 1 and 3: (1/1 + 2/3) / 2.
        let ap = average_precision(&[1, 0, 1]);
        assert!((ap - (1.0 + 2.0 / 3.0) / (2.0 + 1e-10)).abs() < 1e-15);
        assert_eq!(average_precision(&[0, 0]), 0.0);
        assert_eq!(average_precision(&[]), 0.0);
    }

    #[test]
    fn thresholds_are_inclusive_for_precision_and_strict_for_recall() {
        // Levenshtein similarity of "ab" and "ac" is exactly 0.5.
        let m = DistanceMeasure::Levenshtein;
        assert!(precision_with_reference(&["ab"], &["ac"], m, 0.5).unwrap() > 0.99);
        assert_eq!(recall(&["ab"], &["ac"], m, 0.5), Some(0.0));
        assert_eq!(recall(&["ab", "x"], &["ab", "ac"], m, 0.4), Some(1.0));
        assert_eq!(recall::<&str, &str>(&[], &["a"], m, 0.5), Some(0.0));
        assert_eq!(recall::<&str, &str>(&["a"], &[], m, 0.5), None);
        assert_eq!(
            precision_with_reference::<&str, &str>(&[], &["a"], m, 0.5),
            Some(0.0)
        );
    }
}
