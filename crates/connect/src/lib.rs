//! Connectors to the system under test.
//!
//! A system runs as persistent worker processes speaking NDJSON over stdin/stdout (protocol v1,
//! `docs/protocol.md`): the embedded Python shim for `object: module:Class`, or any program for
//! `command: [...]`. [`WorkerConnection`] implements [`SystemConnection`]: it sends one request at
//! a time and checks the response's id, captures stderr (bounded: the first lines per case, the
//! last ones for errors, each line cut at 4 KiB), and restarts the process after a crash or a
//! timeout, reporting that call's failure as a [`StageError`]; a worker that exited between two
//! requests is restarted before the next one, which it never saw. Responses are bounded by
//! [`MAX_RESPONSE_BYTES`]. [`HttpConnection`] speaks the same requests as POST bodies to
//! `http: URL`. [`ConnectorSpec::connect`] opens either; [`install_python_shim`] writes the shim
//! the worker command imports.
//!
//! This crate moves bytes and types them: it knows nothing of caches, evaluators or the store,
//! and a failed call is a [`StageError`] for the engine to record, never a panic.
//!
//! ```
//! use std::io::{BufRead, BufReader, Read, Write};
//! use std::net::TcpListener;
//! use std::time::Duration;
//!
//! use oloproof_connect::{ConnectorSpec, HttpOptions, SystemConnection};
//! use serde_json::{json, Map, Value};
//!
//! // A system behind HTTP on loopback: each request is a protocol object POSTed to one URL,
//! // each response `{"id", "ok"}`. It answers `hello`, then one `retrieve`.
//! let listener = TcpListener::bind("127.0.0.1:0")?;
//! let url = format!("http://{}/rag", listener.local_addr()?);
//! std::thread::spawn(move || {
//!     for stream in listener.incoming().take(2) {
//!         let mut stream = stream.unwrap();
//!         let mut reader = BufReader::new(stream.try_clone().unwrap());
//!         let (mut line, mut length) = (String::new(), 0);
//!         while reader.read_line(&mut line).unwrap() > 0 && line != "\r\n" {
//!             if let Some(n) = line.to_ascii_lowercase().strip_prefix("content-length:") {
//!                 length = n.trim().parse().unwrap();
//!             }
//!             line.clear();
//!         }
//!         let mut body = vec![0; length];
//!         reader.read_exact(&mut body).unwrap();
//!         let request: Value = serde_json::from_slice(&body).unwrap();
//!         let ok = match request["op"].as_str() {
//!             Some("hello") => json!({"protocol": 1, "name": "faq", "version": "2"}),
//!             _ => json!({"depth": request["depth"], "candidates": [
//!                 {"doc_id": "refunds", "text": "Refunds within 14 days."},
//!                 {"doc_id": "shipping"},
//!             ]}),
//!         };
//!         let reply = json!({"id": request["id"], "ok": ok}).to_string();
//!         let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close";
//!         write!(stream, "{head}\r\nContent-Length: {}\r\n\r\n{reply}", reply.len()).unwrap();
//!     }
//! });
//!
//! let spec = ConnectorSpec::Http(HttpOptions {
//!     url,
//!     timeout: Duration::from_secs(10),
//!     params: Map::new(),
//! });
//! let mut system = spec.connect().map_err(|e| e.message)?; // sends `hello`
//! assert_eq!((system.info().name.as_str(), system.info().version.as_str()), ("faq", "2"));
//!
//! // A typed retrieval, cut to the depth asked for, in the system's order.
//! let retrieval = system.retrieve(&Map::new(), 1).map_err(|e| e.message)?;
//! assert_eq!(retrieval.candidates.len(), 1);
//! assert_eq!(retrieval.candidates[0].doc_id, "refunds");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

mod error;
#[cfg(unix)]
mod fork_server;
mod http;
mod lines;
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
