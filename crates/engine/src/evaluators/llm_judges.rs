//! LLM-judge evaluators of the evaluator design guide: `groundedness_judge` (is every claim of
//! the answer supported by the context? pass/fail), `citation_support_judge` (the share of
//! cited statements their cited passages support) and `rubric_judge` (a 1–5 rubric score,
//! optionally G-Eval's probability-weighted score).

use oloproof_judge::ragas::{self, JudgedScore, RubricOptions};
use oloproof_judge::templates::CitedStatement;
use oloproof_judge::{JudgeClient, JudgeError};

use super::claim_support::{is_pair_classifier, nli_entailed_share, DEFAULT_NLI_THRESHOLD};
use super::judged::{
    self, cited_sources, llm_judged_options, need, undefined, JudgeNeed, JudgedInput, JudgedMetric,
};
use super::{EvaluatorSpec, SummaryKind};

llm_judged_options! {
    /// Options of `groundedness_judge`.
    GroundednessOptions {}
}

llm_judged_options! {
    /// Options of `citation_support_judge`.
    CitationSupportOptions {
        /// With a local `nli` judge: the entailment probability that counts as entailed
        /// (default 0.5).
        threshold: f64,
    }
}

llm_judged_options! {
    /// Options of `rubric_judge`.
    RubricJudgeOptions {
        /// G-Eval probability-weighted score from the score token's log-probabilities
        /// (OpenAI), default false.
        probability_weighted: bool,
        /// The written 1–5 rubric (default: the evaluator design guide's).
        rubric: String,
    }
}

/// `groundedness_judge`: pass when the judge finds every claim supported by the context.
pub(crate) const GROUNDEDNESS_JUDGE: EvaluatorSpec = EvaluatorSpec {
    name: "groundedness_judge",
    build: |p| {
        judged::build(p, JudgeNeed::Llm, |_: GroundednessOptions| {
            Box::new(Groundedness)
        })
    },
};

struct Groundedness;

impl JudgedMetric for Groundedness {
    fn kind(&self) -> SummaryKind {
        SummaryKind::Proportion
    }

    fn score(
        &self,
        input: &JudgedInput<'_>,
        judge: Option<&JudgeClient>,
        repeat: u32,
    ) -> Result<JudgedScore, JudgeError> {
        ragas::groundedness_judge(need(judge)?, input.cache, &input.sample, repeat)
    }

    fn max_calls(&self) -> (u32, u32) {
        (1, 0)
    }
}

/// `citation_support_judge`: the share of cited statements their cited passages support.
pub(crate) const CITATION_SUPPORT_JUDGE: EvaluatorSpec = EvaluatorSpec {
    name: "citation_support_judge",
    build: |p| {
        judged::build(p, JudgeNeed::Llm, |o: CitationSupportOptions| {
            Box::new(CitationSupport {
                threshold: o.threshold.unwrap_or(DEFAULT_NLI_THRESHOLD),
            })
        })
    },
};

struct CitationSupport {
    threshold: f64,
}

impl JudgedMetric for CitationSupport {
    fn score(
        &self,
        input: &JudgedInput<'_>,
        judge: Option<&JudgeClient>,
        repeat: u32,
    ) -> Result<JudgedScore, JudgeError> {
        let answer = input.sample.answer;
        if let Some(nli) = judge.filter(|j| is_pair_classifier(j)) {
            let cited = cited_sources(input.trace);
            if cited.is_empty() {
                return Ok(undefined("no_citations"));
            }
            return nli_entailed_share(
                nli,
                &[answer.to_string()],
                &[cited.join("\n")],
                self.threshold,
                "nli: the answer against its cited passages",
            );
        }
        let items = if input.trace.citations().is_empty() {
            Vec::new()
        } else {
            vec![CitedStatement {
                statement: answer.to_string(),
                sources: cited_sources(input.trace),
            }]
        };
        ragas::citation_support_judge(
            need(judge)?,
            input.cache,
            input.sample.question,
            &items,
            repeat,
        )
    }

    fn max_calls(&self) -> (u32, u32) {
        (1, 0)
    }
}

/// `rubric_judge`: a 1–5 rubric score of the answer (question, answer, context).
pub(crate) const RUBRIC_JUDGE: EvaluatorSpec = EvaluatorSpec {
    name: "rubric_judge",
    build: |p| {
        judged::build(p, JudgeNeed::Llm, |o: RubricJudgeOptions| {
            Box::new(Rubric {
                rubric: o.rubric,
                probability_weighted: o.probability_weighted.unwrap_or(false),
            })
        })
    },
};

struct Rubric {
    rubric: Option<String>,
    probability_weighted: bool,
}

impl JudgedMetric for Rubric {
    fn score(
        &self,
        input: &JudgedInput<'_>,
        judge: Option<&JudgeClient>,
        repeat: u32,
    ) -> Result<JudgedScore, JudgeError> {
        let rubric = RubricOptions {
            rubric: self.rubric.as_deref(),
            with_context: true,
            probability_weighted: self.probability_weighted,
        };
        ragas::rubric_judge_with(need(judge)?, input.cache, &input.sample, &rubric, repeat)
    }

    fn max_calls(&self) -> (u32, u32) {
        (1, 0)
    }
}
