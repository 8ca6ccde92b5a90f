//! `oloproof import FILE… -o traffic.jsonl`: production traces (OTLP JSON Lines, one OTLP
//! JSON document, binary OTLP protobuf, Phoenix span and annotation exports, Langfuse
//! observation, trace and score exports) turned into trace records that `oloproof run
//! --dataset traffic.jsonl` judges (`oloproof_traces`: decoding, the conventions, assembly).
//!
//! Phoenix and Langfuse exports are gathered whole (feedback files beside the spans, in any
//! order: an annotation names only its span) and assembled after the OTLP files, each source
//! through its own assembler (`production.source` says which).
//!
//! Streaming: a JSON Lines file is read line by line and each trace is written once it is
//! complete (its spans may be spread over many lines), so memory follows the traces in flight,
//! not the file. Batches of lines (up to 1 MiB) are read and decoded on one thread, on every
//! core, while this one assembles the previous batch (its records built on every core too) and
//! writes: the records and the summary are those of a line-by-line read. A protobuf file is
//! read whole: one request (requests appended to a file merge into one), or the messages of
//! the Collector's file exporter (`format: proto`, each after a 4-byte size) or of the
//! specification's file exporter (each after a varint size). A zstd- or gzip-compressed file
//! (the Collector's `compression: zstd`, a `.gz`) is decompressed as it is read, JSON Lines
//! still streaming. Every file's spans go through one assembler, so a trace split across
//! files is one record.
//!
//! OTLP logs files (`--logs`) are read first: the log records the OpenTelemetry GenAI
//! instrumentations write (message content, evaluation results), each naming its span, wait in
//! the assembler and are added to that span's events when its trace is written.
//!
//! The summary (stdout) adds up: spans read = used + dropped, by problem kind (log records
//! read = added to their spans + not used, by reason); the first
//! problems are located (`file:line`, or `file (byte N)` for protobuf). Exit 4 when the share
//! of spans dropped — each unreadable input record (a line that is not `TracesData`, protobuf
//! cut outside a span) counting as one dropped span — is above `--max-error-rate`; exit 2 for
//! unusable arguments (a missing file, a corpus that does not parse).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use oloproof_traces::langfuse::LangfuseReader;
use oloproof_traces::lines::LineBlocks;
use oloproof_traces::phoenix::PhoenixReader;
use oloproof_traces::span::{Decoded, Location};
use oloproof_traces::{
    undecodable_problem, AssembleOptions, Assembler, Compression, InputFormat, RecordLine,
};
use serde_json::Value;

use crate::cli::ConfigLocation;
use crate::commands::CliError;
use crate::exit_codes;

/// How the input files are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ImportFormat {
    /// Per file, from its first record: JSON (`{` or `[`) whose first record is a Phoenix span
    /// or annotation (`context.span_id`, `annotator_kind`, OTLP span objects under `data`) is
    /// phoenix; a Langfuse observation, score or trace (`traceId` with `type` or `startTime`,
    /// `dataType`, `id` + `timestamp` + `userId`/`observations`…) is langfuse; other JSON is
    /// otlp-json; a text line of CSV columns naming `traceId`/`trace_id` with `startTime`/
    /// `start_time`/`dataType` is a Langfuse CSV; anything else otlp-proto.
    Auto,
    /// OTLP JSON: JSON Lines of `TracesData` (the Collector's file exporter) or one document.
    OtlpJson,
    /// Binary OTLP protobuf: one `ExportTraceServiceRequest` (what OTLP/HTTP exporters post)
    /// or a file of messages after 4-byte sizes (the Collector's `format: proto`) or varint
    /// sizes (the specification's file exporter). A zstd- or gzip-compressed OTLP file, JSON
    /// or protobuf, is decompressed as it is read.
    OtlpProto,
    /// Arize Phoenix: spans (`GET /v1/projects/{p}/spans` pages, the spans dataframe as JSON,
    /// `spans/otlpv1`) and span/trace annotations, JSON or JSON Lines.
    Phoenix,
    /// Langfuse: observations, traces and scores (public API pages, UI and blob-storage
    /// exports), JSON, JSON Lines or CSV.
    Langfuse,
}

/// Which reader a file goes to.
enum Family {
    Otlp(InputFormat),
    Phoenix,
    Langfuse,
}

