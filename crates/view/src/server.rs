//! The HTTP server: binding (loopback unless allowed otherwise), routes, the security headers
//! and the Host check, and the store reads behind each page.
//!
//! Each request opens the store read-only on a blocking thread, loads what its page needs by
//! the ids in the path (looked up in the store, never used as file names) and renders it with
//! [`crate::pages`]. An id the store does not know is a 404 page, a filter naming something the
//! page does not have a 400 page, a store failure a 500 page: never a panic. A path or query
//! that cannot be decoded (not UTF-8, a repeated filter) is a 400 page too, and a page repeats
//! at most [`pages::QUOTED_MAX`] characters of anything from the request. The store is opened
//! for writing once, when the viewer binds: a damaged or newer store is refused then, and one
//! written by an older Oloproof gets the tables added since.

use std::future::Future;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::Arc;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use oloproof_core::diagnosis::Diagnosis;
use oloproof_core::run::{Evaluators, LoadedRun};
use oloproof_core::store::{Store, StoreLocation};
use oloproof_store::StoreError;
use serde::Deserialize;

use crate::pages::{self, CaseFilters, ComparisonFilters, LabelFilter, PageError};
use crate::{ViewError, CONTENT_SECURITY_POLICY};

/// Where the viewer listens and what it serves.
#[derive(Debug, Clone)]
pub struct ViewerSettings {
    /// The run store (an existing `oloproof.db`, or a Postgres database).
    pub store: StoreLocation,
    /// The interface (default 127.0.0.1).
    pub host: IpAddr,
    /// The port (0: any free one).
    pub port: u16,
    /// Whether a non-loopback `host` was asked for explicitly (`--host`); without it such an
    /// address is refused.
    pub allow_non_loopback: bool,
}

/// A bound viewer, not yet serving: its address is known (`--port 0` included).
pub struct Viewer {
    listener: TcpListener,
    addr: SocketAddr,
    store: StoreLocation,
    evaluators: Arc<dyn Evaluators>,
}

impl std::fmt::Debug for Viewer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Viewer")
            .field("addr", &self.addr)
            .field("store", &self.store.to_string())
            .finish_non_exhaustive()
    }
}

struct AppState {
    store: StoreLocation,
    /// What only the evaluators know: criterion kinds, summaries of runs without a stored one,
    /// slice values.
    evaluators: Arc<dyn Evaluators>,
    /// `Host` values accepted (loopback binding only); `None` accepts any.
    allowed_hosts: Option<Vec<String>>,
}

impl Viewer {
    /// Binds the address; refuses a non-loopback one unless `allow_non_loopback`.
    ///
    /// `evaluators` answers what only the evaluators know (the engine's `EngineEvaluators`,
    /// passed in by the CLI so that the viewer does not depend on the engine): criterion kinds,
    /// the summary of a run that has no stored one (still running, interrupted), slice values.
    pub fn bind(
        settings: &ViewerSettings,
        evaluators: Arc<dyn Evaluators>,
    ) -> Result<Viewer, ViewError> {
        let addr = SocketAddr::new(settings.host, settings.port);
        if !settings.host.is_loopback() && !settings.allow_non_loopback {
            return Err(ViewError::NonLoopback {
                addr,
                host: settings.host.to_string(),
            });
        }
        if oloproof_store::exists(&settings.store) {
            oloproof_store::open(&settings.store).map_err(|source| ViewError::Store {
                path: settings.store.to_string(),
                source,
            })?;
        }
        let listener =
            TcpListener::bind(addr).map_err(|source| ViewError::Bind { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| ViewError::Bind { addr, source })?;
        Ok(Viewer {
            listener,
            addr,
            store: settings.store.clone(),
            evaluators,
        })
    }

    /// The bound address (with the port picked for `--port 0`).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address to open: `http://127.0.0.1:7878/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Serves until Ctrl-C.
    pub fn serve(self) -> Result<(), ViewError> {
        self.serve_until(async {
            let _ = tokio::signal::ctrl_c().await;
        })
    }

    /// Serves until `shutdown` completes, then finishes the requests in flight.
    pub fn serve_until<F>(self, shutdown: F) -> Result<(), ViewError>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let port = self.addr.port();
        let allowed_hosts = self.addr.ip().is_loopback().then(|| {
            vec![
                format!("127.0.0.1:{port}"),
                format!("localhost:{port}"),
                format!("[::1]:{port}"),
            ]
        });
        let state = Arc::new(AppState {
            store: self.store,
            evaluators: self.evaluators,
            allowed_hosts,
        });
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(ViewError::Serve)?;
        self.listener
            .set_nonblocking(true)
            .map_err(ViewError::Serve)?;
        runtime
            .block_on(async move {
                let listener = tokio::net::TcpListener::from_std(self.listener)?;
                axum::serve(listener, router(state))
                    .with_graceful_shutdown(shutdown)
                    .await
            })
            .map_err(ViewError::Serve)
    }
}

fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/runs/{run_id}", get(run))
        .route("/runs/{run_id}/cases/{case_id}", get(case))
        .route("/runs/{run_id}/case", get(case_by_query))
        .route("/comparisons/{id}", get(comparison))
        .route("/diagnoses/{id}", get(diagnosis))
        .route("/monitors/{id}", get(monitor))
        .route("/static/style.css", get(stylesheet))
        .route("/static/favicon.svg", get(favicon))
        .fallback(fallback)
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

/// The security headers of every response.
fn secure(headers: &mut HeaderMap) {
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

/// Answers only requests addressed to this loopback server (a page of another site cannot
/// reach it through a rebound DNS name), and adds the security headers to every response.
async fn guard(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if let Some(allowed) = &state.allowed_hosts {
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        if !allowed.iter().any(|a| a.eq_ignore_ascii_case(host)) {
            let mut resp = html(
                StatusCode::MISDIRECTED_REQUEST,
                pages::bad_request_page(&format!(
                    "this viewer answers requests for {} only",
                    allowed.join(", ")
                )),
            );
            secure(resp.headers_mut());
            return resp;
        }
    }
    let mut resp = next.run(req).await;
    secure(resp.headers_mut());
    resp
}

fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

/// Runs `render` on a blocking thread with a read-only store and the evaluators, and turns its
/// outcome into a page.
async fn page<F>(state: Arc<AppState>, render: F) -> Response
where
    F: FnOnce(&dyn Store, &dyn Evaluators) -> Result<String, PageError> + Send + 'static,
{
    let result = tokio::task::spawn_blocking(move || {
        let store = oloproof_store::open_reader(&state.store)
            .map_err(|e| PageError::Internal(e.to_string()))?;
        render(store.as_ref(), state.evaluators.as_ref())
    })
    .await
    .unwrap_or_else(|e| Err(PageError::Internal(format!("the page failed: {e}"))));
    match result {
        Ok(body) => html(StatusCode::OK, body),
        Err(PageError::NotFound(m)) => html(StatusCode::NOT_FOUND, pages::not_found_page(&m)),
        Err(PageError::BadRequest(m)) => html(StatusCode::BAD_REQUEST, pages::bad_request_page(&m)),
        Err(PageError::Internal(m)) => {
            tracing::warn!(error = %m, "viewer page failed");
            html(StatusCode::INTERNAL_SERVER_ERROR, pages::error_page(&m))
        }
    }
}

fn internal(e: impl std::fmt::Display) -> PageError {
    PageError::Internal(e.to_string())
}

fn store_error(e: StoreError) -> PageError {
    match e {
        StoreError::UnknownRun(id) => {
            PageError::NotFound(format!("no run `{}` in this store", pages::quoted(&id)))
        }
        other => internal(other),
    }
}

fn load(
    store: &dyn Store,
    evaluators: &dyn Evaluators,
    run_id: &str,
) -> Result<LoadedRun, PageError> {
    store.load_run(run_id, evaluators).map_err(store_error)
}

/// The run's diagnoses, newest first.
fn diagnoses_of(store: &dyn Store, run_id: &str) -> Result<Vec<Diagnosis>, PageError> {
    store.load_diagnoses_of(run_id).map_err(internal)
}

async fn index(State(state): State<Arc<AppState>>) -> Response {
    page(state, |store, _| {
        let runs = store.list_runs().map_err(internal)?;
        let comparisons = store.list_comparisons().map_err(internal)?;
        let diagnoses = store.list_diagnoses().map_err(internal)?;
        let monitors = store.list_monitors().map_err(internal)?;
        Ok(pages::runs_page(&runs, &comparisons, &diagnoses, &monitors))
    })
    .await
}

/// A 400 page for a path or query string that cannot be decoded.
fn rejected(what: &str, detail: &str) -> Response {
    html(
        StatusCode::BAD_REQUEST,
        pages::bad_request_page(&format!("{what}: {}", pages::quoted(detail))),
    )
}

/// The path's ids, or the 400 page saying why they cannot be read.
fn ids<T>(path: Result<Path<T>, PathRejection>) -> Result<T, Response> {
    path.map(|Path(t)| t).map_err(|e| {
        rejected(
            "this address cannot be read (an id in it is not UTF-8 text once percent-decoded?)",
            &e.body_text(),
        )
    })
}

/// The query's filters, or the 400 page saying why they cannot be read.
fn filters<T>(query: Result<Query<T>, QueryRejection>) -> Result<T, Response> {
    query.map(|Query(t)| t).map_err(|e| {
        rejected(
            "the query string cannot be read (each filter may be given once)",
            &e.body_text(),
        )
    })
}

async fn run(
    State(state): State<Arc<AppState>>,
    run_id: Result<Path<String>, PathRejection>,
    query: Result<Query<CaseFilters>, QueryRejection>,
) -> Response {
    let (run_id, filters) = match (ids(run_id), filters(query)) {
        (Ok(r), Ok(f)) => (r, f),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    page(state, move |store, evaluators| {
        let run = load(store, evaluators, &run_id)?;
        let summary = match pages::stored_summary(&run.record) {
            Some(s) => s,
            None => evaluators.summarize(&run).map_err(internal)?,
        };
        let diagnoses = diagnoses_of(store, &run_id)?;
        let comparisons: Vec<_> = store
            .list_comparisons()
            .map_err(internal)?
            .into_iter()
            .filter(|a| a.run_id == run_id || a.baseline.as_deref() == Some(run_id.as_str()))
            .collect();
        pages::run_page(
            evaluators,
            &run,
            &summary,
            &diagnoses,
            &comparisons,
            &filters,
        )
    })
    .await
}

fn render_case(
    store: &dyn Store,
    evaluators: &dyn Evaluators,
    run_id: &str,
    case_id: &str,
) -> Result<String, PageError> {
    let run = load(store, evaluators, run_id)?;
    let Some((case, trace, verdicts)) = run.cases.iter().find(|(c, _, _)| c.id == case_id) else {
        return Err(PageError::NotFound(format!(
            "run {run_id} has no case `{}`",
            pages::quoted(case_id)
        )));
    };
    let diagnoses = diagnoses_of(store, run_id)?;
    Ok(pages::case_page(
        evaluators,
        &run,
        case,
        trace.as_ref(),
        verdicts,
        &diagnoses,
    ))
}

async fn case(
    State(state): State<Arc<AppState>>,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Response {
    let (run_id, case_id) = match ids(path) {
        Ok(p) => p,
        Err(e) => return e,
    };
    page(state, move |store, evaluators| {
        render_case(store, evaluators, &run_id, &case_id)
    })
    .await
}

#[derive(Debug, Deserialize)]
struct CaseQuery {
    id: Option<String>,
}

async fn case_by_query(
    State(state): State<Arc<AppState>>,
    run_id: Result<Path<String>, PathRejection>,
    query: Result<Query<CaseQuery>, QueryRejection>,
) -> Response {
    let (run_id, q) = match (ids(run_id), filters(query)) {
        (Ok(r), Ok(q)) => (r, q),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    page(state, move |store, evaluators| match q.id {
        Some(case_id) => render_case(store, evaluators, &run_id, &case_id),
        None => Err(PageError::BadRequest(
            "name the case: /runs/<run>/case?id=<case id>".into(),
        )),
    })
    .await
}

async fn comparison(
    State(state): State<Arc<AppState>>,
    id: Result<Path<String>, PathRejection>,
    query: Result<Query<ComparisonFilters>, QueryRejection>,
) -> Response {
    let (id, filters) = match (ids(id), filters(query)) {
        (Ok(i), Ok(f)) => (i, f),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    page(state, move |store, evaluators| {
        let Some(c) = store.load_comparison(&id).map_err(store_error)? else {
            return Err(PageError::NotFound(format!(
                "no comparison `{}` in this store",
                pages::quoted(&id)
            )));
        };
        let candidate = load(store, evaluators, &c.candidate)?;
        let baseline = load(store, evaluators, &c.baseline)?;
        pages::comparison_page(&c, &candidate, &baseline, &filters)
    })
    .await
}

async fn diagnosis(
    State(state): State<Arc<AppState>>,
    id: Result<Path<String>, PathRejection>,
    query: Result<Query<LabelFilter>, QueryRejection>,
) -> Response {
    let (id, filter) = match (ids(id), filters(query)) {
        (Ok(i), Ok(f)) => (i, f),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    page(state, move |store, evaluators| {
        let Some(d) = store.load_diagnosis(&id).map_err(store_error)? else {
            return Err(PageError::NotFound(format!(
                "no diagnosis `{}` in this store",
                pages::quoted(&id)
            )));
        };
        let run = load(store, evaluators, &d.content.run_id)?;
        pages::diagnosis_page(&d, &run, &filter)
    })
    .await
}

async fn monitor(
    State(state): State<Arc<AppState>>,
    id: Result<Path<String>, PathRejection>,
) -> Response {
    let id = match ids(id) {
        Ok(i) => i,
        Err(e) => return e,
    };
    page(state, move |store, _| {
        let Some(record) = store.monitor(&id).map_err(internal)? else {
            return Err(PageError::NotFound(format!(
                "no monitor report `{}` in this store",
                pages::quoted(&id)
            )));
        };
        let report = record.report().map_err(internal)?;
        Ok(pages::monitor_page(&record, &report))
    })
    .await
}

async fn stylesheet() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        pages::stylesheet(),
    )
        .into_response()
}

async fn favicon() -> Response {
    (
        [(header::CONTENT_TYPE, "image/svg+xml")],
        pages::FAVICON_SVG,
    )
        .into_response()
}

async fn fallback(req: Request) -> Response {
    html(
        StatusCode::NOT_FOUND,
        pages::not_found_page(&format!("nothing at {}", pages::quoted(req.uri().path()))),
    )
}
