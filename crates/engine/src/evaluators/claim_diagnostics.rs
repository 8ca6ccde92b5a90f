//! Claim-level diagnostics, RAGChecker's metric family: one evaluator type per metric, all
//! computed from one set of checked claims (`oloproof_judge::ragchecker`, the metrics in
//! `oloproof_metrics::rag::ragchecker`).
//!
//! | type (default criterion) | RAGChecker | group |
//! | --- | --- | --- |
//! | `claim_precision` | `precision` | overall |
//! | `claim_recall` | `recall` | overall |
//! | `claim_f1` | `f1` | overall |
//! | `retriever_claim_recall` | `claim_recall` | retriever |
//! | `retriever_context_precision` | `context_precision` | retriever |
//! | `generator_context_utilisation` | `context_utilization` | generator |
//! | `generator_noise_sensitivity_relevant` | `noise_sensitivity_in_relevant` | generator |
//! | `generator_noise_sensitivity_irrelevant` | `noise_sensitivity_in_irrelevant` | generator |
//! | `generator_hallucination` | `hallucination` | generator |
//! | `generator_self_knowledge` | `self_knowledge` | generator |
//! | `generator_faithfulness` | `faithfulness` | generator |
//!
//! Each takes the options of every LLM-judged type (`judge:` or `judges:`, `repeats:`, …) and
//! `threshold:`. With an LLM `judge:` the claims are extracted and checked by it (at most six
//! calls a case); with a local `kind: nli` (or `cross_encoder`) judge they are the texts'
//! sentences, checked pair by pair by the model (entailed at probability ≥ `threshold`,
//! default 0.5). Every type of one case makes the same requests, so the first one's calls serve
//! the others from the judge-call cache: listing all eleven costs what listing one costs.
//!
//! A metric whose denominator is empty is `excluded` with the reason (`no_claims`,
//! `no_reference_claims`, `no_context`, `no_recalled_claims`, `no_reference`), where RAGChecker
//! scores 0; a failed judge call is `missing`. The verdict's detail holds both claim lists with
//! their verdicts and every metric's value, which `show --case` and the viewer print once.

use oloproof_judge::ragas::JudgedScore;
use oloproof_judge::ragchecker::{claim_diagnostic, Checker};
use oloproof_judge::{JudgeClient, JudgeError};
use oloproof_metrics::rag::ragchecker::Metric;

use super::claim_support::{is_pair_classifier, DEFAULT_NLI_THRESHOLD};
use super::judged::{self, llm_judged_options, need, JudgeNeed, JudgedInput, JudgedMetric};
use super::{EntryParser, Evaluator, EvaluatorSpec};
use oloproof_core::source::SourceError;

llm_judged_options! {
    /// Options of the claim-diagnostics types (`claim_precision`, …, `generator_faithfulness`).
    ClaimDiagnosticsOptions {
        /// With a local `nli` judge: the entailment probability that counts as entailed
        /// (default 0.5).
        threshold: f64,
    }
}

fn build(p: &EntryParser<'_>, metric: Metric) -> Result<Box<dyn Evaluator>, SourceError> {
    judged::build(p, JudgeNeed::Llm, |o: ClaimDiagnosticsOptions| {
        Box::new(ClaimDiagnostic {
            metric,
            threshold: o.threshold.unwrap_or(DEFAULT_NLI_THRESHOLD),
        })
    })
}

/// Overall precision: answer claims the reference entails / answer claims.
pub(crate) const CLAIM_PRECISION: EvaluatorSpec = EvaluatorSpec {
    name: "claim_precision",
    build: |p| build(p, Metric::Precision),
};

/// Overall recall: reference claims the answer entails / reference claims.
pub(crate) const CLAIM_RECALL: EvaluatorSpec = EvaluatorSpec {
    name: "claim_recall",
    build: |p| build(p, Metric::Recall),
};

/// Overall F1 of claim precision and recall.
pub(crate) const CLAIM_F1: EvaluatorSpec = EvaluatorSpec {
    name: "claim_f1",
    build: |p| build(p, Metric::F1),
};

/// Retriever claim recall: reference claims some chunk entails / reference claims.
pub(crate) const RETRIEVER_CLAIM_RECALL: EvaluatorSpec = EvaluatorSpec {
    name: "retriever_claim_recall",
    build: |p| build(p, Metric::RetrieverClaimRecall),
};

/// Retriever context precision: chunks entailing a reference claim / chunks.
pub(crate) const RETRIEVER_CONTEXT_PRECISION: EvaluatorSpec = EvaluatorSpec {
    name: "retriever_context_precision",
    build: |p| build(p, Metric::RetrieverContextPrecision),
};

/// Generator context utilisation: retrieved reference claims the answer entails / retrieved
/// reference claims.
pub(crate) const GENERATOR_CONTEXT_UTILISATION: EvaluatorSpec = EvaluatorSpec {
    name: "generator_context_utilisation",
    build: |p| build(p, Metric::ContextUtilisation),
};

/// Generator noise sensitivity (relevant chunks): incorrect answer claims a relevant chunk
/// entails / answer claims.
pub(crate) const GENERATOR_NOISE_SENSITIVITY_RELEVANT: EvaluatorSpec = EvaluatorSpec {
    name: "generator_noise_sensitivity_relevant",
    build: |p| build(p, Metric::NoiseSensitivityRelevant),
};

/// Generator noise sensitivity (irrelevant chunks): incorrect answer claims only irrelevant
/// chunks entail / answer claims.
pub(crate) const GENERATOR_NOISE_SENSITIVITY_IRRELEVANT: EvaluatorSpec = EvaluatorSpec {
    name: "generator_noise_sensitivity_irrelevant",
    build: |p| build(p, Metric::NoiseSensitivityIrrelevant),
};

