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
    max_concurrency: 2
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
            // Once the first judge requests have reached it, the server dies; it is back
            // 1.5 s later, on the same port.
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(120) {
                if server
                    .metric("llamacpp:prompt_tokens_total")
                    .ok()
                    .flatten()
                    .is_some_and(|t| t > 0.0)
                {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            server.kill();
            std::thread::sleep(Duration::from_millis(1500));
            server.restart()
        })
    };
    let (out, summary) = run(&dir);
    restarter.join().unwrap().unwrap();
    assert!(
        matches!(out.status.code(), Some(0) | Some(4)),
        "{}",
        stderr(&out)
    );
    assert_every_verdict_accounted(&summary);
    // The requests cut by the kill were retried once the server was back: with the default
    // four retries over 7.5 s of backoff, none is lost to the restart.
    let err = stderr(&out);
    assert!(!err.contains("Connection refused"), "{err}");
}
