//! `oloproof diagnose`: which stage failed, found by re-executing failed cases under
//! controlled interventions.
//!
//! The selection is the run's cases that failed a pass/fail criterion and carry
//! `expected.gold_context` (the others are listed as not diagnosable). Each intervention runs as
//! a child run — an ordinary run in the store — beside a control child run that re-executes the
//! same cases without the intervention and without the generation cache:
//!
//! - `gold-context`: the gold passages replace the assembled context;
//! - `top-k N`, `token-budget N`: the *recorded* retrieval is re-assembled with the new
//!   parameter (no retrieval call) and generated again;
//! - `reranker module:function`: the recorded candidates pass through the user's reranker first.
//!
//! Labels (gold context), from the parent trace and the two outcomes, in this order:
//!
//! | label | reason | when |
//! | --- | --- | --- |
//! | `UNSTABLE` | `passes_on_control` | the control re-execution passes: flaky, not diagnosed |
//! | `NOT_DIAGNOSED` | `intervention_error` | a child execution ended in an error |
//! | `GENERATION_FAILURE` | `fails_with_gold_context` | still fails with the gold context |
//! | `RETRIEVAL_MISS` | `relevant_not_retrieved` | recovered; no relevant candidate was retrieved |
//! | `RANKED_OUT` | `relevant_below_top_k` | recovered; relevant only below `top_k` |
//! | `CONTEXT_ASSEMBLY_LOSS` | `relevant_dropped_from_context` | recovered; relevant within `top_k` but not in the context |
//! | `CONTEXT_DISTRACTION` | `relevant_in_context` | recovered; relevant evidence was in the context among other passages |
//! | `UNLOCATED` | `no_relevance_labels` | recovered; the case has no relevance labels to place the failure |
//!
//! A label names an implicated factor, never an established cause. The diagnosis id is the
//! sha256 of its canonical content (not of its child-run ids), so the same diagnosis twice has
//! the same id.

use std::collections::HashMap;

use oloproof_core::case::Case;
use oloproof_core::diagnosis::{
    label, CaseDiagnosis, ChildRun, Diagnosis, DiagnosisContent, InterventionKind,
};
use oloproof_core::identity::content_hash;
use oloproof_core::passage::Retrieval;
use oloproof_core::run::LoadedRun;
use oloproof_core::settings::{Intervention, RunSettings};
use oloproof_core::store::{Store, StoreLocation};
use oloproof_core::summary::CacheCounts;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::Verdict;

use crate::evaluators::judge_ranking;
use crate::run::{
    require_pass_fail, shim, EngineEvaluators, Recorded, RunObserver, RunOrigin, RunPlan,
};
use crate::settings::connector_spec;
use crate::EngineError;

fn passed(v: Option<&Verdict>) -> Option<bool> {
    match v {
        Some(Verdict::Pass) => Some(true),
        Some(Verdict::Fail) => Some(false),
        Some(Verdict::Score { value }) => Some(*value >= 1.0),
        _ => None,
    }
}

/// Runs a child run of `parent` over `cases` under `intervention`.
pub(crate) fn run_child(
    store: &mut dyn Store,
    location: &StoreLocation,
    parent: &LoadedRun,
    settings: RunSettings,
    cases: &[&Case],
    recorded: &HashMap<String, Retrieval>,
    observer: &mut dyn RunObserver,
) -> Result<(String, CacheCounts), EngineError> {
    let options = connector_spec(&settings.options, &settings.config_dir, &shim(location)?);
    let plan = RunPlan {
        settings,
        connector: Some(options),
        first: None,
        recorded: Recorded {
            retrievals: recorded.clone(),
            traces: HashMap::new(),
        },
        max_error_rate: 1.0,
        max_cost: None,
    };
    let outcome = plan.start(
        store,
        location,
        cases.iter().copied(),
        RunOrigin {
            config_path: &parent.record.config_path,
            system_json: &parent.record.system_json,
            parent: Some(&parent.record.id),
        },
        observer,
    )?;
    let run_id = outcome.run_id;
    Ok((run_id, outcome.summary.cache))
}

/// Why `kind` cannot run on a run of recorded cases.
fn recorded_refusal(run_id: &str, dataset: &str, kind: &InterventionKind) -> String {
    match kind {
        InterventionKind::GoldContext => format!(
            "{run_id} evaluated recorded cases ({dataset}); recorded runs cannot be re-executed, \
             and the {} intervention (and its control) re-executes the system",
            kind.describe()
        ),
        _ => format!(
            "{run_id} evaluated recorded cases ({dataset}); the {} intervention replays the \
             recorded candidates but needs a generator to answer again, and a recorded dataset \
             has none (its control re-executes too); run the system with `system:` to diagnose",
            kind.describe()
        ),
    }
}

