//! `oloproof.yaml`: options as the file says them, overrides, and validation with spans.
//!
//! Precedence, highest first: `--set key.path=value` overrides, then the file, then defaults.
//! The system's own `@rag_system` defaults sit below the file: they are merged by the engine
//! once the worker has said hello. Unknown keys are errors (a typo in `top_k` must not silently
//! run the default).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::source::{did_you_mean, yaml_scalar, Origin, SourceError, YamlDocument};

/// The whole `oloproof.yaml`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProjectOptions {
    /// The system under test (exactly one of `system` and `dataset`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<SystemOptions>,
    /// A recorded dataset (Ragas or trace JSONL) evaluated instead of running a system,
    /// relative to the config's folder (exactly one of `system` and `dataset`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    /// Path of the case file (JSONL), relative to the config's folder (required with `system`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cases: String,
    /// Evaluators, in table order.
    #[serde(default)]
    pub evaluators: Vec<EvaluatorOptions>,
    /// Slice keys: `metadata.<path>`, `relevant_position`, `context_truncated`.
    #[serde(default)]
    pub slices: Vec<String>,
    /// Slices with fewer cases than this are shown but marked.
    #[serde(default = "default_min_slice_support")]
    pub min_slice_support: usize,
    /// Run store path, relative to the config's folder (default `.oloproof/oloproof.db`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// Seed and resample count of the bootstrap intervals.
    #[serde(default)]
    pub bootstrap: BootstrapOptions,
    /// Share of cases allowed to end in an error before the run exits 4 (default 0).
    #[serde(default)]
    pub max_error_rate: f64,
    /// Judges by name (`provider`, `model`, …), validated by the judge layer.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub judges: std::collections::BTreeMap<String, Value>,
    /// Acceptance thresholds a judge must pass against human labels before it may gate,
    /// declared before measuring (`oloproof calibrate`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub calibration: std::collections::BTreeMap<String, CalibrationOptions>,
    /// Score history (JSONL) that every finished run appends one line to, relative to the
    /// config's folder (`oloproof history`; default: none, nothing is appended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<String>,
    /// Score a fixed, seed-determined subset of the cases (`run --sample N --seed S`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<SampleOptions>,
}

/// `sample:`: which subset of the cases a run scores. The choice depends only on the case ids
/// and the seed (never on the order of the file), so reordering or appending cases keeps every
/// chosen case that is still there.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SampleOptions {
    /// Number of cases to score (all of them when the set is smaller).
    pub size: usize,
    /// Seed of the choice (default 0).
    #[serde(default)]
    pub seed: u64,
}

/// No connector options: what a dataset-only config reads as its `system.rag`.
static NO_RAG: RagOptions = RagOptions {
    object: None,
    command: None,
    http: None,
    depth: None,
    top_k: None,
    token_budget: None,
    index_version: None,
    workers: None,
    timeout_s: None,
    python: None,
    params: None,
};

impl ProjectOptions {
    /// `system.rag`, or empty options when the config names a dataset instead of a system.
    pub fn rag(&self) -> &RagOptions {
        self.system.as_ref().map_or(&NO_RAG, |s| &s.rag)
    }
}

/// `calibration.<judge>`: what a judge must reach against human labels.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CalibrationOptions {
    /// Minimum Cohen's kappa (e.g. 0.7).
    pub min_kappa: f64,
    /// Kappa weights for ordinal labels: `linear` or `quadratic` (default: unweighted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights: Option<String>,
}

fn default_min_slice_support() -> usize {
    4
}

/// Bootstrap settings; the seed is recorded with every run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BootstrapOptions {
    /// RNG seed.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Number of resamples.
    #[serde(default = "default_resamples")]
    pub resamples: usize,
}

impl Default for BootstrapOptions {
    fn default() -> Self {
        BootstrapOptions {
            seed: default_seed(),
            resamples: default_resamples(),
        }
    }
}

fn default_seed() -> u64 {
    20_260_916
}

fn default_resamples() -> usize {
    10_000
}

/// `system:`: identity and connection.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SystemOptions {
    /// Overrides the name the system declares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Overrides the version the system declares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The staged RAG system.
    pub rag: RagOptions,
}

/// `system.rag:`: how to reach the system and its stage parameters.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct RagOptions {
    /// A Python class `module:Class`, imported with the config's folder on `sys.path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// A program speaking the worker protocol, run without a shell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// An HTTP endpoint taking the worker protocol's requests as POST bodies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<String>,
    /// Candidates retrieved per case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<usize>,
    /// Candidates kept for the context, in the system's order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<usize>,
    /// Token budget of the context (counted by the system's `count_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<usize>,
    /// Identity of the index: part of every retrieval cache key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_version: Option<String>,
    /// Worker processes (default: number of cores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<usize>,
    /// Seconds one request may take before the worker is restarted (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<f64>,
    /// Python interpreter for `object:` systems (default `python3`, or `$OLOPROOF_PYTHON`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    /// Extra parameters passed to the system in `hello`; part of the system identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Map<String, Value>>,
}

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

/// Options of an answer-text evaluator.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TextMatchOptions {
    /// Criterion name (default: the evaluator type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// Field of the system's output to read.
    #[serde(default = "default_answer_field")]
    pub field: String,
    /// Field of `expected` to compare with.
    #[serde(default = "default_answer_field")]
    pub expected_field: String,
}

fn default_answer_field() -> String {
    "answer".to_string()
}

/// Options of a rank-cutoff retrieval evaluator.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RankOptions {
    /// Criterion name (default `<type>_at_<k>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// Rank cutoff.
    pub k: usize,
    /// What counts as one unit.
    #[serde(default)]
    pub relevance_unit: RelevanceUnit,
}

/// Options of `citation_validity`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CitationOptions {
    /// Criterion name (default `citations_valid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// Fail answers that cite nothing.
    #[serde(default)]
    pub require_citations: bool,
}

/// Options of an evaluator that only takes a criterion name.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct PlainOptions {
    /// Criterion name (default: the evaluator type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
}

