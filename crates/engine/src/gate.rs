//! `oloproof gate`: absolute quality thresholds on one run, or on a window of the score history
//! (the Ragas tutorial's CI gate, done right).
//!
//! This module owns the gate policy (`gate.yaml`: [`GatePolicy`]), checked with located errors
//! like the comparison policy, and the pure decision ([`evaluate_gate`]) over history lines
//! ([`HistoryEntry`]): the gated run's own line and, for windows, the lines before it. It reads
//! and writes nothing; rendering belongs to `oloproof-report`.
//!
//! ```yaml
//! thresholds:
//!   - {criterion: faithfulness, min: 0.60}
//!   - {criterion: context_recall, min: 0.75, on: lower_bound}
//!   - {criterion: task_acceptance, min: 0.95, on: lower_bound, window: last_7_days}
//! max_missing_rate: 0.0
//! ```
//!
//! **Never passes on nothing.** The pass condition is tested once, `bound ≥ min` (or
//! `bound ≤ max`), and everything else fails: a criterion with no observed value, no interval, a
//! bound that is not finite, or more missing cases than `max_missing_rate` allows (default 0: one
//! failed judge call fails the gate, the tutorial's `skipna=False`) is `FAIL` with its reason, and
//! one failed threshold makes the gate `BLOCK` (exit 3), the word `compare` uses for its gate.
//!
//! **Intervals.** `on: lower_bound | upper_bound` reads a 95 % interval. Pass/fail criteria (and
//! rates whose values are all 0 or 1) use Clopper–Pearson by default, as the run summary does, or
//! Wilson with `interval: wilson` (seed 002's SLO bound); both rounded outward to 0.1 points.
//! Score criteria use the run summary's percentile bootstrap interval.
//!
//! **Lower-is-better criteria** (latency, TTFT, tokens, cost: [`SummaryKind::lower_is_better`])
//! take `max:` only — `{criterion: latency_total_p95, max: 1500, on: upper_bound}` passes
//! when the upper bound of the p95's distribution-free 95 % interval is at most 1,500 ms (with
//! `on: value`, the sample p95 itself). A sample too small to have that bound (a p95 needs 72
//! observed cases, a p99 368) fails with `no_interval`, never with the sample maximum. A
//! quantile is not pooled over a window (refused at `window:`); a mean amount (`cost`) pools
//! like a score. Seed 000's illustrative contract is one file:
//!
//! ```yaml
//! thresholds:
//!   - {criterion: faithfulness, min: 0.85, on: lower_bound}
//!   - {criterion: latency_total_p95, max: 1500, on: upper_bound}
//!   - {criterion: filter_false_exclusion, max: 0.02, on: upper_bound}
//! ```
//!
//! **Windows** (`last_N_runs`, `last_N_days`) pool the gated run with the history lines of the
//! same system before it: the last `N` runs including the gated one, or the runs less than `N`
//! days older than it. Pass/fail criteria pool their counts (`Σ passed / Σ observed`) and get a
//! fresh interval over the pooled cases. Score criteria pool the observed-weighted mean and the
//! pooled sample variance (from each line's mean, standard deviation and count) and get the
//! normal interval `mean ± z·s/√N` (`normal_pooled`): the per-case scores of old runs are not in
//! the history, so a bootstrap is not possible. Missing and excluded counts are summed. Pooled
//! cases are treated as independent observations, which fits runs over different traffic
//! (seed 002's rolling window); re-runs of one fixed case set repeat the same cases, and the
//! pooled interval is then narrower than the evidence warrants — see `docs/statistics.md`.

use oloproof_core::comparison::Gate;
use oloproof_core::gate::{Bound, GateReport, GateVerdict, Pooled, RunJudges, ThresholdResult};
use oloproof_core::history::{HistoryCriterion, HistoryEntry, HistoryInterval};
use oloproof_core::source::{did_you_mean, SourceError, YamlDocument};
use oloproof_core::summary::SummaryKind;
use serde::{Deserialize, Serialize};

use crate::history::entry_time_ms;
use crate::summary::{CONFIDENCE, PROPORTION_STEP};

/// Reason codes of threshold results.
pub mod reason {
    /// The bound is at or above `min`.
    pub const AT_OR_ABOVE_MIN: &str = "at_or_above_min";
    /// The bound is at or below `max`.
    pub const AT_OR_BELOW_MAX: &str = "at_or_below_max";
    /// The bound is below `min`.
    pub const BELOW_MIN: &str = "below_min";
    /// The bound is above `max`.
    pub const ABOVE_MAX: &str = "above_max";
    /// Nothing was observed (every case missing or excluded, or no case at all).
    pub const NO_OBSERVED_VALUE: &str = "no_observed_value";
    /// The criterion has a value but no interval to read a bound from.
    pub const NO_INTERVAL: &str = "no_interval";
    /// The value or bound is not a finite number.
    pub const NOT_FINITE: &str = "not_finite";
    /// The share of missing cases exceeds `max_missing_rate`.
    pub const TOO_MANY_MISSING: &str = "too_many_missing";
}

// ----------------------------------------------------------------------------------------------
// Policy
// ----------------------------------------------------------------------------------------------

/// The interval of a pass/fail criterion.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ProportionInterval {
    /// Exact Clopper–Pearson (the run summary's).
    ClopperPearson,
    /// Wilson score interval.
    Wilson,
}

