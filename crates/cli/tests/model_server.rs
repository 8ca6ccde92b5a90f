//! Runs judged by a real OpenAI-compatible server: llama.cpp's `llama-server` serving
//! SmolLM2-135M-Instruct, set up as a new user would (`provider: openai`, the server's
//! `base_url` and model id, every other judge setting at its default). `scripts/test` builds
//! the server and runs this file with `--ignored --test-threads=1` in its own step.
//!
//! A 135M model judges badly: the tests check that every verdict is observed or `missing`
//! with its reason, never a crash, a NaN or a silent pass — also when the server is killed
//! and restarted in the middle of the run.

mod common;

use std::time::{Duration, Instant};

use common::*;
use oloproof_judge::model_server::{ModelServer, ServerOptions};
use serde_json::Value;

const CASES: usize = 4;

/// The support example with two judged criteria on the model server.
fn project_on(server: &ModelServer) -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, dir) = project("examples/support_rag");
    let config = format!(
        "system:
  name: support-rag
  version: model-server
  rag:
    object: app:SupportRag
    depth: 6
    top_k: 2
    token_budget: 40
    index_version: kb-2026-09-16
    workers: 2
cases: cases.jsonl
judges:
  smol:
    provider: openai
    base_url: {}
    model: {}
evaluators:
  - {{type: groundedness_judge, judge: smol}}
  - {{type: faithfulness, judge: smol}}
max_error_rate: 1.0
",
        server.base_url(),
        server.model_id().unwrap()
    );
    std::fs::write(dir.join("oloproof.yaml"), config).unwrap();
    // The example's first cases only: a small model on a CPU, kept short.
    let cases = std::fs::read_to_string(dir.join("cases.jsonl")).unwrap();
    let first: Vec<&str> = cases.lines().take(CASES).collect();
    std::fs::write(dir.join("cases.jsonl"), first.join("\n") + "\n").unwrap();
    (tmp, dir)
}

/// Checks a finished run's summary: every case of every criterion is counted once, as
/// observed, missing or excluded, and no number is NaN (JSON has none: a NaN would have made
/// the output unparsable or `null` in a value field).
fn assert_every_verdict_accounted(summary: &Value) {
    for name in ["groundedness_judge", "faithfulness"] {
        let c = criterion(summary, name);
        let counted = ["observed", "missing", "excluded"]
            .iter()
            .map(|k| c[*k].as_u64().unwrap_or_else(|| panic!("{name}.{k}: {c}")))
            .sum::<u64>();
        assert_eq!(counted, CASES as u64, "{name}: {c}");
        if c["observed"].as_u64().unwrap() > 0 {
            let value = c["value"].as_f64().unwrap_or_else(|| panic!("{name}: {c}"));
            assert!((0.0..=1.0).contains(&value), "{name}: {c}");
        }
    }
}

/// Every missing verdict of `run` names why, and none is a failure to reach the server (a
/// connection refused or cut): those are retried until the server is back. The missing
/// verdicts counted.
fn assert_missing_verdicts_have_reasons(dir: &std::path::Path, run: &str) -> usize {
    let shown = oloproof(dir, &["inspect", run, "--json"]);
    assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
    let all: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let mut missing = 0;
    for case in all["cases"].as_array().unwrap() {
        for v in case["verdicts"].as_array().unwrap() {
            if v["status"] != "missing" {
                continue;
            }
            missing += 1;
            let what = format!("{} {}", case["case"]["id"], v["criterion"]);
            let error = v["error"].as_str().unwrap_or_default();
            assert!(
                !error.trim().is_empty(),
                "{what}: a missing verdict without a reason: {v}"
            );
            let kind = v["detail"]["failed_call"]["kind"]
                .as_str()
                .unwrap_or_default();
            assert_ne!(kind, "transport", "{what}: lost to the connection: {error}");
            for cut in ["Connection refused", "connection reset", "Connection reset"] {
                assert!(
                    !error.contains(cut),
                    "{what}: lost to the connection: {error}"
                );
            }
        }
    }
    missing
}

fn run(dir: &std::path::Path) -> (std::process::Output, Value) {
    let out = oloproof(dir, &["run", ".", "--json"]);
    let text = stdout(&out);
    let summary: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}\n{}", stderr(&out)));
    (out, summary)
}

