//! The pairwise A/B comparison of `oloproof compare` (`--pairwise JUDGE`, or the policy's
//! `pairwise:` block): for every shared case, the candidate's and the baseline's answers judged
//! head to head by one judge with the seed 002 template (§5.3, "Modèle 3 : comparaison par
//! paires"), in both orders.
//!
//! **Position swap.** Each case is judged twice, A/B then B/A, through
//! [`oloproof_judge::ragas::pairwise_judge`]: a winner is kept only when both orders agree,
//! otherwise the case is a tie (seed 002: "ne retenez un gagnant que si les deux passages
//! concordent ; sinon, comptez une égalité"). Which answer is shown first in the first call is
//! drawn per case from the order seed (the baseline run's recorded `bootstrap.seed`) and the
//! case id ([`first_orders`]): the judgeable cases are sorted by `sha256(seed, case id)` and
//! alternate candidate-first / baseline-first, so the draw is reproducible, independent of the
//! file's order and balanced (the two counts differ by at most one). Every call goes through
//! the judge-call cache, so a re-run sends nothing.
//!
//! **Cases not judged.** A side whose case did not run or whose generation failed (its trace
//! holds a stage error) makes the case `missing` (`candidate_failed`, `baseline_failed`,
//! `both_failed`, `candidate_not_run`, …); a side with no string `answer` makes it `excluded`
//! (`candidate_no_answer`, …); a judge call that fails makes it `missing` (`judge_error`, with
//! the error). None of them is ever a tie or a win; all are counted.
//!
//! **Statistics** (`oloproof_stats`): the win rate among decided cases `wins / (wins +
//! losses)` with its exact Clopper–Pearson 95 % interval (rounded outward to 0.1 points), the
//! exact two-sided sign test of wins against losses (ties dropped), and the policy's decision
//! ([`decide`]): PASS when the interval's lower bound lies above `min_win_rate`, FAIL when its
//! upper bound lies below, else INSUFFICIENT_EVIDENCE.
//!
//! **Bias reports.** Position consistency (how often the two orders agreed, and how often a
//! single call preferred the first position); self-preference risk, flagged when the judge's
//! model family ([`model_family`]) equals a generator's (recorded in the traces as
//! `usage.model` or `model`, or declared as `generator_model`); answer lengths beside the
//! preference (mean difference, and the win rate when the candidate is longer vs shorter).

use std::collections::{BTreeMap, HashMap};

use oloproof_core::comparison::{
    DecisionKind, DecisionResult, DecisionVerdict, GeneratorModel, LengthSummary, ModelSource,
    PairwiseCall, PairwiseCase, PairwiseComparison, PairwiseOptions, PairwiseOutcome,
    PairwiseTally, PairwiseUsage, PositionConsistency, Preference, SelfPreference, Side,
};
use oloproof_core::identity::content_hash;
use oloproof_core::run::LoadedRun;
use oloproof_core::store::Store;
use oloproof_core::trace::Trace;
use oloproof_judge::templates::PAIRWISE;
use oloproof_judge::{JudgeCache, JudgeClient};
use oloproof_stats::{clopper_pearson, sign_test, win_rate_at_least, Interval, Verdict3};
use serde_json::{json, Value};

use crate::judged::question_of;
use crate::summary::{CONFIDENCE, PROPORTION_STEP};
use crate::EngineError;

/// The evaluator name a pairwise judge's calibration is recorded under
/// ([`crate::calibrate::calibration_identity`]).
pub const CALIBRATION_EVALUATOR: &str = "pairwise";

/// Reason codes of pairwise cases and of the pairwise decision.
pub mod reason {
    /// A judge call of the case failed.
    pub const JUDGE_ERROR: &str = "judge_error";
    /// The pairwise decision: more missing cases than `max_missing_rate` allows.
    pub const TOO_MANY_MISSING: &str = "too_many_missing";
    /// The pairwise decision: no case was won or lost (all ties, missing or excluded).
    pub const NO_DECIDED_CASES: &str = "no_decided_cases";
}

/// Why a pairwise comparison cannot be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PairwiseError {
    /// The runs share no case.
    #[error("runs {candidate} and {baseline} share no case to judge in pairs")]
    NoSharedCases {
        /// The candidate run.
        candidate: String,
        /// The baseline run.
        baseline: String,
    },
}

/// What [`judge_pairs`] judges with.
pub struct PairwiseSetup<'a> {
    /// The `pairwise:` options (judge name, generator models, …).
    pub options: &'a PairwiseOptions,
    /// The judge's client.
    pub judge: &'a JudgeClient,
    /// The judge-call cache.
    pub cache: &'a dyn JudgeCache,
    /// Whether the judge holds a passing pairwise calibration ([`is_calibrated`]).
    pub calibrated: bool,
}

