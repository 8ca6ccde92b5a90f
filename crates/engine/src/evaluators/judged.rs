//! What every judged evaluator shares: which judges score it ([`JudgeChoice`]), repeats
//! (self-consistency) and ensembles, the verdict made of a [`JudgedScore`], and the call
//! estimate of `run --dry-run`. A judged evaluator type is a [`JudgedMetric`] (how one judgment
//! of one case is made, with one judge) and an options type of its own; [`build`] checks the
//! judges it names and wraps it.
//!
//! Every judge call goes through the `judge_call` cache layer; the raw response and the parsed
//! judgment are kept in the verdict's detail. A call that finally fails makes the criterion
//! `missing` with the error — never a pass or a fail — and an undefined score (a refusal has no
//! claims) is `excluded` with its reason.

use std::sync::Arc;

use oloproof_core::case::Case;
use oloproof_core::config::EvaluatorEntry;
use oloproof_core::source::SourceError;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use oloproof_judge::ragas::{self, Aggregation, EnsembleRule, JudgedScore, Sample};
use oloproof_judge::{JudgeCache, JudgeClient, JudgeError};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{CallEstimate, EntryParser, Evaluator, SummaryKind};
use crate::judged::{call_detail, failure_detail, question_of, reference_of, JudgeEnv};

/// How repeated judgments combine.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Aggregate {
    /// The most frequent value (ties to the lower value).
    Majority,
    /// The mean value.
    Mean,
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

/// Which judges score a judged evaluator, read from its entry (the options every judged type
/// shares; the type's own options type decides which of them it takes).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct JudgeChoice {
    /// The judge (a key of `judges:`).
    #[serde(default)]
    pub judge: Option<String>,
    /// The judge used for embeddings (default: `judge`).
    #[serde(default)]
    pub embedding_judge: Option<String>,
    /// An ensemble: the same metric from each of these judges, instead of `judge:`.
    #[serde(default)]
    pub judges: Option<Vec<String>>,
    /// How an ensemble's judges combine (default: majority for pass/fail, mean for scores).
    #[serde(default)]
    pub ensemble: Option<EnsembleOption>,
    /// Independent judgments per case (self-consistency), default 1.
    #[serde(default)]
    pub repeats: Option<u32>,
    /// How repeats combine (default: majority for pass/fail judges, mean for scores).
    #[serde(default)]
    pub aggregate: Option<Aggregate>,
}

impl JudgeChoice {
    /// The LLM judges this evaluator calls: `judges:` when given, else `judge:`.
    pub fn llm_judges(&self) -> Vec<String> {
        match &self.judges {
            Some(list) if !list.is_empty() => list.clone(),
            _ => self.judge.iter().cloned().collect(),
        }
    }

    /// Whether `judges:` names an ensemble.
    fn is_ensemble(&self) -> bool {
        self.judges.as_ref().is_some_and(|j| !j.is_empty())
    }
}

/// Declares the options type of an LLM-judged evaluator: `criterion`, `judge`, `judges`,
/// `ensemble`, `repeats` and `aggregate`, plus the type's own options (each optional),
/// `deny_unknown_fields`.
macro_rules! llm_judged_options {
    ($(#[$meta:meta])* $name:ident { $($(#[$fmeta:meta])* $field:ident: $ty:ty,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// Criterion name (default: the evaluator type).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub criterion: Option<String>,
            /// The judge (a key of `judges:`).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub judge: Option<String>,
            /// Independent judgments per case (self-consistency), default 1.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub repeats: Option<u32>,
            /// How repeats combine (default: majority for pass/fail judges, mean for scores).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub aggregate: Option<$crate::evaluators::judged::Aggregate>,
            /// An ensemble: the same metric from each of these judges (keys of `judges:`),
            /// instead of `judge:`.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub judges: Option<Vec<String>>,
            /// How an ensemble's judges combine (default: majority for pass/fail judges,
            /// mean for scores).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub ensemble: Option<$crate::evaluators::judged::EnsembleOption>,
            $(
                $(#[$fmeta])*
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $field: Option<$ty>,
            )*
        }
    };
}
pub(crate) use llm_judged_options;

/// What one judgment of one case reads.
pub(crate) struct JudgedInput<'a> {
    /// Its trace.
    pub trace: &'a Trace,
    /// Question, answer, context texts and reference.
    pub sample: Sample<'a>,
    /// The judge-call cache.
    pub cache: &'a dyn JudgeCache,
    /// The embedding judge (`embedding_judge:`, else the first LLM judge).
    pub embedder: Option<&'a JudgeClient>,
}

