//! Every cache key of a run, in one place: the sha256 of the canonical JSON of exactly what
//! determines the cached result (`oloproof_core::identity`).
//!
//! | layer | key |
//! | --- | --- |
//! | `retrieve` | system name, version, `index_version`, `depth`, input — not `top_k`, not the budget, so changing those re-uses every retrieval |
//! | `generate` | the system's generation identity, input, assembled context |
//! | `execution` | every effective system setting, input (the case's whole result) |
//! | `rewrite` | the system's generation identity, input |
//! | `retrieve` (a pipeline's call) | the retrieval identity, input, lane, query |
//! | `rerank` | the system's generation identity, input, the candidates it received |
//! | `count_tokens` | the system's generation identity, the text of an output field (its token count, for `max_length` in tokens) |
//! | `judgment` | the evaluator's identity, its judges' identities, the case's id and expectations, the execution key, the trace's content |
//!
//! The judge layer keys its single calls itself (`judge_call`: provider, model, template,
//! rendered messages, sampling, repeat; `oloproof_judge::JudgeClient`).

use oloproof_core::case::Case;
use oloproof_core::identity::{canonical_json, content_hash, sha256_hex};
use oloproof_core::settings::SystemSettings;
use oloproof_core::trace::Trace;
use serde_json::{json, Value};

use crate::evaluators::Evaluator;

/// Cache layers (their names are part of the keys: `"layer": "execution"`).
pub mod layer {
    use oloproof_core::store::CacheLayer;
    /// A case's whole execution.
    pub const EXECUTION: CacheLayer = CacheLayer::Execution;
    /// The retrieval stage.
    pub const RETRIEVE: CacheLayer = CacheLayer::Retrieve;
    /// The generation stage.
    pub const GENERATE: CacheLayer = CacheLayer::Generate;
    /// One evaluator on one execution.
    pub const JUDGMENT: CacheLayer = CacheLayer::Judgment;
    /// The system's token count of one output text.
    pub const COUNT_TOKENS: CacheLayer = CacheLayer::CountTokens;
    /// A pipeline's `rewrite` stage.
    pub const REWRITE: CacheLayer = CacheLayer::Rewrite;
    /// A pipeline's `rerank` stage.
    pub const RERANK: CacheLayer = CacheLayer::Rerank;
}

/// Cache key of a pipeline's `rewrite`: the system's generation identity (name, version,
/// index version, parameters) and the input.
pub fn rewrite_key(system: &SystemSettings, case: &Case) -> String {
    content_hash(
        &json!({"layer": layer::REWRITE, "system": system.generation_identity(), "input": case.input}),
    )
}

/// Cache key of one `retrieve` call of a pipeline: the retrieval identity, the input, the
/// lane and the query (so changing the rewrite, fusion or reranker re-uses every lane
/// retrieval that is asked again). A call with neither lane nor query nor `skip_filters` has
/// protocol 1's [`retrieval_key`].
pub fn lane_retrieval_key(
    system: &SystemSettings,
    case: &Case,
    request: oloproof_core::system::RetrieveRequest<'_>,
) -> String {
    if request == oloproof_core::system::RetrieveRequest::default() {
        return retrieval_key(system, case);
    }
    content_hash(&json!({
        "layer": layer::RETRIEVE,
        "system": system.retrieval_identity(),
        "input": case.input,
        "lane": request.lane,
        "query": request.query,
        "skip_filters": request.skip_filters,
    }))
}

/// Cache key of a pipeline's `rerank`: the system's generation identity, the input and the
/// candidates it received.
pub fn rerank_key(
    system: &SystemSettings,
    case: &Case,
    candidates: &[oloproof_core::passage::Passage],
) -> String {
    content_hash(&json!({
        "layer": layer::RERANK,
        "system": system.generation_identity(),
        "input": case.input,
        "candidates": candidates,
    }))
}

/// A cache entry to write with the case.
pub type CacheWrite = oloproof_core::store::CacheEntry;

/// Cache key of a case's execution.
pub fn execution_key(system: &SystemSettings, case: &Case) -> String {
    content_hash(
        &json!({"layer": layer::EXECUTION, "system": system.execution_identity(), "input": case.input}),
    )
}

/// Cache key of a retrieval.
pub fn retrieval_key(system: &SystemSettings, case: &Case) -> String {
    content_hash(
        &json!({"layer": layer::RETRIEVE, "system": system.retrieval_identity(), "input": case.input}),
    )
}

/// Cache key of a generation.
pub fn generation_key(system: &SystemSettings, case: &Case, context: &Value) -> String {
    content_hash(&json!({
        "layer": layer::GENERATE,
        "system": system.generation_identity(),
        "input": case.input,
        "context": context,
    }))
}

