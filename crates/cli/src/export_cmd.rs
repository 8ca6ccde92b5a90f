//! `oloproof export RUN --format ragas|trace`: a stored run as a Ragas `EvaluationDataset`
//! (JSONL), or as Oloproof trace JSONL (`core::dataset::trace_record_of`: every stage a
//! pipeline recorded — rewrites, lane retrievals, fusion, predicates, the pre-rerank list,
//! hops, usage, latency — which `run --dataset` reads back).
//!
//! The Ragas format:
//! One line per finished case (cases that ended in an error or are still pending are left out
//! and counted on stderr): `user_input` (the input's `question`, its only string field, or
//! its JSON), `retrieved_contexts` (the texts of the context given to the generator — what
//! Ragas calls retrieved contexts — else of the retrieved candidates), `response` (the answer),
//! `reference` (`expected.answer`) and `reference_contexts` (`expected.gold_context` texts),
//! with the case's `id`, and a `metadata` object carrying the case's metadata and, under the
//! names the Ragas reader takes back, what Ragas has no field for: `expected_behavior`, the
//! system's `behavior`, per-context `retrieved_contexts_metadata` / `reference_contexts_metadata`
//! (`doc_id`, `status`, `corpus_version`; written when a passage has metadata or an id other than
//! its text's) and the human `claims` annotations. `oloproof run --dataset FILE` reads the file
//! back with nothing lost.

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
    /// Oloproof trace JSONL, with every pipeline stage.
    Trace,
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
/// Per-context metadata (`doc_id` plus the passage's own metadata) in the Ragas reader's
/// convention, or `None` when every passage has no metadata and the id the reader would derive
/// from its text anyway.
/// A passage as export writes it: id, text and metadata.
type ContextRef<'a> = (&'a str, &'a str, Option<&'a Map<String, Value>>);

fn contexts_metadata<'a>(passages: impl Iterator<Item = ContextRef<'a>>) -> Option<Value> {
    let mut needed = false;
    let list: Vec<Value> = passages
        .map(|(doc_id, text, metadata)| {
            let mut m = metadata.cloned().unwrap_or_default();
            needed |= !m.is_empty() || doc_id != oloproof_core::dataset::stable_id(text);
            m.insert("doc_id".into(), Value::String(doc_id.to_string()));
            Value::Object(m)
        })
        .collect();
    needed.then_some(Value::Array(list))
}

pub(crate) fn ragas_record(case: &Case, trace: &Trace) -> Value {
    let mut record = Map::new();
    record.insert("id".into(), Value::String(case.id.clone()));
    record.insert("user_input".into(), Value::String(user_input(case)));
    let passages: Vec<&oloproof_core::passage::Passage> = match (&trace.context, &trace.retrieval) {
        (Some(c), _) => c.passages.iter().map(|p| &p.passage).collect(),
        (None, Some(r)) => r.candidates.iter().collect(),
        (None, None) => Vec::new(),
    };
    let with_text: Vec<ContextRef<'_>> = passages
        .iter()
        .filter_map(|p| {
            p.text
                .as_deref()
                .map(|t| (p.doc_id.as_str(), t, p.metadata.as_ref()))
        })
        .collect();
    let contexts: Vec<Value> = with_text
        .iter()
        .map(|(_, t, _)| Value::String(t.to_string()))
        .collect();
    record.insert("retrieved_contexts".into(), Value::Array(contexts));
    let mut metadata = case.metadata.clone();
    if let Some(list) = contexts_metadata(with_text.iter().copied()) {
        metadata.insert("retrieved_contexts_metadata".into(), list);
    }
    if let Some(list) = case.expected.gold_context.as_ref().and_then(|gold| {
        contexts_metadata(
            gold.iter()
                .map(|g| (g.doc_id.as_str(), g.text.as_str(), g.metadata.as_ref())),
        )
    }) {
        metadata.insert("reference_contexts_metadata".into(), list);
    }
    if let Some(b) = case.expected.behavior {
        metadata.insert("expected_behavior".into(), Value::String(b.as_str().into()));
    }
    if let Some(b) = trace.output_field("behavior") {
        metadata.insert("behavior".into(), b.clone());
    }
    if let Some(claims) = trace.claims.as_ref().filter(|c| !c.is_empty()) {
        metadata.insert(
            "claims".into(),
            serde_json::to_value(claims).unwrap_or(Value::Null),
        );
    }
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
    if !metadata.is_empty() {
        record.insert("metadata".into(), Value::Object(metadata));
    }
    Value::Object(record)
}

pub(crate) fn export(args: ExportArgs) -> Result<u8, CliError> {
    let store = open_store(&args.location, args.dir.as_deref())?;
    let run = store.load_run(&args.run_id, &oloproof_engine::run::EngineEvaluators)?;
    let mut text = String::new();
    let mut written = 0usize;
    let mut left_out = 0usize;
    for (case, trace, _) in &run.cases {
        match trace {
            Some(t) if t.error.is_none() => {
                let record = match args.format {
                    ExportFormat::Ragas => ragas_record(case, t),
                    ExportFormat::Trace => oloproof_core::dataset::trace_record_of(case, t),
                };
                text.push_str(&record.to_string());
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
    write!(
        err,
        "Exported {written} case{} of {} as {} JSONL",
        if written == 1 { "" } else { "s" },
        args.run_id,
        match args.format {
            ExportFormat::Ragas => "Ragas",
            ExportFormat::Trace => "trace",
        }
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
        let line = r#"{"id":"row-1","user_input":"q?","retrieved_contexts":["A","B"],"response":"r","reference":"ref","reference_contexts":["B"]}"#;
        let d = oloproof_core::dataset::parse_dataset("d.jsonl", line, None).unwrap();
        let r = &d.records[0];
        let back = ragas_record(&r.case, &r.trace);
        assert_eq!(back, serde_json::from_str::<Value>(line).unwrap());
    }

    /// Rubrex fields (behaviours, passage status and ids, claim annotations) survive an export
    /// and a second read: the second export is identical to the first.
    #[test]
    fn rubrex_fields_survive_the_round_trip() {
        let line = r#"{"id":"refund_window","user_input":"How many days?","retrieved_contexts":["Refunds within 30 days.","Ships in 3 days."],"response":"30 days.","reference":"14 days","reference_contexts":["Refunds within 14 days."],"metadata":{"topic":"refunds","expected_behavior":"answer","behavior":"answer","evidence_condition":"contradictory","retrieved_contexts_metadata":[{"doc_id":"refund-2024","status":"archived","corpus_version":"kb-2024"},{"doc_id":"shipping","status":"current"}],"reference_contexts_metadata":[{"doc_id":"refund-current","status":"current"}],"claims":[{"claim":"Refunds within 30 days.","supported_by":["refund-2024"]}]}}"#;
        let first = oloproof_core::dataset::parse_dataset("d.jsonl", line, None).unwrap();
        let r = &first.records[0];
        let exported = ragas_record(&r.case, &r.trace);
        assert_eq!(exported["id"], "refund_window");
        assert_eq!(
            exported["metadata"]["retrieved_contexts_metadata"][0]["status"],
            "archived"
        );
        let second =
            oloproof_core::dataset::parse_dataset("d.jsonl", &exported.to_string(), None).unwrap();
        let again = &second.records[0];
        assert_eq!(again.case, r.case);
        assert_eq!(again.trace.claims, r.trace.claims);
        assert_eq!(
            again.trace.retrieval.as_ref().unwrap().candidates,
            r.trace.retrieval.as_ref().unwrap().candidates
        );
        assert_eq!(ragas_record(&again.case, &again.trace), exported);
    }
}
