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
//!
//! Rubrex fields (seed 004). A trace record may add `behavior` (what the system did: `answer`,
//! `abstain` or `clarify`, kept as the output's `behavior`) and `claims` (human annotations:
//! `[{"claim", "supported_by": [passage ids]}]`, kept as [`Trace::claims`]); its passages may
//! carry `metadata.status` (`current` / `archived`) and `metadata.corpus_version`. A Ragas record
//! has no such fields, so it declares them inside its `metadata` object, under names Ragas
//! ignores: `expected_behavior` (→ `expected.behavior`), `behavior` (the system's),
//! `retrieved_contexts_metadata` and `reference_contexts_metadata` (one object per context, in
//! order: `status`, `corpus_version`, and `doc_id` to name the context instead of its hash) and
//! `claims`. Every word is checked (`expected.behavior`, `status`, `metadata.evidence_condition`)
//! with a located error and a suggestion.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
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
    "behavior",
    "claims",
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
    let sha256 = Sha256::digest(&bytes);
    let text =
        crate::source::decode_utf8(&shown, bytes).map_err(|e| CaseFileError::Invalid(vec![e]))?;
    let mut dataset = parse_dataset(&shown, &text, format).map_err(CaseFileError::Invalid)?;
    dataset.sha256 = sha256.iter().map(|b| format!("{b:02x}")).collect();
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

/// A located error for a Rubrex word outside its vocabulary (pointing at the value).
fn bad_word(bad: crate::case::BadWord, at: &Locate<'_>) -> SourceError {
    let field = bad.key_path.rsplit('.').next().unwrap_or(&bad.key_path);
    let field = field.split('[').next().unwrap_or(field).to_string();
    let mut err = at(&bad.value, format!("unknown {field} `{}`", bad.value));
    err.key_path = Some(bad.key_path.clone());
    err.expected = Some(format!("one of {}", bad.allowed.join(", ")));
    err.help = did_you_mean(&bad.value, bad.allowed.iter().copied())
        .map(|s| format!("did you mean `{s}`?"));
    err
}

/// Checks the Rubrex words of a trace record: the case part and every passage's status.
fn check_trace_words(
    obj: &Map<String, Value>,
    passages: &[(&str, &[Passage])],
    at: &Locate<'_>,
) -> Result<(), Box<SourceError>> {
    if let Some(bad) = crate::case::check_rubrex_words(obj) {
        return Err(Box::new(bad_word(bad, at)));
    }
    for (key, list) in passages {
        for (i, p) in list.iter().enumerate() {
            if let Some(bad) = crate::case::check_word(
                p.metadata.as_ref().and_then(|m| m.get("status")),
                &format!("{key}[{i}].metadata.status"),
                crate::passage::EVIDENCE_STATUSES,
            ) {
                return Err(Box::new(bad_word(bad, at)));
            }
        }
    }
    Ok(())
}

/// Reads `claims` (human claim annotations).
fn claims_of(
    value: Option<&Value>,
    key: &str,
    at: &Locate<'_>,
) -> Result<Option<Vec<crate::trace::ClaimAnnotation>>, Box<SourceError>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => serde_json::from_value(v.clone()).map(Some).map_err(|e| {
            let mut err = at(
                key,
                format!("invalid `claims`: {}", strip_position(&e.to_string())),
            );
            err.expected =
                Some("a list of {\"claim\": text, \"supported_by\": [passage ids]}".to_string());
            Box::new(err)
        }),
    }
}

/// Reads a Ragas `metadata.<key>` list of per-context objects, one per context.
fn context_metadata(
    metadata: &Map<String, Value>,
    key: &str,
    count: usize,
    at: &Locate<'_>,
) -> Result<Option<Vec<Map<String, Value>>>, Box<SourceError>> {
    match metadata.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) if items.len() == count => items
            .iter()
            .map(|v| match v {
                Value::Object(m) => Ok(m.clone()),
                Value::Null => Ok(Map::new()),
                _ => Err(Box::new(at(
                    key,
                    format!("wrong type: `metadata.{key}` must be a list of objects"),
                ))),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(Value::Array(items)) => {
            let mut err = at(
                key,
                format!(
                    "`metadata.{key}` has {} entries for {count} contexts",
                    items.len()
                ),
            );
            err.help = Some("give one object per context, in the same order".to_string());
            Err(Box::new(err))
        }
        Some(_) => Err(Box::new(at(
            key,
            format!("wrong type: `metadata.{key}` must be a list of objects"),
        ))),
    }
}

