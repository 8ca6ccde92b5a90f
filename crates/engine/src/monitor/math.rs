//! The arithmetic of `oloproof monitor`, without I/O: windows, the deterministic draw, the
//! `auto` rate, the SLO decision with its error budget, and the interval decisions of the
//! alerts. Every interval comes from `oloproof_stats`.

use oloproof_core::monitor::{AlwaysRule, Rate};
use oloproof_stats::Interval;

pub use oloproof_core::monitor_report::{SloDecision, SloState};

/// Two-sided confidence of the intervals the alerts decide on.
pub const ALERT_CONFIDENCE: f64 = 0.95;

/// Start (Unix milliseconds) of the window of `size_ms` holding `ts_ms`: windows are aligned on
/// the Unix epoch, so `1d` windows are UTC days; times before 1970 fall in the window below
/// (floor division, never toward zero).
pub fn window_start(ts_ms: i64, size_ms: i64) -> i64 {
    ts_ms.div_euclid(size_ms) * size_ms
}

/// The draw of a trace: the first 8 bytes of `sha256("<seed>:<trace id>")` read big-endian, as
/// a fraction of 2⁶⁴ in `[0, 1)`. A tier at rate `r` takes the trace when the draw is below
/// `r`, so the choice depends only on the seed and the id (not on the file's order or on the
/// other traces), and every tier reads the same draw: a trace drawn at rate 0.01 is also drawn
/// at 0.1.
pub fn draw(seed: u64, trace_id: &str) -> f64 {
    let hex = oloproof_core::identity::sha256_hex(format!("{seed}:{trace_id}").as_bytes());
    // 16 hex digits are 8 bytes; sha256_hex always returns 64 of them.
    let first = u64::from_str_radix(&hex[..16], 16).unwrap_or(0);
    // 2⁻⁶⁴ is exact in f64; rounding may carry the very top draws to 1, which the `min`
    // keeps in [0, 1).
    (first as f64 * (-64f64).exp2()).min(1.0 - f64::EPSILON)
}

/// A tier's rate in a segment and window of `n` traces: a fixed rate as it is; `auto` is
/// `min(1, target / n)` (seed 002 §5.7: the number of judgments, not the percentage, sets the
/// precision), and 1 for an empty group.
pub fn tier_rate(rate: Rate, target: u64, n: u64) -> f64 {
    match rate {
        Rate::Fixed(r) => r,
        Rate::Auto if n == 0 => 1.0,
        Rate::Auto => (target as f64 / n as f64).min(1.0),
    }
}

/// What the selection knows of one trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// Its [`draw`].
    pub draw: f64,
    /// It is an error trace.
    pub error: bool,
    /// It has negative feedback.
    pub negative_feedback: bool,
    /// An earlier tier flagged it.
    pub flagged: bool,
}

/// Why a tier at `rate` judges a trace, in order: `sampled` (its draw is under the rate),
/// `errors` and `negative_feedback` (the `always` rules, whatever the rate), `flagged` (an
/// earlier tier flagged it and the tier takes flagged traces). Empty: the tier skips it.
pub fn selection_reasons(
    c: Candidate,
    rate: f64,
    always: &[AlwaysRule],
    takes_flagged: bool,
) -> Vec<&'static str> {
    let mut reasons = Vec::new();
    if c.draw < rate {
        reasons.push("sampled");
    }
    if c.error && always.contains(&AlwaysRule::Errors) {
        reasons.push("errors");
    }
    if c.negative_feedback && always.contains(&AlwaysRule::NegativeFeedback) {
        reasons.push("negative_feedback");
    }
    if takes_flagged && c.flagged {
        reasons.push("flagged");
    }
    reasons
}

