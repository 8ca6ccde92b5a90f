//! `oloproof`: evaluate staged RAG systems. A thin layer that turns arguments into engine
//! calls, output and exit codes.

mod cli;
mod collect_cmd;
mod commands;
mod compare_cmd;
mod exit_codes;
mod export_cmd;
mod gate_cmd;
mod generate_cmd;
mod history_cmd;
mod import_cmd;
mod interrupt;
mod metric_cmd;
mod monitor_cmd;
mod progress;
mod promote_cmd;
mod refresh_cmd;
mod report_cmd;
mod store_cmd;
mod view_cmd;
mod worker_cmd;

use std::process::ExitCode;

use clap::Parser;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(if args.verbose { "info" } else { "warn" })
    });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match commands::dispatch(args) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            let code = err.exit_code();
            let mut stderr = std::io::stderr().lock();
            let _ = std::io::Write::write_fmt(&mut stderr, format_args!("{}\n", err.render()));
            ExitCode::from(code)
        }
    }
}
