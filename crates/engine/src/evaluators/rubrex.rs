//! Rubrex evaluators (seed 004): measure retrieval and answers separately, and keep abstention
//! and document authority visible.
//!
//! Five criteria, each a pass/fail with its own denominator (`observed · missing · excluded`):
//!
//! | type | criterion | a case passes when | excluded |
//! | --- | --- | --- | --- |
//! | `evidence_coverage` | `evidence_coverage` | every required current passage is among the retrieved candidates (first `k` if given) | no required current passage (`no_required_passage`) |
//! | `context_support` | `context_support` | every claim of the answer is supported by a passage of its context | the system abstained or asked to clarify (`not_an_answer`); no claims (`no_claims`) |
//! | `task_acceptance` | `task_acceptance` | expected `answer`: the system answered, the answer contains the reference, every claim is supported and by a current passage, it cites at least one passage, every citation is a current passage of its context; expected `abstain` / `clarify`: the system did exactly that | expected answer without a reference (`no_expected_answer`) |
//! | `abstention` (`measure: precision`) | `abstention_precision` | the case expected an abstention | the system did not abstain (`did_not_abstain`) |
//! | `abstention` (`measure: recall`) | `abstention_recall` | the system abstained | no abstention expected (`abstention_not_expected`) |
//! | `stale_evidence` | `no_stale_evidence` | no claim is supported only by archived passages | as `context_support` |
//!
//! *Required passages* are `expected.gold_context` (else `expected.relevant` with grade ≥ 1)
//! without those whose `metadata.status` is `archived`. A passage's status is its
//! `metadata.status`, `current` when absent.
//!
//! *What the system did* (answer, abstain, clarify) is the `behavior` its output declares;
//! when it declares none, the answer text is searched for the evaluator's
//! `abstain_patterns` / `clarify_patterns` (default: a short, conservative list of first-person
//! refusals and explicit requests to clarify, `oloproof_metrics::rag::rubrex`); otherwise it
//! answered.
//!
//! *Claim support* comes from the record's human annotations ([`Trace::claims`]: each claim
//! with the ids of the passages that support it) when it has them — a supporter counts only if
//! it is a passage of the case's context — else from the evaluator's `judge:` (the
//! `faithfulness` claim extraction and verification, once against the whole context and, when
//! it holds archived passages, once against its current passages only). With neither, or when
//! a judge call fails, the criterion is `missing` for that case, never a pass or a fail.

use oloproof_core::case::{Behavior, Case};
use oloproof_core::config::EvaluatorEntry;
use oloproof_core::passage::{EvidenceStatus, Passage};
use oloproof_core::source::SourceError;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use oloproof_judge::ragas::{self, Sample};
use oloproof_metrics::rag::rubrex::{
    find_phrase, DEFAULT_ABSTAIN_PATTERNS, DEFAULT_CLARIFY_PATTERNS,
};
use oloproof_metrics::text;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{CallEstimate, EntryParser, Evaluator, EvaluatorSpec, SummaryKind};
use crate::error::RubrexError;
use crate::judged::JudgeEnv;

/// Options of `evidence_coverage` (Rubrex).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct CoverageOptions {
    /// Criterion name (default `evidence_coverage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// Count only the first `k` candidates (default: the whole retrieval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<usize>,
}

/// Options of the Rubrex answer evaluators (`context_support`, `task_acceptance`,
/// `stale_evidence`): claim support comes from the record's human `claims` annotations when it
/// has them, else from `judge:` (claim extraction and verification, as `faithfulness`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct SupportOptions {
    /// Criterion name (default: `context_support`, `task_acceptance`, `no_stale_evidence`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// The judge (a key of `judges:`) for records without claim annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
    /// Phrases that mark an answer as an abstention when the system declares no `behavior`
    /// (case-insensitive; default: a short conservative list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abstain_patterns: Option<Vec<String>>,
    /// Phrases that mark an answer as a request for clarification (same rules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clarify_patterns: Option<Vec<String>>,
}

/// Which half of the abstention pair an `abstention` entry reports.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum AbstentionMeasure {
    /// Of the cases the system abstained on, the share that expected an abstention.
    Precision,
    /// Of the cases that expected an abstention, the share the system abstained on.
    Recall,
}

/// Options of `abstention` (Rubrex): one entry per measure.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AbstentionOptions {
    /// Criterion name (default `abstention_precision` / `abstention_recall`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// `precision` or `recall`.
    pub measure: AbstentionMeasure,
    /// Phrases that mark an answer as an abstention (see [`SupportOptions`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abstain_patterns: Option<Vec<String>>,
    /// Phrases that mark an answer as a request for clarification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clarify_patterns: Option<Vec<String>>,
}

