//! `normalize_answer`, `exact_match` and `token_f1` against a verbatim Python transcription of
//! the official SQuAD 2.0 evaluation functions (`text_reference.py` beside this file), on random
//! strings built from articles, ASCII and non-ASCII punctuation, Unicode letters (final sigma,
//! `İ`, `ß`, CJK, combining accents), digits of several scripts and Python's whitespace set.
//!
//! The interpreter comes from `OLOPROOF_REFERENCE_PYTHON` (only the standard library is
//! needed). Without it the test is skipped with a note, unless `OLOPROOF_REQUIRE_REFERENCES=1`,
//! in which case it fails. Strings travel as hex-encoded UTF-8, one case per line; F1 values
//! must agree to the last bit (same arithmetic in the same order).

use std::path::Path;

use oloproof_metrics::text::{exact_match, normalize_answer, token_f1};
use oloproof_reference::{reference_python, run, SplitMix64};

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

#[test]
fn squad_functions_match_the_official_script() {
    let Some(python) = reference_python("SQuAD reference comparison") else {
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

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/text_reference.py");
    let output = run(&python, &script, &[], input.as_bytes());
    let stdout = String::from_utf8(output).expect("ascii from python");
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
