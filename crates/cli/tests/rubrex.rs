//! Rubrex (seed 004) through the real binary: the four-case worksheet's figures for the
//! baseline and candidate snapshots, the comparison record by record, located errors for bad
//! Rubrex words, and `oloproof refresh` over saved questions.

mod common;

use common::*;

fn row<'a>(out: &'a str, criterion: &str) -> &'a str {
    out.lines()
        .find(|l| l.contains(&format!(" {criterion} ")))
        .unwrap_or_else(|| panic!("no row {criterion} in\n{out}"))
}

#[test]
fn the_worksheet_prints_the_seed_figures_and_compares_record_by_record() {
    let (tmp, dir) = project("examples/rubrex_refunds");
    let baseline = oloproof(&dir, &["run", ".", "--dataset", "baseline.jsonl"]);
    insta::assert_snapshot!("rubrex_baseline", transcript(&baseline, tmp.path()));
    assert_eq!(baseline.status.code(), Some(0), "{}", stderr(&baseline));
    let out = stdout(&baseline);
    // Seed 004: evidence coverage 2/3 (the phone case has no required passage), context
    // support 2/4 (the stale refund answer counts as supported), task acceptance 1/4.
    assert!(row(&out, "evidence_coverage").contains("2 / 3 observed · 0 missing · 1 excluded"));
    assert!(row(&out, "context_support").contains("2 / 4 observed · 0 missing · 0 excluded"));
    assert!(row(&out, "task_acceptance").contains("1 / 4 observed · 0 missing · 0 excluded"));
    assert!(row(&out, "no_stale_evidence").contains("3 / 4 observed"));
    assert!(row(&out, "abstention_recall").contains("0 / 1 observed"));

    let candidate = oloproof(&dir, &["run", ".", "--dataset", "candidate.jsonl"]);
    insta::assert_snapshot!("rubrex_candidate", transcript(&candidate, tmp.path()));
    assert_eq!(candidate.status.code(), Some(0), "{}", stderr(&candidate));
    let out = stdout(&candidate);
    // Candidate: 3/3, 3/3 (its abstention is excluded from support), 4/4.
    assert!(row(&out, "evidence_coverage").contains("3 / 3 observed · 0 missing · 1 excluded"));
    assert!(row(&out, "context_support").contains("3 / 3 observed · 0 missing · 1 excluded"));
    assert!(row(&out, "task_acceptance").contains("4 / 4 observed · 0 missing · 0 excluded"));
    assert!(row(&out, "abstention_precision").contains("1 / 1 observed"));
    assert!(row(&out, "abstention_recall").contains("1 / 1 observed"));

    let compare = oloproof(
        &dir,
        &[
            "compare",
            &run_id(&stdout(&candidate)),
            &run_id(&stdout(&baseline)),
            "--policy",
            "compare.yaml",
        ],
    );
    assert_eq!(compare.status.code(), Some(0), "{}", stderr(&compare));
    let inspect = oloproof(&dir, &["inspect", &hash_id(&stdout(&compare))]);
    insta::assert_snapshot!("rubrex_compare_inspect", transcript(&inspect, tmp.path()));
    let cases = stdout(&inspect);
    assert!(cases.contains(
        "refund_window: evidence_coverage fail → pass, task_acceptance fail → pass, no_stale_evidence fail → pass"
    ));
    assert!(cases
        .contains("support_phone: context_support fail → excluded, task_acceptance fail → pass"));

    // One record's evidence: the baseline's cancellation answer and its unsupported claims.
    let show = oloproof(
        &dir,
        &[
            "show",
            &run_id(&stdout(&baseline)),
            "--case",
            "cancel_access",
            "--json",
        ],
    );
    assert_eq!(show.status.code(), Some(0), "{}", stderr(&show));
    assert!(
        stdout(&show).contains("Access ends immediately after cancelling."),
        "{}",
        stdout(&show)
    );
}

