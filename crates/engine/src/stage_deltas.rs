//! Per-stage deltas of a comparison (`oloproof compare` of two pipeline runs): each stage's
//! latency p50/p95 in both runs over the shared cases that timed it in both, and recall@k of
//! each ranking stage (every lane, the fused list, the reranked or final list) in both runs.
//! Descriptive lines beside the criteria, never decisions (latency guardrails are decisions of
//! the policy).
//!
//! Computed only when both runs recorded a pipeline (a trace with `pipeline`), so comparisons
//! of two-stage runs are what they were, id included.

use std::collections::{BTreeSet, HashMap};

use oloproof_core::case::Case;
use oloproof_core::comparison::{StageDeltas, StageLatencyLine, StageRecallLine};
use oloproof_core::passage::{Passage, Retrieval};
use oloproof_core::run::LoadedRun;
use oloproof_core::trace::{Trace, LATENCY_STAGES};
use oloproof_metrics::ranking::query;

use crate::evaluators::ranking::{judge_ranking, RelevanceUnit};

fn has_pipeline(run: &LoadedRun) -> bool {
    run.cases
        .iter()
        .any(|(_, t, _)| t.as_ref().is_some_and(|t| t.pipeline.is_some()))
}

/// The ranked list a trace has at `stage` (`lane:NAME`, `fused`, `reranked`, `final`).
fn list_at<'a>(trace: &'a Trace, stage: &str) -> Option<&'a [Passage]> {
    let pipeline = trace.pipeline.as_ref();
    let last = || trace.retrieval.as_ref().map(|r| r.candidates.as_slice());
    match stage {
        "fused" => pipeline?.fused.as_ref().map(|f| f.candidates.as_slice()),
        "reranked" => pipeline?.pre_rerank.as_ref().and(last()),
        "final" => last(),
        lane => pipeline?
            .lanes
            .get(lane.strip_prefix("lane:")?)
            .map(Vec::as_slice),
    }
}

/// Recall@k of a list against the case's labels (`None`: no relevance labels or no relevant
/// document, as the `recall` evaluator excludes them).
fn recall_of(case: &Case, list: &[Passage], k: usize) -> Option<f64> {
    let retrieval = Retrieval::new(None, list.len(), list.to_vec());
    let judged = judge_ranking(case, &retrieval, RelevanceUnit::Document).ok()?;
    query::recall(&judged.gains, judged.num_relevant(), k)
}

/// The stage deltas of `candidate` against `baseline`, paired by case id over the cases
/// finished without an error in both; `None` unless both runs recorded a pipeline.
pub fn stage_deltas(candidate: &LoadedRun, baseline: &LoadedRun) -> Option<StageDeltas> {
    if !has_pipeline(candidate) || !has_pipeline(baseline) {
        return None;
    }
    let finished = |t: &Option<Trace>| t.as_ref().filter(|t| t.error.is_none()).cloned();
    let by_id: HashMap<&str, Trace> = candidate
        .cases
        .iter()
        .filter_map(|(c, t, _)| finished(t).map(|t| (c.id.as_str(), t)))
        .collect();
    let pairs: Vec<(&Case, Trace, &Trace)> = baseline
        .cases
        .iter()
        .filter_map(|(c, t, _)| Some((c, finished(t)?, by_id.get(c.id.as_str())?)))
        .collect();

    let mut latency = Vec::new();
    for stage in LATENCY_STAGES {
        let (b, c): (Vec<f64>, Vec<f64>) = pairs
            .iter()
            .filter_map(|(_, b, c)| Some((b.latency_ms.get(stage)?, c.latency_ms.get(stage)?)))
            .unzip();
        // Recorded latencies are finite and non-negative (checked when read): the quantiles
        // of a non-empty sample exist; a stage with none is left out, never shown as 0.
        let p = |v: &[f64]| -> Option<[f64; 2]> {
            Some([
                oloproof_stats::quantile(v, 0.5).ok()?,
                oloproof_stats::quantile(v, 0.95).ok()?,
            ])
        };
        if let (Some(baseline_ms), Some(candidate_ms)) = (p(&b), p(&c)) {
            latency.push(StageLatencyLine {
                stage: stage.to_string(),
                paired: b.len() as u64,
                baseline_ms,
                candidate_ms,
            });
        }
    }

    let k = baseline.settings.system.top_k;
    let lanes: BTreeSet<&String> = pairs
        .iter()
        .flat_map(|(_, b, c)| [b, *c])
        .filter_map(|t| t.pipeline.as_ref())
        .flat_map(|p| p.lanes.keys())
        .collect();
    let mut stages: Vec<String> = lanes.iter().map(|l| format!("lane:{l}")).collect();
    stages.push("fused".into());
    let reranked = pairs.iter().any(|(_, b, c)| {
        [b, *c]
            .iter()
            .any(|t| t.pipeline.as_ref().is_some_and(|p| p.pre_rerank.is_some()))
    });
    stages.push(if reranked { "reranked" } else { "final" }.into());
    let mut recall = Vec::new();
    for stage in stages {
        let (b, c): (Vec<f64>, Vec<f64>) = pairs
            .iter()
            .filter_map(|(case, b, c)| {
                let rb = recall_of(case, list_at(b, &stage)?, k)?;
                let rc = recall_of(case, list_at(c, &stage)?, k)?;
                Some((rb, rc))
            })
            .unzip();
        if b.is_empty() {
            continue;
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        recall.push(StageRecallLine {
            stage,
            k,
            paired: b.len() as u64,
            baseline: mean(&b),
            candidate: mean(&c),
        });
    }
    Some(StageDeltas { latency, recall })
}
