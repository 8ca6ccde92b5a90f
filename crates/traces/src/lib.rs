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

pub mod problems;
pub mod span;