/// `evidence_coverage`: every required current passage retrieved (case-level).
pub(crate) const EVIDENCE_COVERAGE: EvaluatorSpec = EvaluatorSpec {
    name: "evidence_coverage",
    build: |p| {
        let o: CoverageOptions = p.options()?;
        if o.k == Some(0) {
            return Err(p.error("k", "`k` must be at least 1"));
        }
        Ok(rubrex(
            p,
            o.criterion.clone(),
            &o,
            None,
            Criterion::Coverage(o.clone()),
        ))
    },
};
/// `context_support`: every claim of a factual answer supported by its retrieved passages.
pub(crate) const CONTEXT_SUPPORT: EvaluatorSpec = EvaluatorSpec {
    name: "context_support",
    build: |p| support_spec(p, |o| Criterion::Support(o, false)),
};
/// `task_acceptance`: the contract — a correct, cited answer from current evidence, or the
/// expected abstention / clarification.
pub(crate) const TASK_ACCEPTANCE: EvaluatorSpec = EvaluatorSpec {
    name: "task_acceptance",
    build: |p| support_spec(p, Criterion::Task),
};
/// `stale_evidence`: answers with a claim supported only by archived passages (reported as
/// `no_stale_evidence`, a pass when there is none).
pub(crate) const STALE_EVIDENCE: EvaluatorSpec = EvaluatorSpec {
    name: "stale_evidence",
    build: |p| support_spec(p, |o| Criterion::Support(o, true)),
};
/// `abstention`: precision or recall of abstentions.
pub(crate) const ABSTENTION: EvaluatorSpec = EvaluatorSpec {
    name: "abstention",
    build: |p| {
        let o: AbstentionOptions = p.options()?;
        let default = match o.measure {
            AbstentionMeasure::Precision => "abstention_precision",
            AbstentionMeasure::Recall => "abstention_recall",
        };
        let criterion = o.criterion.clone().or(Some(default.to_string()));
        Ok(rubrex(
            p,
            criterion,
            &o,
            None,
            Criterion::Abstention(o.clone()),
        ))
    },
};

fn support_spec(
    p: &EntryParser<'_>,
    criterion: impl FnOnce(SupportOptions) -> Criterion,
) -> Result<Box<dyn Evaluator>, SourceError> {
    let o: SupportOptions = p.options()?;
    if let Some(name) = &o.judge {
        p.check_judge("judge", name)?;
    }
    let name = o.criterion.clone().or_else(|| {
        (p.entry.type_name == "stale_evidence").then(|| "no_stale_evidence".to_string())
    });
    Ok(rubrex(p, name, &o, o.judge.clone(), criterion(o.clone())))
}

fn rubrex<O: Serialize>(
    p: &EntryParser<'_>,
    criterion: Option<String>,
    options: &O,
    judge: Option<String>,
    which: Criterion,
) -> Box<dyn Evaluator> {
    Box::new(Rubrex {
        criterion: criterion.unwrap_or_else(|| p.entry.type_name.clone()),
        identity: p.identity(options),
        judge,
        which,
    })
}

/// Which Rubrex criterion, with its options.
enum Criterion {
    Coverage(CoverageOptions),
    /// Context support; `true`: reported as stale evidence.
    Support(SupportOptions, bool),
    Task(SupportOptions),
    Abstention(AbstentionOptions),
}

struct Rubrex {
    criterion: String,
    identity: EvaluatorEntry,
    /// The judge deciding claim support for records without claim annotations.
    judge: Option<String>,
    which: Criterion,
}

impl Evaluator for Rubrex {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        SummaryKind::Proportion
    }

    fn identity(&self) -> &EvaluatorEntry {
        &self.identity
    }

    fn evaluate(&self, case: &Case, trace: &Trace, env: Option<&JudgeEnv<'_>>) -> CriterionVerdict {
        let (verdict, detail) = match &self.which {
            Criterion::Coverage(o) => evidence_coverage(o, case, trace),
            Criterion::Support(o, stale) => context_support(o, case, trace, env, *stale),
            Criterion::Task(o) => task_acceptance(o, case, trace, env),
            Criterion::Abstention(o) => abstention(o, case, trace),
        };
        CriterionVerdict {
            criterion: self.criterion.clone(),
            verdict,
            detail,
        }
    }

    fn judge_names(&self) -> Vec<String> {
        self.judge.iter().cloned().collect()
    }

    /// Claim support by a judge: up to two faithfulness checks a case (the whole context,
    /// then its current passages; records with claim annotations make none).
    fn estimate(&self, case: &Case) -> Option<CallEstimate> {
        self.judge.as_ref()?;
        Some(super::judged::estimate_calls(case, (2, 0), 1) * 2)
    }
}

type Outcome = (Verdict, Value);

fn missing(error: impl Into<String>) -> Outcome {
    (
        Verdict::Missing {
            error: error.into(),
        },
        Value::Null,
    )
}

fn excluded(reason: &str, detail: Value) -> Outcome {
    (
        Verdict::Excluded {
            reason: reason.to_string(),
        },
        detail,
    )
}

/// The error of a failed stage, or `what is not available`.
fn stage_missing(trace: &Trace, what: &str) -> Outcome {
    match &trace.error {
        Some(e) => missing(e.summary()),
        None => missing(format!("{what} is not available")),
    }
}

