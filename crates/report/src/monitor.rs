//! The monitor page: one stored `oloproof monitor` report ([`MonitorReport`]) as HTML, written
//! by `oloproof report mon_… -o monitor.html` (a self-contained page, [`monitor_html`]) and
//! served by the viewer (the same body, [`monitor_body`], in its own shell).
//!
//! In order: what was read and how it was windowed (the tiers' runs included), the status line
//! and any reason the evaluation is incomplete, the alerts (fired first, each with why, the
//! interval decided on and what changed in the horizon), the SLOs (state on the Wilson lower
//! bound, error budget), a per-window series per criterion and segment ([`series_chart`]: the
//! point value joined by a line, the 95 % interval as a band, `n` per window, the windows
//! outside the horizon dimmed) with its table, drift, then the windows' feedback, errors and
//! change markers. Segments are `key=value` texts read from the traffic's metadata, so every
//! text goes through [`escape`].
//!
//! ```
//! use oloproof_report::monitor::window_label;
//! assert_eq!(window_label("2026-11-28T00:00:00Z"), "2026-11-28");
//! assert_eq!(window_label("2026-11-28T06:00:00Z"), "11-28 06:00");
//! ```

use std::collections::BTreeSet;
use std::fmt::Write as _;

use oloproof_core::monitor_report::{
    AlertReport, ChangeMarkers, CriterionAggregate, DriftReport, MonitorReport, QuantileEstimate,
    SloReport, SloState,
};
use oloproof_core::summary::{CriterionSummary, SummaryKind};

use crate::html::{escape, meta_list, page, table};
use crate::svg::{quarter_ticks, series_chart, SeriesPoint};
use crate::{counts_cell, format_amount, format_proportion, format_utc, interval_cell, value_cell};

/// A window's start as a series column shows it: the date of a window starting at midnight
/// UTC, else month, day, hour and minute.
pub fn window_label(start: &str) -> String {
    match start.strip_suffix("T00:00:00Z") {
        Some(date) if date.len() == 10 => date.to_string(),
        _ if start.len() >= 16 => format!("{} {}", &start[5..10], &start[11..16]),
        _ => start.to_string(),
    }
}

/// Whether a criterion's values are shares (shown as percentages).
fn is_share(kind: SummaryKind) -> bool {
    matches!(kind, SummaryKind::Proportion | SummaryKind::Rate)
}

/// A number of a criterion's scale: a percentage for shares, an amount for measured quantities
/// (latency, cost), else three decimals.
fn scaled(kind: SummaryKind, v: f64) -> String {
    if is_share(kind) {
        format_proportion(v)
    } else if kind.lower_is_better() {
        format_amount(v)
    } else {
        format!("{v:.3}")
    }
}

fn quantile_cell(kind: SummaryKind, q: &Option<QuantileEstimate>) -> String {
    match q {
        None => "—".into(),
        Some(q) => match q.interval {
            Some([lo, hi]) => format!(
                "{} [{}, {}]",
                scaled(kind, q.value),
                scaled(kind, lo),
                scaled(kind, hi)
            ),
            None => format!("{} (no interval)", scaled(kind, q.value)),
        },
    }
}

fn under_cell(a: &CriterionAggregate) -> String {
    match &a.under {
        None => "—".into(),
        Some(u) => {
            let head = format!("≤ {}: {} of {}", format_amount(u.threshold), u.k, u.n);
            match (u.share, u.interval) {
                (Some(s), Some([lo, hi])) => format!(
                    "{head} = {} [{}, {}]",
                    format_proportion(s),
                    format_proportion(lo),
                    format_proportion(hi)
                ),
                _ => head,
            }
        }
    }
}

/// Every `(criterion, segment)` of the report, criteria in the report's order, segments
/// sorted.
fn series_keys(r: &MonitorReport) -> Vec<(String, String)> {
    let mut criteria: Vec<String> = Vec::new();
    let mut segments: BTreeSet<&str> = BTreeSet::new();
    for w in &r.windows {
        for s in &w.segments {
            segments.insert(&s.segment);
            for c in &s.criteria {
                if !criteria.contains(&c.summary.criterion) {
                    criteria.push(c.summary.criterion.clone());
                }
            }
        }
    }
    criteria
        .iter()
        .flat_map(|c| segments.iter().map(move |s| (c.clone(), s.to_string())))
        .collect()
}

