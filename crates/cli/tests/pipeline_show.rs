//! A pipeline run seen through every reader (tests/systems/pipeline_show: a rewrite, two lanes with
//! host RRF, a tenant predicate, a rerank and a hop): `show --case` prints the flow, the HTML
//! report shows it with the per-stage latency, `compare` of two pipeline runs adds the stage
//! deltas, and `export --format trace` → `run --dataset` brings every stage back with equal
//! verdicts.

mod common;

use common::*;
use serde_json::Value;

/// Replaces the digits of every `N ms` (stage times vary run to run) with `#`.
fn redact_ms(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        let mut kept = Vec::with_capacity(words.len());
        for (i, w) in words.iter().enumerate() {
            let next_is_ms = words.get(i + 1).is_some_and(|n| n.starts_with("ms"));
            if next_is_ms && w.chars().all(|c| c.is_ascii_digit() || c == '.') && !w.is_empty() {
                kept.push("#");
            } else {
                kept.push(w);
            }
        }
        out.push_str(&kept.join(" "));
        out.push('\n');
    }
    out
}

fn show_json(dir: &std::path::Path, run: &str, case: &str) -> Value {
    let out = oloproof(dir, &["show", run, "--case", case, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

fn live_run(dir: &std::path::Path, env: &[(&str, &str)]) -> String {
    let run = oloproof_env(dir, &["run", "."], env);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    run_id(&stdout(&run))
}

#[test]
fn show_case_prints_the_flow_with_positions_and_stage_times() {
    let (tmp, dir) = project("tests/systems/pipeline_show");
    let id = live_run(&dir, &[]);
    let shown = oloproof(&dir, &["show", &id, "--case", "a"]);
    assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
    let text = stdout(&shown);
    // The rerank moved the gold d1 from the top of the fused list to below top_k.
    assert!(
        text.contains("3. d1 score 0.0656 ↓2 (was #1) ★ relevant"),
        "{text}"
    );
    insta::assert_snapshot!("pipeline_show_case", redact_ms(&redact(&text, tmp.path())));
    // The trace behind it, as `--json` prints it: the flow read nothing else.
    let json = show_json(&dir, &id, "a");
    let pipeline = &json["trace"]["pipeline"];
    assert_eq!(pipeline["fused"]["method"], "rrf k=60");
    assert_eq!(pipeline["retrievals"].as_array().unwrap().len(), 4);
}

#[test]
fn the_html_report_shows_the_flow_and_the_per_stage_breakdown() {
    let (_tmp, dir) = project("tests/systems/pipeline_show");
    let id = live_run(&dir, &[]);
    let out = oloproof(&dir, &["report", &id, "-o", "report.html"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    // Cases a, b and d fail `answer_correct`: their traces (and flows) are in the report.
    assert_eq!(html.matches("<div class=\"flow\">").count(), 3, "{html}");
    for stage in [
        "rewrite", "lane", "fusion", "filter", "rerank", "hop", "answer",
    ] {
        assert!(
            html.contains(&format!("data-stage=\"{stage}\"")),
            "no {stage} block"
        );
    }
    assert!(html.contains("<span class=\"move down\">↓2</span>"));
    assert!(html.contains("<span class=\"lanepos\"> · bm25 #1 · tri #1</span>"));
    // The run's stage latency table has every stage that ran, in pipeline order.
    let section = html.split("<h2>Stage latency</h2>").nth(1).unwrap();
    let at: Vec<usize> = ["rewrite", "retrieve", "fuse", "rerank", "generate"]
        .iter()
        .map(|stage| {
            section
                .find(&format!("<td>{stage}</td><td>4</td>"))
                .unwrap_or_else(|| panic!("{stage} not timed on 4 cases"))
        })
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}");
}

#[test]
fn compare_of_two_pipeline_runs_has_stage_deltas() {
    let (_tmp, dir) = project("tests/systems/pipeline_show");
    std::fs::write(
        dir.join("compare.yaml"),
        "decisions:\n  - {name: recall, criterion: recall_at_2, kind: non_inferiority, margin_points: 50}\n",
    )
    .unwrap();
    let baseline = live_run(&dir, &[]);
    // Version 2 keeps the fused order: its reranked recall is its fused recall.
    let candidate = live_run(&dir, &[("OLOPROOF_TEST_NO_RERANK_BIAS", "1")]);
    let out = oloproof(
        &dir,
        &["compare", &candidate, &baseline, "--policy", "compare.yaml"],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}\n{}", stderr(&out));
    let block: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Pipeline stages, baseline → candidate"))
        .take_while(|l| l.starts_with("Pipeline") || l.starts_with("  "))
        .collect();
    let stages: Vec<&str> = block
        .iter()
        .skip(1)
        .map(|l| l.trim_start().split("  ").next().unwrap())
        .collect();
    assert_eq!(
        stages,
        [
            "latency rewrite",
            "latency retrieve",
            "latency fuse",
            "latency rerank",
            "latency generate",
            "latency total",
            "recall@2 lane:bm25",
            "recall@2 lane:tri",
            "recall@2 fused",
            "recall@2 reranked",
        ],
        "{text}"
    );
    // Cases a, c, d have a gold document the tenant filter keeps (b's is filtered out):
    // every lane and the fused list find it within 2 in both runs (recall 0.75 over four
    // cases); the baseline's length rerank pushes case a's below 2, the candidate's doesn't.
    let line = |name: &str| {
        block
            .iter()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap()
            .to_string()
    };
    assert!(
        line("recall@2 fused").ends_with("0.750 → 0.750 (+0.000) · 4 paired"),
        "{text}"
    );
    assert!(
        line("recall@2 reranked").ends_with("0.500 → 0.750 (+0.250) · 4 paired"),
        "{text}"
    );
    assert!(line("latency total").contains("· 4 paired"), "{text}");

    // The same lines in the JSON record and the HTML report.
    let json = oloproof(
        &dir,
        &[
            "compare",
            &candidate,
            &baseline,
            "--policy",
            "compare.yaml",
            "--json",
        ],
    );
    let record: Value = serde_json::from_str(&stdout(&json)).unwrap();
    let recall = record["stages"]["recall"].as_array().unwrap();
    assert_eq!(recall.len(), 4);
    assert_eq!(recall[3]["stage"], "reranked");
    let id = record["id"].as_str().unwrap().to_string();
    let report = oloproof(&dir, &["report", &id, "-o", "compare.html"]);
    assert_eq!(report.status.code(), Some(0), "{}", stderr(&report));
    let html = std::fs::read_to_string(dir.join("compare.html")).unwrap();
    assert!(html.contains("<section id=\"stage-deltas\">"));
    assert!(
        html.contains("<td>recall@2 reranked</td><td>4</td><td>0.500 → 0.750</td><td>+0.250</td>")
    );
}

#[test]
fn export_trace_then_run_dataset_brings_every_stage_back() {
    let (_tmp, dir) = project("tests/systems/pipeline_show");
    let live = live_run(&dir, &[]);
    let export = oloproof(
        &dir,
        &["export", &live, "--format", "trace", "-o", "traces.jsonl"],
    );
    assert_eq!(export.status.code(), Some(0), "{}", stderr(&export));
    assert!(
        stderr(&export).contains("Exported 4 cases") && stderr(&export).contains("as trace JSONL"),
        "{}",
        stderr(&export)
    );
    let text = std::fs::read_to_string(dir.join("traces.jsonl")).unwrap();
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "id",
            "input",
            "expected",
            "retrieval",
            "context",
            "answer",
            "citations",
            "usage",
            "pipeline",
            "latency_ms"
        ]
    );
    assert_eq!(first["retrieval"]["filters"][0]["field"], "tenant");
    assert!(!first["retrieval"]["hops"].as_array().unwrap().is_empty());

    let recorded = oloproof(
        &dir,
        &[
            "run",
            ".",
            "--dataset",
            "traces.jsonl",
            "--dataset-format",
            "trace",
        ],
    );
    assert_eq!(recorded.status.code(), Some(0), "{}", stderr(&recorded));
    let recorded_id = run_id(&stdout(&recorded));
    for case in ["a", "b", "c", "d"] {
        let a = show_json(&dir, &live, case);
        let b = show_json(&dir, &recorded_id, case);
        let verdicts = |v: &Value| {
            v["verdicts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| (x["criterion"].clone(), x["verdict"].clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(verdicts(&a), verdicts(&b), "case {case}");
        for part in ["pipeline", "retrieval", "latency_ms"] {
            assert_eq!(a["trace"][part], b["trace"][part], "case {case}: {part}");
        }
        assert_eq!(
            a["trace"]["generation"]["usage"],
            b["trace"]["generation"]["usage"]
        );
    }
    // The recorded run shows the same flow, with the recorded stage times (a recorded trace
    // used no cache: its flow has no `Cache:` line).
    let flow = |id: &str| {
        let text = stdout(&oloproof(&dir, &["show", id, "--case", "a"]));
        text.lines()
            .skip_while(|l| !l.starts_with("Pipeline:"))
            .take_while(|l| l.starts_with("Pipeline:") || l.starts_with("  "))
            .filter(|l| !l.starts_with("  Cache:"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let shown = flow(&live);
    assert!(
        shown.last().unwrap().starts_with("  Latency: rewrite"),
        "{shown:?}"
    );
    assert_eq!(shown, flow(&recorded_id));
    // Exported again, the file is the same.
    let again = oloproof(&dir, &["export", &recorded_id, "--format", "trace"]);
    assert_eq!(stdout(&again), text);
}
