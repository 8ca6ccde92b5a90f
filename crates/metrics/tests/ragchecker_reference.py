"""Reference for crates/metrics/tests/ragchecker_reference.rs: RAGChecker's own metric
computation (PyPI `ragchecker` 0.1.9, `ragchecker/computation.py`).

The package is installed with --no-deps (scripts/requirements-models.txt): its `__init__` imports
the evaluator, which needs `refchecker` (torch, spaCy), but the metric functions need only numpy.
So the package object is made here without running its `__init__`, and `dataclasses_json` (used
only for the container's JSON helpers) is replaced by a no-op decorator when it is not installed.

Input on stdin: one JSON object {"cases": [...]}, each case with
  "chunks": the number of retrieved chunks,
  "answer_in_chunks": per answer claim, the entailing chunk indices (0-based),
  "answer_in_reference": per answer claim, a bool,
  "reference_in_answer": per reference claim, a bool,
  "reference_in_chunks": per reference claim, the entailing chunk indices.
Each check becomes RAGChecker's label ("Entailment" or "Neutral") in a RAGResult, and every
function of METRIC_FUNC_MAP is run on it.
Output on stdout: {"metrics": [{RAGChecker metric name: value}, ...]}, one object per case.
"""

import importlib.util
import json
import sys
import types

spec = importlib.util.find_spec("ragchecker")
package = types.ModuleType("ragchecker")
package.__path__ = list(spec.submodule_search_locations)
sys.modules["ragchecker"] = package
try:
    import dataclasses_json  # noqa: F401
except ImportError:
    stub = types.ModuleType("dataclasses_json")
    stub.dataclass_json = lambda cls: cls
    sys.modules["dataclasses_json"] = stub

from ragchecker.computation import METRIC_FUNC_MAP  # noqa: E402
from ragchecker.container import RAGResult  # noqa: E402


def label(entailed):
    return "Entailment" if entailed else "Neutral"


def matrix(sets, chunks):
    return [[label(k in s) for k in range(chunks)] for s in sets]


def main():
    cases = json.load(sys.stdin)["cases"]
    out = []
    for i, c in enumerate(cases):
        result = RAGResult(
            query_id=str(i),
            query="",
            gt_answer="",
            response="",
            retrieved_context=[],
            answer2response=[label(x) for x in c["answer_in_reference"]],
            response2answer=[label(x) for x in c["reference_in_answer"]],
            retrieved2response=matrix(c["answer_in_chunks"], c["chunks"]),
            retrieved2answer=matrix(c["reference_in_chunks"], c["chunks"]),
        )
        for name, func in METRIC_FUNC_MAP.items():
            func(result)
        out.append({k: float(v) for k, v in result.metrics.items()})
    json.dump({"metrics": out}, sys.stdout)


main()