/// A model name's family: what self-preference is checked on.
///
/// A family is a vendor lineage (GPT, Claude, Llama, …), because a judge's preference for its
/// own outputs is a preference for familiar text (seed 000: "utilisez une autre famille de
/// judge que celle du système évalué"), which models of one lineage share. The rule:
///
/// 1. lowercase; drop everything up to the last `/` (`openai/gpt-4o`,
///    `meta-llama/Llama-3.1-8B`), a `:tag` (`llama3.1:8b`) and a `.gguf` extension;
/// 2. split on `-`, `_`, `.` and spaces; drop a leading vendor word (`meta`, `openai`,
///    `anthropic`, `google`, `mistralai`, `microsoft`, `huggingfacetb`);
/// 3. the family is the leading letters of the first remaining word (`gpt-4o-mini` → `gpt`,
///    `llama-3.1-70b` → `llama`, `qwen2.5-7b` → `qwen`), or the whole word when it starts with a
///    digit;
/// 4. aliases: OpenAI's `o1`/`o3`/`o4` and `chatgpt` are `gpt`; `mixtral`, `ministral`,
///    `codestral` are `mistral`; `qwq` is `qwen`.
///
/// So `gpt-4o-mini` and `gpt-4o` are one family, and `llama-3.1-8b` and `llama-3.1-70b`.
/// An empty name has the empty family, which matches nothing.
///
/// ```
/// use oloproof_engine::pairwise::model_family;
/// assert_eq!(model_family("gpt-4o-mini"), model_family("gpt-4o"));
/// assert_eq!(model_family("llama-3.1-8b"), "llama");
/// assert_eq!(model_family("meta-llama/Meta-Llama-3.1-70B-Instruct"), "llama");
/// assert_ne!(model_family("claude-3-5-sonnet-20241022"), model_family("gpt-4o"));
/// ```
pub fn model_family(model: &str) -> String {
    let mut name = model.trim().to_lowercase();
    if let Some(i) = name.rfind('/') {
        name = name[i + 1..].to_string();
    }
    if let Some(i) = name.find(':') {
        name.truncate(i);
    }
    if let Some(stripped) = name.strip_suffix(".gguf") {
        name = stripped.to_string();
    }
    const VENDORS: &[&str] = &[
        "meta",
        "openai",
        "anthropic",
        "google",
        "mistralai",
        "microsoft",
        "huggingfacetb",
    ];
    let words: Vec<&str> = name
        .split(['-', '_', '.', ' '])
        .filter(|w| !w.is_empty())
        .collect();
    let first = words
        .iter()
        .skip_while(|w| VENDORS.contains(w) && words.len() > 1)
        .copied()
        .next()
        .unwrap_or("");
    let letters: String = first
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect();
    let family = if letters.is_empty() {
        first.to_string()
    } else {
        letters
    };
    match family.as_str() {
        "o" if first.len() > 1 && first[1..].chars().all(|c| c.is_ascii_digit()) => "gpt".into(),
        "chatgpt" => "gpt".into(),
        "mixtral" | "ministral" | "codestral" => "mistral".into(),
        "qwq" => "qwen".into(),
        _ => family,
    }
}

/// Which answer each case shows first in its first call: the cases sorted by
/// `sha256([seed, case id])` alternate candidate-first, baseline-first.
pub fn first_orders<'a>(seed: u64, case_ids: &[&'a str]) -> HashMap<&'a str, Side> {
    let mut keyed: Vec<(String, &str)> = case_ids
        .iter()
        .map(|id| (content_hash(&json!([seed, id])), *id))
        .collect();
    keyed.sort();
    keyed
        .into_iter()
        .enumerate()
        .map(|(i, (_, id))| {
            let side = if i % 2 == 0 {
                Side::Candidate
            } else {
                Side::Baseline
            };
            (id, side)
        })
        .collect()
}

/// Whether judge `name` holds a passing calibration for pairwise preference (identity: its
/// settings, [`CALIBRATION_EVALUATOR`] and every template version).
pub fn is_calibrated(
    store: &dyn Store,
    judges: &BTreeMap<String, Value>,
    name: &str,
) -> Result<bool, EngineError> {
    let settings = crate::calibrate::calibrated_judge(judges, name);
    let identity = crate::calibrate::calibration_identity(&settings, CALIBRATION_EVALUATOR);
    Ok(matches!(
        store.latest_calibration(&identity)?,
        Some((_, true, _))
    ))
}

/// Why one side of a case cannot be judged.
enum Unjudgeable {
    NotRun,
    Failed(String),
    NoAnswer,
}

fn side_answer(trace: Option<&Trace>) -> Result<&str, Unjudgeable> {
    let trace = trace.ok_or(Unjudgeable::NotRun)?;
    if let Some(e) = &trace.error {
        return Err(Unjudgeable::Failed(e.summary()));
    }
    trace.answer().ok_or(Unjudgeable::NoAnswer)
}

/// `x` on the 0.1 grid, as the nearest double to the decimal, without a negative zero.
fn tenths(x: f64) -> f64 {
    let t = (x * 10.0).round() / 10.0;
    if t == 0.0 {
        0.0
    } else {
        t
    }
}

fn tally(outcomes: impl Iterator<Item = PairwiseOutcome>) -> PairwiseTally {
    let mut t = PairwiseTally::default();
    for o in outcomes {
        match o {
            PairwiseOutcome::Win => t.wins += 1,
            PairwiseOutcome::Loss => t.losses += 1,
            PairwiseOutcome::Tie => t.ties += 1,
            PairwiseOutcome::Missing | PairwiseOutcome::Excluded => {}
        }
    }
    let decided = t.wins + t.losses;
    if decided > 0 {
        t.win_rate_points = Some(tenths(100.0 * t.wins as f64 / decided as f64));
    }
    t
}

/// The model a trace's generation output records: `usage.model`, else `model`.
fn recorded_model(trace: &Trace) -> Option<&str> {
    let generation = trace.generation.as_ref()?;
    generation
        .get("usage")
        .and_then(|u| u.get("model"))
        .and_then(Value::as_str)
        .or_else(|| generation.get("model").and_then(Value::as_str))
        .filter(|m| !m.trim().is_empty())
}

/// The judge's model name: `model`, else (a local model with no display name) its path.
fn judge_model(judge: &JudgeClient) -> String {
    let s = judge.settings();
    if s.model.trim().is_empty() {
        s.path.clone().unwrap_or_default()
    } else {
        s.model.clone()
    }
}

fn self_preference(
    judge: &JudgeClient,
    options: &PairwiseOptions,
    candidate: &LoadedRun,
    baseline: &LoadedRun,
) -> SelfPreference {
    let judge_model = judge_model(judge);
    let judge_family = model_family(&judge_model);
    let mut generators = Vec::new();
    for (side, run, declared) in [
        (Side::Candidate, candidate, &options.generator_model),
        (Side::Baseline, baseline, &options.baseline_generator_model),
    ] {
        let mut seen: BTreeMap<&str, u64> = BTreeMap::new();
        for (_, trace, _) in &run.cases {
            if let Some(m) = trace.as_ref().and_then(recorded_model) {
                *seen.entry(m).or_default() += 1;
            }
        }
        for (model, cases) in seen {
            generators.push(GeneratorModel {
                side,
                model: model.to_string(),
                family: model_family(model),
                source: ModelSource::Recorded,
                cases,
            });
        }
        if let Some(model) = declared {
            generators.push(GeneratorModel {
                side,
                model: model.clone(),
                family: model_family(model),
                source: ModelSource::Declared,
                cases: 0,
            });
        }
    }
    let mut same_family = Vec::new();
    for side in [Side::Candidate, Side::Baseline] {
        if !judge_family.is_empty()
            && generators
                .iter()
                .any(|g| g.side == side && g.family == judge_family)
        {
            same_family.push(side);
        }
    }
    SelfPreference {
        judge_model,
        judge_family,
        generators,
        same_family,
    }
}

