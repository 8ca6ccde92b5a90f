//! `run --dataset` on the files Ragas writes, as they are (fixtures made by the real pandas,
//! numpy, pyarrow and ragas==0.4.3: `tests/datasets/make_ragas_exports.py`): a
//! `result.to_pandas().to_csv()` export with Python list reprs and score columns, the same with
//! numpy array reprs, pandas JSON orients, amnesty_qa's columnar JSON, Parquet; and the bad
//! input around them: a broken list cell (located, the other rows load up to
//! `--max-error-rate`), too many broken rows, a multi-turn sample, unknown keys.
//!
//! The score columns `bleu_score`, `rouge_score(mode=fmeasure)` and `non_llm_context_recall`
//! were computed by Ragas itself, so our evaluators of the same name agree exactly (ρ = 1,
//! mean |Δ| = 0); `faithfulness` has no evaluator in the config and is listed alone.

mod common;

use std::path::{Path, PathBuf};

use common::*;

const CONFIG: &str = "dataset: ragas_result.csv
evaluators:
  - {type: bleu_score}
  - {type: rouge_score}
  - {type: non_llm_context_recall}
  - {type: string_presence}
";

const FIXTURES: &[&str] = &[
    "ragas_result.csv",
    "ragas_numpy.csv",
    "ragas_result_columns.json",
    "ragas_result_records.json",
    "ragas_dataset.parquet",
    "amnesty_qa.json",
];

fn ragas_project() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("project");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("oloproof.yaml"), CONFIG).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/datasets");
    for name in FIXTURES {
        std::fs::copy(fixtures.join(name), dir.join(name)).unwrap();
    }
    (tmp, dir)
}

fn row<'a>(out: &'a str, first_cell: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(&format!("│ {first_cell} ")))
        .unwrap_or_else(|| panic!("no row {first_cell} in\n{out}"))
}

/// A row of the external-scores table.
fn ext_row<'a>(out: &'a str, column: &str) -> &'a str {
    let start = out
        .find("External scores (recorded in the dataset) beside ours")
        .unwrap_or_else(|| panic!("no external scores in\n{out}"));
    row(&out[start..], column)
}

/// The criteria table's rows (what must not depend on how the file was written).
fn criteria_rows(out: &str) -> Vec<&str> {
    [
        "bleu_score",
        "rouge_score",
        "non_llm_context_recall",
        "string_presence",
    ]
    .iter()
    .map(|c| row(out, c))
    .collect()
}

#[test]
fn csv_export_scores_are_external_scores_beside_ours() {
    let (tmp, dir) = ragas_project();
    let run = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!("ragas_csv_external_scores", transcript(&run, tmp.path()));
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let out = stdout(&run);
    // Ragas' own values: our evaluators of the same metrics agree exactly.
    for column in [
        "bleu_score",
        "rouge_score(mode=fmeasure)",
        "non_llm_context_recall",
    ] {
        let r = ext_row(&out, column);
        assert!(r.contains("│ 0.000    │"), "{r}");
        assert!(r.contains("0 ours · 0 theirs"), "{r}");
    }
    // faithfulness: no evaluator, 4 of 5 defined (one NaN cell).
    let f = ext_row(&out, "faithfulness");
    assert!(
        f.contains("— (no evaluator)") && f.contains("(4 / 5 cases)"),
        "{f}"
    );
    // --json carries them.
    let json = oloproof(&dir, &["run", ".", "--json"]);
    let summary: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    let ext = &summary["external_scores"];
    assert_eq!(ext.as_array().unwrap().len(), 4, "{ext}");
    let bleu = ext
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["column"] == "bleu_score")
        .unwrap();
    assert_eq!(bleu["criterion"], "bleu_score");
    assert_eq!(bleu["pairs"], 5);
    assert_eq!(bleu["spearman"], 1.0);
    assert_eq!(bleu["mean_abs_diff"], 0.0);
    // show prints them too (stored with the run).
    let id = run_id(&out);
    let show = oloproof(&dir, &["show", &id]);
    assert!(
        stdout(&show).contains("External scores (recorded in the dataset) beside ours"),
        "{}",
        stdout(&show)
    );
}

#[test]
fn every_encoding_of_the_same_samples_scores_the_same() {
    let (_tmp, dir) = ragas_project();
    let base = stdout(&oloproof(&dir, &["run", "."]));
    let expected = criteria_rows(&base);
    for (file, format) in [
        ("ragas_numpy.csv", None),
        ("ragas_result_columns.json", None),
        ("ragas_result_records.json", Some("json")),
        ("ragas_dataset.parquet", None),
        ("ragas_result.csv", Some("csv")),
    ] {
        let mut args = vec!["run", ".", "--dataset", file];
        if let Some(f) = format {
            args.extend(["--dataset-format", f]);
        }
        let run = oloproof(&dir, &args);
        assert_eq!(run.status.code(), Some(0), "{file}: {}", stderr(&run));
        let out = stdout(&run);
        assert_eq!(criteria_rows(&out), expected, "{file}\n{out}");
    }
}

#[test]
fn parquet_dataset_is_read() {
    let (tmp, dir) = ragas_project();
    let run = oloproof(&dir, &["run", ".", "--dataset", "ragas_dataset.parquet"]);
    insta::assert_snapshot!("ragas_parquet", transcript(&run, tmp.path()));
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
}

