//! The clients against the scripted server: wire formats, retries, Retry-After, adaptive
//! concurrency, timeouts, validation and repair, cache keys, cost, embeddings, key hygiene.

use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

use oloproof_judge::mock::{MockReply, MockServer};
use oloproof_judge::{
    cache_key, templates, JudgeClient, JudgeError, JudgeSettings, MemoryCache, Prices, Provider,
    StructuredOutput,
};
use serde_json::{json, Value};

const KEY: &str = "sk-test-SECRET-0123456789";
const ANTHROPIC_KEY: &str = "sk-ant-test-SECRET-987654";

fn set_keys() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        std::env::set_var("OLOPROOF_JUDGE_TEST_KEY", KEY);
        std::env::set_var("OLOPROOF_JUDGE_TEST_ANTHROPIC_KEY", ANTHROPIC_KEY);
    });
}

fn settings(server: &MockServer, provider: Provider) -> JudgeSettings {
    set_keys();
    let env = match provider {
        Provider::Openai => "OLOPROOF_JUDGE_TEST_KEY",
        Provider::Anthropic => "OLOPROOF_JUDGE_TEST_ANTHROPIC_KEY",
        Provider::Local => unreachable!("the mock server tests HTTP providers"),
    };
    let mut s = JudgeSettings::new(provider, &server.base_url(), "judge-model", Some(env));
    s.timeout_s = Some(5.0);
    // The mock, on loopback, stands in for a remote provider, whose timeouts are retried.
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

fn ok_reply() -> MockReply {
    MockReply::json(json!({"reason": "fine", "grounded": 1}))
}

#[test]
fn openai_request_uses_json_schema_and_reports_usage_and_cost() {
    let server = MockServer::start();
    server.push(ok_reply().with_usage(1000, 500));
    let mut s = settings(&server, Provider::Openai);
    s.seed = Some(42);
    s.prices = Some(Prices {
        input_per_mtok: 0.15,
        output_per_mtok: 0.60,
    });
    let judge = client(s);
    let mut req = grounded_request();
    req.repeat_index = 2;
    let r = judge.complete(&req).unwrap();
    assert_eq!(r.parsed, json!({"reason": "fine", "grounded": 1}));
    assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (1000, 500));
    assert!((r.cost_usd.unwrap() - (1000.0 * 0.15 + 500.0 * 0.60) / 1e6).abs() < 1e-15);
    assert_eq!((r.attempts, r.repaired), (1, false));
    let totals = judge.totals();
    assert_eq!((totals.calls, totals.usage.input_tokens), (1, 1000));

    let sent = &server.requests()[0];
    assert!(sent.path.ends_with("/v1/chat/completions"), "{}", sent.path);
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let b = &sent.body;
    assert_eq!(b["model"], "judge-model");
    assert_eq!(b["temperature"], 0.0);
    assert_eq!(
        b["max_tokens"], 256,
        "the groundedness template's reply budget"
    );
    assert_eq!(b["seed"], 44, "seed + repeat index");
    assert_eq!(b["response_format"]["type"], "json_schema");
    assert_eq!(b["response_format"]["json_schema"]["name"], "groundedness");
    assert_eq!(b["response_format"]["json_schema"]["strict"], true);
    assert_eq!(
        b["response_format"]["json_schema"]["schema"]["required"],
        json!(["reason", "grounded", "failure_mode"]),
        "strict mode: the optional, nullable failure_mode is sent as required"
    );
    assert_eq!(b["messages"][0]["role"], "system");
    assert_eq!(b["messages"][1]["role"], "user");
}

#[test]
fn json_object_and_prompt_modes_put_the_schema_in_the_prompt() {
    for (mode, format) in [
        (StructuredOutput::JsonObject, Some("json_object")),
        (StructuredOutput::Prompt, None),
    ] {
        let server = MockServer::start();
        server.push(MockReply::text(
            "```json\n{\"reason\": \"r\", \"grounded\": 0}\n```",
        ));
        let mut s = settings(&server, Provider::Openai);
        s.structured_output = mode;
        let r = client(s).complete(&grounded_request()).unwrap();
        assert_eq!(r.parsed["grounded"], 0);
        let b = &server.requests()[0].body;
        assert_eq!(b["response_format"]["type"].as_str(), format);
        let system = b["messages"][0]["content"].as_str().unwrap();
        assert!(
            system.contains("JSON schema") && system.contains("\"grounded\""),
            "{system}"
        );
    }
}

