//! OTLP logs in: the log records that carry what a span did not — the events of the
//! OpenTelemetry GenAI instrumentations.
//!
//! The official GenAI instrumentations (`opentelemetry-instrumentation-openai-v2` and the
//! others built on `opentelemetry-util-genai`) record message content as **log records**, not
//! on the span, each with the trace and span id of the model call it describes:
//! - semantic conventions ≤ 1.36 (their default): one record per message, named
//!   `gen_ai.system.message`, `gen_ai.user.message`, `gen_ai.assistant.message`,
//!   `gen_ai.tool.message` and `gen_ai.choice`, the message in the body (`{content}`, or
//!   `{index, finish_reason, message: {role, content}}` for a choice);
//! - the current conventions (`OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental` with
//!   content captured as events): one `gen_ai.client.inference.operation.details` record
//!   whose attributes are the call's `gen_ai.input.messages`, `gen_ai.output.messages`,
//!   `gen_ai.system_instructions`, usage and models;
//! - `gen_ai.evaluation.result` records (scores and feedback) of either.
//!
//! Each such record becomes a [`LogEvent`]: a [`SpanEvent`] of its span, named by the
//! record's `eventName` (or its `event.name` attribute, as older SDKs wrote it), its
//! attributes those of the record plus the fields of a map body (`content`, `message`, …;
//! another body is the attribute `body`). The assembler adds it to its span, where the
//! conventions read it as they read a span event. Records without an event name (ordinary
//! application logs) and records that name no span are counted, by reason, and not kept.
//!
//! Read: JSON (`LogsData` per line, as the Collector's file exporter writes logs, or one
//! document; lowerCamelCase or snake_case keys, ids in hex or base64) and binary
//! `ExportLogsServiceRequest` / `LogsData` (one message, or the framed and compressed layouts
//! of [`super::files`]). A record that cannot be read is one unreadable input record, located.

use prost::Message as _;
use serde_json::Value;

use super::{
    field, get, int_of, json_any_value, json_attributes, json_id, kind_of, pb, pb_any_value,
    pb_attributes, pb_id, walk_problem, Fields, WalkError,
};
use crate::problems::{ImportSummary, Problem};
use crate::span::{Decoded, Location, LogEvent, SpanEvent};

/// Why a log record that was read is not kept (counted under
/// [`ImportSummary::log_records_skipped`]): ordinary logs and records that name no span.
pub mod skipped {
    /// No event name: an application log line, not an event about a span.
    pub const NOT_AN_EVENT: &str = "not_an_event";
    /// An event without a trace id or a span id: it cannot be joined to a span.
    pub const NO_SPAN: &str = "no_span";
    /// Its trace is not among the spans imported.
    pub const TRACE_NOT_IMPORTED: &str = "trace_not_imported";
    /// Its trace was imported, but not the span it names.
    pub const SPAN_NOT_IN_TRACE: &str = "span_not_in_trace";
    /// Its trace was already written when the record was read (give `--logs` files, which
    /// are read first, rather than mixing logs into the trace inputs).
    pub const AFTER_ITS_TRACE: &str = "after_its_trace";
}

/// The event name of `gen_ai.client.inference.operation.details` (current GenAI
/// conventions): its `gen_ai.*` attributes are those of the span it names.
pub const OPERATION_DETAILS: &str = "gen_ai.client.inference.operation.details";

/// A log record being read, in either encoding.
struct Record {
    trace_id: Result<Option<String>, String>,
    span_id: Result<Option<String>, String>,
    event_name: String,
    time_unix_nano: Option<u64>,
    attributes: crate::span::Attributes,
    body: Option<Value>,
}