impl ProportionInterval {
    /// `clopper_pearson`, `wilson`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProportionInterval::ClopperPearson => "clopper_pearson",
            ProportionInterval::Wilson => "wilson",
        }
    }
}

/// One entry of `thresholds:` as the file says it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ThresholdOptions {
    /// The criterion.
    pub criterion: String,
    /// Passes when the bound is at least this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// Passes when the bound is at most this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// What is compared (default `value`).
    #[serde(default)]
    pub on: Bound,
    /// `last_N_runs` or `last_N_days`: pool the history (default: the run alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
    /// The interval of a pass/fail criterion (default `clopper_pearson`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<ProportionInterval>,
}

/// `gate.yaml` as the file says it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GatePolicyOptions {
    /// The thresholds, all of which must pass.
    pub thresholds: Vec<ThresholdOptions>,
    /// Largest share of a criterion's cases that may be missing (default 0).
    #[serde(default)]
    pub max_missing_rate: f64,
    /// Refuse (exit 2) a window that pools runs whose criterion was scored by different judge
    /// models (default `false`: pool them and warn).
    #[serde(default)]
    pub require_same_judge: bool,
}

/// A parsed window.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Window {
    /// The last `N` runs, the gated one included.
    LastRuns(u32),
    /// The runs less than `N` days older than the gated one.
    LastDays(u32),
}

impl Window {
    /// Parses `last_7_days` or `last_5_runs`.
    pub fn parse(text: &str) -> Option<Window> {
        let rest = text.strip_prefix("last_")?;
        let (n, unit) = rest.split_once('_')?;
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        // All digits: the only parse error is overflow, which is as invalid as 0 (`None`).
        let n: u32 = n.parse().ok().filter(|n| *n >= 1)?;
        match unit {
            "runs" => Some(Window::LastRuns(n)),
            "days" => Some(Window::LastDays(n)),
            _ => None,
        }
    }
}

/// A validated gate policy, with the document it came from (to locate errors found once the run
/// is known: an unknown criterion).
#[derive(Debug, Clone)]
pub struct GatePolicy {
    options: GatePolicyOptions,
    windows: Vec<Option<Window>>,
    doc: YamlDocument,
}

impl GatePolicy {
    /// Parses and validates a gate policy (`path` as the user named it, for error locations).
    ///
    /// Errors point at `file:line:col`: unknown keys and values (with a suggestion), wrong
    /// types, no thresholds, neither or both of `min` and `max`, a threshold that is not a
    /// finite number, a malformed window, `max_missing_rate` outside `[0, 1]`.
    pub fn parse(path: &str, text: &str) -> Result<GatePolicy, SourceError> {
        let doc = YamlDocument::parse(path, text)?;
        let options: GatePolicyOptions = doc.deserialize(&doc.value)?;
        if options.thresholds.is_empty() {
            let mut err = doc.error_at("thresholds", false, "the policy declares no thresholds");
            err.help = Some(
                "declare at least one threshold; a gate without one would pass anything".into(),
            );
            return Err(err);
        }
        if !(0.0..=1.0).contains(&options.max_missing_rate) {
            let mut err = doc.error_at(
                "max_missing_rate",
                true,
                "`max_missing_rate` must lie in [0, 1]",
            );
            err.expected = Some("a share such as 0.05".into());
            return Err(err);
        }
        let mut windows = Vec::new();
        for (i, t) in options.thresholds.iter().enumerate() {
            let at = |key: &str| format!("thresholds[{i}].{key}");
            match (t.min, t.max) {
                (None, None) => {
                    let mut err =
                        doc.error_at(&format!("thresholds[{i}]"), true, "missing `min` or `max`");
                    err.key_path = Some(at("min"));
                    err.help = Some(
                        "add `min: 0.8` (pass at or above) or `max: 0.1` (pass at or below)".into(),
                    );
                    return Err(err);
                }
                (Some(_), Some(_)) => {
                    let mut err = doc.error_at(&at("max"), false, "give `min` or `max`, not both");
                    err.help = Some("write two thresholds on the same criterion".into());
                    return Err(err);
                }
                (Some(x), None) | (None, Some(x)) if !x.is_finite() => {
                    let key = if t.min.is_some() { "min" } else { "max" };
                    let mut err =
                        doc.error_at(&at(key), true, "the threshold must be a finite number");
                    err.expected = Some("a number such as 0.75".into());
                    return Err(err);
                }
                _ => {}
            }
            if t.interval.is_some() && t.on == Bound::Value {
                let mut err = doc.error_at(
                    &at("interval"),
                    false,
                    "`interval` only matters with `on: lower_bound` or `on: upper_bound`",
                );
                err.help = Some("add `on: lower_bound`, or remove `interval`".into());
                return Err(err);
            }
            let window = match &t.window {
                None => None,
                Some(w) => match Window::parse(w) {
                    Some(w) => Some(w),
                    None => {
                        let mut err =
                            doc.error_at(&at("window"), true, format!("unknown window `{w}`"));
                        err.expected = Some(
                            "`last_N_runs` or `last_N_days` with N ≥ 1, e.g. last_7_days".into(),
                        );
                        return Err(err);
                    }
                },
            };
            windows.push(window);
        }
        Ok(GatePolicy {
            options,
            windows,
            doc,
        })
    }

    /// The policy as the file says it.
    pub fn options(&self) -> &GatePolicyOptions {
        &self.options
    }

