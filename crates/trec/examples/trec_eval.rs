//! A stand-alone `trec_eval` built on this crate: `cargo run --release -p oloproof-trec
//! --example trec_eval -- -m all_trec QRELS RUN`. The benchmark uses it when the `oloproof`
//! binary is not built.
#![allow(clippy::print_stderr)]

use std::io::Write;

use clap::Parser;
use oloproof_trec::cli::{run_trec, TrecArgs};

#[derive(Parser)]
#[command(name = "trec_eval")]
struct Cmd {
    #[command(flatten)]
    trec: TrecArgs,
}

fn main() -> std::process::ExitCode {
    let cmd = Cmd::parse();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = run_trec(&cmd.trec, &mut out)
        .and_then(|()| out.flush().map_err(oloproof_trec::TrecError::Output));
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("trec_eval: {e}");
            std::process::ExitCode::from(2)
        }
    }
}
