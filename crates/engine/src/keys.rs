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
use oloproof_core::identity::{
    canonical_json, canonical_json_of, content_hash, content_hash_of, sha256_hex,
};
use oloproof_core::settings::SystemSettings;
use oloproof_core::trace::Trace;
use serde_json::{json, Map, Value};

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

/// The canonical JSON of what every key of one system and case shares: the system's three
/// identities and the case's input. A pipeline case computes seven to nine keys from the same
/// few parts, so each part is written once, remembered by this thread while the next call
/// asks for an equal system and input (compared by value: never a stale part), and spliced
/// into each key's object ([`spliced_hash`]).
struct SharedParts {
    system: SystemSettings,
    generation: String,
    retrieval: String,
    execution: String,
    input: Map<String, Value>,
    input_json: String,
}

thread_local! {
    static SHARED: std::cell::RefCell<Option<SharedParts>> = const { std::cell::RefCell::new(None) };
}

/// Which identity of the system a key holds.
#[derive(Clone, Copy)]
enum Identity {
    Generation,
    Retrieval,
    Execution,
}

/// Calls `f` with the canonical JSON of `system`'s `identity` and of `input`.
fn with_shared<R>(
    system: &SystemSettings,
    identity: Identity,
    input: &Map<String, Value>,
    f: impl FnOnce(&str, &str) -> R,
) -> R {
    SHARED.with(|shared| {
        let mut shared = shared.borrow_mut();
        let parts = match shared.take() {
            Some(mut parts) if same_settings(&parts.system, system) => {
                if !same_object(&parts.input, input) {
                    parts.input = input.clone();
                    parts.input_json = input_json(input);
                }
                parts
            }
            _ => SharedParts {
                system: system.clone(),
                generation: canonical_json(&system.generation_identity()),
                retrieval: canonical_json(&system.retrieval_identity()),
                execution: canonical_json(&system.execution_identity()),
                input: input.clone(),
                input_json: input_json(input),
            },
        };
        let identity_json = match identity {
            Identity::Generation => &parts.generation,
            Identity::Retrieval => &parts.retrieval,
            Identity::Execution => &parts.execution,
        };
        let result = f(identity_json, &parts.input_json);
        *shared = Some(parts);
        result
    })
}

/// The canonical JSON of a case's input.
fn input_json(input: &Map<String, Value>) -> String {
    // An object of JSON values: it always serialises.
    canonical_json_of(input).expect("a JSON object serialises")
}

/// Whether two JSON values have the same canonical JSON: `==` but for numbers, which must be
/// of the same kind (an integer is not the float of the same value) and, as floats, have the
/// same bits (`-0.0` is not `0.0`).
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_u64(), x.as_i64(), x.as_f64()) {
            (Some(u), _, _) => y.as_u64() == Some(u),
            (None, Some(i), _) => y.as_u64().is_none() && y.as_i64() == Some(i),
            (None, None, f) => y.is_f64() && f.map(f64::to_bits) == y.as_f64().map(f64::to_bits),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b))
        }
        (Value::Object(x), Value::Object(y)) => same_object(x, y),
        _ => a == b,
    }
}

/// [`same_json`] of two objects.
fn same_object(x: &Map<String, Value>, y: &Map<String, Value>) -> bool {
    x.len() == y.len()
        && x.iter()
            .all(|(k, a)| y.get(k).is_some_and(|b| same_json(a, b)))
}

/// Whether two systems' settings have the same identities: equal, and their parameters and
/// fusion numbers the same to the bit (as [`same_json`]).
fn same_settings(a: &SystemSettings, b: &SystemSettings) -> bool {
    let bits = |f: &Option<f64>| f.map(f64::to_bits);
    let fusion_bits = |s: &SystemSettings| {
        s.fusion.as_ref().map(|f| {
            (
                bits(&f.k),
                bits(&f.alpha),
                f.weights
                    .as_ref()
                    .map(|w| w.values().map(|v| v.to_bits()).collect::<Vec<_>>()),
            )
        })
    };
    a == b && same_object(&a.params, &b.params) && fusion_bits(a) == fusion_bits(b)
}

/// sha256 of the canonical JSON of the object whose fields are `fields` (name, canonical JSON
/// of the value): the fields in UTF-8 byte order of their names, as [`content_hash`] of the
/// same object writes them, so a spliced key equals the content hash of its object.
fn spliced_hash(fields: &mut [(&str, &str)]) -> String {
    fields.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut text = String::with_capacity(fields.iter().map(|f| f.0.len() + f.1.len() + 4).sum());
    text.push('{');
    for (i, (name, json)) in fields.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        // The names are this module's literals: plain ASCII, written as JSON strings.
        text.push_str(&Value::String((*name).to_string()).to_string());
        text.push(':');
        text.push_str(json);
    }
    text.push('}');
    sha256_hex(text.as_bytes())
}

/// The canonical JSON of a cache layer's name (`"rerank"`).
fn layer_json(layer: oloproof_core::store::CacheLayer) -> String {
    Value::String(layer.to_string()).to_string()
}

