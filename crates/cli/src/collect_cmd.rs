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

/// A future that completes on SIGINT (Ctrl-C) or SIGTERM (what `kill` and process managers
/// send). The handler is installed here, before the endpoint is printed: a signal sent as
/// soon as the address is known stops the collector in order (its counts printed, what it
/// received written), instead of ending the process by the signal's default action.
fn stop_signal() -> Result<impl std::future::Future<Output = ()> + Send + 'static, CliError> {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let tx = std::sync::Mutex::new(Some(tx));
    ctrlc::set_handler(move || {
        if let Some(tx) = tx.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = tx.send(());
        }
    })
    .map_err(|e| CliError::Usage(format!("cannot handle Ctrl-C and SIGTERM: {e}")))?;
    Ok(async move {
        let _ = rx.await;
    })
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
    let stop = stop_signal()?;
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
    let report = collector.serve_until(stop).map_err(to_cli)?;
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
    if report.log_records > 0 {
        writeln!(
            out,
            "  and {} log record{} (POST /v1/logs), for the spans they name",
            report.log_records,
            if report.log_records == 1 { "" } else { "s" },
        )?;
    }
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
