//! Rendering of diagnoses: the `oloproof diagnose` report and `oloproof inspect` case lines.

use oloproof_core::diagnosis::{
    carried_recovered, confirmation, experiments, label, Confirmation, Diagnosis, InterventionKind,
};

fn describe(label_name: &str) -> &'static str {
    match label_name {
        label::RETRIEVAL_MISS => "recovered; no relevant evidence was retrieved",
        label::RANKED_OUT => "recovered; relevant evidence was retrieved but only below top-k",
        label::CONTEXT_ASSEMBLY_LOSS => "recovered; relevant evidence within top-k was left out of the context",
        label::CONTEXT_DISTRACTION => "recovered; relevant evidence was in the context among other passages",
        label::UNLOCATED => "recovered; no relevance labels locate the failing stage",
        label::GENERATION_FAILURE => "still failed with the gold context",
        label::UNSTABLE => "passed on the control re-execution: flaky, not diagnosed",
        label::NOT_DIAGNOSED => "a re-execution ended in an error; see the child runs",
        label::FILTERED_OUT => "recovered; a metadata filter removed every relevant document",
        label::FUSION_LOSS => "recovered; a lane had relevant evidence within top-k, the fused list did not",
        label::RERANKED_OUT => "recovered; relevant evidence within top-k before the rerank fell below it after",
        label::REWRITE_DRIFT => "recovered; the raw question retrieves relevant evidence within top-k, the rewrites do not",
        label::HOP_MISS => "recovered; no retrieval hop found a relevant document the answer needs",
        _ => "no gold-context diagnosis of this run labels the stages (run --intervention gold-context first)",
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The `oloproof diagnose` report, as the guide prints it.
pub fn diagnosis_report(d: &Diagnosis) -> String {
    let c = &d.content;
    let n = c.selected.len();
    let mut out = format!(
        "Selected: {} with gold context (observed; no population claim)\n",
        plural(n, "failed case", "failed cases")
    );
    if !c.not_diagnosable.is_empty() {
        out.push_str(&format!(
            "Not diagnosable: {} without gold context: {}\n",
            plural(c.not_diagnosable.len(), "failed case", "failed cases"),
            c.not_diagnosable.join(", ")
        ));
    }
    if n > 0 {
        out.push_str(&format!(
            "Control: {} of {n} passed when re-executed without the intervention\n",
            d.control_passed()
        ));
        out.push_str(&format!(
            "Recovered under {}: {} of {n}\n",
            c.intervention.describe(),
            d.recovered()
        ));
    }
    let replay = !matches!(c.intervention, InterventionKind::GoldContext);
    if let Some(conf) = confirmation(d) {
        out.push_str(&format!(
            "Confirmed under {}: {} of {} {} cases also recovered\n",
            c.intervention.describe(),
            conf.confirmed,
            conf.targeted,
            conf.label
        ));
        if !conf.not_confirmed.is_empty() {
            let cases: Vec<String> = conf
                .not_confirmed
                .iter()
                .map(|(id, why)| format!("{id} ({})", why.describe()))
                .collect();
            out.push_str(&format!(
                "Not confirmed: {} {}: {}\n",
                cases.len(),
                if cases.len() == 1 {
                    format!("{} case", conf.label)
                } else {
                    format!("{} cases", conf.label)
                },
                cases.join(", ")
            ));
        }
    }
    if let Some(from) = &c.labels_from {
        out.push_str(&format!(
            "Labels from gold context (diagnosis {from}): {} of {n} recovered\n",
            carried_recovered(d)
        ));
    }
    for (name, count) in d.label_counts() {
        out.push_str(&format!("{name}: {count} of {n}, {}\n", describe(name)));
    }
    if !replay {
        if let Some((factors, top, recovered)) = d.implicated() {
            out.push_str(&format!(
                "Implicated: {}, in {top} of the {} recovered failures.\n",
                factors.join(" and "),
                recovered
            ));
            for f in factors {
                for e in experiments(f) {
                    out.push_str(&format!(
                        "Candidate experiment: {e}. This is a hypothesis to test, not an established cause.\n"
                    ));
                }
            }
        }
    } else if n > 0 {
        let s = &d.stages;
        let mut line = String::from("Stages:");
        if !s.rewrite.is_zero() {
            line.push_str(&format!(
                " rewrite {} hit/{} miss;",
                s.rewrite.hit, s.rewrite.miss
            ));
        }
        line.push_str(&format!(
            " retrieve {} hit/{} miss;",
            s.retrieve.hit, s.retrieve.miss
        ));
        if !s.rerank.is_zero() {
            line.push_str(&format!(
                " rerank {} hit/{} miss;",
                s.rerank.hit, s.rerank.miss
            ));
        }
        line.push_str(&format!(
            " generate {} hit/{} miss\n",
            s.generate.hit, s.generate.miss
        ));
        out.push_str(&line);
    }
    out.push_str(&format!("Diagnosis {}\n", d.id));
    if !d.child_runs.is_empty() {
        let runs: Vec<String> = d
            .child_runs
            .iter()
            .map(|r| format!("{} {}", r.role, r.run_id))
            .collect();
        out.push_str(&format!("Child runs: {}\n", runs.join(", ")));
    }
    out.push_str(&format!("Cases: oloproof inspect {}\n", d.id));
    out
}

/// `oloproof inspect DIAGNOSIS`: one line per case.
pub fn diagnosis_cases(d: &Diagnosis) -> String {
    let mut rows: Vec<&oloproof_core::diagnosis::CaseDiagnosis> = d.content.cases.iter().collect();
    rows.sort_by(|a, b| a.case_id.cmp(&b.case_id));
    let mut out = String::new();
    for c in rows {
        let position = c
            .best_relevant_position
            .map(|p| p.to_string())
            .unwrap_or_else(|| "none".into());
        let outcome = match (&d.content.intervention, c.recovered) {
            (InterventionKind::GoldContext, _) => String::new(),
            (other, Some(true)) => format!(", recovered under {}", other.describe()),
            (other, Some(false)) => format!(", not recovered under {}", other.describe()),
            (_, None) => ", error under the intervention".to_string(),
        };
        let implicated = if c.implicated.is_empty() {
            String::new()
        } else {
            format!(" ({})", c.implicated.join("; "))
        };
        let confirms = if d.content.labels_from.is_some() && d.content.intervention.targets(c) {
            match Confirmation::of(c) {
                Confirmation::Confirmed => format!(", confirms {}", c.label),
                other => format!(", does not confirm {} ({})", c.label, other.describe()),
            }
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{}: {}{implicated}, {}, strength {}, best relevant position {position}{outcome}{confirms}\n",
            c.case_id, c.label, c.reason, c.strength
        ));
    }
    for id in &d.content.not_diagnosable {
        out.push_str(&format!("{id}: not diagnosable, no gold context\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use oloproof_core::diagnosis::{CaseDiagnosis, DiagnosisContent};
    use oloproof_core::summary::{CacheCounts, HitMiss};

    fn case(id: &str, recovered: bool, control: bool, lane: &str) -> CaseDiagnosis {
        CaseDiagnosis {
            case_id: id.into(),
            label: label::FUSION_LOSS.into(),
            reason: "relevant_lost_in_fusion".into(),
            strength: "intervention_recovery".into(),
            best_relevant_position: None,
            recovered: Some(recovered),
            control_passed: Some(control),
            implicated: vec![lane.into()],
        }
    }

    #[test]
    fn a_lane_replay_lists_what_it_does_not_confirm_and_the_stages_it_used() {
        let d = Diagnosis {
            id: "sha256:d".into(),
            content: DiagnosisContent {
                run_id: "run_x".into(),
                criterion: "answer_correct".into(),
                intervention: InterventionKind::Lane {
                    lane: "bm25".into(),
                },
                selected: vec!["a".into(), "b".into(), "c".into(), "d".into()],
                not_diagnosable: vec![],
                cases: vec![
                    case("a", true, false, "bm25"),
                    case("b", false, false, "bm25"),
                    case("c", true, true, "bm25"),
                    // Another lane's loss: not this replay's target.
                    case("d", false, false, "dense"),
                ],
                labels_from: Some("sha256:g".into()),
            },
            child_runs: vec![],
            stages: CacheCounts {
                rerank: HitMiss { hit: 1, miss: 3 },
                ..CacheCounts::default()
            },
        };
        let text = diagnosis_report(&d);
        assert!(
            text.contains("Confirmed under lane=bm25: 1 of 3 FUSION_LOSS cases also recovered\n"),
            "{text}"
        );
        assert!(text.contains(
            "Not confirmed: 2 FUSION_LOSS cases: b (not recovered), c (passed on the replay control)\n"
        ));
        assert!(text.contains(
            "Stages: retrieve 0 hit/0 miss; rerank 1 hit/3 miss; generate 0 hit/0 miss\n"
        ));
        let cases = diagnosis_cases(&d);
        assert!(cases.contains(
            "a: FUSION_LOSS (bm25), relevant_lost_in_fusion, strength intervention_recovery, \
             best relevant position none, recovered under lane=bm25, confirms FUSION_LOSS\n"
        ));
        assert!(cases.contains("does not confirm FUSION_LOSS (passed on the replay control)"));
        assert!(cases.contains(
            "d: FUSION_LOSS (dense), relevant_lost_in_fusion, strength intervention_recovery, \
             best relevant position none, not recovered under lane=bm25\n"
        ));
    }
}
