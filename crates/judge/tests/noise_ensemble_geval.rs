//! Noise sensitivity, judge ensembles and probability-weighted (G-Eval) rubric scores against
//! the scripted server.

use std::time::Duration;

use oloproof_judge::mock::{MockReply, MockServer};
use oloproof_judge::ragas::{self, EnsembleRule, NoiseMode, RubricOptions, Sample};
use oloproof_judge::{JudgeClient, JudgeSettings, MemoryCache, NoCache, Provider};
use serde_json::{json, Value};

fn judge_at(server: &MockServer, name: &str, provider: Provider, model: &str) -> JudgeClient {
    let s = JudgeSettings::new(provider, &server.base_url(), model, None);
    JudgeClient::new(name, s)
        .unwrap()
        .with_backoff(Duration::from_millis(5), Duration::from_millis(20))
}

fn judge(server: &MockServer) -> JudgeClient {
    judge_at(server, "default", Provider::Openai, "judge-model")
}

fn verdicts(field: &str, flags: &[u8]) -> Value {
    let items: Vec<Value> = flags
        .iter()
        .enumerate()
        .map(|(i, f)| json!({"id": i + 1, "reason": "r", field: f}))
        .collect();
    json!({ "verdicts": items })
}

fn attribution(sets: &[&[u32]]) -> Value {
    let items: Vec<Value> = sets
        .iter()
        .enumerate()
        .map(|(i, c)| json!({"id": i + 1, "reason": "r", "chunks": c}))
        .collect();
    json!({ "verdicts": items })
}

fn contexts() -> Vec<String> {
    vec![
        "Refunds are accepted within 14 days of delivery.".to_string(),
        "Our office is in Lyon and opened in 1998.".to_string(),
    ]
}

fn script_noise(server: &MockServer) {
    server.push_all([
        // Answer claims.
        MockReply::json(json!({"claims": ["Refunds within 14 days.", "Refunds within 30 days.", "The office is in Paris."]})),
        // Reference claims.
        MockReply::json(json!({"claims": ["Refunds are accepted within 14 days."]})),
        // Answer claims against the reference: only the first is correct.
        MockReply::json(verdicts("verdict", &[1, 0, 0])),
        // Reference claims to chunks: chunk 1 is relevant, chunk 2 is not.
        MockReply::json(attribution(&[&[1]])),
        // Answer claims to chunks.
        MockReply::json(attribution(&[&[1], &[1], &[2]])),
    ]);
}

#[test]
fn noise_sensitivity_relevant_and_irrelevant() {
    let server = MockServer::start();
    script_noise(&server);
    let j = judge(&server);
    let ctx = contexts();
    let sample = Sample {
        question: "What is the refund window?",
        answer: "Within 14 days, or 30 days; we are in Paris.",
        contexts: &ctx,
        reference: Some("Refunds are accepted within 14 days of delivery."),
    };
    let cache = MemoryCache::new();
    let rel = ragas::noise_sensitivity(&j, &cache, &sample, NoiseMode::Relevant, 0).unwrap();
    assert!((rel.value.unwrap() - 1.0 / 3.0).abs() < 1e-12);
    assert_eq!(rel.calls.len(), 5);
    assert_eq!(rel.calls[4].template_id, "claim_attribution");
    assert_eq!(rel.detail["chunks"][0]["relevant"], true);
    assert_eq!(rel.detail["chunks"][1]["relevant"], false);
    assert_eq!(rel.detail["claims"][1]["counted"], true);
    assert_eq!(rel.detail["claims"][2]["from_irrelevant_only"], true);
    assert_eq!(server.request_count(), 5);
    // The same judgments, the other mode: all from the cache.
    let irr = ragas::noise_sensitivity(&j, &cache, &sample, NoiseMode::Irrelevant, 0).unwrap();
    assert!((irr.value.unwrap() - 1.0 / 3.0).abs() < 1e-12);
    assert_eq!(irr.detail["claims"][2]["counted"], true);
    assert_eq!(irr.detail["claims"][1]["counted"], false);
    assert!(irr.calls.iter().all(|c| c.cached));
    assert_eq!(server.request_count(), 5);
}

#[test]
fn noise_sensitivity_exclusions_and_bad_chunk_ids() {
    let server = MockServer::start();
    let j = judge(&server);
    let ctx = contexts();
    let mut sample = Sample {
        question: "q",
        answer: "I don't know.",
        contexts: &ctx,
        reference: None,
    };
    let s = ragas::noise_sensitivity(&j, &NoCache, &sample, NoiseMode::Relevant, 0).unwrap();
    assert_eq!(s.excluded_reason, Some("no_reference"));
    sample.reference = Some("14 days.");
    server.push(MockReply::json(json!({"claims": []})));
    let s = ragas::noise_sensitivity(&j, &NoCache, &sample, NoiseMode::Relevant, 0).unwrap();
    assert_eq!(s.excluded_reason, Some("no_claims"));
    // A chunk number out of range is repaired once, then the judgment is missing.
    server.push_all([
        MockReply::json(json!({"claims": ["a"]})),
        MockReply::json(json!({"claims": ["b"]})),
        MockReply::json(verdicts("verdict", &[0])),
        MockReply::json(attribution(&[&[7]])),
        MockReply::json(attribution(&[&[9]])),
    ]);
    let e = ragas::noise_sensitivity(&j, &NoCache, &sample, NoiseMode::Relevant, 0).unwrap_err();
    assert!(e.to_string().contains("numbered 1 to 2"), "{e}");
}

