"""The installed wheel: the binary and the package together, the Python API over `--json`, and the
interpreter the venv's binary gives its workers."""

import json
import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

import oloproof
from oloproof import api

# The tutorial's numbers for examples/support_rag (README "A first run"): 9 of 13 answers.
FAILING_ANSWERS = ["money_back", "refund_review", "seat_count", "security_review"]


def binary_json(*args):
    """What the binary itself prints with --json (exit 0, or 3 for a blocked gate)."""
    out = subprocess.run([oloproof.find_binary(), *map(str, args)], capture_output=True, text=True)
    assert out.returncode in (0, 3), out.stderr
    return json.loads(out.stdout)


def test_the_package_and_the_binary_are_the_wheels():
    scripts = sysconfig.get_path("scripts")
    assert Path(oloproof.__file__).resolve().is_relative_to(Path(sysconfig.get_path("purelib")).resolve())
    assert oloproof.find_binary() == os.path.join(scripts, "oloproof")
    version = subprocess.run(
        [oloproof.find_binary(), "--version"], check=True, capture_output=True, text=True
    ).stdout.split()
    assert version == ["oloproof", oloproof.__version__]


def test_a_run_is_the_binarys_summary(project):
    dir = project("support_rag")
    run = oloproof.run(dir)
    # Nothing recomputed: the summary is what `show RUN --json` prints for the stored run.
    assert run.summary == binary_json("show", run.id, "--dir", dir, "--json")
    answer = run["answer_correct"]
    assert (answer.passed, answer.observed, answer.missing, answer.excluded) == (9, 13, 0, 0)
    assert answer.value == pytest.approx(9 / 13)
    assert answer.interval == (0.385, 0.91)
    assert answer.method == "clopper_pearson"
    assert answer.lower == 0.385 and isinstance(answer.lower, api.Bound)
    assert isinstance(answer.value, api.Bound) and answer.value.side == "value"
    # The row is the binary's own: the cells of the table `oloproof run` prints.
    assert answer.row() == "│ answer_correct │ 69.2% │ [38.5%, 91.0%] │ 9 / 13 observed · 0 missing · 0 excluded │"
    assert run["ndcg_at_6"].cells() == ["ndcg_at_6", "0.866", "[0.684, 1.000]", "mean of 13 observed · 0 missing · 0 excluded"]
    assert list(run.criteria) == [
        "answer_correct",
        "hit_rate_at_2",
        "recall_at_2",
        "ndcg_at_6",
        "citations_valid",
    ]
    with pytest.raises(KeyError, match="no criterion 'faithfulness'; it has: answer_correct"):
        run["faithfulness"]


def test_cases_and_the_data_frame(project):
    dir = project("support_rag")
    run = oloproof.run(dir)
    cases = run.cases()
    with open(dir / "cases.jsonl") as f:
        assert [c.id for c in cases] == [json.loads(line)["id"] for line in f]
    by_id = {c.id: c for c in cases}
    money_back = by_id["money_back"]
    assert money_back.passed("answer_correct") is False
    assert money_back.passed("ndcg_at_6") is None  # a score is neither a pass nor a fail
    assert money_back.verdicts["ndcg_at_6"].value == 0.0
    assert money_back.answer.startswith("Money from app sales")
    assert money_back.trace["retrieval"]["candidates"][0]["doc_id"] == "kb-17"
    assert run["answer_correct"].failing_cases() == FAILING_ANSWERS
    # The same verdicts as `show --case --json`.
    shown = binary_json("show", run.id, "--case", "money_back", "--dir", dir, "--json")
    assert money_back.data["verdicts"] == shown["verdicts"]

    frame = run.to_pandas()
    assert list(frame.columns[:3]) == ["case_id", "error", "answer_correct"]
    assert len(frame) == 13
    row = frame.set_index("case_id").loc["money_back"]
    assert row["answer_correct"] == 0.0 and row["answer_correct.status"] == "fail"
    assert row["citations_valid"] == 1.0
    assert frame["answer_correct"].sum() == 9
    assert frame["ndcg_at_6"].mean() == pytest.approx(run["ndcg_at_6"].value)


