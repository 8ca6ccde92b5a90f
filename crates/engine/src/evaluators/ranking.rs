//! Rank-cutoff retrieval evaluators: `hit_rate`, `recall`, `precision`, `mrr` and `ndcg` at
//! `k`, over documents (candidates de-duplicated by `doc_id`, first occurrence kept) or chunks.
//! The formulas are `oloproof_metrics::ranking::query`'s, the same ones behind `oloproof trec`.
//!
//! `at:` chooses which ranking of a pipeline is measured (seed 000 Part 4: each stage has its
//! own metric): `final` (the default: the candidates context assembly cut, after fusion and
//! rerank — protocol 1's only list), `lane:NAME` (one lane's own ranking), `fused` (the fusion
//! of the lanes, or the single list when nothing was fused), `reranked` (the rerank stage's
//! output; excluded `no_rerank_stage` when no rerank ran) and `context` (the assembled context,
//! in order). Without `at:` the criterion keeps its name (`recall_at_4`); with it the stage is
//! appended (`recall_at_4_fused`, `recall_at_4_lane_bm25`).
//!
//! The labels and the stage lists ([`Labels`], [`ranking_at`]) are shared with the other
//! pipeline evaluators (`rerank_uplift`, `fusion_uplift`, `rewrite_uplift`, `hop_recall`,
//! `context_noise`).

use std::borrow::Cow;
use std::collections::HashMap;

use oloproof_core::case::Case;
use oloproof_core::config::EvaluatorEntry;
use oloproof_core::passage::{Passage, Retrieval};
use oloproof_core::pipeline::RankingStage;
use oloproof_core::source::SourceError;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use oloproof_metrics::ranking::query;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{
    excluded, missing, verdict, EntryParser, Evaluator, EvaluatorSpec, PipelineNeed, SummaryKind,
};
use crate::judged::JudgeEnv;

/// Which unit retrieval metrics count.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum RelevanceUnit {
    /// Whole documents (candidates de-duplicated by `doc_id`, first occurrence kept).
    #[default]
    Document,
    /// Chunks: `(doc_id, chunk_id)`; every relevant entry then needs a `chunk_id`.
    Chunk,
}

/// Options of a rank-cutoff retrieval evaluator.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RankOptions {
    /// Criterion name (default `<type>_at_<k>`, then `_<stage>` with `at:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// Rank cutoff (at least 1).
    pub k: usize,
    /// What counts as one unit.
    #[serde(default)]
    pub relevance_unit: RelevanceUnit,
    /// Which ranking of the pipeline is measured: `final` (absent: the final candidates),
    /// `lane:NAME`, `fused`, `reranked` or `context` ([`RankingStage`]). Absent from the
    /// identity when not written, so runs without it keep their identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// `hit_rate`: any relevant unit in the first k (pass/fail).
