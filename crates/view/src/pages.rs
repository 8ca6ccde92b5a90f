//! The viewer's pages, rendered from loaded store data: pure functions from values to HTML.
//!
//! Charts, the run header, the trace of a case and the comparison and diagnosis overviews are
//! `oloproof report`'s own fragments ([`oloproof_report::html`]); this module adds the page
//! shell (an external stylesheet, no inline style or script), navigation, the filter forms and
//! the linked case tables. Every stored value goes through [`escape`].
//!
//! ```
//! use oloproof_view::pages::not_found_page;
//! let html = not_found_page("no run `<x>` in this store");
//! assert!(html.contains("no run `&lt;x&gt;` in this store") && !html.contains("<script"));
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use oloproof_core::case::Case;
use oloproof_core::comparison::{ChangeDirection, Comparison, Gate};
use oloproof_core::diagnosis::{CaseDiagnosis, Diagnosis};
use oloproof_core::monitor_report::MonitorReport;
use oloproof_core::run::{Evaluators, LoadedCase, LoadedRun, RunRecord};
use oloproof_core::store::{MonitorRecord, RecordedAnalysis};
use oloproof_core::summary::RunSummary;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use oloproof_report::html::{self, escape};
use oloproof_report::monitor;
use oloproof_report::{counts_cell, format_utc, interval_cell, value_cell};
use serde::Deserialize;
use serde_json::Value;

use crate::{case_link, comparison_link, diagnosis_link, monitor_link, run_link};

/// The viewer's stylesheet: the report's, then the viewer's own rules. Served as
/// `/static/style.css`.
pub fn stylesheet() -> String {
    format!("{}\n{}", html::STYLE, include_str!("../assets/viewer.css"))
}

/// The favicon, served as `/static/favicon.svg`.
pub const FAVICON_SVG: &str = include_str!("../assets/favicon.svg");

/// The document shell: the stylesheet and favicon from this server, a top bar, breadcrumbs
/// (`(label, link)`; the last is the current page) and `body`.
pub fn shell(title: &str, crumbs: &[(String, String)], body: &str) -> String {
    let mut nav = String::new();
    for (i, (label, link)) in crumbs.iter().enumerate() {
        if i > 0 {
            nav.push_str("<span class=\"sep\">/</span>");
        }
        if i + 1 == crumbs.len() {
            let _ = write!(nav, "<span class=\"here\">{}</span>", escape(label));
        } else {
            let _ = write!(nav, "<a href=\"{}\">{}</a>", escape(link), escape(label));
        }
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<meta name=\"referrer\" content=\"no-referrer\">\n\
<title>{} · Oloproof</title>\n\
<link rel=\"stylesheet\" href=\"/static/style.css\">\n\
<link rel=\"icon\" href=\"/static/favicon.svg\" type=\"image/svg+xml\">\n\
</head>\n<body>\n<header class=\"top\"><a class=\"brand\" href=\"/\">Oloproof</a>\
<nav class=\"crumbs\">{nav}</nav></header>\n<main>\n{body}</main>\n</body>\n</html>\n",
        escape(title)
    )
}

/// Longest part of a request (an id, a filter value, a path) repeated in a 400 or 404 page.
pub const QUOTED_MAX: usize = 120;

/// A value from the request as an error page repeats it: at most [`QUOTED_MAX`] characters,
/// and its length when cut, so an oversized query string is not echoed back whole.
pub fn quoted(value: &str) -> String {
    let chars = value.chars().count();
    if chars <= QUOTED_MAX {
        value.to_string()
    } else {
        let head: String = value.chars().take(QUOTED_MAX).collect();
        format!("{head}… ({chars} characters)")
    }
}

/// A page saying what was not found (served with status 404).
pub fn not_found_page(message: &str) -> String {
    shell(
        "Not found",
        &[("Not found".into(), String::new())],
        &format!(
            "<h1>Not found</h1>\n<p class=\"notice\">{}</p>\n<p><a href=\"/\">All runs</a></p>\n",
            escape(message)
        ),
    )
}

/// A page for a request that cannot be answered as asked (status 400), e.g. an unknown filter
/// value; `message` says what would work.
pub fn bad_request_page(message: &str) -> String {
    shell(
        "Bad request",
        &[("Bad request".into(), String::new())],
        &format!(
            "<h1>Bad request</h1>\n<p class=\"notice\">{}</p>\n<p><a href=\"/\">All runs</a></p>\n",
            escape(message)
        ),
    )
}

/// A page for a store that could not be read (status 500).
pub fn error_page(message: &str) -> String {
    shell(
        "Error",
        &[("Error".into(), String::new())],
        &format!(
            "<h1>The run store could not be read</h1>\n<pre>{}</pre>\n",
            escape(message)
        ),
    )
}

/// Why a page cannot be rendered as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageError {
    /// The id names nothing in the store (404).
    NotFound(String),
    /// A filter names something the page does not have (400).
    BadRequest(String),
    /// The store failed or holds something unreadable (500).
    Internal(String),
}

fn root_crumb() -> (String, String) {
    ("Runs".into(), "/".into())
}

fn short_id(id: &str) -> String {
    match id.strip_prefix("sha256:") {
        Some(hex) => format!("sha256:{}", &hex[..hex.len().min(12)]),
        None => id.to_string(),
    }
}

/// The stored summary of a run, if it has one that parses.
pub fn stored_summary(record: &RunRecord) -> Option<RunSummary> {
    record
        .summary_json
        .as_deref()
        .and_then(|s| serde_json::from_str(s).ok())
}

