//! The HTTP connector: `http: URL` in `oloproof.yaml`.
//!
//! Each request of the worker protocol (`docs/protocol.md`) is POSTed as its JSON object to the
//! URL, and the response body is the protocol's response object (`{"id", "ok"}` or
//! `{"id", "error"}`). The system is stateless from Oloproof's side: `hello` is sent once per
//! connection, and every worker thread holds its own connection, so `workers` bounds the
//! number of requests in flight. Plain `http://` only in this build.

use std::time::Duration;

use oloproof_core::context::ContextPassage;
use oloproof_core::passage::{Passage, Retrieval};
use oloproof_core::system::{SystemConnection, SystemInfo};
use oloproof_core::trace::{ErrorKind, StageError};
use serde_json::{json, Map, Value};

use crate::worker::PROTOCOL_VERSION;
use crate::{reply, MAX_RESPONSE_BYTES};

/// Where and how to reach an HTTP system.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The endpoint every request is POSTed to.
    pub url: String,
    /// Longest a single request may take.
    pub timeout: Duration,
    /// Parameters sent in `hello` (the config's overrides).
    pub params: Map<String, Value>,
}

/// A connection to an HTTP system.
pub struct HttpConnection {
    options: HttpOptions,
    agent: ureq::Agent,
    info: SystemInfo,
    next_id: u64,
}

fn error(stage: &str, kind: ErrorKind, message: String) -> StageError {
    StageError {
        stage: stage.into(),
        kind,
        error_type: None,
        message,
        traceback: None,
        stderr_tail: Vec::new(),
    }
}

fn excerpt(s: &str) -> String {
    reply::excerpt(s, 300)
}

impl HttpConnection {
    /// Connects (sends `hello`).
    pub fn connect(options: HttpOptions) -> Result<Self, StageError> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(options.timeout))
            .http_status_as_error(false)
            .build()
            .into();
        let mut conn = HttpConnection {
            options,
            agent,
            info: SystemInfo {
                protocol: PROTOCOL_VERSION,
                name: String::new(),
                version: String::new(),
                defaults: Map::new(),
                ops: Vec::new(),
                lanes: Vec::new(),
            },
            next_id: 1,
        };
        let reply = conn.request(
            "hello",
            json!({"protocol": PROTOCOL_VERSION, "params": conn.options.params}),
        )?;
        conn.info = serde_json::from_value(reply.clone()).map_err(|e| {
            error(
                "hello",
                ErrorKind::Protocol,
                format!("bad hello reply ({e}): {}", excerpt(&reply.to_string())),
            )
        })?;
        if conn.info.protocol != PROTOCOL_VERSION {
            return Err(error(
                "hello",
                ErrorKind::Protocol,
                format!(
                    "the system speaks protocol {}, this oloproof speaks {PROTOCOL_VERSION}",
                    conn.info.protocol
                ),
            ));
        }
        Ok(conn)
    }

    fn request(&mut self, op: &str, payload: Value) -> Result<Value, StageError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut body = match payload {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        body.insert("id".into(), json!(id));
        body.insert("op".into(), json!(op));
        let url = &self.options.url;
        let response = self.agent.post(url).send_json(Value::Object(body));
        let mut response = match response {
            Ok(r) => r,
            Err(ureq::Error::Timeout(_)) => {
                return Err(error(
                    op,
                    ErrorKind::Timeout,
                    format!(
                        "no response from {url} within {:.1}s",
                        self.options.timeout.as_secs_f64()
                    ),
                ))
            }
            // The server answered, but not with an HTTP response we can use (a bare 1xx, a
            // redirect without `Location`, oversized headers): the system broke the protocol,
            // it did not crash (found by fuzzing).
            Err(
                e @ (ureq::Error::Protocol(_)
                | ureq::Error::RedirectFailed
                | ureq::Error::TooManyRedirects
                | ureq::Error::LargeResponseHeader(..)),
            ) => {
                return Err(error(
                    op,
                    ErrorKind::Protocol,
                    format!("{url} answered with a response that is not usable HTTP: {e}"),
                ))
            }
            Err(e) => {
                return Err(error(
                    op,
                    ErrorKind::Crash,
                    format!("cannot reach {url}: {e}"),
                ))
            }
        };
        let status = response.status();
        let content_type = response
            .headers()
            .get("content-type")
            // A content type that is not visible ASCII is shown as "no content type": it only
            // decorates the message of a reply that is already being rejected.
            .and_then(|v| v.to_str().ok())
            .unwrap_or("no content type")
            .to_string();
        // Bytes, then text: a body that is not UTF-8 arrived whole, so the system answered
        // (a protocol error), it did not crash.
        let bytes = response
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE_BYTES as u64)
            .read_to_vec()
            .map_err(|e| self.body_error(op, status, e))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            error(
                op,
                ErrorKind::Protocol,
                format!(
                    "{url} answered HTTP {status} ({content_type}) with a body that is not UTF-8 \
                     (invalid byte 0x{:02x} at offset {at}); protocol responses are UTF-8 JSON",
                    e.as_bytes().get(at).copied().unwrap_or(0)
                ),
            )
        })?;
        let value: Value = serde_json::from_str(&text).map_err(|_| {
            let shown = text.split_whitespace().collect::<Vec<_>>().join(" ");
            error(
                op,
                ErrorKind::Protocol,
                format!(
                    "{url} answered HTTP {status} ({content_type}) with a body that is not a \
                     protocol response (JSON {{\"id\", \"ok\"}} or {{\"id\", \"error\"}}); is \
                     the system itself answering at this URL? The body: {}",
                    excerpt(&shown)
                ),
            )
        })?;
        if let Some(ok) = value.get("ok") {
            return Ok(ok.clone());
        }
        if let Some(err) = value.get("error") {
            let field = |k: &str| err.get(k).and_then(Value::as_str).map(str::to_string);
            return Err(StageError {
                stage: op.into(),
                kind: ErrorKind::Raised,
                error_type: field("type"),
                message: field("message").unwrap_or_else(|| err.to_string()),
                traceback: field("traceback"),
                stderr_tail: Vec::new(),
            });
        }
        Err(error(
            op,
            ErrorKind::Protocol,
            format!(
                "{url} answered HTTP {status} without `ok` or `error`: {}",
                excerpt(&text)
            ),
        ))
    }
}

