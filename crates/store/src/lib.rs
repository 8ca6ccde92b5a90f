//! The run store (SQLite) and content-addressed stage, execution and judgment caches.
#![warn(missing_docs)]
