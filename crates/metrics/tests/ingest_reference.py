"""Reference for crates/metrics/tests/ingest_reference.rs (group A of issue 8: ingestion).

Usage: python ingest_reference.py MODE < cases.json > results.json
Each mode reads one JSON document on stdin and writes one JSON document on stdout.

Modes and references:
- error_rate: jiwer 4.0 (process_words / process_characters / wer / cer with their defaults).
- teds: PubTabNet's src/metric.py (TEDS, TEDS-S) transcribed below, with apted 1.0.3 and lxml;
  the `distance` package's levenshtein is replaced by rapidfuzz's (same value on lists).
- lsh_params: datasketch 2.0's MinHashLSH._optimal_param.
- minhash: datasketch 2.0's MinHash Jaccard estimates (statistical check) and exact Jaccard.
- unicode: unicodedata NFC / NFKC.
- similarity: rapidfuzz.distance.Levenshtein.normalized_similarity.
"""

import json
import sys


def error_rate(cases):
    import jiwer

    out = {"pairs": [], "corpus": []}
    for ref, hyp in cases["pairs"]:
        w = jiwer.process_words(ref, hyp)
        c = jiwer.process_characters(ref, hyp)
        out["pairs"].append(
            {
                "words": [w.hits, w.substitutions, w.deletions, w.insertions],
                "chars": [c.hits, c.substitutions, c.deletions, c.insertions],
                "wer": float(w.wer),
                "cer": float(c.cer),
            }
        )
    for batch in cases["corpora"]:
        refs = [cases["pairs"][i][0] for i in batch]
        hyps = [cases["pairs"][i][1] for i in batch]
        out["corpus"].append(
            {"wer": float(jiwer.wer(refs, hyps)), "cer": float(jiwer.cer(refs, hyps))}
        )
    return out


# ---- PubTabNet src/metric.py (Apache-2.0, IBM), transcribed; only `distance` is swapped. ----
def teds_module():
    from collections import deque

    from apted import APTED, Config
    from apted.helpers import Tree
    from lxml import etree, html
    from rapidfuzz.distance import Levenshtein

    class TableTree(Tree):
        def __init__(self, tag, colspan=None, rowspan=None, content=None, *children):
            self.tag = tag
            self.colspan = colspan
            self.rowspan = rowspan
            self.content = content
            self.children = list(children)

    class CustomConfig(Config):
        @staticmethod
        def maximum(*sequences):
            return max(map(len, sequences))

        def normalized_distance(self, *sequences):
            return float(Levenshtein.distance(*sequences)) / self.maximum(*sequences)

        def rename(self, node1, node2):
            if (
                (node1.tag != node2.tag)
                or (node1.colspan != node2.colspan)
                or (node1.rowspan != node2.rowspan)
            ):
                return 1.0
            if node1.tag == "td":
                if node1.content or node2.content:
                    return self.normalized_distance(node1.content, node2.content)
            return 0.0

    class TEDS(object):
        def __init__(self, structure_only=False, ignore_nodes=None):
            self.structure_only = structure_only
            self.ignore_nodes = ignore_nodes
            self.__tokens__ = []

        def tokenize(self, node):
            self.__tokens__.append("<%s>" % node.tag)
            if node.text is not None:
                self.__tokens__ += list(node.text)
            for n in node.getchildren():
                self.tokenize(n)
            if node.tag != "unk":
                self.__tokens__.append("</%s>" % node.tag)
            if node.tag != "td" and node.tail is not None:
                self.__tokens__ += list(node.tail)

        def load_html_tree(self, node, parent=None):
            if node.tag == "td":
                if self.structure_only:
                    cell = []
                else:
                    self.__tokens__ = []
                    self.tokenize(node)
                    cell = self.__tokens__[1:-1].copy()
                new_node = TableTree(
                    node.tag,
                    int(node.attrib.get("colspan", "1")),
                    int(node.attrib.get("rowspan", "1")),
                    cell,
                    *deque(),
                )
            else:
                new_node = TableTree(node.tag, None, None, None, *deque())
            if parent is not None:
                parent.children.append(new_node)
            if node.tag != "td":
                for n in node.getchildren():
                    self.load_html_tree(n, new_node)
            if parent is None:
                return new_node

        def evaluate(self, pred, true):
            if (not pred) or (not true):
                return 0.0
            parser = html.HTMLParser(remove_comments=True, encoding="utf-8")
            # teds.py writes `html.fromstring(pred, parser)`, which passes the parser as
            # `base_url` (the second positional parameter); current lxml rejects that, so the
            # evident intent is spelled out with a keyword.
            pred = html.fromstring(pred, parser=parser)
            true = html.fromstring(true, parser=parser)
            if pred.xpath("body/table") and true.xpath("body/table"):
                pred = pred.xpath("body/table")[0]
                true = true.xpath("body/table")[0]
                if self.ignore_nodes:
                    etree.strip_tags(pred, *self.ignore_nodes)
                    etree.strip_tags(true, *self.ignore_nodes)
                n_nodes_pred = len(pred.xpath(".//*"))
                n_nodes_true = len(true.xpath(".//*"))
                n_nodes = max(n_nodes_pred, n_nodes_true)
                tree_pred = self.load_html_tree(pred)
                tree_true = self.load_html_tree(true)
                distance = APTED(tree_pred, tree_true, CustomConfig()).compute_edit_distance()
                return 1.0 - (float(distance) / n_nodes)
            else:
                return 0.0

    return TEDS


def teds(cases):
    TEDS = teds_module()
    full, structure = TEDS(), TEDS(structure_only=True)
    return [
        [full.evaluate(p, t), structure.evaluate(p, t)] for p, t in cases["pairs"]
    ]


def lsh_params(cases):
    from datasketch.lsh import _optimal_param

    return [list(_optimal_param(t, n, 0.5, 0.5)) for t, n in cases["params"]]


def minhash(cases):
    from datasketch import MinHash

    out = []
    for a, b in cases["pairs"]:
        sa, sb = set(a), set(b)
        ma, mb = MinHash(num_perm=cases["num_perm"]), MinHash(num_perm=cases["num_perm"])
        for s in sa:
            ma.update(s.encode("utf-8"))
        for s in sb:
            mb.update(s.encode("utf-8"))
        exact = len(sa & sb) / len(sa | sb) if sa | sb else 1.0
        out.append([exact, float(ma.jaccard(mb))])
    return out


def unicode(cases):
    import unicodedata

    return [
        unicodedata.normalize("NFC", t) == unicodedata.normalize("NFKC", t)
        for t in cases["texts"]
    ]


def similarity(cases):
    from rapidfuzz.distance import Levenshtein

    return [float(Levenshtein.normalized_similarity(a, b)) for a, b in cases["pairs"]]


def exact_floats(x):
    """Floats travel as repr strings: serde_json's default parser is not correctly rounded."""
    if isinstance(x, float):
        return repr(x)
    if isinstance(x, list):
        return [exact_floats(v) for v in x]
    if isinstance(x, dict):
        return {k: exact_floats(v) for k, v in x.items()}
    return x


def main():
    mode = sys.argv[1]
    cases = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    result = globals()[mode](cases)
    sys.stdout.write(json.dumps(exact_floats(result)))


if __name__ == "__main__":
    main()
