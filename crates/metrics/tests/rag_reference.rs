//! RAG metrics against their references (`rag_reference.py` beside this file):
//!
//! * the `.npy` reader on files written by `numpy.lib.format.write_array` (float32/float64,
//!   little- and big-endian, format versions 1.0 and 2.0);
//! * exact brute-force neighbours (cosine, dot, L2) against numpy in float64;
//! * predicate micro precision/recall/F1 against scikit-learn's
//!   `precision_recall_fscore_support(average="micro")`;
//! * nugget scores against castorini/nuggetizer's `calculate_nugget_scores` (transcribed);
//! * RFC 3339 parsing against Python's `datetime.fromisoformat`.
//!
//! The interpreter comes from `OLOPROOF_REFERENCE_PYTHON` (numpy and scikit-learn, pinned in
//! scripts/requirements-test.txt). Without it the test is skipped with a note, unless
//! `OLOPROOF_REQUIRE_REFERENCES=1`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use oloproof_metrics::rag::ann::{exact_neighbours, Distance};
use oloproof_metrics::rag::context::{nugget_scores, Assignment, Importance};
use oloproof_metrics::rag::filters::predicate_scores;
use oloproof_metrics::rag::freshness::parse_rfc3339;
use oloproof_metrics::rag::npy::{parse_npy, Matrix};
use oloproof_reference::{reference_python, run_json, SplitMix64};
use serde_json::json;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn rag_metrics_match_numpy_sklearn_nuggetizer_and_datetime() {
    let Some(python) = reference_python("numpy/scikit-learn RAG comparison") else {
        return;
    };
    let mut rng = SplitMix64(0x00a9_5eed);
    let dir = tempfile_dir();

    // .npy files.
    let mut arrays = Vec::new();
    for i in 0..40 {
        let dtype = ["<f4", ">f4", "<f8", ">f8"][i % 4];
        let version = if i % 3 == 0 { [2, 0] } else { [1, 0] };
        let (rows, cols) = (rng.below(7), 1 + rng.below(9));
        let values: Vec<f64> = (0..rows * cols).map(|_| (rng.unit() - 0.5) * 1e3).collect();
        arrays.push((format!("a{i}.npy"), dtype, version, rows, cols, values));
    }

    // Neighbour searches.
    let mut knn = Vec::new();
    for i in 0..60 {
        let distance = ["cosine", "dot", "l2"][i % 3];
        let (n, d) = (1 + rng.below(60), 1 + rng.below(12));
        let corpus: Vec<Vec<f64>> = (0..n)
            .map(|_| (0..d).map(|_| rng.unit() * 2.0 - 1.0).collect())
            .collect();
        let queries: Vec<Vec<f64>> = (0..5)
            .map(|_| (0..d).map(|_| rng.unit() * 2.0 - 1.0).collect())
            .collect();
        knn.push((corpus, queries, 1 + rng.below(12), distance));
    }

    // Predicate sets.
    let fields = ["tenant", "locale", "product", "year"];
    let values = ["a", "b", "c"];
    let predicates: Vec<(Vec<String>, Vec<String>)> = (0..400)
        .map(|_| {
            let set = |rng: &mut SplitMix64| {
                let mut s = BTreeSet::new();
                for _ in 0..rng.below(4) {
                    s.insert(format!(
                        "{}={}",
                        fields[rng.below(fields.len())],
                        values[rng.below(values.len())]
                    ));
                }
                s.into_iter().collect::<Vec<_>>()
            };
            (set(&mut rng), set(&mut rng))
        })
        .collect();

    // Nugget assignments.
    let nuggets: Vec<Vec<(&str, &str)>> = (0..500)
        .map(|_| {
            (0..rng.below(12))
                .map(|_| {
                    (
                        ["vital", "okay"][rng.below(2)],
                        ["support", "partial_support", "not_support"][rng.below(3)],
                    )
                })
                .collect()
        })
        .collect();

    // Timestamps.
    let timestamps: Vec<String> = (0..500)
        .map(|_| {
            let year = 1900 + rng.below(250);
            let month = 1 + rng.below(12);
            let day = 1 + rng.below(28);
            let frac = match rng.below(3) {
                0 => String::new(),
                1 => format!(".{:03}", rng.below(1000)),
                _ => format!(".{:06}", rng.below(1_000_000)),
            };
            let zone = match rng.below(3) {
                0 => "Z".to_string(),
                1 => format!("+{:02}:{:02}", rng.below(24), rng.below(60)),
                _ => format!("-{:02}:{:02}", rng.below(24), rng.below(60)),
            };
            format!(
                "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}{frac}{zone}",
                rng.below(24),
                rng.below(60),
                rng.below(60)
            )
        })
        .collect();

    let input = json!({
        "dir": dir.to_str().unwrap(),
        "arrays": arrays.iter().map(|(name, dtype, version, rows, cols, values)| json!({
            "name": name, "dtype": dtype, "version": version, "rows": rows, "cols": cols, "values": values,
        })).collect::<Vec<_>>(),
        "knn": knn.iter().map(|(c, q, k, d)| json!({"corpus": c, "queries": q, "k": k, "distance": d})).collect::<Vec<_>>(),
        "predicates": predicates,
        "nuggets": nuggets,
        "timestamps": timestamps,
    });

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rag_reference.py");
    let reference = run_json(&python, &script, &[], &input);

    // .npy: our reading of numpy's files equals the values numpy was given (cast to the dtype).
    for (name, dtype, _, rows, cols, values) in &arrays {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let m = parse_npy(&bytes).unwrap_or_else(|e| panic!("{name} ({dtype}): {e}"));
        assert_eq!((m.rows, m.cols), (*rows, *cols), "{name}");
        let expected: Vec<f64> = if dtype.ends_with("f4") {
            values.iter().map(|v| f64::from(*v as f32)).collect()
        } else {
            values.clone()
        };
        assert_eq!(m.data, expected, "{name} ({dtype})");
    }

    // Exact neighbours.
    for (case, expected) in knn.iter().zip(reference["knn"].as_array().unwrap()) {
        let (corpus, queries, k, distance) = case;
        let m = Matrix {
            rows: corpus.len(),
            cols: corpus[0].len(),
            data: corpus.iter().flatten().copied().collect(),
        };
        let d = Distance::parse(distance).unwrap();
        for (q, exp) in queries.iter().zip(expected.as_array().unwrap()) {
            let ours = exact_neighbours(&m, q, *k, d);
            let exp = exp.as_array().unwrap();
            assert_eq!(ours.len(), exp.len());
            for ((row, dist), e) in ours.iter().zip(exp) {
                assert_eq!(
                    *row as u64,
                    e[0].as_u64().unwrap(),
                    "{distance}: {ours:?} vs {exp:?}"
                );
                assert!(
                    close(*dist, e[1].as_f64().unwrap()),
                    "{distance}: {dist} vs {}",
                    e[1]
                );
            }
        }
    }

    // Predicate micro P/R/F1.
    let split = |v: &Vec<String>| -> BTreeSet<(String, String)> {
        v.iter()
            .map(|s| {
                let (f, x) = s.split_once('=').unwrap();
                (f.to_string(), x.to_string())
            })
            .collect()
    };
    let sets: Vec<_> = predicates
        .iter()
        .map(|(p, g)| (split(p), split(g)))
        .collect();
    let s = predicate_scores(&sets);
    let prf = reference["predicates"].as_array().unwrap();
    for (ours, theirs) in [s.micro.precision(), s.micro.recall(), s.micro.f1()]
        .iter()
        .zip(prf)
    {
        assert!(
            close(ours.unwrap_or(0.0), theirs.as_f64().unwrap()),
            "{ours:?} vs {theirs}"
        );
    }

    // Nugget scores: bit-identical; nuggetizer's 0.0 for an empty denominator is our None.
    for (answer, expected) in nuggets.iter().zip(reference["nuggets"].as_array().unwrap()) {
        let parsed: Vec<(Importance, Assignment)> = answer
            .iter()
            .map(|(i, a)| (Importance::parse(i).unwrap(), Assignment::parse(a).unwrap()))
            .collect();
        let s = nugget_scores(&parsed);
        let ours = [s.strict_vital, s.strict_all, s.vital, s.all].map(|x| x.unwrap_or(0.0));
        let theirs: Vec<f64> = expected
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(
            ours.map(f64::to_bits).to_vec(),
            theirs.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            "{answer:?}"
        );
    }

    // Timestamps.
    for (t, expected) in timestamps
        .iter()
        .zip(reference["timestamps"].as_array().unwrap())
    {
        let ours = parse_rfc3339(t).unwrap();
        assert_eq!(ours.seconds, expected[0].as_i64().unwrap(), "{t}");
        assert_eq!(
            u64::from(ours.nanos / 1000),
            expected[1].as_u64().unwrap(),
            "{t}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("oloproof-rag-reference-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
