//! What a case cost to answer, as criteria: `latency` (a stage's or the whole pipeline's wall
//! time), `ttft` (the time to first token the generation reported), `tokens` (the token usage
//! the stages reported) and `cost` (that usage priced by `system.rag.prices`). Per case the
//! value is a number (milliseconds, tokens, dollars); lower is better.
//!
//! **Summaries.** `latency` and `ttft` are summarised by a quantile (`quantile:`, default
//! 0.95: [`SummaryKind::Quantile`], numpy's linear sample quantile with the distribution-free
//! order-statistic interval); `tokens` and `cost` by their mean per case
//! ([`SummaryKind::Amount`], percentile bootstrap) or, with `quantile:`, a quantile. Criterion
//! names: `latency_total_p95`, `latency_generate_p50`, `ttft_p95`, `tokens`,
//! `tokens_generate_output_p99`, `cost`, `cost_p99`.
//!
//! **Measured in this run, or reported by the reply.** Latency and TTFT are measured in the
//! run that produced the trace, so a stage served from a cache has none: a case whose
//! execution came from the execution cache is `excluded` (`cached`), as is a stage served from
//! its stage cache; `total` (the sum of the stages that ran) of a case with any cached stage
//! is `excluded` (`partly_cached`: a partial sum is not the case's latency). A fully cached
//! re-run therefore reports *no* latency (every case excluded `cached`, the criterion's value
//! `—`), never zeros; run with `--no-cache` to measure again. A cached generation's `ttft_ms`
//! is the first run's, so it is excluded too. Tokens and cost are what the replies report:
//! a cached reply still says what it used, so they are observed on cached runs as well.
//!
//! These evaluators read the run's measurements, which are not part of the judgment cache key
//! ([`Evaluator::judgment_cacheable`] is `false`): they are computed afresh on every run.
//!
//! **Usage** is read from each stage's reply: the rewrite's `usage`, every retrieve call's
//! (each lane and query of a pipeline, not the raw-question retrieval `rewrite_uplift` adds),
//! the rerank's, and the generation's `usage` (`{model, input_tokens, output_tokens}`). A
//! stage without `usage` used no metered model and adds nothing. Cost is
//! `Σ (input_tokens × price.input + output_tokens × price.output) / 10⁶` over the usages, with
//! the prices in dollars per million tokens.

use std::collections::BTreeMap;

use oloproof_core::case::Case;
use oloproof_core::config::{EvaluatorEntry, Price};
use oloproof_core::pipeline::Usage;
use oloproof_core::summary::QuantileLevel;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{excluded, missing, missing_with, verdict, PipelineNeed, SummaryKind};
use super::{EntryParser, Evaluator, EvaluatorSpec};
use crate::judged::JudgeEnv;

/// Exclusion reason codes of these evaluators.
pub mod reason {
    /// The execution, or the stage, was served from a cache: nothing was measured.
    pub const CACHED: &str = "cached";
    /// Some stages of the case were served from a cache: their sum is not its latency.
    pub const PARTLY_CACHED: &str = "partly_cached";
    /// The stage did not run for this case (not in the pipeline, or skipped).
    pub const STAGE_NOT_RUN: &str = "stage_not_run";
    /// No latency was recorded at all (a recorded dataset's trace).
    pub const NOT_MEASURED: &str = "not_measured";
    /// The generation reports no `ttft_ms`.
    pub const NO_TTFT: &str = "no_ttft";
    /// No stage of the kind asked reported a `usage` with the tokens asked.
    pub const NO_USAGE: &str = "no_usage";
    /// A `usage` with tokens names no `model`, so it cannot be priced.
    pub const USAGE_WITHOUT_MODEL: &str = "usage_without_model";
    /// A `usage` names a model `prices:` has no price for (named in the detail).
    pub const NO_PRICE_FOR_MODEL: &str = "no_price_for_model";
}

fn default_quantile() -> f64 {
    0.95
}