#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    /// Trace files: OTLP JSON Lines / JSON or protobuf (zstd- or gzip-compressed or not);
    /// Phoenix or Langfuse exports (their feedback — annotations, scores — as further files).
    #[arg(required_unless_present = "collected", value_name = "FILE")]
    pub(crate) files: Vec<PathBuf>,
    /// Also read the OTLP requests `oloproof collect` recorded in the run store (of the
    /// project in the current directory, `--project DIR`, `--config` or `--store`), after the
    /// files, in arrival order.
    #[arg(long)]
    pub(crate) collected: bool,
    /// OTLP logs files (JSON Lines of `LogsData` or one document, or protobuf
    /// `ExportLogsServiceRequest`s, compressed or not), read before the trace files: the
    /// events the OpenTelemetry GenAI instrumentations record as log records (message content,
    /// evaluation results) are added to the spans they name.
    #[arg(long, value_name = "FILE")]
    pub(crate) logs: Vec<PathBuf>,
    /// The project folder whose store `--collected` reads (default: the current directory).
    #[arg(long, value_name = "DIR", requires = "collected")]
    pub(crate) project: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) location: ConfigLocation,
    /// Where to write the trace records (JSONL, the `trace` dataset format).
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: PathBuf,
    /// The files' format.
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) format: ImportFormat,
    /// The corpus (`{"doc_id", "text", "metadata"}` per line): passage text the spans did not
    /// capture is taken from it by document id.
    #[arg(long, value_name = "FILE")]
    pub(crate) corpus: Option<PathBuf>,
    /// Largest share of spans that may be dropped (unreadable, duplicate, late) before the
    /// import exits 4.
    #[arg(long, value_name = "SHARE", default_value_t = 0.0)]
    pub(crate) max_error_rate: f64,
}

