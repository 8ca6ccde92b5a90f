//! JSONL files: cases, recorded datasets (Ragas and trace) and the score history.
//!
//! Asserted on rejection: at least one error, and every error is a `SourceError` at a line of
//! the input (1-based, within the file), column ≥ 1, width ≥ 1, with a message, rendering
//! without panicking — these parsers report every bad line, so every error is checked.
//!
//! Non-UTF-8 input is not fuzzed: `load_dataset` reads bytes lossily before parsing, and the
//! case and history readers (`read_to_string`) refuse it before any parser runs.

use oloproof_core::case::parse_cases;
use oloproof_core::dataset::{parse_dataset, DatasetFormat};
use oloproof_engine::history::parse_history;

use crate::check::{all_located, text};

/// Case JSONL (`core::case::parse_cases`).
pub fn cases(data: &[u8]) {
    let Some(jsonl) = text(data) else { return };
    if let Err(errors) = parse_cases("cases.jsonl", jsonl) {
        all_located(&errors, "cases.jsonl", jsonl);
    }
}

/// A recorded dataset (`core::dataset::parse_dataset`), read three ways: format detected, and
/// forced to Ragas and to trace (`--format`).
pub fn dataset(data: &[u8]) {
    let Some(jsonl) = text(data) else { return };
    for format in [None, Some(DatasetFormat::Ragas), Some(DatasetFormat::Trace)] {
        match parse_dataset("dataset.jsonl", jsonl, format) {
            Ok(d) => {
                if let Some(f) = format {
                    assert_eq!(
                        d.format,
                        f,
                        "asked for {} and got {}",
                        f.name(),
                        d.format.name()
                    );
                }
            }
            Err(errors) => all_located(&errors, "dataset.jsonl", jsonl),
        }
    }
}

/// The score history (`engine::history::parse_history`).
pub fn history(data: &[u8]) {
    let Some(jsonl) = text(data) else { return };
    match parse_history("history.jsonl", jsonl) {
        Ok(entries) => {
            for e in &entries {
                // The gate and `oloproof history` read these of every entry.
                assert!(
                    oloproof_engine::history::entry_time_ms(e).is_some(),
                    "an accepted entry without a time"
                );
                let _ = e.short_label();
            }
        }
        Err(errors) => all_located(&errors, "history.jsonl", jsonl),
    }
}
