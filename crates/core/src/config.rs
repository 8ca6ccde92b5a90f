//! `oloproof.yaml`: options as the file says them, overrides, and validation with spans.
//!
//! Precedence, highest first: `--set key.path=value` overrides, then the file, then defaults.
//! The system's own `@rag_system` defaults sit below the file: they are merged by the engine
//! once the worker has said hello. Unknown keys are errors (a typo in `top_k` must not silently
//! run the default).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::source::{did_you_mean, yaml_scalar, Origin, SourceError, YamlDocument};

/// The whole `oloproof.yaml`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProjectOptions {
    /// The system under test (exactly one of `system` and `dataset`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<SystemOptions>,
    /// A JSON Lines file of the corpus's documents and their metadata
    /// (`{"doc_id": "d1", "metadata": {"tenant": "acme"}}`), against which the predicates a
    /// retrieval applied are evaluated on the gold documents (`filter_exclusion`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corpus: Option<String>,
    /// A recorded dataset (Ragas or trace JSONL) evaluated instead of running a system,
    /// relative to the config's folder (exactly one of `system` and `dataset`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    /// Path of the case file (JSONL), relative to the config's folder (required with `system`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cases: String,
    /// Evaluators, in table order.
    #[serde(default)]
    pub evaluators: Vec<EvaluatorEntry>,
    /// Slice keys: `metadata.<path>`, `relevant_position`, `context_truncated`.
    #[serde(default)]
    pub slices: Vec<String>,
    /// Slices with fewer cases than this are shown but marked.
    #[serde(default = "default_min_slice_support")]
    pub min_slice_support: usize,
    /// Run store: a path relative to the config's folder (default `.oloproof/oloproof.db`), or
    /// a `postgres://user@host/db` URL (the password from `PGPASSWORD` or the variable named
    /// by `?password_env=NAME`, never in the URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// Seed and resample count of the bootstrap intervals.
    #[serde(default)]
    pub bootstrap: BootstrapOptions,
    /// Share of cases allowed to end in an error before the run exits 4 (default 0).
    #[serde(default)]
    pub max_error_rate: f64,
    /// Judges by name (`provider`, `model`, …), validated by the judge layer.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub judges: std::collections::BTreeMap<String, Value>,
    /// Acceptance thresholds a judge must pass against human labels before it may gate,
    /// declared before measuring (`oloproof calibrate`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub calibration: std::collections::BTreeMap<String, CalibrationOptions>,
    /// Score history (JSONL) that every finished run appends one line to, relative to the
    /// config's folder (`oloproof history`; default: none, nothing is appended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<String>,
    /// Score a fixed, seed-determined subset of the cases (`run --sample N --seed S`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<SampleOptions>,
    /// Online evaluation of production traffic (`oloproof monitor`; [`crate::monitor`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor: Option<crate::monitor::MonitorOptions>,
}

/// `sample:`: which subset of the cases a run scores. The choice depends only on the case ids
/// and the seed (never on the order of the file), so reordering or appending cases keeps every
/// chosen case that is still there.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SampleOptions {
    /// Number of cases to score (all of them when the set is smaller).
    pub size: usize,
    /// Seed of the choice (default 0).
    #[serde(default)]
    pub seed: u64,
}

/// No connector options: what a dataset-only config reads as its `system.rag`.
static NO_RAG: RagOptions = RagOptions {
    object: None,
    command: None,
    http: None,
    depth: None,
    top_k: None,
    token_budget: None,
    index_version: None,
    workers: None,
    timeout_s: None,
    python: None,
    params: None,
    fusion: None,
    prices: None,
};

impl ProjectOptions {
    /// `system.rag`, or empty options when the config names a dataset instead of a system.
    pub fn rag(&self) -> &RagOptions {
        self.system.as_ref().map_or(&NO_RAG, |s| &s.rag)
    }
}

/// `calibration.<judge>`: what a judge must reach against human labels.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CalibrationOptions {
    /// Minimum Cohen's kappa (e.g. 0.7).
    pub min_kappa: f64,
    /// Kappa weights for ordinal labels: `linear` or `quadratic` (default: unweighted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights: Option<String>,
}

fn default_min_slice_support() -> usize {
    4
}

/// Bootstrap settings; the seed is recorded with every run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BootstrapOptions {
    /// RNG seed.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Number of resamples.
    #[serde(default = "default_resamples")]
    pub resamples: usize,
}

impl Default for BootstrapOptions {
    fn default() -> Self {
        BootstrapOptions {
            seed: default_seed(),
            resamples: default_resamples(),
        }
    }
}

fn default_seed() -> u64 {
    20_260_916
}

fn default_resamples() -> usize {
    10_000
}

