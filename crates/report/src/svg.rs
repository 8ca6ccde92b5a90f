//! Hand-written SVG charts for the HTML report: intervals with whiskers (criteria, slices and
//! the forest plot of paired differences), horizontal bars (latency, diagnosis labels) and
//! per-window series with their interval band (the monitor report).
//!
//! Every text is escaped with [`crate::html::escape`]; every coordinate is written with a fixed
//! number of decimals, so the same data always gives the same bytes. No `xmlns` is written: the
//! charts are inline in HTML5, which needs none, and the report then names no URL at all.
//!
//! ```
//! use oloproof_report::svg::{bar_chart, Bar};
//! let svg = bar_chart(&[Bar { label: "a<b".into(), value: 2.0, note: "2".into() }]);
//! assert!(svg.starts_with("<svg") && svg.contains("a&lt;b"));
//! ```

use std::fmt::Write as _;

use crate::html::escape;

const LABEL_W: f64 = 230.0;
const PLOT_W: f64 = 360.0;
const NOTE_W: f64 = 430.0;
const ROW_H: f64 = 26.0;
const TOP: f64 = 12.0;
const AXIS_H: f64 = 30.0;

/// A coordinate with one decimal, never `-0.0`.
pub fn num(x: f64) -> String {
    let x = if x.is_finite() { x } else { 0.0 };
    let s = format!("{x:.1}");
    if s == "-0.0" {
        "0.0".to_string()
    } else {
        s
    }
}

/// One row of an interval chart.
#[derive(Debug, Clone)]
pub struct IntervalRow {
    /// Left label.
    pub label: String,
    /// The point (`None`: nothing observed).
    pub value: Option<f64>,
    /// The interval's ends.
    pub interval: Option<[f64; 2]>,
    /// Text right of the plot (value, counts, verdict).
    pub note: String,
    /// A CSS class for the point (`pass`, `fail`, `warn`, or empty).
    pub class: String,
}

/// A vertical reference line (zero, a margin).
#[derive(Debug, Clone)]
pub struct RefLine {
    /// Where, in data units.
    pub x: f64,
    /// Caption above the line.
    pub label: String,
    /// A CSS class (`zero`, `margin`).
    pub class: String,
}

/// The x axis: its domain and labelled ticks.
#[derive(Debug, Clone)]
pub struct Axis {
    /// `[low, high]`, low < high.
    pub domain: [f64; 2],
    /// Tick positions and labels.
    pub ticks: Vec<(f64, String)>,
}

impl Axis {
    fn x(&self, v: f64) -> f64 {
        let [lo, hi] = self.domain;
        let span = if hi > lo { hi - lo } else { 1.0 };
        LABEL_W + (v.clamp(lo, hi) - lo) / span * PLOT_W
    }
}

fn open(height: f64, caption: &str) -> String {
    let width = LABEL_W + PLOT_W + NOTE_W;
    format!(
        "<svg class=\"chart\" role=\"img\" aria-label=\"{}\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">\n",
        escape(caption),
        num(width),
        num(height),
        num(width),
        num(height)
    )
}

fn row_y(i: usize) -> f64 {
    TOP + ROW_H * i as f64 + ROW_H / 2.0
}