/// The aggregate of `criterion` in `segment` for each window (`None` where the segment had no
/// traffic).
fn series_of<'a>(
    r: &'a MonitorReport,
    criterion: &str,
    segment: &str,
) -> Vec<Option<&'a CriterionAggregate>> {
    r.windows
        .iter()
        .map(|w| {
            w.segments
                .iter()
                .find(|s| s.segment == segment)
                .and_then(|s| s.criteria.iter().find(|c| c.summary.criterion == criterion))
        })
        .collect()
}

/// The y range of a series: `[0, 1]` for shares and scores, widened to every value and
/// interval end; measured amounts from 0 to their largest value.
fn series_domain(kind: SummaryKind, aggs: &[Option<&CriterionAggregate>]) -> [f64; 2] {
    let values = aggs.iter().flatten().flat_map(|a| {
        a.summary
            .value
            .into_iter()
            .chain(a.summary.interval.into_iter().flatten())
    });
    let (mut lo, mut hi) = (0.0f64, if kind.lower_is_better() { 0.0f64 } else { 1.0 });
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if hi <= lo {
        hi = lo + 1.0;
    }
    [lo, hi]
}

fn point_title(window: &str, s: &CriterionSummary) -> String {
    format!(
        "{window}: {} {} · {}",
        value_cell(s),
        interval_cell(s),
        counts_cell(s)
    )
}

/// The threshold a series is read against: its criterion's SLO `score_above`, if any.
fn threshold_of(r: &MonitorReport, criterion: &str) -> Option<(f64, String)> {
    r.slos
        .iter()
        .find(|s| s.criterion == criterion)
        .map(|s| (s.score_above, format!("SLO: above {}", s.score_above)))
}

/// One criterion in one segment: the series chart and its table, one row per window.
fn series_section(r: &MonitorReport, criterion: &str, segment: &str) -> String {
    let aggs = series_of(r, criterion, segment);
    let kind = aggs
        .iter()
        .flatten()
        .map(|a| a.summary.kind)
        .next()
        .unwrap_or(SummaryKind::Rate);
    let domain = series_domain(kind, &aggs);
    let ticks = quarter_ticks(domain[0], domain[1], |v| scaled(kind, v));
    let points: Vec<SeriesPoint> = r
        .windows
        .iter()
        .zip(&aggs)
        .map(|(w, a)| SeriesPoint {
            label: window_label(&w.start),
            value: a.and_then(|a| a.summary.value),
            interval: a.and_then(|a| a.summary.interval),
            n: a.map_or(0, |a| a.summary.observed),
            dimmed: !w.in_horizon,
            title: match a {
                Some(a) => point_title(&w.start, &a.summary),
                None => format!("{}: no traffic in this segment", w.start),
            },
        })
        .collect();
    let what = if is_share(kind) {
        "pass rate".to_string()
    } else if let SummaryKind::Quantile(q) = kind {
        q.label()
    } else {
        "mean".to_string()
    };
    let caption =
        format!("{criterion} · {segment}: {what} per window with its 95% interval as a band");
    let mut out = format!(
        "<section class=\"series\" data-criterion=\"{}\" data-segment=\"{}\">\n<h3>{} <span class=\"muted\">· {}</span></h3>\n<div class=\"series-body\">\n",
        escape(criterion),
        escape(segment),
        escape(criterion),
        escape(segment)
    );
    out.push_str(&series_chart(
        &caption,
        &points,
        domain,
        &ticks,
        threshold_of(r, criterion),
    ));
    let rows: Vec<Vec<String>> = r
        .windows
        .iter()
        .zip(&aggs)
        .map(|(w, a)| {
            let horizon = if w.in_horizon { "yes" } else { "no" }.to_string();
            match a {
                Some(a) => vec![
                    w.start.clone(),
                    horizon,
                    value_cell(&a.summary),
                    interval_cell(&a.summary),
                    counts_cell(&a.summary),
                    a.targeted.to_string(),
                    quantile_cell(kind, &a.p10),
                    quantile_cell(kind, &a.p25),
                    under_cell(a),
                ],
                None => {
                    let mut row = vec![w.start.clone(), horizon, "no traffic".into()];
                    row.extend(std::iter::repeat_n("—".to_string(), 6));
                    row
                }
            }
        })
        .collect();
    out.push_str(&table(
        &[
            "window",
            "in horizon",
            what.as_str(),
            "95% interval",
            "counts",
            "targeted",
            "p10",
            "p25",
            "share under the threshold",
        ],
        &rows,
    ));
    out.push_str("</div>\n</section>\n");
    out
}

