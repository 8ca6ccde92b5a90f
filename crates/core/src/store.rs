//! The store traits and their typed records: what the engine, the CLI and the viewer ask of a
//! run store, whichever backend holds it (SQLite embedded, Postgres shared).
//!
//! Three traits split what a store keeps:
//! - [`RunStore`]: runs and their cases. The cases table is also the work queue: a worker
//!   [claims](RunStore::claim_batch) a batch of pending cases under a lease (an expiry time and
//!   its [`WorkerId`]), [extends](RunStore::heartbeat) the lease while it works, and
//!   [completes](RunStore::complete_cases) each case only while it still holds it (same attempt,
//!   same holder): execution is at least once, the recorded result exactly once.
//! - [`CacheStore`]: the content-addressed caches ([`CacheLayer`]), keyed by sha256 of
//!   canonical JSON; values are opaque to the store.
//! - [`ArtifactStore`]: diagnoses, comparisons, calibrations and monitor reports.
//!
//! [`Store`] is all three; backends (`oloproof_store::SqliteStore`, `oloproof_store::PgStore`)
//! implement them and own their SQL and serialisation: callers hand over typed values (a
//! [`Case`], a [`Trace`], [`CriterionVerdict`]s, a [`RunSummary`]) and read typed ones back
//! ([`Store::load_run`] and the other `load_*` methods decode in one place, here).
//!
//! ```
//! use oloproof_core::store::{CacheLayer, CaseState, RunStatus};
//!
//! assert_eq!(RunStatus::parse("interrupted"), Some(RunStatus::Interrupted));
//! assert_eq!(RunStatus::Complete.to_string(), "complete");
//! assert_eq!(CaseState::parse("done"), Some(CaseState::Done));
//! assert_eq!(CacheLayer::parse("judgment"), Some(CacheLayer::Judgment));
//! ```

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::case::Case;
use crate::comparison::Comparison;
use crate::diagnosis::Diagnosis;
use crate::monitor_report::MonitorReport;
use crate::run::{Evaluators, LoadedCase, LoadedRun, RunRecord, StoredEvaluatorError};
use crate::settings::RunSettings;
use crate::summary::{CacheCounts, RunSummary};
use crate::trace::Trace;
use crate::verdict::CriterionVerdict;

