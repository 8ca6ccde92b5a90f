//! `oloproof_stats::drift` against numpy/scipy (`drift_reference.py` beside this file) on
//! random inputs from a fixed seed: the unbiased MMD² and its median-heuristic bandwidth to
//! 1e-9 (relative to the kernel scale); the permutation p-value against the exact
//! permutation p-value (all splits enumerated) within Monte Carlo error; the Jensen–Shannon
//! distance against `scipy.spatial.distance.jensenshannon(base=2)` to 1e-12; and the
//! reference-quantile bins (edges and counts) against `np.quantile`/`np.searchsorted`.
//! Skipped with a note without `OLOPROOF_REFERENCE_PYTHON`, unless
//! `OLOPROOF_REQUIRE_REFERENCES=1`.

use std::path::Path;

use oloproof_reference::{reference_python, run_lines, SplitMix64};
use oloproof_stats::drift::{binned_divergence, mmd2_unbiased, mmd_permutation_test};
use oloproof_stats::jensen_shannon_distance;
use serde_json::{json, Value};

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/drift_reference.py")
}

fn sample(rng: &mut SplitMix64, n: usize, d: usize, shift: f64, ties: bool) -> Vec<Vec<f64>> {
    (0..n)
        .map(|_| {
            (0..d)
                .map(|k| {
                    let x = rng.unit() * 2.0 - 1.0 + if k == 0 { shift } else { 0.0 };
                    if ties {
                        (x * 2.0).round() / 2.0
                    } else {
                        x
                    }
                })
                .collect()
        })
        .collect()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

#[test]
fn mmd_and_bandwidth_match_numpy() {
    let Some(python) = reference_python("numpy MMD comparison") else {
        return;
    };
    let mut rng = SplitMix64(0xd81f7);
    let mut cases = Vec::new();
    for i in 0..150 {
        let m = 2 + rng.below(40);
        let n = 2 + rng.below(40);
        let d = 1 + rng.below(12);
        let shift = if i % 3 == 0 { 0.0 } else { rng.unit() * 1.5 };
        let ties = i % 7 == 0;
        cases.push((
            sample(&mut rng, m, d, 0.0, ties),
            sample(&mut rng, n, d, shift, ties),
        ));
    }
    let inputs: Vec<Value> = cases
        .iter()
        .map(|(x, y)| json!({"kind": "mmd", "x": x, "y": y}))
        .collect();
    let answers = run_lines(&python, &script(), &inputs);
    for ((x, y), answer) in cases.iter().zip(&answers) {
        let t = mmd_permutation_test(x, y, 1, 0).unwrap();
        let (theirs, bw) = (
            answer["mmd2"].as_f64().unwrap(),
            answer["bandwidth"].as_f64().unwrap(),
        );
        assert!(
            (t.bandwidth - bw).abs() <= 1e-12 * bw.max(1.0),
            "bandwidth ours {} numpy {bw} ({}x{})",
            t.bandwidth,
            x.len(),
            y.len()
        );
        assert!(
            (t.mmd2 - theirs).abs() <= 1e-9,
            "MMD² ours {} numpy {theirs}",
            t.mmd2
        );
        let given = mmd2_unbiased(x, y, bw).unwrap();
        assert!((given - theirs).abs() <= 1e-9, "{given} {theirs}");
    }
}

#[test]
fn permutation_p_value_matches_the_exact_permutation_distribution() {
    let Some(python) = reference_python("exact permutation comparison") else {
        return;
    };
    let mut rng = SplitMix64(0x9e37);
    let mut cases = Vec::new();
    for i in 0..24 {
        let m = 3 + rng.below(3);
        let n = 3 + rng.below(3);
        let shift = [0.0, 0.5, 1.0, 3.0][i % 4];
        cases.push((
            sample(&mut rng, m, 3, 0.0, false),
            sample(&mut rng, n, 3, shift, false),
        ));
    }
    let inputs: Vec<Value> = cases
        .iter()
        .map(|(x, y)| json!({"kind": "exact_p", "x": x, "y": y}))
        .collect();
    let answers = run_lines(&python, &script(), &inputs);
    let b = 20_000;
    for (i, ((x, y), answer)) in cases.iter().zip(&answers).enumerate() {
        let exact = answer["p"].as_f64().unwrap();
        let t = mmd_permutation_test(x, y, b, i as u64).unwrap();
        // (count + 1) / (B + 1) estimates the exact p with a binomial error; 5 standard
        // errors plus the +1's bias.
        let se = (exact * (1.0 - exact) / b as f64).sqrt();
        assert!(
            (t.p_value - exact).abs() <= 5.0 * se + 2.0 / (b + 1) as f64,
            "case {i} ({}x{}): ours {} exact {exact}",
            x.len(),
            y.len(),
            t.p_value
        );
        assert!(t.p_value >= 1.0 / (b + 1) as f64 && t.p_value <= 1.0);
    }
}

#[test]
fn jensen_shannon_and_bins_match_scipy() {
    let Some(python) = reference_python("scipy jensenshannon comparison") else {
        return;
    };
    let mut rng = SplitMix64(0x15);
    let mut js_cases = Vec::new();
    for i in 0..200 {
        let k = 2 + rng.below(15);
        let mut draw = || -> Vec<f64> {
            (0..k)
                .map(|_| {
                    if rng.below(4) == 0 {
                        0.0
                    } else {
                        rng.below(50) as f64
                    }
                })
                .collect()
        };
        let mut p = draw();
        let mut q = draw();
        p[0] += 1.0;
        q[k - 1] += 1.0;
        if i % 10 == 0 {
            q = p.iter().map(|x| 3.0 * x).collect();
        }
        js_cases.push((p, q));
    }
    let mut bin_cases = Vec::new();
    for i in 0..100 {
        let n = 10 + rng.below(200);
        let reference: Vec<f64> = (0..n)
            .map(|_| {
                let x = rng.unit();
                if i % 5 == 0 {
                    (x * 4.0).round() / 4.0
                } else {
                    x
                }
            })
            .collect();
        let shift = rng.unit() * 0.5;
        let current: Vec<f64> = (0..1 + rng.below(100))
            .map(|_| rng.unit() + shift)
            .collect();
        let bins = 2 + rng.below(9);
        bin_cases.push((reference, current, bins));
    }
    let mut inputs: Vec<Value> = js_cases
        .iter()
        .map(|(p, q)| json!({"kind": "js", "p": p, "q": q}))
        .collect();
    inputs.extend(
        bin_cases
            .iter()
            .map(|(r, c, b)| json!({"kind": "bins", "reference": r, "current": c, "bins": b})),
    );
    let answers = run_lines(&python, &script(), &inputs);
    for ((p, q), answer) in js_cases.iter().zip(&answers) {
        let ours = jensen_shannon_distance(p, q).unwrap();
        let theirs = answer["js"].as_f64().unwrap();
        assert!(
            (ours - theirs).abs() <= 1e-12,
            "{p:?} {q:?}: {ours} {theirs}"
        );
    }
    for ((r, c, b), answer) in bin_cases.iter().zip(&answers[js_cases.len()..]) {
        let edges = floats(&answer["edges"]);
        match binned_divergence(r, c, Some(*b)) {
            Ok(d) => {
                assert_eq!(d.edges.len(), edges.len(), "{r:?} {b}");
                for (a, e) in d.edges.iter().zip(&edges) {
                    assert!((a - e).abs() <= 1e-12, "edge {a} numpy {e}");
                }
                let counts = |v: &Value| -> Vec<u64> {
                    v.as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_u64().unwrap())
                        .collect()
                };
                assert_eq!(d.reference_counts, counts(&answer["reference_counts"]));
                assert_eq!(d.current_counts, counts(&answer["current_counts"]));
                let theirs = answer["js"].as_f64().unwrap();
                assert!((d.js_distance - theirs).abs() <= 1e-12);
            }
            // Ties that leave a single bin: numpy's unique edges say the same.
            Err(e) => assert!(edges.is_empty(), "{e}: numpy edges {edges:?}"),
        }
    }
}