/// Turns a read record into an event of its span, or counts why it is not one.
fn keep(record: Record, at: Location, out: &mut Decoded) {
    let Record {
        trace_id,
        span_id,
        event_name,
        time_unix_nano,
        mut attributes,
        body,
    } = record;
    let (trace_id, span_id) = match (trace_id, span_id) {
        (Ok(t), Ok(s)) => (t, s),
        (Err(e), _) | (_, Err(e)) => {
            // An id that is not one: an unreadable input record (it counts against
            // --max-error-rate, as a bad line does), located.
            out.summary.drop_record(Problem {
                kind: "bad_id".into(),
                at,
                message: format!("a log record's {e}; the record is dropped"),
            });
            return;
        }
    };
    out.summary.log_records_read += 1;
    let name = if event_name.is_empty() {
        match attributes.remove("event.name") {
            Some(Value::String(s)) => s,
            Some(other) => {
                attributes.insert("event.name", other);
                String::new()
            }
            None => String::new(),
        }
    } else {
        event_name
    };
    if name.is_empty() {
        skip(&mut out.summary, skipped::NOT_AN_EVENT);
        return;
    }
    let (Some(trace_id), Some(span_id)) = (trace_id, span_id) else {
        skip(&mut out.summary, skipped::NO_SPAN);
        return;
    };
    match body {
        None | Some(Value::Null) => {}
        Some(Value::Object(fields)) => {
            for (k, v) in fields {
                attributes.insert_if_absent(k, v);
            }
        }
        Some(other) => {
            attributes.insert_if_absent("body", other);
        }
    }
    out.log_events.push(LogEvent {
        trace_id,
        span_id,
        event: SpanEvent {
            name,
            time_unix_nano,
            attributes,
        },
        at,
    });
}

/// Counts a log record read and not kept, under `reason`.
pub(crate) fn skip(summary: &mut ImportSummary, reason: &str) {
    *summary
        .log_records_skipped
        .entry(reason.to_string())
        .or_default() += 1;
}

/// Reads one JSON Lines line of `LogsData` (blank lines are skipped) into `out`.
pub fn decode_logs_json_line(line: &str, at: &Location, out: &mut Decoded) {
    let line = line.trim();
    if line.is_empty() {
        return;
    }
    match serde_json::from_str::<Value>(line) {
        Ok(value) => decode_logs_json_value(&value, at, out),
        Err(e) => out.summary.drop_record(Problem {
            kind: "not_json".into(),
            at: at.clone(),
            message: format!(
                "not JSON ({e}): each line of an OTLP JSON logs file must be one `LogsData` object, as the Collector's file exporter writes"
            ),
        }),
    }
}

/// Reads a whole JSON logs document: one `LogsData` object, an array of them, or — when the
/// text does not parse as one document — JSON Lines, each line located.
pub fn decode_logs_json_document(text: &str, file: &str) -> Decoded {
    super::json_document(text, file, decode_logs_json_value, decode_logs_json_line)
}

/// Reads one parsed `LogsData` (or `ExportLogsServiceRequest`: the same JSON) into `out`.
pub fn decode_logs_json_value(value: &Value, at: &Location, out: &mut Decoded) {
    let not_logs = |out: &mut Decoded, what: String| {
        out.summary.drop_record(Problem {
            kind: "not_logs_data".into(),
            at: at.clone(),
            message: format!(
                "not OTLP `LogsData`: {what}, not an object with `resourceLogs` (a traces file is given as FILE, not with --logs)"
            ),
        })
    };
    let Some(obj) = value.as_object() else {
        not_logs(out, format!("a JSON {}", kind_of(value)));
        return;
    };
    let Some(resource_logs) = get(obj, &["resourceLogs", "resource_logs"]) else {
        let keys: Vec<&str> = obj.keys().map(String::as_str).take(5).collect();
        not_logs(
            out,
            if keys.is_empty() {
                "an empty object".to_string()
            } else {
                format!("an object with keys {}", keys.join(", "))
            },
        );
        return;
    };
    let Some(resource_logs) = resource_logs.as_array() else {
        not_logs(
            out,
            format!("`resourceLogs` is a {}", kind_of(resource_logs)),
        );
        return;
    };
    for rl in resource_logs {
        let scopes = ["scopeLogs", "scope_logs", "instrumentationLibraryLogs"]
            .iter()
            .filter_map(|k| rl.get(*k))
            .filter_map(Value::as_array)
            .flatten();
        for scope in scopes {
            let Some(records) = field(scope, "logRecords", "log_records").and_then(Value::as_array)
            else {
                continue;
            };
            for r in records {
                json_record(r, at, out);
            }
        }
    }
}

