//! Pure metric functions for Oloproof: ranking metrics (trec_eval-compatible), fusion and text
//! metrics, and [`batch`]: every metric over a batch of items (what `oloproof metric` runs)
//! with its aggregate and interval. No I/O, no async, no clock: every function is a
//! deterministic computation over in-memory values.
#![warn(missing_docs)]

pub mod agreement;
pub mod batch;
pub mod calibration;
pub mod classify;
pub mod error;
pub mod fusion;
pub mod ingest;
pub mod ontology;
pub mod rag;
pub mod ranking;
pub mod text;
