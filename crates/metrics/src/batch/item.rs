//! One item's result for the metrics that exist both over JSONL items (`oloproof metric`) and as
//! run evaluators over a trace: a neutral [`ItemInput`] (the answer, its context, its citations,
//! the references, a structured output) and one adapter per metric from it to the per-item
//! result. The JSONL path ([`super::registry`]) builds an [`ItemInput`] from each row; a run
//! evaluator builds one from a case and its trace; both then call the same function.
//!
//! ```
//! use oloproof_metrics::batch::item::{token_f1, ItemInput};
//!
//! let item = ItemInput {
//!     answer: Some("Paris, France"),
//!     references: vec!["Lyon", "Paris"],
//!     ..ItemInput::default()
//! };
//! // The best F1 over the references: "paris" against "paris france" is 2/3.
//! assert!((token_f1(&item).unwrap() - 2.0 / 3.0).abs() < 1e-12);
//! ```

use std::collections::BTreeSet;

use serde_json::Value;

use crate::ontology::conformance::{SchemaValidator, Violation};
use crate::rag::context::{self, Grounding};
use crate::text;

/// A passage placed in the answer's context: its id (document or chunk) and its text, either
/// of which may be unknown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Passage<'a> {
    /// The id the answer may cite.
    pub id: Option<&'a str>,
    /// The passage text.
    pub text: Option<&'a str>,
}

/// What one item gives the per-item metrics: neither a JSONL row nor a trace.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ItemInput<'a> {
    /// The answer (the prediction), when the system produced one.
    pub answer: Option<&'a str>,
    /// The context the answer was generated from, in order; `None` when there was no context
    /// stage (an empty list is a context with no passage).
    pub context: Option<Vec<Passage<'a>>>,
    /// The ids the answer cited.
    pub citations: Vec<&'a str>,
    /// The acceptable reference answers (any of them counts).
    pub references: Vec<&'a str>,
    /// A structured output: a JSON text (parsed first) or a JSON value.
    pub output: Option<&'a Value>,
}

/// Why an adapter has no result for an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ItemError {
    /// The item lacks what the metric measures (`answer`, `output`): a missing verdict, not a
    /// zero.
    #[error("the item has no `{field}`")]
    Missing {
        /// The missing input.
        field: &'static str,
    },
    /// The item has no reference answer: the metric does not apply (excluded).
    #[error("the item has no reference answer")]
    NoReference,
    /// The item has no context stage: the metric does not apply (excluded).
    #[error("the item has no context")]
    NoContext,
}

fn answer<'a>(item: &ItemInput<'a>) -> Result<&'a str, ItemError> {
    item.answer.ok_or(ItemError::Missing { field: "answer" })
}

fn references<'a>(item: &'a ItemInput<'_>) -> Result<&'a [&'a str], ItemError> {
    if item.references.is_empty() {
        return Err(ItemError::NoReference);
    }
    Ok(&item.references)
}

/// Exact match: the answer equals one of the references after SQuAD normalisation
/// ([`text::exact_match`]: lower case, punctuation and articles removed, whitespace
/// collapsed). Errors: [`ItemError::NoReference`] (checked first), then
/// [`ItemError::Missing`] `answer`.
///
/// Call sites: `oloproof metric exact_match`; the run evaluator `exact_match`.
pub fn exact_match(item: &ItemInput<'_>) -> Result<bool, ItemError> {
    let refs = references(item)?;
    let answer = answer(item)?;
    Ok(refs.iter().any(|r| text::exact_match(answer, r)))
}

/// SQuAD token F1 of the answer against the best reference ([`text::token_f1`]: harmonic
/// mean of token precision and recall after normalisation; 1 when both sides have no token, 0
/// when only one has none). Errors as [`exact_match`].
///
/// Call sites: `oloproof metric token_f1`; the run evaluator `token_f1`.
pub fn token_f1(item: &ItemInput<'_>) -> Result<f64, ItemError> {
    let refs = references(item)?;
    let answer = answer(item)?;
    Ok(refs
        .iter()
        .map(|r| text::token_f1(answer, r))
        .fold(0.0_f64, f64::max))
}

/// Entity grounding: the answer's named entities and numbers looked up in the context's
/// passage texts joined by newlines ([`context::grounding`]; capitalised spans and numbers, no
/// model). [`Grounding::rate`] is `None` when the answer names no entity (excluded). Errors:
/// [`ItemError::NoContext`], then [`ItemError::Missing`] `answer`.
///
/// Call sites: `oloproof metric entity_grounding`; the run evaluator `entity_grounding`.
pub fn entity_grounding(item: &ItemInput<'_>) -> Result<Grounding, ItemError> {
    let passages = item.context.as_ref().ok_or(ItemError::NoContext)?;
    let answer = answer(item)?;
    let text: Vec<&str> = passages.iter().filter_map(|p| p.text).collect();
    Ok(context::grounding(answer, &text.join("\n")))
}

