//! trec_eval-compatible evaluation for Oloproof: qrels and run parsing, the evaluation driver,
//! trec_eval's output format, run comparison with significance tests, and rank fusion.
//!
//! The measures themselves live in the pure [`oloproof_metrics::ranking`] engine; this crate
//! is the edge around it: it reads files (memory-mapped, `.gz` or standard input), parses them
//! in parallel, evaluates topics in parallel and prints exactly what trec_eval 10.0 prints
//! (or 9.0.x with `--compat 9`).
//!
//! The CLI crate exposes two subcommands built from [`cli::TrecArgs`] / [`cli::run_trec`] and
//! [`cli::FuseArgs`] / [`cli::run_fuse`].
//!
//! # Example
//!
//! ```
//! use clap::Parser;
//! use oloproof_trec::cli::{run_trec, TrecArgs};
//!
//! #[derive(Parser)]
//! struct Cmd {
//!     #[command(flatten)]
//!     trec: TrecArgs,
//! }
//!
//! let dir = tempfile::tempdir()?;
//! let qrels = dir.path().join("qrels");
//! let run = dir.path().join("run");
//! std::fs::write(&qrels, "q1 0 d1 1\nq1 0 d2 0\n")?;
//! std::fs::write(&run, "q1 Q0 d2 1 2.0 demo\nq1 Q0 d1 2 1.0 demo\n")?;
//!
//! let cmd = Cmd::parse_from([
//!     "trec".as_ref(), "-m".as_ref(), "map".as_ref(), "-mP.1,2".as_ref(),
//!     qrels.as_os_str(), run.as_os_str(),
//! ]);
//! let mut out = Vec::new();
//! run_trec(&cmd.trec, &mut out)?;
//! assert_eq!(
//!     String::from_utf8(out)?,
//!     "map                   \tall\t0.5000\nP_1                   \tall\t0.0000\n\
//!      P_2                   \tall\t0.5000\n"
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub mod cli;
pub mod compare;
pub mod driver;
pub mod error;
pub mod format;
pub mod fuse;
mod input;
mod parse;

pub use cli::{evaluate_files, run_fuse, run_trec, FuseArgs, TrecArgs};
pub use driver::RunResult;
pub use error::TrecError;
