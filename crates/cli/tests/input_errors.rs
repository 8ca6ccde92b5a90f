//! Bad configuration and bad case files: clear, located errors, exit 2, nothing run.

mod common;

use common::*;

fn with_config(edit: impl Fn(&str) -> String) -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, dir) = project("examples/support_rag");
    let path = dir.join("oloproof.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, edit(&text)).unwrap();
    (tmp, dir)
}

fn with_cases(lines: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, dir) = project("examples/support_rag");
    std::fs::write(dir.join("cases.jsonl"), lines).unwrap();
    (tmp, dir)
}

fn assert_nothing_ran(dir: &std::path::Path) {
    assert!(
        !dir.join(".oloproof/oloproof.db").exists(),
        "no run may start on bad input"
    );
}

#[test]
fn unknown_key_with_suggestion() {
    let (tmp, dir) = with_config(|t| t.replace("    top_k: 2", "    top_kk: 2"));
    let o = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!(transcript(&o, tmp.path()));
    assert_eq!(o.status.code(), Some(2));
    assert_nothing_ran(&dir);
}

#[test]
fn wrong_type() {
    let (tmp, dir) = with_config(|t| t.replace("token_budget: 40", "token_budget: forty"));
    let o = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!(transcript(&o, tmp.path()));
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn unknown_evaluator_type() {
    let (tmp, dir) = with_config(|t| t.replace("{type: ndcg, k: 6}", "{type: ndgc, k: 6}"));
    let o = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!(transcript(&o, tmp.path()));
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn no_such_evaluator_type() {
    let (tmp, dir) = with_config(|t| {
        t.replace(
            "  - {type: citation_validity}",
            "  - {type: no_such_evaluator}",
        )
    });
    let o = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!(transcript(&o, tmp.path()));
    assert_eq!(o.status.code(), Some(2));
    assert_nothing_ran(&dir);
}

/// An option the type does not take is an error naming the options it does take (it was
/// silently accepted when fifteen judged types shared one options struct).
#[test]
fn option_the_evaluator_type_does_not_take() {
    let (tmp, dir) = with_config(|t| {
        t.replace(
            "  - {type: citation_validity}",
            "  - {type: groundedness_judge, judge: default, strictness: 3}",
        )
        .replace(
            "evaluators:",
            "judges:\n  default: {provider: openai, base_url: http://127.0.0.1:9/v1, model: m, api_key_env: OLOPROOF_TEST_KEY}\nevaluators:",
        )
    });
    let o = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!(transcript(&o, tmp.path()));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("evaluators[4].strictness"),
        "{}",
        stderr(&o)
    );
    assert_nothing_ran(&dir);
    // A bad value of an option the type takes is located at the option too.
    let (tmp, dir) = with_config(|t| t.replace("{type: hit_rate, k: 2}", "{type: hit_rate, k: 0}"));
    let o = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!("evaluator_option_bad_value", transcript(&o, tmp.path()));
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn missing_field_and_bad_slice() {
    let (tmp, dir) = with_config(|t| t.replace("cases: cases.jsonl\n", ""));
    let o = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!("missing_cases_key", transcript(&o, tmp.path()));
    let (tmp, dir) = with_config(|t| t.replace("[metadata.topic,", "[topic,"));
    let o = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!("bad_slice", transcript(&o, tmp.path()));
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn bad_override() {
    let (tmp, dir) = project("examples/support_rag");
    let o = oloproof(&dir, &["run", ".", "--set", "system.rag.top_k=two"]);
    insta::assert_snapshot!(transcript(&o, tmp.path()));
    assert_eq!(o.status.code(), Some(2));
    let o = oloproof(&dir, &["run", ".", "--set", "system.rag.topk=2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("did you mean `top_k`?"),
        "{}",
        stderr(&o)
    );
    assert_nothing_ran(&dir);
}

#[test]
fn missing_project() {
    let tmp = tempfile::tempdir().unwrap();
    let o = oloproof(tmp.path(), &["run", "nowhere"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no oloproof.yaml in nowhere"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_case_lines_are_all_reported() {
    let good = r#"{"id":"a","input":{"question":"q"},"expected":{"answer":"x"}}"#;
    let text = [
        good,
        r#"{"id":"b","input":{"question":"q"},"expected":{"answer":"x"}"#,
        r#"{"input":{"question":"q"}}"#,
        r#"{"id":"a","input":{"question":"q"}}"#,
        r#"{"id":"c","input":{"question":"q"},"expected":{"relevant":[{"doc":"kb-01"}]}}"#,
        r#"{"id":"d","input":{"question":"q"},"metdata":{}}"#,
        r#"{"id":"a","input":{"question":"q"}}"#,
    ]
    .join("\n");
    let (tmp, dir) = with_cases(&text);
    let o = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!(transcript(&o, tmp.path()));
    assert_eq!(o.status.code(), Some(2));
    assert_nothing_ran(&dir);
}
