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
use oloproof_core::trace::Trace;
use oloproof_store::SqliteStore;
use serde_json::Value;

use crate::evaluate::{build, Evaluator};
use crate::execute::{execution_key, layer, CacheReader};
use crate::judged::JudgeRegistry;
use crate::run::{judgment_key, trace_content};
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
    let evaluators: Vec<Box<dyn Evaluator>> = config.options.evaluators.iter().map(build).collect();
    let mut out = vec![HashSet::new(); evaluators.len()];
    let store_path = config.store_path();
    if !store_path.exists() {
        return Ok(out);
    }
    let store = SqliteStore::open_reader(&store_path)?;
    let cache = CacheReader::new(Some(&store));
    let traces: Option<HashMap<&str, &Trace>> = dataset.map(|d| {
        d.records
            .iter()
            .map(|r| (r.case.id.as_str(), &r.trace))
            .collect()
    });
    let system = match dataset {
        Some(d) => crate::recorded::dataset_system(config, d),
        None => match stored_system(&store, config)? {
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
    let registry = JudgeRegistry::from_options(&http_judges).map_err(EngineError::Usage)?;
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
        for (i, e) in evaluators.iter().enumerate() {
            let names = e.judge_names();
            if names.is_empty() || names.iter().any(|n| registry.client(n).is_none()) {
                continue;
            }
            let key = judgment_key(e.as_ref(), &registry, &exec, case, &content);
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
    store: &SqliteStore,
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
        return Ok(SystemSettings::resolve(&config.options, &info).ok());
    }
    Ok(None)
}
