"""support-li: a LlamaIndex pipeline evaluated by Oloproof through the LlamaIndex adapter.

Everything here is real LlamaIndex code (`llama-index-core`): a `VectorStoreIndex` in memory
over the documents of `docs.jsonl`, its retriever, and a response synthesizer. To stay offline
and deterministic the two model parts are stand-ins:

- the embeddings are `HashingEmbedding` below (hashed bag of words: a lexical retriever; swap in
  `OpenAIEmbedding()` or any `BaseEmbedding`);
- the LLM is LlamaIndex's `MockLLM`, which answers with its prompt: the synthesizer's prompt
  template is the bare context (`{context_str}`), so the answer is the assembled context (swap
  in a real LLM and drop `text_qa_template`).

`from_query_engine` turns the query engine's retriever and synthesizer into the staged system
that `oloproof.yaml` names (`object: app:SupportLlamaIndex`): Oloproof asks the retriever for
`depth` nodes, keeps `top_k` of them within the token budget, and hands that context to the
synthesizer.
"""

import hashlib
import json
import math
import re
from pathlib import Path
from typing import List

from llama_index.core import Document, PromptTemplate, Settings, VectorStoreIndex
from llama_index.core.embeddings import BaseEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter

from oloproof.integrations.llama_index import from_query_engine

HERE = Path(__file__).resolve().parent
STOPWORDS = {"a", "an", "the", "is", "are", "do", "does", "i", "my", "of", "on", "to", "for",
             "how", "what", "which", "who", "can", "if", "in", "and", "or", "with", "be", "it"}
SIZE = 512


def _embed(text: str) -> List[float]:
    vector = [0.0] * SIZE
    for word in re.findall(r"[a-z0-9-]+", text.lower()):
        if word in STOPWORDS:
            continue
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        vector[int.from_bytes(digest[:4], "big") % SIZE] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


class HashingEmbedding(BaseEmbedding):
    """Hashed bag of lower-cased words (stop words dropped), L2-normalised: deterministic,
    offline, and lexical enough for the example's questions."""

    def _get_query_embedding(self, query: str) -> List[float]:
        return _embed(query)

    def _get_text_embedding(self, text: str) -> List[float]:
        return _embed(text)

    async def _aget_query_embedding(self, query: str) -> List[float]:
        return _embed(query)


Settings.embed_model = HashingEmbedding()
Settings.llm = MockLLM()

with open(HERE / "docs.jsonl", encoding="utf-8") as f:
    rows = [json.loads(line) for line in f if line.strip()]
# `id_` becomes every node's `ref_doc_id`, which the adapter reads as the passage's document id
# (the ids the cases' `relevant` lists name). Nodes get stable ids (`kb-01#0`, …) instead of
# random UUIDs: the vector store breaks ties between equal scores by node id, so random ids would
# make the order of tied candidates change from one process to the next.
documents = [Document(id_=r["doc_id"], text=r["text"], metadata={"title": r["title"]}) for r in rows]
splitter = SentenceSplitter(id_func=lambda i, doc: "%s#%d" % (doc.doc_id, i))
index = VectorStoreIndex.from_documents(documents, transformations=[splitter])
query_engine = index.as_query_engine(
    response_mode="compact",
    text_qa_template=PromptTemplate("{context_str}"),
)

SupportLlamaIndex = from_query_engine(
    query_engine,
    name="support-li",
    version="1",
    depth=6,
    top_k=2,
    index_version="docs-2026-12",
)
