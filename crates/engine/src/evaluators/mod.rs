//! The evaluator registry: every criterion a run can report, one module per family.
//!
//! Each evaluator type is one [`EvaluatorSpec`] in [`REGISTRY`]: its name and the function that
//! parses its own options (a type of its own, `deny_unknown_fields`, errors located at
//! `evaluators[i].<key>` of the config) into an [`Evaluator`]. The evaluator knows everything
//! the rest of the engine asks of it: its criterion name and how it is summarised, its
//! identity (type and options with defaults: part of the run's identity and of every judgment
//! cache key), the judges it calls, and its call estimate for `run --dry-run`. Nothing else in
//! the engine or the CLI matches on evaluator types.
//!
//! Every evaluator returns a [`CriterionVerdict`]: pass/fail or a score when it can judge,
//! `Missing` (with the error) when the stage it reads failed or a judge call failed,
//! `Excluded` (with a reason code) when the criterion does not apply to the case.
//!
//! Adding an evaluator is one new file (its options type, its `Evaluator`, a
//! `pub(crate) const SPEC`) and one line in [`REGISTRY`]; `docs/architecture.md` walks through
//! it.

pub mod alce;
pub mod answer_text;
pub mod citation_validity;
pub mod claim_diagnostics;
pub mod claim_support;
pub mod classifier;
pub mod context_stages;
pub mod context_utilisation;
pub mod entity_grounding;
pub mod filter_exclusion;
pub mod hop_recall;
pub mod judged;
pub mod llm_judges;
pub mod measured;
pub mod ragas;
pub mod ragas_non_llm;
pub mod ranking;
pub mod rubrex;
pub mod rules;
pub mod schema_validity;
pub mod uplift;

use std::collections::BTreeMap;
use std::path::Path;

use oloproof_core::case::Case;
use oloproof_core::config::{attribute, EvaluatorEntry, ProjectOptions};
use oloproof_core::run::StoredEvaluatorError;
use oloproof_core::source::{did_you_mean, SourceError, YamlDocument};
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

pub use judged::JudgeChoice;
pub use oloproof_core::summary::SummaryKind;

use crate::judged::JudgeEnv;

/// One criterion's judge, built from an `evaluators:` entry by its [`EvaluatorSpec`].
pub trait Evaluator: Send + Sync {
    /// Criterion name (the entry's `criterion:`, else the type's default).
    fn criterion(&self) -> &str;
    /// How its verdicts are summarised.
    fn kind(&self) -> SummaryKind;
    /// Its identity: the type and every option with its default filled in (part of the run's
    /// identity and of every judgment cache key).
    fn identity(&self) -> &EvaluatorEntry;
    /// Judges one case. `judges` holds the run's judges and the judge-call cache; an evaluator
    /// that needs a judge is `missing` without them.
    fn evaluate(
        &self,
        case: &Case,
        trace: &Trace,
        judges: Option<&JudgeEnv<'_>>,
    ) -> CriterionVerdict;
    /// Names of the judges it may call, LLM judges first (their settings join its judgment
    /// cache key).
    fn judge_names(&self) -> Vec<String> {
        Vec::new()
    }
    /// For a metric scored by a judge (not a rule that may consult one): which judges score
    /// it. `None` for every other evaluator.
    fn judge_choice(&self) -> Option<&JudgeChoice> {
        None
    }
    /// For an evaluator whose own options decide its verdicts as much as its judge does (a
    /// classifier's label, threshold and rule): those options. They join its calibration's
    /// identity (`calibrate::calibration_identity_with`), so a calibration holds for them
    /// only, and `calibrate` scores the labels with the config's entry. `None` (the
    /// default): the judge's settings, the evaluator type and the template versions identify
    /// a calibration.
    fn calibrated_options(&self) -> Option<Value> {
        None
    }
    /// Whether `run --repeats N` applies to it (it takes `repeats:`).
    fn takes_repeats(&self) -> bool {
        false
    }
    /// The output field whose token count (by the system's `count_tokens`, recorded in the
    /// trace's `output_tokens`) it reads: the run asks the system for it after generation.
    /// `None` for every evaluator that does not count tokens.
    fn counts_tokens_of(&self) -> Option<&str> {
        None
    }
    /// The parts of the pipeline it reads (a lane, an optional stage), each with the option
    /// that names it (`at`): once the system has said hello, a part it does not declare is a
    /// config error at `evaluators[i].<option>` listing what it declares (exit 2).
    fn pipeline_needs(&self) -> Vec<(PipelineNeed, &'static str)> {
        Vec::new()
    }
    /// Whether it reads the raw question's own retrieval
    /// ([`oloproof_core::pipeline::Pipeline::raw_query`]): the run then retrieves the raw
    /// question too, when the system rewrites it (`rewrite_uplift`).
    fn reads_raw_query(&self) -> bool {
        false
    }
    /// Whether its verdicts may be served from and stored in the judgment cache (default
    /// `true`). `false` for an evaluator reading what the run measured (latency, cache use),
    /// which the judgment key does not hold: it is evaluated afresh on every run.
    fn judgment_cacheable(&self) -> bool {
        true
    }
    /// The most judge calls, embedding requests and input tokens it makes on `case`, for
    /// `run --dry-run`; `None` when it calls no judge.
    fn estimate(&self, case: &Case) -> Option<CallEstimate> {
        let _ = case;
        None
    }
    /// The trace fields it reads (`input`, `answer`, `citations`, `retrieval`,
    /// `context.text`, `latency_ms.generate`, `usage`, …, as
    /// [`oloproof_core::production::Production::not_recorded`] names them): when an imported
    /// trace did not record one, the case is `excluded` with the reason `not_recorded`
    /// ([`evaluate`]). The default is [`default_reads`] of its identity.
    fn reads(&self) -> Vec<String> {
        default_reads(self.identity())
    }
}