/// Generator hallucination: incorrect answer claims no chunk entails / answer claims.
pub(crate) const GENERATOR_HALLUCINATION: EvaluatorSpec = EvaluatorSpec {
    name: "generator_hallucination",
    build: |p| build(p, Metric::Hallucination),
};

/// Generator self-knowledge: correct answer claims no chunk entails / answer claims.
pub(crate) const GENERATOR_SELF_KNOWLEDGE: EvaluatorSpec = EvaluatorSpec {
    name: "generator_self_knowledge",
    build: |p| build(p, Metric::SelfKnowledge),
};

/// Generator faithfulness: answer claims some chunk entails / answer claims.
pub(crate) const GENERATOR_FAITHFULNESS: EvaluatorSpec = EvaluatorSpec {
    name: "generator_faithfulness",
    build: |p| build(p, Metric::Faithfulness),
};

/// One RAGChecker metric as a judged metric.
struct ClaimDiagnostic {
    metric: Metric,
    threshold: f64,
}

impl JudgedMetric for ClaimDiagnostic {
    fn score(
        &self,
        input: &JudgedInput<'_>,
        judge: Option<&JudgeClient>,
        repeat: u32,
    ) -> Result<JudgedScore, JudgeError> {
        let judge = need(judge)?;
        let checker = if is_pair_classifier(judge) {
            Checker::Nli {
                threshold: self.threshold,
            }
        } else {
            Checker::Llm
        };
        claim_diagnostic(
            judge,
            input.cache,
            &input.sample,
            checker,
            self.metric,
            repeat,
        )
    }

    fn max_calls(&self) -> (u32, u32) {
        // Two extractions, two verifications, two attributions.
        (6, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::from_json;
    use crate::judged::{JudgeEnv, JudgeRegistry};
    use oloproof_core::case::parse_cases;
    use oloproof_core::trace::Trace;
    use oloproof_core::verdict::Verdict;
    use oloproof_judge::mock::{MockReply, MockServer};
    use oloproof_judge::MemoryCache;
    use serde_json::json;
    use std::collections::BTreeMap;

    #[test]
    fn every_metric_has_its_type_under_its_own_name() {
        for m in Metric::ALL {
            let spec = crate::evaluators::spec(m.name())
                .unwrap_or_else(|| panic!("{} is not registered", m.name()));
            let e = from_json(&json!({"type": spec.name, "judge": "j"})).unwrap();
            assert_eq!(e.criterion(), m.name());
            assert_eq!(e.estimate(&case()).map(|c| c.calls), Some(6));
        }
    }

    fn case() -> oloproof_core::case::Case {
        parse_cases(
            "c.jsonl",
            r#"{"id":"c","input":{"question":"q"},"expected":{"answer":"Refunds take 14 days."}}"#,
        )
        .unwrap()
        .remove(0)
    }

    fn trace(answer: &str) -> Trace {
        serde_json::from_value(json!({
            "schema_version": 1,
            "case_id": "c",
            "context": {
                "passages": [{"position": 1, "doc_id": "a", "text": "Refunds take 14 days."}],
                "dropped": [],
                "truncated": false
            },
            "generation": {"answer": answer}
        }))
        .unwrap()
    }

    #[test]
    fn verdicts_excluded_and_missing() {
        let server = MockServer::start();
        server.respond_with(|r| {
            let user = r.body["messages"][1]["content"].as_str().unwrap_or("");
            let name = r
                .body
                .pointer("/response_format/json_schema/name")
                .and_then(|v| v.as_str())
                .unwrap_or("");
            if user.contains("broken") {
                return MockReply::error(500, "down");
            }
            MockReply::json(match name {
                "claim_extraction" if user.contains("Answer: I don't know") => {
                    json!({"claims": []})
                }
                "claim_extraction" => json!({"claims": ["Refunds take 14 days"]}),
                "claim_verification" => {
                    json!({"verdicts": [{"id": 1, "reason": "r", "verdict": 1}]})
                }
                _ => json!({"verdicts": [{"id": 1, "reason": "r", "chunks": [1]}]}),
            })
        });
        let mut judges = BTreeMap::new();
        judges.insert(
            "j".to_string(),
            json!({"provider": "openai", "base_url": server.base_url(), "model": "m", "max_retries": 0}),
        );
        let registry = JudgeRegistry::from_options(&judges).unwrap();
        let cache = MemoryCache::new();
        let env = JudgeEnv {
            judges: &registry,
            cache: &cache,
        };
        let eval = |ty: &str, answer: &str| {
            from_json(&json!({"type": ty, "judge": "j"}))
                .unwrap()
                .evaluate(&case(), &trace(answer), Some(&env))
        };
        let v = eval("claim_precision", "Refunds take 14 days.");
        assert_eq!(v.verdict, Verdict::Score { value: 1.0 });
        assert_eq!(
            v.detail["result"]["answer_claims"][0]["category"],
            "faithful"
        );
        let calls = server.request_count();
        let f = eval("generator_faithfulness", "Refunds take 14 days.");
        assert_eq!(f.verdict, Verdict::Score { value: 1.0 });
        assert_eq!(server.request_count(), calls, "served from the cache");
        assert_eq!(f.detail["result"], v.detail["result"]);

        let refusal = eval("generator_hallucination", "I don't know.");
        assert_eq!(
            refusal.verdict,
            Verdict::Excluded {
                reason: "no_claims".into()
            }
        );
        let broken = eval("claim_recall", "broken");
        assert!(
            matches!(&broken.verdict, Verdict::Missing { error } if error.contains("500")),
            "{:?}",
            broken.verdict
        );
        assert!(broken.detail["failed_call"].is_object());
    }
}
