//! Shadow evaluation (`monitor.shadow`; seed 000 Part 10): the candidate system answers the
//! questions production answered, and the two are compared case by case.
//!
//! 1. **Which traces.** The windows of `shadow.window` (`latest`, `horizon`, or one window's
//!    start); of their traces, those where production failed (`error`: no production answer
//!    to compare) or did not record the question (`no_input`) are left out and counted; of the
//!    rest, the `max_cases` with the smallest sampling draw (`sha256("<seed>:<trace id>")`,
//!    the tiers' draw, so an `auto` tier has mostly judged them already).
//! 2. **Production's side** is a recorded run of those traces under the traffic's system
//!    identity, restricted to the compared criteria: what a tier judged is served by the
//!    judgment cache.
//! 3. **The candidate's side** is an ordinary run of the project's `system:` over the same
//!    cases (same ids, inputs and metadata), judged by the same evaluator entries and judges.
//! 4. **The comparison** is `oloproof compare`'s, candidate against production as baseline,
//!    under the policy of `shadow.policy` (its pairwise block included), recorded in the store;
//!    its gate joins the monitor's exit code. Gating on a judge without a passing calibration
//!    is refused, as by `compare`.

use std::collections::BTreeMap;

use oloproof_core::case::Case;
use oloproof_core::config::{EvaluatorEntry, ProjectConfig};
use oloproof_core::dataset::{DatasetFormat, Record};
use oloproof_core::monitor::ShadowOptions;
use oloproof_core::shadow::ShadowReport;
use oloproof_core::store::Store;

use super::{config_error, math, traffic_system, MonitorRequest, Placed};
use crate::compare::{compare_with_pairwise, record_comparison, CompareError, Policy};
use crate::history::rfc3339_from_ms;
use crate::run::{EngineEvaluators, RunObserver};
use crate::EngineError;

/// What shadow evaluation needs beyond the monitor's request.
#[derive(Clone, Copy)]
pub struct ShadowRequest<'a> {
    /// The project config loaded with its `system:` (the candidate): the same file and
    /// overrides as the monitor's, so the same evaluators and judges.
    pub candidate: &'a ProjectConfig,
    /// The policy read from `monitor.shadow.policy`.
    pub policy: &'a Policy,
}

/// Checks `monitor.shadow` against the config: its window parses, its criteria are judged
/// by a tier.
pub(super) fn check_shadow(
    config: &ProjectConfig,
    s: &ShadowOptions,
    tiered: &[&str],
) -> Result<(), EngineError> {
    let w = s.window.trim();
    if !matches!(w, "latest" | "horizon") && super::drift::reference_start(w).is_none() {
        return Err(config_error(
            config,
            "monitor.shadow.window",
            format!("unknown window `{w}`"),
            Some(
                "`latest`, `horizon`, or a window's start such as 2026-11-30 or 2026-11-30T06:00:00Z"
                    .into(),
            ),
        ));
    }
    for (i, name) in s.evaluators.iter().enumerate() {
        if !tiered.contains(&name.as_str()) {
            return Err(config_error(
                config,
                &format!("monitor.shadow.evaluators[{i}]"),
                format!("`{name}` is judged by no tier of `monitor.sampling.tiers`"),
                oloproof_core::source::did_you_mean(name, tiered.iter().copied())
                    .map(|s| format!("did you mean `{s}`?"))
                    .or_else(|| Some(format!("the tiered criteria: {}", tiered.join(", ")))),
            ));
        }
    }
    Ok(())
}

/// The criteria compared: `shadow.evaluators`, else every tier's, in tier order.
pub(super) fn shadow_criteria(s: &ShadowOptions, tiered: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let names: Vec<&str> = if s.evaluators.is_empty() {
        tiered.to_vec()
    } else {
        s.evaluators.iter().map(String::as_str).collect()
    };
    for n in names {
        if !out.iter().any(|o| o == n) {
            out.push(n.to_string());
        }
    }
    out
}

/// The evaluator entries of `config` reporting one of `criteria`, in config order.
fn entries_for(
    config: &ProjectConfig,
    criteria: &[String],
) -> Result<Vec<EvaluatorEntry>, EngineError> {
    let built = crate::evaluators::build_all(&config.options.evaluators)?;
    Ok(config
        .options
        .evaluators
        .iter()
        .zip(&built)
        .filter(|(_, e)| criteria.iter().any(|c| c == e.criterion()))
        .map(|(entry, _)| entry.clone())
        .collect())
}

