//! `filter_exclusion`: how often the metadata predicates a retrieval applied removed the gold
//! documents before any ranker saw them (seed 000 Part 5), read from the host's check of the
//! predicates on the gold documents' metadata (`trace.filter_check`, filled when the config
//! names a `corpus:`).
//!
//! - `unit: query` (default), criterion `filter_false_exclusion`: a case scores 1 when every
//!   gold document fails an applied predicate, else 0 ([`FilterCheck::all_gold_excluded`]); the
//!   run's value is the seed's rate, `# queries whose gold documents were all excluded / #
//!   queries with a gold document`, with its exact Clopper–Pearson interval (every value is 0
//!   or 1). Lower is better: a gate writes it as `max:`.
//! - `unit: document`, criterion `filter_false_exclusion_documents`: a case scores the share
//!   of its gold documents a predicate removed
//!   ([`oloproof_metrics::rag::filters::ExclusionCounts::document_rate`] of the case); the run's
//!   value is their mean over cases (a macro average: each query weighs the same, whatever its
//!   number of gold documents), with a bootstrap interval.
//!
//! Excluded: `no_relevance_labels`, `no_relevant_documents`, `no_corpus` (the run has no
//! `corpus:`, so nothing was checked), `gold_not_in_corpus` (a gold document the corpus does
//! not have, and no exclusion found among the others) and `field_not_in_corpus:FIELD` (a
//! predicate reads a field a gold document's metadata lacks). A case whose retrieval failed is
//! `missing`.

use oloproof_core::case::Case;
use oloproof_core::config::EvaluatorEntry;
use oloproof_core::pipeline::{FilterCheck, GoldFilterOutcome};
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use oloproof_metrics::rag::filters::{false_exclusion, FilterOutcome};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{excluded, missing, verdict, EntryParser, Evaluator, EvaluatorSpec, SummaryKind};
use crate::judged::JudgeEnv;

/// What one observation of `filter_exclusion` is.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum ExclusionUnit {
    /// A query: all of its gold documents excluded, or not (the seed's definition).
    #[default]
    Query,
    /// The share of a query's gold documents excluded.
    Document,
}

/// Options of `filter_exclusion`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct FilterExclusionOptions {
    /// Criterion name (default `filter_false_exclusion`, or
    /// `filter_false_exclusion_documents` with `unit: document`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// `query` (default) or `document`.
    #[serde(default)]
    pub unit: ExclusionUnit,
}

/// The `filter_exclusion` type.
pub(crate) const SPEC: EvaluatorSpec = EvaluatorSpec {
    name: "filter_exclusion",
    build: |p: &EntryParser<'_>| {
        let options: FilterExclusionOptions = p.options()?;
        let default = match options.unit {
            ExclusionUnit::Query => "filter_false_exclusion",
            ExclusionUnit::Document => "filter_false_exclusion_documents",
        };
        Ok(Box::new(FilterExclusion {
            criterion: options
                .criterion
                .clone()
                .unwrap_or_else(|| default.to_string()),
            identity: p.identity(&options),
            unit: options.unit,
        }))
    },
};

struct FilterExclusion {
    criterion: String,
    identity: EvaluatorEntry,
    unit: ExclusionUnit,
}

/// Why a check cannot say whether `g` was excluded: `None` when it was judged.
fn unjudged(g: &GoldFilterOutcome) -> Option<String> {
    if !g.failed.is_empty() {
        // Failing one predicate is enough, whatever the others could not judge.
        return None;
    }
    if !g.in_corpus {
        return Some("gold_not_in_corpus".into());
    }
    g.unknown_fields
        .first()
        .map(|f| format!("field_not_in_corpus:{f}"))
}

fn detail(check: &FilterCheck) -> Value {
    let excluded: Vec<Value> = check
        .gold
        .iter()
        .filter(|g| !g.failed.is_empty())
        .map(|g| json!({"doc_id": g.doc_id, "failed": g.failed}))
        .collect();
    json!({
        "predicates": check.predicates,
        "gold": check.gold.len(),
        "excluded_gold": excluded,
    })
}

