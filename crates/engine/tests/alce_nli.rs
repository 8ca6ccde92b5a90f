//! ALCE citation quality with a local NLI judge: each entailment check is one premise
//! (the cited documents joined by newlines) and hypothesis (the sentence) scored by the model,
//! entailed at probability ≥ threshold. A tiny randomly initialised classifier checks the
//! plumbing against the model's own scores; it is not expected to judge well.
#![cfg(feature = "local-models")]

use oloproof_core::trace::Trace;
use oloproof_engine::evaluators::alce::{judge_citations, CitationMeasure, CitationSettings};
use oloproof_judge::ragas::Sample;
use oloproof_judge::{JudgeClient, JudgeSettings, LocalKind, NoCache};
use serde_json::json;

#[test]
fn entailment_flags_are_the_models_scores_against_the_threshold() {
    let tmp = tempfile::tempdir().unwrap();
    oloproof_local::testing::write_tiny_classifier(
        tmp.path(),
        &["contradiction", "neutral", "entailment"],
        5,
    )
    .unwrap();
    let judge = JudgeClient::new(
        "nli",
        JudgeSettings::local(LocalKind::Nli, tmp.path().to_str().unwrap()),
    )
    .unwrap();
    let docs = [
        "the refund window is fourteen days",
        "shipping takes three weeks",
    ];
    let trace: Trace = serde_json::from_value(json!({
        "schema_version": 1,
        "case_id": "c",
        "context": {
            "passages": [
                {"position": 1, "doc_id": "a", "text": docs[0]},
                {"position": 2, "doc_id": "b", "text": docs[1]}
            ],
            "dropped": [],
            "truncated": false
        },
        "generation": {"answer": "Refund is fourteen days [1]. Shipping takes one day [1][2]."}
    }))
    .unwrap();
    let sample = Sample {
        question: "q",
        answer: "Refund is fourteen days [1]. Shipping takes one day [1][2].",
        contexts: &[],
        reference: None,
    };
    let joint = judge
        .score_pairs(&[
            (docs[0].to_string(), "Refund is fourteen days.".to_string()),
            (
                format!("{}\n{}", docs[0], docs[1]),
                "Shipping takes one day.".to_string(),
            ),
        ])
        .unwrap();
    for threshold in [0.0, 0.5, 1.01] {
        let s = judge_citations(
            &judge,
            &NoCache,
            &sample,
            &trace,
            CitationSettings {
                at_most_citations: None,
                nli_threshold: threshold,
                measure: CitationMeasure::Recall,
            },
            0,
        )
        .unwrap();
        let expected: Vec<bool> = joint.iter().map(|&p| f64::from(p) >= threshold).collect();
        let got: Vec<bool> = (0..2)
            .map(|i| s.detail["sentences"][i]["entailed"].as_bool().unwrap())
            .collect();
        assert_eq!(got, expected, "threshold {threshold}: scores {joint:?}");
        let recall = expected.iter().filter(|e| **e).count() as f64 / 2.0;
        assert_eq!(s.value, Some(recall));
        // No LLM call is made: the checks are the model's.
        assert!(s.calls.is_empty());
    }
}

/// `faithfulness`, `context_recall` and `citation_support_judge` with a local NLI `judge:`:
/// sentences checked against the context passages by the model, no LLM call.
#[test]
fn nli_judge_verifies_claims_for_the_ragas_evaluators() {
    use oloproof_core::case::Case;
    use oloproof_engine::judged::{JudgeEnv, JudgeRegistry};
    use std::collections::BTreeMap;

    let tmp = tempfile::tempdir().unwrap();
    oloproof_local::testing::write_tiny_classifier(
        tmp.path(),
        &["contradiction", "neutral", "entailment"],
        9,
    )
    .unwrap();
    let path = tmp.path().to_str().unwrap();
    let judges: BTreeMap<String, serde_json::Value> =
        serde_json::from_value(json!({"nli": {"provider": "local", "kind": "nli", "path": path}}))
            .unwrap();
    let registry = JudgeRegistry::from_options(&judges).unwrap();
    let env = JudgeEnv {
        judges: &registry,
        cache: &NoCache,
    };
    let docs = [
        "the refund window is fourteen days",
        "shipping takes three weeks",
    ];
    let answer = "Refund is fourteen days. Shipping takes one day.";
    let case: Case = serde_json::from_value(json!({
        "id": "c", "input": {"question": "q"},
        "expected": {"answer": "The refund window is fourteen days."}
    }))
    .unwrap();
    let trace: Trace = serde_json::from_value(json!({
        "schema_version": 1, "case_id": "c",
        "context": {"passages": [
            {"position": 1, "doc_id": "a", "text": docs[0]},
            {"position": 2, "doc_id": "b", "text": docs[1]}
        ], "dropped": [], "truncated": false},
        "generation": {"answer": answer, "citations": ["a"]}
    }))
    .unwrap();
    let judge = registry.client("nli").unwrap();
    let best = |hypothesis: &str, premises: &[&str]| -> f32 {
        let pairs: Vec<(String, String)> = premises
            .iter()
            .map(|p| (p.to_string(), hypothesis.to_string()))
            .collect();
        judge
            .score_pairs(&pairs)
            .unwrap()
            .into_iter()
            .fold(f32::MIN, f32::max)
    };
    let share = |hypotheses: &[&str], premises: &[&str], threshold: f32| -> f64 {
        hypotheses
            .iter()
            .filter(|h| best(h, premises) >= threshold)
            .count() as f64
            / hypotheses.len() as f64
    };
    for threshold in [0.0f32, 0.375, 0.625, 1.0] {
        let run = |kind: &str| {
            let evaluator = oloproof_engine::evaluators::from_json(
                &json!({"type": kind, "judge": "nli", "threshold": threshold}),
            )
            .unwrap();
            let v = evaluator.evaluate(&case, &trace, Some(&env));
            assert!(v.detail["calls"].as_array().unwrap().is_empty());
            v.verdict.value()
        };
        let sentences = ["Refund is fourteen days.", "Shipping takes one day."];
        assert_eq!(
            run("faithfulness"),
            Some(share(&sentences, &docs, threshold))
        );
        assert_eq!(
            run("context_recall"),
            Some(share(
                &["The refund window is fourteen days."],
                &docs,
                threshold
            ))
        );
        assert_eq!(
            run("citation_support_judge"),
            Some(share(&[answer], &[docs[0]], threshold))
        );
    }
}
