//! Rendering of the result records of `oloproof_core` (a run's summary and cases, a comparison,
//! a diagnosis, a gate report, a score history, a monitor report): the terminal text of every
//! command (the metric table, slices, cache lines, run lists, case traces; [`compare`],
//! [`diagnose`], [`gate`], [`history`]) and `oloproof report`'s formats: self-contained
//! [`html`] (with hand-written [`svg`] charts, every value escaped; [`monitor`] for a monitor
//! report), [`markdown`] for PR comments and [`junit`] XML. The viewer (`oloproof-view`)
//! serves the same HTML fragments.
//!
//! Functions here take records already read and computed and return `String`s; they read no
//! file, open no store, compute no statistic, and the CLI decides where the text goes. Formats
//! are covered by the CLI's snapshot tests, so any change is visible in review.
//!
//! ```
//! use oloproof_core::comparison::Gate;
//! use oloproof_report::{compare, format_proportion, html};
//!
//! assert_eq!(format_proportion(9.0 / 13.0), "69.2%");
//! assert_eq!(compare::format_points(-0.04), "+0.0"); // never a signed zero
//! assert_eq!(compare::gate_line(Gate::Block), "Gate: BLOCK (exit 3)\n");
//! // Everything stored came from a system or a model: it is escaped before it is shown.
//! assert_eq!(html::escape(r#"<b a="1">&"#), "&lt;b a=&quot;1&quot;&gt;&amp;");
//! ```
#![warn(missing_docs)]

pub mod claims;
pub mod compare;
pub mod diagnose;
pub mod gate;
pub mod history;
pub mod html;
pub mod junit;
pub mod markdown;
pub mod monitor;
pub mod pipeline;
pub mod svg;

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{ContentArrangement, Table, TableComponent};
use oloproof_core::case::Case;
use oloproof_core::context::DropReason;
use oloproof_core::run::RunRecord;
use oloproof_core::summary::SummaryKind;
use oloproof_core::summary::{CriterionSummary, RunSummary};
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use serde_json::Value;

/// `0.6923…` → `69.2%`.
pub fn format_proportion(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn shown_as_percent(s: &CriterionSummary) -> bool {
    matches!(s.kind, SummaryKind::Proportion | SummaryKind::Rate)
}

/// An amount (milliseconds, tokens, dollars) to four significant digits, at most: `1500`,
/// `42.50`, `0.0001230`.
///
/// ```
/// use oloproof_report::format_amount;
/// assert_eq!(format_amount(1500.0), "1500");
/// assert_eq!(format_amount(42.5), "42.50");
/// assert_eq!(format_amount(0.000123), "0.0001230");
/// assert_eq!(format_amount(0.0), "0");
/// ```
pub fn format_amount(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let magnitude = x.abs().log10().floor() as i64;
    let decimals = (3 - magnitude).clamp(0, 12) as usize;
    format!("{x:.decimals$}")
}

/// The value cell.
pub fn value_cell(s: &CriterionSummary) -> String {
    match s.value {
        None => "—".to_string(),
        Some(v) if shown_as_percent(s) => format_proportion(v),
        Some(v) if s.kind.lower_is_better() => format_amount(v),
        Some(v) => format!("{v:.3}"),
    }
}

/// The interval cell.
pub fn interval_cell(s: &CriterionSummary) -> String {
    match s.interval {
        None if s.no_interval.is_some() && s.value.is_some() => "(too few cases)".to_string(),
        None => "—".to_string(),
        Some([lo, hi]) if shown_as_percent(s) => {
            format!("[{}, {}]", format_proportion(lo), format_proportion(hi))
        }
        Some([lo, hi]) if s.kind.lower_is_better() => {
            format!("[{}, {}]", format_amount(lo), format_amount(hi))
        }
        Some([lo, hi]) => format!("[{lo:.3}, {hi:.3}]"),
    }
}

/// The counts cell: `9 / 13 observed · 0 missing · 0 excluded`, `mean of 13 observed · …`, or
/// `p95 of 13 observed · …`.
pub fn counts_cell(s: &CriterionSummary) -> String {
    let head = match (s.passed, s.kind) {
        (Some(k), _) => format!("{k} / {} observed", s.observed),
        (None, SummaryKind::Quantile(q)) => format!("{} of {} observed", q.label(), s.observed),
        (None, _) => format!("mean of {} observed", s.observed),
    };
    format!("{head} · {} missing · {} excluded", s.missing, s.excluded)
}

pub(crate) fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_style(TableComponent::VerticalLines, '│')
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.to_vec());
    t
}

