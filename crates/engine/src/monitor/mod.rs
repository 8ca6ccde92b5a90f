//! `oloproof monitor`: online evaluation of production traffic (seed 002 §5.5–5.7, seed 000
//! Part 10's minimum guardrails).
//!
//! The traffic is a trace dataset whose records carry `production` (`oloproof import`). Step by
//! step:
//!
//! 1. **Windows and segments.** Each record falls in the window of `monitor.window.size` holding
//!    its `production.timestamp` (epoch-aligned, UTC: [`math::window_start`]) and in the segment
//!    of its `metadata` values at `monitor.segments`. A record without a readable timestamp is
//!    counted and reported with its id and reason, never placed in a window. The horizon of the
//!    SLOs and alerts is the last `rolling / size` windows, ending with the latest one present.
//! 2. **Tiered sampling.** Tier by tier, a trace is judged when its draw ([`math::draw`]:
//!    sha256 of the seed and trace id) falls under the tier's rate in its segment and window
//!    (`auto`: [`math::tier_rate`]), or it is an error trace, or it has negative feedback
//!    (`sampling.always`), or an earlier tier flagged it (a `fail`, or a score under that tier's
//!    `flag_below`). The selection and each trace's reasons are in the report.
//! 3. **Judging** is an ordinary recorded-dataset run per tier
//!    ([`crate::recorded::start_recorded_run_as`]: the run's pool, judges, judgment cache and
//!    group commit), restricted to the tier's evaluators, under one system identity for the
//!    whole traffic (its file name, version `traffic`): a trace judged before is served from the
//!    judgment cache, so re-running a window judges nothing twice.
//! 4. **Aggregates** per window, segment and criterion read only the traces the rate drew (a
//!    simple random sample of the segment and window): the always-included and flagged traces
//!    are judged and counted (`targeted`) but left out of every estimate, which they would bias.
//!    Mean with the run summary's interval ([`crate::summary::summarize_criterion`]: Clopper–
//!    Pearson for pass/fail, percentile bootstrap for scores), p10/p25 with the order-statistic
//!    interval ([`oloproof_stats::quantile_interval`]), the share under a threshold with Wilson.
//! 5. **SLOs** per segment over the horizon: [`math::decide_slo`] on the Wilson lower bound, with
//!    the error budget. Windows of the horizon are pooled as drawn (with `auto`, a quiet window
//!    weighs as much as a busy one).
//! 6. **Alerts** per segment over the horizon, each decided on an interval (never the point):
//!    `latency_p95` and `cost_per_request` fire when the lower bound is above the maximum (read
//!    on every trace: latency and usage are recorded for all), `criterion_below` when the upper
//!    bound is below the minimum, `filter_false_exclusion` when the Wilson lower bound is above
//!    the rate, `regeneration_rate` when the Wilson interval is outside the band. Each says
//!    whether the code, model or config changed in the horizon ([`ChangeMarkers`]).
//! 7. **Feedback** per window, and the **review queue**: a blind seeded sample of the judged
//!    traces of the horizon plus the low-confidence and thumbs-down ones, as rows
//!    `oloproof calibrate --labels` reads once `label` is filled.
//!
//! 8. **Drift** (`monitor.drift`, [`drift`]): query drift of each window against a reference
//!    window (MMD² permutation test and a binned Jensen–Shannon distance of the queries'
//!    local embeddings), embedding drift on a fixed probe set (cosine to vectors stored on the
//!    first run), and performance drift of a feedback share or criterion against a control
//!    band; each an alert (`query_drift`, `probe_drift`, `performance_drift`).
//!
//! 9. **Shadow evaluation** (`monitor.shadow`, [`shadow`]): the config's `system:` answers the
//!    questions of a window's traces, both sides are judged by the same evaluators, and the
//!    comparison's gate (the `oloproof compare` policy) joins [`MonitorReport::breached`].
//!
//! The report's types live in [`oloproof_core::monitor_report`] (re-exported here), so the
//! store keeps it and the report crate and viewer render it without the engine.

pub mod drift;
pub mod math;
pub mod promote;
pub mod shadow;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;

use oloproof_core::config::{ConfigError, EvaluatorEntry, Price, ProjectConfig};
use oloproof_core::dataset::{Dataset, DatasetFormat, Record};
use oloproof_core::monitor::{AlertOptions, MonitorOptions, Rate};
use oloproof_core::settings::SystemSettings;
use oloproof_core::source::did_you_mean;
use oloproof_core::store::RunId;
use oloproof_core::summary::SummaryKind;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use serde_json::{json, Value};

use crate::evaluators::Evaluator;
use crate::history::{parse_rfc3339_ms, rfc3339_from_ms};
use crate::run::{RunFlags, RunObserver};
use crate::summary::summarize_criterion;
use crate::EngineError;
use math::ALERT_CONFIDENCE;

pub use oloproof_core::monitor_report::{
    AlertReport, ChangeMarkers, CriterionAggregate, ErrorShare, FeedbackCounts, MonitorReport,
    QuantileEstimate, ReviewReport, SamplingReport, SegmentWindow, Selected, ShareEstimate,
    SloReport, TierReport, TrafficCounts, UntimedRecord, WindowInfo, WindowReport,
    MONITOR_SCHEMA_VERSION,
};

/// Untimed records listed by id in the report (all are counted).
const UNTIMED_SHOWN: usize = 10;

/// Metadata fields read as the code version, in order (flat `"service.version"` keys and nested
/// objects both).
pub const CODE_FIELDS: &[&str] = &["service.version", "code_version", "git_commit", "commit"];
/// Metadata fields read as the configuration's identity.
pub const CONFIG_FIELDS: &[&str] = &["config_hash"];

/// What `monitor` is asked.
pub struct MonitorRequest<'a> {
    /// The project config loaded over the traffic (`load_config_for_dataset`), with `monitor:`.
    pub config: &'a ProjectConfig,
    /// The traffic.
    pub traffic: &'a Dataset,
    /// Its path as the user named it (shown; its file name is the judged system's name).
    pub traffic_path: &'a Path,
    /// `--no-cache`, `--max-error-rate`, `--max-cost` as for `run`.
    pub flags: RunFlags,
    /// `--review-queue N`: the size of the blind random part of the queue.
    pub review_queue: Option<usize>,
    /// The candidate and policy of `monitor.shadow` (required when it is configured).
    pub shadow: Option<shadow::ShadowRequest<'a>>,
}