pub(crate) fn import(args: ImportArgs) -> Result<u8, CliError> {
    if !(0.0..=1.0).contains(&args.max_error_rate) {
        return Err(CliError::Usage(format!(
            "--max-error-rate must be a share between 0 and 1, got {}",
            args.max_error_rate
        )));
    }
    for f in &args.files {
        if !f.is_file() {
            return Err(CliError::Usage(format!(
                "no such trace file: {} (give OTLP JSON Lines, an OTLP JSON document, an OTLP protobuf file, or a Phoenix or Langfuse export)",
                f.display()
            )));
        }
    }
    for f in &args.logs {
        if !f.is_file() {
            return Err(CliError::Usage(format!(
                "no such logs file: {} (give OTLP logs: JSON Lines of `LogsData`, one JSON document, or protobuf)",
                f.display()
            )));
        }
    }
    let corpus = match &args.corpus {
        None => None,
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                CliError::Usage(format!("cannot read the corpus {}: {e}", path.display()))
            })?;
            let name = path.display().to_string();
            match oloproof_core::corpus::Corpus::parse(&name, &text) {
                Ok(c) => Some(c),
                Err(errors) => {
                    let rendered: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
                    return Err(CliError::Usage(rendered.join("\n")));
                }
            }
        }
    };
    let out_file = std::fs::File::create(&args.output)
        .map_err(|e| CliError::Usage(format!("cannot write {}: {e}", args.output.display())))?;
    let mut out = BufWriter::new(out_file);
    let mut assembler = Assembler::new(AssembleOptions::default(), corpus.as_ref());
    let mut not_recorded: BTreeMap<String, u64> = BTreeMap::new();
    let mut write = |lines: Vec<oloproof_traces::RecordLine>,
                     out: &mut BufWriter<std::fs::File>|
     -> std::io::Result<()> {
        for line in lines {
            for f in line.not_recorded {
                *not_recorded.entry(f).or_default() += 1;
            }
            out.write_all(&line.json)?;
        }
        Ok(())
    };
    let mut formats: Vec<&'static str> = Vec::new();
    let mut phoenix: Option<PhoenixReader> = None;
    let mut langfuse: Option<LangfuseReader> = None;
    // Logs first: their events wait in the assembler for the spans they name.
    for path in &args.logs {
        let bytes = std::fs::read(path).map_err(unreadable(path))?;
        let decoded = oloproof_traces::decode_logs_file(&bytes, &path.display().to_string());
        write(assembler.push(decoded), &mut out)?;
        formats.push("otlp-logs");
    }
    for path in &args.files {
        let name = path.display().to_string();
        let mut head = [0u8; 4096];
        let n = std::fs::File::open(path)
            .and_then(|mut f| f.read(&mut head))
            .map_err(unreadable(path))?;
        let head = &head[..n];
        let compression = Compression::sniff(head);
        if compression != Compression::None {
            let format = read_compressed(path, compression, args.format, &mut assembler, |r| {
                write(r, &mut out)
            })?;
            formats.push(format.name());
            continue;
        }
        let is_json = InputFormat::sniff(head) == InputFormat::OtlpJson;
        if is_json
            && matches!(args.format, ImportFormat::Auto | ImportFormat::OtlpJson)
            && [&b"\"resourceLogs\""[..], b"\"resource_logs\""]
                .iter()
                .any(|key| head.windows(key.len()).any(|w| w == *key))
        {
            return Err(CliError::Usage(format!(
                "{} is an OTLP logs file (`resourceLogs`), not traces: give it with `--logs {}`, beside the trace files",
                path.display(),
                path.display()
            )));
        }
        // A whole JSON document parsed to detect its format is handed on, not parsed again.
        let mut parsed: Option<Value> = None;
        let family = match args.format {
            ImportFormat::OtlpJson if !is_json && head.contains(&0) => {
                return Err(CliError::Usage(format!(
                    "{} is binary, not OTLP JSON: read it with `--format otlp-proto` (or leave `--format` out: the format is found from the bytes)",
                    path.display()
                )));
            }
            ImportFormat::OtlpJson => Family::Otlp(InputFormat::OtlpJson),
            ImportFormat::OtlpProto => Family::Otlp(InputFormat::OtlpProto),
            ImportFormat::Phoenix => Family::Phoenix,
            ImportFormat::Langfuse => Family::Langfuse,
            ImportFormat::Auto if !is_json => {
                let first_line = String::from_utf8_lossy(head);
                let first_line = first_line.lines().next().unwrap_or("");
                if oloproof_traces::langfuse::csv_header_looks_like(first_line) {
                    Family::Langfuse
                } else {
                    Family::Otlp(InputFormat::OtlpProto)
                }
            }
            ImportFormat::Auto
                if head
                    .windows(15)
                    .any(|w| w == b"\"resourceSpans\"" || w == b"\"resource_spans") =>
            {
                // OTLP from its first bytes: no need to parse a whole document to know.
                Family::Otlp(InputFormat::OtlpJson)
            }
            ImportFormat::Auto => {
                let first = if is_json_lines(path).map_err(unreadable(path))? {
                    first_line_value(path).map_err(unreadable(path))?
                } else {
                    let text = std::fs::read_to_string(path).map_err(unreadable(path))?;
                    parsed = serde_json::from_str(text.trim_start_matches('\u{feff}')).ok();
                    parsed.clone()
                };
                match first {
                    Some(v) if oloproof_traces::phoenix::looks_like(&v) => Family::Phoenix,
                    Some(v) if oloproof_traces::langfuse::looks_like(&v) => Family::Langfuse,
                    _ => Family::Otlp(InputFormat::OtlpJson),
                }
            }
        };
        match family {
            Family::Otlp(format) => {
                formats.push(format.name());
                match format {
                    InputFormat::OtlpProto => {
                        let bytes = std::fs::read(path).map_err(unreadable(path))?;
                        let records =
                            assembler.push(oloproof_traces::decode_protobuf_file(&bytes, &name));
                        write(records, &mut out)?;
                    }
                    InputFormat::OtlpJson => {
                        if is_json_lines(path).map_err(unreadable(path))? {
                            let file = std::fs::File::open(path).map_err(unreadable(path))?;
                            read_json_lines(file, path, None, &mut assembler, |r| {
                                write(r, &mut out)
                            })?;
                        } else {
                            let text = std::fs::read_to_string(path).map_err(unreadable(path))?;
                            let decoded = oloproof_traces::decode_json_document(&text, &name);
                            write(assembler.push(decoded), &mut out)?;
                        }
                    }
                }
            }
            Family::Phoenix => {
                formats.push("phoenix");
                let reader = phoenix.get_or_insert_with(PhoenixReader::new);
                read_json_export(path, &name, parsed, |e| match e {
                    Export::Document(v) => reader.read_document(&v, &name),
                    Export::Line(line, at) => reader.read_line(line, &at),
                })?;
            }
            Family::Langfuse => {
                formats.push("langfuse");
                let reader = langfuse.get_or_insert_with(LangfuseReader::new);
                if is_json {
                    read_json_export(path, &name, parsed, |e| match e {
                        Export::Document(v) => reader.read_document(&v, &name),
                        Export::Line(line, at) => reader.read_line(line, &at),
                    })?;
                } else {
                    let text = std::fs::read_to_string(path).map_err(unreadable(path))?;
                    reader.read_csv(&text, &name);
                }
            }
        }
    }
    let mut requests = 0u64;
    if args.collected {
        let store = crate::commands::open_store(&args.location, args.project.as_deref())?;
        oloproof_collect::read::for_each_collected(store.as_ref(), 0, |_, decoded| {
            requests += 1;
            write(assembler.push(decoded), &mut out).map_err(CliError::Output)
        })?;
        formats.push("collected OTLP requests");
    }
    let (records, mut summary) = assembler.finish();
    write(records, &mut out)?;
    let gathered = [
        phoenix.map(|r| ("phoenix", r.finish())),
        langfuse.map(|r| ("langfuse", r.finish())),
    ];
    for (source, decoded) in gathered.into_iter().flatten() {
        let options = AssembleOptions {
            source: source.into(),
            ..AssembleOptions::default()
        };
        let mut assembler = Assembler::new(options, corpus.as_ref());
        let records = assembler.push(decoded);
        write(records, &mut out)?;
        let (records, s) = assembler.finish();
        write(records, &mut out)?;
        summary.merge(s);
    }
    out.flush()?;

    let mut stdout = std::io::stdout().lock();
    let files = args.files.len();
    let dropped = summary.dropped();
    let mut sources = Vec::new();
    if files > 0 || !args.collected {
        sources.push(format!("{files} file{}", if files == 1 { "" } else { "s" }));
    }
    if !args.logs.is_empty() {
        let n = args.logs.len();
        sources.push(format!("{n} logs file{}", if n == 1 { "" } else { "s" }));
    }
    if args.collected {
        sources.push(format!(
            "{requests} collected request{}",
            if requests == 1 { "" } else { "s" }
        ));
    }
    writeln!(
        stdout,
        "Imported {} ({}): {} span{} read = {} used + {dropped} dropped{}",
        sources.join(" and "),
        dedup(&formats).join(", "),
        summary.spans_read,
        if summary.spans_read == 1 { "" } else { "s" },
        summary.spans_used,
        by_kind(&summary.spans_dropped),
    )?;
    if summary.log_records_read > 0 || !args.logs.is_empty() {
        let skipped: u64 = summary.log_records_skipped.values().sum();
        writeln!(
            stdout,
            "  {} log record{} read = {} added to their spans + {skipped} not used{}",
            summary.log_records_read,
            if summary.log_records_read == 1 {
                ""
            } else {
                "s"
            },
            summary.log_records_used,
            by_kind(&summary.log_records_skipped),
        )?;
    }
    if summary.records_dropped > 0 {
        writeln!(
            stdout,
            "  {} input record{} unreadable, spans unknown{}",
            summary.records_dropped,
            if summary.records_dropped == 1 {
                ""
            } else {
                "s"
            },
            by_kind(&summary.records_dropped_by)
        )?;
    }
    writeln!(
        stdout,
        "  {} trace record{} written to {}",
        summary.records,
        if summary.records == 1 { "" } else { "s" },
        args.output.display()
    )?;
    if !not_recorded.is_empty() {
        let fields: Vec<String> = not_recorded
            .iter()
            .map(|(f, n)| format!("{f} {n}"))
            .collect();
        writeln!(
            stdout,
            "  not recorded by the spans (traces): {}",
            fields.join(", ")
        )?;
    }
    if !summary.problems.is_empty() {
        writeln!(stdout, "Problems{}", by_kind(&summary.problems))?;
        for p in &summary.first {
            writeln!(stdout, "  {}: {}: {}", p.at, p.kind, p.message)?;
        }
        let total: u64 = summary.problems.values().sum();
        if total > summary.first.len() as u64 {
            writeln!(
                stdout,
                "  … and {} more",
                total - summary.first.len() as u64
            )?;
        }
    }
    debug_assert!(summary.adds_up());
    let lost = dropped + summary.records_dropped;
    let seen = summary.spans_read + summary.records_dropped;
    let rate = if seen == 0 {
        0.0
    } else {
        lost as f64 / seen as f64
    };
    if rate > args.max_error_rate {
        let mut err = std::io::stderr().lock();
        writeln!(
            err,
            "error: {lost} of {seen} spans and input records dropped ({:.1} %), above --max-error-rate {}",
            rate * 100.0,
            args.max_error_rate
        )?;
        return Ok(exit_codes::INCOMPLETE);
    }
    Ok(exit_codes::SUCCESS)
}