impl JudgedInput<'_> {
    /// Embeds `texts` with the embedding judge, through the cache.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, JudgeError> {
        match self.embedder {
            Some(e) => e.embed_cached(self.cache, texts),
            None => Err(JudgeError::Unsupported {
                judge: "(none)".into(),
                message: "embeddings without an embedding judge".into(),
            }),
        }
    }
}

/// The LLM judge a metric needs, or the error saying it has none.
pub(crate) fn need(judge: Option<&JudgeClient>) -> Result<&JudgeClient, JudgeError> {
    judge.ok_or_else(|| JudgeError::Unsupported {
        judge: "(none)".into(),
        message: "this evaluator without `judge:`".into(),
    })
}

/// An undefined score with `reason`, made without a call.
pub(crate) fn undefined(reason: &'static str) -> JudgedScore {
    JudgedScore {
        value: None,
        excluded_reason: Some(reason),
        detail: Value::Null,
        calls: Vec::new(),
    }
}

/// How one judged metric makes one judgment of one case.
pub(crate) trait JudgedMetric: Send + Sync {
    /// `Proportion` (a pass when the score reaches 0.5) or `Mean` (the default).
    fn kind(&self) -> SummaryKind {
        SummaryKind::Mean
    }
    /// One judgment with `judge` (the LLM judge of this repeat or ensemble member).
    fn score(
        &self,
        input: &JudgedInput<'_>,
        judge: Option<&JudgeClient>,
        repeat: u32,
    ) -> Result<JudgedScore, JudgeError>;
    /// The most LLM calls and embedding requests of one judgment.
    fn max_calls(&self) -> (u32, u32);
}

/// What judges a judged type needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JudgeNeed {
    /// An LLM judge (`judge:` or `judges:`); it takes `repeats:`.
    Llm,
    /// An embedding judge (`embedding_judge:` or `judge:`); no repeats (embeddings are
    /// deterministic).
    Embedding,
}

/// Builds a judged evaluator: parses the type's options `O` (its identity), reads which
/// judges score it, checks them (declared, not both `judge:` and `judges:`, the judge it
/// needs present, `threshold` in [-1, 1]) and wraps `metric(options)`.
pub(crate) fn build<O: DeserializeOwned + Serialize>(
    p: &EntryParser<'_>,
    need: JudgeNeed,
    metric: impl FnOnce(O) -> Box<dyn JudgedMetric>,
) -> Result<Box<dyn Evaluator>, SourceError> {
    let options: O = p.options()?;
    let identity = p.identity(&options);
    let choice: JudgeChoice = p.parse(&Value::Object(p.entry.options.clone()))?;
    let type_name = p.entry.type_name.as_str();
    if let Some(t) = p.entry.options.get("threshold").and_then(Value::as_f64) {
        if !(-1.0..=1.0).contains(&t) {
            let path = p.path("threshold");
            let mut err = p.doc.error_at(
                &path,
                false,
                format!("`threshold` must be between -1 and 1, got {t}"),
            );
            err.help = Some("a cosine or probability threshold such as 0.6".to_string());
            return Err(oloproof_core::config::attribute(err, p.overrides, &path));
        }
    }
    if choice.judge.is_some() && choice.judges.is_some() {
        return Err(p.error("judges", "give either `judge:` or `judges:`, not both"));
    }
    if p.judges.is_some() {
        if need == JudgeNeed::Llm && choice.llm_judges().is_empty() {
            let mut err = p
                .doc
                .error_at(&p.key_path, true, format!("`{type_name}` needs a judge"));
            err.key_path = Some(p.path("judge"));
            err.help = Some(match p.first_judge() {
                Some(n) => format!("add `judge: {n}`"),
                None => "declare one under `judges:` (provider, model, api_key_env) and name it with `judge:`".to_string(),
            });
            return Err(err);
        }
        if need == JudgeNeed::Embedding
            && choice.judge.is_none()
            && choice.embedding_judge.is_none()
        {
            let mut err = p.doc.error_at(
                &p.key_path,
                true,
                format!("`{type_name}` needs an embedding judge"),
            );
            err.help = Some("add `embedding_judge: NAME` (or `judge: NAME`)".to_string());
            return Err(err);
        }
    }
    let mut refs: Vec<(String, &String)> = Vec::new();
    refs.extend(choice.judge.iter().map(|n| ("judge".to_string(), n)));
    refs.extend(
        choice
            .embedding_judge
            .iter()
            .map(|n| ("embedding_judge".to_string(), n)),
    );
    for (j, name) in choice.judges.iter().flatten().enumerate() {
        refs.push((format!("judges[{j}]"), name));
    }
    for (key, name) in refs {
        p.check_judge(&key, name)?;
    }
    Ok(Box::new(Judged {
        criterion: p
            .entry
            .criterion_override()
            .unwrap_or(type_name)
            .to_string(),
        identity,
        choice,
        metric: metric(options),
        takes_repeats: need == JudgeNeed::Llm,
    }))
}

