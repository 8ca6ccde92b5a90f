"""The pytest plugin (entry point ``pytest11``, registered by the ``oloproof`` wheel).

A project is run once per test session and handed to every test that asks for it::

    # pytest.ini / pyproject [tool.pytest.ini_options]:  oloproof_project = examples/support_rag
    def test_answers(oloproof_run):
        assert oloproof_run.gate("gate.yaml")                 # the project's gate policy
        assert oloproof_run["answer_correct"].lower >= 0.6    # the interval's lower bound

    @pytest.mark.oloproof(project="examples/support_rag", top_k=4)   # another project/overrides
    def test_top_4(oloproof_run):
        assert oloproof_run["hit_rate_at_4"].value >= 0.9

Where the project is, first found: the test's ``@pytest.mark.oloproof(project=…)`` (relative
to the test file's folder), ``--oloproof-project PATH`` (relative to the invocation folder), the
ini option ``oloproof_project`` (relative to the ini file's folder). The marker's other keywords
and ``--oloproof-set KEY=VALUE`` are overrides of :func:`oloproof.run`. Each distinct (project,
overrides) runs once per session, and a failed run (a :class:`~oloproof.ConfigError` or
:class:`~oloproof.RunError`) fails every test that uses it with the binary's message, once run.

A failed assertion says why in oloproof's terms: a comparison with a criterion's value or an
interval bound (``run["x"].value``, ``.lower``, ``.upper``; a missing one compares false rather
than raising ``TypeError``) prints the criterion's metric table row, as ``oloproof run`` prints
it, and its failing case ids (``pytest_assertrepr_compare``), and a
gate or a comparison that was false during the test adds an "oloproof" section with the gate
decision, every threshold or decision, the failed criteria's rows and their failing case ids.
"""

import os
from typing import Any, Dict, List, Optional, Tuple

import pytest

from oloproof import api

_FAILURES = pytest.StashKey[List[Any]]()


def pytest_addoption(parser):
    group = parser.getgroup("oloproof", "oloproof: RAG evaluation runs")
    group.addoption(
        "--oloproof-project",
        action="store",
        default=None,
        metavar="PATH",
        help="project folder (or oloproof.yaml) that the oloproof_run fixture runs",
    )
    group.addoption(
        "--oloproof-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config value of that run, e.g. system.rag.top_k=4 (repeatable)",
    )
    parser.addini(
        "oloproof_project",
        "project folder (or oloproof.yaml) that the oloproof_run fixture runs, relative to the ini file",
        default=None,
    )


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "oloproof(project=None, **overrides): the project (relative to the test file) and the "
        "oloproof.run overrides (top_k=4, sample=20, …) of this test's oloproof_run",
    )


class OloproofSession:
    """The session's runs: one :func:`oloproof.run` per distinct (project, overrides), the
    result or the error kept for every later test."""

    def __init__(self):
        self._runs: Dict[Tuple, Any] = {}

    def run(self, project: str, sets: Dict[str, Any], **overrides: Any) -> "api.Run":
        """The session's run of ``project`` with these overrides (run on first use)."""
        key = (
            os.path.abspath(project),
            tuple(sorted((k, repr(v)) for k, v in sets.items())),
            tuple(sorted((k, repr(v)) for k, v in overrides.items())),
        )
        if key not in self._runs:
            try:
                self._runs[key] = api.run(project, set=sets, **overrides)
            except api.OloproofError as exc:
                self._runs[key] = exc
        found = self._runs[key]
        if isinstance(found, api.OloproofError):
            pytest.fail(
                "oloproof run of %s failed (exit %s):\n%s"
                % (project, found.exit_code, found.message),
                pytrace=False,
            )
        return found


@pytest.fixture(scope="session")
def oloproof_session() -> OloproofSession:
    """The session's cache of runs (see :class:`OloproofSession`)."""
    return OloproofSession()