def test_the_gate_is_a_result_and_says_why(project):
    dir = project("support_rag")
    run = oloproof.run(dir)
    gate = run.gate("gate.yaml")  # found in the project folder
    assert not gate and gate.decision == "BLOCK"
    assert gate.report == binary_json("gate", run.id, "--policy", dir / "gate.yaml", "--dir", dir, "--json")
    assert [t.line() for t in gate.failed] == [
        "answer_correct lower_bound 0.385 min 0.600 FAIL (below_min)"
    ]
    assert gate.failing_cases() == {"answer_correct": FAILING_ANSWERS}
    text = gate.explain()
    assert text.splitlines()[0] == "Gate: BLOCK (gate.yaml)"
    assert "failing cases: money_back, refund_review, seat_count, security_review" in text
    assert "failing cases: money_back" in repr(gate)
    assert oloproof.gate(run, dir / "gate.yaml").decision == "BLOCK"

    passing = dir / "pass.yaml"
    passing.write_text("thresholds:\n  - {criterion: answer_correct, min: 0.6}\n")
    assert run.gate(passing)


def test_a_bad_policy_is_a_located_config_error(project):
    dir = project("support_rag")
    run = oloproof.run(dir, sample=3)
    bad = dir / "bad.yaml"
    bad.write_text("thresholds:\n  - {criterion: answer_correct, mni: 0.6}\n")
    for call in (lambda: oloproof.gate(run, bad), lambda: run.gate("bad.yaml")):
        with pytest.raises(oloproof.ConfigError) as err:
            call()
        assert err.value.exit_code == 2
        assert "bad.yaml:2:" in err.value.message, err.value.message
        assert "mni" in err.value.message
    with pytest.raises(oloproof.ConfigError) as err:
        oloproof.compare(run, run, bad)
    assert err.value.exit_code == 2 and "bad.yaml" in err.value.message, err.value.message
    with pytest.raises(oloproof.ConfigError) as err:
        oloproof.gate(run, dir / "missing.yaml")
    assert "missing.yaml" in err.value.message


def test_compare_two_runs(project):
    dir = project("support_rag")
    baseline = oloproof.run(dir)
    candidate = oloproof.run(dir, top_k=1)
    assert candidate.id != baseline.id
    comparison = oloproof.compare(candidate, baseline, "compare.yaml")
    assert comparison.record == binary_json(
        "inspect", comparison.id, "--dir", dir, "--json"
    )
    assert (comparison.candidate, comparison.baseline) == (candidate.id, baseline.id)
    assert [d.name for d in comparison.decisions] == ["answers-not-worse", "citations-not-worse"]
    assert bool(comparison) is (comparison.decision == "PASS")
    assert comparison.explain().startswith("Gate: %s (%s vs %s" % (comparison.decision, candidate.id, baseline.id))
    # Run ids work as well as runs.
    again = oloproof.compare(candidate.id, baseline.id, dir / "compare.yaml", path_or_config=dir)
    assert again.id == comparison.id


def test_overrides_reach_the_binary(project):
    dir = project("support_rag")
    run = oloproof.run(dir, sample=5, seed=3, set={"system.version": "from-python"}, workers=1)
    assert run.summary["cases"] == 5 and run.version == "from-python"
    with pytest.raises(oloproof.ConfigError) as err:
        oloproof.run(dir, top_k="many")
    assert err.value.exit_code == 2
    assert "--set system.rag.top_k=many" in err.value.message
    assert "expected: a non-negative integer" in err.value.message


def test_a_bad_config_is_a_located_config_error(project):
    dir = project("support_rag")
    config = dir / "oloproof.yaml"
    config.write_text(config.read_text().replace("top_k: 2", "top_k: many"))
    with pytest.raises(oloproof.ConfigError) as err:
        oloproof.run(dir)
    e = err.value
    assert e.exit_code == 2
    assert "oloproof.yaml:7:12" in e.message and "key: system.rag.top_k" in e.message
    assert str(e).endswith("(exit 2)")
    with pytest.raises(oloproof.ConfigError, match="unknown run|no run"):
        oloproof.load_run("run_01M8SJ2Y9Z3Y7CFXQ3TKQGG8BD", dir)


