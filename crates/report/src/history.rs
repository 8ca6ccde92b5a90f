//! `oloproof history`: the score history as a table (one row per run, one column per criterion
//! with its value and interval) and as a self-contained SVG line chart (one line per criterion by
//! commit, with 95 % interval bands and a legend).
//!
//! The SVG is a standalone file (it names the SVG namespace and carries its own `<style>`; no
//! font, script or image is fetched). Every text is escaped with [`crate::html::escape`] and every
//! coordinate is written with one decimal, so the same history always gives the same bytes.
//!
//! ```
//! use oloproof_report::history::history_svg;
//! let svg = history_svg(&[]);
//! assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
//! ```

use oloproof_core::history::{HistoryCriterion, HistoryEntry};
use oloproof_core::summary::SummaryKind;

use crate::html::escape;
use crate::svg::num;
use crate::{format_proportion, table};

/// Criterion names in order of first appearance.
pub fn criteria_names(entries: &[HistoryEntry]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for e in entries {
        for c in &e.criteria {
            if !names.contains(&c.criterion) {
                names.push(c.criterion.clone());
            }
        }
    }
    names
}

fn as_percent(c: &HistoryCriterion) -> bool {
    matches!(c.kind, SummaryKind::Proportion | SummaryKind::Rate)
}

/// `69.2% [38.5, 91.0]` or `0.866 [0.684, 1.000]`; `—` when nothing was observed.
pub fn criterion_cell(c: &HistoryCriterion) -> String {
    let Some(v) = c.value else {
        return format!("— ({} missing)", c.missing);
    };
    let pct = as_percent(c);
    let value = if pct {
        format_proportion(v)
    } else {
        format!("{v:.3}")
    };
    match &c.interval {
        Some(i) if pct => format!("{value} [{:.1}, {:.1}]", i.lower * 100.0, i.upper * 100.0),
        Some(i) => format!("{value} [{:.3}, {:.3}]", i.lower, i.upper),
        None => value,
    }
}

/// The history table: commit, date (UTC), run, cases, then one column per criterion.
pub fn history_table(entries: &[HistoryEntry]) -> String {
    if entries.is_empty() {
        return "The history is empty. `oloproof run --history FILE` or `oloproof history append RUN_ID` adds a line.\n".to_string();
    }
    let names = criteria_names(entries);
    let mut header: Vec<&str> = vec!["commit", "date (UTC)", "run", "cases"];
    header.extend(names.iter().map(String::as_str));
    let mut t = table(&header);
    for e in entries {
        let mut row = vec![
            e.commit
                .as_ref()
                .map(|c| c.chars().take(7).collect())
                .unwrap_or_else(|| "—".to_string()),
            e.timestamp
                .get(..16)
                .map(|s| s.replace('T', " "))
                .unwrap_or_else(|| e.timestamp.clone()),
            e.run_id.clone(),
            match &e.sample {
                Some(s) => format!("{} (sample, seed {})", e.cases, s.seed),
                None => e.cases.to_string(),
            },
        ];
        for name in &names {
            row.push(
                e.criterion(name)
                    .map(criterion_cell)
                    .unwrap_or_else(|| "·".to_string()),
            );
        }
        t.add_row(row);
    }
    let note = if entries.iter().any(|e| e.commit.is_none()) {
        "— in `commit`: the run was not made in a git repository. "
    } else {
        ""
    };
    format!("{t}\n{note}Intervals are 95 %; · marks a criterion the run did not have.\n")
}

// ----------------------------------------------------------------------------------------------
// The chart
// ----------------------------------------------------------------------------------------------

/// Line colours, in criterion order (the first four are seed 003's plot's).
pub const PALETTE: [&str; 8] = [
    "#2a78d6", "#eb6834", "#1baf7a", "#eda100", "#8e5bd0", "#d14d72", "#4a9fa8", "#6b6b6b",
];

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 460.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 250.0;
const TOP: f64 = 58.0;
const BOTTOM: f64 = 78.0;

