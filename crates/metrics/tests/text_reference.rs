//! `normalize_answer`, `exact_match` and `token_f1` against a verbatim Python transcription of
//! the official SQuAD 2.0 evaluation functions (`text_reference.py` beside this file), on random
//! strings built from articles, ASCII and non-ASCII punctuation, Unicode letters (final sigma,
//! `İ`, `ß`, CJK, combining accents), digits of several scripts and Python's whitespace set.
//!
//! The interpreter comes from `OLOPROOF_REFERENCE_PYTHON` (only the standard library is
//! needed). Without it the test is skipped with a note, unless `OLOPROOF_REQUIRE_REFERENCES=1`,
//! in which case it fails. Strings travel as hex-encoded UTF-8, one case per line; F1 values
//! must agree to the last bit (same arithmetic in the same order).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use oloproof_metrics::text::{exact_match, normalize_answer, token_f1};

const FRAGMENTS: &[&str] = &[
    "a",
    "an",
    "the",
    "The",
    "THE",
    "An",
    "A",
    "aN",
    "theory",
    "another",
    "anthem",
    "bank",
    "cat",
    "cat",
    "Paris",
    "x",
    "Élan",
    "ÉCOLE",
    "straße",
    "STRASSE",
    "ẞ",
    "ΟΔΥΣΣΕΥΣ",
    "σοφία",
    "İstanbul",
    "東京",
    "٣٤",
    "²",
    "Ⅻ",
    "42",
    "3.14",
    "_",
    "a_b",
    "_the_",
    "e\u{301}",
    "ǅ",
    "ﬁ",
    "🙂",
    " ",
    " ",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "\u{a0}",
    "\u{3000}",
    "\u{2009}",
    "\u{1c}",
    "\u{1f}",
    "\u{85}",
    "\u{200b}",
    ".",
    ",",
    "!",
    "\"",
    "'",
    "(",
    ")",
    "-",
    "—",
    "–",
    "«",
    "»",
    "¿",
    "…",
    "·",
    "@",
    "#",
    "$",
    "%",
    "&",
    "*",
    "+",
    "/",
    ":",
    ";",
    "<",
    "=",
    ">",
    "?",
    "[",
    "\\",
    "]",
    "^",
    "`",
    "{",
    "|",
    "}",
    "~",
];

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
}

fn random_answer(rng: &mut SplitMix64) -> String {
    let len = rng.below(12);
    (0..len)
        .map(|_| FRAGMENTS[rng.below(FRAGMENTS.len())])
        .collect()
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(h: &str) -> String {
    let bytes: Vec<u8> = (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).expect("hex from python"))
        .collect();
    String::from_utf8(bytes).expect("utf-8 from python")
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
                "note: skipping the SQuAD reference comparison: OLOPROOF_REFERENCE_PYTHON is not \
                 set (scripts/test sets it)"
            );
            None
        }
    }
}

#[test]
fn squad_functions_match_the_official_script() {
    let Some(python) = reference_python() else {
        return;
    };
    let mut rng = SplitMix64(0x005e_ed0f_5a0d);
    let mut cases: Vec<(String, String)> = (0..3000)
        .map(|_| (random_answer(&mut rng), random_answer(&mut rng)))
        .collect();
    // Pairs that share tokens, so F1 takes values strictly between 0 and 1.
    for _ in 0..1000 {
        let shared = random_answer(&mut rng);
        let prediction = format!("{}{shared}{}", random_answer(&mut rng), " cat");
        let reference = format!("{shared} {}", random_answer(&mut rng));
        cases.push((prediction, reference));
    }
    let input: String = cases
        .iter()
        .map(|(p, r)| format!("{} {}\n", hex(p), hex(r)))
        .collect();

    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/text_reference.py");
    let mut child = Command::new(&python)
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", python.display()));
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(input.as_bytes())
        .expect("write the cases to python");
    let output = child.wait_with_output().expect("wait for python");
    assert!(
        output.status.success(),
        "text_reference.py failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).expect("ascii from python");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), cases.len());

    let mut partial = 0;
    for ((prediction, reference), line) in cases.iter().zip(lines) {
        let fields: Vec<&str> = line.split(' ').collect();
        let [norm_prediction, norm_reference, exact, f1] = fields[..] else {
            panic!("malformed line from python: {line}");
        };
        let what = format!("prediction {prediction:?}, reference {reference:?}");
        assert_eq!(
            normalize_answer(prediction),
            unhex(norm_prediction),
            "{what}"
        );
        assert_eq!(normalize_answer(reference), unhex(norm_reference), "{what}");
        assert_eq!(exact_match(prediction, reference), exact == "1", "{what}");
        let f1: f64 = f1.parse().expect("python float repr");
        let ours = token_f1(prediction, reference);
        assert_eq!(
            ours.to_bits(),
            f1.to_bits(),
            "{what}: ours {ours}, SQuAD {f1}"
        );
        partial += usize::from(ours > 0.0 && ours < 1.0);
    }
    assert!(partial > 500, "only {partial} cases with 0 < F1 < 1");
}
