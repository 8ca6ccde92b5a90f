//! `oloproof compare CANDIDATE BASELINE --policy compare.yaml`, and the comparison half of
//! `oloproof inspect sha256:…`.
//!
//! The policy is read and validated before the store is opened, so a typo in `compare.yaml`
//! is reported (exit 2) without touching the runs; criteria and case ids are then checked
//! against the two runs. The gate decides the exit code: 0 PASS, 3 BLOCK.
//!
//! A pairwise comparison (`--pairwise JUDGE`, or the policy's `pairwise:` block) reads the
//! judges of `oloproof.yaml`, checks the judge (declared, a chat judge, calibrated when it
//! decides), judges the pairs through the store's judge-call cache and commits the new cache
//! entries. Judge calls that failed on more than the policy's `max_missing_rate` of the shared
//! cases make the comparison incomplete: exit 4, whatever the gate.

use std::io::Write;
use std::path::{Path, PathBuf};

use oloproof_core::comparison::Gate;
use oloproof_core::config::ConfigError;
use oloproof_core::store::Store;
use oloproof_engine::compare::{compare_with_pairwise, record_comparison, CompareError, Policy};
use oloproof_engine::pairwise;
use oloproof_engine::run::EngineEvaluators;

use crate::cli::ConfigLocation;
use crate::commands::{existing_store, load, refuse_uncalibrated, CliError};
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
    /// Also judge every shared case's two answers head to head with this judge (a name under
    /// `judges:` in oloproof.yaml), in both orders. Without a `pairwise:` block in the policy it
    /// is a report, not a decision; with one, it replaces the block's judge.
    #[arg(long, value_name = "JUDGE")]
    pub(crate) pairwise: Option<String>,
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
    let mut policy = read_policy(&args.policy)?;
    if let Some(judge) = &args.pairwise {
        policy = policy.with_pairwise_judge(judge);
    }
    let location = existing_store(&args.location, args.dir.as_deref())?;
    let mut store = oloproof_store::open(&location)?;
    let candidate = store.load_run(&args.candidate, &EngineEvaluators)?;
    let baseline = store.load_run(&args.baseline, &EngineEvaluators)?;
    let gated: Vec<String> = policy
        .options()
        .decisions
        .iter()
        .filter_map(|d| d.criterion.clone())
        .collect();
    refuse_uncalibrated(store.as_ref(), &candidate, &gated, "the policy gates on")?;
    let pairwise = match policy.pairwise() {
        Some(_) => {
            // No shared case is a policy error located in the policy, reported before the
            // config is read.
            policy
                .check(&candidate, &baseline)
                .map_err(|e| CliError::Config(ConfigError::Invalid(e)))?;
            let config = load(&args.location, args.dir.as_deref(), &[])?;
            Some(
                pairwise::judge_policy_pairs(
                    &policy,
                    &config.options.judges,
                    store.as_mut(),
                    &location,
                    &candidate,
                    &baseline,
                )
                .map_err(compare_error)?,
            )
        }
        None => None,
    };
    let comparison =
        compare_with_pairwise(&candidate, &baseline, &policy, pairwise).map_err(compare_error)?;
    record_comparison(store.as_mut(), &comparison)?;
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
    drop(out);
    if let (true, Some(p)) = (comparison.pairwise_incomplete(), &comparison.pairwise) {
        let allowed = policy.options().max_missing_rate;
        {
            let mut err = std::io::stderr().lock();
            writeln!(
                err,
                "error: the pairwise judge `{}` failed on {} of {} shared cases, above the policy's max_missing_rate of {:.1}%: the comparison is incomplete (the failed calls are listed by `oloproof inspect {}`; re-run the same command to retry them, answered calls are cached)",
                p.judge,
                p.judge_errors,
                p.cases.len(),
                allowed * 100.0,
                comparison.id
            )?;
            return Ok(exit_codes::INCOMPLETE);
        }
    }
    Ok(match comparison.gate {
        Gate::Pass => exit_codes::SUCCESS,
        Gate::Block => exit_codes::GATE_BLOCKED,
    })
}

fn compare_error(e: CompareError) -> CliError {
    match e {
        CompareError::Policy(e) => CliError::Config(ConfigError::Invalid(e)),
        CompareError::Engine(e) => CliError::Engine(e),
        other => CliError::Usage(other.to_string()),
    }
}

/// For `oloproof inspect sha256:…`: the changed cases of a recorded comparison, or `None` when
/// no comparison has that id.
pub(crate) fn render_comparison_cases(
    store: &dyn Store,
    id: &str,
) -> Result<Option<String>, CliError> {
    Ok(store
        .load_comparison(id)?
        .as_ref()
        .map(oloproof_report::compare::comparison_cases))
}