/// `system:`: identity and connection.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SystemOptions {
    /// Overrides the name the system declares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Overrides the version the system declares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The staged RAG system.
    pub rag: RagOptions,
}

/// `system.rag:`: how to reach the system and its stage parameters.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct RagOptions {
    /// A Python class `module:Class`, imported with the config's folder on `sys.path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// A program speaking the worker protocol, run without a shell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// An HTTP endpoint taking the worker protocol's requests as POST bodies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<String>,
    /// Candidates retrieved per case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<usize>,
    /// Candidates kept for the context, in the system's order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<usize>,
    /// Token budget of the context (counted by the system's `count_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<usize>,
    /// Identity of the index: part of every retrieval cache key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_version: Option<String>,
    /// Worker processes (default: number of cores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<usize>,
    /// Seconds one request may take before the worker is restarted (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<f64>,
    /// Python interpreter for `object:` systems (default `$OLOPROOF_PYTHON`, else the `python3`
    /// beside the `oloproof` binary when pip installed it in a virtual environment, else `python3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    /// Extra parameters passed to the system in `hello`; part of the system identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Map<String, Value>>,
    /// How the host fuses the lists of several lanes or queries (`{method: rrf, k: 60}`), or
    /// `{method: system}` for the system's own `fuse` op. Default: RRF with k = 60.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fusion: Option<FusionSettings>,
    /// Prices per model, in dollars per million tokens, for the `cost` criterion: the models
    /// are the ones the stages report in their `usage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<std::collections::BTreeMap<String, Price>>,
}

/// A model's price, in dollars per million tokens.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Dollars per million input (prompt) tokens.
    pub input: f64,
    /// Dollars per million output (completion) tokens.
    pub output: f64,
}

/// A fusion method of `system.rag.fusion.method`: those of `oloproof fuse`, or `system`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum FusionMethodName {
    /// Reciprocal rank fusion `Σ w / (k + rank)` (ranks in each list's own order).
    #[default]
    Rrf,
    /// CombSUM of normalised scores.
    Combsum,
    /// CombMNZ.
    Combmnz,
    /// CombMAX.
    Combmax,
    /// CombMIN.
    Combmin,
    /// CombMED.
    Combmed,
    /// CombANZ.
    Combanz,
    /// Weighted sum of normalised scores (`weights:`).
    Wsum,
    /// `α·first + (1 − α)·second` of exactly two lists.
    Convex,
    /// The system's own `fuse` op.
    System,
}

/// Score normalisation before score-based fusion (`oloproof fuse --norm`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum FusionNorm {
    /// Scores as given.
    None,
    /// `(s − min) / (max − min)`.
    #[default]
    Minmax,
    /// Z-score.
    Zscore,
    /// Divide by the sum.
    Sum,
    /// Divide by the maximum.
    Max,
    /// Rank-based `(n − r + 1) / n`.
    Rank,
}

/// `system.rag.fusion:`: how the host fuses a pipeline's lists.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct FusionSettings {
    /// The method (default `rrf`).
    #[serde(default)]
    pub method: FusionMethodName,
    /// RRF's constant (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<f64>,
    /// Weight per lane, for `rrf` and `wsum` (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights: Option<std::collections::BTreeMap<String, f64>>,
    /// Normalisation for score-based methods (default `minmax`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub norm: Option<FusionNorm>,
    /// `convex`'s weight of the first list (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
}

impl FusionSettings {
    /// The method as recorded in traces: `rrf k=60`, `combsum minmax`, `system`.
    pub fn label(&self) -> String {
        let norm = || {
            serde_json::to_value(self.norm.unwrap_or_default())
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        };
        let name = serde_json::to_value(self.method)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        match self.method {
            FusionMethodName::Rrf => format!("rrf k={}", self.k.unwrap_or(60.0)),
            FusionMethodName::System => "system".into(),
            FusionMethodName::Convex => {
                format!("convex alpha={} {}", self.alpha.unwrap_or(0.5), norm())
            }
            _ => format!("{name} {}", norm()),
        }
    }
}

/// One `evaluators:` entry as the file writes it: its `type` and its other options, which the
/// engine's evaluator registry parses (each type has its own options, unknown keys are
/// errors). Once a config is validated, `options` holds every option of the type with its
/// default filled in, so the entry is the evaluator's identity (part of the run's identity
/// and of every judgment cache key). Its source position is `evaluators[i]` in
/// [`ProjectConfig::source`].
#[derive(Debug, Clone, PartialEq)]
pub struct EvaluatorEntry {
    /// The evaluator type (`contains`, `faithfulness`, …).
    pub type_name: String,
    /// Every other key of the entry, in file order (`criterion` among them).
    pub options: Map<String, Value>,
}

