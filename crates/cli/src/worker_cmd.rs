//! `oloproof worker`: one of many processes executing a run together, and what `run --detach`
//! prints.
//!
//! A worker claims batches of the run's pending cases under a lease (extended by heartbeats),
//! executes them like `oloproof run`, and records each result only while it still holds the
//! case. It stops when no case is left to claim; the worker that records the run's last case
//! also records the summary and prints it, the others say how far the run is.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use oloproof_core::store::StoreLocation;
use oloproof_engine::run::{
    work_run, RunOutcome, WorkerOptions, DEFAULT_CLAIM_BATCH, DEFAULT_MAX_ATTEMPTS,
};

use crate::cli::ConfigLocation;
use crate::commands::{existing_store, CliError};
use crate::exit_codes;
use crate::progress::Progress;

/// `oloproof worker`.
#[derive(Debug, Args)]
pub(crate) struct WorkerArgs {
    /// Project folder holding oloproof.yaml, read for its `store:` (default: the current
    /// directory; not needed with --store). When it holds the project, the system is started
    /// from it, not from the folder the run was created in.
    pub(crate) dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) location: ConfigLocation,
    /// The run to execute (`oloproof run --detach` prints its id).
    #[arg(long = "run", value_name = "RUN_ID")]
    pub(crate) run_id: String,
    /// Threads in this process, each with its own system connection (default: the run's
    /// `workers`).
    #[arg(long, value_name = "N")]
    pub(crate) workers: Option<usize>,
    /// Cases claimed per transaction.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_CLAIM_BATCH)]
    pub(crate) batch: usize,
    /// Seconds a claimed case stays this worker's without a heartbeat (heartbeats come every
    /// third of it); a killed worker's cases go to the others once it expires (default: three
    /// of the run's timeouts and a minute).
    #[arg(long, value_name = "SECONDS")]
    pub(crate) lease: Option<f64>,
    /// Record a case as an error once it has been claimed this many times by workers that all
    /// stopped before finishing it.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_ATTEMPTS)]
    pub(crate) max_attempts: u32,
    /// Worker processes running the run at once (a Job's `parallelism`, a SLURM array's
    /// size): each judge's `max_concurrency` is divided by it, so together they keep to it,
    /// and claims shrink to a share of what is left as the run ends.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub(crate) share: usize,
    /// Do not read the caches (fresh results are still stored).
    #[arg(long)]
    pub(crate) no_cache: bool,
    /// Print the summary (when this worker finishes the run) as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn worker(args: WorkerArgs) -> Result<u8, CliError> {
    let lease = match args.lease {
        None => None,
        Some(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => Some(Duration::from_secs_f64(s)),
        Some(s) => {
            return Err(CliError::Usage(format!(
                "--lease {s} is not a number of seconds in (0, 86400], e.g. --lease 120"
            )))
        }
    };
    if args.batch == 0 || args.max_attempts == 0 || args.share == 0 || args.workers == Some(0) {
        return Err(CliError::Usage(
            "--batch, --max-attempts, --share and --workers take a positive number".into(),
        ));
    }
    let location = existing_store(&args.location, args.dir.as_deref())?;
    // This machine's copy of the project, when the worker runs in one (its config is here):
    // the system starts from it rather than from the folder the run was created in.
    let project_dir = match (&args.location.config, &args.dir) {
        (Some(config), _) => config
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map(std::path::Path::to_path_buf)
            .or_else(|| Some(PathBuf::from("."))),
        (None, Some(dir)) => Some(dir.clone()),
        (None, None) => Some(PathBuf::from(".")),
    }
    .filter(|d| d.join("oloproof.yaml").is_file() || args.location.config.is_some())
    .map(|d| std::path::absolute(&d))
    .transpose()?;
    let options = WorkerOptions {
        project_dir,
        threads: args.workers,
        batch: args.batch,
        lease,
        max_attempts: args.max_attempts,
        share: args.share,
        no_cache: args.no_cache,
    };
    let mut progress = Progress::for_terminal();
    let outcome = work_run(&location, &args.run_id, &options, &mut progress);
    progress.finish();
    let outcome = outcome?;
    if !outcome.finished {
        writeln!(
            std::io::stderr().lock(),
            "worker: recorded {} cases of run {}; {} of {} cases are done, the others are held \
             by other workers (the last to finish records the summary: `oloproof show {}`)",
            outcome.executed,
            outcome.run_id,
            outcome.summary.done,
            outcome.summary.cases,
            outcome.run_id
        )?;
        return Ok(exit_codes::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&outcome.summary).unwrap_or_default()
        )?;
    } else {
        write!(out, "{}", oloproof_report::run_report(&outcome.summary))?;
    }
    drop(out);
    if outcome.incomplete() {
        crate::commands::write_incomplete(&outcome)?;
        return Ok(exit_codes::INCOMPLETE);
    }
    Ok(exit_codes::SUCCESS)
}

/// What `run --detach` prints: the run id on stdout (`{"run_id", "cases"}` with `--json`), and
/// on stderr how to execute it.
pub(crate) fn print_detached(
    outcome: &RunOutcome,
    store: &StoreLocation,
    json: bool,
) -> Result<u8, CliError> {
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(
            out,
            "{}",
            serde_json::json!({"run_id": outcome.run_id, "cases": outcome.summary.cases})
        )?;
    } else {
        writeln!(out, "{}", outcome.run_id)?;
    }
    drop(out);
    writeln!(
        std::io::stderr().lock(),
        "run {} recorded with {} pending cases; execute it with `oloproof worker --store {} --run {}` \
         from as many processes and machines as you like",
        outcome.run_id,
        outcome.summary.cases,
        store,
        outcome.run_id
    )?;
    Ok(exit_codes::SUCCESS)
}
