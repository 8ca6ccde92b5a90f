//! The RoBERTa family (`roberta`, `xlm-roberta`, `camembert`) on tiny randomly initialised
//! models the test writes itself: the sentence embedder's vectors against `transformers`'
//! `RobertaModel` mean-pooled (the committed fixture of `bench/classifier_reference.sh`; the
//! classifiers' logits are compared in tests/deberta.rs), positions numbered after the padding
//! index (so `max_position_embeddings - pad_token_id - 1` tokens), RoBERTa's classification
//! head, and the load errors.

use std::path::Path;

use oloproof_local::testing::{
    write_tiny_roberta_classifier, write_tiny_roberta_embedder, MAX_POS, REFERENCE_MODELS, WORDS,
};
use oloproof_local::{
    ClassifierOptions, EmbedderOptions, LocalError, PairClassifier, Pooling, SentenceEmbedder,
};
use serde_json::Value;

const NLI: &[&str] = &["contradiction", "entailment", "neutral"];

fn fixture() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tiny_classifier_reference.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn edit_config(dir: &Path, edit: impl FnOnce(&mut Value)) {
    let path = dir.join("config.json");
    let mut config: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut config);
    std::fs::write(&path, config.to_string()).unwrap();
}

fn max_diff(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| {
            assert_eq!(x.len(), y.len());
            x.iter().zip(y).map(|(p, q)| (p - q).abs())
        })
        .fold(0.0, f32::max)
}

fn pairs() -> Vec<(String, String)> {
    [
        (
            "the refund window is fourteen days",
            "refund is fourteen days",
        ),
        ("shipping takes three weeks", "shipping takes one day"),
        ("support", "day"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect()
}

#[test]
#[allow(
    clippy::print_stderr,
    reason = "the measured differences are the point of the test"
)]
fn embedder_matches_transformers_reference() {
    let fx = fixture();
    let m = REFERENCE_MODELS
        .iter()
        .find(|m| m.is_embedder())
        .expect("a reference embedder");
    let reference = &fx["models"][m.name];
    let tmp = tempfile::tempdir().unwrap();
    m.write(tmp.path()).unwrap();
    let sha = oloproof_local::sha256_file(&tmp.path().join("model.safetensors")).unwrap();
    assert_eq!(
        reference["model_safetensors_sha256"], sha,
        "{}: the tiny model's writer changed: run bench/classifier_reference.sh",
        m.name
    );
    let texts: Vec<String> = serde_json::from_value(reference["texts"].clone()).unwrap();
    let tokens: Vec<usize> = serde_json::from_value(reference["tokens"].clone()).unwrap();
    let expected: Vec<Vec<f64>> = serde_json::from_value(reference["embeddings"].clone()).unwrap();
    let expected: Vec<Vec<f32>> = expected
        .iter()
        .map(|v| v.iter().map(|&x| x as f32).collect())
        .collect();
    // The fixture covers texts of several lengths, one truncated to the last position, and a
    // literal `<pad>` (positions skip it).
    assert_eq!(reference["max_length"].as_u64(), Some(MAX_POS as u64));
    assert!(tokens.contains(&MAX_POS) && tokens.contains(&2));
    assert!(texts.iter().any(|t| t.contains("<pad>")));
    for batch_size in [1, 3, 32] {
        let model = SentenceEmbedder::load(
            tmp.path(),
            &EmbedderOptions {
                batch_size: Some(batch_size),
                ..EmbedderOptions::default()
            },
        )
        .unwrap();
        // 42 positions less RoBERTa's offset of pad_token_id + 1.
        assert_eq!(model.max_length(), MAX_POS);
        assert_eq!(model.pooling(), Pooling::Mean);
        assert!(!model.normalizes());
        let got = model.embed(&texts).unwrap();
        let worst = max_diff(&got, &expected);
        eprintln!(
            "{} (batch size {batch_size}): max |ours - transformers| = {worst:.2e}",
            m.name
        );
        assert!(
            worst <= 1e-4,
            "embeddings differ from transformers by {worst}"
        );
    }
}

#[test]
fn model_types_of_the_family_compute_the_same_function() {
    let tmp = tempfile::tempdir().unwrap();
    write_tiny_roberta_embedder(tmp.path(), 21).unwrap();
    let texts = ["the refund window", "support answers within one day", ""];
    let embed = |dir: &Path| {
        SentenceEmbedder::load(dir, &EmbedderOptions::default())
            .unwrap()
            .embed(&texts)
            .unwrap()
    };
    let roberta = embed(tmp.path());
    for t in ["xlm-roberta", "camembert"] {
        edit_config(tmp.path(), |c| c["model_type"] = t.into());
        assert_eq!(embed(tmp.path()), roberta, "{t}");
    }
    // Read as BERT, the same weights number positions from 0: other vectors.
    edit_config(tmp.path(), |c| c["model_type"] = "bert".into());
    assert!(max_diff(&embed(tmp.path()), &roberta) > 1e-3);

    let tmp = tempfile::tempdir().unwrap();
    write_tiny_roberta_classifier(tmp.path(), NLI, 22).unwrap();
    let logits = |dir: &Path| {
        PairClassifier::load(dir, &ClassifierOptions::default())
            .unwrap()
            .logits(&pairs())
            .unwrap()
    };
    let roberta = logits(tmp.path());
    for t in ["xlm-roberta", "camembert"] {
        edit_config(tmp.path(), |c| c["model_type"] = t.into());
        assert_eq!(logits(tmp.path()), roberta, "{t}");
    }
}