fn changes_text(c: &ChangeMarkers) -> String {
    let mut parts = Vec::new();
    for (what, changed, values) in [
        ("code", c.code_changed, &c.code),
        ("model", c.model_changed, &c.model),
        ("config", c.config_changed, &c.config),
    ] {
        if changed {
            parts.push(format!("{what} changed ({})", values.join(", ")));
        }
    }
    if parts.is_empty() {
        "no code, model or config change".into()
    } else {
        parts.join(" · ")
    }
}

/// Alerts fired first, then those without an interval to decide on, then the quiet ones; in
/// the report's order within each.
pub fn alerts_fired_first(r: &MonitorReport) -> Vec<&AlertReport> {
    let rank = |a: &AlertReport| match (a.fired, a.status.as_str()) {
        (true, _) => 0,
        (false, "insufficient") => 1,
        _ => 2,
    };
    let mut alerts: Vec<&AlertReport> = r.alerts.iter().collect();
    alerts.sort_by_key(|a| rank(a));
    alerts
}

fn interval_text(i: Option<[f64; 2]>) -> String {
    i.map_or_else(
        || "—".into(),
        |[lo, hi]| format!("[{}, {}]", format_amount(lo), format_amount(hi)),
    )
}

fn alerts_section(r: &MonitorReport) -> String {
    let fired = r.alerts.iter().filter(|a| a.fired).count();
    let mut out = format!(
        "<section id=\"alerts\">\n<h2>Alerts <span class=\"muted\">{fired} fired of {}</span></h2>\n",
        r.alerts.len()
    );
    if r.alerts.is_empty() {
        out.push_str("<p class=\"muted\">No alert is configured.</p>\n</section>\n");
        return out;
    }
    out.push_str("<table class=\"alerts\">\n<tr><th>status</th><th>type</th><th>subject</th><th>segment</th><th>why</th><th>n</th><th>value</th><th>interval</th><th>changes in the horizon</th></tr>\n");
    for a in alerts_fired_first(r) {
        let class = match (a.fired, a.status.as_str()) {
            (true, _) => "v-fail",
            (false, "insufficient") => "v-insufficient",
            _ => "v-pass",
        };
        let _ = writeln!(
            out,
            "<tr class=\"alert\" data-status=\"{status}\" data-type=\"{kind}\"><td class=\"{class}\">{status}</td><td class=\"mono\">{kind}</td><td>{}</td><td>{}</td><td class=\"why\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            escape(&a.subject),
            escape(&a.segment),
            escape(&a.why),
            a.n,
            a.value.map_or_else(|| "—".into(), format_amount),
            escape(&interval_text(a.interval)),
            escape(&changes_text(&a.changes)),
            status = escape(&a.status),
            kind = escape(&a.kind),
        );
    }
    out.push_str("</table>\n</section>\n");
    out
}

fn slo_class(state: SloState) -> &'static str {
    match state {
        SloState::Met => "v-pass",
        SloState::NotDemonstrated | SloState::NoData => "v-insufficient",
        SloState::Violated => "v-fail",
    }
}

fn budget_text(s: &SloReport) -> String {
    let d = &s.decision;
    format!(
        "{} failures allowed, {} seen, {}",
        d.allowed_failures,
        d.failures,
        if d.budget_left >= 0 {
            format!("{} left", d.budget_left)
        } else {
            format!("{} over", -d.budget_left)
        }
    )
}

