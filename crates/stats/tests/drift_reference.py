"""Reference for crates/stats/tests/drift_reference.rs: numpy and scipy (pinned in
scripts/requirements-test.txt), written from the formulas, not from the Rust code.

Input on stdin: one JSON object per line, by "kind":
- "mmd" {"x", "y"} (lists of vectors): the unbiased MMD^2 of Gretton et al. (2012, eq. 3)
  with the Gaussian kernel exp(-d^2 / (2 s^2)), s the median of the pooled pairwise
  distances (scipy.spatial.distance.pdist; the median of the nonzero ones when it is 0,
  1 when all are 0). Out: {"mmd2", "bandwidth"}.
- "exact_p" {"x", "y"}: the exact permutation p-value, the share of all C(m+n, m) splits of
  the pooled sample whose MMD^2 (same bandwidth) is at least the observed one. Out: {"p"}.
- "js" {"p", "q"}: scipy.spatial.distance.jensenshannon(p, q, base=2). Out: {"js"}.
- "bins" {"reference", "current", "bins"}: interior edges np.quantile(reference, i/bins),
  i = 1..bins-1, de-duplicated with np.unique; counts with np.searchsorted(side="left") and
  np.bincount; the JS distance of the counts. Out: {"edges", "reference_counts",
  "current_counts", "js"}.
"""

import itertools
import json
import sys

import numpy as np
from scipy.spatial.distance import cdist, jensenshannon, pdist


def bandwidth(z):
    d = pdist(z)
    m = float(np.median(d))
    if m > 0:
        return m
    nz = d[d > 0]
    return float(np.median(nz)) if nz.size else 1.0


def mmd2(k, idx_x, idx_y):
    m, n = len(idx_x), len(idx_y)
    kxx = k[np.ix_(idx_x, idx_x)]
    kyy = k[np.ix_(idx_y, idx_y)]
    kxy = k[np.ix_(idx_x, idx_y)]
    return ((kxx.sum() - np.trace(kxx)) / (m * (m - 1))
            + (kyy.sum() - np.trace(kyy)) / (n * (n - 1))
            - 2 * kxy.sum() / (m * n))


def kernel(z, s):
    return np.exp(-cdist(z, z, "sqeuclidean") / (2 * s * s))


out = []
for line in sys.stdin.read().splitlines():
    c = json.loads(line)
    kind = c["kind"]
    if kind == "mmd" or kind == "exact_p":
        x, y = np.array(c["x"], dtype=float), np.array(c["y"], dtype=float)
        z = np.vstack([x, y])
        s = bandwidth(z)
        k = kernel(z, s)
        m = len(x)
        ix, iy = list(range(m)), list(range(m, len(z)))
        observed = mmd2(k, ix, iy)
        if kind == "mmd":
            out.append({"mmd2": float(observed), "bandwidth": s})
        else:
            threshold = observed - 1e-12 * max(abs(observed), 1.0)
            hits = total = 0
            for chosen in itertools.combinations(range(len(z)), m):
                rest = [i for i in range(len(z)) if i not in chosen]
                total += 1
                hits += mmd2(k, list(chosen), rest) >= threshold
            out.append({"p": hits / total})
    elif kind == "js":
        out.append({"js": float(jensenshannon(c["p"], c["q"], base=2))})
    elif kind == "bins":
        ref, cur, b = np.array(c["reference"]), np.array(c["current"]), c["bins"]
        edges = np.unique(np.quantile(ref, [i / b for i in range(1, b)]))
        rc = np.bincount(np.searchsorted(edges, ref, side="left"), minlength=len(edges) + 1)
        cc = np.bincount(np.searchsorted(edges, cur, side="left"), minlength=len(edges) + 1)
        out.append({"edges": edges.tolist(), "reference_counts": rc.tolist(),
                    "current_counts": cc.tolist(),
                    "js": float(jensenshannon(rc, cc, base=2))})
    else:
        raise SystemExit(f"unknown kind {kind}")
sys.stdout.write("\n".join(json.dumps(o) for o in out) + "\n")
