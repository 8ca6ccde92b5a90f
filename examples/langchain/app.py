"""support-lc: a LangChain pipeline evaluated by Oloproof through the LangChain adapter.

Everything here is real LangChain code (`langchain-core`): an `InMemoryVectorStore` over the
documents of `docs.jsonl`, its retriever, a `ChatPromptTemplate` and a chat model in an LCEL
chain. To stay offline and deterministic the two model parts are stand-ins:

- the embeddings are `HashingEmbeddings` below (hashed bag of words, cosine similarity: a lexical
  retriever; swap in `OpenAIEmbeddings()` or any `Embeddings`);
- the chat model is LangChain's `ParrotFakeChatModel`, which answers with its last message: the
  prompt's human message is the assembled context, and the chain keeps its first block (the top
  passage, `[doc_id] text`) as the answer (swap in `ChatOpenAI(...)` and a real prompt).

`staged_system` turns the retriever and the chain into the staged system that `oloproof.yaml`
names (`object: app:SupportLangChain`): Oloproof asks the retriever for `depth` documents,
keeps `top_k` of them within the token budget, and hands that context to the chain.
"""

import hashlib
import json
import math
import re
from pathlib import Path

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import ParrotFakeChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore

from oloproof.integrations.langchain import staged_system

HERE = Path(__file__).resolve().parent
STOPWORDS = {"a", "an", "the", "is", "are", "do", "does", "i", "my", "of", "on", "to", "for",
             "how", "what", "which", "who", "can", "if", "in", "and", "or", "with", "be", "it"}


class HashingEmbeddings(Embeddings):
    """Hashed bag of lower-cased words (stop words dropped), L2-normalised: deterministic,
    offline, and lexical enough for the example's questions."""

    def __init__(self, size: int = 512):
        self.size = size

    def _embed(self, text: str):
        vector = [0.0] * self.size
        for word in re.findall(r"[a-z0-9-]+", text.lower()):
            if word in STOPWORDS:
                continue
            digest = hashlib.sha256(word.encode("utf-8")).digest()
            vector[int.from_bytes(digest[:4], "big") % self.size] += 1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]

    def embed_documents(self, texts):
        return [self._embed(t) for t in texts]

    def embed_query(self, text):
        return self._embed(text)


def load_documents():
    with open(HERE / "docs.jsonl", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    # `doc_id` in metadata is what the adapter reads as the passage's document id (the ids the
    # cases' `relevant` lists name); Document.id keeps the store's own ids stable too.
    return [
        Document(id=r["doc_id"], page_content=r["text"], metadata={"doc_id": r["doc_id"], "title": r["title"]})
        for r in rows
    ]


store = InMemoryVectorStore(HashingEmbeddings())
store.add_documents(load_documents())
retriever = store.as_retriever()

prompt = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer from the context only and cite passages as [doc_id]."),
        ("human", "{context}"),
    ]
)
first_block = RunnableLambda(lambda text: text.split("\n\n")[0])
chain = prompt | ParrotFakeChatModel() | StrOutputParser() | first_block

SupportLangChain = staged_system(
    retriever,
    chain,
    name="support-lc",
    version="1",
    depth=6,
    top_k=2,
    index_version="docs-2026-12",
)
