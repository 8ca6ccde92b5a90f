//! The evaluator registry: deterministic criteria over one case's trace.
//!
//! Every evaluator returns a [`CriterionVerdict`]: pass/fail or a score when it can judge,
//! `Missing` (with the error) when the stage it reads failed, `Excluded` (with a reason code)
//! when the criterion does not apply to the case. Ranking criteria call the formulas of
//! `oloproof_metrics::ranking::query`, the same ones behind `oloproof trec`.

use std::collections::HashMap;

use oloproof_core::case::Case;
use oloproof_core::config::{
    CitationOptions, EvaluatorOptions, RankOptions, RelevanceUnit, TextMatchOptions,
};
use oloproof_core::passage::Retrieval;
use oloproof_core::source::SourceError;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use oloproof_metrics::ontology::conformance::SchemaValidator;
use oloproof_metrics::ranking::query;
use oloproof_metrics::text;
use serde_json::{json, Value};

pub use oloproof_core::summary::SummaryKind;

/// One criterion's judge.
pub trait Evaluator: Send + Sync {
    /// Criterion name.
    fn criterion(&self) -> &str;
    /// How its verdicts are summarised.
    fn kind(&self) -> SummaryKind;
    /// Its configuration, part of every judgment cache key.
    fn options(&self) -> &EvaluatorOptions;
    /// Judges one case.
    fn evaluate(&self, case: &Case, trace: &Trace) -> CriterionVerdict;
    /// Judges one case with the run's judges at hand (judged evaluators need them).
    fn evaluate_with(
        &self,
        case: &Case,
        trace: &Trace,
        env: Option<&crate::judged::JudgeEnv<'_>>,
    ) -> CriterionVerdict {
        let _ = env;
        self.evaluate(case, trace)
    }
    /// Names of the judges it calls (their settings join its judgment cache key).
    fn judge_names(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A criterion scored by a judge (see [`crate::judged`]).
struct Judged {
    criterion: String,
    options: EvaluatorOptions,
    judged: oloproof_core::config::JudgedOptions,
}

impl Evaluator for Judged {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        crate::judged::kind(&self.options)
    }

    fn options(&self) -> &EvaluatorOptions {
        &self.options
    }

    fn evaluate(&self, _case: &Case, _trace: &Trace) -> CriterionVerdict {
        verdict(
            &self.criterion,
            Verdict::Missing {
                error: "no judges are configured for this evaluation".into(),
            },
            Value::Null,
        )
    }

    fn evaluate_with(
        &self,
        case: &Case,
        trace: &Trace,
        env: Option<&crate::judged::JudgeEnv<'_>>,
    ) -> CriterionVerdict {
        match env {
            Some(env) => crate::judged::evaluate(
                &self.criterion,
                &self.options,
                &self.judged,
                case,
                trace,
                env,
            ),
            None => self.evaluate(case, trace),
        }
    }

    fn judge_names(&self) -> Vec<String> {
        // Every judge of an ensemble (`judges:`) joins the key.
        let mut names = self.judged.llm_judges();
        names.extend(self.judged.embedding_judge.clone());
        names
    }
}

/// Builds the evaluator an `evaluators:` entry describes.
pub fn build(options: &EvaluatorOptions) -> Box<dyn Evaluator> {
    let criterion = options.criterion();
    match options {
        EvaluatorOptions::Contains(o)
        | EvaluatorOptions::ExactMatch(o)
        | EvaluatorOptions::TokenF1(o) => Box::new(TextMatch {
            criterion,
            options: options.clone(),
            text: o.clone(),
        }),
        EvaluatorOptions::HitRate(o)
        | EvaluatorOptions::Recall(o)
        | EvaluatorOptions::Precision(o)
        | EvaluatorOptions::Mrr(o)
        | EvaluatorOptions::Ndcg(o) => Box::new(Ranking {
            criterion,
            options: options.clone(),
            rank: o.clone(),
        }),
        EvaluatorOptions::CitationValidity(o) => Box::new(Citations {
            criterion,
            options: options.clone(),
            citation: o.clone(),
        }),
        EvaluatorOptions::EntityGrounding(_) | EvaluatorOptions::ContextUtilisation(_) => {
            Box::new(ContextUse {
                criterion,
                options: options.clone(),
            })
        }
        EvaluatorOptions::SchemaValidity(o) => Box::new(SchemaCheck {
            criterion,
            options: options.clone(),
            field: o.field.clone().unwrap_or_else(|| "answer".to_string()),
            validator: SchemaValidator::new(&o.schema).map_err(|e| e.to_string()),
        }),
        EvaluatorOptions::EvidenceCoverage(_)
        | EvaluatorOptions::ContextSupport(_)
        | EvaluatorOptions::TaskAcceptance(_)
        | EvaluatorOptions::Abstention(_)
        | EvaluatorOptions::StaleEvidence(_) => crate::rubrex::build(options),
        other => Box::new(Judged {
            criterion,
            options: other.clone(),
            judged: other.judged().cloned().unwrap_or_default(),
        }),
    }
}

/// Structured-output validity: the output's `field` (a string is parsed as JSON first)
/// validates against the evaluator's JSON Schema (draft 2020-12,
/// `oloproof_metrics::ontology::conformance`, as `oloproof metric schema_validity`). A pass
/// or a fail with every violation in the detail; `missing` when the generation failed.
struct SchemaCheck {
    criterion: String,
    options: EvaluatorOptions,
    field: String,
    /// The compiled schema, or why it does not compile (checked when the config is
    /// validated, so a run never starts with one).
    validator: Result<SchemaValidator, String>,
}

impl Evaluator for SchemaCheck {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        SummaryKind::Proportion
    }

