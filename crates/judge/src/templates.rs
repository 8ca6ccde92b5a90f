//! Versioned judge prompt templates: each has an `id`, a `version`, a JSON schema for its
//! reply, and a render function from typed inputs to a [`JudgeRequest`].
//!
//! The version is part of every cache key: change a prompt or a schema, bump the version.
//! Verdict lists are matched to their inputs by 1-based ids shown in the prompt (`[1] …`), and
//! [`check_ids`] rejects a reply whose count or ids do not match (the client then repairs once).
//! `reason` comes first in each object so the model writes its justification before the
//! verdict. Prompts follow the binary, rubric and pairwise templates of the evaluator design
//! guide and the Ragas metric prompts, reworded.

use serde_json::{json, Value};

use crate::error::ReplyError;
use crate::request::{JudgeRequest, Message};

/// A template's identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Template {
    /// Stable id, used in cache keys and records.
    pub id: &'static str,
    /// Bumped whenever the prompt or the schema changes.
    pub version: u32,
    /// One line on what it judges.
    pub description: &'static str,
}

/// Binary groundedness: `{"reason", "grounded": 0|1, "failure_mode"?}`.
pub const GROUNDEDNESS: Template = Template {
    id: "groundedness",
    version: 3,
    description: "is every factual claim of the answer supported by the context (0/1)",
};
/// Rubric score: `{"reason", "score": 1..5}`.
pub const RUBRIC: Template = Template {
    id: "rubric",
    version: 2,
    description: "score the answer 1-5 against a written rubric",
};
/// Pairwise preference: `{"reason", "winner": "A"|"B"|"tie"}`.
pub const PAIRWISE: Template = Template {
    id: "pairwise",
    version: 2,
    description: "which of two answers is better",
};
/// Citation support: per cited statement, `{"id", "reason", "supported": 0|1}`.
pub const CITATION_SUPPORT: Template = Template {
    id: "citation_support",
    version: 2,
    description: "does each cited source support its statement",
};
/// Claim extraction: `{"claims": [string]}`.
pub const CLAIM_EXTRACTION: Template = Template {
    id: "claim_extraction",
    version: 2,
    description: "break an answer into atomic, self-contained claims",
};
/// Claim verification (NLI): per claim, `{"id", "reason", "verdict": 0|1, "failure_mode"?}`.
pub const CLAIM_VERIFICATION: Template = Template {
    id: "claim_verification",
    version: 3,
    description: "can each claim be inferred from the context",
};
/// Question generation for answer relevancy: `{"questions": [{"question", "noncommittal"}]}`.
pub const QUESTION_GENERATION: Template = Template {
    id: "question_generation",
    version: 2,
    description: "questions the answer would answer, and whether it is noncommittal",
};
/// Context precision: per retrieved chunk, `{"id", "reason", "useful": 0|1}`.
pub const CONTEXT_PRECISION: Template = Template {
    id: "context_precision",
    version: 2,
    description: "was each retrieved chunk useful to arrive at the answer",
};
/// Context recall: `{"statements": [{"statement", "reason", "attributed": 0|1}]}`.
pub const CONTEXT_RECALL: Template = Template {
    id: "context_recall",
    version: 2,
    description: "can each statement of the reference be attributed to the context",
};

/// Claim attribution (noise sensitivity): per claim, `{"id", "reason", "chunks": [chunk ids]}`,
/// the retrieved chunks from which the claim can be inferred.
pub const CLAIM_ATTRIBUTION: Template = Template {
    id: "claim_attribution",
    version: 2,
    description: "which retrieved chunks support each claim",
};

/// G-Eval's first step: the evaluation steps for one criterion written in a sentence,
/// `{"steps": [string]}`.
pub const EVALUATION_STEPS: Template = Template {
    id: "evaluation_steps",
    version: 2,
    description: "write the evaluation steps for a criterion (G-Eval auto chain-of-thought)",
};

/// Test-set synthesis: one question with its reference answer and verbatim evidence,
/// `{"question", "answer", "evidence": [{"passage", "quote"}]}`.
pub const QUESTION_SYNTHESIS: Template = Template {
    id: "question_synthesis",
    version: 2,
    description: "write one test question, its reference answer and verbatim evidence",
};

/// Every template.
pub const ALL: &[Template] = &[
    GROUNDEDNESS,
    RUBRIC,
    PAIRWISE,
    CITATION_SUPPORT,
    CLAIM_EXTRACTION,
    CLAIM_VERIFICATION,
    QUESTION_GENERATION,
    CONTEXT_PRECISION,
    CONTEXT_RECALL,
    CLAIM_ATTRIBUTION,
    EVALUATION_STEPS,
    QUESTION_SYNTHESIS,
];

