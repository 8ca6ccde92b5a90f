#!/usr/bin/env bash
# Soak (issue 19): many cases through a faulty system, the run killed with `kill -9` and resumed.
#
#   bench/soak.sh [N=100000]
#
# Environment: SOAK_SEED (kill moments, default 20260919), SOAK_KILLS (default 3),
# SOAK_DIR (work folder, default target/bench/soak; wiped at the start, kept at the end),
# PROFILE (cargo profile to build, default release), OLOPROOF_BIN (use this binary, no build).
#
# The system is bench/systems/soak (bench/systems/instant plus faults): exactly one case in each
# block of 1,000 crashes its worker (os._exit) and one in each block of 5,000 hangs it, in the
# retrieve, count_tokens or generate stage, chosen by a fixed sha256 schedule; workers: 2,
# timeout_s: 2. The cases are bench/gen_cases.py's (deterministic).
#
#  (a) one uninterrupted run;
#  (b) the same cases in a second project folder (its own store, so no cache is shared with (a)):
#      started, killed with `kill -9` after a random delay (uniform in 5-25 % of (a)'s duration,
#      seeded; the first delay counts from the moment the run is in the store), resumed with
#      `oloproof run --resume RUN_ID`, killed again, ... SOAK_KILLS times, then resumed to the end.
#
# Then checks, printing PASS/FAIL per property (exit 1 on any FAIL):
#  1. the final `run --json` summaries are equal in every field but run_id, cache and latency_ms
#     (per-invocation by design): cases, done, errors, and every criterion's and slice's value,
#     interval and counts; the per-case verdicts in the two stores are compared too;
#  2. the errors are exactly the designed faults in both runs (a crash is kind `crash`, a hang
#     kind `timeout`, in the designed stage): the "errors aside" of the issue made exact;
#  3. every case has exactly one result: one `done` row with its trace in run_cases, one verdict
#     per criterion, no row for an unknown case, one run, status complete (SQLite, read-only);
#  4. memory stays flat: the oloproof process's RSS (VmRSS, RssAnon, RssFile of /proc/PID/status)
#     every second; RSS at 10/50/90 % of the cases done and the max; the least-squares slope of
#     RssAnon against cases done between 10 % and 90 %; flat when the fitted growth over that
#     80 % is at most max(5 MiB, 10 % of RssAnon at 10 %). RssFile is the store's mmap'd pages
#     (PRAGMA mmap_size), page cache rather than the heap, so it is reported but not judged;
#     SKIP (not a failure) when fewer than 30 samples fall between 10 % and 90 % (a short run);
#  5. the store's size in bytes (db, -wal, -shm), rows and pages per table (reported);
#  6. every kill landed on a live run (exit 137), the last resume exited 0, and no worker outlived
#     its killed host (workers alive at the kill are waited for 5 s, then killed by pid).
# Not part of the test suite.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
n="${1:-100000}"
seed="${SOAK_SEED:-20260919}"
kills="${SOAK_KILLS:-3}"
work="${SOAK_DIR:-$root/target/bench/soak}"
profile="${PROFILE:-release}"
probe="$root/bench/systems/soak/probe.py"

if [[ -n "${OLOPROOF_BIN:-}" ]]; then
  bin="$OLOPROOF_BIN"
else
  echo "building: cargo build --profile $profile -p oloproof" >&2
  cargo build --profile "$profile" -p oloproof --manifest-path "$root/Cargo.toml" >&2
  dir="$profile"; [[ "$profile" == dev ]] && dir=debug; [[ "$profile" == test ]] && dir=debug
  bin="$root/target/$dir/oloproof"
fi
[[ -x "$bin" ]] || { echo "no binary at $bin" >&2; exit 2; }

now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$2"; }

rm -rf "$work"
mkdir -p "$work"
for r in a b; do
  mkdir -p "$work/$r"
  cp "$root/bench/systems/soak/app.py" "$root/bench/systems/soak/oloproof.yaml" "$work/$r/"
done
python3 "$root/bench/gen_cases.py" "$n" "$work/a/cases.jsonl"
cp "$work/a/cases.jsonl" "$work/b/cases.jsonl"
: >"$work/kills.jsonl"
echo "soak: $n cases, binary $bin, work folder $work" >&2

