//! `schema_validity`: the output's `field` (default `answer`; a string is parsed as JSON
//! first) validates against a JSON Schema (draft 2020-12,
//! `oloproof_metrics::ontology::conformance`, as `oloproof metric schema_validity`). A pass or
//! a fail with every violation (JSON pointers) in the detail; `missing` when the generation
//! failed; `excluded: no_field` (the field named) when the output has no such field.
//!
//! `schema:` is a path to a JSON file (relative to the config's folder) or the schema inline;
//! once the config is validated the entry holds the schema itself, so a changed schema file
//! changes the evaluator's identity. A missing file, a file that is not JSON (file:line:col)
//! and a schema that does not compile are located errors at `evaluators[i].schema`.

use oloproof_core::case::Case;
use oloproof_core::config::EvaluatorEntry;
use oloproof_core::source::SourceError;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use oloproof_metrics::batch::item::{self, ItemInput};
use oloproof_metrics::ontology::conformance::SchemaValidator;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{missing, verdict, EntryParser, Evaluator, EvaluatorSpec, SummaryKind};
use crate::judged::JudgeEnv;

/// Options of `schema_validity`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SchemaOptions {
    /// Criterion name (default `schema_validity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// The JSON Schema (draft 2020-12) the output must satisfy: written as a path to a JSON
    /// file (relative to the config's folder) or inline; once validated, the schema itself.
    pub schema: Value,
    /// The output field validated (default `answer`): a string is parsed as JSON first, any
    /// other JSON value is validated as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// The `schema_validity` type.
pub(crate) const SPEC: EvaluatorSpec = EvaluatorSpec {
    name: "schema_validity",
    build,
};

fn build(p: &EntryParser<'_>) -> Result<Box<dyn Evaluator>, SourceError> {
    let mut options: SchemaOptions = p.options()?;
    if let (Value::String(file), Some(dir)) = (&options.schema, p.dir) {
        options.schema = read_schema_file(p, &dir.join(file))?;
    }
    let validator = SchemaValidator::new(&options.schema).map_err(|e| {
        let mut err = p.doc.error_at(
            &p.path("schema"),
            false,
            format!("not a valid JSON Schema (draft 2020-12): {e}"),
        );
        err.expected = Some("a JSON Schema object, inline or in a JSON file".into());
        err
    })?;
    Ok(Box::new(SchemaValidity {
        criterion: options
            .criterion
            .clone()
            .unwrap_or_else(|| p.entry.type_name.clone()),
        identity: p.identity(&options),
        field: options
            .field
            .clone()
            .unwrap_or_else(|| "answer".to_string()),
        validator,
    }))
}

/// The JSON a schema file holds; a missing file or one that is not JSON is an error at
/// `evaluators[i].schema`.
fn read_schema_file(p: &EntryParser<'_>, path: &std::path::Path) -> Result<Value, SourceError> {
    let at = p.path("schema");
    let text = std::fs::read_to_string(path).map_err(|e| {
        let mut err = p
            .doc
            .error_at(&at, false, format!("cannot read {}: {e}", path.display()));
        err.expected = Some(
            "a JSON Schema file (relative to the config's folder) or the schema inline".to_string(),
        );
        err
    })?;
    serde_json::from_str(&text).map_err(|e| {
        // serde's message ends with its own " at line L column C": said once, up front.
        let message = e.to_string();
        let message = message
            .rsplit_once(" at line ")
            .map_or(message.as_str(), |(m, _)| m);
        p.doc.error_at(
            &at,
            false,
            format!(
                "{}:{}:{}: not JSON: {message}",
                path.display(),
                e.line(),
                e.column()
            ),
        )
    })
}

struct SchemaValidity {
    criterion: String,
    identity: EvaluatorEntry,
    field: String,
    validator: SchemaValidator,
}

impl Evaluator for SchemaValidity {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        SummaryKind::Proportion
    }

    fn identity(&self) -> &EvaluatorEntry {
        &self.identity
    }

    fn evaluate(&self, _: &Case, trace: &Trace, _: Option<&JudgeEnv<'_>>) -> CriterionVerdict {
        if trace.generation.is_none() {
            return missing(&self.criterion, trace, "the generation");
        }
        // The same per-item adapter as `oloproof metric schema_validity`.
        let item = ItemInput {
            output: trace.output_field(&self.field),
            ..ItemInput::default()
        };
        let violations = match item::schema_validity(&self.validator, &item) {
            Ok(violations) => violations,
            // Nothing to validate: the case is excluded with the field named, as the rule
            // evaluators do (a `null` field is a value, and validated).
            Err(_) => {
                return verdict(
                    &self.criterion,
                    Verdict::Excluded {
                        reason: "no_field".into(),
                    },
                    json!({"field": self.field, "why": format!("the output has no `{}` field", self.field)}),
                )
            }
        };
        let errors: Vec<Value> = violations
            .iter()
            .map(|v| json!({"instance_path": v.instance_path, "schema_path": v.schema_path, "message": v.message}))
            .collect();
        verdict(
            &self.criterion,
            Verdict::pass_if(violations.is_empty()),
            json!({"field": self.field, "errors": errors}),
        )
    }
}

#[cfg(test)]
mod tests {
    use oloproof_core::case::parse_cases;
    use oloproof_core::trace::Trace;
    use oloproof_core::verdict::Verdict;
    use serde_json::json;

    #[test]
    fn an_absent_field_is_excluded_and_null_is_validated() {
        let case = parse_cases("c.jsonl", r#"{"id":"c","input":{}}"#)
            .unwrap()
            .remove(0);
        let ev = crate::evaluators::from_json(&json!({
            "type": "schema_validity", "field": "order",
            "schema": {"type": "object", "required": ["id"]}
        }))
        .unwrap();
        let mut t = Trace::new("c");
        let mut out = serde_json::Map::new();
        out.insert("answer".into(), json!("done"));
        t.generation = Some(out.clone());
        let v = ev.evaluate(&case, &t, None);
        assert_eq!(
            v.verdict,
            Verdict::Excluded {
                reason: "no_field".into()
            }
        );
        assert_eq!(v.detail["field"], "order");
        out.insert("order".into(), serde_json::Value::Null);
        t.generation = Some(out.clone());
        assert_eq!(ev.evaluate(&case, &t, None).verdict, Verdict::Fail);
        out.insert("order".into(), json!({"id": 7}));
        t.generation = Some(out);
        assert_eq!(ev.evaluate(&case, &t, None).verdict, Verdict::Pass);
    }
}