fn slos_section(r: &MonitorReport) -> String {
    let unmet = r.slos.iter().filter(|s| s.decision.state.fails()).count();
    let mut out = format!(
        "<section id=\"slos\">\n<h2>SLOs over the horizon <span class=\"muted\">{unmet} of {} not met · decided on the Wilson lower bound</span></h2>\n",
        r.slos.len()
    );
    if r.slos.is_empty() {
        out.push_str("<p class=\"muted\">No SLO is configured.</p>\n</section>\n");
        return out;
    }
    out.push_str("<table class=\"slos\">\n<tr><th>criterion</th><th>segment</th><th>score above</th><th>min share</th><th>good / judged</th><th>share</th><th>Wilson lower bound</th><th>state</th><th>error budget</th></tr>\n");
    for s in &r.slos {
        let d = &s.decision;
        let _ = writeln!(
            out,
            "<tr class=\"slo\" data-state=\"{}\"><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{} / {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"state {}\">{}</td><td>{}</td></tr>",
            d.state.as_str(),
            escape(&s.criterion),
            escape(&s.segment),
            s.score_above,
            format_proportion(s.min_share),
            d.good,
            d.n,
            d.share.map_or_else(|| "—".into(), format_proportion),
            d.lower_bound.map_or_else(|| "—".into(), format_proportion),
            slo_class(d.state),
            d.state.label(),
            escape(&budget_text(s)),
        );
    }
    out.push_str("</table>\n</section>\n");
    out
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "—".into(), |x| format!("{x:.decimals$}"))
}

fn drift_section(d: &DriftReport) -> String {
    let mut out = String::from("<section id=\"drift\">\n<h2>Drift</h2>\n");
    let mut meta = vec![
        (
            "embedder",
            d.embedder.clone().unwrap_or_else(|| "none".into()),
        ),
        ("reference window", d.reference.clone()),
        (
            "test",
            format!(
                "MMD² permutation test, {} permutations, α {} after Holm over the horizon",
                d.permutations, d.alpha
            ),
        ),
    ];
    if let Some(m) = &d.model_identity {
        meta.push(("model", m.clone()));
    }
    if d.without_question > 0 {
        meta.push((
            "not embedded",
            format!("{} records without a question", d.without_question),
        ));
    }
    out.push_str(&meta_list(&meta));
    if !d.queries.is_empty() {
        out.push_str("<h3>Query drift per window</h3>\n");
        let rows: Vec<Vec<String>> = d
            .queries
            .iter()
            .map(|q| {
                vec![
                    q.window.clone(),
                    q.reference_window.clone().unwrap_or_else(|| "—".into()),
                    q.segment.clone(),
                    if q.in_horizon { "yes" } else { "no" }.into(),
                    q.status.clone(),
                    format!("{} / {}", q.reference_queries, q.window_queries),
                    opt(q.mmd2, 5),
                    opt(q.p_value, 4),
                    opt(q.p_adjusted, 4),
                    opt(q.js_distance, 4),
                    q.why.clone(),
                ]
            })
            .collect();
        out.push_str(&table(
            &[
                "window",
                "reference",
                "segment",
                "in horizon",
                "status",
                "queries (reference / window)",
                "MMD²",
                "p-value",
                "p adjusted (Holm)",
                "JS distance",
                "why",
            ],
            &rows,
        ));
    }
    if let Some(p) = &d.probes {
        out.push_str("<h3>Probe drift</h3>\n");
        let mut meta = vec![
            ("probes", format!("{} ({} compared)", p.file, p.compared)),
            ("status", p.status.clone()),
            ("stored vectors", p.vectors.clone()),
            (
                "cosine to the stored vectors",
                format!(
                    "min {} · mean {} · threshold {}",
                    opt(p.min_cosine, 4),
                    opt(p.mean_cosine, 4),
                    p.threshold
                ),
            ),
        ];
        if !p.below.is_empty() {
            let below: Vec<String> = p
                .below
                .iter()
                .map(|(id, c)| format!("{id} ({c:.4})"))
                .collect();
            meta.push(("under the threshold", below.join(", ")));
        }
        if !p.unmatched.is_empty() {
            meta.push(("without a stored vector", p.unmatched.join(", ")));
        }
        meta.push((
            "model (stored → now)",
            format!(
                "{} → {}",
                p.stored_model.as_deref().unwrap_or("none"),
                p.current_model.as_deref().unwrap_or("none")
            ),
        ));
        out.push_str(&meta_list(&meta));
    }
    for perf in &d.performance {
        let _ = writeln!(
            out,
            "<h3>Performance drift: {} by {}</h3>",
            escape(&perf.subject),
            escape(&if perf.by.is_empty() {
                "(all)".to_string()
            } else {
                perf.by.join(", ")
            })
        );
        let rows: Vec<Vec<String>> = perf
            .windows
            .iter()
            .map(|w| {
                vec![
                    w.window.clone(),
                    w.segment.clone(),
                    if w.in_horizon { "yes" } else { "no" }.into(),
                    w.status.clone(),
                    w.n.to_string(),
                    w.value.map_or_else(|| "—".into(), format_amount),
                    interval_text(w.interval),
                    interval_text(w.band),
                    w.reference
                        .map(|(v, n)| format!("{} on {n}", format_amount(v)))
                        .unwrap_or_else(|| "—".into()),
                ]
            })
            .collect();
        out.push_str(&table(
            &[
                "window",
                "segment",
                "in horizon",
                "status",
                "n",
                "value",
                "95% interval",
                "band",
                "reference",
            ],
            &rows,
        ));
    }
    out.push_str("</section>\n");
    out
}

