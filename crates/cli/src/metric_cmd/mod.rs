//! `oloproof metric NAME --input FILE [options]`: any metric of the library on JSONL files.
//!
//! Each metric is a [`MetricSpec`]: its name, a one-line summary, the JSONL fields it reads
//! (shown by `oloproof metric NAME --help`), its options, and a function from the parsed input
//! to a [`MetricOutput`]. Groups of metrics live in sibling modules and are listed in
//! [`registry`]; the computations themselves are in the pure `oloproof-metrics` crate.

mod answer;
mod classify;
mod ingest;
mod ontology;
mod rag;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::commands::CliError;
use crate::exit_codes;

/// One option of a metric (`--bins 10`).
pub(crate) struct OptionSpec {
    /// Flag name without dashes.
    pub(crate) name: &'static str,
    /// Help text.
    pub(crate) help: &'static str,
    /// Default value, if any.
    pub(crate) default: Option<&'static str>,
}

/// A metric usable from the command line.
pub(crate) struct MetricSpec {
    /// `cer`, `cohen_kappa`, …
    pub(crate) name: &'static str,
    /// One line: what it computes and its reference implementation.
    pub(crate) summary: &'static str,
    /// The JSONL fields, one per line, for `--help`.
    pub(crate) fields: &'static str,
    /// Options besides `--input`, `--per-item`, `--json`.
    pub(crate) options: &'static [OptionSpec],
    /// The computation.
    pub(crate) run: fn(&MetricInput) -> Result<MetricOutput, MetricError>,
}

/// The parsed input of a metric.
#[allow(
    dead_code,
    reason = "accessors for the metric groups; not every group uses each"
)]
pub(crate) struct MetricInput {
    /// The input file as given (for messages).
    pub(crate) path: String,
    /// `(1-based line, object)` for every non-blank line.
    pub(crate) rows: Vec<(usize, Map<String, Value>)>,
    /// Option values (defaults filled in).
    pub(crate) options: BTreeMap<String, String>,
}

#[allow(
    dead_code,
    reason = "accessors for the metric groups; not every group uses each"
)]
impl MetricInput {
    /// The option `name` (present when it has a default or was given).
    pub(crate) fn option(&self, name: &str) -> Option<&str> {
        self.options.get(name).map(String::as_str)
    }

