//! Judged metrics, named as in Ragas so Ragas users find them, computed from the
//! [`templates`](crate::templates) through a [`JudgeClient`] and a [`JudgeCache`].
//!
//! Each function returns a [`JudgedScore`]: a value, or an exclusion with a reason (an answer
//! with no claims has no faithfulness: `excluded: no_claims`, never NaN), the details, and
//! every judge call made ([`CallRecord`]: cache key, template, raw and parsed reply, usage,
//! cost). Any judge error is returned as `Err`: the engine records the criterion as
//! `missing`, never as a pass or a fail.
//!
//! Where the definitions differ from Ragas (0.4):
//! - **faithfulness**: claims supported / claims, as Ragas; no claims is *excluded*
//!   (`no_claims`), where Ragas returns NaN.
//! - **answer_relevancy**: one call generates `strictness` questions (Ragas samples
//!   `strictness` generations); mean cosine between the question and each generated
//!   question; the score is 0 only if *all* generated questions are noncommittal (Ragas zeroes
//!   the score when any is). Cosines are not clipped.
//! - **context_precision** (with and without reference): one call judges every chunk (Ragas
//!   makes one call per chunk); exact average precision `Σ_k precision@k · v_k / Σ_k v_k` with
//!   no epsilon; no useful chunk gives 0; no retrieved chunk is excluded (`no_context`).
//! - **context_recall**: attributed reference statements / statements, as Ragas; a reference
//!   with no statements is excluded (`no_reference_claims`).
//! - **factual_correctness**: claims are extracted from the answer and the reference and
//!   verified with the NLI template (Ragas decomposes and verifies likewise): precision =
//!   answer claims supported by the reference / answer claims, recall = reference claims
//!   supported by the answer / reference claims, F1 = harmonic mean (0 when both are 0). An
//!   answer with no claims has recall 0 and undefined precision (`null` in the detail).
//! - **answer_correctness**: `w_f · F1(factual_correctness) + w_s · semantic_similarity`,
//!   weights 0.75/0.25 as Ragas; Ragas classifies TP/FP/FN statements in one call instead of
//!   reusing the NLI verification.
//! - **semantic_similarity**: cosine of the answer and reference embeddings, not rescaled.
//! - **question_similarity** (Oloproof's, not Ragas'): cosine of the question and answer
//!   embeddings — answer relevancy with no LLM; it measures topicality, not correctness.
//! - **noise_sensitivity** (`relevant` / `irrelevant`): as Ragas' `NoiseSensitivity`, the
//!   share of the answer's claims that are *incorrect* (not supported by the reference) and
//!   supported by a relevant retrieved chunk (`relevant`), or by an irrelevant chunk and by no
//!   relevant one (`irrelevant`); a chunk is relevant when it supports at least one claim of
//!   the reference. Lower is better. Ragas makes one verification call per chunk for the
//!   answer's and for the reference's statements; Oloproof makes one attribution call for
//!   each (`claim_attribution`: per claim, the chunks it can be inferred from), five calls in
//!   all. An answer with no claims is excluded (`no_claims`, Ragas: NaN); no reference
//!   (`no_reference`) or no retrieved chunk (`no_context`) is excluded too.
//! - **groundedness_judge**, **citation_support_judge**, **rubric_judge**,
//!   **pairwise_judge**: Oloproof's own (evaluator design guide templates). `rubric_judge`
//!   can be probability-weighted (G-Eval): [`rubric_judge_with`] asks for the top-5
//!   log-probabilities of the score token and reports `Σ p(s)·s` over the scores 1–5
//!   (probabilities renormalised over those five), falling back to the parsed score, said so
//!   in the detail, when the provider returns no usable log-probabilities.
//!
//! Self-consistency (`repeats: n`): [`self_consistency`] runs a metric with repeat indices
//! `0..n` (distinct cache keys, and seeds `seed + i`), then takes the majority or the mean and
//! reports per-case agreement. Ensembles ([`ensemble`]) combine the same metric from several
//! judges (ideally of different model families) with a majority, unanimous or mean rule and
//! flag the disagreements.

use serde_json::{json, Value};

use crate::cache::{CallRecord, JudgeCache};
use crate::client::JudgeClient;
use crate::error::{JudgeError, ReplyError, WeightedScoreError};
use crate::templates::{self, check_ids, flags_by_id, CitedStatement};
use oloproof_metrics::rag::ragchecker;

/// The result of one judged metric on one case.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgedScore {
    /// The score, when defined.
    pub value: Option<f64>,
    /// Why the score is undefined for this case (e.g. `no_claims`), when it is.
    pub excluded_reason: Option<&'static str>,
    /// Intermediate results (claims, verdicts, questions, similarities…).
    pub detail: Value,
    /// Every judge call made (or served from the cache), in order.
    pub calls: Vec<CallRecord>,
}

impl JudgedScore {
    fn value(value: f64, detail: Value, calls: Vec<CallRecord>) -> Self {
        JudgedScore {
            value: Some(value),
            excluded_reason: None,
            detail,
            calls,
        }
    }
    fn excluded(reason: &'static str, detail: Value, calls: Vec<CallRecord>) -> Self {
        JudgedScore {
            value: None,
            excluded_reason: Some(reason),
            detail,
            calls,
        }
    }
}

/// One case as the judged metrics see it (Ragas' `SingleTurnSample`).
#[derive(Debug, Clone, Copy)]
pub struct Sample<'a> {
    /// The user's question.
    pub question: &'a str,
    /// The system's answer.
    pub answer: &'a str,
    /// The passages handed to generation (retrieved contexts), in the system's order.
    pub contexts: &'a [String],
    /// The reference answer, when the case has one.
    pub reference: Option<&'a str>,
}

