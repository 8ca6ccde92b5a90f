//! `oloproof generate`: synthetic test sets drafted by a judge that speaks the OpenAI wire
//! format (a loopback stand-in), their evidence spans, repairs and failures, the review
//! listing, and `run` refusing drafts.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::*;
use oloproof_judge::mock::{MockReply, MockServer, RecordedRequest};
use serde_json::{json, Value};

const KEY_ENV: &str = "OLOPROOF_TEST_JUDGE_KEY";

/// The example project (its knowledge base under `kb/`) with a judge on `server`.
fn project_with_judge(server: &MockServer) -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, dir) = project("examples/support_rag");
    let config = std::fs::read_to_string(dir.join("oloproof.yaml")).unwrap();
    let config = format!(
        "{config}\njudges:\n  writer:\n    provider: openai\n    base_url: {}\n    model: writer-1\n    api_key_env: {KEY_ENV}\n    max_retries: 0\n    timeout_s: 5\n",
        server.base_url()
    );
    std::fs::write(dir.join("oloproof.yaml"), config).unwrap();
    (tmp, dir)
}

fn user(r: &RecordedRequest) -> String {
    r.body["messages"][1]["content"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// A writer that quotes the first prose line of each passage shown, or nothing for the questions
/// that must not be answerable.
fn writer(r: &RecordedRequest) -> Value {
    let text = user(r);
    let style = text
        .lines()
        .next()
        .unwrap_or("")
        .trim_start_matches("Style: ");
    let passages = text.split("Passages:\n").nth(1).unwrap_or("");
    let abstain = style.starts_with("distractor") || style.starts_with("out of scope");
    let mut evidence = Vec::new();
    if !abstain {
        for k in 1..=2 {
            if let Some(rest) = passages.split(&format!("[{k}] ")).nth(1) {
                // The first line of prose (after the heading), within this passage.
                let quote = rest
                    .split(&format!("\n\n[{}] ", k + 1))
                    .next()
                    .unwrap_or("")
                    .lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty() && !l.starts_with('#'))
                    .unwrap_or("");
                evidence.push(json!({"passage": k, "quote": quote}));
            }
        }
    }
    let kind = style.split(':').next().unwrap_or("");
    json!({
        "question": format!("A {kind} question?"),
        "answer": if abstain { "The documents do not say.".to_string() } else { format!("Answer from {} passage(s).", evidence.len()) },
        "evidence": evidence,
    })
}

fn run_generate(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "generate",
        "--docs",
        "kb",
        "--judge",
        "writer",
        "-o",
        "draft.jsonl",
    ];
    args.extend_from_slice(extra);
    oloproof_env(dir, &args, &[(KEY_ENV, "sk-test")])
}

