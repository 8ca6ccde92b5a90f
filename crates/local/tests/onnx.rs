//! ONNX sequence-pair classifiers through ONNX Runtime, on tiny graphs the tests write
//! themselves: `support/write_tiny_onnx.py` builds a small but real classifier with
//! `onnx.helper` (embeddings, a mask-weighted mean, a tanh layer, a classifier → `logits`) and
//! computes reference logits with `onnx.reference.ReferenceEvaluator`, one pair at a time,
//! unpadded. Our logits must equal them to 1e-5 whatever the batch around a pair.
//!
//! Needs `OLOPROOF_REFERENCE_PYTHON` (with `onnx`) and `ORT_DYLIB_PATH` (the `onnxruntime`
//! wheel's library), both set by `scripts/test`; without them these tests are skipped with a
//! note, unless `OLOPROOF_REQUIRE_REFERENCES=1`. The errors for a missing runtime or model file
//! need neither.

#![cfg(feature = "onnx")]

mod common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use oloproof_local::{ClassifierOptions, LocalError, OnnxClassifierRaw, PairClassifier};
use serde_json::{json, Value};

const NLI: &[&str] = &["contradiction", "entailment", "neutral"];
/// Tokens per pair (the tiny graph has 64 positions; no pair here is cut).
const MAX_LENGTH: usize = 64;