/// The window starts (ms) the shadow reads.
fn shadow_windows(
    s: &ShadowOptions,
    windows: &[i64],
    horizon_start: Option<i64>,
    size: i64,
) -> Vec<i64> {
    match s.window.trim() {
        "latest" => windows.last().copied().into_iter().collect(),
        "horizon" => windows
            .iter()
            .copied()
            .filter(|w| horizon_start.is_some_and(|h| *w >= h))
            .collect(),
        other => super::drift::reference_start(other)
            .map(|ms| math::window_start(ms, size))
            .into_iter()
            .collect(),
    }
}

/// Whether production recorded no question for the record.
fn lacks_input(record: &Record) -> bool {
    let lacking = record
        .trace
        .production
        .as_ref()
        .is_some_and(|p| p.lacks("input"));
    lacking || record.case.input.is_empty()
}

/// Everything the shadow step reads from the monitor.
pub(super) struct ShadowInput<'a, 'b> {
    pub req: &'a MonitorRequest<'b>,
    pub shadow: &'a ShadowRequest<'b>,
    pub options: &'a ShadowOptions,
    pub placed: &'a [Placed<'b>],
    pub windows: &'a [i64],
    pub horizon_start: Option<i64>,
    pub size: i64,
    pub seed: u64,
    pub criteria: Vec<String>,
}

fn compare_error(e: CompareError) -> EngineError {
    match e {
        CompareError::Policy(e) => {
            EngineError::Config(oloproof_core::config::ConfigError::Invalid(e))
        }
        CompareError::Engine(e) => e,
        other => EngineError::Usage(other.to_string()),
    }
}

