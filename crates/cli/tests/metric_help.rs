//! `oloproof metric --help` and `oloproof metric NAME --help` are clap's help (exit 0), built
//! from the library's metric specs; a typo in an option is a usage error (exit 2) with a
//! did-you-mean.

mod common;

use common::*;

#[test]
fn metric_help_lists_the_metrics() {
    let tmp = tempfile::tempdir().unwrap();
    let o = oloproof(tmp.path(), &["metric", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    insta::assert_snapshot!("metric_help", transcript(&o, tmp.path()));
}

#[test]
fn metric_name_help_shows_fields_and_options() {
    let tmp = tempfile::tempdir().unwrap();
    let o = oloproof(tmp.path(), &["metric", "filter_decision", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    insta::assert_snapshot!("metric_name_help", transcript(&o, tmp.path()));
}

#[test]
fn metric_option_typo_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("in.jsonl"),
        "{\"gold\": [\"d1\"], \"baseline\": [\"d1\"], \"expanded\": [\"d1\"]}\n",
    )
    .unwrap();
    let o = oloproof(
        tmp.path(),
        &[
            "metric",
            "expansion_uplift",
            "--input",
            "in.jsonl",
            "--kk",
            "5",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    insta::assert_snapshot!("metric_option_typo", transcript(&o, tmp.path()));
}
