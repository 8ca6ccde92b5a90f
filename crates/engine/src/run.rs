//! `oloproof run` and `oloproof run --resume`: orchestration over a pool of workers.
//!
//! Each worker thread owns one system connection (started lazily, so a fully cached case never
//! starts a process) and one read-only store connection for cache lookups; the calling thread
//! is the only writer and commits each finished case (trace, verdicts, cache entries) in one
//! transaction (cases finishing within 20 ms share one: group commit). A killed run therefore
//! keeps every case finished before its last commit, and `resume_run` claims the
//! rest under a new attempt.
//!
//! Cases are claimed from the store in batches under a lease held by this invocation's
//! [`WorkerId`] and extended by heartbeats from the committing thread; the store writes a
//! result only while the lease is still this invocation's under the same attempt. The same
//! loop serves `oloproof worker` ([`work_run`]): several processes, on one machine or many,
//! claim from one run on a shared (Postgres) store until no case is left, and the last one to
//! finish records the summary.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use oloproof_connect::{install_python_shim, ConnectorSpec};
use oloproof_core::case::Case;
use oloproof_core::config::{EvaluatorEntry, ProjectConfig};
use oloproof_core::identity::content_hash;
use oloproof_core::run::StoredEvaluatorError;
use oloproof_core::run::{Evaluators, LoadedCase, LoadedRun};
use oloproof_core::settings::{RunSettings, SystemSettings};
use oloproof_core::store::{
    CaseResult, Claim, NewRun, RunId, RunStatus, Store, StoreLocation, WorkerId,
};
use oloproof_core::summary::{
    CacheCounts, HitMiss, IncompleteCriterion, JudgeUsage, RunSummary, SummaryKind,
};
use oloproof_core::system::SystemConnection;
use oloproof_core::trace::{ErrorKind, StageError, Trace};
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use serde_json::json;

use crate::evaluators::{build_all, Evaluator};
use crate::execute::{execute_case, CacheReader, ConnectionSource, Executed};
use crate::keys::{execution_key, layer, trace_content, CacheWrite, JudgmentKeys};
use crate::settings::{connector_spec, timeout, worker_count};
use crate::summary::{mark_calls_cached, slice_value, summarize, CaseOutcome, SummaryInputs};
use crate::EngineError;

/// Longest a finished case waits for others to share its commit.
pub const GROUP_COMMIT_WINDOW: Duration = Duration::from_millis(20);
/// Longest the cache entries of committed cases wait to be written.
const CACHE_FLUSH_EVERY: Duration = Duration::from_secs(1);
/// Most cache entries waiting to be written.
const CACHE_FLUSH_MAX: usize = 20_000;
/// Most bytes of cache entries (keys and values) waiting to be written.
const CACHE_FLUSH_MAX_BYTES: usize = 32 << 20;
/// Longest a worker's cache lookups share one read snapshot.
const SNAPSHOT_SPAN: Duration = Duration::from_millis(500);
/// How often a process whose queue is empty while other processes hold the run's last cases
/// reads whether they are done (a read of the run's row, not a claim).
const OTHERS_CHECK_EVERY: Duration = Duration::from_millis(100);
/// Most cases in one commit.
pub const GROUP_COMMIT_MAX: usize = 512;
/// Cases claimed per transaction by `oloproof worker` unless `--batch` says otherwise.
pub const DEFAULT_CLAIM_BATCH: usize = 100;
/// Claims a worker makes of one case before recording it as an error, unless
/// `--max-attempts` says otherwise.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// Receives progress as cases finish (the CLI's progress bar; tests).
pub trait RunObserver {
    /// The run is about to execute `pending` of `total` cases.
    fn started(&mut self, run_id: &str, total: u64, pending: u64) {
        let _ = (run_id, total, pending);
    }
    /// One case finished and was committed; `errors` cases so far ended in a system error,
    /// and `missing` verdicts so far are missing (a failed judge call, an error).
    fn case_done(&mut self, trace: &Trace, errors: u64, missing: u64) {
        let _ = (trace, errors, missing);
    }
}

/// An observer that ignores everything.
pub struct Silent;
impl RunObserver for Silent {}

/// What a finished invocation produced.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The run.
    pub run_id: String,
    /// Its summary.
    pub summary: RunSummary,
    /// Share of cases that ended in an error.
    pub error_rate: f64,
    /// The allowed share.
    pub max_error_rate: f64,
    /// Whether the run is finished and its summary recorded: always after `run`; after
    /// `worker`, only for the worker that finished the last case (the others leave it to it).
    pub finished: bool,
    /// Cases this invocation executed and recorded.
    pub executed: u64,
}

impl RunOutcome {
    /// Whether system errors exceed the allowed rate, or a criterion is missing on more than
    /// that share of its cases ([`RunSummary::incomplete_criteria`]): exit code 4.
    pub fn incomplete(&self) -> bool {
        self.error_rate > self.max_error_rate || !self.summary.incomplete_criteria.is_empty()
    }
}

/// Flags of `oloproof run` that are not in the config.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunFlags {
    /// Bypass cache reads (fresh results are still written).
    pub no_cache: bool,
    /// Overrides `max_error_rate`.
    pub max_error_rate: Option<f64>,
    /// Stop taking new cases once the judges have spent this many dollars (the run stays
    /// resumable).
    pub max_cost: Option<f64>,
    /// Record the run and return without executing it: `oloproof worker` processes execute
    /// it (on a shared store).
    pub detach: bool,
}

/// Where the Python shim is installed: beside a SQLite store; for a Postgres store, in this
/// machine's temporary folder (each machine running workers installs its own).
fn store_dir(location: &StoreLocation) -> PathBuf {
    match location {
        StoreLocation::Sqlite(path) => path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map(std::path::Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from(".")),
        StoreLocation::Postgres(_) => std::env::temp_dir().join("oloproof"),
    }
}

pub(crate) fn shim(location: &StoreLocation) -> Result<PathBuf, EngineError> {
    // Absolute: workers start in the project folder, so a path relative to the caller's
    // directory would not find the shim from there.
    let root = store_dir(location);
    let root = std::path::absolute(&root).unwrap_or(root);
    install_python_shim(&root).map_err(|source| EngineError::Shim {
        path: root.display().to_string(),
        source,
    })
}

/// Starts a new run of `config` over `cases`.
pub fn start_run(
    config: &ProjectConfig,
    cases: &[Case],
    flags: RunFlags,
    observer: &mut dyn RunObserver,
) -> Result<RunOutcome, EngineError> {
    let location = config.store_location();
    let mut store = oloproof_store::open(&location)?;
    let options = connector_spec(&config.options, &config.dir, &shim(&location)?);
    let first = options.connect().map_err(EngineError::System)?;
    let system = SystemSettings::resolve(&config.options, first.info()).map_err(|e| {
        EngineError::System(StageError {
            stage: "hello".into(),
            kind: ErrorKind::Protocol,
            error_type: None,
            message: e.to_string(),
            traceback: None,
            stderr_tail: Vec::new(),
        })
    })?;
    crate::project::check_pipeline(config, &system)?;
    crate::evaluators::classifier::check_fetched_labels(config)
        .map_err(|e| EngineError::Config(oloproof_core::config::ConfigError::Invalid(e)))?;
    if let Some(path) = config.options.corpus.as_deref() {
        // Located errors before anything runs (each execution loads it again: a resumed run or
        // a worker on another machine reads the file where it is).
        crate::filter_check::load_corpus_file(path, &config.dir, Some(config))?;
    }
    let settings = RunSettings {
        config_path: config.path.clone(),
        config_dir: config.dir.clone(),
        options: config.options.clone(),
        system,
        workers: worker_count(config.options.rag()),
        timeout_s: timeout(config.options.rag()),
        use_cache: !flags.no_cache,
        intervention: None,
        dataset: None,
    };
    let system_json =
        serde_json::to_string(first.info()).map_err(|source| EngineError::Corrupt {
            what: "hello".into(),
            source,
        })?;
    let plan = RunPlan {
        max_error_rate: flags
            .max_error_rate
            .unwrap_or(config.options.max_error_rate),
        max_cost: flags.max_cost,
        settings,
        connector: Some(options),
        first: Some(first),
        recorded: Recorded::default(),
    };
    let origin = RunOrigin {
        config_path: &config.path.display().to_string(),
        system_json: &system_json,
        parent: None,
    };
    if flags.detach {
        let run_id = plan.record(store.as_mut(), cases, origin)?;
        return Ok(RunOutcome {
            run_id: run_id.to_string(),
            summary: summarize_stored(store.as_ref(), &run_id, CacheCounts::default())?,
            error_rate: 0.0,
            max_error_rate: plan.max_error_rate,
            finished: false,
            executed: 0,
        });
    }
    plan.start(store.as_mut(), &location, cases, origin, observer)
}

