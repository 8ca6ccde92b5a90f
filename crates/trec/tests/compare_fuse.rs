//! `--compare` and `fuse` end to end.

mod common;

use clap::Parser;
use common::{data_dir, trec};
use oloproof_trec::cli::{run_fuse, FuseArgs};

#[derive(Parser)]
struct FuseCmd {
    #[command(flatten)]
    fuse: FuseArgs,
}

fn fuse(args: &[&str]) -> String {
    let mut argv = vec!["fuse"];
    argv.extend_from_slice(args);
    let cmd = FuseCmd::try_parse_from(&argv).expect("fuse arguments");
    let mut out = Vec::new();
    run_fuse(&cmd.fuse, &mut out).expect("fuse");
    String::from_utf8(out).expect("utf-8")
}

/// The seed-000 example: dense [d3,d7,d1,d4,d2,d9,d10], sparse [d2,d3,d8,d1,d11,d4,d6],
/// RRF with k = 60 ranks d3 (0.03252), d2 (0.03178), d1 (0.03150) first.
#[test]
fn rrf_seed_000_through_files() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, docs: &[&str]| {
        let text: String = docs
            .iter()
            .enumerate()
            .map(|(i, d)| format!("q1 Q0 {d} {} {} {name}\n", i + 1, 10 - i))
            .collect();
        let p = tmp.path().join(name);
        std::fs::write(&p, text).expect("write run");
        p.to_string_lossy().into_owned()
    };
    let dense = write("dense", &["d3", "d7", "d1", "d4", "d2", "d9", "d10"]);
    let sparse = write("sparse", &["d2", "d3", "d8", "d1", "d11", "d4", "d6"]);
    let out = fuse(&[&dense, &sparse, "--method", "rrf", "--k", "60"]);
    let top: Vec<(String, String)> = out
        .lines()
        .take(3)
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (
                f[2].to_string(),
                format!("{:.5}", f[4].parse::<f64>().expect("score")),
            )
        })
        .collect();
    assert_eq!(
        top,
        [
            ("d3".to_string(), "0.03252".to_string()),
            ("d2".to_string(), "0.03178".to_string()),
            ("d1".to_string(), "0.03150".to_string())
        ]
    );
    assert!(out.lines().all(|l| l.ends_with(" fused")));
    // Every method runs, and the output is a valid run trec reads back.
    for m in [
        "combsum", "combmnz", "combmax", "combmin", "combmed", "combanz", "wsum", "convex",
    ] {
        let out = fuse(&[&dense, &sparse, "--method", m, "--norm", "zscore"]);
        assert_eq!(out.lines().count(), 10, "{m}");
    }
    let fused = tmp.path().join("fused.run");
    let fused_s = fused.to_string_lossy().into_owned();
    assert_eq!(fuse(&[&dense, &sparse, "-o", &fused_s]), "");
    let qrels = tmp.path().join("qrels");
    std::fs::write(&qrels, "q1 0 d3 1\nq1 0 d2 1\n").expect("write qrels");
    let eval = trec(&[
        "-m".into(),
        "P.2".into(),
        qrels.to_string_lossy().into_owned(),
        fused_s,
    ])
    .expect("evaluate fused run");
    assert_eq!(eval, "P_2                   \tall\t1.0000\n");
}

#[test]
fn compare_names_test_and_correction() {
    let dir = data_dir().join("robust03/runs");
    let qrels = data_dir().join("robust03/robust03_qrels.txt");
    let args: Vec<String> = [
        "--compare",
        "-m",
        "map",
        "-m",
        "P.10",
        qrels.to_str().expect("path"),
        dir.join("input.InexpC2.gz").to_str().expect("path"),
        dir.join("input.pircRBa1.gz").to_str().expect("path"),
        dir.join("input.Sel50.gz").to_str().expect("path"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = trec(&args).expect("compare");
    assert!(
        out.contains("Fisher randomization test (10000 permutations, seed 0, two-sided)"),
        "{out}"
    );
    assert!(out.contains("correction: Holm over 4 comparisons"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("map ")), "{out}");
    assert!(out.lines().any(|l| l.starts_with("P_10 ")), "{out}");
    assert_eq!(out, trec(&args).expect("compare again"), "deterministic");
    let mut t = args.clone();
    t.splice(0..0, ["--test".to_string(), "t-test".to_string()]);
    assert!(trec(&t).expect("t-test").contains("paired t-test"));
}
