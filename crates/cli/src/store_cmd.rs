//! `oloproof store copy SRC DST`: runs moved between stores (a local SQLite run published to
//! the team's Postgres, a Postgres run taken home), with their cases, verdicts, diagnoses,
//! comparisons, calibrations and monitor reports as they are stored; `--with-cache` copies
//! the caches too, and `--with-collected` the OTLP requests `oloproof collect` recorded
//! (bodies byte for byte, in arrival order).
//!
//! A run already in DST (same id) is left as it is there; so is a collected request DST
//! already holds (the same arrival time and body), so copying twice adds nothing.

use std::io::Write;

use clap::{Args, Subcommand};
use oloproof_core::store::{CollectedRequest, RunId, StoreLocation};

use crate::commands::CliError;
use crate::exit_codes;

/// `oloproof store`.
#[derive(Debug, Args)]
pub(crate) struct StoreCommandArgs {
    #[command(subcommand)]
    pub(crate) command: StoreCommand,
}

/// The `store` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum StoreCommand {
    /// Copy runs (with their cases, verdicts, diagnoses, comparisons, calibrations and monitor
    /// reports) from SRC to DST: each a SQLite file or a postgres:// URL.
    Copy(CopyArgs),
}

/// `oloproof store copy`.
#[derive(Debug, Args)]
pub(crate) struct CopyArgs {
    /// The store to read: a SQLite file or `postgres://user@host/db`.
    #[arg(value_name = "SRC")]
    pub(crate) src: String,
    /// The store to write (created if it is a SQLite file that does not exist).
    #[arg(value_name = "DST")]
    pub(crate) dst: String,
    /// Copy only this run (repeatable; default: every run).
    #[arg(long = "run", value_name = "RUN_ID")]
    pub(crate) runs: Vec<String>,
    /// Copy the caches as well (executions, stages, judgments), so DST re-uses them.
    #[arg(long)]
    pub(crate) with_cache: bool,
    /// Copy the OTLP requests `oloproof collect` recorded as well, after those DST holds
    /// (a request DST already has is not copied again).
    #[arg(long)]
    pub(crate) with_collected: bool,
}

fn location(value: &str) -> Result<StoreLocation, CliError> {
    Ok(if StoreLocation::is_url(value) {
        StoreLocation::Postgres(value.to_string())
    } else {
        StoreLocation::Sqlite(std::path::absolute(value)?)
    })
}

pub(crate) fn store(args: StoreCommandArgs) -> Result<u8, CliError> {
    match args.command {
        StoreCommand::Copy(args) => copy(args),
    }
}

fn copy(args: CopyArgs) -> Result<u8, CliError> {
    let src = location(&args.src)?;
    let dst = location(&args.dst)?;
    if src == dst {
        return Err(CliError::Usage(format!(
            "SRC and DST are the same store ({src}); name two stores"
        )));
    }
    if !oloproof_store::exists(&src) {
        return Err(CliError::Usage(format!("no run store at {src}")));
    }
    let from = oloproof_store::open(&src)?;
    let mut to = oloproof_store::open(&dst)?;
    let ids: Vec<RunId> = if args.runs.is_empty() {
        let mut all: Vec<RunId> = from
            .list_runs()?
            .into_iter()
            .map(|r| RunId::from(r.id))
            .collect();
        // Oldest first, so a child run's parent is copied before it.
        all.reverse();
        all
    } else {
        args.runs.iter().map(|r| RunId::from(r.as_str())).collect()
    };
    let mut out = std::io::stdout().lock();
    let (mut copied, mut present) = (0usize, 0usize);
    for id in &ids {
        let run = from.export_run(id)?;
        if to.import_run(&run)? {
            copied += 1;
            writeln!(
                out,
                "copied {id} ({}, {} cases)",
                run.record.status,
                run.cases.len()
            )?;
        } else {
            present += 1;
            writeln!(out, "kept {id}: already in {dst}")?;
        }
    }
    let wanted = |run: &str| args.runs.is_empty() || args.runs.iter().any(|r| r == run);
    let diagnoses: Vec<_> = from
        .list_diagnoses()?
        .into_iter()
        .filter(|d| wanted(&d.run_id))
        .collect();
    let comparisons: Vec<_> = from
        .list_comparisons()?
        .into_iter()
        .filter(|c| wanted(&c.run_id) || c.baseline.as_deref().is_some_and(wanted))
        .collect();
    // Calibrations belong to judges, not runs: every one is copied.
    let calibrations = from.list_calibrations()?;
    // Monitor reports: every one, or with --run those whose tiers judged with a named run.
    let mut monitors = Vec::new();
    for m in from.list_monitors()? {
        if args.runs.is_empty()
            || m.report()?
                .sampling
                .tiers
                .iter()
                .any(|t| t.run_id.as_deref().is_some_and(wanted))
        {
            monitors.push(m);
        }
    }
    to.import_artifacts(&diagnoses, &comparisons, &calibrations, &monitors)?;
    let mut entries = 0usize;
    if args.with_cache {
        let mut after = None;
        loop {
            let page = from.cache_page(after.take(), 1000)?;
            let Some((layer, key, _)) = page.last() else {
                break;
            };
            after = Some((*layer, key.clone()));
            entries += page.len();
            to.put_cache_entries(&page)?;
        }
    }
    let collected = if args.with_collected {
        let (added, held) = copy_collected(from.as_ref(), to.as_mut())?;
        format!("; {added} collected requests ({held} already there)")
    } else {
        String::new()
    };
    writeln!(
        out,
        "{copied} runs copied to {dst} ({present} already there); {} diagnoses, {} comparisons, \
         {} calibrations, {} monitor reports{}{collected}",
        diagnoses.len(),
        comparisons.len(),
        calibrations.len(),
        monitors.len(),
        if args.with_cache {
            format!("; {entries} cache entries")
        } else {
            String::new()
        }
    )?;
    Ok(exit_codes::SUCCESS)
}

/// Requests read or written per page.
const COLLECTED_PAGE: usize = 500;

/// Appends the collected requests of `from` that `to` lacks to `to`, in arrival order (each
/// gets `to`'s next sequence number); a request is the same as one `to` holds when its arrival
/// time and body are. Returns how many were added and how many of `from`'s `to` held already.
fn copy_collected(
    from: &dyn oloproof_core::store::Store,
    to: &mut dyn oloproof_core::store::Store,
) -> Result<(usize, usize), CliError> {
    use oloproof_core::identity::sha256_hex;
    let identity = |r: &CollectedRequest| (r.received_ms, sha256_hex(&r.body));
    let mut held = std::collections::HashSet::new();
    let mut after = 0;
    loop {
        let page = to.collected_page(after, COLLECTED_PAGE)?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        held.extend(page.iter().map(identity));
    }
    let (mut added, mut present) = (0usize, 0usize);
    let mut after = 0;
    loop {
        let page = from.collected_page(after, COLLECTED_PAGE)?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        let read = page.len();
        let fresh: Vec<CollectedRequest> = page
            .into_iter()
            .filter(|r| !held.contains(&identity(r)))
            .map(|r| CollectedRequest { seq: 0, ..r })
            .collect();
        present += read - fresh.len();
        added += fresh.len();
        if !fresh.is_empty() {
            to.append_collected(&fresh)?;
        }
    }
    Ok((added, present))
}
