"""support-rag: a small, deterministic RAG system for Oloproof's example.

Retrieval is BM25 (k1=1.2, b=0.75) in plain Python over the passages of ``kb/``: one Markdown
file per document (``# Title`` then paragraphs); each paragraph is a chunk whose id is
``<doc_id>#<n>``. Generation is extractive: it reads only the FIRST passage of its context and
answers with that passage's sentence sharing the most terms with the question (ties go to the
earliest sentence), citing the passage's document. No model, no network, no credentials.
"""

import math
import re
from collections import Counter
from pathlib import Path

from oloproof import Passage, Retrieval, rag_system

KB_DIR = Path(__file__).resolve().parent / "kb"

K1 = 1.2
B = 0.75

STOPWORDS = frozenset(
    """a about after all am an and any are as at be been by can could did do does each for from
    get got has have how i if in is it its m may me my no not of on or our per so than that the
    their them then there these they this those to up us was we were what when where which who
    why will with would you your""".split()
)

_TOKEN = re.compile(r"[a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def terms(text):
    """Lower-cased alphanumeric tokens, stopwords removed."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


def load_kb(folder=KB_DIR):
    """Every chunk of every document in ``folder``, in file order then paragraph order."""
    passages = []
    for path in sorted(Path(folder).glob("*.md")):
        doc_id = path.stem
        title = None
        paragraphs = []
        for block in path.read_text(encoding="utf-8").split("\n\n"):
            block = " ".join(block.split())
            if not block:
                continue
            if block.startswith("# ") and title is None and not paragraphs:
                title = block[2:]
                continue
            paragraphs.append(block)
        for n, text in enumerate(paragraphs, start=1):
            passages.append(
                Passage(
                    doc_id=doc_id,
                    chunk_id="%s#%d" % (doc_id, n),
                    score=None,
                    text=text,
                    metadata={"title": title},
                )
            )
    return passages


class BM25:
    """Okapi BM25 over a fixed list of passages (each passage is one BM25 document)."""

    def __init__(self, passages, k1=K1, b=B):
        self.passages = passages
        self.k1 = k1
        self.b = b
        self.tfs = [Counter(terms(p.text or "")) for p in passages]
        self.lengths = [sum(tf.values()) for tf in self.tfs]
        n = len(passages)
        self.avgdl = (sum(self.lengths) / n) if n else 0.0
        df = Counter()
        for tf in self.tfs:
            df.update(tf.keys())
        self.idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}

    def scores(self, query):
        q = set(terms(query))
        out = []
        for tf, dl in zip(self.tfs, self.lengths):
            s = 0.0
            norm = self.k1 * (1 - self.b + self.b * dl / self.avgdl)
            for t in q:
                f = tf.get(t, 0)
                if f:
                    s += self.idf[t] * f * (self.k1 + 1) / (f + norm)
            out.append(s)
        return out

    def search(self, query, depth):
        """Up to ``depth`` (index, score) pairs with a positive score, best first; ties keep
        corpus order."""
        scored = [(i, s) for i, s in enumerate(self.scores(query)) if s > 0]
        scored.sort(key=lambda pair: (-pair[1], pair[0]))
        return scored[:depth]


def best_sentence(question, text):
    """The sentence of ``text`` sharing the most distinct terms with ``question``; ties go to the
    earliest sentence."""
    q = set(terms(question))
    best, best_overlap = None, -1
    for sentence in _SENTENCE_END.split(text.strip()):
        if not sentence:
            continue
        overlap = len(q & set(terms(sentence)))
        if overlap > best_overlap:
            best, best_overlap = sentence, overlap
    return best


@rag_system(
    name="support-rag",
    version="slice-b-example",
    depth=6,
    top_k=2,
    token_budget=40,
    index_version="kb-2026-09-16",
)
class SupportRag:
    def __init__(self):
        self.passages = load_kb()
        self.index = BM25(self.passages)

    def retrieve(self, input, depth):
        question = input["question"]
        passages = []
        for i, score in self.index.search(question, depth):
            p = self.passages[i]
            passages.append(
                Passage(
                    doc_id=p.doc_id,
                    chunk_id=p.chunk_id,
                    score=round(score, 6),
                    text=p.text,
                    metadata=p.metadata,
                )
            )
        return Retrieval(query=question, depth=depth, candidates=tuple(passages))

    def generate(self, input, context):
        if not context:
            return {"answer": "I could not find this in the knowledge base.", "citations": []}
        best = context[0]
        answer = best_sentence(input["question"], best.text or "")
        return {"answer": answer, "citations": [best.doc_id]}

    def count_tokens(self, passage):
        return len((passage.text or "").split())
