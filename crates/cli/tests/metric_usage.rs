//! `oloproof metric` and run flags: bad input gets a located message and exit 2.

mod common;

use common::*;

#[test]
fn metric_usage_errors_are_clear() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in.jsonl");
    std::fs::write(&input, "{\"prediction\":\"a\",\"reference\":\"a\"}\n{\"prediction\":3,\"reference\":\"b\"}\n{oops\n").unwrap();
    let path = input.to_str().unwrap();

    let o = oloproof(tmp.path(), &["metric", "token_f", "--input", path]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown metric `token_f`; did you mean `token_f1`?"),
        "{}",
        stderr(&o)
    );

    let o = oloproof(
        tmp.path(),
        &["metric", "token_f1", "--input", path, "--bins", "3"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("`token_f1` has no option `--bins`"),
        "{}",
        stderr(&o)
    );

    let o = oloproof(tmp.path(), &["metric", "token_f1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("needs --input FILE.jsonl"),
        "{}",
        stderr(&o)
    );

    let o = oloproof(tmp.path(), &["metric", "token_f1", "--input", path]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("in.jsonl:3:2: malformed JSON"),
        "{}",
        stderr(&o)
    );

    std::fs::write(
        &input,
        "{\"prediction\":\"a\",\"reference\":\"a\"}\n{\"prediction\":3,\"reference\":\"b\"}\n",
    )
    .unwrap();
    let o = oloproof(tmp.path(), &["metric", "token_f1", "--input", path]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("in.jsonl:2: field `prediction`: expected a string, found a number"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn run_flag_errors() {
    let (_tmp, dir) = project("examples/support_rag");
    let o = oloproof(&dir, &["run", ".", "--max-cost=-1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--max-cost takes a non-negative amount"),
        "{}",
        stderr(&o)
    );
    let o = oloproof(&dir, &["run", ".", "--max-error-rate", "2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is not a share"), "{}", stderr(&o));
}
