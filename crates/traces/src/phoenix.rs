//! Arize Phoenix exports: spans and their annotations (the feedback), decoded into
//! [`Span`]s and [`TraceFeedback`].
//!
//! What Phoenix writes, and where each shape is documented:
//! - **Phoenix span JSON** — `GET /v1/projects/{project}/spans` (Phoenix's REST API, the
//!   `Span` model of `src/phoenix/server/api/routers/v1/spans.py`): `{"data": [span…],
//!   "next_cursor"}`, each span `{id, name, context: {trace_id, span_id}, span_kind,
//!   parent_id, start_time, end_time, status_code, status_message, attributes, events}` with
//!   ISO 8601 times (`2024-01-01T12:00:00.123456+00:00`), `status_code` `OK`/`ERROR`/`UNSET`,
//!   attributes flattened to dotted keys (`llm.token_count.prompt`,
//!   `retrieval.documents.0.document.id`) and `openinference.span.kind` moved to `span_kind`.
//!   The page, its `data` array, a JSON array of spans, or one span per line are read.
//! - **The spans dataframe** — `phoenix.client.Client().spans.get_spans_dataframe()` written
//!   with `df.to_json(orient="records", lines=True, date_format="iso")` (Phoenix 20 keeps
//!   `context.span_id` as a column beside the index; older versions need `reset_index()`
//!   first; without `date_format` pandas writes epoch milliseconds, read as such): one row per span with
//!   columns `context.span_id`, `context.trace_id`, `parent_id`, `name`, `span_kind`,
//!   `start_time`, `end_time`, `status_code`, `status_message`, `events` and `attributes.*`
//!   (nested lists of objects such as `attributes.retrieval.documents` or
//!   `attributes.llm.input_messages` are flattened by index; `null` cells are absent
//!   attributes).
//! - **OTLP-shaped spans** — `GET /v1/projects/{project}/spans/otlpv1` (`OtlpSpan`: snake_case
//!   OTLP span JSON, `trace_id`, `span_id`, `parent_span_id`, `start_time_unix_nano`,
//!   `attributes: [{key, value: {string_value…}}]`, `status: {code, message}`), each span read
//!   by the OTLP reader ([`crate::otlp`]); `TracesData` documents too.
//! - **Annotations** — `GET /v1/projects/{project}/span_annotations` and
//!   `…/trace_annotations` (`SpanAnnotation`: `{span_id | trace_id, name, annotator_kind
//!   (HUMAN, LLM, CODE), result: {label, score, explanation}, metadata, identifier, source}`),
//!   and the annotations dataframe (`span_id`, `name`, `annotator_kind`, `label` / `score` /
//!   `explanation` or `result.label` / …). Each is one [`Feedback`]: its value the score (a
//!   number) or else the label, its comment the explanation, its source `phoenix:<annotator
//!   kind>`. A user's thumbs logged as an annotation named `thumbs` (or `user_feedback`)
//!   reads as [`Feedback::is_negative`] says.
//!
//! A reader gathers a whole export (spans and annotations may be in any file and any order:
//! a span annotation names only its span) and [`PhoenixReader::finish`] hands it over; memory
//! follows the export, not a window (stream OTLP files for very large volumes).
//!
//! Bad input (each counted and located, see [`crate::problems`]): a record that is neither a
//! Phoenix span nor an annotation (`not_phoenix`, input record dropped), a span without a
//! valid trace or span id (`bad_id`, dropped), an unreadable time (`bad_timestamp`, kept
//! without it), a wrong status or attributes of the wrong shape (`wrong_attribute_type`,
//! kept), an annotation without a name or a value (`bad_feedback`), one whose span or trace is
//! not in the input (`feedback_without_trace`): noted and left out.

use std::collections::{HashMap, HashSet};

use oloproof_core::production::Feedback;
use serde_json::{json, Map, Value};

use crate::otlp;
use crate::problems::{ImportSummary, Problem};
use crate::span::{
    Attributes, Decoded, Location, Span, SpanEvent, SpanStatus, StatusCode, TraceFeedback,
};
use crate::timestamp::parse_iso8601;

