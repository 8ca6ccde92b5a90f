//! Many `oloproof worker` processes on one run in Postgres: the same summary as one process on
//! SQLite, a killed worker's cases finished by the others under attempt 2, a stale worker's
//! late results rejected, and the password never shown or stored.
//!
//! Needs the test server of `scripts/postgres-test` (`OLOPROOF_TEST_POSTGRES`); skipped
//! without it, a failure under `OLOPROOF_REQUIRE_REFERENCES=1`.

mod common;

use std::time::{Duration, Instant};

use common::pg;
use common::*;

fn wait_output(child: std::process::Child) -> std::process::Output {
    child.wait_with_output().unwrap()
}

#[test]
fn four_workers_give_the_summary_of_one_sqlite_process() {
    let Some(server) = pg::server() else { return };
    let url = pg::fresh_database(&server);
    let (_tmp, dir) = project("tests/systems/slow");
    let env = [("OLOPROOF_SLEEP_S", "0.02")];
    // One process on SQLite.
    let single = oloproof_env(&dir, &["run", ".", "--json"], &env);
    assert_eq!(single.status.code(), Some(0), "{}", stderr(&single));
    let single: serde_json::Value = serde_json::from_slice(&single.stdout).unwrap();
    // Four workers of two threads on Postgres, small batches so that all four take part.
    let id = pg::detach(&dir, &url, &env);
    let workers: Vec<_> = (0..4)
        .map(|_| pg::spawn_worker(&dir, &url, &id, &["--workers", "2", "--batch", "5"], &env))
        .collect();
    let outputs: Vec<_> = workers.into_iter().map(wait_output).collect();
    for o in &outputs {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    }
    // Exactly one worker recorded the summary and printed it; the others said how far it was.
    let printed: Vec<&std::process::Output> =
        outputs.iter().filter(|o| !o.stdout.is_empty()).collect();
    assert_eq!(printed.len(), 1, "one summary printed");
    let from_worker: serde_json::Value = serde_json::from_slice(&printed[0].stdout).unwrap();
    let shown = oloproof(&dir, &["show", &id, "--store", &url, "--json"]);
    assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
    let stored: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(stored, from_worker);
    assert_eq!(stored["run_id"], serde_json::json!(id));
    // Byte for byte, ids and timings aside.
    let a = serde_json::to_string_pretty(&pg::without_ids_and_timings(single)).unwrap();
    let b = serde_json::to_string_pretty(&pg::without_ids_and_timings(stored)).unwrap();
    assert_eq!(a, b);
    // Every worker took cases; each case ran once.
    let executed: Vec<String> = outputs
        .iter()
        .filter(|o| o.stdout.is_empty())
        .map(stderr)
        .collect();
    assert_eq!(executed.len(), 3);
    assert!(pg::cases(&url, &id)
        .iter()
        .all(|(_, state, attempt)| state == "done" && *attempt == 1));
    // The reader commands read the Postgres store.
    let runs = oloproof(&dir, &["runs", "--store", &url, "--json"]);
    let runs: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap();
    assert_eq!(runs[0]["status"], "complete");
    assert_eq!(runs[0]["done"], 40);
    let report = dir.join("report.html");
    let o = oloproof(
        &dir,
        &[
            "report",
            &id,
            "--store",
            &url,
            "-o",
            report.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The cache is shared: a second run of the same cases re-uses every execution.
    let again = oloproof_env(&dir, &["run", ".", "--store", &url, "--json"], &env);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let again: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(again["cache"]["execution"]["hit"], 40, "{again}");
}

#[test]
fn a_killed_workers_cases_go_to_the_others_and_a_stale_result_is_rejected() {
    let Some(server) = pg::server() else { return };
    let url = pg::fresh_database(&server);
    let (_tmp, dir) = project("tests/systems/slow");
    let slow = [("OLOPROOF_SLEEP_S", "0.1")];
    let id = pg::detach(&dir, &url, &slow);
    let short = ["--workers", "1", "--batch", "4", "--lease", "1.5"];
    let mut killed = pg::spawn_worker(&dir, &url, &id, &short, &slow);
    let stopped = pg::spawn_worker(&dir, &url, &id, &short, &slow);
    let deadline = Instant::now() + Duration::from_secs(60);
    while pg::done(&url, &id) < 6 {
        assert!(Instant::now() < deadline, "no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    killed.kill().unwrap(); // SIGKILL
    killed.wait().unwrap();
    // The other one stops where it is (SIGSTOP): its leases expire while it cannot renew them.
    let pid = stopped.id().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-STOP", &pid])
        .status()
        .unwrap()
        .success());
    let held: Vec<String> = pg::cases(&url, &id)
        .into_iter()
        .filter(|(_, state, attempt)| state == "pending" && *attempt == 1)
        .map(|(c, _, _)| c)
        .collect();
    assert!(!held.is_empty(), "the two workers held cases when stopped");
    // A third worker finishes the run, taking the stopped and the killed worker's cases once
    // their leases expire.
    let rescuer = pg::spawn_worker(&dir, &url, &id, &["--workers", "2", "--lease", "30"], &[]);
    let rescued = wait_output(rescuer);
    assert_eq!(rescued.status.code(), Some(0), "{}", stderr(&rescued));
    let summary: serde_json::Value = serde_json::from_slice(&rescued.stdout).unwrap();
    assert_eq!(summary["done"], 40);
    let cases = pg::cases(&url, &id);
    assert!(cases.iter().all(|(_, state, _)| state == "done"));
    for case in &held {
        let (_, _, attempt) = cases.iter().find(|(c, _, _)| c == case).unwrap();
        assert_eq!(*attempt, 2, "{case} was finished under attempt 2");
    }
    // The stopped worker wakes up: what it still had in flight is refused, it takes nothing
    // more, and the run keeps exactly one result per case and criterion.
    assert!(std::process::Command::new("kill")
        .args(["-CONT", &pid])
        .status()
        .unwrap()
        .success());
    let late = wait_output(stopped);
    assert_eq!(late.status.code(), Some(0), "{}", stderr(&late));
    assert!(
        late.stdout.is_empty(),
        "the late worker does not record the summary"
    );
    assert!(
        stderr(&late).contains("result not recorded: the case's lease passed to another worker"),
        "{}",
        stderr(&late)
    );
    let mut c = pg::connect(&url);
    let verdicts: i64 = c
        .query_one("SELECT COUNT(*) FROM verdicts WHERE run_id = $1", &[&id])
        .unwrap()
        .get(0);
    assert_eq!(verdicts, 40 * 2, "one verdict per case and criterion");
    let after = pg::cases(&url, &id);
    assert_eq!(after, cases, "the late worker changed nothing");
    let shown = oloproof(&dir, &["show", &id, "--store", &url, "--json"]);
    let shown: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown, summary);
}

#[test]
fn a_case_past_max_attempts_is_recorded_as_an_error() {
    let Some(server) = pg::server() else { return };
    let url = pg::fresh_database(&server);
    let (_tmp, dir) = project("tests/systems/slow");
    let id = pg::detach(&dir, &url, &[]);
    // Every case claimed twice already by workers that died (attempt 2 = max_attempts).
    pg::connect(&url)
        .execute(
            "UPDATE run_cases SET attempt = 2 WHERE run_id = $1 AND case_id = 'c00'",
            &[&id],
        )
        .unwrap();
    let w = wait_output(pg::spawn_worker(
        &dir,
        &url,
        &id,
        &["--max-attempts", "2"],
        &[],
    ));
    assert_eq!(
        w.status.code(),
        Some(4),
        "an error above max_error_rate: {}",
        stderr(&w)
    );
    let summary: serde_json::Value = serde_json::from_slice(&w.stdout).unwrap();
    assert_eq!(
        (summary["done"].as_i64(), summary["errors"].as_i64()),
        (Some(40), Some(1))
    );
    let case = oloproof(
        &dir,
        &["show", &id, "--store", &url, "--case", "c00", "--json"],
    );
    let case: serde_json::Value = serde_json::from_slice(&case.stdout).unwrap();
    let message = case["trace"]["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("abandoned: claimed 2 times (max_attempts 2)"),
        "{message}"
    );
}

#[test]
fn the_password_is_never_shown_or_stored() {
    let Some(server) = pg::server() else { return };
    let password = std::env::var("PGPASSWORD").expect("the test server sets PGPASSWORD");
    let url = pg::fresh_database(&server);
    let (tmp, dir) = project("tests/systems/slow");
    let mut seen = String::new();
    let mut run = |args: &[&str], env: &[(&str, &str)]| {
        let o = oloproof_env(&dir, args, env);
        seen.push_str(&stdout(&o));
        seen.push_str(&stderr(&o));
        o
    };
    // Through a named variable instead of PGPASSWORD, with verbose logs.
    let named = format!("{url}&password_env=OLOPROOF_CANARY_PW");
    let env = [
        ("OLOPROOF_CANARY_PW", password.as_str()),
        ("PGPASSWORD", ""),
    ];
    let o = run(&["-v", "run", ".", "--store", &named, "--json"], &env);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let id = json_run_id(&o);
    run(&["-v", "runs", "--store", &named], &env);
    run(
        &["-v", "show", &id, "--store", &named, "--case", "c01"],
        &env,
    );
    let report = tmp.path().join("report.html");
    let o = run(
        &[
            "report",
            &id,
            "--store",
            &named,
            "-o",
            report.to_str().unwrap(),
        ],
        &env,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report_text = std::fs::read_to_string(&report).unwrap();
    // Failures: a wrong password, a password in the URL, an unset variable.
    let wrong = run(
        &["runs", "--store", &url],
        &[("PGPASSWORD", "canary-wrong-0451")],
    );
    assert_eq!(wrong.status.code(), Some(4), "{}", stderr(&wrong));
    assert!(stderr(&wrong).contains("password"), "{}", stderr(&wrong));
    let inline = url.replacen("oloproof@", &format!("oloproof:{password}@"), 1);
    let refused = run(&["runs", "--store", &inline], &[]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("set PGPASSWORD"),
        "{}",
        stderr(&refused)
    );
    let unset = run(&["runs", "--store", &named], &[("PGPASSWORD", "")]);
    assert_eq!(unset.status.code(), Some(2), "{}", stderr(&unset));
    // A copy of the run to SQLite holds no password either.
    let copy = tmp.path().join("copy.db");
    let o = run(&["store", "copy", &named, copy.to_str().unwrap()], &env);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    seen.push_str(&report_text);
    assert!(!seen.contains(&password), "the password was printed");
    assert!(
        !seen.contains("canary-wrong-0451"),
        "a wrong password was printed"
    );
    let bytes = std::fs::read(&copy).unwrap();
    assert!(!String::from_utf8_lossy(&bytes).contains(&password));
    // Nor the database itself: every text column of every table.
    let mut c = pg::connect(&url);
    let dump: Vec<String> = c
        .query(
            "SELECT string_agg(t::text, ' ') FROM (
               SELECT row_to_json(r)::text AS t FROM runs r UNION ALL
               SELECT row_to_json(c)::text FROM run_cases c UNION ALL
               SELECT row_to_json(v)::text FROM verdicts v UNION ALL
               SELECT row_to_json(k)::text FROM cache k) all_rows",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get::<_, Option<String>>(0).unwrap_or_default())
        .collect();
    assert!(dump[0].contains(&id), "the dump holds the run");
    assert!(!dump[0].contains(&password), "the password is in the store");
}

#[test]
fn runs_move_between_sqlite_and_postgres() {
    let Some(server) = pg::server() else { return };
    let url = pg::fresh_database(&server);
    let (tmp, dir) = project("tests/systems/slow");
    let o = oloproof(&dir, &["run", ".", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let id = json_run_id(&o);
    let local = dir.join(".oloproof/oloproof.db");
    let o = oloproof(
        &dir,
        &[
            "store",
            "copy",
            local.to_str().unwrap(),
            &url,
            "--with-cache",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = redact(&stdout(&o), tmp.path()).replace(&url, "[URL]");
    insta::assert_snapshot!(text);
    // Copied again: kept as it is.
    let o = oloproof(&dir, &["store", "copy", local.to_str().unwrap(), &url]);
    assert!(
        stdout(&o).contains(&format!("kept {id}: already in")),
        "{}",
        stdout(&o)
    );
    // Taken home to another SQLite file: the same summary and cases.
    let home = tmp.path().join("home.db");
    let o = oloproof(&dir, &["store", "copy", &url, home.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let a = oloproof(&dir, &["show", &id, "--json"]);
    let b = oloproof(
        &dir,
        &["show", &id, "--store", home.to_str().unwrap(), "--json"],
    );
    assert_eq!(stdout(&a), stdout(&b));
    let a = oloproof(&dir, &["show", &id, "--case", "c03", "--json"]);
    let b = oloproof(
        &dir,
        &["show", &id, "--store", &url, "--case", "c03", "--json"],
    );
    assert_eq!(stdout(&a), stdout(&b));
}

/// The `run_id` of a `--json` summary.
fn json_run_id(o: &std::process::Output) -> String {
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["run_id"].as_str().unwrap().to_string()
}
