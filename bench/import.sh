#!/usr/bin/env bash
# `oloproof import` against the floor of any Python tool (issue 15's performance target): a
# loop that only `json.loads` each line of the same file. Generates N traces (default 100,000;
# 10 spans each: 1 M spans) of OTLP JSON Lines with bench/gen_otlp.py, then times both in one
# run with /usr/bin/time (wall time and peak RSS), and the import of a file 10x smaller for
# the memory slope (peak RSS must stay flat in the file size: the import streams).
#
# Usage: bench/import.sh [N]     (run on an otherwise idle machine; results go in BENCHMARKS.md)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000}
py=${OLOPROOF_REFERENCE_PYTHON:-python3}
work=target/bench-import
mkdir -p "$work"
cargo build --quiet --release -p oloproof
bin=target/release/oloproof
[ -s "$work/traces_$n.jsonl" ] || "$py" bench/gen_otlp.py "$n" "$work/traces_$n.jsonl"
small=$((n / 10))
[ -s "$work/traces_$small.jsonl" ] || "$py" bench/gen_otlp.py "$small" "$work/traces_$small.jsonl"
cat > "$work/loads.py" <<'PY'
import json, sys
n = 0
with open(sys.argv[1]) as f:
    for line in f:
        json.loads(line)
        n += 1
print(n, "lines")
PY
measure() { # label, command…
  local label=$1; shift
  /usr/bin/time -f "$label: %e s wall, %M KiB peak RSS" "$@" >/dev/null 2>"$work/time.txt" || { cat "$work/time.txt"; exit 1; }
  tail -1 "$work/time.txt"
}
echo "file: $(du -h "$work/traces_$n.jsonl" | cut -f1), $n traces, $((n * 10)) spans"
measure "python json.loads loop" "$py" "$work/loads.py" "$work/traces_$n.jsonl"
measure "oloproof import ($n traces)" "$bin" import "$work/traces_$n.jsonl" -o "$work/traffic_$n.jsonl"
measure "oloproof import ($small traces)" "$bin" import "$work/traces_$small.jsonl" -o "$work/traffic_$small.jsonl"
"$bin" import "$work/traces_$n.jsonl" -o "$work/traffic_$n.jsonl" | head -3
