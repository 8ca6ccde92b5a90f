//! The `monitor:` section of `oloproof.yaml`: what `oloproof monitor` evaluates over production
//! traffic, how it samples, and what it alerts on.
//!
//! ```yaml
//! monitor:
//!   traffic: traffic.jsonl                  # trace records with a `production` key
//!   segments: [metadata.intent]
//!   window: {size: 1d, rolling: 7d}
//!   sampling:
//!     target_judgments: 200                 # per segment and window
//!     always: [errors, negative_feedback]
//!     tiers:
//!       - {evaluators: [schema_validity], rate: 1.0}
//!       - {evaluators: [faithfulness], rate: auto}
//!   slos:
//!     - {criterion: faithfulness, score_above: 0.8, min_share: 0.95, on: wilson_lower_bound}
//!   alerts:
//!     - {type: latency_p95, stage: total, max_ms: 1500}
//!     - {type: cost_per_request, max_usd: 0.01}
//! ```
//!
//! The types here hold the section as written (serde, unknown keys refused, every error at
//! `file:line:col` through [`crate::source::YamlDocument`]); [`validate_monitor`] checks the
//! values serde cannot (ranges, spans that fit, a criterion named in two tiers). Whether a
//! tier's evaluators exist is checked by the engine, which knows the criteria of `evaluators:`.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::config::{attribute, Price};
use crate::source::{SourceError, YamlDocument};

/// `monitor:`: online evaluation of production traffic.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MonitorOptions {
    /// The traffic file (trace JSONL with `production`, as `oloproof import` writes it),
    /// relative to the config's folder; `oloproof monitor --traffic FILE` overrides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic: Option<String>,
    /// Segment keys, `metadata.<path>` (`metadata.intent`, `metadata.tenant`): every window is
    /// reported per combination of their values.
    #[serde(default)]
    pub segments: Vec<String>,
    /// How traffic is cut in time.
    pub window: WindowOptions,
    /// Which traces each tier of evaluators judges.
    #[serde(default)]
    pub sampling: SamplingOptions,
    /// Quality SLOs, each a proportion decided on its Wilson lower bound.
    #[serde(default)]
    pub slos: Vec<SloOptions>,
    /// Guardrails (seed 000 Part 10): what makes `monitor` exit 3.
    #[serde(default)]
    pub alerts: Vec<AlertOptions>,
    /// The human-review queue (`monitor --review-queue N`).
    #[serde(default)]
    pub review: ReviewOptions,
    /// Drift: query drift against a reference window, embedding drift on a probe set,
    /// performance drift against a control band.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<DriftOptions>,
    /// Shadow evaluation: the project's `system:` (the candidate) run over a window's
    /// questions and compared with production case by case, under a comparison policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadow: Option<ShadowOptions>,
}

/// `monitor.shadow` (seed 000 Part 10, "shadow"): the candidate system — the `system:` of the
/// config `monitor` reads — answers the questions production answered in a window, both
/// sides are judged by the same evaluators, and the two runs are compared case by case under
/// a written policy (the `oloproof compare` format), whose gate joins the monitor's exit code.
///
/// ```yaml
/// shadow:
///   policy: shadow-policy.yaml          # decisions, as for `oloproof compare`
///   window: latest                      # latest | horizon | a window's start (2026-11-30)
///   evaluators: [entity_grounding]      # default: every tier's criteria
///   max_cases: 200                      # the smallest draws of the window's traces
/// ```
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ShadowOptions {
    /// The comparison policy (YAML, as `oloproof compare --policy` reads), relative to the
    /// config's folder: the candidate is the policy's candidate, production its baseline.
    pub policy: String,
    /// Whose questions: `latest` (the latest window, the default), `horizon` (every window
    /// of the SLO horizon), or a window's start as a date or RFC 3339 time.
    #[serde(default = "default_shadow_window")]
    pub window: String,
    /// The criteria compared (each judged by a tier); default: every tier's criteria.
    #[serde(default)]
    pub evaluators: Vec<String>,
    /// Most traces compared: above it, the ones with the smallest draw (the sampling draw,
    /// so the tiers have mostly judged the production side already). Default 200.
    #[serde(default = "default_shadow_cases")]
    pub max_cases: usize,
}

fn default_shadow_window() -> String {
    "latest".to_string()
}