/// Why an answer or a claim is not supported, as the groundedness and claim-verification
/// judges may say it (`failure_mode`, optional, `null` when supported): a claim the context
/// does not contain (`fabrication`), one broader than what the context supports
/// (`overgeneralisation`), a fact attached to the wrong person, product or thing
/// (`wrong_entity`), a fact the context states differently or as outdated (`stale_fact`), or
/// `other`. Counted per run in the summary.
pub const FAILURE_MODES: &[&str] = &[
    "fabrication",
    "overgeneralisation",
    "wrong_entity",
    "stale_fact",
    "other",
];

/// What the prompt says of [`FAILURE_MODES`].
const FAILURE_MODE_INSTRUCTION: &str = "\"failure_mode\" says why an unsupported answer or claim fails: \"fabrication\" (the context does not contain it), \"overgeneralisation\" (broader than what the context supports), \"wrong_entity\" (a fact attached to the wrong person, product or thing), \"stale_fact\" (the context states it differently or as outdated) or \"other\"; it is null when supported.";

/// The optional `failure_mode` property: one of [`FAILURE_MODES`] or `null`.
fn failure_mode() -> Value {
    let mut modes: Vec<Value> = FAILURE_MODES.iter().map(|m| json!(m)).collect();
    modes.push(Value::Null);
    json!({"type": ["string", "null"], "enum": modes})
}

/// The rubric of the evaluator design guide (1 = irrelevant … 5 = correct, complete,
/// well-structured).
pub const DEFAULT_RUBRIC: &str = "1 = irrelevant or off-topic\n\
2 = partially addresses the question, missing key information\n\
3 = addresses the question but with errors or omissions\n\
4 = correct and complete, lacks polish\n\
5 = correct, complete, well-structured";

/// The reply budget of a template whose reply is one verdict with a short reason (about
/// four times what such a reply takes).
pub const SINGLE_VERDICT_TOKENS: u32 = 256;
/// The smallest reply budget of any template.
pub const MIN_REPLY_TOKENS: u32 = 256;
/// Tokens allowed per item of a verdict list (`id`, a short reason, the verdict, an optional
/// failure mode).
pub const PER_ITEM_TOKENS: u32 = 128;

/// The reply budget of a list of `n` verdicts: `64 + 128·n`, at least [`MIN_REPLY_TOKENS`].
pub fn per_item_tokens(n: usize) -> u32 {
    list_tokens(n, PER_ITEM_TOKENS)
}

fn request(
    t: Template,
    system: String,
    user: String,
    schema: Value,
    repeat_index: u32,
    reply_tokens: u32,
) -> JudgeRequest {
    JudgeRequest {
        template_id: t.id.into(),
        template_version: t.version,
        messages: vec![Message::system(system), Message::user(user)],
        schema,
        repeat_index,
        reply_tokens,
    }
}

