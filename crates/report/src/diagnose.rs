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
