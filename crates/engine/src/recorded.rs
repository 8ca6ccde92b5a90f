//! `oloproof run --dataset`: evaluating recorded cases, with no system to run.
//!
//! Each record of a [`Dataset`] already holds what the system did; the run is an ordinary
//! stored run whose executions are the recorded traces. The pool, the judges, the judgment cache
//! and the group commit are those of [`crate::run`]: the run's plan is given no connector
//! and the traces by case id, which [`crate::execute::execute_case`] returns as they are (the
//! execution cache is neither read nor written). The settings record the dataset
//! (`{path, format, sha256}`) instead of a system; the system identity shown in summaries is the
//! file's name with `sha256:` and the first 12 hex digits of its hash.

use std::path::PathBuf;

use oloproof_core::config::ProjectConfig;
use oloproof_core::dataset::{Dataset, DatasetFormat, Record};
use serde_json::json;

use crate::run::{Recorded, RunFlags, RunObserver, RunOrigin, RunOutcome, RunPlan};
use crate::settings::{worker_count, DEFAULT_TIMEOUT_S};
use crate::EngineError;
use oloproof_core::settings::{DatasetSettings, RunSettings, SystemSettings};

/// The system identity of a recorded dataset: the file's name, `sha256:` and the first 12 hex
/// digits of its hash as the version, and the longest recorded retrieval as depth and top-k.
pub(crate) fn dataset_system(config: &ProjectConfig, records: &Dataset) -> SystemSettings {
    let path = PathBuf::from(config.options.dataset.clone().unwrap_or_default());
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "dataset".to_string());
    let depth = records
        .records
        .iter()
        .filter_map(|r| r.trace.retrieval.as_ref().map(|x| x.candidates.len()))
        .max()
        .unwrap_or(0)
        .max(1);
    SystemSettings {
        name,
        version: format!("sha256:{}", &records.sha256[..12.min(records.sha256.len())]),
        depth,
        top_k: depth,
        token_budget: None,
        index_version: None,
        params: Default::default(),
        lanes: Vec::new(),
        stages: Vec::new(),
        fusion: None,
    }
}

/// Starts a new run of `config` over the recorded `records` (`config.options.dataset` names
/// the file they came from).
pub fn start_recorded_run(
    config: &ProjectConfig,
    records: Dataset,
    flags: RunFlags,
    observer: &mut dyn RunObserver,
) -> Result<RunOutcome, EngineError> {
    let system = dataset_system(config, &records);
    let all: Vec<&Record> = records.records.iter().collect();
    start_recorded_run_as(
        config,
        &all,
        (records.format, &records.sha256),
        system,
        flags,
        observer,
    )
}

/// [`start_recorded_run`] over records borrowed from a dataset (`format` and `sha256`: the
/// dataset's), under the given system identity instead of the file's ([`dataset_system`]).
/// The run reads each case and trace where it is: a monitor's tier judges its selection of the
/// traffic without a copy of it. `oloproof monitor` runs a window's selection under one
/// identity for all its traffic (the traffic file's name, version `traffic`), so the execution
/// key — and with it every judgment key — does not change when the selection or the file
/// grows: re-running a window judges nothing twice.
pub fn start_recorded_run_as(
    config: &ProjectConfig,
    records: &[&Record],
    (format, sha256): (DatasetFormat, &str),
    system: SystemSettings,
    flags: RunFlags,
    observer: &mut dyn RunObserver,
) -> Result<RunOutcome, EngineError> {
    let location = config.store_location();
    let mut store = oloproof_store::open(&location)?;
    let path = PathBuf::from(config.options.dataset.clone().unwrap_or_default());
    let settings = RunSettings {
        config_path: config.path.clone(),
        config_dir: config.dir.clone(),
        options: config.options.clone(),
        system,
        workers: worker_count(config.options.rag()),
        timeout_s: DEFAULT_TIMEOUT_S,
        use_cache: !flags.no_cache,
        intervention: None,
        dataset: Some(DatasetSettings {
            path,
            format,
            sha256: sha256.to_string(),
        }),
    };
    let system_json = serde_json::to_string(&json!({
        "name": settings.system.name,
        "version": settings.system.version,
        "dataset": settings.dataset,
    }))
    .map_err(|source| EngineError::Corrupt {
        what: "the dataset identity".into(),
        source,
    })?;
    let traces = records
        .iter()
        .map(|r| (r.case.id.as_str(), &r.trace))
        .collect();
    let plan = RunPlan {
        max_error_rate: flags
            .max_error_rate
            .unwrap_or(config.options.max_error_rate),
        max_cost: flags.max_cost,
        settings,
        connector: None,
        first: None,
        recorded: Recorded {
            retrievals: Default::default(),
            traces,
            ..Default::default()
        },
    };
    plan.start(
        store.as_mut(),
        &location,
        records.iter().map(|r| &r.case),
        RunOrigin {
            config_path: &config.path.display().to_string(),
            system_json: &system_json,
            parent: None,
        },
        observer,
    )
}
