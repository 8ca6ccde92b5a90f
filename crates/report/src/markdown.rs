//! The compact Markdown report (`oloproof report ID -o report.md`), sized for a pull-request
//! comment: a table, the gate line for a comparison, and the top regressions or failing cases,
//! capped at [`LISTED`].
//!
//! Values are stored system and model output: table cells have `|` escaped and every `<`, `>`
//! and `&` written as an entity, so no value can open an HTML tag in a rendered comment.
//!
//! ```
//! use oloproof_report::markdown::cell;
//! assert_eq!(cell("a|<b>"), "a\\|&lt;b&gt;");
//! ```

use std::fmt::Write as _;

use oloproof_core::comparison::{ChangeDirection, Comparison, PairwiseComparison};
use oloproof_core::diagnosis::Diagnosis;
use oloproof_core::run::LoadedRun;
use oloproof_core::summary::RunSummary;
use oloproof_core::verdict::Verdict;

use crate::compare::{difference_text, format_points};
use crate::html::failing_cases;
use crate::{counts_cell, interval_cell, value_cell};

/// Most cases listed.
pub const LISTED: usize = 10;

/// Text safe in a Markdown table cell (and anywhere in a comment).
pub fn cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '|' => out.push_str("\\|"),
            '`' => out.push('\''),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn more(out: &mut String, total: usize) {
    if total > LISTED {
        let _ = writeln!(out, "- … and {} more", total - LISTED);
    }
}

/// The Markdown report of a run.
pub fn run_markdown(run: &LoadedRun, summary: &RunSummary) -> String {
    let mut out = format!(
        "### Oloproof run `{}`\n\n{} {} · {} of {} cases · {} errors\n\n",
        cell(&summary.run_id),
        cell(&summary.system),
        cell(&summary.version),
        summary.done,
        summary.cases,
        summary.errors
    );
    out.push_str("| criterion | value | 95% interval | counts |\n|---|---:|---|---|\n");
    for c in &summary.criteria {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            cell(&c.criterion),
            value_cell(c),
            interval_cell(c),
            counts_cell(c)
        );
    }
    if !summary.external_scores.is_empty() {
        let f = |x: Option<f64>| x.map_or_else(|| "—".to_string(), |v| format!("{v:.3}"));
        out.push_str("\n**External scores (recorded in the dataset) beside ours**\n\n| column | our criterion | theirs (mean) | pairs | Spearman ρ | mean \\|Δ\\| | one side only |\n|---|---|---:|---:|---:|---:|---|\n");
        for e in &summary.external_scores {
            let _ = writeln!(
                out,
                "| {} | {} | {} ({} / {}) | {} | {} | {} | {} ours · {} theirs |",
                cell(&e.column),
                cell(e.criterion.as_deref().unwrap_or("—")),
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
    }
    let failing = failing_cases(run);
    let _ = writeln!(
        out,
        "\n**Failing cases: {} of {}**\n",
        failing.len(),
        run.cases.len()
    );
    for (case, trace, verdicts) in failing.iter().take(LISTED) {
        let mut parts: Vec<String> = verdicts
            .iter()
            .filter_map(|v| match &v.verdict {
                Verdict::Fail => Some(format!("{} fail", v.criterion)),
                Verdict::Missing { .. } => Some(format!("{} missing", v.criterion)),
                _ => None,
            })
            .collect();
        if let Some(e) = trace.as_ref().and_then(|t| t.error.as_ref()) {
            parts.push(format!("error: {}", e.summary()));
        }
        let _ = writeln!(out, "- `{}`: {}", cell(&case.id), cell(&parts.join(", ")));
    }
    more(&mut out, failing.len());
    out
}

/// The Markdown report of a comparison: differences, decisions, gate line, top regressions.
pub fn comparison_markdown(c: &Comparison) -> String {
    let mut out = format!(
        "### Oloproof comparison `{}`\n\nCandidate `{}` against baseline `{}` · {} shared cases\n\n",
        cell(&c.id),
        cell(&c.candidate),
        cell(&c.baseline),
        c.cases.shared
    );
    out.push_str("| criterion | difference (points) |\n|---|---|\n");
    for line in &c.criteria {
        let _ = writeln!(
            out,
            "| {} | {} |",
            cell(&line.criterion),
            cell(&difference_text(line))
        );
    }
    out.push_str("\n| decision | criterion | margin | interval | verdict | reason |\n|---|---|---:|---|---|---|\n");
    for d in &c.decisions {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            cell(&d.name),
            cell(&d.criteria.join(", ")),
            d.margin_points
                .map(|m| format!("{m:.1}"))
                .or_else(|| d.max_increase_percent.map(|m| format!("+{m:.1}%")))
                .unwrap_or_else(|| "—".into()),
            d.interval_points
                .map(|[lo, hi]| format!("[{}, {}]", format_points(lo), format_points(hi)))
                .or_else(|| d
                    .ratio_interval
                    .map(|[lo, hi]| format!("×[{lo:.3}, {hi:.3}]")))
                .unwrap_or_else(|| "—".into()),
            d.verdict.as_str(),
            cell(&d.reason)
        );
    }
    if let Some(p) = &c.pairwise {
        out.push_str(&pairwise_markdown(p));
    }
    let _ = writeln!(out, "\n**Gate: {}**\n", cell(&crate::compare::gate_text(c)));
    let regressions: Vec<_> = c
        .changes
        .iter()
        .filter(|ch| ch.direction == ChangeDirection::Regression)
        .collect();
    let _ = writeln!(out, "**Regressions: {}**\n", regressions.len());
    for ch in regressions.iter().take(LISTED) {
        let parts: Vec<String> = ch
            .changes
            .iter()
            .filter(|v| v.direction == ChangeDirection::Regression)
            .map(|v| format!("{} {} → {}", v.criterion, v.baseline, v.candidate))
            .collect();
        let _ = writeln!(
            out,
            "- `{}`: {}",
            cell(&ch.case_id),
            cell(&parts.join(", "))
        );
    }
    more(&mut out, regressions.len());
    out
}

