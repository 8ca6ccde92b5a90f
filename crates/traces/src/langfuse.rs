//! Langfuse exports: observations, traces and scores, decoded into [`Span`]s and
//! [`TraceFeedback`].
//!
//! Shapes read, and where each is documented:
//! - **The public API** (`/api/public`, the OpenAPI spec at
//!   `cloud.langfuse.com/generated/api/openapi.yml`): `Observation` — `{id, traceId, type,
//!   name, startTime, endTime, completionStartTime, model, input, output, metadata, usage
//!   {input, output, total}, usageDetails {input, output, total, …}, level (DEBUG, DEFAULT,
//!   WARNING, ERROR), statusMessage, parentObservationId}` with ISO 8601 times
//!   (`2024-05-29T13:46:19.963Z`); `type` one of SPAN, GENERATION, EVENT, AGENT, TOOL, CHAIN,
//!   RETRIEVER, EVALUATOR, EMBEDDING, GUARDRAIL (`ObservationType`); `Trace` / `TraceWithFullDetails`
//!   — `{id, timestamp, name, input, output, metadata, userId, sessionId, tags, latency
//!   (seconds), observations, scores}`; `Score` — `{traceId, observationId, name, value,
//!   stringValue, dataType (NUMERIC, CATEGORICAL, BOOLEAN), source (API, ANNOTATION, EVAL),
//!   comment}`. A page (`{"data": […], "meta": …}`), an array, or one object per line; the UI's
//!   batch export writes the same fields as JSON or CSV.
//! - **The blob-storage export** (Langfuse docs, "Blob storage export field reference"):
//!   snake_case fields (`trace_id`, `parent_observation_id`, `start_time`,
//!   `completion_start_time`, `usage_details`, `status_message`, `provided_model_name`,
//!   `data_type`, `string_value`, and the enriched observations' `user_id`, `session_id`,
//!   `tags`, `trace_name`), times as `2024-05-29 13:46:19.963000` (UTC), `input` / `output` as
//!   text that may hold JSON; as JSON, JSON Lines or CSV.
//!
//! CSV cells are text: an empty cell is absent, a cell that starts with `{` or `[` and parses
//! is JSON, numbers are read from their text where a number is expected. The same holds for
//! `input` / `output` strings that are JSON.
//!
//! Mapping (onto the attribute names [`crate::conventions`] reads):
//! - `type` → `openinference.span.kind` (GENERATION → `LLM`, RETRIEVER, EMBEDDING, TOOL,
//!   AGENT, CHAIN, GUARDRAIL, EVALUATOR as named; SPAN and EVENT none), kept as
//!   `langfuse.observation.type`;
//! - `input` / `output` → `input.value` / `output.value` (JSON values as JSON text with
//!   `*.mime_type = application/json`); a GENERATION's chat messages (`[{role, content}]`, or
//!   `{messages: […]}`; content text or `[{type: "text", text}]` parts) → `llm.input_messages`
//!   / `llm.output_messages`; a RETRIEVER's output list of documents (`[{id | doc_id,
//!   content | page_content | text, score, metadata}]`, or `{documents: […]}`) →
//!   `retrieval.documents.{i}.document.*` (rank = list order);
//! - `model` (or `provided_model_name`) → `llm.model_name`; usage (`usageDetails`, else
//!   `usage`: `input` / `prompt_tokens` / `promptTokens`, `output` / `completion_tokens`,
//!   `total`) → `llm.token_count.{prompt,completion,total}`;
//! - `completionStartTime − startTime` → `gen_ai.response.time_to_first_chunk` (seconds: the
//!   TTFT); `level = ERROR` → status error with `statusMessage`;
//! - `metadata` → `metadata`; a trace's (or an enriched observation's) `userId`, `sessionId`,
//!   `tags` → `user.id`, `session.id`, `tag.tags`.
//!
//! **The root.** Langfuse's trace is the root of its observations. A trace record in the
//! input becomes the root span (id: the trace id; start: `timestamp`; end: `timestamp +
//! latency` when the latency is given, else unknown; its input and output are the question
//! and the answer), its top-level observations its children. Without one, a trace's only
//! top-level observation is its root; with several, a root without times or content is
//! synthesized (named after `trace_name` when given, `langfuse.synthesized_root = true`) so
//! that the tree has one root — what it lacks stays not recorded. Each trace record and each
//! synthesized root counts as a span read.
//!
//! **Scores** become [`Feedback`] on their trace (and observation): NUMERIC → the number,
//! BOOLEAN → `true` / `false`, CATEGORICAL → `stringValue`; comment; source
//! `langfuse:<source>`. A user's thumbs sent as a score named `thumbs` / `user_feedback` (1
//! up, 0 down) reads as [`Feedback::is_negative`] says.
//!
//! A reader gathers a whole export (observations, traces and scores may come in any file and
//! order) and [`LangfuseReader::finish`] hands it over; memory follows the export.
//!
//! Bad input (counted, located `file:line` for JSON Lines and CSV, `file[i]` for an element of
//! a JSON array or page): a record that is no Langfuse object (`not_langfuse`; `not_json` /
//! `bad_csv_row` when unreadable — input records dropped); an observation without an id or
//! trace id (`bad_id`, dropped); an unreadable time (`bad_timestamp`, kept without it); a
//! value of the wrong type (`wrong_attribute_type`, kept without it); a score without a name
//! or value (`bad_feedback`) or whose trace is not in the input (`feedback_without_trace`):
//! noted and left out.

use std::collections::{BTreeMap, HashMap, HashSet};

use oloproof_core::production::Feedback;
use serde_json::{json, Map, Value};

use crate::phoenix::{first_record, flatten_into, get, time_of};
use crate::problems::{ImportSummary, Problem};
use crate::span::{Attributes, Decoded, Location, Span, SpanStatus, StatusCode, TraceFeedback};