/// An embedding function, e.g. `&|texts| client.embed(texts)`.
pub type EmbedFn<'a> = &'a dyn Fn(&[String]) -> Result<Vec<Vec<f32>>, JudgeError>;

/// Ragas' default number of generated questions for answer relevancy.
pub const DEFAULT_STRICTNESS: usize = 3;

fn no_check(_: &Value) -> Result<(), ReplyError> {
    Ok(())
}

pub(crate) fn extract_claims(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    question: &str,
    text: &str,
    repeat: u32,
    calls: &mut Vec<CallRecord>,
) -> Result<Vec<String>, JudgeError> {
    let record = judge.judge(
        cache,
        &templates::claim_extraction(question, text, repeat),
        &no_check,
    )?;
    let claims = record
        .parsed
        .get("claims")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    calls.push(record);
    Ok(claims)
}

/// One claim as the claim-verification judge saw it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClaimCheck {
    /// The claim can be inferred from the context.
    pub(crate) supported: bool,
    /// The judge's reason.
    pub(crate) reason: String,
    /// Why it is not supported (one of [`templates::FAILURE_MODES`]), when the judge said;
    /// never kept for a supported claim.
    pub(crate) failure_mode: Option<String>,
}

/// Verifies `claims` against `context`, in claim order.
pub(crate) fn verify_claims(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    context: &[String],
    claims: &[String],
    repeat: u32,
    calls: &mut Vec<CallRecord>,
) -> Result<Vec<ClaimCheck>, JudgeError> {
    let n = claims.len();
    let check = move |v: &Value| check_ids(v, "verdicts", n);
    let record = judge.judge(
        cache,
        &templates::claim_verification(context, claims, repeat),
        &check,
    )?;
    let flags = flags_by_id(&record.parsed, "verdicts", "verdict", n);
    let modes = templates::strings_by_id(&record.parsed, "verdicts", "failure_mode", n);
    calls.push(record);
    Ok(flags
        .into_iter()
        .zip(modes)
        .map(|((supported, reason), mode)| ClaimCheck {
            supported,
            reason,
            failure_mode: mode.filter(|_| !supported),
        })
        .collect())
}

fn claims_detail(claims: &[String], checks: &[ClaimCheck]) -> Value {
    Value::Array(
        claims
            .iter()
            .zip(checks)
            .map(|(c, check)| {
                let mut item = json!({"claim": c, "verdict": u8::from(check.supported), "reason": check.reason});
                if let Some(mode) = &check.failure_mode {
                    item["failure_mode"] = json!(mode);
                }
                item
            })
            .collect(),
    )
}

/// Faithfulness: the share of the answer's claims that the context supports.
pub fn faithfulness(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    sample: &Sample<'_>,
    repeat: u32,
) -> Result<JudgedScore, JudgeError> {
    let mut calls = Vec::new();
    let claims = extract_claims(
        judge,
        cache,
        sample.question,
        sample.answer,
        repeat,
        &mut calls,
    )?;
    if claims.is_empty() {
        return Ok(JudgedScore::excluded(
            "no_claims",
            json!({"claims": []}),
            calls,
        ));
    }
    let flags = verify_claims(judge, cache, sample.contexts, &claims, repeat, &mut calls)?;
    let supported = flags.iter().filter(|f| f.supported).count();
    let detail = json!({"claims": claims_detail(&claims, &flags), "supported": supported, "total": claims.len()});
    Ok(JudgedScore::value(
        supported as f64 / claims.len() as f64,
        detail,
        calls,
    ))
}

/// Binary groundedness (guide template 1): 1 if every claim of the answer is supported.
pub fn groundedness_judge(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    sample: &Sample<'_>,
    repeat: u32,
) -> Result<JudgedScore, JudgeError> {
    let record = judge.judge(
        cache,
        &templates::groundedness(sample.question, sample.contexts, sample.answer, repeat),
        &no_check,
    )?;
    let grounded = record
        .parsed
        .get("grounded")
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    let mut detail = json!({"grounded": grounded as u8, "reason": record.parsed.get("reason")});
    // Why it is not grounded, when the judge said (never kept for a grounded answer).
    if let Some(mode) = record.parsed.get("failure_mode").and_then(Value::as_str) {
        if grounded < 1.0 {
            detail["failure_mode"] = json!(mode);
        }
    }
    Ok(JudgedScore::value(grounded, detail, vec![record]))
}

/// Citation support: the share of cited statements whose cited sources support them;
/// excluded (`no_citations`) when the answer cites nothing.
pub fn citation_support_judge(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    question: &str,
    items: &[CitedStatement],
    repeat: u32,
) -> Result<JudgedScore, JudgeError> {
    if items.is_empty() {
        return Ok(JudgedScore::excluded(
            "no_citations",
            json!({"statements": []}),
            Vec::new(),
        ));
    }
    let n = items.len();
    let check = move |v: &Value| check_ids(v, "verdicts", n);
    let record = judge.judge(
        cache,
        &templates::citation_support(question, items, repeat),
        &check,
    )?;
    let flags = flags_by_id(&record.parsed, "verdicts", "supported", n);
    let supported = flags.iter().filter(|f| f.0).count();
    let statements: Vec<Value> = items
        .iter()
        .zip(&flags)
        .map(|(it, (ok, reason))| json!({"statement": it.statement, "supported": u8::from(*ok), "reason": reason}))
        .collect();
    let detail = json!({"statements": statements, "supported": supported, "total": n});
    Ok(JudgedScore::value(
        supported as f64 / n as f64,
        detail,
        vec![record],
    ))
}

