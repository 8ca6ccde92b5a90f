//! Reviewed production traces promoted to golden cases (`oloproof promote`; seed 000 Part 10:
//! what production teaches goes back into the test set).
//!
//! The rows are the review queue of `monitor --review-queue` once a person filled each
//! `label` (the `calibrate --labels` format, with `trace_id`, `window` and `segment`). A row
//! becomes a case when it says what the right answer is:
//!
//! - labelled a pass (`label ≥ pass_at`): production's answer was right, so it is the
//!   reference (unless the reviewer wrote a better one in `reference`), and the passages it
//!   was answered from are the case's `gold_context` (what `diagnose` substitutes);
//! - labelled a fail: the reviewer's `reference` is the reference; without one the row cannot
//!   say what a right answer is, and it is left out (`failed_without_reference`).
//!
//! The case keeps the trace's whole input and metadata (tenant, locale, …) when the traffic
//! holds the trace, else the question alone (`input_from_question`), and records where it came
//! from under `metadata.promoted` (trace id, window, segment, label). A row whose id is
//! already a case is left out (`already_a_case`), so promoting a queue twice adds nothing.

use std::collections::{BTreeMap, HashMap, HashSet};

use oloproof_core::case::{Case, Expected, GoldPassage};
use oloproof_core::dataset::{Dataset, Record};
use oloproof_core::passage::Passage;
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::calibrate::LabelledItem;
use crate::EngineError;

/// One reviewed row: the labelled item and where it came from in production.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewedRow {
    /// The item as `calibrate --labels` reads it (label filled).
    pub item: LabelledItem,
    /// `trace_id` of the row, when written.
    pub trace_id: Option<String>,
    /// `window` of the row, when written.
    pub window: Option<String>,
    /// `segment` of the row, when written.
    pub segment: Option<String>,
}

/// What [`promote`] made of the rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Promotion {
    /// The new cases, in the rows' order.
    pub cases: Vec<Case>,
    /// Counts and the rows left out.
    pub summary: PromotionSummary,
}

/// Counts of a promotion.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PromotionSummary {
    /// Rows read.
    pub rows: u64,
    /// Cases made.
    pub promoted: u64,
    /// Of which: a pass whose production answer became the reference.
    pub kept_answer: u64,
    /// Of which: the reviewer's `reference` became the reference.
    pub corrected: u64,
    /// Of which: the input is the question alone (the trace is not in the traffic).
    pub input_from_question: u64,
    /// Rows left out, by reason: `failed_without_reference`, `already_a_case`, `no_answer`.
    pub skipped: BTreeMap<String, u64>,
    /// The first rows left out: `(line, id, reason)`.
    pub skipped_rows: Vec<(usize, String, String)>,
}

/// Rows left out that are listed by line (all are counted).
const SKIPPED_LISTED: usize = 10;

/// Reads a reviewed queue: each row as `calibrate --labels` reads it (a row without a filled
/// `label` is an error at its `file:line`), with its `trace_id`, `window` and `segment`.
///
/// # Errors
///
/// [`EngineError::Usage`] naming `file:line` and the field.
pub fn read_reviewed(path: &std::path::Path) -> Result<Vec<ReviewedRow>, EngineError> {
    let items = crate::calibrate::read_labels(path)?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| EngineError::Usage(format!("cannot read {}: {e}", path.display())))?;
    let lines: Vec<&str> = text.lines().collect();
    Ok(items
        .into_iter()
        .map(|item| {
            // `read_labels` parsed every row as a JSON object already.
            let extra: Map<String, Value> = lines
                .get(item.line - 1)
                .and_then(|l| serde_json::from_str(l).ok())
                .unwrap_or_default();
            let text_of = |k: &str| extra.get(k).and_then(Value::as_str).map(str::to_string);
            ReviewedRow {
                trace_id: text_of("trace_id"),
                window: text_of("window"),
                segment: text_of("segment"),
                item,
            }
        })
        .collect())
}

