//! Recorded cases: JSONL records that already contain what the system did.
//!
//! Two formats, detected from the first record (or named with `--dataset-format`):
//! - **Ragas** `EvaluationDataset` JSONL: `user_input`, `retrieved_contexts` (strings),
//!   `response`, `reference`, optional `reference_contexts`, `id` and `metadata`. The pre-0.2
//!   names `question`, `contexts`, `answer`, `ground_truth` are read as the new ones and reported
//!   in one warning ([`Dataset::warnings`]) — never dropped silently.
//! - **trace**: an Oloproof case (`id`, `input`, `expected`, `metadata`) plus `retrieval`
//!   (`{query?, depth?, candidates}`), `context` (passages given to the generator), `answer`
//!   and `citations`.
//!
//! Every record becomes a [`Case`] and a [`Trace`]. A retrieved context without an id gets the
//! stable id [`stable_id`] (`ctx-` + the first 12 hex digits of the sha256 of its text), so
//! retrieval metrics and caching work. Ragas `reference_contexts` become both
//! `expected.gold_context` and `expected.relevant` (with the same stable ids), so retrieval
//! metrics count a retrieved context as relevant when its text is exactly a reference context.
//! A record without `id` is `row-<line>`. Unknown keys are errors naming `file:line:col`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::case::{first_col, key_column, strip_position, Case, CaseFileError, Expected};
use crate::case::{GoldPassage, RelevantPassage};
use crate::context::{assemble, Context, ContextPassage};
use crate::passage::{Passage, Retrieval};
use crate::source::{did_you_mean, SourceError};
use crate::trace::Trace;

/// The format of a recorded dataset.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DatasetFormat {
    /// Ragas `EvaluationDataset` JSONL.
    Ragas,
    /// Oloproof's trace JSONL.
    Trace,
}

impl DatasetFormat {
    /// `ragas` or `trace`.
    pub fn name(self) -> &'static str {
        match self {
            DatasetFormat::Ragas => "ragas",
            DatasetFormat::Trace => "trace",
        }
    }
}

/// One recorded case.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The case.
    pub case: Case,
    /// What the system did.
    pub trace: Trace,
}

/// A parsed dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// Records in file order.
    pub records: Vec<Record>,
    /// The format read.
    pub format: DatasetFormat,
    /// sha256 (hex) of the file's bytes.
    pub sha256: String,
    /// Messages for the user (legacy Ragas names), printed by the CLI.
    pub warnings: Vec<String>,
}

/// The stable id of a context known only by its text: `ctx-` + 12 hex digits of its sha256.
pub fn stable_id(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("ctx-{}", &hex[..12])
}

/// Ragas keys (0.2 names).
pub const RAGAS_KEYS: &[&str] = &[
    "user_input",
    "retrieved_contexts",
    "response",
    "reference",
    "reference_contexts",
    "id",
    "metadata",
];
/// Pre-0.2 Ragas names and their 0.2 names.
pub const RAGAS_LEGACY: &[(&str, &str)] = &[
    ("question", "user_input"),
    ("contexts", "retrieved_contexts"),
    ("answer", "response"),
    ("ground_truth", "reference"),
];
/// Keys of a trace record.
pub const TRACE_KEYS: &[&str] = &[
    "id",
    "input",
    "expected",
    "metadata",
    "retrieval",
    "context",
    "answer",
    "citations",
];

/// Reads and parses a dataset file.
pub fn load_dataset(
    path: &std::path::Path,
    format: Option<DatasetFormat>,
) -> Result<Dataset, CaseFileError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| CaseFileError::Read {
        path: shown.clone(),
        source,
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let mut dataset = parse_dataset(&shown, &text, format).map_err(CaseFileError::Invalid)?;
    dataset.sha256 = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(dataset)
}

