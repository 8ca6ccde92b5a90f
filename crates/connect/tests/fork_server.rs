//! Python workers forked from a fork server (Unix): they answer like started ones, are children
//! of the fork server (not of this process), report their exit status when they crash, are
//! killed and restarted after a timeout, and a fork server that cannot start leaves workers to
//! be started one by one.
#![cfg(unix)]

use std::path::Path;
use std::time::Duration;

use oloproof_connect::{
    install_python_shim, SystemConnection, WorkerCommand, WorkerConnection, WorkerOptions,
};
use oloproof_core::trace::ErrorKind;
use serde_json::{json, Map, Value};

/// A system whose answer names its process and parent; `generate` exits with status 3 on
/// `{"crash": true}` and sleeps on `{"hang": true}`.
const APP: &str = r#"
import os, sys, time
from oloproof import Passage, Retrieval, rag_system

print("imported in", os.getpid(), file=sys.stderr)

@rag_system(name="forked", version="1", depth=1, top_k=1)
class Forked:
    def retrieve(self, input, depth):
        return Retrieval(query="%d %d" % (os.getpid(), os.getppid()), depth=depth,
                         candidates=[Passage("d1", text="one")])

    def generate(self, input, context):
        if input.get("crash"):
            sys.stderr.write("about to exit\n")
            sys.stderr.flush()
            os._exit(3)
        if input.get("hang"):
            time.sleep(60)
        return "fine"
"#;

struct Project {
    dir: tempfile::TempDir,
    pythonpath: String,
}

fn project() -> Project {
    let dir = tempfile::tempdir().unwrap();
    let shim = install_python_shim(dir.path()).unwrap();
    std::fs::write(dir.path().join("app.py"), APP).unwrap();
    let pythonpath = format!("{}:{}", shim.display(), dir.path().display());
    Project { dir, pythonpath }
}

fn connect(p: &Project, program: &str, fork: bool, timeout: Duration) -> WorkerConnection {
    try_connect(p, program, fork, timeout).expect("the worker says hello")
}

fn try_connect(
    p: &Project,
    program: &str,
    fork: bool,
    timeout: Duration,
) -> Result<WorkerConnection, oloproof_core::trace::StageError> {
    let args = |extra: &[&str]| -> Vec<String> {
        ["-u", "-m", "oloproof.worker"]
            .iter()
            .chain(extra)
            .map(|s| s.to_string())
            .collect()
    };
    WorkerConnection::connect(WorkerOptions {
        command: WorkerCommand {
            program: program.into(),
            args: args(&["app:Forked"]),
            cwd: p.dir.path().to_path_buf(),
            env: vec![("PYTHONPATH".into(), p.pythonpath.clone())],
            fork_server_args: fork.then(|| args(&["--fork-server", "app:Forked"])),
        },
        timeout,
        params: Map::new(),
    })
}

/// The worker's (pid, parent pid), from its retrieve.
fn pids(conn: &mut WorkerConnection) -> (u32, u32) {
    let r = conn.retrieve(&Map::new(), 1).expect("retrieve answers");
    let query = r.query.expect("the query names the process");
    let mut it = query.split(' ').map(|n| n.parse::<u32>().unwrap());
    (it.next().unwrap(), it.next().unwrap())
}

fn input(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn generate(conn: &mut WorkerConnection, v: Value) -> Result<String, (ErrorKind, String)> {
    conn.generate(&input(v), &[])
        .map(|m| m["answer"].as_str().unwrap().to_string())
        .map_err(|e| (e.kind, e.message))
}

#[test]
fn forked_workers_share_one_fork_server_and_answer_like_started_ones() {
    let p = project();
    let host = std::process::id();
    let mut a = connect(&p, "python3", true, Duration::from_secs(30));
    let mut b = connect(&p, "python3", true, Duration::from_secs(30));
    let (pid_a, parent_a) = pids(&mut a);
    let (pid_b, parent_b) = pids(&mut b);
    assert_ne!(pid_a, pid_b, "one process per connection");
    assert_eq!(parent_a, parent_b, "both forked by the same fork server");
    assert_ne!(
        parent_a, host,
        "a forked worker is not this process's child"
    );
    assert_eq!(generate(&mut a, json!({})), Ok("fine".into()));
    // The user's module is imported by each worker, never by the fork server.
    let stderr = a.take_stderr();
    assert!(
        stderr.iter().any(|l| l == &format!("imported in {pid_a}")),
        "{stderr:?}"
    );

    // Without a fork server, the worker is this process's child.
    let mut started = connect(&p, "python3", false, Duration::from_secs(30));
    assert_eq!(pids(&mut started).1, host);
}

#[test]
fn a_forked_worker_that_exits_reports_its_status_and_is_replaced() {
    let p = project();
    let mut conn = connect(&p, "python3", true, Duration::from_secs(30));
    let (before, _) = pids(&mut conn);
    let (kind, message) = generate(&mut conn, json!({"crash": true})).unwrap_err();
    assert_eq!(kind, ErrorKind::Crash);
    assert_eq!(message, "worker exit status: 3; restarted");
    let (after, _) = pids(&mut conn);
    assert_ne!(before, after, "a new worker answers");
    assert_eq!(generate(&mut conn, json!({})), Ok("fine".into()));
}

#[test]
fn a_forked_worker_that_hangs_is_killed_at_its_timeout_and_replaced() {
    let p = project();
    let mut conn = connect(&p, "python3", true, Duration::from_millis(1500));
    let (hung, _) = pids(&mut conn);
    let (kind, message) = generate(&mut conn, json!({"hang": true})).unwrap_err();
    assert_eq!(kind, ErrorKind::Timeout, "{message}");
    // Killed through its parent: gone within moments, not after its 60 s sleep.
    let gone = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(10));
        !Path::new(&format!("/proc/{hung}")).exists()
            || std::fs::read_to_string(format!("/proc/{hung}/stat"))
                .map(|s| s.contains(") Z "))
                .unwrap_or(true)
    });
    assert!(gone, "worker {hung} still runs after its timeout");
    let (after, _) = pids(&mut conn);
    assert_ne!(hung, after);
}

#[test]
fn an_interpreter_that_cannot_start_is_reported_as_when_starting_directly() {
    let p = project();
    let missing = "/nonexistent/python3";
    let forked = try_connect(&p, missing, true, Duration::from_secs(5))
        .err()
        .expect("no interpreter, no worker");
    let started = try_connect(&p, missing, false, Duration::from_secs(5))
        .err()
        .expect("no interpreter, no worker");
    assert_eq!(forked.kind, ErrorKind::Spawn);
    assert_eq!(forked.message, started.message);
}