/// What a JSON export hands its reader: a whole document, or one line at its location.
enum Export<'a> {
    Document(Value),
    Line(&'a str, Location),
}

/// Reads a Phoenix or Langfuse JSON export: JSON Lines line by line, else one document
/// (`parsed` when auto-detection already parsed it); a document that does not parse whole is
/// read as lines, each reported where it breaks.
fn read_json_export(
    path: &Path,
    name: &str,
    parsed: Option<Value>,
    mut read: impl FnMut(Export<'_>),
) -> Result<(), CliError> {
    if let Some(v) = parsed {
        read(Export::Document(v));
        return Ok(());
    }
    let lines = |text: &str, read: &mut dyn FnMut(Export<'_>)| {
        for (i, line) in text.lines().enumerate() {
            let at = Location {
                file: name.to_string(),
                line: Some(i + 1),
                byte_offset: None,
            };
            read(Export::Line(line, at));
        }
    };
    if is_json_lines(path).map_err(unreadable(path))? {
        let file = std::fs::File::open(path).map_err(unreadable(path))?;
        for (i, line) in BufReader::new(file).lines().enumerate() {
            let line = line.map_err(unreadable(path))?;
            let at = Location {
                file: name.to_string(),
                line: Some(i + 1),
                byte_offset: None,
            };
            read(Export::Line(&line, at));
        }
        return Ok(());
    }
    let text = std::fs::read_to_string(path).map_err(unreadable(path))?;
    match serde_json::from_str::<Value>(text.trim_start_matches('\u{feff}')) {
        Ok(v) => read(Export::Document(v)),
        Err(_) => lines(&text, &mut read),
    }
    Ok(())
}

/// The first non-blank line of a JSON Lines file, parsed.
fn first_line_value(path: &Path) -> std::io::Result<Option<Value>> {
    let reader = BufReader::new(std::fs::File::open(path)?);
    for line in reader.lines() {
        let line = line?;
        let t = line.trim().trim_start_matches('\u{feff}');
        if !t.is_empty() {
            return Ok(serde_json::from_str(t).ok());
        }
    }
    Ok(None)
}

/// Bytes of lines read at once: what bounds the memory of the lines in flight (a longer line
/// is read whole).
const BATCH_BYTES: usize = 1 << 20;

/// One batch's lines decoded, in order, and the read error that ended the file there (with
/// the number of the line it broke in), if any.
type Batch = (Vec<Decoded>, Option<(std::io::Error, usize)>);

/// Reads `input` as JSON Lines in blocks of whole lines ([`LineBlocks`]: one buffer re-used,
/// no allocation per line), decodes each block on every core and sends the lines'
/// [`Decoded`] in order, with the read error that ended the file early, if any (after the lines
/// before it). Stops when the receiver is gone.
fn decode_batches<R: Read>(input: R, name: &str, tx: std::sync::mpsc::SyncSender<Batch>) {
    let mut blocks = LineBlocks::new(input, BATCH_BYTES);
    loop {
        let (decoded, error) = match blocks.next_block() {
            Ok(None) => return,
            Ok(Some(block)) => (
                oloproof_traces::decode_json_lines(&block.lines, block.first_line, name),
                None,
            ),
            Err(e) => (Vec::new(), Some((e, blocks.next_line()))),
        };
        let last = error.is_some();
        if tx.send((decoded, error)).is_err() || last {
            return;
        }
    }
}

/// Reads OTLP JSON Lines from `input`: one thread reads and decodes batches of lines (on
/// every core); this one assembles them in line order (the records built on every core) and
/// hands them to `write`.
///
/// A read error ends the file: of a plain file it is an error (exit 2); of `compressed` data
/// it is a problem of the data (a stream cut short, as the file a Collector is still writing
/// is, or corrupt), counted as one unreadable record at the line it broke in, after every line
/// before it was read.
fn read_json_lines<R: Read + Send>(
    input: R,
    path: &Path,
    compressed: Option<Compression>,
    assembler: &mut Assembler<'_>,
    mut write: impl FnMut(Vec<RecordLine>) -> std::io::Result<()>,
) -> Result<(), CliError> {
    let name = path.display().to_string();
    std::thread::scope(|scope| -> Result<(), CliError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let name = &name;
        scope.spawn(move || decode_batches(input, name, tx));
        for batch in rx {
            let (decoded, error) = batch;
            write(assembler.push_batch(decoded))?;
            match (error, compressed) {
                (None, _) => {}
                (Some((e, _)), None) => return Err(unreadable(path)(e)),
                (Some((e, line)), Some(compression)) => {
                    let at = Location {
                        file: name.clone(),
                        line: Some(line),
                        byte_offset: None,
                    };
                    let mut problem = Decoded::default();
                    problem
                        .summary
                        .drop_record(undecodable_problem(at, compression, &e));
                    write(assembler.push(problem))?;
                }
            }
        }
        Ok(())
    })
}

