//! What a span stands for and what it carries, read from the attribute names of the two
//! conventions GenAI instrumentations write:
//!
//! - **OpenInference** ([semantic conventions](https://github.com/Arize-ai/openinference/blob/main/spec/semantic_conventions.md)):
//!   `openinference.span.kind` (`CHAIN`, `RETRIEVER`, `RERANKER`, `LLM`, `EMBEDDING`, `TOOL`,
//!   `AGENT`, `GUARDRAIL`, `EVALUATOR`); `input.value` / `output.value` with `input.mime_type` /
//!   `output.mime_type` (`application/json`: the value is a JSON string);
//!   `retrieval.documents.{i}.document.{id,content,score,metadata}`;
//!   `reranker.{query,model_name,top_k}` and `reranker.{input,output}_documents.{i}.document.*`;
//!   `llm.{input,output}_messages.{i}.message.{role,content}` (or `message.contents.{j}.
//!   message_content.text`); `llm.token_count.{prompt,completion,total}`; `llm.model_name`;
//!   `metadata` (a JSON string), `session.id`, `user.id`, `tag.tags`.
//! - **OpenTelemetry GenAI** ([semantic conventions](https://opentelemetry.io/docs/specs/semconv/gen-ai/)),
//!   both the names of semconv ≤ 1.36 — `gen_ai.system`, `gen_ai.prompt.{i}.{role,content}`,
//!   `gen_ai.completion.{i}.{role,content}`, `gen_ai.usage.{prompt,completion}_tokens`, and the
//!   content events `gen_ai.{system,user,assistant}.message` / `gen_ai.choice` — and the current
//!   ones: `gen_ai.operation.name` (`chat`, `text_completion`, `generate_content`, `embeddings`,
//!   `retrieval`, `execute_tool`, `invoke_agent`), `gen_ai.input.messages` /
//!   `gen_ai.output.messages` (`[{role, parts: [{type: "text", content}]}]`, structured or as a
//!   JSON string), `gen_ai.retrieval.query.text`, `gen_ai.retrieval.documents` (`[{id, score,
//!   content?}]`), `gen_ai.usage.{input,output}_tokens`, `gen_ai.request.model` /
//!   `gen_ai.response.model`, `gen_ai.response.time_to_first_chunk` (seconds).
//!
//! **Feedback** is read from the OpenTelemetry GenAI evaluation event, `gen_ai.evaluation.result`
//! (attributes `gen_ai.evaluation.name`, `gen_ai.evaluation.score.value`,
//! `gen_ai.evaluation.score.label`, `gen_ai.evaluation.explanation`), on any span of the trace:
//! one [`Feedback`] each, its value the score (a number) or else the label. A user's thumbs is
//! such an event named `thumbs` (score 1 up, 0 down, or label `up` / `down`), as
//! [`Feedback::is_negative`] reads it.
//!
//! Nothing is guessed: a value of the wrong type (a token count that is a word) is a note
//! (`wrong_attribute_type`) and the value counts as not recorded.

use std::borrow::Cow;
use std::collections::BTreeMap;

use oloproof_core::production::Feedback;
use serde_json::{Map, Value};

use crate::span::{Span, StatusCode};

/// What a span stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A step that links others (OpenInference `CHAIN`), typically the request's root.
    Chain,
    /// A retrieval (`RETRIEVER`, `gen_ai.operation.name = retrieval`).
    Retriever,
    /// A rerank (`RERANKER`).
    Reranker,
    /// A model call (`LLM`, `chat`, `text_completion`, `generate_content`, or ≤ 1.36
    /// `gen_ai.system` without an operation name).
    Llm,
    /// An embedding call (`EMBEDDING`, `embeddings`).
    Embedding,
    /// A tool call (`TOOL`, `execute_tool`).
    Tool,
    /// An agent (`AGENT`, `invoke_agent`, `create_agent`).
    Agent,
    /// A guardrail (`GUARDRAIL`).
    Guardrail,
    /// An evaluator (`EVALUATOR`).
    Evaluator,
    /// No convention says.
    Unknown,
}

impl Role {
    /// The pipeline stage it times, for `latency_ms` and `production.error.stage`.
    pub fn stage(self) -> Option<&'static str> {
        match self {
            Role::Retriever => Some("retrieve"),
            Role::Reranker => Some("rerank"),
            Role::Llm => Some("generate"),
            Role::Embedding => Some("embed"),
            Role::Tool => Some("tool"),
            Role::Guardrail => Some("guardrail"),
            _ => None,
        }
    }
}