    /// The option `name` parsed, with a located error naming the flag.
    pub(crate) fn parsed<T: std::str::FromStr>(
        &self,
        name: &str,
        what: &str,
    ) -> Result<Option<T>, MetricError> {
        match self.option(name) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| MetricError::usage(format!("--{name} {v}: expected {what}"))),
        }
    }

    /// A string field of a row.
    pub(crate) fn str_field<'a>(
        &self,
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

    /// A numeric field of a row (finite).
    pub(crate) fn f64_field(
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

/// JSON kind names for messages.
pub(crate) fn kind(v: &Value) -> &'static str {
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
#[derive(Default)]
pub(crate) struct MetricOutput {
    /// The headline value.
    pub(crate) value: f64,
    /// Its 95 % interval, where one makes sense.
    pub(crate) interval: Option<[f64; 2]>,
    /// How the interval was computed (`percentile bootstrap, seed 0, 10000 resamples`, …).
    pub(crate) interval_method: Option<String>,
    /// Other named results (counts, per-class tables, …), printed and put in `--json`.
    pub(crate) extra: Map<String, Value>,
    /// One object per input item, for `--per-item`.
    pub(crate) items: Vec<Value>,
}

/// A metric failure: a bad row (located) or a bad option.
#[derive(Debug)]
pub(crate) struct MetricError {
    /// 1-based line of the input, if the error is about a row.
    pub(crate) line: Option<usize>,
    /// The field, if any.
    pub(crate) field: Option<String>,
    /// What is wrong and how to fix it.
    pub(crate) message: String,
}

#[allow(dead_code, reason = "constructors for the metric groups")]
impl MetricError {
    /// An error about `field` on `line`.
    pub(crate) fn at(line: usize, field: &str, message: String) -> Self {
        MetricError {
            line: Some(line),
            field: Some(field.to_string()),
            message,
        }
    }

    /// An error about the options or the input as a whole.
    pub(crate) fn usage(message: String) -> Self {
        MetricError {
            line: None,
            field: None,
            message,
        }
    }
}

/// Every metric, in `--list` order.
pub(crate) fn registry() -> Vec<MetricSpec> {
    let mut all = Vec::new();
    all.extend(answer::metrics());
    all.extend(classify::metrics());
    all.extend(ingest::metrics());
    all.extend(rag::metrics());
    all.extend(ontology::metrics());
    all
}

fn help(spec: &MetricSpec) -> String {
    let mut out = format!("oloproof metric {} — {}\n\nUsage: oloproof metric {} --input FILE.jsonl [--per-item] [--json]", spec.name, spec.summary, spec.name);
    for o in spec.options {
        out.push_str(&format!(" [--{} VALUE]", o.name));
    }
    out.push_str("\n\nInput: one JSON object per line with\n");
    for line in spec.fields.lines() {
        out.push_str(&format!("  {line}\n"));
    }
    out.push_str("\nOptions:\n");
    {
        for o in spec.options {
            let default = o
                .default
                .map(|d| format!(" (default {d})"))
                .unwrap_or_default();
            out.push_str(&format!("  --{:<16} {}{default}\n", o.name, o.help));
        }
    }
    out.push_str("  --per-item         print one row per input item\n  --json             print {\"metric\", \"value\", …} as JSON\n");
    out
}

/// Arguments of `oloproof metric`.
#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub(crate) struct MetricArgs {
    /// The metric (`oloproof metric --list` lists them).
    pub(crate) name: Option<String>,
    /// List every metric.
    #[arg(long)]
    pub(crate) list: bool,
    /// `--input FILE`, `--per-item`, `--json`, `--help` and the metric's own options.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub(crate) rest: Vec<String>,
}

