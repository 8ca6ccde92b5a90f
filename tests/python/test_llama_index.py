"""oloproof.integrations.llama_index on the real llama-index-core, with its own offline fakes
(MockEmbedding, MockLLM, an in-memory VectorStoreIndex): no network, no key."""

import json
import textwrap

import pytest
from llama_index.core import Document, PromptTemplate, Settings, VectorStoreIndex, get_response_synthesizer
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.schema import NodeWithScore, TextNode

import oloproof
from oloproof import Passage
from oloproof.integrations._common import AdapterError
from oloproof.integrations.llama_index import from_query_engine, node_to_passage, passage_to_node, staged_system

DOCS = [
    ("kb-01", "Refunds for annual plans are issued within 14 days."),
    ("kb-02", "Every new subscription carries a 30-day guarantee."),
    ("kb-03", "Invoices are emailed to the billing contact."),
    ("kb-04", "SSO works with Okta, Azure AD and Google Workspace."),
]


@pytest.fixture(autouse=True)
def offline_settings():
    Settings.embed_model = MockEmbedding(embed_dim=8)
    Settings.llm = MockLLM()
    yield


def index():
    return VectorStoreIndex.from_documents(
        [Document(id_=d, text=t, metadata={"title": d.upper()}) for d, t in DOCS]
    )


def context_of(passages):
    return tuple(p.with_position(i + 1) for i, p in enumerate(passages))


def test_nodes_become_passages():
    node = TextNode(text="body", id_="random-uuid", metadata={"title": "T"})
    p = node_to_passage(NodeWithScore(node=node, score=0.25), 1)
    assert (p.doc_id, p.chunk_id, p.score, p.text, p.metadata) == ("random-uuid", None, 0.25, "body", {"title": "T"})
    tagged = TextNode(text="body", metadata={"doc_id": "kb-9", "chunk_id": "kb-9#2"})
    p = node_to_passage(NodeWithScore(node=tagged, score=float("nan")), 1)
    assert (p.doc_id, p.chunk_id, p.score) == ("kb-9", "kb-9#2", None)
    with pytest.raises(AdapterError, match="retrieved item 3 is a str, not a NodeWithScore"):
        node_to_passage("text", 3)
    back = passage_to_node(Passage("kb-1", 0.5, "t", chunk_id="c", metadata={"title": "T"}).with_position(2))
    assert (back.node.node_id, back.node.text, back.node.metadata, back.score) == ("kb-1#c@2", "t", {"title": "T"}, 0.5)


def test_retrieval_reads_ref_doc_ids_and_sets_the_depth():
    retriever = index().as_retriever(similarity_top_k=2)
    System = staged_system(retriever, name="li", version="1")
    retrieval = System().retrieve({"question": "refunds"}, 3)
    assert retrieval.depth == 3 and retriever.similarity_top_k == 3
    assert len(retrieval.candidates) == 3
    assert all(p.doc_id in dict(DOCS) and p.chunk_id is None for p in retrieval.candidates)
    assert all(p.score == pytest.approx(1.0) for p in retrieval.candidates)  # constant embeddings
    assert retrieval.candidates[0].text in dict(DOCS).values()  # text without metadata
    assert retrieval.candidates[0].metadata["title"] == retrieval.candidates[0].doc_id.upper()


def test_the_synthesizer_gets_the_host_context():
    synthesizer = get_response_synthesizer(
        response_mode="compact", text_qa_template=PromptTemplate("Q: {query_str}\n{context_str}")
    )
    System = staged_system(index().as_retriever(), synthesizer, name="li", version="1")
    context = context_of([Passage("kb-02", 1.0, DOCS[1][1], metadata={"title": "KB-02"}), Passage("kb-04", 0.5, DOCS[3][1])])
    out = System().generate({"question": "guarantee? [kb-02]"}, context)
    # MockLLM answers with its prompt: the template filled with the context passages, in order.
    assert out["answer"] == "Q: guarantee? [kb-02]\ntitle: KB-02\n\n%s\n\n%s" % (DOCS[1][1], DOCS[3][1])
    assert out["citations"] == ["kb-02"]
    assert System().count_tokens(Passage("kb-1", None, "one two three")) == len(Settings.tokenizer("one two three"))


def test_a_query_engines_parts():
    engine = index().as_query_engine(similarity_top_k=4)
    System = from_query_engine(engine, name="li", version="1", depth=4, top_k=2)
    assert System.__oloproof_system__["defaults"] == {"depth": 4, "top_k": 2}
    assert len(System().retrieve({"question": "q"}, 4).candidates) == 4
    with_post = index().as_query_engine(node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=0.5)])
    with pytest.raises(TypeError, match="node postprocessors"):
        from_query_engine(with_post, name="li", version="1")
    with pytest.raises(TypeError, match="needs a RetrieverQueryEngine"):
        from_query_engine(object(), name="li", version="1")


FAKE_APP = '''
from llama_index.core import Document, Settings, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from oloproof.integrations.llama_index import from_query_engine

Settings.embed_model = MockEmbedding(embed_dim=8)
Settings.llm = MockLLM()
DOCS = %r
index = VectorStoreIndex.from_documents([Document(id_=d, text=t) for d, t in DOCS])
System = from_query_engine(index.as_query_engine(), name="li-fake", version="1", depth=4, top_k=2)
''' % (DOCS,)


def test_a_run_through_the_binary_applies_top_k_and_the_budget(tmp_path):
    (tmp_path / "app.py").write_text(FAKE_APP)
    (tmp_path / "cases.jsonl").write_text(
        json.dumps({"id": "refunds", "input": {"question": "How long do refunds take?"},
                    "expected": {"answer": "14 days", "relevant": [{"doc_id": "kb-01"}]}}) + "\n"
    )
    (tmp_path / "oloproof.yaml").write_text(
        textwrap.dedent(
            """
            system: {name: li-fake, version: "1", rag: {object: "app:System", workers: 1}}
            cases: cases.jsonl
            evaluators:
              - {type: hit_rate, k: 4}
              - {type: contains, criterion: answer_mentions_refunds, field: answer, expected_field: answer}
            """
        )
    )
    run = oloproof.run(tmp_path)
    assert run.errors == 0
    trace = run.cases()[0].trace
    assert sorted(c["doc_id"] for c in trace["retrieval"]["candidates"]) == sorted(dict(DOCS))
    kept = [p["doc_id"] for p in trace["context"]["passages"]]
    assert len(kept) == 2
    # MockLLM echoes LlamaIndex's default QA prompt, which holds exactly the kept passages.
    answer = run.cases()[0].answer
    assert all(dict(DOCS)[d] in answer for d in kept)
    assert not any(dict(DOCS)[c["doc_id"]] in answer for c in trace["context"]["dropped"])
    budget = oloproof.run(tmp_path, token_budget=12)
    context = budget.cases()[0].trace["context"]
    assert len(context["passages"]) == 1 and context["truncated"] is True
    assert budget.summary["cache"]["retrieve"] == {"hit": 1, "miss": 0}


def test_the_example_runs_and_diagnose_finds_the_retrieval_miss(project):
    dir = project("llama_index")
    run = oloproof.run(dir)
    assert run.system == "support-li" and run.errors == 0
    assert run["answer_correct"].failing_cases() == ["money_back"]
    assert run.gate("gate.yaml")
    diagnosis = run.diagnose("answer_correct")
    assert diagnosis.labels == {"money_back": "RETRIEVAL_MISS"}
