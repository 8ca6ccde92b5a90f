//! Claim-level diagnostics (RAGChecker's metrics) through the real binary on a recorded
//! dataset, judged by an in-process server speaking the OpenAI wire format: every metric's
//! per-case value against hand-computed ones, a refusal excluded as `no_claims` and counted, a
//! failed judge call `missing`, the eleven criteria sharing six calls a case, a re-run costing
//! nothing, and `show --case` printing the claim lists once.

mod common;

use common::*;
use oloproof_judge::mock::{MockReply, MockServer, RecordedRequest};
use serde_json::{json, Value};

const KEY_ENV: &str = "OLOPROOF_TEST_JUDGE_KEY";
const KEY: &str = "sk-test-secret-0123456789";

const ALL: [&str; 11] = [
    "claim_precision",
    "claim_recall",
    "claim_f1",
    "retriever_claim_recall",
    "retriever_context_precision",
    "generator_context_utilisation",
    "generator_noise_sensitivity_relevant",
    "generator_noise_sensitivity_irrelevant",
    "generator_hallucination",
    "generator_self_knowledge",
    "generator_faithfulness",
];

fn template(r: &RecordedRequest) -> String {
    r.body
        .pointer("/response_format/json_schema/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn section<'a>(user: &'a str, start: &str, end: &str) -> &'a str {
    let s = user.split(start).nth(1).unwrap_or("");
    s.split(end).next().unwrap_or(s)
}

/// The texts of a `[1] …\n\n[2] …` list.
fn numbered(block: &str) -> Vec<String> {
    block
        .split("\n\n")
        .filter_map(|l| l.trim().split_once("] ").map(|(_, t)| t.to_string()))
        .collect()
}

/// A judge that reads its prompts: a text's claims are its sentences (none for "I don't
/// know"), a claim is entailed by a text containing it word for word, and anything about a
/// "broken" answer is a server error.
fn literal_judge(r: &RecordedRequest) -> MockReply {
    let user = r.body["messages"][1]["content"].as_str().unwrap_or("");
    if user.contains("broken") {
        return MockReply::error(500, "the judge is down");
    }
    let contains = |text: &str, claim: &str| {
        text.to_lowercase()
            .contains(claim.trim_end_matches('.').to_lowercase().as_str())
    };
    let claims = || numbered(user.split("Claims:\n").nth(1).unwrap_or(""));
    let reply = match template(r).as_str() {
        "claim_extraction" => {
            let text = user.split("Answer: ").nth(1).unwrap_or("");
            let claims: Vec<String> = if text.contains("don't know") {
                Vec::new()
            } else {
                text.split(". ")
                    .map(|s| s.trim().trim_end_matches('.').to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            };
            json!({ "claims": claims })
        }
        "claim_verification" => {
            let context = section(user, "Context:\n", "\n\nClaims:");
            let verdicts: Vec<Value> = claims()
                .iter()
                .enumerate()
                .map(|(i, c)| json!({"id": i + 1, "reason": "word for word", "verdict": u8::from(contains(context, c))}))
                .collect();
            json!({ "verdicts": verdicts })
        }
        "claim_attribution" => {
            let chunks = numbered(section(user, "Retrieved chunks:\n", "\n\nClaims:"));
            let verdicts: Vec<Value> = claims()
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let from: Vec<usize> = (0..chunks.len())
                        .filter(|&k| contains(&chunks[k], c))
                        .map(|k| k + 1)
                        .collect();
                    json!({"id": i + 1, "reason": "word for word", "chunks": from})
                })
                .collect();
            json!({ "verdicts": verdicts })
        }
        other => return MockReply::error(400, &format!("unexpected template {other}")),
    };
    MockReply::json(reply).with_usage(100, 10)
}

const DATASET: &str = r#"{"id": "mixed", "user_input": "How long do refunds take?", "retrieved_contexts": ["Refunds take 14 days. Support answers by mail.", "Shipping is free over 50 EUR."], "response": "Refunds take 14 days. Shipping is free over 50 EUR. Refunds need a receipt.", "reference": "Refunds take 14 days. Refunds need a receipt. Support answers by mail."}
{"id": "refusal", "user_input": "How long do refunds take?", "retrieved_contexts": ["Refunds take 14 days."], "response": "I don't know.", "reference": "Refunds take 14 days."}
{"id": "failing", "user_input": "How long do refunds take?", "retrieved_contexts": ["Refunds take 14 days."], "response": "A broken answer.", "reference": "Refunds take 14 days."}
"#;

