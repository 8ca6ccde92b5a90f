//! Result types of a run that every reader of the store shares: how a criterion's verdicts
//! are summarised, and the stored summary of a run ([`RunSummary`]) with its parts.
//!
//! These are data: the engine computes them (`oloproof_engine::summary::summarize`), the store
//! keeps them as JSON, the report and the viewer read them back. Missing and excluded verdicts
//! are counted beside the observed ones and never averaged in as zeros.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How a criterion's verdicts are summarised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SummaryKind {
    /// Pass/fail: a proportion with the exact Clopper–Pearson interval.
    Proportion,
    /// A score in [0, 1] shown as a percentage: exact interval when every observed value is 0
    /// or 1, percentile bootstrap otherwise.
    Rate,
    /// A score: mean with a percentile bootstrap interval.
    Mean,
    /// A per-case amount where lower is better (milliseconds, tokens, dollars): its mean with
    /// a percentile bootstrap interval.
    Amount,
    /// A per-case amount where lower is better, summarised by its `q` sample quantile (numpy's
    /// linear method) with the distribution-free order-statistic interval
    /// (`oloproof_stats::quantile_interval`). Serialised as `{"quantile": 0.95}`.
    Quantile(QuantileLevel),
}

impl SummaryKind {
    /// Whether a lower value is better ([`SummaryKind::Amount`], [`SummaryKind::Quantile`]):
    /// a gate bounds it with `max:`, a comparison guards it against an increase.
    pub fn lower_is_better(self) -> bool {
        matches!(self, SummaryKind::Amount | SummaryKind::Quantile(_))
    }

    /// The quantile level of a [`SummaryKind::Quantile`].
    pub fn quantile(self) -> Option<f64> {
        match self {
            SummaryKind::Quantile(q) => Some(q.get()),
            _ => None,
        }
    }
}

/// A quantile level strictly between 0 and 1, held exactly to the millionth (so that kinds
/// compare and hash exactly); read and written as the number (`0.95`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct QuantileLevel(u32);

impl QuantileLevel {
    /// `q` rounded to the millionth; `None` unless `0 < q < 1` once rounded.
    pub fn new(q: f64) -> Option<QuantileLevel> {
        let micros = (q * 1e6).round();
        (q.is_finite() && (1.0..=999_999.0).contains(&micros))
            .then_some(QuantileLevel(micros as u32))
    }

    /// The level (`0.95`).
    pub fn get(self) -> f64 {
        f64::from(self.0) / 1e6
    }

    /// The percentile as criterion names spell it: `p50`, `p95`, `p99`, `p99_9`.
    pub fn label(self) -> String {
        let percent = f64::from(self.0) / 1e4;
        format!("p{percent}").replace('.', "_")
    }
}

impl TryFrom<f64> for QuantileLevel {
    type Error = String;
    fn try_from(q: f64) -> Result<Self, String> {
        QuantileLevel::new(q)
            .ok_or_else(|| format!("a quantile level must lie strictly between 0 and 1, got {q}"))
    }
}

impl From<QuantileLevel> for f64 {
    fn from(q: QuantileLevel) -> f64 {
        q.get()
    }
}

/// Schema version of stored summaries.
pub const SUMMARY_SCHEMA_VERSION: u32 = 1;

/// One criterion's summary.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CriterionSummary {
    /// Criterion name.
    pub criterion: String,
    /// How it is summarised.
    pub kind: SummaryKind,
    /// The proportion or mean; `None` when nothing was observed.
    pub value: Option<f64>,
    /// 95 % interval; `None` when nothing was observed.
    pub interval: Option<[f64; 2]>,
    /// `clopper_pearson`, `percentile_bootstrap` or `order_statistic`.
    pub interval_method: Option<String>,
    /// Why a criterion with a value has no interval (a quantile of too few observations for
    /// a distribution-free bound); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_interval: Option<String>,
    /// Passes (for proportions).
    pub passed: Option<u64>,
    /// Observed verdicts.
    pub observed: u64,
    /// Missing verdicts (errors).
    pub missing: u64,
    /// Excluded verdicts.
    pub excluded: u64,
    /// Exclusions by reason.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub excluded_reasons: BTreeMap<String, u64>,
    /// Cases whose judge named each failure mode (`fabrication`, `overgeneralisation`,
    /// `wrong_entity`, `stale_fact`, `other`) for an unsupported answer or claim: a case counts
    /// once per mode, whatever the number of claims, repeats or judges that named it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failure_modes: BTreeMap<String, u64>,
}

