//! What one pipeline stage adds, as a paired per-case difference (seed 000 Part 4):
//!
//! | type | criterion | score of a case |
//! | --- | --- | --- |
//! | `rerank_uplift` | `rerank_uplift_<measure>_at_<k>` | metric(after rerank) − metric(before rerank) |
//! | `fusion_uplift` | `fusion_uplift_<measure>_at_<k>_vs_<lane>` | metric(fused) − metric(lane) |
//! | `rewrite_uplift` | `rewrite_uplift_recall_at_<k>` | union recall@k of the rewrites − the raw question's recall@k |
//!
//! Each score lies in [−1, 1] and is summarised as a mean with its percentile bootstrap
//! interval over the cases (a paired interval: both sides of the difference come from the same
//! case). Every case with relevance labels counts, including the ones where the stage changed
//! nothing (their score is 0): the seed's "over all cases", so that a reranker that helps a few
//! cases and hurts none is not measured on the few alone.
//!
//! `rerank_uplift` compares the rerank stage's input (`pipeline.pre_rerank`) with its output
//! (the final list): identical candidate sets, as the seed asks ("avec et sans reranker sur des
//! ensembles de candidats identiques"). `fusion_uplift` compares the fused list with one lane's
//! own ranking: a negative mean is a fusion worse than one of its inputs. `rewrite_uplift`
//! compares the union of the top k of every rewrite's retrieval (each rewrite query and lane one
//! list; seed 000 "génération multi-query : union du Recall@k obtenu avec N réécritures par
//! rapport à une requête unique") with the union of the top k of the raw question's own calls
//! (`pipeline.raw_query_lanes`, one per lane, or `pipeline.raw_query` without lanes; the run
//! retrieves them only because this evaluator asks for it). Both sides have the same shape, so
//! a rewrite that returns the raw question alone scores exactly 0.
//!
//! Excluded: `no_rerank_stage` (no rerank ran), `no_fusion` (nothing was fused), `no_lane`
//! (the trace has no such lane), `no_rewrite_stage` (no rewrite ran), `no_raw_query` (a trace
//! recorded without the raw question's retrieval), and the labels' reasons
//! (`no_relevance_labels`, `no_relevant_documents`, `relevant_without_chunk_id`). A case whose
//! stage failed is `missing`.

use std::collections::BTreeSet;

use oloproof_core::case::Case;
use oloproof_core::config::EvaluatorEntry;
use oloproof_core::passage::Passage;
use oloproof_core::pipeline::RankingStage;
use oloproof_core::source::SourceError;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use oloproof_metrics::ranking::query;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::ranking::{ranking_at, JudgedRanking, Labels, RelevanceUnit};
use super::{excluded, verdict, EntryParser, Evaluator, EvaluatorSpec, PipelineNeed, SummaryKind};
use crate::judged::JudgeEnv;

/// The ranking metric a difference is taken of.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum UpliftMeasure {
    /// nDCG at k (graded linear gains, trec_eval `ndcg_cut`): ΔnDCG@k.
    #[default]
    Ndcg,
    /// Reciprocal rank of the first relevant unit within k: ΔMRR@k.
    Mrr,
    /// Whether position 1 is relevant (k is 1): ΔP@1.
    #[serde(rename = "precision_at_1")]
    PrecisionAt1,
    /// Recall at k: ΔRecall@k.
    Recall,
    /// Precision at k: ΔP@k.
    Precision,
}

impl UpliftMeasure {
    fn name(self) -> &'static str {
        match self {
            UpliftMeasure::Ndcg => "ndcg",
            UpliftMeasure::Mrr => "mrr",
            UpliftMeasure::PrecisionAt1 => "precision",
            UpliftMeasure::Recall => "recall",
            UpliftMeasure::Precision => "precision",
        }
    }

    /// The measure of a judged ranking at `k` (`None`: undefined, no relevant unit).
    fn of(self, judged: &JudgedRanking, k: usize) -> Option<f64> {
        match self {
            UpliftMeasure::Ndcg => query::ndcg_cut(&judged.gains, &judged.judged, k),
            UpliftMeasure::Mrr => Some(query::reciprocal_rank(&judged.gains, k)),
            UpliftMeasure::PrecisionAt1 => Some(query::precision(&judged.gains, 1)),
            UpliftMeasure::Recall => query::recall(&judged.gains, judged.num_relevant(), k),
            UpliftMeasure::Precision => Some(query::precision(&judged.gains, k)),
        }
    }
}

