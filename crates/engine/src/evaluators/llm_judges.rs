//! LLM-judge evaluators of the evaluator design guide: `groundedness_judge` (is every claim of
//! the answer supported by the context? pass/fail), `citation_support_judge` (the share of
//! cited statements their cited passages support) and `rubric_judge` (a 1–5 rubric score,
//! optionally G-Eval's probability-weighted score).

use std::collections::BTreeMap;
use std::sync::Mutex;

use oloproof_core::source::SourceError;
use oloproof_judge::ragas::{self, JudgedScore, RubricOptions};
use oloproof_judge::templates::{self, CitedStatement};
use oloproof_judge::{JudgeClient, JudgeError};
use serde_json::json;

use super::claim_support::{is_pair_classifier, nli_entailed_share, DEFAULT_NLI_THRESHOLD};
use super::judged::{
    self, cited_sources, llm_judged_options, need, undefined, JudgeNeed, JudgedInput, JudgedMetric,
};
use super::{EntryParser, EvaluatorSpec, SummaryKind};

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
        /// G-Eval: the criterion in one sentence, instead of `rubric:`; the judge first writes
        /// the evaluation steps for it (one cached call per judge), then scores with them.
        evaluation_criterion: String,
        /// The evaluation steps of `evaluation_criterion`, written by hand (no call derives
        /// them), e.g. those a previous run derived, reviewed.
        evaluation_steps: Vec<String>,
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

/// `rubric_judge`: a 1–5 rubric score of the answer (question, answer, context). With
/// `evaluation_criterion:` (G-Eval), the rubric is that criterion and its evaluation steps:
/// given by `evaluation_steps:`, or written by the judge once (one call per judge, cached, so
/// a re-run or a resumed run asks nothing) and kept in every case's detail
/// (`evaluation_steps`, `steps_derived`), where `show --case` shows them.
pub(crate) const RUBRIC_JUDGE: EvaluatorSpec = EvaluatorSpec {
    name: "rubric_judge",
    build: |p| {
        let options: RubricJudgeOptions = p.options()?;
        check_rubric_options(p, &options)?;
        judged::build(p, JudgeNeed::Llm, |o: RubricJudgeOptions| {
            Box::new(Rubric {
                rubric: o.rubric,
                probability_weighted: o.probability_weighted.unwrap_or(false),
                evaluation_criterion: o.evaluation_criterion,
                evaluation_steps: o.evaluation_steps,
                derived: Mutex::new(BTreeMap::new()),
            })
        })
    },
};

/// `rubric:` and `evaluation_criterion:` exclude each other; `evaluation_steps:` needs
/// `evaluation_criterion:` and holds at least one non-empty step.
fn check_rubric_options(p: &EntryParser<'_>, o: &RubricJudgeOptions) -> Result<(), SourceError> {
    if o.rubric.is_some() && o.evaluation_criterion.is_some() {
        let mut err = p.error(
            "evaluation_criterion",
            "give `rubric:` or `evaluation_criterion:`, not both",
        );
        err.help = Some(
            "`rubric:` is a written 1–5 rubric; `evaluation_criterion:` is one sentence the judge turns into evaluation steps (G-Eval)".into(),
        );
        return Err(err);
    }
    if let Some(steps) = &o.evaluation_steps {
        if o.evaluation_criterion.is_none() {
            let mut err = p.error(
                "evaluation_steps",
                "`evaluation_steps:` are the steps of an `evaluation_criterion:`, and there is none",
            );
            err.help = Some("add `evaluation_criterion: <the criterion in one sentence>`".into());
            return Err(err);
        }
        if steps.iter().all(|s| s.trim().is_empty()) {
            let mut err = p.error("evaluation_steps", "no evaluation step is written");
            err.help = Some(
                "write the steps, or remove `evaluation_steps:` to let the judge write them".into(),
            );
            return Err(err);
        }
    }
    if o.evaluation_criterion
        .as_deref()
        .is_some_and(|c| c.trim().is_empty())
    {
        let mut err = p.error("evaluation_criterion", "the evaluation criterion is empty");
        err.expected = Some(
            "one sentence, e.g. \"The answer states the refund window the policy gives\"".into(),
        );
        return Err(err);
    }
    Ok(())
}

