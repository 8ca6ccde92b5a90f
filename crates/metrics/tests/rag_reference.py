"""Reference for crates/metrics/tests/rag_reference.rs.

Input on stdin: one JSON object with
  "dir": a folder to write .npy files into;
  "arrays": [{"name", "dtype" ("<f4", ">f4", "<f8", ">f8"), "version" ([1, 0] or [2, 0]),
              "rows", "cols", "values" (row-major floats)}] -> numpy.lib.format.write_array;
  "knn": [{"corpus": [[...]], "queries": [[...]], "k", "distance"}] -> exact neighbours with
         numpy in float64 (cosine: 1 - cos, dot: -a.b, l2: Euclidean), stable argsort;
  "predicates": [[[predicted "field=value"...], [gold ...]], ...] -> scikit-learn
         precision_recall_fscore_support(average="micro", zero_division=0) on the multilabel
         indicator matrix of MultiLabelBinarizer;
  "nuggets": [[[importance, assignment], ...], ...] -> castorini/nuggetizer's
         calculate_nugget_scores (src/nuggetizer/core/metrics.py), transcribed;
  "timestamps": [str] -> datetime.fromisoformat, seconds since the epoch and microseconds.
Output on stdout: one JSON object with the results in the same order.
"""

import calendar
import json
import os
import sys
from datetime import datetime, timezone

import numpy as np
from numpy.lib import format as npy_format
from sklearn.metrics import precision_recall_fscore_support
from sklearn.preprocessing import MultiLabelBinarizer


def calculate_nugget_scores(nuggets):
    # Transcribed from castorini/nuggetizer, src/nuggetizer/core/metrics.py.
    vital_nuggets = [n for n in nuggets if n["importance"] == "vital"]
    all_nuggets = nuggets
    strict_vital_supported = sum(1 for n in vital_nuggets if n["assignment"] == "support")
    strict_all_supported = sum(1 for n in all_nuggets if n["assignment"] == "support")
    vital_supported = strict_vital_supported + sum(
        0.5 for n in vital_nuggets if n["assignment"] == "partial_support"
    )
    all_supported = strict_all_supported + sum(
        0.5 for n in all_nuggets if n["assignment"] == "partial_support"
    )
    strict_vital_score = strict_vital_supported / len(vital_nuggets) if vital_nuggets else 0.0
    strict_all_score = strict_all_supported / len(all_nuggets) if all_nuggets else 0.0
    vital_score = vital_supported / len(vital_nuggets) if vital_nuggets else 0.0
    all_score = all_supported / len(all_nuggets) if all_nuggets else 0.0
    return [strict_vital_score, strict_all_score, vital_score, all_score]


def distances(corpus, q, kind):
    if kind == "dot":
        return -(corpus @ q)
    if kind == "l2":
        return np.sqrt(((corpus - q) ** 2).sum(axis=1))
    norms = np.sqrt((corpus * corpus).sum(axis=1) * (q @ q))
    return 1.0 - (corpus @ q) / norms


def main():
    data = json.load(sys.stdin)
    for a in data["arrays"]:
        arr = np.array(a["values"], dtype=np.float64).reshape(a["rows"], a["cols"])
        arr = arr.astype(np.dtype(a["dtype"]))
        with open(os.path.join(data["dir"], a["name"]), "wb") as f:
            npy_format.write_array(f, arr, version=tuple(a["version"]))

    knn = []
    for case in data["knn"]:
        corpus = np.array(case["corpus"], dtype=np.float64)
        out = []
        for q in case["queries"]:
            d = distances(corpus, np.array(q, dtype=np.float64), case["distance"])
            order = np.argsort(d, kind="stable")[: case["k"]]
            out.append([[int(i), float(d[i])] for i in order])
        knn.append(out)

    pairs = data["predicates"]
    mlb = MultiLabelBinarizer()
    mlb.fit([p for p, _ in pairs] + [g for _, g in pairs] + [["__unused__"]])
    y_pred = mlb.transform([p for p, _ in pairs])
    y_true = mlb.transform([g for _, g in pairs])
    p, r, f, _ = precision_recall_fscore_support(
        y_true, y_pred, average="micro", zero_division=0
    )

    nuggets = [
        calculate_nugget_scores([{"importance": i, "assignment": a} for i, a in answer])
        for answer in data["nuggets"]
    ]

    stamps = []
    for t in data["timestamps"]:
        dt = datetime.fromisoformat(t).astimezone(timezone.utc)
        stamps.append([calendar.timegm(dt.utctimetuple()), dt.microsecond])

    json.dump(
        {
            "knn": knn,
            "predicates": [float(p), float(r), float(f)],
            "nuggets": nuggets,
            "timestamps": stamps,
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