/// What every evaluator type reads ([`Evaluator::reads`]), by type, with the options that
/// choose a field (`field:` of a rule or classifier, `stage:` of `latency`). A type not
/// listed reads everything content-bearing — `input`, `answer`, `citations`, `retrieval`,
/// `context` — so an evaluator added without a declaration never scores a field production
/// did not record.
pub fn default_reads(entry: &EvaluatorEntry) -> Vec<String> {
    let option = |key: &str| entry.options.get(key).and_then(Value::as_str);
    let fields: &[&str] = match entry.type_name.as_str() {
        "contains"
        | "exact_match"
        | "token_f1"
        | "schema_validity"
        | "regex"
        | "forbidden_terms"
        | "max_length"
        | "pii_in_answer"
        | "classifier"
        | "ragas_exact_match"
        | "string_presence"
        | "non_llm_string_similarity"
        | "bleu_score"
        | "rouge_score"
        | "factual_correctness"
        | "answer_correctness"
        | "semantic_similarity"
        | "abstention" => {
            return vec![option("field").unwrap_or("answer").to_string()];
        }
        "hit_rate" | "recall" | "precision" | "mrr" | "ndcg" | "filter_exclusion"
        | "hop_recall" | "fusion_uplift" => &["retrieval"],
        "rerank_uplift" => &["retrieval", "pipeline.pre_rerank"],
        "rewrite_uplift" => &["retrieval", "pipeline.rewrite"],
        "context_noise" | "context_compression" => &["retrieval", "context.text"],
        "non_llm_context_precision_with_reference" | "non_llm_context_recall" => &["context.text"],
        "context_precision" | "context_recall" => &["input", "context.text"],
        "answer_relevancy" | "question_similarity" => &["input", "answer"],
        "citation_validity" => &["answer", "citations"],
        "citation_recall" | "citation_precision" | "citation_support_judge" => {
            &["answer", "citations", "context.text"]
        }
        "groundedness_judge"
        | "claim_support"
        | "entity_grounding"
        | "context_utilisation"
        | "evidence_coverage"
        | "context_support"
        | "task_acceptance"
        | "stale_evidence" => &["answer", "context.text"],
        "faithfulness"
        | "noise_sensitivity"
        | "rubric_judge"
        | "claim_precision"
        | "claim_recall"
        | "claim_f1"
        | "retriever_claim_recall"
        | "retriever_context_precision"
        | "generator_context_utilisation"
        | "generator_noise_sensitivity_relevant"
        | "generator_noise_sensitivity_irrelevant"
        | "generator_hallucination"
        | "generator_self_knowledge"
        | "generator_faithfulness" => &["input", "answer", "context.text"],
        "latency" => return vec![format!("latency_ms.{}", option("stage").unwrap_or("total"))],
        "ttft" => &["ttft_ms"],
        "tokens" | "cost" => &["usage"],
        _ => &["input", "answer", "citations", "retrieval", "context"],
    };
    fields.iter().map(|f| f.to_string()).collect()
}

