//! Ragas' non-LLM metrics ([`oloproof_metrics::ragas`]) against the real `ragas==0.4.3` from
//! PyPI (`ragas_reference.py` beside this file; pins in `scripts/requirements-ragas.txt`), on
//! seeded random texts: several hundred cases per metric and per option, built from words
//! that share stems, punctuation that the 13a tokenizer splits (`.`, `,`, `-` next to digits,
//! `&amp;`), sentence breaks `". "`, and non-ASCII letters. Values must be equal to the last bit.
//!
//! One documented difference is asserted instead: Ragas raises (and its `evaluate()` records
//! NaN) for `NonLLMContextRecall` with no retrieved context (`max()` of an empty list); ours is
//! 0. Without references both are undefined (ours `None`).

use std::path::Path;

use oloproof_metrics::ragas::distance::DistanceMeasure;
use oloproof_metrics::ragas::rouge::{RougeMode, RougeType};
use oloproof_metrics::ragas::{bleu, context, exact_match, porter, rouge, string_presence};
use oloproof_reference::{reference_python, run_lines, SplitMix64};
use serde_json::{json, Value};

const WORDS: &[&str] = &[
    "the",
    "cat",
    "cats",
    "sat",
    "sitting",
    "on",
    "mat",
    "mats",
    "refund",
    "refunds",
    "refunded",
    "within",
    "14",
    "days",
    "day",
    "of",
    "delivery",
    "delivered",
    "policy",
    "policies",
    "generalization",
    "relational",
    "running",
    "runs",
    "happy",
    "happiness",
    "Paris",
    "paris",
    "capital",
    "France",
    "é",
    "élan",
    "東京",
    "3.14",
    "1,000",
    "5-6",
    "&amp;",
    "(x)",
    "it's",
    "don't",
    "a",
    "an",
    "is",
    "was",
    "caresses",
    "ponies",
    "hopping",
    "agreed",
    "controlling",
    "electricity",
    "sky",
    "skies",
    "dying",
    "news",
    "Berlin",
    "connection",
];
const SEPARATORS: &[&str] = &[" ", " ", " ", " ", ", ", ". ", ". ", "\n", "  ", "-", "; "];

fn text(rng: &mut SplitMix64, max_words: usize) -> String {
    let n = rng.below(max_words + 1);
    let mut out = String::new();
    for i in 0..n {
        if i > 0 {
            out.push_str(rng.pick::<&str>(SEPARATORS));
        }
        out.push_str(rng.pick::<&str>(WORDS));
    }
    if n > 0 && rng.below(3) == 0 {
        out.push('.');
    }
    out
}

/// A variant of `base`: words dropped, swapped or replaced, so matches are frequent.
fn variant(rng: &mut SplitMix64, base: &str) -> String {
    let mut words: Vec<String> = base.split(' ').map(str::to_string).collect();
    for _ in 0..rng.below(3) {
        if words.is_empty() {
            break;
        }
        let i = rng.below(words.len());
        match rng.below(3) {
            0 => {
                words.remove(i);
            }
            1 => words[i] = (*rng.pick(WORDS)).to_string(),
            _ => {
                let j = rng.below(words.len());
                words.swap(i, j);
            }
        }
    }
    words.join(" ")
}

fn pair(rng: &mut SplitMix64) -> (String, String) {
    let reference = text(rng, 14);
    let response = if rng.below(4) == 0 {
        text(rng, 14)
    } else {
        variant(rng, &reference)
    };
    (reference, response)
}

fn contexts(rng: &mut SplitMix64, pool: &[String], n: usize) -> Vec<String> {
    (0..n)
        .map(|_| {
            if !pool.is_empty() && rng.below(2) == 0 {
                let base = rng.pick(pool).clone();
                variant(rng, &base)
            } else {
                text(rng, 6)
            }
        })
        .collect()
}

fn value(answer: &Value) -> Option<f64> {
    answer["value"].as_f64()
}

