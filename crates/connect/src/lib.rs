//! Connectors to the system under test.
//!
//! A system runs as persistent worker processes speaking NDJSON over stdin/stdout (protocol v1,
//! `docs/protocol.md`): the embedded Python shim for `object: module:Class`, or any program for
//! `command: [...]`. [`WorkerConnection`] implements [`SystemConnection`]: it sends one request at
//! a time and checks the response's id, captures stderr (bounded: the first lines per case, the
//! last ones for errors, each line cut at 4 KiB), and restarts the process after a crash or a
//! timeout, reporting that call's failure as a [`StageError`]; a worker that exited between two
//! requests is restarted before the next one, which it never saw. Responses are bounded by
//! [`MAX_RESPONSE_BYTES`].
#![warn(missing_docs)]

mod error;
mod http;
mod reply;
mod shim;
mod worker;

pub use http::{HttpConnection, HttpOptions};
pub use shim::{install_python_shim, PYTHON_SHIM_FILES};
pub use worker::{WorkerCommand, WorkerConnection, WorkerOptions, PROTOCOL_VERSION};

/// The longest response accepted from a system, in bytes: one protocol line of a worker, or the
/// body of an HTTP response. A longer one is read to its end and dropped (never held whole in
/// memory), and its request fails with a protocol error saying so.
pub const MAX_RESPONSE_BYTES: usize = 16 << 20;

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
