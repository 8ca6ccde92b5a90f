//! A `provider: local` judge with `path: hf://ORG/NAME` against a double of the Hugging Face
//! Hub: the model is downloaded into the Hugging Face cache when the judge loads, and scores
//! like the same model loaded from a local folder. The Hub settings come from the environment
//! (`HF_ENDPOINT`, `HF_HUB_CACHE`), so the judge runs in a child process of this test binary
//! with them set, and this process's environment is never changed.

#![cfg(feature = "local-models")]

#[path = "../../local/tests/hub_double/mod.rs"]
mod hub_double;

use std::process::Command;

use hub_double::{files_of, HubDouble, Repo};
use oloproof_judge::{JudgeClient, JudgeSettings, LocalKind};

const COMMIT: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c";
const CHILD: &str = "nli_judge_from_hf_path_in_child";

#[test]
fn an_nli_judge_loads_an_hf_path_from_the_hub() {
    let src = tempfile::tempdir().unwrap();
    oloproof_local::testing::write_tiny_classifier(
        src.path(),
        &["contradiction", "neutral", "entailment"],
        11,
    )
    .unwrap();
    let hub = HubDouble::start(vec![Repo::public(
        "org/tiny-nli",
        COMMIT,
        files_of(src.path()),
    )]);
    let home = tempfile::tempdir().unwrap();
    let cache = home.path().join("hub");
    let out = Command::new(std::env::current_exe().unwrap())
        .args([CHILD, "--exact", "--ignored", "--test-threads", "1"])
        .env("HF_ENDPOINT", &hub.url)
        .env("HF_HOME", home.path())
        .env("HF_HUB_CACHE", &cache)
        .env("OLOPROOF_TEST_LOCAL_MODEL", src.path())
        .env_remove("HF_TOKEN")
        .env_remove("HF_TOKEN_PATH")
        .env_remove("HF_HUB_OFFLINE")
        .env_remove("TRANSFORMERS_OFFLINE")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{stderr}"
    );
    assert!(cache
        .join("models--org--tiny-nli/snapshots")
        .join(COMMIT)
        .join("model.safetensors")
        .is_file());
    assert!(hub.seen().iter().any(|r| r.cdn && r.method == "GET"));
}

/// Run by [`an_nli_judge_loads_an_hf_path_from_the_hub`] with the Hub settings in its
/// environment.
#[test]
#[ignore = "run in a child process by an_nli_judge_loads_an_hf_path_from_the_hub"]
fn nli_judge_from_hf_path_in_child() {
    let local = std::env::var("OLOPROOF_TEST_LOCAL_MODEL").unwrap();
    let mut settings = JudgeSettings::local(LocalKind::Nli, "hf://org/tiny-nli");
    settings.threads = Some(1);
    let from_hub = JudgeClient::new("nli", settings).unwrap();
    let mut settings = JudgeSettings::local(LocalKind::Nli, &local);
    settings.threads = Some(1);
    let from_disk = JudgeClient::new("nli", settings).unwrap();
    assert_eq!(from_hub.model_identity(), from_disk.model_identity());
    let pairs = vec![(
        "the refund window is fourteen days".to_string(),
        "refund is fourteen days".to_string(),
    )];
    assert_eq!(
        from_hub.score_pairs(&pairs).unwrap(),
        from_disk.score_pairs(&pairs).unwrap()
    );
    // A `.gguf` file is for `kind: generate`, and `generate` needs one.
    let e = JudgeClient::new(
        "nli",
        JudgeSettings::local(LocalKind::Nli, "hf://org/tiny-nli/model.gguf"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("takes a model folder"), "{e}");
    let e = JudgeClient::new(
        "gen",
        JudgeSettings::local(LocalKind::Generate, "hf://org/tiny-nli"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("takes one GGUF file"), "{e}");
}
