//! The self-contained HTML report of a run, a comparison or a diagnosis (`oloproof report ID
//! -o report.html`): one file with inline CSS and inline SVG, no script, no external fetch.
//!
//! Everything a run stores came from a system or a model, so every value goes through
//! [`escape`] (`&`, `<`, `>`, `"`, `'`); the page carries no event handler and no URL, and a
//! Content-Security-Policy `<meta>` forbids scripts and fetches should anything slip through.
//!
//! ```
//! use oloproof_report::html::escape;
//! assert_eq!(escape("<img src=x onerror='a'>"), "&lt;img src=x onerror=&#39;a&#39;&gt;");
//! ```

use std::collections::HashSet;
use std::fmt::Write as _;

use oloproof_core::case::Case;
use oloproof_core::comparison::{
    CaseChange, ChangeDirection, Comparison, DecisionKind, DecisionVerdict, Gate,
    PairwiseComparison, PairwiseOutcome,
};
use oloproof_core::context::DropReason;
use oloproof_core::diagnosis::Diagnosis;
use oloproof_core::run::LoadedRun;
use oloproof_core::summary::{CriterionSummary, RunSummary};
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use serde_json::Value;

use crate::compare::{difference_text, format_points};
use crate::svg::{bar_chart, interval_chart, quarter_ticks, Axis, Bar, IntervalRow, RefLine};
use crate::{counts_cell, format_utc, interval_cell, value_cell};

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The report's stylesheet (the viewer serves it as a file and adds its own rules after it).
pub const STYLE: &str = "
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#1d2127;margin:0;background:#f6f7f9}
main{max-width:1180px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 8px}h2{font-size:18px;margin:28px 0 10px;border-bottom:1px solid #d5d9e0;padding-bottom:4px}
h3{font-size:15px;margin:0 0 8px}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:0}
dl.meta dt{color:#5b6472}dl.meta dd{margin:0;font-family:ui-monospace,monospace}
table{border-collapse:collapse;background:#fff;margin:8px 0}
th,td{border:1px solid #d5d9e0;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef0f4}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.chart{background:#fff;border:1px solid #d5d9e0;max-width:100%;height:auto;font-size:12px}
.chart .axis{stroke:#5b6472}.chart .grid{stroke:#e6e8ec}.chart .tick,.chart .reflabel{fill:#5b6472}
.chart .whisker{stroke:#1d2127;stroke-width:1.5}
.chart .point{fill:#2f6fde}.chart .point.pass{fill:#1f9d55}.chart .point.fail{fill:#d1343a}.chart .point.warn{fill:#d88a00}
.chart .ref{stroke-width:1.5}.chart .ref.zero{stroke:#5b6472}.chart .ref.margin{stroke:#d1343a;stroke-dasharray:5 3}
.chart .bar{fill:#2f6fde}.chart .note{fill:#1d2127}
.chart .band{fill:#2f6fde;fill-opacity:.18;stroke:none}.chart .series-line{fill:none;stroke:#2f6fde;stroke-width:1.5}
.chart .outside{fill:#eef0f4}.chart .dim{opacity:.45}
.series-body{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}
table.alerts td.why{max-width:460px}
.small{color:#b45309;font-weight:600}
.gate{font-size:18px;font-weight:700;padding:8px 12px;display:inline-block;border-radius:4px}
.gate.pass,.v-pass{color:#1f7a44}.gate.block,.v-fail{color:#b4232a}.v-insufficient{color:#b45309}
.gate.pass{background:#e3f5ea}.gate.block{background:#fbe5e6}
section.case{background:#fff;border:1px solid #d5d9e0;border-radius:4px;padding:12px 16px;margin:12px 0}
pre{white-space:pre-wrap;word-break:break-word;background:#f3f4f7;padding:6px 8px;margin:4px 0;font-size:13px}
ol.candidates{padding-left:0;list-style:none;margin:4px 0}
ol.candidates li{padding:3px 0;border-bottom:1px dashed #e6e8ec}
ol.candidates .pos{display:inline-block;width:2.5em;color:#5b6472}
ol.candidates .relevant{color:#1f7a44;font-weight:600}
ol.candidates del{color:#8a919c}
ol.candidates .why{color:#b4232a;font-size:12px;margin-left:6px}
ol.candidates .text{color:#5b6472;font-size:12px;margin-left:2.5em}
.muted{color:#5b6472}.small-text{font-size:12px}
.flow{border-left:3px solid #2f6fde;padding:4px 0 4px 10px;margin:8px 0}
.flow-line{margin:4px 0 8px}.flow-stage{font-family:ui-monospace,monospace;background:#eef0f4;padding:1px 6px;border-radius:3px}
.flow .arrow{color:#5b6472}
.flow .stages{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:8px}
.flow .stage{background:#fafbfc;border:1px solid #e6e8ec;border-radius:4px;padding:6px 8px}
.flow h4{font-size:13px;margin:0 0 4px}.flow .fact{font-weight:400;color:#5b6472;font-size:12px;margin-left:4px}
.flow .note{font-size:12px;font-family:ui-monospace,monospace;word-break:break-word}
.flow .lanepos{color:#5b6472;font-size:12px}
.move.up{color:#1f7a44;font-weight:600}.move.down{color:#b4232a;font-weight:600}.move.same{color:#5b6472}
.stage-latency{margin-top:8px}
";

/// The document shell around `body`.
pub(crate) fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n{body}</main>\n</body>\n</html>\n",
        escape(title)
    )
}

/// A `<dl class="meta">` of escaped `(key, value)` rows.
pub fn meta_list(rows: &[(&str, String)]) -> String {
    let mut out = String::from("<dl class=\"meta\">\n");
    for (k, v) in rows {
        let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(v));
    }
    out.push_str("</dl>\n");
    out
}

/// A table of escaped text cells under escaped headers.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::from("<table>\n<tr>");
    for h in header {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr>\n");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{}</td>", escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// `3 decimals` without a sign of zero.
fn fixed3(x: f64) -> String {
    let s = format!("{x:.3}");
    if s == "-0.000" {
        "0.000".into()
    } else {
        s
    }
}

/// The axis of the criterion chart: [0, 1] unless a value lies outside.
fn criterion_axis(rows: &[&CriterionSummary]) -> Axis {
    let mut lo = 0.0f64;
    let mut hi = 1.0f64;
    for c in rows {
        for v in c.value.into_iter().chain(c.interval.into_iter().flatten()) {
            if v.is_finite() {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    Axis {
        domain: [lo, hi],
        ticks: quarter_ticks(lo, hi, |v| {
            let s = format!("{v:.2}");
            if s == "-0.00" {
                "0.00".into()
            } else {
                s
            }
        }),
    }
}

fn criterion_row(label: String, c: &CriterionSummary) -> IntervalRow {
    IntervalRow {
        label,
        value: c.value,
        interval: c.interval,
        note: format!("{} {}", value_cell(c), interval_cell(c)),
        class: String::new(),
    }
}

/// The chart of per-criterion values with their 95 % interval whiskers.
pub fn criteria_chart(summary: &RunSummary) -> String {
    let refs: Vec<&CriterionSummary> = summary.criteria.iter().collect();
    let rows: Vec<IntervalRow> = summary
        .criteria
        .iter()
        .map(|c| criterion_row(c.criterion.clone(), c))
        .collect();
    interval_chart(
        "per-criterion values with 95% intervals",
        &rows,
        &criterion_axis(&refs),
        &[],
    )
}

fn criteria_section(summary: &RunSummary) -> String {
    let mut out = String::from("<h2>Criteria</h2>\n");
    out.push_str(&criteria_chart(summary));
    let rows: Vec<Vec<String>> = summary
        .criteria
        .iter()
        .map(|c| {
            vec![
                c.criterion.clone(),
                value_cell(c),
                interval_cell(c),
                counts_cell(c),
            ]
        })
        .collect();
    out.push_str(&table(
        &["criterion", "value", "95% interval", "counts"],
        &rows,
    ));
    out
}

/// The slices: a chart of the first criterion by slice value, and the table of every slice
/// and criterion with its support (small slices marked). Empty without slices.
pub fn slices_section(summary: &RunSummary) -> String {
    if summary.slices.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<h2>Slices</h2>\n<p class=\"muted\">Exploratory; <span class=\"small\">⚠ small</span> marks fewer than {} cases.</p>\n",
        summary.min_slice_support
    );
    if let Some(first) = summary.criteria.first() {
        let picked: Vec<(String, &CriterionSummary, bool)> = summary
            .slices
            .iter()
            .filter_map(|s| {
                s.criteria
                    .iter()
                    .find(|c| c.criterion == first.criterion)
                    .map(|c| {
                        (
                            format!("{} = {} (n={})", s.key, s.value, s.support),
                            c,
                            s.below_min_support,
                        )
                    })
            })
            .collect();
        let refs: Vec<&CriterionSummary> = picked.iter().map(|(_, c, _)| *c).collect();
        let rows: Vec<IntervalRow> = picked
            .iter()
            .map(|(label, c, small)| {
                let mut row = criterion_row(label.clone(), c);
                if *small {
                    row.note.push_str(" ⚠ small");
                    row.class = "warn".into();
                }
                row
            })
            .collect();
        let _ = writeln!(out, "<h3>{} by slice</h3>", escape(&first.criterion));
        out.push_str(&interval_chart(
            "per-slice values with 95% intervals",
            &rows,
            &criterion_axis(&refs),
            &[],
        ));
    }
    let mut rows = Vec::new();
    for s in &summary.slices {
        let support = if s.below_min_support {
            format!("{} ⚠ small", s.support)
        } else {
            s.support.to_string()
        };
        for c in &s.criteria {
            rows.push(vec![
                format!("{} = {}", s.key, s.value),
                support.clone(),
                c.criterion.clone(),
                value_cell(c),
                interval_cell(c),
                counts_cell(c),
            ]);
        }
    }
    out.push_str(&table(
        &[
            "slice",
            "support",
            "criterion",
            "value",
            "95% interval",
            "counts",
        ],
        &rows,
    ));
    out
}

/// Stage latency p50/p95/p99 as bars and a table. Empty when no stage was timed. A pipeline's
/// stages (a run that timed `rewrite`, `fuse` or `rerank`) are listed in pipeline order
/// (`oloproof_core::trace::LATENCY_STAGES`); a two-stage run's in name order, as always.
pub fn latency_section(summary: &RunSummary) -> String {
    if summary.latency_ms.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h2>Stage latency</h2>\n");
    let mut bars = Vec::new();
    let mut rows = Vec::new();
    let mut stages: Vec<(&String, &oloproof_core::summary::Percentiles)> =
        summary.latency_ms.iter().collect();
    let pipeline = ["rewrite", "fuse", "rerank"]
        .iter()
        .any(|s| summary.latency_ms.contains_key(*s));
    if pipeline {
        let rank = |s: &str| {
            oloproof_core::trace::LATENCY_STAGES
                .iter()
                .position(|x| *x == s)
                .unwrap_or(usize::MAX)
        };
        stages.sort_by_key(|(s, _)| rank(s));
    }
    for (stage, p) in stages {
        for (name, v) in [("p50", p.p50), ("p95", p.p95), ("p99", p.p99)] {
            bars.push(Bar {
                label: format!("{stage} {name}"),
                value: v,
                note: format!("{} ms", fixed3(v)),
            });
        }
        rows.push(vec![
            stage.clone(),
            p.n.to_string(),
            fixed3(p.p50),
            fixed3(p.p95),
            fixed3(p.p99),
        ]);
    }
    out.push_str(&bar_chart(&bars));
    out.push_str(&table(
        &["stage", "calls", "p50 ms", "p95 ms", "p99 ms"],
        &rows,
    ));
    out
}

fn settings_rows(run: &LoadedRun) -> Vec<(&'static str, String)> {
    let s = &run.settings.system;
    let mut rows = vec![
        ("depth", s.depth.to_string()),
        ("top_k", s.top_k.to_string()),
        (
            "token_budget",
            s.token_budget
                .map(|t| t.to_string())
                .unwrap_or_else(|| "none".into()),
        ),
        (
            "index_version",
            s.index_version.clone().unwrap_or_else(|| "none".into()),
        ),
    ];
    if !s.params.is_empty() {
        rows.push(("params", Value::Object(s.params.clone()).to_string()));
    }
    rows.push((
        "criteria",
        run.criteria
            .iter()
            .map(|(c, _)| c.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    ));
    if let Some(i) = &run.settings.intervention {
        rows.push((
            "intervention",
            serde_json::to_value(i)
                .map(|v| v.to_string())
                .unwrap_or_default(),
        ));
    }
    rows
}

/// Whether a verdict counts as failing (fail or missing).
pub fn failing(v: &CriterionVerdict) -> bool {
    matches!(v.verdict, Verdict::Fail | Verdict::Missing { .. })
}

/// The cases of a run with any failing or missing verdict, in run order.
pub fn failing_cases(run: &LoadedRun) -> Vec<&(Case, Option<Trace>, Vec<CriterionVerdict>)> {
    run.cases
        .iter()
        .filter(|(_, trace, vs)| {
            vs.iter().any(failing) || trace.as_ref().is_some_and(|t| t.error.is_some())
        })
        .collect()
}

/// The HTML report of one run.
pub fn run_html(run: &LoadedRun, summary: &RunSummary) -> String {
    let mut body = format!("<h1>Oloproof run report</h1>\n{}", run_header(run, summary));
    body.push_str(&criteria_section(summary));
    body.push_str(&external_scores_section(summary));
    body.push_str(&slices_section(summary));
    body.push_str(&latency_section(summary));
    let failing = failing_cases(run);
    let _ = writeln!(
        body,
        "<h2>Failing cases ({} of {})</h2>",
        failing.len(),
        run.cases.len()
    );
    if failing.is_empty() {
        body.push_str("<p>No case failed or is missing a verdict.</p>\n");
    }
    for (case, trace, verdicts) in failing {
        body.push_str(&case_html(case, trace.as_ref(), verdicts, ""));
    }
    page(&format!("Oloproof report {}", run.record.id), &body)
}

/// The dataset's external scores (Ragas' columns) beside ours, as in
/// [`crate::external_scores_table`]; empty without any.
pub fn external_scores_section(summary: &RunSummary) -> String {
    if summary.external_scores.is_empty() {
        return String::new();
    }
    let f = |x: Option<f64>| x.map_or_else(|| "—".to_string(), |v| format!("{v:.3}"));
    let mut out = String::from(
        "<h2>External scores (recorded in the dataset) beside ours</h2>\n<table>\n<tr><th>column</th><th>our criterion</th><th>theirs (mean)</th><th>pairs</th><th>Spearman ρ</th><th>mean |Δ|</th><th>one side only</th></tr>\n",
    );
    for e in &summary.external_scores {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{} ({} / {} cases)</td><td>{}</td><td>{}</td><td>{}</td><td>{} ours · {} theirs</td></tr>",
            escape(&e.column),
            escape(e.criterion.as_deref().unwrap_or("— (no evaluator)")),
            f(e.mean),
            e.defined,
            e.cases,
            e.pairs,
            f(e.spearman),
            f(e.mean_abs_diff),
            e.ours_only,
            e.theirs_only
        );
    }
    out.push_str("</table>\n");
    out
}

/// The run's identity and settings as a `<dl>`: system, status, cases, depth, top_k, budget,
/// criteria, bootstrap and judge use.
pub fn run_header(run: &LoadedRun, summary: &RunSummary) -> String {
    let mut rows: Vec<(&str, String)> = vec![
        ("run", run.record.id.clone()),
        ("system", format!("{} {}", summary.system, summary.version)),
        ("status", run.record.status.to_string()),
        ("created (UTC)", format_utc(run.record.created_ms)),
        (
            "cases",
            format!(
                "{} of {} done · {} errors",
                summary.done, summary.cases, summary.errors
            ),
        ),
    ];
    rows.extend(settings_rows(run));
    rows.push((
        "bootstrap",
        format!(
            "seed {} · {} resamples",
            summary.bootstrap_seed, summary.bootstrap_resamples
        ),
    ));
    if let Some(j) = &summary.judges {
        rows.push((
            "judges",
            crate::judges_line(j)
                .trim_start_matches("Judges: ")
                .to_string(),
        ));
    }
    meta_list(&rows)
}

/// The CSS class of a verdict: `v-pass`, `v-fail` (fail or missing) or `muted`.
pub fn verdict_class(v: &Verdict) -> &'static str {
    match v {
        Verdict::Pass => "v-pass",
        Verdict::Fail | Verdict::Missing { .. } => "v-fail",
        _ => "muted",
    }
}

/// A verdict as text (`pass`, `fail`, `score 0.812`, `missing: …`, `excluded: …`), with the
/// best relevant position or the uncited ids when the detail has them. Not escaped.
pub fn verdict_text(v: &CriterionVerdict) -> String {
    let mut s = match &v.verdict {
        Verdict::Pass => "pass".to_string(),
        Verdict::Fail => "fail".to_string(),
        Verdict::Score { value } => format!("score {}", fixed3(*value)),
        Verdict::Missing { error } => format!("missing: {error}"),
        Verdict::Excluded { reason } => format!("excluded: {reason}"),
    };
    if let Some(p) = v.detail.get("best_relevant_position") {
        let _ = write!(
            s,
            " (best relevant position {})",
            p.as_u64()
                .map(|n| n.to_string())
                .unwrap_or_else(|| "none".into())
        );
    }
    if let Some(Value::Array(bad)) = v.detail.get("invalid") {
        if !bad.is_empty() {
            let ids: Vec<&str> = bad.iter().map(|b| b.as_str().unwrap_or("?")).collect();
            let _ = write!(s, " (not in context: {})", ids.join(", "));
        }
    }
    s
}

/// One case's trace: input, candidates (dropped ones struck through with the reason), context,
/// answer, citations, verdicts and judge calls. `extra` is inserted (already HTML) under the title.
pub fn case_html(
    case: &Case,
    trace: Option<&Trace>,
    verdicts: &[CriterionVerdict],
    extra: &str,
) -> String {
    let mut out = format!(
        "<section class=\"case\" id=\"case-{}\">\n<h3>Case {}</h3>\n{extra}",
        escape(&case.id),
        escape(&case.id)
    );
    let _ = writeln!(
        out,
        "<div><b>Input</b><pre>{}</pre></div>",
        escape(&pretty(&Value::Object(case.input.clone())))
    );
    if let Some(a) = &case.expected.answer {
        let text = a
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| a.to_string());
        let _ = writeln!(
            out,
            "<div><b>Expected answer</b><pre>{}</pre></div>",
            escape(&text)
        );
    }
    let Some(trace) = trace else {
        out.push_str("<p class=\"muted\">Not run yet (pending).</p>\n</section>\n");
        return out;
    };
    let relevant: HashSet<&str> = case
        .expected
        .relevant
        .iter()
        .flatten()
        .filter(|r| r.grade >= 1.0)
        .map(|r| r.doc_id.as_str())
        .collect();
    out.push_str(&crate::pipeline::flow_html(case, trace));
    if let Some(r) = &trace.retrieval {
        let _ = writeln!(
            out,
            "<div><b>Retrieved candidates</b> <span class=\"muted\">{} at depth {}{}</span>",
            r.candidates.len(),
            r.depth,
            r.query
                .as_deref()
                .map(|q| format!(" · query {}", escape(q)))
                .unwrap_or_default()
        );
        out.push_str("<ol class=\"candidates\">\n");
        let ctx = trace.context.as_ref();
        for (i, c) in r.candidates.iter().enumerate() {
            let pos = i + 1;
            let in_context =
                ctx.and_then(|ctx| ctx.passages.iter().find(|p| p.position == Some(pos)));
            let dropped = match (ctx, in_context) {
                (Some(ctx), None) => Some(match ctx.dropped.iter().find(|d| d.position == pos) {
                    Some(d) if d.reason == DropReason::TokenBudget => format!(
                        "dropped: token budget{}",
                        d.tokens
                            .map(|t| format!(", {t} tokens"))
                            .unwrap_or_default()
                    ),
                    _ => "dropped: below top_k".to_string(),
                }),
                _ => None,
            };
            let id = match &c.chunk_id {
                Some(ch) => format!("{} [{ch}]", c.doc_id),
                None => c.doc_id.clone(),
            };
            let score = c
                .score
                .map(|s| format!(" score {}", fixed3(s)))
                .unwrap_or_default();
            let mark = if relevant.contains(c.doc_id.as_str()) {
                " <span class=\"relevant\">★ relevant</span>"
            } else {
                ""
            };
            let status = match (&dropped, in_context) {
                (Some(why), _) => format!("<span class=\"why\">{}</span>", escape(why)),
                (None, Some(p)) => format!(
                    "<span class=\"muted\"> · in context{}</span>",
                    p.tokens
                        .map(|t| format!(", {t} tokens"))
                        .unwrap_or_default()
                ),
                (None, None) => String::new(),
            };
            let body = format!("{}{}", escape(&id), escape(&score));
            let body = if dropped.is_some() {
                format!("<del>{body}</del>")
            } else {
                body
            };
            let _ = write!(
                out,
                "<li><span class=\"pos\">{pos}.</span>{body}{mark}{status}"
            );
            if let Some(text) = &c.text {
                let text = escape(text);
                let text = if dropped.is_some() {
                    format!("<del>{text}</del>")
                } else {
                    text
                };
                let _ = write!(out, "<div class=\"text\">{text}</div>");
            }
            out.push_str("</li>\n");
        }
        out.push_str("</ol>\n</div>\n");
    }
    if let Some(ctx) = &trace.context {
        let _ = writeln!(
            out,
            "<div><b>Context</b> <span class=\"muted\">{} passage{}{}{}</span>",
            ctx.passages.len(),
            if ctx.passages.len() == 1 { "" } else { "s" },
            ctx.tokens_used
                .map(|t| format!(", {t} tokens"))
                .unwrap_or_default(),
            if ctx.truncated {
                ", truncated by the token budget"
            } else {
                ""
            }
        );
        for p in &ctx.passages {
            let _ = writeln!(
                out,
                "<pre>{}{}: {}</pre>",
                p.position.map(|n| format!("#{n} ")).unwrap_or_default(),
                escape(&p.passage.doc_id),
                escape(p.passage.text.as_deref().unwrap_or(""))
            );
        }
        out.push_str("</div>\n");
    }
    if trace.generation.is_some() {
        let answer = trace
            .answer()
            .map(escape)
            .unwrap_or_else(|| "(no answer field)".into());
        let _ = writeln!(out, "<div><b>Answer</b><pre>{answer}</pre></div>");
        let cites = trace.citations();
        let _ = writeln!(
            out,
            "<div><b>Citations</b> {}</div>",
            if cites.is_empty() {
                "none".to_string()
            } else {
                escape(&cites.join(", "))
            }
        );
    }
    if let Some(e) = &trace.error {
        let _ = writeln!(
            out,
            "<div><b>Error</b><pre>{}{}</pre></div>",
            escape(&e.summary()),
            e.traceback
                .as_deref()
                .map(|t| format!("\n{}", escape(t)))
                .unwrap_or_default()
        );
    }
    out.push_str("<table>\n<tr><th>criterion</th><th>verdict</th></tr>\n");
    for v in verdicts {
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"{}\">{}",
            escape(&v.criterion),
            verdict_class(&v.verdict),
            escape(&verdict_text(v))
        );
        if let Some(Value::Array(calls)) = v.detail.get("calls") {
            for c in calls {
                let template = c.get("template").and_then(Value::as_str).unwrap_or("?");
                let _ = write!(
                    out,
                    "<details><summary>judge call {}</summary>",
                    escape(template)
                );
                if let Some(raw) = c.get("raw").and_then(Value::as_str) {
                    let _ = write!(out, "<pre>raw: {}</pre>", escape(raw));
                }
                if let Some(parsed) = c.get("parsed") {
                    let _ = write!(out, "<pre>parsed: {}</pre>", escape(&parsed.to_string()));
                }
                out.push_str("</details>");
            }
        }
        out.push_str("</td></tr>\n");
    }
    out.push_str("</table>\n");
    out.push_str(&crate::claims::claims_html(verdicts));
    out.push_str("</section>\n");
    out
}

fn verdict_css(v: DecisionVerdict) -> &'static str {
    match v {
        DecisionVerdict::Pass => "pass",
        DecisionVerdict::Fail => "fail",
        DecisionVerdict::InsufficientEvidence => "warn",
    }
}

/// Ticks every quarter of a symmetric points axis, `+10`-style.
fn points_axis(c: &Comparison) -> Axis {
    let mut m = 10.0f64;
    for line in &c.criteria {
        for v in line
            .estimate_points
            .into_iter()
            .chain(line.interval_points.into_iter().flatten())
        {
            if v.is_finite() {
                m = m.max(v.abs());
            }
        }
    }
    for d in &c.decisions {
        if let Some(margin) = d.margin_points.filter(|m| m.is_finite()) {
            m = m.max(margin.abs());
        }
    }
    let m = (m / 10.0).ceil() * 10.0;
    Axis {
        domain: [-m, m],
        ticks: quarter_ticks(-m, m, format_points),
    }
}

/// The HTML report of a comparison: forest plot with the margins, decisions, gate, then the
/// changed cases (regressions first) with the candidate's traces when `candidate` is given.
pub fn comparison_html(c: &Comparison, candidate: Option<&LoadedRun>) -> String {
    let mut body = String::from("<h1>Oloproof comparison report</h1>\n");
    body.push_str(&comparison_overview(c, candidate));
    body.push_str(&comparison_slices(c));
    let _ = writeln!(
        body,
        "<h2>Changed cases ({} of {})</h2>",
        c.changes.len(),
        c.cases.shared
    );
    if c.changes.is_empty() {
        body.push_str("<p>No verdict changed on any shared case.</p>\n");
    }
    for ch in changes_regressions_first(c) {
        let extra = format!(
            "<p><b>{}</b>: {}</p>\n",
            escape(direction_text(ch.direction)),
            escape(&change_list(ch))
        );
        match candidate.and_then(|r| r.cases.iter().find(|(case, _, _)| case.id == ch.case_id)) {
            Some((case, trace, verdicts)) => {
                body.push_str(&case_html(case, trace.as_ref(), verdicts, &extra));
            }
            None => {
                let _ = writeln!(
                    body,
                    "<section class=\"case\"><h3>Case {}</h3>\n{extra}</section>",
                    escape(&ch.case_id)
                );
            }
        }
    }
    page(&format!("Oloproof comparison {}", c.id), &body)
}

/// The changed cases of a comparison, regressions first (stable within a direction).
pub fn changes_regressions_first(c: &Comparison) -> Vec<&CaseChange> {
    let mut ordered: Vec<&CaseChange> = c.changes.iter().collect();
    ordered.sort_by_key(|ch| ch.direction);
    ordered
}

/// `regression`, `missing or excluded in one run` or `improvement`.
pub fn direction_text(direction: ChangeDirection) -> &'static str {
    match direction {
        ChangeDirection::Regression => "regression",
        ChangeDirection::Other => "missing or excluded in one run",
        ChangeDirection::Improvement => "improvement",
    }
}

/// A case's verdict changes as `criterion baseline → candidate, …`. Not escaped.
pub fn change_list(ch: &CaseChange) -> String {
    ch.changes
        .iter()
        .map(|v| format!("{} {} → {}", v.criterion, v.baseline, v.candidate))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Everything of a comparison but its slices and cases: identity and settings, notes, the gate,
/// the forest plot of paired differences with the policy margins, and the decisions.
pub fn comparison_overview(c: &Comparison, candidate: Option<&LoadedRun>) -> String {
    let mut body = String::new();
    let changed_settings: Vec<String> = c
        .setting_differences
        .iter()
        .map(|d| format!("{}: {} → {}", d.path, d.baseline, d.candidate))
        .collect();
    let mut rows: Vec<(&str, String)> = vec![
        ("comparison", c.id.clone()),
        ("candidate", c.candidate.clone()),
        ("baseline", c.baseline.clone()),
        ("shared cases", c.cases.shared.to_string()),
        ("confidence", format!("{:.0}%", c.confidence * 100.0)),
        (
            "bootstrap",
            format!(
                "seed {} · {} resamples",
                c.bootstrap.seed, c.bootstrap.resamples
            ),
        ),
    ];
    if let Some(run) = candidate {
        rows.push((
            "system",
            format!(
                "{} {}",
                run.settings.system.name, run.settings.system.version
            ),
        ));
    }
    if !changed_settings.is_empty() {
        rows.push((
            "settings (baseline → candidate)",
            changed_settings.join("; "),
        ));
    }
    body.push_str(&meta_list(&rows));
    let notes = crate::compare::comparison_notes(c);
    if !notes.is_empty() {
        let _ = writeln!(body, "<pre>{}</pre>", escape(&notes));
    }
    let _ = writeln!(
        body,
        "<p class=\"gate {}\">Gate: {}</p>",
        if c.gate == Gate::Pass {
            "pass"
        } else {
            "block"
        },
        escape(&crate::compare::gate_text(c))
    );
    body.push_str("<h2>Paired differences (candidate − baseline, points)</h2>\n");
    let axis = points_axis(c);
    let mut refs = vec![RefLine {
        x: 0.0,
        label: String::new(),
        class: "zero".into(),
    }];
    let mut seen_margins: Vec<String> = Vec::new();
    for d in &c.decisions {
        if let (DecisionKind::NonInferiority, Some(m)) = (d.kind, d.margin_points) {
            let key = format_points(-m);
            if !seen_margins.contains(&key) {
                refs.push(RefLine {
                    x: -m,
                    label: format!("margin {key}"),
                    class: "margin".into(),
                });
                seen_margins.push(key);
            }
        }
    }
    let forest: Vec<IntervalRow> = c
        .criteria
        .iter()
        // Ratio lines (latency, cost) are not points: they are in the table below.
        .filter(|line| {
            line.method != Some(oloproof_core::comparison::DifferenceMethod::PairedBootstrapRatio)
        })
        .map(|line| {
            let decisions: Vec<&oloproof_core::comparison::DecisionResult> = c
                .decisions
                .iter()
                .filter(|d| d.criteria.len() == 1 && d.criteria[0] == line.criterion)
                .collect();
            let mut note = match line.estimate_points {
                Some(e) => format_points(e),
                None => "no pairs".into(),
            };
            if let Some([lo, hi]) = line.interval_points {
                let _ = write!(note, " [{}, {}]", format_points(lo), format_points(hi));
            }
            for d in &decisions {
                let _ = write!(note, " · {} {}", d.name, d.verdict.as_str());
            }
            IntervalRow {
                label: line.criterion.clone(),
                value: line.estimate_points,
                interval: line.interval_points,
                note,
                class: decisions
                    .iter()
                    .map(|d| verdict_css(d.verdict))
                    .max_by_key(|c| match *c {
                        "fail" => 2,
                        "warn" => 1,
                        _ => 0,
                    })
                    .unwrap_or("")
                    .to_string(),
            }
        })
        .collect();
    body.push_str(&interval_chart(
        "forest plot of paired differences with policy margins",
        &forest,
        &axis,
        &refs,
    ));
    let rows: Vec<Vec<String>> = c
        .criteria
        .iter()
        .map(|l| vec![l.criterion.clone(), difference_text(l)])
        .collect();
    body.push_str(&table(&["criterion", "difference"], &rows));
    body.push_str(&stage_deltas_section(c));
    body.push_str("<h2>Decisions</h2>\n<table>\n<tr><th>decision</th><th>criterion</th><th>test</th><th>verdict</th><th>reason</th></tr>\n");
    for d in &c.decisions {
        let test = match d.kind {
            DecisionKind::NonInferiority => format!(
                "non-inferiority, margin {} points",
                d.margin_points
                    .map(|m| format!("{m:.1}"))
                    .unwrap_or_default()
            ),
            DecisionKind::Superiority => "superiority".into(),
            DecisionKind::NoRegression => format!("no regression on {}", d.cases.join(", ")),
            DecisionKind::PairwisePreference => crate::compare::pairwise_test(d),
            DecisionKind::Guardrail => crate::compare::guardrail_test(d),
        };
        let reason = if d.detail.is_empty() {
            d.reason.clone()
        } else {
            format!("{} ({})", d.reason, d.detail.join("; "))
        };
        let class = match d.verdict {
            DecisionVerdict::Pass => "v-pass",
            DecisionVerdict::Fail => "v-fail",
            DecisionVerdict::InsufficientEvidence => "v-insufficient",
        };
        let _ = writeln!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"{class}\">{}</td><td>{}</td></tr>",
            escape(&d.name),
            escape(&d.criteria.join(", ")),
            escape(&test),
            d.verdict.as_str(),
            escape(&reason)
        );
    }
    body.push_str("</table>\n");
    if let Some(p) = &c.pairwise {
        body.push_str(&pairwise_section(p));
    }
    body
}

/// A comparison's per-stage deltas (latency p50/p95 per stage, recall@k per ranking stage,
/// baseline → candidate), as tables under `<section id="stage-deltas">`; empty unless both
/// runs recorded pipelines.
pub fn stage_deltas_section(c: &Comparison) -> String {
    let Some(st) = &c.stages else {
        return String::new();
    };
    let mut out = format!(
        "<section id=\"stage-deltas\">\n<h2>{}</h2>\n",
        escape(crate::compare::STAGE_DELTAS_HEADING)
    );
    let signed = crate::compare::delta;
    if !st.latency.is_empty() {
        let rows: Vec<Vec<String>> = st
            .latency
            .iter()
            .map(|l| {
                let ([b50, b95], [c50, c95]) = (l.baseline_ms, l.candidate_ms);
                vec![
                    l.stage.clone(),
                    l.paired.to_string(),
                    format!("{b50:.1} → {c50:.1}"),
                    signed(c50 - b50, 1),
                    format!("{b95:.1} → {c95:.1}"),
                    signed(c95 - b95, 1),
                ]
            })
            .collect();
        out.push_str(&table(
            &[
                "stage latency",
                "paired",
                "p50 ms",
                "Δ p50",
                "p95 ms",
                "Δ p95",
            ],
            &rows,
        ));
    }
    if !st.recall.is_empty() {
        let rows: Vec<Vec<String>> = st
            .recall
            .iter()
            .map(|r| {
                vec![
                    format!("recall@{} {}", r.k, r.stage),
                    r.paired.to_string(),
                    format!("{:.3} → {:.3}", r.baseline, r.candidate),
                    signed(r.candidate - r.baseline, 3),
                ]
            })
            .collect();
        out.push_str(&table(&["ranking stage", "paired", "mean", "Δ"], &rows));
    }
    out.push_str("</section>\n");
    out
}

/// The pairwise section of a comparison: the summary lines, then every case (losses, missing,
/// excluded and ties first) with which answer was shown first, what each order preferred and
/// why, and the answers' lengths. Every value is escaped.
pub fn pairwise_section(p: &PairwiseComparison) -> String {
    let mut out = format!(
        "<section id=\"pairwise\">\n<h2>{}</h2>\n<ul class=\"pairwise-summary\">\n",
        escape(&crate::compare::pairwise_heading(p))
    );
    for line in crate::compare::pairwise_summary(p) {
        let class = if line.starts_with("self-preference RISK") {
            " class=\"v-fail\""
        } else {
            ""
        };
        let _ = writeln!(out, "<li{class}>{}</li>", escape(&line));
    }
    out.push_str("</ul>\n<table class=\"pairwise-cases\">\n<tr><th>case</th><th>outcome</th><th>shown first</th><th>first call</th><th>swapped call</th><th>length Δ (characters, words)</th></tr>\n");
    for c in crate::compare::pairwise_cases_ordered(p) {
        let class = match c.outcome {
            PairwiseOutcome::Win => "v-pass",
            PairwiseOutcome::Loss => "v-fail",
            PairwiseOutcome::Tie => "muted",
            PairwiseOutcome::Missing | PairwiseOutcome::Excluded => "v-insufficient",
        };
        let mut outcome = escape(c.outcome.as_str());
        if let Some(r) = &c.reason {
            let _ = write!(outcome, " <span class=\"muted\">{}</span>", escape(r));
        }
        if let Some(e) = &c.error {
            let _ = write!(outcome, "<div class=\"small-text\">{}</div>", escape(e));
        }
        let call = |i: usize| {
            c.calls.get(i).map_or_else(String::new, |call| {
                let mut cell = escape(call.preferred.as_str());
                if let Some(r) = &call.reason {
                    let _ = write!(cell, "<div class=\"small-text\">{}</div>", escape(r));
                }
                cell
            })
        };
        let length = match (c.char_difference(), c.word_difference()) {
            (Some(ch), Some(w)) => format!("{ch:+}, {w:+}"),
            _ => "—".to_string(),
        };
        let _ = writeln!(
            out,
            "<tr data-case=\"{}\" data-outcome=\"{}\"><td class=\"mono\">{}</td><td class=\"{class}\">{outcome}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&c.case_id),
            c.outcome.as_str(),
            escape(&c.case_id),
            c.first.map_or("—", |s| s.as_str()),
            call(0),
            call(1),
            escape(&length)
        );
    }
    out.push_str("</table>\n</section>\n");
    out
}

/// The exploratory per-slice differences of a comparison (empty when there are none).
pub fn comparison_slices(c: &Comparison) -> String {
    let mut body = String::new();
    if !c.exploratory.is_empty() {
        body.push_str("<h2>Slices (exploratory; not decisions)</h2>\n");
        let rows: Vec<Vec<String>> = c
            .exploratory
            .iter()
            .map(|s| {
                vec![
                    format!("{} = {}", s.key, s.value),
                    s.line.criterion.clone(),
                    difference_text(&s.line),
                ]
            })
            .collect();
        body.push_str(&table(&["slice", "criterion", "difference"], &rows));
    }
    body
}

/// The HTML report of a diagnosis: label counts, recovered or not, the per-case table and the
/// diagnosed run's traces of the selected cases when `run` is given.
pub fn diagnosis_html(d: &Diagnosis, run: Option<&LoadedRun>) -> String {
    let c = &d.content;
    let mut body = String::from("<h1>Oloproof diagnosis report</h1>\n");
    body.push_str(&diagnosis_overview(d, run));
    let yes_no = |b: Option<bool>| match b {
        Some(true) => "yes".to_string(),
        Some(false) => "no".to_string(),
        None => "error".to_string(),
    };
    let mut sorted: Vec<&oloproof_core::diagnosis::CaseDiagnosis> = c.cases.iter().collect();
    sorted.sort_by(|a, b| a.case_id.cmp(&b.case_id));
    let rows: Vec<Vec<String>> = sorted
        .iter()
        .map(|x| {
            vec![
                x.case_id.clone(),
                if x.implicated.is_empty() {
                    x.label.clone()
                } else {
                    // What the label names: predicates, lanes, rewrites, the hop.
                    format!("{} ({})", x.label, x.implicated.join("; "))
                },
                x.reason.clone(),
                x.strength.clone(),
                x.best_relevant_position
                    .map(|p| p.to_string())
                    .unwrap_or_else(|| "none".into()),
                yes_no(x.recovered),
                yes_no(x.control_passed),
            ]
        })
        .collect();
    body.push_str(&table(
        &[
            "case",
            "label",
            "reason",
            "strength",
            "best relevant position",
            "recovered",
            "control passed",
        ],
        &rows,
    ));
    if let Some(run) = run {
        let _ = writeln!(body, "<h2>Diagnosed cases ({})</h2>", c.selected.len());
        for id in &c.selected {
            if let Some((case, trace, verdicts)) = run.cases.iter().find(|(x, _, _)| &x.id == id) {
                let label = c
                    .cases
                    .iter()
                    .find(|x| &x.case_id == id)
                    .map(|x| {
                        format!(
                            "<p><b>{}</b>: {}</p>\n",
                            escape(&x.label),
                            escape(&x.reason)
                        )
                    })
                    .unwrap_or_default();
                body.push_str(&case_html(case, trace.as_ref(), verdicts, &label));
            }
        }
    }
    page(&format!("Oloproof diagnosis {}", d.id), &body)
}

/// Everything of a diagnosis but its per-case rows: identity, child runs, label counts,
/// recovered or not (bar charts) and the control line.
pub fn diagnosis_overview(d: &Diagnosis, run: Option<&LoadedRun>) -> String {
    let c = &d.content;
    let mut body = String::new();
    let mut rows: Vec<(&str, String)> = vec![
        ("diagnosis", d.id.clone()),
        ("run", c.run_id.clone()),
        ("criterion", c.criterion.clone()),
        ("intervention", c.intervention.describe()),
        (
            "selected",
            format!("{} failed cases with gold context", c.selected.len()),
        ),
    ];
    if let Some(run) = run {
        rows.push((
            "system",
            format!(
                "{} {}",
                run.settings.system.name, run.settings.system.version
            ),
        ));
    }
    if !c.not_diagnosable.is_empty() {
        rows.push(("not diagnosable", c.not_diagnosable.join(", ")));
    }
    if let Some(from) = &c.labels_from {
        rows.push(("labels from", from.clone()));
    }
    for child in &d.child_runs {
        rows.push(("child run", format!("{} {}", child.role, child.run_id)));
    }
    body.push_str(&meta_list(&rows));
    body.push_str("<h2>Labels</h2>\n");
    let n = c.cases.len();
    let bars: Vec<Bar> = d
        .label_counts()
        .into_iter()
        .map(|(label, count)| Bar {
            label: label.to_string(),
            value: count as f64,
            note: format!("{count} of {n}"),
        })
        .collect();
    body.push_str(&bar_chart(&bars));
    body.push_str("<h2>Recovered under the intervention</h2>\n");
    let recovered = d.recovered();
    let errors = c.cases.iter().filter(|x| x.recovered.is_none()).count();
    let not = n - recovered - errors;
    let mut bars = vec![
        Bar {
            label: "recovered".into(),
            value: recovered as f64,
            note: format!("{recovered} of {n}"),
        },
        Bar {
            label: "not recovered".into(),
            value: not as f64,
            note: format!("{not} of {n}"),
        },
    ];
    if errors > 0 {
        bars.push(Bar {
            label: "error".into(),
            value: errors as f64,
            note: format!("{errors} of {n}"),
        });
    }
    body.push_str(&bar_chart(&bars));
    let _ = writeln!(
        body,
        "<p>Control: {} of {n} passed when re-executed without the intervention.</p>",
        d.control_passed()
    );
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_the_five_characters() {
        assert_eq!(
            escape(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn a_hostile_answer_renders_as_text() {
        let case: Case = serde_json::from_value(serde_json::json!({
            "id": "x\"><script>", "input": {"question": "<img src=x onerror=alert(1)>"}
        }))
        .unwrap();
        let mut trace = Trace::new("x");
        let mut gen = serde_json::Map::new();
        gen.insert(
            "answer".into(),
            Value::String("<script>alert(1)</script>".into()),
        );
        trace.generation = Some(gen);
        let html = case_html(&case, Some(&trace), &[], "");
        assert!(!html.contains("<script") && !html.contains("<img"));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"));
    }
}