#[test]
fn hugging_face_columnar_json_is_read() {
    let (tmp, dir) = ragas_project();
    let run = oloproof(
        &dir,
        &[
            "run",
            ".",
            "--dataset",
            "amnesty_qa.json",
            "--dataset-format",
            "hf-json",
        ],
    );
    insta::assert_snapshot!("ragas_hf_json", transcript(&run, tmp.path()));
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let err = stderr(&run);
    assert_eq!(err.matches("warning:").count(), 1, "{err}");
    assert!(err.contains("ground_truths → reference"), "{err}");
    // No reference contexts in amnesty_qa: context recall excludes every case.
    assert!(row(&stdout(&run), "non_llm_context_recall").contains("5 excluded"));
}

/// `ragas_numpy.csv` with the list cell of its third sample cut short.
fn broken_csv(dir: &Path) {
    let text = std::fs::read_to_string(dir.join("ragas_numpy.csv")).unwrap();
    let broken = text.replacen(
        "['We ship to every EU country.' 'Prices include VAT.']",
        "['We ship to every EU country.' 'Prices include VAT.]",
        1,
    );
    assert_ne!(broken, text);
    std::fs::write(dir.join("broken.csv"), broken).unwrap();
}

#[test]
fn broken_list_cell_is_located_and_the_other_rows_load() {
    let (tmp, dir) = ragas_project();
    broken_csv(&dir);
    let run = oloproof(
        &dir,
        &[
            "run",
            ".",
            "--dataset",
            "broken.csv",
            "--max-error-rate",
            "0.2",
        ],
    );
    insta::assert_snapshot!("ragas_broken_cell_skipped", transcript(&run, tmp.path()));
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let err = stderr(&run);
    assert!(err.contains("broken.csv:6:1"), "{err}");
    assert!(
        err.contains("column `retrieved_contexts`: broken list"),
        "{err}"
    );
    assert!(stdout(&run).contains("· 4 cases"), "{}", stdout(&run));
}

#[test]
fn too_many_broken_rows_is_bad_input() {
    let (tmp, dir) = ragas_project();
    broken_csv(&dir);
    // Default max_error_rate 0: one broken row of five is too many.
    let run = oloproof(&dir, &["run", ".", "--dataset", "broken.csv"]);
    insta::assert_snapshot!("ragas_broken_cell_refused", transcript(&run, tmp.path()));
    assert_eq!(run.status.code(), Some(2));
}

#[test]
fn multi_turn_samples_are_refused_with_their_line() {
    let (tmp, dir) = ragas_project();
    std::fs::write(
        dir.join("chat.jsonl"),
        "{\"user_input\": \"Hi?\", \"response\": \"Hello.\"}\n{\"user_input\": [{\"content\": \"Book a table\", \"type\": \"human\"}, {\"content\": \"For how many?\", \"type\": \"ai\"}], \"reference\": \"A table for two.\"}\n",
    )
    .unwrap();
    let run = oloproof(&dir, &["run", ".", "--dataset", "chat.jsonl"]);
    insta::assert_snapshot!("ragas_multi_turn", transcript(&run, tmp.path()));
    assert_eq!(run.status.code(), Some(2));
    assert!(stderr(&run).contains("chat.jsonl:2:"), "{}", stderr(&run));
}

#[test]
fn unknown_keys_become_metadata_with_one_warning() {
    let (tmp, dir) = ragas_project();
    std::fs::write(
        dir.join("extra.jsonl"),
        "{\"user_input\": \"q1\", \"response\": \"a b\", \"reference\": \"a\", \"sample_type\": \"single_turn\", \"team\": \"search\", \"respones\": \"typo\"}\n{\"user_input\": \"q2\", \"response\": \"c\", \"reference\": \"d\", \"team\": \"ads\", \"string_present\": 0.0}\n",
    )
    .unwrap();
    let run = oloproof(&dir, &["run", ".", "--dataset", "extra.jsonl"]);
    insta::assert_snapshot!("ragas_unknown_keys", transcript(&run, tmp.path()));
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let err = stderr(&run);
    assert_eq!(err.matches("warning:").count(), 1, "{err}");
    assert!(err.contains("2 unknown keys on 2 records kept as case metadata: `team`, `respones` (did you mean `response`?)"), "{err}");
    // string_present is Ragas' column of our string_presence.
    assert!(
        ext_row(&stdout(&run), "string_present").contains("string_presence"),
        "{}",
        stdout(&run)
    );
}

#[test]
fn a_bad_ragas_option_is_located_with_the_choices() {
    let (_tmp, dir) = ragas_project();
    std::fs::write(
        dir.join("oloproof.yaml"),
        "dataset: ragas_result.csv\nevaluators:\n  - {type: rouge_score, rouge_type: rougeLsum}\n",
    )
    .unwrap();
    let run = oloproof(&dir, &["run", "."]);
    assert_eq!(run.status.code(), Some(2));
    let err = stderr(&run);
    assert!(err.contains("unknown rouge_type `rougeLsum`"), "{err}");
    assert!(err.contains("oloproof.yaml:3:"), "{err}");
    assert!(err.contains("one of rouge1, rougeL"), "{err}");
    assert!(err.contains("did you mean `rougeL`?"), "{err}");
}