/// The `system` or `dataset` and the settings that matter, in one line, from the stored
/// settings JSON.
fn config_summary(settings_json: &str) -> (String, String) {
    let v: Value = serde_json::from_str(settings_json).unwrap_or(Value::Null);
    let s = |p: &str| v.pointer(p).cloned().unwrap_or(Value::Null);
    let text = |x: Value| match x {
        Value::Null => "none".to_string(),
        Value::String(s) => s,
        other => other.to_string(),
    };
    let source = match v.pointer("/dataset/path") {
        Some(path) => {
            let path = text(path.clone());
            let name = path.rsplit(['/', '\\']).next().unwrap_or(&path).to_string();
            return (
                format!("dataset {name} ({})", text(s("/dataset/format"))),
                "recorded answers".into(),
            );
        }
        None => format!("{} {}", text(s("/system/name")), text(s("/system/version"))),
    };
    let mut settings = format!(
        "top_k {} · budget {} · depth {}",
        text(s("/system/top_k")),
        text(s("/system/token_budget")),
        text(s("/system/depth"))
    );
    if let Some(label) = v.pointer("/intervention/label") {
        let _ = write!(settings, " · intervention {}", text(label.clone()));
    }
    (source, settings)
}

fn headline(summary: &RunSummary) -> String {
    let mut out = String::from("<div class=\"chips\">");
    for c in &summary.criteria {
        let _ = write!(
            out,
            "<span class=\"chip\"><span class=\"k\">{}</span> <span class=\"v\">{}</span></span>",
            escape(&c.criterion),
            escape(&value_cell(c))
        );
    }
    out.push_str("</div>");
    out
}

/// `/`: runs (newest first) with their config summary and headline numbers, then the
/// comparisons, diagnoses and monitor reports.
pub fn runs_page(
    runs: &[RunRecord],
    comparisons: &[RecordedAnalysis],
    diagnoses: &[RecordedAnalysis],
    monitors: &[MonitorRecord],
) -> String {
    let mut body = String::from("<h1>Runs</h1>\n");
    if runs.is_empty() {
        body.push_str(
            "<p class=\"notice\">No runs in this store yet. Start one with <code>oloproof run DIR</code>.</p>\n",
        );
    } else {
        body.push_str(
            "<table class=\"list\" id=\"runs\">\n<tr><th>run</th><th>created (UTC)</th><th>system or dataset</th><th>settings</th><th>status</th><th class=\"num\">cases</th><th>headline</th></tr>\n",
        );
        for r in runs {
            let (source, settings) = config_summary(&r.settings_json);
            let head = match stored_summary(r) {
                Some(s) => headline(&s),
                None => "<span class=\"muted\">no summary yet</span>".into(),
            };
            let parent = r
                .parent
                .as_deref()
                .map(|p| {
                    format!(
                        "<div class=\"muted small-text\">child of <a href=\"{}\">{}</a></div>",
                        escape(&run_link(p)),
                        escape(p)
                    )
                })
                .unwrap_or_default();
            let _ = writeln!(
                body,
                "<tr data-run=\"{id}\"><td class=\"mono\"><a href=\"{link}\">{id}</a>{parent}</td><td class=\"nowrap\">{}</td><td>{}</td><td class=\"muted\">{}</td><td>{}</td><td class=\"num\">{} / {}</td><td>{head}</td></tr>",
                escape(&format_utc(r.created_ms)),
                escape(&source),
                escape(&settings),
                status_pill(r.status.as_str()),
                r.done_count,
                r.case_count,
                id = escape(&r.id),
                link = escape(&run_link(&r.id)),
            );
        }
        body.push_str("</table>\n");
    }
    if !comparisons.is_empty() {
        body.push_str("<h2>Comparisons</h2>\n<table class=\"list\" id=\"comparisons\">\n<tr><th>comparison</th><th>recorded (UTC)</th><th>candidate</th><th>baseline</th><th>gate</th><th class=\"num\">changed cases</th></tr>\n");
        for a in comparisons {
            let parsed: Option<Comparison> = serde_json::from_str(&a.content_json).ok();
            let gate = parsed
                .as_ref()
                .map(|c| gate_pill(c.gate))
                .unwrap_or_default();
            let changed = parsed
                .as_ref()
                .map(|c| {
                    let regressions = c
                        .changes
                        .iter()
                        .filter(|x| x.direction == ChangeDirection::Regression)
                        .count();
                    format!("{} ({regressions} regressions)", c.changes.len())
                })
                .unwrap_or_default();
            let baseline = a.baseline.clone().unwrap_or_default();
            let _ = writeln!(
                body,
                "<tr><td class=\"mono\"><a href=\"{}\">{}</a></td><td class=\"nowrap\">{}</td><td class=\"mono\"><a href=\"{}\">{}</a></td><td class=\"mono\"><a href=\"{}\">{}</a></td><td>{gate}</td><td class=\"num\">{}</td></tr>",
                escape(&comparison_link(&a.id)),
                escape(&short_id(&a.id)),
                escape(&format_utc(a.created_ms)),
                escape(&run_link(&a.run_id)),
                escape(&a.run_id),
                escape(&run_link(&baseline)),
                escape(&baseline),
                escape(&changed)
            );
        }
        body.push_str("</table>\n");
    }
    if !diagnoses.is_empty() {
        body.push_str("<h2>Diagnoses</h2>\n<table class=\"list\" id=\"diagnoses\">\n<tr><th>diagnosis</th><th>recorded (UTC)</th><th>run</th><th>criterion</th><th>intervention</th><th class=\"num\">recovered</th></tr>\n");
        for a in diagnoses {
            let parsed: Option<Diagnosis> = serde_json::from_str(&a.content_json).ok();
            let (criterion, intervention, recovered) = match &parsed {
                Some(d) => (
                    d.content.criterion.clone(),
                    d.content.intervention.describe(),
                    format!("{} of {}", d.recovered(), d.content.cases.len()),
                ),
                None => Default::default(),
            };
            let _ = writeln!(
                body,
                "<tr><td class=\"mono\"><a href=\"{}\">{}</a></td><td class=\"nowrap\">{}</td><td class=\"mono\"><a href=\"{}\">{}</a></td><td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>",
                escape(&diagnosis_link(&a.id)),
                escape(&short_id(&a.id)),
                escape(&format_utc(a.created_ms)),
                escape(&run_link(&a.run_id)),
                escape(&a.run_id),
                escape(&criterion),
                escape(&intervention),
                escape(&recovered)
            );
        }
        body.push_str("</table>\n");
    }
    if !monitors.is_empty() {
        body.push_str(&monitors_table(monitors));
    }
    shell("Runs", &[("Runs".into(), "/".into())], &body)
}

