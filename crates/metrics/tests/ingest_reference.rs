//! Group A (ingestion) metrics against their reference implementations, on randomized inputs
//! with fixed seeds, through `ingest_reference.py` beside this file:
//! - CER / WER and their S/D/I/H counts against jiwer 4.0 (exact);
//! - TEDS and TEDS-S against PubTabNet's `metric.py` with apted and lxml (to 1e-9);
//! - LSH band/row choice against datasketch's `_optimal_param` (exact), MinHash Jaccard
//!   estimates against exact Jaccard and datasketch's estimates (statistical);
//! - NFC/NFKC agreement against `unicodedata`; normalised Levenshtein similarity against
//!   rapidfuzz.
//!
//! The interpreter comes from `OLOPROOF_REFERENCE_PYTHON` (scripts/test sets it to the venv
//! with `scripts/requirements-test.txt`). Without it each test is skipped with a note, unless
//! `OLOPROOF_REQUIRE_REFERENCES=1`, in which case it fails.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use oloproof_metrics::ingest::error_rate::{self, char_counts, word_counts, ErrorCounts};
use oloproof_reference::{run_json, SplitMix64};
use serde_json::{json, Value};

fn reference_python() -> Option<PathBuf> {
    oloproof_reference::reference_python("ingestion reference comparison")
}

