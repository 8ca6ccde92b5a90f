"""The pytest plugin, through pytest's own pytester: loaded from the wheel's `pytest11` entry
point, one run per session, and failure messages in oloproof's terms."""

import json
import subprocess

import oloproof


def runs_in_store(dir):
    out = subprocess.run(
        [oloproof.find_binary(), "runs", str(dir), "--json"], check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout)


def test_the_plugin_is_registered_by_the_wheel(pytester):
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*--oloproof-project=PATH*", "*--oloproof-set=KEY=VALUE*", "*oloproof_project*"])


def test_a_passing_project_runs_once_per_session(pytester, project):
    dir = project("support_rag")
    (dir / "pass.yaml").write_text("thresholds:\n  - {criterion: answer_correct, min: 0.6}\n")
    pytester.makeini("[pytest]\noloproof_project = %s\n" % dir)
    pytester.makepyfile(
        test_quality="""
        def test_gate(oloproof_run):
            assert oloproof_run.gate("pass.yaml")

        def test_bound(oloproof_run):
            assert oloproof_run["citations_valid"].lower >= 0.7

        def test_counts(oloproof_run):
            assert oloproof_run["answer_correct"].counts == {
                "passed": 9, "observed": 13, "missing": 0, "excluded": 0}
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=3)
    assert len(runs_in_store(dir)) == 1  # three tests, one run


def test_a_failing_project_says_why(pytester, project):
    dir = project("support_rag")
    pytester.makeini("[pytest]\noloproof_project = %s\n" % dir)
    pytester.makepyfile(
        test_quality="""
        def test_gate(oloproof_run):
            assert oloproof_run.gate("gate.yaml")

        def test_bound(oloproof_run):
            assert oloproof_run["answer_correct"].lower >= 0.6

        def test_score(oloproof_run):
            assert oloproof_run["ndcg_at_6"].lower >= 0.9
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            # the gate: its decision, every threshold, the failed criterion's row, its cases
            "*assert <Gate BLOCK gate.yaml: answer_correct lower_bound 0.385 min 0.600 FAIL (below_min)*",
            "*- oloproof -*",
            "Gate: BLOCK (gate.yaml)",
            "  answer_correct lower_bound 0.385 min 0.600 FAIL (below_min)",
            "  │ answer_correct │ 69.2% │ ?38.5%, 91.0%? │ 9 / 13 observed · 0 missing · 0 excluded │",
            "    failing cases: money_back, refund_review, seat_count, security_review",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            # a bound: the comparison, the metric table row, the failing case ids
            "E  *assert lower bound of answer_correct: 0.385 >= 0.6",
            "E  *│ answer_correct │ 69.2% │ ?38.5%, 91.0%? │ 9 / 13 observed · 0 missing · 0 excluded │",
            "E  *failing cases: money_back, refund_review, seat_count, security_review",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            # a score has no failing cases: its lowest ones
            "E  *assert lower bound of ndcg_at_6: 0.684* >= 0.9",
            "E  *│ ndcg_at_6 │ 0.866 │ ?0.684, 1.000? │ mean of 13 observed · 0 missing · 0 excluded │",
            "E  *lowest cases: money_back 0.000, refund_review 0.631, security_review 0.631, *",
        ]
    )


def test_a_value_and_a_missing_bound_fail_with_the_row(pytester, project):
    dir = project("support_rag")
    # A p95 latency of 13 cases has no distribution-free interval (it needs 59): `.lower` is
    # no number, and comparing it fails with the row instead of raising TypeError.
    config = dir / "oloproof.yaml"
    config.write_text(config.read_text().replace(
        "  - {type: citation_validity}\n", "  - {type: citation_validity}\n  - {type: latency}\n"))
    pytester.makeini("[pytest]\noloproof_project = %s\n" % dir)
    pytester.makepyfile(
        test_quality="""
        def test_value(oloproof_run):
            assert oloproof_run["answer_correct"].value >= 0.8

        def test_no_interval(oloproof_run):
            assert oloproof_run["latency_total_p95"].lower >= 0.8

        def test_no_interval_is_none(oloproof_run):
            assert oloproof_run["latency_total_p95"].lower == None  # noqa: E711
            assert oloproof_run["latency_total_p95"].upper is not None  # a NoBound, not None
            assert not oloproof_run["latency_total_p95"].lower
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=2, passed=1)
    result.stdout.fnmatch_lines(
        [
            "E  *assert value of answer_correct: 0.692* >= 0.8",
            "E  *│ answer_correct │ 69.2% │ ?38.5%, 91.0%? │ 9 / 13 observed · 0 missing · 0 excluded │",
            "E  *failing cases: money_back, refund_review, seat_count, security_review",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "E  *assert lower bound of latency_total_p95: None (no interval: 13 observed: a distribution-free"
            " 95% interval of a p95 needs at least *) >= 0.8",
            "E  *│ latency_total_p95 │ * │ (too few cases) │ p95 of 13 observed · 0 missing · 0 excluded │",
        ]
    )
    assert "TypeError" not in result.stdout.str()


def test_a_marker_names_the_project_and_its_overrides(pytester, project):
    dir = project("support_rag")
    pytester.makepyfile(
        test_marked="""
        import pytest

        @pytest.mark.oloproof(project=%r, top_k=1, set={"system.version": "marked"})
        def test_top_1(oloproof_run):
            assert oloproof_run.version == "marked"
            assert oloproof_run.summary["criteria"][0]["criterion"] == "answer_correct"

        def test_option(oloproof_run):
            assert oloproof_run.version == "slice-b-example"
        """
        % str(dir)
    )
    result = pytester.runpytest("--oloproof-project", str(dir))
    result.assert_outcomes(passed=2)
    assert len(runs_in_store(dir)) == 2


def test_a_broken_project_fails_its_tests_with_the_located_message(pytester, project):
    dir = project("support_rag")
    config = dir / "oloproof.yaml"
    config.write_text(config.read_text().replace("top_k: 2", "top_k: many"))
    pytester.makepyfile(
        test_broken="""
        def test_one(oloproof_run):
            pass

        def test_two(oloproof_run):
            pass
        """
    )
    result = pytester.runpytest("--oloproof-project", str(dir))
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        ["*oloproof run of * failed (exit 2):", 'error: wrong type: found string "many"', "*oloproof.yaml:7:12"]
    )
    # Once per test in the ERRORS section (the short summary after it repeats the whole message
    # when stdout is not a terminal, as in CI, and truncates it on a terminal).
    errors_section = result.stdout.str().split("short test summary info")[0]
    assert errors_section.count("oloproof.yaml:7:12") == 2


def test_no_project_is_a_clear_failure(pytester):
    pytester.makepyfile(test_none="def test_x(oloproof_run):\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*oloproof_run: no project; set --oloproof-project PATH*"])
