//! Peer replies: a system's replies over HTTP, judge replies in the OpenAI and Anthropic wire
//! formats, and the JSON inside a judge's text.
//!
//! The HTTP targets run the real clients (`oloproof_connect::HttpConnection`,
//! `oloproof_judge::JudgeClient`) against a loopback server ([`crate::server`]) that answers
//! each request with the next line of the input (`HTTP NNN BODY` sets the status).
//!
//! Worker processes: the worker connector (`oloproof_connect::WorkerConnection`) owns a child
//! process and cannot be driven in-process, so `system_reply` fuzzes what it shares with the
//! HTTP connector — the `hello` reply as `SystemInfo` and every stage's `ok` value through
//! `connect::reply` (retrieve, count_tokens, generate, rerank), i.e. everything after the
//! worker's line framing (`serde_json::from_str` of one stdout line and its `id`/`ok`/`error`
//! lookups, which it does exactly as the HTTP connector does for a body).
//!
//! Asserted for `system_reply`: every stage error names the stage that was called and is of
//! kind `protocol` (a reply that does not fit) or `raised` (an `error` reply), with a message;
//! never `timeout` or `crash` (the server always answers). An accepted
//! retrieval holds at most `depth` candidates; accepted token counts are one per passage.
//!
//! Asserted for `judge_openai` / `judge_anthropic`: an accepted judgment satisfies the
//! template's schema; a rejection is `http` (naming the status served), `protocol`,
//! `invalid_output` or `truncated` (carrying the raw reply), with at least one attempt —
//! never `timeout`, `settings` or `transport` (the server always answers). `judge_openai`
//! also fuzzes the embeddings reply: an accepted one has one
//! vector per text.
//!
//! Asserted for `judge_text`: `schema::parse_reply` either returns JSON or an error message;
//! the schema check and the id checks of every template never panic, and what passes
//! `check_ids`/`check_attribution` can be read by `flags_by_id`/`attribution_by_id`.

use std::time::Duration;

use oloproof_connect::{HttpConnection, HttpOptions, SystemConnection};
use oloproof_core::context::ContextPassage;
use oloproof_core::passage::Passage;
use oloproof_core::trace::{ErrorKind, StageError};
use oloproof_judge::{
    schema, templates, JudgeClient, JudgeError, JudgeSettings, NoCache, Provider,
};
use serde_json::{json, Map, Value};

use crate::server;

fn passage(id: &str) -> Passage {
    Passage {
        doc_id: id.into(),
        chunk_id: None,
        score: Some(1.0),
        text: Some(format!("text of {id}")),
        metadata: None,
    }
}

fn stage_error(e: &StageError, op: &str) {
    crate::check::note(&format!("{op}: {:?}: {}", e.kind, e.message));
    assert_eq!(e.stage, op, "error of another stage: {e:?}");
    // The system answered: whatever it said is a protocol error or an error it raised.
    assert!(
        matches!(e.kind, ErrorKind::Protocol | ErrorKind::Raised),
        "unexpected error kind: {e:?}"
    );
    assert!(
        !e.message.is_empty() || e.kind == ErrorKind::Raised,
        "no message: {e:?}"
    );
}

/// `system_reply`: line 1 answers `hello`, then one line each for `retrieve` (depth 3),
/// `count_tokens` (2 passages), `generate` and `rerank`.
pub fn system_reply(data: &[u8]) {
    let replies = server::replies(data);
    let n = replies.len();
    server::script(replies);
    let options = HttpOptions {
        url: server::url(),
        timeout: Duration::from_secs(10),
        params: Map::new(),
    };
    let mut conn = match HttpConnection::connect(options) {
        Ok(c) => c,
        Err(e) => return stage_error(&e, "hello"),
    };
    let _ = conn.info();
    let mut input = Map::new();
    input.insert("question".into(), json!("How long is the refund window?"));
    let passages = vec![passage("a"), passage("b")];
    if n > 1 {
        match conn.retrieve(&input, 3) {
            Ok(r) => assert!(r.candidates.len() <= 3, "more than depth candidates"),
            Err(e) => stage_error(&e, "retrieve"),
        }
    }
    if n > 2 {
        match conn.count_tokens(&passages) {
            Ok(c) => assert_eq!(c.len(), passages.len()),
            Err(e) => stage_error(&e, "count_tokens"),
        }
    }
    if n > 3 {
        let context: Vec<ContextPassage> = passages
            .iter()
            .enumerate()
            .map(|(i, p)| ContextPassage {
                position: Some(i + 1),
                tokens: None,
                passage: p.clone(),
            })
            .collect();
        if let Err(e) = conn.generate(&input, &context) {
            stage_error(&e, "generate");
        }
    }
    if n > 4 {
        if let Err(e) = conn.rerank("rerank", &input, &passages) {
            stage_error(&e, "rerank");
        }
    }
}

