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
    // … and a criterion missing on every case makes the run incomplete (exit 4).
    assert_eq!(keyless.status.code(), Some(4), "{}", stderr(&keyless));
    assert!(
        stderr(&keyless).contains("criterion `groundedness_judge` is missing on 4 of 4 cases"),
        "{}",
        stderr(&keyless)
    );
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

    // Rubrex's claim support with a judge: up to two faithfulness checks (2 calls each) a case.
    let (_tmp2, rubrex) = project_with_judge(
        &server,
        "  - {type: context_support, judge: default}\n  - {type: task_acceptance}\n",
    );
    let dry = oloproof_env(&rubrex, &["run", ".", "--dry-run"], &[(KEY_ENV, KEY)]);
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    let out = stdout(&dry);
    assert!(
        out.contains("context_support (judge default, judge-model-1): up to 16 judge calls"),
        "{out}"
    );
    assert!(
        !out.contains("task_acceptance"),
        "no judge, no calls: {out}"
    );
    assert!(out.contains("Total: up to 20 judge calls"), "{out}");
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

fn labels(items: &[(&str, u8)]) -> String {
    items
        .iter()
        .enumerate()
        .map(|(i, (question, label))| {
            json!({"id": format!("h{i}"), "question": question, "answer": "an answer", "contexts": ["some context"], "label": label})
                .to_string()
                + "\n"
        })
        .collect()
}