/// Maps a winner label of [`oloproof_judge::ragas::pairwise_judge`] (`A` is `a_side`) to a
/// preference.
fn preference_of(label: Option<&str>, a_side: Side) -> Preference {
    let other = match a_side {
        Side::Candidate => Side::Baseline,
        Side::Baseline => Side::Candidate,
    };
    let side = match label {
        Some("A") => a_side,
        Some("B") => other,
        _ => return Preference::Tie,
    };
    match side {
        Side::Candidate => Preference::Candidate,
        Side::Baseline => Preference::Baseline,
    }
}

/// The pairwise judgments a policy's `pairwise:` block asks for, made as `oloproof compare`
/// makes them: the policy is checked against the runs (a located error when they share no
/// case), then its judge (declared in `judges`, a chat judge, calibrated when it decides); only
/// that judge is built; the pairs are judged through the store's judge-call cache, whose new
/// entries are committed before returning.
///
/// # Errors
///
/// [`CompareError::Policy`] for a policy that does not fit the runs or names a judge that is
/// not declared; [`CompareError::PairwiseJudge`] for a judge that cannot be built or used;
/// [`CompareError::Engine`] when the store fails.
pub fn judge_policy_pairs(
    policy: &crate::compare::Policy,
    judges: &BTreeMap<String, Value>,
    store: &mut dyn Store,
    location: &oloproof_core::store::StoreLocation,
    candidate: &LoadedRun,
    baseline: &LoadedRun,
) -> Result<PairwiseComparison, crate::compare::CompareError> {
    use crate::compare::CompareError;
    let Some(options) = policy.pairwise() else {
        return Err(CompareError::PairwiseNotJudged);
    };
    // No shared case is a policy error located in the policy file, reported before the judges.
    policy.check(candidate, baseline)?;
    let mut calibrated = false;
    policy.check_pairwise_judge(judges, |name| {
        calibrated = is_calibrated(&*store, judges, name)?;
        Ok(calibrated)
    })?;
    if options.exploratory {
        calibrated = is_calibrated(&*store, judges, &options.judge)?;
    }
    // Only the pairwise judge is built (a local model of another judge is not loaded); one
    // that cannot be built is a settings error.
    let only: BTreeMap<String, Value> = judges
        .iter()
        .filter(|(name, _)| **name == options.judge)
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    let registry = crate::judged::JudgeRegistry::from_options(&only)
        .map_err(|e| CompareError::PairwiseJudge(e.to_string()))?;
    let client = registry.client(&options.judge).ok_or_else(|| {
        CompareError::PairwiseJudge(format!("no judge named `{}`", options.judge))
    })?;
    // The store is open at this location: a reader that cannot open is a real failure (judging
    // every pair again, uncached and billed, without a word would be worse).
    let reader = oloproof_store::open_reader(location).map_err(EngineError::from)?;
    let cache = crate::judged::StoreJudgeCache::new(Some(reader));
    let setup = PairwiseSetup {
        options,
        judge: client,
        cache: &cache,
        calibrated,
    };
    let judged = judge_pairs(candidate, baseline, &setup)
        .map_err(|e| CompareError::PairwiseJudge(e.to_string()))?;
    store
        .put_cache_entries(&cache.take_writes())
        .map_err(EngineError::from)?;
    Ok(judged)
}