#[test]
fn drafts_carry_kinds_behaviours_and_exact_evidence_spans() {
    let server = MockServer::start();
    // The first reply quotes something that is not in the passage: the client repairs once.
    let first = Arc::new(AtomicUsize::new(0));
    let seen = first.clone();
    server.respond_with(move |r| {
        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            return MockReply::json(json!({
                "question": "Q?", "answer": "A.",
                "evidence": [{"passage": 1, "quote": "words the passage never says"}]
            }));
        }
        MockReply::json(writer(r))
    });
    let (_tmp, dir) = project_with_judge(&server);
    let o = run_generate(&dir, &["--size", "10", "--seed", "3"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("Drafted 10 of 10 questions from 20 documents"));
    assert_eq!(server.request_count(), 11, "one repair");

    let text = std::fs::read_to_string(dir.join("draft.jsonl")).unwrap();
    let cases: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(cases.len(), 10);
    let kinds: Vec<&str> = cases
        .iter()
        .map(|c| c["metadata"]["synthesis"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        vec![
            "single_hop_specific",
            "single_hop_specific",
            "single_hop_specific",
            "single_hop_specific",
            "multi_hop_specific",
            "multi_hop_specific",
            "multi_hop_abstract",
            "negation",
            "distractor",
            "out_of_scope"
        ]
    );
    for (i, c) in cases.iter().enumerate() {
        assert_eq!(c["id"], format!("syn-{:04}", i + 1));
        assert_eq!(c["status"], "draft");
        assert_eq!(c["metadata"]["synthesis"]["model"], "writer-1");
        assert_eq!(c["metadata"]["synthesis"]["seed"], 3);
        let kind = kinds[i];
        if kind == "distractor" || kind == "out_of_scope" {
            assert_eq!(c["expected"]["behavior"], "abstain");
            assert!(c["expected"].get("gold_context").is_none());
            continue;
        }
        let gold = c["expected"]["gold_context"].as_array().unwrap();
        let want = if kind.starts_with("multi_hop") { 2 } else { 1 };
        assert_eq!(gold.len(), want, "{c}");
        for g in gold {
            // The span points at the quote in the document (character offsets).
            let doc = std::fs::read_to_string(dir.join("kb").join(g["doc_id"].as_str().unwrap()))
                .unwrap();
            let chars: Vec<char> = doc.chars().collect();
            let (s, e) = (
                g["metadata"]["span"][0].as_u64().unwrap() as usize,
                g["metadata"]["span"][1].as_u64().unwrap() as usize,
            );
            assert_eq!(chars[s..e].iter().collect::<String>(), g["text"]);
        }
        let relevant = c["expected"]["relevant"].as_array().unwrap();
        assert_eq!(
            relevant.len(),
            want,
            "multi-hop questions span two documents"
        );
    }

    // The same seed plans the same questions: everything is served from the judge cache.
    let again = run_generate(&dir, &["--size", "10", "--seed", "3"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(server.request_count(), 11);
    assert_eq!(
        std::fs::read_to_string(dir.join("draft.jsonl")).unwrap(),
        text
    );

    // `run` refuses drafts, naming the file and line.
    let run = oloproof(&dir, &["run", ".", "--set", "cases=draft.jsonl"]);
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    let err = stderr(&run);
    assert!(err.contains("draft.jsonl:1:"), "{err}");
    assert!(err.contains("status: draft"), "{err}");

    // The review listing.
    let review = oloproof(&dir, &["generate", "--review", "draft.jsonl"]);
    assert_eq!(review.status.code(), Some(0), "{}", stderr(&review));
    insta::assert_snapshot!(
        "generate_review",
        redact(&stdout(&review), dir.parent().unwrap())
    );
}

#[test]
fn a_question_that_cannot_be_drafted_is_reported_not_written() {
    let server = MockServer::start();
    server.respond_with(|r| {
        if user(r).starts_with("Style: negation") {
            // Evidence for nothing, twice: the repair fails too.
            return MockReply::json(json!({"question": "Q?", "answer": "A.", "evidence": []}));
        }
        MockReply::json(writer(r))
    });
    let (_tmp, dir) = project_with_judge(&server);
    let o = run_generate(&dir, &["--size", "10"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("Drafted 9 of 10"), "{err}");
    assert!(err.contains("syn-0008 (negation)"), "{err}");
    assert!(err.contains("must quote the passage"), "{err}");
    let lines = std::fs::read_to_string(dir.join("draft.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 9);
}

#[test]
fn usage_errors() {
    let server = MockServer::start();
    let (_tmp, dir) = project_with_judge(&server);
    let o = oloproof_env(
        &dir,
        &[
            "generate", "--docs", "kb", "--judge", "writr", "-o", "d.jsonl",
        ],
        &[(KEY_ENV, "k")],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("did you mean `writer`?"),
        "{}",
        stderr(&o)
    );
    let o = oloproof_env(
        &dir,
        &[
            "generate", "--docs", "nowhere", "--judge", "writer", "-o", "d.jsonl",
        ],
        &[(KEY_ENV, "k")],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot read nowhere"), "{}", stderr(&o));
    assert_eq!(server.request_count(), 0);
}
