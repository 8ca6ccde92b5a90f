//! OTLP readers: JSON (`TracesData`, one per line as the OpenTelemetry Collector's file
//! exporter writes them, or one document) and binary protobuf (`ExportTraceServiceRequest`,
//! as an SDK's OTLP/HTTP exporter posts it), decoded into [`Span`]s.
//!
//! JSON follows the [OTLP JSON encoding](https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding)
//! and what real writers do besides: lowerCamelCase keys (`resourceSpans`, `scopeSpans`,
//! `startTimeUnixNano`) and the proto names (`resource_spans`, `scope_spans`, as
//! `google.protobuf.json_format` writes with `preserving_proto_field_name=True`), the pre-1.0
//! `instrumentationLibrarySpans`; trace and span ids as hex (the OTLP rule) or base64 (protobuf's
//! standard JSON mapping of `bytes`, what `json_format` writes); 64-bit integers as decimal
//! strings or numbers; `kind` and `status.code` as numbers or enum names
//! (`SPAN_KIND_SERVER`, `STATUS_CODE_ERROR`).
//!
//! Binary requests are walked field by field ([`decode_protobuf`]) down to each span, and only
//! the leaves (a `Resource`, a `Span`) are decoded whole by prost: a truncated body keeps every
//! span before the cut and reports the cut span at its byte offset. Several requests
//! concatenated in one file are one valid request (protobuf merges repeated fields), so a file
//! of appended request bodies reads as it should.
//!
//! Bad input never stops a read: a line that is not JSON (`not_json`) or not `TracesData`
//! (`not_traces_data`) is counted in [`ImportSummary::records_dropped`]; a span whose trace or
//! span id is malformed (`bad_id`) or whose protobuf is cut (`truncated_protobuf`) or corrupt
//! (`malformed_protobuf`) is read and dropped; an attribute of the wrong type
//! (`wrong_attribute_type`), a bad timestamp (`bad_timestamp`) or a malformed parent id
//! (`bad_id`, the span kept without its parent) is noted and the span kept.

use base64::Engine as _;
use prost::Message as _;
use serde_json::{Map, Number, Value};

use crate::error::RequestError;
use crate::problems::{ImportSummary, Problem};
use crate::span::{Attributes, Decoded, Location, Span, SpanEvent, SpanStatus, StatusCode};

pub mod files;
pub mod logs;
mod typed;

/// What an input file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// OTLP JSON: JSON Lines of `TracesData`, or one JSON document.
    OtlpJson,
    /// Binary protobuf `ExportTraceServiceRequest` (or `TracesData`: the same fields).
    OtlpProto,
}

impl InputFormat {
    /// `otlp-json` or `otlp-proto`.
    pub fn name(self) -> &'static str {
        match self {
            InputFormat::OtlpJson => "otlp-json",
            InputFormat::OtlpProto => "otlp-proto",
        }
    }

    /// The format of a file from its first bytes: JSON starts (after white space and a UTF-8
    /// byte-order mark) with `{` or `[`; a protobuf request starts with the key of field 1
    /// (`0x0a`) or anything else that is not JSON.
    pub fn sniff(head: &[u8]) -> InputFormat {
        let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
        match head.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{') | Some(b'[') | None => InputFormat::OtlpJson,
            Some(_) => InputFormat::OtlpProto,
        }
    }
}

/// Reads one JSON Lines line of `TracesData` (blank lines are skipped), adding its spans and
/// problems to `out`.
///
/// A clean line (no problem to report: the common case) is deserialized straight into spans,
/// borrowing its strings; any other line is parsed into a `serde_json::Value` and walked by
/// [`decode_json_value`], which counts and locates each problem. Both give the same spans for
/// a clean line.
pub fn decode_json_line(line: &str, at: &Location, out: &mut Decoded) {
    let line = line.trim();
    if line.is_empty() {
        return;
    }
    if let Some(spans) = typed::decode_line(line, at) {
        out.summary.spans_read += spans.len() as u64;
        out.spans.extend(spans);
        return;
    }
    decode_json_line_value(line, at, out);
}

/// [`decode_json_line`] through a `serde_json::Value` (every line, clean or not).
fn decode_json_line_value(line: &str, at: &Location, out: &mut Decoded) {
    match serde_json::from_str::<Value>(line) {
        Ok(value) => decode_json_value(&value, at, out),
        Err(e) => {
            out.summary.drop_record(Problem {
                kind: "not_json".into(),
                at: at.clone(),
                message: format!(
                    "not JSON ({e}): each line of an OTLP JSON file must be one `TracesData` object, as the Collector's file exporter writes"
                ),
            });
        }
    }
}

/// Reads consecutive JSON Lines lines (`first_line` the 1-based number of `lines[0]`) of
/// `file`, each as [`decode_json_line`] reads it, on every core (rayon's pool): one
/// [`Decoded`] per line, in line order, so what follows (the assembler) sees exactly what a
/// line-by-line read gives.
pub fn decode_json_lines<S: AsRef<str> + Sync>(
    lines: &[S],
    first_line: usize,
    file: &str,
) -> Vec<Decoded> {
    use rayon::prelude::*;
    lines
        .par_iter()
        .enumerate()
        .map(|(i, line)| {
            let at = Location {
                file: file.to_string(),
                line: Some(first_line + i),
                byte_offset: None,
            };
            let mut out = Decoded::default();
            decode_json_line(line.as_ref(), &at, &mut out);
            out
        })
        .collect()
}

/// Reads a whole JSON document: one `TracesData` object, an array of them, or — when the text
/// does not parse as one document — JSON Lines ([`decode_json_line`] on each line, located by
/// line number).
pub fn decode_json_document(text: &str, file: &str) -> Decoded {
    json_document(text, file, decode_json_value, decode_json_line)
}

/// A whole JSON document of one OTLP signal: `value` reads each object (the document, or each
/// element of an array, located `file[i]`); when the text does not parse as one document,
/// `line` reads each line, located by its number.
fn json_document(
    text: &str,
    file: &str,
    value: fn(&Value, &Location, &mut Decoded),
    line: fn(&str, &Location, &mut Decoded),
) -> Decoded {
    let mut out = Decoded::default();
    let trimmed = text.trim_start_matches('\u{feff}');
    match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                value(item, &Location::element(file, i), &mut out);
            }
        }
        Ok(document) => {
            let at = Location {
                file: file.to_string(),
                line: None,
                byte_offset: None,
            };
            value(&document, &at, &mut out);
        }
        Err(_) => {
            for (i, text) in trimmed.lines().enumerate() {
                let at = Location {
                    file: file.to_string(),
                    line: Some(i + 1),
                    byte_offset: None,
                };
                line(text, &at, &mut out);
            }
        }
    }
    out
}

/// Reads one parsed `TracesData` (or `ExportTraceServiceRequest`: the same JSON) into `out`.
pub fn decode_json_value(value: &Value, at: &Location, out: &mut Decoded) {
    let Some(obj) = value.as_object() else {
        not_traces_data(at, out, format!("a JSON {}", kind_of(value)));
        return;
    };
    let Some(resource_spans) = get(obj, &["resourceSpans", "resource_spans"]) else {
        let keys: Vec<&str> = obj.keys().map(String::as_str).take(5).collect();
        let what = if keys.is_empty() {
            "an empty object".to_string()
        } else {
            format!("an object with keys {}", keys.join(", "))
        };
        not_traces_data(at, out, what);
        return;
    };
    let Some(resource_spans) = resource_spans.as_array() else {
        not_traces_data(
            at,
            out,
            format!("`resourceSpans` is a {}", kind_of(resource_spans)),
        );
        return;
    };
    for rs in resource_spans {
        let resource = rs
            .get("resource")
            .and_then(|r| r.get("attributes"))
            .map(|a| json_attributes(a, at, "resource", &mut out.summary))
            .unwrap_or_default();
        let resource = std::sync::Arc::new(resource);
        let scopes = ["scopeSpans", "scope_spans", "instrumentationLibrarySpans"]
            .iter()
            .filter_map(|k| rs.get(*k))
            .filter_map(Value::as_array)
            .flatten();
        for scope in scopes {
            let Some(spans) = scope.get("spans").and_then(Value::as_array) else {
                continue;
            };
            for span in spans {
                out.summary.spans_read += 1;
                if let Some(s) = json_span(span, &resource, at, &mut out.summary) {
                    out.spans.push(s);
                }
            }
        }
    }
}

fn not_traces_data(at: &Location, out: &mut Decoded, what: String) {
    out.summary.drop_record(Problem {
        kind: "not_traces_data".into(),
        at: at.clone(),
        message: format!(
            "not OTLP `TracesData`: {what}, not an object with `resourceSpans` (is this a metrics or logs file, or another tool's export?)"
        ),
    });
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn get<'a>(obj: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().find_map(|k| obj.get(*k))
}

fn field<'a>(v: &'a Value, camel: &str, snake: &str) -> Option<&'a Value> {
    v.get(camel)
        .or_else(|| v.get(snake))
        .filter(|v| !v.is_null())
}

