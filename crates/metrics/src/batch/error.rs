//! The error of a batch metric: a bad row (located by line and field), a bad option, a
//! statistic that failed for a reason other than "too few items", or an embedding model that
//! failed.

use oloproof_stats::StatsError;

/// Why a batch metric could not be computed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetricError {
    /// A row of the input is wrong: `field` on the 1-based `line`.
    #[error("line {line}: field `{field}`: {message}")]
    Field {
        /// 1-based line of the input.
        line: usize,
        /// The field at fault.
        field: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// An option, or the input as a whole, is wrong (`--k 0`, a missing `--taxonomy`, …).
    #[error("{message}")]
    Usage {
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A statistic failed on input it should accept (not merely "too few items", which is an
    /// absent interval, never an error).
    #[error("cannot compute the statistic: {0}")]
    Stats(#[from] StatsError),
    /// The embedding model given by `--model` failed.
    #[error("--model {model}: {source}")]
    Embedding {
        /// The `--model` value.
        model: String,
        /// The model's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl MetricError {
    /// An error about `field` on `line`.
    pub fn at(line: usize, field: &str, message: String) -> Self {
        MetricError::Field {
            line,
            field: field.to_string(),
            message,
        }
    }

    /// An error about the options or the input as a whole.
    pub fn usage(message: String) -> Self {
        MetricError::Usage { message }
    }

    /// The 1-based input line the error is about, if any.
    pub fn line(&self) -> Option<usize> {
        match self {
            MetricError::Field { line, .. } => Some(*line),
            _ => None,
        }
    }

    /// The error without its location: the message after `line N: field `F`: `.
    pub fn message(&self) -> String {
        match self {
            MetricError::Field { message, .. } | MetricError::Usage { message } => message.clone(),
            other => other.to_string(),
        }
    }
}

/// `Ok(None)` when a statistic is undefined for lack of data ([`StatsError::EmptySample`],
/// [`StatsError::TooFewPairs`]), the error otherwise: the one place an interval may be absent
/// without an error being swallowed.
pub(crate) fn unless_insufficient<T>(
    result: Result<T, StatsError>,
) -> Result<Option<T>, MetricError> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_insufficient_data() => Ok(None),
        Err(e) => Err(MetricError::Stats(e)),
    }
}
