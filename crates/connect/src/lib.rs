//! Connectors to the system under test.
//!
//! A system runs as persistent worker processes speaking NDJSON over stdin/stdout (protocol v1,
//! `docs/protocol.md`): the embedded Python shim for `object: module:Class`, or any program for
//! `command: [...]`. [`WorkerConnection`] implements [`SystemConnection`]: it matches responses
//! to requests by id (several may be in flight), captures stderr, and restarts the process after
//! a crash or a timeout, reporting that call's failure as a [`StageError`].
#![warn(missing_docs)]

mod http;
mod reply;
mod shim;
mod worker;

pub use http::{HttpConnection, HttpOptions};
pub use shim::{install_python_shim, PYTHON_SHIM_FILES};
pub use worker::{WorkerCommand, WorkerConnection, WorkerOptions, PROTOCOL_VERSION};

/// How to reach the system: a worker process or an HTTP endpoint.
#[derive(Debug, Clone)]
pub enum ConnectorSpec {
    /// A worker process speaking NDJSON over stdio.
    Worker(WorkerOptions),
    /// An HTTP endpoint taking the same requests as POST bodies.
    Http(HttpOptions),
}

impl ConnectorSpec {
    /// Opens one connection (starts a worker, or says hello over HTTP).
    pub fn connect(&self) -> Result<Box<dyn SystemConnection>, StageError> {
        Ok(match self {
            ConnectorSpec::Worker(o) => Box::new(WorkerConnection::connect(o.clone())?),
            ConnectorSpec::Http(o) => Box::new(HttpConnection::connect(o.clone())?),
        })
    }
}

pub use oloproof_core::system::{SystemConnection, SystemInfo};
pub use oloproof_core::trace::StageError;
