//! `oloproof promote review.jsonl -o golden.jsonl`: the rows of a reviewed queue
//! (`monitor --review-queue`, each `label` filled) that say what the right answer is become
//! golden cases (`oloproof_engine::monitor::promote`): a pass keeps production's answer as the
//! reference and its context as the gold context, a failure takes the reviewer's `reference`.
//! Each case keeps the trace's whole input and metadata, read from the traffic (`--traffic`,
//! else the config's `monitor.traffic`). The file written is read back as a case file before
//! the command says it is done.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use oloproof_core::case::load_cases;
use oloproof_core::dataset::{load_dataset_with, DatasetEncoding, DatasetFormat, ReadOptions};
use oloproof_engine::monitor::promote::{promote, read_reviewed};
use oloproof_engine::EngineError;

use crate::cli::ConfigLocation;
use crate::commands::{config_path, CliError};
use crate::exit_codes;

#[derive(Debug, Args)]
pub(crate) struct PromoteArgs {
    /// The reviewed queue: `monitor --review-queue N -o review.jsonl`, each `label` filled
    /// (1 = should pass, 0 = should fail, or a score), and for a failure the right answer in
    /// `reference`.
    pub(crate) review: PathBuf,
    /// Write the new cases here (case JSONL, as `cases:` reads it).
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: PathBuf,
    /// Add to FILE instead of replacing it; rows whose id is already a case there are left out.
    #[arg(long)]
    pub(crate) append: bool,
    /// The traffic the rows came from (default: the config's `monitor.traffic`): each case's
    /// whole input, metadata and context.
    #[arg(long, value_name = "FILE")]
    pub(crate) traffic: Option<PathBuf>,
    /// A label at or above this is a pass.
    #[arg(long, value_name = "LABEL", default_value_t = 0.5)]
    pub(crate) pass_at: f64,
    /// Project folder holding oloproof.yaml, for `monitor.traffic` (default: the current
    /// directory).
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) location: ConfigLocation,
}

/// The traffic file: `--traffic`, else the config's `monitor.traffic` when there is a config
/// with one (relative to the config's folder); `None` without either.
fn traffic_path(args: &PromoteArgs) -> Result<Option<PathBuf>, CliError> {
    if let Some(t) = &args.traffic {
        return Ok(Some(t.clone()));
    }
    let Ok(path) = config_path(&args.location, args.dir.as_deref()) else {
        return Ok(None);
    };
    if !path.is_file() {
        return Ok(None);
    }
    let config =
        oloproof_engine::project::load_config_for_dataset(&path, &[], Path::new("traffic"))?;
    match config.options.monitor.as_ref().and_then(|m| m.traffic.as_ref()) {
        Some(t) if t == "collected" => Err(CliError::Usage(
            "monitor.traffic is the collect store: write it to a file with `oloproof import --collected -o traffic.jsonl` and give --traffic traffic.jsonl".into(),
        )),
        Some(t) => Ok(Some(config.dir.join(t))),
        None => Ok(None),
    }
}

/// `oloproof promote`.
pub(crate) fn promote_cmd(args: PromoteArgs) -> Result<u8, CliError> {
    if !args.pass_at.is_finite() {
        return Err(CliError::Usage(
            "--pass-at takes the label from which a row is a pass, e.g. 0.5".into(),
        ));
    }
    let rows = read_reviewed(&args.review)?;
    let traffic = match traffic_path(&args)? {
        Some(path) => {
            let read = ReadOptions {
                format: Some(DatasetFormat::Trace),
                encoding: Some(DatasetEncoding::Jsonl),
                max_error_rate: 1.0,
            };
            Some(load_dataset_with(&path, &read).map_err(EngineError::from)?)
        }
        None => None,
    };
    let existing: HashSet<String> = if args.append && args.output.exists() {
        load_cases(&args.output)
            .map_err(EngineError::from)?
            .into_iter()
            .map(|c| c.id)
            .collect()
    } else {
        HashSet::new()
    };
    let promotion = promote(&rows, traffic.as_ref(), &existing, args.pass_at);
    let mut text = String::new();
    for case in &promotion.cases {
        text.push_str(&serde_json::to_string(case).map_err(|source| {
            CliError::Engine(EngineError::Serialise {
                what: format!("case {}", case.id),
                source,
            })
        })?);
        text.push('\n');
    }
    if args.append {
        // A file that does not end its last line gets one first.
        let ends_open = args.output.exists()
            && std::fs::read(&args.output)?
                .last()
                .is_some_and(|c| *c != b'\n');
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&args.output)?;
        if ends_open {
            file.write_all(b"\n")?;
        }
        file.write_all(text.as_bytes())?;
    } else {
        std::fs::write(&args.output, &text)?;
    }
    // What was written is a case file `cases:` reads.
    if !promotion.cases.is_empty() || args.output.exists() {
        load_cases(&args.output).map_err(EngineError::from)?;
    }

    let s = &promotion.summary;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Promoted {} of {} reviewed rows to {}{}: {} pass{} keep production's answer as the reference, {} take{} the reviewer's `reference`",
        s.promoted,
        s.rows,
        args.output.display(),
        if args.append { " (appended)" } else { "" },
        s.kept_answer,
        if s.kept_answer == 1 { "" } else { "es" },
        s.corrected,
        if s.corrected == 1 { "s" } else { "" },
    )?;
    if s.input_from_question > 0 {
        writeln!(
            out,
            "  {} input{} the question alone: the trace is not in the traffic{}",
            s.input_from_question,
            if s.input_from_question == 1 {
                " is"
            } else {
                "s are"
            },
            if traffic.is_none() {
                " (none was read: give --traffic FILE, or run in the project whose monitor.traffic it is)"
            } else {
                ""
            }
        )?;
    }
    if !s.skipped.is_empty() {
        let kinds: Vec<String> = s.skipped.iter().map(|(k, n)| format!("{k} {n}")).collect();
        writeln!(out, "Left out: {}", kinds.join(", "))?;
        for (line, id, reason) in &s.skipped_rows {
            let hint = match reason.as_str() {
                "failed_without_reference" => {
                    " (write the right answer in `reference` to promote it)"
                }
                "no_answer" => " (production gave no answer: write one in `reference`)",
                _ => "",
            };
            writeln!(
                out,
                "  {}:{line}: {id}: {reason}{hint}",
                args.review.display()
            )?;
        }
    }
    Ok(exit_codes::SUCCESS)
}
