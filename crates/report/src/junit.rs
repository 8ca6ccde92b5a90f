//! JUnit XML (`oloproof report ID --format junit -o results.xml`) for CI test tabs: one
//! `<testcase>` per case and criterion; `fail` is a `<failure>`, `missing` an `<error>`,
//! `excluded` `<skipped>`. A comparison adds one testcase per decision (not PASS is a failure).
//!
//! ```
//! use oloproof_report::junit::xml_escape;
//! assert_eq!(xml_escape("a<b & 'c'"), "a&lt;b &amp; &apos;c&apos;");
//! ```

use oloproof_core::comparison::{Comparison, DecisionVerdict};
use oloproof_core::run::LoadedRun;
use oloproof_core::verdict::Verdict;

/// Escapes text for XML content and attributes; drops characters XML 1.0 forbids.
pub fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
    out
}

struct Suite {
    name: String,
    cases: Vec<String>,
    failures: usize,
    errors: usize,
    skipped: usize,
}

impl Suite {
    fn render(&self) -> String {
        let mut out = format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n",
            xml_escape(&self.name),
            self.cases.len(),
            self.failures,
            self.errors,
            self.skipped
        );
        for c in &self.cases {
            out.push_str(c);
        }
        out.push_str("  </testsuite>\n");
        out
    }
}

fn run_suite(run: &LoadedRun) -> Suite {
    let mut suite = Suite {
        name: format!(
            "{} {} {}",
            run.settings.system.name, run.settings.system.version, run.record.id
        ),
        cases: Vec::new(),
        failures: 0,
        errors: 0,
        skipped: 0,
    };
    for (case, _, verdicts) in &run.cases {
        for (criterion, _) in &run.criteria {
            let head = format!(
                "    <testcase classname=\"{}\" name=\"{}\"",
                xml_escape(&case.id),
                xml_escape(criterion)
            );
            let verdict = verdicts.iter().find(|v| &v.criterion == criterion);
            let inner = match verdict.map(|v| &v.verdict) {
                Some(Verdict::Pass) | Some(Verdict::Score { .. }) => None,
                Some(Verdict::Fail) => {
                    suite.failures += 1;
                    Some(format!(
                        "<failure message=\"fail\" type=\"fail\">{}</failure>",
                        xml_escape(
                            &verdict
                                .map(|v| v.detail.to_string())
                                .filter(|d| d != "null" && d != "{}")
                                .unwrap_or_default()
                        )
                    ))
                }
                Some(Verdict::Missing { error }) => {
                    suite.errors += 1;
                    Some(format!(
                        "<error message=\"{}\" type=\"missing\"/>",
                        xml_escape(error)
                    ))
                }
                Some(Verdict::Excluded { reason }) => {
                    suite.skipped += 1;
                    Some(format!("<skipped message=\"{}\"/>", xml_escape(reason)))
                }
                None => {
                    suite.skipped += 1;
                    Some("<skipped message=\"pending\"/>".to_string())
                }
            };
            let score = match verdict.map(|v| &v.verdict) {
                Some(Verdict::Score { value }) => {
                    format!("<system-out>score {value:.4}</system-out>")
                }
                _ => String::new(),
            };
            suite.cases.push(match (inner, score.is_empty()) {
                (None, true) => format!("{head}/>\n"),
                (None, false) => format!("{head}>{score}</testcase>\n"),
                (Some(inner), _) => format!("{head}>{inner}{score}</testcase>\n"),
            });
        }
    }
    suite
}

fn document(suites: &[Suite]) -> String {
    let tests: usize = suites.iter().map(|s| s.cases.len()).sum();
    let failures: usize = suites.iter().map(|s| s.failures).sum();
    let errors: usize = suites.iter().map(|s| s.errors).sum();
    let skipped: usize = suites.iter().map(|s| s.skipped).sum();
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"oloproof\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\">\n"
    );
    for s in suites {
        out.push_str(&s.render());
    }
    out.push_str("</testsuites>\n");
    out
}

/// JUnit of a run: one testcase per case and criterion.
pub fn run_junit(run: &LoadedRun) -> String {
    document(&[run_suite(run)])
}

/// JUnit of a comparison: one testcase per decision, then the candidate run's cases.
pub fn comparison_junit(c: &Comparison, candidate: &LoadedRun) -> String {
    let mut decisions = Suite {
        name: format!("decisions {}", c.id),
        cases: Vec::new(),
        failures: 0,
        errors: 0,
        skipped: 0,
    };
    for d in &c.decisions {
        let head = format!(
            "    <testcase classname=\"decisions\" name=\"{}\"",
            xml_escape(&d.name)
        );
        decisions.cases.push(match d.verdict {
            DecisionVerdict::Pass => format!("{head}/>\n"),
            other => {
                decisions.failures += 1;
                format!(
                    "{head}><failure message=\"{}\" type=\"{}\">{}</failure></testcase>\n",
                    xml_escape(&d.reason),
                    other.as_str(),
                    xml_escape(&d.detail.join("; "))
                )
            }
        });
    }
    document(&[decisions, run_suite(candidate)])
}
