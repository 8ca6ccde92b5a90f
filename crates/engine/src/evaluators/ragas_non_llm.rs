//! Ragas' deterministic metrics under Ragas' names, no judge needed:
//! `non_llm_context_precision_with_reference`, `non_llm_context_recall`,
//! `non_llm_string_similarity`, `bleu_score`, `rouge_score`, `ragas_exact_match` (Ragas'
//! `ExactMatch`, column `exact_match`: our `exact_match` is SQuAD's, after normalisation) and
//! `string_present` (Ragas' `StringPresence`, whose score Ragas names `string_present`; the
//! alias `string_presence`, our first name for it, still works: [`super::ALIASES`]).
//!
//! The values are those of `ragas==0.4.3` ([`oloproof_metrics::ragas`], checked against it).
//! Ragas' sample fields map to a case as everywhere else: `response` is the output's `field`
//! (default `answer`), `reference` is `expected.answer` (a list of acceptable references scores
//! its best one; Ragas takes one string), `retrieved_contexts` are the texts of the context given
//! to the generator, `reference_contexts` the texts of `expected.gold_context`.
//!
//! Options mirror Ragas': `distance_measure` (`levenshtein`, `hamming`, `jaro`,
//! `jaro_winkler`) and `threshold` (default 0.5) for the context metrics and the string
//! similarity's measure; `rouge_type` (`rouge1`, `rougeL`) and `mode` (`fmeasure`, `precision`,
//! `recall`) for ROUGE. Ragas' `BleuScore(kwargs=…)` (sacrebleu options) is not offered: the
//! defaults are what Ragas' users run.
//!
//! A case without what the metric reads is excluded with a reason: `no_expected_answer`,
//! `no_reference_contexts`; an output without the field is missing.

use oloproof_core::case::Case;
use oloproof_core::config::EvaluatorEntry;
use oloproof_core::source::SourceError;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use oloproof_metrics::ragas::distance::DistanceMeasure;
use oloproof_metrics::ragas::rouge::{RougeMode, RougeType};
use oloproof_metrics::ragas::{bleu, context, exact_match, rouge, string_presence};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::SummaryKind;
use super::{excluded, missing, missing_with, verdict, EntryParser, Evaluator, EvaluatorSpec};
use crate::judged::JudgeEnv;

/// Ragas' `DistanceMeasure` as written in the config.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// Levenshtein (Ragas' default).
    #[default]
    Levenshtein,
    /// Hamming (padded to the longer string).
    Hamming,
    /// Jaro.
    Jaro,
    /// Jaro–Winkler.
    JaroWinkler,
}

impl Measure {
    fn metric(self) -> DistanceMeasure {
        match self {
            Measure::Levenshtein => DistanceMeasure::Levenshtein,
            Measure::Hamming => DistanceMeasure::Hamming,
            Measure::Jaro => DistanceMeasure::Jaro,
            Measure::JaroWinkler => DistanceMeasure::JaroWinkler,
        }
    }
}

/// Options of `non_llm_context_precision_with_reference` and `non_llm_context_recall`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ContextMatchOptions {
    /// Criterion name (default: the evaluator type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// The string similarity comparing a retrieved and a reference context.
    #[serde(default)]
    pub distance_measure: Measure,
    /// Similarity from which a retrieved context counts as a reference one (precision: `≥`,
    /// recall: `>`, as Ragas).
    #[serde(default = "half")]
    pub threshold: f64,
}

/// Options of `non_llm_string_similarity`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StringSimilarityOptions {
    /// Criterion name (default: the evaluator type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// The distance measure.
    #[serde(default)]
    pub distance_measure: Measure,
    /// Field of the system's output to read.
    #[serde(default = "answer_field")]
    pub field: String,
}

/// Options of `rouge_score`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RougeOptions {
    /// Criterion name (default: the evaluator type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// `rouge1` or `rougeL` (default).
    #[serde(default = "rouge_l")]
    pub rouge_type: String,
    /// `fmeasure` (default), `precision` or `recall`.
    #[serde(default = "fmeasure")]
    pub mode: String,
    /// Field of the system's output to read.
    #[serde(default = "answer_field")]
    pub field: String,
}

/// Options of `bleu_score`, `ragas_exact_match` and `string_present`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PlainOptions {
    /// Criterion name (default: the evaluator type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// Field of the system's output to read.
    #[serde(default = "answer_field")]
    pub field: String,
}