/// Parses JSONL `text` (named `path` in messages); `sha256` is that of `text`.
pub fn parse_dataset(
    path: &str,
    text: &str,
    format: Option<DatasetFormat>,
) -> Result<Dataset, Vec<SourceError>> {
    let mut errors = Vec::new();
    let mut rows: Vec<(usize, &str, Map<String, Value>)> = Vec::new();
    for (idx, line) in text.lines().enumerate() {
        let line_no = idx + 1;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(obj)) => rows.push((line_no, line, obj)),
            Ok(_) => errors.push(SourceError::at(
                path,
                text,
                line_no,
                first_col(line),
                1,
                "a record must be a JSON object",
            )),
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
            }
        }
    }
    let format = match format {
        Some(f) => f,
        None => match rows.first() {
            Some((_, _, obj)) if obj.contains_key("input") || obj.contains_key("retrieval") => {
                DatasetFormat::Trace
            }
            Some((_, _, obj)) if obj.contains_key("user_input") || obj.contains_key("question") => {
                DatasetFormat::Ragas
            }
            Some((line_no, line, _)) => {
                let mut err = SourceError::at(
                    path,
                    text,
                    *line_no,
                    first_col(line),
                    1,
                    "cannot tell the dataset format from the first record",
                );
                err.expected = Some(
                    "a Ragas record (`user_input`, …) or a trace record (`input`, …)".to_string(),
                );
                err.help = Some("name it with --dataset-format ragas|trace".to_string());
                errors.push(err);
                return Err(errors);
            }
            None => DatasetFormat::Ragas,
        },
    };
    let mut records = Vec::new();
    let mut lines = Vec::new();
    let mut legacy_used: Vec<&str> = Vec::new();
    let mut legacy_records = 0usize;
    for (line_no, line, obj) in rows {
        let at = |key: &str, message: String| {
            let mut err = SourceError::at(
                path,
                text,
                line_no,
                key_column(line, key),
                key.chars().count() + 2,
                message,
            );
            err.key_path = Some(key.to_string());
            err
        };
        let result = match format {
            DatasetFormat::Ragas => ragas_record(line_no, obj, &at).map(|(record, legacy)| {
                if !legacy.is_empty() {
                    legacy_records += 1;
                    for old in legacy {
                        if !legacy_used.contains(&old) {
                            legacy_used.push(old);
                        }
                    }
                }
                record
            }),
            DatasetFormat::Trace => trace_record(line_no, obj, &at),
        };
        match result {
            Ok(record) => {
                records.push(record);
                lines.push(line_no);
            }
            Err(err) => errors.push(*err),
        }
    }
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (r, &line_no) in records.iter().zip(&lines) {
        if let Some(first) = seen.insert(r.case.id.as_str(), line_no) {
            let line = text.lines().nth(line_no - 1).unwrap_or("");
            let mut err = SourceError::at(
                path,
                text,
                line_no,
                key_column(line, "id"),
                4,
                format!("duplicate id `{}`", r.case.id),
            );
            err.key_path = Some("id".to_string());
            err.help = Some(format!("ids must be unique; the first is on line {first}"));
            errors.push(err);
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut warnings = Vec::new();
    if !legacy_used.is_empty() {
        legacy_used.sort_by_key(|old| RAGAS_LEGACY.iter().position(|(o, _)| o == old));
        let renames: Vec<String> = legacy_used
            .iter()
            .filter_map(|old| RAGAS_LEGACY.iter().find(|(o, _)| o == old))
            .map(|(o, n)| format!("{o} → {n}"))
            .collect();
        warnings.push(format!(
            "{path}: {legacy_records} record{} use{} the pre-0.2 Ragas names ({}); read them as the new names — rename them to silence this warning",
            if legacy_records == 1 { "" } else { "s" },
            if legacy_records == 1 { "s" } else { "" },
            renames.join(", ")
        ));
    }
    Ok(Dataset {
        records,
        format,
        sha256: Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
        warnings,
    })
}

type Locate<'a> = dyn Fn(&str, String) -> SourceError + 'a;

fn strings(value: &Value, key: &str, at: &Locate<'_>) -> Result<Vec<String>, Box<SourceError>> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                _ => Err(Box::new(at(
                    key,
                    format!("wrong type: `{key}` must be a list of strings"),
                ))),
            })
            .collect(),
        _ => Err(Box::new(at(
            key,
            format!("wrong type: `{key}` must be a list of strings"),
        ))),
    }
}

fn text_of(value: Option<&Value>) -> Option<Value> {
    match value {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.clone()),
    }
}

