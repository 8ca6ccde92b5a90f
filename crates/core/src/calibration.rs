//! A judge's calibration against human labels (`oloproof calibrate`), as stored and read back:
//! agreement, Cohen's kappa (unweighted, linear, quadratic), Spearman's rho and Kendall's tau-b,
//! each with its bootstrap interval, the confusion matrix, and whether the judge passed the
//! config's `min_kappa`.
//!
//! These are data: the statistics are computed by `oloproof_engine::calibrate` (over
//! `oloproof_metrics::agreement`), the report renders them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// An agreement statistic with its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The value (`None`: undefined, e.g. kappa with one category).
    pub value: Option<f64>,
    /// 95 % percentile bootstrap interval.
    pub interval: Option<[f64; 2]>,
}

/// A finished calibration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// `sha256:<hex>` of the content.
    pub id: String,
    /// The judge.
    pub judge: String,
    /// The evaluator type calibrated.
    pub evaluator: String,
    /// Identity of what was calibrated.
    pub identity: String,
    /// Items judged.
    pub n: usize,
    /// Items whose judgment failed (`missing`), left out of the statistics.
    pub missing: Vec<String>,
    /// Share of items where the judge's category equals the human's.
    pub agreement: Estimate,
    /// Cohen's kappa, unweighted.
    pub kappa: Estimate,
    /// Linearly weighted kappa.
    pub kappa_linear: Estimate,
    /// Quadratically weighted kappa.
    pub kappa_quadratic: Estimate,
    /// Spearman's rho.
    pub spearman: Estimate,
    /// Kendall's tau-b.
    pub kendall_tau_b: Estimate,
    /// Confusion matrix: `human label → judge label → count`.
    pub confusion: BTreeMap<String, BTreeMap<String, u64>>,
    /// The threshold declared in the config.
    pub min_kappa: f64,
    /// Which kappa the threshold applies to (`none`, `linear`, `quadratic`).
    pub weights: String,
    /// Whether the judge passed.
    pub passed: bool,
    /// Bootstrap seed and resamples.
    pub bootstrap: [u64; 2],
}