fn object(properties: Value) -> Value {
    let required: Vec<Value> = properties
        .as_object()
        .map(|m| m.keys().map(|k| json!(k)).collect())
        .unwrap_or_default();
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

/// [`object`] with the optional, nullable properties `optional` (not required: a judge may
/// leave them out; a strict provider is sent them as required and nullable, see
/// [`crate::schema::strict`]).
fn object_with_optional(properties: Value, optional: &[(&str, Value)]) -> Value {
    let mut o = object(properties);
    for (key, schema) in optional {
        o["properties"][*key] = schema.clone();
    }
    o
}

fn flag() -> Value {
    json!({"type": "integer", "enum": [0, 1]})
}

/// Most characters of a `reason` (a generation bound, see [`text`]).
pub const REASON_CHARS: usize = 400;
/// Most characters of one listed claim, statement, question or step.
pub const ITEM_CHARS: usize = 240;

fn reason() -> Value {
    text(REASON_CHARS)
}

/// A string of at most `max` characters. `maxLength` bounds generation on a server that
/// enforces the schema by a grammar (llama.cpp, vLLM): a small model that would repeat itself
/// inside a string until `max_tokens` is made to close it. It is not checked on replies
/// ([`crate::schema::validate`] ignores it), and it is removed with the other bounds for a
/// provider that refuses them.
fn text(max: usize) -> Value {
    json!({"type": "string", "maxLength": max})
}

/// Most items of a list restating `source` (claims of an answer, statements of a reference):
/// `4 + chars/25`, a claim per 25 characters and then some.
pub fn restated_items(source: &str) -> usize {
    4 + source.chars().count() / 25
}

/// The reply budget of a list of at most `n` restated items, each with `per_item` tokens.
fn list_tokens(n: usize, per_item: u32) -> u32 {
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    per_item
        .saturating_mul(n)
        .saturating_add(64)
        .max(MIN_REPLY_TOKENS)
}

/// An array of `n` verdict objects with an integer `id` and the given fields.
fn verdicts(n: usize, verdict_field: &str) -> Value {
    verdicts_with_optional(n, verdict_field, &[])
}

/// [`verdicts`] whose objects may also carry the optional properties `optional`.
fn verdicts_with_optional(n: usize, verdict_field: &str, optional: &[(&str, Value)]) -> Value {
    let mut props = serde_json::Map::new();
    props.insert("id".into(), json!({"type": "integer"}));
    props.insert("reason".into(), reason());
    props.insert(verdict_field.into(), flag());
    let items = object_with_optional(Value::Object(props), optional);
    json!({"type": "array", "items": items, "minItems": n, "maxItems": n})
}

/// Numbered list `[1] …` of `items`.
pub fn numbered(items: &[String]) -> String {
    if items.is_empty() {
        return "(none)".into();
    }
    items
        .iter()
        .enumerate()
        .map(|(i, t)| format!("[{}] {}", i + 1, t.trim()))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Checks that `parsed[key]` holds exactly `n` objects whose `id`s are `1..=n`, each once.
pub fn check_ids(parsed: &Value, key: &str, n: usize) -> Result<(), ReplyError> {
    let items = parsed
        .get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| ReplyError::new(format!("`{key}` is not an array")))?;
    let mut seen = vec![false; n];
    for (pos, item) in items.iter().enumerate() {
        let id = item
            .get("id")
            .and_then(Value::as_f64)
            .ok_or_else(|| ReplyError::new(format!("{key}[{pos}] has no numeric `id`")))?;
        let idx = id as i64 - 1;
        if id.fract() != 0.0 || idx < 0 || idx as usize >= n {
            return Err(ReplyError::new(format!(
                "{key}[{pos}] has id {id}, but the ids are 1 to {n}"
            )));
        }
        if std::mem::replace(&mut seen[idx as usize], true) {
            return Err(ReplyError::new(format!("{key} has id {id} twice")));
        }
    }
    let missing: Vec<String> = seen
        .iter()
        .enumerate()
        .filter(|(_, s)| !**s)
        .map(|(i, _)| (i + 1).to_string())
        .collect();
    if items.len() != n || !missing.is_empty() {
        return Err(ReplyError::new(format!(
            "expected exactly {n} item(s) in `{key}`, one per id 1 to {n}; got {}{}",
            items.len(),
            if missing.is_empty() {
                String::new()
            } else {
                format!(", missing ids {}", missing.join(", "))
            }
        )));
    }
    Ok(())
}

/// The optional string field `field` of each object of `parsed[key]`, ordered by id (call
/// after [`check_ids`]); `None` where it is absent or `null`.
pub fn strings_by_id(parsed: &Value, key: &str, field: &str, n: usize) -> Vec<Option<String>> {
    let mut out = vec![None; n];
    for item in parsed
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(id) = item.get("id").and_then(Value::as_f64) else {
            continue;
        };
        let idx = id as usize;
        if idx >= 1 && idx <= n {
            out[idx - 1] = item.get(field).and_then(Value::as_str).map(str::to_string);
        }
    }
    out
}

/// The verdict flags of `parsed[key]`, ordered by id (call after [`check_ids`]).
pub fn flags_by_id(parsed: &Value, key: &str, field: &str, n: usize) -> Vec<(bool, String)> {
    let mut out = vec![(false, String::new()); n];
    for item in parsed
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(id) = item.get("id").and_then(Value::as_f64) else {
            continue;
        };
        let idx = id as usize;
        if idx >= 1 && idx <= n {
            out[idx - 1] = (
                item.get(field).and_then(Value::as_f64) == Some(1.0),
                item.get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            );
        }
    }
    out
}

