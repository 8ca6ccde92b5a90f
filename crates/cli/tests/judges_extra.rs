//! Noise sensitivity, judge ensembles and probability-weighted rubric scores through the real
//! binary against in-process HTTP servers speaking the OpenAI wire format.

mod common;

use common::*;
use oloproof_judge::mock::{MockReply, MockServer, RecordedRequest};
use serde_json::{json, Value};

const KEY_ENV: &str = "OLOPROOF_TEST_JUDGE_KEY";
const KEY: &str = "sk-test-secret-0123456789";

/// A project on the echo system with the judges `(name, server, model)` and these evaluators.
fn project_with_judges(
    judges: &[(&str, &MockServer, &str)],
    evaluators: &str,
) -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, dir) = project("tests/systems/echo");
    let judges: String = judges
        .iter()
        .map(|(name, server, model)| {
            format!(
                "  {name}:
    provider: openai
    base_url: {}
    model: {model}
    api_key_env: {KEY_ENV}
    max_retries: 1
    timeout_s: 5
    prices: {{input_per_mtok: 1.0, output_per_mtok: 2.0}}
",
                server.base_url()
            )
        })
        .collect();
    let config = format!(
        "system:
  name: echo
  version: \"1\"
  rag:
    object: app:Echo
    depth: 3
    top_k: 2
    token_budget: 100
    index_version: echo-1
    workers: 2
cases: cases.jsonl
judges:
{judges}evaluators:
{evaluators}"
    );
    std::fs::write(dir.join("oloproof.yaml"), config).unwrap();
    (tmp, dir)
}

