//! The sequence-pair classifier on tiny randomly initialised BERT models the test writes
//! itself (safetensors, config.json, a word-level tokenizer.json): shapes, masks and batching
//! invariance, label mapping, windowing of long premises, and load errors.

mod common;

use std::path::Path;

use oloproof_local::testing::{write_tiny_classifier, MAX_POS};
use oloproof_local::{ClassifierOptions, LocalError, PairClassifier};
use serde_json::Value;

fn write_model(dir: &Path, labels: &[&str], seed: u64) {
    write_tiny_classifier(dir, labels, seed).unwrap();
}

const NLI: &[&str] = &["contradiction", "neutral", "entailment"];

fn pairs() -> Vec<(String, String)> {
    [
        (
            "the refund window is fourteen days from delivery",
            "refund is fourteen days",
        ),
        ("shipping takes three weeks", "shipping takes one day"),
        (
            "the warranty covers two years and not water damage",
            "warranty covers water damage",
        ),
        (
            "a claim needs receipt",
            "a claim needs receipt and photo and support answers within one day",
        ),
        ("support", "day"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect()
}

fn close(a: &[f32], b: &[f32], tol: f32) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tol)
}

#[test]
fn shapes_labels_and_probabilities() {
    let tmp = tempfile::tempdir().unwrap();
    write_model(tmp.path(), NLI, 7);
    let m = PairClassifier::load(tmp.path(), &ClassifierOptions::default()).unwrap();
    assert_eq!(m.labels(), ["contradiction", "neutral", "entailment"]);
    assert_eq!(m.positive_label(), Some(2));
    assert_eq!(m.max_length(), MAX_POS);
    let logits = m.logits(&pairs()).unwrap();
    assert_eq!(logits.len(), 5);
    assert!(logits
        .iter()
        .all(|row| row.len() == 3 && row.iter().all(|x| x.is_finite())));
    // Random weights still give different logits for different pairs.
    assert!(!close(&logits[0], &logits[1], 1e-4));
    let scores = m.score(&pairs()).unwrap();
    for (row, s) in logits.iter().zip(&scores) {
        let z: f32 = row.iter().map(|x| x.exp()).sum();
        assert!((s.score - row[2].exp() / z).abs() < 1e-5, "{s:?} {row:?}");
        assert_eq!(s.windows, 1);
    }
    assert_eq!(m.identity().len(), 64);
}

#[test]
fn padding_does_not_change_logits() {
    let tmp = tempfile::tempdir().unwrap();
    write_model(tmp.path(), NLI, 11);
    let batched = PairClassifier::load(tmp.path(), &ClassifierOptions::default()).unwrap();
    let single = PairClassifier::load(
        tmp.path(),
        &ClassifierOptions {
            batch_size: Some(1),
            threads: Some(1),
            ..ClassifierOptions::default()
        },
    )
    .unwrap();
    let all = batched.logits(&pairs()).unwrap();
    let one = single.logits(&pairs()).unwrap();
    for (a, b) in all.iter().zip(&one) {
        assert!(close(a, b, 1e-5), "batched {a:?} vs alone {b:?}");
    }
    // The same pair in reverse order of a batch: same logits.
    let mut rev = pairs();
    rev.reverse();
    let back = batched.logits(&rev).unwrap();
    for (a, b) in all.iter().zip(back.iter().rev()) {
        assert!(close(a, b, 1e-5));
    }
}

#[test]
fn label_mapping() {
    let tmp = tempfile::tempdir().unwrap();
    write_model(tmp.path(), &["ENTAILMENT", "NEUTRAL", "CONTRADICTION"], 3);
    let m = PairClassifier::load(tmp.path(), &ClassifierOptions::default()).unwrap();
    assert_eq!(m.positive_label(), Some(0), "found case-insensitively");
    let m = PairClassifier::load(
        tmp.path(),
        &ClassifierOptions {
            entailment_label: Some("neutral".into()),
            ..ClassifierOptions::default()
        },
    )
    .unwrap();
    assert_eq!(m.positive_label(), Some(1));
    let err = PairClassifier::load(
        tmp.path(),
        &ClassifierOptions {
            entailment_label: Some("supported".into()),
            ..ClassifierOptions::default()
        },
    )
    .unwrap_err();
    assert!(matches!(err, LocalError::Options { .. }));
    assert!(
        err.to_string()
            .contains("ENTAILMENT, NEUTRAL, CONTRADICTION"),
        "{err}"
    );

    let tmp = tempfile::tempdir().unwrap();
    write_model(tmp.path(), &["LABEL_0", "LABEL_1"], 5);
    let err = PairClassifier::load(tmp.path(), &ClassifierOptions::default()).unwrap_err();
    assert!(err.to_string().contains("set `entailment_label`"), "{err}");
    let m = PairClassifier::load(
        tmp.path(),
        &ClassifierOptions {
            entailment_label: Some("LABEL_1".into()),
            ..ClassifierOptions::default()
        },
    )
    .unwrap();
    assert_eq!(m.positive_label(), Some(1));

    // A single-logit cross-encoder is scored by the sigmoid of its logit.
    let tmp = tempfile::tempdir().unwrap();
    write_model(tmp.path(), &["LABEL_0"], 9);
    let m = PairClassifier::load(tmp.path(), &ClassifierOptions::default()).unwrap();
    assert_eq!(m.positive_label(), None);
    let logits = m.logits(&pairs()).unwrap();
    let scores = m.score(&pairs()).unwrap();
    for (l, s) in logits.iter().zip(&scores) {
        assert_eq!(l.len(), 1);
        assert!((s.score - 1.0 / (1.0 + (-l[0]).exp())).abs() < 1e-6);
    }
}

#[test]
fn long_premises_are_windowed_and_scored_by_their_best_window() {
    let tmp = tempfile::tempdir().unwrap();
    write_model(tmp.path(), NLI, 13);
    let m = PairClassifier::load(
        tmp.path(),
        &ClassifierOptions {
            window_overlap: Some(6),
            ..ClassifierOptions::default()
        },
    )
    .unwrap();
    common::check_windowing(&m);
}

#[test]
fn mismatching_weights_and_missing_files() {
    let tmp = tempfile::tempdir().unwrap();
    write_model(tmp.path(), NLI, 1);
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("config.json")).unwrap())
            .unwrap();
    config["hidden_size"] = 32.into();
    std::fs::write(tmp.path().join("config.json"), config.to_string()).unwrap();
    let err = PairClassifier::load(tmp.path(), &ClassifierOptions::default()).unwrap_err();
    assert!(matches!(err, LocalError::WeightsMismatch { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("model.safetensors: the weights do not match"),
        "{err}"
    );

    let tmp = tempfile::tempdir().unwrap();
    write_model(tmp.path(), NLI, 1);
    std::fs::remove_file(tmp.path().join("model.safetensors")).unwrap();
    let err = PairClassifier::load(tmp.path(), &ClassifierOptions::default()).unwrap_err();
    assert!(
        err.to_string().contains("missing model.safetensors"),
        "{err}"
    );
    std::fs::remove_file(tmp.path().join("tokenizer.json")).unwrap();
    let err = PairClassifier::load(tmp.path(), &ClassifierOptions::default()).unwrap_err();
    assert!(err.to_string().contains("missing tokenizer.json"), "{err}");
}
