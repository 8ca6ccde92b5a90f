//! What context assembly kept (seed 000 Part 4, "assemblage du contexte"), from the labels and
//! the trace alone (no model):
//!
//! - `context_noise` {threshold}: the share of the context's passages whose relevance grade is
//!   below `threshold` (default 1: unlabelled or grade-0 passages are noise). 0 is a context
//!   of relevant passages only. Excluded: `no_relevance_labels`, `relevant_without_chunk_id`
//!   (chunk unit), `no_context` (none was assembled), `empty_context`.
//! - `context_compression` {unit}: the context over what retrieval returned. `unit: passages`
//!   (default): context passages / retrieved candidates; `unit: tokens`: the context's tokens
//!   over the tokens of every counted candidate (the system's `count_tokens` counts the
//!   candidates within `top_k` when a `token_budget` applies, so this is the share the budget
//!   kept). Excluded: `no_candidates`, `no_context`, `tokens_not_counted` (no budget, so no
//!   counts). Read it beside an answer-correctness criterion of the same run (`contains`,
//!   `token_f1`, …): a compression that keeps correctness is a saving, one that loses it is not.
//!
//! A case whose retrieval failed is `missing`.

use oloproof_core::case::Case;
use oloproof_core::config::EvaluatorEntry;
use oloproof_core::context::Context;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::ranking::{Labels, RelevanceUnit};
use super::{excluded, missing, verdict, EntryParser, Evaluator, EvaluatorSpec, SummaryKind};
use crate::judged::JudgeEnv;

/// Options of `context_noise`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ContextNoiseOptions {
    /// Criterion name (default `context_noise`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// A passage whose grade is below it is noise (default 1; at least 0).
    #[serde(default = "one")]
    pub threshold: f64,
    /// What counts as one unit.
    #[serde(default)]
    pub relevance_unit: RelevanceUnit,
}

fn one() -> f64 {
    1.0
}

/// What `context_compression` counts.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum CompressionUnit {
    /// Passages.
    #[default]
    Passages,
    /// The system's tokens (`count_tokens`).
    Tokens,
}

/// Options of `context_compression`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct ContextCompressionOptions {
    /// Criterion name (default `context_compression`, `context_compression_tokens` with
    /// `unit: tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// `passages` (default) or `tokens`.
    #[serde(default)]
    pub unit: CompressionUnit,
}

/// The `context_noise` type.
pub(crate) const CONTEXT_NOISE: EvaluatorSpec = EvaluatorSpec {
    name: "context_noise",
    build: |p: &EntryParser<'_>| {
        let options: ContextNoiseOptions = p.options()?;
        if !options.threshold.is_finite() || options.threshold < 0.0 {
            return Err(p.error("threshold", "`threshold` must be a grade, 0 or more"));
        }
        Ok(Box::new(ContextNoise {
            criterion: options
                .criterion
                .clone()
                .unwrap_or_else(|| "context_noise".into()),
            identity: p.identity(&options),
            options,
        }))
    },
};

/// The `context_compression` type.
pub(crate) const CONTEXT_COMPRESSION: EvaluatorSpec = EvaluatorSpec {
    name: "context_compression",
    build: |p: &EntryParser<'_>| {
        let options: ContextCompressionOptions = p.options()?;
        let default = match options.unit {
            CompressionUnit::Passages => "context_compression",
            CompressionUnit::Tokens => "context_compression_tokens",
        };
        Ok(Box::new(ContextCompression {
            criterion: options.criterion.clone().unwrap_or_else(|| default.into()),
            identity: p.identity(&options),
            unit: options.unit,
        }))
    },
};

/// The context, or the verdict saying why there is none.
fn context_of<'t>(criterion: &str, trace: &'t Trace) -> Result<&'t Context, CriterionVerdict> {
    match &trace.context {
        Some(c) => Ok(c),
        None if trace.error.is_some() => Err(missing(criterion, trace, "the context")),
        None => Err(excluded(criterion, "no_context")),
    }
}

