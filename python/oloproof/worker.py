"""Oloproof worker: serves a ``@rag_system`` class over the NDJSON worker protocol v1.

Usage::

    python3 -u -m oloproof.worker module:Class
    python3 -u -m oloproof.worker --fork-server module:Class    # Unix; see _fork_server

One JSON object per line on stdin (requests) and stdout (responses); see docs/protocol.md.
stdout carries protocol lines only: before user code is imported, ``sys.stdout`` (and file
descriptor 1) are pointed at stderr, so a ``print`` in user code lands in the captured stderr.
Requests are handled one at a time, in arrival order. Standard library only, Python 3.9+;
with ``orjson`` importable (``pip install oloproof[fast]``), request lines are read and the
replies the worker builds itself are written with it, several times faster and with the same
values (see ``_dumps_plain``).
"""

import importlib
import json
import math
import os
import sys
import threading
import time
import traceback

try:  # run as part of the package (python -m oloproof.worker)
    from oloproof import PROTOCOL_VERSION, Filter, Hop, Passage, Retrieval, system_info
except ImportError:  # pragma: no cover - run as a loose file next to __init__.py
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from oloproof import PROTOCOL_VERSION, Filter, Hop, Passage, Retrieval, system_info

OPS = ("retrieve", "generate", "count_tokens")
#: The ops whose replies the worker builds itself from checked fields (not ``generate``, whose
#: reply is the user's dict): written by ``_dumps_plain`` unless a user value in them (a
#: passage's metadata, a filter's value, usage) is not plain.
_PLAIN_OPS = frozenset(
    ("retrieve", "retrieve_batch", "rewrite_retrieve", "count_tokens", "rewrite", "rerank")
)
#: The optional pipeline stages a class may define (declared in hello when it does).
STAGES = ("rewrite", "fuse", "rerank")
FILTER_OPS = ("=", "!=", "in", "not_in", "<", "<=", ">", ">=", "exists")


class WorkerError(Exception):
    """An error reported with an explicit protocol type name."""

    def __init__(self, type_name, message):
        super().__init__(message)
        self.type_name = type_name


def _error(type_name, message, tb=""):
    return {"type": type_name, "message": message, "traceback": tb}


_THIS_FILE = os.path.normcase(os.path.abspath(__file__))


def _error_from_exception(exc):
    """An error object for ``exc``. Errors the worker raises itself carry no traceback; a user
    exception's traceback starts at the first frame outside this file."""
    if isinstance(exc, WorkerError):
        return _error(exc.type_name, str(exc), "")
    tb = exc.__traceback__
    while tb is not None and os.path.normcase(
        os.path.abspath(tb.tb_frame.f_code.co_filename)
    ) == _THIS_FILE:
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    return _error(type(exc).__name__, str(exc), text)


#: One encoder for every reply: ``json.dumps`` with these options builds a new encoder per
#: call, which costs about as much as encoding a small reply.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _dumps(obj):
    return _ENCODER.encode(obj)


try:  # optional: `pip install orjson` (the `fast` extra) makes the protocol's JSON faster
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None

#: Types a plain JSON value is made of (exact types: a subclass takes the standard library's
#: path). ``float`` must also be finite.
_PLAIN_SCALARS = (str, int, bool, type(None))


def _is_plain(value):
    """Whether ``value`` holds only dicts with string keys, lists, tuples, strings, ints,
    bools, None and finite floats, all of exact built-in types: a value ``orjson`` writes as
    the standard library does. (``orjson`` writes NaN as null and a UUID or an Enum as a
    value, where ``json`` raises; everything else either matches or raises in both, and then
    the standard library's error is the one reported.)"""
    t = type(value)
    if t in _PLAIN_SCALARS:
        return True
    if t is float:
        return value - value == 0.0
    if t is dict:
        return all(type(k) is str and _is_plain(v) for k, v in value.items())
    if t is list or t is tuple:
        return all(_is_plain(v) for v in value)
    return False


def _dumps_plain(obj):
    """``obj`` as one protocol line (no newline), for an ``obj`` built of plain values only
    (see ``_is_plain``: the caller checks what the user's code supplied). With ``orjson``
    importable, its UTF-8 bytes, written about ten times faster than by ``json``; without it,
    or for a value it refuses, the ``str`` of ``_dumps``, whose text or error is then the
    answer (the caller encodes a ``str``, as every other reply)."""
    if _orjson is not None:
        try:
            return _orjson.dumps(obj)
        except Exception:  # noqa: BLE001 - json says what is wrong, as without orjson
            pass
    return _ENCODER.encode(obj)


