//! Answer-text metrics: exact match and token F1 (SQuAD normalisation).

use oloproof_metrics::text;
use serde_json::json;

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

fn pairs(input: &MetricInput) -> Result<Vec<(&str, &str)>, MetricError> {
    input
        .rows
        .iter()
        .map(|(line, row)| {
            Ok((
                input.str_field(*line, row, "prediction")?,
                input.str_field(*line, row, "reference")?,
            ))
        })
        .collect()
}

fn mean_with_interval(values: &[f64]) -> MetricOutput {
    let n = values.len();
    let value = if n == 0 {
        f64::NAN
    } else {
        values.iter().sum::<f64>() / n as f64
    };
    let interval = oloproof_stats::percentile_bootstrap_mean_grouped(values, 10_000, 0, 0.95)
        .ok()
        .map(|ci| [ci.lo, ci.hi]);
    let mut extra = serde_json::Map::new();
    extra.insert("n".into(), json!(n));
    MetricOutput {
        value,
        interval,
        interval_method: interval
            .map(|_| "percentile bootstrap, seed 0, 10000 resamples".to_string()),
        extra,
        items: Vec::new(),
    }
}

fn exact_match(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let pairs = pairs(input)?;
    let values: Vec<f64> = pairs
        .iter()
        .map(|(p, r)| if text::exact_match(p, r) { 1.0 } else { 0.0 })
        .collect();
    let mut out = mean_with_interval(&values);
    out.items = values.iter().map(|v| json!({"exact_match": v})).collect();
    Ok(out)
}

fn token_f1(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let pairs = pairs(input)?;
    let values: Vec<f64> = pairs.iter().map(|(p, r)| text::token_f1(p, r)).collect();
    let mut out = mean_with_interval(&values);
    out.items = values.iter().map(|v| json!({"token_f1": v})).collect();
    Ok(out)
}