/// A boxed error of a store backend (a SQLite or Postgres error), kept as the source.
pub type BackendError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Store failures, whichever the backend.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The backend failed (`detail` is its message with what to do about it).
    #[error("run store {location}: {detail}")]
    Backend {
        /// The store as shown to users (a path, or a Postgres URL without its password).
        location: String,
        /// What happened and what to do.
        detail: String,
        /// The backend's error.
        #[source]
        source: BackendError,
    },
    /// A folder could not be created.
    #[error("cannot create {path}: {source}")]
    Io {
        /// The folder.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// No run with that id.
    #[error("no run `{0}` in this store")]
    UnknownRun(String),
    /// The store was written by a newer Oloproof.
    #[error("run store schema {found} is newer than this oloproof understands ({supported})")]
    Schema {
        /// The version found.
        found: i64,
        /// The newest version this build migrates to.
        supported: i64,
    },
    /// A run's progress (claimed or finished cases, its status) could not be written; the cases
    /// recorded before are intact and the run can be resumed.
    #[error(
        "cannot write run {run_id} to the run store {location}: {detail}. The cases recorded \
         before are kept; once that is fixed, finish the run with `oloproof run --resume {run_id}`"
    )]
    Record {
        /// The store as shown to users.
        location: String,
        /// The run.
        run_id: String,
        /// What happened and what to do.
        detail: String,
        /// The backend's error.
        #[source]
        source: BackendError,
    },
    /// A setting of the store (an environment variable, a URL parameter) has a value it cannot
    /// use.
    #[error("{name}={value:?} is not {expected}")]
    Setting {
        /// The variable or parameter.
        name: String,
        /// The value found.
        value: String,
        /// What it must be.
        expected: String,
    },
    /// The store location cannot be used (`store:`/`--store`): a malformed Postgres URL, a
    /// password written into it, a password variable that is not set.
    #[error("store {location}: {message}")]
    Location {
        /// The location as given, its password (if any) hidden.
        location: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// A stored record (a case, trace, verdict, the run's settings, a comparison or diagnosis)
    /// is not the JSON this Oloproof reads: damaged, or written by an incompatible version.
    #[error("stored record of {what} is unreadable: {source}")]
    Corrupt {
        /// What was read (`case c1`, `run run_…'s settings`, `diagnosis sha256:…`).
        what: String,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// A value could not be serialised for the store (a number JSON cannot hold).
    #[error("cannot record {what}: {source}")]
    Encode {
        /// What was written (`the trace of c1`).
        what: String,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// A stored run's evaluator entry no longer builds.
    #[error(transparent)]
    StoredEvaluator(#[from] StoredEvaluatorError),
}

impl StoreError {
    /// Whether the error is the user's to fix before retrying (exit code 2): an unknown run, a
    /// bad setting or location.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            StoreError::UnknownRun(_) | StoreError::Setting { .. } | StoreError::Location { .. }
        )
    }
}

/// Result of a store operation.
pub type StoreResult<T> = std::result::Result<T, StoreError>;

/// Decodes one stored JSON record, or says which one is unreadable.
pub fn decode<T: DeserializeOwned>(json: &str, what: impl FnOnce() -> String) -> StoreResult<T> {
    serde_json::from_str(json).map_err(|source| StoreError::Corrupt {
        what: what(),
        source,
    })
}

/// Encodes one value for the store, or says which one cannot be.
pub fn encode<T: Serialize + ?Sized>(
    value: &T,
    what: impl FnOnce() -> String,
) -> StoreResult<String> {
    serde_json::to_string(value).map_err(|source| StoreError::Encode {
        what: what(),
        source,
    })
}

macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($(#[$vm])* $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The value as stored and printed.
            pub const fn as_str(&self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The value stored as `text`, if it is one.
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }
    };
}

string_enum! {
    /// Where a run stands.
    RunStatus {
        /// Created; cases are being executed (by one process or by workers).
        Running = "running",
        /// Every case executed and the summary recorded.
        Complete = "complete",
        /// Finished with cases left pending (a cost cap, errors above the allowed rate stop
        /// nothing; pending cases do).
        Incomplete = "incomplete",
        /// Stopped by Ctrl-C or SIGTERM; `oloproof run --resume` finishes it.
        Interrupted = "interrupted",
    }
}

string_enum! {
    /// Where one case of a run stands.
    CaseState {
        /// Not executed yet, or leased to a worker that has not finished it.
        Pending = "pending",
        /// Executed; its trace and verdicts are recorded.
        Done = "done",
    }
}

string_enum! {
    /// A layer of the content-addressed cache.
    CacheLayer {
        /// A case's whole execution.
        Execution = "execution",
        /// The retrieval stage.
        Retrieve = "retrieve",
        /// The generation stage.
        Generate = "generate",
        /// Judge calls.
        Judgment = "judgment",
        /// The system's token count of one output text (`max_length` in tokens).
        CountTokens = "count_tokens",
        /// One judge call's reply (shared by every evaluator making the same call).
        JudgeCall = "judge_call",
        /// The `rewrite` stage of a pipeline.
        Rewrite = "rewrite",
        /// The `rerank` stage of a pipeline.
        Rerank = "rerank",
    }
}

/// The id of a run, `run_<ULID>` for runs Oloproof creates.
///
/// Any non-empty id read back from a store or typed by a user is accepted as it is: a run id
/// that is not in the store is [`StoreError::UnknownRun`] when looked up.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunId(String);

impl RunId {
    /// A fresh id, `run_<ULID>` (sorts by creation time).
    pub fn generate() -> Self {
        RunId(format!("run_{}", ulid::Ulid::new()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for RunId {
    fn from(id: &str) -> Self {
        RunId(id.to_string())
    }
}

impl From<String> for RunId {
    fn from(id: String) -> Self {
        RunId(id)
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::ops::Deref for RunId {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// Who holds a lease: one process (`<host>-<pid>-<ULID>`), unique per invocation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WorkerId(String);

impl WorkerId {
    /// A fresh id for this process: its host name (from `HOSTNAME`, else `localhost`), its pid
    /// and a ULID, so two invocations never share one.
    pub fn generate() -> Self {
        let host = std::env::var("HOSTNAME")
            .ok()
            .filter(|h| !h.trim().is_empty())
            .unwrap_or_else(|| "localhost".into());
        WorkerId(format!(
            "{host}-{}-{}",
            std::process::id(),
            ulid::Ulid::new()
        ))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for WorkerId {
    fn from(id: &str) -> Self {
        WorkerId(id.to_string())
    }
}

impl std::fmt::Display for WorkerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One case of a run as stored, in its serialised form (read back typed by
/// [`Store::load_run`]; copied as it is by `oloproof store copy`).
#[derive(Debug, Clone, PartialEq)]
pub struct CaseRecord {
    /// Order in the case file.
    pub ord: i64,
    /// Case id.
    pub case_id: String,
    /// The case (JSON).
    pub case_json: String,
    /// Pending or done.
    pub state: CaseState,
    /// Attempt counter: how many times the case was claimed.
    pub attempt: i64,
    /// The trace (JSON), once done.
    pub trace_json: Option<String>,
    /// The cache lookups of the attempt that completed it ([`CacheCounts`] as JSON), once done
    /// (`None` for a case recorded by a store older than schema 2).
    pub cache_use_json: Option<String>,
}

/// One verdict row, serialised.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictRecord {
    /// Case id.
    pub case_id: String,
    /// Criterion.
    pub criterion: String,
    /// The verdict with its detail (JSON).
    pub verdict_json: String,
}

/// A new run to record.
#[derive(Debug, Clone)]
pub struct NewRun<'a> {
    /// Its id.
    pub id: &'a RunId,
    /// Config path as given.
    pub config_path: &'a str,
    /// The resolved settings.
    pub settings: &'a RunSettings,
    /// Identity hash of the settings.
    pub identity: &'a str,
    /// The system's hello (or what stands for it, for a dataset), as JSON.
    pub system_json: &'a str,
    /// Parent run, if a child run.
    pub parent: Option<&'a str>,
    /// The cases, in order (all pending).
    pub cases: &'a [&'a Case],
}

/// How to claim cases.
#[derive(Debug, Clone)]
pub struct Claim<'a> {
    /// Who claims (the lease holder).
    pub worker: &'a WorkerId,
    /// At most this many cases.
    pub limit: usize,
    /// For how long (extended by [`RunStore::heartbeat`]).
    pub lease: Duration,
    /// Respect other holders' unexpired leases (workers sharing a run); `false` takes every
    /// pending case, leased or not (`run --resume`: the process that held them is gone).
    pub respect_leases: bool,
    /// A case claimed more than this many times is handed back with
    /// [`ClaimedCase::exhausted`] set, to be recorded as an error instead of run again; `None`
    /// never gives up.
    pub max_attempts: Option<u32>,
}

/// A case claimed for one attempt.
#[derive(Debug, Clone)]
pub struct ClaimedCase {
    /// Order in the run.
    pub ord: i64,
    /// The case.
    pub case: Case,
    /// This attempt's number (1 for the first claim).
    pub attempt: i64,
    /// The attempt exceeds the claim's `max_attempts`: record the case as an error.
    pub exhausted: bool,
}

/// A cache entry to add: `(layer, key, value)`; values are opaque to the store (JSON written by
/// the engine) and the first value written for a key is kept.
pub type CacheEntry = (CacheLayer, String, String);

/// Everything written when one case finishes.
#[derive(Debug, Clone)]
pub struct CaseResult<'a> {
    /// Case id.
    pub case_id: &'a str,
    /// The attempt that produced it; a stale attempt (or a lease now held by another worker)
    /// writes nothing.
    pub attempt: i64,
    /// The trace.
    pub trace: &'a Trace,
    /// [`crate::stored_trace::stored_json`] of `trace`, when the caller has it already (the
    /// run writes the same text as the case's execution cache entry); `None`: the store
    /// serialises `trace` so.
    pub trace_json: Option<&'a str>,
    /// The verdicts.
    pub verdicts: &'a [CriterionVerdict],
    /// The cache lookups this case made (summed over workers for a run's summary).
    pub cache_use: CacheCounts,
}

/// A stored diagnosis or comparison: its content-addressed id and canonical content.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedAnalysis {
    /// `sha256:<hex>`.
    pub id: String,
    /// The run it diagnoses, or the candidate run of a comparison.
    pub run_id: String,
    /// The baseline run of a comparison.
    pub baseline: Option<String>,
    /// When it was (last) recorded, Unix milliseconds.
    pub created_ms: i64,
    /// Its content (JSON).
    pub content_json: String,
}

/// A stored judge calibration.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrationRecord {
    /// Content-addressed id.
    pub id: String,
    /// The judge's name.
    pub judge: String,
    /// Hash of what was calibrated (judge settings, evaluator type and template versions).
    pub identity: String,
    /// Whether it met `min_kappa`.
    pub passed: bool,
    /// When it was recorded, Unix milliseconds.
    pub created_ms: i64,
    /// Its content (JSON).
    pub content_json: String,
}

/// A stored monitor report (`oloproof monitor`).
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorRecord {
    /// `mon_<ULID>` ([`MonitorRecord::new_id`]): unique, and sorts by creation time.
    pub id: String,
    /// When it was recorded, Unix milliseconds.
    pub created_ms: i64,
    /// The traffic file as the user named it.
    pub traffic: String,
    /// The report ([`MonitorReport`] as JSON).
    pub content_json: String,
}

impl MonitorRecord {
    /// The prefix of every monitor report id.
    pub const PREFIX: &'static str = "mon_";

    /// A fresh id, `mon_<ULID>`.
    pub fn new_id() -> String {
        format!("{}{}", Self::PREFIX, ulid::Ulid::new())
    }

    /// Whether `id` names a monitor report (rather than a run or an analysis).
    pub fn is_id(id: &str) -> bool {
        id.starts_with(Self::PREFIX)
    }

    /// The report, decoded; a report that does not decode is [`StoreError::Corrupt`] naming
    /// it.
    pub fn report(&self) -> StoreResult<MonitorReport> {
        decode(&self.content_json, || format!("monitor report {}", self.id))
    }
}

/// A whole run in serialised form, for copying between stores.
#[derive(Debug, Clone)]
pub struct RunExport {
    /// The run's row (status, summary and counts as stored).
    pub record: RunRecord,
    /// Its `finished_ms`, if finished.
    pub finished_ms: Option<i64>,
    /// Its cases.
    pub cases: Vec<CaseRecord>,
    /// Its verdicts.
    pub verdicts: Vec<VerdictRecord>,
}

/// Runs and their cases; the cases are the work queue.
pub trait RunStore: Send {
    /// The store as shown to users (a path, or a Postgres URL without its password).
    fn location(&self) -> String;

    /// Records a new run and its cases (all pending, attempt 0).
    fn create_run(&mut self, run: &NewRun<'_>) -> StoreResult<()>;

    /// Claims up to `claim.limit` pending cases of `run_id` in case order whose lease is free
    /// (never leased, or expired; any lease of another holder when `respect_leases` is false),
    /// in one transaction: each gets attempt + 1 and a lease of `claim.lease` held by
    /// `claim.worker`. A case `claim.worker` already holds is never claimed again by it.
    /// Empty when nothing is left to claim.
    fn claim_batch(&mut self, run_id: &RunId, claim: &Claim<'_>) -> StoreResult<Vec<ClaimedCase>>;

    /// How many cases [`RunStore::claim_batch`] with `claim` would find now, counted up to
    /// `cap` (a bounded scan that sizes the next claim, not a census: a run of millions of
    /// cases costs no more than `cap` index entries).
    fn claimable(&mut self, run_id: &RunId, claim: &Claim<'_>, cap: usize) -> StoreResult<usize>;

    /// Extends every lease `worker` holds on pending cases of `run_id` to `lease` from now;
    /// returns how many.
    fn heartbeat(&mut self, run_id: &RunId, worker: &WorkerId, lease: Duration)
        -> StoreResult<u64>;

    /// Writes finished cases in one transaction (each case all-or-nothing: trace and
    /// verdicts; their new cache entries go through
    /// [`CacheStore::put_cache_entries`]). A case is written only if it is pending under `attempt` and `worker`
    /// holds its lease; returns, per case, whether it was written. Re-sending a result that was
    /// already written (a retry after a lost connection) returns `true` again and writes
    /// nothing twice.
    fn complete_cases(
        &mut self,
        run_id: &RunId,
        worker: &WorkerId,
        results: &[CaseResult<'_>],
    ) -> StoreResult<Vec<bool>>;

    /// Marks a running run finished with its summary; `false`, writing nothing, when the run
    /// is not running (another worker finished it first).
    fn finish_run(
        &mut self,
        run_id: &RunId,
        status: RunStatus,
        summary: &RunSummary,
    ) -> StoreResult<bool>;

    /// Marks a running run as interrupted (Ctrl-C, SIGTERM): its finished cases stay, the
    /// others are pending. A run that already finished keeps its status.
    fn mark_interrupted(&mut self, run_id: &RunId) -> StoreResult<()>;

    /// Marks a run as running again (resume, or workers joining a finished-incomplete run).
    fn reopen_run(&mut self, run_id: &RunId) -> StoreResult<()>;

    /// Every run, newest first.
    fn list_runs(&self) -> StoreResult<Vec<RunRecord>>;

    /// One run ([`StoreError::UnknownRun`] if absent).
    fn run(&self, run_id: &RunId) -> StoreResult<RunRecord>;

    /// The cases of a run, in order.
    fn cases(&self, run_id: &RunId) -> StoreResult<Vec<CaseRecord>>;

    /// The verdicts of a run (case order, then criterion).
    fn verdicts(&self, run_id: &RunId) -> StoreResult<Vec<VerdictRecord>>;

    /// A run with everything it holds, serialised (for `store copy`).
    fn export_run(&self, run_id: &RunId) -> StoreResult<RunExport>;

    /// Writes a run exported from another store as it is; `false`, writing nothing, if this
    /// store already has a run with that id.
    fn import_run(&mut self, run: &RunExport) -> StoreResult<bool>;
}

/// The content-addressed caches.
pub trait CacheStore: Send {
    /// A cache entry, if present.
    fn cache_get(&self, layer: CacheLayer, key: &str) -> StoreResult<Option<String>>;

    /// Adds cache entries outside a case (judge calls made by `calibrate`, `compare`); a key
    /// already present keeps its value.
    fn put_cache_entries(&mut self, entries: &[CacheEntry]) -> StoreResult<()>;

    /// Starts a read snapshot: lookups until [`end_read`](Self::end_read) read the same state,
    /// and a backend that takes a lock per statement takes it once (SQLite). A backend without
    /// such a cost does nothing.
    fn begin_read(&self) -> StoreResult<()>;

    /// Ends the snapshot of [`begin_read`](Self::begin_read).
    fn end_read(&self);

    /// Up to `limit` cache entries after `after` (in `(layer, key)` order), for `store copy`.
    fn cache_page(
        &self,
        after: Option<(CacheLayer, String)>,
        limit: usize,
    ) -> StoreResult<Vec<CacheEntry>>;
}

/// Diagnoses, comparisons, calibrations and monitor reports.
pub trait ArtifactStore: Send {
    /// Records a diagnosis (re-recording the same id refreshes its time and content).
    fn save_diagnosis(&mut self, id: &str, run_id: &str, content_json: &str) -> StoreResult<()>;

    /// Records a comparison.
    fn save_comparison(
        &mut self,
        id: &str,
        candidate: &str,
        baseline: &str,
        content_json: &str,
    ) -> StoreResult<()>;

    /// A diagnosis by id.
    fn diagnosis(&self, id: &str) -> StoreResult<Option<RecordedAnalysis>>;

    /// The diagnoses of a run, newest first.
    fn diagnoses_of(&self, run_id: &str) -> StoreResult<Vec<RecordedAnalysis>>;

    /// Every recorded comparison, newest first.
    fn list_comparisons(&self) -> StoreResult<Vec<RecordedAnalysis>>;

    /// Every recorded diagnosis, newest first.
    fn list_diagnoses(&self) -> StoreResult<Vec<RecordedAnalysis>>;

    /// A comparison by id.
    fn comparison(&self, id: &str) -> StoreResult<Option<RecordedAnalysis>>;

    /// Records a judge calibration.
    fn save_calibration(
        &mut self,
        id: &str,
        judge: &str,
        identity: &str,
        passed: bool,
        content_json: &str,
    ) -> StoreResult<()>;

    /// The newest calibration recorded for `identity`: `(id, passed, content_json)`.
    fn latest_calibration(&self, identity: &str) -> StoreResult<Option<(String, bool, String)>>;

    /// Every calibration, oldest first (for `store copy`).
    fn list_calibrations(&self) -> StoreResult<Vec<CalibrationRecord>>;

    /// Records a monitor report (its `id` from [`MonitorRecord::new_id`], its time now).
    fn save_monitor(&mut self, id: &str, traffic: &str, content_json: &str) -> StoreResult<()>;

    /// A monitor report by id.
    fn monitor(&self, id: &str) -> StoreResult<Option<MonitorRecord>>;

    /// Every monitor report, newest first.
    fn list_monitors(&self) -> StoreResult<Vec<MonitorRecord>>;

    /// Writes artifacts copied from another store, keeping their times; an id already present
    /// keeps what it holds.
    fn import_artifacts(
        &mut self,
        diagnoses: &[RecordedAnalysis],
        comparisons: &[RecordedAnalysis],
        calibrations: &[CalibrationRecord],
        monitors: &[MonitorRecord],
    ) -> StoreResult<()>;
}

/// The encoding of a collected OTLP/HTTP request body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpEncoding {
    /// `application/x-protobuf`: a binary `ExportTraceServiceRequest` (or
    /// `ExportLogsServiceRequest`).
    Protobuf,
    /// `application/json`: the same request in OTLP's JSON mapping.
    Json,
}

impl OtlpEncoding {
    /// The stored text (`protobuf`, `json`).
    pub fn as_str(self) -> &'static str {
        match self {
            OtlpEncoding::Protobuf => "protobuf",
            OtlpEncoding::Json => "json",
        }
    }

    /// The `Content-Type` this encoding is read as.
    pub fn content_type(self) -> &'static str {
        match self {
            OtlpEncoding::Protobuf => "application/x-protobuf",
            OtlpEncoding::Json => "application/json",
        }
    }

    /// Parses the stored text.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "protobuf" => Some(OtlpEncoding::Protobuf),
            "json" => Some(OtlpEncoding::Json),
            _ => None,
        }
    }
}

/// The OpenTelemetry signal a collected request carries: what it was posted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OtlpSignal {
    /// `POST /v1/traces`: an `ExportTraceServiceRequest`.
    #[default]
    Traces,
    /// `POST /v1/logs`: an `ExportLogsServiceRequest` (the GenAI instrumentations' message
    /// content and evaluation events).
    Logs,
}

impl OtlpSignal {
    /// The stored text (`traces`, `logs`).
    pub fn as_str(self) -> &'static str {
        match self {
            OtlpSignal::Traces => "traces",
            OtlpSignal::Logs => "logs",
        }
    }

    /// Parses the stored text.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "traces" => Some(OtlpSignal::Traces),
            "logs" => Some(OtlpSignal::Logs),
            _ => None,
        }
    }

    /// The OTLP/HTTP path it is posted to (`/v1/traces`, `/v1/logs`).
    pub fn path(self) -> &'static str {
        match self {
            OtlpSignal::Traces => "/v1/traces",
            OtlpSignal::Logs => "/v1/logs",
        }
    }
}

