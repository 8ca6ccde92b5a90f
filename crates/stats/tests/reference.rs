//! Reference comparisons against scipy on randomized inputs (see `reference.py` beside this file).
//!
//! Inputs are generated here from a fixed seed, sent to the Python interpreter named by
//! `OLOPROOF_REFERENCE_PYTHON` as JSON on stdin, and the answers compared to 1e-9 relative
//! (plus 1e-15 absolute, for bounds that are exactly 0 here and a rounding residue in scipy).
//! Without the variable the tests are skipped with a note, unless `OLOPROOF_REQUIRE_REFERENCES=1`
//! (set by `scripts/test`), in which case they fail.
//!
//! The bootstrap has no reference (no other implementation shares our random stream); its
//! properties are tested in `src/bootstrap.rs` and `src/paired.rs`.

use std::path::Path;

use oloproof_reference::{reference_python, run_json};
use oloproof_stats::{
    clopper_pearson, holm, paired_proportion_difference, paired_t_test, randomization_test, wilson,
    PairedCounts,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

const RELATIVE: f64 = 1e-9;
const ABSOLUTE: f64 = 1e-15;

/// Run `reference.py` on `{name: inputs}` and return the answers for `name`.
fn reference(name: &str, inputs: &Value) -> Option<Vec<Value>> {
    let python = reference_python("scipy reference comparison")?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference.py");
    let mut answers = run_json(&python, &script, &[], &json!({ name: inputs }));
    match answers[name].take() {
        Value::Array(rows) => Some(rows),
        other => panic!("no {name} in the answers: {other}"),
    }
}

fn assert_close(ours: f64, theirs: f64, what: &dyn Fn() -> String) {
    let tolerance = RELATIVE * ours.abs().max(theirs.abs()) + ABSOLUTE;
    assert!(
        (ours - theirs).abs() <= tolerance || ours == theirs,
        "{}: ours {ours:e}, reference {theirs:e}, difference {:e}",
        what(),
        (ours - theirs).abs()
    );
}

fn number(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("not a number: {value}"))
}

/// Random `(k, n, confidence)`: `n` log-uniform in 1..=20,000, `k` uniform in 0..=n with the
/// endpoints over-represented, confidence from common levels and uniform in (0.5, 0.9999).
fn proportion_inputs(seed: u64, count: usize) -> Vec<(u64, u64, f64)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let levels = [0.8, 0.9, 0.95, 0.99, 0.999];
    (0..count)
        .map(|_| {
            let n = (20_000f64.powf(rng.random::<f64>())).floor().max(1.0) as u64;
            let k = match rng.random_range(0..10) {
                0 => 0,
                1 => n,
                2 => 1.min(n),
                3 => n.saturating_sub(1),
                _ => rng.random_range(0..=n),
            };
            let confidence = if rng.random_bool(0.5) {
                levels[rng.random_range(0..levels.len())]
            } else {
                rng.random_range(0.5..0.9999)
            };
            (k, n, confidence)
        })
        .collect()
}

/// Against the Beta quantiles (`scipy.special.betaincinv`) to 1e-9 relative, and against
/// `binomtest(...).proportion_ci(method="exact")` to its own root-finding accuracy (brentq's
/// default absolute `xtol` of 2e-12, so 1e-11 absolute here).
#[test]
fn clopper_pearson_matches_scipy_exact() {
    let inputs = proportion_inputs(1, 1500);
    let Some(answers) = reference("clopper_pearson", &json!(inputs)) else {
        return;
    };
    assert_eq!(answers.len(), inputs.len());
    for (&(k, n, confidence), answer) in inputs.iter().zip(&answers) {
        let ci = clopper_pearson(k, n, confidence).expect("valid input");
        let what = || format!("clopper_pearson({k}, {n}, {confidence})");
        assert_close(ci.lo, number(&answer[0]), &|| format!("{} lo", what()));
        assert_close(ci.hi, number(&answer[1]), &|| format!("{} hi", what()));
        for (ours, theirs) in [(ci.lo, &answer[2]), (ci.hi, &answer[3])] {
            let theirs = number(theirs);
            assert!(
                (ours - theirs).abs() <= 1e-11,
                "{}: ours {ours:e}, binomtest {theirs:e}",
                what()
            );
        }
    }
}

#[test]
fn wilson_matches_scipy_wilson() {
    let inputs = proportion_inputs(2, 1500);
    let Some(answers) = reference("wilson", &json!(inputs)) else {
        return;
    };
    assert_eq!(answers.len(), inputs.len());
    for (&(k, n, confidence), answer) in inputs.iter().zip(&answers) {
        let ci = wilson(k, n, confidence).expect("valid input");
        let what = || format!("wilson({k}, {n}, {confidence})");
        assert_close(ci.lo, number(&answer[0]), &|| format!("{} lo", what()));
        assert_close(ci.hi, number(&answer[1]), &|| format!("{} hi", what()));
    }
}

/// Random paired samples: continuous scores, binary outcomes and scores on a 0.1 grid (ties and
/// rounding), with or without a shift between the systems.
fn paired_inputs(seed: u64, count: usize, max_n: usize) -> Vec<(Vec<f64>, Vec<f64>)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let n = rng.random_range(2..=max_n);
        let kind = rng.random_range(0..3);
        let shift = if rng.random_bool(0.5) {
            rng.random_range(-0.3..0.3)
        } else {
            0.0
        };
        let draw = |rng: &mut ChaCha8Rng, offset: f64| -> f64 {
            match kind {
                0 => rng.random::<f64>() + offset,
                1 => f64::from(u8::from(rng.random_bool((0.5 + offset).clamp(0.05, 0.95)))),
                _ => f64::from(rng.random_range(0..=10u8)) / 10.0,
            }
        };
        let a: Vec<f64> = (0..n).map(|_| draw(&mut rng, shift)).collect();
        let b: Vec<f64> = (0..n).map(|_| draw(&mut rng, 0.0)).collect();
        let d0 = a[0] - b[0];
        // scipy's answer for constant differences is NaN or ±inf; ours is tested in src.
        if a.iter().zip(&b).all(|(x, y)| x - y == d0) {
            continue;
        }
        out.push((a, b));
    }
    out
}

