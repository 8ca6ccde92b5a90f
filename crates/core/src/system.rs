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
    /// Operations implemented.
    #[serde(default)]
    pub ops: Vec<String>,
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
}
