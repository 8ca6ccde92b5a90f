//! `oloproof collect`: the real OpenTelemetry Python SDK's OTLP/HTTP exporter (protobuf, gzip,
//! batches) sends the app of `fixtures/otel_app` to a running collector; `import --collected`
//! gives the same trace records as importing the files the app wrote, and `monitor` reads
//! the store's requests as it reads that file. Bad requests get the
//! OTLP/HTTP status codes and the collector keeps running; SIGTERM stops it with its counts.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::*;
use serde_json::{json, Value};

/// A project that monitors the store's collected requests with one rule evaluator.
const MONITOR_COLLECTED: &str = "evaluators:
  - {type: regex, criterion: no_refusal, must_not_match: '(?i)cannot help'}
monitor:
  traffic: collected
  window: {size: 1d}
  sampling:
    tiers:
      - {evaluators: [no_refusal], rate: 1.0}
";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A running `oloproof collect` and its endpoint.
struct Collecting {
    child: Child,
    url: String,
    stdout: BufReader<std::process::ChildStdout>,
}

fn start(dir: &Path, store: &str, extra: &[&str]) -> Collecting {
    let mut child = Command::new(env!("CARGO_BIN_EXE_oloproof"))
        .args(["collect", "--store", store, "--listen", "127.0.0.1:0"])
        .args(extra)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no endpoint in {first:?}"))
        .to_string();
    assert!(url.ends_with("/v1/traces"), "{first}");
    Collecting { child, url, stdout }
}

/// SIGTERM, then the exit code and the rest of stdout (the counts).
fn stop(mut c: Collecting) -> (Option<i32>, String, String) {
    // At once: the collector handles SIGTERM from before it prints its endpoint.
    let pid = c.child.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(killed.success());
    let status = c.child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut c.stdout, &mut rest).unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(c.child.stderr.as_mut().unwrap(), &mut err).unwrap();
    (status.code(), rest, err)
}

fn records_by_trace(path: &Path) -> Vec<Value> {
    let mut records: Vec<Value> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    records.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    records
}

#[test]
fn the_sdk_exporter_is_collected_and_imported_like_its_files() {
    let Some(py) = reference_python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let collector = start(dir, "collected.db", &[]);
    let app = fixtures().join("otel_app/app.py");
    let out = Command::new(&py)
        .arg(&app)
        .arg(dir)
        .args(["--endpoint", &collector.url])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the app failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The SDK logs an export it could not deliver; there must be none.
    let app_log = String::from_utf8_lossy(&out.stderr);
    assert!(!app_log.contains("Failed to export"), "{app_log}");
    let (code, summary, err) = stop(collector);
    assert_eq!(code, Some(0), "{err}");
    // 17 spans in batches of at most four.
    assert!(
        summary.starts_with("Recorded ") && summary.contains("(17 spans, 0 unreadable); refused 0"),
        "{summary}"
    );
    let requests: u64 = summary.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(requests >= 5, "{summary}");

    let from_files = oloproof(dir, &["import", "spans.pb", "-o", "files.jsonl"]);
    assert_eq!(from_files.status.code(), Some(0), "{}", stderr(&from_files));
    let collected = oloproof(
        dir,
        &[
            "import",
            "--collected",
            "--store",
            "collected.db",
            "-o",
            "collected.jsonl",
        ],
    );
    assert_eq!(collected.status.code(), Some(0), "{}", stderr(&collected));
    let text = stdout(&collected);
    assert!(
        text.starts_with(&format!(
            "Imported {requests} collected requests (collected OTLP requests): 17 spans read = 17 used + 0 dropped"
        )),
        "{text}"
    );
    let want = records_by_trace(&dir.join("files.jsonl"));
    let got = records_by_trace(&dir.join("collected.jsonl"));
    assert_eq!(want.len(), 5);
    assert_eq!(got, want, "what was collected is what the app wrote");

    // `monitor` reads the store's collected requests as its traffic (`traffic: collected`),
    // exactly as it reads the file `import --collected` wrote.
    std::fs::write(
        dir.join("oloproof.yaml"),
        format!("store: collected.db\n{MONITOR_COLLECTED}"),
    )
    .unwrap();
    // One of the app's five traces is an error trace.
    let from_store = oloproof(dir, &["monitor", ".", "--json", "--max-error-rate", "0.5"]);
    assert_eq!(from_store.status.code(), Some(0), "{}", stderr(&from_store));
    assert!(
        stderr(&from_store).starts_with(&format!(
            "Traffic from the store: {requests} collected requests · 17 spans read = 17 used + 0 dropped · 5 trace records"
        )),
        "{}",
        stderr(&from_store)
    );
    let from_file = oloproof(
        dir,
        &[
            "monitor",
            ".",
            "--json",
            "--max-error-rate",
            "0.5",
            "--traffic",
            "collected.jsonl",
        ],
    );
    assert_eq!(from_file.status.code(), Some(0), "{}", stderr(&from_file));
    let store_report: Value = serde_json::from_slice(&from_store.stdout).unwrap();
    let file_report: Value = serde_json::from_slice(&from_file.stdout).unwrap();
    assert_eq!(store_report["traffic"]["path"], "collected");
    assert_eq!(store_report["traffic"]["records"], 5);
    assert_eq!(store_report["errors"]["errors"], 1);
    for key in ["sha256", "records", "timed", "untimed"] {
        assert_eq!(
            store_report["traffic"][key], file_report["traffic"][key],
            "traffic.{key}"
        );
    }
    for key in ["window", "windows", "slos", "alerts", "errors"] {
        assert_eq!(store_report[key], file_report[key], "{key}");
    }
    assert_eq!(
        store_report["sampling"]["tiers"][0]["selection"],
        file_report["sampling"]["tiers"][0]["selection"]
    );
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

/// POSTs `body` and returns the status, the content type and the body.
fn post(url: &str, content_type: &str, body: &[u8]) -> (u16, String, Vec<u8>) {
    let mut resp = agent()
        .post(url)
        .header("Content-Type", content_type)
        .send(body)
        .unwrap();
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = resp.body_mut().read_to_vec().unwrap();
    (resp.status().as_u16(), ct, body)
}

const GOOD: &str = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"0000000000000001","name":"rag.query","startTimeUnixNano":"1764633600000000000","endTimeUnixNano":"1764633600500000000","attributes":[{"key":"input.value","value":{"stringValue":"How long do refunds take?"}},{"key":"output.value","value":{"stringValue":"14 days."}}]}]}]}]}"#;