/// Points with interval whiskers on a shared axis, with optional reference lines.
pub fn interval_chart(
    caption: &str,
    rows: &[IntervalRow],
    axis: &Axis,
    refs: &[RefLine],
) -> String {
    let plot_bottom = TOP + ROW_H * rows.len() as f64;
    // Captions of neighbouring reference lines alternate between two rows, so they never overlap.
    let captions = refs.iter().filter(|r| !r.label.is_empty()).count();
    let height = plot_bottom + AXIS_H + if captions > 1 { 14.0 } else { 0.0 };
    let mut out = open(height, caption);
    // Axis and ticks.
    out.push_str(&format!(
        "<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n",
        num(LABEL_W),
        num(plot_bottom),
        num(LABEL_W + PLOT_W),
        num(plot_bottom)
    ));
    for (v, label) in &axis.ticks {
        let x = axis.x(*v);
        out.push_str(&format!(
            "<line class=\"grid\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/>\n<text class=\"tick\" x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
            num(TOP),
            num(plot_bottom),
            num(plot_bottom + 16.0),
            escape(label),
            x = num(x)
        ));
    }
    let mut caption = 0usize;
    for r in refs {
        let x = num(axis.x(r.x));
        out.push_str(&format!(
            "<line class=\"ref {}\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/>\n",
            escape(&r.class),
            num(TOP - 4.0),
            num(plot_bottom)
        ));
        if !r.label.is_empty() {
            out.push_str(&format!(
                "<text class=\"reflabel\" x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                num(plot_bottom + 28.0 + 14.0 * (caption % 2) as f64),
                escape(&r.label)
            ));
            caption += 1;
        }
    }
    for (i, row) in rows.iter().enumerate() {
        let y = num(row_y(i));
        out.push_str(&format!(
            "<text class=\"label\" x=\"{}\" y=\"{y}\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>\n",
            num(LABEL_W - 8.0),
            escape(&row.label)
        ));
        if let Some([lo, hi]) = row.interval {
            let (x1, x2) = (num(axis.x(lo)), num(axis.x(hi)));
            let (c1, c2) = (num(row_y(i) - 5.0), num(row_y(i) + 5.0));
            out.push_str(&format!(
                "<line class=\"whisker\" x1=\"{x1}\" y1=\"{y}\" x2=\"{x2}\" y2=\"{y}\"/>\n<line class=\"whisker\" x1=\"{x1}\" y1=\"{c1}\" x2=\"{x1}\" y2=\"{c2}\"/>\n<line class=\"whisker\" x1=\"{x2}\" y1=\"{c1}\" x2=\"{x2}\" y2=\"{c2}\"/>\n"
            ));
        }
        if let Some(v) = row.value {
            out.push_str(&format!(
                "<circle class=\"point {}\" cx=\"{}\" cy=\"{y}\" r=\"4.5\"/>\n",
                escape(&row.class),
                num(axis.x(v))
            ));
        }
        out.push_str(&format!(
            "<text class=\"note\" x=\"{}\" y=\"{y}\" dominant-baseline=\"middle\">{}</text>\n",
            num(LABEL_W + PLOT_W + 10.0),
            escape(&row.note)
        ));
    }
    out.push_str("</svg>\n");
    out
}

/// One horizontal bar.
#[derive(Debug, Clone)]
pub struct Bar {
    /// Left label.
    pub label: String,
    /// Length, in data units (non-negative).
    pub value: f64,
    /// Text right of the bar.
    pub note: String,
}

/// Horizontal bars from zero to the largest value.
pub fn bar_chart(bars: &[Bar]) -> String {
    let max = bars
        .iter()
        .map(|b| b.value)
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let height = TOP * 2.0 + ROW_H * bars.len() as f64;
    let mut out = open(height, "bar chart");
    for (i, b) in bars.iter().enumerate() {
        let y = row_y(i);
        let w = if max > 0.0 && b.value.is_finite() {
            (b.value.max(0.0) / max) * PLOT_W
        } else {
            0.0
        };
        out.push_str(&format!(
            "<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>\n<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n<text class=\"note\" x=\"{}\" y=\"{}\" dominant-baseline=\"middle\">{}</text>\n",
            num(LABEL_W - 8.0),
            num(y),
            escape(&b.label),
            num(LABEL_W),
            num(y - 8.0),
            num(w),
            num(16.0),
            num(LABEL_W + w + 6.0),
            num(y),
            escape(&b.note)
        ));
    }
    out.push_str("</svg>\n");
    out
}

