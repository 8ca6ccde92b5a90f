//! `oloproof view [DIR] [--config FILE] [--port N] [--host ADDR]`: the local web viewer over
//! the run store (crate `oloproof-view`, behind the default cargo feature `view`).
//!
//! It listens on 127.0.0.1 unless `--host` names another address; a non-loopback address is
//! served only when given explicitly, with a warning. `--port 0` picks a free port. The URL is
//! printed on stdout once the port is bound, then the viewer serves until Ctrl-C (exit 0).

use std::path::PathBuf;

use crate::cli::ConfigLocation;
use crate::commands::CliError;

/// The default port (also `oloproof_view::DEFAULT_PORT`).
const DEFAULT_PORT: u16 = 7878;

#[derive(clap::Args, Debug)]
pub(crate) struct ViewArgs {
    /// Project folder holding oloproof.yaml (default: the current directory).
    pub(crate) dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) location: ConfigLocation,
    /// The port to listen on (0 picks a free one and prints it).
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub(crate) port: u16,
    /// The address to listen on (default 127.0.0.1). Another interface than loopback makes the
    /// store's contents visible to other machines and must be named here explicitly.
    #[arg(long, value_name = "ADDR")]
    pub(crate) host: Option<String>,
}

/// `--host` as an address: an IP literal, or `localhost`.
fn parse_host(host: Option<&str>) -> Result<std::net::IpAddr, CliError> {
    use std::net::{IpAddr, Ipv4Addr};
    match host {
        None | Some("localhost") => Ok(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        Some(text) => text.trim_matches(['[', ']']).parse().map_err(|_| {
            CliError::Usage(format!(
                "--host {text} is not an IP address; use e.g. 127.0.0.1 (the default), ::1, or 0.0.0.0 for every interface"
            ))
        }),
    }
}

/// `oloproof view`: binds, prints the URL and serves until Ctrl-C.
#[cfg(feature = "view")]
pub(crate) fn view(args: ViewArgs) -> Result<u8, CliError> {
    use std::io::Write;

    use oloproof_view::{ViewError, Viewer, ViewerSettings};

    debug_assert_eq!(DEFAULT_PORT, oloproof_view::DEFAULT_PORT);
    let host = parse_host(args.host.as_deref())?;
    let store = crate::commands::existing_store(&args.location, args.dir.as_deref())?;
    let settings = ViewerSettings {
        store: store.clone(),
        host,
        port: args.port,
        allow_non_loopback: args.host.is_some(),
    };
    let to_cli = |e: ViewError| match e {
        ViewError::Serve(io) => CliError::Output(io),
        other => CliError::Usage(other.to_string()),
    };
    // The viewer reads the store without the engine; what only the evaluators know (criterion
    // kinds, a running run's summary, slice values) it asks of the engine's, passed here.
    let evaluators = std::sync::Arc::new(oloproof_engine::run::EngineEvaluators);
    let viewer = Viewer::bind(&settings, evaluators).map_err(to_cli)?;
    if !host.is_loopback() {
        let mut err = std::io::stderr().lock();
        writeln!(
            err,
            "warning: serving on {}, reachable from other machines: anyone who can reach it can read every run in {}",
            viewer.local_addr(),
            store
        )?;
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Serving {} at {} (Ctrl-C to stop)",
        store,
        viewer.url()
    )?;
    out.flush()?;
    drop(out);
    viewer.serve().map_err(to_cli)?;
    Ok(crate::exit_codes::SUCCESS)
}

/// `oloproof view` in a build without the `view` feature: says so (exit 2).
#[cfg(not(feature = "view"))]
pub(crate) fn view(args: ViewArgs) -> Result<u8, CliError> {
    let _ = (
        args.dir,
        args.location,
        args.port,
        parse_host(args.host.as_deref())?,
    );
    Err(CliError::Usage(
        "this oloproof was built without the web viewer; rebuild with the `view` feature \
         (cargo build -p oloproof --features view, on by default)"
            .into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_ip_literals_or_localhost() {
        assert_eq!(parse_host(None).unwrap().to_string(), "127.0.0.1");
        assert_eq!(
            parse_host(Some("localhost")).unwrap().to_string(),
            "127.0.0.1"
        );
        assert_eq!(parse_host(Some("[::1]")).unwrap().to_string(), "::1");
        assert_eq!(parse_host(Some("0.0.0.0")).unwrap().to_string(), "0.0.0.0");
        let err = parse_host(Some("example.org")).unwrap_err().to_string();
        assert!(
            err.contains("--host example.org is not an IP address"),
            "{err}"
        );
    }
}
