//! A pipeline system through the real binary (`tests/systems/pipeline/app.py`: a rewrite, two
//! lanes, host RRF, a rerank, two-hop retrieval, applied predicates checked against
//! `corpus:`): every stage recorded in the trace, each stage behind its own cache, replies
//! that break a stage's contract recorded as protocol errors of their case, and config
//! errors against the system's `hello` located before anything runs.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

/// The trace of `case` in the newest run (`show --case --json`).
fn trace(dir: &Path, case: &str) -> Value {
    let runs = stdout(&oloproof(dir, &["runs"]));
    let run = run_id(&runs);
    let o = oloproof(dir, &["show", &run, "--case", case, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let shown: Value = serde_json::from_slice(&o.stdout).unwrap();
    shown.get("trace").cloned().unwrap_or(shown)
}

fn stages_line(o: &std::process::Output) -> String {
    stdout(o)
        .lines()
        .find(|l| l.starts_with("Stages:"))
        .unwrap_or_default()
        .to_string()
}

fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|p| p["doc_id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn every_stage_of_a_pipeline_is_recorded() {
    let (_tmp, dir) = project("tests/systems/pipeline");
    let o = oloproof(&dir, &["run", "."]);
    assert!(o.status.success(), "{}", stderr(&o));
    // 3 cases × 2 rewrites × 2 lanes retrieve calls.
    assert_eq!(
        stages_line(&o),
        "Stages: rewrite 0 hit/3 miss; retrieve 0 hit/12 miss; rerank 0 hit/3 miss; generate 0 hit/3 miss"
    );
    let t = trace(&dir, "refund");
    let p = &t["pipeline"];
    assert_eq!(p["question"], "how long are refunds reviewed");
    assert_eq!(
        p["rewrite"]["queries"],
        serde_json::json!([
            "how long are refunds reviewed",
            "how long are refunds reviewed guide"
        ])
    );
    assert_eq!(p["rewrite"]["usage"]["model"], "rw");
    let calls: Vec<(String, String)> = p["retrievals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["lane"].as_str().unwrap().to_string(),
                r["query"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("words", "how long are refunds reviewed"),
            ("letters", "how long are refunds reviewed"),
            ("words", "how long are refunds reviewed guide"),
            ("letters", "how long are refunds reviewed guide"),
        ]
        .map(|(l, q)| (l.to_string(), q.to_string()))
    );
    assert_eq!(p["fused"]["method"], "rrf k=60");
    // The lanes' own rankings: each lane's two lists fused (the same RRF).
    assert!(p["lanes"]["words"].is_array() && p["lanes"]["letters"].is_array());
    // The rerank received the fused list and returned it longest first.
    let fused = ids(&p["fused"]["candidates"]);
    let mut pre = ids(&p["pre_rerank"]);
    assert_eq!(pre, fused);
    let fin = ids(&t["retrieval"]["candidates"]);
    pre.sort();
    let mut sorted_fin = fin.clone();
    sorted_fin.sort();
    assert_eq!(pre, sorted_fin, "a rerank re-orders the same candidates");
    // Every call reported its predicate; the final list carries it; the host checked it on
    // the gold document (d1 is acme's: it passes).
    assert_eq!(
        t["retrieval"]["filters"],
        serde_json::json!([{"field": "tenant", "op": "=", "value": "acme"}])
    );
    assert_eq!(
        t["filter_check"],
        serde_json::json!({"predicates": ["tenant = \"acme\""], "gold": [{"doc_id": "d1", "in_corpus": true}]})
    );
    // Per-stage times and cache use.
    for stage in ["rewrite", "retrieve", "fuse", "rerank", "generate"] {
        assert!(t["latency_ms"][stage].as_f64().unwrap() >= 0.0, "{stage}");
    }
    assert_eq!(
        t["cache"]["retrieve_calls"],
        serde_json::json!({"hits": 0, "misses": 4})
    );
    assert_eq!(t["generation"]["ttft_ms"], 1.5);

    // The globex document is removed by the tenant predicate: the host names it.
    let g = trace(&dir, "globex");
    assert_eq!(
        g["filter_check"]["gold"],
        serde_json::json!([{"doc_id": "d3", "in_corpus": true, "failed": ["tenant = \"acme\""]}])
    );

    // Hops are recorded in order, on each call and on the final list.
    let h = trace(&dir, "hops");
    let hops = h["retrieval"]["hops"].as_array().unwrap();
    assert_eq!(hops.len(), 2 * 4, "two hops for each of the four calls");
    assert_eq!(hops[1]["query"], "support answers");
    assert_eq!(ids(&hops[1]["candidates"])[0], "d6");
}

#[test]
fn changing_the_fusion_or_the_reranker_reuses_every_lane_retrieval() {
    let (_tmp, dir) = project("tests/systems/pipeline");
    assert!(oloproof(&dir, &["run", "."]).status.success());
    let o = oloproof(&dir, &["run", ".", "--set", "system.rag.fusion.k=10"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The fused scores change, so the rerank and generation are asked again.
    assert_eq!(
        stages_line(&o),
        "Stages: rewrite 3 hit/0 miss; retrieve 12 hit/0 miss; rerank 0 hit/3 miss; generate 0 hit/3 miss"
    );
    let log = dir.join("retrieve-calls.log");
    let o = oloproof_env(
        &dir,
        &[
            "run",
            ".",
            "--set",
            "system.rag.fusion.k=10",
            "--set",
            "system.rag.params.rerank_mode=reverse",
        ],
        &[("PIPELINE_RETRIEVE_LOG", log.to_str().unwrap())],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // A parameter is part of the rewrite's and the rerank's identity (it may steer either),
    // not of a retrieval's: every lane retrieval is re-used.
    let line = stages_line(&o);
    assert!(
        line.starts_with(
            "Stages: rewrite 0 hit/3 miss; retrieve 12 hit/0 miss; rerank 0 hit/3 miss;"
        ),
        "{line}"
    );
    // The first missed rewrite went with its retrievals in one request (`rewrite_retrieve`),
    // whose four calls turned out to be cached: the worker's thread then sent the other
    // rewrites alone, and asked for no retrieval again.
    let made = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(made.lines().count(), 4, "{made}");
    // A fully cached re-run touches no stage.
    let o = oloproof(
        &dir,
        &[
            "run",
            ".",
            "--set",
            "system.rag.fusion.k=10",
            "--set",
            "system.rag.params.rerank_mode=reverse",
        ],
    );
    assert!(
        stdout(&o).contains("Cache: execution 3 hit/0 miss"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn stage_replies_that_break_the_contract_are_protocol_errors_of_their_case() {
    let (_tmp, dir) = project("tests/systems/pipeline");
    let faults = [
        ("rerank", "fault-rerank-unknown refunds", "rerank", "d9 was not among the candidates given to rerank"),
        ("lane", "fault-lane refunds", "retrieve", "`lane`: the reply is for lane `dense`, asked for `words` (declared lanes: words, letters)"),
        ("predicate", "fault-predicate refunds", "retrieve", "Retrieval.filters[0]: op 'in' needs a list value"),
        ("hop", "fault-hop refunds", "retrieve", "Retrieval.hops[0]: a hop needs candidates"),
        ("rewrite", "fault-rewrite refunds", "rewrite", "rewrite() returned no query"),
    ];
    let mut lines = vec![
        r#"{"id": "fine", "input": {"question": "how long are refunds reviewed", "tenant": "acme"}, "expected": {"answer": "14 days", "relevant": [{"doc_id": "d1"}]}}"#.to_string(),
    ];
    for (id, q, _, _) in &faults {
        lines.push(
            serde_json::json!({"id": id, "input": {"question": q, "tenant": "acme"},
                               "expected": {"answer": "x", "relevant": [{"doc_id": "d1"}]}})
            .to_string(),
        );
    }
    std::fs::write(dir.join("cases.jsonl"), lines.join("\n") + "\n").unwrap();
    let o = oloproof(&dir, &["run", ".", "--max-error-rate", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(trace(&dir, "fine")["error"].is_null());
    for (id, _, stage, message) in faults {
        let t = trace(&dir, id);
        let error = &t["error"];
        assert_eq!(error["stage"], stage, "{id}: {error}");
        let text = error["message"].as_str().unwrap();
        assert!(text.contains(message), "{id}: {text}");
    }
    assert_eq!(trace(&dir, "rerank")["error"]["kind"], "protocol");
    // Counted in the exit code: at the default max error rate the run fails.
    let o = oloproof(&dir, &["run", "."]);
    assert!(!o.status.success());
    // Errors are never cached: the faulty cases run again (the fine case comes from the
    // execution cache; a failed stage's earlier stages from theirs).
    assert_eq!(
        stages_line(&o),
        "Stages: rewrite 4 hit/1 miss; retrieve 4 hit/3 miss; rerank 0 hit/1 miss; generate 0 hit/0 miss"
    );
}

#[test]
fn config_errors_against_the_hello_are_located_before_anything_runs() {
    let (tmp, dir) = project("tests/systems/pipeline");
    let o = oloproof(
        &dir,
        &["run", ".", "--set", "system.rag.fusion.method=system"],
    );
    assert_eq!(o.status.code(), Some(2));
    let weights = oloproof(
        &dir,
        &["run", ".", "--set", "system.rag.fusion.weights.word=2"],
    );
    assert_eq!(weights.status.code(), Some(2));
    std::fs::write(
        dir.join("corpus.jsonl"),
        "{\"doc_id\": \"d1\", \"metadata\": {\"tenant\": \"acme\"}}\n{\"doc_id\": \"d2\", \"metadata\": \"acme\"}\n",
    )
    .unwrap();
    let corpus = oloproof(&dir, &["run", "."]);
    assert_eq!(corpus.status.code(), Some(2));
    // Nothing was recorded.
    assert!(!stdout(&oloproof(&dir, &["runs"])).contains("run_"));
    insta::assert_snapshot!(format!(
        "{}\n{}\n{}",
        transcript(&o, tmp.path()),
        transcript(&weights, tmp.path()),
        transcript(&corpus, tmp.path())
    ));
}

/// The store keeps each passage of a pipeline trace once, in `pipeline.passages`, its lists
/// referring to it; what is shown (and exported) is the whole trace.
#[test]
fn a_pipeline_trace_is_stored_with_each_passage_once() {
    let (_tmp, dir) = project("tests/systems/pipeline");
    let o = oloproof(&dir, &["run", "."]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stored = stored_traces(&dir);
    let row = &stored["refund"]["pipeline"];
    let table = row["passages"].as_array().unwrap();
    let texts: Vec<&str> = table.iter().filter_map(|p| p["text"].as_str()).collect();
    assert!(!texts.is_empty(), "{table:?}");
    let mut distinct = texts.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), texts.len(), "each passage once: {table:?}");
    let entry = &row["fused"]["candidates"][0];
    assert!(
        entry["ref"].is_u64() && entry.get("doc_id").is_none(),
        "{entry}"
    );
    // What `show` prints is the whole form: each entry its passage, with its own score.
    let shown = trace(&dir, "refund");
    let fused = &shown["pipeline"]["fused"]["candidates"];
    for (i, e) in row["fused"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let p = &table[e["ref"].as_u64().unwrap() as usize];
        assert_eq!(fused[i]["doc_id"], p["doc_id"]);
        assert_eq!(fused[i]["text"], p["text"]);
        assert_eq!(fused[i]["score"], e["score"]);
    }
    // A second run re-uses the stored execution (its cache entry is the same stored text).
    let again = oloproof(&dir, &["run", "."]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stdout(&again).contains("execution 3 hit/0 miss"),
        "{}",
        stdout(&again)
    );
    assert_eq!(
        trace(&dir, "refund")["pipeline"]["fused"],
        shown["pipeline"]["fused"]
    );
}