def test_an_incomplete_run_is_a_run_error_that_keeps_the_run(tmp_path):
    (tmp_path / "app.py").write_text(
        textwrap.dedent(
            """
            from oloproof import Passage, rag_system

            @rag_system(name="broken", version="1", depth=1, top_k=1)
            class Broken:
                def retrieve(self, input, depth):
                    return [Passage(doc_id="d1", text="some text")]

                def generate(self, input, context):
                    raise RuntimeError("the model is down")
            """
        )
    )
    (tmp_path / "cases.jsonl").write_text(
        '{"id": "a", "input": {"question": "q1"}, "expected": {"answer": "x"}}\n'
        '{"id": "b", "input": {"question": "q2"}, "expected": {"answer": "x"}}\n'
    )
    (tmp_path / "oloproof.yaml").write_text(
        "system: {name: broken, version: '1', rag: {object: 'app:Broken', workers: 1}}\n"
        "cases: cases.jsonl\n"
        "evaluators: [{type: contains, criterion: answer_correct, field: answer, expected_field: answer}]\n"
    )
    with pytest.raises(oloproof.RunError) as err:
        oloproof.run(tmp_path)
    e = err.value
    assert e.exit_code == 4
    assert "max-error-rate" in e.message or "max_error_rate" in e.message
    assert e.run is not None and e.run.errors == 2
    cases = e.run.cases()
    assert "the model is down" in json.dumps(cases[0].error)
    assert e.run["answer_correct"].observed == 0


def test_a_config_mapping_is_read_from_its_folder(project):
    dir = project("support_rag")
    config = {
        "system": {"name": "support-rag", "version": "mapping", "rag": {"object": "app:SupportRag", "depth": 6, "top_k": 2, "workers": 1}},
        "cases": "cases.jsonl",
        "evaluators": [{"type": "hit_rate", "k": 2}],
    }
    run = oloproof.run(config, dir=dir)
    assert run.version == "mapping" and run["hit_rate_at_2"].passed == 12
    assert run.project_dir == str(dir)


def test_workers_of_the_venvs_binary_use_the_venvs_interpreter(tmp_path, venv_only_path):
    # PATH no longer leads to this venv, so only "the python beside the binary" finds it.
    (tmp_path / "app.py").write_text(
        textwrap.dedent(
            """
            import sys
            from oloproof import Passage, rag_system

            @rag_system(name="which-python", version="1", depth=1, top_k=1)
            class WhichPython:
                def retrieve(self, input, depth):
                    return [Passage(doc_id="d1", text="x")]

                def generate(self, input, context):
                    return {"answer": sys.prefix + "|" + sys.executable, "citations": []}
            """
        )
    )
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": {"question": "q"}, "expected": {"answer": "x"}}\n')
    (tmp_path / "oloproof.yaml").write_text(
        "system: {name: which-python, version: '1', rag: {object: 'app:WhichPython', workers: 1}}\n"
        "cases: cases.jsonl\nevaluators: [{type: exact_match, field: answer, expected_field: answer}]\n"
    )
    run = oloproof.run(tmp_path)
    prefix, executable = run.cases()[0].answer.split("|")
    assert prefix == sys.prefix
    assert Path(executable).parent == Path(venv_only_path)


def test_the_binary_lookup_order(monkeypatch, tmp_path):
    bundled = oloproof.find_binary()
    # Not beside the interpreter nor in the scripts folders: $OLOPROOF_BIN, then PATH.
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setattr(sysconfig, "get_path", lambda *args, **kwargs: str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("OLOPROOF_BIN", raising=False)
    with pytest.raises(oloproof.BinaryNotFound, match=r"\$OLOPROOF_BIN is unset and none is on PATH"):
        oloproof.find_binary()
    monkeypatch.setenv("OLOPROOF_BIN", str(tmp_path / "missing"))
    with pytest.raises(oloproof.BinaryNotFound, match="which is not an executable file"):
        oloproof.find_binary()
    monkeypatch.setenv("OLOPROOF_BIN", bundled)
    assert oloproof.find_binary() == bundled
    monkeypatch.delenv("OLOPROOF_BIN")
    monkeypatch.setenv("PATH", os.path.dirname(bundled))
    assert oloproof.find_binary() == bundled
    # Beside the interpreter comes first, even over $OLOPROOF_BIN.
    beside = tmp_path / "oloproof"
    beside.write_text("#!/bin/sh\n")
    beside.chmod(0o755)
    monkeypatch.setenv("OLOPROOF_BIN", bundled)
    assert oloproof.find_binary() == str(beside)


def test_to_pandas_without_pandas_says_what_to_install(project, monkeypatch):
    run = oloproof.run(project("support_rag"), sample=2)
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` now raises ImportError
    with pytest.raises(ImportError, match=r"needs pandas: pip install pandas \(or oloproof\[pandas\]\)"):
        run.to_pandas()
