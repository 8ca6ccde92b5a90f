"""seqeval side of bench/metrics.sh: reads the same JSONL as `oloproof metric seqeval` and
prints seqeval's micro F1 (default mode) or, with `strict SCHEME`, strict mode's."""

import json
import sys

from seqeval import scheme as schemes
from seqeval.metrics import classification_report

true, pred = [], []
with open(sys.argv[1]) as f:
    for line in f:
        row = json.loads(line)
        true.append(row["true"])
        pred.append(row["pred"])
kwargs = {}
if len(sys.argv) > 3 and sys.argv[2] == "strict":
    kwargs = {"mode": "strict", "scheme": getattr(schemes, sys.argv[3])}
report = classification_report(true, pred, output_dict=True, **kwargs)
print(report["micro avg"]["f1-score"])
