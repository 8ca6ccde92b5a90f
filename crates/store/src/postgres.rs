//! The Postgres backend: one database shared by every worker of a run, on any machine.
//!
//! The client is the blocking `postgres` crate of rust-postgres: the engine is threaded (one
//! system connection and one store connection per worker thread), so a blocking client fits it
//! without an async runtime of our own; TLS goes through rustls (`tokio-postgres-rustls`, ring
//! provider, the Mozilla roots, or the CA file named by `sslrootcert=`).
//!
//! **Location.** `postgres://user@host[:port]/db[?sslmode=disable|prefer|require]`. The
//! password is never part of the URL (a URL is recorded in each run's settings and shown in
//! messages): it is read from `PGPASSWORD`, or from the variable the URL names with
//! `password_env=NAME`; a URL that carries one is refused before anything is sent.
//!
//! **Work queue.** [`RunStore::claim_batch`] is one statement: the next `limit` pending cases
//! whose lease is free, `FOR UPDATE SKIP LOCKED` (so concurrent claimers never wait on each
//! other nor take the same case), each getting attempt + 1 and a lease on the server's clock
//! (`oloproof_now_ms()`), so workers whose clocks disagree still agree on expiry. A completion
//! is written only while the attempt and the lease holder are unchanged.
//!
//! **Connection loss.** Every operation runs in its own transaction; when the connection is
//! lost (the server restarted, a network cut) or the server refuses for a passing reason
//! (shutting down, starting up, a serialisation failure), the client reconnects and runs the
//! transaction again with exponential backoff (100 ms doubling to 5 s) for up to
//! [`ENV_RETRY`] seconds (default [`DEFAULT_RETRY_S`]). A completion retried after its commit
//! was lost in flight is recognised (same attempt, same holder, already done) and not written
//! twice.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use oloproof_core::run::RunRecord;
use oloproof_core::store::{
    encode, redact_url, ArtifactStore, CacheEntry, CacheLayer, CacheStore, CalibrationRecord,
    CaseRecord, CaseResult, CaseState, Claim, ClaimedCase, CollectStore, CollectedRequest,
    MonitorRecord, NewRun, OtlpEncoding, OtlpSignal, RecordedAnalysis, RunExport, RunId, RunStatus,
    RunStore, StoreError, StoreResult, VerdictRecord, WorkerId,
};
use oloproof_core::summary::RunSummary;
use postgres::error::SqlState;
use postgres::{Client, Row};

use crate::{decode_case, now_ms};

/// The schema migrations, in order: `(version, SQL)`.
pub const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("../migrations/postgres/0001_initial.sql")),
    (2, include_str!("../migrations/postgres/0002_collected.sql")),
    (3, include_str!("../migrations/postgres/0003_monitors.sql")),
    (
        4,
        include_str!("../migrations/postgres/0004_collected_logs.sql"),
    ),
    (
        5,
        include_str!("../migrations/postgres/0005_stored_trace_form.sql"),
    ),
];

/// The schema version a database has once opened for writing.
pub const SCHEMA_VERSION: i64 = 5;

/// How long to keep retrying an operation whose connection was lost, in seconds (default
/// [`DEFAULT_RETRY_S`]).
pub const ENV_RETRY: &str = "OLOPROOF_STORE_RETRY_S";
/// The default of [`ENV_RETRY`].
pub const DEFAULT_RETRY_S: f64 = 120.0;
/// The variable read for the password when the URL names none with `password_env=`.
pub const ENV_PGPASSWORD: &str = "PGPASSWORD";

/// The advisory lock key that serialises migrations (two workers starting at once).
const MIGRATION_LOCK: i64 = 0x6f6c_6f70_726f_6f66;

/// The Postgres run store: one connection (reconnected when lost).
pub struct PgStore {
    client: Mutex<Client>,
    /// The cache lookup, prepared once per connection (cleared on reconnect).
    lookup: Mutex<Option<postgres::Statement>>,
    target: Target,
}

/// What it takes to (re)connect.
struct Target {
    config: postgres::Config,
    tls: tokio_postgres_rustls::MakeRustlsConnect,
    shown: String,
    retry: Duration,
}

/// A failure inside one attempt of an operation.
enum Fail {
    /// From Postgres; maybe passing.
    Pg(postgres::Error),
    /// Decided: not retried.
    Store(StoreError),
}

impl From<postgres::Error> for Fail {
    fn from(e: postgres::Error) -> Self {
        Fail::Pg(e)
    }
}

fn retry_budget() -> StoreResult<Duration> {
    let Ok(value) = std::env::var(ENV_RETRY) else {
        return Ok(Duration::from_secs_f64(DEFAULT_RETRY_S));
    };
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0 && *s <= 86_400.0)
        .map(Duration::from_secs_f64)
        .ok_or(StoreError::Setting {
            name: ENV_RETRY.into(),
            value,
            expected: "a number of seconds between 0 and 86400".into(),
        })
}

/// Whether `e` may pass if the operation is tried again on a fresh connection.
fn is_transient(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    if let Some(code) = e.code() {
        let c = code.code();
        return c.starts_with("08")
            || [
                SqlState::ADMIN_SHUTDOWN,
                SqlState::CRASH_SHUTDOWN,
                SqlState::CANNOT_CONNECT_NOW,
                SqlState::T_R_SERIALIZATION_FAILURE,
                SqlState::T_R_DEADLOCK_DETECTED,
                SqlState::TOO_MANY_CONNECTIONS,
            ]
            .contains(code);
    }
    // No SQLSTATE: the connection failed below the protocol (refused, reset, timed out).
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if s.downcast_ref::<std::io::Error>().is_some() {
            return true;
        }
        source = s.source();
    }
    false
}

