//! Constrained-generation conformance (seed 000, Part 7): the share of outputs that parse and
//! validate against a JSON Schema (draft 2020-12, with the `jsonschema` crate; `format` is an
//! annotation, not an assertion, as the draft's default and Python's `jsonschema` have it), and
//! vocabulary conformance, the share of emitted values that belong to a closed vocabulary.

use std::collections::BTreeSet;

use serde_json::Value;
use thiserror::Error;

/// A schema that is not a valid draft 2020-12 schema.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("invalid JSON Schema (draft 2020-12): {0}")]
pub struct SchemaError(pub String);

/// One reason an output fails the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON Pointer into the output (`/items/0/id`); empty for the whole output, or for an
    /// output that is not JSON.
    pub instance_path: String,
    /// JSON Pointer to the failing keyword of the schema (`/properties/items/items/required`);
    /// `"(parse)"` for an output that is not JSON.
    pub schema_path: String,
    /// The validator's message.
    pub message: String,
}

/// A compiled draft 2020-12 validator.
pub struct SchemaValidator {
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for SchemaValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SchemaValidator(draft 2020-12)")
    }
}

impl SchemaValidator {
    /// Compiles `schema` as draft 2020-12 whatever its `$schema` says. Remote `$ref`s are not
    /// fetched (the metrics crate does no I/O).
    ///
    /// # Errors
    ///
    /// [`SchemaError`] when the schema is invalid or refers to an unavailable resource.
    pub fn new(schema: &Value) -> Result<Self, SchemaError> {
        jsonschema::draft202012::new(schema)
            .map(|validator| SchemaValidator { validator })
            .map_err(|e| SchemaError(e.to_string()))
    }

    /// Every violation of `instance`, in the validator's order; empty when valid.
    pub fn violations(&self, instance: &Value) -> Vec<Violation> {
        self.validator
            .iter_errors(instance)
            .map(|e| Violation {
                instance_path: e.instance_path().as_str().to_string(),
                schema_path: e.schema_path().as_str().to_string(),
                message: e.to_string(),
            })
            .collect()
    }

    /// Parses `text` as JSON, then validates it; a parse failure is one violation with schema
    /// path `"(parse)"`.
    pub fn check_text(&self, text: &str) -> Vec<Violation> {
        match serde_json::from_str::<Value>(text) {
            Ok(v) => self.violations(&v),
            Err(e) => vec![Violation {
                instance_path: String::new(),
                schema_path: "(parse)".into(),
                message: format!("not JSON: {e}"),
            }],
        }
    }
}

/// Vocabulary conformance of a batch of emitted values: `in_vocabulary / values`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VocabularyCounts {
    /// Values emitted.
    pub values: usize,
    /// Of those, values in the vocabulary.
    pub in_vocabulary: usize,
}

impl VocabularyCounts {
    /// Adds the values of one output; returns those outside the vocabulary (exact,
    /// case-sensitive membership: ontology ids are identifiers).
    pub fn add<'a>(&mut self, values: &[&'a str], vocabulary: &BTreeSet<String>) -> Vec<&'a str> {
        self.values += values.len();
        let outside: Vec<&str> = values
            .iter()
            .copied()
            .filter(|v| !vocabulary.contains(*v))
            .collect();
        self.in_vocabulary += values.len() - outside.len();
        outside
    }

    /// The share of values inside the vocabulary; `None` without values.
    pub fn rate(&self) -> Option<f64> {
        (self.values > 0).then(|| self.in_vocabulary as f64 / self.values as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn validity_with_paths() {
        let schema = json!({
            "type": "object",
            "required": ["entity"],
            "properties": {
                "entity": {"type": "string", "pattern": "^Q[0-9]+$"},
                "tags": {"type": "array", "items": {"enum": ["a", "b"]}}
            }
        });
        let v = SchemaValidator::new(&schema).unwrap();
        assert!(v.check_text(r#"{"entity": "Q18216"}"#).is_empty());
        let bad = v.check_text(r#"{"entity": "aspirin", "tags": ["a", "z"]}"#);
        let paths: Vec<(&str, &str)> = bad
            .iter()
            .map(|x| (x.instance_path.as_str(), x.schema_path.as_str()))
            .collect();
        assert!(
            paths.contains(&("/entity", "/properties/entity/pattern")),
            "{paths:?}"
        );
        assert!(
            paths.contains(&("/tags/1", "/properties/tags/items/enum")),
            "{paths:?}"
        );
        let missing = v.check_text("{}");
        assert_eq!(missing[0].schema_path, "/required");
        assert_eq!(v.check_text("{oops")[0].schema_path, "(parse)");
        assert!(SchemaValidator::new(&json!({"type": 12})).is_err());
    }

    #[test]
    fn vocabulary() {
        let vocab: BTreeSet<String> = ["Q1".to_string(), "Q2".to_string()].into();
        let mut c = VocabularyCounts::default();
        assert_eq!(c.add(&["Q1", "Q3", "q2"], &vocab), vec!["Q3", "q2"]);
        assert_eq!(c.rate(), Some(1.0 / 3.0));
        assert_eq!(VocabularyCounts::default().rate(), None);
    }
}
