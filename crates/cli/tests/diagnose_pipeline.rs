//! `oloproof diagnose` on a pipeline system (`tests/diagnose_pipeline/`: a rewrite, two lanes
//! fused by the host's RRF, a tenant filter, a lexical reranker, hops): the gold-context labels
//! of the pipeline's stages, each replayed under the intervention that should confirm it with
//! its control, the confirmation that fails (a lane that had the evidence, reranked out again),
//! and the stage cache use that shows which replays call no retrieval.

mod common;

use std::process::Output;

use common::*;

fn diagnosis_id(text: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix("Diagnosis "))
        .expect("a diagnosis id")
        .trim()
        .to_string()
}

fn diagnose(dir: &std::path::Path, run_id: &str, intervention: &str) -> Output {
    oloproof(
        dir,
        &[
            "diagnose",
            run_id,
            "--intervention",
            intervention,
            "--criterion",
            "answer_correct",
        ],
    )
}

#[test]
fn pipeline_labels_confirmed_by_their_replays() {
    let (tmp, dir) = project("crates/cli/tests/diagnose_pipeline");
    let run = oloproof(&dir, &["run", "."]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let run_id = run_id(&stdout(&run));

    let gold = diagnose(&dir, &run_id, "gold-context");
    insta::assert_snapshot!("pipeline_gold_context", transcript(&gold, tmp.path()));
    let out = stdout(&gold);
    assert!(
        out.contains("Recovered under gold context: 6 of 6"),
        "{out}"
    );
    for line in [
        "REWRITE_DRIFT: 1 of 6",
        "HOP_MISS: 1 of 6",
        "FUSION_LOSS: 2 of 6",
        "RERANKED_OUT: 1 of 6",
        // `filtered`: the host's check of the predicates on the gold document (`corpus:`).
        "FILTERED_OUT: 1 of 6",
    ] {
        assert!(out.contains(line), "{line}: {out}");
    }
    let gold_id = diagnosis_id(&out);
    let cases = oloproof(&dir, &["inspect", &gold_id]);
    let cases_out = stdout(&cases);
    insta::assert_snapshot!("pipeline_inspect_gold_context", cases_out);
    assert!(cases_out.contains("fusion_ok: FUSION_LOSS (bm25), relevant_lost_in_fusion"));
    assert!(cases_out.contains("hops: HOP_MISS (hop 2; missing h2), hop_found_no_new_relevant"));
    assert!(cases_out.contains(
        "drift: REWRITE_DRIFT (when do reimbursements arrive), raw_question_retrieves_relevant"
    ));

    // The rerank's recorded input replayed: no retrieval call, no rerank.
    let no_rerank = diagnose(&dir, &run_id, "no-rerank");
    insta::assert_snapshot!("pipeline_no_rerank", transcript(&no_rerank, tmp.path()));
    let out = stdout(&no_rerank);
    assert!(out.contains("Confirmed under no-rerank: 1 of 1 RERANKED_OUT cases also recovered"));
    assert!(
        out.contains("Stages: retrieve 0 hit/0 miss; generate"),
        "{out}"
    );
    assert!(out.contains(&format!("Labels from gold context (diagnosis {gold_id})")));

    // bm25's recorded ranking replayed, then reranked: one FUSION_LOSS recovers, the other is
    // demoted again by the reranker, and is reported as not confirmed.
    let lane = diagnose(&dir, &run_id, "lane=bm25");
    insta::assert_snapshot!("pipeline_lane", transcript(&lane, tmp.path()));
    let out = stdout(&lane);
    assert!(out.contains("Confirmed under lane=bm25: 1 of 2 FUSION_LOSS cases also recovered"));
    assert!(
        out.contains("Not confirmed: 1 FUSION_LOSS case: fusion_unconfirmed (not recovered)"),
        "{out}"
    );
    assert!(
        out.contains("Stages: retrieve 0 hit/0 miss; rerank 0 hit/6 miss;"),
        "{out}"
    );
    let lane_cases = oloproof(&dir, &["inspect", &diagnosis_id(&out)]);
    insta::assert_snapshot!("pipeline_inspect_lane", stdout(&lane_cases));
    // The other lane had no relevant evidence: it targets no case.
    let tri = stdout(&diagnose(&dir, &run_id, "lane=tri"));
    assert!(
        tri.contains("Confirmed under lane=tri: 0 of 0 FUSION_LOSS cases"),
        "{tri}"
    );

    // The raw question's retrievals were recorded by the gold-context control: all cache hits.
    let raw = diagnose(&dir, &run_id, "raw-query");
    insta::assert_snapshot!("pipeline_raw_query", transcript(&raw, tmp.path()));
    let out = stdout(&raw);
    assert!(out.contains("Confirmed under raw-query: 1 of 1 REWRITE_DRIFT cases also recovered"));
    assert!(out.contains("Stages: retrieve 12 hit/0 miss;"), "{out}");

    // New retrievals with the filters skipped (their own cache keys), the rewrites cached.
    let no_filter = diagnose(&dir, &run_id, "no-filter");
    insta::assert_snapshot!("pipeline_no_filter", transcript(&no_filter, tmp.path()));
    let out = stdout(&no_filter);
    assert!(out.contains("Recovered under no-filter: 1 of 6"), "{out}");
    assert!(
        out.contains("Stages: rewrite 6 hit/0 miss; retrieve 0 hit/12 miss;"),
        "{out}"
    );
    // Again: every skip-filter retrieval is now cached.
    let again = stdout(&diagnose(&dir, &run_id, "no-filter"));
    assert!(again.contains("retrieve 12 hit/0 miss;"), "{again}");
}

#[test]
fn pipeline_interventions_a_system_cannot_take() {
    let (tmp, dir) = project("crates/cli/tests/diagnose_pipeline");
    let run = oloproof(&dir, &["run", "."]);
    let pipeline_run = run_id(&stdout(&run));
    let typo = diagnose(&dir, &pipeline_run, "lane=bm2");
    insta::assert_snapshot!("pipeline_unknown_lane", transcript(&typo, tmp.path()));
    assert_eq!(typo.status.code(), Some(2));
    let empty = diagnose(&dir, &pipeline_run, "lane=");
    assert_eq!(empty.status.code(), Some(2));
    assert!(stderr(&empty).contains("`lane=NAME` needs the lane's name"));
    let unknown = diagnose(&dir, &pipeline_run, "no-such");
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("expected one of gold-context, top-k"));

    // A two-stage system has no rerank, rewrite or lanes to intervene on.
    let (tmp, dir) = project("examples/support_rag");
    let run = oloproof(&dir, &["run", "."]);
    let two_stage = run_id(&stdout(&run));
    let no_rerank = diagnose(&dir, &two_stage, "no-rerank");
    insta::assert_snapshot!(
        "pipeline_no_rerank_two_stage",
        transcript(&no_rerank, tmp.path())
    );
    assert_eq!(no_rerank.status.code(), Some(2));
    let raw = diagnose(&dir, &two_stage, "raw-query");
    assert_eq!(raw.status.code(), Some(2));
    assert!(stderr(&raw).contains("no `rewrite`"), "{}", stderr(&raw));
    let lane = diagnose(&dir, &two_stage, "lane=dense");
    assert_eq!(lane.status.code(), Some(2));
    assert!(
        stderr(&lane).contains("(declared lanes: none)"),
        "{}",
        stderr(&lane)
    );
}
