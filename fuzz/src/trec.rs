//! trec_eval files: qrels and runs, plain and gzip-compressed, through the real file path of
//! `oloproof trec -q -c -m all_trec QRELS RUN` (`oloproof_trec::run_trec`: memory map or gzip
//! stream, block cutting, parallel run parsing, evaluation and trec_eval's output).
//!
//! The input is written to a file under the temporary folder (`TMPDIR`), and the other file
//! is derived from it so that valid inputs reach the evaluation: for a fuzzed qrels file, a
//! run retrieving each judged `(topic, document)` once; for a fuzzed run, qrels judging each
//! retrieved `(topic, document)` once.
//!
//! Asserted on rejection: the error names the fuzzed file, and
//! - `Parse` (a malformed line): its line is a line of the input (1-based);
//! - `Topic` (e.g. a duplicate document): the topic occurs in the input;
//! - `NoTopics`: allowed (the file is the location: no topic has both judgments and results);
//! - `Io`: only for the raw gzip bytes (a corrupt stream has no line to point at);
//! - anything else (`Measure`, `Usage`, `Output`, …) is a failure: the arguments are fixed.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Parser;
use oloproof_trec::{run_trec, TrecArgs, TrecError};

#[derive(Parser)]
struct Cmd {
    #[command(flatten)]
    trec: TrecArgs,
}

/// This process's scratch folder (one per process: afl-fuzz may run several).
fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("oloproof-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).expect("write scratch file");
}

/// Whitespace-separated fields, split as trec_eval splits them.
fn fields(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|b| matches!(b, b' ' | b'\t' | b'\r' | 0x0b | 0x0c))
        .filter(|f| !f.is_empty())
}

/// `(topic, document)` of every line with at least `min` fields, `doc` being field `doc`,
/// each pair once.
fn pairs(data: &[u8], min: usize, doc: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for line in data.split(|&b| b == b'\n') {
        let f: Vec<&[u8]> = fields(line).collect();
        if f.len() < min || f[0].starts_with(b"#") {
            continue;
        }
        let pair = (f[0].to_vec(), f[doc].to_vec());
        if seen.insert(pair.clone()) {
            out.push(pair);
        }
    }
    out
}

/// First line of a derived file: a comment, so that the file never starts with the gzip
/// magic bytes (a fuzzed topic could), which would make it read as gzip.
const DERIVED: &[u8] = b"# derived from the fuzz input\n";

fn derived_run(qrels: &[u8]) -> Vec<u8> {
    let mut out = DERIVED.to_vec();
    for (i, (q, d)) in pairs(qrels, 4, 2).into_iter().enumerate() {
        out.extend_from_slice(&q);
        out.extend_from_slice(b" Q0 ");
        out.extend_from_slice(&d);
        let _ = writeln!(out, " {} {} fuzz", i + 1, 100 - (i % 97));
    }
    out
}

fn derived_qrels(run: &[u8]) -> Vec<u8> {
    let mut out = DERIVED.to_vec();
    for (i, (q, d)) in pairs(run, 6, 2).into_iter().enumerate() {
        out.extend_from_slice(&q);
        out.extend_from_slice(b" 0 ");
        out.extend_from_slice(&d);
        let _ = writeln!(out, " {}", i % 3);
    }
    out
}

fn compress(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).expect("gzip in memory");
    e.finish().expect("gzip in memory")
}

/// Runs `oloproof trec` on the two files and checks a rejection against `fuzzed` (the file
/// holding the fuzz input, whose text is `text`; `raw_gzip` when it holds raw gzip bytes).
fn evaluate(qrels: &Path, run: &Path, fuzzed: &Path, text: &[u8], raw_gzip: bool) {
    let cmd = Cmd::parse_from([
        "trec".as_ref(),
        "-q".as_ref(),
        "-c".as_ref(),
        "-m".as_ref(),
        "all_trec".as_ref(),
        qrels.as_os_str(),
        run.as_os_str(),
    ]);
    let mut out = Vec::new();
    let Err(e) = run_trec(&cmd.trec, &mut out) else {
        return;
    };
    crate::check::note(&e);
    match &e {
        TrecError::Parse { path, line, .. } => {
            assert_eq!(path, fuzzed, "{e}");
            let lines = text.split(|&b| b == b'\n').count() as u64;
            assert!((1..=lines).contains(line), "line {line} of {lines}: {e}");
        }
        TrecError::Topic { path, topic, .. } => {
            assert_eq!(path, fuzzed, "{e}");
            let lossy = String::from_utf8_lossy(text);
            assert!(
                lossy.contains(topic.as_str()),
                "topic not in the input: {e}"
            );
        }
        TrecError::NoTopics { .. } => {}
        TrecError::Io { path, .. } if raw_gzip => assert_eq!(path, fuzzed, "{e}"),
        other => panic!("unexpected rejection: {other}"),
    }
}

/// A fuzzed qrels file (plain).
pub fn qrels(data: &[u8]) {
    let dir = scratch();
    let (q, r) = (dir.join("qrels"), dir.join("run"));
    write(&q, data);
    write(&r, &derived_run(data));
    evaluate(&q, &r, &q, data, false);
}

/// A fuzzed run file (plain).
pub fn run(data: &[u8]) {
    let dir = scratch();
    let (q, r) = (dir.join("qrels"), dir.join("run"));
    write(&r, data);
    write(&q, &derived_qrels(data));
    evaluate(&q, &r, &r, data, false);
}

/// The input as the raw bytes of a `.gz` run, then of a `.gz` qrels file; the other file is
/// derived from the decompressed text when the stream is valid (else from nothing).
pub fn gzip_files(data: &[u8]) {
    use std::io::Read;
    let dir = scratch();
    let mut text = Vec::new();
    let valid = flate2::read::MultiGzDecoder::new(data)
        .take(64 << 20)
        .read_to_end(&mut text)
        .is_ok();
    if !valid {
        text.clear();
    }
    let (q, r) = (dir.join("qrels"), dir.join("run.gz"));
    write(&r, data);
    write(&q, &derived_qrels(&text));
    evaluate(&q, &r, &r, &text, true);
    let (q, r) = (dir.join("qrels.gz"), dir.join("run"));
    write(&q, data);
    write(&r, &derived_run(&text));
    evaluate(&q, &r, &q, &text, true);
}

/// `trec_gzip`: see [`gzip_files`]; plain inputs are compressed first half the time, so the
/// fuzzer also explores the parser behind the gzip stream (byte 0 odd: compress).
pub fn gzip(data: &[u8]) {
    match data.split_first() {
        Some((flag, rest)) if flag & 1 == 1 => gzip_files(&compress(rest)),
        Some((_, rest)) => gzip_files(rest),
        None => gzip_files(data),
    }
}