fn nice_step(span: f64) -> f64 {
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let nice = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 2.5 {
        2.5
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// The y domain and ticks: `[0, 1]` when every value and bound lies in it, else the data's range
/// widened to round steps.
fn y_axis(entries: &[HistoryEntry]) -> ([f64; 2], Vec<f64>) {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for c in entries.iter().flat_map(|e| &e.criteria) {
        for x in c
            .value
            .into_iter()
            .chain(c.interval.iter().flat_map(|i| [i.lower, i.upper]))
            .filter(|x| x.is_finite())
        {
            lo = lo.min(x);
            hi = hi.max(x);
        }
    }
    if !lo.is_finite() || (lo >= 0.0 && hi <= 1.0) {
        return ([0.0, 1.0], (0..=4).map(|i| i as f64 * 0.25).collect());
    }
    if hi - lo < 1e-9 {
        lo -= 0.5;
        hi += 0.5;
    }
    let step = nice_step(hi - lo);
    let (lo, hi) = ((lo / step).floor() * step, (hi / step).ceil() * step);
    let n = ((hi - lo) / step).round() as usize;
    ([lo, hi], (0..=n).map(|i| lo + i as f64 * step).collect())
}

/// The history as a standalone SVG: x is the history order, labelled by short commit (or run
/// id) and date; y the value; one line per criterion with its interval band; a legend with
/// each criterion's latest value.
pub fn history_svg(entries: &[HistoryEntry]) -> String {
    let names = criteria_names(entries);
    let all_percent = entries.iter().flat_map(|e| &e.criteria).all(as_percent);
    let ([y0, y1], ticks) = y_axis(entries);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let n = entries.len();
    let x = |i: usize| {
        if n <= 1 {
            LEFT + plot_w / 2.0
        } else {
            LEFT + 24.0 + (plot_w - 48.0) * i as f64 / (n - 1) as f64
        }
    };
    let y = |v: f64| TOP + (1.0 - (v.clamp(y0, y1) - y0) / (y1 - y0)) * plot_h;
    let tick_label = |v: f64| {
        if all_percent && y0 >= 0.0 && y1 <= 1.0 {
            format!("{:.0}%", v * 100.0)
        } else {
            let s = format!("{v:.2}");
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        }
    };
    let system = entries
        .last()
        .map(|e| format!("{} {}", e.system, e.version))
        .unwrap_or_default();
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" aria-label=\"Scores by commit\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif\">\n",
        w = num(WIDTH),
        h = num(HEIGHT)
    );
    out.push_str(
        "<style>\n\
         .bg{fill:#ffffff}\n\
         .title{font-size:17px;font-weight:600;fill:#1f2328}\n\
         .subtitle{font-size:12px;fill:#59636e}\n\
         .grid{stroke:#e6e8eb;stroke-width:1}\n\
         .axis{stroke:#8c959f;stroke-width:1}\n\
         .tick{font-size:11px;fill:#59636e}\n\
         .xlabel{font-size:11px;fill:#1f2328;font-family:ui-monospace,SFMono-Regular,Menlo,monospace}\n\
         .xdate{font-size:10px;fill:#8c959f}\n\
         .band{stroke:none;fill-opacity:0.11}\n\
         .line{fill:none;stroke-width:2.2;stroke-linejoin:round;stroke-linecap:round}\n\
         .point{stroke:#ffffff;stroke-width:1.5}\n\
         .legend{font-size:12px;fill:#1f2328}\n\
         .legendvalue{font-size:11px;fill:#59636e}\n\
         .empty{font-size:13px;fill:#59636e}\n\
         </style>\n",
    );
    out.push_str(&format!(
        "<rect class=\"bg\" x=\"0\" y=\"0\" width=\"{}\" height=\"{}\"/>\n",
        num(WIDTH),
        num(HEIGHT)
    ));
    out.push_str(&format!(
        "<text class=\"title\" x=\"{}\" y=\"26\">Scores by commit</text>\n<text class=\"subtitle\" x=\"{}\" y=\"44\">{} · {} run{} · lines: values · bands: 95% intervals</text>\n",
        num(LEFT),
        num(LEFT),
        escape(&system),
        n,
        if n == 1 { "" } else { "s" }
    ));
    // Grid and y ticks.
    for t in &ticks {
        let ty = num(y(*t));
        out.push_str(&format!(
            "<line class=\"grid\" x1=\"{}\" y1=\"{ty}\" x2=\"{}\" y2=\"{ty}\"/>\n<text class=\"tick\" x=\"{}\" y=\"{ty}\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>\n",
            num(LEFT),
            num(LEFT + plot_w),
            num(LEFT - 8.0),
            escape(&tick_label(*t))
        ));
    }
    out.push_str(&format!(
        "<line class=\"axis\" x1=\"{l}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\"/>\n",
        l = num(LEFT),
        r = num(LEFT + plot_w),
        b = num(TOP + plot_h)
    ));
    if entries.is_empty() {
        out.push_str(&format!(
            "<text class=\"empty\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">No runs in the history yet</text>\n</svg>\n",
            num(LEFT + plot_w / 2.0),
            num(TOP + plot_h / 2.0)
        ));
        return out;
    }
    // X labels: every label when they fit, else every k-th (the last one always).
    let every = ((n as f64 * 64.0) / (plot_w - 48.0)).ceil().max(1.0) as usize;
    for (i, e) in entries.iter().enumerate() {
        if i % every != 0 && i + 1 != n {
            continue;
        }
        let date = e.timestamp.get(5..16).unwrap_or("").replace('T', " ");
        out.push_str(&format!(
            "<line class=\"axis\" x1=\"{x}\" y1=\"{b}\" x2=\"{x}\" y2=\"{b4}\"/>\n<text class=\"xlabel\" x=\"{x}\" y=\"{l1}\" text-anchor=\"middle\">{}</text>\n<text class=\"xdate\" x=\"{x}\" y=\"{l2}\" text-anchor=\"middle\">{}</text>\n",
            escape(&e.short_label()),
            escape(&date),
            x = num(x(i)),
            b = num(TOP + plot_h),
            b4 = num(TOP + plot_h + 4.0),
            l1 = num(TOP + plot_h + 18.0),
            l2 = num(TOP + plot_h + 32.0)
        ));
    }
    // Bands first (under every line), then lines and points.
    let series: Vec<(usize, &String, Points<'_>)> = names
        .iter()
        .enumerate()
        .map(|(k, name)| {
            let points = entries
                .iter()
                .enumerate()
                .filter_map(|(i, e)| e.criterion(name).map(|c| (i, c)))
                .collect();
            (k, name, points)
        })
        .collect();
    for (k, _, points) in &series {
        let colour = PALETTE[k % PALETTE.len()];
        for run in contiguous(points, |c| c.interval.is_some() && c.value.is_some()) {
            if run.len() < 2 {
                if let Some((i, c)) = run.first() {
                    let iv = c.interval.as_ref().map(|iv| (iv.lower, iv.upper));
                    if let Some((lo, hi)) = iv {
                        out.push_str(&format!(
                            "<rect class=\"band\" fill=\"{colour}\" x=\"{}\" y=\"{}\" width=\"12.0\" height=\"{}\" rx=\"3\"/>\n",
                            num(x(*i) - 6.0),
                            num(y(hi)),
                            num(y(lo) - y(hi))
                        ));
                    }
                }
                continue;
            }
            let mut pts: Vec<String> = Vec::new();
            for (i, c) in &run {
                if let Some(iv) = &c.interval {
                    pts.push(format!("{},{}", num(x(*i)), num(y(iv.upper))));
                }
            }
            for (i, c) in run.iter().rev() {
                if let Some(iv) = &c.interval {
                    pts.push(format!("{},{}", num(x(*i)), num(y(iv.lower))));
                }
            }
            out.push_str(&format!(
                "<polygon class=\"band\" fill=\"{colour}\" points=\"{}\"/>\n",
                pts.join(" ")
            ));
        }
    }
    for (k, name, points) in &series {
        let colour = PALETTE[k % PALETTE.len()];
        for run in contiguous(points, |c| c.value.is_some_and(f64::is_finite)) {
            if run.len() >= 2 {
                let d: Vec<String> = run
                    .iter()
                    .filter_map(|(i, c)| c.value.map(|v| format!("{},{}", num(x(*i)), num(y(v)))))
                    .collect();
                out.push_str(&format!(
                    "<polyline class=\"line\" stroke=\"{colour}\" points=\"{}\"/>\n",
                    d.join(" ")
                ));
            }
        }
        for (i, c) in points {
            if let Some(v) = c.value.filter(|v| v.is_finite()) {
                out.push_str(&format!(
                    "<circle class=\"point\" fill=\"{colour}\" cx=\"{}\" cy=\"{}\" r=\"4.2\"><title>{}</title></circle>\n",
                    num(x(*i)),
                    num(y(v)),
                    escape(&format!(
                        "{name} · {} · {}",
                        entries[*i].short_label(),
                        criterion_cell(c)
                    ))
                ));
            }
        }
    }
    // Legend: colour, name, latest value.
    let lx = LEFT + plot_w + 28.0;
    for (k, name, points) in &series {
        let colour = PALETTE[k % PALETTE.len()];
        let ly = TOP + 8.0 + 40.0 * *k as f64;
        let latest = points
            .last()
            .map(|(_, c)| criterion_cell(c))
            .unwrap_or_default();
        out.push_str(&format!(
            "<line class=\"line\" stroke=\"{colour}\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/>\n<circle class=\"point\" fill=\"{colour}\" cx=\"{}\" cy=\"{y}\" r=\"4.2\"/>\n<text class=\"legend\" x=\"{}\" y=\"{y}\" dominant-baseline=\"middle\">{}</text>\n<text class=\"legendvalue\" x=\"{}\" y=\"{}\" dominant-baseline=\"middle\">latest {}</text>\n",
            num(lx),
            num(lx + 22.0),
            num(lx + 11.0),
            num(lx + 30.0),
            escape(name),
            num(lx + 30.0),
            num(ly + 16.0),
            escape(&latest),
            y = num(ly)
        ));
    }
    out.push_str("</svg>\n");
    out
}

/// A criterion's points: history position and line.
type Points<'a> = Vec<(usize, &'a HistoryCriterion)>;

/// Splits `points` into runs of consecutive history positions whose criterion satisfies `keep`
/// (a run without the criterion, or without a value, breaks the line).
fn contiguous<'a>(
    points: &[(usize, &'a HistoryCriterion)],
    keep: impl Fn(&HistoryCriterion) -> bool,
) -> Vec<Points<'a>> {
    let mut out: Vec<Points<'a>> = Vec::new();
    let mut last: Option<usize> = None;
    for &(i, c) in points {
        if !keep(c) {
            last = None;
            continue;
        }
        match (last, out.last_mut()) {
            (Some(prev), Some(cur)) if prev + 1 == i => cur.push((i, c)),
            _ => out.push(vec![(i, c)]),
        }
        last = Some(i);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use oloproof_core::history::{HistoryInterval, HISTORY_SCHEMA_VERSION};

    fn entry(run: &str, commit: Option<&str>, k: Option<u64>) -> HistoryEntry {
        HistoryEntry {
            schema_version: HISTORY_SCHEMA_VERSION,
            timestamp: "2026-09-16T12:00:00Z".into(),
            run_id: run.into(),
            commit: commit.map(str::to_string),
            branch: None,
            config_hash: "h".into(),
            system: "s<x>".into(),
            version: "v".into(),
            dataset: None,
            judge_models: Vec::new(),
            cases: 13,
            sample: None,
            criteria: vec![HistoryCriterion {
                criterion: "answer_correct".into(),
                kind: SummaryKind::Proportion,
                value: k.map(|k| k as f64 / 13.0),
                interval: k.map(|_| HistoryInterval {
                    lower: 0.385,
                    upper: 0.91,
                    method: "clopper_pearson".into(),
                    level: 0.95,
                }),
                passed: k,
                std_dev: None,
                observed: if k.is_some() { 13 } else { 0 },
                missing: if k.is_some() { 0 } else { 13 },
                excluded: 0,
                judges: Vec::new(),
            }],
        }
    }

    #[test]
    fn cells_and_table() {
        let e = entry("run_a", Some("0123456789abcdef"), Some(9));
        assert_eq!(criterion_cell(&e.criteria[0]), "69.2% [38.5, 91.0]");
        let missing = entry("run_b", None, None);
        assert_eq!(criterion_cell(&missing.criteria[0]), "— (13 missing)");
        let table = history_table(&[e, missing]);
        assert!(table.contains("0123456"), "{table}");
        assert!(table.contains("2026-09-16 12:00"));
    }

    #[test]
    fn the_chart_breaks_lines_at_gaps_and_escapes() {
        let entries = vec![
            entry("run_a", Some("aaaaaaa1"), Some(9)),
            entry("run_b", Some("bbbbbbb2"), Some(10)),
            entry("run_c", None, None),
            entry("run_d", Some("ddddddd4"), Some(12)),
        ];
        let svg = history_svg(&entries);
        assert_eq!(svg, history_svg(&entries));
        assert_eq!(svg.matches("<polyline").count(), 1, "one line over a, b");
        assert_eq!(svg.matches("<polygon").count(), 1);
        assert_eq!(svg.matches("<rect class=\"band\"").count(), 1, "d alone");
        assert_eq!(svg.matches("<circle").count(), 4, "3 points + legend");
        assert!(svg.contains("s&lt;x&gt;") && !svg.contains("s<x>"));
        assert!(svg.contains(">aaaaaaa<") && svg.contains(">run…run_c<"));
        assert!(svg.contains(">100%<") && svg.ends_with("</svg>\n"));
    }
}