/// The quantile option as a level, or an error at `evaluators[i].quantile`.
fn level(p: &EntryParser<'_>, q: f64) -> Result<QuantileLevel, oloproof_core::source::SourceError> {
    QuantileLevel::new(q).ok_or_else(|| {
        let mut err = p.error(
            "quantile",
            format!("`quantile` must lie strictly between 0 and 1, got {q}"),
        );
        err.expected = Some("a level such as 0.5, 0.95 or 0.99".into());
        err
    })
}

// ----------------------------------------------------------------------------------------------
// latency
// ----------------------------------------------------------------------------------------------

/// A stage `latency` times, or `total`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum LatencyStage {
    /// The sum of the stages that ran (rewrite, retrieve calls, fusion, rerank, count_tokens,
    /// generate): the host-side time of the case.
    #[default]
    Total,
    /// `rewrite`.
    Rewrite,
    /// Every retrieve call that ran, summed.
    Retrieve,
    /// Fusion (host-side, or the system's `fuse`).
    Fuse,
    /// `rerank`.
    Rerank,
    /// `count_tokens` (the context budget's and the output fields').
    CountTokens,
    /// `generate`.
    Generate,
}

impl LatencyStage {
    /// The name, as `StageLatency::get` and criterion names spell it.
    pub const fn as_str(self) -> &'static str {
        match self {
            LatencyStage::Total => "total",
            LatencyStage::Rewrite => "rewrite",
            LatencyStage::Retrieve => "retrieve",
            LatencyStage::Fuse => "fuse",
            LatencyStage::Rerank => "rerank",
            LatencyStage::CountTokens => "count_tokens",
            LatencyStage::Generate => "generate",
        }
    }
}

/// Options of `latency`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LatencyOptions {
    /// Criterion name (default `latency_<stage>_p<quantile>`, e.g. `latency_total_p95`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// The stage timed (default `total`).
    #[serde(default)]
    pub stage: LatencyStage,
    /// The quantile summarised (default 0.95).
    #[serde(default = "default_quantile")]
    pub quantile: f64,
}

/// The `latency` type.
pub(crate) const LATENCY: EvaluatorSpec = EvaluatorSpec {
    name: "latency",
    build: |p: &EntryParser<'_>| {
        let options: LatencyOptions = p.options()?;
        let q = level(p, options.quantile)?;
        Ok(Box::new(Latency {
            criterion: options
                .criterion
                .clone()
                .unwrap_or_else(|| format!("latency_{}_{}", options.stage.as_str(), q.label())),
            stage: options.stage,
            q,
            identity: p.identity(&options),
        }))
    },
};

struct Latency {
    criterion: String,
    stage: LatencyStage,
    q: QuantileLevel,
    identity: EvaluatorEntry,
}

/// Whether `stage` was served from its cache: `Some(true)` entirely, `Some(false)` partly
/// (some retrieve calls), `None` not at all.
fn stage_cached(trace: &Trace, stage: LatencyStage) -> Option<bool> {
    let c = &trace.cache;
    let hit = |x: Option<bool>| (x == Some(true)).then_some(true);
    match stage {
        LatencyStage::Rewrite => hit(c.rewrite),
        LatencyStage::Rerank => hit(c.rerank),
        LatencyStage::Generate => hit(c.generate),
        LatencyStage::Retrieve => match c.retrieve_calls {
            Some(calls) if calls.hits > 0 && calls.misses > 0 => Some(false),
            Some(calls) if calls.hits > 0 => Some(true),
            Some(_) => None,
            None => hit(c.retrieve),
        },
        LatencyStage::Fuse | LatencyStage::CountTokens | LatencyStage::Total => None,
    }
}

