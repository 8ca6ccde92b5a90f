//! Run orchestration: settings resolution, the staged execution with its caches, evaluators,
//! summaries and slices.
//!
//! `oloproof run` is the [`run`] module: it resolves [`settings::RunSettings`] from the config
//! and the system's `hello`, records the run, executes every case on a pool of workers
//! ([`execute`]: retrieve → assemble context → generate, every stage behind its
//! content-addressed cache), judges it with the [`evaluators`] registry, writes the trace and
//! verdicts in one transaction, and finally [`summary::summarize`]s the stored verdicts. A
//! resumed run finishes the cases an interrupted one left pending.
//!
//! Entry points: [`project::load_config`] (the one place a config is validated, evaluators
//! included), [`evaluators`] (the registry; [`evaluators::from_json`] builds one evaluator for a
//! library caller), [`run`] and [`recorded`] (live and recorded runs), [`diagnose`],
//! [`compare`], [`gate`], [`history`], [`calibrate`], [`generate`], [`position`] and
//! [`monitor`] (online evaluation of production traffic). The engine
//! reaches systems through `oloproof-connect`, judges through `oloproof-judge` and the store
//! through `oloproof-store`; it computes the result records of `oloproof_core` and never prints
//! them (rendering is `oloproof-report`'s, the terminal the CLI's).
//!
//! ```
//! use oloproof_core::case::parse_cases;
//! use oloproof_core::trace::Trace;
//! use oloproof_core::verdict::Verdict;
//! use oloproof_engine::{evaluators, project};
//! use serde_json::json;
//!
//! // One evaluator from its config entry, judging one case's trace.
//! let f1 = evaluators::from_json(&json!({"type": "token_f1"}))?;
//! let line = r#"{"id": "refund", "input": {"question": "Refund window?"}, "expected": {"answer": "14 days"}}"#;
//! let case = parse_cases("cases.jsonl", line).unwrap().remove(0);
//! let mut trace = Trace::new("refund");
//! trace.generation = json!({"answer": "Within 14 days of delivery."}).as_object().cloned();
//! let v = f1.evaluate(&case, &trace, None);
//! assert_eq!(v.criterion, "token_f1");
//! // 2 shared tokens of 5 predicted and 2 expected: F1 = 2·(2/5)·1 / (2/5 + 1) = 4/7.
//! assert!(matches!(v.verdict, Verdict::Score { value } if (value - 4.0 / 7.0).abs() < 1e-12));
//!
//! // A config is validated whole, evaluators included: a typo is a located error.
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("oloproof.yaml");
//! std::fs::write(
//!     &path,
//!     "system:\n  rag: {command: [./system]}\ncases: cases.jsonl\nevaluators:\n  - {type: token_f2}\n",
//! )?;
//! let err = project::load_config(&path, &[]).unwrap_err().to_string();
//! assert!(err.contains("unknown evaluator type `token_f2`"), "{err}");
//! assert!(err.contains("oloproof.yaml:5:12") && err.contains("did you mean `token_f1`?"), "{err}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub mod calibrate;
pub mod compare;
pub mod diagnose;
pub mod dry_run;
pub mod error;
pub mod evaluators;
pub mod execute;
pub mod external;
pub mod filter_check;
pub mod gate;
pub mod generate;
pub mod history;
pub mod judged;
pub mod keys;
pub mod monitor;
pub mod pairwise;
pub mod pipeline;
pub mod position;
pub mod project;
pub mod recorded;
pub mod run;
pub mod settings;
pub mod stage_deltas;
pub mod summary;

pub use error::EngineError;
