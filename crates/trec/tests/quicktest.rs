//! trec_eval's own `make quicktest`: the fixtures and expected outputs of trec_eval 10.0,
//! compared byte for byte.

mod common;

use common::{data_dir, first_difference, trec};

fn check(args: &str, expected: &str) {
    let dir = data_dir().join("trec_eval_fixtures");
    let argv: Vec<String> = args
        .split_whitespace()
        .map(|a| {
            if dir.join(a).is_file() {
                dir.join(a).to_string_lossy().into_owned()
            } else {
                a.to_string()
            }
        })
        .collect();
    let want = std::fs::read_to_string(dir.join(expected)).expect("expected output");
    let got = trec(&argv).unwrap_or_else(|e| panic!("{args}: {e}"));
    assert!(
        got == want,
        "trec_eval {args} differs from {expected}: {}",
        first_difference(&got, &want)
    );
}

#[test]
fn out_test() {
    check("qrels.test results.test", "out.test");
}

#[test]
fn out_test_with_comments() {
    check("qrels.test.with-comments results.test", "out.test");
}

#[test]
fn out_comment_test() {
    check(
        "qrels.comment.test results.comment.test",
        "out.comment.test",
    );
}

#[test]
fn out_test_a() {
    check("-m all_trec qrels.test results.test", "out.test.a");
}

#[test]
fn out_test_aq() {
    check("-m all_trec -q qrels.test results.test", "out.test.aq");
}

#[test]
fn out_test_aqc() {
    check("-m all_trec -q -c qrels.test results.trunc", "out.test.aqc");
}

#[test]
fn out_test_aqcm() {
    check(
        "-m all_trec -q -c -M100 qrels.test results.trunc",
        "out.test.aqcM",
    );
}

#[test]
fn out_test_aql() {
    check(
        "-m all_trec -mrelstring.20 -q -l2 qrels.rel_level results.test",
        "out.test.aql",
    );
}

#[test]
fn out_test_meas_params() {
    check(
        "-q -miprec_at_recall..10,.20,.25,.75,.50 -m P.5,7,3 -m recall.20,2000 \
         -m Rprec_mult.5.0,0.2,0.35 -mutility.2,-1,0,0 -m 11pt_avg..25,.5,.75 \
         -mndcg.1=3,2=9,4=4.5 -mndcg_cut.10,20,23.4 -msuccess.2,5,20 qrels.test results.test",
        "out.test.meas_params",
    );
}