impl Evaluator for Latency {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        SummaryKind::Quantile(self.q)
    }

    fn identity(&self) -> &EvaluatorEntry {
        &self.identity
    }

    fn judgment_cacheable(&self) -> bool {
        false
    }

    fn pipeline_needs(&self) -> Vec<(PipelineNeed, &'static str)> {
        match self.stage {
            LatencyStage::Rewrite => vec![(PipelineNeed::Stage("rewrite"), "stage")],
            LatencyStage::Rerank => vec![(PipelineNeed::Stage("rerank"), "stage")],
            _ => Vec::new(),
        }
    }

    fn evaluate(&self, _: &Case, trace: &Trace, _: Option<&JudgeEnv<'_>>) -> CriterionVerdict {
        if trace.error.is_some() {
            return missing(&self.criterion, trace, "the latency");
        }
        if trace.cache.execution {
            return excluded(&self.criterion, reason::CACHED);
        }
        let stages = trace.latency_ms.stages();
        let any_cache = [
            LatencyStage::Rewrite,
            LatencyStage::Retrieve,
            LatencyStage::Rerank,
            LatencyStage::Generate,
        ]
        .into_iter()
        .any(|s| stage_cached(trace, s).is_some());
        if stages.is_empty() && !any_cache {
            return excluded(&self.criterion, reason::NOT_MEASURED);
        }
        let value = match self.stage {
            LatencyStage::Total if any_cache => {
                return excluded(&self.criterion, reason::PARTLY_CACHED)
            }
            stage => match (
                trace.latency_ms.get(stage.as_str()),
                stage_cached(trace, stage),
            ) {
                (_, Some(true)) => return excluded(&self.criterion, reason::CACHED),
                (_, Some(false)) => return excluded(&self.criterion, reason::PARTLY_CACHED),
                (None, None) => return excluded(&self.criterion, reason::STAGE_NOT_RUN),
                (Some(ms), None) => ms,
            },
        };
        let detail = json!({
            "stage": self.stage.as_str(),
            "stages_ms": stages.iter().map(|(s, ms)| (s.to_string(), json!(ms))).collect::<serde_json::Map<_, _>>(),
        });
        verdict(&self.criterion, Verdict::score(value), detail)
    }
}

// ----------------------------------------------------------------------------------------------
// ttft
// ----------------------------------------------------------------------------------------------

/// Options of `ttft`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TtftOptions {
    /// Criterion name (default `ttft_p<quantile>`, e.g. `ttft_p95`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// The quantile summarised (default 0.95).
    #[serde(default = "default_quantile")]
    pub quantile: f64,
}

/// The `ttft` type: the generation's `ttft_ms`.
pub(crate) const TTFT: EvaluatorSpec = EvaluatorSpec {
    name: "ttft",
    build: |p: &EntryParser<'_>| {
        let options: TtftOptions = p.options()?;
        let q = level(p, options.quantile)?;
        Ok(Box::new(Ttft {
            criterion: options
                .criterion
                .clone()
                .unwrap_or_else(|| format!("ttft_{}", q.label())),
            q,
            identity: p.identity(&options),
        }))
    },
};

struct Ttft {
    criterion: String,
    q: QuantileLevel,
    identity: EvaluatorEntry,
}

impl Evaluator for Ttft {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        SummaryKind::Quantile(self.q)
    }

    fn identity(&self) -> &EvaluatorEntry {
        &self.identity
    }

    fn judgment_cacheable(&self) -> bool {
        false
    }

    fn evaluate(&self, _: &Case, trace: &Trace, _: Option<&JudgeEnv<'_>>) -> CriterionVerdict {
        let Some(generation) = trace.generation.as_ref().filter(|_| trace.error.is_none()) else {
            return missing(&self.criterion, trace, "the generation");
        };
        if trace.cache.execution || trace.cache.generate == Some(true) {
            return excluded(&self.criterion, reason::CACHED);
        }
        match generation.get("ttft_ms") {
            None | Some(Value::Null) => excluded(&self.criterion, reason::NO_TTFT),
            Some(v) => match v.as_f64().filter(|ms| ms.is_finite() && *ms >= 0.0) {
                Some(ms) => verdict(&self.criterion, Verdict::score(ms), Value::Null),
                None => missing_with(
                    &self.criterion,
                    format!("generation.ttft_ms: expected a number of milliseconds ≥ 0, got {v}"),
                ),
            },
        }
    }
}

// ----------------------------------------------------------------------------------------------
// usage: tokens and cost
// ----------------------------------------------------------------------------------------------

