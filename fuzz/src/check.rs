//! The "located error" assertions shared by the targets.

use std::io::Write;

use oloproof_core::source::{Origin, SourceError};

/// Asserts that `e` points into `text` (the file named `path`) at a real line and column, or
/// names one of the `overrides` it came from.
pub fn located(e: &SourceError, path: &str, text: &str, overrides: &[String]) {
    note(e);
    match &e.origin {
        Origin::File {
            path: p,
            line,
            column,
            width,
            ..
        } => {
            assert_eq!(p, path, "error names another file: {e}");
            // A position just past the last line is where "unexpected end" errors point.
            let lines = line_count(path, text) + 1;
            assert!(
                (1..=lines).contains(line),
                "line {line} is outside the {lines} lines of the input: {e}"
            );
            assert!(*column >= 1, "column 0: {e}");
            assert!(*width >= 1, "width 0: {e}");
        }
        Origin::Override(arg) => {
            assert!(
                overrides.contains(arg),
                "error attributed to `--set {arg}`, which was not given: {e}"
            );
        }
    }
    assert!(!e.message.trim().is_empty(), "an error without a message");
    // Rendering must not panic either (it slices the source line by columns).
    let _ = e.to_string();
}

/// Lines of `text` as the parser of `path` counts them: YAML (1.2, §5.4) also breaks lines at
/// a lone carriage return, JSONL parsers split at `\n` only.
fn line_count(path: &str, text: &str) -> usize {
    if path.ends_with(".yaml") {
        text.split('\n')
            // One `\r` before `\n` is part of that break; any other `\r` is a break of its own.
            .map(|l| l.strip_suffix('\r').unwrap_or(l).split('\r').count())
            .sum::<usize>()
    } else {
        text.lines().count()
    }
}

/// Asserts [`located`] for every error of a line-oriented file, and that there is at least one.
pub fn all_located(errors: &[SourceError], path: &str, text: &str) {
    assert!(!errors.is_empty(), "rejected with no error");
    for e in errors {
        located(e, path, text, &[]);
    }
}

/// The input as text: the parsers of text files take `&str`, and their file readers reject
/// non-UTF-8 bytes before parsing (see the module docs of each target).
pub fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// Prints a rejection when `OLOPROOF_FUZZ_VERBOSE` is set (for replaying one input by hand).
pub fn note(what: &dyn std::fmt::Display) {
    if std::env::var_os("OLOPROOF_FUZZ_VERBOSE").is_some() {
        let _ = writeln!(std::io::stderr(), "rejected: {what}");
    }
}