pub(crate) const HIT_RATE: EvaluatorSpec = EvaluatorSpec {
    name: "hit_rate",
    build: |p| build(p, Measure::HitRate),
};
/// `recall`: relevant units in the first k over all relevant units.
pub(crate) const RECALL: EvaluatorSpec = EvaluatorSpec {
    name: "recall",
    build: |p| build(p, Measure::Recall),
};
/// `precision`: relevant units in the first k over k.
pub(crate) const PRECISION: EvaluatorSpec = EvaluatorSpec {
    name: "precision",
    build: |p| build(p, Measure::Precision),
};
/// `mrr`: reciprocal rank of the first relevant unit within k.
pub(crate) const MRR: EvaluatorSpec = EvaluatorSpec {
    name: "mrr",
    build: |p| build(p, Measure::Mrr),
};
/// `ndcg`: nDCG at k with graded linear gains (trec_eval `ndcg_cut`).
pub(crate) const NDCG: EvaluatorSpec = EvaluatorSpec {
    name: "ndcg",
    build: |p| build(p, Measure::Ndcg),
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Measure {
    HitRate,
    Recall,
    Precision,
    Mrr,
    Ndcg,
}

/// The `at:` values, for "expected" in an error.
pub(crate) const STAGE_CHOICES: &str = "one of final, fused, reranked, context, lane:NAME";

/// Parses an `at:`-like option at `key`: a [`RankingStage`], or a located error listing the
/// accepted values.
pub(crate) fn parse_stage(
    p: &EntryParser<'_>,
    key: &str,
    text: &str,
) -> Result<RankingStage, SourceError> {
    RankingStage::parse(text).ok_or_else(|| {
        let mut err = p.error(key, format!("unknown pipeline stage `{text}`"));
        err.expected = Some(STAGE_CHOICES.into());
        err
    })
}

/// The criterion suffix of a stage: `fused`, `lane_bm25`, … (empty for `final`).
pub(crate) fn stage_suffix(stage: &RankingStage) -> String {
    match stage {
        RankingStage::Final => String::new(),
        other => format!("_{}", other.label().replace(':', "_")),
    }
}

/// What a stage needs the system to declare ([`Evaluator::pipeline_needs`]): a lane, or the
/// rerank stage.
pub(crate) fn stage_needs(
    stage: &RankingStage,
    key: &'static str,
) -> Vec<(PipelineNeed, &'static str)> {
    match stage {
        RankingStage::Lane(lane) => vec![(PipelineNeed::Lane(lane.clone()), key)],
        RankingStage::Reranked => vec![(PipelineNeed::Stage("rerank"), key)],
        _ => Vec::new(),
    }
}

fn build(p: &EntryParser<'_>, measure: Measure) -> Result<Box<dyn Evaluator>, SourceError> {
    let options: RankOptions = p.options()?;
    if options.k == 0 {
        return Err(p.error("k", "`k` must be at least 1"));
    }
    let stage = match &options.at {
        Some(text) => parse_stage(p, "at", text)?,
        None => RankingStage::Final,
    };
    Ok(Box::new(Ranking {
        criterion: options.criterion.clone().unwrap_or_else(|| {
            format!(
                "{}_at_{}{}",
                p.entry.type_name,
                options.k,
                stage_suffix(&stage)
            )
        }),
        identity: p.identity(&options),
        options,
        stage,
        measure,
    }))
}

/// A judged ranking for one case: gains of the distinct units in rank order, the gains of every
/// labelled unit, and the best relevant position in the system's original order.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgedRanking {
    /// Gains of the retrieved units, in rank order (0 = not relevant).
    pub gains: Vec<f64>,
    /// Gains of every labelled unit (for the ideal ranking and the relevant count).
    pub judged: Vec<f64>,
    /// 1-based position (in the candidates as returned) of the first relevant candidate.
    pub best_position: Option<usize>,
}

impl JudgedRanking {
    /// Number of relevant units (gain ≥ 1).
    pub fn num_relevant(&self) -> usize {
        self.judged.iter().filter(|g| **g >= 1.0).count()
    }
}

/// A case's relevance labels keyed by unit (`doc_id`, or `doc_id` and `chunk_id`), each unit
/// with its highest grade: what every retrieval evaluator judges a list of passages with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Labels {
    unit: RelevanceUnit,
    grades: HashMap<String, f64>,
}

