//! `oloproof metric` for the ingestion group (CER, WER, TEDS, near-duplicates, PII, …) through
//! the real binary, with seed 000's worked examples.

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

const MARS: &str = r#"{"reference": "Mars has two moons, Phobos and Deimos.", "hypothesis": "Mars has two m00ns, Phobos and Deirnos."}
"#;

#[test]
fn seed_mars_cer_and_wer() {
    let cer = json_of(MARS, &["cer"]);
    assert_eq!(format!("{:.3}", cer["value"].as_f64().unwrap()), "0.105");
    assert_eq!(cer["reference_length"], 38);
    let wer = json_of(MARS, &["wer", "--per-item"]);
    assert_eq!(format!("{:.3}", wer["value"].as_f64().unwrap()), "0.286");
    assert_eq!(wer["items"][0]["substitutions"], 2);
    assert_eq!(wer["items"][0]["hits"], 5);
}

#[test]
fn seed_near_duplicates() {
    let docs = r#"{"id": "d1", "text": "Mars has two moons, Phobos and Deimos.", "group": "g"}
{"id": "d2", "text": "Mars has two moons, Phobos and Deimos!", "group": "g"}
{"id": "d3", "text": "Curiosity rover landed on Mars in 2012."}
"#;
    let v = json_of(docs, &["near_duplicates", "--per-item"]);
    assert_eq!(v["value"], 1.0);
    assert_eq!(
        (v["bands"].as_u64(), v["rows"].as_u64()),
        (Some(9), Some(13))
    );
    assert_eq!(v["items"][0]["a"], "d1");
    assert_eq!(v["items"][0]["b"], "d2");
}

#[test]
fn teds_pii_and_friends() {
    let t = r#"{"pred_html": "<table><tr><td>a</td><td>c</td></tr></table>", "true_html": "<table><tr><td>a</td><td>b</td></tr></table>"}
"#;
    let v = json_of(t, &["teds"]);
    assert!((v["value"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(json_of(t, &["teds_s"])["value"], 1.0);

    let pii = r#"{"predicted": [{"start": 0, "end": 4, "type": "NAME"}, {"start": 10, "end": 20, "type": "EMAIL"}], "gold": [{"start": 0, "end": 4, "type": "NAME"}, {"start": 10, "end": 21, "type": "EMAIL"}]}
"#;
    let v = json_of(pii, &["pii"]);
    assert_eq!(v["value"], 0.5);
    assert_eq!(v["per_type"]["EMAIL"]["recall"], 0.0);
    assert_eq!(json_of(pii, &["pii", "--match", "overlap"])["value"], 1.0);

    let z = r#"{"tokens_before": 1000, "tokens_after": 250}
{"tokens_before": 600, "tokens_after": 150}
"#;
    assert_eq!(json_of(z, &["compression_ratio"])["value"], 4.0);
    let n = "{\"text\": \"caf\u{e9}\"}\n{\"text\": \"\u{fb01}le\"}\n";
    assert_eq!(json_of(n, &["nfc_nfkc_agreement"])["value"], 0.5);
}

#[test]
fn bad_rows_are_located() {
    let (out, _tmp) = run("{\"reference\": \"a\"}\n", &["wer"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("in.jsonl:1: field `hypothesis`: missing field"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn chunking_checks() {
    let doc = "# Policy\\n## Refunds\\n- a\\n- b\\nend\\n";
    // Offsets: "# Policy\n" 0..9, "## Refunds\n" 9..20, "- a\n" 20..24, "- b\n" 24..28.
    let rows = format!(
        "{{\"document\": \"{doc}\", \"chunks\": [[0, 22], [22, 33]]}}\n{{\"document\": \"{doc}\", \"chunks\": [[0, 20], [20, 33]]}}\n"
    );
    let v = json_of(&rows, &["chunk_boundary_violations"]);
    assert_eq!(v["value"], 0.5);
    assert_eq!(v["per_kind"]["list"], 1);

    let rows = format!(
        "{{\"document\": \"{doc}\", \"chunks\": [{{\"start\": 20, \"heading_path\": [\"Policy\", \"Refunds\"]}}, {{\"start\": 0, \"heading_path\": []}}]}}\n"
    );
    let v = json_of(&rows, &["heading_path_preservation", "--per-item"]);
    assert_eq!(v["value"], 0.5);
    assert_eq!(v["items"][1]["expected"][0], "Policy");

    let rows = "{\"source\": \"doc-1#p3\"}\n{\"source\": \"\"}\n{\"source\": null}\n{\"source\": \"doc-9\"}\n";
    assert_eq!(json_of(rows, &["attribution_fidelity"])["value"], 0.5);
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("in.jsonl"), rows).unwrap();
    std::fs::write(tmp.path().join("known.txt"), "doc-1#p3\n").unwrap();
    let out = oloproof(
        tmp.path(),
        &[
            "metric",
            "attribution_fidelity",
            "--input",
            "in.jsonl",
            "--sources",
            "known.txt",
            "--json",
        ],
    );
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["value"], 0.25);
}

#[test]
fn language_id_per_language() {
    let rows = "{\"gold\": \"fr\", \"predicted\": \"fr\"}\n{\"gold\": \"fr\", \"predicted\": \"en\"}\n{\"gold\": \"en\", \"predicted\": \"en\"}\n{\"gold\": \"de\", \"predicted\": \"en\"}\n";
    let v = json_of(rows, &["language_id"]);
    // en: P 1/3, R 1, F1 0.5; fr: P 1, R 0.5, F1 2/3; de: 0. Macro F1 = (0.5 + 2/3 + 0) / 3.
    assert!((v["value"].as_f64().unwrap() - (0.5 + 2.0 / 3.0) / 3.0).abs() < 1e-12);
    assert_eq!(v["per_language"]["fr"]["recall"], 0.5);
    assert_eq!(v["accuracy"], 0.5);
}
