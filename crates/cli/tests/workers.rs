//! Real worker processes: a crash, a hang, a command worker written without the shim, and
//! stage errors raised by the system. Each failure is recorded as that case's error, the run
//! goes on, and the exit code follows `--max-error-rate`.

mod common;

use common::*;

#[test]
fn a_crashing_worker_is_restarted_and_its_case_recorded() {
    let (tmp, dir) = project("tests/systems/crash");
    let o = oloproof(&dir, &["run", "."]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(
            "│ answer_correct │ 100.0% │ [15.8%, 100.0%] │ 2 / 2 observed · 1 missing · 0 excluded"
        ),
        "{out}"
    );
    assert!(stderr(&o).contains("1 of 3 cases ended in an error"));
    let id = run_id(&out);
    let show = oloproof(&dir, &["show", &id, "--case", "boom"]);
    insta::assert_snapshot!(transcript(&show, tmp.path()));
    assert!(stdout(&show).contains("about to crash on please crash now"));
    // The same run passes when one error in three is allowed, and the error was not cached.
    let tolerant = oloproof(&dir, &["run", ".", "--max-error-rate", "0.5"]);
    assert_eq!(tolerant.status.code(), Some(0));
    assert!(
        stdout(&tolerant).contains("Cache: execution 2 hit/1 miss"),
        "{}",
        stdout(&tolerant)
    );
}

#[test]
fn a_hanging_worker_times_out_and_the_run_goes_on() {
    let (_tmp, dir) = project("tests/systems/hang");
    let started = std::time::Instant::now();
    let o = oloproof(
        &dir,
        &[
            "run",
            ".",
            "--set",
            "system.rag.timeout_s=1",
            "--max-error-rate",
            "0.5",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(started.elapsed().as_secs() < 30);
    let out = stdout(&o);
    assert!(
        out.contains("2 / 2 observed · 1 missing · 0 excluded"),
        "{out}"
    );
    let show = oloproof(&dir, &["show", &run_id(&out), "--case", "boom"]);
    let text = stdout(&show);
    assert!(
        text.contains("Error: generate: timeout: no response within 1.0s; worker restarted"),
        "{text}"
    );
    assert!(text.contains("about to hang on please hang now"), "{text}");
}

#[test]
fn a_command_worker_without_the_shim() {
    let (_tmp, dir) = project("tests/systems/raw_command");
    let o = oloproof(&dir, &["run", "."]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("Stages: retrieve 0 hit/2 miss; generate 0 hit/2 miss"),
        "{out}"
    );
    assert!(out.contains("answer_correct  │ 100.0%"), "{out}");
}

#[test]
fn raised_errors_keep_the_traceback_and_spare_other_stages() {
    let (_tmp, dir) = project("tests/systems/echo");
    let cases = "{\"id\":\"ok\",\"input\":{\"question\":\"alpha beta\"},\"expected\":{\"answer\":\"alpha\",\"relevant\":[{\"doc_id\":\"w-alpha\"}]}}\n\
                 {\"id\":\"bad_gen\",\"input\":{\"question\":\"alpha raise-generate\"},\"expected\":{\"answer\":\"alpha\",\"relevant\":[{\"doc_id\":\"w-alpha\"}]}}\n\
                 {\"id\":\"bad_ret\",\"input\":{\"question\":\"alpha raise-retrieve\"},\"expected\":{\"answer\":\"alpha\",\"relevant\":[{\"doc_id\":\"w-alpha\"}]}}\n";
    std::fs::write(dir.join("cases.jsonl"), cases).unwrap();
    let o = oloproof(&dir, &["run", ".", "--json", "--max-error-rate", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let get = |name: &str| {
        s["criteria"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["criterion"] == name)
            .unwrap()
            .clone()
    };
    // A generation error leaves the retrieval observed; a retrieval error leaves nothing.
    assert_eq!(
        (
            get("hit_rate_at_2")["observed"].as_u64(),
            get("hit_rate_at_2")["missing"].as_u64()
        ),
        (Some(2), Some(1))
    );
    assert_eq!(
        (
            get("answer_correct")["observed"].as_u64(),
            get("answer_correct")["missing"].as_u64()
        ),
        (Some(1), Some(2))
    );
    assert_eq!(s["errors"], 2);
    let id = s["run_id"].as_str().unwrap().to_string();
    let show = oloproof(&dir, &["show", &id, "--case", "bad_gen"]);
    let text = stdout(&show);
    assert!(text.contains("Error: generate: RuntimeError"), "{text}");
    assert!(
        text.contains("Traceback") || text.contains("line "),
        "{text}"
    );
}

/// Python workers are forked by the fork server (their parent is not `oloproof`) unless
/// `OLOPROOF_NO_FORK_SERVER` asks for each to be started directly (their parent is `oloproof`).
#[cfg(unix)]
#[test]
fn python_workers_are_forked_unless_oloproof_no_fork_server_is_set() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("app.py"),
        "import os\n\
         from oloproof import Passage, rag_system\n\
         @rag_system(name='parent', version='1', depth=1, top_k=1)\n\
         class Parent:\n\
         \x20   def retrieve(self, input, depth):\n\
         \x20       return [Passage('d1', text='one')]\n\
         \x20   def generate(self, input, context):\n\
         \x20       with open('parent.txt', 'w') as f:\n\
         \x20           f.write(str(os.getppid()))\n\
         \x20       return 'one'\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("oloproof.yaml"),
        "system:\n  rag: {object: app:Parent, workers: 1}\ncases: cases.jsonl\n\
         evaluators:\n  - {type: contains, criterion: answer_correct, field: answer, expected_field: answer}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("cases.jsonl"),
        "{\"id\": \"c1\", \"input\": {\"question\": \"q\"}, \"expected\": {\"answer\": \"one\"}}\n",
    )
    .unwrap();
    for (no_fork, forked) in [(None, true), (Some("1"), false)] {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_oloproof"));
        cmd.args(["run", ".", "--no-cache"])
            .current_dir(dir)
            .env("CI", "true")
            .env_remove("OLOPROOF_NO_FORK_SERVER")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        if let Some(v) = no_fork {
            cmd.env("OLOPROOF_NO_FORK_SERVER", v);
        }
        let child = cmd.spawn().unwrap();
        let host = child.id();
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let parent: u32 = std::fs::read_to_string(dir.join("parent.txt"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(
            parent != host,
            forked,
            "worker's parent {parent}, oloproof {host}"
        );
    }
}
