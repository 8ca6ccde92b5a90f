//! Batch metrics: every metric of the library over a list of items (one JSON object per item,
//! as `oloproof metric NAME --input FILE.jsonl` reads them), with its aggregate, its interval
//! and its per-item results.
//!
//! Each metric is a [`MetricSpec`]: its name, a one-line summary, the fields an item has, its
//! options and the function from a [`MetricInput`] to a [`MetricOutput`]. [`registry`] lists
//! them all. This module does no I/O: a file named by an option ([`OptionKind::File`]) is read
//! by the caller and handed in as [`OptionFile`] bytes, and a metric that needs an embedding
//! model gets one through the [`Embedder`] trait.
//!
//! The metrics that also exist as run evaluators over a trace compute their per-item result
//! from the neutral [`item::ItemInput`] (see [`item`]), so both paths share one adapter.
//!
//! ```
//! use oloproof_metrics::batch::{find, MetricInput};
//!
//! let spec = find("token_f1").unwrap();
//! let input = MetricInput::from_json_lines(
//!     "{\"prediction\": \"the cat\", \"reference\": \"a cat\"}\n\
//!      {\"prediction\": \"dog\", \"reference\": \"cat\"}\n",
//! )
//! .unwrap();
//! let out = (spec.run)(&input).unwrap();
//! assert_eq!(out.estimate.value, Some(0.5));
//! ```

mod answer;
mod classify;
mod error;
mod estimate;
mod ingest;
pub mod item;
mod ontology;
mod rag;

use std::collections::BTreeMap;
use std::str::FromStr;

use serde_json::{Map, Value};

pub use error::MetricError;
pub use estimate::{
    bootstrap_statistic, mean, opt, proportion_interval, rate_json, ratio_of_sums_interval,
    Estimate, Interval, MEAN_METHOD, MEAN_RESAMPLES, PAIRED_METHOD, PROPORTION_METHOD,
    RATIO_RESAMPLES,
};

/// What the value of an option is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionKind {
    /// A plain value, parsed by the metric.
    Value,
    /// A path: the caller reads the file and hands its bytes in [`MetricInput::files`].
    File,
    /// A path, or the content itself when the value starts with `{` (an inline JSON object); the
    /// caller reads it only in the first case.
    FileOrInline,
    /// A local embedding-model folder: the caller loads it and hands it in
    /// [`MetricInput::embedder`].
    EmbeddingModel,
}

/// One option of a metric (`--bins 10`).
#[derive(Debug, Clone, Copy)]
pub struct OptionSpec {
    /// Flag name without dashes.
    pub name: &'static str,
    /// Help text.
    pub help: &'static str,
    /// Default value, if any.
    pub default: Option<&'static str>,
    /// What the value is (a plain value, a file, a model).
    pub kind: OptionKind,
}

impl OptionSpec {
    /// A plain-value option.
    pub const fn value(
        name: &'static str,
        help: &'static str,
        default: Option<&'static str>,
    ) -> Self {
        OptionSpec {
            name,
            help,
            default,
            kind: OptionKind::Value,
        }
    }

    /// An option naming a file the caller reads.
    pub const fn file(name: &'static str, help: &'static str) -> Self {
        OptionSpec {
            name,
            help,
            default: None,
            kind: OptionKind::File,
        }
    }
}

/// A metric over a batch of items.
#[derive(Debug, Clone, Copy)]
pub struct MetricSpec {
    /// `cer`, `cohen_kappa`, …
    pub name: &'static str,
    /// One line: what it computes and its reference implementation.
    pub summary: &'static str,
    /// The fields of an item, one per line (for `--help`).
    pub fields: &'static str,
    /// Its options.
    pub options: &'static [OptionSpec],
    /// The computation.
    pub run: fn(&MetricInput) -> Result<MetricOutput, MetricError>,
}

/// The content of a file named by an option, read by the caller.
#[derive(Debug, Clone)]
pub struct OptionFile {
    /// The path as given (for messages).
    pub path: String,
    /// The file's bytes.
    pub bytes: Vec<u8>,
}

/// An embedding model, loaded by the caller (a metric of this crate never loads one).
pub trait Embedder {
    /// One vector per text, in order.
    fn embed(
        &self,
        texts: &[String],
    ) -> Result<Vec<Vec<f32>>, Box<dyn std::error::Error + Send + Sync>>;
}

