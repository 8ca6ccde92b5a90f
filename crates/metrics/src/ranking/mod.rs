//! Ranking metrics: a trec_eval-compatible measure engine over in-memory qrels and runs.
//!
//! * [`query`] — per-query formulas over a list of gains (`precision`, `recall`, `ndcg_cut`,
//!   …), used by the run spine's evaluators;
//! * [`kernel`] — the formulas themselves, shared by [`query`] and by the engine, so that each
//!   formula has one implementation;
//! * [`judged`] — trec_eval's ranking rule (score descending, ties by docno descending),
//!   `-M`/`-J`, and the judged ranking every measure reads;
//! * [`measures`] — every measure of trec_eval's `-m all_trec` with its parameters and names;
//! * [`evaluate`] — topic selection (`-c`), missing topics and the summary.
//!
//! The engine reproduces trec_eval 10.0 by default and 9.0.x (pytrec_eval) with
//! [`Compat::V9`].
//!
//! # Example
//!
//! ```
//! use oloproof_metrics::ranking::{evaluate, Compat, EvalOptions, MeasureSet, Qrels, Run};
//!
//! let qrels = Qrels::from_triples([
//!     ("q1", "d1", 1),
//!     ("q1", "d2", 0),
//!     ("q1", "d3", 2),
//! ])?;
//! let mut run = Run::new("my-run");
//! run.push("q1", "d2", 3.0);
//! run.push("q1", "d1", 2.0);
//! run.push("q1", "d9", 1.0);
//!
//! let measures = MeasureSet::from_specs(&["map", "P.2", "ndcg_cut.10"], Compat::V10)?;
//! let eval = evaluate(&qrels, &run, &measures, &EvalOptions::default())?;
//! // d1 (relevant) is at rank 2 of 2 relevant documents: AP = (1/2) / 2.
//! assert_eq!(eval.summary_value("map"), Some(0.25));
//! assert_eq!(eval.summary_value("P_2"), Some(0.5));
//! # Ok::<(), oloproof_metrics::ranking::RankingError>(())
//! ```

pub mod error;
pub mod evaluate;
pub mod judged;
pub mod kernel;
pub mod measures;
pub mod query;

pub use error::RankingError;
pub use evaluate::{evaluate, evaluate_topic, summarize, EvalOptions, Evaluation, Qrels, Run};
pub use judged::{judge, rank, Compat, JudgeOptions, JudgedRanking, Retrieved, TopicQrels};
pub use measures::{
    Aggregate, Format, Measure, MeasureKind, MeasureSet, Params, Slot, Summary, TopicValues,
};
