//! Connectors to the system under test: NDJSON worker processes and the embedded Python shim.
#![warn(missing_docs)]
