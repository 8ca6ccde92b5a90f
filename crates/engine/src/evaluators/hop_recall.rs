//! `hop_recall`: recall at `k` of the hops of an iterative retrieval (the `hops` a `retrieve`
//! reply carries beside its final candidates), to say which hop of a multi-hop answer lost the
//! evidence.
//!
//! Hop `n` of a case is the `n`-th hop (1-based) of each `retrieve` call that hopped: with
//! several lanes or rewrite queries, hop `n`'s units are the union of each call's hop-`n` top
//! `k`. `hop: N` measures hop `N` alone; `hop: N` with `cumulative: true` the union of hops
//! `1..=N`; `hop: cumulative` the union of every hop. Recall is the share of the case's
//! relevant units (grade ≥ 1) found, as `recall`'s.
//!
//! Each verdict's detail names, for every relevant unit, the hop whose top `k` first found it
//! (`first_hop`, `null`: no hop found it) and the number of hops (`hops`).
//!
//! Excluded: `no_hops` (no call hopped), `fewer_hops` (`hop: N` on a case with fewer than `N`
//! hops; a cumulative recall counts the hops the case ran), and the labels' reasons. A case
//! whose retrieval failed is `missing`.

use std::collections::{BTreeMap, BTreeSet};

use oloproof_core::case::Case;
use oloproof_core::config::EvaluatorEntry;
use oloproof_core::pipeline::{Hop, RankingStage};
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::ranking::{ranking_at, Labels, RelevanceUnit};
use super::{excluded, verdict, EntryParser, Evaluator, EvaluatorSpec, SummaryKind};
use crate::judged::JudgeEnv;

/// Which hops `hop_recall` reads: a hop number (1-based), or `cumulative` (every hop).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HopChoice {
    /// Hop `N` (with `cumulative: true`, hops `1..=N`).
    Number(usize),
    /// Every hop the case ran (written `cumulative`).
    Cumulative,
}

impl Serialize for HopChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            HopChoice::Number(n) => s.serialize_u64(*n as u64),
            HopChoice::Cumulative => s.serialize_str("cumulative"),
        }
    }
}

