#!/usr/bin/env bash
# Run-spine benchmark (issue 2): harness overhead and parallel efficiency of `oloproof run`.
#
#   bench/run.sh [N_OVERHEAD=10000] [N_PARALLEL=2000]
#
# 1. Overhead: N_OVERHEAD cases against bench/systems/instant (stages return at once),
#    workers: 2, the five evaluators of the example. Times a fresh run (--no-cache) and a fully
#    cached re-run, and, side by side, the same system driven in-process by a plain Python loop
#    (retrieve + count_tokens + generate, no harness): the floor any harness pays for.
# 2. Parallel efficiency: N_PARALLEL cases against bench/systems/sleepy (retrieve and generate
#    each sleep 10 ms), workers: 8; compares wall time with the ideal N × 20 ms / 8.
# 3. Pipeline overhead: the same N_OVERHEAD cases against bench/systems/instant_pipeline (a
#    rewrite into two queries, two lanes fused by the host, a rerank: 4 retrieve calls, a
#    rewrite and a rerank per case), workers: 2, the five evaluators plus latency and cost;
#    a fresh run and a fully cached re-run, with their ratios to the two-stage figures of
#    step 1 (issue 14's targets: fresh ≤ 1.5× the two-stage run, cached ≤ 2 s), and each
#    run's harness overhead (its wall time less its system's own cost in a Python loop); then
#    BENCH_PAIRS (default 5) alternating fresh runs of both systems on their existing stores,
#    with the median overhead ratio (the first runs include creating each store, and a
#    machine whose speed drifts moves single runs by tens of percent). Each pair also runs the
#    pipeline with the two-stage run's five evaluators (no latency, no cost), so one ratio
#    compares the stages alone, the evaluators being the same.
# Prints absolute times and ratios. Not part of the test suite.
#
# OLOPROOF_BIN=path/to/oloproof uses that binary instead of building the release one (e.g.
# target/ci/oloproof on a machine where only the CI profile is built). The workers and the
# Python loops run on $OLOPROOF_PYTHON (default python3); the first line printed says which
# Python it is and whether it can import orjson (the worker shim's fast JSON, oloproof[fast]).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
n_over="${1:-10000}"
n_par="${2:-2000}"
if [[ -n "${OLOPROOF_BIN:-}" ]]; then
  bin="$OLOPROOF_BIN"
else
  cargo build --release -p oloproof --manifest-path "$root/Cargo.toml" >/dev/null 2>&1
  bin="$root/target/release/oloproof"
fi
py="${OLOPROOF_PYTHON:-python3}"
export OLOPROOF_PYTHON="$py"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

secs() { python3 -c "import sys; print(f'{float(sys.argv[1]):.2f}')" "$1"; }
timed() { # prints wall seconds of "$@"
  local t0 t1
  t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N)
  python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$t0" "$t1"
}

cp -r "$root/bench/systems/instant" "$work/instant"
python3 "$root/bench/gen_cases.py" "$n_over" "$work/instant/cases.jsonl"
fresh=$(timed "$bin" run "$work/instant" --no-cache --max-error-rate 1)
cached=$(timed "$bin" run "$work/instant" --max-error-rate 1)
loop=$(cd "$work/instant" && PYTHONPATH="$root/python:$work/instant" timed "$py" - <<PY
import json
from app import Instant
from oloproof import Passage
system = Instant()
for line in open("cases.jsonl"):
    case = json.loads(line)
    r = system.retrieve(case["input"], 6)
    top = list(r.candidates)[:2]
    counts = [system.count_tokens(p) for p in top]
    system.generate(case["input"], tuple(top))
PY
)
per_case_us=$(python3 -c "import sys; print(f'{float(sys.argv[1]) / int(sys.argv[2]) * 1e6:.0f}')" "$fresh" "$n_over")
cached_us=$(python3 -c "import sys; print(f'{float(sys.argv[1]) / int(sys.argv[2]) * 1e6:.0f}')" "$cached" "$n_over")

cp -r "$root/bench/systems/instant_pipeline" "$work/pipeline"
cp "$work/instant/cases.jsonl" "$work/pipeline/cases.jsonl"
pipe_fresh=$(timed "$bin" run "$work/pipeline" --no-cache --max-error-rate 1)
pipe_cached=$(timed "$bin" run "$work/pipeline" --max-error-rate 1)
# The same pipeline with the two-stage run's five evaluators: its ratio compares the stages
# alone. Its first run creates its store.
cp -r "$root/bench/systems/instant_pipeline" "$work/pipeline5"
cp "$work/instant/cases.jsonl" "$work/pipeline5/cases.jsonl"
sed -i '/{type: latency}/d; /{type: cost}/d' "$work/pipeline5/oloproof.yaml"
timed "$bin" run "$work/pipeline5" --no-cache --max-error-rate 1 >/dev/null
# The pipeline system's own cost, in-process: its stages called by a plain Python loop
# (rewrite, each query through each lane, the lanes' lists merged in order as the rerank's
# input, rerank, count_tokens, generate), so each run's harness overhead is its wall time less
# its system's own.
pipe_loop=$(cd "$work/pipeline" && PYTHONPATH="$root/python:$work/pipeline" timed "$py" - <<PY
import json
from app import InstantPipeline
system = InstantPipeline()
for line in open("cases.jsonl"):
    case = json.loads(line)
    inp = case["input"]
    lists = [system.retrieve(inp, 6, query=q, lane=lane).candidates
             for q in system.rewrite(inp) for lane in ("dense", "sparse")]
    seen, merged = set(), []
    for p in (p for l in lists for p in l):
        if p.doc_id not in seen:
            seen.add(p.doc_id)
            merged.append(p)
    top = list(system.rerank(inp, tuple(merged[:6])))[:2]
    counts = [system.count_tokens(p) for p in top]
    system.generate(inp, tuple(top))
PY
)
# The ratio again, robust to a machine whose speed drifts: BENCH_PAIRS (default 5) fresh runs
# of each system alternating (two-stage, pipeline, two-stage, …) on the stores the runs above
# created (so no store creation or first start inside), the median of each and of the
# per-pair overhead ratios.
pairs="${BENCH_PAIRS:-5}"
pair_times=()
for _ in $(seq "$pairs"); do
  pair_times+=("$(timed "$bin" run "$work/instant" --no-cache --max-error-rate 1)")
  pair_times+=("$(timed "$bin" run "$work/pipeline" --no-cache --max-error-rate 1)")
  pair_times+=("$(timed "$bin" run "$work/pipeline5" --no-cache --max-error-rate 1)")
