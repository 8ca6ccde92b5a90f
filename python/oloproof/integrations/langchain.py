"""A LangChain retriever and chain as an Oloproof staged system, in one call::

    # app.py, named by oloproof.yaml as `object: app:SupportRag`
    from oloproof.integrations.langchain import staged_system

    retriever = vector_store.as_retriever()
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the context; cite [doc_id].\\n\\n{context}"), ("human", "{question}")]
    )
    SupportRag = staged_system(retriever, prompt | chat_model | StrOutputParser(),
                               name="support-lc", version="1", depth=6, top_k=2)

Oloproof then owns what happens between the stages, as for any staged system: the retriever
returns ``depth`` candidates, the host keeps the first ``top_k`` within ``token_budget`` (the
system's ``count_tokens``) and hands that context to the chain; each stage is cached, and
``diagnose`` can replace the context (gold passages, another ``top_k`` or budget, a reranker).

Retrieval: ``retriever.invoke(query)`` (a ``VectorStoreRetriever`` is asked for ``k=depth``;
any other retriever's list is cut at ``depth``). Each ``Document`` becomes a passage:

- ``doc_id``: the first of ``metadata["doc_id"]``, ``metadata["id"]``, ``metadata["source"]``
  (``id_keys=``), else ``Document.id``; a document with none of them is an error;
- ``chunk_id``: ``metadata["chunk_id"]`` (``Document.id`` is not used: vector stores fill it
  with a random UUID, which would defeat the caches);
- ``score``: the first number among ``metadata["score"]``, ``metadata["relevance_score"]``
  (``score_keys=``; rerankers such as Cohere's write ``relevance_score``), else none;
- ``text``: ``page_content``; ``metadata``: the document's metadata (JSON-safe).

Generation: the chain is invoked with the case input's fields plus ``question`` (the query)
and ``context`` (the assembled context as text, ``[doc_id] text`` blocks; ``context="documents"``
passes the ``Document`` list instead, as ``create_stuff_documents_chain`` expects, or pass a
callable ``context=f(passages)``). The chain's output may be a ``str``, a message (its text), or
a dict with ``answer`` (and optionally ``citations``). Citations: ``[doc_id]`` brackets in the
answer (``citations=None`` for none, or a callable ``f(answer, passages)``). Instead of a
chain, ``llm=`` and an optional ``prompt=`` build ``prompt | llm | StrOutputParser()``.

Tokens (for ``token_budget``): whitespace words unless ``count_tokens=f(text) -> int``.
"""

from typing import Any, Callable, List, Mapping, Optional, Sequence, Union

from oloproof import Passage
from oloproof.integrations._common import (
    CHUNK_ID_KEY,
    DEFAULT_ID_KEYS,
    DEFAULT_SCORE_KEYS,
    AdapterError,
    bracket_citations,
    default_context_text,
    first_id,
    first_score,
    json_metadata,
    make_system,
    words,
)

__all__ = ["staged_system", "document_to_passage", "passage_to_document", "DEFAULT_PROMPT"]

#: The prompt used with ``llm=`` when no ``prompt=`` is given.
DEFAULT_PROMPT = (
    (
        "system",
        "Answer the question from the context only. Cite the passages you use as [doc_id]. "
        "If the context does not hold the answer, say so.\n\nContext:\n{context}",
    ),
    ("human", "{question}"),
)


def document_to_passage(
    document: Any,
    position: int,
    id_keys: Sequence[str] = DEFAULT_ID_KEYS,
    score_keys: Sequence[str] = DEFAULT_SCORE_KEYS,
) -> Passage:
    """A LangChain ``Document`` as a passage (see the module doc for the keys read)."""
    metadata = dict(getattr(document, "metadata", None) or {})
    doc_id = first_id(metadata, id_keys) or getattr(document, "id", None)
    if not doc_id:
        raise AdapterError(
            "retrieved document %d has no id: none of metadata[%s] nor Document.id is set; "
            "give documents metadata={'doc_id': ...} (the ids of the cases' `relevant`) or "
            "pass id_keys=" % (position, ", ".join(repr(k) for k in id_keys))
        )
    chunk_id = metadata.get(CHUNK_ID_KEY)
    return Passage(
        doc_id=str(doc_id),
        score=first_score(metadata, score_keys),
        text=getattr(document, "page_content", None),
        chunk_id=None if chunk_id is None else str(chunk_id),
        metadata=json_metadata(metadata),
    )