/// Finishes an interrupted run: claims its pending cases under a new attempt and runs them with
/// the settings the run started with.
pub fn resume_run(
    location: &StoreLocation,
    run_id: &str,
    flags: RunFlags,
    observer: &mut dyn RunObserver,
) -> Result<RunOutcome, EngineError> {
    let mut store = oloproof_store::open(location)?;
    let run_id = RunId::from(run_id);
    let record = store.run(&run_id)?;
    let mut settings: RunSettings =
        serde_json::from_str(&record.settings_json).map_err(|source| EngineError::Corrupt {
            what: format!("run {run_id}'s settings"),
            source,
        })?;
    if flags.no_cache {
        settings.use_cache = false;
    }
    if settings.intervention.is_some() {
        return Err(EngineError::NotResumable {
            run_id: run_id.to_string(),
            reason: "it is a child run of a diagnosis; run the diagnosis again".into(),
        });
    }
    if settings.dataset.is_some() {
        return Err(EngineError::NotResumable {
            run_id: run_id.to_string(),
            reason: "it evaluated a recorded dataset; run `oloproof run --dataset` again".into(),
        });
    }
    let options = connector_spec(&settings.options, &settings.config_dir, &shim(location)?);
    store.reopen_run(&run_id)?;
    let plan = RunPlan {
        max_error_rate: flags
            .max_error_rate
            .unwrap_or(settings.options.max_error_rate),
        max_cost: flags.max_cost,
        settings,
        connector: Some(options),
        first: None,
        recorded: Recorded::default(),
    };
    let schedule = Schedule::single(&plan.settings);
    plan.execute(store.as_mut(), location, &run_id, &schedule, observer)
}

/// How `oloproof worker` takes part in a run.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// Threads (system connections) in this process; `None`: the run's own `workers`.
    pub threads: Option<usize>,
    /// Cases claimed per transaction.
    pub batch: usize,
    /// How long a claim holds a case without a heartbeat (heartbeats every third of it);
    /// `None`: three of the run's timeouts and a minute.
    pub lease: Option<Duration>,
    /// A case claimed more often than this (its workers died each time) is recorded as an
    /// error.
    pub max_attempts: u32,
    /// How many worker processes share the run's judge budgets (each judge's
    /// `max_concurrency` is divided by it, rounded up).
    pub share: usize,
    /// Do not read the caches (fresh results are still written).
    pub no_cache: bool,
    /// This machine's copy of the project, where the system is started from, instead of the
    /// folder the run was created in (a container image, another machine's checkout).
    pub project_dir: Option<PathBuf>,
}

/// Joins run `run_id` as one worker: claims batches of its pending cases, executes and records
/// them until none is left, then, if every case of the run is done, records the summary (the
/// last worker to finish does; the others return with [`RunOutcome::finished`] false).
///
/// Workers on many machines share a run through a Postgres store; each must reach the system
/// the run's settings name (the same project at the same path, e.g. one container image).
pub fn work_run(
    location: &StoreLocation,
    run_id: &str,
    options: &WorkerOptions,
    observer: &mut dyn RunObserver,
) -> Result<RunOutcome, EngineError> {
    let mut store = oloproof_store::open(location)?;
    let run_id = RunId::from(run_id);
    let record = store.run(&run_id)?;
    let mut settings: RunSettings =
        serde_json::from_str(&record.settings_json).map_err(|source| EngineError::Corrupt {
            what: format!("run {run_id}'s settings"),
            source,
        })?;
    if options.no_cache {
        settings.use_cache = false;
    }
    if let Some(threads) = options.threads {
        settings.workers = threads.max(1);
    }
    if let Some(dir) = &options.project_dir {
        settings.config_dir = dir.clone();
    }
    if settings.intervention.is_some() || settings.dataset.is_some() {
        return Err(EngineError::NotResumable {
            run_id: run_id.to_string(),
            reason: "workers execute runs of a system; a child run of a diagnosis or a run of a \
                     recorded dataset is executed by the command that created it"
                .into(),
        });
    }
    if record.status != RunStatus::Running && record.done_count < record.case_count {
        store.reopen_run(&run_id)?;
    }
    let connector = connector_spec(&settings.options, &settings.config_dir, &shim(location)?);
    let schedule = Schedule {
        worker: WorkerId::generate(),
        lease: options
            .lease
            .unwrap_or_else(|| Schedule::single(&settings).lease),
        batch: options.batch.max(1),
        respect_leases: true,
        max_attempts: Some(options.max_attempts.max(1)),
        shared: true,
        judge_share: options.share.max(1),
        hold_cases: false,
    };
    let plan = RunPlan {
        max_error_rate: settings.options.max_error_rate,
        max_cost: None,
        settings,
        connector: Some(connector),
        first: None,
        recorded: Recorded::default(),
    };
    plan.execute(store.as_mut(), location, &run_id, &schedule, observer)
}

/// The ids of the cases a `sample:` scores: the `size` ids whose sha256 of the canonical JSON
/// `{"case": id, "seed": seed}` is smallest (every id when there are fewer).
///
/// The choice depends on the ids and the seed only, never on the order of the file: reordering
/// the cases keeps the sample, and adding a case changes it by at most that case (it enters if
/// its hash ranks among the `size` smallest, pushing out the largest). Duplicate ids count once.
pub fn sample_case_ids<'a>(
    ids: impl IntoIterator<Item = &'a str>,
    sample: oloproof_core::config::SampleOptions,
) -> std::collections::HashSet<String> {
    let mut keyed: Vec<(String, &str)> = ids
        .into_iter()
        .map(|id| (content_hash(&json!({"case": id, "seed": sample.seed})), id))
        .collect();
    keyed.sort();
    keyed.dedup_by(|a, b| a.1 == b.1);
    keyed
        .into_iter()
        .take(sample.size)
        .map(|(_, id)| id.to_string())
        .collect()
}

/// Re-summarises a stored run from its verdicts (no system call). The run is read through the
/// store's loader with every case slimmed to what the summary reads as it is decoded.
pub fn summarize_stored(
    store: &dyn Store,
    run_id: &str,
    cache: CacheCounts,
) -> Result<RunSummary, EngineError> {
    let run = store.load_run_with(run_id, &EngineEvaluators, |_| true, slim_for_summary)?;
    Ok(summarize_run(&run, cache)?)
}