struct Rubric {
    rubric: Option<String>,
    probability_weighted: bool,
    evaluation_criterion: Option<String>,
    evaluation_steps: Option<Vec<String>>,
    /// Steps each judge derived in this run (one call per judge; a failed call is retried by
    /// the next case, never kept).
    derived: Mutex<BTreeMap<String, Vec<String>>>,
}

impl Rubric {
    /// The evaluation steps for `judge`: written in the options, derived in this run, or
    /// derived now (the call is returned to be accounted for); whether they were derived.
    fn steps(
        &self,
        criterion: &str,
        judge: &JudgeClient,
        cache: &dyn oloproof_judge::JudgeCache,
    ) -> Result<(Vec<String>, bool, Vec<oloproof_judge::CallRecord>), JudgeError> {
        if let Some(steps) = &self.evaluation_steps {
            return Ok((steps.clone(), false, Vec::new()));
        }
        // Held while deriving, so that concurrent cases wait for the one call.
        let mut derived = self.derived.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(steps) = derived.get(judge.name()) {
            return Ok((steps.clone(), true, Vec::new()));
        }
        let (steps, record) = ragas::evaluation_steps(judge, cache, criterion)?;
        derived.insert(judge.name().to_string(), steps.clone());
        Ok((steps, true, vec![record]))
    }
}

impl JudgedMetric for Rubric {
    fn score(
        &self,
        input: &JudgedInput<'_>,
        judge: Option<&JudgeClient>,
        repeat: u32,
    ) -> Result<JudgedScore, JudgeError> {
        let judge = need(judge)?;
        let Some(criterion) = &self.evaluation_criterion else {
            let rubric = RubricOptions {
                rubric: self.rubric.as_deref(),
                with_context: true,
                probability_weighted: self.probability_weighted,
            };
            return ragas::rubric_judge_with(judge, input.cache, &input.sample, &rubric, repeat);
        };
        let (steps, derived, mut calls) = self.steps(criterion, judge, input.cache)?;
        let text = templates::rubric_with_steps(criterion, &steps);
        let rubric = RubricOptions {
            rubric: Some(&text),
            with_context: true,
            probability_weighted: self.probability_weighted,
        };
        let mut score =
            ragas::rubric_judge_with(judge, input.cache, &input.sample, &rubric, repeat)?;
        score.detail["evaluation_criterion"] = json!(criterion);
        score.detail["evaluation_steps"] = json!(steps);
        score.detail["steps_derived"] = json!(derived);
        calls.append(&mut score.calls);
        score.calls = calls;
        Ok(score)
    }

    fn max_calls(&self) -> (u32, u32) {
        // The steps call is made once per judge and run, not per case.
        (1, 0)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    fn error_of(entry: serde_json::Value) -> String {
        match crate::evaluators::from_json(&entry) {
            Ok(_) => panic!("{entry} built"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn g_eval_options_are_checked() {
        let base = json!({"type": "rubric_judge", "judge": "default"});
        let with = |k: &str, v: serde_json::Value| {
            let mut e = base.clone();
            e[k] = v;
            e
        };
        let e = error_of(with("evaluation_steps", json!(["Read it."])));
        assert!(
            e.contains("there is none") && e.contains("evaluation_steps"),
            "{e}"
        );
        let mut steps_blank = with("evaluation_criterion", json!("The answer is polite."));
        steps_blank["evaluation_steps"] = json!(["  "]);
        let e = error_of(steps_blank);
        assert!(e.contains("no evaluation step is written"), "{e}");
        let e = error_of(with("evaluation_criterion", json!(" ")));
        assert!(e.contains("the evaluation criterion is empty"), "{e}");
        let mut both = with("evaluation_criterion", json!("The answer is polite."));
        both["rubric"] = json!("1 = bad, 5 = good");
        assert!(error_of(both).contains("not both"));
        assert!(crate::evaluators::from_json(&with(
            "evaluation_criterion",
            json!("The answer is polite.")
        ))
        .is_ok());
    }
}
