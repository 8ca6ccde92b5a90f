//! `oloproof compare … --pairwise JUDGE` and the policy's `pairwise:` block through the real
//! binary, against the in-process mock judge (OpenAI wire format): a judge that prefers the
//! better answer in both orders gives wins and a passing decision; one that always prefers the
//! answer shown first gives ties and no position consistency; one that prefers the baseline
//! fails the decision; re-running is served from the judge-call cache; a failed generation on
//! one side and a failed judge call are counted, never ties or wins; bad input exits 2 at its
//! location.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use oloproof_judge::mock::{MockReply, MockServer, RecordedRequest};
use serde_json::{json, Value};

const KEY_ENV: &str = "OLOPROOF_TEST_PAIRWISE_KEY";
const ENV: [(&str, &str); 1] = [(KEY_ENV, "sk-test-pairwise")];

/// A system whose answer depends on `params.style` (`detailed` answers are better and longer),
/// that fails on questions containing `params.fail_on`, and records `params.model` as
/// `usage.model`.
const APP: &str = r#"
from oloproof import Passage, Retrieval, rag_system


@rag_system(name="pairs", version="1", depth=1, top_k=1)
class Pairs:
    def retrieve(self, input, depth):
        q = input.get("question", "")
        return Retrieval(query=q, depth=depth, candidates=(Passage(doc_id="d1", score=1.0, text="the fact"),))

    def generate(self, input, context):
        p = getattr(self, "oloproof_params", None) or {}
        q = input.get("question", "")
        if p.get("fail_on") and p["fail_on"] in q:
            raise RuntimeError("asked to fail on %s" % q)
        if p.get("style") == "detailed":
            answer = "A detailed answer to %s, with the reason and its source." % q
        else:
            answer = "Short: %s." % q
        out = {"answer": answer, "citations": ["d1"]}
        if p.get("model"):
            out["usage"] = {"model": p["model"]}
        return out
"#;

/// The two answers shown to the judge (`Answer A`, `Answer B`).
fn shown(r: &RecordedRequest) -> (String, String) {
    let user = r.body["messages"][1]["content"].as_str().unwrap_or("");
    let a = user.split("Answer A: ").nth(1).unwrap_or("");
    let (a, b) = a.split_once("\n\nAnswer B: ").unwrap_or((a, ""));
    (a.to_string(), b.to_string())
}

/// One server, one behaviour per judge model: `fair` prefers the detailed answer wherever it
/// is shown, `first` always prefers position A, `contrarian` prefers the short answer, and
/// `flaky` is fair but fails (HTTP 400, not retried) on the pair of `question 5`.
fn judge_server() -> MockServer {
    let server = MockServer::start();
    server.respond_with(|r| {
        let model = r.body["model"].as_str().unwrap_or("").to_string();
        let (a, b) = shown(r);
        let detailed = |x: &str| x.starts_with("A detailed");
        if model == "flaky" && a.contains("question 5") {
            return MockReply::error(400, "the judge refused this pair");
        }
        let winner = match model.as_str() {
            "first" => "A",
            "contrarian" if detailed(&a) => "B",
            "contrarian" => "A",
            _ if detailed(&a) && !detailed(&b) => "A",
            _ if detailed(&b) && !detailed(&a) => "B",
            _ => "tie",
        };
        MockReply::json(json!({"reason": format!("{model} picked {winner}"), "winner": winner}))
            .with_usage(120, 15)
    });
    server
}

fn judge_entry(server: &MockServer, name: &str, model: &str) -> String {
    format!(
        "  {name}: {{provider: openai, base_url: \"{}\", model: {model}, api_key_env: {KEY_ENV}, max_retries: 0, timeout_s: 5, prices: {{input_per_mtok: 1.0, output_per_mtok: 2.0}}}}\n",
        server.base_url()
    )
}

/// A project with 12 cases (`question 0` … `question 11`) and the four judges.
fn pairs_project(server: &MockServer) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("project");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("app.py"), APP).unwrap();
    let cases: String = (0..12)
        .map(|i| {
            format!(
                "{}\n",
                json!({"id": format!("q{i:02}"), "input": {"question": format!("question {i}")},
                    "expected": {"answer": "question"}})
            )
        })
        .collect();
    std::fs::write(dir.join("cases.jsonl"), cases).unwrap();
    let mut judges = String::from("judges:\n");
    for (name, model) in [
        ("fair", "gpt-4o"),
        ("first", "first"),
        ("contrarian", "contrarian"),
        ("flaky", "flaky"),
    ] {
        judges.push_str(&judge_entry(server, name, model));
    }
    write_config(&dir, &judges, "{style: plain}");
    (tmp, dir)
}

