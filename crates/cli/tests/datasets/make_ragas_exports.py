"""Writes the Ragas export fixtures of crates/cli/tests/ragas_files.rs with the real libraries.

Run with the test venv (pandas, numpy, pyarrow, ragas==0.4.3 from scripts/requirements-*.txt):
    target/venv/bin/python crates/cli/tests/datasets/make_ragas_exports.py
The scores of the non-LLM metrics are Ragas' own (ragas.metrics, single_turn_ascore);
`faithfulness` stands for an LLM metric a user ran (fixed numbers, one NaN).
"""

import asyncio
import json
import math
import os
import warnings

warnings.simplefilter("ignore")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from ragas.dataset_schema import SingleTurnSample  # noqa: E402
from ragas.metrics import BleuScore, NonLLMContextRecall, RougeScore  # noqa: E402

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
FAITHFULNESS = [1.0, 0.5, float("nan"), 1.0, 0.75]


async def scores():
    bleu, rouge, recall = BleuScore(), RougeScore(), NonLLMContextRecall()
    out = []
    for s in SAMPLES:
        sample = SingleTurnSample(**s)
        out.append(
            {
                "bleu_score": await bleu.single_turn_ascore(sample),
                "rouge_score(mode=fmeasure)": await rouge.single_turn_ascore(sample),
                "non_llm_context_recall": await recall.single_turn_ascore(sample),
            }
        )
    return out


def main():
    rows = [dict(s, faithfulness=f, **sc) for s, f, sc in zip(SAMPLES, FAITHFULNESS, asyncio.run(scores()))]
    df = pd.DataFrame(rows)
    # result.to_pandas().to_csv(...): Python list reprs, the unnamed index column.
    df.to_csv(os.path.join(HERE, "ragas_result.csv"))
    # The same columns as numpy arrays (a DataFrame read from Parquet / a HF dataset): numpy
    # reprs without commas, one element per line when long.
    arrays = df.copy()
    for col in ["retrieved_contexts", "reference_contexts"]:
        arrays[col] = arrays[col].map(np.array)
    arrays.to_csv(os.path.join(HERE, "ragas_numpy.csv"))
    # pandas to_json orients.
    df.to_json(os.path.join(HERE, "ragas_result_columns.json"))
    df.to_json(os.path.join(HERE, "ragas_result_records.json"), orient="records", force_ascii=False)
    # Parquet (pyarrow, snappy), as a HF dataset's.
    df[["user_input", "retrieved_contexts", "reference_contexts", "response", "reference"]].to_parquet(
        os.path.join(HERE, "ragas_dataset.parquet")
    )
    # amnesty_qa's layout: pre-0.2 names, columns of lists, plural ground_truths.
    amnesty = {
        "question": [s["user_input"] for s in SAMPLES],
        "ground_truths": [[s["reference"]] for s in SAMPLES],
        "answer": [s["response"] for s in SAMPLES],
        "contexts": [s["retrieved_contexts"] for s in SAMPLES],
    }
    with open(os.path.join(HERE, "amnesty_qa.json"), "w") as f:
        json.dump(amnesty, f, indent=1)


main()