/// Options of `rerank_uplift`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RerankUpliftOptions {
    /// Criterion name (default `rerank_uplift_<measure>_at_<k>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// Rank cutoff, the depth the application really uses (at least 1; required except for
    /// `precision_at_1`, where it is 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<usize>,
    /// The metric compared (default `ndcg`).
    #[serde(default)]
    pub measure: UpliftMeasure,
    /// What counts as one unit.
    #[serde(default)]
    pub relevance_unit: RelevanceUnit,
}

/// Options of `fusion_uplift`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FusionUpliftOptions {
    /// Criterion name (default `fusion_uplift_<measure>_at_<k>_vs_<lane>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// Rank cutoff (at least 1; required except for `precision_at_1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<usize>,
    /// The lane the fused list is compared with (one the system declares).
    pub lane: String,
    /// The metric compared (default `ndcg`).
    #[serde(default)]
    pub measure: UpliftMeasure,
    /// What counts as one unit.
    #[serde(default)]
    pub relevance_unit: RelevanceUnit,
}

/// Options of `rewrite_uplift`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RewriteUpliftOptions {
    /// Criterion name (default `rewrite_uplift_recall_at_<k>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// Rank cutoff of every list (at least 1).
    pub k: usize,
    /// What counts as one unit.
    #[serde(default)]
    pub relevance_unit: RelevanceUnit,
}

/// `rerank_uplift`: metric(after rerank) − metric(before rerank) per case.
pub(crate) const RERANK_UPLIFT: EvaluatorSpec = EvaluatorSpec {
    name: "rerank_uplift",
    build: |p| {
        let options: RerankUpliftOptions = p.options()?;
        let k = cutoff(p, options.k, options.measure)?;
        Ok(Box::new(Uplift {
            criterion: options
                .criterion
                .clone()
                .unwrap_or_else(|| format!("rerank_uplift_{}_at_{k}", options.measure.name())),
            identity: p.identity(&options),
            k,
            measure: options.measure,
            unit: options.relevance_unit,
            compare: Compared::Rerank,
        }))
    },
};

/// `fusion_uplift`: metric(fused) − metric(lane) per case.
pub(crate) const FUSION_UPLIFT: EvaluatorSpec = EvaluatorSpec {
    name: "fusion_uplift",
    build: |p| {
        let options: FusionUpliftOptions = p.options()?;
        let k = cutoff(p, options.k, options.measure)?;
        if options.lane.is_empty() {
            return Err(p.error("lane", "`lane` must name a lane"));
        }
        Ok(Box::new(Uplift {
            criterion: options.criterion.clone().unwrap_or_else(|| {
                format!(
                    "fusion_uplift_{}_at_{k}_vs_{}",
                    options.measure.name(),
                    options.lane
                )
            }),
            identity: p.identity(&options),
            k,
            measure: options.measure,
            unit: options.relevance_unit,
            compare: Compared::Fusion(options.lane.clone()),
        }))
    },
};

/// `rewrite_uplift`: union recall@k over the rewrites − the raw question's recall@k.
pub(crate) const REWRITE_UPLIFT: EvaluatorSpec = EvaluatorSpec {
    name: "rewrite_uplift",
    build: |p| {
        let options: RewriteUpliftOptions = p.options()?;
        if options.k == 0 {
            return Err(p.error("k", "`k` must be at least 1"));
        }
        Ok(Box::new(Uplift {
            criterion: options
                .criterion
                .clone()
                .unwrap_or_else(|| format!("rewrite_uplift_recall_at_{}", options.k)),
            identity: p.identity(&options),
            k: options.k,
            measure: UpliftMeasure::Recall,
            unit: options.relevance_unit,
            compare: Compared::Rewrite,
        }))
    },
};