struct ContextNoise {
    criterion: String,
    identity: EvaluatorEntry,
    options: ContextNoiseOptions,
}

impl Evaluator for ContextNoise {
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
        let labels = match Labels::of(case, self.options.relevance_unit) {
            Ok(l) => l,
            Err(reason) => return excluded(&self.criterion, reason),
        };
        let context = match context_of(&self.criterion, trace) {
            Ok(c) => c,
            Err(v) => return v,
        };
        if context.passages.is_empty() {
            return excluded(&self.criterion, "empty_context");
        }
        let noise: Vec<String> = context
            .passages
            .iter()
            .filter(|p| labels.grade(&p.passage) < self.options.threshold)
            .map(|p| Labels::show(&labels.key(&p.passage)))
            .collect();
        let value = noise.len() as f64 / context.passages.len() as f64;
        verdict(
            &self.criterion,
            Verdict::score(value),
            json!({"context": context.passages.len(), "noise": noise}),
        )
    }
}

struct ContextCompression {
    criterion: String,
    identity: EvaluatorEntry,
    unit: CompressionUnit,
}

impl Evaluator for ContextCompression {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        SummaryKind::Rate
    }

    fn identity(&self) -> &EvaluatorEntry {
        &self.identity
    }

    fn evaluate(&self, _: &Case, trace: &Trace, _: Option<&JudgeEnv<'_>>) -> CriterionVerdict {
        let context = match context_of(&self.criterion, trace) {
            Ok(c) => c,
            Err(v) => return v,
        };
        let Some(retrieval) = &trace.retrieval else {
            // A context without a retrieval (`gold-context`): nothing was compressed.
            return excluded(&self.criterion, "no_candidates");
        };
        let candidates = retrieval.candidates.len();
        if candidates == 0 {
            return excluded(&self.criterion, "no_candidates");
        }
        match self.unit {
            CompressionUnit::Passages => {
                let kept = context.passages.len();
                verdict(
                    &self.criterion,
                    Verdict::score(kept as f64 / candidates as f64),
                    json!({"context": kept, "candidates": candidates}),
                )
            }
            CompressionUnit::Tokens => {
                let kept: Option<usize> = context.passages.iter().map(|p| p.tokens).sum();
                let dropped: usize = context.dropped.iter().filter_map(|d| d.tokens).sum();
                let Some(kept) = kept else {
                    return excluded(&self.criterion, "tokens_not_counted");
                };
                let counted = kept + dropped;
                if counted == 0 {
                    return excluded(&self.criterion, "tokens_not_counted");
                }
                verdict(
                    &self.criterion,
                    Verdict::score(kept as f64 / counted as f64),
                    json!({"context_tokens": kept, "counted_tokens": counted}),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::from_json;
    use oloproof_core::case::parse_cases;
    use oloproof_core::context::assemble;
    use oloproof_core::passage::{Passage, Retrieval};
    use serde_json::{json, Value};

    fn passages(docs: &[&str]) -> Vec<Passage> {
        docs.iter()
            .map(|d| Passage {
                doc_id: d.to_string(),
                chunk_id: None,
                score: None,
                text: Some(format!("text of {d}")),
                metadata: None,
            })
            .collect()
    }

    fn case(relevant: &str) -> Case {
        let line = format!(r#"{{"id":"c","input":{{}},"expected":{{"relevant":{relevant}}}}}"#);
        parse_cases("c.jsonl", &line).unwrap().remove(0)
    }

    /// Five candidates, the first `top_k` in the context, tokens counted when `counts`.
    fn trace(docs: &[&str], top_k: usize, budget: Option<(usize, &[usize])>) -> Trace {
        let mut t = Trace::new("c");
        let candidates = passages(docs);
        t.context = Some(assemble(&candidates, top_k, budget));
        t.retrieval = Some(Retrieval::new(None, 10, candidates));
        t
    }

    fn eval(entry: Value, c: &Case, t: &Trace) -> CriterionVerdict {
        from_json(&entry).unwrap().evaluate(c, t, None)
    }

    #[test]
    fn noise_is_the_share_of_context_passages_below_the_grade() {
        let c = case(r#"[{"doc_id":"a","grade":2},{"doc_id":"b","grade":1}]"#);
        let t = trace(&["a", "x", "b", "y", "z"], 4, None);
        let v = eval(json!({"type": "context_noise"}), &c, &t);
        assert_eq!(v.criterion, "context_noise");
        assert_eq!(v.verdict, Verdict::Score { value: 0.5 });
        assert_eq!(v.detail["noise"], json!(["x", "y"]));
        let strict = eval(json!({"type": "context_noise", "threshold": 2}), &c, &t);
        assert_eq!(strict.verdict, Verdict::Score { value: 0.75 });
        // Labels that are all grade 0: every passage is noise (defined, unlike recall).
        let zero = case(r#"[{"doc_id":"a","grade":0}]"#);
        assert_eq!(
            eval(json!({"type": "context_noise"}), &zero, &t).verdict,
            Verdict::Score { value: 1.0 }
        );
    }

    #[test]
    fn noise_exclusions() {
        let c = case(r#"[{"doc_id":"a"}]"#);
        let reason = |v: CriterionVerdict| match v.verdict {
            Verdict::Excluded { reason } => reason,
            other => panic!("{other:?}"),
        };
        let entry = json!({"type": "context_noise"});
        assert_eq!(
            reason(eval(entry.clone(), &c, &trace(&[], 4, None))),
            "empty_context"
        );
        let mut none = trace(&["a"], 1, None);
        none.context = None;
        assert_eq!(reason(eval(entry.clone(), &c, &none)), "no_context");
        none.error = Some(oloproof_core::trace::StageError {
            stage: "retrieve".into(),
            kind: oloproof_core::trace::ErrorKind::Crash,
            error_type: None,
            message: "worker exited".into(),
            traceback: None,
            stderr_tail: vec![],
        });
        assert!(matches!(
            eval(entry.clone(), &c, &none).verdict,
            Verdict::Missing { .. }
        ));
        let unlabelled = parse_cases("c.jsonl", r#"{"id":"u","input":{}}"#)
            .unwrap()
            .remove(0);
        assert_eq!(
            reason(eval(entry, &unlabelled, &trace(&["a"], 1, None))),
            "no_relevance_labels"
        );
        let negative = from_json(&json!({"type": "context_noise", "threshold": -1}))
            .err()
            .unwrap();
        assert!(negative.to_string().contains("threshold"), "{negative}");
    }

    #[test]
    fn compression_in_passages_and_in_tokens() {
        let c = case(r#"[{"doc_id":"a"}]"#);
        let t = trace(&["a", "b", "c", "d", "e"], 2, None);
        let v = eval(json!({"type": "context_compression"}), &c, &t);
        assert_eq!(v.verdict, Verdict::Score { value: 0.4 });
        assert_eq!(v.detail, json!({"context": 2, "candidates": 5}));
        let tokens = json!({"type": "context_compression", "unit": "tokens"});
        assert_eq!(
            eval(tokens.clone(), &c, &t).verdict,
            Verdict::Excluded {
                reason: "tokens_not_counted".into()
            }
        );
        // Budget 50 over the top 3 counted 30, 30, 10: a and c kept (40 of 70 tokens).
        let counted = trace(&["a", "b", "c", "d"], 3, Some((50, &[30, 30, 10])));
        let v = eval(tokens, &c, &counted);
        assert_eq!(v.criterion, "context_compression_tokens");
        assert_eq!(v.verdict, Verdict::Score { value: 40.0 / 70.0 });
        let empty = trace(&[], 2, None);
        assert_eq!(
            eval(json!({"type": "context_compression"}), &c, &empty).verdict,
            Verdict::Excluded {
                reason: "no_candidates".into()
            }
        );
    }
}
