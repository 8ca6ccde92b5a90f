//! `oloproof history` (the table, `--plot FILE.svg`, `--json`), `oloproof history append RUN_ID…`
//! (back-fill a history from the store), and the line `oloproof run` appends after a run.
//!
//! The history file is `--file` (`--history` on `run` and `gate`), else `history:` in
//! `oloproof.yaml` (relative to its folder); there is no implicit default, so a run appends
//! nothing unless one of them names a file. Without a file, `oloproof history` (and `--plot`)
//! reads the store's finished runs, newest last, with unknown commits. The git commit and branch come from `git rev-parse`
//! in the project's folder; outside a repository (or without git) they are `null`. `history
//! append` with one run records the current commit (the CI step right after the run); with
//! several runs it back-fills older runs, whose commits it cannot know, as `null`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use oloproof_core::config::ProjectConfig;
use oloproof_core::history::HistoryEntry;
use oloproof_core::store::{RunStatus, Store, StoreLocation};
use oloproof_core::summary::{CacheCounts, RunSummary};
use oloproof_engine::history::{
    append_history, entry_for_run, read_history, GitInfo, HistoryError,
};
use oloproof_engine::run::{summarize_stored, EngineEvaluators};

use crate::cli::ConfigLocation;
use crate::commands::{load, open_store, CliError};
use crate::exit_codes;

#[derive(clap::Args, Debug)]
pub(crate) struct HistoryArgs {
    #[command(subcommand)]
    pub(crate) action: Option<HistoryAction>,
    /// The history (JSONL; default: `history:` of oloproof.yaml).
    #[arg(long, value_name = "FILE")]
    pub(crate) file: Option<PathBuf>,
    /// Also draw the history as an SVG chart: one line per criterion by commit, with interval
    /// bands.
    #[arg(long, value_name = "FILE.svg")]
    pub(crate) plot: Option<PathBuf>,
    /// Project folder holding oloproof.yaml (default: the current directory).
    #[arg(long)]
    pub(crate) dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) location: ConfigLocation,
    /// JSON on stdout (the history's lines as an array).
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(clap::Subcommand, Debug)]
pub(crate) enum HistoryAction {
    /// Append the history line of stored runs (oldest first), e.g. to back-fill a history.
    Append(AppendArgs),
}

#[derive(clap::Args, Debug)]
pub(crate) struct AppendArgs {
    /// The runs (`run_…`), appended in the order given.
    #[arg(required = true, value_name = "RUN_ID")]
    pub(crate) run_ids: Vec<String>,
    /// The history (JSONL; default: `history:` of oloproof.yaml).
    #[arg(long, value_name = "FILE")]
    pub(crate) file: Option<PathBuf>,
    /// Project folder holding oloproof.yaml (default: the current directory).
    #[arg(long)]
    pub(crate) dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) location: ConfigLocation,
}

impl From<HistoryError> for CliError {
    fn from(e: HistoryError) -> Self {
        match e {
            HistoryError::Write { .. } => CliError::Output(std::io::Error::other(e.to_string())),
            other => CliError::Usage(other.to_string()),
        }
    }
}

/// The commit and branch of the repository holding `dir`, from `git rev-parse`; both `None`
/// outside a repository or when git is not installed.
pub(crate) fn git_info(dir: &Path) -> GitInfo {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && !text.is_empty()).then_some(text)
    };
    let commit = git(&["rev-parse", "--verify", "--quiet", "HEAD"]);
    let branch = commit
        .as_ref()
        .and_then(|_| git(&["rev-parse", "--abbrev-ref", "HEAD"]))
        .filter(|b| b != "HEAD");
    GitInfo { commit, branch }
}

/// The history file: the flag, else `history:` of the config.
pub(crate) fn history_path(flag: Option<&Path>, config: Option<&ProjectConfig>) -> Option<PathBuf> {
    flag.map(Path::to_path_buf)
        .or_else(|| config.and_then(ProjectConfig::history_path))
}

fn no_history_error() -> CliError {
    CliError::Usage(
        "no history file: pass --file FILE, or add `history: .oloproof/history.jsonl` to oloproof.yaml"
            .into(),
    )
}

/// The summary stored with a run, else recomputed from its verdicts.
fn run_summary(store: &dyn Store, run_id: &str) -> Result<RunSummary, CliError> {
    let record = store.run(&run_id.into())?;
    Ok(
        match record
            .summary_json
            .as_deref()
            .and_then(|s| serde_json::from_str::<RunSummary>(s).ok())
        {
            Some(s) => s,
            None => summarize_stored(store, run_id, CacheCounts::default())?,
        },
    )
}

/// The history line of a stored run.
pub(crate) fn entry_of(
    store: &dyn Store,
    run_id: &str,
    git: GitInfo,
) -> Result<HistoryEntry, CliError> {
    let run = store.load_run(run_id, &EngineEvaluators)?;
    if run.record.status == RunStatus::Running {
        return Err(CliError::Usage(format!(
            "run {run_id} has not finished ({} of {} cases); finish it with `oloproof run --resume {run_id}` first",
            run.record.done_count, run.record.case_count
        )));
    }
    let summary = run_summary(store, run_id)?;
    Ok(entry_for_run(&run, &summary, git))
}

