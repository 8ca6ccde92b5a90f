//! Hand-written SVG charts for the HTML report: intervals with whiskers (criteria, slices and
//! the forest plot of paired differences) and horizontal bars (latency, diagnosis labels).
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
}
