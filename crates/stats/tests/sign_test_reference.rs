//! `oloproof_stats::sign_test` and the exact interval of a pairwise win rate against
//! `scipy.stats.binomtest` (`sign_test_reference.py` beside this file) on random win/loss
//! counts from a fixed seed: the two-sided p-value to 1e-9 relative, and
//! `clopper_pearson(wins, wins + losses)` against `binomtest(...).proportion_ci(method="exact")`
//! to its root finder's accuracy (brentq's absolute `xtol` of 2e-12: 1e-11 here). Skipped with a
//! note without `OLOPROOF_REFERENCE_PYTHON`, unless `OLOPROOF_REQUIRE_REFERENCES=1`.

use std::path::Path;

use oloproof_reference::{reference_python, run_lines, SplitMix64};
use oloproof_stats::{clopper_pearson, sign_test};
use serde_json::json;

#[test]
fn sign_test_and_win_rate_interval_match_scipy_binomtest() {
    let Some(python) = reference_python("scipy binomtest comparison") else {
        return;
    };
    let mut rng = SplitMix64(0x5167);
    let levels = [0.8, 0.9, 0.95, 0.99];
    let mut cases = Vec::new();
    for i in 0..1200 {
        // n log-uniform in 1..=5,000; the share of wins near ½, anywhere, or unanimous.
        let n = (5_000f64.powf(rng.unit())).floor().max(1.0) as u64;
        let wins = match i % 6 {
            0 => 0,
            1 => n,
            2 | 3 => {
                let spread = (n as f64).sqrt() * 2.0;
                let w = n as f64 / 2.0 + (rng.unit() - 0.5) * 2.0 * spread;
                w.round().clamp(0.0, n as f64) as u64
            }
            _ => rng.below_u64(n + 1),
        };
        let confidence = levels[rng.below(levels.len())];
        cases.push((wins, n - wins, confidence));
    }
    let inputs: Vec<_> = cases
        .iter()
        .map(|&(wins, losses, confidence)| {
            json!({"wins": wins, "losses": losses, "confidence": confidence})
        })
        .collect();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sign_test_reference.py");
    let answers = run_lines(&python, &script, &inputs);
    for (&(wins, losses, confidence), answer) in cases.iter().zip(&answers) {
        let what = format!("({wins} wins, {losses} losses, {confidence})");
        let ours = sign_test(wins, losses).expect("n > 0").p_value;
        let theirs = answer["p_value"].as_f64().expect("a p-value");
        let tolerance = 1e-9 * ours.abs().max(theirs.abs()) + 1e-300;
        assert!(
            (ours - theirs).abs() <= tolerance,
            "{what}: p ours {ours:e}, scipy {theirs:e}"
        );
        let ci = clopper_pearson(wins, wins + losses, confidence).expect("n > 0");
        for (bound, theirs) in [(ci.lo, &answer["ci"][0]), (ci.hi, &answer["ci"][1])] {
            let theirs = theirs.as_f64().expect("a bound");
            assert!(
                (bound - theirs).abs() <= 1e-11,
                "{what}: interval bound ours {bound:e}, scipy {theirs:e}"
            );
        }
    }
}