# Workers (direct children) of an oloproof process.
workers_of() { cat /proc/"$1"/task/*/children 2>/dev/null | tr ' ' '\n' | grep -v '^$' || true; }

# Waits up to 5 s for the given pids to exit; kills (by pid) and counts those still alive.
reap() {
  local left=0 pid i
  for i in $(seq 50); do
    left=0
    for pid in "$@"; do [[ -e /proc/$pid ]] && ! grep -q '^State:.*Z' /proc/"$pid"/status 2>/dev/null && left=$((left + 1)); done
    [[ $left -eq 0 ]] && break
    sleep 0.1
  done
  for pid in "$@"; do [[ -e /proc/$pid ]] && kill -9 "$pid" 2>/dev/null || true; done
  echo "$left"
}

# (a) uninterrupted
echo "(a) uninterrupted run" >&2
t0=$(now)
"$bin" run "$work/a" --json >"$work/a.json" 2>"$work/a.stderr" &
pid=$!
python3 "$probe" sample "$pid" "$work/a/.oloproof/oloproof.db" "$work/a.rss.csv" a &
spid=$!
rc_a=0; wait "$pid" || rc_a=$?
wait "$spid" || true
t_a=$(elapsed "$t0" "$(now)")
echo "(a) exit $rc_a after $t_a s" >&2
[[ $rc_a -eq 0 ]] || { echo "FAIL  the uninterrupted run exited $rc_a (see $work/a.stderr)" >&2; exit 1; }

# (b) killed and resumed
read -r -a delays <<<"$(python3 "$probe" delays "$seed" "$kills" "$t_a")"
echo "(b) kill delays: ${delays[*]} s" >&2
db_b="$work/b/.oloproof/oloproof.db"
run_id=""
t0=$(now)
for ((seg = 0; seg <= kills; seg++)); do
  ts=$(now)
  if [[ -z "$run_id" ]]; then
    "$bin" run "$work/b" --json >"$work/b.$seg.json" 2>"$work/b.$seg.stderr" &
  else
    "$bin" run "$work/b" --resume "$run_id" --json >"$work/b.$seg.json" 2>"$work/b.$seg.stderr" &
  fi
  pid=$!
  last_json="$work/b.$seg.json"
  python3 "$probe" sample "$pid" "$db_b" "$work/b.rss.csv" "b$seg" &
  spid=$!
  if [[ -z "$run_id" ]]; then
    run_id=$(python3 "$probe" run-id "$db_b" 300)
    ts=$(now) # the first delay counts from the moment the run is in the store
  fi
  if ((seg < kills)); then
    delay="${delays[$seg]}"
    python3 -c "import sys, time; time.sleep(max(0.0, float(sys.argv[1]) - (time.time() - float(sys.argv[2]))))" "$delay" "$ts"
    live=($(workers_of "$pid"))
    kill -9 "$pid" 2>/dev/null || true
    rc=0; wait "$pid" 2>/dev/null || rc=$?
    wait "$spid" || true
    left=$(reap "${live[@]}")
    done_n=$(python3 "$probe" done "$db_b")
    echo "(b) segment $seg: kill -9 after $delay s, exit $rc, $done_n cases done, ${#live[@]} workers, $left outlived it" >&2
    printf '{"kind":"kill","segment":%d,"delay":%s,"rc":%d,"done":%d,"workers":%d,"orphans_left":%d}\n' \
      "$seg" "$delay" "$rc" "$done_n" "${#live[@]}" "$left" >>"$work/kills.jsonl"
    if [[ $rc -ne 137 ]]; then
      echo "(b) segment $seg ended by itself (exit $rc) before its kill" >&2
      [[ $rc -eq 0 ]] && break
    fi
  else
    rc=0; wait "$pid" || rc=$?
    wait "$spid" || true
    secs=$(elapsed "$ts" "$(now)")
    echo "(b) segment $seg: resumed to the end in $secs s, exit $rc" >&2
    printf '{"kind":"final","segment":%d,"seconds":%s,"rc":%d}\n' "$seg" "$secs" "$rc" >>"$work/kills.jsonl"
  fi
done
t_b=$(elapsed "$t0" "$(now)")

# Anything still running from the work folder (a worker the kills orphaned): count, kill by pid.
stray=0
for d in /proc/[0-9]*; do
  cwd=$(readlink "$d/cwd" 2>/dev/null || true)
  if [[ "$cwd" == "$work"/* ]]; then stray=$((stray + 1)); kill -9 "${d#/proc/}" 2>/dev/null || true; fi
done
printf '{"kind":"stray","count":%d}\n' "$stray" >>"$work/kills.jsonl"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(awk '/^MemTotal/ {printf "%.1f", $2 / 1048576}' /proc/meminfo) GiB RAM, $(uname -sr)"
echo "binary: $bin ($("$bin" --version 2>/dev/null || echo '?'))"
rc=0
python3 "$probe" check --n "$n" --a "$work/a" --b "$work/b" --a-json "$work/a.json" \
  --b-json "$last_json" --a-rss "$work/a.rss.csv" --b-rss "$work/b.rss.csv" \
  --kills "$work/kills.jsonl" --kills-wanted "$kills" --a-seconds "$t_a" --b-seconds "$t_b" \
  --out "$work/result.json" || rc=$?
exit "$rc"
