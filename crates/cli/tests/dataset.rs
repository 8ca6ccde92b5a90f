//! Recorded cases: `run --dataset` on Ragas JSONL (current and pre-0.2 names, unknown keys kept as
//! metadata), `export
//! --format ragas` of a live run read back by `run --dataset`, and `diagnose` refusing to
//! re-execute a recorded run.

mod common;

use std::path::{Path, PathBuf};

use common::*;

const CONFIG: &str = "dataset: ragas.jsonl
evaluators:
  - {type: contains, criterion: answer_correct}
  - {type: hit_rate, k: 2}
";

/// A project folder with `oloproof.yaml` naming `ragas.jsonl`, and both fixtures copied in.
fn recorded_project() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("project");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("oloproof.yaml"), CONFIG).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/datasets");
    for name in ["ragas.jsonl", "legacy.jsonl"] {
        std::fs::copy(fixtures.join(name), dir.join(name)).unwrap();
    }
    (tmp, dir)
}

fn row<'a>(out: &'a str, criterion: &str) -> &'a str {
    out.lines()
        .find(|l| l.contains(&format!(" {criterion} ")))
        .unwrap_or_else(|| panic!("no row {criterion} in\n{out}"))
}

#[test]
fn ragas_dataset_is_evaluated_without_a_system() {
    let (tmp, dir) = recorded_project();
    let run = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!("dataset_ragas_run", transcript(&run, tmp.path()));
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let out = stdout(&run);
    // Four of six answers contain the reference; five records have reference contexts, three
    // of which were retrieved in the first two.
    assert!(
        row(&out, "answer_correct").contains("4 / 6 observed"),
        "{out}"
    );
    assert!(
        row(&out, "hit_rate_at_2").contains("3 / 5 observed"),
        "{out}"
    );
    assert!(row(&out, "hit_rate_at_2").contains("1 excluded"), "{out}");

    // The same file through the flag, with the format named.
    let flag = oloproof(
        &dir,
        &[
            "run",
            ".",
            "--dataset",
            "ragas.jsonl",
            "--dataset-format",
            "ragas",
        ],
    );
    assert_eq!(flag.status.code(), Some(0), "{}", stderr(&flag));
    // Judgments of the same recorded answers come from the cache.
    assert!(
        stdout(&flag).contains("Cache: execution 0 hit/0 miss; judgment 12 hit/0 miss"),
        "{}",
        stdout(&flag)
    );
    assert_eq!(
        row(&stdout(&flag), "answer_correct"),
        row(&out, "answer_correct")
    );
}

#[test]
fn legacy_names_are_read_with_one_warning() {
    let (_tmp, dir) = recorded_project();
    let run = oloproof(&dir, &["run", ".", "--dataset", "legacy.jsonl"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let err = stderr(&run);
    assert_eq!(err.matches("warning:").count(), 1, "{err}");
    assert!(err.contains("2 records use the pre-0.2 Ragas names (question → user_input, contexts → retrieved_contexts, answer → response, ground_truth → reference)"), "{err}");
    assert!(row(&stdout(&run), "answer_correct").contains("1 / 2 observed"));
}

#[test]
fn unknown_key_is_kept_as_metadata_with_a_warning() {
    // A dataset from another tool is not a config file: a key we do not know is kept (as the
    // case's metadata), with one warning that still suggests the likely typo.
    let (_tmp, dir) = recorded_project();
    std::fs::write(
        dir.join("typo.jsonl"),
        "{\"user_input\":\"q\",\"response\":\"a\"}\n{\"user_input\":\"q\",\"respones\":\"a\"}\n",
    )
    .unwrap();
    let run = oloproof(&dir, &["run", ".", "--dataset", "typo.jsonl"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let err = stderr(&run);
    assert_eq!(err.matches("warning:").count(), 1, "{err}");
    assert!(
        err.contains("1 unknown key on 1 record kept as case metadata: `respones` (did you mean `response`?)"),
        "{err}"
    );
}

#[test]
fn config_with_system_and_dataset_is_an_error() {
    let (_tmp, dir) = project("examples/support_rag");
    let config = std::fs::read_to_string(dir.join("oloproof.yaml")).unwrap();
    std::fs::write(
        dir.join("oloproof.yaml"),
        format!("{config}dataset: ragas.jsonl\n"),
    )
    .unwrap();
    let run = oloproof(&dir, &["run", "."]);
    assert_eq!(run.status.code(), Some(2));
    assert!(stderr(&run).contains("both `system` and `dataset` are set"));
}

#[test]
fn export_of_a_live_run_round_trips() {
    let (_tmp, dir) = project("examples/support_rag");
    let live = oloproof(&dir, &["run", "."]);
    assert_eq!(live.status.code(), Some(0));
    let live_out = stdout(&live);
    let id = run_id(&live_out);
    let export = oloproof(
        &dir,
        &["export", &id, "--format", "ragas", "-o", "exported.jsonl"],
    );
    assert_eq!(export.status.code(), Some(0), "{}", stderr(&export));
    assert!(stderr(&export).contains("Exported 13 cases"));
    let text = std::fs::read_to_string(dir.join("exported.jsonl")).unwrap();
    assert_eq!(text.lines().count(), 13);
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "id",
            "user_input",
            "retrieved_contexts",
            "response",
            "reference",
            "reference_contexts",
            "metadata"
        ]
    );
    // Nothing Ragas has no field for is lost: the case id, its metadata, the passages' ids.
    assert_eq!(first["metadata"]["topic"], "billing");
    let ids = first["metadata"]["retrieved_contexts_metadata"]
        .as_array()
        .unwrap();
    assert_eq!(
        ids.len(),
        first["retrieved_contexts"].as_array().unwrap().len()
    );
    assert!(ids
        .iter()
        .all(|m| m["doc_id"].as_str().is_some_and(|d| d.starts_with("kb-"))));

    let recorded = oloproof(&dir, &["run", ".", "--dataset", "exported.jsonl"]);
    assert_eq!(recorded.status.code(), Some(0), "{}", stderr(&recorded));
    let recorded_out = stdout(&recorded);
    let cells = |line: &str| line.split('│').nth(2).map(str::to_string);
    assert_eq!(
        cells(row(&recorded_out, "answer_correct")),
        cells(row(&live_out, "answer_correct")),
        "{recorded_out}"
    );
    assert!(row(&recorded_out, "answer_correct").contains("9 / 13 observed"));

    // Exporting the recorded run gives the same file back.
    let again = oloproof(&dir, &["export", &run_id(&recorded_out)]);
    assert_eq!(stdout(&again), text);
}

#[test]
fn diagnose_refuses_recorded_runs() {
    let (_tmp, dir) = recorded_project();
    let run = oloproof(&dir, &["run", "."]);
    let id = run_id(&stdout(&run));
    let gold = oloproof(
        &dir,
        &[
            "diagnose",
            &id,
            "--intervention",
            "gold-context",
            "--criterion",
            "answer_correct",
        ],
    );
    assert_eq!(gold.status.code(), Some(2));
    assert!(
        stderr(&gold).contains("recorded runs cannot be re-executed"),
        "{}",
        stderr(&gold)
    );
    let top_k = oloproof(
        &dir,
        &[
            "diagnose",
            &id,
            "--intervention",
            "top-k",
            "--top-k",
            "1",
            "--criterion",
            "answer_correct",
        ],
    );
    assert_eq!(top_k.status.code(), Some(2));
    assert!(
        stderr(&top_k)
            .contains("needs a generator to answer again, and a recorded dataset has none"),
        "{}",
        stderr(&top_k)
    );
}