/// Whether a JSON record (one span, one annotation, a page of them, or an array) is a Phoenix
/// export: a span with `context.span_id` (nested or as a dataframe column), an annotation
/// with `annotator_kind`, or OTLP span objects outside `TracesData` (only Phoenix's
/// `spans/otlpv1` writes those). Used by `--format auto`.
pub fn looks_like(value: &Value) -> bool {
    match first_record(value) {
        Some(Value::Object(o)) => {
            o.get("context").is_some_and(|c| c.get("span_id").is_some())
                || o.contains_key("context.span_id")
                || o.contains_key("annotator_kind")
                || (o.contains_key("span_id") && o.contains_key("start_time_unix_nano"))
                || (o.contains_key("spanId") && o.contains_key("startTimeUnixNano"))
        }
        _ => false,
    }
}

/// The first record of a page (`{"data": […]}`), an array, or the value itself.
pub(crate) fn first_record(value: &Value) -> Option<&Value> {
    match value {
        Value::Array(items) => items.first().and_then(first_record),
        Value::Object(o) => match o.get("data") {
            Some(Value::Array(items)) => items.first(),
            _ => Some(value),
        },
        _ => None,
    }
}

/// A span annotation waiting for its span's trace id.
#[derive(Debug, Clone)]
struct Annotation {
    span_id: Option<String>,
    trace_id: Option<String>,
    feedback: Feedback,
    at: Location,
}

/// Gathers a Phoenix export (see the module doc).
#[derive(Debug, Default)]
pub struct PhoenixReader {
    decoded: Decoded,
    annotations: Vec<Annotation>,
}

