//! `run --dataset` on the files Ragas writes, as they are (fixtures written by the real
//! writers: `ragas.evaluate()` then `result.to_pandas()` through pandas' `to_csv` / `to_json`,
//! `json.dump` of its records and Ragas' `LocalJSONLBackend` (both with Python's bare `NaN`),
//! `datasets.Dataset.to_parquet`; `EvaluationDataset.to_csv` / `to_jsonl` /
//! `to_hf_dataset().to_parquet()`; a Parquet round trip giving numpy array reprs, and numpy 2
//! scalar lists; amnesty_qa's columnar JSON: `tests/datasets/make_ragas_exports.py`); and the
//! bad input around them: a broken list cell (located, the other rows load up to
//! `--max-error-rate`), too many broken rows, a multi-turn sample, unknown keys.
//!
//! The score columns `bleu_score`, `rouge_score(mode=fmeasure)`, `non_llm_context_recall` and
//! `string_present` were computed by Ragas' `evaluate()`, so our evaluators of the same name
//! agree exactly (ρ = 1, mean |Δ| = 0); the LLM metrics' columns (`context_precision`,
//! `answer_relevancy`, `faithfulness`, `context_recall`, `factual_correctness(mode=f1)`) hold a
//! user's numbers with the NaN of a failed score, and `context_precision` is compared with our
//! judged criterion under a scripted judge.

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
    "ragas_numpy2.csv",
    "ragas_result_columns.json",
    "ragas_result_records.json",
    "ragas_result_dump.json",
    "ragas_experiment.jsonl",
    "ragas_result.parquet",
    "ragas_dataset.csv",
    "ragas_dataset.jsonl",
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
        "string_present",
    ] {
        let r = ext_row(&out, column);
        assert!(r.contains("│ 0.000    │"), "{r}");
        assert!(r.contains("0 ours · 0 theirs"), "{r}");
    }
    // string_present is Ragas' name of StringPresence's score: it pairs with our
    // `string_presence` criterion (the alias of `string_present`).
    assert!(ext_row(&out, "string_present").contains("│ string_presence "));
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
    let columns: Vec<&str> = ext
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["column"].as_str().unwrap())
        .collect();
    assert_eq!(
        columns,
        [
            "bleu_score",
            "rouge_score(mode=fmeasure)",
            "non_llm_context_recall",
            "string_present",
            "context_precision",
            "answer_relevancy",
            "faithfulness",
            "context_recall",
            "factual_correctness(mode=f1)"
        ],
        "{ext}"
    );
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
        ("ragas_numpy2.csv", None),
        ("ragas_result_columns.json", None),
        ("ragas_result_records.json", Some("json")),
        ("ragas_result_dump.json", None),
        ("ragas_experiment.jsonl", None),
        ("ragas_result.parquet", None),
        ("ragas_dataset.csv", None),
        ("ragas_dataset.jsonl", None),
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

/// The `external_scores` of `run --json` on `file`.
fn external_json(dir: &Path, file: &str) -> serde_json::Value {
    let run = oloproof(dir, &["run", ".", "--dataset", file, "--json"]);
    assert_eq!(run.status.code(), Some(0), "{file}: {}", stderr(&run));
    let summary: serde_json::Value = serde_json::from_str(&stdout(&run)).unwrap();
    summary["external_scores"].clone()
}

#[test]
fn python_nan_is_an_absent_score() {
    let (_tmp, dir) = ragas_project();
    // `json.dump(result.to_pandas().to_dict("records"))` and Ragas' LocalJSONLBackend write
    // Python's bare NaN for the failed scores (the CSV writes an empty cell).
    for file in ["ragas_result_dump.json", "ragas_experiment.jsonl"] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        assert!(text.contains(":NaN") || text.contains(": NaN"), "{file}");
    }
    let csv = external_json(&dir, "ragas_result.csv");
    for file in ["ragas_result_dump.json", "ragas_experiment.jsonl"] {
        assert_eq!(external_json(&dir, file), csv, "{file}");
    }
    let faithfulness = csv
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["column"] == "faithfulness")
        .unwrap();
    assert_eq!(
        (
            faithfulness["cases"].as_u64(),
            faithfulness["defined"].as_u64()
        ),
        (Some(5), Some(4))
    );
    // A token that is not Python's stays an error, located.
    std::fs::write(
        dir.join("bad.jsonl"),
        "{\"user_input\": \"q\", \"faithfulness\": NaNa}\n",
    )
    .unwrap();
    let run = oloproof(&dir, &["run", ".", "--dataset", "bad.jsonl"]);
    assert_eq!(run.status.code(), Some(2));
    let err = stderr(&run);
    assert!(
        err.contains("bad.jsonl:1:") && err.contains("malformed JSON"),
        "{err}"
    );
}