/// One required passage: `(doc_id, chunk_id)`.
type Required = (String, Option<String>);

/// The case's required current passages, and how many archived ones were left out.
pub fn required_passages(case: &Case) -> (Vec<Required>, usize) {
    let mut archived = 0;
    let mut keep = |id: &str, chunk: &Option<String>, meta| match EvidenceStatus::of(meta) {
        Ok(EvidenceStatus::Archived) => {
            archived += 1;
            None
        }
        _ => Some((id.to_string(), chunk.clone())),
    };
    let required: Vec<Required> = match &case.expected.gold_context {
        Some(gold) if !gold.is_empty() => gold
            .iter()
            .filter_map(|g| keep(&g.doc_id, &g.chunk_id, g.metadata.as_ref()))
            .collect(),
        _ => case
            .expected
            .relevant
            .iter()
            .flatten()
            .filter(|r| r.grade >= 1.0)
            .filter_map(|r| keep(&r.doc_id, &r.chunk_id, r.metadata.as_ref()))
            .collect(),
    };
    (required, archived)
}

fn evidence_coverage(o: &CoverageOptions, case: &Case, trace: &Trace) -> Outcome {
    let (required, archived) = required_passages(case);
    if required.is_empty() {
        return excluded(
            "no_required_passage",
            json!({"archived_required_left_out": archived}),
        );
    }
    let Some(retrieval) = &trace.retrieval else {
        return stage_missing(trace, "the retrieval");
    };
    let depth = o.k.unwrap_or(usize::MAX).min(retrieval.candidates.len());
    let candidates = &retrieval.candidates[..depth];
    let not_retrieved: Vec<&str> = required
        .iter()
        .filter(|(doc, chunk)| {
            !candidates
                .iter()
                .any(|c| &c.doc_id == doc && (chunk.is_none() || &c.chunk_id == chunk))
        })
        .map(|(doc, _)| doc.as_str())
        .collect();
    (
        Verdict::pass_if(not_retrieved.is_empty()),
        json!({
            "required": required.iter().map(|(d, _)| d).collect::<Vec<_>>(),
            "not_retrieved": not_retrieved,
            "searched": depth,
        }),
    )
}

/// What the system did, and how that was decided.
pub fn observed_behavior(
    trace: &Trace,
    abstain_patterns: Option<&[String]>,
    clarify_patterns: Option<&[String]>,
) -> Result<(Behavior, Value), RubrexError> {
    if let Some(b) = trace.declared_behavior()? {
        return Ok((b, json!({"behavior": b.as_str(), "declared": true})));
    }
    let Some(answer) = trace.answer() else {
        return Err(RubrexError::NoAnswerNorBehavior);
    };
    let abstain = match abstain_patterns {
        Some(p) => find_phrase(answer, p),
        None => find_phrase(answer, DEFAULT_ABSTAIN_PATTERNS),
    };
    if let Some(phrase) = abstain {
        return Ok((
            Behavior::Abstain,
            json!({"behavior": "abstain", "declared": false, "phrase": phrase}),
        ));
    }
    let clarify = match clarify_patterns {
        Some(p) => find_phrase(answer, p),
        None => find_phrase(answer, DEFAULT_CLARIFY_PATTERNS),
    };
    if let Some(phrase) = clarify {
        return Ok((
            Behavior::Clarify,
            json!({"behavior": "clarify", "declared": false, "phrase": phrase}),
        ));
    }
    Ok((
        Behavior::Answer,
        json!({"behavior": "answer", "declared": false}),
    ))
}

/// The passages the answer was generated from: the context, else the retrieved candidates.
fn context_passages(trace: &Trace) -> Vec<&Passage> {
    match (&trace.context, &trace.retrieval) {
        (Some(c), _) => c.passages.iter().map(|p| &p.passage).collect(),
        (None, Some(r)) => r.candidates.iter().collect(),
        (None, None) => Vec::new(),
    }
}

fn passage_named<'a>(passages: &[&'a Passage], id: &str) -> Option<&'a Passage> {
    passages
        .iter()
        .copied()
        .find(|p| p.doc_id == id || p.chunk_id.as_deref() == Some(id))
}

/// The passages of [`context_passages`], with an error for the first one whose status is not
/// a known word (a system's passages are not checked when they are retrieved).
fn checked_context(trace: &Trace) -> Result<Vec<&Passage>, RubrexError> {
    let passages = context_passages(trace);
    for p in &passages {
        p.status().map_err(|source| RubrexError::EvidenceStatus {
            doc_id: p.doc_id.clone(),
            source,
        })?;
    }
    Ok(passages)
}

fn status(p: &Passage) -> EvidenceStatus {
    // Every caller took `p` from `checked_context`, which rejects a bad status.
    p.status().unwrap_or_default()
}