    fn options(&self) -> &EvaluatorOptions {
        &self.options
    }

    fn evaluate(&self, _case: &Case, trace: &Trace) -> CriterionVerdict {
        if trace.generation.is_none() {
            return missing(&self.criterion, trace, "the generation");
        }
        let validator = match &self.validator {
            Ok(v) => v,
            Err(e) => {
                return verdict(
                    &self.criterion,
                    Verdict::Missing {
                        error: format!("the JSON Schema does not compile: {e}"),
                    },
                    Value::Null,
                )
            }
        };
        let violations = match trace.output_field(&self.field) {
            Some(Value::String(text)) => validator.check_text(text),
            Some(value) => validator.violations(value),
            None => {
                return verdict(
                    &self.criterion,
                    Verdict::pass_if(false),
                    json!({"field": self.field, "errors": [{"instance_path": "", "schema_path": "(field)", "message": format!("the output has no `{}` field", self.field)}]}),
                )
            }
        };
        let errors: Vec<Value> = violations
            .iter()
            .map(|v| json!({"instance_path": v.instance_path, "schema_path": v.schema_path, "message": v.message}))
            .collect();
        verdict(
            &self.criterion,
            Verdict::pass_if(violations.is_empty()),
            json!({"field": self.field, "errors": errors}),
        )
    }
}

/// Checks that every `schema_validity` evaluator's JSON Schema compiles; the error points at
/// `evaluators[i].schema`.
pub fn validate_schemas(config: &oloproof_core::config::ProjectConfig) -> Result<(), SourceError> {
    for (i, ev) in config.options.evaluators.iter().enumerate() {
        if let EvaluatorOptions::SchemaValidity(o) = ev {
            if let Err(e) = SchemaValidator::new(&o.schema) {
                let mut err = config.source.error_at(
                    &format!("evaluators[{i}].schema"),
                    false,
                    format!("not a valid JSON Schema (draft 2020-12): {e}"),
                );
                err.expected = Some("a JSON Schema object, inline or in a JSON file".into());
                return Err(err);
            }
        }
    }
    Ok(())
}