#[test]
fn numpy_2_scalar_lists_are_read() {
    let (_tmp, dir) = ragas_project();
    let text = std::fs::read_to_string(dir.join("ragas_numpy2.csv")).unwrap();
    assert!(
        text.contains("[np.str_('Refunds are issued within 14 days of delivery.'), np.str_("),
        "{text}"
    );
    let run = oloproof(&dir, &["run", ".", "--dataset", "ragas_numpy2.csv"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert!(stdout(&run).contains("· 5 cases"), "{}", stdout(&run));
}

const JUDGE_KEY_ENV: &str = "OLOPROOF_TEST_JUDGE_KEY";

/// A scripted judge of context precision that reads its prompt: a chunk is useful when every
/// word of four letters or more in it is in the reference answer.
fn word_judge(r: &oloproof_judge::mock::RecordedRequest) -> oloproof_judge::mock::MockReply {
    use oloproof_judge::mock::MockReply;
    let user = r.body["messages"][1]["content"].as_str().unwrap_or("");
    let words = |t: &str| -> Vec<String> {
        t.to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() >= 4)
            .map(str::to_string)
            .collect()
    };
    let target = user
        .split("Reference answer: ")
        .nth(1)
        .and_then(|t| t.split("\n\nRetrieved chunks:").next())
        .unwrap_or("");
    let known = words(target);
    let chunks = user.split("Retrieved chunks:\n").nth(1).unwrap_or("");
    let verdicts: Vec<serde_json::Value> = chunks
        .split("\n\n[")
        .enumerate()
        .map(|(i, chunk)| {
            let text = chunk.split_once("] ").map_or(chunk, |(_, t)| t);
            let useful = words(text).iter().all(|w| known.contains(w));
            serde_json::json!({"id": i + 1, "reason": "word for word", "useful": u8::from(useful)})
        })
        .collect();
    MockReply::json(serde_json::json!({ "verdicts": verdicts })).with_usage(100, 10)
}

#[test]
fn a_judged_criterion_beside_ragas_llm_column() {
    let server = oloproof_judge::mock::MockServer::start();
    server.respond_with(word_judge);
    let (tmp, dir) = ragas_project();
    std::fs::write(
        dir.join("oloproof.yaml"),
        format!(
            "dataset: ragas_result.csv
judges:
  default:
    provider: openai
    base_url: {}
    model: judge-model-1
    api_key_env: {JUDGE_KEY_ENV}
    max_retries: 0
    timeout_s: 5
evaluators:
  - {{type: context_precision, judge: default}}
",
            server.base_url()
        ),
    )
    .unwrap();
    let env = [(JUDGE_KEY_ENV, "sk-test-secret-0123456789")];
    let run = oloproof_env(&dir, &["run", "."], &env);
    insta::assert_snapshot!(
        "ragas_judged_beside_llm_column",
        transcript(&run, tmp.path())
    );
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    // Ours, by the scripted judge: 1, 1, 0, 1, 0 (the third and fifth samples' chunks hold
    // words their references lack). Ragas': 1, 0.5, NaN, 0.833, 1. On the four cases both
    // have: ranks (3, 3, 3, 1) and (3.5, 1, 2, 3.5), ρ = −2 / √(3 · 4.5) = −0.544; mean |Δ| =
    // (0 + 0.5 + 0.167 + 1) / 4 = 0.417; the third case is ours only.
    let out = stdout(&run);
    let r = ext_row(&out, "context_precision");
    assert!(r.contains("│ context_precision "), "{r}");
    assert!(r.contains("-0.544") || r.contains("−0.544"), "{r}");
    assert!(r.contains("0.417"), "{r}");
    assert!(r.contains("1 ours · 0 theirs"), "{r}");
    let json = oloproof_env(&dir, &["run", ".", "--json"], &env);
    let summary: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    let cp = summary["external_scores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["column"] == "context_precision")
        .unwrap()
        .clone();
    let close = |v: &serde_json::Value, x: f64| v.as_f64().is_some_and(|y| (y - x).abs() < 1e-6);
    assert!(close(&cp["spearman"], -2.0 / 13.5f64.sqrt()), "{cp}");
    assert!(
        close(
            &cp["mean_abs_diff"],
            (0.5 + (1.0 - 0.8333333333) + 1.0) / 4.0
        ),
        "{cp}"
    );
    assert_eq!(
        (
            cp["pairs"].as_u64(),
            cp["ours_only"].as_u64(),
            cp["theirs_only"].as_u64()
        ),
        (Some(4), Some(1), Some(0)),
        "{cp}"
    );
    // The other LLM columns have no criterion here: listed alone.
    assert!(ext_row(&out, "faithfulness").contains("— (no evaluator)"));
}
