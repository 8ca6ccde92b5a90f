//! Claim-level diagnostics (RAGChecker's metric family) with a judge: the claims of the answer
//! and of the reference, checked against the reference, the answer and every retrieved chunk,
//! then the eleven metrics of [`oloproof_metrics::rag::ragchecker`].
//!
//! Two checkers, as RAGChecker offers an LLM checker and an NLI one:
//!
//! * **An LLM judge** ([`check_with_llm`]): claims extracted with the `claim_extraction`
//!   template from the answer and from the reference; the answer's claims verified against the
//!   reference and the reference's against the answer with `claim_verification`; both claim
//!   lists attributed to the chunks with `claim_attribution` (per claim, the chunks it can be
//!   inferred from). At most six calls, the very requests `factual_correctness` and
//!   `noise_sensitivity` make, so those criteria and these share their judge-call cache
//!   entries; no call is made for an empty claim list or without chunks.
//! * **A local NLI model** ([`check_with_nli`]): claims are the sentences of each text
//!   ([`split_claims`]); each check is one premise–hypothesis pair (the reference, the answer or
//!   one chunk; the claim), entailed when the model's probability reaches the threshold. An empty
//!   premise entails nothing. Every pair score goes through the judge-call cache (keyed by the
//!   model's content identity, the premise and the hypothesis), so the eleven criteria of a case
//!   score each pair once, and a re-run scores nothing.
//!
//! [`diagnostic_score`] turns the checked claims into one metric's [`JudgedScore`]: its value,
//! or `excluded` with the reason the metric is undefined (`no_claims`, …). The detail is the
//! same for every metric of one check (so a reader can show it once): the method, every metric's
//! value or reason, the chunks with their relevance, and both claim lists with their verdicts.

use oloproof_core::identity::content_hash;
use oloproof_metrics::rag::claims::split_claims;
use oloproof_metrics::rag::ragchecker::{
    diagnose, ClaimChecks, Diagnosis, Metric, ReferenceChecks,
};
use serde_json::{json, Map, Value};

use crate::cache::{CallRecord, JudgeCache};
use crate::client::JudgeClient;
use crate::error::JudgeError;
use crate::ragas::{attribute_claims, extract_claims, verify_claims, JudgedScore, Sample};

/// How the claims are checked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Checker {
    /// An LLM judge extracts and checks the claims.
    Llm,
    /// A local NLI (or cross-encoder) model checks sentence claims; a pair is entailed at a
    /// probability of at least `threshold`.
    Nli {
        /// The entailment probability that counts as entailed.
        threshold: f64,
    },
}

/// The entailment probabilities behind an NLI check of one claim.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClaimProbabilities {
    /// Against the other text (the reference for an answer claim, the answer for a reference
    /// claim); `None` when there is no other text.
    pub other: Option<f64>,
    /// Against each chunk, in order.
    pub chunks: Vec<f64>,
}

/// The claims of one case with every check made on them.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedClaims {
    /// The answer's claims, in order.
    pub answer_claims: Vec<String>,
    /// The reference's claims (`None` when the case has no reference).
    pub reference_claims: Option<Vec<String>>,
    /// The checks, as the metrics read them.
    pub checks: ClaimChecks,
    /// How they were checked.
    pub checker: Checker,
    /// With an NLI model: the probabilities behind each answer claim's checks.
    pub answer_probabilities: Option<Vec<ClaimProbabilities>>,
    /// With an NLI model: the probabilities behind each reference claim's checks.
    pub reference_probabilities: Option<Vec<ClaimProbabilities>>,
    /// The LLM calls made (none with an NLI model).
    pub calls: Vec<CallRecord>,
}