/// Whether a JSON record (or the first of a page or array) is a Langfuse export: an
/// observation (`traceId` / `trace_id` with `type` or a start time), a score (`dataType` /
/// `data_type`), or a trace (`id` and `timestamp` with `observations`, `userId`, `sessionId`,
/// `htmlPath` or `latency`). Used by `--format auto`.
pub fn looks_like(value: &Value) -> bool {
    match first_record(value) {
        Some(Value::Object(o)) => kind(o).is_some(),
        _ => false,
    }
}

/// Whether a CSV header line names a Langfuse export's columns (`traceId` or `trace_id`, with
/// `startTime` / `start_time` / `dataType` / `data_type`, or a trace's `timestamp`).
pub fn csv_header_looks_like(line: &str) -> bool {
    let cols: HashSet<&str> = line
        .trim_start_matches('\u{feff}')
        .trim_end()
        .split(',')
        .map(|c| c.trim().trim_matches('"'))
        .collect();
    let has = |names: &[&str]| names.iter().any(|n| cols.contains(n));
    (has(&["traceId", "trace_id"]) && has(&["startTime", "start_time", "dataType", "data_type"]))
        || (has(&["id"]) && has(&["timestamp"]) && has(&["userId", "user_id", "sessionId"]))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Observation,
    Score,
    Trace,
}

fn kind(o: &Map<String, Value>) -> Option<Kind> {
    let has = |keys: &[&str]| keys.iter().any(|k| o.contains_key(*k));
    let trace_ref = has(&["traceId", "trace_id"]);
    if has(&["dataType", "data_type"])
        || (has(&["name"])
            && has(&["value", "stringValue", "string_value"])
            && has(&[
                "traceId",
                "trace_id",
                "observationId",
                "observation_id",
                "sessionId",
            ])
            && !has(&["startTime", "start_time", "type"]))
    {
        return Some(Kind::Score);
    }
    if (trace_ref && has(&["type", "startTime", "start_time"]))
        || (has(&["type"]) && has(&["startTime", "start_time"]))
    {
        return Some(Kind::Observation);
    }
    if !trace_ref
        && has(&["id"])
        && has(&["timestamp"])
        && has(&[
            "observations",
            "scores",
            "userId",
            "user_id",
            "sessionId",
            "session_id",
            "htmlPath",
            "latency",
            "bookmarked",
        ])
    {
        return Some(Kind::Trace);
    }
    None
}

/// A trace record.
#[derive(Debug, Clone)]
struct TraceRow {
    span: Span,
}

/// A score waiting for its trace.
#[derive(Debug, Clone)]
struct Score {
    trace_id: String,
    observation_id: Option<String>,
    feedback: Feedback,
    at: Location,
}

/// Gathers a Langfuse export (see the module doc).
#[derive(Debug, Default)]
pub struct LangfuseReader {
    observations: Vec<Span>,
    /// Trace-level context an enriched observation carried (`trace_name`), by trace.
    trace_names: HashMap<String, String>,
    traces: Vec<TraceRow>,
    scores: Vec<Score>,
    summary: ImportSummary,
}