/// One good span and one with a trace id of the wrong length.
const PARTIAL: &str = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"1af7651916cd43dd8448eb211c80319c","spanId":"0000000000000001","name":"rag.query","startTimeUnixNano":"1764633600000000000","endTimeUnixNano":"1764633600500000000","attributes":[{"key":"input.value","value":{"stringValue":"Where is my parcel?"}}]},{"traceId":"0af765","spanId":"0000000000000005","name":"short id"}]}]}]}"#;

/// The official GenAI instrumentation of the OpenAI client sends its message content as log
/// records to `/v1/logs`: collected beside the spans, they give each trace its answer.
#[test]
fn genai_log_records_are_collected_with_their_spans() {
    let Some(py) = reference_python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let collector = start(dir, "collected.db", &[]);
    let base = collector.url.trim_end_matches("/v1/traces").to_string();
    let app = fixtures().join("otel_app/openai_app.py");
    let out = Command::new(&py)
        .arg(&app)
        .arg(dir)
        .args(["--mode", "legacy", "--endpoint", &base])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the app failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let app_log = String::from_utf8_lossy(&out.stderr);
    assert!(!app_log.contains("Failed to export"), "{app_log}");
    let (code, summary, err) = stop(collector);
    assert_eq!(code, Some(0), "{err}");
    // Two traces of three spans; four log records each (three messages, one plain line).
    assert!(
        summary.contains("(6 spans, 0 unreadable); refused 0"),
        "{summary}"
    );
    assert!(
        summary.contains("and 8 log records (POST /v1/logs), for the spans they name"),
        "{summary}"
    );
    let run = oloproof(
        dir,
        &[
            "import",
            "--collected",
            "--store",
            "collected.db",
            "-o",
            "collected.jsonl",
        ],
    );
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert!(
        stdout(&run)
            .contains("8 log records read = 6 added to their spans + 2 not used (not_an_event 2)"),
        "{}",
        stdout(&run)
    );
    // The same records as the app's files give.
    let files = oloproof(
        dir,
        &[
            "import",
            "spans.jsonl",
            "--logs",
            "logs.jsonl",
            "-o",
            "files.jsonl",
        ],
    );
    assert_eq!(files.status.code(), Some(0), "{}", stderr(&files));
    let got = records_by_trace(&dir.join("collected.jsonl"));
    assert_eq!(got, records_by_trace(&dir.join("files.jsonl")));
    let truth: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("truth.json")).unwrap()).unwrap();
    for t in truth["traces"].as_array().unwrap() {
        let r = got.iter().find(|r| r["id"] == t["trace_id"]).unwrap();
        assert_eq!(r["answer"], t["answer"]);
    }
}