impl EvaluatorEntry {
    /// An entry of type `type_name` with `options` (which must not hold `type`).
    pub fn new(type_name: impl Into<String>, options: Map<String, Value>) -> Self {
        EvaluatorEntry {
            type_name: type_name.into(),
            options,
        }
    }

    /// The `criterion:` the entry names, if it names one.
    pub fn criterion_override(&self) -> Option<&str> {
        self.options.get("criterion").and_then(Value::as_str)
    }

    /// The entry as one JSON object, `type` first: how it is written in the file and stored.
    pub fn to_value(&self) -> Value {
        let mut map = Map::with_capacity(self.options.len() + 1);
        map.insert("type".to_string(), Value::String(self.type_name.clone()));
        for (k, v) in &self.options {
            map.insert(k.clone(), v.clone());
        }
        Value::Object(map)
    }
}

impl Serialize for EvaluatorEntry {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.options.len() + 1))?;
        map.serialize_entry("type", &self.type_name)?;
        for (k, v) in &self.options {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for EvaluatorEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut options = Map::<String, Value>::deserialize(deserializer)?;
        match options.shift_remove("type") {
            Some(Value::String(type_name)) => Ok(EvaluatorEntry { type_name, options }),
            Some(_) => Err(serde::de::Error::custom(
                "wrong type: `type` must be a string",
            )),
            None => Err(serde::de::Error::missing_field("type")),
        }
    }
}

/// Built-in slice keys besides `metadata.*`.
/// `diagnostic_matrix` slices by `metadata.evidence_condition` (seed 004's matrix: `sufficient`,
/// `missing`, `contradictory`, `irrelevant_additions`; values checked when cases load).
pub const BUILTIN_SLICES: &[&str] = &[
    "relevant_position",
    "context_truncated",
    "diagnostic_matrix",
];

/// A loaded, validated configuration with the folder it came from.
#[derive(Debug, Clone)]
pub struct ProjectConfig {
    /// The parsed file with positions, for validation done by other layers (judges).
    pub source: YamlDocument,
    /// The file's value with the overrides applied.
    pub value: Value,
    /// The config file as the user named it.
    pub path: PathBuf,
    /// Its folder: relative paths resolve against it.
    pub dir: PathBuf,
    /// The validated options (overrides applied).
    pub options: ProjectOptions,
    /// The `--set key=value` overrides, in order (errors found later, against the system's
    /// `hello`, point at the override that set a key: [`attribute`]).
    pub overrides: Vec<String>,
}

impl ProjectConfig {
    /// An error at `key_path` of the file, or at the `--set` override that set it.
    pub fn error_at(&self, key_path: &str, message: impl Into<String>) -> SourceError {
        attribute(
            self.source.error_at(key_path, true, message),
            &self.overrides,
            key_path,
        )
    }

    /// Path of the recorded dataset, when the config evaluates one instead of a system.
    pub fn dataset_path(&self) -> Option<PathBuf> {
        self.options.dataset.as_ref().map(|d| self.dir.join(d))
    }

    /// Absolute-or-relative path of the case file.
    pub fn cases_path(&self) -> PathBuf {
        self.dir.join(&self.options.cases)
    }

    /// Path of the score history named by `history:`, if any.
    pub fn history_path(&self) -> Option<PathBuf> {
        self.options.history.as_ref().map(|h| self.dir.join(h))
    }

    /// The run store: `store:` read as a Postgres URL or a path relative to the config's
    /// folder (default `.oloproof/oloproof.db`).
    pub fn store_location(&self) -> crate::store::StoreLocation {
        crate::store::StoreLocation::parse(
            self.options
                .store
                .as_deref()
                .unwrap_or(".oloproof/oloproof.db"),
            &self.dir,
        )
    }

    /// Path of the run store (for a Postgres store, the path its URL would be read as; use
    /// [`store_location`](Self::store_location)).
    pub fn store_path(&self) -> PathBuf {
        self.dir.join(
            self.options
                .store
                .as_deref()
                .unwrap_or(".oloproof/oloproof.db"),
        )
    }
}