impl Labels {
    /// The labels of `case`; `Err` with the exclusion reason when it has none
    /// (`no_relevance_labels`) or the chunk unit meets a label without `chunk_id`
    /// (`relevant_without_chunk_id`). A case whose labels all have grade 0 has labels (see
    /// [`Labels::require_relevant`]).
    pub(crate) fn of(case: &Case, unit: RelevanceUnit) -> Result<Labels, &'static str> {
        let Some(relevant) = case.expected.relevant.as_ref() else {
            return Err("no_relevance_labels");
        };
        if unit == RelevanceUnit::Chunk && relevant.iter().any(|r| r.chunk_id.is_none()) {
            return Err("relevant_without_chunk_id");
        }
        let mut labels = Labels {
            unit,
            grades: HashMap::new(),
        };
        for r in relevant {
            let g = labels
                .grades
                .entry(labels_key(unit, &r.doc_id, r.chunk_id.as_deref()))
                .or_insert(r.grade);
            *g = g.max(r.grade);
        }
        Ok(labels)
    }

    /// These labels, or `no_relevant_documents` when no unit has grade ≥ 1 (recall and nDCG
    /// are undefined there).
    pub(crate) fn require_relevant(self) -> Result<Labels, &'static str> {
        if self.grades.values().any(|g| *g >= 1.0) {
            Ok(self)
        } else {
            Err("no_relevant_documents")
        }
    }

    /// The unit key of a passage.
    pub(crate) fn key(&self, p: &Passage) -> String {
        labels_key(self.unit, &p.doc_id, p.chunk_id.as_deref())
    }

    /// The grade of a passage (0 when unlabelled).
    pub(crate) fn grade(&self, p: &Passage) -> f64 {
        self.grades.get(&self.key(p)).copied().unwrap_or(0.0)
    }

    /// The relevant units (grade ≥ 1), sorted by key.
    pub(crate) fn relevant(&self) -> Vec<&str> {
        let mut keys: Vec<&str> = self
            .grades
            .iter()
            .filter(|(_, g)| **g >= 1.0)
            .map(|(k, _)| k.as_str())
            .collect();
        keys.sort_unstable();
        keys
    }

    /// A unit key as shown in a verdict's detail: `doc` or `doc#chunk`.
    pub(crate) fn show(key: &str) -> String {
        key.replace('\u{1f}', "#")
    }

    /// The judged ranking of `candidates` (in their order).
    pub(crate) fn rank(&self, candidates: &[Passage]) -> JudgedRanking {
        let mut seen = std::collections::HashSet::new();
        let mut gains = Vec::with_capacity(candidates.len());
        let mut best_position = None;
        for (i, c) in candidates.iter().enumerate() {
            let k = self.key(c);
            let g = self.grades.get(&k).copied().unwrap_or(0.0);
            if g >= 1.0 && best_position.is_none() {
                best_position = Some(i + 1);
            }
            if seen.insert(k) {
                gains.push(g);
            }
        }
        JudgedRanking {
            gains,
            judged: self.grades.values().copied().collect(),
            best_position,
        }
    }
}

fn labels_key(unit: RelevanceUnit, doc: &str, chunk: Option<&str>) -> String {
    match unit {
        RelevanceUnit::Document => doc.to_string(),
        RelevanceUnit::Chunk => format!("{doc}\u{1f}{}", chunk.unwrap_or("")),
    }
}

/// Builds the judged ranking of `retrieval` against the case's labels, or the exclusion reason.
pub fn judge_ranking(
    case: &Case,
    retrieval: &Retrieval,
    unit: RelevanceUnit,
) -> Result<JudgedRanking, &'static str> {
    judge_candidates(case, &retrieval.candidates, unit)
}

/// Builds the judged ranking of `candidates` (any stage's list) against the case's labels, or
/// the exclusion reason (`no_relevance_labels`, `relevant_without_chunk_id`,
/// `no_relevant_documents`).
pub fn judge_candidates(
    case: &Case,
    candidates: &[Passage],
    unit: RelevanceUnit,
) -> Result<JudgedRanking, &'static str> {
    Ok(Labels::of(case, unit)?.require_relevant()?.rank(candidates))
}

