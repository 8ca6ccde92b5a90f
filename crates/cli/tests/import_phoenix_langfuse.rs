//! `oloproof import` of Phoenix and Langfuse exports (issue 15, "Traces in").
//!
//! The fixtures (`fixtures/phoenix/`, `fixtures/langfuse/`, each written by its
//! `generate.py`, whose header names the doc page or source file of every shape) hold the
//! formats these tools export: Phoenix's REST span pages, its spans dataframe as JSON Lines,
//! its OTLP-shaped `spans/otlpv1` pages and its annotations; Langfuse's API trace, observation
//! and score pages and its blob-storage CSV.
//!
//! - `phoenix_exports_become_trace_records`: the four Phoenix files, format detected, give one
//!   record per trace with the question, each retrieval with its ranks, the rerank, the answer,
//!   the latency per stage, the tokens, the feedback (annotations) in `production.feedback`,
//!   and what the spans did not carry in `not_recorded`; `--format phoenix` gives the same.
//! - `langfuse_exports_become_trace_records`: the same for the four Langfuse files, with TTFT
//!   from `completionStartTime`, scores as feedback, and a trace without a trace record rooted
//!   on a synthesized root.
//! - `bad_phoenix_and_langfuse_input_is_counted_and_located`: bad records of both (not JSON,
//!   not the tool's shape, ids missing, times unreadable, feedback on traces not in the input,
//!   a CSV row cut short): counted by kind, located (`file:line`, `file[i]`), the summary adds
//!   up, exit 4 above `--max-error-rate`, 0 within it.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::{json, Value};

fn fixtures(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir)
}

fn copy_fixtures(dir: &str, to: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for e in std::fs::read_dir(fixtures(dir)).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        if name.ends_with(".py") {
            continue;
        }
        std::fs::copy(&p, to.join(&name)).unwrap();
        names.push(name);
    }
    names.sort();
    names
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn by_id<'a>(records: &'a [Value], id: &str) -> &'a Value {
    records
        .iter()
        .find(|r| r["id"] == json!(id))
        .unwrap_or_else(|| panic!("no record {id}"))
}

fn doc_ids(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|p| p["doc_id"].as_str().unwrap())
        .collect()
}

