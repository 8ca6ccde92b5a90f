"""sleepy: the instant benchmark system, but retrieve and generate each sleep OLOPROOF_SLEEP_S
seconds (default 0.01, i.e. 10 ms). See bench/gen_cases.py."""

import os
import time

from oloproof import Passage, Retrieval, rag_system

DOCS = 1000
SLEEP_S = float(os.environ.get("OLOPROOF_SLEEP_S", "0.01"))


def passage_text(k):
    """Must match passage_text() in bench/gen_cases.py."""
    return " ".join(["passage", str(k)] + ["word%d" % i for i in range(6 + k % 10)])


@rag_system(name="bench-sleepy", version="1", depth=6, top_k=2, token_budget=40,
            index_version="bench-1")
class Sleepy:
    def retrieve(self, input, depth):
        time.sleep(SLEEP_S)
        n = int(input["n"])
        candidates = []
        for j in range(depth):
            k = (n + j) % DOCS
            candidates.append(
                Passage(doc_id="doc-%d" % k, score=float(depth - j), text=passage_text(k))
            )
        return Retrieval(query=input.get("question"), depth=depth, candidates=tuple(candidates))

    def generate(self, input, context):
        time.sleep(SLEEP_S)
        n = int(input["n"])
        answer = "answer %d" % n if n % 5 else "I do not know"
        return {"answer": answer, "citations": [context[0].doc_id] if context else []}

    def count_tokens(self, passage):
        return len((passage.text or "").split())
