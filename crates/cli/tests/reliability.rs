//! Issue 19's defects, through the real binary: a run whose judge never answered is
//! incomplete (exit 4) and says which criteria; judge calls are counted as sent, retried,
//! failed and cached; `show --case` shows a failed call's raw reply; the dry run knows the
//! judgment cache and says when no prices are configured; `history` reads the store when no
//! file is configured; `runs`/`show` work without `system:`; Ctrl-C marks the run interrupted
//! and says how to resume.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use oloproof_judge::mock::{MockReply, MockServer};
use serde_json::json;

const KEY_ENV: &str = "OLOPROOF_TEST_JUDGE_KEY";
const KEY: &str = "sk-test-secret-0123456789";

/// The echo system (4 cases) with one `groundedness_judge` against `server`.
fn project_with_judge(
    server: &MockServer,
    prices: bool,
) -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, dir) = project("tests/systems/echo");
    let prices = if prices {
        "    prices: {input_per_mtok: 1.0, output_per_mtok: 2.0}\n"
    } else {
        ""
    };
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
{prices}evaluators:
  - {{type: contains, criterion: answer_correct, field: answer, expected_field: answer}}
  - {{type: groundedness_judge, judge: default}}
",
        server.base_url()
    );
    std::fs::write(dir.join("oloproof.yaml"), config).unwrap();
    (tmp, dir)
}

fn run_json(dir: &std::path::Path, args: &[&str]) -> (std::process::Output, serde_json::Value) {
    let o = oloproof_env(dir, args, &[(KEY_ENV, KEY)]);
    let v = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
    (o, v)
}