/// Judges every shared case of `candidate` and `baseline` in both orders with `setup`'s judge
/// and computes the tallies, the interval, the sign test and the bias reports. The order seed
/// is the baseline's recorded `bootstrap.seed`.
///
/// A failed judge call is recorded on its case (`missing`, `judge_error`) and counted in
/// [`PairwiseComparison::judge_errors`]; it never stops the other cases.
///
/// # Errors
///
/// [`PairwiseError::NoSharedCases`] when the runs share no case.
pub fn judge_pairs(
    candidate: &LoadedRun,
    baseline: &LoadedRun,
    setup: &PairwiseSetup<'_>,
) -> Result<PairwiseComparison, PairwiseError> {
    let _span = tracing::info_span!(
        "pairwise",
        candidate = %candidate.record.id,
        baseline = %baseline.record.id,
        judge = %setup.options.judge
    )
    .entered();
    let by_id: HashMap<&str, usize> = candidate
        .cases
        .iter()
        .enumerate()
        .map(|(i, (c, _, _))| (c.id.as_str(), i))
        .collect();
    let shared: Vec<(usize, usize)> = baseline
        .cases
        .iter()
        .enumerate()
        .filter_map(|(b, (case, _, _))| by_id.get(case.id.as_str()).map(|&c| (c, b)))
        .collect();
    if shared.is_empty() {
        return Err(PairwiseError::NoSharedCases {
            candidate: candidate.record.id.clone(),
            baseline: baseline.record.id.clone(),
        });
    }
    let seed = baseline.settings.options.bootstrap.seed;
    let answers: Vec<[Result<&str, Unjudgeable>; 2]> = shared
        .iter()
        .map(|&(c, b)| {
            [
                side_answer(candidate.cases[c].1.as_ref()),
                side_answer(baseline.cases[b].1.as_ref()),
            ]
        })
        .collect();
    let judgeable: Vec<&str> = shared
        .iter()
        .zip(&answers)
        .filter(|(_, [c, b])| c.is_ok() && b.is_ok())
        .map(|(&(_, b), _)| baseline.cases[b].0.id.as_str())
        .collect();
    let orders = first_orders(seed, &judgeable);

    let judge = setup.judge;
    let mut usage = PairwiseUsage::default();
    let mut costs: Vec<Option<f64>> = Vec::new();
    let mut consistency = PositionConsistency::default();
    let mut cases = Vec::with_capacity(shared.len());
    for (&(_, b), [cand, base]) in shared.iter().zip(&answers) {
        let case = &baseline.cases[b].0;
        let size = |a: &Result<&str, Unjudgeable>| match a {
            // The same counts as `max_length`'s characters and words.
            Ok(text) => (
                Some(oloproof_metrics::text::char_count(text)),
                Some(oloproof_metrics::text::word_count(text)),
            ),
            Err(_) => (None, None),
        };
        let ((cc, cw), (bc, bw)) = (size(cand), size(base));
        let mut out = PairwiseCase {
            case_id: case.id.clone(),
            outcome: PairwiseOutcome::Missing,
            reason: None,
            error: None,
            first: None,
            calls: Vec::new(),
            consistent: None,
            chars: [cc, bc],
            words: [cw, bw],
        };
        let (cand_text, base_text) = match (cand, base) {
            (Ok(c), Ok(b)) => (*c, *b),
            _ => {
                let describe = |side: &str, a: &Result<&str, Unjudgeable>| match a {
                    Ok(_) => None,
                    Err(Unjudgeable::NotRun) => Some((true, "not_run", format!("{side}: not run"))),
                    Err(Unjudgeable::Failed(e)) => Some((true, "failed", format!("{side}: {e}"))),
                    Err(Unjudgeable::NoAnswer) => {
                        Some((false, "no_answer", format!("{side}: no answer")))
                    }
                };
                let (c, b) = (describe("candidate", cand), describe("baseline", base));
                // A failed or absent side makes the case missing; only then does a side with
                // no answer make it excluded. The sides of that kind name the reason.
                let missing = [&c, &b].iter().any(|p| p.as_ref().is_some_and(|p| p.0));
                fn deciding(
                    p: &Option<(bool, &'static str, String)>,
                    missing: bool,
                ) -> Option<&'static str> {
                    p.as_ref().filter(|p| p.0 == missing).map(|p| p.1)
                }
                let reason = match (deciding(&c, missing), deciding(&b, missing)) {
                    (Some(x), Some(y)) if x == y => format!("both_{x}"),
                    (Some(_), Some(_)) => "both_missing".to_string(),
                    (Some(x), None) => format!("candidate_{x}"),
                    (None, Some(y)) => format!("baseline_{y}"),
                    (None, None) => "unjudgeable".to_string(),
                };
                let problems: Vec<String> = [c, b].into_iter().flatten().map(|p| p.2).collect();
                out.outcome = if missing {
                    PairwiseOutcome::Missing
                } else {
                    PairwiseOutcome::Excluded
                };
                out.reason = Some(reason);
                out.error = missing.then(|| problems.join("; "));
                cases.push(out);
                continue;
            }
        };
        let first = orders
            .get(case.id.as_str())
            .copied()
            .unwrap_or(Side::Candidate);
        out.first = Some(first);
        let question = question_of(case);
        let (a, bb) = match first {
            Side::Candidate => (cand_text, base_text),
            Side::Baseline => (base_text, cand_text),
        };
        let second = match first {
            Side::Candidate => Side::Baseline,
            Side::Baseline => Side::Candidate,
        };
        match oloproof_judge::ragas::pairwise_judge(judge, setup.cache, &question, a, bb, 0) {
            Ok(score) => {
                for call in &score.calls {
                    usage.calls += 1;
                    usage.cached += u64::from(call.cached);
                    usage.input_tokens += call.usage.input_tokens;
                    usage.output_tokens += call.usage.output_tokens;
                    costs.push(call.cost_usd);
                }
                let orders_label = score.detail.get("orders").and_then(Value::as_array);
                let label = |i: usize| {
                    orders_label
                        .and_then(|o| o.get(i))
                        .and_then(Value::as_str)
                        .map(str::to_string)
                };
                // `orders` is in the first call's labels (A = `first`) for both calls.
                let (w1, w2) = (label(0), label(1));
                for (i, shown_first) in [first, second].into_iter().enumerate() {
                    let parsed = score.calls.get(i).map(|c| &c.parsed);
                    let raw_winner = parsed.and_then(|p| p.get("winner")).and_then(Value::as_str);
                    match raw_winner {
                        Some("A") => consistency.first_position_preferred += 1,
                        Some("B") => consistency.second_position_preferred += 1,
                        _ => consistency.tie_calls += 1,
                    }
                    let w = if i == 0 { &w1 } else { &w2 };
                    out.calls.push(PairwiseCall {
                        shown_first,
                        preferred: preference_of(w.as_deref(), first),
                        reason: parsed
                            .and_then(|p| p.get("reason"))
                            .and_then(Value::as_str)
                            .map(str::to_string),
                    });
                }
                let consistent = score
                    .detail
                    .get("consistent")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                consistency.judged += 1;
                consistency.agreed += u64::from(consistent);
                match first {
                    Side::Candidate => consistency.candidate_shown_first += 1,
                    Side::Baseline => consistency.baseline_shown_first += 1,
                }
                out.consistent = Some(consistent);
                let winner = score.detail.get("winner").and_then(Value::as_str);
                out.outcome = match preference_of(winner, first) {
                    Preference::Candidate => PairwiseOutcome::Win,
                    Preference::Baseline => PairwiseOutcome::Loss,
                    Preference::Tie => PairwiseOutcome::Tie,
                };
            }
            Err(e) => {
                tracing::debug!(case = %case.id, error = %e, "pairwise judge call failed");
                usage.failed += 1;
                let billed = e.usage();
                usage.input_tokens += billed.input_tokens;
                usage.output_tokens += billed.output_tokens;
                costs.push(judge.cost(billed));
                out.outcome = PairwiseOutcome::Missing;
                out.reason = Some(reason::JUDGE_ERROR.to_string());
                out.error = Some(format!("{}: {e}", e.kind()));
            }
        }
        cases.push(out);
    }
    usage.cost_usd = costs
        .iter()
        .try_fold(0.0, |sum, c| c.map(|c| sum + c))
        .filter(|_| !costs.is_empty());
    if consistency.judged > 0 {
        consistency.agreed_points = Some(tenths(
            100.0 * consistency.agreed as f64 / consistency.judged as f64,
        ));
    }
    let all = tally(cases.iter().map(|c| c.outcome));
    let decided = all.wins + all.losses;
    let interval_points = clopper_pearson(all.wins, decided, CONFIDENCE)
        .ok()
        .map(|ci| {
            let r = ci.round_outward(PROPORTION_STEP);
            [tenths(r.lo * 100.0), tenths(r.hi * 100.0)]
        });
    // `clopper_pearson` and `sign_test` fail only with no decided case (None, as documented).
    let sign_test_p = sign_test(all.wins, all.losses).ok().map(|t| t.p_value);
    let count = |o: PairwiseOutcome| cases.iter().filter(|c| c.outcome == o).count() as u64;
    let length = length_summary(&cases);
    Ok(PairwiseComparison {
        judge: setup.options.judge.clone(),
        template: format!("{}@{}", PAIRWISE.id, PAIRWISE.version),
        order_seed: seed,
        calibrated: setup.calibrated,
        exploratory: setup.options.exploratory,
        tally: all,
        missing: count(PairwiseOutcome::Missing),
        excluded: count(PairwiseOutcome::Excluded),
        judge_errors: cases
            .iter()
            .filter(|c| c.reason.as_deref() == Some(reason::JUDGE_ERROR))
            .count() as u64,
        interval_points,
        sign_test_p,
        consistency,
        self_preference: self_preference(judge, setup.options, candidate, baseline),
        length,
        cases,
        usage,
    })
}

