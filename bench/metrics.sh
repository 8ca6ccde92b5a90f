#!/usr/bin/env bash
# Side-by-side benchmark of `oloproof metric` against the Python references on the same inputs.
# Ingestion (group A): `oloproof metric wer` / `cer` vs jiwer 4.0.0 on PAIRS generated sentence
# pairs (default 10,000). Prints each tool's value, median wall time and peak memory, and the
# time ratio jiwer / oloproof. Other metric groups append their sections below.
#
#   bench/metrics.sh
#   PAIRS=100000 REPEAT=5 bench/metrics.sh
#   OLOPROOF_BIN=path/to/oloproof bench/metrics.sh   # skip the release build
#
# Inputs and the benchmark venv live under target/ (never committed).
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-10000}
REPEAT=${REPEAT:-5}
data=target/bench/metrics
venv=target/bench-venv
mkdir -p "$data"

pairs=$data/text-pairs-$PAIRS.jsonl
if [ ! -s "$pairs" ]; then
  echo "generating $pairs ..." >&2
  python3 bench/gen_text_pairs.py "$pairs" "$PAIRS"
fi
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check jiwer==4.0.0

if [ -n "${OLOPROOF_BIN:-}" ]; then
  olo=$OLOPROOF_BIN
else
  cargo build --release -p oloproof >/dev/null
  olo=target/release/oloproof
fi

# measure NAME CMD...: median wall seconds and peak RSS (KB) over REPEAT runs.
declare -A WALL RSS
measure() {
  local name=$1
  shift
  local walls=() rss=0 line
  for _ in $(seq "$REPEAT"); do
    line=$( { /usr/bin/time -f "%e %M" "$@" >/dev/null; } 2>&1 | tail -1)
    walls+=("${line% *}")
    [ "${line#* }" -gt "$rss" ] && rss=${line#* }
  done
  WALL[$name]=$(printf '%s\n' "${walls[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  RSS[$name]=$rss
  printf '%-16s %8.3f s %8.0f MB\n' "$name" "${WALL[$name]}" "$(echo "$rss/1024" | bc -l)"
}

echo "== ingestion: $PAIRS sentence pairs ($(du -h "$pairs" | cut -f1)), median of $REPEAT"
for m in wer cer; do
  echo "oloproof: $("$olo" metric "$m" --input "$pairs" 2>/dev/null | sed -n 1p)   jiwer: $("$venv/bin/python" bench/metrics_jiwer.py "$pairs" "$m")"
  measure "oloproof-$m" "$olo" metric "$m" --input "$pairs"
  measure "jiwer-$m" "$venv/bin/python" bench/metrics_jiwer.py "$pairs" "$m"
  printf 'ratio %s (jiwer / oloproof): %.1fx time, %.1fx memory\n' "$m" \
    "$(echo "${WALL[jiwer-$m]}/${WALL[oloproof-$m]}" | bc -l)" \
    "$(echo "${RSS[jiwer-$m]}/${RSS[oloproof-$m]}" | bc -l)"
done

# Classification (group B): `oloproof metric seqeval` vs seqeval 1.2.2 on a CoNLL-2003-sized input
# (bench/gen_ner.py: 14,000 sentences, ~300,000 tokens), default and strict IOB2 modes.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check seqeval==1.2.2
ner=$data/ner.jsonl
if [ ! -s "$ner" ]; then
  python3 bench/gen_ner.py "$ner"
fi
echo "seqeval micro F1 — oloproof: $("$olo" metric seqeval --input "$ner" --json | "$venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["value"])')   seqeval: $("$venv/bin/python" bench/seqeval_ref.py "$ner")"
measure "oloproof-seqeval" "$olo" metric seqeval --input "$ner"
measure "seqeval" "$venv/bin/python" bench/seqeval_ref.py "$ner"
measure "oloproof-strict" "$olo" metric seqeval --input "$ner" --mode strict --scheme IOB2
measure "seqeval-strict" "$venv/bin/python" bench/seqeval_ref.py "$ner" strict IOB2
printf 'ratio seqeval default (seqeval / oloproof): %.1fx time\n' "$(echo "${WALL[seqeval]}/${WALL[oloproof-seqeval]}" | bc -l)"
printf 'ratio seqeval strict (seqeval / oloproof): %.1fx time\n' "$(echo "${WALL[seqeval-strict]}/${WALL[oloproof-strict]}" | bc -l)"
