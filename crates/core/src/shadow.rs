//! What a shadow evaluation found (`monitor.shadow`): the candidate system — the project's
//! `system:` — run over the questions production answered in a window, both sides judged by
//! the same evaluators, and compared case by case under a written policy.
//!
//! Production is the comparison's baseline and the candidate its candidate, so a difference
//! is candidate − production and the policy reads as it does for `oloproof compare`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::comparison::Comparison;

/// One shadow evaluation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ShadowReport {
    /// `latest`, `horizon` or a window's start, as configured.
    pub window: String,
    /// The windows whose traces were eligible (RFC 3339 starts, oldest first).
    pub windows: Vec<String>,
    /// Traces in those windows.
    pub traces: u64,
    /// Traces left out before the draw, by reason: `error` (production failed, so there is no
    /// production answer to compare), `no_input` (the question was not recorded).
    pub left_out: BTreeMap<String, u64>,
    /// Traces that could be compared (`traces` minus those left out).
    pub eligible: u64,
    /// `max_cases`.
    pub max_cases: u64,
    /// The draw's seed (`monitor.sampling.seed`): the traces compared are the eligible ones
    /// with the smallest `sha256("<seed>:<trace id>")`.
    pub seed: u64,
    /// Traces compared.
    pub selected: u64,
    /// The compared criteria.
    pub criteria: Vec<String>,
    /// The candidate system as it said hello: `name version`.
    pub candidate_system: String,
    /// The recorded run judging production's answers to the selected traces.
    pub production_run: Option<String>,
    /// The candidate's run over the same questions.
    pub candidate_run: Option<String>,
    /// Candidate cases that ended in an error.
    pub candidate_errors: u64,
    /// The comparison, candidate against production (recorded in the store under its id);
    /// none when no trace was selected.
    pub comparison: Option<Comparison>,
}

impl ShadowReport {
    /// Whether the comparison's gate blocked the candidate.
    pub fn blocked(&self) -> bool {
        self.comparison
            .as_ref()
            .is_some_and(|c| c.gate == crate::comparison::Gate::Block)
    }
}
