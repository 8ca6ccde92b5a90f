//! The run store and the content-addressed caches, in SQLite (bundled).
//!
//! One database file (default `.oloproof/oloproof.db` beside the config) holds:
//! - `runs`: one row per run: its settings snapshot, identity hash, system info, status, summary;
//! - `run_cases`: one row per case of a run: the case as it was, a state (`pending`/`done`), an
//!   `attempt` counter and `lease_until`, and the trace. Results are written only by the current
//!   attempt, so the table can double as a work queue (a Postgres backend would claim rows with
//!   `FOR UPDATE SKIP LOCKED`);
//! - `verdicts`: one row per case and criterion;
//! - `cache`: content-addressed entries per layer (`execution`, `retrieve`, `generate`,
//!   `judgment`), keyed by sha256 of canonical JSON. Errors are never written here.
//!
//! A case's trace, verdicts and cache entries are written in one transaction as soon as the case
//! finishes, so a killed run loses at most the cases in flight and resumes from the rest.
//!
//! A failed write (disk full, the file locked by another process for longer than
//! [`ENV_BUSY_TIMEOUT`] allows, a damaged file) rolls back its transaction, so the cases recorded
//! before stay intact; every error says what happened and what to do, and a write error during a
//! run names the run to resume. A store written by an older Oloproof gets the tables added since
//! when it is opened for writing.
//!
//! [`SqliteStore`] is the whole API: [`SqliteStore::open`] for the writer (one per run),
//! [`SqliteStore::open_reader`] for a worker thread's cache lookups, [`SqliteStore::load_run`]
//! for a stored run read back typed. The store decodes its rows but computes nothing: it never
//! evaluates, summarises or prints.
//!
//! ```
//! use std::time::Duration;
//! use oloproof_store::{CaseResult, NewRun, SqliteStore};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let mut store = SqliteStore::open(&dir.path().join("oloproof.db")).unwrap();
//! let cases = [("refund".to_string(), r#"{"id":"refund","input":{}}"#.to_string())];
//! store
//!     .create_run(&NewRun {
//!         id: "run_01",
//!         config_path: "oloproof.yaml",
//!         settings_json: "{}",
//!         identity: "sha256:…",
//!         system_json: "{}",
//!         parent: None,
//!         cases: &cases,
//!     })
//!     .unwrap();
//!
//! // Claiming the pending cases twice (a resume after a crash) makes attempt 2 the current one.
//! assert_eq!(store.claim_pending("run_01", Duration::from_secs(60)).unwrap()[0].attempt, 1);
//! assert_eq!(store.claim_pending("run_01", Duration::from_secs(60)).unwrap()[0].attempt, 2);
//!
//! let verdicts = [("token_f1".to_string(), r#"{"status":"score","value":1.0}"#.to_string())];
//! let cache = [("execution".to_string(), "key-1".to_string(), r#"{"answer":"14 days"}"#.to_string())];
//! let result = |attempt| CaseResult {
//!     case_id: "refund",
//!     attempt,
//!     trace_json: "{}",
//!     verdicts: &verdicts,
//!     cache: &cache,
//! };
//! // The stale attempt writes nothing; the current one writes trace, verdicts and cache together.
//! assert!(!store.complete_case("run_01", &result(1)).unwrap());
//! assert_eq!(store.cache_get("execution", "key-1").unwrap(), None);
//! assert!(store.complete_case("run_01", &result(2)).unwrap());
//! assert_eq!(
//!     store.cache_get("execution", "key-1").unwrap().as_deref(),
//!     Some(r#"{"answer":"14 days"}"#)
//! );
//! assert_eq!(store.verdicts("run_01").unwrap().len(), 1);
//! assert_eq!(store.run("run_01").unwrap().done_count, 1);
//! ```
#![warn(missing_docs)]

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use oloproof_core::run::RunRecord;
use rusqlite::{params, Connection, OptionalExtension};

mod records;

/// Current schema version, stored in `meta`.
pub const SCHEMA_VERSION: i64 = 1;

