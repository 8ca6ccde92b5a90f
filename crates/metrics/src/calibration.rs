//! Calibration and answer-consistency metrics: expected calibration error with equal-width
//! bins and the reliability-diagram data, self-consistency agreement across samples, and
//! abstention precision and recall.
//!
//! **Bins.** [`ece`] splits `[0, 1]` into `M` equal-width bins with edges `k/M` (the double
//! nearest to `k/M`, computed as a division, not `k·(1/M)`). Bin `m` (0-based) holds the
//! confidences `c` with `m/M ≤ c < (m+1)/M`: a confidence exactly on an inner edge goes to the
//! bin above it; 0 is in the first bin and 1 in the last (the last bin is closed). This is
//! numpy's `np.searchsorted(edges[1:-1], c, side="right")` with `edges = np.arange(M+1)/M`, the
//! transcription the reference test compares with; torchmetrics' `CalibrationError` uses the
//! same lower-inclusive bins but float32 `linspace` edges, so a confidence on an edge may land
//! elsewhere there. Confidences outside `[0, 1]` are an error.
//!
//! `ECE = Σ_m (|B_m| / n)·|acc(B_m) − conf(B_m)|` (Naeini, Cooper and Hauskrecht, AAAI 2015;
//! Guo et al., ICML 2017), with `acc` the share of correct answers and `conf` the mean
//! confidence of the bin; the maximum calibration error (MCE) is the largest gap of a
//! non-empty bin.
//!
//! ```
//! use oloproof_metrics::calibration::ece;
//!
//! let confidence = [0.95, 0.9, 0.85, 0.6, 0.3];
//! let correct = [true, true, false, true, false];
//! let c = ece(&confidence, &correct, 10)?.unwrap();
//! // Bins: [0.3] acc 0, [0.6] acc 1, [0.85] acc 0, [0.9, 0.95] acc 1.
//! let expected = (0.3 + 0.4 + 0.85 + 2.0 * (1.0 - 0.925)) / 5.0;
//! assert!((c.ece - expected).abs() < 1e-12);
//! assert_eq!(c.bins[9].count, 2);
//! # Ok::<(), oloproof_metrics::calibration::CalibrationError>(())
//! ```

/// Errors of the calibration metrics.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CalibrationError {
    /// Confidences and outcomes differ in length.
    #[error("{confidences} confidences but {outcomes} outcomes")]
    LengthMismatch {
        /// Number of confidences.
        confidences: usize,
        /// Number of outcomes.
        outcomes: usize,
    },
    /// A confidence outside `[0, 1]` (or NaN).
    #[error("confidence {0} is outside [0, 1]")]
    BadConfidence(f64),
    /// Zero bins.
    #[error("the number of bins must be at least 1")]
    NoBins,
}

/// One bin of the reliability diagram.
#[derive(Debug, Clone, PartialEq)]
pub struct Bin {
    /// Lower edge `m/M` (inclusive).
    pub lower: f64,
    /// Upper edge `(m+1)/M` (exclusive, except 1 for the last bin).
    pub upper: f64,
    /// Number of answers in the bin.
    pub count: usize,
    /// Mean confidence; `None` for an empty bin.
    pub mean_confidence: Option<f64>,
    /// Share of correct answers; `None` for an empty bin.
    pub accuracy: Option<f64>,
}

/// Expected and maximum calibration error with the reliability-diagram data.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// Expected calibration error.
    pub ece: f64,
    /// Maximum calibration error over non-empty bins.
    pub mce: f64,
    /// Every bin, empty ones included.
    pub bins: Vec<Bin>,
}

/// The bin of confidence `c` among `bins` equal-width bins (see the module documentation).
pub fn bin_index(c: f64, bins: usize) -> usize {
    let m = bins as f64;
    let edge = |k: usize| k as f64 / m;
    let mut i = ((c * m).floor().max(0.0) as usize).min(bins - 1);
    while i + 1 < bins && c >= edge(i + 1) {
        i += 1;
    }
    while i > 0 && c < edge(i) {
        i -= 1;
    }
    i
}

/// Expected calibration error of `confidence` against `correct` with `bins` equal-width bins.
/// `None` on empty input; errors on a length mismatch, zero bins or a confidence outside
/// `[0, 1]`.
pub fn ece(
    confidence: &[f64],
    correct: &[bool],
    bins: usize,
) -> Result<Option<Calibration>, CalibrationError> {
    if confidence.len() != correct.len() {
        return Err(CalibrationError::LengthMismatch {
            confidences: confidence.len(),
            outcomes: correct.len(),
        });
    }
    if bins == 0 {
        return Err(CalibrationError::NoBins);
    }
    if let Some(&c) = confidence.iter().find(|c| !(0.0..=1.0).contains(*c)) {
        return Err(CalibrationError::BadConfidence(c));
    }
    if confidence.is_empty() {
        return Ok(None);
    }
    let mut count = vec![0usize; bins];
    let mut conf_sum = vec![0f64; bins];
    let mut hits = vec![0usize; bins];
    for (&c, &ok) in confidence.iter().zip(correct) {
        let b = bin_index(c, bins);
        count[b] += 1;
        conf_sum[b] += c;
        hits[b] += usize::from(ok);
    }
    let n = confidence.len() as f64;
    let (mut total, mut max) = (0.0, 0.0f64);
    let bins: Vec<Bin> = (0..bins)
        .map(|b| {
            let (mean_confidence, accuracy) = if count[b] == 0 {
                (None, None)
            } else {
                let k = count[b] as f64;
                let (c, a) = (conf_sum[b] / k, hits[b] as f64 / k);
                total += k / n * (a - c).abs();
                max = max.max((a - c).abs());
                (Some(c), Some(a))
            };
            Bin {
                lower: b as f64 / bins as f64,
                upper: (b + 1) as f64 / bins as f64,
                count: count[b],
                mean_confidence,
                accuracy,
            }
        })
        .collect();
    Ok(Some(Calibration {
        ece: total,
        mce: max,
        bins,
    }))
}