/// The span's role: `openinference.span.kind` first, then `gen_ai.operation.name`, then the
/// ≤ 1.36 `gen_ai.system` (set on model calls only).
pub fn role(span: &Span) -> Role {
    if let Some(kind) = span.str_attr("openinference.span.kind") {
        // Any case (`retriever` too), compared without an upper-cased copy: called for every
        // span of an import.
        const KINDS: [(&str, Role); 9] = [
            ("CHAIN", Role::Chain),
            ("RETRIEVER", Role::Retriever),
            ("RERANKER", Role::Reranker),
            ("LLM", Role::Llm),
            ("EMBEDDING", Role::Embedding),
            ("TOOL", Role::Tool),
            ("AGENT", Role::Agent),
            ("GUARDRAIL", Role::Guardrail),
            ("EVALUATOR", Role::Evaluator),
        ];
        if let Some((_, role)) = KINDS
            .iter()
            .find(|(name, _)| kind.eq_ignore_ascii_case(name))
        {
            return *role;
        }
    }
    if let Some(op) = span.str_attr("gen_ai.operation.name") {
        match op {
            "chat" | "text_completion" | "generate_content" => return Role::Llm,
            "embeddings" => return Role::Embedding,
            "retrieval" | "retrieve" => return Role::Retriever,
            "execute_tool" => return Role::Tool,
            "invoke_agent" | "create_agent" => return Role::Agent,
            _ => {}
        }
    }
    if span.attributes.contains_key("gen_ai.system")
        || span.attributes.contains_key("gen_ai.prompt.0.content")
    {
        return Role::Llm;
    }
    Role::Unknown
}

/// Notes about attributes of the wrong type, gathered while reading (each becomes a
/// `wrong_attribute_type` problem at the span's location).
pub type Notes = Vec<String>;

/// One document a retrieval or rerank returned, in rank order: its fields borrowed from the
/// span's attributes where they are there as such (an import reads millions of documents).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Document<'a> {
    /// `document.id` (a number is written as its decimal text).
    pub id: Option<Cow<'a, str>>,
    /// `document.content`.
    pub content: Option<Cow<'a, str>>,
    /// `document.score`.
    pub score: Option<f64>,
    /// `document.metadata` (a JSON object, or a JSON string of one).
    pub metadata: Option<Cow<'a, Map<String, Value>>>,
}

impl Document<'_> {
    /// The document owning its fields.
    pub fn into_owned(self) -> Document<'static> {
        Document {
            id: self.id.map(|c| Cow::Owned(c.into_owned())),
            content: self.content.map(|c| Cow::Owned(c.into_owned())),
            score: self.score,
            metadata: self.metadata.map(|c| Cow::Owned(c.into_owned())),
        }
    }
}

/// The documents under an OpenInference list prefix (`retrieval.documents`,
/// `reranker.input_documents`, `reranker.output_documents`), ordered by their index `{i}`
/// (ranks are index + 1); `None` when the span has none. Both the flattened form
/// (`retrieval.documents.0.document.id`) and a list of objects under the prefix itself are
/// read.
pub fn openinference_documents<'a>(
    span: &'a Span,
    prefix: &str,
    notes: &mut Notes,
) -> Option<Vec<Document<'a>>> {
    if let Some(Value::Array(items)) = span.attributes.get(prefix) {
        let docs = items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let get = |f: &str| item.get(format!("document.{f}")).or_else(|| item.get(f));
                document_of(
                    get("id"),
                    get("content"),
                    get("score"),
                    get("metadata"),
                    || format!("{prefix}.{i}"),
                    notes,
                )
            })
            .collect();
        return Some(docs);
    }
    let head = format!("{prefix}.");
    // (index, which field, value) of every key under the prefix, in key order; a key whose
    // field is not one read still makes its index a document. Grouped by index below (a
    // stable sort: for a field given twice, as `{i}.document.id` and `{i}.id`, the later
    // key wins, as inserting them in order would).
    let mut found: Vec<(usize, Option<usize>, &Value)> = Vec::new();
    for (key, value) in span.attributes.range_from(&head) {
        let Some(rest) = key.strip_prefix(&head) else {
            break;
        };
        let Some((index, field)) = rest.split_once('.') else {
            continue;
        };
        let Ok(index) = index.parse::<usize>() else {
            continue;
        };
        let slot = match field.strip_prefix("document.").unwrap_or(field) {
            "id" => Some(0),
            "content" => Some(1),
            "score" => Some(2),
            "metadata" => Some(3),
            _ => None,
        };
        found.push((index, slot, value));
    }
    if found.is_empty() {
        return None;
    }
    found.sort_by_key(|f| f.0);
    let mut docs = Vec::new();
    for group in found.chunk_by(|a, b| a.0 == b.0) {
        let mut fields: [Option<&Value>; 4] = [None; 4];
        for &(_, slot, value) in group {
            if let Some(slot) = slot {
                fields[slot] = Some(value);
            }
        }
        let [id, content, score, metadata] = fields;
        let i = group[0].0;
        docs.push(document_of(
            id,
            content,
            score,
            metadata,
            || format!("{prefix}.{i}.document"),
            notes,
        ));
    }
    Some(docs)
}