/// Options of `schema_validity`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SchemaOptions {
    /// Criterion name (default `schema_validity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// The JSON Schema (draft 2020-12) the output must satisfy: written as a path to a JSON
    /// file (relative to the config's folder) or inline; once the config is loaded, always the
    /// schema itself, so a changed schema file changes the evaluator's identity.
    pub schema: Value,
    /// The output field validated (default `answer`): a string is parsed as JSON first, any
    /// other JSON value is validated as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// Options of `evidence_coverage` (Rubrex).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct CoverageOptions {
    /// Criterion name (default `evidence_coverage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// Count only the first `k` candidates (default: the whole retrieval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<usize>,
}

/// Options of the Rubrex answer evaluators (`context_support`, `task_acceptance`,
/// `stale_evidence`): claim support comes from the record's human `claims` annotations when it
/// has them, else from `judge:` (claim extraction and verification, as `faithfulness`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct SupportOptions {
    /// Criterion name (default: `context_support`, `task_acceptance`, `no_stale_evidence`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// The judge (a key of `judges:`) for records without claim annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
    /// Phrases that mark an answer as an abstention when the system declares no `behavior`
    /// (case-insensitive; default: a short conservative list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abstain_patterns: Option<Vec<String>>,
    /// Phrases that mark an answer as a request for clarification (same rules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clarify_patterns: Option<Vec<String>>,
}

/// Which half of the abstention pair an `abstention` entry reports.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum AbstentionMeasure {
    /// Of the cases the system abstained on, the share that expected an abstention.
    Precision,
    /// Of the cases that expected an abstention, the share the system abstained on.
    Recall,
}

/// Options of `abstention` (Rubrex): one entry per measure.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AbstentionOptions {
    /// Criterion name (default `abstention_precision` / `abstention_recall`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// `precision` or `recall`.
    pub measure: AbstentionMeasure,
    /// Phrases that mark an answer as an abstention (see [`SupportOptions`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abstain_patterns: Option<Vec<String>>,
    /// Phrases that mark an answer as a request for clarification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clarify_patterns: Option<Vec<String>>,
}

/// How repeated judgments combine.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Aggregate {
    /// The most frequent value (ties to the lower value).
    Majority,
    /// The mean value.
    Mean,
}

/// Options of a judged evaluator (an LLM judge and/or an embedding model).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct JudgedOptions {
    /// Criterion name (default: the evaluator type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// The judge (a key of `judges:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
    /// The judge used for embeddings (default: `judge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_judge: Option<String>,
    /// Independent judgments per case (self-consistency), default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<u32>,
    /// How repeats combine (default: majority for pass/fail judges, mean for scores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregate: Option<Aggregate>,
    /// `context_precision`: judge usefulness against the reference (default) or the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with_reference: Option<bool>,
    /// `factual_correctness`: `f1` (default), `precision` or `recall`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<FactualModeOption>,
    /// `answer_relevancy`: questions generated per answer (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strictness: Option<usize>,
    /// `noise_sensitivity`: `relevant` (default) or `irrelevant` chunks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_mode: Option<NoiseModeOption>,
    /// An ensemble: the same metric from each of these judges (keys of `judges:`), instead
    /// of `judge:`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judges: Option<Vec<String>>,
    /// How an ensemble's judges combine (default: majority for pass/fail judges, mean for
    /// scores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ensemble: Option<EnsembleOption>,
    /// `rubric_judge`: G-Eval probability-weighted score from the score token's
    /// log-probabilities (OpenAI), default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability_weighted: Option<bool>,
    /// `rubric_judge`: the written 1–5 rubric (default: the evaluator design guide's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rubric: Option<String>,
    /// `claim_support`: the similarity (cosine, or entailment probability with an `nli`
    /// judge) a claim needs to its best context sentence to count as supported;
    /// `citation_recall`, `citation_precision`, `faithfulness`, `context_recall` and
    /// `citation_support_judge` with a local `nli` judge: the entailment probability that
    /// counts as entailed (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// `citation_recall` / `citation_precision`: citations per sentence kept (ALCE's
    /// `--at_most_citations`, default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_most_citations: Option<usize>,
}

impl JudgedOptions {
    /// The LLM judges this evaluator calls: `judges:` when given, else `judge:`.
    pub fn llm_judges(&self) -> Vec<String> {
        match &self.judges {
            Some(list) if !list.is_empty() => list.clone(),
            _ => self.judge.iter().cloned().collect(),
        }
    }
}

/// `noise_sensitivity` modes.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum NoiseModeOption {
    /// Incorrect claims supported by relevant chunks.
    Relevant,
    /// Incorrect claims supported only by irrelevant chunks.
    Irrelevant,
}

/// How an ensemble of judges combines.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EnsembleOption {
    /// The most frequent value (ties to the lower value).
    Majority,
    /// The lowest value: a pass needs every judge.
    Unanimous,
    /// The mean value.
    Mean,
}

/// `factual_correctness` modes.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FactualModeOption {
    /// Harmonic mean of precision and recall.
    F1,
    /// Answer claims supported by the reference.
    Precision,
    /// Reference claims supported by the answer.
    Recall,
}

