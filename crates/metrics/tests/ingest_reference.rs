//! Group A (ingestion) metrics against their reference implementations, on randomized inputs
//! with fixed seeds, through `ingest_reference.py` beside this file:
//! - CER / WER and their S/D/I/H counts against jiwer 4.0 (exact);
//! - TEDS and TEDS-S against PubTabNet's `metric.py` with apted and lxml (to 1e-9);
//! - LSH band/row choice against datasketch's `_optimal_param` (exact), MinHash Jaccard
//!   estimates against exact Jaccard and datasketch's estimates (statistical);
//! - per-label precision/recall/F1 against scikit-learn's `precision_recall_fscore_support`;
//! - NFC/NFKC agreement against `unicodedata`; normalised Levenshtein similarity against
//!   rapidfuzz.
//!
//! The interpreter comes from `OLOPROOF_REFERENCE_PYTHON` (scripts/test sets it to the venv
//! with `scripts/requirements-test.txt`). Without it each test is skipped with a note, unless
//! `OLOPROOF_REQUIRE_REFERENCES=1`, in which case it fails.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use oloproof_metrics::ingest::error_rate::{self, char_counts, word_counts, ErrorCounts};
use serde_json::{json, Value};

/// SplitMix64 (Steele, Lea and Flood, 2014): a fixed, dependency-free stream.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[allow(clippy::print_stderr)]
fn reference_python() -> Option<PathBuf> {
    match std::env::var_os("OLOPROOF_REFERENCE_PYTHON") {
        Some(path) if !path.is_empty() => Some(PathBuf::from(path)),
        _ => {
            let required = std::env::var("OLOPROOF_REQUIRE_REFERENCES").is_ok_and(|v| v == "1");
            assert!(
                !required,
                "OLOPROOF_REQUIRE_REFERENCES=1 but OLOPROOF_REFERENCE_PYTHON is not set"
            );
            eprintln!(
                "note: skipping the ingestion reference comparison: OLOPROOF_REFERENCE_PYTHON \
                 is not set (scripts/test sets it)"
            );
            None
        }
    }
}

/// Runs `ingest_reference.py MODE` on `input`, returning its JSON answer.
fn reference(python: &PathBuf, mode: &str, input: &Value) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/ingest_reference.py");
    let mut child = Command::new(python)
        .arg(&script)
        .arg(mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", python.display()));
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(input.to_string().as_bytes())
        .expect("write the cases to python");
    let output = child.wait_with_output().expect("wait for python");
    assert!(
        output.status.success(),
        "ingest_reference.py {mode} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON from python")
}

/// A float sent by the script as its `repr` (parsed here, correctly rounded).
fn float(v: &Value) -> f64 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("expected a float repr, found {v}"))
}

fn counts(v: &Value) -> ErrorCounts {
    let n: Vec<usize> = v
        .as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_u64().expect("count") as usize)
        .collect();
    ErrorCounts {
        hits: n[0],
        substitutions: n[1],
        deletions: n[2],
        insertions: n[3],
    }
}

const WORDS: &[&str] = &[
    "mars", "Mars", "moons", "m00ns", "two", "Phobos", "Deimos", "Deirnos", "a", "the", "é",
    "e\u{301}", "東京", "🙂", "x", "xx", "of", "and",
];
const SPACES: &[&str] = &[
    " ",
    " ",
    " ",
    " ",
    "  ",
    "\t",
    "\n",
    " \t",
    "\u{a0}",
    "\u{a0}\u{a0}",
    "\u{1f}",
    "\u{3000} ",
    "\r\n",
];

fn sentence(rng: &mut SplitMix64, len: usize) -> Vec<String> {
    (0..len).map(|_| rng.pick(WORDS).to_string()).collect()
}

fn join(rng: &mut SplitMix64, words: &[String]) -> String {
    let mut s = String::new();
    if rng.below(5) == 0 {
        s.push_str(rng.pick(SPACES));
    }
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            s.push_str(rng.pick(SPACES));
        }
        s.push_str(w);
    }
    if rng.below(5) == 0 {
        s.push_str(rng.pick(SPACES));
    }
    s
}