/// The documents of `gen_ai.retrieval.documents` (`[{id, score, content?, metadata?}]`,
/// structured or as a JSON string), in order; `None` when absent.
pub fn genai_documents(span: &Span, notes: &mut Notes) -> Option<Vec<Document<'static>>> {
    let key = "gen_ai.retrieval.documents";
    let items = match structured(span.attributes.get(key)?, key, notes)? {
        Value::Array(items) => items,
        other => {
            notes.push(format!("`{key}` must be a list of documents, got {other}"));
            return None;
        }
    };
    Some(
        items
            .iter()
            .enumerate()
            .map(|(i, d)| {
                document_of(
                    d.get("id"),
                    d.get("content"),
                    d.get("score"),
                    d.get("metadata"),
                    || format!("{key}[{i}]"),
                    notes,
                )
                .into_owned()
            })
            .collect(),
    )
}

/// One document from its fields; `at` names it in a note (formatted only when there is one:
/// an import reads millions of documents).
fn document_of<'a>(
    id: Option<&'a Value>,
    content: Option<&'a Value>,
    score: Option<&'a Value>,
    metadata: Option<&'a Value>,
    at: impl Fn() -> String,
    notes: &mut Notes,
) -> Document<'a> {
    let id = match id {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(Cow::Borrowed(s.as_str())),
        Some(Value::Number(n)) => Some(Cow::Owned(n.to_string())),
        Some(other) => {
            notes.push(format!(
                "`{}.id` must be a string or an integer, got {other}",
                at()
            ));
            None
        }
    };
    let content = match content {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(Cow::Borrowed(s.as_str())),
        Some(other) => {
            notes.push(format!("`{}.content` must be a string, got {other}", at()));
            None
        }
    };
    let score = match score {
        None | Some(Value::Null) => None,
        Some(v) => match number(v) {
            Some(x) => Some(x),
            None => {
                notes.push(format!("`{}.score` must be a number, got {v}", at()));
                None
            }
        },
    };
    let metadata = match metadata {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(Cow::Borrowed(m)),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => Some(Cow::Owned(m)),
            _ => {
                notes.push(format!(
                    "`{}.metadata` must be a JSON object, got {s:?}",
                    at()
                ));
                None
            }
        },
        Some(other) => {
            notes.push(format!(
                "`{}.metadata` must be a JSON object, got {other}",
                at()
            ));
            None
        }
    };
    Document {
        id,
        content,
        score,
        metadata,
    }
}

/// A number, or a decimal string of one.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|x| x.is_finite()),
        _ => None,
    }
}

/// A structured attribute: the value itself, or the JSON a string holds.
fn structured(v: &Value, key: &str, notes: &mut Notes) -> Option<Value> {
    match v {
        Value::String(s) => match serde_json::from_str(s) {
            Ok(v) => Some(v),
            Err(e) => {
                notes.push(format!("`{key}` must be JSON, got {s:?} ({e})"));
                None
            }
        },
        other => Some(other.clone()),
    }
}

/// One chat message.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatMessage {
    /// `user`, `assistant`, `system`, `tool`, … when given.
    pub role: Option<String>,
    /// The text (parts of type `text` joined by a newline).
    pub content: Option<String>,
}

/// The model's input messages, in order; `None` when the span carries none.
pub fn input_messages(span: &Span, notes: &mut Notes) -> Option<Vec<ChatMessage>> {
    flattened_messages(span, "llm.input_messages", notes)
        .or_else(|| genai_messages(span, "gen_ai.input.messages", notes))
        .or_else(|| flattened_genai_messages(span, "gen_ai.input.messages", notes))
        .or_else(|| legacy_messages(span, "gen_ai.prompt", notes))
        .or_else(|| event_messages(span, false))
}

/// The model's output messages (choices), in order; `None` when the span carries none.
pub fn output_messages(span: &Span, notes: &mut Notes) -> Option<Vec<ChatMessage>> {
    flattened_messages(span, "llm.output_messages", notes)
        .or_else(|| genai_messages(span, "gen_ai.output.messages", notes))
        .or_else(|| flattened_genai_messages(span, "gen_ai.output.messages", notes))
        .or_else(|| legacy_messages(span, "gen_ai.completion", notes))
        .or_else(|| event_messages(span, true))
}

fn text_of(v: &Value, key: &str, notes: &mut Notes) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => {
            notes.push(format!("`{key}` must be a string, got {other}"));
            None
        }
    }
}

/// A flattened message being read: role, content, and `contents.{j}` texts by `j`.
type MessageParts = (Option<String>, Option<String>, BTreeMap<usize, String>);

