"""What the LangChain and LlamaIndex adapters share: reading ids and scores from a framework's
metadata, JSON-safe metadata, the default context text, citations, and the staged-system class
both build (``retrieve`` → framework retriever, ``generate`` → framework generator).

No framework is imported here.
"""

import json
import math
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from oloproof import Passage, Retrieval, rag_system

#: Metadata keys read for a passage's document id, in order (then the framework's own id).
DEFAULT_ID_KEYS = ("doc_id", "id", "source")
#: Metadata keys read for a passage's score, in order (then the framework's own score).
DEFAULT_SCORE_KEYS = ("score", "relevance_score")
#: Metadata key read for a passage's chunk id.
CHUNK_ID_KEY = "chunk_id"

_CITATION = re.compile(r"\[([^\[\]\n]+)\]")
_CITATION_ID = re.compile(r"^[^\s,;\[\]]+$")


class AdapterError(Exception):
    """A framework object that cannot become a passage or an answer (no id, an answer that is
    not text, a question field missing from the case input): the message says which and how to
    fix it. The worker reports it as the stage's error, so the case is a system error, never a
    silent pass."""


def first_id(metadata: Mapping[str, Any], keys: Sequence[str]) -> Optional[str]:
    """The first of ``keys`` present in ``metadata`` with a non-empty value, as a string."""
    for key in keys:
        value = metadata.get(key)
        if value is not None and value != "":
            return str(value)
    return None


def first_score(metadata: Mapping[str, Any], keys: Sequence[str]) -> Optional[float]:
    """The first of ``keys`` in ``metadata`` holding a finite number (bools are not scores)."""
    for key in keys:
        value = metadata.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if math.isfinite(float(value)):
            return float(value)
    return None


def finite_or_none(score: Any) -> Optional[float]:
    """A framework's score as a finite float, or ``None`` (no score, NaN, infinite)."""
    if score is None or isinstance(score, bool) or not isinstance(score, (int, float)):
        return None
    score = float(score)
    return score if math.isfinite(score) else None


def json_metadata(metadata: Optional[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    """``metadata`` as a JSON object: values JSON cannot hold (dates, paths, …) become their
    ``str``; non-finite floats become ``None``. ``None`` for empty metadata."""
    if not metadata:
        return None

    def default(value):
        return str(value)

    text = json.dumps(dict(metadata), default=default, ensure_ascii=False)
    # json.dumps writes NaN/Infinity, which the protocol refuses: map them to null.
    value = json.loads(text, parse_constant=lambda _: None)
    return value if isinstance(value, dict) else None


def default_context_text(passages: Sequence[Passage]) -> str:
    """The context handed to a text prompt: one block per passage, ``[doc_id] text``, separated
    by blank lines, in context order (so a model can cite ``[doc_id]``)."""
    return "\n\n".join("[%s] %s" % (p.doc_id, p.text or "") for p in passages)


def bracket_citations(answer: str, context: Sequence[Passage] = ()) -> List[str]:
    """Ids cited as ``[id]`` or ``[id1, id2]`` in ``answer``, in order of first appearance.

    Every bracketed id is returned, whether or not it is in the context: judging whether a
    citation is valid is the ``citation_validity`` evaluator's job, not the adapter's. A bracket
    holding spaces inside an id (``[see above]``) is not a citation.
    """
    seen: List[str] = []
    for group in _CITATION.findall(answer or ""):
        parts = [p.strip() for p in re.split(r"[,;]", group)]
        if not parts or not all(_CITATION_ID.match(p) for p in parts):
            continue
        for part in parts:
            if part not in seen:
                seen.append(part)
    return seen


def words(text: str) -> int:
    """Whitespace-separated words of ``text``: the default token count of the LangChain
    adapter (pass ``count_tokens=`` for the model's tokenizer)."""
    return len((text or "").split())


def question_of(input: Mapping[str, Any], key: str) -> str:
    """The query text: ``input[key]`` (a case's input field)."""
    value = input.get(key)
    if not isinstance(value, str):
        raise AdapterError(
            "the case input has no string field %r (its fields: %s); pass question_key= to name "
            "the field holding the query" % (key, ", ".join(sorted(input)) or "none")
        )
    return value


def make_system(
    *,
    name: str,
    version: str,
    retrieve: Callable[[str, int], List[Passage]],
    generate: Callable[[Mapping[str, Any], str, Sequence[Passage]], Any],
    count_tokens: Callable[[str], int],
    citations: Optional[Callable[[str, Sequence[Passage]], List[str]]],
    question_key: str,
    defaults: Mapping[str, Any],
    class_name: str,
    doc: str,
):
    """A ``@rag_system`` class whose stages call ``retrieve(query, depth)`` and
    ``generate(input, query, context)``; an answer becomes ``{"answer", "citations"}``.

    ``generate`` returns text, or a mapping with ``answer`` (and optionally ``citations``,
    which then win over ``citations``).
    """

    def retrieve_stage(self, input, depth):
        query = question_of(input, question_key)
        candidates = list(retrieve(query, depth))[:depth]
        return Retrieval(query=query, depth=depth, candidates=candidates)

    def generate_stage(self, input, context):
        query = question_of(input, question_key)
        out = generate(input, query, context)
        cited = None
        if isinstance(out, Mapping):
            answer = out.get("answer")
            cited = out.get("citations")
            if cited is not None:
                cited = [str(c) for c in cited]
        else:
            answer = out
        if not isinstance(answer, str):
            raise AdapterError(
                "the generator returned %s, not text: return a str, a message, or a dict with "
                "'answer'" % type(answer).__name__
            )
        if cited is None:
            cited = citations(answer, context) if citations is not None else []
        return {"answer": answer, "citations": cited}

    def count_tokens_stage(self, passage):
        n = count_tokens(passage.text or "")
        if isinstance(n, bool) or not isinstance(n, int):
            raise AdapterError("count_tokens must return an int, got %r" % (n,))
        return n

    cls = type(
        class_name,
        (),
        {
            "__doc__": doc,
            "retrieve": retrieve_stage,
            "generate": generate_stage,
            "count_tokens": count_tokens_stage,
        },
    )
    known = {k: defaults.get(k) for k in ("depth", "top_k", "token_budget", "index_version")}
    extra = {k: v for k, v in defaults.items() if k not in known}
    return rag_system(name=name, version=version, **known, **extra)(cls)