#[test]
fn classifier_takes_the_positions_after_the_padding_index() {
    let tmp = tempfile::tempdir().unwrap();
    write_tiny_roberta_classifier(tmp.path(), NLI, 23).unwrap();
    let m = PairClassifier::load(tmp.path(), &ClassifierOptions::default()).unwrap();
    assert_eq!(m.max_length(), MAX_POS);
    assert_eq!(m.positive_label(), Some(1));
    assert!(format!("{m:?}").contains("\"roberta\""), "{m:?}");
    // A premise past the max length: windows of 40 - 4 specials (`<s> A </s></s> B </s>`)
    // - 5 hypothesis tokens = 31 tokens, each scored at the full length without error.
    let premise: String = (0..90)
        .map(|i| WORDS[(i * 7) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ");
    let hypothesis = "the warranty covers two years".to_string();
    let windows = m.windows(&premise, &hypothesis).unwrap();
    assert_eq!(windows[0].split(' ').count(), 31);
    let scored = m.score(&[(premise.clone(), hypothesis.clone())]).unwrap();
    assert_eq!(scored[0].windows, windows.len());
    assert!(scored[0].score.is_finite());
    // Truncated logits of the long pair: the full 40 tokens.
    let logits = m.logits(&[(premise, hypothesis)]).unwrap();
    assert!(logits[0].iter().all(|x| x.is_finite()));

    for (options, what) in [
        (
            ClassifierOptions {
                max_length: Some(MAX_POS + 1),
                ..ClassifierOptions::default()
            },
            "classifier",
        ),
        (ClassifierOptions::default(), "embedder"),
    ] {
        let err = if what == "classifier" {
            PairClassifier::load(tmp.path(), &options).unwrap_err()
        } else {
            let dir = tempfile::tempdir().unwrap();
            write_tiny_roberta_embedder(dir.path(), 24).unwrap();
            SentenceEmbedder::load(
                dir.path(),
                &EmbedderOptions {
                    max_length: Some(MAX_POS + 1),
                    ..EmbedderOptions::default()
                },
            )
            .unwrap_err()
        };
        assert!(matches!(err, LocalError::Options { .. }), "{what}: {err}");
        assert!(
            err.to_string()
                .contains(&format!("this model takes 2 to {MAX_POS} tokens")),
            "{what}: {err}"
        );
    }
}

#[test]
fn load_errors_name_the_files() {
    // Too few positions for RoBERTa's offset.
    let tmp = tempfile::tempdir().unwrap();
    write_tiny_roberta_embedder(tmp.path(), 25).unwrap();
    edit_config(tmp.path(), |c| c["max_position_embeddings"] = 3.into());
    let err = SentenceEmbedder::load(tmp.path(), &EmbedderOptions::default()).unwrap_err();
    assert!(matches!(err, LocalError::BadFile { .. }), "{err}");
    assert!(
        err.to_string().contains("config.json")
            && err.to_string().contains(
                "max_position_embeddings (3) leaves 1 positions for a text after the RoBERTa family's offset of pad_token_id + 1 = 2"
            ),
        "{err}"
    );

    // A BERT head expected of RoBERTa weights (model_type bert), and RoBERTa's head missing.
    let tmp = tempfile::tempdir().unwrap();
    write_tiny_roberta_classifier(tmp.path(), NLI, 26).unwrap();
    edit_config(tmp.path(), |c| c["model_type"] = "bert".into());
    let err = PairClassifier::load(tmp.path(), &ClassifierOptions::default()).unwrap_err();
    assert!(matches!(err, LocalError::WeightsMismatch { .. }), "{err}");
    assert!(err.to_string().contains("pooler"), "{err}");

    let tmp = tempfile::tempdir().unwrap();
    oloproof_local::testing::write_tiny_classifier(tmp.path(), NLI, 27).unwrap();
    edit_config(tmp.path(), |c| {
        c["model_type"] = "roberta".into();
        c["pad_token_id"] = 1.into();
    });
    let err = PairClassifier::load(tmp.path(), &ClassifierOptions::default()).unwrap_err();
    assert!(matches!(err, LocalError::WeightsMismatch { .. }), "{err}");
    assert!(
        err.to_string().contains("model.safetensors")
            && err.to_string().contains("classifier.dense"),
        "{err}"
    );
}