/// Binary groundedness of `answer` against `context` (guide template 1).
pub fn groundedness(
    question: &str,
    context: &[String],
    answer: &str,
    repeat_index: u32,
) -> JudgeRequest {
    let system = format!("You are an evaluator. Given a question, a context and an answer, return exactly one JSON \
object {{\"reason\": one short sentence, \"grounded\": 0 or 1, \"failure_mode\": see below}}. The answer is grounded (1) only if every \
factual claim in it is supported by the context. Claims inferred beyond what the context states are not \
grounded. An answer that makes no factual claim (for example a refusal) is grounded. {FAILURE_MODE_INSTRUCTION}");
    let user = format!(
        "Question: {question}\n\nContext:\n{}\n\nAnswer: {answer}",
        numbered(context)
    );
    request(
        GROUNDEDNESS,
        system,
        user,
        object_with_optional(
            json!({"reason": reason(), "grounded": flag()}),
            &[("failure_mode", failure_mode())],
        ),
        repeat_index,
        SINGLE_VERDICT_TOKENS,
    )
}

/// A 1–5 rubric score (guide template 2); `rubric` defaults to [`DEFAULT_RUBRIC`].
pub fn rubric(
    question: &str,
    answer: &str,
    rubric: Option<&str>,
    repeat_index: u32,
) -> JudgeRequest {
    let system = format!(
        "Score the answer on a scale of 1 to 5 against this rubric:\n{}\n\nReturn one JSON object \
{{\"reason\": short justification, \"score\": integer 1 to 5}}.",
        rubric.unwrap_or(DEFAULT_RUBRIC)
    );
    let user = format!("Question: {question}\n\nAnswer: {answer}");
    let schema =
        object(json!({"reason": reason(), "score": {"type": "integer", "enum": [1, 2, 3, 4, 5]}}));
    request(
        RUBRIC,
        system,
        user,
        schema,
        repeat_index,
        SINGLE_VERDICT_TOKENS,
    )
}

/// [`rubric`] with the retrieved context shown to the judge (the `rubric_judge` evaluator):
/// identical to [`rubric`] when `context` is empty.
pub fn rubric_in_context(
    question: &str,
    context: &[String],
    answer: &str,
    rubric_text: Option<&str>,
    repeat_index: u32,
) -> JudgeRequest {
    let mut r = rubric(question, answer, rubric_text, repeat_index);
    if !context.is_empty() {
        r.messages[1] = Message::user(format!(
            "Question: {question}\n\nContext:\n{}\n\nAnswer: {answer}",
            numbered(context)
        ));
    }
    r
}

/// Most evaluation steps [`evaluation_steps`] asks for.
pub const MAX_EVALUATION_STEPS: usize = 8;

/// G-Eval's first step (Liu et al. 2023, "G-Eval: NLG Evaluation using GPT-4 with Better
/// Human Alignment"): from a criterion written in one sentence, the steps a grader follows
/// to score an answer 1 to 5 on it, `{"steps": [string]}` (1 to [`MAX_EVALUATION_STEPS`]).
/// Asked once per judge and criterion (repeat 0), then used by every case's score through
/// [`rubric_with_steps`].
pub fn evaluation_steps(criterion: &str) -> JudgeRequest {
    let system = format!(
        "You write evaluation steps. Given one evaluation criterion for answers to user \
questions, write the concrete steps a careful grader follows to score an answer from 1 (does not meet \
the criterion at all) to 5 (fully meets it): what to read, what to check, what lowers the score. Write \
between 3 and {MAX_EVALUATION_STEPS} short imperative steps. Return one JSON object {{\"steps\": [string]}}."
    );
    let user = format!("Evaluation criterion: {}", criterion.trim());
    let schema = object(json!({"steps": {"type": "array", "items": text(ITEM_CHARS),
        "minItems": 1, "maxItems": MAX_EVALUATION_STEPS}}));
    let budget = list_tokens(MAX_EVALUATION_STEPS, 80);
    request(EVALUATION_STEPS, system, user, schema, 0, budget)
}

/// The rubric text of a G-Eval score: the criterion, then its numbered evaluation steps (the
/// rubric [`rubric`] shows the judge).
pub fn rubric_with_steps(criterion: &str, steps: &[String]) -> String {
    let mut out = format!(
        "Evaluation criterion: {}\n\nEvaluation steps:",
        criterion.trim()
    );
    for (i, step) in steps.iter().enumerate() {
        out.push_str(&format!("\n{}. {}", i + 1, step.trim()));
    }
    out.push_str("\n\n1 = does not meet the criterion at all; 5 = fully meets it.");
    out
}