/// Summarises a run read back from the store (its executed cases; a pending case counts in
/// `cases` but not in `done`), with `cache` as the invocation's cache use.
pub fn summarize_run(
    run: &LoadedRun,
    cache: CacheCounts,
) -> Result<RunSummary, StoredEvaluatorError> {
    let settings = &run.settings;
    let evaluators: Vec<Box<dyn Evaluator>> = build_all(&settings.options.evaluators)?;
    let total_cases = run.cases.len() as u64;
    let outcomes: Vec<CaseOutcome<'_>> = run
        .cases
        .iter()
        .filter_map(|(case, trace, verdicts)| {
            Some(CaseOutcome {
                case,
                trace: trace.as_ref()?,
                verdicts,
            })
        })
        .collect();
    let criteria: Vec<(String, SummaryKind)> = evaluators
        .iter()
        .map(|e| (e.criterion().to_string(), e.kind()))
        .collect();
    let judged = evaluators.iter().any(|e| e.judge_choice().is_some());
    let mut usage = JudgeUsage::default();
    for o in &outcomes {
        for v in o.verdicts {
            usage.add_detail(&v.detail);
        }
    }
    let mut summary = summarize(
        &SummaryInputs {
            run_id: &run.record.id,
            system: (&settings.system.name, &settings.system.version),
            criteria: &criteria,
            slices: &settings.options.slices,
            min_slice_support: settings.options.min_slice_support,
            seed: settings.options.bootstrap.seed,
            resamples: settings.options.bootstrap.resamples,
            total_cases,
            cache,
        },
        &outcomes,
    );
    summary.judges = judged.then_some(usage);
    let typed: Vec<(String, oloproof_core::config::EvaluatorEntry)> = evaluators
        .iter()
        .map(|e| (e.criterion().to_string(), e.identity().clone()))
        .collect();
    summary.external_scores = crate::external::external_scores(&typed, &outcomes);
    Ok(summary)
}

/// What the summary reads of a case and its trace, and nothing more: ids, labels, metadata,
/// the context's `truncated` flag, latencies, the error's kind, and the verdict details it
/// reads ([`crate::summary::summary_reads_detail`]). Texts (input, passages, gold context, the
/// generation, stderr, tracebacks), the context's passages, a pipeline's stage lists and rule
/// evaluators' details are dropped as each case is read, so summarising a large run holds ids
/// and numbers, not every trace in full (the soak's 100,000 cases peaked at 2.1 GB holding
/// them whole).
fn slim_for_summary((case, trace, verdicts): &mut LoadedCase) {
    // A rule evaluator's detail (most verdicts) is nothing the summary reads.
    for v in verdicts.iter_mut() {
        if !crate::summary::summary_reads_detail(&v.detail) {
            v.detail = serde_json::Value::Null;
        }
    }
    let Some(trace) = trace.as_mut() else {
        return;
    };
    case.input = serde_json::Map::new();
    for g in case.expected.gold_context.iter_mut().flatten() {
        g.text = String::new();
    }
    let strip = |p: &mut oloproof_core::passage::Passage| {
        p.text = None;
        p.metadata = None;
    };
    if let Some(r) = trace.retrieval.as_mut() {
        r.candidates.iter_mut().for_each(strip);
    }
    // Of the context the summary reads only whether the budget truncated it (the
    // `context_truncated` slice): its passages and the dropped candidates go.
    if let Some(c) = trace.context.as_mut() {
        c.passages = Vec::new();
        c.dropped = Vec::new();
    }
    trace.generation = None;
    trace.stderr = Vec::new();
    trace.claims = None;
    // A pipeline's lists (each lane's, the fused, the pre-rerank) are what a trace holds
    // most of, and the summary reads none of them.
    trace.pipeline = None;
    trace.filter_check = None;
    if let Some(e) = trace.error.as_mut() {
        e.traceback = None;
        e.stderr_tail = Vec::new();
    }
}

/// The engine's evaluators as readers of the store need them
/// ([`oloproof_core::run::Evaluators`]): pass it to `load_run` of a store, or to the
/// viewer.
#[derive(Debug, Clone, Copy, Default)]
pub struct EngineEvaluators;

impl Evaluators for EngineEvaluators {
    fn criteria(
        &self,
        entries: &[EvaluatorEntry],
    ) -> Result<Vec<(String, SummaryKind)>, StoredEvaluatorError> {
        Ok(build_all(entries)?
            .iter()
            .map(|e| (e.criterion().to_string(), e.kind()))
            .collect())
    }

    fn summarize(&self, run: &LoadedRun) -> Result<RunSummary, StoredEvaluatorError> {
        summarize_run(run, CacheCounts::default())
    }

    fn slice_value(&self, key: &str, case: &Case, trace: &Trace) -> String {
        slice_value(
            key,
            &CaseOutcome {
                case,
                trace,
                verdicts: &[],
            },
        )
    }
}

/// Checks that `criterion` is one of `run`'s pass/fail criteria (what `purpose` needs), with a
/// did-you-mean when it is not a criterion at all.
pub fn require_pass_fail(
    run: &LoadedRun,
    criterion: &str,
    purpose: &str,
) -> Result<(), EngineError> {
    let Some((_, kind)) = run.criteria.iter().find(|(c, _)| c == criterion) else {
        let names: Vec<&str> = run.criteria.iter().map(|(c, _)| c.as_str()).collect();
        let hint = oloproof_core::source::did_you_mean(criterion, names.iter().copied())
            .map(|s| format!("; did you mean `{s}`?"))
            .unwrap_or_else(|| format!("; the run's criteria are {}", names.join(", ")));
        return Err(EngineError::Usage(format!(
            "run {} has no criterion `{criterion}`{hint}",
            run.record.id
        )));
    };
    if *kind == SummaryKind::Mean {
        return Err(EngineError::Usage(format!(
            "`{criterion}` is a score; {purpose} needs a pass/fail criterion (e.g. contains, hit_rate, citation_validity)"
        )));
    }
    Ok(())
}

/// What a run replays instead of calling the system: retrievals recorded by a parent run
/// (diagnosis replays), or whole traces of a recorded dataset, by case id.
#[derive(Default)]
pub(crate) struct Recorded<'a> {
    /// Retrievals to replay.
    pub(crate) retrievals: std::collections::HashMap<String, oloproof_core::passage::Retrieval>,
    /// Traces to return as they are (recorded datasets), borrowed from the records: a
    /// monitor's tier judges its traffic's traces without a copy of them.
    pub(crate) traces: std::collections::HashMap<&'a str, &'a Trace>,
    /// The replayed retrievals are the input of the system's `rerank` stage (a lane's
    /// ranking replayed for `lane=NAME`), which runs on them; otherwise they go to context
    /// assembly as they are.
    pub(crate) rerank: bool,
    /// Retrieve the raw question beside the rewrites whatever the evaluators ask (the
    /// gold-context control of a rewriting system, for `REWRITE_DRIFT`).
    pub(crate) raw_query: bool,
}

/// A connection started on first use and restarted by the connection itself after failures;
/// without options (recorded datasets) there is no system to connect to.
struct LazyConnection {
    options: Option<ConnectorSpec>,
    conn: Option<Box<dyn SystemConnection>>,
}

impl ConnectionSource for LazyConnection {
    fn connection(&mut self) -> Result<&mut dyn SystemConnection, StageError> {
        if self.conn.is_none() {
            let Some(options) = &self.options else {
                return Err(StageError {
                    stage: "connect".into(),
                    kind: ErrorKind::Spawn,
                    error_type: None,
                    message: "a recorded dataset has no system to call".into(),
                    traceback: None,
                    stderr_tail: Vec::new(),
                });
            };
            self.conn = Some(options.connect()?);
        }
        Ok(self.conn.as_deref_mut().expect("connection set above"))
    }
}

