"""Writes the Ragas export fixtures of crates/cli/tests/ragas_files.rs with the real writers.

Run with the test venv (pandas, numpy, pyarrow, datasets, ragas==0.4.3 from
scripts/requirements-*.txt), offline:
    target/venv/bin/python crates/cli/tests/datasets/make_ragas_exports.py

Every file is written by the code that writes it for a Ragas user:
- `ragas.evaluate()` scores the samples with Ragas' non-LLM metrics (`BleuScore`,
  `RougeScore`, `NonLLMContextRecall`, `StringPresence`): those columns are Ragas' own numbers.
- The LLM metrics (`context_precision`, `answer_relevancy`, `faithfulness`, `context_recall`,
  `factual_correctness(mode=f1)`) need a model and a network, so they are NOT computed here:
  their columns are added to `result.to_pandas()` before writing, with fixed numbers and the
  NaN Ragas records for a failed score, under the column names `evaluate()` gives them.
- `result.to_pandas()` is then written by pandas (`to_csv`, `to_json` in two orients), by
  `json.dump(df.to_dict("records"))` and by Ragas' experiment backend (`LocalJSONLBackend`),
  both of which write Python's bare `NaN`; by `datasets.Dataset.from_pandas(...).to_parquet`.
- The samples alone by `EvaluationDataset.to_csv`, `.to_jsonl` and
  `.to_hf_dataset().to_parquet()`.
- The same result after a Parquet round trip (`pd.read_parquet`: list columns are numpy
  arrays, written by `to_csv` as numpy reprs without commas) and with the lists as numpy 2
  scalars (`list(np.array(...))`: `[np.str_('a'), np.str_('b')]` in the CSV).
- amnesty_qa's layout (pre-0.2 names, columns of lists, plural `ground_truths`) by `json.dump`.
"""

import json
import os
import shutil
import tempfile
import warnings

warnings.simplefilter("ignore")
os.environ["RAGAS_DO_NOT_TRACK"] = "true"

import datasets  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from ragas import evaluate  # noqa: E402
from ragas.backends import LocalJSONLBackend  # noqa: E402
from ragas.dataset_schema import EvaluationDataset  # noqa: E402
from ragas.metrics import BleuScore, NonLLMContextRecall, RougeScore, StringPresence  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

SAMPLES = [
    {
        "user_input": "How long do refunds take?",
        "retrieved_contexts": [
            "Refunds are issued within 14 days of delivery.",
            "Shipping is free above 50 euros.",
        ],
        "reference_contexts": ["Refunds are issued within 14 days of delivery."],
        "response": "Refunds are issued within 14 days of delivery.",
        "reference": "Refunds are issued within 14 days of the delivery date.",
    },
    {
        "user_input": "Can I return a gift?",
        "retrieved_contexts": [
            'Gifts can be returned with the "gift receipt".',
            "Opened software can't be returned.\nSee section 4.",
        ],
        "reference_contexts": ['Gifts can be returned with the "gift receipt".'],
        "response": "Yes, gifts can be returned with the gift receipt.",
        "reference": "Gifts are returned with the gift receipt, within 30 days of purchase.",
    },
    {
        "user_input": "Do you ship to Norway?",
        "retrieved_contexts": ["We ship to every EU country.", "Prices include VAT."],
        "reference_contexts": ["Norway: shipping takes 5 to 7 days, customs apply."],
        "response": "I could not find that in our policy documents.",
        "reference": "Yes, to Norway in 5 to 7 days; customs duties apply.",
    },
    {
        "user_input": "Who pays for return shipping?",
        "retrieved_contexts": [
            "Return shipping is paid by the customer unless the item is faulty.",
            "Faulty items are replaced free of charge.",
            "Café orders (Zürich) are not returnable.",
        ],
        "reference_contexts": [
            "Return shipping is paid by the customer unless the item is faulty.",
            "Faulty items are replaced free of charge.",
        ],
        "response": "The customer pays return shipping unless the item is faulty, in which case it is replaced free of charge.",
        "reference": "Return shipping is paid by the customer unless the item is faulty, in which case it is replaced free of charge.",
    },
    {
        "user_input": "Is there a warranty on headphones?",
        "retrieved_contexts": ["Electronics carry a two-year warranty."],
        "reference_contexts": ["Electronics, headphones included, carry a two-year warranty."],
        "response": "Yes, headphones carry the two-year warranty of all electronics.",
        "reference": "Headphones carry a two-year warranty.",
    },
]
# The LLM metrics' columns (not computable offline, see the module doc): a user's numbers,
# NaN where Ragas failed to score a sample.
NAN = float("nan")
LLM_SCORES = {
    "context_precision": [0.9999999999, 0.49999999995, NAN, 0.8333333333, 0.9999999999],
    "answer_relevancy": [0.97, 0.91, 0.12, 0.95, 0.93],
    "faithfulness": [1.0, 0.5, NAN, 1.0, 0.75],
    "context_recall": [1.0, 1.0, 0.0, 1.0, NAN],
    "factual_correctness(mode=f1)": [0.8, 0.4, 0.0, 0.67, 0.5],
}


