//! The guide's diagnosis story on the bundled example: gold context labels the four failures,
//! the top-k replay recovers none without a retrieval call, and inspect lists the cases.

mod common;

use common::*;

fn diagnosis_id(text: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix("Diagnosis "))
        .expect("a diagnosis id")
        .trim()
        .to_string()
}

#[test]
fn gold_context_then_top_k_replay() {
    let (tmp, dir) = project("examples/support_rag");
    let run = oloproof(&dir, &["run", "."]);
    assert_eq!(run.status.code(), Some(0));
    let run_id = run_id(&stdout(&run));

    let gold = oloproof(
        &dir,
        &[
            "diagnose",
            &run_id,
            "--intervention",
            "gold-context",
            "--criterion",
            "answer_correct",
        ],
    );
    insta::assert_snapshot!("diagnose_gold_context", transcript(&gold, tmp.path()));
    let gold_out = stdout(&gold);
    assert!(gold_out.contains("RETRIEVAL_MISS: 1 of 4, recovered"));
    assert!(gold_out.contains("CONTEXT_ASSEMBLY_LOSS: 2 of 4, recovered"));
    assert!(gold_out.contains("GENERATION_FAILURE: 1 of 4, still failed with the gold context"));
    assert!(gold_out.contains("Control: 0 of 4 passed"));
    let gold_id = diagnosis_id(&gold_out);

    // The same diagnosis twice has the same id.
    let again = oloproof(
        &dir,
        &[
            "diagnose",
            &run_id,
            "--intervention",
            "gold-context",
            "--criterion",
            "answer_correct",
        ],
    );
    assert_eq!(diagnosis_id(&stdout(&again)), gold_id);

    let cases = oloproof(&dir, &["inspect", &gold_id]);
    insta::assert_snapshot!("inspect_gold_context", stdout(&cases));

    let topk = oloproof(
        &dir,
        &[
            "diagnose",
            &run_id,
            "--intervention",
            "top-k",
            "--top-k",
            "4",
            "--criterion",
            "answer_correct",
        ],
    );
    insta::assert_snapshot!("diagnose_top_k", transcript(&topk, tmp.path()));
    let topk_out = stdout(&topk);
    assert!(topk_out.contains("Recovered under top-k 4: 0 of 4"));
    assert!(
        topk_out.contains("Stages: retrieve 0 hit/0 miss;"),
        "no retrieval call: {topk_out}"
    );
    assert!(topk_out.contains(&format!(
        "Labels from gold context (diagnosis {gold_id}): 3 of 4 recovered"
    )));

    // Child runs are ordinary runs in the store, marked with their intervention.
    let runs = oloproof(&dir, &["runs"]);
    assert!(
        stdout(&runs).contains("gold_context of run_"),
        "{}",
        stdout(&runs)
    );
}

#[test]
fn reranker_replay_and_usage_errors() {
    let (_tmp, dir) = project("examples/support_rag");
    let run = oloproof(&dir, &["run", "."]);
    let run_id = run_id(&stdout(&run));
    let reranked = oloproof(
        &dir,
        &[
            "diagnose",
            &run_id,
            "--intervention",
            "reranker",
            "--reranker",
            "rerankers:shortest_first",
            "--criterion",
            "answer_correct",
        ],
    );
    assert_eq!(reranked.status.code(), Some(0), "{}", stderr(&reranked));
    let out = stdout(&reranked);
    assert!(
        out.contains("Recovered under reranker rerankers:shortest_first: 1 of 4"),
        "{out}"
    );
    assert!(
        out.contains("UNLABELLED: 4 of 4"),
        "no gold-context diagnosis yet: {out}"
    );

    let typo = oloproof(
        &dir,
        &[
            "diagnose",
            &run_id,
            "--intervention",
            "gold-context",
            "--criterion",
            "answer_corect",
        ],
    );
    assert_eq!(typo.status.code(), Some(2));
    assert!(stderr(&typo).contains("did you mean `answer_correct`?"));
    let score = oloproof(
        &dir,
        &[
            "diagnose",
            &run_id,
            "--intervention",
            "gold-context",
            "--criterion",
            "ndcg_at_6",
        ],
    );
    assert_eq!(score.status.code(), Some(2));
    let no_k = oloproof(
        &dir,
        &[
            "diagnose",
            &run_id,
            "--intervention",
            "top-k",
            "--criterion",
            "answer_correct",
        ],
    );
    assert_eq!(no_k.status.code(), Some(2));
    assert!(stderr(&no_k).contains("needs --top-k N"));
}