/// Agreement of one item's sampled answers (self-consistency, Wang et al., ICLR 2023).
#[derive(Debug, Clone, PartialEq)]
pub struct Consistency {
    /// Index of the first sample carrying the majority (modal) answer; ties between answers
    /// go to the one that appears first.
    pub majority: usize,
    /// Share of samples equal to the majority answer.
    pub agreement: f64,
    /// Number of distinct answers.
    pub distinct: usize,
}

/// Self-consistency of one item's samples, compared exactly (normalise them before, e.g. with
/// [`crate::text::normalize_answer`]). `None` without samples.
///
/// ```
/// use oloproof_metrics::calibration::self_consistency;
///
/// let c = self_consistency(&["Paris", "Lyon", "Paris", "Paris"]).unwrap();
/// assert_eq!((c.majority, c.agreement, c.distinct), (0, 0.75, 2));
/// ```
pub fn self_consistency<S: AsRef<str>>(samples: &[S]) -> Option<Consistency> {
    let mut counts: std::collections::HashMap<&str, (usize, usize)> = Default::default();
    for (i, s) in samples.iter().enumerate() {
        counts.entry(s.as_ref()).or_insert((0, i)).0 += 1;
    }
    let (&_, &(count, first)) = counts
        .iter()
        .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then(b.1 .1.cmp(&a.1 .1)))?;
    Some(Consistency {
        majority: first,
        agreement: count as f64 / samples.len() as f64,
        distinct: counts.len(),
    })
}

/// Abstention precision and recall over cases.
#[derive(Debug, Clone, PartialEq)]
pub struct Abstention {
    /// Cases where the system abstained and abstention was expected.
    pub correct: u64,
    /// Cases where the system abstained.
    pub abstained: u64,
    /// Cases where abstention was expected.
    pub expected: u64,
    /// `correct / abstained` (share of abstentions that were right); `None` without
    /// abstentions.
    pub precision: Option<f64>,
    /// `correct / expected` (share of out-of-scope cases that got an abstention); `None` when
    /// no case expects one.
    pub recall: Option<f64>,
    /// Harmonic mean of the two; `None` unless both are defined, 0 when both are 0.
    pub f1: Option<f64>,
}

/// Abstention precision and recall from `(expected, abstained)` per case: an abstention is
/// correct when the case expects one (NoMIRACL-style refusal evaluation).
///
/// ```
/// use oloproof_metrics::calibration::abstention;
///
/// let a = abstention(&[(true, true), (true, false), (false, true), (false, false)]);
/// assert_eq!((a.precision, a.recall), (Some(0.5), Some(0.5)));
/// ```
pub fn abstention(cases: &[(bool, bool)]) -> Abstention {
    let correct = cases.iter().filter(|(e, a)| *e && *a).count() as u64;
    let abstained = cases.iter().filter(|(_, a)| *a).count() as u64;
    let expected = cases.iter().filter(|(e, _)| *e).count() as u64;
    let precision = (abstained > 0).then(|| correct as f64 / abstained as f64);
    let recall = (expected > 0).then(|| correct as f64 / expected as f64);
    let f1 = match (precision, recall) {
        (Some(p), Some(r)) if p + r > 0.0 => Some(2.0 * p * r / (p + r)),
        (Some(_), Some(_)) => Some(0.0),
        _ => None,
    };
    Abstention {
        correct,
        abstained,
        expected,
        precision,
        recall,
        f1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_go_to_the_bin_above() {
        assert_eq!(bin_index(0.0, 10), 0);
        assert_eq!(bin_index(0.3, 10), 3);
        assert_eq!(bin_index(0.7, 10), 7);
        assert_eq!(bin_index(0.29999999999999993, 10), 2);
        assert_eq!(bin_index(1.0, 10), 9);
        assert_eq!(bin_index(0.5, 1), 0);
        for k in 0..15 {
            assert_eq!(bin_index(k as f64 / 15.0, 15), k.min(14));
        }
    }

    #[test]
    fn ece_errors_and_empty() {
        assert_eq!(ece(&[], &[], 10), Ok(None));
        assert_eq!(
            ece(&[1.5], &[true], 10),
            Err(CalibrationError::BadConfidence(1.5))
        );
        assert_eq!(ece(&[0.5], &[true], 0), Err(CalibrationError::NoBins));
    }

    #[test]
    fn consistency_ties_go_to_the_first_answer() {
        let c = self_consistency(&["b", "a", "a", "b"]).unwrap();
        assert_eq!((c.majority, c.agreement), (0, 0.5));
        assert!(self_consistency::<&str>(&[]).is_none());
    }
}