impl LangfuseReader {
    /// An empty reader.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads a whole JSON document: a page (`{"data": […]}`), an array (element `i` located as
    /// `file[i]`), or one record.
    pub fn read_document(&mut self, value: &Value, file: &str) {
        match crate::span::export_items(value) {
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.read_record(item, &Location::element(file, i));
                }
            }
            None => self.read_record(
                value,
                &Location {
                    file: file.to_string(),
                    line: None,
                    byte_offset: None,
                },
            ),
        }
    }

    /// Reads one JSON Lines line (blank lines are skipped).
    pub fn read_line(&mut self, line: &str, at: &Location) {
        let line = line.trim();
        if line.is_empty() {
            return;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Array(items)) => items.iter().for_each(|i| self.read_record(i, at)),
            Ok(value) => match value.get("data") {
                Some(Value::Array(items)) => items.iter().for_each(|i| self.read_record(i, at)),
                _ => self.read_record(&value, at),
            },
            Err(e) => self.summary.drop_record(Problem {
                kind: "not_json".into(),
                at: at.clone(),
                message: format!(
                    "not JSON ({e}): each line of a Langfuse JSON Lines export must be one observation, trace or score"
                ),
            }),
        }
    }

    /// Reads a CSV export (a header row, then one record per row, RFC 4180 quoting), each
    /// row located by the line it starts on.
    pub fn read_csv(&mut self, text: &str, file: &str) {
        let mut reader = csv::ReaderBuilder::new()
            .flexible(true)
            .from_reader(text.trim_start_matches('\u{feff}').as_bytes());
        let headers = match reader.headers() {
            Ok(h) => h.clone(),
            Err(e) => {
                self.summary.drop_record(Problem {
                    kind: "bad_csv_row".into(),
                    at: Location {
                        file: file.to_string(),
                        line: Some(1),
                        byte_offset: None,
                    },
                    message: format!("the CSV header cannot be read: {e}"),
                });
                return;
            }
        };
        let mut record = csv::StringRecord::new();
        loop {
            let line = reader.position().line() as usize;
            let at = Location {
                file: file.to_string(),
                line: Some(line),
                byte_offset: None,
            };
            match reader.read_record(&mut record) {
                Ok(false) => break,
                Ok(true) => {
                    let line = record.position().map_or(line, |p| p.line() as usize);
                    let at = Location {
                        line: Some(line),
                        ..at
                    };
                    if record.len() != headers.len() {
                        self.summary.drop_record(Problem {
                            kind: "bad_csv_row".into(),
                            at,
                            message: format!(
                                "{} fields where the header has {}: the row is left out (a quote not closed?)",
                                record.len(),
                                headers.len()
                            ),
                        });
                        continue;
                    }
                    let mut obj = Map::new();
                    for (h, cell) in headers.iter().zip(record.iter()) {
                        if let Some(v) = cell_value(cell) {
                            obj.insert(h.to_string(), v);
                        }
                    }
                    self.read_record(&Value::Object(obj), &at);
                }
                Err(e) => {
                    self.summary.drop_record(Problem {
                        kind: "bad_csv_row".into(),
                        at,
                        message: format!("not CSV: {e}"),
                    });
                    if matches!(e.kind(), csv::ErrorKind::Io(_)) {
                        break;
                    }
                }
            }
        }
    }

    /// Reads one record: an observation, a trace (with its nested observations and scores) or
    /// a score.
    pub fn read_record(&mut self, value: &Value, at: &Location) {
        let Some(obj) = value.as_object() else {
            self.not_langfuse(at, format!("a JSON value `{}`", short(value)));
            return;
        };
        match kind(obj) {
            Some(Kind::Observation) => {
                self.summary.spans_read += 1;
                if let Some(span) = self.observation(obj, at) {
                    self.observations.push(span);
                }
            }
            Some(Kind::Score) => self.score(obj, at),
            Some(Kind::Trace) => {
                self.summary.spans_read += 1;
                if let Some(span) = self.trace(obj, at) {
                    self.traces.push(TraceRow { span });
                }
                for (key, is_obs) in [("observations", true), ("scores", false)] {
                    if let Some(Value::Array(items)) = obj.get(key) {
                        for (i, item) in items.iter().enumerate() {
                            // A trace list may hold only ids; the objects are read elsewhere.
                            if item.is_string() {
                                continue;
                            }
                            let at = Location {
                                file: format!(
                                    "{}{}.{key}[{i}]",
                                    at.file,
                                    at.line.map(|l| format!(":{l}")).unwrap_or_default()
                                ),
                                line: None,
                                byte_offset: None,
                            };
                            let mut item = item.clone();
                            if let (Some(o), Some(id)) =
                                (item.as_object_mut(), obj.get("id").cloned())
                            {
                                o.entry("traceId").or_insert(id);
                            }
                            if is_obs {
                                self.read_record(&item, &at);
                            } else {
                                self.score(item.as_object().unwrap_or(&Map::new()), &at);
                            }
                        }
                    }
                }
            }
            None => {
                let keys: Vec<&str> = obj.keys().map(String::as_str).take(6).collect();
                self.not_langfuse(at, format!("an object with keys {}", keys.join(", ")));
            }
        }
    }

    fn not_langfuse(&mut self, at: &Location, what: String) {
        self.summary.drop_record(Problem {
            kind: "not_langfuse".into(),
            at: at.clone(),
            message: format!(
                "not a Langfuse observation, trace or score: {what} (an observation has `traceId` and `type`, a score `dataType`)"
            ),
        });
    }

    fn note(&mut self, kind: &str, at: &Location, message: String) {
        self.summary.note(Problem {
            kind: kind.into(),
            at: at.clone(),
            message,
        });
    }

    fn observation(&mut self, o: &Map<String, Value>, at: &Location) -> Option<Span> {
        let ty = get(o, &["type"])
            .and_then(Value::as_str)
            .unwrap_or("SPAN")
            .to_ascii_uppercase();
        let name = get(o, &["name"])
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let what = if name.is_empty() {
            format!("a {ty} observation")
        } else {
            format!("{ty} `{name}`")
        };
        let id = text_id(get(o, &["id"]));
        let trace_id = text_id(get(o, &["traceId", "trace_id"]));
        let (Some(span_id), Some(trace_id)) = (id, trace_id) else {
            self.summary.drop_span(Problem {
                kind: "bad_id".into(),
                at: at.clone(),
                message: format!(
                    "{what} has no string `id` and `traceId`: it cannot be placed in a trace"
                ),
            });
            return None;
        };
        let mut attrs = Attributes::new();
        attrs.insert("langfuse.observation.type", json!(ty));
        let oi_kind = match ty.as_str() {
            "GENERATION" => Some("LLM"),
            "RETRIEVER" | "EMBEDDING" | "TOOL" | "AGENT" | "CHAIN" | "GUARDRAIL" | "EVALUATOR" => {
                Some(ty.as_str())
            }
            "SPAN" | "EVENT" => None,
            _ => {
                self.note(
                    "wrong_attribute_type",
                    at,
                    format!("{what}: unknown observation `type` {ty}; read as a SPAN"),
                );
                None
            }
        };
        if let Some(k) = oi_kind {
            attrs.insert("openinference.span.kind", json!(k));
        }
        let start = self.time(o, &["startTime", "start_time"], at, &what);
        let end = self.time(o, &["endTime", "end_time"], at, &what);
        let completion_start = self.time(
            o,
            &["completionStartTime", "completion_start_time"],
            at,
            &what,
        );

        // Input and output.
        let input = get(o, &["input"]).map(structured);
        let output = get(o, &["output"]).map(structured);
        let mut input_done = false;
        let mut output_done = false;
        if ty == "GENERATION" {
            if let Some(msgs) = input.as_ref().and_then(messages) {
                put_messages(&mut attrs, "llm.input_messages", &msgs);
                input_done = true;
            }
            if let Some(msgs) = output.as_ref().and_then(messages) {
                put_messages(&mut attrs, "llm.output_messages", &msgs);
                output_done = true;
            }
        }
        if ty == "RETRIEVER" {
            if let Some(docs) = output.as_ref().and_then(documents) {
                for (i, d) in docs.iter().enumerate() {
                    for (k, v) in d {
                        attrs.insert(format!("retrieval.documents.{i}.document.{k}"), v.clone());
                    }
                }
                output_done = true;
            }
        }
        if !input_done {
            if let Some(v) = &input {
                put_io(&mut attrs, "input", v);
            }
        }
        if !output_done {
            if let Some(v) = &output {
                put_io(&mut attrs, "output", v);
            }
        }

        if let Some(m) = get(o, &["model", "provided_model_name", "providedModelName"]) {
            match m {
                Value::String(s) if !s.is_empty() => {
                    attrs.insert("llm.model_name", m.clone());
                }
                Value::String(_) => {}
                other => self.note(
                    "wrong_attribute_type",
                    at,
                    format!("{what}: `model` must be a string, got {other}"),
                ),
            }
        }
        self.usage(o, &mut attrs, at, &what);
        match (start, completion_start) {
            (Some(s), Some(c)) if c >= s => {
                attrs.insert(
                    "gen_ai.response.time_to_first_chunk",
                    json!((c - s) as f64 / 1e9),
                );
            }
            (Some(_), Some(_)) => self.note(
                "wrong_attribute_type",
                at,
                format!(
                    "{what}: `completionStartTime` is before `startTime`; the TTFT is not recorded"
                ),
            ),
            _ => {
                if let Some(v) = get(o, &["timeToFirstToken", "time_to_first_token"]) {
                    attrs.insert("gen_ai.response.time_to_first_chunk", v.clone());
                }
            }
        }
        self.context(o, &mut attrs, at, &what);
        if let Some(n) = get(o, &["trace_name", "traceName"]).and_then(Value::as_str) {
            self.trace_names
                .entry(trace_id.clone())
                .or_insert_with(|| n.to_string());
        }
        let status = match get(o, &["level"]).and_then(Value::as_str) {
            Some(l) if l.eq_ignore_ascii_case("ERROR") => Some(SpanStatus {
                code: StatusCode::Error,
                message: get(o, &["statusMessage", "status_message"])
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            }),
            _ => None,
        };
        Some(Span {
            trace_id,
            span_id,
            parent_span_id: text_id(get(o, &["parentObservationId", "parent_observation_id"])),
            name,
            kind: None,
            start_unix_nano: start,
            end_unix_nano: end,
            attributes: attrs,
            events: Vec::new(),
            status,
            resource: Default::default(),
            at: at.clone(),
        })
    }

    fn trace(&mut self, o: &Map<String, Value>, at: &Location) -> Option<Span> {
        let name = get(o, &["name"])
            .and_then(Value::as_str)
            .unwrap_or("trace")
            .to_string();
        let what = format!("trace `{name}`");
        let Some(id) = text_id(get(o, &["id"])) else {
            self.summary.drop_span(Problem {
                kind: "bad_id".into(),
                at: at.clone(),
                message: format!("{what} has no string `id`"),
            });
            return None;
        };
        let start = self.time(o, &["timestamp"], at, &what);
        let end = match (start, get(o, &["latency"])) {
            (Some(s), Some(l)) => match number(l) {
                Some(secs) if secs >= 0.0 => Some(s + (secs * 1e9).round() as u64),
                _ => {
                    self.note(
                        "wrong_attribute_type",
                        at,
                        format!("{what}: `latency` must be seconds ≥ 0, got {l}"),
                    );
                    None
                }
            },
            _ => None,
        };
        let mut attrs = Attributes::new();
        attrs.insert("openinference.span.kind", json!("CHAIN"));
        attrs.insert("langfuse.observation.type", json!("TRACE"));
        if let Some(v) = get(o, &["input"]) {
            put_io(&mut attrs, "input", &structured(v));
        }
        if let Some(v) = get(o, &["output"]) {
            put_io(&mut attrs, "output", &structured(v));
        }
        self.context(o, &mut attrs, at, &what);
        Some(Span {
            trace_id: id.clone(),
            span_id: id,
            parent_span_id: None,
            name,
            kind: None,
            start_unix_nano: start,
            end_unix_nano: end,
            attributes: attrs,
            events: Vec::new(),
            status: None,
            resource: Default::default(),
            at: at.clone(),
        })
    }

    /// `metadata`, `userId`, `sessionId`, `tags`.
    fn context(
        &mut self,
        o: &Map<String, Value>,
        attrs: &mut Attributes,
        at: &Location,
        what: &str,
    ) {
        if let Some(m) = get(o, &["metadata"]) {
            match structured(m) {
                Value::Object(m) if m.is_empty() => {}
                v @ Value::Object(_) => {
                    attrs.insert("metadata", v);
                }
                // Langfuse keeps non-object metadata as given; it is not a segment map.
                Value::String(s) if s.is_empty() => {}
                other => self.note(
                    "wrong_attribute_type",
                    at,
                    format!(
                        "{what}: `metadata` is not an object ({}); not read as segments",
                        short(&other)
                    ),
                ),
            }
        }
        for (keys, attr) in [
            (["userId", "user_id"], "user.id"),
            (["sessionId", "session_id"], "session.id"),
        ] {
            if let Some(v) = get(o, &keys) {
                attrs.insert(attr, v.clone());
            }
        }
        if let Some(t) = get(o, &["tags"]) {
            match structured(t) {
                Value::Array(tags) if tags.is_empty() => {}
                v @ Value::Array(_) => {
                    attrs.insert("tag.tags", v);
                }
                other => self.note(
                    "wrong_attribute_type",
                    at,
                    format!("{what}: `tags` must be a list, got {}", short(&other)),
                ),
            }
        }
    }

    fn usage(&mut self, o: &Map<String, Value>, attrs: &mut Attributes, at: &Location, what: &str) {
        let details = get(o, &["usageDetails", "usage_details"]).map(structured);
        let legacy = get(o, &["usage"]).map(structured);
        let sources: Vec<&Map<String, Value>> = [details.as_ref(), legacy.as_ref()]
            .into_iter()
            .flatten()
            .filter_map(Value::as_object)
            .collect();
        for (attr, keys) in [
            (
                "llm.token_count.prompt",
                &["input", "prompt_tokens", "promptTokens", "input_tokens"][..],
            ),
            (
                "llm.token_count.completion",
                &[
                    "output",
                    "completion_tokens",
                    "completionTokens",
                    "output_tokens",
                ][..],
            ),
            (
                "llm.token_count.total",
                &["total", "total_tokens", "totalTokens"][..],
            ),
        ] {
            let found = sources
                .iter()
                .find_map(|m| keys.iter().find_map(|k| m.get(*k).filter(|v| !v.is_null())))
                .or_else(|| {
                    // The API's flat view: promptTokens / completionTokens / totalTokens.
                    get(o, &keys[2..3])
                });
            let Some(v) = found else { continue };
            match number(v) {
                Some(x) if x >= 0.0 && x.fract() == 0.0 => {
                    attrs.insert(attr, json!(x as u64));
                }
                _ => self.note(
                    "wrong_attribute_type",
                    at,
                    format!("{what}: a token count ({attr}) must be a whole number, got {v}; not recorded"),
                ),
            }
        }
    }

    fn time(
        &mut self,
        o: &Map<String, Value>,
        keys: &[&str],
        at: &Location,
        what: &str,
    ) -> Option<u64> {
        let v = get(o, keys)?;
        match time_of(v) {
            Ok(t) => Some(t),
            Err(e) => {
                self.note(
                    "bad_timestamp",
                    at,
                    format!("{what}: `{}`: {e}; not recorded", keys[0]),
                );
                None
            }
        }
    }

    fn score(&mut self, o: &Map<String, Value>, at: &Location) {
        let name = get(o, &["name"])
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let Some(name) = name else {
            self.note(
                "bad_feedback",
                at,
                "a score without a string `name`; left out".into(),
            );
            return;
        };
        let Some(trace_id) = text_id(get(o, &["traceId", "trace_id"])) else {
            self.note(
                "feedback_without_trace",
                at,
                format!("score `{name}` is on no trace (a session or dataset-run score); left out"),
            );
            return;
        };
        let data_type = get(o, &["dataType", "data_type"])
            .and_then(Value::as_str)
            .map(str::to_ascii_uppercase);
        let value = get(o, &["value"]);
        let string_value = get(o, &["stringValue", "string_value"]).and_then(Value::as_str);
        let v = match data_type.as_deref() {
            Some("CATEGORICAL") => string_value
                .map(|s| json!(s))
                .or_else(|| value.cloned().filter(|v| v.is_string())),
            Some("BOOLEAN") => match (value.and_then(number), string_value) {
                (Some(x), _) if x == 0.0 || x == 1.0 => Some(json!(x == 1.0)),
                (_, Some(s)) if s.eq_ignore_ascii_case("true") => Some(json!(true)),
                (_, Some(s)) if s.eq_ignore_ascii_case("false") => Some(json!(false)),
                _ => None,
            },
            _ => match value {
                Some(v) => match number(v) {
                    Some(x) => Some(json!(x)),
                    None if data_type.is_none() => v.as_str().map(|s| json!(s)),
                    None => None,
                },
                None if data_type.is_none() => string_value.map(|s| json!(s)),
                None => None,
            },
        };
        let Some(value) = v else {
            self.note(
                "bad_feedback",
                at,
                format!(
                    "score `{name}` ({}) has no usable value (value {}, stringValue {:?}); left out",
                    data_type.as_deref().unwrap_or("no dataType"),
                    value.map_or("absent".to_string(), Value::to_string),
                    string_value
                ),
            );
            return;
        };
        let source = get(o, &["source"]).and_then(Value::as_str);
        self.scores.push(Score {
            trace_id,
            observation_id: text_id(get(o, &["observationId", "observation_id"])),
            feedback: Feedback {
                name: name.to_string(),
                value,
                comment: get(o, &["comment"])
                    .and_then(Value::as_str)
                    .map(str::to_string),
                source: Some(match source {
                    Some(s) => format!("langfuse:{s}"),
                    None => "langfuse".into(),
                }),
            },
            at: at.clone(),
        });
    }

    /// The spans (trace roots and observations) and the scores as feedback.
    pub fn finish(mut self) -> Decoded {
        let mut out = Decoded::default();
        // Traces in the order first seen (trace records, then observations).
        let mut order: Vec<String> = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        let mut roots: HashMap<String, Span> = HashMap::new();
        for t in self.traces {
            let id = t.span.trace_id.clone();
            if seen.insert(id.clone()) {
                order.push(id.clone());
                roots.insert(id, t.span);
            } else {
                self.summary.drop_span(Problem {
                    kind: "duplicate_span_id".into(),
                    at: t.span.at.clone(),
                    message: format!("trace {id} is given twice; the second is dropped"),
                });
            }
        }
        let mut by_trace: HashMap<String, Vec<Span>> = HashMap::new();
        for s in self.observations {
            if seen.insert(s.trace_id.clone()) {
                order.push(s.trace_id.clone());
            }
            by_trace.entry(s.trace_id.clone()).or_default().push(s);
        }
        for trace_id in &order {
            let mut spans = by_trace.remove(trace_id).unwrap_or_default();
            let ids: HashSet<String> = spans.iter().map(|s| s.span_id.clone()).collect();
            let top: Vec<usize> = (0..spans.len())
                .filter(|&i| spans[i].parent_span_id.is_none())
                .collect();
            let root = match roots.remove(trace_id) {
                Some(mut r) => {
                    if ids.contains(&r.span_id) {
                        r.span_id = format!("trace:{}", r.span_id);
                    }
                    Some(r)
                }
                None if top.len() > 1 => {
                    self.summary.spans_read += 1;
                    let mut attrs = Attributes::new();
                    attrs.insert("openinference.span.kind", json!("CHAIN"));
                    attrs.insert("langfuse.synthesized_root", json!(true));
                    for key in ["user.id", "session.id", "tag.tags", "metadata"] {
                        if let Some(v) = top.iter().find_map(|&i| spans[i].attributes.get(key)) {
                            attrs.insert(key, v.clone());
                        }
                    }
                    let mut id = format!("trace:{trace_id}");
                    while ids.contains(&id) {
                        id.push('_');
                    }
                    Some(Span {
                        trace_id: trace_id.clone(),
                        span_id: id,
                        name: self
                            .trace_names
                            .get(trace_id)
                            .cloned()
                            .unwrap_or_else(|| "langfuse trace".into()),
                        attributes: attrs,
                        at: spans[top[0]].at.clone(),
                        ..Default::default()
                    })
                }
                None => None,
            };
            if let Some(root) = root {
                for &i in &top {
                    spans[i].parent_span_id = Some(root.span_id.clone());
                }
                out.spans.push(root);
            }
            out.spans.extend(spans);
        }
        for s in self.scores {
            if seen.contains(&s.trace_id) {
                out.feedback.push(TraceFeedback {
                    trace_id: s.trace_id,
                    span_id: s.observation_id,
                    feedback: s.feedback,
                });
            } else {
                self.summary.note(Problem {
                    kind: "feedback_without_trace".into(),
                    at: s.at,
                    message: format!(
                        "score `{}` is on trace {}, which is not in the input; left out (export the trace's observations too)",
                        s.feedback.name, s.trace_id
                    ),
                });
            }
        }
        out.summary = self.summary;
        out
    }
}

