//! The optional stages of a pipeline (seed 000, Parts 2, 4, 5, 8), as one case recorded them:
//! query rewriting, retrieval lanes and their fusion, the metadata predicates a retrieval
//! applied, reranking, retrieval hops, and each stage's token usage.
//!
//! A two-stage system (protocol 1's `retrieve` + `generate`) records none of this: its trace's
//! [`crate::trace::Trace::pipeline`] is `None`, so its stored traces are byte for byte what
//! they were. [`crate::trace::Trace::retrieval`] is always the final candidate list (after
//! fusion and rerank), the one context assembly cuts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::passage::Passage;

/// Token usage a stage reported (`usage` of a reply): the model and its token counts.
/// Other keys of a reply's `usage` (`total_tokens`, …) are ignored.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Usage {
    /// The model the stage called, as the system names it (matched against `prices:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Prompt tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Completion tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
}

/// A comparison operator of a metadata predicate.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
pub enum FilterOp {
    /// `=`: the field equals the value.
    #[serde(rename = "=")]
    Eq,
    /// `!=`: the field is present and differs from the value.
    #[serde(rename = "!=")]
    Ne,
    /// `in`: the field equals one of the values (an array).
    #[serde(rename = "in")]
    In,
    /// `not_in`: the field is present and equals none of the values (an array).
    #[serde(rename = "not_in")]
    NotIn,
    /// `<` on numbers, or on strings (byte order: ISO dates compare as dates).
    #[serde(rename = "<")]
    Lt,
    /// `<=`.
    #[serde(rename = "<=")]
    Le,
    /// `>`.
    #[serde(rename = ">")]
    Gt,
    /// `>=`.
    #[serde(rename = ">=")]
    Ge,
    /// `exists`: the field is present (the value is ignored).
    #[serde(rename = "exists")]
    Exists,
}

/// The operators a predicate may use, as written.
pub const FILTER_OPS: &[&str] = &["=", "!=", "in", "not_in", "<", "<=", ">", ">=", "exists"];

impl FilterOp {
    /// The operator as written (`=`, `in`, …).
    pub const fn as_str(self) -> &'static str {
        match self {
            FilterOp::Eq => "=",
            FilterOp::Ne => "!=",
            FilterOp::In => "in",
            FilterOp::NotIn => "not_in",
            FilterOp::Lt => "<",
            FilterOp::Le => "<=",
            FilterOp::Gt => ">",
            FilterOp::Ge => ">=",
            FilterOp::Exists => "exists",
        }
    }
}

/// One metadata predicate a retrieval applied: `field op value` (seed 000 Part 5: the
/// instrumentation that logs the applied predicates).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    /// The metadata field (`tenant`, `locale`, …).
    pub field: String,
    /// The operator.
    pub op: FilterOp,
    /// The value (an array for `in` / `not_in`; ignored by `exists`).
    #[serde(default)]
    pub value: Value,
}

/// Why a predicate could not be evaluated on a document.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PredicateError {
    /// `in` / `not_in` with a value that is not an array.
    #[error("predicate `{field} {op}` needs an array value, got {value}")]
    NotAnArray {
        /// The field.
        field: String,
        /// The operator.
        op: &'static str,
        /// The value given.
        value: String,
    },
}

impl Filter {
    /// The predicate as one line: `tenant = "acme"`.
    pub fn describe(&self) -> String {
        match self.op {
            FilterOp::Exists => format!("{} exists", self.field),
            op => format!("{} {} {}", self.field, op.as_str(), self.value),
        }
    }

    /// Whether a document with `metadata` passes the predicate: `None` when the metadata has
    /// no such field (the predicate cannot be judged on this corpus; `exists` is then `false`),
    /// else whether it passes. Values compare as JSON values (a number equals a number of the
    /// same value); ordering compares two numbers, or two strings bytewise, and is `false` for
    /// any other pair.
    pub fn admits(&self, metadata: &Map<String, Value>) -> Result<Option<bool>, PredicateError> {
        let field = metadata.get(&self.field).filter(|v| !v.is_null());
        if self.op == FilterOp::Exists {
            return Ok(Some(field.is_some()));
        }
        let Some(actual) = field else {
            return Ok(None);
        };
        let list = || match &self.value {
            Value::Array(items) => Ok(items),
            other => Err(PredicateError::NotAnArray {
                field: self.field.clone(),
                op: self.op.as_str(),
                value: other.to_string(),
            }),
        };
        let order = || compare(actual, &self.value);
        Ok(Some(match self.op {
            FilterOp::Eq => same(actual, &self.value),
            FilterOp::Ne => !same(actual, &self.value),
            FilterOp::In => list()?.iter().any(|v| same(actual, v)),
            FilterOp::NotIn => !list()?.iter().any(|v| same(actual, v)),
            FilterOp::Lt => order().is_some_and(|o| o.is_lt()),
            FilterOp::Le => order().is_some_and(|o| o.is_le()),
            FilterOp::Gt => order().is_some_and(|o| o.is_gt()),
            FilterOp::Ge => order().is_some_and(|o| o.is_ge()),
            FilterOp::Exists => unreachable!("handled above"),
        }))
    }

