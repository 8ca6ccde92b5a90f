//! Judged criteria through the real binary against an in-process HTTP server speaking the
//! OpenAI wire format: calls, the judge-call cache across runs, a model change, a missing key
//! (`missing`, never a pass), the dry run, the cost cap and located configuration errors.

mod common;

use common::*;
use oloproof_judge::mock::{MockReply, MockServer};
use serde_json::json;

const KEY_ENV: &str = "OLOPROOF_TEST_JUDGE_KEY";
const KEY: &str = "sk-test-secret-0123456789";

fn project_with_judge(
    server: &MockServer,
    extra_evaluators: &str,
) -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, dir) = project("tests/systems/echo");
    let config = format!(
        "system:
  name: echo
  version: \"1\"
  rag:
    object: app:Echo
    depth: 3
    top_k: 2
    token_budget: 100
    index_version: echo-1
    workers: 2
cases: cases.jsonl
judges:
  default:
    provider: openai
    base_url: {}
    model: judge-model-1
    api_key_env: {KEY_ENV}
    max_retries: 1
    timeout_s: 5
    prices: {{input_per_mtok: 1.0, output_per_mtok: 2.0}}
evaluators:
  - {{type: groundedness_judge, judge: default}}
{extra_evaluators}",
        server.base_url()
    );
    std::fs::write(dir.join("oloproof.yaml"), config).unwrap();
    (tmp, dir)
}

fn grounded_server() -> MockServer {
    let server = MockServer::start();
    server.respond_with(|req| {
        let text = req.body.to_string();
        let grounded = if text.contains("delta beta") { 0 } else { 1 };
        MockReply::json(json!({"reason": "checked", "grounded": grounded})).with_usage(100, 10)
    });
    server
}

#[test]
fn judged_runs_cache_and_missing_key() {
    let server = grounded_server();
    let (_tmp, dir) = project_with_judge(&server, "");
    let env = [(KEY_ENV, KEY)];
    let first = oloproof_env(&dir, &["run", ".", "--json"], &env);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let s: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
    let g = &s["criteria"][0];
    assert_eq!(g["criterion"], "groundedness_judge");
    assert_eq!(
        (g["passed"].as_u64(), g["observed"].as_u64()),
        (Some(3), Some(4))
    );
    assert_eq!(s["judges"]["calls"], 4);
    assert_eq!(s["judges"]["input_tokens"], 400);
    assert!(
        (s["judges"]["cost_usd"].as_f64().unwrap() - (400.0 * 1.0 + 40.0 * 2.0) / 1e6).abs()
            < 1e-12
    );
    assert_eq!(server.request_count(), 4);
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );

    // A second run is served from the caches: nothing is sent.
    let again = oloproof_env(&dir, &["run", "."], &env);
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(server.request_count(), 4);

    // Another model is another judgment.
    let other = oloproof_env(
        &dir,
        &["run", ".", "--set", "judges.default.model=judge-model-2"],
        &env,
    );
    assert_eq!(other.status.code(), Some(0), "{}", stderr(&other));
    assert_eq!(server.request_count(), 8);
    assert_eq!(server.requests()[7].body["model"], "judge-model-2");

    // Without the key the criterion is missing, never a pass or a fail.
    let keyless = oloproof(
        &dir,
        &["run", ".", "--set", "judges.default.model=judge-model-3"],
    );
    assert_eq!(keyless.status.code(), Some(0));
    let out = stdout(&keyless);
    assert!(out.contains("│ groundedness_judge │ —"), "{out}");
    assert!(
        out.contains("0 / 0 observed · 4 missing · 0 excluded")
            || out.contains("mean of 0 observed · 4 missing"),
        "{out}"
    );
    assert_eq!(server.request_count(), 8);

    // The key never reaches the store.
    let db = std::fs::read(dir.join(".oloproof/oloproof.db")).unwrap();
    let wal = std::fs::read(dir.join(".oloproof/oloproof.db-wal")).unwrap_or_default();
    let needle = KEY.as_bytes();
    assert!(
        !db.windows(needle.len()).any(|w| w == needle),
        "the API key leaked into the store"
    );
    assert!(
        !wal.windows(needle.len()).any(|w| w == needle),
        "the API key leaked into the WAL"
    );

    // show --case prints the judge's raw output and its parsed judgment.
    let runs: serde_json::Value =
        serde_json::from_slice(&oloproof(&dir, &["runs", "--json"]).stdout).unwrap();
    let first_id = runs.as_array().unwrap().last().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let case = oloproof(&dir, &["show", &first_id, "--case", "beta"]);
    let text = stdout(&case);
    assert!(text.contains("judge call groundedness@"), "{text}");
    assert!(
        text.contains("parsed: {\"grounded\":0,\"reason\":\"checked\"}")
            || text.contains("\"grounded\":0"),
        "{text}"
    );
}

#[test]
fn dry_run_and_cost_cap() {
    let server = grounded_server();
    let (_tmp, dir) = project_with_judge(&server, "");
    let dry = oloproof_env(&dir, &["run", ".", "--dry-run"], &[(KEY_ENV, KEY)]);
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    let out = stdout(&dry);
    assert!(
        out.contains("groundedness_judge (judge default, judge-model-1): up to 4 judge calls"),
        "{out}"
    );
    assert_eq!(server.request_count(), 0, "a dry run sends nothing");
    assert!(!dir.join(".oloproof/oloproof.db").exists() || server.request_count() == 0);

    // A cap below one call's cost stops after the first judged cases; the run is resumable.
    let capped = oloproof_env(
        &dir,
        &[
            "run",
            ".",
            "--max-cost",
            "0.0000001",
            "--set",
            "system.rag.workers=1",
        ],
        &[(KEY_ENV, KEY)],
    );
    assert_eq!(capped.status.code(), Some(4), "{}", stderr(&capped));
    assert!(
        stderr(&capped).contains("at the cost cap"),
        "{}",
        stderr(&capped)
    );
    let id = run_id(&stdout(&capped));
    let resumed = oloproof_env(&dir, &["run", "--resume", &id, "--json"], &[(KEY_ENV, KEY)]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let s: serde_json::Value = serde_json::from_slice(&resumed.stdout).unwrap();
    assert_eq!(s["done"], 4);
}

#[test]
fn judge_configuration_errors_are_located() {
    let server = MockServer::start();
    let (tmp, dir) = project_with_judge(&server, "  - {type: faithfulness, judge: defualt}\n");
    let o = oloproof(&dir, &["run", "."]);
    assert_eq!(o.status.code(), Some(2));
    insta::assert_snapshot!("unknown_judge", transcript(&o, tmp.path()));
    let (tmp, dir) = project_with_judge(&server, "");
    let text = std::fs::read_to_string(dir.join("oloproof.yaml"))
        .unwrap()
        .replace("    model: judge-model-1", "    modle: judge-model-1");
    std::fs::write(dir.join("oloproof.yaml"), text).unwrap();
    let o = oloproof(&dir, &["run", "."]);
    assert_eq!(o.status.code(), Some(2));
    insta::assert_snapshot!(
        "judge_key_typo",
        redact(&transcript(&o, tmp.path()), tmp.path()).replace(&server.base_url(), "[MOCK]")
    );
}