/// Extracts and checks the claims of `sample` with an LLM judge (module docs): at most six
/// calls through `cache`.
pub fn check_with_llm(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    sample: &Sample<'_>,
    repeat: u32,
) -> Result<CheckedClaims, JudgeError> {
    let mut calls = Vec::new();
    let chunks = sample.contexts;
    let answer_claims = extract_claims(
        judge,
        cache,
        sample.question,
        sample.answer,
        repeat,
        &mut calls,
    )?;
    let reference_claims = match sample.reference {
        Some(r) => Some(extract_claims(
            judge,
            cache,
            sample.question,
            r,
            repeat,
            &mut calls,
        )?),
        None => None,
    };
    let attribute = |claims: &[String], calls: &mut Vec<CallRecord>| {
        if claims.is_empty() || chunks.is_empty() {
            Ok(vec![Vec::new(); claims.len()])
        } else {
            attribute_claims(judge, cache, chunks, claims, repeat, calls)
        }
    };
    let answer_in_chunks = attribute(&answer_claims, &mut calls)?;
    let reference = match (sample.reference, &reference_claims) {
        (Some(reference), Some(ref_claims)) => {
            let verify = |premise: &str, claims: &[String], calls: &mut Vec<CallRecord>| {
                if claims.is_empty() {
                    Ok(Vec::new())
                } else {
                    verify_claims(judge, cache, &[premise.to_string()], claims, repeat, calls)
                        .map(|checks| checks.into_iter().map(|c| c.supported).collect())
                }
            };
            let answer_in_reference = verify(reference, &answer_claims, &mut calls)?;
            let reference_in_answer = verify(sample.answer, ref_claims, &mut calls)?;
            let reference_in_chunks = attribute(ref_claims, &mut calls)?;
            Some(ReferenceChecks {
                answer_in_reference,
                reference_in_answer,
                reference_in_chunks,
            })
        }
        _ => None,
    };
    Ok(CheckedClaims {
        answer_claims,
        reference_claims,
        checks: ClaimChecks {
            chunks: chunks.len(),
            answer_in_chunks,
            reference,
        },
        checker: Checker::Llm,
        answer_probabilities: None,
        reference_probabilities: None,
        calls,
    })
}

/// The judge-call cache key of one NLI pair score: the model's content identity (its settings
/// when it has none), the premise and the hypothesis.
pub fn pair_score_key(nli: &JudgeClient, premise: &str, hypothesis: &str) -> String {
    let settings = nli.settings();
    content_hash(&json!({
        "kind": "pair_score",
        "provider": settings.provider.as_str(),
        "local_kind": settings.kind.map(|k| k.as_str()),
        "path": settings.path,
        "model_identity": nli.model_identity(),
        "premise": premise,
        "hypothesis": hypothesis,
    }))
}

/// [`JudgeClient::score_pairs`] through `cache`: stored scores are reused, the others scored in
/// one batch (in the order given) and stored. Errors are never stored.
pub fn score_pairs_cached(
    nli: &JudgeClient,
    cache: &dyn JudgeCache,
    pairs: &[(String, String)],
) -> Result<Vec<f64>, JudgeError> {
    let keys: Vec<String> = pairs
        .iter()
        .map(|(p, h)| pair_score_key(nli, p, h))
        .collect();
    let mut out: Vec<Option<f64>> = keys
        .iter()
        .map(|k| {
            cache
                .get(k)
                .and_then(|(_, v)| v.get("entailment").and_then(Value::as_f64))
        })
        .collect();
    let todo: Vec<usize> = (0..pairs.len()).filter(|&i| out[i].is_none()).collect();
    if !todo.is_empty() {
        let batch: Vec<(String, String)> = todo.iter().map(|&i| pairs[i].clone()).collect();
        let scores = nli.score_pairs(&batch)?;
        if scores.len() != batch.len() {
            return Err(JudgeError::Protocol {
                judge: nli.name().to_string(),
                url: "pair scores".into(),
                message: format!("{} scores for {} pairs", scores.len(), batch.len()),
            });
        }
        for (&i, s) in todo.iter().zip(scores) {
            let s = f64::from(s);
            cache.put(&keys[i], "", &json!({ "entailment": s }));
            out[i] = Some(s);
        }
    }
    Ok(out.into_iter().flatten().collect())
}

