//! Ranking metrics.
//!
//! [`query`] holds the per-query formulas over one judged ranking; they are the single
//! implementation shared by the run spine's evaluators and the trec_eval-compatible engine.

pub mod query;