/// The stages whose reported usage `tokens` reads.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum UsageStage {
    /// Every stage's usage, summed.
    #[default]
    Total,
    /// The rewrite's.
    Rewrite,
    /// Every retrieve call's.
    Retrieve,
    /// The rerank's.
    Rerank,
    /// The generation's.
    Generate,
}

impl UsageStage {
    /// The name.
    pub const fn as_str(self) -> &'static str {
        match self {
            UsageStage::Total => "total",
            UsageStage::Rewrite => "rewrite",
            UsageStage::Retrieve => "retrieve",
            UsageStage::Rerank => "rerank",
            UsageStage::Generate => "generate",
        }
    }
}

/// Which tokens `tokens` counts.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum TokenKind {
    /// Input plus output.
    #[default]
    Total,
    /// Input (prompt) tokens.
    Input,
    /// Output (completion) tokens.
    Output,
}

/// Every usage the stages of `trace` reported, with its stage; an unreadable generation
/// `usage` is an error naming the field.
pub(crate) fn usages(trace: &Trace) -> Result<Vec<(UsageStage, Usage)>, String> {
    let mut out = Vec::new();
    if let Some(p) = &trace.pipeline {
        if let Some(u) = p.rewrite.as_ref().and_then(|r| r.usage.clone()) {
            out.push((UsageStage::Rewrite, u));
        }
        for call in &p.retrievals {
            if let Some(u) = call.retrieval.usage.clone() {
                out.push((UsageStage::Retrieve, u));
            }
        }
        if let Some(u) = p.rerank_usage.clone() {
            out.push((UsageStage::Rerank, u));
        }
    } else if let Some(u) = trace.retrieval.as_ref().and_then(|r| r.usage.clone()) {
        out.push((UsageStage::Retrieve, u));
    }
    if let Some(u) = trace.generation.as_ref().and_then(|g| g.get("usage")) {
        if !u.is_null() {
            let usage: Usage = serde_json::from_value(u.clone()).map_err(|e| {
                format!(
                    "generation.usage: expected {{model, input_tokens, output_tokens}} with whole token counts: {e}"
                )
            })?;
            out.push((UsageStage::Generate, usage));
        }
    }
    Ok(out)
}

fn usage_detail(usages: &[(UsageStage, Usage)]) -> Value {
    Value::Array(
        usages
            .iter()
            .map(|(s, u)| {
                json!({"stage": s.as_str(), "model": u.model, "input_tokens": u.input_tokens, "output_tokens": u.output_tokens})
            })
            .collect(),
    )
}

fn usage_kind(q: Option<QuantileLevel>) -> SummaryKind {
    q.map_or(SummaryKind::Amount, SummaryKind::Quantile)
}

fn optional_level(
    p: &EntryParser<'_>,
    q: Option<f64>,
) -> Result<Option<QuantileLevel>, oloproof_core::source::SourceError> {
    q.map(|q| level(p, q)).transpose()
}

/// Options of `tokens`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct TokensOptions {
    /// Criterion name (default `tokens`, with `_<stage>` and `_<kind>` when not `total` and
    /// `_p<quantile>` with a quantile: `tokens_generate_output_p99`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// The stage whose usage is counted (default `total`: every stage).
    #[serde(default)]
    pub stage: UsageStage,
    /// Input, output or both (default `total`).
    #[serde(default)]
    pub kind: TokenKind,
    /// Summarise this quantile instead of the mean per case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantile: Option<f64>,
}

/// The `tokens` type.
pub(crate) const TOKENS: EvaluatorSpec = EvaluatorSpec {
    name: "tokens",
    build: |p: &EntryParser<'_>| {
        let options: TokensOptions = p.options()?;
        let q = optional_level(p, options.quantile)?;
        let criterion = options.criterion.clone().unwrap_or_else(|| {
            let mut name = "tokens".to_string();
            if options.stage != UsageStage::Total {
                name.push('_');
                name.push_str(options.stage.as_str());
            }
            match options.kind {
                TokenKind::Total => {}
                TokenKind::Input => name.push_str("_input"),
                TokenKind::Output => name.push_str("_output"),
            }
            if let Some(q) = q {
                name.push('_');
                name.push_str(&q.label());
            }
            name
        });
        Ok(Box::new(Tokens {
            criterion,
            stage: options.stage,
            kind: options.kind,
            q,
            identity: p.identity(&options),
        }))
    },
};