/// One JSON `LogRecord`.
fn json_record(v: &Value, at: &Location, out: &mut Decoded) {
    let id = |camel: &str, snake: &str, bytes: usize| json_id(v, camel, snake, bytes);
    let time = |camel: &str, snake: &str| {
        field(v, camel, snake)
            .and_then(int_of)
            .and_then(|i| u64::try_from(i).ok())
            .filter(|t| *t > 0)
    };
    let event_name = field(v, "eventName", "event_name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let what = if event_name.is_empty() {
        "a log record".to_string()
    } else {
        format!("log record `{event_name}`")
    };
    let attributes = v
        .get("attributes")
        .map(|a| json_attributes(a, at, &what, &mut out.summary))
        .unwrap_or_default();
    let body = match v.get("body").filter(|b| !b.is_null()) {
        None => None,
        Some(b) => match json_any_value(b) {
            Ok(value) => Some(value),
            Err(e) => {
                out.summary.note(Problem {
                    kind: "wrong_attribute_type".into(),
                    at: at.clone(),
                    message: format!("{what}: `body`: {e}; the body is left out"),
                });
                None
            }
        },
    };
    let record = Record {
        trace_id: id("traceId", "trace_id", 16),
        span_id: id("spanId", "span_id", 8),
        time_unix_nano: time("timeUnixNano", "time_unix_nano")
            .or_else(|| time("observedTimeUnixNano", "observed_time_unix_nano")),
        event_name,
        attributes,
        body,
    };
    keep(record, at.clone(), out);
}

/// Decodes one OTLP/HTTP logs request body (`POST /v1/logs`: protobuf or JSON by
/// `content_type`), its records located in `at` (`POST /v1/logs`, or `POST /v1/logs #SEQ`
/// for a stored one).
///
/// # Errors
///
/// Another content type, a JSON body that is not UTF-8 or not JSON, and a body of which no log
/// record could be read while something was unreadable (not an OTLP logs request). A request
/// with some unreadable records is read; they are counted in its summary.
pub fn decode_logs_request_at(
    bytes: &[u8],
    content_type: &str,
    at: &str,
) -> Result<Decoded, crate::error::RequestError> {
    let decoded = super::request_body(
        bytes,
        content_type,
        at,
        decode_logs_protobuf_into,
        decode_logs_json_value,
    )?;
    super::readable(
        decoded,
        |d| d.summary.log_records_read > 0,
        "no log record could be read",
    )
}

/// Decodes one binary `ExportLogsServiceRequest` (or `LogsData`) that starts at byte `base`
/// of `file` into `out`, records located by byte offset.
pub(super) fn decode_logs_protobuf_into(bytes: &[u8], file: &str, base: usize, out: &mut Decoded) {
    let at = |offset: usize| Location {
        file: file.to_string(),
        line: None,
        byte_offset: Some(offset as u64),
    };
    let unreadable = |out: &mut Decoded, e: WalkError| out.summary.drop_record(walk_problem(e, at));
    'top: for top in Fields::new(bytes, base) {
        let top = match top {
            Ok(f) => f,
            Err(e) => {
                unreadable(out, e);
                break;
            }
        };
        if top.number != 1 || !top.len {
            continue;
        }
        // `scope_logs` (2) and the deprecated `instrumentation_library_logs` (1000); the
        // resource's attributes are not needed to join a record to its span.
        for f in Fields::new(top.data, top.data_offset) {
            let f = match f {
                Ok(f) => f,
                Err(e) => {
                    unreadable(out, e);
                    break 'top;
                }
            };
            if !(f.len && (f.number == 2 || f.number == 1000)) {
                continue;
            }
            // A message whose declared length runs past the end was cut: between two whole
            // records too, where no record is itself cut.
            let cut_at = (top.cut || f.cut).then_some(base + bytes.len());
            let mut reported = false;
            for rf in Fields::new(f.data, f.data_offset) {
                let rf = match rf {
                    Ok(rf) => rf,
                    Err(e) => {
                        unreadable(out, e);
                        break 'top;
                    }
                };
                if rf.number != 2 || !rf.len {
                    continue;
                }
                if rf.cut {
                    unreadable(out, WalkError::Truncated(rf.offset));
                    reported = true;
                    break;
                }
                match pb::LogRecord::decode(rf.data) {
                    Ok(r) => pb_record(r, at(rf.offset), out),
                    Err(e) => out.summary.drop_record(Problem {
                        kind: "malformed_protobuf".into(),
                        at: at(rf.offset),
                        message: format!(
                            "this log record is not a valid OTLP `LogRecord` ({e}); it is dropped"
                        ),
                    }),
                }
            }
            if let Some(end) = cut_at {
                if !reported {
                    unreadable(out, WalkError::Truncated(end));
                }
                break 'top;
            }
        }
    }
}