fn windows_section(r: &MonitorReport) -> String {
    let mut out = String::from(
        "<section id=\"windows\">\n<h2>Feedback, errors and changes per window</h2>\n",
    );
    let rows: Vec<Vec<String>> = r
        .windows
        .iter()
        .map(|w| {
            let f = &w.feedback;
            let traces: u64 = w.segments.iter().map(|s| s.traces).sum();
            let errors: u64 = w.segments.iter().map(|s| s.errors).sum();
            let reasons: Vec<String> = f
                .down_reasons
                .iter()
                .map(|(k, v)| format!("\"{k}\" {v}"))
                .collect();
            let other: Vec<String> = f.other.iter().map(|(k, v)| format!("{k} {v}")).collect();
            vec![
                format!("{} → {}", w.start, w.end),
                if w.in_horizon { "yes" } else { "no" }.into(),
                traces.to_string(),
                errors.to_string(),
                f.thumbs_up.to_string(),
                if reasons.is_empty() {
                    f.thumbs_down.to_string()
                } else {
                    format!("{} ({})", f.thumbs_down, reasons.join(", "))
                },
                f.regenerated.to_string(),
                f.copied.to_string(),
                f.follow_up.to_string(),
                if other.is_empty() {
                    "—".into()
                } else {
                    other.join(", ")
                },
                changes_text(&w.changes),
            ]
        })
        .collect();
    out.push_str(&table(
        &[
            "window",
            "in horizon",
            "traces",
            "errors",
            "thumbs up",
            "thumbs down (reasons)",
            "regenerated",
            "copied",
            "follow-ups",
            "other feedback",
            "changes",
        ],
        &rows,
    ));
    let e = &r.errors;
    let share = if e.traces > 0 {
        e.errors as f64 / e.traces as f64
    } else {
        0.0
    };
    let _ = writeln!(
        out,
        "<p class=\"{}\" id=\"error-share\">{} of {} traces of the horizon ended in an error ({}); allowed: {} (--max-error-rate).</p>",
        if share > e.max_error_rate { "v-fail" } else { "muted" },
        e.errors,
        e.traces,
        format_proportion(share),
        format_proportion(e.max_error_rate)
    );
    out.push_str("</section>\n");
    out
}

