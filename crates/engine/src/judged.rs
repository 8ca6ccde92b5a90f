//! Judged evaluators: criteria scored by an LLM judge or an embedding model through
//! `oloproof-judge` (groundedness, citation support, and the Ragas metrics).
//!
//! Every judge call goes through the `judge_call` cache layer (keyed by provider, model,
//! base URL, template and version, rendered messages, sampling and repeat index); the raw
//! response and the parsed judgment are kept in the verdict's detail. A call that finally fails
//! makes the criterion `missing` with the error — never a pass or a fail — and an undefined
//! score (a refusal has no claims) is `excluded` with its reason.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use oloproof_core::case::Case;
use oloproof_core::config::{
    Aggregate, EnsembleOption, EvaluatorOptions, FactualModeOption, JudgedOptions, NoiseModeOption,
};
use oloproof_core::source::SourceError;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use oloproof_judge::ragas::{
    self, Aggregation, EnsembleRule, FactualMode, JudgedScore, NoiseMode, RubricOptions, Sample,
};
use oloproof_judge::templates::CitedStatement;
use oloproof_judge::{CallRecord, JudgeCache, JudgeClient, JudgeError, JudgeSettings};
use oloproof_store::SqliteStore;
use serde_json::{json, Value};

use crate::evaluate::SummaryKind;
use crate::execute::CacheWrite;

/// Cache layer of single judge calls.
pub const JUDGE_CALL_LAYER: &str = "judge_call";

/// The run's judges, by name.
#[derive(Default)]
pub struct JudgeRegistry {
    clients: BTreeMap<String, Arc<JudgeClient>>,
    settings: BTreeMap<String, JudgeSettings>,
}

impl JudgeRegistry {
    /// Builds the clients of `judges:` (keys are read from the environment only when a call
    /// is made).
    pub fn from_options(judges: &BTreeMap<String, Value>) -> Result<Self, String> {
        let mut registry = JudgeRegistry::default();
        for (name, value) in judges {
            let settings: JudgeSettings =
                serde_json::from_value(value.clone()).map_err(|e| format!("judges.{name}: {e}"))?;
            let client = JudgeClient::new(name, settings.clone()).map_err(|e| e.to_string())?;
            registry.clients.insert(name.clone(), Arc::new(client));
            registry.settings.insert(name.clone(), settings);
        }
        Ok(registry)
    }

    /// The client named `name`.
    pub fn client(&self, name: &str) -> Option<&Arc<JudgeClient>> {
        self.clients.get(name)
    }

    /// Settings of `name` (what identifies its judgments), as JSON.
    pub fn identity(&self, name: &str) -> Value {
        let mut identity = self
            .settings
            .get(name)
            .and_then(|s| serde_json::to_value(s).ok())
            .unwrap_or(Value::Null);
        // A local model is identified by its content, not only by its path.
        if let (Some(model), Value::Object(map)) = (
            self.clients.get(name).and_then(|c| c.model_identity()),
            &mut identity,
        ) {
            map.insert("model_identity".into(), Value::String(model));
        }
        identity
    }

    /// Dollars spent by every judge of this process so far.
    pub fn spent_usd(&self) -> f64 {
        self.clients.values().map(|c| c.totals().cost_usd).sum()
    }
}