/// One claim of the answer and its support in the context.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimSupport {
    /// The claim.
    pub claim: String,
    /// Supported by at least one passage of the context.
    pub supported: bool,
    /// Supported by at least one current passage of the context.
    pub by_current: bool,
}

impl ClaimSupport {
    /// Supported, but only by archived passages.
    pub fn stale(&self) -> bool {
        self.supported && !self.by_current
    }
}

/// Claim support with where it came from (`annotations` or `judge`) and its evidence.
struct Support {
    claims: Vec<ClaimSupport>,
    detail: Value,
}

/// Claim support from the record's annotations, if it has any.
fn annotated_support(trace: &Trace, passages: &[&Passage]) -> Option<Support> {
    let annotations = trace.claims.as_ref()?;
    let mut claims = Vec::new();
    let mut rows = Vec::new();
    for a in annotations {
        let found: Vec<&Passage> = a
            .supported_by
            .iter()
            .filter_map(|id| passage_named(passages, id))
            .collect();
        let outside: Vec<&String> = a
            .supported_by
            .iter()
            .filter(|id| passage_named(passages, id).is_none())
            .collect();
        let c = ClaimSupport {
            claim: a.claim.clone(),
            supported: !found.is_empty(),
            by_current: found.iter().any(|p| status(p) == EvidenceStatus::Current),
        };
        rows.push(json!({
            "claim": c.claim,
            "supported_by": found.iter().map(|p| json!({"id": p.doc_id, "status": status(p).as_str()})).collect::<Vec<_>>(),
            "not_in_context": outside,
        }));
        claims.push(c);
    }
    Some(Support {
        claims,
        detail: json!({"source": "annotations", "claims": rows}),
    })
}

/// Per-claim verdicts of a `faithfulness` result detail.
fn judged_flags(detail: &Value) -> Vec<(String, bool)> {
    detail["claims"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|c| {
                    (
                        // The detail is faithfulness's own output: a claim is always text.
                        c["claim"].as_str().unwrap_or_default().to_string(),
                        c["verdict"].as_u64() == Some(1),
                    )
                })
                .collect()
        })
        .unwrap_or_default() // no claims in the detail: none to flag
}

/// Claim support from the judge: `faithfulness` against the context, and against its current
/// passages when it holds archived ones.
fn judged_support(
    judge: &str,
    case: &Case,
    trace: &Trace,
    passages: &[&Passage],
    env: &JudgeEnv<'_>,
) -> Result<Support, RubrexError> {
    let client = env
        .judges
        .client(judge)
        .ok_or_else(|| RubrexError::UnknownJudge(judge.to_string()))?;
    let answer = trace.answer().ok_or(RubrexError::NoAnswer)?;
    let question = crate::judged::question_of(case);
    let texts = |keep: &dyn Fn(&Passage) -> bool| -> Vec<String> {
        passages
            .iter()
            .filter(|p| keep(p))
            .filter_map(|p| p.text.clone())
            .collect()
    };
    let all = texts(&|_| true);
    let current = texts(&|p| status(p) == EvidenceStatus::Current);
    let sample = |contexts: &[String]| -> Result<ragas::JudgedScore, RubrexError> {
        ragas::faithfulness(
            client,
            env.cache,
            &Sample {
                question: &question,
                answer,
                contexts,
                reference: None,
            },
            0,
        )
        .map_err(|source| RubrexError::Judge {
            judge: judge.to_string(),
            source,
        })
    };
    let whole = sample(&all)?;
    let mut calls = whole.calls.clone();
    let flags = judged_flags(&whole.detail);
    let current_flags = if current.len() == all.len() {
        flags.clone()
    } else if current.is_empty() || !flags.iter().any(|f| f.1) {
        flags.iter().map(|(c, _)| (c.clone(), false)).collect()
    } else {
        let part = sample(&current)?;
        calls.extend(part.calls.clone());
        let by_claim = judged_flags(&part.detail);
        flags
            .iter()
            .map(|(c, _)| {
                let ok = by_claim.iter().any(|(d, ok)| d == c && *ok);
                (c.clone(), ok)
            })
            .collect()
    };
    let claims: Vec<ClaimSupport> = flags
        .iter()
        .zip(&current_flags)
        .map(|((claim, ok), (_, cur))| ClaimSupport {
            claim: claim.clone(),
            supported: *ok,
            by_current: *ok && *cur,
        })
        .collect();
    Ok(Support {
        detail: json!({
            "source": "judge",
            "judge": judge,
            "claims": claims.iter().map(|c| json!({"claim": c.claim, "supported": c.supported, "by_current": c.by_current})).collect::<Vec<_>>(),
            "calls": crate::judged::call_detail(&calls),
        }),
        claims,
    })
}

