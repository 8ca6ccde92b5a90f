//! The lost-in-the-middle harness: does the answer depend on where the evidence sits?
//!
//! For every case of a run that has `expected.gold_context` and a recorded retrieval, generation
//! runs three more times, as child runs: with the gold passages first, in the middle and last
//! among the same `distractors` non-relevant passages of the recorded retrieval (no retrieval
//! call). Each position gets the criterion's pass rate with its exact (Clopper–Pearson, rounded
//! outward) interval over the same cases, so positions are compared on identical inputs
//! (Liu et al., "Lost in the Middle", TACL 2024).

use std::collections::HashMap;

use oloproof_core::case::Case;
use oloproof_core::context::GoldSlot;
use oloproof_core::passage::Retrieval;
use oloproof_core::position::{PositionReport, PositionResult};
use oloproof_core::settings::{Intervention, RunSettings};
use oloproof_core::store::StoreLocation;
use oloproof_core::summary::SummaryKind;
use oloproof_core::verdict::Verdict;

use crate::run::{require_pass_fail, EngineEvaluators, RunObserver};
use crate::summary::summarize_criterion;
use crate::EngineError;

/// Runs the harness on `run_id`'s cases for `criterion`.
pub fn lost_in_the_middle(
    location: &StoreLocation,
    run_id: &str,
    criterion: &str,
    distractors: usize,
    observer: &mut dyn RunObserver,
) -> Result<PositionReport, EngineError> {
    let mut store = oloproof_store::open(location)?;
    let parent = store.load_run(run_id, &EngineEvaluators)?;
    if parent.settings.intervention.is_some() || parent.settings.dataset.is_some() {
        return Err(EngineError::Usage(format!(
            "{run_id} cannot be re-generated (a child run or a recorded dataset); use a live run"
        )));
    }
    require_pass_fail(&parent, criterion, "the harness")?;
    let mut selected: Vec<&Case> = Vec::new();
    let mut recorded: HashMap<String, Retrieval> = HashMap::new();
    let mut left_out = Vec::new();
    for (case, trace, _) in &parent.cases {
        let has_gold = case
            .expected
            .gold_context
            .as_ref()
            .is_some_and(|g| !g.is_empty());
        match (has_gold, trace.as_ref().and_then(|t| t.retrieval.clone())) {
            (false, _) => left_out.push((case.id.clone(), "no gold context".to_string())),
            (true, None) => left_out.push((case.id.clone(), "no recorded retrieval".to_string())),
            (true, Some(r)) => {
                recorded.insert(case.id.clone(), r);
                selected.push(case);
            }
        }
    }
    let mut positions = Vec::new();
    if !selected.is_empty() {
        for slot in GoldSlot::ALL {
            let settings = RunSettings {
                intervention: Some(Intervention {
                    label: format!("gold_{}_of_{distractors}", slot.name()),
                    gold_context: true,
                    gold_slot: Some(slot),
                    distractors,
                    ..Default::default()
                }),
                use_cache: true,
                ..parent.settings.clone()
            };
            let (child, _) = crate::diagnose::run_child(
                store.as_mut(),
                location,
                &parent,
                settings,
                &selected,
                crate::run::Recorded {
                    retrievals: recorded.clone(),
                    ..Default::default()
                },
                observer,
            )?;
            let run = store.load_run(&child, &EngineEvaluators)?;
            let verdicts: Vec<&Verdict> = selected
                .iter()
                .filter_map(|c| run.verdict(&c.id, criterion).map(|v| &v.verdict))
                .collect();
            let summary = summarize_criterion(
                criterion,
                SummaryKind::Proportion,
                &verdicts,
                parent.settings.options.bootstrap.seed,
                parent.settings.options.bootstrap.resamples,
            );
            positions.push(PositionResult {
                position: slot,
                run_id: child,
                summary,
            });
        }
    }
    Ok(PositionReport {
        run_id: run_id.to_string(),
        criterion: criterion.to_string(),
        distractors,
        cases: selected.len(),
        left_out,
        positions,
    })
}
