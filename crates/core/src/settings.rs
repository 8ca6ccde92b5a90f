//! The settings a run ran with, resolved and stored with it: the config merged with the
//! system's declared defaults ([`SystemSettings::resolve`]), the diagnosis intervention a child
//! run runs under, the recorded dataset a run of recorded cases read.
//!
//! Precedence, highest first: `--set` overrides, `oloproof.yaml`, the `@rag_system` decorator
//! (the system's `hello`), built-in defaults. The resolved value is stored with the run (the
//! store's `settings_json`), so a resumed run uses exactly the settings it started with and every
//! reader of the store reads the same value back.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::config::ProjectOptions;
use crate::identity::content_hash;
use crate::system::SystemInfo;

/// The system's effective identity and stage parameters.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SystemSettings {
    /// Name (config, else hello).
    pub name: String,
    /// Version (config, else hello).
    pub version: String,
    /// Retrieval depth.
    pub depth: usize,
    /// Candidates kept for the context.
    pub top_k: usize,
    /// Token budget, if any.
    pub token_budget: Option<usize>,
    /// Index version, if any.
    pub index_version: Option<String>,
    /// Other parameters (config `params` over hello defaults).
    pub params: Map<String, Value>,
    /// The retrieval lanes the system declared (`retrieve` is called once per lane and query).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lanes: Vec<String>,
    /// The optional stages the system declared, in pipeline order, among
    /// [`OPTIONAL_STAGES`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<String>,
    /// How the host fuses several lists (absent: RRF k = 60 when there is anything to fuse).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fusion: Option<crate::config::FusionSettings>,
}

/// The optional stages a system may declare in its `hello` `ops`, in pipeline order.
pub const OPTIONAL_STAGES: &[&str] = &["rewrite", "fuse", "rerank"];

/// Why a system's settings cannot be resolved from the config and its `hello`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnresolvedSettings {
    /// Neither the config nor the system's defaults give `depth` and `top_k`.
    #[error("`depth` and `top_k` must be set, in oloproof.yaml (system.rag) or in @rag_system")]
    DepthAndTopK,
}

impl SystemSettings {
    /// Merges the config's `rag` options over the system's hello.
    pub fn resolve(
        options: &ProjectOptions,
        info: &SystemInfo,
    ) -> Result<Self, UnresolvedSettings> {
        let rag = options.rag();
        let d = &info.defaults;
        let usize_default = |k: &str| d.get(k).and_then(Value::as_u64).map(|v| v as usize);
        let depth = rag.depth.or_else(|| usize_default("depth"));
        let top_k = rag.top_k.or_else(|| usize_default("top_k"));
        let (Some(depth), Some(top_k)) = (depth, top_k) else {
            return Err(UnresolvedSettings::DepthAndTopK);
        };
        let mut params = Map::new();
        for (k, v) in d {
            if !["depth", "top_k", "token_budget", "index_version"].contains(&k.as_str())
                && !v.is_null()
            {
                params.insert(k.clone(), v.clone());
            }
        }
        if let Some(p) = &rag.params {
            for (k, v) in p {
                params.insert(k.clone(), v.clone());
            }
        }
        Ok(SystemSettings {
            name: options
                .system
                .as_ref()
                .and_then(|s| s.name.clone())
                .unwrap_or_else(|| info.name.clone()),
            version: options
                .system
                .as_ref()
                .and_then(|s| s.version.clone())
                .unwrap_or_else(|| info.version.clone()),
            depth,
            top_k,
            token_budget: rag.token_budget.or_else(|| usize_default("token_budget")),
            index_version: rag.index_version.clone().or_else(|| {
                d.get("index_version")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            }),
            params,
            lanes: info.lanes.clone(),
            stages: OPTIONAL_STAGES
                .iter()
                .filter(|s| info.implements(s))
                .map(|s| s.to_string())
                .collect(),
            fusion: rag.fusion.clone(),
        })
    }

