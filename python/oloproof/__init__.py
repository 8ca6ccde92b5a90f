"""Oloproof: the Python side of a staged RAG system under evaluation.

A system is a class with a retrieval stage and a generation stage, decorated with
``@rag_system``::

    from oloproof import Passage, Retrieval, rag_system

    @rag_system(name="support-rag", version="1", depth=6, top_k=2, token_budget=40)
    class SupportRag:
        def retrieve(self, input, depth):
            return Retrieval(query=input["question"], depth=depth, candidates=(...))

        def generate(self, input, context):
            return {"answer": "...", "citations": [context[0].doc_id]}

        def count_tokens(self, passage):
            return len((passage.text or "").split())

Oloproof runs the class in a worker process (``python -m oloproof.worker module:Class``) that
speaks the NDJSON protocol described in ``docs/protocol.md``.

The package also drives the binary from Python (``oloproof.api``, re-exported here)::

    run = oloproof.run("examples/support_rag")     # oloproof run --json
    assert run.gate("gate.yaml")                    # oloproof gate --json
    run["answer_correct"].lower, run.cases(), run.to_pandas()

plus a pytest plugin (``oloproof.pytest_plugin``) and adapters that turn a LangChain or
LlamaIndex pipeline into a staged system (``oloproof.integrations``). Pure Python 3.9+,
standard library only (the adapters import their framework when used).
"""

from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Sequence

__all__ = [
    "Filter",
    "Hop",
    "Passage",
    "Retrieval",
    "rag_system",
    "PROTOCOL_VERSION",
    "__version__",
    # the API over the binary (oloproof.api)
    "run",
    "load_run",
    "gate",
    "compare",
    "find_binary",
    "Run",
    "Criterion",
    "Case",
    "Verdict",
    "GateResult",
    "Comparison",
    "Diagnosis",
    "OloproofError",
    "ConfigError",
    "RunError",
    "BinaryNotFound",
]

__version__ = "0.1.0"

#: Version of the worker protocol this package speaks (see docs/protocol.md).
PROTOCOL_VERSION = 1

#: Parameter names the decorator knows; any other keyword is kept as an extra default.
KNOWN_PARAMS = ("depth", "top_k", "token_budget", "index_version")

_SYSTEM_ATTR = "__oloproof_system__"


@dataclass(frozen=True)
class Passage:
    """One retrieved passage (a chunk of a document).

    ``doc_id`` names the document; ``chunk_id`` (optional) the chunk within it. ``score`` is the
    retriever's score, recorded but never used to re-rank. ``metadata`` is any JSON object.

    Passages handed to ``generate`` also carry ``position``: their 1-based position in the
    system's retrieval. It is not a constructor argument.
    """

    doc_id: str
    score: Optional[float] = None
    text: Optional[str] = None
    chunk_id: Optional[str] = None
    metadata: Optional[Dict[str, Any]] = None
    position: Optional[int] = field(default=None, init=False, compare=False)

    def with_position(self, position: Optional[int]) -> "Passage":
        """A copy of this passage carrying ``position``."""
        p = Passage(self.doc_id, self.score, self.text, self.chunk_id, self.metadata)
        object.__setattr__(p, "position", position)
        return p


@dataclass(frozen=True)
class Filter:
    """A metadata predicate a retrieval applied: ``Filter("tenant", "=", "acme")``.

    ``op`` is one of ``=``, ``!=``, ``in``, ``not_in`` (``value`` a list), ``<``, ``<=``,
    ``>``, ``>=`` (numbers, or strings compared bytewise) and ``exists``. Oloproof evaluates
    the predicates a retrieval reports against the gold documents' metadata (``corpus:``) to
    measure how often a filter removes every relevant document (seed 000, Part 5).
    """

    field: str
    op: str
    value: Any = None


@dataclass(frozen=True)
class Hop:
    """One hop of an iterative retrieval: the query it ran and what it found, in order."""

    query: Optional[str]
    candidates: Sequence[Passage] = ()
    filters: Sequence[Filter] = ()


