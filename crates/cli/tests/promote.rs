//! `oloproof promote` through the real binary: `monitor --review-queue` writes the queue, a
//! reviewer fills the labels (and the right answer of a failure), and the rows become golden
//! cases with the trace's whole input, metadata and context; the file is a case file `run`
//! reads; promoting again with `--append` adds nothing; an unfilled label is refused at its
//! line (exit 2).

mod common;

use std::path::Path;

use common::*;
use serde_json::{json, Value};

const CONFIG: &str = "evaluators:
  - {type: entity_grounding}
monitor:
  traffic: traffic.jsonl
  window: {size: 1d}
  sampling:
    tiers:
      - {evaluators: [entity_grounding], rate: 1.0}
  slos:
    - {criterion: entity_grounding, score_above: 0.5, min_share: 0.5}
";

/// One day of 30 traces; every third answer names an order its passage does not hold.
fn traffic() -> String {
    let mut out = String::new();
    for k in 0..30 {
        let n = 10 + k;
        let answer = if k % 3 == 0 {
            format!("Order {} shipped on 9 June.", n + 50)
        } else {
            format!("Order {n} shipped on 3 March.")
        };
        let record = json!({
            "id": format!("t-{k}"),
            "input": {"question": format!("When did order {n} ship?"), "tenant": "acme"},
            "metadata": {"intent": "orders"},
            "retrieval": {"candidates": [{"doc_id": format!("d{n}"), "text": format!("Order {n} shipped on 3 March.")}]},
            "answer": answer,
            "production": {"trace_id": format!("{:032x}", k + 1), "timestamp": format!("2026-11-30T{:02}:00:00Z", k % 24)},
        });
        out.push_str(&record.to_string());
        out.push('\n');
    }
    out
}

fn rows(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn write_rows(path: &Path, rows: &[Value]) {
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(path, text).unwrap();
}

#[test]
fn reviewed_rows_become_golden_cases() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("oloproof.yaml"), CONFIG).unwrap();
    std::fs::write(dir.join("traffic.jsonl"), traffic()).unwrap();
    let o = oloproof(
        dir,
        &["monitor", ".", "--review-queue", "6", "-o", "review.jsonl"],
    );
    assert!(matches!(o.status.code(), Some(0 | 3)), "{}", stderr(&o));

    // The reviewer: an answer naming the order of its question is right; a wrong one gets
    // the right answer, except the last wrong one, which the reviewer leaves without it.
    let mut queue = rows(&dir.join("review.jsonl"));
    assert!(queue.len() >= 6, "{queue:?}");
    let wrong: Vec<usize> = (0..queue.len())
        .filter(|&i| queue[i]["answer"].as_str().unwrap().contains("9 June"))
        .collect();
    assert!(!wrong.is_empty(), "the queue should hold a wrong answer");
    for (i, row) in queue.iter_mut().enumerate() {
        let answer = row["answer"].as_str().unwrap().to_string();
        if answer.contains("9 June") {
            row["label"] = json!(0);
            if Some(&i) != wrong.last() {
                let question = row["question"].as_str().unwrap();
                let n = question.split_whitespace().nth(3).unwrap();
                row["reference"] = json!(format!("Order {n} shipped on 3 March."));
            }
        } else {
            row["label"] = json!(1);
        }
    }
    let passes = queue.len() - wrong.len();
    write_rows(&dir.join("review.jsonl"), &queue);

    let o = oloproof(dir, &["promote", "review.jsonl", "-o", "golden.jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with(&format!(
            "Promoted {} of {} reviewed rows to golden.jsonl: {passes} pass",
            queue.len() - 1,
            queue.len()
        )),
        "{out}"
    );
    assert!(
        out.contains(
            "failed_without_reference (write the right answer in `reference` to promote it)"
        ),
        "{out}"
    );
    let golden = rows(&dir.join("golden.jsonl"));
    assert_eq!(golden.len(), queue.len() - 1);
    for case in &golden {
        let id = case["id"].as_str().unwrap();
        let row = queue.iter().find(|r| r["id"] == id).unwrap();
        // The trace's whole input and metadata, and where the case came from.
        assert_eq!(case["input"]["tenant"], "acme", "{case}");
        assert_eq!(case["metadata"]["intent"], "orders");
        assert_eq!(case["metadata"]["promoted"]["trace_id"], row["trace_id"]);
        assert_eq!(
            case["metadata"]["promoted"]["window"],
            "2026-11-30T00:00:00Z"
        );
        let n = row["question"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .nth(3)
            .unwrap()
            .to_string();
        assert_eq!(
            case["expected"]["answer"],
            format!("Order {n} shipped on 3 March.")
        );
        if row["label"] == 1 {
            // A pass: its passages are the gold context.
            assert_eq!(
                case["expected"]["gold_context"][0]["doc_id"],
                format!("d{n}")
            );
            assert_eq!(
                case["metadata"]["promoted"]["reference"],
                "production_answer"
            );
        } else {
            assert!(case["expected"].get("gold_context").is_none(), "{case}");
            assert_eq!(case["metadata"]["promoted"]["reference"], "reviewer");
        }
    }

    // Promoting the same queue again into the same file adds nothing.
    let o = oloproof(
        dir,
        &["promote", "review.jsonl", "-o", "golden.jsonl", "--append"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).starts_with(&format!(
        "Promoted 0 of {} reviewed rows to golden.jsonl (appended)",
        queue.len()
    )));
    assert_eq!(rows(&dir.join("golden.jsonl")).len(), golden.len());

    // A row left unlabelled is refused at its line.
    queue[1]["label"] = Value::Null;
    write_rows(&dir.join("review.jsonl"), &queue);
    let o = oloproof(dir, &["promote", "review.jsonl", "-o", "again.jsonl"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("review.jsonl:2: field `label`"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.join("again.jsonl").exists());

    // Traffic in the collect store is not a file to read the traces from: say how to get one.
    queue[1]["label"] = json!(1);
    write_rows(&dir.join("review.jsonl"), &queue);
    std::fs::write(
        dir.join("oloproof.yaml"),
        CONFIG.replace("traffic: traffic.jsonl", "traffic: collected"),
    )
    .unwrap();
    let o = oloproof(dir, &["promote", "review.jsonl", "-o", "again.jsonl"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("oloproof import --collected -o traffic.jsonl"),
        "{}",
        stderr(&o)
    );
}