fn pairs() -> Vec<(String, String)> {
    [
        (
            "the refund window is fourteen days from delivery",
            "refund is fourteen days",
        ),
        ("shipping takes three weeks", "shipping takes one day"),
        ("support", "day"),
        (
            "the warranty covers two years and not water damage",
            "warranty covers water damage",
        ),
        (
            "a claim needs receipt",
            "a claim needs receipt and photo and support answers within one day",
        ),
        ("support", "support"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect()
}

/// The reference interpreter and ONNX Runtime's library, or `None` after a note.
fn references(what: &str) -> Option<PathBuf> {
    let python = oloproof_reference::reference_python(what)?;
    common::model_path("ORT_DYLIB_PATH", &format!("the {what}"))?;
    Some(python)
}

/// Token ids and type ids of `pairs` by the tiny tokenizer, as Hugging Face `tokenizers`
/// gives them (special tokens included).
fn token_rows(tokenizer: &Path, pairs: &[(String, String)]) -> Vec<Value> {
    let tok = tokenizers::Tokenizer::from_file(tokenizer).unwrap();
    pairs
        .iter()
        .map(|(a, b)| {
            let e = tok.encode((a.as_str(), b.as_str()), true).unwrap();
            assert!(e.get_ids().len() <= MAX_LENGTH);
            json!({"ids": e.get_ids(), "type_ids": e.get_type_ids()})
        })
        .collect()
}

/// Writes the tiny classifier (`model.onnx`, `config.json`, `tokenizer.json`) into `dir` and
/// returns the reference logits of `pairs`.
fn write_model(
    python: &Path,
    dir: &Path,
    kind: &str,
    token_type_ids: bool,
    seed: u64,
    pairs: &[(String, String)],
) -> Vec<Vec<f32>> {
    let tokenizer = dir.join("tokenizer.json");
    std::fs::write(
        &tokenizer,
        oloproof_local::testing::tokenizer_json().to_string(),
    )
    .unwrap();
    let request = json!({
        "labels": NLI, "token_type_ids": token_type_ids, "seed": seed, "kind": kind,
        "vocab": oloproof_local::testing::WORDS.len() + 4,
        "rows": token_rows(&tokenizer, pairs),
    });
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/write_tiny_onnx.py");
    oloproof_reference::run(
        python,
        &script,
        &[dir.as_os_str()],
        request.to_string().as_bytes(),
    );
    let reference: Value =
        serde_json::from_slice(&std::fs::read(dir.join("reference_logits.json")).unwrap()).unwrap();
    serde_json::from_value(reference["logits"].clone()).unwrap()
}

#[track_caller]
fn assert_close(ours: &[Vec<f32>], reference: &[Vec<f32>], what: &str) {
    assert_eq!(ours.len(), reference.len(), "{what}: rows");
    for (i, (a, b)) in ours.iter().zip(reference).enumerate() {
        assert_eq!(a.len(), b.len(), "{what}: row {i} labels");
        for (x, y) in a.iter().zip(b) {
            assert!(
                (x - y).abs() <= 1e-5,
                "{what}: row {i}: ours {a:?}, reference {b:?}"
            );
        }
    }
}

/// Our logits for `pairs` in one batch, one pair at a time, and in other batches (reversed,
/// two halves) all equal the reference.
fn check_batches(model: &OnnxClassifierRaw, pairs: &[(String, String)], reference: &[Vec<f32>]) {
    assert_close(
        &model.logits(pairs, MAX_LENGTH).unwrap(),
        reference,
        "one batch",
    );
    for (i, pair) in pairs.iter().enumerate() {
        let alone = model
            .logits(std::slice::from_ref(pair), MAX_LENGTH)
            .unwrap();
        assert_close(&alone, &reference[i..=i], &format!("pair {i} alone"));
    }
    let reversed: Vec<_> = pairs.iter().rev().cloned().collect();
    let mut ours = model.logits(&reversed, MAX_LENGTH).unwrap();
    ours.reverse();
    assert_close(&ours, reference, "reversed batch");
    let (a, b) = pairs.split_at(pairs.len() / 2);
    let mut ours = model.logits(a, MAX_LENGTH).unwrap();
    ours.extend(model.logits(b, MAX_LENGTH).unwrap());
    assert_close(&ours, reference, "two batches");
}

#[test]
fn logits_equal_the_reference_whatever_the_batch() {
    let Some(python) = references("ONNX classifier reference comparison") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let pairs = pairs();
    let reference = write_model(&python, tmp.path(), "classifier", true, 7, &pairs);
    // The pairs differ in length, so one batch pads most of them.
    let lengths: Vec<usize> = token_rows(&tmp.path().join("tokenizer.json"), &pairs)
        .iter()
        .map(|r| r["ids"].as_array().unwrap().len())
        .collect();
    assert!(lengths.iter().min() < lengths.iter().max(), "{lengths:?}");
    // The reference depends on the pair (so a row mix-up or padding mistake shows).
    assert!(reference
        .windows(2)
        .all(|w| w[0].iter().zip(&w[1]).any(|(x, y)| (x - y).abs() > 1e-3)));

    let model = OnnxClassifierRaw::load(tmp.path(), None).unwrap();
    assert_eq!(model.declared_labels(), Some(NLI.len()));
    assert_eq!(model.model_file(), tmp.path().join("model.onnx"));
    check_batches(&model, &pairs, &reference);
    assert!(model.logits(&[], MAX_LENGTH).unwrap().is_empty());

    // One intra-op thread gives the same logits; the same file loads again in the process.
    let single = OnnxClassifierRaw::load(tmp.path(), Some(1)).unwrap();
    check_batches(&single, &pairs, &reference);
}

#[test]
fn graph_without_token_type_ids_and_two_models_at_once() {
    let Some(python) = references("ONNX classifier reference comparison") else {
        return;
    };
    let pairs = pairs();
    let with_types = tempfile::tempdir().unwrap();
    let without_types = tempfile::tempdir().unwrap();
    let ref_with = write_model(&python, with_types.path(), "classifier", true, 11, &pairs);
    let ref_without = write_model(
        &python,
        without_types.path(),
        "classifier",
        false,
        11,
        &pairs,
    );
    // The same weights with and without the type embedding give other logits: the type ids
    // are fed and matter.
    assert!(ref_with
        .iter()
        .zip(&ref_without)
        .any(|(a, b)| a.iter().zip(b).any(|(x, y)| (x - y).abs() > 1e-3)));

    let a = OnnxClassifierRaw::load(with_types.path(), Some(1)).unwrap();
    let b = OnnxClassifierRaw::load(without_types.path(), Some(1)).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| check_batches(&a, &pairs, &ref_with));
        s.spawn(|| check_batches(&b, &pairs, &ref_without));
    });
}