def path(name):
    return os.path.join(HERE, name)


def main():
    dataset = EvaluationDataset.from_list(SAMPLES)
    result = evaluate(
        dataset,
        metrics=[BleuScore(), RougeScore(), NonLLMContextRecall(), StringPresence()],
        show_progress=False,
        raise_exceptions=True,
    )
    df = result.to_pandas()
    for column, values in LLM_SCORES.items():
        df[column] = values

    # result.to_pandas().to_csv(...): Python list reprs, the unnamed index column.
    df.to_csv(path("ragas_result.csv"))
    # pandas to_json: the default orient (columns) and records.
    df.to_json(path("ragas_result_columns.json"))
    df.to_json(path("ragas_result_records.json"), orient="records", force_ascii=False)
    # json.dump of the records: Python's bare NaN for the failed scores.
    with open(path("ragas_result_dump.json"), "w") as f:
        json.dump(df.to_dict("records"), f)
    # Ragas' experiment backend (plain json.dumps, one compact object a line): NaN again.
    root = tempfile.mkdtemp()
    try:
        LocalJSONLBackend(root).save_experiment("experiment", df.to_dict("records"))
        shutil.copy(os.path.join(root, "experiments", "experiment.jsonl"), path("ragas_experiment.jsonl"))
    finally:
        shutil.rmtree(root)
    # A Hugging Face dataset of the result, as Parquet.
    datasets.Dataset.from_pandas(df).to_parquet(path("ragas_result.parquet"))

    # The samples alone, by Ragas' own writers.
    dataset.to_csv(path("ragas_dataset.csv"))
    dataset.to_jsonl(path("ragas_dataset.jsonl"))
    dataset.to_hf_dataset().to_parquet(path("ragas_dataset.parquet"))

    # The result read back from Parquet: list columns are numpy arrays, whose str() in a CSV
    # cell has no commas (and a newline between long elements).
    arrays = pd.read_parquet(path("ragas_result.parquet"))
    arrays.to_csv(path("ragas_numpy.csv"))
    # Lists of numpy 2 scalars (`list(array)` of a unicode array): `[np.str_('a'), ...]`.
    scalars = arrays.copy()
    for col in ["retrieved_contexts", "reference_contexts"]:
        scalars[col] = scalars[col].map(lambda a: list(np.array(list(a))))
    scalars.to_csv(path("ragas_numpy2.csv"))

    # amnesty_qa's layout: pre-0.2 names, columns of lists, plural ground_truths.
    amnesty = {
        "question": [s["user_input"] for s in SAMPLES],
        "ground_truths": [[s["reference"]] for s in SAMPLES],
        "answer": [s["response"] for s in SAMPLES],
        "contexts": [s["retrieved_contexts"] for s in SAMPLES],
    }
    with open(path("amnesty_qa.json"), "w") as f:
        json.dump(amnesty, f, indent=1)


main()
