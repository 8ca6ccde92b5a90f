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
- tango: [[b, c, n, confidence], ...] -> [[lo, hi], ...]: Tango's (1998) score interval for the
  difference of paired proportions, transcribed from the paper's definition and solved with
  scipy.optimize.brentq; the constrained MLE of p21 is found numerically (brentq on the score
  equation of the likelihood), not from the paper's closed form, which the Rust code uses
"""

import json
import math
import sys

import numpy as np
from scipy import optimize, special, stats


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


def tango_p21(b, c, n, d):
    """The MLE of p21 under p12 - p21 = d: maximize
    b log(p21 + d) + c log(p21) + m log(1 - 2 p21 - d), m = n - b - c, over the feasible range
    max(0, -d) <= p21 <= (1 - d) / 2, by a root of the derivative (the log-likelihood is concave)."""
    m = n - b - c
    lo, hi = max(0.0, -d), (1.0 - d) / 2.0
    if hi - lo <= 0.0:
        return lo

    def derivative(q):
        total = 0.0
        for count, value, sign in ((b, q + d, 1.0), (c, q, 1.0), (m, 1.0 - 2.0 * q - d, -2.0)):
            if count > 0:
                total += sign * count / value if value > 0 else sign * math.inf
        return total

    span = hi - lo
    left, right = lo + span * 1e-15, hi - span * 1e-15
    if derivative(left) <= 0.0:
        return lo
    if derivative(right) >= 0.0:
        return hi
    return optimize.brentq(derivative, left, right, xtol=1e-17, rtol=4 * np.finfo(float).eps)


def tango_z(b, c, n, d):
    numerator = b - c - n * d
    if numerator == 0:
        return 0.0
    variance = n * (2.0 * tango_p21(b, c, n, d) + d * (1.0 - d))
    if variance <= 0.0:
        return math.copysign(math.inf, numerator)
    return numerator / math.sqrt(variance)


def tango(rows):
    """{d : |Z(d)| <= z}, Z(d) = (b - c - n d) / sqrt(n (2 p21~(d) + d (1 - d)))."""
    out = []
    for b, c, n, confidence in rows:
        b, c, n = int(b), int(c), int(n)
        z = stats.norm.ppf(0.5 + confidence / 2.0)
        estimate = (b - c) / n
        tol = dict(xtol=1e-15, rtol=4 * np.finfo(float).eps)
        if c == n:
            lo = -1.0
        else:
            lo = optimize.brentq(lambda d: tango_z(b, c, n, d) - z, -1.0, estimate, **tol)
        if b == n:
            hi = 1.0
        else:
            hi = optimize.brentq(lambda d: tango_z(b, c, n, d) + z, estimate, 1.0, **tol)
        out.append([float(lo), float(hi)])
    return out


FUNCTIONS = {
    "clopper_pearson": clopper_pearson,
    "wilson": wilson,
    "ttest_rel": ttest_rel,
    "permutation": permutation,
    "holm": lambda rows: [holm(p) for p in rows],
    "tango": tango,
}


def main():
    data = json.load(sys.stdin)
    json.dump({key: FUNCTIONS[key](rows) for key, rows in data.items()}, sys.stdout)


if __name__ == "__main__":
    main()