/// `excluded` (`not_recorded`) when `trace` is production traffic that did not record a
/// field `evaluator` reads ([`Evaluator::reads`]); the detail names the field.
pub fn not_recorded(evaluator: &dyn Evaluator, trace: &Trace) -> Option<CriterionVerdict> {
    let production = trace.production.as_ref()?;
    if production.not_recorded.is_empty() {
        return None;
    }
    let field = evaluator
        .reads()
        .into_iter()
        .find(|f| production.lacks(f))?;
    let detail = serde_json::json!({
        "not_recorded": field,
        "why": format!("the production trace did not record `{field}`, which `{}` reads", evaluator.identity().type_name),
    });
    Some(verdict(
        evaluator.criterion(),
        Verdict::Excluded {
            reason: "not_recorded".into(),
        },
        detail,
    ))
}

/// Judges one case: [`not_recorded`] first (one check for every evaluator), then the
/// evaluator itself. Every judging path of the engine goes through here.
pub fn evaluate(
    evaluator: &dyn Evaluator,
    case: &Case,
    trace: &Trace,
    judges: Option<&JudgeEnv<'_>>,
) -> CriterionVerdict {
    not_recorded(evaluator, trace).unwrap_or_else(|| evaluator.evaluate(case, trace, judges))
}

/// A part of the pipeline an evaluator reads ([`Evaluator::pipeline_needs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PipelineNeed {
    /// A retrieval lane the system must declare (`at: lane:NAME`).
    Lane(String),
    /// An optional stage the system must declare (`rewrite`, `rerank`, `fuse`).
    Stage(&'static str),
}

/// What one evaluator may send for one case (`run --dry-run`): upper bounds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallEstimate {
    /// LLM judge calls.
    pub calls: u64,
    /// Embedding requests.
    pub embeddings: u64,
    /// Input tokens of the LLM calls (4 characters a token).
    pub input_tokens: u64,
}

impl std::ops::Mul<u64> for CallEstimate {
    type Output = CallEstimate;
    fn mul(self, n: u64) -> CallEstimate {
        CallEstimate {
            calls: self.calls * n,
            embeddings: self.embeddings * n,
            input_tokens: self.input_tokens * n,
        }
    }
}

