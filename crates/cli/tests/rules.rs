//! The rule evaluators (`regex`, `forbidden_terms`, `max_length`, `pii_in_answer`) through the
//! real binary, on a Python system (through the shim) that answers what each case scripts: the
//! summary table, each case's verdict and detail (masked PII, character spans, the length and
//! its unit), `max_length` in the system's own tokens (asked once, then cached; `missing` when
//! the system has no `count_tokens`), and a located error, exit 2, for each bad rule.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::{json, Value};

/// `generate` returns the case's `input.output` as the system's output (raises when
/// `input.raise`); `count_tokens` counts whitespace-separated words and logs each passage's
/// `doc_id` to `count_tokens.log`. `Uncounted` has no `count_tokens`.
const APP: &str = r#"
import os

from oloproof import Retrieval, rag_system

LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "count_tokens.log")


@rag_system(name="scripted", version="1", depth=1, top_k=1)
class Scripted:
    def retrieve(self, input, depth):
        return Retrieval(query=None, depth=depth, candidates=())

    def generate(self, input, context):
        if input.get("raise"):
            raise RuntimeError("asked to fail")
        return dict(input["output"])

    def count_tokens(self, passage):
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(passage.doc_id + "\n")
        return len((passage.text or "").split())


@rag_system(name="uncounted", version="1", depth=1, top_k=1)
class Uncounted:
    def retrieve(self, input, depth):
        return Retrieval(query=None, depth=depth, candidates=())

    def generate(self, input, context):
        return dict(input["output"])
"#;

const RULES: &str = r#"  - {type: regex, criterion: no_card_number, must_not_match: '\b\d(?:[ -]?\d){12,18}\b'}
  - {type: regex, criterion: cites_kb, field: citations, must_match: '"kb-\d+"'}
  - {type: forbidden_terms, criterion: no_promises, terms: [guaranteed, "risk free"]}
  - {type: max_length, criterion: short_answer, max: 12, unit: words}
  - {type: max_length, criterion: short_in_tokens, max: 8, unit: tokens}
  - {type: pii_in_answer}
"#;

fn cases() -> Vec<Value> {
    vec![
        json!({"id": "clean", "input": {"output": {
            "answer": "Refunds for annual plans take 14 days.", "citations": ["kb-01"]}}}),
        json!({"id": "card", "input": {"output": {
            "answer": "Your card 4111 1111 1111 1111 was refunded, GUARANTEED.", "citations": []}}}),
        json!({"id": "contact", "input": {"output": {
            "answer": "Write to jane.doe@example.com or call +33 6 12 34 56 78: it is Risk\nFree and takes fourteen days at most in the worst case.",
            "citations": ["kb-02"]}}}),
        json!({"id": "no_answer", "input": {"output": {"summary": "nothing to say"}}}),
        json!({"id": "fails", "input": {"raise": true}}),
    ]
}

/// A project with the scripted system (`class`), `evaluators`, and the cases above.
fn project(class: &str, evaluators: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("app.py"), APP).unwrap();
    let lines: Vec<String> = cases().iter().map(Value::to_string).collect();
    std::fs::write(dir.join("cases.jsonl"), lines.join("\n") + "\n").unwrap();
    std::fs::write(
        dir.join("oloproof.yaml"),
        format!(
            "system:\n  name: scripted\n  version: \"1\"\n  rag:\n    object: app:{class}\n    workers: 1\ncases: cases.jsonl\nmax_error_rate: 0.25\nevaluators:\n{evaluators}"
        ),
    )
    .unwrap();
    (tmp, dir)
}