/// One entry of `evaluators:`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EvaluatorOptions {
    /// The expected text is contained in the answer (case-insensitive).
    Contains(TextMatchOptions),
    /// SQuAD exact match after answer normalisation.
    ExactMatch(TextMatchOptions),
    /// SQuAD token F1 after answer normalisation (a score).
    TokenF1(TextMatchOptions),
    /// Any relevant unit in the first k.
    HitRate(RankOptions),
    /// Relevant units in the first k over all relevant units.
    Recall(RankOptions),
    /// Relevant units in the first k over k.
    Precision(RankOptions),
    /// Reciprocal rank of the first relevant unit within k.
    Mrr(RankOptions),
    /// nDCG at k with graded linear gains (trec_eval `ndcg_cut`).
    Ndcg(RankOptions),
    /// Every cited id is a passage of the context given to `generate`.
    CitationValidity(CitationOptions),
    /// LLM judge: is every claim of the answer supported by the context (pass/fail)?
    GroundednessJudge(JudgedOptions),
    /// LLM judge: share of cited statements their cited passages support.
    CitationSupportJudge(JudgedOptions),
    /// Ragas faithfulness: supported claims / claims.
    Faithfulness(JudgedOptions),
    /// Ragas answer relevancy: generated questions' cosine to the question.
    AnswerRelevancy(JudgedOptions),
    /// Ragas context precision (average precision of useful chunks).
    ContextPrecision(JudgedOptions),
    /// Ragas context recall (reference claims attributable to the context).
    ContextRecall(JudgedOptions),
    /// Ragas factual correctness (claim precision/recall/F1 against the reference).
    FactualCorrectness(JudgedOptions),
    /// Ragas answer correctness (factual F1 and semantic similarity).
    AnswerCorrectness(JudgedOptions),
    /// Embedding cosine between answer and reference.
    SemanticSimilarity(JudgedOptions),
    /// Embedding cosine between the question and the answer: answer relevancy without the
    /// generated questions (needs only an embedding judge; an on-topic wrong answer scores high).
    QuestionSimilarity(JudgedOptions),
    /// Ragas noise sensitivity: incorrect claims drawn from relevant or irrelevant chunks.
    NoiseSensitivity(JudgedOptions),
    /// LLM judge: a 1–5 rubric score of the answer (question, answer, context).
    RubricJudge(JudgedOptions),
    /// ALCE citation recall: sentences their cited passages entail / sentences.
    CitationRecall(JudgedOptions),
    /// Offline claim support (a heuristic): every claim of the answer close to a context
    /// sentence by embedding similarity, with its numbers and names found in the context.
    ClaimSupport(JudgedOptions),
    /// ALCE citation precision: citations needed for an entailed sentence / citations.
    CitationPrecision(JudgedOptions),
    /// Share of the answer's named entities and numbers found in the context (no model).
    EntityGrounding(PlainOptions),
    /// The output (its `answer`, or `field`) parses and validates against a JSON Schema.
    SchemaValidity(SchemaOptions),
    /// Share of the context passages the answer cites.
    ContextUtilisation(PlainOptions),
    /// Rubrex: every required current passage retrieved (case-level).
    EvidenceCoverage(CoverageOptions),
    /// Rubrex: every claim of a factual answer supported by its retrieved passages.
    ContextSupport(SupportOptions),
    /// Rubrex: the contract — a correct, cited answer from current evidence, or the expected
    /// abstention / clarification.
    TaskAcceptance(SupportOptions),
    /// Rubrex: precision or recall of abstentions.
    Abstention(AbstentionOptions),
    /// Rubrex: answers with a claim supported only by archived passages (reported as
    /// `no_stale_evidence`, a pass when there is none).
    StaleEvidence(SupportOptions),
}

impl EvaluatorOptions {
    /// The evaluator's type name as written in the file.
    pub fn type_name(&self) -> &'static str {
        match self {
            EvaluatorOptions::Contains(_) => "contains",
            EvaluatorOptions::ExactMatch(_) => "exact_match",
            EvaluatorOptions::TokenF1(_) => "token_f1",
            EvaluatorOptions::HitRate(_) => "hit_rate",
            EvaluatorOptions::Recall(_) => "recall",
            EvaluatorOptions::Precision(_) => "precision",
            EvaluatorOptions::Mrr(_) => "mrr",
            EvaluatorOptions::Ndcg(_) => "ndcg",
            EvaluatorOptions::CitationValidity(_) => "citation_validity",
            EvaluatorOptions::GroundednessJudge(_) => "groundedness_judge",
            EvaluatorOptions::CitationSupportJudge(_) => "citation_support_judge",
            EvaluatorOptions::Faithfulness(_) => "faithfulness",
            EvaluatorOptions::AnswerRelevancy(_) => "answer_relevancy",
            EvaluatorOptions::ContextPrecision(_) => "context_precision",
            EvaluatorOptions::ContextRecall(_) => "context_recall",
            EvaluatorOptions::FactualCorrectness(_) => "factual_correctness",
            EvaluatorOptions::AnswerCorrectness(_) => "answer_correctness",
            EvaluatorOptions::SemanticSimilarity(_) => "semantic_similarity",
            EvaluatorOptions::QuestionSimilarity(_) => "question_similarity",
            EvaluatorOptions::NoiseSensitivity(_) => "noise_sensitivity",
            EvaluatorOptions::CitationRecall(_) => "citation_recall",
            EvaluatorOptions::ClaimSupport(_) => "claim_support",
            EvaluatorOptions::CitationPrecision(_) => "citation_precision",
            EvaluatorOptions::RubricJudge(_) => "rubric_judge",
            EvaluatorOptions::EntityGrounding(_) => "entity_grounding",
            EvaluatorOptions::SchemaValidity(_) => "schema_validity",
            EvaluatorOptions::ContextUtilisation(_) => "context_utilisation",
            EvaluatorOptions::EvidenceCoverage(_) => "evidence_coverage",
            EvaluatorOptions::ContextSupport(_) => "context_support",
            EvaluatorOptions::TaskAcceptance(_) => "task_acceptance",
            EvaluatorOptions::Abstention(_) => "abstention",
            EvaluatorOptions::StaleEvidence(_) => "stale_evidence",
        }
    }

    /// The judged options, for evaluators that call a judge.
    pub fn judged(&self) -> Option<&JudgedOptions> {
        match self {
            EvaluatorOptions::GroundednessJudge(o)
            | EvaluatorOptions::CitationSupportJudge(o)
            | EvaluatorOptions::Faithfulness(o)
            | EvaluatorOptions::AnswerRelevancy(o)
            | EvaluatorOptions::ContextPrecision(o)
            | EvaluatorOptions::ContextRecall(o)
            | EvaluatorOptions::FactualCorrectness(o)
            | EvaluatorOptions::AnswerCorrectness(o)
            | EvaluatorOptions::SemanticSimilarity(o)
            | EvaluatorOptions::QuestionSimilarity(o)
            | EvaluatorOptions::NoiseSensitivity(o)
            | EvaluatorOptions::CitationRecall(o)
            | EvaluatorOptions::ClaimSupport(o)
            | EvaluatorOptions::CitationPrecision(o)
            | EvaluatorOptions::RubricJudge(o) => Some(o),
            _ => None,
        }
    }

    /// [`EvaluatorOptions::judged`], mutable (e.g. to set `repeats` from `run --repeats`).
    pub fn judged_mut(&mut self) -> Option<&mut JudgedOptions> {
        match self {
            EvaluatorOptions::GroundednessJudge(o)
            | EvaluatorOptions::CitationSupportJudge(o)
            | EvaluatorOptions::Faithfulness(o)
            | EvaluatorOptions::AnswerRelevancy(o)
            | EvaluatorOptions::ContextPrecision(o)
            | EvaluatorOptions::ContextRecall(o)
            | EvaluatorOptions::FactualCorrectness(o)
            | EvaluatorOptions::AnswerCorrectness(o)
            | EvaluatorOptions::SemanticSimilarity(o)
            | EvaluatorOptions::QuestionSimilarity(o)
            | EvaluatorOptions::NoiseSensitivity(o)
            | EvaluatorOptions::RubricJudge(o)
            | EvaluatorOptions::CitationRecall(o)
            | EvaluatorOptions::ClaimSupport(o)
            | EvaluatorOptions::CitationPrecision(o) => Some(o),
            _ => None,
        }
    }

    /// The criterion this evaluator reports: its `criterion:` or the default name.
    pub fn criterion(&self) -> String {
        match self {
            EvaluatorOptions::Contains(o)
            | EvaluatorOptions::ExactMatch(o)
            | EvaluatorOptions::TokenF1(o) => o
                .criterion
                .clone()
                .unwrap_or_else(|| self.type_name().to_string()),
            EvaluatorOptions::HitRate(o)
            | EvaluatorOptions::Recall(o)
            | EvaluatorOptions::Precision(o)
            | EvaluatorOptions::Mrr(o)
            | EvaluatorOptions::Ndcg(o) => o
                .criterion
                .clone()
                .unwrap_or_else(|| format!("{}_at_{}", self.type_name(), o.k)),
            EvaluatorOptions::CitationValidity(o) => o
                .criterion
                .clone()
                .unwrap_or_else(|| "citations_valid".to_string()),
            EvaluatorOptions::EntityGrounding(o) | EvaluatorOptions::ContextUtilisation(o) => o
                .criterion
                .clone()
                .unwrap_or_else(|| self.type_name().to_string()),
            EvaluatorOptions::SchemaValidity(o) => o
                .criterion
                .clone()
                .unwrap_or_else(|| self.type_name().to_string()),
            EvaluatorOptions::EvidenceCoverage(o) => o
                .criterion
                .clone()
                .unwrap_or_else(|| self.type_name().to_string()),
            EvaluatorOptions::ContextSupport(o) | EvaluatorOptions::TaskAcceptance(o) => o
                .criterion
                .clone()
                .unwrap_or_else(|| self.type_name().to_string()),
            EvaluatorOptions::StaleEvidence(o) => o
                .criterion
                .clone()
                .unwrap_or_else(|| "no_stale_evidence".to_string()),
            EvaluatorOptions::Abstention(o) => o.criterion.clone().unwrap_or_else(|| {
                match o.measure {
                    AbstentionMeasure::Precision => "abstention_precision",
                    AbstentionMeasure::Recall => "abstention_recall",
                }
                .to_string()
            }),
            other => other
                .judged()
                .and_then(|o| o.criterion.clone())
                .unwrap_or_else(|| other.type_name().to_string()),
        }
    }
}