    /// Checks the predicate's shape (an array for `in` / `not_in`).
    pub fn check(&self) -> Result<(), PredicateError> {
        match (self.op, &self.value) {
            (FilterOp::In | FilterOp::NotIn, v) if !v.is_array() => {
                Err(PredicateError::NotAnArray {
                    field: self.field.clone(),
                    op: self.op.as_str(),
                    value: v.to_string(),
                })
            }
            _ => Ok(()),
        }
    }
}

fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn compare(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64()?.partial_cmp(&y.as_f64()?),
        (Value::String(x), Value::String(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        _ => None,
    }
}

/// One retrieval hop of an iterative system, in order: the query it ran and what it found.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Hop {
    /// The hop's query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// What the hop retrieved, best first.
    pub candidates: Vec<Passage>,
    /// Predicates the hop applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<Filter>,
}

/// What the `rewrite` stage returned: the queries sent to retrieval.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Rewrite {
    /// The rewritten queries, in the system's order (at least one).
    pub queries: Vec<String>,
    /// Token usage of the rewrite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// One `retrieve` call of a pipeline: its lane and query, and its result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LaneRetrieval {
    /// The lane (`None`: a system without lanes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<String>,
    /// The query sent (`None`: the system read the question from the input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The candidates, best first; positions are index + 1.
    pub retrieval: crate::passage::Retrieval,
    /// Whether it came from the stage cache.
    #[serde(default)]
    pub cached: bool,
    /// Wall time of the call, in milliseconds (absent when cached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<f64>,
}

/// A fused ranking: the method and its result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Fused {
    /// `rrf k=60`, `combsum`, … (host fusion) or `system` (the system's own `fuse` op).
    pub method: String,
    /// The fused candidates, best first (each passage as its first list returned it, `score`
    /// the fused score for host fusion).
    pub candidates: Vec<Passage>,
}

/// Everything the optional stages of one case did. Absent parts did not run.
///
/// Reads its stored form too, whose lists refer to a table of passages
/// ([`crate::stored_trace`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(try_from = "crate::stored_trace::PipelineWire")]
pub struct Pipeline {
    /// The raw question (`input.question`), recorded beside the rewrites.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// The `rewrite` stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrite: Option<Rewrite>,
    /// Every `retrieve` call, query-major then lane in declared order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retrievals: Vec<LaneRetrieval>,
    /// Each declared lane's own ranking: its single list, or its lists over several queries
    /// fused with the run's fusion method.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub lanes: BTreeMap<String, Vec<Passage>>,
    /// The fusion of more than one list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fused: Option<Fused>,
    /// The candidates the `rerank` stage received (its output is the trace's retrieval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_rerank: Option<Vec<Passage>>,
    /// Token usage of the `rerank` stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank_usage: Option<Usage>,
    /// The raw question's own retrieval (default lane), asked only for `rewrite_uplift`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_query: Option<crate::passage::Retrieval>,
    /// With several lanes, the raw question's retrieve call of each lane (in declared order)
    /// that [`Pipeline::raw_query`] fuses: `rewrite_uplift` compares them list for list with
    /// the rewrites' calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub raw_query_lanes: Vec<LaneRetrieval>,
}

impl Pipeline {
    /// Every predicate the retrievals (and their hops) applied, de-duplicated, in order.
    pub fn filters(&self) -> Vec<&Filter> {
        let mut out: Vec<&Filter> = Vec::new();
        for r in &self.retrievals {
            let hop_filters = r.retrieval.hops.iter().flat_map(|h| h.filters.iter());
            for f in r.retrieval.filters.iter().chain(hop_filters) {
                if !out.contains(&f) {
                    out.push(f);
                }
            }
        }
        out
    }
}

/// One gold document against the predicates its case's retrievals applied, judged by the host
/// on the document's metadata from `corpus:` (seed 000 Part 5).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GoldFilterOutcome {
    /// The gold (relevant) document.
    pub doc_id: String,
    /// Whether `corpus:` has the document (absent: nothing could be judged).
    pub in_corpus: bool,
    /// The predicates it fails ([`Filter::describe`]): non-empty means a filter removed it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
    /// Fields a predicate reads that the document's metadata lacks (it cannot be judged
    /// against that predicate).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown_fields: Vec<String>,
}

/// The host's check of a case's applied predicates against its gold documents (present when
/// the config names a `corpus:` and the case has relevance labels; recomputed on every run,
/// never part of the execution cache).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FilterCheck {
    /// The predicates the case's retrievals applied, described, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub predicates: Vec<String>,
    /// One outcome per gold document (grade ≥ 1), in label order.
    pub gold: Vec<GoldFilterOutcome>,
}

