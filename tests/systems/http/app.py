"""echo: a trivial, fast, deterministic system for Oloproof's integration tests.

retrieve: if input["docs"] is a list, one passage per entry (a string is a doc_id; an object is
passed through as doc_id/chunk_id/score/text/metadata); otherwise one passage per word of the
question, doc_id "w-<word>", up to depth. generate echoes: answer "<question> :: <doc ids in
context>", citing every context passage, and returns the merged parameters under "params".
Each retrieve also prints a line to stdout, which the worker must route to stderr.

Questions containing "raise-retrieve" / "raise-generate" make that stage raise RuntimeError.
If OLOPROOF_TEST_CALL_LOG is set, each retrieve/generate appends "retrieve <question>" /
"generate <question>" to that file.
"""

import os

from oloproof import Passage, Retrieval, rag_system


def _log(op, question):
    path = os.environ.get("OLOPROOF_TEST_CALL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write("%s %s\n" % (op, question))


@rag_system(name="echo", version="1", depth=3, top_k=2, token_budget=100, index_version="echo-1")
class Echo:
    def retrieve(self, input, depth):
        question = input.get("question", "")
        _log("retrieve", question)
        print("echo: retrieving for %r" % question)  # must not reach the protocol stream
        if "raise-retrieve" in question:
            raise RuntimeError("asked to raise in retrieve: %s" % question)
        docs = input.get("docs")
        passages = []
        if isinstance(docs, list):
            for i, d in enumerate(docs[:depth]):
                if isinstance(d, str):
                    d = {"doc_id": d}
                passages.append(
                    Passage(
                        doc_id=d["doc_id"],
                        score=d.get("score", float(len(docs) - i)),
                        text=d.get("text", "passage %s" % d["doc_id"]),
                        chunk_id=d.get("chunk_id"),
                        metadata=d.get("metadata"),
                    )
                )
        else:
            words = question.split()
            for i, w in enumerate(words[:depth]):
                passages.append(
                    Passage(doc_id="w-%s" % w, score=float(len(words) - i), text="%s %s" % (w, w))
                )
        return Retrieval(query=question, depth=depth, candidates=tuple(passages))

    def generate(self, input, context):
        question = input.get("question", "")
        _log("generate", question)
        if "raise-generate" in question:
            raise RuntimeError("asked to raise in generate: %s" % question)
        ids = [p.doc_id for p in context]
        return {
            "answer": "%s :: %s" % (question, ",".join(ids)),
            "citations": ids,
            "positions": [p.position for p in context],
            "params": getattr(self, "oloproof_params", None),
        }

    def count_tokens(self, passage):
        return len((passage.text or "").split())