/// Promotes `rows` to cases: a row labelled at least `pass_at` is a pass. `traffic` supplies
/// each trace's input, metadata and context; `existing` holds the ids already cases.
pub fn promote(
    rows: &[ReviewedRow],
    traffic: Option<&Dataset>,
    existing: &HashSet<String>,
    pass_at: f64,
) -> Promotion {
    let by_id: HashMap<&str, &Record> = traffic
        .map(|t| t.records.iter().map(|r| (r.case.id.as_str(), r)).collect())
        .unwrap_or_default();
    let mut summary = PromotionSummary {
        rows: rows.len() as u64,
        ..PromotionSummary::default()
    };
    let mut seen: HashSet<&str> = HashSet::new();
    let mut cases = Vec::new();
    for row in rows {
        let item = &row.item;
        let mut skip = |reason: &str| {
            *summary.skipped.entry(reason.to_string()).or_default() += 1;
            if summary.skipped_rows.len() < SKIPPED_LISTED {
                summary
                    .skipped_rows
                    .push((item.line, item.id.clone(), reason.to_string()));
            }
        };
        if existing.contains(&item.id) || !seen.insert(item.id.as_str()) {
            skip("already_a_case");
            continue;
        }
        let pass = item.label >= pass_at;
        let reference = item
            .reference
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty());
        let (answer, corrected) = match (pass, reference) {
            (_, Some(r)) => (r.to_string(), true),
            (true, None) if !item.answer.trim().is_empty() => (item.answer.clone(), false),
            (true, None) => {
                skip("no_answer");
                continue;
            }
            (false, None) => {
                skip("failed_without_reference");
                continue;
            }
        };
        let record = by_id.get(item.id.as_str()).copied();
        let input = match record {
            Some(r) => r.case.input.clone(),
            None => {
                summary.input_from_question += 1;
                let mut m = Map::new();
                m.insert("question".into(), Value::String(item.question.clone()));
                m
            }
        };
        let mut metadata = record.map(|r| r.case.metadata.clone()).unwrap_or_default();
        metadata.insert(
            "promoted".into(),
            json!({
                "from": "review",
                "trace_id": row.trace_id,
                "window": row.window,
                "segment": row.segment,
                "label": item.label,
                "reference": if corrected { "reviewer" } else { "production_answer" },
            }),
        );
        // The passages a right answer was given from — those the reviewer saw (the context,
        // else the retrieved candidates, as the review row lists them): the gold context of
        // a pass.
        let gold_context = if pass {
            record.and_then(|r| {
                let trace = &r.trace;
                let shown: Vec<&Passage> = match &trace.context {
                    Some(c) => c.passages.iter().map(|p| &p.passage).collect(),
                    None => trace
                        .retrieval
                        .iter()
                        .flat_map(|r| r.candidates.iter())
                        .collect(),
                };
                let passages: Vec<GoldPassage> = shown
                    .into_iter()
                    .filter_map(|p| {
                        p.text.as_ref().map(|text| GoldPassage {
                            doc_id: p.doc_id.clone(),
                            chunk_id: p.chunk_id.clone(),
                            text: text.clone(),
                            metadata: None,
                        })
                    })
                    .collect();
                (!passages.is_empty()).then_some(passages)
            })
        } else {
            None
        };
        summary.promoted += 1;
        if corrected {
            summary.corrected += 1;
        } else {
            summary.kept_answer += 1;
        }
        cases.push(Case {
            id: item.id.clone(),
            input,
            expected: Expected {
                answer: Some(Value::String(answer)),
                gold_context,
                ..Expected::default()
            },
            metadata,
        });
    }
    Promotion { cases, summary }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, label: f64, answer: &str, reference: Option<&str>) -> ReviewedRow {
        ReviewedRow {
            item: LabelledItem {
                line: 1,
                id: id.into(),
                question: format!("question of {id}"),
                answer: answer.into(),
                contexts: Vec::new(),
                reference: reference.map(str::to_string),
                answer_b: None,
                output: Map::new(),
                label,
            },
            trace_id: Some(format!("t-{id}")),
            window: Some("2026-11-30T00:00:00Z".into()),
            segment: Some("intent=refund".into()),
        }
    }

    #[test]
    fn passes_keep_the_answer_fails_need_the_reviewers_reference() {
        let rows = [
            row("a", 1.0, "14 days", None),
            row("b", 0.0, "3 days", Some("14 days")),
            row("c", 0.0, "3 days", None),
            row("d", 1.0, "  ", None),
            row("e", 0.9, "7 days", Some(" ")),
            row("a", 1.0, "14 days", None),
            row("old", 1.0, "yes", None),
        ];
        let existing: HashSet<String> = ["old".to_string()].into();
        let p = promote(&rows, None, &existing, 0.5);
        let ids: Vec<&str> = p.cases.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "e"]);
        assert_eq!(p.cases[0].expected.answer, Some(json!("14 days")));
        assert_eq!(p.cases[1].expected.answer, Some(json!("14 days")));
        assert_eq!(p.cases[2].expected.answer, Some(json!("7 days")));
        assert_eq!(p.cases[0].input["question"], json!("question of a"));
        assert_eq!(p.cases[1].metadata["promoted"]["reference"], "reviewer");
        assert_eq!(p.cases[0].metadata["promoted"]["trace_id"], "t-a");
        let s = &p.summary;
        assert_eq!(
            (s.rows, s.promoted, s.kept_answer, s.corrected),
            (7, 3, 2, 1)
        );
        assert_eq!(s.input_from_question, 3);
        assert_eq!(s.skipped["failed_without_reference"], 1);
        assert_eq!(s.skipped["no_answer"], 1);
        assert_eq!(s.skipped["already_a_case"], 2);
    }
}
