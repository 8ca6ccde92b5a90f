#!/usr/bin/env bash
# Side-by-side benchmark of `oloproof trec -m all_trec` on 10,000 queries x 1,000 documents
# against pytrec_eval-terrier, ranx 0.3.21 and (when TREC_EVAL names a binary) trec_eval.
# Prints wall time and peak memory of each, and the ratios to trec_eval or to pytrec_eval.
#
#   bench/trec.sh                      # generate inputs (once), build, measure
#   TREC_EVAL=/path/trec_eval bench/trec.sh
#   QUERIES=1000 DOCS=1000 REPEAT=5 bench/trec.sh
#
# Inputs and the benchmark venv live under target/ (never committed).
set -euo pipefail
cd "$(dirname "$0")/.."
QUERIES=${QUERIES:-10000}
DOCS=${DOCS:-1000}
REPEAT=${REPEAT:-3}
data=target/bench/trec-${QUERIES}x${DOCS}
venv=target/bench-venv

if [ ! -s "$data/run" ]; then
  echo "generating $data ..." >&2
  python3 bench/gen_trec.py "$data" "$QUERIES" "$DOCS"
fi
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  pytrec-eval-terrier==0.5.7 ranx==0.3.21

if cargo build --release -p oloproof >/dev/null 2>&1; then
  olo=(target/release/oloproof trec)
else
  echo "oloproof binary did not build; using the oloproof-trec example" >&2
  cargo build --release -p oloproof-trec --example trec_eval >/dev/null
  olo=(target/release/examples/trec_eval)
fi

# Warm the page cache and ranx's numba cache.
cat "$data/qrels" "$data/run" >/dev/null
"$venv/bin/python" bench/trec_ranx.py "$data/qrels" "$data/run" >/dev/null

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
  printf '%-12s %8.2f s %8.0f MB\n' "$name" "${WALL[$name]}" "$(echo "$rss/1024" | bc -l)"
}

echo "inputs: $QUERIES queries x $DOCS docs ($(du -h "$data/run" | cut -f1) run), median of $REPEAT"
measure oloproof "${olo[@]}" -m all_trec "$data/qrels" "$data/run"
if [ -n "${TREC_EVAL:-}" ]; then
  measure trec_eval "$TREC_EVAL" -m all_trec "$data/qrels" "$data/run"
  # Identical output is part of the contract.
  diff <("${olo[@]}" -m all_trec -q "$data/qrels" "$data/run") \
       <("$TREC_EVAL" -m all_trec -q "$data/qrels" "$data/run") >/dev/null \
    && echo "outputs identical" || echo "OUTPUTS DIFFER"
else
  echo "trec_eval: skipped (set TREC_EVAL=/path/to/trec_eval)"
fi
measure pytrec_eval "$venv/bin/python" bench/trec_pytrec.py "$data/qrels" "$data/run"
measure ranx "$venv/bin/python" bench/trec_ranx.py "$data/qrels" "$data/run"

echo
echo "ratios (other / oloproof): wall time, peak memory"
for name in trec_eval pytrec_eval ranx; do
  [ -n "${WALL[$name]:-}" ] || continue
  printf '%-12s %6.1fx %6.1fx\n' "$name" \
    "$(echo "${WALL[$name]}/${WALL[oloproof]}" | bc -l)" \
    "$(echo "${RSS[$name]}/${RSS[oloproof]}" | bc -l)"
done