/// Splits the answer and the reference into sentence claims and checks each against the other
/// text and every chunk with a local NLI model (module docs), through `cache`.
pub fn check_with_nli(
    nli: &JudgeClient,
    cache: &dyn JudgeCache,
    sample: &Sample<'_>,
    threshold: f64,
) -> Result<CheckedClaims, JudgeError> {
    let chunks = sample.contexts;
    let answer_claims = split_claims(sample.answer);
    let reference_claims = sample.reference.map(split_claims);
    // Per claim, its premises: the other text (when there is one), then every chunk. An empty
    // premise entails nothing and is not scored.
    let premises = |other: Option<&str>| -> Vec<Option<String>> {
        let mut p = vec![other.map(str::to_string)];
        p.extend(chunks.iter().map(|c| Some(c.clone())));
        p.into_iter()
            .map(|p| p.filter(|t| !t.trim().is_empty()))
            .collect()
    };
    let answer_premises = premises(sample.reference);
    let reference_premises = premises(Some(sample.answer));
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut plan = |claims: &[String], premises: &[Option<String>]| {
        claims
            .iter()
            .map(|claim| {
                premises
                    .iter()
                    .map(|p| {
                        p.as_ref().map(|p| {
                            pairs.push((p.clone(), claim.clone()));
                            pairs.len() - 1
                        })
                    })
                    .collect::<Vec<Option<usize>>>()
            })
            .collect::<Vec<_>>()
    };
    let answer_plan = plan(&answer_claims, &answer_premises);
    let reference_plan = reference_claims
        .as_deref()
        .map(|claims| plan(claims, &reference_premises));
    let scores = if pairs.is_empty() {
        Vec::new()
    } else {
        score_pairs_cached(nli, cache, &pairs)?
    };
    let probabilities = |plan: &[Vec<Option<usize>>], has_other: bool| -> Vec<ClaimProbabilities> {
        plan.iter()
            .map(|row| ClaimProbabilities {
                other: if has_other {
                    Some(row[0].map_or(0.0, |i| scores[i]))
                } else {
                    None
                },
                chunks: row[1..]
                    .iter()
                    .map(|s| s.map_or(0.0, |i| scores[i]))
                    .collect(),
            })
            .collect()
    };
    let entailed = |p: f64| p >= threshold;
    let chunk_sets = |probs: &[ClaimProbabilities]| -> Vec<Vec<usize>> {
        probs
            .iter()
            .map(|p| {
                (0..p.chunks.len())
                    .filter(|&k| entailed(p.chunks[k]))
                    .collect()
            })
            .collect()
    };
    let answer_probs = probabilities(&answer_plan, sample.reference.is_some());
    let reference_probs = reference_plan.as_deref().map(|p| probabilities(p, true));
    let reference = reference_probs.as_deref().map(|probs| ReferenceChecks {
        answer_in_reference: answer_probs
            .iter()
            .map(|p| p.other.is_some_and(entailed))
            .collect(),
        reference_in_answer: probs
            .iter()
            .map(|p| p.other.is_some_and(entailed))
            .collect(),
        reference_in_chunks: chunk_sets(probs),
    });
    Ok(CheckedClaims {
        checks: ClaimChecks {
            chunks: chunks.len(),
            answer_in_chunks: chunk_sets(&answer_probs),
            reference,
        },
        answer_claims,
        reference_claims,
        checker: Checker::Nli { threshold },
        answer_probabilities: Some(answer_probs),
        reference_probabilities: reference_probs,
        calls: Vec::new(),
    })
}

/// Checks the claims of `sample` with `checker` (`judge` is the LLM judge or the NLI model).
pub fn check_claims(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    sample: &Sample<'_>,
    checker: Checker,
    repeat: u32,
) -> Result<CheckedClaims, JudgeError> {
    match checker {
        Checker::Llm => check_with_llm(judge, cache, sample, repeat),
        Checker::Nli { threshold } => check_with_nli(judge, cache, sample, threshold),
    }
}

/// 1-based chunk numbers, as the prompts and the reports number chunks.
fn ranks(set: &[usize]) -> Vec<usize> {
    set.iter().map(|k| k + 1).collect()
}

fn probabilities_json(p: Option<&ClaimProbabilities>) -> Option<Value> {
    p.map(|p| json!({"other": p.other, "chunks": p.chunks}))
}