def _loads(raw):
    """A request line (bytes) as its JSON value: with ``orjson`` when importable, else (or when
    it refuses the line: a lone surrogate, NaN, a number out of its range) with ``json``,
    whose value or error is then the answer. The host writes integers within 64 bits only
    (serde_json without arbitrary precision), which both read alike."""
    if _orjson is not None:
        try:
            return _orjson.loads(raw)
        except Exception:  # noqa: BLE001 - json decides, as without orjson
            pass
    return json.loads(raw.decode("utf-8"))


# --- conversions between wire JSON and Python objects -------------------------------------------


def _check_score(score, where):
    if score is None:
        return None
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise WorkerError("TypeError", "%s: score must be a number or None, got %r" % (where, score))
    if isinstance(score, float) and not math.isfinite(score):
        raise WorkerError("ValueError", "%s: score must be finite, got %r" % (where, score))
    return score


def _at(where, index):
    """The name of a passage in an error message: ``where % index`` (``where`` a format with
    ``%d``) when ``index`` is given. Formatted only when an error is raised: a pipeline converts
    dozens of passages a case."""
    return where if index is None else where % index


def _passage_to_wire(p, where, index=None):
    """``p`` (a Passage or a dict of its fields) as its wire object; ``where`` (with ``index``,
    see ``_at``) names it in errors."""
    if type(p) is Passage or isinstance(p, Passage):
        doc_id, chunk_id, score, text, metadata = p.doc_id, p.chunk_id, p.score, p.text, p.metadata
    elif isinstance(p, dict):
        doc_id, chunk_id = p.get("doc_id"), p.get("chunk_id")
        score, text, metadata = p.get("score"), p.get("text"), p.get("metadata")
    else:
        raise WorkerError(
            "TypeError", "%s: expected a Passage, got %s" % (_at(where, index), type(p).__name__)
        )
    if type(doc_id) is not str and not isinstance(doc_id, str):
        raise WorkerError(
            "TypeError", "%s: doc_id must be a string, got %r" % (_at(where, index), doc_id)
        )
    # A field that is None is left out: the host reads a missing field as None, and a
    # pipeline sends many passages a case.
    wire = {"doc_id": doc_id}
    if chunk_id is not None:
        if not isinstance(chunk_id, str):
            raise WorkerError(
                "TypeError",
                "%s: chunk_id must be a string or None, got %r" % (_at(where, index), chunk_id),
            )
        wire["chunk_id"] = chunk_id
    if score is not None:
        # The common case (a finite float) is checked without a call.
        if type(score) is not float or score - score != 0.0:
            score = _check_score(score, _at(where, index))
        wire["score"] = score
    if text is not None:
        if type(text) is not str and not isinstance(text, str):
            raise WorkerError("TypeError", "%s: text must be a string or None" % _at(where, index))
        wire["text"] = text
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise WorkerError(
                "TypeError", "%s: metadata must be a dict or None" % _at(where, index)
            )
        wire["metadata"] = metadata
    return wire


_new_object = object.__new__


def _passage_from_wire(obj, where, index=None, with_position=False):
    """The Passage of a wire object; ``where`` (with ``index``, see ``_at``) names it in
    errors. Built without the frozen dataclass's ``__init__`` (six ``object.__setattr__``
    calls): its fields go into the instance dict at once, as ``__init__`` would set them."""
    if type(obj) is not dict and not isinstance(obj, dict):
        raise WorkerError("ProtocolError", "%s: a passage must be a JSON object" % _at(where, index))
    doc_id = obj.get("doc_id")
    if type(doc_id) is not str and not isinstance(doc_id, str):
        raise WorkerError("ProtocolError", "%s: doc_id must be a string" % _at(where, index))
    p = _new_object(Passage)
    p.__dict__.update(
        doc_id=doc_id,
        score=obj.get("score"),
        text=obj.get("text"),
        chunk_id=obj.get("chunk_id"),
        metadata=obj.get("metadata"),
        position=obj.get("position") if with_position else None,
    )
    return p


#: What ``_check_accepts`` found, by function and keyword names: reading a signature costs
#: more than most retrievals, and a pipeline calls ``retrieve`` several times a case.
_ACCEPTS = {}


