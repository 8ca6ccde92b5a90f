"""hang: generate never returns when the question contains "hang" (after writing
"about to hang on <question>" to stderr). Otherwise a trivial echo system.
If OLOPROOF_TEST_CALL_LOG is set, each retrieve/generate appends "<op> <question>" to it."""

import os
import sys
import time

from oloproof import Passage, Retrieval, rag_system


def _log(op, question):
    path = os.environ.get("OLOPROOF_TEST_CALL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write("%s %s\n" % (op, question))


@rag_system(name="hang", version="1", depth=2, top_k=1)
class Hang:
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
        if "hang" in question:
            sys.stderr.write("about to hang on %s\n" % question)
            sys.stderr.flush()
            while True:
                time.sleep(3600)
        return {"answer": question, "citations": [p.doc_id for p in context]}