def _parse_sets(values: List[str]) -> Dict[str, str]:
    sets = {}
    for value in values:
        key, sep, raw = value.partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError("--oloproof-set %r: expected KEY=VALUE, e.g. system.rag.top_k=4" % value)
        sets[key.strip()] = raw
    return sets


def _project(request) -> Tuple[str, Dict[str, Any]]:
    marker = request.node.get_closest_marker("oloproof")
    overrides: Dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    project = overrides.pop("project", None)
    if project is not None:
        return os.path.join(os.path.dirname(str(request.node.path)), os.fspath(project)), overrides
    config = request.config
    option = config.getoption("oloproof_project")
    if option:
        return os.path.join(str(config.invocation_params.dir), option), overrides
    ini = config.getini("oloproof_project")
    if ini:
        base = os.path.dirname(str(config.inipath)) if config.inipath else str(config.rootpath)
        return os.path.join(base, ini), overrides
    pytest.fail(
        "oloproof_run: no project; set --oloproof-project PATH, the ini option oloproof_project, "
        "or @pytest.mark.oloproof(project=PATH)",
        pytrace=False,
    )
    raise AssertionError("unreachable")  # pragma: no cover - pytest.fail raises


@pytest.fixture
def oloproof_run(request, oloproof_session) -> "api.Run":
    """The :class:`oloproof.Run` of the configured project, run once per session."""
    project, overrides = _project(request)
    sets = _parse_sets(request.config.getoption("oloproof_set"))
    sets.update(overrides.pop("set", None) or {})  # the marker's set= wins over the option
    return oloproof_session.run(project, sets, **overrides)


# --- failure messages ----------------------------------------------------------------------------


def _case_lines(criterion: "api.Criterion", limit: int = 10) -> List[str]:
    """The failing case ids of a pass/fail criterion, or the lowest scores of a score."""
    try:
        if criterion.passed is not None:
            ids = criterion.failing_cases()
            more = " …(%d more)" % (len(ids) - limit) if len(ids) > limit else ""
            return ["failing cases: %s%s" % (", ".join(ids[:limit]) or "none", more)]
        scored = []
        for case in criterion._run.cases() if criterion._run is not None else []:
            verdict = case.verdicts.get(criterion.name)
            if verdict is not None and verdict.value is not None:
                scored.append((verdict.value, case.id))
        scored.sort()
        return [
            "lowest cases: %s"
            % (", ".join("%s %.3f" % (cid, value) for value, cid in scored[:limit]) or "none")
        ]
    except api.OloproofError as exc:
        return ["cases unavailable: %s" % exc]


def _described(side: Any) -> str:
    if isinstance(side, api.NoBound):
        return "None (%s)" % side.reason()
    return repr(side)


def pytest_assertrepr_compare(config, op, left, right) -> Optional[List[str]]:
    """``run["x"].lower >= 0.8`` (or ``.value``, ``.upper``; also when the run has no such
    number): the comparison, the criterion's table row as the binary prints it, its failing
    cases (or lowest scores)."""
    kinds = (api.Bound, api.NoBound)
    bound = left if isinstance(left, kinds) else right if isinstance(right, kinds) else None
    if bound is None:
        return None
    criterion = bound.criterion
    what = "value" if bound.side == "value" else "%s bound" % bound.side
    return [
        "%s of %s: %s %s %s" % (what, criterion.name, _described(left), op, _described(right)),
        criterion.row(),
    ] + _case_lines(criterion)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    failures: List[Any] = []
    item.stash[_FAILURES] = failures
    api._failure_listeners.append(failures.append)
    try:
        yield
    finally:
        api._failure_listeners.remove(failures.append)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    seen = set()
    texts = []
    for result in item.stash.get(_FAILURES, []):
        if id(result) in seen:
            continue
        seen.add(id(result))
        try:
            texts.append(result.explain())
        except api.OloproofError as exc:
            texts.append("%r (details unavailable: %s)" % (result, exc))
    if texts:
        report.sections.append(("oloproof", "\n\n".join(texts)))
