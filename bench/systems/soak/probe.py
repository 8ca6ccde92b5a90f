#!/usr/bin/env python3
"""Helpers of bench/soak.sh (standard library only).

  probe.py sample PID DB OUT.csv LABEL   RSS of PID every second (+ cases done in DB) until it exits
  probe.py run-id DB [TIMEOUT_S]         wait until the store holds a run; print its id
  probe.py done DB                       cases done in the store's newest run
  probe.py delays SEED K SECONDS         K kill delays, uniform in [0.05, 0.25] x SECONDS, seeded
  probe.py check --n N ...               the soak's properties (see bench/soak.sh); exit 1 on FAIL
"""

import argparse
import collections
import csv
import hashlib
import json
import os
import random
import sqlite3
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def connect_ro(db):
    return sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=5)


def newest_run(conn):
    row = conn.execute("SELECT id FROM runs ORDER BY created_ms DESC, id DESC LIMIT 1").fetchone()
    return row[0] if row else None


def done_count(conn, run_id):
    return conn.execute(
        "SELECT COUNT(*) FROM run_cases WHERE run_id = ? AND state = 'done'", (run_id,)
    ).fetchone()[0]


def proc_status(pid):
    """VmRSS, RssAnon, RssFile in KiB, or None once the process is gone (or a zombie)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        return None
    if fields.get("State", "").strip().startswith("Z"):
        return None

    def kib(key):
        return int(fields.get(key, "0 kB").split()[0])

    return kib("VmRSS"), kib("RssAnon"), kib("RssFile")


def cmd_sample(pid, db, out, label):
    start = time.monotonic()
    conn, run_id = None, None
    new = not os.path.exists(out)
    with open(out, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["label", "t_s", "rss_kib", "anon_kib", "file_kib", "done"])
        while True:
            status = proc_status(pid)
            if status is None:
                return 0
            done = ""
            try:
                if conn is None and os.path.exists(db):
                    conn = connect_ro(db)
                if conn is not None:
                    run_id = run_id or newest_run(conn)
                    if run_id:
                        done = done_count(conn, run_id)
            except sqlite3.Error:
                conn, run_id = None, None
            w.writerow([label, "%.2f" % (time.monotonic() - start), *status, done])
            f.flush()
            time.sleep(max(0.0, 1.0 - (time.monotonic() - start) % 1.0))


def cmd_run_id(db, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if os.path.exists(db):
                conn = connect_ro(db)
                try:
                    run_id = newest_run(conn)
                finally:
                    conn.close()
                if run_id:
                    print(run_id)
                    return 0
        except sqlite3.Error:
            pass
        time.sleep(0.05)
    sys.stderr.write("no run appeared in %s within %.0f s\n" % (db, timeout))
    return 1


def cmd_done(db):
    conn = connect_ro(db)
    run_id = newest_run(conn)
    print(done_count(conn, run_id) if run_id else 0)
    return 0


def cmd_delays(seed, k, seconds):
    rng = random.Random(seed)
    print(" ".join("%.2f" % (rng.uniform(0.05, 0.25) * seconds) for _ in range(k)))
    return 0


# --- check -----------------------------------------------------------------------------------

# Fewer samples than this between 10 % and 90 % of the cases (a run shorter than ~40 s) is
# mostly warm-up (page caches, allocator): the memory verdict is SKIP, not PASS or FAIL.
MIN_MID_SAMPLES = 30
IGNORED = ("run_id", "cache", "latency_ms")  # differ by construction between two runs
# Trace fields that differ by construction: timings, cache use, the worker's stderr (which
# process served which cases before); an error's stderr_tail is dropped for the same reason.
TRACE_VOLATILE = ("latency_ms", "cache", "stderr")


def diff(a, b, path="", out=None, limit=20):
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append("%s.%s: only in %s" % (path, k, "a" if k in a else "b"))
            else:
                diff(a[k], b[k], "%s.%s" % (path, k), out, limit)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append("%s: %d vs %d entries" % (path, len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, "%s[%d]" % (path, i), out, limit)
    elif a != b:
        out.append("%s: %r vs %r" % (path, a, b))
    return out


def load_samples(path):
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            rows.append({
                "label": r["label"], "t": float(r["t_s"]), "rss": int(r["rss_kib"]),
                "anon": int(r["anon_kib"]), "file": int(r["file_kib"]),
                "done": int(r["done"]) if r["done"] else None,
            })
    return rows


def slope(points):
    """Least-squares slope of (x, y) points."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return 0.0
    return sum((x - mx) * (y - my) for x, y in points) / sxx