/// A `judge:NAME` reranker must name a local `cross_encoder` (or `nli`) judge of the run's
/// `judges:`.
fn check_reranker_judge(
    judges: &std::collections::BTreeMap<String, serde_json::Value>,
    name: &str,
) -> Result<(), EngineError> {
    let Some(judge) = judges.get(name) else {
        let known: Vec<&str> = judges.keys().map(String::as_str).collect();
        let hint = oloproof_core::source::did_you_mean(name, known.iter().copied())
            .map(|s| format!("; did you mean `judge:{s}`?"))
            .unwrap_or_default(); // no close name: no hint
        return Err(EngineError::Usage(format!(
            "--reranker judge:{name}: the run has no judge `{name}`{hint}"
        )));
    };
    let local = judge.get("provider").and_then(serde_json::Value::as_str) == Some("local");
    let kind = judge.get("kind").and_then(serde_json::Value::as_str);
    if !local || !matches!(kind, Some("cross_encoder" | "nli")) {
        return Err(EngineError::Usage(format!(
            "--reranker judge:{name}: a reranker judge is a local sequence-pair classifier \
             (`provider: local`, `kind: cross_encoder`)"
        )));
    }
    Ok(())
}

/// Runs a diagnosis of `run_id`'s failures on `criterion` under `kind`.
pub fn diagnose(
    location: &StoreLocation,
    run_id: &str,
    criterion: &str,
    kind: InterventionKind,
    observer: &mut dyn RunObserver,
) -> Result<Diagnosis, EngineError> {
    let mut store = oloproof_store::open(location)?;
    let parent = store.load_run(run_id, &EngineEvaluators)?;
    if parent.settings.intervention.is_some() {
        return Err(EngineError::Usage(format!(
            "{run_id} is itself a child run of a diagnosis; diagnose its parent"
        )));
    }
    if let Some(dataset) = &parent.settings.dataset {
        return Err(EngineError::Usage(recorded_refusal(
            run_id,
            &dataset.path.display().to_string(),
            &kind,
        )));
    }
    require_pass_fail(&parent, criterion, "diagnose")?;
    if let InterventionKind::Reranker { reranker } = &kind {
        if let Some(name) = reranker.strip_prefix(crate::execute::JUDGE_RERANKER_PREFIX) {
            check_reranker_judge(&parent.settings.options.judges, name)?;
        }
    }
    let mut selected: Vec<&Case> = Vec::new();
    let mut not_diagnosable = Vec::new();
    for (case, _, verdicts) in &parent.cases {
        let v = verdicts
            .iter()
            .find(|v| v.criterion == criterion)
            .map(|v| &v.verdict);
        let failed = matches!(v, Some(Verdict::Fail))
            || matches!(v, Some(Verdict::Score { value }) if *value < 1.0);
        if !failed {
            continue;
        }
        if case
            .expected
            .gold_context
            .as_ref()
            .is_some_and(|g| !g.is_empty())
        {
            selected.push(case);
        } else {
            not_diagnosable.push(case.id.clone());
        }
    }
    let traces: HashMap<&str, &Trace> = parent
        .cases
        .iter()
        .filter_map(|(c, t, _)| t.as_ref().map(|t| (c.id.as_str(), t)))
        .collect();
    let recorded: HashMap<String, Retrieval> = selected
        .iter()
        .filter_map(|c| {
            traces
                .get(c.id.as_str())
                .and_then(|t| t.retrieval.clone())
                .map(|r| (c.id.clone(), r))
        })
        .collect();
    let mut child_runs = Vec::new();
    let mut stages = CacheCounts::default();
    let mut outcomes: HashMap<String, (Option<bool>, Option<bool>)> = HashMap::new();
    let mut labels_from = None;
    let mut carried: HashMap<String, CaseDiagnosis> = HashMap::new();
    if !matches!(kind, InterventionKind::GoldContext) {
        // A stored diagnosis that does not read back is corrupt: say so, rather than diagnose
        // again as if there were none.
        let prior = store
            .diagnoses_of(run_id)?
            .into_iter()
            .map(|d| {
                serde_json::from_str::<Diagnosis>(&d.content_json).map_err(|source| {
                    EngineError::Corrupt {
                        what: format!("diagnosis {}", d.id),
                        source,
                    }
                })
            })
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .find(|d| {
                d.content.criterion == criterion
                    && d.content.intervention == InterventionKind::GoldContext
            });
        if let Some(prior) = prior {
            labels_from = Some(prior.id.clone());
            child_runs.extend(prior.child_runs.clone());
            carried = prior
                .content
                .cases
                .into_iter()
                .map(|c| (c.case_id.clone(), c))
                .collect();
        }
    }
    if !selected.is_empty() {
        let base = RunSettings {
            intervention: None,
            use_cache: true,
            ..parent.settings.clone()
        };
        let (treated, control) = match &kind {
            InterventionKind::GoldContext => (
                RunSettings {
                    intervention: Some(Intervention {
                        label: "gold_context".into(),
                        gold_context: true,
                        ..Default::default()
                    }),
                    ..base.clone()
                },
                RunSettings {
                    intervention: Some(Intervention {
                        label: "control".into(),
                        fresh_generation: true,
                        ..Default::default()
                    }),
                    ..base.clone()
                },
            ),
            other => {
                let mut treated = base.clone();
                let mut intervention = Intervention {
                    replay_from: Some(run_id.to_string()),
                    ..Default::default()
                };
                match other {
                    InterventionKind::TopK { top_k } => {
                        treated.system.top_k = *top_k;
                        intervention.label = format!("top_k={top_k}");
                    }
                    InterventionKind::TokenBudget { token_budget } => {
                        treated.system.token_budget = Some(*token_budget);
                        intervention.label = format!("token_budget={token_budget}");
                    }
                    InterventionKind::Reranker { reranker } => {
                        intervention.reranker = Some(reranker.clone());
                        intervention.label = format!("reranker={reranker}");
                    }
                    InterventionKind::GoldContext => {}
                }
                treated.intervention = Some(intervention);
                let control = RunSettings {
                    intervention: Some(Intervention {
                        label: "replay_control".into(),
                        replay_from: Some(run_id.to_string()),
                        fresh_generation: true,
                        ..Default::default()
                    }),
                    ..base.clone()
                };
                (treated, control)
            }
        };
        let (treated_id, treated_stages) = run_child(
            store.as_mut(),
            location,
            &parent,
            treated,
            &selected,
            &recorded,
            observer,
        )?;
        let (control_id, _) = run_child(
            store.as_mut(),
            location,
            &parent,
            control,
            &selected,
            &recorded,
            observer,
        )?;
        stages = treated_stages;
        let control_role = if matches!(kind, InterventionKind::GoldContext) {
            "control"
        } else {
            "replay control"
        };
        child_runs.push(ChildRun {
            role: kind.describe(),
            run_id: treated_id.clone(),
        });
        child_runs.push(ChildRun {
            role: control_role.into(),
            run_id: control_id.clone(),
        });
        let treated_run = store.load_run(&treated_id, &EngineEvaluators)?;
        let control_run = store.load_run(&control_id, &EngineEvaluators)?;
        for case in &selected {
            let t = passed(treated_run.verdict(&case.id, criterion).map(|v| &v.verdict));
            let c = passed(control_run.verdict(&case.id, criterion).map(|v| &v.verdict));
            outcomes.insert(case.id.clone(), (t, c));
        }
    }
    let top_k = parent.settings.system.top_k;
    let cases: Vec<CaseDiagnosis> = selected
        .iter()
        .map(|case| {
            let (recovered, control_passed) =
                outcomes.get(&case.id).copied().unwrap_or((None, None));
            let trace = traces.get(case.id.as_str()).copied();
            let best = trace
                .and_then(|t| t.retrieval.as_ref())
                // A case without relevance labels has no best position (not applicable).
                .and_then(|r| judge_ranking(case, r, Default::default()).ok())
                .and_then(|j| j.best_position);
            let (label, reason, strength) = if let Some(prior) = carried.get(&case.id) {
                (
                    prior.label.clone(),
                    prior.reason.clone(),
                    prior.strength.clone(),
                )
            } else if !matches!(kind, InterventionKind::GoldContext) {
                let strength = if recovered == Some(true) {
                    "intervention_recovery"
                } else {
                    "intervention_non_recovery"
                };
                (
                    label::UNLABELLED.to_string(),
                    "no_gold_context_diagnosis".to_string(),
                    strength.to_string(),
                )
            } else {
                let (l, r, s) = gold_label(case, trace, top_k, recovered, control_passed);
                (l.to_string(), r.to_string(), s.to_string())
            };
            CaseDiagnosis {
                case_id: case.id.clone(),
                label,
                reason,
                strength,
                best_relevant_position: best,
                recovered,
                control_passed,
            }
        })
        .collect();
    let content = DiagnosisContent {
        run_id: run_id.to_string(),
        criterion: criterion.to_string(),
        intervention: kind,
        selected: selected.iter().map(|c| c.id.clone()).collect(),
        not_diagnosable,
        cases,
        labels_from,
    };
    let value = serde_json::to_value(&content).map_err(|source| EngineError::Corrupt {
        what: "diagnosis".into(),
        source,
    })?;
    let id = format!("sha256:{}", content_hash(&value));
    let diagnosis = Diagnosis {
        id: id.clone(),
        content,
        child_runs,
        stages,
    };
    let stored = serde_json::to_string(&diagnosis).map_err(|source| EngineError::Corrupt {
        what: "diagnosis".into(),
        source,
    })?;
    store.save_diagnosis(&id, run_id, &stored)?;
    Ok(diagnosis)
}