/// Applies one `key.path=value` override to `value`; the right side is typed as a YAML scalar
/// (or a flow list/map such as `[a, b]`).
pub fn apply_override(value: &mut Value, assignment: &str) -> Result<(), SourceError> {
    let override_error = |message: String| SourceError {
        message,
        origin: Origin::Override(assignment.to_string()),
        key_path: None,
        expected: Some("KEY.PATH=VALUE, e.g. system.rag.top_k=4".to_string()),
        help: None,
    };
    let (path, raw) = assignment
        .split_once('=')
        .ok_or_else(|| override_error("an override needs `=`".to_string()))?;
    let path = path.trim();
    if path.is_empty() || path.split('.').any(str::is_empty) {
        return Err(override_error(format!("`{path}` is not a key path")));
    }
    let parsed = if raw.trim_start().starts_with(['[', '{']) {
        YamlDocument::parse("--set", raw)
            .map(|d| d.value)
            .map_err(|e| override_error(format!("cannot read `{raw}`: {}", e.message)))?
    } else {
        yaml_scalar(raw.trim())
    };
    let mut cursor = value;
    let parts: Vec<&str> = path.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let obj = match cursor {
            Value::Object(map) => map,
            Value::Array(items) => {
                let idx: usize = part
                    .parse()
                    .map_err(|_| override_error(format!("`{part}` is not an index of a list")))?;
                let len = items.len();
                let slot = items.get_mut(idx).ok_or_else(|| {
                    override_error(format!("index {idx} is past the end of a list of {len}"))
                })?;
                if last {
                    *slot = parsed;
                    return Ok(());
                }
                cursor = slot;
                continue;
            }
            _ => {
                return Err(override_error(format!(
                    "`{}` is not a mapping",
                    parts[..i].join(".")
                )))
            }
        };
        if last {
            obj.insert(part.to_string(), parsed);
            return Ok(());
        }
        cursor = obj
            .entry(part.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    Ok(())
}

/// Makes a `provider: local` judge's relative `path` relative to the config's folder, like
/// every other path of the file (`${VAR}` paths are left for the judge layer to expand, and
/// `hf://` Hub paths for it to resolve).
fn resolve_local_model_paths(judges: &mut std::collections::BTreeMap<String, Value>, dir: &Path) {
    for judge in judges.values_mut() {
        if judge.get("provider").and_then(Value::as_str) != Some("local") {
            continue;
        }
        if let Some(Value::String(p)) = judge.get_mut("path") {
            if !p.starts_with("${")
                && !p.starts_with("hf://")
                && Path::new(p.as_str()).is_relative()
                && dir != Path::new(".")
            {
                *p = dir.join(p.as_str()).display().to_string();
            }
        }
    }
}

/// What validating `evaluators:` needs from the evaluator registry (the engine's): which types
/// exist, and the check of each entry's own options.
pub trait EvaluatorCatalog {
    /// The evaluator types, in the order an error lists them.
    fn type_names(&self) -> Vec<&'static str>;
    /// Whether `type:` may say `name`: a type of [`EvaluatorCatalog::type_names`] or an alias
    /// of one (not listed: errors name the types).
    fn is_type(&self, name: &str) -> bool {
        self.type_names().contains(&name)
    }
    /// Checks every entry of `options.evaluators` (its own options, what it refers to, each
    /// criterion reported once) and replaces each by its identity. Called once the file has
    /// deserialised, before the other sections' checks, with the config's folder `dir`.
    fn check(
        &self,
        doc: &YamlDocument,
        overrides: &[String],
        dir: &Path,
        options: &mut ProjectOptions,
    ) -> Result<(), SourceError>;
}

/// Loads `path`, applies `overrides` in order and validates the result; `catalog` knows the
/// evaluator types (an entry of another type is a located error with a "did you mean") and
/// checks each entry's options (`oloproof_engine::project::load_config` passes the engine's
/// evaluator registry).
pub fn load_config(
    path: &Path,
    overrides: &[String],
    catalog: &dyn EvaluatorCatalog,
) -> Result<ProjectConfig, ConfigError> {
    load_config_inner(path, overrides, None, catalog)
}

/// The YAML document at `path`: read, decoded as UTF-8 (a located error otherwise), parsed.
fn read_document(path: &Path) -> Result<YamlDocument, ConfigError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| ConfigError::Read {
        path: shown.clone(),
        source,
    })?;
    let text = crate::source::decode_utf8(&shown, bytes)?;
    Ok(YamlDocument::parse(&shown, &text)?)
}

/// [`store_path_of`] read as a location: a `store:` that is a `postgres://` URL names a
/// Postgres database.
pub fn store_location_of(path: &Path) -> Result<crate::store::StoreLocation, ConfigError> {
    let doc = read_document(path)?;
    if let Some(Value::String(s)) = doc.value.get("store") {
        if crate::store::StoreLocation::is_url(s) {
            return Ok(crate::store::StoreLocation::Postgres(s.clone()));
        }
    }
    store_path_of(path).map(crate::store::StoreLocation::Sqlite)
}