/// OpenInference `llm.{input,output}_messages.{i}.message.{role,content}` (or
/// `message.contents.{j}.message_content.text` joined).
fn flattened_messages(span: &Span, prefix: &str, notes: &mut Notes) -> Option<Vec<ChatMessage>> {
    let head = format!("{prefix}.");
    let mut by_index: BTreeMap<usize, MessageParts> = BTreeMap::new();
    for (key, value) in span.attributes.range_from(&head) {
        let Some(rest) = key.strip_prefix(&head) else {
            break;
        };
        let Some((index, field)) = rest.split_once('.') else {
            continue;
        };
        let Ok(index) = index.parse::<usize>() else {
            continue;
        };
        let entry = by_index.entry(index).or_default();
        match field {
            "message.role" => entry.0 = text_of(value, key, notes),
            "message.content" => entry.1 = text_of(value, key, notes),
            f => {
                if let Some(part) = f
                    .strip_prefix("message.contents.")
                    .and_then(|r| r.strip_suffix(".message_content.text"))
                    .and_then(|j| j.parse::<usize>().ok())
                {
                    if let Some(t) = text_of(value, key, notes) {
                        entry.2.insert(part, t);
                    }
                }
            }
        }
    }
    if by_index.is_empty() {
        return None;
    }
    Some(
        by_index
            .into_values()
            .map(|(role, content, parts)| ChatMessage {
                role,
                content: content.or_else(|| {
                    (!parts.is_empty()).then(|| parts.into_values().collect::<Vec<_>>().join("\n"))
                }),
            })
            .collect(),
    )
}

/// A part of a flattened GenAI message being read: its `type` and `content`.
type GenAiPart = (Option<String>, Option<String>);

/// Current GenAI messages that a store or pipeline flattened into dotted keys, as Phoenix
/// does with a structured (non-string) `gen_ai.input.messages`:
/// `gen_ai.input.messages.{i}.role` and `gen_ai.input.messages.{i}.parts.{j}.{type,content}`
/// (a part without a `type` is read as text, as a part of type `text` is).
fn flattened_genai_messages(
    span: &Span,
    prefix: &str,
    notes: &mut Notes,
) -> Option<Vec<ChatMessage>> {
    let head = format!("{prefix}.");
    let mut by_index: BTreeMap<usize, (Option<String>, BTreeMap<usize, GenAiPart>)> =
        BTreeMap::new();
    for (key, value) in span.attributes.range_from(&head) {
        let Some(rest) = key.strip_prefix(&head) else {
            break;
        };
        let Some((index, field)) = rest.split_once('.') else {
            continue;
        };
        let Ok(index) = index.parse::<usize>() else {
            continue;
        };
        let entry = by_index.entry(index).or_default();
        if field == "role" {
            entry.0 = text_of(value, key, notes);
            continue;
        }
        let Some((part, part_field)) = field
            .strip_prefix("parts.")
            .and_then(|r| r.split_once('.'))
            .and_then(|(j, f)| j.parse::<usize>().ok().map(|j| (j, f)))
        else {
            continue;
        };
        let slot = entry.1.entry(part).or_default();
        match part_field {
            "type" => slot.0 = text_of(value, key, notes),
            "content" => slot.1 = text_of(value, key, notes),
            _ => {}
        }
    }
    if by_index.is_empty() {
        return None;
    }
    Some(
        by_index
            .into_values()
            .map(|(role, parts)| {
                let texts: Vec<String> = parts
                    .into_values()
                    .filter(|(kind, _)| kind.as_deref().is_none_or(|k| k == "text"))
                    .filter_map(|(_, content)| content)
                    .collect();
                ChatMessage {
                    role,
                    content: (!texts.is_empty()).then(|| texts.join("\n")),
                }
            })
            .collect(),
    )
}

/// Current GenAI `gen_ai.{input,output}.messages`: `[{role, parts: [{type, content}]}]`.
fn genai_messages(span: &Span, key: &str, notes: &mut Notes) -> Option<Vec<ChatMessage>> {
    let value = structured(span.attributes.get(key)?, key, notes)?;
    let Value::Array(items) = value else {
        notes.push(format!("`{key}` must be a list of messages, got {value}"));
        return None;
    };
    Some(
        items
            .iter()
            .map(|m| {
                let role = m.get("role").and_then(Value::as_str).map(str::to_string);
                let content = match m.get("parts") {
                    Some(Value::Array(parts)) => {
                        let texts: Vec<&str> = parts
                            .iter()
                            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                            .filter_map(|p| p.get("content").and_then(Value::as_str))
                            .collect();
                        (!texts.is_empty()).then(|| texts.join("\n"))
                    }
                    _ => m.get("content").and_then(Value::as_str).map(str::to_string),
                };
                ChatMessage { role, content }
            })
            .collect(),
    )
}

