"""Reference for crates/metrics/tests/ontology_reference.rs.

Input on stdin: one JSON object {"cases": [...]}; each case has "edges" ([child, parent] pairs),
"pairs" ([a, b] node names) and "items" ([[predicted names], [true names]]).
Output on stdout: one JSON object per case, one line each:
  {"wup": [float | null per pair], "hier": [overlap, predicted, truth]}

* Wu-Palmer: NLTK's own Synset.wup_similarity (nltk.corpus.reader.wordnet), on Synset objects
  whose hypernyms come from the case's edges instead of WordNet; a root is simulated when the
  taxonomy has more than one parentless node (NLTK's _needs_root, which is True for WordNet's
  verb taxonomy and False for nouns).
* Hierarchical counts (Kosmopoulos et al. 2015): networkx.ancestors on the parent -> child
  DiGraph, each set augmented with its labels, the single root removed.
"""

import json
import sys

import networkx as nx
from nltk.corpus.reader.wordnet import Synset


class Node(Synset):
    def __init__(self, name, needs_root):
        super().__init__(None)
        self._name = name
        self._parents = []
        self._needs = needs_root

    def hypernyms(self):
        return list(self._parents)

    def _hypernyms(self):
        return list(self._parents)

    def instance_hypernyms(self):
        return []

    def _instance_hypernyms(self):
        return []

    def _needs_root(self):
        return self._needs


def run(case):
    graph = nx.DiGraph()
    for child, parent in case["edges"]:
        graph.add_edge(parent, child)
    roots = [n for n in graph.nodes if graph.in_degree(n) == 0]
    needs_root = len(roots) > 1
    nodes = {n: Node(n, needs_root) for n in graph.nodes}
    for child, parent in case["edges"]:
        if nodes[parent] not in nodes[child]._parents:
            nodes[child]._parents.append(nodes[parent])
    wup = [nodes[a].wup_similarity(nodes[b]) for a, b in case["pairs"]]

    single_root = roots[0] if len(roots) == 1 else None

    def augment(labels):
        out = set(labels)
        for label in labels:
            out |= nx.ancestors(graph, label)
        out.discard(single_root)
        return out

    overlap = predicted = truth = 0
    for pred, true in case["items"]:
        p, t = augment(pred), augment(true)
        overlap += len(p & t)
        predicted += len(p)
        truth += len(t)
    return {"wup": wup, "hier": [overlap, predicted, truth]}


def main():
    data = json.load(sys.stdin)
    out = [json.dumps(run(case)) for case in data["cases"]]
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
