//! `examples/hybrid_rag` as its README walks it: `run` (every stage measured), `diagnose`
//! (each pipeline label), the fix (a soft locale boost), `compare` with a latency guardrail,
//! and `gate` with seed 000's contract. Latencies are measured, so their digits are masked.

mod common;

use common::*;

/// Masks the measured latency rows (their digits, and the widths that follow them).
fn mask_latency(text: &str) -> String {
    text.lines()
        .map(|line| {
            if line.contains("latency") {
                // The row's widths follow the measured digits: keep the cells up to the
                // criterion's name.
                let cells: Vec<&str> = line.split('│').collect();
                let named = cells
                    .iter()
                    .position(|c| c.contains("latency"))
                    .unwrap_or(0);
                format!("{}│ [measured]", cells[..=named].join("│"))
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_readme_walk_through() {
    let (tmp, dir) = project("examples/hybrid_rag");
    let run = oloproof(&dir, &["run", ".", "--no-cache"]);
    assert!(run.status.success(), "{}", stderr(&run));
    insta::assert_snapshot!("hybrid_run", mask_latency(&transcript(&run, tmp.path())));
    let baseline = run_id(&stdout(&run));

    let diagnosis = oloproof(
        &dir,
        &[
            "diagnose",
            &baseline,
            "--intervention",
            "gold-context",
            "--criterion",
            "answer_correct",
        ],
    );
    assert!(diagnosis.status.success(), "{}", stderr(&diagnosis));
    let out = stdout(&diagnosis);
    for label in [
        "FILTERED_OUT: 4 of 16",
        "REWRITE_DRIFT: 1 of 16",
        "HOP_MISS: 1 of 16",
        "FUSION_LOSS: 2 of 16",
        "RERANKED_OUT: 1 of 16",
    ] {
        assert!(out.contains(label), "{label}: {out}");
    }
    insta::assert_snapshot!("hybrid_diagnose", transcript(&diagnosis, tmp.path()));

    // The confirmation of FILTERED_OUT: the same cases with the filters skipped.
    let no_filter = oloproof(
        &dir,
        &[
            "diagnose",
            &baseline,
            "--intervention",
            "no-filter",
            "--criterion",
            "answer_correct",
        ],
    );
    assert!(no_filter.status.success(), "{}", stderr(&no_filter));
    assert!(
        stdout(&no_filter).contains("Confirmed under no-filter: 4 of 4 FILTERED_OUT cases"),
        "{}",
        stdout(&no_filter)
    );

    // The fix: the locale only boosts.
    let fixed = oloproof(
        &dir,
        &[
            "run",
            ".",
            "--no-cache",
            "--set",
            "system.rag.params.locale_filter=soft",
        ],
    );
    assert!(fixed.status.success(), "{}", stderr(&fixed));
    let candidate = run_id(&stdout(&fixed));
    let compare = oloproof(
        &dir,
        &["compare", &candidate, &baseline, "--policy", "compare.yaml"],
    );
    let compared = stdout(&compare);
    assert!(
        compared.contains("answer_correct: +9.8 points"),
        "{compared}"
    );
    assert!(
        compared.contains("filter_false_exclusion: -7.8 points"),
        "{compared}"
    );
    assert!(compared.contains("answers-not-worse"), "{compared}");
    assert!(compared.contains("p95-latency"), "{compared}");

    // Seed 000's contract: the fix passes it, the baseline's false exclusions block it.
    let gate = oloproof(&dir, &["gate", &candidate, "--policy", "gate.yaml"]);
    assert_eq!(gate.status.code(), Some(0), "{}", stdout(&gate));
    insta::assert_snapshot!("hybrid_gate", mask_latency(&transcript(&gate, tmp.path())));
    let blocked = oloproof(&dir, &["gate", &baseline, "--policy", "gate.yaml"]);
    assert_eq!(blocked.status.code(), Some(3), "{}", stdout(&blocked));
    assert!(stdout(&blocked).contains("1 of 3 thresholds failed"));
}
