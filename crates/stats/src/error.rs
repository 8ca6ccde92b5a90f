//! The error type of this crate: every way an input can make a statistic undefined.
//!
//! Functions return `Result<_, StatsError>` rather than a NaN, so a caller can never mistake "no
//! data" for a number. The variant says what was wrong and carries the offending value.

/// Why a statistic could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StatsError {
    /// There were no observations (`n = 0`, or an empty slice): the statistic is undefined.
    ///
    /// Callers usually report this as "no interval" rather than as a failure.
    #[error("no observations: the statistic is undefined for an empty sample")]
    EmptySample,
    /// A paired statistic needs at least `needed` pairs and got `got`.
    #[error("too few pairs: {got} given, at least {needed} needed")]
    TooFewPairs {
        /// How many pairs were given.
        got: usize,
        /// The minimum the statistic needs.
        needed: usize,
    },
    /// The confidence level is not strictly between 0 and 1.
    #[error("confidence level must be strictly between 0 and 1, got {confidence}")]
    InvalidConfidence {
        /// The rejected confidence level.
        confidence: f64,
    },
    /// A count of successes exceeds the number of trials.
    #[error("{successes} successes out of {trials} trials: successes cannot exceed trials")]
    SuccessesExceedTrials {
        /// The number of successes `k`.
        successes: u64,
        /// The number of trials `n`.
        trials: u64,
    },
    /// The two samples of a paired statistic have different lengths.
    #[error("paired samples differ in length: {left} and {right}")]
    LengthMismatch {
        /// Length of the first sample.
        left: usize,
        /// Length of the second sample.
        right: usize,
    },
    /// An observation is NaN or infinite.
    #[error("observation {index} is not finite ({value})")]
    NonFinite {
        /// Position of the observation in its slice.
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// A resampling procedure was asked for zero resamples or permutations.
    #[error("the number of resamples must be at least 1")]
    NoResamples,
    /// The cells of a table of counts add up to more than `u64::MAX`.
    #[error("the counts add up to more than 2^64 - 1")]
    CountOverflow,
    /// A sample has fewer observations than the statistic needs (a within-sample mean of
    /// pairs needs 2; equal-frequency bins need enough values to cut).
    #[error("too few observations: {got} given, at least {needed} needed")]
    TooFewObservations {
        /// How many were given.
        got: usize,
        /// The minimum the statistic needs.
        needed: usize,
    },
    /// A vector's length differs from the first vector's.
    #[error("vector {index} has {got} coordinates, the first has {expected}")]
    DimensionMismatch {
        /// Position of the vector (over the samples in order).
        index: usize,
        /// The first vector's length.
        expected: usize,
        /// This vector's length.
        got: usize,
    },
    /// A vector of norm 0 where a direction is needed (a cosine).
    #[error("a vector has norm 0: its direction is undefined")]
    ZeroVector,
    /// A kernel bandwidth that is not positive and finite.
    #[error("kernel bandwidth must be positive and finite, got {bandwidth}")]
    InvalidBandwidth {
        /// The rejected bandwidth.
        bandwidth: f64,
    },
    /// A quantile level is not strictly between 0 and 1.
    #[error("quantile level must be strictly between 0 and 1, got {q}")]
    InvalidQuantile {
        /// The rejected level.
        q: f64,
    },
}

impl StatsError {
    /// True when the error only means "there was nothing to measure" ([`StatsError::EmptySample`],
    /// [`StatsError::TooFewPairs`] or [`StatsError::TooFewObservations`]), as opposed to a caller bug such as a bad confidence level.
    pub fn is_insufficient_data(&self) -> bool {
        matches!(
            self,
            Self::EmptySample | Self::TooFewPairs { .. } | Self::TooFewObservations { .. }
        )
    }
}

/// Check that `confidence` lies in the open interval (0, 1).
pub(crate) fn check_confidence(confidence: f64) -> Result<(), StatsError> {
    if confidence > 0.0 && confidence < 1.0 {
        Ok(())
    } else {
        Err(StatsError::InvalidConfidence { confidence })
    }
}

/// Check that every value is finite.
pub(crate) fn check_finite(values: &[f64]) -> Result<(), StatsError> {
    match values.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(StatsError::NonFinite {
            index,
            value: values[index],
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confidence_bounds_are_open() {
        assert!(check_confidence(0.95).is_ok());
        for bad in [0.0, 1.0, -0.1, 1.5, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                check_confidence(bad),
                Err(StatsError::InvalidConfidence { .. })
            ));
        }
    }

    #[test]
    fn non_finite_is_located() {
        assert_eq!(check_finite(&[1.0, 2.0]), Ok(()));
        let err = check_finite(&[1.0, f64::INFINITY, f64::NAN]).unwrap_err();
        assert_eq!(
            err,
            StatsError::NonFinite {
                index: 1,
                value: f64::INFINITY
            }
        );
        assert_eq!(err.to_string(), "observation 1 is not finite (inf)");
    }

    #[test]
    fn insufficient_data_is_distinguished() {
        assert!(StatsError::EmptySample.is_insufficient_data());
        assert!(StatsError::TooFewPairs { got: 1, needed: 2 }.is_insufficient_data());
        assert!(!StatsError::NoResamples.is_insufficient_data());
    }
}

/// A quantile method name that is not one of [`QuantileMethod::ALL`](crate::quantile::QuantileMethod::ALL).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown quantile method `{name}`: expected one of {expected}")]
pub struct UnknownQuantileMethod {
    /// The name as given.
    pub name: String,
    /// The known names, comma-separated.
    pub expected: String,
}