/// Decides an SLO "at least `min_share` of answers are good" from `good` of `n`: `met` when the
/// Wilson lower bound at one-sided `confidence` is at least `min_share`, `violated` when the
/// upper bound is below it, `not_demonstrated` between, `no_data` for `n = 0`. The error budget
/// is `floor((1 − min_share) · n) − (n − good)` (a small tolerance keeps `0.05 · 100` at 5).
pub fn decide_slo(good: u64, n: u64, min_share: f64, confidence: f64) -> SloDecision {
    let failures = n.saturating_sub(good);
    let allowed = ((1.0 - min_share) * n as f64 + 1e-9).floor().max(0.0) as u64;
    let mut d = SloDecision {
        state: SloState::NoData,
        share: None,
        lower_bound: None,
        upper_bound: None,
        good,
        n,
        allowed_failures: allowed,
        failures,
        budget_left: allowed as i64 - failures as i64,
    };
    let Ok(ci) = oloproof_stats::wilson(good, n, 2.0 * confidence - 1.0) else {
        return d;
    };
    d.share = Some(good as f64 / n as f64);
    d.lower_bound = Some(ci.lo);
    d.upper_bound = Some(ci.hi);
    d.state = if ci.lo >= min_share {
        SloState::Met
    } else if ci.hi < min_share {
        SloState::Violated
    } else {
        SloState::NotDemonstrated
    };
    d
}

/// Whether an interval shows a value above `max`: its lower bound is above.
pub fn above(interval: Interval, max: f64) -> bool {
    interval.lo > max
}

/// Whether an interval shows a value below `min`: its upper bound is below.
pub fn below(interval: Interval, min: f64) -> bool {
    interval.hi < min
}

/// Whether an interval lies wholly outside the band `[low, high]`.
pub fn outside(interval: Interval, band: [f64; 2]) -> bool {
    interval.hi < band[0] || interval.lo > band[1]
}

/// The 3-sigma Shewhart control limits of a share for a window of `n` traces, from the
/// reference share `p`: `p ± 3 √(p (1 − p) / n)`, clipped to `[0, 1]` (the p-chart with
/// variable sample size; D. C. Montgomery, *Introduction to Statistical Quality Control*,
/// §7.2). `None` for `n = 0`.
pub fn control_limits_share(p: f64, n: u64) -> Option<[f64; 2]> {
    if n == 0 || !p.is_finite() {
        return None;
    }
    let half = 3.0 * (p * (1.0 - p) / n as f64).sqrt();
    Some([(p - half).max(0.0), (p + half).min(1.0)])
}

