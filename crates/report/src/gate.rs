//! `oloproof gate`: each threshold with the number it compared, PASS or FAIL and the reason,
//! what a window pooled, and the `Gate:` line.
//!
//! ```
//! use oloproof_report::gate::threshold_text;
//! use oloproof_core::summary::SummaryKind;
//! assert_eq!(threshold_text(Some(SummaryKind::Proportion), 0.6), "60.0%");
//! assert_eq!(threshold_text(Some(SummaryKind::Mean), 0.6), "0.600");
//! ```

use oloproof_core::comparison::Gate;
use oloproof_core::gate::{Bound, GateReport, GateVerdict, ThresholdResult};
use oloproof_core::summary::SummaryKind;

use crate::{format_proportion, table};

fn percent(kind: Option<SummaryKind>) -> bool {
    matches!(kind, Some(SummaryKind::Proportion | SummaryKind::Rate))
}

/// A threshold or value in the criterion's unit: `60.0%` for pass/fail criteria and rates,
/// `0.600` for scores, four significant digits for amounts (`1500`, `42.50`).
pub fn threshold_text(kind: Option<SummaryKind>, x: f64) -> String {
    if !x.is_finite() {
        return "undefined".to_string();
    }
    if percent(kind) {
        format_proportion(x)
    } else if kind.is_some_and(SummaryKind::lower_is_better) {
        crate::format_amount(x)
    } else {
        format!("{x:.3}")
    }
}

fn condition(r: &ThresholdResult) -> String {
    let what = match r.on {
        Bound::Value => "value",
        Bound::LowerBound => "lower bound",
        Bound::UpperBound => "upper bound",
    };
    let op = if r.op == "max" { "≤" } else { "≥" };
    format!("{what} {op} {}", threshold_text(r.kind, r.threshold))
}

fn interval_text(r: &ThresholdResult) -> String {
    match &r.interval {
        None => "—".to_string(),
        Some(i) => format!(
            "[{}, {}] {}",
            threshold_text(r.kind, i.lower),
            threshold_text(r.kind, i.upper),
            i.method
        ),
    }
}

fn counts_text(r: &ThresholdResult) -> String {
    let head = match (r.passed, r.kind) {
        (Some(k), _) => format!("{k} / {} observed", r.observed),
        (None, Some(SummaryKind::Quantile(q))) => {
            format!("{} of {} observed", q.label(), r.observed)
        }
        (None, _) => format!("mean of {} observed", r.observed),
    };
    format!("{head} · {} missing · {} excluded", r.missing, r.excluded)
}

/// The whole `oloproof gate` report.
pub fn gate_report(report: &GateReport) -> String {
    let mut out = format!(
        "Gate {} · run {} · {} {} · {} cases{}\n",
        report.policy,
        report.run_id,
        report.system,
        report.version,
        report.cases,
        report
            .commit
            .as_ref()
            .map(|c| format!(" · commit {}", c.chars().take(12).collect::<String>()))
            .unwrap_or_default()
    );
    let mut t = table(&[
        "",
        "criterion",
        "threshold",
        "compared",
        "95% interval",
        "counts",
        "reason",
    ]);
    for r in &report.thresholds {
        let criterion = match &r.pooled {
            Some(p) => format!("{} ({})", r.criterion, p.window),
            None => r.criterion.clone(),
        };
        t.add_row(vec![
            r.verdict.as_str().to_string(),
            criterion,
            condition(r),
            r.compared
                .map(|x| threshold_text(r.kind, x))
                .unwrap_or_else(|| "—".to_string()),
            interval_text(r),
            counts_text(r),
            r.reasons.join(", "),
        ]);
    }
    out.push_str(&t.to_string());
    out.push('\n');
    for r in &report.thresholds {
        if let Some(p) = &r.pooled {
            let total = r.observed + r.missing + r.excluded;
            out.push_str(&format!(
                "Window {} on {}: pooled {} run{} of {} ({} case{}: {} observed)\n",
                p.window,
                r.criterion,
                p.runs,
                if p.runs == 1 { "" } else { "s" },
                report.system,
                total,
                if total == 1 { "" } else { "s" },
                r.observed
            ));
            if !p.mixed_judges.is_empty() {
                let runs: Vec<String> = p
                    .mixed_judges
                    .iter()
                    .map(|j| {
                        let judges = if j.judges.is_empty() {
                            "no judge recorded".to_string()
                        } else {
                            j.judges.join(", ")
                        };
                        format!("{} {judges}", j.run_id)
                    })
                    .collect();
                out.push_str(&format!(
                    "  warning: these runs were judged by different judge models ({}); their scores may not be comparable (`require_same_judge: true` refuses such a window)\n",
                    runs.join("; ")
                ));
            }
        }
    }
    if report
        .thresholds
        .iter()
        .any(|r| r.reasons.iter().any(|x| x == "too_many_missing"))
    {
        out.push_str(&format!(
            "Missing cases allowed: {} (max_missing_rate); a failed judge call or system error never passes.\n",
            format_proportion(report.max_missing_rate)
        ));
    }
    out.push_str(&match report.gate {
        Gate::Pass => "Gate: PASS (exit 0)\n".to_string(),
        Gate::Block => {
            let failed = report
                .thresholds
                .iter()
                .filter(|r| r.verdict == GateVerdict::Fail)
                .count();
            format!(
                "Gate: BLOCK (exit 3) · {failed} of {} threshold{} failed\n",
                report.thresholds.len(),
                if report.thresholds.len() == 1 {
                    ""
                } else {
                    "s"
                }
            )
        }
    });
    out
}
