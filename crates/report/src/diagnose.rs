//! Rendering of diagnoses: the `oloproof diagnose` report and `oloproof inspect` case lines.

use oloproof_core::diagnosis::{
    carried_recovered, confirmation, experiments, label, Diagnosis, InterventionKind,
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
    if let Some((target, recovered, total)) = confirmation(d) {
        out.push_str(&format!(
            "Confirmed under {}: {recovered} of {total} {target} cases also recovered\n",
            c.intervention.describe()
        ));
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
        out.push_str(&format!(
            "Stages: retrieve {} hit/{} miss; generate {} hit/{} miss\n",
            s.retrieve.hit, s.retrieve.miss, s.generate.hit, s.generate.miss
        ));
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
        out.push_str(&format!(
            "{}: {}, {}, strength {}, best relevant position {position}{outcome}\n",
            c.case_id, c.label, c.reason, c.strength
        ));
    }
    for id in &d.content.not_diagnosable {
        out.push_str(&format!("{id}: not diagnosable, no gold context\n"));
    }
    out
}