/// Known evaluator types, for "did you mean".
pub const EVALUATOR_TYPES: &[&str] = &[
    "contains",
    "exact_match",
    "token_f1",
    "hit_rate",
    "recall",
    "precision",
    "mrr",
    "ndcg",
    "citation_validity",
    "groundedness_judge",
    "citation_support_judge",
    "faithfulness",
    "answer_relevancy",
    "context_precision",
    "context_recall",
    "factual_correctness",
    "answer_correctness",
    "semantic_similarity",
    "question_similarity",
    "noise_sensitivity",
    "rubric_judge",
    "citation_recall",
    "claim_support",
    "citation_precision",
    "entity_grounding",
    "schema_validity",
    "context_utilisation",
    "evidence_coverage",
    "context_support",
    "task_acceptance",
    "abstention",
    "stale_evidence",
];

/// Built-in slice keys besides `metadata.*`.
/// `diagnostic_matrix` slices by `metadata.evidence_condition` (seed 004's matrix: `sufficient`,
/// `missing`, `contradictory`, `irrelevant_additions`; values checked when cases load).
pub const BUILTIN_SLICES: &[&str] = &[
    "relevant_position",
    "context_truncated",
    "diagnostic_matrix",
];

/// A loaded, validated configuration with the folder it came from.
#[derive(Debug, Clone)]
pub struct ProjectConfig {
    /// The parsed file with positions, for validation done by other layers (judges).
    pub source: YamlDocument,
    /// The file's value with the overrides applied.
    pub value: Value,
    /// The config file as the user named it.
    pub path: PathBuf,
    /// Its folder: relative paths resolve against it.
    pub dir: PathBuf,
    /// The validated options (overrides applied).
    pub options: ProjectOptions,
}

impl ProjectConfig {
    /// Path of the recorded dataset, when the config evaluates one instead of a system.
    pub fn dataset_path(&self) -> Option<PathBuf> {
        self.options.dataset.as_ref().map(|d| self.dir.join(d))
    }

    /// Absolute-or-relative path of the case file.
    pub fn cases_path(&self) -> PathBuf {
        self.dir.join(&self.options.cases)
    }

    /// Path of the score history named by `history:`, if any.
    pub fn history_path(&self) -> Option<PathBuf> {
        self.options.history.as_ref().map(|h| self.dir.join(h))
    }

    /// Path of the run store.
    pub fn store_path(&self) -> PathBuf {
        self.dir.join(
            self.options
                .store
                .as_deref()
                .unwrap_or(".oloproof/oloproof.db"),
        )
    }
}

