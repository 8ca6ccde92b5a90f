//! Statistics for Oloproof: confidence intervals for pass rates and means, and paired tests for
//! comparing two systems on the same cases. No I/O, no clock, no global random state: every
//! random procedure takes an explicit `seed` and gives the same answer on every machine.
//!
//! - **Proportions** (a pass rate `k / n`): [`clopper_pearson`] (exact; what run summaries print)
//!   and [`wilson`] (score interval; what monitoring compares with a target).
//! - **Means** (scores in `[0, 1]`): [`percentile_bootstrap_mean`], with the sample [`quantile`]
//!   definition it uses.
//! - **Paired comparisons** (`oloproof compare`, `oloproof trec --compare`): for pass/fail
//!   criteria, [`paired_proportion_difference`] (Tango's score interval over [`PairedCounts`]);
//!   for scores, [`paired_bootstrap_test`] (its interval); and [`paired_t_test`],
//!   [`randomization_test`], with [`holm`] to adjust several p-values.
//! - **Pairwise preferences** (`compare --pairwise`): [`sign_test`], the exact two-sided sign
//!   test of wins against losses (ties dropped), and [`win_rate_at_least`], the decision on the
//!   exact interval of the win rate among decided cases.
//! - **Decisions** a comparison policy declares: [`non_inferiority`] and [`superiority`] read a
//!   difference interval as a [`Decision`] — `PASS`, `FAIL` or `INSUFFICIENT_EVIDENCE` with a
//!   [`reason`] code.
//! - **Quantiles** (latency p95, cost p99): [`quantile_interval`], the distribution-free
//!   order-statistic interval (scipy's `quantile_test(...).confidence_interval`).
//! - **Drift** ([`drift`]): the kernel two-sample test ([`mmd_permutation_test`], unbiased
//!   MMD² with a median-heuristic Gaussian kernel and a permutation p-value) and the
//!   Jensen–Shannon distance of reference-quantile bins ([`binned_divergence`]), for
//!   `oloproof monitor`'s query drift.
//! - **Display**: [`Interval::round_outward`] rounds an interval to a grid without ever
//!   shrinking it.
//!
//! Undefined statistics are errors, never NaN: an empty sample is
//! [`StatsError::EmptySample`], which a report shows as "no interval".
//!
//! ```
//! use oloproof_stats::{
//!     clopper_pearson, non_inferiority, paired_proportion_difference, percentile_bootstrap_mean,
//!     Interval, PairedCounts, StatsError,
//! };
//!
//! // A pass rate: 9 of 13 cases, 95 % exact interval, printed to 0.1 percentage points.
//! let ci = clopper_pearson(9, 13, 0.95)?.round_outward(0.001);
//! assert_eq!(ci, Interval::new(0.385, 0.910));
//!
//! // A mean score: percentile bootstrap, 10,000 resamples, recorded seed.
//! let ndcg = [0.63, 1.0, 0.5, 1.0, 0.92, 0.0, 1.0, 0.77];
//! let ci = percentile_bootstrap_mean(&ndcg, 10_000, 0x5eed, 0.95)?;
//! assert!(ci.lo < 0.7275 && 0.7275 < ci.hi);
//!
//! // Two runs that agree on all 13 cases: no change, but no evidence of "no change" either.
//! let agree = PairedCounts { both_pass: 9, candidate_only: 0, baseline_only: 0, both_fail: 4 };
//! let ci = paired_proportion_difference(agree, 0.95)?;
//! let points = Interval::new(100.0 * ci.lo, 100.0 * ci.hi);
//! assert_eq!(non_inferiority(points, 5.0).to_string(), "INSUFFICIENT_EVIDENCE");
//!
//! // No cases, no interval.
//! assert_eq!(clopper_pearson(0, 0, 0.95), Err(StatsError::EmptySample));
//! # Ok::<(), StatsError>(())
//! ```
#![warn(missing_docs)]

mod bootstrap;
mod decision;
pub mod drift;
mod error;
mod grouped_bootstrap;
mod interval;
mod multiple;
mod paired;
mod paired_proportion;
mod paired_ratio;
pub mod pooled;
pub mod power;
mod proportion;
pub mod quantile;
mod quantile_interval;
mod sign_test;
mod statistic_bootstrap;

pub use bootstrap::{percentile_bootstrap_mean, quantile};
pub use decision::{non_inferiority, ratio_at_most, reason, superiority, Decision, Verdict3};
pub use drift::{
    binned_divergence, cosine, cosine_to_centroid, jensen_shannon_distance, mmd_permutation_test,
    BinnedDivergence, MmdTest,
};
pub use error::{StatsError, UnknownQuantileMethod};
pub use grouped_bootstrap::{percentile_bootstrap_mean_grouped, MAX_GROUPED_LEVELS};
pub use interval::Interval;
pub use multiple::holm;
pub use paired::{
    paired_bootstrap_test, paired_t_test, randomization_test, PairedBootstrap, TestResult,
};
pub use paired_proportion::{paired_proportion_difference, PairedCounts};
pub use paired_ratio::{paired_ratio, PairedRatio, RatioStatistic};
pub use proportion::{clopper_pearson, wilson};
pub use quantile_interval::{quantile_interval, quantile_interval_min_n, QuantileInterval};
pub use sign_test::{sign_test, win_rate_at_least, win_rate_reason, SignTest};
pub use statistic_bootstrap::percentile_bootstrap_statistic;