/// A CSV cell as a value: empty is absent; `{…}` / `[…]` that parses is JSON; else text.
fn cell_value(cell: &str) -> Option<Value> {
    if cell.is_empty() {
        return None;
    }
    let t = cell.trim_start();
    if t.starts_with('{') || t.starts_with('[') {
        if let Ok(v) = serde_json::from_str(t) {
            return Some(v);
        }
    }
    Some(Value::String(cell.to_string()))
}

/// A value that may be JSON text (`input` / `output` of the blob export): the JSON it holds
/// when it is an object, a list or a quoted string, else the value itself.
fn structured(v: &Value) -> Value {
    if let Value::String(s) = v {
        let t = s.trim_start();
        if t.starts_with('{') || t.starts_with('[') || t.starts_with('"') {
            if let Ok(parsed) = serde_json::from_str::<Value>(t) {
                return parsed;
            }
        }
    }
    v.clone()
}

/// An id: a non-empty string (a number written as its decimal text).
fn text_id(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64().filter(|x| x.is_finite()),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|x| x.is_finite()),
        _ => None,
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s
    }
}

/// `input.value` / `output.value`: text as is, JSON as JSON text with its mime type.
fn put_io(attrs: &mut Attributes, which: &str, v: &Value) {
    match v {
        Value::Null => {}
        Value::String(s) => {
            attrs.insert(format!("{which}.value"), json!(s));
        }
        other => {
            attrs.insert(format!("{which}.value"), json!(other.to_string()));
            attrs.insert(format!("{which}.mime_type"), json!("application/json"));
        }
    }
}