/// A noisy copy: random substitutions, deletions and insertions of words and characters.
fn corrupt(rng: &mut SplitMix64, words: &[String], rate: f64) -> Vec<String> {
    let mut out = Vec::new();
    for w in words {
        let u = rng.unit();
        if u < rate / 3.0 {
            continue;
        } else if u < 2.0 * rate / 3.0 {
            out.push(rng.pick(WORDS).to_string());
        } else if u < rate {
            out.push(w.clone());
            out.push(rng.pick(WORDS).to_string());
        } else if rng.unit() < rate {
            // character-level damage inside the word
            let mut chars: Vec<char> = w.chars().collect();
            let i = rng.below(chars.len());
            chars[i] = rng.pick(&['0', 'r', 'n', 'm', 'é']);
            out.push(chars.into_iter().collect());
        } else {
            out.push(w.clone());
        }
    }
    out
}

#[test]
fn cer_and_wer_match_jiwer() {
    let Some(python) = reference_python() else {
        return;
    };
    let mut rng = SplitMix64(0x0c3e_0a3e);
    let mut pairs: Vec<(String, String)> = Vec::new();
    for i in 0..1500 {
        // Mostly sentence-sized; some long ones (rapidfuzz's banded and multi-word paths).
        let len = if i % 10 == 0 {
            40 + rng.below(120)
        } else {
            rng.below(14)
        };
        let reference = sentence(&mut rng, len);
        let rate = rng.pick(&[0.0, 0.05, 0.2, 0.5, 1.0]);
        let hypothesis = if rng.below(20) == 0 {
            let len = rng.below(6);
            sentence(&mut rng, len)
        } else {
            corrupt(&mut rng, &reference, rate)
        };
        let r = join(&mut rng, &reference);
        let h = join(&mut rng, &hypothesis);
        pairs.push((r, h));
    }
    // Corpora: consecutive batches of 1 to 50 pairs, including all-empty references.
    let mut corpora: Vec<Vec<usize>> = Vec::new();
    let mut start = 0;
    while start < pairs.len() {
        let end = (start + 1 + rng.below(50)).min(pairs.len());
        corpora.push((start..end).collect());
        start = end;
    }
    pairs.push((String::new(), "a b".to_string()));
    pairs.push((" ".to_string(), String::new()));
    corpora.push(vec![pairs.len() - 2, pairs.len() - 1]);

    let input = json!({"pairs": pairs, "corpora": corpora});
    let answer = reference(&python, "error_rate", &input);
    let mut tied_splits = 0;
    for (i, ((r, h), expected)) in pairs
        .iter()
        .zip(answer["pairs"].as_array().expect("pairs"))
        .enumerate()
    {
        let what = format!("pair {i}: reference {r:?}, hypothesis {h:?}");
        let w = word_counts(r, h);
        let c = char_counts(r, h);
        assert_eq!(w, counts(&expected["words"]), "words, {what}");
        assert_eq!(c, counts(&expected["chars"]), "chars, {what}");
        assert_eq!(w.rate(), float(&expected["wer"]), "{what}");
        assert_eq!(c.rate(), float(&expected["cer"]), "{what}");
        tied_splits += usize::from(w.substitutions > 0 && w.insertions > 0);
    }
    assert!(tied_splits > 50, "only {tied_splits} pairs mix S and I");
    for (batch, expected) in corpora
        .iter()
        .zip(answer["corpus"].as_array().expect("corpus"))
    {
        let these = || {
            batch
                .iter()
                .map(|&i| (pairs[i].0.as_str(), pairs[i].1.as_str()))
        };
        assert_eq!(
            error_rate::wer(these()),
            Some(float(&expected["wer"])),
            "corpus {batch:?}"
        );
        assert_eq!(
            error_rate::cer(these()),
            Some(float(&expected["cer"])),
            "corpus {batch:?}"
        );
    }
}