#[test]
#[ignore = "needs llama-server: scripts/test builds it and runs this file with --ignored"]
fn a_run_judged_by_a_local_server_with_default_settings() {
    let server = ModelServer::start_from_env(ServerOptions::default()).unwrap();
    let (_tmp, dir) = project_on(&server);
    let (out, summary) = run(&dir);
    assert!(
        matches!(out.status.code(), Some(0) | Some(4)),
        "{}",
        stderr(&out)
    );
    assert_every_verdict_accounted(&summary);
    let judges = &summary["judges"];
    assert!(
        judges["calls"].as_u64().unwrap() >= CASES as u64,
        "{judges}"
    );
    assert!(judges["input_tokens"].as_u64().unwrap() > 0, "{judges}");
    // The run's judge calls show the server's raw replies.
    let id = summary["run_id"].as_str().unwrap().to_string();
    assert_missing_verdicts_have_reasons(&dir, &id);
    let show = oloproof(&dir, &["show", &id, "--case", "refund_annual"]);
    let text = stdout(&show);
    assert_eq!(show.status.code(), Some(0), "{}", stderr(&show));
    assert!(text.contains("groundedness"), "{text}");

    // A second run is answered from the judgment cache: the server is not asked again.
    let before = server
        .metric("llamacpp:prompt_tokens_total")
        .unwrap()
        .unwrap();
    let (again, cached) = run(&dir);
    let after = server
        .metric("llamacpp:prompt_tokens_total")
        .unwrap()
        .unwrap();
    // Calls that failed in the first run are sent again; the others come from the cache.
    if summary["judges"]["failed_calls"].as_u64() == Some(0) {
        assert_eq!(again.status.code(), out.status.code());
        assert_eq!(before, after, "every judgment came from the cache");
        let j = &cached["judges"];
        assert_eq!(j["cached_calls"], j["calls"], "{j}");
        for name in ["groundedness_judge", "faithfulness"] {
            assert_eq!(
                criterion(&cached, name)["value"],
                criterion(&summary, name)["value"]
            );
        }
    }
    assert_every_verdict_accounted(&cached);
}

#[test]
#[ignore = "needs llama-server: scripts/test builds it and runs this file with --ignored"]
fn a_server_killed_and_restarted_mid_run_loses_nothing() {
    let server =
        std::sync::Arc::new(ModelServer::start_from_env(ServerOptions::default()).unwrap());
    let (_tmp, dir) = project_on(&server);
    let restarter = {
        let server = server.clone();
        std::thread::spawn(move || {
            // Once the server is decoding a judge request (its `/metrics` gauge of requests
            // being processed above 0), it dies; it is back 1.5 s later, on the same port.
            let start = Instant::now();
            let mut in_flight = false;
            while start.elapsed() < Duration::from_secs(120) {
                if server
                    .metric("llamacpp:requests_processing")
                    .ok()
                    .flatten()
                    .is_some_and(|n| n > 0.0)
                {
                    in_flight = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            server.kill();
            let killed_at = start.elapsed();
            std::thread::sleep(Duration::from_millis(1500));
            server.restart().map(|()| (in_flight, killed_at))
        })
    };
    let started = Instant::now();
    let (out, summary) = run(&dir);
    let run_took = started.elapsed();
    let (in_flight, killed_at) = restarter.join().unwrap().unwrap();
    assert!(in_flight, "no judge request reached the server in 120 s");
    assert!(
        killed_at < run_took,
        "the kill ({killed_at:?}) came after the run ended ({run_took:?})"
    );
    assert!(
        matches!(out.status.code(), Some(0) | Some(4)),
        "{}",
        stderr(&out)
    );
    assert_every_verdict_accounted(&summary);
    // The requests cut by the kill were sent again: some call took more than one request…
    let judges = &summary["judges"];
    assert!(
        judges["retries"].as_u64().unwrap_or(0) > 0,
        "no call was retried: {judges}"
    );
    // …and the restarted server answered them (its counters start from zero).
    let served = server
        .metric("llamacpp:prompt_tokens_total")
        .unwrap()
        .unwrap_or(0.0);
    assert!(served > 0.0, "the restarted server served no request");
    // With the default four retries over 7.5 s of backoff, no verdict is lost to the
    // restart: a missing one failed for another reason, which it names.
    let id = summary["run_id"].as_str().unwrap().to_string();
    assert_missing_verdicts_have_reasons(&dir, &id);
    let err = stderr(&out);
    assert!(!err.contains("Connection refused"), "{err}");
}
