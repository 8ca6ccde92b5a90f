//! The case set: one JSON object per line, validated before anything runs.
//!
//! `{"id", "input": {...}, "expected": {"answer", "relevant": [{"doc_id", "chunk_id"?,
//! "grade"?}], "gold_context": [{"doc_id", "text"}], "behavior"?}, "metadata": {...}}`.
//! A malformed line, a missing or duplicate `id` (every duplicate listed) is an error naming
//! `file:line:col`. Blank lines are skipped.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::source::{did_you_mean, SourceError};

/// One relevance label.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RelevantPassage {
    /// Document id.
    pub doc_id: String,
    /// Chunk id, when labels are per chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_id: Option<String>,
    /// Graded relevance (default 1; 0 is judged not relevant).
    #[serde(default = "default_grade")]
    pub grade: f64,
}

fn default_grade() -> f64 {
    1.0
}

/// One gold passage: the text that answers the question.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GoldPassage {
    /// Document id.
    pub doc_id: String,
    /// Chunk id, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_id: Option<String>,
    /// The passage text.
    pub text: String,
}

/// What a correct run of the case looks like.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Expected {
    /// The reference answer (a string, or any JSON an evaluator reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Value>,
    /// Relevance labels; absent means the case is excluded from retrieval metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relevant: Option<Vec<RelevantPassage>>,
    /// Gold passages, substituted for the context by `diagnose`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gold_context: Option<Vec<GoldPassage>>,
    /// `answer` (default), `abstain` or `clarify`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behavior: Option<String>,
    /// Any other expected field an evaluator names with `expected_field`.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One case.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Unique id within the case set.
    pub id: String,
    /// What the system receives.
    pub input: Map<String, Value>,
    /// Expectations.
    #[serde(default)]
    pub expected: Expected,
    /// Free-form metadata, sliceable as `metadata.<path>`.
    #[serde(default)]
    pub metadata: Map<String, Value>,
}

impl Case {
    /// The value at a dotted `metadata` path (`topic`, `a.b`), if present.
    pub fn metadata_at(&self, path: &str) -> Option<&Value> {
        let mut parts = path.split('.');
        let mut cur = self.metadata.get(parts.next()?)?;
        for p in parts {
            cur = cur.get(p)?;
        }
        Some(cur)
    }
}

const CASE_KEYS: &[&str] = &["id", "input", "expected", "metadata"];
const EXPECTED_KEYS: &[&str] = &["answer", "relevant", "gold_context", "behavior"];

/// Failure to load a case file: every problem found, in file order.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaseFileError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The path.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// One or more lines are invalid.
    #[error("{}", render(.0))]
    Invalid(Vec<SourceError>),
}

fn render(errors: &[SourceError]) -> String {
    let mut out = String::new();
    for e in errors {
        out.push_str(&e.to_string());
    }
    out.push_str(&format!(
        "{} problem{} in the case file; nothing was run",
        errors.len(),
        if errors.len() == 1 { "" } else { "s" }
    ));
    out
}

/// Reads and validates a JSONL case file.
pub fn load_cases(path: &std::path::Path) -> Result<Vec<Case>, CaseFileError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| CaseFileError::Read {
        path: shown.clone(),
        source,
    })?;
    parse_cases(&shown, &text).map_err(CaseFileError::Invalid)
}