fn half() -> f64 {
    0.5
}
fn answer_field() -> String {
    "answer".into()
}
fn rouge_l() -> String {
    "rougeL".into()
}
fn fmeasure() -> String {
    "fmeasure".into()
}

/// `non_llm_context_precision_with_reference`.
pub(crate) const CONTEXT_PRECISION: EvaluatorSpec = EvaluatorSpec {
    name: "non_llm_context_precision_with_reference",
    build: |p| build_context(p, false),
};
/// `non_llm_context_recall`.
pub(crate) const CONTEXT_RECALL: EvaluatorSpec = EvaluatorSpec {
    name: "non_llm_context_recall",
    build: |p| build_context(p, true),
};
/// `non_llm_string_similarity`.
pub(crate) const STRING_SIMILARITY: EvaluatorSpec = EvaluatorSpec {
    name: "non_llm_string_similarity",
    build: |p| {
        let o: StringSimilarityOptions = p.options()?;
        Ok(boxed(
            p,
            &o,
            o.criterion.clone(),
            o.field.clone(),
            How::Text(TextMetric::Similarity(o.distance_measure.metric())),
        ))
    },
};
/// `bleu_score`.
pub(crate) const BLEU_SCORE: EvaluatorSpec = EvaluatorSpec {
    name: "bleu_score",
    build: |p| {
        let o: PlainOptions = p.options()?;
        Ok(boxed(
            p,
            &o,
            o.criterion.clone(),
            o.field.clone(),
            How::Text(TextMetric::Bleu),
        ))
    },
};
/// `rouge_score`.
pub(crate) const ROUGE_SCORE: EvaluatorSpec = EvaluatorSpec {
    name: "rouge_score",
    build: |p| {
        let o: RougeOptions = p.options()?;
        let kind = match o.rouge_type.as_str() {
            "rouge1" => RougeType::Rouge1,
            "rougeL" => RougeType::RougeL,
            other => return Err(choice(p, "rouge_type", other, &["rouge1", "rougeL"])),
        };
        let mode = match o.mode.as_str() {
            "fmeasure" => RougeMode::Fmeasure,
            "precision" => RougeMode::Precision,
            "recall" => RougeMode::Recall,
            other => {
                return Err(choice(
                    p,
                    "mode",
                    other,
                    &["fmeasure", "precision", "recall"],
                ))
            }
        };
        Ok(boxed(
            p,
            &o,
            o.criterion.clone(),
            o.field.clone(),
            How::Text(TextMetric::Rouge(kind, mode)),
        ))
    },
};
/// `ragas_exact_match`: Ragas' `ExactMatch` (string equality).
pub(crate) const EXACT_MATCH: EvaluatorSpec = EvaluatorSpec {
    name: "ragas_exact_match",
    build: |p| {
        let o: PlainOptions = p.options()?;
        Ok(boxed(
            p,
            &o,
            o.criterion.clone(),
            o.field.clone(),
            How::Text(TextMetric::Exact),
        ))
    },
};
/// `string_present`: Ragas' `StringPresence` (the reference is a substring of the answer),
/// also written `string_presence` ([`super::ALIASES`]).
pub(crate) const STRING_PRESENCE: EvaluatorSpec = EvaluatorSpec {
    name: "string_present",
    build: |p| {
        let o: PlainOptions = p.options()?;
        Ok(boxed(
            p,
            &o,
            o.criterion.clone(),
            o.field.clone(),
            How::Text(TextMetric::Presence),
        ))
    },
};

fn choice(p: &EntryParser<'_>, key: &str, value: &str, allowed: &[&str]) -> SourceError {
    let mut err = p.error(key, format!("unknown {key} `{value}`"));
    err.expected = Some(format!("one of {}", allowed.join(", ")));
    err.help = oloproof_core::source::did_you_mean(value, allowed.iter().copied())
        .map(|s| format!("did you mean `{s}`?"));
    err
}

fn build_context(p: &EntryParser<'_>, recall: bool) -> Result<Box<dyn Evaluator>, SourceError> {
    let o: ContextMatchOptions = p.options()?;
    if !(0.0..=1.0).contains(&o.threshold) {
        let mut err = p.error(
            "threshold",
            format!("threshold {} is not in [0, 1]", o.threshold),
        );
        err.expected = Some("a similarity between 0 and 1, e.g. 0.5 (Ragas' default)".into());
        return Err(err);
    }
    let how = How::Context {
        recall,
        measure: o.distance_measure.metric(),
        threshold: o.threshold,
    };
    Ok(boxed(p, &o, o.criterion.clone(), String::new(), how))
}

