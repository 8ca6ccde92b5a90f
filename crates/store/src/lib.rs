//! The run store backends: SQLite (embedded, the default) and Postgres (shared by workers on
//! many machines), both implementing the store traits of [`oloproof_core::store`].
//!
//! A store holds:
//! - `runs`: one row per run: its settings snapshot, identity hash, system info, status, summary;
//! - `run_cases`: one row per case of a run: the case as it was, a state (pending/done), an
//!   `attempt` counter, a lease (`lease_until`, `lease_holder`), the trace and the case's cache
//!   use. This table is the work queue: a claim takes a batch of pending cases whose lease is
//!   free (`FOR UPDATE SKIP LOCKED` on Postgres, the write lock on SQLite), and a result is
//!   written only by the attempt and holder of the current lease;
//! - `verdicts`: one row per case and criterion;
//! - `cache`: content-addressed entries per layer, keyed by sha256 of canonical JSON. Errors
//!   are never written here;
//! - `diagnoses`, `comparisons`, `calibrations`, and `monitors` (the reports of
//!   `oloproof monitor`, ids `mon_<ULID>`);
//! - `collected_requests`: the OTLP/HTTP bodies `oloproof collect` received, verbatim, in
//!   arrival order.
//!
//! A case's trace, verdicts and cache entries are written in one transaction as soon as the case
//! finishes, so a killed run loses at most the cases in flight and resumes from the rest.
//!
//! A failed write rolls back its transaction, so the cases recorded before stay intact; every
//! error says what happened and what to do, and a write error during a run names the run to
//! resume. Each backend keeps versioned migrations (`migrations/<backend>/NNNN_*.sql`): a
//! store written by an older Oloproof is migrated when opened for writing.
//!
//! [`open`] opens the store a [`StoreLocation`] names, [`open_reader`] a connection for a
//! worker thread's cache lookups. The store decodes its rows but computes nothing.
//!
//! ```
//! use oloproof_core::store::{CacheLayer, CacheStore, RunStore, StoreLocation};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let location = StoreLocation::Sqlite(dir.path().join(".oloproof/oloproof.db"));
//! let mut store = oloproof_store::open(&location).unwrap();
//! assert!(store.list_runs().unwrap().is_empty());
//! let entry = (CacheLayer::Execution, "sha256:ab".to_string(), r#"{"answer":"14 days"}"#.to_string());
//! store.put_cache_entries(&[entry]).unwrap();
//! assert_eq!(
//!     store.cache_get(CacheLayer::Execution, "sha256:ab").unwrap().as_deref(),
//!     Some(r#"{"answer":"14 days"}"#)
//! );
//! ```
#![warn(missing_docs)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use oloproof_core::store::{decode, encode, CaseResult, ClaimedCase, StoreResult};
pub use oloproof_core::store::{
    CaseRecord, RecordedAnalysis, Store, StoreError, StoreLocation, VerdictRecord,
};

pub mod postgres;
pub mod sqlite;

pub use crate::postgres::PgStore;
pub use crate::sqlite::SqliteStore;

/// How long to wait for a SQLite lock held by another process before giving up, in seconds
/// (default [`DEFAULT_BUSY_TIMEOUT_S`]).
pub const ENV_BUSY_TIMEOUT: &str = "OLOPROOF_STORE_BUSY_TIMEOUT_S";
/// The default of [`ENV_BUSY_TIMEOUT`].
pub const DEFAULT_BUSY_TIMEOUT_S: f64 = 30.0;

/// Opens the store at `location` for writing (creating a SQLite file, or the Postgres tables,
/// if needed; migrating an older schema).
pub fn open(location: &StoreLocation) -> StoreResult<Box<dyn Store>> {
    Ok(match location {
        StoreLocation::Sqlite(path) => Box::new(SqliteStore::open(path)?),
        StoreLocation::Postgres(url) => Box::new(PgStore::open(url)?),
    })
}

/// Opens a connection to an existing store for reading (a worker thread's cache lookups, a
/// viewer request): read-only on SQLite; on Postgres an ordinary connection (the tables are
/// not created or migrated by it).
pub fn open_reader(location: &StoreLocation) -> StoreResult<Box<dyn Store>> {
    Ok(match location {
        StoreLocation::Sqlite(path) => Box::new(SqliteStore::open_reader(path)?),
        StoreLocation::Postgres(url) => Box::new(PgStore::connect(url)?),
    })
}

/// Whether there is a store at `location`: the SQLite file exists (a Postgres database is
/// always there to be opened; its tables are created on first use).
pub fn exists(location: &StoreLocation) -> bool {
    match location {
        StoreLocation::Sqlite(path) => path.exists(),
        StoreLocation::Postgres(_) => true,
    }
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis() as i64
}

/// A claimed row read back typed.
pub(crate) fn decode_case(
    ord: i64,
    case_id: &str,
    case_json: &str,
    attempt: i64,
    max_attempts: Option<u32>,
) -> StoreResult<ClaimedCase> {
    Ok(ClaimedCase {
        ord,
        case: decode(case_json, || format!("case {case_id}"))?,
        attempt,
        exhausted: max_attempts.is_some_and(|max| attempt > i64::from(max)),
    })
}

/// One result serialised for the store.
pub(crate) struct EncodedCase<'a> {
    pub(crate) trace_json: std::borrow::Cow<'a, str>,
    pub(crate) verdicts: Vec<(String, String)>,
    pub(crate) cache_use_json: String,
}

/// Serialises results before a transaction opens: a value that does not serialise writes
/// nothing.
pub(crate) fn encode_results<'a>(results: &[CaseResult<'a>]) -> StoreResult<Vec<EncodedCase<'a>>> {
    results
        .iter()
        .map(|r| {
            Ok(EncodedCase {
                trace_json: match r.trace_json {
                    Some(json) => std::borrow::Cow::Borrowed(json),
                    // The stored form: a pipeline's passages written once.
                    None => oloproof_core::stored_trace::stored_json(r.trace)
                        .map_err(|source| oloproof_core::store::StoreError::Encode {
                            what: format!("the trace of {}", r.case_id),
                            source,
                        })?
                        .into(),
                },
                verdicts: r
                    .verdicts
                    .iter()
                    .map(|v| {
                        Ok((
                            v.criterion.clone(),
                            encode(v, || {
                                format!("the {} verdict of {}", v.criterion, r.case_id)
                            })?,
                        ))
                    })
                    .collect::<StoreResult<_>>()?,
                cache_use_json: encode(&r.cache_use, || format!("the cache use of {}", r.case_id))?,
            })
        })
        .collect()
}