/// A recorded-dataset project judged by `server`, with these evaluator types.
fn project(server: &MockServer, types: &[&str]) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("project");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ragas.jsonl"), DATASET).unwrap();
    let evaluators: String = types
        .iter()
        .map(|t| format!("  - {{type: {t}, judge: default}}\n"))
        .collect();
    let config = format!(
        "dataset: ragas.jsonl
max_error_rate: 0.5
judges:
  default:
    provider: openai
    base_url: {}
    model: judge-model-1
    api_key_env: {KEY_ENV}
    max_retries: 0
    timeout_s: 5
evaluators:
{evaluators}",
        server.base_url()
    );
    std::fs::write(dir.join("oloproof.yaml"), config).unwrap();
    (tmp, dir)
}

fn close(v: &Value, expected: f64) -> bool {
    v.as_f64().is_some_and(|x| (x - expected).abs() < 1e-12)
}

#[test]
fn every_metric_per_case_with_exclusions_and_missing() {
    let server = MockServer::start();
    server.respond_with(literal_judge);
    let (_tmp, dir) = project(&server, &ALL);
    let env = [(KEY_ENV, KEY)];
    let dry = oloproof_env(&dir, &["run", ".", "--dry-run"], &env);
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    assert!(
        stdout(&dry)
            .contains("claim_precision (judge default, judge-model-1): up to 18 judge calls"),
        "{}",
        stdout(&dry)
    );
    let run = oloproof_env(&dir, &["run", ".", "--json"], &env);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}{}",
        stdout(&run),
        stderr(&run)
    );
    let s: Value = serde_json::from_slice(&run.stdout).unwrap();

    // Case `mixed` (see the dataset): answer claims a0 "Refunds take 14 days" (in the
    // reference, chunk 1), a1 "Shipping is free over 50 EUR" (chunk 2 only), a2 "Refunds need
    // a receipt" (the reference only); reference claims r0 (answer, chunk 1), r1 (answer
    // only), r2 "Support answers by mail" (chunk 1 only). Chunk 1 is relevant, chunk 2 not.
    // Case `refusal` has no answer claim: recall 0, the retriever's numbers 1, utilisation 0,
    // the others excluded. Case `failing` is missing everywhere.
    let mixed: [Option<f64>; 11] = [
        Some(2.0 / 3.0),
        Some(2.0 / 3.0),
        Some(2.0 / 3.0),
        Some(2.0 / 3.0),
        Some(0.5),
        Some(0.5),
        Some(0.0),
        Some(1.0 / 3.0),
        Some(0.0),
        Some(1.0 / 3.0),
        Some(2.0 / 3.0),
    ];
    let refusal: [Option<f64>; 11] = [
        None,
        Some(0.0),
        None,
        Some(1.0),
        Some(1.0),
        Some(0.0),
        None,
        None,
        None,
        None,
        None,
    ];
    for (i, name) in ALL.iter().enumerate() {
        let c = criterion(&s, name);
        assert_eq!(c["missing"], 1, "{name}: {c}");
        match (mixed[i], refusal[i]) {
            (Some(m), Some(r)) => {
                assert_eq!(c["observed"], 2, "{name}: {c}");
                assert!(close(&c["value"], (m + r) / 2.0), "{name}: {c}");
            }
            (Some(m), None) => {
                assert_eq!(c["observed"], 1, "{name}: {c}");
                assert_eq!(c["excluded"], 1, "{name}: {c}");
                assert_eq!(c["excluded_reasons"]["no_claims"], 1, "{name}: {c}");
                assert!(close(&c["value"], m), "{name}: {c}");
            }
            _ => unreachable!(),
        }
    }
    // Two extractions, two verifications and two attributions for `mixed`, four calls for the
    // refusal (nothing to verify or attribute of the answer), one failed call for `failing`
    // (it is not cached, so each criterion tries it again): the eleven share the rest.
    let sent = server.request_count();
    assert_eq!(sent, 6 + 4 + 11, "{sent}");

    // A second run: every judgment from the caches, the failed one asked again.
    let again = oloproof_env(&dir, &["run", ".", "--json"], &env);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(server.request_count(), sent + 11);

    // The failure is kept: `missing` with the judge's error, never a score.
    let runs: Value = serde_json::from_slice(&oloproof(&dir, &["runs", "--json"]).stdout).unwrap();
    let id = runs.as_array().unwrap().last().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let failing = stdout(&oloproof(&dir, &["show", &id, "--case", "failing"]));
    assert!(
        failing.contains("claim_precision")
            && failing.contains("missing: judge default: http:")
            && failing.contains("HTTP 500"),
        "{failing}"
    );
    assert!(!failing.contains("Claim diagnostics ("), "{failing}");
}

