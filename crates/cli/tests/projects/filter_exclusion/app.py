"""Seed 000 Part 5's worked example as a system: five documents, and a retrieval that applies
the hard metadata filter each query's input names (`input.filter`: field and value), reports
it as the predicate it applied, and returns the documents that pass it."""

import json
import os

from oloproof import Filter, Passage, Retrieval, rag_system

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "corpus.jsonl"), encoding="utf-8") as f:
    DOCS = [json.loads(line) for line in f if line.strip()]


@rag_system(name="filtered", version="1", depth=10, top_k=2)
class Filtered:
    def retrieve(self, input, depth):
        field, value = input["filter"]["field"], input["filter"]["value"]
        survivors = [d for d in DOCS if d["metadata"].get(field) == value]
        return Retrieval(
            query=input["question"],
            depth=depth,
            candidates=[Passage(d["doc_id"], text=d["doc_id"]) for d in survivors[:depth]],
            filters=[Filter(field, "=", value)],
        )

    def generate(self, input, context):
        return {"answer": " ".join(p.doc_id for p in context)}