/// One evaluator type: its name as written in `type:` and how its options are parsed.
pub struct EvaluatorSpec {
    /// The `type:` it answers to.
    pub name: &'static str,
    /// Parses the entry's options (through [`EntryParser::options`]) into the evaluator.
    pub build: fn(&EntryParser<'_>) -> Result<Box<dyn Evaluator>, SourceError>,
}

/// Every evaluator type, in the order `--help` and "one of …" list them.
pub const REGISTRY: &[EvaluatorSpec] = &[
    answer_text::CONTAINS,
    answer_text::EXACT_MATCH,
    answer_text::TOKEN_F1,
    ranking::HIT_RATE,
    ranking::RECALL,
    ranking::PRECISION,
    ranking::MRR,
    ranking::NDCG,
    uplift::RERANK_UPLIFT,
    uplift::FUSION_UPLIFT,
    uplift::REWRITE_UPLIFT,
    filter_exclusion::SPEC,
    hop_recall::SPEC,
    context_stages::CONTEXT_NOISE,
    context_stages::CONTEXT_COMPRESSION,
    citation_validity::SPEC,
    llm_judges::GROUNDEDNESS_JUDGE,
    llm_judges::CITATION_SUPPORT_JUDGE,
    ragas::FAITHFULNESS,
    ragas::ANSWER_RELEVANCY,
    ragas::CONTEXT_PRECISION,
    ragas::CONTEXT_RECALL,
    ragas::FACTUAL_CORRECTNESS,
    ragas::ANSWER_CORRECTNESS,
    ragas::SEMANTIC_SIMILARITY,
    ragas::QUESTION_SIMILARITY,
    ragas::NOISE_SENSITIVITY,
    llm_judges::RUBRIC_JUDGE,
    alce::CITATION_RECALL,
    claim_support::SPEC,
    alce::CITATION_PRECISION,
    entity_grounding::SPEC,
    schema_validity::SPEC,
    context_utilisation::SPEC,
    rubrex::EVIDENCE_COVERAGE,
    rubrex::CONTEXT_SUPPORT,
    rubrex::TASK_ACCEPTANCE,
    rubrex::ABSTENTION,
    rubrex::STALE_EVIDENCE,
    claim_diagnostics::CLAIM_PRECISION,
    claim_diagnostics::CLAIM_RECALL,
    claim_diagnostics::CLAIM_F1,
    claim_diagnostics::RETRIEVER_CLAIM_RECALL,
    claim_diagnostics::RETRIEVER_CONTEXT_PRECISION,
    claim_diagnostics::GENERATOR_CONTEXT_UTILISATION,
    claim_diagnostics::GENERATOR_NOISE_SENSITIVITY_RELEVANT,
    claim_diagnostics::GENERATOR_NOISE_SENSITIVITY_IRRELEVANT,
    claim_diagnostics::GENERATOR_HALLUCINATION,
    claim_diagnostics::GENERATOR_SELF_KNOWLEDGE,
    claim_diagnostics::GENERATOR_FAITHFULNESS,
    rules::regex_rule::SPEC,
    rules::forbidden_terms::SPEC,
    rules::max_length::SPEC,
    rules::pii_in_answer::SPEC,
    classifier::SPEC,
    ragas_non_llm::CONTEXT_PRECISION,
    ragas_non_llm::CONTEXT_RECALL,
    ragas_non_llm::STRING_SIMILARITY,
    ragas_non_llm::BLEU_SCORE,
    ragas_non_llm::ROUGE_SCORE,
    ragas_non_llm::EXACT_MATCH,
    ragas_non_llm::STRING_PRESENCE,
    measured::LATENCY,
    measured::TTFT,
    measured::TOKENS,
    measured::COST,
];

/// The evaluator type names, in registry order.
pub fn type_names() -> Vec<&'static str> {
    REGISTRY.iter().map(|s| s.name).collect()
}

/// Other names an evaluator type answers to, and the type's name: `string_presence` was our
/// first name of Ragas' `StringPresence`, whose column (and our type) is `string_present`. An
/// entry written with an alias builds the type's evaluator; its criterion, when not named, is
/// the alias as written (so existing configs and stored runs keep their criterion names).
pub const ALIASES: &[(&str, &str)] = &[("string_presence", "string_present")];

/// The type `type_name` names: itself, or the type of an alias ([`ALIASES`]).
pub fn canonical_type(type_name: &str) -> &str {
    ALIASES
        .iter()
        .find(|(alias, _)| *alias == type_name)
        .map_or(type_name, |(_, name)| name)
}

/// The spec of `type_name` (a type's name or an alias).
pub fn spec(type_name: &str) -> Option<&'static EvaluatorSpec> {
    let name = canonical_type(type_name);
    REGISTRY.iter().find(|s| s.name == name)
}

/// What a spec's `build` reads: one entry, where it sits in the config, and what it may
/// refer to (the declared judges, the config's folder).
pub struct EntryParser<'a> {
    /// The document errors point into.
    pub doc: &'a YamlDocument,
    /// `--set` overrides (an error on a key they set points at them).
    pub overrides: &'a [String],
    /// The entry.
    pub entry: &'a EvaluatorEntry,
    /// Its key path, `evaluators[i]`.
    pub key_path: String,
    /// The config's folder (files an option names are relative to it); `None` for the
    /// stored entries of a run, which hold their files' content.
    pub dir: Option<&'a Path>,
    /// The judges declared under `judges:`; `None` when not checked (a stored run).
    pub judges: Option<&'a BTreeMap<String, Value>>,
    /// The system's `prices:` (`system.rag.prices`), for `cost`; `None` without any, and for
    /// a stored run (whose `cost` entries hold the prices they were built with).
    pub prices: Option<&'a BTreeMap<String, oloproof_core::config::Price>>,
}