/// Reads a zstd- or gzip-compressed OTLP file as it decompresses: JSON Lines streaming
/// (unless `--format otlp-proto`), protobuf whole in any of its layouts
/// ([`oloproof_traces::decode_protobuf_file`]). Answers the format read.
fn read_compressed(
    path: &Path,
    compression: Compression,
    format: ImportFormat,
    assembler: &mut Assembler<'_>,
    mut write: impl FnMut(Vec<RecordLine>) -> std::io::Result<()>,
) -> Result<InputFormat, CliError> {
    if matches!(format, ImportFormat::Phoenix | ImportFormat::Langfuse) {
        return Err(CliError::Usage(format!(
            "{} is {}-compressed: compressed files are read as OTLP; decompress a Phoenix or Langfuse export first",
            path.display(),
            compression.name()
        )));
    }
    let file = std::fs::File::open(path).map_err(unreadable(path))?;
    let mut decompressed = compression.reader(BufReader::new(file));
    // The first decompressed bytes tell JSON from protobuf; they are read again after. An
    // error this early (a file cut within its first block) is kept for the reader to meet
    // after them, as a later one would be.
    let mut head = Vec::new();
    let error = (&mut decompressed).take(4096).read_to_end(&mut head).err();
    let inner = match format {
        ImportFormat::OtlpJson => InputFormat::OtlpJson,
        ImportFormat::OtlpProto => InputFormat::OtlpProto,
        _ if head.is_empty() => InputFormat::OtlpJson,
        _ => InputFormat::sniff(&head),
    };
    let mut input = Replay {
        head: std::io::Cursor::new(head),
        error,
        rest: decompressed,
    };
    match inner {
        InputFormat::OtlpJson => read_json_lines(input, path, Some(compression), assembler, write)?,
        InputFormat::OtlpProto => {
            // What decompressed before an error is read (its last message is then cut short),
            // and the error counted.
            let mut bytes = Vec::new();
            let error = input.read_to_end(&mut bytes).err();
            let name = format!("{} ({} decompressed)", path.display(), compression.name());
            let mut decoded = oloproof_traces::decode_protobuf_file(&bytes, &name);
            if let Some(e) = error {
                let at = Location {
                    file: name,
                    line: None,
                    byte_offset: Some(bytes.len() as u64),
                };
                decoded
                    .summary
                    .drop_record(undecodable_problem(at, compression, &e));
            }
            write(assembler.push(decoded)).map_err(CliError::Output)?;
        }
    }
    Ok(inner)
}