/// Model-free checks of the answer against its context: entity grounding and context
/// utilisation (`oloproof_metrics::rag::context`).
struct ContextUse {
    criterion: String,
    options: EvaluatorOptions,
}

impl Evaluator for ContextUse {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        SummaryKind::Mean
    }

    fn options(&self) -> &EvaluatorOptions {
        &self.options
    }

    fn evaluate(&self, _case: &Case, trace: &Trace) -> CriterionVerdict {
        if trace.generation.is_none() {
            return missing(&self.criterion, trace, "the generation");
        }
        let Some(context) = trace.context.as_ref() else {
            return excluded(&self.criterion, "no_context");
        };
        match self.options {
            EvaluatorOptions::EntityGrounding(_) => {
                let Some(answer) = trace.answer() else {
                    return verdict(
                        &self.criterion,
                        Verdict::Missing {
                            error: "the system's output has no `answer`".into(),
                        },
                        Value::Null,
                    );
                };
                let text: Vec<&str> = context
                    .passages
                    .iter()
                    .filter_map(|p| p.passage.text.as_deref())
                    .collect();
                let g = oloproof_metrics::rag::context::grounding(answer, &text.join("\n"));
                let detail = json!({
                    "grounded": g.grounded.iter().map(|e| e.text()).collect::<Vec<_>>(),
                    "ungrounded": g.ungrounded.iter().map(|e| e.text()).collect::<Vec<_>>(),
                });
                match g.rate() {
                    Some(r) => verdict(&self.criterion, Verdict::score(r), detail),
                    None => verdict(
                        &self.criterion,
                        Verdict::Excluded {
                            reason: "no_entities".into(),
                        },
                        detail,
                    ),
                }
            }
            _ => {
                let ids: std::collections::BTreeSet<String> = context
                    .passages
                    .iter()
                    .map(|p| p.passage.doc_id.clone())
                    .collect();
                let cited: std::collections::BTreeSet<String> =
                    trace.citations().into_iter().collect();
                match oloproof_metrics::rag::context::context_utilisation(&ids, &cited) {
                    Some(u) => verdict(
                        &self.criterion,
                        Verdict::score(u),
                        json!({"context": ids.len(), "cited": cited.len()}),
                    ),
                    None => excluded(&self.criterion, "no_context"),
                }
            }
        }
    }
}

fn verdict(criterion: &str, verdict: Verdict, detail: Value) -> CriterionVerdict {
    CriterionVerdict {
        criterion: criterion.to_string(),
        verdict,
        detail,
    }
}

fn missing(criterion: &str, trace: &Trace, what: &str) -> CriterionVerdict {
    let error = match &trace.error {
        Some(e) => e.summary(),
        None => format!("{what} is not available"),
    };
    verdict(criterion, Verdict::Missing { error }, Value::Null)
}

fn excluded(criterion: &str, reason: &str) -> CriterionVerdict {
    verdict(
        criterion,
        Verdict::Excluded {
            reason: reason.to_string(),
        },
        Value::Null,
    )
}

struct TextMatch {
    criterion: String,
    options: EvaluatorOptions,
    text: TextMatchOptions,
}