    /// With `require_same_judge: true`, refuses a windowed threshold whose pooled runs were
    /// judged by different judge models (provider and model; see
    /// [`HistoryEntry::judges_of`]), with an error at `require_same_judge` naming the criterion
    /// and each run's judges. Without it, every window may pool (the report warns).
    pub fn check_judges(
        &self,
        current: &HistoryEntry,
        history: &[HistoryEntry],
    ) -> Result<(), SourceError> {
        if !self.options.require_same_judge {
            return Ok(());
        }
        for (t, window) in self.options.thresholds.iter().zip(&self.windows) {
            let Some(w) = window else { continue };
            let lines = window_lines(current, history, *w);
            let mixed = mixed_judges(&lines, &t.criterion);
            if mixed.is_empty() {
                continue;
            }
            let listed: Vec<String> = mixed
                .iter()
                .map(|r| format!("{} ({})", r.run_id, r.judges.join(", ")))
                .collect();
            let mut err = self.doc.error_at(
                "require_same_judge",
                false,
                format!(
                    "the window `{}` on `{}` pools runs judged by different judge models: {}",
                    t.window.as_deref().unwrap_or_default(),
                    t.criterion,
                    listed.join("; ")
                ),
            );
            err.help = Some(
                "narrow the window to the runs of one judge, re-run the older runs with the current judge, \
                 or set `require_same_judge: false` to pool them with a warning"
                    .into(),
            );
            return Err(err);
        }
        Ok(())
    }

    /// Whether any threshold reads the history.
    pub fn needs_history(&self) -> bool {
        self.windows.iter().any(Option::is_some)
    }

    /// Checks the policy's criteria against the gated run, with located errors: an unknown
    /// criterion (with a suggestion), or `interval:` on a score criterion.
    pub fn check(&self, run: &HistoryEntry) -> Result<(), SourceError> {
        let names: Vec<&str> = run.criteria.iter().map(|c| c.criterion.as_str()).collect();
        for (i, t) in self.options.thresholds.iter().enumerate() {
            let key = format!("thresholds[{i}].criterion");
            let Some(c) = run.criterion(&t.criterion) else {
                let mut err = self.doc.error_at(
                    &key,
                    true,
                    format!(
                        "unknown criterion `{}`: not a criterion of run {}",
                        t.criterion, run.run_id
                    ),
                );
                err.expected = Some(format!("one of {}", names.join(", ")));
                err.help = did_you_mean(&t.criterion, names.iter().copied())
                    .map(|s| format!("did you mean `{s}`?"));
                return Err(err);
            };
            if c.kind.lower_is_better() {
                if t.min.is_some() {
                    let mut err = self.doc.error_at(
                        &format!("thresholds[{i}].min"),
                        false,
                        format!(
                            "`{}` is lower-is-better (a per-case amount: milliseconds, tokens or dollars); it is bounded from above",
                            t.criterion
                        ),
                    );
                    err.help = Some(format!(
                        "write `max: {}` (passes at or below), with `on: upper_bound` to judge the interval's upper bound",
                        t.min.unwrap_or_default()
                    ));
                    return Err(err);
                }
                if t.interval.is_some() {
                    let mut err = self.doc.error_at(
                        &format!("thresholds[{i}].interval"),
                        false,
                        format!("`{}` is an amount; `interval` chooses between the intervals of pass/fail criteria", t.criterion),
                    );
                    err.help = Some(
                        "remove `interval`: an amount's bound is the run summary's interval (order statistics for a quantile, bootstrap for a mean)".into(),
                    );
                    return Err(err);
                }
                if let (Some(q), Some(_)) = (c.kind.quantile(), &t.window) {
                    let mut err = self.doc.error_at(
                        &format!("thresholds[{i}].window"),
                        false,
                        format!(
                            "`{}` is a quantile (p{}): quantiles of several runs do not pool from their summaries",
                            t.criterion,
                            q * 100.0
                        ),
                    );
                    err.help = Some(
                        "gate the run alone (remove `window`), or run over the window's traffic as one run".into(),
                    );
                    return Err(err);
                }
            }
            if t.interval.is_some() && c.kind == SummaryKind::Mean {
                let mut err = self.doc.error_at(
                    &format!("thresholds[{i}].interval"),
                    false,
                    format!("`{}` is a score; `interval` chooses between the intervals of pass/fail criteria", t.criterion),
                );
                err.help =
                    Some("remove `interval`: a score's bound is its bootstrap interval".into());
                return Err(err);
            }
        }
        Ok(())
    }
}

/// A criterion's numbers, possibly pooled over several runs.
#[derive(Debug, Clone, PartialEq)]
struct Numbers {
    kind: SummaryKind,
    value: Option<f64>,
    passed: Option<u64>,
    observed: u64,
    missing: u64,
    excluded: u64,
    /// The interval, as the run summary or the pooling computed it.
    interval: Option<HistoryInterval>,
}

fn proportion_interval(k: u64, n: u64, method: ProportionInterval) -> Option<HistoryInterval> {
    let ci = match method {
        ProportionInterval::ClopperPearson => oloproof_stats::clopper_pearson(k, n, CONFIDENCE),
        ProportionInterval::Wilson => oloproof_stats::wilson(k, n, CONFIDENCE),
    }
    // An interval fails only for n = 0: no cases, no interval (the caller reports that).
    .ok()?
    .round_outward(PROPORTION_STEP);
    Some(HistoryInterval {
        lower: ci.lo,
        upper: ci.hi,
        method: method.as_str().to_string(),
        level: CONFIDENCE,
    })
}