fn default_shadow_cases() -> usize {
    200
}

/// `monitor.drift` (seed 000 Part 10, "Détection du drift"):
///
/// ```yaml
/// drift:
///   embedder: mini                # a `judges:` key: provider local, kind embedding
///   reference: {window: first}    # first | previous | a window's start, e.g. 2026-11-28
///   permutations: 1000            # of the MMD test
///   alpha: 0.01                   # after Holm over the horizon's tests
///   probes: {file: probes.jsonl}  # vectors stored beside it on the first run
///   performance:
///     - {signal: regeneration, by: metadata.intent, band: [0.0, 0.1]}
///     - {criterion: faithfulness}  # no band: the reference window's control band
/// ```
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DriftOptions {
    /// The judge that embeds queries and probes (a key of `judges:` with `provider: local`,
    /// `kind: embedding`), so drift runs offline. Needed by query and probe drift.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder: Option<String>,
    /// What each window's queries are compared with (default: the first window).
    #[serde(default)]
    pub reference: DriftReference,
    /// Query drift on or off (default on when `embedder` is set).
    #[serde(default = "default_true")]
    pub queries: bool,
    /// Also test each segment of `monitor.segments` apart (default: the whole window only).
    #[serde(default)]
    pub per_segment: bool,
    /// Random relabellings of the MMD permutation test (default 1000).
    #[serde(default = "default_permutations")]
    pub permutations: usize,
    /// Significance level of the query-drift alert, applied to the Holm-adjusted p-values of
    /// the horizon's tests (default 0.01).
    #[serde(default = "default_alpha")]
    pub alpha: f64,
    /// Seed of the permutations and of the query subsample (default 0).
    #[serde(default)]
    pub seed: u64,
    /// Most queries per window (and per reference) embedded and tested: above it, the ones
    /// with the smallest draw (`sha256("drift:<seed>:<trace id>")`) (default 500; the test
    /// costs `O(permutations · n²)`).
    #[serde(default = "default_max_queries")]
    pub max_queries: usize,
    /// Bins of the binned divergence (default: `min(10, reference size / 5)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bins: Option<usize>,
    /// Embedding drift on a fixed probe set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<ProbeOptions>,
    /// Performance drift: a signal or criterion per segment against a control band.
    #[serde(default)]
    pub performance: Vec<PerformanceOptions>,
}

fn default_true() -> bool {
    true
}

fn default_permutations() -> usize {
    1000
}

fn default_alpha() -> f64 {
    0.01
}

fn default_max_queries() -> usize {
    500
}

/// `monitor.drift.reference`: the window each window is compared with.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DriftReference {
    /// `first` (the earliest window), `previous` (each window against the one before), or
    /// the start of a window as a date or RFC 3339 time (`2026-11-28`).
    pub window: String,
}

impl Default for DriftReference {
    fn default() -> Self {
        DriftReference {
            window: "first".to_string(),
        }
    }
}

/// `monitor.drift.probes`: a fixed set of texts re-embedded on every run and compared with the
/// vectors stored on the first.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProbeOptions {
    /// JSONL of `{"id": ..., "text": ...}` (`id` optional: the line number), relative to the
    /// config's folder.
    pub file: String,
    /// Where the stored vectors live (default: the probe file with `.vectors.json` in place
    /// of its extension); written when absent, never overwritten.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vectors: Option<String>,
    /// The alert fires when a probe's cosine to its stored vector is under this (default
    /// 0.99).
    #[serde(default = "default_min_cosine")]
    pub min_cosine: f64,
}

fn default_min_cosine() -> f64 {
    0.99
}

/// `monitor.drift.performance[i]`: one signal or criterion per segment and window against a
/// control band.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PerformanceOptions {
    /// A feedback signal: `regeneration` (share of traces regenerated), `thumbs_down`,
    /// `follow_up`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// Or a criterion judged by one of the tiers (its mean on the sampled traces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// The segment key (`metadata.intent`); default: `monitor.segments`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// A fixed band `[low, high]`: fires when the window's 95 % interval lies wholly outside
    /// it. Absent: the reference window's control band (3-sigma Shewhart limits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band: Option<[f64; 2]>,
}

