//! The case set: one JSON object per line, validated before anything runs.
//!
//! `{"id", "input": {...}, "expected": {"answer", "relevant": [{"doc_id", "chunk_id"?,
//! "grade"?}], "gold_context": [{"doc_id", "text"}], "behavior"?}, "metadata": {...}}`.
//! A malformed line, a missing or duplicate `id` (every duplicate listed) is an error naming
//! `file:line:col`. Blank lines are skipped. A case with `"status": "draft"` (written by
//! `oloproof generate`) is refused until a person reviews it and sets `"status": "reviewed"`.
//!
//! Rubrex fields are checked here too, each with a located error and a suggestion:
//! `expected.behavior` ([`Behavior`]: `answer`, `abstain`, `clarify`), the `metadata.status` of
//! relevance labels and gold passages (`current` / `archived`) and the case's
//! `metadata.evidence_condition` ([`EVIDENCE_CONDITIONS`], the `diagnostic_matrix` slice).

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
    /// Metadata of the labelled passage (`status`: `current` / `archived`, `corpus_version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
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
    /// Metadata of the passage (`status`: `current` / `archived`, `corpus_version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// What the case expects the system to do (seed 004: answer, abstain, or ask for clarification).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Behavior {
    /// A factual answer from the corpus (the default).
    #[default]
    Answer,
    /// Decline: the corpus cannot answer.
    Abstain,
    /// Ask the user to clarify an ambiguous question.
    Clarify,
}

/// The behaviour words, as written in files.
pub const BEHAVIORS: &[&str] = &["answer", "abstain", "clarify"];

impl Behavior {
    /// `answer`, `abstain` or `clarify`.
    pub fn as_str(self) -> &'static str {
        match self {
            Behavior::Answer => "answer",
            Behavior::Abstain => "abstain",
            Behavior::Clarify => "clarify",
        }
    }

    /// Parses a behaviour word.
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "answer" => Some(Behavior::Answer),
            "abstain" => Some(Behavior::Abstain),
            "clarify" => Some(Behavior::Clarify),
            _ => None,
        }
    }
}

/// The values of `metadata.evidence_condition`: the rows of Rubrex's diagnostic matrix.
pub const EVIDENCE_CONDITIONS: &[&str] = &[
    "sufficient",
    "missing",
    "contradictory",
    "irrelevant_additions",
];

/// A Rubrex field with a value outside its vocabulary.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BadWord {
    /// Key path, e.g. `expected.gold_context[0].metadata.status`.
    pub key_path: String,
    /// The value found.
    pub value: String,
    /// The allowed words.
    pub allowed: &'static [&'static str],
}

impl BadWord {
    /// A located error for this value in `line` (line `line_no` of file `path`).
    pub(crate) fn error(&self, path: &str, line_no: usize, line: &str) -> SourceError {
        let needle = format!("\"{}\"", self.value);
        let col = line
            .find(&needle)
            .map(|b| line[..b].chars().count() + 1)
            .unwrap_or_else(|| first_col(line));
        let field = self.key_path.rsplit('.').next().unwrap_or(&self.key_path);
        let mut err = SourceError::at_line(
            path,
            line,
            line_no,
            col,
            self.value.chars().count() + 2,
            format!("unknown {field} `{}`", self.value),
        );
        err.key_path = Some(self.key_path.clone());
        err.expected = Some(format!("one of {}", self.allowed.join(", ")));
        err.help = did_you_mean(&self.value, self.allowed.iter().copied())
            .map(|s| format!("did you mean `{s}`?"));
        err
    }
}

/// Checks a word-valued field: absent is fine, a string must be one of `allowed`.
pub(crate) fn check_word(
    value: Option<&Value>,
    key_path: &str,
    allowed: &'static [&'static str],
) -> Option<BadWord> {
    match value {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if allowed.contains(&s.as_str()) => None,
        Some(other) => Some(BadWord {
            key_path: key_path.to_string(),
            value: match other {
                Value::String(s) => s.clone(),
                v => v.to_string(),
            },
            allowed,
        }),
    }
}

