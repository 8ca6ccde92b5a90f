"""oloproof.integrations.langchain on the real langchain-core, with its own offline fakes
(DeterministicFakeEmbedding, InMemoryVectorStore, FakeListChatModel, GenericFakeChatModel):
no network, no key."""

import datetime
import json
import textwrap

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore

import oloproof
from oloproof import Passage
from oloproof.integrations._common import AdapterError, bracket_citations
from oloproof.integrations.langchain import document_to_passage, staged_system

DOCS = [
    ("kb-01", "Refunds for annual plans are issued within 14 days."),
    ("kb-02", "Every new subscription carries a 30-day guarantee."),
    ("kb-03", "Invoices are emailed to the billing contact."),
    ("kb-04", "SSO works with Okta, Azure AD and Google Workspace."),
]


def store():
    vs = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    vs.add_documents(
        [Document(id=d, page_content=t, metadata={"doc_id": d, "title": d.upper()}) for d, t in DOCS]
    )
    return vs


def context_of(passages):
    """Passages as the worker hands them to generate: with their 1-based position."""
    return tuple(p.with_position(i + 1) for i, p in enumerate(passages))


def test_documents_become_passages_from_their_metadata():
    when = datetime.date(2026, 12, 1)
    d = Document(id="uuid-1", page_content="t", metadata={"source": "s.md", "id": "x", "relevance_score": 0.5, "chunk_id": 3, "when": when})
    p = document_to_passage(d, 1)
    assert (p.doc_id, p.chunk_id, p.score, p.text) == ("x", "3", 0.5, "t")  # `id` before `source`
    assert p.metadata["when"] == "2026-12-01"  # JSON-safe
    assert document_to_passage(Document(id="uuid-1", page_content="t"), 1).doc_id == "uuid-1"
    both = Document(page_content="t", metadata={"doc_id": "a", "score": float("nan"), "relevance_score": 2})
    assert document_to_passage(both, 1).score == 2.0  # a NaN score is no score
    with pytest.raises(AdapterError, match=r"retrieved document 2 has no id.*metadata=\{'doc_id'"):
        document_to_passage(Document(page_content="t", metadata={"title": "x"}), 2)
    assert document_to_passage(Document(page_content="t", metadata={"key": "k"}), 1, id_keys=("key",)).doc_id == "k"


def test_bracket_citations_are_every_cited_id():
    assert bracket_citations("A [kb-01] and [kb-02, kb-09]; again [kb-01]. [see above]") == ["kb-01", "kb-02", "kb-09"]
    assert bracket_citations("no citation") == []


def test_retrieval_asks_the_vector_store_for_depth_documents():
    System = staged_system(store().as_retriever(), RunnableLambda(lambda x: "a"), name="lc", version="1")
    retrieval = System().retrieve({"question": "refunds"}, 3)
    assert retrieval.query == "refunds" and retrieval.depth == 3
    assert len(retrieval.candidates) == 3
    assert {p.doc_id for p in retrieval.candidates} <= {d for d, _ in DOCS}
    expected = [d.id for d in store().similarity_search("refunds", k=3)]
    assert [p.doc_id for p in retrieval.candidates] == expected  # the store's own order
    with pytest.raises(AdapterError, match="no string field 'question'.*its fields: query"):
        System().retrieve({"query": "refunds"}, 3)


def test_a_retriever_that_takes_no_k_is_cut_at_depth():
    every = RunnableLambda(lambda q: [Document(page_content=t, metadata={"doc_id": d}) for d, t in DOCS])
    System = staged_system(every, RunnableLambda(lambda x: "a"), name="lc", version="1")
    assert [p.doc_id for p in System().retrieve({"question": "q"}, 2).candidates] == ["kb-01", "kb-02"]