/// Pools one criterion over `lines` (at least one).
fn pool(lines: &[&HistoryCriterion], method: ProportionInterval) -> Numbers {
    let observed: u64 = lines.iter().map(|c| c.observed).sum();
    let missing = lines.iter().map(|c| c.missing).sum();
    let excluded = lines.iter().map(|c| c.excluded).sum();
    let kind = lines.last().map_or(SummaryKind::Mean, |c| c.kind);
    let mut n = Numbers {
        kind,
        value: None,
        passed: None,
        observed,
        missing,
        excluded,
        interval: None,
    };
    if lines.iter().all(|c| c.passed.is_some() || c.observed == 0) {
        let k: u64 = lines.iter().filter_map(|c| c.passed).sum();
        n.passed = Some(k);
        if observed > 0 {
            n.value = Some(k as f64 / observed as f64);
            n.interval = proportion_interval(k, observed, method);
        }
        return n;
    }
    // Scores: the exact pooled mean and sample variance of the union, from each line's count,
    // mean and spread (a pass/fail line among scores counts as p(1 − p)·n/(n − 1)).
    let mut groups = Vec::new();
    let mut spread_known = true;
    for c in lines.iter().filter(|c| c.observed > 0) {
        let Some(mean) = c.value.filter(|m| m.is_finite()) else {
            n.value = Some(f64::NAN);
            return n;
        };
        let count = c.observed as f64;
        let variance = match (c.passed, c.std_dev) {
            _ if c.observed == 1 => 0.0,
            (Some(k), _) => {
                let p = k as f64 / count;
                count * p * (1.0 - p) / (count - 1.0)
            }
            (None, Some(s)) => s * s,
            (None, None) => {
                spread_known = false;
                0.0
            }
        };
        groups.push(oloproof_stats::pooled::GroupSummary {
            count: c.observed,
            mean,
            variance,
        });
    }
    if let Ok(Some((mean, interval))) =
        oloproof_stats::pooled::pooled_mean_interval(&groups, CONFIDENCE)
    {
        n.value = Some(mean);
        n.interval = interval.filter(|_| spread_known).map(|ci| HistoryInterval {
            lower: ci.lo,
            upper: ci.hi,
            method: "normal_pooled".into(),
            level: CONFIDENCE,
        });
    }
    n
}

/// Each pooled run's judges of `criterion` when they are not all the same (empty when every
/// line names the same judge models, or the criterion is not judged).
fn mixed_judges(lines: &[&HistoryEntry], criterion: &str) -> Vec<RunJudges> {
    let runs: Vec<RunJudges> = lines
        .iter()
        .filter(|e| e.criterion(criterion).is_some())
        .map(|e| RunJudges {
            run_id: e.run_id.clone(),
            judges: e.judges_of(criterion),
        })
        .collect();
    match runs.first() {
        Some(first) if runs.iter().any(|r| r.judges != first.judges) => runs,
        _ => Vec::new(),
    }
}

/// The gated run and the history lines of the same system before it, oldest first, that
/// `window` keeps.
fn window_lines<'a>(
    current: &'a HistoryEntry,
    history: &'a [HistoryEntry],
    window: Window,
) -> Vec<&'a HistoryEntry> {
    let before = match history.iter().rposition(|e| e.run_id == current.run_id) {
        Some(i) => &history[..i],
        None => history,
    };
    let now = entry_time_ms(current);
    let mut prior: Vec<&HistoryEntry> = before
        .iter()
        .filter(|e| e.system == current.system && e.run_id != current.run_id)
        .filter(|e| match (entry_time_ms(e), now) {
            (Some(t), Some(now)) => t <= now,
            _ => false,
        })
        .collect();
    match window {
        Window::LastRuns(n) => {
            let keep = (n as usize).saturating_sub(1);
            let skip = prior.len().saturating_sub(keep);
            prior.drain(..skip);
        }
        Window::LastDays(days) => {
            let span = i64::from(days) * 86_400_000;
            prior.retain(|e| match (entry_time_ms(e), now) {
                (Some(t), Some(now)) => now - t < span,
                _ => false,
            });
        }
    }
    prior.push(current);
    prior
}

/// Decides every threshold of `policy` on the run `current` (its history line), pooling the
/// lines of `history` for windowed thresholds. `policy_name` is printed as given.
pub fn evaluate_gate(
    policy: &GatePolicy,
    policy_name: &str,
    current: &HistoryEntry,
    history: &[HistoryEntry],
) -> GateReport {
    let max_missing = policy.options.max_missing_rate;
    let mut results = Vec::new();
    for (t, window) in policy.options.thresholds.iter().zip(&policy.windows) {
        let method = t.interval.unwrap_or(ProportionInterval::ClopperPearson);
        let (numbers, pooled) = match window {
            None => {
                let numbers = current.criterion(&t.criterion).map(|c| {
                    let mut n = pool(&[c], method);
                    if c.passed.is_none() {
                        // A score keeps the run summary's bootstrap interval.
                        n.interval = c.interval.clone();
                    }
                    n
                });
                (numbers, None)
            }
            Some(w) => {
                let lines = window_lines(current, history, *w);
                let with: Vec<(&HistoryEntry, &HistoryCriterion)> = lines
                    .iter()
                    .filter_map(|e| e.criterion(&t.criterion).map(|c| (*e, c)))
                    .collect();
                let crits: Vec<&HistoryCriterion> = with.iter().map(|(_, c)| *c).collect();
                let numbers = (!crits.is_empty()).then(|| pool(&crits, method));
                let pooled = Pooled {
                    window: t.window.clone().unwrap_or_default(), // no window: all runs
                    runs: with.len() as u64,
                    run_ids: with.iter().map(|(e, _)| e.run_id.clone()).collect(),
                    mixed_judges: mixed_judges(&lines, &t.criterion),
                };
                (numbers, Some(pooled))
            }
        };
        results.push(decide(t, numbers, pooled, max_missing));
    }
    let gate = if results.iter().all(|r| r.verdict == GateVerdict::Pass) {
        Gate::Pass
    } else {
        Gate::Block
    };
    GateReport {
        run_id: current.run_id.clone(),
        system: current.system.clone(),
        version: current.version.clone(),
        cases: current.cases,
        commit: current.commit.clone(),
        policy: policy_name.to_string(),
        max_missing_rate: max_missing,
        thresholds: results,
        gate,
    }
}

