//! Rank-cutoff retrieval evaluators: `hit_rate`, `recall`, `precision`, `mrr` and `ndcg` at
//! `k`, over documents (candidates de-duplicated by `doc_id`, first occurrence kept) or chunks.
//! The formulas are `oloproof_metrics::ranking::query`'s, the same ones behind `oloproof trec`.

use std::collections::HashMap;

use oloproof_core::case::Case;
use oloproof_core::config::EvaluatorEntry;
use oloproof_core::passage::Retrieval;
use oloproof_core::source::SourceError;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use oloproof_metrics::ranking::query;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{excluded, missing, verdict, EntryParser, Evaluator, EvaluatorSpec, SummaryKind};
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
    /// Criterion name (default `<type>_at_<k>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// Rank cutoff (at least 1).
    pub k: usize,
    /// What counts as one unit.
    #[serde(default)]
    pub relevance_unit: RelevanceUnit,
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

fn build(p: &EntryParser<'_>, measure: Measure) -> Result<Box<dyn Evaluator>, SourceError> {
    let options: RankOptions = p.options()?;
    if options.k == 0 {
        return Err(p.error("k", "`k` must be at least 1"));
    }
    Ok(Box::new(Ranking {
        criterion: options
            .criterion
            .clone()
            .unwrap_or_else(|| format!("{}_at_{}", p.entry.type_name, options.k)),
        identity: p.identity(&options),
        options,
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

/// Builds the judged ranking of `retrieval` against the case's labels, or the exclusion reason.
pub fn judge_ranking(
    case: &Case,
    retrieval: &Retrieval,
    unit: RelevanceUnit,
) -> Result<JudgedRanking, &'static str> {
    let Some(relevant) = case.expected.relevant.as_ref() else {
        return Err("no_relevance_labels");
    };
    let key = |doc: &str, chunk: Option<&str>| -> String {
        match unit {
            RelevanceUnit::Document => doc.to_string(),
            RelevanceUnit::Chunk => format!("{doc}\u{1f}{}", chunk.unwrap_or("")),
        }
    };
    if unit == RelevanceUnit::Chunk && relevant.iter().any(|r| r.chunk_id.is_none()) {
        return Err("relevant_without_chunk_id");
    }
    let mut grades: HashMap<String, f64> = HashMap::new();
    for r in relevant {
        let g = grades
            .entry(key(&r.doc_id, r.chunk_id.as_deref()))
            .or_insert(r.grade);
        *g = g.max(r.grade);
    }
    let judged: Vec<f64> = grades.values().copied().collect();
    if !judged.iter().any(|g| *g >= 1.0) {
        return Err("no_relevant_documents");
    }
    let mut seen = std::collections::HashSet::new();
    let mut gains = Vec::with_capacity(retrieval.candidates.len());
    let mut best_position = None;
    for (i, c) in retrieval.candidates.iter().enumerate() {
        let k = key(&c.doc_id, c.chunk_id.as_deref());
        let g = grades.get(&k).copied().unwrap_or(0.0);
        if g >= 1.0 && best_position.is_none() {
            best_position = Some(i + 1);
        }
        if seen.insert(k) {
            gains.push(g);
        }
    }
    Ok(JudgedRanking {
        gains,
        judged,
        best_position,
    })
}

struct Ranking {
    criterion: String,
    identity: EvaluatorEntry,
    options: RankOptions,
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

    fn evaluate(&self, case: &Case, trace: &Trace, _: Option<&JudgeEnv<'_>>) -> CriterionVerdict {
        if case.expected.relevant.is_none() {
            return excluded(&self.criterion, "no_relevance_labels");
        }
        let Some(retrieval) = &trace.retrieval else {
            if trace.error.is_none() && trace.intervention.is_some() {
                return excluded(&self.criterion, "no_retrieval_under_intervention");
            }
            return missing(&self.criterion, trace, "the retrieval");
        };
        let judged = match judge_ranking(case, retrieval, self.options.relevance_unit) {
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
