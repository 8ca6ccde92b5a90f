#!/usr/bin/env python3
"""A worker written by hand, without the oloproof package: it speaks protocol v1 directly
(docs/protocol.md), as a program in any other language would. Run as `command: [python3, raw.py]`.

retrieve returns one passage per word of the question (doc_id "r-<word>"); generate answers with
the question upper-cased and cites the first context passage; count_tokens counts words.
"""

import json
import sys
import traceback

DEFAULTS = {"depth": 4, "top_k": 2, "token_budget": 50, "index_version": "raw-1"}
params = dict(DEFAULTS)
out = sys.stdout


def reply(obj):
    out.write(json.dumps(obj, separators=(",", ":")) + "\n")
    out.flush()


def error(rid, type_name, message, tb=""):
    reply({"id": rid, "error": {"type": type_name, "message": message, "traceback": tb}})


def retrieve(req):
    question = req["input"]["question"]
    depth = req["depth"]
    words = question.split()[:depth]
    return {
        "query": question,
        "depth": depth,
        "candidates": [
            {"doc_id": "r-" + w, "chunk_id": None, "score": float(len(words) - i),
             "text": w, "metadata": None}
            for i, w in enumerate(words)
        ],
    }


def generate(req):
    question = req["input"]["question"]
    context = req["context"]
    return {
        "answer": question.upper(),
        "citations": [context[0]["doc_id"]] if context else [],
        "usage": {"context_passages": len(context)},
    }


def count_tokens(req):
    return [len((p.get("text") or "").split()) for p in req["passages"]]


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            rid = req["id"]
        except Exception as exc:  # noqa: BLE001
            error(None, "ProtocolError", "cannot parse request: %s" % exc)
            continue
        op = req.get("op")
        try:
            if op == "hello":
                if req.get("protocol") != 1:
                    error(rid, "ProtocolError", "this worker speaks protocol 1")
                    continue
                params.update({k: v for k, v in (req.get("params") or {}).items() if v is not None})
                reply({"id": rid, "ok": {"protocol": 1, "name": "raw-command", "version": "1",
                                         "defaults": DEFAULTS,
                                         "ops": ["retrieve", "generate", "count_tokens"]}})
            elif op == "retrieve":
                reply({"id": rid, "ok": retrieve(req)})
            elif op == "generate":
                reply({"id": rid, "ok": generate(req)})
            elif op == "count_tokens":
                reply({"id": rid, "ok": count_tokens(req)})
            elif op == "shutdown":
                reply({"id": rid, "ok": None})
                return 0
            else:
                error(rid, "UnknownOp", "unknown op %r" % op)
        except Exception as exc:  # noqa: BLE001
            error(rid, type(exc).__name__, str(exc), traceback.format_exc())
    return 0


if __name__ == "__main__":
    sys.exit(main())
