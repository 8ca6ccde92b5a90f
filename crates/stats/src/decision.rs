//! Decisions a comparison policy declares before any data is seen — non-inferiority within a
//! margin, superiority — read off a confidence interval for the difference candidate − baseline.
//!
//! Each decision has three outcomes, [`Verdict3`], because a small sample often settles neither
//! way: [`Verdict3::InsufficientEvidence`] is an answer, not an error. Each carries a stable
//! reason code (see [`reason`]) that the report prints beside it.
//!
//! The rule is the confidence-interval form of a one-sided test: with a two-sided `1 − 2α`
//! interval, "the lower bound clears the boundary" is a level-`α` test that the true difference
//! lies above it (ICH E9, *Statistical principles for clinical trials*, 1998, §3.3.2; S. Wellek,
//! *Testing Statistical Hypotheses of Equivalence and Noninferiority*, 2nd ed., 2010). A
//! 95 % interval therefore tests non-inferiority at one-sided 2.5 %.
//!
//! **Boundaries.** A closed interval that touches the boundary contains it, so it does not
//! settle the question: PASS and FAIL need the interval strictly on one side. Superiority is
//! exactly non-inferiority with a zero margin, with its own reason codes; a zero-width interval
//! `[0, 0]` (two identical score vectors under the bootstrap) is `INSUFFICIENT_EVIDENCE`, not a
//! pass and not a fail.
//!
//! **Not finite.** The functions take any `f64`s and never panic. A NaN bound or margin gives
//! `INSUFFICIENT_EVIDENCE` with the "overlaps" reason, never `PASS`; infinite bounds compare as
//! numbers. The policy reader is where a margin must be checked to be finite and positive.

use std::fmt;

/// The reason codes a [`Decision`] carries: stable identifiers, printed as they are.
pub mod reason {
    /// Non-inferiority: the interval lies strictly above `−margin`.
    pub const INTERVAL_ABOVE_MARGIN: &str = "interval_above_margin";
    /// Non-inferiority: the interval lies strictly below `−margin`.
    pub const INTERVAL_BELOW_MARGIN: &str = "interval_below_margin";
    /// Non-inferiority: the interval contains `−margin` (or a bound is NaN).
    pub const INTERVAL_OVERLAPS_MARGIN: &str = "interval_overlaps_margin";
    /// Superiority: the interval lies strictly above 0.
    pub const INTERVAL_ABOVE_ZERO: &str = "interval_above_zero";
    /// Superiority: the interval lies strictly below 0.
    pub const INTERVAL_BELOW_ZERO: &str = "interval_below_zero";
    /// Superiority: the interval contains 0 (or a bound is NaN).
    pub const INTERVAL_OVERLAPS_ZERO: &str = "interval_overlaps_zero";
    /// Guardrail: the ratio's interval lies strictly below the largest ratio allowed.
    pub const RATIO_BELOW_LIMIT: &str = "ratio_below_limit";
    /// Guardrail: the ratio's interval lies strictly above the largest ratio allowed.
    pub const RATIO_ABOVE_LIMIT: &str = "ratio_above_limit";
    /// Guardrail: the ratio's interval contains the largest ratio allowed (or a bound is NaN).
    pub const RATIO_OVERLAPS_LIMIT: &str = "ratio_overlaps_limit";
}

/// The three outcomes of a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict3 {
    /// The data establish the claim at the interval's confidence.
    Pass,
    /// The data establish the opposite of the claim.
    Fail,
    /// The interval is too wide to tell: neither the claim nor its opposite is established.
    InsufficientEvidence,
}

impl Verdict3 {
    /// `PASS`, `FAIL` or `INSUFFICIENT_EVIDENCE`, as reports and stored comparisons spell it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Verdict3::Pass => "PASS",
            Verdict3::Fail => "FAIL",
            Verdict3::InsufficientEvidence => "INSUFFICIENT_EVIDENCE",
        }
    }
}

impl fmt::Display for Verdict3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// A verdict and the reason code that explains it (one of the [`reason`] constants).
///
/// `Display` prints the verdict alone (`PASS`, `FAIL`, `INSUFFICIENT_EVIDENCE`, honouring width
/// and alignment), so a report can lay out the reason in its own column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Decision {
    /// The outcome.
    pub verdict: Verdict3,
    /// Why, as a stable `snake_case` code.
    pub reason: &'static str,
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.verdict, f)
    }
}

