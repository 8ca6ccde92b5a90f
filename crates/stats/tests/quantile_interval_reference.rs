//! `oloproof_stats::quantile_interval` against `scipy.stats.quantile_test(x, p=p)
//! .confidence_interval(confidence)` (`quantile_interval_reference.py` beside this file) on
//! random samples from a fixed seed: sizes from 1 to 3,000 (so that bounds are missing, as
//! scipy's NaN, for the small ones), quantile levels 0.5, 0.9, 0.95, 0.99 and random ones,
//! confidences 0.8 to 0.99, with ties. The bounds are order statistics, so they must be equal
//! exactly. Skipped with a note without `OLOPROOF_REFERENCE_PYTHON`, unless
//! `OLOPROOF_REQUIRE_REFERENCES=1`.

use std::path::Path;

use oloproof_reference::{reference_python, run_lines, SplitMix64};
use oloproof_stats::quantile_interval;
use serde_json::json;

#[test]
fn quantile_interval_matches_scipy_quantile_test() {
    let Some(python) = reference_python("scipy quantile_test comparison") else {
        return;
    };
    let mut rng = SplitMix64(0x9e57);
    let levels = [0.5, 0.9, 0.95, 0.99];
    let confidences = [0.8, 0.9, 0.95, 0.99];
    let mut cases = Vec::new();
    for i in 0..400 {
        let n = (3_000f64.powf(rng.unit())).floor().max(1.0) as usize;
        let p = if i % 5 == 4 {
            0.01 + 0.98 * rng.unit()
        } else {
            levels[rng.below(levels.len())]
        };
        let confidence = confidences[rng.below(confidences.len())];
        // Latencies: log-normal-ish, rounded to 0.1 ms on every third sample (ties).
        let x: Vec<f64> = (0..n)
            .map(|_| {
                let v = 20.0 * (3.0 * rng.unit()).exp();
                if i % 3 == 0 {
                    (v * 10.0).round() / 10.0
                } else {
                    v
                }
            })
            .collect();
        cases.push((x, p, confidence));
    }
    let inputs: Vec<_> = cases
        .iter()
        .map(|(x, p, confidence)| json!({"x": x, "p": p, "confidence": confidence}))
        .collect();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/quantile_interval_reference.py");
    let answers = run_lines(&python, &script, &inputs);
    let mut bounded = 0;
    for ((x, p, confidence), answer) in cases.iter().zip(&answers) {
        let ours = quantile_interval(x, *p, *confidence).expect("a valid sample");
        let theirs = (answer["ci"][0].as_f64(), answer["ci"][1].as_f64());
        assert_eq!(
            (ours.lower, ours.upper),
            theirs,
            "n = {}, p = {p}, confidence = {confidence}",
            x.len()
        );
        if ours.lower.is_some() && ours.upper.is_some() {
            bounded += 1;
        }
    }
    // Both kinds of sample occur: those with both bounds and those missing one.
    assert!(bounded > 100 && bounded < cases.len(), "{bounded} bounded");
}
