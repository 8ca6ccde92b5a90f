//! `oloproof compare` through the real binary: the seed's story (a larger token budget changes
//! no verdict, and 13 paired cases cannot establish a 5-point margin, so the gate blocks), a
//! policy that passes, policy errors, a crashed case counted missing, and a stable id.

mod common;

use common::*;

/// Runs the example twice (budget 40, then 120) and returns `(candidate, baseline)`.
fn two_runs(dir: &std::path::Path) -> (String, String) {
    let base = oloproof(dir, &["run", "."]);
    assert_eq!(base.status.code(), Some(0), "{}", stderr(&base));
    let cand = oloproof(dir, &["run", ".", "--set", "system.rag.token_budget=120"]);
    assert_eq!(cand.status.code(), Some(0), "{}", stderr(&cand));
    (run_id(&stdout(&cand)), run_id(&stdout(&base)))
}

#[test]
fn the_seeds_comparison_blocks_and_is_stable() {
    let (tmp, dir) = project("examples/support_rag");
    let (cand, base) = two_runs(&dir);
    let o = oloproof(&dir, &["compare", &cand, &base, "--policy", "compare.yaml"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    insta::assert_snapshot!("compare_seed", transcript(&o, tmp.path()));
    let out = stdout(&o);
    assert!(out.starts_with("Comparison sha256:"));
    assert!(out.contains(&format!("of {cand} against {base} · 13 shared cases")));
    assert!(out.contains(
        "answer_correct: +0.0 points [-22.9, +22.9] · 13 paired · 0 missing · 0 excluded"
    ));
    assert!(out.contains("  system.token_budget: 40 → 120"), "{out}");
    for name in ["answers-not-worse", "citations-not-worse"] {
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap();
        assert!(
            line.ends_with("INSUFFICIENT_EVIDENCE  interval_overlaps_margin"),
            "{line}"
        );
    }
    assert!(out.contains("Gate: BLOCK (exit 3)"));

    // The same comparison again: the same id.
    let again = oloproof(&dir, &["compare", &cand, &base, "--policy", "compare.yaml"]);
    assert_eq!(again.status.code(), Some(3));
    assert_eq!(hash_id(&stdout(&again)), hash_id(&out));

    // JSON carries the same id and the decisions.
    let json = oloproof(
        &dir,
        &[
            "compare",
            &cand,
            &base,
            "--policy",
            "compare.yaml",
            "--json",
        ],
    );
    assert_eq!(json.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["id"], serde_json::json!(hash_id(&out)));
    assert_eq!(v["gate"], "BLOCK");
    assert_eq!(v["decisions"][0]["verdict"], "INSUFFICIENT_EVIDENCE");
    assert_eq!(v["bootstrap"]["seed"], 20260916);

    // Swapping the runs is another comparison.
    let swapped = oloproof(&dir, &["compare", &base, &cand, "--policy", "compare.yaml"]);
    assert_ne!(hash_id(&stdout(&swapped)), hash_id(&out));
}

#[test]
fn a_policy_that_the_data_can_satisfy_passes() {
    let (tmp, dir) = project("examples/support_rag");
    let (cand, base) = two_runs(&dir);
    std::fs::write(
        dir.join("wide.yaml"),
        "decisions:
  - {name: answers-within-30, criterion: answer_correct, kind: non_inferiority, margin_points: 30}
  - {name: no-critical-regressions, kind: no_regression, cases: [refund_annual, security_review]}
max_missing_rate: 0.0
",
    )
    .unwrap();
    let o = oloproof(&dir, &["compare", &cand, &base, "--policy", "wide.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = redact(&stdout(&o), tmp.path());
    assert!(
        out.contains(
            "Decisions
  answers-within-30        answer_correct      non-inferiority, margin 30.0 points              PASS  interval_above_margin
  no-critical-regressions  pass/fail criteria  no regression on refund_annual, security_review  PASS  no_case_regressed
Gate: PASS (exit 0)
"
        ),
        "{out}"
    );
}

#[test]
fn policy_errors_exit_2_with_their_location() {
    let (tmp, dir) = project("examples/support_rag");
    let (cand, base) = two_runs(&dir);
    std::fs::write(
        dir.join("typo.yaml"),
        "decisions:
  - {name: answers-not-worse, criterion: answer_corect, kind: non_inferiority, margin_points: 5}
",
    )
    .unwrap();
    let o = oloproof(&dir, &["compare", &cand, &base, "--policy", "typo.yaml"]);
    insta::assert_snapshot!("compare_unknown_criterion", transcript(&o, tmp.path()));
    assert_eq!(o.status.code(), Some(2));

    std::fs::write(
        dir.join("bad.yaml"),
        "decisions:
  - {name: a, criterion: answer_correct, kind: non_inferiority, margin_points: 0}
",
    )
    .unwrap();
    let o = oloproof(&dir, &["compare", &cand, &base, "--policy", "bad.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("error: the margin must be a positive number of points"));
    assert!(stderr(&o).contains("--> bad.yaml:2:"), "{}", stderr(&o));

    std::fs::write(
        dir.join("key.yaml"),
        "decisions:\n  - {name: a, criterion: answer_correct, kind: superiority}\nmax_mising_rate: 0\n",
    )
    .unwrap();
    let o = oloproof(&dir, &["compare", &cand, &base, "--policy", "key.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("did you mean `max_missing_rate`?"),
        "{}",
        stderr(&o)
    );

    let o = oloproof(
        &dir,
        &["compare", &cand, "run_nope", "--policy", "compare.yaml"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = oloproof(&dir, &["compare", &cand, &base, "--policy", "absent.yaml"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn a_crashed_case_is_missing_never_a_pass() {
    let (_tmp, dir) = project("tests/systems/crash");
    let first = oloproof(&dir, &["run", "."]);
    assert_eq!(first.status.code(), Some(4), "{}", stderr(&first));
    let second = oloproof(&dir, &["run", ".", "--max-error-rate", "0.5"]);
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    let (base, cand) = (run_id(&stdout(&first)), run_id(&stdout(&second)));
    std::fs::write(
        dir.join("compare.yaml"),
        "decisions:
  - {name: answers-not-worse, criterion: answer_correct, kind: non_inferiority, margin_points: 5}
  - {name: boom-holds, kind: no_regression, cases: [boom]}
",
    )
    .unwrap();
    let o = oloproof(&dir, &["compare", &cand, &base, "--policy", "compare.yaml"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(
            "answer_correct: +0.0 points [-65.8, +65.8] · 2 paired · 1 missing · 0 excluded"
        ),
        "{out}"
    );
    let line = |name: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap()
            .to_string()
    };
    assert!(line("answers-not-worse").contains("INSUFFICIENT_EVIDENCE  too_many_missing"));
    assert!(line("boom-holds")
        .contains("INSUFFICIENT_EVIDENCE  case_missing (boom: answer_correct missing)"));
}

#[test]
fn a_smaller_budget_and_depth_regress_and_inspect_lists_the_cases() {
    let (tmp, dir) = project("examples/support_rag");
    let base = oloproof(&dir, &["run", "."]);
    assert_eq!(base.status.code(), Some(0), "{}", stderr(&base));
    let cand = oloproof(
        &dir,
        &[
            "run",
            ".",
            "--set",
            "system.rag.token_budget=15",
            "--set",
            "system.rag.depth=1",
        ],
    );
    assert_eq!(cand.status.code(), Some(0), "{}", stderr(&cand));
    let (cand, base) = (run_id(&stdout(&cand)), run_id(&stdout(&base)));
    std::fs::write(
        dir.join("full.yaml"),
        "decisions:
  - {name: answers-not-worse, criterion: answer_correct, kind: non_inferiority, margin_points: 5}
  - {name: citations-not-worse, criterion: citations_valid, kind: non_inferiority, margin_points: 2}
  - {name: recall-better, criterion: recall_at_2, kind: superiority}
  - {name: no-critical-regressions, kind: no_regression, cases: [refund_annual, security_review]}
max_missing_rate: 0.0
",
    )
    .unwrap();
    let o = oloproof(&dir, &["compare", &cand, &base, "--policy", "full.yaml"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let out = stdout(&o);
    let head: String = out
        .lines()
        .filter(|l| !l.starts_with("  ") || !l.contains(" = "))
        .map(|l| format!("{l}\n"))
        .collect();
    insta::assert_snapshot!("compare_regressions", redact(&head, tmp.path()));
    let id = hash_id(&out);
    let inspect = oloproof(&dir, &["inspect", &id]);
    assert_eq!(inspect.status.code(), Some(0), "{}", stderr(&inspect));
    insta::assert_snapshot!(
        "compare_regressions_inspect",
        transcript(&inspect, tmp.path())
    );
    let cases = stdout(&inspect);
    let regressed = cases.find("Regressed").expect("regressions listed");
    if let Some(improved) = cases.find("Improved") {
        assert!(regressed < improved, "regressions first");
    }
}
