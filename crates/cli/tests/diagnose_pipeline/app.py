"""A small pipeline system for `oloproof diagnose` (crates/cli/tests/diagnose_pipeline.rs).

Two lanes whose rankings are scripted per query (so each failure below happens for one
reason), a tenant metadata filter, a query rewriter, host-side RRF (oloproof.yaml), a lexical
reranker, an iterative retrieval with hops, and an extractive generator that answers with the
text of its context. The filter, rewrite, rerank, hops and generator are real code; only the
lanes' rankings are a table. Each failing case loses its evidence at one stage:

- reranked: the reranker (question-word overlap) demotes the gold passage below top_k;
- fusion_ok, fusion_unconfirmed: bm25 has the gold passage at 2, RRF cuts it at depth 6;
  bypassing fusion recovers the first, while the reranker demotes the second again;
- drift: the rewrite replaces "refunds" and no longer retrieves the gold passage;
- filtered: the gold document belongs to another tenant, the filter removes it;
- hops: the second hop never finds the document the answer needs.
"""

import re

from oloproof import Filter, Hop, Passage, Retrieval, rag_system

DOCS = {
    "r1": ("review lasts 14 days", "acme"),
    "r2": ("how long does a refund take to reach a card", "acme"),
    "r3": ("a refund review can take long", "acme"),
    "u2": ("priority support is included in the business plan", "acme"),
    "s1": ("the starter plan has email support", "acme"),
    "s2": ("support hours are nine to five", "acme"),
    "s3": ("plans renew every year", "acme"),
    "s4": ("invoices are sent monthly", "acme"),
    "s5": ("contact the sales team", "acme"),
    "t6": ("priority queues for tickets", "acme"),
    "u1": ("it keeps who changed what", "acme"),
    "v1": ("the audit log is exported nightly", "acme"),
    "v2": ("audit log retention is a year", "acme"),
    "v3": ("the log viewer shows the record count", "acme"),
    "v4": ("audit settings live in the admin page", "acme"),
    "v5": ("record exports run on the hour", "acme"),
    "w6": ("the audit team meets weekly", "acme"),
    "g1": ("refunds arrive within 5 business days", "acme"),
    "z1": ("reimbursements are issued by finance", "acme"),
    "z2": ("arrival times vary by carrier", "acme"),
    "z3": ("reimbursements need a receipt", "acme"),
    "f1": ("globex customers get a 20 percent discount", "globex"),
    "y1": ("prices are listed in euros", "acme"),
    "y2": ("discount codes expire", "acme"),
    "h1": ("billing is owned by the payments team", "acme"),
    "h2": ("the payments team is led by ana", "acme"),
    "k1": ("team offsites are in may", "acme"),
    "k2": ("who to ask about invoices", "acme"),
    "k3": ("payments run at noon", "acme"),
    "e1": ("reset your password from the login page", "acme"),
}

# Each lane's ranking of a query.
LANES = {
    "how long does a refund review take": {"bm25": ["r1", "r2", "r3"], "tri": ["r1", "r2", "r3"]},
    "which plan includes priority support": {
        "bm25": ["s1", "u2", "s2", "s3", "s4", "s5"],
        "tri": ["t6", "s1", "s2", "s3", "s4", "s5"],
    },
    "what does the audit log record": {
        "bm25": ["v1", "u1", "v2", "v3", "v4", "v5"],
        "tri": ["w6", "v1", "v2", "v3", "v4", "v5"],
    },
    "when do refunds arrive": {"bm25": ["g1", "z1"], "tri": ["g1", "z2"]},
    "when do reimbursements arrive": {"bm25": ["z1", "z3"], "tri": ["z2", "z3"]},
    "what is the globex discount": {"bm25": ["f1", "y1"], "tri": ["f1", "y2"]},
    "how do i reset my password": {"bm25": ["e1"], "tri": ["e1"]},
}

# An iterative retrieval: the hops of bm25 for a multi-hop question.
HOPS = {
    "who leads the team that owns billing": [
        ("who leads the team that owns billing", ["h1", "k1"]),
        ("who leads payments support", ["k2", "k3"]),
    ],
}

# The rewriter's synonym table.
SYNONYMS = {"refunds": "reimbursements"}


def words(text):
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def passage(doc_id):
    return Passage(doc_id, text=DOCS[doc_id][0])


@rag_system(name="diagnose-pipeline", version="1", depth=6, top_k=2, lanes=["bm25", "tri"])
class Pipeline:
    def rewrite(self, input):
        q = input["question"]
        return [" ".join(SYNONYMS.get(w, w) for w in q.split())]

    def retrieve(self, input, depth, query=None, lane=None, skip_filters=False):
        q = query or input["question"]
        tenant = input["tenant"]
        keep = lambda ids: [d for d in ids if skip_filters or DOCS[d][1] == tenant]
        filters = [] if skip_filters else [Filter("tenant", "=", tenant)]
        hops = []
        if lane == "bm25" and q in HOPS:
            found = []
            for hop_query, ids in HOPS[q]:
                ids = keep(ids)
                hops.append(Hop(hop_query, [passage(d) for d in ids], filters))
                found.extend(ids)
            ids = found
        else:
            ids = keep(LANES.get(q, {}).get(lane, []))
        return Retrieval(query=query, depth=depth, candidates=[passage(d) for d in ids[:depth]],
                         filters=filters, hops=hops)

    def rerank(self, input, candidates):
        q = words(input["question"])
        return sorted(candidates, key=lambda p: -len(q & words(p.text)))

    def generate(self, input, context):
        return {"answer": " ".join(p.text for p in context),
                "citations": [p.doc_id for p in context]}