struct Tokens {
    criterion: String,
    stage: UsageStage,
    kind: TokenKind,
    q: Option<QuantileLevel>,
    identity: EvaluatorEntry,
}

impl Evaluator for Tokens {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        usage_kind(self.q)
    }

    fn identity(&self) -> &EvaluatorEntry {
        &self.identity
    }

    fn judgment_cacheable(&self) -> bool {
        false
    }

    fn pipeline_needs(&self) -> Vec<(PipelineNeed, &'static str)> {
        match self.stage {
            UsageStage::Rewrite => vec![(PipelineNeed::Stage("rewrite"), "stage")],
            UsageStage::Rerank => vec![(PipelineNeed::Stage("rerank"), "stage")],
            _ => Vec::new(),
        }
    }

    fn evaluate(&self, _: &Case, trace: &Trace, _: Option<&JudgeEnv<'_>>) -> CriterionVerdict {
        if trace.error.is_some() || trace.generation.is_none() {
            return missing(&self.criterion, trace, "the generation");
        }
        let all = match usages(trace) {
            Ok(u) => u,
            Err(e) => return missing_with(&self.criterion, e),
        };
        let chosen: Vec<(UsageStage, Usage)> = all
            .into_iter()
            .filter(|(s, _)| self.stage == UsageStage::Total || *s == self.stage)
            .collect();
        let counts: Vec<u64> = chosen
            .iter()
            .filter_map(|(_, u)| match self.kind {
                TokenKind::Input => u.input_tokens,
                TokenKind::Output => u.output_tokens,
                TokenKind::Total => match (u.input_tokens, u.output_tokens) {
                    (None, None) => None,
                    (i, o) => Some(i.unwrap_or(0) + o.unwrap_or(0)),
                },
            })
            .collect();
        if counts.is_empty() {
            return excluded(&self.criterion, reason::NO_USAGE);
        }
        let total: u64 = counts.iter().sum();
        verdict(
            &self.criterion,
            Verdict::score(total as f64),
            json!({"usage": usage_detail(&chosen)}),
        )
    }
}

/// Options of `cost`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct CostOptions {
    /// Criterion name (default `cost`, or `cost_p<quantile>` with a quantile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// Summarise this quantile instead of the mean per case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantile: Option<f64>,
    /// Dollars per million tokens per model (default: `system.rag.prices`, copied here when
    /// the config is read, so that a stored run keeps the prices it was priced with).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<BTreeMap<String, Price>>,
}

/// The `cost` type.
pub(crate) const COST: EvaluatorSpec = EvaluatorSpec {
    name: "cost",
    build: |p: &EntryParser<'_>| {
        let mut options: CostOptions = p.options()?;
        let q = optional_level(p, options.quantile)?;
        if options.prices.is_none() {
            options.prices = p.prices.cloned();
        }
        let Some(prices) = options.prices.clone() else {
            let mut err = p.error("type", "`cost` needs prices: the config declares none");
            err.help = Some(
                "declare `system.rag.prices: {MODEL: {input: 0.15, output: 0.6}}` (dollars per million tokens), or `prices:` on this entry"
                    .into(),
            );
            return Err(err);
        };
        for (model, price) in &prices {
            if !(price.input.is_finite()
                && price.input >= 0.0
                && price.output.is_finite()
                && price.output >= 0.0)
            {
                let mut err = p.error(
                    if p.entry.options.contains_key("prices") {
                        "prices"
                    } else {
                        "type"
                    },
                    format!("the price of `{model}` must be two numbers ≥ 0"),
                );
                err.expected =
                    Some("`{input: 0.15, output: 0.6}` in dollars per million tokens".into());
                return Err(err);
            }
        }
        Ok(Box::new(Cost {
            criterion: options.criterion.clone().unwrap_or_else(|| match q {
                Some(q) => format!("cost_{}", q.label()),
                None => "cost".to_string(),
            }),
            q,
            prices,
            identity: p.identity(&options),
        }))
    },
};

