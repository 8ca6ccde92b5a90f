"""Writes N generated RAG traces as OTLP JSON Lines (the Collector file exporter's format), for
bench/import.sh: each trace is a CHAIN root, a retriever with 5 documents, a reranker (5 in, 3
out), two LLM calls and three tool/chain spans (10 spans: 100,000 traces are 1 M spans), with
OpenInference attributes; 64 spans per line (a batch), a trace's spans spread over lines as a
batching exporter spreads them (children first, the root last).

Usage: python bench/gen_otlp.py N OUT.jsonl
"""

import json
import sys


def kv(key, value):
    if isinstance(value, bool):
        v = {"boolValue": value}
    elif isinstance(value, int):
        v = {"intValue": str(value)}
    elif isinstance(value, float):
        v = {"doubleValue": value}
    else:
        v = {"stringValue": value}
    return {"key": key, "value": v}


def trace_spans(n):
    tid = f"{0x0AF7651916CD43DD0000000000000000 + n:032x}"
    base = 1_764_633_600_000_000_000 + n * 1_000_000_000
    sid = lambda k: f"{(n * 16 + k + 1):016x}"
    root = sid(0)
    q = f"question number {n} about refunds and shipping"

    def span(k, name, start, end, attrs, parent=root):
        s = {
            "traceId": tid,
            "spanId": sid(k),
            "name": name,
            "kind": 1,
            "startTimeUnixNano": str(base + start * 1_000_000),
            "endTimeUnixNano": str(base + end * 1_000_000),
            "attributes": attrs,
            "status": {},
        }
        if parent:
            s["parentSpanId"] = parent
        return s

    docs = []
    for i in range(5):
        docs += [
            kv(f"retrieval.documents.{i}.document.id", f"doc-{(n + i) % 5000}"),
            kv(f"retrieval.documents.{i}.document.score", 1.0 / (i + 1)),
            kv(f"retrieval.documents.{i}.document.content", f"passage {i} of trace {n}: refunds take 14 days."),
        ]
    rin = [kv(f"reranker.input_documents.{i}.document.id", f"doc-{(n + i) % 5000}") for i in range(5)]
    rout = []
    for i in range(3):
        rout += [
            kv(f"reranker.output_documents.{i}.document.id", f"doc-{(n + 4 - i) % 5000}"),
            kv(f"reranker.output_documents.{i}.document.score", 0.9 - i * 0.1),
        ]
    children = [
        span(1, "rewrite", 0, 30, [kv("openinference.span.kind", "LLM"), kv("llm.model_name", "gpt-4o-mini"),
             kv("llm.output_messages.0.message.content", q + " rewritten"), kv("llm.token_count.prompt", 20),
             kv("llm.token_count.completion", 6)]),
        span(2, "retrieve", 30, 60, [kv("openinference.span.kind", "RETRIEVER"), kv("input.value", q + " rewritten")] + docs),
        span(3, "rerank", 60, 75, [kv("openinference.span.kind", "RERANKER"), kv("reranker.query", q)] + rin + rout),
        span(4, "format", 75, 80, [kv("openinference.span.kind", "CHAIN")]),
        span(5, "generate", 80, 380, [kv("openinference.span.kind", "LLM"), kv("llm.model_name", "gpt-4o-mini"),
             kv("llm.input_messages.0.message.role", "user"), kv("llm.input_messages.0.message.content", q),
             kv("llm.output_messages.0.message.role", "assistant"),
             kv("llm.output_messages.0.message.content", "Refunds take 14 days."),
             kv("llm.token_count.prompt", 180), kv("llm.token_count.completion", 9),
             kv("gen_ai.response.time_to_first_chunk", 0.12)]),
        span(6, "guard", 380, 385, [kv("openinference.span.kind", "GUARDRAIL")]),
        span(7, "tool", 385, 386, [kv("openinference.span.kind", "TOOL")]),
        span(8, "embed", 20, 29, [kv("openinference.span.kind", "EMBEDDING")], parent=sid(2)),
        span(9, "post", 386, 390, [kv("openinference.span.kind", "CHAIN")]),
    ]
    root_span = span(0, "rag.query", 0, 400, [
        kv("openinference.span.kind", "CHAIN"), kv("input.value", q), kv("output.value", "Refunds take 14 days."),
        kv("metadata", json.dumps({"intent": ["refund", "shipping", "returns"][n % 3], "tenant": f"t{n % 7}"})),
        kv("session.id", f"s{n // 3}"),
    ], parent=None)
    return children + [root_span]


def main(n, out):
    resource = {"attributes": [kv("service.name", "bench-rag")]}
    batch = []
    with open(out, "w") as f:
        def flush():
            doc = {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": {"name": "bench"}, "spans": batch}]}]}
            f.write(json.dumps(doc, separators=(",", ":")) + "\n")
            batch.clear()

        for t in range(n):
            for s in trace_spans(t):
                batch.append(s)
                if len(batch) == 64:
                    flush()
        if batch:
            flush()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
