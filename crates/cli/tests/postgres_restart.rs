//! Postgres restarted while workers run: they retry with backoff, reconnect, and the run
//! completes with every case recorded once. A test binary of its own: the restart would cut
//! the connections of any other test running beside it.

mod common;

use std::time::{Duration, Instant};

use common::pg;
use common::*;

#[test]
fn workers_ride_out_a_restart_of_the_server() {
    let Some(server) = pg::server() else { return };
    let restart = std::env::var("OLOPROOF_TEST_POSTGRES_RESTART")
        .expect("scripts/postgres-test sets OLOPROOF_TEST_POSTGRES_RESTART");
    let url = pg::fresh_database(&server);
    let (_tmp, dir) = project("tests/systems/slow");
    let env = [("OLOPROOF_SLEEP_S", "0.05")];
    let id = pg::detach(&dir, &url, &env);
    let workers: Vec<_> = (0..2)
        .map(|_| pg::spawn_worker(&dir, &url, &id, &["--workers", "2", "--batch", "4"], &env))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while pg::done(&url, &id) < 8 {
        assert!(Instant::now() < deadline, "no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = std::process::Command::new("sh")
        .args(["-c", &restart])
        .status()
        .unwrap();
    assert!(status.success(), "restart failed");
    let outputs: Vec<_> = workers
        .into_iter()
        .map(|w| w.wait_with_output().unwrap())
        .collect();
    for o in &outputs {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    }
    let retried = outputs.iter().any(|o| stderr(o).contains("retrying"));
    assert!(retried, "the workers saw the restart");
    let cases = pg::cases(&url, &id);
    assert_eq!(cases.len(), 40);
    assert!(cases.iter().all(|(_, state, _)| state == "done"));
    let shown = oloproof(&dir, &["show", &id, "--store", &url, "--json"]);
    let shown: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["done"], 40);
    let mut c = pg::connect(&url);
    let verdicts: i64 = c
        .query_one("SELECT COUNT(*) FROM verdicts WHERE run_id = $1", &[&id])
        .unwrap()
        .get(0);
    assert_eq!(verdicts, 80);
}
