//! Judge calls against misbehaving servers (issue 19): cut-off replies, failed repairs, strict
//! schemas with bounds, plain-string error bodies, and raw-socket faults the scripted server
//! cannot produce — a connection reset mid-body, a 200 with an empty body, a `Retry-After` of
//! a day, a body that streams forever.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use oloproof_judge::mock::{MockReply, MockServer};
use oloproof_judge::{templates, JudgeClient, JudgeSettings, Provider};
use serde_json::json;

const KEY_ENV: &str = "OLOPROOF_JUDGE_FAULTS_KEY";

fn set_key() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| std::env::set_var(KEY_ENV, "sk-faults-0123456789"));
}

fn settings(base_url: &str) -> JudgeSettings {
    set_key();
    let mut s = JudgeSettings::new(Provider::Openai, base_url, "judge-model", Some(KEY_ENV));
    s.timeout_s = Some(5.0);
    s.max_retries = 2;
    // The fault servers, on loopback, stand in for a remote provider, whose timeouts are
    // retried.
    s.retry_timeouts = Some(true);
    s
}

fn client(s: JudgeSettings) -> JudgeClient {
    JudgeClient::new("default", s)
        .unwrap()
        .with_backoff(Duration::from_millis(5), Duration::from_millis(20))
}

fn grounded_request() -> oloproof_judge::JudgeRequest {
    templates::groundedness("Q?", &["ctx".to_string()], "A.", 0)
}

fn full() -> serde_json::Value {
    json!({"reason": "a long enough reason", "grounded": 1})
}

#[test]
fn a_cut_off_reply_is_retried_fresh_with_a_larger_limit() {
    let server = MockServer::start();
    server.push_all([MockReply::truncated(full(), 20), MockReply::json(full())]);
    let r = client(settings(&server.base_url()))
        .complete(&grounded_request())
        .unwrap();
    assert_eq!(r.parsed, full());
    assert_eq!(r.attempts, 2);
    let sent = server.requests();
    assert_eq!(sent[0].body["max_tokens"], 256);
    assert_eq!(sent[1].body["max_tokens"], 512, "twice the limit");
    // The cut-off reply is never sent back: the retry is the original conversation.
    assert_eq!(sent[1].body["messages"], sent[0].body["messages"]);
}

#[test]
fn cut_off_twice_is_truncated_naming_both_limits() {
    let server = MockServer::start();
    server.push_all([
        MockReply::truncated(full(), 20),
        MockReply::truncated(full(), 30),
    ]);
    let err = client(settings(&server.base_url()))
        .complete(&grounded_request())
        .unwrap_err();
    assert_eq!(err.kind(), "truncated", "{err}");
    let text = err.to_string();
    assert!(
        text.contains("max_tokens (256)") && text.contains("again at 512"),
        "{text}"
    );
    assert_eq!(err.attempts(), 2);
    assert_eq!(err.raw().map(str::len), Some(30));
    assert_eq!(err.usage().input_tokens, 200, "both replies are billed");
    assert_eq!(server.request_count(), 2);
}

#[test]
fn a_failed_repair_names_the_last_failure_and_the_first() {
    let server = MockServer::start();
    // An invalid reply, then the repair request fails on the server (5xx until retries end).
    server.push_all([
        MockReply::json(json!({"reason": "x", "grounded": 7})),
        MockReply::error(503, "overloaded"),
        MockReply::error(503, "overloaded"),
        MockReply::error(503, "overloaded"),
    ]);
    let err = client(settings(&server.base_url()))
        .complete(&grounded_request())
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("the repair request failed") && text.contains("HTTP 503"),
        "the last failure: {text}"
    );
    assert!(
        text.contains("the first reply: $.grounded: 7 is not one of 0, 1"),
        "the first failure: {text}"
    );
    assert_eq!(err.attempts(), 4, "one reply and three repair attempts");
}