/// One item's context utilisation.
#[derive(Debug, Clone, PartialEq)]
pub struct Utilisation {
    /// `|cited ∩ context| / |context|` over distinct ids; `None` when the context has no id.
    pub value: Option<f64>,
    /// Distinct ids in the context.
    pub context: usize,
    /// Distinct ids cited.
    pub cited: usize,
    /// Cited ids that are not in the context, sorted.
    pub cited_outside: Vec<String>,
}

/// Context utilisation: the share of the context's distinct passage ids that the answer cited
/// (`|cited ∩ context| / |context|`, [`context::context_utilisation`]), with the citations
/// outside the context. Error: [`ItemError::NoContext`].
///
/// Call sites: `oloproof metric context_utilisation`; the run evaluator
/// `context_utilisation`.
pub fn context_utilisation(item: &ItemInput<'_>) -> Result<Utilisation, ItemError> {
    let passages = item.context.as_ref().ok_or(ItemError::NoContext)?;
    let ids: BTreeSet<&str> = passages.iter().filter_map(|p| p.id).collect();
    let cited: BTreeSet<&str> = item.citations.iter().copied().collect();
    Ok(Utilisation {
        value: context::context_utilisation(&ids, &cited),
        context: ids.len(),
        cited: cited.len(),
        cited_outside: context::cited_outside(&ids, &cited)
            .into_iter()
            .map(|s| s.to_string())
            .collect(),
    })
}

/// Schema validity: the violations of the item's output against a compiled JSON Schema (draft
/// 2020-12): a JSON string is parsed first ([`SchemaValidator::check_text`], a parse failure
/// is one violation at schema path `(parse)`), any other value is validated as is. Valid when
/// the list is empty. Error: [`ItemError::Missing`] `output`.
///
/// Call sites: `oloproof metric schema_validity`; the run evaluator `schema_validity`.
pub fn schema_validity(
    validator: &SchemaValidator,
    item: &ItemInput<'_>,
) -> Result<Vec<Violation>, ItemError> {
    match item.output {
        Some(Value::String(s)) => Ok(validator.check_text(s)),
        Some(other) => Ok(validator.violations(other)),
        None => Err(ItemError::Missing { field: "output" }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_matches_need_a_reference_then_an_answer() {
        let none = ItemInput::default();
        assert_eq!(exact_match(&none), Err(ItemError::NoReference));
        let no_answer = ItemInput {
            references: vec!["x"],
            ..ItemInput::default()
        };
        assert_eq!(
            token_f1(&no_answer),
            Err(ItemError::Missing { field: "answer" })
        );
        let item = ItemInput {
            answer: Some("The Eiffel Tower."),
            references: vec!["a tower", "eiffel tower"],
            ..ItemInput::default()
        };
        assert_eq!(exact_match(&item), Ok(true));
        assert_eq!(token_f1(&item), Ok(1.0));
    }

    #[test]
    fn context_metrics() {
        let passages = vec![
            Passage {
                id: Some("d1"),
                text: Some("Marie Curie was born in Warsaw in 1867."),
            },
            Passage {
                id: Some("d2"),
                text: None,
            },
        ];
        let item = ItemInput {
            answer: Some("Curie was born in Paris in 1867."),
            context: Some(passages),
            citations: vec!["d1", "d9"],
            ..ItemInput::default()
        };
        let g = entity_grounding(&item).unwrap();
        assert!(g.rate().is_some_and(|r| r < 1.0));
        let u = context_utilisation(&item).unwrap();
        assert_eq!(u.value, Some(0.5));
        assert_eq!((u.context, u.cited), (2, 2));
        assert_eq!(u.cited_outside, vec!["d9".to_string()]);
        assert_eq!(
            context_utilisation(&ItemInput::default()),
            Err(ItemError::NoContext)
        );
    }

    #[test]
    fn schema_validity_parses_text() {
        let v = SchemaValidator::new(&json!({"type": "object", "required": ["id"]})).unwrap();
        let ok = json!("{\"id\": 1}");
        let bad = json!({"name": 2});
        let item = |o| ItemInput {
            output: Some(o),
            ..ItemInput::default()
        };
        assert!(schema_validity(&v, &item(&ok)).unwrap().is_empty());
        assert_eq!(
            schema_validity(&v, &item(&bad)).unwrap()[0].schema_path,
            "/required"
        );
        assert_eq!(
            schema_validity(&v, &ItemInput::default()),
            Err(ItemError::Missing { field: "output" })
        );
    }
}
