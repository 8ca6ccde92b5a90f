//! The sequence-pair classifier on tiny randomly initialised DeBERTa models the test writes
//! itself (safetensors as `transformers` saves them, config.json, a word-level tokenizer.json
//! with DeBERTa's special tokens): shapes, masks and batching invariance, label mapping,
//! windowing of long premises, load errors; and the numeric reference: the logits of the tiny
//! BERT, DeBERTa and RoBERTa classifiers against those `transformers` computed (the committed
//! fixture of `bench/classifier_reference.sh`).

mod common;

use std::path::Path;

use oloproof_local::testing::{
    write_tiny_classifier, write_tiny_deberta, write_tiny_deberta_classifier, DebertaStyle,
    MAX_POS, REFERENCE_MODELS, WORDS,
};
use oloproof_local::{
    ClassifierOptions, EmbedderOptions, LocalError, PairClassifier, SentenceEmbedder,
};
use serde_json::{json, Value};

const NLI: &[&str] = &["entailment", "neutral", "contradiction"];

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

fn load(dir: &Path, options: ClassifierOptions) -> PairClassifier {
    PairClassifier::load(dir, &options).unwrap()
}

fn edit_config(dir: &Path, edit: impl FnOnce(&mut Value)) {
    let path = dir.join("config.json");
    let mut config: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut config);
    std::fs::write(&path, config.to_string()).unwrap();
}

