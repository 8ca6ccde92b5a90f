//! Single-sequence classification (`SequenceClassifier`) on the tiny models the test support
//! writes: logits against `transformers` where the committed pair fixture pins them, the
//! probabilities (softmax, sigmoid for multi-label and single-logit models), batching,
//! windowing of long texts, ONNX graphs against `onnx.reference`, and load errors.
//!
//! The `transformers` reference: `bench/classifier_reference.sh` recorded the logits of
//! `AutoModelForSequenceClassification` on *pairs* (no PyTorch here to record single texts).
//! For the RoBERTa family (segment ids all 0) and DeBERTa-v3 (`type_vocab_size: 0`: segment
//! ids unused), the single text `A </s></s> B` (`A [SEP] B`) tokenises to exactly the ids of
//! the pair `(A, B)` — the separators are the tokenizer's special tokens — so the model sees
//! the same input and its logits must be the fixture's. BERT's second segment has segment id 1,
//! which no single text reproduces: its single-text path is the same network as RoBERTa's
//! (checked here for shapes, batching and windows) and its pairs match the fixture in
//! tests/classifier.rs.

mod common;

use std::path::Path;

use oloproof_local::testing::{
    set_problem_type, write_tiny_classifier, TinyArchitecture, MAX_POS, REFERENCE_MODELS, WORDS,
};
use oloproof_local::{Activation, LocalError, SequenceClassifier, SequenceOptions};
use serde_json::{json, Value};

fn fixture() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tiny_classifier_reference.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn texts() -> Vec<String> {
    [
        "the refund window is fourteen days from delivery",
        "shipping takes three weeks",
        "support",
        "the warranty covers two years and not water damage",
        "zebra quokka",
        "",
    ]
    .iter()
    .map(|t| t.to_string())
    .collect()
}

fn load(dir: &Path, options: SequenceOptions) -> SequenceClassifier {
    SequenceClassifier::load(dir, &options).unwrap()
}

#[track_caller]
fn assert_close(ours: &[f32], reference: &[f32], tol: f32, what: &str) {
    assert_eq!(ours.len(), reference.len(), "{what}");
    for (a, b) in ours.iter().zip(reference) {
        assert!(
            (a - b).abs() <= tol,
            "{what}: ours {ours:?}, expected {reference:?}"
        );
    }
}

fn softmax(z: &[f64]) -> Vec<f64> {
    let max = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = z.iter().map(|x| (x - max).exp()).sum();
    z.iter().map(|x| (x - max).exp() / sum).collect()
}

fn sigmoid(z: &[f64]) -> Vec<f64> {
    z.iter().map(|x| 1.0 / (1.0 + (-x).exp())).collect()
}

