"""Writes a CoNLL-2003-sized NER input for `oloproof metric seqeval` (one JSON line per
sentence: {"true": [tags], "pred": [tags]}): 14,000 sentences, about 300,000 tokens, IOB2 gold
tags over four types and predictions with 5 % of tags replaced (so ill-formed I- tags occur).

usage: gen_ner.py OUT.jsonl [SENTENCES]
"""

import json
import random
import sys

TYPES = ["PER", "LOC", "ORG", "MISC"]


def sentence(rng, n):
    out = []
    while len(out) < n:
        if rng.random() < 0.2:
            t = rng.choice(TYPES)
            for k in range(rng.randint(1, 3)):
                out.append(("B-" if k == 0 else "I-") + t)
        else:
            out.append("O")
    return out[:n]


def main():
    path = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 14000
    rng = random.Random(2003)
    with open(path, "w") as f:
        for _ in range(count):
            gold = sentence(rng, rng.randint(5, 38))
            pred = [
                rng.choice(["O", "B-PER", "I-PER", "B-LOC", "I-ORG"]) if rng.random() < 0.05 else t
                for t in gold
            ]
            f.write(json.dumps({"true": gold, "pred": pred}) + "\n")


if __name__ == "__main__":
    main()
