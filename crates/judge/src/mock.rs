//! A scripted judge server for tests: a real HTTP/1.1 server on `127.0.0.1` that speaks the
//! OpenAI chat-completions and embeddings wire formats and the Anthropic messages format.
//!
//! Chat and message requests are answered from a queue of [`MockReply`] values (content, 429
//! with `Retry-After`, 5xx with the provider's error body, a delay, truncated JSON), then from
//! an optional responder function, else with a 500 saying the script ran out. Embedding
//! requests are answered from their own queue, else with deterministic vectors derived from
//! the text (equal texts give equal vectors). Every request is recorded (path, headers, body),
//! so tests can assert what was sent, or that a cache hit sent nothing.
//!
//! ```
//! use oloproof_judge::mock::{MockReply, MockServer};
//! let server = MockServer::start();
//! server.push(MockReply::json(serde_json::json!({"grounded": 1, "reason": "ok"})));
//! assert!(server.base_url().starts_with("http://127.0.0.1:") && server.base_url().ends_with("/v1"));
//! ```

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};

use crate::request::Usage;

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum MockReply {
    /// A successful reply whose content is `text` (OpenAI: the message content; Anthropic: the
    /// tool call's input when `text` is a JSON object and the request offered a tool, else a
    /// text block).
    Content {
        /// The reply text.
        text: String,
        /// Usage reported.
        usage: Usage,
        /// Report `finish_reason: length` / `stop_reason: max_tokens`.
        truncated: bool,
    },
    /// HTTP 429 with the provider's rate-limit error body and, if given, `Retry-After`.
    RateLimited {
        /// The `Retry-After` header value.
        retry_after: Option<String>,
    },
    /// An error status (500, 503, 529, 400, 401…) with the provider's error body.
    Error {
        /// The status.
        status: u16,
        /// The error message in the body.
        message: String,
    },
    /// Wait, then answer with the inner reply (a client that timed out will not read it).
    Delay {
        /// How long to wait.
        delay: Duration,
        /// The reply after the wait.
        then: Box<MockReply>,
    },
    /// For the embeddings queue: these vectors, one per input.
    Embeddings(Vec<Vec<f32>>),
    /// The inner (content) reply, whose first word-or-number token after the first occurrence
    /// of `after` in the text gets `top` as its `top_logprobs` (token, log-probability) when
    /// the request asks for log-probabilities (OpenAI only).
    WithLogprobs {
        /// The reply.
        reply: Box<MockReply>,
        /// The text after which the scripted token comes, e.g. `"score":`.
        after: String,
        /// The alternatives and their log-probabilities, most likely first.
        top: Vec<(String, f64)>,
    },
}

impl MockReply {
    /// Usage reported by the convenience constructors.
    pub const DEFAULT_USAGE: Usage = Usage {
        input_tokens: 100,
        output_tokens: 20,
    };

    /// A successful reply with `value` as its JSON content.
    pub fn json(value: Value) -> Self {
        MockReply::Content {
            text: value.to_string(),
            usage: Self::DEFAULT_USAGE,
            truncated: false,
        }
    }
    /// A successful reply with arbitrary text content (e.g. broken JSON).
    pub fn text(text: &str) -> Self {
        MockReply::Content {
            text: text.into(),
            usage: Self::DEFAULT_USAGE,
            truncated: false,
        }
    }
    /// A reply cut at `max_tokens`: the first `keep` characters of `value`'s JSON text.
    pub fn truncated(value: Value, keep: usize) -> Self {
        let text: String = value.to_string().chars().take(keep).collect();
        MockReply::Content {
            text,
            usage: Self::DEFAULT_USAGE,
            truncated: true,
        }
    }
    /// A 429 with `Retry-After: retry_after`.
    pub fn rate_limited(retry_after: &str) -> Self {
        MockReply::RateLimited {
            retry_after: Some(retry_after.into()),
        }
    }
    /// An error status with a provider error body.
    pub fn error(status: u16, message: &str) -> Self {
        MockReply::Error {
            status,
            message: message.into(),
        }
    }
    /// `then` after `delay`.
    pub fn delay(delay: Duration, then: MockReply) -> Self {
        MockReply::Delay {
            delay,
            then: Box::new(then),
        }
    }
    /// This reply with scripted `top_logprobs` for the token after `after` (see
    /// [`MockReply::WithLogprobs`]); `top` holds (token, probability) pairs, turned into
    /// log-probabilities.
    pub fn with_top_logprobs(self, after: &str, top: &[(&str, f64)]) -> Self {
        MockReply::WithLogprobs {
            reply: Box::new(self),
            after: after.into(),
            top: top
                .iter()
                .map(|(t, p)| ((*t).to_string(), p.ln()))
                .collect(),
        }
    }