/// Semconv ≤ 1.36 `gen_ai.prompt.{i}.{role,content}` / `gen_ai.completion.{i}.*`.
fn legacy_messages(span: &Span, prefix: &str, notes: &mut Notes) -> Option<Vec<ChatMessage>> {
    let head = format!("{prefix}.");
    let mut by_index: BTreeMap<usize, ChatMessage> = BTreeMap::new();
    for (key, value) in span.attributes.range_from(&head) {
        let Some(rest) = key.strip_prefix(&head) else {
            break;
        };
        let Some((index, field)) = rest.split_once('.') else {
            continue;
        };
        let Ok(index) = index.parse::<usize>() else {
            continue;
        };
        let m = by_index.entry(index).or_default();
        match field {
            "role" => m.role = text_of(value, key, notes),
            "content" => m.content = text_of(value, key, notes),
            _ => {}
        }
    }
    (!by_index.is_empty()).then(|| by_index.into_values().collect())
}

/// Semconv ≤ 1.36 content events: `gen_ai.{system,user,assistant,tool}.message` (attribute
/// `content`) for the input, `gen_ai.choice` (`message` object or `message.content`) for the
/// output.
fn event_messages(span: &Span, output: bool) -> Option<Vec<ChatMessage>> {
    let mut out = Vec::new();
    for e in &span.events {
        let role = match e.name.as_str() {
            "gen_ai.choice" if output => Some("assistant"),
            "gen_ai.system.message" if !output => Some("system"),
            "gen_ai.user.message" if !output => Some("user"),
            "gen_ai.assistant.message" if !output => Some("assistant"),
            "gen_ai.tool.message" if !output => Some("tool"),
            _ => None,
        };
        let Some(role) = role else { continue };
        let content = e
            .attributes
            .get("content")
            .or_else(|| e.attributes.get("message.content"))
            .or_else(|| e.attributes.get("message").and_then(|m| m.get("content")))
            .and_then(Value::as_str)
            .map(str::to_string);
        out.push(ChatMessage {
            role: Some(role.to_string()),
            content,
        });
    }
    (!out.is_empty()).then_some(out)
}

/// Token counts of a model call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Prompt tokens: `gen_ai.usage.input_tokens`, ≤ 1.36 `gen_ai.usage.prompt_tokens`,
    /// OpenInference `llm.token_count.prompt`.
    pub input: Option<u64>,
    /// Completion tokens: `gen_ai.usage.output_tokens`, `gen_ai.usage.completion_tokens`,
    /// `llm.token_count.completion`.
    pub output: Option<u64>,
    /// `llm.token_count.total`.
    pub total: Option<u64>,
}

/// The span's token counts.
pub fn tokens(span: &Span, notes: &mut Notes) -> Tokens {
    let mut count = |keys: &[&str]| -> Option<u64> {
        let (key, v) = keys
            .iter()
            .find_map(|k| span.attributes.get(k).map(|v| (*k, v)))?;
        match v {
            Value::Number(n) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|x| *x >= 0.0 && x.fract() == 0.0)
                    .map(|x| x as u64)
            }),
            Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        }
        .or_else(|| {
            notes.push(format!("`{key}` must be a whole number of tokens, got {v}"));
            None
        })
    };
    Tokens {
        input: count(&[
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.prompt_tokens",
            "llm.token_count.prompt",
        ]),
        output: count(&[
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.completion_tokens",
            "llm.token_count.completion",
        ]),
        total: count(&["llm.token_count.total"]),
    }
}

/// The model: `gen_ai.response.model`, else `gen_ai.request.model`, else `llm.model_name`
/// (`reranker.model_name` on a reranker).
pub fn model(span: &Span) -> Option<String> {
    [
        "gen_ai.response.model",
        "gen_ai.request.model",
        "llm.model_name",
        "reranker.model_name",
        "embedding.model_name",
    ]
    .iter()
    .find_map(|k| span.str_attr(k))
    .filter(|s| !s.is_empty())
    .map(str::to_string)
}

/// Time to first token in milliseconds, from `gen_ai.response.time_to_first_chunk` (seconds).
pub fn ttft_ms(span: &Span, notes: &mut Notes) -> Option<f64> {
    let key = "gen_ai.response.time_to_first_chunk";
    let v = span.attributes.get(key)?;
    match number(v) {
        Some(s) if s >= 0.0 => Some(s * 1000.0),
        _ => {
            notes.push(format!("`{key}` must be a number of seconds ≥ 0, got {v}"));
            None
        }
    }
}

/// `input.value` / `output.value` as written: text, or (with `*.mime_type =
/// application/json`) the JSON it holds.
#[derive(Debug, Clone, PartialEq)]
pub enum IoValue {
    /// Plain text (the default mime type, `text/plain`).
    Text(String),
    /// A JSON value.
    Json(Value),
}

