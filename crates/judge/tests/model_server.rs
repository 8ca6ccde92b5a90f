//! The OpenAI client against a real OpenAI-compatible server: llama.cpp's `llama-server`
//! serving SmolLM2-135M-Instruct (GGUF from PyPI). `scripts/test` builds the server
//! (`scripts/llama-server`) and runs these with `--ignored --test-threads=1` in their own step
//! (one test at a time: the concurrency test counts every call in flight in the process).
//!
//! A 135M model judges badly: these check the plumbing — a grammar-enforced `json_schema`
//! reply that validates, `json_object`/`prompt` replies observed or failed with a reason,
//! usage and cost as the server counts them, the concurrency limit, timeouts and a server
//! restarted mid-call — never the verdicts.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use oloproof_judge::model_server::{ModelServer, ServerOptions};
use oloproof_judge::{
    schema, templates, JudgeClient, JudgeError, JudgeRequest, JudgeSettings, Prices, Provider,
    StructuredOutput,
};
use serde_json::{json, Value};

/// A server of its own for each test (a `static` one would never be dropped, and its process
/// would outlive the test binary); SmolLM2-135M loads in about a second.
fn server() -> ModelServer {
    ModelServer::start_from_env(ServerOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn settings(server: &ModelServer, mode: StructuredOutput) -> JudgeSettings {
    let model = server.model_id().unwrap();
    let mut s = JudgeSettings::new(Provider::Openai, &server.base_url(), &model, None);
    s.structured_output = mode;
    s.seed = Some(7);
    // `max_concurrency` and `timeout_s` at their defaults: the server's two slots cap the
    // first, the reply budget sets the second.
    s
}

fn client(s: JudgeSettings) -> JudgeClient {
    JudgeClient::new("local-server", s).unwrap()
}

fn context() -> Vec<String> {
    vec![
        "The Eiffel Tower is in Paris. It was completed in 1889.".to_string(),
        "Paris is the capital of France.".to_string(),
    ]
}

/// Requests of four templates: a single verdict, a rubric score, a claim list and a verdict
/// list with a fixed number of items.
fn requests() -> Vec<JudgeRequest> {
    let claims = vec![
        "The Eiffel Tower is in Paris.".to_string(),
        "The Eiffel Tower was completed in 1889.".to_string(),
        "The Eiffel Tower is in Berlin.".to_string(),
    ];
    vec![
        templates::groundedness(
            "Where is the Eiffel Tower?",
            &context(),
            "It is in Paris.",
            0,
        ),
        templates::rubric(
            "Where is the Eiffel Tower?",
            "It is in Paris, France.",
            None,
            0,
        ),
        templates::claim_extraction(
            "Where is the Eiffel Tower?",
            "The Eiffel Tower is in Paris. It was completed in 1889.",
            0,
        ),
        templates::claim_verification(&context(), &claims, 0),
    ]
}

/// A failed call names what failed, and is one of the errors a judge call may end in.
fn assert_failure_is_reported(e: &JudgeError, what: &str) {
    let text = e.to_string();
    assert!(
        !text.trim().is_empty(),
        "{what}: an error without a message"
    );
    assert!(
        matches!(
            e.kind(),
            "invalid_output" | "truncated" | "timeout" | "http" | "transport"
        ),
        "{what}: unexpected error kind {}: {text}",
        e.kind()
    );
}

#[test]
#[ignore = "needs llama-server: scripts/test builds it and runs this file with --ignored"]
fn json_schema_replies_are_enforced_by_the_grammar() {
    let server = &server();
    // `/v1/models` names the model by its file path.
    let model = server.model_id().unwrap();
    assert!(model.ends_with(".gguf"), "{model}");
    let judge = client(settings(server, StructuredOutput::JsonSchema));
    let mut verification = None;
    for request in requests() {
        let r = judge.complete(&request).unwrap_or_else(|e| {
            let raw = match &e {
                JudgeError::Truncated { raw, .. } | JudgeError::InvalidOutput { raw, .. } => {
                    raw.as_str()
                }
                _ => "",
            };
            panic!("{}: {e}\nlast reply: {raw}", request.template_id)
        });
        // The grammar holds the model to the schema, minItems/maxItems included.
        schema::validate(&request.schema, &r.parsed)
            .unwrap_or_else(|e| panic!("{}: {e}: {}", request.template_id, r.raw));
        assert!(r.usage.input_tokens > 0 && r.usage.output_tokens > 0);
        assert!(
            r.usage.output_tokens <= u64::from(judge.settings().max_tokens_for(&request)) * 2,
            "{}: {} output tokens",
            request.template_id,
            r.usage.output_tokens
        );
        verification = Some(r);
    }
    // The last, claim verification, has exactly one verdict per claim (minItems = maxItems).
    let r = verification.unwrap();
    assert_eq!(
        r.parsed["verdicts"].as_array().unwrap().len(),
        3,
        "{}",
        r.raw
    );
    templates::check_ids(&r.parsed, "verdicts", 3).unwrap();
}

#[test]
#[ignore = "needs llama-server: scripts/test builds it and runs this file with --ignored"]
fn json_object_and_prompt_replies_are_observed_or_fail_with_a_reason() {
    let server = &server();
    for mode in [StructuredOutput::JsonObject, StructuredOutput::Prompt] {
        let judge = client(settings(server, mode));
        // One single-verdict request per mode: a 135M model rarely writes valid JSON unguided,
        // and each failure costs a repair request.
        for request in requests().into_iter().take(1) {
            let what = format!("{} {}", mode.as_str(), request.template_id);
            match judge.complete(&request) {
                Ok(r) => {
                    schema::validate(&request.schema, &r.parsed)
                        .unwrap_or_else(|e| panic!("{what}: returned an invalid reply: {e}"));
                }
                Err(e) => assert_failure_is_reported(&e, &what),
            }
        }
        let totals = judge.totals();
        assert!(totals.calls >= 1, "{mode:?}: {totals:?}");
        assert!(
            totals.usage.input_tokens > 0,
            "{mode:?}: tokens of failed calls count too"
        );
    }
}

#[test]
#[ignore = "needs llama-server: scripts/test builds it and runs this file with --ignored"]
fn usage_and_cost_are_the_servers_token_counts() {
    let server = &server();
    let mut s = settings(server, StructuredOutput::JsonSchema);
    s.prices = Some(Prices {
        input_per_mtok: 0.5,
        output_per_mtok: 1.5,
    });
    let judge = client(s);
    let request = &requests()[0];
    let r = judge.complete(request).unwrap();
    // The prompt as the server renders it with the model's chat template, counted by its
    // tokenizer: what it bills as prompt tokens.
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|m| json!({"role": m.role, "content": m.content}))
        .collect();
    let prompt = server
        .post_json("/apply-template", &json!({"messages": messages}))
        .unwrap()["prompt"]
        .as_str()
        .unwrap()
        .to_string();
    let tokens = server
        .post_json(
            "/tokenize",
            &json!({"content": prompt, "add_special": true, "parse_special": true}),
        )
        .unwrap()["tokens"]
        .as_array()
        .unwrap()
        .len() as u64;
    let calls = if r.repaired { 2 } else { 1 };
    if calls == 1 {
        assert_eq!(
            r.usage.input_tokens, tokens,
            "prompt tokens as the server counts them"
        );
    }
    let expected = (r.usage.input_tokens as f64 * 0.5 + r.usage.output_tokens as f64 * 1.5) / 1e6;
    assert!((r.cost_usd.unwrap() - expected).abs() < 1e-15);
    let totals = judge.totals();
    assert_eq!(totals.usage, r.usage);
    assert!((totals.cost_usd - expected).abs() < 1e-15);
}

#[test]
#[ignore = "needs llama-server: scripts/test builds it and runs this file with --ignored"]
fn concurrent_calls_hold_to_the_endpoint_limit() {
    let server = &server();
    let judge = Arc::new(client(settings(server, StructuredOutput::JsonSchema)));
    // `GET /props` reports the server's `--parallel 2`; the default 8 is capped at it.
    assert_eq!(server.get_json("/props").unwrap()["total_slots"], 2);
    assert_eq!(judge.server_slots(), Some(2));
    assert_eq!(judge.concurrency(), 2);
    let peak = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (peak, stop) = (peak.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(oloproof_judge::calls_in_flight(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let judge = judge.clone();
            std::thread::spawn(move || {
                let request = templates::groundedness(
                    "Where is the Eiffel Tower?",
                    &context(),
                    &format!("It is in Paris (answer {i})."),
                    0,
                );
                judge.complete(&request)
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    for r in &results {
        if let Err(e) = r {
            panic!("a concurrent call failed: {e}");
        }
    }
    assert_eq!(judge.totals().calls, 4);
    let peak = peak.load(Ordering::Relaxed);
    // Four calls at once, two slots' worth allowed (the server's slots); the file runs one
    // test at a time, so no other call is in flight.
    assert_eq!(peak, 2, "peak in flight");
    assert!(
        server
            .metric("llamacpp:prompt_tokens_total")
            .unwrap()
            .unwrap()
            > 0.0
    );
}

#[test]
#[ignore = "needs llama-server: scripts/test builds it and runs this file with --ignored"]
fn a_timeout_on_a_local_server_fails_without_retries() {
    let server = &server();
    let mut s = settings(server, StructuredOutput::JsonSchema);
    s.timeout_s = Some(0.001);
    s.max_retries = 3;
    let err = client(s.clone()).complete(&requests()[2]).unwrap_err();
    assert!(
        matches!(err, JudgeError::Timeout { attempts: 1, .. }),
        "a loopback server's timeout is not retried: {err}"
    );
    assert!(err.to_string().contains("raise `timeout_s`"), "{err}");
    // Asked for, timeouts are retried.
    s.retry_timeouts = Some(true);
    let judge = client(s).with_backoff(Duration::from_millis(5), Duration::from_millis(10));
    let err = judge.complete(&requests()[2]).unwrap_err();
    assert!(
        matches!(err, JudgeError::Timeout { attempts: 4, .. }),
        "{err}"
    );
}

/// Waits until the server is decoding a request (its `/metrics` gauge
/// `llamacpp:requests_processing` above 0), at most `limit`.
fn wait_until_processing(server: &ModelServer, limit: Duration) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if server
            .metric("llamacpp:requests_processing")
            .ok()
            .flatten()
            .is_some_and(|n| n > 0.0)
        {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

#[test]
#[ignore = "needs llama-server: scripts/test builds it and runs this file with --ignored"]
fn a_server_restarted_mid_call_is_retried() {
    let server = Arc::new(
        ModelServer::start_from_env(ServerOptions {
            parallel: 1,
            ..ServerOptions::default()
        })
        .unwrap_or_else(|e| panic!("{e}")),
    );
    let mut s = settings(&server, StructuredOutput::JsonSchema);
    // Backoff 200 ms doubling to 1 s: twelve retries wait about 9 s for the restart.
    s.max_retries = 12;
    let judge =
        Arc::new(client(s).with_backoff(Duration::from_millis(200), Duration::from_millis(1000)));
    // A long reply: one verdict and its reason for each of twelve claims (the grammar holds
    // the model to exactly twelve), so the server is still decoding when it is killed.
    let claims: Vec<String> = (1..=12)
        .map(|i| format!("The Eiffel Tower was repainted in {}.", 1900 + i))
        .collect();
    let request = templates::claim_verification(&context(), &claims, 0);
    let call = {
        let (judge, request) = (judge.clone(), request.clone());
        std::thread::spawn(move || judge.complete(&request))
    };
    assert!(
        wait_until_processing(&server, Duration::from_secs(60)),
        "the request never reached the server\n{}",
        server.log_tail(20)
    );
    // Killed while it decodes: the connection drops mid-request.
    server.kill();
    std::thread::sleep(Duration::from_millis(700));
    server.restart().unwrap_or_else(|e| panic!("{e}"));
    let r = call.join().unwrap().unwrap_or_else(|e| {
        panic!("{e}\n{}", server.log_tail(20));
    });
    assert!(
        r.attempts > 1,
        "the first attempt was cut by the kill: {} attempt(s)",
        r.attempts
    );
    schema::validate(&request.schema, &r.parsed).unwrap();
    // The reply came from the restarted server: its counters start at zero.
    let served = server
        .metric("llamacpp:prompt_tokens_total")
        .unwrap()
        .unwrap_or(0.0);
    assert!(served > 0.0, "the restarted server served no prompt");
}