/// The index's table of monitor reports (newest first): id, time, traffic, windows, alerts
/// fired and SLOs not met; a report that does not decode says so in its row.
fn monitors_table(monitors: &[MonitorRecord]) -> String {
    let mut out = String::from("<h2>Monitor reports</h2>\n<table class=\"list\" id=\"monitors\">\n<tr><th>report</th><th>recorded (UTC)</th><th>traffic</th><th class=\"num\">windows</th><th class=\"num\">alerts fired</th><th class=\"num\">SLOs not met</th></tr>\n");
    for m in monitors {
        let (windows, fired, unmet) = match m.report() {
            Ok(r) => (
                r.windows.len().to_string(),
                r.alerts.iter().filter(|a| a.fired).count().to_string(),
                format!(
                    "{} of {}",
                    r.slos.iter().filter(|s| s.decision.state.fails()).count(),
                    r.slos.len()
                ),
            ),
            Err(_) => ("unreadable".into(), "—".into(), "—".into()),
        };
        let _ = writeln!(
            out,
            "<tr data-monitor=\"{id}\"><td class=\"mono\"><a href=\"{}\">{id}</a></td><td class=\"nowrap\">{}</td><td class=\"mono\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            escape(&monitor_link(&m.id)),
            escape(&format_utc(m.created_ms)),
            escape(&m.traffic),
            escape(&windows),
            escape(&fired),
            escape(&unmet),
            id = escape(&m.id),
        );
    }
    out.push_str("</table>\n");
    out
}

/// `/monitors/<id>`: a monitor report ([`oloproof_report::monitor::monitor_body`]), with links
/// to the runs its tiers judged with.
pub fn monitor_page(record: &MonitorRecord, report: &MonitorReport) -> String {
    let mut body = monitor::monitor_body(&record.id, Some(record.created_ms), report);
    let runs: Vec<String> = report
        .sampling
        .tiers
        .iter()
        .filter_map(|t| {
            t.run_id.as_ref().map(|id| {
                format!(
                    "<li>tier {} run <a class=\"mono\" href=\"{}\">{}</a></li>",
                    t.tier,
                    escape(&run_link(id)),
                    escape(id)
                )
            })
        })
        .collect();
    if !runs.is_empty() {
        let _ = write!(
            body,
            "<h2>Judged in</h2>\n<ul class=\"links\" id=\"tier-runs\">\n{}\n</ul>\n",
            runs.join("\n")
        );
    }
    shell(
        &format!("Monitor {}", record.id),
        &[root_crumb(), (record.id.clone(), monitor_link(&record.id))],
        &body,
    )
}

fn status_pill(status: &str) -> String {
    let class = match status {
        "complete" => "pass",
        "running" => "excluded",
        _ => "fail",
    };
    format!("<span class=\"pill {class}\">{}</span>", escape(status))
}

fn gate_pill(gate: Gate) -> String {
    match gate {
        Gate::Pass => "<span class=\"pill pass\">PASS</span>".into(),
        Gate::Block => "<span class=\"pill fail\">BLOCK</span>".into(),
    }
}

/// The outcome of one verdict, as the filters name it.
fn outcome(v: &Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::Score { .. } => "score",
        Verdict::Missing { .. } => "missing",
        Verdict::Excluded { .. } => "excluded",
    }
}

/// A verdict as a small coloured pill (its full text in the title).
fn verdict_pill(v: Option<&CriterionVerdict>) -> String {
    match v {
        None => "<span class=\"pill excluded\">pending</span>".into(),
        Some(v) => {
            let text = match &v.verdict {
                Verdict::Score { value } => format!("{value:.3}"),
                other => outcome(other).to_string(),
            };
            format!(
                "<span class=\"pill {}\" title=\"{}\">{}</span>",
                outcome(&v.verdict),
                escape(&html::verdict_text(v)),
                escape(&text)
            )
        }
    }
}

/// The filters of a run's case table (`?criterion=…&outcome=…&slice=key=value&label=…`).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct CaseFilters {
    /// The criterion `outcome` applies to (empty: any criterion).
    pub criterion: Option<String>,
    /// `pass`, `fail`, `missing`, `excluded` or `score`.
    pub outcome: Option<String>,
    /// `key=value`, e.g. `metadata.topic=billing`.
    pub slice: Option<String>,
    /// A diagnosis label, e.g. `RETRIEVAL_MISS`.
    pub label: Option<String>,
}