struct Finished {
    /// The case's position among the claimed cases (the store's order).
    index: usize,
    case: Case,
    case_id: String,
    attempt: i64,
    /// Recorded as an error after `max_attempts` claims, not executed.
    abandoned: bool,
    trace: Trace,
    /// `serde_json::to_string(&trace)`, made on the case's thread: the case's stored trace and,
    /// when the execution is to be cached, the text of its execution cache entry.
    trace_json: Option<String>,
    verdicts: Vec<CriterionVerdict>,
    writes: Vec<CacheWrite>,
    judgment: HitMiss,
}

/// Judges one executed case, through the judgment cache.
#[allow(clippy::too_many_arguments)]
fn judge(
    evaluators: &[Box<dyn Evaluator>],
    keys: &JudgmentKeys,
    exec: &str,
    case: &Case,
    trace: &Trace,
    cache: &CacheReader<'_>,
    env: &crate::judged::JudgeEnv<'_>,
    judge_cache: &crate::judged::StoreJudgeCache,
    writes: &mut Vec<CacheWrite>,
    counts: &mut HitMiss,
) -> Vec<CriterionVerdict> {
    if trace.error.is_some() {
        // A failed case is judged (every criterion missing or excluded), never cached.
        return evaluators
            .iter()
            .map(|e| crate::evaluators::evaluate(e.as_ref(), case, trace, Some(env)))
            .collect();
    }
    let content = trace_content(trace);
    evaluators
        .iter()
        .zip(keys.for_case(case, exec, &content))
        .map(|(e, key)| {
            if !e.judgment_cacheable() {
                // It reads the run's measurements, which the key does not hold.
                return crate::evaluators::evaluate(e.as_ref(), case, trace, Some(env));
            }
            if let Some(v) = cache.get_json::<CriterionVerdict>(layer::JUDGMENT, &key) {
                counts.record(true);
                let mut v = CriterionVerdict {
                    criterion: e.criterion().to_string(),
                    ..v
                };
                mark_calls_cached(&mut v.detail);
                return v;
            }
            counts.record(false);
            let v = crate::evaluators::evaluate(e.as_ref(), case, trace, Some(env));
            writes.extend(judge_cache.take_writes());
            if !matches!(v.verdict, Verdict::Missing { .. }) {
                if let Ok(json) = serde_json::to_string(&v) {
                    writes.push((layer::JUDGMENT, key, json));
                }
            }
            v
        })
        .collect()
}

/// One run to execute, resolved once by whoever starts it (a live run, a recorded dataset, a
/// diagnosis or lost-in-the-middle child run, a resume): the settings stored with it and what
/// executing it needs besides the store. [`RunPlan::start`] records a new run and executes
/// it; [`RunPlan::execute`] executes the pending cases of a recorded one. This is the only way
/// cases are executed.
pub(crate) struct RunPlan<'a> {
    /// The settings stored with the run.
    pub(crate) settings: RunSettings,
    /// How to reach the system (`None`: a recorded dataset, nothing to call).
    pub(crate) connector: Option<ConnectorSpec>,
    /// A connection already open (a live run read the system's `hello` on it).
    pub(crate) first: Option<Box<dyn SystemConnection>>,
    /// What the run replays instead of calling the system.
    pub(crate) recorded: Recorded<'a>,
    /// Share of cases allowed to end in an error.
    pub(crate) max_error_rate: f64,
    /// Stop taking cases once the judges have spent this many dollars.
    pub(crate) max_cost: Option<f64>,
}

/// How a new run is recorded: the config it came from, what identifies its system (the
/// `hello`, or a dataset's identity), and its parent run (a child run of a diagnosis).
pub(crate) struct RunOrigin<'a> {
    /// The config file, as given.
    pub(crate) config_path: &'a str,
    /// The system's `hello` (or what stands for it), as JSON.
    pub(crate) system_json: &'a str,
    /// The parent run, for child runs.
    pub(crate) parent: Option<&'a str>,
}

/// How one invocation takes cases from a run: its lease holder id, lease and batch, and
/// whether it shares the run with other worker processes.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    /// This invocation, as the holder of its leases.
    pub(crate) worker: WorkerId,
    /// How long a claim holds a case; heartbeats extend it every third of it.
    pub(crate) lease: Duration,
    /// Cases per claim.
    pub(crate) batch: usize,
    /// Skip cases leased by others (workers); `false` takes them over (`run --resume`).
    pub(crate) respect_leases: bool,
    /// Record a case as an error once claimed more often than this.
    pub(crate) max_attempts: Option<u32>,
    /// Other processes work on the run too: the summary counts the cache use recorded with
    /// every case, and is recorded only once every case is done.
    pub(crate) shared: bool,
    /// Worker processes sharing each judge's `max_concurrency`.
    pub(crate) judge_share: usize,
    /// Keep what the summary reads of each committed case when the run starts with every case
    /// pending, so a process that executes them all summarises without reading the run back
    /// (`run`, on SQLite or Postgres). `oloproof worker` does not: its processes each execute
    /// a share.
    pub(crate) hold_cases: bool,
}

impl Schedule {
    /// `run --resume`: one process finishes the run; every pending case is its own, whoever
    /// claimed it before (that process is gone), and attempts are unlimited. The lease
    /// outlives a stuck case (three timeouts and a minute).
    pub(crate) fn single(settings: &RunSettings) -> Self {
        Schedule {
            worker: WorkerId::generate(),
            lease: Duration::from_secs_f64(settings.timeout_s * 3.0 + 60.0),
            // The only process on the run: a whole group commit's worth per claim, so the
            // queue outlasts the commit being written and the claims' own cost is spread.
            batch: GROUP_COMMIT_MAX,
            respect_leases: false,
            max_attempts: None,
            shared: false,
            judge_share: 1,
            hold_cases: true,
        }
    }

    /// A new run (`run`, a diagnosis' child runs): as [`single`](Self::single), but leases of
    /// `oloproof worker` processes that joined it are respected; on a Postgres store, where
    /// workers may join, the run is shared (its summary counts every worker's cases).
    pub(crate) fn new_run(settings: &RunSettings, location: &StoreLocation) -> Self {
        let shared = matches!(location, StoreLocation::Postgres(_));
        let single = Self::single(settings);
        Schedule {
            respect_leases: true,
            shared,
            // Shared: small claims, so no process holds cases the others could take.
            batch: match shared {
                true => (settings.workers * 8).clamp(64, 200),
                false => single.batch,
            },
            ..single
        }
    }
}

/// The next claim of `schedule`. A run shared with other processes claims by guided
/// self-scheduling (Polychronopoulos & Kuck, 1987): at most a share of what is left to claim,
/// [`guided_claim_size`], so its last cases are spread over every process instead of queued in
/// the one that happened to claim them while the others end idle. A run of one process claims
/// whole batches.
fn claim_next(
    store: &mut dyn Store,
    run_id: &RunId,
    claim: &Claim<'_>,
    schedule: &Schedule,
    workers: usize,
) -> Result<Vec<oloproof_core::store::ClaimedCase>, oloproof_core::store::StoreError> {
    if !schedule.shared {
        return store.claim_batch(run_id, claim);
    }
    let processes = schedule.judge_share.max(1);
    let cap = claim.limit.saturating_mul(2 * processes);
    let left = store.claimable(run_id, claim, cap)?;
    let limit = guided_claim_size(left, processes, workers, claim.limit);
    store.claim_batch(
        run_id,
        &Claim {
            limit,
            ..claim.clone()
        },
    )
}

