//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

use clap::Parser;
use oloproof_trec::cli::{run_trec, TrecArgs};

/// `shared/data/trec`, found beside the repository (CI lays `shared/` next to the clone).
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/trec")
}

#[derive(Parser)]
struct Cmd {
    #[command(flatten)]
    trec: TrecArgs,
}

/// Runs `oloproof trec` with trec_eval-style arguments (the program name is added).
pub fn trec(args: &[String]) -> Result<String, oloproof_trec::TrecError> {
    let mut argv = vec!["trec".to_string()];
    argv.extend(args.iter().cloned());
    let cmd = Cmd::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    let mut out = Vec::new();
    run_trec(&cmd.trec, &mut out)?;
    Ok(String::from_utf8(out).expect("utf-8 output"))
}

/// The first differing line of two outputs, for assertion messages.
pub fn first_difference(got: &str, want: &str) -> String {
    for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        if g != w {
            return format!("line {}: got {g:?}, want {w:?}", i + 1);
        }
    }
    format!(
        "line counts differ: got {}, want {}",
        got.lines().count(),
        want.lines().count()
    )
}