/// One item: its 1-based line in the input and its JSON object.
pub type Row = (usize, Map<String, Value>);

/// The parsed input of a metric.
#[derive(Default)]
pub struct MetricInput {
    /// `(1-based line, object)` for every item.
    pub rows: Vec<Row>,
    /// Option values by name (defaults filled in by the caller).
    pub options: BTreeMap<String, String>,
    /// The content of the [`OptionKind::File`] (and path-valued [`OptionKind::FileOrInline`])
    /// options that were given, by option name.
    pub files: BTreeMap<String, OptionFile>,
    /// The model of the [`OptionKind::EmbeddingModel`] option, when given.
    pub embedder: Option<Box<dyn Embedder>>,
}

impl std::fmt::Debug for MetricInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricInput")
            .field("rows", &self.rows)
            .field("options", &self.options)
            .field("files", &self.files.keys().collect::<Vec<_>>())
            .field("embedder", &self.embedder.is_some())
            .finish()
    }
}

/// A line of a JSON Lines text that is not a JSON object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JsonLinesError {
    /// The line is not JSON.
    #[error("{line}:{column}: malformed JSON: {message}")]
    Malformed {
        /// 1-based line.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// serde_json's message, without its position.
        message: String,
    },
    /// The line is JSON but not an object.
    #[error("{line}: expected a JSON object, found {found}")]
    NotAnObject {
        /// 1-based line.
        line: usize,
        /// The JSON kind found (`an array`, …).
        found: &'static str,
    },
}

/// The objects of a JSON Lines text with their 1-based line numbers; blank lines are skipped.
pub fn parse_json_lines(text: &str) -> Result<Vec<Row>, JsonLinesError> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(map)) => rows.push((i + 1, map)),
            Ok(other) => {
                return Err(JsonLinesError::NotAnObject {
                    line: i + 1,
                    found: kind(&other),
                })
            }
            Err(e) => {
                let text = e.to_string();
                let message = match text.find(" at line") {
                    Some(at) => text[..at].to_string(),
                    None => text,
                };
                return Err(JsonLinesError::Malformed {
                    line: i + 1,
                    column: e.column(),
                    message,
                });
            }
        }
    }
    Ok(rows)
}

impl MetricInput {
    /// An input of the items of a JSON Lines text, without options.
    pub fn from_json_lines(text: &str) -> Result<Self, JsonLinesError> {
        Ok(MetricInput {
            rows: parse_json_lines(text)?,
            ..MetricInput::default()
        })
    }

    /// The option `name` (present when it has a default or was given).
    pub fn option(&self, name: &str) -> Option<&str> {
        self.options.get(name).map(String::as_str)
    }

    /// The option `name` parsed, with an error naming the flag (`--k x: expected …`).
    pub fn parsed<T: FromStr>(&self, name: &str, what: &str) -> Result<Option<T>, MetricError> {
        match self.option(name) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| MetricError::usage(format!("--{name} {v}: expected {what}"))),
        }
    }

    /// The file of option `name` as text: `(path, text)`; an error when the option was not
    /// given or the file is not UTF-8.
    pub fn file_text(&self, name: &str) -> Result<(&str, &str), MetricError> {
        let file = self.file(name)?;
        let text = std::str::from_utf8(&file.bytes).map_err(|_| {
            MetricError::usage(format!(
                "--{name} {}: cannot read: stream did not contain valid UTF-8",
                file.path
            ))
        })?;
        Ok((&file.path, text))
    }

    /// The file of option `name`; an error when the option was not given.
    pub fn file(&self, name: &str) -> Result<&OptionFile, MetricError> {
        self.files
            .get(name)
            .ok_or_else(|| MetricError::usage(format!("this metric needs --{name} FILE")))
    }

    /// A string field of a row.
    pub fn str_field<'a>(
        &self,
        line: usize,
        row: &'a Map<String, Value>,
        field: &str,
    ) -> Result<&'a str, MetricError> {
        str_field(line, row, field)
    }

    /// A numeric field of a row (finite; a boolean counts as 0 or 1).
    pub fn f64_field(
        &self,
        line: usize,
        row: &Map<String, Value>,
        field: &str,
    ) -> Result<f64, MetricError> {
        match row.get(field) {
            Some(Value::Number(n)) => n.as_f64().filter(|x| x.is_finite()).ok_or_else(|| {
                MetricError::at(line, field, "expected a finite number".to_string())
            }),
            Some(Value::Bool(b)) => Ok(if *b { 1.0 } else { 0.0 }),
            Some(other) => Err(MetricError::at(
                line,
                field,
                format!("expected a number, found {}", kind(other)),
            )),
            None => Err(MetricError::at(line, field, "missing field".to_string())),
        }
    }
}