/// The cutoff of an uplift: `k` (at least 1), 1 for `precision_at_1`.
fn cutoff(
    p: &EntryParser<'_>,
    k: Option<usize>,
    measure: UpliftMeasure,
) -> Result<usize, SourceError> {
    match (measure, k) {
        (UpliftMeasure::PrecisionAt1, None | Some(1)) => Ok(1),
        (UpliftMeasure::PrecisionAt1, Some(_)) => Err(p.error(
            "k",
            "`measure: precision_at_1` reads position 1 only: remove `k` (or use `measure: precision`)",
        )),
        (_, Some(0)) => Err(p.error("k", "`k` must be at least 1")),
        (_, Some(k)) => Ok(k),
        (m, None) => {
            let mut err = p.error(
                "",
                format!("`k` is required with `measure: {}`", measure_label(m)),
            );
            err.help = Some("add `k:`, the depth the application uses (e.g. `k: 4`)".into());
            Err(err)
        }
    }
}

fn measure_label(m: UpliftMeasure) -> &'static str {
    match m {
        UpliftMeasure::Ndcg => "ndcg",
        UpliftMeasure::Mrr => "mrr",
        UpliftMeasure::PrecisionAt1 => "precision_at_1",
        UpliftMeasure::Recall => "recall",
        UpliftMeasure::Precision => "precision",
    }
}

/// Which two lists an uplift compares.
#[derive(Debug, Clone, PartialEq)]
enum Compared {
    /// After rerank against before.
    Rerank,
    /// The fused list against this lane.
    Fusion(String),
    /// The rewrites' union against the raw question.
    Rewrite,
}

struct Uplift {
    criterion: String,
    identity: EvaluatorEntry,
    k: usize,
    measure: UpliftMeasure,
    unit: RelevanceUnit,
    compare: Compared,
}

impl Uplift {
    /// The verdict of `after − before`, each the measure of a judged ranking.
    fn difference(
        &self,
        labels: &Labels,
        after: &[Passage],
        before: &[Passage],
    ) -> CriterionVerdict {
        let (a, b) = (labels.rank(after), labels.rank(before));
        let (Some(va), Some(vb)) = (self.measure.of(&a, self.k), self.measure.of(&b, self.k))
        else {
            return excluded(&self.criterion, "no_relevant_documents");
        };
        verdict(
            &self.criterion,
            Verdict::score(va - vb),
            json!({"after": va, "before": vb}),
        )
    }

    fn rewrite(&self, case_labels: &Labels, trace: &Trace) -> CriterionVerdict {
        let Some(pipeline) = &trace.pipeline else {
            return excluded(&self.criterion, "no_rewrite_stage");
        };
        let Some(rewrite) = &pipeline.rewrite else {
            return excluded(&self.criterion, "no_rewrite_stage");
        };
        let Some(raw) = &pipeline.raw_query else {
            return excluded(&self.criterion, "no_raw_query");
        };
        // The union of the top k of every list a rewrite query retrieved (each lane apart).
        let mut union: Vec<Passage> = Vec::new();
        let mut keys = BTreeSet::new();
        let mut lists = 0;
        for call in pipeline.retrievals.iter().filter(|r| {
            r.query
                .as_ref()
                .is_some_and(|q| rewrite.queries.contains(q))
        }) {
            lists += 1;
            for p in top_units(case_labels, &call.retrieval.candidates, self.k) {
                if keys.insert(case_labels.key(p)) {
                    union.push(p.clone());
                }
            }
        }
        // The raw question's side, the same shape: each lane's list apart when there are
        // several (the one list otherwise, or the fused list of a trace recorded without them).
        let raw_lists: Vec<&[Passage]> = if pipeline.raw_query_lanes.is_empty() {
            vec![&raw.candidates]
        } else {
            pipeline
                .raw_query_lanes
                .iter()
                .map(|r| r.retrieval.candidates.as_slice())
                .collect()
        };
        let raw_top: Vec<Passage> = raw_lists
            .iter()
            .flat_map(|list| top_units(case_labels, list, self.k))
            .cloned()
            .collect();
        let found = |list: &[Passage]| -> BTreeSet<String> {
            list.iter()
                .filter(|p| case_labels.grade(p) >= 1.0)
                .map(|p| case_labels.key(p))
                .collect()
        };
        let (by_rewrites, by_raw) = (found(&union), found(&raw_top));
        let relevant = case_labels.relevant().len();
        // Recall of a set: every unit of it is within the cutoff.
        let recall = |n: usize| n as f64 / relevant as f64;
        let (ur, rr) = (recall(by_rewrites.len()), recall(by_raw.len()));
        let only = |a: &BTreeSet<String>, b: &BTreeSet<String>| -> Vec<String> {
            a.difference(b).map(|k| Labels::show(k)).collect()
        };
        verdict(
            &self.criterion,
            Verdict::score(ur - rr),
            json!({
                "union_recall": ur,
                "raw_recall": rr,
                "lists": lists,
                "raw_lists": raw_lists.len(),
                "found_only_by_rewrites": only(&by_rewrites, &by_raw),
                "found_only_by_raw_query": only(&by_raw, &by_rewrites),
            }),
        )
    }
}