/// One OTLP/HTTP request body received by `oloproof collect`, kept as it was sent (after
/// its `Content-Encoding` was undone), so that importing it later runs the same reader as a
/// file and locates every problem in it.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectedRequest {
    /// Its place in arrival order (1, 2, …), given by the store; 0 before it is stored.
    pub seq: i64,
    /// When it was received, Unix milliseconds.
    pub received_ms: i64,
    /// The signal: spans or log records.
    pub signal: OtlpSignal,
    /// How the body is encoded.
    pub encoding: OtlpEncoding,
    /// The spans (log records, for logs) the collector read from it when it arrived.
    pub spans: i64,
    /// The body.
    pub body: Vec<u8>,
}

/// OTLP requests received by `oloproof collect`, in arrival order.
pub trait CollectStore: Send {
    /// Appends requests (one transaction) and returns their sequence numbers.
    fn append_collected(&mut self, requests: &[CollectedRequest]) -> StoreResult<Vec<i64>>;

    /// Up to `limit` requests with a sequence number above `after`, in order.
    fn collected_page(&self, after: i64, limit: usize) -> StoreResult<Vec<CollectedRequest>>;
}

/// A whole store: runs, caches, artifacts and collected traces.
pub trait Store: RunStore + CacheStore + ArtifactStore + CollectStore {}

