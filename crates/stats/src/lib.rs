//! Intervals, bootstrap, paired tests. No I/O.
#![warn(missing_docs)]
