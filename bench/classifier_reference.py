"""Reference outputs of the tiny models for Oloproof's local classifier and embedder.

Loads each tiny randomly initialised model that Oloproof's test support writes
(`oloproof_local::testing::REFERENCE_MODELS`: BERT, DeBERTa-v3, a DeBERTa variant with
separate position projections, RoBERTa classifiers and a RoBERTa sentence embedder, written by
`examples/write_tiny_models.rs`) with `transformers` in eval mode, tokenises fixed inputs with
the `tokenizers` package from the same tokenizer.json, and writes the results to the committed
fixture crates/local/tests/fixtures/tiny_classifier_reference.json: the logits of
`AutoModelForSequenceClassification` on pairs for a classifier, and for the embedder
(`architectures: ["RobertaModel"]`) the mean over the tokens of `AutoModel`'s last hidden
state on single texts (sentence-transformers' mean pooling), truncated to the model's
positions. The Rust test suite compares against this fixture only (no PyTorch in CI). Run it
through bench/classifier_reference.sh, which writes the models first.

Checks on the way: every tensor of the safetensors file is one of the model's and none is
missing (the writer mirrors the `transformers` state dict), and a padded batch (padded with
`pad_token_id`) gives the outputs of the inputs run alone. Everything is computed in float64
(the weights are float32 values, so this is the exact function up to float64 rounding).
"""

import hashlib
import json
import os
import sys

import safetensors.torch
import tokenizers
import torch
import transformers
from transformers import AutoModel, AutoModelForSequenceClassification

OUT = os.path.join(
    os.path.dirname(__file__),
    "..",
    "crates",
    "local",
    "tests",
    "fixtures",
    "tiny_classifier_reference.json",
)

# Words of the tiny vocabulary (oloproof_local::testing::WORDS) and a few it lacks ([UNK]).
LONG = (
    "the refund window is fourteen days from delivery and shipping takes three weeks "
    "support answers within one day the warranty covers two years not water damage"
)
PAIRS = [
    ("the refund window is fourteen days from delivery", "refund is fourteen days"),
    ("shipping takes three weeks", "shipping takes one day"),
    ("The Warranty covers TWO years", "warranty covers water damage"),
    ("a claim needs receipt and photo", "a claim needs a passport"),
    ("support", "day"),
    ("zebra quokka", "the refund"),
    # 32 premise words + 4 hypothesis words + 3 special tokens = 39 of the 40 positions:
    # relative distances up to 38 (log buckets past 8, clamping past 12).
    (LONG + " a claim needs receipt and photo", "the warranty covers damage"),
    ("days", LONG),
]
# For the models with 512 positions (v3-base's geometry: relative distances up to 500, past
# the 128 where v3's logarithmic buckets start): a 490-word premise and a 250-word one.
POOL = LONG.split() + "a claim needs receipt and photo".split()
LONG_PAIRS = [
    (" ".join(POOL[(i * 7) % len(POOL)] for i in range(490)), "the warranty covers two years"),
    (" ".join(POOL[(i * 5) % len(POOL)] for i in range(250)), "support answers within one day"),
]


# For the RoBERTa family: a literal `<pad>` inside a text is the pad token (an added special
# token), which RoBERTa's position numbering skips (`create_position_ids_from_input_ids`).
ROBERTA_PAIRS = [("support <pad> answers within one day", "support answers <pad>")]
# Single texts of the embedder: empty, unknown words, a literal `<pad>`, different lengths in one
# batch, and two past the model's 40 tokens (truncated, so the last position is used).
TEXTS = [
    "the refund window is fourteen days from delivery",
    "support",
    "",
    "zebra quokka",
    "The Warranty covers TWO years",
    "support <pad> answers within one day",
    LONG + " a claim needs receipt and photo",
    " ".join(POOL[(i * 7) % len(POOL)] for i in range(50)),
    " ".join(POOL[(i * 3) % len(POOL)] for i in range(38)),
]
ROBERTA_TYPES = ("roberta", "xlm-roberta", "camembert")


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def load(model_dir, auto):
    model, info = auto.from_pretrained(model_dir, output_loading_info=True)
    problems = {k: v for k, v in info.items() if v}
    if problems:
        raise SystemExit(f"{model_dir}: the weights do not match the model: {problems}")
    stored = set(safetensors.torch.load_file(os.path.join(model_dir, "model.safetensors")))
    expected = set(model.state_dict())
    if stored != expected:
        raise SystemExit(
            f"{model_dir}: tensors differ from the state dict: "
            f"extra {sorted(stored - expected)}, missing {sorted(expected - stored)}"
        )
    return model.eval().double()