/// Exact average precision of binary usefulness verdicts in rank order:
/// `Σ_k precision@k · v_k / Σ_k v_k`, and 0 when no chunk is useful (no epsilon).
pub fn average_precision(useful: &[bool]) -> f64 {
    let mut hits = 0usize;
    let mut sum = 0.0;
    for (k, &u) in useful.iter().enumerate() {
        if u {
            hits += 1;
            sum += hits as f64 / (k + 1) as f64;
        }
    }
    if hits == 0 {
        0.0
    } else {
        sum / hits as f64
    }
}

/// Context precision: average precision of the chunks judged useful for the reference answer
/// (`with_reference`, Ragas' `ContextPrecisionWithReference`) or for the system's answer
/// (Ragas' `ContextPrecisionWithoutReference`).
pub fn context_precision(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    sample: &Sample<'_>,
    with_reference: bool,
    repeat: u32,
) -> Result<JudgedScore, JudgeError> {
    if sample.contexts.is_empty() {
        return Ok(JudgedScore::excluded(
            "no_context",
            json!({"chunks": []}),
            Vec::new(),
        ));
    }
    let target = if with_reference {
        match sample.reference {
            Some(r) => r,
            None => return Ok(JudgedScore::excluded("no_reference", json!({}), Vec::new())),
        }
    } else {
        sample.answer
    };
    let n = sample.contexts.len();
    let check = move |v: &Value| check_ids(v, "verdicts", n);
    let record = judge.judge(
        cache,
        &templates::context_precision(
            sample.question,
            target,
            with_reference,
            sample.contexts,
            repeat,
        ),
        &check,
    )?;
    let flags = flags_by_id(&record.parsed, "verdicts", "useful", n);
    let useful: Vec<bool> = flags.iter().map(|f| f.0).collect();
    let chunks: Vec<Value> = flags
        .iter()
        .enumerate()
        .map(|(i, (u, r))| json!({"rank": i + 1, "useful": u8::from(*u), "reason": r}))
        .collect();
    let detail = json!({"chunks": chunks, "with_reference": with_reference});
    Ok(JudgedScore::value(
        average_precision(&useful),
        detail,
        vec![record],
    ))
}

/// Context recall: the share of the reference's statements attributable to the context.
pub fn context_recall(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    sample: &Sample<'_>,
    repeat: u32,
) -> Result<JudgedScore, JudgeError> {
    let Some(reference) = sample.reference else {
        return Ok(JudgedScore::excluded("no_reference", json!({}), Vec::new()));
    };
    let record = judge.judge(
        cache,
        &templates::context_recall(sample.question, sample.contexts, reference, repeat),
        &no_check,
    )?;
    let statements = record
        .parsed
        .get("statements")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if statements.is_empty() {
        return Ok(JudgedScore::excluded(
            "no_reference_claims",
            json!({"statements": []}),
            vec![record],
        ));
    }
    let attributed = statements
        .iter()
        .filter(|s| s.get("attributed").and_then(Value::as_f64) == Some(1.0))
        .count();
    let detail =
        json!({"statements": statements, "attributed": attributed, "total": statements.len()});
    Ok(JudgedScore::value(
        attributed as f64 / statements.len() as f64,
        detail,
        vec![record],
    ))
}

/// Which of precision, recall and F1 [`factual_correctness`] reports as its value (all three
/// are in the detail).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FactualMode {
    /// Harmonic mean of precision and recall.
    #[default]
    F1,
    /// Answer claims supported by the reference.
    Precision,
    /// Reference claims supported by the answer.
    Recall,
}

/// Factual correctness of the answer against the reference (precision, recall, F1).
pub fn factual_correctness(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    sample: &Sample<'_>,
    mode: FactualMode,
    repeat: u32,
) -> Result<JudgedScore, JudgeError> {
    let Some(reference) = sample.reference else {
        return Ok(JudgedScore::excluded("no_reference", json!({}), Vec::new()));
    };
    let mut calls = Vec::new();
    let ref_claims = extract_claims(judge, cache, sample.question, reference, repeat, &mut calls)?;
    if ref_claims.is_empty() {
        return Ok(JudgedScore::excluded(
            "no_reference_claims",
            json!({"reference_claims": []}),
            calls,
        ));
    }
    let ans_claims = extract_claims(
        judge,
        cache,
        sample.question,
        sample.answer,
        repeat,
        &mut calls,
    )?;
    let (precision, ans_flags) = if ans_claims.is_empty() {
        (None, Vec::new())
    } else {
        let flags = verify_claims(
            judge,
            cache,
            &[reference.to_string()],
            &ans_claims,
            repeat,
            &mut calls,
        )?;
        (
            Some(flags.iter().filter(|f| f.supported).count() as f64 / ans_claims.len() as f64),
            flags,
        )
    };
    let recall = if ans_claims.is_empty() {
        0.0
    } else {
        let flags = verify_claims(
            judge,
            cache,
            &[sample.answer.to_string()],
            &ref_claims,
            repeat,
            &mut calls,
        )?;
        flags.iter().filter(|f| f.supported).count() as f64 / ref_claims.len() as f64
    };
    let p = precision.unwrap_or(0.0);
    let f1 = if p + recall > 0.0 {
        2.0 * p * recall / (p + recall)
    } else {
        0.0
    };
    let detail = json!({
        "precision": precision, "recall": recall, "f1": f1,
        "answer_claims": claims_detail(&ans_claims, &ans_flags),
        "reference_claims": ref_claims,
    });
    let value = match mode {
        FactualMode::F1 => f1,
        FactualMode::Precision => match precision {
            Some(p) => p,
            None => return Ok(JudgedScore::excluded("no_claims", detail, calls)),
        },
        FactualMode::Recall => recall,
    };
    Ok(JudgedScore::value(value, detail, calls))
}