impl<'de> Deserialize<'de> for HopChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = HopChoice;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a hop number (1, 2, …) or `cumulative`")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<HopChoice, E> {
                usize::try_from(v)
                    .map(HopChoice::Number)
                    .map_err(|_| E::custom("hop number too large"))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<HopChoice, E> {
                u64::try_from(v)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
                    .and_then(|v| self.visit_u64(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<HopChoice, E> {
                match v {
                    "cumulative" => Ok(HopChoice::Cumulative),
                    other => Err(E::invalid_value(serde::de::Unexpected::Str(other), &self)),
                }
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// Options of `hop_recall`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HopRecallOptions {
    /// Criterion name (default `hop_recall_at_<k>_hop_<N>`, `hop_recall_at_<k>_hops_1_to_<N>`
    /// or `hop_recall_at_<k>_cumulative`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// Rank cutoff within each hop's list (at least 1).
    pub k: usize,
    /// The hop (1-based), or `cumulative` for all of them.
    pub hop: HopChoice,
    /// With a hop number: the union of hops 1 to it (default `false`: that hop alone).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cumulative: bool,
    /// What counts as one unit.
    #[serde(default)]
    pub relevance_unit: RelevanceUnit,
}

/// The `hop_recall` type.
pub(crate) const SPEC: EvaluatorSpec = EvaluatorSpec {
    name: "hop_recall",
    build: |p: &EntryParser<'_>| {
        let options: HopRecallOptions = p.options()?;
        if options.k == 0 {
            return Err(p.error("k", "`k` must be at least 1"));
        }
        let hops = match (options.hop, options.cumulative) {
            (HopChoice::Number(0), _) => {
                return Err(p.error("hop", "`hop` counts from 1 (the first hop)"))
            }
            (HopChoice::Number(n), false) => Hops::One(n),
            (HopChoice::Number(n), true) => Hops::Through(n),
            (HopChoice::Cumulative, _) => Hops::All,
        };
        let suffix = match hops {
            Hops::One(n) => format!("hop_{n}"),
            Hops::Through(n) => format!("hops_1_to_{n}"),
            Hops::All => "cumulative".into(),
        };
        Ok(Box::new(HopRecall {
            criterion: options
                .criterion
                .clone()
                .unwrap_or_else(|| format!("hop_recall_at_{}_{suffix}", options.k)),
            identity: p.identity(&options),
            k: options.k,
            hops,
            unit: options.relevance_unit,
        }))
    },
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hops {
    One(usize),
    Through(usize),
    All,
}

struct HopRecall {
    criterion: String,
    identity: EvaluatorEntry,
    k: usize,
    hops: Hops,
    unit: RelevanceUnit,
}

/// Every call's hops, in call order: the pipeline's retrieve calls, else the one retrieval.
fn hop_lists(trace: &Trace) -> Vec<&[Hop]> {
    match &trace.pipeline {
        Some(p) if !p.retrievals.is_empty() => p
            .retrievals
            .iter()
            .map(|r| r.retrieval.hops.as_slice())
            .filter(|h| !h.is_empty())
            .collect(),
        _ => trace
            .retrieval
            .iter()
            .map(|r| r.hops.as_slice())
            .filter(|h| !h.is_empty())
            .collect(),
    }
}

impl Evaluator for HopRecall {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        SummaryKind::Rate
    }

    fn identity(&self) -> &EvaluatorEntry {
        &self.identity
    }

    fn evaluate(&self, case: &Case, trace: &Trace, _: Option<&JudgeEnv<'_>>) -> CriterionVerdict {
        let labels = match Labels::of(case, self.unit).and_then(Labels::require_relevant) {
            Ok(l) => l,
            Err(reason) => return excluded(&self.criterion, reason),
        };
        if let Err(absent) = ranking_at(trace, &RankingStage::Final) {
            return absent.verdict(&self.criterion, trace);
        }
        let calls = hop_lists(trace);
        let count = calls.iter().map(|h| h.len()).max().unwrap_or(0);
        if count == 0 {
            return excluded(&self.criterion, "no_hops");
        }
        // The relevant units each hop's top k found (union over calls).
        let found: Vec<BTreeSet<String>> = (0..count)
            .map(|i| {
                let mut units = BTreeSet::new();
                for hop in calls.iter().filter_map(|h| h.get(i)) {
                    let mut seen = BTreeSet::new();
                    for p in &hop.candidates {
                        let key = labels.key(p);
                        if !seen.insert(key.clone()) {
                            continue;
                        }
                        if seen.len() > self.k {
                            break;
                        }
                        if labels.grade(p) >= 1.0 {
                            units.insert(key);
                        }
                    }
                }
                units
            })
            .collect();
        let relevant = labels.relevant();
        let first_hop: BTreeMap<String, Option<usize>> = relevant
            .iter()
            .map(|u| {
                let first = found.iter().position(|f| f.contains(*u)).map(|i| i + 1);
                (Labels::show(u), first)
            })
            .collect();
        let detail = json!({"hops": count, "first_hop": first_hop});
        let range = match self.hops {
            Hops::One(n) if n > count => {
                return verdict(
                    &self.criterion,
                    Verdict::Excluded {
                        reason: "fewer_hops".into(),
                    },
                    detail,
                )
            }
            Hops::One(n) => n - 1..n,
            Hops::Through(n) => 0..n.min(count),
            Hops::All => 0..count,
        };
        let union: BTreeSet<&String> = found[range].iter().flatten().collect();
        let value = union.len() as f64 / relevant.len() as f64;
        verdict(&self.criterion, Verdict::score(value), detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::from_json;
    use oloproof_core::case::parse_cases;
    use oloproof_core::passage::{Passage, Retrieval};
    use oloproof_core::pipeline::{LaneRetrieval, Pipeline};
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

    fn hop(docs: &[&str]) -> Hop {
        Hop {
            query: None,
            candidates: passages(docs),
            filters: Vec::new(),
        }
    }

    fn case(relevant: &str) -> Case {
        let line = format!(r#"{{"id":"c","input":{{}},"expected":{{"relevant":{relevant}}}}}"#);
        parse_cases("c.jsonl", &line).unwrap().remove(0)
    }

    fn trace(hops: Vec<Hop>) -> Trace {
        let mut t = Trace::new("c");
        let mut r = Retrieval::new(None, 10, passages(&["x"]));
        r.hops = hops;
        t.retrieval = Some(r);
        t
    }

    fn eval(entry: Value, c: &Case, t: &Trace) -> CriterionVerdict {
        from_json(&entry).unwrap().evaluate(c, t, None)
    }

    fn score(v: &CriterionVerdict) -> f64 {
        match v.verdict {
            Verdict::Score { value } => value,
            ref other => panic!("{other:?}"),
        }
    }

    /// Three gold documents: hop 1 finds a within its top 2, hop 2 finds b (c is at position 3,
    /// beyond k), hop 3 finds nothing new.
    #[test]
    fn each_hop_cumulative_recall_and_the_hop_that_found_each_document() {
        let c = case(r#"[{"doc_id":"a"},{"doc_id":"b"},{"doc_id":"c"}]"#);
        let t = trace(vec![
            hop(&["a", "x"]),
            hop(&["a", "b", "c"]),
            hop(&["y", "z"]),
        ]);
        let h1 = eval(json!({"type": "hop_recall", "k": 2, "hop": 1}), &c, &t);
        assert_eq!(h1.criterion, "hop_recall_at_2_hop_1");
        assert!((score(&h1) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(h1.detail["first_hop"], json!({"a": 1, "b": 2, "c": null}));
        assert_eq!(h1.detail["hops"], json!(3));
        let h2 = eval(json!({"type": "hop_recall", "k": 2, "hop": 2}), &c, &t);
        assert!((score(&h2) - 2.0 / 3.0).abs() < 1e-12);
        let h3 = eval(json!({"type": "hop_recall", "k": 2, "hop": 3}), &c, &t);
        assert_eq!(score(&h3), 0.0);
        let through = eval(
            json!({"type": "hop_recall", "k": 2, "hop": 2, "cumulative": true}),
            &c,
            &t,
        );
        assert_eq!(through.criterion, "hop_recall_at_2_hops_1_to_2");
        assert!((score(&through) - 2.0 / 3.0).abs() < 1e-12);
        let all = eval(
            json!({"type": "hop_recall", "k": 3, "hop": "cumulative"}),
            &c,
            &t,
        );
        assert_eq!(all.criterion, "hop_recall_at_3_cumulative");
        assert_eq!(score(&all), 1.0);
        assert_eq!(all.detail["first_hop"], json!({"a": 1, "b": 2, "c": 2}));
        // Beyond the last hop: hop 4 alone is excluded, the cumulative recall counts 1..=3.
        let h4 = eval(json!({"type": "hop_recall", "k": 3, "hop": 4}), &c, &t);
        assert_eq!(
            h4.verdict,
            Verdict::Excluded {
                reason: "fewer_hops".into()
            }
        );
        let through4 = eval(
            json!({"type": "hop_recall", "k": 3, "hop": 4, "cumulative": true}),
            &c,
            &t,
        );
        assert_eq!(score(&through4), 1.0);
    }

    #[test]
    fn a_pipelines_hops_are_taken_per_call() {
        let c = case(r#"[{"doc_id":"a"},{"doc_id":"b"}]"#);
        let call = |lane: &str, hops: Vec<Hop>| {
            let mut r = Retrieval::new(None, 10, passages(&["x"]));
            r.hops = hops;
            LaneRetrieval {
                lane: Some(lane.into()),
                query: None,
                retrieval: r,
                cached: false,
                latency_ms: None,
            }
        };
        let mut t = trace(Vec::new());
        t.pipeline = Some(Box::new(Pipeline {
            retrievals: vec![
                call("bm25", vec![hop(&["a"]), hop(&["x"])]),
                call("tri", vec![hop(&["x"]), hop(&["b"])]),
            ],
            ..Pipeline::default()
        }));
        let h1 = eval(json!({"type": "hop_recall", "k": 1, "hop": 1}), &c, &t);
        assert_eq!(score(&h1), 0.5);
        let h2 = eval(json!({"type": "hop_recall", "k": 1, "hop": 2}), &c, &t);
        assert_eq!(score(&h2), 0.5);
        assert_eq!(h2.detail["first_hop"], json!({"a": 1, "b": 2}));
    }

    #[test]
    fn exclusions_missing_and_bad_options() {
        let c = case(r#"[{"doc_id":"a"}]"#);
        let entry = json!({"type": "hop_recall", "k": 2, "hop": 1});
        assert_eq!(
            eval(entry.clone(), &c, &trace(Vec::new())).verdict,
            Verdict::Excluded {
                reason: "no_hops".into()
            }
        );
        let unlabelled = parse_cases("c.jsonl", r#"{"id":"u","input":{}}"#)
            .unwrap()
            .remove(0);
        assert_eq!(
            eval(entry.clone(), &unlabelled, &trace(vec![hop(&["a"])])).verdict,
            Verdict::Excluded {
                reason: "no_relevance_labels".into()
            }
        );
        let mut failed = Trace::new("c");
        failed.error = Some(StageError {
            stage: "retrieve".into(),
            kind: ErrorKind::Protocol,
            error_type: None,
            message: "`hops[1].candidates`: a hop without candidates".into(),
            traceback: None,
            stderr_tail: vec![],
        });
        assert!(matches!(
            eval(entry, &c, &failed).verdict,
            Verdict::Missing { .. }
        ));
        let zero = from_json(&json!({"type": "hop_recall", "k": 2, "hop": 0}))
            .err()
            .unwrap();
        assert!(zero.to_string().contains("counts from 1"), "{zero}");
        let word = from_json(&json!({"type": "hop_recall", "k": 2, "hop": "last"}))
            .err()
            .unwrap();
        assert!(
            word.to_string()
                .contains(r#"invalid value: string "last" at evaluators[0].hop"#),
            "{word}"
        );
        let no_hop = from_json(&json!({"type": "hop_recall", "k": 2}))
            .err()
            .unwrap();
        assert!(no_hop.to_string().contains("hop"), "{no_hop}");
    }
}