impl FilterCheck {
    /// Whether every gold document was judged and every one of them fails a predicate (the
    /// seed's false exclusion of a query); `None` when some gold document could not be judged
    /// (absent from the corpus, or a field missing) and none was found excluded.
    pub fn all_gold_excluded(&self) -> Option<bool> {
        if self.gold.is_empty() {
            return None;
        }
        let judged = self
            .gold
            .iter()
            .all(|g| g.in_corpus && g.unknown_fields.is_empty());
        let all_failed = self.gold.iter().all(|g| !g.failed.is_empty());
        if all_failed {
            return Some(true);
        }
        judged.then_some(false)
    }
}

/// Where in the pipeline a retrieval metric reads its ranking (`at:` of a rank evaluator).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RankingStage {
    /// The final candidates (after fusion and rerank), as context assembly saw them: the
    /// default, and protocol 1's only list.
    Final,
    /// One lane's own ranking (`lane:NAME`).
    Lane(String),
    /// The fused ranking (`fused`): the fusion of more than one list, else the one list.
    Fused,
    /// After the rerank stage (`reranked`); excluded when the system has no rerank stage.
    Reranked,
    /// The assembled context, in order (`context`).
    Context,
}

impl RankingStage {
    /// Parses `lane:NAME`, `fused`, `reranked`, `context` or `final`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "final" | "retrieved" => Some(RankingStage::Final),
            "fused" => Some(RankingStage::Fused),
            "reranked" => Some(RankingStage::Reranked),
            "context" => Some(RankingStage::Context),
            _ => text
                .strip_prefix("lane:")
                .filter(|l| !l.is_empty())
                .map(|l| RankingStage::Lane(l.to_string())),
        }
    }

    /// The stage as written in `at:`.
    pub fn label(&self) -> String {
        match self {
            RankingStage::Final => "final".into(),
            RankingStage::Lane(l) => format!("lane:{l}"),
            RankingStage::Fused => "fused".into(),
            RankingStage::Reranked => "reranked".into(),
            RankingStage::Context => "context".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn filter(v: Value) -> Filter {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn predicates_judge_metadata_and_say_when_the_field_is_absent() {
        let m = meta(json!({"tenant": "acme", "locale": "en-US", "year": 2024, "gone": null}));
        let eq = filter(json!({"field": "tenant", "op": "=", "value": "acme"}));
        assert_eq!(eq.admits(&m).unwrap(), Some(true));
        let other = filter(json!({"field": "tenant", "op": "=", "value": "globex"}));
        assert_eq!(other.admits(&m).unwrap(), Some(false));
        let within = filter(json!({"field": "locale", "op": "in", "value": ["en-US", "en-GB"]}));
        assert_eq!(within.admits(&m).unwrap(), Some(true));
        let not_in = filter(json!({"field": "locale", "op": "not_in", "value": ["en-US"]}));
        assert_eq!(not_in.admits(&m).unwrap(), Some(false));
        let newer = filter(json!({"field": "year", "op": ">=", "value": 2024.0}));
        assert_eq!(newer.admits(&m).unwrap(), Some(true));
        let older = filter(json!({"field": "year", "op": "<", "value": 2024}));
        assert_eq!(older.admits(&m).unwrap(), Some(false));
        // A string against a number does not order.
        let mixed = filter(json!({"field": "year", "op": "<", "value": "2025"}));
        assert_eq!(mixed.admits(&m).unwrap(), Some(false));
        let absent = filter(json!({"field": "region", "op": "=", "value": "eu"}));
        assert_eq!(absent.admits(&m).unwrap(), None);
        let null = filter(json!({"field": "gone", "op": "=", "value": "x"}));
        assert_eq!(null.admits(&m).unwrap(), None);
        let exists = filter(json!({"field": "region", "op": "exists"}));
        assert_eq!(exists.admits(&m).unwrap(), Some(false));
        assert_eq!(exists.describe(), "region exists");
        assert_eq!(eq.describe(), r#"tenant = "acme""#);
        let bad = filter(json!({"field": "locale", "op": "in", "value": "en-US"}));
        assert!(bad.check().is_err());
        assert_eq!(
            bad.admits(&m).unwrap_err().to_string(),
            "predicate `locale in` needs an array value, got \"en-US\""
        );
    }

    #[test]
    fn malformed_predicates_do_not_parse() {
        let unknown_op = serde_json::from_value::<Filter>(json!({"field": "a", "op": "~"}));
        assert!(unknown_op.is_err());
        let no_field = serde_json::from_value::<Filter>(json!({"op": "=", "value": 1}));
        assert!(no_field
            .unwrap_err()
            .to_string()
            .contains("missing field `field`"));
    }

    #[test]
    fn ranking_stages_parse() {
        assert_eq!(
            RankingStage::parse("lane:bm25"),
            Some(RankingStage::Lane("bm25".into()))
        );
        assert_eq!(RankingStage::parse("lane:"), None);
        assert_eq!(RankingStage::parse("fused"), Some(RankingStage::Fused));
        assert_eq!(RankingStage::parse("nope"), None);
        assert_eq!(RankingStage::Lane("x".into()).label(), "lane:x");
    }
}
