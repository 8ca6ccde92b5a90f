"""jiwer side of bench/metrics.sh: reads the JSONL pairs and prints the corpus WER and CER
(default transforms), like `oloproof metric wer` and `oloproof metric cer` (which print one each).

    python bench/metrics_jiwer.py PAIRS.jsonl wer|cer
"""

import json
import sys

import jiwer


def main():
    path, which = sys.argv[1], sys.argv[2]
    refs, hyps = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            refs.append(row["reference"])
            hyps.append(row["hypothesis"])
    value = jiwer.wer(refs, hyps) if which == "wer" else jiwer.cer(refs, hyps)
    print(f"{which} = {value:.6f}")


if __name__ == "__main__":
    main()