/// The run store of the config at `path` (its `store:` key, else `.oloproof/oloproof.db`,
/// relative to its folder), read without validating the rest of the file: commands that only
/// read stored runs (`runs`, `show`, `report`, `history`…) need no `system:` or `dataset:`.
/// A `store:` that is not a string is a located error.
pub fn store_path_of(path: &Path) -> Result<PathBuf, ConfigError> {
    let doc = read_document(path)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    match doc.value.get("store") {
        None | Some(Value::Null) => Ok(dir.join(".oloproof/oloproof.db")),
        Some(Value::String(s)) => Ok(dir.join(s)),
        Some(_) => {
            let mut err = doc.error_at("store", true, "wrong type: `store` must be a path");
            err.expected =
                Some("a path relative to the config's folder, e.g. .oloproof/oloproof.db".into());
            Err(err.into())
        }
    }
}

/// Loads `path` like [`load_config`], but evaluates the recorded `dataset` (`run --dataset`)
/// instead of the file's `system:`/`dataset:` (its `cases:` is ignored too).
pub fn load_config_for_dataset(
    path: &Path,
    overrides: &[String],
    dataset: &Path,
    catalog: &dyn EvaluatorCatalog,
) -> Result<ProjectConfig, ConfigError> {
    load_config_inner(path, overrides, Some(dataset), catalog)
}

/// Loads `path` like [`load_config`], for a caller that brings its own cases: the file's
/// `system:` is what runs (its `dataset:` and `cases:` are set aside, and `cases:` may be
/// absent). `monitor`'s shadow evaluation runs it over the traffic's questions. A file without
/// `system:` is a located error whose help says so.
pub fn load_config_for_given_cases(
    path: &Path,
    overrides: &[String],
    catalog: &dyn EvaluatorCatalog,
) -> Result<ProjectConfig, ConfigError> {
    load_config_with(path, overrides, Source::GivenCases, catalog)
}

/// What a loaded config evaluates.
#[derive(Clone, Copy)]
enum Source<'a> {
    /// As the file says: `system:` over `cases:`, or `dataset:`.
    AsWritten,
    /// A recorded dataset named by the caller.
    Dataset(&'a Path),
    /// The file's `system:` over cases the caller brings.
    GivenCases,
}

fn load_config_inner(
    path: &Path,
    overrides: &[String],
    dataset: Option<&Path>,
    catalog: &dyn EvaluatorCatalog,
) -> Result<ProjectConfig, ConfigError> {
    let source = match dataset {
        Some(d) => Source::Dataset(d),
        None => Source::AsWritten,
    };
    load_config_with(path, overrides, source, catalog)
}

fn load_config_with(
    path: &Path,
    overrides: &[String],
    source: Source<'_>,
    catalog: &dyn EvaluatorCatalog,
) -> Result<ProjectConfig, ConfigError> {
    let doc = read_document(path)?;
    let mut value = doc.value.clone();
    for assignment in overrides {
        apply_override(&mut value, assignment)?;
    }
    if let Value::Object(obj) = &mut value {
        match source {
            Source::AsWritten => {}
            Source::Dataset(dataset) => {
                obj.remove("system");
                obj.remove("cases");
                obj.insert(
                    "dataset".to_string(),
                    Value::String(dataset.display().to_string()),
                );
            }
            Source::GivenCases => {
                obj.remove("dataset");
                if !obj.contains_key("system") {
                    let mut err = doc.error_at("", false, "missing key `system`");
                    err.key_path = Some("system".to_string());
                    err.help = Some(
                        "the candidate system runs over questions given to it (monitor.shadow): add it under `system:`, e.g. `system: {rag: {object: app:Candidate}}`"
                            .to_string(),
                    );
                    return Err(err.into());
                }
            }
        }
    }
    let cases_required = !matches!(source, Source::GivenCases);
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let dir = if dir.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        dir
    };
    let mut options = validate_with(&doc, &value, overrides, &dir, catalog, cases_required)?;
    resolve_local_model_paths(&mut options.judges, &dir);
    Ok(ProjectConfig {
        source: doc,
        value,
        path: path.to_path_buf(),
        dir,
        options,
        overrides: overrides.to_vec(),
    })
}

/// Validates a parsed document (with overrides applied in `value`; relative paths against
/// `dir`); `catalog` checks the evaluators' own options.
pub fn validate(
    doc: &YamlDocument,
    value: &Value,
    overrides: &[String],
    dir: &Path,
    catalog: &dyn EvaluatorCatalog,
) -> Result<ProjectOptions, SourceError> {
    validate_with(doc, value, overrides, dir, catalog, true)
}