fn write_config(dir: &Path, judges: &str, params: &str) {
    std::fs::write(
        dir.join("oloproof.yaml"),
        format!(
            "system:
  name: pairs
  version: \"1\"
  rag:
    object: app:Pairs
    params: {params}
cases: cases.jsonl
{judges}evaluators:
  - {{type: contains, criterion: answer_correct}}
"
        ),
    )
    .unwrap();
}

/// Runs the baseline (plain answers), then the candidate with `params`; returns `(candidate,
/// baseline)` and restores the baseline's config.
fn two_runs(dir: &Path, params: &str, extra: &[&str]) -> (String, String) {
    let config = std::fs::read_to_string(dir.join("oloproof.yaml")).unwrap();
    let base = oloproof(dir, &["run", "."]);
    assert_eq!(base.status.code(), Some(0), "{}", stderr(&base));
    std::fs::write(
        dir.join("oloproof.yaml"),
        config.replace("params: {style: plain}", &format!("params: {params}")),
    )
    .unwrap();
    let mut args = vec!["run", "."];
    args.extend_from_slice(extra);
    let cand = oloproof(dir, &args);
    assert!(matches!(cand.status.code(), Some(0)), "{}", stderr(&cand));
    std::fs::write(dir.join("oloproof.yaml"), config).unwrap();
    (run_id(&stdout(&cand)), run_id(&stdout(&base)))
}

fn policy(dir: &Path, name: &str, text: &str) -> String {
    std::fs::write(dir.join(name), text).unwrap();
    name.to_string()
}

fn compare(
    dir: &Path,
    cand: &str,
    base: &str,
    policy: &str,
    extra: &[&str],
) -> std::process::Output {
    let mut args = vec!["compare", cand, base, "--policy", policy];
    args.extend_from_slice(extra);
    oloproof_env(dir, &args, &ENV)
}

fn line<'a>(out: &'a str, start: &str) -> &'a str {
    out.lines()
        .find(|l| l.trim_start().starts_with(start))
        .unwrap_or_else(|| panic!("no line starting with {start:?} in\n{out}"))
}