/// One slice value's summaries.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SliceSummary {
    /// Slice key (`metadata.topic`).
    pub key: String,
    /// Slice value.
    pub value: String,
    /// Cases in the slice.
    pub support: u64,
    /// Fewer cases than `min_slice_support`.
    pub below_min_support: bool,
    /// Per-criterion summaries within the slice.
    pub criteria: Vec<CriterionSummary>,
}

/// Hits and misses of one cache layer.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct HitMiss {
    /// Hits.
    pub hit: u64,
    /// Misses.
    pub miss: u64,
}

impl HitMiss {
    /// No lookup counted.
    pub fn is_zero(&self) -> bool {
        self.hit == 0 && self.miss == 0
    }

    /// Counts one lookup.
    pub fn record(&mut self, hit: bool) {
        if hit {
            self.hit += 1;
        } else {
            self.miss += 1;
        }
    }
}

/// Cache use of one invocation.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct CacheCounts {
    /// Whole executions.
    pub execution: HitMiss,
    /// Judgments.
    pub judgment: HitMiss,
    /// Retrieval stage.
    pub retrieve: HitMiss,
    /// Generation stage.
    pub generate: HitMiss,
    /// A pipeline's `rewrite` stage.
    #[serde(default, skip_serializing_if = "HitMiss::is_zero")]
    pub rewrite: HitMiss,
    /// A pipeline's `rerank` stage.
    #[serde(default, skip_serializing_if = "HitMiss::is_zero")]
    pub rerank: HitMiss,
}

impl std::ops::AddAssign for HitMiss {
    fn add_assign(&mut self, other: HitMiss) {
        self.hit += other.hit;
        self.miss += other.miss;
    }
}

impl std::ops::AddAssign for CacheCounts {
    /// Layer by layer.
    fn add_assign(&mut self, other: CacheCounts) {
        self.execution += other.execution;
        self.judgment += other.judgment;
        self.retrieve += other.retrieve;
        self.generate += other.generate;
        self.rewrite += other.rewrite;
        self.rerank += other.rerank;
    }
}

/// Latency percentiles of one stage, in milliseconds.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Percentiles {
    /// Calls measured.
    pub n: u64,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// Judge use of a run: calls, tokens and cost, summed over every verdict's calls.
///
/// `calls` are the judge calls sent to a provider, `retries` the extra HTTP requests they
/// needed (retries after 429/5xx/timeouts, the repair request, the retry of a cut-off reply),
/// so the provider saw `calls + retries` requests; `failed_calls` are the calls that ended
/// without a usable judgment (their verdict is missing); `cached_calls` were served from a
/// cache and sent nothing. Tokens and cost include the failed calls' unusable replies.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct JudgeUsage {
    /// Judge calls made (sent to a provider), failed ones included.
    pub calls: u64,
    /// Judge calls served from the cache.
    pub cached_calls: u64,
    /// Extra HTTP requests of the calls made (retries, repairs).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retries: u64,
    /// Calls that ended in an error (the verdict is missing).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed_calls: u64,
    /// Input tokens billed.
    pub input_tokens: u64,
    /// Output tokens billed.
    pub output_tokens: u64,
    /// Dollars, from the configured prices (0 without prices).
    pub cost_usd: f64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl JudgeUsage {
    /// Adds the calls recorded in a verdict's detail: `detail.calls` (each sent, or `cached`)
    /// and `detail.failed_call` (a call that ended in an error).
    pub fn add_detail(&mut self, detail: &Value) {
        let calls = detail.get("calls").and_then(Value::as_array);
        for c in calls.into_iter().flatten() {
            if c.get("cached").and_then(Value::as_bool).unwrap_or(false) {
                self.cached_calls += 1;
                continue;
            }
            self.add_sent(c);
        }
        if let Some(failed) = detail.get("failed_call").filter(|f| f.is_object()) {
            self.failed_calls += 1;
            self.add_sent(failed);
        }
    }

    fn add_sent(&mut self, c: &Value) {
        self.calls += 1;
        let attempts = c.get("attempts").and_then(Value::as_u64).unwrap_or(1);
        self.retries += attempts.saturating_sub(1);
        self.input_tokens += c.get("input_tokens").and_then(Value::as_u64).unwrap_or(0);
        self.output_tokens += c.get("output_tokens").and_then(Value::as_u64).unwrap_or(0);
        self.cost_usd += c.get("cost_usd").and_then(Value::as_f64).unwrap_or(0.0);
    }
}

