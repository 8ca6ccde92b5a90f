//! Terminal tables and machine-readable summaries.
#![warn(missing_docs)]
