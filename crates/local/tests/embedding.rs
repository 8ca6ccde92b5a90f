//! The sentence embedder against sentence-transformers' vectors (the committed fixture written
//! by `bench/embedding_reference.sh`), and its load errors.

mod common;

use oloproof_local::{EmbedderOptions, LocalError, Pooling, SentenceEmbedder};
use oloproof_metrics::rag::claims::cosine;
use serde_json::Value;

fn fixture() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/minilm_reference.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn minilm_matches_sentence_transformers() {
    let Some(dir) = common::minilm_dir() else {
        return;
    };
    let fx = fixture();
    assert_eq!(fx["model_safetensors_sha256"], common::MINILM_SHA256);
    let model = SentenceEmbedder::load(&dir, &EmbedderOptions::default()).unwrap();
    assert_eq!(model.dimension(), 384);
    assert_eq!(model.pooling(), Pooling::Mean);
    assert!(model.normalizes());
    assert_eq!(
        model.max_length() as u64,
        fx["max_seq_length"].as_u64().unwrap()
    );
    let items = fx["items"].as_array().unwrap();
    assert!(items.len() >= 30);
    // The fixture covers what it must: empty, past the max length, non-ASCII, emoji.
    assert!(items.iter().any(|i| i["text"] == ""));
    assert!(items.iter().any(|i| i["tokens"].as_u64().unwrap() > 256));
    assert!(items
        .iter()
        .any(|i| i["text"].as_str().unwrap().contains('😍')));
    let texts: Vec<String> = items
        .iter()
        .map(|i| i["text"].as_str().unwrap().to_string())
        .collect();
    let ours = model.embed(&texts).unwrap();
    let mut worst_cos = 1.0f64;
    let mut worst_diff = 0.0f64;
    for (item, v) in items.iter().zip(&ours) {
        let reference: Vec<f32> = item["vector"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        assert_eq!(v.len(), reference.len());
        let c = cosine(v, &reference);
        let d = v
            .iter()
            .zip(&reference)
            .map(|(a, b)| f64::from((a - b).abs()))
            .fold(0.0, f64::max);
        assert!(c >= 0.9999, "cosine {c} for {:?}", item["text"]);
        assert!(d <= 1e-4, "max abs diff {d} for {:?}", item["text"]);
        worst_cos = worst_cos.min(c);
        worst_diff = worst_diff.max(d);
    }
    // Batching does not change a vector: each text alone, and in a batch of 3.
    let small = SentenceEmbedder::load(
        &dir,
        &EmbedderOptions {
            threads: Some(1),
            batch_size: Some(3),
            ..EmbedderOptions::default()
        },
    )
    .unwrap();
    let again = small.embed(&texts).unwrap();
    for (i, text) in texts.iter().enumerate().step_by(5) {
        let alone = small.embed(std::slice::from_ref(text)).unwrap();
        for other in [&again[i], &alone[0]] {
            let d = ours[i]
                .iter()
                .zip(other)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(d <= 1e-5, "batching changed {text:?} by {d}");
        }
    }
    assert!(worst_cos >= 0.9999 && worst_diff <= 1e-4);
    #[allow(
        clippy::print_stderr,
        reason = "the measured agreement, for the record"
    )]
    {
        eprintln!(
            "{} texts: worst cosine {worst_cos:.9}, max abs diff {worst_diff:.2e}",
            texts.len()
        );
    }
    assert!(model.embed(&Vec::<String>::new()).unwrap().is_empty());
}

#[test]
fn max_length_option_is_checked() {
    let Some(dir) = common::minilm_dir() else {
        return;
    };
    let err = SentenceEmbedder::load(
        &dir,
        &EmbedderOptions {
            max_length: Some(1000),
            ..EmbedderOptions::default()
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("2 to 512"), "{err}");
    let short = SentenceEmbedder::load(
        &dir,
        &EmbedderOptions {
            max_length: Some(16),
            ..EmbedderOptions::default()
        },
    )
    .unwrap();
    let long = "word ".repeat(100);
    let a = short.embed(std::slice::from_ref(&long)).unwrap();
    let b = short.embed(&["word ".repeat(20)]).unwrap();
    // Both are cut at 16 tokens: the same tokens, the same vector.
    let d = a[0]
        .iter()
        .zip(&b[0])
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f32, f32::max);
    assert!(d < 1e-6, "{d}");
}

#[test]
fn load_errors_name_the_file() {
    let err = SentenceEmbedder::load(
        std::path::Path::new("/nonexistent/model"),
        &EmbedderOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(err, LocalError::MissingPath { .. }));
    assert!(
        err.to_string()
            .starts_with("/nonexistent/model: no such file or folder"),
        "{err}"
    );

    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("config.json"), r#"{"model_type": "bert"}"#).unwrap();
    let err = SentenceEmbedder::load(tmp.path(), &EmbedderOptions::default()).unwrap_err();
    assert!(err.to_string().contains("not a BERT config.json"), "{err}");

    let Some(dir) = common::minilm_dir() else {
        return;
    };
    // A folder without tokenizer.json.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(dir.join("config.json"), tmp.path().join("config.json")).unwrap();
    let err = SentenceEmbedder::load(tmp.path(), &EmbedderOptions::default()).unwrap_err();
    assert!(
        matches!(err, LocalError::MissingFile { ref file, .. } if file == "tokenizer.json"),
        "{err}"
    );
    assert!(err.to_string().contains("missing tokenizer.json"), "{err}");
    // Weights whose shapes do not match config.json.
    std::fs::copy(
        dir.join("tokenizer.json"),
        tmp.path().join("tokenizer.json"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        dir.join("model.safetensors"),
        tmp.path().join("model.safetensors"),
    )
    .unwrap();
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
    config["intermediate_size"] = 1000.into();
    std::fs::write(tmp.path().join("config.json"), config.to_string()).unwrap();
    let err = SentenceEmbedder::load(tmp.path(), &EmbedderOptions::default()).unwrap_err();
    assert!(matches!(err, LocalError::WeightsMismatch { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("model.safetensors: the weights do not match"),
        "{msg}"
    );
    assert!(msg.contains("1000") && msg.contains("1536"), "{msg}");
}