/// How long to wait for a lock held by another process before giving up, in seconds (default
/// [`DEFAULT_BUSY_TIMEOUT_S`]).
pub const ENV_BUSY_TIMEOUT: &str = "OLOPROOF_STORE_BUSY_TIMEOUT_S";
/// The default of [`ENV_BUSY_TIMEOUT`].
pub const DEFAULT_BUSY_TIMEOUT_S: f64 = 30.0;

/// The wait for locks: [`ENV_BUSY_TIMEOUT`] when set, else [`DEFAULT_BUSY_TIMEOUT_S`].
fn busy_timeout() -> Result<Duration> {
    let Ok(value) = std::env::var(ENV_BUSY_TIMEOUT) else {
        return Ok(Duration::from_secs_f64(DEFAULT_BUSY_TIMEOUT_S));
    };
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0 && *s <= 86_400.0)
        .map(Duration::from_secs_f64)
        .ok_or(StoreError::BusyTimeout { value })
}

/// What a SQLite failure means for the user and what to do about it.
fn advice(source: &rusqlite::Error, path: &str) -> String {
    use rusqlite::ErrorCode as C;
    match source.sqlite_error_code() {
        Some(C::DiskFull) => "the disk holding it is full: free some space".into(),
        Some(C::DatabaseBusy | C::DatabaseLocked) => format!(
            "another process holds a lock on it (another oloproof command writing to this store, \
             or a program such as `sqlite3` with a transaction open) and did not release it in \
             time ({ENV_BUSY_TIMEOUT}, {DEFAULT_BUSY_TIMEOUT_S} s by default): let it finish or \
             close it"
        ),
        Some(C::DatabaseCorrupt | C::NotADatabase) => format!(
            "the file is damaged (truncated or overwritten) or is not an Oloproof run store; it \
             was left as it is: restore it from a backup, or salvage what is readable with \
             `sqlite3 {path} .recover | sqlite3 recovered.db` and put recovered.db in its place"
        ),
        Some(C::ReadOnly | C::PermissionDenied | C::CannotOpen) => {
            "it cannot be opened for writing: check the permissions of the file and its folder"
                .into()
        }
        Some(C::SystemIoFailure) => {
            "the operating system failed to read or write it: check the disk".into()
        }
        _ => String::new(),
    }
}

fn with_advice(source: &rusqlite::Error, path: &str) -> String {
    match advice(source, path) {
        a if a.is_empty() => source.to_string(),
        a => format!("{source}: {a}"),
    }
}

/// Store failures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// SQLite failed.
    #[error("run store {path}: {}", with_advice(source, path))]
    Sqlite {
        /// The database path.
        path: String,
        /// The SQLite error.
        #[source]
        source: rusqlite::Error,
    },
    /// The folder could not be created.
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
    /// The database was written by a newer Oloproof.
    #[error("run store schema {found} is newer than this oloproof understands ({SCHEMA_VERSION})")]
    Schema {
        /// The version found.
        found: i64,
    },
    /// A run's progress (claimed or finished cases, its status) could not be written; the cases
    /// recorded before are intact and the run can be resumed.
    #[error(
        "cannot write run {run_id} to the run store {path}: {}. The cases recorded before are \
         kept; once that is fixed, finish the run with `oloproof run --resume {run_id}`",
        with_advice(source, path)
    )]
    Record {
        /// The database path.
        path: String,
        /// The run.
        run_id: String,
        /// The SQLite error.
        #[source]
        source: rusqlite::Error,
    },
    /// [`ENV_BUSY_TIMEOUT`] is not a number of seconds.
    #[error("{ENV_BUSY_TIMEOUT}={value:?} is not a number of seconds between 0 and 86400")]
    BusyTimeout {
        /// The value found.
        value: String,
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
    /// A stored run's evaluator entry no longer builds.
    #[error(transparent)]
    StoredEvaluator(#[from] oloproof_core::run::StoredEvaluatorError),
}

type Result<T> = std::result::Result<T, StoreError>;

/// One case of a run as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseRecord {
    /// Order in the case file.
    pub ord: i64,
    /// Case id.
    pub case_id: String,
    /// The case (JSON).
    pub case_json: String,
    /// `pending` or `done`.
    pub state: String,
    /// Attempt counter.
    pub attempt: i64,
    /// The trace (JSON), once done.
    pub trace_json: Option<String>,
}