/// Cases to claim when `left` can be claimed by `processes` processes of `workers` threads:
/// half of an even share, `⌈left / (2 × processes)⌉`, within `[workers, batch]` (every
/// thread of this process gets a case; a claim is never larger than the configured batch).
/// While much is left this is the batch; over the run's last `2 × processes × batch` cases it
/// shrinks, so no process holds more than its share of the end.
fn guided_claim_size(left: usize, processes: usize, workers: usize, batch: usize) -> usize {
    let batch = batch.max(1);
    left.div_ceil(2 * processes.max(1))
        .clamp(workers.clamp(1, batch), batch)
}

/// Cases to keep queued so the workers outlast the next claim: twice what they finished in
/// the time the last claim took, at the rate they have finished cases so far, and at least
/// `base`.
fn outlasting_a_claim(base: usize, finished: usize, elapsed: Duration, claim: Duration) -> usize {
    let rate = finished as f64 / elapsed.as_secs_f64().max(1e-3);
    base.max((2.0 * rate * claim.as_secs_f64()).ceil() as usize)
}

/// The error recorded for a case whose workers all stopped before finishing it.
fn abandoned(case_id: &str, attempt: i64, max_attempts: Option<u32>) -> Trace {
    let mut trace = Trace::new(case_id);
    trace.error = Some(StageError {
        stage: "claim".into(),
        kind: ErrorKind::Crash,
        error_type: None,
        message: format!(
            "abandoned: claimed {} times (max_attempts {}), and each worker holding it stopped \
             (killed, or cut off from the store) before finishing it",
            attempt - 1,
            max_attempts.unwrap_or(0)
        ),
        traceback: None,
        stderr_tail: Vec::new(),
    });
    trace
}

/// The cache lookups one finished case made, as the summary counts them.
fn case_cache_use(f: &Finished, recorded_dataset: bool) -> CacheCounts {
    let mut counts = CacheCounts::default();
    if !recorded_dataset && !f.abandoned {
        // Recorded datasets neither read nor write the execution cache.
        counts.execution.record(f.trace.cache.execution);
    }
    match (f.trace.cache.retrieve_calls, f.trace.cache.retrieve) {
        (Some(calls), _) => {
            counts.retrieve.hit += calls.hits as u64;
            counts.retrieve.miss += calls.misses as u64;
        }
        (None, Some(hit)) => counts.retrieve.record(hit),
        (None, None) => {}
    }
    if let Some(hit) = f.trace.cache.rewrite {
        counts.rewrite.record(hit);
    }
    if let Some(hit) = f.trace.cache.rerank {
        counts.rerank.record(hit);
    }
    if let Some(hit) = f.trace.cache.generate {
        counts.generate.record(hit);
    }
    counts.judgment = f.judgment;
    counts
}