#[test]
fn calibration_gates_the_comparison() {
    let server = grounded_server();
    let (tmp, dir) = project_with_judge(&server, "");
    let env = [(KEY_ENV, KEY)];
    let base = oloproof_env(&dir, &["run", "."], &env);
    let cand = oloproof_env(&dir, &["run", ".", "--no-cache"], &env);
    let (base, cand) = (run_id(&stdout(&base)), run_id(&stdout(&cand)));
    let policy = tmp.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "decisions:\n  - {name: grounded-not-worse, criterion: groundedness_judge, kind: non_inferiority, margin_points: 50}\n",
    )
    .unwrap();
    let policy = policy.to_str().unwrap();
    // An absolute gate on the judged criterion is held to the same rule.
    let gate = tmp.path().join("gate.yaml");
    std::fs::write(
        &gate,
        "thresholds:\n  - {criterion: groundedness_judge, min: 0.0}\n",
    )
    .unwrap();
    let gate = gate.to_str().unwrap();

    // No calibration yet: compare and gate refuse to use this judge.
    let refused = oloproof_env(&dir, &["compare", &cand, &base, "--policy", policy], &env);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("has no calibration"),
        "{}",
        stderr(&refused)
    );
    let refused = oloproof_env(&dir, &["gate", &cand, "--policy", gate], &env);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains(
            "the gate has a threshold on `groundedness_judge`, scored by judge `default`, but it has no calibration"
        ),
        "{}",
        stderr(&refused)
    );

    // The threshold must be declared before measuring.
    let agreeing = tmp.path().join("agree.jsonl");
    let items: Vec<(&str, u8)> = (0..12)
        .map(|i| {
            if i % 3 == 0 {
                ("delta beta?", 0)
            } else {
                ("alpha?", 1)
            }
        })
        .collect();
    std::fs::write(&agreeing, labels(&items)).unwrap();
    let undeclared = oloproof_env(
        &dir,
        &[
            "calibrate",
            "--judge",
            "default",
            "--labels",
            agreeing.to_str().unwrap(),
        ],
        &env,
    );
    assert_eq!(undeclared.status.code(), Some(2));
    assert!(
        stderr(&undeclared).contains("min_kappa"),
        "{}",
        stderr(&undeclared)
    );
    let config = std::fs::read_to_string(dir.join("oloproof.yaml")).unwrap();
    std::fs::write(
        dir.join("oloproof.yaml"),
        format!("{config}calibration:\n  default: {{min_kappa: 0.7}}\n"),
    )
    .unwrap();

    // A judge that disagrees with the humans fails and still may not gate.
    let disagreeing = tmp.path().join("disagree.jsonl");
    let flipped: Vec<(&str, u8)> = items.iter().map(|(q, l)| (*q, 1 - *l)).collect();
    std::fs::write(&disagreeing, labels(&flipped)).unwrap();
    let failed = oloproof_env(
        &dir,
        &[
            "calibrate",
            "--judge",
            "default",
            "--labels",
            disagreeing.to_str().unwrap(),
        ],
        &env,
    );
    assert_eq!(failed.status.code(), Some(3), "{}", stderr(&failed));
    assert!(
        stdout(&failed).contains("FAIL: this judge may not gate"),
        "{}",
        stdout(&failed)
    );
    let still = oloproof_env(&dir, &["compare", &cand, &base, "--policy", policy], &env);
    assert_eq!(still.status.code(), Some(2));
    assert!(
        stderr(&still).contains("did not pass"),
        "{}",
        stderr(&still)
    );
    let still = oloproof_env(&dir, &["gate", &cand, "--policy", gate], &env);
    assert_eq!(still.status.code(), Some(2));
    assert!(
        stderr(&still).contains("did not pass"),
        "{}",
        stderr(&still)
    );

    // An agreeing calibration passes; the comparison then gates normally.
    let passed = oloproof_env(
        &dir,
        &[
            "calibrate",
            "--judge",
            "default",
            "--labels",
            agreeing.to_str().unwrap(),
            "--json",
        ],
        &env,
    );
    assert_eq!(passed.status.code(), Some(0), "{}", stderr(&passed));
    let c: serde_json::Value = serde_json::from_slice(&passed.stdout).unwrap();
    assert_eq!(c["kappa"]["value"], 1.0);
    assert_eq!(c["n"], 12);
    assert_eq!(c["confusion"]["0"]["0"], 4);
    let gated = oloproof_env(&dir, &["compare", &cand, &base, "--policy", policy], &env);
    assert_eq!(
        gated.status.code(),
        Some(0),
        "{}{}",
        stdout(&gated),
        stderr(&gated)
    );
    let gated = oloproof_env(&dir, &["gate", &cand, "--policy", gate], &env);
    assert_eq!(
        gated.status.code(),
        Some(0),
        "{}{}",
        stdout(&gated),
        stderr(&gated)
    );

    // A window pooling a baseline judged by another model: a warning, or a refusal on demand.
    let history = tmp.path().join("h.jsonl");
    let h = history.to_str().unwrap();
    for run in [&base, &cand] {
        let o = oloproof_env(&dir, &["history", "append", run, "--file", h], &env);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let lines = std::fs::read_to_string(&history).unwrap();
    let (first, rest) = lines.split_once('\n').unwrap();
    assert!(
        first.contains(
            r#""judges":[{"name":"default","provider":"openai","model":"judge-model-1"}]"#
        ),
        "{first}"
    );
    std::fs::write(
        &history,
        format!(
            "{}\n{rest}",
            first.replace("judge-model-1", "judge-model-0")
        ),
    )
    .unwrap();
    let window = tmp.path().join("window.yaml");
    std::fs::write(
        &window,
        "thresholds:\n  - {criterion: groundedness_judge, min: 0.0, window: last_2_runs}\n",
    )
    .unwrap();
    let pooled = oloproof_env(
        &dir,
        &[
            "gate",
            &cand,
            "--policy",
            window.to_str().unwrap(),
            "--history",
            h,
        ],
        &env,
    );
    assert_eq!(pooled.status.code(), Some(0), "{}", stderr(&pooled));
    assert!(
        stdout(&pooled).contains(&format!(
            "warning: these runs were judged by different judge models ({base} openai/judge-model-0; {cand} openai/judge-model-1)"
        )),
        "{}",
        stdout(&pooled)
    );
    std::fs::write(
        &window,
        "thresholds:\n  - {criterion: groundedness_judge, min: 0.0, window: last_2_runs}\nrequire_same_judge: true\n",
    )
    .unwrap();
    let refused = oloproof_env(
        &dir,
        &[
            "gate",
            &cand,
            "--policy",
            window.to_str().unwrap(),
            "--history",
            h,
        ],
        &env,
    );
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("window.yaml:3:1")
            && stderr(&refused).contains("pools runs judged by different judge models"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn failure_modes_are_asked_for_and_counted_per_run() {
    let server = MockServer::start();
    server.respond_with(|req| {
        let text = req.body.to_string();
        // A strict provider answers `null` for a supported answer; others leave it out.
        let reply = if text.contains("delta beta") {
            json!({"reason": "names the wrong product", "grounded": 0, "failure_mode": "wrong_entity"})
        } else {
            json!({"reason": "checked", "grounded": 1, "failure_mode": null})
        };
        MockReply::json(reply).with_usage(100, 10)
    });
    let (_tmp, dir) = project_with_judge(&server, "");
    let env = [(KEY_ENV, KEY)];
    let o = oloproof_env(&dir, &["run", "."], &env);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(
            "Failure modes: groundedness_judge — wrong_entity 1 (cases the judge said so of)"
        ),
        "{}",
        stdout(&o)
    );
    // The optional field is declared nullable and, for the strict schema, required.
    let sent: serde_json::Value =
        serde_json::from_str(&server.requests()[0].body.to_string()).unwrap();
    let schema = &sent["response_format"]["json_schema"]["schema"];
    assert_eq!(
        schema["required"],
        json!(["reason", "grounded", "failure_mode"])
    );
    assert_eq!(
        schema["properties"]["failure_mode"]["type"],
        json!(["string", "null"])
    );
    let prompt = sent["messages"][0]["content"].as_str().unwrap();
    assert!(prompt.contains("\"stale_fact\""), "{prompt}");
    let s = oloproof_env(&dir, &["run", ".", "--json"], &env);
    let s: serde_json::Value = serde_json::from_slice(&s.stdout).unwrap();
    assert_eq!(
        s["criteria"][0]["failure_modes"],
        json!({"wrong_entity": 1})
    );
}