impl Evaluator for FilterExclusion {
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
        let Some(relevant) = case.expected.relevant.as_ref() else {
            return excluded(&self.criterion, "no_relevance_labels");
        };
        if !relevant.iter().any(|r| r.grade >= 1.0) {
            return excluded(&self.criterion, "no_relevant_documents");
        }
        let Some(check) = &trace.filter_check else {
            if trace.error.is_some() || trace.retrieval.is_none() {
                return missing(&self.criterion, trace, "the retrieval");
            }
            return excluded(&self.criterion, "no_corpus");
        };
        if check.gold.is_empty() {
            return excluded(&self.criterion, "no_relevant_documents");
        }
        let unjudged_reason = || check.gold.iter().find_map(unjudged);
        let value = match self.unit {
            ExclusionUnit::Query => match check.all_gold_excluded() {
                Some(all) => f64::from(u8::from(all)),
                None => {
                    let reason = unjudged_reason().unwrap_or_else(|| "gold_not_in_corpus".into());
                    return verdict(&self.criterion, Verdict::Excluded { reason }, detail(check));
                }
            },
            ExclusionUnit::Document => {
                if let Some(reason) = unjudged_reason() {
                    return verdict(&self.criterion, Verdict::Excluded { reason }, detail(check));
                }
                let outcome = FilterOutcome::new(
                    check.gold.iter().map(|g| g.doc_id.clone()),
                    check
                        .gold
                        .iter()
                        .filter(|g| g.failed.is_empty())
                        .map(|g| g.doc_id.clone()),
                );
                match false_exclusion(std::slice::from_ref(&outcome)).document_rate() {
                    Some(rate) => rate,
                    None => return excluded(&self.criterion, "no_relevant_documents"),
                }
            }
        };
        verdict(&self.criterion, Verdict::score(value), detail(check))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::from_json;
    use oloproof_core::case::parse_cases;
    use oloproof_core::passage::Retrieval;
    use oloproof_core::trace::{ErrorKind, StageError};
    use serde_json::json;