fn length_summary(cases: &[PairwiseCase]) -> LengthSummary {
    let both: Vec<&PairwiseCase> = cases
        .iter()
        .filter(|c| c.char_difference().is_some())
        .collect();
    let mean = |f: &dyn Fn(&PairwiseCase) -> Option<i64>| -> Option<f64> {
        let values: Vec<i64> = both.iter().filter_map(|c| f(c)).collect();
        (!values.is_empty())
            .then(|| tenths(values.iter().map(|&v| v as f64).sum::<f64>() / values.len() as f64))
    };
    let group = |keep: &dyn Fn(i64) -> bool| {
        tally(
            both.iter()
                .filter(|c| c.char_difference().is_some_and(keep))
                .map(|c| c.outcome),
        )
    };
    LengthSummary {
        cases: both.len() as u64,
        mean_char_difference: mean(&PairwiseCase::char_difference),
        mean_word_difference: mean(&PairwiseCase::word_difference),
        candidate_longer: group(&|d| d > 0),
        candidate_shorter: group(&|d| d < 0),
        same_length: group(&|d| d == 0),
    }
}

/// The policy's pairwise decision on `p`: PASS when the lower bound of the exact interval of
/// the win rate lies above `min_win_rate`, FAIL when its upper bound lies below, else
/// INSUFFICIENT_EVIDENCE; `too_many_missing` when more than `max_missing_rate` of the shared
/// cases are missing, `no_decided_cases` when nothing was won or lost.
pub fn decide(
    p: &PairwiseComparison,
    options: &PairwiseOptions,
    max_missing_rate: f64,
) -> DecisionResult {
    let min_points = tenths(options.min_win_rate * 100.0);
    let t = &p.tally;
    let detail = vec![format!(
        "{} wins · {} losses · {} ties · {} missing · {} excluded",
        t.wins, t.losses, t.ties, p.missing, p.excluded
    )];
    let mut result = DecisionResult {
        name: options.name.clone(),
        kind: DecisionKind::PairwisePreference,
        criteria: vec![format!("pairwise:{}", p.judge)],
        margin_points: None,
        cases: Vec::new(),
        verdict: DecisionVerdict::InsufficientEvidence,
        reason: String::new(),
        interval_points: p.interval_points,
        min_win_rate_points: Some(min_points),
        max_increase_percent: None,
        ratio_interval: None,
        detail,
    };
    let total = p.cases.len() as f64;
    if total > 0.0 && p.missing as f64 / total > max_missing_rate {
        result.reason = reason::TOO_MANY_MISSING.to_string();
        result.detail.push(format!(
            "{} of {} missing, above the allowed {:.1}%",
            p.missing,
            p.cases.len(),
            max_missing_rate * 100.0
        ));
        return result;
    }
    let Some([lo, hi]) = p.interval_points else {
        result.reason = reason::NO_DECIDED_CASES.to_string();
        return result;
    };
    let d = win_rate_at_least(Interval::new(lo, hi), min_points);
    result.verdict = match d.verdict {
        Verdict3::Pass => DecisionVerdict::Pass,
        Verdict3::Fail => DecisionVerdict::Fail,
        Verdict3::InsufficientEvidence => DecisionVerdict::InsufficientEvidence,
    };
    result.reason = d.reason.to_string();
    result
}

/// The pairwise judge as `oloproof calibrate --evaluator pairwise` measures it: each labelled
/// item holds `answer` (A) and `answer_b` (B) and a human preference (1 = A better, 0 = B
/// better, 0.5 = tie, or `"A"`, `"B"`, `"tie"`); the judge's value is
/// [`oloproof_judge::ragas::pairwise_judge`]'s (both orders, a winner only when they agree),
/// so Cohen's kappa is the agreement on the three outcomes beyond chance. The calibration is
/// recorded under [`CALIBRATION_EVALUATOR`], the identity [`is_calibrated`] checks before a
/// pairwise decision may gate.
pub struct PairwiseCalibration {
    identity: oloproof_core::config::EvaluatorEntry,
    choice: crate::evaluators::JudgeChoice,
    judge: String,
}

impl PairwiseCalibration {
    /// The pairwise judge `judge` (a key of `judges:`).
    pub fn new(judge: &str) -> PairwiseCalibration {
        let mut options = serde_json::Map::new();
        options.insert("judge".into(), json!(judge));
        PairwiseCalibration {
            identity: oloproof_core::config::EvaluatorEntry::new(CALIBRATION_EVALUATOR, options),
            choice: crate::evaluators::JudgeChoice {
                judge: Some(judge.to_string()),
                ..Default::default()
            },
            judge: judge.to_string(),
        }
    }
}

impl crate::evaluators::Evaluator for PairwiseCalibration {
    fn criterion(&self) -> &str {
        CALIBRATION_EVALUATOR
    }

    fn kind(&self) -> oloproof_core::summary::SummaryKind {
        oloproof_core::summary::SummaryKind::Mean
    }

