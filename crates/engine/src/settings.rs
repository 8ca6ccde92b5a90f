//! Resolved run settings: the config merged with the system's declared defaults.
//!
//! Precedence, highest first: `--set` overrides, `oloproof.yaml`, the `@rag_system` decorator
//! (the system's `hello`), built-in defaults. The resolved value is stored with the run, so a
//! resumed run uses exactly the settings it started with.

use std::path::{Path, PathBuf};
use std::time::Duration;

use oloproof_core::config::{ProjectOptions, RagOptions};
use oloproof_core::identity::content_hash;
use oloproof_core::system::SystemInfo;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use oloproof_connect::{ConnectorSpec, HttpOptions, WorkerCommand, WorkerOptions};

/// Default per-request timeout.
pub const DEFAULT_TIMEOUT_S: f64 = 60.0;
/// Environment variable naming the Python interpreter for `object:` systems.
pub const ENV_PYTHON: &str = "OLOPROOF_PYTHON";

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
}

impl SystemSettings {
    /// Merges the config's `rag` options over the system's hello.
    pub fn resolve(options: &ProjectOptions, info: &SystemInfo) -> Result<Self, String> {
        let rag = options.rag();
        let d = &info.defaults;
        let usize_default = |k: &str| d.get(k).and_then(Value::as_u64).map(|v| v as usize);
        let depth = rag.depth.or_else(|| usize_default("depth"));
        let top_k = rag.top_k.or_else(|| usize_default("top_k"));
        let (Some(depth), Some(top_k)) = (depth, top_k) else {
            return Err(
                "`depth` and `top_k` must be set, in oloproof.yaml (system.rag) or in @rag_system"
                    .to_string(),
            );
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
        })
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
    pub gold_slot: Option<oloproof_core::context::GoldSlot>,
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
    pub format: oloproof_core::dataset::DatasetFormat,
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

/// Number of worker processes: the config's, else the number of cores.
pub fn worker_count(rag: &RagOptions) -> usize {
    rag.workers.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    })
}

/// Per-request timeout.
pub fn timeout(rag: &RagOptions) -> f64 {
    rag.timeout_s
        .filter(|t| *t > 0.0)
        .unwrap_or(DEFAULT_TIMEOUT_S)
}

/// How to reach the system: an HTTP endpoint, or the command that starts one worker; with the
/// hello params.
pub fn connector_spec(
    options: &ProjectOptions,
    config_dir: &Path,
    shim_dir: &Path,
) -> ConnectorSpec {
    let worker = worker_options(options, config_dir, shim_dir);
    match &options.rag().http {
        Some(url) => ConnectorSpec::Http(HttpOptions {
            url: url.clone(),
            timeout: worker.timeout,
            params: worker.params,
        }),
        None => ConnectorSpec::Worker(worker),
    }
}

/// The interpreter a Python name resolves to (`sys.executable`), asked once per process and
/// name. Version managers such as pyenv put a shell script in front of `python3`; starting
/// every worker through it costs tens of milliseconds of CPU each. If the question fails, the
/// name is used as given (and a failure to start is reported when the worker starts).
fn resolve_python(name: &str, cwd: &Path) -> String {
    static RESOLVED: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<String, String>>,
    > = std::sync::OnceLock::new();
    let cache = RESOLVED.get_or_init(Default::default);
    if let Some(found) = cache.lock().ok().and_then(|c| c.get(name).cloned()) {
        return found;
    }
    let resolved = std::process::Command::new(name)
        .args(["-c", "import sys; print(sys.executable)"])
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && Path::new(s).is_absolute())
        .unwrap_or_else(|| name.to_string());
    if let Ok(mut c) = cache.lock() {
        c.insert(name.to_string(), resolved.clone());
    }
    resolved
}

/// The command that starts one worker, and its hello params.
pub fn worker_options(
    options: &ProjectOptions,
    config_dir: &Path,
    shim_dir: &Path,
) -> WorkerOptions {
    let rag = options.rag();
    let config_dir_abs =
        std::fs::canonicalize(config_dir).unwrap_or_else(|_| config_dir.to_path_buf());
    let mut params = Map::new();
    if let Some(v) = rag.depth {
        params.insert("depth".into(), json!(v));
    }
    if let Some(v) = rag.top_k {
        params.insert("top_k".into(), json!(v));
    }
    if let Some(v) = rag.token_budget {
        params.insert("token_budget".into(), json!(v));
    }
    if let Some(v) = &rag.index_version {
        params.insert("index_version".into(), json!(v));
    }
    if let Some(p) = &rag.params {
        for (k, v) in p {
            params.insert(k.clone(), v.clone());
        }
    }
    let command = if let Some(object) = &rag.object {
        let python = resolve_python(
            &rag.python
                .clone()
                .or_else(|| std::env::var(ENV_PYTHON).ok())
                .unwrap_or_else(|| "python3".to_string()),
            &config_dir_abs,
        );
        let mut pythonpath = format!("{}:{}", shim_dir.display(), config_dir_abs.display());
        if let Ok(existing) = std::env::var("PYTHONPATH") {
            if !existing.is_empty() {
                pythonpath = format!("{pythonpath}:{existing}");
            }
        }
        WorkerCommand {
            program: python,
            args: vec![
                "-u".into(),
                "-m".into(),
                "oloproof.worker".into(),
                object.clone(),
            ],
            cwd: config_dir_abs.clone(),
            env: vec![
                ("PYTHONPATH".into(), pythonpath),
                ("PYTHONDONTWRITEBYTECODE".into(), "1".into()),
            ],
        }
    } else {
        let argv = rag.command.clone().unwrap_or_default();
        let program = argv.first().cloned().unwrap_or_default();
        let program = if program.contains('/') && Path::new(&program).is_relative() {
            config_dir_abs.join(&program).display().to_string()
        } else {
            program
        };
        WorkerCommand {
            program,
            args: argv.iter().skip(1).cloned().collect(),
            cwd: config_dir_abs.clone(),
            env: Vec::new(),
        }
    };
    WorkerOptions {
        command,
        timeout: Duration::from_secs_f64(timeout(rag)),
        params,
    }
}