/// The detail every metric of one check shares (module docs).
pub fn diagnostic_detail(checked: &CheckedClaims, diagnosis: &Diagnosis) -> Value {
    let mut metrics = Map::new();
    for (metric, value) in diagnosis.values() {
        let v = match value {
            Ok(v) => json!({ "value": v }),
            Err(why) => json!({ "excluded": why.reason() }),
        };
        metrics.insert(metric.name().to_string(), v);
    }
    let chunks: Vec<Value> = (0..checked.checks.chunks)
        .map(|k| {
            json!({
                "rank": k + 1,
                "relevant": diagnosis.relevant_chunks.as_ref().map(|r| r[k]),
            })
        })
        .collect();
    let answer: Vec<Value> = checked
        .answer_claims
        .iter()
        .zip(&diagnosis.answer)
        .enumerate()
        .map(|(i, (claim, c))| {
            let mut v = json!({
                "claim": claim,
                "in_reference": c.correct,
                "chunks": ranks(&c.chunks),
                "category": c.category.as_str(),
                "noise": c.noise.map(|n| n.as_str()),
            });
            if let Some(p) =
                probabilities_json(checked.answer_probabilities.as_ref().and_then(|p| p.get(i)))
            {
                v["probabilities"] = p;
            }
            v
        })
        .collect();
    let reference: Option<Vec<Value>> = match (&checked.reference_claims, &diagnosis.reference) {
        (Some(claims), Some(classified)) => Some(
            claims
                .iter()
                .zip(classified)
                .enumerate()
                .map(|(j, (claim, c))| {
                    let mut v = json!({
                        "claim": claim,
                        "in_answer": c.in_answer,
                        "chunks": ranks(&c.chunks),
                        "retrieved": c.retrieved,
                    });
                    if let Some(p) = probabilities_json(
                        checked
                            .reference_probabilities
                            .as_ref()
                            .and_then(|p| p.get(j)),
                    ) {
                        v["probabilities"] = p;
                    }
                    v
                })
                .collect(),
        ),
        _ => None,
    };
    let mut detail = json!({
        "diagnostics": "ragchecker",
        "method": match checked.checker { Checker::Llm => "llm", Checker::Nli { .. } => "nli" },
        "metrics": metrics,
        "chunks": chunks,
        "answer_claims": answer,
        "reference_claims": reference,
    });
    if let Checker::Nli { threshold } = checked.checker {
        detail["threshold"] = json!(threshold);
    }
    detail
}

/// One metric of checked claims: its value, or `excluded` with the reason it is undefined;
/// the detail is [`diagnostic_detail`] and the calls are the checks'. An error only when the
/// checks do not fit together (which a validated judge reply cannot produce).
pub fn diagnostic_score(
    checked: CheckedClaims,
    metric: Metric,
    judge: &str,
) -> Result<JudgedScore, JudgeError> {
    let diagnosis = diagnose(&checked.checks).map_err(|e| JudgeError::Protocol {
        judge: judge.to_string(),
        url: "claim checks".into(),
        message: e.to_string(),
    })?;
    let detail = diagnostic_detail(&checked, &diagnosis);
    let (value, excluded_reason) = match diagnosis.value(metric) {
        Ok(v) => (Some(v), None),
        Err(why) => (None, Some(why.reason())),
    };
    Ok(JudgedScore {
        value,
        excluded_reason,
        detail,
        calls: checked.calls,
    })
}

