//! The SQLite backend (bundled SQLite): one file, WAL journal, one writer per run.
//!
//! Its SQL lives here and its schema in `migrations/sqlite/NNNN_*.sql`, applied in order by
//! [`SqliteStore::open`] inside one `BEGIN IMMEDIATE` transaction (so two processes opening an
//! old store at once migrate it once). A store written by an older Oloproof is migrated, never
//! rejected; one written by a newer Oloproof is refused ([`StoreError::Schema`]).
//!
//! Leases use this machine's clock (every process sharing a SQLite file is on one machine).

use std::path::Path;
use std::time::Duration;

use oloproof_core::run::RunRecord;
use oloproof_core::store::{
    encode, ArtifactStore, CacheEntry, CacheLayer, CacheStore, CalibrationRecord, CaseRecord,
    CaseResult, CaseState, Claim, ClaimedCase, CollectStore, CollectedRequest, MonitorRecord,
    NewRun, OtlpEncoding, OtlpSignal, RecordedAnalysis, RunExport, RunId, RunStatus, RunStore,
    StoreError, StoreResult, VerdictRecord, WorkerId,
};
use oloproof_core::summary::RunSummary;
use rusqlite::{params, Connection, OptionalExtension};

use crate::{decode_case, now_ms, DEFAULT_BUSY_TIMEOUT_S, ENV_BUSY_TIMEOUT};

/// The schema migrations, in order: `(version, SQL)`.
pub const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("../migrations/sqlite/0001_initial.sql")),
    (2, include_str!("../migrations/sqlite/0002_leases.sql")),
    (3, include_str!("../migrations/sqlite/0003_collected.sql")),
    (4, include_str!("../migrations/sqlite/0004_monitors.sql")),
    (
        5,
        include_str!("../migrations/sqlite/0005_collected_logs.sql"),
    ),
    (
        6,
        include_str!("../migrations/sqlite/0006_stored_trace_form.sql"),
    ),
];

/// The schema version a store has once opened for writing.
pub const SCHEMA_VERSION: i64 = 6;

/// The wait for locks: [`ENV_BUSY_TIMEOUT`] when set, else [`DEFAULT_BUSY_TIMEOUT_S`].
fn busy_timeout() -> StoreResult<Duration> {
    let Ok(value) = std::env::var(ENV_BUSY_TIMEOUT) else {
        return Ok(Duration::from_secs_f64(DEFAULT_BUSY_TIMEOUT_S));
    };
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0 && *s <= 86_400.0)
        .map(Duration::from_secs_f64)
        .ok_or(StoreError::Setting {
            name: ENV_BUSY_TIMEOUT.into(),
            value,
            expected: "a number of seconds between 0 and 86400".into(),
        })
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

/// A SQLite failure as a [`StoreError::Backend`].
pub(crate) fn backend(path: &str, source: rusqlite::Error) -> StoreError {
    StoreError::Backend {
        location: path.to_string(),
        detail: with_advice(&source, path),
        source: Box::new(source),
    }
}

/// A SQLite failure while writing a run's progress, as a [`StoreError::Record`].
pub(crate) fn record(path: &str, run_id: &str, source: rusqlite::Error) -> StoreError {
    StoreError::Record {
        location: path.to_string(),
        run_id: run_id.to_string(),
        detail: with_advice(&source, path),
        source: Box::new(source),
    }
}