/// One JSON span, or `None` (counted as dropped) when its ids cannot be read.
fn json_span(
    v: &Value,
    resource: &std::sync::Arc<Attributes>,
    at: &Location,
    summary: &mut ImportSummary,
) -> Option<Span> {
    let name = v
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let what = if name.is_empty() {
        "a span".to_string()
    } else {
        format!("span `{name}`")
    };
    let id = |camel: &str, snake: &str, bytes: usize| json_id(v, camel, snake, bytes);
    let dropped = |summary: &mut ImportSummary, kind: &str, message: String| {
        *summary.spans_dropped.entry(kind.to_string()).or_default() += 1;
        summary.note(Problem {
            kind: kind.into(),
            at: at.clone(),
            message,
        });
    };
    let trace_id = match id("traceId", "trace_id", 16) {
        Ok(Some(t)) => t,
        Ok(None) => {
            dropped(
                summary,
                "bad_id",
                format!("{what} has no `traceId`: it cannot be grouped into a trace"),
            );
            return None;
        }
        Err(e) => {
            dropped(summary, "bad_id", format!("{what}: {e}"));
            return None;
        }
    };
    let span_id = match id("spanId", "span_id", 8) {
        Ok(Some(s)) => s,
        Ok(None) => {
            dropped(summary, "bad_id", format!("{what} has no `spanId`"));
            return None;
        }
        Err(e) => {
            dropped(summary, "bad_id", format!("{what}: {e}"));
            return None;
        }
    };
    let parent_span_id = match id("parentSpanId", "parent_span_id", 8) {
        Ok(p) => p,
        Err(e) => {
            summary.note(Problem {
                kind: "bad_id".into(),
                at: at.clone(),
                message: format!("{what}: {e}; the span is kept as a root"),
            });
            None
        }
    };
    let mut time = |camel: &str, snake: &str| -> Option<u64> {
        let raw = field(v, camel, snake)?;
        match int_of(raw).and_then(|i| u64::try_from(i).ok()) {
            Some(0) => None,
            Some(t) => Some(t),
            None => {
                summary.note(Problem {
                    kind: "bad_timestamp".into(),
                    at: at.clone(),
                    message: format!(
                        "{what}: `{camel}` must be nanoseconds since the Unix epoch (a decimal string or a number), got {raw}; its latency is unknown"
                    ),
                });
                None
            }
        }
    };
    let start_unix_nano = time("startTimeUnixNano", "start_time_unix_nano");
    let end_unix_nano = time("endTimeUnixNano", "end_time_unix_nano");
    let kind = v.get("kind").and_then(span_kind);
    let attributes = v
        .get("attributes")
        .map(|a| json_attributes(a, at, &what, summary))
        .unwrap_or_default();
    let events = v
        .get("events")
        .and_then(Value::as_array)
        .map(|events| {
            events
                .iter()
                .map(|e| SpanEvent {
                    name: e
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    time_unix_nano: field(e, "timeUnixNano", "time_unix_nano")
                        .and_then(int_of)
                        .and_then(|i| u64::try_from(i).ok()),
                    attributes: e
                        .get("attributes")
                        .map(|a| json_attributes(a, at, &what, summary))
                        .unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default();
    let status = v
        .get("status")
        .filter(|s| s.is_object())
        .map(|s| SpanStatus {
            code: s.get("code").map(status_code).unwrap_or_default(),
            message: s
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        });
    Some(Span {
        trace_id,
        span_id,
        parent_span_id,
        name,
        kind,
        start_unix_nano,
        end_unix_nano,
        attributes,
        events,
        status,
        resource: std::sync::Arc::clone(resource),
        at: at.clone(),
    })
}

/// The id field `camel` (or `snake`) of a JSON OTLP object, as [`decode_id`] reads it; the
/// error names the field.
fn json_id(v: &Value, camel: &str, snake: &str, bytes: usize) -> Result<Option<String>, String> {
    match field(v, camel, snake) {
        None => Ok(None),
        Some(Value::String(s)) => decode_id(s, bytes).map_err(|e| format!("`{camel}` {e}")),
        Some(other) => Err(format!("`{camel}` must be a string, got {other}")),
    }
}

/// A protobuf id field `name` of `bytes` bytes as lower-case hex (`None` when empty); the
/// error names the field.
fn pb_id(raw: &[u8], bytes: usize, name: &str) -> Result<Option<String>, String> {
    if raw.is_empty() {
        return Ok(None);
    }
    if raw.len() != bytes {
        return Err(format!("`{name}` must be {bytes} bytes, got {}", raw.len()));
    }
    all_zero_check(hex(raw), bytes).map_err(|e| format!("`{name}` {e}"))
}

/// The problem of a protobuf walk that stopped at `e`: `truncated_protobuf` or
/// `malformed_protobuf`, at `at` of its offset.
fn walk_problem(e: WalkError, at: impl Fn(usize) -> Location) -> Problem {
    let (kind, offset, message) = match e {
        WalkError::Truncated(o) => (
            "truncated_protobuf",
            o,
            "the protobuf ends inside a field: the file or body was cut; what follows is lost"
                .to_string(),
        ),
        WalkError::Malformed(o, m) => (
            "malformed_protobuf",
            o,
            format!("not an OTLP protobuf here ({m}); the rest of the input is skipped"),
        ),
    };
    Problem {
        kind: kind.into(),
        at: at(offset),
        message,
    }
}

/// An OTLP id of `bytes` bytes, as lower-case hex: given as hex (`2·bytes` digits, the OTLP
/// JSON rule) or base64 (protobuf's JSON mapping of `bytes`). Empty is `None` (no parent).
/// All zeros is invalid (the OTLP spec).
pub fn decode_id(text: &str, bytes: usize) -> Result<Option<String>, String> {
    if text.is_empty() {
        return Ok(None);
    }
    let raw: Vec<u8> = if text.len() == 2 * bytes && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return all_zero_check(text.to_ascii_lowercase(), bytes);
    } else {
        let b64 = base64::engine::general_purpose::STANDARD
            .decode(text)
            .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(text))
            .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(text));
        match b64 {
            Ok(raw) => raw,
            Err(_) => {
                return Err(format!(
                "must be {bytes} bytes as {} hex digits or base64, got {text:?} ({} characters)",
                2 * bytes,
                text.len()
            ))
            }
        }
    };
    if raw.len() != bytes {
        return Err(format!(
            "must be {bytes} bytes as {} hex digits or base64, got {text:?} ({} characters, {} bytes as base64)",
            2 * bytes,
            text.len(),
            raw.len()
        ));
    }
    all_zero_check(hex(&raw), bytes)
}

fn all_zero_check(hex: String, bytes: usize) -> Result<Option<String>, String> {
    if hex.bytes().all(|b| b == b'0') {
        Err(format!(
            "is all zeros ({bytes} bytes), which OTLP declares invalid"
        ))
    } else {
        Ok(Some(hex))
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

/// A 64-bit integer written as a number or a decimal string (protobuf's JSON mapping).
fn int_of(v: &Value) -> Option<i128> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from)),
        Value::String(s) => s.trim().parse::<i128>().ok(),
        _ => None,
    }
}

/// OTLP `SpanKind` as a short name, from its number or enum name.
fn span_kind(v: &Value) -> Option<String> {
    let n = match v {
        Value::Number(n) => n.as_i64()?,
        Value::String(s) => match s.as_str() {
            "SPAN_KIND_UNSPECIFIED" => 0,
            "SPAN_KIND_INTERNAL" => 1,
            "SPAN_KIND_SERVER" => 2,
            "SPAN_KIND_CLIENT" => 3,
            "SPAN_KIND_PRODUCER" => 4,
            "SPAN_KIND_CONSUMER" => 5,
            _ => return None,
        },
        _ => return None,
    };
    kind_name(n).map(str::to_string)
}

fn kind_name(n: i64) -> Option<&'static str> {
    Some(match n {
        1 => "internal",
        2 => "server",
        3 => "client",
        4 => "producer",
        5 => "consumer",
        _ => return None,
    })
}

fn status_code(v: &Value) -> StatusCode {
    let n = match v {
        Value::Number(n) => n.as_i64().unwrap_or(0),
        Value::String(s) => match s.as_str() {
            "STATUS_CODE_OK" => 1,
            "STATUS_CODE_ERROR" => 2,
            _ => 0,
        },
        _ => 0,
    };
    code_of(n)
}

fn code_of(n: i64) -> StatusCode {
    match n {
        1 => StatusCode::Ok,
        2 => StatusCode::Error,
        _ => StatusCode::Unset,
    }
}

/// A list of JSON `KeyValue`s as attributes; a value of the wrong shape is noted
/// (`wrong_attribute_type`) and left out.
fn json_attributes(
    v: &Value,
    at: &Location,
    what: &str,
    summary: &mut ImportSummary,
) -> Attributes {
    let mut out = Attributes::new();
    let Some(items) = v.as_array() else {
        summary.note(Problem {
            kind: "wrong_attribute_type".into(),
            at: at.clone(),
            message: format!(
                "{what}: `attributes` must be a list of {{key, value}}, got a {}",
                kind_of(v)
            ),
        });
        return out;
    };
    for kv in items {
        let Some(key) = kv.get("key").and_then(Value::as_str) else {
            summary.note(Problem {
                kind: "wrong_attribute_type".into(),
                at: at.clone(),
                message: format!("{what}: an attribute without a string `key`: {kv}"),
            });
            continue;
        };
        match kv
            .get("value")
            .map(json_any_value)
            .unwrap_or(Ok(Value::Null))
        {
            Ok(value) => {
                out.insert(key, value);
            }
            Err(e) => summary.note(Problem {
                kind: "wrong_attribute_type".into(),
                at: at.clone(),
                message: format!("{what}: attribute `{key}`: {e}; the attribute is left out"),
            }),
        }
    }
    out
}

