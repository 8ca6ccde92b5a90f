"""crash: generate kills the worker process (exit code 3) when the question contains "crash",
after writing "about to crash on <question>" to stderr. Otherwise a trivial echo system.
If OLOPROOF_TEST_CALL_LOG is set, each retrieve/generate appends "<op> <question>" to it."""

import os
import sys

from oloproof import Passage, Retrieval, rag_system


def _log(op, question):
    path = os.environ.get("OLOPROOF_TEST_CALL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write("%s %s\n" % (op, question))


@rag_system(name="crash", version="1", depth=2, top_k=1)
class Crash:
    def retrieve(self, input, depth):
        question = input["question"]
        _log("retrieve", question)
        return Retrieval(
            query=question,
            depth=depth,
            candidates=(Passage(doc_id="only", score=1.0, text=question),),
        )

    def generate(self, input, context):
        question = input["question"]
        _log("generate", question)
        if "crash" in question:
            sys.stderr.write("about to crash on %s\n" % question)
            sys.stderr.flush()
            os._exit(3)
        return {"answer": question, "citations": [p.doc_id for p in context]}