/// Runs the shadow evaluation. Candidate errors above the allowed rate, and criteria missing
/// on too many cases, are pushed to `incomplete` (exit 4), never read as a verdict.
pub(super) fn shadow(
    input: &ShadowInput<'_, '_>,
    observer: &mut dyn RunObserver,
    incomplete: &mut Vec<String>,
) -> Result<ShadowReport, EngineError> {
    let config = input.req.config;
    let chosen_windows = shadow_windows(
        input.options,
        input.windows,
        input.horizon_start,
        input.size,
    );
    let mut left_out: BTreeMap<String, u64> = BTreeMap::new();
    let mut traces = 0u64;
    let mut eligible: Vec<usize> = Vec::new();
    for (i, p) in input.placed.iter().enumerate() {
        if !chosen_windows.contains(&p.window) {
            continue;
        }
        traces += 1;
        if p.error {
            *left_out.entry("error".to_string()).or_default() += 1;
        } else if lacks_input(p.record) {
            *left_out.entry("no_input".to_string()).or_default() += 1;
        } else {
            eligible.push(i);
        }
    }
    let eligible_count = eligible.len() as u64;
    let placed = input.placed;
    eligible.sort_by(|&a, &b| {
        placed[a]
            .draw
            .total_cmp(&placed[b].draw)
            .then_with(|| placed[a].record.case.id.cmp(&placed[b].record.case.id))
    });
    eligible.truncate(input.options.max_cases);
    // The cases in traffic order, so both runs list them alike.
    eligible.sort_unstable();
    let mut report = ShadowReport {
        window: input.options.window.clone(),
        windows: chosen_windows.iter().map(|w| rfc3339_from_ms(*w)).collect(),
        traces,
        left_out,
        eligible: eligible_count,
        max_cases: input.options.max_cases as u64,
        seed: input.seed,
        selected: eligible.len() as u64,
        criteria: input.criteria.clone(),
        candidate_system: String::new(),
        production_run: None,
        candidate_run: None,
        candidate_errors: 0,
        comparison: None,
    };
    if eligible.is_empty() {
        incomplete.push(format!(
            "shadow: no trace to compare in {} (of {} traces: {} left out)",
            if report.windows.is_empty() {
                format!("window `{}` (no traffic in it)", input.options.window)
            } else {
                report.windows.join(", ")
            },
            traces,
            traces - eligible_count
        ));
        return Ok(report);
    }

    // Production's side.
    let mut production_config = config.clone();
    production_config.options.evaluators = entries_for(config, &input.criteria)?;
    production_config.options.sample = None;
    let records: Vec<&Record> = eligible.iter().map(|&i| placed[i].record).collect();
    let cases: Vec<Case> = records.iter().map(|r| r.case.clone()).collect();
    let production = crate::recorded::start_recorded_run_as(
        &production_config,
        &records,
        (DatasetFormat::Trace, &input.req.traffic.sha256),
        traffic_system(input.req.traffic_path),
        input.req.flags,
        observer,
    )?;

    // The candidate's side: the same cases, evaluators and judges.
    let mut candidate_config = input.shadow.candidate.clone();
    candidate_config.options.evaluators = entries_for(input.shadow.candidate, &input.criteria)?;
    candidate_config.options.sample = None;
    report.production_run = Some(production.run_id.clone());
    // A candidate that cannot start leaves production's report whole: the shadow is
    // incomplete (exit 4), with the system's own words.
    let candidate =
        match crate::run::start_run(&candidate_config, &cases, input.req.flags, observer) {
            Ok(outcome) => outcome,
            Err(e @ EngineError::System(_)) => {
                incomplete.push(format!("shadow: {e}"));
                return Ok(report);
            }
            Err(e) => return Err(e),
        };
    report.candidate_system = format!("{} {}", candidate.summary.system, candidate.summary.version);
    report.candidate_errors = candidate.summary.errors;
    report.candidate_run = Some(candidate.run_id.clone());
    if candidate.error_rate > candidate.max_error_rate {
        incomplete.push(format!(
            "shadow: {} of {} candidate cases ended in an error ({:.1}%), above the allowed {:.1}% (run {}; `oloproof show {} --case ID` says why)",
            candidate.summary.errors,
            candidate.summary.cases,
            candidate.error_rate * 100.0,
            candidate.max_error_rate * 100.0,
            candidate.run_id,
            candidate.run_id
        ));
    }
    for (side, outcome) in [("candidate", &candidate), ("production", &production)] {
        for c in &outcome.summary.incomplete_criteria {
            incomplete.push(format!(
                "shadow ({side}): criterion `{}` is missing on {} of {} cases, above the allowed {:.1}% (run {})",
                c.criterion,
                c.missing,
                c.cases,
                c.max_error_rate * 100.0,
                outcome.run_id
            ));
        }
    }

    // The comparison.
    let location = config.store_location();
    let mut store: Box<dyn Store> = oloproof_store::open(&location)?;
    let candidate_run = store.load_run(&candidate.run_id, &EngineEvaluators)?;
    let production_run = store.load_run(&production.run_id, &EngineEvaluators)?;
    let policy = input.shadow.policy;
    input
        .shadow
        .policy
        .check(&candidate_run, &production_run)
        .map_err(|e| compare_error(CompareError::Policy(e)))?;
    let gated: Vec<String> = policy
        .options()
        .decisions
        .iter()
        .filter_map(|d| d.criterion.clone())
        .collect();
    if let Some((criterion, judge, reason)) =
        crate::calibrate::uncalibrated(store.as_ref(), &candidate_run, &gated)?
            .into_iter()
            .next()
    {
        return Err(EngineError::Usage(format!(
            "the shadow policy gates on `{criterion}`, scored by judge `{judge}`, but {reason}; \
             run `oloproof calibrate --judge {judge} --evaluator <type> --labels human.jsonl` \
             with `calibration.{judge}.min_kappa` declared in oloproof.yaml, or gate on another criterion"
        )));
    }
    let pairwise = match policy.pairwise() {
        Some(_) => Some(
            crate::pairwise::judge_policy_pairs(
                policy,
                &config.options.judges,
                store.as_mut(),
                &location,
                &candidate_run,
                &production_run,
            )
            .map_err(compare_error)?,
        ),
        None => None,
    };
    let comparison = compare_with_pairwise(&candidate_run, &production_run, policy, pairwise)
        .map_err(compare_error)?;
    record_comparison(store.as_mut(), &comparison)?;
    if comparison.pairwise_incomplete() {
        if let Some(p) = &comparison.pairwise {
            incomplete.push(format!(
                "shadow: the pairwise judge `{}` failed on {} of {} shared cases, above the policy's max_missing_rate (`oloproof inspect {}`)",
                p.judge,
                p.judge_errors,
                p.cases.len(),
                comparison.id
            ));
        }
    }
    report.comparison = Some(comparison);
    Ok(report)
}