fn pretty(records: &[Value]) -> String {
    records
        .iter()
        .map(|r| serde_json::to_string_pretty(r).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn phoenix_exports_become_trace_records() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let files = copy_fixtures("phoenix", dir);
    let mut args: Vec<&str> = vec!["import"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["-o", "traffic.jsonl"]);
    let run = oloproof(dir, &args);
    insta::assert_snapshot!("phoenix_import_summary", transcript(&run, dir));
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let got = records(&dir.join("traffic.jsonl"));
    insta::assert_snapshot!("phoenix_import_records", pretty(&got));
    assert_eq!(got.len(), 4);

    // The REST page's full RAG trace.
    let r = by_id(&got, "6f1c2b3a4d5e6f708192a3b4c5d6e7f8");
    assert_eq!(r["input"], json!({"question": "How long do refunds take?"}));
    assert_eq!(r["answer"], json!("Refunds take 14 days."));
    let lane = &r["pipeline"]["retrievals"][0]["retrieval"];
    assert_eq!(doc_ids(&lane["candidates"]), ["kb-12", "kb-40", "kb-7"]);
    assert_eq!(lane["query"], json!("refund processing time"));
    assert_eq!(
        doc_ids(&r["pipeline"]["pre_rerank"]),
        ["kb-12", "kb-40", "kb-7"]
    );
    assert_eq!(doc_ids(&r["retrieval"]["candidates"]), ["kb-12", "kb-40"]);
    assert_eq!(r["retrieval"]["candidates"][0]["score"], json!(0.98));
    assert_eq!(
        r["latency_ms"],
        json!({"retrieve": 120.0, "rerank": 80.0, "generate": 850.0, "total": 1200.0})
    );
    assert_eq!(
        r["usage"],
        json!({"model": "gpt-4o-mini", "input_tokens": 412, "output_tokens": 9})
    );
    assert_eq!(
        r["metadata"],
        json!({"intent": "refund", "session_id": "sess-1", "user_id": "user-7"})
    );
    let feedback = &r["production"]["feedback"];
    assert_eq!(
        feedback[0],
        json!({"name": "thumbs", "value": 0, "comment": "It is 10 days for card payments.", "source": "phoenix:HUMAN"})
    );
    assert_eq!(feedback[1]["name"], json!("faithfulness"));
    assert_eq!(feedback[1]["value"], json!(0.93));
    assert_eq!(r["production"]["source"], json!("phoenix"));
    assert_eq!(
        r["production"]["timestamp"],
        json!("2025-12-01T09:00:00.000000000Z")
    );
    assert_eq!(
        r["production"]["not_recorded"],
        json!(["citations", "ttft_ms"])
    );
    assert_eq!(
        r["pipeline"]["rewrite"]["queries"],
        json!(["refund processing time"])
    );

    // The failed trace: no answer (recorded as such), the error at its stage, the trace
    // annotation.
    let e = by_id(&got, "7f1c2b3a4d5e6f708192a3b4c5d6e7f8");
    assert_eq!(
        e["input"],
        json!({"question": "Can I change my delivery address?", "tenant": "acme"})
    );
    assert!(e.get("answer").is_none());
    let nr = e["production"]["not_recorded"].as_array().unwrap();
    assert!(nr.contains(&json!("answer")), "{nr:?}");
    assert_eq!(
        e["production"]["error"],
        json!({"stage": "generate", "message": "upstream model returned 503", "span_id": "bb00000000000003"})
    );
    assert_eq!(
        e["production"]["feedback"],
        json!([{"name": "correctness", "value": "no_answer", "comment": "the trace ended in an error", "source": "phoenix:CODE"}])
    );

    // The dataframe rows (epoch-millisecond times, nested document lists).
    let df = by_id(&got, "8f1c2b3a4d5e6f708192a3b4c5d6e7f8");
    assert_eq!(doc_ids(&df["retrieval"]["candidates"]), ["kb-88", "kb-89"]);
    assert_eq!(df["answer"], json!("Yes, within 5 days."));
    assert_eq!(df["latency_ms"]["total"], json!(900.0));
    assert_eq!(df["latency_ms"]["generate"], json!(730.0));
    assert_eq!(df["usage"]["input_tokens"], json!(230));
    assert_eq!(df["metadata"]["intent"], json!("shipping"));

    // The OTLP-shaped page: no retrieval span, recorded as not recorded.
    let o = by_id(&got, "9f1c2b3a4d5e6f708192a3b4c5d6e7f8");
    assert_eq!(o["input"]["question"], json!("When is support open?"));
    assert_eq!(o["answer"], json!("Our support line is open 9-17 CET."));
    let nr = o["production"]["not_recorded"].as_array().unwrap();
    for f in ["retrieval", "context", "ttft_ms"] {
        assert!(nr.contains(&json!(f)), "{f} in {nr:?}");
    }

    // Naming the format gives the same records.
    let mut named = args.clone();
    named.extend(["--format", "phoenix"]);
    let out_at = named.len() - 3;
    named[out_at] = "named.jsonl";
    let run = oloproof(dir, &named);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert_eq!(records(&dir.join("named.jsonl")), got);
}

#[test]
fn langfuse_exports_become_trace_records() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let files = copy_fixtures("langfuse", dir);
    let mut args: Vec<&str> = vec!["import"];
    // Scores first: feedback may come before the spans it is on.
    let mut ordered: Vec<&str> = files.iter().map(String::as_str).collect();
    ordered.sort_by_key(|f| !f.starts_with("scores"));
    args.extend(ordered);
    args.extend(["-o", "traffic.jsonl"]);
    let run = oloproof(dir, &args);
    insta::assert_snapshot!("langfuse_import_summary", transcript(&run, dir));
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let got = records(&dir.join("traffic.jsonl"));
    insta::assert_snapshot!("langfuse_import_records", pretty(&got));
    assert_eq!(got.len(), 3);

    let a = by_id(&got, "a1f0c3d2e4b5a6978877665544332211");
    assert_eq!(a["input"], json!({"question": "How long do refunds take?"}));
    assert_eq!(a["answer"], json!("Refunds take 14 days."));
    assert_eq!(doc_ids(&a["retrieval"]["candidates"]), ["kb-12", "kb-40"]);
    assert_eq!(
        a["retrieval"]["candidates"][0]["text"],
        json!("Refunds are processed within 14 days.")
    );
    assert_eq!(
        a["retrieval"]["candidates"][0]["metadata"],
        json!({"source": "faq"})
    );
    assert_eq!(a["retrieval"]["query"], json!("refund processing time"));
    assert_eq!(a["ttft_ms"], json!(330.0));
    assert_eq!(
        a["usage"],
        json!({"model": "gpt-4o-mini", "input_tokens": 412, "output_tokens": 9})
    );
    assert_eq!(
        a["latency_ms"],
        json!({"retrieve": 140.0, "generate": 1200.0, "total": 1420.0})
    );
    assert_eq!(
        a["metadata"],
        json!({"intent": "refund", "session_id": "sess-9", "user_id": "user-3", "tags": ["web"]})
    );
    let fb = &a["production"]["feedback"];
    assert_eq!(
        fb[0],
        json!({"name": "thumbs", "value": 0.0, "comment": "It is 10 days for card payments.", "source": "langfuse:API"})
    );
    assert_eq!(fb[1]["name"], json!("faithfulness"));
    assert_eq!(a["production"]["source"], json!("langfuse"));
    assert_eq!(
        a["production"]["timestamp"],
        json!("2025-12-01T10:00:00.000000000Z")
    );

    let b = by_id(&got, "b1f0c3d2e4b5a6978877665544332211");
    assert_eq!(b["input"], json!({"question": "Can I pay by invoice?"}));
    assert!(b.get("answer").is_none());
    assert_eq!(
        b["production"]["error"],
        json!({"stage": "generate", "message": "Rate limit reached for gpt-4o-mini", "span_id": "obs-b2"})
    );
    assert_eq!(
        b["production"]["feedback"],
        json!([{"name": "user_feedback", "value": false, "comment": "no answer at all", "source": "langfuse:ANNOTATION"}])
    );
    let nr = b["production"]["not_recorded"].as_array().unwrap();
    for f in ["answer", "retrieval", "ttft_ms"] {
        assert!(nr.contains(&json!(f)), "{f} in {nr:?}");
    }

    // The blob CSV: two top-level observations under a synthesized root, which carries no
    // question and no total latency (recorded as not recorded, not guessed).
    let c = by_id(&got, "c1f0c3d2e4b5a6978877665544332211");
    assert_eq!(doc_ids(&c["retrieval"]["candidates"]), ["kb-51"]);
    assert_eq!(
        c["retrieval"]["query"],
        json!("Is there a student discount?")
    );
    assert_eq!(c["answer"], json!("Yes: 10% with a valid student ID."));
    assert_eq!(c["ttft_ms"], json!(180.0));
    assert_eq!(c["usage"]["model"], json!("mistral-small"));
    assert_eq!(
        c["metadata"],
        json!({"intent": "pricing", "session_id": "sess-12", "user_id": "user-5", "tags": ["app"]})
    );
    let nr = c["production"]["not_recorded"].as_array().unwrap();
    for f in ["input", "latency_ms.total"] {
        assert!(nr.contains(&json!(f)), "{f} in {nr:?}");
    }
    assert_eq!(
        c["production"]["timestamp"],
        json!("2025-12-01T10:10:00.000000000Z")
    );
    assert_eq!(c["production"]["feedback"][0]["value"], json!("friendly"));
}