/// Claim support from the annotations, else the judge, else an error (`missing`).
fn support(
    o: &SupportOptions,
    case: &Case,
    trace: &Trace,
    env: Option<&JudgeEnv<'_>>,
) -> Result<Support, RubrexError> {
    let passages = checked_context(trace)?;
    if let Some(s) = annotated_support(trace, &passages) {
        return Ok(s);
    }
    match (&o.judge, env) {
        (Some(judge), Some(env)) => judged_support(judge, case, trace, &passages, env),
        (Some(_), None) => Err(RubrexError::NoJudges),
        (None, _) => Err(RubrexError::NoSupport),
    }
}

fn behavior_of(
    trace: &Trace,
    abstain: &Option<Vec<String>>,
    clarify: &Option<Vec<String>>,
) -> Result<(Behavior, Value), Outcome> {
    if trace.error.is_some() || trace.generation.is_none() {
        return Err(stage_missing(trace, "the generation"));
    }
    observed_behavior(trace, abstain.as_deref(), clarify.as_deref())
        .map_err(|e| missing(e.to_string()))
}

/// `context_support` (and, with `stale`, `stale_evidence`).
fn context_support(
    o: &SupportOptions,
    case: &Case,
    trace: &Trace,
    env: Option<&JudgeEnv<'_>>,
    stale: bool,
) -> Outcome {
    let (behavior, how) = match behavior_of(trace, &o.abstain_patterns, &o.clarify_patterns) {
        Ok(b) => b,
        Err(out) => return out,
    };
    if behavior != Behavior::Answer {
        return excluded("not_an_answer", json!({"observed": how}));
    }
    let s = match support(o, case, trace, env) {
        Ok(s) => s,
        Err(e) => return missing(e.to_string()),
    };
    let mut detail = s.detail;
    if s.claims.is_empty() {
        return excluded("no_claims", detail);
    }
    let (failed, key): (Vec<&str>, &str) = if stale {
        (
            s.claims
                .iter()
                .filter(|c| c.stale())
                .map(|c| c.claim.as_str())
                .collect(),
            "stale_claims",
        )
    } else {
        (
            s.claims
                .iter()
                .filter(|c| !c.supported)
                .map(|c| c.claim.as_str())
                .collect(),
            "unsupported_claims",
        )
    };
    detail[key] = json!(failed);
    (Verdict::pass_if(failed.is_empty()), detail)
}

fn references(case: &Case) -> Vec<String> {
    match &case.expected.answer {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        Some(Value::Number(n)) => vec![n.to_string()],
        _ => Vec::new(),
    }
}

fn task_acceptance(
    o: &SupportOptions,
    case: &Case,
    trace: &Trace,
    env: Option<&JudgeEnv<'_>>,
) -> Outcome {
    let (observed, how) = match behavior_of(trace, &o.abstain_patterns, &o.clarify_patterns) {
        Ok(b) => b,
        Err(out) => return out,
    };
    // A case that states no behaviour expects an answer (the documented default).
    let expected = case.expected.behavior.unwrap_or_default();
    if expected != Behavior::Answer {
        return (
            Verdict::pass_if(observed == expected),
            json!({"expected": expected.as_str(), "observed": how}),
        );
    }
    if observed != Behavior::Answer {
        return (
            Verdict::Fail,
            json!({"expected": "answer", "observed": how, "failed": [format!("{}_instead_of_answering", observed.as_str())]}),
        );
    }
    let refs = references(case);
    if refs.is_empty() {
        return excluded("no_expected_answer", json!({"observed": how}));
    }
    let Some(answer) = trace.answer() else {
        return missing("the system's output has no `answer`");
    };
    let correct = refs.iter().any(|r| text::contains(answer, r));
    let passages = match checked_context(trace) {
        Ok(p) => p,
        Err(e) => return missing(e.to_string()),
    };
    let cited = trace.citations();
    let invalid: Vec<&String> = cited
        .iter()
        .filter(|c| passage_named(&passages, c).is_none())
        .collect();
    let archived: Vec<&String> = cited
        .iter()
        .filter(|c| {
            passage_named(&passages, c).is_some_and(|p| status(p) == EvidenceStatus::Archived)
        })
        .collect();
    let mut failed: Vec<&str> = Vec::new();
    if !correct {
        failed.push("incorrect");
    }
    if cited.is_empty() {
        failed.push("uncited");
    }
    if !invalid.is_empty() {
        failed.push("citation_outside_context");
    }
    if !archived.is_empty() {
        failed.push("cites_archived");
    }
    let mut detail = json!({
        "expected": "answer",
        "observed": how,
        "correct": correct,
        "cited": cited,
        "invalid_citations": invalid,
        "archived_citations": archived,
    });
    // The cheap checks decide a failure without a judge; a pass needs the claims' support.
    let support = if failed.is_empty() || trace.claims.is_some() {
        match support(o, case, trace, env) {
            Ok(s) => Some(s),
            Err(e) => return missing(e.to_string()),
        }
    } else {
        None
    };
    if let Some(s) = support {
        if s.claims.iter().any(|c| !c.supported) {
            failed.push("unsupported_claim");
        }
        if s.claims.iter().any(ClaimSupport::stale) {
            failed.push("stale_evidence");
        }
        detail["support"] = s.detail;
    }
    detail["failed"] = json!(failed);
    (Verdict::pass_if(failed.is_empty()), detail)
}

