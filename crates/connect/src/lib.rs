//! Connectors to the system under test.
//!
//! A system runs as persistent worker processes speaking NDJSON over stdin/stdout (protocol v1,
//! `docs/protocol.md`): the embedded Python shim for `object: module:Class`, or any program for
//! `command: [...]`. [`WorkerConnection`] implements [`SystemConnection`]: it matches responses
//! to requests by id (several may be in flight), captures stderr, and restarts the process after
//! a crash or a timeout, reporting that call's failure as a [`StageError`].
#![warn(missing_docs)]

mod shim;
mod worker;

pub use shim::{install_python_shim, PYTHON_SHIM_FILES};
pub use worker::{WorkerCommand, WorkerConnection, WorkerOptions, PROTOCOL_VERSION};

pub use oloproof_core::system::{SystemConnection, SystemInfo};
pub use oloproof_core::trace::StageError;
