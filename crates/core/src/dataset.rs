//! Recorded cases: JSONL records that already contain what the system did.
//!
//! Two formats, detected from the first record (or named with `--dataset-format`):
//! - **Ragas** `EvaluationDataset` JSONL: `user_input`, `retrieved_contexts` (strings),
//!   `response`, `reference`, optional `reference_contexts`, `id` and `metadata`. The pre-0.2
//!   names `question`, `contexts`, `answer`, `ground_truth` are read as the new ones and reported
//!   in one warning ([`Dataset::warnings`]) — never dropped silently.
//! - **trace**: an Oloproof case (`id`, `input`, `expected`, `metadata`) plus `retrieval`
//!   (`{query?, depth?, candidates, filters?, hops?, usage?, lane?}`: the final candidates,
//!   the metadata predicates applied, the hops of an iterative retrieval), `context` (passages
//!   given to the generator), `answer` and `citations`; and, for a pipeline, the generation's
//!   `usage` (`{model, input_tokens, output_tokens}`) and `ttft_ms`, `pipeline` (the trace's
//!   [`crate::pipeline::Pipeline`] as stored: `question`, `rewrite`, every lane `retrievals`,
//!   `lanes`, `fused`, `pre_rerank`, `rerank_usage`, `raw_query`) and `latency_ms` (per stage:
//!   `rewrite`, `retrieve`, `fuse`, `rerank`, `count_tokens`, `generate`, and `total`: the whole
//!   request as production timed it). Imported or collected traffic adds `production`
//!   ([`crate::production::Production`]: trace id, timestamp, source, feedback, the fields the
//!   source did not carry, the first error). [`trace_record_of`] writes one (`oloproof export
//!   --format trace`), so recorded traffic brings every stage.
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

pub mod list_repr;
mod nonfinite;
mod tabular;

use tabular::SourceRow;

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
    /// How the file was written.
    pub encoding: DatasetEncoding,
    /// Messages for the user (legacy Ragas names, unknown keys kept as metadata, skipped
    /// rows), printed by the CLI.
    pub warnings: Vec<String>,
    /// Rows not loaded (a broken list cell, a malformed line), within
    /// [`ReadOptions::max_error_rate`]; printed by the CLI after the warnings.
    pub skipped: Vec<SourceError>,
    /// Rows in the file (loaded and skipped).
    pub rows: usize,
    /// Columns read as Ragas' own scores of each sample (`faithfulness`, …): each record's
    /// values are in its case's `metadata.external_scores` ([`crate::external`]).
    pub external_scores: Vec<String>,
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
/// Pre-0.2 Ragas names and their 0.2 names (`ground_truths`, a list, is the Hugging Face
/// amnesty_qa layout: its one string is the reference; several are acceptable references).
pub const RAGAS_LEGACY: &[(&str, &str)] = &[
    ("question", "user_input"),
    ("contexts", "retrieved_contexts"),
    ("answer", "response"),
    ("ground_truth", "reference"),
    ("ground_truths", "reference"),
];
/// Other fields of Ragas samples and exports, kept in the case's metadata without a warning
/// (`retrieved_context_ids` / `reference_context_ids` of the same length as the contexts also
/// name them).
pub const RAGAS_EXTRA: &[&str] = &[
    "sample_type",
    "retrieved_context_ids",
    "reference_context_ids",
    "multi_responses",
    "rubrics",
    "persona_name",
    "query_style",
    "query_length",
    "synthesizer_name",
    "reference_tool_calls",
    "reference_topics",
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
    "usage",
    "ttft_ms",
    "pipeline",
    "latency_ms",
    "production",
];

/// Keys of a trace record's `retrieval` (the fields of [`Retrieval`]).
pub const TRACE_RETRIEVAL_KEYS: &[&str] = &[
    "query",
    "depth",
    "candidates",
    "filters",
    "hops",
    "usage",
    "lane",
];

/// How a dataset file is written (`--dataset-format jsonl|json|hf-json|csv|parquet`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DatasetEncoding {
    /// One JSON object per line (Ragas `EvaluationDataset.to_jsonl`, pandas `lines=True`).
    Jsonl,
    /// One JSON document: pandas `to_json` (orients `records`, `columns`, `index`, `split`,
    /// `table`) or Hugging Face columnar JSON (`{"question": [...], ...}`).
    Json,
    /// pandas `to_csv` (list columns as numpy or Python reprs, a leading index column).
    Csv,
    /// Parquet (Hugging Face datasets, pandas `to_parquet`).
    Parquet,
}

impl DatasetEncoding {
    /// `jsonl`, `json`, `csv` or `parquet`.
    pub fn name(self) -> &'static str {
        match self {
            DatasetEncoding::Jsonl => "jsonl",
            DatasetEncoding::Json => "json",
            DatasetEncoding::Csv => "csv",
            DatasetEncoding::Parquet => "parquet",
        }
    }

    /// The encoding of `path` from its extension, else its first bytes: `PAR1` is Parquet, a
    /// document that is one JSON array, or one object of columns or rows, is JSON, other text
    /// starting with `{` is JSONL, anything else CSV.
    pub fn detect(path: &std::path::Path, bytes: &[u8]) -> DatasetEncoding {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        match ext.as_deref() {
            Some("csv" | "tsv") => return DatasetEncoding::Csv,
            Some("parquet" | "pq") => return DatasetEncoding::Parquet,
            Some("jsonl" | "ndjson") => return DatasetEncoding::Jsonl,
            _ => {}
        }
        if bytes.starts_with(b"PAR1") {
            return DatasetEncoding::Parquet;
        }
        let text = String::from_utf8_lossy(bytes);
        let trimmed = text.trim_start();
        if trimmed.starts_with('[') {
            return DatasetEncoding::Json;
        }
        if trimmed.starts_with('{') {
            let whole = serde_json::from_str::<Map<String, Value>>(&nonfinite::replace(&text).text);
            return match whole {
                Ok(m)
                    if !m.is_empty()
                        && (m.values().all(Value::is_array)
                            || m.values().all(Value::is_object)) =>
                {
                    DatasetEncoding::Json
                }
                _ => DatasetEncoding::Jsonl,
            };
        }
        if ext.as_deref() == Some("json") {
            return DatasetEncoding::Json;
        }
        DatasetEncoding::Csv
    }
}

/// How to read a dataset file.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ReadOptions {
    /// The record format (default: detected from the first record; every file that is not
    /// JSONL holds Ragas samples).
    pub format: Option<DatasetFormat>,
    /// The file's encoding (default: [`DatasetEncoding::detect`]).
    pub encoding: Option<DatasetEncoding>,
    /// Largest share of rows that may be broken (a bad list cell, a malformed line): those rows
    /// are skipped and reported ([`Dataset::skipped`]); above it reading fails with every error.
    pub max_error_rate: f64,
}

/// Reads and parses a dataset file (every row must be valid; see [`load_dataset_with`]).
pub fn load_dataset(
    path: &std::path::Path,
    format: Option<DatasetFormat>,
) -> Result<Dataset, CaseFileError> {
    load_dataset_with(
        path,
        &ReadOptions {
            format,
            ..ReadOptions::default()
        },
    )
}