impl<T: RunStore + CacheStore + ArtifactStore + CollectStore> Store for T {}

/// A read snapshot of [`CacheStore::begin_read`]; ends when dropped.
pub struct ReadSnapshot<'a> {
    store: &'a dyn CacheStore,
}

impl<'a> ReadSnapshot<'a> {
    /// Starts a snapshot on `store`.
    pub fn begin(store: &'a dyn CacheStore) -> StoreResult<Self> {
        store.begin_read()?;
        Ok(ReadSnapshot { store })
    }
}

impl Drop for ReadSnapshot<'_> {
    fn drop(&mut self) {
        self.store.end_read();
    }
}

impl dyn Store + '_ {
    /// Reads a stored run back: its record, its settings, and every case in order with its
    /// trace (`None` while pending) and verdicts; the criteria (with their summary kinds, which
    /// `evaluators` decides) in evaluator order.
    ///
    /// An unknown run is [`StoreError::UnknownRun`]; a row that does not decode is
    /// [`StoreError::Corrupt`] naming it (`case c1`, `the trace of c1`, `a verdict of c1`).
    pub fn load_run(&self, run_id: &str, evaluators: &dyn Evaluators) -> StoreResult<LoadedRun> {
        self.load_run_with(run_id, evaluators, |_| true, |_| {})
    }

    /// [`load_run`](Self::load_run) reading only part of the run: the cases whose id `select`
    /// keeps (the others are not decoded, and are absent from [`LoadedRun::cases`]), each passed
    /// through `shape` as soon as it is decoded, so that a reader of a large run can drop what
    /// it does not need (texts) before the next case is read.
    pub fn load_run_with(
        &self,
        run_id: &str,
        evaluators: &dyn Evaluators,
        mut select: impl FnMut(&str) -> bool,
        mut shape: impl FnMut(&mut LoadedCase),
    ) -> StoreResult<LoadedRun> {
        let id = RunId::from(run_id);
        let record = self.run(&id)?;
        let settings: RunSettings =
            decode(&record.settings_json, || format!("run {run_id}'s settings"))?;
        let criteria = evaluators.criteria(&settings.options.evaluators)?;
        let rows = self.cases(&id)?;
        let selected: Vec<bool> = rows.iter().map(|r| select(&r.case_id)).collect();
        let wanted: HashSet<&str> = rows
            .iter()
            .zip(&selected)
            .filter(|(_, keep)| **keep)
            .map(|(r, _)| r.case_id.as_str())
            .collect();
        let mut by_case: HashMap<String, Vec<CriterionVerdict>> = HashMap::new();
        for v in self.verdicts(&id)? {
            if !wanted.contains(v.case_id.as_str()) {
                continue;
            }
            let parsed = decode(&v.verdict_json, || format!("a verdict of {}", v.case_id))?;
            by_case.entry(v.case_id).or_default().push(parsed);
        }
        drop(wanted);
        let mut cases = Vec::new();
        // Each row's JSON is dropped once decoded and shaped.
        for (row, keep) in rows.into_iter().zip(selected) {
            if !keep {
                continue;
            }
            let case = decode(&row.case_json, || format!("case {}", row.case_id))?;
            let trace = match &row.trace_json {
                Some(t) => Some(decode(t, || format!("the trace of {}", row.case_id))?),
                None => None,
            };
            let verdicts = by_case.remove(&row.case_id).unwrap_or_default();
            let mut loaded = (case, trace, verdicts);
            shape(&mut loaded);
            cases.push(loaded);
        }
        Ok(LoadedRun {
            record,
            settings,
            cases,
            criteria,
        })
    }

    /// The cache lookups of a run's done cases, summed (what workers on many machines did
    /// between them); cases recorded before schema 2 count nothing.
    pub fn cache_use_of(&self, run_id: &str) -> StoreResult<CacheCounts> {
        let mut total = CacheCounts::default();
        for row in self.cases(&RunId::from(run_id))? {
            let Some(json) = &row.cache_use_json else {
                continue;
            };
            let c: CacheCounts = decode(json, || format!("the cache use of {}", row.case_id))?;
            total += c;
        }
        Ok(total)
    }

    /// Reads a recorded comparison back (`id` with or without the `sha256:` prefix); `None`
    /// when the store has no such comparison.
    pub fn load_comparison(&self, id: &str) -> StoreResult<Option<Comparison>> {
        let id = if id.starts_with("sha256:") {
            id.to_string()
        } else {
            format!("sha256:{id}")
        };
        let Some(record) = self.comparison(&id)? else {
            return Ok(None);
        };
        decode(&record.content_json, || format!("comparison {id}")).map(Some)
    }

    /// Reads a recorded diagnosis back by its full id (`sha256:…`); `None` when the store has
    /// no such diagnosis.
    pub fn load_diagnosis(&self, id: &str) -> StoreResult<Option<Diagnosis>> {
        match self.diagnosis(id)? {
            Some(d) => decode(&d.content_json, || format!("diagnosis {id}")).map(Some),
            None => Ok(None),
        }
    }

    /// Reads a recorded monitor report back by id (`mon_…`); `None` when the store has no such
    /// report.
    pub fn load_monitor(&self, id: &str) -> StoreResult<Option<MonitorReport>> {
        match self.monitor(id)? {
            Some(m) => m.report().map(Some),
            None => Ok(None),
        }
    }

    /// Every recorded diagnosis of `run_id`, newest first; one that does not decode is an error
    /// naming it.
    pub fn load_diagnoses_of(&self, run_id: &str) -> StoreResult<Vec<Diagnosis>> {
        self.diagnoses_of(run_id)?
            .iter()
            .map(|a| decode(&a.content_json, || format!("diagnosis {}", a.id)))
            .collect()
    }
}