/// Which of two answers is better (guide template 3). Run it in both orders with
/// [`ragas::pairwise_judge`](crate::ragas::pairwise_judge).
pub fn pairwise(question: &str, answer_a: &str, answer_b: &str, repeat_index: u32) -> JudgeRequest {
    let system = "Given a question and two candidate answers, return one JSON object \
{\"reason\": short justification, \"winner\": \"A\" or \"B\" or \"tie\"}. Judge on factual correctness \
first, then completeness, then clarity. The order in which the answers are shown says nothing about \
their quality."
        .to_string();
    let user = format!("Question: {question}\n\nAnswer A: {answer_a}\n\nAnswer B: {answer_b}");
    let schema = object(
        json!({"reason": reason(), "winner": {"type": "string", "enum": ["A", "B", "tie"]}}),
    );
    request(
        PAIRWISE,
        system,
        user,
        schema,
        repeat_index,
        SINGLE_VERDICT_TOKENS,
    )
}

/// A statement of the answer with the text of the sources it cites.
#[derive(Debug, Clone, PartialEq)]
pub struct CitedStatement {
    /// The statement (a sentence of the answer).
    pub statement: String,
    /// The cited passages' text.
    pub sources: Vec<String>,
}

/// Does each cited source set support its statement? Reply `{"verdicts": [{"id", "reason",
/// "supported"}]}`, one per statement; check with `check_ids(_, "verdicts", items.len())`.
pub fn citation_support(
    question: &str,
    items: &[CitedStatement],
    repeat_index: u32,
) -> JudgeRequest {
    let system = "You check citations. For each numbered statement, decide whether the sources cited for it \
support it: supported is 1 only if the statement can be directly inferred from those sources alone, else 0. \
Return one JSON object {\"verdicts\": [{\"id\": the statement number, \"reason\": one short sentence, \
\"supported\": 0 or 1}]} with exactly one verdict per statement, in order."
        .to_string();
    let body = items
        .iter()
        .enumerate()
        .map(|(i, it)| {
            format!(
                "[{}] Statement: {}\nCited sources:\n{}",
                i + 1,
                it.statement.trim(),
                numbered(&it.sources)
            )
        })
        .collect::<Vec<_>>()
        .join("\n\n---\n\n");
    let user = format!("Question: {question}\n\n{body}");
    let schema = object(json!({"verdicts": verdicts(items.len(), "supported")}));
    request(
        CITATION_SUPPORT,
        system,
        user,
        schema,
        repeat_index,
        per_item_tokens(items.len()),
    )
}

/// Breaks `answer` into atomic claims: `{"claims": [string]}` (empty for an answer that
/// states nothing, such as a refusal).
pub fn claim_extraction(question: &str, answer: &str, repeat_index: u32) -> JudgeRequest {
    let system = "Break the answer into atomic claims: short, self-contained factual statements that can each \
be checked on their own, with pronouns replaced by what they refer to. Do not add anything the answer does \
not say. A refusal, a statement of not knowing, or a question back contains no claims. Return one JSON \
object {\"claims\": [string, ...]}."
        .to_string();
    let user = format!("Question: {question}\n\nAnswer: {answer}");
    let most = restated_items(answer);
    let schema =
        object(json!({"claims": {"type": "array", "items": text(ITEM_CHARS), "maxItems": most}}));
    request(
        CLAIM_EXTRACTION,
        system,
        user,
        schema,
        repeat_index,
        list_tokens(most, 64),
    )
}

/// NLI-style verification of `claims` against `context`: `{"verdicts": [{"id", "reason",
/// "verdict"}]}`, one per claim; check with `check_ids(_, "verdicts", claims.len())`.
pub fn claim_verification(
    context: &[String],
    claims: &[String],
    repeat_index: u32,
) -> JudgeRequest {
    let system = format!("Judge each numbered claim against the context. verdict is 1 if the claim can be directly \
inferred from the context, 0 if it cannot (contradicted, or not stated). Use only the context, not your \
own knowledge. Return one JSON object {{\"verdicts\": [{{\"id\": the claim number, \"reason\": one short \
sentence, \"verdict\": 0 or 1, \"failure_mode\": see below}}]}} with exactly one verdict per claim, in order. \
{FAILURE_MODE_INSTRUCTION}");
    let user = format!(
        "Context:\n{}\n\nClaims:\n{}",
        numbered(context),
        numbered(claims)
    );
    let schema = object(json!({"verdicts": verdicts_with_optional(
        claims.len(),
        "verdict",
        &[("failure_mode", failure_mode())]
    )}));
    request(
        CLAIM_VERIFICATION,
        system,
        user,
        schema,
        repeat_index,
        per_item_tokens(claims.len()),
    )
}