def _check_accepts(method, kwargs, name):
    """Raise a clear error when ``method`` cannot take the keyword arguments the host sends."""
    key = (getattr(method, "__func__", method), tuple(kwargs))
    try:
        missing = _ACCEPTS.get(key)
    except TypeError:  # pragma: no cover - an unhashable callable
        key, missing = None, None
    if missing is None:
        missing = _missing_keywords(method, kwargs)
        if key is not None:
            _ACCEPTS[key] = missing
    if missing:
        hint = {
            "query": "a system with rewrite() receives each query as query=",
            "lane": "a system declaring lanes= receives lane=",
            "skip_filters": "the no-filter intervention asks retrieve() to skip its filters",
        }
        raise WorkerError(
            "TypeError",
            "%s() takes no %s argument (%s)"
            % (name, ", ".join(missing), "; ".join(hint[k] for k in missing)),
        )


def _missing_keywords(method, kwargs):
    """The names in ``kwargs`` that ``method``'s signature does not take (none when it takes
    ``**kwargs`` or has no signature to read)."""
    import inspect

    try:
        params = inspect.signature(method).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return []
    if any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return []
    return [k for k in kwargs if k not in params]


def _filter_to_wire(f, where):
    if isinstance(f, Filter):
        field_, op, value = f.field, f.op, f.value
    elif isinstance(f, dict):
        field_, op, value = f.get("field"), f.get("op"), f.get("value")
    elif isinstance(f, (list, tuple)) and len(f) in (2, 3):
        field_, op, value = (list(f) + [None])[:3]
    else:
        raise WorkerError("TypeError", "%s: expected a Filter, got %s" % (where, type(f).__name__))
    if not isinstance(field_, str) or not field_:
        raise WorkerError("TypeError", "%s: field must be a non-empty string" % where)
    if op not in FILTER_OPS:
        raise WorkerError(
            "ValueError", "%s: op %r is not one of %s" % (where, op, ", ".join(FILTER_OPS))
        )
    if isinstance(value, (tuple, set, frozenset)):
        value = sorted(value) if isinstance(value, (set, frozenset)) else list(value)
    if op in ("in", "not_in") and not isinstance(value, list):
        raise WorkerError("TypeError", "%s: op %r needs a list value" % (where, op))
    return {"field": field_, "op": op, "value": value}


def _hop_to_wire(h, i):
    where = "Retrieval.hops[%d]" % i
    if isinstance(h, Hop):
        query, candidates, filters = h.query, h.candidates, h.filters
    elif isinstance(h, dict):
        query, candidates, filters = h.get("query"), h.get("candidates"), h.get("filters") or ()
    else:
        raise WorkerError("TypeError", "%s: expected a Hop, got %s" % (where, type(h).__name__))
    if candidates is None:
        raise WorkerError("TypeError", "%s: a hop needs candidates" % where)
    wire = {
        "query": query,
        "candidates": [
            _passage_to_wire(p, where + " candidate %d", j + 1) for j, p in enumerate(candidates)
        ],
    }
    if filters:
        wire["filters"] = [
            _filter_to_wire(f, "%s.filters[%d]" % (where, j)) for j, f in enumerate(filters)
        ]
    return wire


def _usage_to_wire(usage, where):
    if not isinstance(usage, dict):
        raise WorkerError("TypeError", "%s must be a dict" % where)
    for key in ("input_tokens", "output_tokens"):
        n = usage.get(key)
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
            raise WorkerError("TypeError", "%s: %s must be a non-negative int" % (where, key))
    return usage