/// Where a store is: `store:` in `oloproof.yaml` or `--store`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// A SQLite file.
    Sqlite(std::path::PathBuf),
    /// A Postgres database: a `postgres://` (or `postgresql://`) URL with no password in it;
    /// the password comes from `PGPASSWORD`, or from the variable named by the URL's
    /// `password_env` parameter.
    Postgres(String),
}

impl StoreLocation {
    /// `value` read as a location: a `postgres://`/`postgresql://` URL, else a path relative to
    /// `dir`.
    pub fn parse(value: &str, dir: &std::path::Path) -> Self {
        if Self::is_url(value) {
            StoreLocation::Postgres(value.to_string())
        } else {
            StoreLocation::Sqlite(dir.join(value))
        }
    }

    /// Whether `value` names a Postgres database.
    pub fn is_url(value: &str) -> bool {
        value.starts_with("postgres://") || value.starts_with("postgresql://")
    }

    /// The SQLite file, if it is one.
    pub fn sqlite_path(&self) -> Option<&std::path::Path> {
        match self {
            StoreLocation::Sqlite(p) => Some(p),
            StoreLocation::Postgres(_) => None,
        }
    }
}

impl std::fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreLocation::Sqlite(p) => write!(f, "{}", p.display()),
            StoreLocation::Postgres(url) => f.write_str(&redact_url(url)),
        }
    }
}

