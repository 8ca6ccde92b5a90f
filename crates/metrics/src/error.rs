//! Errors shared across the metric families: a word that names none of an option's values.
//! (Each family keeps its own errors beside it: `ranking::error`, `batch::error`, …)

/// A word that is not one of an option's values (`--scheme`, `--weights`, `--level`, …), as
/// the options' [`FromStr`](std::str::FromStr) implementations report it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} `{value}`: expected {expected}")]
pub struct UnknownWord {
    /// What the word names (`unknown scheme`, `weights`, …).
    pub what: &'static str,
    /// The word as given.
    pub value: String,
    /// The accepted words, as a phrase.
    pub expected: &'static str,
}