/// Reads and parses a dataset file in any [`DatasetEncoding`].
pub fn load_dataset_with(
    path: &std::path::Path,
    options: &ReadOptions,
) -> Result<Dataset, CaseFileError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| CaseFileError::Read {
        path: shown.clone(),
        source,
    })?;
    let sha256: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let encoding = options
        .encoding
        .unwrap_or_else(|| DatasetEncoding::detect(path, &bytes));
    let mut dataset = if encoding == DatasetEncoding::Parquet {
        let rows = tabular::parquet_rows(&shown, bytes).map_err(CaseFileError::Invalid)?;
        read_rows(&shown, "", rows, Vec::new(), encoding, options)
    } else {
        let text = crate::source::decode_utf8(&shown, bytes)
            .map_err(|e| CaseFileError::Invalid(vec![e]))?;
        parse_text(&shown, &text, encoding, options)
    }
    .map_err(CaseFileError::Invalid)?;
    dataset.sha256 = sha256;
    Ok(dataset)
}

/// Parses JSONL `text` (named `path` in messages); every record must be valid.
pub fn parse_dataset(
    path: &str,
    text: &str,
    format: Option<DatasetFormat>,
) -> Result<Dataset, Vec<SourceError>> {
    parse_text(
        path,
        text,
        DatasetEncoding::Jsonl,
        &ReadOptions {
            format,
            ..ReadOptions::default()
        },
    )
}

/// Parses `text` in `encoding` (not Parquet, which is bytes).
pub fn parse_text(
    path: &str,
    text: &str,
    encoding: DatasetEncoding,
    options: &ReadOptions,
) -> Result<Dataset, Vec<SourceError>> {
    let (rows, broken) = match encoding {
        DatasetEncoding::Jsonl => jsonl_rows(path, text, options.format),
        DatasetEncoding::Json => (tabular::json_rows(path, text)?, Vec::new()),
        DatasetEncoding::Csv => (tabular::csv_rows(path, text)?, Vec::new()),
        DatasetEncoding::Parquet => {
            return Err(vec![SourceError::at(
                path,
                text,
                1,
                1,
                1,
                "a Parquet file is binary: read it with load_dataset_with",
            )])
        }
    };
    read_rows(path, text, rows, broken, encoding, options)
}

/// The records of a JSONL text, and its malformed lines. `format` is the one asked for, if
/// any. Once the records are known to be trace records (asked for, or the first one says so),
/// each later line is only checked and its record left `deferred`: it is parsed when it is
/// converted ([`read_rows`]), so a large trace file is never held as `Value` trees whole.
fn jsonl_rows(
    path: &str,
    text: &str,
    format: Option<DatasetFormat>,
) -> (Vec<SourceRow>, Vec<SourceError>) {
    let mut errors = Vec::new();
    let mut rows: Vec<SourceRow> = Vec::new();
    let mut defer = format == Some(DatasetFormat::Trace);
    for (idx, line) in text.lines().enumerate() {
        let line_no = idx + 1;
        if line.trim().is_empty() {
            continue;
        }
        let row = |obj, deferred| SourceRow {
            obj,
            line: line_no,
            col: first_col(line),
            places: Default::default(),
            number: rows.len() + 1,
            cells: Vec::new(),
            deferred,
        };
        if defer && looks_like_an_object(line) {
            rows.push(row(Map::new(), true));
            continue;
        }
        match jsonl_object(path, line_no, line) {
            Ok(obj) => {
                if rows.is_empty() && format.is_none() {
                    defer = is_trace_record(&obj);
                }
                rows.push(row(obj, false));
            }
            Err(err) => errors.push(*err),
        }
    }
    (rows, errors)
}

/// Whether `line` is one JSON object and nothing else, checked without building it (what
/// serde_json accepts when it skips a value: a line it passes may still fail to parse, which
/// [`jsonl_object`] then reports, located, when the record is converted). A line with
/// Python's `NaN` or `Infinity` fails here and is read at once by [`jsonl_object`].
fn looks_like_an_object(line: &str) -> bool {
    if !line.trim_start().starts_with('{') {
        return false;
    }
    let mut de = serde_json::Deserializer::from_str(line);
    serde::de::IgnoredAny::deserialize(&mut de).is_ok() && de.end().is_ok()
}

/// The object of one JSON Lines record (`line`, line `line_no` of file `path`), or its
/// located error.
fn jsonl_object(
    path: &str,
    line_no: usize,
    line: &str,
) -> Result<Map<String, Value>, Box<SourceError>> {
    // Python's `NaN` / `Infinity` (Ragas' experiment backend writes them): absent values.
    let rewritten = nonfinite::replace(line);
    match serde_json::from_str::<Value>(&rewritten.text) {
        Ok(Value::Object(obj)) => Ok(obj),
        Ok(_) => Err(Box::new(SourceError::at_line(
            path,
            line,
            line_no,
            first_col(line),
            1,
            "a record must be a JSON object",
        ))),
        Err(e) => {
            // serde_json's column counts bytes from 1; ours counts characters.
            let byte = rewritten.original_offset(e.column().saturating_sub(1));
            let col = line
                .get(..byte.min(line.len()))
                .map_or(e.column(), |before| before.chars().count() + 1);
            let mut err = SourceError::at_line(
                path,
                line,
                line_no,
                col.max(1),
                1,
                format!("malformed JSON: {}", strip_position(&e.to_string())),
            );
            err.help = Some("each line must be one complete JSON object".to_string());
            Err(Box::new(err))
        }
    }
}

/// Whether a record is a trace record (the format detection of [`read_rows`]).
fn is_trace_record(obj: &Map<String, Value>) -> bool {
    obj.contains_key("input") || obj.contains_key("retrieval")
}