/// The key of a stage on one case: `{layer, system: its identity, input, ...extra}`, spliced.
fn stage_key(
    system: &SystemSettings,
    identity: Identity,
    case: &Case,
    layer: oloproof_core::store::CacheLayer,
    extra: &[(&str, &str)],
) -> String {
    let layer = layer_json(layer);
    with_shared(system, identity, &case.input, |identity, input| {
        let mut fields = vec![
            ("layer", layer.as_str()),
            ("system", identity),
            ("input", input),
        ];
        fields.extend_from_slice(extra);
        spliced_hash(&mut fields)
    })
}

/// Cache key of a pipeline's `rewrite`: the system's generation identity (name, version,
/// index version, parameters) and the input.
pub fn rewrite_key(system: &SystemSettings, case: &Case) -> String {
    stage_key(system, Identity::Generation, case, layer::REWRITE, &[])
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
    let lane = canonical_json(&json!(request.lane));
    let query = canonical_json(&json!(request.query));
    let skip_filters = canonical_json(&json!(request.skip_filters));
    stage_key(
        system,
        Identity::Retrieval,
        case,
        layer::RETRIEVE,
        &[
            ("lane", &lane),
            ("query", &query),
            ("skip_filters", &skip_filters),
        ],
    )
}

/// Cache key of a pipeline's `rerank`: the system's generation identity, the input and the
/// candidates it received.
pub fn rerank_key(
    system: &SystemSettings,
    case: &Case,
    candidates: &[oloproof_core::passage::Passage],
) -> String {
    let candidates = canonical_json_of(candidates).unwrap_or_else(|_| "null".into());
    stage_key(
        system,
        Identity::Generation,
        case,
        layer::RERANK,
        &[("candidates", &candidates)],
    )
}

/// A cache entry to write with the case.
pub type CacheWrite = oloproof_core::store::CacheEntry;

/// Cache key of a case's execution.
pub fn execution_key(system: &SystemSettings, case: &Case) -> String {
    stage_key(system, Identity::Execution, case, layer::EXECUTION, &[])
}

/// Cache key of a retrieval.
pub fn retrieval_key(system: &SystemSettings, case: &Case) -> String {
    stage_key(system, Identity::Retrieval, case, layer::RETRIEVE, &[])
}

