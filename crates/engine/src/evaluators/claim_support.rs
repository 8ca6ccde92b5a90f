//! `claim_support`: offline claim support, a heuristic judged without a language model.
//!
//! The answer's claims (its sentences) are each compared with the context: with an embedding
//! judge (`embedding_judge:`, e.g. a `provider: local` MiniLM) by the best cosine between the
//! claim and a context sentence; with a `kind: nli` or `kind: cross_encoder` local judge
//! (`judge:`) by the best entailment probability of the claim given a passage (long passages
//! windowed). A claim is supported when that best value reaches `threshold` **and** its
//! numbers and names appear in the context (`oloproof_metrics::rag::claims`). The case passes
//! when every claim is supported; the per-claim evidence (best sentence, similarity, grounded
//! and ungrounded entities) is kept in the verdict's detail. An answer without claims is
//! `excluded: no_claims`; a failed model call makes the case `missing`.

use oloproof_judge::ragas::{JudgedScore, Sample};
use oloproof_judge::{JudgeCache, JudgeClient, JudgeError, LocalKind, Provider};
use oloproof_metrics::rag::claims::{check_claims, context_sentences, cosine, split_claims};
use serde_json::json;

/// Default threshold on the cosine of sentence embeddings.
pub const DEFAULT_EMBEDDING_THRESHOLD: f64 = 0.6;
/// Default threshold on the entailment probability of a pair classifier.
pub const DEFAULT_NLI_THRESHOLD: f64 = 0.5;

/// Whether `judge` is a local sequence-pair classifier (`kind: nli` or `cross_encoder`).
pub(crate) fn is_pair_classifier(judge: &JudgeClient) -> bool {
    let s = judge.settings();
    s.provider == Provider::Local
        && matches!(s.kind, Some(LocalKind::Nli | LocalKind::CrossEncoder))
}

/// Claim support of `sample` with `judge` (a pair classifier, when it is one) or `embedder`.
pub fn score(
    judge: Option<&JudgeClient>,
    embedder: Option<&JudgeClient>,
    cache: &dyn JudgeCache,
    sample: &Sample<'_>,
    threshold: Option<f64>,
) -> Result<JudgedScore, JudgeError> {
    let claims = split_claims(sample.answer);
    if claims.is_empty() {
        return Ok(JudgedScore {
            value: None,
            excluded_reason: Some("no_claims"),
            detail: json!({"claims": []}),
            calls: Vec::new(),
        });
    }
    let context = sample.contexts.join("\n");
    let (method, sentences, similarity, threshold) = match judge.filter(|j| is_pair_classifier(j)) {
        Some(nli) => {
            let passages: Vec<String> = sample
                .contexts
                .iter()
                .filter(|p| !p.trim().is_empty())
                .cloned()
                .collect();
            let matrix = entailment_matrix(nli, &claims, &passages)?;
            (
                "nli",
                passages,
                matrix,
                threshold.unwrap_or(DEFAULT_NLI_THRESHOLD),
            )
        }
        None => {
            let embedder = embedder.ok_or_else(|| JudgeError::Unsupported {
                judge: "(none)".into(),
                message: "`claim_support` needs `embedding_judge:` (or an nli `judge:`)".into(),
            })?;
            let sentences = context_sentences(sample.contexts);
            let mut texts = claims.clone();
            texts.extend(sentences.iter().cloned());
            let vectors = embedder.embed_cached(cache, &texts)?;
            if vectors.len() != texts.len() {
                return Err(JudgeError::Protocol {
                    judge: embedder.name().to_string(),
                    url: "embeddings".into(),
                    message: format!("{} vectors for {} texts", vectors.len(), texts.len()),
                });
            }
            let (c, s) = vectors.split_at(claims.len());
            let matrix = c
                .iter()
                .map(|cv| s.iter().map(|sv| cosine(cv, sv)).collect())
                .collect();
            (
                "embedding",
                sentences,
                matrix,
                threshold.unwrap_or(DEFAULT_EMBEDDING_THRESHOLD),
            )
        }
    };
    let support = check_claims(&claims, &sentences, &context, &similarity, threshold);
    let evidence: Vec<_> = support
        .claims
        .iter()
        .map(|c| {
            json!({
                "claim": c.claim,
                "supported": c.supported,
                "similarity": c.similarity,
                "evidence": c.best_sentence.and_then(|j| sentences.get(j)),
                "grounded": c.grounded,
                "ungrounded": c.ungrounded,
            })
        })
        .collect();
    let all = support.all_supported().unwrap_or(false);
    Ok(JudgedScore {
        value: Some(if all { 1.0 } else { 0.0 }),
        excluded_reason: None,
        detail: json!({
            "method": method,
            "heuristic": true,
            "threshold": threshold,
            "supported_fraction": support.supported_fraction(),
            "claims": evidence,
        }),
        calls: Vec::new(),
    })
}

