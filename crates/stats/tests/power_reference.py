"""Reference for crates/stats/tests/power_reference.rs: statsmodels' power classes
(NormalIndPower with proportion_effectsize, TTestIndPower, TTestPower), pinned in
scripts/requirements-test.txt.

Input on stdin: one JSON object per line {"design", "p1", "p2" | "d", "n", "ratio", "alpha",
"target"}. Output: one JSON object per line {"effect_size", "power", "nobs"}.
"""

import json
import sys
import warnings

from statsmodels.stats.power import NormalIndPower, TTestIndPower, TTestPower
from statsmodels.stats.proportion import proportion_effectsize

warnings.simplefilter("ignore")

out = []
for line in sys.stdin.read().splitlines():
    c = json.loads(line)
    design, alpha = c["design"], c["alpha"]
    if design == "proportions":
        es = float(proportion_effectsize(c["p1"], c["p2"]))
        engine, extra = NormalIndPower(), {"ratio": c["ratio"]}
    elif design == "means":
        es, engine, extra = c["d"], TTestIndPower(), {"ratio": c["ratio"]}
    else:
        es, engine, extra = c["d"], TTestPower(), {}
    if design == "paired":
        power = engine.power(effect_size=es, nobs=c["n"], alpha=alpha)
        nobs = engine.solve_power(effect_size=es, nobs=None, alpha=alpha, power=c["target"])
    else:
        power = engine.power(effect_size=es, nobs1=c["n"], alpha=alpha, **extra)
        nobs = engine.solve_power(
            effect_size=es, nobs1=None, alpha=alpha, power=c["target"], **extra
        )
    nobs, power = float(nobs), float(power)
    # scipy's nctdtr returns NaN far in the tail (power ~ 1): sent as null, skipped.
    out.append(
        json.dumps(
            {
                "effect_size": es,
                "power": None if power != power else power,
                "nobs": None if nobs != nobs else nobs,
            }
        )
    )
sys.stdout.write("\n".join(out) + "\n")
