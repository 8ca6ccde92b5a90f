//! Errors of the trec_eval-compatible command.

use std::io;
use std::path::PathBuf;

use oloproof_metrics::ranking::RankingError;

/// Everything `oloproof trec` and `oloproof fuse` can fail with. The CLI maps every variant
/// to exit code 2.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrecError {
    /// A file could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file (`-` for standard input).
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A malformed line in a qrels or run file.
    #[error("{}:{line}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// One-based physical line number.
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// A topic could not be judged (for example a duplicate document).
    #[error("{}: topic {topic}: {source}", path.display())]
    Topic {
        /// The file holding the offending topic.
        path: PathBuf,
        /// The topic identifier.
        topic: String,
        /// The engine's error.
        #[source]
        source: RankingError,
    },
    /// A bad `-m` specification or measure parameter.
    #[error(transparent)]
    Measure(#[from] RankingError),
    /// No topic has both judgments and results.
    #[error("{}: no topics with both results and relevance info", path.display())]
    NoTopics {
        /// The run file.
        path: PathBuf,
    },
    /// A combination of options that cannot be honoured.
    #[error("{0}")]
    Usage(String),
    /// A significance test failed.
    #[error("significance test: {0}")]
    Stats(String),
    /// Writing the output failed.
    #[error("writing output: {0}")]
    Output(#[source] io::Error),
}
