//! Single-label classification reports exactly as scikit-learn 1.9's
//! `precision_recall_fscore_support` and `classification_report`, plus accuracy (and routing
//! accuracy, which is accuracy over routes).
//!
//! Per class `c` (labels sorted, the union of both sides, as `sklearn.utils.unique_labels` for
//! strings): `tp` = items with truth `c` and prediction `c`; precision `tp / predicted`, recall
//! `tp / true`, F1 `2·tp / (true + predicted)` (scikit-learn ≥ 1.3 computes F from the counts,
//! not from P and R). Micro pools the counts (for single-label data micro P = R = F1 =
//! accuracy, which `classification_report` prints as its `accuracy` row); macro is the
//! unweighted mean over classes; weighted is the mean weighted by support.
//!
//! **Zero division** ([`ZeroDivision`]): a precision with no predictions of the class, or a
//! recall with no true items of it, is 0 (scikit-learn's default `"warn"`, and `0`), 1 (`1`) or
//! undefined (`np.nan`: `None` here). Undefined per-class values are left out of the averages
//! (scikit-learn's `_nanaverage`); if every weight left is zero the weighted average falls back
//! to the plain mean, as scikit-learn does; an average over no defined value is `None`.

use super::ClassifyError;

/// Value of a precision, recall or F1 whose denominator is zero (scikit-learn's
/// `zero_division`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ZeroDivision {
    /// 0 (scikit-learn's default `"warn"`, and `0`).
    #[default]
    Zero,
    /// 1.
    One,
    /// Undefined (`np.nan`): `None`, left out of the averages.
    Undefined,
}

impl ZeroDivision {
    fn value(self) -> Option<f64> {
        match self {
            ZeroDivision::Zero => Some(0.0),
            ZeroDivision::One => Some(1.0),
            ZeroDivision::Undefined => None,
        }
    }
}

impl std::str::FromStr for ZeroDivision {
    type Err = crate::error::UnknownWord;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "0" | "warn" => Ok(ZeroDivision::Zero),
            "1" => Ok(ZeroDivision::One),
            "nan" | "none" | "undefined" => Ok(ZeroDivision::Undefined),
            _ => Err(crate::error::UnknownWord {
                what: "zero division",
                value: s.to_string(),
                expected: "0, 1 or nan",
            }),
        }
    }
}

/// Precision, recall, F1 (each `None` when undefined) and support.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClassScores {
    /// Precision.
    pub precision: Option<f64>,
    /// Recall.
    pub recall: Option<f64>,
    /// F1.
    pub f1: Option<f64>,
    /// Number of true items (for averages: all items).
    pub support: u64,
}

/// One class of a [`ClassificationReport`].
#[derive(Debug, Clone, PartialEq)]
pub struct ClassRow {
    /// The label.
    pub label: String,
    /// Its scores.
    pub scores: ClassScores,
    /// Items with this truth and this prediction.
    pub true_positives: u64,
    /// Items predicted as this class.
    pub predicted: u64,
}

/// scikit-learn's `classification_report(..., output_dict=True)`.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassificationReport {
    /// One row per label, sorted.
    pub per_class: Vec<ClassRow>,
    /// Micro average (equal to accuracy for single-label data).
    pub micro: ClassScores,
    /// Macro average.
    pub macro_avg: ClassScores,
    /// Support-weighted average.
    pub weighted: ClassScores,
    /// Share of items whose prediction equals the truth (`accuracy_score`).
    pub accuracy: f64,
}

fn divide(num: f64, den: u64, zd: ZeroDivision) -> Option<f64> {
    if den == 0 {
        zd.value()
    } else {
        Some(num / den as f64)
    }
}

/// scikit-learn's `_nanaverage`: weighted mean of the defined values; plain mean if their weights
/// sum to zero; `None` if none is defined.
fn nan_average(values: &[Option<f64>], weights: Option<&[u64]>) -> Option<f64> {
    let defined: Vec<(f64, u64)> = values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| (v, weights.map_or(1, |w| w[i]))))
        .collect();
    if defined.is_empty() {
        return None;
    }
    let total: u64 = defined.iter().map(|d| d.1).sum();
    if weights.is_none() || total == 0 {
        return Some(defined.iter().map(|d| d.0).sum::<f64>() / defined.len() as f64);
    }
    Some(defined.iter().map(|d| d.0 * d.1 as f64).sum::<f64>() / total as f64)
}

/// Accuracy: share of positions where `y_pred` equals `y_true` (`sklearn.metrics.accuracy_score`;
/// routing accuracy is this over expected and chosen routes). `None` on empty input; errors when
/// the lengths differ.
pub fn accuracy<S: AsRef<str>>(y_true: &[S], y_pred: &[S]) -> Result<Option<f64>, ClassifyError> {
    check(y_true, y_pred)?;
    let equal = y_true
        .iter()
        .zip(y_pred)
        .filter(|(a, b)| a.as_ref() == b.as_ref())
        .count();
    Ok((!y_true.is_empty()).then(|| equal as f64 / y_true.len() as f64))
}

