//! The viewer's errors: what stops it from starting or serving.

use std::net::SocketAddr;

/// Why the viewer could not start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ViewError {
    /// The address is not a loopback one and `--host` was not given explicitly.
    #[error(
        "refusing to serve on {addr}: it is not a loopback address, and the store's contents \
         would be visible to other machines; pass --host {host} explicitly if that is intended"
    )]
    NonLoopback {
        /// The address asked for.
        addr: SocketAddr,
        /// Its host part, for the suggested flag.
        host: String,
    },
    /// The address could not be bound (in use, not ours, …).
    #[error("cannot listen on {addr}: {source}; pick another with --port N (0 picks a free one)")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The store cannot be served: damaged, written by a newer Oloproof, locked, unreadable.
    #[error("cannot serve {path}: {source}")]
    Store {
        /// The store.
        path: String,
        /// Why.
        #[source]
        source: oloproof_store::StoreError,
    },
    /// The async runtime or the server failed.
    #[error("the web server failed: {0}")]
    Serve(#[source] std::io::Error),
}