/// An OTLP JSON `AnyValue` as a plain JSON value.
fn json_any_value(v: &Value) -> Result<Value, String> {
    let Some(obj) = v.as_object() else {
        return Err(format!(
            "an `AnyValue` must be an object such as {{\"stringValue\": \"…\"}}, got {v}"
        ));
    };
    // Proto3's JSON mapping reads `null` as a field's default, that is, not set: Phoenix's
    // `spans/otlpv1` export writes every `AnyValue` field, the unset ones as `null`.
    let Some((key, inner)) = obj.iter().find(|(_, v)| !v.is_null()) else {
        return Ok(Value::Null);
    };
    match key.as_str() {
        "stringValue" | "string_value" => match inner {
            Value::String(_) => Ok(inner.clone()),
            other => Err(format!("`stringValue` must be a string, got {other}")),
        },
        "boolValue" | "bool_value" => match inner {
            Value::Bool(_) => Ok(inner.clone()),
            other => Err(format!("`boolValue` must be true or false, got {other}")),
        },
        "intValue" | "int_value" => match int_of(inner).and_then(|i| i64::try_from(i).ok()) {
            Some(i) => Ok(Value::from(i)),
            None => Err(format!(
                "`intValue` must be a 64-bit integer (a number or a decimal string), got {inner}"
            )),
        },
        "doubleValue" | "double_value" => match inner {
            Value::Number(_) => Ok(inner.clone()),
            Value::String(s) => match s.parse::<f64>() {
                Ok(x) if x.is_finite() => Ok(Number::from_f64(x).map(Value::Number).unwrap_or(Value::Null)),
                Ok(_) => Ok(Value::String(s.clone())),
                Err(_) => Err(format!("`doubleValue` must be a number, got {inner}")),
            },
            other => Err(format!("`doubleValue` must be a number, got {other}")),
        },
        "arrayValue" | "array_value" => {
            let values = match inner.get("values") {
                None | Some(Value::Null) => return Ok(Value::Array(Vec::new())),
                Some(Value::Array(values)) => values,
                Some(other) => {
                    return Err(format!("`arrayValue.values` must be a list, got {other}"))
                }
            };
            values
                .iter()
                .map(json_any_value)
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array)
        }
        "kvlistValue" | "kvlist_value" => {
            let values = match inner.get("values") {
                None | Some(Value::Null) => return Ok(Value::Object(Map::new())),
                Some(Value::Array(values)) => values,
                Some(other) => {
                    return Err(format!("`kvlistValue.values` must be a list, got {other}"))
                }
            };
            let mut map = Map::new();
            for kv in values {
                let key = kv
                    .get("key")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("a `kvlistValue` entry without a string key: {kv}"))?;
                let value = kv.get("value").map(json_any_value).unwrap_or(Ok(Value::Null))?;
                map.insert(key.to_string(), value);
            }
            Ok(Value::Object(map))
        }
        "bytesValue" | "bytes_value" => match inner {
            Value::String(_) => Ok(inner.clone()),
            other => Err(format!("`bytesValue` must be a base64 string, got {other}")),
        },
        other => Err(format!(
            "unknown `AnyValue` field `{other}` (expected stringValue, boolValue, intValue, doubleValue, arrayValue, kvlistValue or bytesValue)"
        )),
    }
}

/// The OTLP trace messages, as in `opentelemetry/proto/trace/v1/trace.proto` and
/// `common/v1/common.proto` (v1.x: field numbers are frozen); fields Oloproof does not read
/// (`trace_state`, `flags`, links, dropped counts, the scope) are skipped by prost.
mod pb {
    /// `opentelemetry.proto.resource.v1.Resource`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct Resource {
        #[prost(message, repeated, tag = "1")]
        pub(super) attributes: Vec<KeyValue>,
    }

    /// `opentelemetry.proto.trace.v1.Span`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct Span {
        #[prost(bytes = "vec", tag = "1")]
        pub(super) trace_id: Vec<u8>,
        #[prost(bytes = "vec", tag = "2")]
        pub(super) span_id: Vec<u8>,
        #[prost(bytes = "vec", tag = "4")]
        pub(super) parent_span_id: Vec<u8>,
        #[prost(string, tag = "5")]
        pub(super) name: String,
        #[prost(int32, tag = "6")]
        pub(super) kind: i32,
        #[prost(fixed64, tag = "7")]
        pub(super) start_time_unix_nano: u64,
        #[prost(fixed64, tag = "8")]
        pub(super) end_time_unix_nano: u64,
        #[prost(message, repeated, tag = "9")]
        pub(super) attributes: Vec<KeyValue>,
        #[prost(message, repeated, tag = "11")]
        pub(super) events: Vec<Event>,
        #[prost(message, optional, tag = "15")]
        pub(super) status: Option<Status>,
    }

    /// `Span.Event`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct Event {
        #[prost(fixed64, tag = "1")]
        pub(super) time_unix_nano: u64,
        #[prost(string, tag = "2")]
        pub(super) name: String,
        #[prost(message, repeated, tag = "3")]
        pub(super) attributes: Vec<KeyValue>,
    }

    /// `Status` (field 1 is the deprecated code).
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct Status {
        #[prost(string, tag = "2")]
        pub(super) message: String,
        #[prost(int32, tag = "3")]
        pub(super) code: i32,
    }

    /// `opentelemetry.proto.logs.v1.LogRecord` (`logs/v1/logs.proto`); severity, flags and
    /// the dropped count are skipped.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct LogRecord {
        #[prost(fixed64, tag = "1")]
        pub(super) time_unix_nano: u64,
        #[prost(fixed64, tag = "11")]
        pub(super) observed_time_unix_nano: u64,
        #[prost(message, optional, tag = "5")]
        pub(super) body: Option<AnyValue>,
        #[prost(message, repeated, tag = "6")]
        pub(super) attributes: Vec<KeyValue>,
        #[prost(bytes = "vec", tag = "9")]
        pub(super) trace_id: Vec<u8>,
        #[prost(bytes = "vec", tag = "10")]
        pub(super) span_id: Vec<u8>,
        #[prost(string, tag = "12")]
        pub(super) event_name: String,
    }

    /// `logs.v1.LogsData` (the same bytes as `ExportLogsServiceRequest`), for tests.
    #[cfg(test)]
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct LogsData {
        #[prost(message, repeated, tag = "1")]
        pub(super) resource_logs: Vec<ResourceLogs>,
    }

    /// `logs.v1.ResourceLogs` (its resource is not read).
    #[cfg(test)]
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct ResourceLogs {
        #[prost(message, repeated, tag = "2")]
        pub(super) scope_logs: Vec<ScopeLogs>,
    }

    /// `logs.v1.ScopeLogs`.
    #[cfg(test)]
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct ScopeLogs {
        #[prost(message, repeated, tag = "2")]
        pub(super) log_records: Vec<LogRecord>,
    }

    /// `common.v1.KeyValue`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct KeyValue {
        #[prost(string, tag = "1")]
        pub(super) key: String,
        #[prost(message, optional, tag = "2")]
        pub(super) value: Option<AnyValue>,
    }

    /// `common.v1.AnyValue`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct AnyValue {
        #[prost(oneof = "Value", tags = "1, 2, 3, 4, 5, 6, 7")]
        pub(super) value: Option<Value>,
    }

    /// `AnyValue.value` (variants named as the proto's oneof fields).
    #[allow(clippy::enum_variant_names)]
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub(super) enum Value {
        #[prost(string, tag = "1")]
        StringValue(String),
        #[prost(bool, tag = "2")]
        BoolValue(bool),
        #[prost(int64, tag = "3")]
        IntValue(i64),
        #[prost(double, tag = "4")]
        DoubleValue(f64),
        #[prost(message, tag = "5")]
        ArrayValue(ArrayValue),
        #[prost(message, tag = "6")]
        KvlistValue(KeyValueList),
        #[prost(bytes = "vec", tag = "7")]
        BytesValue(Vec<u8>),
    }

    /// `common.v1.ArrayValue`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct ArrayValue {
        #[prost(message, repeated, tag = "1")]
        pub(super) values: Vec<AnyValue>,
    }

    /// `common.v1.KeyValueList`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct KeyValueList {
        #[prost(message, repeated, tag = "1")]
        pub(super) values: Vec<KeyValue>,
    }
}

/// One field of a protobuf message, found by [`Fields`].
struct Field<'a> {
    number: u64,
    /// The payload of a length-delimited field (empty for the other wire types).
    data: &'a [u8],
    /// Absolute offset of the field's key.
    offset: usize,
    /// Absolute offset of `data`.
    data_offset: usize,
    /// A length-delimited field whose declared length runs past the end: `data` is what is
    /// there.
    cut: bool,
    /// Whether the field is length-delimited.
    len: bool,
}

/// Why walking a message stopped.
enum WalkError {
    /// The bytes end inside a key or a length.
    Truncated(usize),
    /// A wire type protobuf does not have, or a group, or field number 0.
    Malformed(usize, String),
}

/// The fields of one message in `buf` (which starts at absolute offset `base`).
struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
    done: bool,
}

