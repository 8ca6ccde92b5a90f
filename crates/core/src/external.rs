//! Scores another tool recorded for each case (Ragas' metric columns in a dataset), and which
//! of our evaluator types computes the same metric.
//!
//! A dataset's score columns (see [`crate::dataset`]) are kept per case in
//! `metadata.external_scores` (`{column: number | null}`, null for NaN or an empty cell). A
//! run's summary compares each column with the criterion of the matching type
//! ([`ours_for`]): Ragas' metric name with any `(mode=…)` suffix removed, looked up in
//! [`RAGAS_METRICS`].

/// The case-metadata key holding a case's external scores.
pub const METADATA_KEY: &str = "external_scores";

/// Ragas metric names (the column `evaluate()` writes) and our evaluator type of the same
/// metric.
pub const RAGAS_METRICS: &[(&str, &str)] = &[
    ("faithfulness", "faithfulness"),
    ("answer_relevancy", "answer_relevancy"),
    ("response_relevancy", "answer_relevancy"),
    ("context_precision", "context_precision"),
    ("llm_context_precision_with_reference", "context_precision"),
    (
        "llm_context_precision_without_reference",
        "context_precision",
    ),
    ("context_recall", "context_recall"),
    ("llm_context_recall", "context_recall"),
    ("factual_correctness", "factual_correctness"),
    ("answer_correctness", "answer_correctness"),
    ("semantic_similarity", "semantic_similarity"),
    ("answer_similarity", "semantic_similarity"),
    ("noise_sensitivity", "noise_sensitivity"),
    ("noise_sensitivity_relevant", "noise_sensitivity"),
    ("noise_sensitivity_irrelevant", "noise_sensitivity"),
    (
        "non_llm_context_precision_with_reference",
        "non_llm_context_precision_with_reference",
    ),
    ("non_llm_context_recall", "non_llm_context_recall"),
    ("non_llm_string_similarity", "non_llm_string_similarity"),
    ("bleu_score", "bleu_score"),
    ("rouge_score", "rouge_score"),
    ("exact_match", "ragas_exact_match"),
    ("string_present", "string_presence"),
];

/// A column's metric name: `factual_correctness(mode=f1)` is `factual_correctness`.
pub fn metric_name(column: &str) -> &str {
    column.split('(').next().unwrap_or(column).trim()
}

/// Whether `column` names a Ragas metric.
pub fn is_ragas_metric(column: &str) -> bool {
    let name = metric_name(column);
    RAGAS_METRICS.iter().any(|(m, _)| *m == name)
}

/// Our evaluator type computing Ragas' `column`, if any.
pub fn ours_for(column: &str) -> Option<&'static str> {
    let name = metric_name(column);
    RAGAS_METRICS
        .iter()
        .find(|(m, _)| *m == name)
        .map(|(_, t)| *t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_map_to_our_types() {
        assert_eq!(
            ours_for("factual_correctness(mode=f1)"),
            Some("factual_correctness")
        );
        assert_eq!(
            ours_for("llm_context_precision_with_reference"),
            Some("context_precision")
        );
        assert_eq!(ours_for("string_present"), Some("string_presence"));
        assert_eq!(ours_for("my_score"), None);
        assert!(is_ragas_metric("faithfulness"));
    }
}
