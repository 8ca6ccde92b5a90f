//! `oloproof gate RUN --policy gate.yaml`: absolute thresholds on a run, or on a window of the
//! score history.
//!
//! The policy is read and validated before the store is opened, so a typo in `gate.yaml` is
//! reported (exit 2) without touching the run; criteria are then checked against the run (exit 2
//! with a suggestion). The gate decides the exit code: 0 PASS, 3 FAIL.

use std::io::Write;
use std::path::{Path, PathBuf};

use oloproof_core::comparison::Gate;
use oloproof_core::config::ConfigError;
use oloproof_engine::gate::{evaluate_gate, GatePolicy};
use oloproof_engine::history::{read_history, GitInfo};
use oloproof_engine::run::EngineEvaluators;

use crate::cli::ConfigLocation;
use crate::commands::{load, open_store, refuse_uncalibrated, CliError};
use crate::exit_codes;
use crate::history_cmd::{entry_of, history_path};

#[derive(clap::Args, Debug)]
pub(crate) struct GateArgs {
    /// The run to gate (`run_…`).
    pub(crate) run_id: String,
    /// The gate policy (YAML): `thresholds: [{criterion, min|max, on, window, interval}]`,
    /// `max_missing_rate`, `require_same_judge`.
    #[arg(long, value_name = "FILE")]
    pub(crate) policy: PathBuf,
    /// The score history that `window:` thresholds pool (default: `history:` of oloproof.yaml).
    #[arg(long, value_name = "FILE")]
    pub(crate) history: Option<PathBuf>,
    /// Project folder holding oloproof.yaml (default: the current directory).
    #[arg(long)]
    pub(crate) dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) location: ConfigLocation,
    /// JSON on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

fn read_policy(path: &Path) -> Result<GatePolicy, CliError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: shown.clone(),
        source,
    })?;
    GatePolicy::parse(&shown, &text).map_err(|e| CliError::Config(ConfigError::Invalid(e)))
}

/// `oloproof gate`: prints every threshold and returns the gate's exit code.
pub(crate) fn gate(args: GateArgs) -> Result<u8, CliError> {
    let policy = read_policy(&args.policy)?;
    let config = load(&args.location, args.dir.as_deref(), &[])?;
    let store = open_store(&args.location, args.dir.as_deref())?;
    let mut current = entry_of(store.as_ref(), &args.run_id, GitInfo::default())?;
    let history_file = history_path(args.history.as_deref(), Some(&config));
    let history = match &history_file {
        Some(path) => read_history(path)?.unwrap_or_default(),
        None => Vec::new(),
    };
    // The run's own line, when the history has it, knows its commit.
    if let Some(line) = history.iter().rev().find(|e| e.run_id == current.run_id) {
        current.commit.clone_from(&line.commit);
        current.branch.clone_from(&line.branch);
    }
    policy
        .check(&current)
        .map_err(|e| CliError::Config(ConfigError::Invalid(e)))?;
    // A threshold on a judged criterion needs a judge that agrees with humans, as in compare.
    let gated: Vec<String> = policy
        .options()
        .thresholds
        .iter()
        .map(|t| t.criterion.clone())
        .collect();
    let run = store.load_run_with(&args.run_id, &EngineEvaluators, |_| false, |_| {})?;
    refuse_uncalibrated(store.as_ref(), &run, &gated, "the gate has a threshold on")?;
    if policy.needs_history() && history_file.is_none() {
        return Err(CliError::Usage(format!(
            "{} has a `window:` threshold but there is no history to pool: pass --history FILE, or add `history: FILE` to oloproof.yaml",
            args.policy.display()
        )));
    }
    policy
        .check_judges(&current, &history)
        .map_err(|e| CliError::Config(ConfigError::Invalid(e)))?;
    let report = evaluate_gate(
        &policy,
        &args.policy.display().to_string(),
        &current,
        &history,
    );
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        )?;
    } else {
        write!(out, "{}", oloproof_report::gate::gate_report(&report))?;
    }
    out.flush()?;
    Ok(match report.gate {
        Gate::Pass => exit_codes::SUCCESS,
        Gate::Block => exit_codes::GATE_BLOCKED,
    })
}