/// A run's summary.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunSummary {
    /// [`SUMMARY_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The run.
    pub run_id: String,
    /// System name.
    pub system: String,
    /// System version.
    pub version: String,
    /// Cases in the run.
    pub cases: u64,
    /// Cases finished.
    pub done: u64,
    /// Cases whose execution ended in an error.
    pub errors: u64,
    /// Per criterion, in evaluator order.
    pub criteria: Vec<CriterionSummary>,
    /// Per slice value.
    pub slices: Vec<SliceSummary>,
    /// `min_slice_support` in force.
    pub min_slice_support: u64,
    /// Cache use of the invocation that finished the run.
    pub cache: CacheCounts,
    /// Stage latency percentiles (stages that actually ran).
    pub latency_ms: BTreeMap<String, Percentiles>,
    /// Bootstrap seed.
    pub bootstrap_seed: u64,
    /// Bootstrap resamples.
    pub bootstrap_resamples: usize,
    /// Judge calls, tokens and cost, when the run has judged criteria.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judges: Option<JudgeUsage>,
    /// How far repeated judgments agree, per judged criterion judged more than once a case
    /// (`run --repeats N` or an evaluator's `repeats:`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeat_agreement: Vec<RepeatAgreement>,
    /// Criteria missing on a larger share of the cases than `max_error_rate` allows (a judge
    /// that never answered, an evaluator that could not score): each makes the run incomplete
    /// (exit 4), like system errors above the rate. Set by [`IncompleteCriterion::find`] when
    /// the run finishes; empty when every criterion is within the rate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incomplete_criteria: Vec<IncompleteCriterion>,
    /// Scores recorded by another tool in the dataset (Ragas' metric columns), each beside the
    /// criterion computing the same metric, with their agreement; empty without any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub external_scores: Vec<ExternalScoreSummary>,
}

/// One external score column of a recorded dataset, and how far it agrees with ours.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ExternalScoreSummary {
    /// The column (`faithfulness`, `factual_correctness(mode=f1)`, …).
    pub column: String,
    /// Our criterion computing the same metric (see `crate::external::ours_for`); `None`
    /// when the run has none.
    pub criterion: Option<String>,
    /// Cases carrying the column.
    pub cases: u64,
    /// Of those, cases with a number (not NaN / empty).
    pub defined: u64,
    /// Mean of the defined values.
    pub mean: Option<f64>,
    /// Cases where both sides have a value (ours: a score, or pass = 1 / fail = 0).
    pub pairs: u64,
    /// Spearman's ρ over the pairs (ties averaged); `None` below two pairs or for a constant
    /// side.
    pub spearman: Option<f64>,
    /// Mean of `|ours − theirs|` over the pairs.
    pub mean_abs_diff: Option<f64>,
    /// Cases where ours has a value and theirs is NaN / absent.
    pub ours_only: u64,
    /// Cases where theirs has a value and ours is missing or excluded.
    pub theirs_only: u64,
}

/// A criterion whose verdict is missing on more than `max_error_rate` of the cases it applies
/// to: `missing / (observed + missing + excluded) > max_error_rate`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct IncompleteCriterion {
    /// The criterion.
    pub criterion: String,
    /// Cases whose verdict is missing (an error: judge failure, system error).
    pub missing: u64,
    /// Cases the criterion was computed on (observed + missing + excluded).
    pub cases: u64,
    /// The allowed share in force.
    pub max_error_rate: f64,
}

impl IncompleteCriterion {
    /// The criteria of `criteria` missing on more than `max_error_rate` of their cases, in
    /// order. A criterion with no case at all is not incomplete (nothing was asked of it).
    pub fn find(criteria: &[CriterionSummary], max_error_rate: f64) -> Vec<IncompleteCriterion> {
        criteria
            .iter()
            .filter_map(|c| {
                let cases = c.observed + c.missing + c.excluded;
                let share = if cases == 0 {
                    0.0
                } else {
                    c.missing as f64 / cases as f64
                };
                (c.missing > 0 && share > max_error_rate).then(|| IncompleteCriterion {
                    criterion: c.criterion.clone(),
                    missing: c.missing,
                    cases,
                    max_error_rate,
                })
            })
            .collect()
    }

    /// The missing share, `missing / cases`.
    pub fn share(&self) -> f64 {
        if self.cases == 0 {
            0.0
        } else {
            self.missing as f64 / self.cases as f64
        }
    }
}

/// Agreement of a judged criterion's repeated judgments of the same cases.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RepeatAgreement {
    /// The criterion.
    pub criterion: String,
    /// Judgments per case.
    pub repeats: u32,
    /// Cases with at least two defined repeat values.
    pub cases: u64,
    /// Of those, the cases whose repeats all gave the same value.
    pub identical: u64,
    /// Krippendorff's alpha with the repeats as coders and the cases as units (`None` when
    /// undefined, e.g. every value identical).
    pub alpha: Option<f64>,
    /// Alpha's metric: `nominal` for pass/fail criteria, `interval` for scores.
    pub level: String,
}