fn nonempty(v: &Option<String>) -> Option<&str> {
    v.as_deref().filter(|s| !s.is_empty())
}

const OUTCOMES: &[&str] = &["pass", "fail", "missing", "excluded", "score"];

fn select(name: &str, label: &str, any: &str, options: &[String], chosen: Option<&str>) -> String {
    let mut out = format!(
        "<label>{}<select name=\"{}\"><option value=\"\">{}</option>",
        escape(label),
        escape(name),
        escape(any)
    );
    for o in options {
        let sel = if chosen == Some(o.as_str()) {
            " selected"
        } else {
            ""
        };
        let _ = write!(
            out,
            "<option value=\"{}\"{sel}>{}</option>",
            escape(o),
            escape(o)
        );
    }
    out.push_str("</select></label>");
    out
}

/// Diagnosis labels of a run's cases: the newest diagnosis that labels a case wins.
pub fn case_labels(diagnoses: &[Diagnosis]) -> BTreeMap<String, (String, String)> {
    let mut labels = BTreeMap::new();
    for d in diagnoses {
        for c in &d.content.cases {
            labels
                .entry(c.case_id.clone())
                .or_insert_with(|| (c.label.clone(), d.id.clone()));
        }
    }
    labels
}

/// `/runs/<id>`: the run's header and headline, the metric table (each value also in a
/// `data-value` attribute), slices, latency, its diagnoses and comparisons, and the case
/// table under the filters. The cases' slice values come from `evaluators` (the engine's, passed
/// in by the caller).
pub fn run_page(
    evaluators: &dyn Evaluators,
    run: &LoadedRun,
    summary: &RunSummary,
    diagnoses: &[Diagnosis],
    comparisons: &[RecordedAnalysis],
    filters: &CaseFilters,
) -> Result<String, PageError> {
    let id = &run.record.id;
    let slice_keys = &run.settings.options.slices;
    let criteria: Vec<String> = run.criteria.iter().map(|(c, _)| c.clone()).collect();
    let labels = case_labels(diagnoses);
    // Validate the filters against what the run has.
    let criterion = nonempty(&filters.criterion);
    if let Some(c) = criterion {
        if !criteria.iter().any(|x| x == c) {
            return Err(PageError::BadRequest(format!(
                "run {id} has no criterion `{}`; its criteria are {}",
                quoted(c),
                criteria.join(", ")
            )));
        }
    }
    let wanted_outcome = nonempty(&filters.outcome);
    if let Some(o) = wanted_outcome {
        if !OUTCOMES.contains(&o) {
            return Err(PageError::BadRequest(format!(
                "unknown outcome `{}`; use one of {}",
                quoted(o),
                OUTCOMES.join(", ")
            )));
        }
    }
    let slice = match nonempty(&filters.slice) {
        Some(s) => match s.split_once('=') {
            Some((k, v)) if slice_keys.iter().any(|x| x == k) => Some((k, v)),
            _ => {
                return Err(PageError::BadRequest(format!(
                "slice filter `{}` is not `key=value` with a slice of the run ({}), e.g. `{}=…`",
                quoted(s),
                slice_keys.join(", "),
                slice_keys
                    .first()
                    .map(String::as_str)
                    .unwrap_or("metadata.topic")
            )))
            }
        },
        None => None,
    };
    let wanted_label = nonempty(&filters.label);

    let mut body = format!(
        "<h1>Run <span class=\"mono\">{}</span></h1>\n{}\n",
        escape(id),
        headline(summary)
    );
    body.push_str(&html::run_header(run, summary));
    body.push_str("<h2>Criteria</h2>\n");
    body.push_str(&html::criteria_chart(summary));
    body.push_str("<table id=\"criteria\">\n<tr><th>criterion</th><th class=\"num\">value</th><th>95% interval</th><th>counts</th></tr>\n");
    for c in &summary.criteria {
        let data = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
        let (lo, hi) = match c.interval {
            Some([lo, hi]) => (lo.to_string(), hi.to_string()),
            None => Default::default(),
        };
        let _ = writeln!(
            body,
            "<tr data-criterion=\"{name}\"><td><a href=\"?criterion={q}&amp;outcome=fail#cases\">{name}</a></td><td class=\"num\" data-value=\"{}\">{}</td><td data-lo=\"{lo}\" data-hi=\"{hi}\">{}</td><td data-observed=\"{}\" data-missing=\"{}\" data-excluded=\"{}\">{}</td></tr>",
            data(c.value),
            escape(&value_cell(c)),
            escape(&interval_cell(c)),
            c.observed,
            c.missing,
            c.excluded,
            escape(&counts_cell(c)),
            name = escape(&c.criterion),
            q = escape(&crate::path_segment(&c.criterion)),
        );
    }
    body.push_str("</table>\n");
    body.push_str(&html::slices_section(summary));
    body.push_str(&html::latency_section(summary));
    if !diagnoses.is_empty() || !comparisons.is_empty() {
        body.push_str("<h2>Analyses</h2>\n<ul class=\"links\">\n");
        for d in diagnoses {
            let _ = writeln!(
                body,
                "<li>Diagnosis <a class=\"mono\" href=\"{}\">{}</a> · {} · {}, {} of {} recovered</li>",
                escape(&diagnosis_link(&d.id)),
                escape(&short_id(&d.id)),
                escape(&d.content.criterion),
                escape(&d.content.intervention.describe()),
                d.recovered(),
                d.content.cases.len()
            );
        }
        for a in comparisons {
            let role = if &a.run_id == id {
                "as candidate"
            } else {
                "as baseline"
            };
            let _ = writeln!(
                body,
                "<li>Comparison <a class=\"mono\" href=\"{}\">{}</a> · {role}</li>",
                escape(&comparison_link(&a.id)),
                escape(&short_id(&a.id))
            );
        }
        body.push_str("</ul>\n");
    }

    // Cases with their slice values, filtered.
    let mut slice_options: BTreeSet<String> = BTreeSet::new();
    let mut rows = String::new();
    let mut shown = 0usize;
    for (case, trace, verdicts) in &run.cases {
        let values: Vec<(String, String)> = match trace {
            Some(t) => slice_keys
                .iter()
                .map(|k| (k.clone(), evaluators.slice_value(k, case, t)))
                .collect(),
            None => Vec::new(),
        };
        for (k, v) in &values {
            slice_options.insert(format!("{k}={v}"));
        }
        let label = labels.get(&case.id);
        let keep_outcome = match wanted_outcome {
            None => true,
            Some(o) => verdicts
                .iter()
                .filter(|v| criterion.is_none_or(|c| v.criterion == c))
                .any(|v| outcome(&v.verdict) == o),
        };
        let keep_slice = slice.is_none_or(|(k, v)| values.iter().any(|(a, b)| a == k && b == v));
        let keep_label = wanted_label.is_none_or(|l| label.is_some_and(|(x, _)| x == l));
        if !(keep_outcome && keep_slice && keep_label) {
            continue;
        }
        shown += 1;
        let _ = write!(
            rows,
            "<tr data-case=\"{}\"><td class=\"mono\"><a href=\"{}\">{}</a></td>",
            escape(&case.id),
            escape(&case_link(id, &case.id)),
            escape(&case.id)
        );
        for c in &criteria {
            let _ = write!(
                rows,
                "<td>{}</td>",
                verdict_pill(verdicts.iter().find(|v| &v.criterion == c))
            );
        }
        for k in slice_keys {
            let v = values
                .iter()
                .find(|(a, _)| a == k)
                .map(|(_, b)| b.as_str())
                .unwrap_or("");
            let _ = write!(rows, "<td>{}</td>", escape(v));
        }
        let _ = writeln!(
            rows,
            "<td>{}</td></tr>",
            label
                .map(|(l, d)| format!(
                    "<a class=\"dlabel\" href=\"{}\">{}</a>",
                    escape(&diagnosis_link(d)),
                    escape(l)
                ))
                .unwrap_or_default()
        );
    }
    let label_options: Vec<String> = labels
        .values()
        .map(|(l, _)| l.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let _ = writeln!(
        body,
        "<h2 id=\"cases\">Cases <span class=\"muted\" id=\"case-count\">{shown} of {}</span></h2>",
        run.cases.len()
    );
    body.push_str("<form class=\"filters\" method=\"get\" action=\"#cases\">");
    body.push_str(&select(
        "criterion",
        "criterion",
        "any criterion",
        &criteria,
        criterion,
    ));
    let outcomes: Vec<String> = OUTCOMES.iter().map(|s| s.to_string()).collect();
    body.push_str(&select(
        "outcome",
        "outcome",
        "any outcome",
        &outcomes,
        wanted_outcome,
    ));
    let slice_options: Vec<String> = slice_options.into_iter().collect();
    body.push_str(&select(
        "slice",
        "slice",
        "any slice",
        &slice_options,
        nonempty(&filters.slice),
    ));
    body.push_str(&select(
        "label",
        "diagnosis label",
        "any label",
        &label_options,
        wanted_label,
    ));
    let _ = writeln!(
        body,
        "<button type=\"submit\">Filter</button><a class=\"reset\" href=\"{}#cases\">clear</a></form>",
        escape(&run_link(id))
    );
    body.push_str("<table class=\"list\" id=\"case-table\">\n<tr><th>case</th>");
    for c in &criteria {
        let _ = write!(body, "<th>{}</th>", escape(c));
    }
    for k in slice_keys {
        let _ = write!(body, "<th>{}</th>", escape(k));
    }
    body.push_str("<th>label</th></tr>\n");
    body.push_str(&rows);
    body.push_str("</table>\n");
    if shown == 0 {
        body.push_str("<p class=\"notice\">No case matches these filters.</p>\n");
    }
    Ok(shell(
        &format!("Run {id}"),
        &[root_crumb(), (id.clone(), run_link(id))],
        &body,
    ))
}

/// `/runs/<id>/cases/<case_id>`: the full trace (as in the HTML report: input, candidates with
/// dropped ones struck through, context, answer, citations, every verdict with the judges' raw
/// outputs), the case's slice values (from `evaluators`) and diagnosis labels, and the raw
/// verdict details.
pub fn case_page(
    evaluators: &dyn Evaluators,
    run: &LoadedRun,
    case: &Case,
    trace: Option<&Trace>,
    verdicts: &[CriterionVerdict],
    diagnoses: &[Diagnosis],
) -> String {
    let id = &run.record.id;
    let mut extra = String::new();
    let labelled: Vec<(&Diagnosis, &CaseDiagnosis)> = diagnoses
        .iter()
        .filter_map(|d| {
            d.content
                .cases
                .iter()
                .find(|c| c.case_id == case.id)
                .map(|c| (d, c))
        })
        .collect();
    for (d, c) in &labelled {
        let _ = writeln!(
            extra,
            "<p class=\"diagnosis\"><a class=\"dlabel\" href=\"{}\">{}</a> {} · {} (diagnosis {}, {})</p>",
            escape(&diagnosis_link(&d.id)),
            escape(&c.label),
            escape(&c.reason),
            escape(&c.strength),
            escape(&short_id(&d.id)),
            escape(&d.content.intervention.describe())
        );
    }
    if let Some(t) = trace {
        let keys = &run.settings.options.slices;
        if !keys.is_empty() {
            let rows: Vec<(&str, String)> = keys
                .iter()
                .map(|k| (k.as_str(), evaluators.slice_value(k, case, t)))
                .collect();
            extra.push_str("<div class=\"slices\"><b>Slices</b>");
            extra.push_str(&html::meta_list(&rows));
            extra.push_str("</div>\n");
        }
    }
    let position = run.cases.iter().position(|(c, _, _)| c.id == case.id);
    let mut pager = String::from("<p class=\"pager\">");
    if let Some(i) = position {
        if i > 0 {
            let prev = &run.cases[i - 1].0.id;
            let _ = write!(
                pager,
                "<a rel=\"prev\" href=\"{}\">← {}</a>",
                escape(&case_link(id, prev)),
                escape(prev)
            );
        }
        let _ = write!(
            pager,
            "<span class=\"muted\">case {} of {}</span>",
            i + 1,
            run.cases.len()
        );
        if let Some((next, _, _)) = run.cases.get(i + 1) {
            let _ = write!(
                pager,
                "<a rel=\"next\" href=\"{}\">{} →</a>",
                escape(&case_link(id, &next.id)),
                escape(&next.id)
            );
        }
    }
    pager.push_str("</p>\n");
    let mut body = format!(
        "<h1>Case <span class=\"mono\">{}</span></h1>\n<p class=\"muted\">in run <a class=\"mono\" href=\"{}\">{}</a> · {}</p>\n{pager}",
        escape(&case.id),
        escape(&run_link(id)),
        escape(id),
        escape(&format!(
            "{} {}",
            run.settings.system.name, run.settings.system.version
        ))
    );
    body.push_str(&html::case_html(case, trace, verdicts, &extra));
    let has_detail = |v: &&CriterionVerdict| match &v.detail {
        Value::Null => false,
        Value::Object(m) => !m.is_empty(),
        _ => true,
    };
    if verdicts.iter().any(|v| has_detail(&v)) {
        body.push_str("<h2>Verdict details</h2>\n");
        for v in verdicts.iter().filter(has_detail) {
            let _ = writeln!(
                body,
                "<details><summary>{}</summary><pre>{}</pre></details>",
                escape(&v.criterion),
                escape(&serde_json::to_string_pretty(&v.detail).unwrap_or_default())
            );
        }
    }
    if let Some(t) = trace.filter(|t| !t.stderr.is_empty()) {
        let _ = writeln!(
            body,
            "<h2>Worker stderr</h2>\n<pre>{}</pre>",
            escape(&t.stderr.join("\n"))
        );
    }
    shell(
        &format!("Case {} · {id}", case.id),
        &[
            root_crumb(),
            (id.clone(), run_link(id)),
            (case.id.clone(), case_link(id, &case.id)),
        ],
        &body,
    )
}

/// The filters of a comparison's case table (`?direction=regression&criterion=…`).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ComparisonFilters {
    /// `regression`, `improvement`, `other` or `unchanged`.
    pub direction: Option<String>,
    /// Only cases whose verdict changed on this criterion.
    pub criterion: Option<String>,
}

