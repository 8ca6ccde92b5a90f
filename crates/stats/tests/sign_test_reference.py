"""Reference for crates/stats/tests/sign_test_reference.rs: scipy.stats.binomtest, pinned in
scripts/requirements-test.txt.

Input on stdin: one JSON object per line {"wins", "losses", "confidence"}. Output: one JSON
object per line {"p_value": binomtest(wins, wins + losses, 0.5).pvalue, "ci": the exact
(Clopper-Pearson) proportion_ci at the confidence}.
"""

import json
import sys

from scipy import stats

out = []
for line in sys.stdin.read().splitlines():
    c = json.loads(line)
    n = c["wins"] + c["losses"]
    result = stats.binomtest(c["wins"], n, 0.5, alternative="two-sided")
    ci = result.proportion_ci(confidence_level=c["confidence"], method="exact")
    out.append(json.dumps({"p_value": float(result.pvalue), "ci": [float(ci.low), float(ci.high)]}))
sys.stdout.write("\n".join(out) + "\n")