    fn identity(&self) -> &oloproof_core::config::EvaluatorEntry {
        &self.identity
    }

    fn evaluate(
        &self,
        case: &oloproof_core::case::Case,
        trace: &Trace,
        judges: Option<&crate::judged::JudgeEnv<'_>>,
    ) -> oloproof_core::verdict::CriterionVerdict {
        use oloproof_core::verdict::{CriterionVerdict, Verdict};
        let verdict = |verdict: Verdict, detail: Value| CriterionVerdict {
            criterion: CALIBRATION_EVALUATOR.to_string(),
            verdict,
            detail,
        };
        let answers = (
            trace.output_field("answer").and_then(Value::as_str),
            trace.output_field("answer_b").and_then(Value::as_str),
        );
        let (Some(a), Some(b)) = answers else {
            let reason = if answers.0.is_none() {
                "no_answer"
            } else {
                "no_answer_b"
            };
            return verdict(
                Verdict::Excluded {
                    reason: reason.into(),
                },
                Value::Null,
            );
        };
        let Some(client) = judges.and_then(|env| env.judges.client(&self.judge).map(|c| (env, c)))
        else {
            return verdict(
                Verdict::Missing {
                    error: format!("no judge named `{}`", self.judge),
                },
                Value::Null,
            );
        };
        let (env, client) = client;
        let question = question_of(case);
        match oloproof_judge::ragas::pairwise_judge(client, env.cache, &question, a, b, 0) {
            Ok(score) => match score.value {
                Some(value) => verdict(Verdict::Score { value }, score.detail),
                None => verdict(
                    Verdict::Missing {
                        error: "the pairwise judge gave no preference".into(),
                    },
                    score.detail,
                ),
            },
            Err(e) => verdict(
                Verdict::Missing {
                    error: e.to_string(),
                },
                Value::Null,
            ),
        }
    }

    fn judge_names(&self) -> Vec<String> {
        vec![self.judge.clone()]
    }