/// The gold-context label of one case.
fn gold_label(
    case: &Case,
    trace: Option<&Trace>,
    top_k: usize,
    recovered: Option<bool>,
    control_passed: Option<bool>,
) -> (&'static str, &'static str, &'static str) {
    const RECOVERY: &str = "intervention_recovery";
    const NON_RECOVERY: &str = "intervention_non_recovery";
    match (recovered, control_passed) {
        (_, Some(true)) => return (label::UNSTABLE, "passes_on_control", NON_RECOVERY),
        (None, _) | (_, None) => return (label::NOT_DIAGNOSED, "intervention_error", NON_RECOVERY),
        (Some(false), _) => {
            return (
                label::GENERATION_FAILURE,
                "fails_with_gold_context",
                NON_RECOVERY,
            )
        }
        (Some(true), Some(false)) => {}
    }
    let Some(trace) = trace else {
        return (label::UNLOCATED, "no_trace", RECOVERY);
    };
    let Some(retrieval) = &trace.retrieval else {
        return (label::UNLOCATED, "no_retrieval", RECOVERY);
    };
    let Ok(judged) = judge_ranking(case, retrieval, Default::default()) else {
        return (label::UNLOCATED, "no_relevance_labels", RECOVERY);
    };
    let Some(best) = judged.best_position else {
        return (label::RETRIEVAL_MISS, "relevant_not_retrieved", RECOVERY);
    };
    if best > top_k {
        return (label::RANKED_OUT, "relevant_below_top_k", RECOVERY);
    }
    let relevant: std::collections::HashSet<&str> = case
        .expected
        .relevant
        .iter()
        .flatten()
        .filter(|r| r.grade >= 1.0)
        .map(|r| r.doc_id.as_str())
        .collect();
    let in_context = trace.context.as_ref().is_some_and(|c| {
        c.passages
            .iter()
            .any(|p| relevant.contains(p.passage.doc_id.as_str()))
    });
    if in_context {
        (label::CONTEXT_DISTRACTION, "relevant_in_context", RECOVERY)
    } else {
        (
            label::CONTEXT_ASSEMBLY_LOSS,
            "relevant_dropped_from_context",
            RECOVERY,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oloproof_core::case::parse_cases;
    use oloproof_core::context::assemble;
    use oloproof_core::passage::Passage;

    fn case() -> Case {
        let line = r#"{"id":"c","input":{"question":"q"},"expected":{"answer":"a","relevant":[{"doc_id":"rel"}],"gold_context":[{"doc_id":"rel","text":"a"}]}}"#;
        parse_cases("c.jsonl", line).unwrap().remove(0)
    }

    fn trace(docs: &[&str], top_k: usize, budget: Option<(usize, &[usize])>) -> Trace {
        let candidates: Vec<Passage> = docs
            .iter()
            .map(|d| Passage {
                doc_id: d.to_string(),
                chunk_id: None,
                score: None,
                text: None,
                metadata: None,
            })
            .collect();
        let mut t = Trace::new("c");
        t.context = Some(assemble(&candidates, top_k, budget));
        t.retrieval = Some(Retrieval::new(None, docs.len(), candidates));
        t
    }

    #[test]
    fn every_label() {
        let c = case();
        let label_of = |t: &Trace, rec, ctl| gold_label(&c, Some(t), 2, rec, ctl).0;
        let miss = trace(&["x", "y", "z"], 2, None);
        assert_eq!(
            label_of(&miss, Some(true), Some(false)),
            label::RETRIEVAL_MISS
        );
        let below = trace(&["x", "y", "rel"], 2, None);
        assert_eq!(label_of(&below, Some(true), Some(false)), label::RANKED_OUT);
        let dropped = trace(&["x", "rel"], 2, Some((10, &[8, 5])));
        assert_eq!(
            label_of(&dropped, Some(true), Some(false)),
            label::CONTEXT_ASSEMBLY_LOSS
        );
        let present = trace(&["x", "rel"], 2, None);
        assert_eq!(
            label_of(&present, Some(true), Some(false)),
            label::CONTEXT_DISTRACTION
        );
        assert_eq!(
            label_of(&present, Some(false), Some(false)),
            label::GENERATION_FAILURE
        );
        assert_eq!(label_of(&present, Some(false), Some(true)), label::UNSTABLE);
        assert_eq!(label_of(&present, None, Some(false)), label::NOT_DIAGNOSED);
        let unlabelled = parse_cases("c.jsonl", r#"{"id":"c","input":{}}"#)
            .unwrap()
            .remove(0);
        assert_eq!(
            gold_label(&unlabelled, Some(&present), 2, Some(true), Some(false)).0,
            label::UNLOCATED
        );
    }
}
