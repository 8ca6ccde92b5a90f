"""soak: bench/systems/instant with injected faults, for bench/soak.sh (issue 19).

Cases come from bench/gen_cases.py (input ``n``). Exactly one case in every block of 1,000
(``n // 1000``) makes the worker crash (``os._exit(70)``, no reply), and exactly one case in
every block of 5,000 (never a crashing one) makes it hang: it stops answering, so the host's
``timeout_s`` fires and the host kills and restarts the worker. Which case, and in which stage
(``retrieve``, ``count_tokens`` or ``generate``) the fault strikes, follow from sha256 of a fixed
seed and the block or case number: deterministic, the same in every run and every process.

A hung worker only waits while its parent lives: once the host is gone (``kill -9`` of the
oloproof process) it exits, so killed runs leave no process behind. While the host lives it never
answers.

``python3 app.py N`` prints the faults of the first N cases as JSON (what bench/soak.sh checks
the runs against). Standard library only.
"""

import hashlib
import os
import sys
import time

try:
    from oloproof import Passage, Retrieval, rag_system
except ImportError:  # ``python3 app.py N`` outside a worker: only fault() is needed
    rag_system = None

DOCS = 1000
SEED = "oloproof-soak-20260919"
CRASH_BLOCK = 1000
HANG_BLOCK = 5000
STAGES = ("retrieve", "count_tokens", "generate")


def _h(*parts):
    text = "/".join([SEED] + [str(p) for p in parts])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def _crash_at(block):
    return block * CRASH_BLOCK + _h("crash", block) % CRASH_BLOCK


def _hang_at(block):
    n = block * HANG_BLOCK + _h("hang", block) % HANG_BLOCK
    while _crash_at(n // CRASH_BLOCK) == n:  # never on a crashing case
        n = block * HANG_BLOCK + (n + 1 - block * HANG_BLOCK) % HANG_BLOCK
    return n


def fault(n):
    """``None``, or ``(kind, stage)`` with kind ``crash`` or ``hang`` for case ``n``."""
    if _crash_at(n // CRASH_BLOCK) == n:
        return ("crash", STAGES[_h("stage", n) % 3])
    if _hang_at(n // HANG_BLOCK) == n:
        return ("hang", STAGES[_h("stage", n) % 3])
    return None


def passage_text(k):
    """Must match passage_text() in bench/gen_cases.py."""
    return " ".join(["passage", str(k)] + ["word%d" % i for i in range(6 + k % 10)])


def _strike(n, stage):
    f = fault(n)
    if f is None or f[1] != stage:
        return
    sys.stderr.write("soak: case %d: %s in %s\n" % (n, f[0], stage))
    sys.stderr.flush()
    if f[0] == "crash":
        os._exit(70)
    parent = os.getppid()
    while os.getppid() == parent:  # hang for as long as the host lives
        time.sleep(0.2)
    os._exit(71)


if rag_system is not None:

    @rag_system(name="bench-soak", version="1", depth=6, top_k=2, token_budget=40,
                index_version="bench-1")
    class Soak:
        def retrieve(self, input, depth):
            n = int(input["n"])
            _strike(n, "retrieve")
            candidates = []
            for j in range(depth):
                k = (n + j) % DOCS
                candidates.append(
                    Passage(doc_id="doc-%d" % k, score=float(depth - j), text=passage_text(k),
                            metadata={"n": n})
                )
            return Retrieval(query=input.get("question"), depth=depth,
                             candidates=tuple(candidates))

        def count_tokens(self, passage):
            _strike(int(passage.metadata["n"]), "count_tokens")
            return len((passage.text or "").split())

        def generate(self, input, context):
            n = int(input["n"])
            _strike(n, "generate")
            answer = "answer %d" % n if n % 5 else "I do not know"
            return {"answer": answer, "citations": [context[0].doc_id] if context else []}


if __name__ == "__main__":
    import json

    total = int(sys.argv[1])
    print(json.dumps({"case-%06d" % n: list(f) for n in range(total) for f in [fault(n)] if f}))