/// The pairwise section of a comparison's Markdown: the summary, then the cases (losses,
/// missing, excluded and ties first), capped at [`LISTED`].
pub fn pairwise_markdown(p: &PairwiseComparison) -> String {
    let mut out = format!("\n#### {}\n\n", cell(&crate::compare::pairwise_heading(p)));
    for line in crate::compare::pairwise_summary(p) {
        let _ = writeln!(out, "- {}", cell(&line));
    }
    out.push_str("\n| case | outcome | shown first | first call, swapped call | length Δ (characters, words) |\n|---|---|---|---|---:|\n");
    let cases = crate::compare::pairwise_cases_ordered(p);
    for c in cases.iter().take(LISTED) {
        let mut outcome = c.outcome.as_str().to_string();
        if let Some(r) = &c.reason {
            outcome.push_str(&format!(" ({r})"));
        }
        if let Some(e) = &c.error {
            outcome.push_str(&format!(": {e}"));
        }
        let calls: Vec<&str> = c.calls.iter().map(|x| x.preferred.as_str()).collect();
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            cell(&c.case_id),
            cell(&outcome),
            c.first.map_or("—", |s| s.as_str()),
            if calls.is_empty() {
                "—".to_string()
            } else {
                calls.join(", ")
            },
            match (c.char_difference(), c.word_difference()) {
                (Some(ch), Some(w)) => format!("{ch:+}, {w:+}"),
                _ => "—".to_string(),
            }
        );
    }
    if cases.len() > LISTED {
        let _ = writeln!(out, "\n… and {} more", cases.len() - LISTED);
    }
    out
}

/// The Markdown report of a diagnosis: label counts and recovered or not.
pub fn diagnosis_markdown(d: &Diagnosis) -> String {
    let c = &d.content;
    let n = c.cases.len();
    let mut out = format!(
        "### Oloproof diagnosis `{}`\n\nRun `{}` · criterion `{}` · {} · {} failed cases diagnosed\n\n",
        cell(&d.id),
        cell(&c.run_id),
        cell(&c.criterion),
        cell(&c.intervention.describe()),
        n
    );
    out.push_str("| label | cases |\n|---|---:|\n");
    for (label, count) in d.label_counts() {
        let _ = writeln!(out, "| {label} | {count} |");
    }
    let _ = writeln!(
        out,
        "\nRecovered: {} of {n} · control passed: {} of {n}\n",
        d.recovered(),
        d.control_passed()
    );
    let mut cases: Vec<_> = c.cases.iter().collect();
    cases.sort_by(|a, b| a.case_id.cmp(&b.case_id));
    for x in cases.iter().take(LISTED) {
        let _ = writeln!(
            out,
            "- `{}`: {} ({})",
            cell(&x.case_id),
            cell(&x.label),
            cell(&x.reason)
        );
    }
    more(&mut out, cases.len());
    out
}
