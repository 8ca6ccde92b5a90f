//! What `oloproof run --dry-run` can know without calling anything: which judgments the
//! judgment cache already holds.
//!
//! A judgment key needs the executed trace. A recorded dataset carries its traces; a live
//! system's come from the execution cache, keyed with the system settings the newest stored run
//! of the same config resolved from its system's `hello` (what a new run would resolve too,
//! unless the system changed). A case whose trace is not cached, or ended in an error, counts
//! as not judged. Local-model judges are never loaded for this (their identity is their
//! weights' hash): criteria that call one are reported as not cached.

use std::collections::{BTreeMap, HashMap, HashSet};

use oloproof_core::case::Case;
use oloproof_core::config::ProjectConfig;
use oloproof_core::dataset::Dataset;
use oloproof_core::store::Store;
use oloproof_core::trace::Trace;
use serde_json::Value;

use crate::evaluators::{build_all, Evaluator};
use crate::execute::CacheReader;
use crate::judged::JudgeRegistry;
use crate::keys::{execution_key, layer, trace_content, JudgmentKeys};
use crate::settings::{RunSettings, SystemSettings};
use crate::EngineError;

/// Per evaluator of `config` (in order), the ids of the cases whose judgment a run would take
/// from the judgment cache. `dataset` is the recorded dataset the cases come from (`None` for a
/// live system). Without a store, or without a stored run to resolve a live system's settings
/// from, every set is empty.
pub fn cached_judgments(
    config: &ProjectConfig,
    cases: &[Case],
    dataset: Option<&Dataset>,
) -> Result<Vec<HashSet<String>>, EngineError> {
    let evaluators: Vec<Box<dyn Evaluator>> = build_all(&config.options.evaluators)?;
    let mut out = vec![HashSet::new(); evaluators.len()];
    let location = config.store_location();
    if !oloproof_store::exists(&location) {
        return Ok(out);
    }
    let store = oloproof_store::open_reader(&location)?;
    let cache = CacheReader::new(Some(store.as_ref()));
    let traces: Option<HashMap<&str, &Trace>> = dataset.map(|d| {
        d.records
            .iter()
            .map(|r| (r.case.id.as_str(), &r.trace))
            .collect()
    });
    let system = match dataset {
        Some(d) => crate::recorded::dataset_system(config, d),
        None => match stored_system(store.as_ref(), config)? {
            Some(s) => s,
            None => return Ok(out),
        },
    };
    // HTTP judges only: a local judge's identity needs its model loaded.
    let http_judges: BTreeMap<String, Value> = config
        .options
        .judges
        .iter()
        .filter(|(_, v)| v.get("provider").and_then(Value::as_str) != Some("local"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let registry =
        JudgeRegistry::from_options(&http_judges).map_err(|e| EngineError::Usage(e.to_string()))?;
    let keys = JudgmentKeys::new(evaluators.iter().map(|e| e.as_ref()), &registry);
    for case in cases {
        let exec = execution_key(&system, case);
        let trace = match &traces {
            Some(traces) => match traces.get(case.id.as_str()) {
                Some(t) => (*t).clone(),
                None => continue,
            },
            // An entry that does not parse is not a trace a run would re-use either.
            None => match cache
                .get(layer::EXECUTION, &exec)
                .and_then(|s| serde_json::from_str::<Trace>(&s).ok())
            {
                Some(t) => t,
                None => continue,
            },
        };
        if trace.error.is_some() {
            continue;
        }
        let content = trace_content(&trace);
        let case_keys = keys.for_case(case, &exec, &content);
        for (i, (e, key)) in evaluators.iter().zip(case_keys).enumerate() {
            let names = e.judge_names();
            if names.is_empty() || names.iter().any(|n| registry.client(n).is_none()) {
                continue;
            }
            if cache.get(layer::JUDGMENT, &key).is_some() {
                out[i].insert(case.id.clone());
            }
        }
    }
    Ok(out)
}

/// The system settings of the newest stored run of the same config file, re-resolved from its
/// recorded `hello` with the config as it is now.
fn stored_system(
    store: &dyn Store,
    config: &ProjectConfig,
) -> Result<Option<SystemSettings>, EngineError> {
    let path = config.path.display().to_string();
    for record in store.list_runs()? {
        if record.config_path != path {
            continue;
        }
        // Child runs of diagnoses and recorded datasets neither read nor write the
        // execution cache. (A run whose settings do not parse is skipped: the estimate then
        // counts its cases as not cached, which only over-estimates the calls.)
        let Ok(settings) = serde_json::from_str::<RunSettings>(&record.settings_json) else {
            continue;
        };
        if settings.intervention.is_some() || settings.dataset.is_some() {
            continue;
        }
        let Ok(info) = serde_json::from_str(&record.system_json) else {
            continue;
        };
        // A stored hello the config as it is now cannot resolve with (a changed `rag:`) gives
        // no settings to look the cache up with: every case then counts as not cached, which
        // only over-estimates the calls.
        return Ok(SystemSettings::resolve(&config.options, &info).ok());
    }
    Ok(None)
}

/// What `run --dry-run` says of one criterion that calls a judge.
#[derive(Debug, Clone, PartialEq)]
pub struct CriterionEstimate {
    /// The criterion.
    pub criterion: String,
    /// Its judges, joined by `+`.
    pub judge: String,
    /// The first judge's `model` (`?` when it names none).
    pub model: String,
    /// When every judge it calls is a local model: the first one's `kind` (`embedding` by
    /// default). Local models run in-process: no calls, tokens or cost are counted.
    pub local_kind: Option<String>,
    /// Upper bound of LLM judge calls over the cases not already judged.
    pub calls: u64,
    /// Embedding requests over those cases.
    pub embeddings: u64,
    /// Estimated input tokens of those calls.
    pub input_tokens: u64,
    /// Input cost from the first judge's `prices.input_per_mtok`, when it has one.
    pub cost_usd: Option<f64>,
    /// Cases whose judgment the judgment cache already holds (not counted).
    pub cached_cases: usize,
}

/// Per criterion that calls a judge (in evaluator order), what a run of `config` over `cases`
/// would send at most (each evaluator's own call estimate); criteria that call no judge are
/// left out. `dataset` is the recorded
/// dataset the cases come from (`None` for a live system).
pub fn estimate(
    config: &ProjectConfig,
    cases: &[Case],
    dataset: Option<&Dataset>,
) -> Result<Vec<CriterionEstimate>, EngineError> {
    let evaluators = build_all(&config.options.evaluators)?;
    let cached = cached_judgments(config, cases, dataset)?;
    let judge_field = |name: Option<&String>, pointer: &str| -> Option<Value> {
        name.and_then(|n| config.options.judges.get(n))
            .and_then(|s| s.pointer(pointer))
            .cloned()
    };
    let mut out = Vec::new();
    for (e, cached) in evaluators.iter().zip(&cached) {
        let names = e.judge_names();
        if names.is_empty() {
            continue;
        }
        let first = names.first();
        let local = !names.is_empty()
            && names.iter().all(|n| {
                config
                    .options
                    .judges
                    .get(n)
                    .and_then(|s| s.get("provider"))
                    .and_then(Value::as_str)
                    == Some("local")
            });
        let mut estimate = CriterionEstimate {
            criterion: e.criterion().to_string(),
            judge: names.join("+"),
            model: judge_field(first, "/model")
                .and_then(|m| m.as_str().map(str::to_string))
                .unwrap_or_else(|| "?".to_string()),
            local_kind: local.then(|| {
                judge_field(first, "/kind")
                    .and_then(|k| k.as_str().map(str::to_string))
                    .unwrap_or_else(|| "embedding".to_string())
            }),
            calls: 0,
            embeddings: 0,
            input_tokens: 0,
            cost_usd: None,
            cached_cases: cached.len(),
        };
        if !local {
            for case in cases.iter().filter(|c| !cached.contains(&c.id)) {
                // Every evaluator here calls a judge (checked above), so it has an estimate.
                let c = e.estimate(case).unwrap_or_default();
                estimate.calls += c.calls;
                estimate.embeddings += c.embeddings;
                estimate.input_tokens += c.input_tokens;
            }
            estimate.cost_usd = judge_field(first, "/prices/input_per_mtok")
                .and_then(|p| p.as_f64())
                .map(|p| estimate.input_tokens as f64 * p / 1e6);
        }
        out.push(estimate);
    }
    Ok(out)
}