impl EntryParser<'_> {
    /// The entry's options as the type's own options type (`deny_unknown_fields`): an unknown
    /// key is an error naming the keys the type takes.
    pub fn options<T: DeserializeOwned>(&self) -> Result<T, SourceError> {
        self.parse(&Value::Object(self.entry.options.clone()))
            .map_err(|mut e| {
                if e.help.is_none() {
                    if let Some(key) = e.message.strip_prefix("unknown key `") {
                        let key = key.trim_end_matches('`');
                        e.help = Some(format!(
                            "remove `{key}:` from this entry: `{}` takes only the keys listed",
                            self.entry.type_name
                        ));
                    }
                }
                e
            })
    }

    /// `value` (the entry's options, possibly rewritten) parsed as `T`, errors located.
    pub fn parse<T: DeserializeOwned>(&self, value: &Value) -> Result<T, SourceError> {
        self.doc.deserialize_at(value, &self.key_path).map_err(|e| {
            let key = e.key_path.clone().unwrap_or_else(|| self.key_path.clone());
            attribute(e, self.overrides, &key)
        })
    }

    /// An error at `evaluators[i].<key>` (the entry itself when `key` is empty).
    pub fn error(&self, key: &str, message: impl Into<String>) -> SourceError {
        let path = self.path(key);
        let err = self.doc.error_at(&path, true, message);
        attribute(err, self.overrides, &path)
    }

    /// `evaluators[i].<key>`.
    pub fn path(&self, key: &str) -> String {
        if key.is_empty() {
            self.key_path.clone()
        } else {
            format!("{}.{key}", self.key_path)
        }
    }

    /// Checks that the judge `name`, given at `key`, is declared under `judges:`.
    pub fn check_judge(&self, key: &str, name: &str) -> Result<(), SourceError> {
        let Some(judges) = self.judges else {
            return Ok(());
        };
        if judges.contains_key(name) {
            return Ok(());
        }
        let names: Vec<&str> = judges.keys().map(String::as_str).collect();
        let mut err = self.error(key, format!("no judge named `{name}`"));
        err.expected = Some(if names.is_empty() {
            "a judge declared under `judges:`".to_string()
        } else {
            format!("one of {}", names.join(", "))
        });
        err.help =
            did_you_mean(name, names.iter().copied()).map(|s| format!("did you mean `{s}`?"));
        Err(err)
    }

    /// The first declared judge, for a "add `judge: NAME`" hint.
    pub fn first_judge(&self) -> Option<&str> {
        self.judges
            .and_then(|j| j.keys().next())
            .map(String::as_str)
    }

    /// The identity of an evaluator of this entry's type with `options`: the type and every
    /// option as its options type serialises them (defaults filled in).
    pub fn identity<T: Serialize>(&self, options: &T) -> EvaluatorEntry {
        let map = match serde_json::to_value(options) {
            Ok(Value::Object(map)) => map,
            // Options types are structs: they serialise to an object.
            _ => Map::new(),
        };
        EvaluatorEntry::new(self.entry.type_name.clone(), map)
    }
}

/// Builds the evaluator of one entry, or a located error (unknown type with a "did you
/// mean", an option the type does not take, a bad value).
pub fn build(parser: &EntryParser<'_>) -> Result<Box<dyn Evaluator>, SourceError> {
    let type_name = parser.entry.type_name.as_str();
    match spec(type_name) {
        Some(spec) => (spec.build)(parser),
        None => {
            let names = type_names();
            let mut err = parser.error("type", format!("unknown evaluator type `{type_name}`"));
            err.expected = Some(format!("one of {}", names.join(", ")));
            err.help = did_you_mean(type_name, names.iter().copied())
                .map(|s| format!("did you mean `{s}`?"));
            Err(err)
        }
    }
}

/// The registry as core's config validation sees it.
pub struct Catalog;

impl oloproof_core::config::EvaluatorCatalog for Catalog {
    fn type_names(&self) -> Vec<&'static str> {
        type_names()
    }

    fn is_type(&self, name: &str) -> bool {
        spec(name).is_some()
    }

    fn check(
        &self,
        doc: &YamlDocument,
        overrides: &[String],
        dir: &Path,
        options: &mut ProjectOptions,
    ) -> Result<(), SourceError> {
        validate(doc, overrides, dir, options).map(|_| ())
    }
}

