//! Oloproof's nouns: config, cases, traces, verdicts, identity hashing, context assembly.
#![warn(missing_docs)]