#[test]
fn bad_rubrex_words_are_located_with_a_suggestion() {
    let (tmp, dir) = project("examples/rubrex_refunds");
    let text = std::fs::read_to_string(dir.join("baseline.jsonl")).unwrap();
    let typo = text
        .replacen(
            "\"evidence_condition\": \"sufficient\"",
            "\"evidence_condition\": \"sufficent\"",
            1,
        )
        .replacen("\"status\": \"archived\"", "\"status\": \"archive\"", 1);
    assert_ne!(typo, text);
    std::fs::write(dir.join("typo.jsonl"), typo).unwrap();
    let run = oloproof(&dir, &["run", ".", "--dataset", "typo.jsonl"]);
    insta::assert_snapshot!("rubrex_bad_words", transcript(&run, tmp.path()));
    assert_eq!(run.status.code(), Some(2));
    let err = stderr(&run);
    assert!(err.contains("did you mean `sufficient`?"), "{err}");
    assert!(err.contains("did you mean `archived`?"), "{err}");

    std::fs::write(
        dir.join("oloproof.yaml"),
        "dataset: baseline.jsonl\nevaluators:\n  - {type: abstention, measure: recal}\nslices: [diagnostic_matrx]\n",
    )
    .unwrap();
    let bad = oloproof(&dir, &["run", "."]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("recal"), "{}", stderr(&bad));
    std::fs::write(
        dir.join("oloproof.yaml"),
        "dataset: baseline.jsonl\nevaluators:\n  - {type: task_acceptance}\nslices: [diagnostic_matrx]\n",
    )
    .unwrap();
    let slice = oloproof(&dir, &["run", "."]);
    assert_eq!(slice.status.code(), Some(2));
    assert!(
        stderr(&slice).contains("did you mean `diagnostic_matrix`?"),
        "{}",
        stderr(&slice)
    );
}

#[test]
fn refresh_runs_the_system_over_saved_questions_and_writes_a_ragas_dataset() {
    let (tmp, dir) = project("tests/systems/echo");
    std::fs::write(
        dir.join("eval_questions.jsonl"),
        concat!(
            "{\"user_input\":\"alpha beta\",\"reference\":\"alpha\"}\n",
            "{\"id\":\"q2\",\"user_input\":\"delta raise-generate\",\"reference\":\"delta\"}\n",
            "{\"user_input\":\"gamma\",\"reference\":\"gamma\",\"reference_contexts\":[\"gamma gamma\"]}\n",
        ),
    )
    .unwrap();
    let refresh = oloproof(
        &dir,
        &[
            "refresh",
            ".",
            "--questions",
            "eval_questions.jsonl",
            "-o",
            "eval_dataset.jsonl",
            "--max-error-rate",
            "0.5",
        ],
    );
    insta::assert_snapshot!("rubrex_refresh", transcript(&refresh, tmp.path()));
    assert_eq!(refresh.status.code(), Some(0), "{}", stderr(&refresh));
    let written = std::fs::read_to_string(dir.join("eval_dataset.jsonl")).unwrap();
    insta::assert_snapshot!("rubrex_refresh_dataset", written);
    assert_eq!(
        written.lines().count(),
        2,
        "the errored question is left out"
    );

    // The refreshed dataset reads back as a recorded run.
    let back = oloproof(&dir, &["run", ".", "--dataset", "eval_dataset.jsonl"]);
    assert_eq!(back.status.code(), Some(0), "{}", stderr(&back));
    assert!(
        row(&stdout(&back), "answer_correct").contains("2 / 2 observed"),
        "{}",
        stdout(&back)
    );

    // Case JSONL works as questions too; above the allowed error rate the exit is 4.
    let cases = oloproof(
        &dir,
        &[
            "refresh",
            ".",
            "--questions",
            "cases.jsonl",
            "-o",
            "from_cases.jsonl",
        ],
    );
    assert_eq!(cases.status.code(), Some(0), "{}", stderr(&cases));
    let lines = std::fs::read_to_string(dir.join("from_cases.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 4, "{lines}");
    let strict = oloproof(
        &dir,
        &[
            "refresh",
            ".",
            "--questions",
            "eval_questions.jsonl",
            "-o",
            "strict.jsonl",
        ],
    );
    assert_eq!(strict.status.code(), Some(4), "{}", stderr(&strict));
    assert!(stderr(&strict).contains("exit 4"), "{}", stderr(&strict));
}