/// The metric table of a run.
pub fn criteria_table(summary: &RunSummary) -> String {
    let mut t = table(&["criterion", "value", "95% interval", "counts"]);
    for c in &summary.criteria {
        t.add_row(vec![
            c.criterion.clone(),
            value_cell(c),
            interval_cell(c),
            counts_cell(c),
        ]);
    }
    t.to_string()
}

/// The slice table: one line per slice value and criterion; small slices are marked.
pub fn slices_table(summary: &RunSummary) -> Option<String> {
    if summary.slices.is_empty() {
        return None;
    }
    let mut t = table(&["slice", "criterion", "value", "95% interval", "counts"]);
    for s in &summary.slices {
        let mut label = format!("{} = {} (n={})", s.key, s.value, s.support);
        if s.below_min_support {
            label.push_str(&format!(" ⚠ below {}", summary.min_slice_support));
        }
        for (i, c) in s.criteria.iter().enumerate() {
            let first = if i == 0 { label.clone() } else { String::new() };
            t.add_row(vec![
                first,
                c.criterion.clone(),
                value_cell(c),
                interval_cell(c),
                counts_cell(c),
            ]);
        }
    }
    Some(t.to_string())
}

/// `Cache: …` and `Stages: …` lines.
///
/// A pipeline's optional stages (`rewrite`, `rerank`) are listed only when they were looked up,
/// in pipeline order; `retrieve` counts every retrieve call (each lane and query).
pub fn cache_lines(summary: &RunSummary) -> String {
    let c = &summary.cache;
    let mut stages = Vec::new();
    if !c.rewrite.is_zero() {
        stages.push(format!(
            "rewrite {} hit/{} miss",
            c.rewrite.hit, c.rewrite.miss
        ));
    }
    stages.push(format!(
        "retrieve {} hit/{} miss",
        c.retrieve.hit, c.retrieve.miss
    ));
    if !c.rerank.is_zero() {
        stages.push(format!(
            "rerank {} hit/{} miss",
            c.rerank.hit, c.rerank.miss
        ));
    }
    stages.push(format!(
        "generate {} hit/{} miss",
        c.generate.hit, c.generate.miss
    ));
    format!(
        "Cache: execution {} hit/{} miss; judgment {} hit/{} miss\nStages: {}\n",
        c.execution.hit,
        c.execution.miss,
        c.judgment.hit,
        c.judgment.miss,
        stages.join("; ")
    )
}

/// `Judges: N calls (M from cache) · …`: calls sent, served from cache, and — when there were
/// any — the extra requests (retries, repairs) and the failed calls, then tokens and cost (or
/// `no prices configured`).
pub fn judges_line(j: &oloproof_core::summary::JudgeUsage) -> String {
    let mut extra = String::new();
    if j.retries > 0 {
        extra.push_str(&format!(
            "; {} retr{}",
            j.retries,
            if j.retries == 1 { "y" } else { "ies" }
        ));
    }
    if j.failed_calls > 0 {
        extra.push_str(&format!("; {} failed", j.failed_calls));
    }
    format!(
        "Judges: {} calls ({} from cache{extra}) · {} input + {} output tokens · ${:.4}",
        j.calls, j.cached_calls, j.input_tokens, j.output_tokens, j.cost_usd
    )
}

