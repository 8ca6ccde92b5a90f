//! The bundled example, end to end through the real binary: the guide's numbers, the cache
//! lines of a first run, an identical re-run and a larger token budget, and a case trace.

mod common;

use common::*;

#[test]
fn support_rag_example_table_and_caches() {
    let (tmp, dir) = project("examples/support_rag");
    let first = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!("example_first_run", transcript(&first, tmp.path()));
    let out = stdout(&first);
    assert!(out.contains(
        "│ answer_correct  │ 69.2%  │ [38.5%, 91.0%]  │ 9 / 13 observed · 0 missing · 0 excluded"
    ));
    assert!(out.contains("Cache: execution 0 hit/13 miss; judgment 0 hit/65 miss"));
    assert!(out.contains("Stages: retrieve 0 hit/13 miss; generate 0 hit/13 miss"));

    let again = oloproof(&dir, &["run", "."]);
    assert_eq!(again.status.code(), Some(0));
    assert!(
        stdout(&again).contains("Cache: execution 13 hit/0 miss; judgment 65 hit/0 miss"),
        "{}",
        stdout(&again)
    );
    assert!(stdout(&again).contains("Stages: retrieve 0 hit/0 miss; generate 0 hit/0 miss"));

    // A larger budget re-uses every retrieval and regenerates only the six truncated contexts.
    let wider = oloproof(&dir, &["run", ".", "--set", "system.rag.token_budget=120"]);
    assert_eq!(wider.status.code(), Some(0), "{}", stderr(&wider));
    let wider_out = stdout(&wider);
    assert!(
        wider_out.contains("Cache: execution 0 hit/13 miss; judgment 0 hit/65 miss"),
        "{wider_out}"
    );
    assert!(
        wider_out.contains("Stages: retrieve 13 hit/0 miss; generate 7 hit/6 miss"),
        "{wider_out}"
    );
    assert!(
        wider_out.contains("│ answer_correct  │ 69.2%"),
        "no verdict changes with budget 120"
    );

    // `--no-cache` bypasses every layer.
    let fresh = oloproof(&dir, &["run", ".", "--no-cache"]);
    assert!(stdout(&fresh).contains("Stages: retrieve 0 hit/13 miss; generate 0 hit/13 miss"));

    let id = run_id(&out);
    let case = oloproof(&dir, &["show", &id, "--case", "refund_review"]);
    insta::assert_snapshot!("example_case_refund_review", transcript(&case, tmp.path()));

    let runs = oloproof(&dir, &["runs", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 4);
    assert_eq!(listed[3]["id"], serde_json::json!(id), "newest first");

    let unknown = oloproof(&dir, &["show", &id, "--case", "refund_reveiw"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("did you mean `refund_review`?"));
}

#[test]
fn json_summary() {
    let (_tmp, dir) = project("examples/support_rag");
    let o = oloproof(&dir, &["run", "--config", "oloproof.yaml", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ndcg = s["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["criterion"] == "ndcg_at_6")
        .unwrap();
    let expected = (10.0 + 2.0 / 3f64.log2()) / 13.0;
    assert!((ndcg["value"].as_f64().unwrap() - expected).abs() < 1e-12);
    assert_eq!(ndcg["observed"], 13);
    assert_eq!(s["bootstrap_seed"], 20260916);
    assert_eq!(s["bootstrap_resamples"], 10000);
    let slices = s["slices"].as_array().unwrap();
    let integrations = slices
        .iter()
        .find(|x| x["value"] == "integrations")
        .unwrap();
    assert_eq!(integrations["below_min_support"], true);
}

/// The README's set-up command names the project folder relative to the caller's directory;
/// the Python workers start inside that folder and must still find the shim.
#[test]
fn project_folder_given_relative_to_the_caller() {
    let (tmp, _dir) = project("examples/support_rag");
    let o = oloproof(tmp.path(), &["run", "project", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(summary["done"], 13);
}