/// Which claims [`noise_sensitivity`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NoiseMode {
    /// Incorrect claims supported by a relevant chunk (Ragas' default).
    #[default]
    Relevant,
    /// Incorrect claims supported by an irrelevant chunk and by no relevant one.
    Irrelevant,
}

impl NoiseMode {
    /// `relevant` or `irrelevant`.
    pub fn as_str(self) -> &'static str {
        match self {
            NoiseMode::Relevant => "relevant",
            NoiseMode::Irrelevant => "irrelevant",
        }
    }
}

/// Which retrieved chunks support each claim (one `claim_attribution` call): 0-based indices.
pub(crate) fn attribute_claims(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    chunks: &[String],
    claims: &[String],
    repeat: u32,
    calls: &mut Vec<CallRecord>,
) -> Result<Vec<Vec<usize>>, JudgeError> {
    let (n, m) = (claims.len(), chunks.len());
    let check = move |v: &Value| templates::check_attribution(v, n, m);
    let record = judge.judge(
        cache,
        &templates::claim_attribution(chunks, claims, repeat),
        &check,
    )?;
    let sets = templates::attribution_by_id(&record.parsed, n);
    calls.push(record);
    Ok(sets)
}

/// Noise sensitivity (Ragas' `NoiseSensitivity`): the share of the answer's claims that are
/// incorrect with respect to the reference and supported by a relevant chunk (`Relevant`) or
/// only by irrelevant chunks (`Irrelevant`). Lower is better. Five calls: claims of the
/// reference and of the answer, the answer's claims verified against the reference, and both
/// claim lists attributed to the retrieved chunks.
pub fn noise_sensitivity(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    sample: &Sample<'_>,
    mode: NoiseMode,
    repeat: u32,
) -> Result<JudgedScore, JudgeError> {
    let Some(reference) = sample.reference else {
        return Ok(JudgedScore::excluded("no_reference", json!({}), Vec::new()));
    };
    if sample.contexts.is_empty() {
        return Ok(JudgedScore::excluded(
            "no_context",
            json!({"chunks": []}),
            Vec::new(),
        ));
    }
    let mut calls = Vec::new();
    let ans_claims = extract_claims(
        judge,
        cache,
        sample.question,
        sample.answer,
        repeat,
        &mut calls,
    )?;
    if ans_claims.is_empty() {
        return Ok(JudgedScore::excluded(
            "no_claims",
            json!({"claims": []}),
            calls,
        ));
    }
    let ref_claims = extract_claims(judge, cache, sample.question, reference, repeat, &mut calls)?;
    let correct = verify_claims(
        judge,
        cache,
        &[reference.to_string()],
        &ans_claims,
        repeat,
        &mut calls,
    )?;
    let ref_support = if ref_claims.is_empty() {
        Vec::new()
    } else {
        attribute_claims(
            judge,
            cache,
            sample.contexts,
            &ref_claims,
            repeat,
            &mut calls,
        )?
    };
    let ans_support = attribute_claims(
        judge,
        cache,
        sample.contexts,
        &ans_claims,
        repeat,
        &mut calls,
    )?;
    // RAGChecker's classification (Ragas borrows it): one implementation, in the metrics crate.
    let relevant = ragchecker::relevant_chunks(sample.contexts.len(), &ref_support);
    let mut counted = 0usize;
    let claims: Vec<Value> = ans_claims
        .iter()
        .zip(&correct)
        .zip(&ans_support)
        .map(|((claim, check), chunks)| {
            let (ok, reason) = (&check.supported, &check.reason);
            // Where the claim came from, whether it is correct or not (shown in the detail).
            let from = ragchecker::noise(false, chunks, &relevant);
            let by_relevant = from == Some(ragchecker::Noise::Relevant);
            let by_irrelevant = from == Some(ragchecker::Noise::Irrelevant);
            let hit = matches!(
                (ragchecker::noise(*ok, chunks, &relevant), mode),
                (Some(ragchecker::Noise::Relevant), NoiseMode::Relevant)
                    | (Some(ragchecker::Noise::Irrelevant), NoiseMode::Irrelevant)
            );
            counted += usize::from(hit);
            json!({
                "claim": claim, "correct": u8::from(*ok), "reason": reason,
                "chunks": chunks.iter().map(|c| c + 1).collect::<Vec<_>>(),
                "from_relevant": by_relevant, "from_irrelevant_only": by_irrelevant,
                "counted": hit,
            })
        })
        .collect();
    let chunks: Vec<Value> = relevant
        .iter()
        .enumerate()
        .map(|(i, r)| json!({"rank": i + 1, "relevant": r}))
        .collect();
    let detail = json!({
        "mode": mode.as_str(),
        "claims": claims,
        "reference_claims": ref_claims,
        "chunks": chunks,
        "counted": counted,
        "total": ans_claims.len(),
    });
    Ok(JudgedScore::value(
        counted as f64 / ans_claims.len() as f64,
        detail,
        calls,
    ))
}

/// Cosine similarity (`oloproof_metrics`' one implementation); 0 when either vector is zero
/// or their lengths differ.
pub use oloproof_metrics::rag::claims::cosine;

fn embed_checked(embed: EmbedFn<'_>, texts: &[String]) -> Result<Vec<Vec<f32>>, JudgeError> {
    let v = embed(texts)?;
    if v.len() != texts.len() {
        return Err(JudgeError::Protocol {
            judge: "embedding".into(),
            url: String::new(),
            message: format!("{} embeddings for {} texts", v.len(), texts.len()),
        });
    }
    Ok(v)
}

