//! The host's check of the metadata predicates a case's retrievals applied against its gold
//! documents (seed 000 Part 5), from the `corpus:` file of the config: what the
//! `filter_exclusion` evaluator and the `FILTERED_OUT` label read
//! ([`oloproof_core::pipeline::FilterCheck`]).
//!
//! The check is recomputed on every run from the recorded predicates, never cached with the
//! execution: an edited corpus file (a metadata fix) changes it without re-running the system.

use std::path::Path;

use oloproof_core::case::Case;
use oloproof_core::config::ConfigError;
use oloproof_core::config::ProjectConfig;
use oloproof_core::corpus::Corpus;
use oloproof_core::pipeline::FilterCheck;
use oloproof_core::settings::RunSettings;
use oloproof_core::source::SourceError;
use oloproof_core::trace::Trace;

use crate::error::EngineError;

/// Reads and parses the corpus file `path` (as written in the config, relative to
/// `config_dir`). `config` locates a missing file at its `corpus:` key (or the `--set` that
/// set it). Every malformed
/// line is reported; the error shows the first one and counts the others.
pub fn load_corpus_file(
    path: &str,
    config_dir: &Path,
    config: Option<&ProjectConfig>,
) -> Result<Corpus, EngineError> {
    let full = config_dir.join(path);
    let text = match std::fs::read(&full) {
        Ok(bytes) => oloproof_core::source::decode_utf8(&full.display().to_string(), bytes)
            .map_err(|e| EngineError::Config(ConfigError::Invalid(e)))?,
        Err(source) => {
            return Err(EngineError::Config(match config {
                Some(config) => {
                    let mut err = config.error_at(
                        "corpus",
                        format!("cannot read the corpus file {}: {source}", full.display()),
                    );
                    err.help = Some(
                        "`corpus:` names a JSON Lines file of {\"doc_id\": …, \"metadata\": {…}}, relative to this file"
                            .into(),
                    );
                    ConfigError::Invalid(err)
                }
                None => ConfigError::Read {
                    path: full.display().to_string(),
                    source,
                },
            }))
        }
    };
    Corpus::parse(&full.display().to_string(), &text).map_err(|errors| {
        let more = errors.len() - 1;
        let mut first: SourceError = errors.into_iter().next().unwrap_or_else(|| {
            SourceError::at(
                &full.display().to_string(),
                &text,
                1,
                1,
                1,
                "invalid corpus",
            )
        });
        if more > 0 {
            first.message = format!(
                "{} (and {more} more malformed line{})",
                first.message,
                if more == 1 { "" } else { "s" }
            );
        }
        EngineError::Config(ConfigError::Invalid(first))
    })
}

/// The corpus of a run's settings, when its config names one.
pub fn load_corpus(settings: &RunSettings) -> Result<Option<Corpus>, EngineError> {
    settings
        .options
        .corpus
        .as_deref()
        .map(|path| load_corpus_file(path, &settings.config_dir, None))
        .transpose()
}

/// The check of `trace`'s applied predicates (its final retrieval's, which carry every call's
/// and hop's) on the case's gold documents (relevance grade ≥ 1, each once, in label order).
/// `None` when the case has no gold document or the system produced no retrieval (its stage
/// failed).
pub fn check_case(corpus: &Corpus, case: &Case, trace: &Trace) -> Option<FilterCheck> {
    let retrieval = trace.retrieval.as_ref()?;
    let relevant = case.expected.relevant.as_ref()?;
    let mut gold: Vec<&str> = Vec::new();
    for r in relevant.iter().filter(|r| r.grade >= 1.0) {
        if !gold.contains(&r.doc_id.as_str()) {
            gold.push(&r.doc_id);
        }
    }
    if gold.is_empty() {
        return None;
    }
    let filters: Vec<_> = retrieval.filters.iter().collect();
    Some(corpus.check(&filters, gold))
}