/// The report's header: what was read, the windows, the selection and the tiers' runs.
fn header(id: &str, created_ms: Option<i64>, r: &MonitorReport) -> String {
    let t = &r.traffic;
    let w = &r.window;
    let mut rows: Vec<(&str, String)> = vec![("report", id.to_string())];
    if let Some(ms) = created_ms {
        rows.push(("recorded (UTC)", format_utc(ms)));
    }
    rows.push(("traffic", t.path.clone()));
    rows.push(("sha256", t.sha256.clone()));
    rows.push((
        "records",
        format!(
            "{} · {} timed · {} untimed · {} rows skipped",
            t.records, t.timed, t.untimed, t.skipped_rows
        ),
    ));
    for u in &t.untimed_examples {
        rows.push(("not in a window", format!("{} ({})", u.id, u.reason)));
    }
    rows.push((
        "windows",
        format!(
            "{} each · rolling {} · horizon of {} window{}{}",
            w.size,
            w.rolling,
            w.horizon_windows,
            if w.horizon_windows == 1 { "" } else { "s" },
            match (&w.horizon_start, &w.horizon_end) {
                (Some(a), Some(b)) => format!(": {a} → {b}"),
                _ => String::new(),
            }
        ),
    ));
    rows.push((
        "segments",
        if r.segments.is_empty() {
            "none (all traffic is one segment)".into()
        } else {
            r.segments.join(", ")
        },
    ));
    let s = &r.sampling;
    rows.push((
        "sampling",
        format!(
            "seed {} · target {} judgments per segment and window · always: {}",
            s.seed,
            s.target_judgments,
            if s.always.is_empty() {
                "(none)".into()
            } else {
                s.always.join(", ")
            }
        ),
    ));
    for tier in &s.tiers {
        rows.push((
            "tier",
            format!(
                "{} [{}] rate {}{}: {} selected, {} judged ({} from the cache) · run {}",
                tier.tier,
                tier.evaluators.join(", "),
                tier.rate
                    .as_str()
                    .map_or_else(|| tier.rate.to_string(), str::to_string),
                if tier.takes_flagged { " + flagged" } else { "" },
                tier.selected,
                tier.judgments_fresh + tier.judgments_cached,
                tier.judgments_cached,
                tier.run_id.as_deref().unwrap_or("none (nothing selected)")
            ),
        ));
    }
    if let Some(review) = &r.review {
        let reasons: Vec<String> = review
            .by_reason
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        rows.push((
            "review queue",
            format!("{} rows ({})", review.rows, reasons.join(", ")),
        ));
    }
    meta_list(&rows)
}

/// The page's body (everything inside `<main>`): the viewer serves it in its own shell.
/// `created_ms` is when the store recorded it, if known.
pub fn monitor_body(id: &str, created_ms: Option<i64>, r: &MonitorReport) -> String {
    let mut body = format!(
        "<h1>Monitor report <span class=\"mono\">{}</span></h1>\n",
        escape(id)
    );
    body.push_str(&header(id, created_ms, r));
    let fired = r.alerts.iter().filter(|a| a.fired).count();
    let unmet = r.slos.iter().filter(|s| s.decision.state.fails()).count();
    let (status, class) = if !r.incomplete.is_empty() {
        ("INCOMPLETE", "block")
    } else if r.breached() {
        ("BREACH", "block")
    } else {
        ("OK", "pass")
    };
    let _ = writeln!(
        body,
        "<p><span class=\"gate {class}\" id=\"monitor-status\">{status}</span> {fired} alert{} fired · {unmet} of {} SLO{} not met · {} of {} traces of the horizon in error</p>",
        if fired == 1 { "" } else { "s" },
        r.slos.len(),
        if r.slos.len() == 1 { "" } else { "s" },
        r.errors.errors,
        r.errors.traces
    );
    if !r.incomplete.is_empty() {
        body.push_str("<ul class=\"incomplete\">\n");
        for line in &r.incomplete {
            let _ = writeln!(body, "<li class=\"v-fail\">{}</li>", escape(line));
        }
        body.push_str("</ul>\n");
    }
    body.push_str(&alerts_section(r));
    body.push_str(&slos_section(r));
    if let Some(shadow) = &r.shadow {
        body.push_str(&shadow_section(shadow));
    }
    body.push_str("<section id=\"series\">\n<h2>Per window</h2>\n<p class=\"muted\">Each criterion in each segment: the value over the traces the rate drew (always-included and flagged traces are counted as targeted, not estimated on), its 95% interval as the band, n observed per window; windows outside the horizon are shaded.</p>\n");
    let keys = series_keys(r);
    if keys.is_empty() {
        body.push_str("<p class=\"muted\">No window holds a judged trace.</p>\n");
    }
    for (criterion, segment) in &keys {
        body.push_str(&series_section(r, criterion, segment));
    }
    body.push_str("</section>\n");
    if let Some(d) = &r.drift {
        body.push_str(&drift_section(d));
    }
    body.push_str(&windows_section(r));
    body
}

