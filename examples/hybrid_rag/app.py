"""hybrid-rag: the pipeline most teams run, in plain Python, for Oloproof's pipeline example.

Stages (seed 000, Parts 2, 4, 5, 8):

- ``rewrite``: acronym and synonym expansion of the question (``SSO`` → ``single sign-on``);
  the expanded query replaces the question, and a synonym variant is added beside it.
- ``retrieve``: two lanes, ``bm25`` (Okapi BM25, k1 = 1.2, b = 0.75, over words) and
  ``trigram`` (TF-IDF cosine over character trigrams, which survives typos and product
  codes), each behind the same hard metadata filter: ``tenant = <the user's tenant>`` and
  ``locale = <the user's locale>`` (the filter seed 000 Part 5 warns about). The applied
  predicates are reported with each retrieval. A question asking for two facts in sequence
  ("… the plan that …") is retrieved in two hops: the second hop's query is the first hop's
  best document's ``entity`` plus the question's last clause.
- Fusion: done by the host (``system.rag.fusion``, RRF k = 60).
- ``rerank``: a lexical reranker: passages by the count of question words in their title,
  then by their fused order.
- ``generate``: extractive; the sentence of the context sharing the most words with the
  question, citing its document; usage reported for the ``prices:`` of the config.

Parameters (``system.rag.params``): ``locale_filter`` ``hard`` (default) or ``soft`` (the
locale only boosts: the fix the example's README walks through), ``rerank`` ``lexical``
(default) or ``none``.

No model, no network: the corpus is ``corpus.jsonl`` (also the ``corpus:`` Oloproof reads the
gold documents' metadata from).
"""

import json
import math
import re
from collections import Counter
from pathlib import Path

from oloproof import Filter, Hop, Passage, Retrieval, rag_system

HERE = Path(__file__).resolve().parent

STOPWORDS = frozenset(
    """a about after all am an and any are as at be been by can could did do does each for from
    get got has have how i if in is it its may me my no not of on or our per so than that the
    their them then there these they this those to up us was we were what when where which who
    why will with would you your""".split()
)

ACRONYMS = {
    "sso": "single sign-on",
    "mfa": "multi-factor authentication",
    "sla": "service level agreement",
    "pr": "press release",
    "api": "application programming interface",
    "csv": "comma separated values export",
    "vat": "value added tax",
}

SYNONYMS = {
    "refund": "reimbursement",
    "cancel": "terminate",
    "invoice": "bill",
    "delete": "remove",
    "password": "credentials",
    "limit": "quota",
}