/// Why a stage's list is not there: the case is `missing` (a stage failed) or `excluded`
/// (the stage did not run for it, with a reason code and a detail).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NoList {
    /// A stage failed: the verdict is `missing` with the trace's error.
    Missing(&'static str),
    /// The stage does not apply: `excluded` with this reason and detail.
    Excluded(&'static str, Value),
}

impl NoList {
    /// The verdict of `criterion` for this absence.
    pub(crate) fn verdict(self, criterion: &str, trace: &Trace) -> CriterionVerdict {
        match self {
            NoList::Missing(what) => missing(criterion, trace, what),
            NoList::Excluded(reason, detail) => verdict(
                criterion,
                Verdict::Excluded {
                    reason: reason.into(),
                },
                detail,
            ),
        }
    }
}

/// The ranking recorded at `stage` of `trace`:
///
/// - `final`: the trace's retrieval (`no_retrieval_under_intervention` when an intervention
///   ran without one);
/// - `lane:NAME`: the lane's own ranking (`no_lane`, detail naming it, when the trace has no
///   such lane: a system without lanes, or a `lane=` intervention on another lane);
/// - `fused`: the fused list when more than one list was fused, else the single list;
/// - `reranked`: the final list when a rerank ran (`no_rerank_stage` otherwise);
/// - `context`: the assembled context's passages, in order (`no_context`).
///
/// Whatever the stage, a trace whose stage failed has no list: `missing`.
pub(crate) fn ranking_at<'t>(
    trace: &'t Trace,
    stage: &RankingStage,
) -> Result<Cow<'t, [Passage]>, NoList> {
    let failed = || trace.error.is_some();
    if *stage == RankingStage::Context {
        // The context exists without a retrieval under `gold-context`.
        return context_list(trace);
    }
    let Some(retrieval) = &trace.retrieval else {
        if failed() {
            return Err(NoList::Missing("the retrieval"));
        }
        if trace.intervention.is_some() {
            return Err(NoList::Excluded(
                "no_retrieval_under_intervention",
                Value::Null,
            ));
        }
        return Err(NoList::Missing("the retrieval"));
    };
    let pipeline = trace.pipeline.as_ref();
    match stage {
        RankingStage::Final => Ok(Cow::Borrowed(&retrieval.candidates)),
        RankingStage::Lane(lane) => match pipeline.and_then(|p| p.lanes.get(lane)) {
            Some(list) => Ok(Cow::Borrowed(list)),
            None => Err(NoList::Excluded("no_lane", json!({ "lane": lane }))),
        },
        RankingStage::Fused => {
            let Some(p) = pipeline else {
                return Ok(Cow::Borrowed(&retrieval.candidates));
            };
            if let Some(fused) = &p.fused {
                return Ok(Cow::Borrowed(&fused.candidates));
            }
            match p.retrievals.as_slice() {
                [one] => Ok(Cow::Borrowed(&one.retrieval.candidates)),
                // No retrieve call recorded (a recorded trace with only its final list): the
                // list before any rerank.
                _ => Ok(Cow::Borrowed(
                    p.pre_rerank.as_deref().unwrap_or(&retrieval.candidates),
                )),
            }
        }
        RankingStage::Reranked => match pipeline.and_then(|p| p.pre_rerank.as_ref()) {
            Some(_) => Ok(Cow::Borrowed(&retrieval.candidates)),
            None => Err(NoList::Excluded("no_rerank_stage", Value::Null)),
        },
        RankingStage::Context => context_list(trace),
    }
}

/// The assembled context's passages, in order.
fn context_list(trace: &Trace) -> Result<Cow<'_, [Passage]>, NoList> {
    match &trace.context {
        Some(c) => Ok(Cow::Owned(
            c.passages.iter().map(|p| p.passage.clone()).collect(),
        )),
        None if trace.error.is_some() => Err(NoList::Missing("the context")),
        None => Err(NoList::Excluded("no_context", Value::Null)),
    }
}

struct Ranking {
    criterion: String,
    identity: EvaluatorEntry,
    options: RankOptions,
    stage: RankingStage,
    measure: Measure,
}

impl Evaluator for Ranking {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        match self.measure {
            Measure::HitRate => SummaryKind::Proportion,
            Measure::Recall | Measure::Precision => SummaryKind::Rate,
            Measure::Mrr | Measure::Ndcg => SummaryKind::Mean,
        }
    }

    fn identity(&self) -> &EvaluatorEntry {
        &self.identity
    }

    fn pipeline_needs(&self) -> Vec<(PipelineNeed, &'static str)> {
        stage_needs(&self.stage, "at")
    }

    fn evaluate(&self, case: &Case, trace: &Trace, _: Option<&JudgeEnv<'_>>) -> CriterionVerdict {
        if case.expected.relevant.is_none() {
            return excluded(&self.criterion, "no_relevance_labels");
        }
        let list = match ranking_at(trace, &self.stage) {
            Ok(list) => list,
            Err(absent) => return absent.verdict(&self.criterion, trace),
        };
        let judged = match judge_candidates(case, &list, self.options.relevance_unit) {
            Ok(j) => j,
            Err(reason) => return excluded(&self.criterion, reason),
        };
        let k = self.options.k;
        let detail = json!({"best_relevant_position": judged.best_position});
        let undefined = || Verdict::Excluded {
            reason: "no_relevant_documents".into(),
        };
        let v = match self.measure {
            Measure::HitRate => Verdict::pass_if(query::hit_rate(&judged.gains, k) >= 1.0),
            Measure::Recall => query::recall(&judged.gains, judged.num_relevant(), k)
                .map_or_else(undefined, Verdict::score),
            Measure::Precision => Verdict::score(query::precision(&judged.gains, k)),
            Measure::Mrr => Verdict::score(query::reciprocal_rank(&judged.gains, k)),
            Measure::Ndcg => query::ndcg_cut(&judged.gains, &judged.judged, k)
                .map_or_else(undefined, Verdict::score),
        };
        verdict(&self.criterion, v, detail)
    }
}