const DIRECTIONS: &[&str] = &["regression", "other", "improvement", "unchanged"];

fn direction_key(d: ChangeDirection) -> &'static str {
    match d {
        ChangeDirection::Regression => "regression",
        ChangeDirection::Other => "other",
        ChangeDirection::Improvement => "improvement",
    }
}

fn side(run: &LoadedRun, case: Option<&LoadedCase>, criteria: &[String]) -> String {
    let Some((case, trace, verdicts)) = case else {
        return "<td class=\"side\"><span class=\"muted\">not in this run</span></td>".into();
    };
    let answer = trace
        .as_ref()
        .map(|t| match (&t.error, t.answer()) {
            (Some(e), _) => format!("error: {}", e.summary()),
            (None, Some(a)) => a.to_string(),
            (None, None) => "(no answer)".into(),
        })
        .unwrap_or_else(|| "(pending)".into());
    let mut out = format!(
        "<td class=\"side\"><a class=\"trace\" href=\"{}\">trace</a><pre class=\"answer\">{}</pre><div class=\"pills\">",
        escape(&case_link(&run.record.id, &case.id)),
        escape(&answer)
    );
    for c in criteria {
        let _ = write!(
            out,
            "<span class=\"pv\"><span class=\"muted\">{}</span> {}</span>",
            escape(c),
            verdict_pill(verdicts.iter().find(|v| &v.criterion == c))
        );
    }
    out.push_str("</div></td>");
    out
}

