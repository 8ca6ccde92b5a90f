"""Writes N (reference, hypothesis) sentence pairs as JSONL for bench/metrics.sh.

Deterministic (seed 0): references of 5-30 words from a 2,000-word vocabulary; hypotheses with
about 10% word substitutions, deletions and insertions and some OCR-like character damage.

    python3 bench/gen_text_pairs.py OUT.jsonl N
"""

import json
import random
import sys


def main():
    out, n = sys.argv[1], int(sys.argv[2])
    rng = random.Random(0)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 10))) for _ in range(2000)]
    ocr = {"m": "rn", "o": "0", "l": "1", "e": "c", "i": "l"}
    with open(out, "w", encoding="utf-8") as f:
        for _ in range(n):
            ref = [rng.choice(vocab) for _ in range(rng.randint(5, 30))]
            hyp = []
            for w in ref:
                u = rng.random()
                if u < 0.03:
                    continue
                if u < 0.06:
                    hyp.append(rng.choice(vocab))
                elif u < 0.09:
                    hyp.extend([w, rng.choice(vocab)])
                elif u < 0.12:
                    hyp.append("".join(ocr.get(c, c) for c in w))
                else:
                    hyp.append(w)
            f.write(json.dumps({"reference": " ".join(ref), "hypothesis": " ".join(hyp)}) + "\n")


if __name__ == "__main__":
    main()
