//! `oloproof metric` for the retrieval, RAG and ontology groups, through the real binary: the
//! seed's filter example (50 % exclusion, Recall@10 50 %, invalid filtered-gold recall 100 %),
//! and located errors for unknown taxonomy labels and cycles.

mod common;

use std::path::Path;

use serde_json::Value;

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

fn json(dir: &Path, args: &[&str]) -> Value {
    let o = common::oloproof(dir, args);
    assert!(o.status.success(), "{}", common::stderr(&o));
    serde_json::from_str(&common::stdout(&o)).unwrap()
}

#[test]
fn seed_filter_example() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(
        d,
        "docs.jsonl",
        r#"{"id": "d1", "tenant": "acme", "locale": "en-US"}
{"id": "d2", "tenant": "acme", "locale": "en-GB"}
{"id": "d3", "tenant": "globex", "locale": "en-US"}
{"id": "d4", "tenant": "acme", "locale": "en-US"}
{"id": "d5", "tenant": "acme", "locale": "de-DE"}
"#,
    );
    // The seed ranks the survivors in corpus order.
    write(
        d,
        "queries.jsonl",
        r#"{"query_id": "q1", "gold": ["d2"], "filter": {"locale": "en-US"}, "retrieved": ["d1", "d3", "d4"]}
{"query_id": "q2", "gold": ["d4"], "filter": {"tenant": "acme"}, "retrieved": ["d1", "d2", "d4", "d5"]}
{"query_id": "q3", "gold": ["d3"], "filter": {"tenant": "acme"}, "retrieved": ["d1", "d2", "d4", "d5"]}
{"query_id": "q4", "gold": ["d5"], "filter": {"locale": "de-DE"}, "retrieved": ["d5"]}
"#,
    );
    let v = json(
        d,
        &[
            "metric",
            "filter_false_exclusion",
            "--input",
            "queries.jsonl",
            "--docs",
            "docs.jsonl",
            "--json",
        ],
    );
    assert_eq!(v["value"], 0.5);
    assert_eq!(v["recall_at_10"], 0.5);
    assert_eq!(v["filtered_gold_recall_invalid"], 1.0);
    assert_eq!(v["excluded_gold_by_predicate"]["locale"], 1);
    assert_eq!(v["excluded_gold_by_predicate"]["tenant"], 1);
}

#[test]
fn taxonomy_errors_are_located() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(d, "tax.csv", "child,parent\ncar,vehicle\nsedan,car\n");
    write(d, "cyclic.csv", "a,b\nb,c\nc,a\n");
    write(
        d,
        "in.jsonl",
        "{\"predicted\": \"sedan\", \"true\": \"car\"}\n{\"predicted\": \"boat\", \"true\": \"car\"}\n",
    );
    let o = common::oloproof(
        d,
        &[
            "metric",
            "hierarchical_f1",
            "--input",
            "in.jsonl",
            "--taxonomy",
            "tax.csv",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        common::stderr(&o).contains(
            "in.jsonl:2: field `predicted`: unknown label `boat` (not in --taxonomy tax.csv)"
        ),
        "{}",
        common::stderr(&o)
    );
    let o = common::oloproof(
        d,
        &[
            "metric",
            "wup_similarity",
            "--input",
            "in.jsonl",
            "--taxonomy",
            "cyclic.csv",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        common::stderr(&o).contains("the taxonomy has a cycle: a → b → c → a"),
        "{}",
        common::stderr(&o)
    );
    write(
        d,
        "ok.jsonl",
        "{\"predicted\": \"sedan\", \"true\": \"car\"}\n",
    );
    let v = json(
        d,
        &[
            "metric",
            "hierarchical_f1",
            "--input",
            "ok.jsonl",
            "--taxonomy",
            "tax.csv",
            "--json",
        ],
    );
    // {sedan, car} vs {car}: hP = 1/2, hR = 1, hF1 = 2/3 (the root `vehicle` is excluded).
    assert_eq!(v["hP"], 0.5);
    assert_eq!(v["hR"], 1.0);
    assert_eq!(v["excluded_root"], "vehicle");
}

#[test]
fn nuggets_and_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(
        d,
        "n.jsonl",
        r#"{"qid": "1", "nuggets": [{"text": "x", "importance": "vital", "assignment": "support"}, {"text": "y", "importance": "okay", "assignment": "partial_support"}]}
{"qid": "2", "nuggets": [{"text": "z", "importance": "okay", "assignment": "not_support"}]}
"#,
    );
    let v = json(
        d,
        &["metric", "nugget_recall", "--input", "n.jsonl", "--json"],
    );
    assert_eq!(v["all_score"], 0.375); // mean of 0.75 and 0
    assert_eq!(v["vital_score"], 1.0); // topic 2 has no vital nugget
    assert_eq!(v["answers_without_vital_nuggets"], 1);
    write(
        d,
        "schema.json",
        r#"{"type": "object", "required": ["id"]}"#,
    );
    write(
        d,
        "s.jsonl",
        "{\"output\": \"{\\\"id\\\": 1}\"}\n{\"output\": {\"name\": 2}}\n{\"output\": \"not json\"}\n",
    );
    let v = json(
        d,
        &[
            "metric",
            "schema_validity",
            "--input",
            "s.jsonl",
            "--schema",
            "schema.json",
            "--per-item",
            "--json",
        ],
    );
    assert_eq!(v["valid"], 1);
    assert_eq!(v["items"][1]["errors"][0]["schema_path"], "/required");
    assert_eq!(v["items"][2]["errors"][0]["schema_path"], "(parse)");
}