#[test]
fn a_fair_judge_gives_wins_and_the_decision_passes_on_the_lower_bound() {
    let server = judge_server();
    let (tmp, dir) = pairs_project(&server);
    let (cand, base) = two_runs(&dir, "{style: detailed, model: gpt-4o-mini}", &[]);
    let p = policy(
        &dir,
        "pairwise.yaml",
        "pairwise:\n  judge: fair\n  name: candidate-preferred\n  allow_uncalibrated: true\n",
    );
    let o = compare(&dir, &cand, &base, &p, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    insta::assert_snapshot!("pairwise_fair_pass", transcript(&o, tmp.path()));
    let out = stdout(&o);
    assert!(out.contains("12 shared cases: 12 wins · 0 losses · 0 ties · 0 missing · 0 excluded"));
    // 12 of 12: the exact lower bound is 0.025^(1/12) = 73.5 %, above 50 %.
    assert!(
        out.contains("win rate among 12 decided cases: 100.0% [73.5, 100.0] (exact 95%) · sign test p = 0.000488"),
        "{out}"
    );
    assert!(out.contains(
        "self-preference RISK: the judge's family (gpt) is the candidate's generator family"
    ));
    assert!(line(&out, "candidate-preferred").contains("PASS  interval_above_min_win_rate"));
    assert_eq!(server.request_count(), 24);
    let first = hash_id(&out);

    // Again: every call from the judge-call cache, the same comparison id.
    let again = compare(&dir, &cand, &base, &p, &["--json"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(
        server.request_count(),
        24,
        "a re-run is served from the cache"
    );
    let v: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(v["id"], json!(first));
    let pw = &v["pairwise"];
    assert_eq!(pw["usage"]["cached"], 24);
    assert_eq!(pw["tally"]["wins"], 12);
    assert_eq!(pw["order_seed"], 20260916);
    assert_eq!(pw["consistency"]["candidate_shown_first"], 6);
    assert_eq!(pw["consistency"]["baseline_shown_first"], 6);
    assert_eq!(pw["self_preference"]["same_family"], json!(["candidate"]));
    let case = &pw["cases"][0];
    assert_eq!(case["outcome"], "win");
    assert_eq!(case["calls"][0]["preferred"], "candidate");
    assert_eq!(case["calls"][0]["reason"], "gpt-4o picked A");
    assert_eq!(v["decisions"][0]["kind"], "pairwise_preference");
    assert_eq!(v["policy"]["pairwise"]["allow_uncalibrated"], true);

    // The Markdown report's pairwise section, and `inspect` lists every case.
    let md = oloproof(&dir, &["report", &first, "-o", "report.md"]);
    assert_eq!(md.status.code(), Some(0), "{}", stderr(&md));
    let text = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let section = &text[text.find("#### Pairwise").expect("a pairwise section")..];
    insta::assert_snapshot!("pairwise_markdown", redact(section, tmp.path()));
    let inspect = oloproof(&dir, &["inspect", &first]);
    assert_eq!(inspect.status.code(), Some(0), "{}", stderr(&inspect));
    let listed = stdout(&inspect);
    assert!(listed.contains("  q00: win · "), "{listed}");
    assert_eq!(listed.matches(": win · ").count(), 12, "{listed}");

    // The HTML report shows every case.
    let html = oloproof(&dir, &["report", &first, "-o", "report.html"]);
    assert_eq!(html.status.code(), Some(0), "{}", stderr(&html));
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(page.contains("<section id=\"pairwise\">"));
    assert_eq!(page.matches("data-outcome=\"win\"").count(), 12);

    // The judge that prefers the baseline: 0 of 12, the upper bound below 50 %: FAIL, exit 3.
    let contrarian = policy(
        &dir,
        "contrarian.yaml",
        "pairwise: {judge: contrarian, allow_uncalibrated: true}\n",
    );
    let o = compare(&dir, &cand, &base, &contrarian, &[]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("12 shared cases: 0 wins · 12 losses"), "{out}");
    assert!(
        line(&out, "pairwise-preference").contains("FAIL  interval_below_min_win_rate"),
        "{out}"
    );
    assert!(out.contains("Gate: BLOCK (exit 3)"));
}

#[test]
fn a_position_biased_judge_yields_ties_and_no_consistency() {
    let server = judge_server();
    let (tmp, dir) = pairs_project(&server);
    let (cand, base) = two_runs(&dir, "{style: detailed}", &[]);
    let p = policy(
        &dir,
        "biased.yaml",
        "pairwise: {judge: first, allow_uncalibrated: true}\n",
    );
    let o = compare(&dir, &cand, &base, &p, &[]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    insta::assert_snapshot!("pairwise_position_biased", transcript(&o, tmp.path()));
    let out = stdout(&o);
    assert!(
        out.contains("12 shared cases: 0 wins · 0 losses · 12 ties"),
        "{out}"
    );
    assert!(out.contains("position consistency: 0 of 12 judged cases agreed in both orders (0.0%) · single calls preferred the first position 24, the second 0"), "{out}");
    assert!(line(&out, "pairwise-preference").contains("INSUFFICIENT_EVIDENCE  no_decided_cases"));

    // `--pairwise` with a policy that has no `pairwise:` block: a report, not a decision, so
    // the uncalibrated judge is accepted and the exit code follows the other decisions.
    let other = policy(
        &dir,
        "other.yaml",
        "decisions:\n  - {name: answers-hold, kind: no_regression, cases: [q00]}\n",
    );
    let o = compare(&dir, &cand, &base, &other, &["--pairwise", "fair"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Pairwise preference (judge fair: gpt-4o · pairwise@2 · both orders) · report only, not a decision"), "{out}");
    assert!(out.contains("judge fair has no passing pairwise calibration (reported, not decided)"));
    assert!(!out.contains("pairwise-preference"), "{out}");
}

#[test]
fn failed_sides_and_judge_calls_are_counted_and_bad_input_exits_2() {
    let server = judge_server();
    let (tmp, dir) = pairs_project(&server);
    // The candidate's generation fails on `question 3`.
    let (cand, base) = two_runs(
        &dir,
        "{style: detailed, fail_on: question 3}",
        &["--max-error-rate", "0.5"],
    );
    let p = policy(
        &dir,
        "flaky.yaml",
        "pairwise: {judge: flaky, allow_uncalibrated: true}\nmax_missing_rate: 0.2\n",
    );
    // The judge fails on one pair too: 1 of 12 judge errors is within 20 % (exit follows the
    // gate), and both missing cases are counted, never ties or wins.
    let o = compare(&dir, &cand, &base, &p, &["--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let pw = &v["pairwise"];
    assert_eq!(
        (pw["missing"].as_u64(), pw["judge_errors"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(pw["tally"]["wins"], 10);
    let case = |id: &str| {
        pw["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["case_id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(case("q03")["outcome"], "missing");
    assert_eq!(case("q03")["reason"], "candidate_failed");
    assert!(case("q03")["error"]
        .as_str()
        .unwrap()
        .contains("asked to fail on question 3"));
    assert_eq!(case("q05")["outcome"], "missing");
    assert_eq!(case("q05")["reason"], "judge_error");
    assert!(
        case("q05")["error"]
            .as_str()
            .unwrap()
            .contains("the judge refused this pair"),
        "{}",
        case("q05")
    );
    assert_eq!(pw["usage"]["failed"], 1);

    // With no room for judge errors the comparison is incomplete: exit 4.
    let strict = policy(
        &dir,
        "strict.yaml",
        "pairwise: {judge: flaky, allow_uncalibrated: true}\n",
    );
    let o = compare(&dir, &cand, &base, &strict, &[]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    insta::assert_snapshot!(
        "pairwise_judge_error_incomplete",
        transcript(&o, tmp.path())
    );

    // An undeclared judge: exit 2 at the key, naming the declared judges.
    let typo = policy(
        &dir,
        "typo.yaml",
        "pairwise:\n  judge: fiar\n  allow_uncalibrated: true\n",
    );
    let o = compare(&dir, &cand, &base, &typo, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    insta::assert_snapshot!("pairwise_unknown_judge", transcript(&o, tmp.path()));
    let o = compare(&dir, &cand, &base, &typo, &["--pairwise", "nope"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    insta::assert_snapshot!("pairwise_unknown_judge_flag", transcript(&o, tmp.path()));

    // A deciding judge without a pairwise calibration is refused.
    let uncalibrated = policy(&dir, "uncalibrated.yaml", "pairwise:\n  judge: fair\n");
    let o = compare(&dir, &cand, &base, &uncalibrated, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    insta::assert_snapshot!("pairwise_uncalibrated", transcript(&o, tmp.path()));

    // Calibrated against human preferences (declared threshold first), the judge may decide.
    let config = std::fs::read_to_string(dir.join("oloproof.yaml")).unwrap();
    std::fs::write(
        dir.join("oloproof.yaml"),
        format!("{config}calibration:\n  fair: {{min_kappa: 0.7}}\n"),
    )
    .unwrap();
    let prefs: String = (0..12)
        .map(|i| {
            let (a, b, label) = match i % 3 {
                0 => ("A detailed answer", "short", "A"),
                1 => ("short", "A detailed answer", "B"),
                _ => ("short", "short too", "tie"),
            };
            format!(
                "{}\n",
                json!({"id": format!("p{i}"), "question": format!("pref {i}"), "answer": a, "answer_b": b, "label": label})
            )
        })
        .collect();
    std::fs::write(dir.join("prefs.jsonl"), prefs).unwrap();
    let c = oloproof_env(
        &dir,
        &[
            "calibrate",
            "--judge",
            "fair",
            "--evaluator",
            "pairwise",
            "--labels",
            "prefs.jsonl",
            "--json",
        ],
        &ENV,
    );
    assert_eq!(c.status.code(), Some(0), "{}{}", stdout(&c), stderr(&c));
    let c: serde_json::Value = serde_json::from_slice(&c.stdout).unwrap();
    assert_eq!(c["evaluator"], "pairwise");
    assert_eq!(c["n"], 12);
    assert_eq!(c["kappa"]["value"], 1.0);
    let o = compare(&dir, &cand, &base, &uncalibrated, &[]);
    assert!(
        matches!(o.status.code(), Some(0 | 3)),
        "a calibrated judge decides: {}{}",
        stdout(&o),
        stderr(&o)
    );
    assert!(
        !stdout(&o).contains("no passing pairwise calibration"),
        "{}",
        stdout(&o)
    );
    std::fs::write(dir.join("oloproof.yaml"), config).unwrap();

    // Runs with no common case: exit 2 at the `pairwise:` block, with the fix.
    std::fs::write(
        dir.join("other.jsonl"),
        "{\"id\": \"elsewhere\", \"input\": {\"question\": \"question 99\"}}\n",
    )
    .unwrap();
    let elsewhere = oloproof(&dir, &["run", ".", "--set", "cases=other.jsonl"]);
    assert_eq!(elsewhere.status.code(), Some(0), "{}", stderr(&elsewhere));
    let other = run_id(&stdout(&elsewhere));
    let o = compare(&dir, &other, &base, &p, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    insta::assert_snapshot!("pairwise_no_common_cases", transcript(&o, tmp.path()));
    let requests = server.request_count();
    assert!(requests > 0);
}