/// `Failure modes: faithfulness — fabrication 3 · wrong_entity 1 (cases)`, one line per
/// criterion whose judge named any; empty when none did.
pub fn failure_mode_lines(summary: &RunSummary) -> String {
    let mut out = String::new();
    for c in summary
        .criteria
        .iter()
        .filter(|c| !c.failure_modes.is_empty())
    {
        let mut modes: Vec<(&String, &u64)> = c.failure_modes.iter().collect();
        // Most frequent first, then by name.
        modes.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let listed: Vec<String> = modes.iter().map(|(m, n)| format!("{m} {n}")).collect();
        out.push_str(&format!(
            "Failure modes: {} — {} (cases the judge said so of)\n",
            c.criterion,
            listed.join(" · ")
        ));
    }
    out
}

/// The external scores of a recorded dataset (Ragas' columns) beside our criterion of the same
/// metric: their mean, the pairs where both sides have a value, Spearman's ρ, the mean absolute
/// difference and the cases where only one side has a value. `None` without external scores.
pub fn external_scores_table(summary: &RunSummary) -> Option<String> {
    if summary.external_scores.is_empty() {
        return None;
    }
    let mut t = table(&[
        "column",
        "our criterion",
        "theirs (mean)",
        "ours (mean)",
        "pairs",
        "Spearman ρ",
        "mean |Δ|",
        "one side only",
    ]);
    let f = |x: Option<f64>| x.map_or_else(|| "—".to_string(), |v| format!("{v:.3}"));
    for e in &summary.external_scores {
        let ours = e
            .criterion
            .as_ref()
            .and_then(|c| summary.criteria.iter().find(|s| &s.criterion == c))
            .and_then(|c| c.value);
        t.add_row(vec![
            e.column.clone(),
            e.criterion
                .clone()
                .unwrap_or_else(|| "— (no evaluator)".into()),
            format!("{} ({} / {} cases)", f(e.mean), e.defined, e.cases),
            f(ours),
            e.pairs.to_string(),
            f(e.spearman),
            f(e.mean_abs_diff),
            if e.criterion.is_some() {
                format!("{} ours · {} theirs", e.ours_only, e.theirs_only)
            } else {
                "—".into()
            },
        ]);
    }
    Some(t.to_string())
}

/// The whole `oloproof run` report.
pub fn run_report(summary: &RunSummary) -> String {
    let mut out = format!(
        "Run {} · {} {} · {} cases\n",
        summary.run_id, summary.system, summary.version, summary.cases
    );
    out.push_str(&criteria_table(summary));
    out.push('\n');
    if let Some(slices) = slices_table(summary) {
        out.push_str(&format!(
            "Slices (exploratory; ⚠ marks fewer than {} cases)\n",
            summary.min_slice_support
        ));
        out.push_str(&slices);
        out.push('\n');
    }
    out.push_str(&cache_lines(summary));
    if let Some(j) = &summary.judges {
        out.push_str(&judges_line(j));
        out.push('\n');
    }
    for a in &summary.repeat_agreement {
        let alpha = a
            .alpha
            .map(|x| format!("{x:.3}"))
            .unwrap_or_else(|| "undefined".into());
        out.push_str(&format!(
            "Repeats: {} judged {}× — {} / {} cases identical in every repeat · Krippendorff's α ({}) {alpha}\n",
            a.criterion, a.repeats, a.identical, a.cases, a.level
        ));
    }
    out.push_str(&failure_mode_lines(summary));
    if let Some(t) = external_scores_table(summary) {
        out.push_str("External scores (recorded in the dataset) beside ours\n");
        out.push_str(&t);
        out.push('\n');
    }
    if summary.errors > 0 {
        out.push_str(&format!(
            "Errors: {} of {} cases ended in an error; their criteria are counted as missing (oloproof show {} --case ID)\n",
            summary.errors, summary.cases, summary.run_id
        ));
    }
    for c in &summary.incomplete_criteria {
        out.push_str(&format!(
            "Incomplete criterion: {} is missing on {} of {} cases ({:.1}%), above the allowed {:.1}% (max_error_rate); oloproof show {} --case ID says why\n",
            c.criterion,
            c.missing,
            c.cases,
            c.share() * 100.0,
            c.max_error_rate * 100.0,
            summary.run_id
        ));
    }
    if summary.done < summary.cases {
        out.push_str(&format!(
            "Incomplete: {} of {} cases finished; resume with `oloproof run --resume {}`\n",
            summary.done, summary.cases, summary.run_id
        ));
    }
    out
}