/// `strictness` questions that `answer` would answer, each flagged noncommittal (evasive,
/// vague or "I don't know") or not: `{"questions": [{"question", "noncommittal"}]}`.
pub fn question_generation(
    answer: &str,
    context: &[String],
    strictness: usize,
    repeat_index: u32,
) -> JudgeRequest {
    let system = format!(
        "Write {strictness} different questions that the given answer answers, as a user would ask them. \
For each, set noncommittal to 1 if the answer is evasive, vague or ambiguous (for example \"I don't know\" \
or \"I'm not sure\"), else 0. Return one JSON object {{\"questions\": [{{\"question\": string, \
\"noncommittal\": 0 or 1}}]}} with exactly {strictness} items."
    );
    let user = if context.is_empty() {
        format!("Answer: {answer}")
    } else {
        format!("Context:\n{}\n\nAnswer: {answer}", numbered(context))
    };
    let item = object(json!({"question": text(ITEM_CHARS), "noncommittal": flag()}));
    let schema = object(
        json!({"questions": {"type": "array", "items": item, "minItems": strictness, "maxItems": strictness}}),
    );
    let budget = list_tokens(strictness, 80);
    request(
        QUESTION_GENERATION,
        system,
        user,
        schema,
        repeat_index,
        budget,
    )
}

/// Was each retrieved chunk useful to arrive at `target` (the reference answer when
/// `with_reference`, else the system's answer)? `{"verdicts": [{"id", "reason", "useful"}]}`.
pub fn context_precision(
    question: &str,
    target: &str,
    with_reference: bool,
    chunks: &[String],
    repeat_index: u32,
) -> JudgeRequest {
    let label = if with_reference {
        "Reference answer"
    } else {
        "Answer"
    };
    let system = format!(
        "For each numbered retrieved chunk, decide whether it was useful in arriving at the {} to the \
question: useful is 1 if the chunk contains information used by or needed for that answer, else 0. Judge \
each chunk on its own. Return one JSON object {{\"verdicts\": [{{\"id\": the chunk number, \"reason\": one \
short sentence, \"useful\": 0 or 1}}]}} with exactly one verdict per chunk, in order.",
        label.to_lowercase()
    );
    let user = format!(
        "Question: {question}\n\n{label}: {target}\n\nRetrieved chunks:\n{}",
        numbered(chunks)
    );
    let schema = object(json!({"verdicts": verdicts(chunks.len(), "useful")}));
    request(
        CONTEXT_PRECISION,
        system,
        user,
        schema,
        repeat_index,
        per_item_tokens(chunks.len()),
    )
}

/// Split `reference` into statements and attribute each to `context` or not:
/// `{"statements": [{"statement", "reason", "attributed"}]}`.
pub fn context_recall(
    question: &str,
    context: &[String],
    reference: &str,
    repeat_index: u32,
) -> JudgeRequest {
    let system = "Split the reference answer into its individual factual statements. For each, decide \
whether it can be attributed to the context: attributed is 1 if the context states it, else 0. Return one \
JSON object {\"statements\": [{\"statement\": string, \"reason\": one short sentence, \"attributed\": 0 or \
1}]}."
        .to_string();
    let user = format!(
        "Question: {question}\n\nContext:\n{}\n\nReference answer: {reference}",
        numbered(context)
    );
    let item =
        object(json!({"statement": text(ITEM_CHARS), "reason": reason(), "attributed": flag()}));
    let most = restated_items(reference);
    let schema = object(json!({"statements": {"type": "array", "items": item, "maxItems": most}}));
    request(
        CONTEXT_RECALL,
        system,
        user,
        schema,
        repeat_index,
        list_tokens(most, 160),
    )
}