fn boxed<T: Serialize>(
    p: &EntryParser<'_>,
    options: &T,
    criterion: Option<String>,
    field: String,
    how: How,
) -> Box<dyn Evaluator> {
    Box::new(RagasNonLlm {
        criterion: criterion.unwrap_or_else(|| p.entry.type_name.clone()),
        identity: p.identity(options),
        field,
        how,
    })
}

#[derive(Debug, Clone, Copy)]
enum How {
    Context {
        recall: bool,
        measure: DistanceMeasure,
        threshold: f64,
    },
    Text(TextMetric),
}

/// The metrics of a response against a reference.
#[derive(Debug, Clone, Copy)]
enum TextMetric {
    Similarity(DistanceMeasure),
    Bleu,
    Rouge(RougeType, RougeMode),
    Exact,
    Presence,
}

struct RagasNonLlm {
    criterion: String,
    identity: EvaluatorEntry,
    field: String,
    how: How,
}

impl TextMetric {
    fn value(self, reference: &str, response: &str) -> f64 {
        match self {
            TextMetric::Similarity(m) => m.similarity(reference, response),
            TextMetric::Bleu => bleu::bleu_score(reference, response),
            TextMetric::Rouge(kind, mode) => rouge::rouge_score(reference, response, kind, mode),
            TextMetric::Exact => exact_match(reference, response),
            TextMetric::Presence => string_presence(reference, response),
        }
    }
}

impl RagasNonLlm {
    /// The two context metrics: retrieved contexts (the generator's context) against
    /// `expected.gold_context`.
    fn context(
        &self,
        case: &Case,
        trace: &Trace,
        recall: bool,
        measure: DistanceMeasure,
        threshold: f64,
    ) -> CriterionVerdict {
        let references: Vec<&str> = case
            .expected
            .gold_context
            .iter()
            .flatten()
            .map(|g| g.text.as_str())
            .collect();
        if references.is_empty() {
            return excluded(&self.criterion, "no_reference_contexts");
        }
        let Some(ctx) = trace.context.as_ref() else {
            return missing(&self.criterion, trace, "the context");
        };
        let retrieved: Vec<&str> = ctx
            .passages
            .iter()
            .filter_map(|p| p.passage.text.as_deref())
            .collect();
        let value = if recall {
            context::recall(&retrieved, &references, measure, threshold)
        } else {
            context::precision_with_reference(&retrieved, &references, measure, threshold)
        };
        match value {
            Some(v) => verdict(
                &self.criterion,
                Verdict::score(v),
                json!({"retrieved": retrieved.len(), "reference_contexts": references.len()}),
            ),
            None => excluded(&self.criterion, "no_reference_contexts"),
        }
    }
}

