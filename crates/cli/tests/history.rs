//! `oloproof history` through the real binary: lines appended by `run --history` and by the
//! `history:` key, the table, the SVG chart, `history append` to back-fill, the git commit inside
//! a repository (null outside), and located errors for bad lines.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

/// Replaces `YYYY-MM-DD HH:MM` (the table's dates) with `[DATE]`.
fn redact_dates(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let shape = b"dddd-dd-dd dd:dd";
    while i < b.len() {
        let fits = i + shape.len() <= b.len()
            && shape.iter().zip(&b[i..]).all(|(s, c)| match s {
                b'd' => c.is_ascii_digit(),
                other => other == c,
            });
        if fits {
            out.push_str("[DATE]");
            i += shape.len();
        } else {
            let ch = text[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn runs_append_lines_and_history_prints_and_plots_them() {
    let (tmp, dir) = project("examples/support_rag");
    let first = oloproof(&dir, &["run", ".", "--history", "h.jsonl"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let first_id = run_id(&stdout(&first));
    assert!(stderr(&first).contains(&format!("History: appended {first_id} to h.jsonl")));
    // The `history:` key of oloproof.yaml (here through --set) names the same file.
    let second = oloproof(
        &dir,
        &[
            "run",
            ".",
            "--set",
            "history=h.jsonl",
            "--set",
            "system.rag.token_budget=15",
        ],
    );
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    let recorded = lines(&dir.join("h.jsonl"));
    assert_eq!(recorded.len(), 2);
    let line = &recorded[0];
    assert_eq!(line["run_id"], serde_json::json!(first_id));
    assert_eq!(
        line["commit"],
        serde_json::Value::Null,
        "not a git repository"
    );
    assert_eq!(line["system"], "support-rag");
    assert_eq!(line["cases"], 13);
    assert!(line["timestamp"].as_str().unwrap().ends_with('Z'));
    assert_eq!(line["config_hash"].as_str().unwrap().len(), 64);
    let answers = &line["criteria"][0];
    assert_eq!(answers["criterion"], "answer_correct");
    assert_eq!(answers["kind"], "proportion");
    assert_eq!(answers["passed"], 9);
    assert_eq!(answers["interval"]["lower"], 0.385);
    assert_eq!(answers["interval"]["upper"], 0.91);
    assert_eq!(answers["interval"]["method"], "clopper_pearson");
    assert_eq!(answers["interval"]["level"], 0.95);
    assert_eq!(
        line["criteria"][3]["interval"]["method"],
        "percentile_bootstrap"
    );
    assert!(line["criteria"][3]["std_dev"].as_f64().unwrap() > 0.0);

    let o = oloproof(&dir, &["history", "--file", "h.jsonl", "--plot", "h.svg"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    insta::assert_snapshot!("history_table", redact_dates(&transcript(&o, tmp.path())));
    let svg = std::fs::read_to_string(dir.join("h.svg")).unwrap();
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert_eq!(
        svg.matches("<polyline").count(),
        5,
        "one line per criterion"
    );
    assert_eq!(
        svg.matches("<polygon class=\"band\"").count(),
        5,
        "one band per criterion"
    );
    assert!(svg.contains(">answer_correct<") && svg.contains("latest"));
    assert_eq!(
        svg.matches("http").count(),
        1,
        "only the namespace: nothing is fetched"
    );

    // The `history:` key alone: `oloproof history` reads it, --json gives the lines.
    std::fs::write(
        dir.join("oloproof.yaml"),
        std::fs::read_to_string(dir.join("oloproof.yaml")).unwrap() + "history: h.jsonl\n",
    )
    .unwrap();
    let o = oloproof(&dir, &["history", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2);

    // Back-fill: append the first run again from the store.
    let o = oloproof(&dir, &["history", "append", &first_id]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("is already in"));
    let recorded = lines(&dir.join("h.jsonl"));
    assert_eq!(recorded.len(), 3);
    assert_eq!(recorded[2]["criteria"], recorded[0]["criteria"]);
    // `--file` before the subcommand names the file too.
    let o = oloproof(
        &dir,
        &["history", "--file", "h2.jsonl", "append", &first_id],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        lines(&dir.join("h2.jsonl"))[0]["run_id"],
        serde_json::json!(first_id)
    );
    let o = oloproof(
        &dir,
        &["history", "append", "run_01M8NMHK3TZJGQN4N14E3T1CR4"],
    );
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn no_history_configured_is_explained() {
    let (tmp, dir) = project("examples/support_rag");
    let o = oloproof(&dir, &["history"]);
    assert_eq!(o.status.code(), Some(2));
    insta::assert_snapshot!("history_not_configured", transcript(&o, tmp.path()));
    let o = oloproof(&dir, &["history", "--file", "none.jsonl"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no history at none.jsonl yet"));
}

#[test]
fn bad_lines_are_located() {
    let (tmp, dir) = project("examples/support_rag");
    let criterion = r#"{"criterion":"answer_correct","kind":"proportion","value":0.5,"interval":null,"passed":1,"observed":2,"missing":0,"excluded":0}"#;
    let line = |ts: &str, crit: &str| {
        format!(
            r#"{{"schema_version":1,"timestamp":"{ts}","run_id":"run_x","commit":null,"branch":null,"config_hash":"h","system":"s","version":"v","cases":2,"criteria":[{crit}]}}"#
        )
    };
    let text = [
        line("2026-09-16T12:00:00Z", criterion),
        line(
            "2026-09-16T12:00:00Z",
            &criterion.replace("\"observed\"", "\"observd\""),
        ),
        line("2026-09-16", criterion),
        "{\"schema_version\": 1,".to_string(),
    ]
    .join("\n");
    std::fs::write(dir.join("bad.jsonl"), text + "\n").unwrap();
    let o = oloproof(&dir, &["history", "--file", "bad.jsonl"]);
    assert_eq!(o.status.code(), Some(2));
    insta::assert_snapshot!("history_bad_lines", transcript(&o, tmp.path()));
    let err = stderr(&o);
    assert!(err.contains("= key: criteria[0].observd"), "{err}");
    assert!(err.contains("= help: did you mean `observed`?"), "{err}");
    assert!(
        err.ends_with("3 bad lines in the history; fix or delete them\n"),
        "{err}"
    );

    // A gate whose window reads the bad history fails with the same errors (exit 2).
    let o = oloproof(&dir, &["run", "."]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let run = run_id(&stdout(&o));
    std::fs::write(
        dir.join("w.yaml"),
        "thresholds:\n  - {criterion: answer_correct, min: 0.5, window: last_2_runs}\n",
    )
    .unwrap();
    let o = oloproof(
        &dir,
        &["gate", &run, "--policy", "w.yaml", "--history", "bad.jsonl"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o), err);
}

#[test]
fn the_commit_is_recorded_inside_a_git_repository() {
    let git_works = Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let (_tmp, dir) = project("examples/support_rag");
    if !git_works {
        // Without git the commit is null, never an error.
        let o = oloproof(&dir, &["run", ".", "--history", "h.jsonl"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert_eq!(
            lines(&dir.join("h.jsonl"))[0]["commit"],
            serde_json::Value::Null
        );
        return;
    }
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(args)
            .current_dir(&dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    git(&["init", "--quiet", "--initial-branch", "metrics-test"]);
    git(&["commit", "--quiet", "--allow-empty", "-m", "test"]);
    let head = git(&["rev-parse", "HEAD"]);
    let o = oloproof(&dir, &["run", ".", "--history", "h.jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let line = &lines(&dir.join("h.jsonl"))[0];
    assert_eq!(line["commit"], serde_json::json!(head));
    assert_eq!(line["branch"], "metrics-test");
    let o = oloproof(&dir, &["history", "--file", "h.jsonl"]);
    assert!(stdout(&o).contains(&head[..7]));
}
