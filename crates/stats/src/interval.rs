//! [`Interval`], the closed interval every estimator of this crate returns, and its outward
//! rounding for display.

/// A closed interval `[lo, hi]` with `lo <= hi`, such as a confidence interval.
///
/// Every constructor in this crate returns finite bounds with `lo <= hi`; the fields are public
/// so callers can build their own.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// The lower bound.
    pub lo: f64,
    /// The upper bound.
    pub hi: f64,
}

/// Relative tolerance under which a scaled bound counts as sitting exactly on a grid point.
///
/// `0.75 / 0.001` evaluates to `750.0000000000001`; without the snap, ceiling it would move an
/// exact bound a whole step outward. Binary rounding noise is ~1e-16 relative, so 1e-9 leaves a
/// wide margin while never moving a bound by more than 1e-9 steps inward.
const GRID_SNAP: f64 = 1e-9;

impl Interval {
    /// Create an interval from its bounds (not checked: `lo <= hi` is the caller's promise).
    pub const fn new(lo: f64, hi: f64) -> Self {
        Self { lo, hi }
    }

    /// `hi - lo`.
    pub fn width(self) -> f64 {
        self.hi - self.lo
    }

    /// Whether `x` lies in the closed interval.
    pub fn contains(self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }

    /// Round outward to a grid of `step`: the lower bound down (`floor(lo / step) * step`) and the
    /// upper bound up (`ceil(hi / step) * step`), so the rounded interval always contains the
    /// exact one. This is how a report prints an interval without overstating its precision:
    /// `step = 0.001` is 0.1 percentage points.
    ///
    /// Robust against floating-point noise: a bound within a relative `1e-9` of a grid point is
    /// taken to be on it, so an exact `1.0` stays `1.0` and `0.75` stays `0.75` rather than moving
    /// a step outward. When `1 / step` is (within the same tolerance) an integer, the result is
    /// computed as `m / (1 / step)`, the correctly rounded decimal (`0.385`, not
    /// `0.38500000000000006`).
    ///
    /// No clamping is applied: rounding `[0, 0.95]` with `step = 0.3` gives `[0, 1.2]`. If `step`
    /// is not a positive finite number the interval is returned unchanged.
    ///
    /// ```
    /// use oloproof_stats::Interval;
    ///
    /// let ci = Interval::new(0.385_72, 0.909_07).round_outward(0.001);
    /// assert_eq!(ci, Interval::new(0.385, 0.910));
    /// assert_eq!(Interval::new(0.75, 1.0).round_outward(0.001), Interval::new(0.75, 1.0));
    /// ```
    pub fn round_outward(self, step: f64) -> Interval {
        if !(step.is_finite() && step > 0.0) {
            return self;
        }
        Interval {
            lo: to_grid(self.lo, step, f64::floor),
            hi: to_grid(self.hi, step, f64::ceil),
        }
    }
}

/// Round `x` to the grid of `step` with `round` (floor or ceil), snapping values that are
/// within [`GRID_SNAP`] of a grid point onto it.
fn to_grid(x: f64, step: f64, round: fn(f64) -> f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    let inverse = 1.0 / step;
    let inverse_rounded = inverse.round();
    let integral_inverse =
        inverse_rounded >= 1.0 && (inverse - inverse_rounded).abs() <= GRID_SNAP * inverse;
    let scaled = if integral_inverse {
        x * inverse_rounded
    } else {
        x / step
    };
    let nearest = scaled.round();
    let m = if (scaled - nearest).abs() <= GRID_SNAP * nearest.abs().max(1.0) {
        nearest
    } else {
        round(scaled)
    };
    let value = if integral_inverse {
        m / inverse_rounded
    } else {
        m * step
    };
    // Avoid a negative zero from e.g. ceil(-0.2) * step.
    if value == 0.0 {
        0.0
    } else {
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_outward_on_the_permille_grid() {
        let ci = Interval::new(0.385_719_5, 0.909_069_1).round_outward(0.001);
        assert_eq!(ci, Interval::new(0.385, 0.91));
        let ci = Interval::new(0.639_7, 0.998_1).round_outward(0.001);
        assert_eq!(ci, Interval::new(0.639, 0.999));
    }

    #[test]
    fn exact_grid_points_stay_put() {
        for (lo, hi) in [
            (0.0, 1.0),
            (0.75, 0.75),
            (0.1, 0.3),
            (0.385, 0.91),
            (0.7, 0.9),
        ] {
            assert_eq!(
                Interval::new(lo, hi).round_outward(0.001),
                Interval::new(lo, hi)
            );
        }
        // Noise from arithmetic is absorbed: 0.1 + 0.2 = 0.30000000000000004.
        assert_eq!(
            Interval::new(0.1 + 0.2, 0.1 + 0.2).round_outward(0.001),
            Interval::new(0.3, 0.3)
        );
        // Every exact permille value survives.
        for m in 0..=1000 {
            let x = f64::from(m) / 1000.0;
            assert_eq!(
                Interval::new(x, x).round_outward(0.001),
                Interval::new(x, x)
            );
        }
    }

    #[test]
    fn result_contains_the_original() {
        let mut x = 0.123_456_789_f64;
        for _ in 0..1000 {
            x = (x * 9301.0 + 0.492_7).fract();
            let y = (x + 0.37).min(1.0);
            let ci = Interval::new(x, y);
            let rounded = ci.round_outward(0.001);
            assert!(rounded.lo <= ci.lo + 1e-12 && rounded.hi >= ci.hi - 1e-12);
            assert!(ci.lo - rounded.lo < 0.001 && rounded.hi - ci.hi < 0.001);
        }
    }

    #[test]
    fn negative_bounds_and_other_steps() {
        let ci = Interval::new(-0.123_4, 2.345_6).round_outward(0.01);
        assert_eq!(ci, Interval::new(-0.13, 2.35));
        let ci = Interval::new(-0.0004, 0.0).round_outward(0.001);
        assert_eq!(ci, Interval::new(-0.001, 0.0));
        let ci = Interval::new(-0.2, -0.0001).round_outward(0.5);
        assert_eq!(ci, Interval::new(-0.5, 0.0));
        assert!(ci.hi.is_sign_positive());
        // A step whose inverse is not an integer.
        let ci = Interval::new(0.1, 0.95).round_outward(0.3);
        assert!((ci.lo - 0.0).abs() < 1e-15 && (ci.hi - 1.2).abs() < 1e-12);
        // A step larger than one.
        assert_eq!(
            Interval::new(3.0, 17.0).round_outward(5.0),
            Interval::new(0.0, 20.0)
        );
    }

    #[test]
    fn invalid_step_is_identity() {
        let ci = Interval::new(0.123, 0.456);
        for step in [0.0, -0.1, f64::NAN, f64::INFINITY] {
            assert_eq!(ci.round_outward(step), ci);
        }
    }

    #[test]
    fn width_and_contains() {
        let ci = Interval::new(0.25, 0.75);
        assert_eq!(ci.width(), 0.5);
        assert!(ci.contains(0.25) && ci.contains(0.75) && !ci.contains(0.76));
    }
}