/// One protobuf `LogRecord`.
fn pb_record(r: pb::LogRecord, at: Location, out: &mut Decoded) {
    let what = if r.event_name.is_empty() {
        "a log record".to_string()
    } else {
        format!("log record `{}`", r.event_name)
    };
    let attributes = pb_attributes(r.attributes, &at, &what, &mut out.summary);
    let body = r
        .body
        .map(|b| pb_any_value(b, "body", &at, &what, &mut out.summary));
    let time = [r.time_unix_nano, r.observed_time_unix_nano]
        .into_iter()
        .find(|t| *t > 0);
    let record = Record {
        trace_id: pb_id(&r.trace_id, 16, "trace_id"),
        span_id: pb_id(&r.span_id, 8, "span_id"),
        event_name: r.event_name,
        time_unix_nano: time,
        attributes,
        body,
    };
    keep(record, at, out);
}

/// Adds `events` (all of one trace) to the spans they name, in time order among each span's
/// own events; a `gen_ai.client.inference.operation.details` event also gives its span the
/// `gen_ai.*` attributes the span does not have. Counts each event used or skipped
/// ([`skipped::SPAN_NOT_IN_TRACE`]).
pub(crate) fn attach(
    spans: &mut [crate::span::Span],
    events: Vec<LogEvent>,
    summary: &mut ImportSummary,
) {
    if events.is_empty() {
        return;
    }
    let mut touched = vec![false; spans.len()];
    // The first span of each id (a later duplicate is dropped when the record is built).
    let mut index: foldhash::HashMap<String, usize> = foldhash::HashMap::default();
    for (i, s) in spans.iter().enumerate() {
        index.entry(s.span_id.clone()).or_insert(i);
    }
    for e in events {
        let Some(&i) = index.get(&e.span_id) else {
            skip(summary, skipped::SPAN_NOT_IN_TRACE);
            continue;
        };
        let span = &mut spans[i];
        if e.event.name == OPERATION_DETAILS {
            for (k, v) in &e.event.attributes {
                if k.starts_with("gen_ai.") && !span.attributes.contains_key(k) {
                    span.attributes.insert(k, v.clone());
                }
            }
        }
        span.events.push(e.event);
        touched[i] = true;
        summary.log_records_used += 1;
    }
    for (span, touched) in spans.iter_mut().zip(touched) {
        if touched {
            // Stable: events without a time keep their place after the timed ones.
            span.events
                .sort_by_key(|e| (e.time_unix_nano.is_none(), e.time_unix_nano));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at() -> Location {
        Location {
            file: "logs.jsonl".into(),
            line: Some(1),
            byte_offset: None,
        }
    }

    /// A `LogsData` line of the records given (OTLP JSON `logRecords`).
    fn line(records: Value) -> String {
        json!({"resourceLogs": [{"resource": {}, "scopeLogs": [{"scope": {"name": "s"}, "logRecords": records}]}]})
            .to_string()
    }

    #[test]
    fn a_legacy_message_event_keeps_its_body_fields_as_attributes() {
        let mut out = Decoded::default();
        let l = line(json!([{
            "eventName": "gen_ai.choice",
            "traceId": "ZoXt7xsctn5XdbCXhVoqjg==", "spanId": "N0CEC66jXxw=",
            "observedTimeUnixNano": "1796619963010234487",
            "attributes": [{"key": "gen_ai.system", "value": {"stringValue": "openai"}}],
            "body": {"kvlistValue": {"values": [
                {"key": "index", "value": {"intValue": "0"}},
                {"key": "message", "value": {"kvlistValue": {"values": [
                    {"key": "role", "value": {"stringValue": "assistant"}},
                    {"key": "content", "value": {"stringValue": "Refunds take 14 days."}}]}}}]}}
        }]));
        decode_logs_json_line(&l, &at(), &mut out);
        assert_eq!(out.log_events.len(), 1);
        let e = &out.log_events[0];
        assert_eq!(e.trace_id, "6685edef1b1cb67e5775b097855a2a8e");
        assert_eq!(e.span_id, "3740840baea35f1c");
        assert_eq!(e.event.name, "gen_ai.choice");
        assert_eq!(e.event.time_unix_nano, Some(1_796_619_963_010_234_487));
        assert_eq!(e.event.attributes["gen_ai.system"], "openai");
        assert_eq!(
            e.event.attributes["message"],
            json!({"role": "assistant", "content": "Refunds take 14 days."})
        );
        assert_eq!(e.event.attributes["index"], 0);
        assert_eq!(out.summary.log_records_read, 1);
    }

    #[test]
    fn ordinary_logs_and_records_without_a_span_are_counted_not_kept() {
        let mut out = Decoded::default();
        let l = line(json!([
            {"body": {"stringValue": "GET /health 200"}, "traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331"},
            {"eventName": "gen_ai.user.message", "body": {"kvlistValue": {"values": [{"key": "content", "value": {"stringValue": "hi"}}]}}},
            {"attributes": [{"key": "event.name", "value": {"stringValue": "gen_ai.user.message"}}],
             "traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
             "body": {"stringValue": "plain"}},
            {"eventName": "gen_ai.choice", "traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "not-an-id"}
        ]));
        decode_logs_json_line(&l, &at(), &mut out);
        assert_eq!(
            out.summary.log_records_read, 3,
            "the record with a bad id is not read"
        );
        assert_eq!(out.summary.records_dropped_by["bad_id"], 1);
        assert_eq!(
            out.log_events.len(),
            1,
            "the event named by `event.name` is kept"
        );
        assert_eq!(out.log_events[0].event.name, "gen_ai.user.message");
        assert_eq!(out.log_events[0].event.attributes["body"], "plain");
        assert!(!out.log_events[0]
            .event
            .attributes
            .contains_key("event.name"));
        assert_eq!(out.summary.log_records_skipped[skipped::NOT_AN_EVENT], 1);
        assert_eq!(out.summary.log_records_skipped[skipped::NO_SPAN], 1);
        assert_eq!(out.summary.problems["bad_id"], 1);
        assert_eq!(out.summary.first[0].at.to_string(), "logs.jsonl:1");
        assert!(
            out.summary.first[0]
                .message
                .contains("`spanId` must be 8 bytes"),
            "{}",
            out.summary.first[0].message
        );
        // Read = kept (used or skipped once assembled) + skipped already.
        let skipped: u64 = out.summary.log_records_skipped.values().sum();
        assert_eq!(
            out.summary.log_records_read,
            out.log_events.len() as u64 + skipped
        );
    }

    #[test]
    fn a_traces_line_or_garbage_is_an_unreadable_record() {
        let mut out = Decoded::default();
        decode_logs_json_line(r#"{"resourceSpans": []}"#, &at(), &mut out);
        decode_logs_json_line("not json", &at(), &mut out);
        assert_eq!(out.summary.records_dropped, 2);
        assert_eq!(out.summary.records_dropped_by["not_logs_data"], 1);
        assert_eq!(out.summary.records_dropped_by["not_json"], 1);
        assert!(out.summary.first[0]
            .message
            .contains("with keys resourceSpans"));
    }

    fn pb_logs(records: Vec<pb::LogRecord>) -> Vec<u8> {
        pb::LogsData {
            resource_logs: vec![pb::ResourceLogs {
                scope_logs: vec![pb::ScopeLogs {
                    log_records: records,
                }],
            }],
        }
        .encode_to_vec()
    }

    fn pb_record(name: &str, span: u8, content: &str) -> pb::LogRecord {
        pb::LogRecord {
            time_unix_nano: 0,
            observed_time_unix_nano: 1_700_000_000_000_000_000 + u64::from(span),
            body: Some(pb::AnyValue {
                value: Some(pb::Value::KvlistValue(pb::KeyValueList {
                    values: vec![pb::KeyValue {
                        key: "content".into(),
                        value: Some(pb::AnyValue {
                            value: Some(pb::Value::StringValue(content.into())),
                        }),
                    }],
                })),
            }),
            attributes: Vec::new(),
            trace_id: vec![0x0a; 16],
            span_id: vec![span; 8],
            event_name: name.into(),
        }
    }

    #[test]
    fn protobuf_records_read_as_the_json_ones_and_a_cut_is_located() {
        let bytes = pb_logs(vec![
            pb_record("gen_ai.user.message", 1, "How long do refunds take?"),
            pb_record("gen_ai.system.message", 2, "Answer briefly."),
        ]);
        let mut out = Decoded::default();
        decode_logs_protobuf_into(&bytes, "logs.pb", 0, &mut out);
        assert_eq!(out.log_events.len(), 2);
        assert_eq!(out.log_events[0].trace_id, "0a".repeat(16));
        assert_eq!(out.log_events[0].span_id, "01".repeat(8));
        assert_eq!(
            out.log_events[0].event.attributes["content"],
            "How long do refunds take?"
        );
        assert_eq!(
            out.log_events[1].event.time_unix_nano,
            Some(1_700_000_000_000_000_002)
        );
        assert!(out.log_events[0].at.byte_offset.is_some());

        let mut cut = Decoded::default();
        decode_logs_protobuf_into(&bytes[..bytes.len() - 5], "logs.pb", 0, &mut cut);
        assert_eq!(cut.log_events.len(), 1, "the record before the cut is kept");
        assert_eq!(cut.summary.records_dropped_by["truncated_protobuf"], 1);
        // Cut exactly after the first record: no record is cut, the message still is.
        let second = pb_logs(vec![pb_record(
            "gen_ai.system.message",
            2,
            "Answer briefly.",
        )]);
        let record_len = second.len() - 6; // the three one-byte tags and lengths around it
        let mut boundary = Decoded::default();
        decode_logs_protobuf_into(
            &bytes[..bytes.len() - record_len - 2],
            "logs.pb",
            0,
            &mut boundary,
        );
        assert_eq!(boundary.log_events.len(), 1);
        assert_eq!(boundary.summary.records_dropped_by["truncated_protobuf"], 1);
        assert_eq!(
            boundary.summary.first[0].at.byte_offset,
            Some((bytes.len() - record_len - 2) as u64)
        );
    }

    #[test]
    fn attached_events_join_their_span_in_time_order_and_details_fill_its_attributes() {
        let span = |id: &str| crate::span::Span {
            trace_id: "t".into(),
            span_id: id.into(),
            name: "chat".into(),
            attributes: [("gen_ai.request.model".to_string(), json!("m"))].into(),
            ..Default::default()
        };
        let mut spans = vec![span("a"), span("b")];
        spans[0].events.push(SpanEvent {
            name: "own".into(),
            time_unix_nano: Some(20),
            attributes: Default::default(),
        });
        let event = |span: &str, name: &str, t: u64, attrs: Value| LogEvent {
            trace_id: "t".into(),
            span_id: span.into(),
            event: SpanEvent {
                name: name.into(),
                time_unix_nano: Some(t),
                attributes: serde_json::from_value(attrs).unwrap(),
            },
            at: at(),
        };
        let mut summary = ImportSummary::default();
        attach(
            &mut spans,
            vec![
                event("a", "gen_ai.choice", 30, json!({})),
                event("a", "gen_ai.user.message", 10, json!({})),
                event(
                    "b",
                    OPERATION_DETAILS,
                    5,
                    json!({"gen_ai.input.messages": [{"role": "user"}], "gen_ai.request.model": "other", "x": 1}),
                ),
                event("c", "gen_ai.choice", 1, json!({})),
            ],
            &mut summary,
        );
        let names: Vec<&str> = spans[0].events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["gen_ai.user.message", "own", "gen_ai.choice"]);
        assert_eq!(
            spans[1].attributes["gen_ai.input.messages"],
            json!([{"role": "user"}])
        );
        assert_eq!(
            spans[1].attributes["gen_ai.request.model"], "m",
            "the span's own wins"
        );
        assert!(
            !spans[1].attributes.contains_key("x"),
            "only gen_ai.* attributes"
        );
        assert_eq!(summary.log_records_used, 3);
        assert_eq!(summary.log_records_skipped[skipped::SPAN_NOT_IN_TRACE], 1);
    }
}
