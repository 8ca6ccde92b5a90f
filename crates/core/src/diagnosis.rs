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
    /// Skip the system's `rerank` stage: the recorded list the rerank received (the trace's
    /// `pipeline.pre_rerank`) goes to context assembly as it is, with no retrieval call.
    NoRerank,
    /// Retrieve again with the system told to skip its metadata filters (`skip_filters` in
    /// every `retrieve` request; new retrievals, cached under their own keys).
    NoFilter,
    /// Retrieve with the raw question instead of the rewrites (cached under their own keys;
    /// the calls a recorded `pipeline.raw_query` made are cache hits).
    RawQuery,
    /// Retrieve through one lane only, no fusion: the lane's recorded ranking
    /// (`pipeline.lanes[NAME]`) replayed, then the system's rerank stage if it has one.
    Lane {
        /// The lane.
        lane: String,
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
            InterventionKind::NoRerank => "no-rerank".into(),
            InterventionKind::NoFilter => "no-filter".into(),
            InterventionKind::RawQuery => "raw-query".into(),
            InterventionKind::Lane { lane } => format!("lane={lane}"),
        }
    }

    /// The label the replay would confirm, if any. `HOP_MISS` has none: the gold-context
    /// intervention that supplies the missing hop's evidence is its confirmation.
    pub fn confirms(&self) -> Option<&'static str> {
        match self {
            InterventionKind::GoldContext => None,
            InterventionKind::TopK { .. } | InterventionKind::Reranker { .. } => {
                Some(label::RANKED_OUT)
            }
            InterventionKind::TokenBudget { .. } => Some(label::CONTEXT_ASSEMBLY_LOSS),
            InterventionKind::NoRerank => Some(label::RERANKED_OUT),
            InterventionKind::NoFilter => Some(label::FILTERED_OUT),
            InterventionKind::RawQuery => Some(label::REWRITE_DRIFT),
            InterventionKind::Lane { .. } => Some(label::FUSION_LOSS),
        }
    }

    /// Whether this replay targets `case`: it carries the label the replay confirms and, for
    /// `lane=NAME`, names that lane among the lanes that had its relevant evidence.
    pub fn targets(&self, case: &CaseDiagnosis) -> bool {
        let Some(target) = self.confirms() else {
            return false;
        };
        if case.label != target {
            return false;
        }
        match self {
            InterventionKind::Lane { lane } => case.implicated.iter().any(|l| l == lane),
            _ => true,
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
    /// Every relevant document fails a metadata predicate the retrievals applied (the
    /// trace's `filter_check`), and none was retrieved: the filter removed the evidence.
    pub const FILTERED_OUT: &str = "FILTERED_OUT";
    /// A lane had relevant evidence within `top_k`; the fused list did not.
    pub const FUSION_LOSS: &str = "FUSION_LOSS";
    /// Relevant evidence within `top_k` before the rerank stage, below it (or gone) after.
    pub const RERANKED_OUT: &str = "RERANKED_OUT";
    /// The raw question retrieves relevant evidence within `top_k`; the rewrites do not.
    pub const REWRITE_DRIFT: &str = "REWRITE_DRIFT";
    /// An iterative retrieval's hops never found a relevant document (and it is not in the
    /// final list).
    pub const HOP_MISS: &str = "HOP_MISS";
}

/// Display order of labels: the pipeline's order, upstream first.
pub const LABEL_ORDER: &[&str] = &[
    label::FILTERED_OUT,
    label::REWRITE_DRIFT,
    label::HOP_MISS,
    label::RETRIEVAL_MISS,
    label::FUSION_LOSS,
    label::RERANKED_OUT,
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
    /// What the label names: the predicates that removed the relevant documents
    /// (`FILTERED_OUT`), the lanes that had one within `top_k` (`FUSION_LOSS`), the rewritten
    /// queries (`REWRITE_DRIFT`), the hop (`HOP_MISS`, `hop N`). Empty for other labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub implicated: Vec<String>,
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

const FACTOR_ORDER: &[&str] = &[
    "context budget",
    "ranking",
    "retrieval",
    "context noise",
    "metadata filter",
    "fusion",
    "reranker",
    "query rewriting",
    "retrieval hops",
];

/// The factor a recovered label implicates.
fn factor(label: &str) -> Option<&'static str> {
    match label {
        label::CONTEXT_ASSEMBLY_LOSS => Some("context budget"),
        label::RANKED_OUT => Some("ranking"),
        label::RETRIEVAL_MISS => Some("retrieval"),
        label::CONTEXT_DISTRACTION => Some("context noise"),
        label::FILTERED_OUT => Some("metadata filter"),
        label::FUSION_LOSS => Some("fusion"),
        label::RERANKED_OUT => Some("reranker"),
        label::REWRITE_DRIFT => Some("query rewriting"),
        label::HOP_MISS => Some("retrieval hops"),
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
        "metadata filter" => &[
            "relaxing the named predicate (a soft boost instead of a hard filter)",
            "checking the metadata the predicate reads",
        ],
        "fusion" => &["another fusion method or lane weights", "the lane alone"],
        "reranker" => &["no reranker", "another reranker"],
        "query rewriting" => &[
            "keeping the raw question among the queries",
            "a more conservative rewrite",
        ],
        "retrieval hops" => &["more hops", "better follow-up queries"],
        _ => &[],
    }
}

/// How one targeted case came out of the replay that should confirm its label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmation {
    /// Recovered under the replay, and the replay control still failed.
    Confirmed,
    /// Still failed under the replay: the label is not confirmed.
    NotRecovered,
    /// Passed on the replay control too: the recovery is not the intervention's.
    ControlPassed,
    /// A child execution ended in an error.
    Error,
}