impl IoValue {
    /// The text itself, a JSON string, or a JSON object's only string field among `question`,
    /// `query`, `input` (`answer`, `output`, `response` for outputs) — `None` otherwise.
    pub fn text(&self, keys: &[&str]) -> Option<&str> {
        match self {
            IoValue::Text(s) => Some(s),
            IoValue::Json(Value::String(s)) => Some(s),
            IoValue::Json(Value::Object(o)) => keys.iter().find_map(|k| o.get(*k)?.as_str()),
            IoValue::Json(_) => None,
        }
    }
}

/// `input.value` (`which = "input"`) or `output.value` (`"output"`).
pub fn io_value(span: &Span, which: &str, notes: &mut Notes) -> Option<IoValue> {
    let key = format!("{which}.value");
    let value = span.attributes.get(&key)?;
    let json = span
        .str_attr(&format!("{which}.mime_type"))
        .is_some_and(|m| m.eq_ignore_ascii_case("application/json"));
    match value {
        Value::Null => None,
        Value::String(s) if json => match serde_json::from_str(s) {
            Ok(v) => Some(IoValue::Json(v)),
            Err(e) => {
                notes.push(format!(
                    "`{key}` is declared application/json but is not JSON ({e})"
                ));
                Some(IoValue::Text(s.clone()))
            }
        },
        Value::String(s) => Some(IoValue::Text(s.clone())),
        other => Some(IoValue::Json(other.clone())),
    }
}

/// The query a retrieval ran: `gen_ai.retrieval.query.text`, else its `input.value` (text or a
/// JSON string).
pub fn retrieval_query(span: &Span, notes: &mut Notes) -> Option<String> {
    if let Some(q) = span.attributes.get("gen_ai.retrieval.query.text") {
        return text_of(q, "gen_ai.retrieval.query.text", notes);
    }
    io_value(span, "input", notes)?
        .text(&["query", "question", "input"])
        .map(str::to_string)
}

/// The reranker's query (`reranker.query`, else its `input.value`).
pub fn rerank_query(span: &Span, notes: &mut Notes) -> Option<String> {
    match span.attributes.get("reranker.query") {
        Some(q) => text_of(q, "reranker.query", notes),
        None => retrieval_query(span, notes),
    }
}

/// Segments a span carries: its `metadata` (a JSON object, or a JSON string of one) merged
/// with `session_id` (`session.id`), `user_id` (`user.id`) and `tags` (`tag.tags`).
pub fn segments(span: &Span, notes: &mut Notes) -> Map<String, Value> {
    let mut out = Map::new();
    if let Some(v) = span.attributes.get("metadata") {
        match structured(v, "metadata", notes) {
            Some(Value::Object(m)) => out.extend(m),
            Some(other) => notes.push(format!("`metadata` must be a JSON object, got {other}")),
            None => {}
        }
    }
    for (key, name) in [("session.id", "session_id"), ("user.id", "user_id")] {
        if let Some(v) = span.attributes.get(key) {
            match v {
                Value::String(_) | Value::Number(_) => {
                    out.insert(name.to_string(), v.clone());
                }
                other => notes.push(format!("`{key}` must be a string, got {other}")),
            }
        }
    }
    if let Some(v) = span.attributes.get("tag.tags") {
        match structured(v, "tag.tags", notes) {
            Some(Value::Array(tags)) if tags.iter().all(Value::is_string) => {
                out.insert("tags".into(), Value::Array(tags));
            }
            Some(other) => notes.push(format!("`tag.tags` must be a list of strings, got {other}")),
            None => {}
        }
    }
    out
}

/// Feedback on the span: one [`Feedback`] per `gen_ai.evaluation.result` event.
pub fn feedback(span: &Span, notes: &mut Notes) -> Vec<Feedback> {
    let mut out = Vec::new();
    for e in span
        .events
        .iter()
        .filter(|e| e.name == "gen_ai.evaluation.result")
    {
        let Some(name) = e
            .attributes
            .get("gen_ai.evaluation.name")
            .and_then(Value::as_str)
        else {
            notes.push(
                "a `gen_ai.evaluation.result` event without a string `gen_ai.evaluation.name`"
                    .into(),
            );
            continue;
        };
        let value = match (
            e.attributes.get("gen_ai.evaluation.score.value"),
            e.attributes.get("gen_ai.evaluation.score.label"),
        ) {
            (Some(v @ Value::Number(_)), _) => v.clone(),
            (_, Some(l @ Value::String(_))) => l.clone(),
            (Some(v), _) => {
                notes.push(format!(
                    "`gen_ai.evaluation.score.value` of `{name}` must be a number, got {v}"
                ));
                continue;
            }
            (None, _) => {
                notes.push(format!(
                    "the evaluation `{name}` has neither a score value nor a label"
                ));
                continue;
            }
        };
        out.push(Feedback {
            name: name.to_string(),
            value,
            comment: e
                .attributes
                .get("gen_ai.evaluation.explanation")
                .and_then(Value::as_str)
                .map(str::to_string),
            source: None,
        });
    }
    out
}