/// Applies one `key.path=value` override to `value`; the right side is typed as a YAML scalar
/// (or a flow list/map such as `[a, b]`).
pub fn apply_override(value: &mut Value, assignment: &str) -> Result<(), SourceError> {
    let override_error = |message: String| SourceError {
        message,
        origin: Origin::Override(assignment.to_string()),
        key_path: None,
        expected: Some("KEY.PATH=VALUE, e.g. system.rag.top_k=4".to_string()),
        help: None,
    };
    let (path, raw) = assignment
        .split_once('=')
        .ok_or_else(|| override_error("an override needs `=`".to_string()))?;
    let path = path.trim();
    if path.is_empty() || path.split('.').any(str::is_empty) {
        return Err(override_error(format!("`{path}` is not a key path")));
    }
    let parsed = if raw.trim_start().starts_with(['[', '{']) {
        YamlDocument::parse("--set", raw)
            .map(|d| d.value)
            .map_err(|e| override_error(format!("cannot read `{raw}`: {}", e.message)))?
    } else {
        yaml_scalar(raw.trim())
    };
    let mut cursor = value;
    let parts: Vec<&str> = path.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let obj = match cursor {
            Value::Object(map) => map,
            Value::Array(items) => {
                let idx: usize = part
                    .parse()
                    .map_err(|_| override_error(format!("`{part}` is not an index of a list")))?;
                let len = items.len();
                let slot = items.get_mut(idx).ok_or_else(|| {
                    override_error(format!("index {idx} is past the end of a list of {len}"))
                })?;
                if last {
                    *slot = parsed;
                    return Ok(());
                }
                cursor = slot;
                continue;
            }
            _ => {
                return Err(override_error(format!(
                    "`{}` is not a mapping",
                    parts[..i].join(".")
                )))
            }
        };
        if last {
            obj.insert(part.to_string(), parsed);
            return Ok(());
        }
        cursor = obj
            .entry(part.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    Ok(())
}

/// Replaces each `schema_validity` evaluator's `schema: PATH` (relative to the config's folder)
/// by the JSON the file holds; a missing or invalid file is an error at `evaluators[i].schema`.
fn read_schema_files(
    doc: &YamlDocument,
    evaluators: &mut [EvaluatorOptions],
    dir: &Path,
) -> Result<(), SourceError> {
    for (i, ev) in evaluators.iter_mut().enumerate() {
        let EvaluatorOptions::SchemaValidity(o) = ev else {
            continue;
        };
        let Value::String(file) = &o.schema else {
            continue;
        };
        let path = dir.join(file);
        let at = format!("evaluators[{i}].schema");
        let text = std::fs::read_to_string(&path).map_err(|e| {
            let mut err = doc.error_at(&at, false, format!("cannot read {}: {e}", path.display()));
            err.expected = Some(
                "a JSON Schema file (relative to the config's folder) or the schema inline"
                    .to_string(),
            );
            err
        })?;
        o.schema = serde_json::from_str(&text).map_err(|e| {
            // serde's message ends with its own " at line L column C": said once, up front.
            let message = e.to_string();
            let message = message
                .rsplit_once(" at line ")
                .map_or(message.as_str(), |(m, _)| m);
            doc.error_at(
                &at,
                false,
                format!(
                    "{}:{}:{}: not JSON: {message}",
                    path.display(),
                    e.line(),
                    e.column()
                ),
            )
        })?;
    }
    Ok(())
}

/// Makes a `provider: local` judge's relative `path` relative to the config's folder, like
/// every other path of the file (`${VAR}` paths are left for the judge layer to expand, and
/// `hf://` Hub paths for it to resolve).
fn resolve_local_model_paths(judges: &mut std::collections::BTreeMap<String, Value>, dir: &Path) {
    for judge in judges.values_mut() {
        if judge.get("provider").and_then(Value::as_str) != Some("local") {
            continue;
        }
        if let Some(Value::String(p)) = judge.get_mut("path") {
            if !p.starts_with("${")
                && !p.starts_with("hf://")
                && Path::new(p.as_str()).is_relative()
                && dir != Path::new(".")
            {
                *p = dir.join(p.as_str()).display().to_string();
            }
        }
    }
}

/// Loads `path`, applies `overrides` in order and validates the result.
pub fn load_config(path: &Path, overrides: &[String]) -> Result<ProjectConfig, ConfigError> {
    load_config_inner(path, overrides, None)
}

/// The YAML document at `path`: read, decoded as UTF-8 (a located error otherwise), parsed.
fn read_document(path: &Path) -> Result<YamlDocument, ConfigError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| ConfigError::Read {
        path: shown.clone(),
        source,
    })?;
    let text = crate::source::decode_utf8(&shown, bytes)?;
    Ok(YamlDocument::parse(&shown, &text)?)
}

/// The run store of the config at `path` (its `store:` key, else `.oloproof/oloproof.db`,
/// relative to its folder), read without validating the rest of the file: commands that only
/// read stored runs (`runs`, `show`, `report`, `history`…) need no `system:` or `dataset:`.
/// A `store:` that is not a string is a located error.
pub fn store_path_of(path: &Path) -> Result<PathBuf, ConfigError> {
    let doc = read_document(path)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    match doc.value.get("store") {
        None | Some(Value::Null) => Ok(dir.join(".oloproof/oloproof.db")),
        Some(Value::String(s)) => Ok(dir.join(s)),
        Some(_) => {
            let mut err = doc.error_at("store", true, "wrong type: `store` must be a path");
            err.expected =
                Some("a path relative to the config's folder, e.g. .oloproof/oloproof.db".into());
            Err(err.into())
        }
    }
}

/// Loads `path` like [`load_config`], but evaluates the recorded `dataset` (`run --dataset`)
/// instead of the file's `system:`/`dataset:` (its `cases:` is ignored too).
pub fn load_config_for_dataset(
    path: &Path,
    overrides: &[String],
    dataset: &Path,
) -> Result<ProjectConfig, ConfigError> {
    load_config_inner(path, overrides, Some(dataset))
}

fn load_config_inner(
    path: &Path,
    overrides: &[String],
    dataset: Option<&Path>,
) -> Result<ProjectConfig, ConfigError> {
    let doc = read_document(path)?;
    let mut value = doc.value.clone();
    for assignment in overrides {
        apply_override(&mut value, assignment)?;
    }
    if let (Some(dataset), Value::Object(obj)) = (dataset, &mut value) {
        obj.remove("system");
        obj.remove("cases");
        obj.insert(
            "dataset".to_string(),
            Value::String(dataset.display().to_string()),
        );
    }
    let mut options = validate(&doc, &value, overrides)?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let dir = if dir.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        dir
    };
    resolve_local_model_paths(&mut options.judges, &dir);
    read_schema_files(&doc, &mut options.evaluators, &dir)?;
    Ok(ProjectConfig {
        source: doc,
        value,
        path: path.to_path_buf(),
        dir,
        options,
    })
}