/// The first `k` distinct units of `list` (first occurrence of each).
fn top_units<'a>(
    labels: &'a Labels,
    list: &'a [Passage],
    k: usize,
) -> impl Iterator<Item = &'a Passage> + 'a {
    let mut seen = BTreeSet::new();
    list.iter()
        .filter(move |p| seen.insert(labels.key(p)))
        .take(k)
}

impl Evaluator for Uplift {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        SummaryKind::Mean
    }

    fn identity(&self) -> &EvaluatorEntry {
        &self.identity
    }

    fn pipeline_needs(&self) -> Vec<(PipelineNeed, &'static str)> {
        match &self.compare {
            Compared::Rerank => vec![(PipelineNeed::Stage("rerank"), "type")],
            Compared::Fusion(lane) => vec![(PipelineNeed::Lane(lane.clone()), "lane")],
            Compared::Rewrite => vec![(PipelineNeed::Stage("rewrite"), "type")],
        }
    }

    fn reads_raw_query(&self) -> bool {
        self.compare == Compared::Rewrite
    }

    fn evaluate(&self, case: &Case, trace: &Trace, _: Option<&JudgeEnv<'_>>) -> CriterionVerdict {
        let labels = match Labels::of(case, self.unit).and_then(Labels::require_relevant) {
            Ok(l) => l,
            Err(reason) => return excluded(&self.criterion, reason),
        };
        // No retrieval at all: `missing` when a stage failed (as every retrieval metric).
        if let Err(absent) = ranking_at(trace, &RankingStage::Final) {
            return absent.verdict(&self.criterion, trace);
        }
        match &self.compare {
            Compared::Rerank => {
                let Some(before) = trace.pipeline.as_ref().and_then(|p| p.pre_rerank.as_ref())
                else {
                    return excluded(&self.criterion, "no_rerank_stage");
                };
                let after = match ranking_at(trace, &RankingStage::Final) {
                    Ok(l) => l,
                    Err(absent) => return absent.verdict(&self.criterion, trace),
                };
                self.difference(&labels, &after, before)
            }
            Compared::Fusion(lane) => {
                let Some(fused) = trace.pipeline.as_ref().and_then(|p| p.fused.as_ref()) else {
                    return excluded(&self.criterion, "no_fusion");
                };
                let lane_list = match ranking_at(trace, &RankingStage::Lane(lane.clone())) {
                    Ok(l) => l,
                    Err(absent) => return absent.verdict(&self.criterion, trace),
                };
                self.difference(&labels, &fused.candidates, &lane_list)
            }
            Compared::Rewrite => self.rewrite(&labels, trace),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::from_json;
    use oloproof_core::case::parse_cases;
    use oloproof_core::passage::Retrieval;
    use oloproof_core::pipeline::{Fused, LaneRetrieval, Pipeline, Rewrite};
    use oloproof_core::trace::{ErrorKind, StageError};
    use serde_json::{json, Value};

    fn passages(docs: &[&str]) -> Vec<Passage> {
        docs.iter()
            .map(|d| Passage {
                doc_id: d.to_string(),
                chunk_id: None,
                score: None,
                text: None,
                metadata: None,
            })
            .collect()
    }

    fn case(relevant: &str) -> Case {
        let line = format!(r#"{{"id":"c","input":{{}},"expected":{{"relevant":{relevant}}}}}"#);
        parse_cases("c.jsonl", &line).unwrap().remove(0)
    }

    fn call(lane: &str, query: &str, docs: &[&str]) -> LaneRetrieval {
        LaneRetrieval {
            lane: Some(lane.into()),
            query: Some(query.into()),
            retrieval: Retrieval::new(Some(query.into()), 10, passages(docs)),
            cached: false,
            latency_ms: None,
        }
    }

    fn score(v: &CriterionVerdict) -> f64 {
        match v.verdict {
            Verdict::Score { value } => value,
            ref other => panic!("{other:?} ({})", v.detail),
        }
    }

    fn reason(v: &CriterionVerdict) -> String {
        match &v.verdict {
            Verdict::Excluded { reason } => reason.clone(),
            other => panic!("{other:?}"),
        }
    }

    fn eval(entry: Value, c: &Case, t: &Trace) -> CriterionVerdict {
        from_json(&entry).unwrap().evaluate(c, t, None)
    }

    /// A reranked trace: `before` into the reranker, `after` out of it.
    fn reranked(before: &[&str], after: &[&str]) -> Trace {
        let mut t = Trace::new("c");
        t.retrieval = Some(Retrieval::new(None, 10, passages(after)));
        t.pipeline = Some(Box::new(Pipeline {
            pre_rerank: Some(passages(before)),
            ..Pipeline::default()
        }));
        t
    }

    #[test]
    fn rerank_uplift_is_the_paired_difference_on_the_same_candidates() {
        let c = case(r#"[{"doc_id":"g"}]"#);
        // The gold document moves from position 3 to 1.
        let t = reranked(&["a", "b", "g", "c"], &["g", "a", "b", "c"]);
        let ndcg = eval(json!({"type": "rerank_uplift", "k": 4}), &c, &t);
        assert_eq!(ndcg.criterion, "rerank_uplift_ndcg_at_4");
        assert!((score(&ndcg) - (1.0 - 1.0 / 4f64.log2())).abs() < 1e-12);
        assert_eq!(ndcg.detail["after"], json!(1.0));
        let mrr = eval(
            json!({"type": "rerank_uplift", "k": 4, "measure": "mrr"}),
            &c,
            &t,
        );
        assert!((score(&mrr) - (1.0 - 1.0 / 3.0)).abs() < 1e-12);
        let p1 = eval(
            json!({"type": "rerank_uplift", "measure": "precision_at_1"}),
            &c,
            &t,
        );
        assert_eq!(p1.criterion, "rerank_uplift_precision_at_1");
        assert_eq!(score(&p1), 1.0);
        // A reranker that pushes the gold document out of the top 2: negative.
        let worse = reranked(&["g", "a", "b"], &["a", "b", "g"]);
        let r2 = eval(
            json!({"type": "rerank_uplift", "k": 2, "measure": "recall"}),
            &c,
            &worse,
        );
        assert_eq!(score(&r2), -1.0);
        // Gold retrieved by neither list: the case counts, with 0.
        let neither = reranked(&["a", "b"], &["b", "a"]);
        assert_eq!(
            score(&eval(
                json!({"type": "rerank_uplift", "k": 2}),
                &c,
                &neither
            )),
            0.0
        );
    }

    #[test]
    fn rerank_uplift_exclusions_and_missing() {
        let c = case(r#"[{"doc_id":"g"}]"#);
        let entry = json!({"type": "rerank_uplift", "k": 4});
        let mut plain = Trace::new("c");
        plain.retrieval = Some(Retrieval::new(None, 10, passages(&["g"])));
        assert_eq!(reason(&eval(entry.clone(), &c, &plain)), "no_rerank_stage");
        let unlabelled = parse_cases("c.jsonl", r#"{"id":"u","input":{}}"#)
            .unwrap()
            .remove(0);
        let t = reranked(&["g"], &["g"]);
        assert_eq!(
            reason(&eval(entry.clone(), &unlabelled, &t)),
            "no_relevance_labels"
        );
        let zero = case(r#"[{"doc_id":"g","grade":0}]"#);
        assert_eq!(
            reason(&eval(entry.clone(), &zero, &t)),
            "no_relevant_documents"
        );
        let mut failed = Trace::new("c");
        failed.error = Some(StageError {
            stage: "rerank".into(),
            kind: ErrorKind::Protocol,
            error_type: None,
            message: "`candidates[0]`: z was not among the candidates given to rerank".into(),
            traceback: None,
            stderr_tail: vec![],
        });
        match eval(entry, &c, &failed).verdict {
            Verdict::Missing { error } => assert!(error.contains("was not among"), "{error}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn uplift_options_are_checked() {
        let no_k = from_json(&json!({"type": "rerank_uplift"})).err().unwrap();
        assert!(no_k.to_string().contains("`k` is required"), "{no_k}");
        let p1_k =
            from_json(&json!({"type": "rerank_uplift", "measure": "precision_at_1", "k": 3}))
                .err()
                .unwrap();
        assert!(p1_k.to_string().contains("position 1 only"), "{p1_k}");
        let unknown = from_json(&json!({"type": "rerank_uplift", "k": 2, "mesure": "mrr"}))
            .err()
            .unwrap();
        assert!(unknown.to_string().contains("mesure"), "{unknown}");
        let bad_measure = from_json(&json!({"type": "rerank_uplift", "k": 2, "measure": "map"}))
            .err()
            .unwrap();
        assert!(bad_measure.to_string().contains("map"), "{bad_measure}");
        let no_lane = from_json(&json!({"type": "fusion_uplift", "k": 2}))
            .err()
            .unwrap();
        assert!(no_lane.to_string().contains("lane"), "{no_lane}");
        let rerank = from_json(&json!({"type": "rerank_uplift", "k": 2})).unwrap();
        assert_eq!(
            rerank.pipeline_needs(),
            vec![(PipelineNeed::Stage("rerank"), "type")]
        );
        assert!(!rerank.reads_raw_query());
        let fusion = from_json(&json!({"type": "fusion_uplift", "k": 2, "lane": "bm25"})).unwrap();
        assert_eq!(
            fusion.pipeline_needs(),
            vec![(PipelineNeed::Lane("bm25".into()), "lane")]
        );
        let rewrite = from_json(&json!({"type": "rewrite_uplift", "k": 2})).unwrap();
        assert!(rewrite.reads_raw_query());
    }

    #[test]
    fn fusion_uplift_shows_a_fusion_worse_than_its_lane() {
        let c = case(r#"[{"doc_id":"g"}]"#);
        let mut t = Trace::new("c");
        let fused = passages(&["a", "b", "g"]);
        t.retrieval = Some(Retrieval::new(None, 10, fused.clone()));
        let mut lanes = std::collections::BTreeMap::new();
        lanes.insert("bm25".to_string(), passages(&["g", "a"]));
        lanes.insert("tri".to_string(), passages(&["a", "b", "c"]));
        t.pipeline = Some(Box::new(Pipeline {
            lanes,
            fused: Some(Fused {
                method: "rrf k=60".into(),
                candidates: fused,
            }),
            ..Pipeline::default()
        }));
        let vs_bm25 = eval(
            json!({"type": "fusion_uplift", "k": 2, "lane": "bm25", "measure": "recall"}),
            &c,
            &t,
        );
        assert_eq!(vs_bm25.criterion, "fusion_uplift_recall_at_2_vs_bm25");
        assert_eq!(score(&vs_bm25), -1.0, "bm25 alone had it in its top 2");
        let vs_tri = eval(
            json!({"type": "fusion_uplift", "k": 3, "lane": "tri", "measure": "mrr"}),
            &c,
            &t,
        );
        assert!((score(&vs_tri) - 1.0 / 3.0).abs() < 1e-12);
        let other = eval(
            json!({"type": "fusion_uplift", "k": 2, "lane": "dense"}),
            &c,
            &t,
        );
        assert_eq!(reason(&other), "no_lane");
        assert_eq!(other.detail["lane"], json!("dense"));
        let mut single = Trace::new("c");
        single.retrieval = Some(Retrieval::new(None, 10, passages(&["g"])));
        assert_eq!(
            reason(&eval(
                json!({"type": "fusion_uplift", "k": 2, "lane": "bm25"}),
                &c,
                &single
            )),
            "no_fusion"
        );
    }

    #[test]
    fn rewrite_uplift_is_union_recall_against_the_raw_question() {
        let c = case(r#"[{"doc_id":"g1"},{"doc_id":"g2"}]"#);
        let mut t = Trace::new("c");
        t.retrieval = Some(Retrieval::new(None, 10, passages(&["g1"])));
        t.pipeline = Some(Box::new(Pipeline {
            question: Some("q".into()),
            rewrite: Some(Rewrite {
                queries: vec!["q".into(), "q expanded".into()],
                usage: None,
            }),
            retrievals: vec![
                call("bm25", "q", &["a", "g1", "b"]),
                call("tri", "q", &["a", "b", "g1"]),
                call("bm25", "q expanded", &["g2", "a"]),
                call("tri", "q expanded", &["b", "c", "g2"]),
            ],
            raw_query: Some(Retrieval::new(
                Some("q".into()),
                10,
                passages(&["a", "g1", "g2"]),
            )),
            ..Pipeline::default()
        }));
        let v = eval(json!({"type": "rewrite_uplift", "k": 2}), &c, &t);
        assert_eq!(v.criterion, "rewrite_uplift_recall_at_2");
        // Union of the top 2 of the four lists: {a, g1, b, g2, c} ⊇ both golds; raw top 2 (the
        // fused list: no per-lane calls recorded): g1.
        assert_eq!(score(&v), 0.5);
        assert_eq!(v.detail["union_recall"], json!(1.0));
        assert_eq!(v.detail["raw_recall"], json!(0.5));
        assert_eq!(v.detail["lists"], json!(4));
        assert_eq!(v.detail["found_only_by_rewrites"], json!(["g2"]));
        // A rewrite that is the raw question alone, over two lanes: the raw side is the raw
        // question's own calls, list for list, so the uplift is exactly 0 (the fused raw list
        // would have lost g2 from the top 2 and shown a spurious gain).
        let mut same = t.clone();
        if let Some(p) = same.pipeline.as_mut() {
            p.rewrite = Some(Rewrite {
                queries: vec!["q".into()],
                usage: None,
            });
            p.retrievals = vec![
                call("bm25", "q", &["g1", "a"]),
                call("tri", "q", &["g2", "b"]),
            ];
            p.raw_query = Some(Retrieval::new(None, 10, passages(&["a", "b", "g1", "g2"])));
            p.raw_query_lanes = p.retrievals.clone();
        }
        let v = eval(json!({"type": "rewrite_uplift", "k": 2}), &c, &same);
        assert_eq!(score(&v), 0.0, "{}", v.detail);
        assert_eq!(v.detail["raw_lists"], json!(2));
        // Drift: the raw question finds what the rewrites lose.
        if let Some(p) = t.pipeline.as_mut() {
            p.retrievals.truncate(1);
            p.raw_query = Some(Retrieval::new(None, 10, passages(&["g2", "g1"])));
        }
        let drift = eval(json!({"type": "rewrite_uplift", "k": 2}), &c, &t);
        assert_eq!(score(&drift), -0.5);
        assert_eq!(drift.detail["found_only_by_raw_query"], json!(["g2"]));
        // No raw retrieval recorded, no rewrite, no pipeline at all.
        if let Some(p) = t.pipeline.as_mut() {
            p.raw_query = None;
        }
        assert_eq!(
            reason(&eval(json!({"type": "rewrite_uplift", "k": 2}), &c, &t)),
            "no_raw_query"
        );
        if let Some(p) = t.pipeline.as_mut() {
            p.rewrite = None;
        }
        assert_eq!(
            reason(&eval(json!({"type": "rewrite_uplift", "k": 2}), &c, &t)),
            "no_rewrite_stage"
        );
        t.pipeline = None;
        assert_eq!(
            reason(&eval(json!({"type": "rewrite_uplift", "k": 2}), &c, &t)),
            "no_rewrite_stage"
        );
    }
}
