//! Test support: runs the Python reference implementations the test suite compares against, and
//! the seeded case generator its comparisons use.
//!
//! A reference test generates its cases with [`SplitMix64`] from a fixed seed, asks
//! [`reference_python`] for the interpreter named by `OLOPROOF_REFERENCE_PYTHON` (skipping with
//! a note when it is unset, failing when `OLOPROOF_REQUIRE_REFERENCES=1`), and runs the Python
//! script beside the test with [`run_json`] (one JSON document each way), [`run_lines`] (one
//! JSON line per case each way) or, for other formats, [`run`].
//!
//! A dev-dependency only: nothing shipped depends on it. It starts processes and panics on
//! failure, as test support may.
//!
//! ```
//! use oloproof_reference::{json_lines, SplitMix64};
//!
//! // The stream is fixed: seed 0 gives SplitMix64's published first value on every machine.
//! let mut rng = SplitMix64(0);
//! assert_eq!(rng.next_u64(), 0xe220_a839_7b1d_cdaf);
//! let u = rng.unit();
//! assert!((0.0..1.0).contains(&u));
//!
//! // What a reference script prints, one JSON value per line.
//! let answers = json_lines(b"{\"f1\": 0.5}\n{\"f1\": 1.0}\n");
//! assert_eq!(answers[1]["f1"], 1.0);
//! ```

#![warn(missing_docs)]

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// SplitMix64 (Steele, Lea and Flood, 2014): a fixed, dependency-free stream, seeded by its
/// tuple field. Its arithmetic must not change: the reference tests' cases depend on it.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 bits of the stream.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (by remainder, so very slightly biased; `n` must not be 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// [`below`](Self::below) on `u64`: the same draw, without conversions.
    pub fn below_u64(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// A float in `[0, 1)` from the top 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// One of `items`, uniformly (one [`below`](Self::below) draw; `items` must not be empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The reference interpreter from `OLOPROOF_REFERENCE_PYTHON`, or `None` after a note naming
/// `comparison` (e.g. `"scipy reference comparison"`) when it is unset or empty.
///
/// # Panics
///
/// When it is unset or empty and `OLOPROOF_REQUIRE_REFERENCES=1` (as `scripts/test` sets).
#[track_caller]
#[allow(clippy::print_stderr, reason = "the skip note is the point")]
pub fn reference_python(comparison: &str) -> Option<PathBuf> {
    match std::env::var_os("OLOPROOF_REFERENCE_PYTHON") {
        Some(path) if !path.is_empty() => Some(PathBuf::from(path)),
        _ => {
            let required = std::env::var("OLOPROOF_REQUIRE_REFERENCES").is_ok_and(|v| v == "1");
            assert!(
                !required,
                "OLOPROOF_REQUIRE_REFERENCES=1 but OLOPROOF_REFERENCE_PYTHON is not set \
                 (needed by the {comparison})"
            );
            eprintln!(
                "note: skipping the {comparison}: OLOPROOF_REFERENCE_PYTHON is not set \
                 (scripts/test sets it)"
            );
            None
        }
    }
}

/// Runs `python script args…` with `input` on stdin and returns its stdout.
///
/// # Panics
///
/// When the interpreter cannot be started or the script fails (with the script's stderr).
pub fn run(python: &Path, script: &Path, args: &[&OsStr], input: &[u8]) -> Vec<u8> {
    let mut child = Command::new(python)
        .arg(script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", python.display()));
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(input)
        .expect("write the cases to python");
    let output = child.wait_with_output().expect("wait for python");
    assert!(
        output.status.success(),
        "{} {args:?} failed ({}):\n{}",
        script.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// Runs `python script args…` with the JSON document `input` on stdin and parses the JSON
/// document it prints.
///
/// # Panics
///
/// As [`run`], and when the output is not JSON.
pub fn run_json(python: &Path, script: &Path, args: &[&OsStr], input: &Value) -> Value {
    let stdout = run(python, script, args, input.to_string().as_bytes());
    serde_json::from_slice(&stdout)
        .unwrap_or_else(|e| panic!("JSON from {}: {e}", script.display()))
}

/// Runs `python script` with one JSON line per case on stdin and returns its answers, one JSON
/// line per case.
///
/// # Panics
///
/// As [`run`], and when the output is not one JSON line per case.
pub fn run_lines(python: &Path, script: &Path, cases: &[Value]) -> Vec<Value> {
    let input: String = cases.iter().map(|c| format!("{c}\n")).collect();
    let answers = json_lines(&run(python, script, &[], input.as_bytes()));
    assert_eq!(
        answers.len(),
        cases.len(),
        "{} answered {} lines for {} cases",
        script.display(),
        answers.len(),
        cases.len()
    );
    answers
}

/// Parses output with one JSON value per line.
///
/// # Panics
///
/// When the output is not UTF-8 or a line is not JSON.
pub fn json_lines(stdout: &[u8]) -> Vec<Value> {
    std::str::from_utf8(stdout)
        .expect("utf-8 from python")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_is_the_published_stream() {
        let mut rng = SplitMix64(0);
        assert_eq!(rng.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(rng.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(rng.next_u64(), 0x06c4_5d18_8009_454f);
    }

    #[test]
    fn helpers_draw_once_each() {
        let (mut a, mut b) = (SplitMix64(7), SplitMix64(7));
        let raw = b.next_u64();
        assert_eq!(a.below(10), (raw % 10) as usize);
        let raw = b.next_u64();
        assert_eq!(a.below_u64(10), raw % 10);
        let raw = b.next_u64();
        assert_eq!(a.unit(), (raw >> 11) as f64 / (1u64 << 53) as f64);
        let raw = b.next_u64();
        assert_eq!(*a.pick(&[1, 2, 3]), [1, 2, 3][(raw % 3) as usize]);
        assert!((0..1000).all(|_| (0.0..1.0).contains(&a.unit())));
    }
}