fn check<S: AsRef<str>>(y_true: &[S], y_pred: &[S]) -> Result<(), ClassifyError> {
    if y_true.len() != y_pred.len() {
        return Err(ClassifyError::LengthMismatch {
            what: "items".into(),
            left: y_true.len(),
            right: y_pred.len(),
        });
    }
    Ok(())
}

/// Per-class and averaged precision, recall, F1 and support of single-label predictions, as
/// scikit-learn's `classification_report(y_true, y_pred, zero_division=…, output_dict=True)`
/// (see the module documentation). `None` on empty input (scikit-learn raises); errors when the
/// lengths differ.
///
/// ```
/// use oloproof_metrics::classify::report::{classification_report, ZeroDivision};
///
/// let truth = ["cat", "dog", "cat", "pig"];
/// let pred = ["cat", "cat", "cat", "pig"];
/// let r = classification_report(&truth, &pred, ZeroDivision::Zero)?.unwrap();
/// assert_eq!(r.accuracy, 0.75);
/// assert_eq!(r.per_class[0].scores.precision, Some(2.0 / 3.0));
/// assert_eq!(r.per_class[1].scores.precision, Some(0.0)); // `dog` never predicted
/// # Ok::<(), oloproof_metrics::classify::ClassifyError>(())
/// ```
pub fn classification_report<S: AsRef<str>>(
    y_true: &[S],
    y_pred: &[S],
    zero_division: ZeroDivision,
) -> Result<Option<ClassificationReport>, ClassifyError> {
    check(y_true, y_pred)?;
    if y_true.is_empty() {
        return Ok(None);
    }
    let mut labels: Vec<&str> = y_true.iter().chain(y_pred).map(AsRef::as_ref).collect();
    labels.sort_unstable();
    labels.dedup();
    let index = |l: &str| labels.binary_search(&l).unwrap_or_default();
    let k = labels.len();
    let (mut tp, mut n_true, mut n_pred) = (vec![0u64; k], vec![0u64; k], vec![0u64; k]);
    for (t, p) in y_true.iter().zip(y_pred) {
        let (t, p) = (index(t.as_ref()), index(p.as_ref()));
        n_true[t] += 1;
        n_pred[p] += 1;
        if t == p {
            tp[t] += 1;
        }
    }
    let zd = zero_division;
    let scores = |tp: u64, pred: u64, truth: u64| ClassScores {
        precision: divide(tp as f64, pred, zd),
        recall: divide(tp as f64, truth, zd),
        f1: divide(2.0 * tp as f64, truth + pred, zd),
        support: truth,
    };
    let per_class: Vec<ClassRow> = (0..k)
        .map(|c| ClassRow {
            label: labels[c].to_string(),
            scores: scores(tp[c], n_pred[c], n_true[c]),
            true_positives: tp[c],
            predicted: n_pred[c],
        })
        .collect();
    let n = y_true.len() as u64;
    let sum_tp: u64 = tp.iter().sum();
    let micro = scores(sum_tp, n, n);
    let column = |f: fn(&ClassScores) -> Option<f64>| -> Vec<Option<f64>> {
        per_class.iter().map(|r| f(&r.scores)).collect()
    };
    let (p, r, f) = (
        column(|s| s.precision),
        column(|s| s.recall),
        column(|s| s.f1),
    );
    let macro_avg = ClassScores {
        precision: nan_average(&p, None),
        recall: nan_average(&r, None),
        f1: nan_average(&f, None),
        support: n,
    };
    let weighted = ClassScores {
        precision: nan_average(&p, Some(&n_true)),
        recall: nan_average(&r, Some(&n_true)),
        f1: nan_average(&f, Some(&n_true)),
        support: n,
    };
    Ok(Some(ClassificationReport {
        per_class,
        micro,
        macro_avg,
        weighted,
        accuracy: sum_tp as f64 / n as f64,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sklearn_docstring_example() {
        // sklearn's precision_recall_fscore_support docstring.
        let t = ["cat", "dog", "pig", "cat", "dog", "pig"];
        let p = ["cat", "pig", "dog", "cat", "cat", "dog"];
        let r = classification_report(&t, &p, ZeroDivision::Zero)
            .unwrap()
            .unwrap();
        assert!((r.macro_avg.precision.unwrap() - 0.2222222222222222).abs() < 1e-15);
        assert!((r.macro_avg.recall.unwrap() - 0.3333333333333333).abs() < 1e-15);
        assert!((r.macro_avg.f1.unwrap() - 0.26666666666666666).abs() < 1e-15);
        assert_eq!(r.micro.f1, Some(1.0 / 3.0));
    }

    #[test]
    fn undefined_zero_division_is_left_out() {
        let t = ["a", "a"];
        let p = ["b", "b"];
        let r = classification_report(&t, &p, ZeroDivision::Undefined)
            .unwrap()
            .unwrap();
        assert_eq!(r.per_class[0].scores.precision, None);
        assert_eq!(r.macro_avg.precision, Some(0.0));
        // The only defined precision (class b) has weight 0: plain mean.
        assert_eq!(r.weighted.precision, Some(0.0));
        assert_eq!(accuracy(&t, &p).unwrap(), Some(0.0));
        assert!(classification_report::<&str>(&[], &[], ZeroDivision::Zero)
            .unwrap()
            .is_none());
    }
}