#[test]
fn a_judge_that_never_answers_makes_the_run_incomplete() {
    // Unparseable content on every call: each call is answered, repaired once, and fails.
    let server = MockServer::start();
    server.respond_with(|_| MockReply::text("I think it is grounded."));
    let (_tmp, dir) = project_with_judge(&server, true);
    let (o, s) = run_json(&dir, &["run", ".", "--json"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("criterion `groundedness_judge` is missing on 4 of 4 cases (100.0%), above the allowed 0.0%"),
        "{err}"
    );
    assert!(
        !err.contains("answer_correct"),
        "an observed criterion is not named: {err}"
    );
    let g = criterion(&s, "groundedness_judge");
    assert_eq!(
        (g["observed"].as_u64(), g["missing"].as_u64()),
        (Some(0), Some(4))
    );
    assert_eq!(
        s["incomplete_criteria"][0]["criterion"],
        "groundedness_judge"
    );
    assert_eq!(s["incomplete_criteria"][0]["missing"], 4);
    // Sent, retried (the repair requests) and failed are counted; the server saw them all.
    let j = &s["judges"];
    assert_eq!(
        (j["calls"].as_u64(), j["retries"].as_u64()),
        (Some(4), Some(4)),
        "{j}"
    );
    assert_eq!(j["failed_calls"], 4);
    assert_eq!(
        j["input_tokens"], 800,
        "both replies of each call are billed"
    );
    assert_eq!(server.request_count(), 8);

    // The table says which criterion is incomplete too.
    let (table, _) = run_json(&dir, &["run", "."]);
    assert_eq!(table.status.code(), Some(4));
    let out = stdout(&table);
    assert!(
        out.contains("Incomplete criterion: groundedness_judge is missing on 4 of 4 cases"),
        "{out}"
    );
    assert!(
        out.contains("Judges: 4 calls (0 from cache; 4 retries; 4 failed)"),
        "{out}"
    );

    // `show --case` on a missing verdict: the raw reply and the requests, not only the error.
    let id = run_id(&out);
    let shown = oloproof(&dir, &["show", &id, "--case", "alpha"]);
    let text = stdout(&shown);
    assert!(
        text.contains("failed judge call (invalid_output) after 2 requests"),
        "{text}"
    );
    assert!(text.contains("raw:    I think it is grounded."), "{text}");

    // Allowing every case to be missing, the same run completes.
    let (lenient, _) = run_json(&dir, &["run", ".", "--max-error-rate", "1"]);
    assert_eq!(lenient.status.code(), Some(0), "{}", stderr(&lenient));
}

#[test]
fn a_judge_that_answers_only_errors_counts_its_retries() {
    // 429 once, then 500s until the retries run out (max_retries 1: two requests a call).
    let server = MockServer::start();
    server.push(MockReply::rate_limited("0"));
    server.respond_with(|_| MockReply::error(500, "internal error"));
    let (_tmp, dir) = project_with_judge(&server, false);
    let (o, s) = run_json(
        &dir,
        &["run", ".", "--json", "--set", "system.rag.workers=1"],
    );
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let j = &s["judges"];
    assert_eq!(j["calls"], 4);
    assert_eq!(j["failed_calls"], 4);
    assert_eq!(j["retries"], 4);
    assert_eq!(server.request_count(), 8);
}

#[test]
fn judgments_from_the_cache_are_counted_as_cached() {
    let server = MockServer::start();
    server.respond_with(|_| MockReply::json(json!({"reason": "ok", "grounded": 1})));
    let (_tmp, dir) = project_with_judge(&server, true);
    let (first, s) = run_json(&dir, &["run", ".", "--json"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert_eq!(
        (
            s["judges"]["calls"].as_u64(),
            s["judges"]["cached_calls"].as_u64()
        ),
        (Some(4), Some(0))
    );
    let (again, s) = run_json(&dir, &["run", ".", "--json"]);
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(server.request_count(), 4, "nothing sent");
    assert_eq!(
        (
            s["judges"]["calls"].as_u64(),
            s["judges"]["cached_calls"].as_u64()
        ),
        (Some(0), Some(4)),
        "{}",
        s["judges"]
    );
    assert_eq!(s["judges"]["input_tokens"], 0);
    assert_eq!(s["judges"]["cost_usd"], 0.0);
}

#[test]
fn the_dry_run_knows_the_judgment_cache_and_missing_prices() {
    let server = MockServer::start();
    server.respond_with(|_| MockReply::json(json!({"reason": "ok", "grounded": 1})));
    let (_tmp, dir) = project_with_judge(&server, false);
    let dry = oloproof_env(&dir, &["run", ".", "--dry-run"], &[(KEY_ENV, KEY)]);
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    let out = stdout(&dry);
    assert!(out.contains("up to 4 judge calls"), "{out}");
    assert!(out.contains("no prices configured"), "{out}");
    assert!(!out.contains("$0.0000"), "{out}");

    let (run, _) = run_json(&dir, &["run", ".", "--json"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let dry = oloproof_env(&dir, &["run", ".", "--dry-run"], &[(KEY_ENV, KEY)]);
    let out = stdout(&dry);
    assert!(out.contains("up to 0 judge calls"), "{out}");
    assert!(
        out.contains("4 of 4 cases already judged in the judgment cache"),
        "{out}"
    );
    // Another judge model: nothing cached under it.
    let other = oloproof_env(
        &dir,
        &[
            "run",
            ".",
            "--dry-run",
            "--set",
            "judges.default.model=judge-model-2",
        ],
        &[(KEY_ENV, KEY)],
    );
    assert!(
        stdout(&other).contains("up to 4 judge calls"),
        "{}",
        stdout(&other)
    );
    assert_eq!(server.request_count(), 4, "a dry run sends nothing");
}

#[test]
fn history_reads_the_store_without_a_history_file() {
    let (_tmp, dir) = project("tests/systems/echo");
    for _ in 0..2 {
        assert_eq!(oloproof(&dir, &["run", "."]).status.code(), Some(0));
    }
    let h = oloproof(&dir, &["history", "--json"]);
    assert_eq!(h.status.code(), Some(0), "{}", stderr(&h));
    let entries: serde_json::Value = serde_json::from_slice(&h.stdout).unwrap();
    let runs: serde_json::Value =
        serde_json::from_slice(&oloproof(&dir, &["runs", "--json"]).stdout).unwrap();
    assert_eq!(entries.as_array().unwrap().len(), 2);
    // Newest last (`runs` lists newest first).
    assert_eq!(entries[1]["run_id"], runs[0]["id"]);
    assert_eq!(entries[0]["run_id"], runs[1]["id"]);
    assert!(
        stderr(&h).contains("2 runs from the store"),
        "{}",
        stderr(&h)
    );
    let plot = dir.join("history.svg");
    let p = oloproof(&dir, &["history", "--plot", plot.to_str().unwrap()]);
    assert_eq!(p.status.code(), Some(0), "{}", stderr(&p));
    assert!(std::fs::read_to_string(&plot).unwrap().starts_with("<svg"));
}

#[test]
fn runs_and_show_need_no_system() {
    let (_tmp, dir) = project("tests/systems/echo");
    let dataset = repo().join("crates/cli/tests/datasets/ragas.jsonl");
    let o = oloproof(&dir, &["run", ".", "--dataset", dataset.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let id = run_id(&stdout(&o));
    // The config keeps only what store readers need: no `system:`, no `dataset:`.
    std::fs::write(dir.join("oloproof.yaml"), "evaluators: []\n").unwrap();
    let runs = oloproof(&dir, &["runs"]);
    assert_eq!(runs.status.code(), Some(0), "{}", stderr(&runs));
    assert!(stdout(&runs).contains(&id));
    let show = oloproof(&dir, &["show", &id]);
    assert_eq!(show.status.code(), Some(0), "{}", stderr(&show));
    // A `store:` that is not a path is still a located error.
    std::fs::write(dir.join("oloproof.yaml"), "store: [a, b]\n").unwrap();
    let bad = oloproof(&dir, &["runs"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("oloproof.yaml:1:"),
        "{}",
        stderr(&bad)
    );
}

fn runs_json(dir: &std::path::Path) -> serde_json::Value {
    let o = oloproof(dir, &["runs", "--json"]);
    serde_json::from_slice(&o.stdout).unwrap_or_default()
}

#[test]
fn ctrl_c_marks_the_run_interrupted_and_says_how_to_resume() {
    let (_tmp, dir) = project("tests/systems/slow");
    let child = Command::new(env!("CARGO_BIN_EXE_oloproof"))
        .args(["run", "."])
        .current_dir(&dir)
        .env("CI", "true")
        .env("OLOPROOF_SLEEP_S", "0.05")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while runs_json(&dir)
        .get(0)
        .and_then(|r| r["done"].as_i64())
        .unwrap_or(0)
        < 4
    {
        assert!(Instant::now() < deadline, "the run made no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id().to_string();
    let sent = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let runs = runs_json(&dir);
    let id = runs[0]["id"].as_str().unwrap().to_string();
    assert_eq!(runs[0]["status"], "interrupted");
    let done = runs[0]["done"].as_i64().unwrap();
    assert!(done < 40, "interrupted mid-run");
    assert!(
        err.contains(&format!(
            "cases finished and kept; run {id} is marked interrupted"
        )) && err.contains(&format!("resume with `oloproof run --resume {id}`")),
        "{err}"
    );
    let resumed = oloproof_env(
        &dir,
        &["run", "--resume", &id, "--json"],
        &[("OLOPROOF_SLEEP_S", "0")],
    );
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let s: serde_json::Value = serde_json::from_slice(&resumed.stdout).unwrap();
    assert_eq!(s["done"], 40);
    assert_eq!(runs_json(&dir)[0]["status"], "complete");
}

#[test]
fn a_slow_run_prints_progress_lines_when_stderr_is_not_a_terminal() {
    let (_tmp, dir) = project("tests/systems/slow");
    let o = oloproof_env(
        &dir,
        &["run", "."],
        &[
            ("OLOPROOF_SLEEP_S", "0.02"),
            ("OLOPROOF_PROGRESS_INTERVAL_S", "0.2"),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    let line = err
        .lines()
        .find(|l| l.starts_with("progress: run_"))
        .unwrap_or_else(|| panic!("no progress line: {err}"));
    assert!(
        line.contains(" of 40 cases · 0 judge calls in flight · 0 errors · 0 missing verdicts"),
        "{line}"
    );
    // Off with 0.
    let quiet = oloproof_env(
        &dir,
        &["run", ".", "--no-cache"],
        &[
            ("OLOPROOF_SLEEP_S", "0.02"),
            ("OLOPROOF_PROGRESS_INTERVAL_S", "0"),
        ],
    );
    assert!(!stderr(&quiet).contains("progress:"), "{}", stderr(&quiet));
    // A value that is not a number is said, and the default kept.
    let bad = oloproof_env(
        &dir,
        &["run", "."],
        &[("OLOPROOF_PROGRESS_INTERVAL_S", "soon")],
    );
    assert_eq!(bad.status.code(), Some(0));
    assert!(
        stderr(&bad).contains(
            "warning: OLOPROOF_PROGRESS_INTERVAL_S=\"soon\" is not a number of seconds (0 turns the progress line off); using 30 s"
        ),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn a_judge_server_that_refuses_connections_makes_the_run_incomplete() {
    // A port nobody listens on: every connection is refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = MockServer::start();
    let (_tmp, dir) = project_with_judge(&server, false);
    let config = std::fs::read_to_string(dir.join("oloproof.yaml"))
        .unwrap()
        .replace(&server.base_url(), &format!("http://127.0.0.1:{port}/v1"));
    std::fs::write(dir.join("oloproof.yaml"), config).unwrap();
    let (o, s) = run_json(&dir, &["run", ".", "--json"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let g = criterion(&s, "groundedness_judge");
    assert_eq!(g["missing"], 4);
    assert_eq!(s["judges"]["failed_calls"], 4);
    assert!(stderr(&o).contains("criterion `groundedness_judge` is missing on 4 of 4 cases"));
}

/// Pids of live processes whose working directory is `dir` (the workers start in the project).
fn processes_in(dir: &std::path::Path) -> Vec<u32> {
    let dir = dir.canonicalize().unwrap();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|c| c == dir))
        .filter(|pid| {
            // A zombie is already dead.
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                !s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
        })
        .collect()
}

#[test]
fn a_hung_worker_exits_when_its_host_is_killed() {
    let (_tmp, dir) = project("tests/systems/hang");
    let mut child = Command::new(env!("CARGO_BIN_EXE_oloproof"))
        .args(["run", ".", "--set", "system.rag.timeout_s=600"])
        .current_dir(&dir)
        .env("CI", "true")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the worker is stuck in `generate` of the hanging case.
    let deadline = Instant::now() + Duration::from_secs(60);
    let host = child.id();
    loop {
        assert!(Instant::now() < deadline, "no worker started");
        let workers: Vec<u32> = processes_in(&dir)
            .into_iter()
            .filter(|p| *p != host)
            .collect();
        let done = runs_json(&dir)
            .get(0)
            .and_then(|r| r["done"].as_i64())
            .unwrap_or(0);
        if !workers.is_empty() && done >= 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap(); // SIGKILL: the host can neither close pipes nor kill its workers
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = processes_in(&dir);
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "workers outlived their killed host: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn verbose_prints_one_line_per_finished_case() {
    let (_tmp, dir) = project("tests/systems/echo");
    let o = oloproof(&dir, &["-v", "run", "."]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("case finished"))
        .collect();
    assert_eq!(lines.len(), 4, "{err}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("case_id=alpha") && l.contains("outcome=ok")),
        "{err}"
    );
    assert!(
        !err.contains('\u{1b}'),
        "no colour codes when stderr is not a terminal: {err}"
    );
    // Without -v, nothing per case.
    let quiet = oloproof(&dir, &["run", "."]);
    assert!(!stderr(&quiet).contains("case finished"));
}

#[test]
fn files_that_are_not_utf8_are_located_errors() {
    let (_tmp, dir) = project("tests/systems/echo");
    // A Latin-1 é on line 2 of the case file, column 32 (after 31 ASCII characters).
    let cases = std::fs::read(dir.join("cases.jsonl")).unwrap();
    let first = cases.iter().position(|b| *b == b'\n').unwrap() + 1;
    let mut bad = cases[..first].to_vec();
    bad.extend_from_slice(b"{\"id\":\"latin\",\"input\":{\"q\":\"caf\xe9\"}}\n");
    std::fs::write(dir.join("cases.jsonl"), &bad).unwrap();
    let o = oloproof(&dir, &["run", "."]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("cases.jsonl:2:32"), "{err}");
    assert!(
        err.contains("not UTF-8: byte 0xe9 at line 2, column 32"),
        "{err}"
    );
    assert!(err.contains("save the file as UTF-8"), "{err}");
    // The config too.
    let mut config = std::fs::read(dir.join("oloproof.yaml")).unwrap();
    config.extend_from_slice(b"# r\xe9sum\xe9\n");
    std::fs::write(dir.join("oloproof.yaml"), &config).unwrap();
    let o = oloproof(&dir, &["run", "."]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("oloproof.yaml:"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not UTF-8: byte 0xe9"),
        "{}",
        stderr(&o)
    );
}