/// Non-inferiority of the candidate within `margin`: is the difference candidate − baseline
/// above `−margin`?
///
/// `interval` is a confidence interval for the difference, in the same units as `margin`
/// (points with points, fractions with fractions); `margin` is positive.
///
/// ```text
/// lo > −m              PASS                    interval_above_margin
/// hi < −m              FAIL                    interval_below_margin
/// otherwise            INSUFFICIENT_EVIDENCE   interval_overlaps_margin
/// ```
///
/// # Example
///
/// ```
/// use oloproof_stats::{non_inferiority, Interval, Verdict3};
///
/// // The seed: no change on 13 cases, margin 5 points: the interval is far too wide to tell.
/// let d = non_inferiority(Interval::new(-22.9, 22.9), 5.0);
/// assert_eq!(d.verdict, Verdict3::InsufficientEvidence);
/// assert_eq!((d.to_string(), d.reason), ("INSUFFICIENT_EVIDENCE".into(), "interval_overlaps_margin"));
///
/// assert_eq!(non_inferiority(Interval::new(-1.2, 3.0), 2.0).reason, "interval_above_margin");
/// ```
pub fn non_inferiority(interval: crate::Interval, margin: f64) -> Decision {
    against(
        interval,
        -margin,
        [
            reason::INTERVAL_ABOVE_MARGIN,
            reason::INTERVAL_BELOW_MARGIN,
            reason::INTERVAL_OVERLAPS_MARGIN,
        ],
    )
}

/// A guardrail on a lower-is-better amount (latency, cost): is the ratio candidate / baseline
/// below `limit` (`1.10` for "not more than 10 % worse")? The same one-sided rule as
/// [`non_inferiority`], read off an interval for the ratio:
///
/// ```text
/// hi < limit           PASS                    ratio_below_limit
/// lo > limit           FAIL                    ratio_above_limit
/// otherwise            INSUFFICIENT_EVIDENCE   ratio_overlaps_limit
/// ```
///
/// ```
/// use oloproof_stats::{ratio_at_most, Interval, Verdict3};
///
/// assert_eq!(ratio_at_most(Interval::new(0.92, 1.04), 1.10).verdict, Verdict3::Pass);
/// assert_eq!(ratio_at_most(Interval::new(1.31, 1.62), 1.10).reason, "ratio_above_limit");
/// assert_eq!(ratio_at_most(Interval::new(0.95, 1.25), 1.10).verdict, Verdict3::InsufficientEvidence);
/// ```
pub fn ratio_at_most(interval: crate::Interval, limit: f64) -> Decision {
    if interval.hi < limit {
        Decision {
            verdict: Verdict3::Pass,
            reason: reason::RATIO_BELOW_LIMIT,
        }
    } else if interval.lo > limit {
        Decision {
            verdict: Verdict3::Fail,
            reason: reason::RATIO_ABOVE_LIMIT,
        }
    } else {
        Decision {
            verdict: Verdict3::InsufficientEvidence,
            reason: reason::RATIO_OVERLAPS_LIMIT,
        }
    }
}

/// Superiority of the candidate: is the difference candidate − baseline above 0?
///
/// ```text
/// lo > 0               PASS                    interval_above_zero
/// hi < 0               FAIL                    interval_below_zero
/// otherwise            INSUFFICIENT_EVIDENCE   interval_overlaps_zero
/// ```
///
/// This is [`non_inferiority`] with a zero margin, with its own reason codes. An interval that
/// touches 0 (`hi = 0` or `lo = 0`) overlaps it: `[−3, 0]` is `INSUFFICIENT_EVIDENCE`, not `FAIL`
/// — only a positive difference has been ruled out, which is not the same as showing the
/// candidate worse. The gate blocks on anything but `PASS` either way.
///
/// # Example
///
/// ```
/// use oloproof_stats::{superiority, Interval, Verdict3};
///
/// assert_eq!(superiority(Interval::new(0.4, 6.1)).verdict, Verdict3::Pass);
/// assert_eq!(superiority(Interval::new(-6.1, -0.4)).reason, "interval_below_zero");
/// assert_eq!(superiority(Interval::new(0.0, 0.0)).reason, "interval_overlaps_zero");
/// ```
pub fn superiority(interval: crate::Interval) -> Decision {
    against(
        interval,
        0.0,
        [
            reason::INTERVAL_ABOVE_ZERO,
            reason::INTERVAL_BELOW_ZERO,
            reason::INTERVAL_OVERLAPS_ZERO,
        ],
    )
}