impl Confirmation {
    /// Of one case: `Confirmed` only when the treatment passed and the control failed.
    pub fn of(case: &CaseDiagnosis) -> Self {
        match (case.recovered, case.control_passed) {
            (None, _) | (_, None) => Confirmation::Error,
            (_, Some(true)) => Confirmation::ControlPassed,
            (Some(true), Some(false)) => Confirmation::Confirmed,
            (Some(false), Some(false)) => Confirmation::NotRecovered,
        }
    }

    /// As the report words it.
    pub fn describe(self) -> &'static str {
        match self {
            Confirmation::Confirmed => "confirmed",
            Confirmation::NotRecovered => "not recovered",
            Confirmation::ControlPassed => "passed on the replay control",
            Confirmation::Error => "error",
        }
    }
}

/// The confirmation of a replay's target label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelConfirmation {
    /// The label the replay confirms.
    pub label: &'static str,
    /// Targeted cases confirmed (recovered, control still failing).
    pub confirmed: usize,
    /// Cases the replay targets ([`InterventionKind::targets`]).
    pub targeted: usize,
    /// The targeted cases not confirmed, in diagnosis order, with why.
    pub not_confirmed: Vec<(String, Confirmation)>,
}

/// The confirmation line of a replay: of the carried cases with the label this intervention
/// targets, how many recovered while the replay control still failed (a recovery the control
/// shares confirms nothing). `None` without carried labels or for an intervention that
/// confirms no label.
pub fn confirmation(d: &Diagnosis) -> Option<LabelConfirmation> {
    d.content.labels_from.as_ref()?;
    let label = d.content.intervention.confirms()?;
    let mut out = LabelConfirmation {
        label,
        confirmed: 0,
        targeted: 0,
        not_confirmed: Vec::new(),
    };
    for c in d
        .content
        .cases
        .iter()
        .filter(|c| d.content.intervention.targets(c))
    {
        out.targeted += 1;
        match Confirmation::of(c) {
            Confirmation::Confirmed => out.confirmed += 1,
            other => out.not_confirmed.push((c.case_id.clone(), other)),
        }
    }
    Some(out)
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
            implicated: vec![],
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

    fn case(id: &str, l: &str, recovered: Option<bool>, control: Option<bool>) -> CaseDiagnosis {
        CaseDiagnosis {
            case_id: id.into(),
            label: l.into(),
            reason: String::new(),
            strength: "intervention_recovery".into(),
            best_relevant_position: None,
            recovered,
            control_passed: control,
            implicated: Vec::new(),
        }
    }

    fn replay(intervention: InterventionKind, cases: Vec<CaseDiagnosis>) -> Diagnosis {
        Diagnosis {
            id: "sha256:x".into(),
            content: DiagnosisContent {
                run_id: "r".into(),
                criterion: "c".into(),
                intervention,
                selected: cases.iter().map(|c| c.case_id.clone()).collect(),
                not_diagnosable: vec![],
                cases,
                labels_from: Some("sha256:gold".into()),
            },
            child_runs: vec![],
            stages: CacheCounts::default(),
        }
    }

    #[test]
    fn a_replay_confirms_its_label_only_where_the_control_still_fails() {
        let d = replay(
            InterventionKind::NoRerank,
            vec![
                case("a", label::RERANKED_OUT, Some(true), Some(false)),
                case("b", label::RERANKED_OUT, Some(false), Some(false)),
                case("c", label::RERANKED_OUT, Some(true), Some(true)),
                case("d", label::RERANKED_OUT, None, Some(false)),
                // Another label: not targeted, whatever its outcome.
                case("e", label::FUSION_LOSS, Some(true), Some(false)),
            ],
        );
        let conf = confirmation(&d).unwrap();
        assert_eq!(conf.label, label::RERANKED_OUT);
        assert_eq!((conf.confirmed, conf.targeted), (1, 4));
        assert_eq!(
            conf.not_confirmed,
            vec![
                ("b".to_string(), Confirmation::NotRecovered),
                ("c".to_string(), Confirmation::ControlPassed),
                ("d".to_string(), Confirmation::Error),
            ]
        );
        // Without carried labels there is nothing to confirm.
        let mut unlabelled = d.clone();
        unlabelled.content.labels_from = None;
        assert!(confirmation(&unlabelled).is_none());
    }

    #[test]
    fn a_lane_replay_targets_the_fusion_losses_of_its_lane() {
        let mut of_bm25 = case("a", label::FUSION_LOSS, Some(true), Some(false));
        of_bm25.implicated = vec!["bm25".into()];
        let mut of_dense = case("b", label::FUSION_LOSS, Some(false), Some(false));
        of_dense.implicated = vec!["dense".into()];
        let d = replay(
            InterventionKind::Lane {
                lane: "bm25".into(),
            },
            vec![of_bm25, of_dense],
        );
        let conf = confirmation(&d).unwrap();
        assert_eq!((conf.confirmed, conf.targeted), (1, 1));
        assert!(conf.not_confirmed.is_empty());
        for (kind, target) in [
            (InterventionKind::NoFilter, label::FILTERED_OUT),
            (InterventionKind::RawQuery, label::REWRITE_DRIFT),
            (InterventionKind::NoRerank, label::RERANKED_OUT),
            (InterventionKind::GoldContext, ""),
        ] {
            assert_eq!(kind.confirms().unwrap_or(""), target);
        }
        let json = serde_json::to_value(InterventionKind::Lane {
            lane: "bm25".into(),
        })
        .unwrap();
        assert_eq!(json, serde_json::json!({"kind": "lane", "lane": "bm25"}));
        assert_eq!(
            serde_json::to_value(InterventionKind::NoRerank).unwrap(),
            serde_json::json!({"kind": "no-rerank"})
        );
    }
}