/// `/comparisons/<id>`: the comparison's overview (forest plot with margins, decisions, gate)
/// and every shared case side by side, baseline then candidate, regressions first.
pub fn comparison_page(
    c: &Comparison,
    candidate: &LoadedRun,
    baseline: &LoadedRun,
    filters: &ComparisonFilters,
) -> Result<String, PageError> {
    let direction = nonempty(&filters.direction);
    if let Some(d) = direction {
        if !DIRECTIONS.contains(&d) {
            return Err(PageError::BadRequest(format!(
                "unknown direction `{}`; use one of {}",
                quoted(d),
                DIRECTIONS.join(", ")
            )));
        }
    }
    let criteria: Vec<String> = c.criteria.iter().map(|l| l.criterion.clone()).collect();
    let criterion = nonempty(&filters.criterion);
    if let Some(x) = criterion {
        if !criteria.iter().any(|y| y == x) {
            return Err(PageError::BadRequest(format!(
                "comparison has no criterion `{}`; its criteria are {}",
                quoted(x),
                criteria.join(", ")
            )));
        }
    }
    let mut body = format!(
        "<h1>Comparison <span class=\"mono\">{}</span></h1>\n<p class=\"muted\">candidate <a class=\"mono\" href=\"{}\">{}</a> against baseline <a class=\"mono\" href=\"{}\">{}</a></p>\n",
        escape(&short_id(&c.id)),
        escape(&run_link(&c.candidate)),
        escape(&c.candidate),
        escape(&run_link(&c.baseline)),
        escape(&c.baseline)
    );
    body.push_str(&html::comparison_overview(c, Some(candidate)));
    let slices = html::comparison_slices(c);

    // Changed cases regressions first, then the unchanged shared ones in baseline order.
    let find = |run: &'_ LoadedRun, id: &str| -> Option<usize> {
        run.cases.iter().position(|(x, _, _)| x.id == id)
    };
    let mut ordered: Vec<(String, Option<&oloproof_core::comparison::CaseChange>)> =
        html::changes_regressions_first(c)
            .into_iter()
            .map(|ch| (ch.case_id.clone(), Some(ch)))
            .collect();
    for (case, _, _) in &baseline.cases {
        if find(candidate, &case.id).is_some() && !c.changes.iter().any(|x| x.case_id == case.id) {
            ordered.push((case.id.clone(), None));
        }
    }
    let mut rows = String::new();
    let mut shown = 0usize;
    for (case_id, change) in &ordered {
        let key = change
            .map(|ch| direction_key(ch.direction))
            .unwrap_or("unchanged");
        if direction.is_some_and(|d| d != key) {
            continue;
        }
        if let Some(x) = criterion {
            if !change.is_some_and(|ch| ch.changes.iter().any(|v| v.criterion == x)) {
                continue;
            }
        }
        shown += 1;
        let what = match change {
            Some(ch) => format!(
                "<span class=\"pill {}\">{}</span><div class=\"small-text\">{}</div>",
                match ch.direction {
                    ChangeDirection::Regression => "fail",
                    ChangeDirection::Improvement => "pass",
                    ChangeDirection::Other => "missing",
                },
                escape(html::direction_text(ch.direction)),
                escape(&html::change_list(ch))
            ),
            None => "<span class=\"pill excluded\">unchanged</span>".into(),
        };
        let _ = writeln!(
            rows,
            "<tr class=\"{key}\" data-case=\"{}\" data-direction=\"{key}\"><td class=\"mono\">{}</td><td>{what}</td>{}{}</tr>",
            escape(case_id),
            escape(case_id),
            side(
                baseline,
                find(baseline, case_id).map(|i| &baseline.cases[i]),
                &criteria
            ),
            side(
                candidate,
                find(candidate, case_id).map(|i| &candidate.cases[i]),
                &criteria
            ),
        );
    }
    let _ = writeln!(
        body,
        "<h2 id=\"cases\">Cases side by side <span class=\"muted\" id=\"case-count\">{shown} of {}</span></h2>",
        ordered.len()
    );
    body.push_str("<form class=\"filters\" method=\"get\" action=\"#cases\">");
    let directions: Vec<String> = DIRECTIONS.iter().map(|s| s.to_string()).collect();
    body.push_str(&select(
        "direction",
        "change",
        "any change",
        &directions,
        direction,
    ));
    body.push_str(&select(
        "criterion",
        "changed on criterion",
        "any criterion",
        &criteria,
        criterion,
    ));
    let _ = writeln!(
        body,
        "<button type=\"submit\">Filter</button><a class=\"reset\" href=\"{}#cases\">clear</a></form>",
        escape(&comparison_link(&c.id))
    );
    body.push_str("<table class=\"list side-by-side\" id=\"case-table\">\n<tr><th>case</th><th>change</th><th>baseline</th><th>candidate</th></tr>\n");
    body.push_str(&rows);
    body.push_str("</table>\n");
    if shown == 0 {
        body.push_str("<p class=\"notice\">No case matches these filters.</p>\n");
    }
    if !slices.is_empty() {
        let _ = writeln!(
            body,
            "<details class=\"slices\"><summary>Exploratory slice differences ({} lines; not decisions)</summary>\n{slices}</details>",
            c.exploratory.len()
        );
    }
    Ok(shell(
        &format!("Comparison {}", short_id(&c.id)),
        &[root_crumb(), (short_id(&c.id), comparison_link(&c.id))],
        &body,
    ))
}

