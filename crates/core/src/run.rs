//! A stored run as every reader of the store sees it: its row ([`RunRecord`]) and the whole
//! run read back with typed cases, traces and verdicts ([`LoadedRun`], which
//! `oloproof_core::store::Store::load_run` returns).
//!
//! Which summary kind a criterion has, a run's summary computed from its verdicts, and a case's
//! slice values are decided by the evaluators, which live in the engine; readers that need them
//! without depending on the engine (the viewer) take an [`Evaluators`] from their caller.

use crate::case::Case;
use crate::config::EvaluatorEntry;
use crate::settings::RunSettings;
use crate::summary::{RunSummary, SummaryKind};
use crate::trace::Trace;
use crate::verdict::CriterionVerdict;

/// A run as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    /// `run_<ULID>`.
    pub id: String,
    /// Creation time, Unix milliseconds.
    pub created_ms: i64,
    /// Running, complete, incomplete (stopped early) or interrupted (Ctrl-C, SIGTERM).
    pub status: crate::store::RunStatus,
    /// The config file the run came from.
    pub config_path: String,
    /// The resolved settings snapshot (JSON).
    pub settings_json: String,
    /// sha256 of the canonical settings identity.
    pub identity: String,
    /// The system's hello (JSON).
    pub system_json: String,
    /// The summary, once finished (JSON).
    pub summary_json: Option<String>,
    /// Parent run, for child runs (diagnosis).
    pub parent: Option<String>,
    /// Number of cases.
    pub case_count: i64,
    /// Cases done.
    pub done_count: i64,
}

/// One case of a stored run: the case as it was, its trace (`None` while the case is pending)
/// and its verdicts (empty while pending).
pub type LoadedCase = (Case, Option<Trace>, Vec<CriterionVerdict>);

/// A stored run read back: its record, settings, and every case with its trace and verdicts.
#[derive(Debug, Clone)]
pub struct LoadedRun {
    /// The run's row.
    pub record: RunRecord,
    /// The settings it ran with.
    pub settings: RunSettings,
    /// Cases in order, with their trace (`None` while pending) and verdicts.
    pub cases: Vec<LoadedCase>,
    /// `(criterion, kind)` in evaluator order.
    pub criteria: Vec<(String, SummaryKind)>,
}

impl LoadedRun {
    /// The verdict of `criterion` on case `case_id`, if recorded (`None` for an unknown case or
    /// criterion, and for a pending case).
    pub fn verdict(&self, case_id: &str, criterion: &str) -> Option<&CriterionVerdict> {
        self.cases
            .iter()
            .find(|(c, _, _)| c.id == case_id)
            .and_then(|(_, _, vs)| vs.iter().find(|v| v.criterion == criterion))
    }
}

/// A stored evaluator entry that no longer builds (a store written by another version, or
/// edited by hand).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the stored evaluator `{type_name}` cannot be rebuilt: {message}")]
pub struct StoredEvaluatorError {
    /// The entry's type.
    pub type_name: String,
    /// Why it does not build.
    pub message: String,
}

/// What reading a stored run needs of the evaluators, which the engine owns: a criterion's
/// summary kind, a run's summary recomputed from its verdicts, a case's slice values.
///
/// The engine implements it (`oloproof_engine::run::EngineEvaluators`); a reader that must not
/// depend on the engine (the viewer) is handed one by its caller.
pub trait Evaluators: Send + Sync {
    /// `(criterion, summary kind)` of each stored evaluator entry, in order; an entry the
    /// evaluators cannot rebuild (a store written by another version) is an error.
    fn criteria(
        &self,
        entries: &[EvaluatorEntry],
    ) -> Result<Vec<(String, SummaryKind)>, StoredEvaluatorError>;

    /// The run's summary recomputed from its stored verdicts, for a run that has no stored
    /// summary (still running, interrupted); cache counts are zero, as nothing was executed.
    fn summarize(&self, run: &LoadedRun) -> Result<RunSummary, StoredEvaluatorError>;

    /// The value of slice `key` (`metadata.topic`, `relevant_position`, …) for one executed
    /// case; `(none)` when the case has no such metadata, `n/a` when the slice does not apply.
    fn slice_value(&self, key: &str, case: &Case, trace: &Trace) -> String;
}
