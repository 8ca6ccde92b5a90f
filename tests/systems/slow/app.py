"""slow: retrieve and generate each sleep OLOPROOF_SLEEP_S seconds (default 0.01).
Useful for runs that must last long enough to be interrupted (resume tests) and for timing.
If OLOPROOF_TEST_CALL_LOG is set, each retrieve/generate appends "<op> <question>" to it."""

import os
import time

from oloproof import Passage, Retrieval, rag_system


def _sleep():
    time.sleep(float(os.environ.get("OLOPROOF_SLEEP_S", "0.01")))


def _log(op, question):
    path = os.environ.get("OLOPROOF_TEST_CALL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write("%s %s\n" % (op, question))


@rag_system(name="slow", version="1", depth=3, top_k=2, index_version="slow-1")
class Slow:
    def retrieve(self, input, depth):
        question = input["question"]
        _log("retrieve", question)
        _sleep()
        words = question.split()[:depth]
        return Retrieval(
            query=question,
            depth=depth,
            candidates=tuple(
                Passage(doc_id="w-%s" % w, score=float(len(words) - i), text=w)
                for i, w in enumerate(words)
            ),
        )

    def generate(self, input, context):
        question = input["question"]
        _log("generate", question)
        _sleep()
        return {"answer": question, "citations": [p.doc_id for p in context[:1]]}

    def count_tokens(self, passage):
        return len((passage.text or "").split())