/// The feedback signals `drift.performance` reads.
pub const PERFORMANCE_SIGNALS: &[&str] = &["regeneration", "thumbs_down", "follow_up"];

/// `monitor.window`: windows of `size` (cut on `production.timestamp`, aligned on the Unix
/// epoch in UTC, so a `1d` window is a UTC calendar day), and the `rolling` horizon the SLOs
/// and alerts read: the last `rolling / size` windows, ending with the latest.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WindowOptions {
    /// One window's length (`1d`, `6h`, `30m`).
    pub size: Span,
    /// The SLO and alert horizon, a whole number of windows (`7d`); default: one window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling: Option<Span>,
}

impl WindowOptions {
    /// The horizon in windows (at least 1).
    pub fn horizon_windows(&self) -> i64 {
        self.rolling
            .as_ref()
            .map_or(1, |r| (r.ms / self.size.ms.max(1)).max(1))
    }
}

/// A length of time written `<whole number><unit>`, unit `ms`, `s`, `m`, `h`, `d` or `w`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// As written (`7d`).
    pub text: String,
    /// In milliseconds.
    pub ms: i64,
}

impl Span {
    /// Parses `7d`, `6h`, `30m`, `90s`, `500ms`, `2w`; `None` for anything else (no unit, a
    /// fraction, zero, a negative number, an overflow).
    pub fn parse(text: &str) -> Option<Span> {
        let t = text.trim();
        let split = t.find(|c: char| !c.is_ascii_digit())?;
        let (digits, unit) = t.split_at(split);
        let n: i64 = digits.parse().ok()?;
        let unit_ms: i64 = match unit {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "w" => 7 * 86_400_000,
            _ => return None,
        };
        let ms = n.checked_mul(unit_ms).filter(|ms| *ms > 0)?;
        Some(Span {
            text: t.to_string(),
            ms,
        })
    }
}

impl Serialize for Span {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Span {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Span::parse(&text).ok_or_else(|| {
            serde::de::Error::invalid_value(
                serde::de::Unexpected::Str(&text),
                &"a length of time such as 1d, 6h, 30m (a whole number and one of ms, s, m, h, d, w)",
            )
        })
    }
}

/// `monitor.sampling`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SamplingOptions {
    /// Judgments wanted per segment and window: a tier's `rate: auto` is
    /// `min(1, target_judgments / traces in the segment and window)` (default 200).
    #[serde(default = "default_target")]
    pub target_judgments: u64,
    /// Seed of the selection (recorded in the output): a trace is drawn when the first 8 bytes
    /// of `sha256("<seed>:<trace id>")`, read as a fraction of 2⁶⁴, fall under the rate.
    #[serde(default)]
    pub seed: u64,
    /// Traces every tier judges whatever its rate (default: both kinds).
    #[serde(default = "default_always")]
    pub always: Vec<AlwaysRule>,
    /// The tiers, cheapest first.
    #[serde(default)]
    pub tiers: Vec<TierOptions>,
}

impl Default for SamplingOptions {
    fn default() -> Self {
        SamplingOptions {
            target_judgments: default_target(),
            seed: 0,
            always: default_always(),
            tiers: Vec::new(),
        }
    }
}

fn default_target() -> u64 {
    200
}

fn default_always() -> Vec<AlwaysRule> {
    vec![AlwaysRule::Errors, AlwaysRule::NegativeFeedback]
}

/// Traces judged by every tier, whatever its rate (seed 002 §5.7: non-negotiable).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum AlwaysRule {
    /// A trace with an error (`production.error`, or a failed stage).
    Errors,
    /// A trace with negative feedback (a thumbs-down or a regeneration:
    /// [`crate::production::Feedback::is_negative`]).
    NegativeFeedback,
}

impl AlwaysRule {
    /// `errors` or `negative_feedback`.
    pub fn name(self) -> &'static str {
        match self {
            AlwaysRule::Errors => "errors",
            AlwaysRule::NegativeFeedback => "negative_feedback",
        }
    }
}