impl Evaluator for TextMatch {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        match self.options {
            EvaluatorOptions::TokenF1(_) => SummaryKind::Mean,
            _ => SummaryKind::Proportion,
        }
    }

    fn options(&self) -> &EvaluatorOptions {
        &self.options
    }

    fn evaluate(&self, case: &Case, trace: &Trace) -> CriterionVerdict {
        let field = &self.text.field;
        let expected_field = &self.text.expected_field;
        let expected = match expected_field.as_str() {
            "answer" => case.expected.answer.as_ref(),
            other => case.expected.extra.get(other),
        };
        let references: Vec<String> = match expected {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            Some(Value::Number(n)) => vec![n.to_string()],
            _ => Vec::new(),
        };
        if references.is_empty() {
            return excluded(&self.criterion, &format!("no_expected_{expected_field}"));
        }
        if trace.generation.is_none() {
            return missing(&self.criterion, trace, "the generation");
        }
        let prediction = match trace.output_field(field) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => {
                return verdict(
                    &self.criterion,
                    Verdict::Missing {
                        error: format!("the system's output has no `{field}`"),
                    },
                    Value::Null,
                )
            }
            Some(other) => other.to_string(),
        };
        match self.options {
            EvaluatorOptions::Contains(_) => {
                let hit = references
                    .iter()
                    .position(|r| text::contains(&prediction, r));
                verdict(
                    &self.criterion,
                    Verdict::pass_if(hit.is_some()),
                    json!({"matched": hit.map(|i| &references[i])}),
                )
            }
            EvaluatorOptions::ExactMatch(_) => {
                let hit = references.iter().any(|r| text::exact_match(&prediction, r));
                verdict(&self.criterion, Verdict::pass_if(hit), Value::Null)
            }
            _ => {
                let best = references
                    .iter()
                    .map(|r| text::token_f1(&prediction, r))
                    .fold(0.0_f64, f64::max);
                verdict(&self.criterion, Verdict::score(best), Value::Null)
            }
        }
    }
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
    options: EvaluatorOptions,
    rank: RankOptions,
}

impl Evaluator for Ranking {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        match self.options {
            EvaluatorOptions::HitRate(_) => SummaryKind::Proportion,
            EvaluatorOptions::Recall(_) | EvaluatorOptions::Precision(_) => SummaryKind::Rate,
            _ => SummaryKind::Mean,
        }
    }

    fn options(&self) -> &EvaluatorOptions {
        &self.options
    }

    fn evaluate(&self, case: &Case, trace: &Trace) -> CriterionVerdict {
        if case.expected.relevant.is_none() {
            return excluded(&self.criterion, "no_relevance_labels");
        }
        let Some(retrieval) = &trace.retrieval else {
            if trace.error.is_none() && trace.intervention.is_some() {
                return excluded(&self.criterion, "no_retrieval_under_intervention");
            }
            return missing(&self.criterion, trace, "the retrieval");
        };
        let judged = match judge_ranking(case, retrieval, self.rank.relevance_unit) {
            Ok(j) => j,
            Err(reason) => return excluded(&self.criterion, reason),
        };
        let k = self.rank.k;
        let detail = json!({"best_relevant_position": judged.best_position});
        let v = match self.options {
            EvaluatorOptions::HitRate(_) => {
                Verdict::pass_if(query::hit_rate(&judged.gains, k) >= 1.0)
            }
            EvaluatorOptions::Recall(_) => {
                match query::recall(&judged.gains, judged.num_relevant(), k) {
                    Some(x) => Verdict::score(x),
                    None => Verdict::Excluded {
                        reason: "no_relevant_documents".into(),
                    },
                }
            }
            EvaluatorOptions::Precision(_) => Verdict::score(query::precision(&judged.gains, k)),
            EvaluatorOptions::Mrr(_) => Verdict::score(query::reciprocal_rank(&judged.gains, k)),
            _ => match query::ndcg_cut(&judged.gains, &judged.judged, k) {
                Some(x) => Verdict::score(x),
                None => Verdict::Excluded {
                    reason: "no_relevant_documents".into(),
                },
            },
        };
        verdict(&self.criterion, v, detail)
    }
}

struct Citations {
    criterion: String,
    options: EvaluatorOptions,
    citation: CitationOptions,
}

