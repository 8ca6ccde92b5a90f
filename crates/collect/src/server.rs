//! The HTTP side: binding (loopback unless allowed otherwise), `POST /v1/traces` and
//! `POST /v1/logs`, and the one writer thread that records accepted requests in the store.
//!
//! A request is answered once it is committed to the store, so a 200 means the spans are kept
//! (an exporter retries what it was not told was kept). Handlers never touch the store: they
//! hand each accepted body to the writer, which appends everything waiting in one transaction
//! (group commit), so concurrent exporters cost one write between them. Nothing is evaluated
//! here: the sender waits for the write only.

use std::future::Future;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use oloproof_core::store::{CollectedRequest, OtlpEncoding, OtlpSignal, Store, StoreLocation};

use crate::body::{self, Refusal};
use crate::{CollectError, CollectReport, CollectorSettings};

/// The most requests the writer appends in one transaction.
const GROUP_COMMIT: usize = 256;

/// A bound collector, not yet serving: its address is known (port 0 included).
pub struct Collector {
    listener: TcpListener,
    addr: SocketAddr,
    store: StoreLocation,
    max_body_bytes: usize,
}

impl std::fmt::Debug for Collector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collector")
            .field("addr", &self.addr)
            .field("store", &self.store.to_string())
            .finish_non_exhaustive()
    }
}

/// One accepted request on its way to the writer, and where to say how it went.
struct Pending {
    request: CollectedRequest,
    reply: tokio::sync::oneshot::Sender<Result<(), String>>,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    spans: AtomicU64,
    spans_rejected: AtomicU64,
    log_records: AtomicU64,
    refused: AtomicU64,
    store_failures: AtomicU64,
}

struct AppState {
    /// Taken (and so closed) when the server stops.
    writer: std::sync::Mutex<Option<mpsc::Sender<Pending>>>,
    counters: Counters,
    max_body_bytes: usize,
}

impl Collector {
    /// Binds the address of `settings` after opening the store for writing (created, or
    /// migrated from an older Oloproof), so a store that cannot be written is an error now,
    /// not a 503 on the first request. A non-loopback address is refused unless
    /// `allow_remote`.
    pub fn bind(settings: &CollectorSettings) -> Result<Collector, CollectError> {
        let addr = settings.listen;
        if !addr.ip().is_loopback() && !settings.allow_remote {
            return Err(CollectError::NonLoopback { addr });
        }
        if settings.max_body_bytes == 0 {
            return Err(CollectError::BodyLimit);
        }
        oloproof_store::open(&settings.store).map_err(|source| CollectError::Store {
            store: settings.store.to_string(),
            source,
        })?;
        let listener =
            TcpListener::bind(addr).map_err(|source| CollectError::Bind { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| CollectError::Bind { addr, source })?;
        Ok(Collector {
            listener,
            addr,
            store: settings.store.clone(),
            max_body_bytes: settings.max_body_bytes,
        })
    }

    /// The bound address (with the port picked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The endpoint exporters post to: `http://127.0.0.1:4318/v1/traces`.
    pub fn traces_url(&self) -> String {
        format!("http://{}/v1/traces", self.addr)
    }

    /// Serves until `shutdown` completes, finishes the requests in flight, lets the writer
    /// commit what it holds, and reports the counts.
    pub fn serve_until<F>(self, shutdown: F) -> Result<CollectReport, CollectError>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let store = oloproof_store::open(&self.store).map_err(|source| CollectError::Store {
            store: self.store.to_string(),
            source,
        })?;
        let (tx, rx) = mpsc::channel::<Pending>();
        let writer = std::thread::Builder::new()
            .name("oloproof-collect-writer".into())
            .spawn(move || write_loop(store, rx))
            .map_err(CollectError::Serve)?;
        let state = Arc::new(AppState {
            writer: std::sync::Mutex::new(Some(tx)),
            counters: Counters::default(),
            max_body_bytes: self.max_body_bytes,
        });
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(CollectError::Serve)?;
        self.listener
            .set_nonblocking(true)
            .map_err(CollectError::Serve)?;
        let served = runtime.block_on({
            let state = state.clone();
            async move {
                let listener = tokio::net::TcpListener::from_std(self.listener)?;
                axum::serve(listener, router(state))
                    .with_graceful_shutdown(shutdown)
                    .await
            }
        });
        drop(runtime);
        // Closing the channel lets the writer commit what it holds and end.
        drop(
            state
                .writer
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take(),
        );
        writer
            .join()
            .map_err(|_| CollectError::Serve(std::io::Error::other("the writer panicked")))?;
        served.map_err(CollectError::Serve)?;
        let c = &state.counters;
        Ok(CollectReport {
            requests: c.requests.load(Ordering::Relaxed),
            spans: c.spans.load(Ordering::Relaxed),
            spans_rejected: c.spans_rejected.load(Ordering::Relaxed),
            log_records: c.log_records.load(Ordering::Relaxed),
            refused: c.refused.load(Ordering::Relaxed),
            store_failures: c.store_failures.load(Ordering::Relaxed),
        })
    }
}