/// Ticks at 0, ¼, ½, ¾ and 1 of `[lo, hi]`, labelled by `label`.
pub fn quarter_ticks(lo: f64, hi: f64, label: impl Fn(f64) -> String) -> Vec<(f64, String)> {
    (0..=4)
        .map(|i| {
            let v = lo + (hi - lo) * i as f64 / 4.0;
            (v, label(v))
        })
        .collect()
}

/// One window of a [`series_chart`].
#[derive(Debug, Clone)]
pub struct SeriesPoint {
    /// The window as shown under its column (`2026-11-28`).
    pub label: String,
    /// The point (`None`: nothing observed: no point, the line breaks).
    pub value: Option<f64>,
    /// The 95 % interval (`None`: no band at this window).
    pub interval: Option<[f64; 2]>,
    /// Observations behind the point, shown under the column.
    pub n: u64,
    /// The window is outside the horizon: drawn dimmed.
    pub dimmed: bool,
    /// The point's tooltip (value, interval and counts in words).
    pub title: String,
}

const SERIES_LEFT: f64 = 56.0;
const SERIES_COL: f64 = 72.0;
const SERIES_MIN_PLOT: f64 = 288.0;
const SERIES_TOP: f64 = 14.0;
const SERIES_PLOT_H: f64 = 150.0;
const SERIES_BOTTOM: f64 = 44.0;
const SERIES_RIGHT: f64 = 16.0;
/// Half the width of the band drawn around a window whose neighbours have no interval.
const SERIES_LONE_HALF: f64 = 9.0;