struct Cost {
    criterion: String,
    q: Option<QuantileLevel>,
    prices: BTreeMap<String, Price>,
    identity: EvaluatorEntry,
}

impl Evaluator for Cost {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        usage_kind(self.q)
    }

    fn identity(&self) -> &EvaluatorEntry {
        &self.identity
    }

    fn judgment_cacheable(&self) -> bool {
        false
    }

    fn evaluate(&self, _: &Case, trace: &Trace, _: Option<&JudgeEnv<'_>>) -> CriterionVerdict {
        if trace.error.is_some() || trace.generation.is_none() {
            return missing(&self.criterion, trace, "the generation");
        }
        let all = match usages(trace) {
            Ok(u) => u,
            Err(e) => return missing_with(&self.criterion, e),
        };
        let metered: Vec<&(UsageStage, Usage)> = all
            .iter()
            .filter(|(_, u)| u.input_tokens.is_some() || u.output_tokens.is_some())
            .collect();
        if metered.is_empty() {
            return excluded(&self.criterion, reason::NO_USAGE);
        }
        let mut dollars = 0.0;
        for (stage, u) in metered {
            let why = |code: &str, detail: Value| {
                verdict(
                    &self.criterion,
                    Verdict::Excluded {
                        reason: code.to_string(),
                    },
                    detail,
                )
            };
            let Some(model) = &u.model else {
                return why(
                    reason::USAGE_WITHOUT_MODEL,
                    json!({"stage": stage.as_str()}),
                );
            };
            let Some(price) = self.prices.get(model) else {
                return why(
                    reason::NO_PRICE_FOR_MODEL,
                    json!({"stage": stage.as_str(), "model": model, "priced": self.prices.keys().collect::<Vec<_>>()}),
                );
            };
            dollars += (u.input_tokens.unwrap_or(0) as f64 * price.input
                + u.output_tokens.unwrap_or(0) as f64 * price.output)
                / 1e6;
        }
        verdict(
            &self.criterion,
            Verdict::score(dollars),
            json!({"usage": usage_detail(&all)}),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::from_json;
    use oloproof_core::case::parse_cases;
    use oloproof_core::trace::{HitsMisses, StageError};

    fn case() -> Case {
        parse_cases("c.jsonl", r#"{"id":"c","input":{"question":"q"}}"#)
            .unwrap()
            .remove(0)
    }

    fn trace(generation: Value) -> Trace {
        let mut t = Trace::new("c");
        t.latency_ms.retrieve = Some(12.0);
        t.latency_ms.generate = Some(30.5);
        t.cache.retrieve = Some(false);
        t.cache.generate = Some(false);
        t.generation = generation.as_object().cloned();
        t
    }

    fn eval(entry: Value, t: &Trace) -> CriterionVerdict {
        from_json(&entry).unwrap().evaluate(&case(), t, None)
    }

    fn excluded_because(v: &CriterionVerdict) -> &str {
        match &v.verdict {
            Verdict::Excluded { reason } => reason,
            other => panic!("expected excluded, got {other:?}"),
        }
    }

    #[test]
    fn latency_per_stage_and_total() {
        let t = trace(json!({"answer": "a"}));
        let total = from_json(&json!({"type": "latency"})).unwrap();
        assert_eq!(total.criterion(), "latency_total_p95");
        assert_eq!(
            total.kind(),
            SummaryKind::Quantile(QuantileLevel::new(0.95).unwrap())
        );
        assert!(!total.judgment_cacheable());
        assert_eq!(
            total.evaluate(&case(), &t, None).verdict,
            Verdict::Score { value: 42.5 }
        );
        let g =
            from_json(&json!({"type": "latency", "stage": "generate", "quantile": 0.5})).unwrap();
        assert_eq!(g.criterion(), "latency_generate_p50");
        assert_eq!(
            g.evaluate(&case(), &t, None).verdict,
            Verdict::Score { value: 30.5 }
        );
        let r = eval(json!({"type": "latency", "stage": "rerank"}), &t);
        assert_eq!(excluded_because(&r), reason::STAGE_NOT_RUN);
        let p999 = from_json(&json!({"type": "latency", "quantile": 0.999})).unwrap();
        assert_eq!(p999.criterion(), "latency_total_p99_9");
    }

    /// A cached execution is excluded, never 0; a cached stage too; a partial sum is not a
    /// total.
    #[test]
    fn cached_latency_is_excluded_never_zero() {
        let mut t = trace(json!({"answer": "a"}));
        t.latency_ms = Default::default();
        t.cache = oloproof_core::trace::CacheUse {
            execution: true,
            ..Default::default()
        };
        for stage in ["total", "generate", "retrieve"] {
            let v = eval(json!({"type": "latency", "stage": stage}), &t);
            assert_eq!(excluded_because(&v), reason::CACHED, "{stage}");
        }
        let mut t = trace(json!({"answer": "a"}));
        t.latency_ms.generate = None;
        t.cache.generate = Some(true);
        assert_eq!(
            excluded_because(&eval(json!({"type": "latency"}), &t)),
            reason::PARTLY_CACHED
        );
        assert_eq!(
            excluded_because(&eval(json!({"type": "latency", "stage": "generate"}), &t)),
            reason::CACHED
        );
        assert_eq!(
            eval(json!({"type": "latency", "stage": "retrieve"}), &t).verdict,
            Verdict::Score { value: 12.0 }
        );
        // Some retrieve calls of a pipeline came from the cache.
        let mut t = trace(json!({"answer": "a"}));
        t.cache.retrieve_calls = Some(HitsMisses { hits: 1, misses: 3 });
        assert_eq!(
            excluded_because(&eval(json!({"type": "latency", "stage": "retrieve"}), &t)),
            reason::PARTLY_CACHED
        );
        // A recorded dataset's trace has no latency at all.
        let mut t = trace(json!({"answer": "a"}));
        t.latency_ms = Default::default();
        t.cache = Default::default();
        assert_eq!(
            excluded_because(&eval(json!({"type": "latency"}), &t)),
            reason::NOT_MEASURED
        );
    }

    #[test]
    fn a_failed_stage_is_missing() {
        let mut t = trace(json!({"answer": "a"}));
        t.error = Some(StageError {
            stage: "generate".into(),
            kind: oloproof_core::trace::ErrorKind::Crash,
            error_type: None,
            message: "worker exited".into(),
            traceback: None,
            stderr_tail: vec![],
        });
        for entry in [
            json!({"type": "latency"}),
            json!({"type": "ttft"}),
            json!({"type": "tokens"}),
            json!({"type": "cost", "prices": {"m": {"input": 1.0, "output": 2.0}}}),
        ] {
            let v = eval(entry.clone(), &t);
            match v.verdict {
                Verdict::Missing { error } => {
                    assert!(error.contains("worker exited"), "{entry}: {error}")
                }
                other => panic!("{entry}: {other:?}"),
            }
        }
    }

    #[test]
    fn ttft() {
        let t = trace(json!({"answer": "a", "ttft_ms": 85.0}));
        let e = from_json(&json!({"type": "ttft"})).unwrap();
        assert_eq!(e.criterion(), "ttft_p95");
        assert_eq!(
            e.evaluate(&case(), &t, None).verdict,
            Verdict::Score { value: 85.0 }
        );
        let none = trace(json!({"answer": "a"}));
        assert_eq!(
            excluded_because(&e.evaluate(&case(), &none, None)),
            reason::NO_TTFT
        );
        let mut cached = t.clone();
        cached.cache.generate = Some(true);
        assert_eq!(
            excluded_because(&e.evaluate(&case(), &cached, None)),
            reason::CACHED
        );
        let bad = trace(json!({"answer": "a", "ttft_ms": "fast"}));
        match e.evaluate(&case(), &bad, None).verdict {
            Verdict::Missing { error } => {
                assert!(error.starts_with("generation.ttft_ms"), "{error}")
            }
            other => panic!("{other:?}"),
        }
    }

    fn pipeline_trace() -> Trace {
        let mut t = trace(
            json!({"answer": "a", "usage": {"model": "gen", "input_tokens": 812, "output_tokens": 40}}),
        );
        t.pipeline = Some(Box::new(oloproof_core::pipeline::Pipeline {
            rewrite: Some(oloproof_core::pipeline::Rewrite {
                queries: vec!["q".into()],
                usage: Some(Usage {
                    model: Some("small".into()),
                    input_tokens: Some(20),
                    output_tokens: Some(10),
                }),
            }),
            ..Default::default()
        }));
        t
    }

    #[test]
    fn tokens_by_stage_and_kind() {
        let t = pipeline_trace();
        let total = from_json(&json!({"type": "tokens"})).unwrap();
        assert_eq!(total.criterion(), "tokens");
        assert_eq!(total.kind(), SummaryKind::Amount);
        assert_eq!(
            total.evaluate(&case(), &t, None).verdict,
            Verdict::Score { value: 882.0 }
        );
        let out = from_json(
            &json!({"type": "tokens", "stage": "generate", "kind": "output", "quantile": 0.99}),
        )
        .unwrap();
        assert_eq!(out.criterion(), "tokens_generate_output_p99");
        assert_eq!(
            out.evaluate(&case(), &t, None).verdict,
            Verdict::Score { value: 40.0 }
        );
        let rerank = eval(json!({"type": "tokens", "stage": "rerank"}), &t);
        assert_eq!(excluded_because(&rerank), reason::NO_USAGE);
        let bad = trace(json!({"answer": "a", "usage": {"model": "gen", "input_tokens": -3}}));
        match eval(json!({"type": "tokens"}), &bad).verdict {
            Verdict::Missing { error } => assert!(error.starts_with("generation.usage"), "{error}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn cost_prices_every_stage_and_excludes_an_unpriced_model() {
        let t = pipeline_trace();
        let prices =
            json!({"gen": {"input": 2.5, "output": 10.0}, "small": {"input": 0.1, "output": 0.4}});
        let cost = from_json(&json!({"type": "cost", "prices": prices})).unwrap();
        assert_eq!(cost.criterion(), "cost");
        let expected = (812.0 * 2.5 + 40.0 * 10.0 + 20.0 * 0.1 + 10.0 * 0.4) / 1e6;
        match cost.evaluate(&case(), &t, None).verdict {
            Verdict::Score { value } => assert!((value - expected).abs() < 1e-15, "{value}"),
            other => panic!("{other:?}"),
        }
        let only_gen = json!({"gen": {"input": 2.5, "output": 10.0}});
        let v = eval(
            json!({"type": "cost", "prices": only_gen, "quantile": 0.99}),
            &t,
        );
        assert_eq!(excluded_because(&v), reason::NO_PRICE_FOR_MODEL);
        assert_eq!(v.detail["model"], json!("small"));
        assert_eq!(v.detail["stage"], json!("rewrite"));
        let anonymous = trace(json!({"answer": "a", "usage": {"input_tokens": 5}}));
        let v = eval(json!({"type": "cost", "prices": only_gen}), &anonymous);
        assert_eq!(excluded_because(&v), reason::USAGE_WITHOUT_MODEL);
        let unmetered = trace(json!({"answer": "a"}));
        let v = eval(json!({"type": "cost", "prices": only_gen}), &unmetered);
        assert_eq!(excluded_because(&v), reason::NO_USAGE);
    }

    #[test]
    fn bad_options_are_located_errors() {
        assert!(from_json(&json!({"type": "latency", "quantile": 1.0})).is_err());
        assert!(from_json(&json!({"type": "latency", "stage": "embed"})).is_err());
        assert!(from_json(&json!({"type": "tokens", "kind": "cached"})).is_err());
        // A stored run's cost entry carries its prices; without any it cannot be built.
        assert!(from_json(&json!({"type": "cost"})).is_err());
        assert!(from_json(
            &json!({"type": "cost", "prices": {"m": {"input": -1.0, "output": 0.0}}})
        )
        .is_err());
    }
}