/// Cache key of a generation.
pub fn generation_key<C: serde::Serialize + ?Sized>(
    system: &SystemSettings,
    case: &Case,
    context: &C,
) -> String {
    let context = canonical_json_of(context).unwrap_or_else(|_| "null".into());
    stage_key(
        system,
        Identity::Generation,
        case,
        layer::GENERATE,
        &[("context", &context)],
    )
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
    /// The object hashed: `{retrieval, context, generation}` (`null` when absent).
    #[derive(serde::Serialize)]
    struct Content<'a> {
        retrieval: &'a Option<oloproof_core::passage::Retrieval>,
        context: &'a Option<oloproof_core::context::Context>,
        generation: &'a Option<Map<String, Value>>,
    }
    content_hash_of(&Content {
        retrieval: &trace.retrieval,
        context: &trace.context,
        generation: &trace.generation,
    })
    // A trace is plain JSON data (string keys, 64-bit numbers): it always serialises.
    .expect("a trace serialises")
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
        #[derive(serde::Serialize)]
        struct CasePart<'a, E> {
            id: &'a str,
            expected: &'a E,
        }
        let case_json = canonical_json_of(&CasePart {
            id: &case.id,
            expected: &case.expected,
        })
        .expect("a case's expectations serialise");
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

    /// Every stage key is the content hash of its object as the keys were first written (so
    /// every cached stage is still found), whichever system and input the thread asked about
    /// before: the shared parts are re-used only for an equal system and input, numbers
    /// compared to the bit.
    #[test]
    fn stage_keys_are_the_content_hash_of_their_object() {
        use oloproof_core::passage::Passage;
        use oloproof_core::system::RetrieveRequest;
        let base = SystemSettings {
            name: "s".into(),
            version: "1".into(),
            depth: 6,
            top_k: 2,
            token_budget: Some(40),
            index_version: Some("kb-1".into()),
            params: serde_json::from_value(json!({"temperature": 0.0, "model": "m"})).unwrap(),
            lanes: vec!["dense".into(), "sparse".into()],
            stages: vec!["rewrite".into(), "rerank".into()],
            fusion: None,
        };
        let mut systems = vec![base.clone()];
        let mut negative_zero = base.clone();
        negative_zero
            .params
            .insert("temperature".into(), json!(-0.0));
        systems.push(negative_zero);
        let mut integer = base.clone();
        integer.params.insert("temperature".into(), json!(0));
        systems.push(integer);
        systems.push(SystemSettings {
            index_version: None,
            depth: 9,
            ..base.clone()
        });
        systems.push(SystemSettings {
            fusion: Some(serde_json::from_value(json!({"method": "rrf", "k": 0.0})).unwrap()),
            ..base.clone()
        });
        systems.push(SystemSettings {
            fusion: Some(serde_json::from_value(json!({"method": "rrf", "k": -0.0})).unwrap()),
            ..base.clone()
        });
        let inputs = [
            json!({"question": "q", "tenant": "acme"}),
            json!({"tenant": "acme", "question": "q"}),
            json!({"question": "q", "x": 0.0}),
            json!({"question": "q", "x": -0.0}),
            json!({"question": "q", "x": 0}),
            json!({"question": "é \u{1f600} \"quoted\"", "nested": {"b": [1, 2.5], "a": null}}),
        ];
        let candidates = vec![
            Passage {
                doc_id: "d1".into(),
                chunk_id: Some("c".into()),
                score: Some(0.5),
                text: Some("t".into()),
                metadata: None,
            },
            Passage {
                doc_id: "d2".into(),
                chunk_id: None,
                score: None,
                text: None,
                metadata: None,
            },
        ];
        let context = json!([{"position": 1, "doc_id": "d1", "text": "t"}]);
        // Twice over, so each key is asked right after other systems and inputs.
        for _ in 0..2 {
            for system in &systems {
                for input in &inputs {
                    let case: Case =
                        serde_json::from_value(json!({"id": "c", "input": input})).unwrap();
                    assert_eq!(
                        rewrite_key(system, &case),
                        content_hash(
                            &json!({"layer": layer::REWRITE, "system": system.generation_identity(), "input": case.input})
                        )
                    );
                    assert_eq!(
                        execution_key(system, &case),
                        content_hash(
                            &json!({"layer": layer::EXECUTION, "system": system.execution_identity(), "input": case.input})
                        )
                    );
                    assert_eq!(
                        retrieval_key(system, &case),
                        content_hash(
                            &json!({"layer": layer::RETRIEVE, "system": system.retrieval_identity(), "input": case.input})
                        )
                    );
                    assert_eq!(
                        generation_key(system, &case, &context),
                        content_hash(
                            &json!({"layer": layer::GENERATE, "system": system.generation_identity(), "input": case.input, "context": context})
                        )
                    );
                    assert_eq!(
                        rerank_key(system, &case, &candidates),
                        content_hash(
                            &json!({"layer": layer::RERANK, "system": system.generation_identity(), "input": case.input, "candidates": candidates})
                        )
                    );
                    for (lane, query, skip_filters) in [
                        (Some("dense"), Some("q2"), false),
                        (None, Some("q"), true),
                        (Some("sparse"), None, false),
                    ] {
                        let request = RetrieveRequest {
                            query,
                            lane,
                            skip_filters,
                        };
                        assert_eq!(
                            lane_retrieval_key(system, &case, request),
                            content_hash(&json!({
                                "layer": layer::RETRIEVE,
                                "system": system.retrieval_identity(),
                                "input": case.input,
                                "lane": lane,
                                "query": query,
                                "skip_filters": skip_filters,
                            }))
                        );
                    }
                    assert_eq!(
                        lane_retrieval_key(system, &case, RetrieveRequest::default()),
                        retrieval_key(system, &case)
                    );
                }
            }
        }
        // Equal in `==` but not in canonical JSON: kept apart.
        let case = |input: &Value| -> Case {
            serde_json::from_value(json!({"id": "c", "input": input})).unwrap()
        };
        assert_ne!(
            execution_key(&systems[0], &case(&inputs[2])),
            execution_key(&systems[0], &case(&inputs[3]))
        );
        assert_ne!(
            rewrite_key(&systems[0], &case(&inputs[0])),
            rewrite_key(&systems[1], &case(&inputs[0]))
        );
        assert_ne!(
            execution_key(&systems[4], &case(&inputs[0])),
            execution_key(&systems[5], &case(&inputs[0]))
        );
    }

    /// A trace's content identity is the content hash of `{retrieval, context, generation}`
    /// as it was first computed from the value tree (every judgment cached before is found).
    #[test]
    fn trace_content_is_the_content_hash_of_its_parts() {
        let mut trace: Trace = serde_json::from_value(json!({
            "schema_version": 1,
            "case_id": "c",
            "retrieval": {"query": "q", "depth": 3, "candidates": [
                {"doc_id": "d1", "score": 0.5, "text": "é \"t\"", "metadata": {"b": 1, "a": [1.5, null]}},
                {"doc_id": "d2", "chunk_id": "c2", "score": -0.0}
            ]},
            "context": {"passages": [{"position": 1, "tokens": 3, "doc_id": "d1", "score": 0.5, "text": "t"}],
                        "dropped": [{"position": 2, "doc_id": "d2", "reason": "below_top_k"}],
                        "truncated": false, "tokens_used": 3},
            "generation": {"answer": "a", "citations": ["d1"], "usage": {"input_tokens": 12}},
        }))
        .unwrap();
        let old = |t: &Trace| {
            content_hash(&json!({
                "retrieval": t.retrieval,
                "context": t.context,
                "generation": t.generation,
            }))
        };
        assert_eq!(trace_content(&trace), old(&trace));
        trace.context = None;
        trace.generation = None;
        assert_eq!(trace_content(&trace), old(&trace));
    }

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