/// `PairClassifier` runs a folder with `model.onnx` and no safetensors through ONNX Runtime:
/// labels from `config.json`, the reference logits, probabilities, windows, and an identity
/// that follows the graph's content.
#[test]
fn pair_classifier_runs_onnx_folders() {
    let Some(python) = references("ONNX classifier reference comparison") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let pairs = pairs();
    let reference = write_model(&python, tmp.path(), "classifier", true, 5, &pairs);
    let options = ClassifierOptions {
        threads: Some(1),
        batch_size: Some(4),
        ..ClassifierOptions::default()
    };
    let model = PairClassifier::load(tmp.path(), &options).unwrap();
    assert!(format!("{model:?}").contains("onnx"), "{model:?}");
    assert_eq!(model.labels(), NLI);
    assert_eq!(model.positive_label(), Some(1));
    assert_eq!(model.max_length(), MAX_LENGTH);
    assert_close(&model.logits(&pairs).unwrap(), &reference, "PairClassifier");
    let scores = model.score(&pairs).unwrap();
    for (s, row) in scores.iter().zip(&reference) {
        let z: f32 = row.iter().map(|x| x.exp()).sum();
        assert!((s.score - row[1].exp() / z).abs() < 1e-5, "{s:?} {row:?}");
        assert_eq!(s.windows, 1);
    }
    // A premise past the 64 positions is cut into windows; the score is their best.
    let long = ["the refund window is fourteen days from delivery"; 12].join(" ");
    let windowed = model
        .score(&[(long.clone(), "refund is fourteen days".to_string())])
        .unwrap();
    assert!(windowed[0].windows > 1, "{windowed:?}");
    let windows = model.windows(&long, "refund is fourteen days").unwrap();
    let each: Vec<(String, String)> = windows
        .iter()
        .map(|w| (w.clone(), "refund is fourteen days".to_string()))
        .collect();
    let best = model
        .score(&each)
        .unwrap()
        .iter()
        .map(|s| s.score)
        .fold(f32::NEG_INFINITY, f32::max);
    assert!((windowed[0].score - best).abs() < 1e-6);

    // Other weights, other identity; the same weights, the same identity.
    let other = tempfile::tempdir().unwrap();
    write_model(&python, other.path(), "classifier", true, 6, &pairs);
    let again = PairClassifier::load(tmp.path(), &options).unwrap();
    let different = PairClassifier::load(other.path(), &options).unwrap();
    assert_eq!(model.identity(), again.identity());
    assert_ne!(model.identity(), different.identity());

    // config.json naming two labels for a graph with three columns is refused.
    let config_path = tmp.path().join("config.json");
    let mut config: Value = serde_json::from_slice(&std::fs::read(&config_path).unwrap()).unwrap();
    config["id2label"] = json!({"0": "not_entailment", "1": "entailment"});
    std::fs::write(&config_path, config.to_string()).unwrap();
    let err = PairClassifier::load(tmp.path(), &options).unwrap_err();
    assert!(
        matches!(err, LocalError::BadFile { ref path, .. } if path.ends_with("model.onnx")),
        "{err:?}"
    );
    assert!(err.to_string().contains("3 columns"), "{err}");
}

#[test]
fn onnx_subfolder_layout() {
    let Some(python) = references("ONNX classifier reference comparison") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let pairs = pairs();
    let reference = write_model(&python, tmp.path(), "classifier", true, 3, &pairs);
    std::fs::create_dir(tmp.path().join("onnx")).unwrap();
    std::fs::rename(
        tmp.path().join("model.onnx"),
        tmp.path().join("onnx/model.onnx"),
    )
    .unwrap();
    let model = OnnxClassifierRaw::load(tmp.path(), Some(1)).unwrap();
    assert_eq!(model.model_file(), tmp.path().join("onnx/model.onnx"));
    assert_close(
        &model.logits(&pairs, MAX_LENGTH).unwrap(),
        &reference,
        "onnx/model.onnx",
    );
}

#[test]
fn a_graph_that_is_not_a_sequence_classifier_is_refused() {
    let Some(python) = references("ONNX classifier reference comparison") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    write_model(&python, tmp.path(), "not_a_classifier", true, 0, &[]);
    let err = OnnxClassifierRaw::load(tmp.path(), Some(1)).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, LocalError::BadFile { ref path, .. } if path.ends_with("model.onnx")));
    for needle in ["pixel_values", "input_ids", "attention_mask", "logits"] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
}

#[test]
fn a_file_that_is_not_onnx_is_refused() {
    if common::model_path("ORT_DYLIB_PATH", "the ONNX Runtime error tests").is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("model.onnx"), b"version https://git-lfs\n").unwrap();
    let err = OnnxClassifierRaw::load(tmp.path(), Some(1)).unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, LocalError::BadFile { ref path, .. } if *path == tmp.path().join("model.onnx")),
        "{err:?}"
    );
    assert!(text.contains("expected an ONNX model"), "{text}");
    assert!(text.contains("input_ids"), "{text}");
}

