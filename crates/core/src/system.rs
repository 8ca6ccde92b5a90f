//! The system under test, as the engine sees it: [`SystemConnection`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::context::ContextPassage;
use crate::passage::{Passage, Retrieval};
use crate::trace::StageError;

/// What a system declared in its `hello`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SystemInfo {
    /// Protocol version spoken.
    pub protocol: u32,
    /// Declared name.
    pub name: String,
    /// Declared version.
    pub version: String,
    /// Declared defaults (`depth`, `top_k`, `token_budget`, `index_version`, …).
    #[serde(default)]
    pub defaults: Map<String, Value>,
    /// Operations implemented (`retrieve`, `generate`, `count_tokens`, and the optional
    /// stages `rewrite`, `rerank`, `fuse`).
    #[serde(default)]
    pub ops: Vec<String>,
    /// Retrieval lanes (`dense`, `bm25`, …): `retrieve` is then called once per lane and
    /// query. Empty: one retrieval per query.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lanes: Vec<String>,
}

impl SystemInfo {
    /// Whether the system declared `op` in its `hello`.
    pub fn implements(&self, op: &str) -> bool {
        self.ops.iter().any(|o| o == op)
    }
}

/// One `retrieve` request of a pipeline: which query and lane (both absent for protocol 1's
/// single retrieval).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetrieveRequest<'a> {
    /// The query to run (a rewrite), when the system has a `rewrite` stage or the raw question
    /// is asked for.
    pub query: Option<&'a str>,
    /// The lane, when the system declared lanes.
    pub lane: Option<&'a str>,
    /// The system is told not to apply its metadata filters (the `no-filter` intervention).
    pub skip_filters: bool,
}

/// One call's retrieval and how long the system took for it.
#[derive(Debug, Clone, PartialEq)]
pub struct TimedRetrieval {
    /// What the call returned.
    pub retrieval: Retrieval,
    /// Milliseconds: measured by the host around a single request, or by the worker around
    /// its own call inside a `retrieve_batch`.
    pub latency_ms: f64,
}

/// What the `rewrite` stage returned.
pub type RewriteReply = crate::pipeline::Rewrite;

/// What [`SystemConnection::rewrite_retrieve`] returned: the rewrite and the milliseconds the
/// worker measured for it, then its retrieve calls (one per query and lane, queries outer),
/// each as [`SystemConnection::retrieve_batch`] reports it: the list ends at the first error,
/// and is empty when the rewrite failed.
#[derive(Debug, Clone)]
pub struct RewriteRetrieval {
    /// The rewrite and its milliseconds, or its error.
    pub rewrite: Result<(RewriteReply, f64), StageError>,
    /// The retrieve calls of the rewrite's queries, in order.
    pub retrievals: Vec<Result<TimedRetrieval, StageError>>,
}

