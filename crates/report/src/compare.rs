//! Rendering of `oloproof compare` (the difference lines, exploratory slices, decisions and
//! the gate) and of `oloproof inspect sha256:<comparison>` (the cases whose verdict changed).
//!
//! ```
//! use oloproof_report::compare::format_points;
//! assert_eq!(format_points(0.0), "+0.0");
//! assert_eq!(format_points(-22.9), "-22.9");
//! ```

use oloproof_core::comparison::{
    CaseChange, ChangeDirection, Comparison, DecisionKind, DecisionResult, DifferenceLine,
    DifferenceMethod, Gate, ModelSource, PairwiseCase, PairwiseComparison, PairwiseOutcome,
    PairwiseTally,
};
use serde_json::Value;

/// Most case ids listed inline in a note before `…`.
const LISTED_IDS: usize = 5;

/// A number of points with its sign always shown and one decimal: `+0.0`, `-22.9`.
pub fn format_points(x: f64) -> String {
    let s = format!("{x:+.1}");
    if s == "-0.0" {
        "+0.0".to_string()
    } else {
        s
    }
}

/// `+0.0 points [-22.9, +22.9] · 13 paired · 0 missing · 0 excluded` (without the criterion).
pub fn difference_text(line: &DifferenceLine) -> String {
    let counts = format!(
        "{} paired · {} missing · {} excluded",
        line.paired, line.missing, line.excluded
    );
    if line.method == Some(DifferenceMethod::PairedBootstrapRatio) {
        return ratio_text(line, &counts);
    }
    let Some(estimate) = line.estimate_points else {
        return format!("no paired observations · {counts}");
    };
    let interval = match (line.interval_points, &line.no_interval) {
        (Some([lo, hi]), _) => format!("[{}, {}]", format_points(lo), format_points(hi)),
        (None, Some(why)) => format!("(no interval: {why})"),
        (None, None) => "(no interval)".to_string(),
    };
    format!("{} points {interval} · {counts}", format_points(estimate))
}

/// A lower-is-better line: `×1.052 [0.981, 1.120] · 412.3 vs 391.9 · 80 paired · …`.
fn ratio_text(line: &DifferenceLine, counts: &str) -> String {
    let values = line
        .values
        .map(|[c, b]| {
            format!(
                " · {} vs {}",
                crate::format_amount(c),
                crate::format_amount(b)
            )
        })
        .unwrap_or_default();
    let ratio = match line.ratio {
        Some(r) => format!("×{r:.3}"),
        None => "no ratio".to_string(),
    };
    let interval = match (line.ratio_interval, &line.no_interval) {
        (Some([lo, hi]), _) => format!("[{lo:.3}, {hi:.3}]"),
        (None, Some(why)) => format!("(no interval: {why})"),
        (None, None) => "(no interval)".to_string(),
    };
    format!("{ratio} {interval}{values} · {counts}")
}

/// A guardrail's test: `guardrail, at most +10.0% (ratio below 1.100)`.
pub fn guardrail_test(d: &DecisionResult) -> String {
    let m = d.max_increase_percent.unwrap_or(f64::NAN);
    format!(
        "guardrail, at most +{m:.1}% (ratio below {:.3})",
        1.0 + m / 100.0
    )
}

