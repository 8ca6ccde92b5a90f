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

/// What the `rewrite` stage returned.
pub type RewriteReply = crate::pipeline::Rewrite;

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