def _require(req, key, kind, kind_name):
    if key not in req:
        raise WorkerError("ProtocolError", "request is missing %r" % key)
    value = req[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise WorkerError("ProtocolError", "%r must be %s" % (key, kind_name))
    return value


# --- the worker ---------------------------------------------------------------------------------


class Worker:
    def __init__(self, target):
        self.target = target
        self.cls = None
        self.instance = None
        self.startup_error = None  # error object reported to hello (and every later request)
        self.ready = False
        self.params = {}
        #: Whether the reply being built holds only plain values (``_is_plain``), so that
        #: ``_dumps_plain`` may write it: set by ``handle`` for the ops whose replies the
        #: worker builds from checked fields, cleared when a user value in them is not plain.
        self.plain_reply = False
        try:
            self.cls = _load_class(target)
            self.instance = self.cls()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - reported to hello, not raised
            self.startup_error = _error_from_exception(exc)

    # Each handler returns the "ok" value or raises.
    def handle(self, req):
        self.plain_reply = False
        op = req.get("op")
        if not isinstance(op, str):
            raise WorkerError("ProtocolError", "request is missing 'op' (a string)")
        if op == "hello":
            return self.op_hello(req)
        if op == "shutdown":
            return None
        if op == "rerank" and "function" in req:
            handler = self.op_rerank
        elif op == "retrieve_batch":
            handler = self.op_retrieve_batch
        elif op == "rewrite_retrieve":
            handler = self.op_rewrite_retrieve
        elif op in STAGES:
            handler = getattr(self, "op_stage_" + op)
        elif op in OPS:
            handler = getattr(self, "op_" + op)
        else:
            raise WorkerError("UnknownOp", "unknown op %r" % op)
        if self.startup_error is not None:
            raise _StartupFailure(self.startup_error)
        if not self.ready:
            raise WorkerError("ProtocolError", "the first request must be 'hello'")
        # Without orjson the standard library writes every reply: nothing to check.
        self.plain_reply = _orjson is not None and op in _PLAIN_OPS
        return handler(req)

    def op_hello(self, req):
        protocol = req.get("protocol")
        if protocol != PROTOCOL_VERSION or isinstance(protocol, bool):
            raise WorkerError(
                "ProtocolError",
                "unsupported protocol %r: this worker speaks protocol %d"
                % (protocol, PROTOCOL_VERSION),
            )
        params = req.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise WorkerError("ProtocolError", "'params' must be an object")
        if self.startup_error is not None:
            raise _StartupFailure(self.startup_error)
        info = system_info(self.cls)
        merged = dict(info["defaults"])
        for key, value in params.items():
            if value is not None:
                merged[key] = value
        self.params = merged
        try:
            object.__setattr__(self.instance, "oloproof_params", merged)
        except Exception:  # noqa: BLE001 - e.g. __slots__ without the attribute
            pass
        self.ready = True
        hello = {
            "protocol": PROTOCOL_VERSION,
            "name": info["name"],
            "version": info["version"],
            "defaults": info["defaults"],
            "ops": [op for op in OPS + STAGES if callable(getattr(self.instance, op, None))],
        }
        if "retrieve" in hello["ops"]:
            hello["ops"].append("retrieve_batch")
            if "rewrite" in hello["ops"]:
                hello["ops"].append("rewrite_retrieve")
        if info["lanes"]:
            hello["lanes"] = info["lanes"]
        return hello

    def _method(self, name):
        method = getattr(self.instance, name, None)
        if not callable(method):
            raise WorkerError(
                "NotImplementedError", "%s does not define %s()" % (self.target, name)
            )
        return method

    def _depth(self, req):
        depth = req.get("depth", self.params.get("depth"))
        if depth is None or isinstance(depth, bool) or not isinstance(depth, int):
            raise WorkerError("ProtocolError", "'depth' must be an integer")
        return depth

    def op_retrieve(self, req):
        input_ = _require(req, "input", dict, "an object")
        return self._retrieve(input_, self._depth(req), req)

    def _retrieve(self, input_, depth, call):
        """One ``retrieve`` call: ``call`` holds its ``query``, ``lane`` and ``skip_filters``
        (a ``retrieve`` request, or one call of a batch)."""
        kwargs = {}
        for key in ("query", "lane"):
            if call.get(key) is not None:
                if not isinstance(call[key], str):
                    raise WorkerError("ProtocolError", "%r must be a string" % key)
                kwargs[key] = call[key]
        if call.get("skip_filters"):
            kwargs["skip_filters"] = True
        method = self._method("retrieve")
        if kwargs:
            _check_accepts(method, kwargs, "retrieve")
        result = method(input_, depth, **kwargs)
        extra = {}
        if isinstance(result, dict):
            try:
                result = Retrieval(
                    query=result.get("query"),
                    depth=result.get("depth", depth),
                    candidates=result.get("candidates") or (),
                    filters=result.get("filters") or (),
                    hops=result.get("hops") or (),
                    usage=result.get("usage"),
                    lane=result.get("lane"),
                )
            except TypeError as exc:  # pragma: no cover - dataclass arguments are all named
                raise WorkerError("TypeError", "retrieve() returned a bad dict: %s" % exc)
        if isinstance(result, Retrieval):
            query, rdepth, candidates = result.query, result.depth, result.candidates
            if result.filters:
                extra["filters"] = [
                    _filter_to_wire(f, "Retrieval.filters[%d]" % i)
                    for i, f in enumerate(result.filters)
                ]
            if result.hops:
                extra["hops"] = [_hop_to_wire(h, i) for i, h in enumerate(result.hops)]
            if result.usage is not None:
                extra["usage"] = _usage_to_wire(result.usage, "Retrieval.usage")
            if result.lane is not None:
                extra["lane"] = result.lane
        elif isinstance(result, (list, tuple)):
            query, rdepth, candidates = None, depth, result
        else:
            raise WorkerError(
                "TypeError",
                "retrieve() must return a Retrieval, a dict of its fields or a list of Passage, got %s"
                % type(result).__name__,
            )
        if query is not None and not isinstance(query, str):
            raise WorkerError("TypeError", "Retrieval.query must be a string or None")
        if isinstance(rdepth, bool) or not isinstance(rdepth, int):
            raise WorkerError("TypeError", "Retrieval.depth must be an integer")
        if candidates is None:
            candidates = ()
        if not isinstance(candidates, (list, tuple)):
            candidates = list(candidates)
        wire = {
            "query": query,
            "depth": rdepth,
            "candidates": [
                _passage_to_wire(p, "retrieve() candidate %d", i + 1)
                for i, p in enumerate(candidates)
            ],
        }
        wire.update(extra)
        self._keep_plain(wire["candidates"], extra)
        return wire

    def _keep_plain(self, passages, extra):
        """Clears ``plain_reply`` unless ``extra`` and the metadata of ``passages`` (wire
        objects: their other fields are checked) are plain values. A value nested too deep to
        check (or circular) is not: ``json`` then says what it says of it."""
        if not self.plain_reply:
            return
        try:
            if extra and not _is_plain(extra):
                self.plain_reply = False
                return
            for w in passages:
                if "metadata" in w and not _is_plain(w["metadata"]):
                    self.plain_reply = False
                    return
        except RecursionError:
            self.plain_reply = False

    def op_retrieve_batch(self, req):
        """Several ``retrieve`` calls of one case (its queries × lanes) in one request: the
        input and depth once, one ``{query, lane, skip_filters}`` per call. Each call is made
        in order and answered in its own entry, ``{"ok": reply}`` or ``{"error": {...}}``,
        with the milliseconds it took (``elapsed_ms``); a failing call does not stop the
        others."""
        input_ = _require(req, "input", dict, "an object")
        calls = _require(req, "calls", list, "an array")
        try:
            depth, depth_error = self._depth(req), None
        except WorkerError as exc:  # every call's error, as one request per call would say
            depth, depth_error = None, exc
        results = []
        for i, call in enumerate(calls):
            if not isinstance(call, dict):
                raise WorkerError("ProtocolError", "calls[%d] must be an object" % i)
            started = time.perf_counter()
            try:
                if depth_error is not None:
                    raise depth_error
                entry = {"ok": self._retrieve(input_, depth, call)}
            except Exception as exc:  # noqa: BLE001 - reported as this call's error
                entry = {"error": _error_from_exception(exc)}
            entry["elapsed_ms"] = (time.perf_counter() - started) * 1e3
            results.append(entry)
        return {"results": results}

    def op_rewrite_retrieve(self, req):
        """``rewrite`` and then the ``retrieve`` calls of its queries in one request: one call
        per query and lane (queries outer, ``lanes`` inner; no lane when ``lanes`` is absent),
        each made as in ``retrieve_batch``. Answers ``{"rewrite": entry, "results": [entry,
        ...]}``, each entry ``{"ok": reply}`` or ``{"error": {...}}`` with its ``elapsed_ms``;
        a rewrite that raised has no results."""
        input_ = _require(req, "input", dict, "an object")
        lanes = req.get("lanes")
        if lanes is None:
            lanes = [None]
        elif not isinstance(lanes, list) or not all(isinstance(x, str) for x in lanes) or not lanes:
            raise WorkerError("ProtocolError", "'lanes' must be a non-empty array of strings")
        started = time.perf_counter()
        try:
            rewrite = {"ok": self.op_stage_rewrite({"input": input_})}
        except Exception as exc:  # noqa: BLE001 - reported as the rewrite's error
            rewrite = {"error": _error_from_exception(exc)}
        rewrite["elapsed_ms"] = (time.perf_counter() - started) * 1e3
        if "error" in rewrite:
            return {"rewrite": rewrite, "results": []}
        skip = bool(req.get("skip_filters"))
        calls = []
        for query in rewrite["ok"]["queries"]:
            for lane in lanes:
                call = {"query": query}
                if lane is not None:
                    call["lane"] = lane
                if skip:
                    call["skip_filters"] = True
                calls.append(call)
        batch = {"input": input_, "calls": calls}
        if "depth" in req:
            batch["depth"] = req["depth"]
        out = self.op_retrieve_batch(batch)
        out["rewrite"] = rewrite
        return out

    def op_stage_rewrite(self, req):
        """``rewrite(input)`` → a list of queries (or ``{"queries": [...], "usage": {...}}``)."""
        input_ = _require(req, "input", dict, "an object")
        result = self._method("rewrite")(input_)
        usage = None
        if isinstance(result, dict):
            usage = result.get("usage")
            result = result.get("queries")
        if isinstance(result, str):
            result = [result]
        if not isinstance(result, (list, tuple)) or not all(isinstance(q, str) for q in result):
            raise WorkerError(
                "TypeError", "rewrite() must return a list of query strings, got %r" % (result,)
            )
        if not result:
            raise WorkerError("ValueError", "rewrite() returned no query")
        wire = {"queries": list(result)}
        if usage is not None:
            wire["usage"] = _usage_to_wire(usage, "rewrite() usage")
            self._keep_plain((), wire["usage"])
        return wire

    def op_stage_rerank(self, req):
        """``rerank(input, candidates)`` → the candidates in the reranker's order (a list of
        Passage, a Retrieval, or ``{"candidates": [...], "usage": {...}}``)."""
        input_ = _require(req, "input", dict, "an object")
        wire = _require(req, "candidates", list, "an array")
        candidates = tuple(
            _passage_from_wire(obj, "candidates[%d]", i) for i, obj in enumerate(wire)
        )
        result = self._method("rerank")(input_, candidates)
        usage = None
        if isinstance(result, dict):
            usage = result.get("usage")
            result = result.get("candidates")
        if isinstance(result, Retrieval):
            result = result.candidates
        if result is None or not isinstance(result, (list, tuple)):
            raise WorkerError(
                "TypeError", "rerank() must return a list of Passage, got %s" % type(result).__name__
            )
        # The given Passage objects, returned as they were (a reranker that only orders them),
        # are answered by their positions: nothing of theirs goes back over the pipe.
        given = {id(p): i for i, p in enumerate(candidates)}
        order = [given.get(id(p)) for p in result]
        if None not in order:
            out = {"order": order}
        else:
            out = {
                "candidates": [
                    _passage_to_wire(p, "rerank() candidate %d", i + 1)
                    for i, p in enumerate(result)
                ]
            }
        if usage is not None:
            out["usage"] = _usage_to_wire(usage, "rerank() usage")
        self._keep_plain(out.get("candidates", ()), out.get("usage"))
        return out

    def op_stage_fuse(self, req):
        """``fuse(input, lists)`` → one fused list of Passage; ``lists`` is a list of dicts
        ``{"lane", "query", "candidates"}``."""
        input_ = _require(req, "input", dict, "an object")
        lists = _require(req, "lists", list, "an array")
        given = []
        for i, item in enumerate(lists):
            if not isinstance(item, dict) or not isinstance(item.get("candidates"), list):
                raise WorkerError("ProtocolError", "lists[%d] must be an object with candidates" % i)
            given.append(
                {
                    "lane": item.get("lane"),
                    "query": item.get("query"),
                    "candidates": tuple(
                        _passage_from_wire(obj, "lists[%d].candidates[%%d]" % i, j)
                        for j, obj in enumerate(item["candidates"])
                    ),
                }
            )
        result = self._method("fuse")(input_, given)
        if isinstance(result, Retrieval):
            result = result.candidates
        if result is None or not isinstance(result, (list, tuple)):
            raise WorkerError(
                "TypeError", "fuse() must return a list of Passage, got %s" % type(result).__name__
            )
        return {
            "candidates": [
                _passage_to_wire(p, "fuse() candidate %d", i + 1) for i, p in enumerate(result)
            ]
        }

    def op_rerank(self, req):
        """Pass recorded candidates through a user reranker ``module:function``, called as
        ``function(input, candidates)`` and returning Passages (a Retrieval is accepted)."""
        target = _require(req, "function", str, "a string")
        input_ = _require(req, "input", dict, "an object")
        wire = _require(req, "candidates", list, "an array")
        module_name, _, attr = target.partition(":")
        if not module_name or not attr:
            raise WorkerError("ProtocolError", "reranker %r is not 'module:function'" % target)
        function = getattr(importlib.import_module(module_name), attr, None)
        if not callable(function):
            raise WorkerError("AttributeError", "%s has no callable %r" % (module_name, attr))
        candidates = tuple(
            _passage_from_wire(obj, "candidates[%d]", i) for i, obj in enumerate(wire)
        )
        result = function(input_, candidates)
        if isinstance(result, Retrieval):
            result = result.candidates
        if result is None or not isinstance(result, (list, tuple)):
            raise WorkerError(
                "TypeError", "the reranker must return a list of Passage, got %s" % type(result).__name__
            )
        out = {
            "candidates": [
                _passage_to_wire(p, "reranker candidate %d", i + 1) for i, p in enumerate(result)
            ]
        }
        self._keep_plain(out["candidates"], None)
        return out

    def op_count_tokens(self, req):
        passages = _require(req, "passages", list, "an array")
        method = self._method("count_tokens")
        counts = []
        for i, obj in enumerate(passages):
            n = method(_passage_from_wire(obj, "passages[%d]", i))
            if isinstance(n, bool) or not isinstance(n, int):
                raise WorkerError(
                    "TypeError", "count_tokens() must return an int, got %r" % (n,)
                )
            if n < 0:
                raise WorkerError("ValueError", "count_tokens() returned %d" % n)
            counts.append(n)
        return counts

    def op_generate(self, req):
        input_ = _require(req, "input", dict, "an object")
        context = _require(req, "context", list, "an array")
        passages = tuple(
            _passage_from_wire(obj, "context[%d]", i, with_position=True)
            for i, obj in enumerate(context)
        )
        result = self._method("generate")(input_, passages)
        if isinstance(result, str):
            return {"answer": result, "citations": []}
        if not isinstance(result, dict):
            raise WorkerError(
                "TypeError",
                "generate() must return a dict or a str, got %s" % type(result).__name__,
            )
        answer = result.get("answer")
        if answer is not None and not isinstance(answer, str):
            raise WorkerError("TypeError", "generate(): 'answer' must be a string")
        citations = result.get("citations")
        if citations is not None:
            if isinstance(citations, tuple):
                result = dict(result, citations=list(citations))
                citations = result["citations"]
            if not isinstance(citations, list) or not all(isinstance(c, str) for c in citations):
                raise WorkerError("TypeError", "generate(): 'citations' must be a list of strings")
        return result


class _StartupFailure(Exception):
    def __init__(self, error):
        super().__init__(error["message"])
        self.error = error


def _load_class(target):
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise WorkerError("ProtocolError", "expected module:Class, got %r" % target)
    module = importlib.import_module(module_name)
    obj = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _protocol_streams():
    """Keep private handles on the original stdin/stdout; point the public ones elsewhere.

    File descriptor 1 is re-pointed at stderr and descriptor 0 at the null device, so neither
    a ``print`` nor a child process nor C code in the user's system can touch the protocol.
    """
    out_fd = os.dup(1)
    in_fd = os.dup(0)
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001
        pass
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    proto_out = os.fdopen(out_fd, "wb")
    proto_in = os.fdopen(in_fd, "rb")
    sys.stdout = sys.stderr
    sys.stdin = open(os.devnull, "r")
    return proto_in, proto_out


def serve(target, proto_in, proto_out):
    """Answer requests from ``proto_in`` on ``proto_out`` until shutdown or end of input."""
    worker = Worker(target)

    def send(obj):
        proto_out.write(_dumps(obj).encode("utf-8") + b"\n")
        proto_out.flush()

    for raw in proto_in:
        if not raw.strip():
            continue
        try:
            req = _loads(raw)
        except (UnicodeDecodeError, ValueError) as exc:
            send({"id": None, "error": _error("ProtocolError", "invalid JSON line: %s" % exc)})
            continue
        if not isinstance(req, dict):
            send({"id": None, "error": _error("ProtocolError", "a request must be a JSON object")})
            continue
        rid = req.get("id")
        if isinstance(rid, bool) or not isinstance(rid, int):
            send({"id": None, "error": _error("ProtocolError", "'id' must be an integer")})
            continue
        try:
            ok = worker.handle(req)
            try:
                if worker.plain_reply:
                    line = _dumps_plain({"id": rid, "ok": ok})
                else:
                    line = _dumps({"id": rid, "ok": ok})
            except (TypeError, ValueError) as exc:
                raise WorkerError(
                    type(exc).__name__,
                    "%s() returned a value that is not valid JSON: %s" % (req.get("op"), exc),
                )
        except _StartupFailure as exc:
            line = _dumps({"id": rid, "error": exc.error})
        except Exception as exc:  # noqa: BLE001 - every failure is reported to the host
            line = _dumps({"id": rid, "error": _error_from_exception(exc)})
        if isinstance(line, str):
            line = line.encode("utf-8")
        proto_out.write(line + b"\n")
        proto_out.flush()
        if req.get("op") == "shutdown":
            break
    return 0


def _exit_with_host(interval=0.5):
    """End this worker when its host process dies, even while the user's code is stuck.

    A host stopped by ``kill -9`` neither closes our stdin in an orderly way nor kills us, and a
    call that never returns would never read the end of input: a daemon thread notices that
    the parent changed (we were re-parented) and exits the process.
    """
    host = os.getppid()

    def watch():
        while True:
            time.sleep(interval)
            if os.getppid() != host:
                os._exit(0)

    threading.Thread(target=watch, name="oloproof-host-watch", daemon=True).start()


def _fork_server(target):
    """Start workers for ``target`` by forking this interpreter (Unix), as multiprocessing's
    ``forkserver`` does: the interpreter, the site packages and this SDK are loaded once, and
    each worker is a fork that imports the user's module itself. Nothing of the user's code is
    loaded before a fork, so no thread, lock or connection of theirs is copied into a child.

    File descriptor 0 is a Unix stream socket to the host. The host sends ``fork\\n`` with three
    descriptors attached (SCM_RIGHTS): the new worker's stdin, stdout and stderr. This process
    forks; the child makes them its 0, 1 and 2 and serves ``target`` exactly as
    ``python -m oloproof.worker target`` would (the same ``main``). Replies are JSON lines:
    ``{"ready": 1}`` once, ``{"pid": N}`` (or ``{"fork_error": "..."}``) per fork, and
    ``{"exit": N, "status": S}`` (the raw wait status) when a worker ends: this process is the
    workers' parent and reaps them. ``kill N\\n`` kills worker N if it is still running (only
    its parent knows that it is, so a reused process id is never hit). The end of the socket
    (the host exited, even by ``kill -9``) ends this process; its workers then see their
    parent change and their stdin close, and end too.
    """
    import select
    import signal
    import socket

    ctl = socket.socket(fileno=os.dup(0))
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.close(devnull)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    live = set()

    def send(obj):
        ctl.sendall((json.dumps(obj) + "\n").encode("ascii"))

    def reap():
        while live:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            live.discard(pid)
            send({"exit": pid, "status": status})

    def fork(fds):
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                os.close(wake_r)
                os.close(wake_w)
                ctl.close()
                for i, fd in enumerate(fds):
                    os.dup2(fd, i)
                    os.close(fd)
                code = main([target])
                sys.stderr.flush()
            except BaseException:  # noqa: BLE001 - the child must never return into the server
                try:
                    traceback.print_exc()
                    sys.stderr.flush()
                except BaseException:  # noqa: BLE001
                    pass
            finally:
                os._exit(code)
        live.add(pid)
        return pid

    # What is loaded now is shared by every fork; keep the collector from touching (and so
    # copying) those pages in each child.
    import gc

    gc.collect()
    gc.freeze()
    send({"ready": 1})
    pending = b""
    received = []
    while True:
        ready, _, _ = select.select([ctl, wake_r], [], [])
        if wake_r in ready:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
        reap()
        if ctl not in ready:
            continue
        data, fds, _flags, _addr = socket.recv_fds(ctl, 4096, 3)
        if not data:
            return 0
        received.extend(fds)
        pending += data
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            if line == b"fork":
                fds, received = received[:3], received[3:]
                if len(fds) != 3:
                    for fd in fds:
                        os.close(fd)
                    send({"fork_error": "fork request without its three descriptors"})
                    continue
                try:
                    pid = fork(fds)
                except OSError as exc:
                    send({"fork_error": str(exc)})
                else:
                    send({"pid": pid})
                finally:
                    for fd in fds:
                        try:
                            os.close(fd)
                        except OSError:
                            pass
            elif line.startswith(b"kill "):
                pid = int(line[5:])
                if pid in live:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "--fork-server":
        return _fork_server(argv[1])
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        sys.stderr.write(
            "usage: python -m oloproof.worker [--fork-server] module:Class\n"
        )
        return 2
    _exit_with_host()
    proto_in, proto_out = _protocol_streams()
    # The config's folder is the working directory; make it importable even without PYTHONPATH.
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return serve(argv[0], proto_in, proto_out)
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    code = main()
    try:
        sys.stderr.flush()
    finally:
        os._exit(code)
