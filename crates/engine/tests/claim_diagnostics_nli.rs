//! Claim-level diagnostics with a local NLI judge: the answer's and the reference's sentences
//! checked pair by pair (the other text, each chunk) by the model, entailed at probability ≥
//! `threshold`; every pair score through the judge-call cache, so the eleven criteria of a
//! case score each pair once. A tiny randomly initialised classifier checks the plumbing
//! against the model's own scores; it is not expected to judge well.
#![cfg(feature = "local-models")]

use std::collections::BTreeMap;

use oloproof_core::case::Case;
use oloproof_core::trace::Trace;
use oloproof_engine::evaluators::from_json;
use oloproof_engine::judged::{JudgeEnv, JudgeRegistry};
use oloproof_judge::MemoryCache;
use oloproof_metrics::rag::ragchecker::Metric;
use serde_json::{json, Value};

#[test]
fn checks_are_the_models_scores_against_the_threshold_and_scored_once() {
    let tmp = tempfile::tempdir().unwrap();
    oloproof_local::testing::write_tiny_classifier(
        tmp.path(),
        &["contradiction", "neutral", "entailment"],
        11,
    )
    .unwrap();
    let path = tmp.path().to_str().unwrap();
    let judges: BTreeMap<String, Value> =
        serde_json::from_value(json!({"nli": {"provider": "local", "kind": "nli", "path": path}}))
            .unwrap();
    let registry = JudgeRegistry::from_options(&judges).unwrap();
    let judge = registry.client("nli").unwrap();
    let docs = [
        "the refund window is fourteen days",
        "shipping takes three weeks",
    ];
    let answer = "Refund is fourteen days. Shipping takes one day.";
    let reference = "The refund window is fourteen days.";
    let case: Case = serde_json::from_value(json!({
        "id": "c", "input": {"question": "q"}, "expected": {"answer": reference}
    }))
    .unwrap();
    let trace: Trace = serde_json::from_value(json!({
        "schema_version": 1, "case_id": "c",
        "context": {"passages": [
            {"position": 1, "doc_id": "a", "text": docs[0]},
            {"position": 2, "doc_id": "b", "text": docs[1]}
        ], "dropped": [], "truncated": false},
        "generation": {"answer": answer}
    }))
    .unwrap();
    let score = |premise: &str, hypothesis: &str| -> f64 {
        f64::from(
            judge
                .score_pairs(&[(premise.to_string(), hypothesis.to_string())])
                .unwrap()[0],
        )
    };
    let answer_claims = ["Refund is fourteen days.", "Shipping takes one day."];
    for threshold in [0.0, 0.375, 0.625, 1.0] {
        let cache = MemoryCache::new();
        let env = JudgeEnv {
            judges: &registry,
            cache: &cache,
        };
        let mut details = Vec::new();
        let mut values = BTreeMap::new();
        for metric in Metric::ALL {
            let e =
                from_json(&json!({"type": metric.name(), "judge": "nli", "threshold": threshold}))
                    .unwrap();
            let v = e.evaluate(&case, &trace, Some(&env));
            assert!(
                v.detail["calls"].as_array().unwrap().is_empty(),
                "no LLM call"
            );
            values.insert(metric, v.verdict.value());
            details.push(v.detail["result"].clone());
            // 2 answer claims × (reference + 2 chunks) + 1 reference claim × (answer + 2
            // chunks): 9 pairs, scored once for all eleven criteria.
            assert_eq!(cache.len(), 9, "{metric:?}");
        }
        assert!(
            details.windows(2).all(|w| w[0] == w[1]),
            "one shared detail"
        );
        let d = &details[0];
        assert_eq!(d["method"], "nli");
        // Every answer claim's verdicts are the model's scores against the threshold.
        for (i, claim) in answer_claims.iter().enumerate() {
            let c = &d["answer_claims"][i];
            assert_eq!(c["claim"], *claim);
            let in_ref = score(reference, claim) >= threshold;
            assert_eq!(c["in_reference"], in_ref, "{claim} at {threshold}");
            let chunks: Vec<usize> = (0..2)
                .filter(|&k| score(docs[k], claim) >= threshold)
                .map(|k| k + 1)
                .collect();
            assert_eq!(c["chunks"], json!(chunks), "{claim} at {threshold}");
            let p = c["probabilities"]["chunks"][0].as_f64().unwrap();
            assert!((p - score(docs[0], claim)).abs() < 1e-6);
        }
        let r = &d["reference_claims"][0];
        assert_eq!(r["in_answer"], score(answer, reference) >= threshold);
        // The identity, per case, whatever the model says.
        let sum = [
            Metric::Faithfulness,
            Metric::Hallucination,
            Metric::SelfKnowledge,
        ]
        .iter()
        .map(|m| values[m].unwrap())
        .sum::<f64>();
        assert!((sum - 1.0).abs() < 1e-12, "{values:?}");
        if threshold == 0.0 {
            // Everything entails everything: a perfect case.
            assert_eq!(values[&Metric::Precision], Some(1.0));
            assert_eq!(values[&Metric::Faithfulness], Some(1.0));
            assert_eq!(values[&Metric::RetrieverContextPrecision], Some(1.0));
        }
        if threshold == 1.0 {
            // A random model is never certain. Nothing entails anything.
            assert_eq!(values[&Metric::Hallucination], Some(1.0));
            assert_eq!(values[&Metric::RetrieverClaimRecall], Some(0.0));
            // No reference claim is retrieved: utilisation has no denominator (excluded).
            assert_eq!(values[&Metric::ContextUtilisation], None);
        }
    }
}