/// Chat messages: `[{role, content}]`, `{messages: […]}`, or one `{role, content}` message.
fn messages(v: &Value) -> Option<Vec<(Option<String>, Option<String>)>> {
    let list: Vec<&Value> = match v {
        Value::Array(items) => items.iter().collect(),
        Value::Object(o) => match o.get("messages") {
            Some(Value::Array(items)) => items.iter().collect(),
            _ if o.contains_key("role") && o.contains_key("content") => vec![v],
            _ => return None,
        },
        _ => return None,
    };
    if list.is_empty() || !list.iter().all(|m| m.get("role").is_some()) {
        return None;
    }
    Some(
        list.into_iter()
            .map(|m| {
                let role = m.get("role").and_then(Value::as_str).map(str::to_string);
                let content = match m.get("content") {
                    Some(Value::String(s)) => Some(s.clone()),
                    Some(Value::Array(parts)) => {
                        let texts: Vec<&str> = parts
                            .iter()
                            .filter(|p| {
                                p.get("type")
                                    .and_then(Value::as_str)
                                    .is_none_or(|t| t == "text")
                            })
                            .filter_map(|p| p.get("text").and_then(Value::as_str))
                            .collect();
                        (!texts.is_empty()).then(|| texts.join("\n"))
                    }
                    _ => None,
                };
                (role, content)
            })
            .collect(),
    )
}