/// Single texts whose ids are those of the fixture's pairs get the fixture's logits, and the
/// probabilities `transformers`' pipeline would compute from them.
#[test]
#[allow(
    clippy::print_stderr,
    reason = "the measured differences are the point of the test"
)]
fn single_texts_match_transformers() {
    let fx = fixture();
    let mut checked = Vec::new();
    for m in REFERENCE_MODELS {
        let separator = match m.architecture {
            TinyArchitecture::Roberta => "</s></s>",
            TinyArchitecture::Deberta(style)
                if style != oloproof_local::testing::DebertaStyle::Separate =>
            {
                "[SEP]"
            }
            // BERT and the DeBERTa variant with two token types: a single text cannot carry
            // the second segment's ids (see the module docs). The embedder has no labels.
            _ => continue,
        };
        let tmp = tempfile::tempdir().unwrap();
        m.write(tmp.path()).unwrap();
        let reference = &fx["models"][m.name];
        let sha = oloproof_local::sha256_file(&tmp.path().join("model.safetensors")).unwrap();
        assert_eq!(
            reference["model_safetensors_sha256"], sha,
            "{}: the tiny model's writer changed: run bench/classifier_reference.sh",
            m.name
        );
        let config: Value =
            serde_json::from_str(&std::fs::read_to_string(tmp.path().join("config.json")).unwrap())
                .unwrap();
        let pairs: Vec<(String, String)> =
            serde_json::from_value(reference["pairs"].clone()).unwrap();
        let expected: Vec<Vec<f64>> = serde_json::from_value(reference["logits"].clone()).unwrap();
        let singles: Vec<String> = pairs
            .iter()
            .map(|(a, b)| format!("{a} {separator} {b}"))
            .collect();
        // The same ids as the pair; segment ids all 0, which the model ignores or shares.
        let tok = tokenizers::Tokenizer::from_file(tmp.path().join("tokenizer.json")).unwrap();
        for ((a, b), single) in pairs.iter().zip(&singles) {
            let pair = tok.encode((a.as_str(), b.as_str()), true).unwrap();
            let one = tok.encode(single.as_str(), true).unwrap();
            assert_eq!(pair.get_ids(), one.get_ids(), "{}: {single}", m.name);
            assert!(one.get_type_ids().iter().all(|&t| t == 0));
            assert!(
                pair.get_type_ids().iter().all(|&t| t == 0) || config["type_vocab_size"] == 0,
                "{}: the pair's segment ids matter",
                m.name
            );
        }
        for batch_size in [1, 16] {
            let model = load(
                tmp.path(),
                SequenceOptions {
                    batch_size: Some(batch_size),
                    ..SequenceOptions::default()
                },
            );
            assert_eq!(model.labels(), m.labels);
            let single_logit = m.labels.len() == 1;
            assert_eq!(
                model.activation(),
                if single_logit {
                    Activation::Sigmoid
                } else {
                    Activation::Softmax
                }
            );
            let got = model.logits(&singles).unwrap();
            let scores = model.classify(&singles).unwrap();
            let mut worst = 0f64;
            for ((g, e), s) in got.iter().zip(&expected).zip(&scores) {
                assert_eq!(g.len(), e.len());
                for (a, b) in g.iter().zip(e) {
                    worst = worst.max((f64::from(*a) - b).abs());
                }
                // Every input fits: one window, the pipeline's probabilities.
                assert_eq!(s.windows.len(), 1, "{}", m.name);
                let p = if single_logit { sigmoid(e) } else { softmax(e) };
                for (a, b) in s.windows[0].iter().zip(&p) {
                    assert!((f64::from(*a) - b).abs() <= 1e-4, "{}: {s:?} {p:?}", m.name);
                }
            }
            eprintln!(
                "{} single texts (batch size {batch_size}): max |ours - transformers| = {worst:.2e}",
                m.name
            );
            assert!(worst <= 1e-4, "{}: logits differ by {worst}", m.name);
        }
        checked.push(m.name);
    }
    assert_eq!(
        checked,
        [
            "deberta-v3-nli",
            "deberta-v3-cross-encoder",
            "deberta-v3-base-positions",
            "roberta-nli",
            "roberta-cross-encoder"
        ]
    );
}

