#!/usr/bin/env bash
# `oloproof import` against the floor of any Python tool (issue 15's performance target): a
# loop that only `json.loads` each line of the same file. Generates N traces (default 100,000;
# 10 spans each: 1 M spans) of OTLP JSON Lines with bench/gen_otlp.py, then times both in one
# run with /usr/bin/time (wall time and peak RSS), and the import of a file 10x smaller for
# the memory slope (peak RSS must stay flat in the file size: the import streams).
#
# Usage: bench/import.sh [--example] [N]   (run on an otherwise idle machine; results go in
# BENCHMARKS.md). --example times crates/traces/examples/import_throughput.rs instead of the CLI:
# the same reading, decoding, assembling and writing, with a release build of one crate (the
# CLI's release build is long).
set -euo pipefail
cd "$(dirname "$0")/.."
example=0
if [ "${1:-}" = "--example" ]; then example=1; shift; fi
n=${1:-100000}
py=${OLOPROOF_REFERENCE_PYTHON:-python3}
work=target/bench-import
mkdir -p "$work"
if [ "$example" = 1 ]; then
  cargo build --quiet --release -p oloproof-traces --example import_throughput
  run=(target/release/examples/import_throughput); out=()
else
  cargo build --quiet --release -p oloproof
  run=(target/release/oloproof import); out=(-o)
fi
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
  /usr/bin/time -f "$label: %e s wall, %U s user, %S s sys, %M KiB peak RSS" "$@" >/dev/null 2>"$work/time.txt" || { cat "$work/time.txt"; exit 1; }
  tail -1 "$work/time.txt"
}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
echo "file: $(du -h "$work/traces_$n.jsonl" | cut -f1), $n traces, $((n * 10)) spans"
measure "python json.loads loop" "$py" "$work/loads.py" "$work/traces_$n.jsonl"
measure "oloproof import ($n traces)" "${run[@]}" "$work/traces_$n.jsonl" "${out[@]}" "$work/traffic_$n.jsonl"
measure "oloproof import ($small traces)" "${run[@]}" "$work/traces_$small.jsonl" "${out[@]}" "$work/traffic_$small.jsonl"
"${run[@]}" "$work/traces_$n.jsonl" "${out[@]}" "$work/traffic_$n.jsonl" | head -3