/// Checks `judges:` with source positions (unknown keys, wrong types, bad values), and that
/// every `schema_validity` schema compiles.
pub fn validate_judges(config: &oloproof_core::config::ProjectConfig) -> Result<(), SourceError> {
    crate::evaluate::validate_schemas(config)?;
    let Some(Value::Object(judges)) = config.value.get("judges") else {
        return Ok(());
    };
    for (name, value) in judges {
        let path = format!("judges.{name}");
        let settings: JudgeSettings = config.source.deserialize_at(value, &path)?;
        if let Err(message) = settings.validate() {
            return Err(config.source.error_at(&path, false, message));
        }
        // A local model's path is checked here, where the error can point at it; the files
        // themselves are checked when the model loads.
        if settings.provider == oloproof_judge::Provider::Local && !oloproof_judge::LOCAL_MODELS {
            let key = format!("{path}.provider");
            return Err(config
                .source
                .error_at(&key, false, oloproof_judge::WITHOUT_LOCAL_MODELS));
        }
        if settings.provider == oloproof_judge::Provider::Local {
            let key = format!("{path}.path");
            // An `hf://` path is only checked for its form here: it downloads when the model
            // loads, not on `--dry-run` or a validation.
            match settings.check_local_path() {
                Err(message) => return Err(config.source.error_at(&key, false, message)),
                Ok(Some(p)) if !p.exists() => {
                    let mut err = config.source.error_at(
                        &key,
                        false,
                        format!("{}: no such file or folder", p.display()),
                    );
                    err.expected = Some(match settings.kind {
                        Some(oloproof_judge::LocalKind::Generate) => {
                            "a GGUF chat model file (.gguf) or a folder holding one".to_string()
                        }
                        _ => "a model folder in the Hugging Face layout (config.json, tokenizer.json, model.safetensors)".to_string(),
                    });
                    return Err(err);
                }
                Ok(_) => {}
            }
        }
    }
    Ok(())
}

/// A judge-call cache over the run store: reads through its own read-only connection, and
/// collects new entries to be committed with the case.
pub struct StoreJudgeCache {
    reader: Mutex<Option<SqliteStore>>,
    writes: Mutex<Vec<CacheWrite>>,
    /// Calls answered during this run by this worker, so an identical call made by a second
    /// evaluator of the same case (before the case commits) is not sent again.
    answered: Mutex<std::collections::HashMap<String, (String, Value)>>,
}

impl StoreJudgeCache {
    /// A cache reading from `reader` (`None`: caches bypassed; entries are still written).
    pub fn new(reader: Option<SqliteStore>) -> Self {
        StoreJudgeCache {
            reader: Mutex::new(reader),
            writes: Mutex::new(Vec::new()),
            answered: Mutex::new(std::collections::HashMap::new()),
        }
    }

    /// The entries added since the last call.
    pub fn take_writes(&self) -> Vec<CacheWrite> {
        std::mem::take(&mut *self.writes.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl JudgeCache for StoreJudgeCache {
    fn get(&self, key: &str) -> Option<(String, Value)> {
        if let Some(hit) = self
            .answered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
        {
            return Some(hit.clone());
        }
        let guard = self.reader.lock().unwrap_or_else(|p| p.into_inner());
        let stored = guard
            .as_ref()?
            .cache_get(JUDGE_CALL_LAYER, key)
            .ok()
            .flatten()?;
        let v: Value = serde_json::from_str(&stored).ok()?;
        Some((
            v.get("raw")?.as_str()?.to_string(),
            v.get("parsed")?.clone(),
        ))
    }

    fn put(&self, key: &str, raw: &str, parsed: &Value) {
        self.answered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_string(), (raw.to_string(), parsed.clone()));
        let value = json!({"raw": raw, "parsed": parsed}).to_string();
        self.writes.lock().unwrap_or_else(|p| p.into_inner()).push((
            JUDGE_CALL_LAYER.to_string(),
            key.to_string(),
            value,
        ));
    }
}

/// What a judged evaluator needs at evaluation time.
pub struct JudgeEnv<'a> {
    /// The run's judges.
    pub judges: &'a JudgeRegistry,
    /// The judge-call cache.
    pub cache: &'a dyn JudgeCache,
}

/// How a judged criterion is summarised.
pub fn kind(options: &EvaluatorOptions) -> SummaryKind {
    match options {
        EvaluatorOptions::GroundednessJudge(_) | EvaluatorOptions::ClaimSupport(_) => {
            SummaryKind::Proportion
        }
        _ => SummaryKind::Mean,
    }
}

/// The question text of a case: `input.question`, else `query`, `user_input`, else the input.
pub fn question_of(case: &Case) -> String {
    for key in ["question", "query", "user_input"] {
        if let Some(Value::String(q)) = case.input.get(key) {
            return q.clone();
        }
    }
    Value::Object(case.input.clone()).to_string()
}

fn reference_of(case: &Case) -> Option<String> {
    match &case.expected.answer {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Array(items)) => items.iter().find_map(|v| v.as_str().map(str::to_string)),
        _ => None,
    }
}