def mib(kib):
    return kib / 1024.0


def store_facts(project, n, expected_faults):
    """What the store says: one run, one result per case, its errors, its size."""
    db = os.path.join(project, ".oloproof", "oloproof.db")
    conn = connect_ro(db)
    facts = {"problems": []}
    p = facts["problems"]
    runs = conn.execute("SELECT id, status FROM runs").fetchall()
    if len(runs) != 1:
        p.append("%d runs in the store, expected 1" % len(runs))
    run_id = runs[0][0] if runs else None
    facts["run_id"] = run_id
    facts["status"] = runs[0][1] if runs else None
    if facts["status"] != "complete":
        p.append("run status %r, expected 'complete'" % facts["status"])
    ids = []
    with open(os.path.join(project, "cases.jsonl")) as f:
        for line in f:
            ids.append(json.loads(line)["id"])
    if len(ids) != n or len(set(ids)) != n:
        p.append("cases.jsonl holds %d ids (%d distinct), expected %d" % (len(ids), len(set(ids)), n))
    rows = conn.execute(
        "SELECT case_id, state, attempt, trace_json FROM run_cases WHERE run_id = ?", (run_id,)
    ).fetchall()
    per_id = collections.Counter(r[0] for r in rows)
    dup = [c for c, k in per_id.items() if k > 1]
    if dup:
        p.append("%d case ids with more than one row (e.g. %s)" % (len(dup), dup[:3]))
    missing = set(ids) - set(per_id)
    extra = set(per_id) - set(ids)
    if missing:
        p.append("%d cases have no row (e.g. %s)" % (len(missing), sorted(missing)[:3]))
    if extra:
        p.append("%d rows for unknown cases (e.g. %s)" % (len(extra), sorted(extra)[:3]))
    not_done = [r[0] for r in rows if r[1] != "done" or r[3] is None]
    if not_done:
        p.append("%d cases not done or without a trace (e.g. %s)" % (len(not_done), not_done[:3]))
    facts["attempts"] = dict(sorted(collections.Counter(r[2] for r in rows).items()))
    errors = {}
    traces = {}
    bad_trace = 0
    for case_id, _, _, trace_json in rows:
        if trace_json is None:
            continue
        trace = json.loads(trace_json)
        if trace.get("case_id") != case_id:
            bad_trace += 1
        err = trace.get("error")
        if err:
            errors[case_id] = (err.get("kind"), err.get("stage"))
            err.pop("stderr_tail", None)
        for volatile in TRACE_VOLATILE:
            trace.pop(volatile, None)
        traces[case_id] = hashlib.sha256(
            json.dumps(trace, sort_keys=True).encode()).hexdigest()
    if bad_trace:
        p.append("%d traces name another case" % bad_trace)
    facts["errors"] = errors
    facts["traces"] = traces
    facts["summary_json"] = json.loads(conn.execute(
        "SELECT summary_json FROM runs WHERE id = ?", (run_id,)).fetchone()[0] or "null")
    criteria = [r[0] for r in conn.execute(
        "SELECT DISTINCT criterion FROM verdicts WHERE run_id = ?", (run_id,))]
    facts["criteria"] = sorted(criteria)
    vcount = collections.Counter()
    verdicts = {}
    for case_id, criterion, vj in conn.execute(
            "SELECT case_id, criterion, verdict_json FROM verdicts WHERE run_id = ?", (run_id,)):
        vcount[case_id] += 1
        verdicts[(case_id, criterion)] = vj
    wrong = [c for c in ids if vcount.get(c, 0) != len(criteria)]
    if wrong:
        p.append("%d cases without exactly one verdict per criterion (e.g. %s)" % (len(wrong), wrong[:3]))
    stray = set(vcount) - set(ids)
    if stray:
        p.append("verdicts for %d unknown cases" % len(stray))
    facts["verdicts"] = verdicts
    facts["verdict_rows"] = sum(vcount.values())
    facts["tables"] = {t: conn.execute("SELECT COUNT(*) FROM %s" % t).fetchone()[0]
                       for t in ("runs", "run_cases", "verdicts", "cache")}
    facts["cache_layers"] = dict(conn.execute(
        "SELECT layer, COUNT(*) FROM cache GROUP BY layer ORDER BY layer").fetchall())
    try:
        facts["table_bytes"] = dict(conn.execute(
            "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall())
    except sqlite3.Error:
        facts["table_bytes"] = {}
    conn.close()
    files = {}
    for suffix in ("", "-wal", "-shm"):
        path = db + suffix
        files["oloproof.db" + suffix] = os.path.getsize(path) if os.path.exists(path) else 0
    facts["files"] = files
    return facts


def mark(ok):
    return "PASS" if ok else "FAIL"


def rss_report(samples, n, label):
    """Lines describing one process's RSS over its run, and the flatness verdict."""
    lines = []
    with_done = [s for s in samples if s["done"] is not None]
    at = {}
    for q in (0.10, 0.50, 0.90):
        hit = next((s for s in with_done if s["done"] >= q * n), None)
        at[q] = hit
    peak = max(samples, key=lambda s: s["rss"]) if samples else None
    for q, s in at.items():
        if s:
            lines.append("    %3d%% of cases (%6d done, t=%6.1f s): RSS %6.1f MiB (anon %6.1f, file %6.1f)"
                         % (q * 100, s["done"], s["t"], mib(s["rss"]), mib(s["anon"]), mib(s["file"])))
    if peak:
        lines.append("    max over the process's life (t=%6.1f s): RSS %6.1f MiB (anon %6.1f, file %6.1f)"
                     % (peak["t"], mib(peak["rss"]), mib(peak["anon"]), mib(peak["file"])))
    mid = [s for s in with_done if 0.10 * n <= s["done"] <= 0.90 * n]
    per10k_anon = slope([(s["done"], s["anon"]) for s in mid]) * 10000
    per10k_rss = slope([(s["done"], s["rss"]) for s in mid]) * 10000
    lines.append("    slope between 10%% and 90%% (%d samples): anon %+.3f MiB per 10,000 cases, RSS %+.3f MiB per 10,000 cases"
                 % (len(mid), mib(per10k_anon), mib(per10k_rss)))
    first = next((s for s in with_done if s["done"] > 0), None)
    if first:
        lines.append("    first sample with a case done (%6d done, t=%6.1f s): anon %6.1f MiB, i.e. %.1f KiB per case of the run held from the start"
                     % (first["done"], first["t"], mib(first["anon"]), first["anon"] / n))
    last_exec = max((s for s in with_done if s["done"] < n), key=lambda s: s["t"], default=None)
    after = [s for s in samples if s["done"] is not None and s["done"] >= n]
    if last_exec and after:
        top = max(after, key=lambda s: s["anon"])
        lines.append("    after the last case (the final summary): anon %6.1f -> %6.1f MiB (%+.1f MiB, %.1f KiB per case)"
                     % (mib(last_exec["anon"]), mib(top["anon"]), mib(top["anon"] - last_exec["anon"]),
                        (top["anon"] - last_exec["anon"]) / n))
    growth = mib(per10k_anon) * 0.8 * n / 10000  # fitted anon growth over the middle 80 %
    base = mib(at[0.10]["anon"]) if at[0.10] else 0.0
    limit = max(5.0, 0.10 * base)
    ok = growth <= limit
    lines.append("    fitted anon growth over the middle 80%% of the run: %+.2f MiB (limit %.2f MiB = max(5 MiB, 10%% of anon at 10%%))"
                 % (growth, limit))
    return ok, lines, {"at": at, "peak": peak, "slope_anon_mib_per_10k": mib(per10k_anon),
                       "slope_rss_mib_per_10k": mib(per10k_rss), "growth_mib": growth,
                       "limit_mib": limit, "samples": len(samples), "mid_samples": len(mid)}


def cmd_check(args):
    sys.path.insert(0, HERE)
    from app import fault  # noqa: E402  (the system's own fault schedule)

    n = args.n
    expected = {"case-%06d" % i: ("crash" if f[0] == "crash" else "timeout", f[1])
                for i in range(n) for f in [fault(i)] if f}
    results = {}
    failed = False

    with open(args.a_json) as f:
        sa = json.load(f)
    with open(args.b_json) as f:
        sb = json.load(f)
    a = store_facts(args.a, n, expected)
    b = store_facts(args.b, n, expected)

    print("soak: %d cases, %d crash + %d hang faults designed (%d expected errors)"
          % (n, sum(1 for v in expected.values() if v[0] == "crash"),
             sum(1 for v in expected.values() if v[0] == "timeout"), len(expected)))
    print()

    # 1. The final summaries.
    strip = lambda s: {k: v for k, v in s.items() if k not in IGNORED}  # noqa: E731
    d = diff(strip(sa), strip(sb))
    ok1 = not d and sa.get("done") == n and sb.get("done") == n
    same_verdicts = sum(1 for k, v in a["verdicts"].items() if b["verdicts"].get(k) == v)
    differing_cases = sorted({k[0] for k, v in a["verdicts"].items() if b["verdicts"].get(k) != v}
                             | {k[0] for k in b["verdicts"] if k not in a["verdicts"]})
    non_error_diff = [c for c in differing_cases if c not in a["errors"] and c not in b["errors"]]
    ok1 = ok1 and not non_error_diff
    trace_diff = sorted(c for c in set(a["traces"]) | set(b["traces"])
                        if a["traces"].get(c) != b["traces"].get(c))
    stored_diff = diff(strip(sb), strip(b["summary_json"] or {}))
    ok1 = ok1 and not trace_diff and not stored_diff
    print("%s  final summary of the killed-and-resumed run equals the uninterrupted run's" % mark(ok1))
    print("    compared: every field of `run --json` except %s (per-invocation by design);"
          % ", ".join(IGNORED))
    print("    i.e. cases, done, errors, and every criterion's and every slice's value, interval,")
    print("    passed/observed/missing/excluded counts and exclusion reasons")
    print("    %d criteria, %d slice rows; errors %d vs %d" % (len(sa.get("criteria", [])),
          len(sa.get("slices", [])), sa.get("errors"), sb.get("errors")))
    print("    per-case verdicts (store): %d of %d identical; cases differing: %d (of which not errors in either run: %d)"
          % (same_verdicts, len(a["verdicts"]), len(differing_cases), len(non_error_diff)))
    print("    per-case traces (store, without %s and an error's stderr_tail): %d cases differ%s"
          % ("/".join(TRACE_VOLATILE), len(trace_diff), (" (e.g. %s)" % trace_diff[:5]) if trace_diff else ""))
    print("    the summary stored with the killed run %s the one its last resume printed"
          % ("equals" if not stored_diff else "DIFFERS from"))
    for line in d + stored_diff:
        print("    differs: " + line)
    results["summary_equal"] = ok1
    failed |= not ok1

    # 2. Errors: exactly the designed faults, in both runs.
    ok2 = a["errors"] == expected and b["errors"] == expected
    print("%s  errors are exactly the designed faults, in both runs (crash -> kind crash, hang -> kind timeout, same stage)" % mark(ok2))
    for name, facts in (("uninterrupted", a), ("killed+resumed", b)):
        got = facts["errors"]
        kinds = collections.Counter(v[0] for v in got.values())
        print("    %-15s %d errors (%s); unexpected %d, missing %d, wrong kind/stage %d"
              % (name, len(got), ", ".join("%s %d" % kv for kv in sorted(kinds.items())),
                 len(set(got) - set(expected)), len(set(expected) - set(got)),
                 sum(1 for k in set(got) & set(expected) if got[k] != expected[k])))
        for k in sorted(set(got) ^ set(expected))[:10]:
            print("      %s: expected %s, got %s" % (k, expected.get(k), got.get(k)))
    results["errors_as_designed"] = ok2
    failed |= not ok2

    # 3. Exactly one result per case.
    ok3 = not a["problems"] and not b["problems"]
    print("%s  every case has exactly one result (one done run_cases row with its trace, one verdict per criterion)" % mark(ok3))
    for name, facts in (("uninterrupted", a), ("killed+resumed", b)):
        print("    %-15s run %s %s; %d case rows, %d verdict rows (%d criteria); attempts %s"
              % (name, facts["run_id"], facts["status"], facts["tables"]["run_cases"],
                 facts["verdict_rows"], len(facts["criteria"]),
                 ", ".join("%d: %d cases" % kv for kv in facts["attempts"].items())))
        for prob in facts["problems"]:
            print("      problem: " + prob)
    results["one_result_per_case"] = ok3
    failed |= not ok3

    # 4. Memory.
    samples_a = load_samples(args.a_rss)
    ok4, lines, mem = rss_report(samples_a, n, "a")
    short = mem["mid_samples"] < MIN_MID_SAMPLES
    print("%s  memory stays flat (uninterrupted run, oloproof process, sampled every second from /proc)%s"
          % ("SKIP" if short else mark(ok4),
             " -- too short to judge: %d samples between 10%% and 90%%, %d needed (try N >= 100000)"
             % (mem["mid_samples"], MIN_MID_SAMPLES) if short else ""))
    ok4 = ok4 or short
    for line in lines:
        print(line)
    samples_b = load_samples(args.b_rss)
    by_seg = collections.OrderedDict()
    for s in samples_b:
        by_seg.setdefault(s["label"], []).append(s)
    print("    killed+resumed run, per process: " + "; ".join(
        "%s max %.1f MiB (anon %.1f) over %d s" % (lab, mib(max(x["rss"] for x in ss)),
                                                    mib(max(x["anon"] for x in ss)), len(ss))
        for lab, ss in by_seg.items()))
    results["memory_flat"] = None if short else ok4
    failed |= not ok4

    # 5. Store size.
    print("INFO  store size")
    for name, facts in (("uninterrupted", a), ("killed+resumed", b)):
        total = sum(facts["files"].values())
        print("    %-15s %s bytes (%.1f MiB, %.0f bytes per case): %s"
              % (name, format(total, ","), mib(total / 1024.0), total / n,
                 ", ".join("%s %s" % (k, format(v, ",")) for k, v in facts["files"].items())))
        print("    %-15s rows: %s; cache %s" % ("", ", ".join("%s %d" % kv for kv in facts["tables"].items()),
                                                 facts["cache_layers"]))
        if facts["table_bytes"]:
            print("    %-15s pages by table/index: %s" % ("", ", ".join(
                "%s %.1f MiB" % (k, mib(v / 1024.0)) for k, v in list(facts["table_bytes"].items())[:6])))

    # 6. The kills.
    kills = []
    with open(args.kills) as f:
        for line in f:
            if line.strip():
                kills.append(json.loads(line))
    landed = [k for k in kills if k["kind"] == "kill" and k["rc"] == 137]
    final = [k for k in kills if k["kind"] == "final"]
    orphans = sum(k.get("orphans_left", 0) for k in kills)
    stray = sum(k["count"] for k in kills if k["kind"] == "stray")
    ok6 = (len(landed) == args.kills_wanted and len(final) == 1 and final[0]["rc"] == 0
           and orphans == 0 and stray == 0)
    print("%s  %d kill -9 landed mid-run (wanted %d), the last resume finished with exit %s, no worker outlived its host"
          % (mark(ok6), len(landed), args.kills_wanted, final[0]["rc"] if final else "?"))
    for k in kills:
        if k["kind"] == "kill":
            print("    segment %d: killed after %.2f s (rc %d) with %d of %d cases done; %d workers alive at the kill, %d left after 5 s"
                  % (k["segment"], k["delay"], k["rc"], k["done"], n, k["workers"], k["orphans_left"]))
        elif k["kind"] == "final":
            print("    segment %d: resumed to the end in %.1f s (rc %d)" % (k["segment"], k["seconds"], k["rc"]))
    print("    processes left in the work folder at the end: %d" % stray)
    results["kills"] = ok6
    failed |= not ok6

    print()
    print("times: uninterrupted %.1f s; killed+resumed %.1f s wall in all (%s)"
          % (args.a_seconds, args.b_seconds,
             " + ".join("%.1f" % k.get("seconds", k.get("delay", 0)) for k in kills if k["kind"] != "stray")))
    print("RESULT: %s" % ("FAIL" if failed else "PASS"))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"results": results, "memory": {k: v for k, v in mem.items() if k not in ("at", "peak")},
                       "files_a": a["files"], "files_b": b["files"], "kills": kills,
                       "a_seconds": args.a_seconds, "b_seconds": args.b_seconds}, f, indent=1)
    return 1 if failed else 0


def main(argv):
    if not argv:
        sys.stderr.write(__doc__)
        return 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "sample":
        return cmd_sample(int(rest[0]), rest[1], rest[2], rest[3])
    if cmd == "run-id":
        return cmd_run_id(rest[0], float(rest[1]) if len(rest) > 1 else 120.0)
    if cmd == "done":
        return cmd_done(rest[0])
    if cmd == "delays":
        return cmd_delays(int(rest[0]), int(rest[1]), float(rest[2]))
    if cmd == "check":
        p = argparse.ArgumentParser(prog="probe.py check")
        p.add_argument("--n", type=int, required=True)
        p.add_argument("--a", required=True)
        p.add_argument("--b", required=True)
        p.add_argument("--a-json", required=True)
        p.add_argument("--b-json", required=True)
        p.add_argument("--a-rss", required=True)
        p.add_argument("--b-rss", required=True)
        p.add_argument("--kills", required=True)
        p.add_argument("--kills-wanted", type=int, required=True)
        p.add_argument("--a-seconds", type=float, required=True)
        p.add_argument("--b-seconds", type=float, required=True)
        p.add_argument("--out")
        return cmd_check(p.parse_args(rest))
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
