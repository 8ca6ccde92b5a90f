//! The pipeline-stage evaluators through the real binary, on real pipeline runs (the Python
//! shim, host-side RRF, the stage caches):
//!
//! - `projects/pipeline_stages`: a system with a rewrite, two lanes (bm25, tri), a rerank and
//!   hops, each stage doing what its case scripts, so every value of the table can be worked
//!   out by hand (the derivations are beside the assertions). The summary table is a
//!   snapshot; the per-case verdicts pin the stage each criterion read.
//! - `projects/filter_exclusion`: seed 000 Part 5's worked example (five documents, four
//!   queries, a hard tenant/locale filter) with its `corpus:`: the false-exclusion rate is
//!   50 %, as is the standard Recall@10.

mod common;

use std::path::Path;

use common::*;
use serde_json::{json, Value};

/// The verdict of `criterion` on `case` in run `run` (`show --json`).
fn verdict(dir: &Path, run: &str, case: &str, criterion: &str) -> Value {
    let o = oloproof(dir, &["show", run, "--case", case, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let shown: Value = serde_json::from_slice(&o.stdout).unwrap();
    shown["verdicts"]
        .as_array()
        .unwrap_or_else(|| panic!("no verdicts in {shown}"))
        .iter()
        .find(|v| v["criterion"] == criterion)
        .unwrap_or_else(|| panic!("no {criterion} in {shown}"))
        .clone()
}

/// The score of a verdict (panics on any other verdict).
fn score(v: &Value) -> f64 {
    v["value"]
        .as_f64()
        .unwrap_or_else(|| panic!("not a score: {v}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn pipeline_evaluators_measure_each_stage_of_a_real_run() {
    let (tmp, dir) = project("crates/cli/tests/projects/pipeline_stages");
    let o = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!("pipeline_stages_run", transcript(&o, tmp.path()));
    assert_eq!(o.status.code(), Some(0), "{}", transcript(&o, tmp.path()));
    let run = run_id(&stdout(&o));
    let v = |case: &str, criterion: &str| verdict(&dir, &run, case, criterion);

    // fusion_gain. RRF (k = 60) of the four calls: g1 2/61, x1 1/62 + 1/61, g2 2/62, … so the
    // fused list is g1, x1, g2, …; the reranker moves g2 first. The raw question is `alpha`
    // itself (a rewrite query: its calls are cache hits).
    assert_eq!(score(&v("fusion_gain", "recall_at_2_fused")), 0.5);
    assert_eq!(
        score(&v("fusion_gain", "recall_at_2")),
        1.0,
        "g2, g1 after rerank"
    );
    let rerank = v("fusion_gain", "rerank_uplift_ndcg_at_3");
    let before = (1.0 + 1.0 / 4f64.log2()) / (1.0 + 1.0 / 3f64.log2());
    assert!(close(score(&rerank), 1.0 - before), "{rerank}");
    assert_eq!(
        score(&v("fusion_gain", "rerank_uplift_precision_at_1")),
        0.0
    );
    // Union of the top 2 of the rewrites' four lists holds g1 and g2; the raw question's own
    // two calls (alpha: bm25 [g1 x1 x2], tri [g1 x3 x4]) hold g1 only.
    let rewrite = v("fusion_gain", "rewrite_uplift_recall_at_2");
    assert_eq!(score(&rewrite), 0.5, "{rewrite}");
    assert_eq!(rewrite["detail"]["found_only_by_rewrites"], json!(["g2"]));
    assert_eq!(rewrite["detail"]["lists"], json!(4));
    assert_eq!(rewrite["detail"]["raw_lists"], json!(2));
    // A rewrite that returns the raw question alone adds nothing: exactly 0.
    assert_eq!(score(&v("two_hops", "rewrite_uplift_recall_at_2")), 0.0);

    // reranked_out: both lanes have g3 first, so does the fusion; the reranker puts x1, x2
    // first, g3 third: out of the context (top_k 2).
    assert_eq!(score(&v("reranked_out", "recall_at_2_fused")), 1.0);
    assert_eq!(score(&v("reranked_out", "recall_at_2")), 0.0);
    assert_eq!(
        v("reranked_out", "hit_rate_at_2_context")["status"],
        json!("fail")
    );
    assert!(close(
        score(&v("reranked_out", "rerank_uplift_mrr_at_3")),
        1.0 / 3.0 - 1.0
    ));
    assert_eq!(
        score(&v("reranked_out", "rerank_uplift_precision_at_1")),
        -1.0
    );
    assert_eq!(score(&v("reranked_out", "context_noise")), 1.0);

    // two_hops: bm25's call hopped [h1 x1] then [x2 h2].
    let hop1 = v("two_hops", "hop_recall_at_2_hop_1");
    assert_eq!(score(&hop1), 0.5);
    assert_eq!(hop1["detail"]["first_hop"], json!({"h1": 1, "h2": 2}));
    assert_eq!(hop1["detail"]["hops"], json!(2));
    assert_eq!(score(&v("two_hops", "hop_recall_at_2_cumulative")), 1.0);
    assert_eq!(
        v("fusion_gain", "hop_recall_at_2_hop_1")["reason"],
        json!("no_hops")
    );

    // rewrite_drift: the raw question `delta` finds g4 first in both lanes; the only rewrite
    // (`delta expanded`) has it third in tri, beyond k.
    let drift = v("rewrite_drift", "rewrite_uplift_recall_at_2");
    assert_eq!(score(&drift), -1.0, "{drift}");
    assert_eq!(drift["detail"]["found_only_by_raw_query"], json!(["g4"]));
    assert_eq!(score(&v("rewrite_drift", "recall_at_2_lane_bm25")), 0.0);

    // two_hops, fusion worse than a lane: bm25 [h1 h2 x1] and tri [x1 h2] fuse to x1
    // (1/63 + 1/61), h2 (2/62), h1 (1/61): the fused top 2 loses h1, which bm25 had.
    assert_eq!(score(&v("two_hops", "recall_at_2_lane_bm25")), 1.0);
    assert_eq!(
        score(&v("two_hops", "fusion_uplift_recall_at_2_vs_bm25")),
        -0.5
    );
    assert_eq!(
        score(&v("two_hops", "fusion_uplift_recall_at_2_vs_tri")),
        0.0
    );

    // unlabelled and bad_rerank: excluded and missing, never a zero.
    assert_eq!(
        v("unlabelled", "rerank_uplift_ndcg_at_3")["reason"],
        json!("no_relevance_labels")
    );
    let bad = v("bad_rerank", "recall_at_2_lane_bm25");
    assert_eq!(bad["status"], json!("missing"), "{bad}");
    assert!(
        bad["error"]
            .as_str()
            .unwrap()
            .contains("not-a-candidate was not among the candidates given to rerank"),
        "{bad}"
    );
}

/// `at: lane:dense` on a system declaring bm25 and tri: the run-start check of
/// `Evaluator::pipeline_needs` refuses it at the option, exit 2.
#[test]
fn the_stage_an_evaluator_names_must_be_declared() {
    let (tmp, dir) = project("crates/cli/tests/projects/pipeline_stages");
    let yaml = std::fs::read_to_string(dir.join("oloproof.yaml")).unwrap();
    let bad = yaml.replace("at: lane:tri}", "at: lane:dense}");
    assert_ne!(bad, yaml);
    std::fs::write(dir.join("oloproof.yaml"), bad).unwrap();
    let o = oloproof(&dir, &["run", "."]);
    let text = transcript(&o, tmp.path());
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("evaluators[3].at"), "{text}");
    assert!(text.contains("dense") && text.contains("bm25"), "{text}");
}

/// Seed 000 Part 5: q1 (gold d2, en-GB, under `locale = en-US`) and q3 (gold d3, tenant
/// globex, under `tenant = acme`) lose their only gold document to the filter, q2 and q4 keep
/// it: a false-exclusion rate of 50 %, and a standard Recall@10 of 50 % too.
#[test]
fn the_seed_false_exclusion_example_through_a_run() {
    let (tmp, dir) = project("crates/cli/tests/projects/filter_exclusion");
    let o = oloproof(&dir, &["run", ".", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", transcript(&o, tmp.path()));
    let summary: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rate = criterion(&summary, "filter_false_exclusion");
    assert_eq!(rate["value"], json!(0.5), "{rate}");
    assert_eq!(rate["passed"], json!(2));
    assert_eq!(rate["observed"], json!(4));
    assert_eq!(rate["interval_method"], json!("clopper_pearson"));
    assert_eq!(
        criterion(&summary, "filter_false_exclusion_documents")["value"],
        json!(0.5)
    );
    assert_eq!(criterion(&summary, "recall_at_10")["value"], json!(0.5));
    let run = summary["run_id"].as_str().unwrap().to_string();
    let q1 = verdict(&dir, &run, "q1", "filter_false_exclusion");
    assert_eq!(
        q1["detail"]["excluded_gold"],
        json!([{"doc_id": "d2", "failed": [r#"locale = "en-US""#]}])
    );
    let q2 = verdict(&dir, &run, "q2", "filter_false_exclusion");
    assert_eq!(q2["value"], json!(0.0));
    let o = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!("filter_exclusion_seed_run", transcript(&o, tmp.path()));
}
