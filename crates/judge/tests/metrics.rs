//! The judged metrics end to end against the scripted server.

use std::time::Duration;

use oloproof_judge::mock::{MockReply, MockServer, RecordedRequest};
use oloproof_judge::ragas::{self, Aggregation, FactualMode, Sample};
use oloproof_judge::templates::CitedStatement;
use oloproof_judge::{JudgeClient, JudgeError, JudgeSettings, MemoryCache, NoCache, Provider};
use serde_json::{json, Value};

fn judge(server: &MockServer) -> JudgeClient {
    let s = JudgeSettings::new(Provider::Openai, &server.base_url(), "judge-model", None);
    JudgeClient::new("default", s)
        .unwrap()
        .with_backoff(Duration::from_millis(5), Duration::from_millis(20))
}

fn template(r: &RecordedRequest) -> String {
    r.body["response_format"]["json_schema"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn user_text(r: &RecordedRequest) -> String {
    r.body["messages"][1]["content"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn verdicts(field: &str, flags: &[u8]) -> Value {
    let items: Vec<Value> = flags
        .iter()
        .enumerate()
        .map(|(i, f)| json!({"id": i + 1, "reason": "r", field: f}))
        .collect();
    json!({ "verdicts": items })
}

fn ctx() -> Vec<String> {
    vec![
        "You can pause a subscription for up to 3 months.".to_string(),
        "Paused subscriptions keep their pricing.".to_string(),
    ]
}

#[test]
fn faithfulness_counts_supported_claims() {
    let server = MockServer::start();
    server.push_all([
        MockReply::json(json!({"claims": ["You can pause for 6 months.", "You get a free bag.", "Pricing is kept."]})),
        MockReply::json(verdicts("verdict", &[0, 0, 1])),
    ]);
    let j = judge(&server);
    let contexts = ctx();
    let sample = Sample {
        question: "Can I pause?",
        answer: "Yes, for 6 months…",
        contexts: &contexts,
        reference: None,
    };
    let s = ragas::faithfulness(&j, &NoCache, &sample, 0).unwrap();
    assert!((s.value.unwrap() - 1.0 / 3.0).abs() < 1e-12);
    assert_eq!(s.calls.len(), 2);
    assert_eq!(s.calls[0].template_id, "claim_extraction");
    assert_eq!(s.calls[1].template_id, "claim_verification");
    assert_eq!(s.detail["claims"][2]["verdict"], 1);
    let sent = user_text(&server.requests()[1]);
    assert!(sent.contains("[3] Pricing is kept."), "{sent}");
}

#[test]
fn faithfulness_keeps_the_failure_mode_of_unsupported_claims_only() {
    let server = MockServer::start();
    server.push_all([
        MockReply::json(json!({"claims": ["You can pause for 6 months.", "You get a free bag.", "Pricing is kept."]})),
        MockReply::json(json!({"verdicts": [
            {"id": 1, "reason": "the context says 3 months", "verdict": 0, "failure_mode": "stale_fact"},
            // No mode given: none kept.
            {"id": 2, "reason": "not stated", "verdict": 0},
            // A mode on a supported claim means nothing: dropped.
            {"id": 3, "reason": "stated", "verdict": 1, "failure_mode": "other"},
        ]})),
    ]);
    let j = judge(&server);
    let contexts = ctx();
    let sample = Sample {
        question: "Can I pause?",
        answer: "Yes, for 6 months…",
        contexts: &contexts,
        reference: None,
    };
    let s = ragas::faithfulness(&j, &NoCache, &sample, 0).unwrap();
    assert_eq!(s.detail["claims"][0]["failure_mode"], "stale_fact");
    assert!(s.detail["claims"][1].get("failure_mode").is_none());
    assert!(s.detail["claims"][2].get("failure_mode").is_none());
    // A mode outside the list is a malformed reply (repaired once, then an error).
    server.push_all([
        MockReply::json(json!({"claims": ["A claim that is new."]})),
        MockReply::json(json!({"verdicts": [{"id": 1, "reason": "r", "verdict": 0, "failure_mode": "made_up"}]})),
        MockReply::json(json!({"verdicts": [{"id": 1, "reason": "r", "verdict": 0, "failure_mode": "made_up"}]})),
    ]);
    let other = Sample {
        answer: "Something else entirely…",
        ..sample
    };
    assert!(ragas::faithfulness(&j, &NoCache, &other, 0).is_err());
}

#[test]
fn a_refusal_has_no_claims_and_is_excluded() {
    let server = MockServer::start();
    server.push(MockReply::json(json!({"claims": []})));
    let j = judge(&server);
    let contexts = ctx();
    let sample = Sample {
        question: "Warranty?",
        answer: "I do not know.",
        contexts: &contexts,
        reference: None,
    };
    let s = ragas::faithfulness(&j, &NoCache, &sample, 0).unwrap();
    assert_eq!((s.value, s.excluded_reason), (None, Some("no_claims")));
    assert_eq!(server.request_count(), 1, "nothing to verify");
}

#[test]
fn wrong_verdict_counts_make_the_metric_missing() {
    let server = MockServer::start();
    server.push_all([
        MockReply::json(json!({"claims": ["a", "b"]})),
        MockReply::json(verdicts("verdict", &[1])),
        MockReply::json(verdicts("verdict", &[1, 1, 1])),
    ]);
    let j = judge(&server);
    let contexts = ctx();
    let sample = Sample {
        question: "q",
        answer: "a. b.",
        contexts: &contexts,
        reference: None,
    };
    let err = ragas::faithfulness(&j, &NoCache, &sample, 0).unwrap_err();
    assert!(matches!(err, JudgeError::InvalidOutput { .. }), "{err:?}");
}

#[test]
fn groundedness_and_citation_support() {
    let server = MockServer::start();
    server.push_all([
        MockReply::json(json!({"reason": "unsupported duration", "grounded": 0})),
        MockReply::json(verdicts("supported", &[1, 0])),
    ]);
    let j = judge(&server);
    let contexts = ctx();
    let sample = Sample {
        question: "q",
        answer: "6 months",
        contexts: &contexts,
        reference: None,
    };
    let g = ragas::groundedness_judge(&j, &NoCache, &sample, 0).unwrap();
    assert_eq!(g.value, Some(0.0));
    assert_eq!(g.detail["reason"], "unsupported duration");
    let items = vec![
        CitedStatement {
            statement: "Pause up to 3 months.".into(),
            sources: vec![contexts[0].clone()],
        },
        CitedStatement {
            statement: "A free bag.".into(),
            sources: vec![contexts[1].clone()],
        },
    ];
    let c = ragas::citation_support_judge(&j, &NoCache, "q", &items, 0).unwrap();
    assert_eq!(c.value, Some(0.5));
    let none = ragas::citation_support_judge(&j, &NoCache, "q", &[], 0).unwrap();
    assert_eq!(none.excluded_reason, Some("no_citations"));
    assert_eq!(server.request_count(), 2);
}

#[test]
fn context_precision_is_exact_average_precision() {
    let server = MockServer::start();
    server.push_all([
        MockReply::json(verdicts("useful", &[0, 0, 1])),
        MockReply::json(verdicts("useful", &[1, 0, 1])),
        MockReply::json(verdicts("useful", &[0, 0, 0])),
    ]);
    let j = judge(&server);
    let contexts = vec![
        "brewing".to_string(),
        "roast date".to_string(),
        "canada shipping".to_string(),
    ];
    let sample = Sample {
        question: "Canada?",
        answer: "Yes, 7-10 days.",
        contexts: &contexts,
        reference: Some("Yes. 7 to 10 days."),
    };
    let with_ref = ragas::context_precision(&j, &NoCache, &sample, true, 0).unwrap();
    assert!((with_ref.value.unwrap() - 1.0 / 3.0).abs() < 1e-15);
    assert!(user_text(&server.requests()[0]).contains("Reference answer: Yes. 7 to 10 days."));
    let without = ragas::context_precision(&j, &NoCache, &sample, false, 0).unwrap();
    assert!((without.value.unwrap() - (1.0 + 2.0 / 3.0) / 2.0).abs() < 1e-15);
    assert!(user_text(&server.requests()[1]).contains("Answer: Yes, 7-10 days."));
    let zero = ragas::context_precision(&j, &NoCache, &sample, false, 0).unwrap();
    assert_eq!(zero.value, Some(0.0));
    let no_ref = Sample {
        reference: None,
        ..sample
    };
    assert_eq!(
        ragas::context_precision(&j, &NoCache, &no_ref, true, 0)
            .unwrap()
            .excluded_reason,
        Some("no_reference")
    );
    let no_ctx = Sample {
        contexts: &[],
        ..sample
    };
    assert_eq!(
        ragas::context_precision(&j, &NoCache, &no_ctx, false, 0)
            .unwrap()
            .excluded_reason,
        Some("no_context")
    );
}

#[test]
fn context_recall_counts_attributed_statements() {
    let server = MockServer::start();
    server.push_all([
        MockReply::json(json!({"statements": [
            {"statement": "Pause up to 3 months.", "reason": "r", "attributed": 1},
            {"statement": "Two-year warranty.", "reason": "r", "attributed": 0}
        ]})),
        MockReply::json(json!({"statements": []})),
    ]);
    let j = judge(&server);
    let contexts = ctx();
    let sample = Sample {
        question: "q",
        answer: "a",
        contexts: &contexts,
        reference: Some("ref"),
    };
    assert_eq!(
        ragas::context_recall(&j, &NoCache, &sample, 0)
            .unwrap()
            .value,
        Some(0.5)
    );
    assert_eq!(
        ragas::context_recall(&j, &NoCache, &sample, 0)
            .unwrap()
            .excluded_reason,
        Some("no_reference_claims")
    );
}

#[test]
fn factual_correctness_precision_recall_f1_and_answer_correctness() {
    let server = MockServer::start();
    server.respond_with(|r| {
        let text = user_text(r);
        match template(r).as_str() {
            "claim_extraction" if text.contains("Answer: REF") => {
                MockReply::json(json!({"claims": ["r1", "r2", "r3", "r4"]}))
            }
            "claim_extraction" => MockReply::json(json!({"claims": ["a1", "a2"]})),
            // Answer claims against the reference: 1 of 2 supported.
            "claim_verification" if text.contains("[2] a2") => {
                MockReply::json(verdicts("verdict", &[1, 0]))
            }
            // Reference claims against the answer: 1 of 4 supported.
            "claim_verification" => MockReply::json(verdicts("verdict", &[1, 0, 0, 0])),
            other => MockReply::error(400, &format!("unexpected template {other}")),
        }
    });
    let j = judge(&server);
    let sample = Sample {
        question: "q",
        answer: "ANS",
        contexts: &[],
        reference: Some("REF"),
    };
    let cache = MemoryCache::new();
    let f = ragas::factual_correctness(&j, &cache, &sample, FactualMode::F1, 0).unwrap();
    let (p, r) = (0.5, 0.25);
    assert!((f.value.unwrap() - 2.0 * p * r / (p + r)).abs() < 1e-12);
    assert_eq!(f.detail["precision"], 0.5);
    assert_eq!(f.detail["recall"], 0.25);
    assert_eq!(f.calls.len(), 4);
    let recall = ragas::factual_correctness(&j, &cache, &sample, FactualMode::Recall, 0).unwrap();
    assert_eq!(recall.value, Some(0.25));
    assert!(recall.calls.iter().all(|c| c.cached));
    let embed = |texts: &[String]| -> Result<Vec<Vec<f32>>, JudgeError> {
        Ok(texts
            .iter()
            .map(|t| {
                if t == "ANS" {
                    vec![1.0, 0.0]
                } else {
                    vec![0.0, 1.0]
                }
            })
            .collect())
    };
    let ac = ragas::answer_correctness(&j, &cache, &embed, &sample, (0.75, 0.25), 0).unwrap();
    assert!((ac.value.unwrap() - 0.75 * (1.0 / 3.0)).abs() < 1e-12);
    assert_eq!(
        server.request_count(),
        4,
        "everything after the first run came from the cache"
    );
}

#[test]
fn answer_relevancy_with_mock_embeddings() {
    let server = MockServer::start();
    let q = "How much does standard shipping cost in the US?";
    server.push_all([
        MockReply::json(json!({"questions": [
            {"question": q, "noncommittal": 0},
            {"question": q, "noncommittal": 0},
            {"question": "When is coffee roasted?", "noncommittal": 0}
        ]})),
        MockReply::json(json!({"questions": [
            {"question": "x", "noncommittal": 1}, {"question": "y", "noncommittal": 1}, {"question": "z", "noncommittal": 1}
        ]})),
    ]);
    let j = judge(&server);
    let embed = |texts: &[String]| j.embed(texts);
    let sample = Sample {
        question: q,
        answer: "Shipping is $6.",
        contexts: &[],
        reference: Some("Shipping is $6."),
    };
    let s = ragas::answer_relevancy(&j, &NoCache, &embed, &sample, 3, 0).unwrap();
    let cos = s.detail["cosines"].as_array().unwrap();
    assert_eq!(cos.len(), 3);
    assert!((cos[0].as_f64().unwrap() - 1.0).abs() < 1e-9);
    assert!(s.value.unwrap() < 1.0 && s.value.unwrap() > 0.5);
    let sent = &server.requests()[0].body;
    assert_eq!(
        sent["response_format"]["json_schema"]["name"],
        "question_generation"
    );
    let embeds_before = server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/embeddings"))
        .count();
    assert_eq!(embeds_before, 1);
    let none = ragas::answer_relevancy(&j, &NoCache, &embed, &sample, 3, 0).unwrap();
    assert_eq!(none.value, Some(0.0));
    let embeds_after = server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/embeddings"))
        .count();
    assert_eq!(embeds_after, 1, "all noncommittal: nothing to embed");
    let sim = ragas::semantic_similarity(&embed, &sample).unwrap();
    assert!((sim.value.unwrap() - 1.0).abs() < 1e-9);
}

#[test]
fn question_similarity_is_the_question_answer_cosine() {
    // Fixed 2-d embeddings by text: the question along x, answers at known angles.
    let embed = |texts: &[String]| -> Result<Vec<Vec<f32>>, JudgeError> {
        Ok(texts
            .iter()
            .map(|t| match t.as_str() {
                "How long is the refund window?" => vec![1.0, 0.0],
                "Fourteen days." => vec![3.0, 4.0],
                _ => vec![0.0, 2.0],
            })
            .collect())
    };
    let sample = |answer| Sample {
        question: "How long is the refund window?",
        answer,
        contexts: &[],
        reference: None,
    };
    let on_topic = ragas::question_similarity(&embed, &sample("Fourteen days.")).unwrap();
    assert!((on_topic.value.unwrap() - 0.6).abs() < 1e-9);
    assert!((on_topic.detail["cosine"].as_f64().unwrap() - 0.6).abs() < 1e-9);
    let off_topic = ragas::question_similarity(&embed, &sample("Bananas.")).unwrap();
    assert_eq!(off_topic.value, Some(0.0));
    let empty = ragas::question_similarity(&embed, &sample("  ")).unwrap();
    assert_eq!(empty.value, None);
    assert_eq!(empty.excluded_reason, Some("no_answer"));
}

#[test]
fn pairwise_keeps_the_winner_only_when_both_orders_agree() {
    let server = MockServer::start();
    server.push_all([
        // A/B: A wins; B/A: B wins (that is the same answer): consistent.
        MockReply::json(json!({"reason": "", "winner": "A"})),
        MockReply::json(json!({"reason": "", "winner": "B"})),
        // Position bias: the first shown wins both times: a tie.
        MockReply::json(json!({"reason": "", "winner": "A"})),
        MockReply::json(json!({"reason": "", "winner": "A"})),
    ]);
    let j = judge(&server);
    let s = ragas::pairwise_judge(&j, &NoCache, "q", "good", "bad", 0).unwrap();
    assert_eq!(
        (s.value, s.detail["winner"].as_str()),
        (Some(1.0), Some("A"))
    );
    let second = user_text(&server.requests()[1]);
    assert!(
        second.contains("Answer A: bad") && second.contains("Answer B: good"),
        "{second}"
    );
    let t = ragas::pairwise_judge(&j, &NoCache, "q", "x", "y", 0).unwrap();
    assert_eq!(
        (
            t.value,
            t.detail["winner"].as_str(),
            t.detail["consistent"].as_bool()
        ),
        (Some(0.5), Some("tie"), Some(false))
    );
}

#[test]
fn rubric_scores_one_to_five() {
    let server = MockServer::start();
    server.push_all([
        MockReply::json(json!({"reason": "", "score": 6})),
        MockReply::json(json!({"reason": "ok", "score": 4})),
    ]);
    let j = judge(&server);
    let sample = Sample {
        question: "q",
        answer: "a",
        contexts: &[],
        reference: None,
    };
    let s = ragas::rubric_judge(&j, &NoCache, &sample, None, 0).unwrap();
    assert_eq!(s.value, Some(4.0));
    assert!(s.calls[0].repaired);
    let system = server.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        system.contains("4 = correct and complete, lacks polish"),
        "{system}"
    );
}

#[test]
fn self_consistency_repeats_are_distinct_calls_and_cached_across_runs() {
    let server = MockServer::start();
    let grounded = [1, 0, 1];
    server.push_all(
        grounded
            .iter()
            .map(|g| MockReply::json(json!({"reason": "", "grounded": g}))),
    );
    let j = judge(&server);
    let cache = MemoryCache::new();
    let contexts = ctx();
    let sample = Sample {
        question: "q",
        answer: "a",
        contexts: &contexts,
        reference: None,
    };
    let run = |r: u32| ragas::groundedness_judge(&j, &cache, &sample, r);
    let s = ragas::self_consistency(3, Aggregation::Majority, &run).unwrap();
    assert_eq!(s.value, Some(1.0));
    assert!((s.detail["agreement"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(s.calls.len(), 3);
    let keys: std::collections::HashSet<_> = s.calls.iter().map(|c| c.cache_key.clone()).collect();
    assert_eq!(keys.len(), 3);
    assert_eq!(server.request_count(), 3);
    // A second run with the same cache sends nothing and gives the same result.
    let again = ragas::self_consistency(3, Aggregation::Majority, &run).unwrap();
    assert_eq!(again.value, Some(1.0));
    assert!(again.calls.iter().all(|c| c.cached));
    assert_eq!(server.request_count(), 3);
}

#[test]
fn embeddings_are_cached_by_model_and_text() {
    let server = MockServer::start();
    let j = judge(&server);
    let cache = MemoryCache::new();
    let embeds = || {
        server
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/embeddings"))
            .map(|r| r.body["input"].clone())
            .collect::<Vec<_>>()
    };
    let bits = |v: &[Vec<f32>]| -> Vec<Vec<u32>> {
        v.iter()
            .map(|x| x.iter().map(|f| f.to_bits()).collect())
            .collect()
    };
    let texts: Vec<String> = ["refunds", "shipping", "warranty"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let first = j.embed_cached(&cache, &texts).unwrap();
    assert_eq!(embeds().len(), 1);
    assert_eq!(cache.len(), 3);
    // The same texts again: nothing sent, the same bits.
    let again = j.embed_cached(&cache, &texts).unwrap();
    assert_eq!(bits(&again), bits(&first));
    assert_eq!(embeds().len(), 1);
    // A cached text beside a new one: only the new one is sent, and the order is kept.
    let mixed = j
        .embed_cached(&cache, &["warranty".to_string(), "invoices".to_string()])
        .unwrap();
    assert_eq!(embeds().len(), 2);
    assert_eq!(embeds()[1], json!(["invoices"]));
    assert_eq!(bits(&mixed[..1]), bits(&first[2..]));
    assert_eq!(
        mixed,
        j.embed(&["warranty".into(), "invoices".into()]).unwrap()
    );
    // Another embedding model has its own keys.
    let mut s = JudgeSettings::new(Provider::Openai, &server.base_url(), "judge-model", None);
    s.embedding_model = Some("other-embedder".into());
    let other = JudgeClient::new("other", s).unwrap();
    assert_ne!(other.embedding_key("refunds"), j.embedding_key("refunds"));
    other.embed_cached(&cache, &texts).unwrap();
    assert_eq!(cache.len(), 7);
    // A failed call stores nothing.
    let dead = JudgeClient::new(
        "dead",
        JudgeSettings::new(
            Provider::Openai,
            "http://127.0.0.1:9/v1",
            "judge-model",
            None,
        ),
    )
    .unwrap()
    .with_backoff(Duration::from_millis(1), Duration::from_millis(2));
    assert!(dead.embed_cached(&cache, &["lost".to_string()]).is_err());
    assert_eq!(cache.len(), 7);
}