/// A BERT text classifier: labels, softmax probabilities of its logits, one window per short
/// text, the same logits whatever the batch, and an identity of its own kind.
#[test]
fn bert_text_classifier() {
    let tmp = tempfile::tempdir().unwrap();
    write_tiny_classifier(tmp.path(), &["non_toxic", "toxic"], 17).unwrap();
    let m = load(tmp.path(), SequenceOptions::default());
    assert_eq!(m.labels(), ["non_toxic", "toxic"]);
    assert_eq!(m.activation(), Activation::Softmax);
    assert_eq!(m.max_length(), MAX_POS);
    assert_eq!(m.identity().len(), 64);
    let pair = oloproof_local::PairClassifier::load(
        tmp.path(),
        &oloproof_local::ClassifierOptions {
            entailment_label: Some("toxic".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_ne!(
        m.identity(),
        pair.identity(),
        "one identity per kind of model"
    );
    let logits = m.logits(&texts()).unwrap();
    assert!(logits
        .iter()
        .all(|r| r.len() == 2 && r.iter().all(|x| x.is_finite())));
    assert!(
        logits.windows(2).all(|w| (w[0][1] - w[1][1]).abs() > 1e-6),
        "random weights still tell texts apart: {logits:?}"
    );
    let scores = m.classify(&texts()).unwrap();
    for (row, s) in logits.iter().zip(&scores) {
        let z: Vec<f64> = row.iter().map(|x| f64::from(*x)).collect();
        let p: Vec<f32> = softmax(&z).iter().map(|x| *x as f32).collect();
        assert_eq!(s.windows.len(), 1);
        assert_close(&s.windows[0], &p, 1e-6, "softmax");
        assert!((s.windows[0].iter().sum::<f32>() - 1.0).abs() < 1e-5);
        assert_eq!(s.max(1), Some((s.windows[0][1], 0)));
    }
    // Batching and order change nothing.
    let one = load(
        tmp.path(),
        SequenceOptions {
            batch_size: Some(1),
            threads: Some(1),
            ..SequenceOptions::default()
        },
    );
    let mut reversed = texts();
    reversed.reverse();
    let back = one.logits(&reversed).unwrap();
    for (a, b) in logits.iter().zip(back.iter().rev()) {
        assert_close(a, b, 1e-5, "batch of one, reversed");
    }
    // A single text is not a pair with an empty second text (the pair adds a [SEP]).
    let as_pair = pair.logits(&[(texts()[0].clone(), String::new())]).unwrap();
    assert!((as_pair[0][1] - logits[0][1]).abs() > 1e-6);
}

/// `problem_type: multi_label_classification`: one sigmoid per label, as the pipeline; a
/// single-label model is a sigmoid too; `regression` is refused.
#[test]
fn multi_label_models_use_the_sigmoid() {
    let tmp = tempfile::tempdir().unwrap();
    let labels = ["toxic", "obscene", "insult"];
    write_tiny_classifier(tmp.path(), &labels, 23).unwrap();
    let softmax_model = load(tmp.path(), SequenceOptions::default());
    assert_eq!(softmax_model.activation(), Activation::Softmax);
    let plain_identity = softmax_model.identity().to_string();
    set_problem_type(tmp.path(), "multi_label_classification").unwrap();
    let m = load(tmp.path(), SequenceOptions::default());
    assert_eq!(m.activation(), Activation::Sigmoid);
    assert_ne!(
        m.identity(),
        plain_identity,
        "config.json is part of the identity"
    );
    let logits = m.logits(&texts()).unwrap();
    let scores = m.classify(&texts()).unwrap();
    let mut sums = Vec::new();
    for (row, s) in logits.iter().zip(&scores) {
        let z: Vec<f64> = row.iter().map(|x| f64::from(*x)).collect();
        let p: Vec<f32> = sigmoid(&z).iter().map(|x| *x as f32).collect();
        assert_close(&s.windows[0], &p, 1e-6, "sigmoid");
        sums.push(s.windows[0].iter().sum::<f32>());
    }
    assert!(
        sums.iter().any(|s| (s - 1.0).abs() > 1e-3),
        "independent labels do not sum to 1: {sums:?}"
    );

    let tmp = tempfile::tempdir().unwrap();
    write_tiny_classifier(tmp.path(), &["refusal"], 29).unwrap();
    let m = load(tmp.path(), SequenceOptions::default());
    assert_eq!(m.activation(), Activation::Sigmoid);
    let logits = m.logits(&texts()).unwrap();
    let scores = m.classify(&texts()).unwrap();
    for (row, s) in logits.iter().zip(&scores) {
        assert_close(
            &s.windows[0],
            &[1.0 / (1.0 + (-row[0]).exp())],
            1e-6,
            "single logit",
        );
    }

    set_problem_type(tmp.path(), "regression").unwrap();
    let err = SequenceClassifier::load(tmp.path(), &SequenceOptions::default()).unwrap_err();
    assert!(matches!(err, LocalError::BadFile { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("config.json") && text.contains("regression"),
        "{text}"
    );
}

/// A text longer than the model takes: overlapping windows of whole tokens covering it, each
/// classified as if alone; `max`/`min` pick across them; a short text is one window.
#[test]
fn long_texts_are_windowed() {
    let tmp = tempfile::tempdir().unwrap();
    write_tiny_classifier(tmp.path(), &["non_toxic", "toxic"], 31).unwrap();
    let m = load(
        tmp.path(),
        SequenceOptions {
            window_overlap: Some(6),
            ..SequenceOptions::default()
        },
    );
    let text: String = (0..90)
        .map(|i| WORDS[(i * 7) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ");
    // 40 positions less [CLS] and [SEP]: 38 tokens a window, stepping by 32.
    let windows = m.windows(&text).unwrap();
    assert_eq!(windows.len(), 3, "{windows:?}");
    let words: Vec<Vec<&str>> = windows.iter().map(|w| w.split(' ').collect()).collect();
    assert_eq!(words.iter().map(Vec::len).collect::<Vec<_>>(), [38, 38, 26]);
    let all: Vec<&str> = text.split(' ').collect();
    assert_eq!(words[0][..], all[..38]);
    assert_eq!(words[1][..], all[32..70]);
    assert_eq!(words[2][..], all[64..]);
    let scores = m.classify(std::slice::from_ref(&text)).unwrap().remove(0);
    assert_eq!(scores.windows.len(), 3);
    let alone = m.classify(&windows).unwrap();
    for (w, a) in scores.windows.iter().zip(&alone) {
        assert_close(w, &a.windows[0], 1e-6, "a window scores as if alone");
    }
    let toxic: Vec<f32> = scores.windows.iter().map(|w| w[1]).collect();
    let (hi, at) = scores.max(1).unwrap();
    let (lo, at_lo) = scores.min(1).unwrap();
    assert_eq!(hi, toxic.iter().copied().fold(f32::MIN, f32::max));
    assert_eq!(lo, toxic.iter().copied().fold(f32::MAX, f32::min));
    assert_eq!((toxic[at], toxic[at_lo]), (hi, lo));
    assert!(hi > lo, "the windows do not all score alike: {toxic:?}");
    // Without windows the text is truncated to its first 38 tokens: the first window.
    let truncated = m.logits(std::slice::from_ref(&text)).unwrap();
    let first = m.logits(&windows[..1]).unwrap();
    assert_close(&truncated[0], &first[0], 1e-6, "truncation keeps the start");
    assert_eq!(m.windows("support answers").unwrap(), ["support answers"]);
}

/// The reference interpreter and ONNX Runtime's library, or `None` after a note.
#[cfg(feature = "onnx")]
fn onnx_references() -> Option<std::path::PathBuf> {
    let what = "ONNX single-sequence reference comparison";
    let python = oloproof_reference::reference_python(what)?;
    common::model_path("ORT_DYLIB_PATH", &format!("the {what}"))?;
    Some(python)
}

/// An ONNX export (`model.onnx`, no safetensors) classifies single texts: logits equal
/// `onnx.reference.ReferenceEvaluator`'s on the single-text token rows (`[CLS] A [SEP]`),
/// probabilities their softmax.
#[cfg(feature = "onnx")]
#[test]
fn onnx_exports_classify_single_texts() {
    let Some(python) = onnx_references() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let tokenizer = tmp.path().join("tokenizer.json");
    std::fs::write(
        &tokenizer,
        oloproof_local::testing::tokenizer_json().to_string(),
    )
    .unwrap();
    let tok = tokenizers::Tokenizer::from_file(&tokenizer).unwrap();
    let texts = texts();
    let rows: Vec<Value> = texts
        .iter()
        .map(|t| {
            let e = tok.encode(t.as_str(), true).unwrap();
            assert_eq!(e.get_ids().first(), Some(&2), "[CLS] first");
            assert_eq!(e.get_ids().last(), Some(&3), "[SEP] last");
            json!({"ids": e.get_ids(), "type_ids": e.get_type_ids()})
        })
        .collect();
    let request = json!({
        "labels": ["non_toxic", "toxic", "insult"], "token_type_ids": true, "seed": 41,
        "kind": "classifier", "vocab": WORDS.len() + 4, "rows": rows,
    });
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/write_tiny_onnx.py");
    oloproof_reference::run(
        &python,
        &script,
        &[tmp.path().as_os_str()],
        request.to_string().as_bytes(),
    );
    let reference: Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("reference_logits.json")).unwrap())
            .unwrap();
    let reference: Vec<Vec<f64>> = serde_json::from_value(reference["logits"].clone()).unwrap();
    for batch_size in [1, 16] {
        let m = load(
            tmp.path(),
            SequenceOptions {
                batch_size: Some(batch_size),
                ..SequenceOptions::default()
            },
        );
        assert_eq!(m.labels(), ["non_toxic", "toxic", "insult"]);
        let logits = m.logits(&texts).unwrap();
        let scores = m.classify(&texts).unwrap();
        for ((ours, r), s) in logits.iter().zip(&reference).zip(&scores) {
            let r32: Vec<f32> = r.iter().map(|x| *x as f32).collect();
            assert_close(ours, &r32, 1e-5, "ONNX logits");
            let p: Vec<f32> = softmax(r).iter().map(|x| *x as f32).collect();
            assert_close(&s.windows[0], &p, 1e-5, "ONNX probabilities");
        }
    }
}

/// The labels are read from `config.json` alone (what a configuration check needs); errors
/// name the folder or file.
#[test]
fn labels_without_weights_and_load_errors() {
    let tmp = tempfile::tempdir().unwrap();
    write_tiny_classifier(tmp.path(), &["safe", "pii"], 37).unwrap();
    std::fs::remove_file(tmp.path().join("model.safetensors")).unwrap();
    assert_eq!(
        SequenceClassifier::read_labels(tmp.path()).unwrap(),
        ["safe", "pii"]
    );
    let err = SequenceClassifier::load(tmp.path(), &SequenceOptions::default()).unwrap_err();
    assert!(err.to_string().contains("model.safetensors"), "{err}");
    let missing = tmp.path().join("nowhere");
    let err = SequenceClassifier::read_labels(&missing).unwrap_err();
    assert!(matches!(err, LocalError::MissingPath { .. }), "{err:?}");
    assert!(err.to_string().contains("sequence classifier"), "{err}");
    std::fs::write(tmp.path().join("config.json"), "{not json").unwrap();
    let err = SequenceClassifier::read_labels(tmp.path()).unwrap_err();
    assert!(
        err.to_string().contains("config.json") && err.to_string().contains("not valid JSON"),
        "{err}"
    );
}