_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def stem(word):
    """A light plural stemmer: ``limits`` → ``limit``, ``invoices`` → ``invoice``."""
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def words(text):
    """Lower-cased, lightly stemmed words (hyphenated codes kept whole), stopwords removed."""
    return [stem(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def trigrams(text):
    """Character trigrams of the lower-cased text, padded at word boundaries."""
    grams = []
    for w in _WORD.findall(text.lower()):
        padded = " %s " % w
        grams.extend(padded[i : i + 3] for i in range(len(padded) - 2))
    return grams


def load_corpus(path=HERE / "corpus.jsonl"):
    docs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            docs.append(json.loads(line))
    return docs


class Bm25:
    """Okapi BM25 over the documents' title and text."""

    def __init__(self, docs, k1=1.2, b=0.75):
        self.k1, self.b = k1, b
        self.tfs = [Counter(words(d["title"] + " " + d["text"])) for d in docs]
        self.lengths = [sum(tf.values()) for tf in self.tfs]
        self.avgdl = sum(self.lengths) / len(docs)
        df = Counter()
        for tf in self.tfs:
            df.update(tf.keys())
        n = len(docs)
        self.idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}

    def scores(self, query):
        q = words(query)
        out = []
        for tf, length in zip(self.tfs, self.lengths):
            s = 0.0
            for t in q:
                f = tf.get(t, 0)
                if f:
                    norm = self.k1 * (1 - self.b + self.b * length / self.avgdl)
                    s += self.idf[t] * f * (self.k1 + 1) / (f + norm)
            out.append(s)
        return out


class TrigramTfidf:
    """TF-IDF cosine similarity over character trigrams of title and text."""

    def __init__(self, docs):
        tfs = [Counter(trigrams(d["title"] + " " + d["text"])) for d in docs]
        df = Counter()
        for tf in tfs:
            df.update(tf.keys())
        n = len(docs)
        self.idf = {g: math.log((1 + n) / (1 + c)) + 1 for g, c in df.items()}
        self.vectors = [self._weigh(tf) for tf in tfs]

    def _weigh(self, tf):
        v = {g: f * self.idf.get(g, 0.0) for g, f in tf.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        return {g: x / norm for g, x in v.items()}

    def scores(self, query):
        q = self._weigh(Counter(trigrams(query)))
        return [sum(w * v.get(g, 0.0) for g, w in q.items()) for v in self.vectors]


@rag_system(
    name="hybrid-rag",
    version="1",
    depth=8,
    top_k=3,
    token_budget=160,
    index_version="kb-2026-11-30",
    lanes=["bm25", "trigram"],
    locale_filter="hard",
    rerank="lexical",
)
class HybridRag:
    def __init__(self):
        self.docs = load_corpus()
        self.bm25 = Bm25(self.docs)
        self.trigram = TrigramTfidf(self.docs)

    # --- rewrite -----------------------------------------------------------------------------

    def rewrite(self, input):
        tokens = re.findall(r"[A-Za-z0-9-]+|[^A-Za-z0-9-]+", input["question"])
        expanded = "".join(ACRONYMS.get(t.lower(), t) for t in tokens)
        synonyms = " ".join(
            [expanded] + [SYNONYMS[w] for w in words(expanded) if w in SYNONYMS]
        )
        queries = [expanded] if synonyms == expanded else [expanded, synonyms]
        return {
            "queries": queries,
            "usage": {
                "model": "rewriter-mini",
                "input_tokens": len(words(input["question"])) + 12,
                "output_tokens": sum(len(words(q)) for q in queries),
            },
        }

    # --- retrieve ----------------------------------------------------------------------------

    def _filters(self, input, skip_filters):
        if skip_filters:
            return []
        filters = [Filter("tenant", "=", input["tenant"])]
        if self.oloproof_params.get("locale_filter", "hard") == "hard":
            filters.append(Filter("locale", "=", input["locale"]))
        return filters

    def _admits(self, doc, filters):
        return all(doc["metadata"].get(f.field) == f.value for f in filters)

    def _ranked(self, query, lane, filters, input, depth):
        scores = (self.bm25 if lane == "bm25" else self.trigram).scores(query)
        soft = self.oloproof_params.get("locale_filter", "hard") == "soft"
        ranked = []
        for doc, score in zip(self.docs, scores):
            if score <= 0 or not self._admits(doc, filters):
                continue
            if soft and doc["metadata"].get("locale") == input["locale"]:
                score *= 1.2
            ranked.append((score, doc))
        ranked.sort(key=lambda x: (-x[0], x[1]["doc_id"]))
        return [
            Passage(
                doc["doc_id"],
                score=round(score, 6),
                text=doc["text"],
                metadata={"title": doc["title"], **doc["metadata"]},
            )
            for score, doc in ranked[:depth]
        ]

    def retrieve(self, input, depth, query=None, lane=None, skip_filters=False):
        query = query or input["question"]
        filters = self._filters(input, skip_filters)
        first = self._ranked(query, lane, filters, input, depth)
        if not input.get("multi_hop") or not first:
            return Retrieval(query=query, depth=depth, candidates=first, filters=filters, lane=lane)
        # Two hops: the second asks about the first hop's best document's entity.
        entity = first[0].metadata.get("entity", "")
        tail = input["question"].rsplit(",", 1)[-1]
        second_query = "%s %s" % (entity, tail)
        second = self._ranked(second_query, lane, filters, input, depth)
        seen, merged = set(), []
        for p in second + first:
            if p.doc_id not in seen:
                seen.add(p.doc_id)
                merged.append(p)
        return Retrieval(
            query=query,
            depth=depth,
            candidates=merged[:depth],
            filters=filters,
            lane=lane,
            hops=[Hop(query, first, filters), Hop(second_query, second, filters)],
        )

    # --- rerank ------------------------------------------------------------------------------

    def rerank(self, input, candidates):
        if self.oloproof_params.get("rerank", "lexical") == "none":
            return list(candidates)
        asked = set(words(input["question"]))
        order = {p.doc_id: i for i, p in enumerate(candidates)}
        return sorted(
            candidates,
            key=lambda p: (-len(asked & set(words(p.metadata["title"]))), order[p.doc_id]),
        )

    # --- context and generation --------------------------------------------------------------

    def count_tokens(self, passage):
        return len((passage.text or "").split())

    def generate(self, input, context):
        # The question's last clause says what is asked ("…, and what is its refund window?").
        # Codes compare without their hyphens (ERR4012 is ERR-4012).
        asked = {w.replace("-", "") for w in words(input["question"])}
        clause = {w.replace("-", "") for w in words(input["question"].rsplit(",", 1)[-1])}
        best, best_doc, best_overlap = "", None, (0, 0)
        for p in context:
            for sentence in _SENTENCE_END.split(p.text or ""):
                found = {w.replace("-", "") for w in words(sentence)}
                overlap = (len(asked & found) + len(clause & found), len(clause & found))
                if overlap > best_overlap:
                    best, best_doc, best_overlap = sentence, p.doc_id, overlap
        prompt_tokens = 40 + sum(len((p.text or "").split()) for p in context)
        usage = {
            "model": "extractive-small",
            "input_tokens": prompt_tokens,
            "output_tokens": len(best.split()),
        }
        if best_doc is None:
            return {
                "answer": "I could not find this in the knowledge base.",
                "citations": [],
                "behavior": "abstain",
                "usage": usage,
            }
        return {"answer": best, "citations": [best_doc], "usage": usage}