#[test]
fn show_case_prints_the_claim_lists_once() {
    let server = MockServer::start();
    server.respond_with(literal_judge);
    let (tmp, dir) = project(&server, &["claim_f1", "generator_faithfulness"]);
    let env = [(KEY_ENV, KEY)];
    let run = oloproof_env(&dir, &["run", "."], &env);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let id = run_id(&stdout(&run));
    let show = oloproof(&dir, &["show", &id, "--case", "mixed"]);
    insta::assert_snapshot!("claim_diagnostics_show_case", transcript(&show, tmp.path()));
    let text = stdout(&show);
    assert_eq!(text.matches("Claim diagnostics (").count(), 1, "{text}");
    let refusal = stdout(&oloproof(&dir, &["show", &id, "--case", "refusal"]));
    assert!(refusal.contains("excluded: no_claims"), "{refusal}");
    assert!(refusal.contains("Answer claims (0):"), "{refusal}");
}

/// The viewer's case page shows the claim-diagnostics block once (the answer's and the
/// reference's claims with their checks, escaped), and none on a case whose verdicts hold no
/// claim lists.
#[cfg(feature = "view")]
#[test]
fn the_viewers_case_page_shows_the_claim_lists() {
    use oloproof_core::store::StoreLocation;
    use oloproof_engine::run::EngineEvaluators;
    use oloproof_view::{Viewer, ViewerSettings};

    let server = MockServer::start();
    server.respond_with(literal_judge);
    let (_tmp, dir) = project(&server, &["claim_f1", "generator_faithfulness"]);
    let run = oloproof_env(&dir, &["run", "."], &[(KEY_ENV, KEY)]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let id = run_id(&stdout(&run));
    let viewer = Viewer::bind(
        &ViewerSettings {
            store: StoreLocation::Sqlite(dir.join(".oloproof/oloproof.db")),
            host: std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            port: 0,
            allow_non_loopback: false,
        },
        std::sync::Arc::new(EngineEvaluators),
    )
    .unwrap();
    let base = viewer.url().trim_end_matches('/').to_string();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = std::thread::spawn(move || {
        viewer.serve_until(async move {
            let _ = stopped.await;
        })
    });
    let page = |case: &str| -> (u16, String) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let mut r = agent
            .get(&format!("{base}{}", oloproof_view::case_link(&id, case)))
            .call()
            .unwrap();
        (r.status().as_u16(), r.body_mut().read_to_string().unwrap())
    };
    let (status, mixed) = page("mixed");
    let (refusal_status, refusal) = page("refusal");
    let (failing_status, failing) = page("failing");
    let _ = stop.send(());
    serving.join().unwrap().unwrap();

    assert_eq!(status, 200, "{mixed}");
    assert_eq!(
        mixed.matches("<b>Claim diagnostics</b>").count(),
        1,
        "{mixed}"
    );
    // The answer's three claims and the reference's three, each with its check.
    for claim in [
        "Refunds take 14 days",
        "Shipping is free over 50 EUR",
        "Refunds need a receipt",
        "Support answers by mail",
    ] {
        assert!(
            mixed.contains(&format!("<td>{claim}</td>")),
            "{claim}: {mixed}"
        );
    }
    assert!(
        mixed.contains("<th>answer claim</th><th>in reference</th>"),
        "{mixed}"
    );
    assert!(
        mixed.contains("<th>reference claim</th><th>in answer</th>"),
        "{mixed}"
    );
    // A refusal has an empty answer list (and is `no_claims`), a failed case no block.
    assert_eq!(refusal_status, 200);
    assert_eq!(
        refusal.matches("<b>Claim diagnostics</b>").count(),
        1,
        "{refusal}"
    );
    assert!(refusal.contains("no_claims"), "{refusal}");
    assert_eq!(failing_status, 200);
    assert!(!failing.contains("<b>Claim diagnostics</b>"), "{failing}");
}
