#!/usr/bin/env bash
# Scale-out benchmark (issue 16): one run executed by 1, 2 and 4 `oloproof worker` processes of
# 8 threads each against one Postgres on this machine, beside the single-process SQLite run, on
# a latency-bound system; the per-case store overhead of Postgres and SQLite on the instant
# system; and how many claims per second one Postgres serves (pgbench running the workers'
# own claim statement).
#
#   bench/scale_out.sh [N_CASES=2000] [SLEEP_S=0.05]
#
# Starts its own Postgres through scripts/postgres-test (stopped at the end). Not part of the
# test suite; run it on a quiet machine. OLOPROOF_BIN=path/to/oloproof uses that binary instead of
# building the release one.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
n="${1:-2000}"
sleep_s="${2:-0.05}"
if [[ -n "${OLOPROOF_BIN:-}" ]]; then
  bin="$OLOPROOF_BIN"
else
  cargo build --release -p oloproof --manifest-path "$root/Cargo.toml" >/dev/null 2>&1
  bin="$root/target/release/oloproof"
fi
work="$(mktemp -d)"
eval "$("$root/scripts/postgres-test" start)"
trap '"$root/scripts/postgres-test" stop "$OLOPROOF_TEST_POSTGRES_DIR"; rm -rf "$work"' EXIT
base="${OLOPROOF_TEST_POSTGRES%%\?*}"; base="${base%/*}"
db() { # a fresh database; prints its URL
  local name="bench_$1_$RANDOM"
  "$(ls -d /usr/lib/postgresql/*/bin | head -n1)/psql" -q "$OLOPROOF_TEST_POSTGRES" -c "CREATE DATABASE $name" >/dev/null
  echo "$base/$name?sslmode=disable"
}
now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$2"; }

cp -r "$root/bench/systems/sleepy" "$work/sleepy"
python3 "$root/bench/gen_cases.py" "$n" "$work/sleepy/cases.jsonl"
export OLOPROOF_SLEEP_S="$sleep_s"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "latency-bound: $n cases, retrieve and generate sleep ${sleep_s} s each, 8 threads per process"
t0=$(now); "$bin" run "$work/sleepy" --no-cache --max-error-rate 1 >/dev/null; t1=$(now)
sqlite=$(elapsed "$t0" "$t1")
echo "  sqlite, 1 process          ${sqlite} s"
declare -A wall
for procs in 1 2 4; do
  url=$(db "p$procs")
  id=$("$bin" run "$work/sleepy" --store "$url" --detach 2>/dev/null)
  t0=$(now)
  pids=()
  for _ in $(seq "$procs"); do
    "$bin" worker "$work/sleepy" --store "$url" --run "$id" --workers 8 --no-cache --share "$procs" >/dev/null 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || true; done
  t1=$(now)
  wall[$procs]=$(elapsed "$t0" "$t1")
  echo "  postgres, $procs process(es)    ${wall[$procs]} s"
done
python3 -c "import sys; print(f'  speed-up 1 -> 4 processes: {float(sys.argv[1]) / float(sys.argv[2]):.2f}x (target >= 3.5x)')" "${wall[1]}" "${wall[4]}"

cp -r "$root/bench/systems/instant" "$work/instant"
python3 "$root/bench/gen_cases.py" "$n" "$work/instant/cases.jsonl"
echo "store overhead: $n cases, instant system, 1 process, workers 2 (median of 5 alternating runs each)"
# This VM's SQLite run varies by 2x from one run to the next: medians of alternating runs.
ss=(); ps=()
for _ in 1 2 3 4 5; do
  t0=$(now); "$bin" run "$work/instant" --no-cache --max-error-rate 1 >/dev/null; t1=$(now)
  ss+=("$(elapsed "$t0" "$t1")")
  url=$(db instant)
  t0=$(now); "$bin" run "$work/instant" --store "$url" --no-cache --max-error-rate 1 >/dev/null; t1=$(now)
  ps+=("$(elapsed "$t0" "$t1")")
done
python3 - "$n" "${ss[*]}" "${ps[*]}" <<'PY'
import statistics, sys
n = int(sys.argv[1])
ss = [float(x) for x in sys.argv[2].split()]
ps = [float(x) for x in sys.argv[3].split()]
s, p = statistics.median(ss), statistics.median(ps)
print(f"  sqlite   {s:.2f} s ({s / n * 1e6:.0f} us per case; runs {min(ss):.2f}-{max(ss):.2f} s)")
print(f"  postgres {p:.2f} s ({p / n * 1e6:.0f} us per case; runs {min(ps):.2f}-{max(ps):.2f} s), "
      f"{p / s:.2f}x sqlite (target <= 2x)")
PY

echo "claims per second (pgbench, the claim statement of the Postgres store, batch 100, 20 s each)"
url=$(db claims)
id=$("$bin" run "$work/instant" --store "$url" --detach 2>/dev/null)
# Enough pending cases for the whole measurement: the run's cases re-opened after each claim.
pgbench="$(ls -d /usr/lib/postgresql/*/bin | head -n1)/pgbench"
cat >"$work/claim.sql" <<SQL
WITH picked AS (
  SELECT case_id FROM run_cases
   WHERE run_id = '$id' AND state = 'pending' AND lease_holder IS DISTINCT FROM 'bench'
     AND (lease_until IS NULL OR lease_until < oloproof_now_ms())
   ORDER BY ord LIMIT 100 FOR UPDATE SKIP LOCKED)
UPDATE run_cases c SET attempt = c.attempt + 1, lease_until = NULL, lease_holder = NULL
  FROM picked WHERE c.run_id = '$id' AND c.case_id = picked.case_id;
SQL
for clients in 1 4 16; do
  "$pgbench" -n -c "$clients" -j 2 -T 20 -f "$work/claim.sql" "${url%%\?*}" 2>/dev/null \
    | awk -v c="$clients" '/^tps/ {printf "  %2d clients: %.0f claim transactions/s (x100 cases)\n", c, $3}'
done