/// The shadow evaluation: the candidate, what was compared, and the comparison's difference
/// lines, decisions and gate (the whole comparison is `oloproof report sha256:…`, or the
/// viewer's `/comparisons/<id>`).
fn shadow_section(s: &oloproof_core::shadow::ShadowReport) -> String {
    let mut out = String::from("<section id=\"shadow\">\n<h2>Shadow evaluation</h2>\n");
    let left: Vec<String> = s.left_out.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let _ = writeln!(
        out,
        "<p>{} over {} of {} eligible traces of {} (window <span class=\"mono\">{}</span>; the smallest draws, seed {}, at most {}){} · criteria: {}</p>",
        escape(if s.candidate_system.is_empty() { "the candidate" } else { &s.candidate_system }),
        s.selected,
        s.eligible,
        escape(&if s.windows.is_empty() { "no window".to_string() } else { s.windows.join(", ") }),
        escape(&s.window),
        s.seed,
        s.max_cases,
        escape(&if left.is_empty() { String::new() } else { format!(" · left out: {}", left.join(", ")) }),
        escape(&s.criteria.join(", "))
    );
    if let (Some(candidate), Some(production)) = (&s.candidate_run, &s.production_run) {
        let _ = writeln!(
            out,
            "<p>candidate run <span class=\"mono\">{}</span>{} · production run <span class=\"mono\">{}</span></p>",
            escape(candidate),
            if s.candidate_errors > 0 {
                format!(" ({} cases ended in an error)", s.candidate_errors)
            } else {
                String::new()
            },
            escape(production)
        );
    }
    let Some(c) = &s.comparison else {
        out.push_str("<p class=\"muted\">No trace was compared.</p>\n</section>\n");
        return out;
    };
    let (gate, class) = match c.gate {
        oloproof_core::comparison::Gate::Pass => ("PASS", "pass"),
        oloproof_core::comparison::Gate::Block => ("BLOCK", "block"),
    };
    let _ = writeln!(
        out,
        "<p>Comparison <span class=\"mono\">{}</span>, candidate − production: <span class=\"gate {class}\" id=\"shadow-gate\">{gate}</span></p>",
        escape(&c.id)
    );
    out.push_str("<table class=\"shadow\">\n<tr><th>criterion</th><th>difference</th></tr>\n");
    for line in &c.criteria {
        let _ = writeln!(
            out,
            "<tr><td class=\"mono\">{}</td><td>{}</td></tr>",
            escape(&line.criterion),
            escape(&crate::compare::difference_text(line))
        );
    }
    out.push_str("</table>\n<table class=\"decisions\">\n<tr><th>decision</th><th>verdict</th><th>reason</th></tr>\n");
    for d in &c.decisions {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&d.name),
            escape(d.verdict.as_str()),
            escape(&d.reason)
        );
    }
    out.push_str("</table>\n</section>\n");
    out
}