/// Builds every evaluator of `options` and checks what spans entries (each criterion
/// reported once); each entry of `options.evaluators` is replaced by its identity (its options
/// with defaults, a schema file by its content), which is what the run stores.
pub fn validate(
    doc: &YamlDocument,
    overrides: &[String],
    dir: &Path,
    options: &mut ProjectOptions,
) -> Result<Vec<Box<dyn Evaluator>>, SourceError> {
    let mut built: Vec<Box<dyn Evaluator>> = Vec::with_capacity(options.evaluators.len());
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, entry) in options.evaluators.iter().enumerate() {
        let parser = EntryParser {
            doc,
            overrides,
            entry,
            key_path: format!("evaluators[{i}]"),
            dir: Some(dir),
            judges: Some(&options.judges),
            prices: options.system.as_ref().and_then(|s| s.rag.prices.as_ref()),
        };
        let evaluator = build(&parser)?;
        if let Some(prev) = seen.insert(evaluator.criterion().to_string(), i) {
            let mut err = doc.error_at(
                &format!("evaluators[{i}]"),
                true,
                format!("criterion `{}` is reported twice", evaluator.criterion()),
            );
            err.help = Some(format!(
                "rename one with `criterion:` (the other is evaluators[{prev}])"
            ));
            return Err(err);
        }
        built.push(evaluator);
    }
    for (entry, evaluator) in options.evaluators.iter_mut().zip(&built) {
        *entry = evaluator.identity().clone();
    }
    Ok(built)
}

/// Builds the evaluators of validated or stored entries (a stored run's settings). An entry
/// that no longer parses (a store written by another version) is an error naming it.
pub fn build_all(
    entries: &[EvaluatorEntry],
) -> Result<Vec<Box<dyn Evaluator>>, StoredEvaluatorError> {
    let failed = |entry: &EvaluatorEntry, message: String| StoredEvaluatorError {
        type_name: entry.type_name.clone(),
        message,
    };
    // JSON is YAML: errors point into the entries as JSON.
    let value = serde_json::json!({ "evaluators": entries });
    // A `Value` always serialises (its keys are strings).
    let text = serde_json::to_string_pretty(&value).unwrap_or_default();
    let doc =
        YamlDocument::parse("(stored evaluators)", &text).map_err(|e| StoredEvaluatorError {
            type_name: String::new(),
            message: e.message,
        })?;
    entries
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let parser = EntryParser {
                doc: &doc,
                overrides: &[],
                entry,
                key_path: format!("evaluators[{i}]"),
                dir: None,
                judges: None,
                prices: None,
            };
            build(&parser).map_err(|e| {
                let at = e.key_path.map(|k| format!(" at {k}")).unwrap_or_default();
                failed(entry, format!("{}{at}", e.message))
            })
        })
        .collect()
}

/// Builds one evaluator from its entry as JSON (`{"type": …, …}`): for library callers and
/// tests. Errors are said as messages with the key path.
pub fn from_json(value: &Value) -> Result<Box<dyn Evaluator>, crate::EngineError> {
    let entry: EvaluatorEntry =
        serde_json::from_value(value.clone()).map_err(|source| crate::EngineError::Corrupt {
            what: "an evaluator entry".into(),
            source,
        })?;
    let mut built = build_all(std::slice::from_ref(&entry))?;
    Ok(built.remove(0))
}

/// A verdict of `criterion`.
pub(crate) fn verdict(criterion: &str, verdict: Verdict, detail: Value) -> CriterionVerdict {
    CriterionVerdict {
        criterion: criterion.to_string(),
        verdict,
        detail,
    }
}

/// `missing`: the stage's error when it failed, else "`what` is not available".
pub(crate) fn missing(criterion: &str, trace: &Trace, what: &str) -> CriterionVerdict {
    let error = match &trace.error {
        Some(e) => e.summary(),
        None => format!("{what} is not available"),
    };
    verdict(criterion, Verdict::Missing { error }, Value::Null)
}

/// `missing` with `error`.
pub(crate) fn missing_with(criterion: &str, error: impl Into<String>) -> CriterionVerdict {
    verdict(
        criterion,
        Verdict::Missing {
            error: error.into(),
        },
        Value::Null,
    )
}

/// `excluded` with `reason`.
pub(crate) fn excluded(criterion: &str, reason: &str) -> CriterionVerdict {
    verdict(
        criterion,
        Verdict::Excluded {
            reason: reason.to_string(),
        },
        Value::Null,
    )
}

pub use ranking::{best_relevant_position, judge_ranking, JudgedRanking, RelevanceUnit};