/// Formats Unix milliseconds as `YYYY-MM-DD HH:MM:SS` UTC.
pub fn format_utc(ms: i64) -> String {
    let (y, m, d, h, mi, s) = oloproof_metrics::rag::freshness::utc_parts(ms);
    format!("{y:04}-{m:02}-{d:02} {h:02}:{mi:02}:{s:02}")
}

/// `oloproof runs`: newest first.
pub fn runs_table(runs: &[RunRecord]) -> String {
    if runs.is_empty() {
        return "No runs in this store yet. Start one with `oloproof run DIR`.\n".to_string();
    }
    let mut t = table(&[
        "run",
        "created (UTC)",
        "system",
        "status",
        "cases",
        "headline",
    ]);
    for r in runs {
        let system: Value = serde_json::from_str(&r.settings_json).unwrap_or(Value::Null);
        let name = system
            .pointer("/system/name")
            .and_then(Value::as_str)
            .unwrap_or("?");
        let version = system
            .pointer("/system/version")
            .and_then(Value::as_str)
            .unwrap_or("?");
        let headline = r
            .summary_json
            .as_deref()
            .and_then(|s| serde_json::from_str::<RunSummary>(s).ok())
            .and_then(|s| s.criteria.first().cloned())
            .map(|c| format!("{} {}", c.criterion, value_cell(&c)))
            .unwrap_or_else(|| "—".to_string());
        let intervention = system
            .pointer("/intervention/label")
            .and_then(Value::as_str);
        let status = match (&r.parent, intervention) {
            (Some(parent), Some(label)) => format!("{} · {label} of {parent}", r.status),
            _ => r.status.to_string(),
        };
        t.add_row(vec![
            r.id.clone(),
            format_utc(r.created_ms),
            format!("{name} {version}"),
            status,
            format!("{}/{}", r.done_count, r.case_count),
            headline,
        ]);
    }
    format!("{t}\n")
}

