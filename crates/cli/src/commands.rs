//! Command implementations and the single mapping from errors to exit codes.

use std::io::Write;
use std::path::{Path, PathBuf};

use oloproof_core::case::{load_cases, Case};
use oloproof_core::config::{load_config, ConfigError, ProjectConfig};
use oloproof_core::trace::Trace;
use oloproof_core::verdict::CriterionVerdict;
use oloproof_engine::run::{resume_run, start_run, summarize_stored, RunFlags};
use oloproof_engine::summary::{CacheCounts, RunSummary};
use oloproof_engine::EngineError;
use oloproof_store::{SqliteStore, StoreError};

use crate::cli::{Cli, Command, ConfigLocation, RunArgs, ShowArgs, StoreArgs};
use crate::exit_codes;
use crate::progress::Progress;

/// Everything that can end a command, with its exit code.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Trec(#[from] oloproof_trec::TrecError),
    #[error("cannot write output: {0}")]
    Output(#[from] std::io::Error),
}

impl CliError {
    /// The documented exit code (exhaustive on purpose: a new error must choose one).
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) | CliError::Config(_) | CliError::Trec(_) => exit_codes::USAGE,
            CliError::Store(StoreError::UnknownRun(_)) => exit_codes::USAGE,
            CliError::Store(_) | CliError::Output(_) => exit_codes::INCOMPLETE,
            CliError::Engine(e) => match e {
                EngineError::Config(_)
                | EngineError::Cases(_)
                | EngineError::NotResumable { .. } => exit_codes::USAGE,
                EngineError::Store(StoreError::UnknownRun(_)) => exit_codes::USAGE,
                _ => exit_codes::INCOMPLETE,
            },
        }
    }

    /// The message for stderr (source errors already carry their own `error:` heading).
    pub(crate) fn render(&self) -> String {
        let text = self.to_string();
        let text = text.trim_end();
        if text.starts_with("error:") {
            text.to_string()
        } else {
            format!("error: {text}")
        }
    }
}

pub(crate) fn dispatch(cli: Cli) -> Result<u8, CliError> {
    match cli.command {
        Command::Run(args) => run(args),
        Command::Runs(args) => runs(args),
        Command::Show(args) => show(args),
        Command::Trec(args) => {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            oloproof_trec::cli::run_trec(&args, &mut out)?;
            out.flush()?;
            Ok(exit_codes::SUCCESS)
        }
        Command::Fuse(args) => {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            oloproof_trec::cli::run_fuse(&args, &mut out)?;
            out.flush()?;
            Ok(exit_codes::SUCCESS)
        }
    }
}

/// The config path from `--config`, else `DIR/oloproof.yaml`, else `./oloproof.yaml`.
fn config_path(location: &ConfigLocation, dir: Option<&Path>) -> Result<PathBuf, CliError> {
    if let Some(path) = &location.config {
        return Ok(path.clone());
    }
    let dir = dir
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    if dir.is_file() {
        return Err(CliError::Usage(format!(
            "{} is a file; pass the project folder, or the config with --config {}",
            dir.display(),
            dir.display()
        )));
    }
    let path = dir.join("oloproof.yaml");
    if !path.exists() {
        return Err(CliError::Usage(format!(
            "no oloproof.yaml in {}; pass the project folder (oloproof run DIR) or --config FILE",
            dir.display()
        )));
    }
    Ok(path)
}

fn load(
    location: &ConfigLocation,
    dir: Option<&Path>,
    overrides: &[String],
) -> Result<ProjectConfig, CliError> {
    Ok(load_config(&config_path(location, dir)?, overrides)?)
}

fn print_summary(summary: &RunSummary, json: bool) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(summary).unwrap_or_default()
        )?;
    } else {
        write!(out, "{}", oloproof_report::run_report(summary))?;
    }
    Ok(())
}

fn validate_rate(rate: Option<f64>) -> Result<(), CliError> {
    match rate {
        Some(r) if !(0.0..=1.0).contains(&r) => Err(CliError::Usage(format!(
            "--max-error-rate {r} is not a share; use a value in [0, 1], e.g. 0.05"
        ))),
        _ => Ok(()),
    }
}

fn run(args: RunArgs) -> Result<u8, CliError> {
    validate_rate(args.max_error_rate)?;
    let flags = RunFlags {
        no_cache: args.no_cache,
        max_error_rate: args.max_error_rate,
    };
    let mut progress = Progress::for_terminal();
    let config = load(&args.location, args.dir.as_deref(), &args.overrides)?;
    let outcome = match &args.resume {
        Some(run_id) => resume_run(&config.store_path(), run_id, flags, &mut progress),
        None => {
            let cases: Vec<Case> = load_cases(&config.cases_path()).map_err(EngineError::from)?;
            start_run(&config, &cases, flags, &mut progress)
        }
    };
    progress.finish();
    let outcome = outcome?;
    print_summary(&outcome.summary, args.json)?;
    if outcome.incomplete() {
        let mut err = std::io::stderr().lock();
        writeln!(
            err,
            "error: {} of {} cases ended in an error ({:.1}%), above the allowed {:.1}% (--max-error-rate); exit 4",
            outcome.summary.errors,
            outcome.summary.cases,
            outcome.error_rate * 100.0,
            outcome.max_error_rate * 100.0
        )?;
        return Ok(exit_codes::INCOMPLETE);
    }
    Ok(exit_codes::SUCCESS)
}

