//! `oloproof import`: production traces in.
//!
//! - `the_sdk_app_round_trips`: a small RAG app instrumented with the real OpenTelemetry Python
//!   SDK and the OpenInference semantic conventions (`fixtures/otel_app/app.py`, pinned in
//!   scripts/test) writes its spans with the SDK's own OTLP encoder as protobuf, as a
//!   `json_format` document (camelCase, base64 ids) and as snake_case JSON Lines, plus the ground
//!   truth of what it did; each file is imported, every field is checked against that truth,
//!   the three outputs are identical, a corpus fills the text content capture left out, and
//!   `run --dataset` judges the output (a criterion reading a field not recorded is excluded
//!   `not_recorded`). Needs `OLOPROOF_REFERENCE_PYTHON` with the SDK; without it the test is
//!   skipped with a note, unless `OLOPROOF_REQUIRE_REFERENCES=1`.
//! - `genai_content_from_log_records`: the real OpenAI client instrumented by the real
//!   `opentelemetry-instrumentation-openai-v2` (`fixtures/otel_app/openai_app.py`, against a
//!   local server speaking the Chat Completions wire format) records the messages as OTLP log
//!   records, in both its modes (GenAI conventions <= 1.36 message events; the current
//!   `gen_ai.client.inference.operation.details`); `import --logs` (JSON Lines or protobuf)
//!   gives each trace its question, answer and usage, without the logs the answer is
//!   `not_recorded`, and a logs file given as a trace file is exit 2 saying to use `--logs`.
//! - `bad_input_is_counted_and_located`: every bad-input kind of issue 15 (a truncated
//!   protobuf, lines that are not JSON or not `TracesData`, a missing parent, a duplicate span
//!   id, an end before the start, an attribute of the wrong type, an id of the wrong length):
//!   the import goes on, the summary adds up, the first problems are located, and the exit code
//!   follows `--max-error-rate`; a missing file is exit 2.
//! - `a_generated_file_imports_as_before`: 2,500 generated traces with bad, late and duplicate
//!   spans give byte for byte the records and summary the line-by-line `Value` reader gave
//!   before the fast path and the parallel read (pinned: a SHA-256 and a stdout file).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::{json, Value};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn or_absent(v: &Value) -> Option<&Value> {
    (!v.is_null()).then_some(v)
}

/// Every field of `record` against what the app did.
fn check(record: &Value, truth: &Value) {
    let id = truth["trace_id"].as_str().unwrap();
    let ctx = |what: &str| format!("trace {id} ({}): {what}", truth["question"]);
    assert_eq!(record["id"], json!(id), "{}", ctx("id"));
    assert_eq!(record["input"], truth["input"], "{}", ctx("input"));
    assert_eq!(
        record.get("answer"),
        or_absent(&truth["answer"]),
        "{}",
        ctx("answer")
    );
    let rewrites = &record["pipeline"]["rewrite"];
    if truth["rewrites"].as_array().unwrap().is_empty() {
        assert!(rewrites.is_null(), "{}", ctx("no rewrite"));
    } else {
        assert_eq!(
            rewrites["queries"],
            truth["rewrites"],
            "{}",
            ctx("rewrites")
        );
        assert_eq!(
            rewrites["usage"],
            truth["rewrite_usage"],
            "{}",
            ctx("rewrite usage")
        );
    }
    let lanes = record["pipeline"]["retrievals"].as_array().unwrap();
    assert_eq!(lanes.len(), 1, "{}", ctx("one retrieval"));
    assert_eq!(
        lanes[0]["retrieval"]["candidates"],
        truth["retrieved"],
        "{}",
        ctx("retrieved passages, ranked")
    );
    match truth["pre_rerank"].as_array() {
        Some(ids) => {
            let got: Vec<&Value> = record["pipeline"]["pre_rerank"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| &p["doc_id"])
                .collect();
            assert_eq!(got, ids.iter().collect::<Vec<_>>(), "{}", ctx("pre_rerank"));
        }
        None => assert!(record["pipeline"].get("pre_rerank").is_none()),
    }
    assert_eq!(
        record["retrieval"]["candidates"],
        truth["final"],
        "{}",
        ctx("final candidates")
    );
    assert_eq!(record["usage"], truth["usage"], "{}", ctx("usage"));
    assert_eq!(
        record.get("ttft_ms"),
        or_absent(&truth["ttft_ms"]),
        "{}",
        ctx("ttft")
    );
    assert_eq!(
        record["latency_ms"],
        truth["latency_ms"],
        "{}",
        ctx("latency")
    );
    let metadata = record.get("metadata").cloned().unwrap_or(json!({}));
    assert_eq!(metadata, truth["metadata"], "{}", ctx("segments"));
    let p = &record["production"];
    assert_eq!(p["trace_id"], json!(id));
    assert_eq!(p["source"], json!("otlp"));
    assert_eq!(p["timestamp"], truth["timestamp"], "{}", ctx("timestamp"));
    assert_eq!(
        p.get("feedback").cloned().unwrap_or(json!([])),
        truth["feedback"],
        "{}",
        ctx("feedback")
    );
    match truth["error"].as_object() {
        Some(e) => {
            assert_eq!(p["error"]["stage"], e["stage"], "{}", ctx("error stage"));
            assert_eq!(p["error"]["message"], e["message"], "{}", ctx("error"));
        }
        None => assert!(p.get("error").is_none(), "{}", ctx("no error")),
    }
    assert_eq!(
        p.get("not_recorded").cloned().unwrap_or(json!([])),
        truth["not_recorded"],
        "{}",
        ctx("not recorded")
    );
}

