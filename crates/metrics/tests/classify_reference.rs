//! Classification, NER, agreement, calibration and statistics metrics against their reference
//! libraries (`classify_reference.py` beside this file): seqeval 1.2.2, scikit-learn,
//! krippendorff, scipy and numpy, pinned in `scripts/requirements-test.txt`.
//!
//! Each test generates hundreds of random cases from a fixed seed, sends them to Python as JSON
//! lines and compares the answers to 1e-9 (exact computations) or the stated tolerance. The
//! interpreter comes from `OLOPROOF_REFERENCE_PYTHON`; without it the tests are skipped with a
//! note, unless `OLOPROOF_REQUIRE_REFERENCES=1`, in which case they fail.

use std::path::{Path, PathBuf};

use oloproof_reference::{run_lines, SplitMix64};
use serde_json::{json, Value};

fn reference_python() -> Option<PathBuf> {
    oloproof_reference::reference_python("classification reference comparison")
}

/// Runs the reference script on `cases`, one answer per case.
fn reference(python: &Path, cases: &[Value]) -> Vec<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/classify_reference.py");
    run_lines(python, &script, cases)
}

#[track_caller]
fn close(ours: Option<f64>, theirs: &Value, tol: f64, what: &str) {
    match (ours, theirs.as_f64()) {
        (None, None) => {}
        (Some(a), Some(b)) => assert!(
            (a - b).abs() <= tol * b.abs().max(1.0),
            "{what}: ours {a}, reference {b}"
        ),
        (a, _) => panic!("{what}: ours {a:?}, reference {theirs}"),
    }
}

// ---------------------------------------------------------------------------------------------
// NER: seqeval

mod ner {
    use super::*;
    use oloproof_metrics::classify::seqeval::{evaluate, Mode, Options, Scheme, ZeroDivision};

    const TYPES: &[&str] = &["PER", "LOC", "ORG", "A-B"];
    const SCHEMES: &[(&str, Scheme, &[char])] = &[
        ("IOB1", Scheme::Iob1, &['I', 'O', 'B']),
        ("IOB2", Scheme::Iob2, &['I', 'O', 'B']),
        ("IOE1", Scheme::Ioe1, &['I', 'O', 'E']),
        ("IOE2", Scheme::Ioe2, &['I', 'O', 'E']),
        ("IOBES", Scheme::Iobes, &['I', 'O', 'B', 'E', 'S']),
        ("BILOU", Scheme::Bilou, &['B', 'I', 'L', 'O', 'U']),
    ];

    fn tag(rng: &mut SplitMix64, prefixes: &[char], suffix: bool, odd: bool) -> String {
        if odd && rng.below(12) == 0 {
            return rng
                .pick(&["B", "I", "B-", "I-", ".", "X-PER", "E", "S-", "U", "L-"])
                .to_string();
        }
        let p = *rng.pick(prefixes);
        if p == 'O' {
            return "O".into();
        }
        // Mostly one type so that chunks continue, sometimes a change of type.
        let ty = if rng.below(3) == 0 {
            *rng.pick(TYPES)
        } else {
            TYPES[0]
        };
        if suffix {
            format!("{ty}-{p}")
        } else {
            format!("{p}-{ty}")
        }
    }

    fn sentences(
        rng: &mut SplitMix64,
        shape: &[usize],
        prefixes: &[char],
        suffix: bool,
        odd: bool,
    ) -> Vec<Vec<String>> {
        shape
            .iter()
            .map(|&n| (0..n).map(|_| tag(rng, prefixes, suffix, odd)).collect())
            .collect()
    }

