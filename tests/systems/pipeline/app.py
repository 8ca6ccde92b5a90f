"""A pipeline system for the CLI tests: a rewrite, two lanes, a rerank and two-hop retrieval
over a six-document corpus, with faults chosen by the question.

- ``rewrite``: the question, and the question with ``guide`` appended.
- lanes ``words`` (shared words) and ``letters`` (shared letters, a crude fuzzy match); both
  apply ``tenant = <input.tenant>`` unless the host asks to skip filters.
- ``rerank``: ``params.rerank_mode`` ``longest`` (default: longest text first) or ``reverse``.
- a question containing ``two hops`` is retrieved in two hops.
- faults, by a word of the question: ``fault-rerank-unknown`` (rerank returns a document it
  was not given), ``fault-lane`` (the reply names another lane), ``fault-predicate`` (an
  ``in`` predicate without a list), ``fault-hop`` (a hop without candidates),
  ``fault-rewrite`` (rewrite returns no query), ``fault-field`` (a predicate on a field the
  corpus does not have).

With ``PIPELINE_RETRIEVE_LOG`` set, each ``retrieve`` call appends ``query|lane`` to that file
(the tests count the calls the host made).
"""

import os

from oloproof import Filter, Hop, Passage, Retrieval, rag_system

DOCS = {
    "d1": ("acme", "Refunds are reviewed within 14 days."),
    "d2": ("acme", "Shipping takes 3 days in the guide."),
    "d3": ("globex", "Refund review takes 14 days at Globex."),
    "d4": ("acme", "Returns are free for 30 days."),
    "d5": ("acme", "The refund guide explains partial refunds."),
    "d6": ("acme", "Support answers within one hour."),
}


def overlap_words(q, text):
    return len(set(q.lower().split()) & set(text.lower().rstrip(".").split()))


def overlap_letters(q, text):
    return len(set(q.lower()) & set(text.lower())) / 10.0


@rag_system(name="pipeline-test", version="1", depth=4, top_k=2, lanes=["words", "letters"])
class Pipeline:
    def rewrite(self, input):
        q = input["question"]
        if "fault-rewrite" in q:
            return []
        return {"queries": [q, q + " guide"], "usage": {"model": "rw", "input_tokens": 5, "output_tokens": 9}}

    def _rank(self, query, lane, filters):
        score = overlap_words if lane == "words" else overlap_letters
        ranked = []
        for doc_id, (tenant, text) in DOCS.items():
            if any(f.field == "tenant" and f.value != tenant for f in filters):
                continue
            s = score(query, text)
            if s > 0:
                ranked.append((s, doc_id, text))
        ranked.sort(key=lambda x: (-x[0], x[1]))
        return [Passage(d, score=float(s), text=t) for s, d, t in ranked]

    def retrieve(self, input, depth, query=None, lane=None, skip_filters=False):
        q = query or input["question"]
        log = os.environ.get("PIPELINE_RETRIEVE_LOG")
        if log:
            with open(log, "a") as f:
                f.write("%s|%s\n" % (q, lane))
        filters = [] if skip_filters else [Filter("tenant", "=", input.get("tenant", "acme"))]
        if "fault-field" in q:
            filters.append(Filter("region", "=", "eu"))
        found = self._rank(q, lane, filters)[:depth]
        if "fault-lane" in q:
            return Retrieval(query=q, depth=depth, candidates=found, lane="dense")
        if "fault-predicate" in q:
            return {"query": q, "depth": depth, "candidates": found,
                    "filters": [{"field": "tenant", "op": "in", "value": "acme"}]}
        if "fault-hop" in q:
            return {"query": q, "depth": depth, "candidates": found, "hops": [{"query": q}]}
        if "two hops" in q:
            second = self._rank("support answers", lane, filters)[:depth]
            return Retrieval(query=q, depth=depth, candidates=(second + found)[:depth],
                             filters=filters, hops=[Hop(q, found, filters), Hop("support answers", second, filters)])
        return Retrieval(query=q, depth=depth, candidates=found, filters=filters)

    def rerank(self, input, candidates):
        if "fault-rerank-unknown" in input["question"]:
            return list(candidates) + [Passage("d9", text="not a candidate")]
        mode = self.oloproof_params.get("rerank_mode", "longest")
        if mode == "reverse":
            return list(reversed(candidates))
        return sorted(candidates, key=lambda p: (-len(p.text or ""), p.doc_id))

    def generate(self, input, context):
        return {"answer": context[0].text if context else "", "citations": [p.doc_id for p in context[:1]],
                "usage": {"model": "gen", "input_tokens": 20, "output_tokens": 4}, "ttft_ms": 1.5}