impl PhoenixReader {
    /// An empty reader.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads a whole JSON document: a REST page (`{"data": […]}`, element `i` located as
    /// `file[i]`), an array, `TracesData`, or one record.
    pub fn read_document(&mut self, value: &Value, file: &str) {
        match crate::span::export_items(value) {
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.read_record(item, &Location::element(file, i));
                }
            }
            None => {
                let at = Location {
                    file: file.to_string(),
                    line: None,
                    byte_offset: None,
                };
                self.read_record(value, &at);
            }
        }
    }

    /// Reads one JSON Lines line (a record, or a page of records); blank lines are skipped.
    pub fn read_line(&mut self, line: &str, at: &Location) {
        let line = line.trim();
        if line.is_empty() {
            return;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(value) => match &value {
                Value::Array(items) => items.iter().for_each(|i| self.read_record(i, at)),
                Value::Object(o) if o.get("data").is_some_and(Value::is_array) => {
                    if let Some(Value::Array(items)) = o.get("data") {
                        items.iter().for_each(|i| self.read_record(i, at));
                    }
                }
                _ => self.read_record(&value, at),
            },
            Err(e) => self.decoded.summary.drop_record(Problem {
                kind: "not_json".into(),
                at: at.clone(),
                message: format!("not JSON ({e}): each line of a Phoenix JSON Lines export must be one span or annotation object"),
            }),
        }
    }

    /// Reads one record: a Phoenix span, an OTLP span, `TracesData`, or an annotation.
    pub fn read_record(&mut self, value: &Value, at: &Location) {
        let Some(obj) = value.as_object() else {
            self.not_phoenix(at, format!("a JSON {}", type_name(value)));
            return;
        };
        if obj.contains_key("resourceSpans") || obj.contains_key("resource_spans") {
            let first = self.decoded.spans.len();
            otlp::decode_json_value(value, at, &mut self.decoded);
            self.regroup_from(first);
        } else if obj.contains_key("context") || obj.contains_key("context.span_id") {
            self.decoded.summary.spans_read += 1;
            if let Some(span) = phoenix_span(obj, at, &mut self.decoded.summary) {
                self.decoded.spans.push(span);
            }
        } else if obj.contains_key("annotator_kind")
            || obj.contains_key("result")
            || obj.contains_key("result.label")
            || obj.contains_key("result.score")
        {
            match annotation(obj, at) {
                Ok(a) => self.annotations.push(a),
                Err(message) => self.decoded.summary.note(Problem {
                    kind: "bad_feedback".into(),
                    at: at.clone(),
                    message,
                }),
            }
        } else if (obj.contains_key("span_id") || obj.contains_key("spanId"))
            && (obj.contains_key("trace_id") || obj.contains_key("traceId"))
        {
            // One OTLP span as Phoenix's `spans/otlpv1` writes it: read by the OTLP reader.
            let wrapped = json!({"resourceSpans": [{"scopeSpans": [{"spans": [value]}]}]});
            let first = self.decoded.spans.len();
            otlp::decode_json_value(&wrapped, at, &mut self.decoded);
            self.regroup_from(first);
        } else {
            let keys: Vec<&str> = obj.keys().map(String::as_str).take(6).collect();
            self.not_phoenix(at, format!("an object with keys {}", keys.join(", ")));
        }
    }

    /// Phoenix flattens a JSON `metadata` attribute into dotted keys in every export
    /// (`metadata.intent`, `retrieval.documents.0.document.metadata.topic`), its OTLP-shaped
    /// ones included: the spans read from index `first` on get their `metadata` objects back.
    fn regroup_from(&mut self, first: usize) {
        for span in &mut self.decoded.spans[first..] {
            regroup_metadata(&mut span.attributes);
        }
    }

    fn not_phoenix(&mut self, at: &Location, what: String) {
        self.decoded.summary.drop_record(Problem {
            kind: "not_phoenix".into(),
            at: at.clone(),
            message: format!(
                "not a Phoenix span or annotation: {what} (a span has `context.span_id`, an annotation `annotator_kind` and `result`)"
            ),
        });
    }

    /// The spans and feedback read, each annotation given its span's trace.
    pub fn finish(self) -> Decoded {
        let mut out = self.decoded;
        let mut trace_of: HashMap<&str, &str> = HashMap::new();
        let mut traces: HashSet<&str> = HashSet::new();
        for s in &out.spans {
            trace_of.entry(&s.span_id).or_insert(&s.trace_id);
            traces.insert(&s.trace_id);
        }
        let mut feedback = Vec::new();
        let mut problems = Vec::new();
        for a in self.annotations {
            let trace = match (&a.trace_id, &a.span_id) {
                (Some(t), _) => traces.contains(t.as_str()).then(|| t.clone()),
                (None, Some(s)) => trace_of.get(s.as_str()).map(|t| t.to_string()),
                (None, None) => None,
            };
            match trace {
                Some(trace_id) => feedback.push(TraceFeedback {
                    trace_id,
                    span_id: a.span_id,
                    feedback: a.feedback,
                }),
                None => problems.push(Problem {
                    kind: "feedback_without_trace".into(),
                    at: a.at,
                    message: format!(
                        "annotation `{}` is on {} which is not in the input; left out (export the annotated spans too)",
                        a.feedback.name,
                        match (a.trace_id, a.span_id) {
                            (Some(t), _) => format!("trace {t}"),
                            (None, Some(s)) => format!("span {s}"),
                            (None, None) => "nothing".into(),
                        }
                    ),
                }),
            }
        }
        for p in problems {
            out.summary.note(p);
        }
        out.feedback.extend(feedback);
        out
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `obj[key]`, a null being absent.
pub(crate) fn get<'a>(obj: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a Value> {
    keys.iter()
        .find_map(|k| obj.get(*k).filter(|v| !v.is_null()))
}

/// A timestamp: ISO 8601 text, or a number of epoch milliseconds (pandas' `to_json`
/// default).
pub(crate) fn time_of(v: &Value) -> Result<u64, String> {
    match v {
        Value::String(s) => parse_iso8601(s).map_err(|e| e.to_string()),
        Value::Number(n) => match (n.as_u64(), n.as_f64()) {
            (Some(ms), _) => ms
                .checked_mul(1_000_000)
                .ok_or_else(|| format!("{n} is not a time in epoch milliseconds")),
            // Whole and fractional milliseconds apart: f64 nanoseconds since 1970 would lose
            // the last digits.
            (None, Some(ms)) if (0.0..1.8e13).contains(&ms) => {
                let whole = ms.trunc();
                Ok(whole as u64 * 1_000_000 + ((ms - whole) * 1e6).round() as u64)
            }
            _ => Err(format!("{n} is not a time in epoch milliseconds")),
        },
        other => Err(format!(
            "a time must be ISO 8601 text or epoch milliseconds, got {other}"
        )),
    }
}

