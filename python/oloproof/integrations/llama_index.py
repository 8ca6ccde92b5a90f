"""A LlamaIndex retriever and response synthesizer as an Oloproof staged system, in one call::

    # app.py, named by oloproof.yaml as `object: app:SupportRag`
    from llama_index.core import VectorStoreIndex, get_response_synthesizer
    from oloproof.integrations.llama_index import staged_system, from_query_engine

    index = VectorStoreIndex.from_documents(documents)
    SupportRag = staged_system(index.as_retriever(), get_response_synthesizer(),
                               name="support-li", version="1", depth=6, top_k=2)
    # or the parts of a query engine:
    SupportRag = from_query_engine(index.as_query_engine(), name="support-li", version="1")

Oloproof then owns what happens between the stages, as for any staged system: the retriever
returns ``depth`` candidates, the host keeps the first ``top_k`` within ``token_budget`` (the
system's ``count_tokens``) and hands that context to the synthesizer; each stage is cached, and
``diagnose`` can replace the context (gold passages, another ``top_k`` or budget, a reranker).

Retrieval: ``retriever.retrieve(query)``; a retriever with a ``similarity_top_k`` (the vector
index's) is set to ``depth`` first, any other retriever's list is cut at ``depth``. Each
``NodeWithScore`` becomes a passage:

- ``doc_id``: the first of ``metadata["doc_id"]``, ``metadata["id"]``, ``metadata["source"]``
  (``id_keys=``), else the node's ``ref_doc_id`` (the id of the ``Document`` it was split
  from: ``Document(id_="kb-01", …)``), else its ``node_id``;
- ``chunk_id``: ``metadata["chunk_id"]`` (a node's own id is not used: ``from_documents`` makes
  it a random UUID, which would defeat the caches);
- ``score``: ``NodeWithScore.score``; ``text``: the node's content without metadata;
  ``metadata``: the node's metadata (JSON-safe).

Generation: ``synthesizer.synthesize(query, nodes=…)`` with the assembled context rebuilt as
``TextNode``s (text, metadata, score), so the synthesizer's prompt holds what the query engine's
would. The answer is ``Response.response``; citations are ``[doc_id]`` brackets in it
(``citations=None`` for none, or a callable ``f(answer, passages)``).

Tokens (for ``token_budget``): LlamaIndex's own ``Settings.tokenizer`` unless
``count_tokens=f(text) -> int``.
"""

from typing import Any, Callable, List, Mapping, Optional, Sequence

from oloproof import Passage
from oloproof.integrations._common import (
    CHUNK_ID_KEY,
    DEFAULT_ID_KEYS,
    AdapterError,
    bracket_citations,
    finite_or_none,
    first_id,
    json_metadata,
    make_system,
)

__all__ = ["staged_system", "from_query_engine", "node_to_passage", "passage_to_node"]


def node_to_passage(
    node_with_score: Any, position: int, id_keys: Sequence[str] = DEFAULT_ID_KEYS
) -> Passage:
    """A LlamaIndex ``NodeWithScore`` as a passage (see the module doc for the keys read)."""
    from llama_index.core.schema import MetadataMode

    node = getattr(node_with_score, "node", None)
    if node is None:
        raise AdapterError(
            "retrieved item %d is a %s, not a NodeWithScore"
            % (position, type(node_with_score).__name__)
        )
    metadata = dict(getattr(node, "metadata", None) or {})
    doc_id = first_id(metadata, id_keys) or node.ref_doc_id or node.node_id
    if not doc_id:
        raise AdapterError("retrieved node %d has no id (metadata, ref_doc_id, node_id)" % position)
    chunk_id = metadata.get(CHUNK_ID_KEY)
    return Passage(
        doc_id=str(doc_id),
        score=finite_or_none(node_with_score.score),
        text=node.get_content(metadata_mode=MetadataMode.NONE),
        chunk_id=None if chunk_id is None else str(chunk_id),
        metadata=json_metadata(metadata),
    )


