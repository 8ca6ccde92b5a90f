//! Answer-text metrics: exact match and token F1 (SQuAD normalisation), through the per-item
//! adapters of [`super::item`].

use serde_json::json;

use super::item::{self, ItemInput};
use super::{MetricError, MetricInput, MetricOutput, MetricSpec};

pub(crate) fn metrics() -> Vec<MetricSpec> {
    vec![
        MetricSpec {
            name: "exact_match",
            summary: "share of predictions equal to the reference after SQuAD normalisation",
            fields: "prediction: string\nreference: string",
            options: &[],
            run: exact_match,
        },
        MetricSpec {
            name: "token_f1",
            summary: "mean SQuAD token F1 between prediction and reference",
            fields: "prediction: string\nreference: string",
            options: &[],
            run: token_f1,
        },
    ]
}

/// One [`ItemInput`] per row: `prediction` as the answer, `reference` as the only reference.
fn items(input: &MetricInput) -> Result<Vec<ItemInput<'_>>, MetricError> {
    input
        .rows
        .iter()
        .map(|(line, row)| {
            Ok(ItemInput {
                answer: Some(input.str_field(*line, row, "prediction")?),
                references: vec![input.str_field(*line, row, "reference")?],
                ..ItemInput::default()
            })
        })
        .collect()
}

/// The adapter's result, located at the row (never reached: every row has both fields).
fn located<T>(line: usize, r: Result<T, item::ItemError>) -> Result<T, MetricError> {
    r.map_err(|e| MetricError::at(line, "prediction", e.to_string()))
}

fn exact_match(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let mut values = Vec::new();
    for ((line, _), it) in input.rows.iter().zip(items(input)?) {
        values.push(if located(*line, item::exact_match(&it))? {
            1.0
        } else {
            0.0
        });
    }
    let mut out = MetricOutput::mean(&values)?;
    out.items = values.iter().map(|v| json!({"exact_match": v})).collect();
    Ok(out)
}

fn token_f1(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let mut values = Vec::new();
    for ((line, _), it) in input.rows.iter().zip(items(input)?) {
        values.push(located(*line, item::token_f1(&it))?);
    }
    let mut out = MetricOutput::mean(&values)?;
    out.items = values.iter().map(|v| json!({"token_f1": v})).collect();
    Ok(out)
}
