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
//! - `reranker module:function`: the recorded candidates pass through the user's reranker first;
//! - `no-rerank`: the recorded input of the rerank stage (`pipeline.pre_rerank`) goes to
//!   assembly as it is (no retrieval call, no rerank);
//! - `lane=NAME`: the lane's recorded ranking (`pipeline.lanes[NAME]`) replaces the fused list,
//!   then goes through the system's rerank stage (behind its cache) if it has one; a trace
//!   without the lane retrieves through it, behind the retrieval cache;
//! - `raw-query`: retrieval again with the raw question instead of the rewrites, and
//!   `no-filter`: retrieval again with `skip_filters` in every request; both behind the caches,
//!   under their own keys (a raw-question call the run or the gold-context control recorded is
//!   a hit).
//!
//! The replay control replays the recorded final retrieval. The gold-context control of a
//! rewriting system whose traces lack `pipeline.raw_query` retrieves again instead (the
//! recorded calls are cache hits) and records the raw question's retrieval, so that
//! `REWRITE_DRIFT` can be told.
//!
//! Labels (gold context), from the parent trace and the two outcomes, in this order:
//!
//! | label | reason | when |
//! | --- | --- | --- |
//! | `UNSTABLE` | `passes_on_control` | the control re-execution passes: flaky, not diagnosed |
//! | `NOT_DIAGNOSED` | `intervention_error` | a child execution ended in an error |
//! | `GENERATION_FAILURE` | `fails_with_gold_context` | still fails with the gold context |
//! | `UNLOCATED` | `no_relevance_labels` | recovered; the case has no relevance labels to place the failure |
//! | `FILTERED_OUT` | `every_relevant_document_filtered` | recovered; none retrieved, and `trace.filter_check` finds every relevant document failing an applied predicate (named) |
//! | `CONTEXT_DISTRACTION` | `relevant_in_context` | recovered; relevant within `top_k` and in the context among other passages |
//! | `CONTEXT_ASSEMBLY_LOSS` | `relevant_dropped_from_context` | recovered; relevant within `top_k` but not in the context |
//! | `RERANKED_OUT` | `relevant_demoted_by_rerank` | recovered; relevant within `top_k` of the rerank's input, not after it |
//! | `FUSION_LOSS` | `relevant_lost_in_fusion` | recovered; a lane's ranking (or one retrieve call) had it within `top_k`, the fused list did not (lanes named) |
//! | `REWRITE_DRIFT` | `raw_question_retrieves_relevant` | recovered; the raw question's retrieval has it within `top_k`, the rewrites' do not (rewrites named) |
//! | `HOP_MISS` | `hop_found_no_new_relevant`, `relevant_missing_after_last_hop` | recovered; a relevant document in no hop's candidates (the hop named); checked before the context labels |
//! | `RETRIEVAL_MISS` | `relevant_not_retrieved` | recovered; no relevant candidate was retrieved |
//! | `RANKED_OUT` | `relevant_below_top_k` | recovered; relevant only below `top_k` |
//!
//! The pipeline labels walk back from the final list: each names the stage right after the
//! last point where relevant evidence was within `top_k` (`locate`).
//!
//! A replay carries the labels of the run's gold-context diagnosis and confirms the label it
//! targets (`top-k`, `reranker`: `RANKED_OUT`; `token-budget`: `CONTEXT_ASSEMBLY_LOSS`;
//! `no-rerank`: `RERANKED_OUT`; `no-filter`: `FILTERED_OUT`; `raw-query`: `REWRITE_DRIFT`;
//! `lane=NAME`: the `FUSION_LOSS` cases naming that lane) where the case recovered and the
//! replay control still failed; every other targeted case is reported as not confirmed, with
//! why. `HOP_MISS` has no replay: the gold-context recovery, which supplies the missing hop's
//! evidence, is its confirmation.
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
use oloproof_core::passage::{Passage, Retrieval};
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
    recorded: Recorded<'_>,
    observer: &mut dyn RunObserver,
) -> Result<(String, CacheCounts), EngineError> {
    let options = connector_spec(&settings.options, &settings.config_dir, &shim(location)?);
    let plan = RunPlan {
        settings,
        connector: Some(options),
        first: None,
        recorded,
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
        InterventionKind::NoFilter | InterventionKind::RawQuery => format!(
            "{run_id} evaluated recorded cases ({dataset}); the {} intervention retrieves and \
             generates again, and a recorded dataset has no system to call; run the system with \
             `system:` to diagnose",
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

/// Whether the system the run ran can take the pipeline intervention `kind`: `no-rerank`
/// needs a rerank stage, `raw-query` a rewrite stage, `lane=NAME` a declared lane among
/// several (one lane has no fusion to bypass).
fn check_pipeline_intervention(
    system: &oloproof_core::settings::SystemSettings,
    kind: &InterventionKind,
) -> Result<(), EngineError> {
    let declared = |what: &str| {
        if system.stages.is_empty() {
            format!("the system declares no optional stage ({what})")
        } else {
            format!("the system declares {} ({what})", system.stages.join(", "))
        }
    };
    match kind {
        InterventionKind::NoRerank if !system.has_stage("rerank") => {
            Err(EngineError::Usage(format!(
                "--intervention no-rerank: {}; there is no rerank to skip",
                declared("no `rerank`")
            )))
        }
        InterventionKind::RawQuery if !system.has_stage("rewrite") => {
            Err(EngineError::Usage(format!(
                "--intervention raw-query: {}; its queries are already the raw question",
                declared("no `rewrite`")
            )))
        }
        InterventionKind::Lane { lane } => {
            let lanes = if system.lanes.is_empty() {
                "none".to_string()
            } else {
                system.lanes.join(", ")
            };
            if !system.lanes.iter().any(|l| l == lane) {
                let hint = oloproof_core::source::did_you_mean(
                    lane,
                    system.lanes.iter().map(String::as_str),
                )
                .map(|s| format!("; did you mean `lane={s}`?"))
                .unwrap_or_default(); // no close name: no hint
                return Err(EngineError::Usage(format!(
                    "--intervention lane={lane}: the system declares no lane `{lane}` (declared lanes: {lanes}){hint}"
                )));
            }
            if system.lanes.len() < 2 {
                return Err(EngineError::Usage(format!(
                    "--intervention lane={lane}: the system declares one lane ({lanes}); there is no fusion to bypass"
                )));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// What the treated child run of `kind` replays for one case: the recorded list it starts
/// from (`None`: the intervention retrieves again, behind the caches).
fn replayed_list(kind: &InterventionKind, trace: &Trace) -> Option<Retrieval> {
    let final_list = trace.retrieval.as_ref();
    let pipeline = trace.pipeline.as_ref();
    let with = |candidates: &[Passage]| {
        final_list.map(|r| Retrieval {
            candidates: candidates.to_vec(),
            ..r.clone()
        })
    };
    match kind {
        InterventionKind::NoFilter | InterventionKind::RawQuery => None,
        // The rerank's input; a case whose rerank did not run has its final list unreranked.
        InterventionKind::NoRerank => match pipeline.and_then(|p| p.pre_rerank.as_deref()) {
            Some(pre) => with(pre),
            None => final_list.cloned(),
        },
        // The lane's own ranking; a trace without it retrieves through the lane (cached).
        InterventionKind::Lane { lane } => pipeline
            .and_then(|p| p.lanes.get(lane))
            .and_then(|l| with(l)),
        _ => final_list.cloned(),
    }
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
    check_pipeline_intervention(&parent.settings.system, &kind)?;
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
    let replayed: HashMap<String, Retrieval> = selected
        .iter()
        .filter_map(|c| {
            traces
                .get(c.id.as_str())
                .and_then(|t| replayed_list(&kind, t))
                .map(|r| (c.id.clone(), r))
        })
        .collect();
    // A rewriting system's gold-context control retrieves again (every recorded call is a
    // cache hit) to record the raw question's retrieval beside the rewrites, which
    // `REWRITE_DRIFT` reads, when the parent run did not record it.
    let control_retrieves_raw = matches!(kind, InterventionKind::GoldContext)
        && parent.settings.system.has_stage("rewrite")
        && selected.iter().any(|c| {
            traces
                .get(c.id.as_str())
                .is_some_and(|t| t.pipeline.as_ref().is_none_or(|p| p.raw_query.is_none()))
        });
    let mut child_runs = Vec::new();
    let mut stages = CacheCounts::default();
    let mut outcomes: HashMap<String, (Option<bool>, Option<bool>)> = HashMap::new();
    let mut labels_from = None;
    let mut carried: HashMap<String, CaseDiagnosis> = HashMap::new();
    // The raw question's retrieval the gold-context control recorded, by case.
    let mut control_raw: HashMap<String, Retrieval> = HashMap::new();
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
                let retrieves = matches!(
                    other,
                    InterventionKind::NoFilter | InterventionKind::RawQuery
                );
                let mut intervention = Intervention {
                    replay_from: (!retrieves).then(|| run_id.to_string()),
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
                    InterventionKind::NoRerank => {
                        intervention.no_rerank = true;
                        intervention.label = "no_rerank".into();
                    }
                    InterventionKind::NoFilter => {
                        intervention.no_filter = true;
                        intervention.label = "no_filter".into();
                    }
                    InterventionKind::RawQuery => {
                        intervention.raw_query = true;
                        intervention.label = "raw_query".into();
                    }
                    InterventionKind::Lane { lane } => {
                        intervention.lane = Some(lane.clone());
                        intervention.label = format!("lane={lane}");
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
        let treated_replay = Recorded {
            retrievals: replayed,
            rerank: matches!(kind, InterventionKind::Lane { .. }),
            ..Default::default()
        };
        let control_replay = if control_retrieves_raw {
            Recorded {
                raw_query: true,
                ..Default::default()
            }
        } else {
            Recorded {
                retrievals: recorded,
                ..Default::default()
            }
        };
        let (treated_id, treated_stages) = run_child(
            store.as_mut(),
            location,
            &parent,
            treated,
            &selected,
            treated_replay,
            observer,
        )?;
        let (control_id, _) = run_child(
            store.as_mut(),
            location,
            &parent,
            control,
            &selected,
            control_replay,
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
        for (case, trace, _) in &control_run.cases {
            if let Some(raw) = trace
                .as_ref()
                .and_then(|t| t.pipeline.as_ref())
                .and_then(|p| p.raw_query.clone())
            {
                control_raw.insert(case.id.clone(), raw);
            }
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
            let (label, reason, strength, implicated) = if let Some(prior) = carried.get(&case.id) {
                (
                    prior.label.clone(),
                    prior.reason.clone(),
                    prior.strength.clone(),
                    prior.implicated.clone(),
                )
            } else if !matches!(kind, InterventionKind::GoldContext) {
                let strength = if recovered == Some(true) {
                    RECOVERY
                } else {
                    NON_RECOVERY
                };
                (
                    label::UNLABELLED.to_string(),
                    "no_gold_context_diagnosis".to_string(),
                    strength.to_string(),
                    Vec::new(),
                )
            } else {
                let raw = trace
                    .and_then(|t| t.pipeline.as_ref())
                    .and_then(|p| p.raw_query.as_ref())
                    .or_else(|| control_raw.get(&case.id));
                let g = gold_label(case, trace, raw, top_k, recovered, control_passed);
                (
                    g.label.to_string(),
                    g.reason.to_string(),
                    g.strength.to_string(),
                    g.implicated,
                )
            };
            CaseDiagnosis {
                case_id: case.id.clone(),
                label,
                reason,
                strength,
                best_relevant_position: best,
                recovered,
                control_passed,
                implicated,
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

const RECOVERY: &str = "intervention_recovery";
const NON_RECOVERY: &str = "intervention_non_recovery";

/// The gold-context label of one case: its label, reason code and strength, and what the
/// label names ([`CaseDiagnosis::implicated`]).
#[derive(Debug, Clone, PartialEq)]
struct GoldLabel {
    label: &'static str,
    reason: &'static str,
    strength: &'static str,
    implicated: Vec<String>,
}

impl GoldLabel {
    fn new(label: &'static str, reason: &'static str, strength: &'static str) -> Self {
        GoldLabel {
            label,
            reason,
            strength,
            implicated: Vec::new(),
        }
    }

    fn recovered(label: &'static str, reason: &'static str, implicated: Vec<String>) -> Self {
        GoldLabel {
            label,
            reason,
            strength: RECOVERY,
            implicated,
        }
    }
}

/// The gold-context label of one case, from the two outcomes and the parent trace;
/// `raw_query` is the raw question's retrieval (the parent's `pipeline.raw_query`, or the one
/// the control recorded).
fn gold_label(
    case: &Case,
    trace: Option<&Trace>,
    raw_query: Option<&Retrieval>,
    top_k: usize,
    recovered: Option<bool>,
    control_passed: Option<bool>,
) -> GoldLabel {
    match (recovered, control_passed) {
        (_, Some(true)) => {
            return GoldLabel::new(label::UNSTABLE, "passes_on_control", NON_RECOVERY)
        }
        (None, _) | (_, None) => {
            return GoldLabel::new(label::NOT_DIAGNOSED, "intervention_error", NON_RECOVERY)
        }
        (Some(false), _) => {
            return GoldLabel::new(
                label::GENERATION_FAILURE,
                "fails_with_gold_context",
                NON_RECOVERY,
            )
        }
        (Some(true), Some(false)) => {}
    }
    let Some(trace) = trace else {
        return GoldLabel::new(label::UNLOCATED, "no_trace", RECOVERY);
    };
    let Some(retrieval) = &trace.retrieval else {
        return GoldLabel::new(label::UNLOCATED, "no_retrieval", RECOVERY);
    };
    let Ok(judged) = judge_ranking(case, retrieval, Default::default()) else {
        return GoldLabel::new(label::UNLOCATED, "no_relevance_labels", RECOVERY);
    };
    locate(
        case,
        trace,
        retrieval,
        judged.best_position,
        raw_query,
        top_k,
    )
}

/// The relevant documents (grade ≥ 1) of a case, in label order, once each.
fn relevant_docs(case: &Case) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for r in case.expected.relevant.iter().flatten() {
        if r.grade >= 1.0 && !out.contains(&r.doc_id.as_str()) {
            out.push(r.doc_id.as_str());
        }
    }
    out
}

/// The 1-based position of the first relevant document of `list` (document unit, as
/// [`judge_ranking`] counts positions).
fn best_in(relevant: &[&str], list: &[Passage]) -> Option<usize> {
    list.iter()
        .position(|p| relevant.contains(&p.doc_id.as_str()))
        .map(|i| i + 1)
}

/// Where a recovered case's relevant evidence was lost, walking the pipeline from the final
/// list back to the question: the label names the stage after the last point where relevant
/// evidence was within `top_k`.
///
/// 1. `FILTERED_OUT` (`every_relevant_document_filtered`): none retrieved, and the host's
///    filter check finds every relevant document failing an applied predicate (named).
/// 2. A relevant document within `top_k` of the final list, and no hop miss (below): the
///    context labels (`CONTEXT_DISTRACTION`, `CONTEXT_ASSEMBLY_LOSS`).
/// 3. `RERANKED_OUT` (`relevant_demoted_by_rerank`): within `top_k` of the rerank's input.
/// 4. `FUSION_LOSS` (`relevant_lost_in_fusion`): lists were fused, and a lane's ranking (or
///    one retrieve call) had it within `top_k` (the lanes named).
/// 5. `REWRITE_DRIFT` (`raw_question_retrieves_relevant`): the system rewrote the question,
///    and the raw question's retrieval has it within `top_k` (the rewrites named).
/// 6. `HOP_MISS`: the retrieval went through hops, and a relevant document is in no hop's
///    candidates nor the final list; the hop named is the first that found no relevant
///    document not found before (`hop_found_no_new_relevant`), else the search stopped
///    after its last hop (`relevant_missing_after_last_hop`).
/// 7. `RETRIEVAL_MISS` (none retrieved) or `RANKED_OUT` (only below `top_k`), as for a
///    two-stage system.
fn locate(
    case: &Case,
    trace: &Trace,
    retrieval: &Retrieval,
    best: Option<usize>,
    raw_query: Option<&Retrieval>,
    top_k: usize,
) -> GoldLabel {
    let relevant = relevant_docs(case);
    let within = |list: &[Passage]| best_in(&relevant, list).is_some_and(|p| p <= top_k);
    if best.is_none() {
        if let Some(check) = &trace.filter_check {
            if check.all_gold_excluded() == Some(true) {
                let mut predicates: Vec<String> = Vec::new();
                for p in check.gold.iter().flat_map(|g| g.failed.iter()) {
                    if !predicates.contains(p) {
                        predicates.push(p.clone());
                    }
                }
                return GoldLabel::recovered(
                    label::FILTERED_OUT,
                    "every_relevant_document_filtered",
                    predicates,
                );
            }
        }
    }
    let hops = &retrieval.hops;
    let missing: Vec<&str> = if hops.is_empty() {
        Vec::new()
    } else {
        relevant
            .iter()
            .copied()
            .filter(|d| {
                !hops
                    .iter()
                    .flat_map(|h| h.candidates.iter())
                    .chain(retrieval.candidates.iter())
                    .any(|p| p.doc_id == *d)
            })
            .collect()
    };
    let in_top_k = best.is_some_and(|b| b <= top_k);
    if in_top_k && missing.is_empty() {
        let in_context = trace.context.as_ref().is_some_and(|c| {
            c.passages
                .iter()
                .any(|p| relevant.contains(&p.passage.doc_id.as_str()))
        });
        return if in_context {
            GoldLabel::recovered(
                label::CONTEXT_DISTRACTION,
                "relevant_in_context",
                Vec::new(),
            )
        } else {
            GoldLabel::recovered(
                label::CONTEXT_ASSEMBLY_LOSS,
                "relevant_dropped_from_context",
                Vec::new(),
            )
        };
    }
    if !in_top_k {
        if let Some(pipeline) = &trace.pipeline {
            if pipeline.pre_rerank.as_deref().is_some_and(within) {
                return GoldLabel::recovered(
                    label::RERANKED_OUT,
                    "relevant_demoted_by_rerank",
                    Vec::new(),
                );
            }
            if pipeline.fused.is_some() {
                let mut lanes: Vec<String> = pipeline
                    .lanes
                    .iter()
                    .filter(|(_, l)| within(l))
                    .map(|(n, _)| n.clone())
                    .collect();
                let mut any_call = false;
                for call in &pipeline.retrievals {
                    if within(&call.retrieval.candidates) {
                        any_call = true;
                        if let Some(lane) = &call.lane {
                            if !lanes.contains(lane) {
                                lanes.push(lane.clone());
                            }
                        }
                    }
                }
                if !lanes.is_empty() || any_call {
                    lanes.sort();
                    return GoldLabel::recovered(
                        label::FUSION_LOSS,
                        "relevant_lost_in_fusion",
                        lanes,
                    );
                }
            }
            if let (Some(rewrite), Some(raw)) = (&pipeline.rewrite, raw_query) {
                if within(&raw.candidates) {
                    return GoldLabel::recovered(
                        label::REWRITE_DRIFT,
                        "raw_question_retrieves_relevant",
                        rewrite.queries.clone(),
                    );
                }
            }
        }
    }
    if !missing.is_empty() {
        let mut found: Vec<&str> = Vec::new();
        let mut stalled = None;
        for (i, hop) in hops.iter().enumerate() {
            let new: Vec<&str> = hop
                .candidates
                .iter()
                .map(|p| p.doc_id.as_str())
                .filter(|d| relevant.contains(d) && !found.contains(d))
                .collect();
            if new.is_empty() {
                stalled = Some(i + 1);
                break;
            }
            found.extend(new);
        }
        let missing = format!("missing {}", missing.join(", "));
        return match stalled {
            Some(n) => GoldLabel::recovered(
                label::HOP_MISS,
                "hop_found_no_new_relevant",
                vec![format!("hop {n}"), missing],
            ),
            None => GoldLabel::recovered(
                label::HOP_MISS,
                "relevant_missing_after_last_hop",
                vec![format!("after hop {}", hops.len()), missing],
            ),
        };
    }
    match best {
        None => GoldLabel::recovered(label::RETRIEVAL_MISS, "relevant_not_retrieved", Vec::new()),
        Some(_) => GoldLabel::recovered(label::RANKED_OUT, "relevant_below_top_k", Vec::new()),
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
        let label_of = |t: &Trace, rec, ctl| gold_label(&c, Some(t), None, 2, rec, ctl).label;
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
            gold_label(
                &unlabelled,
                Some(&present),
                None,
                2,
                Some(true),
                Some(false)
            )
            .label,
            label::UNLOCATED
        );
    }

    fn docs(ids: &[&str]) -> Vec<Passage> {
        ids.iter()
            .map(|d| Passage {
                doc_id: d.to_string(),
                chunk_id: None,
                score: None,
                text: None,
                metadata: None,
            })
            .collect()
    }

    /// A case needing `rel` (and `rel2` when `two`).
    fn case_of(two: bool) -> Case {
        let relevant = if two {
            r#"[{"doc_id":"rel"},{"doc_id":"rel2"}]"#
        } else {
            r#"[{"doc_id":"rel"}]"#
        };
        let line = format!(
            r#"{{"id":"c","input":{{"question":"q"}},"expected":{{"answer":"a","relevant":{relevant},"gold_context":[{{"doc_id":"rel","text":"a"}}]}}}}"#
        );
        parse_cases("c.jsonl", &line).unwrap().remove(0)
    }

    /// A recovered case's label (top_k 2) on a trace whose final list is `final_list`, with
    /// its pipeline built by `f`.
    fn located(
        case: &Case,
        final_list: &[&str],
        raw: Option<&[&str]>,
        f: impl FnOnce(&mut Trace, &mut oloproof_core::pipeline::Pipeline),
    ) -> GoldLabel {
        let mut t = trace(final_list, 2, None);
        let mut p = oloproof_core::pipeline::Pipeline::default();
        f(&mut t, &mut p);
        t.pipeline = Some(Box::new(p));
        let raw = raw.map(|r| Retrieval::new(Some("q".into()), 6, docs(r)));
        gold_label(case, Some(&t), raw.as_ref(), 2, Some(true), Some(false))
    }

    fn fused(p: &mut oloproof_core::pipeline::Pipeline, ids: &[&str]) {
        p.fused = Some(oloproof_core::pipeline::Fused {
            method: "rrf k=60".into(),
            candidates: docs(ids),
        });
    }

    #[test]
    fn filtered_out_names_the_predicates_and_needs_every_gold_document_excluded() {
        use oloproof_core::pipeline::{FilterCheck, GoldFilterOutcome};
        let c = case_of(true);
        let outcome = |doc: &str, failed: &[&str], unknown: &[&str]| GoldFilterOutcome {
            doc_id: doc.into(),
            in_corpus: true,
            failed: failed.iter().map(|s| s.to_string()).collect(),
            unknown_fields: unknown.iter().map(|s| s.to_string()).collect(),
        };
        let tenant = r#"tenant = "acme""#;
        let locale = r#"locale = "en-US""#;
        let check = |gold: Vec<GoldFilterOutcome>| {
            move |t: &mut Trace, _: &mut oloproof_core::pipeline::Pipeline| {
                t.filter_check = Some(FilterCheck {
                    predicates: vec![tenant.into(), locale.into()],
                    gold,
                });
            }
        };
        let both = located(
            &c,
            &["x", "y"],
            None,
            check(vec![
                outcome("rel", &[tenant], &[]),
                outcome("rel2", &[tenant, locale], &[]),
            ]),
        );
        assert_eq!(both.label, label::FILTERED_OUT);
        assert_eq!(both.reason, "every_relevant_document_filtered");
        assert_eq!(
            both.implicated,
            vec![tenant.to_string(), locale.to_string()]
        );
        // One gold document passes every predicate: not the filter's doing.
        let one = located(
            &c,
            &["x", "y"],
            None,
            check(vec![
                outcome("rel", &[tenant], &[]),
                outcome("rel2", &[], &[]),
            ]),
        );
        assert_eq!(one.label, label::RETRIEVAL_MISS);
        // A gold document the predicates could not be judged on: not FILTERED_OUT either.
        let unknown = located(
            &c,
            &["x", "y"],
            None,
            check(vec![
                outcome("rel", &[tenant], &[]),
                outcome("rel2", &[], &["locale"]),
            ]),
        );
        assert_eq!(unknown.label, label::RETRIEVAL_MISS);
        // Retrieved all the same (an unfiltered lane): the filter removed nothing that mattered.
        let retrieved = located(
            &c,
            &["x", "y", "rel"],
            None,
            check(vec![
                outcome("rel", &[tenant], &[]),
                outcome("rel2", &[tenant], &[]),
            ]),
        );
        assert_eq!(retrieved.label, label::RANKED_OUT);
    }

    #[test]
    fn reranked_out_fusion_loss_and_rewrite_drift_name_the_stage_that_lost_the_evidence() {
        let c = case_of(false);
        // Within top_k before the rerank, below it after.
        let reranked = located(&c, &["x", "y", "rel"], None, |_, p| {
            p.pre_rerank = Some(docs(&["rel", "x", "y"]));
        });
        assert_eq!(
            (reranked.label, reranked.reason),
            (label::RERANKED_OUT, "relevant_demoted_by_rerank")
        );
        // Already below top_k before the rerank, and nothing was fused: ranked out.
        let below = located(&c, &["x", "y", "rel"], None, |_, p| {
            p.pre_rerank = Some(docs(&["x", "y", "rel"]));
        });
        assert_eq!(below.label, label::RANKED_OUT);
        // A lane had it at 2; the fusion put it at 4.
        let fusion = located(&c, &["x", "y", "z", "rel"], None, |_, p| {
            p.lanes.insert("bm25".into(), docs(&["x", "rel"]));
            p.lanes.insert("dense".into(), docs(&["y", "z", "rel"]));
            fused(p, &["x", "y", "z", "rel"]);
        });
        assert_eq!(
            (fusion.label, fusion.reason),
            (label::FUSION_LOSS, "relevant_lost_in_fusion")
        );
        assert_eq!(fusion.implicated, vec!["bm25".to_string()]);
        // The rerank is downstream of the fusion: in top_k after fusion, demoted by the rerank.
        let both = located(&c, &["x", "y", "rel"], None, |_, p| {
            p.lanes.insert("bm25".into(), docs(&["rel"]));
            fused(p, &["rel", "x", "y"]);
            p.pre_rerank = Some(docs(&["rel", "x", "y"]));
        });
        assert_eq!(both.label, label::RERANKED_OUT);
        // No fusion ran (one list): a lane's list cannot have been lost by it.
        let single = located(&c, &["x", "y", "rel"], None, |_, p| {
            p.lanes.insert("bm25".into(), docs(&["x", "rel"]));
        });
        assert_eq!(single.label, label::RANKED_OUT);
        // The raw question retrieves it within top_k; the rewrites do not.
        let rewrite = |t: &mut Trace, p: &mut oloproof_core::pipeline::Pipeline| {
            let _ = t;
            p.rewrite = Some(oloproof_core::pipeline::Rewrite {
                queries: vec!["q expanded".into()],
                usage: None,
            });
        };
        let drift = located(&c, &["x", "y"], Some(&["rel", "x"]), rewrite);
        assert_eq!(
            (drift.label, drift.reason),
            (label::REWRITE_DRIFT, "raw_question_retrieves_relevant")
        );
        assert_eq!(drift.implicated, vec!["q expanded".to_string()]);
        // Without the raw question's retrieval, or with it only below top_k: a retrieval miss.
        assert_eq!(
            located(&c, &["x", "y"], None, rewrite).label,
            label::RETRIEVAL_MISS
        );
        assert_eq!(
            located(&c, &["x", "y"], Some(&["x", "y", "rel"]), rewrite).label,
            label::RETRIEVAL_MISS
        );
        // A raw retrieval without a rewrite stage is no drift.
        assert_eq!(
            located(&c, &["x", "y"], Some(&["rel"]), |_, _| {}).label,
            label::RETRIEVAL_MISS
        );
    }

    #[test]
    fn hop_miss_names_the_hop_that_stopped_finding_evidence() {
        use oloproof_core::pipeline::Hop;
        let c = case_of(true);
        let hops = |lists: &[&[&str]]| {
            let hops: Vec<Hop> = lists
                .iter()
                .enumerate()
                .map(|(i, ids)| Hop {
                    query: Some(format!("hop query {i}")),
                    candidates: docs(ids),
                    filters: Vec::new(),
                })
                .collect();
            move |t: &mut Trace, _: &mut oloproof_core::pipeline::Pipeline| {
                t.retrieval.as_mut().unwrap().hops = hops;
            }
        };
        // Hop 1 found rel, hop 2 nothing new; rel2 never found, though rel is in the context.
        let stalled = located(&c, &["rel", "x", "y"], None, hops(&[&["rel", "x"], &["y"]]));
        assert_eq!(
            (stalled.label, stalled.reason),
            (label::HOP_MISS, "hop_found_no_new_relevant")
        );
        assert_eq!(
            stalled.implicated,
            vec!["hop 2".to_string(), "missing rel2".to_string()]
        );
        // Every hop found something new, and the search stopped short.
        let short = located(&c, &["rel", "x"], None, hops(&[&["rel", "x"]]));
        assert_eq!(short.reason, "relevant_missing_after_last_hop");
        assert_eq!(short.implicated[0], "after hop 1");
        // Every relevant document found by a hop: the context labels, as for any system.
        let found = located(
            &c,
            &["rel", "x", "rel2"],
            None,
            hops(&[&["rel", "x"], &["rel2"]]),
        );
        assert_eq!(found.label, label::CONTEXT_DISTRACTION);
        // Without hops, the same lists are a distraction, not a hop miss.
        assert_eq!(
            located(&c, &["rel", "x", "y"], None, |_, _| {}).label,
            label::CONTEXT_DISTRACTION
        );
    }

    #[test]
    fn replays_start_from_the_recorded_stage_or_retrieve_again() {
        let mut t = trace(&["x", "y", "rel"], 2, None);
        let mut p = oloproof_core::pipeline::Pipeline {
            pre_rerank: Some(docs(&["rel", "x", "y"])),
            ..Default::default()
        };
        p.lanes.insert("bm25".into(), docs(&["x", "rel"]));
        t.pipeline = Some(Box::new(p));
        let ids = |r: Option<Retrieval>| {
            r.map(|r| {
                r.candidates
                    .iter()
                    .map(|c| c.doc_id.clone())
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(
            ids(replayed_list(&InterventionKind::NoRerank, &t)),
            Some(vec!["rel".into(), "x".into(), "y".into()])
        );
        assert_eq!(
            ids(replayed_list(
                &InterventionKind::Lane {
                    lane: "bm25".into()
                },
                &t
            )),
            Some(vec!["x".into(), "rel".into()])
        );
        // A lane the trace lacks, and the re-retrieving interventions: retrieve (cached).
        assert!(replayed_list(&InterventionKind::Lane { lane: "tri".into() }, &t).is_none());
        assert!(replayed_list(&InterventionKind::NoFilter, &t).is_none());
        assert!(replayed_list(&InterventionKind::RawQuery, &t).is_none());
        // No rerank ran: its input is the final list.
        let plain = trace(&["x", "rel"], 2, None);
        assert_eq!(
            ids(replayed_list(&InterventionKind::NoRerank, &plain)),
            Some(vec!["x".into(), "rel".into()])
        );
        assert_eq!(
            ids(replayed_list(&InterventionKind::TopK { top_k: 4 }, &t)),
            Some(vec!["x".into(), "y".into(), "rel".into()])
        );
    }

    #[test]
    fn pipeline_interventions_need_the_stage_they_bypass() {
        let mut system = oloproof_core::settings::SystemSettings {
            name: "s".into(),
            version: "1".into(),
            depth: 6,
            top_k: 2,
            token_budget: None,
            index_version: None,
            params: Default::default(),
            lanes: vec!["bm25".into()],
            stages: vec!["rewrite".into()],
            fusion: None,
        };
        let err = |s: &oloproof_core::settings::SystemSettings, k: InterventionKind| {
            check_pipeline_intervention(s, &k).unwrap_err().to_string()
        };
        assert!(err(&system, InterventionKind::NoRerank).contains("declares rewrite (no `rerank`)"));
        assert!(check_pipeline_intervention(&system, &InterventionKind::RawQuery).is_ok());
        assert!(err(
            &system,
            InterventionKind::Lane {
                lane: "bm25".into()
            }
        )
        .contains("declares one lane (bm25); there is no fusion to bypass"));
        system.lanes.push("dense".into());
        assert!(check_pipeline_intervention(
            &system,
            &InterventionKind::Lane {
                lane: "dense".into()
            }
        )
        .is_ok());
        assert!(err(
            &system,
            InterventionKind::Lane {
                lane: "dens".into()
            }
        )
        .contains("did you mean `lane=dense`?"));
        system.stages.clear();
        assert!(err(&system, InterventionKind::RawQuery).contains("no optional stage"));
        assert!(check_pipeline_intervention(&system, &InterventionKind::NoFilter).is_ok());
    }
}
