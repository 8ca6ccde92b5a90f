"""Per-topic values from pytrec_eval-terrier (trec_eval 9.0.x) for the Rust reference tests.

Usage: pytrec_reference.py QRELS RUN LEVEL JUDGED_ONLY(0|1)
Prints one JSON object: {topic: {measure: value}} for every measure pytrec_eval supports.
Files may be gzip-compressed. Run lines are `qid iter docno rank score runid`.
"""
import gzip
import json
import sys

import pytrec_eval


def lines(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                yield line.split()


def main():
    qrels_path, run_path, level, judged_only = sys.argv[1:5]
    qrels = {}
    for qid, _, doc, rel in lines(qrels_path):
        qrels.setdefault(qid, {})[doc] = int(rel)
    run = {}
    for fields in lines(run_path):
        run.setdefault(fields[0], {})[fields[2]] = float(fields[4])
    measures = set(pytrec_eval.supported_measures) - {"runid", "relstring", "num_q"}
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, measures, relevance_level=int(level), judged_docs_only_flag=judged_only == "1"
    )
    result = evaluator.evaluate(run)
    # JSON has no NaN: undefined values (0/0 in trec_eval) travel as null.
    clean = {
        q: {m: (None if v != v else v) for m, v in values.items()} for q, values in result.items()
    }
    json.dump(clean, sys.stdout)


if __name__ == "__main__":
    main()