def passage_to_node(passage: Passage):
    """A context passage back as a ``NodeWithScore`` holding a ``TextNode`` with the passage's
    text and metadata (its id: ``doc_id``, ``#chunk_id`` when set, ``@position``)."""
    from llama_index.core.schema import NodeWithScore, TextNode

    node_id = passage.doc_id
    if passage.chunk_id is not None:
        node_id += "#" + passage.chunk_id
    if passage.position is not None:
        node_id += "@%d" % passage.position
    node = TextNode(text=passage.text or "", id_=node_id, metadata=dict(passage.metadata or {}))
    return NodeWithScore(node=node, score=passage.score)


def _llama_tokens(text: str) -> int:
    from llama_index.core import Settings

    return len(Settings.tokenizer(text))


def staged_system(
    retriever: Any,
    synthesizer: Any = None,
    *,
    name: str,
    version: str,
    depth: Optional[int] = None,
    top_k: Optional[int] = None,
    token_budget: Optional[int] = None,
    index_version: Optional[str] = None,
    question_key: str = "question",
    count_tokens: Optional[Callable[[str], int]] = None,
    citations: Optional[Callable[[str, Sequence[Passage]], List[str]]] = bracket_citations,
    id_keys: Sequence[str] = DEFAULT_ID_KEYS,
    **params: Any,
):
    """A ``@rag_system`` class (name it in ``oloproof.yaml`` as ``object: module:Name``) whose
    retrieval is ``retriever`` and whose generation is ``synthesizer`` (default:
    ``get_response_synthesizer()``, LlamaIndex's default over ``Settings.llm``).

    ``depth``, ``top_k``, ``token_budget``, ``index_version`` and ``params`` are the system's
    declared defaults (``oloproof.yaml`` overrides them).
    """
    if synthesizer is None:
        from llama_index.core import get_response_synthesizer

        synthesizer = get_response_synthesizer()
    top_k_property = getattr(type(retriever), "similarity_top_k", None)
    sets_top_k = isinstance(top_k_property, property) and top_k_property.fset is not None

    def retrieve(query: str, depth: int) -> List[Passage]:
        if sets_top_k:
            retriever.similarity_top_k = depth
        nodes = retriever.retrieve(query)
        return [node_to_passage(n, i + 1, id_keys) for i, n in enumerate(list(nodes)[:depth])]

    def generate(input: Mapping[str, Any], query: str, passages: Sequence[Passage]) -> Any:
        response = synthesizer.synthesize(query, nodes=[passage_to_node(p) for p in passages])
        text = getattr(response, "response", response)
        if text is None:
            raise AdapterError("the synthesizer returned no text (Response.response is None)")
        if not isinstance(text, str):
            raise AdapterError(
                "the synthesizer returned %s: use a non-streaming synthesizer "
                "(streaming=False)" % type(text).__name__
            )
        return text

    return make_system(
        name=name,
        version=version,
        retrieve=retrieve,
        generate=generate,
        count_tokens=count_tokens or _llama_tokens,
        citations=citations,
        question_key=question_key,
        defaults=dict(
            params,
            depth=depth,
            top_k=top_k,
            token_budget=token_budget,
            index_version=index_version,
        ),
        class_name="LlamaIndexSystem",
        doc="A LlamaIndex retriever and synthesizer as a staged system (%s %s)." % (name, version),
    )


def from_query_engine(query_engine: Any, **kwargs: Any):
    """:func:`staged_system` of a ``RetrieverQueryEngine``'s parts (its retriever and its
    response synthesizer), e.g. ``index.as_query_engine()``; keywords as for
    :func:`staged_system`. The engine's node postprocessors are not applied (a reranker belongs
    to ``diagnose --intervention reranker`` or to a retriever that reranks)."""
    retriever = getattr(query_engine, "retriever", None)
    synthesizer = getattr(query_engine, "_response_synthesizer", None)
    if retriever is None or synthesizer is None:
        raise TypeError(
            "from_query_engine needs a RetrieverQueryEngine (with a retriever and a response "
            "synthesizer), got %s; call staged_system(retriever, synthesizer) instead"
            % type(query_engine).__name__
        )
    if getattr(query_engine, "_node_postprocessors", None):
        raise TypeError(
            "this query engine has node postprocessors, which from_query_engine would skip; "
            "wrap the retriever and postprocessors in one retriever, or build the system with "
            "staged_system(retriever, synthesizer)"
        )
    return staged_system(retriever, synthesizer, **kwargs)
