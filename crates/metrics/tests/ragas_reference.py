"""Reference for crates/metrics/tests/ragas_reference.rs: the real ragas==0.4.3 metrics.

Input on stdin: one JSON object per line, {"metric": name, ...fields}; strings travel as JSON.
  "string_similarity": reference, response, measure -> NonLLMStringSimilarity
  "context_precision" / "context_recall": retrieved, reference_contexts, measure, threshold
      -> NonLLMContextPrecisionWithReference / NonLLMContextRecall
  "bleu": reference, response -> BleuScore
  "rouge": reference, response, rouge_type, mode -> RougeScore
  "exact_match" / "string_presence": reference, response -> ExactMatch / StringPresence
  "stem": word -> nltk's PorterStemmer().stem (what rouge_score uses)
Output: one JSON line per case, {"value": float} or {"value": null, "error": repr} when ragas
raises (it does on max() of an empty list, for example).
"""

import asyncio
import json
import math
import sys
import warnings

warnings.simplefilter("ignore")

from nltk.stem import porter  # noqa: E402
from ragas.dataset_schema import SingleTurnSample  # noqa: E402
from ragas.metrics import (  # noqa: E402
    BleuScore,
    ExactMatch,
    NonLLMContextPrecisionWithReference,
    NonLLMContextRecall,
    NonLLMStringSimilarity,
    RougeScore,
    StringPresence,
)
from ragas.metrics._string import DistanceMeasure  # noqa: E402

STEMMER = porter.PorterStemmer()
BLEU = BleuScore()
EXACT = ExactMatch()
PRESENT = StringPresence()


def similarity(measure):
    return NonLLMStringSimilarity(distance_measure=DistanceMeasure(measure))


def metric_of(case):
    kind = case["metric"]
    if kind == "string_similarity":
        return similarity(case["measure"])
    if kind == "context_precision":
        return NonLLMContextPrecisionWithReference(
            distance_measure=similarity(case["measure"]), threshold=case["threshold"]
        )
    if kind == "context_recall":
        m = NonLLMContextRecall(threshold=case["threshold"])
        m.distance_measure = DistanceMeasure(case["measure"])
        return m
    if kind == "bleu":
        return BLEU
    if kind == "rouge":
        return RougeScore(rouge_type=case["rouge_type"], mode=case["mode"])
    if kind == "exact_match":
        return EXACT
    if kind == "string_presence":
        return PRESENT
    raise ValueError(kind)


async def score(case):
    if case["metric"] == "stem":
        return {"value": STEMMER.stem(case["word"])}
    sample = SingleTurnSample(
        reference=case.get("reference"),
        response=case.get("response"),
        retrieved_contexts=case.get("retrieved"),
        reference_contexts=case.get("reference_contexts"),
    )
    try:
        value = await metric_of(case)._single_turn_ascore(sample, None)
    except Exception as e:  # ragas' evaluate() turns these into NaN
        return {"value": None, "error": repr(e)}
    value = float(value)
    return {"value": None if math.isnan(value) else value}


async def main():
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(await score(json.loads(line))))


asyncio.run(main())
