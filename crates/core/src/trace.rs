//! Everything one case did.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::context::Context;
use crate::passage::Retrieval;

/// Schema version of stored traces.
pub const TRACE_SCHEMA_VERSION: u32 = 1;

/// How a stage failed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The system raised an error and said so.
    Raised,
    /// The worker exceeded `timeout_s` and was restarted.
    Timeout,
    /// The worker process died.
    Crash,
    /// The worker broke the protocol (bad JSON, wrong shape).
    Protocol,
    /// The worker could not be started.
    Spawn,
}

impl ErrorKind {
    /// The kind as stored (`raised`, `timeout`, `crash`, `protocol`, `spawn`).
    pub const fn as_str(&self) -> &'static str {
        match self {
            ErrorKind::Raised => "raised",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Crash => "crash",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Spawn => "spawn",
        }
    }
}

/// A failed stage, recorded as the case's error (never cached, never scored).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct StageError {
    /// `hello`, `rewrite`, `retrieve`, `fuse`, `rerank`, `count_tokens` or `generate`.
    pub stage: String,
    /// How it failed.
    pub kind: ErrorKind,
    /// The exception type, when the system raised one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// One-line message.
    pub message: String,
    /// The system's traceback, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceback: Option<String>,
    /// Last lines of the worker's stderr.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stderr_tail: Vec<String>,
}

impl StageError {
    /// A short one-line description: `generate: crash: worker exited with status 3`.
    pub fn summary(&self) -> String {
        let kind = match self.kind {
            ErrorKind::Raised => self.error_type.clone().unwrap_or_else(|| "error".into()),
            ErrorKind::Timeout => "timeout".into(),
            ErrorKind::Crash => "crash".into(),
            ErrorKind::Protocol => "protocol error".into(),
            ErrorKind::Spawn => "cannot start worker".into(),
        };
        format!("{}: {kind}: {}", self.stage, self.message)
    }
}

/// Per-stage wall time in milliseconds (absent when the stage did not run or was cached).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StageLatency {
    /// `retrieve`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieve: Option<f64>,
    /// `count_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count_tokens: Option<f64>,
    /// `generate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate: Option<f64>,
    /// `rewrite`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrite: Option<f64>,
    /// Host-side fusion, or the system's `fuse` op.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuse: Option<f64>,
    /// `rerank` (the stage, or the `reranker` intervention).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank: Option<f64>,
    /// The whole request as production recorded it (the root span's duration), which may
    /// exceed the sum of the stages; absent from runs, where `total` is that sum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
}

impl StageLatency {
    /// The stages as `(name, milliseconds)`, in pipeline order, those that ran.
    pub fn stages(&self) -> Vec<(&'static str, f64)> {
        [
            ("rewrite", self.rewrite),
            ("retrieve", self.retrieve),
            ("fuse", self.fuse),
            ("rerank", self.rerank),
            ("count_tokens", self.count_tokens),
            ("generate", self.generate),
        ]
        .into_iter()
        .filter_map(|(name, ms)| ms.map(|ms| (name, ms)))
        .collect()
    }

    /// One stage's time by name (`rewrite`, `retrieve`, `fuse`, `rerank`, `count_tokens`,
    /// `generate`), or the sum of those that ran (`total`).
    pub fn get(&self, stage: &str) -> Option<f64> {
        match stage {
            "rewrite" => self.rewrite,
            "retrieve" => self.retrieve,
            "fuse" => self.fuse,
            "rerank" => self.rerank,
            "count_tokens" => self.count_tokens,
            "generate" => self.generate,
            "total" => {
                if self.total.is_some() {
                    return self.total;
                }
                let stages = self.stages();
                (!stages.is_empty()).then(|| stages.iter().map(|s| s.1).sum())
            }
            _ => None,
        }
    }
}

/// The stage names [`StageLatency::get`] knows, in pipeline order, then `total`.
pub const LATENCY_STAGES: &[&str] = &[
    "rewrite",
    "retrieve",
    "fuse",
    "rerank",
    "count_tokens",
    "generate",
    "total",
];

/// Which cache layers served this case.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct CacheUse {
    /// The whole execution came from the execution cache.
    pub execution: bool,
    /// Retrieval came from the stage cache (`None`: not reached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieve: Option<bool>,
    /// Generation came from the stage cache (`None`: not reached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate: Option<bool>,
    /// The rewrite came from the stage cache (`None`: no rewrite stage, or not reached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrite: Option<bool>,
    /// The rerank came from the stage cache (`None`: no rerank stage, or not reached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank: Option<bool>,
    /// Retrieve calls served from / missing the stage cache, for a pipeline that made more
    /// than one (`retrieve` is then whether all were hits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieve_calls: Option<HitsMisses>,
}

/// Cache hits and misses of one stage.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct HitsMisses {
    /// Calls served from the cache.
    pub hits: usize,
    /// Calls that ran.
    pub misses: usize,
}