impl<'a> Fields<'a> {
    fn new(buf: &'a [u8], base: usize) -> Self {
        Fields {
            buf,
            pos: 0,
            base,
            done: false,
        }
    }

    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in 0..10 {
            let b = *self.buf.get(self.pos)?;
            self.pos += 1;
            value |= u64::from(b & 0x7f) << (7 * shift);
            if b < 0x80 {
                return Some(value);
            }
        }
        None
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<Field<'a>, WalkError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.pos >= self.buf.len() {
            return None;
        }
        let offset = self.base + self.pos;
        let fail = |this: &mut Self, e: WalkError| -> Option<Result<Field<'a>, WalkError>> {
            this.done = true;
            Some(Err(e))
        };
        let Some(key) = self.varint() else {
            return fail(self, WalkError::Truncated(offset));
        };
        let number = key >> 3;
        if number == 0 {
            return fail(self, WalkError::Malformed(offset, "field number 0".into()));
        }
        let mut data_offset = self.base + self.pos;
        let (data, cut, len): (&[u8], bool, bool) = match key & 7 {
            0 => match self.varint() {
                Some(_) => (&[], false, false),
                None => return fail(self, WalkError::Truncated(offset)),
            },
            1 | 5 => {
                let n = if key & 7 == 1 { 8 } else { 4 };
                if self.pos + n > self.buf.len() {
                    return fail(self, WalkError::Truncated(offset));
                }
                self.pos += n;
                (&[], false, false)
            }
            2 => {
                let Some(n) = self.varint() else {
                    return fail(self, WalkError::Truncated(offset));
                };
                let buf: &'a [u8] = self.buf;
                let start = self.pos;
                data_offset = self.base + start;
                let end = start.saturating_add(n as usize);
                if end > buf.len() {
                    self.done = true;
                    self.pos = buf.len();
                    (&buf[start..], true, true)
                } else {
                    self.pos = end;
                    (&buf[start..end], false, true)
                }
            }
            w => {
                return fail(
                    self,
                    WalkError::Malformed(
                        offset,
                        format!("wire type {w} (groups are not used by OTLP)"),
                    ),
                )
            }
        };
        Some(Ok(Field {
            number,
            data,
            offset,
            data_offset,
            cut,
            len,
        }))
    }
}

/// Decodes a binary `ExportTraceServiceRequest` (or `TracesData`), spans located by byte
/// offset in `file`. One message: what an OTLP/HTTP exporter posts. For a file of several
/// (the Collector's file exporter), see [`decode_protobuf_file`].
pub fn decode_protobuf(bytes: &[u8], file: &str) -> Decoded {
    let mut out = Decoded::default();
    decode_protobuf_into(bytes, file, 0, &mut out);
    out
}

