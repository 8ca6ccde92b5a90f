//! A calibration identifies a local judge by its model's content, not only by its settings:
//! new weights at the same path need a new calibration before they may gate.
#![cfg(feature = "local-models")]

use std::collections::BTreeMap;

use oloproof_engine::calibrate::{calibrated_judge, calibration_identity};
use serde_json::{json, Value};

#[test]
fn new_weights_at_the_same_path_change_the_identity() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().to_str().unwrap().to_string();
    let judges: BTreeMap<String, Value> = serde_json::from_value(json!({
        "nli": {"provider": "local", "kind": "nli", "path": path},
        "gpt": {"provider": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}
    }))
    .unwrap();
    let identity = || calibration_identity(&calibrated_judge(&judges, "nli"), "faithfulness");

    oloproof_local::testing::write_tiny_classifier(
        tmp.path(),
        &["contradiction", "neutral", "entailment"],
        1,
    )
    .unwrap();
    let first = calibrated_judge(&judges, "nli");
    assert!(first["model_identity"].is_string(), "{first}");
    let a = identity();
    assert_eq!(a, identity(), "stable for the same files");
    oloproof_local::testing::write_tiny_classifier(
        tmp.path(),
        &["contradiction", "neutral", "entailment"],
        2,
    )
    .unwrap();
    assert_ne!(a, identity(), "other weights, same settings");

    // An HTTP judge is identified by its settings as written (existing calibrations hold).
    assert_eq!(calibrated_judge(&judges, "gpt"), judges["gpt"]);
    // A model that cannot be loaded matches no calibration.
    std::fs::remove_file(tmp.path().join("model.safetensors")).unwrap();
    assert_eq!(
        calibrated_judge(&judges, "nli")["model_identity"],
        Value::Null
    );
}