/// A criterion scored by a judge.
struct Judged {
    criterion: String,
    identity: EvaluatorEntry,
    choice: JudgeChoice,
    metric: Box<dyn JudgedMetric>,
    takes_repeats: bool,
}

impl Evaluator for Judged {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        self.metric.kind()
    }

    fn identity(&self) -> &EvaluatorEntry {
        &self.identity
    }

    fn judge_names(&self) -> Vec<String> {
        // Every judge of an ensemble (`judges:`) joins the key.
        let mut names = self.choice.llm_judges();
        names.extend(self.choice.embedding_judge.clone());
        names
    }

    fn judge_choice(&self) -> Option<&JudgeChoice> {
        Some(&self.choice)
    }

    fn takes_repeats(&self) -> bool {
        self.takes_repeats
    }

    fn estimate(&self, case: &Case) -> Option<CallEstimate> {
        // Every judge of an ensemble makes the calls.
        let repeats = u64::from(self.choice.repeats.unwrap_or(1).max(1))
            * self.choice.llm_judges().len().max(1) as u64;
        Some(estimate_calls(case, self.metric.max_calls(), repeats))
    }

    fn evaluate(
        &self,
        case: &Case,
        trace: &Trace,
        judges: Option<&JudgeEnv<'_>>,
    ) -> CriterionVerdict {
        match judges {
            Some(env) => self.judge(case, trace, env),
            None => super::missing_with(
                &self.criterion,
                "no judges are configured for this evaluation",
            ),
        }
    }
}