fn listed(ids: &[String]) -> String {
    let mut shown: Vec<&str> = ids.iter().take(LISTED_IDS).map(String::as_str).collect();
    if ids.len() > LISTED_IDS {
        shown.push("…");
    }
    shown.join(", ")
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn setting_value(v: &Value) -> String {
    match v {
        Value::Null => "unset".to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What a decision's criterion column says.
fn decision_criterion(d: &DecisionResult) -> String {
    match (d.kind, d.criteria.as_slice()) {
        (DecisionKind::NoRegression, [one]) => one.clone(),
        (DecisionKind::NoRegression, _) => "pass/fail criteria".to_string(),
        (_, criteria) => criteria.join(", "),
    }
}

/// What a decision's test column says: `non-inferiority, margin 5.0 points`.
fn decision_test(d: &DecisionResult) -> String {
    match d.kind {
        DecisionKind::NonInferiority => format!(
            "non-inferiority, margin {:.1} points",
            d.margin_points.unwrap_or(f64::NAN)
        ),
        DecisionKind::Superiority => "superiority".to_string(),
        DecisionKind::NoRegression => format!("no regression on {}", listed(&d.cases)),
        DecisionKind::PairwisePreference => pairwise_test(d),
        DecisionKind::Guardrail => guardrail_test(d),
    }
}

/// What a pairwise decision's test column says: `win rate above 50.0% (lower bound)`.
pub fn pairwise_test(d: &DecisionResult) -> String {
    format!(
        "win rate above {:.1}% (lower bound)",
        d.min_win_rate_points.unwrap_or(f64::NAN)
    )
}

/// The `Decisions` block, columns aligned.
pub fn decisions_block(decisions: &[DecisionResult]) -> String {
    let rows: Vec<[String; 5]> = decisions
        .iter()
        .map(|d| {
            let reason = if d.detail.is_empty() {
                d.reason.clone()
            } else {
                format!("{} ({})", d.reason, d.detail.join("; "))
            };
            [
                d.name.clone(),
                decision_criterion(d),
                decision_test(d),
                d.verdict.as_str().to_string(),
                reason,
            ]
        })
        .collect();
    let mut widths = [0usize; 4];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::from("Decisions\n");
    for row in &rows {
        out.push_str("  ");
        for (cell, w) in row.iter().zip(widths) {
            let pad = w - cell.chars().count();
            out.push_str(cell);
            out.push_str(&" ".repeat(pad + 2));
        }
        out.push_str(&row[4]);
        out.push('\n');
    }
    out
}

/// `Gate: PASS (exit 0)` or `Gate: BLOCK (exit 3)`.
pub fn gate_line(gate: Gate) -> String {
    match gate {
        Gate::Pass => "Gate: PASS (exit 0)\n".to_string(),
        Gate::Block => "Gate: BLOCK (exit 3)\n".to_string(),
    }
}

/// A comparison's gate with its exit code: `PASS (exit 0)`, `BLOCK (exit 3)`, or, when the
/// pairwise judge failed on too many cases, `… but incomplete: pairwise judge errors above
/// max_missing_rate (exit 4)`.
pub fn gate_text(c: &Comparison) -> String {
    let gate = match c.gate {
        Gate::Pass => "PASS",
        Gate::Block => "BLOCK",
    };
    if c.pairwise_incomplete() {
        format!("{gate}, but incomplete: pairwise judge errors above max_missing_rate (exit 4)")
    } else {
        match c.gate {
            Gate::Pass => "PASS (exit 0)".to_string(),
            Gate::Block => "BLOCK (exit 3)".to_string(),
        }
    }
}

/// The notes that qualify a comparison: unshared cases, cases whose content differs, settings
/// that differ, criteria of one run only. Empty when the runs are like for like.
pub fn comparison_notes(c: &Comparison) -> String {
    let mut out = String::new();
    let sets = &c.cases;
    if !sets.only_in_candidate.is_empty() || !sets.only_in_baseline.is_empty() {
        let mut parts = Vec::new();
        if !sets.only_in_candidate.is_empty() {
            parts.push(format!(
                "{} only in the candidate ({})",
                sets.only_in_candidate.len(),
                listed(&sets.only_in_candidate)
            ));
        }
        if !sets.only_in_baseline.is_empty() {
            parts.push(format!(
                "{} only in the baseline ({})",
                sets.only_in_baseline.len(),
                listed(&sets.only_in_baseline)
            ));
        }
        out.push_str(&format!(
            "Compared over the {} shared cases only; {}\n",
            sets.shared,
            parts.join(", ")
        ));
    }
    if !sets.content_differs.is_empty() {
        out.push_str(&format!(
            "{} differ in content between the runs (input, expected or metadata): {}\n",
            plural(sets.content_differs.len(), "shared case", "shared cases"),
            listed(&sets.content_differs)
        ));
    }
    if !c.setting_differences.is_empty() {
        out.push_str("Settings differ between the runs (baseline → candidate):\n");
        for d in &c.setting_differences {
            out.push_str(&format!(
                "  {}: {} → {}\n",
                d.path,
                setting_value(&d.baseline),
                setting_value(&d.candidate)
            ));
        }
    }
    let mut one_side = Vec::new();
    one_side.extend(
        c.criteria_only_in_candidate
            .iter()
            .map(|n| format!("{n} (candidate)")),
    );
    one_side.extend(
        c.criteria_only_in_baseline
            .iter()
            .map(|n| format!("{n} (baseline)")),
    );
    if !one_side.is_empty() {
        out.push_str(&format!(
            "Not compared, in one run only: {}\n",
            one_side.join(", ")
        ));
    }
    out
}

/// The whole `oloproof compare` report.
pub fn comparison_report(c: &Comparison) -> String {
    let mut out = format!(
        "Comparison {} of {} against {} · {}\n",
        c.id,
        c.candidate,
        c.baseline,
        plural(c.cases.shared as usize, "shared case", "shared cases")
    );
    out.push_str(&comparison_notes(c));
    for line in &c.criteria {
        out.push_str(&format!("{}: {}\n", line.criterion, difference_text(line)));
    }
    if !c.exploratory.is_empty() {
        out.push_str("Exploratory (per slice; not decisions)\n");
        for s in &c.exploratory {
            out.push_str(&format!(
                "  {} = {} · {}: {}\n",
                s.key,
                s.value,
                s.line.criterion,
                difference_text(&s.line)
            ));
        }
    }
    if let Some(p) = &c.pairwise {
        out.push_str(&pairwise_heading(p));
        out.push('\n');
        for line in pairwise_summary(p) {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out.push_str(&stage_deltas_text(c));
    out.push_str(&decisions_block(&c.decisions));
    out.push_str(&format!("Gate: {}\n", gate_text(c)));
    out.push_str(&format!("Cases: oloproof inspect {}\n", c.id));
    out
}

/// The heading of a comparison's stage deltas.
pub const STAGE_DELTAS_HEADING: &str =
    "Pipeline stages, baseline → candidate (shared cases; descriptive, not decisions)";

/// A signed difference with `digits` decimals, never a signed zero: `+0.4`, `-1.2`, `+0.0`.
pub fn delta(x: f64, digits: usize) -> String {
    let text = format!("{x:+.digits$}");
    let zero = format!("{:+.digits$}", 0.0);
    let negative_zero = format!("{:+.digits$}", -0.0);
    if text == negative_zero {
        zero
    } else {
        text
    }
}

/// Per stage latency p50/p95 and per ranking stage recall@k, each `baseline → candidate
/// (Δ)`, one line per stage, as the text and HTML reports show them.
pub fn stage_delta_lines(c: &Comparison) -> Vec<(String, String)> {
    let Some(st) = &c.stages else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for l in &st.latency {
        let [b50, b95] = l.baseline_ms;
        let [c50, c95] = l.candidate_ms;
        out.push((
            format!("latency {}", l.stage),
            format!(
                "p50 {b50:.1} → {c50:.1} ms ({}) · p95 {b95:.1} → {c95:.1} ms ({}) · {} paired",
                delta(c50 - b50, 1),
                delta(c95 - b95, 1),
                l.paired
            ),
        ));
    }
    for r in &st.recall {
        out.push((
            format!("recall@{} {}", r.k, r.stage),
            format!(
                "{:.3} → {:.3} ({}) · {} paired",
                r.baseline,
                r.candidate,
                delta(r.candidate - r.baseline, 3),
                r.paired
            ),
        ));
    }
    out
}

/// The stage deltas block of `oloproof compare`; empty unless both runs recorded pipelines.
pub fn stage_deltas_text(c: &Comparison) -> String {
    let lines = stage_delta_lines(c);
    if lines.is_empty() {
        return String::new();
    }
    let width = lines
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = format!("{STAGE_DELTAS_HEADING}\n");
    for (k, v) in lines {
        out.push_str(&format!("  {k:width$}  {v}\n"));
    }
    out
}

/// `Pairwise preference (judge pj: gpt-4o · pairwise@2 · both orders) · report only`.
pub fn pairwise_heading(p: &PairwiseComparison) -> String {
    format!(
        "Pairwise preference (judge {}: {} · {} · both orders){}",
        p.judge,
        p.self_preference.judge_model,
        p.template,
        if p.exploratory {
            " · report only, not a decision"
        } else {
            ""
        }
    )
}

fn rate_text(points: Option<f64>) -> String {
    points.map_or_else(|| "—".to_string(), |x| format!("{x:.1}%"))
}

fn signed(x: f64) -> String {
    format_points(x)
}

/// A judged group as `18 wins, 0 losses, 2 ties (win rate 100.0%)`; `None` when it has no
/// judged case.
fn tally_text(t: &PairwiseTally) -> Option<String> {
    if t.wins + t.losses + t.ties == 0 {
        return None;
    }
    Some(format!(
        "{} wins, {} losses, {} ties (win rate {})",
        t.wins,
        t.losses,
        t.ties,
        rate_text(t.win_rate_points)
    ))
}

/// A p-value with three significant digits, `< 0.0001` below that.
pub fn format_p(p: f64) -> String {
    if p < 1e-4 {
        "< 0.0001".to_string()
    } else if p >= 0.1 {
        format!("{p:.3}")
    } else {
        // Three significant digits, as a plain decimal.
        let digits = (-p.log10()).ceil() as usize + 2;
        format!("{p:.digits$}")
    }
}

/// The summary lines of a pairwise comparison (no indentation): counts, the win rate with its
/// interval and the sign test, position consistency, lengths, self-preference, calibration and
/// the judge calls.
pub fn pairwise_summary(p: &PairwiseComparison) -> Vec<String> {
    let t = &p.tally;
    let mut lines = vec![format!(
        "{} shared cases: {} wins · {} losses · {} ties · {} missing{} · {} excluded",
        p.cases.len(),
        t.wins,
        t.losses,
        t.ties,
        p.missing,
        if p.judge_errors > 0 {
            format!(" ({} judge errors)", p.judge_errors)
        } else {
            String::new()
        },
        p.excluded
    )];
    let decided = t.wins + t.losses;
    lines.push(match (t.win_rate_points, p.interval_points) {
        (Some(rate), Some([lo, hi])) => format!(
            "win rate among {decided} decided cases: {rate:.1}% [{lo:.1}, {hi:.1}] (exact 95%) · sign test p = {}",
            p.sign_test_p.map_or_else(|| "—".to_string(), format_p)
        ),
        _ => "win rate: no decided case (none won or lost)".to_string(),
    });
    let c = &p.consistency;
    lines.push(match c.agreed_points {
        Some(share) => format!(
            "position consistency: {} of {} judged cases agreed in both orders ({share:.1}%) · single calls preferred the first position {}, the second {}, tie {} · candidate shown first in {} of {}",
            c.agreed,
            c.judged,
            c.first_position_preferred,
            c.second_position_preferred,
            c.tie_calls,
            c.candidate_shown_first,
            c.judged
        ),
        None => "position consistency: no case judged".to_string(),
    });
    let l = &p.length;
    if let (Some(chars), Some(words)) = (l.mean_char_difference, l.mean_word_difference) {
        let mut line = format!(
            "length (candidate − baseline, mean of {} cases): {} characters, {} words",
            l.cases,
            signed(chars),
            signed(words)
        );
        for (what, t) in [
            ("candidate longer", &l.candidate_longer),
            ("candidate shorter", &l.candidate_shorter),
            ("same length", &l.same_length),
        ] {
            if let Some(text) = tally_text(t) {
                line.push_str(&format!(" · {what}: {text}"));
            }
        }
        lines.push(line);
    }
    let sp = &p.self_preference;
    let generators: Vec<String> = sp
        .generators
        .iter()
        .map(|g| {
            format!(
                "{} {} ({}, family {})",
                g.side.as_str(),
                g.model,
                match g.source {
                    ModelSource::Recorded => format!("recorded on {} cases", g.cases),
                    ModelSource::Declared => "declared".to_string(),
                },
                g.family
            )
        })
        .collect();
    let generators = if generators.is_empty() {
        "generators unknown (declare `generator_model` in `pairwise:`)".to_string()
    } else {
        format!("generators: {}", generators.join(", "))
    };
    lines.push(if sp.same_family.is_empty() {
        format!(
            "self-preference: judge family {} · {generators} · no shared family",
            sp.judge_family
        )
    } else {
        let sides: Vec<&str> = sp.same_family.iter().map(|s| s.as_str()).collect();
        format!(
            "self-preference RISK: the judge's family ({}) is the {}'s generator family · {generators}",
            sp.judge_family,
            sides.join(" and the ")
        )
    });
    if !p.calibrated {
        lines.push(if p.exploratory {
            format!("judge {} has no passing pairwise calibration (reported, not decided)", p.judge)
        } else {
            format!(
                "judge {} has no passing pairwise calibration: deciding by `allow_uncalibrated: true`",
                p.judge
            )
        });
    }
    let u = &p.usage;
    lines.push(format!(
        "judge calls: {} answered ({} cached) · {} failed · {} input / {} output tokens{}",
        u.calls,
        u.cached,
        u.failed,
        u.input_tokens,
        u.output_tokens,
        u.cost_usd
            .map(|c| format!(" · ${c:.4}"))
            .unwrap_or_default()
    ));
    lines
}

/// The pairwise cases, most telling first: losses, missing, excluded, ties, then wins (each
/// group in the baseline's order).
pub fn pairwise_cases_ordered(p: &PairwiseComparison) -> Vec<&PairwiseCase> {
    let rank = |o: PairwiseOutcome| match o {
        PairwiseOutcome::Loss => 0,
        PairwiseOutcome::Missing => 1,
        PairwiseOutcome::Excluded => 2,
        PairwiseOutcome::Tie => 3,
        PairwiseOutcome::Win => 4,
    };
    let mut cases: Vec<&PairwiseCase> = p.cases.iter().collect();
    cases.sort_by_key(|c| rank(c.outcome));
    cases
}

/// One pairwise case as text: `win · candidate first: candidate, candidate · +11 characters,
/// +2 words` or `missing judge_error (…)`.
pub fn pairwise_case_text(c: &PairwiseCase) -> String {
    let mut out = c.outcome.as_str().to_string();
    if let Some(r) = &c.reason {
        out.push(' ');
        out.push_str(r);
    }
    if let Some(e) = &c.error {
        out.push_str(&format!(" ({e})"));
    }
    if let Some(first) = c.first {
        let calls: Vec<&str> = c.calls.iter().map(|x| x.preferred.as_str()).collect();
        out.push_str(&format!(
            " · {} shown first, then swapped: preferred {}",
            first.as_str(),
            calls.join(", ")
        ));
    }
    if let (Some(ch), Some(w)) = (c.char_difference(), c.word_difference()) {
        out.push_str(&format!(
            " · length {} characters, {} words",
            signed(ch as f64).trim_end_matches(".0"),
            signed(w as f64).trim_end_matches(".0")
        ));
    }
    out
}

fn change_line(change: &CaseChange) -> String {
    let parts: Vec<String> = change
        .changes
        .iter()
        .map(|v| format!("{} {} → {}", v.criterion, v.baseline, v.candidate))
        .collect();
    format!("  {}: {}\n", change.case_id, parts.join(", "))
}

/// `oloproof inspect sha256:<comparison>`: the cases whose verdict changed, regressions first,
/// then every pairwise case (losses, missing, excluded and ties first).
pub fn comparison_cases(c: &Comparison) -> String {
    let mut out = verdict_changes(c);
    if let Some(p) = &c.pairwise {
        out.push_str(&pairwise_heading(p));
        out.push('\n');
        for case in pairwise_cases_ordered(p) {
            out.push_str(&format!(
                "  {}: {}\n",
                case.case_id,
                pairwise_case_text(case)
            ));
        }
    }
    out
}

fn verdict_changes(c: &Comparison) -> String {
    let mut out = format!(
        "Comparison {} of {} against {} · {} of {} changed\n",
        c.id,
        c.candidate,
        c.baseline,
        c.changes.len(),
        plural(c.cases.shared as usize, "shared case", "shared cases")
    );
    if c.changes.is_empty() {
        out.push_str("No verdict changed on any shared case.\n");
        return out;
    }
    for (direction, heading) in [
        (ChangeDirection::Regression, "Regressed"),
        (ChangeDirection::Other, "Missing or excluded in one run"),
        (ChangeDirection::Improvement, "Improved"),
    ] {
        let group: Vec<&CaseChange> = c
            .changes
            .iter()
            .filter(|ch| ch.direction == direction)
            .collect();
        if group.is_empty() {
            continue;
        }
        out.push_str(&format!("{heading} ({})\n", group.len()));
        for ch in group {
            out.push_str(&change_line(ch));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use oloproof_core::comparison::{DecisionVerdict, DifferenceMethod};

    fn line(estimate: Option<f64>, interval: Option<[f64; 2]>) -> DifferenceLine {
        DifferenceLine {
            criterion: "answer_correct".into(),
            method: estimate.map(|_| DifferenceMethod::TangoScore),
            estimate_points: estimate,
            interval_points: interval,
            no_interval: None,
            paired: 13,
            missing: 0,
            excluded: 0,
            improved: None,
            regressed: None,
            values: None,
            ratio: None,
            ratio_interval: None,
        }
    }

    #[test]
    fn a_ratio_line_and_a_guardrail() {
        let l = DifferenceLine {
            criterion: "latency_total_p95".into(),
            method: Some(DifferenceMethod::PairedBootstrapRatio),
            values: Some([412.3, 391.9]),
            ratio: Some(1.052),
            ratio_interval: Some([0.981, 1.12]),
            ..line(None, None)
        };
        assert_eq!(
            difference_text(&l),
            "×1.052 [0.981, 1.120] · 412.3 vs 391.9 · 13 paired · 0 missing · 0 excluded"
        );
        let d = DecisionResult {
            name: "p95".into(),
            kind: DecisionKind::Guardrail,
            criteria: vec!["latency_total_p95".into()],
            margin_points: None,
            cases: vec![],
            verdict: DecisionVerdict::InsufficientEvidence,
            reason: "ratio_overlaps_limit".into(),
            interval_points: None,
            min_win_rate_points: None,
            max_increase_percent: Some(10.0),
            ratio_interval: Some([0.981, 1.12]),
            detail: vec![],
        };
        assert_eq!(
            guardrail_test(&d),
            "guardrail, at most +10.0% (ratio below 1.100)"
        );
    }

    #[test]
    fn the_seeds_line() {
        assert_eq!(
            difference_text(&line(Some(0.0), Some([-22.9, 22.9]))),
            "+0.0 points [-22.9, +22.9] · 13 paired · 0 missing · 0 excluded"
        );
        let nothing = DifferenceLine {
            paired: 0,
            missing: 13,
            ..line(None, None)
        };
        assert_eq!(
            difference_text(&nothing),
            "no paired observations · 0 paired · 13 missing · 0 excluded"
        );
        assert_eq!(format_points(-0.0), "+0.0");
    }

    #[test]
    fn decision_columns_align() {
        let d = |name: &str, criterion: &str, margin: f64| DecisionResult {
            name: name.into(),
            kind: DecisionKind::NonInferiority,
            criteria: vec![criterion.into()],
            margin_points: Some(margin),
            cases: vec![],
            verdict: DecisionVerdict::InsufficientEvidence,
            reason: "interval_overlaps_margin".into(),
            interval_points: Some([-22.9, 22.9]),
            min_win_rate_points: None,
            max_increase_percent: None,
            ratio_interval: None,
            detail: vec![],
        };
        let block = decisions_block(&[
            d("answers-not-worse", "answer_correct", 5.0),
            d("citations-not-worse", "citations_valid", 2.0),
        ]);
        assert_eq!(
            block,
            "Decisions
  answers-not-worse    answer_correct   non-inferiority, margin 5.0 points  INSUFFICIENT_EVIDENCE  interval_overlaps_margin
  citations-not-worse  citations_valid  non-inferiority, margin 2.0 points  INSUFFICIENT_EVIDENCE  interval_overlaps_margin
"
        );
    }
}
