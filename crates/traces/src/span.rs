//! The one span model every reader decodes into.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::attributes::Attributes;

/// One span, as any source recorded it: OTLP's fields, ids as lower-case hex.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Span {
    /// Trace id, lower-case hex (32 digits for OTLP; a source's own id otherwise).
    pub trace_id: String,
    /// Span id, lower-case hex (16 digits for OTLP).
    pub span_id: String,
    /// The parent's span id; `None` for a root span.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_span_id: Option<String>,
    /// The span name.
    pub name: String,
    /// OTLP `SpanKind` as its short name (`internal`, `server`, `client`, `producer`,
    /// `consumer`), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Start time, nanoseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_unix_nano: Option<u64>,
    /// End time, nanoseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_unix_nano: Option<u64>,
    /// Attributes, flattened to JSON values: strings, numbers, booleans, arrays; OTLP
    /// `kvlistValue`s as objects; `bytesValue` as its base64 text.
    #[serde(default)]
    pub attributes: Attributes,
    /// Events (exceptions, OpenTelemetry GenAI content events), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<SpanEvent>,
    /// The status, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<SpanStatus>,
    /// The resource's attributes (`service.name`, …), shared by every span of the resource
    /// (a line of 64 spans holds one map, not 64 copies).
    #[serde(default, skip_serializing_if = "is_empty_map")]
    pub resource: std::sync::Arc<Attributes>,
    /// Where the span was read from, for messages.
    #[serde(default)]
    pub at: Location,
}

impl Span {
    /// Duration in milliseconds, when both times are known and in order.
    pub fn duration_ms(&self) -> Option<f64> {
        let (s, e) = (self.start_unix_nano?, self.end_unix_nano?);
        (e >= s).then(|| (e - s) as f64 / 1e6)
    }

    /// A string attribute.
    pub fn str_attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key)?.as_str()
    }
}

/// A span event.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SpanEvent {
    /// The event name (`exception`, `gen_ai.user.message`, …).
    pub name: String,
    /// Nanoseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_unix_nano: Option<u64>,
    /// Attributes, as for [`Span::attributes`].
    #[serde(default)]
    pub attributes: Attributes,
}

/// OTLP `Status`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SpanStatus {
    /// The code.
    pub code: StatusCode,
    /// The message, empty when none.
    #[serde(default)]
    pub message: String,
}

/// OTLP `StatusCode`.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StatusCode {
    /// `STATUS_CODE_UNSET` (0).
    #[default]
    Unset,
    /// `STATUS_CODE_OK` (1).
    Ok,
    /// `STATUS_CODE_ERROR` (2).
    Error,
}

/// Where something was read: a file and a line (JSON Lines, CSV) or a byte offset (protobuf,
/// a request body).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Location {
    /// The file, or `POST /v1/traces` for a collected request.
    #[serde(default)]
    pub file: String,
    /// 1-based line, when the source has lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// Byte offset, when it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub byte_offset: Option<u64>,
}

impl Location {
    /// Element `index` of a JSON array in `file`, shown as `file[index]`.
    pub fn element(file: &str, index: usize) -> Location {
        Location {
            file: format!("{file}[{index}]"),
            line: None,
            byte_offset: None,
        }
    }
}

/// The records of an exported JSON document: its elements when it is an array, or the `data`
/// array of an API page (`{"data": […], "meta": …}`); `None` when it is one record.
pub fn export_items(value: &Value) -> Option<&Vec<Value>> {
    match value {
        Value::Array(items) => Some(items),
        Value::Object(o) => match o.get("data") {
            Some(Value::Array(items)) => Some(items),
            _ => None,
        },
        _ => None,
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.byte_offset) {
            (Some(line), _) => write!(f, "{}:{line}", self.file),
            (None, Some(off)) => write!(f, "{} (byte {off})", self.file),
            (None, None) => write!(f, "{}", self.file),
        }
    }
}

/// Feedback or a score a source attached to a trace (or to one of its spans): Langfuse scores,
/// Phoenix annotations, feedback span attributes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TraceFeedback {
    /// The trace it belongs to (hex, as [`Span::trace_id`]).
    pub trace_id: String,
    /// The span it was given on, when on one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_id: Option<String>,
    /// The signal.
    pub feedback: oloproof_core::production::Feedback,
}

/// An OpenTelemetry log record that is an event about a span (the GenAI instrumentations'
/// message content, evaluation results): the assembler adds it to that span's events
/// ([`crate::otlp::logs`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LogEvent {
    /// The trace it belongs to (hex, as [`Span::trace_id`]).
    pub trace_id: String,
    /// The span it is about (hex, as [`Span::span_id`]).
    pub span_id: String,
    /// The event: the record's event name, time (or observed time) and attributes, with the
    /// fields of a map body as attributes too.
    pub event: SpanEvent,
    /// Where the record was read.
    pub at: Location,
}

/// What one reader decoded from one input: spans, feedback, log events, and the problems met
/// (each span it could not decode counted in `summary.spans_dropped` under its problem kind).
#[derive(Debug, Clone, Default)]
pub struct Decoded {
    /// Spans, in input order.
    pub spans: Vec<Span>,
    /// Feedback and scores, in input order.
    pub feedback: Vec<TraceFeedback>,
    /// Events read from OTLP log records, in input order.
    pub log_events: Vec<LogEvent>,
    /// Spans read and dropped, and every problem.
    pub summary: crate::problems::ImportSummary,
}

/// Whether a shared resource map is empty (serde's `skip_serializing_if` of [`Span::resource`]).
fn is_empty_map(map: &std::sync::Arc<Attributes>) -> bool {
    map.is_empty()
}