/// The message of a Postgres failure with what to do about it.
fn describe(e: &postgres::Error) -> String {
    let text = match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    };
    let advice = match e.code() {
        Some(c)
            if *c == SqlState::INVALID_PASSWORD
                || *c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION =>
        {
            "check the user in the URL and the password in PGPASSWORD (or in the variable \
             `password_env=` names)"
        }
        Some(c) if *c == SqlState::INVALID_CATALOG_NAME => {
            "create the database first (`createdb NAME`) or name an existing one"
        }
        Some(c) if *c == SqlState::TOO_MANY_CONNECTIONS => {
            "the server has no connection slot left: run fewer workers or threads, or raise \
             max_connections"
        }
        Some(c) if *c == SqlState::INSUFFICIENT_PRIVILEGE => {
            "the user may not create or write the Oloproof tables: grant it CREATE and write \
             access on the database (or its schema)"
        }
        _ if is_transient(e) => {
            "the server cannot be reached or closed the connection: check that it is running \
             and reachable, then run the command again"
        }
        _ => "",
    };
    if advice.is_empty() {
        text
    } else {
        format!("{text}: {advice}")
    }
}

/// Reads a Postgres URL: its connection settings and the password from the environment.
fn parse_url(url: &str) -> StoreResult<(postgres::Config, Option<String>, String)> {
    let shown = redact_url(url);
    let bad = |message: String| StoreError::Location {
        location: shown.clone(),
        message,
    };
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, q),
        None => (url, ""),
    };
    let authority = base
        .split_once("://")
        .map(|(_, rest)| rest.split('/').next().unwrap_or(""))
        .unwrap_or("");
    let has_password_param = query
        .split('&')
        .any(|kv| kv.split_once('=').is_some_and(|(k, _)| k == "password"));
    if authority
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| userinfo.contains(':'))
        || has_password_param
    {
        return Err(bad(
            "the URL carries a password, which would be recorded with every run and shown in \
             messages; remove it and set PGPASSWORD (or name another variable with \
             `?password_env=NAME`)"
                .into(),
        ));
    }
    let mut password_env = None;
    let mut ca_file = None;
    let mut kept = Vec::new();
    for kv in query.split('&').filter(|kv| !kv.is_empty()) {
        match kv.split_once('=') {
            Some(("password_env", v)) => password_env = Some(v.to_string()),
            Some(("sslrootcert", v)) => ca_file = Some(v.to_string()),
            _ => kept.push(kv),
        }
    }
    let rebuilt = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    let mut config: postgres::Config = rebuilt.parse().map_err(|e: postgres::Error| {
        bad(format!(
            "not a Postgres URL ({e}); expected postgres://user@host[:port]/database"
        ))
    })?;
    if config.get_user().is_none() {
        if let Some(user) = ["PGUSER", "USER"]
            .iter()
            .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
        {
            config.user(&user);
        }
    }
    let password = match &password_env {
        Some(name) => Some(std::env::var(name).map_err(|_| {
            bad(format!(
                "`password_env={name}` names the variable holding the password, but {name} is \
                 not set"
            ))
        })?),
        None => std::env::var(ENV_PGPASSWORD).ok(),
    };
    if let Some(p) = &password {
        config.password(p);
    }
    config
        .application_name("oloproof")
        .connect_timeout(Duration::from_secs(10))
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(30));
    Ok((config, ca_file, shown))
}