#[test]
fn bad_phoenix_and_langfuse_input_is_counted_and_located() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let good = std::fs::read_to_string(fixtures("phoenix").join("spans_page.json")).unwrap();
    let page: Value = serde_json::from_str(&good).unwrap();
    let spans = page["data"].as_array().unwrap();
    let mut lines: Vec<String> = spans[..4].iter().map(Value::to_string).collect();
    lines.push("{\"context\": {\"trace_id\": \"6f1c\", \"span_id\": \"aa00000000000009\"}, \"name\": \"short trace id\"}".into());
    let mut late = spans[1].clone();
    late["context"]["span_id"] = json!("aa00000000000008");
    late["start_time"] = json!("2025-12-01 at nine");
    lines.push(late.to_string());
    lines.push("not json {".into());
    lines.push("{\"span_id\": \"ffffffffffffffff\", \"name\": \"thumbs\", \"annotator_kind\": \"HUMAN\", \"result\": {\"score\": 1}}".into());
    std::fs::write(dir.join("phoenix.jsonl"), lines.join("\n") + "\n").unwrap();
    std::fs::write(
        dir.join("langfuse.json"),
        serde_json::to_string_pretty(&json!([
            {"id": "o1", "traceId": "t1", "type": "SPAN", "name": "rag", "startTime": "2025-12-01T10:00:00Z",
             "endTime": "2025-12-01T10:00:01Z", "input": "q?", "output": "a."},
            {"id": "o2", "type": "GENERATION", "startTime": "2025-12-01T10:00:00Z", "traceId": null},
            {"metric": "cpu", "value": 3},
            {"id": "s1", "traceId": "t-missing", "name": "thumbs", "value": 0, "dataType": "NUMERIC", "source": "API"}
        ]))
        .unwrap(),
    )
    .unwrap();
    std::fs::write(
        dir.join("scores.csv"),
        "id,traceId,observationId,name,value,stringValue,dataType,source,comment\n\
         s2,t1,,thumbs,0,,NUMERIC,API,\"too slow\"\n\
         s3,t1,,correct\n",
    )
    .unwrap();

    let run = oloproof(
        dir,
        &[
            "import",
            "phoenix.jsonl",
            "langfuse.json",
            "scores.csv",
            "-o",
            "traffic.jsonl",
        ],
    );
    insta::assert_snapshot!("phoenix_langfuse_bad_input", transcript(&run, dir));
    assert_eq!(run.status.code(), Some(4), "{}", stdout(&run));
    let out = stdout(&run);
    for needle in [
        "phoenix.jsonl:5: bad_id",
        "phoenix.jsonl:6: bad_timestamp",
        "phoenix.jsonl:7: not_json",
        "phoenix.jsonl:8: feedback_without_trace",
        "langfuse.json[1]: bad_id",
        "langfuse.json[2]: not_langfuse",
        "langfuse.json[3]: feedback_without_trace",
        "scores.csv:3: bad_csv_row",
    ] {
        assert!(out.contains(needle), "{needle} in\n{out}");
    }
    let got = records(&dir.join("traffic.jsonl"));
    assert_eq!(got.len(), 2, "the Phoenix trace and the Langfuse one");
    let t1 = by_id(&got, "t1");
    assert_eq!(t1["answer"], json!("a."));
    assert_eq!(
        t1["production"]["feedback"][0]["comment"],
        json!("too slow")
    );

    let lenient = oloproof(
        dir,
        &[
            "import",
            "phoenix.jsonl",
            "langfuse.json",
            "scores.csv",
            "-o",
            "traffic.jsonl",
            "--max-error-rate",
            "0.5",
        ],
    );
    assert_eq!(lenient.status.code(), Some(0), "{}", stderr(&lenient));
}