pub(crate) fn call_detail(calls: &[CallRecord]) -> Value {
    Value::Array(
        calls
            .iter()
            .map(|c| {
                json!({
                    "template": format!("{}@{}", c.template_id, c.template_version),
                    "repeat": c.repeat_index,
                    "cached": c.cached,
                    "attempts": c.attempts,
                    "repaired": c.repaired,
                    "input_tokens": c.usage.input_tokens,
                    "output_tokens": c.usage.output_tokens,
                    "cost_usd": c.cost_usd,
                    "raw": c.raw,
                    "parsed": c.parsed,
                })
            })
            .collect(),
    )
}

/// The texts of the context passages the answer cites (by passage or chunk id).
fn cited_sources(trace: &Trace) -> Vec<String> {
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
        .unwrap_or_default()
}

/// Judges one case for a judged evaluator.
pub fn evaluate(
    criterion: &str,
    options: &EvaluatorOptions,
    judged: &JudgedOptions,
    case: &Case,
    trace: &Trace,
    env: &JudgeEnv<'_>,
) -> CriterionVerdict {
    let verdict = |v: Verdict, detail: Value| CriterionVerdict {
        criterion: criterion.to_string(),
        verdict: v,
        detail,
    };
    let Some(answer) = trace.answer().map(str::to_string) else {
        let error = match &trace.error {
            Some(e) => e.summary(),
            None => "the system's output has no `answer`".to_string(),
        };
        return verdict(Verdict::Missing { error }, Value::Null);
    };
    let lookup = |name: &Option<String>| -> Result<Option<&Arc<JudgeClient>>, String> {
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
    let llm_judges = judged.llm_judges();
    let ensemble = judged.judges.as_ref().is_some_and(|j| !j.is_empty());
    let (judge, embedder) = match (
        lookup(&llm_judges.first().cloned()),
        lookup(&judged.embedding_judge),
    ) {
        (Ok(j), Ok(e)) => (j, e.or(j)),
        (Err(e), _) | (_, Err(e)) => return verdict(Verdict::Missing { error: e }, Value::Null),
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
        .unwrap_or_default();
    let sample = Sample {
        question: &question,
        answer: &answer,
        contexts: &contexts,
        reference: reference.as_deref(),
    };
    let embed_fn = |texts: &[String]| -> Result<Vec<Vec<f32>>, JudgeError> {
        match embedder {
            Some(e) => e.embed_cached(env.cache, texts),
            None => Err(JudgeError::Unsupported {
                judge: "(none)".into(),
                message: "embeddings without an embedding judge".into(),
            }),
        }
    };
    let aggregation = match judged.aggregate {
        Some(Aggregate::Majority) => Aggregation::Majority,
        Some(Aggregate::Mean) => Aggregation::Mean,
        None if kind(options) == SummaryKind::Proportion => Aggregation::Majority,
        None => Aggregation::Mean,
    };
    let cache = env.cache;
    let run = |judge: Option<&Arc<JudgeClient>>, repeat: u32| -> Result<JudgedScore, JudgeError> {
        let need = || {
            judge
                .map(|j| j.as_ref())
                .ok_or_else(|| JudgeError::Unsupported {
                    judge: "(none)".into(),
                    message: "this evaluator without `judge:`".into(),
                })
        };
        // A local NLI model verifies claims itself: the answer's sentences against the
        // context (faithfulness), the reference's against the context (context recall), the
        // answer against its cited passages (citation support).
        if let Some(nli) = judge.filter(|j| crate::claim_support::is_pair_classifier(j)) {
            let threshold = judged
                .threshold
                .unwrap_or(crate::claim_support::DEFAULT_NLI_THRESHOLD);
            let sentences = oloproof_metrics::rag::claims::split_claims;
            match options {
                EvaluatorOptions::Faithfulness(_) => {
                    return crate::claim_support::nli_entailed_share(
                        nli,
                        &sentences(&answer),
                        &contexts,
                        threshold,
                        "nli: answer sentences against the context",
                    );
                }
                EvaluatorOptions::ContextRecall(_) => {
                    let Some(reference) = reference.as_deref() else {
                        return Ok(JudgedScore {
                            value: None,
                            excluded_reason: Some("no_reference"),
                            detail: Value::Null,
                            calls: Vec::new(),
                        });
                    };
                    return crate::claim_support::nli_entailed_share(
                        nli,
                        &sentences(reference),
                        &contexts,
                        threshold,
                        "nli: reference sentences against the context",
                    );
                }
                EvaluatorOptions::CitationSupportJudge(_) => {
                    let cited = cited_sources(trace);
                    if cited.is_empty() {
                        return Ok(JudgedScore {
                            value: None,
                            excluded_reason: Some("no_citations"),
                            detail: Value::Null,
                            calls: Vec::new(),
                        });
                    }
                    return crate::claim_support::nli_entailed_share(
                        nli,
                        std::slice::from_ref(&answer),
                        &[cited.join("\n")],
                        threshold,
                        "nli: the answer against its cited passages",
                    );
                }
                _ => {}
            }
        }
        match options {
            EvaluatorOptions::GroundednessJudge(_) => {
                ragas::groundedness_judge(need()?, cache, &sample, repeat)
            }
            EvaluatorOptions::CitationSupportJudge(_) => {
                let cited = trace.citations();
                let sources = cited_sources(trace);
                let items = if cited.is_empty() {
                    Vec::new()
                } else {
                    vec![CitedStatement {
                        statement: answer.clone(),
                        sources,
                    }]
                };
                ragas::citation_support_judge(need()?, cache, &question, &items, repeat)
            }
            EvaluatorOptions::Faithfulness(_) => {
                ragas::faithfulness(need()?, cache, &sample, repeat)
            }
            EvaluatorOptions::AnswerRelevancy(_) => ragas::answer_relevancy(
                need()?,
                cache,
                &embed_fn,
                &sample,
                judged.strictness.unwrap_or(ragas::DEFAULT_STRICTNESS),
                repeat,
            ),
            EvaluatorOptions::ContextPrecision(_) => ragas::context_precision(
                need()?,
                cache,
                &sample,
                judged.with_reference.unwrap_or(true),
                repeat,
            ),
            EvaluatorOptions::ContextRecall(_) => {
                ragas::context_recall(need()?, cache, &sample, repeat)
            }
            EvaluatorOptions::FactualCorrectness(_) => {
                let mode = match judged.mode {
                    Some(FactualModeOption::Precision) => FactualMode::Precision,
                    Some(FactualModeOption::Recall) => FactualMode::Recall,
                    _ => FactualMode::F1,
                };
                ragas::factual_correctness(need()?, cache, &sample, mode, repeat)
            }
            EvaluatorOptions::AnswerCorrectness(_) => {
                ragas::answer_correctness(need()?, cache, &embed_fn, &sample, (0.75, 0.25), repeat)
            }
            EvaluatorOptions::NoiseSensitivity(_) => {
                let mode = match judged.noise_mode {
                    Some(NoiseModeOption::Irrelevant) => NoiseMode::Irrelevant,
                    _ => NoiseMode::Relevant,
                };
                ragas::noise_sensitivity(need()?, cache, &sample, mode, repeat)
            }
            EvaluatorOptions::RubricJudge(_) => {
                let rubric = RubricOptions {
                    rubric: judged.rubric.as_deref(),
                    with_context: true,
                    probability_weighted: judged.probability_weighted.unwrap_or(false),
                };
                ragas::rubric_judge_with(need()?, cache, &sample, &rubric, repeat)
            }
            EvaluatorOptions::CitationRecall(_) | EvaluatorOptions::CitationPrecision(_) => {
                let measure = if matches!(options, EvaluatorOptions::CitationRecall(_)) {
                    crate::alce::CitationMeasure::Recall
                } else {
                    crate::alce::CitationMeasure::Precision
                };
                crate::alce::judge_citations(
                    need()?,
                    cache,
                    &sample,
                    trace,
                    crate::alce::CitationSettings {
                        at_most_citations: judged.at_most_citations,
                        nli_threshold: judged
                            .threshold
                            .unwrap_or(crate::claim_support::DEFAULT_NLI_THRESHOLD),
                        measure,
                    },
                    repeat,
                )
            }
            EvaluatorOptions::ClaimSupport(_) => crate::claim_support::score(
                judge.map(|j| j.as_ref()),
                embedder.map(|e| e.as_ref()),
                cache,
                &sample,
                judged.threshold,
            ),
            EvaluatorOptions::QuestionSimilarity(_) => {
                ragas::question_similarity(&embed_fn, &sample)
            }
            _ => ragas::semantic_similarity(&embed_fn, &sample),
        }
    };
    let repeats = judged.repeats.unwrap_or(1).max(1);
    let one = |judge: Option<&Arc<JudgeClient>>| {
        if repeats == 1 {
            run(judge, 0)
        } else {
            ragas::self_consistency(repeats, aggregation, &|r| run(judge, r))
        }
    };
    let mut judge_name = llm_judges
        .first()
        .cloned()
        .or_else(|| judged.embedding_judge.clone());
    // An ensemble: the metric from every judge, each call tagged with its judge.
    let mut tagged_calls = Vec::new();
    let result = if ensemble {
        let rule = match judged.ensemble {
            Some(EnsembleOption::Majority) => EnsembleRule::Majority,
            Some(EnsembleOption::Unanimous) => EnsembleRule::Unanimous,
            Some(EnsembleOption::Mean) => EnsembleRule::Mean,
            None if kind(options) == SummaryKind::Proportion => EnsembleRule::Majority,
            None => EnsembleRule::Mean,
        };
        let mut results = Vec::new();
        let mut failure = None;
        for name in &llm_judges {
            let client = match env.judges.client(name) {
                Some(c) => c,
                None => {
                    let error = format!("no judge named `{name}`");
                    return verdict(Verdict::Missing { error }, Value::Null);
                }
            };
            match one(Some(client)) {
                Ok(score) => {
                    for mut c in call_detail(&score.calls)
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                    {
                        c["judge"] = json!(name);
                        tagged_calls.push(c);
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
                (Some(v), _) if kind(options) == SummaryKind::Proportion => {
                    verdict(Verdict::pass_if(v >= 0.5), detail)
                }
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
                        judge_name.unwrap_or_default(),
                        e.kind()
                    ),
                },
                detail,
            )
        }
    }
}

/// What a missing verdict keeps of the judge call that failed: the error's kind and message,
/// the HTTP requests made, the last raw reply when there was one, and the tokens billed for
/// unusable replies (counted in the run's judge usage as a failed call).
pub(crate) fn failure_detail(e: &JudgeError, judge: Option<&JudgeClient>) -> Value {
    let usage = e.usage();
    json!({
        "kind": e.kind(),
        "error": e.to_string(),
        "attempts": e.attempts(),
        "raw": e.raw(),
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cost_usd": judge.and_then(|j| j.cost(usage)),
    })
}

/// Judge calls (upper bound) and estimated input tokens of one judged evaluator on one case,
/// for `--dry-run`: the case's question, expected answer and gold context stand in for the
/// answer and context not generated yet.
pub fn dry_run_estimate(
    options: &EvaluatorOptions,
    judged: &JudgedOptions,
    case: &Case,
) -> (u64, u64, u64) {
    let (calls, embeds) = ragas::max_calls(options.type_name()).unwrap_or((1, 0));
    // Every judge of an ensemble makes the calls.
    let repeats =
        u64::from(judged.repeats.unwrap_or(1).max(1)) * judged.llm_judges().len().max(1) as u64;
    let question = question_of(case);
    let answer = reference_of(case).unwrap_or_default();
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
    (calls, u64::from(embeds) * repeats, calls * per_call)
}
