"""Reference for crates/stats/tests/quantile_interval_reference.rs:
scipy.stats.quantile_test(...).confidence_interval, pinned in scripts/requirements-test.txt.

Input on stdin: one JSON object per line {"x": [...], "p", "confidence"}. Output: one JSON
object per line {"ci": [low, high]} with null for a bound scipy gives as NaN.
"""

import json
import math
import sys

from scipy import stats

out = []
for line in sys.stdin.read().splitlines():
    c = json.loads(line)
    res = stats.quantile_test(c["x"], q=0, p=c["p"], alternative="two-sided")
    ci = res.confidence_interval(confidence_level=c["confidence"])
    bound = lambda v: None if math.isnan(float(v)) else float(v)
    out.append(json.dumps({"ci": [bound(ci.low), bound(ci.high)]}))
sys.stdout.write("\n".join(out) + "\n")