/// Checks the claims of `sample` and reports `metric` ([`check_claims`] then
/// [`diagnostic_score`]).
pub fn claim_diagnostic(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    sample: &Sample<'_>,
    checker: Checker,
    metric: Metric,
    repeat: u32,
) -> Result<JudgedScore, JudgeError> {
    let checked = check_claims(judge, cache, sample, checker, repeat)?;
    diagnostic_score(checked, metric, judge.name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::{MockReply, MockServer, RecordedRequest};
    use crate::{JudgeSettings, MemoryCache, Provider};

    fn template(r: &RecordedRequest) -> String {
        r.body
            .pointer("/response_format/json_schema/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    }

    fn section<'a>(user: &'a str, start: &str, end: &str) -> &'a str {
        let s = user.split(start).nth(1).unwrap_or("");
        s.split(end).next().unwrap_or(s)
    }

    fn numbered(block: &str) -> Vec<String> {
        block
            .split("\n\n")
            .filter_map(|l| l.trim().split_once("] ").map(|(_, t)| t.to_string()))
            .collect()
    }

    /// A judge that reads its prompts: claims are the text's sentences (none for "I don't
    /// know"), and a claim is entailed by a text that contains it word for word.
    fn literal_judge(r: &RecordedRequest) -> MockReply {
        let user = r.body["messages"][1]["content"].as_str().unwrap_or("");
        let contains = |text: &str, claim: &str| {
            text.to_lowercase()
                .contains(claim.trim_end_matches('.').to_lowercase().as_str())
        };
        match template(r).as_str() {
            "claim_extraction" => {
                let text = user.split("Answer: ").nth(1).unwrap_or("");
                let claims: Vec<String> = if text.contains("don't know") {
                    Vec::new()
                } else {
                    text.split(". ")
                        .map(|s| s.trim().trim_end_matches('.').to_string())
                        .filter(|s| !s.is_empty())
                        .collect()
                };
                MockReply::json(json!({ "claims": claims }))
            }
            "claim_verification" => {
                let context = section(user, "Context:\n", "\n\nClaims:");
                let claims = numbered(user.split("Claims:\n").nth(1).unwrap_or(""));
                let verdicts: Vec<Value> = claims
                    .iter()
                    .enumerate()
                    .map(|(i, c)| json!({"id": i + 1, "reason": "r", "verdict": u8::from(contains(context, c))}))
                    .collect();
                MockReply::json(json!({ "verdicts": verdicts }))
            }
            "claim_attribution" => {
                let chunks = numbered(section(user, "Retrieved chunks:\n", "\n\nClaims:"));
                let claims = numbered(user.split("Claims:\n").nth(1).unwrap_or(""));
                let verdicts: Vec<Value> = claims
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let from: Vec<usize> = (0..chunks.len())
                            .filter(|&k| contains(&chunks[k], c))
                            .map(|k| k + 1)
                            .collect();
                        json!({"id": i + 1, "reason": "r", "chunks": from})
                    })
                    .collect();
                MockReply::json(json!({ "verdicts": verdicts }))
            }
            other => MockReply::error(400, &format!("unexpected template {other}")),
        }
    }

    fn judge(server: &MockServer) -> JudgeClient {
        let mut settings = JudgeSettings::new(Provider::Openai, &server.base_url(), "m", None);
        settings.max_retries = 0;
        JudgeClient::new("j", settings).unwrap()
    }

    #[test]
    fn llm_checks_feed_every_metric_and_are_cached() {
        let server = MockServer::start();
        server.respond_with(literal_judge);
        let judge = judge(&server);
        let cache = MemoryCache::new();
        let contexts = vec![
            "Refunds take 14 days. Support answers by mail.".to_string(),
            "Shipping is free over 50 EUR.".to_string(),
        ];
        let sample = Sample {
            question: "How long do refunds take?",
            answer: "Refunds take 14 days. Shipping is free over 50 EUR. Refunds need a receipt.",
            contexts: &contexts,
            reference: Some(
                "Refunds take 14 days. Refunds need a receipt. Support answers by mail.",
            ),
        };
        let s =
            claim_diagnostic(&judge, &cache, &sample, Checker::Llm, Metric::Precision, 0).unwrap();
        // Answer claims: a0 in reference and chunk 1, a1 only in chunk 2, a2 in reference only.
        assert_eq!(s.value, Some(2.0 / 3.0));
        assert_eq!(server.request_count(), 6);
        let d = &s.detail;
        assert_eq!(d["answer_claims"][0]["chunks"], json!([1]));
        assert_eq!(d["answer_claims"][1]["category"], "faithful");
        assert_eq!(d["answer_claims"][1]["noise"], "irrelevant");
        assert_eq!(d["answer_claims"][2]["category"], "self_knowledge");
        assert_eq!(d["reference_claims"][2]["in_answer"], false);
        assert_eq!(d["reference_claims"][2]["retrieved"], true);
        assert_eq!(d["chunks"][0]["relevant"], true);
        assert_eq!(d["chunks"][1]["relevant"], false);
        // Reference claims: r0 in answer and chunk 1, r1 in answer only, r2 in chunk 1 only.
        let m = &d["metrics"];
        assert_eq!(m["claim_recall"]["value"], 2.0 / 3.0);
        assert_eq!(m["retriever_claim_recall"]["value"], 2.0 / 3.0);
        assert_eq!(m["retriever_context_precision"]["value"], 0.5);
        assert_eq!(m["generator_context_utilisation"]["value"], 0.5);
        assert_eq!(
            m["generator_noise_sensitivity_irrelevant"]["value"],
            1.0 / 3.0
        );
        assert_eq!(m["generator_self_knowledge"]["value"], 1.0 / 3.0);
        assert_eq!(m["generator_faithfulness"]["value"], 2.0 / 3.0);
        assert_eq!(m["generator_hallucination"]["value"], 0.0);
        assert_eq!(s.calls.len(), 6);

        // Another metric of the same case: every call is a cache hit, the detail the same.
        let f = claim_diagnostic(
            &judge,
            &cache,
            &sample,
            Checker::Llm,
            Metric::Faithfulness,
            0,
        )
        .unwrap();
        assert_eq!(server.request_count(), 6);
        assert!(f.calls.iter().all(|c| c.cached));
        assert_eq!(f.value, Some(2.0 / 3.0));
        assert_eq!(f.detail, s.detail);
    }

    #[test]
    fn a_refusal_is_excluded_and_needs_fewer_calls() {
        let server = MockServer::start();
        server.respond_with(literal_judge);
        let judge = judge(&server);
        let contexts = vec!["Refunds take 14 days.".to_string()];
        let sample = Sample {
            question: "q",
            answer: "I don't know.",
            contexts: &contexts,
            reference: Some("Refunds take 14 days."),
        };
        let cache = MemoryCache::new();
        let p =
            claim_diagnostic(&judge, &cache, &sample, Checker::Llm, Metric::Precision, 0).unwrap();
        assert_eq!((p.value, p.excluded_reason), (None, Some("no_claims")));
        // Extraction twice, the reference claims against the answer and the chunks.
        assert_eq!(server.request_count(), 4);
        let r = claim_diagnostic(&judge, &cache, &sample, Checker::Llm, Metric::Recall, 0).unwrap();
        assert_eq!(r.value, Some(0.0));

        // No reference: faithfulness only, two calls.
        let server = MockServer::start();
        server.respond_with(literal_judge);
        let judge = super::tests::judge(&server);
        let sample = Sample {
            reference: None,
            answer: "Refunds take 14 days. Refunds are instant.",
            ..sample
        };
        let f = claim_diagnostic(
            &judge,
            &MemoryCache::new(),
            &sample,
            Checker::Llm,
            Metric::Faithfulness,
            0,
        )
        .unwrap();
        assert_eq!(f.value, Some(0.5));
        assert_eq!(f.detail["reference_claims"], Value::Null);
        assert_eq!(f.detail["answer_claims"][1]["category"], "unfaithful");
        assert_eq!(server.request_count(), 2);
        let h = claim_diagnostic(
            &judge,
            &MemoryCache::new(),
            &sample,
            Checker::Llm,
            Metric::Hallucination,
            0,
        )
        .unwrap();
        assert_eq!(h.excluded_reason, Some("no_reference"));
    }

    #[test]
    fn a_failed_call_is_an_error_never_a_score() {
        let server = MockServer::start();
        server.respond_with(|r| {
            if template(r) == "claim_attribution" {
                MockReply::error(500, "down")
            } else {
                literal_judge(r)
            }
        });
        let judge = judge(&server);
        let contexts = vec!["Refunds take 14 days.".to_string()];
        let sample = Sample {
            question: "q",
            answer: "Refunds take 14 days.",
            contexts: &contexts,
            reference: Some("Refunds take 14 days."),
        };
        let e = claim_diagnostic(
            &judge,
            &MemoryCache::new(),
            &sample,
            Checker::Llm,
            Metric::Precision,
            0,
        );
        assert!(
            matches!(e, Err(JudgeError::Http { status: 500, .. })),
            "{e:?}"
        );
    }
}
