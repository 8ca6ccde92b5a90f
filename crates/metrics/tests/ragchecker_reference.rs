//! RAGChecker's metrics against RAGChecker's own computation (`ragchecker_reference.py` beside
//! this file runs `ragchecker.computation.METRIC_FUNC_MAP` of the PyPI package, pinned in
//! scripts/requirements-models.txt and installed without its dependencies).
//!
//! Random checks (claims × chunks, seeded), with empty claim lists and no chunks among them:
//! wherever Oloproof defines a metric it equals RAGChecker's value; wherever Oloproof says it is
//! undefined (`no_claims`, `no_reference_claims`, `no_context`, `no_recalled_claims`),
//! RAGChecker's value is 0 — the documented difference (`docs/ragchecker.md`), pinned here. The
//! other one: with no chunk at all, RAGChecker scores faithfulness, hallucination and
//! self-knowledge 0 (three values summing to 0), where every answer claim is unfaithful here
//! (faithfulness 0, hallucination and self-knowledge splitting the claims, summing to 1).
//!
//! The interpreter comes from `OLOPROOF_REFERENCE_PYTHON`. Without it the test is skipped with a
//! note, unless `OLOPROOF_REQUIRE_REFERENCES=1`.

use std::path::Path;

use oloproof_metrics::rag::ragchecker::{diagnose, ClaimChecks, Metric, ReferenceChecks};
use oloproof_reference::{reference_python, run_json, SplitMix64};
use serde_json::json;

fn set(rng: &mut SplitMix64, chunks: usize, density: usize) -> Vec<usize> {
    (0..chunks).filter(|_| rng.below(density) == 0).collect()
}

fn random_case(rng: &mut SplitMix64) -> ClaimChecks {
    let chunks = rng.below(6);
    let na = rng.below(7);
    let nr = rng.below(7);
    let density = 2 + rng.below(4);
    ClaimChecks {
        chunks,
        answer_in_chunks: (0..na).map(|_| set(rng, chunks, density)).collect(),
        reference: Some(ReferenceChecks {
            answer_in_reference: (0..na).map(|_| rng.below(2) == 0).collect(),
            reference_in_answer: (0..nr).map(|_| rng.below(2) == 0).collect(),
            reference_in_chunks: (0..nr).map(|_| set(rng, chunks, density)).collect(),
        }),
    }
}

#[test]
fn metrics_match_ragcheckers_computation() {
    let Some(python) = reference_python("RAGChecker metric comparison") else {
        return;
    };
    let mut rng = SplitMix64(0x2a6c_4ec4);
    let cases: Vec<ClaimChecks> = (0..600).map(|_| random_case(&mut rng)).collect();
    let input = json!({"cases": cases.iter().map(|c| {
        let r = c.reference.as_ref().expect("every case has a reference");
        json!({
            "chunks": c.chunks,
            "answer_in_chunks": c.answer_in_chunks,
            "answer_in_reference": r.answer_in_reference,
            "reference_in_answer": r.reference_in_answer,
            "reference_in_chunks": r.reference_in_chunks,
        })
    }).collect::<Vec<_>>()});
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ragchecker_reference.py");
    let reference = run_json(&python, &script, &[], &input);
    let expected = reference["metrics"].as_array().expect("metrics");
    assert_eq!(expected.len(), cases.len());
    let (mut equal, mut undefined, mut split) = (0, 0, 0);
    for (case, theirs) in cases.iter().zip(expected) {
        let d = diagnose(case).expect("consistent checks");
        for (metric, ours) in d.values() {
            let value = theirs[metric.ragchecker_name()]
                .as_f64()
                .unwrap_or_else(|| panic!("no {} in {theirs}", metric.ragchecker_name()));
            let no_chunk_split =
                case.chunks == 0 && matches!(metric, Metric::Hallucination | Metric::SelfKnowledge);
            match ours {
                Ok(v) if no_chunk_split => {
                    assert_eq!(value, 0.0, "{metric:?}: RAGChecker without chunks");
                    assert!((0.0..=1.0).contains(&v));
                    split += 1;
                }
                Ok(v) => {
                    assert!(
                        (v - value).abs() < 1e-12,
                        "{metric:?}: ours {v}, RAGChecker {value} on {case:?}"
                    );
                    equal += 1;
                }
                Err(why) => {
                    assert_eq!(
                        value,
                        0.0,
                        "{metric:?} is {} here; RAGChecker gives {value} on {case:?}",
                        why.reason()
                    );
                    undefined += 1;
                }
            }
        }
    }
    // Both branches are exercised well.
    assert!(
        equal > 4000 && undefined > 300 && split > 50,
        "{equal} equal, {undefined} undefined, {split} split without chunks"
    );
}
