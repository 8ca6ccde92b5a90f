//! The Ragas metrics as run evaluators (`oloproof_judge::ragas`, the prompts and formulas of
//! Ragas 0.2): `faithfulness`, `answer_relevancy`, `context_precision`, `context_recall`,
//! `factual_correctness`, `answer_correctness`, `noise_sensitivity`, and the embedding-only
//! `semantic_similarity` and `question_similarity`.
//!
//! With a local `kind: nli` (or `cross_encoder`) judge, `faithfulness` and `context_recall`
//! are decided by the model instead of an LLM: the share of the answer's (the reference's)
//! sentences the context entails at probability ≥ `threshold` (default 0.5).

use oloproof_judge::ragas::{self, FactualMode, JudgedScore, NoiseMode};
use oloproof_judge::{JudgeClient, JudgeError};
use serde::{Deserialize, Serialize};

use super::claim_support::{is_pair_classifier, nli_entailed_share, DEFAULT_NLI_THRESHOLD};
use super::judged::{
    self, llm_judged_options, need, undefined, JudgeNeed, JudgedInput, JudgedMetric,
};
use super::EvaluatorSpec;

/// `noise_sensitivity` modes.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum NoiseModeOption {
    /// Incorrect claims supported by relevant chunks.
    Relevant,
    /// Incorrect claims supported only by irrelevant chunks.
    Irrelevant,
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

llm_judged_options! {
    /// Options of `faithfulness`.
    FaithfulnessOptions {
        /// With a local `nli` judge: the entailment probability that counts as entailed
        /// (default 0.5).
        threshold: f64,
    }
}

llm_judged_options! {
    /// Options of `context_recall`.
    ContextRecallOptions {
        /// With a local `nli` judge: the entailment probability that counts as entailed
        /// (default 0.5).
        threshold: f64,
    }
}

llm_judged_options! {
    /// Options of `answer_relevancy`.
    AnswerRelevancyOptions {
        /// The judge used for embeddings (default: `judge`).
        embedding_judge: String,
        /// Questions generated per answer (default 3).
        strictness: usize,
    }
}

llm_judged_options! {
    /// Options of `context_precision`.
    ContextPrecisionOptions {
        /// Judge usefulness against the reference (default) or the answer.
        with_reference: bool,
    }
}

llm_judged_options! {
    /// Options of `factual_correctness`.
    FactualCorrectnessOptions {
        /// `f1` (default), `precision` or `recall`.
        mode: FactualModeOption,
    }
}

llm_judged_options! {
    /// Options of `answer_correctness`.
    AnswerCorrectnessOptions {
        /// The judge used for embeddings (default: `judge`).
        embedding_judge: String,
    }
}

llm_judged_options! {
    /// Options of `noise_sensitivity`.
    NoiseSensitivityOptions {
        /// `relevant` (default) or `irrelevant` chunks.
        noise_mode: NoiseModeOption,
    }
}

/// Options of the embedding-only evaluators (`semantic_similarity`, `question_similarity`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimilarityOptions {
    /// Criterion name (default: the evaluator type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// The judge that embeds, when `embedding_judge:` is not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
    /// The judge used for embeddings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_judge: Option<String>,
}

/// `faithfulness`: supported claims / claims.
pub(crate) const FAITHFULNESS: EvaluatorSpec = EvaluatorSpec {
    name: "faithfulness",
    build: |p| {
        judged::build(p, JudgeNeed::Llm, |o: FaithfulnessOptions| {
            Box::new(Faithfulness {
                threshold: o.threshold.unwrap_or(DEFAULT_NLI_THRESHOLD),
            })
        })
    },
};

struct Faithfulness {
    threshold: f64,
}

impl JudgedMetric for Faithfulness {
    fn score(
        &self,
        input: &JudgedInput<'_>,
        judge: Option<&JudgeClient>,
        repeat: u32,
    ) -> Result<JudgedScore, JudgeError> {
        if let Some(nli) = judge.filter(|j| is_pair_classifier(j)) {
            return nli_entailed_share(
                nli,
                &oloproof_metrics::rag::claims::split_claims(input.sample.answer),
                input.sample.contexts,
                self.threshold,
                "nli: answer sentences against the context",
            );
        }
        ragas::faithfulness(need(judge)?, input.cache, &input.sample, repeat)
    }

