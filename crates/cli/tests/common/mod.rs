//! Helpers for CLI tests: a project copied into a temporary folder, the real binary, redaction.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Copies `src` (relative to the repo) into a fresh temporary folder and returns both.
pub fn project(src: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("project");
    copy_dir(&repo().join(src), &dst);
    (tmp, dst)
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == ".oloproof" || name == "__pycache__" {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            copy_dir(&path, &dst.join(&name));
        } else {
            std::fs::copy(&path, dst.join(&name)).unwrap();
        }
    }
}

/// Runs the real `oloproof` binary in `cwd`.
pub fn oloproof(cwd: &Path, args: &[&str]) -> Output {
    oloproof_env(cwd, args, &[])
}

/// Runs the real `oloproof` binary in `cwd` with extra environment variables.
pub fn oloproof_env(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_oloproof"));
    cmd.args(args)
        .current_dir(cwd)
        .env_remove("RUST_LOG")
        .env("CI", "true");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit code, stdout and stderr in one snapshot-friendly text, with ids, times and paths redacted.
pub fn transcript(o: &Output, tmp: &Path) -> String {
    let text = format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        o.status
            .code()
            .map(|c| c.to_string())
            .unwrap_or_else(|| "signal".into()),
        stdout(o),
        stderr(o)
    );
    redact(&text, tmp)
}

/// Replaces run ids, timestamps and the temporary folder.
pub fn redact(text: &str, tmp: &Path) -> String {
    let mut out = text.replace(&tmp.display().to_string(), "[TMP]");
    if let Ok(canon) = tmp.canonicalize() {
        out = out.replace(&canon.display().to_string(), "[TMP]");
    }
    for prefix in ["run_", "mon_"] {
        out = redact_ulids(&out, prefix);
    }
    redact_hashes(&out)
}

/// Replaces `<prefix><26-character ULID>` ids by `<prefix>[ID]`.
fn redact_ulids(text: &str, prefix: &str) -> String {
    let mut result = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(prefix) {
        result.push_str(&rest[..i]);
        let tail = &rest[i + prefix.len()..];
        let id_len = tail
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .count();
        if id_len == 26 {
            result.push_str(prefix);
            result.push_str("[ID]");
            rest = &tail[26..];
        } else {
            result.push_str(prefix);
            rest = tail;
        }
    }
    result.push_str(rest);
    result
}

/// Replaces `sha256:<64 hex>` ids.
pub fn redact_hashes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("sha256:") {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 7..];
        let hex = tail.chars().take_while(|c| c.is_ascii_hexdigit()).count();
        if hex == 64 {
            out.push_str("sha256:[HASH]");
            rest = &tail[64..];
        } else {
            out.push_str("sha256:");
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// The first run id printed in `text`.
pub fn run_id(text: &str) -> String {
    let i = text.find("run_").expect("a run id");
    text[i..i + 30].to_string()
}

/// The first `sha256:<64 hex>` id printed in `text`.
pub fn hash_id(text: &str) -> String {
    let i = text.find("sha256:").expect("a sha256 id");
    text[i..i + 71].to_string()
}

/// The criterion `name` of a `run --json` summary (panics, showing the summary, when absent).
pub fn criterion<'a>(summary: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    summary["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["criterion"] == name)
        .unwrap_or_else(|| panic!("no criterion {name} in {summary}"))
}

/// The test Postgres server (`scripts/postgres-test`).
pub mod pg;

/// The interpreter with the reference packages (`OLOPROOF_REFERENCE_PYTHON`, set by
/// `scripts/test`), or `None` (skip) when not configured; under
/// `OLOPROOF_REQUIRE_REFERENCES=1` (CI) its absence fails the test instead.
pub fn reference_python() -> Option<String> {
    reference_tool("OLOPROOF_REFERENCE_PYTHON")
}

/// The reference tool named by the environment variable `var` (set by scripts/test), or `None`
/// with a note on stderr; with `OLOPROOF_REQUIRE_REFERENCES=1` a missing one fails the test.
pub fn reference_tool(var: &str) -> Option<String> {
    let required = std::env::var("OLOPROOF_REQUIRE_REFERENCES").as_deref() == Ok("1");
    match std::env::var(var) {
        Ok(p) if !p.is_empty() => Some(p),
        _ => {
            assert!(
                !required,
                "OLOPROOF_REQUIRE_REFERENCES=1 but {var} is not set"
            );
            let mut err = std::io::stderr().lock();
            let _ = std::io::Write::write_all(
                &mut err,
                format!("skipped: {var} is not set (scripts/test sets it)\n").as_bytes(),
            );
            None
        }
    }
}

/// Every trace of the newest run as the store keeps it, by case id (`null` for a case without
/// one), read with Python's sqlite3 as a user inspecting the store would.
pub fn stored_traces(dir: &Path) -> std::collections::HashMap<String, serde_json::Value> {
    let script = "import json, sqlite3, sys\n\
        c = sqlite3.connect(sys.argv[1])\n\
        run = c.execute('SELECT id FROM runs ORDER BY created_ms DESC, id DESC').fetchone()[0]\n\
        rows = c.execute('SELECT case_id, trace_json FROM run_cases WHERE run_id = ?', (run,))\n\
        print(json.dumps({k: json.loads(t) if t else None for k, t in rows}))\n";
    let o = Command::new("python3")
        .args(["-c", script])
        .arg(dir.join(".oloproof/oloproof.db"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}