impl HttpConnection {
    /// Why a response body could not be read: too long, too slow, or cut off.
    fn body_error(&self, op: &str, status: ureq::http::StatusCode, e: ureq::Error) -> StageError {
        let url = &self.options.url;
        match e {
            ureq::Error::BodyExceedsLimit(limit) => error(
                op,
                ErrorKind::Protocol,
                format!(
                    "{url} answered HTTP {status} with a body of more than {limit} bytes, the most \
                     a response may have; return less from `{op}` (fewer or shorter passages, a \
                     shorter answer)"
                ),
            ),
            ureq::Error::Timeout(_) => error(
                op,
                ErrorKind::Timeout,
                format!(
                    "{url} answered HTTP {status} but did not finish its body within {:.1}s",
                    self.options.timeout.as_secs_f64()
                ),
            ),
            other => error(
                op,
                ErrorKind::Crash,
                format!(
                    "{url} answered HTTP {status}, then the connection failed before the end of \
                     the body ({other}); did the system crash or close the connection early?"
                ),
            ),
        }
    }
}

impl SystemConnection for HttpConnection {
    fn info(&self) -> &SystemInfo {
        &self.info
    }

    fn retrieve(
        &mut self,
        input: &Map<String, Value>,
        depth: usize,
    ) -> Result<Retrieval, StageError> {
        let reply = self.request("retrieve", json!({"input": input, "depth": depth}))?;
        reply::retrieval(&reply, depth)
            .map_err(|e| error("retrieve", ErrorKind::Protocol, e.to_string()))
    }

    fn count_tokens(&mut self, passages: &[Passage]) -> Result<Vec<usize>, StageError> {
        if passages.is_empty() {
            return Ok(Vec::new());
        }
        let reply = self.request("count_tokens", json!({"passages": passages}))?;
        reply::token_counts(reply, passages.len())
            .map_err(|e| error("count_tokens", ErrorKind::Protocol, e.to_string()))
    }

    fn generate(
        &mut self,
        input: &Map<String, Value>,
        context: &[ContextPassage],
    ) -> Result<Map<String, Value>, StageError> {
        let reply = self.request("generate", json!({"input": input, "context": context}))?;
        reply::generation(reply).map_err(|e| error("generate", ErrorKind::Protocol, e.to_string()))
    }

    fn rerank(
        &mut self,
        function: &str,
        input: &Map<String, Value>,
        candidates: &[Passage],
    ) -> Result<Vec<Passage>, StageError> {
        let reply = self.request(
            "rerank",
            json!({"function": function, "input": input, "candidates": candidates}),
        )?;
        reply::reranked(reply).map_err(|e| error("rerank", ErrorKind::Protocol, e.to_string()))
    }

    fn retrieve_with(
        &mut self,
        input: &Map<String, Value>,
        depth: usize,
        request: oloproof_core::system::RetrieveRequest<'_>,
    ) -> Result<Retrieval, StageError> {
        let reply = self.request(
            "retrieve",
            serde_json::to_value(reply::RetrieveBody::new(input, depth, request))
                .map_err(|e| error("retrieve", ErrorKind::Protocol, e.to_string()))?,
        )?;
        reply::retrieval(&reply, depth)
            .map_err(|e| error("retrieve", ErrorKind::Protocol, e.to_string()))
    }

    fn rewrite(
        &mut self,
        input: &Map<String, Value>,
    ) -> Result<oloproof_core::pipeline::Rewrite, StageError> {
        let reply = self.request("rewrite", json!({"input": input}))?;
        reply::rewrite(reply).map_err(|e| error("rewrite", ErrorKind::Protocol, e.to_string()))
    }

    fn rerank_stage(
        &mut self,
        input: &Map<String, Value>,
        candidates: &[Passage],
    ) -> Result<(Vec<Passage>, Option<oloproof_core::pipeline::Usage>), StageError> {
        let reply = self.request("rerank", json!({"input": input, "candidates": candidates}))?;
        reply::rerank_stage(reply, candidates)
            .map_err(|e| error("rerank", ErrorKind::Protocol, e.to_string()))
    }

    fn fuse(
        &mut self,
        input: &Map<String, Value>,
        lists: &[oloproof_core::pipeline::LaneRetrieval],
    ) -> Result<Vec<Passage>, StageError> {
        let reply = self.request("fuse", reply::fuse_request(input, lists))?;
        reply::fused(reply).map_err(|e| error("fuse", ErrorKind::Protocol, e.to_string()))
    }

    fn take_stderr(&mut self) -> Vec<String> {
        Vec::new()
    }
}