#[test]
fn strict_schemas_keep_their_bounds_and_drop_them_only_when_refused() {
    let claims = vec!["a".to_string(), "b".to_string()];
    let req = templates::claim_verification(&["ctx".to_string()], &claims, 0);
    let good = json!({"verdicts": [{"id": 1, "reason": "", "verdict": 1}, {"id": 2, "reason": "", "verdict": 0}]});
    let check = |v: &serde_json::Value| templates::check_ids(v, "verdicts", 2);

    // A grammar-enforcing server (llama.cpp, vLLM) receives minItems/maxItems.
    let server = MockServer::start();
    server.push(MockReply::json(good.clone()));
    let judge = client(settings(&server.base_url()));
    judge.complete_validated(&req, &check).unwrap();
    let schema = server.requests()[0].body["response_format"]["json_schema"]["schema"].clone();
    assert_eq!(schema["properties"]["verdicts"]["minItems"], 2, "{schema}");
    assert_eq!(schema["properties"]["verdicts"]["maxItems"], 2, "{schema}");

    // A provider that refuses them: one 400, then the schema without bounds, from then on.
    let strict = MockServer::start();
    strict.push_all([
        MockReply::error(
            400,
            "Invalid schema for response_format 'claim_verification': 'minItems' is not permitted.",
        ),
        MockReply::json(good.clone()),
        MockReply::json(good),
    ]);
    let judge = client(settings(&strict.base_url()));
    let r = judge.complete_validated(&req, &check).unwrap();
    assert_eq!(r.attempts, 2);
    judge.complete_validated(&req, &check).unwrap();
    let sent = strict.requests();
    assert_eq!(sent.len(), 3);
    for later in &sent[1..] {
        let s = later.body["response_format"]["json_schema"]["schema"].to_string();
        assert!(!s.contains("minItems") && !s.contains("maxItems"), "{s}");
    }
}

/// One scripted raw answer: bytes written after the request is read, then the socket closes.
#[derive(Clone)]
enum Raw {
    /// Write these bytes, then close.
    Bytes(Vec<u8>),
    /// Write a 200 head and body bytes forever (until the client goes away).
    StreamForever,
}

/// A loopback server answering each connection with the next scripted [`Raw`] (the last one
/// repeats), counting requests.
struct RawServer {
    port: u16,
    requests: Arc<AtomicUsize>,
}

impl RawServer {
    fn start(script: Vec<Raw>) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&requests);
        let script = Arc::new(Mutex::new(script));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let (count, script) = (Arc::clone(&count), Arc::clone(&script));
                std::thread::spawn(move || serve(stream, &count, &script));
            }
        });
        RawServer { port, requests }
    }

    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

