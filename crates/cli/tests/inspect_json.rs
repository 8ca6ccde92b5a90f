//! `oloproof inspect ID --json`, which the Python API's `Run.cases()` reads: a run's every case
//! exactly as `show --case --json` prints it (case, trace, verdicts in evaluator order), and the
//! stored diagnosis or comparison exactly as `diagnose --json` / `compare --json` printed it.

mod common;

use common::*;
use serde_json::Value;

fn json(dir: &std::path::Path, args: &[&str], code: i32) -> Value {
    let o = oloproof(dir, args);
    assert_eq!(o.status.code(), Some(code), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn a_runs_cases_are_those_of_show_case() {
    let (_tmp, dir) = project("examples/support_rag");
    let summary = json(&dir, &["run", ".", "--json"], 0);
    let run = summary["run_id"].as_str().unwrap();
    let all = json(&dir, &["inspect", run, "--json"], 0);
    assert_eq!(all["run_id"], run);
    let cases = all["cases"].as_array().unwrap();
    let file = std::fs::read_to_string(dir.join("cases.jsonl")).unwrap();
    let ids: Vec<Value> = file
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].clone())
        .collect();
    let listed: Vec<Value> = cases.iter().map(|c| c["case"]["id"].clone()).collect();
    assert_eq!(listed, ids, "every case, in the case file's order");
    for case in cases {
        let id = case["case"]["id"].as_str().unwrap();
        let mut one = json(&dir, &["show", run, "--case", id, "--json"], 0);
        one.as_object_mut().unwrap().shift_remove("run_id");
        assert_eq!(case, &one, "case {id}");
    }
    let money_back = &cases[1];
    let criteria: Vec<&str> = money_back["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["criterion"].as_str().unwrap())
        .collect();
    assert_eq!(
        criteria,
        [
            "answer_correct",
            "hit_rate_at_2",
            "recall_at_2",
            "ndcg_at_6",
            "citations_valid"
        ]
    );
    assert_eq!(money_back["verdicts"][0]["status"], "fail");
}

#[test]
fn a_diagnosis_and_a_comparison_are_their_stored_records() {
    let (_tmp, dir) = project("examples/support_rag");
    let base = json(&dir, &["run", ".", "--json"], 0);
    let base = base["run_id"].as_str().unwrap();
    let diagnosis = json(
        &dir,
        &[
            "diagnose",
            base,
            "--intervention",
            "gold-context",
            "--criterion",
            "answer_correct",
            "--json",
        ],
        0,
    );
    let id = diagnosis["id"].as_str().unwrap();
    assert_eq!(json(&dir, &["inspect", id, "--json"], 0), diagnosis);

    let cand = json(
        &dir,
        &["run", ".", "--set", "system.rag.top_k=3", "--json"],
        0,
    );
    let cand = cand["run_id"].as_str().unwrap();
    let comparison = json(
        &dir,
        &["compare", cand, base, "--policy", "compare.yaml", "--json"],
        3,
    );
    let id = comparison["id"].as_str().unwrap();
    assert_eq!(json(&dir, &["inspect", id, "--json"], 0), comparison);

    let o = oloproof(&dir, &["inspect", "sha256:0000", "--json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no diagnosis or comparison `sha256:0000`"));
}