/// Runs `oloproof metric`.
pub(crate) fn metric(args: MetricArgs) -> Result<u8, CliError> {
    let specs = registry();
    let mut out = std::io::stdout().lock();
    let Some(name) = args.name.filter(|n| n != "--help" && n != "-h") else {
        writeln!(
            out,
            "Metrics (oloproof metric NAME --help for the input fields):"
        )?;
        let width = specs.iter().map(|s| s.name.len()).max().unwrap_or(0);
        for s in &specs {
            writeln!(out, "  {:width$}  {}", s.name, s.summary)?;
        }
        return Ok(exit_codes::SUCCESS);
    };
    let Some(spec) = specs.iter().find(|s| s.name == name) else {
        let hint = oloproof_core::source::did_you_mean(&name, specs.iter().map(|s| s.name))
            .map(|s| format!("; did you mean `{s}`?"))
            .unwrap_or_else(|| "; `oloproof metric --list` lists them".to_string());
        return Err(CliError::Usage(format!("unknown metric `{name}`{hint}")));
    };
    let mut input: Option<PathBuf> = None;
    let mut per_item = false;
    let mut json = false;
    let mut options: BTreeMap<String, String> = spec
        .options
        .iter()
        .filter_map(|o| o.default.map(|d| (o.name.to_string(), d.to_string())))
        .collect();
    let mut rest = args.rest.into_iter();
    while let Some(arg) = rest.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |flag: &str| {
            inline
                .clone()
                .or_else(|| rest.next())
                .ok_or_else(|| CliError::Usage(format!("{flag} needs a value")))
        };
        match flag.as_str() {
            "--help" | "-h" => {
                write!(out, "{}", help(spec))?;
                return Ok(exit_codes::SUCCESS);
            }
            "--input" | "-i" => input = Some(PathBuf::from(value("--input")?)),
            "--per-item" => per_item = true,
            "--json" => json = true,
            other => {
                let Some(key) = other.strip_prefix("--") else {
                    return Err(CliError::Usage(format!(
                        "unexpected argument `{other}`; see oloproof metric {name} --help"
                    )));
                };
                if !spec.options.iter().any(|o| o.name == key) {
                    let known: Vec<&str> = spec
                        .options
                        .iter()
                        .map(|o| o.name)
                        .chain(["input", "per-item", "json"])
                        .collect();
                    let hint = oloproof_core::source::did_you_mean(key, known.iter().copied())
                        .map(|s| format!("; did you mean `--{s}`?"))
                        .unwrap_or_else(|| format!("; see oloproof metric {name} --help"));
                    return Err(CliError::Usage(format!(
                        "`{name}` has no option `--{key}`{hint}"
                    )));
                }
                options.insert(key.to_string(), value(other)?);
            }
        }
    }
    let Some(input) = input else {
        return Err(CliError::Usage(format!(
            "oloproof metric {name} needs --input FILE.jsonl (see --help)"
        )));
    };
    let shown = input.display().to_string();
    let text = if shown == "-" {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(&input)
            .map_err(|e| CliError::Usage(format!("cannot read {shown}: {e}")))?
    };
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(map)) => rows.push((i + 1, map)),
            Ok(other) => {
                return Err(CliError::Usage(format!(
                    "{shown}:{}: expected a JSON object, found {}",
                    i + 1,
                    kind(&other)
                )))
            }
            Err(e) => {
                return Err(CliError::Usage(format!(
                    "{shown}:{}:{}: malformed JSON: {}",
                    i + 1,
                    e.column(),
                    e.to_string().split(" at line").next().unwrap_or_default()
                )))
            }
        }
    }
    let parsed = MetricInput {
        path: shown.clone(),
        rows,
        options,
    };
    let result = (spec.run)(&parsed).map_err(|e| {
        let place = match (e.line, &e.field) {
            (Some(l), Some(f)) => format!("{shown}:{l}: field `{f}`: "),
            (Some(l), None) => format!("{shown}:{l}: "),
            _ => String::new(),
        };
        CliError::Usage(format!("{place}{}", e.message))
    })?;
    if !result.value.is_finite() {
        return Err(CliError::Usage(format!(
            "`{name}` is undefined on this input (no items it applies to)"
        )));
    }
    if json {
        let mut obj = Map::new();
        obj.insert("metric".into(), Value::String(name.clone()));
        obj.insert("value".into(), serde_json::json!(result.value));
        if let Some(ci) = result.interval {
            obj.insert("interval".into(), serde_json::json!(ci));
            obj.insert(
                "interval_method".into(),
                serde_json::json!(result.interval_method),
            );
        }
        for (k, v) in &result.extra {
            obj.insert(k.clone(), v.clone());
        }
        if per_item {
            obj.insert("items".into(), Value::Array(result.items.clone()));
        }
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&Value::Object(obj)).unwrap_or_default()
        )?;
        return Ok(exit_codes::SUCCESS);
    }
    let interval = result
        .interval
        .map(|[lo, hi]| {
            format!(
                "  95% [{lo:.4}, {hi:.4}]{}",
                result
                    .interval_method
                    .as_deref()
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default()
            )
        })
        .unwrap_or_default();
    writeln!(out, "{name} = {:.4}{interval}", result.value)?;
    for (k, v) in &result.extra {
        match v {
            Value::Number(n) => writeln!(out, "  {k}: {n}")?,
            Value::String(s) => writeln!(out, "  {k}: {s}")?,
            other => writeln!(out, "  {k}: {other}")?,
        }
    }
    if per_item {
        for item in &result.items {
            writeln!(out, "{item}")?;
        }
    }
    Ok(exit_codes::SUCCESS)
}
