"""instant_pipeline: bench/systems/instant as a pipeline (a rewrite into two queries, two lanes
fused by the host with RRF, a rerank), every stage returning at once, with usage for `cost`.
Same cases as instant (bench/gen_cases.py); its per-case harness overhead is compared with the
two-stage figure in bench/run.sh."""

from oloproof import Passage, Retrieval, rag_system

DOCS = 1000


def passage_text(k):
    """Must match passage_text() in bench/gen_cases.py."""
    return " ".join(["passage", str(k)] + ["word%d" % i for i in range(6 + k % 10)])


#: Each passage's text, made once: an instant system's stages do no work.
TEXTS = [passage_text(k) for k in range(DOCS)]


@rag_system(name="bench-instant-pipeline", version="1", depth=6, top_k=2, token_budget=40,
            index_version="bench-1", lanes=["dense", "sparse"])
class InstantPipeline:
    def rewrite(self, input):
        q = input.get("question") or ""
        return [q, q + " expanded"]

    def retrieve(self, input, depth, query=None, lane=None):
        n = int(input["n"])
        shift = 1 if lane == "sparse" else 0
        candidates = []
        for j in range(depth):
            k = (n + (j + shift) % depth) % DOCS
            candidates.append(
                Passage(doc_id="doc-%d" % k, score=float(depth - j), text=TEXTS[k])
            )
        return Retrieval(query=query, depth=depth, candidates=tuple(candidates))

    def rerank(self, input, candidates):
        n = int(input["n"])
        rel = "doc-%d" % ((n + n % 7) % DOCS)
        return sorted(candidates, key=lambda p: p.doc_id != rel)

    def generate(self, input, context):
        n = int(input["n"])
        answer = "answer %d" % n if n % 5 else "I do not know"
        return {"answer": answer, "citations": [context[0].doc_id] if context else [],
                "usage": {"model": "bench-small", "input_tokens": 40, "output_tokens": 4}}

    def count_tokens(self, passage):
        return len((passage.text or "").split())