/// Flattens `value` under `prefix` into dotted keys, as OpenInference attributes are written:
/// objects by key, lists of objects by index (`retrieval.documents.0.document.id`); lists of
/// scalars stay lists; `null` is absent; a `metadata` object stays whole (the conventions
/// read it as one value).
pub(crate) fn flatten_into(prefix: &str, value: &Value, out: &mut Attributes) {
    let last = prefix.rsplit('.').next().unwrap_or(prefix);
    match value {
        Value::Null => {}
        Value::Object(o) if last != "metadata" && !prefix.is_empty() => {
            for (k, v) in o {
                flatten_into(&format!("{prefix}.{k}"), v, out);
            }
        }
        Value::Object(o) if prefix.is_empty() => {
            for (k, v) in o {
                flatten_into(k, v, out);
            }
        }
        Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_object) => {
            for (i, v) in items.iter().enumerate() {
                flatten_into(&format!("{prefix}.{i}"), v, out);
            }
        }
        other => {
            out.insert(prefix, other.clone());
        }
    }
}

/// Regroups keys below a `metadata` segment (`metadata.intent`,
/// `retrieval.documents.0.document.metadata.tenant`, as a fully flattened export writes them)
/// into the `metadata` object the conventions read.
pub(crate) fn regroup_metadata(attrs: &mut Attributes) {
    let keys: Vec<String> = attrs
        .keys()
        .filter(|k| k.starts_with("metadata.") || k.contains(".metadata."))
        .map(str::to_string)
        .collect();
    for key in keys {
        let split = if let Some(rest) = key.strip_prefix("metadata.") {
            ("metadata".to_string(), rest.to_string())
        } else if let Some(pos) = key.find(".metadata.") {
            (
                key[..pos + ".metadata".len()].to_string(),
                key[pos + ".metadata.".len()..].to_string(),
            )
        } else {
            continue;
        };
        let (head, tail) = split;
        if attrs.get(&head).is_some_and(|v| !v.is_object()) {
            continue;
        }
        if let Some(v) = attrs.remove(&key) {
            if let Value::Object(m) = attrs.get_or_insert_with(head, || Value::Object(Map::new())) {
                m.insert(tail, v);
            }
        }
    }
}