    /// Whether the system declared the optional stage `stage` (`rewrite`, `fuse`, `rerank`).
    pub fn has_stage(&self, stage: &str) -> bool {
        self.stages.iter().any(|s| s == stage)
    }

    /// Whether a case runs through the pipeline (a rewrite, lanes, a rerank or the system's
    /// fusion), rather than protocol 1's single retrieval.
    pub fn is_pipeline(&self) -> bool {
        !self.lanes.is_empty() || !self.stages.is_empty()
    }

    /// Identity of retrieval: name, version, index version, depth (not `top_k`, not the budget).
    pub fn retrieval_identity(&self) -> Value {
        json!({"name": self.name, "version": self.version, "index_version": self.index_version, "depth": self.depth})
    }

    /// Identity of generation: the system itself (its context is keyed separately).
    pub fn generation_identity(&self) -> Value {
        json!({"name": self.name, "version": self.version, "index_version": self.index_version, "params": self.params})
    }

    /// Everything that determines a case's execution.
    pub fn execution_identity(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// How a child run of a diagnosis departs from a normal execution.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Intervention {
    /// Shown in traces and child-run lists: `gold_context`, `control`, `top_k=4`, …
    pub label: String,
    /// With `gold_context`: place the gold passages at this slot among `distractors`
    /// non-relevant passages of the recorded retrieval (the lost-in-the-middle harness).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gold_slot: Option<crate::context::GoldSlot>,
    /// How many distractors surround the gold passages (with `gold_slot`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub distractors: usize,
    /// Replace the assembled context with the case's `expected.gold_context`.
    #[serde(default)]
    pub gold_context: bool,
    /// Replay the retrieval recorded in this run instead of calling `retrieve`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_from: Option<String>,
    /// Pass the candidates through this `module:function` reranker before assembly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reranker: Option<String>,
    /// Do not read the generation cache (control re-executions).
    #[serde(default)]
    pub fresh_generation: bool,
    /// Skip the system's `rerank` stage (`no-rerank`): the fused (or single) list goes to
    /// context assembly as it is.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_rerank: bool,
    /// Ask every retrieval to apply no metadata filter (`no-filter`: `skip_filters` in each
    /// `retrieve` request).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_filter: bool,
    /// Retrieve with the raw question instead of the rewrites (`raw-query`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub raw_query: bool,
    /// Retrieve through this lane only (`lane=NAME`): no fusion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Everything a run needs, stored with it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunSettings {
    /// The config file as given.
    pub config_path: PathBuf,
    /// Its folder.
    pub config_dir: PathBuf,
    /// The validated options.
    pub options: ProjectOptions,
    /// The effective system.
    pub system: SystemSettings,
    /// Worker processes.
    pub workers: usize,
    /// Per-request timeout in seconds.
    pub timeout_s: f64,
    /// Whether caches are read.
    pub use_cache: bool,
    /// For a child run of a diagnosis: the intervention it runs under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervention: Option<Intervention>,
    /// For a run of recorded cases: the dataset it read (there is no system to call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<DatasetSettings>,
}

/// The recorded dataset a run evaluated.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DatasetSettings {
    /// The file as given.
    pub path: PathBuf,
    /// `ragas` or `trace`.
    pub format: crate::dataset::DatasetFormat,
    /// sha256 (hex) of the file.
    pub sha256: String,
}

impl RunSettings {
    /// Identity hash of the run's configuration (system, evaluators, case file name).
    pub fn identity(&self) -> String {
        if let Some(dataset) = &self.dataset {
            return content_hash(&json!({
                "system": self.system.execution_identity(),
                "evaluators": self.options.evaluators,
                "slices": self.options.slices,
                "intervention": self.intervention,
                "dataset": dataset,
            }));
        }
        content_hash(&json!({
            "system": self.system.execution_identity(),
            "evaluators": self.options.evaluators,
            "slices": self.options.slices,
            "intervention": self.intervention,
        }))
    }
}
