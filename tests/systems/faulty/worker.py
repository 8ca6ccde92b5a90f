#!/usr/bin/env python3
"""faulty: a hand-written protocol-1 worker (no shim, so every byte on stdout is its own) that
misbehaves on request, for the fault-injection tests (crates/cli/tests/faults_system.rs).

retrieve returns one passage per word of the question (doc_id "w-<word>"); generate answers with
the question and cites the first passage. A question containing one of these words makes
`generate` misbehave:

- `huge-line`: the reply is one line of about 100 MB (written in 1 MB pieces, so this worker
  never holds it in memory), a valid response in every other respect;
- `bad-utf8`: the reply line contains a byte that is not UTF-8 (Latin-1 "é");
- `wrong-id`: the reply carries the id of a request that was never sent (the request's id + 1000);
- `exit-after`: the reply is correct, and the worker exits right after it, before the next
  request: it forks, exits at once, and the child delivers the reply once the worker is gone (so
  the host always finds the worker dead when it sends the next request, with no race);
- `flood-stderr`: before a correct reply, writes 100,000 stderr lines (about 1.5 MB, far more
  than a pipe holds), with one 8 MB line and a byte that is not UTF-8 halfway through.

A question containing `padded` gets an answer of about 100 kB, 30 ms later (to fill a disk
quickly, one case per commit).

With `FAULTY_SILENT_AFTER_HELLO=1` the worker answers `hello` and then reads every request and
answers none; with `FAULTY_EXIT_AFTER_HELLO=1` it exits right after answering `hello` (as
`exit-after` does). Every request is logged to stderr as `faulty: <op> <question>`.
"""

import json
import os
import sys
import time

SILENT = os.environ.get("FAULTY_SILENT_AFTER_HELLO") == "1"
EXIT_AFTER_HELLO = os.environ.get("FAULTY_EXIT_AFTER_HELLO") == "1"
out = sys.stdout.buffer
err = sys.stderr.buffer


def line(obj):
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode("utf-8")


def send(data):
    out.write(data)
    out.flush()


def retrieve(req):
    question = req["input"]["question"]
    words = question.split()[: req["depth"]]
    return {
        "query": question,
        "depth": req["depth"],
        "candidates": [
            {"doc_id": "w-" + w, "chunk_id": None, "score": float(len(words) - i), "text": w,
             "metadata": None}
            for i, w in enumerate(words)
        ],
    }


def answer(req):
    context = req["context"]
    text = req["input"]["question"]
    if "padded" in text:
        time.sleep(0.03)
        text += " " + "p" * 100_000
    return {"answer": text, "citations": [context[0]["doc_id"]] if context else []}


def exit_after(data):
    """Exits now; a child process writes `data` once this worker has exited."""
    worker = os.getpid()
    if os.fork() == 0:
        os.close(0)
        while os.getppid() == worker:
            time.sleep(0.002)
        os.write(1, data)
        os._exit(0)
    os._exit(0)


def generate(rid, req):
    question = req["input"]["question"]
    if "huge-line" in question:
        out.write(b'{"id":%d,"ok":{"answer":"' % rid)
        piece = b"x" * (1 << 20)
        for _ in range(100):
            out.write(piece)
        out.write(b'","citations":[]}}\n')
        out.flush()
    elif "bad-utf8" in question:
        send(b'{"id":%d,"ok":{"answer":"caf\xe9","citations":[]}}\n' % rid)
    elif "wrong-id" in question:
        send(line({"id": rid + 1000, "ok": answer(req)}))
    elif "exit-after" in question:
        exit_after(line({"id": rid, "ok": answer(req)}))
    else:
        if "flood-stderr" in question:
            for i in range(50_000):
                err.write(b"flood line %d\n" % i)
            err.write(b"y" * (8 << 20))
            err.write(b" \xff end of the long line\n")
            for i in range(50_000, 100_000):
                err.write(b"flood line %d\n" % i)
            err.flush()
        send(line({"id": rid, "ok": answer(req)}))


def main():
    for raw in sys.stdin.buffer:
        if not raw.strip():
            continue
        req = json.loads(raw)
        rid, op = req["id"], req.get("op")
        question = (req.get("input") or {}).get("question", "")
        err.write(("faulty: %s %s\n" % (op, question)).encode("utf-8"))
        err.flush()
        if op == "hello":
            hello = line({"id": rid, "ok": {"protocol": 1, "name": "faulty", "version": "1",
                                            "defaults": {}, "ops": ["retrieve", "generate"]}})
            if EXIT_AFTER_HELLO:
                exit_after(hello)
            send(hello)
        elif op == "shutdown":
            send(line({"id": rid, "ok": None}))
            return 0
        elif SILENT:
            continue
        elif op == "retrieve":
            send(line({"id": rid, "ok": retrieve(req)}))
        elif op == "generate":
            generate(rid, req)
        else:
            send(line({"id": rid, "error": {"type": "UnknownOp", "message": "unknown op %r" % op,
                                            "traceback": ""}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
