//! `oloproof metric` for the classification group: seqeval, classification_report,
//! cohen_kappa, krippendorff_alpha, ece, latency and friends, through the real binary.

mod common;

use common::*;
use serde_json::Value;

fn run(lines: &str, args: &[&str]) -> (std::process::Output, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("in.jsonl"), lines).unwrap();
    let mut full = vec!["metric"];
    full.extend_from_slice(&args[..1]);
    full.extend_from_slice(&["--input", "in.jsonl"]);
    full.extend_from_slice(&args[1..]);
    let out = oloproof(tmp.path(), &full);
    (out, tmp)
}

fn json_of(lines: &str, args: &[&str]) -> Value {
    let mut with_json = args.to_vec();
    with_json.push("--json");
    let (out, _tmp) = run(lines, &with_json);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

const NER: &str = r#"{"true": ["O", "O", "B-MISC", "I-MISC", "B-MISC", "O", "O"], "pred": ["O", "O", "B-MISC", "I-MISC", "B-MISC", "I-MISC", "O"]}
{"true": ["B-PER", "I-PER", "O"], "pred": ["B-PER", "I-PER", "O"]}
"#;

#[test]
fn seqeval_matches_its_docstring() {
    let v = json_of(NER, &["seqeval"]);
    assert_eq!(v["metric"], "seqeval");
    assert_eq!(v["value"], 0.6666666666666666);
    let v = json_of(NER, &["seqeval", "--average", "macro"]);
    assert_eq!(v["value"], 0.75);
    assert_eq!(v["per_type"][1]["type"], "PER");
    let v = json_of(NER, &["seqeval", "--mode", "strict", "--scheme", "IOB2"]);
    assert_eq!(v["value"], 0.6666666666666666);
}

#[test]
fn seqeval_strict_needs_a_scheme_and_locates_bad_tags() {
    let (out, _tmp) = run(NER, &["seqeval", "--mode", "strict"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--scheme"), "{}", stderr(&out));
    let bad = "{\"true\": [\"B-PER\"], \"pred\": [\"E-PER\"]}\n";
    let (out, _tmp) = run(bad, &["seqeval", "--mode", "strict", "--scheme", "IOB2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("in.jsonl:1: field `pred`"),
        "{}",
        stderr(&out)
    );
    let ragged = "{\"true\": [\"B-PER\", \"O\"], \"pred\": [\"B-PER\"]}\n";
    let (out, _tmp) = run(ragged, &["seqeval"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("in.jsonl:1: field `pred`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn cohen_kappa_with_weights() {
    let rows: String = [
        ("negative", "negative"),
        ("positive", "positive"),
        ("negative", "negative"),
        ("neutral", "neutral"),
        ("positive", "negative"),
    ]
    .iter()
    .map(|(a, b)| format!("{{\"rater_a\": \"{a}\", \"rater_b\": \"{b}\"}}\n"))
    .collect();
    let v = json_of(&rows, &["cohen_kappa"]);
    assert_eq!(v["value"], 0.6875);
    // Numbers are ordered numerically for the weights: 2 and 10 are adjacent categories.
    let rows = "{\"rater_a\": 1, \"rater_b\": 1}\n{\"rater_a\": 2, \"rater_b\": 10}\n{\"rater_a\": 10, \"rater_b\": 10}\n{\"rater_a\": 2, \"rater_b\": 2}\n";
    let linear = json_of(rows, &["cohen_kappa", "--weights", "linear"]);
    let quadratic = json_of(rows, &["cohen_kappa", "--weights", "quadratic"]);
    assert!(quadratic["value"].as_f64() > linear["value"].as_f64());
    let (out, _tmp) = run(rows, &["cohen_kappa", "--weights", "cubic"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn krippendorff_docstring_example() {
    // krippendorff's docstring data, one unit per line.
    let coders = [
        "nan nan nan nan nan 3 4 1 2 1 1 3 3 nan 3",
        "1 nan 2 1 3 3 4 3 nan nan nan nan nan nan nan",
        "nan nan 2 1 3 4 4 nan 2 1 1 3 3 nan 4",
    ];
    let grid: Vec<Vec<&str>> = coders.iter().map(|c| c.split(' ').collect()).collect();
    let rows: String = (0..15)
        .map(|u| {
            let vals: Vec<String> = grid
                .iter()
                .map(|c| {
                    if c[u] == "nan" {
                        "null".into()
                    } else {
                        c[u].to_string()
                    }
                })
                .collect();
            format!("{{\"ratings\": [{}]}}\n", vals.join(", "))
        })
        .collect();
    let v = json_of(&rows, &["krippendorff_alpha"]);
    assert!((v["value"].as_f64().unwrap() - 0.691358).abs() < 1e-6);
    let v = json_of(&rows, &["krippendorff_alpha", "--level", "interval"]);
    assert!((v["value"].as_f64().unwrap() - 0.810845).abs() < 1e-6);
}

#[test]
fn ece_bins_and_reliability_diagram() {
    let rows = "{\"confidence\": 0.95, \"correct\": true}\n{\"confidence\": 0.9, \"correct\": 1}\n{\"confidence\": 0.85, \"correct\": false}\n{\"confidence\": 0.6, \"correct\": true}\n{\"confidence\": 0.3, \"correct\": false}\n";
    let v = json_of(rows, &["ece"]);
    let expected = (0.3 + 0.4 + 0.85 + 2.0 * (1.0 - 0.925)) / 5.0;
    assert!((v["value"].as_f64().unwrap() - expected).abs() < 1e-12);
    assert_eq!(v["reliability"].as_array().unwrap().len(), 10);
    assert_eq!(v["reliability"][3]["count"], 1);
    let v = json_of(rows, &["ece", "--bins", "2"]);
    assert_eq!(v["reliability"].as_array().unwrap().len(), 2);
    let (out, _tmp) = run("{\"confidence\": 1.2, \"correct\": true}\n", &["ece"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("in.jsonl:1: field `confidence`"));
}

#[test]
fn latency_quantiles_per_stage() {
    let rows: String = [120, 80, 95, 300, 110]
        .iter()
        .map(|ms| format!("{{\"latency_ms\": {ms}, \"stage\": \"retrieve\"}}\n"))
        .collect();
    let v = json_of(&rows, &["latency"]);
    assert_eq!(v["p50"], 110.0);
    assert_eq!(v["value"], v["p99"]);
    assert_eq!(v["stages"]["retrieve"]["p95"], 264.0);
    let v = json_of(&rows, &["latency", "--method", "lower", "--q", "0.95"]);
    assert_eq!(v["value"], 120.0);
}

#[test]
fn small_group_metrics() {
    let v = json_of(
        "{\"true\": \"cat\", \"pred\": \"cat\"}\n{\"true\": \"dog\", \"pred\": \"cat\"}\n",
        &["classification_report"],
    );
    assert_eq!(v["accuracy"], 0.5);
    let v = json_of(
        "{\"expected_route\": \"no_retrieval\", \"route\": \"no_retrieval\"}\n{\"expected_route\": \"iterative\", \"route\": \"one_shot\"}\n",
        &["routing_accuracy"],
    );
    assert_eq!(v["value"], 0.5);
    assert!(v["interval"].is_array());
    let v = json_of(
        "{\"gold\": [[\"Curie\", \"born_in\", \"Warsaw\"]], \"predicted\": [[\"Curie\", \"born_in\", \"Warsaw\"], [\"Curie\", \"born_in\", \"Paris\"]]}\n",
        &["relation_f1"],
    );
    assert_eq!(v["precision"], 0.5);
    let v = json_of(
        "{\"samples\": [\"Paris\", \"paris.\", \"Lyon\", \"The Paris\"]}\n",
        &["self_consistency", "--per-item"],
    );
    assert_eq!(v["value"], 0.75);
    let v = json_of(
        "{\"expected_abstention\": true, \"abstained\": true}\n{\"expected_abstention\": false, \"abstained\": true}\n",
        &["abstention"],
    );
    assert_eq!(v["precision"], 0.5);
    assert_eq!(v["recall"], 1.0);
    let v = json_of(
        "{\"x\": 1, \"y\": 5}\n{\"x\": 2, \"y\": 6}\n{\"x\": 3, \"y\": 7}\n{\"x\": 4, \"y\": 8}\n{\"x\": 5, \"y\": 7}\n",
        &["kendall_tau"],
    );
    assert!((v["value"].as_f64().unwrap() - 0.7378647873726218).abs() < 1e-12);
}

#[test]
fn sample_size_from_pilot_outcomes() {
    // 20 pilot cases: baseline passes 14, candidate 16 (unpaired: 70 % vs 80 %).
    let rows: String = (0..20)
        .map(|i| {
            let b = u8::from(i < 14);
            let c = u8::from(i < 16);
            format!("{{\"baseline\": {b}, \"candidate\": {c}}}\n")
        })
        .collect();
    let v = json_of(&rows, &["sample_size", "--design", "unpaired"]);
    // statsmodels: NormalIndPower().solve_power(proportion_effectsize(0.8, 0.7), power=0.8,
    // alpha=0.05) = 291.69 per group.
    assert_eq!(v["value"], 292.0);
    assert_eq!(v["effect_kind"], "Cohen's h");
    let v = json_of(&rows, &["sample_size", "--mde", "0.2"]);
    assert!(v["value"].as_f64().unwrap() > 2.0);
    let same = "{\"baseline\": 1, \"candidate\": 1}\n{\"baseline\": 0, \"candidate\": 0}\n";
    let (out, _tmp) = run(same, &["sample_size"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--mde"), "{}", stderr(&out));
}