/// Parses and validates JSONL `text` (named `path` in errors).
pub fn parse_cases(path: &str, text: &str) -> Result<Vec<Case>, Vec<SourceError>> {
    let mut cases = Vec::new();
    let mut lines_of = Vec::new();
    let mut errors = Vec::new();
    for (idx, line) in text.lines().enumerate() {
        let line_no = idx + 1;
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                let mut err = SourceError::at(
                    path,
                    text,
                    line_no,
                    e.column().max(1),
                    1,
                    format!("malformed JSON: {}", strip_position(&e.to_string())),
                );
                err.help = Some("each line must be one complete JSON object".to_string());
                errors.push(err);
                continue;
            }
        };
        let Value::Object(obj) = &value else {
            errors.push(SourceError::at(
                path,
                text,
                line_no,
                first_col(line),
                1,
                "a case must be a JSON object",
            ));
            continue;
        };
        if let Some(unknown) = obj.keys().find(|k| !CASE_KEYS.contains(&k.as_str())) {
            let col = key_column(line, unknown);
            let mut err = SourceError::at(
                path,
                text,
                line_no,
                col,
                unknown.chars().count() + 2,
                format!("unknown key `{unknown}`"),
            );
            err.key_path = Some(unknown.clone());
            err.expected = Some(format!("one of {}", CASE_KEYS.join(", ")));
            err.help = did_you_mean(unknown, CASE_KEYS.iter().copied())
                .map(|s| format!("did you mean `{s}`?"));
            errors.push(err);
            continue;
        }
        match obj.get("id") {
            None => {
                let mut err =
                    SourceError::at(path, text, line_no, first_col(line), 1, "missing `id`");
                err.key_path = Some("id".to_string());
                err.help = Some("give every case a unique string id".to_string());
                errors.push(err);
                continue;
            }
            Some(Value::String(s)) if !s.is_empty() => {}
            Some(_) => {
                let mut err = SourceError::at(
                    path,
                    text,
                    line_no,
                    key_column(line, "id"),
                    4,
                    "`id` must be a non-empty string",
                );
                err.key_path = Some("id".to_string());
                errors.push(err);
                continue;
            }
        }
        if let Some(Value::Object(expected)) = obj.get("expected") {
            if let Some((key, near)) = expected
                .keys()
                .filter(|k| !EXPECTED_KEYS.contains(&k.as_str()))
                .find_map(|k| did_you_mean(k, EXPECTED_KEYS.iter().copied()).map(|n| (k, n)))
            {
                let mut err = SourceError::at(
                    path,
                    text,
                    line_no,
                    key_column(line, key),
                    key.chars().count() + 2,
                    format!("unknown key `{key}` in `expected`"),
                );
                err.key_path = Some(format!("expected.{key}"));
                err.help = Some(format!("did you mean `{near}`? (other keys of `expected` are kept for evaluators that name them)"));
                errors.push(err);
                continue;
            }
        }
        match serde_path_to_error::deserialize::<_, Case>(&value) {
            Ok(case) => {
                cases.push(case);
                lines_of.push(line_no);
            }
            Err(e) => {
                let key = e.path().to_string();
                let last = key
                    .rsplit(['.', '['])
                    .next()
                    .unwrap_or("")
                    .trim_end_matches(']')
                    .to_string();
                let message = e.inner().to_string();
                let field = message
                    .strip_prefix("unknown field `")
                    .and_then(|r| r.split('`').next())
                    .map(str::to_string);
                let target = field.clone().unwrap_or(last);
                let col = if target.is_empty() {
                    first_col(line)
                } else {
                    key_column(line, &target)
                };
                let mut err = SourceError::at(
                    path,
                    text,
                    line_no,
                    col,
                    target.chars().count() + 2,
                    message
                        .split(", expected")
                        .next()
                        .unwrap_or(&message)
                        .to_string(),
                );
                err.key_path = Some(key.clone());
                if let Some((_, want)) = message.split_once(", expected ") {
                    err.expected = Some(want.replace('`', ""));
                    if let Some(f) = &field {
                        let options: Vec<&str> = want
                            .split('`')
                            .enumerate()
                            .filter(|(i, _)| i % 2 == 1)
                            .map(|(_, s)| s)
                            .collect();
                        err.help = did_you_mean(f, options).map(|s| format!("did you mean `{s}`?"));
                    }
                }
                errors.push(err);
            }
        }
    }
    let mut first_seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut dup_lines: std::collections::BTreeMap<&str, Vec<usize>> =
        std::collections::BTreeMap::new();
    for (case, line) in cases.iter().zip(&lines_of) {
        if let Some(first) = first_seen.get(case.id.as_str()) {
            dup_lines
                .entry(case.id.as_str())
                .or_insert_with(|| vec![*first])
                .push(*line);
        } else {
            first_seen.insert(&case.id, *line);
        }
    }
    for (id, lines) in &dup_lines {
        for &line in &lines[1..] {
            let src = text.lines().nth(line - 1).unwrap_or("");
            let mut err = SourceError::at(
                path,
                text,
                line,
                value_column(src, "id"),
                id.chars().count() + 2,
                format!("duplicate id `{id}`"),
            );
            err.key_path = Some("id".to_string());
            err.help = Some(format!(
                "ids must be unique; `{id}` is on lines {}",
                lines
                    .iter()
                    .map(|l| l.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            errors.push(err);
        }
    }
    if errors.is_empty() {
        Ok(cases)
    } else {
        errors.sort_by_key(|e| match &e.origin {
            crate::source::Origin::File { line, .. } => *line,
            crate::source::Origin::Override(_) => 0,
        });
        Err(errors)
    }
}

pub(crate) fn strip_position(message: &str) -> String {
    message
        .split(" at line ")
        .next()
        .unwrap_or(message)
        .to_string()
}

pub(crate) fn first_col(line: &str) -> usize {
    line.chars().take_while(|c| c.is_whitespace()).count() + 1
}

/// 1-based column of `"key"` in a JSON line (first occurrence), else the line start.
pub(crate) fn key_column(line: &str, key: &str) -> usize {
    let needle = format!("\"{key}\"");
    line.find(&needle)
        .map(|b| line[..b].chars().count() + 1)
        .unwrap_or_else(|| first_col(line))
}

/// 1-based column of the value following `"key":`.
fn value_column(line: &str, key: &str) -> usize {
    let needle = format!("\"{key}\"");
    match line.find(&needle) {
        Some(b) => {
            let after = &line[b + needle.len()..];
            let skip = after
                .chars()
                .take_while(|c| c.is_whitespace() || *c == ':')
                .count();
            line[..b].chars().count() + needle.chars().count() + skip + 1
        }
        None => first_col(line),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_seed_case() {
        let line = r#"{"id":"refund_annual","input":{"question":"How long do refunds take for annual plans?"},"expected":{"answer":"14 days","relevant":[{"doc_id":"kb-01"}],"gold_context":[{"doc_id":"kb-01","text":"Refunds for annual plans are issued within 14 days of an approved request."}]},"metadata":{"topic":"billing"}}"#;
        let cases = parse_cases("cases.jsonl", line).unwrap();
        assert_eq!(cases[0].id, "refund_annual");
        assert_eq!(cases[0].expected.relevant.as_ref().unwrap()[0].grade, 1.0);
        assert_eq!(
            cases[0].metadata_at("topic"),
            Some(&Value::String("billing".into()))
        );
    }

    #[test]
    fn lists_every_duplicate() {
        let text = "{\"id\":\"a\",\"input\":{}}\n{\"id\":\"b\",\"input\":{}}\n{\"id\":\"a\",\"input\":{}}\n{\"id\":\"a\",\"input\":{}}\n";
        let errs = parse_cases("c.jsonl", text).unwrap_err();
        assert_eq!(errs.len(), 2);
        assert_eq!(errs[0].location(), "c.jsonl:3:7");
        assert!(errs[0].help.as_deref().unwrap().contains("lines 1, 3, 4"));
    }

    #[test]
    fn malformed_and_missing_id() {
        let text = "{\"id\":\"a\",\"input\":{}}\n{\"id\": \"b\", \"input\": {\n{\"input\":{}}\n";
        let errs = parse_cases("c.jsonl", text).unwrap_err();
        assert_eq!(errs.len(), 2);
        assert!(errs[0].message.starts_with("malformed JSON"));
        assert_eq!(errs[1].message, "missing `id`");
        assert_eq!(errs[1].location(), "c.jsonl:3:1");
    }

    #[test]
    fn nested_unknown_key_suggests() {
        let text = r#"{"id":"a","input":{},"expected":{"relevant":[{"doc":"x"}]}}"#;
        let errs = parse_cases("c.jsonl", text).unwrap_err();
        assert_eq!(
            errs[0].key_path.as_deref(),
            Some("expected.relevant[0].doc")
        );
        assert_eq!(errs[0].help.as_deref(), Some("did you mean `doc_id`?"));
    }
}