#[test]
fn the_sdk_app_round_trips() {
    let Some(py) = reference_python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let app = fixtures().join("otel_app/app.py");
    let out = Command::new(&py).arg(&app).arg(dir).output().unwrap();
    assert!(
        out.status.success(),
        "the app failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let truth: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("truth.json")).unwrap()).unwrap();
    assert_eq!(truth.len(), 5);

    let mut outputs = Vec::new();
    for (file, snap) in [
        ("spans.pb", "import_sdk_protobuf"),
        ("spans.json", "import_sdk_json_document"),
        ("spans.jsonl", "import_sdk_json_lines"),
    ] {
        let target = format!("{file}.traffic.jsonl");
        let run = oloproof(dir, &["import", file, "-o", &target]);
        insta::assert_snapshot!(snap, transcript(&run, dir));
        assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
        let got = records(&dir.join(&target));
        assert_eq!(got.len(), truth.len(), "{file}");
        for (r, t) in got.iter().zip(&truth) {
            check(r, t);
        }
        outputs.push(got);
    }
    assert_eq!(outputs[0], outputs[1], "protobuf and the JSON document");
    assert_eq!(outputs[0], outputs[2], "protobuf and the snake_case lines");

    // The layouts other writers give the same requests (see the app's docstring): the
    // Collector's file exporter (each message after a 4-byte size; with `compression: zstd`
    // each message compressed by libzstd, protobuf or JSON; its native compression, one zstd
    // stream of JSON Lines), the specification's delimited messages, and gzip.
    for file in [
        "spans.collector.pb",
        "spans.collector.pb.zst",
        "spans.collector.json.zst",
        "spans.jsonl.zst",
        "spans.delimited.pb",
        "spans.jsonl.gz",
    ] {
        let target = format!("{file}.traffic.jsonl");
        let run = oloproof(dir, &["import", file, "-o", &target]);
        assert_eq!(run.status.code(), Some(0), "{file}: {}", stderr(&run));
        assert!(
            stdout(&run).contains("17 spans read = 17 used + 0 dropped"),
            "{file}: {}",
            stdout(&run)
        );
        assert_eq!(records(&dir.join(&target)), outputs[0], "{file}");
    }
    // The Collector's file cut short (killed while writing): the messages before the cut are
    // read, the cut is counted and located, and the exit code follows --max-error-rate.
    let whole = std::fs::read(dir.join("spans.collector.pb.zst")).unwrap();
    std::fs::write(dir.join("cut.pb.zst"), &whole[..whole.len() - 9]).unwrap();
    let run = oloproof(dir, &["import", "cut.pb.zst", "-o", "cut.jsonl"]);
    assert_eq!(run.status.code(), Some(4), "{}", stdout(&run));
    let out = stdout(&run);
    assert!(out.contains("cut.pb.zst (byte "), "{out}");
    assert!(out.contains("truncated_protobuf"), "{out}");
    let cut = records(&dir.join("cut.jsonl"));
    assert_eq!(cut.len(), 5, "every trace with a span before the cut");
    assert_eq!(
        cut[..4],
        outputs[0][..4],
        "the traces wholly before the cut"
    );
    // A zstd stream of JSON Lines cut short: the data that does not decompress is one
    // unreadable record, located at the line the stream broke in; nothing is read past it.
    let whole = std::fs::read(dir.join("spans.jsonl.zst")).unwrap();
    std::fs::write(dir.join("cut.jsonl.zst"), &whole[..whole.len() - 9]).unwrap();
    let run = oloproof(dir, &["import", "cut.jsonl.zst", "-o", "cut2.jsonl"]);
    assert_eq!(run.status.code(), Some(4), "{}", stdout(&run));
    let out = stdout(&run);
    assert!(
        out.contains(
            "cut.jsonl.zst:1: undecodable_compressed: the zstd data does not decompress from here"
        ),
        "{out}"
    );
    // Phoenix and Langfuse exports are read uncompressed: a compressed one is refused.
    let run = oloproof(
        dir,
        &[
            "import",
            "spans.jsonl.gz",
            "--format",
            "phoenix",
            "-o",
            "x.jsonl",
        ],
    );
    assert_eq!(run.status.code(), Some(2));
    assert!(
        stderr(&run)
            .contains("spans.jsonl.gz is gzip-compressed: compressed files are read as OTLP"),
        "{}",
        stderr(&run)
    );
    // A binary file read as JSON: the error says which format to give.
    let run = oloproof(
        dir,
        &[
            "import",
            "spans.collector.pb",
            "--format",
            "otlp-json",
            "-o",
            "x.jsonl",
        ],
    );
    assert_eq!(run.status.code(), Some(2));
    assert!(
        stderr(&run).contains("--format otlp-proto"),
        "{}",
        stderr(&run)
    );

    // Content capture off: the corpus gives the passage text back by document id.
    let run = oloproof(
        dir,
        &[
            "import",
            "spans.pb",
            "-o",
            "with_corpus.jsonl",
            "--corpus",
            "corpus.jsonl",
        ],
    );
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let with = records(&dir.join("with_corpus.jsonl"));
    let uncaptured = &truth[3];
    for p in with[3]["retrieval"]["candidates"].as_array().unwrap() {
        let doc = p["doc_id"].as_str().unwrap();
        assert_eq!(p["text"], uncaptured["corpus_text"][doc], "{doc}");
    }
    assert_eq!(
        with[3]["production"]["not_recorded"],
        json!(["input", "answer", "citations", "ttft_ms"])
    );
    assert_eq!(with[0], outputs[0][0], "captured traces are unchanged");

    // `run --dataset` judges the traffic; a criterion on a field not recorded is excluded.
    std::fs::write(
        dir.join("oloproof.yaml"),
        "dataset: spans.pb.traffic.jsonl
evaluators:
  - {type: max_length, criterion: short_answer, max: 40, unit: words}
  - {type: latency, stage: generate}
  - {type: tokens}
",
    )
    .unwrap();
    let run = oloproof(dir, &["run", "."]);
    insta::assert_snapshot!("import_traffic_run", transcript(&run, dir));
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let run_id = stdout(&run)
        .split_whitespace()
        .find(|w| w.starts_with("run_"))
        .unwrap()
        .to_string();
    let uncaptured_id = truth[3]["trace_id"].as_str().unwrap();
    let show = oloproof(dir, &["show", &run_id, "--case", uncaptured_id]);
    assert_eq!(show.status.code(), Some(0), "{}", stderr(&show));
    let verdicts = stdout(&show);
    assert!(
        verdicts
            .lines()
            .any(|l| l.contains("short_answer") && l.ends_with("excluded: not_recorded")),
        "{verdicts}"
    );
}

const BAD_LINES: &str = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"0000000000000002","parentSpanId":"0000000000000001","name":"retrieve","startTimeUnixNano":"1764633600010000000","endTimeUnixNano":"1764633600030000000","attributes":[{"key":"openinference.span.kind","value":{"stringValue":"RETRIEVER"}},{"key":"retrieval.documents.0.document.id","value":{"stringValue":"d1"}},{"key":"retrieval.documents.0.document.score","value":{"doubleValue":"high"}}]}]}]}]}
not json {
{"resourceMetrics":[]}
{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"0000000000000001","name":"rag.query","startTimeUnixNano":"1764633600000000000","endTimeUnixNano":"1764633600500000000","attributes":[{"key":"input.value","value":{"stringValue":"How long do refunds take?"}},{"key":"output.value","value":{"stringValue":"14 days."}}]},{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"0000000000000002","parentSpanId":"0000000000000001","name":"retrieve again","startTimeUnixNano":"1764633600010000000","endTimeUnixNano":"1764633600030000000"},{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"0000000000000003","parentSpanId":"00000000000000ff","name":"orphan","startTimeUnixNano":"1764633600040000000","endTimeUnixNano":"1764633600050000000"},{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"0000000000000004","parentSpanId":"0000000000000001","name":"generate","startTimeUnixNano":"1764633600400000000","endTimeUnixNano":"1764633600100000000","attributes":[{"key":"openinference.span.kind","value":{"stringValue":"LLM"}},{"key":"llm.token_count.prompt","value":{"stringValue":"many"}}]},{"traceId":"0af765","spanId":"0000000000000005","name":"short id"}]}]}]}
"#;