/// Semantic similarity: cosine of the answer's and the reference's embeddings.
pub fn semantic_similarity(
    embed: EmbedFn<'_>,
    sample: &Sample<'_>,
) -> Result<JudgedScore, JudgeError> {
    let Some(reference) = sample.reference else {
        return Ok(JudgedScore::excluded("no_reference", json!({}), Vec::new()));
    };
    let v = embed_checked(embed, &[sample.answer.to_string(), reference.to_string()])?;
    let sim = cosine(&v[0], &v[1]);
    Ok(JudgedScore::value(sim, json!({"cosine": sim}), Vec::new()))
}

/// Question similarity: the cosine of the question's and the answer's embeddings — answer
/// relevancy without an LLM (no generated questions). It measures topicality only: a wrong
/// answer on the right subject scores as high as a right one. An empty answer is excluded
/// (`no_answer`).
pub fn question_similarity(
    embed: EmbedFn<'_>,
    sample: &Sample<'_>,
) -> Result<JudgedScore, JudgeError> {
    if sample.answer.trim().is_empty() {
        return Ok(JudgedScore::excluded("no_answer", json!({}), Vec::new()));
    }
    let v = embed_checked(
        embed,
        &[sample.question.to_string(), sample.answer.to_string()],
    )?;
    let sim = cosine(&v[0], &v[1]);
    Ok(JudgedScore::value(sim, json!({"cosine": sim}), Vec::new()))
}

/// Answer relevancy: `strictness` questions generated from the answer, mean cosine of their
/// embeddings to the question's; 0 only if every generated question is noncommittal.
pub fn answer_relevancy(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    embed: EmbedFn<'_>,
    sample: &Sample<'_>,
    strictness: usize,
    repeat: u32,
) -> Result<JudgedScore, JudgeError> {
    let strictness = strictness.max(1);
    let record = judge.judge(
        cache,
        &templates::question_generation(sample.answer, sample.contexts, strictness, repeat),
        &no_check,
    )?;
    let items = record
        .parsed
        .get("questions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let questions: Vec<String> = items
        .iter()
        .map(|q| {
            q.get("question")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        })
        .collect();
    let noncommittal: Vec<bool> = items
        .iter()
        .map(|q| q.get("noncommittal").and_then(Value::as_f64) == Some(1.0))
        .collect();
    let calls = vec![record];
    if noncommittal.iter().all(|n| *n) {
        let detail =
            json!({"questions": questions, "noncommittal": noncommittal, "all_noncommittal": true});
        return Ok(JudgedScore::value(0.0, detail, calls));
    }
    let mut texts = vec![sample.question.to_string()];
    texts.extend(questions.iter().cloned());
    let v = embed_checked(embed, &texts)?;
    let sims: Vec<f64> = v[1..].iter().map(|q| cosine(&v[0], q)).collect();
    let mean = sims.iter().sum::<f64>() / sims.len() as f64;
    let detail = json!({"questions": questions, "noncommittal": noncommittal, "cosines": sims, "all_noncommittal": false});
    Ok(JudgedScore::value(mean, detail, calls))
}

/// Answer correctness: `weights.0 · F1(factual_correctness) + weights.1 · semantic_similarity`
/// (Ragas' default weights are `(0.75, 0.25)`).
pub fn answer_correctness(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    embed: EmbedFn<'_>,
    sample: &Sample<'_>,
    weights: (f64, f64),
    repeat: u32,
) -> Result<JudgedScore, JudgeError> {
    let factual = factual_correctness(judge, cache, sample, FactualMode::F1, repeat)?;
    let Some(f1) = factual.value else {
        return Ok(JudgedScore::excluded(
            factual.excluded_reason.unwrap_or("no_reference"),
            factual.detail,
            factual.calls,
        ));
    };
    let sim = semantic_similarity(embed, sample)?;
    let s = sim.value.unwrap_or(0.0);
    let total = weights.0 + weights.1;
    let value = if total > 0.0 {
        (weights.0 * f1 + weights.1 * s) / total
    } else {
        0.0
    };
    let detail = json!({"factual_f1": f1, "semantic_similarity": s, "weights": [weights.0, weights.1], "factual": factual.detail});
    Ok(JudgedScore::value(value, detail, factual.calls))
}

/// A 1–5 rubric score (guide template 2), reported as the raw score.
pub fn rubric_judge(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    sample: &Sample<'_>,
    rubric: Option<&str>,
    repeat: u32,
) -> Result<JudgedScore, JudgeError> {
    let record = judge.judge(
        cache,
        &templates::rubric(sample.question, sample.answer, rubric, repeat),
        &no_check,
    )?;
    let score = record
        .parsed
        .get("score")
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    let detail = json!({"score": score, "reason": record.parsed.get("reason")});
    Ok(JudgedScore::value(score, detail, vec![record]))
}

/// Options of [`rubric_judge_with`].
#[derive(Debug, Clone, Copy, Default)]
pub struct RubricOptions<'a> {
    /// The written rubric (default [`templates::DEFAULT_RUBRIC`]).
    pub rubric: Option<&'a str>,
    /// Show the retrieved context to the judge.
    pub with_context: bool,
    /// G-Eval: ask for the score token's top log-probabilities and report `Σ p(s)·s`.
    pub probability_weighted: bool,
}

/// The alternatives asked for when a rubric score is probability-weighted.
pub const TOP_LOGPROBS: u8 = 5;

