#!/usr/bin/env bash
# `oloproof monitor` over the traffic `bench/import.sh` imports (issue 15: "monitor with 100 %
# tier-1 rule evaluators over those 100,000 traces: report its time and memory"). Imports N
# generated traces (default 100,000; bench/gen_otlp.py) when the traffic file is missing, then
# times `monitor` with two rule evaluators at 100 % (`regex`, `entity_grounding`), one
# segment (`metadata.intent`), 1-day windows over 7 days and a latency alert, twice: fresh (an
# empty store: every trace judged) and again (every judgment from the cache). /usr/bin/time
# gives wall time and peak RSS.
#
# Usage: bench/monitor.sh [N]   (run on an otherwise idle machine; results go in BENCHMARKS.md)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000}
py=${OLOPROOF_REFERENCE_PYTHON:-python3}
work=target/bench-import
mkdir -p "$work"
if [[ -n "${OLOPROOF_BIN:-}" ]]; then
  bin="$OLOPROOF_BIN"
else
  cargo build --quiet --release -p oloproof
  bin=target/release/oloproof
fi
[ -s "$work/traces_$n.jsonl" ] || "$py" bench/gen_otlp.py "$n" "$work/traces_$n.jsonl"
[ -s "$work/traffic_$n.jsonl" ] || "$bin" import "$work/traces_$n.jsonl" -o "$work/traffic_$n.jsonl" >/dev/null
project=$(mktemp -d)
trap 'rm -rf "$project"' EXIT
ln -s "$PWD/$work/traffic_$n.jsonl" "$project/traffic.jsonl"
cat > "$project/oloproof.yaml" <<'YAML'
evaluators:
  - {type: regex, criterion: no_refusal, must_not_match: '(?i)cannot help'}
  - {type: entity_grounding}
monitor:
  traffic: traffic.jsonl
  segments: [metadata.intent]
  window: {size: 1d, rolling: 7d}
  sampling:
    tiers:
      - {evaluators: [no_refusal, entity_grounding], rate: 1.0}
  alerts:
    - {type: latency_p95, stage: total, max_ms: 1500}
YAML
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
echo "traffic: $(du -h "$work/traffic_$n.jsonl" | cut -f1), $n traces"
for label in fresh again; do
  # monitor exits 3 when an alert fires: that is a result here, not a failure.
  /usr/bin/time -f "oloproof monitor ($label): %e s wall, %U s user, %S s sys, %M KiB peak RSS" \
    "$bin" monitor "$project" >/dev/null 2>"$project/time.txt" || true
  tail -1 "$project/time.txt"
done