/// `url` with any password in it replaced by `***` (`postgres://u:***@host/db`): what error
/// messages and logs show of a URL.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    // A `password=` query parameter is hidden too.
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some(("password", _)) => "password=***".to_string(),
                    _ => kv.to_string(),
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_round_trip_through_their_stored_text() {
        for s in RunStatus::ALL {
            assert_eq!(RunStatus::parse(s.as_str()), Some(*s));
            assert_eq!(serde_json::to_string(s).unwrap(), format!("\"{s}\""));
        }
        for s in CaseState::ALL {
            assert_eq!(CaseState::parse(s.as_str()), Some(*s));
        }
        for l in CacheLayer::ALL {
            assert_eq!(CacheLayer::parse(l.as_str()), Some(*l));
        }
        assert_eq!(RunStatus::parse("done"), None);
        assert!(RunStatus::Running == "running");
    }

    #[test]
    fn urls_are_shown_without_their_password() {
        assert_eq!(
            redact_url("postgres://ana:s3cret@db.example:5432/evals?sslmode=require"),
            "postgres://ana:***@db.example:5432/evals?sslmode=require"
        );
        assert_eq!(
            redact_url("postgres://ana@db/evals?password=s3cret&sslmode=disable"),
            "postgres://ana@db/evals?password=***&sslmode=disable"
        );
        assert_eq!(redact_url("postgres://db/evals"), "postgres://db/evals");
        let loc = StoreLocation::parse("postgresql://u:p@h/d", std::path::Path::new("."));
        assert_eq!(loc.to_string(), "postgresql://u:***@h/d");
        assert_eq!(
            StoreLocation::parse("runs.db", std::path::Path::new("proj")),
            StoreLocation::Sqlite("proj/runs.db".into())
        );
    }

    #[test]
    fn worker_ids_are_unique_per_invocation() {
        assert_ne!(WorkerId::generate(), WorkerId::generate());
        assert!(RunId::generate().as_str().starts_with("run_"));
    }

    #[test]
    fn monitor_ids_are_prefixed_and_unique() {
        let (a, b) = (MonitorRecord::new_id(), MonitorRecord::new_id());
        assert_ne!(a, b);
        assert!(MonitorRecord::is_id(&a) && a.len() == 4 + 26, "{a}");
        assert!(!MonitorRecord::is_id("run_01"));
        let bad = MonitorRecord {
            id: a.clone(),
            created_ms: 0,
            traffic: "t.jsonl".into(),
            content_json: "{".into(),
        };
        assert!(
            matches!(bad.report(), Err(StoreError::Corrupt { what, .. }) if what == format!("monitor report {a}"))
        );
    }
}