impl RunPlan<'_> {
    /// Records a new run of `cases` (in order) under this plan; returns its id.
    pub(crate) fn record<'c>(
        &self,
        store: &mut dyn Store,
        cases: impl IntoIterator<Item = &'c Case>,
        origin: RunOrigin<'_>,
    ) -> Result<RunId, EngineError> {
        let run_id = RunId::generate();
        let cases: Vec<&Case> = cases.into_iter().collect();
        store.create_run(&NewRun {
            id: &run_id,
            config_path: origin.config_path,
            settings: &self.settings,
            identity: &self.settings.identity(),
            system_json: origin.system_json,
            parent: origin.parent,
            cases: &cases,
        })?;
        Ok(run_id)
    }

    /// Records a new run of `cases` (in order) under this plan, then executes it.
    pub(crate) fn start<'c>(
        self,
        store: &mut dyn Store,
        location: &StoreLocation,
        cases: impl IntoIterator<Item = &'c Case>,
        origin: RunOrigin<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<RunOutcome, EngineError> {
        let run_id = self.record(store, cases, origin)?;
        let schedule = Schedule::new_run(&self.settings, location);
        self.execute(store, location, &run_id, &schedule, observer)
    }

    /// Executes the pending cases of `run_id` on a pool of workers: claims them in batches
    /// under `schedule`'s lease (heartbeats keep it), commits each finished case from this
    /// thread, then summarises the run.
    pub(crate) fn execute(
        self,
        store: &mut dyn Store,
        location: &StoreLocation,
        run_id: &RunId,
        schedule: &Schedule,
        observer: &mut dyn RunObserver,
    ) -> Result<RunOutcome, EngineError> {
        let RunPlan {
            settings,
            connector: options,
            first,
            recorded,
            max_error_rate,
            max_cost,
        } = self;
        let settings = &settings;
        let recorded = &recorded;
        let registry = crate::judged::JudgeRegistry::from_options_shared(
            &settings.options.judges,
            schedule.judge_share,
        )
        .map_err(|e| EngineError::Usage(e.to_string()))?;
        let registry = &registry;
        let reranker_judge = settings
            .intervention
            .as_ref()
            .and_then(|i| i.reranker.as_deref())
            .and_then(|r| r.strip_prefix(crate::execute::JUDGE_RERANKER_PREFIX))
            .and_then(|name| registry.client(name))
            .map(|c| c.as_ref());
        let over_budget = || max_cost.is_some_and(|cap| registry.spent_usd() >= cap);
        // Set when the store refused a write: the workers stop taking cases (their results could
        // not be recorded, and every system and judge call would be spent for nothing).
        let store_failed = std::sync::atomic::AtomicBool::new(false);
        let store_failed = &store_failed;
        let claim = Claim {
            worker: &schedule.worker,
            limit: schedule.batch,
            lease: schedule.lease,
            respect_leases: schedule.respect_leases,
            max_attempts: schedule.max_attempts,
        };
        let corpus = crate::filter_check::load_corpus(settings)?;
        let corpus = corpus.as_ref();
        let record = store.run(run_id)?;
        let total = record.case_count as u64;
        let pending = (record.case_count - record.done_count).max(0) as u64;
        let first_batch = claim_next(store, run_id, &claim, schedule, settings.workers)?;
        observer.started(run_id, total, pending);
        let evaluators: Vec<Box<dyn Evaluator>> = build_all(&settings.options.evaluators)?;
        let judgment_keys = &JudgmentKeys::new(evaluators.iter().map(|e| e.as_ref()), registry);
        // The output fields an evaluator measures in the system's tokens, counted after generation.
        let mut token_fields: Vec<String> = evaluators
            .iter()
            .filter_map(|e| e.counts_tokens_of().map(str::to_string))
            .collect();
        token_fields.sort();
        token_fields.dedup();
        let token_fields = &token_fields;
        let raw_query = recorded.raw_query || evaluators.iter().any(|e| e.reads_raw_query());
        let whole_run = pending == total && schedule.hold_cases;
        // Placed at their order in the run as they commit (no sort of large records at the end).
        let mut held: Vec<Option<LoadedCase>> = Vec::new();
        if whole_run {
            held.resize_with(total as usize, || None);
        }
        let mut held_count = 0u64;
        let mut counts = CacheCounts::default();
        let mut errors = 0u64;
        let mut missing = 0u64;
        let mut executed = 0u64;
        let mut write_error: Option<EngineError> = None;
        // Set when a read of the run, after this process's last commit, found cases that
        // other processes still held: then they committed the run's last cases, and the last
        // of them records the summary.
        let mut others_committed_after_us = false;
        if !first_batch.is_empty() {
            let workers = settings.workers.clamp(1, pending.max(1) as usize);
            let (job_tx, job_rx) = crossbeam_channel::unbounded::<Job>();
            let mut sent = 0usize;
            let mut send =
                |tx: &crossbeam_channel::Sender<Job>,
                 batch: Vec<oloproof_core::store::ClaimedCase>| {
                    for c in batch {
                        sent += 1;
                        let _ = tx.send(Job {
                            index: c.ord as usize,
                            case: c.case,
                            attempt: c.attempt,
                            exhausted: c.exhausted,
                        });
                    }
                    sent
                };
            let mut sent_count = send(&job_tx, first_batch);
            let mut job_tx = Some(job_tx);
            // Room for a whole group commit: the workers keep executing while the previous
            // group is written, instead of waiting in lockstep with the committing thread.
            let (done_tx, done_rx) =
                crossbeam_channel::bounded::<Finished>(GROUP_COMMIT_MAX.max(workers * 4));
            let mut first = first;
            // Each worker's two connections (cache lookups, judge calls), opened before any
            // case runs: a store that cannot be read is an error now, not a run that silently
            // recomputes (and re-bills) everything.
            let mut readers = Vec::with_capacity(workers);
            for _ in 0..workers {
                let open = || -> Result<Option<Box<dyn Store>>, EngineError> {
                    Ok(match settings.use_cache {
                        true => Some(oloproof_store::open_reader(location)?),
                        false => None,
                    })
                };
                readers.push((open()?, open()?));
            }
            let heartbeat_every = (schedule.lease / 3).max(Duration::from_millis(50));
            std::thread::scope(|scope| {
                for (reader, judge_reader) in readers {
                    let job_rx = job_rx.clone();
                    let done_tx = done_tx.clone();
                    let mut source = LazyConnection {
                        options: options.clone(),
                        conn: first.take(),
                    };
                    let evaluators = &evaluators;
                    let over_budget = &over_budget;
                    scope.spawn(move || {
                        let cache = CacheReader::new(reader.as_deref());
                        let judge_cache = crate::judged::StoreJudgeCache::new(judge_reader);
                        let env = crate::judged::JudgeEnv {
                            judges: registry,
                            cache: &judge_cache,
                        };
                        let mut snapshot = None;
                        for job in job_rx.iter() {
                            let Job {
                                index,
                                case,
                                attempt,
                                exhausted,
                            } = job;
                            let _case_span =
                                tracing::info_span!("case", run_id = %run_id, case_id = %case.id)
                                    .entered();
                            if over_budget() {
                                // The cost cap: stop taking cases; they stay pending and resumable.
                                break;
                            }
                            if store_failed.load(std::sync::atomic::Ordering::Relaxed) {
                                break;
                            }
                            // The cache lookups share a read transaction, renewed every
                            // SNAPSHOT_SPAN: a new one after the committing thread wrote
                            // discards the connection's page cache, so one per case would
                            // re-read every page each case touches. Entries committed since
                            // the snapshot began are missed for at most that long (the case
                            // is then computed again, and its entry not written twice).
                            if snapshot.as_ref().is_some_and(|(_, began): &(_, Instant)| {
                                began.elapsed() >= SNAPSHOT_SPAN
                            }) {
                                snapshot = None;
                            }
                            if snapshot.is_none() {
                                snapshot = reader.as_deref().and_then(|r| {
                                    match oloproof_core::store::ReadSnapshot::begin(r) {
                                        Ok(s) => Some((s, Instant::now())),
                                        Err(e) => {
                                            tracing::warn!(error = %e, "cache lookups without a read snapshot");
                                            None
                                        }
                                    }
                                });
                            }
                            let exec = execution_key(&settings.system, &case);
                            let Executed {
                                mut trace,
                                mut writes,
                                execution_entry,
                            } = if exhausted {
                                Executed {
                                    trace: abandoned(&case.id, attempt, schedule.max_attempts),
                                    writes: Vec::new(),
                                    execution_entry: None,
                                }
                            } else {
                                execute_case(
                                    &settings.system,
                                    &case,
                                    &mut source,
                                    &cache,
                                    crate::execute::CaseMode {
                                        intervention: settings.intervention.as_ref(),
                                        recorded: recorded.retrievals.get(&case.id),
                                        trace: recorded.traces.get(case.id.as_str()).copied(),
                                        reranker_judge,
                                        count_tokens_of: token_fields,
                                        raw_query,
                                        rerank_recorded: recorded.rerank,
                                        execution_key: Some(&exec),
                                    },
                                )
                            };
                            if let Some(corpus) = corpus {
                                trace.filter_check =
                                    crate::filter_check::check_case(corpus, &case, &trace);
                            }
                            let mut judgment = HitMiss::default();
                            let verdicts = judge(
                                evaluators,
                                judgment_keys,
                                &exec,
                                &case,
                                &trace,
                                &cache,
                                &env,
                                &judge_cache,
                                &mut writes,
                                &mut judgment,
                            );
                            // Serialised once, here on the case's thread, in the stored form
                            // (a pipeline's passages written once): the case's row and its
                            // execution cache entry are the same text.
                            let trace_json = oloproof_core::stored_trace::stored_json(&trace).ok();
                            if let (Some(key), Some(json)) = (execution_entry, &trace_json) {
                                writes.push((crate::keys::layer::EXECUTION, key, json.clone()));
                            }
                            let finished = Finished {
                                index,
                                case_id: case.id.clone(),
                                case,
                                attempt,
                                abandoned: exhausted,
                                trace,
                                trace_json,
                                verdicts,
                                writes,
                                judgment,
                            };
                            if done_tx.send(finished).is_err() {
                                return;
                            }
                            if job_rx.is_empty() {
                                // Not held while waiting for the next case.
                                snapshot = None;
                            }
                        }
                    });
                }
                drop(done_tx);
                let mut received = 0usize;
                let mut last_beat = Instant::now();
                // While other workers hold the run's last cases, claims are retried (a worker
                // that dies leaves its cases to whoever claims after its lease): first after
                // 100 ms, then at doubling intervals up to half a lease (at most 5 s), so a
                // run whose last cases finish elsewhere ends within about as long again as
                // they took, without a claim query every 100 ms for a whole lease.
                let poll =
                    (schedule.lease / 2).clamp(Duration::from_millis(100), Duration::from_secs(5));
                let mut retry_in = Duration::from_millis(100).min(poll);
                let mut next_claim = Instant::now();
                // Set while the run's other cases are held by other processes: whether they are
                // done is read every OTHERS_CHECK_EVERY, apart from the claims' backoff, so this
                // process ends as soon as the run does rather than at its next claim.
                let mut others_hold = false;
                let mut next_check = Instant::now();
                // Claim the next batch while the workers still have this many cases queued, so
                // they never wait for a claim (nor for a group commit to end before one). A run
                // shared with other processes keeps fewer in hand: cases queued here at the end
                // are cases the others cannot take. Fewer, but enough to outlast a claim: two
                // rounds of the workers, or twice what they finish while a claim takes (a fast
                // system would otherwise wait on every claim's round trip).
                let low_water_base = if schedule.shared {
                    workers * 2
                } else {
                    schedule.batch.max(workers)
                };
                let mut low_water = low_water_base;
                let executing_since = Instant::now();
                // The open group commit: cases finishing within GROUP_COMMIT_WINDOW of the first
                // share one transaction. Each case stays all-or-nothing; a kill loses at most
                // that window.
                let mut group: Vec<Finished> = Vec::new();
                let mut group_ends = Instant::now();
                // Cache entries of committed cases, written together every CACHE_FLUSH_EVERY:
                // their keys are hashes, so each entry lands on its own page of the cache's
                // index, and writing them with every group commit rewrote most of that index
                // each time. A kill loses at most that long of entries, never a result (the
                // next run computes them again).
                let mut unflushed: Vec<CacheWrite> = Vec::new();
                let mut unflushed_bytes = 0usize;
                let mut flush_due = Instant::now() + CACHE_FLUSH_EVERY;
                loop {
                    // Keep the queue fed. An empty claim closes the queue (and the workers end)
                    // once no case is pending but ours; while others hold cases, it is retried.
                    let stopping =
                        over_budget() || store_failed.load(std::sync::atomic::Ordering::Relaxed);
                    let in_flight = sent_count.saturating_sub(received);
                    if stopping {
                        job_tx = None;
                    } else if let Some(tx) = &job_tx {
                        if tx.len() < low_water && Instant::now() >= next_claim {
                            let claim_started = Instant::now();
                            let claimed = claim_next(store, run_id, &claim, schedule, workers)
                                .and_then(|batch| {
                                    if !batch.is_empty() || !schedule.shared {
                                        return Ok((batch, false));
                                    }
                                    let r = store.run(run_id)?;
                                    let others = (r.case_count - r.done_count).max(0) as usize;
                                    Ok((batch, others > in_flight))
                                });
                            match claimed {
                                Ok((batch, true)) if batch.is_empty() => {
                                    others_committed_after_us = true;
                                    next_claim = Instant::now() + retry_in;
                                    retry_in = (retry_in * 2).min(poll);
                                    others_hold = true;
                                    next_check = Instant::now() + OTHERS_CHECK_EVERY;
                                }
                                Ok((batch, _)) if batch.is_empty() => job_tx = None,
                                Ok((batch, _)) => {
                                    retry_in = Duration::from_millis(100).min(poll);
                                    others_hold = false;
                                    sent_count = send(tx, batch);
                                    if schedule.shared {
                                        low_water = outlasting_a_claim(
                                            low_water_base,
                                            received,
                                            executing_since.elapsed(),
                                            claim_started.elapsed(),
                                        );
                                    }
                                }
                                Err(e) => {
                                    store_failed.store(true, std::sync::atomic::Ordering::Relaxed);
                                    write_error = Some(e.into());
                                    job_tx = None;
                                }
                            }
                        } else if others_hold && Instant::now() >= next_check {
                            match store.run(run_id) {
                                Ok(r)
                                    if (r.case_count - r.done_count).max(0) as usize
                                        <= in_flight =>
                                {
                                    job_tx = None
                                }
                                Ok(_) => {
                                    others_committed_after_us = true;
                                    next_check = Instant::now() + OTHERS_CHECK_EVERY
                                }
                                Err(e) => {
                                    store_failed.store(true, std::sync::atomic::Ordering::Relaxed);
                                    write_error = Some(e.into());
                                    job_tx = None;
                                }
                            }
                        }
                    }
                    // Extend the leases of the cases in hand.
                    if last_beat.elapsed() >= heartbeat_every && write_error.is_none() {
                        if let Err(e) = store.heartbeat(run_id, &schedule.worker, schedule.lease) {
                            store_failed.store(true, std::sync::atomic::Ordering::Relaxed);
                            write_error = Some(e.into());
                            job_tx = None;
                        }
                        last_beat = Instant::now();
                    }
                    // Wait for a finished case, at most until the open group commit is due.
                    let mut wait = heartbeat_every.min(retry_in);
                    if others_hold && job_tx.is_some() {
                        wait = wait.min(next_check.saturating_duration_since(Instant::now()));
                    }
                    if !group.is_empty() {
                        wait = wait.min(group_ends.saturating_duration_since(Instant::now()));
                    }
                    let ended = match done_rx.recv_timeout(wait) {
                        Ok(f) => {
                            if group.is_empty() {
                                group_ends = Instant::now() + GROUP_COMMIT_WINDOW;
                            }
                            received += 1;
                            group.push(f);
                            false
                        }
                        Err(crossbeam_channel::RecvTimeoutError::Timeout) => false,
                        Err(crossbeam_channel::RecvTimeoutError::Disconnected) => true,
                    };
                    let due = !group.is_empty()
                        && (ended
                            || group.len() >= GROUP_COMMIT_MAX
                            || Instant::now() >= group_ends);
                    if !due {
                        if ended {
                            break;
                        }
                        continue;
                    }
                    let mut batch = std::mem::take(&mut group);
                    if write_error.is_some() {
                        if ended {
                            break;
                        }
                        continue;
                    }
                    let dataset = !recorded.traces.is_empty();
                    let uses: Vec<CacheCounts> =
                        batch.iter().map(|f| case_cache_use(f, dataset)).collect();
                    let results: Vec<CaseResult<'_>> = batch
                        .iter()
                        .zip(&uses)
                        .map(|(f, cache_use)| CaseResult {
                            case_id: &f.case_id,
                            attempt: f.attempt,
                            trace: &f.trace,
                            trace_json: f.trace_json.as_deref(),
                            verdicts: &f.verdicts,
                            cache_use: *cache_use,
                        })
                        .collect();
                    let written = match store.complete_cases(run_id, &schedule.worker, &results) {
                        Ok(written) => {
                            others_committed_after_us = false;
                            written
                        }
                        Err(e) => {
                            store_failed.store(true, std::sync::atomic::Ordering::Relaxed);
                            write_error = Some(e.into());
                            continue;
                        }
                    };
                    drop(results);
                    for (f, written) in batch.iter_mut().zip(&written) {
                        if *written {
                            unflushed_bytes += f
                                .writes
                                .iter()
                                .map(|(_, k, v)| k.len() + v.len())
                                .sum::<usize>();
                            unflushed.append(&mut f.writes);
                        }
                    }
                    if unflushed.len() >= CACHE_FLUSH_MAX
                        || unflushed_bytes >= CACHE_FLUSH_MAX_BYTES
                        || Instant::now() >= flush_due
                    {
                        if let Err(e) = store.put_cache_entries(&unflushed) {
                            store_failed.store(true, std::sync::atomic::Ordering::Relaxed);
                            write_error = Some(e.into());
                        }
                        unflushed.clear();
                        unflushed_bytes = 0;
                        flush_due = Instant::now() + CACHE_FLUSH_EVERY;
                    }
                    for ((f, cache_use), written) in batch.iter().zip(&uses).zip(&written) {
                        if !written {
                            // Our lease was lost (it expired and another worker claimed the
                            // case): that worker's result is the one recorded.
                            tracing::warn!(run_id = %run_id, case_id = %f.case_id, attempt = f.attempt, "result not recorded: the case's lease passed to another worker");
                            continue;
                        }
                        executed += 1;
                        counts += *cache_use;
                        if f.trace.error.is_some() {
                            errors += 1;
                        }
                        let case_missing = f
                            .verdicts
                            .iter()
                            .filter(|v| matches!(v.verdict, Verdict::Missing { .. }))
                            .count() as u64;
                        missing += case_missing;
                        // `-v`: one line per finished case.
                        tracing::info!(
                            run_id = %run_id,
                            case_id = %f.case_id,
                            outcome = %match &f.trace.error {
                                Some(e) => e.kind.as_str(),
                                None if f.trace.cache.execution => "cached",
                                None => "ok",
                            },
                            missing_verdicts = case_missing,
                            "case finished"
                        );
                        observer.case_done(&f.trace, errors, missing);
                    }
                    // What the summary reads of each committed case, held in memory (slimmed
                    // as `summarize_stored` slims what it reads back), in the store's order of
                    // verdicts (by criterion), so the summary needs no second read of the run.
                    if whole_run {
                        for (f, written) in batch.into_iter().zip(written) {
                            if !written {
                                continue;
                            }
                            let mut verdicts = f.verdicts;
                            verdicts.sort_by(|a, b| a.criterion.cmp(&b.criterion));
                            let mut held_case = (f.case, Some(f.trace), verdicts);
                            slim_for_summary(&mut held_case);
                            // An order outside the run (never, for a run created whole) only
                            // means the summary reads the run back.
                            if let Some(slot) = held.get_mut(f.index) {
                                if slot.replace(held_case).is_none() {
                                    held_count += 1;
                                }
                            }
                        }
                    }
                    if ended {
                        break;
                    }
                }
                if !unflushed.is_empty() && write_error.is_none() {
                    if let Err(e) = store.put_cache_entries(&unflushed) {
                        write_error = Some(e.into());
                    }
                }
            });
        }
        if let Some(e) = write_error {
            return Err(e);
        }
        let record = store.run(run_id)?;
        let all_done = record.done_count == record.case_count;
        // Every case of the run ran in this invocation and committed: summarise what is held,
        // in the store's case order, exactly as `summarize_stored` would read it back (a test
        // compares the two). Otherwise (a resumed run, a cost cap that left cases pending,
        // cases executed by other workers) read the run back.
        let mut summary = if whole_run && held_count == total {
            // `filter_map` collects in place (`flatten` does not): the held slots' buffer
            // becomes the run's cases, without a second array of ~1.3 KB a case grown by
            // doubling (80 MB of 420 at 20,000 cases).
            #[allow(clippy::filter_map_identity)]
            let cases: Vec<LoadedCase> = held
                .into_iter()
                .filter_map(std::convert::identity)
                .collect();
            let run = LoadedRun {
                record,
                settings: settings.clone(),
                criteria: evaluators
                    .iter()
                    .map(|e| (e.criterion().to_string(), e.kind()))
                    .collect(),
                cases,
            };
            let summary = summarize_run(&run, counts)?;
            // Freeing ten thousand traces takes tens of milliseconds the caller need not wait
            // for: they are dropped on a thread of their own.
            std::thread::spawn(move || drop(run));
            summary
        } else if let Some(recorded) = (schedule.shared && all_done && others_committed_after_us)
            .then(|| recorded_summary(store, run_id))
            .flatten()
        {
            // Another process committed the run's last cases and recorded the summary: read
            // it rather than summarise the whole run again in every process.
            return Ok(RunOutcome {
                run_id: run_id.to_string(),
                error_rate: match recorded.cases {
                    0 => 0.0,
                    cases => recorded.errors as f64 / cases as f64,
                },
                summary: recorded,
                max_error_rate,
                finished: false,
                executed,
            });
        } else {
            drop(held);
            // Shared: the cache use of every worker, as recorded with each case.
            let cache = match schedule.shared {
                true => store.cache_use_of(run_id)?,
                false => counts,
            };
            summarize_stored(store, run_id, cache)?
        };
        summary.incomplete_criteria = IncompleteCriterion::find(&summary.criteria, max_error_rate);
        let mut finished = !schedule.shared || all_done;
        if finished {
            let status = if summary.done == summary.cases {
                RunStatus::Complete
            } else {
                RunStatus::Incomplete
            };
            // Of workers that see the last case done at once, one records the summary.
            let recorded = store.finish_run(run_id, status, &summary)?;
            finished = recorded || !schedule.shared;
        }
        let error_rate = if summary.cases == 0 {
            0.0
        } else {
            summary.errors as f64 / summary.cases as f64
        };
        Ok(RunOutcome {
            run_id: run_id.to_string(),
            summary,
            error_rate,
            max_error_rate,
            finished,
            executed,
        })
    }
}

