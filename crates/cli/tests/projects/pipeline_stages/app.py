"""A pipeline system whose every stage does what its case scripts (`input.lists`,
`input.prefer`, `input.hops`), so the pipeline evaluators' values can be worked out by hand:
rewrite -> one retrieve per query and lane (bm25, tri) -> the host's RRF -> rerank -> context
-> generate.

- `rewrite` returns `input.rewrites`.
- `retrieve(query, lane)` returns `input.lists[query][lane]` (the raw question's lists are
  there too: the host asks for them for `rewrite_uplift`), and `input.hops[lane]` as the hops
  of the raw question's call.
- `rerank` moves the documents of `input.prefer` to the front, in that order; with
  `input.bad_rerank` it names a document it was not given (a protocol error of the case).
- `generate` answers with the first context passage's text.
"""

from oloproof import Hop, Passage, Retrieval, rag_system


def text(doc_id):
    return "the text of " + doc_id


@rag_system(name="stages", version="1", depth=10, top_k=2, lanes=["bm25", "tri"])
class Stages:
    def rewrite(self, input):
        return list(input["rewrites"])

    def retrieve(self, input, depth, query=None, lane=None, skip_filters=False):
        docs = input["lists"].get(query, {}).get(lane, [])
        hops = ()
        if query == input["question"]:
            hops = tuple(
                Hop(query="%s (hop %d)" % (query, i + 1), candidates=[Passage(d, text=text(d)) for d in hop])
                for i, hop in enumerate(input.get("hops", {}).get(lane, []))
            )
        return Retrieval(
            query=query,
            depth=depth,
            candidates=[Passage(d, score=float(len(docs) - i), text=text(d)) for i, d in enumerate(docs[:depth])],
            hops=hops,
        )

    def rerank(self, input, candidates):
        prefer = input.get("prefer", [])
        ranked = sorted(
            candidates,
            key=lambda p: prefer.index(p.doc_id) if p.doc_id in prefer else len(prefer),
        )
        if input.get("bad_rerank"):
            ranked = [Passage("not-a-candidate", text="?")] + ranked
        return ranked

    def generate(self, input, context):
        return {
            "answer": context[0].text if context else "",
            "citations": [p.doc_id for p in context[:1]],
        }