/// For each numbered claim, the numbered chunks from which it can be inferred:
/// `{"verdicts": [{"id", "reason", "chunks": [int]}]}`, one per claim; check with
/// [`check_attribution`].
pub fn claim_attribution(chunks: &[String], claims: &[String], repeat_index: u32) -> JudgeRequest {
    let system = "For each numbered claim, list the numbered retrieved chunks from which the claim can be \
directly inferred (empty if none). Judge each chunk on its own, using only its text, not your own knowledge. \
Return one JSON object {\"verdicts\": [{\"id\": the claim number, \"reason\": one short sentence, \
\"chunks\": [chunk numbers]}]} with exactly one verdict per claim, in order."
        .to_string();
    let user = format!(
        "Retrieved chunks:\n{}\n\nClaims:\n{}",
        numbered(chunks),
        numbered(claims)
    );
    let n = claims.len();
    let item = object(json!({
        "id": {"type": "integer"},
        "reason": reason(),
        "chunks": {"type": "array", "items": {"type": "integer"}, "maxItems": chunks.len()},
    }));
    let schema =
        object(json!({"verdicts": {"type": "array", "items": item, "minItems": n, "maxItems": n}}));
    request(
        CLAIM_ATTRIBUTION,
        system,
        user,
        schema,
        repeat_index,
        per_item_tokens(n),
    )
}

/// [`check_ids`] for [`claim_attribution`], plus every chunk number within `1..=chunks`.
pub fn check_attribution(parsed: &Value, claims: usize, chunks: usize) -> Result<(), ReplyError> {
    check_ids(parsed, "verdicts", claims)?;
    for (pos, item) in parsed["verdicts"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for c in item
            .get("chunks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let ok = c
                .as_f64()
                .is_some_and(|f| f.fract() == 0.0 && f >= 1.0 && f <= chunks as f64);
            if !ok {
                return Err(ReplyError::new(format!(
                    "verdicts[{pos}].chunks has {c}, but the chunks are numbered 1 to {chunks}"
                )));
            }
        }
    }
    Ok(())
}

/// The chunk sets of a [`claim_attribution`] reply, ordered by claim id, as 0-based chunk
/// indices (call after [`check_attribution`]).
pub fn attribution_by_id(parsed: &Value, claims: usize) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); claims];
    for item in parsed["verdicts"].as_array().into_iter().flatten() {
        let Some(id) = item.get("id").and_then(Value::as_f64) else {
            continue;
        };
        let idx = id as usize;
        if idx >= 1 && idx <= claims {
            out[idx - 1] = item
                .get("chunks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_f64)
                .filter(|f| *f >= 1.0)
                .map(|f| f as usize - 1)
                .collect();
        }
    }
    out
}