#[test]
fn retries_5xx_then_succeeds() {
    let server = MockServer::start();
    server.push_all([
        MockReply::error(500, "boom"),
        MockReply::error(503, "busy"),
        ok_reply(),
    ]);
    let r = client(settings(&server, Provider::Openai))
        .complete(&grounded_request())
        .unwrap();
    assert_eq!(r.attempts, 3);
    assert_eq!(server.request_count(), 3);
}

#[test]
fn gives_up_after_max_retries_with_the_provider_message() {
    let server = MockServer::start();
    server.push_all((0..5).map(|_| MockReply::error(500, "The server had an error")));
    let mut s = settings(&server, Provider::Openai);
    s.max_retries = 2;
    let err = client(s).complete(&grounded_request()).unwrap_err();
    match &err {
        JudgeError::Http {
            status,
            attempts,
            message,
            ..
        } => {
            assert_eq!((*status, *attempts), (500, 3));
            assert!(message.contains("The server had an error"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.request_count(), 3);
}

#[test]
fn client_errors_are_not_retried_and_never_show_the_key() {
    let server = MockServer::start();
    server.push(MockReply::error(
        401,
        &format!("Incorrect API key provided: {KEY}."),
    ));
    let judge = client(settings(&server, Provider::Openai));
    let err = judge.complete(&grounded_request()).unwrap_err();
    assert_eq!(server.request_count(), 1);
    assert!(
        matches!(
            err,
            JudgeError::Http {
                status: 401,
                attempts: 1,
                ..
            }
        ),
        "{err:?}"
    );
    for text in [err.to_string(), format!("{err:?}"), format!("{judge:?}")] {
        assert!(!text.contains("SECRET"), "key leaked: {text}");
    }
    assert!(format!("{judge:?}").contains("OLOPROOF_JUDGE_TEST_KEY"));
}

#[test]
fn missing_key_fails_before_sending() {
    let server = MockServer::start();
    let s = JudgeSettings::new(
        Provider::Openai,
        &server.base_url(),
        "m",
        Some("OLOPROOF_JUDGE_TEST_UNSET_VAR"),
    );
    let judge = client(s);
    assert!(matches!(
        judge.check_api_key(),
        Err(JudgeError::MissingApiKey { .. })
    ));
    let err = judge.complete(&grounded_request()).unwrap_err();
    assert!(err.to_string().contains("OLOPROOF_JUDGE_TEST_UNSET_VAR"));
    assert_eq!(server.request_count(), 0);
}

#[test]
fn retry_after_is_honoured_and_429_halves_the_limit() {
    let server = MockServer::start();
    server.push_all([MockReply::rate_limited("1"), ok_reply()]);
    let judge = client(settings(&server, Provider::Openai));
    assert_eq!(judge.concurrency_limit(), 8);
    let start = Instant::now();
    let r = judge.complete(&grounded_request()).unwrap();
    assert!(
        start.elapsed() >= Duration::from_millis(950),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(r.attempts, 2);
    // One success after the 429: not yet grown back.
    assert_eq!(judge.concurrency_limit(), 4);
    server.respond_with(|_| ok_reply());
    for _ in 0..30 {
        judge.complete(&grounded_request()).unwrap();
    }
    assert_eq!(
        judge.concurrency_limit(),
        8,
        "grows back by one after successes"
    );
}

#[test]
fn rate_limit_without_retry_after_backs_off_and_fails_as_http_429() {
    let server = MockServer::start();
    server.push_all((0..3).map(|_| MockReply::RateLimited { retry_after: None }));
    let mut s = settings(&server, Provider::Openai);
    s.max_retries = 2;
    let err = client(s).complete(&grounded_request()).unwrap_err();
    assert!(
        matches!(
            err,
            JudgeError::Http {
                status: 429,
                attempts: 3,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn timeouts_are_retried_then_reported() {
    let server = MockServer::start();
    server.push_all([
        MockReply::delay(Duration::from_millis(800), ok_reply()),
        ok_reply(),
    ]);
    let mut s = settings(&server, Provider::Openai);
    s.timeout_s = Some(0.3);
    let judge = client(s);
    let r = judge.complete(&grounded_request()).unwrap();
    assert_eq!(r.attempts, 2);

    let server = MockServer::start();
    server.push_all((0..2).map(|_| MockReply::delay(Duration::from_millis(800), ok_reply())));
    let mut s = settings(&server, Provider::Openai);
    s.timeout_s = Some(0.3);
    s.max_retries = 1;
    let err = client(s).complete(&grounded_request()).unwrap_err();
    assert!(
        matches!(err, JudgeError::Timeout { attempts: 2, .. }),
        "{err:?}"
    );
}

#[test]
fn connection_errors_are_retried_then_reported() {
    // A port with nothing listening.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut s = JudgeSettings::new(
        Provider::Openai,
        &format!("http://127.0.0.1:{port}/v1"),
        "m",
        None,
    );
    s.max_retries = 1;
    let err = client(s).complete(&grounded_request()).unwrap_err();
    assert!(
        matches!(err, JudgeError::Transport { attempts: 2, .. }),
        "{err:?}"
    );
}

#[test]
fn invalid_output_is_repaired_once() {
    let server = MockServer::start();
    server.push_all([
        MockReply::json(json!({"reason": "x", "grounded": 2})),
        ok_reply(),
    ]);
    let r = client(settings(&server, Provider::Openai))
        .complete(&grounded_request())
        .unwrap();
    assert!(r.repaired);
    assert_eq!(r.attempts, 2);
    assert_eq!(r.usage.input_tokens, 200, "both answers are billed");
    let repair = &server.requests()[1].body["messages"];
    let n = repair.as_array().unwrap().len();
    assert_eq!(repair[n - 2]["role"], "assistant");
    assert_eq!(
        repair[n - 2]["content"],
        json!({"reason": "x", "grounded": 2}).to_string()
    );
    let note = repair[n - 1]["content"].as_str().unwrap();
    assert!(note.contains("$.grounded: 2 is not one of 0, 1"), "{note}");
}

#[test]
fn invalid_twice_is_an_error_with_the_raw_reply() {
    let server = MockServer::start();
    server.push_all([
        MockReply::text("not json"),
        MockReply::text("{\"reason\": \"still\"}"),
    ]);
    let err = client(settings(&server, Provider::Openai))
        .complete(&grounded_request())
        .unwrap_err();
    match err {
        JudgeError::InvalidOutput {
            error, raw, usage, ..
        } => {
            assert!(
                error.contains("missing required property `grounded`"),
                "{error}"
            );
            assert_eq!(raw, "{\"reason\": \"still\"}");
            assert_eq!(usage.input_tokens, 200);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.request_count(), 2);
}

#[test]
fn truncated_json_says_it_was_cut_at_max_tokens() {
    let server = MockServer::start();
    let full = json!({"reason": "a long reason", "grounded": 1});
    server.push_all([
        MockReply::truncated(full.clone(), 20),
        MockReply::truncated(full, 20),
    ]);
    let err = client(settings(&server, Provider::Openai))
        .complete(&grounded_request())
        .unwrap_err();
    assert!(
        err.to_string().contains("cut off at max_tokens (256)"),
        "{err}"
    );
}

#[test]
fn semantic_check_failures_are_repaired_then_missing() {
    let claims = vec!["a".to_string(), "b".to_string(), "c".to_string()];
    let req = templates::claim_verification(&["ctx".to_string()], &claims, 0);
    let two = json!({"verdicts": [{"id": 1, "reason": "", "verdict": 1}, {"id": 2, "reason": "", "verdict": 0}]});
    let bad_ids = json!({"verdicts": [{"id": 1, "reason": "", "verdict": 1}, {"id": 2, "reason": "", "verdict": 0}, {"id": 2, "reason": "", "verdict": 0}]});
    let good = json!({"verdicts": [{"id": 3, "reason": "", "verdict": 1}, {"id": 1, "reason": "", "verdict": 1}, {"id": 2, "reason": "", "verdict": 0}]});
    let check = |v: &Value| templates::check_ids(v, "verdicts", 3);

    let server = MockServer::start();
    // The wrong count fails the schema (minItems), the duplicate id fails the check.
    server.push_all([MockReply::json(two.clone()), MockReply::json(good)]);
    let judge = client(settings(&server, Provider::Openai));
    assert!(judge.complete_validated(&req, &check).unwrap().repaired);
    server.push_all([MockReply::json(bad_ids), MockReply::json(two)]);
    let err = judge.complete_validated(&req, &check).unwrap_err();
    assert!(matches!(err, JudgeError::InvalidOutput { .. }), "{err:?}");
}

#[test]
fn concurrency_is_bounded_per_endpoint() {
    let server = MockServer::start();
    server.respond_with(|_| MockReply::delay(Duration::from_millis(100), ok_reply()));
    let mut s = settings(&server, Provider::Openai);
    s.max_concurrency = Some(2);
    let judge = Arc::new(client(s.clone()));
    // A second client of the same endpoint shares the limit.
    let other = Arc::new(client(s));
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let j = if i % 2 == 0 {
                Arc::clone(&judge)
            } else {
                Arc::clone(&other)
            };
            std::thread::spawn(move || j.complete(&grounded_request()).map(|r| r.attempts))
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap().unwrap(), 1);
    }
    assert_eq!(server.request_count(), 8);
    assert_eq!(server.max_in_flight(), 2);
}

#[test]
fn a_local_servers_slots_cap_the_concurrency() {
    // A server reporting two slots (llama.cpp's `GET /props` `total_slots`): the default 8
    // and a configured 8 are capped at 2; fewer stays fewer.
    let server = MockServer::start();
    server.set_slots(Some(2));
    server.respond_with(|_| MockReply::delay(Duration::from_millis(100), ok_reply()));
    let mut s = settings(&server, Provider::Openai);
    s.max_concurrency = None;
    let judge = Arc::new(client(s.clone()));
    assert_eq!(judge.server_slots(), Some(2));
    assert_eq!(judge.concurrency(), 2);
    let handles: Vec<_> = (0..6)
        .map(|_| {
            let j = Arc::clone(&judge);
            std::thread::spawn(move || j.complete(&grounded_request()).map(|r| r.attempts))
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap().unwrap(), 1);
    }
    // Six calls at once, two in flight; the probe is no judge request.
    assert_eq!(server.request_count(), 6);
    assert_eq!(server.max_in_flight(), 2);
    s.max_concurrency = Some(8);
    assert_eq!(client(s.clone()).concurrency(), 2);
    s.max_concurrency = Some(1);
    assert_eq!(client(s).concurrency(), 1);

    // A server without `/props` (404, as vLLM or Ollama): the configured value, or 8.
    let plain = MockServer::start();
    let mut s = settings(&plain, Provider::Openai);
    s.max_concurrency = None;
    let judge = client(s.clone());
    assert_eq!((judge.server_slots(), judge.concurrency()), (None, 8));
    s.max_concurrency = Some(3);
    assert_eq!(client(s).concurrency(), 3);
    assert_eq!(plain.request_count(), 0);

    // Nobody listening (a server not started yet): the configured value.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let down = JudgeSettings::new(
        Provider::Openai,
        &format!("http://127.0.0.1:{port}/v1"),
        "m",
        None,
    );
    let judge = JudgeClient::new("down", down).unwrap();
    assert_eq!((judge.server_slots(), judge.concurrency()), (None, 8));
}

#[test]
fn cache_keys_cover_what_determines_the_judgment() {
    let server = MockServer::start();
    let s = settings(&server, Provider::Openai);
    let req = grounded_request();
    let base = cache_key(&s, &req);
    assert_eq!(base.len(), 64);
    assert_eq!(base, cache_key(&s.clone(), &req.clone()), "stable");
    let mut changed = Vec::new();
    let mut m = s.clone();
    m.model = "other-model".into();
    changed.push(cache_key(&m, &req));
    let mut t = s.clone();
    t.temperature = 0.7;
    changed.push(cache_key(&t, &req));
    let mut so = s.clone();
    so.structured_output = StructuredOutput::Prompt;
    changed.push(cache_key(&so, &req));
    let mut b = s.clone();
    b.base_url = "http://elsewhere/v1".into();
    changed.push(cache_key(&b, &req));
    let mut sd = s.clone();
    sd.seed = Some(1);
    changed.push(cache_key(&sd, &req));
    let mut v = req.clone();
    v.template_version += 1;
    changed.push(cache_key(&s, &v));
    let mut r = req.clone();
    r.repeat_index = 1;
    changed.push(cache_key(&s, &r));
    changed.push(cache_key(
        &s,
        &templates::groundedness("Q?", &["ctx".to_string()], "B.", 0),
    ));
    for k in &changed {
        assert_ne!(*k, base);
    }
    // Neither the key's value nor its variable change the key.
    let mut e = s.clone();
    e.api_key_env = Some("ANOTHER".into());
    assert_eq!(cache_key(&e, &req), base);
    let mut p = s.clone();
    p.max_concurrency = Some(1);
    p.prices = Some(Prices {
        input_per_mtok: 1.0,
        output_per_mtok: 1.0,
    });
    assert_eq!(cache_key(&p, &req), base);
}

#[test]
fn cache_hits_send_nothing_and_errors_are_not_cached() {
    let server = MockServer::start();
    server.push_all([MockReply::error(400, "bad"), ok_reply()]);
    let judge = client(settings(&server, Provider::Openai));
    let cache = MemoryCache::new();
    let req = grounded_request();
    assert!(judge.judge(&cache, &req, &|_| Ok(())).is_err());
    assert!(cache.is_empty());
    let first = judge.judge(&cache, &req, &|_| Ok(())).unwrap();
    assert!(!first.cached);
    let hit = judge.judge(&cache, &req, &|_| Ok(())).unwrap();
    assert!(hit.cached);
    assert_eq!(
        (hit.raw, hit.parsed, hit.usage.input_tokens),
        (first.raw, first.parsed, 0)
    );
    assert_eq!(server.request_count(), 2);
    // Another model is another key: sent again.
    server.push(ok_reply());
    let mut s = settings(&server, Provider::Openai);
    s.model = "bigger".into();
    let r = client(s).judge(&cache, &req, &|_| Ok(())).unwrap();
    assert!(!r.cached);
    assert_eq!(server.request_count(), 3);
}

#[test]
fn embeddings_are_batched_ordered_and_billed() {
    let server = MockServer::start();
    let mut s = settings(&server, Provider::Openai);
    s.embedding_model = Some("embed-small".into());
    s.prices = Some(Prices {
        input_per_mtok: 1.0,
        output_per_mtok: 0.0,
    });
    let judge = client(s);
    let texts: Vec<String> = (0..70).map(|i| format!("text number {i}")).collect();
    server.push_embedding(MockReply::error(500, "try again"));
    let v = judge.embed(&texts).unwrap();
    assert_eq!(v.len(), 70);
    assert_eq!(v[69], oloproof_judge::mock::text_vector("text number 69"));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "one retry, then two batches");
    assert!(reqs[1].path.ends_with("/v1/embeddings"));
    assert_eq!(reqs[1].body["model"], "embed-small");
    assert_eq!(reqs[1].body["input"].as_array().unwrap().len(), 64);
    assert_eq!(reqs[2].body["input"].as_array().unwrap().len(), 6);
    let t = judge.totals();
    assert_eq!(t.usage.input_tokens, 210);
    assert!((t.cost_usd - 210.0 / 1e6).abs() < 1e-15);
}

#[test]
fn anthropic_uses_a_forced_tool_and_its_own_headers() {
    let server = MockServer::start();
    server.push_all([
        MockReply::error(529, "Overloaded"),
        ok_reply().with_usage(30, 7),
    ]);
    let mut s = settings(&server, Provider::Anthropic);
    s.prices = Some(Prices {
        input_per_mtok: 3.0,
        output_per_mtok: 15.0,
    });
    let judge = client(s);
    let r = judge.complete(&grounded_request()).unwrap();
    assert_eq!(r.parsed, json!({"reason": "fine", "grounded": 1}));
    assert_eq!(r.attempts, 2);
    assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (30, 7));
    assert!((r.cost_usd.unwrap() - (30.0 * 3.0 + 7.0 * 15.0) / 1e6).abs() < 1e-15);
    let sent = &server.requests()[1];
    assert!(sent.path.ends_with("/v1/messages"));
    assert_eq!(sent.header("x-api-key"), Some(ANTHROPIC_KEY));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("authorization"), None);
    let b = &sent.body;
    assert!(b["system"].as_str().unwrap().contains("grounded"));
    assert_eq!(b["messages"].as_array().unwrap().len(), 1);
    assert_eq!(b["messages"][0]["role"], "user");
    assert_eq!(b["tools"][0]["name"], "record_judgment");
    assert_eq!(
        b["tools"][0]["input_schema"]["properties"]["grounded"]["enum"],
        json!([0, 1])
    );
    assert_eq!(
        b["tool_choice"],
        json!({"type": "tool", "name": "record_judgment"})
    );
    assert!(b.get("seed").is_none() && b.get("response_format").is_none());
    assert!(matches!(
        judge.embed(&["x".into()]),
        Err(JudgeError::Unsupported { .. })
    ));
}

#[test]
fn anthropic_rate_limits_repairs_and_error_bodies() {
    let server = MockServer::start();
    server.push_all([
        MockReply::rate_limited("0"),
        MockReply::json(json!({"reason": "x"})),
        ok_reply(),
    ]);
    let judge = client(settings(&server, Provider::Anthropic));
    let r = judge.complete(&grounded_request()).unwrap();
    assert!(r.repaired);
    assert_eq!(r.attempts, 3);
    let repair = &server.requests()[2].body["messages"];
    assert_eq!(repair.as_array().unwrap().len(), 3, "user, assistant, user");
    assert_eq!(repair[1]["role"], "assistant");

    server.push(MockReply::error(400, "max_tokens: too large"));
    let err = judge.complete(&grounded_request()).unwrap_err();
    assert!(
        err.to_string()
            .contains("invalid_request_error: max_tokens: too large"),
        "{err}"
    );
}

#[test]
fn settings_errors_name_the_judge() {
    let mut s = JudgeSettings::new(Provider::Openai, "ftp://x", "m", None);
    let err = JudgeClient::new("strict", s.clone()).unwrap_err();
    assert!(
        err.to_string().contains("judge `strict`") && err.to_string().contains("base_url"),
        "{err}"
    );
    s.base_url = "http://x".into();
    s.max_concurrency = Some(0);
    assert!(JudgeClient::new("strict", s).is_err());
}

#[test]
fn clients_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<JudgeClient>();
    assert_send_sync::<MemoryCache>();
    assert_send_sync::<JudgeError>();
}

#[test]
fn anthropic_prompt_mode_parses_text_and_truncation_is_reported() {
    let server = MockServer::start();
    server.push(MockReply::text(
        "Here it is: {\"reason\": \"r\", \"grounded\": 1}",
    ));
    let mut s = settings(&server, Provider::Anthropic);
    s.structured_output = StructuredOutput::Prompt;
    let r = client(s).complete(&grounded_request()).unwrap();
    assert_eq!(r.parsed["grounded"], 1);
    let b = &server.requests()[0].body;
    assert!(b.get("tools").is_none());
    assert!(b["system"].as_str().unwrap().contains("JSON schema"));

    let server = MockServer::start();
    let full = json!({"reason": "a long reason", "grounded": 1});
    server.push_all([
        MockReply::truncated(full.clone(), 15),
        MockReply::truncated(full, 15),
    ]);
    let err = client(settings(&server, Provider::Anthropic))
        .complete(&grounded_request())
        .unwrap_err();
    assert!(err.to_string().contains("cut off at max_tokens"), "{err}");
}

#[test]
fn token_estimates() {
    let req = grounded_request();
    let m = oloproof_judge::estimate_tokens(&req.messages);
    assert!(m > 3 && oloproof_judge::estimate_request_tokens(&req) > m);
}