/// The writer thread: waits for a request, takes every other one already waiting (up to
/// [`GROUP_COMMIT`]), appends them in one transaction and answers each.
fn write_loop(mut store: Box<dyn Store>, rx: mpsc::Receiver<Pending>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < GROUP_COMMIT {
            match rx.try_recv() {
                Ok(p) => batch.push(p),
                Err(_) => break,
            }
        }
        let (requests, replies): (Vec<CollectedRequest>, Vec<_>) =
            batch.into_iter().map(|p| (p.request, p.reply)).unzip();
        let outcome = store
            .append_collected(&requests)
            .map(|_| ())
            .map_err(|e| e.to_string());
        if let Err(e) = &outcome {
            tracing::error!(error = %e, requests = replies.len(), "cannot record collected requests");
        }
        for reply in replies {
            // A sender that went away (the exporter hung up) needs no answer.
            let _ = reply.send(outcome.clone());
        }
    }
}

fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/v1/traces", post(traces).fallback(fallback))
        .route("/v1/logs", post(logs).fallback(fallback))
        .fallback(fallback)
        .with_state(state)
}

fn respond(status: StatusCode, encoding: OtlpEncoding, bytes: Vec<u8>) -> Response {
    let mut response = (status, bytes).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(encoding.content_type()),
    );
    response
}