def run(model_dir):
    tok = tokenizers.Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    model = load(model_dir, AutoModelForSequenceClassification)
    roberta = model.config.model_type in ROBERTA_TYPES
    pairs = PAIRS + (LONG_PAIRS if model.config.max_position_embeddings >= 512 else [])
    pairs += ROBERTA_PAIRS if roberta else []
    encodings = [tok.encode(a, b) for a, b in pairs]
    offset = model.config.pad_token_id + 1 if roberta else 0
    if max(len(e.ids) for e in encodings) > model.config.max_position_embeddings - offset:
        raise SystemExit(f"{model_dir}: a pair is longer than the model's positions")
    rows = []
    with torch.no_grad():
        for e in encodings:
            out = model(
                input_ids=torch.tensor([e.ids]),
                token_type_ids=torch.tensor([e.type_ids]),
                attention_mask=torch.ones(1, len(e.ids), dtype=torch.long),
            )
            rows.append(out.logits[0].tolist())
        # The same pairs padded into one batch: each pair's logits do not change.
        width = max(len(e.ids) for e in encodings)
        pad = lambda xs, v: xs + [v] * (width - len(xs))  # noqa: E731
        pad_id = model.config.pad_token_id
        batch = model(
            input_ids=torch.tensor([pad(e.ids, pad_id) for e in encodings]),
            token_type_ids=torch.tensor([pad(e.type_ids, 0) for e in encodings]),
            attention_mask=torch.tensor([pad([1] * len(e.ids), 0) for e in encodings]),
        ).logits
    drift = (batch - torch.tensor(rows, dtype=torch.float64)).abs().max().item()
    if drift > 1e-9:
        raise SystemExit(f"{model_dir}: padding changed transformers' logits by {drift}")
    return {
        "model_type": model.config.model_type,
        "labels": [model.config.id2label[i] for i in range(model.config.num_labels)],
        "model_safetensors_sha256": sha256(os.path.join(model_dir, "model.safetensors")),
        "pairs": [list(p) for p in pairs],
        "tokens": [len(e.ids) for e in encodings],
        "logits": [[float(f"{x:.9g}") for x in r] for r in rows],
    }


def run_embedder(model_dir):
    tok = tokenizers.Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    model = load(model_dir, AutoModel)
    if model.config.model_type not in ROBERTA_TYPES:
        raise SystemExit(f"{model_dir}: the reference embedder is RoBERTa only")
    max_length = model.config.max_position_embeddings - model.config.pad_token_id - 1
    tok.enable_truncation(max_length)
    encodings = [tok.encode(t) for t in TEXTS]
    if max(len(e.ids) for e in encodings) != max_length:
        raise SystemExit(f"{model_dir}: no text reaches the max length {max_length}")
    vectors = []
    with torch.no_grad():
        for e in encodings:
            hidden = model(
                input_ids=torch.tensor([e.ids]),
                attention_mask=torch.ones(1, len(e.ids), dtype=torch.long),
            ).last_hidden_state[0]
            vectors.append(hidden.mean(dim=0).tolist())
        # The same texts padded into one batch, mean-pooled over the mask as
        # sentence-transformers' Pooling does: each text's vector does not change.
        width = max(len(e.ids) for e in encodings)
        pad = lambda xs, v: xs + [v] * (width - len(xs))  # noqa: E731
        mask = torch.tensor([pad([1] * len(e.ids), 0) for e in encodings], dtype=torch.float64)
        hidden = model(
            input_ids=torch.tensor([pad(e.ids, model.config.pad_token_id) for e in encodings]),
            attention_mask=mask.long(),
        ).last_hidden_state
        pooled = (hidden * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
    drift = (pooled - torch.tensor(vectors, dtype=torch.float64)).abs().max().item()
    if drift > 1e-9:
        raise SystemExit(f"{model_dir}: padding changed transformers' embeddings by {drift}")
    return {
        "model_type": model.config.model_type,
        "max_length": max_length,
        "model_safetensors_sha256": sha256(os.path.join(model_dir, "model.safetensors")),
        "texts": TEXTS,
        "tokens": [len(e.ids) for e in encodings],
        "embeddings": [[float(f"{x:.9g}") for x in v] for v in vectors],
    }


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: classifier_reference.py MODELS_DIR (from write_tiny_models)")
    root = sys.argv[1]
    transformers.utils.logging.disable_progress_bar()
    models = {}
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        config = os.path.join(d, "config.json")
        if os.path.isfile(config):
            with open(config, encoding="utf-8") as f:
                architectures = json.load(f).get("architectures", [])
            models[name] = run_embedder(d) if architectures == ["RobertaModel"] else run(d)
    if not models:
        raise SystemExit(f"no model folders in {root}")
    fixture = {
        "generated_by": "bench/classifier_reference.sh",
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "tokenizers": tokenizers.__version__,
        "python": sys.version.split()[0],
        "models": models,
    }
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote the outputs of {len(models)} models to {os.path.normpath(OUT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