/// Runs `ingest_reference.py MODE` on `input`, returning its JSON answer.
fn reference(python: &Path, mode: &str, input: &Value) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ingest_reference.py");
    run_json(python, &script, &[OsStr::new(mode)], input)
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
        s.push_str(rng.pick::<&str>(SPACES));
    }
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            s.push_str(rng.pick::<&str>(SPACES));
        }
        s.push_str(w);
    }
    if rng.below(5) == 0 {
        s.push_str(rng.pick::<&str>(SPACES));
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
            chars[i] = *rng.pick(&['0', 'r', 'n', 'm', 'é']);
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
        let rate = *rng.pick(&[0.0, 0.05, 0.2, 0.5, 1.0]);
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

const CELL_TEXT: &[&str] = &[
    "", "a", "ab", "abc", "1.5", "x y", "Total", "é", "&amp;", "3 &lt; 4", "n=12", "δ", "—",
];
const INLINE: &[&str] = &["b", "i", "sup", "sub"];

fn random_cell(rng: &mut SplitMix64) -> String {
    let mut s = rng.pick(CELL_TEXT).to_string();
    if rng.below(4) == 0 {
        let tag = rng.pick(INLINE);
        let inner = rng.pick(&CELL_TEXT[1..]);
        let tail = rng.pick(CELL_TEXT);
        s.push_str(&format!("<{tag}>{inner}</{tag}>{tail}"));
    }
    s
}

fn random_table(rng: &mut SplitMix64) -> Vec<Vec<(String, String)>> {
    let rows = 1 + rng.below(5);
    let cols = 1 + rng.below(4);
    (0..rows)
        .map(|_| {
            (0..cols)
                .map(|_| {
                    let attrs = match rng.below(8) {
                        0 => format!(" colspan=\"{}\"", 2 + rng.below(2)),
                        1 => format!(" rowspan=\"{}\"", 2 + rng.below(2)),
                        _ => String::new(),
                    };
                    (attrs, random_cell(rng))
                })
                .collect()
        })
        .collect()
}

fn perturb(rng: &mut SplitMix64, mut t: Vec<Vec<(String, String)>>) -> Vec<Vec<(String, String)>> {
    for _ in 0..rng.below(4) {
        let r = rng.below(t.len());
        match rng.below(6) {
            0 if t.len() > 1 => {
                t.remove(r);
            }
            1 if t[r].len() > 1 => {
                let c = rng.below(t[r].len());
                t[r].remove(c);
            }
            2 => {
                let c = rng.below(t[r].len());
                t[r][c].1 = random_cell(rng);
            }
            3 => {
                let c = rng.below(t[r].len());
                t[r][c].0 = String::from(" colspan=\"2\"");
            }
            4 => {
                let row = t[r].clone();
                t.insert(r, row);
            }
            _ => {
                let c = rng.below(t[r].len());
                let cell = (String::new(), random_cell(rng));
                t[r].insert(c, cell);
            }
        }
    }
    t
}

fn table_html(rng: &mut SplitMix64, t: &[Vec<(String, String)>]) -> String {
    let rows: Vec<String> = t
        .iter()
        .map(|row| {
            let cells: String = row
                .iter()
                .map(|(attrs, text)| format!("<td{attrs}>{text}</td>"))
                .collect();
            format!("<tr>{cells}</tr>")
        })
        .collect();
    let body = if rng.below(2) == 0 && rows.len() > 1 {
        format!(
            "<thead>{}</thead><tbody>{}</tbody>",
            rows[0],
            rows[1..].concat()
        )
    } else {
        rows.concat()
    };
    format!("<html><body><table>{body}</table></body></html>")
}

#[test]
fn teds_matches_pubtabnet() {
    let Some(python) = reference_python() else {
        return;
    };
    let mut rng = SplitMix64(0x7ed5);
    let mut pairs: Vec<(String, String)> = Vec::new();
    for _ in 0..400 {
        let truth = random_table(&mut rng);
        let pred = if rng.below(3) == 0 {
            random_table(&mut rng)
        } else {
            perturb(&mut rng, truth.clone())
        };
        pairs.push((table_html(&mut rng, &pred), table_html(&mut rng, &truth)));
    }
    let answer = reference(&python, "teds", &json!({"pairs": pairs}));
    let mut partial = 0;
    for ((p, t), expected) in pairs.iter().zip(answer.as_array().expect("scores")) {
        let full = oloproof_metrics::ingest::teds::teds(p, t).expect("valid table");
        let structure = oloproof_metrics::ingest::teds::teds_structure(p, t).expect("valid table");
        let (ef, es) = (float(&expected[0]), float(&expected[1]));
        assert!(
            (full - ef).abs() < 1e-9,
            "TEDS ours {full}, teds.py {ef}\npred {p}\ntrue {t}"
        );
        assert!(
            (structure - es).abs() < 1e-9,
            "TEDS-S ours {structure}, teds.py {es}\npred {p}\ntrue {t}"
        );
        partial += usize::from(full > 0.0 && full < 1.0 && full != structure);
    }
    assert!(
        partial > 100,
        "only {partial} tables with partial content credit"
    );
}

#[test]
fn lsh_bands_match_datasketch() {
    let Some(python) = reference_python() else {
        return;
    };
    let mut params: Vec<(f64, usize)> = Vec::new();
    for num_perm in [1usize, 2, 7, 16, 32, 64, 100, 128, 256] {
        for t in [0.05, 0.1, 0.3, 0.5, 0.65, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99] {
            params.push((t, num_perm));
        }
    }
    let answer = reference(&python, "lsh_params", &json!({ "params": params }));
    for ((t, k), expected) in params.iter().zip(answer.as_array().expect("params")) {
        let ours = oloproof_metrics::ingest::minhash::optimal_bands(*t, *k).expect("valid");
        let theirs = (
            expected[0].as_u64().expect("b") as usize,
            expected[1].as_u64().expect("r") as usize,
        );
        assert_eq!(ours, theirs, "threshold {t}, num_perm {k}");
    }
}

#[test]
fn minhash_estimates_match_exact_jaccard_like_datasketch() {
    use oloproof_metrics::ingest::minhash::{estimate_jaccard, MinHasher};
    let Some(python) = reference_python() else {
        return;
    };
    let num_perm = 128;
    let mut rng = SplitMix64(0x6d68);
    let mut pairs: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for _ in 0..300 {
        let universe = 20 + rng.below(400);
        let a: Vec<String> = (0..universe)
            .filter(|_| rng.below(3) > 0)
            .map(|i| format!("sh{i}"))
            .collect();
        let b: Vec<String> = (0..universe)
            .filter(|_| rng.below(3) > 0)
            .map(|i| format!("sh{i}"))
            .collect();
        pairs.push((a, b));
    }
    let answer = reference(
        &python,
        "minhash",
        &json!({"pairs": pairs, "num_perm": num_perm}),
    );
    let hasher = MinHasher::new(num_perm, 1);
    let (mut ours_sq, mut theirs_sq, mut ours_bias) = (0.0, 0.0, 0.0);
    for ((a, b), expected) in pairs.iter().zip(answer.as_array().expect("estimates")) {
        let exact = float(&expected[0]);
        let theirs = float(&expected[1]);
        let sa = hasher.signature(a.iter().map(|s| s.as_bytes()));
        let sb = hasher.signature(b.iter().map(|s| s.as_bytes()));
        let ours = estimate_jaccard(&sa, &sb).expect("same length");
        let sd = (exact * (1.0 - exact) / num_perm as f64).sqrt();
        assert!(
            (ours - exact).abs() <= 5.0 * sd + 1e-12,
            "estimate {ours} vs exact {exact} (5 sd = {})",
            5.0 * sd
        );
        ours_sq += (ours - exact).powi(2);
        theirs_sq += (theirs - exact).powi(2);
        ours_bias += ours - exact;
    }
    let n = pairs.len() as f64;
    let (ours_rmse, theirs_rmse) = ((ours_sq / n).sqrt(), (theirs_sq / n).sqrt());
    // Same estimator, same variance: the errors must be of the same size as datasketch's.
    assert!(
        ours_rmse < 1.3 * theirs_rmse && theirs_rmse < 1.3 * ours_rmse,
        "RMSE ours {ours_rmse}, datasketch {theirs_rmse}"
    );
    assert!((ours_bias / n).abs() < 0.01, "mean bias {}", ours_bias / n);
}

#[test]
fn nfc_nfkc_agreement_matches_unicodedata() {
    let Some(python) = reference_python() else {
        return;
    };
    const PIECES: &[&str] = &[
        "Mars",
        "café",
        "cafe\u{301}",
        "ﬁ",
        "²",
        "Ⅻ",
        "½",
        "\u{200d}",
        "\u{200b}",
        "Å",
        "Å",
        "ｆｕｌｌ",
        "ﾊﾝ",
        "가",
        "\u{1100}\u{1161}",
        "µ",
        "µ",
        "ſ",
        "ǅ",
        "\u{a0}",
        "…",
        "™",
        "㎏",
        " ",
        "x",
        "東京",
        "é",
    ];
    let mut rng = SplitMix64(0x4e4643);
    let texts: Vec<String> = (0..800)
        .map(|_| {
            (0..rng.below(5))
                .map(|_| *rng.pick(PIECES))
                .collect::<String>()
        })
        .collect();
    let answer = reference(&python, "unicode", &json!({ "texts": texts }));
    let mut disagree = 0;
    for (t, expected) in texts.iter().zip(answer.as_array().expect("bools")) {
        let ours = oloproof_metrics::ingest::document::nfc_nfkc_agree(t);
        assert_eq!(Some(ours), expected.as_bool(), "{t:?}");
        disagree += usize::from(!ours);
    }
    assert!(disagree > 200, "only {disagree} texts differ");
}

#[test]
fn title_similarity_matches_rapidfuzz() {
    let Some(python) = reference_python() else {
        return;
    };
    let mut rng = SplitMix64(0x7177);
    let mut pairs: Vec<(String, String)> = Vec::new();
    for _ in 0..1000 {
        let words = sentence(&mut rng, 5);
        let a = join(&mut rng, &words);
        let b = if rng.below(2) == 0 {
            let noisy = corrupt(&mut rng, &words, 0.3);
            join(&mut rng, &noisy)
        } else {
            String::new()
        };
        pairs.push((a, b));
    }
    pairs.push((String::new(), String::new()));
    let answer = reference(&python, "similarity", &json!({ "pairs": pairs }));
    for ((a, b), expected) in pairs.iter().zip(answer.as_array().expect("floats")) {
        let ours = oloproof_metrics::ingest::error_rate::normalized_levenshtein_similarity(a, b);
        let theirs = float(expected);
        assert!(
            (ours - theirs).abs() < 1e-12,
            "{a:?} {b:?}: {ours} vs {theirs}"
        );
    }
}