/// The span's error, when its status is `ERROR`: the status message, else the first
/// `exception` event's `exception.message` (or `exception.type`), else empty.
pub fn error_message(span: &Span) -> Option<String> {
    let status = span.status.as_ref()?;
    if status.code != StatusCode::Error {
        return None;
    }
    if !status.message.is_empty() {
        return Some(status.message.clone());
    }
    let exception = span.events.iter().find(|e| e.name == "exception");
    Some(
        exception
            .and_then(|e| {
                e.attributes
                    .get("exception.message")
                    .or_else(|| e.attributes.get("exception.type"))
                    .and_then(Value::as_str)
            })
            .unwrap_or("")
            .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::span::{SpanEvent, SpanStatus};
    use serde_json::json;

    fn span(attrs: Value) -> Span {
        Span {
            attributes: attrs
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn roles_from_both_conventions() {
        assert_eq!(
            role(&span(json!({"openinference.span.kind": "RETRIEVER"}))),
            Role::Retriever
        );
        assert_eq!(
            role(&span(json!({"openinference.span.kind": "reranker"}))),
            Role::Reranker
        );
        assert_eq!(
            role(&span(json!({"gen_ai.operation.name": "chat"}))),
            Role::Llm
        );
        assert_eq!(
            role(&span(json!({"gen_ai.operation.name": "retrieval"}))),
            Role::Retriever
        );
        assert_eq!(role(&span(json!({"gen_ai.system": "openai"}))), Role::Llm);
        assert_eq!(
            role(&span(json!({"gen_ai.operation.name": "embeddings"}))),
            Role::Embedding
        );
        assert_eq!(role(&span(json!({"http.method": "GET"}))), Role::Unknown);
        assert_eq!(Role::Llm.stage(), Some("generate"));
    }

    #[test]
    fn openinference_documents_in_index_order() {
        let s = span(json!({
            "retrieval.documents.10.document.id": "d11",
            "retrieval.documents.0.document.id": "d1",
            "retrieval.documents.0.document.content": "first",
            "retrieval.documents.0.document.score": 0.9,
            "retrieval.documents.0.document.metadata": "{\"tenant\": \"acme\"}",
            "retrieval.documents.1.document.id": 7,
            "retrieval.documents.1.document.score": "high",
        }));
        let mut notes = Notes::new();
        let docs = openinference_documents(&s, "retrieval.documents", &mut notes).unwrap();
        let ids: Vec<_> = docs.iter().map(|d| d.id.clone().unwrap()).collect();
        assert_eq!(ids, ["d1", "7", "d11"]);
        assert_eq!(docs[0].content.as_deref(), Some("first"));
        assert_eq!(docs[0].metadata.as_ref().unwrap()["tenant"], json!("acme"));
        assert_eq!(docs[1].score, None);
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].contains("retrieval.documents.1.document.score"),
            "{notes:?}"
        );
        assert_eq!(
            openinference_documents(&s, "reranker.output_documents", &mut notes),
            None
        );
    }

    #[test]
    fn genai_documents_structured_or_json() {
        let s = span(
            json!({"gen_ai.retrieval.documents": "[{\"id\": \"doc_1\", \"score\": 0.95}, {\"id\": \"doc_2\", \"score\": 0.5, \"content\": \"x\"}]"}),
        );
        let mut notes = Notes::new();
        let docs = genai_documents(&s, &mut notes).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].score, Some(0.95));
        assert_eq!(docs[1].content.as_deref(), Some("x"));
        let bad = span(json!({"gen_ai.retrieval.documents": "not json"}));
        assert_eq!(genai_documents(&bad, &mut notes), None);
        assert_eq!(notes.len(), 1);
    }

    #[test]
    fn flattened_genai_messages_are_read_as_the_structured_ones() {
        let flat = span(json!({
            "gen_ai.input.messages.0.role": "system",
            "gen_ai.input.messages.0.parts.0.type": "text",
            "gen_ai.input.messages.0.parts.0.content": "be brief",
            "gen_ai.input.messages.1.role": "user",
            "gen_ai.input.messages.1.parts.0.type": "text",
            "gen_ai.input.messages.1.parts.0.content": "What is the standard shipping time?",
            "gen_ai.input.messages.1.parts.1.type": "image",
            "gen_ai.input.messages.1.parts.1.content": "ignored",
            "gen_ai.input.messages.1.parts.2.content": "second line",
        }));
        let mut notes = Notes::new();
        let input = input_messages(&flat, &mut notes).unwrap();
        assert_eq!(
            input,
            vec![
                ChatMessage {
                    role: Some("system".into()),
                    content: Some("be brief".into())
                },
                ChatMessage {
                    role: Some("user".into()),
                    content: Some("What is the standard shipping time?\nsecond line".into())
                },
            ]
        );
        assert!(notes.is_empty(), "{notes:?}");
        let structured = span(json!({
            "gen_ai.input.messages": [
                {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
                {"role": "user", "parts": [
                    {"type": "text", "content": "What is the standard shipping time?"},
                    {"type": "text", "content": "second line"}]},
            ],
        }));
        assert_eq!(input_messages(&structured, &mut notes).unwrap(), input);
    }

    #[test]
    fn messages_from_every_form() {
        let mut notes = Notes::new();
        let oi = span(json!({
            "llm.input_messages.0.message.role": "system",
            "llm.input_messages.0.message.content": "be brief",
            "llm.input_messages.1.message.role": "user",
            "llm.input_messages.1.message.contents.0.message_content.text": "hi",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "hello",
        }));
        let input = input_messages(&oi, &mut notes).unwrap();
        assert_eq!(input[1].content.as_deref(), Some("hi"));
        assert_eq!(
            output_messages(&oi, &mut notes).unwrap()[0]
                .content
                .as_deref(),
            Some("hello")
        );
        let current = span(json!({
            "gen_ai.output.messages": "[{\"role\": \"assistant\", \"parts\": [{\"type\": \"text\", \"content\": \"14 days\"}], \"finish_reason\": \"stop\"}]"
        }));
        assert_eq!(
            output_messages(&current, &mut notes).unwrap()[0]
                .content
                .as_deref(),
            Some("14 days")
        );
        let legacy = span(
            json!({"gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "ok"}),
        );
        assert_eq!(
            output_messages(&legacy, &mut notes).unwrap()[0]
                .content
                .as_deref(),
            Some("ok")
        );
        let mut events = span(json!({}));
        events.events.push(SpanEvent {
            name: "gen_ai.choice".into(),
            time_unix_nano: None,
            attributes: [("message".to_string(), json!({"content": "from event"}))].into(),
        });
        assert_eq!(
            output_messages(&events, &mut notes).unwrap()[0]
                .content
                .as_deref(),
            Some("from event")
        );
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn tokens_model_ttft_and_wrong_types() {
        let mut notes = Notes::new();
        let s = span(json!({
            "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": "30",
            "gen_ai.response.model": "gpt-4o-mini-2024", "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.response.time_to_first_chunk": 0.25,
        }));
        assert_eq!(
            tokens(&s, &mut notes),
            Tokens {
                input: Some(120),
                output: Some(30),
                total: None
            }
        );
        assert_eq!(model(&s).as_deref(), Some("gpt-4o-mini-2024"));
        assert_eq!(ttft_ms(&s, &mut notes), Some(250.0));
        let old =
            span(json!({"gen_ai.usage.prompt_tokens": 5, "llm.token_count.completion": "many"}));
        let t = tokens(&old, &mut notes);
        assert_eq!((t.input, t.output), (Some(5), None));
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("llm.token_count.completion"));
    }

    #[test]
    fn io_values_segments_feedback_errors() {
        let mut notes = Notes::new();
        let s = span(json!({
            "input.value": "{\"question\": \"how long?\", \"tenant\": \"acme\"}",
            "input.mime_type": "application/json",
            "output.value": "14 days",
            "metadata": "{\"intent\": \"refund\"}",
            "session.id": "s1", "user.id": "u1", "tag.tags": ["beta"],
        }));
        let input = io_value(&s, "input", &mut notes).unwrap();
        assert_eq!(input.text(&["question"]), Some("how long?"));
        assert_eq!(
            io_value(&s, "output", &mut notes),
            Some(IoValue::Text("14 days".into()))
        );
        let seg = segments(&s, &mut notes);
        assert_eq!(
            Value::Object(seg),
            json!({"intent": "refund", "session_id": "s1", "user_id": "u1", "tags": ["beta"]})
        );
        let mut f = span(json!({}));
        f.events.push(SpanEvent {
            name: "gen_ai.evaluation.result".into(),
            time_unix_nano: None,
            attributes: [
                ("gen_ai.evaluation.name".to_string(), json!("thumbs")),
                ("gen_ai.evaluation.score.value".to_string(), json!(0)),
                (
                    "gen_ai.evaluation.explanation".to_string(),
                    json!("wrong policy"),
                ),
            ]
            .into(),
        });
        let fb = feedback(&f, &mut notes);
        assert_eq!(fb[0].name, "thumbs");
        assert!(fb[0].is_negative());
        assert_eq!(fb[0].comment.as_deref(), Some("wrong policy"));
        f.status = Some(SpanStatus {
            code: StatusCode::Error,
            message: String::new(),
        });
        f.events.push(SpanEvent {
            name: "exception".into(),
            time_unix_nano: None,
            attributes: [("exception.message".to_string(), json!("timeout"))].into(),
        });
        assert_eq!(error_message(&f).as_deref(), Some("timeout"));
        assert!(notes.is_empty(), "{notes:?}");
    }
}
