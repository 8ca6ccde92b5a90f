//! A diagnosis of a run's failures (`oloproof diagnose`), as stored and read back: the
//! intervention, the label of every diagnosed case, the child runs and their stage use, and the
//! readings of it every renderer shares (label counts, the implicated factor, a replay's
//! confirmation line).
//!
//! These are data. Running the child runs and labelling the cases is
//! `oloproof_engine::diagnose`; the store keeps the diagnosis as JSON under its content-addressed
//! id; the report and the viewer render it. A label names an implicated factor, never an
//! established cause.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::summary::CacheCounts;

/// The intervention asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum InterventionKind {
    /// Gold passages in place of the assembled context.
    GoldContext,
    /// Replay the recorded retrieval with another `top_k`.
    TopK {
        /// The new cut-off.
        top_k: usize,
    },
    /// Replay the recorded retrieval with another token budget.
    TokenBudget {
        /// The new budget.
        token_budget: usize,
    },
    /// Replay the recorded retrieval through a reranker.
    Reranker {
        /// `module:function`.
        reranker: String,
    },
}

impl InterventionKind {
    /// How the guide names it in output: `gold context`, `top-k 4`, `token budget 120`, …
    pub fn describe(&self) -> String {
        match self {
            InterventionKind::GoldContext => "gold context".into(),
            InterventionKind::TopK { top_k } => format!("top-k {top_k}"),
            InterventionKind::TokenBudget { token_budget } => {
                format!("token budget {token_budget}")
            }
            InterventionKind::Reranker { reranker } => format!("reranker {reranker}"),
        }
    }

    /// The label the replay would confirm, if any.
    fn confirms(&self) -> Option<&'static str> {
        match self {
            InterventionKind::GoldContext => None,
            InterventionKind::TopK { .. } | InterventionKind::Reranker { .. } => {
                Some(label::RANKED_OUT)
            }
            InterventionKind::TokenBudget { .. } => Some(label::CONTEXT_ASSEMBLY_LOSS),
        }
    }
}

/// Label names.
pub mod label {
    /// Passes on the control re-execution.
    pub const UNSTABLE: &str = "UNSTABLE";
    /// A child execution failed with an error.
    pub const NOT_DIAGNOSED: &str = "NOT_DIAGNOSED";
    /// Still fails with the gold context.
    pub const GENERATION_FAILURE: &str = "GENERATION_FAILURE";
    /// No relevant candidate retrieved.
    pub const RETRIEVAL_MISS: &str = "RETRIEVAL_MISS";
    /// Relevant only below top_k.
    pub const RANKED_OUT: &str = "RANKED_OUT";
    /// Relevant within top_k but left out of the context.
    pub const CONTEXT_ASSEMBLY_LOSS: &str = "CONTEXT_ASSEMBLY_LOSS";
    /// Relevant in the context among other passages; recovered alone.
    pub const CONTEXT_DISTRACTION: &str = "CONTEXT_DISTRACTION";
    /// Recovered, but no relevance labels place the failure.
    pub const UNLOCATED: &str = "UNLOCATED";
    /// Replay diagnosis without a gold-context diagnosis to carry labels from.
    pub const UNLABELLED: &str = "UNLABELLED";
}

/// Display order of labels.
pub const LABEL_ORDER: &[&str] = &[
    label::RETRIEVAL_MISS,
    label::RANKED_OUT,
    label::CONTEXT_ASSEMBLY_LOSS,
    label::CONTEXT_DISTRACTION,
    label::UNLOCATED,
    label::GENERATION_FAILURE,
    label::UNSTABLE,
    label::NOT_DIAGNOSED,
    label::UNLABELLED,
];

/// One diagnosed case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseDiagnosis {
    /// Case id.
    pub case_id: String,
    /// Stage label.
    pub label: String,
    /// Reason code.
    pub reason: String,
    /// `intervention_recovery` or `intervention_non_recovery` (of the labelling intervention).
    pub strength: String,
    /// Best relevant position in the parent run (document unit); `None` when not retrieved or
    /// not labelled.
    pub best_relevant_position: Option<usize>,
    /// Passed under this diagnosis's intervention (`None`: error).
    pub recovered: Option<bool>,
    /// Passed on the control re-execution (`None`: error).
    pub control_passed: Option<bool>,
}

/// A child run of a diagnosis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildRun {
    /// What it is: `gold context`, `control`, `top-k 4`, `replay control`, …
    pub role: String,
    /// Its run id.
    pub run_id: String,
}

/// What identifies a diagnosis (hashed into its id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiagnosisContent {
    /// The diagnosed run.
    pub run_id: String,
    /// The pass/fail criterion.
    pub criterion: String,
    /// The intervention.
    pub intervention: InterventionKind,
    /// Failed cases with gold context, in run order.
    pub selected: Vec<String>,
    /// Failed cases without gold context.
    pub not_diagnosable: Vec<String>,
    /// Per selected case.
    pub cases: Vec<CaseDiagnosis>,
    /// The gold-context diagnosis whose labels a replay carries.
    pub labels_from: Option<String>,
}

