//! `oloproof export RUN --format ragas`: a stored run as a Ragas `EvaluationDataset` (JSONL).
//!
//! One line per finished case (cases that ended in an error or are still pending are left out
//! and counted on stderr): `user_input` (the input's `question`, its only string field, or
//! its JSON), `retrieved_contexts` (the texts of the context given to the generator — what
//! Ragas calls retrieved contexts — else of the retrieved candidates), `response` (the answer),
//! `reference` (`expected.answer`) and `reference_contexts` (`expected.gold_context` texts).
//! `oloproof run --dataset FILE` reads the file back.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use oloproof_core::case::Case;
use oloproof_core::trace::Trace;
use serde_json::{Map, Value};

use crate::cli::ConfigLocation;
use crate::commands::{open_store, CliError};
use crate::exit_codes;

/// Export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ExportFormat {
    /// Ragas `EvaluationDataset` JSONL.
    Ragas,
}

#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// The run to export (`run_…`).
    pub(crate) run_id: String,
    /// The output format.
    #[arg(long, value_enum, default_value = "ragas")]
    pub(crate) format: ExportFormat,
    /// Write to this file (default: stdout).
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Project folder holding oloproof.yaml (default: the current directory).
    #[arg(long)]
    pub(crate) dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) location: ConfigLocation,
}

fn as_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn user_input(case: &Case) -> String {
    if let Some(Value::String(q)) = case.input.get("question") {
        return q.clone();
    }
    let strings: Vec<&String> = case
        .input
        .values()
        .filter_map(|v| match v {
            Value::String(s) => Some(s),
            _ => None,
        })
        .collect();
    match strings.as_slice() {
        [only] if case.input.len() == 1 => (*only).clone(),
        _ => Value::Object(case.input.clone()).to_string(),
    }
}

/// One Ragas record of a finished case.
pub(crate) fn ragas_record(case: &Case, trace: &Trace) -> Value {
    let mut record = Map::new();
    record.insert("user_input".into(), Value::String(user_input(case)));
    let contexts: Vec<Value> = match (&trace.context, &trace.retrieval) {
        (Some(c), _) => c
            .passages
            .iter()
            .filter_map(|p| p.passage.text.clone().map(Value::String))
            .collect(),
        (None, Some(r)) => r
            .candidates
            .iter()
            .filter_map(|p| p.text.clone().map(Value::String))
            .collect(),
        (None, None) => Vec::new(),
    };
    record.insert("retrieved_contexts".into(), Value::Array(contexts));
    record.insert(
        "response".into(),
        trace
            .output_field("answer")
            .map(|a| Value::String(as_text(a)))
            .unwrap_or(Value::Null),
    );
    if let Some(reference) = &case.expected.answer {
        record.insert("reference".into(), Value::String(as_text(reference)));
    }
    if let Some(gold) = &case.expected.gold_context {
        record.insert(
            "reference_contexts".into(),
            Value::Array(gold.iter().map(|g| Value::String(g.text.clone())).collect()),
        );
    }
    Value::Object(record)
}

pub(crate) fn export(args: ExportArgs) -> Result<u8, CliError> {
    let store = open_store(&args.location, args.dir.as_deref())?;
    let run = oloproof_engine::run::load_run(&store, &args.run_id)?;
    let mut text = String::new();
    let mut written = 0usize;
    let mut left_out = 0usize;
    for (case, trace, _) in &run.cases {
        match trace {
            Some(t) if t.error.is_none() => {
                text.push_str(&ragas_record(case, t).to_string());
                text.push('\n');
                written += 1;
            }
            _ => left_out += 1,
        }
    }
    match &args.output {
        Some(path) => std::fs::write(path, &text)?,
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    let mut err = std::io::stderr().lock();
    let ExportFormat::Ragas = args.format;
    write!(
        err,
        "Exported {written} case{} of {} as Ragas JSONL",
        if written == 1 { "" } else { "s" },
        args.run_id
    )?;
    if let Some(path) = &args.output {
        write!(err, " to {}", path.display())?;
    }
    if left_out > 0 {
        write!(
            err,
            " ({left_out} unfinished or failed case{} left out)",
            if left_out == 1 { "" } else { "s" }
        )?;
    }
    writeln!(err)?;
    Ok(exit_codes::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_ragas_record_round_trips() {
        let line = r#"{"user_input":"q?","retrieved_contexts":["A","B"],"response":"r","reference":"ref","reference_contexts":["B"]}"#;
        let d = oloproof_core::dataset::parse_dataset("d.jsonl", line, None).unwrap();
        let r = &d.records[0];
        let back = ragas_record(&r.case, &r.trace);
        assert_eq!(back, serde_json::from_str::<Value>(line).unwrap());
    }
}