/// The 3-sigma Shewhart limits of a window's mean of `n` observations, from the reference
/// observations: `x̄ ± 3 s / √n`, `s` their sample standard deviation (`n − 1` divisor; the
/// x̄ chart with a standard estimated from a reference period, Montgomery §6.2). `None` when
/// the reference has fewer than 2 observations or `n = 0`.
pub fn control_limits_mean(reference: &[f64], n: u64) -> Option<[f64; 2]> {
    let k = reference.len();
    if k < 2 || n == 0 {
        return None;
    }
    let mean = reference.iter().sum::<f64>() / k as f64;
    let var = reference.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (k - 1) as f64;
    let half = 3.0 * var.sqrt() / (n as f64).sqrt();
    Some([mean - half, mean + half])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_limits() {
        let [lo, hi] = control_limits_share(0.1, 100).unwrap();
        assert!((lo - 0.01).abs() < 1e-12 && (hi - 0.19).abs() < 1e-12);
        assert_eq!(control_limits_share(0.0, 10), Some([0.0, 0.0]));
        assert_eq!(control_limits_share(0.5, 0), None);
        let [lo, hi] = control_limits_mean(&[1.0, 2.0, 3.0], 4).unwrap();
        assert!((lo - 0.5).abs() < 1e-12 && (hi - 3.5).abs() < 1e-12);
        assert_eq!(control_limits_mean(&[1.0], 4), None);
    }

    #[test]
    fn windows_floor_on_the_epoch() {
        let day = 86_400_000;
        // 2026-11-30T09:15:02Z and the start of that UTC day.
        assert_eq!(window_start(1_796_030_102_000, day), 1_795_996_800_000);
        assert_eq!(window_start(1_795_996_800_000, day), 1_795_996_800_000);
        assert_eq!(window_start(-1, day), -day);
    }

    #[test]
    fn the_draw_is_the_hash_and_nothing_else() {
        // sha256("0:t1") = 168c3d6a 58499860 …: 0x168c3d6a58499860 / 2^64.
        let expected = 0x168c_3d6a_5849_9860u64 as f64 / 18_446_744_073_709_551_616.0;
        assert_eq!(draw(0, "t1"), expected);
        assert_eq!(draw(0, "t1"), draw(0, "t1"));
        assert_ne!(draw(0, "t1"), draw(1, "t1"));
        // Over many ids the draws are uniform enough: about 10 % under 0.1.
        let under = (0..10_000)
            .filter(|i| draw(7, &format!("trace-{i}")) < 0.1)
            .count();
        assert!((900..1100).contains(&under), "{under}");
    }

    #[test]
    fn auto_rate_targets_judgments() {
        assert_eq!(tier_rate(Rate::Auto, 200, 10_000), 0.02);
        assert_eq!(tier_rate(Rate::Auto, 200, 150), 1.0);
        assert_eq!(tier_rate(Rate::Auto, 200, 0), 1.0);
        assert_eq!(tier_rate(Rate::Fixed(0.3), 200, 10), 0.3);
    }

    /// Hand-computed Wilson bounds (z = 1.6449 for one-sided 95 %):
    /// 97/100: centre (97 + z²/2)/(100 + z²) = 98.3529/102.7055 = 0.95762, half-width
    /// z·sqrt(100·0.97·0.03 + z²/4)/(100 + z²) = 1.6449·sqrt(2.91 + 0.67642)/102.7055 = 0.03033,
    /// lower 0.92729: under 0.95 although 97 % is above it — not demonstrated.
    /// 990/1000: lower 0.98334 ≥ 0.95 — met. 80/100: upper 0.85750 < 0.95 — violated.
    #[test]
    fn slo_is_decided_on_the_wilson_lower_bound() {
        let d = decide_slo(97, 100, 0.95, 0.95);
        assert_eq!(d.state, SloState::NotDemonstrated);
        assert!((d.lower_bound.unwrap() - 0.92729).abs() < 5e-5, "{d:?}");
        assert_eq!(d.share, Some(0.97));
        assert_eq!((d.allowed_failures, d.failures, d.budget_left), (5, 3, 2));

        let d = decide_slo(990, 1000, 0.95, 0.95);
        assert_eq!(d.state, SloState::Met);
        assert!((d.lower_bound.unwrap() - 0.98334).abs() < 5e-5, "{d:?}");
        assert_eq!((d.allowed_failures, d.budget_left), (50, 40));

        let d = decide_slo(80, 100, 0.95, 0.95);
        assert_eq!(d.state, SloState::Violated);
        assert!((d.upper_bound.unwrap() - 0.85750).abs() < 5e-5, "{d:?}");
        assert_eq!(d.budget_left, -15);

        let d = decide_slo(0, 0, 0.95, 0.95);
        assert_eq!(d.state, SloState::NoData);
        assert!(d.state.fails());
        assert_eq!(d.budget_left, 0);
    }

    #[test]
    fn errors_and_negative_feedback_are_always_judged() {
        let all = [AlwaysRule::Errors, AlwaysRule::NegativeFeedback];
        let c = |draw, error, negative_feedback, flagged| Candidate {
            draw,
            error,
            negative_feedback,
            flagged,
        };
        // A rate of 0 still takes errors and negative feedback.
        assert_eq!(
            selection_reasons(c(0.5, true, false, false), 0.0, &all, true),
            ["errors"]
        );
        assert_eq!(
            selection_reasons(c(0.5, false, true, false), 0.0, &all, true),
            ["negative_feedback"]
        );
        assert!(selection_reasons(c(0.5, false, false, false), 0.0, &all, true).is_empty());
        // Under the rate: sampled, with every other reason it has.
        assert_eq!(
            selection_reasons(c(0.1, true, true, true), 0.2, &all, true),
            ["sampled", "errors", "negative_feedback", "flagged"]
        );
        // Flagged traces only for a tier that takes them; `always` as configured.
        assert!(selection_reasons(c(0.5, false, false, true), 0.2, &all, false).is_empty());
        assert!(selection_reasons(c(0.5, true, false, false), 0.2, &[], true).is_empty());
        // A draw equal to the rate is not under it; rate 1 takes every draw (all are < 1).
        assert!(selection_reasons(c(0.2, false, false, false), 0.2, &all, true).is_empty());
        assert_eq!(
            selection_reasons(c(draw(3, "x"), false, false, false), 1.0, &all, true),
            ["sampled"]
        );
    }

    #[test]
    fn interval_decisions() {
        let i = Interval::new(0.2, 0.4);
        assert!(above(i, 0.1) && !above(i, 0.3));
        assert!(below(i, 0.5) && !below(i, 0.3));
        assert!(outside(i, [0.5, 0.9]) && outside(i, [0.0, 0.1]) && !outside(i, [0.3, 0.9]));
    }
}
