//! What a system retrieved: passages in the system's order.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::EvidenceStatusError;

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
    /// Free-form metadata; `status` (`current` / `archived`, see [`EvidenceStatus`]) and
    /// `corpus_version` are read by the Rubrex evaluators.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

impl Passage {
    /// The passage's authority: `metadata.status`, `current` when absent.
    pub fn status(&self) -> Result<EvidenceStatus, EvidenceStatusError> {
        EvidenceStatus::of(self.metadata.as_ref())
    }
}

/// Whether a passage states current policy (`metadata.status`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceStatus {
    /// In force (the default when a passage says nothing).
    #[default]
    Current,
    /// Superseded: it may support an answer, but not one the current contract accepts.
    Archived,
}

/// The values `metadata.status` may take.
pub const EVIDENCE_STATUSES: &[&str] = &["current", "archived"];

impl EvidenceStatus {
    /// `current` or `archived`.
    pub fn as_str(self) -> &'static str {
        match self {
            EvidenceStatus::Current => "current",
            EvidenceStatus::Archived => "archived",
        }
    }

    /// Parses a status word.
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "current" => Some(EvidenceStatus::Current),
            "archived" => Some(EvidenceStatus::Archived),
            _ => None,
        }
    }

    /// The `status` of a metadata map: `current` when absent, an error naming the value when
    /// it is not one of [`EVIDENCE_STATUSES`].
    pub fn of(metadata: Option<&Map<String, Value>>) -> Result<Self, EvidenceStatusError> {
        match metadata.and_then(|m| m.get("status")) {
            None | Some(Value::Null) => Ok(EvidenceStatus::Current),
            Some(Value::String(s)) => {
                Self::parse(s).ok_or_else(|| EvidenceStatusError::Unknown(s.clone()))
            }
            Some(other) => Err(EvidenceStatusError::NotAString(other.clone())),
        }
    }
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
    /// The metadata predicates the retrieval applied (seed 000 Part 5), as the system reported
    /// them; empty when it reported none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<crate::pipeline::Filter>,
    /// The hops of an iterative retrieval, in order, beside the final `candidates`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hops: Vec<crate::pipeline::Hop>,
    /// Token usage the retrieval reported (an embedding or a query-understanding model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::pipeline::Usage>,
    /// The lane the reply says it answers for (checked against the lane asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<String>,
}

impl Retrieval {
    /// A retrieval of `candidates` with no predicates, hops or usage.
    pub fn new(query: Option<String>, depth: usize, candidates: Vec<Passage>) -> Self {
        Retrieval {
            query,
            depth,
            candidates,
            filters: Vec::new(),
            hops: Vec::new(),
            usage: None,
            lane: None,
        }
    }
}