    /// The same reply with another usage (for content replies).
    pub fn with_usage(self, input_tokens: u64, output_tokens: u64) -> Self {
        match self {
            MockReply::Content {
                text, truncated, ..
            } => MockReply::Content {
                text,
                usage: Usage {
                    input_tokens,
                    output_tokens,
                },
                truncated,
            },
            other => other,
        }
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// `POST`, …
    pub method: String,
    /// The path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Null` when it is not JSON).
    pub body: Value,
}

impl RecordedRequest {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

type Responder = Box<dyn Fn(&RecordedRequest) -> MockReply + Send + Sync>;

#[derive(Default)]
struct Shared {
    chat: VecDeque<MockReply>,
    embeddings: VecDeque<MockReply>,
    requests: Vec<RecordedRequest>,
    in_flight: usize,
    max_in_flight: usize,
    /// `total_slots` answered to `GET /props` (llama.cpp's server properties); `None`: 404.
    slots: Option<usize>,
}

struct Inner {
    shared: Mutex<Shared>,
    responder: Mutex<Option<Responder>>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The scripted server; stops when dropped.
pub struct MockServer {
    addr: SocketAddr,
    serial: usize,
    inner: Arc<Inner>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl MockServer {
    /// Starts a server on a free loopback port.
    ///
    /// # Panics
    /// When no loopback port can be bound (a test environment problem).
    pub fn start() -> MockServer {
        #[allow(clippy::expect_used)]
        let listener =
            TcpListener::bind("127.0.0.1:0").expect("bind a loopback port for the mock judge");
        #[allow(clippy::expect_used)]
        let addr = listener
            .local_addr()
            .expect("local address of the mock judge");
        let inner = Arc::new(Inner {
            shared: Mutex::new(Shared::default()),
            responder: Mutex::new(None),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let accept = {
            let inner = Arc::clone(&inner);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let inner = Arc::clone(&inner);
                    std::thread::spawn(move || handle(stream, &inner));
                }
            })
        };
        // A distinct path per server, so a reused port never shares an endpoint's limiter
        // with an earlier server of the same process.
        static SERIAL: AtomicUsize = AtomicUsize::new(0);
        let serial = SERIAL.fetch_add(1, Ordering::SeqCst);
        MockServer {
            addr,
            serial,
            inner,
            stop,
            accept: Some(accept),
        }
    }

    /// `http://127.0.0.1:PORT/mock-N/v1`, the `base_url` to configure (any path prefix is
    /// accepted: requests are routed by their last segments).
    pub fn base_url(&self) -> String {
        format!("http://{}/mock-{}/v1", self.addr, self.serial)
    }

    /// Queues a chat/messages reply.
    pub fn push(&self, reply: MockReply) {
        self.inner.lock().chat.push_back(reply);
    }

    /// Queues several chat/messages replies.
    pub fn push_all(&self, replies: impl IntoIterator<Item = MockReply>) {
        self.inner.lock().chat.extend(replies);
    }

    /// Queues an embeddings reply (an error, a delay, or [`MockReply::Embeddings`]).
    pub fn push_embedding(&self, reply: MockReply) {
        self.inner.lock().embeddings.push_back(reply);
    }

    /// Answers chat/messages requests with `f` once the queue is empty.
    pub fn respond_with(&self, f: impl Fn(&RecordedRequest) -> MockReply + Send + Sync + 'static) {
        *self
            .inner
            .responder
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(Box::new(f));
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.inner.lock().requests.clone()
    }

    /// How many requests were received.
    pub fn request_count(&self) -> usize {
        self.inner.lock().requests.len()
    }

    /// The most requests ever being handled at once.
    pub fn max_in_flight(&self) -> usize {
        self.inner.lock().max_in_flight
    }