/// What `monitor` produced: the report and, when asked, the review queue's rows.
#[derive(Debug, Clone)]
pub struct MonitorOutput {
    /// The report (`--json`).
    pub report: MonitorReport,
    /// Rows of the review queue (`--review-queue`), in their blind order.
    pub review_rows: Vec<Value>,
}

/// One record placed in time.
struct Placed<'a> {
    record: &'a Record,
    trace_id: String,
    window: i64,
    segment: String,
    draw: f64,
    error: bool,
    negative: bool,
}

fn config_error(
    config: &ProjectConfig,
    key: &str,
    message: String,
    help: Option<String>,
) -> EngineError {
    let mut err = config.error_at(key, message);
    err.help = help;
    EngineError::Config(ConfigError::Invalid(err))
}

/// The segment of a case: `key=value` for each key (`metadata.` dropped), joined by `, `;
/// `all` without keys; a missing value reads `(none)`.
pub fn segment_of(metadata: &serde_json::Map<String, Value>, keys: &[String]) -> String {
    if keys.is_empty() {
        return "all".to_string();
    }
    keys.iter()
        .map(|k| {
            let path = k.strip_prefix("metadata.").unwrap_or(k);
            let value = metadata_value(metadata, path)
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .unwrap_or_else(|| "(none)".to_string());
            format!("{path}={value}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A metadata value at a dotted `path`: the flat key first (`"service.version"`, as OTel
/// resource attributes are named), then the nested objects.
pub fn metadata_value<'a>(
    metadata: &'a serde_json::Map<String, Value>,
    path: &str,
) -> Option<&'a Value> {
    if let Some(v) = metadata.get(path).filter(|v| !v.is_null()) {
        return Some(v);
    }
    let mut parts = path.split('.');
    let mut current = metadata.get(parts.next()?)?;
    for part in parts {
        current = current.get(part)?;
    }
    (!current.is_null()).then_some(current)
}

fn is_error(record: &Record) -> bool {
    record.trace.error.is_some()
        || record
            .trace
            .production
            .as_ref()
            .is_some_and(|p| p.error.is_some())
}

/// The config's `monitor:` section, or a located error saying to add it.
///
/// # Errors
///
/// [`EngineError::Config`] when the config has no `monitor:`.
pub fn monitor_options(config: &ProjectConfig) -> Result<&MonitorOptions, EngineError> {
    config.options.monitor.as_ref().ok_or_else(|| {
        let mut err = config.source.error_at("", false, "missing key `monitor`");
        err.key_path = Some("monitor".into());
        err.help = Some(
            "add `monitor:` with at least `window: {size: 1d}` (see `oloproof monitor --help`)"
                .into(),
        );
        EngineError::Config(ConfigError::Invalid(err))
    })
}

/// Runs the monitor.
///
/// # Errors
///
/// A `monitor:` that refers to what the config lacks (a criterion no evaluator reports, a cost
/// alert without prices) is a located config error; the store and the runs fail as `run` does.
pub fn monitor(
    req: &MonitorRequest<'_>,
    observer: &mut dyn RunObserver,
) -> Result<MonitorOutput, EngineError> {
    let config = req.config;
    let m = monitor_options(config)?;
    let evaluators = crate::evaluators::build_all(&config.options.evaluators)?;
    let criteria: Vec<&str> = evaluators.iter().map(|e| e.criterion()).collect();
    check_references(config, m, &criteria)?;
    let max_error_rate = req
        .flags
        .max_error_rate
        .unwrap_or(config.options.max_error_rate);

    // 1. Windows and segments.
    let size = m.window.size.ms;
    let mut placed = Vec::new();
    let mut untimed = Vec::new();
    for record in &req.traffic.records {
        let production = record.trace.production.as_ref();
        let ts = production.and_then(|p| p.timestamp.as_deref());
        let Some(ms) = ts.and_then(parse_rfc3339_ms) else {
            untimed.push(UntimedRecord {
                id: record.case.id.clone(),
                reason: match ts {
                    None => "no production.timestamp".to_string(),
                    Some(t) => format!("production.timestamp `{t}` is not RFC 3339"),
                },
            });
            continue;
        };
        let trace_id = production
            .and_then(|p| p.trace_id.clone())
            .unwrap_or_else(|| record.case.id.clone());
        placed.push(Placed {
            draw: math::draw(m.sampling.seed, &trace_id),
            trace_id,
            window: math::window_start(ms, size),
            segment: segment_of(&record.case.metadata, &m.segments),
            error: is_error(record),
            negative: production.is_some_and(|p| p.has_negative_feedback()),
            record,
        });
    }
    let windows: BTreeSet<i64> = placed.iter().map(|p| p.window).collect();
    let horizon_windows = m.window.horizon_windows();
    let horizon_start = windows
        .last()
        .map(|last| last - (horizon_windows - 1) * size);
    let in_horizon = |w: i64| horizon_start.is_some_and(|h| w >= h);
    let mut group_n: HashMap<(i64, &str), u64> = HashMap::new();
    for p in &placed {
        *group_n.entry((p.window, p.segment.as_str())).or_default() += 1;
    }

    // 2–3. Tier by tier: select, judge through a recorded run, flag.
    let kinds: HashMap<&str, SummaryKind> = evaluators
        .iter()
        .map(|e| (e.criterion(), e.kind()))
        .collect();
    let lower_better: HashSet<&str> = m
        .alerts
        .iter()
        .filter_map(|a| match a {
            AlertOptions::FilterFalseExclusion { criterion, .. } => Some(criterion.as_str()),
            _ => None,
        })
        .collect();
    let system = traffic_system(req.traffic_path);
    let mut verdicts: HashMap<(String, String), Verdict> = HashMap::new();
    let mut sampled_for: HashMap<String, HashSet<String>> = HashMap::new();
    let mut flagged: HashSet<String> = HashSet::new();
    let mut tiers = Vec::new();
    let mut incomplete = Vec::new();
    for (t, tier) in m.sampling.tiers.iter().enumerate() {
        let takes_flagged = tier.flagged.unwrap_or(t > 0);
        let mut selection = Vec::new();
        let mut chosen: Vec<&Record> = Vec::new();
        let mut by_reason: BTreeMap<String, u64> = BTreeMap::new();
        let mut sampled_ids = HashSet::new();
        for p in &placed {
            let n = group_n[&(p.window, p.segment.as_str())];
            let rate = math::tier_rate(tier.rate, m.sampling.target_judgments, n);
            let reasons = math::selection_reasons(
                math::Candidate {
                    draw: p.draw,
                    error: p.error,
                    negative_feedback: p.negative,
                    flagged: flagged.contains(&p.record.case.id),
                },
                rate,
                &m.sampling.always,
                takes_flagged,
            );
            if reasons.is_empty() {
                continue;
            }
            if reasons[0] == "sampled" {
                sampled_ids.insert(p.record.case.id.clone());
            }
            for r in &reasons {
                *by_reason.entry((*r).to_string()).or_default() += 1;
            }
            chosen.push(p.record);
            selection.push(Selected {
                id: p.record.case.id.clone(),
                trace_id: p.trace_id.clone(),
                window: rfc3339_from_ms(p.window),
                segment: p.segment.clone(),
                draw: p.draw,
                rate,
                reasons: reasons.into_iter().map(str::to_string).collect(),
            });
        }
        let entries: Vec<EvaluatorEntry> = config
            .options
            .evaluators
            .iter()
            .zip(&evaluators)
            .filter(|(_, e)| tier.evaluators.iter().any(|c| c == e.criterion()))
            .map(|(entry, _)| entry.clone())
            .collect();
        let mut report = TierReport {
            tier: t,
            evaluators: tier.evaluators.clone(),
            rate: match tier.rate {
                Rate::Auto => json!("auto"),
                Rate::Fixed(r) => json!(r),
            },
            takes_flagged,
            run_id: None,
            selected: chosen.len() as u64,
            by_reason,
            judgments_cached: 0,
            judgments_fresh: 0,
            flagged: 0,
            selection,
        };
        if !chosen.is_empty() {
            let mut tier_config = config.clone();
            tier_config.options.evaluators = entries;
            tier_config.options.sample = None;
            let outcome = crate::recorded::start_recorded_run_as(
                &tier_config,
                &chosen,
                (DatasetFormat::Trace, &req.traffic.sha256),
                system.clone(),
                req.flags,
                observer,
            )?;
            report.judgments_cached = outcome.summary.cache.judgment.hit;
            report.judgments_fresh = outcome.summary.cache.judgment.miss;
            for c in &outcome.summary.incomplete_criteria {
                incomplete.push(format!(
                    "tier {t}: criterion `{}` is missing on {} of {} traces, above the allowed {:.1}% (run {}; `oloproof show {} --case ID` says why)",
                    c.criterion, c.missing, c.cases, c.max_error_rate * 100.0, outcome.run_id, outcome.run_id
                ));
            }
            let store = oloproof_store::open_reader(&config.store_location())?;
            let mut flagged_here: HashSet<String> = HashSet::new();
            for v in store.verdicts(&RunId::from(outcome.run_id.as_str()))? {
                let parsed: CriterionVerdict =
                    oloproof_core::store::decode(&v.verdict_json, || {
                        format!("a verdict of {}", v.case_id)
                    })?;
                let flags_it = flags(
                    &parsed,
                    tier.flag_below,
                    kinds.get(parsed.criterion.as_str()).copied(),
                    &lower_better,
                );
                if flags_it {
                    flagged_here.insert(v.case_id.clone());
                }
                verdicts.insert((v.case_id, parsed.criterion), parsed.verdict);
            }
            report.flagged = flagged_here.len() as u64;
            flagged.extend(flagged_here);
            report.run_id = Some(outcome.run_id);
        }
        for c in &tier.evaluators {
            sampled_for.insert(c.clone(), sampled_ids.clone());
        }
        tiers.push(report);
    }

    // 4. Aggregates per window and segment.
    let tier_criteria: Vec<(&str, f64)> = m
        .sampling
        .tiers
        .iter()
        .flat_map(|t| t.evaluators.iter().map(move |c| (c.as_str(), t.flag_below)))
        .collect();
    let threshold_of = |criterion: &str, flag_below: f64| {
        m.slos
            .iter()
            .find(|s| s.criterion == criterion)
            .map_or(flag_below, |s| s.score_above)
    };
    let (seed, resamples) = (
        config.options.bootstrap.seed,
        config.options.bootstrap.resamples,
    );
    let mut by_window: BTreeMap<i64, Vec<&Placed<'_>>> = BTreeMap::new();
    for p in &placed {
        by_window.entry(p.window).or_default().push(p);
    }
    let mut window_reports = Vec::new();
    let mut previous: Option<ChangeValues> = None;
    for (w, members) in &by_window {
        let mut by_segment: BTreeMap<&str, Vec<&Placed<'_>>> = BTreeMap::new();
        for p in members {
            by_segment.entry(p.segment.as_str()).or_default().push(p);
        }
        let segments = by_segment
            .iter()
            .map(|(segment, ps)| SegmentWindow {
                segment: segment.to_string(),
                traces: ps.len() as u64,
                errors: ps.iter().filter(|p| p.error).count() as u64,
                criteria: tier_criteria
                    .iter()
                    .map(|(c, flag_below)| {
                        aggregate(
                            c,
                            kinds.get(c).copied().unwrap_or(SummaryKind::Rate),
                            ps,
                            &verdicts,
                            &sampled_for[*c],
                            threshold_of(c, *flag_below),
                            seed,
                            resamples,
                        )
                    })
                    .collect(),
            })
            .collect();
        let values = ChangeValues::of(members.iter().map(|p| p.record));
        let changes = values.markers(previous.as_ref());
        previous = Some(values);
        window_reports.push(WindowReport {
            start: rfc3339_from_ms(*w),
            end: rfc3339_from_ms(w + size),
            in_horizon: in_horizon(*w),
            segments,
            feedback: feedback_of(members.iter().map(|p| p.record)),
            changes,
        });
    }
    let horizon_changes = window_reports.iter().filter(|w| w.in_horizon).fold(
        ChangeMarkers::default(),
        |mut acc, w| {
            acc.code_changed |= w.changes.code_changed;
            acc.model_changed |= w.changes.model_changed;
            acc.config_changed |= w.changes.config_changed;
            for (into, from) in [
                (&mut acc.code, &w.changes.code),
                (&mut acc.model, &w.changes.model),
                (&mut acc.config, &w.changes.config),
            ] {
                for v in from {
                    if !into.contains(v) {
                        into.push(v.clone());
                    }
                }
            }
            acc
        },
    );

    // 5–6. SLOs and alerts per segment over the horizon.
    let horizon: Vec<&Placed<'_>> = placed.iter().filter(|p| in_horizon(p.window)).collect();
    let mut horizon_segments: BTreeMap<&str, Vec<&Placed<'_>>> = BTreeMap::new();
    for p in &horizon {
        horizon_segments
            .entry(p.segment.as_str())
            .or_default()
            .push(p);
    }
    let mut slos = Vec::new();
    for slo in &m.slos {
        for (segment, ps) in &horizon_segments {
            let sampled = &sampled_for[&slo.criterion];
            let mut good = 0;
            let mut n = 0;
            for p in ps.iter().filter(|p| sampled.contains(&p.record.case.id)) {
                if let Some(v) = verdicts
                    .get(&(p.record.case.id.clone(), slo.criterion.clone()))
                    .and_then(Verdict::value)
                {
                    n += 1;
                    if v > slo.score_above {
                        good += 1;
                    }
                }
            }
            slos.push(SloReport {
                criterion: slo.criterion.clone(),
                segment: segment.to_string(),
                score_above: slo.score_above,
                min_share: slo.min_share,
                confidence: slo.confidence,
                decision: math::decide_slo(good, n, slo.min_share, slo.confidence),
            });
        }
    }
    let mut alerts = Vec::new();
    for (i, alert) in m.alerts.iter().enumerate() {
        let cost = match alert {
            AlertOptions::CostPerRequest { prices, .. } => {
                Some(cost_evaluator(config, i, prices.as_ref())?)
            }
            _ => None,
        };
        for (segment, ps) in &horizon_segments {
            let mut a = evaluate_alert(
                alert,
                ps,
                &verdicts,
                &sampled_for,
                cost.as_deref(),
                (seed, resamples),
            );
            a.segment = segment.to_string();
            a.changes = horizon_changes.clone();
            alerts.push(a);
        }
    }

    // 8. Drift.
    let drift_report = match &m.drift {
        Some(d) => {
            let (r, mut drift_alerts) = drift::drift(
                &drift::DriftInput {
                    config,
                    m,
                    d,
                    placed: &placed,
                    horizon_start,
                    verdicts: &verdicts,
                    sampled_for: &sampled_for,
                    kinds: &kinds,
                    changes: &horizon_changes,
                    seed,
                    resamples,
                },
                &mut incomplete,
            )?;
            alerts.append(&mut drift_alerts);
            Some(r)
        }
        None => None,
    };

    // 9. Shadow evaluation.
    let shadow_report = match (&m.shadow, &req.shadow) {
        (Some(options), Some(request)) => {
            let tiered: Vec<&str> = m
                .sampling
                .tiers
                .iter()
                .flat_map(|t| t.evaluators.iter().map(String::as_str))
                .collect();
            let window_list: Vec<i64> = windows.iter().copied().collect();
            Some(shadow::shadow(
                &shadow::ShadowInput {
                    req,
                    shadow: request,
                    options,
                    placed: &placed,
                    windows: &window_list,
                    horizon_start,
                    size,
                    seed: m.sampling.seed,
                    criteria: shadow::shadow_criteria(options, &tiered),
                },
                observer,
                &mut incomplete,
            )?)
        }
        (Some(_), None) => {
            return Err(config_error(
                config,
                "monitor.shadow",
                "shadow evaluation needs the candidate system, and none was given".into(),
                Some("monitor reads the candidate from the config's `system:`".into()),
            ))
        }
        (None, _) => None,
    };

    // Errors and completeness.
    let errors = ErrorShare {
        errors: horizon.iter().filter(|p| p.error).count() as u64,
        traces: horizon.len() as u64,
        max_error_rate,
    };
    if errors.traces > 0 && errors.errors as f64 / errors.traces as f64 > max_error_rate {
        incomplete.insert(
            0,
            format!(
                "{} of {} traces of the horizon ended in an error ({:.1}%), above the allowed {:.1}% (--max-error-rate)",
                errors.errors,
                errors.traces,
                100.0 * errors.errors as f64 / errors.traces as f64,
                100.0 * max_error_rate
            ),
        );
    }

    // 7. The review queue.
    let (review, review_rows) = match req.review_queue {
        Some(size) => {
            let (r, rows) = review_queue(m, &horizon, &verdicts, size);
            (Some(r), rows)
        }
        None => (None, Vec::new()),
    };

    let report = MonitorReport {
        schema_version: MONITOR_SCHEMA_VERSION,
        traffic: TrafficCounts {
            path: req.traffic_path.display().to_string(),
            sha256: req.traffic.sha256.clone(),
            records: req.traffic.records.len() as u64,
            timed: placed.len() as u64,
            untimed: untimed.len() as u64,
            untimed_examples: untimed.into_iter().take(UNTIMED_SHOWN).collect(),
            skipped_rows: req.traffic.skipped.len() as u64,
        },
        window: WindowInfo {
            size: m.window.size.text.clone(),
            rolling: m
                .window
                .rolling
                .as_ref()
                .map_or_else(|| m.window.size.text.clone(), |r| r.text.clone()),
            horizon_windows,
            horizon_start: horizon_start.map(rfc3339_from_ms),
            horizon_end: windows.last().map(|w| rfc3339_from_ms(w + size)),
        },
        segments: m.segments.clone(),
        sampling: SamplingReport {
            seed: m.sampling.seed,
            target_judgments: m.sampling.target_judgments,
            always: m
                .sampling
                .always
                .iter()
                .map(|a| a.name().to_string())
                .collect(),
            tiers,
        },
        windows: window_reports,
        slos,
        alerts,
        errors,
        incomplete,
        review,
        drift: drift_report,
        shadow: shadow_report,
    };
    Ok(MonitorOutput {
        report,
        review_rows,
    })
}

/// Whether a verdict flags its trace for the later tiers: a `fail`; a score under
/// `flag_below`; for a criterion a `filter_false_exclusion` alert reads (lower is better), a
/// positive score. A measured amount or quantile (latency, cost) never flags.
fn flags(
    v: &CriterionVerdict,
    flag_below: f64,
    kind: Option<SummaryKind>,
    lower_better: &HashSet<&str>,
) -> bool {
    if kind.is_some_and(SummaryKind::lower_is_better) {
        return false;
    }
    match &v.verdict {
        Verdict::Fail => true,
        Verdict::Score { value } if lower_better.contains(v.criterion.as_str()) => *value > 0.0,
        Verdict::Score { value } => *value < flag_below,
        _ => false,
    }
}

/// The system identity every tier's run shares: the traffic file's name, version `traffic`.
/// Depth and top-k play no part in a recorded run (its traces are served as they are); they
/// are fixed at 1 so that nothing of the selection reaches the execution key.
fn traffic_system(path: &Path) -> SystemSettings {
    SystemSettings {
        name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "traffic".to_string()),
        version: "traffic".to_string(),
        depth: 1,
        top_k: 1,
        token_budget: None,
        index_version: None,
        params: Default::default(),
        lanes: Vec::new(),
        stages: Vec::new(),
        fusion: None,
    }
}

/// Checks that every criterion `monitor:` names is reported by an evaluator, and that the
/// criteria SLOs and alerts read are judged by a tier.
fn check_references(
    config: &ProjectConfig,
    m: &MonitorOptions,
    criteria: &[&str],
) -> Result<(), EngineError> {
    let unknown = |key: String, name: &str| {
        config_error(
            config,
            &key,
            format!("no evaluator reports the criterion `{name}`"),
            did_you_mean(name, criteria.iter().copied())
                .map(|s| format!("did you mean `{s}`?"))
                .or_else(|| {
                    Some(format!(
                        "add an `evaluators:` entry for it; the config's criteria: {}",
                        if criteria.is_empty() {
                            "(none)".to_string()
                        } else {
                            criteria.join(", ")
                        }
                    ))
                }),
        )
    };
    for (t, tier) in m.sampling.tiers.iter().enumerate() {
        for (e, name) in tier.evaluators.iter().enumerate() {
            if !criteria.contains(&name.as_str()) {
                return Err(unknown(
                    format!("monitor.sampling.tiers[{t}].evaluators[{e}]"),
                    name,
                ));
            }
        }
    }
    let tiered: Vec<&str> = m
        .sampling
        .tiers
        .iter()
        .flat_map(|t| t.evaluators.iter().map(String::as_str))
        .collect();
    let not_tiered = |key: String, name: &str| {
        config_error(
            config,
            &key,
            format!("`{name}` is judged by no tier of `monitor.sampling.tiers`"),
            Some(format!("add `{name}` to a tier's `evaluators:`")),
        )
    };
    for (i, slo) in m.slos.iter().enumerate() {
        if !tiered.contains(&slo.criterion.as_str()) {
            let key = format!("monitor.slos[{i}].criterion");
            return Err(if criteria.contains(&slo.criterion.as_str()) {
                not_tiered(key, &slo.criterion)
            } else {
                unknown(key, &slo.criterion)
            });
        }
    }
    for (i, alert) in m.alerts.iter().enumerate() {
        let criterion = match alert {
            AlertOptions::CriterionBelow { criterion, .. }
            | AlertOptions::FilterFalseExclusion { criterion, .. } => criterion,
            _ => continue,
        };
        if !tiered.contains(&criterion.as_str()) {
            let key = format!("monitor.alerts[{i}].criterion");
            return Err(if criteria.contains(&criterion.as_str()) {
                not_tiered(key, criterion)
            } else {
                unknown(key, criterion)
            });
        }
    }
    if let Some(d) = &m.drift {
        drift::check_drift(config, d, &tiered, criteria)?;
    }
    if let Some(s) = &m.shadow {
        shadow::check_shadow(config, s, &tiered)?;
    }
    Ok(())
}

/// The `cost` evaluator of a `cost_per_request` alert: its own `prices:`, else the file's
/// `system.rag.prices` (read from the document: a monitor config evaluates traffic, not the
/// system).
fn cost_evaluator(
    config: &ProjectConfig,
    i: usize,
    prices: Option<&BTreeMap<String, Price>>,
) -> Result<Box<dyn Evaluator>, EngineError> {
    let prices = match prices {
        Some(p) => serde_json::to_value(p).unwrap_or(Value::Null),
        None => config
            .source
            .value
            .pointer("/system/rag/prices")
            .cloned()
            .unwrap_or(Value::Null),
    };
    if !prices.is_object() {
        return Err(config_error(
            config,
            &format!("monitor.alerts[{i}]"),
            "`cost_per_request` needs prices: the config declares none".into(),
            Some("add `prices: {MODEL: {input: 0.15, output: 0.6}}` (dollars per million tokens) to the alert, or `system.rag.prices`".into()),
        ));
    }
    crate::evaluators::from_json(&json!({"type": "cost", "prices": prices}))
}

#[allow(clippy::too_many_arguments)]
fn aggregate(
    criterion: &str,
    kind: SummaryKind,
    members: &[&Placed<'_>],
    verdicts: &HashMap<(String, String), Verdict>,
    sampled: &HashSet<String>,
    threshold: f64,
    seed: u64,
    resamples: usize,
) -> CriterionAggregate {
    let mut drawn = Vec::new();
    let mut targeted = 0;
    for p in members {
        let key = (p.record.case.id.clone(), criterion.to_string());
        let Some(v) = verdicts.get(&key) else {
            continue;
        };
        if sampled.contains(&p.record.case.id) {
            drawn.push(v);
        } else {
            targeted += 1;
        }
    }
    let summary = summarize_criterion(criterion, kind, &drawn, seed, resamples);
    let values: Vec<f64> = drawn.iter().filter_map(|v| v.value()).collect();
    let binary = values.iter().all(|v| *v == 0.0 || *v == 1.0);
    let quantile = |q: f64| (!binary).then(|| quantile_estimate(&values, q)).flatten();
    let scored = !values.is_empty() && !binary;
    let under = (scored && matches!(kind, SummaryKind::Rate | SummaryKind::Mean)).then(|| {
        let k = values.iter().filter(|v| **v <= threshold).count() as u64;
        share(threshold, k, values.len() as u64)
    });
    CriterionAggregate {
        summary,
        targeted,
        p10: quantile(0.10),
        p25: quantile(0.25),
        under,
    }
}

/// The sample quantile `q` of `values` with its distribution-free 95 % interval
/// ([`oloproof_stats::quantile_interval`]), or why there is none; `None` for no values.
fn quantile_estimate(values: &[f64], q: f64) -> Option<QuantileEstimate> {
    let value = oloproof_stats::quantile(values, q).ok()?;
    Some(
        match oloproof_stats::quantile_interval(values, q, ALERT_CONFIDENCE) {
            Ok(oloproof_stats::QuantileInterval {
                lower: Some(lo),
                upper: Some(hi),
                ..
            }) => QuantileEstimate {
                value,
                interval: Some([lo, hi]),
                no_interval: None,
            },
            _ => QuantileEstimate {
                value,
                interval: None,
                no_interval: Some(format!(
                    "{} observed: a distribution-free 95% interval of a p{} needs at least {}",
                    values.len(),
                    q * 100.0,
                    oloproof_stats::quantile_interval_min_n(q, ALERT_CONFIDENCE)
                )),
            },
        },
    )
}

fn share(threshold: f64, k: u64, n: u64) -> ShareEstimate {
    ShareEstimate {
        threshold,
        k,
        n,
        share: (n > 0).then(|| k as f64 / n as f64),
        interval: oloproof_stats::wilson(k, n, ALERT_CONFIDENCE)
            .ok()
            .map(|i| [i.lo, i.hi]),
    }
}

fn evaluate_alert(
    alert: &AlertOptions,
    members: &[&Placed<'_>],
    verdicts: &HashMap<(String, String), Verdict>,
    sampled_for: &HashMap<String, HashSet<String>>,
    cost: Option<&dyn Evaluator>,
    (seed, resamples): (u64, usize),
) -> AlertReport {
    let mut a = AlertReport {
        kind: alert.type_name().into(),
        subject: String::new(),
        segment: String::new(),
        fired: false,
        status: "ok".into(),
        why: String::new(),
        n: 0,
        value: None,
        interval: None,
        changes: ChangeMarkers::default(),
    };
    let decide = |a: &mut AlertReport, fired: bool, why: String| {
        a.fired = fired;
        a.status = if fired { "fired" } else { "ok" }.into();
        a.why = why;
    };
    match alert {
        AlertOptions::LatencyP95 { stage, max_ms } => {
            a.subject = stage.clone();
            let values: Vec<f64> = members
                .iter()
                .filter_map(|p| p.record.trace.latency_ms.get(stage))
                .collect();
            let lacking = members.len() - values.len();
            a.n = values.len() as u64;
            let p95 = quantile_estimate(&values, 0.95);
            a.value = p95.as_ref().map(|e| e.value);
            match p95.and_then(|e| e.interval) {
                Some([lo, hi]) => {
                    a.interval = Some([lo, hi]);
                    let fired = lo > *max_ms;
                    let why = format!(
                            "p95 of {stage} latency {:.0} ms, 95% interval [{lo:.0}, {hi:.0}] ms on {} traces{}: {} {max_ms} ms",
                            a.value.unwrap_or(f64::NAN),
                            values.len(),
                            lacking_note(lacking, "without this stage's latency"),
                            if fired { "the lower bound is above" } else { "the lower bound is not above" }
                    );
                    decide(&mut a, fired, why);
                }
                None => {
                    a.status = "insufficient".into();
                    a.why = format!(
                        "{} traces with a {stage} latency{}: a distribution-free 95% interval of a p95 needs at least {}",
                        values.len(),
                        lacking_note(lacking, "without it"),
                        oloproof_stats::quantile_interval_min_n(0.95, ALERT_CONFIDENCE)
                    );
                }
            }
        }
        AlertOptions::CostPerRequest { max_usd, .. } => {
            a.subject = "cost".into();
            let Some(cost) = cost else {
                return a;
            };
            let judged: Vec<Verdict> = members
                .iter()
                .map(|p| cost.evaluate(&p.record.case, &p.record.trace, None).verdict)
                .collect();
            let refs: Vec<&Verdict> = judged.iter().collect();
            let s = summarize_criterion("cost", SummaryKind::Amount, &refs, seed, resamples);
            a.n = s.observed;
            a.value = s.value;
            let reasons = if s.excluded > 0 {
                format!(
                    " ({} excluded: {})",
                    s.excluded,
                    s.excluded_reasons
                        .iter()
                        .map(|(r, n)| format!("{r} {n}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            } else {
                String::new()
            };
            match s.interval {
                Some([lo, hi]) => {
                    a.interval = Some([lo, hi]);
                    let fired = lo > *max_usd;
                    let why = format!(
                            "mean cost ${:.5} per request, 95% interval [${lo:.5}, ${hi:.5}] on {} traces{reasons}: {} ${max_usd}",
                            s.value.unwrap_or(f64::NAN),
                            s.observed,
                            if fired { "the lower bound is above" } else { "the lower bound is not above" }
                    );
                    decide(&mut a, fired, why);
                }
                None => {
                    a.status = "insufficient".into();
                    a.why = format!("{} priced traces{reasons}: no interval", s.observed);
                }
            }
        }
        AlertOptions::CriterionBelow { criterion, min } => {
            a.subject = criterion.clone();
            let sampled = &sampled_for[criterion];
            let drawn: Vec<&Verdict> = members
                .iter()
                .filter(|p| sampled.contains(&p.record.case.id))
                .filter_map(|p| verdicts.get(&(p.record.case.id.clone(), criterion.clone())))
                .collect();
            let binary = drawn
                .iter()
                .filter_map(|v| v.value())
                .all(|v| v == 0.0 || v == 1.0);
            let kind = if binary {
                SummaryKind::Proportion
            } else {
                SummaryKind::Rate
            };
            let s = summarize_criterion(criterion, kind, &drawn, seed, resamples);
            a.n = s.observed;
            a.value = s.value;
            match s.interval {
                Some([lo, hi]) => {
                    a.interval = Some([lo, hi]);
                    let fired = hi < *min;
                    let why = format!(
                            "{criterion} {:.3}, 95% interval [{lo:.3}, {hi:.3}] ({}) on {} sampled traces: the upper bound is {} {min}",
                            s.value.unwrap_or(f64::NAN),
                            s.interval_method.as_deref().unwrap_or(""),
                            s.observed,
                            if fired { "below" } else { "not below" }
                    );
                    decide(&mut a, fired, why);
                }
                None => {
                    a.status = "insufficient".into();
                    a.why = format!("{criterion}: nothing observed on the sampled traces");
                }
            }
        }
        AlertOptions::FilterFalseExclusion {
            max_rate,
            criterion,
        } => {
            a.subject = criterion.clone();
            let sampled = &sampled_for[criterion];
            let values: Vec<f64> = members
                .iter()
                .filter(|p| sampled.contains(&p.record.case.id))
                .filter_map(|p| verdicts.get(&(p.record.case.id.clone(), criterion.clone())))
                .filter_map(Verdict::value)
                .collect();
            let k = values.iter().filter(|v| **v >= 1.0).count() as u64;
            let e = share(1.0, k, values.len() as u64);
            a.n = e.n;
            a.value = e.share;
            match e.interval {
                Some([lo, hi]) => {
                    a.interval = Some([lo, hi]);
                    let fired = lo > *max_rate;
                    let why = format!(
                            "{k} of {} queries lost every gold document to a filter, Wilson 95% [{lo:.3}, {hi:.3}]: the lower bound is {} {max_rate}",
                            e.n,
                            if fired { "above" } else { "not above" }
                    );
                    decide(&mut a, fired, why);
                }
                None => {
                    a.status = "insufficient".into();
                    a.why = format!("{criterion}: no query with a gold document was judged");
                }
            }
        }
        AlertOptions::RegenerationRate { band } => {
            a.subject = "regenerated".into();
            let k = members
                .iter()
                .filter(|p| {
                    p.record.trace.production.as_ref().is_some_and(|pr| {
                        pr.feedback.iter().any(|f| {
                            matches!(f.name.as_str(), "regenerated" | "regeneration")
                                && f.is_negative()
                        })
                    })
                })
                .count() as u64;
            let e = share(0.0, k, members.len() as u64);
            a.n = e.n;
            a.value = e.share;
            match e.interval {
                Some([lo, hi]) => {
                    a.interval = Some([lo, hi]);
                    let fired = math::outside(oloproof_stats::Interval::new(lo, hi), *band);
                    let why = format!(
                            "{k} of {} traces regenerated ({:.1}%), Wilson 95% [{:.1}%, {:.1}%]: {} the band [{:.1}%, {:.1}%]",
                            e.n,
                            100.0 * e.share.unwrap_or(0.0),
                            100.0 * lo,
                            100.0 * hi,
                            if fired { "wholly outside" } else { "not wholly outside" },
                            100.0 * band[0],
                            100.0 * band[1]
                    );
                    decide(&mut a, fired, why);
                }
                None => {
                    a.status = "insufficient".into();
                    a.why = "no traces".into();
                }
            }
        }
    }
    a
}

fn lacking_note(lacking: usize, what: &str) -> String {
    if lacking == 0 {
        String::new()
    } else {
        format!(" ({lacking} {what})")
    }
}

/// The values behind a window's change markers.
#[derive(Debug, Default, PartialEq)]
struct ChangeValues {
    code: BTreeSet<String>,
    model: BTreeSet<String>,
    config: BTreeSet<String>,
}

impl ChangeValues {
    fn of<'a>(records: impl Iterator<Item = &'a Record>) -> Self {
        let mut v = ChangeValues::default();
        let text = |x: &Value| match x {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        for r in records {
            for f in CODE_FIELDS {
                if let Some(x) = metadata_value(&r.case.metadata, f) {
                    v.code.insert(format!("{f}={}", text(x)));
                }
            }
            for f in CONFIG_FIELDS {
                if let Some(x) = metadata_value(&r.case.metadata, f) {
                    v.config.insert(text(x));
                }
            }
            if let Ok(usages) = crate::evaluators::measured::usages(&r.trace) {
                for (stage, u) in usages {
                    if let Some(model) = u.model {
                        v.model.insert(format!("{}={model}", stage.as_str()));
                    }
                }
            }
        }
        v
    }

    fn markers(&self, previous: Option<&ChangeValues>) -> ChangeMarkers {
        let changed = |now: &BTreeSet<String>, before: Option<&BTreeSet<String>>| {
            now.len() > 1 || before.is_some_and(|b| !b.is_empty() && !now.is_empty() && b != now)
        };
        ChangeMarkers {
            code: self.code.iter().cloned().collect(),
            model: self.model.iter().cloned().collect(),
            config: self.config.iter().cloned().collect(),
            code_changed: changed(&self.code, previous.map(|p| &p.code)),
            model_changed: changed(&self.model, previous.map(|p| &p.model)),
            config_changed: changed(&self.config, previous.map(|p| &p.config)),
        }
    }
}

/// Counts the feedback of `records` by [`oloproof_core::production::Feedback`]'s names.
pub fn feedback_of<'a>(records: impl Iterator<Item = &'a Record>) -> FeedbackCounts {
    let mut c = FeedbackCounts::default();
    for r in records {
        let Some(p) = &r.trace.production else {
            continue;
        };
        for f in &p.feedback {
            let name = f.name.to_ascii_lowercase();
            match name.as_str() {
                "thumbs" | "thumb" | "user_feedback" | "feedback" | "thumbs_up" | "thumbs_down" => {
                    if f.is_negative() {
                        c.thumbs_down += 1;
                        if let Some(reason) = f.comment.as_deref().filter(|s| !s.trim().is_empty())
                        {
                            *c.down_reasons.entry(reason.trim().to_string()).or_default() += 1;
                        }
                    } else {
                        c.thumbs_up += 1;
                    }
                }
                "regenerated" | "regeneration" => {
                    if f.is_negative() {
                        c.regenerated += 1;
                    }
                }
                "copied" | "copy" => {
                    if f.value.as_bool() != Some(false) {
                        c.copied += 1;
                    }
                }
                "follow_up" | "followup" => {
                    if f.value.as_bool() != Some(false) {
                        c.follow_up += 1;
                    }
                }
                _ => *c.other.entry(f.name.clone()).or_default() += 1,
            }
        }
    }
    c
}

fn is_thumbs_down(record: &Record) -> bool {
    record.trace.production.as_ref().is_some_and(|p| {
        p.feedback
            .iter()
            .any(|f| !matches!(f.name.as_str(), "regenerated" | "regeneration") && f.is_negative())
    })
}

/// The review queue over the horizon: the `size` judged traces with the smallest draw under a
/// second seed (`review:<seed>`, so the queue is not the judges' sample), every low-confidence
/// trace (a judged score within `review.low_confidence_margin` of an SLO's `score_above`) and
/// every thumbs-down trace; rows in the order of that second draw, so their reasons cannot be
/// read from their place. Rows carry what `calibrate --labels` reads (`id`, `question`,
/// `answer`, `contexts`, `reference`) with `label: null` to fill, plus `trace_id`, `window`
/// and `segment`; never a judge's score.
fn review_queue(
    m: &MonitorOptions,
    horizon: &[&Placed<'_>],
    verdicts: &HashMap<(String, String), Verdict>,
    size: usize,
) -> (ReviewReport, Vec<Value>) {
    let judged: HashSet<&str> = verdicts.keys().map(|(id, _)| id.as_str()).collect();
    let review_draw =
        |p: &Placed<'_>| math::draw(m.sampling.seed, &format!("review:{}", p.trace_id));
    let mut pool: Vec<(&Placed<'_>, f64)> = horizon
        .iter()
        .filter(|p| judged.contains(p.record.case.id.as_str()))
        .map(|p| (*p, review_draw(p)))
        .collect();
    pool.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.trace_id.cmp(&b.0.trace_id)));
    let mut reasons: BTreeMap<String, Vec<&'static str>> = BTreeMap::new();
    for (p, _) in pool.iter().take(size) {
        reasons
            .entry(p.record.case.id.clone())
            .or_default()
            .push("random");
    }
    let margin = m.review.low_confidence_margin;
    for p in horizon {
        let id = &p.record.case.id;
        let low = m.slos.iter().any(|s| {
            verdicts
                .get(&(id.clone(), s.criterion.clone()))
                .and_then(Verdict::value)
                .is_some_and(|v| (v - s.score_above).abs() <= margin)
        });
        if low {
            reasons
                .entry(id.clone())
                .or_default()
                .push("low_confidence");
        }
        if is_thumbs_down(p.record) {
            reasons.entry(id.clone()).or_default().push("thumbs_down");
        }
    }
    let mut chosen: Vec<(&Placed<'_>, f64)> = horizon
        .iter()
        .filter(|p| reasons.contains_key(&p.record.case.id))
        .map(|p| (*p, review_draw(p)))
        .collect();
    chosen.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.trace_id.cmp(&b.0.trace_id)));
    let rows: Vec<Value> = chosen.iter().map(|(p, _)| review_row(p)).collect();
    let mut by_reason: BTreeMap<String, u64> = BTreeMap::new();
    for rs in reasons.values() {
        for r in rs {
            *by_reason.entry((*r).to_string()).or_default() += 1;
        }
    }
    (
        ReviewReport {
            seed: m.sampling.seed,
            rows: rows.len() as u64,
            by_reason,
            reasons: reasons
                .into_iter()
                .map(|(id, rs)| (id, rs.into_iter().map(str::to_string).collect()))
                .collect(),
        },
        rows,
    )
}

fn review_row(p: &Placed<'_>) -> Value {
    let case = &p.record.case;
    let trace = &p.record.trace;
    let question = match case.input.get("question") {
        Some(Value::String(s)) => s.clone(),
        _ => Value::Object(case.input.clone()).to_string(),
    };
    let answer = trace
        .output_field("answer")
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .unwrap_or_default();
    let contexts: Vec<String> = match &trace.context {
        Some(c) => c
            .passages
            .iter()
            .filter_map(|p| p.passage.text.clone())
            .collect(),
        None => trace
            .retrieval
            .iter()
            .flat_map(|r| r.candidates.iter().filter_map(|c| c.text.clone()))
            .collect(),
    };
    let mut row = json!({
        "id": case.id,
        "question": question,
        "answer": answer,
        "contexts": contexts,
    });
    if let (Some(Value::String(reference)), Value::Object(map)) = (&case.expected.answer, &mut row)
    {
        map.insert("reference".into(), Value::String(reference.clone()));
    }
    if let Value::Object(map) = &mut row {
        map.insert("label".into(), Value::Null);
        map.insert("trace_id".into(), Value::String(p.trace_id.clone()));
        map.insert("window".into(), Value::String(rfc3339_from_ms(p.window)));
        map.insert("segment".into(), Value::String(p.segment.clone()));
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;
    use oloproof_core::production::{Feedback, Production};

    fn record(id: &str, feedback: Vec<(&str, Value)>) -> Record {
        let case: oloproof_core::case::Case = serde_json::from_value(json!({
            "id": id, "input": {"question": "q"},
            "metadata": {"intent": "refund", "service.version": "1.2", "nested": {"config_hash": "abc"}}
        }))
        .unwrap();
        let mut trace = oloproof_core::trace::Trace::new(id);
        trace.production = Some(Box::new(Production {
            trace_id: Some(format!("t-{id}")),
            feedback: feedback
                .into_iter()
                .map(|(name, value)| Feedback {
                    name: name.into(),
                    value,
                    comment: Some("wrong date".into()),
                    source: None,
                })
                .collect(),
            ..Default::default()
        }));
        Record { case, trace }
    }

    #[test]
    fn segments_read_flat_and_nested_metadata() {
        let r = record("a", vec![]);
        assert_eq!(segment_of(&r.case.metadata, &[]), "all");
        assert_eq!(
            segment_of(
                &r.case.metadata,
                &["metadata.intent".into(), "metadata.tenant".into()]
            ),
            "intent=refund, tenant=(none)"
        );
        assert_eq!(
            metadata_value(&r.case.metadata, "service.version"),
            Some(&json!("1.2"))
        );
        assert_eq!(
            metadata_value(&r.case.metadata, "nested.config_hash"),
            Some(&json!("abc"))
        );
    }

    #[test]
    fn feedback_is_counted_by_name() {
        let rs = [
            record(
                "a",
                vec![("thumbs", json!("down")), ("regenerated", json!(true))],
            ),
            record(
                "b",
                vec![
                    ("thumbs", json!(1)),
                    ("copied", json!(true)),
                    ("follow_up", json!("are you sure?")),
                ],
            ),
            record("c", vec![("helpfulness", json!(0.4))]),
        ];
        let c = feedback_of(rs.iter());
        assert_eq!(
            (
                c.thumbs_up,
                c.thumbs_down,
                c.regenerated,
                c.copied,
                c.follow_up
            ),
            (1, 1, 1, 1, 1)
        );
        assert_eq!(c.down_reasons.get("wrong date"), Some(&1));
        assert_eq!(c.other.get("helpfulness"), Some(&1));
        assert!(is_thumbs_down(&rs[0]));
        assert!(!is_thumbs_down(&rs[1]));
    }

    #[test]
    fn change_markers_compare_with_the_previous_window() {
        let a = ChangeValues {
            code: ["v1".to_string()].into(),
            ..Default::default()
        };
        let b = ChangeValues {
            code: ["v2".to_string()].into(),
            ..Default::default()
        };
        assert!(!a.markers(None).code_changed);
        assert!(b.markers(Some(&a)).code_changed);
        assert!(!a.markers(Some(&a)).code_changed);
        assert!(!a.markers(Some(&a)).model_changed);
        let both = ChangeValues {
            code: ["v1".to_string(), "v2".to_string()].into(),
            ..Default::default()
        };
        assert!(both.markers(None).code_changed);
    }
}