/// Bytes already read (`head`), then the error that stopped them, if any, then the rest of
/// the reader.
struct Replay<R> {
    head: std::io::Cursor<Vec<u8>>,
    error: Option<std::io::Error>,
    rest: R,
}

impl<R: Read> Read for Replay<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.head.read(buf)?;
        if n > 0 || buf.is_empty() {
            return Ok(n);
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.rest.read(buf)
    }
}

/// A read error as a usage error naming the file (not UTF-8, unreadable).
fn unreadable(path: &Path) -> impl Fn(std::io::Error) -> CliError + '_ {
    move |e| CliError::Usage(format!("cannot read {}: {e}", path.display()))
}

/// ` (kind n, kind n)` or nothing.
fn by_kind(counts: &BTreeMap<String, u64>) -> String {
    if counts.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
    format!(" ({})", parts.join(", "))
}

fn dedup(items: &[&'static str]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for i in items {
        if !out.contains(i) {
            out.push(i);
        }
    }
    out
}

/// Whether a JSON file is JSON Lines: its first non-blank line is a whole JSON value (a
/// pretty-printed document's first line is `{`). Otherwise the file is read as one document,
/// which falls back to lines (each reported where it breaks) when it does not parse whole.
fn is_json_lines(path: &Path) -> std::io::Result<bool> {
    let reader = BufReader::new(std::fs::File::open(path)?);
    for line in reader.lines() {
        let line = line?;
        let t = line.trim().trim_start_matches('\u{feff}');
        if t.is_empty() {
            continue;
        }
        return Ok(serde_json::from_str::<Value>(t).is_ok());
    }
    Ok(true)
}