/// Applies one per-context metadata object to a passage (`doc_id` renames it).
fn apply_metadata(passage: &mut Passage, mut m: Map<String, Value>) {
    if let Some(Value::String(id)) = m.remove("doc_id") {
        passage.doc_id = id;
    }
    if !m.is_empty() {
        passage.metadata = Some(m);
    }
}

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
    let metadata = metadata_of(&obj, at)?;
    let mut candidates: Vec<Passage> = retrieved.iter().map(|t| text_passage(t)).collect();
    if let Some(list) = context_metadata(
        &metadata,
        "retrieved_contexts_metadata",
        candidates.len(),
        at,
    )? {
        for (p, m) in candidates.iter_mut().zip(list) {
            apply_metadata(p, m);
        }
    }
    let mut gold: Option<Vec<Passage>> = reference_contexts
        .as_ref()
        .map(|refs| refs.iter().map(|t| text_passage(t)).collect());
    if let Some(gold) = gold.as_mut() {
        if let Some(list) =
            context_metadata(&metadata, "reference_contexts_metadata", gold.len(), at)?
        {
            for (p, m) in gold.iter_mut().zip(list) {
                apply_metadata(p, m);
            }
        }
    }
    let expected_behavior = match metadata.get("expected_behavior") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let mut probe = Map::new();
            probe.insert("expected".into(), json!({"behavior": v}));
            if let Some(mut bad) = crate::case::check_rubrex_words(&probe) {
                bad.key_path = "metadata.expected_behavior".into();
                return Err(Box::new(bad_word(bad, at)));
            }
            v.as_str().and_then(crate::case::Behavior::parse)
        }
    };
    for (key, list) in [
        ("metadata.retrieved_contexts_metadata", Some(&candidates)),
        ("metadata.reference_contexts_metadata", gold.as_ref()),
    ] {
        for (i, p) in list.into_iter().flatten().enumerate() {
            if let Some(bad) = crate::case::check_word(
                p.metadata.as_ref().and_then(|m| m.get("status")),
                &format!("{key}[{i}].status"),
                crate::passage::EVIDENCE_STATUSES,
            ) {
                return Err(Box::new(bad_word(bad, at)));
            }
        }
    }
    if let Some(bad) = crate::case::check_word(
        metadata.get("behavior"),
        "metadata.behavior",
        crate::case::BEHAVIORS,
    )
    .or_else(|| {
        crate::case::check_word(
            metadata.get("evidence_condition"),
            "metadata.evidence_condition",
            crate::case::EVIDENCE_CONDITIONS,
        )
    }) {
        return Err(Box::new(bad_word(bad, at)));
    }
    let claims = claims_of(metadata.get("claims"), "metadata", at)?;
    let mut input = Map::new();
    input.insert("question".to_string(), Value::String(question));
    let case = Case {
        id: id.clone(),
        input,
        expected: Expected {
            answer: text_of(obj.get("reference")),
            relevant: gold.as_ref().map(|refs| {
                refs.iter()
                    .map(|p| RelevantPassage {
                        doc_id: p.doc_id.clone(),
                        chunk_id: None,
                        grade: 1.0,
                        metadata: p.metadata.clone(),
                    })
                    .collect()
            }),
            gold_context: gold.as_ref().map(|refs| {
                refs.iter()
                    .map(|p| GoldPassage {
                        doc_id: p.doc_id.clone(),
                        chunk_id: None,
                        text: p.text.clone().unwrap_or_default(),
                        metadata: p.metadata.clone(),
                    })
                    .collect()
            }),
            behavior: expected_behavior,
            extra: Map::new(),
        },
        metadata: metadata.clone(),
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
    if let Some(b) = text_of(metadata.get("behavior")) {
        generation.insert("behavior".to_string(), b);
    }
    trace.generation = Some(generation);
    trace.claims = claims;
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
    if let Some(bad) = crate::case::check_rubrex_words(&obj) {
        return Err(Box::new(bad_word(bad, at)));
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
    for key in ["answer", "citations", "behavior"] {
        if let Some(v) = text_of(obj.get(key)) {
            generation.insert(key.to_string(), v);
        }
    }
    if let Some(bad) =
        crate::case::check_word(obj.get("behavior"), "behavior", crate::case::BEHAVIORS)
    {
        return Err(Box::new(bad_word(bad, at)));
    }
    let claims = claims_of(obj.get("claims"), "claims", at)?;
    check_trace_words(
        &obj,
        &[
            ("retrieval.candidates", &all),
            (
                "context",
                &context
                    .as_ref()
                    .map(|c| {
                        c.passages
                            .iter()
                            .map(|p| p.passage.clone())
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default(),
            ),
        ],
        at,
    )?;
    let mut trace = Trace::new(&id);
    trace.retrieval = candidates;
    trace.context = context;
    trace.generation = Some(generation);
    trace.claims = claims;
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
    fn ragas_metadata_carries_the_rubrex_fields() {
        let text = r#"{"user_input":"q","retrieved_contexts":["A","B"],"response":"r","reference_contexts":["A"],"metadata":{"expected_behavior":"answer","behavior":"answer","retrieved_contexts_metadata":[{"doc_id":"refund-old","status":"archived"},{}],"reference_contexts_metadata":[{"status":"current"}],"claims":[{"claim":"c","supported_by":["refund-old"]}],"evidence_condition":"contradictory"}}"#;
        let d = parse_dataset("d.jsonl", text, None).unwrap();
        let r = &d.records[0];
        assert_eq!(
            r.case.expected.behavior,
            Some(crate::case::Behavior::Answer)
        );
        let c = &r.trace.retrieval.as_ref().unwrap().candidates;
        assert_eq!(c[0].doc_id, "refund-old");
        assert_eq!(c[0].status(), Ok(crate::passage::EvidenceStatus::Archived));
        assert_eq!(c[1].doc_id, stable_id("B"));
        assert_eq!(
            r.trace.declared_behavior(),
            Ok(Some(crate::case::Behavior::Answer))
        );
        assert_eq!(
            r.trace.claims.as_ref().unwrap()[0].supported_by,
            ["refund-old"]
        );
        let short = r#"{"user_input":"q","retrieved_contexts":["A","B"],"metadata":{"retrieved_contexts_metadata":[{}]}}"#;
        let errs = parse_dataset("d.jsonl", short, None).unwrap_err();
        assert!(
            errs[0].message.contains("has 1 entries for 2 contexts"),
            "{}",
            errs[0].message
        );
        let typo = r#"{"user_input":"q","metadata":{"expected_behavior":"clarfy"}}"#;
        let errs = parse_dataset("d.jsonl", typo, None).unwrap_err();
        assert_eq!(errs[0].help.as_deref(), Some("did you mean `clarify`?"));
        assert_eq!(errs[0].location(), "d.jsonl:1:51");
    }

    #[test]
    fn trace_records_carry_behavior_claims_and_checked_statuses() {
        let text = r#"{"id":"c","input":{},"expected":{"behavior":"abstain"},"retrieval":{"candidates":[{"doc_id":"d","metadata":{"status":"archived"}}]},"answer":"no idea","behavior":"abstain","claims":[]}"#;
        let d = parse_dataset("t.jsonl", text, None).unwrap();
        let t = &d.records[0].trace;
        assert_eq!(
            t.declared_behavior(),
            Ok(Some(crate::case::Behavior::Abstain))
        );
        assert_eq!(t.claims, Some(Vec::new()));
        let bad = text.replace(r#""status":"archived""#, r#""status":"stale""#);
        let errs = parse_dataset("t.jsonl", &bad, None).unwrap_err();
        assert_eq!(
            errs[0].key_path.as_deref(),
            Some("retrieval.candidates[0].metadata.status")
        );
        let bad = text.replace(r#""claims":[]"#, r#""claims":[{"text":"x"}]"#);
        let errs = parse_dataset("t.jsonl", &bad, None).unwrap_err();
        assert!(
            errs[0].message.starts_with("invalid `claims`"),
            "{}",
            errs[0].message
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
