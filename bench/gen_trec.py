#!/usr/bin/env python3
"""Generates the `oloproof trec` benchmark inputs: QUERIES queries x DOCS retrieved documents,
graded qrels with about 10 relevant documents per query (levels 1-3) plus judged
non-relevant ones, and scores with some ties. Deterministic (fixed seed).

Usage: gen_trec.py OUT_DIR [QUERIES] [DOCS]
"""
import os
import random
import sys


def main():
    out = sys.argv[1]
    queries = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    docs = int(sys.argv[3]) if len(sys.argv) > 3 else 1_000
    os.makedirs(out, exist_ok=True)
    rng = random.Random(20240601)
    collection = 5_000_000
    with open(os.path.join(out, "qrels"), "w") as q, open(os.path.join(out, "run"), "w") as r:
        for qi in range(queries):
            qid = str(100000 + qi)
            ids = rng.sample(range(collection), docs + 40)
            retrieved = ids[:docs]
            # ~10 relevant: most among the retrieved, a few never retrieved.
            relevant = rng.sample(retrieved, 8) + ids[docs : docs + 2]
            nonrel = rng.sample(retrieved, 20)
            judged = {}
            for d in nonrel:
                judged[d] = 0
            for d in relevant:
                judged[d] = rng.choice((1, 1, 1, 2, 2, 3))
            q.write("".join(f"{qid} 0 doc{d} {rel}\n" for d, rel in judged.items()))
            lines = []
            score = 30.0
            for rank, d in enumerate(retrieved):
                if rng.random() > 0.1:  # 10% of documents tie with the previous one
                    score -= rng.random() * 0.05
                lines.append(f"{qid} Q0 doc{d} {rank + 1} {score:.6f} bench\n")
            r.write("".join(lines))


if __name__ == "__main__":
    main()
