//! `oloproof collect [DIR] [--store URL] [--listen ADDR]`: an OTLP/HTTP receiver (crate
//! `oloproof-collect`) recording what instrumented apps send into the run store, until Ctrl-C
//! or SIGTERM; `oloproof import --collected` turns it into trace records.
//!
//! The endpoint is printed on stdout once the address is bound (`--listen 127.0.0.1:0` picks a
//! free port); at the stop, what was recorded and refused.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use oloproof_collect::{CollectError, Collector, CollectorSettings};

use crate::cli::ConfigLocation;
use crate::commands::CliError;

#[derive(clap::Args, Debug)]
pub(crate) struct CollectArgs {
    /// Project folder whose run store records the spans (default: the current directory).
    pub(crate) dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) location: ConfigLocation,
    /// The address to listen on (port 0 picks a free one, printed at the start).
    #[arg(long, value_name = "ADDR:PORT", default_value = oloproof_collect::DEFAULT_LISTEN)]
    pub(crate) listen: SocketAddr,
    /// Allow an address other machines can reach: the receiver has no authentication.
    #[arg(long)]
    pub(crate) allow_remote: bool,
    /// The largest request body, before and after undoing gzip (bigger ones get 413).
    #[arg(long, value_name = "BYTES", default_value_t = oloproof_collect::DEFAULT_MAX_BODY_BYTES)]
    pub(crate) max_body_bytes: usize,
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM (what `kill` and process managers send).
async fn stop_signal() {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<()>(2);
    let on_ctrl_c = tx.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        let _ = on_ctrl_c.send(()).await;
    });
    #[cfg(unix)]
    if let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
    {
        tokio::spawn(async move {
            term.recv().await;
            let _ = tx.send(()).await;
        });
    }
    rx.recv().await;
}

pub(crate) fn collect(args: CollectArgs) -> Result<u8, CliError> {
    let store = crate::commands::store_location(&args.location, args.dir.as_deref())?;
    let settings = CollectorSettings {
        store: store.clone(),
        listen: args.listen,
        allow_remote: args.allow_remote,
        max_body_bytes: args.max_body_bytes,
    };
    let to_cli = |e: CollectError| match e {
        CollectError::Serve(io) => CliError::Output(io),
        CollectError::Store { source, .. } => CliError::Store(source),
        other => CliError::Usage(other.to_string()),
    };
    let collector = Collector::bind(&settings).map_err(to_cli)?;
    if !collector.local_addr().ip().is_loopback() {
        let mut err = std::io::stderr().lock();
        writeln!(
            err,
            "warning: listening on {}, reachable from other machines: anyone who can reach it can write spans into {store}",
            collector.local_addr()
        )?;
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Collecting OTLP traces at {} into {store} (Ctrl-C to stop)",
        collector.traces_url()
    )?;
    out.flush()?;
    drop(out);
    let report = collector.serve_until(stop_signal()).map_err(to_cli)?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Recorded {} request{} ({} span{}, {} unreadable); refused {}; store failures {}",
        report.requests,
        if report.requests == 1 { "" } else { "s" },
        report.spans,
        if report.spans == 1 { "" } else { "s" },
        report.spans_rejected,
        report.refused,
        report.store_failures,
    )?;
    if report.requests > 0 {
        writeln!(
            out,
            "Next: oloproof import --collected -o traffic.jsonl{}",
            match &args.location.store {
                Some(s) => format!(" --store {}", oloproof_core::store::redact_url(s)),
                None => String::new(),
            }
        )?;
    }
    Ok(match report.store_failures {
        0 => crate::exit_codes::SUCCESS,
        _ => crate::exit_codes::INCOMPLETE,
    })
}