#[test]
fn ragas_non_llm_metrics_match_ragas() {
    let Some(python) = reference_python("ragas reference comparison") else {
        return;
    };
    let mut rng = SplitMix64(17);
    let mut cases: Vec<Value> = Vec::new();
    let mut ours: Vec<Option<f64>> = Vec::new();
    for i in 0..400 {
        let (reference, response) = pair(&mut rng);
        let measure = DistanceMeasure::ALL[i % 4];
        cases.push(json!({"metric": "string_similarity", "reference": reference, "response": response, "measure": measure.name()}));
        ours.push(Some(measure.similarity(&reference, &response)));
        cases.push(json!({"metric": "bleu", "reference": reference, "response": response}));
        ours.push(Some(bleu::bleu_score(&reference, &response)));
        let (kind, mode) = (
            [RougeType::Rouge1, RougeType::RougeL][i % 2],
            [RougeMode::Precision, RougeMode::Recall, RougeMode::Fmeasure][(i / 2) % 3],
        );
        cases.push(json!({"metric": "rouge", "reference": reference, "response": response, "rouge_type": kind.name(), "mode": mode.name()}));
        ours.push(Some(rouge::rouge_score(&reference, &response, kind, mode)));
        // Exact match and presence need hits: sometimes the same text, or a slice of it.
        let probe = match i % 3 {
            0 => response.clone(),
            1 => reference.split(' ').take(2).collect::<Vec<_>>().join(" "),
            _ => reference.clone(),
        };
        cases.push(json!({"metric": "exact_match", "reference": probe, "response": response}));
        ours.push(Some(exact_match(&probe, &response)));
        cases.push(json!({"metric": "string_presence", "reference": probe, "response": response}));
        ours.push(Some(string_presence(&probe, &response)));

        let n = 1 + rng.below(3);
        let refs = contexts(&mut rng, &[], n);
        let n = 1 + rng.below(5);
        let retrieved = contexts(&mut rng, &refs, n);
        let threshold = [0.5, 0.3, 0.7, 0.5][i % 4];
        cases.push(json!({"metric": "context_precision", "retrieved": retrieved, "reference_contexts": refs, "measure": measure.name(), "threshold": threshold}));
        ours.push(context::precision_with_reference(
            &retrieved, &refs, measure, threshold,
        ));
        cases.push(json!({"metric": "context_recall", "retrieved": retrieved, "reference_contexts": refs, "measure": measure.name(), "threshold": threshold}));
        ours.push(context::recall(&retrieved, &refs, measure, threshold));
    }
    let answers = run_lines(&python, Path::new(&script()), &cases);
    let mut compared = 0;
    for ((case, answer), mine) in cases.iter().zip(&answers).zip(&ours) {
        assert_eq!(
            value(answer).map(f64::to_bits),
            mine.map(f64::to_bits),
            "{case} → ragas {answer}, ours {mine:?}"
        );
        compared += 1;
    }
    assert_eq!(compared, 2800);
}

#[test]
fn empty_contexts_differ_only_where_ragas_fails() {
    let Some(python) = reference_python("ragas reference comparison") else {
        return;
    };
    let cases = vec![
        json!({"metric": "context_recall", "retrieved": [], "reference_contexts": ["a"], "measure": "levenshtein", "threshold": 0.5}),
        json!({"metric": "context_precision", "retrieved": [], "reference_contexts": ["a"], "measure": "levenshtein", "threshold": 0.5}),
        json!({"metric": "context_precision", "retrieved": ["a"], "reference_contexts": [], "measure": "levenshtein", "threshold": 0.5}),
        json!({"metric": "context_recall", "retrieved": ["a"], "reference_contexts": [], "measure": "levenshtein", "threshold": 0.5}),
    ];
    let answers = run_lines(&python, Path::new(&script()), &cases);
    // Ragas raises on max([]) (evaluate() records NaN): nothing retrieved recalls nothing here.
    assert!(
        answers[0]["error"].as_str().unwrap().contains("max()"),
        "{}",
        answers[0]
    );
    assert_eq!(
        context::recall::<&str, &str>(&[], &["a"], DistanceMeasure::Levenshtein, 0.5),
        Some(0.0)
    );
    // Precision of nothing retrieved is 0 on both sides.
    assert_eq!(value(&answers[1]), Some(0.0));
    assert_eq!(
        context::precision_with_reference::<&str, &str>(
            &[],
            &["a"],
            DistanceMeasure::Levenshtein,
            0.5
        ),
        Some(0.0)
    );
    // No reference: Ragas fails or gives NaN; ours is undefined (the evaluator excludes the case).
    assert_eq!(value(&answers[2]), None);
    assert_eq!(value(&answers[3]), None);
}

#[test]
fn porter_stemmer_matches_nltk() {
    let Some(python) = reference_python("ragas reference comparison") else {
        return;
    };
    let mut rng = SplitMix64(5);
    let mut words: Vec<String> = WORDS
        .iter()
        .map(|w| w.to_lowercase())
        .filter(|w| w.bytes().all(|b| b.is_ascii_lowercase()))
        .collect();
    // Random tokens over a vowel-heavy alphabet hit every step's suffixes.
    const SUFFIXES: &[&str] = &[
        "ational", "tional", "enci", "anci", "izer", "bli", "alli", "entli", "eli", "ousli",
        "ization", "ation", "ator", "alism", "iveness", "fulness", "ousness", "aliti", "iviti",
        "biliti", "fulli", "logi", "icate", "ative", "alize", "iciti", "ical", "ful", "ness", "al",
        "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "sion", "tion",
        "ou", "ism", "ate", "iti", "ous", "ive", "ize", "e", "ll", "sses", "ies", "ss", "s", "eed",
        "ed", "ing", "at", "bl", "iz", "y", "ied", "",
    ];
    const LETTERS: &[u8] = b"aeiouybcdlmnrstzwx";
    for _ in 0..3000 {
        let n = 1 + rng.below(6);
        let mut w: String = (0..n).map(|_| *rng.pick(LETTERS) as char).collect();
        w.push_str(rng.pick::<&str>(SUFFIXES));
        words.push(w);
    }
    let cases: Vec<Value> = words
        .iter()
        .map(|w| json!({"metric": "stem", "word": w}))
        .collect();
    let answers = run_lines(&python, Path::new(&script()), &cases);
    for (w, a) in words.iter().zip(&answers) {
        assert_eq!(porter::stem(w), a["value"].as_str().unwrap(), "{w}");
    }
}

fn script() -> String {
    format!("{}/tests/ragas_reference.py", env!("CARGO_MANIFEST_DIR"))
}
