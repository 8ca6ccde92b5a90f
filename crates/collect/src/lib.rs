//! `oloproof collect`: an OTLP/HTTP trace (and log) receiver. An instrumented app points its
//! exporter at it (`OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318`); each
//! `POST /v1/traces` (protobuf or JSON, gzip or not) — and each `POST /v1/logs`, whose GenAI
//! events (message content) join their spans on import — is decoded, answered as the OTLP/HTTP
//! specification says, and recorded verbatim in the run store, where `oloproof import
//! --collected` turns it into trace records like any file.
//!
//! - [`body`]: one request body in, one answer out (pure): the content encoding undone within
//!   the size limit, the request decoded by `oloproof_traces`, the response messages;
//! - [`server`]: the listener (loopback unless allowed otherwise) and the single writer that
//!   commits accepted requests in groups; a request is answered once it is committed;
//! - [`read`]: the stored requests read back, located as `POST /v1/traces #SEQ`.
//!
//! Status codes: 200 (with `partial_success` when some spans could not be read), 400 for a
//! body that is not an OTLP trace request, 413 over the size limit (before or after
//! inflating), 415 for another content type or encoding, 404/405 for other paths and
//! methods, 503 (retryable, `Retry-After`) when the store cannot be written. The collector
//! keeps running after every one of them.
//!
//! ```
//! use oloproof_collect::{Collector, CollectorSettings};
//! use oloproof_core::store::StoreLocation;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = StoreLocation::Sqlite(dir.path().join("oloproof.db"));
//! let settings = CollectorSettings {
//!     listen: "127.0.0.1:0".parse().unwrap(),
//!     ..CollectorSettings::new(store.clone())
//! };
//! let collector = Collector::bind(&settings).unwrap();
//! let url = collector.traces_url();
//! let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
//! let server = std::thread::spawn(move || {
//!     collector.serve_until(async { let _ = stopped.await; }).unwrap()
//! });
//! let body = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{
//!   "traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"rag",
//!   "startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000400000000"}]}]}]}"#;
//! let reply = ureq::post(&url).content_type("application/json").send(body).unwrap();
//! assert_eq!(reply.status(), 200);
//! stop.send(()).unwrap();
//! let report = server.join().unwrap();
//! assert_eq!((report.requests, report.spans), (1, 1));
//!
//! let store = oloproof_store::open(&store).unwrap();
//! let mut names = Vec::new();
//! oloproof_collect::read::for_each_collected::<oloproof_core::store::StoreError>(
//!     store.as_ref(), 0, |request, decoded| {
//!         names.extend(decoded.spans.iter().map(|s| (request.seq, s.name.clone())));
//!         Ok(())
//!     }).unwrap();
//! assert_eq!(names, [(1, "rag".to_string())]);
//! ```

#![warn(missing_docs)]

use std::net::SocketAddr;

use oloproof_core::store::{StoreError, StoreLocation};

pub mod body;
pub mod read;
pub mod server;

pub use server::Collector;

/// The default listening address: OTLP/HTTP's port on loopback.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:4318";

/// The default largest request body, bytes (before and after inflating): 16 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// Where the collector listens and what it records into.
#[derive(Debug, Clone)]
pub struct CollectorSettings {
    /// The run store the requests are recorded in.
    pub store: StoreLocation,
    /// The address (default [`DEFAULT_LISTEN`]; port 0 picks a free one).
    pub listen: SocketAddr,
    /// Whether a non-loopback address may be used. The receiver has no authentication, so an
    /// address other hosts reach must be asked for explicitly.
    pub allow_remote: bool,
    /// The largest request body, bytes, before and after undoing its content encoding.
    pub max_body_bytes: usize,
}

impl CollectorSettings {
    /// The defaults, recording into `store`.
    pub fn new(store: StoreLocation) -> Self {
        CollectorSettings {
            store,
            listen: SocketAddr::from(([127, 0, 0, 1], 4318)),
            allow_remote: false,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }
}

/// What a collector did between its start and its stop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CollectReport {
    /// Requests recorded.
    pub requests: u64,
    /// Spans read from them.
    pub spans: u64,
    /// Spans in recorded requests that could not be read (answered as `partial_success`).
    pub spans_rejected: u64,
    /// Log records read from recorded `POST /v1/logs` requests.
    pub log_records: u64,
    /// Requests refused (400, 404, 405, 413, 415).
    pub refused: u64,
    /// Requests answered 503 because the store could not be written.
    pub store_failures: u64,
}

/// Why the collector cannot start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CollectError {
    /// A non-loopback address without `allow_remote`.
    #[error("{addr} is not a loopback address: the collector has no authentication, so it listens on 127.0.0.1 unless --allow-remote is given")]
    NonLoopback {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// A body limit of zero.
    #[error("--max-body-bytes must be at least 1")]
    BodyLimit,
    /// The address cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The store cannot be opened for writing.
    #[error("cannot record into {store}: {source}")]
    Store {
        /// The store, as shown to users.
        store: String,
        /// The store's error.
        #[source]
        source: StoreError,
    },
    /// The server failed while serving.
    #[error("the collector stopped: {0}")]
    Serve(#[source] std::io::Error),
}