def passage_to_document(passage: Passage):
    """A context passage back as a ``Document`` (its metadata, plus ``doc_id`` and, when set,
    ``chunk_id``), for chains that take documents."""
    from langchain_core.documents import Document

    metadata = dict(passage.metadata or {})
    metadata.setdefault("doc_id", passage.doc_id)
    if passage.chunk_id is not None:
        metadata.setdefault(CHUNK_ID_KEY, passage.chunk_id)
    return Document(page_content=passage.text or "", metadata=metadata)


def _answer_text(out: Any) -> Any:
    """A chain's output as text (or a mapping with ``answer``)."""
    if isinstance(out, (str, Mapping)):
        return out
    content = getattr(out, "content", None)  # an AIMessage or any BaseMessage
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks: keep the text ones
        return "".join(
            b if isinstance(b, str) else b.get("text", "")
            for b in content
            if isinstance(b, str) or (isinstance(b, Mapping) and b.get("type") == "text")
        )
    return out


def staged_system(
    retriever: Any,
    chain: Any = None,
    *,
    name: str,
    version: str,
    llm: Any = None,
    prompt: Any = None,
    depth: Optional[int] = None,
    top_k: Optional[int] = None,
    token_budget: Optional[int] = None,
    index_version: Optional[str] = None,
    question_key: str = "question",
    context: Union[str, Callable[[Sequence[Passage]], Any]] = "text",
    count_tokens: Callable[[str], int] = words,
    citations: Optional[Callable[[str, Sequence[Passage]], List[str]]] = bracket_citations,
    id_keys: Sequence[str] = DEFAULT_ID_KEYS,
    score_keys: Sequence[str] = DEFAULT_SCORE_KEYS,
    **params: Any,
):
    """A ``@rag_system`` class (name it in ``oloproof.yaml`` as ``object: module:Name``) whose
    retrieval is ``retriever`` and whose generation is ``chain`` (or ``prompt | llm``).

    ``depth``, ``top_k``, ``token_budget``, ``index_version`` and ``params`` are the system's
    declared defaults (``oloproof.yaml`` overrides them). See the module doc for how documents
    become passages and what the chain receives.
    """
    if chain is None:
        if llm is None:
            raise TypeError("staged_system needs a chain, or llm= (and optionally prompt=)")
        from langchain_core.output_parsers import StrOutputParser
        from langchain_core.prompts import ChatPromptTemplate

        template = prompt if prompt is not None else ChatPromptTemplate.from_messages(
            list(DEFAULT_PROMPT)
        )
        chain = template | llm | StrOutputParser()
    elif llm is not None or prompt is not None:
        raise TypeError("staged_system takes a chain or llm=/prompt=, not both")
    if not (context in ("text", "documents") or callable(context)):
        raise TypeError("context= must be 'text', 'documents' or a callable(passages)")
    takes_k = isinstance(getattr(retriever, "search_kwargs", None), dict)

    def retrieve(query: str, depth: int) -> List[Passage]:
        if takes_k:
            documents = retriever.invoke(query, k=depth)
        else:
            documents = retriever.invoke(query)
        return [
            document_to_passage(d, i + 1, id_keys, score_keys)
            for i, d in enumerate(list(documents)[:depth])
        ]

    def generate(input: Mapping[str, Any], query: str, passages: Sequence[Passage]) -> Any:
        if context == "text":
            given = default_context_text(passages)
        elif context == "documents":
            given = [passage_to_document(p) for p in passages]
        else:
            given = context(passages)
        return _answer_text(chain.invoke(dict(input, question=query, context=given)))

    return make_system(
        name=name,
        version=version,
        retrieve=retrieve,
        generate=generate,
        count_tokens=count_tokens,
        citations=citations,
        question_key=question_key,
        defaults=dict(
            params,
            depth=depth,
            top_k=top_k,
            token_budget=token_budget,
            index_version=index_version,
        ),
        class_name="LangChainSystem",
        doc="A LangChain retriever and chain as a staged system (%s %s)." % (name, version),
    )
