//! `oloproof monitor` with `monitor.shadow`, through the real binary: the project's `system:`
//! (a real Python system through the shim) answers the questions of the latest window, both
//! sides are judged by the same evaluators, and the comparison's gate joins the exit code —
//! a candidate that grounds its answers passes where production did not (exit 0), one that
//! invents them is blocked (exit 3), candidate errors above the allowed rate make the
//! evaluation incomplete (exit 4); the selection leaves out production's error traces and
//! traces without a question, draws the same traces on every invocation, and the comparison
//! is recorded in the store. Bad `shadow:` values are located errors (exit 2).

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::*;
use serde_json::{json, Value};

/// The candidate systems: `Candidate` answers from the passage it retrieves; `Inventive`
/// answers with an order number and date found nowhere; `Fragile` raises on odd orders.
const APP: &str = r#"
import re

from oloproof import Passage, Retrieval, rag_system


def order(question):
    m = re.search(r"order (\d+)", question)
    return int(m.group(1)) if m else 0


@rag_system(name="candidate", version="2", depth=1, top_k=1)
class Candidate:
    def retrieve(self, input, depth):
        n = order(input["question"])
        passage = Passage(doc_id="d1", score=1.0, text="Order %d shipped on 3 March." % n)
        return Retrieval(query=input["question"], depth=depth, candidates=(passage,))

    def generate(self, input, context):
        return {"answer": context[0].text, "citations": ["d1"]}


@rag_system(name="inventive", version="2", depth=1, top_k=1)
class Inventive(Candidate):
    def generate(self, input, context):
        n = order(input["question"])
        return {"answer": "Order %d shipped on 9 June via Fedex." % (n + 50), "citations": []}


@rag_system(name="fragile", version="2", depth=1, top_k=1)
class Fragile(Candidate):
    def generate(self, input, context):
        if order(input["question"]) % 2:
            raise RuntimeError("the candidate's generator failed")
        return Candidate.generate(self, input, context)
"#;

const POLICY: &str = "decisions:
  - {name: grounded-not-worse, criterion: entity_grounding, kind: non_inferiority, margin_points: 5}
";

fn config(candidate: &str, shadow: &str) -> String {
    format!(
        "system:
  rag: {{object: app:{candidate}, workers: 2}}
max_error_rate: 0.1
evaluators:
  - {{type: regex, criterion: no_refusal, must_not_match: '(?i)cannot help'}}
  - {{type: entity_grounding}}
monitor:
  traffic: traffic.jsonl
  window: {{size: 1d, rolling: 2d}}
  sampling:
    target_judgments: 10
    seed: 3
    tiers:
      - {{evaluators: [no_refusal], rate: 1.0}}
      - {{evaluators: [entity_grounding], rate: auto}}
{shadow}"
    )
}

const SHADOW: &str = "  shadow: {policy: shadow.yaml, max_cases: 25}\n";

/// Two days of 40 traces: the first grounded, the second with every other answer naming an
/// order and date the context does not hold; on the second day every 10th trace is a production error
/// and two did not record their question.
fn traffic() -> String {
    let mut out = String::new();
    for d in 0..2 {
        for k in 0..40 {
            let n = 10 + k;
            let answer = if d == 1 && k % 2 == 1 {
                format!("Order {} shipped on {} June via Fedex.", n + 50, k % 27 + 1)
            } else {
                format!("Order {n} shipped on 3 March.")
            };
            let mut production = json!({
                "trace_id": format!("{:032x}", (d * 1000 + k + 1) as u128 * 7919),
                "timestamp": format!("2026-11-{:02}T{:02}:00:00Z", 29 + d, k % 24),
                "source": "otlp",
            });
            let mut input = json!({"question": format!("When did order {n} ship?")});
            if d == 1 && k % 10 == 0 {
                production["error"] = json!({"stage": "generate", "message": "upstream timeout"});
            }
            if d == 1 && (k == 7 || k == 13) {
                production["not_recorded"] = json!(["input"]);
                input = json!({});
            }
            let record = json!({
                "id": format!("t-{d}-{k}"),
                "input": input,
                "metadata": {"intent": "orders"},
                "retrieval": {"candidates": [{"doc_id": "d1", "text": format!("Order {n} shipped on 3 March.")}]},
                "answer": answer,
                "latency_ms": {"total": 400},
                "production": production,
            });
            out.push_str(&record.to_string());
            out.push('\n');
        }
    }
    out
}