    fn max_calls(&self) -> (u32, u32) {
        (2, 0)
    }
}

/// `answer_relevancy`: the generated questions' mean cosine to the question.
pub(crate) const ANSWER_RELEVANCY: EvaluatorSpec = EvaluatorSpec {
    name: "answer_relevancy",
    build: |p| {
        judged::build(p, JudgeNeed::Llm, |o: AnswerRelevancyOptions| {
            Box::new(AnswerRelevancy {
                strictness: o.strictness.unwrap_or(ragas::DEFAULT_STRICTNESS),
            })
        })
    },
};

struct AnswerRelevancy {
    strictness: usize,
}

impl JudgedMetric for AnswerRelevancy {
    fn score(
        &self,
        input: &JudgedInput<'_>,
        judge: Option<&JudgeClient>,
        repeat: u32,
    ) -> Result<JudgedScore, JudgeError> {
        ragas::answer_relevancy(
            need(judge)?,
            input.cache,
            &|t: &[String]| input.embed(t),
            &input.sample,
            self.strictness,
            repeat,
        )
    }

    fn max_calls(&self) -> (u32, u32) {
        (1, 1)
    }
}

/// `context_precision`: average precision of the useful chunks.
pub(crate) const CONTEXT_PRECISION: EvaluatorSpec = EvaluatorSpec {
    name: "context_precision",
    build: |p| {
        judged::build(p, JudgeNeed::Llm, |o: ContextPrecisionOptions| {
            Box::new(ContextPrecision {
                with_reference: o.with_reference.unwrap_or(true),
            })
        })
    },
};

struct ContextPrecision {
    with_reference: bool,
}

impl JudgedMetric for ContextPrecision {
    fn score(
        &self,
        input: &JudgedInput<'_>,
        judge: Option<&JudgeClient>,
        repeat: u32,
    ) -> Result<JudgedScore, JudgeError> {
        ragas::context_precision(
            need(judge)?,
            input.cache,
            &input.sample,
            self.with_reference,
            repeat,
        )
    }

    fn max_calls(&self) -> (u32, u32) {
        (1, 0)
    }
}

/// `context_recall`: reference claims attributable to the context.
pub(crate) const CONTEXT_RECALL: EvaluatorSpec = EvaluatorSpec {
    name: "context_recall",
    build: |p| {
        judged::build(p, JudgeNeed::Llm, |o: ContextRecallOptions| {
            Box::new(ContextRecall {
                threshold: o.threshold.unwrap_or(DEFAULT_NLI_THRESHOLD),
            })
        })
    },
};

struct ContextRecall {
    threshold: f64,
}

impl JudgedMetric for ContextRecall {
    fn score(
        &self,
        input: &JudgedInput<'_>,
        judge: Option<&JudgeClient>,
        repeat: u32,
    ) -> Result<JudgedScore, JudgeError> {
        if let Some(nli) = judge.filter(|j| is_pair_classifier(j)) {
            let Some(reference) = input.sample.reference else {
                return Ok(undefined("no_reference"));
            };
            return nli_entailed_share(
                nli,
                &oloproof_metrics::rag::claims::split_claims(reference),
                input.sample.contexts,
                self.threshold,
                "nli: reference sentences against the context",
            );
        }
        ragas::context_recall(need(judge)?, input.cache, &input.sample, repeat)
    }

    fn max_calls(&self) -> (u32, u32) {
        (1, 0)
    }
}

/// `factual_correctness`: claim precision, recall or F1 against the reference.
pub(crate) const FACTUAL_CORRECTNESS: EvaluatorSpec = EvaluatorSpec {
    name: "factual_correctness",
    build: |p| {
        judged::build(p, JudgeNeed::Llm, |o: FactualCorrectnessOptions| {
            Box::new(FactualCorrectness {
                mode: match o.mode {
                    Some(FactualModeOption::Precision) => FactualMode::Precision,
                    Some(FactualModeOption::Recall) => FactualMode::Recall,
                    Some(FactualModeOption::F1) | None => FactualMode::F1,
                },
            })
        })
    },
};