fn abstention(o: &AbstentionOptions, case: &Case, trace: &Trace) -> Outcome {
    let (observed, how) = match behavior_of(trace, &o.abstain_patterns, &o.clarify_patterns) {
        Ok(b) => b,
        Err(out) => return out,
    };
    // A case that states no behaviour expects an answer (the documented default).
    let expected = case.expected.behavior.unwrap_or_default();
    let detail = json!({"expected": expected.as_str(), "observed": how});
    match o.measure {
        AbstentionMeasure::Precision if observed != Behavior::Abstain => {
            excluded("did_not_abstain", detail)
        }
        AbstentionMeasure::Precision => (Verdict::pass_if(expected == Behavior::Abstain), detail),
        AbstentionMeasure::Recall if expected != Behavior::Abstain => {
            excluded("abstention_not_expected", detail)
        }
        AbstentionMeasure::Recall => (Verdict::pass_if(observed == Behavior::Abstain), detail),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oloproof_core::dataset::parse_dataset;

    fn eval(options: Value, record: &str) -> CriterionVerdict {
        let o = super::super::from_json(&options).unwrap();
        let d = parse_dataset("t.jsonl", record, None).unwrap();
        let r = &d.records[0];
        o.evaluate(&r.case, &r.trace, None)
    }

    const CURRENT: &str = r#"{"doc_id":"refund-current","text":"Refunds within 14 days.","metadata":{"status":"current"}}"#;
    const OLD: &str = r#"{"doc_id":"refund-old","text":"Refunds within 30 days.","metadata":{"status":"archived"}}"#;

    fn record(expected: &str, candidates: &[&str], rest: &str) -> String {
        format!(
            r#"{{"id":"r","input":{{"question":"refund window?"}},"expected":{expected},"retrieval":{{"candidates":[{}]}}{rest}}}"#,
            candidates.join(",")
        )
    }

    const GOLD: &str = r#"{"answer":"14 days","gold_context":[{"doc_id":"refund-current","text":"Refunds within 14 days."},{"doc_id":"refund-old","text":"Refunds within 30 days.","metadata":{"status":"archived"}}]}"#;

    #[test]
    fn coverage_counts_required_current_passages_and_excludes_cases_without() {
        let c = json!({"type": "evidence_coverage"});
        let hit = eval(
            c.clone(),
            &record(GOLD, &[OLD, CURRENT], r#","answer":"x""#),
        );
        assert_eq!(
            hit.verdict,
            Verdict::Pass,
            "the archived gold passage is not required"
        );
        let k1 = eval(
            json!({"type": "evidence_coverage", "k": 1}),
            &record(GOLD, &[OLD, CURRENT], r#","answer":"x""#),
        );
        assert_eq!(k1.verdict, Verdict::Fail);
        assert_eq!(k1.detail["not_retrieved"], json!(["refund-current"]));
        let none = eval(c.clone(), &record(r#"{"behavior":"abstain"}"#, &[OLD], ""));
        assert_eq!(
            none.verdict,
            Verdict::Excluded {
                reason: "no_required_passage".into()
            }
        );
        let mut t = parse_dataset("t.jsonl", &record(GOLD, &[CURRENT], ""), None)
            .unwrap()
            .records
            .remove(0);
        t.trace.retrieval = None;
        let o = super::super::from_json(&c).unwrap();
        assert!(matches!(
            o.evaluate(&t.case, &t.trace, None).verdict,
            Verdict::Missing { .. }
        ));
    }

    #[test]
    fn context_support_reads_annotations_and_excludes_abstentions() {
        let s = json!({"type": "context_support"});
        let stale = record(
            GOLD,
            &[OLD],
            r#","answer":"Within 30 days.","citations":["refund-old"],"claims":[{"claim":"Refunds within 30 days","supported_by":["refund-old"]}]"#,
        );
        assert_eq!(
            eval(s.clone(), &stale).verdict,
            Verdict::Pass,
            "supported, if stale"
        );
        assert_eq!(
            eval(json!({"type": "stale_evidence"}), &stale).verdict,
            Verdict::Fail
        );
        let outside = record(
            GOLD,
            &[OLD],
            r#","answer":"Within 14 days.","claims":[{"claim":"Refunds within 14 days","supported_by":["refund-current"]}]"#,
        );
        let v = eval(s.clone(), &outside);
        assert_eq!(
            v.verdict,
            Verdict::Fail,
            "a supporter outside the context does not count"
        );
        assert_eq!(
            v.detail["claims"][0]["not_in_context"],
            json!(["refund-current"])
        );
        let abstained = record(
            r#"{"behavior":"abstain"}"#,
            &[OLD],
            r#","answer":"I don't know.","claims":[]"#,
        );
        assert_eq!(
            eval(s.clone(), &abstained).verdict,
            Verdict::Excluded {
                reason: "not_an_answer".into()
            }
        );
        let no_claims = record(GOLD, &[OLD], r#","answer":"Yes.","claims":[]"#);
        assert_eq!(
            eval(s.clone(), &no_claims).verdict,
            Verdict::Excluded {
                reason: "no_claims".into()
            }
        );
        let unannotated = record(GOLD, &[OLD], r#","answer":"Within 30 days.""#);
        match eval(s, &unannotated).verdict {
            Verdict::Missing { error } => assert!(error.contains("no `claims`"), "{error}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_passage_with_an_unknown_status_is_missing_not_current() {
        // A live system's passages are not checked when retrieved: a typo in `status` must
        // not make an archived passage count as current.
        let rec = record(
            GOLD,
            &[CURRENT],
            r#","answer":"Within 14 days.","citations":["refund-current"],"claims":[{"claim":"Refunds within 14 days","supported_by":["refund-current"]}]"#,
        );
        let mut r = parse_dataset("t.jsonl", &rec, None)
            .unwrap()
            .records
            .remove(0);
        let stale = json!({"status": "stale"}).as_object().cloned();
        r.trace.retrieval.as_mut().unwrap().candidates[0].metadata = stale.clone();
        if let Some(c) = r.trace.context.as_mut() {
            c.passages[0].passage.metadata = stale;
        }
        for ty in ["context_support", "task_acceptance"] {
            let o = super::super::from_json(&json!({ "type": ty })).unwrap();
            match o.evaluate(&r.case, &r.trace, None).verdict {
                Verdict::Missing { error } => assert_eq!(
                    error,
                    "passage `refund-current`: unknown status `stale`: expected one of current, archived",
                    "{ty}"
                ),
                other => panic!("{ty}: {other:?}"),
            }
        }
    }

    #[test]
    fn task_acceptance_is_the_contract() {
        let t = json!({"type": "task_acceptance"});
        let good = record(
            GOLD,
            &[CURRENT, OLD],
            r#","answer":"Refunds within 14 days.","citations":["refund-current"],"claims":[{"claim":"Refunds within 14 days","supported_by":["refund-current"]}]"#,
        );
        assert_eq!(eval(t.clone(), &good).verdict, Verdict::Pass);
        let stale = record(
            GOLD,
            &[CURRENT, OLD],
            r#","answer":"Refunds within 14 days (30 before).","citations":["refund-old"],"claims":[{"claim":"Refunds within 14 days","supported_by":["refund-old"]}]"#,
        );
        let v = eval(t.clone(), &stale);
        assert_eq!(v.verdict, Verdict::Fail);
        assert_eq!(
            v.detail["failed"],
            json!(["cites_archived", "stale_evidence"])
        );
        let uncited = record(GOLD, &[CURRENT], r#","answer":"Refunds within 14 days.""#);
        let v = eval(t.clone(), &uncited);
        assert_eq!(v.verdict, Verdict::Fail, "fails without needing claims");
        assert_eq!(v.detail["failed"], json!(["uncited"]));
        let unannotated_good = record(
            GOLD,
            &[CURRENT],
            r#","answer":"Refunds within 14 days.","citations":["refund-current"]"#,
        );
        assert!(
            matches!(
                eval(t.clone(), &unannotated_good).verdict,
                Verdict::Missing { .. }
            ),
            "a pass needs the claims' support"
        );
        let abstain_ok = record(
            r#"{"behavior":"abstain"}"#,
            &[OLD],
            r#","answer":"Our documents list no phone number.","behavior":"abstain""#,
        );
        assert_eq!(eval(t.clone(), &abstain_ok).verdict, Verdict::Pass);
        let invented = record(
            r#"{"behavior":"abstain"}"#,
            &[OLD],
            r#","answer":"Call 555-0199.""#,
        );
        assert_eq!(eval(t.clone(), &invented).verdict, Verdict::Fail);
        let no_reference = record("{}", &[CURRENT], r#","answer":"14 days.""#);
        assert_eq!(
            eval(t, &no_reference).verdict,
            Verdict::Excluded {
                reason: "no_expected_answer".into()
            }
        );
    }

    #[test]
    fn abstention_precision_and_recall_have_their_own_denominators() {
        let p = json!({"type": "abstention", "measure": "precision"});
        let r = json!({"type": "abstention", "measure": "recall"});
        let should = r#"{"behavior":"abstain"}"#;
        let refused = r#","answer":"I don't know.""#;
        let answered = r#","answer":"Call 555-0199.""#;
        let cases = [
            (
                record(should, &[OLD], refused),
                Verdict::Pass,
                Verdict::Pass,
            ),
            (
                record(should, &[OLD], answered),
                Verdict::Excluded {
                    reason: "did_not_abstain".into(),
                },
                Verdict::Fail,
            ),
            (
                record(GOLD, &[OLD], refused),
                Verdict::Fail,
                Verdict::Excluded {
                    reason: "abstention_not_expected".into(),
                },
            ),
        ];
        for (rec, precision, recall) in cases {
            assert_eq!(eval(p.clone(), &rec).verdict, precision, "{rec}");
            assert_eq!(eval(r.clone(), &rec).verdict, recall, "{rec}");
        }
        let custom = json!({"type": "abstention", "measure": "recall", "abstain_patterns": ["no phone number"]});
        let rec = record(should, &[OLD], r#","answer":"There is no phone number.""#);
        assert_eq!(eval(custom, &rec).verdict, Verdict::Pass);
    }

    /// A loopback judge: one claim ("refunds within 30 days"), supported when the context it
    /// is shown mentions 30 days.
    fn thirty_days_judge(
        r: &oloproof_judge::mock::RecordedRequest,
    ) -> oloproof_judge::mock::MockReply {
        let system = r.body["messages"][0]["content"].as_str().unwrap_or("");
        let user = r.body["messages"][1]["content"].as_str().unwrap_or("");
        if system.contains("atomic claims") {
            return oloproof_judge::mock::MockReply::json(
                json!({"claims": ["Refunds are possible within 30 days."]}),
            );
        }
        let context = user.split("Claims").next().unwrap_or(user);
        let verdict = u8::from(context.contains("30 days"));
        oloproof_judge::mock::MockReply::json(
            json!({"verdicts": [{"id": 1, "reason": "r", "verdict": verdict}]}),
        )
    }

    #[test]
    fn without_annotations_the_judge_decides_support_and_staleness() {
        let server = oloproof_judge::mock::MockServer::start();
        server.respond_with(thirty_days_judge);
        let settings = oloproof_judge::JudgeSettings::new(
            oloproof_judge::Provider::Openai,
            &server.base_url(),
            "m",
            None,
        );
        let mut judges = std::collections::BTreeMap::new();
        judges.insert("j".to_string(), serde_json::to_value(settings).unwrap());
        let registry = crate::judged::JudgeRegistry::from_options(&judges).unwrap();
        let cache = oloproof_judge::MemoryCache::new();
        let env = JudgeEnv {
            judges: &registry,
            cache: &cache,
        };
        let rec = record(
            GOLD,
            &[CURRENT, OLD],
            r#","answer":"Within 30 days.","citations":["refund-old"]"#,
        );
        let d = parse_dataset("t.jsonl", &rec, None).unwrap();
        let r = &d.records[0];
        let judged = |options: Value| {
            let o = super::super::from_json(&options).unwrap();
            o.evaluate(&r.case, &r.trace, Some(&env))
        };
        let support = judged(json!({"type": "context_support", "judge": "j"}));
        assert_eq!(support.verdict, Verdict::Pass, "{}", support.detail);
        assert_eq!(support.detail["source"], "judge");
        let stale = judged(json!({"type": "stale_evidence", "judge": "j"}));
        assert_eq!(stale.verdict, Verdict::Fail, "{}", stale.detail);
        assert_eq!(stale.detail["claims"][0]["by_current"], false);
        // Extraction, verification against the context, and against its current passage.
        assert!(server.request_count() >= 3);

        // A judge that fails makes the case missing, never a pass or a fail.
        let failing = oloproof_judge::mock::MockServer::start();
        failing.respond_with(|_| oloproof_judge::mock::MockReply::error(400, "bad request"));
        let mut judges = std::collections::BTreeMap::new();
        let settings = oloproof_judge::JudgeSettings::new(
            oloproof_judge::Provider::Openai,
            &failing.base_url(),
            "m",
            None,
        );
        judges.insert("j".to_string(), serde_json::to_value(settings).unwrap());
        let registry = crate::judged::JudgeRegistry::from_options(&judges).unwrap();
        let env = JudgeEnv {
            judges: &registry,
            cache: &cache,
        };
        let o = super::super::from_json(&json!({"type": "context_support", "judge": "j"})).unwrap();
        assert!(matches!(
            o.evaluate(&r.case, &r.trace, Some(&env)).verdict,
            Verdict::Missing { .. }
        ));
    }

    #[test]
    fn a_failed_stage_is_missing_for_every_rubrex_criterion() {
        let d = parse_dataset("t.jsonl", &record(GOLD, &[CURRENT], ""), None).unwrap();
        let mut rec = d.records[0].clone();
        rec.trace.error = Some(oloproof_core::trace::StageError {
            stage: "generate".into(),
            kind: oloproof_core::trace::ErrorKind::Crash,
            error_type: None,
            message: "worker exited".into(),
            traceback: None,
            stderr_tail: vec![],
        });
        for options in [
            json!({"type": "context_support"}),
            json!({"type": "task_acceptance"}),
            json!({"type": "stale_evidence"}),
            json!({"type": "abstention", "measure": "recall"}),
        ] {
            let o = super::super::from_json(&options).unwrap();
            assert!(matches!(
                o.evaluate(&rec.case, &rec.trace, None).verdict,
                Verdict::Missing { .. }
            ));
        }
    }
}