/// Validates a parsed document (with overrides applied in `value`).
pub fn validate(
    doc: &YamlDocument,
    value: &Value,
    overrides: &[String],
) -> Result<ProjectOptions, SourceError> {
    if let Some(items) = value.get("evaluators").and_then(Value::as_array) {
        for (i, item) in items.iter().enumerate() {
            let at = format!("evaluators[{i}]");
            match item.get("type") {
                Some(Value::String(t)) if EVALUATOR_TYPES.contains(&t.as_str()) => {}
                Some(Value::String(t)) => {
                    let mut err = doc.error_at(
                        &format!("{at}.type"),
                        true,
                        format!("unknown evaluator type `{t}`"),
                    );
                    err.expected = Some(format!("one of {}", EVALUATOR_TYPES.join(", ")));
                    err.help = did_you_mean(t, EVALUATOR_TYPES.iter().copied())
                        .map(|s| format!("did you mean `{s}`?"));
                    return Err(attribute(err, overrides, &format!("{at}.type")));
                }
                Some(_) => {
                    let err = doc.error_at(
                        &format!("{at}.type"),
                        true,
                        "wrong type: `type` must be a string",
                    );
                    return Err(attribute(err, overrides, &format!("{at}.type")));
                }
                None => {
                    let mut err = doc.error_at(&at, true, "missing key `type`");
                    err.key_path = Some(format!("{at}.type"));
                    err.expected = Some(format!("one of {}", EVALUATOR_TYPES.join(", ")));
                    return Err(err);
                }
            }
        }
    }
    let options: ProjectOptions = doc.deserialize(value).map_err(|e| {
        let key = e.key_path.clone().unwrap_or_default();
        attribute(e, overrides, &key)
    })?;
    match (&options.system, &options.dataset) {
        (Some(_), Some(_)) => {
            let mut err = doc.error_at("dataset", false, "both `system` and `dataset` are set");
            err.key_path = Some("dataset".to_string());
            err.expected = Some(
                "exactly one of `system:` (run a system over `cases:`) or `dataset:` (evaluate recorded answers)".to_string(),
            );
            return Err(attribute(err, overrides, "dataset"));
        }
        (None, None) => {
            let mut err = doc.error_at("", false, "missing key `system`");
            err.key_path = Some("system".to_string());
            err.help = Some(
                "add `system:` (the system to run), or `dataset: FILE` (recorded answers)"
                    .to_string(),
            );
            return Err(err);
        }
        (Some(_), None) if options.cases.is_empty() => {
            let mut err = doc.error_at("", false, "missing key `cases`");
            err.key_path = Some("cases".to_string());
            err.help = Some("add `cases:` here".to_string());
            return Err(attribute(err, overrides, "cases"));
        }
        _ => {}
    }
    let rag = options.rag();
    let connectors = [
        rag.object.is_some(),
        rag.command.is_some(),
        rag.http.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if options.system.is_some() && connectors != 1 {
        let mut err = doc.error_at(
            "system.rag",
            false,
            if connectors == 0 {
                "no connector for the system"
            } else {
                "more than one connector for the system"
            },
        );
        err.expected = Some(
            "exactly one of `object: module:Class`, `command: [program, args…]` or `http: http://host:port/path`".to_string(),
        );
        return Err(err);
    }
    if let Some(object) = &rag.object {
        if object
            .split_once(':')
            .is_none_or(|(m, c)| m.is_empty() || c.is_empty())
        {
            let mut err = doc.error_at(
                "system.rag.object",
                true,
                format!("`{object}` is not `module:Class`"),
            );
            err.expected = Some("module:Class, e.g. app:SupportRag".to_string());
            return Err(attribute(err, overrides, "system.rag.object"));
        }
    }
    if let Some(url) = &rag.http {
        if !url.starts_with("http://") {
            let mut err = doc.error_at(
                "system.rag.http",
                true,
                format!("`{url}` is not an http:// URL"),
            );
            err.expected = Some("http://host:port/path (plain HTTP in this build)".to_string());
            return Err(attribute(err, overrides, "system.rag.http"));
        }
    }
    if rag.command.as_ref().is_some_and(Vec::is_empty) {
        let err = doc.error_at("system.rag.command", true, "the command is empty");
        return Err(err);
    }
    for (key, zero) in [
        ("top_k", rag.top_k == Some(0)),
        ("depth", rag.depth == Some(0)),
        ("workers", rag.workers == Some(0)),
    ] {
        if zero {
            let mut err = doc.error_at(
                &format!("system.rag.{key}"),
                true,
                format!("`{key}` must be at least 1"),
            );
            err.expected = Some("a positive integer".to_string());
            return Err(attribute(err, overrides, &format!("system.rag.{key}")));
        }
    }
    if !(0.0..=1.0).contains(&options.max_error_rate) {
        let mut err = doc.error_at(
            "max_error_rate",
            true,
            "`max_error_rate` must lie in [0, 1]",
        );
        err.expected = Some("a share such as 0.05".to_string());
        return Err(attribute(err, overrides, "max_error_rate"));
    }
    let mut seen = std::collections::HashMap::new();
    for (i, ev) in options.evaluators.iter().enumerate() {
        if let Some(prev) = seen.insert(ev.criterion(), i) {
            let mut err = doc.error_at(
                &format!("evaluators[{i}]"),
                true,
                format!("criterion `{}` is reported twice", ev.criterion()),
            );
            err.help = Some(format!(
                "rename one with `criterion:` (the other is evaluators[{prev}])"
            ));
            return Err(err);
        }
        if let EvaluatorOptions::HitRate(o)
        | EvaluatorOptions::Recall(o)
        | EvaluatorOptions::Precision(o)
        | EvaluatorOptions::Mrr(o)
        | EvaluatorOptions::Ndcg(o) = ev
        {
            if o.k == 0 {
                let err = doc.error_at(
                    &format!("evaluators[{i}].k"),
                    true,
                    "`k` must be at least 1",
                );
                return Err(attribute(err, overrides, &format!("evaluators[{i}].k")));
            }
        }
    }
    for (i, slice) in options.slices.iter().enumerate() {
        let ok = BUILTIN_SLICES.contains(&slice.as_str())
            || slice
                .strip_prefix("metadata.")
                .is_some_and(|rest| !rest.is_empty());
        if !ok {
            let mut err = doc.error_at(
                &format!("slices[{i}]"),
                true,
                format!("unknown slice `{slice}`"),
            );
            err.expected = Some(
                "`metadata.<key>`, `relevant_position`, `context_truncated` or `diagnostic_matrix`"
                    .to_string(),
            );
            let mut known: Vec<String> = BUILTIN_SLICES.iter().map(|s| s.to_string()).collect();
            known.push(format!("metadata.{slice}"));
            err.help = did_you_mean(slice, known.iter().map(String::as_str))
                .map(|s| format!("did you mean `{s}`?"))
                .or_else(|| Some(format!("did you mean `metadata.{slice}`?")));
            return Err(attribute(err, overrides, &format!("slices[{i}]")));
        }
    }
    if options.sample.is_some_and(|s| s.size == 0) {
        let mut err = doc.error_at("sample.size", true, "`sample.size` must be at least 1");
        err.expected = Some("a number of cases, e.g. 30 (remove `sample:` to score all)".into());
        return Err(attribute(err, overrides, "sample.size"));
    }
    let judge_names: Vec<&str> = options.judges.keys().map(String::as_str).collect();
    for (i, ev) in options.evaluators.iter().enumerate() {
        let judge = match ev {
            EvaluatorOptions::ContextSupport(o)
            | EvaluatorOptions::TaskAcceptance(o)
            | EvaluatorOptions::StaleEvidence(o) => o.judge.as_ref(),
            EvaluatorOptions::EvidenceCoverage(CoverageOptions { k: Some(0), .. }) => {
                let path = format!("evaluators[{i}].k");
                let err = doc.error_at(&path, true, "`k` must be at least 1");
                return Err(attribute(err, overrides, &path));
            }
            _ => None,
        };
        if let Some(name) = judge.filter(|n| !options.judges.contains_key(*n)) {
            let path = format!("evaluators[{i}].judge");
            let mut err = doc.error_at(&path, true, format!("no judge named `{name}`"));
            err.expected = Some(if judge_names.is_empty() {
                "a judge declared under `judges:`".to_string()
            } else {
                format!("one of {}", judge_names.join(", "))
            });
            err.help = did_you_mean(name, judge_names.iter().copied())
                .map(|s| format!("did you mean `{s}`?"));
            return Err(attribute(err, overrides, &path));
        }
    }
    for (name, c) in &options.calibration {
        let path = format!("calibration.{name}");
        if !options.judges.contains_key(name) {
            let mut err = doc.error_at(
                &path,
                false,
                format!("no judge named `{name}` to calibrate"),
            );
            err.help = did_you_mean(name, judge_names.iter().copied())
                .map(|s| format!("did you mean `{s}`?"));
            return Err(attribute(err, overrides, &path));
        }
        if !(c.min_kappa.is_finite() && (-1.0..=1.0).contains(&c.min_kappa)) {
            let mut err = doc.error_at(
                &format!("{path}.min_kappa"),
                true,
                "`min_kappa` must lie in [-1, 1]",
            );
            err.expected = Some("a kappa such as 0.7".to_string());
            return Err(attribute(err, overrides, &format!("{path}.min_kappa")));
        }
        if let Some(w) = &c.weights {
            if !["linear", "quadratic", "none"].contains(&w.as_str()) {
                let mut err = doc.error_at(
                    &format!("{path}.weights"),
                    true,
                    format!("unknown weights `{w}`"),
                );
                err.expected = Some("linear, quadratic or none".to_string());
                return Err(attribute(err, overrides, &format!("{path}.weights")));
            }
        }
    }
    for (i, ev) in options.evaluators.iter().enumerate() {
        let Some(judged) = ev.judged() else { continue };
        let needs_llm = !matches!(
            ev,
            EvaluatorOptions::SemanticSimilarity(_)
                | EvaluatorOptions::QuestionSimilarity(_)
                | EvaluatorOptions::ClaimSupport(_)
        );
        if let Some(t) = judged.threshold {
            let takes_threshold = matches!(
                ev,
                EvaluatorOptions::ClaimSupport(_)
                    | EvaluatorOptions::CitationRecall(_)
                    | EvaluatorOptions::CitationPrecision(_)
                    | EvaluatorOptions::Faithfulness(_)
                    | EvaluatorOptions::ContextRecall(_)
                    | EvaluatorOptions::CitationSupportJudge(_)
            );
            if !takes_threshold || !(-1.0..=1.0).contains(&t) {
                let path = format!("evaluators[{i}].threshold");
                let mut err = doc.error_at(
                    &path,
                    false,
                    if takes_threshold {
                        format!("`threshold` must be between -1 and 1, got {t}")
                    } else {
                        format!(
                            "`threshold` is only for `claim_support`, and for `citation_recall`, `citation_precision`, `faithfulness`, `context_recall` and `citation_support_judge` with a local `nli` judge, not `{}`",
                            ev.type_name()
                        )
                    },
                );
                err.help = Some("a cosine or probability threshold such as 0.6".to_string());
                return Err(attribute(err, overrides, &path));
            }
        }
        let mut refs = vec![
            ("judge".to_string(), judged.judge.as_ref()),
            (
                "embedding_judge".to_string(),
                judged.embedding_judge.as_ref(),
            ),
        ];
        for (j, name) in judged.judges.iter().flatten().enumerate() {
            refs.push((format!("judges[{j}]"), Some(name)));
        }
        if judged.judge.is_some() && judged.judges.is_some() {
            let path = format!("evaluators[{i}].judges");
            let err = doc.error_at(&path, true, "give either `judge:` or `judges:`, not both");
            return Err(attribute(err, overrides, &path));
        }
        if needs_llm && judged.llm_judges().is_empty() {
            let mut err = doc.error_at(
                &format!("evaluators[{i}]"),
                true,
                format!("`{}` needs a judge", ev.type_name()),
            );
            err.key_path = Some(format!("evaluators[{i}].judge"));
            err.help = Some(match judge_names.first() {
                Some(n) => format!("add `judge: {n}`"),
                None => "declare one under `judges:` (provider, model, api_key_env) and name it with `judge:`".to_string(),
            });
            return Err(err);
        }
        if !needs_llm && judged.judge.is_none() && judged.embedding_judge.is_none() {
            let mut err = doc.error_at(
                &format!("evaluators[{i}]"),
                true,
                format!("`{}` needs an embedding judge", ev.type_name()),
            );
            err.help = Some("add `embedding_judge: NAME` (or `judge: NAME`)".to_string());
            return Err(err);
        }
        for (key, name) in refs {
            let Some(name) = name else { continue };
            if !options.judges.contains_key(name) {
                let path = format!("evaluators[{i}].{key}");
                let mut err = doc.error_at(&path, true, format!("no judge named `{name}`"));
                err.expected = Some(if judge_names.is_empty() {
                    "a judge declared under `judges:`".to_string()
                } else {
                    format!("one of {}", judge_names.join(", "))
                });
                err.help = did_you_mean(name, judge_names.iter().copied())
                    .map(|s| format!("did you mean `{s}`?"));
                return Err(attribute(err, overrides, &path));
            }
        }
    }
    Ok(options)
}

/// When an override set `key`, point the error at the override rather than at the file.
fn attribute(mut err: SourceError, overrides: &[String], key: &str) -> SourceError {
    if let Some(arg) = overrides.iter().rev().find(|o| {
        o.split_once('=')
            .is_some_and(|(k, _)| !k.is_empty() && key.starts_with(k.trim()))
    }) {
        err.origin = Origin::Override(arg.clone());
    }
    err
}

/// Failure to load a configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The path.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is invalid.
    #[error("{0}")]
    Invalid(#[from] SourceError),
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = "system:
  name: support-rag
  version: slice-b-example
  rag:
    object: app:SupportRag
    depth: 6
    top_k: 2
    token_budget: 40
    index_version: kb-2026-09-16
    workers: 4
cases: cases.jsonl
evaluators:
  - {type: contains, criterion: answer_correct, field: answer, expected_field: answer}
  - {type: hit_rate, k: 2}
  - {type: recall, k: 2}
  - {type: ndcg, k: 6}
  - {type: citation_validity}
slices: [metadata.topic, relevant_position, context_truncated]
min_slice_support: 4
";

    fn load(text: &str, overrides: &[&str]) -> Result<ProjectOptions, SourceError> {
        let doc = YamlDocument::parse("oloproof.yaml", text)?;
        let mut value = doc.value.clone();
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        for o in &overrides {
            apply_override(&mut value, o)?;
        }
        validate(&doc, &value, &overrides)
    }

    #[test]
    fn the_seed_example_loads() {
        let o = load(EXAMPLE, &[]).unwrap();
        assert_eq!(o.rag().top_k, Some(2));
        let names: Vec<String> = o
            .evaluators
            .iter()
            .map(EvaluatorOptions::criterion)
            .collect();
        assert_eq!(
            names,
            [
                "answer_correct",
                "hit_rate_at_2",
                "recall_at_2",
                "ndcg_at_6",
                "citations_valid"
            ]
        );
    }

    #[test]
    fn overrides_apply() {
        let o = load(
            EXAMPLE,
            &["system.rag.top_k=4", "system.rag.index_version=kb-2"],
        )
        .unwrap();
        assert_eq!(o.rag().top_k, Some(4));
        assert_eq!(o.rag().index_version.as_deref(), Some("kb-2"));
    }

    #[test]
    fn unknown_key_is_located_with_a_suggestion() {
        let text = EXAMPLE.replace("    top_k: 2", "    top_kk: 2");
        let err = load(&text, &[]).unwrap_err();
        assert_eq!(err.location(), "oloproof.yaml:7:5");
        assert_eq!(err.key_path.as_deref(), Some("system.rag.top_kk"));
        assert_eq!(err.help.as_deref(), Some("did you mean `top_k`?"));
    }

    #[test]
    fn wrong_type_names_what_was_expected() {
        let text = EXAMPLE.replace("depth: 6", "depth: six");
        let err = load(&text, &[]).unwrap_err();
        assert_eq!(err.location(), "oloproof.yaml:6:12");
        assert_eq!(err.key_path.as_deref(), Some("system.rag.depth"));
        assert_eq!(err.expected.as_deref(), Some("a non-negative integer"));
    }

    #[test]
    fn override_errors_point_at_the_override() {
        let err = load(EXAMPLE, &["system.rag.top_k=many"]).unwrap_err();
        assert_eq!(err.location(), "--set system.rag.top_k=many");
    }

    #[test]
    fn unknown_evaluator_type() {
        let text = EXAMPLE.replace("type: hit_rate", "type: hitrate");
        let err = load(&text, &[]).unwrap_err();
        assert_eq!(err.help.as_deref(), Some("did you mean `hit_rate`?"));
        assert_eq!(err.location(), "oloproof.yaml:14:12");
    }

    #[test]
    fn dataset_replaces_system_and_cases() {
        let text = "dataset: recorded.jsonl\nevaluators:\n  - type: contains\n";
        let o = load(text, &[]).unwrap();
        assert_eq!(o.dataset.as_deref(), Some("recorded.jsonl"));
        assert!(o.system.is_none());
        assert_eq!(o.rag().top_k, None);
        let both = format!("{EXAMPLE}dataset: recorded.jsonl\n");
        let err = load(&both, &[]).unwrap_err();
        assert_eq!(err.message, "both `system` and `dataset` are set");
        assert!(err
            .location()
            .ends_with(&format!(":{}:1", both.lines().count())));
        let neither = load("evaluators: []\n", &[]).unwrap_err();
        assert_eq!(neither.message, "missing key `system`");
    }

    #[test]
    fn missing_field() {
        let text = EXAMPLE.replace("cases: cases.jsonl\n", "");
        let err = load(&text, &[]).unwrap_err();
        assert_eq!(err.message, "missing key `cases`");
    }

    #[test]
    fn local_model_paths_follow_the_config_folder_but_hub_paths_stay() {
        let local = |p: &str| serde_json::json!({"provider": "local", "path": p});
        let mut judges = std::collections::BTreeMap::from([
            ("a".to_string(), local("models/nli")),
            ("b".to_string(), local("hf://org/model@v1")),
            ("c".to_string(), local("${MODELS}/nli")),
        ]);
        resolve_local_model_paths(&mut judges, Path::new("conf"));
        let path = |k: &str| judges[k]["path"].as_str().unwrap().to_string();
        assert_eq!(
            path("a"),
            Path::new("conf").join("models/nli").display().to_string()
        );
        assert_eq!(path("b"), "hf://org/model@v1");
        assert_eq!(path("c"), "${MODELS}/nli");
    }
}