/// A context passage list: each passage at its position among the candidates, if retrieved.
fn context_of(passages: Vec<Passage>, candidates: &[Passage]) -> Context {
    Context {
        passages: passages
            .into_iter()
            .map(|p| ContextPassage {
                position: candidates
                    .iter()
                    .position(|c| c.doc_id == p.doc_id && c.chunk_id == p.chunk_id)
                    .map(|i| i + 1),
                tokens: None,
                passage: p,
            })
            .collect(),
        dropped: Vec::new(),
        truncated: false,
        tokens_used: None,
    }
}

fn text_passage(text: &str) -> Passage {
    Passage {
        doc_id: stable_id(text),
        chunk_id: None,
        score: None,
        text: Some(text.to_string()),
        metadata: None,
    }
}

fn record_id(
    obj: &Map<String, Value>,
    line_no: usize,
    at: &Locate<'_>,
) -> Result<String, Box<SourceError>> {
    match obj.get("id") {
        None | Some(Value::Null) => Ok(format!("row-{line_no}")),
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        Some(_) => Err(Box::new(at(
            "id",
            "`id` must be a non-empty string".to_string(),
        ))),
    }
}

fn metadata_of(
    obj: &Map<String, Value>,
    at: &Locate<'_>,
) -> Result<Map<String, Value>, Box<SourceError>> {
    match obj.get("metadata") {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(_) => Err(Box::new(at(
            "metadata",
            "wrong type: `metadata` must be an object".to_string(),
        ))),
    }
}

fn unknown_key(key: &str, known: &[&str], at: &Locate<'_>) -> Box<SourceError> {
    let mut err = at(key, format!("unknown key `{key}`"));
    err.expected = Some(format!("one of {}", known.join(", ")));
    err.help = did_you_mean(key, known.iter().copied()).map(|s| format!("did you mean `{s}`?"));
    Box::new(err)
}

/// A Ragas record; also returns the legacy names it used.
fn ragas_record(
    line_no: usize,
    mut obj: Map<String, Value>,
    at: &Locate<'_>,
) -> Result<(Record, Vec<&'static str>), Box<SourceError>> {
    let mut legacy = Vec::new();
    let mut known: Vec<&str> = RAGAS_KEYS.to_vec();
    known.extend(RAGAS_LEGACY.iter().map(|(o, _)| *o));
    if let Some(key) = obj.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(unknown_key(key, RAGAS_KEYS, at));
    }
    for (old, new) in RAGAS_LEGACY {
        if let Some(v) = obj.remove(*old) {
            if obj.contains_key(*new) {
                let mut err = at(
                    old,
                    format!("both `{old}` and its new name `{new}` are set"),
                );
                err.help = Some(format!("keep `{new}` (`{old}` is the pre-0.2 Ragas name)"));
                return Err(Box::new(err));
            }
            obj.insert((*new).to_string(), v);
            legacy.push(*old);
        }
    }
    let id = record_id(&obj, line_no, at)?;
    let question = match obj.get("user_input") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => {
            return Err(Box::new(at(
                "user_input",
                "wrong type: `user_input` must be a string".to_string(),
            )))
        }
        None => {
            let mut err = at("user_input", "missing `user_input`".to_string());
            err.help = Some("every Ragas record needs the question as `user_input`".to_string());
            return Err(Box::new(err));
        }
    };
    let retrieved = strings(
        obj.get("retrieved_contexts").unwrap_or(&Value::Null),
        "retrieved_contexts",
        at,
    )?;
    let reference_contexts = match obj.get("reference_contexts") {
        None | Some(Value::Null) => None,
        Some(v) => Some(strings(v, "reference_contexts", at)?),
    };
    let candidates: Vec<Passage> = retrieved.iter().map(|t| text_passage(t)).collect();
    let mut input = Map::new();
    input.insert("question".to_string(), Value::String(question));
    let case = Case {
        id: id.clone(),
        input,
        expected: Expected {
            answer: text_of(obj.get("reference")),
            relevant: reference_contexts.as_ref().map(|refs| {
                refs.iter()
                    .map(|t| RelevantPassage {
                        doc_id: stable_id(t),
                        chunk_id: None,
                        grade: 1.0,
                    })
                    .collect()
            }),
            gold_context: reference_contexts.as_ref().map(|refs| {
                refs.iter()
                    .map(|t| GoldPassage {
                        doc_id: stable_id(t),
                        chunk_id: None,
                        text: t.clone(),
                    })
                    .collect()
            }),
            behavior: None,
            extra: Map::new(),
        },
        metadata: metadata_of(&obj, at)?,
    };
    let mut trace = Trace::new(&id);
    trace.context = Some(assemble(&candidates, candidates.len(), None));
    trace.retrieval = Some(Retrieval {
        query: None,
        depth: candidates.len(),
        candidates,
    });
    let mut generation = Map::new();
    if let Some(answer) = text_of(obj.get("response")) {
        generation.insert("answer".to_string(), answer);
    }
    trace.generation = Some(generation);
    Ok((Record { case, trace }, legacy))
}