fn decide(
    t: &ThresholdOptions,
    numbers: Option<Numbers>,
    pooled: Option<Pooled>,
    max_missing: f64,
) -> ThresholdResult {
    let (op, threshold) = match (t.min, t.max) {
        (Some(m), _) => ("min", m),
        (None, Some(m)) => ("max", m),
        (None, None) => ("min", f64::NAN),
    };
    let kind = numbers.as_ref().map(|n| n.kind);
    let n = numbers.unwrap_or(Numbers {
        kind: SummaryKind::Mean,
        value: None,
        passed: None,
        observed: 0,
        missing: 0,
        excluded: 0,
        interval: None,
    });
    let total = n.observed + n.missing + n.excluded;
    let missing_share = if total == 0 {
        0.0
    } else {
        n.missing as f64 / total as f64
    };
    let compared = match t.on {
        Bound::Value => n.value,
        Bound::LowerBound => n.interval.as_ref().map(|i| i.lower),
        Bound::UpperBound => n.interval.as_ref().map(|i| i.upper),
    };
    let mut reasons = Vec::new();
    let mut pass = false;
    match compared {
        _ if n.value.is_none() => reasons.push(reason::NO_OBSERVED_VALUE),
        None => reasons.push(reason::NO_INTERVAL),
        Some(x) if !x.is_finite() => reasons.push(reason::NOT_FINITE),
        // The pass condition, tested once: NaN and every other surprise fail.
        Some(x) if op == "min" && x >= threshold => {
            pass = true;
            reasons.push(reason::AT_OR_ABOVE_MIN);
        }
        Some(x) if op == "max" && x <= threshold => {
            pass = true;
            reasons.push(reason::AT_OR_BELOW_MAX);
        }
        Some(_) if op == "min" => reasons.push(reason::BELOW_MIN),
        Some(_) => reasons.push(reason::ABOVE_MAX),
    }
    // The missing share must be within the allowance (a failed judge call never shrinks the
    // sample silently).
    let within = missing_share <= max_missing;
    if !within {
        if pass {
            reasons.insert(0, reason::TOO_MANY_MISSING);
        } else {
            reasons.push(reason::TOO_MANY_MISSING);
        }
        pass = false;
    }
    ThresholdResult {
        criterion: t.criterion.clone(),
        kind,
        on: t.on,
        op: op.to_string(),
        threshold,
        value: n.value,
        interval: n.interval,
        compared,
        passed: n.passed,
        observed: n.observed,
        missing: n.missing,
        excluded: n.excluded,
        missing_share,
        pooled,
        verdict: if pass {
            GateVerdict::Pass
        } else {
            GateVerdict::Fail
        },
        reasons: reasons.into_iter().map(str::to_string).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::rfc3339_from_ms;
    use oloproof_core::history::HISTORY_SCHEMA_VERSION;

    const DAY: i64 = 86_400_000;

    fn proportion(name: &str, k: u64, n: u64, missing: u64) -> HistoryCriterion {
        HistoryCriterion {
            criterion: name.into(),
            kind: SummaryKind::Proportion,
            value: (n > 0).then(|| k as f64 / n as f64),
            interval: proportion_interval(k, n, ProportionInterval::ClopperPearson),
            passed: Some(k),
            std_dev: None,
            observed: n,
            missing,
            excluded: 0,
            judges: Vec::new(),
        }
    }

    fn score(name: &str, values: &[f64]) -> HistoryCriterion {
        let n = values.len() as u64;
        let mean = values.iter().sum::<f64>() / n as f64;
        HistoryCriterion {
            criterion: name.into(),
            kind: SummaryKind::Mean,
            value: Some(mean),
            interval: Some(HistoryInterval {
                lower: mean - 0.1,
                upper: mean + 0.1,
                method: "percentile_bootstrap".into(),
                level: 0.95,
            }),
            passed: None,
            std_dev: oloproof_stats::pooled::sample_std_dev(values),
            observed: n,
            missing: 0,
            excluded: 0,
            judges: Vec::new(),
        }
    }

    fn entry(run: &str, day: i64, system: &str, criteria: Vec<HistoryCriterion>) -> HistoryEntry {
        HistoryEntry {
            schema_version: HISTORY_SCHEMA_VERSION,
            timestamp: rfc3339_from_ms(1_789_562_096_000 + day * DAY),
            run_id: run.into(),
            commit: None,
            branch: None,
            config_hash: "h".into(),
            system: system.into(),
            version: "v".into(),
            dataset: None,
            judge_models: Vec::new(),
            cases: 13,
            sample: None,
            criteria,
        }
    }

    fn policy(text: &str) -> GatePolicy {
        GatePolicy::parse("gate.yaml", text).unwrap()
    }

    fn judged_by(mut c: HistoryCriterion, model: &str) -> HistoryCriterion {
        c.judges = vec![oloproof_core::history::JudgeModel {
            name: "default".into(),
            provider: Some("openai".into()),
            model: Some(model.into()),
        }];
        c
    }

    #[test]
    fn a_window_over_different_judges_warns_or_is_refused() {
        let old = entry(
            "r1",
            0,
            "s",
            vec![judged_by(proportion("grounded", 8, 10, 0), "gpt-4o")],
        );
        let same = entry(
            "r2",
            1,
            "s",
            vec![judged_by(proportion("grounded", 9, 10, 0), "gpt-4o")],
        );
        let newer = entry(
            "r3",
            2,
            "s",
            vec![judged_by(proportion("grounded", 9, 10, 0), "gpt-5")],
        );
        let text = "thresholds:\n  - {criterion: grounded, min: 0.5, window: last_3_runs}\n";
        // One judge model over the window: nothing to say.
        let p = policy(text);
        assert!(p.check_judges(&same, &[old.clone(), same.clone()]).is_ok());
        let r = evaluate_gate(&p, "gate.yaml", &same, &[old.clone(), same.clone()]);
        assert!(r.thresholds[0]
            .pooled
            .as_ref()
            .unwrap()
            .mixed_judges
            .is_empty());
        // Two: pooled, each run's judges recorded for the warning.
        let history = [old.clone(), same.clone(), newer.clone()];
        let r = evaluate_gate(&p, "gate.yaml", &newer, &history);
        let mixed = &r.thresholds[0].pooled.as_ref().unwrap().mixed_judges;
        assert_eq!(mixed.len(), 3);
        assert_eq!(mixed[0].judges, ["openai/gpt-4o"]);
        assert_eq!(mixed[2].judges, ["openai/gpt-5"]);
        assert!(p.check_judges(&newer, &history).is_ok());
        // Refused when the policy requires one judge; a window of one run always passes.
        let strict = policy(&format!("{text}require_same_judge: true\n"));
        let err = strict.check_judges(&newer, &history).unwrap_err();
        assert!(
            matches!(
                err.origin,
                oloproof_core::source::Origin::File { line: 3, .. }
            ),
            "{:?}",
            err.origin
        );
        assert!(
            err.message
                .contains("r1 (openai/gpt-4o); r2 (openai/gpt-4o); r3 (openai/gpt-5)"),
            "{}",
            err.message
        );
        let one = policy(
            "thresholds:\n  - {criterion: grounded, min: 0.5, window: last_1_runs}\nrequire_same_judge: true\n",
        );
        assert!(one.check_judges(&newer, &history).is_ok());
        // A line written before criteria recorded their judges falls back on the run's.
        let mut legacy = entry("r0", -1, "s", vec![proportion("grounded", 8, 10, 0)]);
        legacy.judge_models = old.criteria[0].judges.clone();
        assert_eq!(legacy.judges_of("grounded"), ["openai/gpt-4o"]);
    }

    #[test]
    fn value_passes_where_the_lower_bound_fails() {
        // 9 of 13: 69.2 % [38.5, 91.0] (Clopper–Pearson).
        let run = entry("r", 0, "s", vec![proportion("answer_correct", 9, 13, 0)]);
        let p = policy(
            "thresholds:\n  - {criterion: answer_correct, min: 0.6}\n  - {criterion: answer_correct, min: 0.6, on: lower_bound}\n  - {criterion: answer_correct, min: 0.4, on: lower_bound, interval: wilson}\n  - {criterion: answer_correct, max: 0.9, on: upper_bound}\n",
        );
        let r = evaluate_gate(&p, "gate.yaml", &run, &[]);
        let t = &r.thresholds;
        assert_eq!(t[0].verdict, GateVerdict::Pass);
        assert_eq!(t[0].reasons, ["at_or_above_min"]);
        assert_eq!(t[1].verdict, GateVerdict::Fail);
        assert_eq!(t[1].compared, Some(0.385));
        assert_eq!(t[1].reasons, ["below_min"]);
        // Wilson is narrower: 9/13 → [42.4, 87.4].
        assert_eq!(t[2].verdict, GateVerdict::Pass);
        assert_eq!(t[2].interval.as_ref().unwrap().method, "wilson");
        assert_eq!(t[2].compared, Some(0.423));
        assert_eq!(t[3].verdict, GateVerdict::Fail);
        assert_eq!(t[3].reasons, ["above_max"]);
        assert_eq!(r.gate, Gate::Block);
    }

    #[test]
    fn nothing_observed_and_missing_cases_never_pass() {
        let run = entry(
            "r",
            0,
            "s",
            vec![
                proportion("judged", 0, 0, 13),
                proportion("some_missing", 12, 12, 1),
                score("ndcg", &[f64::NAN, 1.0]),
            ],
        );
        let p = policy(
            "thresholds:\n  - {criterion: judged, min: 0.0}\n  - {criterion: some_missing, min: 0.5}\n  - {criterion: ndcg, min: 0.1}\n",
        );
        let r = evaluate_gate(&p, "gate.yaml", &run, &[]);
        assert_eq!(r.thresholds[0].verdict, GateVerdict::Fail);
        assert_eq!(
            r.thresholds[0].reasons,
            ["no_observed_value", "too_many_missing"]
        );
        assert_eq!(r.thresholds[1].verdict, GateVerdict::Fail);
        assert_eq!(
            r.thresholds[1].reasons,
            ["too_many_missing", "at_or_above_min"]
        );
        assert_eq!(r.thresholds[2].verdict, GateVerdict::Fail);
        assert_eq!(r.thresholds[2].reasons, ["not_finite"]);
        // With an allowance, the share of 1/13 is within it.
        let p =
            policy("thresholds:\n  - {criterion: some_missing, min: 0.5}\nmax_missing_rate: 0.1\n");
        assert_eq!(evaluate_gate(&p, "g", &run, &[]).gate, Gate::Pass);
    }

    #[test]
    fn windows_pool_counts_of_the_same_system() {
        let history = vec![
            entry("old", -30, "s", vec![proportion("c", 0, 13, 0)]),
            entry("a", -3, "s", vec![proportion("c", 12, 13, 0)]),
            entry("other", -2, "t", vec![proportion("c", 0, 13, 0)]),
            entry("b", -1, "s", vec![proportion("c", 13, 13, 0)]),
        ];
        let run = entry("r", 0, "s", vec![proportion("c", 9, 13, 0)]);
        let p = policy(
            "thresholds:\n  - {criterion: c, min: 0.7, on: lower_bound, window: last_3_runs}\n  - {criterion: c, min: 0.7, on: lower_bound, window: last_7_days}\n  - {criterion: c, min: 0.7, on: lower_bound, window: last_1_runs}\n",
        );
        let r = evaluate_gate(&p, "g", &run, &history);
        let t = &r.thresholds[0];
        assert_eq!(t.pooled.as_ref().unwrap().run_ids, ["a", "b", "r"]);
        assert_eq!((t.passed, t.observed), (Some(34), 39));
        let expected = proportion_interval(34, 39, ProportionInterval::ClopperPearson).unwrap();
        assert_eq!(t.compared, Some(expected.lower));
        assert_eq!(t.verdict, GateVerdict::Pass, "{t:?}");
        assert_eq!(r.thresholds[1].pooled.as_ref().unwrap().runs, 3);
        assert_eq!(r.thresholds[2].pooled.as_ref().unwrap().run_ids, ["r"]);
        assert_eq!(r.thresholds[2].verdict, GateVerdict::Fail);
        // A run already in the history: the window ends at its line.
        let mut with_run = history.clone();
        with_run.push(run.clone());
        with_run.push(entry("later", 1, "s", vec![proportion("c", 0, 13, 0)]));
        let again = evaluate_gate(&p, "g", &run, &with_run);
        assert_eq!(again.thresholds[0].pooled, r.thresholds[0].pooled);
    }

    #[test]
    fn scores_pool_means_and_spreads_exactly() {
        let a = [0.2, 0.4, 0.9];
        let b = [0.5, 0.7, 0.8, 1.0];
        let history = vec![entry("a", -1, "s", vec![score("f", &a)])];
        let run = entry("r", 0, "s", vec![score("f", &b)]);
        let p = policy(
            "thresholds:\n  - {criterion: f, min: 0.3, on: lower_bound, window: last_2_runs}\n",
        );
        let t = &evaluate_gate(&p, "g", &run, &history).thresholds[0];
        let all: Vec<f64> = a.iter().chain(&b).copied().collect();
        let mean = all.iter().sum::<f64>() / 7.0;
        let s = oloproof_stats::pooled::sample_std_dev(&all).unwrap();
        let i = t.interval.as_ref().unwrap();
        assert!((t.value.unwrap() - mean).abs() < 1e-12);
        assert!((i.lower - (mean - 1.959_963_984_540_054 * s / 7f64.sqrt())).abs() < 1e-12);
        assert_eq!(i.method, "normal_pooled");
        assert_eq!(t.verdict, GateVerdict::Pass);
        // A single run keeps the summary's bootstrap interval.
        let p = policy("thresholds:\n  - {criterion: f, min: 0.3, on: lower_bound}\n");
        let t = &evaluate_gate(&p, "g", &run, &history).thresholds[0];
        assert_eq!(t.interval.as_ref().unwrap().method, "percentile_bootstrap");
    }

    #[test]
    fn policy_errors_are_located() {
        let err = |text: &str| GatePolicy::parse("gate.yaml", text).unwrap_err();
        let e = err("thresholds:\n  - {criterion: a, min: 0.5, onn: value}\n");
        assert_eq!(e.message, "unknown key `onn`");
        assert_eq!(e.help.as_deref(), Some("did you mean `on`?"));
        assert_eq!(e.location(), "gate.yaml:2:30");
        let e = err("thresholds:\n  - {criterion: a, min: 0.5, on: lower_bond}\n");
        assert_eq!(e.help.as_deref(), Some("did you mean `lower_bound`?"));
        let e = err("thresholds:\n  - {criterion: a}\n");
        assert_eq!(e.message, "missing `min` or `max`");
        let e = err("thresholds:\n  - {criterion: a, min: 1, max: 2}\n");
        assert_eq!(e.message, "give `min` or `max`, not both");
        let e = err("thresholds:\n  - {criterion: a, min: 1, window: last_week}\n");
        assert_eq!(e.message, "unknown window `last_week`");
        assert_eq!(e.location(), "gate.yaml:2:36");
        let e = err("thresholds: []\n");
        assert_eq!(e.message, "the policy declares no thresholds");
        let e = err("thresholds:\n  - {criterion: a, min: 1}\nmax_missing_rate: 2\n");
        assert_eq!(e.key_path.as_deref(), Some("max_missing_rate"));
        let e = err("thresholds:\n  - {criterion: a, min: 1, interval: wilson}\n");
        assert!(e.message.contains("only matters with"));

        let run = entry(
            "r",
            0,
            "s",
            vec![
                proportion("answer_correct", 9, 13, 0),
                score("ndcg_at_6", &[0.5, 1.0]),
            ],
        );
        let p = policy("thresholds:\n  - {criterion: answer_corect, min: 0.5}\n");
        let e = p.check(&run).unwrap_err();
        assert_eq!(e.help.as_deref(), Some("did you mean `answer_correct`?"));
        assert_eq!(e.location(), "gate.yaml:2:17");
        let p = policy("thresholds:\n  - {criterion: ndcg_at_6, min: 0.5, on: lower_bound, interval: wilson}\n");
        assert!(p.check(&run).unwrap_err().message.contains("is a score"));
        assert_eq!(Window::parse("last_0_runs"), None);
        assert_eq!(Window::parse("last_12_days"), Some(Window::LastDays(12)));
    }

    fn p95(name: &str, value: f64, interval: Option<[f64; 2]>, n: u64) -> HistoryCriterion {
        HistoryCriterion {
            criterion: name.into(),
            kind: SummaryKind::Quantile(oloproof_core::summary::QuantileLevel::new(0.95).unwrap()),
            value: Some(value),
            interval: interval.map(|[lower, upper]| HistoryInterval {
                lower,
                upper,
                method: "order_statistic".into(),
                level: 0.95,
            }),
            passed: None,
            std_dev: Some(120.0),
            observed: n,
            missing: 0,
            excluded: 0,
            judges: Vec::new(),
        }
    }

    /// Seed 000's illustrative contract (faithfulness ≥ 0.85, p95 latency < 1.5 s, filter
    /// false-exclusion < 2 %) is one gate file (the CLI tests' fixture, which the example
    /// copies), judged on the bounds it names.
    #[test]
    fn seed_000_contract_is_one_gate_file() {
        let text = include_str!("../../cli/tests/fixtures/latency/seed000_gate.yaml");
        let p = policy(text);
        let run = |latency: HistoryCriterion, excluded_gold: u64| {
            entry(
                "r",
                0,
                "s",
                vec![
                    proportion("faithfulness", 186, 200, 0),
                    latency,
                    proportion("filter_false_exclusion", excluded_gold, 200, 0),
                ],
            )
        };
        let good = run(
            p95("latency_total_p95", 1210.0, Some([1105.0, 1388.0]), 200),
            0,
        );
        p.check(&good).unwrap();
        let r = evaluate_gate(&p, "seed000_gate.yaml", &good, &[]);
        assert_eq!(r.gate, Gate::Pass, "{r:?}");
        assert_eq!(r.thresholds[1].compared, Some(1388.0));
        assert_eq!(r.thresholds[1].reasons, vec!["at_or_below_max"]);
        // The p95 itself is under 1.5 s but its upper bound is not: blocked.
        let slow_tail = run(
            p95("latency_total_p95", 1420.0, Some([1301.0, 1544.0]), 200),
            0,
        );
        let r = evaluate_gate(&p, "seed000_gate.yaml", &slow_tail, &[]);
        assert_eq!(r.gate, Gate::Block);
        assert_eq!(r.thresholds[1].reasons, vec!["above_max"]);
        // Too few cases for a distribution-free bound: no interval, never the sample maximum.
        let few = run(p95("latency_total_p95", 900.0, None, 60), 0);
        let r = evaluate_gate(&p, "seed000_gate.yaml", &few, &[]);
        assert_eq!(r.thresholds[1].reasons, vec!["no_interval"]);
        // One false exclusion in 200: the upper bound (2.8 %) is above 2 %.
        let r = evaluate_gate(
            &p,
            "seed000_gate.yaml",
            &run(p95("latency_total_p95", 1.0, Some([1.0, 2.0]), 200), 1),
            &[],
        );
        assert_eq!(r.thresholds[2].reasons, vec!["above_max"]);
    }

    #[test]
    fn lower_is_better_criteria_take_max_and_no_window() {
        let run = entry(
            "r",
            0,
            "s",
            vec![p95("latency_total_p95", 1.0, Some([1.0, 2.0]), 200)],
        );
        let err = policy("thresholds:\n  - {criterion: latency_total_p95, min: 1500}\n")
            .check(&run)
            .unwrap_err();
        assert!(err.message.contains("lower-is-better"), "{}", err.message);
        assert_eq!(err.help.as_deref(), Some("write `max: 1500` (passes at or below), with `on: upper_bound` to judge the interval's upper bound"));
        let err = policy(
            "thresholds:\n  - {criterion: latency_total_p95, max: 1500, window: last_3_runs}\n",
        )
        .check(&run)
        .unwrap_err();
        assert!(err.message.contains("do not pool"), "{}", err.message);
        let err = policy("thresholds:\n  - {criterion: latency_total_p95, max: 1500, on: upper_bound, interval: wilson}\n")
            .check(&run)
            .unwrap_err();
        assert!(err.message.contains("is an amount"), "{}", err.message);
    }
}
