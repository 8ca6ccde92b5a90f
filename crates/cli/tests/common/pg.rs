//! The test Postgres (`scripts/postgres-test start`): its URL from `OLOPROOF_TEST_POSTGRES`,
//! a fresh database per test, direct queries for what the CLI does not show.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The server's URL, or `None` (the test is skipped) without one; under
/// `OLOPROOF_REQUIRE_REFERENCES=1` a missing server fails the test.
#[allow(clippy::print_stderr)] // says why the test did nothing
pub fn server() -> Option<String> {
    match std::env::var("OLOPROOF_TEST_POSTGRES") {
        Ok(url) => Some(url),
        Err(_) => {
            assert!(
                std::env::var("OLOPROOF_REQUIRE_REFERENCES").as_deref() != Ok("1"),
                "OLOPROOF_TEST_POSTGRES is not set but OLOPROOF_REQUIRE_REFERENCES=1: start one \
                 with `eval \"$(scripts/postgres-test start)\"`"
            );
            eprintln!("skipped: OLOPROOF_TEST_POSTGRES is not set");
            None
        }
    }
}

fn config(url: &str) -> postgres::Config {
    let mut config: postgres::Config = url.parse().unwrap();
    if let Ok(p) = std::env::var("PGPASSWORD") {
        config.password(p);
    }
    config
}

/// A database of its own on the server `url` names; returns its URL (no password in it).
pub fn fresh_database(url: &str) -> String {
    let name = format!("t_{}", ulid::Ulid::new().to_string().to_lowercase());
    let mut admin = config(url).connect(postgres::NoTls).unwrap();
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .unwrap();
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let base = base.rsplit_once('/').unwrap().0;
    match query {
        "" => format!("{base}/{name}"),
        q => format!("{base}/{name}?{q}"),
    }
}

/// A direct connection to the database `url` names.
pub fn connect(url: &str) -> postgres::Client {
    config(url).connect(postgres::NoTls).unwrap()
}

/// `(case_id, state, attempt)` of every case of `run_id`, in order.
pub fn cases(url: &str, run_id: &str) -> Vec<(String, String, i64)> {
    connect(url)
        .query(
            "SELECT case_id, state, attempt FROM run_cases WHERE run_id = $1 ORDER BY ord",
            &[&run_id],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

/// Cases of `run_id` done.
pub fn done(url: &str, run_id: &str) -> i64 {
    let mut c = connect(url);
    c.query_one(
        "SELECT COUNT(*) FROM run_cases WHERE run_id = $1 AND state = 'done'",
        &[&run_id],
    )
    .unwrap()
    .get(0)
}

/// Starts `oloproof worker` on `run_id` in `dir` (stdout and stderr piped).
pub fn spawn_worker(
    dir: &Path,
    url: &str,
    run_id: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_oloproof"));
    cmd.args(["worker", "--store", url, "--run", run_id, "--json"])
        .args(extra)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .env("CI", "true")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

/// `run --detach` of the project in `dir` on `url`; returns the run id.
pub fn detach(dir: &Path, url: &str, env: &[(&str, &str)]) -> String {
    let o = super::oloproof_env(dir, &["run", ".", "--store", url, "--detach"], env);
    assert_eq!(o.status.code(), Some(0), "{}", super::stderr(&o));
    let id = super::stdout(&o).trim().to_string();
    assert!(id.starts_with("run_"), "{id}");
    id
}

/// A summary with what differs between two executions of the same cases taken out: the run
/// id and the latencies.
pub fn without_ids_and_timings(mut summary: serde_json::Value) -> serde_json::Value {
    let map = summary.as_object_mut().unwrap();
    map.shift_remove("run_id");
    map.shift_remove("latency_ms");
    summary
}
