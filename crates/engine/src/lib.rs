//! Run orchestration: settings resolution, the staged execution with its caches, evaluators,
//! summaries and slices.
//!
//! `oloproof run` is [`run::start_run`]: it resolves [`settings::RunSettings`] from the config and
//! the system's `hello`, records the run, executes every case on a pool of workers (each case:
//! retrieve → assemble context → generate, every stage behind its content-addressed cache),
//! judges it with the [`evaluators`] registry, writes the trace and verdicts in one transaction,
//! and finally [`summary::summarize`]s the stored verdicts. [`run::resume_run`] finishes a run
//! that was interrupted.
#![warn(missing_docs)]

pub mod calibrate;
pub mod compare;
pub mod diagnose;
pub mod dry_run;
pub mod error;
pub mod evaluators;
pub mod execute;
pub mod gate;
pub mod generate;
pub mod history;
pub mod judged;
pub mod keys;
pub mod position;
pub mod project;
pub mod recorded;
pub mod run;
pub mod settings;
pub mod summary;

pub use error::EngineError;
