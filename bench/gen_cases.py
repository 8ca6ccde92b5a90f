#!/usr/bin/env python3
"""Write N synthetic cases for the run benchmark: python3 bench/gen_cases.py N OUT.jsonl

Case n asks about item n; bench/systems/{instant,sleepy} retrieve doc-((n + j) mod 1000) for
j = 0..depth-1, so the one relevant document, doc-((n + n mod 7) mod 1000), sits at position
(n mod 7) + 1 -- position 7 meaning "not retrieved" at depth 6. The systems answer correctly
unless n is a multiple of 5. Deterministic; standard library only.
"""

import json
import sys

TOPICS = ("billing", "security", "account", "integrations")
DOCS = 1000


def passage_text(k):
    """Must match passage_text() in bench/systems/*/app.py."""
    return " ".join(["passage", str(k)] + ["word%d" % i for i in range(6 + k % 10)])


def case(n):
    rel = (n + n % 7) % DOCS
    return {
        "id": "case-%06d" % n,
        "input": {"question": "What is the answer for item %d?" % n, "n": n},
        "expected": {
            "answer": "answer %d" % n,
            "relevant": [{"doc_id": "doc-%d" % rel}],
            "gold_context": [{"doc_id": "doc-%d" % rel, "text": passage_text(rel)}],
        },
        "metadata": {"topic": TOPICS[n % len(TOPICS)]},
    }


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: gen_cases.py N OUT.jsonl\n")
        return 2
    n = int(argv[0])
    with open(argv[1], "w", encoding="utf-8", newline="\n") as f:
        for i in range(n):
            f.write(json.dumps(case(i), separators=(",", ":")) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