impl Evaluator for RagasNonLlm {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        match self.how {
            How::Text(TextMetric::Exact | TextMetric::Presence) => SummaryKind::Proportion,
            _ => SummaryKind::Mean,
        }
    }

    fn identity(&self) -> &EvaluatorEntry {
        &self.identity
    }

    fn evaluate(&self, case: &Case, trace: &Trace, _: Option<&JudgeEnv<'_>>) -> CriterionVerdict {
        let metric = match self.how {
            How::Text(metric) => metric,
            How::Context {
                recall,
                measure,
                threshold,
            } => return self.context(case, trace, recall, measure, threshold),
        };
        let references: Vec<String> = match &case.expected.answer {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            Some(Value::Number(n)) => vec![n.to_string()],
            _ => Vec::new(),
        };
        if references.is_empty() {
            return excluded(&self.criterion, "no_expected_answer");
        }
        if trace.generation.is_none() {
            return missing(&self.criterion, trace, "the generation");
        }
        let response = match trace.output_field(&self.field) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => {
                return missing_with(
                    &self.criterion,
                    format!("the system's output has no `{}`", self.field),
                )
            }
            Some(other) => other.to_string(),
        };
        // The best reference counts (Ragas takes one string: a single reference is the same).
        let (best, value) = references
            .iter()
            .enumerate()
            .map(|(i, r)| (i, metric.value(r, &response)))
            .fold(
                (0, f64::NEG_INFINITY),
                |acc, x| if x.1 > acc.1 { x } else { acc },
            );
        let detail = if references.len() > 1 {
            json!({"reference": best})
        } else {
            Value::Null
        };
        let v = match metric {
            TextMetric::Exact | TextMetric::Presence => Verdict::pass_if(value == 1.0),
            _ => Verdict::score(value),
        };
        verdict(&self.criterion, v, detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::from_json;
    use oloproof_core::dataset::parse_dataset;

    fn record(line: &str) -> (Case, Trace) {
        let mut d = parse_dataset("d.jsonl", line, None).unwrap();
        let r = d.records.remove(0);
        (r.case, r.trace)
    }

    fn eval(options: Value, line: &str) -> CriterionVerdict {
        let (case, trace) = record(line);
        from_json(&options).unwrap().evaluate(&case, &trace, None)
    }

    #[test]
    fn ragas_names_and_options() {
        let line = r#"{"user_input":"q","retrieved_contexts":["Refunds take 14 days.","Shipping is free."],"reference_contexts":["Refunds take 14 days"],"response":"Refunds take 14 days.","reference":"Refunds take 14 days"}"#;
        let v = eval(json!({"type": "non_llm_context_recall"}), line);
        assert_eq!(v.verdict, Verdict::Score { value: 1.0 });
        let v = eval(
            json!({"type": "non_llm_context_precision_with_reference", "distance_measure": "jaro_winkler", "threshold": 0.9}),
            line,
        );
        assert!(
            matches!(v.verdict, Verdict::Score { value } if (value - 1.0).abs() < 1e-9),
            "{v:?}"
        );
        let v = eval(json!({"type": "string_present"}), line);
        assert_eq!(
            (v.criterion.as_str(), &v.verdict),
            ("string_present", &Verdict::Pass)
        );
        // The alias builds the same evaluator; its criterion is the name as written.
        let v = eval(json!({"type": "string_presence"}), line);
        assert_eq!(
            (v.criterion.as_str(), &v.verdict),
            ("string_presence", &Verdict::Pass)
        );
        let v = eval(json!({"type": "ragas_exact_match"}), line);
        assert_eq!(v.verdict, Verdict::Fail);
        let v = eval(
            json!({"type": "rouge_score", "rouge_type": "rouge1", "mode": "recall"}),
            line,
        );
        assert_eq!(v.verdict, Verdict::Score { value: 1.0 });
        let v = eval(
            json!({"type": "non_llm_string_similarity", "distance_measure": "levenshtein"}),
            line,
        );
        assert_eq!(
            v.verdict,
            Verdict::Score {
                value: 1.0 - 1.0 / 21.0
            }
        );
    }

    #[test]
    fn absences_are_excluded_not_zero() {
        let line = r#"{"user_input":"q","retrieved_contexts":["a"],"response":"r"}"#;
        for ty in [
            "bleu_score",
            "rouge_score",
            "ragas_exact_match",
            "string_present",
            "string_presence",
            "non_llm_string_similarity",
        ] {
            let v = eval(json!({"type": ty}), line);
            assert_eq!(
                v.verdict,
                Verdict::Excluded {
                    reason: "no_expected_answer".into()
                },
                "{ty}"
            );
        }
        for ty in [
            "non_llm_context_recall",
            "non_llm_context_precision_with_reference",
        ] {
            let v = eval(json!({"type": ty}), line);
            assert_eq!(
                v.verdict,
                Verdict::Excluded {
                    reason: "no_reference_contexts".into()
                },
                "{ty}"
            );
        }
    }

    #[test]
    fn bad_options_name_the_choices() {
        let err = |v: Value| match from_json(&v) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{v} was accepted"),
        };
        let e = err(json!({"type": "rouge_score", "rouge_type": "rougeLsum"}));
        assert!(
            e.contains("unknown rouge_type `rougeLsum` at evaluators[0].rouge_type"),
            "{e}"
        );
        let e = err(json!({"type": "non_llm_context_recall", "threshold": 1.5}));
        assert!(e.contains("threshold 1.5 is not in [0, 1]"), "{e}");
        let e = err(json!({"type": "non_llm_string_similarity", "distance_measure": "cosine"}));
        assert!(e.contains("cosine"), "{e}");
    }
}
