//! `kill -9` of a running `oloproof run`, then `--resume`: finished cases are not redone and
//! the result equals an uninterrupted run.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

fn done_count(dir: &std::path::Path) -> i64 {
    let o = oloproof(dir, &["runs", "--json"]);
    if !o.status.success() {
        return 0;
    }
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    v.get(0).and_then(|r| r["done"].as_i64()).unwrap_or(0)
}

fn generate_calls(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("generate"))
        .count()
}

#[test]
fn kill_9_then_resume_equals_an_uninterrupted_run() {
    let (tmp, dir) = project("tests/systems/slow");
    let log = tmp.path().join("calls.log");
    // The run's own output, kept: a run that ends before the kill says why.
    let run_out = tmp.path().join("run.stdout");
    let run_err = tmp.path().join("run.stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_oloproof"))
        .args(["run", "."])
        .current_dir(&dir)
        .env_remove("RUST_LOG")
        .env("CI", "true")
        // 40 cases × 2 calls × 0.1 s over 2 workers: about 4 s, killed after 8 cases.
        .env("OLOPROOF_SLEEP_S", "0.1")
        .env("OLOPROOF_TEST_CALL_LOG", &log)
        .stdout(std::fs::File::create(&run_out).unwrap())
        .stderr(std::fs::File::create(&run_err).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while done_count(&dir) < 8 {
        assert!(Instant::now() < deadline, "the run made no progress");
        if let Some(status) = child.try_wait().unwrap() {
            let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap_or_default();
            panic!(
                "the run ended ({status}) before it could be killed, after {} generate calls; \
                 runs --json: {}\n--- its stdout\n{}--- its stderr\n{}",
                generate_calls(&log),
                stdout(&oloproof(&dir, &["runs", "--json"])),
                read(&run_out),
                read(&run_err),
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let runs: serde_json::Value =
        serde_json::from_slice(&oloproof(&dir, &["runs", "--json"]).stdout).unwrap();
    let id = runs[0]["id"].as_str().unwrap().to_string();
    let done_at_kill = runs[0]["done"].as_i64().unwrap();
    assert!(done_at_kill < 40, "killed mid-run");
    assert_eq!(runs[0]["status"], "running");

    let resumed = oloproof_env(
        &dir,
        &["run", "--resume", &id, "--json"],
        &[
            ("OLOPROOF_SLEEP_S", "0.0"),
            ("OLOPROOF_TEST_CALL_LOG", log.to_str().unwrap()),
        ],
    );
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let resumed: serde_json::Value = serde_json::from_slice(&resumed.stdout).unwrap();
    assert_eq!(resumed["run_id"], serde_json::json!(id));
    assert_eq!(resumed["done"], 40);
    // Finished cases were not redone: at most the cases in flight (2 workers) ran twice.
    let calls = generate_calls(&log);
    assert!(
        (40..=42).contains(&calls),
        "{calls} generate calls for 40 cases"
    );
    let after_resume = oloproof(&dir, &["runs", "--json"]);
    let after: serde_json::Value = serde_json::from_slice(&after_resume.stdout).unwrap();
    assert_eq!(after[0]["status"], "complete");

    let fresh = oloproof_env(
        &dir,
        &["run", ".", "--no-cache", "--json"],
        &[("OLOPROOF_SLEEP_S", "0.0")],
    );
    let fresh: serde_json::Value = serde_json::from_slice(&fresh.stdout).unwrap();
    assert_eq!(resumed["criteria"], fresh["criteria"]);
    assert_eq!(resumed["slices"], fresh["slices"]);
}
