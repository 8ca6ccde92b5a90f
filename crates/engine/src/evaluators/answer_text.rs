//! Answer-text evaluators: `contains`, `exact_match` (SQuAD, after answer normalisation) and
//! `token_f1` (SQuAD token F1, a score), against `expected.<expected_field>` (a string, a
//! number, or a list of acceptable references: the best one counts).

use oloproof_core::case::Case;
use oloproof_core::config::EvaluatorEntry;
use oloproof_core::source::SourceError;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use oloproof_metrics::batch::item::{self, ItemError, ItemInput};
use oloproof_metrics::text;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::SummaryKind;
use super::{excluded, missing, missing_with, verdict, EntryParser, Evaluator, EvaluatorSpec};
use crate::judged::JudgeEnv;

/// Options of an answer-text evaluator.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TextMatchOptions {
    /// Criterion name (default: the evaluator type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// Field of the system's output to read.
    #[serde(default = "default_answer_field")]
    pub field: String,
    /// Field of `expected` to compare with.
    #[serde(default = "default_answer_field")]
    pub expected_field: String,
}

fn default_answer_field() -> String {
    "answer".to_string()
}

/// `contains`: an expected text is contained in the answer (case-insensitive).
pub(crate) const CONTAINS: EvaluatorSpec = EvaluatorSpec {
    name: "contains",
    build: |p| build(p, Match::Contains),
};
/// `exact_match`: SQuAD exact match after answer normalisation.
pub(crate) const EXACT_MATCH: EvaluatorSpec = EvaluatorSpec {
    name: "exact_match",
    build: |p| build(p, Match::Exact),
};
/// `token_f1`: SQuAD token F1 after answer normalisation (a score).
pub(crate) const TOKEN_F1: EvaluatorSpec = EvaluatorSpec {
    name: "token_f1",
    build: |p| build(p, Match::TokenF1),
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Match {
    Contains,
    Exact,
    TokenF1,
}

fn build(p: &EntryParser<'_>, how: Match) -> Result<Box<dyn Evaluator>, SourceError> {
    let options: TextMatchOptions = p.options()?;
    Ok(Box::new(TextMatch {
        criterion: options
            .criterion
            .clone()
            .unwrap_or_else(|| p.entry.type_name.clone()),
        identity: p.identity(&options),
        options,
        how,
    }))
}

struct TextMatch {
    criterion: String,
    identity: EvaluatorEntry,
    options: TextMatchOptions,
    how: Match,
}

impl Evaluator for TextMatch {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        match self.how {
            Match::TokenF1 => SummaryKind::Mean,
            Match::Contains | Match::Exact => SummaryKind::Proportion,
        }
    }

    fn identity(&self) -> &EvaluatorEntry {
        &self.identity
    }

    fn evaluate(&self, case: &Case, trace: &Trace, _: Option<&JudgeEnv<'_>>) -> CriterionVerdict {
        let field = &self.options.field;
        let expected_field = &self.options.expected_field;
        let expected = match expected_field.as_str() {
            "answer" => case.expected.answer.as_ref(),
            other => case.expected.extra.get(other),
        };
        let references: Vec<String> = match expected {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            Some(Value::Number(n)) => vec![n.to_string()],
            _ => Vec::new(),
        };
        if references.is_empty() {
            return excluded(&self.criterion, &format!("no_expected_{expected_field}"));
        }
        if trace.generation.is_none() {
            return missing(&self.criterion, trace, "the generation");
        }
        let prediction = match trace.output_field(field) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => {
                return missing_with(
                    &self.criterion,
                    format!("the system's output has no `{field}`"),
                )
            }
            Some(other) => other.to_string(),
        };
        // The same per-item adapters as `oloproof metric exact_match / token_f1`.
        let item = ItemInput {
            answer: Some(&prediction),
            references: references.iter().map(String::as_str).collect(),
            ..ItemInput::default()
        };
        let result = match self.how {
            Match::Contains => {
                let hit = references
                    .iter()
                    .position(|r| text::contains(&prediction, r));
                return verdict(
                    &self.criterion,
                    Verdict::pass_if(hit.is_some()),
                    json!({"matched": hit.map(|i| &references[i])}),
                );
            }
            Match::Exact => item::exact_match(&item).map(Verdict::pass_if),
            Match::TokenF1 => item::token_f1(&item).map(Verdict::score),
        };
        match result {
            Ok(v) => verdict(&self.criterion, v, Value::Null),
            // Both were checked above; kept exact rather than assumed.
            Err(ItemError::NoReference) => {
                excluded(&self.criterion, &format!("no_expected_{expected_field}"))
            }
            Err(e) => missing_with(&self.criterion, e.to_string()),
        }
    }
}