/// The probability-weighted score `Σ p(s)·s` over the scores 1–5, from OpenAI
/// `logprobs.content` of a reply whose JSON has `"score": N`: the score token's
/// `top_logprobs` restricted to the tokens `1`…`5`, renormalised. `Err` says why it cannot be
/// computed (no score token found, no score among the alternatives).
pub fn weighted_score(logprobs: &Value) -> Result<(f64, Vec<(u8, f64)>), WeightedScoreError> {
    let tokens = logprobs
        .as_array()
        .ok_or(WeightedScoreError::NotATokenList)?;
    let texts: Vec<&str> = tokens
        .iter()
        .map(|t| t.get("token").and_then(Value::as_str).unwrap_or(""))
        .collect();
    let text: String = texts.concat();
    let key = text
        .find("\"score\"")
        .ok_or(WeightedScoreError::NoScoreKey)?;
    let after = key + "\"score\"".len();
    let digit = text[after..]
        .char_indices()
        .find(|(_, c)| !c.is_whitespace() && *c != ':')
        .map(|(i, _)| after + i)
        .ok_or(WeightedScoreError::NoScoreValue)?;
    let mut pos = 0;
    let index = texts
        .iter()
        .position(|t| {
            let start = pos;
            pos += t.len();
            start <= digit && digit < pos
        })
        .ok_or(WeightedScoreError::NoScoreToken)?;
    let top = tokens[index]
        .get("top_logprobs")
        .and_then(Value::as_array)
        .ok_or(WeightedScoreError::NoTopLogprobs)?;
    let mut probs: Vec<(u8, f64)> = Vec::new();
    for alt in top {
        let token = alt
            .get("token")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim();
        let Some(lp) = alt.get("logprob").and_then(Value::as_f64) else {
            continue;
        };
        if let Ok(s @ 1..=5) = token.parse::<u8>() {
            match probs.iter_mut().find(|(k, _)| *k == s) {
                Some((_, p)) => *p += lp.exp(),
                None => probs.push((s, lp.exp())),
            }
        }
    }
    let total: f64 = probs.iter().map(|(_, p)| p).sum();
    if !(total > 0.0 && total.is_finite()) {
        return Err(WeightedScoreError::NoScoreAlternative);
    }
    probs.sort_by_key(|(s, _)| *s);
    let probs: Vec<(u8, f64)> = probs.into_iter().map(|(s, p)| (s, p / total)).collect();
    let value = probs.iter().map(|(s, p)| f64::from(*s) * p).sum();
    Ok((value, probs))
}

/// A 1–5 rubric score, optionally with the context shown and probability-weighted (G-Eval).
/// Weighted, the detail has `probability_weighted: true`, `parsed_score`, and either
/// `probabilities` (score → probability) or `fallback` (why the parsed score is reported).
pub fn rubric_judge_with(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    sample: &Sample<'_>,
    options: &RubricOptions<'_>,
    repeat: u32,
) -> Result<JudgedScore, JudgeError> {
    let context: &[String] = if options.with_context {
        sample.contexts
    } else {
        &[]
    };
    let request = templates::rubric_in_context(
        sample.question,
        context,
        sample.answer,
        options.rubric,
        repeat,
    );
    if !options.probability_weighted {
        let record = judge.judge(cache, &request, &no_check)?;
        let score = record
            .parsed
            .get("score")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let detail = json!({"score": score, "reason": record.parsed.get("reason")});
        return Ok(JudgedScore::value(score, detail, vec![record]));
    }
    let (record, logprobs) = judge.judge_with_logprobs(cache, &request, &no_check, TOP_LOGPROBS)?;
    let parsed = record
        .parsed
        .get("score")
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    let reason = record.parsed.get("reason").cloned();
    let weighted = match &logprobs {
        None => Err(WeightedScoreError::NoLogprobs),
        Some(lp) => weighted_score(lp),
    };
    let (value, detail) = match weighted {
        Ok((v, probs)) => {
            let p: serde_json::Map<String, Value> = probs
                .iter()
                .map(|(s, p)| (s.to_string(), json!(p)))
                .collect();
            (
                v,
                json!({"score": v, "parsed_score": parsed, "probability_weighted": true,
                    "probabilities": p, "reason": reason}),
            )
        }
        Err(why) => (
            parsed,
            json!({"score": parsed, "parsed_score": parsed, "probability_weighted": false,
                "fallback": format!("parsed score reported: {why}"), "reason": reason}),
        ),
    };
    Ok(JudgedScore::value(value, detail, vec![record]))
}

/// G-Eval's first step: the evaluation steps `judge` writes for `criterion` (one call,
/// through the cache: the same for every case and repeat). Empty steps are dropped; a reply
/// with none left is an error.
pub fn evaluation_steps(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    criterion: &str,
) -> Result<(Vec<String>, CallRecord), JudgeError> {
    let check = |v: &Value| {
        let steps = v.get("steps").and_then(Value::as_array);
        match steps {
            Some(s)
                if s.iter()
                    .any(|x| x.as_str().is_some_and(|t| !t.trim().is_empty())) =>
            {
                Ok(())
            }
            _ => Err(ReplyError::new(
                "`steps` holds no evaluation step: write at least one",
            )),
        }
    };
    let record = judge.judge(cache, &templates::evaluation_steps(criterion), &check)?;
    let steps = record
        .parsed
        .get("steps")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Ok((steps, record))
}