/// Reads rows into records: format detection, Ragas score columns, CSV cells, one warning
/// for legacy names and one for unknown keys, broken rows up to the error rate.
fn read_rows(
    path: &str,
    text: &str,
    mut rows: Vec<SourceRow>,
    mut broken: Vec<SourceError>,
    encoding: DatasetEncoding,
    options: &ReadOptions,
) -> Result<Dataset, Vec<SourceError>> {
    let jsonl = encoding == DatasetEncoding::Jsonl;
    // Every line's text, by line number - 1, read once: records and the located errors below
    // look their line up here (`lines().nth` would read the file from its start each time).
    let line_texts: Vec<&str> = text.lines().collect();
    let line_text = |line: usize| -> &str {
        line.checked_sub(1)
            .and_then(|i| line_texts.get(i))
            .copied()
            .unwrap_or("")
    };
    let located = |line: usize, col: usize, width: usize, message: String| -> SourceError {
        match line.checked_sub(1).and_then(|i| line_texts.get(i)) {
            Some(src) => SourceError::at_line(path, src, line, col, width, message),
            None => SourceError::at(path, text, line, col, width, message),
        }
    };
    let total_rows = rows.len() + broken.len();
    let format = match options.format {
        Some(f) => f,
        None if !jsonl => DatasetFormat::Ragas,
        None => match rows.first() {
            Some(r) if is_trace_record(&r.obj) => DatasetFormat::Trace,
            Some(r) if r.obj.contains_key("user_input") || r.obj.contains_key("question") => {
                DatasetFormat::Ragas
            }
            Some(r) => {
                let line = line_text(r.line);
                let mut err = located(
                    r.line,
                    first_col(line),
                    1,
                    "cannot tell the dataset format from the first record".to_string(),
                );
                err.expected = Some(
                    "a Ragas record (`user_input`, …) or a trace record (`input`, …)".to_string(),
                );
                err.help = Some("name it with --dataset-format ragas|trace".to_string());
                broken.push(err);
                return Err(broken);
            }
            None => DatasetFormat::Ragas,
        },
    };
    let scores = if format == DatasetFormat::Ragas {
        score_columns(&rows)
    } else {
        Vec::new()
    };
    // Multi-turn samples are recognised and refused, whatever the error rate.
    let mut fatal = Vec::new();
    for row in &rows {
        let multi_turn = match row.obj.get("user_input") {
            Some(Value::Array(_)) => true,
            _ => row.cells.iter().any(|(k, c)| {
                k == "user_input" && {
                    let t = c.trim_start();
                    t.starts_with('[') && t[1..].trim_start().starts_with('{')
                }
            }),
        };
        if multi_turn && format == DatasetFormat::Ragas {
            let (line, col) = row.place("user_input");
            let mut err = located(
                line,
                if jsonl { key_column(line_text(line), "user_input") } else { col },
                1,
                "multi-turn sample (`user_input` is a list of messages): multi-turn evaluation is not supported"
                    .to_string(),
            );
            err.key_path = Some("user_input".into());
            err.help = Some(
                "evaluate single-turn samples (`user_input` a string); keep multi-turn conversations in another file"
                    .into(),
            );
            fatal.push(err);
        }
    }
    if !fatal.is_empty() {
        return Err(fatal);
    }
    // At most one record a row: no buffer of records grown by doubling (a trace file's
    // records are ~2 KB each, and the doubling held one and a half times them at its peak).
    let mut records = Vec::with_capacity(rows.len());
    let mut lines = Vec::with_capacity(rows.len());
    let mut legacy_used: Vec<&str> = Vec::new();
    let mut legacy_records = 0usize;
    let mut unknown: Vec<String> = Vec::new();
    let mut unknown_records = 0usize;
    for row in &mut rows {
        let line_text = line_text(row.line);
        let (line_no, row_col) = (row.line, row.col);
        let places = row.places.clone();
        let at = |key: &str, message: String| {
            let (line, col, width) = if jsonl {
                (line_no, key_column(line_text, key), key.chars().count() + 2)
            } else {
                let (l, c) = places.get(key).copied().unwrap_or((line_no, row_col));
                (l, c, 1)
            };
            let mut err = located(line, col, width, message);
            err.key_path = Some(key.to_string());
            err
        };
        if !row.cells.is_empty() {
            if let Err(err) = decode_cells(row, &scores, &at) {
                broken.push(*err);
                continue;
            }
        }
        let default_id = if jsonl || encoding == DatasetEncoding::Csv {
            format!("row-{line_no}")
        } else {
            format!("row-{}", row.number)
        };
        let obj = match row.deferred {
            true => match jsonl_object(path, line_no, line_text) {
                Ok(obj) => obj,
                Err(err) => {
                    broken.push(*err);
                    continue;
                }
            },
            false => std::mem::take(&mut row.obj),
        };
        let result = match format {
            DatasetFormat::Ragas => {
                ragas_record(&default_id, obj, &at, &scores).map(|(record, legacy, extra)| {
                    if !legacy.is_empty() {
                        legacy_records += 1;
                        for old in legacy {
                            if !legacy_used.contains(&old) {
                                legacy_used.push(old);
                            }
                        }
                    }
                    if !extra.is_empty() {
                        unknown_records += 1;
                        for k in extra {
                            if !unknown.contains(&k) {
                                unknown.push(k);
                            }
                        }
                    }
                    record
                })
            }
            DatasetFormat::Trace => trace_record(line_no, obj, &at),
        };
        match result {
            Ok(record) => {
                records.push(record);
                lines.push((line_no, row_col));
            }
            Err(err) => broken.push(*err),
        }
    }
    let mut errors = Vec::new();
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (r, &(line_no, col)) in records.iter().zip(&lines) {
        if let Some(first) = seen.insert(r.case.id.as_str(), line_no) {
            let line = line_text(line_no);
            let mut err = located(
                line_no,
                if jsonl { key_column(line, "id") } else { col },
                4,
                format!("duplicate id `{}`", r.case.id),
            );
            err.key_path = Some("id".to_string());
            err.help = Some(format!("ids must be unique; the first is on line {first}"));
            errors.push(err);
        }
    }
    let broken_share = if total_rows == 0 {
        0.0
    } else {
        broken.len() as f64 / total_rows as f64
    };
    if !broken.is_empty() && broken_share > options.max_error_rate {
        let mut all = broken;
        all.extend(errors);
        return Err(all);
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
    if !unknown.is_empty() {
        let mut known: Vec<&str> = RAGAS_KEYS.to_vec();
        known.extend(RAGAS_EXTRA);
        let listed: Vec<String> = unknown
            .iter()
            .map(|k| match did_you_mean(k, known.iter().copied()) {
                Some(s) => format!("`{k}` (did you mean `{s}`?)"),
                None => format!("`{k}`"),
            })
            .collect();
        warnings.push(format!(
            "{path}: {} unknown key{} on {unknown_records} record{} kept as case metadata: {}",
            unknown.len(),
            if unknown.len() == 1 { "" } else { "s" },
            if unknown_records == 1 { "" } else { "s" },
            listed.join(", ")
        ));
    }
    if !broken.is_empty() {
        warnings.push(format!(
            "{path}: skipped {} of {total_rows} rows ({:.1}%, within the allowed {:.1}% of --max-error-rate); the errors follow",
            broken.len(),
            broken_share * 100.0,
            options.max_error_rate * 100.0
        ));
    }
    Ok(Dataset {
        records,
        format,
        encoding,
        sha256: Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
        warnings,
        skipped: broken,
        rows: total_rows,
        external_scores: scores,
    })
}

/// Keys of a Ragas sample that are no score column.
fn is_sample_key(key: &str) -> bool {
    RAGAS_KEYS.contains(&key)
        || RAGAS_EXTRA.contains(&key)
        || RAGAS_LEGACY.iter().any(|(o, _)| *o == key)
        || tabular::is_index_column(key)
}

/// The keys that hold Ragas scores: not a sample field, every value a number or absent, and
/// at least one number (or a known Ragas metric name).
fn score_columns(rows: &[SourceRow]) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for r in rows {
        for k in r.obj.keys().chain(r.cells.iter().map(|(k, _)| k)) {
            if !is_sample_key(k) && !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    keys.retain(|k| {
        let mut numbers = 0usize;
        for r in rows {
            if let Some(v) = r.obj.get(k) {
                match v {
                    Value::Number(_) => numbers += 1,
                    Value::Null => {}
                    Value::String(s) if tabular::is_absent(s) => {}
                    _ => return false,
                }
            }
            if let Some((_, c)) = r.cells.iter().find(|(name, _)| name == k) {
                if tabular::number(c).is_some() {
                    numbers += 1;
                } else if !tabular::is_absent(c) && !matches!(c.trim(), "inf" | "-inf") {
                    return false;
                }
            }
        }
        numbers > 0 || crate::external::is_ragas_metric(k)
    });
    keys
}

/// Ragas sample fields that are lists of strings.
const LIST_FIELDS: &[&str] = &[
    "retrieved_contexts",
    "reference_contexts",
    "contexts",
    "ground_truths",
    "retrieved_context_ids",
    "reference_context_ids",
    "multi_responses",
    "reference_topics",
];

/// Turns a CSV row's cells into JSON values: list columns parsed ([`list_repr`]), score
/// columns as numbers, absent cells as null, `metadata` as a JSON object.
fn decode_cells(
    row: &mut SourceRow,
    scores: &[String],
    at: &Locate<'_>,
) -> Result<(), Box<SourceError>> {
    for (key, cell) in std::mem::take(&mut row.cells) {
        let value = if LIST_FIELDS.contains(&key.as_str()) {
            match list_repr::parse_list(&cell) {
                Ok(Some(items)) => Value::Array(items.into_iter().map(Value::String).collect()),
                Ok(None) => Value::Null,
                Err(e) => {
                    let mut err = at(&key, format!("column `{key}`: broken list: {e}"));
                    err.expected = Some(
                        "a list of quoted strings: numpy `['a' 'b']`, Python `['a', 'b']` or JSON `[\"a\", \"b\"]`"
                            .into(),
                    );
                    err.help = Some(
                        "fix or remove this row; the other rows load up to --max-error-rate".into(),
                    );
                    return Err(Box::new(err));
                }
            }
        } else if scores.contains(&key) {
            tabular::number(&cell)
                .and_then(serde_json::Number::from_f64)
                .map_or(Value::Null, Value::Number)
        } else if key == "metadata" && !tabular::is_absent(&cell) {
            match serde_json::from_str::<Value>(&cell) {
                Ok(v @ Value::Object(_)) => v,
                _ => {
                    return Err(Box::new(at(
                        &key,
                        "column `metadata`: not a JSON object".to_string(),
                    )))
                }
            }
        } else if tabular::is_absent(&cell) && key != "id" {
            Value::Null
        } else {
            Value::String(cell)
        };
        row.obj.insert(key, value);
    }
    Ok(())
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

/// A Ragas record, the legacy names it used and the unknown keys it kept as metadata.
type RagasRead = (Record, Vec<&'static str>, Vec<String>);

/// A Ragas record; also returns the legacy names it used and the unknown keys it kept as
/// metadata. `scores` are the file's score columns (to `metadata.external_scores`).
fn ragas_record(
    default_id: &str,
    mut obj: Map<String, Value>,
    at: &Locate<'_>,
    scores: &[String],
) -> Result<RagasRead, Box<SourceError>> {
    let mut legacy = Vec::new();
    let mut external = Map::new();
    for key in scores {
        if let Some(v) = obj.shift_remove(key) {
            let v = match v {
                Value::Number(n) => Value::Number(n),
                _ => Value::Null,
            };
            external.insert(key.clone(), v);
        }
    }
    let mut extra = Map::new();
    let mut unknown = Vec::new();
    let keys: Vec<String> = obj.keys().cloned().collect();
    for key in keys {
        if RAGAS_EXTRA.contains(&key.as_str()) {
            if let Some(v) = obj.shift_remove(&key) {
                if !v.is_null() {
                    extra.insert(key, v);
                }
            }
        } else if !is_sample_key(&key) {
            // An absent value (an empty CSV cell, null) of an unknown column says nothing.
            if let Some(v) = obj.shift_remove(&key).filter(|v| !v.is_null()) {
                extra.insert(key.clone(), v);
                unknown.push(key);
            }
        }
    }
    if let Some(v) = obj.shift_remove("ground_truths") {
        // One reference, or several acceptable ones.
        let v = match v {
            Value::Array(mut items) if items.len() == 1 => items.remove(0),
            other => other,
        };
        obj.insert("ground_truths".into(), v);
    }
    for (old, new) in RAGAS_LEGACY {
        if let Some(v) = obj.shift_remove(*old) {
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
    let id = match obj.get("id") {
        None | Some(Value::Null) => default_id.to_string(),
        _ => record_id(&obj, 0, at)?,
    };
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
    let mut metadata = metadata_of(&obj, at)?;
    let mut candidates: Vec<Passage> = retrieved.iter().map(|t| text_passage(t)).collect();
    name_by_ids(&mut candidates, extra.get("retrieved_context_ids"));
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
    let mut gold: Option<Vec<Passage>> = reference_contexts.as_ref().map(|refs| {
        let mut gold: Vec<Passage> = refs.iter().map(|t| text_passage(t)).collect();
        name_by_ids(&mut gold, extra.get("reference_context_ids"));
        gold
    });
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
    for (k, v) in extra {
        metadata.entry(k).or_insert(v);
    }
    if !external.is_empty() {
        metadata.insert(
            crate::external::METADATA_KEY.into(),
            Value::Object(external),
        );
    }
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
    trace.retrieval = Some(Retrieval::new(None, candidates.len(), candidates));
    let mut generation = Map::new();
    if let Some(answer) = text_of(obj.get("response")) {
        generation.insert("answer".to_string(), answer);
    }
    if let Some(b) = text_of(metadata.get("behavior")) {
        generation.insert("behavior".to_string(), b);
    }
    trace.generation = Some(generation);
    trace.claims = claims;
    Ok((Record { case, trace }, legacy, unknown))
}

/// Names passages by Ragas' `*_context_ids` when there is one id per passage.
fn name_by_ids(passages: &mut [Passage], ids: Option<&Value>) {
    let Some(Value::Array(ids)) = ids else {
        return;
    };
    if ids.len() != passages.len() {
        return;
    }
    for (p, id) in passages.iter_mut().zip(ids) {
        match id {
            Value::String(s) if !s.is_empty() => p.doc_id = s.clone(),
            Value::Number(n) => p.doc_id = n.to_string(),
            _ => {}
        }
    }
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
                .find(|k| !TRACE_RETRIEVAL_KEYS.contains(&k.as_str()))
            {
                return Err(unknown_key(key, TRACE_RETRIEVAL_KEYS, at));
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
            let mut retrieval = Retrieval::new(query, depth, candidates);
            if let Some(v) = r.get("filters").filter(|v| !v.is_null()) {
                retrieval.filters = typed(v, "retrieval.filters", at)?;
                check_filters(&retrieval.filters, "retrieval.filters", at)?;
            }
            if let Some(v) = r.get("hops").filter(|v| !v.is_null()) {
                retrieval.hops = typed(v, "retrieval.hops", at)?;
                for (i, hop) in retrieval.hops.iter().enumerate() {
                    check_filters(&hop.filters, &format!("retrieval.hops[{i}].filters"), at)?;
                }
            }
            if let Some(v) = r.get("usage").filter(|v| !v.is_null()) {
                retrieval.usage = Some(typed(v, "retrieval.usage", at)?);
            }
            if let Some(v) = r.get("lane").filter(|v| !v.is_null()) {
                retrieval.lane = Some(typed(v, "retrieval.lane", at)?);
            }
            Some(retrieval)
        }
        Some(_) => {
            return Err(Box::new(at(
                "retrieval",
                "wrong type: `retrieval` must be `{query?, depth?, candidates, filters?, hops?, usage?, lane?}`".to_string(),
            )))
        }
    };
    let pipeline: Option<crate::pipeline::Pipeline> = match obj.get("pipeline") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let p: crate::pipeline::Pipeline = typed(v, "pipeline", at)?;
            for (i, r) in p.retrievals.iter().enumerate() {
                let path = format!("pipeline.retrievals[{i}].retrieval");
                check_filters(&r.retrieval.filters, &format!("{path}.filters"), at)?;
                for (j, hop) in r.retrieval.hops.iter().enumerate() {
                    check_filters(&hop.filters, &format!("{path}.hops[{j}].filters"), at)?;
                }
            }
            Some(p)
        }
    };
    let latency: crate::trace::StageLatency = match obj.get("latency_ms") {
        None | Some(Value::Null) => Default::default(),
        Some(v) => {
            let l: crate::trace::StageLatency = typed(v, "latency_ms", at)?;
            if let Some((stage, ms)) = l
                .stages()
                .into_iter()
                .chain(l.total.map(|ms| ("total", ms)))
                .find(|(_, ms)| !ms.is_finite() || *ms < 0.0)
            {
                let mut err = at(
                    stage,
                    format!("`latency_ms.{stage}` must be a number of milliseconds ≥ 0, got {ms}"),
                );
                err.key_path = Some(format!("latency_ms.{stage}"));
                return Err(Box::new(err));
            }
            l
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
    if let Some(v) = obj.get("usage").filter(|v| !v.is_null()) {
        // Checked as a `Usage`, kept as written (a reply's other usage keys are kept too).
        let _: crate::pipeline::Usage = typed(v, "usage", at)?;
        generation.insert("usage".to_string(), v.clone());
    }
    if let Some(v) = obj.get("ttft_ms").filter(|v| !v.is_null()) {
        match v.as_f64() {
            Some(ms) if ms >= 0.0 => {
                generation.insert("ttft_ms".to_string(), v.clone());
            }
            _ => {
                return Err(Box::new(at(
                    "ttft_ms",
                    format!("`ttft_ms` must be a number of milliseconds ≥ 0, got {v}"),
                )))
            }
        }
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
    let production: Option<crate::production::Production> = match obj.get("production") {
        None | Some(Value::Null) => None,
        Some(v) => Some(typed(v, "production", at)?),
    };
    let mut trace = Trace::new(&id);
    trace.production = production.map(Box::new);
    trace.retrieval = candidates;
    trace.pipeline = pipeline.map(Box::new);
    trace.context = context;
    trace.generation = Some(generation);
    trace.latency_ms = latency;
    trace.claims = claims;
    Ok(Record { case, trace })
}

/// Deserialises one field of a trace record into its trace type, refusing keys the type does
/// not have (what [`unknown_keys`] finds); errors name the key path (`pipeline.fused.method`)
/// and point at its innermost key.
fn typed<T: serde::de::DeserializeOwned + Serialize>(
    value: &Value,
    path: &str,
    at: &Locate<'_>,
) -> Result<T, Box<SourceError>> {
    let top = path.split(['.', '[']).next().unwrap_or(path);
    let locate = |inner: &str, message: String| {
        let full = match inner {
            "" | "." => path.to_string(),
            p if p.starts_with('[') => format!("{path}{p}"),
            p => format!("{path}.{p}"),
        };
        let key = full
            .rsplit(['.', '['])
            .find(|k| !k.is_empty() && !k.ends_with(']'))
            .unwrap_or(top);
        let mut err = at(key, message);
        err.key_path = Some(full);
        Box::new(err)
    };
    let parsed: T = serde_path_to_error::deserialize(value.clone()).map_err(|e| {
        locate(
            &e.path().to_string(),
            format!(
                "invalid `{path}`: {}",
                strip_position(&e.inner().to_string())
            ),
        )
    })?;
    // A `Serialize` of a deserialised trace type always succeeds (string keys only).
    let back = serde_json::to_value(&parsed).unwrap_or(Value::Null);
    let usage = matches!(path.rsplit('.').next(), Some("usage" | "rerank_usage"));
    if let Some(unknown) = unknown_keys(value, &back, "").filter(|_| !usage) {
        let name = unknown
            .rsplit(['.', ']'])
            .next()
            .unwrap_or(&unknown)
            .to_string();
        return Err(locate(
            &unknown,
            format!("unknown key `{name}` in `{path}`"),
        ));
    }
    Ok(parsed)
}

/// The path of the first key of `given` that `parsed` (the same value deserialised and
/// serialised back) lost: a key the type does not know. Keys whose value is `null`, `[]`,
/// `{}` or `false` are not reported (a type leaves those out when it writes them), nor the
/// keys of a `usage` object beyond [`crate::pipeline::Usage`]'s (`total_tokens`, …: ignored,
/// as in a live reply).
fn unknown_keys(given: &Value, parsed: &Value, path: &str) -> Option<String> {
    let last = path.rsplit(['.', '[']).next().unwrap_or(path);
    if matches!(last, "usage" | "rerank_usage") {
        return None;
    }
    match (given, parsed) {
        (Value::Object(g), Value::Object(p)) => g.iter().find_map(|(k, v)| {
            let here = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            match p.get(k) {
                Some(pv) => unknown_keys(v, pv, &here),
                None => {
                    let empty = match v {
                        Value::Null | Value::Bool(false) => true,
                        Value::Array(a) => a.is_empty(),
                        Value::Object(o) => o.is_empty(),
                        _ => false,
                    };
                    (!empty).then_some(here)
                }
            }
        }),
        (Value::Array(g), Value::Array(p)) => g
            .iter()
            .zip(p)
            .enumerate()
            .find_map(|(i, (gv, pv))| unknown_keys(gv, pv, &format!("{path}[{i}]"))),
        _ => None,
    }
}

/// Checks the shape of recorded predicates ([`crate::pipeline::Filter::check`]).
fn check_filters(
    filters: &[crate::pipeline::Filter],
    path: &str,
    at: &Locate<'_>,
) -> Result<(), Box<SourceError>> {
    for (i, f) in filters.iter().enumerate() {
        if let Err(e) = f.check() {
            let mut err = at("value", format!("invalid `{path}[{i}]`: {e}"));
            err.key_path = Some(format!("{path}[{i}].value"));
            return Err(Box::new(err));
        }
    }
    Ok(())
}

/// One finished case as a trace record, the inverse of the `trace` format's reader: the
/// case's `id`, `input`, `expected` and `metadata`, the trace's `retrieval` (with its
/// predicates, hops, usage and lane), the `context` passages, `answer`, `citations`,
/// `behavior`, the generation's `usage` and `ttft_ms`, `claims`, the `pipeline` (rewrites,
/// every lane retrieval, lane rankings, fusion, pre-rerank list, raw-query retrieval) and
/// `latency_ms`. Reading it back gives the same case and the same trace, except what a run
/// recomputes (`cache`, `filter_check`, `output_tokens`, `stderr`) and a context's token
/// counts and dropped list (context positions are found again among the candidates).
/// Empty parts are left out, so a two-stage trace writes what it always did.
pub fn trace_record_of(case: &Case, trace: &Trace) -> Value {
    let mut record = Map::new();
    record.insert("id".into(), Value::String(case.id.clone()));
    record.insert("input".into(), Value::Object(case.input.clone()));
    // Derived serialisations of core types always succeed (string keys only).
    let expected = serde_json::to_value(&case.expected).unwrap_or(Value::Null);
    if expected.as_object().is_some_and(|o| !o.is_empty()) {
        record.insert("expected".into(), expected);
    }
    if !case.metadata.is_empty() {
        record.insert("metadata".into(), Value::Object(case.metadata.clone()));
    }
    if let Some(r) = &trace.retrieval {
        record.insert(
            "retrieval".into(),
            serde_json::to_value(r).unwrap_or(Value::Null),
        );
    }
    if let Some(c) = &trace.context {
        let passages: Vec<&Passage> = c.passages.iter().map(|p| &p.passage).collect();
        record.insert(
            "context".into(),
            serde_json::to_value(passages).unwrap_or(Value::Null),
        );
    }
    for key in ["answer", "citations", "behavior", "usage", "ttft_ms"] {
        if let Some(v) = trace.output_field(key).filter(|v| !v.is_null()) {
            record.insert(key.into(), v.clone());
        }
    }
    if let Some(claims) = &trace.claims {
        record.insert(
            "claims".into(),
            serde_json::to_value(claims).unwrap_or(Value::Null),
        );
    }
    if let Some(p) = &trace.pipeline {
        record.insert(
            "pipeline".into(),
            serde_json::to_value(p).unwrap_or(Value::Null),
        );
    }
    if !trace.latency_ms.stages().is_empty() || trace.latency_ms.total.is_some() {
        record.insert(
            "latency_ms".into(),
            serde_json::to_value(&trace.latency_ms).unwrap_or(Value::Null),
        );
    }
    if let Some(p) = &trace.production {
        record.insert(
            "production".into(),
            serde_json::to_value(p).unwrap_or(Value::Null),
        );
    }
    Value::Object(record)
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
    fn unknown_keys_go_to_metadata_with_one_warning() {
        let text = "{\"user_input\":\"q\",\"faithfulness\":0.5}\n{\"user_input\":\"q\",\"retrieved_context\":[],\"faithfulness\":null,\"run\":\"a\"}\n{\"user_input\":\"q\",\"run\":\"b\"}\n";
        let d = parse_dataset("d.jsonl", text, None).unwrap();
        assert_eq!(d.warnings.len(), 1);
        assert_eq!(
            d.warnings[0],
            "d.jsonl: 2 unknown keys on 2 records kept as case metadata: `retrieved_context` (did you mean `retrieved_contexts`?), `run`"
        );
        assert_eq!(d.records[1].case.metadata["run"], "a");
        assert_eq!(d.external_scores, ["faithfulness"]);
        assert_eq!(
            d.records[0].case.metadata["external_scores"],
            json!({"faithfulness": 0.5})
        );
        assert_eq!(
            d.records[1].case.metadata["external_scores"],
            json!({"faithfulness": null})
        );
        assert!(!d.records[2].case.metadata.contains_key("external_scores"));
    }

    fn opts(encoding: DatasetEncoding, max_error_rate: f64) -> ReadOptions {
        ReadOptions {
            format: None,
            encoding: Some(encoding),
            max_error_rate,
        }
    }

    #[test]
    fn ragas_csv_with_numpy_lists_and_scores() {
        let text = ",user_input,retrieved_contexts,response,reference,faithfulness,note\n0,q1?,\"['A one' 'B \"\"two\"\"'\n 'C']\",r1,g1,0.5,x\n1,q2?,\"['D', 'E']\",r2,,,\n2,q3?,,\"multi\nline\",g3,1.0,y\n";
        let d = parse_text(
            "r.csv",
            text,
            DatasetEncoding::Csv,
            &opts(DatasetEncoding::Csv, 0.0),
        )
        .unwrap();
        assert_eq!(d.records.len(), 3);
        let c = &d.records[0].trace.retrieval.as_ref().unwrap().candidates;
        let texts: Vec<&str> = c.iter().map(|p| p.text.as_deref().unwrap()).collect();
        assert_eq!(texts, ["A one", "B \"two\"", "C"]);
        assert_eq!(d.records[0].case.id, "row-2");
        assert_eq!(d.records[1].case.id, "row-4");
        assert_eq!(d.records[1].case.expected.answer, None);
        assert_eq!(d.records[2].trace.answer(), Some("multi\nline"));
        assert_eq!(d.external_scores, ["faithfulness"]);
        assert_eq!(
            d.records[1].case.metadata["external_scores"]["faithfulness"],
            Value::Null
        );
        assert_eq!(d.records[0].case.metadata["note"], "x");
        assert!(
            d.warnings[0].contains("1 unknown key on 2 records"),
            "{:?}",
            d.warnings
        );
    }

    /// A trace file's records after the first are checked, then parsed one at a time when
    /// converted: the records and every error (where it is, what it says) are what reading
    /// each line at once gives, whichever line they are on.
    #[test]
    fn trace_records_parsed_one_at_a_time_read_and_fail_as_parsed_at_once() {
        let good = |id: &str| {
            format!("{{\"id\":\"{id}\",\"input\":{{\"question\":\"q {id}\"}},\"answer\":\"a\"}}")
        };
        let bad_lines = [
            "{\"id\":\"x\",\"input\":{\"question\":\"q\"},}",
            "[1, 2]",
            "{\"id\":\"y\",\"input\":{\"n\":1e400}}",
            "{\"id\":\"z\",\"input\":{\"n\":NaN}}",
            "{\"id\":\"w\",\"input\":\"not an object\"}",
        ];
        for bad in bad_lines {
            // The bad line first (read at once, before the format is known) and last (after
            // the first record said `trace`, so checked and read later).
            let first = format!("{bad}\n{}\n{}\n", good("a"), good("b"));
            let last = format!("{}\n{}\n{bad}\n", good("a"), good("b"));
            let read = |text: &str| {
                parse_text(
                    "t.jsonl",
                    text,
                    DatasetEncoding::Jsonl,
                    &opts(DatasetEncoding::Jsonl, 0.0),
                )
            };
            let (at_first, at_last) = (read(&first), read(&last));
            let asked = parse_text(
                "t.jsonl",
                &last,
                DatasetEncoding::Jsonl,
                &ReadOptions {
                    format: Some(DatasetFormat::Trace),
                    ..opts(DatasetEncoding::Jsonl, 0.0)
                },
            );
            match (at_first, at_last, asked) {
                (Err(f), Err(l), Err(a)) => {
                    assert_eq!(f.len(), 1, "{bad}: {f:?}");
                    assert_eq!((l.len(), a.len()), (1, 1), "{bad}: {l:?} {a:?}");
                    assert_eq!(f[0].message, l[0].message, "{bad}");
                    assert_eq!(l[0].message, a[0].message, "{bad}");
                    assert!(f[0].location().starts_with("t.jsonl:1:"), "{bad}: {f:?}");
                    assert_eq!(
                        l[0].location(),
                        f[0].location().replacen(":1:", ":3:", 1),
                        "{bad}"
                    );
                    assert_eq!(a[0].location(), l[0].location(), "{bad}");
                }
                (Ok(f), Ok(l), Ok(a)) => {
                    // NaN is read as absent: the record is valid wherever it is.
                    assert_eq!(f.records.len(), 3, "{bad}");
                    assert_eq!(l.records[2].case, f.records[0].case, "{bad}");
                    assert_eq!(a.records[2].case, f.records[0].case, "{bad}");
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
        let ok = parse_text(
            "t.jsonl",
            &format!("{}\n\n{}\n", good("a"), good("b")),
            DatasetEncoding::Jsonl,
            &opts(DatasetEncoding::Jsonl, 0.0),
        )
        .unwrap();
        assert_eq!(ok.format, DatasetFormat::Trace);
        let ids: Vec<&str> = ok.records.iter().map(|r| r.case.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(ok.records[1].case.input["question"], "q b");
    }

    #[test]
    fn python_nan_and_infinity_are_absent_and_errors_keep_their_place() {
        // `json.dump(df.to_dict("records"))`: one line, bare NaN before the bad field.
        let text = r#"[{"user_input": "q1", "faithfulness": NaN, "bleu_score": Infinity}, {"user_input": "q2", "faithfulness": 0.5, "bleu_score": -Infinity}, {"user_input": 7}]"#;
        let errs = parse_text(
            "d.json",
            text,
            DatasetEncoding::Json,
            &opts(DatasetEncoding::Json, 0.0),
        )
        .unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        let col = text.rfind('7').unwrap() + 1;
        assert_eq!(errs[0].location(), format!("d.json:1:{col}"), "{errs:?}");
        let ok = text.replace(r#"{"user_input": 7}"#, r#"{"user_input": "q3"}"#);
        let d = parse_text(
            "d.json",
            &ok,
            DatasetEncoding::Json,
            &opts(DatasetEncoding::Json, 0.0),
        )
        .unwrap();
        assert_eq!(d.external_scores, ["faithfulness", "bleu_score"]);
        let scores = |i: usize| d.records[i].case.metadata["external_scores"].clone();
        assert_eq!(scores(0), json!({"faithfulness": null, "bleu_score": null}));
        assert_eq!(scores(1), json!({"faithfulness": 0.5, "bleu_score": null}));
        // Ragas' LocalJSONLBackend: compact JSONL; a malformed line is located in the line as
        // written (after a NaN, which is one character shorter than its `null`).
        let jsonl = "{\"user_input\":\"q1\",\"faithfulness\":NaN}\n{\"user_input\":\"q2\",\"faithfulness\":NaN,}\n";
        let errs = parse_text(
            "e.jsonl",
            jsonl,
            DatasetEncoding::Jsonl,
            &opts(DatasetEncoding::Jsonl, 0.0),
        )
        .unwrap_err();
        let line = jsonl.lines().nth(1).unwrap();
        let col = line.find('}').unwrap() + 1;
        assert_eq!(errs[0].location(), format!("e.jsonl:2:{col}"), "{errs:?}");
        assert!(errs[0].message.starts_with("malformed JSON"), "{errs:?}");
        let d = parse_text(
            "e.jsonl",
            "{\"user_input\":\"q1\",\"faithfulness\":NaN,\"reference\":NaN}\n",
            DatasetEncoding::Jsonl,
            &opts(DatasetEncoding::Jsonl, 0.0),
        )
        .unwrap();
        assert_eq!(d.records[0].case.expected.answer, None);
        assert_eq!(
            d.records[0].case.metadata["external_scores"],
            json!({"faithfulness": null})
        );
    }

    #[test]
    fn broken_list_cells_skip_their_row_up_to_the_error_rate() {
        let text = "user_input,retrieved_contexts\nq1,['a' 'b']\nq2,\"['a', 'b\"\nq3,['c']\n";
        let errs = parse_text(
            "r.csv",
            text,
            DatasetEncoding::Csv,
            &opts(DatasetEncoding::Csv, 0.0),
        )
        .unwrap_err();
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].location(), "r.csv:3:1");
        assert_eq!(errs[0].key_path.as_deref(), Some("retrieved_contexts"));
        assert!(
            errs[0]
                .message
                .starts_with("column `retrieved_contexts`: broken list: a string is not closed"),
            "{}",
            errs[0].message
        );
        let d = parse_text(
            "r.csv",
            text,
            DatasetEncoding::Csv,
            &opts(DatasetEncoding::Csv, 0.5),
        )
        .unwrap();
        assert_eq!(d.records.len(), 2);
        assert_eq!(d.skipped.len(), 1);
        assert_eq!(d.rows, 3);
        assert!(
            d.warnings
                .iter()
                .any(|w| w.contains("skipped 1 of 3 rows (33.3%, within the allowed 50.0%")),
            "{:?}",
            d.warnings
        );
    }

    #[test]
    fn hugging_face_columns_and_pandas_orients() {
        let hf = r#"{"question": ["q1", "q2"], "contexts": [["a", "b"], ["c"]], "ground_truths": [["g1"], ["g2", "g2b"]], "answer": ["a1", "a2"]}"#;
        let d = parse_text(
            "amnesty.json",
            hf,
            DatasetEncoding::Json,
            &opts(DatasetEncoding::Json, 0.0),
        )
        .unwrap();
        assert_eq!(d.records.len(), 2);
        assert_eq!(d.records[0].case.id, "row-1");
        assert_eq!(d.records[0].case.expected.answer, Some(Value::from("g1")));
        assert_eq!(
            d.records[1].case.expected.answer,
            Some(json!(["g2", "g2b"]))
        );
        assert!(
            d.warnings[0].contains("ground_truths → reference"),
            "{:?}",
            d.warnings
        );
        let columns = r#"{"user_input":{"0":"q1","1":"q2"},"response":{"0":"r1","1":"r2"},"faithfulness":{"0":0.25,"1":null}}"#;
        let d = parse_text(
            "c.json",
            columns,
            DatasetEncoding::Json,
            &opts(DatasetEncoding::Json, 0.0),
        )
        .unwrap();
        assert_eq!(d.records[1].trace.answer(), Some("r2"));
        assert_eq!(
            d.records[0].case.metadata["external_scores"]["faithfulness"],
            0.25
        );
        let records = "[{\"user_input\":\"q1\",\"response\":\"r1\"},\n {\"user_input\":\"q2\",\"retrieved_contexts\":\"x\"}]";
        let errs = parse_text(
            "r.json",
            records,
            DatasetEncoding::Json,
            &opts(DatasetEncoding::Json, 0.0),
        )
        .unwrap_err();
        assert_eq!(errs[0].location(), "r.json:2:42");
        let split = r#"{"columns":["user_input","response"],"index":[0],"data":[["q","r"]]}"#;
        let d = parse_text(
            "s.json",
            split,
            DatasetEncoding::Json,
            &opts(DatasetEncoding::Json, 0.0),
        )
        .unwrap();
        assert_eq!(d.records[0].trace.answer(), Some("r"));
        assert_eq!(
            DatasetEncoding::detect(std::path::Path::new("x"), hf.as_bytes()),
            DatasetEncoding::Json
        );
        assert_eq!(
            DatasetEncoding::detect(std::path::Path::new("x"), b"{\"user_input\":\"q\"}\n"),
            DatasetEncoding::Jsonl
        );
        assert_eq!(
            DatasetEncoding::detect(std::path::Path::new("x"), b"user_input,response\n"),
            DatasetEncoding::Csv
        );
    }

    #[test]
    fn multi_turn_samples_are_refused_with_the_line() {
        let text =
            "{\"user_input\":\"q\"}\n{\"user_input\":[{\"content\":\"hi\",\"type\":\"human\"}]}\n";
        let errs = parse_text(
            "m.jsonl",
            text,
            DatasetEncoding::Jsonl,
            &opts(DatasetEncoding::Jsonl, 1.0),
        )
        .unwrap_err();
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].location(), "m.jsonl:2:2");
        assert!(
            errs[0].message.contains("multi-turn"),
            "{}",
            errs[0].message
        );
        let csv = "user_input,reference\n\"[{'content': 'hi', 'type': 'human'}]\",x\n";
        let errs = parse_text(
            "m.csv",
            csv,
            DatasetEncoding::Csv,
            &opts(DatasetEncoding::Csv, 1.0),
        )
        .unwrap_err();
        assert_eq!(errs[0].location(), "m.csv:2:1");
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

    /// A pipeline case as a live run stores it: rewrite, two lanes over two queries, fusion,
    /// a rerank, predicates (one on a hop), usage of every stage, latency of every stage.
    fn pipeline_trace() -> (Case, Trace) {
        let p = |id: &str, score: f64| json!({"doc_id": id, "score": score, "text": format!("text of {id}")});
        let ctx = |id: &str, score: f64, position: usize| {
            let mut v = p(id, score);
            v["position"] = json!(position);
            v
        };
        let case: Case = serde_json::from_value(json!({
            "id": "c1",
            "input": {"question": "refund time", "tenant": "acme"},
            "expected": {"answer": "14 days", "relevant": [{"doc_id": "d1"}]},
            "metadata": {"topic": "refunds"}
        }))
        .unwrap();
        let filter = json!({"field": "tenant", "op": "=", "value": "acme"});
        let lane = |lane: &str, query: &str, ids: &[(&str, f64)]| {
            json!({"lane": lane, "query": query, "cached": false, "latency_ms": 1.5,
                   "retrieval": {"query": query, "depth": 4, "lane": lane,
                                 "candidates": ids.iter().map(|(d, s)| p(d, *s)).collect::<Vec<_>>(),
                                 "filters": [filter.clone()],
                                 "usage": {"model": "embed", "input_tokens": 4}}})
        };
        let final_list = json!({"query": "refund time", "depth": 4,
            "candidates": [p("d3", 0.5), p("d1", 0.4)],
            "filters": [filter.clone()],
            "hops": [{"query": "refund", "candidates": [p("d1", 1.0)],
                      "filters": [{"field": "locale", "op": "in", "value": ["en-US"]}]}]});
        let pipeline = json!({
            "question": "refund time",
            "rewrite": {"queries": ["refund time", "refund time days"],
                        "usage": {"model": "rw", "input_tokens": 9, "output_tokens": 5}},
            "retrievals": [lane("bm25", "refund time", &[("d1", 2.0), ("d3", 1.0)]),
                           lane("tri", "refund time", &[("d3", 0.9), ("d1", 0.2)])],
            "lanes": {"bm25": [p("d1", 2.0), p("d3", 1.0)], "tri": [p("d3", 0.9), p("d1", 0.2)]},
            "fused": {"method": "rrf k=60", "candidates": [p("d1", 0.032), p("d3", 0.032)]},
            "pre_rerank": [p("d1", 0.032), p("d3", 0.032)],
            "rerank_usage": {"model": "rr", "input_tokens": 30}
        });
        let trace: Trace = serde_json::from_value(json!({
            "schema_version": 1, "case_id": "c1",
            "retrieval": final_list, "pipeline": pipeline,
            "context": {"passages": [ctx("d3", 0.5, 1),
                                     ctx("d1", 0.4, 2)],
                        "dropped": [], "truncated": false},
            "generation": {"answer": "14 days", "citations": ["d1"],
                           "usage": {"model": "gen", "input_tokens": 812, "output_tokens": 40,
                                     "total_tokens": 852},
                           "ttft_ms": 42.0},
            "latency_ms": {"rewrite": 2.0, "retrieve": 3.0, "fuse": 0.1, "rerank": 4.0,
                           "generate": 50.0},
            "cache": {"execution": false}
        }))
        .unwrap();
        (case, trace)
    }

    #[test]
    fn a_pipeline_trace_round_trips_through_the_trace_format() {
        let (case, trace) = pipeline_trace();
        let line = trace_record_of(&case, &trace).to_string();
        let d = parse_dataset("t.jsonl", &line, None).unwrap();
        assert_eq!(d.format, DatasetFormat::Trace);
        let back = &d.records[0];
        assert_eq!(back.case, case);
        assert_eq!(back.trace.pipeline, trace.pipeline);
        assert_eq!(back.trace.retrieval, trace.retrieval);
        assert_eq!(back.trace.generation, trace.generation);
        assert_eq!(back.trace.latency_ms, trace.latency_ms);
        assert_eq!(back.trace.context, trace.context);
        // Written again, the record is the same line.
        assert_eq!(trace_record_of(&back.case, &back.trace).to_string(), line);
    }

    #[test]
    fn a_two_stage_trace_writes_no_pipeline_fields() {
        let (case, mut trace) = pipeline_trace();
        trace.pipeline = None;
        trace.latency_ms = Default::default();
        let r = trace.retrieval.as_mut().unwrap();
        r.filters.clear();
        r.hops.clear();
        let generation = trace.generation.as_mut().unwrap();
        generation.shift_remove("usage");
        generation.shift_remove("ttft_ms");
        let record = trace_record_of(&case, &trace);
        let keys: Vec<&str> = record
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(
            keys,
            [
                "id",
                "input",
                "expected",
                "metadata",
                "retrieval",
                "context",
                "answer",
                "citations"
            ]
        );
        let retrieval_keys: Vec<&String> =
            record["retrieval"].as_object().unwrap().keys().collect();
        assert_eq!(retrieval_keys, ["query", "depth", "candidates"]);
    }

    #[test]
    fn bad_pipeline_fields_are_located_errors_naming_the_key_path() {
        let (case, trace) = pipeline_trace();
        let good = trace_record_of(&case, &trace);
        let broken = |edit: &dyn Fn(&mut Value)| {
            let mut v = good.clone();
            edit(&mut v);
            let errs = parse_dataset("t.jsonl", &v.to_string(), None).unwrap_err();
            (
                errs[0].key_path.clone().unwrap_or_default(),
                errs[0].message.clone(),
            )
        };
        let (path, message) = broken(&|v| v["pipeline"]["fused"]["methd"] = json!("rrf"));
        assert_eq!(path, "pipeline.fused.methd");
        assert!(message.contains("unknown key `methd`"), "{message}");
        let (path, message) = broken(&|v| v["retrieval"]["filters"][0]["op"] = json!("like"));
        assert_eq!(path, "retrieval.filters[0].op");
        assert!(message.contains("unknown variant `like`"), "{message}");
        let (path, message) = broken(&|v| {
            v["retrieval"]["filters"][0] = json!({"field": "tenant", "op": "in", "value": "acme"})
        });
        assert_eq!(path, "retrieval.filters[0].value");
        assert!(message.contains("needs an array value"), "{message}");
        let (path, message) =
            broken(&|v| v["retrieval"]["hops"][0].as_object_mut().unwrap().clear());
        assert_eq!(path, "retrieval.hops[0]");
        assert!(message.contains("missing field `candidates`"), "{message}");
        let (path, message) = broken(&|v| v["latency_ms"]["rerank"] = json!(-1.0));
        assert_eq!(path, "latency_ms.rerank");
        assert!(message.contains("≥ 0"), "{message}");
        let (path, _) = broken(&|v| v["latency_ms"]["retreive"] = json!(1.0));
        assert_eq!(path, "latency_ms.retreive");
        let (path, message) = broken(&|v| v["ttft_ms"] = json!("fast"));
        assert_eq!(path, "ttft_ms");
        assert!(message.contains("milliseconds"), "{message}");
        let (path, _) = broken(&|v| v["retrieval"]["lanes"] = json!("bm25"));
        assert_eq!(path, "lanes");
    }
}
