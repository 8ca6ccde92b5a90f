//! Faults injected into the run store, through the real binary: the disk filling up while
//! cases are written (a real, size-limited tmpfs: these tests mount one, which needs root, as in
//! CI), the database locked by another process, a truncated or overwritten `oloproof.db`, a torn
//! write-ahead log, and a store written by an older Oloproof. Each time: a clear error (exit 4)
//! that says what to do, the cases recorded before intact, the damaged file left as it was, and
//! `oloproof run --resume RUN_ID` finishing the run with the summary of an uninterrupted run.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

fn db(dir: &Path) -> PathBuf {
    dir.join(".oloproof/oloproof.db")
}

/// The store as messages name it (the commands run in the project folder).
const SHOWN: &str = "./.oloproof/oloproof.db";

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(o), stderr(o)))
}

/// `runs --json`: the newest run.
fn newest_run(dir: &Path) -> Value {
    let o = oloproof(dir, &["runs", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    json(&o)[0].clone()
}

/// The criteria and slices of a summary: what must not depend on interruptions.
fn results(summary: &Value) -> Value {
    serde_json::json!({
        "done": summary["done"], "errors": summary["errors"],
        "criteria": summary["criteria"], "slices": summary["slices"],
    })
}

/// The same project run from scratch, uninterrupted, in a folder of its own.
fn uninterrupted(src: &str, cases: Option<&str>, env: &[(&str, &str)]) -> Value {
    let (_tmp, dir) = project(src);
    if let Some(cases) = cases {
        std::fs::write(dir.join("cases.jsonl"), cases).unwrap();
    }
    let o = oloproof_env(&dir, &["run", ".", "--json"], env);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    results(&json(&o))
}

/// A tmpfs of `size` mounted at `path`, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(path: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(path).unwrap();
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(path)
            .output()
            .expect("the `mount` program");
        assert!(
            o.status.success(),
            "this test fills a real file system: it mounts a tmpfs, which needs root (CI runs \
             as root): {}",
            String::from_utf8_lossy(&o.stderr)
        );
        Tmpfs(path.to_path_buf())
    }

    fn resize(&self, size: &str) {
        let o = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// 30 cases of the faulty worker whose answers are about 100 kB each.
fn padded_cases() -> String {
    (0..30)
        .map(|i| {
            serde_json::json!({
                "id": format!("c{i:02}"),
                "input": {"question": format!("word{i} padded question {i}")},
                "expected": {"answer": format!("word{i}"), "relevant": [{"doc_id": format!("w-word{i}")}]},
            })
            .to_string()
                + "\n"
        })
        .collect()
}

#[test]
fn disk_full_while_writing_cases_then_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("small-disk");
    let disk = Tmpfs::mount(&mnt, "3m");
    let dir = mnt.join("project");
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["worker.py", "oloproof.yaml"] {
        std::fs::copy(repo().join("tests/systems/faulty").join(f), dir.join(f)).unwrap();
    }
    let cases = padded_cases();
    std::fs::write(dir.join("cases.jsonl"), &cases).unwrap();

    // Each case stores ~300 kB (trace, execution and generation caches): 3 MB fills up.
    let o = oloproof(&dir, &["run", ".", "--json"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let run = newest_run(&dir);
    let id = run["id"].as_str().unwrap().to_string();
    let done = run["done"].as_i64().unwrap();
    assert!(
        (1..30).contains(&done),
        "{done} cases recorded before the disk was full"
    );
    assert_eq!(run["status"], "running");
    // The last line (a run may print progress lines before it).
    assert_eq!(
        stderr(&o).trim().lines().last().unwrap(),
        format!(
            "error: cannot write run {id} to the run store {}: database or disk is full: the disk \
             holding it is full: free some space. The cases recorded before are kept; once that \
             is fixed, finish the run with `oloproof run --resume {id}`",
            SHOWN
        )
    );
    // The recorded cases read back.
    let show = oloproof(&dir, &["show", &id, "--case", "c00"]);
    assert_eq!(show.status.code(), Some(0), "{}", stderr(&show));
    assert!(
        stdout(&show).contains("answer_correct  pass"),
        "{}",
        stdout(&show)
    );

    // Space freed: the resumed run finishes only the rest and equals an uninterrupted run.
    disk.resize("64m");
    let resumed = oloproof(&dir, &["run", "--resume", &id, "--json"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let resumed = json(&resumed);
    assert_eq!(resumed["run_id"], id.as_str());
    assert_eq!(
        resumed["cache"]["execution"]["miss"].as_i64(),
        Some(30 - done),
        "{resumed}"
    );
    assert_eq!(newest_run(&dir)["status"], "complete");
    assert_eq!(
        results(&resumed),
        uninterrupted("tests/systems/faulty", Some(&cases), &[])
    );
}

/// A `sqlite3` transaction holding the store's write lock until dropped.
struct Locker(Child);

impl Locker {
    fn lock(db: &Path) -> Locker {
        let script = "import sqlite3, sys\n\
            c = sqlite3.connect(sys.argv[1], timeout=60, isolation_level=None)\n\
            c.execute('BEGIN IMMEDIATE')\n\
            print('locked', flush=True)\n\
            sys.stdin.read()\n";
        let mut child = Command::new("python3")
            .args(["-c", script])
            .arg(db)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "locked");
        Locker(child)
    }
}

impl Drop for Locker {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.wait();
    }
}

const BUSY: (&str, &str) = ("OLOPROOF_STORE_BUSY_TIMEOUT_S", "1");

#[test]
fn a_store_locked_by_another_process_then_resume() {
    let (_tmp, dir) = project("tests/systems/slow");
    let mut child = Command::new(env!("CARGO_BIN_EXE_oloproof"))
        .args(["run", "."])
        .current_dir(&dir)
        .env("CI", "true")
        .env_remove("RUST_LOG")
        .env("OLOPROOF_SLEEP_S", "0.05")
        .env(BUSY.0, BUSY.1)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let o = oloproof(&dir, &["runs", "--json"]);
        if o.status.success() && json(&o)[0]["done"].as_i64().unwrap_or(0) >= 4 {
            break;
        }
        assert!(Instant::now() < deadline, "the run made no progress");
        assert!(child.try_wait().unwrap().is_none(), "finished too early");
        std::thread::sleep(Duration::from_millis(20));
    }
    let locker = Locker::lock(&db(&dir));
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(4), "{err}");
    let id = run_id(&err);
    assert_eq!(
        err.trim().lines().last().unwrap(),
        format!(
            "error: cannot write run {id} to the run store {}: database is locked: another \
             process holds a lock on it (another oloproof command writing to this store, or a \
             program such as `sqlite3` with a transaction open) and did not release it in time \
             (OLOPROOF_STORE_BUSY_TIMEOUT_S, 30 s by default): let it finish or close it. The \
             cases recorded before are kept; once that is fixed, finish the run with \
             `oloproof run --resume {id}`",
            SHOWN
        )
    );
    // A new run cannot start while the lock is held either, and records nothing.
    let blocked = oloproof_env(&dir, &["run", "."], &[BUSY]);
    assert_eq!(blocked.status.code(), Some(4), "{}", stderr(&blocked));
    assert!(
        stderr(&blocked).contains(&format!(
            "error: run store {SHOWN}: database is locked: another process holds a lock on it"
        )),
        "{}",
        stderr(&blocked)
    );
    drop(locker);
    // The wait is a number of seconds; anything else is said so.
    let bad = oloproof_env(&dir, &["runs"], &[(BUSY.0, "soon")]);
    assert_eq!(bad.status.code(), Some(2), "a bad setting is a usage error");
    assert_eq!(
        stderr(&bad).trim(),
        "error: OLOPROOF_STORE_BUSY_TIMEOUT_S=\"soon\" is not a number of seconds between 0 and 86400"
    );

    let runs = json(&oloproof(&dir, &["runs", "--json"]));
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
    assert_eq!(runs[0]["status"], "running");
    let done = runs[0]["done"].as_i64().unwrap();
    assert!((4..40).contains(&done), "{done}");
    let resumed = oloproof_env(
        &dir,
        &["run", "--resume", &id, "--json"],
        &[("OLOPROOF_SLEEP_S", "0")],
    );
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let resumed = json(&resumed);
    assert_eq!(
        resumed["cache"]["execution"]["miss"].as_i64(),
        Some(40 - done)
    );
    assert_eq!(
        results(&resumed),
        uninterrupted("tests/systems/slow", None, &[("OLOPROOF_SLEEP_S", "0")])
    );
}

/// Starts a slow run and kills it with SIGKILL once a few cases are recorded, without opening
/// the store afterwards (the last connection to close checkpoints the write-ahead log).
fn kill_a_run(dir: &Path) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_oloproof"))
        .args(["run", "."])
        .current_dir(dir)
        .env("CI", "true")
        .env("OLOPROOF_SLEEP_S", "0.05")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let o = oloproof(dir, &["runs", "--json"]);
        if o.status.success() && json(&o)[0]["done"].as_i64().unwrap_or(0) >= 6 {
            break;
        }
        assert!(Instant::now() < deadline, "the run made no progress");
        assert!(child.try_wait().unwrap().is_none(), "finished too early");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A slow run killed with SIGKILL after a few cases: its id and the cases done.
fn killed_run(dir: &Path) -> (String, i64) {
    kill_a_run(dir);
    let run = newest_run(dir);
    assert_eq!(run["status"], "running");
    (
        run["id"].as_str().unwrap().to_string(),
        run["done"].as_i64().unwrap(),
    )
}

fn resume_matches_uninterrupted(dir: &Path, id: &str) {
    let resumed = oloproof_env(
        dir,
        &["run", "--resume", id, "--json"],
        &[("OLOPROOF_SLEEP_S", "0")],
    );
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let resumed = json(&resumed);
    assert_eq!(resumed["run_id"], id);
    assert_eq!(
        results(&resumed),
        uninterrupted("tests/systems/slow", None, &[("OLOPROOF_SLEEP_S", "0")])
    );
}

/// Cases done in the store as SQLite recovers it, counted on a copy (opening the store itself
/// would checkpoint its log).
fn done_in_copy(dir: &Path) -> i64 {
    let copy = tempfile::tempdir().unwrap();
    for f in ["oloproof.db", "oloproof.db-wal"] {
        std::fs::copy(dir.join(".oloproof").join(f), copy.path().join(f)).unwrap();
    }
    let script = "import sqlite3, sys\n\
        c = sqlite3.connect(sys.argv[1])\n\
        print(c.execute(\"SELECT COUNT(*) FROM run_cases WHERE state = 'done'\").fetchone()[0])\n";
    let o = Command::new("python3")
        .args(["-c", script])
        .arg(copy.path().join("oloproof.db"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
}

#[test]
fn a_torn_write_ahead_log_loses_at_most_its_last_commit() {
    let (_tmp, dir) = project("tests/systems/slow");
    kill_a_run(&dir);
    let wal = dir.join(".oloproof/oloproof.db-wal");
    let len = std::fs::metadata(&wal).unwrap().len();
    assert!(
        len > 16_384,
        "the log holds the run's commits ({len} bytes)"
    );
    let done = done_in_copy(&dir);
    // Its end torn, as by a crash in the middle of writing it.
    let f = std::fs::OpenOptions::new().write(true).open(&wal).unwrap();
    f.set_len(len - 3000).unwrap();
    drop(f);
    let run = newest_run(&dir);
    assert_eq!(run["status"], "running");
    let after = run["done"].as_i64().unwrap();
    assert!(
        after > 0 && after <= done,
        "{after} of {done} cases survive"
    );
    resume_matches_uninterrupted(&dir, run["id"].as_str().unwrap());
}

fn sha256(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap();
    let o = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(&bytes)?;
            c.wait_with_output()
        })
        .unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Every command that reads or writes the damaged store fails with `says` (exit 4) and leaves
/// the file exactly as it was.
fn refused_everywhere(dir: &Path, id: &str, says: &str) {
    let before = sha256(&db(dir));
    for args in [
        vec!["runs"],
        vec!["show", id],
        vec!["run", "--resume", id],
        vec!["run", "."],
    ] {
        let o = oloproof(dir, &args);
        assert_eq!(o.status.code(), Some(4), "{args:?}: {}", stderr(&o));
        assert_eq!(
            stderr(&o).trim(),
            format!("error: run store {SHOWN}: {says}"),
            "{args:?}"
        );
        assert_eq!(
            sha256(&db(dir)),
            before,
            "{args:?} changed the damaged file"
        );
        assert!(!dir.join(".oloproof/oloproof.db-wal").exists() || args[0] == "run");
    }
}

const DAMAGED: &str = "the file is damaged (truncated or overwritten) or is not an Oloproof run \
     store; it was left as it is: restore it from a backup, or salvage what is readable with \
     `sqlite3 DB .recover | sqlite3 recovered.db` and put recovered.db in its place";

fn damaged(error: &str) -> String {
    format!("{error}: {}", DAMAGED.replace("DB", SHOWN))
}

#[test]
fn a_truncated_store_is_refused_and_left_as_it_was() {
    let (tmp, dir) = project("tests/systems/slow");
    let (id, done) = killed_run(&dir);
    // `runs` closed the store last: everything is in the database file, no log left.
    assert!(!dir.join(".oloproof/oloproof.db-wal").exists());
    let backup = tmp.path().join("backup.db");
    std::fs::copy(db(&dir), &backup).unwrap();
    let len = std::fs::metadata(db(&dir)).unwrap().len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(db(&dir))
        .unwrap();
    f.set_len(len / 2).unwrap();
    drop(f);
    refused_everywhere(&dir, &id, &damaged("database disk image is malformed"));
    // Restored from the backup: the run goes on from the cases recorded before.
    std::fs::copy(&backup, db(&dir)).unwrap();
    assert_eq!(newest_run(&dir)["done"].as_i64(), Some(done));
    resume_matches_uninterrupted(&dir, &id);
}

#[test]
fn an_overwritten_store_is_refused_and_left_as_it_was() {
    let (tmp, dir) = project("tests/systems/slow");
    let (id, _) = killed_run(&dir);
    let backup = tmp.path().join("backup.db");
    std::fs::copy(db(&dir), &backup).unwrap();
    let original = std::fs::read(db(&dir)).unwrap();

    // Its header overwritten: not a database any more.
    let mut bytes = original.clone();
    bytes[..16].copy_from_slice(b"not a database!!");
    std::fs::write(db(&dir), &bytes).unwrap();
    refused_everywhere(&dir, &id, &damaged("file is not a database"));

    // Every page but the first overwritten: the tables cannot be read.
    let mut bytes = original.clone();
    for b in &mut bytes[4096..] {
        *b = 0xA5;
    }
    std::fs::write(db(&dir), &bytes).unwrap();
    refused_everywhere(&dir, &id, &damaged("database disk image is malformed"));

    std::fs::copy(&backup, db(&dir)).unwrap();
    resume_matches_uninterrupted(&dir, &id);
}

/// `crates/cli/tests/fixtures/store_cad00c9.sql`: a store written by Oloproof at commit cad00c9
/// (schema 1 before the diagnoses, comparisons and calibrations tables) in `tests/systems/slow`:
/// one complete run, and one run killed after 17 of its 40 cases.
fn old_store(dir: &Path) {
    let sql = std::fs::read_to_string(repo().join("crates/cli/tests/fixtures/store_cad00c9.sql"))
        .unwrap();
    std::fs::create_dir_all(dir.join(".oloproof")).unwrap();
    let script = "import sqlite3, sys\n\
        c = sqlite3.connect(sys.argv[1])\n\
        c.executescript(sys.stdin.read())\n\
        c.close()\n";
    let mut child = Command::new("python3")
        .args(["-c", script])
        .arg(db(dir))
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(sql.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_store_written_by_an_older_oloproof_is_read_and_resumed() {
    let (_tmp, dir) = project("tests/systems/slow");
    old_store(&dir);
    let run = newest_run(&dir);
    let id = run["id"].as_str().unwrap().to_string();
    assert_eq!(run["status"], "running");
    let done = run["done"].as_i64().unwrap();
    assert_eq!(done, 17, "{run}");
    let show = oloproof(&dir, &["show", &id, "--case", "c00"]);
    assert_eq!(show.status.code(), Some(0), "{}", stderr(&show));
    assert!(
        stdout(&show).contains("Answer: word0 question 0"),
        "{}",
        stdout(&show)
    );
    resume_matches_uninterrupted(&dir, &id);
    // The upgraded store takes new runs and records analyses (tables it did not have).
    let fresh = oloproof_env(&dir, &["run", ".", "--json"], &[("OLOPROOF_SLEEP_S", "0")]);
    assert_eq!(fresh.status.code(), Some(0), "{}", stderr(&fresh));
    let fresh_id = json(&fresh)["run_id"].as_str().unwrap().to_string();
    std::fs::write(
        dir.join("compare.yaml"),
        "decisions:\n  - {name: answers, criterion: answer_correct, kind: non_inferiority, margin_points: 5}\n",
    )
    .unwrap();
    let compare = oloproof(
        &dir,
        &["compare", &fresh_id, &id, "--policy", "compare.yaml"],
    );
    // Two runs of one system: the gate may pass or block on 40 cases; either way it is recorded.
    assert!(
        matches!(compare.status.code(), Some(0 | 3)),
        "{}",
        stderr(&compare)
    );
    assert!(stdout(&compare).starts_with("Comparison sha256:"));
    let inspect = oloproof(&dir, &["inspect", &hash_id(&stdout(&compare))]);
    assert_eq!(inspect.status.code(), Some(0), "{}", stderr(&inspect));
}
