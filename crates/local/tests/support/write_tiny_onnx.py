"""Writes a tiny ONNX sequence-pair classifier and its reference logits (tests/onnx.rs).

Usage: write_tiny_onnx.py DIR, with a JSON request on stdin:

    {"labels": ["contradiction", "entailment", "neutral"], "token_type_ids": true,
     "seed": 7, "vocab": 34, "rows": [{"ids": [2, 5, 3], "type_ids": [0, 0, 0]}, ...],
     "kind": "classifier"}

Writes DIR/model.onnx (built with onnx.helper) and DIR/config.json (id2label, pad_token_id 0),
then DIR/reference_logits.json: {"logits": [[...], ...]}, one row per request row, computed by
onnx.reference.ReferenceEvaluator one row at a time, unpadded (attention mask all ones).
The tokenizer.json is written by the Rust test.

The graph is small but depends on every input the way a BERT classifier does:

    h[b, s]  = word[input_ids] + position[s] (+ token_type[token_type_ids])
    pooled   = sum_s(mask * h) / sum_s(mask)           (a padding mistake changes it)
    logits   = tanh(pooled @ dense + dense_b) @ classifier + classifier_b   -> [batch, labels]

with dynamic `batch` and `sequence` axes, opset 17. `"kind": "not_a_classifier"` writes instead
a graph with one float input `pixel_values` [batch, 3] and output `probs` [batch, 3, 1].
"""

import json
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

HIDDEN = 8
MAX_POSITIONS = 64
OPSET = 17
IR_VERSION = 8


def classifier_graph(vocab, n_labels, with_type_ids, rng):
    def weight(name, shape):
        return numpy_helper.from_array(rng.normal(0.0, 0.5, shape).astype(np.float32), name)

    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"])
    mask = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"])
    types = helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["batch", "sequence"])
    logits = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", n_labels])
    inits = [
        weight("word", (vocab, HIDDEN)),
        weight("position", (MAX_POSITIONS, HIDDEN)),
        weight("token_type", (2, HIDDEN)),
        weight("dense", (HIDDEN, HIDDEN)),
        weight("dense_b", (HIDDEN,)),
        weight("classifier", (HIDDEN, n_labels)),
        weight("classifier_b", (n_labels,)),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
        numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"),
        numpy_helper.from_array(np.array(1, dtype=np.int64), "one"),
        numpy_helper.from_array(np.array(1, dtype=np.int64), "seq_dim"),
    ]
    n = helper.make_node
    nodes = [
        n("Gather", ["word", "input_ids"], ["word_h"]),
        # Positions 0..sequence-1, broadcast over the batch.
        n("Shape", ["input_ids"], ["ids_shape"]),
        n("Gather", ["ids_shape", "seq_dim"], ["seq_len"], axis=0),
        n("Range", ["zero", "seq_len", "one"], ["positions"]),
        n("Gather", ["position", "positions"], ["pos_h"]),
        n("Add", ["word_h", "pos_h"], ["wp_h"]),
    ]
    if with_type_ids:
        nodes += [
            n("Gather", ["token_type", "token_type_ids"], ["type_h"]),
            n("Add", ["wp_h", "type_h"], ["h"]),
        ]
    else:
        nodes.append(n("Identity", ["wp_h"], ["h"]))
    nodes += [
        n("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        n("Unsqueeze", ["mask_f", "two"], ["mask_3"]),
        n("Mul", ["h", "mask_3"], ["masked"]),
        n("ReduceSum", ["masked", "axis1"], ["summed"], keepdims=0),
        n("ReduceSum", ["mask_f", "axis1"], ["count"], keepdims=1),
        n("Div", ["summed", "count"], ["pooled"]),
        n("MatMul", ["pooled", "dense"], ["dense_mm"]),
        n("Add", ["dense_mm", "dense_b"], ["dense_out"]),
        n("Tanh", ["dense_out"], ["dense_act"]),
        n("MatMul", ["dense_act", "classifier"], ["cls_mm"]),
        n("Add", ["cls_mm", "classifier_b"], ["logits"]),
    ]
    inits.append(numpy_helper.from_array(np.array([2], dtype=np.int64), "two"))
    inputs = [ids, mask] + ([types] if with_type_ids else [])
    return helper.make_graph(nodes, "tiny_pair_classifier", inputs, [logits], inits)


def not_a_classifier_graph():
    x = helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, ["batch", 3])
    y = helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 3, 1])
    axes = numpy_helper.from_array(np.array([2], dtype=np.int64), "axes")
    node = helper.make_node("Unsqueeze", ["pixel_values", "axes"], ["probs"])
    return helper.make_graph([node], "not_a_classifier", [x], [y], [axes])


def main():
    out = Path(sys.argv[1])
    request = json.load(sys.stdin)
    labels = request["labels"]
    with_type_ids = request.get("token_type_ids", True)
    kind = request.get("kind", "classifier")
    rng = np.random.default_rng(request.get("seed", 0))
    if kind == "classifier":
        graph = classifier_graph(request["vocab"], len(labels), with_type_ids, rng)
    elif kind == "not_a_classifier":
        graph = not_a_classifier_graph()
    else:
        raise SystemExit(f"unknown kind {kind!r}")
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="oloproof-tests",
    )
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    out.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(out / "model.onnx"))
    config = {
        "architectures": ["BertForSequenceClassification"],
        "model_type": "bert",
        "pad_token_id": 0,
        "max_position_embeddings": MAX_POSITIONS,
        "id2label": {str(i): label for i, label in enumerate(labels)},
        "label2id": {label: i for i, label in enumerate(labels)},
    }
    (out / "config.json").write_text(json.dumps(config, indent=2))

    logits = []
    if kind == "classifier":
        evaluator = ReferenceEvaluator(model)
        for row in request.get("rows", []):
            feeds = {
                "input_ids": np.array([row["ids"]], dtype=np.int64),
                "attention_mask": np.ones((1, len(row["ids"])), dtype=np.int64),
            }
            if with_type_ids:
                feeds["token_type_ids"] = np.array([row["type_ids"]], dtype=np.int64)
            (result,) = evaluator.run(None, feeds)
            assert result.shape == (1, len(labels)), result.shape
            logits.append([float(v) for v in result[0]])
    (out / "reference_logits.json").write_text(json.dumps({"logits": logits}))


if __name__ == "__main__":
    main()