/// A value series over windows: one column per window, the point values joined by a line, the
/// 95 % intervals as a shaded band (one `<path class="band">` per run of consecutive windows
/// with an interval; a lone window's band is a narrow box around it), `n` under each column,
/// and the columns of windows outside the horizon shaded and their points dimmed. The y axis
/// spans `domain`; `threshold` draws a dashed horizontal line with its caption. The chart
/// carries a `<title>` and an `aria-label` (`caption`); each point its own `<title>`.
pub fn series_chart(
    caption: &str,
    points: &[SeriesPoint],
    domain: [f64; 2],
    ticks: &[(f64, String)],
    threshold: Option<(f64, String)>,
) -> String {
    let plot_w = (SERIES_COL * points.len() as f64).max(SERIES_MIN_PLOT);
    let col = if points.is_empty() {
        plot_w
    } else {
        plot_w / points.len() as f64
    };
    let width = SERIES_LEFT + plot_w + SERIES_RIGHT;
    let height = SERIES_TOP + SERIES_PLOT_H + SERIES_BOTTOM;
    let bottom = SERIES_TOP + SERIES_PLOT_H;
    let [lo, hi] = domain;
    let span = if hi > lo { hi - lo } else { 1.0 };
    let y = |v: f64| bottom - (v.clamp(lo, hi) - lo) / span * SERIES_PLOT_H;
    let x = |i: usize| SERIES_LEFT + col * (i as f64 + 0.5);
    let mut out = format!(
        "<svg class=\"chart series\" role=\"img\" aria-label=\"{cap}\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">\n<title>{cap}</title>\n",
        cap = escape(caption),
        w = num(width),
        h = num(height)
    );
    // Columns outside the horizon, shaded behind everything.
    for (i, p) in points.iter().enumerate() {
        if p.dimmed {
            let _ = writeln!(
                out,
                "<rect class=\"outside\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
                num(x(i) - col / 2.0),
                num(SERIES_TOP),
                num(col),
                num(SERIES_PLOT_H)
            );
        }
    }
    for (v, label) in ticks {
        let ty = num(y(*v));
        let _ = writeln!(
            out,
            "<line class=\"grid\" x1=\"{}\" y1=\"{ty}\" x2=\"{}\" y2=\"{ty}\"/>\n<text class=\"tick\" x=\"{}\" y=\"{ty}\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>",
            num(SERIES_LEFT),
            num(SERIES_LEFT + plot_w),
            num(SERIES_LEFT - 6.0),
            escape(label)
        );
    }
    let _ = writeln!(
        out,
        "<line class=\"axis\" x1=\"{l}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\"/>",
        l = num(SERIES_LEFT),
        r = num(SERIES_LEFT + plot_w),
        b = num(bottom)
    );
    // The band: one path per run of consecutive windows with an interval.
    let mut i = 0;
    while i < points.len() {
        if points[i].interval.is_none() {
            i += 1;
            continue;
        }
        let start = i;
        while i < points.len() && points[i].interval.is_some() {
            i += 1;
        }
        let run: Vec<(usize, [f64; 2])> = (start..i)
            .filter_map(|k| points[k].interval.map(|iv| (k, iv)))
            .collect();
        let d = if run.len() == 1 {
            let (k, [a, b]) = run[0];
            let (x1, x2) = (num(x(k) - SERIES_LONE_HALF), num(x(k) + SERIES_LONE_HALF));
            format!(
                "M{x1} {lo} L{x2} {lo} L{x2} {hi} L{x1} {hi} Z",
                lo = num(y(a)),
                hi = num(y(b))
            )
        } else {
            let upper: Vec<String> = run
                .iter()
                .map(|(k, [_, b])| format!("{} {}", num(x(*k)), num(y(*b))))
                .collect();
            let lower: Vec<String> = run
                .iter()
                .rev()
                .map(|(k, [a, _])| format!("{} {}", num(x(*k)), num(y(*a))))
                .collect();
            format!("M{} L{} Z", upper.join(" L"), lower.join(" L"))
        };
        let _ = writeln!(out, "<path class=\"band\" d=\"{d}\"/>");
    }
    if let Some((v, label)) = &threshold {
        let ty = num(y(*v));
        let _ = writeln!(
            out,
            "<line class=\"ref margin\" x1=\"{}\" y1=\"{ty}\" x2=\"{}\" y2=\"{ty}\"/>\n<text class=\"reflabel\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            num(SERIES_LEFT),
            num(SERIES_LEFT + plot_w),
            num(SERIES_LEFT + plot_w - 4.0),
            num(y(*v) - 4.0),
            escape(label)
        );
    }
    // The line through the points, broken where a window has none.
    let mut d = String::new();
    let mut pen_down = false;
    for (k, p) in points.iter().enumerate() {
        match p.value {
            Some(v) => {
                let _ = write!(
                    d,
                    "{}{} {}",
                    if pen_down {
                        " L"
                    } else if d.is_empty() {
                        "M"
                    } else {
                        " M"
                    },
                    num(x(k)),
                    num(y(v))
                );
                pen_down = true;
            }
            None => pen_down = false,
        }
    }
    if !d.is_empty() {
        let _ = writeln!(out, "<path class=\"series-line\" d=\"{d}\"/>");
    }
    for (k, p) in points.iter().enumerate() {
        let cx = num(x(k));
        if let Some(v) = p.value {
            let _ = writeln!(
                out,
                "<circle class=\"point series-point{}\" cx=\"{cx}\" cy=\"{}\" r=\"4\"><title>{}</title></circle>",
                if p.dimmed { " dim" } else { "" },
                num(y(v)),
                escape(&p.title)
            );
        }
        let _ = writeln!(
            out,
            "<text class=\"tick{}\" x=\"{cx}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n<text class=\"tick n{}\" x=\"{cx}\" y=\"{}\" text-anchor=\"middle\">n={}</text>",
            if p.dimmed { " dim" } else { "" },
            num(bottom + 16.0),
            escape(&p.label),
            if p.dimmed { " dim" } else { "" },
            num(bottom + 32.0),
            p.n
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinates_are_deterministic_and_labels_escaped() {
        let axis = Axis {
            domain: [0.0, 1.0],
            ticks: quarter_ticks(0.0, 1.0, |v| format!("{v:.2}")),
        };
        let rows = [IntervalRow {
            label: "<b>".into(),
            value: Some(0.5),
            interval: Some([0.25, 0.75]),
            note: "\"x\"".into(),
            class: String::new(),
        }];
        let a = interval_chart("c", &rows, &axis, &[]);
        assert_eq!(a, interval_chart("c", &rows, &axis, &[]));
        assert!(a.contains("&lt;b&gt;") && a.contains("&quot;x&quot;"));
        assert!(a.contains("cx=\"410.0\""));
        assert_eq!(num(-0.01), "0.0");
    }

    fn point(label: &str, value: Option<f64>, interval: Option<[f64; 2]>) -> SeriesPoint {
        SeriesPoint {
            label: label.into(),
            value,
            interval,
            n: 10,
            dimmed: false,
            title: format!("{label} title"),
        }
    }

    /// Four windows on [0, 1]: the plot is 288 wide from x = 56 (columns of 72, centres at 92,
    /// 164, 236, 308) and 150 high from y = 14 (so v maps to 164 − 150 v).
    #[test]
    fn series_places_points_and_band() {
        let mut pts = vec![
            point("w1", Some(0.5), Some([0.4, 0.6])),
            point("w2", Some(0.8), Some([0.7, 0.9])),
            point("w3", Some(0.2), None),
            point("w4", None, None),
        ];
        pts[0].dimmed = true;
        let svg = series_chart("c", &pts, [0.0, 1.0], &[], None);
        assert_eq!(svg, series_chart("c", &pts, [0.0, 1.0], &[], None));
        // Points at their column centre and value.
        assert!(svg.contains("cx=\"92.0\" cy=\"89.0\""), "{svg}");
        assert!(svg.contains("cx=\"164.0\" cy=\"44.0\""), "{svg}");
        assert!(svg.contains("cx=\"236.0\" cy=\"134.0\""), "{svg}");
        assert_eq!(svg.matches("<circle").count(), 3);
        // One band over w1–w2: upper ends left to right, lower ends back.
        assert_eq!(svg.matches("<path class=\"band\"").count(), 1);
        assert!(
            svg.contains("d=\"M92.0 74.0 L164.0 29.0 L164.0 59.0 L92.0 104.0 Z\""),
            "{svg}"
        );
        // The window without an interval has its point but no band; the one without a value
        // breaks the line and has no point, but its column and n are there.
        assert!(
            svg.contains("d=\"M92.0 89.0 L164.0 44.0 L236.0 134.0\""),
            "{svg}"
        );
        assert_eq!(svg.matches("n=10").count(), 4);
        // The first window is outside the horizon: its column shaded, its point dimmed.
        assert!(svg.contains("<rect class=\"outside\" x=\"56.0\""));
        assert!(svg.contains("class=\"point series-point dim\" cx=\"92.0\""));
        assert!(svg.contains("<title>c</title>") && svg.contains("aria-label=\"c\""));
    }

    #[test]
    fn a_lone_interval_is_a_box_and_texts_are_escaped() {
        let pts = vec![
            point("<w1>", Some(0.5), None),
            point("w2", Some(0.5), Some([0.4, 0.6])),
            point("w3", Some(0.5), None),
        ];
        let svg = series_chart(
            "intent=<script>alert(1)</script>",
            &pts,
            [0.0, 1.0],
            &[(0.5, "0.50".into())],
            Some((0.8, "min \"0.8\"".into())),
        );
        assert!(
            svg.contains(
                "<path class=\"band\" d=\"M191.0 104.0 L209.0 104.0 L209.0 74.0 L191.0 74.0 Z\"/>"
            ),
            "{svg}"
        );
        assert_eq!(svg.matches("class=\"band\"").count(), 1);
        assert!(!svg.contains("<script") && !svg.contains("<w1>"));
        assert!(svg.contains("intent=&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(svg.contains("&lt;w1&gt;") && svg.contains("min &quot;0.8&quot;"));
        assert!(svg.contains("<title>&lt;w1&gt; title</title>"));
    }
}
