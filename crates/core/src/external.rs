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

/// One Ragas metric column and our evaluator computing the same metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RagasMetric {
    /// The column `evaluate()` writes (without a `(mode=…)` suffix).
    pub column: &'static str,
    /// Our evaluator type.
    pub ours: &'static str,
    /// For `context_precision`: whether the metric judges usefulness against the reference
    /// (Ragas' `LLMContextPrecisionWithReference`, column `context_precision` or
    /// `llm_context_precision_with_reference`) or against the response
    /// (`LLMContextPrecisionWithoutReference`, column `llm_context_precision_without_reference`,
    /// or `context_utilization` of `ContextUtilization`): only a criterion with the same
    /// `with_reference` option (default true) computes it.
    pub with_reference: Option<bool>,
    /// The `mode` our evaluator runs when its entry names none (`factual_correctness`: `f1`,
    /// `rouge_score`: `fmeasure`): a column `name(mode=…)` pairs only with a criterion of
    /// that mode.
    pub default_mode: Option<&'static str>,
}

const fn metric(column: &'static str, ours: &'static str) -> RagasMetric {
    RagasMetric {
        column,
        ours,
        with_reference: None,
        default_mode: None,
    }
}

const fn precision(column: &'static str, with_reference: bool) -> RagasMetric {
    RagasMetric {
        column,
        ours: "context_precision",
        with_reference: Some(with_reference),
        default_mode: None,
    }
}

const fn with_mode(column: &'static str, ours: &'static str, mode: &'static str) -> RagasMetric {
    RagasMetric {
        column,
        ours,
        with_reference: None,
        default_mode: Some(mode),
    }
}

/// Ragas metric names (the column `evaluate()` writes) and our evaluator type of the same
/// metric (ragas 0.4.3's `Metric.name` of each class).
pub const RAGAS_METRICS: &[RagasMetric] = &[
    metric("faithfulness", "faithfulness"),
    metric("answer_relevancy", "answer_relevancy"),
    metric("response_relevancy", "answer_relevancy"),
    precision("context_precision", true),
    precision("llm_context_precision_with_reference", true),
    precision("llm_context_precision_without_reference", false),
    precision("context_utilization", false),
    metric("context_recall", "context_recall"),
    metric("llm_context_recall", "context_recall"),
    with_mode("factual_correctness", "factual_correctness", "f1"),
    metric("answer_correctness", "answer_correctness"),
    metric("semantic_similarity", "semantic_similarity"),
    metric("answer_similarity", "semantic_similarity"),
    metric("noise_sensitivity", "noise_sensitivity"),
    metric("noise_sensitivity_relevant", "noise_sensitivity"),
    metric("noise_sensitivity_irrelevant", "noise_sensitivity"),
    metric(
        "non_llm_context_precision_with_reference",
        "non_llm_context_precision_with_reference",
    ),
    metric("non_llm_context_recall", "non_llm_context_recall"),
    metric("non_llm_string_similarity", "non_llm_string_similarity"),
    metric("bleu_score", "bleu_score"),
    with_mode("rouge_score", "rouge_score", "fmeasure"),
    metric("exact_match", "ragas_exact_match"),
    metric("string_present", "string_present"),
];

/// A column's metric name: `factual_correctness(mode=f1)` is `factual_correctness`.
pub fn metric_name(column: &str) -> &str {
    column.split('(').next().unwrap_or(column).trim()
}

/// The `mode` of a column `name(mode=…)`, if it has one.
pub fn column_mode(column: &str) -> Option<&str> {
    let args = column.split_once('(')?.1.strip_suffix(')')?;
    args.split(',').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k.trim() == "mode").then(|| v.trim().trim_matches(|c| c == '\'' || c == '"'))
    })
}

fn lookup(column: &str) -> Option<&'static RagasMetric> {
    let name = metric_name(column);
    RAGAS_METRICS.iter().find(|m| m.column == name)
}

/// Whether `column` names a Ragas metric.
pub fn is_ragas_metric(column: &str) -> bool {
    lookup(column).is_some()
}

/// Our evaluator type computing Ragas' `column`, if any.
pub fn ours_for(column: &str) -> Option<&'static str> {
    lookup(column).map(|m| m.ours)
}

/// Whether a criterion of evaluator type `type_name` (its canonical name, not an alias)
/// whose options are `options` (the entry's identity) computes Ragas' `column`: the type
/// matches, `context_precision`'s `with_reference` (default true) is the column's, and a
/// column's `(mode=…)` is the criterion's `mode` (else its default).
pub fn computes(
    column: &str,
    type_name: &str,
    options: &serde_json::Map<String, serde_json::Value>,
) -> bool {
    let Some(m) = lookup(column) else {
        return false;
    };
    if m.ours != type_name {
        return false;
    }
    if let Some(wanted) = m.with_reference {
        let ours = options
            .get("with_reference")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(true);
        if ours != wanted {
            return false;
        }
    }
    match (column_mode(column), m.default_mode) {
        (Some(theirs), Some(default)) => {
            let ours = options
                .get("mode")
                .and_then(serde_json::Value::as_str)
                .unwrap_or(default);
            ours == theirs
        }
        _ => true,
    }
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
        assert_eq!(ours_for("string_present"), Some("string_present"));
        assert_eq!(ours_for("context_utilization"), Some("context_precision"));
        assert_eq!(ours_for("my_score"), None);
        assert!(is_ragas_metric("faithfulness"));
        assert_eq!(column_mode("factual_correctness(mode=f1)"), Some("f1"));
        assert_eq!(column_mode("rouge_score(mode=fmeasure)"), Some("fmeasure"));
        assert_eq!(column_mode("faithfulness"), None);
    }

    #[test]
    fn without_reference_never_pairs_with_a_with_reference_criterion() {
        let opts = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
        let default = opts(serde_json::json!({}));
        let without = opts(serde_json::json!({"with_reference": false}));
        for column in ["context_precision", "llm_context_precision_with_reference"] {
            assert!(computes(column, "context_precision", &default), "{column}");
            assert!(!computes(column, "context_precision", &without), "{column}");
        }
        for column in [
            "llm_context_precision_without_reference",
            "context_utilization",
        ] {
            assert!(!computes(column, "context_precision", &default), "{column}");
            assert!(computes(column, "context_precision", &without), "{column}");
        }
        // Modes: the column's against the criterion's (default f1 / fmeasure).
        let f1 = "factual_correctness(mode=f1)";
        assert!(computes(f1, "factual_correctness", &default));
        assert!(!computes(
            f1,
            "factual_correctness",
            &opts(serde_json::json!({"mode": "recall"}))
        ));
        assert!(computes(
            "factual_correctness",
            "factual_correctness",
            &opts(serde_json::json!({"mode": "recall"}))
        ));
        assert!(computes(
            "rouge_score(mode=fmeasure)",
            "rouge_score",
            &opts(serde_json::json!({"mode": "fmeasure", "rouge_type": "rougeL"}))
        ));
        assert!(!computes(
            "rouge_score(mode=precision)",
            "rouge_score",
            &default
        ));
        assert!(!computes("faithfulness", "context_recall", &default));
    }
}
