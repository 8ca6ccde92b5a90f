"""Run, gate and compare evaluations from Python: a thin layer over the ``oloproof`` binary.

Every function here starts the binary with ``--json`` and reads what it prints; nothing is
computed in Python (the values, intervals, decisions and case verdicts are the binary's)::

    import oloproof

    run = oloproof.run("examples/support_rag", top_k=4)       # oloproof run … --json
    run["answer_correct"].value, run["answer_correct"].interval
    gate = run.gate("gate.yaml")                               # oloproof gate RUN --json
    bool(gate), gate.decision                                  # False, 'BLOCK'
    [c.id for c in run.cases() if not c.passed("answer_correct")]
    run.to_pandas()                                            # one row per case (pandas)

Errors are exceptions carrying the binary's own located message (``file:line:col``, key path,
what was expected, a fix) and its exit code: :class:`ConfigError` for exit 2 (bad config, case
file, flag or run id), :class:`RunError` for any other failure (exit 4: the run is incomplete,
the system or the store failed). A gate that blocks (exit 3) is not an error: it is a result
whose truth value is ``False``.

Which binary: the one the wheel installed beside this interpreter (``sys.executable``'s folder,
then ``sysconfig``'s scripts folder), else ``$OLOPROOF_BIN``, else ``oloproof`` on ``PATH``
(:func:`find_binary`). Standard library only; pandas is imported by :meth:`Run.to_pandas` alone.
"""

import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import sysconfig
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

__all__ = [
    "OloproofError",
    "ConfigError",
    "RunError",
    "BinaryNotFound",
    "find_binary",
    "run",
    "load_run",
    "gate",
    "compare",
    "Run",
    "Criterion",
    "Bound",
    "NoBound",
    "Case",
    "Verdict",
    "GateResult",
    "Threshold",
    "Comparison",
    "Decision",
    "Diagnosis",
    "ENV_BIN",
    "RAG_KEYS",
]

#: Environment variable naming the binary when no wheel-installed one is found.
ENV_BIN = "OLOPROOF_BIN"

#: Exit codes of the binary (``oloproof --help``).
EXIT_SUCCESS, EXIT_CONFIG, EXIT_GATE_BLOCKED, EXIT_INCOMPLETE = 0, 2, 3, 4

#: Keyword overrides of :func:`run` that are keys of ``system.rag`` in ``oloproof.yaml``
#: (``top_k=4`` is ``--set system.rag.top_k=4``). Any other unknown keyword is a top-level key.
RAG_KEYS = (
    "object",
    "command",
    "http",
    "depth",
    "top_k",
    "token_budget",
    "index_version",
    "workers",
    "timeout_s",
    "python",
    "params",
)

#: Keyword overrides of :func:`run` that are flags of ``oloproof run`` (``sample=20`` is
#: ``--sample 20``; ``no_cache=True`` is ``--no-cache``).
RUN_FLAGS = (
    "sample",
    "seed",
    "repeats",
    "threads",
    "max_error_rate",
    "max_cost",
    "dataset",
    "dataset_format",
    "history",
    "resume",
)

PathLike = Union[str, "os.PathLike[str]"]


# --- errors --------------------------------------------------------------------------------------


class OloproofError(Exception):
    """A failed call of the binary: ``message`` is what it printed on stderr (its located
    diagnostic), ``exit_code`` its exit code, ``command`` the argument list that was run."""

    def __init__(self, message: str, exit_code: Optional[int] = None, command=None, stdout=""):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.command = list(command or [])
        self.stdout = stdout

    def __str__(self) -> str:
        code = "" if self.exit_code is None else " (exit %d)" % self.exit_code
        return "%s%s" % (self.message.rstrip("\n"), code)


class ConfigError(OloproofError):
    """Exit 2: a usage or configuration error (``oloproof.yaml``, a case file, a policy, a flag,
    an unknown run id). The message names ``file:line:col``, the key, what was expected and a
    suggested fix, exactly as the binary prints it."""


class RunError(OloproofError):
    """Any other failure (exit 4 and unexpected codes): the run is incomplete (system errors or
    missing verdicts above ``max_error_rate``, a stopped run), or the system or the store
    failed. ``run`` holds the :class:`Run` when the binary still printed its summary."""

    def __init__(self, message, exit_code=None, command=None, stdout="", run=None):
        super().__init__(message, exit_code, command, stdout)
        self.run = run


class BinaryNotFound(OloproofError, FileNotFoundError):
    """No ``oloproof`` executable: not beside the interpreter, not ``$OLOPROOF_BIN``, not on
    ``PATH``."""


# --- finding and calling the binary --------------------------------------------------------------


def _exe(name: str) -> str:
    return name + (".exe" if os.name == "nt" else "")