#[test]
fn paired_t_test_matches_scipy_ttest_rel() {
    let inputs = paired_inputs(3, 600, 80);
    let Some(answers) = reference("ttest_rel", &json!(inputs)) else {
        return;
    };
    for (i, ((a, b), answer)) in inputs.iter().zip(&answers).enumerate() {
        let ours = paired_t_test(a, b).expect("valid input");
        assert_close(ours.statistic, number(&answer[0]), &|| {
            format!("t statistic of input {i}")
        });
        assert_close(ours.p_value, number(&answer[1]), &|| {
            format!("p-value of input {i}")
        });
    }
}

#[test]
fn randomization_test_matches_scipy_exact_permutation_test() {
    let inputs = paired_inputs(4, 300, 12);
    let Some(answers) = reference("permutation", &json!(inputs)) else {
        return;
    };
    for (i, ((a, b), answer)) in inputs.iter().zip(&answers).enumerate() {
        // 2^12 = 4096 ≤ 5000: every input is in the exact regime.
        let ours = randomization_test(a, b, 5000, 0).expect("valid input");
        assert_close(ours.p_value, number(answer), &|| {
            format!("p-value of input {i}: {a:?} vs {b:?}")
        });
    }
}

#[test]
fn holm_matches_statsmodels_transcription() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let inputs: Vec<Vec<f64>> = (0..500)
        .map(|_| {
            let m = rng.random_range(1..=25);
            let mut p: Vec<f64> = (0..m)
                .map(|_| match rng.random_range(0..4) {
                    0 => rng.random::<f64>() * 1e-4,
                    1 => rng.random::<f64>() * 0.1,
                    2 => 1.0,
                    _ => rng.random::<f64>(),
                })
                .collect();
            // Exact ties.
            if m > 2 && rng.random_bool(0.3) {
                p[1] = p[0];
            }
            p
        })
        .collect();
    let Some(answers) = reference("holm", &json!(inputs)) else {
        return;
    };
    for (i, (p, answer)) in inputs.iter().zip(&answers).enumerate() {
        let ours = holm(p);
        let theirs = answer.as_array().expect("an array");
        assert_eq!(ours.len(), theirs.len());
        for (j, (o, t)) in ours.iter().zip(theirs).enumerate() {
            assert_close(*o, number(t), &|| format!("holm input {i} position {j}"));
        }
    }
}

/// Random paired tables `(b, c, n, confidence)`: `n` log-uniform in 1..=5,000; the discordant
/// counts at the edges (`b = c = 0`, `b = n`, `c = n`, `b + c = n`, one of them 0 or 1) a third of
/// the time, otherwise `b + c` uniform in 0..=n, split uniformly or nearly evenly.
fn paired_table_inputs(seed: u64, count: usize) -> Vec<(u64, u64, u64, f64)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let levels = [0.8, 0.9, 0.95, 0.99, 0.999];
    (0..count)
        .map(|_| {
            let n = (5_000f64.powf(rng.random::<f64>())).floor().max(1.0) as u64;
            let (b, c) = match rng.random_range(0..15) {
                0 => (0, 0),
                1 => (n, 0),
                2 => (0, n),
                3 => {
                    let b = rng.random_range(0..=n);
                    (b, n - b)
                }
                4 => (rng.random_range(0..=n), 0),
                5 => (0, rng.random_range(0..=n)),
                6 => (1.min(n), rng.random_range(0..=n - 1.min(n))),
                _ => {
                    let discordant = rng.random_range(0..=n);
                    let b = if rng.random_bool(0.3) {
                        discordant / 2
                    } else {
                        rng.random_range(0..=discordant)
                    };
                    (b, discordant - b)
                }
            };
            let confidence = if rng.random_bool(0.5) {
                levels[rng.random_range(0..levels.len())]
            } else {
                rng.random_range(0.5..0.9999)
            };
            (b, c, n, confidence)
        })
        .collect()
}

/// Tango's score interval against a transcription solved with brentq (the constrained MLE found
/// numerically): 1e-9 relative plus 1e-12 absolute, brentq's attainable accuracy for a bound
/// near 0 where the score is evaluated with rounding in the constrained MLE.
#[test]
fn paired_proportion_difference_matches_tango_transcription() {
    let inputs = paired_table_inputs(6, 1500);
    let Some(answers) = reference("tango", &json!(inputs)) else {
        return;
    };
    assert_eq!(answers.len(), inputs.len());
    for (&(b, c, n, confidence), answer) in inputs.iter().zip(&answers) {
        let pairs = PairedCounts {
            both_pass: (n - b - c) / 2,
            candidate_only: b,
            baseline_only: c,
            both_fail: n - b - c - (n - b - c) / 2,
        };
        let ci = paired_proportion_difference(pairs, confidence).expect("valid input");
        for (bound, ours, theirs) in [("lo", ci.lo, &answer[0]), ("hi", ci.hi, &answer[1])] {
            let theirs = number(theirs);
            let tolerance = RELATIVE * ours.abs().max(theirs.abs()) + 1e-12;
            assert!(
                (ours - theirs).abs() <= tolerance,
                "tango(b={b}, c={c}, n={n}, {confidence}) {bound}: ours {ours:e}, reference \
                 {theirs:e}, difference {:e}",
                (ours - theirs).abs()
            );
        }
    }
}