#[test]
fn an_ensemble_of_two_judges_reports_disagreement() {
    let (a, b) = (MockServer::start(), MockServer::start());
    a.push(MockReply::json(json!({"reason": "ok", "grounded": 1})));
    b.push(MockReply::json(json!({"reason": "no", "grounded": 0})));
    let ja = judge_at(&a, "gpt", Provider::Openai, "model-a");
    let jb = judge_at(&b, "claude", Provider::Anthropic, "model-b");
    let ctx = contexts();
    let sample = Sample {
        question: "q",
        answer: "14 days.",
        contexts: &ctx,
        reference: None,
    };
    let results: Vec<_> = [&ja, &jb]
        .iter()
        .map(|j| {
            (
                j.name().to_string(),
                ragas::groundedness_judge(j, &NoCache, &sample, 0).unwrap(),
            )
        })
        .collect();
    let s = ragas::ensemble(EnsembleRule::Unanimous, results.clone());
    assert_eq!(s.value, Some(0.0));
    assert_eq!(s.detail["disagreement"], true);
    assert_eq!(s.detail["judges"][0]["judge"], "gpt");
    assert_eq!(s.detail["judges"][0]["value"], 1.0);
    assert_eq!(s.detail["judges"][1]["value"], 0.0);
    assert_eq!(s.calls.len(), 2);
    assert_eq!(
        ragas::ensemble(EnsembleRule::Mean, results).value,
        Some(0.5)
    );
    assert!(b.requests()[0].path.ends_with("/messages"));
}

fn rubric_sample(ctx: &[String]) -> Sample<'_> {
    Sample {
        question: "What is the refund window?",
        answer: "14 days from delivery.",
        contexts: ctx,
        reference: None,
    }
}

#[test]
fn probability_weighted_rubric_scores() {
    let server = MockServer::start();
    server.push(
        MockReply::json(json!({"reason": "mostly right", "score": 4}))
            .with_top_logprobs("\"score\":", &[("4", 0.6), ("5", 0.3), ("3", 0.1)]),
    );
    let j = judge(&server);
    let ctx = contexts();
    let options = RubricOptions {
        rubric: None,
        with_context: true,
        probability_weighted: true,
    };
    let cache = MemoryCache::new();
    let s = ragas::rubric_judge_with(&j, &cache, &rubric_sample(&ctx), &options, 0).unwrap();
    assert!((s.value.unwrap() - 4.2).abs() < 1e-9, "{:?}", s.value);
    assert_eq!(s.detail["probability_weighted"], true);
    assert_eq!(s.detail["parsed_score"], 4.0);
    assert!((s.detail["probabilities"]["5"].as_f64().unwrap() - 0.3).abs() < 1e-9);
    let sent = &server.requests()[0].body;
    assert_eq!(sent["logprobs"], true);
    assert_eq!(sent["top_logprobs"], 5);
    let user = sent["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains("[1] Refunds are accepted"), "{user}");
    // A cache hit keeps the log-probabilities.
    let again = ragas::rubric_judge_with(&j, &cache, &rubric_sample(&ctx), &options, 0).unwrap();
    assert!(again.calls[0].cached);
    assert!((again.value.unwrap() - 4.2).abs() < 1e-9);
    assert_eq!(server.request_count(), 1);
    // Not weighted: another cache key, no logprobs asked.
    server.push(MockReply::json(json!({"reason": "ok", "score": 4})));
    let plain = RubricOptions {
        probability_weighted: false,
        ..options
    };
    let p = ragas::rubric_judge_with(&j, &cache, &rubric_sample(&ctx), &plain, 0).unwrap();
    assert_eq!(p.value, Some(4.0));
    assert_eq!(server.request_count(), 2);
    assert!(server.requests()[1].body.get("logprobs").is_none());
}

#[test]
fn weighted_rubric_falls_back_without_logprobs() {
    // Anthropic returns no log-probabilities: the parsed score, and the detail says so.
    let server = MockServer::start();
    server.push(MockReply::json(json!({"reason": "ok", "score": 3})));
    let j = judge_at(&server, "claude", Provider::Anthropic, "claude-x");
    let ctx = contexts();
    let options = RubricOptions {
        probability_weighted: true,
        ..RubricOptions::default()
    };
    let s = ragas::rubric_judge_with(&j, &NoCache, &rubric_sample(&ctx), &options, 0).unwrap();
    assert_eq!(s.value, Some(3.0));
    assert_eq!(s.detail["probability_weighted"], false);
    let why = s.detail["fallback"].as_str().unwrap();
    assert!(why.contains("no log-probabilities"), "{why}");
    // OpenAI with certain tokens (the mock's default): the weighted score is the parsed one.
    let server = MockServer::start();
    server.push(MockReply::json(json!({"reason": "ok", "score": 2})));
    let j = judge(&server);
    let s = ragas::rubric_judge_with(&j, &NoCache, &rubric_sample(&ctx), &options, 0).unwrap();
    assert_eq!(s.value, Some(2.0));
    assert_eq!(s.detail["probability_weighted"], true);
}