    #[test]
    fn seqeval_default_and_strict_modes() {
        let Some(python) = reference_python() else {
            return;
        };
        let mut rng = SplitMix64(0x5e9e_0a11);
        let mut cases = Vec::new();
        let mut options = Vec::new();
        let all: &[char] = &['B', 'I', 'E', 'S', 'L', 'U', 'O', 'O'];
        for i in 0..1400 {
            let shape: Vec<usize> = (0..1 + rng.below(5)).map(|_| rng.below(12)).collect();
            let suffix = rng.below(6) == 0;
            let zd = if rng.below(4) == 0 { 1 } else { 0 };
            let zero_division = if zd == 1 {
                ZeroDivision::One
            } else {
                ZeroDivision::Zero
            };
            let (case, opts) = if i < 400 {
                // Default mode: any prefix, odd tags included.
                let t = sentences(&mut rng, &shape, all, suffix, true);
                // Predictions: a perturbed copy of the truth.
                let mut p = t.clone();
                for s in &mut p {
                    for x in s.iter_mut() {
                        if rng.below(3) == 0 {
                            *x = tag(&mut rng, all, suffix, true);
                        }
                    }
                }
                (
                    json!({"kind": "seqeval", "true": t, "pred": p, "suffix": suffix,
                           "zero_division": zd}),
                    Options {
                        mode: Mode::Default,
                        suffix,
                        zero_division,
                    },
                )
            } else {
                let (name, scheme, prefixes) = SCHEMES[i % SCHEMES.len()];
                let t = sentences(&mut rng, &shape, prefixes, suffix, false);
                let mut p = t.clone();
                for s in &mut p {
                    for x in s.iter_mut() {
                        if rng.below(3) == 0 {
                            *x = tag(&mut rng, prefixes, suffix, false);
                        }
                    }
                }
                // A few predictions with a prefix the scheme refuses.
                if i % 97 == 0 {
                    if let Some(s) = p.iter_mut().find(|s| !s.is_empty()) {
                        s[0] = if suffix {
                            "PER-Z".into()
                        } else {
                            "Z-PER".into()
                        };
                    }
                }
                (
                    json!({"kind": "seqeval", "true": t, "pred": p, "mode": "strict",
                           "scheme": name, "suffix": suffix, "zero_division": zd}),
                    Options {
                        mode: Mode::Strict(scheme),
                        suffix,
                        zero_division,
                    },
                )
            };
            cases.push(case);
            options.push(opts);
        }
        let answers = reference(&python, &cases);
        let (mut with_entities, mut errors) = (0, 0);
        for ((case, opts), answer) in cases.iter().zip(&options).zip(&answers) {
            let parse = |v: &Value| -> Vec<Vec<String>> {
                serde_json::from_value(v.clone()).expect("sentences")
            };
            let (t, p) = (parse(&case["true"]), parse(&case["pred"]));
            let ours = evaluate(&t, &p, opts);
            let what = format!("{case}");
            if answer.get("error").is_some() {
                assert!(
                    ours.is_err(),
                    "{what}: seqeval refused ({answer}), we did not"
                );
                errors += 1;
                continue;
            }
            let ours = ours.unwrap_or_else(|e| panic!("{what}: {e}"));
            let report = answer["report"].as_object().expect("report");
            let names: Vec<&str> = report
                .keys()
                .filter(|k| !k.ends_with(" avg"))
                .map(String::as_str)
                .collect();
            let mine: Vec<&str> = ours.per_type.iter().map(|t| t.name.as_str()).collect();
            let mut sorted = names.clone();
            sorted.sort_unstable();
            assert_eq!(mine, sorted, "{what}");
            with_entities += usize::from(!mine.is_empty());
            for row in &ours.per_type {
                let r = &report[&row.name];
                close(Some(row.scores.precision), &r["precision"], 1e-12, &what);
                close(Some(row.scores.recall), &r["recall"], 1e-12, &what);
                close(Some(row.scores.f1), &r["f1-score"], 1e-12, &what);
                assert_eq!(Some(row.scores.support), r["support"].as_u64(), "{what}");
            }
            for (key, s) in [
                ("micro avg", Some(ours.micro)),
                ("macro avg", ours.macro_avg),
                ("weighted avg", Some(ours.weighted)),
            ] {
                let r = &report[key];
                close(s.map(|s| s.precision), &r["precision"], 1e-12, &what);
                close(s.map(|s| s.recall), &r["recall"], 1e-12, &what);
                close(s.map(|s| s.f1), &r["f1-score"], 1e-12, &what);
            }
            close(ours.accuracy, &answer["accuracy"], 1e-12, &what);
        }
        assert!(
            with_entities > 1000,
            "only {with_entities} cases with entities"
        );
        assert!(errors >= 5, "only {errors} refused cases");
    }
}

