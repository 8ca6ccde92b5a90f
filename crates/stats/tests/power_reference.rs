//! `oloproof_stats::power` against statsmodels (`power_reference.py` beside this file) on
//! random designs from a fixed seed: Cohen's h, power at a given size (to 1e-9) and the size
//! that reaches a target power (to 1e-4 relative: statsmodels' root finder stops at
//! `xtol = 1e-5`, ours at machine precision). Skipped with a note without
//! `OLOPROOF_REFERENCE_PYTHON`, unless `OLOPROOF_REQUIRE_REFERENCES=1`.

use std::path::Path;

use oloproof_reference::{reference_python, run_lines, SplitMix64};
use oloproof_stats::power::{cohen_h, power, sample_size, Design};
use serde_json::json;

#[test]
fn power_and_sample_size_match_statsmodels() {
    let Some(python) = reference_python("statsmodels power comparison") else {
        return;
    };
    let mut rng = SplitMix64(0x90e7);
    let mut cases = Vec::new();
    let mut designs = Vec::new();
    for i in 0..360 {
        let alpha = [0.01, 0.05, 0.1][i % 3];
        let target = 0.5 + 0.45 * rng.unit();
        let n = 3.0 + (rng.unit() * 300.0).floor();
        let ratio = [1.0, 1.0, 0.5, 2.0, 1.7][i % 5];
        let sign = if rng.unit() < 0.5 { -1.0 } else { 1.0 };
        let (case, design) = match i % 3 {
            0 => {
                let p1 = 0.05 + 0.9 * rng.unit();
                let p2 = (p1 + sign * (0.03 + 0.3 * rng.unit())).clamp(0.01, 0.99);
                (
                    json!({"design": "proportions", "p1": p1, "p2": p2, "n": n, "ratio": ratio,
                           "alpha": alpha, "target": target}),
                    Design::Proportions { ratio },
                )
            }
            1 => {
                let d = sign * (0.1 + 1.2 * rng.unit());
                (
                    json!({"design": "means", "d": d, "n": n, "ratio": ratio, "alpha": alpha,
                           "target": target}),
                    Design::MeansIndependent { ratio },
                )
            }
            _ => {
                let d = sign * (0.1 + 1.2 * rng.unit());
                (
                    json!({"design": "paired", "d": d, "n": n, "alpha": alpha,
                           "target": target}),
                    Design::Paired,
                )
            }
        };
        cases.push(case);
        designs.push(design);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/power_reference.py");
    let answers = run_lines(&python, &script, &cases);
    let mut solved = 0;
    let mut compared = 0;
    for ((case, answer), design) in cases.iter().zip(&answers).zip(&designs) {
        let what = format!("{case}");
        let effect = match design {
            Design::Proportions { .. } => {
                let h = cohen_h(case["p1"].as_f64().unwrap(), case["p2"].as_f64().unwrap());
                let theirs = answer["effect_size"].as_f64().unwrap();
                assert!((h - theirs).abs() < 1e-14, "{what}: h {h} vs {theirs}");
                h
            }
            _ => case["d"].as_f64().unwrap(),
        };
        let alpha = case["alpha"].as_f64().unwrap();
        let n = case["n"].as_f64().unwrap();
        let ours = power(*design, effect, n, alpha).expect("valid");
        match answer["power"].as_f64() {
            Some(theirs) => {
                assert!(
                    (ours - theirs).abs() < 1e-9,
                    "{what}: power {ours} vs {theirs}"
                );
                compared += 1;
            }
            // scipy's nctdtr gives NaN far in the tail; ours must then be ~1.
            None => assert!(ours > 1.0 - 1e-9, "{what}: power {ours}, scipy NaN"),
        }
        let theirs = answer["nobs"].as_f64().unwrap_or(f64::NAN);
        match sample_size(*design, effect, alpha, case["target"].as_f64().unwrap()) {
            Ok(ours) => {
                assert!(
                    (ours - theirs).abs() <= 1e-4 * theirs.max(1.0),
                    "{what}: nobs {ours} vs {theirs}"
                );
                solved += 1;
            }
            Err(e) => assert!(
                theirs.is_nan() || theirs <= 2.0 + 1e-6,
                "{what}: {e} vs {theirs}"
            ),
        }
    }
    assert!(solved > 300, "only {solved} solved");
    assert!(compared > 300, "only {compared} powers compared");
}
