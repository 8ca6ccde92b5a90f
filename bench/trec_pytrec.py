#!/usr/bin/env python3
"""Benchmark driver: pytrec_eval-terrier on QRELS RUN with every supported measure
(its C evaluator plus Python parsing of the files), printing the mean of a few measures."""
import sys

import pytrec_eval


def read(path, run):
    data = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if run:
                data.setdefault(p[0], {})[p[2]] = float(p[4])
            else:
                data.setdefault(p[0], {})[p[2]] = int(p[3])
    return data


qrels = read(sys.argv[1], False)
run = read(sys.argv[2], True)
result = pytrec_eval.RelevanceEvaluator(qrels, pytrec_eval.supported_measures).evaluate(run)
for m in ("map", "P_10", "ndcg_cut_10"):
    print(m, sum(v[m] for v in result.values()) / len(result))
