//! Retrieval and RAG metrics beyond ranking: metadata-filter exclusion (seed 000, Part 5), context
//! use and answer grounding, nugget recall, approximate-index recall, index freshness, query
//! expansion, and request cost and cache hit rates.
//!
//! * [`filters`] — the filter false-exclusion rate (per query and per gold document), predicate
//!   precision/recall/F1 of extracted filters, and the hard-filter vs soft-boost decision rule;
//! * [`claims`] — offline claim support (a heuristic): embedding similarity to the context's
//!   sentences plus entity and number grounding;
//! * [`citations`] — ALCE citation recall and precision over an entailment callback;
//! * [`context`] — context utilisation, nugget scores as TREC 2024 RAG's AutoNuggetizer computes
//!   them, and entity grounding;
//! * [`ann`] — exact brute-force neighbours and the recall@k of an approximate index;
//! * [`npy`] — a reader for the `.npy` vectors `ann` takes;
//! * [`freshness`] — RFC 3339 timestamps and the index freshness lag;
//! * [`query`] — recall of a ranked list and the union recall of several rewrites;
//! * [`sentences`] — the rule-based sentence splitter used for answers;
//! * [`system`] — cost per request and cache hit rates per layer;
//! * [`rubrex`] — recognising abstentions and requests for clarification in answer text.
//! * [`ragchecker`] — RAGChecker's claim-level diagnostics (overall, retriever and generator
//!   metrics) from checked claims.
//!
//! Ranking metrics themselves (trec_eval measures) are in [`crate::ranking`]; rank fusion in
//! [`crate::fusion`].
//!
//! ```
//! use oloproof_metrics::rag::filters::{false_exclusion, FilterOutcome};
//!
//! // q1 keeps its gold document, q2 loses it to the filter.
//! let queries = [
//!     FilterOutcome::new(["d1"], ["d1", "d4"]),
//!     FilterOutcome::new(["d2"], ["d1", "d4"]),
//! ];
//! let rates = false_exclusion(&queries);
//! assert_eq!(rates.query_rate(), Some(0.5));
//! assert_eq!(rates.document_rate(), Some(0.5));
//! ```

pub mod ann;
pub mod citations;
pub mod claims;
pub mod context;
pub mod filters;
pub mod freshness;
pub mod npy;
pub mod query;
pub mod ragchecker;
pub mod rubrex;
pub mod sentences;
pub mod system;