/// Answers one connection with the script's next answer (the last one once past its end);
/// the `GET /props` a client of a loopback server sends when it is made (asking for the
/// server's slots) is answered 404, as servers without that endpoint do, and is not counted.
fn serve(mut stream: TcpStream, count: &AtomicUsize, script: &Mutex<Vec<Raw>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut length = 0usize;
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0u8; length];
    let _ = reader.read_exact(&mut body);
    if request_line.starts_with("GET ") && request_line.contains("/props") {
        let _ = stream.write_all(&http("404 Not Found", "", "{}"));
        return;
    }
    let answer = {
        let n = count.fetch_add(1, Ordering::SeqCst);
        let s = script.lock().unwrap();
        s[n.min(s.len() - 1)].clone()
    };
    match answer {
        Raw::Bytes(bytes) => {
            let _ = stream.write_all(&bytes);
        }
        Raw::StreamForever => {
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n",
            );
            while stream.write_all(b"1\r\n \r\n").is_ok() {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// A whole HTTP/1.1 response with `content-length` set from the body.
fn http(status: &str, extra_headers: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{extra_headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn ok_body() -> Vec<u8> {
    let body = json!({
        "choices": [{"message": {"role": "assistant", "content": full().to_string()}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5}
    })
    .to_string();
    http("200 OK", "", &body)
}

#[test]
fn a_connection_reset_mid_body_is_retried_then_a_transport_error() {
    // The head promises 500 bytes; 20 arrive, then the connection closes.
    let cut = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{\"choices\": [{\"mess".to_vec();
    let server = RawServer::start(vec![Raw::Bytes(cut.clone()), Raw::Bytes(ok_body())]);
    let r = client(settings(&server.base_url()))
        .complete(&grounded_request())
        .unwrap();
    assert_eq!(r.attempts, 2, "retried once, then answered");

    let always = RawServer::start(vec![Raw::Bytes(cut)]);
    let err = client(settings(&always.base_url()))
        .complete(&grounded_request())
        .unwrap_err();
    assert_eq!(err.kind(), "transport", "{err}");
    assert!(
        err.to_string().contains("cannot read the response"),
        "{err}"
    );
    assert_eq!(err.attempts(), 3);
    assert_eq!(always.requests(), 3, "max_retries 2: three requests");
}

#[test]
fn a_200_with_an_empty_body_is_retried_and_reported() {
    let empty = http("200 OK", "", "");
    let server = RawServer::start(vec![Raw::Bytes(empty.clone()), Raw::Bytes(ok_body())]);
    let r = client(settings(&server.base_url()))
        .complete(&grounded_request())
        .unwrap();
    assert_eq!(r.attempts, 2);

    let always = RawServer::start(vec![Raw::Bytes(empty)]);
    let err = client(settings(&always.base_url()))
        .complete(&grounded_request())
        .unwrap_err();
    assert_eq!(err.kind(), "protocol");
    assert!(
        err.to_string().contains("HTTP 200 with an empty body"),
        "{err}"
    );
    assert_eq!(always.requests(), 3);
}

#[test]
fn a_retry_after_of_a_day_is_capped() {
    let day = http(
        "429 Too Many Requests",
        "retry-after: 86400\r\n",
        r#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#,
    );
    let server = RawServer::start(vec![Raw::Bytes(day), Raw::Bytes(ok_body())]);
    let judge =
        client(settings(&server.base_url())).with_retry_after_cap(Duration::from_millis(200));
    let started = Instant::now();
    let r = judge.complete(&grounded_request()).unwrap();
    let waited = started.elapsed();
    assert_eq!(r.attempts, 2);
    assert!(
        waited >= Duration::from_millis(200) && waited < Duration::from_secs(30),
        "waited the cap, not a day: {waited:?}"
    );
}

#[test]
fn a_body_that_streams_forever_times_out() {
    let server = RawServer::start(vec![Raw::StreamForever]);
    let mut s = settings(&server.base_url());
    s.timeout_s = Some(0.5);
    s.max_retries = 1;
    let started = Instant::now();
    let err = client(s).complete(&grounded_request()).unwrap_err();
    assert_eq!(err.kind(), "timeout", "{err}");
    assert_eq!(err.attempts(), 2);
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn plain_string_error_bodies_are_kept() {
    let ollama = http(
        "502 Bad Gateway",
        "",
        r#"{"error":"model 'llama3' is not loaded"}"#,
    );
    let server = RawServer::start(vec![Raw::Bytes(ollama)]);
    let err = client(settings(&server.base_url()))
        .complete(&grounded_request())
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("HTTP 502"), "{text}");
    assert!(
        text.ends_with("model 'llama3' is not loaded"),
        "the message after the status: {text}"
    );
}

#[test]
fn a_body_that_is_not_utf8_is_the_servers_answer_not_a_transport_failure() {
    let mut bad = http("200 OK", "", "{\"choices\": \"xx\"}");
    let n = bad.len();
    bad[n - 4] = 0xff;
    let server = RawServer::start(vec![Raw::Bytes(bad)]);
    let err = client(settings(&server.base_url()))
        .complete(&grounded_request())
        .unwrap_err();
    assert_eq!(err.kind(), "protocol", "{err}");
    assert!(
        err.to_string().contains("not UTF-8 (invalid byte 0xff"),
        "{err}"
    );
    assert_eq!(server.requests(), 1, "an answer is not retried");
}

#[test]
fn a_response_that_is_not_usable_http_is_a_protocol_error_not_retried() {
    // A bare informational status, then garbage: the server answered (found by fuzzing).
    let server = RawServer::start(vec![Raw::Bytes(
        b"HTTP/1.1 100 Continue\r\n\r\n<html>oops</html>".to_vec(),
    )]);
    let err = client(settings(&server.base_url()))
        .complete(&grounded_request())
        .unwrap_err();
    assert_eq!(err.kind(), "protocol", "{err}");
    assert!(err.to_string().contains("not usable HTTP"), "{err}");
    assert_eq!(server.requests(), 1);
}
