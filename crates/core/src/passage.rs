//! What a system retrieved: passages in the system's order.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One retrieved passage, exactly as the system returned it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Passage {
    /// Document id.
    pub doc_id: String,
    /// Chunk id, if the system retrieves chunks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_id: Option<String>,
    /// Retrieval score, if any (never used to re-rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// Passage text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// The result of `retrieve(input, depth)`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Retrieval {
    /// The query the system actually ran, if it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The depth asked for.
    pub depth: usize,
    /// Candidates in the system's order; position = index + 1.
    pub candidates: Vec<Passage>,
}