fn project(config_text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("project");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("oloproof.yaml"), config_text).unwrap();
    std::fs::write(dir.join("app.py"), APP).unwrap();
    std::fs::write(dir.join("shadow.yaml"), POLICY).unwrap();
    std::fs::write(dir.join("traffic.jsonl"), traffic()).unwrap();
    (tmp, dir)
}

fn json_of(dir: &Path, extra: &[&str]) -> (Option<i32>, Value, String) {
    let mut args = vec!["monitor", ".", "--json"];
    args.extend_from_slice(extra);
    let o = oloproof(dir, &args);
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&o), stderr(&o)));
    (o.status.code(), v, stderr(&o))
}

/// The case ids of a stored run, through `oloproof export RUN --format trace`.
fn case_ids(dir: &Path, run: &str) -> BTreeSet<String> {
    let o = oloproof(dir, &["export", run, "--format", "trace"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    stdout(&o)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["id"].as_str().unwrap().to_string()
        })
        .collect()
}

#[test]
fn a_grounded_candidate_passes_where_production_invents() {
    let (_tmp, dir) = project(&config("Candidate", SHADOW));
    let (code, v, err) = json_of(&dir, &[]);
    let s = &v["shadow"];
    // 40 traces in the latest window: 4 production errors and 2 without a question left out.
    assert_eq!(s["windows"], json!(["2026-11-30T00:00:00Z"]), "{s}");
    assert_eq!(s["traces"], 40);
    assert_eq!(s["left_out"], json!({"error": 4, "no_input": 2}));
    assert_eq!(s["eligible"], 34);
    assert_eq!(s["selected"], 25);
    assert_eq!(s["criteria"], json!(["no_refusal", "entity_grounding"]));
    assert_eq!(s["candidate_system"], "candidate 2");
    assert_eq!(s["candidate_errors"], 0);
    let c = &s["comparison"];
    assert_eq!(c["candidate"], s["candidate_run"]);
    assert_eq!(c["baseline"], s["production_run"]);
    assert_eq!(c["cases"]["shared"], 25, "{}", c["cases"]);
    assert_eq!(c["gate"], "PASS", "{err}");
    let grounding = c["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["criterion"] == "entity_grounding")
        .unwrap();
    // Half of production's answers that day name what the context does not hold; none of the
    // candidate's do.
    assert!(
        grounding["estimate_points"].as_f64().unwrap() > 20.0,
        "{grounding}"
    );
    assert_eq!(grounding["paired"], 25);
    assert_eq!(code, Some(0), "{err}\n{v}");

    // Both runs hold the same 25 traces, none of them left out, all from the latest window.
    let production = case_ids(&dir, s["production_run"].as_str().unwrap());
    let candidate = case_ids(&dir, s["candidate_run"].as_str().unwrap());
    assert_eq!(production, candidate);
    assert_eq!(production.len(), 25);
    for id in &production {
        let k: usize = id.strip_prefix("t-1-").unwrap().parse().unwrap();
        assert!(
            !k.is_multiple_of(10) && k != 7 && k != 13,
            "{id} should have been left out"
        );
    }

    // The same traces on every invocation, and nothing judged twice; the comparison is
    // recorded in the store (`oloproof report` reads it back).
    let (code2, v2, _) = json_of(&dir, &[]);
    assert_eq!(code2, Some(0));
    let again = case_ids(&dir, v2["shadow"]["candidate_run"].as_str().unwrap());
    assert_eq!(again, candidate);
    let id = c["id"].as_str().unwrap();
    let html = dir.join("shadow.html");
    let o = oloproof(&dir, &["report", id, "-o", html.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&html)
        .unwrap()
        .contains("grounded-not-worse"));

    // The text report names the candidate, the selection and the gate.
    let o = oloproof(&dir, &["monitor", "."]);
    let text = stdout(&o);
    assert!(
        text.contains("Shadow: candidate 2 over 25 of 34 eligible traces of 2026-11-30T00:00:00Z"),
        "{text}"
    );
    assert!(text.contains("left out: error 4, no_input 2"), "{text}");
    assert!(text.contains("  Gate: PASS"), "{text}");
    assert!(text.contains("· shadow gate PASS ·"), "{text}");

    // The stored monitor report keeps the shadow, and its page shows it.
    let err = stderr(&o);
    let id = err
        .split_whitespace()
        .find(|w| w.starts_with("mon_"))
        .unwrap_or_else(|| panic!("no monitor id in {err}"))
        .trim_end_matches(':');
    let page = dir.join("monitor.html");
    let r = oloproof(&dir, &["report", id, "-o", page.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<h2>Shadow evaluation</h2>"), "{html}");
    assert!(html.contains("id=\"shadow-gate\">PASS</span>"), "{html}");
    assert!(html.contains("grounded-not-worse"), "{html}");
}

#[test]
fn an_inventive_candidate_is_blocked() {
    let (_tmp, dir) = project(&config("Candidate", SHADOW));
    // The same project, its candidate changed by an override as a CI job would.
    let (code, v, err) = json_of(&dir, &["--set", "system.rag.object=app:Inventive"]);
    let c = &v["shadow"]["comparison"];
    assert_eq!(v["shadow"]["candidate_system"], "inventive 2");
    assert_eq!(c["gate"], "BLOCK", "{c}");
    assert_eq!(c["decisions"][0]["verdict"], "FAIL", "{}", c["decisions"]);
    assert_eq!(code, Some(3), "{err}");
    let o = oloproof(
        &dir,
        &["monitor", ".", "--set", "system.rag.object=app:Inventive"],
    );
    assert_eq!(o.status.code(), Some(3));
    let text = stdout(&o);
    assert!(text.contains("  Gate: BLOCK"), "{text}");
    assert!(text.contains("BREACH (exit 3)"), "{text}");
    assert!(text.contains("· shadow gate BLOCK ·"), "{text}");
}

#[test]
fn candidate_errors_make_the_shadow_incomplete() {
    let (_tmp, dir) = project(&config("Fragile", SHADOW));
    let (code, v, err) = json_of(&dir, &[]);
    let s = &v["shadow"];
    let errors = s["candidate_errors"].as_u64().unwrap();
    assert!(errors > 2, "{s}");
    assert_eq!(code, Some(4), "{err}");
    assert!(
        err.contains(&format!(
            "error: shadow: {errors} of 25 candidate cases ended in an error"
        )),
        "{err}"
    );
    // The errors are recorded as errors, never scored: the comparison counts them missing.
    let grounding = s["comparison"]["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["criterion"] == "entity_grounding")
        .unwrap();
    assert_eq!(
        grounding["missing"].as_u64().unwrap(),
        errors,
        "{grounding}"
    );
}

#[test]
fn a_candidate_that_cannot_start_leaves_the_monitor_report_whole() {
    let (_tmp, dir) = project(&config("Candidate", SHADOW));
    let o = oloproof(
        &dir,
        &["monitor", ".", "--set", "system.rag.object=app:Missing"],
    );
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(4), "{err}");
    // Production's windows are reported; the shadow names no candidate run.
    assert!(out.contains("Window 2026-11-30T00:00:00Z"), "{out}");
    assert!(
        out.contains("Shadow: the candidate over 25 of 34 eligible traces"),
        "{out}"
    );
    assert!(!out.contains("candidate run"), "{out}");
    assert!(
        err.contains("error: shadow: the system could not be started"),
        "{err}"
    );
    assert!(err.contains("Missing"), "{err}");
}

#[test]
fn bad_shadow_settings_are_located() {
    let cases = [
        (
            config(
                "Candidate",
                "  shadow: {policy: shadow.yaml, window: lastest}\n",
            ),
            "monitor.shadow.window",
            "unknown window `lastest`",
        ),
        (
            config(
                "Candidate",
                "  shadow: {policy: shadow.yaml, evaluators: [entity_grounded]}\n",
            ),
            "monitor.shadow.evaluators[0]",
            "did you mean `entity_grounding`?",
        ),
        (
            config(
                "Candidate",
                "  shadow: {policy: shadow.yaml, max_cases: 0}\n",
            ),
            "monitor.shadow.max_cases",
            "`max_cases` must be at least 1",
        ),
        (
            config("Candidate", "  shadow: {policy: nowhere.yaml}\n"),
            "nowhere.yaml",
            "nowhere.yaml",
        ),
        (
            config("Candidate", "  shadow: {policy: shadow.yaml}\n")
                .replace("system:\n  rag: {object: app:Candidate, workers: 2}\n", ""),
            "system",
            "the candidate system runs over questions given to it",
        ),
    ];
    for (text, key, message) in cases {
        let (_tmp, dir) = project(&text);
        let o = oloproof(&dir, &["monitor", "."]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{key}: {err}");
        assert!(err.contains(message), "{key}: {err}");
        if key.starts_with("monitor.") || key == "system" {
            assert!(
                err.contains("oloproof.yaml:"),
                "{key} is not located: {err}"
            );
        }
    }
    // A policy gating on a criterion the shadow does not compare is located in the policy.
    let (_tmp, dir) = project(&config(
        "Candidate",
        "  shadow: {policy: shadow.yaml, evaluators: [no_refusal]}\n",
    ));
    let o = oloproof(&dir, &["monitor", "."]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("shadow.yaml:2:"), "{err}");
    assert!(err.contains("entity_grounding"), "{err}");
}

/// The policy's `pairwise:` block: production's and the candidate's answers judged head to
/// head, in both orders, by a judge (the in-process mock, OpenAI wire format) that prefers the
/// answer dated 3 March — the grounded one — wherever it is shown.
#[test]
fn the_policy_pairwise_block_judges_both_answers_head_to_head() {
    use oloproof_judge::mock::{MockReply, MockServer};
    let server = MockServer::start();
    server.respond_with(|r| {
        let user = r.body["messages"][1]["content"].as_str().unwrap_or("");
        let a = user.split("Answer A: ").nth(1).unwrap_or("");
        let (a, b) = a.split_once("\n\nAnswer B: ").unwrap_or((a, ""));
        let winner = match (a.contains("3 March"), b.contains("3 March")) {
            (true, false) => "A",
            (false, true) => "B",
            _ => "tie",
        };
        MockReply::json(json!({"reason": format!("picked {winner}"), "winner": winner}))
            .with_usage(100, 10)
    });
    let judges = format!(
        "judges:\n  fair: {{provider: openai, base_url: \"{}\", model: gpt-4o, api_key_env: OLOPROOF_TEST_SHADOW_KEY, max_retries: 0, timeout_s: 5}}\n",
        server.base_url()
    );
    let text =
        config("Candidate", SHADOW).replace("evaluators:\n", &format!("{judges}evaluators:\n"));
    let (_tmp, dir) = project(&text);
    std::fs::write(
        dir.join("shadow.yaml"),
        format!("{POLICY}pairwise: {{judge: fair, exploratory: true}}\n"),
    )
    .unwrap();
    let o = oloproof_env(
        &dir,
        &["monitor", ".", "--json"],
        &[("OLOPROOF_TEST_SHADOW_KEY", "sk-test-shadow")],
    );
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&o), stderr(&o)));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let p = &v["shadow"]["comparison"]["pairwise"];
    assert_eq!(p["judge"], "fair", "{p}");
    assert_eq!(p["exploratory"], true);
    // Production invented every other answer that day: those pairs go to the candidate, the
    // others (both dated 3 March) are ties; none goes to production.
    let tally = &p["tally"];
    let (wins, losses, ties) = (
        tally["wins"].as_u64().unwrap(),
        tally["losses"].as_u64().unwrap(),
        tally["ties"].as_u64().unwrap(),
    );
    assert_eq!(wins + ties, 25, "{tally}");
    assert!(wins >= 5, "{tally}");
    assert_eq!(losses, 0, "{tally}");
    assert_eq!(p["judge_errors"], 0);
    // The key never reaches the report.
    assert_eq!(p["consistency"]["judged"], 25);
    // Both orders of every pair; a tie of two identical answers reads the same in both orders,
    // so its second call is served by the judge-call cache.
    assert_eq!(server.requests().len() as u64, 2 * wins + ties);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("sk-test-shadow"));
}