#[test]
fn genai_content_from_log_records() {
    let Some(py) = reference_python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let app = fixtures().join("otel_app/openai_app.py");
    for (mode, events_per_trace) in [("legacy", 3), ("latest", 1)] {
        let dir = tmp.path().join(mode);
        let out = Command::new(&py)
            .arg(&app)
            .arg(&dir)
            .args(["--mode", mode])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "the app failed ({mode}): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let truth: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("truth.json")).unwrap())
                .unwrap();
        let traces = truth["traces"].as_array().unwrap();
        assert_eq!(traces.len(), 2);
        // The content is in the logs only: the spans alone have no answer.
        let run = oloproof(&dir, &["import", "spans.jsonl", "-o", "spans_only.jsonl"]);
        assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
        for r in records(&dir.join("spans_only.jsonl")) {
            assert!(r.get("answer").is_none(), "{mode}: {r}");
            assert!(r["production"]["not_recorded"]
                .as_array()
                .unwrap()
                .contains(&json!("answer")));
        }
        let mut outputs = Vec::new();
        for logs in ["logs.jsonl", "logs.pb"] {
            let target = format!("{logs}.traffic.jsonl");
            let run = oloproof(
                &dir,
                &["import", "spans.jsonl", "--logs", logs, "-o", &target],
            );
            assert_eq!(
                run.status.code(),
                Some(0),
                "{mode} {logs}: {}",
                stderr(&run)
            );
            if mode == "legacy" && logs == "logs.jsonl" {
                insta::assert_snapshot!("import_genai_log_records", transcript(&run, &dir));
            }
            // Each trace's events are used; the app's ordinary log lines are not events.
            let used = events_per_trace * traces.len();
            assert!(
                stdout(&run).contains(&format!(
                    "{} log records read = {used} added to their spans + 2 not used (not_an_event 2)",
                    truth["log_records"]
                )),
                "{mode} {logs}: {}",
                stdout(&run)
            );
            let got = records(&dir.join(&target));
            assert_eq!(got.len(), traces.len());
            for t in traces {
                let r = got
                    .iter()
                    .find(|r| r["id"] == t["trace_id"])
                    .unwrap_or_else(|| panic!("{mode}: no record for {}", t["trace_id"]));
                assert_eq!(r["input"]["question"], t["question"], "{mode}");
                assert_eq!(r["answer"], t["answer"], "{mode} {logs}");
                assert_eq!(r["usage"]["input_tokens"], t["usage"]["input_tokens"]);
                assert_eq!(r["usage"]["output_tokens"], t["usage"]["output_tokens"]);
                assert_eq!(r["usage"]["model"], "gpt-4o-mini-2024-07-18");
                let not_recorded = r["production"]["not_recorded"].as_array().unwrap();
                assert!(!not_recorded.contains(&json!("answer")), "{mode}: {r}");
            }
            outputs.push(got);
        }
        assert_eq!(outputs[0], outputs[1], "{mode}: JSON and protobuf logs");
    }
    // A logs file given as a trace file, and a logs file that is not there.
    let dir = tmp.path().join("legacy");
    let run = oloproof(
        &dir,
        &[
            "import",
            "spans.jsonl",
            "--logs",
            "nope.jsonl",
            "-o",
            "x.jsonl",
        ],
    );
    assert_eq!(run.status.code(), Some(2));
    assert!(
        stderr(&run).contains("no such logs file: nope.jsonl"),
        "{}",
        stderr(&run)
    );
    let run = oloproof(&dir, &["import", "logs.jsonl", "-o", "x.jsonl"]);
    assert_eq!(run.status.code(), Some(2));
    assert!(
        stderr(&run).contains(
            "is an OTLP logs file (`resourceLogs`), not traces: give it with `--logs logs.jsonl`"
        ),
        "{}",
        stderr(&run)
    );
}

