"""Reference values for crates/stats/tests/reference.rs.

Reads one JSON object on stdin, {name: [input, ...]}, with the inputs the Rust test generated,
and writes {name: [answer, ...]} on stdout with the reference answers:

- clopper_pearson: [[k, n, confidence], ...] -> [[lo, hi, lo', hi'], ...]: the beta quantiles
  via scipy.special.betaincinv, then scipy.stats.binomtest(k, n).proportion_ci(confidence_level,
  method="exact"), which is only accurate to brentq's absolute xtol of 2e-12
- wilson: [[k, n, confidence], ...] -> [[lo, hi], ...] via
  scipy.stats.binomtest(k, n).proportion_ci(confidence_level, method="wilson")
- ttest_rel: [[a, b], ...] -> [[statistic, pvalue], ...] via scipy.stats.ttest_rel(a, b)
- permutation: [[a, b], ...] -> [pvalue, ...] via scipy.stats.permutation_test, paired
  ("samples"), statistic mean(x - y), two-sided, exact (n_resamples=inf)
- holm: [[p, ...], ...] -> [[adjusted, ...], ...], a transcription of
  statsmodels.stats.multitest.multipletests(method="holm") (numpy only)
"""

import json
import sys

import numpy as np
from scipy import special, stats


def holm(pvals):
    pvals = np.asarray(pvals, dtype=float)
    order = np.argsort(pvals, kind="mergesort")
    sorted_p = pvals[order]
    m = len(pvals)
    corrected = np.maximum.accumulate(sorted_p * np.arange(m, 0, -1))
    corrected = np.minimum(corrected, 1.0)
    out = np.empty(m)
    out[order] = corrected
    return out.tolist()


def mean_difference(x, y, axis):
    return np.mean(x - y, axis=axis)


def wilson(rows):
    out = []
    for k, n, confidence in rows:
        ci = stats.binomtest(int(k), int(n)).proportion_ci(
            confidence_level=confidence, method="wilson"
        )
        out.append([float(ci.low), float(ci.high)])
    return out


def clopper_pearson(rows):
    """[lo, hi] from the beta quantiles (Boost's betaincinv, full precision), then [lo, hi]
    from binomtest, which root-finds with brentq's default xtol=2e-12 (absolute)."""
    out = []
    for k, n, confidence in rows:
        k, n = int(k), int(n)
        alpha = (1 - confidence) / 2
        lo = 0.0 if k == 0 else special.betaincinv(k, n - k + 1, alpha)
        hi = 1.0 if k == n else special.betaincinv(k + 1, n - k, 1 - alpha)
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
        out.append([float(lo), float(hi), float(ci.low), float(ci.high)])
    return out


def ttest_rel(rows):
    return [
        [float(r.statistic), float(r.pvalue)]
        for r in (stats.ttest_rel(a, b) for a, b in rows)
    ]


def permutation(rows):
    return [
        float(
            stats.permutation_test(
                (np.asarray(a, dtype=float), np.asarray(b, dtype=float)),
                mean_difference,
                permutation_type="samples",
                vectorized=True,
                n_resamples=np.inf,
                alternative="two-sided",
            ).pvalue
        )
        for a, b in rows
    ]


FUNCTIONS = {
    "clopper_pearson": clopper_pearson,
    "wilson": wilson,
    "ttest_rel": ttest_rel,
    "permutation": permutation,
    "holm": lambda rows: [holm(p) for p in rows],
}


def main():
    data = json.load(sys.stdin)
    json.dump({key: FUNCTIONS[key](rows) for key, rows in data.items()}, sys.stdout)


if __name__ == "__main__":
    main()