/// One Phoenix span (REST `Span` or a dataframe row), or `None` (counted as dropped).
fn phoenix_span(
    obj: &Map<String, Value>,
    at: &Location,
    summary: &mut ImportSummary,
) -> Option<Span> {
    let name = obj
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let what = if name.is_empty() {
        "a span".to_string()
    } else {
        format!("span `{name}`")
    };
    let ctx = |field: &str| -> Option<&Value> {
        obj.get("context")
            .and_then(|c| c.get(field))
            .or_else(|| obj.get(&format!("context.{field}")))
            .filter(|v| !v.is_null())
    };
    let id = |field: &str, bytes: usize| -> Result<String, String> {
        match ctx(field) {
            None => Err(format!("{what} has no `context.{field}`")),
            Some(Value::String(s)) => match otlp::decode_id(s, bytes) {
                Ok(Some(h)) => Ok(h),
                Ok(None) => Err(format!("{what} has an empty `context.{field}`")),
                Err(e) => Err(format!("{what}: `context.{field}` {e}")),
            },
            Some(other) => Err(format!(
                "{what}: `context.{field}` must be a string, got {other}"
            )),
        }
    };
    let (trace_id, span_id) = match (id("trace_id", 16), id("span_id", 8)) {
        (Ok(t), Ok(s)) => (t, s),
        (Err(e), _) | (_, Err(e)) => {
            summary.drop_span(Problem {
                kind: "bad_id".into(),
                at: at.clone(),
                message: format!("{e}: it cannot be placed in a trace"),
            });
            return None;
        }
    };
    let mut note = |kind: &str, message: String| {
        summary.note(Problem {
            kind: kind.into(),
            at: at.clone(),
            message: format!("{what}: {message}"),
        })
    };
    let parent_span_id = match get(obj, &["parent_id", "context.parent_id"]) {
        None => None,
        Some(Value::String(p)) => match otlp::decode_id(p, 8) {
            Ok(p) => p,
            Err(e) => {
                note(
                    "bad_id",
                    format!("`parent_id` {e}; kept without its parent"),
                );
                None
            }
        },
        Some(other) => {
            note(
                "bad_id",
                format!("`parent_id` must be a string, got {other}; kept without its parent"),
            );
            None
        }
    };
    let mut time = |key: &str| -> Option<u64> {
        let v = get(obj, &[key])?;
        match time_of(v) {
            Ok(t) => Some(t),
            Err(e) => {
                note(
                    "bad_timestamp",
                    format!("`{key}`: {e}; its latency is unknown"),
                );
                None
            }
        }
    };
    let start_unix_nano = time("start_time");
    let end_unix_nano = time("end_time");

    let mut attributes = Attributes::new();
    match get(obj, &["attributes"]) {
        None => {}
        Some(v @ Value::Object(_)) => flatten_into("", v, &mut attributes),
        Some(other) => note(
            "wrong_attribute_type",
            format!(
                "`attributes` must be an object, got a {}; left out",
                type_name(other)
            ),
        ),
    }
    for (k, v) in obj {
        if let Some(key) = k.strip_prefix("attributes.") {
            flatten_into(key, v, &mut attributes);
        }
    }
    regroup_metadata(&mut attributes);
    if let Some(kind) = get(obj, &["span_kind"]) {
        match kind.as_str() {
            Some(k) if k.eq_ignore_ascii_case("UNKNOWN") || k.is_empty() => {}
            Some(k) => {
                attributes
                    .insert_if_absent("openinference.span.kind", Value::String(k.to_string()));
            }
            None => note(
                "wrong_attribute_type",
                format!("`span_kind` must be a string, got {kind}"),
            ),
        }
    }
    let status = match get(obj, &["status_code"]) {
        None => None,
        Some(v) => {
            let code = match v.as_str().map(str::to_ascii_uppercase).as_deref() {
                Some("OK") | Some("STATUS_CODE_OK") => Some(StatusCode::Ok),
                Some("ERROR") | Some("STATUS_CODE_ERROR") => Some(StatusCode::Error),
                Some("UNSET") | Some("STATUS_CODE_UNSET") | Some("") => Some(StatusCode::Unset),
                _ => {
                    note(
                        "wrong_attribute_type",
                        format!("`status_code` must be OK, ERROR or UNSET, got {v}"),
                    );
                    None
                }
            };
            code.map(|code| SpanStatus {
                code,
                message: get(obj, &["status_message"])
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            })
        }
    };
    let mut events = Vec::new();
    match get(obj, &["events"]) {
        None => {}
        Some(Value::Array(items)) => {
            for e in items {
                let Some(eo) = e.as_object() else {
                    note(
                        "wrong_attribute_type",
                        format!("an event must be an object, got {e}; left out"),
                    );
                    continue;
                };
                let mut attrs = Attributes::new();
                if let Some(a) = get(eo, &["attributes"]) {
                    flatten_into("", a, &mut attrs);
                }
                let time_unix_nano = match get(eo, &["timestamp", "time"]) {
                    None => None,
                    Some(v) => match time_of(v) {
                        Ok(t) => Some(t),
                        Err(e) => {
                            note("bad_timestamp", format!("an event's `timestamp`: {e}"));
                            None
                        }
                    },
                };
                events.push(SpanEvent {
                    name: get(eo, &["name"])
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    time_unix_nano,
                    attributes: attrs,
                });
            }
        }
        Some(other) => note(
            "wrong_attribute_type",
            format!(
                "`events` must be a list, got a {}; left out",
                type_name(other)
            ),
        ),
    }
    Some(Span {
        trace_id,
        span_id,
        parent_span_id,
        name,
        kind: None,
        start_unix_nano,
        end_unix_nano,
        attributes,
        events,
        status,
        resource: Default::default(),
        at: at.clone(),
    })
}