#[test]
fn missing_folder_model_file_or_threads_are_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let err = OnnxClassifierRaw::load(&tmp.path().join("none"), None).unwrap_err();
    assert!(matches!(err, LocalError::MissingPath { .. }), "{err:?}");
    assert!(err.to_string().contains("model.onnx"), "{err}");

    std::fs::write(
        tmp.path().join("tokenizer.json"),
        oloproof_local::testing::tokenizer_json().to_string(),
    )
    .unwrap();
    let err = OnnxClassifierRaw::load(tmp.path(), None).unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, LocalError::MissingFile { ref file, .. } if file == "model.onnx"),
        "{err:?}"
    );
    assert!(text.contains("onnx/model.onnx"), "{text}");
    assert!(text.contains(&tmp.path().display().to_string()), "{text}");

    std::fs::write(tmp.path().join("model.onnx"), b"").unwrap();
    let err = OnnxClassifierRaw::load(tmp.path(), Some(0)).unwrap_err();
    assert!(matches!(err, LocalError::Options { .. }), "{err:?}");
    assert!(err.to_string().contains("threads"), "{err}");

    let file = tmp.path().join("model.onnx");
    let err = OnnxClassifierRaw::load(&file, None).unwrap_err();
    assert!(matches!(err, LocalError::BadFile { .. }), "{err:?}");
    assert!(err.to_string().contains("found a file"), "{err}");
}

/// The runtime errors, each in a fresh test process (ONNX Runtime loads once per process, and
/// the environment variable must not change under the other tests).
#[test]
fn runtime_errors_say_which_variable_and_how_to_get_the_library() {
    let tmp = tempfile::tempdir().unwrap();
    let not_a_library = tmp.path().join("libonnxruntime.so");
    std::fs::write(&not_a_library, b"not a shared library").unwrap();
    let mut cases: Vec<(&str, Option<&OsStr>)> = vec![
        ("unset", None),
        ("empty", Some(OsStr::new(""))),
        (
            "missing",
            Some(OsStr::new("/nonexistent/onnxruntime/libonnxruntime.so")),
        ),
        ("not_a_library", Some(not_a_library.as_os_str())),
    ];
    let real = std::env::var_os("ORT_DYLIB_PATH").filter(|v| !v.is_empty());
    if real.is_some() {
        cases.push(("unset_then_set", None));
    }
    for (case, value) in cases {
        let mut child = Command::new(std::env::current_exe().unwrap());
        child
            .args([
                "--exact",
                "runtime_error_child",
                "--ignored",
                "--test-threads=1",
            ])
            .env("OLOPROOF_ONNX_CHILD", case)
            .env_remove("ORT_DYLIB_PATH");
        if let Some(real) = &real {
            child.env("OLOPROOF_ONNX_REAL_DYLIB", real);
        }
        if let Some(value) = value {
            child.env("ORT_DYLIB_PATH", value);
        }
        let out = child.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "case {case}: {}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Run by [`runtime_errors_say_which_variable_and_how_to_get_the_library`] in a child process,
/// with the case in `OLOPROOF_ONNX_CHILD` and `ORT_DYLIB_PATH` set for it.
#[test]
#[ignore = "run in a child process by runtime_errors_say_which_variable_and_how_to_get_the_library"]
fn runtime_error_child() {
    let case = std::env::var("OLOPROOF_ONNX_CHILD").expect("run by the parent test");
    let tmp = tempfile::tempdir().unwrap();
    // Not a model: the runtime is needed (and loaded) before the file is read.
    std::fs::write(tmp.path().join("model.onnx"), b"not onnx").unwrap();
    let err = OnnxClassifierRaw::load(tmp.path(), Some(1)).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, LocalError::Runtime { .. }), "{err:?}");
    assert!(err.is_load_error());
    assert!(text.contains("ORT_DYLIB_PATH"), "{text}");
    assert!(text.contains("libonnxruntime.so"), "{text}");
    assert!(
        text.contains("pip install onnxruntime==1.31.1"),
        "{case}: {text}"
    );
    assert!(
        text.contains("<site-packages>/onnxruntime/capi/libonnxruntime.so.1.31.1"),
        "{case}: {text}"
    );
    match case.as_str() {
        "unset" | "empty" | "unset_then_set" => {
            assert!(text.contains("set ORT_DYLIB_PATH"), "{text}")
        }
        "missing" => assert!(
            text.contains("/nonexistent/onnxruntime/libonnxruntime.so: no such file"),
            "{text}"
        ),
        "not_a_library" => assert!(text.contains("cannot load ONNX Runtime"), "{text}"),
        other => panic!("unknown case {other}"),
    }
    if case == "unset_then_set" {
        // A failed load is not remembered: once the variable is set, the runtime loads and the
        // file itself is what is wrong.
        std::env::set_var(
            "ORT_DYLIB_PATH",
            std::env::var_os("OLOPROOF_ONNX_REAL_DYLIB").unwrap(),
        );
        let err = OnnxClassifierRaw::load(tmp.path(), Some(1)).unwrap_err();
        assert!(matches!(err, LocalError::BadFile { .. }), "{err:?}");
    }
}