/// One tier: criteria of `evaluators:` judged on a share of the traffic.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TierOptions {
    /// Criteria of the config's `evaluators:` (an entry's `criterion:`, else its type's).
    pub evaluators: Vec<String>,
    /// A share in [0, 1], or `auto` ([`SamplingOptions::target_judgments`]).
    pub rate: Rate,
    /// Whether the tier also judges every trace an earlier tier flagged (a fail, or a score
    /// under that tier's `flag_below`); default: yes for every tier after the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flagged: Option<bool>,
    /// A score of this tier under this value flags the trace for the later tiers (default
    /// 0.5); a `fail` always flags; for the criterion a `filter_false_exclusion` alert reads
    /// (lower is better) any positive score flags; latency, tokens and cost never do.
    #[serde(default = "default_flag_below")]
    pub flag_below: f64,
}

fn default_flag_below() -> f64 {
    0.5
}

/// A tier's sampling rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rate {
    /// A fixed share of the traces.
    Fixed(f64),
    /// `min(1, target_judgments / n)` per segment and window.
    Auto,
}

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Rate::Fixed(r) => serializer.serialize_f64(*r),
            Rate::Auto => serializer.serialize_str("auto"),
        }
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Rate;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a share in [0, 1] such as 0.1, or `auto`")
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Rate, E> {
                Ok(Rate::Fixed(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Rate, E> {
                Ok(Rate::Fixed(v as f64))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Rate, E> {
                Ok(Rate::Fixed(v as f64))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Rate, E> {
                if v == "auto" {
                    Ok(Rate::Auto)
                } else {
                    Err(E::invalid_value(serde::de::Unexpected::Str(v), &self))
                }
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// `monitor.slos[i]`: "at least `min_share` of evaluated answers score above `score_above`
/// over the rolling horizon", met only when the Wilson lower bound of the share reaches
/// `min_share` (never on the point value).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SloOptions {
    /// A criterion judged by one of the tiers.
    pub criterion: String,
    /// A score strictly above this is good (a `pass` is 1, a `fail` 0).
    pub score_above: f64,
    /// The share of good answers promised, in (0, 1).
    pub min_share: f64,
    /// The bound the decision reads: only `wilson_lower_bound`.
    #[serde(default)]
    pub on: SloBound,
    /// One-sided confidence of the lower bound (default 0.95: the lower end of the two-sided
    /// 90 % Wilson interval).
    #[serde(default = "default_confidence")]
    pub confidence: f64,
}

fn default_confidence() -> f64 {
    0.95
}

/// What an SLO is decided on.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum SloBound {
    /// The Wilson score interval's lower bound.
    #[default]
    WilsonLowerBound,
}

/// `monitor.alerts[i]`: one guardrail of seed 000 Part 10.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum AlertOptions {
    /// The p95 of a stage's latency (`latency_ms.<stage>`, or `total`) over `max_ms`: fires
    /// when the order-statistic 95 % interval's lower bound is above it.
    LatencyP95 {
        /// `total` (default), `rewrite`, `retrieve`, `fuse`, `rerank`, `count_tokens`,
        /// `generate`.
        #[serde(default = "default_stage")]
        stage: String,
        /// The most milliseconds allowed.
        max_ms: f64,
    },
    /// The mean cost of a request (its `usage` priced by `system.rag.prices`, as the `cost`
    /// evaluator) over `max_usd`: fires when the bootstrap interval's lower bound is above it.
    CostPerRequest {
        /// The most dollars per request.
        max_usd: f64,
        /// Dollars per million tokens per model (default: `system.rag.prices`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prices: Option<BTreeMap<String, Price>>,
    },
    /// A judged criterion below `min` on the rolling sample: fires when the upper bound of its
    /// 95 % interval is below `min` (the evidence says it is under).
    CriterionBelow {
        /// A criterion judged by one of the tiers.
        criterion: String,
        /// The lowest acceptable mean (or pass rate).
        min: f64,
    },
    /// The filter false-exclusion rate (criterion `filter_false_exclusion`) over `max_rate`:
    /// fires when its Wilson 95 % lower bound is above it.
    FilterFalseExclusion {
        /// The highest acceptable rate, in [0, 1].
        max_rate: f64,
        /// The criterion (default `filter_false_exclusion`).
        #[serde(default = "default_exclusion_criterion")]
        criterion: String,
    },
    /// The share of traces with a `regenerated` feedback outside `[band[0], band[1]]`: fires
    /// when its Wilson 95 % interval lies wholly outside the band.
    RegenerationRate {
        /// The control band `[low, high]`, shares in [0, 1].
        band: [f64; 2],
    },
}

fn default_stage() -> String {
    "total".to_string()
}

fn default_exclusion_criterion() -> String {
    "filter_false_exclusion".to_string()
}

impl AlertOptions {
    /// The alert's `type`.
    pub fn type_name(&self) -> &'static str {
        match self {
            AlertOptions::LatencyP95 { .. } => "latency_p95",
            AlertOptions::CostPerRequest { .. } => "cost_per_request",
            AlertOptions::CriterionBelow { .. } => "criterion_below",
            AlertOptions::FilterFalseExclusion { .. } => "filter_false_exclusion",
            AlertOptions::RegenerationRate { .. } => "regeneration_rate",
        }
    }
}

/// `monitor.review`: what `--review-queue` adds to its blind random sample.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ReviewOptions {
    /// A judged score within this distance of an SLO's `score_above` is low-confidence and
    /// joins the queue (default 0.1).
    #[serde(default = "default_margin")]
    pub low_confidence_margin: f64,
}

impl Default for ReviewOptions {
    fn default() -> Self {
        ReviewOptions {
            low_confidence_margin: default_margin(),
        }
    }
}

fn default_margin() -> f64 {
    0.1
}

/// The latency stages an alert may name.
pub const LATENCY_STAGES: &[&str] = &[
    "total",
    "rewrite",
    "retrieve",
    "fuse",
    "rerank",
    "count_tokens",
    "generate",
];

/// Checks what serde cannot in `monitor` (at key path `monitor`): the horizon is a whole
/// number of windows, segments are `metadata.<path>`, shares lie in their ranges, a criterion
/// sits in one tier only, alert thresholds make sense. Every error is located.
pub fn validate_monitor(
    doc: &YamlDocument,
    overrides: &[String],
    m: &MonitorOptions,
) -> Result<(), SourceError> {
    let fail = |key: &str, message: String, expected: &str| {
        let path = format!("monitor.{key}");
        let mut err = doc.error_at(&path, true, message);
        err.expected = Some(expected.to_string());
        Err(attribute(err, overrides, &path))
    };
    if let Some(rolling) = &m.window.rolling {
        if rolling.ms < m.window.size.ms || rolling.ms % m.window.size.ms != 0 {
            return fail(
                "window.rolling",
                format!(
                    "`rolling: {}` is not a whole number of `size: {}` windows",
                    rolling.text, m.window.size.text
                ),
                "a multiple of the window size, e.g. size 1d and rolling 7d",
            );
        }
    }
    for (i, s) in m.segments.iter().enumerate() {
        if s.strip_prefix("metadata.").is_none_or(str::is_empty) {
            let mut err = doc.error_at(
                &format!("monitor.segments[{i}]"),
                true,
                format!("unknown segment key `{s}`"),
            );
            err.expected = Some("`metadata.<key>`, e.g. metadata.intent".into());
            err.help = Some(format!("did you mean `metadata.{s}`?"));
            return Err(attribute(err, overrides, &format!("monitor.segments[{i}]")));
        }
    }
    if m.sampling.target_judgments == 0 {
        return fail(
            "sampling.target_judgments",
            "`target_judgments` must be at least 1".into(),
            "a number of judgments per segment and window, e.g. 200",
        );
    }
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (t, tier) in m.sampling.tiers.iter().enumerate() {
        if tier.evaluators.is_empty() {
            return fail(
                &format!("sampling.tiers[{t}].evaluators"),
                "a tier names no evaluator".into(),
                "criteria of `evaluators:`, e.g. [faithfulness]",
            );
        }
        if let Rate::Fixed(r) = tier.rate {
            if !(r.is_finite() && (0.0..=1.0).contains(&r)) {
                return fail(
                    &format!("sampling.tiers[{t}].rate"),
                    format!("`rate: {r}` is not a share in [0, 1]"),
                    "a share such as 0.1, 1.0, or `auto`",
                );
            }
        }
        if !tier.flag_below.is_finite() {
            return fail(
                &format!("sampling.tiers[{t}].flag_below"),
                "`flag_below` must be a finite score".into(),
                "a score such as 0.5",
            );
        }
        for (e, name) in tier.evaluators.iter().enumerate() {
            if let Some(first) = seen.insert(name.as_str(), t) {
                return fail(
                    &format!("sampling.tiers[{t}].evaluators[{e}]"),
                    format!("`{name}` is already in tier {first}"),
                    "each criterion in one tier only",
                );
            }
        }
    }
    for (i, slo) in m.slos.iter().enumerate() {
        if !(slo.min_share > 0.0 && slo.min_share < 1.0) {
            return fail(
                &format!("slos[{i}].min_share"),
                format!("`min_share: {}` is not a share in (0, 1)", slo.min_share),
                "a share such as 0.95",
            );
        }
        if !slo.score_above.is_finite() {
            return fail(
                &format!("slos[{i}].score_above"),
                "`score_above` must be a finite score".into(),
                "a score such as 0.8",
            );
        }
        if !(slo.confidence > 0.0 && slo.confidence < 1.0) {
            return fail(
                &format!("slos[{i}].confidence"),
                format!("`confidence: {}` is not in (0, 1)", slo.confidence),
                "a one-sided confidence such as 0.95",
            );
        }
    }
    for (i, alert) in m.alerts.iter().enumerate() {
        match alert {
            AlertOptions::LatencyP95 { stage, max_ms } => {
                if !LATENCY_STAGES.contains(&stage.as_str()) {
                    let path = format!("monitor.alerts[{i}].stage");
                    let mut err = doc.error_at(&path, true, format!("unknown stage `{stage}`"));
                    err.expected = Some(format!("one of {}", LATENCY_STAGES.join(", ")));
                    err.help = crate::source::did_you_mean(stage, LATENCY_STAGES.iter().copied())
                        .map(|s| format!("did you mean `{s}`?"));
                    return Err(attribute(err, overrides, &path));
                }
                if !(max_ms.is_finite() && *max_ms > 0.0) {
                    return fail(
                        &format!("alerts[{i}].max_ms"),
                        format!("`max_ms: {max_ms}` must be a positive number of milliseconds"),
                        "milliseconds, e.g. 1500",
                    );
                }
            }
            AlertOptions::CostPerRequest { max_usd, prices } => {
                if !(max_usd.is_finite() && *max_usd >= 0.0) {
                    return fail(
                        &format!("alerts[{i}].max_usd"),
                        format!("`max_usd: {max_usd}` must be a non-negative amount"),
                        "dollars per request, e.g. 0.01",
                    );
                }
                for (model, p) in prices.iter().flatten() {
                    if !(p.input >= 0.0 && p.output >= 0.0 && p.input.is_finite()) {
                        return fail(
                            &format!("alerts[{i}].prices.{model}"),
                            "prices must be non-negative".into(),
                            "dollars per million tokens, e.g. {input: 0.15, output: 0.6}",
                        );
                    }
                }
            }
            AlertOptions::CriterionBelow { min, .. } => {
                if !min.is_finite() {
                    return fail(
                        &format!("alerts[{i}].min"),
                        "`min` must be a finite value".into(),
                        "a mean or pass rate such as 0.8",
                    );
                }
            }
            AlertOptions::FilterFalseExclusion { max_rate, .. } => {
                if !(0.0..=1.0).contains(max_rate) {
                    return fail(
                        &format!("alerts[{i}].max_rate"),
                        format!("`max_rate: {max_rate}` is not a share in [0, 1]"),
                        "a share such as 0.02",
                    );
                }
            }
            AlertOptions::RegenerationRate { band } => {
                let ok = band.iter().all(|b| (0.0..=1.0).contains(b)) && band[0] <= band[1];
                if !ok {
                    return fail(
                        &format!("alerts[{i}].band"),
                        format!(
                            "`band: [{}, {}]` is not [low, high] in [0, 1]",
                            band[0], band[1]
                        ),
                        "two shares, low first, e.g. [0.02, 0.10]",
                    );
                }
            }
        }
    }
    if let Some(d) = &m.drift {
        validate_drift(doc, overrides, d)?;
    }
    if let Some(shadow) = &m.shadow {
        validate_shadow(doc, overrides, shadow)?;
    }
    if !(m.review.low_confidence_margin.is_finite() && m.review.low_confidence_margin >= 0.0) {
        return fail(
            "review.low_confidence_margin",
            "`low_confidence_margin` must be a non-negative score distance".into(),
            "a distance such as 0.1",
        );
    }
    Ok(())
}

/// Checks `monitor.drift`'s values (whether `embedder` names a local embedding judge, a
/// criterion is tiered and a reference time parses is checked by the engine).
/// Checks `monitor.shadow`'s values (whether its criteria are tiered, its window time parses
/// and the config has a `system:` is checked by the engine, which knows them).
fn validate_shadow(
    doc: &YamlDocument,
    overrides: &[String],
    s: &ShadowOptions,
) -> Result<(), SourceError> {
    let fail = |key: &str, message: String, expected: &str| {
        let path = format!("monitor.shadow.{key}");
        let mut err = doc.error_at(&path, true, message);
        err.expected = Some(expected.to_string());
        Err(attribute(err, overrides, &path))
    };
    if s.policy.trim().is_empty() {
        return fail(
            "policy",
            "an empty policy path".into(),
            "a comparison policy file, e.g. shadow-policy.yaml",
        );
    }
    if s.window.trim().is_empty() {
        return fail(
            "window",
            "an empty window".into(),
            "`latest`, `horizon`, or a window's start such as 2026-11-30",
        );
    }
    if s.max_cases == 0 {
        return fail(
            "max_cases",
            "`max_cases` must be at least 1".into(),
            "a number of traces, e.g. 200",
        );
    }
    Ok(())
}

fn validate_drift(
    doc: &YamlDocument,
    overrides: &[String],
    d: &DriftOptions,
) -> Result<(), SourceError> {
    let fail = |key: &str, message: String, expected: &str, help: Option<String>| {
        let path = format!("monitor.drift.{key}");
        let mut err = doc.error_at(&path, true, message);
        err.expected = Some(expected.to_string());
        err.help = help;
        Err(attribute(err, overrides, &path))
    };
    // `first`, `previous` or a time: the time is parsed (and a bad one located) by the engine.
    if d.reference.window.trim().is_empty() {
        return fail(
            "reference.window",
            "an empty reference window".into(),
            "`first`, `previous`, or a window's start such as 2026-11-28",
            None,
        );
    }
    if d.permutations == 0 {
        return fail(
            "permutations",
            "`permutations` must be at least 1".into(),
            "a number of relabellings, e.g. 1000",
            None,
        );
    }
    if !(d.alpha > 0.0 && d.alpha < 1.0) {
        return fail(
            "alpha",
            format!("`alpha: {}` is not in (0, 1)", d.alpha),
            "a significance level such as 0.01",
            None,
        );
    }
    if d.max_queries < 2 {
        return fail(
            "max_queries",
            format!(
                "`max_queries: {}` leaves no test (at least 2)",
                d.max_queries
            ),
            "a number of queries per window, e.g. 500",
            None,
        );
    }
    if d.bins.is_some_and(|b| b < 2) {
        return fail(
            "bins",
            "`bins` must be at least 2".into(),
            "a number of bins such as 10",
            None,
        );
    }
    if let Some(p) = &d.probes {
        if !(p.min_cosine > -1.0 && p.min_cosine <= 1.0) {
            return fail(
                "probes.min_cosine",
                format!("`min_cosine: {}` is not a cosine in (-1, 1]", p.min_cosine),
                "a cosine such as 0.99",
                None,
            );
        }
    }
    for (i, p) in d.performance.iter().enumerate() {
        match (&p.signal, &p.criterion) {
            (Some(_), Some(_)) | (None, None) => {
                return fail(
                    &format!("performance[{i}]"),
                    "give one of `signal` and `criterion`".into(),
                    "`signal: regeneration` or `criterion: faithfulness`",
                    None,
                );
            }
            (Some(s), None) if !PERFORMANCE_SIGNALS.contains(&s.as_str()) => {
                return fail(
                    &format!("performance[{i}].signal"),
                    format!("unknown signal `{s}`"),
                    &format!("one of {}", PERFORMANCE_SIGNALS.join(", ")),
                    crate::source::did_you_mean(s, PERFORMANCE_SIGNALS.iter().copied())
                        .map(|s| format!("did you mean `{s}`?")),
                );
            }
            _ => {}
        }
        if let Some(by) = &p.by {
            if by.strip_prefix("metadata.").is_none_or(str::is_empty) {
                return fail(
                    &format!("performance[{i}].by"),
                    format!("unknown segment key `{by}`"),
                    "`metadata.<key>`, e.g. metadata.intent",
                    Some(format!("did you mean `metadata.{by}`?")),
                );
            }
        }
        if let Some(band) = p.band {
            let shares = p.signal.is_some();
            let ok = band.iter().all(|b| b.is_finite())
                && band[0] <= band[1]
                && (!shares || band.iter().all(|b| (0.0..=1.0).contains(b)));
            if !ok {
                return fail(
                    &format!("performance[{i}].band"),
                    format!(
                        "`band: [{}, {}]` is not [low, high]{}",
                        band[0],
                        band[1],
                        if shares { " in [0, 1]" } else { "" }
                    ),
                    "two values, low first, e.g. [0.02, 0.10]",
                    None,
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_parse_whole_units_only() {
        assert_eq!(Span::parse("1d").unwrap().ms, 86_400_000);
        assert_eq!(Span::parse("6h").unwrap().ms, 21_600_000);
        assert_eq!(Span::parse("30m").unwrap().ms, 1_800_000);
        assert_eq!(Span::parse("2w").unwrap().ms, 14 * 86_400_000);
        assert_eq!(Span::parse("500ms").unwrap().ms, 500);
        for bad in [
            "",
            "d",
            "1",
            "1.5d",
            "-1d",
            "0d",
            "1y",
            "1 d x",
            "99999999999999999999d",
        ] {
            assert!(Span::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn rates_read_numbers_and_auto() {
        let r: Rate = serde_json::from_str("0.25").unwrap();
        assert_eq!(r, Rate::Fixed(0.25));
        let r: Rate = serde_json::from_str("1").unwrap();
        assert_eq!(r, Rate::Fixed(1.0));
        let r: Rate = serde_json::from_str("\"auto\"").unwrap();
        assert_eq!(r, Rate::Auto);
        let err = serde_json::from_str::<Rate>("\"half\"").unwrap_err();
        assert!(err.to_string().contains("or `auto`"), "{err}");
    }

    #[test]
    fn the_issue_example_reads() {
        let m: MonitorOptions = serde_json::from_value(serde_json::json!({
            "traffic": "traffic.jsonl",
            "segments": ["metadata.intent"],
            "window": {"size": "1d", "rolling": "7d"},
            "sampling": {"target_judgments": 200, "always": ["errors", "negative_feedback"],
                "tiers": [{"evaluators": ["schema_validity"], "rate": 1.0},
                          {"evaluators": ["faithfulness"], "rate": "auto"}]},
            "slos": [{"criterion": "faithfulness", "score_above": 0.8, "min_share": 0.95,
                      "on": "wilson_lower_bound"}],
            "alerts": [{"type": "latency_p95", "stage": "total", "max_ms": 1500},
                       {"type": "cost_per_request", "max_usd": 0.01}]
        }))
        .unwrap();
        assert_eq!(m.window.horizon_windows(), 7);
        assert_eq!(m.sampling.tiers[1].rate, Rate::Auto);
        assert_eq!(m.alerts[0].type_name(), "latency_p95");
        let err = serde_json::from_value::<AlertOptions>(
            serde_json::json!({"type": "latency_p95", "max_m": 3}),
        )
        .unwrap_err();
        assert!(err.to_string().contains("unknown field `max_m`"), "{err}");
    }

    #[test]
    fn drift_reads_with_its_defaults() {
        let d: DriftOptions = serde_json::from_value(serde_json::json!({
            "embedder": "mini",
            "probes": {"file": "probes.jsonl"},
            "performance": [{"signal": "regeneration", "by": "metadata.intent", "band": [0.0, 0.1]},
                            {"criterion": "faithfulness"}]
        }))
        .unwrap();
        assert_eq!(d.reference.window, "first");
        assert_eq!((d.permutations, d.alpha, d.max_queries), (1000, 0.01, 500));
        assert!(d.queries && !d.per_segment);
        assert_eq!(d.probes.unwrap().min_cosine, 0.99);
        assert_eq!(d.performance[0].band, Some([0.0, 0.1]));
        let err = serde_json::from_value::<DriftOptions>(serde_json::json!({"permutatons": 10}))
            .unwrap_err();
        assert!(
            err.to_string().contains("unknown field `permutatons`"),
            "{err}"
        );
    }
}
