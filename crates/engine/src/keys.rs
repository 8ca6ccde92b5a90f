//! Every cache key of a run, in one place: the sha256 of the canonical JSON of exactly what
//! determines the cached result (`oloproof_core::identity`).
//!
//! | layer | key |
//! | --- | --- |
//! | `retrieve` | system name, version, `index_version`, `depth`, input — not `top_k`, not the budget, so changing those re-uses every retrieval |
//! | `generate` | the system's generation identity, input, assembled context |
//! | `execution` | every effective system setting, input (the case's whole result) |
//! | `judgment` | the evaluator's identity, its judges' identities, the case's id and expectations, the execution key, the trace's content |
//!
//! The judge layer keys its single calls itself (`judge_call`: provider, model, template,
//! rendered messages, sampling, repeat; `oloproof_judge::JudgeClient`).

use oloproof_core::case::Case;
use oloproof_core::identity::content_hash;
use oloproof_core::settings::SystemSettings;
use oloproof_core::trace::Trace;
use serde_json::{json, Value};

use crate::evaluators::Evaluator;

/// Cache layer names.
pub mod layer {
    /// A case's whole execution.
    pub const EXECUTION: &str = "execution";
    /// The retrieval stage.
    pub const RETRIEVE: &str = "retrieve";
    /// The generation stage.
    pub const GENERATE: &str = "generate";
    /// One evaluator on one execution.
    pub const JUDGMENT: &str = "judgment";
}

/// A cache entry to write with the case.
pub type CacheWrite = (String, String, String);

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

/// The content identity of an executed trace (its retrieval, context and generation), part of
/// every judgment key.
pub(crate) fn trace_content(trace: &Trace) -> String {
    content_hash(&json!({
        "retrieval": trace.retrieval,
        "context": trace.context,
        "generation": trace.generation,
    }))
}

/// The judgment cache key of evaluator `e` on one executed case: sha256 of the evaluator's
/// options, the identities of the judges it calls, the case's id and expectations, the
/// execution key and the trace's [`trace_content`].
pub(crate) fn judgment_key(
    e: &dyn Evaluator,
    judges: &crate::judged::JudgeRegistry,
    exec: &str,
    case: &Case,
    content: &str,
) -> String {
    let identities: Vec<serde_json::Value> =
        e.judge_names().iter().map(|n| judges.identity(n)).collect();
    content_hash(&json!({
        "layer": layer::JUDGMENT,
        "evaluator": e.identity(),
        "judges": identities,
        "case": {"id": case.id, "expected": case.expected},
        "execution": exec,
        "content": content,
    }))
}