/// [`validate`], with `cases:` required beside `system:` or not (the caller brings them).
fn validate_with(
    doc: &YamlDocument,
    value: &Value,
    overrides: &[String],
    dir: &Path,
    catalog: &dyn EvaluatorCatalog,
    cases_required: bool,
) -> Result<ProjectOptions, SourceError> {
    let evaluator_types = catalog.type_names();
    if let Some(items) = value.get("evaluators").and_then(Value::as_array) {
        for (i, item) in items.iter().enumerate() {
            let at = format!("evaluators[{i}]");
            match item.get("type") {
                Some(Value::String(t)) if catalog.is_type(t) => {}
                Some(Value::String(t)) => {
                    let mut err = doc.error_at(
                        &format!("{at}.type"),
                        true,
                        format!("unknown evaluator type `{t}`"),
                    );
                    err.expected = Some(format!("one of {}", evaluator_types.join(", ")));
                    err.help = did_you_mean(t, evaluator_types.iter().copied())
                        .map(|s| format!("did you mean `{s}`?"));
                    return Err(attribute(err, overrides, &format!("{at}.type")));
                }
                Some(_) => {
                    let err = doc.error_at(
                        &format!("{at}.type"),
                        true,
                        "wrong type: `type` must be a string",
                    );
                    return Err(attribute(err, overrides, &format!("{at}.type")));
                }
                None => {
                    let mut err = doc.error_at(&at, true, "missing key `type`");
                    err.key_path = Some(format!("{at}.type"));
                    err.expected = Some(format!("one of {}", evaluator_types.join(", ")));
                    return Err(err);
                }
            }
        }
    }
    let mut options: ProjectOptions = doc.deserialize(value).map_err(|e| {
        let key = e.key_path.clone().unwrap_or_default();
        attribute(e, overrides, &key)
    })?;
    catalog.check(doc, overrides, dir, &mut options)?;
    match (&options.system, &options.dataset) {
        (Some(_), Some(_)) => {
            let mut err = doc.error_at("dataset", false, "both `system` and `dataset` are set");
            err.key_path = Some("dataset".to_string());
            err.expected = Some(
                "exactly one of `system:` (run a system over `cases:`) or `dataset:` (evaluate recorded answers)".to_string(),
            );
            return Err(attribute(err, overrides, "dataset"));
        }
        (None, None) => {
            let mut err = doc.error_at("", false, "missing key `system`");
            err.key_path = Some("system".to_string());
            err.help = Some(
                "add `system:` (the system to run), or `dataset: FILE` (recorded answers)"
                    .to_string(),
            );
            return Err(err);
        }
        (Some(_), None) if cases_required && options.cases.is_empty() => {
            let mut err = doc.error_at("", false, "missing key `cases`");
            err.key_path = Some("cases".to_string());
            err.help = Some("add `cases:` here".to_string());
            return Err(attribute(err, overrides, "cases"));
        }
        _ => {}
    }
    let rag = options.rag();
    let connectors = [
        rag.object.is_some(),
        rag.command.is_some(),
        rag.http.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if options.system.is_some() && connectors != 1 {
        let mut err = doc.error_at(
            "system.rag",
            false,
            if connectors == 0 {
                "no connector for the system"
            } else {
                "more than one connector for the system"
            },
        );
        err.expected = Some(
            "exactly one of `object: module:Class`, `command: [program, args…]` or `http: http://host:port/path`".to_string(),
        );
        return Err(err);
    }
    if let Some(object) = &rag.object {
        if object
            .split_once(':')
            .is_none_or(|(m, c)| m.is_empty() || c.is_empty())
        {
            let mut err = doc.error_at(
                "system.rag.object",
                true,
                format!("`{object}` is not `module:Class`"),
            );
            err.expected = Some("module:Class, e.g. app:SupportRag".to_string());
            return Err(attribute(err, overrides, "system.rag.object"));
        }
    }
    if let Some(url) = &rag.http {
        if !url.starts_with("http://") {
            let mut err = doc.error_at(
                "system.rag.http",
                true,
                format!("`{url}` is not an http:// URL"),
            );
            err.expected = Some("http://host:port/path (plain HTTP in this build)".to_string());
            return Err(attribute(err, overrides, "system.rag.http"));
        }
    }
    if rag.command.as_ref().is_some_and(Vec::is_empty) {
        let err = doc.error_at("system.rag.command", true, "the command is empty");
        return Err(err);
    }
    for (key, zero) in [
        ("top_k", rag.top_k == Some(0)),
        ("depth", rag.depth == Some(0)),
        ("workers", rag.workers == Some(0)),
    ] {
        if zero {
            let mut err = doc.error_at(
                &format!("system.rag.{key}"),
                true,
                format!("`{key}` must be at least 1"),
            );
            err.expected = Some("a positive integer".to_string());
            return Err(attribute(err, overrides, &format!("system.rag.{key}")));
        }
    }
    if !(0.0..=1.0).contains(&options.max_error_rate) {
        let mut err = doc.error_at(
            "max_error_rate",
            true,
            "`max_error_rate` must lie in [0, 1]",
        );
        err.expected = Some("a share such as 0.05".to_string());
        return Err(attribute(err, overrides, "max_error_rate"));
    }
    for (i, slice) in options.slices.iter().enumerate() {
        let ok = BUILTIN_SLICES.contains(&slice.as_str())
            || slice
                .strip_prefix("metadata.")
                .is_some_and(|rest| !rest.is_empty());
        if !ok {
            let mut err = doc.error_at(
                &format!("slices[{i}]"),
                true,
                format!("unknown slice `{slice}`"),
            );
            err.expected = Some(
                "`metadata.<key>`, `relevant_position`, `context_truncated` or `diagnostic_matrix`"
                    .to_string(),
            );
            let mut known: Vec<String> = BUILTIN_SLICES.iter().map(|s| s.to_string()).collect();
            known.push(format!("metadata.{slice}"));
            err.help = did_you_mean(slice, known.iter().map(String::as_str))
                .map(|s| format!("did you mean `{s}`?"))
                .or_else(|| Some(format!("did you mean `metadata.{slice}`?")));
            return Err(attribute(err, overrides, &format!("slices[{i}]")));
        }
    }
    if options.sample.is_some_and(|s| s.size == 0) {
        let mut err = doc.error_at("sample.size", true, "`sample.size` must be at least 1");
        err.expected = Some("a number of cases, e.g. 30 (remove `sample:` to score all)".into());
        return Err(attribute(err, overrides, "sample.size"));
    }
    if let Some(monitor) = &options.monitor {
        crate::monitor::validate_monitor(doc, overrides, monitor)?;
    }
    let judge_names: Vec<&str> = options.judges.keys().map(String::as_str).collect();
    for (name, c) in &options.calibration {
        let path = format!("calibration.{name}");
        if !options.judges.contains_key(name) {
            let mut err = doc.error_at(
                &path,
                false,
                format!("no judge named `{name}` to calibrate"),
            );
            err.help = did_you_mean(name, judge_names.iter().copied())
                .map(|s| format!("did you mean `{s}`?"));
            return Err(attribute(err, overrides, &path));
        }
        if !(c.min_kappa.is_finite() && (-1.0..=1.0).contains(&c.min_kappa)) {
            let mut err = doc.error_at(
                &format!("{path}.min_kappa"),
                true,
                "`min_kappa` must lie in [-1, 1]",
            );
            err.expected = Some("a kappa such as 0.7".to_string());
            return Err(attribute(err, overrides, &format!("{path}.min_kappa")));
        }
        if let Some(w) = &c.weights {
            if !["linear", "quadratic", "none"].contains(&w.as_str()) {
                let mut err = doc.error_at(
                    &format!("{path}.weights"),
                    true,
                    format!("unknown weights `{w}`"),
                );
                err.expected = Some("linear, quadratic or none".to_string());
                return Err(attribute(err, overrides, &format!("{path}.weights")));
            }
        }
    }
    Ok(options)
}

/// When an override set `key` (or a parent of it), points the error at the override rather
/// than at the file.
pub fn attribute(mut err: SourceError, overrides: &[String], key: &str) -> SourceError {
    if let Some(arg) = overrides.iter().rev().find(|o| {
        o.split_once('=')
            .is_some_and(|(k, _)| !k.is_empty() && key.starts_with(k.trim()))
    }) {
        err.origin = Origin::Override(arg.clone());
    }
    err
}

/// Failure to load a configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The path.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is invalid.
    #[error("{0}")]
    Invalid(#[from] SourceError),
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = "system:
  name: support-rag
  version: slice-b-example
  rag:
    object: app:SupportRag
    depth: 6
    top_k: 2
    token_budget: 40
    index_version: kb-2026-09-16
    workers: 4
cases: cases.jsonl
evaluators:
  - {type: contains, criterion: answer_correct, field: answer, expected_field: answer}
  - {type: hit_rate, k: 2}
  - {type: recall, k: 2}
  - {type: ndcg, k: 6}
  - {type: citation_validity}
slices: [metadata.topic, relevant_position, context_truncated]
min_slice_support: 4
";

    fn load(text: &str, overrides: &[&str]) -> Result<ProjectOptions, SourceError> {
        let doc = YamlDocument::parse("oloproof.yaml", text)?;
        let mut value = doc.value.clone();
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        for o in &overrides {
            apply_override(&mut value, o)?;
        }
        validate(&doc, &value, &overrides, Path::new("."), &Types)
    }

    const TYPES: &[&str] = &[
        "contains",
        "hit_rate",
        "recall",
        "ndcg",
        "citation_validity",
    ];

    /// The types of the example, their options left as written.
    struct Types;

    impl EvaluatorCatalog for Types {
        fn type_names(&self) -> Vec<&'static str> {
            TYPES.to_vec()
        }

        fn check(
            &self,
            _: &YamlDocument,
            _: &[String],
            _: &Path,
            _: &mut ProjectOptions,
        ) -> Result<(), SourceError> {
            Ok(())
        }
    }

    #[test]
    fn the_seed_example_loads() {
        let o = load(EXAMPLE, &[]).unwrap();
        assert_eq!(o.rag().top_k, Some(2));
        let types: Vec<&str> = o.evaluators.iter().map(|e| e.type_name.as_str()).collect();
        assert_eq!(types, TYPES);
        assert_eq!(o.evaluators[0].criterion_override(), Some("answer_correct"));
        assert_eq!(
            o.evaluators[0].to_value().to_string(),
            r#"{"type":"contains","criterion":"answer_correct","field":"answer","expected_field":"answer"}"#
        );
    }

    #[test]
    fn overrides_apply() {
        let o = load(
            EXAMPLE,
            &["system.rag.top_k=4", "system.rag.index_version=kb-2"],
        )
        .unwrap();
        assert_eq!(o.rag().top_k, Some(4));
        assert_eq!(o.rag().index_version.as_deref(), Some("kb-2"));
    }

    #[test]
    fn unknown_key_is_located_with_a_suggestion() {
        let text = EXAMPLE.replace("    top_k: 2", "    top_kk: 2");
        let err = load(&text, &[]).unwrap_err();
        assert_eq!(err.location(), "oloproof.yaml:7:5");
        assert_eq!(err.key_path.as_deref(), Some("system.rag.top_kk"));
        assert_eq!(err.help.as_deref(), Some("did you mean `top_k`?"));
    }

    #[test]
    fn wrong_type_names_what_was_expected() {
        let text = EXAMPLE.replace("depth: 6", "depth: six");
        let err = load(&text, &[]).unwrap_err();
        assert_eq!(err.location(), "oloproof.yaml:6:12");
        assert_eq!(err.key_path.as_deref(), Some("system.rag.depth"));
        assert_eq!(err.expected.as_deref(), Some("a non-negative integer"));
    }

    #[test]
    fn override_errors_point_at_the_override() {
        let err = load(EXAMPLE, &["system.rag.top_k=many"]).unwrap_err();
        assert_eq!(err.location(), "--set system.rag.top_k=many");
    }

    #[test]
    fn unknown_evaluator_type() {
        let text = EXAMPLE.replace("type: hit_rate", "type: hitrate");
        let err = load(&text, &[]).unwrap_err();
        assert_eq!(err.help.as_deref(), Some("did you mean `hit_rate`?"));
        assert_eq!(err.location(), "oloproof.yaml:14:12");
    }

    #[test]
    fn dataset_replaces_system_and_cases() {
        let text = "dataset: recorded.jsonl\nevaluators:\n  - type: contains\n";
        let o = load(text, &[]).unwrap();
        assert_eq!(o.dataset.as_deref(), Some("recorded.jsonl"));
        assert!(o.system.is_none());
        assert_eq!(o.rag().top_k, None);
        let both = format!("{EXAMPLE}dataset: recorded.jsonl\n");
        let err = load(&both, &[]).unwrap_err();
        assert_eq!(err.message, "both `system` and `dataset` are set");
        assert!(err
            .location()
            .ends_with(&format!(":{}:1", both.lines().count())));
        let neither = load("evaluators: []\n", &[]).unwrap_err();
        assert_eq!(neither.message, "missing key `system`");
    }

    #[test]
    fn missing_field() {
        let text = EXAMPLE.replace("cases: cases.jsonl\n", "");
        let err = load(&text, &[]).unwrap_err();
        assert_eq!(err.message, "missing key `cases`");
    }

    #[test]
    fn local_model_paths_follow_the_config_folder_but_hub_paths_stay() {
        let local = |p: &str| serde_json::json!({"provider": "local", "path": p});
        let mut judges = std::collections::BTreeMap::from([
            ("a".to_string(), local("models/nli")),
            ("b".to_string(), local("hf://org/model@v1")),
            ("c".to_string(), local("${MODELS}/nli")),
        ]);
        resolve_local_model_paths(&mut judges, Path::new("conf"));
        let path = |k: &str| judges[k]["path"].as_str().unwrap().to_string();
        assert_eq!(
            path("a"),
            Path::new("conf").join("models/nli").display().to_string()
        );
        assert_eq!(path("b"), "hf://org/model@v1");
        assert_eq!(path("c"), "${MODELS}/nli");
    }
}