def find_binary() -> str:
    """The ``oloproof`` executable to call.

    In order: the one ``pip install oloproof`` put beside this interpreter (the folder of
    ``sys.executable``, then ``sysconfig.get_path("scripts")``, then the user scheme's scripts
    folder), ``$OLOPROOF_BIN``, then ``oloproof`` on ``PATH``. Raises :class:`BinaryNotFound`.
    """
    name = _exe("oloproof")
    folders = [os.path.dirname(sys.executable), sysconfig.get_path("scripts")]
    user_scheme = "nt_user" if os.name == "nt" else "posix_user"
    try:
        folders.append(sysconfig.get_path("scripts", scheme=user_scheme))
    except KeyError:  # pragma: no cover - a platform without a user scheme
        pass
    for folder in folders:
        if folder:
            candidate = os.path.join(folder, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
    from_env = os.environ.get(ENV_BIN)
    if from_env:
        if not (os.path.isfile(from_env) and os.access(from_env, os.X_OK)):
            raise BinaryNotFound("$%s is %r, which is not an executable file" % (ENV_BIN, from_env))
        return from_env
    on_path = shutil.which("oloproof")
    if on_path:
        return on_path
    raise BinaryNotFound(
        "no oloproof executable: not beside %s, $%s is unset and none is on PATH; "
        "`pip install oloproof` installs it (or set %s to a built one, e.g. target/release/oloproof)"
        % (sys.executable, ENV_BIN, ENV_BIN)
    )


def _call(args: Sequence[str], binary: Optional[str], ok_codes=(EXIT_SUCCESS,)):
    """Runs the binary; returns ``(exit_code, parsed JSON stdout or None, stderr)``.

    An exit code outside ``ok_codes`` raises :class:`ConfigError` (2) or :class:`RunError`.
    """
    command = [binary or find_binary()] + [str(a) for a in args]
    proc = subprocess.run(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        check=False,
    )
    stdout = proc.stdout.decode("utf-8", errors="replace")
    stderr = proc.stderr.decode("utf-8", errors="replace")
    parsed = None
    if stdout.strip():
        try:
            parsed = json.loads(stdout)
        except ValueError as exc:
            if proc.returncode in ok_codes:
                raise RunError(
                    "oloproof printed output that is not JSON (%s): %s" % (exc, stdout[:500]),
                    proc.returncode,
                    command,
                    stdout,
                )
    if proc.returncode in ok_codes:
        return proc.returncode, parsed, stderr
    message = stderr.strip() or "oloproof exited with code %d and printed nothing on stderr" % (
        proc.returncode
    )
    if proc.returncode == EXIT_CONFIG:
        raise ConfigError(message, proc.returncode, command, stdout)
    raise RunError(message, proc.returncode, command, stdout)


# --- where a project is ---------------------------------------------------------------------------


class _Project:
    """Where the config is: the ``--dir``/``--config`` arguments every command repeats."""

    def __init__(self, dir: str, config: Optional[str]):
        self.dir = dir
        self.config = config

    @classmethod
    def locate(cls, path_or_config, dir: Optional[PathLike] = None) -> "_Project":
        if isinstance(path_or_config, Mapping):
            return cls._from_mapping(path_or_config, dir)
        path = os.path.abspath(os.fspath(path_or_config))
        if os.path.isdir(path):
            return cls(path, None)
        # A file (or a missing path: the binary says it is missing, with its message).
        return cls(os.path.dirname(path), path)

    @classmethod
    def _from_mapping(cls, config: Mapping, dir: Optional[PathLike]) -> "_Project":
        """A config given as a mapping is written (as JSON, which is YAML) to a content-named
        hidden file in ``dir`` (default: the working directory), so that its relative paths
        (``cases``, ``object``, the store) mean what they would in an ``oloproof.yaml`` there."""
        folder = os.path.abspath(os.fspath(dir) if dir is not None else os.getcwd())
        try:
            text = json.dumps(config, indent=2, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ConfigError("the config mapping cannot be written as JSON: %s" % exc) from exc
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
        path = os.path.join(folder, ".oloproof-config-%s.yaml" % digest)
        if not os.path.exists(path):
            staging = "%s.%d.tmp" % (path, os.getpid())
            with open(staging, "w", encoding="utf-8") as f:
                f.write(text + "\n")
            os.replace(staging, path)
        return cls(folder, path)

    def args(self) -> List[str]:
        if self.config is not None:
            return ["--config", self.config]
        return ["--dir", self.dir]

    def run_args(self) -> List[str]:
        """``oloproof run`` takes the folder as a positional argument."""
        if self.config is not None:
            return ["--config", self.config]
        return [self.dir]

    def resolve(self, path: PathLike) -> str:
        """A policy path: absolute as given; relative ones against the project folder when the
        file is there, else against the working directory (the binary reports a missing file)."""
        path = os.fspath(path)
        if os.path.isabs(path):
            return path
        in_project = os.path.join(self.dir, path)
        if os.path.exists(in_project):
            return in_project
        return os.path.abspath(path)


def _set_value(value: Any) -> str:
    """A Python value as the right side of ``--set KEY=VALUE`` (a YAML scalar or flow value)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return json.dumps(value, allow_nan=False)
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    return str(value)


def _override_args(overrides: Mapping[str, Any], sets: Mapping[str, Any]) -> List[str]:
    args: List[str] = []
    for key, value in overrides.items():
        if key in RUN_FLAGS:
            if value is not None:
                args += ["--" + key.replace("_", "-"), _set_value(value)]
        elif key == "no_cache":
            if value:
                args.append("--no-cache")
        elif key in RAG_KEYS:
            args += ["--set", "system.rag.%s=%s" % (key, _set_value(value))]
        else:
            args += ["--set", "%s=%s" % (key, _set_value(value))]
    for key, value in sets.items():
        args += ["--set", "%s=%s" % (key, _set_value(value))]
    return args


# --- the API ---------------------------------------------------------------------------------------


def run(
    path_or_config: Union[PathLike, Mapping[str, Any]] = ".",
    *,
    set: Optional[Mapping[str, Any]] = None,
    dir: Optional[PathLike] = None,
    binary: Optional[str] = None,
    **overrides: Any,
) -> "Run":
    """Runs a project (``oloproof run … --json``) and returns its :class:`Run`.

    ``path_or_config`` is a project folder (holding ``oloproof.yaml``), a config file, or the
    config itself as a mapping (written to a hidden file in ``dir``, default the working
    directory, so its relative paths are read from there).

    Overrides, all applied by the binary: keys of ``system.rag`` by name (``top_k=4``,
    ``token_budget=300``, ``workers=1``: see :data:`RAG_KEYS`); the run's flags (``sample``,
    ``seed``, ``repeats``, ``threads``, ``max_error_rate``, ``max_cost``, ``dataset``,
    ``dataset_format``, ``history``, ``resume``, ``no_cache=True``); any other keyword is a
    top-level config key (``cases="hard.jsonl"``); ``set={"system.name": "x"}`` takes dotted
    key paths. An unknown key is the binary's :class:`ConfigError`, located.

    Raises :class:`ConfigError` (exit 2) or :class:`RunError` (exit 4: the run is incomplete;
    its :class:`Run` is in ``error.run`` when a summary was printed).
    """
    project = _Project.locate(path_or_config, dir)
    args = ["run"] + project.run_args() + ["--json"] + _override_args(overrides, set or {})
    try:
        _, summary, stderr = _call(args, binary)
    except RunError as exc:
        if exc.stdout.strip():
            try:
                exc.run = Run(json.loads(exc.stdout), project, binary, "")
            except ValueError:
                pass  # the summary is not readable; the error itself says what failed
        raise
    if not isinstance(summary, dict):
        raise RunError("oloproof run printed no summary", EXIT_SUCCESS, args)
    return Run(summary, project, binary, stderr)


def load_run(
    run_id: str,
    path_or_config: Union[PathLike, Mapping[str, Any]] = ".",
    *,
    dir: Optional[PathLike] = None,
    binary: Optional[str] = None,
) -> "Run":
    """A stored run of the project's store (``oloproof show RUN --json``)."""
    project = _Project.locate(path_or_config, dir)
    _, summary, stderr = _call(["show", run_id] + project.args() + ["--json"], binary)
    return Run(summary, project, binary, stderr)


def gate(run: "Run", policy: PathLike, *, history: Optional[PathLike] = None) -> "GateResult":
    """The absolute gate of ``run`` under ``policy`` (``oloproof gate RUN --policy P --json``).

    Returns a :class:`GateResult`, true when the gate passes; a blocked gate (exit 3) is a
    result, not an exception. ``history`` is the score history that ``window:`` thresholds
    pool (default: ``history:`` of the config). A relative policy path is looked up in the
    project folder first, then in the working directory.
    """
    return run.gate(policy, history=history)


def compare(
    candidate: Union["Run", str],
    baseline: Union["Run", str],
    policy: PathLike,
    *,
    path_or_config: Optional[Union[PathLike, Mapping[str, Any]]] = None,
    binary: Optional[str] = None,
) -> "Comparison":
    """Compares ``candidate`` with ``baseline`` under ``policy`` (``oloproof compare … --json``).

    Either may be a :class:`Run` or a run id; both must be in the same store (the candidate's
    project, or ``path_or_config`` when both are ids). Returns a :class:`Comparison`, true when
    its gate passes (a blocked gate, exit 3, is a result, not an exception).
    """
    project = None
    for side in (candidate, baseline):
        if isinstance(side, Run):
            project = side._project
            binary = binary or side._binary
            break
    if path_or_config is not None:
        project = _Project.locate(path_or_config)
    if project is None:
        project = _Project.locate(".")
    cand = candidate.id if isinstance(candidate, Run) else str(candidate)
    base = baseline.id if isinstance(baseline, Run) else str(baseline)
    args = ["compare", cand, base, "--policy", project.resolve(policy)] + project.args()
    _, record, _ = _call(args + ["--json"], binary, ok_codes=(EXIT_SUCCESS, EXIT_GATE_BLOCKED))
    return Comparison(record, project.resolve(policy))


# --- results ---------------------------------------------------------------------------------------


def _fmt(value: Optional[float]) -> str:
    return "—" if value is None or isinstance(value, NoBound) else "%.3f" % value


# --- the binary's table cells (crates/report/src/lib.rs: value_cell, interval_cell, counts_cell),
# formatted the same way so that a row here reads as the row `oloproof run` printed.


def _proportion(x: float) -> str:
    """``format_proportion``: ``0.6923…`` → ``69.2%``."""
    return "%.1f%%" % (x * 100.0)


def _amount(x: float) -> str:
    """``format_amount``: four significant digits at most (``1500``, ``42.50``, ``0.0001230``)."""
    if x == 0.0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    if not math.isfinite(x):
        return "NaN" if x != x else ("inf" if x > 0 else "-inf")
    magnitude = math.floor(math.log10(abs(x)))
    decimals = min(max(3 - magnitude, 0), 12)
    return "%.*f" % (decimals, x)


def _quantile_label(q: float) -> str:
    """``QuantileLevel::label``: ``0.95`` → ``p95``, ``0.999`` → ``p99_9``."""
    percent = round(q * 1e6) / 1e4
    text = ("%d" % percent) if percent == int(percent) else repr(percent)
    return ("p" + text).replace(".", "_")


class _Kind:
    """A summary kind as the binary writes it: ``proportion``, ``rate``, ``mean``, ``amount``
    or ``{"quantile": 0.95}``."""

    def __init__(self, kind: Any):
        self.quantile: Optional[float] = kind.get("quantile") if isinstance(kind, dict) else None
        self.name: str = "quantile" if self.quantile is not None else str(kind or "")

    @property
    def percent(self) -> bool:
        return self.name in ("proportion", "rate")

    @property
    def lower_is_better(self) -> bool:
        return self.name in ("amount", "quantile")

    def number(self, x: float) -> str:
        if self.percent:
            return _proportion(x)
        if self.lower_is_better:
            return _amount(x)
        return "%.3f" % x


class Bound(float):
    """A criterion's value or an interval bound (a ``float``) that knows its criterion, so that
    a failed ``assert run["faithfulness"].lower >= 0.8`` (or ``.value``, ``.upper``) prints the
    criterion's table row under the pytest plugin (``pytest_assertrepr_compare``). ``side`` is
    ``value``, ``lower`` or ``upper``."""

    criterion: "Criterion"
    side: str

    def __new__(cls, value: float, criterion: "Criterion", side: str):
        bound = float.__new__(cls, value)
        bound.criterion = criterion
        bound.side = side
        return bound

    def __repr__(self) -> str:
        return float.__repr__(self)

    def __reduce__(self):
        return (float, (float(self),))


class NoBound:
    """A value or bound the run does not have (no interval for too few cases, no value when
    every case was excluded or missing): equal to ``None`` and false, and every ordering
    comparison with it is false — so ``assert run["x"].lower >= 0.8`` fails, and under the
    pytest plugin says why with the criterion's table row, instead of raising ``TypeError``.
    ``float()`` of it raises ``ValueError`` naming the criterion."""

    __slots__ = ("criterion", "side")

    def __init__(self, criterion: "Criterion", side: str):
        self.criterion = criterion
        self.side = side

    def reason(self) -> str:
        """Why there is no number: the binary's ``no_interval`` reason, or the counts."""
        c = self.criterion
        if self.side != "value" and c.data.get("no_interval"):
            return "no interval: %s" % c.data["no_interval"]
        if c.data.get("value") is None:
            return "no value: %d observed · %d missing · %d excluded" % (
                c.observed, c.missing, c.excluded)
        return "no interval"

    def __eq__(self, other) -> bool:
        return other is None or isinstance(other, NoBound)

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(None)

    def __bool__(self) -> bool:
        return False

    def _never(self, other) -> bool:
        return False

    __lt__ = __le__ = __gt__ = __ge__ = _never

    def __float__(self) -> float:
        raise ValueError("%s of %s: %s" % (self.side, self.criterion.name, self.reason()))

    def __repr__(self) -> str:
        return "None"


class Criterion:
    """One criterion of a run summary: ``value``, its ``interval`` (``lower``, ``upper``,
    ``method``) and the counts ``observed`` / ``missing`` / ``excluded`` (plus ``passed`` for
    pass/fail criteria). ``value``, ``lower`` and ``upper`` are :class:`Bound` floats, or a
    :class:`NoBound` (equal to ``None``) when the run has none. ``repr`` is the metric table
    row. ``data`` is the binary's object."""

    def __init__(self, data: Mapping[str, Any], run: Optional["Run"] = None):
        self.data = dict(data)
        self._run = run
        self.name: str = data["criterion"]
        self.kind: str = data.get("kind", "")
        interval = data.get("interval") or [None, None]
        self.method: Optional[str] = data.get("interval_method")
        self.passed: Optional[int] = data.get("passed")
        self.observed: int = data.get("observed", 0)
        self.missing: int = data.get("missing", 0)
        self.excluded: int = data.get("excluded", 0)
        self.value = self._bound(data.get("value"), "value")
        self.lower = self._bound(interval[0], "lower")
        self.upper = self._bound(interval[1], "upper")

    def _bound(self, x: Optional[float], side: str):
        return NoBound(self, side) if x is None else Bound(x, self, side)

    @property
    def interval(self) -> Tuple[Optional[float], Optional[float]]:
        """``(lower, upper)`` of the run's interval (95 %, ``method``)."""
        return (self.lower, self.upper)

    @property
    def counts(self) -> Dict[str, Optional[int]]:
        """``{"passed", "observed", "missing", "excluded"}`` (``passed`` is None for scores)."""
        return {
            "passed": self.passed,
            "observed": self.observed,
            "missing": self.missing,
            "excluded": self.excluded,
        }

    def failing_cases(self) -> List[str]:
        """Ids of the cases whose verdict on this criterion is ``fail`` or ``missing``, in the
        run's order (reads the run's cases once: ``oloproof inspect RUN --json``)."""
        if self._run is None:
            return []
        return [c.id for c in self._run.cases() if c.verdicts.get(self.name) is not None
                and c.verdicts[self.name].status in ("fail", "missing")]

    def cells(self) -> List[str]:
        """The four cells of this criterion's row in the binary's metric table (``criterion``,
        ``value``, ``95% interval``, ``counts``), formatted as the binary formats them:
        ``['answer_correct', '69.2%', '[38.5%, 91.0%]', '9 / 13 observed · 0 missing · 0
        excluded']``."""
        kind = _Kind(self.data.get("kind"))
        value = self.data.get("value")
        interval = self.data.get("interval")
        value_cell = "—" if value is None else kind.number(value)
        if interval is None:
            interval_cell = (
                "(too few cases)" if self.data.get("no_interval") and value is not None else "—"
            )
        else:
            interval_cell = "[%s, %s]" % (kind.number(interval[0]), kind.number(interval[1]))
        if self.passed is not None:
            head = "%d / %d observed" % (self.passed, self.observed)
        elif kind.quantile is not None:
            head = "%s of %d observed" % (_quantile_label(kind.quantile), self.observed)
        else:
            head = "mean of %d observed" % self.observed
        counts = "%s · %d missing · %d excluded" % (head, self.missing, self.excluded)
        return [self.name, value_cell, interval_cell, counts]

    def row(self) -> str:
        """The metric table row as ``oloproof run`` prints it, without the padding:
        ``│ answer_correct │ 69.2% │ [38.5%, 91.0%] │ 9 / 13 observed · 0 missing · 0 excluded │``."""
        return "│ %s │" % " │ ".join(self.cells())

    def __repr__(self) -> str:
        return "<Criterion %s>" % self.row()


class Verdict:
    """A case's verdict on one criterion: ``status`` (``pass``, ``fail``, ``score``,
    ``missing``, ``excluded``), ``value`` for scores, ``reason`` for an exclusion, ``error`` for
    a missing verdict, ``detail`` as the evaluator wrote it."""

    def __init__(self, data: Mapping[str, Any]):
        self.data = dict(data)
        self.criterion: str = data["criterion"]
        self.status: str = data["status"]
        self.value: Optional[float] = data.get("value")
        self.reason: Optional[str] = data.get("reason")
        self.error = data.get("error")
        self.detail = data.get("detail")

    def __repr__(self) -> str:
        extra = ""
        if self.value is not None:
            extra = " %.3f" % self.value
        elif self.reason:
            extra = " (%s)" % self.reason
        return "<Verdict %s %s%s>" % (self.criterion, self.status, extra)


class Case:
    """One case of a run: ``id``, ``input``, ``expected``, ``metadata``, the ``trace``
    (retrieval, context, generation, latency, cache; ``None`` when never executed), ``error``
    (the system error, if any) and ``verdicts`` by criterion."""

    def __init__(self, data: Mapping[str, Any]):
        self.data = dict(data)
        case = data.get("case") or {}
        self.id: str = case.get("id")
        self.input: Dict[str, Any] = case.get("input") or {}
        self.expected: Dict[str, Any] = case.get("expected") or {}
        self.metadata: Dict[str, Any] = case.get("metadata") or {}
        self.trace: Optional[Dict[str, Any]] = data.get("trace")
        self.error = (self.trace or {}).get("error")
        self.verdicts: Dict[str, Verdict] = {
            v["criterion"]: Verdict(v) for v in data.get("verdicts") or []
        }

    @property
    def answer(self) -> Optional[str]:
        """The generated answer, when the case was executed."""
        generation = (self.trace or {}).get("generation") or {}
        return generation.get("answer")

    def passed(self, criterion: str) -> Optional[bool]:
        """``True``/``False`` for a pass/fail verdict, ``None`` for a score, a missing or an
        excluded verdict (never a silent pass). ``KeyError`` for an unknown criterion."""
        status = self.verdicts[criterion].status
        if status == "pass":
            return True
        if status == "fail":
            return False
        return None

    def __repr__(self) -> str:
        return "<Case %s: %s>" % (
            self.id,
            ", ".join("%s %s" % (k, v.status if v.value is None else "%.3f" % v.value)
                      for k, v in self.verdicts.items()),
        )


class Run:
    """A finished (or stopped) run: ``id``, ``summary`` (the binary's JSON, as a dict),
    ``criteria`` (name → :class:`Criterion`), ``run["criterion"]``; :meth:`cases`,
    :meth:`gate`, :meth:`compare`, :meth:`to_pandas`. ``stderr`` is what the run printed there
    (warnings, progress)."""

    def __init__(self, summary: Mapping[str, Any], project: _Project, binary: Optional[str], stderr: str):
        self.summary: Dict[str, Any] = dict(summary)
        self._project = project
        self._binary = binary
        self._cases: Optional[List[Case]] = None
        self.stderr = stderr
        self.id: str = summary["run_id"]
        self.system: Optional[str] = summary.get("system")
        self.version: Optional[str] = summary.get("version")
        self.errors: int = summary.get("errors", 0)
        self.criteria: Dict[str, Criterion] = {
            c["criterion"]: Criterion(c, self) for c in summary.get("criteria") or []
        }

    @property
    def project_dir(self) -> str:
        """The folder of the run's config."""
        return self._project.dir

    def __getitem__(self, criterion: str) -> Criterion:
        try:
            return self.criteria[criterion]
        except KeyError:
            raise KeyError(
                "run %s has no criterion %r; it has: %s"
                % (self.id, criterion, ", ".join(self.criteria) or "none")
            ) from None

    def __contains__(self, criterion: str) -> bool:
        return criterion in self.criteria

    def __iter__(self) -> Iterator[Criterion]:
        return iter(self.criteria.values())

    def cases(self) -> List[Case]:
        """Every case with its trace and verdicts (``oloproof inspect RUN --json``, read once)."""
        if self._cases is None:
            _, data, _ = _call(
                ["inspect", self.id] + self._project.args() + ["--json"], self._binary
            )
            self._cases = [Case(c) for c in (data or {}).get("cases", [])]
        return list(self._cases)

    def table(self) -> str:
        """The metric table, one :meth:`Criterion.row` per line."""
        return "\n".join(c.row() for c in self.criteria.values())

    def gate(self, policy: PathLike, *, history: Optional[PathLike] = None) -> "GateResult":
        """See :func:`oloproof.gate`."""
        path = self._project.resolve(policy)
        args = ["gate", self.id, "--policy", path] + self._project.args() + ["--json"]
        if history is not None:
            args += ["--history", os.path.abspath(os.fspath(history))]
        _, report, _ = _call(args, self._binary, ok_codes=(EXIT_SUCCESS, EXIT_GATE_BLOCKED))
        return GateResult(report, self, path)

    def compare(self, baseline: Union["Run", str], policy: PathLike) -> "Comparison":
        """This run as the candidate against ``baseline``: see :func:`oloproof.compare`."""
        return compare(self, baseline, policy)

    def diagnose(
        self,
        criterion: str,
        intervention: str = "gold-context",
        *,
        top_k: Optional[int] = None,
        token_budget: Optional[int] = None,
        reranker: Optional[str] = None,
    ) -> "Diagnosis":
        """Re-executes this run's failed cases on ``criterion`` under ``intervention``
        (``gold-context``, ``top-k`` with ``top_k=``, ``token-budget`` with ``token_budget=``,
        ``reranker`` with ``reranker="module:function"`` or ``"judge:NAME"``):
        ``oloproof diagnose RUN … --json``."""
        args = ["diagnose", self.id, "--intervention", intervention, "--criterion", criterion]
        for flag, value in (("--top-k", top_k), ("--token-budget", token_budget), ("--reranker", reranker)):
            if value is not None:
                args += [flag, str(value)]
        _, record, _ = _call(args + self._project.args() + ["--json"], self._binary)
        return Diagnosis(record)

    def to_pandas(self):
        """One row per case: ``case_id``, ``error``, then one column per criterion holding
        the verdict's value (1.0/0.0 for pass/fail, the score for scores, NaN for missing or
        excluded verdicts: pandas' own "no value"), then ``<criterion>.status``. Needs pandas
        (``pip install oloproof[pandas]``)."""
        try:
            import pandas
        except ImportError as exc:
            raise ImportError(
                "Run.to_pandas() needs pandas: pip install pandas (or oloproof[pandas])"
            ) from exc
        rows = []
        names = list(self.criteria)
        for case in self.cases():
            row: Dict[str, Any] = {"case_id": case.id, "error": _error_text(case.error)}
            for name in names:
                verdict = case.verdicts.get(name)
                status = None if verdict is None else verdict.status
                row[name] = {"pass": 1.0, "fail": 0.0}.get(
                    status, verdict.value if verdict is not None and status == "score" else float("nan")
                )
                row[name + ".status"] = status
            rows.append(row)
        columns = ["case_id", "error"] + names + [n + ".status" for n in names]
        return pandas.DataFrame(rows, columns=columns)

    def __repr__(self) -> str:
        return "<Run %s %s %s · %s cases · %d errors>" % (
            self.id,
            self.system,
            self.version,
            self.summary.get("cases"),
            self.errors,
        )


def _error_text(error) -> Optional[str]:
    if error is None:
        return None
    if isinstance(error, dict):
        return error.get("message") or json.dumps(error, ensure_ascii=False)
    return str(error)


class Threshold:
    """One threshold of a gate report: ``criterion``, ``op`` (``min``/``max``), ``on``
    (``value``, ``lower_bound``, …), ``threshold``, the ``compared`` number, ``verdict``
    (``PASS``/``FAIL``) and ``reasons``; ``data`` is the binary's object."""

    def __init__(self, data: Mapping[str, Any]):
        self.data = dict(data)
        self.criterion: str = data.get("criterion")
        self.op: str = data.get("op")
        self.on: str = data.get("on")
        self.threshold = data.get("threshold")
        self.compared = data.get("compared")
        self.verdict: str = data.get("verdict")
        self.reasons: List[str] = list(data.get("reasons") or [])

    @property
    def ok(self) -> bool:
        """Whether this threshold passed."""
        return self.verdict == "PASS"

    def line(self) -> str:
        """``answer_correct lower_bound 0.385 min 0.600 FAIL (below_min)``."""
        return "%s %s %s %s %s %s (%s)" % (
            self.criterion,
            self.on,
            _fmt(self.compared),
            self.op,
            _fmt(self.threshold),
            self.verdict,
            ", ".join(self.reasons),
        )

    def __repr__(self) -> str:
        return "<Threshold %s>" % self.line()


class GateResult:
    """The gate report (``oloproof gate --json``): ``decision`` (``PASS``/``BLOCK``),
    ``thresholds``; true when the gate passes. Its ``repr`` and :meth:`explain` say the
    decision, each failed threshold and the failing case ids of its criterion."""

    def __init__(self, report: Mapping[str, Any], run: Optional[Run], policy: str):
        self.report: Dict[str, Any] = dict(report)
        self.run = run
        self.policy = policy
        self.decision: str = report.get("gate")
        self.thresholds: List[Threshold] = [Threshold(t) for t in report.get("thresholds") or []]

    def __bool__(self) -> bool:
        passed = self.decision == "PASS"
        if not passed:
            _note_failure(self)
        return passed

    @property
    def failed(self) -> List[Threshold]:
        """The thresholds that did not pass."""
        return [t for t in self.thresholds if not t.ok]

    def failing_cases(self) -> Dict[str, List[str]]:
        """Failing case ids per criterion of a failed threshold."""
        if self.run is None:
            return {}
        out: Dict[str, List[str]] = {}
        for t in self.failed:
            if t.criterion in self.run.criteria and t.criterion not in out:
                out[t.criterion] = self.run.criteria[t.criterion].failing_cases()
        return out

    def explain(self) -> str:
        """The decision, every threshold, the failed criteria's table rows and failing cases."""
        lines = ["Gate: %s (%s)" % (self.decision, os.path.basename(self.policy))]
        lines += ["  %s" % t.line() for t in self.thresholds]
        if self.run is not None:
            for criterion, ids in self.failing_cases().items():
                lines.append("  %s" % self.run.criteria[criterion].row())
                lines.append("    failing cases: %s" % (", ".join(ids) or "none"))
        return "\n".join(lines)

    def __repr__(self) -> str:
        failed = "; ".join(t.line() for t in self.failed)
        cases = ""
        if self.run is not None and self.failed:
            try:
                ids = sorted({i for v in self.failing_cases().values() for i in v})
                cases = " · failing cases: %s" % (", ".join(ids) or "none")
            except OloproofError as exc:  # the repr still says what the gate decided
                cases = " · failing cases unavailable: %s" % exc
        return "<Gate %s %s%s%s>" % (
            self.decision,
            os.path.basename(self.policy),
            ": " + failed if failed else "",
            cases,
        )


class Diagnosis:
    """A diagnosis record (``oloproof diagnose --json``): ``id``, ``labels`` (case id → label
    such as ``RETRIEVAL_MISS``, ``RANKED_OUT``, ``CONTEXT_DISTRACTION``), ``selected`` (the
    failed cases diagnosed), ``child_runs`` (role → run id); ``record`` is the binary's object."""

    def __init__(self, record: Mapping[str, Any]):
        self.record: Dict[str, Any] = dict(record)
        content = record.get("content") or {}
        self.id: str = record.get("id")
        self.criterion: Optional[str] = content.get("criterion")
        self.selected: List[str] = list(content.get("selected") or [])
        self.labels: Dict[str, str] = {
            c["case_id"]: c.get("label") for c in content.get("cases") or []
        }
        self.child_runs: Dict[str, str] = {
            c.get("role"): c.get("run_id") for c in record.get("child_runs") or []
        }

    def __repr__(self) -> str:
        return "<Diagnosis %s of %s: %s>" % (
            self.id,
            self.criterion,
            ", ".join("%s %s" % kv for kv in self.labels.items()) or "no case",
        )


class Decision:
    """One decision of a comparison's policy: ``name``, ``kind``, ``criteria``, ``verdict``
    (``PASS``, ``FAIL``, ``INSUFFICIENT_EVIDENCE``, …), ``reason``, ``interval_points``."""

    def __init__(self, data: Mapping[str, Any]):
        self.data = dict(data)
        self.name: str = data.get("name")
        self.kind: str = data.get("kind")
        self.criteria: List[str] = list(data.get("criteria") or [])
        self.verdict: str = data.get("verdict")
        self.reason: Optional[str] = data.get("reason")
        self.interval_points = data.get("interval_points")

    def line(self) -> str:
        """``answers-not-worse non_inferiority answer_correct [-22.9, 22.9] pts INSUFFICIENT_EVIDENCE (…)``."""
        interval = ""
        if self.interval_points:
            interval = " [%s, %s] pts" % tuple(self.interval_points)
        return "%s %s %s%s %s (%s)" % (
            self.name,
            self.kind,
            ",".join(self.criteria),
            interval,
            self.verdict,
            self.reason or "",
        )

    def __repr__(self) -> str:
        return "<Decision %s>" % self.line()


class Comparison:
    """A comparison record (``oloproof compare --json``): ``id``, ``candidate``, ``baseline``,
    ``decision`` (the gate: ``PASS``/``BLOCK``), ``decisions``, ``criteria`` (the paired
    differences, the binary's objects); true when the gate passes."""

    def __init__(self, record: Mapping[str, Any], policy: str):
        self.record: Dict[str, Any] = dict(record)
        self.policy = policy
        self.id: str = record.get("id")
        self.candidate: str = record.get("candidate")
        self.baseline: str = record.get("baseline")
        self.decision: str = record.get("gate")
        self.decisions: List[Decision] = [Decision(d) for d in record.get("decisions") or []]
        self.criteria: List[Dict[str, Any]] = list(record.get("criteria") or [])

    def __bool__(self) -> bool:
        passed = self.decision == "PASS"
        if not passed:
            _note_failure(self)
        return passed

    def explain(self) -> str:
        """The gate and every decision, one per line."""
        lines = ["Gate: %s (%s vs %s, %s)" % (
            self.decision, self.candidate, self.baseline, os.path.basename(self.policy))]
        lines += ["  %s" % d.line() for d in self.decisions]
        return "\n".join(lines)

    def __repr__(self) -> str:
        failed = "; ".join(d.line() for d in self.decisions if d.verdict != "PASS")
        return "<Comparison %s %s vs %s%s>" % (
            self.decision, self.candidate, self.baseline, ": " + failed if failed else "")


# The pytest plugin collects the results that were false during a test, to print them in full.
_failure_listeners: List[Any] = []


def _note_failure(result) -> None:
    for listener in list(_failure_listeners):
        listener(result)