done
pipe_us=$(python3 -c "import sys; print(f'{float(sys.argv[1]) / int(sys.argv[2]) * 1e6:.0f}')" "$pipe_fresh" "$n_over")
pipe_cached_us=$(python3 -c "import sys; print(f'{float(sys.argv[1]) / int(sys.argv[2]) * 1e6:.0f}')" "$pipe_cached" "$n_over")

cp -r "$root/bench/systems/sleepy" "$work/sleepy"
python3 "$root/bench/gen_cases.py" "$n_par" "$work/sleepy/cases.jsonl"
par=$(timed "$bin" run "$work/sleepy" --no-cache --max-error-rate 1)
ideal=$(python3 -c "import sys; print(int(sys.argv[1]) * 0.020 / 8)" "$n_par")

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "python: $("$py" -c 'import sys
try:
    import orjson
    fast = "orjson " + orjson.__version__
except ImportError:
    fast = "no orjson"
print(sys.executable, sys.version.split()[0] + ",", fast)')"
echo "overhead ($n_over cases, workers 2, 5 evaluators)"
echo "  oloproof run, fresh       $(secs "$fresh") s   ($per_case_us µs per case; target ≤ 5 s)"
echo "  oloproof run, all cached  $(secs "$cached") s   ($cached_us µs per case; target ≤ 2 s)"
echo "  python loop, no harness   $(secs "$loop") s   (the system's own cost in one process)"
python3 -c "import sys; print(f'  ratio fresh / python loop: {float(sys.argv[1]) / float(sys.argv[2]):.2f}x')" "$fresh" "$loop"
echo "parallel efficiency ($n_par cases, 2 x 10 ms stages, workers 8)"
echo "  oloproof run              $(secs "$par") s"
echo "  ideal ($n_par x 20 ms / 8)   $(secs "$ideal") s"
python3 -c "import sys; print(f'  ratio to ideal: {float(sys.argv[1]) / float(sys.argv[2]):.3f}x (target ≤ 1.15x)')" "$par" "$ideal"
echo "pipeline overhead ($n_over cases, rewrite x2 + 2 lanes + RRF + rerank, workers 2, 7 evaluators)"
echo "  oloproof run, fresh       $(secs "$pipe_fresh") s   ($pipe_us µs per case)"
echo "  oloproof run, all cached  $(secs "$pipe_cached") s   ($pipe_cached_us µs per case; target ≤ 2 s)"
echo "  python loop, no harness   $(secs "$pipe_loop") s   (the system's own cost in one process)"
python3 -c "import sys; print(f'  ratio pipeline / two-stage, fresh: {float(sys.argv[1]) / float(sys.argv[2]):.2f}x (target ≤ 1.5x)')" "$pipe_fresh" "$fresh"
python3 -c "import sys; p, pl, t, tl = map(float, sys.argv[1:]); print(f'  harness overhead (fresh less the system\'s own loop): pipeline {p - pl:.2f} s, two-stage {t - tl:.2f} s, ratio {(p - pl) / (t - tl):.2f}x')" "$pipe_fresh" "$pipe_loop" "$fresh" "$loop"
python3 -c "import sys; print(f'  ratio pipeline / two-stage, cached: {float(sys.argv[1]) / float(sys.argv[2]):.2f}x')" "$pipe_cached" "$cached"
python3 - "$loop" "$pipe_loop" "${pair_times[@]}" <<'PY'
import statistics, sys
loop, pipe_loop = float(sys.argv[1]), float(sys.argv[2])
times = [float(t) for t in sys.argv[3:]]
two, pipe, pipe5 = times[0::3], times[1::3], times[2::3]
print(f"  {len(two)} alternating fresh rounds after the first runs: two-stage median "
      f"{statistics.median(two):.2f} s, pipeline median {statistics.median(pipe):.2f} s, "
      f"pipeline with the five evaluators median {statistics.median(pipe5):.2f} s")
for label, runs in (("7 evaluators", pipe), ("the same 5 evaluators", pipe5)):
    ratios = [(p - pipe_loop) / (t - loop) for t, p in zip(two, runs)]
    print(f"  harness overhead ratio per round, pipeline with {label}: "
          f"{', '.join(f'{r:.2f}x' for r in ratios)}; median {statistics.median(ratios):.2f}x "
          f"(target ≤ 1.5x)")
PY