fn open_store(location: &ConfigLocation, dir: Option<&Path>) -> Result<SqliteStore, CliError> {
    let config = load(location, dir, &[])?;
    let path = config.store_path();
    if !path.exists() {
        return Err(CliError::Usage(format!(
            "no run store at {} yet; start a run with `oloproof run`",
            path.display()
        )));
    }
    Ok(SqliteStore::open(&path)?)
}

fn runs(args: StoreArgs) -> Result<u8, CliError> {
    let store = open_store(&args.location, args.dir.as_deref())?;
    let runs = store.list_runs()?;
    let mut out = std::io::stdout().lock();
    if args.json {
        let rows: Vec<serde_json::Value> = runs
            .iter()
            .map(|r| {
                serde_json::json!({
                    "id": r.id, "created_ms": r.created_ms, "status": r.status,
                    "cases": r.case_count, "done": r.done_count, "identity": r.identity,
                })
            })
            .collect();
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&rows).unwrap_or_default()
        )?;
    } else {
        write!(out, "{}", oloproof_report::runs_table(&runs))?;
    }
    Ok(exit_codes::SUCCESS)
}

fn show(args: ShowArgs) -> Result<u8, CliError> {
    let store = open_store(&args.location, args.dir.as_deref())?;
    let record = store.run(&args.run_id)?;
    let mut out = std::io::stdout().lock();
    let Some(case_id) = &args.case else {
        let summary = match record
            .summary_json
            .as_deref()
            .and_then(|s| serde_json::from_str::<RunSummary>(s).ok())
        {
            Some(s) => s,
            None => summarize_stored(&store, &record.id, CacheCounts::default())?,
        };
        if args.json {
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&summary).unwrap_or_default()
            )?;
        } else {
            writeln!(
                out,
                "Status: {} · {}/{} cases · config {}",
                record.status, record.done_count, record.case_count, record.config_path
            )?;
            write!(out, "{}", oloproof_report::run_report(&summary))?;
        }
        return Ok(exit_codes::SUCCESS);
    };
    let rows = store.cases(&record.id)?;
    let Some(row) = rows.iter().find(|r| &r.case_id == case_id) else {
        let known: Vec<&str> = rows.iter().map(|r| r.case_id.as_str()).collect();
        let hint = oloproof_core::source::did_you_mean(case_id, known.iter().copied())
            .map(|s| format!("; did you mean `{s}`?"))
            .unwrap_or_default();
        return Err(CliError::Usage(format!(
            "run {} has no case `{case_id}`{hint}",
            record.id
        )));
    };
    let corrupt = |what: &str, source| {
        CliError::Engine(EngineError::Corrupt {
            what: what.to_string(),
            source,
        })
    };
    let case: Case = serde_json::from_str(&row.case_json).map_err(|e| corrupt("case", e))?;
    let trace: Option<Trace> = match &row.trace_json {
        Some(t) => Some(serde_json::from_str(t).map_err(|e| corrupt("trace", e))?),
        None => None,
    };
    let mut verdicts: Vec<CriterionVerdict> = Vec::new();
    for v in store
        .verdicts(&record.id)?
        .into_iter()
        .filter(|v| &v.case_id == case_id)
    {
        verdicts.push(serde_json::from_str(&v.verdict_json).map_err(|e| corrupt("verdict", e))?);
    }
    let settings: serde_json::Value =
        serde_json::from_str(&record.settings_json).unwrap_or_default();
    if let Some(order) = settings
        .pointer("/options/evaluators")
        .and_then(|e| e.as_array())
    {
        let names: Vec<String> = order
            .iter()
            .filter_map(|e| {
                serde_json::from_value::<oloproof_core::config::EvaluatorOptions>(e.clone()).ok()
            })
            .map(|e| e.criterion())
            .collect();
        verdicts.sort_by_key(|v| {
            names
                .iter()
                .position(|n| n == &v.criterion)
                .unwrap_or(usize::MAX)
        });
    }
    if args.json {
        let value = serde_json::json!({"run_id": record.id, "case": case, "trace": trace, "verdicts": verdicts});
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        )?;
    } else {
        write!(
            out,
            "{}",
            oloproof_report::case_report(&record.id, &case, trace.as_ref(), &verdicts)
        )?;
    }
    Ok(exit_codes::SUCCESS)
}