#[test]
fn bad_requests_get_otlp_status_codes_and_the_collector_keeps_running() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let c = start(dir, "c.db", &["--max-body-bytes", "4096"]);
    let url = c.url.clone();
    let base = url.trim_end_matches("/v1/traces").to_string();

    let (status, ct, body) = post(&url, "application/json", b"{\"resourceSpans\": [");
    assert_eq!((status, ct.as_str()), (400, "application/json"));
    let status_json: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status_json["code"], 3);
    assert!(
        status_json["message"]
            .as_str()
            .unwrap()
            .contains("not JSON"),
        "{status_json}"
    );
    // Protobuf that is not a request: 400 with a protobuf google.rpc.Status.
    let (status, ct, body) = post(&url, "application/x-protobuf", &[0xff; 32]);
    assert_eq!((status, ct.as_str()), (400, "application/x-protobuf"));
    assert!(!body.is_empty());
    let (status, _, _) = post(&url, "text/plain", GOOD.as_bytes());
    assert_eq!(status, 415);
    let (status, _, _) = post(&url, "application/json", &vec![b' '; 5000]);
    assert_eq!(status, 413);
    let (status, _, _) = post(&format!("{base}/v1/metrics"), "application/json", b"{}");
    assert_eq!(status, 404);
    let resp = agent().get(&url).call().unwrap();
    assert_eq!(resp.status().as_u16(), 405);
    assert_eq!(resp.headers().get("allow").unwrap(), "POST");
    // The logs endpoint: a trace request posted there is not a logs request.
    let logs = format!("{base}/v1/logs");
    let (status, _, body) = post(&logs, "application/json", GOOD.as_bytes());
    assert_eq!(status, 400);
    let status_json: Value = serde_json::from_slice(&body).unwrap();
    assert!(
        status_json["message"]
            .as_str()
            .unwrap()
            .contains("not OTLP `LogsData`: an object with keys resourceSpans"),
        "{status_json}"
    );
    let resp = agent().get(&logs).call().unwrap();
    assert_eq!(resp.status().as_u16(), 405);

    // Still running: a good request is recorded, a partly bad one is recorded with
    // partial_success naming what was rejected.
    let (status, _, body) = post(&url, "application/json", GOOD.as_bytes());
    assert_eq!((status, body.as_slice()), (200, b"{}".as_slice()));
    let (status, _, body) = post(&url, "application/json", PARTIAL.as_bytes());
    assert_eq!(status, 200);
    let partial: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(partial["partialSuccess"]["rejectedSpans"], "1", "{partial}");
    assert!(
        partial["partialSuccess"]["errorMessage"]
            .as_str()
            .unwrap()
            .contains("trace"),
        "{partial}"
    );
    let (code, summary, err) = stop(c);
    assert_eq!(code, Some(0), "{err}");
    insta::assert_snapshot!(
        "collect_stop_summary",
        summary.replace(dir.to_str().unwrap(), "[TMP]")
    );

    // The import reads both requests, and locates the rejected span in its request.
    let run = oloproof(
        dir,
        &["import", "--collected", "--store", "c.db", "-o", "t.jsonl"],
    );
    insta::assert_snapshot!("collect_import_partial", transcript(&run, dir));
    assert_eq!(run.status.code(), Some(4), "one span of three dropped");
    let records = records_by_trace(&dir.join("t.jsonl"));
    assert_eq!(records.len(), 2);
    assert_eq!(records[0]["answer"], json!("14 days."));
}

#[test]
fn a_remote_address_must_be_asked_for_and_the_store_must_be_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let remote = oloproof(
        dir,
        &["collect", "--store", "c.db", "--listen", "0.0.0.0:0"],
    );
    insta::assert_snapshot!("collect_remote_refused", transcript(&remote, dir));
    assert_eq!(remote.status.code(), Some(2));
    let nowhere = oloproof(dir, &["collect", "--listen", "127.0.0.1:0"]);
    assert_eq!(nowhere.status.code(), Some(2), "{}", stderr(&nowhere));
    assert!(
        stderr(&nowhere).contains("no oloproof.yaml"),
        "{}",
        stderr(&nowhere)
    );
    let no_files = oloproof(dir, &["import", "-o", "t.jsonl"]);
    assert_eq!(no_files.status.code(), Some(2));
    assert!(
        stderr(&no_files).contains("<FILE>"),
        "{}",
        stderr(&no_files)
    );
}

#[test]
fn monitoring_an_empty_collect_store_says_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("oloproof.yaml"), MONITOR_COLLECTED).unwrap();
    let o = oloproof(dir, &["monitor", "."]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("so no collected requests: run `oloproof collect`"),
        "{}",
        stderr(&o)
    );
    // A store that exists but holds no request (a run store, or a collector never sent to).
    let collector = start(dir, ".oloproof/oloproof.db", &[]);
    let (code, _, err) = stop(collector);
    assert_eq!(code, Some(0), "{err}");
    let o = oloproof(dir, &["monitor", "."]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("holds no collected requests: run `oloproof collect`"),
        "{}",
        stderr(&o)
    );
}