#[test]
fn bad_input_is_counted_and_located() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("bad.jsonl"), BAD_LINES).unwrap();
    // The SDK app's protobuf (committed: fixtures/import/sdk_spans.pb), cut 9 bytes short.
    let pb = std::fs::read(fixtures().join("import/sdk_spans.pb")).unwrap();
    std::fs::write(dir.join("cut.pb"), &pb[..pb.len() - 9]).unwrap();

    let run = oloproof(
        dir,
        &["import", "bad.jsonl", "cut.pb", "-o", "traffic.jsonl"],
    );
    insta::assert_snapshot!("import_bad_input", transcript(&run, dir));
    assert_eq!(
        run.status.code(),
        Some(4),
        "dropped spans above the default 0"
    );
    let out = stdout(&run);
    for kind in [
        "not_json",
        "not_traces_data",
        "truncated_protobuf",
        "missing_parent",
        "duplicate_span_id",
        "end_before_start",
        "wrong_attribute_type",
        "bad_id",
    ] {
        assert!(out.contains(kind), "{kind} in\n{out}");
    }
    assert!(out.contains("bad.jsonl:2: not_json"), "{out}");
    assert!(out.contains("cut.pb (byte "), "{out}");
    // Every complete trace was still written, and reads back.
    let got = records(&dir.join("traffic.jsonl"));
    assert_eq!(got.len(), 6, "the bad file's trace and the five SDK traces");
    let bad = &got[0];
    assert_eq!(bad["answer"], json!("14 days."));
    assert!(bad["latency_ms"].get("generate").is_none());
    assert!(bad["production"]["not_recorded"]
        .as_array()
        .unwrap()
        .contains(&json!("latency_ms.generate")));

    let lenient = oloproof(
        dir,
        &[
            "import",
            "bad.jsonl",
            "cut.pb",
            "-o",
            "traffic.jsonl",
            "--max-error-rate",
            "0.5",
        ],
    );
    assert_eq!(lenient.status.code(), Some(0), "{}", stderr(&lenient));

    let missing = oloproof(dir, &["import", "nope.jsonl", "-o", "t.jsonl"]);
    insta::assert_snapshot!("import_missing_file", transcript(&missing, dir));
    assert_eq!(missing.status.code(), Some(2));
}