/// The verdict of `criterion` on `case` in run `run` (`show --json`).
fn verdict(dir: &Path, run: &str, case: &str, criterion: &str) -> Value {
    let o = oloproof(dir, &["show", run, "--case", case, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let shown: Value = serde_json::from_slice(&o.stdout).unwrap();
    shown["verdicts"]
        .as_array()
        .unwrap_or_else(|| panic!("no verdicts in {shown}"))
        .iter()
        .find(|v| v["criterion"] == criterion)
        .unwrap_or_else(|| panic!("no {criterion} in {shown}"))
        .clone()
}

fn count_log(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("count_tokens.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn rules_judge_a_live_system() {
    let (tmp, dir) = project("Scripted", RULES);
    let o = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!("rules_run", transcript(&o, tmp.path()));
    assert_eq!(o.status.code(), Some(0), "{}", transcript(&o, tmp.path()));
    let run = run_id(&stdout(&o));

    // The card number: caught by the pattern (its span in characters, no matched text) and by
    // the PII detector (masked); the promise word is caught whatever its case.
    let card = verdict(&dir, &run, "card", "no_card_number");
    assert_eq!(card["status"], "fail");
    assert_eq!(
        card["detail"]["must_not_match"][0]["spans"],
        json!([[10, 29]])
    );
    let pii = verdict(&dir, &run, "card", "pii_in_answer");
    assert_eq!(pii["status"], "fail");
    assert_eq!(
        pii["detail"]["found"]["CREDIT_CARD"],
        json!({"count": 1, "spans": [{"start": 10, "end": 29, "masked": "4*** **** **** 1111"}]})
    );
    let promise = verdict(&dir, &run, "card", "no_promises");
    assert_eq!(
        promise["detail"]["found"],
        json!([{"term": "guaranteed", "count": 1, "spans": [[44, 54]]}])
    );

    // E-mail and phone, each masked; a multi-word term across a line break; lengths.
    let contact = verdict(&dir, &run, "contact", "pii_in_answer");
    let found = &contact["detail"]["found"];
    assert_eq!(found["EMAIL"]["spans"][0]["masked"], "j***.***@*******.com");
    assert_eq!(found["PHONE"]["spans"][0]["masked"], "+** * ** ** ** 78");
    let stored = contact.to_string();
    assert!(
        !stored.contains("jane.doe") && !stored.contains("12 34 56"),
        "{stored}"
    );
    let promise = verdict(&dir, &run, "contact", "no_promises");
    assert_eq!(promise["detail"]["found"][0]["term"], "risk free");
    // UAX #29 words: `jane.doe` and `example.com` are one word each, `+33` is `33`.
    let words = verdict(&dir, &run, "contact", "short_answer");
    assert_eq!(
        words["detail"],
        json!({"field": "answer", "unit": "words", "length": 26, "max": 12})
    );
    let tokens = verdict(&dir, &run, "clean", "short_in_tokens");
    assert_eq!(tokens["status"], "pass");
    assert_eq!(
        tokens["detail"],
        json!({"field": "answer", "unit": "tokens", "length": 7, "max": 8})
    );

    // No answer: excluded, naming the field; a failed generation: missing, never a verdict.
    let absent = verdict(&dir, &run, "no_answer", "short_answer");
    assert_eq!(absent["status"], "excluded");
    assert_eq!(absent["reason"], "no_field");
    assert_eq!(absent["detail"]["field"], "answer");
    let failed = verdict(&dir, &run, "fails", "no_card_number");
    assert_eq!(failed["status"], "missing");
    assert!(
        failed["error"].as_str().unwrap().contains("asked to fail"),
        "{failed}"
    );

    // The system counted the three answers once, in one call each; a second run asks nothing
    // (execution, judgment and count caches) and starts no worker.
    let asked = count_log(&dir);
    assert_eq!(asked, ["output.answer"; 3], "{asked:?}");
    let again = oloproof(&dir, &["run", "."]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(
        stdout(&again).contains("Cache: execution 4 hit/1 miss"),
        "{}",
        stdout(&again)
    );
    assert_eq!(count_log(&dir), asked);
}

#[test]
fn tokens_without_count_tokens_are_missing_with_the_systems_error() {
    let (tmp, dir) = project(
        "Uncounted",
        "  - {type: max_length, criterion: short_in_tokens, max: 8, unit: tokens}\n  - {type: max_length, criterion: short_in_characters, max: 80}\n",
    );
    let o = oloproof(&dir, &["run", ".", "--json"]);
    // Every token count is missing: more than max_error_rate, so the run is incomplete.
    assert_eq!(o.status.code(), Some(4), "{}", transcript(&o, tmp.path()));
    let summary: Value = serde_json::from_slice(&o.stdout).unwrap();
    let tokens = criterion(&summary, "short_in_tokens");
    assert_eq!(tokens["missing"], 4, "{tokens}");
    let chars = criterion(&summary, "short_in_characters");
    assert_eq!(chars["observed"], 3, "{chars}");
    let run = summary["run_id"].as_str().unwrap();
    let v = verdict(&dir, run, "clean", "short_in_tokens");
    assert_eq!(v["status"], "missing");
    let error = v["error"].as_str().unwrap();
    assert!(
        error.starts_with("counting the tokens of `answer`: count_tokens: NotImplementedError"),
        "{error}"
    );
}

/// A bad rule: exit 2, located at the key, with what was expected and a fix; nothing runs.
fn bad_rule(name: &str, rule: &str) {
    let (tmp, dir) = project("Scripted", &format!("  - {rule}\n"));
    let o = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!(name, transcript(&o, tmp.path()));
    assert_eq!(o.status.code(), Some(2), "{}", transcript(&o, tmp.path()));
    assert!(
        !dir.join(".oloproof/oloproof.db").exists(),
        "no run may start on a bad rule"
    );
}

#[test]
fn a_pattern_that_does_not_compile() {
    bad_rule(
        "rules_regex_does_not_compile",
        r#"{type: regex, must_match: ['\d+', '(\d+ days']}"#,
    );
}

#[test]
fn a_pattern_with_look_around() {
    bad_rule(
        "rules_regex_look_around",
        r#"{type: regex, must_not_match: 'refund(?! denied)'}"#,
    );
}

#[test]
fn an_unknown_regex_flag() {
    bad_rule(
        "rules_regex_unknown_flag",
        "{type: regex, must_match: refund, flags: ig}",
    );
}

#[test]
fn a_regex_rule_without_patterns() {
    bad_rule("rules_regex_no_pattern", "{type: regex, flags: i}");
}

#[test]
fn an_empty_list_of_forbidden_terms() {
    bad_rule(
        "rules_forbidden_terms_empty",
        "{type: forbidden_terms, terms: []}",
    );
}

#[test]
fn a_max_length_of_zero() {
    bad_rule("rules_max_length_zero", "{type: max_length, max: 0}");
}

#[test]
fn an_unknown_length_unit() {
    bad_rule(
        "rules_max_length_unknown_unit",
        "{type: max_length, max: 80, unit: sentences}",
    );
}

#[test]
fn an_unknown_pii_entity_type() {
    bad_rule(
        "rules_pii_unknown_entity",
        "{type: pii_in_answer, entities: [EMAIL, credit_card, PASSPORT]}",
    );
}
