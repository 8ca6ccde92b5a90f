//! `oloproof import FILE… -o traffic.jsonl`: production traces (OTLP JSON Lines, one OTLP
//! JSON document, or binary OTLP protobuf) turned into trace records that `oloproof run
//! --dataset traffic.jsonl` judges (`oloproof_traces`: decoding, the conventions, assembly).
//!
//! Streaming: a JSON Lines file is read line by line and each trace is written once it is
//! complete (its spans may be spread over many lines), so memory follows the traces in flight,
//! not the file. Batches of lines (up to 1 MiB) are read and decoded on one thread, on every
//! core, while this one assembles the previous batch (its records built on every core too) and
//! writes: the records and the summary are those of a line-by-line read. A protobuf file is
//! one request (requests appended to a file merge into one) and is read whole. Every file's
//! spans go through one assembler, so a trace split across files is one record.
//!
//! The summary (stdout) adds up: spans read = used + dropped, by problem kind; the first
//! problems are located (`file:line`, or `file (byte N)` for protobuf). Exit 4 when the share
//! of spans dropped — each unreadable input record (a line that is not `TracesData`, protobuf
//! cut outside a span) counting as one dropped span — is above `--max-error-rate`; exit 2 for
//! unusable arguments (a missing file, a corpus that does not parse).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use oloproof_traces::span::Decoded;
use oloproof_traces::{AssembleOptions, Assembler, InputFormat};
use serde_json::Value;

use crate::commands::CliError;
use crate::exit_codes;

/// How the input files are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ImportFormat {
    /// From each file's first bytes: `{` or `[` is OTLP JSON, anything else protobuf.
    Auto,
    /// OTLP JSON: JSON Lines of `TracesData` (the Collector's file exporter) or one document.
    OtlpJson,
    /// Binary OTLP protobuf `ExportTraceServiceRequest` (what OTLP/HTTP exporters post).
    OtlpProto,
}

#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    /// Trace files: OTLP JSON Lines / JSON, or OTLP protobuf.
    #[arg(required = true, value_name = "FILE")]
    pub(crate) files: Vec<PathBuf>,
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
                "no such trace file: {} (give OTLP JSON Lines, an OTLP JSON document or an OTLP protobuf file)",
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
    let mut write =
        |records: Vec<Value>, out: &mut BufWriter<std::fs::File>| -> std::io::Result<()> {
            for r in records {
                if let Some(fields) = r["production"]["not_recorded"].as_array() {
                    for f in fields.iter().filter_map(Value::as_str) {
                        *not_recorded.entry(f.to_string()).or_default() += 1;
                    }
                }
                serde_json::to_writer(&mut *out, &r)?;
                out.write_all(b"\n")?;
            }
            Ok(())
        };
    let mut formats: Vec<&'static str> = Vec::new();
    for path in &args.files {
        let name = path.display().to_string();
        let format = match args.format {
            ImportFormat::OtlpJson => InputFormat::OtlpJson,
            ImportFormat::OtlpProto => InputFormat::OtlpProto,
            ImportFormat::Auto => {
                let mut head = [0u8; 64];
                let n = std::fs::File::open(path)
                    .and_then(|mut f| f.read(&mut head))
                    .map_err(unreadable(path))?;
                InputFormat::sniff(&head[..n])
            }
        };
        formats.push(format.name());
        match format {
            InputFormat::OtlpProto => {
                let bytes = std::fs::read(path).map_err(unreadable(path))?;
                let records = assembler.push(oloproof_traces::decode_protobuf(&bytes, &name));
                write(records, &mut out)?;
            }
            InputFormat::OtlpJson => {
                if is_json_lines(path).map_err(unreadable(path))? {
                    let file = std::fs::File::open(path).map_err(unreadable(path))?;
                    // One thread reads and decodes batches of lines (on every core); this one
                    // assembles them in line order (the records built on every core) and
                    // writes.
                    std::thread::scope(|scope| -> Result<(), CliError> {
                        let (tx, rx) = std::sync::mpsc::sync_channel(1);
                        let name = &name;
                        scope.spawn(move || decode_batches(file, name, tx));
                        for batch in rx {
                            let (decoded, error) = batch;
                            write(assembler.push_batch(decoded), &mut out)?;
                            if let Some(e) = error {
                                return Err(unreadable(path)(e));
                            }
                        }
                        Ok(())
                    })?;
                } else {
                    let text = std::fs::read_to_string(path).map_err(unreadable(path))?;
                    let decoded = oloproof_traces::decode_json_document(&text, &name);
                    write(assembler.push(decoded), &mut out)?;
                }
            }
        }
    }
    let (records, summary) = assembler.finish();
    write(records, &mut out)?;
    out.flush()?;

    let mut stdout = std::io::stdout().lock();
    let files = args.files.len();
    let dropped = summary.dropped();
    writeln!(
        stdout,
        "Imported {files} file{} ({}): {} span{} read = {} used + {dropped} dropped{}",
        if files == 1 { "" } else { "s" },
        dedup(&formats).join(", "),
        summary.spans_read,
        if summary.spans_read == 1 { "" } else { "s" },
        summary.spans_used,
        by_kind(&summary.spans_dropped),
    )?;
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

/// Lines read at once (or fewer, up to [`BATCH_BYTES`]), decoded on every core.
const BATCH_LINES: usize = 4096;
/// Bytes of lines read at once: what bounds the memory of the lines in flight.
const BATCH_BYTES: usize = 1 << 20;

/// One batch's lines decoded, in order, and the read error that ended the file there, if any.
type Batch = (Vec<Decoded>, Option<std::io::Error>);

/// Reads `file` as JSON Lines in batches, decodes each batch on every core and sends the lines'
/// [`Decoded`] in order, with the read error that ended the file early, if any (after the lines
/// before it). Stops when the receiver is gone.
fn decode_batches(file: std::fs::File, name: &str, tx: std::sync::mpsc::SyncSender<Batch>) {
    let mut lines = BufReader::with_capacity(1 << 20, file).lines();
    let mut first_line = 1;
    loop {
        let mut batch: Vec<String> = Vec::new();
        let mut bytes = 0;
        let mut error = None;
        while batch.len() < BATCH_LINES && bytes < BATCH_BYTES {
            match lines.next() {
                None => break,
                Some(Ok(line)) => {
                    bytes += line.len() + 1;
                    batch.push(line);
                }
                Some(Err(e)) => {
                    error = Some(e);
                    break;
                }
            }
        }
        if batch.is_empty() && error.is_none() {
            return;
        }
        let decoded = oloproof_traces::decode_json_lines(&batch, first_line, name);
        first_line += batch.len();
        let last = error.is_some();
        if tx.send((decoded, error)).is_err() || last {
            return;
        }
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