    fn judge_choice(&self) -> Option<&crate::evaluators::JudgeChoice> {
        Some(&self.choice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use oloproof_core::case::Case;
    use oloproof_core::config::validate;
    use oloproof_core::settings::RunSettings;
    use oloproof_core::source::YamlDocument;
    use oloproof_judge::mock::{MockReply, MockServer, RecordedRequest};
    use oloproof_judge::{JudgeSettings, MemoryCache};

    fn settings() -> RunSettings {
        let text = "system:\n  rag: {object: app:X, depth: 3, top_k: 2}\ncases: cases.jsonl\nevaluators:\n  - {type: contains, criterion: answer_correct}\n";
        let doc = YamlDocument::parse("oloproof.yaml", text).unwrap();
        let options = validate(
            &doc,
            &doc.value,
            &[],
            std::path::Path::new("."),
            &crate::evaluators::Catalog,
        )
        .unwrap();
        serde_json::from_value(json!({
            "config_path": "oloproof.yaml", "config_dir": ".", "options": options,
            "system": {"name": "x", "version": "1", "depth": 3, "top_k": 2,
                "token_budget": null, "index_version": null, "params": {}},
            "workers": 1, "timeout_s": 60.0, "use_cache": true,
        }))
        .unwrap()
    }

    /// A run whose case `i` (ids `c0`…) has the trace `trace(i)`.
    fn run(id: &str, n: usize, trace: impl Fn(usize) -> Option<Trace>) -> LoadedRun {
        let settings = settings();
        let cases = (0..n)
            .map(|i| {
                let case: Case = serde_json::from_value(
                    json!({"id": format!("c{i}"), "input": {"question": format!("question {i}")}}),
                )
                .unwrap();
                (case, trace(i), Vec::new())
            })
            .collect();
        LoadedRun {
            record: oloproof_core::run::RunRecord {
                id: id.to_string(),
                created_ms: 0,
                status: oloproof_core::store::RunStatus::Complete,
                config_path: "oloproof.yaml".into(),
                settings_json: serde_json::to_string(&settings).unwrap(),
                identity: String::new(),
                system_json: "{}".into(),
                summary_json: None,
                parent: None,
                case_count: n as i64,
                done_count: n as i64,
            },
            settings,
            cases,
            criteria: Vec::new(),
        }
    }

    fn answered(i: usize, answer: &str, model: Option<&str>) -> Option<Trace> {
        let mut t = Trace::new(&format!("c{i}"));
        let mut g = serde_json::Map::new();
        g.insert("answer".into(), json!(answer));
        if let Some(m) = model {
            g.insert("usage".into(), json!({"model": m}));
        }
        t.generation = Some(g);
        Some(t)
    }

    fn client(server: &MockServer, model: &str) -> JudgeClient {
        let settings: JudgeSettings = serde_json::from_value(json!({
            "provider": "openai", "base_url": server.base_url(), "model": model,
            "max_retries": 0, "timeout_s": 5, "prices": {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
        }))
        .unwrap();
        JudgeClient::new("pj", settings).unwrap()
    }

    fn shown(r: &RecordedRequest) -> (String, String) {
        let user = r.body["messages"][1]["content"].as_str().unwrap_or("");
        let a = user.split("Answer A: ").nth(1).unwrap_or("");
        let (a, b) = a.split_once("\n\nAnswer B: ").unwrap_or((a, ""));
        (a.to_string(), b.to_string())
    }

    /// Prefers the answer containing "better", in whichever position it is shown.
    fn fair_judge(server: &MockServer) {
        server.respond_with(|r| {
            let (a, b) = shown(r);
            let winner = match (a.contains("better"), b.contains("better")) {
                (true, false) => "A",
                (false, true) => "B",
                _ => "tie",
            };
            MockReply::json(json!({"reason": format!("picked {winner}"), "winner": winner}))
        });
    }

    fn options(judge: &str) -> PairwiseOptions {
        serde_json::from_value(json!({"judge": judge})).unwrap()
    }

    fn judge_with(
        cand: &LoadedRun,
        base: &LoadedRun,
        judge: &JudgeClient,
        options: &PairwiseOptions,
        cache: &dyn JudgeCache,
    ) -> PairwiseComparison {
        let setup = PairwiseSetup {
            options,
            judge,
            cache,
            calibrated: false,
        };
        judge_pairs(cand, base, &setup).unwrap()
    }

    #[test]
    fn a_judge_that_prefers_the_better_answer_in_both_orders_gives_wins() {
        let server = MockServer::start();
        fair_judge(&server);
        let judge = client(&server, "judge-1");
        let base = run("run_b", 20, |i| answered(i, "plain answer", None));
        // 18 better (and longer) answers, 2 worse.
        let cand = run("run_c", 20, |i| {
            answered(
                i,
                if i < 18 {
                    "a better, longer answer"
                } else {
                    "worse"
                },
                None,
            )
        });
        let cache = MemoryCache::new();
        let opts = options("pj");
        let p = judge_with(&cand, &base, &judge, &opts, &cache);
        assert_eq!((p.tally.wins, p.tally.losses, p.tally.ties), (18, 0, 2));
        // "worse" vs "plain answer": neither is "better", so the judge says tie twice.
        assert_eq!(p.tally.win_rate_points, Some(100.0));
        assert_eq!((p.missing, p.excluded, p.judge_errors), (0, 0, 0));
        assert_eq!(server.request_count(), 40);
        // Exact interval of 18/18: [(0.025)^(1/18), 1], outward to 0.1 points.
        let lo = (0.025f64.ln() / 18.0).exp();
        assert_eq!(
            p.interval_points,
            Some([(lo * 1000.0).floor() / 10.0, 100.0])
        );
        assert!((p.sign_test_p.unwrap() - 2.0 / 2f64.powi(18)).abs() < 1e-18);
        assert_eq!(p.consistency.judged, 20);
        assert_eq!(p.consistency.agreed_points, Some(100.0));
        assert_eq!(
            (
                p.consistency.candidate_shown_first,
                p.consistency.baseline_shown_first
            ),
            (10, 10)
        );
        assert_eq!(p.consistency.first_position_preferred, 18);
        assert_eq!(p.consistency.second_position_preferred, 18);
        assert_eq!(p.consistency.tie_calls, 4);
        // The first call showed the drawn side first, the second swapped.
        for c in &p.cases {
            assert_eq!(c.calls.len(), 2);
            assert_eq!(Some(c.calls[0].shown_first), c.first);
            assert_ne!(c.calls[0].shown_first, c.calls[1].shown_first);
        }
        let first_req = shown(&server.requests()[0]);
        let case0 = &p.cases[0];
        let expected_a = match case0.first.unwrap() {
            Side::Candidate => "a better, longer answer",
            Side::Baseline => "plain answer",
        };
        assert_eq!(first_req.0, expected_a);
        // Lengths: the longer candidate won 18 of 18; the shorter one tied twice.
        assert_eq!(p.length.candidate_longer.wins, 18);
        assert_eq!(p.length.candidate_shorter.ties, 2);
        assert_eq!(p.length.candidate_shorter.win_rate_points, None);
        assert_eq!(p.cases[0].char_difference(), Some(23 - 12));
        assert_eq!(p.cases[0].word_difference(), Some(4 - 2));
        assert_eq!(p.usage.calls, 40);
        assert_eq!(p.usage.cached, 0);
        assert!(p.usage.cost_usd.unwrap() > 0.0);
        let d = decide(&p, &opts, 0.0);
        assert_eq!(d.verdict, DecisionVerdict::Pass);
        assert_eq!(d.reason, "interval_above_min_win_rate");
        assert_eq!(d.min_win_rate_points, Some(50.0));
        let strict = PairwiseOptions {
            min_win_rate: 0.9,
            ..opts.clone()
        };
        assert_eq!(
            decide(&p, &strict, 0.0).reason,
            "interval_overlaps_min_win_rate"
        );

        // Again through the same cache: nothing is sent, the same judgments come back.
        let again = judge_with(&cand, &base, &judge, &opts, &cache);
        assert_eq!(server.request_count(), 40);
        assert_eq!(again.cases, p.cases);
        assert_eq!(again.usage.cached, 40);
    }

    #[test]
    fn a_position_biased_judge_yields_ties_and_low_consistency() {
        let server = MockServer::start();
        server.respond_with(|_| MockReply::json(json!({"reason": "first", "winner": "A"})));
        let judge = client(&server, "judge-1");
        let base = run("run_b", 12, |i| answered(i, "plain answer", None));
        let cand = run("run_c", 12, |i| answered(i, "a better answer", None));
        let opts = options("pj");
        let p = judge_with(&cand, &base, &judge, &opts, &MemoryCache::new());
        assert_eq!((p.tally.wins, p.tally.losses, p.tally.ties), (0, 0, 12));
        assert_eq!(p.consistency.agreed_points, Some(0.0));
        assert_eq!(p.consistency.first_position_preferred, 24);
        assert_eq!((p.interval_points, p.sign_test_p), (None, None));
        let d = decide(&p, &opts, 0.0);
        assert_eq!(
            (d.verdict, d.reason.as_str()),
            (DecisionVerdict::InsufficientEvidence, "no_decided_cases")
        );
        assert!(p.cases.iter().all(|c| c.consistent == Some(false)));
    }

    #[test]
    fn failed_sides_and_judges_are_counted_never_ties() {
        let server = MockServer::start();
        fair_judge(&server);
        let judge = client(&server, "judge-1");
        let base = run("run_b", 5, |i| match i {
            1 => {
                let mut t = Trace::new("c1");
                t.generation = Some(serde_json::Map::new());
                Some(t)
            }
            _ => answered(i, "plain", None),
        });
        let cand = run("run_c", 5, |i| match i {
            0 => {
                let mut t = Trace::new("c0");
                t.error = Some(oloproof_core::trace::StageError {
                    stage: "generate".into(),
                    kind: oloproof_core::trace::ErrorKind::Raised,
                    error_type: Some("RuntimeError".into()),
                    message: "boom".into(),
                    traceback: None,
                    stderr_tail: Vec::new(),
                });
                Some(t)
            }
            2 => None,
            3 => answered(3, "judge fails here", None),
            _ => answered(i, "better", None),
        });
        // The judge fails on case 3 (a 400 is not retried).
        server.respond_with(|r| {
            let (a, b) = shown(r);
            if a.contains("judge fails") || b.contains("judge fails") {
                return MockReply::error(400, "bad request");
            }
            let winner = if a.contains("better") { "A" } else { "B" };
            MockReply::json(json!({"reason": "", "winner": winner}))
        });
        let opts = options("pj");
        let p = judge_with(&cand, &base, &judge, &opts, &MemoryCache::new());
        let outcome = |id: &str| {
            let c = p.cases.iter().find(|c| c.case_id == id).unwrap();
            (c.outcome, c.reason.clone().unwrap_or_default())
        };
        assert_eq!(
            outcome("c0"),
            (PairwiseOutcome::Missing, "candidate_failed".into())
        );
        assert_eq!(
            outcome("c1"),
            (PairwiseOutcome::Excluded, "baseline_no_answer".into())
        );
        assert_eq!(
            outcome("c2"),
            (PairwiseOutcome::Missing, "candidate_not_run".into())
        );
        assert_eq!(
            outcome("c3"),
            (PairwiseOutcome::Missing, "judge_error".into())
        );
        assert_eq!(outcome("c4"), (PairwiseOutcome::Win, String::new()));
        let c0 = p.cases.iter().find(|c| c.case_id == "c0").unwrap();
        assert_eq!(
            c0.error.as_deref(),
            Some("candidate: generate: RuntimeError: boom")
        );
        assert!(c0.calls.is_empty() && c0.first.is_none());
        assert_eq!((p.missing, p.excluded, p.judge_errors), (3, 1, 1));
        assert_eq!((p.tally.wins, p.tally.ties), (1, 0));
        assert_eq!(p.usage.failed, 1);
        // Only c3 (one failed call) and c4 (two calls) reached the judge.
        assert_eq!(server.request_count(), 3);
        let d = decide(&p, &opts, 0.0);
        assert_eq!(d.reason, "too_many_missing");
        assert_eq!(
            decide(&p, &opts, 0.8).reason,
            "interval_overlaps_min_win_rate"
        );
    }

    #[test]
    fn self_preference_is_flagged_from_recorded_or_declared_models() {
        let server = MockServer::start();
        fair_judge(&server);
        let judge = client(&server, "gpt-4o");
        let base = run("run_b", 2, |i| answered(i, "plain", Some("claude-3-haiku")));
        let cand = run("run_c", 2, |i| answered(i, "better", Some("gpt-4o-mini")));
        let opts = options("pj");
        let p = judge_with(&cand, &base, &judge, &opts, &MemoryCache::new());
        let sp = &p.self_preference;
        assert_eq!(
            (sp.judge_model.as_str(), sp.judge_family.as_str()),
            ("gpt-4o", "gpt")
        );
        assert_eq!(sp.same_family, [Side::Candidate]);
        assert_eq!(sp.generators.len(), 2);
        assert_eq!(sp.generators[0].source, ModelSource::Recorded);
        assert_eq!(sp.generators[0].cases, 2);
        // No recorded model: the declared one is used.
        let base = run("run_b", 2, |i| answered(i, "plain", None));
        let cand = run("run_c", 2, |i| answered(i, "better", None));
        let declared = PairwiseOptions {
            baseline_generator_model: Some("openai/gpt-4.1".into()),
            ..opts.clone()
        };
        let p = judge_with(&cand, &base, &judge, &declared, &MemoryCache::new());
        assert_eq!(p.self_preference.same_family, [Side::Baseline]);
        assert_eq!(
            p.self_preference.generators[0].source,
            ModelSource::Declared
        );
        let none = judge_with(&cand, &base, &judge, &opts, &MemoryCache::new());
        assert!(none.self_preference.same_family.is_empty());
    }

    #[test]
    fn no_shared_case_is_an_error() {
        let server = MockServer::start();
        let judge = client(&server, "judge-1");
        let base = run("run_b", 2, |i| answered(i, "x", None));
        let mut cand = run("run_c", 2, |i| answered(i, "y", None));
        for (c, _, _) in &mut cand.cases {
            c.id = format!("other-{}", c.id);
        }
        let opts = options("pj");
        let setup = PairwiseSetup {
            options: &opts,
            judge: &judge,
            cache: &MemoryCache::new(),
            calibrated: false,
        };
        assert!(matches!(
            judge_pairs(&cand, &base, &setup),
            Err(PairwiseError::NoSharedCases { .. })
        ));
    }

    #[test]
    fn families_follow_the_documented_rule() {
        for (a, b) in [
            ("gpt-4o-mini", "gpt-4o"),
            ("gpt-4o", "openai/gpt-3.5-turbo"),
            ("o3-mini", "gpt-4.1"),
            ("llama-3.1-8b", "llama-3.1-70b"),
            ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama3.1:8b"),
            ("claude-3-5-sonnet-20241022", "claude-sonnet-4"),
            ("mixtral-8x7b", "mistral-large-latest"),
            ("qwen2.5-7b-instruct", "Qwen/QwQ-32B"),
            (
                "SmolLM2-135M-Instruct.Q4_1.gguf",
                "HuggingFaceTB/SmolLM2-360M",
            ),
        ] {
            assert_eq!(model_family(a), model_family(b), "{a} / {b}");
        }
        for (a, b) in [
            ("gpt-4o", "claude-3-haiku"),
            ("llama-3.1-8b", "gemma-2-9b"),
            ("gemini-1.5-pro", "gemma-2"),
        ] {
            assert_ne!(model_family(a), model_family(b), "{a} / {b}");
        }
        assert_eq!(model_family("gpt-4o"), "gpt");
        assert_eq!(model_family(""), "");
        assert_eq!(model_family("o"), "o");
    }

    #[test]
    fn first_orders_are_reproducible_and_balanced() {
        let ids: Vec<String> = (0..101).map(|i| format!("case-{i}")).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let a = first_orders(7, &refs);
        let mut reversed = refs.clone();
        reversed.reverse();
        assert_eq!(a, first_orders(7, &reversed), "independent of the order");
        let candidate_first = a.values().filter(|s| **s == Side::Candidate).count();
        assert_eq!(candidate_first, 51);
        let b = first_orders(8, &refs);
        assert_ne!(a, b, "another seed, another draw");
    }
}
