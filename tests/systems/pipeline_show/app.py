"""A tiny pipeline system for the CLI tests of `show --case`, the HTML report, `compare` and
the `trace` dataset: a rewrite (the question, then the question plus "refund"), two lanes
(word overlap, and the same with a bias towards d4), host-side RRF, a tenant filter, a
rerank by text length and an extractive generator with usage. The bm25 lane is iterative:
it reports one hop (its first query word alone) beside its final candidates.

`OLOPROOF_TEST_NO_RERANK_BIAS=1`: the reranker keeps the fused order (a second version to
compare against).
"""

import os

from oloproof import Filter, Hop, Passage, Retrieval, rag_system

DOCS = {
    "d1": "refunds take 14 days",
    "d2": "shipping takes 3 days",
    "d3": "refund review is 14 days",
    "d4": "returns are free of charge for every order",
}
META = {"d1": {"tenant": "acme"}, "d2": {"tenant": "acme"}, "d3": {"tenant": "globex"}, "d4": {"tenant": "acme"}}
KEEP_ORDER = os.environ.get("OLOPROOF_TEST_NO_RERANK_BIAS") == "1"


def _rank(words, tenant, lane, skip_filters, depth):
    scored = []
    for d, t in DOCS.items():
        if not skip_filters and META[d]["tenant"] != tenant:
            continue
        s = len(words & set(t.split())) + (0.5 if lane == "tri" and d == "d4" else 0)
        scored.append((s, d))
    scored.sort(key=lambda x: (-x[0], x[1]))
    return [Passage(d, score=float(s), text=DOCS[d]) for s, d in scored[:depth]]


@rag_system(name="pipe", version="2" if KEEP_ORDER else "1", depth=4, top_k=2, lanes=["bm25", "tri"])
class Pipe:
    def rewrite(self, input):
        q = input["question"]
        return [q, q + " refund"]

    def retrieve(self, input, depth, query=None, lane=None, skip_filters=False):
        text = (query or input["question"]).lower()
        tenant = input.get("tenant", "acme")
        filters = [] if skip_filters else [Filter("tenant", "=", tenant)]
        hops = ()
        if lane == "bm25":
            first = text.split()[0]
            hops = (Hop(query=first, candidates=_rank({first}, tenant, lane, skip_filters, 1), filters=filters),)
        return Retrieval(query=query, depth=depth, candidates=_rank(set(text.split()), tenant, lane, skip_filters, depth),
                         filters=filters, hops=hops, usage={"model": "embed", "input_tokens": len(text.split())})

    def rerank(self, input, candidates):
        if KEEP_ORDER:
            return list(candidates)
        return sorted(candidates, key=lambda p: -len(p.text))

    def generate(self, input, context):
        return {"answer": context[0].text if context else "", "citations": [p.doc_id for p in context[:1]],
                "usage": {"model": "m", "input_tokens": 10 * len(context), "output_tokens": 3}}