/// One annotation, or why it is unusable (a document annotation — a judgment of one retrieved
/// document, not of the answer — is left out with a note too).
fn annotation(obj: &Map<String, Value>, at: &Location) -> Result<Annotation, String> {
    let name = get(obj, &["name", "annotation_name"])
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| "an annotation without a string `name`; left out".to_string())?;
    if get(obj, &["document_position"]).is_some() {
        return Err(format!(
            "annotation `{name}` is a document annotation (a judgment of one retrieved document, not of the answer); left out"
        ));
    }
    let id = |keys: &[&str], bytes: usize| -> Result<Option<String>, String> {
        match get(obj, keys) {
            None => Ok(None),
            Some(Value::String(s)) => otlp::decode_id(s, bytes)
                .map_err(|e| format!("annotation `{name}`: `{}` {e}; left out", keys[0])),
            Some(other) => Err(format!(
                "annotation `{name}`: `{}` must be a string, got {other}; left out",
                keys[0]
            )),
        }
    };
    let span_id = id(&["span_id", "context.span_id"], 8)?;
    let trace_id = id(&["trace_id", "context.trace_id"], 16)?;
    if span_id.is_none() && trace_id.is_none() {
        return Err(format!(
            "annotation `{name}` names neither a `span_id` nor a `trace_id`; left out"
        ));
    }
    let result = get(obj, &["result"]).and_then(Value::as_object);
    let field = |f: &str| -> Option<&Value> {
        result
            .and_then(|r| r.get(f))
            .filter(|v| !v.is_null())
            .or_else(|| {
                let flat = format!("result.{f}");
                get(obj, &[flat.as_str(), f])
            })
    };
    let value = match (field("score"), field("label")) {
        (Some(Value::Number(n)), _) if n.as_f64().is_some_and(f64::is_finite) => {
            Value::Number(n.clone())
        }
        (Some(Value::String(s)), _) if s.trim().parse::<f64>().is_ok_and(f64::is_finite) => {
            json!(s.trim().parse::<f64>().unwrap_or_default())
        }
        (Some(other), _) => {
            return Err(format!(
                "annotation `{name}`: `score` must be a number, got {other}; left out"
            ))
        }
        (None, Some(Value::String(l))) => Value::String(l.clone()),
        (None, Some(other)) => {
            return Err(format!(
                "annotation `{name}`: `label` must be a string, got {other}; left out"
            ))
        }
        (None, None) => {
            return Err(format!(
                "annotation `{name}` has neither a score nor a label; left out"
            ))
        }
    };
    let kind = get(obj, &["annotator_kind"])
        .and_then(Value::as_str)
        .unwrap_or("HUMAN");
    Ok(Annotation {
        span_id,
        trace_id,
        feedback: Feedback {
            name: name.to_string(),
            value,
            comment: field("explanation")
                .and_then(Value::as_str)
                .map(str::to_string),
            source: Some(format!("phoenix:{kind}")),
        },
        at: at.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conventions::{self, Notes, Role};

    const T: &str = "a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4";

    fn at(line: usize) -> Location {
        Location {
            file: "spans.jsonl".into(),
            line: Some(line),
            byte_offset: None,
        }
    }

    fn rest_span() -> Value {
        json!({
            "id": "U3BhbjoxMjM=",
            "name": "retrieve",
            "context": {"trace_id": T, "span_id": "1a2b3c4d5e6f7a8b"},
            "span_kind": "RETRIEVER",
            "parent_id": "00000000000000aa",
            "start_time": "2024-01-01T12:00:00.250000+00:00",
            "end_time": "2024-01-01T12:00:00.400Z",
            "status_code": "ERROR",
            "status_message": "index timeout",
            "attributes": {
                "input.value": "refund window?",
                "retrieval.documents.0.document.id": "d1",
                "retrieval.documents.0.document.score": 0.9,
                "retrieval.documents.0.document.metadata.tenant": "acme",
                "retrieval.documents.1.document.id": "d2",
                "metadata.intent": "refund",
                "tag.tags": ["beta"]
            },
            "events": [{"name": "exception", "timestamp": "2024-01-01T12:00:00.399Z",
                        "attributes": {"exception.message": "timeout"}}]
        })
    }

    #[test]
    fn rest_span_every_field() {
        let mut r = PhoenixReader::new();
        r.read_line(&rest_span().to_string(), &at(1));
        let d = r.finish();
        assert!(d.summary.problems.is_empty(), "{:?}", d.summary);
        let s = &d.spans[0];
        assert_eq!(s.trace_id, T);
        assert_eq!(s.span_id, "1a2b3c4d5e6f7a8b");
        assert_eq!(s.parent_span_id.as_deref(), Some("00000000000000aa"));
        assert_eq!(s.name, "retrieve");
        assert_eq!(s.start_unix_nano, Some(1_704_110_400_250_000_000));
        assert_eq!(s.duration_ms(), Some(150.0));
        assert_eq!(conventions::role(s), Role::Retriever);
        assert_eq!(s.status.as_ref().unwrap().code, StatusCode::Error);
        assert_eq!(
            conventions::error_message(s).as_deref(),
            Some("index timeout")
        );
        assert_eq!(s.events[0].time_unix_nano, Some(1_704_110_400_399_000_000));
        let mut n = Notes::new();
        let docs = conventions::openinference_documents(s, "retrieval.documents", &mut n).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].metadata.as_ref().unwrap()["tenant"], "acme");
        assert_eq!(
            conventions::segments(s, &mut n).get("intent"),
            Some(&json!("refund"))
        );
        assert_eq!(
            conventions::retrieval_query(s, &mut n).as_deref(),
            Some("refund window?")
        );
        assert!(n.is_empty(), "{n:?}");
        assert_eq!(d.summary.spans_read, 1);
    }

    #[test]
    fn dataframe_rows_with_nested_lists_and_epoch_ms() {
        let row = json!({
            "context.span_id": "2a2b3c4d5e6f7a8b", "context.trace_id": T,
            "parent_id": null, "name": "llm", "span_kind": "LLM",
            "start_time": 1704110400000i64, "end_time": 1704110400500.5,
            "status_code": "OK", "status_message": "", "events": [],
            "attributes.llm.input_messages": [
                {"message.role": "system", "message.content": "be brief"},
                {"message.role": "user", "message.content": "hi"}],
            "attributes.llm.output_messages": [{"message.role": "assistant", "message.content": "hello"}],
            "attributes.llm.token_count.prompt": 12.0,
            "attributes.llm.token_count.completion": 3,
            "attributes.retrieval.documents": null,
            "attributes.metadata": {"intent": "greet"}
        });
        let mut r = PhoenixReader::new();
        r.read_document(&json!([row]), "df.json");
        let d = r.finish();
        assert!(d.summary.problems.is_empty(), "{:?}", d.summary);
        let s = &d.spans[0];
        assert_eq!(s.parent_span_id, None);
        assert_eq!(s.end_unix_nano, Some(1_704_110_400_500_500_000));
        let mut n = Notes::new();
        assert_eq!(
            conventions::input_messages(s, &mut n).unwrap()[1]
                .content
                .as_deref(),
            Some("hi")
        );
        assert_eq!(
            conventions::output_messages(s, &mut n).unwrap()[0]
                .content
                .as_deref(),
            Some("hello")
        );
        let t = conventions::tokens(s, &mut n);
        assert_eq!((t.input, t.output), (Some(12), Some(3)));
        assert_eq!(conventions::segments(s, &mut n)["intent"], "greet");
        assert!(!s.attributes.contains_key("retrieval.documents"));
        assert!(n.is_empty(), "{n:?}");
    }

    #[test]
    fn otlp_shaped_page_goes_through_the_otlp_reader() {
        let page = json!({"data": [{
            "trace_id": T, "span_id": "3a2b3c4d5e6f7a8b", "parent_span_id": null,
            "name": "rag", "start_time_unix_nano": 1704110400000000000u64,
            "end_time_unix_nano": 1704110401000000000u64,
            "attributes": [{"key": "input.value", "value": {"string_value": "q?"}},
                           {"key": "openinference.span.kind", "value": {"string_value": "CHAIN"}}],
            "status": {"code": 1, "message": null}
        }], "next_cursor": null});
        assert!(looks_like(&page));
        let mut r = PhoenixReader::new();
        r.read_document(&page, "otlp.json");
        let d = r.finish();
        assert_eq!(d.summary.spans_read, 1);
        assert_eq!(d.spans[0].str_attr("input.value"), Some("q?"));
        assert_eq!(d.spans[0].duration_ms(), Some(1000.0));
        assert_eq!(d.spans[0].at.file, "otlp.json[0]");
    }

    #[test]
    fn annotations_become_feedback_in_any_order() {
        let mut r = PhoenixReader::new();
        r.read_document(
            &json!({"data": [
                {"span_id": "1a2b3c4d5e6f7a8b", "name": "thumbs", "annotator_kind": "HUMAN",
                 "result": {"label": "down", "score": 0, "explanation": "wrong policy"},
                 "metadata": {}, "identifier": "", "source": "APP"},
                {"trace_id": T, "name": "correctness", "annotator_kind": "LLM",
                 "result": {"label": "incorrect", "score": null, "explanation": null}},
                {"span_id": "ffffffffffffffff", "name": "thumbs", "annotator_kind": "HUMAN",
                 "result": {"score": 1}},
                {"span_id": "1a2b3c4d5e6f7a8b", "name": "empty", "annotator_kind": "CODE",
                 "result": {"explanation": "only words"}},
                {"span_id": "1a2b3c4d5e6f7a8b", "name": "relevance", "annotator_kind": "LLM",
                 "document_position": 0, "result": {"score": 1}}
            ]}),
            "annotations.json",
        );
        // The span after its annotations (another file).
        r.read_line(&rest_span().to_string(), &at(1));
        let d = r.finish();
        assert_eq!(d.feedback.len(), 2);
        let thumbs = &d.feedback[0];
        assert_eq!(thumbs.trace_id, T);
        assert_eq!(thumbs.span_id.as_deref(), Some("1a2b3c4d5e6f7a8b"));
        assert_eq!(thumbs.feedback.value, json!(0));
        assert!(thumbs.feedback.is_negative());
        assert_eq!(thumbs.feedback.comment.as_deref(), Some("wrong policy"));
        assert_eq!(thumbs.feedback.source.as_deref(), Some("phoenix:HUMAN"));
        assert_eq!(d.feedback[1].feedback.value, json!("incorrect"));
        assert_eq!(d.summary.problems["bad_feedback"], 2);
        assert_eq!(d.summary.problems["feedback_without_trace"], 1);
        let unknown = d
            .summary
            .first
            .iter()
            .find(|p| p.kind == "feedback_without_trace")
            .unwrap();
        assert_eq!(unknown.at.file, "annotations.json[2]");
        assert!(unknown.message.contains("ffffffffffffffff"));
    }

    #[test]
    fn bad_records_are_counted_and_located() {
        let mut r = PhoenixReader::new();
        r.read_line("{not json", &at(1));
        r.read_line(r#"{"hello": "world"}"#, &at(2));
        let mut no_id = rest_span();
        no_id["context"]["span_id"] = json!("xyz");
        r.read_line(&no_id.to_string(), &at(3));
        let mut bad_time = rest_span();
        bad_time["start_time"] = json!("yesterday");
        bad_time["status_code"] = json!("MAYBE");
        bad_time["context"]["span_id"] = json!("4a2b3c4d5e6f7a8b");
        r.read_line(&bad_time.to_string(), &at(4));
        r.read_line("", &at(5));
        let d = r.finish();
        let s = &d.summary;
        assert_eq!(s.records_dropped_by["not_json"], 1);
        assert_eq!(s.records_dropped_by["not_phoenix"], 1);
        assert_eq!(s.spans_read, 2);
        assert_eq!(s.spans_dropped["bad_id"], 1);
        assert_eq!(d.spans.len(), 1);
        assert_eq!(d.spans[0].start_unix_nano, None);
        assert_eq!(s.problems["bad_timestamp"], 1);
        assert_eq!(s.problems["wrong_attribute_type"], 1);
        let lines: Vec<_> = s.first.iter().map(|p| p.at.to_string()).collect();
        assert_eq!(
            lines,
            [
                "spans.jsonl:1",
                "spans.jsonl:2",
                "spans.jsonl:3",
                "spans.jsonl:4",
                "spans.jsonl:4"
            ]
        );
        assert!(s.first[2].message.contains("context.span_id"));
        assert!(s.first[3].message.contains("yesterday"));
    }
}
