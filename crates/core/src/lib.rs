//! The nouns of Oloproof and the rules that need no I/O beyond reading the user's files.
//!
//! - [`config`]: `oloproof.yaml`, validated with source spans ([`source::SourceError`] points at
//!   `file:line:col`, names the key path and suggests a fix).
//! - [`case`]: the case set (JSONL), validated before anything runs.
//! - [`dataset`]: recorded cases (Ragas or trace JSONL): a case and what the system did.
//! - [`passage`], [`context`]: what a system retrieved and the context assembled from it.
//! - [`trace`], [`verdict`]: what one case did and how each criterion judged it.
//! - [`settings`]: the resolved settings a run ran with, stored beside it.
//! - [`run`]: a stored run read back ([`run::LoadedRun`]) and the [`run::Evaluators`] trait
//!   readers use for what only the evaluators know.
//! - Result records every reader of the store shares, computed by the engine: [`summary`]
//!   (a run's summary), [`comparison`], [`gate`] (the gate report), [`diagnosis`],
//!   [`calibration`], [`history`] (a score-history line) and [`position`] (the
//!   lost-in-the-middle harness).
//! - [`identity`]: canonical JSON and the sha256 content hashes behind every id and cache key.
//! - [`monitor`]: the `monitor:` section (windows, tiered sampling, SLOs, alerts);
//!   [`monitor_report`]: what `oloproof monitor` computed from it (stored, rendered).
//! - [`system`]: the [`system::SystemConnection`] trait connectors implement.
//!
//! ```
//! use oloproof_core::identity::{canonical_json, content_hash};
//! let v = serde_json::json!({"b": 1, "a": [true, null]});
//! assert_eq!(canonical_json(&v), r#"{"a":[true,null],"b":1}"#);
//! assert_eq!(content_hash(&v).len(), 64);
//! ```
#![warn(missing_docs)]

pub mod calibration;
mod canonical;
pub mod case;
pub mod comparison;
pub mod config;
pub mod context;
pub mod corpus;
pub mod dataset;
pub mod diagnosis;
pub mod error;
pub mod external;
pub mod gate;
pub mod history;
pub mod identity;
pub mod monitor;
pub mod monitor_report;
pub mod passage;
pub mod pipeline;
pub mod position;
pub mod production;
pub mod run;
pub mod settings;
pub mod shadow;
pub mod source;
pub mod store;
pub mod stored_trace;
pub mod summary;
pub mod system;
pub mod trace;
pub mod verdict;
