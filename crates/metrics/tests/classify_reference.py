"""Reference for crates/metrics/tests/classify_reference.rs: runs the named reference libraries
(seqeval, scikit-learn, krippendorff, scipy, numpy; pinned in
scripts/requirements-test.txt) on the cases the Rust test generates.

Input on stdin: one JSON object per line with a "kind" and its arguments.
Output on stdout: one JSON object per line (NaN written as null), or {"error": "..."} when the
reference raises.
"""

import json
import math
import sys
import warnings

warnings.simplefilter("ignore")


def clean(x):
    """JSON-safe: numpy scalars to Python, NaN to None."""
    if isinstance(x, dict):
        return {str(k): clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean(v) for v in x]
    if hasattr(x, "tolist"):
        return clean(x.tolist())
    if isinstance(x, float) and math.isnan(x):
        return None
    return x


def seqeval_case(c):
    from seqeval import scheme as schemes
    from seqeval.metrics import accuracy_score, classification_report

    scheme = getattr(schemes, c["scheme"]) if c.get("scheme") else None
    report = classification_report(
        c["true"],
        c["pred"],
        output_dict=True,
        mode=c.get("mode"),
        scheme=scheme,
        suffix=c.get("suffix", False),
        zero_division=c.get("zero_division", "warn"),
    )
    try:
        acc = accuracy_score(c["true"], c["pred"])
    except ZeroDivisionError:
        acc = None
    return {"report": report, "accuracy": acc}


def sklearn_case(c):
    from sklearn.metrics import classification_report

    zd = c["zero_division"]
    zd = float("nan") if zd == "nan" else zd
    return {
        "report": classification_report(
            c["true"], c["pred"], output_dict=True, zero_division=zd
        )
    }


def kappa_case(c):
    from sklearn.metrics import cohen_kappa_score

    return {"kappa": cohen_kappa_score(c["a"], c["b"], weights=c.get("weights"))}


def krippendorff_case(c):
    import krippendorff
    import numpy as np

    data = np.array(
        [[np.nan if v is None else v for v in row] for row in c["data"]], dtype=float
    )
    return {"alpha": float(krippendorff.alpha(reliability_data=data, level_of_measurement=c["level"]))}


def correlation_case(c):
    from scipy import stats

    rho = stats.spearmanr(c["x"], c["y"])
    tau = stats.kendalltau(c["x"], c["y"], variant="b")
    return {
        "spearman": float(rho.statistic),
        "spearman_p": float(rho.pvalue),
        "kendall": float(tau.statistic),
    }


def ece_case(c):
    """A numpy transcription of the documented binning: edges k/M, bin m = [m/M, (m+1)/M),
    the last bin closed at 1."""
    import numpy as np

    conf = np.asarray(c["confidence"], dtype=float)
    correct = np.asarray(c["correct"], dtype=float)
    m = c["bins"]
    edges = np.arange(m + 1) / m
    idx = np.searchsorted(edges[1:-1], conf, side="right")
    ece = 0.0
    bins = []
    for b in range(m):
        sel = idx == b
        n = int(sel.sum())
        if n == 0:
            bins.append({"count": 0, "confidence": None, "accuracy": None})
            continue
        mc = float(conf[sel].mean())
        acc = float(correct[sel].mean())
        ece += n / len(conf) * abs(acc - mc)
        bins.append({"count": n, "confidence": mc, "accuracy": acc})
    return {"ece": ece, "bins": bins}


def quantile_case(c):
    import numpy as np

    return {
        "values": [
            float(np.quantile(np.asarray(c["x"], dtype=float), q, method=c["method"]))
            for q in c["q"]
        ]
    }


KINDS = {
    "seqeval": seqeval_case,
    "sklearn": sklearn_case,
    "kappa": kappa_case,
    "krippendorff": krippendorff_case,
    "correlation": correlation_case,
    "ece": ece_case,
    "quantile": quantile_case,
}


def main():
    out = []
    for line in sys.stdin.read().splitlines():
        c = json.loads(line)
        try:
            r = KINDS[c["kind"]](c)
        except Exception as e:  # the reference refused the input
            r = {"error": f"{type(e).__name__}: {e}"}
        out.append(json.dumps(clean(r), allow_nan=False))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
