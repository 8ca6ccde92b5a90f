//! `oloproof gate` through the real binary: the example's policy (a threshold that passes on the
//! value and fails on the lower bound), a window pooling the history of several runs, a crashed
//! case failing `max_missing_rate`, policy errors (did-you-mean, unknown criterion), and
//! `run --sample`.

mod common;

use common::*;

fn run_example(dir: &std::path::Path, extra: &[&str]) -> String {
    let mut args = vec!["run", "."];
    args.extend_from_slice(extra);
    let o = oloproof(dir, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    run_id(&stdout(&o))
}

#[test]
fn the_examples_gate_passes_on_the_value_and_fails_on_the_bound() {
    let (tmp, dir) = project("examples/support_rag");
    let run = run_example(&dir, &[]);
    let o = oloproof(&dir, &["gate", &run, "--policy", "gate.yaml"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    insta::assert_snapshot!("gate_example", transcript(&o, tmp.path()));
    let out = stdout(&o);
    let line = |start: &str| {
        out.lines()
            .filter(|l| l.contains(start))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let answers = line("│ answer_correct ");
    assert!(answers[0].contains("PASS") && answers[0].contains("69.2%"));
    assert!(answers[1].contains("FAIL") && answers[1].contains("38.5%"));
    assert!(out.ends_with("Gate: BLOCK (exit 3) · 1 of 4 thresholds failed\n"));

    let json = oloproof(&dir, &["gate", &run, "--policy", "gate.yaml", "--json"]);
    assert_eq!(json.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["gate"], "BLOCK");
    assert_eq!(v["run_id"], serde_json::json!(run));
    let t = &v["thresholds"];
    assert_eq!(t[0]["verdict"], "PASS");
    assert_eq!(t[1]["verdict"], "FAIL");
    assert_eq!(t[1]["compared"], 0.385);
    assert_eq!(t[1]["interval"]["method"], "clopper_pearson");
    assert_eq!(t[1]["reasons"][0], "below_min");
    assert_eq!(t[2]["interval"]["method"], "wilson");
    assert_eq!(
        (t[1]["passed"].as_u64(), t[1]["observed"].as_u64()),
        (Some(9), Some(13))
    );

    // A policy the run meets passes with exit 0.
    std::fs::write(
        dir.join("ok.yaml"),
        "thresholds:\n  - {criterion: answer_correct, min: 0.35, on: lower_bound}\n  - {criterion: ndcg_at_6, max: 1.0, on: upper_bound}\n",
    )
    .unwrap();
    let ok = oloproof(&dir, &["gate", &run, "--policy", "ok.yaml"]);
    assert_eq!(ok.status.code(), Some(0), "{}", stdout(&ok));
    assert!(stdout(&ok).ends_with("Gate: PASS (exit 0)\n"));
}

#[test]
fn a_window_pools_the_runs_of_the_history() {
    let (tmp, dir) = project("examples/support_rag");
    let mut runs = Vec::new();
    for budget in ["40", "120", "40"] {
        let set = format!("system.rag.token_budget={budget}");
        runs.push(run_example(
            &dir,
            &["--history", "history.jsonl", "--set", &set],
        ));
    }
    let history = std::fs::read_to_string(dir.join("history.jsonl")).unwrap();
    assert_eq!(history.lines().count(), 3);
    std::fs::write(
        dir.join("window.yaml"),
        "thresholds:
  - {criterion: answer_correct, min: 0.5, on: lower_bound}
  - {criterion: answer_correct, min: 0.5, on: lower_bound, window: last_3_runs}
  - {criterion: answer_correct, min: 0.5, on: lower_bound, window: last_2_runs}
  - {criterion: ndcg_at_6, min: 0.75, on: lower_bound, window: last_7_days}
",
    )
    .unwrap();
    let o = oloproof(
        &dir,
        &[
            "gate",
            &runs[2],
            "--policy",
            "window.yaml",
            "--history",
            "history.jsonl",
        ],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    insta::assert_snapshot!("gate_window", transcript(&o, tmp.path()));
    let v: serde_json::Value = serde_json::from_slice(
        &oloproof(
            &dir,
            &[
                "gate",
                &runs[2],
                "--policy",
                "window.yaml",
                "--history",
                "history.jsonl",
                "--json",
            ],
        )
        .stdout,
    )
    .unwrap();
    let t = &v["thresholds"];
    // One run: 9 of 13, lower bound 38.5 % → FAIL; three runs: 27 of 39 → PASS.
    assert_eq!(t[0]["verdict"], "FAIL");
    assert_eq!(
        (t[1]["passed"].as_u64(), t[1]["observed"].as_u64()),
        (Some(27), Some(39))
    );
    assert_eq!(t[1]["verdict"], "PASS");
    assert_eq!(t[1]["pooled"]["run_ids"], serde_json::json!(runs));
    assert_eq!(t[2]["pooled"]["runs"], 2);
    assert_eq!(t[3]["interval"]["method"], "normal_pooled");

    // Gating the second run: the window ends at its line.
    let second = oloproof(
        &dir,
        &[
            "gate",
            &runs[1],
            "--policy",
            "window.yaml",
            "--history",
            "history.jsonl",
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&second.stdout).unwrap();
    assert_eq!(
        v["thresholds"][1]["pooled"]["run_ids"],
        serde_json::json!(runs[..2])
    );

    // A window without a history is a usage error.
    let none = oloproof(&dir, &["gate", &runs[2], "--policy", "window.yaml"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(
        stderr(&none).contains("there is no history to pool"),
        "{}",
        stderr(&none)
    );
}

#[test]
fn missing_cases_fail_the_gate() {
    let (tmp, dir) = project("tests/systems/crash");
    let o = oloproof(&dir, &["run", "."]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let run = run_id(&stdout(&o));
    std::fs::write(
        dir.join("gate.yaml"),
        "thresholds:\n  - {criterion: answer_correct, min: 0.0}\n",
    )
    .unwrap();
    let o = oloproof(&dir, &["gate", &run, "--policy", "gate.yaml"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    insta::assert_snapshot!("gate_missing", transcript(&o, tmp.path()));
    assert!(stdout(&o).contains("too_many_missing"));
    // Allowing one missing case in three passes a threshold of 0.
    std::fs::write(
        dir.join("lenient.yaml"),
        "thresholds:\n  - {criterion: answer_correct, min: 0.0}\nmax_missing_rate: 0.34\n",
    )
    .unwrap();
    let o = oloproof(&dir, &["gate", &run, "--policy", "lenient.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn policy_errors_are_located_and_exit_2() {
    let (tmp, dir) = project("examples/support_rag");
    let run = run_example(&dir, &[]);
    std::fs::write(
        dir.join("typo.yaml"),
        "thresholds:\n  - {criterion: answer_correct, min: 0.6, on: lower_bound, windw: last_3_runs}\n",
    )
    .unwrap();
    let o = oloproof(&dir, &["gate", &run, "--policy", "typo.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    insta::assert_snapshot!("gate_unknown_key", transcript(&o, tmp.path()));
    std::fs::write(
        dir.join("criterion.yaml"),
        "thresholds:\n  - {criterion: answer_corect, min: 0.6}\n",
    )
    .unwrap();
    let o = oloproof(&dir, &["gate", &run, "--policy", "criterion.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    insta::assert_snapshot!("gate_unknown_criterion", transcript(&o, tmp.path()));
    std::fs::write(
        dir.join("window.yaml"),
        "thresholds:\n  - {criterion: answer_correct, min: 0.6, window: last_week}\n",
    )
    .unwrap();
    let o = oloproof(&dir, &["gate", &run, "--policy", "window.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown window `last_week`"));
    assert!(stderr(&o).contains("window.yaml:2:51"), "{}", stderr(&o));
}

#[test]
fn a_sample_depends_on_case_ids_not_file_order() {
    let (tmp, dir) = project("examples/support_rag");
    let o = oloproof(&dir, &["run", ".", "--sample", "5", "--seed", "3"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with(
        "Sample: 5 of 13 cases, seed 3 (chosen from the case ids, so reordering the case file keeps them)\n"
    ));
    assert!(out.contains("· 5 cases\n"));
    let first = run_id(&out);
    // Reverse the case file: the same five cases.
    let cases = std::fs::read_to_string(dir.join("cases.jsonl")).unwrap();
    let reversed: Vec<&str> = cases.lines().rev().collect();
    std::fs::write(dir.join("cases.jsonl"), reversed.join("\n") + "\n").unwrap();
    let o = oloproof(
        &dir,
        &["run", ".", "--sample", "5", "--seed", "3", "--json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("Sample: 5 of 13"));
    let second: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ids = |run: &str| {
        let o = oloproof(&dir, &["inspect", run]);
        let mut ids: Vec<String> = stdout(&o)
            .lines()
            .map(|l| l.split(':').next().unwrap().to_string())
            .collect();
        ids.sort();
        ids
    };
    let a = ids(&first);
    assert_eq!(a.len(), 5);
    assert_eq!(a, ids(second["run_id"].as_str().unwrap()));
    // The sample is recorded with the run's settings, and in its history line.
    let o = oloproof(&dir, &["history", "append", &first, "--file", "h.jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let line: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(dir.join("h.jsonl")).unwrap().trim()).unwrap();
    assert_eq!(line["sample"], serde_json::json!({"size": 5, "seed": 3}));
    assert_eq!(line["cases"], 5);
    // Another seed, another sample; `--seed` alone is refused.
    let other = oloproof(&dir, &["run", ".", "--sample", "5", "--seed", "4"]);
    assert_ne!(ids(&run_id(&stdout(&other))), a);
    let o = oloproof(&dir, &["run", ".", "--seed", "4"]);
    assert_eq!(o.status.code(), Some(2));
    let o = oloproof(&dir, &["run", ".", "--sample", "0"]);
    assert_eq!(o.status.code(), Some(2));
    insta::assert_snapshot!("run_sample_zero", transcript(&o, tmp.path()));
}