/// A finished diagnosis: its id, content, child runs and stage use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// `sha256:<hex>` of the canonical content.
    pub id: String,
    /// The content.
    pub content: DiagnosisContent,
    /// Child runs (including those of a carried gold-context diagnosis).
    pub child_runs: Vec<ChildRun>,
    /// Stage cache use of this diagnosis's intervention run.
    pub stages: CacheCounts,
}

impl Diagnosis {
    /// Cases per label, in display order.
    pub fn label_counts(&self) -> Vec<(&'static str, usize)> {
        LABEL_ORDER
            .iter()
            .map(|l| {
                (
                    *l,
                    self.content.cases.iter().filter(|c| c.label == *l).count(),
                )
            })
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    /// Cases recovered under this diagnosis's intervention.
    pub fn recovered(&self) -> usize {
        self.content
            .cases
            .iter()
            .filter(|c| c.recovered == Some(true))
            .count()
    }

    /// Cases that passed on the control.
    pub fn control_passed(&self) -> usize {
        self.content
            .cases
            .iter()
            .filter(|c| c.control_passed == Some(true))
            .count()
    }

    /// Implicated factors: the factor(s) behind the most recovered failures, with that count and
    /// the number of recovered failures carrying a factor.
    pub fn implicated(&self) -> Option<(Vec<&'static str>, usize, usize)> {
        let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
        let mut recovered = 0;
        for c in &self.content.cases {
            if let Some(f) = factor(&c.label) {
                *counts.entry(f).or_default() += 1;
                recovered += 1;
            }
        }
        let top = *counts.values().max()?;
        let factors = FACTOR_ORDER
            .iter()
            .copied()
            .filter(|f| counts.get(f) == Some(&top))
            .collect();
        Some((factors, top, recovered))
    }
}

const FACTOR_ORDER: &[&str] = &["context budget", "ranking", "retrieval", "context noise"];

/// The factor a recovered label implicates.
fn factor(label: &str) -> Option<&'static str> {
    match label {
        label::CONTEXT_ASSEMBLY_LOSS => Some("context budget"),
        label::RANKED_OUT => Some("ranking"),
        label::RETRIEVAL_MISS => Some("retrieval"),
        label::CONTEXT_DISTRACTION => Some("context noise"),
        _ => None,
    }
}

/// Candidate experiments for a factor, worded as hypotheses by the renderer.
pub fn experiments(factor: &str) -> &'static [&'static str] {
    match factor {
        "context budget" => &["a larger token budget", "smaller chunks"],
        "ranking" => &["a larger top-k", "a reranker"],
        "retrieval" => &["query rewriting", "hybrid (dense + sparse) retrieval"],
        "context noise" => &["a smaller top-k", "a reranker"],
        _ => &[],
    }
}

/// The confirmation line of a replay: of the carried cases with the label this intervention
/// targets, how many recovered.
pub fn confirmation(d: &Diagnosis) -> Option<(&'static str, usize, usize)> {
    d.content.labels_from.as_ref()?;
    let target = d.content.intervention.confirms()?;
    let with_label: Vec<&CaseDiagnosis> = d
        .content
        .cases
        .iter()
        .filter(|c| c.label == target)
        .collect();
    let recovered = with_label
        .iter()
        .filter(|c| c.recovered == Some(true))
        .count();
    Some((target, recovered, with_label.len()))
}

/// Carried gold-context recovered count (for the `Labels from gold context` line).
pub fn carried_recovered(d: &Diagnosis) -> usize {
    d.content
        .cases
        .iter()
        .filter(|c| c.strength == "intervention_recovery")
        .count()
}

/// A compact JSON view for `--json`.
pub fn to_json(d: &Diagnosis) -> Value {
    json!({
        "id": d.id,
        "content": d.content,
        "child_runs": d.child_runs,
        "stages": d.stages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn implicated_factor_is_the_most_frequent_among_recovered() {
        let mk = |id: &str, l: &str| CaseDiagnosis {
            case_id: id.into(),
            label: l.into(),
            reason: String::new(),
            strength: String::new(),
            best_relevant_position: None,
            recovered: Some(true),
            control_passed: Some(false),
        };
        let d = Diagnosis {
            id: "sha256:x".into(),
            content: DiagnosisContent {
                run_id: "r".into(),
                criterion: "c".into(),
                intervention: InterventionKind::GoldContext,
                selected: vec![],
                not_diagnosable: vec![],
                cases: vec![
                    mk("a", label::RETRIEVAL_MISS),
                    mk("b", label::CONTEXT_ASSEMBLY_LOSS),
                    mk("c", label::CONTEXT_ASSEMBLY_LOSS),
                    mk("d", label::GENERATION_FAILURE),
                ],
                labels_from: None,
            },
            child_runs: vec![],
            stages: CacheCounts::default(),
        };
        assert_eq!(d.implicated(), Some((vec!["context budget"], 2, 3)));
        assert_eq!(d.label_counts()[0], (label::RETRIEVAL_MISS, 1));
    }
}