// ---------------------------------------------------------------------------------------------
// scikit-learn classification_report

mod sklearn_report {
    use super::*;
    use oloproof_metrics::classify::report::{classification_report, ZeroDivision};

    #[test]
    fn classification_report_matches_sklearn() {
        let Some(python) = reference_python() else {
            return;
        };
        let mut rng = SplitMix64(0xc1a55e5);
        let labels = ["a", "b", "c", "d", "e", "f"];
        let mut cases = Vec::new();
        for _ in 0..400 {
            let k = 1 + rng.below(labels.len());
            let n = 1 + rng.below(30);
            let t: Vec<&str> = (0..n).map(|_| labels[rng.below(k)]).collect();
            let p: Vec<&str> = (0..n)
                .map(|i| {
                    if rng.below(2) == 0 {
                        t[i]
                    } else {
                        labels[rng.below(k)]
                    }
                })
                .collect();
            let zd = rng.pick(&[json!("warn"), json!(1), json!("nan")]).clone();
            cases.push(json!({"kind": "sklearn", "true": t, "pred": p, "zero_division": zd}));
        }
        let answers = reference(&python, &cases);
        for (case, answer) in cases.iter().zip(&answers) {
            let what = format!("{case}");
            let t: Vec<String> = serde_json::from_value(case["true"].clone()).expect("true");
            let p: Vec<String> = serde_json::from_value(case["pred"].clone()).expect("pred");
            let zd = match case["zero_division"].as_str() {
                Some("warn") => ZeroDivision::Zero,
                Some("nan") => ZeroDivision::Undefined,
                _ => ZeroDivision::One,
            };
            let ours = classification_report(&t, &p, zd)
                .expect("same lengths")
                .expect("not empty");
            let r = &answer["report"];
            for row in &ours.per_class {
                let x = &r[&row.label];
                close(row.scores.precision, &x["precision"], 1e-12, &what);
                close(row.scores.recall, &x["recall"], 1e-12, &what);
                close(row.scores.f1, &x["f1-score"], 1e-12, &what);
                assert_eq!(Some(row.scores.support as f64), x["support"].as_f64());
            }
            close(Some(ours.accuracy), &r["accuracy"], 1e-12, &what);
            for (key, s) in [
                ("macro avg", ours.macro_avg),
                ("weighted avg", ours.weighted),
            ] {
                close(s.precision, &r[key]["precision"], 1e-12, &what);
                close(s.recall, &r[key]["recall"], 1e-12, &what);
                close(s.f1, &r[key]["f1-score"], 1e-12, &what);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Agreement: Cohen's kappa, Krippendorff's alpha, Spearman, Kendall tau-b

mod agreement {
    use super::*;
    use oloproof_metrics::agreement::{
        cohen_kappa, kendall_tau_b, krippendorff_alpha, spearman, KappaWeights, Level,
    };

    #[test]
    fn cohen_kappa_matches_sklearn() {
        let Some(python) = reference_python() else {
            return;
        };
        let mut rng = SplitMix64(0x0ca99a);
        let mut cases = Vec::new();
        for _ in 0..600 {
            let k = 1 + rng.below(6);
            let n = 1 + rng.below(40);
            let a: Vec<u32> = (0..n).map(|_| rng.below(k) as u32).collect();
            let b: Vec<u32> = a
                .iter()
                .map(|&x| {
                    if rng.below(3) == 0 {
                        rng.below(k) as u32
                    } else {
                        x
                    }
                })
                .collect();
            let weights = rng
                .pick(&[json!(null), json!("linear"), json!("quadratic")])
                .clone();
            cases.push(json!({"kind": "kappa", "a": a, "b": b, "weights": weights}));
        }
        let answers = reference(&python, &cases);
        let mut defined = 0;
        for (case, answer) in cases.iter().zip(&answers) {
            let a: Vec<u32> = serde_json::from_value(case["a"].clone()).expect("a");
            let b: Vec<u32> = serde_json::from_value(case["b"].clone()).expect("b");
            let weights = match case["weights"].as_str() {
                Some("linear") => KappaWeights::Linear,
                Some("quadratic") => KappaWeights::Quadratic,
                _ => KappaWeights::None,
            };
            let ours = cohen_kappa(&a, &b, weights).expect("same lengths");
            defined += usize::from(ours.is_some());
            close(ours, &answer["kappa"], 1e-12, &format!("{case}"));
        }
        assert!(defined > 400);
    }

    #[test]
    fn krippendorff_alpha_matches_the_package() {
        let Some(python) = reference_python() else {
            return;
        };
        let mut rng = SplitMix64(0x6a1fa);
        let mut cases = Vec::new();
        let levels = [
            ("nominal", Level::Nominal),
            ("ordinal", Level::Ordinal),
            ("interval", Level::Interval),
            ("ratio", Level::Ratio),
        ];
        let mut data = Vec::new();
        for i in 0..600 {
            let coders = 2 + rng.below(4);
            let units = 1 + rng.below(25);
            let k = 2 + rng.below(5);
            let scale: f64 = *rng.pick(&[1.0, 0.5, 2.5]);
            let matrix: Vec<Vec<Option<f64>>> = (0..units)
                .map(|_| {
                    let truth = rng.below(k);
                    (0..coders)
                        .map(|_| {
                            if rng.below(4) == 0 {
                                None
                            } else if rng.below(3) == 0 {
                                Some(rng.below(k) as f64 * scale)
                            } else {
                                Some(truth as f64 * scale)
                            }
                        })
                        .collect()
                })
                .collect();
            // The package takes coders × units.
            let transposed: Vec<Vec<Option<f64>>> = (0..coders)
                .map(|c| matrix.iter().map(|u| u[c]).collect())
                .collect();
            let (name, level) = levels[i % levels.len()];
            cases.push(json!({"kind": "krippendorff", "data": transposed, "level": name}));
            data.push((matrix, level));
        }
        let answers = reference(&python, &cases);
        let mut defined = 0;
        for ((case, answer), (matrix, level)) in cases.iter().zip(&answers).zip(&data) {
            let what = format!("{case}");
            let ours = krippendorff_alpha(matrix, *level);
            if answer.get("error").is_some() {
                assert!(
                    ours.is_err(),
                    "{what}: the package refused ({answer}), we did not"
                );
                continue;
            }
            let ours = ours.unwrap_or_else(|e| panic!("{what}: {e}"));
            defined += usize::from(ours.is_some());
            close(ours, &answer["alpha"], 1e-9, &what);
        }
        assert!(defined > 400, "only {defined} defined cases");
    }

    #[test]
    fn spearman_and_kendall_match_scipy() {
        let Some(python) = reference_python() else {
            return;
        };
        let mut rng = SplitMix64(0x5ea7_3a11);
        let mut cases = Vec::new();
        for i in 0..600 {
            let n = 2 + rng.below(60);
            // Few distinct values: many ties; every tenth case continuous.
            let levels = if i % 10 == 0 {
                1_000_000
            } else {
                2 + rng.below(6)
            };
            let x: Vec<f64> = (0..n).map(|_| rng.below(levels) as f64).collect();
            let y: Vec<f64> = x
                .iter()
                .map(|&v| {
                    if rng.below(2) == 0 {
                        v
                    } else {
                        rng.below(levels) as f64 * 0.5
                    }
                })
                .collect();
            cases.push(json!({"kind": "correlation", "x": x, "y": y}));
        }
        let answers = reference(&python, &cases);
        for (case, answer) in cases.iter().zip(&answers) {
            let what = format!("{case}");
            let x: Vec<f64> = serde_json::from_value(case["x"].clone()).expect("x");
            let y: Vec<f64> = serde_json::from_value(case["y"].clone()).expect("y");
            let s = spearman(&x, &y).expect("finite");
            close(s.map(|s| s.rho), &answer["spearman"], 1e-12, &what);
            if let Some(p) = s.and_then(|s| s.p_value) {
                close(Some(p), &answer["spearman_p"], 1e-9, &what);
            }
            close(
                kendall_tau_b(&x, &y).expect("finite"),
                &answer["kendall"],
                1e-12,
                &what,
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Calibration and quantiles

mod calibration_and_quantiles {
    use super::*;
    use oloproof_metrics::calibration::ece;
    use oloproof_stats::quantile::{quantiles, QuantileMethod};

    #[test]
    fn ece_matches_the_numpy_transcription() {
        let Some(python) = reference_python() else {
            return;
        };
        let mut rng = SplitMix64(0xece);
        let mut cases = Vec::new();
        for i in 0..400 {
            let n = 1 + rng.below(80);
            let bins = *rng.pick(&[1usize, 5, 10, 10, 15, 20]);
            let confidence: Vec<f64> = (0..n)
                .map(|_| match rng.below(5) {
                    // Exactly on an edge (k / bins), 0 and 1 included.
                    0 => rng.below(bins + 1) as f64 / bins as f64,
                    // Two decimals, as verbalised confidences are.
                    1 => rng.below(101) as f64 / 100.0,
                    _ => rng.unit(),
                })
                .collect();
            let correct: Vec<bool> = confidence
                .iter()
                .map(|&c| rng.unit() < if i % 2 == 0 { c } else { 0.5 })
                .collect();
            cases.push(
                json!({"kind": "ece", "confidence": confidence, "correct": correct,
                              "bins": bins}),
            );
        }
        let answers = reference(&python, &cases);
        for (case, answer) in cases.iter().zip(&answers) {
            let what = format!("{case}");
            let c: Vec<f64> = serde_json::from_value(case["confidence"].clone()).expect("c");
            let k: Vec<bool> = serde_json::from_value(case["correct"].clone()).expect("k");
            let bins = case["bins"].as_u64().expect("bins") as usize;
            let ours = ece(&c, &k, bins).expect("valid").expect("not empty");
            close(Some(ours.ece), &answer["ece"], 1e-12, &what);
            for (b, r) in ours
                .bins
                .iter()
                .zip(answer["bins"].as_array().expect("bins"))
            {
                assert_eq!(Some(b.count as u64), r["count"].as_u64(), "{what}");
                close(b.mean_confidence, &r["confidence"], 1e-12, &what);
                close(b.accuracy, &r["accuracy"], 1e-12, &what);
            }
        }
    }

    #[test]
    fn quantiles_match_numpy_for_every_method() {
        let Some(python) = reference_python() else {
            return;
        };
        let mut rng = SplitMix64(0x9a7);
        let mut cases = Vec::new();
        let mut methods = Vec::new();
        for i in 0..650 {
            let method = QuantileMethod::ALL[i % QuantileMethod::ALL.len()];
            let n = 1 + rng.below(40);
            let x: Vec<f64> = (0..n)
                .map(|_| {
                    if rng.below(3) == 0 {
                        rng.below(10) as f64
                    } else {
                        (rng.unit() * 1000.0).exp2().ln() * 37.0
                    }
                })
                .collect();
            let mut q: Vec<f64> = vec![0.0, 0.5, 0.95, 0.99, 1.0];
            q.extend((0..4).map(|_| rng.unit()));
            q.extend((0..3).map(|_| rng.below(n + 1) as f64 / n as f64));
            cases.push(json!({"kind": "quantile", "x": x, "q": q, "method": method.name()}));
            methods.push(method);
        }
        let answers = reference(&python, &cases);
        for ((case, answer), method) in cases.iter().zip(&answers).zip(&methods) {
            let what = format!("{case}");
            let x: Vec<f64> = serde_json::from_value(case["x"].clone()).expect("x");
            let q: Vec<f64> = serde_json::from_value(case["q"].clone()).expect("q");
            let ours = quantiles(&x, &q, *method).expect("valid");
            for (o, t) in ours
                .iter()
                .zip(answer["values"].as_array().expect("values"))
            {
                let t = t.as_f64().expect("number");
                assert_eq!(o.to_bits(), t.to_bits(), "{what}: ours {o}, numpy {t}");
            }
        }
    }
}