impl Evaluator for Citations {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        SummaryKind::Proportion
    }

    fn options(&self) -> &EvaluatorOptions {
        &self.options
    }

    fn evaluate(&self, _case: &Case, trace: &Trace) -> CriterionVerdict {
        if trace.generation.is_none() {
            return missing(&self.criterion, trace, "the generation");
        }
        let cited = trace.citations();
        let mut known = std::collections::HashSet::new();
        if let Some(ctx) = &trace.context {
            for p in &ctx.passages {
                known.insert(p.passage.doc_id.as_str());
                if let Some(c) = &p.passage.chunk_id {
                    known.insert(c.as_str());
                }
            }
        }
        let invalid: Vec<&String> = cited
            .iter()
            .filter(|c| !known.contains(c.as_str()))
            .collect();
        if cited.is_empty() {
            let v = Verdict::pass_if(!self.citation.require_citations);
            return verdict(&self.criterion, v, json!({"cited": 0}));
        }
        verdict(
            &self.criterion,
            Verdict::pass_if(invalid.is_empty()),
            json!({"cited": cited.len(), "invalid": invalid}),
        )
    }
}

/// The case's best relevant position (document unit), for the `relevant_position` slice:
/// `Some(Some(n))` found at `n`, `Some(None)` labelled but not retrieved, `None` not applicable.
pub fn best_relevant_position(case: &Case, trace: &Trace) -> Option<Option<usize>> {
    let retrieval = trace.retrieval.as_ref()?;
    judge_ranking(case, retrieval, RelevanceUnit::Document)
        .ok()
        .map(|j| j.best_position)
}

#[cfg(test)]
mod tests {
    use super::*;
    use oloproof_core::case::parse_cases;
    use oloproof_core::passage::Passage;

    fn passage(doc: &str) -> Passage {
        Passage {
            doc_id: doc.into(),
            chunk_id: None,
            score: None,
            text: None,
            metadata: None,
        }
    }

    fn case(relevant: &str) -> Case {
        let line = format!(
            r#"{{"id":"c","input":{{}},"expected":{{"answer":"14 days","relevant":{relevant}}}}}"#
        );
        parse_cases("c.jsonl", &line).unwrap().remove(0)
    }

    fn trace(docs: &[&str]) -> Trace {
        let mut t = Trace::new("c");
        t.retrieval = Some(Retrieval {
            query: None,
            depth: 6,
            candidates: docs.iter().map(|d| passage(d)).collect(),
        });
        t
    }

    fn eval(yaml_type: &str, k: usize, c: &Case, t: &Trace) -> CriterionVerdict {
        let opts: EvaluatorOptions =
            serde_json::from_value(json!({"type": yaml_type, "k": k})).unwrap();
        build(&opts).evaluate(c, t)
    }

