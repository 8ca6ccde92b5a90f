//! JSONL files: cases, recorded datasets (Ragas and trace) and the score history.
//!
//! Asserted on rejection: at least one error, and every error is a `SourceError` at a line of
//! the input (1-based, within the file), column ≥ 1, width ≥ 1, with a message, rendering
//! without panicking — these parsers report every bad line, so every error is checked.
//!
//! Non-UTF-8 input is not fuzzed: `load_dataset` reads bytes lossily before parsing, and the
//! case and history readers (`read_to_string`) refuse it before any parser runs.

use oloproof_core::case::parse_cases;
use oloproof_core::dataset::list_repr::parse_list;
use oloproof_core::dataset::{parse_dataset, parse_text, DatasetEncoding, DatasetFormat, ReadOptions};
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

/// A Ragas CSV or JSON export (`core::dataset::parse_text`), with no broken row allowed and
/// with every one allowed (skipped rows must be located too).
pub fn dataset_tabular(data: &[u8]) {
    let Some(text) = text(data) else { return };
    for (encoding, path) in [(DatasetEncoding::Csv, "d.csv"), (DatasetEncoding::Json, "d.json")] {
        for max_error_rate in [0.0, 1.0] {
            let options = ReadOptions {
                format: None,
                encoding: Some(encoding),
                max_error_rate,
            };
            match parse_text(path, text, encoding, &options) {
                Ok(d) => {
                    for e in &d.skipped {
                        crate::check::all_located(std::slice::from_ref(e), path, text);
                    }
                }
                Err(errors) => all_located(&errors, path, text),
            }
        }
    }
}

/// One CSV list cell (`core::dataset::list_repr::parse_list`): never panics, an error's offset
/// is within the cell.
pub fn list_repr(data: &[u8]) {
    let Some(cell) = text(data) else { return };
    if let Err(e) = parse_list(cell) {
        assert!(e.offset <= cell.chars().count(), "offset {} past the cell", e.offset);
        assert!(!e.message.is_empty());
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