    fn case(relevant: &str) -> Case {
        let line = format!(r#"{{"id":"c","input":{{}},"expected":{{"relevant":{relevant}}}}}"#);
        parse_cases("c.jsonl", &line).unwrap().remove(0)
    }

    fn gold(doc: &str, failed: &[&str]) -> GoldFilterOutcome {
        GoldFilterOutcome {
            doc_id: doc.into(),
            in_corpus: true,
            failed: failed.iter().map(|f| f.to_string()).collect(),
            unknown_fields: Vec::new(),
        }
    }

    fn trace(check: Option<FilterCheck>) -> Trace {
        let mut t = Trace::new("c");
        t.retrieval = Some(Retrieval::new(None, 4, Vec::new()));
        t.filter_check = check;
        t
    }

    fn check(predicate: &str, gold: Vec<GoldFilterOutcome>) -> FilterCheck {
        FilterCheck {
            predicates: vec![predicate.into()],
            gold,
        }
    }

    fn eval(entry: Value, c: &Case, t: &Trace) -> CriterionVerdict {
        from_json(&entry).unwrap().evaluate(c, t, None)
    }

    /// Seed 000 Part 5's worked example, one FilterCheck per query as the host's check of
    /// `corpus:` gives it: q1 (gold d2, en-GB, filter locale = en-US) and q3 (gold d3, tenant
    /// globex, filter tenant = acme) lose their gold document; q2 and q4 keep it. Rate 50 %.
    #[test]
    fn the_seed_worked_example_is_half_of_the_queries() {
        let queries = [
            (
                "d2",
                check(
                    r#"locale = "en-US""#,
                    vec![gold("d2", &[r#"locale = "en-US""#])],
                ),
            ),
            ("d4", check(r#"tenant = "acme""#, vec![gold("d4", &[])])),
            (
                "d3",
                check(
                    r#"tenant = "acme""#,
                    vec![gold("d3", &[r#"tenant = "acme""#])],
                ),
            ),
            ("d5", check(r#"locale = "de-DE""#, vec![gold("d5", &[])])),
        ];
        let query = from_json(&json!({"type": "filter_exclusion"})).unwrap();
        let document = from_json(&json!({"type": "filter_exclusion", "unit": "document"})).unwrap();
        assert_eq!(query.criterion(), "filter_false_exclusion");
        assert_eq!(document.criterion(), "filter_false_exclusion_documents");
        let mut values = Vec::new();
        for (doc, fc) in queries {
            let c = case(&format!(r#"[{{"doc_id":"{doc}"}}]"#));
            let t = trace(Some(fc));
            let v = query.evaluate(&c, &t, None);
            values.push(v.verdict.clone());
            assert_eq!(
                document.evaluate(&c, &t, None).verdict,
                v.verdict,
                "one gold document: both units agree"
            );
        }
        let refs: Vec<&Verdict> = values.iter().collect();
        let s = crate::summary::summarize_criterion(
            "filter_false_exclusion",
            SummaryKind::Rate,
            &refs,
            1,
            100,
        );
        assert_eq!(s.value, Some(0.5));
        assert_eq!(s.passed, Some(2));
        assert_eq!(s.interval_method.as_deref(), Some("clopper_pearson"));
    }

    #[test]
    fn several_gold_documents_query_and_document_rates() {
        let c = case(r#"[{"doc_id":"a"},{"doc_id":"b"},{"doc_id":"z","grade":0}]"#);
        let partial = trace(Some(check(
            r#"tenant = "acme""#,
            vec![gold("a", &[r#"tenant = "acme""#]), gold("b", &[])],
        )));
        let q = eval(json!({"type": "filter_exclusion"}), &c, &partial);
        assert_eq!(q.verdict, Verdict::Score { value: 0.0 });
        assert_eq!(q.detail["excluded_gold"][0]["doc_id"], json!("a"));
        let d = eval(
            json!({"type": "filter_exclusion", "unit": "document"}),
            &c,
            &partial,
        );
        assert_eq!(d.verdict, Verdict::Score { value: 0.5 });
        let all = trace(Some(check(
            "x exists",
            vec![gold("a", &["x exists"]), gold("b", &["x exists"])],
        )));
        assert_eq!(
            eval(json!({"type": "filter_exclusion"}), &c, &all).verdict,
            Verdict::Score { value: 1.0 }
        );
    }

    #[test]
    fn what_cannot_be_judged_is_excluded_with_its_reason() {
        let c = case(r#"[{"doc_id":"a"},{"doc_id":"b"}]"#);
        let reason = |v: CriterionVerdict| match v.verdict {
            Verdict::Excluded { reason } => reason,
            other => panic!("{other:?}"),
        };
        let q = json!({"type": "filter_exclusion"});
        let d = json!({"type": "filter_exclusion", "unit": "document"});
        assert_eq!(reason(eval(q.clone(), &c, &trace(None))), "no_corpus");
        let mut absent = gold("b", &[]);
        absent.in_corpus = false;
        let t = trace(Some(check("p", vec![gold("a", &[]), absent.clone()])));
        assert_eq!(reason(eval(q.clone(), &c, &t)), "gold_not_in_corpus");
        assert_eq!(reason(eval(d.clone(), &c, &t)), "gold_not_in_corpus");
        let mut unknown = gold("b", &[]);
        unknown.unknown_fields = vec!["locale".into()];
        let t = trace(Some(check("p", vec![gold("a", &[]), unknown])));
        assert_eq!(
            reason(eval(q.clone(), &c, &t)),
            "field_not_in_corpus:locale"
        );
        // One gold document could not be judged, the other was excluded: the query is not
        // known to be fully excluded, and the document rate is not known either.
        let t = trace(Some(check("p", vec![gold("a", &["p"]), absent])));
        assert_eq!(reason(eval(q.clone(), &c, &t)), "gold_not_in_corpus");
        assert_eq!(reason(eval(d, &c, &t)), "gold_not_in_corpus");
        let unlabelled = parse_cases("c.jsonl", r#"{"id":"u","input":{}}"#)
            .unwrap()
            .remove(0);
        assert_eq!(
            reason(eval(q.clone(), &unlabelled, &trace(None))),
            "no_relevance_labels"
        );
        let zero = case(r#"[{"doc_id":"a","grade":0}]"#);
        assert_eq!(
            reason(eval(q.clone(), &zero, &trace(None))),
            "no_relevant_documents"
        );
        let mut failed = Trace::new("c");
        failed.error = Some(StageError {
            stage: "retrieve".into(),
            kind: ErrorKind::Protocol,
            error_type: None,
            message: "`filters[0]`: predicate `locale in` needs an array value".into(),
            traceback: None,
            stderr_tail: vec![],
        });
        assert!(matches!(
            eval(q.clone(), &c, &failed).verdict,
            Verdict::Missing { .. }
        ));
        let bad = from_json(&json!({"type": "filter_exclusion", "unit": "chunk"}))
            .err()
            .unwrap();
        assert!(bad.to_string().contains("chunk"), "{bad}");
    }
}