/// Place `interval` against `boundary`: strictly above, strictly below, or neither.
fn against(
    interval: crate::Interval,
    boundary: f64,
    [above, below, overlaps]: [&'static str; 3],
) -> Decision {
    let any_nan = interval.lo.is_nan() || interval.hi.is_nan() || boundary.is_nan();
    let (verdict, reason) = if any_nan {
        (Verdict3::InsufficientEvidence, overlaps)
    } else if interval.lo > boundary {
        (Verdict3::Pass, above)
    } else if interval.hi < boundary {
        (Verdict3::Fail, below)
    } else {
        (Verdict3::InsufficientEvidence, overlaps)
    };
    Decision { verdict, reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Interval;

    fn ni(lo: f64, hi: f64, m: f64) -> (Verdict3, &'static str) {
        let d = non_inferiority(Interval::new(lo, hi), m);
        (d.verdict, d.reason)
    }

    fn sup(lo: f64, hi: f64) -> (Verdict3, &'static str) {
        let d = superiority(Interval::new(lo, hi));
        (d.verdict, d.reason)
    }

    #[test]
    fn non_inferiority_table() {
        use Verdict3::*;
        assert_eq!(ni(-4.9, 10.0, 5.0), (Pass, "interval_above_margin"));
        assert_eq!(ni(1.0, 2.0, 5.0), (Pass, "interval_above_margin"));
        assert_eq!(ni(-9.0, -5.1, 5.0), (Fail, "interval_below_margin"));
        assert_eq!(
            ni(-33.6, 33.6, 5.0),
            (InsufficientEvidence, "interval_overlaps_margin")
        );
        assert_eq!(
            ni(-6.0, -5.5, 2.0),
            (Fail, "interval_below_margin"),
            "a wide margin miss"
        );
        // Touching the boundary is overlapping it, on either side.
        assert_eq!(
            ni(-5.0, 1.0, 5.0),
            (InsufficientEvidence, "interval_overlaps_margin")
        );
        assert_eq!(
            ni(-7.0, -5.0, 5.0),
            (InsufficientEvidence, "interval_overlaps_margin")
        );
        // Degenerate intervals.
        assert_eq!(ni(0.0, 0.0, 5.0), (Pass, "interval_above_margin"));
        assert_eq!(ni(-5.0, -5.0, 5.0).0, InsufficientEvidence);
    }

    #[test]
    fn superiority_table() {
        use Verdict3::*;
        assert_eq!(sup(0.1, 3.0), (Pass, "interval_above_zero"));
        assert_eq!(sup(-3.0, -0.1), (Fail, "interval_below_zero"));
        assert_eq!(
            sup(-0.1, 0.1),
            (InsufficientEvidence, "interval_overlaps_zero")
        );
        assert_eq!(
            sup(0.0, 2.0),
            (InsufficientEvidence, "interval_overlaps_zero")
        );
        assert_eq!(
            sup(-2.0, 0.0),
            (InsufficientEvidence, "interval_overlaps_zero")
        );
        assert_eq!(
            sup(0.0, 0.0),
            (InsufficientEvidence, "interval_overlaps_zero")
        );
    }

    #[test]
    fn superiority_is_non_inferiority_at_zero_margin() {
        for (lo, hi) in [(-2.0, -1.0), (-1.0, 1.0), (1.0, 2.0), (0.0, 0.0)] {
            let s = superiority(Interval::new(lo, hi)).verdict;
            assert_eq!(s, non_inferiority(Interval::new(lo, hi), 0.0).verdict);
        }
    }

    #[test]
    fn not_finite_never_passes() {
        for (lo, hi, m) in [
            (f64::NAN, 1.0, 5.0),
            (1.0, f64::NAN, 5.0),
            (1.0, 2.0, f64::NAN),
            (f64::NAN, f64::NAN, 5.0),
        ] {
            assert_eq!(ni(lo, hi, m).0, Verdict3::InsufficientEvidence);
        }
        assert_eq!(sup(f64::NAN, 1.0).0, Verdict3::InsufficientEvidence);
        // Infinite bounds are ordinary numbers here.
        assert_eq!(
            ni(f64::NEG_INFINITY, 1.0, 5.0).0,
            Verdict3::InsufficientEvidence
        );
        assert_eq!(ni(-1.0, f64::INFINITY, 5.0).0, Verdict3::Pass);
    }

    #[test]
    fn display_spells_the_verdict() {
        assert_eq!(Verdict3::Pass.to_string(), "PASS");
        assert_eq!(Verdict3::Fail.to_string(), "FAIL");
        assert_eq!(
            Verdict3::InsufficientEvidence.to_string(),
            "INSUFFICIENT_EVIDENCE"
        );
        let d = non_inferiority(Interval::new(-1.0, 1.0), 0.5);
        assert_eq!(d.to_string(), "INSUFFICIENT_EVIDENCE");
        assert_eq!(
            format!("{:<6}|", superiority(Interval::new(1.0, 2.0))),
            "PASS  |"
        );
    }
}
