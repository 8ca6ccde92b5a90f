//! Production traces in: spans from OTLP files and requests, Phoenix and Langfuse exports,
//! turned into Oloproof trace records (one case and its trace per trace id).
//!
//! The flow is one way, and every step is pure (bytes in, values out; the CLI reads files
//! and sockets):
//! 1. a reader per source decodes its bytes into [`span::Span`]s, counting what it could not
//!    read as [`problems::Problem`]s with their location (`file:line` or a byte offset) —
//!    `otlp` (JSON Lines of `TracesData`, binary `ExportTraceServiceRequest`), `phoenix`,
//!    `langfuse`;
//! 2. `assemble` groups spans by trace id, rebuilds each tree from parent ids, reads the
//!    OpenTelemetry GenAI and OpenInference attributes (`conventions`) and writes one trace
//!    record per trace (the `trace` dataset format of `oloproof_core::dataset`, with its
//!    `production` key), naming what the spans did not carry instead of guessing it.
//!
//! Nothing is dropped silently: [`problems::ImportSummary`] adds up to the spans read.
//!
//! ```
//! use oloproof_traces::{decode_json_line, Assembler, AssembleOptions};
//! use oloproof_traces::span::{Decoded, Location};
//!
//! let line = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{
//!   "traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331",
//!   "name":"rag","startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000400000000",
//!   "attributes":[{"key":"input.value","value":{"stringValue":"How long do refunds take?"}},
//!                 {"key":"output.value","value":{"stringValue":"14 days."}}]}]}]}]}"#;
//! let mut decoded = Decoded::default();
//! let at = Location { file: "traces.jsonl".into(), line: Some(1), byte_offset: None };
//! decode_json_line(line, &at, &mut decoded);
//! let mut assembler = Assembler::new(AssembleOptions::default(), None);
//! assembler.push(decoded);
//! let (records, summary) = assembler.finish();
//! let record = records[0].value().unwrap(); // records[0].json is its JSON Lines line
//! assert_eq!(record["answer"], "14 days.");
//! assert_eq!(record["latency_ms"]["total"], 400.0);
//! assert!(records[0].not_recorded.contains(&"retrieval".to_string()));
//! assert!(summary.adds_up());
//! ```

#![warn(missing_docs)]

pub mod assemble;
pub mod attributes;
pub mod conventions;
pub mod error;
mod json_out;
pub mod langfuse;
pub mod lines;
pub mod otlp;
pub mod phoenix;
pub mod problems;
pub mod span;
pub mod timestamp;

pub use assemble::{AssembleOptions, Assembler, RecordLine};
pub use error::RequestError;
pub use otlp::files::{decode_logs_file, decode_protobuf_file, undecodable_problem, Compression};
pub use otlp::logs::decode_logs_request_at;
pub use otlp::{
    decode_json_document, decode_json_line, decode_json_lines, decode_protobuf, decode_request,
    decode_request_at, InputFormat,
};