def test_the_chain_gets_the_host_context_and_its_answer_is_cited():
    seen = []

    def spy(value):
        seen.append(value)
        return value

    prompt = ChatPromptTemplate.from_messages([("system", "Context:\n{context}"), ("human", "{question}")])
    model = FakeListChatModel(responses=["Annual refunds take 14 days [kb-01]."])
    chain = prompt | RunnableLambda(spy) | model | StrOutputParser()
    System = staged_system(store().as_retriever(), chain, name="lc", version="1", top_k=2)
    assert System.__oloproof_system__["defaults"] == {"top_k": 2}
    context = context_of([Passage("kb-01", 0.9, DOCS[0][1]), Passage("kb-03", 0.1, DOCS[2][1])])
    out = System().generate({"question": "How long do refunds take?", "lang": "en"}, context)
    assert out == {"answer": "Annual refunds take 14 days [kb-01].", "citations": ["kb-01"]}
    messages = seen[0].to_messages()
    assert messages[0].content == "Context:\n[kb-01] %s\n\n[kb-03] %s" % (DOCS[0][1], DOCS[2][1])
    assert messages[1].content == "How long do refunds take?"


def test_a_chat_model_and_the_default_prompt_or_documents():
    model = GenericFakeChatModel(messages=iter([AIMessage(content="It is 30 days [kb-02]")]))
    System = staged_system(store().as_retriever(), name="lc", version="1", llm=model)
    out = System().generate({"question": "guarantee?"}, context_of([Passage("kb-02", None, DOCS[1][1])]))
    assert out == {"answer": "It is 30 days [kb-02]", "citations": ["kb-02"]}

    def from_documents(inputs):
        docs = inputs["context"]
        return {"answer": " | ".join(d.metadata["doc_id"] for d in docs), "citations": ["kb-02"]}

    System = staged_system(
        store().as_retriever(), RunnableLambda(from_documents), name="lc", version="1", context="documents"
    )
    context = context_of([Passage("kb-02", None, "x", metadata={"title": "T"}), Passage("kb-04", None, "y")])
    assert System().generate({"question": "q"}, context) == {"answer": "kb-02 | kb-04", "citations": ["kb-02"]}
    with pytest.raises(TypeError, match="a chain or llm="):
        staged_system(store().as_retriever(), RunnableLambda(from_documents), llm=model, name="lc", version="1")


def test_a_prompt_and_a_chat_model_are_chained_for_you():
    # prompt= + llm=: the adapter builds `prompt | llm | StrOutputParser()`; the prompt sees
    # the host's context and the question, the model's message comes back as text.
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Only from:\n{context}"), ("human", "Q: {question} ({lang})")]
    )
    model = GenericFakeChatModel(messages=iter([AIMessage(content="Invoices go to billing [kb-03].")]))
    System = staged_system(store().as_retriever(), name="lc", version="1", llm=model, prompt=prompt)
    context = context_of([Passage("kb-03", 0.4, DOCS[2][1])])
    out = System().generate({"question": "Where do invoices go?", "lang": "en"}, context)
    assert out == {"answer": "Invoices go to billing [kb-03].", "citations": ["kb-03"]}
    # What the model was sent: the prompt, filled.
    seen = []
    spy = RunnableLambda(lambda value: seen.append(value) or value)
    model = FakeListChatModel(responses=["ok [kb-03]"])
    System = staged_system(store().as_retriever(), name="lc", version="1", llm=spy | model, prompt=prompt)
    System().generate({"question": "Where do invoices go?", "lang": "fr"}, context)
    messages = seen[0].to_messages()
    assert messages[0].content == "Only from:\n[kb-03] %s" % DOCS[2][1]
    assert messages[1].content == "Q: Where do invoices go? (fr)"
    with pytest.raises(TypeError, match="not both"):
        staged_system(store().as_retriever(), RunnableLambda(lambda x: "a"), prompt=prompt, name="lc", version="1")


def test_an_answer_that_is_not_text_is_an_error():
    System = staged_system(store().as_retriever(), RunnableLambda(lambda x: 42), name="lc", version="1")
    with pytest.raises(AdapterError, match="returned int, not text"):
        System().generate({"question": "q"}, ())