fn fixture() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tiny_classifier_reference.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
#[allow(
    clippy::print_stderr,
    reason = "the measured differences are the point of the test"
)]
fn logits_match_transformers_reference() {
    let fx = fixture();
    let names: Vec<&str> = REFERENCE_MODELS.iter().map(|m| m.name).collect();
    let mut recorded: Vec<&str> = fx["models"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    recorded.sort_unstable();
    let mut expected_names = names.clone();
    expected_names.sort_unstable();
    assert_eq!(
        recorded, expected_names,
        "the fixture is not of REFERENCE_MODELS: run bench/classifier_reference.sh"
    );
    // The embedder's vectors are compared in tests/roberta.rs.
    for m in REFERENCE_MODELS.iter().filter(|m| !m.is_embedder()) {
        let tmp = tempfile::tempdir().unwrap();
        m.write(tmp.path()).unwrap();
        let reference = &fx["models"][m.name];
        let sha = oloproof_local::sha256_file(&tmp.path().join("model.safetensors")).unwrap();
        assert_eq!(
            reference["model_safetensors_sha256"], sha,
            "{}: the tiny model's writer changed: run bench/classifier_reference.sh",
            m.name
        );
        let pairs: Vec<(String, String)> =
            serde_json::from_value(reference["pairs"].clone()).unwrap();
        let expected: Vec<Vec<f64>> = serde_json::from_value(reference["logits"].clone()).unwrap();
        assert_eq!(pairs.len(), expected.len());
        for batch_size in [1, 16] {
            let model = load(
                tmp.path(),
                ClassifierOptions {
                    batch_size: Some(batch_size),
                    entailment_label: (m.labels.len() > 1).then(|| m.labels[0].to_string()),
                    ..ClassifierOptions::default()
                },
            );
            assert_eq!(model.labels(), m.labels);
            assert_eq!(reference["labels"], json!(m.labels));
            let got = model.logits(&pairs).unwrap();
            let mut worst = 0f64;
            for (g, e) in got.iter().zip(&expected) {
                assert_eq!(g.len(), e.len());
                for (a, b) in g.iter().zip(e) {
                    worst = worst.max((f64::from(*a) - b).abs());
                }
            }
            eprintln!(
                "{} (batch size {batch_size}): max |ours - transformers| = {worst:.2e}",
                m.name
            );
            assert!(
                worst <= 1e-4,
                "{}: logits differ from transformers by {worst}",
                m.name
            );
        }
    }
}

#[test]
fn shapes_labels_and_probabilities() {
    let tmp = tempfile::tempdir().unwrap();
    write_tiny_deberta_classifier(tmp.path(), NLI, 7).unwrap();
    let m = load(tmp.path(), ClassifierOptions::default());
    assert_eq!(m.labels(), NLI);
    assert_eq!(m.positive_label(), Some(0));
    assert_eq!(m.max_length(), MAX_POS);
    assert!(format!("{m:?}").contains("deberta-v2"), "{m:?}");
    let logits = m.logits(&pairs()).unwrap();
    assert_eq!(logits.len(), 5);
    assert!(logits
        .iter()
        .all(|row| row.len() == 3 && row.iter().all(|x| x.is_finite())));
    assert!(!close(&logits[0], &logits[1], 1e-4));
    let scores = m.score(&pairs()).unwrap();
    for (row, s) in logits.iter().zip(&scores) {
        let z: f32 = row.iter().map(|x| x.exp()).sum();
        assert!((s.score - row[0].exp() / z).abs() < 1e-5, "{s:?} {row:?}");
        assert_eq!((s.windows, s.best_window), (1, 0));
    }
    assert_eq!(m.identity().len(), 64);
    // Another seed: other weights, another identity.
    let other = tempfile::tempdir().unwrap();
    write_tiny_deberta_classifier(other.path(), NLI, 8).unwrap();
    assert_ne!(
        load(other.path(), ClassifierOptions::default()).identity(),
        m.identity()
    );
}

#[test]
fn padding_and_batch_neighbours_do_not_change_logits() {
    for style in [
        DebertaStyle::V3,
        DebertaStyle::Separate,
        DebertaStyle::V3Base,
    ] {
        let tmp = tempfile::tempdir().unwrap();
        write_tiny_deberta(tmp.path(), NLI, 11, style).unwrap();
        let batched = load(tmp.path(), ClassifierOptions::default());
        let single = load(
            tmp.path(),
            ClassifierOptions {
                batch_size: Some(1),
                threads: Some(1),
                ..ClassifierOptions::default()
            },
        );
        let all = batched.logits(&pairs()).unwrap();
        let one = single.logits(&pairs()).unwrap();
        for (a, b) in all.iter().zip(&one) {
            assert!(close(a, b, 1e-5), "{style:?}: batched {a:?} vs alone {b:?}");
        }
        // Reversed order: each pair meets other neighbours and other padding.
        let mut rev = pairs();
        rev.reverse();
        let back = batched.logits(&rev).unwrap();
        for (a, b) in all.iter().zip(back.iter().rev()) {
            assert!(close(a, b, 1e-5), "{style:?}");
        }
        // A short pair next to a pair of the full length.
        let long = (
            (0..30)
                .map(|i| WORDS[i % WORDS.len()])
                .collect::<Vec<_>>()
                .join(" "),
            "support answers within one day".to_string(),
        );
        let with_long = batched.logits(&[pairs()[4].clone(), long]).unwrap();
        assert!(close(&with_long[0], &one[4], 1e-5), "{style:?}");
    }
}

#[test]
fn label_mapping() {
    let tmp = tempfile::tempdir().unwrap();
    write_tiny_deberta_classifier(tmp.path(), &["CONTRADICTION", "NEUTRAL", "ENTAILMENT"], 3)
        .unwrap();
    let m = load(tmp.path(), ClassifierOptions::default());
    assert_eq!(m.positive_label(), Some(2), "found case-insensitively");
    let m = load(
        tmp.path(),
        ClassifierOptions {
            entailment_label: Some("neutral".into()),
            ..ClassifierOptions::default()
        },
    );
    assert_eq!(m.positive_label(), Some(1));
    let logits = m.logits(&pairs()).unwrap();
    for (row, s) in logits.iter().zip(m.score(&pairs()).unwrap()) {
        let z: f32 = row.iter().map(|x| x.exp()).sum();
        assert!((s.score - row[1].exp() / z).abs() < 1e-5);
    }
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
            .contains("CONTRADICTION, NEUTRAL, ENTAILMENT"),
        "{err}"
    );

    // A binary NLI model without an `entailment` label needs the option.
    let tmp = tempfile::tempdir().unwrap();
    write_tiny_deberta_classifier(tmp.path(), &["not_entailed", "entailed"], 5).unwrap();
    let err = PairClassifier::load(tmp.path(), &ClassifierOptions::default()).unwrap_err();
    assert!(err.to_string().contains("set `entailment_label`"), "{err}");
    let m = load(
        tmp.path(),
        ClassifierOptions {
            entailment_label: Some("entailed".into()),
            ..ClassifierOptions::default()
        },
    );
    assert_eq!(m.positive_label(), Some(1));

    // A single-logit cross-encoder is scored by the sigmoid of its logit.
    let tmp = tempfile::tempdir().unwrap();
    write_tiny_deberta_classifier(tmp.path(), &["LABEL_0"], 9).unwrap();
    let m = load(tmp.path(), ClassifierOptions::default());
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
    write_tiny_deberta_classifier(tmp.path(), NLI, 13).unwrap();
    let m = load(
        tmp.path(),
        ClassifierOptions {
            window_overlap: Some(6),
            ..ClassifierOptions::default()
        },
    );
    common::check_windowing(&m);
}