struct FactualCorrectness {
    mode: FactualMode,
}

impl JudgedMetric for FactualCorrectness {
    fn score(
        &self,
        input: &JudgedInput<'_>,
        judge: Option<&JudgeClient>,
        repeat: u32,
    ) -> Result<JudgedScore, JudgeError> {
        ragas::factual_correctness(need(judge)?, input.cache, &input.sample, self.mode, repeat)
    }

    fn max_calls(&self) -> (u32, u32) {
        (4, 0)
    }
}

/// `answer_correctness`: factual F1 (weight 0.75) and semantic similarity (0.25).
pub(crate) const ANSWER_CORRECTNESS: EvaluatorSpec = EvaluatorSpec {
    name: "answer_correctness",
    build: |p| {
        judged::build(p, JudgeNeed::Llm, |_: AnswerCorrectnessOptions| {
            Box::new(AnswerCorrectness)
        })
    },
};

struct AnswerCorrectness;

impl JudgedMetric for AnswerCorrectness {
    fn score(
        &self,
        input: &JudgedInput<'_>,
        judge: Option<&JudgeClient>,
        repeat: u32,
    ) -> Result<JudgedScore, JudgeError> {
        ragas::answer_correctness(
            need(judge)?,
            input.cache,
            &|t: &[String]| input.embed(t),
            &input.sample,
            (0.75, 0.25),
            repeat,
        )
    }

    fn max_calls(&self) -> (u32, u32) {
        (4, 1)
    }
}

/// `noise_sensitivity`: incorrect claims drawn from relevant or irrelevant chunks.
pub(crate) const NOISE_SENSITIVITY: EvaluatorSpec = EvaluatorSpec {
    name: "noise_sensitivity",
    build: |p| {
        judged::build(p, JudgeNeed::Llm, |o: NoiseSensitivityOptions| {
            Box::new(NoiseSensitivity {
                mode: match o.noise_mode {
                    Some(NoiseModeOption::Irrelevant) => NoiseMode::Irrelevant,
                    Some(NoiseModeOption::Relevant) | None => NoiseMode::Relevant,
                },
            })
        })
    },
};

struct NoiseSensitivity {
    mode: NoiseMode,
}

impl JudgedMetric for NoiseSensitivity {
    fn score(
        &self,
        input: &JudgedInput<'_>,
        judge: Option<&JudgeClient>,
        repeat: u32,
    ) -> Result<JudgedScore, JudgeError> {
        ragas::noise_sensitivity(need(judge)?, input.cache, &input.sample, self.mode, repeat)
    }

    fn max_calls(&self) -> (u32, u32) {
        (5, 0)
    }
}

/// `semantic_similarity`: embedding cosine between answer and reference.
pub(crate) const SEMANTIC_SIMILARITY: EvaluatorSpec = EvaluatorSpec {
    name: "semantic_similarity",
    build: |p| {
        judged::build(p, JudgeNeed::Embedding, |_: SimilarityOptions| {
            Box::new(Similarity::AnswerReference)
        })
    },
};

/// `question_similarity`: embedding cosine between the question and the answer (answer
/// relevancy without the generated questions; an on-topic wrong answer scores high).
pub(crate) const QUESTION_SIMILARITY: EvaluatorSpec = EvaluatorSpec {
    name: "question_similarity",
    build: |p| {
        judged::build(p, JudgeNeed::Embedding, |_: SimilarityOptions| {
            Box::new(Similarity::QuestionAnswer)
        })
    },
};

enum Similarity {
    AnswerReference,
    QuestionAnswer,
}

impl JudgedMetric for Similarity {
    fn score(
        &self,
        input: &JudgedInput<'_>,
        _: Option<&JudgeClient>,
        _: u32,
    ) -> Result<JudgedScore, JudgeError> {
        let embed = |t: &[String]| input.embed(t);
        match self {
            Similarity::AnswerReference => ragas::semantic_similarity(&embed, &input.sample),
            Similarity::QuestionAnswer => ragas::question_similarity(&embed, &input.sample),
        }
    }

    fn max_calls(&self) -> (u32, u32) {
        (0, 1)
    }
}
