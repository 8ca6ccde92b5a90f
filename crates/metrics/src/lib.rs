//! Pure metric functions for Oloproof: ranking metrics (trec_eval-compatible), fusion and text
//! metrics, and [`batch`]: every metric over a batch of items (what `oloproof metric` runs)
//! with its aggregate and interval. No I/O, no async, no clock: every function is a
//! deterministic computation over in-memory values.
//!
//! - [`ranking`]: trec_eval's measures over qrels and runs ([`ranking::evaluate()`]), and the
//!   per-query formulas over a list of gains ([`ranking::query`]) the run evaluators use.
//! - [`text`]: SQuAD answer normalisation, exact match, token F1; [`fusion`]: RRF and the Comb
//!   family; [`rag`]: RAG metrics beyond ranking (citations as ALCE, claims, context use,
//!   freshness, cost).
//! - [`batch`]: [`batch::registry`] of every metric as `oloproof metric` runs it, each a
//!   [`batch::MetricSpec`] from JSON lines to an aggregate with its interval.
//! - [`agreement`] (kappa, alpha, rank correlation), [`calibration`], [`classify`] (seqeval,
//!   per-class reports), [`ingest`] (CER/WER, TEDS, near-duplicates), [`ontology`].
//! - [`pii`]: rule-based PII detectors (e-mail, phone, card, IBAN, SSN, NIR, IP), each with its
//!   standard's check, as character spans for [`ingest::spans`] scoring.
//!
//! ```
//! use oloproof_metrics::{batch, ranking::query, text};
//!
//! // A ranking's gains in rank order: the first relevant document is at rank 2.
//! let gains = [0.0, 1.0, 0.0, 2.0];
//! assert_eq!(query::hit_rate(&gains, 1), 0.0);
//! assert_eq!(query::reciprocal_rank(&gains, 4), 0.5);
//! assert_eq!(query::recall(&gains, 2, 3), Some(0.5));
//! // nDCG@2: gain 1 at rank 2 (discount log2(3)) against the ideal gain 2 at rank 1 and 1 at rank 2.
//! let ideal = 2.0 + 1.0 / 3f64.log2();
//! let ndcg = query::ndcg_cut(&gains, &gains, 2).unwrap();
//! assert!((ndcg - (1.0 / 3f64.log2()) / ideal).abs() < 1e-12);
//! // No relevant document: recall is undefined, not zero.
//! assert_eq!(query::recall(&[0.0, 0.0], 0, 2), None);
//!
//! // SQuAD answer metrics: case, punctuation and articles do not count.
//! assert!(text::exact_match("The Eiffel Tower!", "eiffel tower"));
//! // 2 shared tokens of 5 predicted and 2 expected: F1 = 2·(2/5)·1 / (2/5 + 1) = 4/7.
//! assert!((text::token_f1("Within 14 days of delivery.", "14 days") - 4.0 / 7.0).abs() < 1e-12);
//!
//! // The same metric over a batch, as `oloproof metric token_f1` computes it.
//! let input = batch::MetricInput::from_json_lines(
//!     "{\"prediction\": \"14 days\", \"reference\": \"14 days\"}\n\
//!      {\"prediction\": \"a week\", \"reference\": \"14 days\"}\n",
//! )
//! .unwrap();
//! let out = (batch::find("token_f1").unwrap().run)(&input).unwrap();
//! assert_eq!(out.estimate.value, Some(0.5));
//! ```
#![warn(missing_docs)]

pub mod agreement;
pub mod batch;
pub mod calibration;
pub mod classify;
pub mod error;
pub mod fusion;
pub mod ingest;
pub mod ontology;
pub mod pii;
pub mod rag;
pub mod ragas;
pub mod ranking;
pub mod text;