/// One verdict row.
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
    /// `run_<ULID>`.
    pub id: &'a str,
    /// Config path as given.
    pub config_path: &'a str,
    /// Settings snapshot.
    pub settings_json: &'a str,
    /// Identity hash.
    pub identity: &'a str,
    /// System hello.
    pub system_json: &'a str,
    /// Parent run, if a child run.
    pub parent: Option<&'a str>,
    /// `(case_id, case_json)` in order.
    pub cases: &'a [(String, String)],
}

/// Everything written when one case finishes.
#[derive(Debug, Clone)]
pub struct CaseResult<'a> {
    /// Case id.
    pub case_id: &'a str,
    /// The attempt that produced it; a stale attempt writes nothing.
    pub attempt: i64,
    /// Trace JSON.
    pub trace_json: &'a str,
    /// `(criterion, verdict_json)`.
    pub verdicts: &'a [(String, String)],
    /// `(layer, key, value_json)` cache entries to add.
    pub cache: &'a [(String, String, String)],
}

/// The SQLite run store.
pub struct SqliteStore {
    conn: Connection,
    path: String,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis() as i64
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path`.
    pub fn open(path: &Path) -> Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
                path: dir.display().to_string(),
                source,
            })?;
        }
        let shown = path.display().to_string();
        let conn = Connection::open(path).map_err(|source| StoreError::Sqlite {
            path: shown.clone(),
            source,
        })?;
        let store = SqliteStore { conn, path: shown };
        store.init()?;
        Ok(store)
    }

    /// Opens an existing store read-only for cache lookups from another thread.
    pub fn open_reader(path: &Path) -> Result<Self> {
        let shown = path.display().to_string();
        let conn = Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| StoreError::Sqlite {
            path: shown.clone(),
            source,
        })?;
        conn.busy_timeout(busy_timeout()?)
            .map_err(|source| StoreError::Sqlite {
                path: shown.clone(),
                source,
            })?;
        Ok(SqliteStore { conn, path: shown })
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |source| StoreError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    fn record_error(&self, run_id: &str, source: rusqlite::Error) -> StoreError {
        StoreError::Record {
            path: self.path.clone(),
            run_id: run_id.to_string(),
            source,
        }
    }

    fn init(&self) -> Result<()> {
        self.conn
            .busy_timeout(busy_timeout()?)
            .map_err(self.err())?;
        self.conn
            .execute_batch(
                "PRAGMA journal_mode=WAL;
                 PRAGMA synchronous=NORMAL;
                 PRAGMA mmap_size=268435456;
                 CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
                 CREATE TABLE IF NOT EXISTS runs(
                   id TEXT PRIMARY KEY,
                   created_ms INTEGER NOT NULL,
                   status TEXT NOT NULL,
                   config_path TEXT NOT NULL,
                   settings_json TEXT NOT NULL,
                   identity TEXT NOT NULL,
                   system_json TEXT NOT NULL,
                   summary_json TEXT,
                   parent TEXT,
                   finished_ms INTEGER);
                 CREATE TABLE IF NOT EXISTS run_cases(
                   run_id TEXT NOT NULL REFERENCES runs(id),
                   ord INTEGER NOT NULL,
                   case_id TEXT NOT NULL,
                   case_json TEXT NOT NULL,
                   state TEXT NOT NULL DEFAULT 'pending',
                   attempt INTEGER NOT NULL DEFAULT 0,
                   lease_until INTEGER,
                   trace_json TEXT,
                   PRIMARY KEY(run_id, case_id));
                 CREATE INDEX IF NOT EXISTS run_cases_state ON run_cases(run_id, state, ord);
                 CREATE TABLE IF NOT EXISTS verdicts(
                   run_id TEXT NOT NULL,
                   case_id TEXT NOT NULL,
                   criterion TEXT NOT NULL,
                   verdict_json TEXT NOT NULL,
                   PRIMARY KEY(run_id, case_id, criterion));
                 CREATE TABLE IF NOT EXISTS diagnoses(
                   id TEXT PRIMARY KEY,
                   run_id TEXT NOT NULL,
                   created_ms INTEGER NOT NULL,
                   content_json TEXT NOT NULL);
                 CREATE INDEX IF NOT EXISTS diagnoses_run ON diagnoses(run_id, created_ms);
                 CREATE TABLE IF NOT EXISTS comparisons(
                   id TEXT PRIMARY KEY,
                   candidate TEXT NOT NULL,
                   baseline TEXT NOT NULL,
                   created_ms INTEGER NOT NULL,
                   content_json TEXT NOT NULL);
                 CREATE TABLE IF NOT EXISTS calibrations(
                   id TEXT PRIMARY KEY,
                   judge TEXT NOT NULL,
                   identity TEXT NOT NULL,
                   passed INTEGER NOT NULL,
                   created_ms INTEGER NOT NULL,
                   content_json TEXT NOT NULL);
                 CREATE INDEX IF NOT EXISTS calibrations_identity ON calibrations(identity, created_ms);
                 CREATE TABLE IF NOT EXISTS cache(
                   layer TEXT NOT NULL,
                   key TEXT NOT NULL,
                   value TEXT NOT NULL,
                   created_ms INTEGER NOT NULL,
                   PRIMARY KEY(layer, key));",
            )
            .map_err(self.err())?;
        let found: Option<String> = self
            .conn
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(self.err())?;
        match found.and_then(|v| v.parse::<i64>().ok()) {
            Some(v) if v > SCHEMA_VERSION => return Err(StoreError::Schema { found: v }),
            Some(_) => {}
            None => {
                self.conn
                    .execute(
                        "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?1)",
                        [SCHEMA_VERSION.to_string()],
                    )
                    .map_err(self.err())?;
            }
        }
        Ok(())
    }

    /// Records a new run and its cases (all `pending`).
    pub fn create_run(&mut self, run: &NewRun<'_>) -> Result<()> {
        let path = self.path.clone();
        let e = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(e)?;
        tx.execute(
            "INSERT INTO runs(id, created_ms, status, config_path, settings_json, identity, system_json, parent)
             VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7)",
            params![run.id, now_ms(), run.config_path, run.settings_json, run.identity, run.system_json, run.parent],
        )
        .map_err(e)?;
        {
            let mut stmt = tx
                .prepare("INSERT INTO run_cases(run_id, ord, case_id, case_json) VALUES (?1, ?2, ?3, ?4)")
                .map_err(e)?;
            for (i, (id, json)) in run.cases.iter().enumerate() {
                stmt.execute(params![run.id, i as i64, id, json])
                    .map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }

    /// Claims every pending case of `run_id` for a new attempt (lease of `lease`), returning
    /// them in order with their attempt numbers.
    pub fn claim_pending(&mut self, run_id: &str, lease: Duration) -> Result<Vec<CaseRecord>> {
        let path = self.path.clone();
        let e = |source| StoreError::Record {
            path: path.clone(),
            run_id: run_id.to_string(),
            source,
        };
        let tx = self.conn.transaction().map_err(e)?;
        tx.execute(
            "UPDATE run_cases SET attempt = attempt + 1, lease_until = ?2 WHERE run_id = ?1 AND state = 'pending'",
            params![run_id, now_ms() + lease.as_millis() as i64],
        )
        .map_err(e)?;
        let rows = {
            let mut stmt = tx
                .prepare(
                    "SELECT ord, case_id, case_json, state, attempt, trace_json FROM run_cases
                     WHERE run_id = ?1 AND state = 'pending' ORDER BY ord",
                )
                .map_err(e)?;
            let rows = stmt.query_map([run_id], case_row).map_err(e)?;
            rows.collect::<std::result::Result<Vec<_>, _>>()
                .map_err(e)?
        };
        tx.commit().map_err(e)?;
        Ok(rows)
    }

    /// Writes one finished case (trace, verdicts, cache entries) in one transaction. Returns
    /// `false`, writing nothing, when `attempt` is no longer the case's current attempt.
    pub fn complete_case(&mut self, run_id: &str, result: &CaseResult<'_>) -> Result<bool> {
        Ok(self.complete_cases(run_id, std::slice::from_ref(result))?[0])
    }

    /// Writes several finished cases in one transaction (group commit: each case's rows are
    /// all-or-nothing, and the group is durable together). Returns, per case, whether it was
    /// written (`false` for a stale attempt, whose rows are skipped).
    pub fn complete_cases(
        &mut self,
        run_id: &str,
        results: &[CaseResult<'_>],
    ) -> Result<Vec<bool>> {
        let path = self.path.clone();
        let e = |source| StoreError::Record {
            path: path.clone(),
            run_id: run_id.to_string(),
            source,
        };
        let tx = self.conn.transaction().map_err(e)?;
        let mut written = Vec::with_capacity(results.len());
        {
            let mut update = tx
                .prepare_cached(
                    "UPDATE run_cases SET state = 'done', trace_json = ?4, lease_until = NULL
                     WHERE run_id = ?1 AND case_id = ?2 AND attempt = ?3 AND state = 'pending'",
                )
                .map_err(e)?;
            let mut verdict = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO verdicts(run_id, case_id, criterion, verdict_json) VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(e)?;
            let mut cache = tx
                .prepare_cached("INSERT OR IGNORE INTO cache(layer, key, value, created_ms) VALUES (?1, ?2, ?3, ?4)")
                .map_err(e)?;
            let now = now_ms();
            for result in results {
                let updated = update
                    .execute(params![
                        run_id,
                        result.case_id,
                        result.attempt,
                        result.trace_json
                    ])
                    .map_err(e)?;
                written.push(updated > 0);
                if updated == 0 {
                    continue;
                }
                for (criterion, json) in result.verdicts {
                    verdict
                        .execute(params![run_id, result.case_id, criterion, json])
                        .map_err(e)?;
                }
                for (layer, key, value) in result.cache {
                    cache.execute(params![layer, key, value, now]).map_err(e)?;
                }
            }
        }
        tx.commit().map_err(e)?;
        Ok(written)
    }

    /// A cache entry, if present.
    pub fn cache_get(&self, layer: &str, key: &str) -> Result<Option<String>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT value FROM cache WHERE layer = ?1 AND key = ?2")
            .map_err(self.err())?;
        stmt.query_row([layer, key], |r| r.get(0))
            .optional()
            .map_err(self.err())
    }

    /// Opens one read transaction on this connection, held until the returned guard drops:
    /// every [`cache_get`](Self::cache_get) in between reads the same snapshot, and SQLite
    /// takes its read lock once instead of once per statement (a case's execution, retrieval,
    /// generation and judgment lookups). Meant for the read-only connections of
    /// [`open_reader`](Self::open_reader); on a connection already inside a transaction it is
    /// an error.
    pub fn read_snapshot(&self) -> Result<ReadSnapshot<'_>> {
        self.conn
            .prepare_cached("BEGIN DEFERRED")
            .and_then(|mut begin| begin.execute([]))
            .map_err(self.err())?;
        Ok(ReadSnapshot { store: self })
    }

    /// Marks a run finished with its summary.
    pub fn finish_run(&mut self, run_id: &str, status: &str, summary_json: &str) -> Result<()> {
        self.conn
            .execute(
                "UPDATE runs SET status = ?2, summary_json = ?3, finished_ms = ?4 WHERE id = ?1",
                params![run_id, status, summary_json, now_ms()],
            )
            .map_err(|source| self.record_error(run_id, source))?;
        Ok(())
    }

    /// Marks a running run as `interrupted` (Ctrl-C, SIGTERM): its finished cases stay, the
    /// others are pending, and `--resume` finishes it. A run that already finished keeps its
    /// status.
    pub fn mark_interrupted(&mut self, run_id: &str) -> Result<()> {
        self.conn
            .execute(
                "UPDATE runs SET status = 'interrupted' WHERE id = ?1 AND status = 'running'",
                [run_id],
            )
            .map_err(self.err())?;
        Ok(())
    }

    /// Marks a run as running again (resume).
    pub fn reopen_run(&mut self, run_id: &str) -> Result<()> {
        self.conn
            .execute("UPDATE runs SET status = 'running' WHERE id = ?1", [run_id])
            .map_err(|source| self.record_error(run_id, source))?;
        Ok(())
    }

    /// Every run, newest first.
    pub fn list_runs(&self) -> Result<Vec<RunRecord>> {
        let mut stmt = self
            .conn
            .prepare(&format!(
                "{RUN_SELECT} ORDER BY r.created_ms DESC, r.id DESC"
            ))
            .map_err(self.err())?;
        let rows = stmt.query_map([], run_row).map_err(self.err())?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(self.err())
    }

    /// One run.
    pub fn run(&self, run_id: &str) -> Result<RunRecord> {
        let mut stmt = self
            .conn
            .prepare(&format!("{RUN_SELECT} WHERE r.id = ?1"))
            .map_err(self.err())?;
        stmt.query_row([run_id], run_row)
            .optional()
            .map_err(self.err())?
            .ok_or_else(|| StoreError::UnknownRun(run_id.to_string()))
    }

    /// The cases of a run, in order.
    pub fn cases(&self, run_id: &str) -> Result<Vec<CaseRecord>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT ord, case_id, case_json, state, attempt, trace_json FROM run_cases WHERE run_id = ?1 ORDER BY ord",
            )
            .map_err(self.err())?;
        let rows = stmt.query_map([run_id], case_row).map_err(self.err())?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(self.err())
    }

    /// The verdicts of a run (case order, then criterion).
    pub fn verdicts(&self, run_id: &str) -> Result<Vec<VerdictRecord>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT v.case_id, v.criterion, v.verdict_json FROM verdicts v
                 JOIN run_cases c ON c.run_id = v.run_id AND c.case_id = v.case_id
                 WHERE v.run_id = ?1 ORDER BY c.ord, v.criterion",
            )
            .map_err(self.err())?;
        let rows = stmt
            .query_map([run_id], |r| {
                Ok(VerdictRecord {
                    case_id: r.get(0)?,
                    criterion: r.get(1)?,
                    verdict_json: r.get(2)?,
                })
            })
            .map_err(self.err())?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(self.err())
    }
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

impl SqliteStore {
    /// Records a diagnosis (re-recording the same id refreshes its time and content).
    pub fn save_diagnosis(&mut self, id: &str, run_id: &str, content_json: &str) -> Result<()> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO diagnoses(id, run_id, created_ms, content_json) VALUES (?1, ?2, ?3, ?4)",
                params![id, run_id, now_ms(), content_json],
            )
            .map_err(self.err())?;
        Ok(())
    }

    /// Records a comparison.
    pub fn save_comparison(
        &mut self,
        id: &str,
        candidate: &str,
        baseline: &str,
        content_json: &str,
    ) -> Result<()> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO comparisons(id, candidate, baseline, created_ms, content_json) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, candidate, baseline, now_ms(), content_json],
            )
            .map_err(self.err())?;
        Ok(())
    }

    /// A diagnosis by id.
    pub fn diagnosis(&self, id: &str) -> Result<Option<RecordedAnalysis>> {
        self.conn
            .query_row(
                "SELECT id, run_id, created_ms, content_json FROM diagnoses WHERE id = ?1",
                [id],
                |r| {
                    Ok(RecordedAnalysis {
                        id: r.get(0)?,
                        run_id: r.get(1)?,
                        baseline: None,
                        created_ms: r.get(2)?,
                        content_json: r.get(3)?,
                    })
                },
            )
            .optional()
            .map_err(self.err())
    }

    /// The diagnoses of a run, newest first.
    pub fn diagnoses_of(&self, run_id: &str) -> Result<Vec<RecordedAnalysis>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, run_id, created_ms, content_json FROM diagnoses WHERE run_id = ?1 ORDER BY created_ms DESC")
            .map_err(self.err())?;
        let rows = stmt
            .query_map([run_id], |r| {
                Ok(RecordedAnalysis {
                    id: r.get(0)?,
                    run_id: r.get(1)?,
                    baseline: None,
                    created_ms: r.get(2)?,
                    content_json: r.get(3)?,
                })
            })
            .map_err(self.err())?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(self.err())
    }

    /// Every recorded comparison, newest first (for the web viewer's index).
    pub fn list_comparisons(&self) -> Result<Vec<RecordedAnalysis>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, candidate, baseline, created_ms, content_json FROM comparisons ORDER BY created_ms DESC, id")
            .map_err(self.err())?;
        let rows = stmt
            .query_map([], |r| {
                Ok(RecordedAnalysis {
                    id: r.get(0)?,
                    run_id: r.get(1)?,
                    baseline: Some(r.get(2)?),
                    created_ms: r.get(3)?,
                    content_json: r.get(4)?,
                })
            })
            .map_err(self.err())?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(self.err())
    }

    /// Every recorded diagnosis, newest first (for the web viewer's index).
    pub fn list_diagnoses(&self) -> Result<Vec<RecordedAnalysis>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, run_id, created_ms, content_json FROM diagnoses ORDER BY created_ms DESC, id")
            .map_err(self.err())?;
        let rows = stmt
            .query_map([], |r| {
                Ok(RecordedAnalysis {
                    id: r.get(0)?,
                    run_id: r.get(1)?,
                    baseline: None,
                    created_ms: r.get(2)?,
                    content_json: r.get(3)?,
                })
            })
            .map_err(self.err())?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(self.err())
    }

    /// A comparison by id.
    pub fn comparison(&self, id: &str) -> Result<Option<RecordedAnalysis>> {
        self.conn
            .query_row(
                "SELECT id, candidate, baseline, created_ms, content_json FROM comparisons WHERE id = ?1",
                [id],
                |r| {
                    Ok(RecordedAnalysis {
                        id: r.get(0)?,
                        run_id: r.get(1)?,
                        baseline: Some(r.get(2)?),
                        created_ms: r.get(3)?,
                        content_json: r.get(4)?,
                    })
                },
            )
            .optional()
            .map_err(self.err())
    }
}

impl SqliteStore {
    /// Records a judge calibration: `identity` is the hash of what was calibrated (judge
    /// settings, evaluator type and template versions).
    pub fn save_calibration(
        &mut self,
        id: &str,
        judge: &str,
        identity: &str,
        passed: bool,
        content_json: &str,
    ) -> Result<()> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO calibrations(id, judge, identity, passed, created_ms, content_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![id, judge, identity, passed as i64, now_ms(), content_json],
            )
            .map_err(self.err())?;
        Ok(())
    }

    /// The newest calibration recorded for `identity`: `(id, passed, content_json)`.
    pub fn latest_calibration(&self, identity: &str) -> Result<Option<(String, bool, String)>> {
        self.conn
            .query_row(
                "SELECT id, passed, content_json FROM calibrations WHERE identity = ?1 ORDER BY created_ms DESC, rowid DESC LIMIT 1",
                [identity],
                |r| Ok((r.get(0)?, r.get::<_, i64>(1)? != 0, r.get(2)?)),
            )
            .optional()
            .map_err(self.err())
    }

    /// Writes cache entries outside a case (e.g. judge calls made by `calibrate`).
    pub fn put_cache_entries(&mut self, entries: &[(String, String, String)]) -> Result<()> {
        let path = self.path.clone();
        let e = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(e)?;
        {
            let mut stmt = tx
                .prepare_cached("INSERT OR IGNORE INTO cache(layer, key, value, created_ms) VALUES (?1, ?2, ?3, ?4)")
                .map_err(e)?;
            let now = now_ms();
            for (layer, key, value) in entries {
                stmt.execute(params![layer, key, value, now]).map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }
}

const RUN_SELECT: &str = "SELECT r.id, r.created_ms, r.status, r.config_path, r.settings_json, r.identity, r.system_json,
       r.summary_json, r.parent,
       (SELECT COUNT(*) FROM run_cases c WHERE c.run_id = r.id),
       (SELECT COUNT(*) FROM run_cases c WHERE c.run_id = r.id AND c.state = 'done')
  FROM runs r";

fn run_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRecord> {
    Ok(RunRecord {
        id: r.get(0)?,
        created_ms: r.get(1)?,
        status: r.get(2)?,
        config_path: r.get(3)?,
        settings_json: r.get(4)?,
        identity: r.get(5)?,
        system_json: r.get(6)?,
        summary_json: r.get(7)?,
        parent: r.get(8)?,
        case_count: r.get(9)?,
        done_count: r.get(10)?,
    })
}

fn case_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<CaseRecord> {
    Ok(CaseRecord {
        ord: r.get(0)?,
        case_id: r.get(1)?,
        case_json: r.get(2)?,
        state: r.get(3)?,
        attempt: r.get(4)?,
        trace_json: r.get(5)?,
    })
}

/// A read transaction of [`SqliteStore::read_snapshot`]; ends when dropped.
pub struct ReadSnapshot<'a> {
    store: &'a SqliteStore,
}

impl Drop for ReadSnapshot<'_> {
    fn drop(&mut self) {
        // Ending a read transaction cannot lose data; if it fails the connection is broken
        // and the next lookup on it reports that error.
        let _ = self
            .store
            .conn
            .prepare_cached("COMMIT")
            .and_then(|mut commit| commit.execute([]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_say_what_to_do() {
        let err = |code, text: &str| {
            rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), Some(text.into()))
        };
        let full = StoreError::Record {
            path: "p.db".into(),
            run_id: "run_1".into(),
            source: err(rusqlite::ffi::SQLITE_FULL, "database or disk is full"),
        };
        assert_eq!(
            full.to_string(),
            "cannot write run run_1 to the run store p.db: database or disk is full: the disk \
             holding it is full: free some space. The cases recorded before are kept; once that \
             is fixed, finish the run with `oloproof run --resume run_1`"
        );
        let damaged = StoreError::Sqlite {
            path: "p.db".into(),
            source: err(rusqlite::ffi::SQLITE_NOTADB, "file is not a database"),
        };
        assert!(damaged
            .to_string()
            .contains("salvage what is readable with `sqlite3 p.db .recover"));
        // Errors without advice are shown as SQLite gives them.
        let other = StoreError::Sqlite {
            path: "p.db".into(),
            source: err(rusqlite::ffi::SQLITE_CONSTRAINT, "UNIQUE constraint failed"),
        };
        assert_eq!(
            other.to_string(),
            "run store p.db: UNIQUE constraint failed"
        );
    }

    fn new_store() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("s/o.db")).unwrap();
        (dir, store)
    }

    #[test]
    fn run_lifecycle_and_stale_attempts() {
        let (_d, mut s) = new_store();
        let cases = vec![
            ("a".to_string(), "{}".to_string()),
            ("b".to_string(), "{}".to_string()),
        ];
        s.create_run(&NewRun {
            id: "run_1",
            config_path: "x.yaml",
            settings_json: "{}",
            identity: "h",
            system_json: "{}",
            parent: None,
            cases: &cases,
        })
        .unwrap();
        let claimed = s.claim_pending("run_1", Duration::from_secs(60)).unwrap();
        assert_eq!(claimed.len(), 2);
        assert_eq!(claimed[0].attempt, 1);
        let verdicts = vec![("c".to_string(), "{\"status\":\"pass\"}".to_string())];
        let cache = vec![("execution".to_string(), "k".to_string(), "v".to_string())];
        let ok = s
            .complete_case(
                "run_1",
                &CaseResult {
                    case_id: "a",
                    attempt: 1,
                    trace_json: "{}",
                    verdicts: &verdicts,
                    cache: &cache,
                },
            )
            .unwrap();
        assert!(ok);
        // A second claim bumps b's attempt: the first attempt's late result is refused.
        let again = s.claim_pending("run_1", Duration::from_secs(60)).unwrap();
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].attempt, 2);
        let stale = s
            .complete_case(
                "run_1",
                &CaseResult {
                    case_id: "b",
                    attempt: 1,
                    trace_json: "{}",
                    verdicts: &[],
                    cache: &[],
                },
            )
            .unwrap();
        assert!(!stale);
        assert_eq!(s.cache_get("execution", "k").unwrap().as_deref(), Some("v"));
        assert_eq!(s.cache_get("execution", "nope").unwrap(), None);
        let run = s.run("run_1").unwrap();
        assert_eq!((run.case_count, run.done_count), (2, 1));
        assert_eq!(s.verdicts("run_1").unwrap().len(), 1);
        assert!(matches!(s.run("run_x"), Err(StoreError::UnknownRun(_))));
    }
}