/// Cache key of the system's token count of an output text: its generation identity (name,
/// version, index version, parameters: whatever may choose its tokenizer) and the text.
pub fn token_count_key(system: &SystemSettings, text: &str) -> String {
    content_hash(&json!({
        "layer": layer::COUNT_TOKENS,
        "system": system.generation_identity(),
        "text": text,
    }))
}

/// The content identity of an executed trace (its retrieval, context and generation), part of
/// every judgment key.
pub(crate) fn trace_content(trace: &Trace) -> String {
    content_hash(&json!({
        "retrieval": trace.retrieval,
        "context": trace.context,
        "generation": trace.generation,
    }))
}

/// The judgment cache keys of a run's evaluators on each executed case: sha256 of the canonical
/// JSON of `{layer, evaluator: its identity, judges: its judges' identities, case: {id,
/// expected}, execution: the execution key, content: the trace's [`trace_content`]}`, with
/// what does not depend on the case (each evaluator's identity and its judges' identities, in canonical JSON) computed
/// once per run. The canonical JSON of the key's object is written by splicing the parts in
/// sorted key order (`case`, `content`, `evaluator`, `execution`, `judges`, `layer`), so the
/// keys are exactly [`content_hash`] of that object.
pub(crate) struct JudgmentKeys {
    /// Per evaluator: the canonical JSON of its identity and of its judges' identities.
    evaluators: Vec<(String, String)>,
}

impl JudgmentKeys {
    /// The keys of `evaluators`, whose judges are in `judges`.
    pub(crate) fn new<'e>(
        evaluators: impl IntoIterator<Item = &'e dyn Evaluator>,
        judges: &crate::judged::JudgeRegistry,
    ) -> Self {
        let evaluators = evaluators
            .into_iter()
            .map(|e| {
                let identities: Vec<Value> =
                    e.judge_names().iter().map(|n| judges.identity(n)).collect();
                (
                    canonical_json(&e.identity().to_value()),
                    canonical_json(&Value::Array(identities)),
                )
            })
            .collect();
        JudgmentKeys { evaluators }
    }

    /// The key of every evaluator, in order, on one executed case.
    pub(crate) fn for_case(&self, case: &Case, exec: &str, content: &str) -> Vec<String> {
        let case_json = canonical_json(&json!({"id": case.id, "expected": case.expected}));
        let content_json = Value::String(content.to_string()).to_string();
        let exec_json = Value::String(exec.to_string()).to_string();
        let mut text = String::new();
        self.evaluators
            .iter()
            .map(|(evaluator, judges)| {
                text.clear();
                text.push_str("{\"case\":");
                text.push_str(&case_json);
                text.push_str(",\"content\":");
                text.push_str(&content_json);
                text.push_str(",\"evaluator\":");
                text.push_str(evaluator);
                text.push_str(",\"execution\":");
                text.push_str(&exec_json);
                text.push_str(",\"judges\":");
                text.push_str(judges);
                text.push_str(",\"layer\":");
                text.push_str(&Value::String(layer::JUDGMENT.to_string()).to_string());
                text.push('}');
                sha256_hex(text.as_bytes())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spliced keys are the content hash of the key's object, so every judgment cached
    /// before they were spliced is still found.
    #[test]
    fn spliced_judgment_keys_are_the_content_hash_of_the_object() {
        let case: Case = serde_json::from_value(json!({
            "id": "c\"1",
            "input": {"question": "q"},
            "expected": {"answer": "é \u{1f600}", "relevant": [{"doc_id": "d", "grade": 2}]},
        }))
        .unwrap();
        let judges: std::collections::BTreeMap<String, Value> = serde_json::from_value(json!({
            "j": {"provider": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}
        }))
        .unwrap();
        let registry = crate::judged::JudgeRegistry::from_options(&judges).unwrap();
        for entry in [
            json!({"type": "contains"}),
            json!({"type": "ndcg", "k": 3}),
            json!({"type": "faithfulness", "judge": "j", "repeats": 2}),
        ] {
            let e = crate::evaluators::from_json(&entry).unwrap();
            let identities: Vec<Value> = e
                .judge_names()
                .iter()
                .map(|n| registry.identity(n))
                .collect();
            let expected = content_hash(&json!({
                "layer": layer::JUDGMENT,
                "evaluator": e.identity(),
                "judges": identities,
                "case": {"id": case.id, "expected": case.expected},
                "execution": "exec\\key",
                "content": "content",
            }));
            assert_eq!(
                JudgmentKeys::new([e.as_ref()], &registry)
                    .for_case(&case, "exec\\key", "content")
                    .remove(0),
                expected,
                "{entry}"
            );
        }
    }
}