@dataclass(frozen=True)
class Retrieval:
    """What ``retrieve`` returns: the query it ran, the depth, and the candidates in rank order.

    Optional: the metadata ``filters`` it applied, the ``hops`` of an iterative retrieval
    (its final ``candidates`` are what the context is cut from), the ``usage`` of a model it
    called (``{"model": ..., "input_tokens": ..., "output_tokens": ...}``), and the ``lane`` it
    answers for.
    """

    query: Optional[str]
    depth: int
    candidates: Sequence[Passage] = ()
    filters: Sequence[Filter] = ()
    hops: Sequence[Hop] = ()
    usage: Optional[Dict[str, Any]] = None
    lane: Optional[str] = None


def rag_system(
    name: str,
    version: str,
    depth: Optional[int] = None,
    top_k: Optional[int] = None,
    token_budget: Optional[int] = None,
    index_version: Optional[str] = None,
    lanes: Optional[Sequence[str]] = None,
    **extra: Any,
):
    """Class decorator declaring a staged RAG system.

    ``name`` and ``version`` identify the system. ``depth``, ``top_k``, ``token_budget`` and
    ``index_version`` are defaults that ``oloproof.yaml`` overrides; unset ones are omitted.
    ``lanes`` declares retrieval lanes (``["bm25", "dense"]``): ``retrieve`` is then called
    once per lane and query with ``lane=`` and ``query=``, and the host fuses the lists
    (``system.rag.fusion``, RRF k = 60 by default). Optional methods ``rewrite(input)``,
    ``rerank(input, candidates)`` and ``fuse(input, lists)`` are stages of their own.
    Extra keyword arguments are kept as further defaults. The merged parameters are available
    to the instance as ``self.oloproof_params`` (a dict) once the worker has started.
    """
    if lanes is not None:
        if isinstance(lanes, str) or not all(isinstance(l, str) and l for l in lanes):
            raise TypeError("rag_system(lanes=...) must be a list of non-empty strings")
        if len(set(lanes)) != len(lanes):
            raise TypeError("rag_system(lanes=...) names a lane twice")
    if not isinstance(name, str) or not name:
        raise TypeError("rag_system(name=...) must be a non-empty string")
    if not isinstance(version, str):
        raise TypeError("rag_system(version=...) must be a string")
    defaults: Dict[str, Any] = {}
    for key, value in (
        ("depth", depth),
        ("top_k", top_k),
        ("token_budget", token_budget),
        ("index_version", index_version),
    ):
        if value is not None:
            defaults[key] = value
    for key, value in extra.items():
        if value is not None:
            defaults[key] = value

    def decorate(cls):
        if not isinstance(cls, type):
            raise TypeError("@rag_system decorates a class")
        setattr(
            cls,
            _SYSTEM_ATTR,
            {
                "name": name,
                "version": version,
                "defaults": dict(defaults),
                "lanes": list(lanes or ()),
            },
        )
        return cls

    return decorate


def system_info(cls) -> Dict[str, Any]:
    """The decorator's record for ``cls``: name, version, defaults (class name if undecorated)."""
    info = getattr(cls, _SYSTEM_ATTR, None)
    if info is None:
        return {"name": getattr(cls, "__name__", str(cls)), "version": None, "defaults": {}, "lanes": []}
    return {
        "name": info["name"],
        "version": info["version"],
        "defaults": dict(info["defaults"]),
        "lanes": list(info.get("lanes", ())),
    }


# The API over the binary, imported on first use (PEP 562): a worker process, which starts
# once per system connection, never needs it, and `api` (with `subprocess` and `pathlib`) is
# most of the package's import time.
_API_NAMES = frozenset(
    {
        "BinaryNotFound",
        "Case",
        "Comparison",
        "ConfigError",
        "Criterion",
        "Diagnosis",
        "GateResult",
        "OloproofError",
        "Run",
        "RunError",
        "Verdict",
        "compare",
        "find_binary",
        "gate",
        "load_run",
        "run",
    }
)


def __getattr__(name: str) -> Any:
    if name in _API_NAMES:
        import importlib

        value = getattr(importlib.import_module("oloproof.api"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'oloproof' has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | _API_NAMES)