fn refuse(state: &AppState, encoding: OtlpEncoding, refusal: &Refusal) -> Response {
    state.counters.refused.fetch_add(1, Ordering::Relaxed);
    tracing::warn!(status = refusal.http_status(), reason = %refusal, "refused an OTLP request");
    let status = StatusCode::from_u16(refusal.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    respond(
        status,
        encoding,
        body::status_body(encoding, refusal.rpc_code(), &refusal.to_string()),
    )
}

fn header_text(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

async fn traces(State(state): State<Arc<AppState>>, headers: HeaderMap, raw: Body) -> Response {
    receive(state, OtlpSignal::Traces, headers, raw).await
}

async fn logs(State(state): State<Arc<AppState>>, headers: HeaderMap, raw: Body) -> Response {
    receive(state, OtlpSignal::Logs, headers, raw).await
}

/// One `POST` of `signal`: read, handed to the writer, answered once it is committed.
async fn receive(
    state: Arc<AppState>,
    signal: OtlpSignal,
    headers: HeaderMap,
    raw: Body,
) -> Response {
    let content_type = header_text(&headers, header::CONTENT_TYPE).unwrap_or("");
    // Errors are answered in the request's encoding when it is JSON, else in protobuf.
    let reply_encoding = body::encoding_of(content_type).unwrap_or(OtlpEncoding::Protobuf);
    let limit = state.max_body_bytes;
    let too_large = Refusal::TooLarge {
        limit,
        inflated: false,
    };
    let declared =
        header_text(&headers, header::CONTENT_LENGTH).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return refuse(&state, reply_encoding, &too_large);
    }
    // Without a Content-Length (chunked), the limit is applied while reading.
    let Ok(raw) = axum::body::to_bytes(raw, limit).await else {
        return refuse(&state, reply_encoding, &too_large);
    };
    let encoding_header = header_text(&headers, header::CONTENT_ENCODING);
    let accepted = match body::read_request(&raw, signal, content_type, encoding_header, limit) {
        Ok(a) => a,
        Err(refusal) => return refuse(&state, reply_encoding, &refusal),
    };
    let rejected = accepted.decoded.summary.dropped() + accepted.decoded.summary.records_dropped;
    // For logs, the records read (each kept for its span or counted by reason).
    let spans = match signal {
        OtlpSignal::Traces => accepted.decoded.spans.len() as u64,
        OtlpSignal::Logs => accepted.decoded.summary.log_records_read,
    };
    let first_problem = accepted
        .decoded
        .summary
        .first
        .first()
        .map(|p| format!("{}: {}", p.kind, p.message))
        .unwrap_or_default();
    let (reply, written) = tokio::sync::oneshot::channel();
    let pending = Pending {
        request: CollectedRequest {
            seq: 0,
            received_ms: now_ms(),
            signal,
            encoding: accepted.encoding,
            spans: i64::try_from(spans).unwrap_or(i64::MAX),
            body: accepted.body,
        },
        reply,
    };
    let sent = state
        .writer
        .lock()
        .map(|w| w.as_ref().is_some_and(|w| w.send(pending).is_ok()))
        .unwrap_or(false);
    let outcome = match sent {
        true => written
            .await
            .unwrap_or_else(|_| Err("the writer stopped".into())),
        false => Err("the writer stopped".into()),
    };
    if let Err(e) = outcome {
        state
            .counters
            .store_failures
            .fetch_add(1, Ordering::Relaxed);
        let mut response = respond(
            StatusCode::SERVICE_UNAVAILABLE,
            accepted.encoding,
            body::status_body(
                accepted.encoding,
                body::CODE_UNAVAILABLE,
                &format!("the spans could not be recorded ({e}); retry later"),
            ),
        );
        // OTLP/HTTP: 503 is retryable; say when.
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return response;
    }
    let c = &state.counters;
    c.requests.fetch_add(1, Ordering::Relaxed);
    match signal {
        OtlpSignal::Traces => {
            c.spans.fetch_add(spans, Ordering::Relaxed);
            c.spans_rejected.fetch_add(rejected, Ordering::Relaxed);
        }
        OtlpSignal::Logs => {
            c.log_records.fetch_add(spans, Ordering::Relaxed);
        }
    }
    tracing::debug!(
        signal = signal.as_str(),
        spans,
        rejected,
        "recorded an OTLP request"
    );
    respond(
        StatusCode::OK,
        accepted.encoding,
        body::success_body(accepted.encoding, signal, rejected, &first_problem),
    )
}

async fn fallback(State(state): State<Arc<AppState>>, method: Method, uri: Uri) -> Response {
    state.counters.refused.fetch_add(1, Ordering::Relaxed);
    let (status, message) = match uri.path() {
        path @ ("/v1/traces" | "/v1/logs") => (
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{method} is not supported on {path}: OTLP/HTTP exporters POST"),
        ),
        path => (
            StatusCode::NOT_FOUND,
            format!("no endpoint {path}: this collector receives traces at POST /v1/traces and logs at POST /v1/logs (metrics are not collected)"),
        ),
    };
    let mut response = respond(
        status,
        OtlpEncoding::Protobuf,
        body::status_body(
            OtlpEncoding::Protobuf,
            body::CODE_INVALID_ARGUMENT,
            &message,
        ),
    );
    if status == StatusCode::METHOD_NOT_ALLOWED {
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
    }
    response
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis() as i64
}
