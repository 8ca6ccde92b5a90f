//! `schema_validity` as a run evaluator: recorded answers checked against a JSON Schema file
//! (or one written inline), with located errors for a missing file, a file that is not JSON
//! and a schema that does not compile.

mod common;

use common::*;
use serde_json::{json, Value};

const SCHEMA: &str = r#"{
  "type": "object",
  "required": ["refund_days", "channel"],
  "properties": {
    "refund_days": {"type": "integer", "minimum": 0},
    "channel": {"enum": ["app", "web"]}
  }
}"#;

/// Four recorded answers: valid, not JSON, a wrong type, a missing property.
fn project(config: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    std::fs::create_dir_all(dir.join("schemas")).unwrap();
    std::fs::write(dir.join("schemas/refund.json"), SCHEMA).unwrap();
    let answers = [
        ("valid", r#"{"refund_days": 14, "channel": "app"}"#),
        ("not_json", "Refunds take 14 days."),
        ("wrong_type", r#"{"refund_days": "14", "channel": "app"}"#),
        ("missing_channel", r#"{"refund_days": 14}"#),
    ];
    let records: Vec<String> = answers
        .iter()
        .map(|(id, answer)| {
            json!({
                "id": id,
                "input": {"question": "How long do refunds take?"},
                "answer": answer,
            })
            .to_string()
        })
        .collect();
    std::fs::write(dir.join("records.jsonl"), records.join("\n") + "\n").unwrap();
    std::fs::write(dir.join("oloproof.yaml"), config).unwrap();
    (tmp, dir)
}

#[test]
fn recorded_answers_are_checked_against_the_schema() {
    let (tmp, dir) = project(
        "dataset: records.jsonl
evaluators:
  - {type: schema_validity, schema: schemas/refund.json}
  - {type: schema_validity, criterion: has_days, schema: {type: object, required: [refund_days]}}
",
    );
    let o = oloproof(&dir, &["run", ".", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", transcript(&o, tmp.path()));
    let summary: Value = serde_json::from_slice(&o.stdout).unwrap();
    let valid = criterion(&summary, "schema_validity");
    assert_eq!(valid["observed"], 4, "{valid}");
    assert_eq!(valid["value"].as_f64(), Some(0.25), "{valid}");
    let has_days = criterion(&summary, "has_days");
    assert_eq!(has_days["value"].as_f64(), Some(0.75), "{has_days}");
    // Each failure says why, with the JSON pointers.
    let run = summary["run_id"].as_str().unwrap().to_string();
    for (case, needle) in [
        ("not_json", "not JSON"),
        ("wrong_type", "/refund_days"),
        ("missing_channel", "channel"),
    ] {
        let shown = oloproof(&dir, &["show", &run, "--case", case, "--json"]);
        assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
        let text = stdout(&shown);
        assert!(text.contains(needle), "{case}: {text}");
    }
}

#[test]
fn schema_errors_are_located() {
    for (config, needles) in [
        (
            "dataset: records.jsonl\nevaluators:\n  - {type: schema_validity, schema: schemas/nope.json}\n",
            vec!["evaluators[0].schema", "nope.json", "oloproof.yaml:3"],
        ),
        (
            "dataset: records.jsonl\nevaluators:\n  - {type: schema_validity, schema: records.jsonl}\n",
            vec!["evaluators[0].schema", "records.jsonl:2:1", "not JSON"],
        ),
        (
            "dataset: records.jsonl\nevaluators:\n  - {type: schema_validity, schema: {type: 12}}\n",
            vec!["evaluators[0].schema", "not a valid JSON Schema"],
        ),
    ] {
        let (tmp, dir) = project(config);
        let o = oloproof(&dir, &["run", "."]);
        let text = transcript(&o, tmp.path());
        assert_eq!(o.status.code(), Some(2), "{text}");
        for needle in needles {
            assert!(text.contains(needle), "{needle}: {text}");
        }
    }
}