fn judge_error(e: &JudgeError, served: &[u16]) {
    let message = e.to_string();
    crate::check::note(&message);
    assert!(!message.is_empty());
    match e {
        JudgeError::Http { status, .. } => {
            assert!(
                served.contains(status),
                "status {status} was never served: {message}"
            )
        }
        JudgeError::Protocol { .. } => {}
        JudgeError::InvalidOutput { .. } | JudgeError::Truncated { .. } => {
            assert!(e.raw().is_some(), "no raw reply: {message}")
        }
        other => panic!("unexpected judge error ({}): {other}", other.kind()),
    }
    if !matches!(e, JudgeError::Protocol { .. }) {
        assert!(e.attempts() >= 1, "no attempt: {message}");
    }
}

fn judge(provider: Provider, data: &[u8]) {
    let replies = server::replies(data);
    let mut served: Vec<u16> = replies.iter().map(|r| r.status).collect();
    served.push(404);
    server::script(replies);
    let mut settings = JudgeSettings::new(provider, &server::url(), "fuzz-model", None);
    settings.max_retries = 1;
    settings.timeout_s = Some(10.0);
    let client = JudgeClient::new("fuzz", settings)
        .expect("valid settings")
        .with_backoff(Duration::ZERO, Duration::ZERO);
    let request = templates::groundedness(
        "How long is the refund window?",
        &["Refunds are accepted within 14 days.".to_string()],
        "14 days.",
        0,
    );
    match client.judge(&NoCache, &request, &|_| Ok(())) {
        Ok(record) => {
            let valid = schema::validate(&request.schema, &record.parsed);
            assert!(
                valid.is_ok(),
                "accepted a judgment its schema refuses: {valid:?}"
            );
        }
        Err(e) => judge_error(&e, &served),
    }
    if provider == Provider::Openai {
        let texts = vec!["first text".to_string(), "second text".to_string()];
        match client.embed(&texts) {
            Ok(v) => assert_eq!(v.len(), texts.len(), "one vector per text"),
            Err(e) => judge_error(&e, &served),
        }
    }
}

/// `judge_openai`: Chat Completions replies (a judgment, its repair or retry), then an
/// embeddings reply.
pub fn judge_openai(data: &[u8]) {
    judge(Provider::Openai, data);
}

/// `judge_anthropic`: Messages API replies (a judgment, its repair or retry).
pub fn judge_anthropic(data: &[u8]) {
    judge(Provider::Anthropic, data);
}

/// `judge_text`: the text of a judge's reply, parsed as the client parses it and checked
/// against every template's schema and id checks (3 items).
pub fn judge_text(data: &[u8]) {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    let parsed: Value = match schema::parse_reply(raw) {
        Ok(v) => v,
        Err(message) => {
            crate::check::note(&message);
            assert!(!message.message().is_empty());
            return;
        }
    };
    let three: Vec<String> = ["one", "two", "three"].map(String::from).to_vec();
    let requests = [
        templates::groundedness("q", &three, "a", 0),
        templates::rubric("q", "a", None, 0),
        templates::pairwise("q", "a", "b", 0),
        templates::claim_extraction("q", "a", 0),
        templates::claim_verification(&three, &three, 0),
        templates::question_generation("a", &three, 3, 0),
        templates::context_precision("q", "a", true, &three, 0),
        templates::context_recall("q", &three, "r", 0),
        templates::claim_attribution(&three, &three, 0),
        templates::question_synthesis("factoid", &three, 0),
    ];
    for r in &requests {
        let _ = schema::validate(&r.schema, &parsed);
    }
    for key in ["verdicts", "claims", "statements", "items"] {
        if templates::check_ids(&parsed, key, 3).is_ok() {
            assert_eq!(templates::flags_by_id(&parsed, key, "verdict", 3).len(), 3);
        }
    }
    if templates::check_attribution(&parsed, 3, 3).is_ok() {
        assert_eq!(templates::attribution_by_id(&parsed, 3).len(), 3);
    }
}