/// After `oloproof run`: appends the run's line and says so on stderr.
pub(crate) fn append_after_run(
    location: &StoreLocation,
    run_id: &str,
    path: &Path,
    project_dir: &Path,
) -> Result<(), CliError> {
    let store = oloproof_store::open(location)?;
    let entry = entry_of(store.as_ref(), run_id, git_info(project_dir))?;
    append_history(path, &entry)?;
    writeln!(
        std::io::stderr().lock(),
        "History: appended {run_id} to {}",
        path.display()
    )?;
    Ok(())
}

/// `oloproof history …`.
pub(crate) fn history(args: HistoryArgs) -> Result<u8, CliError> {
    if let Some(HistoryAction::Append(mut a)) = args.action {
        // `history --file F append RUN` names the file before the subcommand.
        if a.file.is_none() {
            a.file = args.file;
        }
        if a.dir.is_none() {
            a.dir = args.dir;
        }
        if a.location.config.is_none() {
            a.location.config = args.location.config;
        }
        return append(a);
    }
    let config = match &args.file {
        Some(_) => None,
        None => Some(load(&args.location, args.dir.as_deref(), &[])?),
    };
    let entries = match history_path(args.file.as_deref(), config.as_ref()) {
        Some(path) => read_history(&path)?.ok_or_else(|| {
            CliError::Usage(format!(
                "no history at {} yet; `oloproof run --history {}` or `oloproof history append RUN_ID` writes it",
                path.display(),
                path.display()
            ))
        })?,
        // No history file configured: the finished runs of the store, newest last.
        None => {
            let entries = store_history(&args.location, args.dir.as_deref())?;
            writeln!(
                std::io::stderr().lock(),
                "History: {} run{} from the store (no history file; add `history: FILE` to oloproof.yaml to keep the history, with commits, across stores)",
                entries.len(),
                if entries.len() == 1 { "" } else { "s" }
            )?;
            entries
        }
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&entries).unwrap_or_default()
        )?;
    } else {
        write!(out, "{}", oloproof_report::history::history_table(&entries))?;
    }
    if let Some(plot) = &args.plot {
        std::fs::write(plot, oloproof_report::history::history_svg(&entries))?;
        writeln!(
            std::io::stderr().lock(),
            "Wrote {} ({} run{})",
            plot.display(),
            entries.len(),
            if entries.len() == 1 { "" } else { "s" }
        )?;
    }
    Ok(exit_codes::SUCCESS)
}

/// The history lines of the store's finished top-level runs (not diagnoses' child runs),
/// oldest first; their commits are unknown (`null`).
fn store_history(
    location: &ConfigLocation,
    dir: Option<&Path>,
) -> Result<Vec<HistoryEntry>, CliError> {
    let path = crate::commands::store_location(location, dir)?;
    if !oloproof_store::exists(&path) {
        return Err(CliError::Usage(format!(
            "no history yet: no history file is configured and there is no run store at {}; run `oloproof run` first (its runs are the history), or pass --file FILE / add `history: .oloproof/history.jsonl` to oloproof.yaml to keep one",
            path
        )));
    }
    let store = oloproof_store::open(&path)?;
    let mut runs = store.list_runs()?;
    runs.reverse();
    runs.into_iter()
        .filter(|r| {
            r.parent.is_none()
                && r.status != RunStatus::Running
                && r.status != RunStatus::Interrupted
        })
        .map(|r| entry_of(store.as_ref(), &r.id, GitInfo::default()))
        .collect()
}

fn append(args: AppendArgs) -> Result<u8, CliError> {
    let config = load(&args.location, args.dir.as_deref(), &[])?;
    let path = history_path(args.file.as_deref(), Some(&config)).ok_or_else(no_history_error)?;
    // Read first: a history with bad lines is reported, not appended to.
    let existing = read_history(&path)?.unwrap_or_default();
    let store = open_store(&args.location, args.dir.as_deref())?;
    let git = git_info(&config.dir);
    let mut entries = Vec::new();
    for run_id in &args.run_ids {
        // One run (the CI step after `oloproof run`) gets the current commit and branch;
        // several runs are a back-fill from older commits, so theirs stay null.
        entries.push(entry_of(store.as_ref(), run_id, GitInfo::default())?);
    }
    if let Some(last) = entries.last_mut() {
        if args.run_ids.len() == 1 {
            last.commit = git.commit;
            last.branch = git.branch;
        }
    }
    let mut err = std::io::stderr().lock();
    for entry in &entries {
        if existing.iter().any(|e| e.run_id == entry.run_id) {
            writeln!(
                err,
                "note: {} is already in {}; appended again",
                entry.run_id,
                path.display()
            )?;
        }
        append_history(&path, entry)?;
    }
    writeln!(
        err,
        "History: appended {} run{} to {}",
        entries.len(),
        if entries.len() == 1 { "" } else { "s" },
        path.display()
    )?;
    Ok(exit_codes::SUCCESS)
}