/// `matrix[i][j]`: the entailment probability of `hypotheses[i]` given `premises[j]`, one
/// batched call of the pair classifier.
fn entailment_matrix(
    nli: &JudgeClient,
    hypotheses: &[String],
    premises: &[String],
) -> Result<Vec<Vec<f64>>, JudgeError> {
    let pairs: Vec<(String, String)> = hypotheses
        .iter()
        .flat_map(|h| premises.iter().map(move |p| (p.clone(), h.clone())))
        .collect();
    let scores = if pairs.is_empty() {
        Vec::new()
    } else {
        nli.score_pairs(&pairs)?
    };
    Ok((0..hypotheses.len())
        .map(|i| {
            scores[i * premises.len()..(i + 1) * premises.len()]
                .iter()
                .map(|s| f64::from(*s))
                .collect()
        })
        .collect())
}

/// NLI claim verification with a local pair classifier: the share of `hypotheses` (claims or
/// statements) that at least one of `premises` entails with probability ≥ `threshold`, with
/// each hypothesis's best premise and probability. `excluded: no_claims` without hypotheses;
/// without premises nothing is entailed (0, as Ragas scores an empty context).
pub fn nli_entailed_share(
    nli: &JudgeClient,
    hypotheses: &[String],
    premises: &[String],
    threshold: f64,
    method: &str,
) -> Result<JudgedScore, JudgeError> {
    if hypotheses.is_empty() {
        return Ok(JudgedScore {
            value: None,
            excluded_reason: Some("no_claims"),
            detail: json!({"method": method, "claims": []}),
            calls: Vec::new(),
        });
    }
    let premises: Vec<String> = premises
        .iter()
        .filter(|p| !p.trim().is_empty())
        .cloned()
        .collect();
    let matrix = entailment_matrix(nli, hypotheses, &premises)?;
    let mut entailed = 0usize;
    let claims: Vec<_> = hypotheses
        .iter()
        .zip(&matrix)
        .map(|(h, row)| {
            let best = row
                .iter()
                .copied()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(&b.1));
            let ok = best.is_some_and(|(_, p)| p >= threshold);
            entailed += usize::from(ok);
            json!({
                "claim": h,
                "entailed": ok,
                "probability": best.map(|b| b.1),
                "evidence": best.map(|b| &premises[b.0]),
            })
        })
        .collect();
    Ok(JudgedScore {
        value: Some(entailed as f64 / hypotheses.len() as f64),
        excluded_reason: None,
        detail: json!({
            "method": method,
            "threshold": threshold,
            "entailed": entailed,
            "total": hypotheses.len(),
            "claims": claims,
        }),
        calls: Vec::new(),
    })
}

/// Options of `claim_support`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimSupportOptions {
    /// Criterion name (default `claim_support`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// A local `kind: nli` or `cross_encoder` judge deciding entailment (else the embedder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
    /// The judge used for embeddings (default: `judge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_judge: Option<String>,
    /// The similarity (cosine, or entailment probability with an `nli` judge) a claim needs
    /// (default 0.6 for cosines, 0.5 for probabilities).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
}

/// The `claim_support` type.
pub(crate) const SPEC: super::EvaluatorSpec = super::EvaluatorSpec {
    name: "claim_support",
    build: |p| {
        super::judged::build(
            p,
            super::judged::JudgeNeed::Embedding,
            |o: ClaimSupportOptions| {
                Box::new(ClaimSupport {
                    threshold: o.threshold,
                })
            },
        )
    },
};

/// Claim support as a judged metric (pass/fail: every claim supported).
struct ClaimSupport {
    threshold: Option<f64>,
}

impl super::judged::JudgedMetric for ClaimSupport {
    fn kind(&self) -> super::SummaryKind {
        super::SummaryKind::Proportion
    }

    fn score(
        &self,
        input: &super::judged::JudgedInput<'_>,
        judge: Option<&JudgeClient>,
        _: u32,
    ) -> Result<JudgedScore, JudgeError> {
        score(
            judge,
            input.embedder,
            input.cache,
            &input.sample,
            self.threshold,
        )
    }

    fn max_calls(&self) -> (u32, u32) {
        (0, 1)
    }
}