/// A string field of a row, with a located error.
pub(crate) fn str_field<'a>(
    line: usize,
    row: &'a Map<String, Value>,
    field: &str,
) -> Result<&'a str, MetricError> {
    match row.get(field) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(MetricError::at(
            line,
            field,
            format!("expected a string, found {}", kind(other)),
        )),
        None => Err(MetricError::at(line, field, "missing field".to_string())),
    }
}

/// JSON kind names for messages (`a number`, `an array`, …).
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What a metric produced.
#[derive(Debug, Clone, Default)]
pub struct MetricOutput {
    /// The headline value and its interval.
    pub estimate: Estimate,
    /// Other named results (counts, per-class tables, …), in order.
    pub extra: Map<String, Value>,
    /// One object per input item.
    pub items: Vec<Value>,
}

impl MetricOutput {
    /// An output whose headline is `value`, without an interval.
    pub fn value(value: Option<f64>) -> Self {
        MetricOutput {
            estimate: Estimate::point(value),
            ..MetricOutput::default()
        }
    }

    /// An output of [`Estimate::mean`] of `values`, with `n` (the number of values) in
    /// [`MetricOutput::extra`].
    pub fn mean(values: &[f64]) -> Result<Self, MetricError> {
        let mut out = MetricOutput {
            estimate: Estimate::mean(values)?,
            ..MetricOutput::default()
        };
        out.extra.insert("n".into(), Value::from(values.len()));
        Ok(out)
    }

    /// An output of [`Estimate::proportion`] `k / n`.
    pub fn proportion(k: u64, n: u64) -> Result<Self, MetricError> {
        Ok(MetricOutput {
            estimate: Estimate::proportion(k, n)?,
            ..MetricOutput::default()
        })
    }
}

/// Every metric, in listing order.
pub fn registry() -> Vec<MetricSpec> {
    let mut all = Vec::new();
    all.extend(answer::metrics());
    all.extend(classify::metrics());
    all.extend(ingest::metrics());
    all.extend(rag::metrics());
    all.extend(ontology::metrics());
    all
}

/// The metric called `name`.
pub fn find(name: &str) -> Option<MetricSpec> {
    registry().into_iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_options_known() {
        let specs = registry();
        let mut names: Vec<&str> = specs.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), specs.len());
        for s in &specs {
            for o in s.options {
                assert!(!["input", "per-item", "json", "help"].contains(&o.name));
            }
        }
    }

    #[test]
    fn json_lines_errors_are_located() {
        assert_eq!(
            parse_json_lines("{}\n\n[1]\n").unwrap_err().to_string(),
            "3: expected a JSON object, found an array"
        );
        assert_eq!(
            parse_json_lines("{oops\n").unwrap_err().to_string(),
            "1:2: malformed JSON: key must be a string"
        );
    }

    /// One item has no interval (two of the former copies of the mean gave it [x, x]).
    #[test]
    fn one_item_mean_has_no_interval() {
        let input = MetricInput::from_json_lines("{\"prediction\": \"a\", \"reference\": \"a\"}\n")
            .unwrap();
        let out = (find("token_f1").unwrap().run)(&input).unwrap();
        assert_eq!(out.estimate.value, Some(1.0));
        assert_eq!(out.estimate.interval, None);
    }

    #[test]
    fn empty_input_is_undefined() {
        for name in [
            "token_f1",
            "exact_match",
            "entity_grounding",
            "schema_validity",
        ] {
            let spec = find(name).unwrap();
            let mut input = MetricInput::default();
            input.files.insert(
                "schema".into(),
                OptionFile {
                    path: "s.json".into(),
                    bytes: b"{}".to_vec(),
                },
            );
            let out = (spec.run)(&input).unwrap();
            assert_eq!(out.estimate.value, None, "{name}");
        }
    }
}