/// Fills `doc_id` of passages known only by their text (a string or `{text}` without id).
fn passages(value: &Value, key: &str, at: &Locate<'_>) -> Result<Vec<Passage>, Box<SourceError>> {
    let Value::Array(items) = value else {
        return Err(Box::new(at(
            key,
            format!("wrong type: `{key}` must be a list of passages"),
        )));
    };
    items
        .iter()
        .map(|item| {
            let item = match item {
                Value::String(s) => return Ok(text_passage(s)),
                Value::Object(o) if !o.contains_key("doc_id") => {
                    let mut o = o.clone();
                    let text = o.get("text").and_then(Value::as_str).unwrap_or("");
                    o.insert("doc_id".to_string(), Value::String(stable_id(text)));
                    Value::Object(o)
                }
                other => other.clone(),
            };
            serde_json::from_value::<Passage>(item).map_err(|e| {
                Box::new(at(
                    key,
                    format!(
                        "invalid passage in `{key}`: {}",
                        strip_position(&e.to_string())
                    ),
                ))
            })
        })
        .collect()
}

/// A trace record.
fn trace_record(
    line_no: usize,
    obj: Map<String, Value>,
    at: &Locate<'_>,
) -> Result<Record, Box<SourceError>> {
    if let Some(key) = obj.keys().find(|k| !TRACE_KEYS.contains(&k.as_str())) {
        return Err(unknown_key(key, TRACE_KEYS, at));
    }
    let id = record_id(&obj, line_no, at)?;
    let mut case_value = Map::new();
    case_value.insert("id".to_string(), Value::String(id.clone()));
    for key in ["input", "expected", "metadata"] {
        if let Some(v) = obj.get(key) {
            case_value.insert(key.to_string(), v.clone());
        }
    }
    let case: Case = serde_path_to_error::deserialize(Value::Object(case_value)).map_err(|e| {
        let path = e.path().to_string();
        let top = path.split(['.', '[']).next().unwrap_or("").to_string();
        let mut err = at(&top, strip_position(&e.inner().to_string()));
        err.key_path = Some(path);
        Box::new(err)
    })?;
    let candidates = match obj.get("retrieval") {
        None | Some(Value::Null) => None,
        Some(Value::Object(r)) => {
            if let Some(key) = r
                .keys()
                .find(|k| !["query", "depth", "candidates"].contains(&k.as_str()))
            {
                return Err(unknown_key(key, &["query", "depth", "candidates"], at));
            }
            let candidates = passages(
                r.get("candidates").unwrap_or(&Value::Array(Vec::new())),
                "retrieval",
                at,
            )?;
            let depth = r
                .get("depth")
                .and_then(Value::as_u64)
                .map(|d| d as usize)
                .unwrap_or(candidates.len());
            let query = r.get("query").and_then(Value::as_str).map(str::to_string);
            Some(Retrieval {
                query,
                depth,
                candidates,
            })
        }
        Some(_) => {
            return Err(Box::new(at(
                "retrieval",
                "wrong type: `retrieval` must be `{query?, depth?, candidates}`".to_string(),
            )))
        }
    };
    let all: Vec<Passage> = candidates
        .as_ref()
        .map(|r| r.candidates.clone())
        .unwrap_or_default();
    let context = match obj.get("context") {
        None | Some(Value::Null) => candidates
            .as_ref()
            .map(|r| assemble(&r.candidates, r.candidates.len(), None)),
        Some(v) => Some(context_of(passages(v, "context", at)?, &all)),
    };
    let mut generation = Map::new();
    for key in ["answer", "citations"] {
        if let Some(v) = text_of(obj.get(key)) {
            generation.insert(key.to_string(), v);
        }
    }
    let mut trace = Trace::new(&id);
    trace.retrieval = candidates;
    trace.context = context;
    trace.generation = Some(generation);
    Ok(Record { case, trace })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_ids_follow_the_text() {
        assert_eq!(stable_id("a"), stable_id("a"));
        assert_ne!(stable_id("a"), stable_id("b"));
        assert_eq!(stable_id("abc"), "ctx-ba7816bf8f01");
    }

    #[test]
    fn ragas_records_become_cases_and_traces() {
        let text = r#"{"user_input":"q?","retrieved_contexts":["A","B"],"response":"r","reference":"ref","reference_contexts":["B"]}"#;
        let d = parse_dataset("d.jsonl", text, None).unwrap();
        assert_eq!(d.format, DatasetFormat::Ragas);
        assert!(d.warnings.is_empty());
        let r = &d.records[0];
        assert_eq!(r.case.id, "row-1");
        assert_eq!(r.case.input["question"], "q?");
        assert_eq!(r.case.expected.answer, Some(Value::from("ref")));
        let relevant = r.case.expected.relevant.as_ref().unwrap();
        assert_eq!(relevant[0].doc_id, stable_id("B"));
        assert_eq!(r.case.expected.gold_context.as_ref().unwrap()[0].text, "B");
        let retrieval = r.trace.retrieval.as_ref().unwrap();
        assert_eq!(retrieval.candidates[1].doc_id, stable_id("B"));
        assert_eq!(r.trace.context.as_ref().unwrap().passages.len(), 2);
        assert_eq!(r.trace.answer(), Some("r"));
    }

    #[test]
    fn legacy_names_are_read_with_one_warning() {
        let text = "{\"question\":\"q1\",\"contexts\":[\"A\"],\"answer\":\"a\",\"ground_truth\":\"g\"}\n\n{\"question\":\"q2\",\"answer\":\"b\"}\n{\"user_input\":\"q3\"}\n";
        let d = parse_dataset("old.jsonl", text, None).unwrap();
        assert_eq!(d.records.len(), 3);
        assert_eq!(d.records[0].trace.answer(), Some("a"));
        assert_eq!(d.records[0].case.expected.answer, Some(Value::from("g")));
        assert_eq!(d.records[1].case.id, "row-3");
        assert_eq!(d.warnings.len(), 1);
        assert!(d.warnings[0].contains("2 records use"), "{}", d.warnings[0]);
        assert!(d.warnings[0].contains(
            "question → user_input, contexts → retrieved_contexts, answer → response, ground_truth → reference"
        ));
    }

    #[test]
    fn unknown_key_is_located_with_a_suggestion() {
        let text = "{\"user_input\":\"q\"}\n{\"user_input\":\"q\",\"retrieved_context\":[]}\n";
        let errs = parse_dataset("d.jsonl", text, None).unwrap_err();
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].location(), "d.jsonl:2:19");
        assert_eq!(errs[0].message, "unknown key `retrieved_context`");
        assert_eq!(
            errs[0].help.as_deref(),
            Some("did you mean `retrieved_contexts`?")
        );
    }

    #[test]
    fn trace_records_keep_ids_and_fill_missing_ones() {
        let text = r#"{"id":"c1","input":{"question":"q"},"expected":{"answer":"x"},"retrieval":{"candidates":[{"doc_id":"d1","text":"T"},{"text":"U"}]},"context":[{"doc_id":"d1","text":"T"}],"answer":"x","citations":["d1"]}"#;
        let d = parse_dataset("t.jsonl", text, None).unwrap();
        assert_eq!(d.format, DatasetFormat::Trace);
        let t = &d.records[0].trace;
        assert_eq!(
            t.retrieval.as_ref().unwrap().candidates[1].doc_id,
            stable_id("U")
        );
        assert_eq!(t.context.as_ref().unwrap().passages[0].position, Some(1));
        assert_eq!(t.citations(), vec!["d1".to_string()]);
        let err =
            parse_dataset("t.jsonl", r#"{"id":"c","input":{},"answr":"x"}"#, None).unwrap_err();
        assert_eq!(err[0].help.as_deref(), Some("did you mean `answer`?"));
    }
}
