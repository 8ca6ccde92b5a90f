//! External scores beside ours: a recorded dataset's score columns (Ragas' metrics, kept per
//! case in `metadata.external_scores`, see [`oloproof_core::external`]) compared with the
//! criterion of the matching evaluator type.
//!
//! A column maps to the run's criterion whose evaluator computes the same Ragas metric
//! ([`oloproof_core::external::computes`]: the type, under its canonical name
//! ([`crate::evaluators::canonical_type`]), and the options that change the metric:
//! `context_precision`'s `with_reference`, a column's `(mode=…)`): the criterion named like
//! the column if several, else the first in evaluator order. Our value of a case is its score, or 1 / 0 for pass /
//! fail; a missing or excluded verdict has none. Agreement is computed on the cases where
//! both sides have a value: Spearman's ρ (`oloproof_metrics::agreement::spearman`, ties
//! averaged) and the mean absolute difference; the cases where exactly one side has a value
//! are counted, never dropped silently.

use oloproof_core::config::EvaluatorEntry;
use oloproof_core::external::{computes, METADATA_KEY};
use oloproof_core::summary::ExternalScoreSummary;
use oloproof_core::verdict::Verdict;
use serde_json::Value;

use crate::summary::CaseOutcome;

/// The summary of every external score column of `outcomes`, in order of first appearance;
/// `criteria` are the run's criteria and their evaluators' identities, in evaluator order.
pub fn external_scores(
    criteria: &[(String, EvaluatorEntry)],
    outcomes: &[CaseOutcome<'_>],
) -> Vec<ExternalScoreSummary> {
    let mut columns: Vec<String> = Vec::new();
    for o in outcomes {
        if let Some(Value::Object(m)) = o.case.metadata.get(METADATA_KEY) {
            for k in m.keys() {
                if !columns.contains(k) {
                    columns.push(k.clone());
                }
            }
        }
    }
    columns
        .into_iter()
        .map(|column| summarize_column(&column, criteria, outcomes))
        .collect()
}

fn summarize_column(
    column: &str,
    criteria: &[(String, EvaluatorEntry)],
    outcomes: &[CaseOutcome<'_>],
) -> ExternalScoreSummary {
    let matching: Vec<&String> = criteria
        .iter()
        .filter(|(_, e)| {
            computes(
                column,
                crate::evaluators::canonical_type(&e.type_name),
                &e.options,
            )
        })
        .map(|(c, _)| c)
        .collect();
    let criterion = matching
        .iter()
        .find(|c| c.as_str() == column)
        .or(matching.first())
        .map(|c| (*c).clone());
    let mut out = ExternalScoreSummary {
        column: column.to_string(),
        criterion: criterion.clone(),
        cases: 0,
        defined: 0,
        mean: None,
        pairs: 0,
        spearman: None,
        mean_abs_diff: None,
        ours_only: 0,
        theirs_only: 0,
    };
    let mut theirs_sum = 0.0;
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for o in outcomes {
        let Some(Value::Object(m)) = o.case.metadata.get(METADATA_KEY) else {
            continue;
        };
        let Some(v) = m.get(column) else {
            continue;
        };
        out.cases += 1;
        let theirs = v.as_f64().filter(|x| x.is_finite());
        if let Some(t) = theirs {
            out.defined += 1;
            theirs_sum += t;
        }
        let ours = criterion.as_ref().and_then(|c| {
            o.verdicts
                .iter()
                .find(|v| &v.criterion == c)
                .and_then(|v| match v.verdict {
                    Verdict::Score { value } => Some(value),
                    Verdict::Pass => Some(1.0),
                    Verdict::Fail => Some(0.0),
                    Verdict::Missing { .. } | Verdict::Excluded { .. } => None,
                })
        });
        match (ours, theirs) {
            (Some(a), Some(b)) => {
                xs.push(a);
                ys.push(b);
            }
            (Some(_), None) => out.ours_only += 1,
            (None, Some(_)) if criterion.is_some() => out.theirs_only += 1,
            _ => {}
        }
    }
    if out.defined > 0 {
        out.mean = Some(theirs_sum / out.defined as f64);
    }
    out.pairs = xs.len() as u64;
    if !xs.is_empty() {
        let diff: f64 = xs.iter().zip(&ys).map(|(a, b)| (a - b).abs()).sum();
        out.mean_abs_diff = Some(diff / xs.len() as f64);
        // Both sides are finite by construction, so this cannot fail; a failure is no value.
        out.spearman = match oloproof_metrics::agreement::spearman(&xs, &ys) {
            Ok(s) => s.map(|s| s.rho),
            Err(_) => None,
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use oloproof_core::case::Case;
    use oloproof_core::trace::Trace;
    use oloproof_core::verdict::CriterionVerdict;
    use serde_json::json;

    #[test]
    fn columns_are_compared_with_the_matching_criterion() {
        let data = [
            (
                json!({"faithfulness": 0.9, "my_score": 1}),
                Verdict::Score { value: 0.8 },
            ),
            (json!({"faithfulness": 0.5}), Verdict::Score { value: 0.4 }),
            (json!({"faithfulness": 0.1}), Verdict::Score { value: 0.2 }),
            (json!({"faithfulness": null}), Verdict::Score { value: 0.3 }),
            (
                json!({"faithfulness": 0.7}),
                Verdict::Excluded {
                    reason: "no_context".into(),
                },
            ),
        ];
        let cases: Vec<Case> = data
            .iter()
            .enumerate()
            .map(|(i, (m, _))| {
                let mut c: Case =
                    serde_json::from_value(json!({"id": format!("c{i}"), "input": {}})).unwrap();
                c.metadata.insert(METADATA_KEY.into(), m.clone());
                c
            })
            .collect();
        let traces: Vec<Trace> = cases.iter().map(|c| Trace::new(&c.id)).collect();
        let verdicts: Vec<Vec<CriterionVerdict>> = data
            .iter()
            .map(|(_, v)| {
                vec![CriterionVerdict {
                    criterion: "faith".into(),
                    verdict: v.clone(),
                    detail: Value::Null,
                }]
            })
            .collect();
        let outcomes: Vec<CaseOutcome<'_>> = cases
            .iter()
            .zip(&traces)
            .zip(&verdicts)
            .map(|((case, trace), verdicts)| CaseOutcome {
                case,
                trace,
                verdicts,
            })
            .collect();
        let entry = |ty: &str, options: Value| {
            EvaluatorEntry::new(ty, options.as_object().cloned().unwrap_or_default())
        };
        let s = external_scores(
            &[("faith".into(), entry("faithfulness", json!({})))],
            &outcomes,
        );
        assert_eq!(s.len(), 2);
        let f = &s[0];
        assert_eq!(
            (f.column.as_str(), f.criterion.as_deref()),
            ("faithfulness", Some("faith"))
        );
        assert_eq!(
            (f.cases, f.defined, f.pairs, f.ours_only, f.theirs_only),
            (5, 4, 3, 1, 1)
        );
        assert_eq!(f.spearman, Some(1.0));
        assert!((f.mean_abs_diff.unwrap() - 0.1).abs() < 1e-12);
        assert!((f.mean.unwrap() - 2.2 / 4.0).abs() < 1e-12);
        assert_eq!(
            (s[1].criterion.as_deref(), s[1].cases, s[1].theirs_only),
            (None, 1, 0)
        );
    }

    #[test]
    fn columns_pair_by_metric_options_and_aliases() {
        let entry = |ty: &str, options: Value| {
            EvaluatorEntry::new(ty, options.as_object().cloned().unwrap_or_default())
        };
        let case: Case = serde_json::from_value(json!({"id": "c", "input": {}, "metadata": {
            METADATA_KEY: {"context_utilization": 0.5, "context_precision": 0.5, "string_present": 1.0}
        }}))
        .unwrap();
        let trace = Trace::new("c");
        let verdicts = vec![
            CriterionVerdict {
                criterion: "cp".into(),
                verdict: Verdict::Score { value: 0.5 },
                detail: Value::Null,
            },
            CriterionVerdict {
                criterion: "sp".into(),
                verdict: Verdict::Pass,
                detail: Value::Null,
            },
        ];
        let outcomes = [CaseOutcome {
            case: &case,
            trace: &trace,
            verdicts: &verdicts,
        }];
        // A with-reference criterion (the default) and `string_presence`, the alias.
        let criteria = [
            ("cp".to_string(), entry("context_precision", json!({}))),
            ("sp".to_string(), entry("string_presence", json!({}))),
        ];
        let s = external_scores(&criteria, &outcomes);
        let by = |c: &str| s.iter().find(|e| e.column == c).unwrap().criterion.clone();
        assert_eq!(by("context_precision").as_deref(), Some("cp"));
        assert_eq!(by("context_utilization"), None);
        assert_eq!(by("string_present").as_deref(), Some("sp"));
        let criteria = [(
            "cp".to_string(),
            entry("context_precision", json!({"with_reference": false})),
        )];
        let s = external_scores(&criteria, &outcomes);
        let by = |c: &str| s.iter().find(|e| e.column == c).unwrap().criterion.clone();
        assert_eq!(by("context_precision"), None);
        assert_eq!(by("context_utilization").as_deref(), Some("cp"));
    }
}
