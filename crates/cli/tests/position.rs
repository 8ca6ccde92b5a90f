//! The lost-in-the-middle harness on the bundled example: the extractive generator answers from
//! its first passage, so the gold passage first recovers most cases and last the fewest.

mod common;

use common::*;

#[test]
fn gold_position_changes_the_answer() {
    let (tmp, dir) = project("examples/support_rag");
    let run = oloproof(&dir, &["run", "."]);
    let id = run_id(&stdout(&run));
    let o = oloproof(
        &dir,
        &[
            "lost-in-the-middle",
            &id,
            "--criterion",
            "answer_correct",
            "--distractors",
            "3",
        ],
    );
    insta::assert_snapshot!("lost_in_the_middle", transcript(&o, tmp.path()));
    let out = stdout(&o);
    assert!(out.contains("first    92.3%"), "{out}");
    assert!(out.contains("last     30.8%"), "{out}");
    // Three child runs, no retrieval call: every candidate came from the recorded retrieval.
    let runs: serde_json::Value =
        serde_json::from_slice(&oloproof(&dir, &["runs", "--json"]).stdout).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 4);
    let bad = oloproof(
        &dir,
        &["lost-in-the-middle", &id, "--criterion", "ndcg_at_6"],
    );
    assert_eq!(bad.status.code(), Some(2));
}