fn put_messages(attrs: &mut Attributes, prefix: &str, msgs: &[(Option<String>, Option<String>)]) {
    for (i, (role, content)) in msgs.iter().enumerate() {
        if let Some(r) = role {
            attrs.insert(format!("{prefix}.{i}.message.role"), json!(r));
        }
        if let Some(c) = content {
            attrs.insert(format!("{prefix}.{i}.message.content"), json!(c));
        }
    }
}

/// Retrieved documents: `[{id | doc_id | document_id, content | page_content | text, score,
/// metadata}]` (or plain strings: content only), or `{documents: […]}`; each as the fields of
/// `retrieval.documents.{i}.document.*`. `None` when the output is not such a list.
fn documents(v: &Value) -> Option<Vec<BTreeMap<String, Value>>> {
    let items = match v {
        Value::Array(items) => items,
        Value::Object(o) => match o.get("documents") {
            Some(Value::Array(items)) => items,
            _ => return None,
        },
        _ => return None,
    };
    if items.is_empty() {
        return Some(Vec::new());
    }
    let mut out = Vec::new();
    for item in items {
        let mut d = BTreeMap::new();
        match item {
            Value::String(s) => {
                d.insert("content".into(), json!(s));
            }
            Value::Object(o) => {
                let pick =
                    |keys: &[&str]| keys.iter().find_map(|k| o.get(*k).filter(|v| !v.is_null()));
                if let Some(id) = pick(&["id", "doc_id", "document_id", "documentId"]) {
                    d.insert("id".into(), id.clone());
                }
                if let Some(c) = pick(&["content", "page_content", "pageContent", "text"]) {
                    d.insert("content".into(), c.clone());
                }
                if let Some(s) = pick(&["score", "relevance_score"]) {
                    d.insert("score".into(), s.clone());
                }
                if let Some(m) = pick(&["metadata"]) {
                    let mut flat = Attributes::new();
                    flatten_into("metadata", m, &mut flat);
                    d.extend(flat);
                }
                if d.is_empty() {
                    return None;
                }
            }
            _ => return None,
        }
        out.push(d);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conventions::{self, Notes, Role};

    const T: &str = "cdef-1234-5678-90ab";

    fn api_export() -> Value {
        json!({"data": [
            {"id": T, "timestamp": "2024-05-29T13:46:19.963Z", "name": "rag",
             "input": {"question": "How long do refunds take?"},
             "output": "14 days.", "metadata": {"intent": "refund"},
             "userId": "u1", "sessionId": "s1", "tags": ["beta"], "latency": 1.25,
             "htmlPath": "/project/p/traces/cdef-1234-5678-90ab", "observations": [], "scores": []},
            {"id": "o-ret", "traceId": T, "type": "RETRIEVER", "name": "search",
             "startTime": "2024-05-29T13:46:20.000Z", "endTime": "2024-05-29T13:46:20.120Z",
             "input": "refund window", "output": [
                {"id": "d1", "page_content": "Refunds take 14 days.", "score": 0.92, "metadata": {"tenant": "acme"}},
                {"doc_id": "d2", "text": "Shipping is free.", "score": 0.41}],
             "level": "DEFAULT", "parentObservationId": null},
            {"id": "o-gen", "traceId": T, "type": "GENERATION", "name": "answer",
             "startTime": "2024-05-29T13:46:20.150Z", "endTime": "2024-05-29T13:46:21.150Z",
             "completionStartTime": "2024-05-29T13:46:20.400Z", "model": "gpt-4o-mini",
             "input": [{"role": "system", "content": "Answer from the context."},
                       {"role": "user", "content": [{"type": "text", "text": "How long do refunds take?"}]}],
             "output": {"role": "assistant", "content": "14 days."},
             "usageDetails": {"input": 120, "output": 8, "total": 128},
             "usage": {"input": 1, "output": 1, "total": 2, "unit": "TOKENS"},
             "level": "DEFAULT", "statusMessage": null, "parentObservationId": null},
            {"id": "sc1", "traceId": T, "observationId": null, "name": "thumbs", "value": 0,
             "dataType": "NUMERIC", "source": "API", "comment": "wrong policy"},
            {"id": "sc2", "traceId": T, "observationId": "o-gen", "name": "correct",
             "value": 1, "dataType": "BOOLEAN", "source": "ANNOTATION"},
            {"id": "sc3", "traceId": T, "name": "tone", "value": 0, "stringValue": "polite",
             "dataType": "CATEGORICAL", "source": "EVAL"}
        ], "meta": {"page": 1}})
    }

    #[test]
    fn api_export_every_field() {
        assert!(looks_like(&api_export()));
        let mut r = LangfuseReader::new();
        r.read_document(&api_export(), "lf.json");
        let d = r.finish();
        assert!(d.summary.problems.is_empty(), "{:?}", d.summary);
        assert_eq!(d.summary.spans_read, 3);
        assert_eq!(d.spans.len(), 3);
        let root = &d.spans[0];
        assert_eq!(
            (root.span_id.as_str(), root.parent_span_id.as_deref()),
            (T, None)
        );
        assert_eq!(root.duration_ms(), Some(1250.0));
        assert_eq!(root.start_unix_nano, Some(1_716_990_379_963_000_000));
        let mut n = Notes::new();
        assert_eq!(
            conventions::io_value(root, "input", &mut n)
                .unwrap()
                .text(&["question"]),
            Some("How long do refunds take?")
        );
        let seg = conventions::segments(root, &mut n);
        assert_eq!(
            Value::Object(seg),
            json!({"intent": "refund", "session_id": "s1", "user_id": "u1", "tags": ["beta"]})
        );
        let ret = &d.spans[1];
        assert_eq!(ret.parent_span_id.as_deref(), Some(T));
        assert_eq!(conventions::role(ret), Role::Retriever);
        let docs =
            conventions::openinference_documents(ret, "retrieval.documents", &mut n).unwrap();
        assert_eq!(docs[0].id.as_deref(), Some("d1"));
        assert_eq!(docs[0].content.as_deref(), Some("Refunds take 14 days."));
        assert_eq!(docs[0].metadata.as_ref().unwrap()["tenant"], "acme");
        assert_eq!(docs[1].id.as_deref(), Some("d2"));
        assert_eq!(docs[1].score, Some(0.41));
        assert_eq!(
            conventions::retrieval_query(ret, &mut n).as_deref(),
            Some("refund window")
        );
        let gen = &d.spans[2];
        assert_eq!(conventions::role(gen), Role::Llm);
        let input = conventions::input_messages(gen, &mut n).unwrap();
        assert_eq!(
            input[1].content.as_deref(),
            Some("How long do refunds take?")
        );
        assert_eq!(
            conventions::output_messages(gen, &mut n).unwrap()[0]
                .content
                .as_deref(),
            Some("14 days.")
        );
        assert_eq!(conventions::model(gen).as_deref(), Some("gpt-4o-mini"));
        let t = conventions::tokens(gen, &mut n);
        assert_eq!(
            (t.input, t.output, t.total),
            (Some(120), Some(8), Some(128))
        );
        assert_eq!(conventions::ttft_ms(gen, &mut n), Some(250.0));
        assert!(n.is_empty(), "{n:?}");
        let fb: Vec<_> = d
            .feedback
            .iter()
            .map(|f| (f.feedback.name.as_str(), f.feedback.value.clone()))
            .collect();
        assert_eq!(
            fb,
            [
                ("thumbs", json!(0.0)),
                ("correct", json!(true)),
                ("tone", json!("polite"))
            ]
        );
        assert!(d.feedback[0].feedback.is_negative());
        assert_eq!(
            d.feedback[0].feedback.comment.as_deref(),
            Some("wrong policy")
        );
        assert_eq!(
            d.feedback[0].feedback.source.as_deref(),
            Some("langfuse:API")
        );
        assert_eq!(d.feedback[1].span_id.as_deref(), Some("o-gen"));
    }

    #[test]
    fn blob_csv_export_with_errors_and_a_synthesized_root() {
        let csv = "\
id,trace_id,parent_observation_id,type,name,start_time,end_time,completion_start_time,provided_model_name,input,output,usage_details,level,status_message,metadata,user_id,session_id,tags,trace_name
o1,t1,,SPAN,retrieve,2024-05-29 13:46:19.000000,2024-05-29 13:46:19.100000,,,question?,,,DEFAULT,,,u9,,,support-bot
o2,t1,,GENERATION,answer,2024-05-29 13:46:19.200000,2024-05-29 13:46:19.900000,2024-05-29 13:46:19.300000,gpt-4o,\"[{\"\"role\"\":\"\"user\"\",\"\"content\"\":\"\"question?\"\"}]\",an answer,\"{\"\"input\"\":\"\"10\"\",\"\"output\"\":4}\",ERROR,rate limited,\"{\"\"intent\"\":\"\"billing\"\"}\",u9,,,support-bot
o3,t1,o2,EVENT,log,not a time,,,,,,\"{\"\"input\"\":\"\"ten\"\"}\",DEFAULT,,,,,,
o4,,,SPAN,orphan,2024-05-29 13:46:19.000000,,,,,,,,,,,,,
only,two
";
        assert!(csv_header_looks_like(csv.lines().next().unwrap()));
        let mut r = LangfuseReader::new();
        r.read_csv(csv, "obs.csv");
        r.read_line(
            r#"{"id":"s1","trace_id":"t1","name":"thumbs","value":"1","data_type":"NUMERIC","source":"API"}"#,
            &Location {
                file: "scores.jsonl".into(),
                line: Some(1),
                byte_offset: None,
            },
        );
        r.read_line(
            r#"{"id":"s2","trace_id":"t404","name":"thumbs","value":1,"data_type":"NUMERIC"}"#,
            &Location {
                file: "scores.jsonl".into(),
                line: Some(2),
                byte_offset: None,
            },
        );
        let d = r.finish();
        let s = &d.summary;
        // 4 observations + 1 synthesized root read; o4 dropped (no trace id).
        assert_eq!(s.spans_read, 5);
        assert_eq!(s.spans_dropped["bad_id"], 1);
        assert_eq!(s.records_dropped_by["bad_csv_row"], 1);
        assert_eq!(s.problems["bad_timestamp"], 1);
        assert_eq!(s.problems["wrong_attribute_type"], 1);
        assert_eq!(s.problems["feedback_without_trace"], 1);
        let located: Vec<String> = s.first.iter().map(|p| p.at.to_string()).collect();
        assert_eq!(
            located,
            [
                "obs.csv:4",
                "obs.csv:4",
                "obs.csv:5",
                "obs.csv:6",
                "scores.jsonl:2"
            ]
        );
        let root = &d.spans[0];
        assert_eq!(root.name, "support-bot");
        assert_eq!(root.start_unix_nano, None);
        assert_eq!(root.str_attr("user.id"), Some("u9"));
        assert!(d.spans[1..3]
            .iter()
            .all(|x| x.parent_span_id.as_deref() == Some(root.span_id.as_str())));
        let gen = &d.spans[2];
        assert_eq!(gen.start_unix_nano, Some(1_716_990_379_200_000_000));
        assert_eq!(
            conventions::error_message(gen).as_deref(),
            Some("rate limited")
        );
        let mut n = Notes::new();
        let t = conventions::tokens(gen, &mut n);
        assert_eq!((t.input, t.output), (Some(10), Some(4)));
        assert_eq!(conventions::ttft_ms(gen, &mut n), Some(100.0));
        assert_eq!(conventions::model(gen).as_deref(), Some("gpt-4o"));
        assert_eq!(
            conventions::io_value(gen, "output", &mut n),
            Some(conventions::IoValue::Text("an answer".into()))
        );
        assert_eq!(conventions::segments(gen, &mut n)["intent"], "billing");
        assert!(n.is_empty(), "{n:?}");
        assert_eq!(d.feedback.len(), 1);
        assert_eq!(d.feedback[0].feedback.value, json!(1.0));
    }

    #[test]
    fn single_top_level_observation_is_the_root_and_shapes_are_told_apart() {
        let mut r = LangfuseReader::new();
        let at = |l| Location {
            file: "x.jsonl".into(),
            line: Some(l),
            byte_offset: None,
        };
        r.read_line(r#"{"id":"a","traceId":"t","type":"CHAIN","startTime":"2024-05-29T13:46:19Z","endTime":"2024-05-29T13:46:20+00:00","input":"q","output":"a"}"#, &at(1));
        r.read_line(r#"{"id":"b","traceId":"t","type":"EMBEDDING","parentObservationId":"a","startTime":"2024-05-29T13:46:19.5Z"}"#, &at(2));
        r.read_line(r#"{"hello":1}"#, &at(3));
        r.read_line(r#"not json"#, &at(4));
        r.read_line(
            r#"{"id":"s","traceId":"t","name":"x","value":null,"dataType":"NUMERIC"}"#,
            &at(5),
        );
        let d = r.finish();
        assert_eq!(d.spans.len(), 2);
        assert_eq!(d.spans[0].parent_span_id, None);
        assert_eq!(d.spans[0].duration_ms(), Some(1000.0));
        assert_eq!(conventions::role(&d.spans[1]), Role::Embedding);
        assert_eq!(d.summary.records_dropped_by["not_langfuse"], 1);
        assert_eq!(d.summary.records_dropped_by["not_json"], 1);
        assert_eq!(d.summary.problems["bad_feedback"], 1);
        assert!(!looks_like(&json!({"resourceSpans": []})));
        assert!(!looks_like(&json!({"context": {"span_id": "x"}})));
    }
}