/// Writes one test question of `style` (what kind of question, in words: single-hop,
/// multi-hop, abstract, negation, distractor, out of scope) from `passages`, with its reference
/// answer and the verbatim quotes of the passages it rests on (`passage` is the 1-based
/// number shown; no evidence for a question the passages cannot answer).
pub fn question_synthesis(style: &str, passages: &[String], repeat_index: u32) -> JudgeRequest {
    let system =
        "You write test questions for a retrieval-augmented question-answering system over \
the numbered passages. Follow the requested style exactly. The answer must be what a careful \
expert would reply using only the passages (or, when the style asks for a question the passages \
cannot answer, a short statement that the documents do not say). Each evidence quote must be \
copied verbatim, character for character, from the passage whose number you give. Return one \
JSON object {\"question\": string, \"answer\": string, \"evidence\": [{\"passage\": number, \
\"quote\": string}]}."
            .to_string();
    let user = format!("Style: {style}\n\nPassages:\n{}", numbered(passages));
    let evidence = json!({"type": "array", "items": object(json!({
        "passage": {"type": "integer"},
        "quote": text(800),
    })), "maxItems": 5});
    let schema = object(json!({
        "question": text(500),
        "answer": text(1500),
        "evidence": evidence,
    }));
    request(QUESTION_SYNTHESIS, system, user, schema, repeat_index, 1536)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::validate;

    /// Every string a template asks for has a `maxLength`, and every list without a fixed
    /// length a `maxItems`: a grammar-enforcing server cannot let a model run on.
    fn assert_bounded(schema: &Value, path: &str) {
        match schema["type"].as_str() {
            Some("string") if schema.get("enum").is_none() => {
                assert!(schema["maxLength"].as_u64().is_some(), "{path}: {schema}")
            }
            Some("array") => {
                assert!(schema["maxItems"].as_u64().is_some(), "{path}: {schema}");
                assert_bounded(&schema["items"], &format!("{path}[]"));
            }
            _ => {}
        }
        if let Some(props) = schema["properties"].as_object() {
            for (k, v) in props {
                assert_bounded(v, &format!("{path}.{k}"));
            }
        }
    }

    #[test]
    fn every_reply_is_bounded_and_budgeted() {
        let ctx = vec!["The tower is in Paris.".to_string()];
        let claims = vec!["a".to_string(), "b".to_string()];
        let answer = "The Eiffel Tower is in Paris. It was completed in 1889.";
        let cited = vec![CitedStatement {
            statement: "s".into(),
            sources: ctx.clone(),
        }];
        let requests = [
            groundedness("Q?", &ctx, answer, 0),
            rubric("Q?", answer, None, 0),
            pairwise("Q?", "a", "b", 0),
            citation_support("Q?", &cited, 0),
            claim_extraction("Q?", answer, 0),
            claim_verification(&ctx, &claims, 0),
            question_generation(answer, &ctx, 3, 0),
            context_precision("Q?", answer, true, &ctx, 0),
            context_recall("Q?", &ctx, answer, 0),
            claim_attribution(&ctx, &claims, 0),
            evaluation_steps("The answer is polite."),
            question_synthesis("single-hop", &ctx, 0),
        ];
        assert_eq!(requests.len(), ALL.len());
        for r in &requests {
            assert_bounded(&r.schema, &r.template_id);
            assert!(r.reply_tokens >= MIN_REPLY_TOKENS, "{}", r.template_id);
        }
        // 56 characters hold at most 4 + 56/25 = 6 claims, each with 64 tokens of budget.
        let extraction = &requests[4];
        assert_eq!(extraction.schema["properties"]["claims"]["maxItems"], 6);
        assert_eq!(extraction.reply_tokens, 64 + 64 * 6);
        assert_eq!(requests[5].reply_tokens, 64 + 128 * 2);
        assert_eq!(requests[0].reply_tokens, SINGLE_VERDICT_TOKENS);
    }

    #[test]
    fn ids_are_checked() {
        let ok = json!({"verdicts": [{"id": 2, "reason": "", "verdict": 1}, {"id": 1, "reason": "", "verdict": 0}]});
        assert!(check_ids(&ok, "verdicts", 2).is_ok());
        assert!(flags_by_id(&ok, "verdicts", "verdict", 2)[1].0);
        let short = json!({"verdicts": [{"id": 1, "reason": "", "verdict": 1}]});
        let e = check_ids(&short, "verdicts", 2).unwrap_err().to_string();
        assert!(e.contains("missing ids 2"), "{e}");
        let dup = json!({"verdicts": [{"id": 1, "reason": "", "verdict": 1}, {"id": 1, "reason": "", "verdict": 1}]});
        assert!(check_ids(&dup, "verdicts", 2)
            .unwrap_err()
            .to_string()
            .contains("twice"));
        let out = json!({"verdicts": [{"id": 3, "reason": "", "verdict": 1}]});
        assert!(check_ids(&out, "verdicts", 1)
            .unwrap_err()
            .to_string()
            .contains("ids are 1 to 1"));
    }

    #[test]
    fn schemas_accept_their_examples_and_are_strict_shaped() {
        let r = groundedness("q", &["c".into()], "a", 0);
        assert!(validate(&r.schema, &json!({"reason": "x", "grounded": 1})).is_ok());
        assert!(validate(&r.schema, &json!({"reason": "x", "grounded": 2})).is_err());
        let r = claim_verification(&["c".into()], &["a".into(), "b".into()], 0);
        assert!(validate(
            &r.schema,
            &json!({"verdicts": [{"id": 1, "reason": "", "verdict": 1}]})
        )
        .is_err());
        let r = question_generation("a", &[], 3, 0);
        assert_eq!(r.schema["properties"]["questions"]["minItems"], 3);
        let r = pairwise("q", "a", "b", 0);
        assert!(validate(&r.schema, &json!({"reason": "", "winner": "C"})).is_err());
        let att = claim_attribution(&["c1".into(), "c2".into()], &["a".into()], 0);
        let ok = json!({"verdicts": [{"id": 1, "reason": "", "chunks": [2]}]});
        assert!(validate(&att.schema, &ok).is_ok());
        assert!(check_attribution(&ok, 1, 2).is_ok());
        assert_eq!(attribution_by_id(&ok, 1), vec![vec![1]]);
        let bad = json!({"verdicts": [{"id": 1, "reason": "", "chunks": [3]}]});
        assert!(check_attribution(&bad, 1, 2)
            .unwrap_err()
            .to_string()
            .contains("1 to 2"));
        for t in ALL {
            assert!(t.version >= 1 && !t.id.is_empty());
        }
        // Strict structured outputs need every property required and no extra ones.
        assert_eq!(r.schema["additionalProperties"], false);
        assert_eq!(r.schema["required"], json!(["reason", "winner"]));
    }
}
