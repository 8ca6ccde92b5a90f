//! `oloproof compare CANDIDATE BASELINE --policy compare.yaml`, and the comparison half of
//! `oloproof inspect sha256:…`.
//!
//! The policy is read and validated before the store is opened, so a typo in `compare.yaml`
//! is reported (exit 2) without touching the runs; criteria and case ids are then checked
//! against the two runs. The gate decides the exit code: 0 PASS, 3 BLOCK.

use std::io::Write;
use std::path::{Path, PathBuf};

use oloproof_core::comparison::Gate;
use oloproof_core::config::ConfigError;
use oloproof_engine::compare::{compare as compare_runs, record_comparison, CompareError, Policy};
use oloproof_engine::run::EngineEvaluators;
use oloproof_store::SqliteStore;

use crate::cli::ConfigLocation;
use crate::commands::{open_store, CliError};
use crate::exit_codes;

#[derive(clap::Args, Debug)]
pub(crate) struct CompareArgs {
    /// The candidate run id (`run_…`): the change under test.
    pub(crate) candidate: String,
    /// The baseline run id (`run_…`): what the candidate must not be worse than.
    pub(crate) baseline: String,
    /// The comparison policy (YAML): the decisions, declared before looking at the data.
    #[arg(long, value_name = "FILE")]
    pub(crate) policy: PathBuf,
    /// Project folder holding oloproof.yaml (default: the current directory).
    #[arg(long)]
    pub(crate) dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) location: ConfigLocation,
    /// JSON on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

fn read_policy(path: &Path) -> Result<Policy, CliError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: shown.clone(),
        source,
    })?;
    Policy::parse(&shown, &text).map_err(|e| CliError::Config(ConfigError::Invalid(e)))
}

/// `oloproof compare`: prints the comparison and returns the gate's exit code.
pub(crate) fn compare(args: CompareArgs) -> Result<u8, CliError> {
    let policy = read_policy(&args.policy)?;
    let mut store = open_store(&args.location, args.dir.as_deref())?;
    let candidate = store.load_run(&args.candidate, &EngineEvaluators)?;
    let baseline = store.load_run(&args.baseline, &EngineEvaluators)?;
    let gated: Vec<String> = policy
        .options()
        .decisions
        .iter()
        .filter_map(|d| d.criterion.clone())
        .collect();
    let uncalibrated = oloproof_engine::calibrate::uncalibrated(&store, &candidate, &gated)?;
    if let Some((criterion, judge, reason)) = uncalibrated.first() {
        return Err(CliError::Usage(format!(
            "the policy gates on `{criterion}`, scored by judge `{judge}`, but {reason}; \
             run `oloproof calibrate --judge {judge} --evaluator <type> --labels human.jsonl` \
             with `calibration.{judge}.min_kappa` declared in oloproof.yaml, or gate on another criterion"
        )));
    }
    let comparison = compare_runs(&candidate, &baseline, &policy).map_err(|e| match e {
        CompareError::Policy(e) => CliError::Config(ConfigError::Invalid(e)),
        other => CliError::Usage(other.to_string()),
    })?;
    record_comparison(&mut store, &comparison)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&comparison).unwrap_or_default()
        )?;
    } else {
        write!(
            out,
            "{}",
            oloproof_report::compare::comparison_report(&comparison)
        )?;
    }
    out.flush()?;
    Ok(match comparison.gate {
        Gate::Pass => exit_codes::SUCCESS,
        Gate::Block => exit_codes::GATE_BLOCKED,
    })
}

/// For `oloproof inspect sha256:…`: the changed cases of a recorded comparison, or `None` when
/// no comparison has that id.
pub(crate) fn render_comparison_cases(
    store: &SqliteStore,
    id: &str,
) -> Result<Option<String>, CliError> {
    Ok(store
        .load_comparison(id)?
        .as_ref()
        .map(oloproof_report::compare::comparison_cases))
}