fn tls(
    ca_file: Option<&str>,
    shown: &str,
) -> StoreResult<tokio_postgres_rustls::MakeRustlsConnect> {
    use rustls::pki_types::pem::PemObject;
    let bad = |message: String| StoreError::Location {
        location: shown.to_string(),
        message,
    };
    let mut roots = rustls::RootCertStore::empty();
    match ca_file {
        Some(path) => {
            let certs = rustls::pki_types::CertificateDer::pem_file_iter(path)
                .map_err(|e| bad(format!("cannot read the CA file sslrootcert={path}: {e}")))?;
            for cert in certs {
                let cert = cert
                    .map_err(|e| bad(format!("cannot read the CA file sslrootcert={path}: {e}")))?;
                roots.add(cert).map_err(|e| {
                    bad(format!(
                        "the CA file sslrootcert={path} has a bad certificate: {e}"
                    ))
                })?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| bad(format!("TLS setup failed: {e}")))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

impl Target {
    fn connect(&self, deadline: Instant) -> StoreResult<Client> {
        let mut delay = Duration::from_millis(100);
        loop {
            match self.config.connect(self.tls.clone()) {
                Ok(client) => return Ok(client),
                Err(e) if is_transient(&e) && Instant::now() + delay < deadline => {
                    tracing::warn!(store = %self.shown, error = %describe(&e), retry_in_ms = delay.as_millis() as u64, "cannot connect to the run store; retrying");
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
                Err(e) => return Err(self.backend(e)),
            }
        }
    }

    fn backend(&self, e: postgres::Error) -> StoreError {
        StoreError::Backend {
            location: self.shown.clone(),
            detail: describe(&e),
            source: Box::new(e),
        }
    }
}

impl PgStore {
    /// Connects to the database `url` names and creates or migrates the Oloproof tables.
    pub fn open(url: &str) -> StoreResult<Self> {
        let store = Self::connect(url)?;
        store.migrate()?;
        Ok(store)
    }

    /// Connects without touching the schema (a worker thread's cache lookups).
    pub fn connect(url: &str) -> StoreResult<Self> {
        let (config, ca_file, shown) = parse_url(url)?;
        let target = Target {
            tls: tls(ca_file.as_deref(), &shown)?,
            config,
            shown,
            retry: retry_budget()?,
        };
        let client = target.connect(Instant::now() + target.retry)?;
        Ok(PgStore {
            client: Mutex::new(client),
            lookup: Mutex::new(None),
            target,
        })
    }

    /// The schema version recorded in the database (0 before the first migration).
    pub fn schema_version(&self) -> StoreResult<i64> {
        self.run_op(None, |c| {
            let exists: bool = c
                .query_one("SELECT to_regclass('meta') IS NOT NULL", &[])?
                .try_get(0)?;
            if !exists {
                return Ok(0);
            }
            let row = c.query_opt("SELECT value FROM meta WHERE key = 'schema_version'", &[])?;
            Ok(match row {
                Some(r) => r.try_get::<_, String>(0)?.parse().unwrap_or(0),
                None => 0,
            })
        })
    }

    fn migrate(&self) -> StoreResult<()> {
        self.run_op(None, |c| {
            let mut tx = c.transaction()?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
            tx.batch_execute(
                "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
                 CREATE OR REPLACE FUNCTION oloproof_now_ms() RETURNS BIGINT
                   AS $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT $$
                   LANGUAGE SQL VOLATILE;",
            )?;
            let found: i64 =
                match tx.query_opt("SELECT value FROM meta WHERE key = 'schema_version'", &[])? {
                    Some(r) => r.try_get::<_, String>(0)?.parse().unwrap_or(0),
                    None => 0,
                };
            if found > SCHEMA_VERSION {
                return Err(Fail::Store(StoreError::Schema {
                    found,
                    supported: SCHEMA_VERSION,
                }));
            }
            for (version, sql) in MIGRATIONS {
                if *version > found {
                    tx.batch_execute(sql)?;
                }
            }
            tx.execute(
                "INSERT INTO meta(key, value) VALUES ('schema_version', $1)
                 ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                &[&SCHEMA_VERSION.to_string()],
            )?;
            tx.commit()?;
            Ok(())
        })
    }

    fn lock(&self) -> MutexGuard<'_, Client> {
        self.client.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `op` on the connection, reconnecting and running it again while the failure is a
    /// passing one and the retry budget lasts. `run_id` makes a failure a
    /// [`StoreError::Record`] (a run's progress could not be written).
    fn run_op<T>(
        &self,
        run_id: Option<&str>,
        mut op: impl FnMut(&mut Client) -> Result<T, Fail>,
    ) -> StoreResult<T> {
        let mut client = self.lock();
        let deadline = Instant::now() + self.target.retry;
        let mut delay = Duration::from_millis(100);
        loop {
            if client.is_closed() {
                *client = self.target.connect(deadline)?;
                *self.lookup.lock().unwrap_or_else(|p| p.into_inner()) = None;
            }
            match op(&mut client) {
                Ok(v) => return Ok(v),
                Err(Fail::Store(e)) => return Err(e),
                Err(Fail::Pg(e)) if is_transient(&e) && Instant::now() + delay < deadline => {
                    tracing::warn!(store = %self.target.shown, error = %describe(&e), retry_in_ms = delay.as_millis() as u64, "run store operation failed; retrying");
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(Duration::from_secs(5));
                    if !client.is_closed() {
                        // A refusal with the connection still open (a serialisation failure):
                        // the same connection is used again.
                        continue;
                    }
                }
                Err(Fail::Pg(e)) => {
                    return Err(match run_id {
                        Some(run_id) => StoreError::Record {
                            location: self.target.shown.clone(),
                            run_id: run_id.to_string(),
                            detail: describe(&e),
                            source: Box::new(e),
                        },
                        None => self.target.backend(e),
                    })
                }
            }
        }
    }
}

const RUN_SELECT: &str = "SELECT r.id, r.created_ms, r.status, r.config_path, r.settings_json, r.identity, r.system_json,
       r.summary_json, r.parent,
       (SELECT COUNT(*) FROM run_cases c WHERE c.run_id = r.id),
       (SELECT COUNT(*) FROM run_cases c WHERE c.run_id = r.id AND c.state = 'done'),
       r.finished_ms
  FROM runs r";

const CASE_SELECT: &str =
    "SELECT ord, case_id, case_json, state, attempt, trace_json, cache_use_json FROM run_cases";

fn corrupt_text(what: &str, text: &str) -> Fail {
    Fail::Store(StoreError::Corrupt {
        what: what.to_string(),
        source: <serde_json::Error as serde::de::Error>::custom(format!(
            "`{text}` is not a {what}"
        )),
    })
}

fn run_row(r: &Row) -> Result<(RunRecord, Option<i64>), Fail> {
    let status: String = r.try_get(2)?;
    Ok((
        RunRecord {
            id: r.try_get(0)?,
            created_ms: r.try_get(1)?,
            status: RunStatus::parse(&status).ok_or_else(|| corrupt_text("run status", &status))?,
            config_path: r.try_get(3)?,
            settings_json: r.try_get(4)?,
            identity: r.try_get(5)?,
            system_json: r.try_get(6)?,
            summary_json: r.try_get(7)?,
            parent: r.try_get(8)?,
            case_count: r.try_get(9)?,
            done_count: r.try_get(10)?,
        },
        r.try_get(11)?,
    ))
}

fn case_row(r: &Row) -> Result<CaseRecord, Fail> {
    let state: String = r.try_get(3)?;
    Ok(CaseRecord {
        ord: r.try_get(0)?,
        case_id: r.try_get(1)?,
        case_json: r.try_get(2)?,
        state: CaseState::parse(&state).ok_or_else(|| corrupt_text("case state", &state))?,
        attempt: r.try_get(4)?,
        trace_json: r.try_get(5)?,
        cache_use_json: r.try_get(6)?,
    })
}

fn analysis_row(r: &Row) -> Result<RecordedAnalysis, Fail> {
    Ok(RecordedAnalysis {
        id: r.try_get(0)?,
        run_id: r.try_get(1)?,
        baseline: None,
        created_ms: r.try_get(2)?,
        content_json: r.try_get(3)?,
    })
}

fn comparison_row(r: &Row) -> Result<RecordedAnalysis, Fail> {
    Ok(RecordedAnalysis {
        id: r.try_get(0)?,
        run_id: r.try_get(1)?,
        baseline: Some(r.try_get(2)?),
        created_ms: r.try_get(3)?,
        content_json: r.try_get(4)?,
    })
}

fn monitor_row(r: &Row) -> Result<MonitorRecord, Fail> {
    Ok(MonitorRecord {
        id: r.try_get(0)?,
        created_ms: r.try_get(1)?,
        traffic: r.try_get(2)?,
        content_json: r.try_get(3)?,
    })
}

impl RunStore for PgStore {
    fn location(&self) -> String {
        self.target.shown.clone()
    }

    fn create_run(&mut self, run: &NewRun<'_>) -> StoreResult<()> {
        let settings_json = encode(run.settings, || "settings".into())?;
        let cases = run
            .cases
            .iter()
            .map(|c| Ok((c.id.as_str(), encode(c, || format!("case {}", c.id))?)))
            .collect::<StoreResult<Vec<_>>>()?;
        let now = now_ms();
        self.run_op(None, |c| {
            let mut tx = c.transaction()?;
            tx.execute(
                "INSERT INTO runs(id, created_ms, status, config_path, settings_json, identity, system_json, parent)
                 VALUES ($1, $2, 'running', $3, $4, $5, $6, $7)",
                &[&run.id.as_str(), &now, &run.config_path, &settings_json, &run.identity, &run.system_json, &run.parent],
            )?;
            // Cases in chunks of one multi-row statement each: 2,000 cases are ten round trips.
            for (chunk_no, chunk) in cases.chunks(200).enumerate() {
                let ords: Vec<i64> = (0..chunk.len()).map(|i| (chunk_no * 200 + i) as i64).collect();
                let ids: Vec<&str> = chunk.iter().map(|(id, _)| *id).collect();
                let jsons: Vec<&str> = chunk.iter().map(|(_, j)| j.as_str()).collect();
                tx.execute(
                    "INSERT INTO run_cases(run_id, ord, case_id, case_json)
                     SELECT $1, o, i, j FROM unnest($2::BIGINT[], $3::TEXT[], $4::TEXT[]) AS t(o, i, j)",
                    &[&run.id.as_str(), &ords, &ids, &jsons],
                )?;
            }
            tx.commit()?;
            Ok(())
        })
    }

    fn claim_batch(&mut self, run_id: &RunId, claim: &Claim<'_>) -> StoreResult<Vec<ClaimedCase>> {
        let limit = claim.limit as i64;
        let lease = claim.lease.as_millis() as i64;
        let mut rows = self.run_op(Some(run_id), |c| {
            let rows = c.query(
                "WITH picked AS (
                   SELECT case_id FROM run_cases
                    WHERE run_id = $1 AND state = 'pending' AND lease_holder IS DISTINCT FROM $5
                      AND (NOT $4 OR lease_until IS NULL OR lease_until < oloproof_now_ms())
                    ORDER BY ord LIMIT $2
                    FOR UPDATE SKIP LOCKED)
                 UPDATE run_cases c
                    SET attempt = c.attempt + 1, lease_until = oloproof_now_ms() + $3, lease_holder = $5
                   FROM picked
                  WHERE c.run_id = $1 AND c.case_id = picked.case_id
                 RETURNING c.ord, c.case_id, c.case_json, c.attempt",
                &[&run_id.as_str(), &limit, &lease, &claim.respect_leases, &claim.worker.as_str()],
            )?;
            rows.iter()
                .map(|r| {
                    Ok((
                        r.try_get::<_, i64>(0)?,
                        r.try_get::<_, String>(1)?,
                        r.try_get::<_, String>(2)?,
                        r.try_get::<_, i64>(3)?,
                    ))
                })
                .collect::<Result<Vec<_>, Fail>>()
        })?;
        rows.sort_by_key(|r| r.0);
        rows.into_iter()
            .map(|(ord, case_id, case_json, attempt)| {
                decode_case(ord, &case_id, &case_json, attempt, claim.max_attempts)
            })
            .collect()
    }

    fn claimable(&mut self, run_id: &RunId, claim: &Claim<'_>, cap: usize) -> StoreResult<usize> {
        let cap = cap as i64;
        let n = self.run_op(Some(run_id), |c| {
            let row = c.query_one(
                "SELECT COUNT(*) FROM (
                   SELECT 1 FROM run_cases
                    WHERE run_id = $1 AND state = 'pending' AND lease_holder IS DISTINCT FROM $3
                      AND (NOT $4 OR lease_until IS NULL OR lease_until < oloproof_now_ms())
                    LIMIT $2) s",
                &[
                    &run_id.as_str(),
                    &cap,
                    &claim.worker.as_str(),
                    &claim.respect_leases,
                ],
            )?;
            Ok(row.try_get::<_, i64>(0)?)
        })?;
        Ok(n.max(0) as usize)
    }

    fn heartbeat(
        &mut self,
        run_id: &RunId,
        worker: &WorkerId,
        lease: Duration,
    ) -> StoreResult<u64> {
        let lease = lease.as_millis() as i64;
        self.run_op(Some(run_id), |c| {
            Ok(c.execute(
                "UPDATE run_cases SET lease_until = oloproof_now_ms() + $3
                  WHERE run_id = $1 AND lease_holder = $2 AND state = 'pending'",
                &[&run_id.as_str(), &worker.as_str(), &lease],
            )?)
        })
    }

    fn complete_cases(
        &mut self,
        run_id: &RunId,
        worker: &WorkerId,
        results: &[CaseResult<'_>],
    ) -> StoreResult<Vec<bool>> {
        let encoded = crate::encode_results(results)?;
        // The batch as columns: every statement below takes whole arrays (`unnest`), so a
        // batch costs at most three round trips whatever its size, not nine a case.
        let case_ids: Vec<&str> = results.iter().map(|r| r.case_id).collect();
        let attempts: Vec<i64> = results.iter().map(|r| r.attempt).collect();
        let traces: Vec<&str> = encoded.iter().map(|e| e.trace_json.as_ref()).collect();
        let uses: Vec<&str> = encoded.iter().map(|e| e.cache_use_json.as_str()).collect();
        self.run_op(Some(run_id), |c| {
            let mut tx = c.transaction()?;
            // Guarded by the attempt and the lease holder: a worker that lost its lease
            // writes nothing.
            let updated: std::collections::HashSet<String> = tx
                .query(
                    "UPDATE run_cases c
                        SET state = 'done', trace_json = u.trace_json, lease_until = NULL,
                            cache_use_json = u.cache_use_json
                       FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[])
                            AS u(case_id, attempt, trace_json, cache_use_json)
                      WHERE c.run_id = $1 AND c.case_id = u.case_id AND c.attempt = u.attempt
                        AND c.state = 'pending' AND c.lease_holder = $6
                  RETURNING c.case_id",
                    &[&run_id.as_str(), &case_ids, &attempts, &traces, &uses, &worker.as_str()],
                )?
                .iter()
                .map(|r| r.try_get::<_, String>(0))
                .collect::<Result<_, _>>()?;
            // A case not updated may already be ours (a completion retried after its commit
            // was lost with the connection): that counts as written.
            let stale: Vec<usize> = (0..results.len())
                .filter(|&i| !updated.contains(results[i].case_id))
                .collect();
            let mut already = std::collections::HashSet::new();
            if !stale.is_empty() {
                let ids: Vec<&str> = stale.iter().map(|&i| results[i].case_id).collect();
                let atts: Vec<i64> = stale.iter().map(|&i| results[i].attempt).collect();
                for r in tx.query(
                    "SELECT c.case_id FROM run_cases c
                       JOIN unnest($2::text[], $3::bigint[]) AS u(case_id, attempt)
                         ON c.case_id = u.case_id AND c.attempt = u.attempt
                      WHERE c.run_id = $1 AND c.state = 'done' AND c.lease_holder = $4",
                    &[&run_id.as_str(), &ids, &atts, &worker.as_str()],
                )? {
                    already.insert(r.try_get::<_, String>(0)?);
                }
            }
            // Verdicts of the cases this call recorded, in one statement; a (case, criterion) pair written twice in a batch keeps the last verdict,
            // as row-by-row upserts did.
            let mut verdict_at: std::collections::HashMap<(&str, &str), usize> =
                std::collections::HashMap::new();
            let (mut v_case, mut v_criterion, mut v_json) = (Vec::new(), Vec::new(), Vec::new());
            for (result, enc) in results.iter().zip(&encoded) {
                if !updated.contains(result.case_id) {
                    continue;
                }
                for (criterion, json) in &enc.verdicts {
                    match verdict_at.get(&(result.case_id, criterion.as_str())) {
                        Some(&i) => v_json[i] = json.as_str(),
                        None => {
                            verdict_at.insert((result.case_id, criterion.as_str()), v_json.len());
                            v_case.push(result.case_id);
                            v_criterion.push(criterion.as_str());
                            v_json.push(json.as_str());
                        }
                    }
                }
            }
            if !v_case.is_empty() {
                tx.execute(
                    "INSERT INTO verdicts(run_id, case_id, criterion, verdict_json)
                     SELECT $1, u.case_id, u.criterion, u.verdict_json
                       FROM unnest($2::text[], $3::text[], $4::text[]) AS u(case_id, criterion, verdict_json)
                     ON CONFLICT (run_id, case_id, criterion) DO UPDATE SET verdict_json = EXCLUDED.verdict_json",
                    &[&run_id.as_str(), &v_case, &v_criterion, &v_json],
                )?;
            }
            tx.commit()?;
            Ok(results
                .iter()
                .map(|r| updated.contains(r.case_id) || already.contains(r.case_id))
                .collect())
        })
    }

    fn finish_run(
        &mut self,
        run_id: &RunId,
        status: RunStatus,
        summary: &RunSummary,
    ) -> StoreResult<bool> {
        let summary_json = encode(summary, || "summary".into())?;
        let now = now_ms();
        self.run_op(Some(run_id), |c| {
            let n = c.execute(
                "UPDATE runs SET status = $2, summary_json = $3, finished_ms = $4
                  WHERE id = $1 AND status = 'running'",
                &[&run_id.as_str(), &status.as_str(), &summary_json, &now],
            )?;
            Ok(n > 0)
        })
    }

    fn mark_interrupted(&mut self, run_id: &RunId) -> StoreResult<()> {
        self.run_op(None, |c| {
            c.execute(
                "UPDATE runs SET status = 'interrupted' WHERE id = $1 AND status = 'running'",
                &[&run_id.as_str()],
            )?;
            Ok(())
        })
    }

    fn reopen_run(&mut self, run_id: &RunId) -> StoreResult<()> {
        self.run_op(Some(run_id), |c| {
            c.execute(
                "UPDATE runs SET status = 'running' WHERE id = $1",
                &[&run_id.as_str()],
            )?;
            Ok(())
        })
    }

    fn list_runs(&self) -> StoreResult<Vec<RunRecord>> {
        self.run_op(None, |c| {
            c.query(
                &format!("{RUN_SELECT} ORDER BY r.created_ms DESC, r.id DESC"),
                &[],
            )?
            .iter()
            .map(|r| run_row(r).map(|(record, _)| record))
            .collect()
        })
    }

    fn run(&self, run_id: &RunId) -> StoreResult<RunRecord> {
        self.run_row(run_id).map(|(record, _)| record)
    }

    fn cases(&self, run_id: &RunId) -> StoreResult<Vec<CaseRecord>> {
        self.run_op(None, |c| {
            c.query(
                &format!("{CASE_SELECT} WHERE run_id = $1 ORDER BY ord"),
                &[&run_id.as_str()],
            )?
            .iter()
            .map(case_row)
            .collect()
        })
    }

    fn verdicts(&self, run_id: &RunId) -> StoreResult<Vec<VerdictRecord>> {
        self.run_op(None, |c| {
            c.query(
                "SELECT v.case_id, v.criterion, v.verdict_json FROM verdicts v
                 JOIN run_cases c ON c.run_id = v.run_id AND c.case_id = v.case_id
                 WHERE v.run_id = $1 ORDER BY c.ord, v.criterion",
                &[&run_id.as_str()],
            )?
            .iter()
            .map(|r| {
                Ok(VerdictRecord {
                    case_id: r.try_get(0)?,
                    criterion: r.try_get(1)?,
                    verdict_json: r.try_get(2)?,
                })
            })
            .collect()
        })
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
        let r = &run.record;
        self.run_op(None, |c| {
            let mut tx = c.transaction()?;
            let inserted = tx.execute(
                "INSERT INTO runs(id, created_ms, status, config_path, settings_json, identity, system_json, summary_json, parent, finished_ms)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING",
                &[&r.id, &r.created_ms, &r.status.as_str(), &r.config_path, &r.settings_json, &r.identity, &r.system_json, &r.summary_json, &r.parent, &run.finished_ms],
            )?;
            if inserted == 0 {
                return Ok(false);
            }
            let case = tx.prepare(
                "INSERT INTO run_cases(run_id, ord, case_id, case_json, state, attempt, trace_json, cache_use_json)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )?;
            for k in &run.cases {
                tx.execute(&case, &[&r.id, &k.ord, &k.case_id, &k.case_json, &k.state.as_str(), &k.attempt, &k.trace_json, &k.cache_use_json])?;
            }
            let verdict = tx.prepare(
                "INSERT INTO verdicts(run_id, case_id, criterion, verdict_json) VALUES ($1, $2, $3, $4)",
            )?;
            for v in &run.verdicts {
                tx.execute(&verdict, &[&r.id, &v.case_id, &v.criterion, &v.verdict_json])?;
            }
            tx.commit()?;
            Ok(true)
        })
    }
}

impl PgStore {
    fn run_row(&self, run_id: &RunId) -> StoreResult<(RunRecord, Option<i64>)> {
        self.run_op(None, |c| {
            match c.query_opt(
                &format!("{RUN_SELECT} WHERE r.id = $1"),
                &[&run_id.as_str()],
            )? {
                Some(r) => run_row(&r),
                None => Err(Fail::Store(StoreError::UnknownRun(run_id.to_string()))),
            }
        })
    }
}

impl CacheStore for PgStore {
    fn cache_get(&self, layer: CacheLayer, key: &str) -> StoreResult<Option<String>> {
        self.run_op(None, |c| {
            let mut lookup = self.lookup.lock().unwrap_or_else(|p| p.into_inner());
            let stmt = match &*lookup {
                Some(s) => s.clone(),
                None => {
                    let s = c.prepare("SELECT value FROM cache WHERE layer = $1 AND key = $2")?;
                    *lookup = Some(s.clone());
                    s
                }
            };
            drop(lookup);
            match c.query_opt(&stmt, &[&layer.as_str(), &key])? {
                Some(r) => Ok(Some(r.try_get(0)?)),
                None => Ok(None),
            }
        })
    }

    fn put_cache_entries(&mut self, entries: &[CacheEntry]) -> StoreResult<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let now = now_ms();
        self.run_op(None, |c| {
            let layers: Vec<&str> = entries.iter().map(|e| e.0.as_str()).collect();
            let keys: Vec<&str> = entries.iter().map(|e| e.1.as_str()).collect();
            let values: Vec<&str> = entries.iter().map(|e| e.2.as_str()).collect();
            // One statement for the whole list (an implicit transaction).
            c.execute(
                "INSERT INTO cache(layer, key, value, created_ms)
                 SELECT u.layer, u.key, u.value, $4
                   FROM unnest($1::text[], $2::text[], $3::text[]) AS u(layer, key, value)
                 ON CONFLICT (layer, key) DO NOTHING",
                &[&layers, &keys, &values, &now],
            )?;
            Ok(())
        })
    }

    /// Nothing to do: each lookup is one indexed read, and Postgres takes no lock for it.
    fn begin_read(&self) -> StoreResult<()> {
        Ok(())
    }

    fn end_read(&self) {}

    fn cache_page(
        &self,
        after: Option<(CacheLayer, String)>,
        limit: usize,
    ) -> StoreResult<Vec<CacheEntry>> {
        let (layer, key) = match &after {
            Some((l, k)) => (l.as_str(), k.as_str()),
            None => ("", ""),
        };
        let limit = limit as i64;
        self.run_op(None, |c| {
            c.query(
                "SELECT layer, key, value FROM cache WHERE (layer, key) > ($1, $2)
                 ORDER BY layer, key LIMIT $3",
                &[&layer, &key, &limit],
            )?
            .iter()
            .map(|r| {
                let layer: String = r.try_get(0)?;
                Ok((
                    CacheLayer::parse(&layer).ok_or_else(|| corrupt_text("cache layer", &layer))?,
                    r.try_get(1)?,
                    r.try_get(2)?,
                ))
            })
            .collect()
        })
    }
}

impl CollectStore for PgStore {
    fn append_collected(&mut self, requests: &[CollectedRequest]) -> StoreResult<Vec<i64>> {
        if requests.is_empty() {
            return Ok(Vec::new());
        }
        self.run_op(None, |c| {
            let received: Vec<i64> = requests.iter().map(|r| r.received_ms).collect();
            let signals: Vec<&str> = requests.iter().map(|r| r.signal.as_str()).collect();
            let encodings: Vec<&str> = requests.iter().map(|r| r.encoding.as_str()).collect();
            let spans: Vec<i64> = requests.iter().map(|r| r.spans).collect();
            let bodies: Vec<&[u8]> = requests.iter().map(|r| r.body.as_slice()).collect();
            // One statement (an implicit transaction); `WITH ORDINALITY` keeps the given order.
            let rows = c.query(
                "INSERT INTO collected_requests(received_ms, signal, encoding, spans, body)
                 SELECT u.received_ms, u.signal, u.encoding, u.spans, u.body
                   FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::bytea[])
                        WITH ORDINALITY AS u(received_ms, signal, encoding, spans, body, n)
                  ORDER BY u.n
                 RETURNING seq",
                &[&received, &signals, &encodings, &spans, &bodies],
            )?;
            let mut seqs = rows
                .iter()
                .map(|r| r.try_get::<_, i64>(0))
                .collect::<Result<Vec<_>, _>>()?;
            seqs.sort_unstable();
            Ok(seqs)
        })
    }

    fn collected_page(&self, after: i64, limit: usize) -> StoreResult<Vec<CollectedRequest>> {
        self.run_op(None, |c| {
            let rows = c.query(
                "SELECT seq, received_ms, encoding, spans, body, signal FROM collected_requests
                  WHERE seq > $1 ORDER BY seq LIMIT $2",
                &[&after, &(limit as i64)],
            )?;
            let mut out = Vec::with_capacity(rows.len());
            for r in rows {
                let encoding: String = r.try_get(2)?;
                let parsed = OtlpEncoding::parse(&encoding)
                    .ok_or_else(|| corrupt_text("request encoding", &encoding))?;
                let signal: String = r.try_get(5)?;
                let signal = OtlpSignal::parse(&signal)
                    .ok_or_else(|| corrupt_text("request signal", &signal))?;
                out.push(CollectedRequest {
                    seq: r.try_get(0)?,
                    received_ms: r.try_get(1)?,
                    signal,
                    encoding: parsed,
                    spans: r.try_get(3)?,
                    body: r.try_get(4)?,
                });
            }
            Ok(out)
        })
    }
}

impl ArtifactStore for PgStore {
    fn save_diagnosis(&mut self, id: &str, run_id: &str, content_json: &str) -> StoreResult<()> {
        let now = now_ms();
        self.run_op(None, |c| {
            c.execute(
                "INSERT INTO diagnoses(id, run_id, created_ms, content_json) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (id) DO UPDATE SET run_id = EXCLUDED.run_id, created_ms = EXCLUDED.created_ms, content_json = EXCLUDED.content_json",
                &[&id, &run_id, &now, &content_json],
            )?;
            Ok(())
        })
    }

    fn save_comparison(
        &mut self,
        id: &str,
        candidate: &str,
        baseline: &str,
        content_json: &str,
    ) -> StoreResult<()> {
        let now = now_ms();
        self.run_op(None, |c| {
            c.execute(
                "INSERT INTO comparisons(id, candidate, baseline, created_ms, content_json) VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (id) DO UPDATE SET candidate = EXCLUDED.candidate, baseline = EXCLUDED.baseline,
                   created_ms = EXCLUDED.created_ms, content_json = EXCLUDED.content_json",
                &[&id, &candidate, &baseline, &now, &content_json],
            )?;
            Ok(())
        })
    }

    fn diagnosis(&self, id: &str) -> StoreResult<Option<RecordedAnalysis>> {
        self.run_op(None, |c| {
            match c.query_opt(
                "SELECT id, run_id, created_ms, content_json FROM diagnoses WHERE id = $1",
                &[&id],
            )? {
                Some(r) => analysis_row(&r).map(Some),
                None => Ok(None),
            }
        })
    }

    fn diagnoses_of(&self, run_id: &str) -> StoreResult<Vec<RecordedAnalysis>> {
        self.run_op(None, |c| {
            c.query(
                "SELECT id, run_id, created_ms, content_json FROM diagnoses WHERE run_id = $1 ORDER BY created_ms DESC",
                &[&run_id],
            )?
            .iter()
            .map(analysis_row)
            .collect()
        })
    }

    fn list_comparisons(&self) -> StoreResult<Vec<RecordedAnalysis>> {
        self.run_op(None, |c| {
            c.query(
                "SELECT id, candidate, baseline, created_ms, content_json FROM comparisons ORDER BY created_ms DESC, id",
                &[],
            )?
            .iter()
            .map(comparison_row)
            .collect()
        })
    }

    fn list_diagnoses(&self) -> StoreResult<Vec<RecordedAnalysis>> {
        self.run_op(None, |c| {
            c.query(
                "SELECT id, run_id, created_ms, content_json FROM diagnoses ORDER BY created_ms DESC, id",
                &[],
            )?
            .iter()
            .map(analysis_row)
            .collect()
        })
    }

    fn comparison(&self, id: &str) -> StoreResult<Option<RecordedAnalysis>> {
        self.run_op(None, |c| {
            match c.query_opt(
                "SELECT id, candidate, baseline, created_ms, content_json FROM comparisons WHERE id = $1",
                &[&id],
            )? {
                Some(r) => comparison_row(&r).map(Some),
                None => Ok(None),
            }
        })
    }

    fn save_calibration(
        &mut self,
        id: &str,
        judge: &str,
        identity: &str,
        passed: bool,
        content_json: &str,
    ) -> StoreResult<()> {
        let now = now_ms();
        self.run_op(None, |c| {
            c.execute(
                "INSERT INTO calibrations(id, judge, identity, passed, created_ms, content_json) VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (id) DO UPDATE SET seq = DEFAULT, judge = EXCLUDED.judge, identity = EXCLUDED.identity,
                   passed = EXCLUDED.passed, created_ms = EXCLUDED.created_ms, content_json = EXCLUDED.content_json",
                &[&id, &judge, &identity, &passed, &now, &content_json],
            )?;
            Ok(())
        })
    }

    fn latest_calibration(&self, identity: &str) -> StoreResult<Option<(String, bool, String)>> {
        self.run_op(None, |c| {
            match c.query_opt(
                "SELECT id, passed, content_json FROM calibrations WHERE identity = $1
                 ORDER BY created_ms DESC, seq DESC LIMIT 1",
                &[&identity],
            )? {
                Some(r) => Ok(Some((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?))),
                None => Ok(None),
            }
        })
    }

    fn list_calibrations(&self) -> StoreResult<Vec<CalibrationRecord>> {
        self.run_op(None, |c| {
            c.query(
                "SELECT id, judge, identity, passed, created_ms, content_json FROM calibrations ORDER BY created_ms, seq",
                &[],
            )?
            .iter()
            .map(|r| {
                Ok(CalibrationRecord {
                    id: r.try_get(0)?,
                    judge: r.try_get(1)?,
                    identity: r.try_get(2)?,
                    passed: r.try_get(3)?,
                    created_ms: r.try_get(4)?,
                    content_json: r.try_get(5)?,
                })
            })
            .collect()
        })
    }

    fn save_monitor(&mut self, id: &str, traffic: &str, content_json: &str) -> StoreResult<()> {
        let now = now_ms();
        self.run_op(None, |c| {
            c.execute(
                "INSERT INTO monitors(id, created_ms, traffic, content_json) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (id) DO UPDATE SET created_ms = EXCLUDED.created_ms,
                   traffic = EXCLUDED.traffic, content_json = EXCLUDED.content_json",
                &[&id, &now, &traffic, &content_json],
            )?;
            Ok(())
        })
    }

    fn monitor(&self, id: &str) -> StoreResult<Option<MonitorRecord>> {
        self.run_op(None, |c| {
            match c.query_opt(
                "SELECT id, created_ms, traffic, content_json FROM monitors WHERE id = $1",
                &[&id],
            )? {
                Some(r) => monitor_row(&r).map(Some),
                None => Ok(None),
            }
        })
    }

    fn list_monitors(&self) -> StoreResult<Vec<MonitorRecord>> {
        self.run_op(None, |c| {
            c.query(
                "SELECT id, created_ms, traffic, content_json FROM monitors ORDER BY created_ms DESC, id DESC",
                &[],
            )?
            .iter()
            .map(monitor_row)
            .collect()
        })
    }

    fn import_artifacts(
        &mut self,
        diagnoses: &[RecordedAnalysis],
        comparisons: &[RecordedAnalysis],
        calibrations: &[CalibrationRecord],
        monitors: &[MonitorRecord],
    ) -> StoreResult<()> {
        self.run_op(None, |c| {
            let mut tx = c.transaction()?;
            for d in diagnoses {
                tx.execute(
                    "INSERT INTO diagnoses(id, run_id, created_ms, content_json) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING",
                    &[&d.id, &d.run_id, &d.created_ms, &d.content_json],
                )?;
            }
            for k in comparisons {
                tx.execute(
                    "INSERT INTO comparisons(id, candidate, baseline, created_ms, content_json) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING",
                    &[&k.id, &k.run_id, &k.baseline, &k.created_ms, &k.content_json],
                )?;
            }
            for k in calibrations {
                tx.execute(
                    "INSERT INTO calibrations(id, judge, identity, passed, created_ms, content_json) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING",
                    &[&k.id, &k.judge, &k.identity, &k.passed, &k.created_ms, &k.content_json],
                )?;
            }
            for m in monitors {
                tx.execute(
                    "INSERT INTO monitors(id, created_ms, traffic, content_json) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING",
                    &[&m.id, &m.created_ms, &m.traffic, &m.content_json],
                )?;
            }
            tx.commit()?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_in_the_url_is_refused_without_being_shown() {
        for url in [
            "postgres://ana:canary-s3cret@db.example/evals",
            "postgres://ana@db.example/evals?password=canary-s3cret",
        ] {
            let Err(err) = parse_url(url) else {
                panic!("accepted {url}")
            };
            let text = err.to_string();
            assert!(!text.contains("canary-s3cret"), "{text}");
            assert!(text.contains("set PGPASSWORD"), "{text}");
            assert!(err.is_usage());
        }
    }

    #[test]
    fn the_password_comes_from_the_named_variable() {
        let name = "OLOPROOF_TEST_PG_PASSWORD_UNIT";
        let url =
            format!("postgres://ana@db.example:6543/evals?sslmode=disable&password_env={name}");
        // Not set: a usage error naming the variable.
        let err = parse_url(&url)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains(&format!("{name} is not set")), "{err}");
        // SAFETY of the test: the variable is unique to this test.
        std::env::set_var(name, "from-the-variable");
        let (config, ca, shown) = parse_url(&url).unwrap();
        assert_eq!(config.get_password(), Some(&b"from-the-variable"[..]));
        assert_eq!(config.get_user(), Some("ana"));
        assert_eq!(config.get_ports(), &[6543]);
        assert_eq!(ca, None);
        assert!(!format!("{config:?}").contains("from-the-variable"));
        assert_eq!(shown, url);
        std::env::remove_var(name);
    }

    #[test]
    fn a_malformed_url_is_a_usage_error() {
        let err = parse_url("postgres://ana@db/evals?sslmode=sometimes")
            .err()
            .unwrap();
        assert!(err.is_usage(), "{err}");
        assert!(err.to_string().contains("not a Postgres URL"), "{err}");
    }
}
