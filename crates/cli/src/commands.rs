//! Command implementations and the single mapping from errors to exit codes.

use std::io::Write;
use std::path::{Path, PathBuf};

use oloproof_core::case::{load_cases, Case};
use oloproof_core::config::{ConfigError, ProjectConfig};
use oloproof_core::dataset::{load_dataset_with, DatasetEncoding, DatasetFormat, ReadOptions};
use oloproof_core::store::{Store, StoreLocation};
use oloproof_core::summary::{CacheCounts, RunSummary};
use oloproof_engine::project::{load_config, RunOverrides};
use oloproof_engine::recorded::start_recorded_run;
use oloproof_engine::run::{resume_run, start_run, summarize_stored, EngineEvaluators, RunFlags};
use oloproof_engine::EngineError;
use oloproof_store::StoreError;

use crate::cli::{
    CalibrateArgs, Cli, Command, ConfigLocation, DiagnoseArgs, InspectArgs, InterventionArg,
    LostInTheMiddleArgs, RunArgs, ShowArgs, StoreArgs,
};
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
            CliError::Store(e) if e.is_usage() => exit_codes::USAGE,
            CliError::Store(_) | CliError::Output(_) => exit_codes::INCOMPLETE,
            CliError::Engine(e) => match e {
                EngineError::Config(_)
                | EngineError::Cases(_)
                | EngineError::NotResumable { .. }
                | EngineError::Usage(_) => exit_codes::USAGE,
                EngineError::Store(e) if e.is_usage() => exit_codes::USAGE,
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
        Command::Diagnose(args) => diagnose(args),
        Command::Inspect(args) => inspect(args),
        Command::Compare(args) => crate::compare_cmd::compare(args),
        Command::Calibrate(args) => calibrate(args),
        Command::LostInTheMiddle(args) => lost_in_the_middle(args),
        Command::Metric(args) => crate::metric_cmd::metric(args),
        Command::Export(args) => crate::export_cmd::export(args),
        Command::Import(args) => crate::import_cmd::import(args),
        Command::History(args) => crate::history_cmd::history(args),
        Command::Gate(args) => crate::gate_cmd::gate(args),
        Command::Refresh(args) => crate::refresh_cmd::refresh(args),
        Command::Generate(args) => crate::generate_cmd::generate(args),
        Command::View(args) => crate::view_cmd::view(args),
        Command::Report(args) => crate::report_cmd::report(args),
        Command::Worker(args) => crate::worker_cmd::worker(args),
        Command::Store(args) => crate::store_cmd::store(args),
        Command::Collect(args) => crate::collect_cmd::collect(args),
        Command::Monitor(args) => crate::monitor_cmd::monitor_cmd(args),
        Command::Promote(args) => crate::promote_cmd::promote_cmd(args),
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
pub(crate) fn config_path(
    location: &ConfigLocation,
    dir: Option<&Path>,
) -> Result<PathBuf, CliError> {
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

pub(crate) fn load(
    location: &ConfigLocation,
    dir: Option<&Path>,
    overrides: &[String],
) -> Result<ProjectConfig, CliError> {
    let mut config = load_config(&config_path(location, dir)?, overrides)?;
    location.apply_store(&mut config)?;
    Ok(config)
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

pub(crate) fn validate_rate(rate: Option<f64>) -> Result<(), CliError> {
    match rate {
        Some(r) if !(0.0..=1.0).contains(&r) => Err(CliError::Usage(format!(
            "--max-error-rate {r} is not a share; use a value in [0, 1], e.g. 0.05"
        ))),
        _ => Ok(()),
    }
}

fn run(args: RunArgs) -> Result<u8, CliError> {
    validate_rate(args.max_error_rate)?;
    if args.max_cost.is_some_and(|c| !(c.is_finite() && c >= 0.0)) {
        return Err(CliError::Usage(
            "--max-cost takes a non-negative amount of dollars, e.g. 2.50".into(),
        ));
    }
    let flags = RunFlags {
        no_cache: args.no_cache,
        max_error_rate: args.max_error_rate,
        max_cost: args.max_cost,
        detach: args.detach,
    };
    if args.detach && (args.resume.is_some() || args.dataset.is_some()) {
        return Err(CliError::Usage(
            "--detach records a new run of the system for `oloproof worker` processes to execute; \
             it does not combine with --resume or --dataset"
                .into(),
        ));
    }
    let mut progress = Progress::for_terminal();
    let mut config = match &args.dataset {
        Some(file) => oloproof_engine::project::load_config_for_dataset(
            &config_path(&args.location, args.dir.as_deref())?,
            &args.overrides,
            &std::path::absolute(file)?,
        )
        .map_err(CliError::from)
        .and_then(|mut config| {
            args.location.apply_store(&mut config)?;
            Ok(config)
        })?,
        None => load(&args.location, args.dir.as_deref(), &args.overrides)?,
    };
    RunOverrides {
        sample: args.sample,
        seed: args.seed,
        repeats: args.repeats,
        threads: args.threads,
    }
    .apply(&mut config)
    .map_err(|e| CliError::Usage(e.to_string()))?;
    if args.dry_run {
        return dry_run(&config);
    }
    // Ctrl-C / SIGTERM from here on: the run is marked interrupted, with how to resume.
    crate::interrupt::watch(config.store_location());
    let sample = config.options.sample.filter(|_| args.resume.is_none());
    let mut sample_line = None;
    let mut take_sample = |ids: Vec<&str>| -> std::collections::HashSet<String> {
        let Some(sample) = sample else {
            return ids.into_iter().map(str::to_string).collect();
        };
        let chosen = oloproof_engine::run::sample_case_ids(ids.iter().copied(), sample);
        sample_line = Some(format!(
            "Sample: {} of {} cases, seed {} (chosen from the case ids, so reordering the case file keeps them)",
            chosen.len(),
            ids.len(),
            sample.seed
        ));
        chosen
    };
    let outcome = match &args.resume {
        Some(run_id) => resume_run(&config.store_location(), run_id, flags, &mut progress),
        None => match config.dataset_path() {
            Some(path) => {
                use crate::cli::DatasetFormatArg as F;
                let (format, encoding) = match args.dataset_format {
                    None => (None, None),
                    Some(F::Ragas) => (Some(DatasetFormat::Ragas), Some(DatasetEncoding::Jsonl)),
                    Some(F::Trace) => (Some(DatasetFormat::Trace), Some(DatasetEncoding::Jsonl)),
                    Some(F::Jsonl) => (None, Some(DatasetEncoding::Jsonl)),
                    Some(F::Json | F::HfJson) => (None, Some(DatasetEncoding::Json)),
                    Some(F::Csv) => (None, Some(DatasetEncoding::Csv)),
                    Some(F::Parquet) => (None, Some(DatasetEncoding::Parquet)),
                };
                let read = ReadOptions {
                    format,
                    encoding,
                    max_error_rate: args.max_error_rate.unwrap_or(config.options.max_error_rate),
                };
                let mut dataset = load_dataset_with(&path, &read).map_err(EngineError::from)?;
                let chosen =
                    take_sample(dataset.records.iter().map(|r| r.case.id.as_str()).collect());
                dataset.records.retain(|r| chosen.contains(&r.case.id));
                let mut err = std::io::stderr().lock();
                for warning in &dataset.warnings {
                    writeln!(err, "warning: {warning}")?;
                }
                for skipped in &dataset.skipped {
                    write!(err, "warning: row skipped: {skipped}")?;
                }
                if !dataset.external_scores.is_empty() {
                    writeln!(
                        err,
                        "note: {} score column{} read as external scores, compared with the matching criteria in the summary: {}",
                        dataset.external_scores.len(),
                        if dataset.external_scores.len() == 1 { "" } else { "s" },
                        dataset.external_scores.join(", ")
                    )?;
                }
                drop(err);
                start_recorded_run(&config, dataset, flags, &mut progress)
            }
            None => {
                let mut cases: Vec<Case> =
                    load_cases(&config.cases_path()).map_err(EngineError::from)?;
                let chosen = take_sample(cases.iter().map(|c| c.id.as_str()).collect());
                cases.retain(|c| chosen.contains(&c.id));
                start_run(&config, &cases, flags, &mut progress)
            }
        },
    };
    progress.finish();
    let outcome = outcome?;
    if args.detach {
        return crate::worker_cmd::print_detached(&outcome, &config.store_location(), args.json);
    }
    if let Some(line) = &sample_line {
        if args.json {
            writeln!(std::io::stderr().lock(), "{line}")?;
        } else {
            writeln!(std::io::stdout().lock(), "{line}")?;
        }
    }
    print_summary(&outcome.summary, args.json)?;
    if outcome.summary.done == outcome.summary.cases {
        if let Some(path) = crate::history_cmd::history_path(args.history.as_deref(), Some(&config))
        {
            crate::history_cmd::append_after_run(
                &config.store_location(),
                &outcome.run_id,
                &path,
                &config.dir,
            )?;
        }
    }
    if outcome.summary.done < outcome.summary.cases {
        let mut err = std::io::stderr().lock();
        writeln!(
            err,
            "error: stopped before the end ({} of {} cases){}; resume with `oloproof run --resume {}`; exit 4",
            outcome.summary.done,
            outcome.summary.cases,
            args.max_cost.map(|c| format!(" at the cost cap of ${c:.2}")).unwrap_or_default(),
            outcome.run_id
        )?;
        return Ok(exit_codes::INCOMPLETE);
    }
    if outcome.incomplete() {
        write_incomplete(&outcome)?;
        return Ok(exit_codes::INCOMPLETE);
    }
    Ok(exit_codes::SUCCESS)
}

/// Says on stderr why a finished run is incomplete (exit 4): system errors above
/// `--max-error-rate`, and each criterion missing on more than that share of its cases.
pub(crate) fn write_incomplete(outcome: &oloproof_engine::run::RunOutcome) -> std::io::Result<()> {
    let mut err = std::io::stderr().lock();
    if outcome.error_rate > outcome.max_error_rate {
        writeln!(
            err,
            "error: {} of {} cases ended in an error ({:.1}%), above the allowed {:.1}% (--max-error-rate); exit 4",
            outcome.summary.errors,
            outcome.summary.cases,
            outcome.error_rate * 100.0,
            outcome.max_error_rate * 100.0
        )?;
    }
    for c in &outcome.summary.incomplete_criteria {
        writeln!(
            err,
            "error: criterion `{}` is missing on {} of {} cases ({:.1}%), above the allowed {:.1}% (--max-error-rate): a missing verdict (a judge that failed, an error) is never a pass; `oloproof show {} --case ID` shows why; exit 4",
            c.criterion,
            c.missing,
            c.cases,
            c.share() * 100.0,
            c.max_error_rate * 100.0,
            outcome.run_id
        )?;
    }
    Ok(())
}

/// The run store (which may not exist yet): `--store`, else the `store:` of the config found
/// from `--config`, a project folder or the current directory. Only the config's `store:` is
/// read: a folder whose config has neither `system:` nor `dataset:` (after `run --dataset`
/// from it) still has runs to show.
pub(crate) fn store_location(
    location: &ConfigLocation,
    dir: Option<&Path>,
) -> Result<StoreLocation, CliError> {
    if let Some(store) = location.store_flag()? {
        return Ok(store);
    }
    Ok(oloproof_core::config::store_location_of(&config_path(
        location, dir,
    )?)?)
}

/// An existing run store (see [`store_location`]): a SQLite file that is not there yet is a
/// usage error.
pub(crate) fn existing_store(
    location: &ConfigLocation,
    dir: Option<&Path>,
) -> Result<StoreLocation, CliError> {
    let store = store_location(location, dir)?;
    if !oloproof_store::exists(&store) {
        return Err(CliError::Usage(format!(
            "no run store at {store} yet; start a run with `oloproof run`"
        )));
    }
    Ok(store)
}

/// The existing run store (see [`existing_store`]).
pub(crate) fn open_store(
    location: &ConfigLocation,
    dir: Option<&Path>,
) -> Result<Box<dyn Store>, CliError> {
    Ok(oloproof_store::open(&existing_store(location, dir)?)?)
}

/// Refuses (exit 2) a policy that decides on a judged criterion of `run` whose judge has no
/// passing calibration (`oloproof calibrate`): `what` says which policy (`the policy gates
/// on`, `the gate's threshold is on`).
pub(crate) fn refuse_uncalibrated(
    store: &dyn Store,
    run: &oloproof_core::run::LoadedRun,
    criteria: &[String],
    what: &str,
) -> Result<(), CliError> {
    let uncalibrated = oloproof_engine::calibrate::uncalibrated(store, run, criteria)?;
    match uncalibrated.first() {
        Some((criterion, judge, reason)) => Err(CliError::Usage(format!(
            "{what} `{criterion}`, scored by judge `{judge}`, but {reason}; \
             run `oloproof calibrate --judge {judge} --evaluator <type> --labels human.jsonl` \
             with `calibration.{judge}.min_kappa` declared in oloproof.yaml, or gate on another criterion"
        ))),
        None => Ok(()),
    }
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
                    "parent": r.parent,
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
    let record = store.run(&args.run_id.as_str().into())?;
    let mut out = std::io::stdout().lock();
    let Some(case_id) = &args.case else {
        let summary = match record
            .summary_json
            .as_deref()
            .and_then(|s| serde_json::from_str::<RunSummary>(s).ok())
        {
            Some(s) => s,
            None => summarize_stored(store.as_ref(), &record.id, CacheCounts::default())?,
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
    // The one case, read by the store's loader (the run's other cases are not decoded).
    let mut known: Vec<String> = Vec::new();
    let run = store.load_run_with(
        &record.id,
        &EngineEvaluators,
        |id| {
            known.push(id.to_string());
            id == case_id
        },
        |_| {},
    )?;
    let order: Vec<&str> = run.criteria.iter().map(|(c, _)| c.as_str()).collect();
    let Some((case, trace, mut verdicts)) = run.cases.first().cloned() else {
        let hint = oloproof_core::source::did_you_mean(case_id, known.iter().map(String::as_str))
            .map(|s| format!("; did you mean `{s}`?"))
            .unwrap_or_default();
        return Err(CliError::Usage(format!(
            "run {} has no case `{case_id}`{hint}",
            record.id
        )));
    };
    // In evaluator order.
    verdicts.sort_by_key(|v| {
        order
            .iter()
            .position(|n| *n == v.criterion)
            .unwrap_or(usize::MAX)
    });
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

fn diagnose(args: DiagnoseArgs) -> Result<u8, CliError> {
    use oloproof_core::diagnosis::InterventionKind;
    let need = |value: Option<usize>, flag: &str| {
        value.filter(|v| *v > 0).ok_or_else(|| {
            CliError::Usage(format!(
                "--intervention {} needs {flag} N (a positive integer)",
                flag.trim_start_matches("--")
            ))
        })
    };
    let kind = match args.intervention.clone() {
        InterventionArg::GoldContext => InterventionKind::GoldContext,
        InterventionArg::TopK => InterventionKind::TopK {
            top_k: need(args.top_k, "--top-k")?,
        },
        InterventionArg::TokenBudget => InterventionKind::TokenBudget {
            token_budget: need(args.token_budget, "--token-budget")?,
        },
        InterventionArg::Reranker => {
            let reranker = args
                .reranker
                .clone()
                .filter(|r| {
                    r.split_once(':')
                        .is_some_and(|(m, f)| !m.is_empty() && !f.is_empty())
                })
                .ok_or_else(|| {
                    CliError::Usage(
                        "--intervention reranker needs --reranker module:function (the system's) or --reranker judge:NAME (a local cross-encoder of judges:)".into(),
                    )
                })?;
            InterventionKind::Reranker { reranker }
        }
        InterventionArg::NoRerank => InterventionKind::NoRerank,
        InterventionArg::NoFilter => InterventionKind::NoFilter,
        InterventionArg::RawQuery => InterventionKind::RawQuery,
        InterventionArg::Lane(lane) => InterventionKind::Lane { lane },
    };
    let location = existing_store(&args.location, args.dir.as_deref())?;
    let mut progress = Progress::for_terminal();
    let result = oloproof_engine::diagnose::diagnose(
        &location,
        &args.run_id,
        &args.criterion,
        kind,
        &mut progress,
    );
    progress.finish();
    let d = result?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&oloproof_core::diagnosis::to_json(&d))
                .unwrap_or_default()
        )?;
    } else {
        write!(out, "{}", oloproof_report::diagnose::diagnosis_report(&d))?;
    }
    Ok(exit_codes::SUCCESS)
}

fn inspect(args: InspectArgs) -> Result<u8, CliError> {
    let store = open_store(&args.location, args.dir.as_deref())?;
    let mut out = std::io::stdout().lock();
    if args.id.starts_with("sha256:") {
        if let Some(d) = store.load_diagnosis(&args.id)? {
            if args.json {
                writeln!(out, "{}", to_json_text(serde_json::to_value(&d))?)?;
            } else {
                write!(out, "{}", oloproof_report::diagnose::diagnosis_cases(&d))?;
            }
            return Ok(exit_codes::SUCCESS);
        }
        if args.json {
            if let Some(c) = store.load_comparison(&args.id)? {
                writeln!(out, "{}", to_json_text(serde_json::to_value(&c))?)?;
                return Ok(exit_codes::SUCCESS);
            }
        } else if let Some(text) =
            crate::compare_cmd::render_comparison_cases(store.as_ref(), &args.id)?
        {
            write!(out, "{text}")?;
            return Ok(exit_codes::SUCCESS);
        }
        return Err(CliError::Usage(format!(
            "no diagnosis or comparison `{}` in this store",
            args.id
        )));
    }
    let run = store.load_run(&args.id, &EngineEvaluators)?;
    if args.json {
        // Verdicts in evaluator order, as `show --case --json` prints them.
        let order: Vec<&str> = run.criteria.iter().map(|(c, _)| c.as_str()).collect();
        let cases: Vec<serde_json::Value> = run
            .cases
            .iter()
            .map(|(case, trace, verdicts)| {
                let mut verdicts = verdicts.clone();
                verdicts.sort_by_key(|v| {
                    order
                        .iter()
                        .position(|n| *n == v.criterion)
                        .unwrap_or(usize::MAX)
                });
                serde_json::json!({"case": case, "trace": trace, "verdicts": verdicts})
            })
            .collect();
        let value = serde_json::json!({"run_id": run.record.id, "cases": cases});
        writeln!(out, "{}", to_json_text(Ok(value))?)?;
        return Ok(exit_codes::SUCCESS);
    }
    for (case, trace, verdicts) in &run.cases {
        let mut parts = Vec::new();
        for (criterion, _) in &run.criteria {
            let text = match verdicts
                .iter()
                .find(|v| &v.criterion == criterion)
                .map(|v| &v.verdict)
            {
                Some(oloproof_core::verdict::Verdict::Pass) => "pass".to_string(),
                Some(oloproof_core::verdict::Verdict::Fail) => "fail".to_string(),
                Some(oloproof_core::verdict::Verdict::Score { value }) => format!("{value:.3}"),
                Some(oloproof_core::verdict::Verdict::Missing { .. }) => "missing".to_string(),
                Some(oloproof_core::verdict::Verdict::Excluded { reason }) => {
                    format!("excluded ({reason})")
                }
                None => "pending".to_string(),
            };
            parts.push(format!("{criterion} {text}"));
        }
        let error = trace
            .as_ref()
            .and_then(|t| t.error.as_ref())
            .map(|e| format!(" · error: {}", e.summary()))
            .unwrap_or_default();
        writeln!(out, "{}: {}{error}", case.id, parts.join(", "))?;
    }
    Ok(exit_codes::SUCCESS)
}

/// Pretty JSON of a record for `--json` output (a record that cannot be written as JSON, e.g.
/// holding a non-finite number, is an output error, never an empty line).
fn to_json_text(value: serde_json::Result<serde_json::Value>) -> Result<String, CliError> {
    value
        .and_then(|v| serde_json::to_string_pretty(&v))
        .map_err(|e| CliError::Output(std::io::Error::other(e)))
}

/// `oloproof run --dry-run`: judge calls and estimated tokens, nothing sent.
fn dry_run(config: &ProjectConfig) -> Result<u8, CliError> {
    let dataset = match config.dataset_path() {
        Some(path) => Some(
            load_dataset_with(
                &path,
                &ReadOptions {
                    max_error_rate: config.options.max_error_rate,
                    ..ReadOptions::default()
                },
            )
            .map_err(EngineError::from)?,
        ),
        None => None,
    };
    let mut cases: Vec<Case> = match &dataset {
        Some(d) => d.records.iter().map(|r| r.case.clone()).collect(),
        None => load_cases(&config.cases_path()).map_err(EngineError::from)?,
    };
    if let Some(sample) = config.options.sample {
        let chosen =
            oloproof_engine::run::sample_case_ids(cases.iter().map(|c| c.id.as_str()), sample);
        cases.retain(|c| chosen.contains(&c.id));
    }
    let estimates = oloproof_engine::dry_run::estimate(config, &cases, dataset.as_ref())?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Dry run: {} cases; nothing is sent to the system or the judges.",
        cases.len()
    )?;
    let mut total_calls = 0u64;
    let mut total_embeds = 0u64;
    let mut total_tokens = 0u64;
    let mut total_cost = 0.0f64;
    let mut priced = false;
    let mut total_cached = 0u64;
    let mut local_criteria = 0usize;
    for e in &estimates {
        let judge = &e.judge;
        if let Some(kind) = &e.local_kind {
            local_criteria += 1;
            writeln!(
                out,
                "  {} (judge {judge}, local {kind} model): runs in-process on {} cases; nothing is sent, no cost",
                e.criterion,
                cases.len()
            )?;
            continue;
        }
        total_calls += e.calls;
        total_embeds += e.embeddings;
        total_tokens += e.input_tokens;
        total_cost += e.cost_usd.unwrap_or(0.0);
        priced |= e.cost_usd.is_some();
        total_cached += e.cached_cases as u64;
        let cached_note = if e.cached_cases == 0 {
            String::new()
        } else {
            format!(
                " ({} of {} cases already judged in the judgment cache, not counted)",
                e.cached_cases,
                cases.len()
            )
        };
        writeln!(
            out,
            "  {} (judge {judge}, {}): up to {} judge calls, {} embedding requests, ~{} input tokens{}{cached_note}",
            e.criterion,
            e.model,
            e.calls,
            e.embeddings,
            e.input_tokens,
            e.cost_usd.map(|c| format!(", ~${c:.4} input")).unwrap_or_default()
        )?;
    }
    if estimates.is_empty() {
        writeln!(out, "No judged criteria: this run makes no judge calls.")?;
        return Ok(exit_codes::SUCCESS);
    }
    let cost = if priced {
        format!("~${total_cost:.4} for input tokens")
    } else {
        "no prices configured (add `prices: {input_per_mtok: …, output_per_mtok: …}` to a judge for a cost)".to_string()
    };
    let cached_note = if total_cached > 0 {
        format!("; {total_cached} judgments are already in the judgment cache and not counted")
    } else {
        String::new()
    };
    writeln!(
        out,
        "Total: up to {total_calls} judge calls and {total_embeds} embedding requests, ~{total_tokens} input tokens, {cost} (estimate: 4 characters a token, the gold context standing in for the context; cached calls are not sent{cached_note})."
    )?;
    if local_criteria > 0 {
        writeln!(
            out,
            "{local_criteria} criteria use only local models (not in the total)."
        )?;
    }
    Ok(exit_codes::SUCCESS)
}

fn calibrate(args: CalibrateArgs) -> Result<u8, CliError> {
    let config = load(&args.location, args.dir.as_deref(), &[])?;
    let names: Vec<&str> = config.options.judges.keys().map(String::as_str).collect();
    if !config.options.judges.contains_key(&args.judge) {
        let hint = oloproof_core::source::did_you_mean(&args.judge, names.iter().copied())
            .map(|s| format!("; did you mean `{s}`?"))
            .unwrap_or_default();
        return Err(CliError::Usage(format!(
            "no judge named `{}` in {}{hint}",
            args.judge,
            config.path.display()
        )));
    }
    let Some(thresholds) = config.options.calibration.get(&args.judge) else {
        return Err(CliError::Usage(format!(
            "declare the acceptance threshold before measuring: add `calibration: {{{}: {{min_kappa: 0.7}}}}` to {}",
            args.judge,
            config.path.display()
        )));
    };
    // The pairwise judge of `compare --pairwise` is calibrated on preferences between two
    // answers; any other evaluator is a bare `{type, judge}` entry, or the config's entry for
    // an evaluator whose own options (a classifier's label and threshold) are calibrated.
    let evaluator: Box<dyn oloproof_engine::evaluators::Evaluator> =
        if args.evaluator == oloproof_engine::pairwise::CALIBRATION_EVALUATOR {
            Box::new(oloproof_engine::pairwise::PairwiseCalibration::new(
                &args.judge,
            ))
        } else {
            oloproof_engine::calibrate::calibration_evaluator(
                &config.options.evaluators,
                &args.judge,
                &args.evaluator,
                args.criterion.as_deref(),
            )?
        };
    if args.sweep && evaluator.calibrated_options().is_none() {
        return Err(CliError::Usage(format!(
            "`--sweep` varies a classifier's threshold; `{}` has none: use `--evaluator classifier`",
            args.evaluator
        )));
    }
    let items = oloproof_engine::calibrate::read_labels(&args.labels)?;
    let location = config.store_location();
    let mut store = oloproof_store::open(&location)?;
    let (c, scored) = oloproof_engine::calibrate::calibrate_scored(
        store.as_mut(),
        &location,
        &config.options.judges,
        &args.judge,
        evaluator.as_ref(),
        thresholds,
        &items,
    )?;
    let sweep = if args.sweep {
        Some(oloproof_engine::calibrate::threshold_sweep(
            evaluator.as_ref(),
            &scored,
        )?)
    } else {
        None
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        let value = match &sweep {
            Some(sweep) => serde_json::json!({"calibration": c, "sweep": sweep}),
            None => serde_json::to_value(&c).unwrap_or_default(),
        };
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        )?;
    } else {
        write!(out, "{}", oloproof_report::calibration_report(&c))?;
        if let Some(sweep) = &sweep {
            write!(out, "{}", sweep_text(sweep))?;
        }
    }
    Ok(if c.passed {
        exit_codes::SUCCESS
    } else {
        exit_codes::GATE_BLOCKED
    })
}

/// `calibrate --sweep`'s table: each candidate threshold with its passes, agreement and
/// kappa, the configured one and the best one marked, and what to do with the best.
fn sweep_text(s: &oloproof_engine::calibrate::ThresholdSweep) -> String {
    let rule = if s.pass_when == "above" {
        format!("passes when p({}) >= t", s.label)
    } else {
        format!("fails when p({}) >= t", s.label)
    };
    let mut out = format!(
        "\nThreshold sweep of {} ({rule}) on {} items with a probability",
        s.criterion, s.n
    );
    if s.skipped.is_empty() {
        out.push_str(":\n");
    } else {
        out.push_str(&format!(
            " ({} without, not swept: {}):\n",
            s.skipped.len(),
            s.skipped.join(", ")
        ));
    }
    out.push_str("  threshold  passes  agreement  kappa\n");
    let best = s.best.as_ref().map(|b| b.threshold);
    for p in &s.points {
        let kappa = p
            .kappa
            .map_or_else(|| "undefined".to_string(), |k| format!("{k:.3}"));
        let mut marks = Vec::new();
        if p.threshold == s.configured {
            marks.push("configured");
        }
        if Some(p.threshold) == best {
            marks.push("best");
        }
        let marks = if marks.is_empty() {
            String::new()
        } else {
            format!("  ← {}", marks.join(", "))
        };
        out.push_str(&format!(
            "  {:<9.4}  {:>6}  {:>9.3}  {kappa:>9}{marks}\n",
            p.threshold, p.passes, p.agreement
        ));
    }
    match &s.best {
        Some(b) if b.threshold == s.configured => out.push_str(&format!(
            "Best: the configured threshold {} (kappa {:.3}).\n",
            s.configured,
            b.kappa.unwrap_or_default()
        )),
        Some(b) => out.push_str(&format!(
            "Best: threshold {:.4} (kappa {:.3}, agreement {:.3}); the calibration above is of the \
             configured threshold {}. To use the best, set `threshold: {:.4}` and calibrate again \
             (ideally on labels the sweep did not see).\n",
            b.threshold,
            b.kappa.unwrap_or_default(),
            b.agreement,
            s.configured,
            b.threshold
        )),
        None => out.push_str(
            "Best: none: kappa is undefined at every threshold (all labels in one class).\n",
        ),
    }
    out
}

fn lost_in_the_middle(args: LostInTheMiddleArgs) -> Result<u8, CliError> {
    let location = existing_store(&args.location, args.dir.as_deref())?;
    let mut progress = Progress::for_terminal();
    let result = oloproof_engine::position::lost_in_the_middle(
        &location,
        &args.run_id,
        &args.criterion,
        args.distractors,
        &mut progress,
    );
    progress.finish();
    let report = result?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        )?;
    } else {
        write!(out, "{}", oloproof_report::position_report(&report))?;
    }
    Ok(exit_codes::SUCCESS)
}