#[cfg(test)]
mod tests {
    use super::*;
    use oloproof_core::case::parse_cases;
    use oloproof_core::passage::Passage;
    use oloproof_core::passage::Retrieval;
    use serde_json::json;

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
        t.retrieval = Some(Retrieval::new(
            None,
            6,
            docs.iter().map(|d| passage(d)).collect(),
        ));
        t
    }

    fn eval(yaml_type: &str, k: usize, c: &Case, t: &Trace) -> CriterionVerdict {
        from_json(&json!({"type": yaml_type, "k": k}))
            .unwrap()
            .evaluate(c, t, None)
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
        let opts =
            from_json(&json!({"type": "recall", "k": 2, "relevance_unit": "chunk"})).unwrap();
        let v = opts.evaluate(&c, &trace(&["a"]), None);
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
        let contains = from_json(&json!({"type": "contains"})).unwrap();
        assert!(matches!(
            contains.evaluate(&c, &t, None).verdict,
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
        let opts = from_json(&json!({"type": "citation_validity"})).unwrap();
        let v = opts.evaluate(&c, &t, None);
        assert_eq!(v.verdict, Verdict::Fail);
        assert_eq!(v.detail["invalid"], json!(["zz"]));
        t.generation
            .as_mut()
            .unwrap()
            .insert("citations".into(), json!([]));
        assert_eq!(opts.evaluate(&c, &t, None).verdict, Verdict::Pass);
        let strict =
            from_json(&json!({"type": "citation_validity", "require_citations": true})).unwrap();
        assert_eq!(strict.evaluate(&c, &t, None).verdict, Verdict::Fail);
    }

    #[test]
    fn fields_production_did_not_record_exclude_the_case() {
        let c = case(r#"[{"doc_id":"a"}]"#);
        let mut t = trace(&["a"]);
        t.production = Some(Box::new(oloproof_core::production::Production {
            not_recorded: vec![
                "answer".into(),
                "retrieval.text".into(),
                "latency_ms.generate".into(),
            ],
            ..Default::default()
        }));
        let contains = from_json(&json!({"type": "contains"})).unwrap();
        let v = evaluate(contains.as_ref(), &c, &t, None);
        assert_eq!(
            v.verdict,
            Verdict::Excluded {
                reason: "not_recorded".into()
            }
        );
        assert_eq!(v.detail["not_recorded"], json!("answer"));
        // Document ids were recorded: ranking still judges.
        let hit = from_json(&json!({"type": "hit_rate", "k": 1})).unwrap();
        assert_eq!(evaluate(hit.as_ref(), &c, &t, None).verdict, Verdict::Pass);
        // Passage text was not: a context-text reader is excluded.
        t.production.as_mut().unwrap().not_recorded =
            vec!["context.text".into(), "latency_ms.generate".into()];
        let grounding = from_json(&json!({"type": "entity_grounding"})).unwrap();
        assert_eq!(
            evaluate(grounding.as_ref(), &c, &t, None).detail["not_recorded"],
            json!("context.text")
        );
        let latency = from_json(&json!({"type": "latency", "stage": "generate"})).unwrap();
        assert_eq!(latency.reads(), ["latency_ms.generate"]);
        assert!(not_recorded(latency.as_ref(), &t).is_some());
        let total = from_json(&json!({"type": "latency"})).unwrap();
        assert!(not_recorded(total.as_ref(), &t).is_none());
        // A rule on another field reads that field.
        let rule = from_json(&json!({"type": "max_length", "max": 3, "field": "summary"}));
        if let Ok(rule) = rule {
            assert_eq!(rule.reads(), ["summary"]);
        }
        // Every registered type declares what it reads.
        for spec in REGISTRY {
            let entry = EvaluatorEntry::new(spec.name.to_string(), Map::new());
            assert!(!default_reads(&entry).is_empty(), "{}", spec.name);
        }
        // Not production traffic: nothing changes.
        t.production = None;
        assert!(not_recorded(contains.as_ref(), &t).is_none());
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
        let grounding = from_json(&json!({"type": "entity_grounding"})).unwrap();
        let v = grounding.evaluate(&c, &t, None);
        assert_eq!(v.verdict, Verdict::Score { value: 0.75 });
        assert_eq!(v.detail["ungrounded"], json!(["2013"]));
        let utilisation = from_json(&json!({"type": "context_utilisation"})).unwrap();
        assert_eq!(
            utilisation.evaluate(&c, &t, None).verdict,
            Verdict::Score { value: 0.5 }
        );
    }
}
