//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::Parser;
use oloproof_metrics::ranking::{Compat, MeasureSet};
use oloproof_trec::cli::{run_trec, TrecArgs};

/// `shared/data/trec`, found beside the repository (CI lays `shared/` next to the clone).
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/trec")
}

#[derive(Parser)]
struct Cmd {
    #[command(flatten)]
    trec: TrecArgs,
}

/// Runs `oloproof trec` with trec_eval-style arguments (the program name is added).
pub fn trec(args: &[String]) -> Result<String, oloproof_trec::TrecError> {
    let mut argv = vec!["trec".to_string()];
    argv.extend(args.iter().cloned());
    let cmd = Cmd::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    let mut out = Vec::new();
    run_trec(&cmd.trec, &mut out)?;
    Ok(String::from_utf8(out).expect("utf-8 output"))
}

/// The first differing line of two outputs, for assertion messages.
pub fn first_difference(got: &str, want: &str) -> String {
    for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        if g != w {
            return format!("line {}: got {g:?}, want {w:?}", i + 1);
        }
    }
    format!(
        "line counts differ: got {}, want {}",
        got.lines().count(),
        want.lines().count()
    )
}

/// Per-topic values: topic → measure name → value.
pub type PerTopic = HashMap<String, HashMap<String, f64>>;

/// Per-topic values from pytrec_eval-terrier (trec_eval 9.0.x's own C code) for every measure
/// it supports, through `tests/reference/pytrec_reference.py`.
pub fn pytrec(
    python: &Path,
    qrels: &Path,
    run_file: &Path,
    level: i64,
    judged_only: bool,
) -> PerTopic {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/pytrec_reference.py");
    let level = level.to_string();
    let judged_only = if judged_only { "1" } else { "0" };
    let args = [
        qrels.as_os_str(),
        run_file.as_os_str(),
        level.as_ref(),
        judged_only.as_ref(),
    ];
    let out = oloproof_reference::run(python, &script, &args, b"");
    let raw: HashMap<String, HashMap<String, Option<f64>>> =
        serde_json::from_slice(&out).expect("reference JSON");
    raw.into_iter()
        .map(|(t, m)| {
            (
                t,
                m.into_iter()
                    .map(|(k, v)| (k, v.unwrap_or(f64::NAN)))
                    .collect(),
            )
        })
        .collect()
}

/// Our per-topic values of `-m all_trec --compat 9` (pytrec_eval's semantics), unrounded.
pub fn ours(qrels: &Path, run: &Path, level: i64, judged_only: bool) -> PerTopic {
    let mut argv: Vec<String> = ["trec", "-m", "all_trec", "--compat", "9", "-l"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    argv.push(level.to_string());
    if judged_only {
        argv.push("-J".into());
    }
    argv.push(qrels.to_string_lossy().into_owned());
    argv.push(run.to_string_lossy().into_owned());
    let cmd = Cmd::parse_from(&argv);
    let set = MeasureSet::from_specs(&cmd.trec.measures, Compat::V9).expect("measures");
    let res = oloproof_trec::evaluate_files(&cmd.trec, run).expect("evaluate");
    res.topics
        .iter()
        .map(|(t, v)| {
            let m = set
                .slots()
                .iter()
                .zip(&v.values)
                .map(|(s, &x)| (s.name.clone(), x))
                .collect();
            (t.clone(), m)
        })
        .collect()
}

/// Whether a measure goes through `log`/`log2`/`exp`, whose last bit the C library decides
/// (the gain-discounted and geometric-mean measures). Every other measure is made of `+ - * /`
/// on counts and constants, which IEEE 754 rounds identically everywhere: those must agree with
/// trec_eval bit for bit, since a one-ulp difference can flip the fourth printed decimal.
pub fn uses_libm(measure: &str) -> bool {
    ["ndcg", "Rndcg", "G", "binG", "gm_"]
        .iter()
        .any(|p| measure.starts_with(p))
}

/// Compares every measure of every topic; returns a report of mismatches (empty when all
/// agree). Arithmetic measures must be bit-identical; see [`uses_libm`] for the others.
pub fn compare(label: &str, want: &PerTopic, got: &PerTopic) -> String {
    let mut report = String::new();
    let mut bad = 0;
    let mut topics: Vec<&String> = want.keys().collect();
    topics.sort();
    for t in topics {
        let Some(g) = got.get(t) else {
            let _ = writeln!(report, "{label}: topic {t} missing from our output");
            bad += 1;
            continue;
        };
        let mut names: Vec<&String> = want[t].keys().collect();
        names.sort();
        for m in names {
            let w = want[t][m];
            let ok = match g.get(m) {
                Some(&x) if x.is_nan() || w.is_nan() => x.is_nan() && w.is_nan(),
                Some(&x) if uses_libm(m) => (x - w).abs() <= 1e-9 * w.abs().max(1.0),
                Some(&x) => x.to_bits() == w.to_bits(),
                None => false,
            };
            if !ok {
                bad += 1;
                if bad <= 20 {
                    let _ = writeln!(
                        report,
                        "{label}: topic {t} {m}: ours {:?}, pytrec_eval {w:?}",
                        g.get(m)
                    );
                }
            }
        }
    }
    if bad > 20 {
        let _ = writeln!(report, "{label}: {} more mismatches", bad - 20);
    }
    if got.len() != want.len() {
        let _ = writeln!(
            report,
            "{label}: {} topics, pytrec_eval {}",
            got.len(),
            want.len()
        );
    }
    report
}
