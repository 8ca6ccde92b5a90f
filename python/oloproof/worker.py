"""Oloproof worker: serves a ``@rag_system`` class over the NDJSON worker protocol v1.

Usage::

    python3 -u -m oloproof.worker module:Class

One JSON object per line on stdin (requests) and stdout (responses); see docs/protocol.md.
stdout carries protocol lines only: before user code is imported, ``sys.stdout`` (and file
descriptor 1) are pointed at stderr, so a ``print`` in user code lands in the captured stderr.
Requests are handled one at a time, in arrival order. Standard library only, Python 3.9+.
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
    from oloproof import PROTOCOL_VERSION, Passage, Retrieval, system_info
except ImportError:  # pragma: no cover - run as a loose file next to __init__.py
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from oloproof import PROTOCOL_VERSION, Passage, Retrieval, system_info

OPS = ("retrieve", "generate", "count_tokens")


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


def _dumps(obj):
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


# --- conversions between wire JSON and Python objects -------------------------------------------


def _check_score(score, where):
    if score is None:
        return None
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise WorkerError("TypeError", "%s: score must be a number or None, got %r" % (where, score))
    if isinstance(score, float) and not math.isfinite(score):
        raise WorkerError("ValueError", "%s: score must be finite, got %r" % (where, score))
    return score


def _passage_to_wire(p, where):
    if isinstance(p, Passage):
        doc_id, chunk_id, score, text, metadata = p.doc_id, p.chunk_id, p.score, p.text, p.metadata
    elif isinstance(p, dict):
        doc_id, chunk_id = p.get("doc_id"), p.get("chunk_id")
        score, text, metadata = p.get("score"), p.get("text"), p.get("metadata")
    else:
        raise WorkerError(
            "TypeError", "%s: expected a Passage, got %s" % (where, type(p).__name__)
        )
    if not isinstance(doc_id, str):
        raise WorkerError("TypeError", "%s: doc_id must be a string, got %r" % (where, doc_id))
    if chunk_id is not None and not isinstance(chunk_id, str):
        raise WorkerError(
            "TypeError", "%s: chunk_id must be a string or None, got %r" % (where, chunk_id)
        )
    if text is not None and not isinstance(text, str):
        raise WorkerError("TypeError", "%s: text must be a string or None" % where)
    if metadata is not None and not isinstance(metadata, dict):
        raise WorkerError("TypeError", "%s: metadata must be a dict or None" % where)
    return {
        "doc_id": doc_id,
        "chunk_id": chunk_id,
        "score": _check_score(score, where),
        "text": text,
        "metadata": metadata,
    }


def _passage_from_wire(obj, where, with_position=False):
    if not isinstance(obj, dict):
        raise WorkerError("ProtocolError", "%s: a passage must be a JSON object" % where)
    doc_id = obj.get("doc_id")
    if not isinstance(doc_id, str):
        raise WorkerError("ProtocolError", "%s: doc_id must be a string" % where)
    p = Passage(
        doc_id=doc_id,
        score=obj.get("score"),
        text=obj.get("text"),
        chunk_id=obj.get("chunk_id"),
        metadata=obj.get("metadata"),
    )
    if with_position:
        object.__setattr__(p, "position", obj.get("position"))
    return p


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
        try:
            self.cls = _load_class(target)
            self.instance = self.cls()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - reported to hello, not raised
            self.startup_error = _error_from_exception(exc)

    # Each handler returns the "ok" value or raises.
    def handle(self, req):
        op = req.get("op")
        if not isinstance(op, str):
            raise WorkerError("ProtocolError", "request is missing 'op' (a string)")
        if op == "hello":
            return self.op_hello(req)
        if op == "shutdown":
            return None
        if op == "rerank":
            if self.startup_error is not None:
                raise _StartupFailure(self.startup_error)
            if not self.ready:
                raise WorkerError("ProtocolError", "the first request must be 'hello'")
            return self.op_rerank(req)
        if op not in OPS:
            raise WorkerError("UnknownOp", "unknown op %r" % op)
        if self.startup_error is not None:
            raise _StartupFailure(self.startup_error)
        if not self.ready:
            raise WorkerError("ProtocolError", "the first request must be 'hello'")
        return getattr(self, "op_" + op)(req)

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
        return {
            "protocol": PROTOCOL_VERSION,
            "name": info["name"],
            "version": info["version"],
            "defaults": info["defaults"],
            "ops": [op for op in OPS if callable(getattr(self.instance, op, None))],
        }

    def _method(self, name):
        method = getattr(self.instance, name, None)
        if not callable(method):
            raise WorkerError(
                "NotImplementedError", "%s does not define %s()" % (self.target, name)
            )
        return method

    def op_retrieve(self, req):
        input_ = _require(req, "input", dict, "an object")
        depth = req.get("depth", self.params.get("depth"))
        if depth is None or isinstance(depth, bool) or not isinstance(depth, int):
            raise WorkerError("ProtocolError", "'depth' must be an integer")
        result = self._method("retrieve")(input_, depth)
        if isinstance(result, Retrieval):
            query, rdepth, candidates = result.query, result.depth, result.candidates
        elif isinstance(result, (list, tuple)):
            query, rdepth, candidates = None, depth, result
        else:
            raise WorkerError(
                "TypeError",
                "retrieve() must return a Retrieval or a list of Passage, got %s"
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
        return {
            "query": query,
            "depth": rdepth,
            "candidates": [
                _passage_to_wire(p, "retrieve() candidate %d" % (i + 1))
                for i, p in enumerate(candidates)
            ],
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
            _passage_from_wire(obj, "candidates[%d]" % i) for i, obj in enumerate(wire)
        )
        result = function(input_, candidates)
        if isinstance(result, Retrieval):
            result = result.candidates
        if result is None or not isinstance(result, (list, tuple)):
            raise WorkerError(
                "TypeError", "the reranker must return a list of Passage, got %s" % type(result).__name__
            )
        return {
            "candidates": [
                _passage_to_wire(p, "reranker candidate %d" % (i + 1)) for i, p in enumerate(result)
            ]
        }

    def op_count_tokens(self, req):
        passages = _require(req, "passages", list, "an array")
        method = self._method("count_tokens")
        counts = []
        for i, obj in enumerate(passages):
            n = method(_passage_from_wire(obj, "passages[%d]" % i))
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
            _passage_from_wire(obj, "context[%d]" % i, with_position=True)
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
            req = json.loads(raw.decode("utf-8"))
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
        proto_out.write(line.encode("utf-8") + b"\n")
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


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        sys.stderr.write("usage: python -m oloproof.worker module:Class\n")
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
