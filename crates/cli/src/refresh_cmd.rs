//! `oloproof refresh --questions FILE -o dataset.jsonl`: run the configured system over saved
//! questions and write what it did as a Ragas `EvaluationDataset` (seed 003's
//! `refresh_dataset.py`).
//!
//! The questions are either Oloproof's case JSONL (`{"id", "input", "expected", …}`) or Ragas
//! JSONL (`user_input`, optional `reference`, `reference_contexts`, `id`, `metadata` — the
//! tutorial's `eval_questions.jsonl`, or a previous dataset, whose recorded responses and
//! contexts are ignored): the format is read from the first record, and both are validated with
//! located errors before anything runs. The system runs as in `oloproof run` (workers, stage
//! caches, a stored run that can be inspected) but with no evaluators, so no judge is called;
//! each finished case is then written with the `export --format ragas` writer. Cases that end
//! in an error are left out and counted; above `max_error_rate` the command exits 4 (the file
//! is still written with the finished cases).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use oloproof_core::case::{load_cases, Case};
use oloproof_core::dataset::{parse_dataset, DatasetFormat};
use oloproof_engine::run::{start_run, EngineEvaluators, RunFlags};
use oloproof_engine::EngineError;

use crate::cli::ConfigLocation;
use crate::commands::CliError;
use crate::exit_codes;
use crate::progress::Progress;

#[derive(Debug, Args)]
pub(crate) struct RefreshArgs {
    /// Project folder holding oloproof.yaml (default: the current directory).
    pub(crate) dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) location: ConfigLocation,
    /// The saved questions: case JSONL, or Ragas JSONL (`user_input`, `reference`, …).
    #[arg(long, value_name = "FILE")]
    pub(crate) questions: PathBuf,
    /// Write the Ragas dataset here.
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: PathBuf,
    /// Override a config value, e.g. `--set system.rag.top_k=4` (repeatable; wins over the file).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub(crate) overrides: Vec<String>,
    /// Do not read the caches (fresh results are still stored).
    #[arg(long)]
    pub(crate) no_cache: bool,
    /// Largest share of questions that may end in an error before the command exits 4
    /// (default: the config's `max_error_rate`).
    #[arg(long, value_name = "RATE")]
    pub(crate) max_error_rate: Option<f64>,
}

/// Reads the questions as cases: case JSONL when the first record has `input`, else Ragas.
fn read_questions(path: &std::path::Path) -> Result<Vec<Case>, CliError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Usage(format!("cannot read the questions {shown}: {e}")))?;
    let first: Option<serde_json::Value> = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .and_then(|l| serde_json::from_str(l).ok());
    let is_cases = first.as_ref().is_some_and(|v| v.get("input").is_some());
    if is_cases {
        return Ok(load_cases(path).map_err(EngineError::from)?);
    }
    let dataset = parse_dataset(&shown, &text, Some(DatasetFormat::Ragas))
        .map_err(|errors| EngineError::from(oloproof_core::case::CaseFileError::Invalid(errors)))?;
    let cases: Vec<Case> = dataset.records.into_iter().map(|r| r.case).collect();
    if cases.is_empty() {
        return Err(CliError::Usage(format!("{shown} holds no questions")));
    }
    Ok(cases)
}

pub(crate) fn refresh(args: RefreshArgs) -> Result<u8, CliError> {
    if let Some(r) = args.max_error_rate.filter(|r| !(0.0..=1.0).contains(r)) {
        return Err(CliError::Usage(format!(
            "--max-error-rate {r} is not a share; use a value in [0, 1], e.g. 0.05"
        )));
    }
    let mut config = crate::commands::load(&args.location, args.dir.as_deref(), &args.overrides)?;
    if config.options.system.is_none() {
        return Err(CliError::Usage(format!(
            "{} names a recorded dataset, not a system: refresh runs the system under `system:` over the questions",
            config.path.display()
        )));
    }
    let cases = read_questions(&args.questions)?;
    // Only what the system does is needed: no evaluator runs, so no judge is called.
    config.options.evaluators.clear();
    let flags = RunFlags {
        no_cache: args.no_cache,
        max_error_rate: args.max_error_rate,
        max_cost: None,
        detach: false,
    };
    let mut progress = Progress::for_terminal();
    let outcome = start_run(&config, &cases, flags, &mut progress);
    progress.finish();
    let outcome = outcome?;
    let store = oloproof_store::open(&config.store_location())?;
    let run = store.load_run(&outcome.run_id, &EngineEvaluators)?;
    let mut text = String::new();
    let mut written = 0usize;
    let mut left_out = 0usize;
    for (case, trace, _) in &run.cases {
        match trace {
            Some(t) if t.error.is_none() => {
                text.push_str(&crate::export_cmd::ragas_record(case, t).to_string());
                text.push('\n');
                written += 1;
            }
            _ => left_out += 1,
        }
    }
    std::fs::write(&args.output, &text)?;
    let mut err = std::io::stderr().lock();
    write!(
        err,
        "Rebuilt {} with {written} sample{} from {} (run {})",
        args.output.display(),
        if written == 1 { "" } else { "s" },
        args.questions.display(),
        outcome.run_id
    )?;
    if left_out > 0 {
        write!(
            err,
            "; {left_out} question{} ended in an error and {} left out (`oloproof show {} --case ID`)",
            if left_out == 1 { "" } else { "s" },
            if left_out == 1 { "was" } else { "were" },
            outcome.run_id
        )?;
    }
    writeln!(err)?;
    if outcome.incomplete() {
        writeln!(
            err,
            "error: {left_out} of {} questions ended in an error ({:.1}%), above the allowed {:.1}% (--max-error-rate); exit 4",
            run.cases.len(),
            outcome.error_rate * 100.0,
            outcome.max_error_rate * 100.0
        )?;
        return Ok(exit_codes::INCOMPLETE);
    }
    Ok(exit_codes::SUCCESS)
}