/// The filter of a diagnosis's case table (`?label=…`).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct LabelFilter {
    /// A label, e.g. `GENERATION_FAILURE`.
    pub label: Option<String>,
}

/// `/diagnoses/<id>`: the diagnosis overview (labels, recovery, control) and its labelled
/// cases, each linked to its trace in the diagnosed run, filtered by label.
pub fn diagnosis_page(
    d: &Diagnosis,
    run: &LoadedRun,
    filter: &LabelFilter,
) -> Result<String, PageError> {
    let c = &d.content;
    let present: Vec<String> = c
        .cases
        .iter()
        .map(|x| x.label.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let wanted = nonempty(&filter.label);
    if let Some(l) = wanted {
        if !present.iter().any(|x| x == l) {
            return Err(PageError::BadRequest(format!(
                "no case of this diagnosis has the label `{}`; its labels are {}",
                quoted(l),
                present.join(", ")
            )));
        }
    }
    let mut body = format!(
        "<h1>Diagnosis <span class=\"mono\">{}</span></h1>\n<p class=\"muted\">of run <a class=\"mono\" href=\"{}\">{}</a> · {} · {}</p>\n",
        escape(&short_id(&d.id)),
        escape(&run_link(&c.run_id)),
        escape(&c.run_id),
        escape(&c.criterion),
        escape(&c.intervention.describe())
    );
    body.push_str(&html::diagnosis_overview(d, Some(run)));
    if !d.child_runs.is_empty() {
        body.push_str("<ul class=\"links\">\n");
        for child in &d.child_runs {
            let _ = writeln!(
                body,
                "<li>{} run <a class=\"mono\" href=\"{}\">{}</a></li>",
                escape(&child.role),
                escape(&run_link(&child.run_id)),
                escape(&child.run_id)
            );
        }
        body.push_str("</ul>\n");
    }
    let yes_no = |b: Option<bool>| match b {
        Some(true) => "<span class=\"pill pass\">yes</span>",
        Some(false) => "<span class=\"pill fail\">no</span>",
        None => "<span class=\"pill missing\">error</span>",
    };
    let mut rows = String::new();
    let mut shown = 0usize;
    let mut sorted: Vec<&CaseDiagnosis> = c.cases.iter().collect();
    sorted.sort_by(|a, b| a.case_id.cmp(&b.case_id));
    for x in sorted {
        if wanted.is_some_and(|l| l != x.label) {
            continue;
        }
        shown += 1;
        let _ = writeln!(
            rows,
            "<tr data-case=\"{id}\" data-label=\"{label}\"><td class=\"mono\"><a href=\"{}\">{id}</a></td><td><span class=\"dlabel\">{label}</span></td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
            escape(&case_link(&c.run_id, &x.case_id)),
            escape(&x.reason),
            escape(&x.strength),
            x.best_relevant_position
                .map(|p| p.to_string())
                .unwrap_or_else(|| "none".into()),
            yes_no(x.recovered),
            yes_no(x.control_passed),
            id = escape(&x.case_id),
            label = escape(&x.label),
        );
    }
    let _ = writeln!(
        body,
        "<h2 id=\"cases\">Labelled cases <span class=\"muted\" id=\"case-count\">{shown} of {}</span></h2>",
        c.cases.len()
    );
    body.push_str("<form class=\"filters\" method=\"get\" action=\"#cases\">");
    body.push_str(&select("label", "label", "any label", &present, wanted));
    let _ = writeln!(
        body,
        "<button type=\"submit\">Filter</button><a class=\"reset\" href=\"{}#cases\">clear</a></form>",
        escape(&diagnosis_link(&d.id))
    );
    body.push_str("<table class=\"list\" id=\"case-table\">\n<tr><th>case</th><th>label</th><th>reason</th><th>strength</th><th class=\"num\">best relevant position</th><th>recovered</th><th>control passed</th></tr>\n");
    body.push_str(&rows);
    body.push_str("</table>\n");
    if !c.not_diagnosable.is_empty() {
        let _ = writeln!(
            body,
            "<p class=\"muted\">Failed without gold context (not diagnosable): {}</p>",
            c.not_diagnosable
                .iter()
                .map(|id| format!(
                    "<a class=\"mono\" href=\"{}\">{}</a>",
                    escape(&case_link(&c.run_id, id)),
                    escape(id)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(shell(
        &format!("Diagnosis {}", short_id(&d.id)),
        &[root_crumb(), (short_id(&d.id), diagnosis_link(&d.id))],
        &body,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shell_has_no_script_no_inline_style_and_escapes_crumbs() {
        let page = shell(
            "<t>",
            &[root_crumb(), ("<b>\"".into(), "/x?a=1&b=2".into())],
            "",
        );
        assert!(!page.contains("<script") && !page.contains("style="));
        assert!(page.contains("&lt;t&gt; · Oloproof"));
        assert!(page.contains("&lt;b&gt;&quot;"));
        assert!(page.contains("<link rel=\"stylesheet\" href=\"/static/style.css\">"));
    }

    #[test]
    fn short_ids_keep_the_prefix() {
        assert_eq!(short_id("sha256:0123456789abcdef"), "sha256:0123456789ab");
        assert_eq!(short_id("run_1"), "run_1");
    }

    #[test]
    fn config_summary_names_the_dataset_or_the_system() {
        let (source, settings) = config_summary(
            r#"{"system":{"name":"s<","version":"1","top_k":2,"token_budget":null,"depth":6}}"#,
        );
        assert_eq!(source, "s< 1");
        assert_eq!(settings, "top_k 2 · budget none · depth 6");
        let (source, _) = config_summary(
            r#"{"system":{"name":"x","version":"1"},"dataset":{"path":"a.jsonl","format":"ragas"}}"#,
        );
        assert_eq!(source, "dataset a.jsonl (ragas)");
        let (source, settings) = config_summary(
            r#"{"system":{"name":"x"},"dataset":{"path":"/tmp/d/b.jsonl","format":"ragas"}}"#,
        );
        assert_eq!(
            (source.as_str(), settings.as_str()),
            ("dataset b.jsonl (ragas)", "recorded answers")
        );
    }
}
