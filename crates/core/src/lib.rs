//! The nouns of Oloproof and the rules that need no I/O beyond reading the user's files.
//!
//! - [`config`]: `oloproof.yaml`, validated with source spans ([`source::SourceError`] points at
//!   `file:line:col`, names the key path and suggests a fix).
//! - [`case`]: the case set (JSONL), validated before anything runs.
//! - [`dataset`]: recorded cases (Ragas or trace JSONL): a case and what the system did.
//! - [`passage`], [`context`]: what a system retrieved and the context assembled from it.
//! - [`trace`], [`verdict`]: what one case did and how each criterion judged it.
//! - [`summary`]: result types shared by every reader of the store.
//! - [`identity`]: canonical JSON and the sha256 content hashes behind every id and cache key.
//! - [`system`]: the [`system::SystemConnection`] trait connectors implement.
//!
//! ```
//! use oloproof_core::identity::{canonical_json, content_hash};
//! let v = serde_json::json!({"b": 1, "a": [true, null]});
//! assert_eq!(canonical_json(&v), r#"{"a":[true,null],"b":1}"#);
//! assert_eq!(content_hash(&v).len(), 64);
//! ```
#![warn(missing_docs)]

pub mod case;
pub mod config;
pub mod context;
pub mod dataset;
pub mod identity;
pub mod passage;
pub mod source;
pub mod summary;
pub mod system;
pub mod trace;
pub mod verdict;