/// The self-contained HTML page of a monitor report (`oloproof report mon_… -o monitor.html`).
pub fn monitor_html(id: &str, created_ms: Option<i64>, r: &MonitorReport) -> String {
    page(
        &format!("Oloproof monitor {id}"),
        &monitor_body(id, created_ms, r),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn aggregate(criterion: &str, value: Option<f64>, interval: Option<[f64; 2]>) -> Value {
        json!({
            "summary": {"criterion": criterion, "kind": "mean", "value": value,
                        "interval": interval, "interval_method": "percentile_bootstrap",
                        "passed": null, "observed": 12, "missing": 1, "excluded": 0},
            "targeted": 3,
            "p10": {"value": 0.2, "interval": null, "no_interval": "too few"},
        })
    }

    /// A tiny hand-made report: two windows (the first outside the horizon), one hostile
    /// segment, an SLO not demonstrated and a fired alert after a quiet one.
    fn report() -> MonitorReport {
        let segment = "intent=<script>window.__xss=1</script>";
        let window = |start: &str, end: &str, in_horizon: bool, agg: Value| {
            json!({
                "start": start, "end": end, "in_horizon": in_horizon,
                "segments": [{"segment": segment, "traces": 20, "errors": 1, "criteria": [agg]}],
                "feedback": {"thumbs_up": 2, "thumbs_down": 1, "down_reasons": {"<b>wrong</b>": 1},
                             "regenerated": 0, "copied": 3, "follow_up": 0, "other": {}},
                "changes": {"code": [], "model": [], "config": [], "code_changed": false,
                            "model_changed": false, "config_changed": false},
            })
        };
        let changes = json!({"code": ["service.version=1.1"], "model": [], "config": [],
                             "code_changed": true, "model_changed": false, "config_changed": false});
        serde_json::from_value(json!({
            "schema_version": 1,
            "traffic": {"path": "traffic.jsonl", "sha256": "ab", "records": 41, "timed": 40,
                        "untimed": 1, "untimed_examples": [{"id": "x", "reason": "no production.timestamp"}],
                        "skipped_rows": 0},
            "window": {"size": "1d", "rolling": "1d", "horizon_windows": 1,
                       "horizon_start": "2026-11-29T00:00:00Z", "horizon_end": "2026-11-30T00:00:00Z"},
            "segments": ["metadata.intent"],
            "sampling": {"seed": 7, "target_judgments": 20, "always": ["errors"], "tiers": [
                {"tier": 0, "evaluators": ["grounding"], "rate": "auto", "takes_flagged": false,
                 "run_id": "run_TIER0", "selected": 30, "by_reason": {}, "judgments_cached": 0,
                 "judgments_fresh": 30, "flagged": 0, "selection": []}]},
            "windows": [
                window("2026-11-28T00:00:00Z", "2026-11-29T00:00:00Z", false,
                       aggregate("grounding", Some(0.9), Some([0.8, 0.95]))),
                window("2026-11-29T00:00:00Z", "2026-11-30T00:00:00Z", true,
                       aggregate("grounding", Some(0.6), None)),
            ],
            "slos": [{"criterion": "grounding", "segment": segment, "score_above": 0.5,
                      "min_share": 0.8, "confidence": 0.95,
                      "decision": {"state": "not_demonstrated", "share": 0.9, "lower_bound": 0.7,
                                   "upper_bound": 0.97, "good": 9, "n": 10, "allowed_failures": 2,
                                   "failures": 1, "budget_left": 1}}],
            "alerts": [
                {"type": "cost_per_request", "subject": "cost", "segment": segment, "fired": false,
                 "status": "ok", "why": "cheap enough", "n": 20, "value": 0.001,
                 "interval": [0.0009, 0.0011], "changes": changes},
                {"type": "latency_p95", "subject": "total", "segment": segment, "fired": true,
                 "status": "fired", "why": "p95 3400 ms <above> 1500 ms", "n": 20, "value": 3400.0,
                 "interval": [3200.0, 3600.0], "changes": changes},
            ],
            "errors": {"errors": 1, "traces": 20, "max_error_rate": 0.1},
            "incomplete": [],
        }))
        .unwrap()
    }

    #[test]
    fn the_page_escapes_segments_and_puts_fired_alerts_first() {
        let r = report();
        let html = monitor_html("mon_1", Some(0), &r);
        assert!(
            !html.contains("<script"),
            "a segment's markup reached the page"
        );
        assert!(html.contains("intent=&lt;script&gt;window.__xss=1&lt;/script&gt;"));
        assert!(html.contains("&quot;&lt;b&gt;wrong&lt;/b&gt;&quot; 1"));
        let fired = html.find("data-status=\"fired\"").unwrap();
        let ok = html.find("data-status=\"ok\"").unwrap();
        assert!(fired < ok, "the fired alert is listed first");
        assert!(html.contains("p95 3400 ms &lt;above&gt; 1500 ms"));
        assert!(html.contains("code changed (service.version=1.1)"));
        // The SLO row with its state, bound and budget.
        assert!(html.contains("data-state=\"not_demonstrated\""));
        assert!(html.contains(">not demonstrated</td>"));
        assert!(html.contains("70.0%") && html.contains("2 failures allowed, 1 seen, 1 left"));
        // The series: one band (only the first window has an interval), two points, the first
        // dimmed; the table keeps the no-interval window.
        assert_eq!(html.matches("<path class=\"band\"").count(), 1);
        assert_eq!(html.matches("series-point").count(), 2);
        assert_eq!(html.matches("series-point dim").count(), 1);
        assert!(html.contains("12 observed · 1 missing · 0 excluded"));
        assert!(html.contains("0.200 (no interval)"));
        assert!(html.contains("run_TIER0") && html.contains("1 untimed"));
        assert!(html.contains("<span class=\"gate block\" id=\"monitor-status\">BREACH</span>"));
    }

    #[test]
    fn every_series_has_its_section() {
        let r = report();
        let keys = series_keys(&r);
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].0, "grounding");
        let aggs = series_of(&r, "grounding", &keys[0].1);
        assert_eq!(series_domain(SummaryKind::Mean, &aggs), [0.0, 1.0]);
        assert_eq!(window_label("2026-11-28T06:30:00Z"), "11-28 06:30");
    }
}