/// The first Rubrex field of a raw case object with a value outside its vocabulary.
pub(crate) fn check_rubrex_words(obj: &Map<String, Value>) -> Option<BadWord> {
    let expected = obj.get("expected");
    if let Some(bad) = check_word(
        expected.and_then(|e| e.get("behavior")),
        "expected.behavior",
        BEHAVIORS,
    ) {
        return Some(bad);
    }
    for list in ["relevant", "gold_context"] {
        if let Some(Value::Array(items)) = expected.and_then(|e| e.get(list)) {
            for (i, item) in items.iter().enumerate() {
                if let Some(bad) = check_word(
                    item.get("metadata").and_then(|m| m.get("status")),
                    &format!("expected.{list}[{i}].metadata.status"),
                    crate::passage::EVIDENCE_STATUSES,
                ) {
                    return Some(bad);
                }
            }
        }
    }
    check_word(
        obj.get("metadata")
            .and_then(|m| m.get("evidence_condition")),
        "metadata.evidence_condition",
        EVIDENCE_CONDITIONS,
    )
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
    pub behavior: Option<Behavior>,
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

const CASE_KEYS: &[&str] = &["id", "input", "expected", "metadata", "status"];

/// The review states of `status` (written by `oloproof generate`): a `draft` is refused until
/// a person has reviewed it and set `reviewed`.
pub const CASE_STATUSES: &[&str] = &["draft", "reviewed"];
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
    let bytes = std::fs::read(path).map_err(|source| CaseFileError::Read {
        path: shown.clone(),
        source,
    })?;
    let text =
        crate::source::decode_utf8(&shown, bytes).map_err(|e| CaseFileError::Invalid(vec![e]))?;
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
                let mut err = SourceError::at_line(
                    path,
                    line,
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
            errors.push(SourceError::at_line(
                path,
                line,
                line_no,
                first_col(line),
                1,
                "a case must be a JSON object",
            ));
            continue;
        };
        if let Some(unknown) = obj.keys().find(|k| !CASE_KEYS.contains(&k.as_str())) {
            let col = key_column(line, unknown);
            let mut err = SourceError::at_line(
                path,
                line,
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
                    SourceError::at_line(path, line, line_no, first_col(line), 1, "missing `id`");
                err.key_path = Some("id".to_string());
                err.help = Some("give every case a unique string id".to_string());
                errors.push(err);
                continue;
            }
            Some(Value::String(s)) if !s.is_empty() => {}
            Some(_) => {
                let mut err = SourceError::at_line(
                    path,
                    line,
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
                let mut err = SourceError::at_line(
                    path,
                    line,
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
        match obj.get("status") {
            None => {}
            Some(Value::String(st)) if st == "reviewed" => {}
            Some(status) => {
                let id = obj.get("id").and_then(Value::as_str).unwrap_or("?");
                let (message, help) = if status == "draft" {
                    (
                        format!("case `{id}` is a draft (status: draft)"),
                        "review it (`oloproof generate --review FILE`), fix what is wrong, then set \"status\": \"reviewed\"".to_string(),
                    )
                } else {
                    (
                        format!("unknown status {status}"),
                        format!("use one of {}", CASE_STATUSES.join(", ")),
                    )
                };
                let mut err = SourceError::at_line(
                    path,
                    line,
                    line_no,
                    key_column(line, "status"),
                    8,
                    message,
                );
                err.key_path = Some("status".to_string());
                err.help = Some(help);
                errors.push(err);
                continue;
            }
        }
        let value = if obj.contains_key("status") {
            let mut without = obj.clone();
            without.remove("status");
            Value::Object(without)
        } else {
            value
        };
        let Value::Object(obj) = &value else {
            continue;
        };
        if let Some(bad) = check_rubrex_words(obj) {
            errors.push(bad.error(path, line_no, line));
            continue;
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
                let mut err = SourceError::at_line(
                    path,
                    line,
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
    // The text of every line, read once when there are duplicates to point at.
    let all_lines: Vec<&str> = if dup_lines.is_empty() {
        Vec::new()
    } else {
        text.lines().collect()
    };
    for (id, lines) in &dup_lines {
        for &line in &lines[1..] {
            let src = all_lines.get(line - 1).copied().unwrap_or("");
            let mut err = SourceError::at_line(
                path,
                src,
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
    fn rubrex_fields_parse_and_bad_words_are_located() {
        let line = r#"{"id":"p","input":{},"expected":{"behavior":"abstain","gold_context":[{"doc_id":"r","text":"t","metadata":{"status":"archived"}}]},"metadata":{"evidence_condition":"missing"}}"#;
        let case = parse_cases("c.jsonl", line).unwrap().remove(0);
        assert_eq!(case.expected.behavior, Some(Behavior::Abstain));
        let gold = &case.expected.gold_context.as_ref().unwrap()[0];
        assert_eq!(
            crate::passage::EvidenceStatus::of(gold.metadata.as_ref()),
            Ok(crate::passage::EvidenceStatus::Archived)
        );
        let bad = r#"{"id":"p","input":{},"expected":{"behavior":"abstian"}}"#;
        let errs = parse_cases("c.jsonl", bad).unwrap_err();
        assert_eq!(errs[0].location(), "c.jsonl:1:45");
        assert_eq!(errs[0].message, "unknown behavior `abstian`");
        assert_eq!(errs[0].key_path.as_deref(), Some("expected.behavior"));
        assert_eq!(errs[0].help.as_deref(), Some("did you mean `abstain`?"));
        let bad = r#"{"id":"p","input":{},"metadata":{"evidence_condition":"contradictry"}}"#;
        let errs = parse_cases("c.jsonl", bad).unwrap_err();
        assert_eq!(errs[0].message, "unknown evidence_condition `contradictry`");
        assert_eq!(
            errs[0].help.as_deref(),
            Some("did you mean `contradictory`?")
        );
        let bad = r#"{"id":"p","input":{},"expected":{"relevant":[{"doc_id":"a","metadata":{"status":"old"}}]}}"#;
        let errs = parse_cases("c.jsonl", bad).unwrap_err();
        assert_eq!(
            errs[0].key_path.as_deref(),
            Some("expected.relevant[0].metadata.status")
        );
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
