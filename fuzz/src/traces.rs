//! Production traces in (`oloproof import`, `oloproof collect`): OTLP JSON Lines and protobuf,
//! an OTLP/HTTP body, Phoenix and Langfuse exports, each decoded and then assembled into
//! trace records.
//!
//! Asserted: the readers never stop on bad input, so nothing is rejected as a whole but an
//! OTLP/HTTP body (`decode_request`'s error, answered 400/415). What they could not read is
//! counted and located: the import summary adds up (spans read = used + dropped), every kept
//! problem is located in the input (a line within the file, or a byte offset within the
//! bytes), and every record written is a JSON object with an `id`.

use oloproof_traces::langfuse::LangfuseReader;
use oloproof_traces::phoenix::PhoenixReader;
use oloproof_traces::span::{Decoded, Location};
use oloproof_traces::{AssembleOptions, Assembler};

use crate::check::text;

const FILE: &str = "traces";

fn at_line(n: usize) -> Location {
    Location {
        file: FILE.into(),
        line: Some(n),
        byte_offset: None,
    }
}

/// Assembles `decoded` and checks the accounting and the records.
fn assemble_and_check(decoded: Decoded, lines: usize, bytes: usize) {
    for p in &decoded.summary.first {
        check_location(&p.at, lines, bytes);
    }
    let mut assembler = Assembler::new(AssembleOptions::default(), None);
    let mut records = assembler.push(decoded);
    let (rest, summary) = assembler.finish();
    records.extend(rest);
    assert!(summary.adds_up(), "the summary does not add up: {summary:?}");
    assert_eq!(summary.records, records.len() as u64, "records counted");
    for line in &records {
        // Each record is one JSON Lines line, written straight from the spans: it must parse,
        // and say what its spans did not carry as its `not_recorded` does.
        assert_eq!(line.json.last(), Some(&b'\n'), "a record line without its newline");
        let r = line.value().unwrap_or_else(|e| {
            panic!("a record that is not JSON ({e}): {}", String::from_utf8_lossy(&line.json))
        });
        assert!(r.get("id").is_some_and(|id| id.is_string()), "a record without an id: {r}");
        assert_eq!(
            serde_json::json!(line.not_recorded),
            r["production"]["not_recorded"],
            "not_recorded is the record's: {r}"
        );
    }
}

fn check_location(at: &Location, lines: usize, bytes: usize) {
    if let Some(line) = at.line {
        assert!(line >= 1 && line <= lines.max(1), "line {line} of {lines}");
    }
    if let Some(offset) = at.byte_offset {
        assert!(offset as usize <= bytes, "byte {offset} of {bytes}");
    }
}

/// OTLP JSON Lines, each line through `decode_json_line` (the typed fast path and the `Value`
/// reader), the whole through the assembler.
pub fn otlp_json(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let mut decoded = Decoded::default();
    let mut n = 0;
    for (i, line) in text.lines().enumerate() {
        oloproof_traces::decode_json_line(line, &at_line(i + 1), &mut decoded);
        n = i + 1;
    }
    // The batch reader gives the same spans as line by line.
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let batch = oloproof_traces::decode_json_lines(&lines, 1, FILE);
    let spans: usize = batch.iter().map(|d| d.spans.len()).sum();
    assert_eq!(spans, decoded.spans.len(), "batch and line readers differ");
    assemble_and_check(decoded, n, data.len());
}

/// Binary OTLP (`ExportTraceServiceRequest`, requests appended), then the same bytes as a
/// file in any layout (`decode_protobuf_file`: size-prefixed or delimited messages, zstd or
/// gzip), whose problems inside a decompressed message are located in that message.
pub fn otlp_protobuf(data: &[u8]) {
    let decoded = oloproof_traces::decode_protobuf(data, FILE);
    assemble_and_check(decoded, 0, data.len());
    let mut decoded = oloproof_traces::decode_protobuf_file(data, FILE);
    for p in &mut decoded.summary.first {
        if p.at.file != FILE {
            p.at.byte_offset = None;
            p.at.line = None;
        }
    }
    assemble_and_check(decoded, 0, data.len());
}

/// An OTLP logs file in any layout (`decode_logs_file`: JSON Lines or a document of
/// `LogsData`, protobuf messages, compressed or not), its events assembled with the spans the
/// same bytes hold as a JSON Lines trace file (logs first, as `import --logs` reads them): the
/// log records add up too (read = added to their spans + not used).
pub fn otlp_logs(data: &[u8]) {
    let mut decoded = oloproof_traces::decode_logs_file(data, FILE);
    for p in &mut decoded.summary.first {
        if p.at.file != FILE {
            p.at.byte_offset = None;
            p.at.line = None;
        }
    }
    // The logs reader reads JSON lossily (as the trace file reader does), so its lines are
    // those of the lossy text.
    let lines = String::from_utf8_lossy(data).lines().count();
    if let Some(text) = text(data) {
        for (i, line) in text.lines().enumerate() {
            oloproof_traces::decode_json_line(line, &at_line(i + 1), &mut decoded);
        }
    }
    assemble_and_check(decoded, lines, data.len());
}

/// An OTLP/HTTP body as `oloproof collect` receives it, in both content types.
pub fn otlp_request(data: &[u8]) {
    for content_type in ["application/x-protobuf", "application/json"] {
        match oloproof_traces::decode_request(data, content_type) {
            Ok(decoded) => assemble_and_check(decoded, 0, data.len()),
            Err(e) => crate::check::note(&e),
        }
    }
}

/// A Phoenix export as JSON Lines (REST spans, dataframe rows, annotations) or one document.
pub fn phoenix(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let mut reader = PhoenixReader::new();
    let mut n = 0;
    for (i, line) in text.lines().enumerate() {
        reader.read_line(line, &at_line(i + 1));
        n = i + 1;
    }
    assemble_and_check(reader.finish(), n, data.len());
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
        let mut reader = PhoenixReader::new();
        reader.read_document(&value, FILE);
        assemble_and_check(reader.finish(), 0, data.len());
    }
}

/// A Langfuse export as JSON Lines, CSV, or one document.
pub fn langfuse(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let mut reader = LangfuseReader::new();
    let mut n = 0;
    for (i, line) in text.lines().enumerate() {
        reader.read_line(line, &at_line(i + 1));
        n = i + 1;
    }
    assemble_and_check(reader.finish(), n, data.len());
    let mut reader = LangfuseReader::new();
    reader.read_csv(text, FILE);
    // A CSV row may span lines (quoted newlines): its line is within the file.
    assemble_and_check(reader.finish(), n, data.len());
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
        let mut reader = LangfuseReader::new();
        reader.read_document(&value, FILE);
        assemble_and_check(reader.finish(), 0, data.len());
    }
}