fn verdict_text(v: &CriterionVerdict) -> String {
    let mut s = match &v.verdict {
        Verdict::Pass => "pass".to_string(),
        Verdict::Fail => "fail".to_string(),
        Verdict::Score { value } => format!("score {value:.4}"),
        Verdict::Missing { error } => format!("missing: {error}"),
        Verdict::Excluded { reason } => format!("excluded: {reason}"),
    };
    if let Some(p) = v.detail.get("best_relevant_position") {
        s.push_str(&format!(
            " (best relevant position {})",
            p.as_u64()
                .map(|n| n.to_string())
                .unwrap_or_else(|| "none".into())
        ));
    }
    // A classifier: the label's probability against its threshold.
    if let (Some(label), Some(p), Some(threshold), Some(_)) = (
        v.detail.get("label").and_then(Value::as_str),
        v.detail.get("probability").and_then(Value::as_f64),
        v.detail.get("threshold").and_then(Value::as_f64),
        v.detail.get("pass_when"),
    ) {
        s.push_str(&format!(" (p({label}) {p:.4}, threshold {threshold})"));
    }
    if v.detail.get("disagreement").and_then(Value::as_bool) == Some(true) {
        let judges: Vec<&str> = v
            .detail
            .get("judges")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        s.push_str(&format!(" (judges disagree: {})", judges.join(", ")));
    }
    if let Some(Value::Array(bad)) = v.detail.get("invalid") {
        if !bad.is_empty() {
            s.push_str(&format!(
                " (not in context: {})",
                bad.iter()
                    .map(|b| b.as_str().unwrap_or("?"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    s
}

/// A G-Eval rubric's criterion and evaluation steps (`rubric_judge` with
/// `evaluation_criterion:`), as `show --case` lists them; empty for any other verdict.
fn evaluation_steps_text(detail: &Value) -> String {
    let result = detail.get("result").unwrap_or(detail);
    let Some(Value::Array(steps)) = result.get("evaluation_steps") else {
        return String::new();
    };
    let criterion = result
        .get("evaluation_criterion")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let by = if result.get("steps_derived").and_then(Value::as_bool) == Some(true) {
        "written by the judge"
    } else {
        "as configured"
    };
    let mut out = format!(
        "    evaluation steps ({by}) for: {}\n",
        one_line(criterion, 200)
    );
    for (i, step) in steps.iter().enumerate() {
        out.push_str(&format!(
            "      {}. {}\n",
            i + 1,
            one_line(step.as_str().unwrap_or("?"), 200)
        ));
    }
    out
}

fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        format!("{}…", flat.chars().take(max).collect::<String>())
    } else {
        flat
    }
}

/// `oloproof show RUN --case ID`: the full trace of one case.
pub fn case_report(
    run_id: &str,
    case: &Case,
    trace: Option<&Trace>,
    verdicts: &[CriterionVerdict],
) -> String {
    let mut out = format!("Case {} · {run_id}\n", case.id);
    out.push_str(&format!("Input: {}\n", Value::Object(case.input.clone())));
    if let Some(a) = &case.expected.answer {
        out.push_str(&format!("Expected answer: {a}\n"));
    }
    let Some(trace) = trace else {
        out.push_str("Not run yet (pending).\n");
        return out;
    };
    let relevant: std::collections::HashSet<&str> = case
        .expected
        .relevant
        .iter()
        .flatten()
        .filter(|r| r.grade >= 1.0)
        .map(|r| r.doc_id.as_str())
        .collect();
    out.push_str(&pipeline::flow_text(case, trace));
    if let Some(r) = &trace.retrieval {
        out.push_str(&format!(
            "Retrieval{}: {} candidate{} at depth {}{}\n",
            r.query
                .as_deref()
                .map(|q| format!(" of \"{q}\""))
                .unwrap_or_default(),
            r.candidates.len(),
            if r.candidates.len() == 1 { "" } else { "s" },
            r.depth,
            if trace.cache.retrieve == Some(true) {
                " (cached)"
            } else {
                ""
            }
        ));
        let ctx = trace.context.as_ref();
        for (i, c) in r.candidates.iter().enumerate() {
            let pos = i + 1;
            let status = match ctx {
                Some(ctx) if ctx.passages.iter().any(|p| p.position == Some(pos)) => {
                    let t = ctx
                        .passages
                        .iter()
                        .find(|p| p.position == Some(pos))
                        .and_then(|p| p.tokens);
                    format!(
                        "in context{}",
                        t.map(|t| format!(", {t} tokens")).unwrap_or_default()
                    )
                }
                Some(ctx) => match ctx.dropped.iter().find(|d| d.position == pos) {
                    Some(d) if d.reason == DropReason::TokenBudget => {
                        format!(
                            "dropped: token budget{}",
                            d.tokens
                                .map(|t| format!(", {t} tokens"))
                                .unwrap_or_default()
                        )
                    }
                    _ => "below top_k".to_string(),
                },
                None => String::new(),
            };
            let id = match &c.chunk_id {
                Some(ch) => format!("{} [{ch}]", c.doc_id),
                None => c.doc_id.clone(),
            };
            let mark = if relevant.contains(c.doc_id.as_str()) {
                " ★ relevant"
            } else {
                ""
            };
            let score = c.score.map(|s| format!(" score {s}")).unwrap_or_default();
            out.push_str(&format!("  {pos:>2}. {id}{score} · {status}{mark}\n"));
            if let Some(text) = &c.text {
                out.push_str(&format!("      {}\n", one_line(text, 110)));
            }
        }
    }
    if let Some(ctx) = &trace.context {
        out.push_str(&format!(
            "Context: {} passage{}{}{}\n",
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
        ));
    }
    if trace.generation.is_some() {
        out.push_str(&format!(
            "Answer{}: {}\n",
            if trace.cache.generate == Some(true) {
                " (cached)"
            } else {
                ""
            },
            trace
                .answer()
                .map(|a| one_line(a, 400))
                .unwrap_or_else(|| "(no answer field)".into())
        ));
        let cites = trace.citations();
        out.push_str(&format!(
            "Citations: {}\n",
            if cites.is_empty() {
                "none".to_string()
            } else {
                cites.join(", ")
            }
        ));
    }
    if let Some(e) = &trace.error {
        out.push_str(&format!("Error: {}\n", e.summary()));
        if let Some(tb) = &e.traceback {
            for line in tb.lines() {
                out.push_str(&format!("  {line}\n"));
            }
        }
        if !e.stderr_tail.is_empty() {
            out.push_str("Worker stderr (last lines):\n");
            for line in &e.stderr_tail {
                out.push_str(&format!("  {line}\n"));
            }
        }
    }
    let tail_shown = trace.error.as_ref().is_some_and(|e| {
        !e.stderr_tail.is_empty() && trace.stderr.iter().all(|l| e.stderr_tail.contains(l))
    });
    if !trace.stderr.is_empty() && !tail_shown {
        out.push_str(&format!("Stderr ({} lines):\n", trace.stderr.len()));
        for line in trace.stderr.iter().take(20) {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out.push_str("Verdicts:\n");
    let width = verdicts
        .iter()
        .map(|v| v.criterion.len())
        .max()
        .unwrap_or(0);
    // A judge call shared by several criteria (the same request and reply: RAGChecker's
    // eleven types, factual_correctness and noise_sensitivity) is printed once.
    let mut shown_under: std::collections::HashMap<String, &str> = std::collections::HashMap::new();
    for v in verdicts {
        out.push_str(&format!("  {:width$}  {}\n", v.criterion, verdict_text(v)));
        if let Some(Value::Array(calls)) = v.detail.get("calls") {
            for c in calls {
                let template = c.get("template").and_then(Value::as_str).unwrap_or("?");
                let cached = if c.get("cached").and_then(Value::as_bool).unwrap_or(false) {
                    " (cached)"
                } else {
                    ""
                };
                let key =
                    serde_json::json!([c.get("judge"), template, c.get("repeat"), c.get("raw")])
                        .to_string();
                if let Some(first) = shown_under.get(&key) {
                    out.push_str(&format!(
                        "    judge call {template}{cached}: the one shown under {first}\n"
                    ));
                    continue;
                }
                shown_under.insert(key, v.criterion.as_str());
                out.push_str(&format!("    judge call {template}{cached}\n"));
                if let Some(raw) = c.get("raw").and_then(Value::as_str) {
                    out.push_str(&format!("      raw:    {}\n", one_line(raw, 300)));
                }
                if let Some(parsed) = c.get("parsed") {
                    out.push_str(&format!(
                        "      parsed: {}\n",
                        one_line(&parsed.to_string(), 300)
                    ));
                }
            }
        }
        out.push_str(&evaluation_steps_text(&v.detail));
        // A missing verdict's failed judge call: what came back, and how many requests.
        if let Some(f) = v.detail.get("failed_call").filter(|f| f.is_object()) {
            let kind = f.get("kind").and_then(Value::as_str).unwrap_or("error");
            let attempts = f.get("attempts").and_then(Value::as_u64).unwrap_or(0);
            out.push_str(&format!(
                "    failed judge call ({kind}) after {attempts} request{}\n",
                if attempts == 1 { "" } else { "s" }
            ));
            match f.get("raw").and_then(Value::as_str) {
                Some(raw) => out.push_str(&format!("      raw:    {}\n", one_line(raw, 300))),
                None => out.push_str("      raw:    (no reply received)\n"),
            }
            let tokens = (
                f.get("input_tokens").and_then(Value::as_u64).unwrap_or(0),
                f.get("output_tokens").and_then(Value::as_u64).unwrap_or(0),
            );
            if tokens != (0, 0) {
                out.push_str(&format!(
                    "      tokens: {} input + {} output (billed, unusable)\n",
                    tokens.0, tokens.1
                ));
            }
        }
    }
    out.push_str(&claims::claims_text(verdicts));
    out
}

/// `oloproof calibrate`'s report.
pub fn calibration_report(c: &oloproof_core::calibration::Calibration) -> String {
    let est = |e: &oloproof_core::calibration::Estimate| match (e.value, e.interval) {
        (Some(v), Some([lo, hi])) => format!("{v:.3}  [{lo:.3}, {hi:.3}]"),
        (Some(v), None) => format!("{v:.3}"),
        _ => "undefined".to_string(),
    };
    let mut out = format!(
        "Calibration {} of judge {} on {} · {} labelled items · {} missing\n",
        c.id,
        c.judge,
        c.evaluator,
        c.n,
        c.missing.len()
    );
    for (name, e) in [
        ("agreement", &c.agreement),
        ("kappa", &c.kappa),
        ("kappa (linear)", &c.kappa_linear),
        ("kappa (quadratic)", &c.kappa_quadratic),
        ("spearman", &c.spearman),
        ("kendall tau-b", &c.kendall_tau_b),
    ] {
        out.push_str(&format!("  {name:<18} {}\n", est(e)));
    }
    let cells: Vec<String> = c
        .confusion
        .iter()
        .flat_map(|(h, row)| row.iter().map(move |(m, n)| format!("{h}→{m}: {n}")))
        .collect();
    out.push_str(&format!(
        "Confusion (human → judge): {}\n",
        cells.join(", ")
    ));
    if !c.missing.is_empty() {
        out.push_str(&format!(
            "Missing (judge errors): {}\n",
            c.missing.join(", ")
        ));
    }
    let weights = if c.weights == "none" {
        String::new()
    } else {
        format!(" ({})", c.weights)
    };
    out.push_str(&format!(
        "Threshold: kappa{weights} ≥ {:.2}, declared in oloproof.yaml → {}\n",
        c.min_kappa,
        if c.passed {
            "PASS: this judge may gate"
        } else {
            "FAIL: this judge may not gate"
        }
    ));
    out
}

/// `oloproof lost-in-the-middle`'s report.
pub fn position_report(r: &oloproof_core::position::PositionReport) -> String {
    let mut out = format!(
        "Lost in the middle: {} with the gold passage among up to {} distractors · {} cases (observed; no population claim)\n",
        r.criterion, r.distractors, r.cases
    );
    for p in &r.positions {
        out.push_str(&format!(
            "  {:<6}  {:>6}  {:<17}  {}  · {}\n",
            p.position.name(),
            value_cell(&p.summary),
            interval_cell(&p.summary),
            counts_cell(&p.summary),
            p.run_id
        ));
    }
    if !r.left_out.is_empty() {
        let ids: Vec<String> = r
            .left_out
            .iter()
            .map(|(id, why)| format!("{id} ({why})"))
            .collect();
        out.push_str(&format!("Left out: {}\n", ids.join(", ")));
    }
    out.push_str("The positions run on the same cases; read differences as exploratory.\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formatting() {
        assert_eq!(format_utc(0), "1970-01-01 00:00:00");
        assert_eq!(format_utc(1_790_000_000_000), "2026-09-21 14:13:20");
    }
}