/// Pairwise preference run in both orders (A/B, then B/A): the winner is kept only when both
/// orders agree, else it is a tie. Value: 1 if `answer_a` wins, 0 if `answer_b` wins, 0.5 for
/// a tie; `detail.winner` is `"A"`, `"B"` or `"tie"` in the caller's labels.
pub fn pairwise_judge(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    question: &str,
    answer_a: &str,
    answer_b: &str,
    repeat: u32,
) -> Result<JudgedScore, JudgeError> {
    let first = judge.judge(
        cache,
        &templates::pairwise(question, answer_a, answer_b, repeat),
        &no_check,
    )?;
    let second = judge.judge(
        cache,
        &templates::pairwise(question, answer_b, answer_a, repeat),
        &no_check,
    )?;
    let w1 = first
        .parsed
        .get("winner")
        .and_then(Value::as_str)
        .unwrap_or("tie")
        .to_string();
    let w2 = match second.parsed.get("winner").and_then(Value::as_str) {
        Some("A") => "B",
        Some("B") => "A",
        _ => "tie",
    };
    let consistent = w1 == w2;
    let winner = if consistent { w1.as_str() } else { "tie" };
    let value = match winner {
        "A" => 1.0,
        "B" => 0.0,
        _ => 0.5,
    };
    let detail = json!({"winner": winner, "orders": [w1, w2], "consistent": consistent});
    Ok(JudgedScore::value(value, detail, vec![first, second]))
}

/// How [`self_consistency`] combines repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregation {
    /// The most frequent value (ties go to the lower value: a split judge does not pass).
    Majority,
    /// The mean value.
    Mean,
}

/// Runs `run(repeat_index)` for `0..repeats` and combines the results. Any error makes the
/// whole judgment an error (`missing`; the successful repeats stay cached). When more than
/// half the repeats are excluded the result is excluded with the first reason; otherwise the
/// valued repeats are combined. `detail.agreement` is the share of valued repeats equal to the
/// modal value; `detail.spread` is max − min.
pub fn self_consistency(
    repeats: u32,
    aggregation: Aggregation,
    run: &dyn Fn(u32) -> Result<JudgedScore, JudgeError>,
) -> Result<JudgedScore, JudgeError> {
    let repeats = repeats.max(1);
    let mut results = Vec::with_capacity(repeats as usize);
    for r in 0..repeats {
        results.push(run(r)?);
    }
    let calls: Vec<CallRecord> = results
        .iter()
        .flat_map(|s| s.calls.iter().cloned())
        .collect();
    let per_repeat: Vec<Value> = results
        .iter()
        .map(|s| json!({"value": s.value, "excluded": s.excluded_reason, "detail": s.detail}))
        .collect();
    let excluded: Vec<&'static str> = results.iter().filter_map(|s| s.excluded_reason).collect();
    if excluded.len() * 2 > results.len() {
        let detail = json!({"repeats": per_repeat, "excluded_repeats": excluded.len()});
        return Ok(JudgedScore::excluded(excluded[0], detail, calls));
    }
    let mut values: Vec<f64> = results.iter().filter_map(|s| s.value).collect();
    values.sort_by(f64::total_cmp);
    // Modal value (first of the sorted values with the highest count: ties to the lower).
    let (mode, best) = mode_of(&values);
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let value = match aggregation {
        Aggregation::Majority => mode,
        Aggregation::Mean => mean,
    };
    let detail = json!({
        "aggregation": match aggregation { Aggregation::Majority => "majority", Aggregation::Mean => "mean" },
        "values": values,
        "agreement": best as f64 / values.len() as f64,
        "spread": values[values.len() - 1] - values[0],
        "excluded_repeats": excluded.len(),
        "repeats": per_repeat,
    });
    Ok(JudgedScore::value(value, detail, calls))
}

/// How [`ensemble`] combines the judges' values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnsembleRule {
    /// The most frequent value (ties to the lower value).
    Majority,
    /// The lowest value: a pass needs every judge to pass.
    Unanimous,
    /// The mean value.
    Mean,
}

impl EnsembleRule {
    /// `majority`, `unanimous` or `mean`.
    pub fn as_str(self) -> &'static str {
        match self {
            EnsembleRule::Majority => "majority",
            EnsembleRule::Unanimous => "unanimous",
            EnsembleRule::Mean => "mean",
        }
    }
}

/// The modal value of sorted `values` (ties to the lower value) and its count.
fn mode_of(values: &[f64]) -> (f64, usize) {
    let mut mode = values[0];
    let mut best = 0;
    let mut i = 0;
    while i < values.len() {
        let j = values[i..].iter().take_while(|v| **v == values[i]).count();
        if j > best {
            best = j;
            mode = values[i];
        }
        i += j;
    }
    (mode, best)
}