    /// Answers `GET …/props` with `{"total_slots": n}`, as llama.cpp's `llama-server` reports
    /// its parallel slots (`None`, the default: 404, as servers without that endpoint do).
    /// These requests are neither recorded nor counted, and take no scripted reply.
    pub fn set_slots(&self, slots: Option<usize>) {
        self.inner.lock().slots = slots;
    }

    /// Replies still queued for chat/messages.
    pub fn pending(&self) -> usize {
        self.inner.lock().chat.len()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

fn read_request(stream: &TcpStream) -> Option<RecordedRequest> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if let Some(len) = get("content-length").and_then(|v| v.parse::<usize>().ok()) {
        body.resize(len, 0);
        reader.read_exact(&mut body).ok()?;
    } else if get("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let n = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk).ok()?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    }
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(RecordedRequest {
        method,
        path,
        headers,
        body,
    })
}

fn handle(mut stream: TcpStream, inner: &Inner) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    if request.method == "GET" && request.path.ends_with("/props") {
        let slots = inner.lock().slots;
        let (status, body) = match slots {
            Some(n) => ("200 OK", json!({"total_slots": n}).to_string()),
            None => ("404 Not Found", error_body(false, 404, "File Not Found")),
        };
        let _ = stream.write_all(
            format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
        let _ = stream.flush();
        return;
    }
    let is_embeddings = request.path.ends_with("/embeddings");
    let anthropic = request.path.ends_with("/messages");
    let reply = {
        let mut s = inner.lock();
        s.requests.push(request.clone());
        s.in_flight += 1;
        s.max_in_flight = s.max_in_flight.max(s.in_flight);
        if is_embeddings {
            s.embeddings.pop_front()
        } else {
            s.chat.pop_front()
        }
    };
    let reply = match reply {
        Some(r) => Some(r),
        None if is_embeddings => None,
        None => inner
            .responder
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|f| f(&request)),
    };
    let reply = reply.unwrap_or_else(|| {
        if is_embeddings {
            MockReply::Embeddings(Vec::new())
        } else {
            MockReply::error(500, "mock judge: no scripted reply left")
        }
    });
    let (status, extra, body) = render(&request, reply, anthropic);
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    };
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    // No longer in flight once the reply is ready: a client that has read it may send its next
    // request before this thread would get past the writes, and counting this one still would
    // report one request too many in flight.
    inner.lock().in_flight -= 1;
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body.as_bytes()));
    let _ = stream.flush();
}

/// Splits `text` into tokens: runs of alphanumerics, and every other character alone.
fn mock_tokens(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() {
            word.push(c);
        } else {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            out.push(c.to_string());
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// OpenAI `logprobs.content` for `text`: every token certain (log-probability 0, itself its
/// only alternative), except the scripted one.
fn mock_logprobs(text: &str, scripted: Option<&(String, Vec<(String, f64)>)>, n: usize) -> Value {
    let tokens = mock_tokens(text);
    let target = scripted.and_then(|(after, _)| {
        let end = text.find(after.as_str())? + after.len();
        let mut pos = 0;
        tokens.iter().position(|t| {
            let start = pos;
            pos += t.len();
            start >= end && t.chars().all(char::is_alphanumeric)
        })
    });
    let entry = |t: &str, lp: f64| json!({"token": t, "logprob": lp, "bytes": t.as_bytes()});
    let content: Vec<Value> = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| match (target == Some(i), scripted) {
            (true, Some((_, top))) => {
                let alts: Vec<Value> = top.iter().take(n).map(|(a, lp)| entry(a, *lp)).collect();
                let own = top.iter().find(|(a, _)| a == t).map_or(0.0, |(_, lp)| *lp);
                let mut e = entry(t, own);
                e["top_logprobs"] = Value::Array(alts);
                e
            }
            _ => {
                let mut e = entry(t, 0.0);
                e["top_logprobs"] = json!([entry(t, 0.0)]);
                e
            }
        })
        .collect();
    Value::Array(content)
}

fn render(
    request: &RecordedRequest,
    reply: MockReply,
    anthropic: bool,
) -> (u16, Vec<(String, String)>, String) {
    render_with(request, reply, anthropic, None)
}

fn render_with(
    request: &RecordedRequest,
    reply: MockReply,
    anthropic: bool,
    scripted: Option<(String, Vec<(String, f64)>)>,
) -> (u16, Vec<(String, String)>, String) {
    let model = request.body.get("model").cloned().unwrap_or(Value::Null);
    match reply {
        MockReply::Delay { delay, then } => {
            std::thread::sleep(delay);
            render_with(request, *then, anthropic, scripted)
        }
        MockReply::WithLogprobs { reply, after, top } => {
            render_with(request, *reply, anthropic, Some((after, top)))
        }
        MockReply::RateLimited { retry_after } => {
            let body = error_body(anthropic, 429, "Rate limit reached for requests (mock)");
            let extra = retry_after
                .map(|v| vec![("retry-after".to_string(), v)])
                .unwrap_or_default();
            (429, extra, body)
        }
        MockReply::Error { status, message } => {
            (status, Vec::new(), error_body(anthropic, status, &message))
        }
        MockReply::Embeddings(vectors) => {
            let inputs: Vec<String> = match request.body.get("input") {
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|v| v.as_str().unwrap_or("").to_string())
                    .collect(),
                Some(Value::String(s)) => vec![s.clone()],
                _ => Vec::new(),
            };
            let data: Vec<Value> = inputs
                .iter()
                .enumerate()
                .map(|(i, text)| {
                    let v = vectors.get(i).cloned().unwrap_or_else(|| text_vector(text));
                    json!({"object": "embedding", "index": i, "embedding": v})
                })
                .collect();
            let tokens: u64 = inputs
                .iter()
                .map(|t| t.split_whitespace().count() as u64)
                .sum();
            let body = json!({"object": "list", "data": data, "model": model,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}});
            (200, Vec::new(), body.to_string())
        }
        MockReply::Content {
            text,
            usage,
            truncated,
        } => {
            let body = if anthropic {
                let tool = request
                    .body
                    .pointer("/tools/0/name")
                    .and_then(Value::as_str);
                let parsed = serde_json::from_str::<Value>(&text)
                    .ok()
                    .filter(Value::is_object);
                let (content, stop) = match (tool, parsed, truncated) {
                    (Some(name), Some(input), false) => (
                        json!([{"type": "tool_use", "id": "toolu_mock", "name": name, "input": input}]),
                        "tool_use",
                    ),
                    (_, _, t) => (
                        json!([{"type": "text", "text": text}]),
                        if t { "max_tokens" } else { "end_turn" },
                    ),
                };
                json!({"id": "msg_mock", "type": "message", "role": "assistant", "model": model,
                    "content": content, "stop_reason": stop, "stop_sequence": null,
                    "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}})
            } else {
                let logprobs = if request.body.get("logprobs") == Some(&Value::Bool(true)) {
                    let n = request
                        .body
                        .get("top_logprobs")
                        .and_then(Value::as_u64)
                        .unwrap_or(1)
                        .max(1) as usize;
                    json!({"content": mock_logprobs(&text, scripted.as_ref(), n), "refusal": null})
                } else {
                    Value::Null
                };
                json!({"id": "chatcmpl-mock", "object": "chat.completion", "created": 0, "model": model,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": null},
                        "logprobs": logprobs,
                        "finish_reason": if truncated { "length" } else { "stop" }}],
                    "usage": {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens,
                        "total_tokens": usage.input_tokens + usage.output_tokens}})
            };
            (200, Vec::new(), body.to_string())
        }
    }
}

fn error_body(anthropic: bool, status: u16, message: &str) -> String {
    if anthropic {
        let ty = match status {
            400 => "invalid_request_error",
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            429 => "rate_limit_error",
            529 => "overloaded_error",
            _ => "api_error",
        };
        json!({"type": "error", "error": {"type": ty, "message": message}}).to_string()
    } else {
        let (ty, code) = match status {
            400 => ("invalid_request_error", Value::Null),
            401 => ("invalid_request_error", json!("invalid_api_key")),
            429 => ("requests", json!("rate_limit_exceeded")),
            _ => ("server_error", Value::Null),
        };
        json!({"error": {"message": message, "type": ty, "param": null, "code": code}}).to_string()
    }
}

/// A deterministic 32-dimensional vector of a text: counts of hashed lower-cased words,
/// so equal texts are identical (cosine 1) and texts sharing words are similar.
pub fn text_vector(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; 32];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let h = oloproof_core::identity::sha256_hex(word.to_lowercase().as_bytes());
        let i = usize::from_str_radix(&h[..4], 16).unwrap_or(0) % 32;
        v[i] += 1.0;
    }
    v
}
