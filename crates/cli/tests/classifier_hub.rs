//! The `classifier` evaluator's label check on an `hf://` model: read from the Hugging Face
//! cache without the network when the model is there (located error at configuration time,
//! a dry run included), else checked once the run has fetched the model (from a double of the
//! Hub), before any case runs — a wrong `label:` is exit 2 at `evaluators[0].label` listing the
//! model's labels, never `missing` on every case.

#![cfg(feature = "local-models")]

mod common;

#[path = "../../local/tests/hub_double/mod.rs"]
mod hub_double;

use std::path::{Path, PathBuf};

use common::*;
use hub_double::{files_of, HubDouble, Repo};

const COMMIT: &str = "5a4b3c2d1e0f5a4b3c2d1e0f5a4b3c2d1e0f5a4b";

const CASES: &str = r#"{"id":"refund","input":{"question":"the refund window is fourteen days"}}
{"id":"shipping","input":{"question":"shipping takes three weeks"}}
"#;

/// The echo system judged by `classifier` on the judge `tox` at `hf://org/tox`, thresholding
/// `label`.
fn project_with(label: &str) -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) = project("tests/systems/echo");
    std::fs::write(dir.join("cases.jsonl"), CASES).unwrap();
    write_config(&dir, label);
    (tmp, dir)
}

fn write_config(dir: &Path, label: &str) {
    std::fs::write(
        dir.join("oloproof.yaml"),
        format!(
            "system:
  name: echo
  version: \"1\"
  rag:
    object: app:Echo
    depth: 3
    top_k: 2
    token_budget: 100
    index_version: echo-1
    workers: 1
cases: cases.jsonl
judges:
  tox: {{provider: local, kind: classifier, path: \"hf://org/tox\", threads: 1}}
evaluators:
  - {{type: classifier, judge: tox, label: {label}, threshold: 0.5}}
"
        ),
    )
    .unwrap();
}

/// The tiny classifier (labels `non_toxic`, `toxic`) written into `dir`.
fn tiny_classifier(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    oloproof_local::testing::write_tiny_classifier(dir, &["non_toxic", "toxic"], 2).unwrap();
}

/// The Hub variables of the child process: the cache, the endpoint, no token, online.
fn hub_env<'a>(cache: &'a str, endpoint: &'a str, home: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("HF_HUB_CACHE", cache),
        ("HF_HOME", home),
        ("HF_ENDPOINT", endpoint),
        ("HF_HUB_OFFLINE", "0"),
        ("HF_TOKEN", ""),
    ]
}

/// Asserts `out` is the located unknown-label error: exit 2, `evaluators[0].label` at its
/// line in oloproof.yaml, the model's labels listed and the likely one suggested.
fn assert_unknown_label(out: &std::process::Output, tmp: &Path) {
    let text = transcript(out, tmp);
    assert_eq!(out.status.code(), Some(2), "{text}");
    let err = stderr(out);
    assert!(
        err.contains("judge `tox`'s model has no label `toxc`"),
        "{text}"
    );
    assert!(err.contains("evaluators[0].label"), "{text}");
    // The entry is on line 15 of the file.
    assert!(err.contains("oloproof.yaml:15:"), "{text}");
    assert!(err.contains("non_toxic, toxic"), "{text}");
    assert!(err.contains("did you mean `toxic`?"), "{text}");
    // Nothing ran: no run id, no verdicts.
    assert!(!stdout(out).contains("no_toxicity"), "{text}");
}

#[test]
fn a_wrong_label_of_a_cached_hub_model_is_found_without_the_network() {
    let (tmp, dir) = project_with("toxc");
    // The model in the Hugging Face cache, as `hf download org/tox` leaves it: `refs/main`
    // naming the commit, its snapshot folder holding the files.
    let cache = tmp.path().join("hf-cache");
    let repo = cache.join("models--org--tox");
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), COMMIT).unwrap();
    tiny_classifier(&repo.join("snapshots").join(COMMIT));
    let home = tmp.path().join("hf-home");
    let (cache, home) = (cache.to_str().unwrap(), home.to_str().unwrap());
    // Nobody listens on the endpoint: any request would fail.
    let env = hub_env(cache, "http://127.0.0.1:9", home);
    // A dry run loads no model, yet reads the labels from the cache.
    let dry = oloproof_env(&dir, &["run", ".", "--dry-run"], &env);
    assert_unknown_label(&dry, tmp.path());
    let run = oloproof_env(&dir, &["run", "."], &env);
    assert_unknown_label(&run, tmp.path());
    // The right label runs from the cache, offline.
    write_config(&dir, "toxic");
    let ok = oloproof_env(&dir, &["run", ".", "--json"], &env);
    assert_eq!(ok.status.code(), Some(0), "{}", transcript(&ok, tmp.path()));
    let summary: serde_json::Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(
        criterion(&summary, "classifier")["observed"],
        2,
        "{summary}"
    );
}

#[test]
fn a_wrong_label_of_a_hub_model_not_cached_stops_the_run_once_it_is_fetched() {
    let (tmp, dir) = project_with("toxc");
    let src = tmp.path().join("tox-src");
    tiny_classifier(&src);
    let hub = HubDouble::start(vec![Repo::public("org/tox", COMMIT, files_of(&src))]);
    let cache = tmp.path().join("hf-cache");
    let home = tmp.path().join("hf-home");
    let (cache_s, home_s) = (cache.to_str().unwrap(), home.to_str().unwrap());
    let env = hub_env(cache_s, &hub.url, home_s);
    // Configuration time cannot know the labels without fetching: a dry run fetches nothing
    // and passes.
    let dry = oloproof_env(&dir, &["run", ".", "--dry-run"], &env);
    assert_eq!(
        dry.status.code(),
        Some(0),
        "{}",
        transcript(&dry, tmp.path())
    );
    assert!(!cache.exists(), "a dry run fetches nothing");
    // The run fetches the model, then stops at the label before any case.
    let run = oloproof_env(&dir, &["run", "."], &env);
    assert_unknown_label(&run, tmp.path());
    assert!(cache
        .join("models--org--tox/snapshots")
        .join(COMMIT)
        .join("config.json")
        .is_file());
    // Fixed, the run loads the model fetched above.
    write_config(&dir, "toxic");
    let ok = oloproof_env(&dir, &["run", ".", "--json"], &env);
    assert_eq!(ok.status.code(), Some(0), "{}", transcript(&ok, tmp.path()));
    let summary: serde_json::Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(
        criterion(&summary, "classifier")["observed"],
        2,
        "{summary}"
    );
}