/// The case's best relevant position (document unit), for the `relevant_position` slice:
/// `Some(Some(n))` found at `n`, `Some(None)` labelled but not retrieved, `None` not applicable.
pub fn best_relevant_position(case: &Case, trace: &Trace) -> Option<Option<usize>> {
    let retrieval = trace.retrieval.as_ref()?;
    // A case the ranking cannot be judged for (no relevance labels) is not applicable.
    judge_ranking(case, retrieval, RelevanceUnit::Document)
        .ok()
        .map(|j| j.best_position)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::from_json;
    use oloproof_core::case::parse_cases;
    use oloproof_core::context::assemble;
    use oloproof_core::pipeline::{Fused, LaneRetrieval, Pipeline};
    use std::collections::BTreeMap;

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

    fn case() -> Case {
        let line = r#"{"id":"c","input":{},"expected":{"relevant":[{"doc_id":"g"}]}}"#;
        parse_cases("c.jsonl", line).unwrap().remove(0)
    }

    fn call(lane: &str, docs: &[&str]) -> LaneRetrieval {
        LaneRetrieval {
            lane: Some(lane.into()),
            query: None,
            retrieval: Retrieval::new(None, 10, passages(docs)),
            cached: false,
            latency_ms: None,
        }
    }

    /// A pipeline trace: bm25 has the gold document first, tri third; the fusion puts it
    /// second; the reranker last of three; the context keeps the first two.
    fn pipeline_trace() -> Trace {
        let mut t = Trace::new("c");
        let fused = passages(&["a", "g", "b"]);
        let reranked = passages(&["a", "b", "g"]);
        t.context = Some(assemble(&reranked, 2, None));
        t.retrieval = Some(Retrieval::new(None, 10, reranked));
        let mut lanes = BTreeMap::new();
        lanes.insert("bm25".to_string(), passages(&["g", "a"]));
        lanes.insert("tri".to_string(), passages(&["a", "b", "g"]));
        t.pipeline = Some(Box::new(Pipeline {
            retrievals: vec![call("bm25", &["g", "a"]), call("tri", &["a", "b", "g"])],
            lanes,
            fused: Some(Fused {
                method: "rrf k=60".into(),
                candidates: fused.clone(),
            }),
            pre_rerank: Some(fused),
            ..Pipeline::default()
        }));
        t
    }

    fn eval(entry: Value, t: &Trace) -> CriterionVerdict {
        from_json(&entry).unwrap().evaluate(&case(), t, None)
    }

    #[test]
    fn at_reads_each_stage_and_names_the_criterion_after_it() {
        let t = pipeline_trace();
        let mrr = |at: Option<&str>| {
            let mut entry = json!({"type": "mrr", "k": 3});
            if let Some(at) = at {
                entry["at"] = json!(at);
            }
            let v = eval(entry, &t);
            match v.verdict {
                Verdict::Score { value } => (v.criterion, value),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(mrr(None), ("mrr_at_3".into(), 1.0 / 3.0));
        assert_eq!(mrr(Some("final")), ("mrr_at_3".into(), 1.0 / 3.0));
        assert_eq!(
            mrr(Some("reranked")),
            ("mrr_at_3_reranked".into(), 1.0 / 3.0)
        );
        assert_eq!(mrr(Some("fused")), ("mrr_at_3_fused".into(), 0.5));
        assert_eq!(mrr(Some("lane:bm25")), ("mrr_at_3_lane_bm25".into(), 1.0));
        assert_eq!(
            mrr(Some("lane:tri")),
            ("mrr_at_3_lane_tri".into(), 1.0 / 3.0)
        );
        // The context holds a and b only.
        assert_eq!(mrr(Some("context")), ("mrr_at_3_context".into(), 0.0));
        let hit = eval(json!({"type": "hit_rate", "k": 1, "at": "lane:bm25"}), &t);
        assert_eq!(hit.verdict, Verdict::Pass);
    }

    #[test]
    fn at_without_the_stage_is_excluded_and_fused_falls_back_to_the_single_list() {
        let mut plain = Trace::new("c");
        plain.retrieval = Some(Retrieval::new(None, 10, passages(&["a", "g"])));
        let recall = |at: &str, t: &Trace| eval(json!({"type": "recall", "k": 1, "at": at}), t);
        assert_eq!(
            recall("reranked", &plain).verdict,
            Verdict::Excluded {
                reason: "no_rerank_stage".into()
            }
        );
        let lane = recall("lane:dense", &plain);
        assert_eq!(
            lane.verdict,
            Verdict::Excluded {
                reason: "no_lane".into()
            }
        );
        assert_eq!(lane.detail, json!({"lane": "dense"}));
        assert_eq!(
            recall("context", &plain).verdict,
            Verdict::Excluded {
                reason: "no_context".into()
            }
        );
        // Protocol 1: the fused list is the one list.
        let k2 = eval(json!({"type": "recall", "k": 2, "at": "fused"}), &plain);
        assert_eq!(k2.verdict, Verdict::Score { value: 1.0 });
        // A pipeline with one lane and a rerank: `fused` is the lane's list, not the output.
        let mut one = Trace::new("c");
        one.retrieval = Some(Retrieval::new(None, 10, passages(&["g", "a"])));
        one.pipeline = Some(Box::new(Pipeline {
            retrievals: vec![call("bm25", &["a", "g"])],
            pre_rerank: Some(passages(&["a", "g"])),
            ..Pipeline::default()
        }));
        assert_eq!(recall("fused", &one).verdict, Verdict::Score { value: 0.0 });
        assert_eq!(
            recall("reranked", &one).verdict,
            Verdict::Score { value: 1.0 }
        );
        // A failed stage: missing, whatever the stage.
        let mut failed = Trace::new("c");
        failed.error = Some(oloproof_core::trace::StageError {
            stage: "rerank".into(),
            kind: oloproof_core::trace::ErrorKind::Protocol,
            error_type: None,
            message: "`candidates[0]`: z was not among the candidates given to rerank".into(),
            traceback: None,
            stderr_tail: vec![],
        });
        for at in ["lane:bm25", "fused", "reranked", "context", "final"] {
            assert!(
                matches!(recall(at, &failed).verdict, Verdict::Missing { .. }),
                "{at}"
            );
        }
    }

    #[test]
    fn at_is_checked_kept_out_of_the_identity_when_absent_and_declares_its_needs() {
        let err = from_json(&json!({"type": "recall", "k": 2, "at": "lanes:bm25"}))
            .err()
            .unwrap();
        assert!(
            err.to_string()
                .contains("unknown pipeline stage `lanes:bm25`"),
            "{err}"
        );
        let plain = from_json(&json!({"type": "recall", "k": 2})).unwrap();
        assert_eq!(
            serde_json::to_value(plain.identity()).unwrap(),
            json!({"type": "recall", "k": 2, "relevance_unit": "document"})
        );
        assert!(plain.pipeline_needs().is_empty());
        let lane = from_json(&json!({"type": "ndcg", "k": 2, "at": "lane:bm25"})).unwrap();
        assert_eq!(
            lane.pipeline_needs(),
            vec![(PipelineNeed::Lane("bm25".into()), "at")]
        );
        let reranked = from_json(&json!({"type": "ndcg", "k": 2, "at": "reranked"})).unwrap();
        assert_eq!(
            reranked.pipeline_needs(),
            vec![(PipelineNeed::Stage("rerank"), "at")]
        );
        let fused = from_json(&json!({"type": "ndcg", "k": 2, "at": "fused"})).unwrap();
        assert!(fused.pipeline_needs().is_empty());
    }
}