FAKE_APP = '''
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.vectorstores import InMemoryVectorStore
from oloproof.integrations.langchain import staged_system

DOCS = %r
store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
store.add_documents([Document(id=d, page_content=t, metadata={"doc_id": d}) for d, t in DOCS])
prompt = ChatPromptTemplate.from_messages([("human", "{context}\\n\\n{question}")])
chain = prompt | FakeListChatModel(responses=["Refunds take 14 days [kb-01]."]) | StrOutputParser()
System = staged_system(store.as_retriever(), chain, name="lc-fake", version="1", depth=4, top_k=2)
''' % (DOCS,)


def fake_project(tmp_path):
    (tmp_path / "app.py").write_text(FAKE_APP)
    cases = [
        {"id": "refunds", "input": {"question": "How long do refunds take?"},
         "expected": {"answer": "14 days", "relevant": [{"doc_id": "kb-01"}]}},
        {"id": "sso", "input": {"question": "Which SSO providers?"},
         "expected": {"answer": "Okta", "relevant": [{"doc_id": "kb-04"}]}},
    ]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "oloproof.yaml").write_text(
        textwrap.dedent(
            """
            system: {name: lc-fake, version: "1", rag: {object: "app:System", workers: 1}}
            cases: cases.jsonl
            evaluators:
              - {type: contains, criterion: answer_correct, field: answer, expected_field: answer}
              - {type: hit_rate, k: 4}
              - {type: citation_validity}
            """
        )
    )
    return tmp_path


def test_a_run_through_the_binary_applies_top_k_the_budget_and_the_caches(tmp_path):
    dir = fake_project(tmp_path)
    run = oloproof.run(dir)
    assert run.system == "lc-fake" and run.errors == 0
    by_id = {c.id: c for c in run.cases()}
    refunds = by_id["refunds"].trace
    assert [c["doc_id"] for c in refunds["retrieval"]["candidates"]] == [
        d.id for d in store().similarity_search("How long do refunds take?", k=4)
    ]
    assert len(refunds["context"]["passages"]) == 2  # top_k of the @rag_system defaults
    assert by_id["refunds"].answer == "Refunds take 14 days [kb-01]."
    assert by_id["refunds"].passed("answer_correct") and not by_id["sso"].passed("answer_correct")
    assert run["hit_rate_at_4"].passed == 2  # depth 4 of 4 documents: everything is retrieved

    # The budget (whitespace words): kb-* passages are 7 to 9 words, so 10 keeps one.
    budget = oloproof.run(dir, token_budget=10)
    context = {c.id: c.trace["context"] for c in budget.cases()}["refunds"]
    assert len(context["passages"]) == 1 and context["truncated"] is True
    assert [d["reason"] for d in context["dropped"]][:1] == ["token_budget"]
    # Same depth: the retrieval is served from the cache, the generation is not.
    assert budget.summary["cache"]["retrieve"] == {"hit": 2, "miss": 0}
    assert budget.summary["cache"]["generate"]["miss"] == 2
    again = oloproof.run(dir, token_budget=10)
    assert again.summary["cache"]["execution"] == {"hit": 2, "miss": 0}


def test_the_example_runs_and_diagnose_finds_the_retrieval_failures(project):
    dir = project("langchain")
    run = oloproof.run(dir)
    assert run.system == "support-lc" and run.errors == 0
    answer = run["answer_correct"]
    assert (answer.passed, answer.observed) == (9, 13)
    failing = answer.failing_cases()
    assert failing == ["money_back", "refund_review", "security_review", "api_rate_limit"]
    assert run.gate("gate.yaml")  # 69 % of answers, every citation valid
    diagnosis = run.diagnose("answer_correct")
    assert diagnosis.selected == failing
    assert diagnosis.labels == {
        "money_back": "RETRIEVAL_MISS",
        "refund_review": "CONTEXT_DISTRACTION",
        "security_review": "CONTEXT_DISTRACTION",
        "api_rate_limit": "RANKED_OUT",
    }
    assert set(diagnosis.child_runs) == {"gold context", "control"}
