"""instant: a benchmark system whose stages return at once (see bench/gen_cases.py)."""

from oloproof import Passage, Retrieval, rag_system

DOCS = 1000


def passage_text(k):
    """Must match passage_text() in bench/gen_cases.py."""
    return " ".join(["passage", str(k)] + ["word%d" % i for i in range(6 + k % 10)])


#: Each passage's text, made once: an instant system's stages do no work.
TEXTS = [passage_text(k) for k in range(DOCS)]


@rag_system(name="bench-instant", version="1", depth=6, top_k=2, token_budget=40,
            index_version="bench-1")
class Instant:
    def retrieve(self, input, depth):
        n = int(input["n"])
        candidates = []
        for j in range(depth):
            k = (n + j) % DOCS
            candidates.append(
                Passage(doc_id="doc-%d" % k, score=float(depth - j), text=TEXTS[k])
            )
        return Retrieval(query=input.get("question"), depth=depth, candidates=tuple(candidates))

    def generate(self, input, context):
        n = int(input["n"])
        answer = "answer %d" % n if n % 5 else "I do not know"
        return {"answer": answer, "citations": [context[0].doc_id] if context else []}

    def count_tokens(self, passage):
        return len((passage.text or "").split())
