#!/usr/bin/env python3
"""Benchmark driver: ranx 0.3.21 on QRELS RUN (numba cache warm after the first call), with
the measures ranx shares with trec_eval's all_trec."""
import sys

from ranx import Qrels, Run, evaluate

CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
METRICS = (
    ["map", "mrr", "r-precision", "ndcg", "f1"]
    + [f"{m}@{k}" for m in ("precision", "recall", "map", "ndcg") for k in CUTS]
    + [f"hit_rate@{k}" for k in (1, 5, 10)]
)

qrels = Qrels.from_file(sys.argv[1], kind="trec")
run = Run.from_file(sys.argv[2], kind="trec")
scores = evaluate(qrels, run, METRICS)
for m in ("map", "precision@10", "ndcg@10"):
    print(m, scores[m])