/// Longest a process whose share of a run ended before the run's last cases waits for the
/// process that committed them to record the summary, before summarising the run itself (that
/// process may have died between its last commit and the summary).
const RECORDED_SUMMARY_WAIT: Duration = Duration::from_secs(5);

/// The summary another process records for `run_id`, read once recorded (polled every 25 ms
/// for at most [`RECORDED_SUMMARY_WAIT`]); `None` if it is not recorded by then or cannot be
/// read (the caller then summarises the run itself).
fn recorded_summary(store: &dyn Store, run_id: &RunId) -> Option<RunSummary> {
    let until = Instant::now() + RECORDED_SUMMARY_WAIT;
    loop {
        let record = store.run(run_id).ok()?;
        if record.status != RunStatus::Running {
            let summary = serde_json::from_str(record.summary_json.as_deref()?).ok()?;
            return Some(summary);
        }
        if Instant::now() >= until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// One case to execute under one attempt.
struct Job {
    /// The case's order in the run.
    index: usize,
    case: Case,
    attempt: i64,
    /// Claimed past `max_attempts`: recorded as an error, not executed.
    exhausted: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use oloproof_core::config::SampleOptions;

    #[test]
    fn guided_claims_are_whole_batches_until_the_run_ends_then_shrink_to_the_threads() {
        // 4 processes of 8 threads, batches of 64.
        let size = |left| guided_claim_size(left, 4, 8, 64);
        assert_eq!(size(2000), 64);
        assert_eq!(size(512), 64);
        assert_eq!(size(400), 50, "⌈400 / 8⌉");
        assert_eq!(size(100), 13);
        assert_eq!(size(20), 8, "never fewer than the threads");
        assert_eq!(size(3), 8, "the claim itself returns what is left");
        // One process: half of what is left; a batch smaller than the threads wins.
        assert_eq!(guided_claim_size(10, 1, 2, 64), 5);
        assert_eq!(guided_claim_size(1000, 1, 16, 4), 4);
        assert_eq!(guided_claim_size(0, 0, 0, 0), 1);
    }

    #[test]
    fn the_queue_outlasts_a_claim_at_the_rate_cases_finish() {
        let ms = Duration::from_millis;
        // 8,000 cases a second and 3 ms claims: 48 cases queued, not the base 4.
        assert_eq!(outlasting_a_claim(4, 8000, ms(1000), ms(3)), 48);
        // 80 a second (slow stages): the base.
        assert_eq!(outlasting_a_claim(16, 80, ms(1000), ms(3)), 16);
        // Nothing finished yet: the base.
        assert_eq!(outlasting_a_claim(16, 0, ms(0), ms(3)), 16);
    }

    #[test]
    fn the_sample_depends_on_ids_and_seed_only() {
        let ids: Vec<String> = (0..40).map(|i| format!("case_{i:02}")).collect();
        let sample = SampleOptions { size: 10, seed: 7 };
        let a = sample_case_ids(ids.iter().map(String::as_str), sample);
        assert_eq!(a.len(), 10);
        // Reordered: the same sample.
        let b = sample_case_ids(ids.iter().rev().map(String::as_str), sample);
        assert_eq!(a, b);
        // Another seed: another sample.
        let c = sample_case_ids(
            ids.iter().map(String::as_str),
            SampleOptions { seed: 8, ..sample },
        );
        assert_ne!(a, c);
        // One case added: at most one chosen case changes.
        let mut more = ids.clone();
        more.push("case_new".into());
        let d = sample_case_ids(more.iter().map(String::as_str), sample);
        assert_eq!(d.len(), 10);
        assert!(a.difference(&d).count() <= 1);
        // Fewer cases than the size: all of them.
        let all = sample_case_ids(ids[..3].iter().map(String::as_str), sample);
        assert_eq!(all.len(), 3);
    }
}