    #[test]
    fn documents_are_deduplicated_and_positions_kept() {
        let c = case(r#"[{"doc_id":"b"}]"#);
        let t = trace(&["a", "a", "b"]);
        let v = eval("hit_rate", 2, &c, &t);
        assert_eq!(
            v.verdict,
            Verdict::Pass,
            "b is the second distinct document"
        );
        assert_eq!(v.detail["best_relevant_position"], json!(3));
        assert_eq!(
            eval("mrr", 10, &c, &t).verdict,
            Verdict::Score { value: 0.5 }
        );
    }

    #[test]
    fn graded_ndcg_and_exclusions() {
        let c = case(r#"[{"doc_id":"a","grade":2},{"doc_id":"b"}]"#);
        let t = trace(&["b", "a"]);
        let v = eval("ndcg", 2, &c, &t);
        let expected = (1.0 + 2.0 / 3f64.log2()) / (2.0 + 1.0 / 3f64.log2());
        match v.verdict {
            Verdict::Score { value } => assert!((value - expected).abs() < 1e-12),
            other => panic!("{other:?}"),
        }
        let unlabelled = parse_cases("c.jsonl", r#"{"id":"u","input":{}}"#)
            .unwrap()
            .remove(0);
        assert_eq!(
            eval("recall", 2, &unlabelled, &t).verdict,
            Verdict::Excluded {
                reason: "no_relevance_labels".into()
            }
        );
        let zero = case(r#"[{"doc_id":"a","grade":0}]"#);
        assert_eq!(
            eval("ndcg", 2, &zero, &t).verdict,
            Verdict::Excluded {
                reason: "no_relevant_documents".into()
            }
        );
    }

    #[test]
    fn chunk_unit_needs_chunk_labels() {
        let c = case(r#"[{"doc_id":"a"}]"#);
        let opts: EvaluatorOptions =
            serde_json::from_value(json!({"type": "recall", "k": 2, "relevance_unit": "chunk"}))
                .unwrap();
        let v = build(&opts).evaluate(&c, &trace(&["a"]));
        assert_eq!(
            v.verdict,
            Verdict::Excluded {
                reason: "relevant_without_chunk_id".into()
            }
        );
    }

    #[test]
    fn a_failed_stage_is_missing_never_a_fail() {
        let c = case(r#"[{"doc_id":"a"}]"#);
        let mut t = Trace::new("c");
        t.error = Some(oloproof_core::trace::StageError {
            stage: "retrieve".into(),
            kind: oloproof_core::trace::ErrorKind::Crash,
            error_type: None,
            message: "worker exited".into(),
            traceback: None,
            stderr_tail: vec![],
        });
        assert!(matches!(
            eval("hit_rate", 2, &c, &t).verdict,
            Verdict::Missing { .. }
        ));
        let contains: EvaluatorOptions =
            serde_json::from_value(json!({"type": "contains"})).unwrap();
        assert!(matches!(
            build(&contains).evaluate(&c, &t).verdict,
            Verdict::Missing { .. }
        ));
    }

    #[test]
    fn citations() {
        let c = case("[]");
        let mut t = trace(&["a"]);
        t.context = Some(oloproof_core::context::assemble(
            &t.retrieval.as_ref().unwrap().candidates,
            1,
            None,
        ));
        let mut out = serde_json::Map::new();
        out.insert("answer".into(), json!("x"));
        out.insert("citations".into(), json!(["a", "zz"]));
        t.generation = Some(out);
        let opts: EvaluatorOptions =
            serde_json::from_value(json!({"type": "citation_validity"})).unwrap();
        let v = build(&opts).evaluate(&c, &t);
        assert_eq!(v.verdict, Verdict::Fail);
        assert_eq!(v.detail["invalid"], json!(["zz"]));
        t.generation
            .as_mut()
            .unwrap()
            .insert("citations".into(), json!([]));
        assert_eq!(build(&opts).evaluate(&c, &t).verdict, Verdict::Pass);
        let strict: EvaluatorOptions =
            serde_json::from_value(json!({"type": "citation_validity", "require_citations": true}))
                .unwrap();
        assert_eq!(build(&strict).evaluate(&c, &t).verdict, Verdict::Fail);
    }

    #[test]
    fn entity_grounding_and_context_utilisation() {
        let c = case("[]");
        let mut t = trace(&["a", "b"]);
        let mut candidates = t.retrieval.as_ref().unwrap().candidates.clone();
        candidates[0].text = Some("Mars has two moons, Phobos and Deimos.".into());
        candidates[1].text = Some("Curiosity landed in 2012.".into());
        t.context = Some(oloproof_core::context::assemble(&candidates, 2, None));
        let mut out = serde_json::Map::new();
        out.insert(
            "answer".into(),
            json!("Phobos orbits Mars. Curiosity landed in 2013."),
        );
        out.insert("citations".into(), json!(["a"]));
        t.generation = Some(out);
        let grounding: EvaluatorOptions =
            serde_json::from_value(json!({"type": "entity_grounding"})).unwrap();
        let v = build(&grounding).evaluate(&c, &t);
        assert_eq!(v.verdict, Verdict::Score { value: 0.75 });
        assert_eq!(v.detail["ungrounded"], json!(["2013"]));
        let utilisation: EvaluatorOptions =
            serde_json::from_value(json!({"type": "context_utilisation"})).unwrap();
        assert_eq!(
            build(&utilisation).evaluate(&c, &t).verdict,
            Verdict::Score { value: 0.5 }
        );
    }
}