impl Judged {
    fn judge(&self, case: &Case, trace: &Trace, env: &JudgeEnv<'_>) -> CriterionVerdict {
        let criterion = self.criterion.as_str();
        let verdict = |v: Verdict, detail: Value| super::verdict(criterion, v, detail);
        let Some(answer) = trace.answer().map(str::to_string) else {
            let error = match &trace.error {
                Some(e) => e.summary(),
                None => "the system's output has no `answer`".to_string(),
            };
            return verdict(Verdict::Missing { error }, Value::Null);
        };
        let lookup = |name: Option<&String>| -> Result<Option<&Arc<JudgeClient>>, String> {
            match name {
                None => Ok(None),
                Some(n) => env
                    .judges
                    .client(n)
                    .map(Some)
                    .ok_or_else(|| format!("no judge named `{n}`")),
            }
        };
        // `judges:` (an ensemble) or `judge:`; the first one also embeds unless
        // `embedding_judge:` says otherwise.
        let llm_judges = self.choice.llm_judges();
        let ensemble = self.choice.is_ensemble();
        // Inside the case span (run id, case id): which criterion and which judges.
        let _span = tracing::info_span!(
            "judge",
            criterion = %self.criterion,
            judges = %self.judge_names().join("+"),
        )
        .entered();
        let (judge, embedder) = match (
            lookup(llm_judges.first()),
            lookup(self.choice.embedding_judge.as_ref()),
        ) {
            (Ok(j), Ok(e)) => (j, e.or(j)),
            (Err(e), _) | (_, Err(e)) => {
                return verdict(Verdict::Missing { error: e }, Value::Null)
            }
        };
        let question = question_of(case);
        let reference = reference_of(case);
        let contexts: Vec<String> = trace
            .context
            .as_ref()
            .map(|c| {
                c.passages
                    .iter()
                    .filter_map(|p| p.passage.text.clone())
                    .collect()
            })
            .unwrap_or_default(); // no context: no passages
        let input = JudgedInput {
            trace,
            sample: Sample {
                question: &question,
                answer: &answer,
                contexts: &contexts,
                reference: reference.as_deref(),
            },
            cache: env.cache,
            embedder: embedder.map(|e| e.as_ref()),
        };
        let proportion = self.metric.kind() == SummaryKind::Proportion;
        let aggregation = match self.choice.aggregate {
            Some(Aggregate::Majority) => Aggregation::Majority,
            Some(Aggregate::Mean) => Aggregation::Mean,
            None if proportion => Aggregation::Majority,
            None => Aggregation::Mean,
        };
        let repeats = self.choice.repeats.unwrap_or(1).max(1);
        let one = |judge: Option<&Arc<JudgeClient>>| {
            let judge = judge.map(|j| j.as_ref());
            if repeats == 1 {
                self.metric.score(&input, judge, 0)
            } else {
                ragas::self_consistency(repeats, aggregation, &|r| {
                    self.metric.score(&input, judge, r)
                })
            }
        };
        let mut judge_name = llm_judges
            .first()
            .cloned()
            .or_else(|| self.choice.embedding_judge.clone());
        // An ensemble: the metric from every judge, each call tagged with its judge.
        let mut tagged_calls = Vec::new();
        let result = if ensemble {
            let rule = match self.choice.ensemble {
                Some(EnsembleOption::Majority) => EnsembleRule::Majority,
                Some(EnsembleOption::Unanimous) => EnsembleRule::Unanimous,
                Some(EnsembleOption::Mean) => EnsembleRule::Mean,
                None if proportion => EnsembleRule::Majority,
                None => EnsembleRule::Mean,
            };
            let mut results = Vec::new();
            let mut failure = None;
            for name in &llm_judges {
                let Some(client) = env.judges.client(name) else {
                    let error = format!("no judge named `{name}`");
                    return verdict(Verdict::Missing { error }, Value::Null);
                };
                match one(Some(client)) {
                    Ok(score) => {
                        if let Value::Array(calls) = call_detail(&score.calls) {
                            for mut c in calls {
                                c["judge"] = json!(name);
                                tagged_calls.push(c);
                            }
                        }
                        results.push((name.clone(), score));
                    }
                    Err(e) => {
                        judge_name = Some(name.clone());
                        failure = Some(e);
                        break;
                    }
                }
            }
            match failure {
                Some(e) => Err(e),
                None => Ok(ragas::ensemble(rule, results)),
            }
        } else {
            one(judge)
        };
        match result {
            Ok(score) => {
                let mut detail = json!({
                    "judge": judge_name,
                    "repeats": repeats,
                    "result": score.detail,
                    "calls": call_detail(&score.calls),
                });
                if ensemble {
                    detail["judge"] = json!(llm_judges.join("+"));
                    detail["judges"] = json!(llm_judges);
                    detail["disagreement"] = score.detail["disagreement"].clone();
                    detail["calls"] = Value::Array(tagged_calls);
                }
                match (score.value, score.excluded_reason) {
                    (Some(v), _) if proportion => verdict(Verdict::pass_if(v >= 0.5), detail),
                    (Some(v), _) => verdict(Verdict::score(v), detail),
                    (None, reason) => verdict(
                        Verdict::Excluded {
                            reason: reason.unwrap_or("undefined").to_string(),
                        },
                        detail,
                    ),
                }
            }
            Err(e) => {
                let mut detail = json!({
                    "judge": judge_name,
                    "failed_call": failure_detail(
                        &e,
                        judge_name
                            .as_deref()
                            .and_then(|n| env.judges.client(n))
                            .map(|c| c.as_ref())
                    ),
                });
                if !tagged_calls.is_empty() {
                    // An ensemble's judges that answered before one failed: their calls were
                    // made (and billed) all the same.
                    detail["calls"] = Value::Array(tagged_calls);
                }
                verdict(
                    Verdict::Missing {
                        error: format!(
                            "judge {}: {}: {e}",
                            judge_name.unwrap_or_default(), // the error names the judge too
                            e.kind()
                        ),
                    },
                    detail,
                )
            }
        }
    }
}

/// Judge calls (upper bound), embedding requests and estimated input tokens of `max_calls`
/// judgments made `repeats` times on `case`, for `--dry-run`: the case's question, expected
/// answer and gold context stand in for the answer and context not generated yet.
pub(crate) fn estimate_calls(case: &Case, max_calls: (u32, u32), repeats: u64) -> CallEstimate {
    let (calls, embeds) = max_calls;
    let question = question_of(case);
    let answer = reference_of(case).unwrap_or_default(); // an estimate: no reference, no text
    let contexts: Vec<String> = case
        .expected
        .gold_context
        .iter()
        .flatten()
        .map(|g| g.text.clone())
        .collect();
    let request = oloproof_judge::templates::groundedness(&question, &contexts, &answer, 0);
    let per_call = oloproof_judge::estimate_request_tokens(&request);
    let calls = u64::from(calls) * repeats;
    CallEstimate {
        calls,
        embeddings: u64::from(embeds) * repeats,
        input_tokens: calls * per_call,
    }
}

/// The texts of the context passages the answer cites (by passage or chunk id).
pub(crate) fn cited_sources(trace: &Trace) -> Vec<String> {
    let cited = trace.citations();
    trace
        .context
        .as_ref()
        .map(|c| {
            c.passages
                .iter()
                .filter(|p| {
                    cited.contains(&p.passage.doc_id)
                        || p.passage
                            .chunk_id
                            .as_ref()
                            .is_some_and(|ch| cited.contains(ch))
                })
                .filter_map(|p| p.passage.text.clone())
                .collect()
        })
        .unwrap_or_default() // no context: no passages
}