#[test]
fn configs_with_omitted_defaults_and_old_spellings_load_alike() {
    let tmp = tempfile::tempdir().unwrap();
    write_tiny_deberta_classifier(tmp.path(), NLI, 17).unwrap();
    let before = load(tmp.path(), ClassifierOptions::default())
        .logits(&pairs())
        .unwrap();
    edit_config(tmp.path(), |c| {
        let c = c.as_object_mut().unwrap();
        // transformers' defaults: pooler_hidden_size = hidden_size, dropout 0, gelu.
        for key in [
            "pooler_hidden_size",
            "pooler_dropout",
            "pooler_hidden_act",
            "label2id",
        ] {
            c.remove(key);
        }
        c.insert("pos_att_type".into(), json!("P2C | c2p"));
        c.insert("norm_rel_ebd".into(), json!("layer_norm"));
        c.insert("torch_dtype".into(), json!("float32"));
        c.insert("transformers_version".into(), json!("4.13.0"));
        c.insert("_name_or_path".into(), json!("microsoft/deberta-v3-base"));
    });
    let after = load(tmp.path(), ClassifierOptions::default())
        .logits(&pairs())
        .unwrap();
    for (a, b) in before.iter().zip(&after) {
        assert!(close(a, b, 0.0), "{a:?} vs {b:?}");
    }
}

#[test]
fn mismatching_weights_name_the_files() {
    let check = |edit: &dyn Fn(&mut Value), tensor: &str| {
        let tmp = tempfile::tempdir().unwrap();
        write_tiny_deberta_classifier(tmp.path(), NLI, 1).unwrap();
        edit_config(tmp.path(), edit);
        let err = PairClassifier::load(tmp.path(), &ClassifierOptions::default()).unwrap_err();
        assert!(matches!(err, LocalError::WeightsMismatch { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains("model.safetensors: the weights do not match")
                && text.contains("config.json")
                && text.contains(tensor),
            "{text}"
        );
    };
    check(
        &|c| {
            c["hidden_size"] = 32.into();
            c["pooler_hidden_size"] = 32.into();
        },
        "deberta.embeddings",
    );
    check(&|c| c["vocab_size"] = 50.into(), "word_embeddings");
    check(&|c| c["position_buckets"] = 32.into(), "rel_embeddings");
    check(&|c| c["share_att_key"] = false.into(), "pos_key_proj");
    check(
        &|c| c["type_vocab_size"] = 2.into(),
        "token_type_embeddings",
    );
    check(
        &|c| c["position_biased_input"] = true.into(),
        "position_embeddings",
    );

    // A BERT checkpoint under a DeBERTa config.
    let tmp = tempfile::tempdir().unwrap();
    write_tiny_classifier(tmp.path(), NLI, 1).unwrap();
    edit_config(tmp.path(), |c| c["model_type"] = "deberta-v2".into());
    let err = PairClassifier::load(tmp.path(), &ClassifierOptions::default()).unwrap_err();
    assert!(matches!(err, LocalError::WeightsMismatch { .. }), "{err}");
    assert!(err.to_string().contains("deberta."), "{err}");
}

#[test]
fn unsupported_model_types_and_features_are_named() {
    for model_type in ["deberta", "distilbert", "mpnet", "electra"] {
        let tmp = tempfile::tempdir().unwrap();
        write_tiny_deberta_classifier(tmp.path(), NLI, 1).unwrap();
        edit_config(tmp.path(), |c| c["model_type"] = model_type.into());
        let err = PairClassifier::load(tmp.path(), &ClassifierOptions::default()).unwrap_err();
        assert!(matches!(err, LocalError::BadFile { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains("config.json")
                && text.contains(&format!("model_type `{model_type}` is not supported"))
                && text.contains("bert, roberta, xlm-roberta, camembert")
                && text.contains("deberta-v2"),
            "{text}"
        );
    }
    for (key, value, message) in [
        ("conv_kernel_size", json!(3), "conv_kernel_size"),
        ("pos_att_type", json!(["p2p"]), "pos_att_type `p2p`"),
        ("hidden_act", json!("swish"), "hidden_act"),
        ("num_attention_heads", json!(3), "num_attention_heads"),
        (
            "pooler_hidden_size",
            json!(32),
            "pooler_hidden_size (32) must equal hidden_size (16)",
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        write_tiny_deberta_classifier(tmp.path(), NLI, 1).unwrap();
        edit_config(tmp.path(), |c| c[key] = value.clone());
        let err = PairClassifier::load(tmp.path(), &ClassifierOptions::default()).unwrap_err();
        assert!(matches!(err, LocalError::BadFile { .. }), "{key}: {err}");
        assert!(err.to_string().contains(message), "{err}");
    }
    // A DeBERTa folder is not a sentence embedder (BERT only).
    let tmp = tempfile::tempdir().unwrap();
    write_tiny_deberta_classifier(tmp.path(), NLI, 1).unwrap();
    let err = SentenceEmbedder::load(tmp.path(), &EmbedderOptions::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("model_type `deberta-v2` is not supported for a sentence embedder"),
        "{err}"
    );
}