/// The SQLite run store.
pub struct SqliteStore {
    conn: Connection,
    path: String,
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path` for writing, migrating an older schema.
    pub fn open(path: &Path) -> StoreResult<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
                path: dir.display().to_string(),
                source,
            })?;
        }
        let shown = path.display().to_string();
        let conn = Connection::open(path).map_err(|source| backend(&shown, source))?;
        let mut store = SqliteStore { conn, path: shown };
        store.migrate()?;
        Ok(store)
    }

    /// Opens an existing store read-only (a worker thread's cache lookups, the viewer).
    pub fn open_reader(path: &Path) -> StoreResult<Self> {
        let shown = path.display().to_string();
        let conn = Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| backend(&shown, source))?;
        conn.busy_timeout(busy_timeout()?)
            .map_err(|source| backend(&shown, source))?;
        // Pages of the database file read through a memory map, not a `pread` copy each: a
        // new read transaction after another connection's commit discards the page cache, so
        // a worker's per-case lookups would otherwise re-read every page they touch.
        conn.execute_batch("PRAGMA mmap_size=268435456;")
            .map_err(|source| backend(&shown, source))?;
        Ok(SqliteStore { conn, path: shown })
    }

    /// The schema version recorded in the store (0 for a store with none).
    pub fn schema_version(&self) -> StoreResult<i64> {
        read_version(&self.conn).map_err(self.err())
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |source| backend(&self.path, source)
    }

    fn rec<'a>(&'a self, run_id: &'a str) -> impl Fn(rusqlite::Error) -> StoreError + 'a {
        move |source| record(&self.path, run_id, source)
    }

    fn migrate(&mut self) -> StoreResult<()> {
        let path = self.path.clone();
        let e = |source| backend(&path, source);
        self.conn.busy_timeout(busy_timeout()?).map_err(e)?;
        // Temporary tables and statement journals (a multi-row claim keeps one) in memory, not
        // in a temporary file opened for each statement.
        self.conn
            .execute_batch(
                "PRAGMA journal_mode=WAL;
                 PRAGMA synchronous=NORMAL;
                 PRAGMA mmap_size=268435456;
                 PRAGMA temp_store=MEMORY;
                 CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);",
            )
            .map_err(e)?;
        // Most opens find the schema current: check without taking the write lock.
        match read_version(&self.conn).map_err(e)? {
            v if v > SCHEMA_VERSION => {
                return Err(StoreError::Schema {
                    found: v,
                    supported: SCHEMA_VERSION,
                })
            }
            v if v == SCHEMA_VERSION => return Ok(()),
            _ => {}
        }
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(e)?;
        let found = read_version(&tx).map_err(e)?;
        if found > SCHEMA_VERSION {
            return Err(StoreError::Schema {
                found,
                supported: SCHEMA_VERSION,
            });
        }
        for (version, sql) in MIGRATIONS {
            // Schema 1 is idempotent and re-applied to a schema-1 store: early builds wrote
            // version 1 before every table of schema 1 existed.
            if *version > found || (*version == 1 && found == 1) {
                tx.execute_batch(sql).map_err(e)?;
            }
        }
        tx.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?1)",
            [SCHEMA_VERSION.to_string()],
        )
        .map_err(e)?;
        tx.commit().map_err(e)
    }
}

fn read_version(conn: &Connection) -> rusqlite::Result<i64> {
    let found: Option<String> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    Ok(found.and_then(|v| v.parse::<i64>().ok()).unwrap_or(0))
}

const RUN_SELECT: &str = "SELECT r.id, r.created_ms, r.status, r.config_path, r.settings_json, r.identity, r.system_json,
       r.summary_json, r.parent,
       (SELECT COUNT(*) FROM run_cases c WHERE c.run_id = r.id),
       (SELECT COUNT(*) FROM run_cases c WHERE c.run_id = r.id AND c.state = 'done'),
       r.finished_ms
  FROM runs r";

fn bad_text(index: usize, what: &str, text: &str) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        index,
        rusqlite::types::Type::Text,
        format!("`{text}` is not a {what}").into(),
    )
}

fn run_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(RunRecord, Option<i64>)> {
    let status: String = r.get(2)?;
    Ok((
        RunRecord {
            id: r.get(0)?,
            created_ms: r.get(1)?,
            status: RunStatus::parse(&status).ok_or_else(|| bad_text(2, "run status", &status))?,
            config_path: r.get(3)?,
            settings_json: r.get(4)?,
            identity: r.get(5)?,
            system_json: r.get(6)?,
            summary_json: r.get(7)?,
            parent: r.get(8)?,
            case_count: r.get(9)?,
            done_count: r.get(10)?,
        },
        r.get(11)?,
    ))
}

fn case_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<CaseRecord> {
    let state: String = r.get(3)?;
    Ok(CaseRecord {
        ord: r.get(0)?,
        case_id: r.get(1)?,
        case_json: r.get(2)?,
        state: CaseState::parse(&state).ok_or_else(|| bad_text(3, "case state", &state))?,
        attempt: r.get(4)?,
        trace_json: r.get(5)?,
        cache_use_json: r.get(6)?,
    })
}

const CASE_SELECT: &str =
    "SELECT ord, case_id, case_json, state, attempt, trace_json, cache_use_json FROM run_cases";

fn analysis_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RecordedAnalysis> {
    Ok(RecordedAnalysis {
        id: r.get(0)?,
        run_id: r.get(1)?,
        baseline: None,
        created_ms: r.get(2)?,
        content_json: r.get(3)?,
    })
}

fn comparison_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RecordedAnalysis> {
    Ok(RecordedAnalysis {
        id: r.get(0)?,
        run_id: r.get(1)?,
        baseline: Some(r.get(2)?),
        created_ms: r.get(3)?,
        content_json: r.get(4)?,
    })
}

impl RunStore for SqliteStore {
    fn location(&self) -> String {
        self.path.clone()
    }

    fn create_run(&mut self, run: &NewRun<'_>) -> StoreResult<()> {
        let settings_json = encode(run.settings, || "settings".into())?;
        let cases = run
            .cases
            .iter()
            .map(|c| Ok((c.id.as_str(), encode(c, || format!("case {}", c.id))?)))
            .collect::<StoreResult<Vec<_>>>()?;
        let path = self.path.clone();
        let e = |source| backend(&path, source);
        let tx = self.conn.transaction().map_err(e)?;
        tx.execute(
            "INSERT INTO runs(id, created_ms, status, config_path, settings_json, identity, system_json, parent)
             VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7)",
            params![run.id.as_str(), now_ms(), run.config_path, settings_json, run.identity, run.system_json, run.parent],
        )
        .map_err(e)?;
        {
            let mut stmt = tx
                .prepare("INSERT INTO run_cases(run_id, ord, case_id, case_json) VALUES (?1, ?2, ?3, ?4)")
                .map_err(e)?;
            for (i, (id, json)) in cases.iter().enumerate() {
                stmt.execute(params![run.id.as_str(), i as i64, id, json])
                    .map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }

    fn claim_batch(&mut self, run_id: &RunId, claim: &Claim<'_>) -> StoreResult<Vec<ClaimedCase>> {
        let path = self.path.clone();
        let e = |source| record(&path, run_id, source);
        let now = now_ms();
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(e)?;
        let mut rows = {
            let mut stmt = tx
                .prepare_cached(
                    "UPDATE run_cases SET attempt = attempt + 1, lease_until = ?3, lease_holder = ?4
                     WHERE run_id = ?1 AND case_id IN (
                       SELECT case_id FROM run_cases
                        WHERE run_id = ?1 AND state = 'pending' AND lease_holder IS NOT ?4
                          AND (?5 = 0 OR lease_until IS NULL OR lease_until < ?6)
                        ORDER BY ord LIMIT ?2)
                     RETURNING ord, case_id, case_json, attempt",
                )
                .map_err(e)?;
            let rows = stmt
                .query_map(
                    params![
                        run_id.as_str(),
                        claim.limit as i64,
                        now + claim.lease.as_millis() as i64,
                        claim.worker.as_str(),
                        claim.respect_leases as i64,
                        now
                    ],
                    |r| {
                        Ok((
                            r.get::<_, i64>(0)?,
                            r.get::<_, String>(1)?,
                            r.get::<_, String>(2)?,
                            r.get::<_, i64>(3)?,
                        ))
                    },
                )
                .map_err(e)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(e)?
        };
        tx.commit().map_err(e)?;
        rows.sort_by_key(|r| r.0);
        rows.into_iter()
            .map(|(ord, case_id, case_json, attempt)| {
                decode_case(ord, &case_id, &case_json, attempt, claim.max_attempts)
            })
            .collect()
    }

    fn claimable(&mut self, run_id: &RunId, claim: &Claim<'_>, cap: usize) -> StoreResult<usize> {
        let now = now_ms();
        let n: i64 = self
            .conn
            .prepare_cached(
                "SELECT COUNT(*) FROM (
                   SELECT 1 FROM run_cases
                    WHERE run_id = ?1 AND state = 'pending' AND lease_holder IS NOT ?3
                      AND (?4 = 0 OR lease_until IS NULL OR lease_until < ?5)
                    LIMIT ?2)",
            )
            .and_then(|mut stmt| {
                stmt.query_row(
                    params![
                        run_id.as_str(),
                        cap as i64,
                        claim.worker.as_str(),
                        claim.respect_leases as i64,
                        now
                    ],
                    |r| r.get(0),
                )
            })
            .map_err(|source| record(&self.path, run_id, source))?;
        Ok(n.max(0) as usize)
    }

    fn heartbeat(
        &mut self,
        run_id: &RunId,
        worker: &WorkerId,
        lease: Duration,
    ) -> StoreResult<u64> {
        let n = self
            .conn
            .prepare_cached(
                "UPDATE run_cases SET lease_until = ?3
                 WHERE run_id = ?1 AND lease_holder = ?2 AND state = 'pending'",
            )
            .and_then(|mut s| {
                s.execute(params![
                    run_id.as_str(),
                    worker.as_str(),
                    now_ms() + lease.as_millis() as i64
                ])
            })
            .map_err(self.rec(run_id))?;
        Ok(n as u64)
    }

    fn complete_cases(
        &mut self,
        run_id: &RunId,
        worker: &WorkerId,
        results: &[CaseResult<'_>],
    ) -> StoreResult<Vec<bool>> {
        let encoded = crate::encode_results(results)?;
        let path = self.path.clone();
        let e = |source| record(&path, run_id, source);
        let tx = self.conn.transaction().map_err(e)?;
        let mut written = Vec::with_capacity(results.len());
        {
            let mut update = tx
                .prepare_cached(
                    "UPDATE run_cases SET state = 'done', trace_json = ?4, lease_until = NULL, cache_use_json = ?6
                     WHERE run_id = ?1 AND case_id = ?2 AND attempt = ?3 AND state = 'pending'
                       AND lease_holder IS ?5",
                )
                .map_err(e)?;
            let mut already = tx
                .prepare_cached(
                    "SELECT 1 FROM run_cases WHERE run_id = ?1 AND case_id = ?2 AND attempt = ?3
                       AND state = 'done' AND lease_holder IS ?4",
                )
                .map_err(e)?;
            let mut verdict = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO verdicts(run_id, case_id, criterion, verdict_json) VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(e)?;
            for (result, enc) in results.iter().zip(&encoded) {
                let updated = update
                    .execute(params![
                        run_id.as_str(),
                        result.case_id,
                        result.attempt,
                        enc.trace_json.as_ref(),
                        worker.as_str(),
                        enc.cache_use_json
                    ])
                    .map_err(e)?;
                if updated == 0 {
                    let done = already
                        .exists(params![
                            run_id.as_str(),
                            result.case_id,
                            result.attempt,
                            worker.as_str()
                        ])
                        .map_err(e)?;
                    written.push(done);
                    continue;
                }
                written.push(true);
                for (criterion, json) in &enc.verdicts {
                    verdict
                        .execute(params![run_id.as_str(), result.case_id, criterion, json])
                        .map_err(e)?;
                }
            }
        }
        tx.commit().map_err(e)?;
        Ok(written)
    }

    fn finish_run(
        &mut self,
        run_id: &RunId,
        status: RunStatus,
        summary: &RunSummary,
    ) -> StoreResult<bool> {
        let summary_json = encode(summary, || "summary".into())?;
        let n = self
            .conn
            .execute(
                "UPDATE runs SET status = ?2, summary_json = ?3, finished_ms = ?4
                 WHERE id = ?1 AND status = 'running'",
                params![run_id.as_str(), status.as_str(), summary_json, now_ms()],
            )
            .map_err(self.rec(run_id))?;
        Ok(n > 0)
    }

    fn mark_interrupted(&mut self, run_id: &RunId) -> StoreResult<()> {
        self.conn
            .execute(
                "UPDATE runs SET status = 'interrupted' WHERE id = ?1 AND status = 'running'",
                [run_id.as_str()],
            )
            .map_err(self.err())?;
        Ok(())
    }

    fn reopen_run(&mut self, run_id: &RunId) -> StoreResult<()> {
        self.conn
            .execute(
                "UPDATE runs SET status = 'running' WHERE id = ?1",
                [run_id.as_str()],
            )
            .map_err(self.rec(run_id))?;
        Ok(())
    }

    fn list_runs(&self) -> StoreResult<Vec<RunRecord>> {
        let mut stmt = self
            .conn
            .prepare(&format!(
                "{RUN_SELECT} ORDER BY r.created_ms DESC, r.id DESC"
            ))
            .map_err(self.err())?;
        let rows = stmt.query_map([], run_row).map_err(self.err())?;
        rows.map(|r| r.map(|(record, _)| record))
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.err())
    }

    fn run(&self, run_id: &RunId) -> StoreResult<RunRecord> {
        self.run_row(run_id).map(|(record, _)| record)
    }

    fn cases(&self, run_id: &RunId) -> StoreResult<Vec<CaseRecord>> {
        let mut stmt = self
            .conn
            .prepare(&format!("{CASE_SELECT} WHERE run_id = ?1 ORDER BY ord"))
            .map_err(self.err())?;
        let rows = stmt
            .query_map([run_id.as_str()], case_row)
            .map_err(self.err())?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.err())
    }

    fn verdicts(&self, run_id: &RunId) -> StoreResult<Vec<VerdictRecord>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT v.case_id, v.criterion, v.verdict_json FROM verdicts v
                 JOIN run_cases c ON c.run_id = v.run_id AND c.case_id = v.case_id
                 WHERE v.run_id = ?1 ORDER BY c.ord, v.criterion",
            )
            .map_err(self.err())?;
        let rows = stmt
            .query_map([run_id.as_str()], |r| {
                Ok(VerdictRecord {
                    case_id: r.get(0)?,
                    criterion: r.get(1)?,
                    verdict_json: r.get(2)?,
                })
            })
            .map_err(self.err())?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.err())
    }

    fn export_run(&self, run_id: &RunId) -> StoreResult<RunExport> {
        let (record, finished_ms) = self.run_row(run_id)?;
        Ok(RunExport {
            record,
            finished_ms,
            cases: self.cases(run_id)?,
            verdicts: self.verdicts(run_id)?,
        })
    }

    fn import_run(&mut self, run: &RunExport) -> StoreResult<bool> {
        let path = self.path.clone();
        let e = |source| backend(&path, source);
        let r = &run.record;
        let tx = self.conn.transaction().map_err(e)?;
        let inserted = tx
            .execute(
                "INSERT OR IGNORE INTO runs(id, created_ms, status, config_path, settings_json, identity, system_json, summary_json, parent, finished_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![r.id, r.created_ms, r.status.as_str(), r.config_path, r.settings_json, r.identity, r.system_json, r.summary_json, r.parent, run.finished_ms],
            )
            .map_err(e)?;
        if inserted == 0 {
            return Ok(false);
        }
        {
            let mut case = tx
                .prepare(
                    "INSERT INTO run_cases(run_id, ord, case_id, case_json, state, attempt, trace_json, cache_use_json)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )
                .map_err(e)?;
            for c in &run.cases {
                case.execute(params![
                    r.id,
                    c.ord,
                    c.case_id,
                    c.case_json,
                    c.state.as_str(),
                    c.attempt,
                    c.trace_json,
                    c.cache_use_json
                ])
                .map_err(e)?;
            }
            let mut verdict = tx
                .prepare("INSERT INTO verdicts(run_id, case_id, criterion, verdict_json) VALUES (?1, ?2, ?3, ?4)")
                .map_err(e)?;
            for v in &run.verdicts {
                verdict
                    .execute(params![r.id, v.case_id, v.criterion, v.verdict_json])
                    .map_err(e)?;
            }
        }
        tx.commit().map_err(e)?;
        Ok(true)
    }
}

impl SqliteStore {
    fn run_row(&self, run_id: &RunId) -> StoreResult<(RunRecord, Option<i64>)> {
        let mut stmt = self
            .conn
            .prepare(&format!("{RUN_SELECT} WHERE r.id = ?1"))
            .map_err(self.err())?;
        stmt.query_row([run_id.as_str()], run_row)
            .optional()
            .map_err(self.err())?
            .ok_or_else(|| StoreError::UnknownRun(run_id.to_string()))
    }
}

impl CacheStore for SqliteStore {
    fn cache_get(&self, layer: CacheLayer, key: &str) -> StoreResult<Option<String>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT value FROM cache WHERE layer = ?1 AND key = ?2")
            .map_err(self.err())?;
        stmt.query_row([layer.as_str(), key], |r| r.get(0))
            .optional()
            .map_err(self.err())
    }

    fn put_cache_entries(&mut self, entries: &[CacheEntry]) -> StoreResult<()> {
        let path = self.path.clone();
        let e = |source| backend(&path, source);
        let tx = self.conn.transaction().map_err(e)?;
        {
            let mut stmt = tx
                .prepare_cached("INSERT OR IGNORE INTO cache(layer, key, value, created_ms) VALUES (?1, ?2, ?3, ?4)")
                .map_err(e)?;
            let now = now_ms();
            for (layer, key, value) in entries {
                stmt.execute(params![layer.as_str(), key, value, now])
                    .map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }

    /// One read transaction on this connection until [`end_read`](CacheStore::end_read):
    /// SQLite takes its read lock once instead of once per statement (a case's execution,
    /// retrieval, generation and judgment lookups). Meant for the read-only connections of
    /// [`SqliteStore::open_reader`]; on a connection already inside a transaction it is an
    /// error.
    fn begin_read(&self) -> StoreResult<()> {
        self.conn
            .prepare_cached("BEGIN DEFERRED")
            .and_then(|mut begin| begin.execute([]))
            .map_err(self.err())?;
        Ok(())
    }

    fn end_read(&self) {
        // Ending a read transaction cannot lose data; if it fails the connection is broken
        // and the next lookup on it reports that error.
        let _ = self
            .conn
            .prepare_cached("COMMIT")
            .and_then(|mut commit| commit.execute([]));
    }

    fn cache_page(
        &self,
        after: Option<(CacheLayer, String)>,
        limit: usize,
    ) -> StoreResult<Vec<CacheEntry>> {
        let (layer, key) = match &after {
            Some((l, k)) => (l.as_str(), k.as_str()),
            None => ("", ""),
        };
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT layer, key, value FROM cache WHERE (layer, key) > (?1, ?2)
                 ORDER BY layer, key LIMIT ?3",
            )
            .map_err(self.err())?;
        let rows = stmt
            .query_map(params![layer, key, limit as i64], |r| {
                let layer: String = r.get(0)?;
                Ok((
                    CacheLayer::parse(&layer).ok_or_else(|| bad_text(0, "cache layer", &layer))?,
                    r.get(1)?,
                    r.get(2)?,
                ))
            })
            .map_err(self.err())?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.err())
    }
}

impl CollectStore for SqliteStore {
    fn append_collected(&mut self, requests: &[CollectedRequest]) -> StoreResult<Vec<i64>> {
        let path = self.path.clone();
        let e = |source| backend(&path, source);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(e)?;
        let mut seqs = Vec::with_capacity(requests.len());
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO collected_requests(received_ms, signal, encoding, spans, body)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(e)?;
            for r in requests {
                insert
                    .execute(params![
                        r.received_ms,
                        r.signal.as_str(),
                        r.encoding.as_str(),
                        r.spans,
                        r.body
                    ])
                    .map_err(e)?;
                seqs.push(tx.last_insert_rowid());
            }
        }
        tx.commit().map_err(e)?;
        Ok(seqs)
    }

    fn collected_page(&self, after: i64, limit: usize) -> StoreResult<Vec<CollectedRequest>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, received_ms, encoding, spans, body, signal FROM collected_requests
                 WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            )
            .map_err(self.err())?;
        let rows = stmt
            .query_map(params![after, limit as i64], |r| {
                let encoding: String = r.get(2)?;
                let signal: String = r.get(5)?;
                Ok(CollectedRequest {
                    seq: r.get(0)?,
                    received_ms: r.get(1)?,
                    signal: OtlpSignal::parse(&signal)
                        .ok_or_else(|| bad_text(5, "request signal", &signal))?,
                    encoding: OtlpEncoding::parse(&encoding)
                        .ok_or_else(|| bad_text(2, "request encoding", &encoding))?,
                    spans: r.get(3)?,
                    body: r.get(4)?,
                })
            })
            .map_err(self.err())?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.err())
    }
}

impl ArtifactStore for SqliteStore {
    fn save_diagnosis(&mut self, id: &str, run_id: &str, content_json: &str) -> StoreResult<()> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO diagnoses(id, run_id, created_ms, content_json) VALUES (?1, ?2, ?3, ?4)",
                params![id, run_id, now_ms(), content_json],
            )
            .map_err(self.err())?;
        Ok(())
    }

    fn save_comparison(
        &mut self,
        id: &str,
        candidate: &str,
        baseline: &str,
        content_json: &str,
    ) -> StoreResult<()> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO comparisons(id, candidate, baseline, created_ms, content_json) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, candidate, baseline, now_ms(), content_json],
            )
            .map_err(self.err())?;
        Ok(())
    }

    fn diagnosis(&self, id: &str) -> StoreResult<Option<RecordedAnalysis>> {
        self.conn
            .query_row(
                "SELECT id, run_id, created_ms, content_json FROM diagnoses WHERE id = ?1",
                [id],
                analysis_row,
            )
            .optional()
            .map_err(self.err())
    }

    fn diagnoses_of(&self, run_id: &str) -> StoreResult<Vec<RecordedAnalysis>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, run_id, created_ms, content_json FROM diagnoses WHERE run_id = ?1 ORDER BY created_ms DESC")
            .map_err(self.err())?;
        let rows = stmt.query_map([run_id], analysis_row).map_err(self.err())?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.err())
    }

    fn list_comparisons(&self) -> StoreResult<Vec<RecordedAnalysis>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, candidate, baseline, created_ms, content_json FROM comparisons ORDER BY created_ms DESC, id")
            .map_err(self.err())?;
        let rows = stmt.query_map([], comparison_row).map_err(self.err())?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.err())
    }

    fn list_diagnoses(&self) -> StoreResult<Vec<RecordedAnalysis>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, run_id, created_ms, content_json FROM diagnoses ORDER BY created_ms DESC, id")
            .map_err(self.err())?;
        let rows = stmt.query_map([], analysis_row).map_err(self.err())?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.err())
    }

    fn comparison(&self, id: &str) -> StoreResult<Option<RecordedAnalysis>> {
        self.conn
            .query_row(
                "SELECT id, candidate, baseline, created_ms, content_json FROM comparisons WHERE id = ?1",
                [id],
                comparison_row,
            )
            .optional()
            .map_err(self.err())
    }

    fn save_calibration(
        &mut self,
        id: &str,
        judge: &str,
        identity: &str,
        passed: bool,
        content_json: &str,
    ) -> StoreResult<()> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO calibrations(id, judge, identity, passed, created_ms, content_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![id, judge, identity, passed as i64, now_ms(), content_json],
            )
            .map_err(self.err())?;
        Ok(())
    }

    fn latest_calibration(&self, identity: &str) -> StoreResult<Option<(String, bool, String)>> {
        self.conn
            .query_row(
                "SELECT id, passed, content_json FROM calibrations WHERE identity = ?1 ORDER BY created_ms DESC, rowid DESC LIMIT 1",
                [identity],
                |r| Ok((r.get(0)?, r.get::<_, i64>(1)? != 0, r.get(2)?)),
            )
            .optional()
            .map_err(self.err())
    }

    fn list_calibrations(&self) -> StoreResult<Vec<CalibrationRecord>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, judge, identity, passed, created_ms, content_json FROM calibrations ORDER BY created_ms, rowid")
            .map_err(self.err())?;
        let rows = stmt
            .query_map([], |r| {
                Ok(CalibrationRecord {
                    id: r.get(0)?,
                    judge: r.get(1)?,
                    identity: r.get(2)?,
                    passed: r.get::<_, i64>(3)? != 0,
                    created_ms: r.get(4)?,
                    content_json: r.get(5)?,
                })
            })
            .map_err(self.err())?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.err())
    }

    fn save_monitor(&mut self, id: &str, traffic: &str, content_json: &str) -> StoreResult<()> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO monitors(id, created_ms, traffic, content_json) VALUES (?1, ?2, ?3, ?4)",
                params![id, now_ms(), traffic, content_json],
            )
            .map_err(self.err())?;
        Ok(())
    }

    fn monitor(&self, id: &str) -> StoreResult<Option<MonitorRecord>> {
        self.conn
            .query_row(
                "SELECT id, created_ms, traffic, content_json FROM monitors WHERE id = ?1",
                [id],
                monitor_row,
            )
            .optional()
            .map_err(self.err())
    }

    fn list_monitors(&self) -> StoreResult<Vec<MonitorRecord>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, created_ms, traffic, content_json FROM monitors ORDER BY created_ms DESC, id DESC")
            .map_err(self.err())?;
        let rows = stmt.query_map([], monitor_row).map_err(self.err())?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.err())
    }

    fn import_artifacts(
        &mut self,
        diagnoses: &[RecordedAnalysis],
        comparisons: &[RecordedAnalysis],
        calibrations: &[CalibrationRecord],
        monitors: &[MonitorRecord],
    ) -> StoreResult<()> {
        let path = self.path.clone();
        let e = |source| backend(&path, source);
        let tx = self.conn.transaction().map_err(e)?;
        for d in diagnoses {
            tx.execute(
                "INSERT OR IGNORE INTO diagnoses(id, run_id, created_ms, content_json) VALUES (?1, ?2, ?3, ?4)",
                params![d.id, d.run_id, d.created_ms, d.content_json],
            )
            .map_err(e)?;
        }
        for c in comparisons {
            tx.execute(
                "INSERT OR IGNORE INTO comparisons(id, candidate, baseline, created_ms, content_json) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![c.id, c.run_id, c.baseline, c.created_ms, c.content_json],
            )
            .map_err(e)?;
        }
        for c in calibrations {
            tx.execute(
                "INSERT OR IGNORE INTO calibrations(id, judge, identity, passed, created_ms, content_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![c.id, c.judge, c.identity, c.passed as i64, c.created_ms, c.content_json],
            )
            .map_err(e)?;
        }
        for m in monitors {
            tx.execute(
                "INSERT OR IGNORE INTO monitors(id, created_ms, traffic, content_json) VALUES (?1, ?2, ?3, ?4)",
                params![m.id, m.created_ms, m.traffic, m.content_json],
            )
            .map_err(e)?;
        }
        tx.commit().map_err(e)
    }
}

fn monitor_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<MonitorRecord> {
    Ok(MonitorRecord {
        id: r.get(0)?,
        created_ms: r.get(1)?,
        traffic: r.get(2)?,
        content_json: r.get(3)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_say_what_to_do() {
        let err = |code, text: &str| {
            rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), Some(text.into()))
        };
        let full = record(
            "p.db",
            "run_1",
            err(rusqlite::ffi::SQLITE_FULL, "database or disk is full"),
        );
        assert_eq!(
            full.to_string(),
            "cannot write run run_1 to the run store p.db: database or disk is full: the disk \
             holding it is full: free some space. The cases recorded before are kept; once that \
             is fixed, finish the run with `oloproof run --resume run_1`"
        );
        let damaged = backend(
            "p.db",
            err(rusqlite::ffi::SQLITE_NOTADB, "file is not a database"),
        );
        assert!(damaged
            .to_string()
            .contains("salvage what is readable with `sqlite3 p.db .recover"));
        // Errors without advice are shown as SQLite gives them.
        let other = backend(
            "p.db",
            err(rusqlite::ffi::SQLITE_CONSTRAINT, "UNIQUE constraint failed"),
        );
        assert_eq!(
            other.to_string(),
            "run store p.db: UNIQUE constraint failed"
        );
    }

    #[test]
    fn a_schema_1_store_is_migrated_and_keeps_its_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            // What the last schema-1 build wrote: the tables, version 1, one finished run.
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
                 INSERT INTO meta VALUES ('schema_version', '1');",
            )
            .unwrap();
            conn.execute_batch(MIGRATIONS[0].1).unwrap();
            conn.execute_batch(
                "INSERT INTO runs VALUES ('run_old', 1, 'complete', 'o.yaml', '{}', 'h', '{}', '{}', NULL, 2);
                 INSERT INTO run_cases(run_id, ord, case_id, case_json, state, attempt, lease_until, trace_json)
                   VALUES ('run_old', 0, 'a', '{}', 'done', 1, 99, '{}');",
            )
            .unwrap();
        }
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        let run = store.run(&RunId::from("run_old")).unwrap();
        assert_eq!((run.status, run.done_count), (RunStatus::Complete, 1));
        let cases = store.cases(&RunId::from("run_old")).unwrap();
        assert_eq!(cases[0].cache_use_json, None);
        // The tables added since are there (schema 4: monitor reports).
        assert!(store.list_monitors().unwrap().is_empty());
        // Opening again finds it current.
        drop(store);
        assert_eq!(
            SqliteStore::open(&path).unwrap().schema_version().unwrap(),
            SCHEMA_VERSION
        );
    }

    #[test]
    fn a_newer_store_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        drop(SqliteStore::open(&path).unwrap());
        Connection::open(&path)
            .unwrap()
            .execute(
                "UPDATE meta SET value = '99' WHERE key = 'schema_version'",
                [],
            )
            .unwrap();
        assert!(matches!(
            SqliteStore::open(&path),
            Err(StoreError::Schema { found: 99, .. })
        ));
    }
}
