"""sentence-transformers side of bench/embeddings.sh: embeds the lines of a file with
all-MiniLM-L6-v2 at the given batch size and prints one JSON line (model loading excluded
from the time)."""

import json
import sys
import time

import torch
from sentence_transformers import SentenceTransformer


def main() -> None:
    model_dir, path = sys.argv[1], sys.argv[2]
    batch = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    model = SentenceTransformer(model_dir, device="cpu")
    start = time.perf_counter()
    vectors = model.encode(lines, batch_size=batch, convert_to_numpy=True)
    seconds = time.perf_counter() - start
    print(json.dumps({
        "impl": "sentence-transformers",
        "torch_threads": torch.get_num_threads(),
        "sentences": len(vectors),
        "seconds": round(seconds, 3),
        "sentences_per_s": round(len(vectors) / seconds, 1),
        "checksum": round(float(vectors[:, 0].sum()), 6),
    }))


if __name__ == "__main__":
    main()
