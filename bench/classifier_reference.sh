#!/usr/bin/env bash
# Writes the tiny randomly initialised models of Oloproof's test support (BERT, DeBERTa and
# RoBERTa classifiers, a RoBERTa sentence embedder; examples/write_tiny_models.rs) and runs
# bench/classifier_reference.py, which computes their logits (the embedder's mean-pooled
# embeddings) with transformers (PyTorch; gigabytes, hence not in CI) and writes the committed
# fixture crates/local/tests/fixtures/tiny_classifier_reference.json. The test suite
# (crates/local/tests/deberta.rs, crates/local/tests/roberta.rs) compares Oloproof's outputs
# against that fixture only.
#
# Needs the venv of bench/embedding_reference.sh (target/st-venv: torch + transformers).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${OLOPROOF_ST_VENV:-target/st-venv}
if ! "$venv/bin/python" -c "import torch, transformers, tokenizers, safetensors" 2>/dev/null; then
  echo "error: $venv lacks torch/transformers: run bench/embedding_reference.sh first" >&2
  exit 1
fi
models=target/tiny-classifiers
rm -rf "$models"
cargo run --quiet --profile ci -p oloproof-local --example write_tiny_models -- "$models" >/dev/null
exec "$venv/bin/python" bench/classifier_reference.py "$models"