/// Decodes one message that starts at byte `base` of `file` into `out` (offsets in problems
/// and locations are `base` plus the offset in `bytes`).
fn decode_protobuf_into(bytes: &[u8], file: &str, base: usize, out: &mut Decoded) {
    let at = |offset: usize| Location {
        file: file.to_string(),
        line: None,
        byte_offset: Some(offset as u64),
    };
    let walk_problem = |out: &mut Decoded, e: WalkError, spans_unknown: bool| {
        let problem = walk_problem(e, at);
        if spans_unknown {
            out.summary.drop_record(problem);
        } else {
            out.summary.note(problem);
        }
    };
    for top in Fields::new(bytes, base) {
        let top = match top {
            Ok(f) => f,
            Err(e) => {
                walk_problem(out, e, true);
                break;
            }
        };
        if top.number != 1 || !top.len {
            continue;
        }
        let mut resource = Attributes::new();
        let mut spans: Vec<(pb::Span, usize)> = Vec::new();
        for f in Fields::new(top.data, top.data_offset) {
            let f = match f {
                Ok(f) => f,
                Err(e) => {
                    walk_problem(out, e, true);
                    break;
                }
            };
            match (f.number, f.len) {
                (1, true) => {
                    if f.cut {
                        walk_problem(out, WalkError::Truncated(f.offset), true);
                        continue;
                    }
                    match pb::Resource::decode(f.data) {
                        Ok(r) => {
                            resource = pb_attributes(
                                r.attributes,
                                &at(f.offset),
                                "resource",
                                &mut out.summary,
                            )
                        }
                        Err(e) => walk_problem(
                            out,
                            WalkError::Malformed(f.offset, format!("resource: {e}")),
                            true,
                        ),
                    }
                }
                // `scope_spans` (2) and the deprecated `instrumentation_library_spans` (1000).
                (2 | 1000, true) => {
                    for sf in Fields::new(f.data, f.data_offset) {
                        let sf = match sf {
                            Ok(sf) => sf,
                            Err(e) => {
                                walk_problem(out, e, true);
                                break;
                            }
                        };
                        if sf.number != 2 || !sf.len {
                            continue;
                        }
                        out.summary.spans_read += 1;
                        if sf.cut {
                            *out.summary
                                .spans_dropped
                                .entry("truncated_protobuf".into())
                                .or_default() += 1;
                            out.summary.note(Problem {
                                kind: "truncated_protobuf".into(),
                                at: at(sf.offset),
                                message: "the protobuf ends inside this span: the file or body was cut; the span is dropped".into(),
                            });
                            continue;
                        }
                        match pb::Span::decode(sf.data) {
                            Ok(s) => spans.push((s, sf.offset)),
                            Err(e) => {
                                *out.summary
                                    .spans_dropped
                                    .entry("malformed_protobuf".into())
                                    .or_default() += 1;
                                out.summary.note(Problem {
                                    kind: "malformed_protobuf".into(),
                                    at: at(sf.offset),
                                    message: format!(
                                        "this span is not a valid OTLP `Span` ({e}); it is dropped"
                                    ),
                                });
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        let shared = std::sync::Arc::new(resource);
        for (s, offset) in spans {
            if let Some(span) = pb_span(s, &shared, &at(offset), &mut out.summary) {
                out.spans.push(span);
            }
        }
    }
    // A length that runs past the end, cut between two whole spans: nothing was cut inside a
    // span, but the input still ends early.
    if declared_past_end(bytes) && !out.summary.problems.contains_key("truncated_protobuf") {
        out.summary.drop_record(Problem {
            kind: "truncated_protobuf".into(),
            at: at(base + bytes.len()),
            message: "the protobuf ends before the length its last message declares: the file or body was cut".into(),
        });
    }
}

/// Whether some length-delimited field on the path to the last span declares more bytes than
/// there are.
fn declared_past_end(bytes: &[u8]) -> bool {
    fn walk(buf: &[u8], base: usize, depth: usize) -> bool {
        let Some(Ok(last)) = Fields::new(buf, base).last() else {
            return false;
        };
        last.cut || (depth < 2 && last.len && walk(last.data, last.data_offset, depth + 1))
    }
    walk(bytes, 0, 0)
}

fn pb_span(
    s: pb::Span,
    resource: &std::sync::Arc<Attributes>,
    at: &Location,
    summary: &mut ImportSummary,
) -> Option<Span> {
    let what = if s.name.is_empty() {
        "a span".to_string()
    } else {
        format!("span `{}`", s.name)
    };
    let mut dropped = |message: String| {
        *summary.spans_dropped.entry("bad_id".into()).or_default() += 1;
        summary.note(Problem {
            kind: "bad_id".into(),
            at: at.clone(),
            message: format!("{what}: {message}; the span is dropped"),
        });
    };
    let trace_id = match pb_id(&s.trace_id, 16, "trace_id") {
        Ok(Some(t)) => t,
        Ok(None) => {
            dropped("no `trace_id`".into());
            return None;
        }
        Err(e) => {
            dropped(e);
            return None;
        }
    };
    let span_id = match pb_id(&s.span_id, 8, "span_id") {
        Ok(Some(t)) => t,
        Ok(None) => {
            dropped("no `span_id`".into());
            return None;
        }
        Err(e) => {
            dropped(e);
            return None;
        }
    };
    let parent_span_id = match pb_id(&s.parent_span_id, 8, "parent_span_id") {
        Ok(p) => p,
        Err(e) => {
            summary.note(Problem {
                kind: "bad_id".into(),
                at: at.clone(),
                message: format!("{what}: {e}; the span is kept as a root"),
            });
            None
        }
    };
    let attributes = pb_attributes(s.attributes, at, &what, summary);
    let events = s
        .events
        .into_iter()
        .map(|e| SpanEvent {
            name: e.name,
            time_unix_nano: (e.time_unix_nano != 0).then_some(e.time_unix_nano),
            attributes: pb_attributes(e.attributes, at, &what, summary),
        })
        .collect();
    Some(Span {
        trace_id,
        span_id,
        parent_span_id,
        name: s.name,
        kind: kind_name(i64::from(s.kind)).map(str::to_string),
        start_unix_nano: (s.start_time_unix_nano != 0).then_some(s.start_time_unix_nano),
        end_unix_nano: (s.end_time_unix_nano != 0).then_some(s.end_time_unix_nano),
        attributes,
        events,
        status: s.status.map(|st| SpanStatus {
            code: code_of(i64::from(st.code)),
            message: st.message,
        }),
        resource: std::sync::Arc::clone(resource),
        at: at.clone(),
    })
}

fn pb_attributes(
    kvs: Vec<pb::KeyValue>,
    at: &Location,
    what: &str,
    summary: &mut ImportSummary,
) -> Attributes {
    let mut out = Attributes::new();
    for kv in kvs {
        let value = kv
            .value
            .map(|v| pb_any_value(v, &kv.key, at, what, summary));
        out.insert(kv.key, value.unwrap_or(Value::Null));
    }
    out
}

fn pb_any_value(
    v: pb::AnyValue,
    key: &str,
    at: &Location,
    what: &str,
    summary: &mut ImportSummary,
) -> Value {
    match v.value {
        None => Value::Null,
        Some(pb::Value::StringValue(s)) => Value::String(s),
        Some(pb::Value::BoolValue(b)) => Value::Bool(b),
        Some(pb::Value::IntValue(i)) => Value::from(i),
        Some(pb::Value::DoubleValue(x)) => match Number::from_f64(x) {
            Some(n) => Value::Number(n),
            None => {
                summary.note(Problem {
                    kind: "wrong_attribute_type".into(),
                    at: at.clone(),
                    message: format!(
                        "{what}: attribute `{key}` is the double {x}, which JSON cannot hold; kept as the string \"{x}\""
                    ),
                });
                Value::String(x.to_string())
            }
        },
        Some(pb::Value::ArrayValue(a)) => Value::Array(
            a.values
                .into_iter()
                .map(|v| pb_any_value(v, key, at, what, summary))
                .collect(),
        ),
        Some(pb::Value::KvlistValue(l)) => {
            let mut map = Map::new();
            for kv in l.values {
                let value = kv
                    .value
                    .map(|v| pb_any_value(v, key, at, what, summary))
                    .unwrap_or(Value::Null);
                map.insert(kv.key, value);
            }
            Value::Object(map)
        }
        Some(pb::Value::BytesValue(b)) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
    }
}

/// Decodes an OTLP/HTTP request body (`POST /v1/traces`) by its `Content-Type`:
/// `application/x-protobuf` (binary) or `application/json` (one `ExportTraceServiceRequest`
/// JSON document). Spans are located in `POST /v1/traces` (byte offsets for protobuf).
///
/// A body that is not a request at all (not JSON, not `TracesData`, corrupt protobuf before
/// any span) is a [`RequestError::Malformed`] (answered with 400); an unknown content type is
/// [`RequestError::UnsupportedContentType`] (415). Problems below that (one bad span) are in
/// the returned summary, as for a file.
pub fn decode_request(bytes: &[u8], content_type: &str) -> Result<Decoded, RequestError> {
    decode_request_at(bytes, content_type, "POST /v1/traces")
}

/// [`decode_request`] with its spans and problems located in `at` (a stored request read
/// back: `POST /v1/traces #SEQ`).
pub fn decode_request_at(
    bytes: &[u8],
    content_type: &str,
    at: &str,
) -> Result<Decoded, RequestError> {
    let decoded = request_body(
        bytes,
        content_type,
        at,
        decode_protobuf_into,
        decode_json_value,
    )?;
    readable(decoded, |d| !d.spans.is_empty(), "no span could be read")
}

/// One OTLP/HTTP body of a signal, by `content_type`: `protobuf` reads a binary message (from
/// byte 0), `json` the parsed JSON; everything located in `at`.
fn request_body(
    bytes: &[u8],
    content_type: &str,
    at: &str,
    protobuf: fn(&[u8], &str, usize, &mut Decoded),
    json: fn(&Value, &Location, &mut Decoded),
) -> Result<Decoded, RequestError> {
    let media = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let mut out = Decoded::default();
    match media.as_str() {
        "application/x-protobuf" | "application/protobuf" => protobuf(bytes, at, 0, &mut out),
        "application/json" => {
            let text = std::str::from_utf8(bytes).map_err(|e| RequestError::Malformed {
                message: format!("the JSON body is not UTF-8: {e}"),
            })?;
            let value: Value = serde_json::from_str(text).map_err(|e| RequestError::Malformed {
                message: format!("the body is not JSON: {e}"),
            })?;
            let location = Location {
                file: at.into(),
                line: None,
                byte_offset: None,
            };
            json(&value, &location, &mut out);
        }
        other => {
            return Err(RequestError::UnsupportedContentType {
                content_type: other.to_string(),
            })
        }
    }
    Ok(out)
}

/// `decoded`, unless nothing of it could be `read` while something was unreadable: then the
/// body is not a request of its signal, and its first problem (or `nothing`) says why.
fn readable(
    decoded: Decoded,
    read: impl Fn(&Decoded) -> bool,
    nothing: &str,
) -> Result<Decoded, RequestError> {
    if !read(&decoded) && decoded.summary.records_dropped > 0 {
        let message = decoded
            .summary
            .first
            .first()
            .map(|p| format!("{}: {}", p.kind, p.message))
            .unwrap_or_else(|| nothing.into());
        return Err(RequestError::Malformed { message });
    }
    Ok(decoded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line_at(n: usize) -> Location {
        Location {
            file: "t.jsonl".into(),
            line: Some(n),
            byte_offset: None,
        }
    }

    const CAMEL: &str = r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"rag"}}]},"scopeSpans":[{"scope":{"name":"app"},"spans":[{"traceId":"5B8EFFF798038103D269B633813FC60C","spanId":"EEE19B7EC3C1B174","parentSpanId":"","name":"query","kind":"SPAN_KIND_SERVER","startTimeUnixNano":"1700000000000000000","endTimeUnixNano":1700000000250000000,"attributes":[{"key":"openinference.span.kind","value":{"stringValue":"CHAIN"}},{"key":"n","value":{"intValue":"42"}},{"key":"x","value":{"doubleValue":0.5}},{"key":"ok","value":{"boolValue":true}},{"key":"tags","value":{"arrayValue":{"values":[{"stringValue":"a"},{"stringValue":"b"}]}}},{"key":"kv","value":{"kvlistValue":{"values":[{"key":"k","value":{"intValue":7}}]}}},{"key":"raw","value":{"bytesValue":"AAE="}}],"events":[{"timeUnixNano":"1700000000100000000","name":"exception","attributes":[{"key":"exception.message","value":{"stringValue":"boom"}}]}],"status":{"code":"STATUS_CODE_ERROR","message":"failed"}}]}]}]}"#;

    #[test]
    fn camel_case_hex_ids_and_int64_strings() {
        let mut out = Decoded::default();
        decode_json_line(CAMEL, &line_at(1), &mut out);
        assert_eq!(out.summary.spans_read, 1);
        assert!(out.summary.problems.is_empty(), "{:?}", out.summary.first);
        let s = &out.spans[0];
        assert_eq!(s.trace_id, "5b8efff798038103d269b633813fc60c");
        assert_eq!(s.span_id, "eee19b7ec3c1b174");
        assert_eq!(s.parent_span_id, None);
        assert_eq!(s.kind.as_deref(), Some("server"));
        assert_eq!(s.start_unix_nano, Some(1_700_000_000_000_000_000));
        assert_eq!(s.duration_ms(), Some(250.0));
        assert_eq!(s.attributes["n"], json!(42));
        assert_eq!(s.attributes["x"], json!(0.5));
        assert_eq!(s.attributes["ok"], json!(true));
        assert_eq!(s.attributes["tags"], json!(["a", "b"]));
        assert_eq!(s.attributes["kv"], json!({"k": 7}));
        assert_eq!(s.attributes["raw"], json!("AAE="));
        assert_eq!(s.resource["service.name"], json!("rag"));
        assert_eq!(s.events[0].attributes["exception.message"], json!("boom"));
        assert_eq!(s.status.as_ref().unwrap().code, StatusCode::Error);
        assert_eq!(s.at.to_string(), "t.jsonl:1");
    }

    /// Phoenix's `GET /v1/projects/{p}/spans/otlpv1` writes every `AnyValue` field, the unset
    /// ones as `null`, and `null` for absent span fields: read as not set (proto3 JSON), by
    /// the typed reader and the `Value` reader alike.
    #[test]
    fn null_fields_are_not_set_as_phoenix_otlpv1_writes_them() {
        let any = |k: &str, v: Value| {
            let mut o = serde_json::Map::new();
            for f in [
                "array_value",
                "bool_value",
                "bytes_value",
                "double_value",
                "int_value",
                "kvlist_value",
                "string_value",
            ] {
                o.insert(f.into(), if f == k { v.clone() } else { Value::Null });
            }
            Value::Object(o)
        };
        let line = json!({"data": null, "resource_spans": [{"scope_spans": [{"spans": [{
            "trace_id": "0af7651916cd43dd8448eb211c800005",
            "span_id": "00f067aa0ba9000f",
            "parent_span_id": null,
            "name": "rag.query",
            "kind": "SPAN_KIND_INTERNAL",
            "start_time_unix_nano": 1764633840000000000u64,
            "end_time_unix_nano": 1764633840305999872u64,
            "attributes": [
                {"key": "input.value", "value": any("string_value", json!("q"))},
                {"key": "n", "value": any("int_value", json!(3))},
                {"key": "x", "value": any("double_value", json!(0.4))},
                {"key": "tags", "value": any("array_value", json!({"values": [any("string_value", json!("a"))]}))},
                {"key": "unset", "value": any("none", Value::Null)},
            ],
            "events": null, "links": null, "flags": null, "trace_state": null,
            "dropped_attributes_count": null,
            "status": {"code": 0, "message": null}
        }]}]}]});
        let mut out = Decoded::default();
        decode_json_line(&line.to_string(), &line_at(1), &mut out);
        assert!(out.summary.problems.is_empty(), "{:?}", out.summary.first);
        let s = &out.spans[0];
        assert_eq!(s.attributes["input.value"], json!("q"));
        assert_eq!(s.attributes["n"], json!(3));
        assert_eq!(s.attributes["x"], json!(0.4));
        assert_eq!(s.attributes["tags"], json!(["a"]));
        assert_eq!(s.attributes["unset"], Value::Null);
        assert_eq!(s.parent_span_id, None);
        // The same values through the `Value` reader.
        for (k, v, want) in [
            ("string_value", json!("q"), json!("q")),
            ("int_value", json!("7"), json!(7)),
            ("bool_value", json!(true), json!(true)),
            (
                "kvlist_value",
                json!({"values": [{"key": "k", "value": any("int_value", json!(1))}]}),
                json!({"k": 1}),
            ),
        ] {
            assert_eq!(json_any_value(&any(k, v)), Ok(want));
        }
    }

    #[test]
    fn snake_case_base64_ids_as_json_format_writes() {
        // google.protobuf.json_format.MessageToJson(preserving_proto_field_name=True):
        // bytes as base64, int64/fixed64 as strings, enums by name.
        let line = json!({"resource_spans": [{"scope_spans": [{"spans": [{
            "trace_id": "W47/95gDgQPSabYzgT/GDA==",
            "span_id": "7uGbfsPBsXQ=",
            "parent_span_id": "AQIDBAUGBwg=",
            "name": "retrieve",
            "kind": 1,
            "start_time_unix_nano": "1700000000000000000",
            "end_time_unix_nano": "1700000000005000000",
            "status": {"code": 1}
        }]}]}]})
        .to_string();
        let mut out = Decoded::default();
        decode_json_line(&line, &line_at(3), &mut out);
        let s = &out.spans[0];
        assert_eq!(s.trace_id, "5b8efff798038103d269b633813fc60c");
        assert_eq!(s.span_id, "eee19b7ec3c1b174");
        assert_eq!(s.parent_span_id.as_deref(), Some("0102030405060708"));
        assert_eq!(s.kind.as_deref(), Some("internal"));
        assert_eq!(s.duration_ms(), Some(5.0));
        assert_eq!(s.status.as_ref().unwrap().code, StatusCode::Ok);
    }

    #[test]
    fn old_instrumentation_library_spans_and_documents() {
        let doc = json!([
            {"resourceSpans": [{"instrumentationLibrarySpans": [{"spans": [{
                "traceId": "0102030405060708090a0b0c0d0e0f10", "spanId": "0102030405060708", "name": "a"}]}]}]},
            {"resourceSpans": []}
        ])
        .to_string();
        let out = decode_json_document(&doc, "d.json");
        assert_eq!(out.spans.len(), 1);
        assert_eq!(out.spans[0].at.file, "d.json[0]");
        // A pretty-printed single document.
        let pretty =
            serde_json::to_string_pretty(&serde_json::from_str::<Value>(CAMEL).unwrap()).unwrap();
        let out = decode_json_document(&pretty, "p.json");
        assert_eq!(out.spans.len(), 1);
    }

    #[test]
    fn bad_lines_are_counted_and_located() {
        let text = format!("{CAMEL}\nnot json at all\n{{\"resourceMetrics\": []}}\n\n[1,2]\n");
        let mut out = decode_json_document(&text, "t.jsonl");
        assert_eq!(out.spans.len(), 1);
        assert_eq!(out.summary.records_dropped, 3);
        assert_eq!(out.summary.problems["not_json"], 1);
        assert_eq!(out.summary.problems["not_traces_data"], 2);
        let located: Vec<String> = out.summary.first.iter().map(|p| p.at.to_string()).collect();
        assert_eq!(located, ["t.jsonl:2", "t.jsonl:3", "t.jsonl:5"]);
        assert!(out.summary.first[1].message.contains("resourceMetrics"));
        out.summary.spans_used = out.spans.len() as u64;
        assert!(out.summary.adds_up());
    }

    #[test]
    fn bad_ids_drop_the_span_and_bad_attributes_only_the_attribute() {
        let line = json!({"resourceSpans": [{"scopeSpans": [{"spans": [
            {"traceId": "abc", "spanId": "0102030405060708", "name": "short"},
            {"traceId": "0102030405060708090a0b0c0d0e0f10", "spanId": "AQID", "name": "b64short"},
            {"traceId": "00000000000000000000000000000000", "spanId": "0102030405060708", "name": "zero"},
            {"traceId": "0102030405060708090a0b0c0d0e0f10", "spanId": "0102030405060708", "parentSpanId": "xyz",
             "name": "kept", "startTimeUnixNano": "soon",
             "attributes": [{"key": "llm.token_count.prompt", "value": {"intValue": "many"}},
                            {"key": "fine", "value": {"stringValue": "yes"}},
                            {"key": "odd", "value": {"fooValue": 1}}]}
        ]}]}]})
        .to_string();
        let mut out = Decoded::default();
        decode_json_line(&line, &line_at(7), &mut out);
        assert_eq!(out.summary.spans_read, 4);
        assert_eq!(out.summary.spans_dropped["bad_id"], 3);
        assert_eq!(out.spans.len(), 1);
        let kept = &out.spans[0];
        assert_eq!(kept.parent_span_id, None);
        assert_eq!(kept.start_unix_nano, None);
        assert_eq!(kept.attributes.len(), 1);
        assert_eq!(out.summary.problems["wrong_attribute_type"], 2);
        assert_eq!(out.summary.problems["bad_timestamp"], 1);
        assert_eq!(out.summary.problems["bad_id"], 4);
        let msg = &out.summary.first[0].message;
        assert!(
            msg.contains("span `short`") && msg.contains("32 hex digits"),
            "{msg}"
        );
        assert!(out
            .summary
            .first
            .iter()
            .any(|p| p.message.contains("intValue")));
        out.summary.spans_used = 1;
        assert!(out.summary.adds_up());
    }

    fn pb_request(spans: Vec<pb::Span>) -> Vec<u8> {
        // Encoded by hand from the messages: ExportTraceServiceRequest{resource_spans:[
        // ResourceSpans{resource, scope_spans:[ScopeSpans{spans}]}]}.
        let resource = pb::Resource {
            attributes: vec![pb::KeyValue {
                key: "service.name".into(),
                value: Some(pb::AnyValue {
                    value: Some(pb::Value::StringValue("rag".into())),
                }),
            }],
        };
        let mut scope = Vec::new();
        for s in spans {
            prost::encoding::message::encode(2, &s, &mut scope);
        }
        let mut rs = Vec::new();
        prost::encoding::message::encode(1, &resource, &mut rs);
        prost::encoding::bytes::encode(2, &scope, &mut rs);
        let mut req = Vec::new();
        prost::encoding::bytes::encode(1, &rs, &mut req);
        req
    }

    fn pb_span(name: &str, span: u8) -> pb::Span {
        pb::Span {
            trace_id: (1..=16).collect(),
            span_id: vec![0, 0, 0, 0, 0, 0, 0, span],
            parent_span_id: Vec::new(),
            name: name.into(),
            kind: 3,
            start_time_unix_nano: 1_700_000_000_000_000_000,
            end_time_unix_nano: 1_700_000_000_002_000_000,
            attributes: vec![pb::KeyValue {
                key: "llm.token_count.prompt".into(),
                value: Some(pb::AnyValue {
                    value: Some(pb::Value::IntValue(12)),
                }),
            }],
            events: Vec::new(),
            status: Some(pb::Status {
                message: String::new(),
                code: 2,
            }),
        }
    }

    #[test]
    fn protobuf_requests_and_concatenation() {
        let req = pb_request(vec![pb_span("a", 1), pb_span("b", 2)]);
        let out = decode_protobuf(&req, "t.pb");
        assert!(out.summary.problems.is_empty(), "{:?}", out.summary.first);
        assert_eq!(out.spans.len(), 2);
        let s = &out.spans[0];
        assert_eq!(s.trace_id, "0102030405060708090a0b0c0d0e0f10");
        assert_eq!(s.span_id, "0000000000000001");
        assert_eq!(s.kind.as_deref(), Some("client"));
        assert_eq!(s.duration_ms(), Some(2.0));
        assert_eq!(s.attributes["llm.token_count.prompt"], json!(12));
        assert_eq!(s.resource["service.name"], json!("rag"));
        assert_eq!(s.status.as_ref().unwrap().code, StatusCode::Error);
        assert!(s.at.byte_offset.is_some());
        // Two requests appended are one request.
        let mut two = req.clone();
        two.extend(pb_request(vec![pb_span("c", 3)]));
        assert_eq!(decode_protobuf(&two, "t.pb").spans.len(), 3);
        // The same bytes through the receiver's entry point.
        let via = decode_request(&req, "application/x-protobuf").unwrap();
        assert_eq!(via.spans.len(), 2);
        assert_eq!(via.spans[0].at.file, "POST /v1/traces");
    }

    #[test]
    fn a_truncated_protobuf_keeps_the_spans_before_the_cut() {
        let req = pb_request(vec![pb_span("a", 1), pb_span("b", 2)]);
        let cut = &req[..req.len() - 5];
        let out = decode_protobuf(cut, "t.pb");
        assert_eq!(out.spans.len(), 1);
        assert_eq!(out.summary.spans_read, 2);
        assert_eq!(out.summary.spans_dropped["truncated_protobuf"], 1);
        let p = &out.summary.first[0];
        assert_eq!(p.kind, "truncated_protobuf");
        let offset = p.at.byte_offset.unwrap() as usize;
        assert!(offset > 0 && offset < cut.len(), "{offset}");
        assert!(p.at.to_string().starts_with("t.pb (byte "));
        // Cut inside a key: nothing after it, the record counted.
        let out = decode_protobuf(&[0x0a], "t.pb");
        assert_eq!(out.summary.problems["truncated_protobuf"], 1);
        assert_eq!(out.summary.records_dropped, 1);
    }

    #[test]
    fn garbage_is_malformed_not_a_crash() {
        let out = decode_protobuf(b"\x0f\xff\xff", "g.pb");
        assert_eq!(out.summary.problems["malformed_protobuf"], 1);
        assert!(out.spans.is_empty());
        assert!(matches!(
            decode_request(b"\x0f\xff", "application/x-protobuf"),
            Err(RequestError::Malformed { .. })
        ));
        assert!(matches!(
            decode_request(b"{}", "text/plain"),
            Err(RequestError::UnsupportedContentType { .. })
        ));
        let json_body =
            decode_request(CAMEL.as_bytes(), "application/json; charset=utf-8").unwrap();
        assert_eq!(json_body.spans.len(), 1);
    }

    /// Random OTLP JSON lines, clean and not: both spellings of every key (sometimes both at
    /// once), hex and base64 ids (some malformed), 64-bit integers as numbers, strings,
    /// fractions and words, every `AnyValue` kind nested (some of the wrong type or with two
    /// keys), `null`s, unknown keys, escapes, duplicate keys, and now and then a cut line.
    mod gen {
        use rand::Rng;
        use rand_chacha::ChaCha8Rng;

        pub(super) type R = ChaCha8Rng;

        thread_local! {
            /// A clean line: only spans and resources with no problem that the fast path reads
            /// (drawn until one is), so that it reads many spans too.
            pub(super) static CLEAN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        }

        fn clean() -> bool {
            CLEAN.with(|c| c.get())
        }

        /// Whether the `Value` reader reads `line` without a problem, and the fast path reads
        /// it.
        fn no_problem(line: &str) -> bool {
            let mut out = crate::span::Decoded::default();
            super::decode_json_line_value(line, &super::line_at(1), &mut out);
            out.summary.problems.is_empty()
                && out.summary.records_dropped == 0
                && super::typed::decode_line(line, &super::line_at(1)).is_some()
        }

        /// A span, drawn until it has no problem on a clean line.
        fn span_of(r: &mut R, trace: &str) -> String {
            loop {
                let s = span(r, trace);
                let line =
                    format!("{{\"resourceSpans\":[{{\"scopeSpans\":[{{\"spans\":[{s}]}}]}}]}}");
                if !clean() || no_problem(&line) {
                    return s;
                }
            }
        }

        /// A resource, drawn until it has no problem on a clean line.
        fn resource(r: &mut R) -> String {
            loop {
                let res = match r.random_range(0..10) {
                    0 => "null".to_string(),
                    1 => "{}".to_string(),
                    2 => "5".to_string(),
                    _ => {
                        let a = attributes(r);
                        format!("{{\"attributes\":{a},\"droppedAttributesCount\":0}}")
                    }
                };
                let line = format!("{{\"resourceSpans\":[{{\"resource\":{res}}}]}}");
                if !clean() || no_problem(&line) {
                    return res;
                }
            }
        }

        fn pick<'a>(r: &mut R, xs: &[&'a str]) -> &'a str {
            xs[r.random_range(0..xs.len())]
        }

        fn obj(fields: &[(String, String)]) -> String {
            let inner: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
            format!("{{{}}}", inner.join(","))
        }

        fn text(r: &mut R) -> String {
            let s = pick(
                r,
                &[
                    "\"refunds\"",
                    "\"\"",
                    "\"line\\nbreak \\\"quoted\\\" \\u00e9t\\u00e9\"",
                    "\"caf\u{e9} \u{1F600}\"",
                    "\"14 days.\"",
                ],
            );
            s.to_string()
        }

        fn int(r: &mut R) -> String {
            pick(
                r,
                &[
                    "42",
                    "\"42\"",
                    "-7",
                    "\"-7\"",
                    "\" 12 \"",
                    "\"+12\"",
                    "12.5",
                    "\"12.5\"",
                    "1e3",
                    "\"many\"",
                    "9223372036854775808",
                    "18446744073709551616",
                    "\"99999999999999999999\"",
                    "0",
                    "\"0\"",
                    "true",
                    "null",
                    "[1]",
                ],
            )
            .to_string()
        }

        fn time(r: &mut R) -> String {
            pick(
                r,
                &[
                    "\"1700000000000000000\"",
                    "1700000000250000000",
                    "\"1700000000100000000\"",
                    "1.7e18",
                    "\"soon\"",
                    "\"0\"",
                    "0",
                    "\"-5\"",
                    "null",
                    "false",
                    "\" 1700000000300000000 \"",
                ],
            )
            .to_string()
        }

        fn double(r: &mut R) -> String {
            pick(
                r,
                &[
                    "0.5", "1", "-3", "1.0", "-0", "\"2.5\"", "\"NaN\"", "\"inf\"", "\"x\"",
                    "1e300", "0.1", "true",
                ],
            )
            .to_string()
        }

        pub(super) fn any_value(r: &mut R, depth: u32) -> String {
            let k = r.random_range(0..if depth > 2 { 8 } else { 14 });
            let name = |camel: &str, snake: &str, r: &mut R| -> String {
                if r.random_bool(0.8) { camel } else { snake }.to_string()
            };
            match k {
                0 | 1 => obj(&[(name("stringValue", "string_value", r), text(r))]),
                2 => obj(&[(name("intValue", "int_value", r), int(r))]),
                3 => obj(&[(name("doubleValue", "double_value", r), double(r))]),
                4 => obj(&[(
                    name("boolValue", "bool_value", r),
                    pick(r, &["true", "false", "\"true\"", "null"]).into(),
                )]),
                5 => obj(&[(
                    name("bytesValue", "bytes_value", r),
                    pick(r, &["\"AAE=\"", "7"]).into(),
                )]),
                6 => pick(r, &["{}", "null", "\"text\"", "{\"fooValue\":1}", "[]"]).into(),
                7 => {
                    let a = text(r);
                    let b = int(r);
                    pick(
                        r,
                        &[
                            "{\"stringValue\":A,\"intValue\":B}",
                            "{\"stringValue\":A,\"stringValue\":\"second\"}",
                        ],
                    )
                    .replace('A', &a)
                    .replace('B', &b)
                }
                8..=10 => {
                    let n = r.random_range(0..4);
                    let values: Vec<String> = (0..n).map(|_| any_value(r, depth + 1)).collect();
                    let inner = match r.random_range(0..8) {
                        0 => "{}".to_string(),
                        1 => "{\"values\":null}".to_string(),
                        2 => "5".to_string(),
                        3 => format!("{{\"values\":[{}],\"extra\":[1,{{}}]}}", values.join(",")),
                        _ => format!("{{\"values\":[{}]}}", values.join(",")),
                    };
                    obj(&[(name("arrayValue", "array_value", r), inner)])
                }
                _ => {
                    let n = r.random_range(0..4);
                    let values: Vec<String> = (0..n)
                        .map(|_| key_value(r, depth + 1, &["k", "k", "j", "z"]))
                        .collect();
                    let inner = match r.random_range(0..8) {
                        0 => "{}".to_string(),
                        1 => "{\"values\":null}".to_string(),
                        2 => "[]".to_string(),
                        _ => format!("{{\"values\":[{}]}}", values.join(",")),
                    };
                    obj(&[(name("kvlistValue", "kvlist_value", r), inner)])
                }
            }
        }

        pub(super) fn key_value(r: &mut R, depth: u32, keys: &[&str]) -> String {
            let key = format!("\"{}\"", pick(r, keys));
            let value = any_value(r, depth);
            match r.random_range(0..20) {
                0 => obj(&[("key".into(), key)]),
                1 => obj(&[("key".into(), "7".into()), ("value".into(), value)]),
                2 => obj(&[("value".into(), value)]),
                3 => obj(&[
                    ("key".into(), key.clone()),
                    ("key".into(), key),
                    ("value".into(), value),
                ]),
                4 => obj(&[("value".into(), value), ("key".into(), key)]),
                5 => obj(&[("key".into(), key), ("value".into(), "null".into())]),
                _ => obj(&[("key".into(), key), ("value".into(), value)]),
            }
        }

        fn attributes(r: &mut R) -> String {
            if r.random_bool(0.05) {
                return pick(r, &["null", "{}", "\"a\""]).into();
            }
            let n = r.random_range(0..6);
            let keys = [
                "input.value",
                "output.value",
                "openinference.span.kind",
                "llm.token_count.prompt",
                "service.name",
                "k",
            ];
            let items: Vec<String> = (0..n).map(|_| key_value(r, 0, &keys)).collect();
            format!("[{}]", items.join(","))
        }

        fn id(r: &mut R, bytes: usize) -> String {
            let hex: String = (0..bytes)
                .map(|_| format!("{:02x}", r.random_range(0..=255u8)))
                .collect();
            match r.random_range(0..14) {
                0 => format!("\"{}\"", hex.to_uppercase()),
                1 => {
                    use base64::Engine as _;
                    let raw: Vec<u8> = (0..bytes).map(|_| r.random_range(0..=255u8)).collect();
                    format!(
                        "\"{}\"",
                        base64::engine::general_purpose::STANDARD.encode(raw)
                    )
                }
                2 => pick(r, &["\"abc\"", "\"\"", "7", "null", "\"AQID\""]).into(),
                3 => format!("\"{}\"", "0".repeat(bytes * 2)),
                _ => format!("\"{hex}\""),
            }
        }

        fn pair(r: &mut R, camel: &str, snake: &str, value: String) -> Vec<(String, String)> {
            match r.random_range(0..20) {
                0 => vec![(camel.into(), value.clone()), (snake.into(), value)],
                1 => vec![(camel.into(), "null".into()), (snake.into(), value)],
                2..=5 => vec![(snake.into(), value)],
                _ => vec![(camel.into(), value)],
            }
        }

        fn span(r: &mut R, trace: &str) -> String {
            let mut f: Vec<(String, String)> = Vec::new();
            if r.random_bool(0.9) {
                f.push((
                    "name".into(),
                    pick(r, &["\"rag\"", "\"retrieve\"", "null", "3", "\"\""]).into(),
                ));
            }
            if r.random_bool(0.97) {
                let t = if r.random_bool(0.9) {
                    trace.to_string()
                } else {
                    id(r, 16)
                };
                f.extend(pair(r, "traceId", "trace_id", t));
            }
            if r.random_bool(0.97) {
                let s = id(r, 8);
                f.extend(pair(r, "spanId", "span_id", s));
            }
            if r.random_bool(0.6) {
                let p = if r.random_bool(0.2) {
                    "\"\"".to_string()
                } else {
                    id(r, 8)
                };
                f.extend(pair(r, "parentSpanId", "parent_span_id", p));
            }
            for (c, s) in [
                ("startTimeUnixNano", "start_time_unix_nano"),
                ("endTimeUnixNano", "end_time_unix_nano"),
            ] {
                if r.random_bool(0.9) {
                    let t = time(r);
                    f.extend(pair(r, c, s, t));
                }
            }
            if r.random_bool(0.7) {
                f.push((
                    "kind".into(),
                    pick(
                        r,
                        &[
                            "1",
                            "2",
                            "3",
                            "0",
                            "9",
                            "-1",
                            "1.0",
                            "\"SPAN_KIND_SERVER\"",
                            "\"SPAN_KIND_CLIENT\"",
                            "\"SPAN_KIND_UNSPECIFIED\"",
                            "\"other\"",
                            "null",
                            "true",
                            "9223372036854775808",
                        ],
                    )
                    .into(),
                ));
            }
            if r.random_bool(0.9) {
                let a = attributes(r);
                f.push(("attributes".into(), a));
            }
            if r.random_bool(0.3) {
                let n = r.random_range(0..3);
                let events: Vec<String> = (0..n)
                    .map(|_| {
                        let mut e: Vec<(String, String)> = Vec::new();
                        if r.random_bool(0.9) {
                            e.push((
                                "name".into(),
                                pick(r, &["\"exception\"", "null", "1"]).into(),
                            ));
                        }
                        if r.random_bool(0.8) {
                            let t = time(r);
                            e.extend(pair(r, "timeUnixNano", "time_unix_nano", t));
                        }
                        if r.random_bool(0.7) {
                            let a = attributes(r);
                            e.push(("attributes".into(), a));
                        }
                        if r.random_bool(0.05) {
                            return pick(r, &["null", "3", "[]"]).to_string();
                        }
                        obj(&e)
                    })
                    .collect();
                let v = if r.random_bool(0.05) {
                    pick(r, &["null", "{}"]).to_string()
                } else {
                    format!("[{}]", events.join(","))
                };
                f.push(("events".into(), v));
            }
            if r.random_bool(0.6) {
                let mut st: Vec<(String, String)> = Vec::new();
                if r.random_bool(0.7) {
                    st.push((
                        "code".into(),
                        pick(
                            r,
                            &[
                                "0",
                                "1",
                                "2",
                                "7",
                                "2.0",
                                "\"STATUS_CODE_ERROR\"",
                                "\"STATUS_CODE_OK\"",
                                "\"STATUS_CODE_UNSET\"",
                                "null",
                                "false",
                            ],
                        )
                        .into(),
                    ));
                }
                if r.random_bool(0.5) {
                    st.push((
                        "message".into(),
                        pick(r, &["\"failed\"", "null", "5"]).into(),
                    ));
                }
                let v = if r.random_bool(0.05) {
                    pick(r, &["null", "\"ok\"", "[]"]).to_string()
                } else {
                    obj(&st)
                };
                f.push(("status".into(), v));
            }
            if r.random_bool(0.2) {
                f.push((
                    pick(
                        r,
                        &["flags", "traceState", "droppedAttributesCount", "links"],
                    )
                    .into(),
                    pick(
                        r,
                        &["1", "\"x\"", "[{\"a\":[1,2,{\"b\":null}]}]", "null", "1e5"],
                    )
                    .into(),
                ));
            }
            if r.random_bool(0.02) {
                return pick(r, &["null", "\"span\"", "[]"]).into();
            }
            // Shuffle the keys now and then: readers must not depend on their order.
            if r.random_bool(0.3) {
                let n = f.len();
                for i in (1..n).rev() {
                    f.swap(i, r.random_range(0..=i));
                }
            }
            obj(&f)
        }

        pub(super) fn line(r: &mut R) -> String {
            let trace = id(r, 16);
            let mut rss: Vec<String> = Vec::new();
            for _ in 0..r.random_range(0..3) {
                let mut f: Vec<(String, String)> = Vec::new();
                if r.random_bool(0.7) {
                    let res = resource(r);
                    f.push(("resource".into(), res));
                }
                for key in ["scopeSpans", "scope_spans", "instrumentationLibrarySpans"] {
                    let p = if key == "scopeSpans" { 0.8 } else { 0.15 };
                    if !r.random_bool(p) {
                        continue;
                    }
                    let mut scopes: Vec<String> = Vec::new();
                    for _ in 0..r.random_range(0..3) {
                        let spans: Vec<String> = (0..r.random_range(0..4))
                            .map(|_| span_of(r, &trace))
                            .collect();
                        let spans = if r.random_bool(0.03) {
                            "null".to_string()
                        } else {
                            format!("[{}]", spans.join(","))
                        };
                        scopes.push(format!(
                            "{{\"scope\":{{\"name\":\"app\"}},\"spans\":{spans}}}"
                        ));
                    }
                    let v = if r.random_bool(0.03) {
                        pick(r, &["null", "{}"]).to_string()
                    } else {
                        format!("[{}]", scopes.join(","))
                    };
                    f.push((key.into(), v));
                }
                rss.push(obj(&f));
            }
            let rs = format!("[{}]", rss.join(","));
            let top = match r.random_range(if clean() { 8..40 } else { 0..40 }) {
                0 => "[1,2]".to_string(),
                1 => "{\"resourceMetrics\":[]}".to_string(),
                2 => format!("{{\"resourceSpans\":{rs},\"resourceSpans\":[]}}"),
                3 => format!("{{\"resource_spans\":{rs}}}"),
                4 => format!("{{\"resourceSpans\":{rs},\"resource_spans\":{rs}}}"),
                5 => "{\"resourceSpans\":null}".to_string(),
                6 => format!(
                    "{{\"x\":{},\"resourceSpans\":{rs}}}",
                    "[".repeat(130) + &"]".repeat(130)
                ),
                7 => format!("{{\"x\":1e400,\"resourceSpans\":{rs}}}"),
                _ => format!("{{\"resourceSpans\":{rs}}}"),
            };
            if !clean() && r.random_bool(0.02) {
                let cut = r.random_range(1..top.len());
                // Cut on a character boundary.
                let cut = (1..=cut)
                    .rev()
                    .find(|&i| top.is_char_boundary(i))
                    .unwrap_or(1);
                return top[..cut].to_string();
            }
            top
        }
    }

    #[test]
    fn typed_matches_value_reader() {
        use rand::SeedableRng;
        let mut r = gen::R::seed_from_u64(15);
        let mut fast = 0;
        let mut spans = 0;
        for n in 1..=6000 {
            gen::CLEAN.with(|c| c.set(n % 2 == 0));
            let line = gen::line(&mut r);
            let at = line_at(n);
            let mut via_value = Decoded::default();
            decode_json_line_value(line.trim(), &at, &mut via_value);
            let mut via_line = Decoded::default();
            decode_json_line(&line, &at, &mut via_line);
            if typed::decode_line(line.trim(), &at).is_some() {
                fast += 1;
                spans += via_line.spans.len();
            }
            assert_eq!(via_line.spans, via_value.spans, "line {n}: {line}");
            assert_eq!(
                serde_json::to_string(&via_line.spans).unwrap(),
                serde_json::to_string(&via_value.spans).unwrap(),
                "line {n} (key order): {line}"
            );
            assert_eq!(via_line.summary, via_value.summary, "line {n}: {line}");
        }
        // Both paths were exercised: many clean lines with spans, and many not.
        assert!(
            fast > 600 && fast < 5400,
            "{fast} of 6000 lines on the fast path"
        );
        assert!(spans > 300, "{spans} spans on the fast path");
    }

    #[test]
    fn the_fast_path_reads_clean_lines_and_hands_the_rest_over() {
        let at = line_at(1);
        // The issue's first example, and a clean snake_case line with base64 ids.
        assert!(typed::decode_line(CAMEL, &at).is_some());
        let snake = json!({"resource_spans": [{"scope_spans": [{"spans": [{
            "trace_id": "W47/95gDgQPSabYzgT/GDA==", "span_id": "7uGbfsPBsXQ=",
            "name": "retrieve", "kind": 1, "start_time_unix_nano": "1700000000000000000"
        }]}]}]})
        .to_string();
        assert!(typed::decode_line(&snake, &at).is_some());
        // A problem of any kind: the Value reader's turn.
        for bad in [
            r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"abc","spanId":"0102030405060708"}]}]}]}"#,
            r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","startTimeUnixNano":"soon"}]}]}]}"#,
            r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","attributes":[{"key":"n","value":{"intValue":"many"}}]}]}]}]}"#,
            r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","trace_id":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708"}]}]}]}"#,
            r#"{"resourceMetrics":[]}"#,
            "not json",
        ] {
            assert!(typed::decode_line(bad, &at).is_none(), "{bad}");
        }
    }

    #[test]
    fn sniffing() {
        assert_eq!(
            InputFormat::sniff(b"  {\"resourceSpans\""),
            InputFormat::OtlpJson
        );
        assert_eq!(InputFormat::sniff(b"\xef\xbb\xbf["), InputFormat::OtlpJson);
        assert_eq!(InputFormat::sniff(b"\x0a\x90\x01"), InputFormat::OtlpProto);
    }
}