/// A live connection to one instance of the system (one worker).
///
/// Implementations restart their process after a crash or a timeout and report that case's
/// failure as a [`StageError`]; the next call works on a fresh process.
pub trait SystemConnection: Send {
    /// The system's `hello`.
    fn info(&self) -> &SystemInfo;
    /// `retrieve(input, depth)`.
    fn retrieve(
        &mut self,
        input: &Map<String, Value>,
        depth: usize,
    ) -> Result<Retrieval, StageError>;
    /// `count_tokens` for each passage.
    fn count_tokens(&mut self, passages: &[Passage]) -> Result<Vec<usize>, StageError>;
    /// `generate(input, context)`.
    fn generate(
        &mut self,
        input: &Map<String, Value>,
        context: &[ContextPassage],
    ) -> Result<Map<String, Value>, StageError>;
    /// Passes `candidates` through the user's reranker `module:function` (the `reranker`
    /// intervention of `diagnose`), returning the candidates in the reranker's order.
    fn rerank(
        &mut self,
        function: &str,
        input: &Map<String, Value>,
        candidates: &[Passage],
    ) -> Result<Vec<Passage>, StageError>;
    /// Stderr lines the worker wrote since the last call of this method.
    fn take_stderr(&mut self) -> Vec<String>;
    /// Prepares the next call: a connection whose process crashed or timed out starts a new
    /// one now rather than inside the call, so a caller that starts a stage's clock after
    /// this never times a start-up. A start that fails is reported by the next call, as it
    /// would have been. The default does nothing.
    fn ready(&mut self) {}
    /// `retrieve(input, depth, query, lane)`: one call of a pipeline's retrieval. The default
    /// sends a plain `retrieve` (a connection that knows no pipeline).
    fn retrieve_with(
        &mut self,
        input: &Map<String, Value>,
        depth: usize,
        request: RetrieveRequest<'_>,
    ) -> Result<Retrieval, StageError> {
        let _ = request;
        self.retrieve(input, depth)
    }
    /// Several `retrieve` calls of one case (its queries × lanes), in order: each call's
    /// retrieval with its time in milliseconds, or its error. The list ends at the first
    /// error (later calls are not reported); `Err` is a failure of the whole exchange (the
    /// worker crashed, timed out or replied out of protocol), which stops every call.
    ///
    /// The default makes one `retrieve` per call, timed by the host, and stops at the first
    /// error. A worker that declared `retrieve_batch` in its `hello` gets all of them in one
    /// request, timed by the worker (docs/protocol.md).
    fn retrieve_batch(
        &mut self,
        input: &Map<String, Value>,
        depth: usize,
        requests: &[RetrieveRequest<'_>],
    ) -> Result<Vec<Result<TimedRetrieval, StageError>>, StageError> {
        Ok(retrieve_each(self, input, depth, requests))
    }
    /// `rewrite(input)` and then one `retrieve` per query it returned and per lane of `lanes`
    /// (one call per query, with no lane, when `lanes` is empty), in one request: for a case
    /// whose rewrite the cache does not hold, whose retrievals then cannot be known to be
    /// cached either. Only a worker that declared `rewrite_retrieve` in its `hello` speaks it
    /// (docs/protocol.md); the default is [`not_implemented`], and callers check
    /// [`SystemInfo::implements`] first. `Err` is a failure of the whole exchange.
    fn rewrite_retrieve(
        &mut self,
        input: &Map<String, Value>,
        depth: usize,
        lanes: &[&str],
        skip_filters: bool,
    ) -> Result<RewriteRetrieval, StageError> {
        let _ = (input, depth, lanes, skip_filters);
        Err(not_implemented("rewrite_retrieve"))
    }
    /// `rewrite(input)`: the queries to retrieve with.
    fn rewrite(&mut self, input: &Map<String, Value>) -> Result<RewriteReply, StageError> {
        let _ = input;
        Err(not_implemented("rewrite"))
    }
    /// The system's own `rerank(input, candidates)` stage: the candidates in its order, and
    /// the usage it reported.
    fn rerank_stage(
        &mut self,
        input: &Map<String, Value>,
        candidates: &[Passage],
    ) -> Result<(Vec<Passage>, Option<crate::pipeline::Usage>), StageError> {
        let _ = (input, candidates);
        Err(not_implemented("rerank"))
    }
    /// The system's own `fuse(input, lists)`: one fused list from the lane lists.
    fn fuse(
        &mut self,
        input: &Map<String, Value>,
        lists: &[crate::pipeline::LaneRetrieval],
    ) -> Result<Vec<Passage>, StageError> {
        let _ = (input, lists);
        Err(not_implemented("fuse"))
    }
}

/// [`SystemConnection::retrieve_batch`] as one `retrieve` request per call, each timed by the
/// host, stopping after the first error.
pub fn retrieve_each<C: SystemConnection + ?Sized>(
    conn: &mut C,
    input: &Map<String, Value>,
    depth: usize,
    requests: &[RetrieveRequest<'_>],
) -> Vec<Result<TimedRetrieval, StageError>> {
    let mut out = Vec::with_capacity(requests.len());
    for request in requests {
        let started = std::time::Instant::now();
        let r = conn.retrieve_with(input, depth, *request);
        let latency_ms = started.elapsed().as_secs_f64() * 1e3;
        let failed = r.is_err();
        out.push(r.map(|retrieval| TimedRetrieval {
            retrieval,
            latency_ms,
        }));
        if failed {
            break;
        }
    }
    out
}

/// The error of an optional op a connection does not speak.
pub fn not_implemented(stage: &str) -> StageError {
    StageError {
        stage: stage.to_string(),
        kind: crate::trace::ErrorKind::Protocol,
        error_type: Some("NotImplementedError".into()),
        message: format!("this connection has no `{stage}` op"),
        traceback: None,
        stderr_tail: Vec::new(),
    }
}