/// A span of the first trace long after it was written (`late_span`), and a second span with
/// the id of the last trace's root (`duplicate_span_id`).
const TAIL_LINE: &str = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd0000000000000000","spanId":"00000000000000ff","parentSpanId":"0000000000000001","name":"late","startTimeUnixNano":"1764633600001000000","endTimeUnixNano":"1764633600002000000"},{"traceId":"0af7651916cd43dd00000000000009c3","spanId":"0000000000009c31","name":"again","startTimeUnixNano":"1764636099000000000","endTimeUnixNano":"1764636099400000000"}]}]}]}
"#;

/// The records and the summary of an import do not change with how it is read (the typed fast
/// path, lines decoded and records built on every core): 2,500 traces of `bench/gen_otlp.py`
/// (25,000 spans, 391 lines of 64 spans: traces written while the file streams, past the
/// 20,000-span grace window) with `BAD_LINES` after line 200 and `TAIL_LINE` at the end give
/// byte for byte the records (their SHA-256) and the summary
/// (`fixtures/import/generated_2500.stdout`) that the line-by-line `Value` reader gave before
/// (commit a9ca4fa).
#[test]
fn a_generated_file_imports_as_before() {
    use sha2::Digest as _;
    let Some(py) = reference_python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let generated = dir.join("gen.jsonl");
    let status = Command::new(&py)
        .arg(repo().join("bench/gen_otlp.py"))
        .arg("2500")
        .arg(&generated)
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(&generated).unwrap();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    assert_eq!(lines.len(), 391);
    let mixed = format!(
        "{}{BAD_LINES}{}{TAIL_LINE}",
        lines[..200].concat(),
        lines[200..].concat()
    );
    std::fs::write(dir.join("mixed.jsonl"), mixed).unwrap();
    let run = oloproof(dir, &["import", "mixed.jsonl", "-o", "traffic.jsonl"]);
    assert_eq!(run.status.code(), Some(4), "{}", stderr(&run));
    let expected =
        std::fs::read_to_string(fixtures().join("import/generated_2500.stdout")).unwrap();
    assert_eq!(stdout(&run), expected);
    let written = std::fs::read(dir.join("traffic.jsonl")).unwrap();
    assert_eq!(
        format!("{:x}", sha2::Sha256::digest(&written)),
        "382553ffede9c6b9ddf801b2bcb6c844eef3cb15f1258e2d0bbc2eeec4f275f0"
    );
}