fn template(r: &RecordedRequest) -> String {
    r.body
        .pointer("/response_format/json_schema/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// The number of claims a verification or attribution request lists (`[k] …` after
/// `Claims:`).
fn wanted(r: &RecordedRequest) -> usize {
    let user = r.body["messages"][1]["content"].as_str().unwrap_or("");
    let claims = user.split("Claims:").nth(1).unwrap_or("");
    claims.lines().filter(|l| l.starts_with('[')).count()
}

fn run_json(dir: &std::path::Path, args: &[&str]) -> Value {
    let o = oloproof_env(dir, args, &[(KEY_ENV, KEY)]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn noise_sensitivity_relevant_and_irrelevant() {
    // Two claims in every text; the first answer claim is correct, the second is not; every
    // claim comes from chunk 1, which the reference's claims make relevant.
    let server = MockServer::start();
    server.respond_with(|req| {
        let n = wanted(req);
        let reply = match template(req).as_str() {
            "claim_extraction" => json!({"claims": ["first claim", "second claim"]}),
            "claim_verification" => json!({"verdicts": (1..=n)
                .map(|i| json!({"id": i, "reason": "r", "verdict": u8::from(i == 1)}))
                .collect::<Vec<_>>()}),
            "claim_attribution" => json!({"verdicts": (1..=n)
                .map(|i| json!({"id": i, "reason": "r", "chunks": [1]}))
                .collect::<Vec<_>>()}),
            other => panic!("unexpected template {other}"),
        };
        MockReply::json(reply)
    });
    let (_tmp, dir) = project_with_judges(
        &[("default", &server, "judge-model-1")],
        "  - {type: noise_sensitivity, judge: default}
  - {type: noise_sensitivity, judge: default, noise_mode: irrelevant, criterion: noise_irrelevant}
",
    );
    let dry = oloproof_env(&dir, &["run", ".", "--dry-run"], &[(KEY_ENV, KEY)]);
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    let out = stdout(&dry);
    assert!(
        out.contains("noise_sensitivity (judge default, judge-model-1): up to 20 judge calls"),
        "{out}"
    );
    let s = run_json(&dir, &["run", ".", "--json"]);
    let rel = criterion(&s, "noise_sensitivity");
    assert_eq!(rel["observed"], 4);
    assert!(
        (rel["value"].as_f64().unwrap() - 0.5).abs() < 1e-12,
        "{rel}"
    );
    let irr = criterion(&s, "noise_irrelevant");
    assert_eq!(irr["value"].as_f64(), Some(0.0), "{irr}");
    // Up to 5 calls a case per evaluator, but identical calls (same template, messages and
    // repeat) are sent once per run: 4 distinct calls a case, shared by the two evaluators. A
    // second run is served from the caches.
    assert_eq!(server.request_count(), 16);
    run_json(&dir, &["run", ".", "--json"]);
    assert_eq!(server.request_count(), 16);
}

#[test]
fn an_ensemble_of_judges_lists_disagreements() {
    let a = MockServer::start();
    a.respond_with(|_| MockReply::json(json!({"reason": "a", "grounded": 1})));
    let b = MockServer::start();
    b.respond_with(|req| {
        let grounded = u8::from(!req.body.to_string().contains("delta beta"));
        MockReply::json(json!({"reason": "b", "grounded": grounded}))
    });
    let evaluators = "  - {type: groundedness_judge, judges: [gpt, other], ensemble: unanimous, criterion: grounded_all}
  - {type: groundedness_judge, judges: [gpt, other], ensemble: majority, criterion: grounded_majority}
";
    let (_tmp, dir) = project_with_judges(
        &[("gpt", &a, "model-a"), ("other", &b, "model-b")],
        evaluators,
    );
    let s = run_json(&dir, &["run", ".", "--json"]);
    let all = criterion(&s, "grounded_all");
    assert_eq!(
        (all["passed"].as_u64(), all["observed"].as_u64()),
        (Some(3), Some(4))
    );
    // A 1-1 split goes to the lower value.
    let maj = criterion(&s, "grounded_majority");
    assert_eq!(maj["passed"].as_u64(), Some(3));
    // Each judge is asked once per case: the second evaluator's identical calls are not sent.
    assert_eq!((a.request_count(), b.request_count()), (4, 4));

    // show --case: each judge's value and the disagreement.
    let runs: Value = serde_json::from_slice(&oloproof(&dir, &["runs", "--json"]).stdout).unwrap();
    let id = runs.as_array().unwrap().last().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let case = oloproof(&dir, &["show", &id, "--case", "beta", "--json"]);
    assert_eq!(case.status.code(), Some(0), "{}", stderr(&case));
    let text = stdout(&case);
    let v: Value = serde_json::from_str(&text).unwrap();
    let verdicts = v["verdicts"].as_array().unwrap_or_else(|| panic!("{text}"));
    let g = verdicts
        .iter()
        .find(|x| x["criterion"] == "grounded_all")
        .unwrap();
    assert_eq!(g["detail"]["disagreement"], true, "{g}");
    assert_eq!(g["detail"]["judges"], json!(["gpt", "other"]));
    assert_eq!(g["detail"]["result"]["judges"][0]["value"], 1.0);
    assert_eq!(g["detail"]["result"]["judges"][1]["value"], 0.0);
    assert_eq!(g["detail"]["calls"][1]["judge"], "other");
    let alpha = oloproof(&dir, &["show", &id, "--case", "alpha", "--json"]);
    let v: Value = serde_json::from_slice(&alpha.stdout).unwrap();
    let g = v["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["criterion"] == "grounded_all")
        .unwrap();
    assert_eq!(g["detail"]["disagreement"], false, "{g}");

    // Another model for one judge of the ensemble is another judgment (only it is re-asked).
    run_json(
        &dir,
        &["run", ".", "--json", "--set", "judges.other.model=model-c"],
    );
    assert_eq!((a.request_count(), b.request_count()), (4, 8));

    // Every name must be a judge: located, with a did-you-mean.
    let (tmp, dir) = project_with_judges(
        &[("gpt", &a, "model-a"), ("other", &b, "model-b")],
        "  - {type: groundedness_judge, judges: [gpt, ohter]}\n",
    );
    let o = oloproof(&dir, &["run", "."]);
    assert_eq!(o.status.code(), Some(2));
    let t = transcript(&o, tmp.path());
    assert!(t.contains("no judge named `ohter`"), "{t}");
    assert!(t.contains("evaluators[0].judges[1]"), "{t}");
    assert!(t.contains("did you mean `other`?"), "{t}");
}

#[test]
fn rubric_judge_probability_weighted() {
    let server = MockServer::start();
    server.respond_with(|req| {
        assert_eq!(template(req), "rubric");
        let reply = MockReply::json(json!({"reason": "fine", "score": 4}));
        if req.body.get("logprobs") == Some(&json!(true)) {
            reply.with_top_logprobs("\"score\":", &[("4", 0.5), ("5", 0.5)])
        } else {
            reply
        }
    });
    let (_tmp, dir) = project_with_judges(
        &[("default", &server, "judge-model-1")],
        "  - {type: rubric_judge, judge: default}
  - {type: rubric_judge, judge: default, probability_weighted: true, criterion: rubric_weighted}
",
    );
    let s = run_json(&dir, &["run", ".", "--json"]);
    assert_eq!(criterion(&s, "rubric_judge")["value"].as_f64(), Some(4.0));
    let w = criterion(&s, "rubric_weighted");
    assert!((w["value"].as_f64().unwrap() - 4.5).abs() < 1e-9, "{w}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 8);
    let weighted: Vec<_> = reqs
        .iter()
        .filter(|r| r.body.get("logprobs").is_some())
        .collect();
    assert_eq!(weighted.len(), 4);
    assert_eq!(weighted[0].body["top_logprobs"], 5);
    // The context is shown to the judge.
    let user = reqs[0].body["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains("Context:"), "{user}");
}

#[test]
fn run_repeats_reports_agreement_across_repeats() {
    // Repeat 1 (seed 101) disagrees on the `alpha` case only: 3 of 4 cases identical in every
    // repeat.
    let server = MockServer::start();
    server.respond_with(|req| {
        let user = req.body["messages"][1]["content"].as_str().unwrap_or("");
        let flip = req.body["seed"] == 101 && user.contains("alpha beta gamma");
        MockReply::json(json!({"reason": "r", "grounded": u8::from(!flip)}))
    });
    let (_tmp, dir) = project_with_judges(
        &[("default", &server, "judge-model-1")],
        "  - {type: groundedness_judge, judge: default}\n",
    );
    let config = std::fs::read_to_string(dir.join("oloproof.yaml")).unwrap();
    std::fs::write(
        dir.join("oloproof.yaml"),
        config.replace(
            "    max_retries: 1\n",
            "    max_retries: 1\n    seed: 100\n",
        ),
    )
    .unwrap();
    let s = run_json(&dir, &["run", ".", "--json", "--repeats", "3"]);
    let a = &s["repeat_agreement"][0];
    assert_eq!(a["criterion"], "groundedness_judge");
    assert_eq!(
        (a["repeats"].as_u64(), a["cases"].as_u64()),
        (Some(3), Some(4))
    );
    assert_eq!(a["identical"], 3);
    assert_eq!(a["level"], "nominal");
    // Majority of three keeps every case grounded.
    assert_eq!(criterion(&s, "groundedness_judge")["passed"], 4);
    assert_eq!(server.request_count(), 12);
    let text = oloproof_env(&dir, &["run", ".", "--repeats", "3"], &[(KEY_ENV, KEY)]);
    assert!(
        stdout(&text).contains("Repeats: groundedness_judge judged 3× — 3 / 4 cases identical in every repeat · Krippendorff's α (nominal) "),
        "{}",
        stdout(&text)
    );
    // Served from the caches: each repeat has its own namespace, all already judged.
    assert_eq!(server.request_count(), 12);
    let none = oloproof(&dir, &["run", ".", "--repeats", "0"]);
    assert_eq!(none.status.code(), Some(2));
}

#[test]
fn embeddings_are_cached_in_the_store_between_runs() {
    let server = MockServer::start();
    let (_tmp, dir) = project_with_judges(
        &[("default", &server, "judge-model-1")],
        "  - {type: semantic_similarity, embedding_judge: default}
  - {type: question_similarity, embedding_judge: default}
",
    );
    let embeddings = || {
        server
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/embeddings"))
            .count()
    };
    let first = run_json(&dir, &["run", ".", "--json"]);
    let sent = embeddings();
    assert!(sent > 0, "the first run embeds");
    // Renamed criteria are evaluated again (their verdicts are not reused), on the same texts:
    // the vectors come from the store's embedding cache, nothing is sent.
    let config = std::fs::read_to_string(dir.join("oloproof.yaml")).unwrap();
    let renamed = config
        .replace(
            "{type: semantic_similarity, embedding_judge: default}",
            "{type: semantic_similarity, embedding_judge: default, criterion: sim_again}",
        )
        .replace(
            "{type: question_similarity, embedding_judge: default}",
            "{type: question_similarity, embedding_judge: default, criterion: qsim_again}",
        );
    assert_ne!(renamed, config);
    std::fs::write(dir.join("oloproof.yaml"), renamed).unwrap();
    let second = run_json(&dir, &["run", ".", "--json"]);
    assert_eq!(
        embeddings(),
        sent,
        "the second run's vectors come from the store"
    );
    for (name, again) in [
        ("semantic_similarity", "sim_again"),
        ("question_similarity", "qsim_again"),
    ] {
        assert_eq!(
            criterion(&first, name)["value"],
            criterion(&second, again)["value"],
            "{name}"
        );
    }
}

#[test]
fn rubric_judge_writes_its_evaluation_steps_once_then_scores_with_them() {
    let server = MockServer::start();
    server.respond_with(|req| match template(req).as_str() {
        "evaluation_steps" => MockReply::json(
            json!({"steps": ["Read the question.", "Check the answer names the greek letter asked for.", ""]}),
        ),
        "rubric" => MockReply::json(json!({"reason": "fine", "score": 4})),
        other => panic!("unexpected template {other}"),
    });
    let (tmp, dir) = project_with_judges(
        &[("default", &server, "judge-model-1")],
        "  - {type: rubric_judge, judge: default, evaluation_criterion: \"The answer names the letter the question asks for.\"}
",
    );
    let s = run_json(&dir, &["run", ".", "--json"]);
    assert_eq!(criterion(&s, "rubric_judge")["value"].as_f64(), Some(4.0));
    let reqs = server.requests();
    // One steps call for the run (two workers), then one score per case.
    let steps: Vec<_> = reqs
        .iter()
        .filter(|r| template(r) == "evaluation_steps")
        .collect();
    assert_eq!(steps.len(), 1);
    assert_eq!(reqs.len(), 5);
    let steps_user = steps[0].body["messages"][1]["content"].as_str().unwrap();
    assert_eq!(
        steps_user,
        "Evaluation criterion: The answer names the letter the question asks for."
    );
    // Every score is asked with the criterion and its steps as the rubric.
    let scored = reqs.iter().find(|r| template(r) == "rubric").unwrap();
    let system = scored.body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("Evaluation steps:\n1. Read the question.\n2. Check the answer names the greek letter asked for.\n\n"),
        "{system}"
    );
    // Stored with each case and shown.
    let run = s["run_id"].as_str().unwrap().to_string();
    let shown = oloproof_env(&dir, &["show", &run, "--case", "alpha"], &[(KEY_ENV, KEY)]);
    let shown = stdout(&shown);
    assert!(
        shown.contains("evaluation steps (written by the judge) for: The answer names the letter the question asks for.\n      1. Read the question.\n      2. Check the answer names the greek letter asked for.\n"),
        "{shown}"
    );
    // A second run asks nothing: the steps come from the cache like the scores.
    run_json(&dir, &["run", ".", "--json"]);
    assert_eq!(server.requests().len(), 5);

    // Steps written in the config: no steps call.
    let config = std::fs::read_to_string(dir.join("oloproof.yaml")).unwrap();
    std::fs::write(
        dir.join("oloproof.yaml"),
        config.replace(
            "asks for.\"}",
            "asks for.\", evaluation_steps: [\"Compare the letter.\"]}",
        ),
    )
    .unwrap();
    run_json(&dir, &["run", ".", "--json"]);
    let after = server.requests();
    assert_eq!(after.len(), 9, "four new scores, no steps call");
    assert!(after[5..].iter().all(|r| template(r) == "rubric"));

    // `rubric:` and `evaluation_criterion:` exclude each other (exit 2, located).
    std::fs::write(
        dir.join("oloproof.yaml"),
        config.replace(
            "evaluation_criterion:",
            "rubric: \"1 = bad, 5 = good\", evaluation_criterion:",
        ),
    )
    .unwrap();
    let o = oloproof_env(&dir, &["run", "."], &[(KEY_ENV, KEY)]);
    assert_eq!(o.status.code(), Some(2));
    let t = redact(&transcript(&o, tmp.path()), tmp.path());
    assert!(
        t.contains("give `rubric:` or `evaluation_criterion:`, not both")
            && t.contains("evaluators[0].evaluation_criterion"),
        "{t}"
    );
}