/// Combines one metric's results from several judges (`(judge name, result)`, in the
/// configured order). An excluded result is excluded when more than half the judges exclude
/// it (with the first reason); otherwise the valued results are combined by `rule`.
/// `detail.judges` lists each judge's value (or exclusion) and detail, `detail.disagreement`
/// is true when the judges' values differ (or some excluded the case and others did not),
/// and `detail.agreement` is the share of valued judges at the modal value. The calls of
/// every judge are kept, in order.
pub fn ensemble(rule: EnsembleRule, results: Vec<(String, JudgedScore)>) -> JudgedScore {
    let per_judge: Vec<Value> = results
        .iter()
        .map(|(name, s)| json!({"judge": name, "value": s.value, "excluded": s.excluded_reason, "detail": s.detail}))
        .collect();
    let calls: Vec<CallRecord> = results
        .iter()
        .flat_map(|(_, s)| s.calls.iter().cloned())
        .collect();
    let excluded: Vec<&'static str> = results
        .iter()
        .filter_map(|(_, s)| s.excluded_reason)
        .collect();
    let mut values: Vec<f64> = results.iter().filter_map(|(_, s)| s.value).collect();
    values.sort_by(f64::total_cmp);
    let disagreement =
        (!excluded.is_empty() && !values.is_empty()) || values.first() != values.last();
    if values.is_empty() || excluded.len() * 2 > results.len() {
        let detail = json!({"ensemble": rule.as_str(), "judges": per_judge,
            "disagreement": disagreement, "excluded_judges": excluded.len()});
        return JudgedScore::excluded(
            excluded.first().copied().unwrap_or("undefined"),
            detail,
            calls,
        );
    }
    let (mode, best) = mode_of(&values);
    let value = match rule {
        EnsembleRule::Majority => mode,
        EnsembleRule::Unanimous => values[0],
        EnsembleRule::Mean => values.iter().sum::<f64>() / values.len() as f64,
    };
    let detail = json!({
        "ensemble": rule.as_str(),
        "judges": per_judge,
        "values": values,
        "disagreement": disagreement,
        "agreement": best as f64 / values.len() as f64,
        "spread": values[values.len() - 1] - values[0],
        "excluded_judges": excluded.len(),
    });
    JudgedScore::value(value, detail, calls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn average_precision_is_exact() {
        assert_eq!(average_precision(&[true, true, false]), 1.0);
        assert!((average_precision(&[false, false, true]) - 1.0 / 3.0).abs() < 1e-15);
        assert!((average_precision(&[true, false, true]) - (1.0 + 2.0 / 3.0) / 2.0).abs() < 1e-15);
        assert_eq!(average_precision(&[false, false]), 0.0);
        assert_eq!(average_precision(&[]), 0.0);
    }

    #[test]
    fn cosine_basics() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-12);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 1.0]), 0.0);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
    }

    fn score(v: Option<f64>) -> JudgedScore {
        match v {
            Some(x) => JudgedScore::value(x, Value::Null, Vec::new()),
            None => JudgedScore::excluded("no_claims", Value::Null, Vec::new()),
        }
    }

    #[test]
    fn ensemble_rules_and_disagreement() {
        let named = |v: &[Option<f64>]| -> Vec<(String, JudgedScore)> {
            v.iter()
                .enumerate()
                .map(|(i, x)| (format!("j{i}"), score(*x)))
                .collect()
        };
        let vals = [Some(1.0), Some(0.0), Some(1.0)];
        let s = ensemble(EnsembleRule::Majority, named(&vals));
        assert_eq!(s.value, Some(1.0));
        assert_eq!(s.detail["disagreement"], true);
        assert_eq!(s.detail["judges"][1]["judge"], "j1");
        assert_eq!(s.detail["judges"][1]["value"], 0.0);
        assert_eq!(
            ensemble(EnsembleRule::Unanimous, named(&vals)).value,
            Some(0.0)
        );
        let m = ensemble(EnsembleRule::Mean, named(&vals)).value.unwrap();
        assert!((m - 2.0 / 3.0).abs() < 1e-12);
        let agree = ensemble(EnsembleRule::Unanimous, named(&[Some(1.0), Some(1.0)]));
        assert_eq!(agree.value, Some(1.0));
        assert_eq!(agree.detail["disagreement"], false);
        let ex = ensemble(EnsembleRule::Majority, named(&[None, None, Some(1.0)]));
        assert_eq!(ex.excluded_reason, Some("no_claims"));
        assert_eq!(ex.detail["disagreement"], true);
    }

    #[test]
    fn weighted_score_from_logprobs() {
        let tok = |t: &str, top: &[(&str, f64)]| {
            let alts: Vec<Value> = top
                .iter()
                .map(|(a, p)| json!({"token": a, "logprob": p.ln()}))
                .collect();
            json!({"token": t, "logprob": 0.0, "top_logprobs": alts})
        };
        let lp = json!([
            tok("{\"reason\":\"ok\",", &[]),
            tok("\"score\"", &[]),
            tok(":", &[]),
            tok("4", &[("4", 0.6), ("5", 0.2), ("3", 0.1), ("x", 0.1)]),
            tok("}", &[]),
        ]);
        let (v, probs) = weighted_score(&lp).unwrap();
        assert!(
            (v - (4.0 * 0.6 + 5.0 * 0.2 + 3.0 * 0.1) / 0.9).abs() < 1e-9,
            "{v}"
        );
        assert_eq!(probs.len(), 3);
        assert!(weighted_score(&json!([tok("{}", &[])])).is_err());
    }

    #[test]
    fn self_consistency_majority_mean_and_exclusion() {
        let seq = [Some(1.0), Some(0.0), Some(1.0)];
        let s =
            self_consistency(3, Aggregation::Majority, &|r| Ok(score(seq[r as usize]))).unwrap();
        assert_eq!(s.value, Some(1.0));
        assert!((s.detail["agreement"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-12);
        let s = self_consistency(3, Aggregation::Mean, &|r| Ok(score(seq[r as usize]))).unwrap();
        assert!((s.value.unwrap() - 2.0 / 3.0).abs() < 1e-12);
        // A 1-1 split goes to the lower value.
        let s =
            self_consistency(2, Aggregation::Majority, &|r| Ok(score(Some(f64::from(r))))).unwrap();
        assert_eq!(s.value, Some(0.0));
        let ex = [None, None, Some(1.0)];
        let s = self_consistency(3, Aggregation::Majority, &|r| Ok(score(ex[r as usize]))).unwrap();
        assert_eq!(s.excluded_reason, Some("no_claims"));
        let err = self_consistency(3, Aggregation::Mean, &|r| {
            if r == 1 {
                Err(JudgeError::Unsupported {
                    judge: "j".into(),
                    message: "x".into(),
                })
            } else {
                Ok(score(Some(1.0)))
            }
        });
        assert!(err.is_err());
    }
}