/// A human annotation of one claim of the answer (Rubrex worksheets): the claim and the ids of
/// the passages that support it (empty: unsupported). Recorded datasets carry them as `claims`;
/// the Rubrex evaluators read them instead of asking a judge.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClaimAnnotation {
    /// The claim, as the annotator wrote it.
    pub claim: String,
    /// Ids (`doc_id`, or `chunk_id`) of the passages that support it.
    #[serde(default)]
    pub supported_by: Vec<String>,
}

/// Token counts of output fields by the system's own `count_tokens` (the op the context budget
/// uses), asked after generation for the fields an evaluator measures in tokens
/// (`max_length` with `unit: tokens`). Each field's text is [`Trace::output_text`], sent as
/// one passage whose `doc_id` is `output.<field>`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct OutputTokens {
    /// Tokens per output field (`answer`, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counts: BTreeMap<String, usize>,
    /// The failed `count_tokens` call: the fields it asked about have no count (their
    /// criteria are `missing`; the case itself is not an error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<StageError>,
}

/// Everything one case did: retrieval, context, generation, latency, errors, cache use.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Trace {
    /// [`TRACE_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The case.
    pub case_id: String,
    /// What `retrieve` returned: for a pipeline, the final candidates (after fusion and
    /// rerank), the list context assembly cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieval: Option<Retrieval>,
    /// The optional stages (rewrite, lanes, fusion, rerank), when the system has any. Boxed,
    /// as [`Trace::production`] is: most traces have neither, and a trace is moved and held
    /// by value (each held case of a run's summary), so their ~680 bytes stay out of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<Box<crate::pipeline::Pipeline>>,
    /// What `generate` received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Context>,
    /// What `generate` returned (`answer`, `citations`, `usage`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<Map<String, Value>>,
    /// The failed stage, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<StageError>,
    /// Stage latencies.
    #[serde(default)]
    pub latency_ms: StageLatency,
    /// Cache layers used.
    #[serde(default)]
    pub cache: CacheUse,
    /// The worker's stderr lines while it ran this case.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stderr: Vec<String>,
    /// The intervention this execution ran under (`gold_context`, `top_k=4`, …), for child
    /// runs of a diagnosis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervention: Option<String>,
    /// Human claim annotations of the answer, for recorded datasets (never produced by a
    /// system; a recorded run's system version is the dataset's hash, so an edited annotation
    /// is a new execution and is judged again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claims: Option<Vec<ClaimAnnotation>>,
    /// The host's check of the applied predicates against the gold documents, when the
    /// config names a `corpus:` (recomputed per run, not part of the execution cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter_check: Option<crate::pipeline::FilterCheck>,
    /// Token counts of output fields, when an evaluator measures one in tokens (absent from
    /// recorded datasets and from the execution cache: counted per run, behind their own
    /// cache layer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<OutputTokens>,
    /// What production recorded beside the trace (imported or collected traffic only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub production: Option<Box<crate::production::Production>>,
}

impl Trace {
    /// An empty trace for `case_id`.
    pub fn new(case_id: &str) -> Self {
        Trace {
            schema_version: TRACE_SCHEMA_VERSION,
            case_id: case_id.to_string(),
            retrieval: None,
            pipeline: None,
            context: None,
            generation: None,
            error: None,
            latency_ms: StageLatency::default(),
            cache: CacheUse::default(),
            stderr: Vec::new(),
            intervention: None,
            claims: None,
            filter_check: None,
            output_tokens: None,
            production: None,
        }
    }

    /// A field of the generation output, e.g. `answer`.
    pub fn output_field(&self, field: &str) -> Option<&Value> {
        self.generation.as_ref()?.get(field)
    }

    /// The text of an output field as the rule evaluators read it: a string as it is, any
    /// other JSON value (number, boolean, array, object) as its compact JSON text; `None` when
    /// there is no generation, or the field is absent or `null`.
    pub fn output_text(&self, field: &str) -> Option<Cow<'_, str>> {
        match self.output_field(field)? {
            Value::Null => None,
            Value::String(s) => Some(Cow::Borrowed(s)),
            // A `Value` always serialises (its keys are strings).
            other => Some(Cow::Owned(other.to_string())),
        }
    }

    /// The answer text, if the generation returned a string `answer`.
    pub fn answer(&self) -> Option<&str> {
        self.output_field("answer")?.as_str()
    }

    /// The behaviour the system declared in its output's `behavior` field (`answer`,
    /// `abstain`, `clarify`): `Ok(None)` when it declared none, an error for another value.
    pub fn declared_behavior(
        &self,
    ) -> Result<Option<crate::case::Behavior>, crate::error::DeclaredBehaviorError> {
        match self.output_field("behavior") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => crate::case::Behavior::parse(s)
                .map(Some)
                .ok_or_else(|| crate::error::DeclaredBehaviorError::Unknown(s.clone())),
            Some(other) => Err(crate::error::DeclaredBehaviorError::NotAString(
                other.clone(),
            )),
        }
    }

    /// Cited ids (strings; other values are ignored).
    pub fn citations(&self) -> Vec<String> {
        match self.output_field("citations") {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|v| match v {
                    Value::String(s) => Some(s.clone()),
                    Value::Object(o) => o.get("doc_id").and_then(Value::as_str).map(str::to_string),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}
