//! `corpus:`: the documents of the corpus and their metadata, one JSON object per line
//! (`{"doc_id": "d1", "metadata": {"tenant": "acme", "locale": "en-US"}}`), against which the
//! host judges the predicates a retrieval applied on the gold documents (seed 000 Part 5: "the
//! gold ids and instrumentation that logs the applied predicates").
//!
//! A malformed line is an error at `file:line:column` naming the key, reported before anything
//! runs. `doc_id`, `metadata` and `text` (a string: the passage text `oloproof import` puts
//! back into traces whose spans did not capture content) are read; other keys (`title`, …) are
//! allowed and ignored, so a corpus export can be used as it is.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::case::{first_col, key_column, strip_position};
use crate::pipeline::{FilterCheck, GoldFilterOutcome};
use crate::source::SourceError;

/// The corpus's documents: metadata by document id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Corpus {
    /// Metadata by `doc_id` (an empty map for a document without `metadata`).
    pub documents: HashMap<String, Map<String, Value>>,
    /// Text by `doc_id`, for the documents whose line has a string `text`.
    pub texts: HashMap<String, String>,
}

impl Corpus {
    /// Parses the JSON Lines text of `path`; every malformed line is reported (blank lines are
    /// skipped).
    pub fn parse(path: &str, text: &str) -> Result<Self, Vec<SourceError>> {
        let mut documents = HashMap::new();
        let mut texts = HashMap::new();
        let mut first_line: HashMap<String, usize> = HashMap::new();
        let mut errors = Vec::new();
        for (idx, line) in text.lines().enumerate() {
            let line_no = idx + 1;
            if line.trim().is_empty() {
                continue;
            }
            let value: Value = match serde_json::from_str(line) {
                Ok(v) => v,
                Err(e) => {
                    let mut err = SourceError::at_line(
                        path,
                        line,
                        line_no,
                        e.column().max(1),
                        1,
                        format!("malformed JSON: {}", strip_position(&e.to_string())),
                    );
                    err.help = Some(
                        "each line must be one JSON object: {\"doc_id\": \"d1\", \"metadata\": {...}}"
                            .into(),
                    );
                    errors.push(err);
                    continue;
                }
            };
            let Value::Object(mut obj) = value else {
                errors.push(SourceError::at_line(
                    path,
                    line,
                    line_no,
                    first_col(line),
                    1,
                    "a corpus document must be a JSON object",
                ));
                continue;
            };
            let doc_id = match obj.get("doc_id") {
                Some(Value::String(s)) if !s.is_empty() => s.clone(),
                other => {
                    let (col, message) = match other {
                        None => (first_col(line), "missing `doc_id`".to_string()),
                        Some(v) => (
                            key_column(line, "doc_id"),
                            format!("`doc_id` must be a non-empty string, found {v}"),
                        ),
                    };
                    let mut err = SourceError::at_line(path, line, line_no, col, 1, message);
                    err.key_path = Some("doc_id".into());
                    err.help = Some("give every document its id, as the system returns it".into());
                    errors.push(err);
                    continue;
                }
            };
            let metadata = match obj.shift_remove("metadata") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(m)) => m,
                Some(other) => {
                    let mut err = SourceError::at_line(
                        path,
                        line,
                        line_no,
                        key_column(line, "metadata"),
                        "metadata".len() + 2,
                        format!("`metadata` must be an object, found {other}"),
                    );
                    err.key_path = Some("metadata".into());
                    errors.push(err);
                    continue;
                }
            };
            if let Some(previous) = first_line.insert(doc_id.clone(), line_no) {
                let mut err = SourceError::at_line(
                    path,
                    line,
                    line_no,
                    key_column(line, "doc_id"),
                    "doc_id".len() + 2,
                    format!("document `{doc_id}` is listed twice (first on line {previous})"),
                );
                err.key_path = Some("doc_id".into());
                errors.push(err);
                continue;
            }
            if let Some(Value::String(text)) = obj.shift_remove("text") {
                texts.insert(doc_id.clone(), text);
            }
            documents.insert(doc_id, metadata);
        }
        if errors.is_empty() {
            Ok(Corpus { documents, texts })
        } else {
            Err(errors)
        }
    }

    /// The host's check of `filters` on the `gold` documents: for each, whether the corpus has
    /// it, the predicates it fails and the fields it lacks. A predicate whose shape is wrong
    /// (an `in` without a list) never reaches here: the retrieval reply is rejected first.
    pub fn check<'a>(
        &self,
        filters: &[&crate::pipeline::Filter],
        gold: impl IntoIterator<Item = &'a str>,
    ) -> FilterCheck {
        let predicates = filters.iter().map(|f| f.describe()).collect();
        let gold = gold
            .into_iter()
            .map(|doc_id| {
                let Some(metadata) = self.documents.get(doc_id) else {
                    return GoldFilterOutcome {
                        doc_id: doc_id.to_string(),
                        in_corpus: false,
                        failed: Vec::new(),
                        unknown_fields: Vec::new(),
                    };
                };
                let mut failed = Vec::new();
                let mut unknown_fields: Vec<String> = Vec::new();
                for f in filters {
                    match f.admits(metadata) {
                        Ok(Some(true)) => {}
                        Ok(Some(false)) => failed.push(f.describe()),
                        Ok(None) | Err(_) => {
                            if !unknown_fields.contains(&f.field) {
                                unknown_fields.push(f.field.clone());
                            }
                        }
                    }
                }
                GoldFilterOutcome {
                    doc_id: doc_id.to_string(),
                    in_corpus: true,
                    failed,
                    unknown_fields,
                }
            })
            .collect();
        FilterCheck { predicates, gold }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::Filter;
    use serde_json::json;

    /// Seed 000 Part 5's worked example: five documents, four queries with a hard filter
    /// each; the filter removes the gold document of q1 (locale) and q3 (tenant): false
    /// exclusion 50 %.
    #[test]
    fn the_seed_example_excludes_half_of_the_queries() {
        let corpus = Corpus::parse(
            "corpus.jsonl",
            r#"{"doc_id": "d1", "metadata": {"tenant": "acme", "locale": "en-US"}}
{"doc_id": "d2", "metadata": {"tenant": "acme", "locale": "en-GB"}}
{"doc_id": "d3", "metadata": {"tenant": "globex", "locale": "en-US"}}
{"doc_id": "d4", "metadata": {"tenant": "acme", "locale": "en-US"}}
{"doc_id": "d5", "metadata": {"tenant": "acme", "locale": "de-DE"}, "text": "kept"}
"#,
        )
        .unwrap();
        assert_eq!(corpus.texts.get("d5").map(String::as_str), Some("kept"));
        assert_eq!(corpus.texts.get("d1"), None);
        let f = |field: &str, value: &str| -> Filter {
            serde_json::from_value(json!({"field": field, "op": "=", "value": value})).unwrap()
        };
        let queries = [
            (f("locale", "en-US"), "d2"),
            (f("tenant", "acme"), "d4"),
            (f("tenant", "acme"), "d3"),
            (f("locale", "de-DE"), "d5"),
        ];
        let excluded: Vec<bool> = queries
            .iter()
            .map(|(filter, gold)| {
                corpus
                    .check(&[filter], [*gold])
                    .all_gold_excluded()
                    .unwrap()
            })
            .collect();
        assert_eq!(excluded, [true, false, true, false]);
        let check = corpus.check(&[&queries[0].0], ["d2"]);
        assert_eq!(check.gold[0].failed, [r#"locale = "en-US""#]);
        assert_eq!(check.predicates, [r#"locale = "en-US""#]);
    }

    #[test]
    fn unknown_documents_and_fields_cannot_be_judged() {
        let corpus =
            Corpus::parse("c", r#"{"doc_id": "D1", "metadata": {"tenant": "A"}}"#).unwrap();
        let region: Filter =
            serde_json::from_value(json!({"field": "region", "op": "=", "value": "eu"})).unwrap();
        let check = corpus.check(&[&region], ["D1", "D9"]);
        assert_eq!(check.gold[0].unknown_fields, ["region"]);
        assert!(!check.gold[1].in_corpus);
        assert_eq!(check.all_gold_excluded(), None);
        assert_eq!(FilterCheck::default().all_gold_excluded(), None);
    }

    #[test]
    fn malformed_lines_are_located() {
        let text = "{\"doc_id\": \"a\"}\nnot json\n{\"doc_id\": 3}\n{\"doc_id\": \"b\", \"metadata\": [1]}\n{\"doc_id\": \"a\"}\n";
        let errors = Corpus::parse("corpus.jsonl", text).unwrap_err();
        let lines: Vec<String> = errors.iter().map(|e| e.location()).collect();
        assert_eq!(
            lines,
            [
                "corpus.jsonl:2:2",
                "corpus.jsonl:3:2",
                "corpus.jsonl:4:17",
                "corpus.jsonl:5:2"
            ]
        );
        assert!(errors[1]
            .message
            .contains("`doc_id` must be a non-empty string"));
        assert!(errors[3].message.contains("listed twice (first on line 1)"));
    }
}
