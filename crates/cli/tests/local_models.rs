//! `provider: local` judges through the real binary: located configuration errors, model
//! errors that name the file (exit 2), the offline example run, and the calibration of the
//! claim-support heuristic against the committed human labels.

mod common;

use common::*;

fn write_config(dir: &std::path::Path, judge: &str) {
    let config = format!(
        "system:
  name: echo
  version: \"1\"
  rag:
    object: app:Echo
    depth: 3
    top_k: 2
    index_version: echo-1
    workers: 1
cases: cases.jsonl
judges:
  mini:
{judge}
evaluators:
  - {{type: claim_support, embedding_judge: mini}}
"
    );
    std::fs::write(dir.join("oloproof.yaml"), config).unwrap();
}

#[test]
fn local_judge_config_errors_are_located() {
    let (tmp, dir) = project("tests/systems/echo");
    write_config(&dir, "    provider: local\n    path: models/minilm");
    let o = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!("local_missing_kind", transcript(&o, tmp.path()));
    write_config(
        &dir,
        "    provider: local\n    kind: embeding\n    path: models/minilm",
    );
    let o = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!("local_unknown_kind", transcript(&o, tmp.path()));
}

#[cfg(feature = "local-models")]
#[test]
fn model_errors_name_the_file() {
    let (tmp, dir) = project("tests/systems/echo");
    write_config(
        &dir,
        "    provider: local\n    kind: embedding\n    path: models/minilm",
    );
    let o = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!("local_missing_path", transcript(&o, tmp.path()));
    std::fs::create_dir_all(dir.join("models/minilm")).unwrap();
    std::fs::write(
        dir.join("models/minilm/config.json"),
        r#"{"model_type": "bert", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
            "num_attention_heads": 2, "intermediate_size": 16, "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1, "max_position_embeddings": 16, "type_vocab_size": 2,
            "initializer_range": 0.02, "layer_norm_eps": 1e-12, "pad_token_id": 0}"#,
    )
    .unwrap();
    let o = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!("local_missing_tokenizer", transcript(&o, tmp.path()));
}

/// An `hf://` path is checked for its form when the config is validated and fetched only
/// when the model loads: a dry run touches no network (the endpoint here is a closed port),
/// a malformed path is a located error.
#[cfg(feature = "local-models")]
#[test]
fn hub_paths_are_not_fetched_by_a_dry_run() {
    let (tmp, dir) = project("tests/systems/echo");
    let cache = tmp.path().join("hf-cache");
    let cache = cache.to_str().unwrap();
    let env = [
        ("HF_ENDPOINT", "http://127.0.0.1:9"),
        ("HF_HUB_CACHE", cache),
        ("HF_HUB_OFFLINE", "0"),
    ];
    write_config(
        &dir,
        "    provider: local\n    kind: embedding\n    path: hf://org/mini-embedder@main",
    );
    let dry = oloproof_env(&dir, &["run", ".", "--dry-run"], &env);
    assert_eq!(
        dry.status.code(),
        Some(0),
        "{}",
        transcript(&dry, tmp.path())
    );
    assert!(
        stdout(&dry).contains("claim_support (judge mini, local embedding model)"),
        "{}",
        stdout(&dry)
    );
    assert!(!tmp.path().join("hf-cache").exists(), "nothing was fetched");
    // The real run tries the Hub when the model loads, and says it cannot reach it.
    let run = oloproof_env(&dir, &["run", "."], &env);
    let text = transcript(&run, tmp.path());
    assert_ne!(run.status.code(), Some(0), "{text}");
    assert!(text.contains("hf://org/mini-embedder"), "{text}");
    write_config(
        &dir,
        "    provider: local\n    kind: embedding\n    path: hf://org",
    );
    let bad = oloproof_env(&dir, &["run", ".", "--dry-run"], &env);
    let text = transcript(&bad, tmp.path());
    assert_eq!(bad.status.code(), Some(2), "{text}");
    assert!(text.contains("judges.mini.path"), "{text}");
}

#[cfg(not(feature = "local-models"))]
#[test]
fn built_without_local_models() {
    let (tmp, dir) = project("tests/systems/echo");
    write_config(
        &dir,
        "    provider: local\n    kind: embedding\n    path: models/minilm",
    );
    let o = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!("local_without_feature", transcript(&o, tmp.path()));
}

#[cfg(feature = "local-models")]
#[allow(clippy::print_stderr, reason = "the skip note is the point")]
fn minilm() -> Option<String> {
    match std::env::var("OLOPROOF_MINILM_DIR") {
        Ok(d) if !d.is_empty() => Some(d),
        _ => {
            assert!(
                std::env::var("OLOPROOF_REQUIRE_REFERENCES").as_deref() != Ok("1"),
                "OLOPROOF_REQUIRE_REFERENCES=1 but OLOPROOF_MINILM_DIR is not set"
            );
            eprintln!("note: skipping: OLOPROOF_MINILM_DIR is not set (scripts/test sets it)");
            None
        }
    }
}

#[cfg(feature = "local-models")]
#[test]
fn offline_example_and_claim_support_calibration() {
    let Some(model) = minilm() else {
        return;
    };
    let (tmp, dir) = project("examples/support_rag");
    let env = [("OLOPROOF_MINILM_DIR", model.as_str())];
    let zero = oloproof_env(
        &dir,
        &[
            "run",
            ".",
            "--config",
            "oloproof.local.yaml",
            "--threads",
            "0",
        ],
        &env,
    );
    assert_eq!(zero.status.code(), Some(2), "{}", stderr(&zero));
    // A dry run of local models: nothing is sent and nothing costs; no LLM calls are counted.
    let dry = oloproof_env(
        &dir,
        &["run", ".", "--config", "oloproof.local.yaml", "--dry-run"],
        &env,
    );
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    let out = stdout(&dry);
    for criterion in [
        "semantic_similarity",
        "question_similarity",
        "faithful_offline",
    ] {
        assert!(
            out.contains(&format!(
                "{criterion} (judge mini, local embedding model): runs in-process"
            )),
            "{out}"
        );
    }
    assert!(out.contains("Total: up to 0 judge calls"), "{out}");
    assert!(
        out.contains("3 criteria use only local models (not in the total)."),
        "{out}"
    );
    let o = oloproof_env(
        &dir,
        &[
            "run",
            ".",
            "--config",
            "oloproof.local.yaml",
            "--threads",
            "1",
        ],
        &env,
    );
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{}", transcript(&o, tmp.path()));
    for criterion in [
        "semantic_similarity",
        "question_similarity",
        "faithful_offline",
        "entity_grounding",
    ] {
        assert!(out.contains(criterion), "{out}");
    }
    assert!(
        !out.contains("missing ·") || out.contains("0 missing"),
        "{out}"
    );
    // The heuristic against the 38 human labels: the numbers README and the report quote.
    let o = oloproof_env(
        &dir,
        &[
            "calibrate",
            "--config",
            "oloproof.local.yaml",
            "--judge",
            "mini",
            "--evaluator",
            "claim_support",
            "--labels",
            "claim_support_labels.jsonl",
        ],
        &env,
    );
    insta::assert_snapshot!("claim_support_calibration", transcript(&o, tmp.path()));
}

/// `oloproof metric chunk_coherence` on real embeddings: chunks cut where the topic changes
/// score higher than the same sentences cut mid-topic.
#[cfg(feature = "local-models")]
#[test]
fn chunk_coherence_prefers_topic_boundaries() {
    let Some(model) = minilm() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let refunds = [
        "Refunds are accepted within 14 days of purchase.",
        "A refund goes back to the original payment card.",
        "Refund requests need the invoice number.",
    ];
    let shipping = [
        "Orders ship within three business days.",
        "Shipping is free for orders over 50 euros.",
        "Parcels are tracked from the warehouse to your door.",
    ];
    let good = serde_json::json!({"chunks": [refunds.join(" "), shipping.join(" ")]});
    let bad = serde_json::json!({"chunks": [
        [refunds[0], refunds[1]],
        [refunds[2], shipping[0]],
        [shipping[1], shipping[2]]
    ]});
    std::fs::write(tmp.path().join("good.jsonl"), format!("{good}\n")).unwrap();
    std::fs::write(tmp.path().join("bad.jsonl"), format!("{bad}\n")).unwrap();
    let value = |file: &str| -> serde_json::Value {
        let o = oloproof(
            tmp.path(),
            &[
                "metric",
                "chunk_coherence",
                "--input",
                file,
                "--model",
                &model,
                "--json",
                "--per-item",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let (g, b) = (value("good.jsonl"), value("bad.jsonl"));
    assert_eq!(g["items"][0]["within_pairs"], 4);
    assert_eq!(g["items"][0]["boundary_pairs"], 1);
    assert_eq!(b["items"][0]["boundary_pairs"], 2);
    let (gv, bv) = (g["value"].as_f64().unwrap(), b["value"].as_f64().unwrap());
    assert!(gv > bv, "good chunking {gv} should beat bad {bv}");
    // A missing model is a usage error naming the path.
    let o = oloproof(
        tmp.path(),
        &[
            "metric",
            "chunk_coherence",
            "--input",
            "good.jsonl",
            "--model",
            "nowhere",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nowhere"), "{}", stderr(&o));
}

/// `diagnose --intervention reranker --reranker judge:NAME`: the recorded candidates of the
/// failed cases reordered by a local cross-encoder (here a tiny random one: the plumbing, not
/// the quality), best score first, before context assembly.
#[cfg(feature = "local-models")]
#[test]
fn a_local_cross_encoder_reranks_for_the_reranker_intervention() {
    let (_tmp, dir) = project("examples/support_rag");
    let model = dir.join("models/ce");
    std::fs::create_dir_all(&model).unwrap();
    oloproof_local::testing::write_tiny_classifier(&model, &["relevant"], 3).unwrap();
    let config = std::fs::read_to_string(dir.join("oloproof.yaml")).unwrap();
    std::fs::write(
        dir.join("oloproof.yaml"),
        format!(
            "{config}\njudges:\n  ce: {{provider: local, kind: cross_encoder, path: models/ce}}\n"
        ),
    )
    .unwrap();
    let o = oloproof(&dir, &["run", ".", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let run: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let run_id = run["run_id"].as_str().unwrap().to_string();

    let bad = oloproof(
        &dir,
        &[
            "diagnose",
            &run_id,
            "--criterion",
            "answer_correct",
            "--intervention",
            "reranker",
            "--reranker",
            "judge:cee",
        ],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("did you mean `judge:ce`?"),
        "{}",
        stderr(&bad)
    );

    let o = oloproof(
        &dir,
        &[
            "diagnose",
            &run_id,
            "--criterion",
            "answer_correct",
            "--intervention",
            "reranker",
            "--reranker",
            "judge:ce",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let child = d["child_runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["role"].as_str().unwrap_or("").contains("judge:ce"))
        .unwrap_or_else(|| panic!("no reranker child run in {d}"));
    let child_id = child["run_id"].as_str().unwrap();
    let case_id = d["content"]["cases"][0]["case_id"].as_str().unwrap();
    let show = |run: &str| -> serde_json::Value {
        let o = oloproof(&dir, &["show", run, "--case", case_id, "--json"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let ids = |v: &serde_json::Value| -> Vec<String> {
        let mut ids: Vec<String> = v["trace"]["retrieval"]["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["doc_id"].as_str().unwrap().to_string())
            .collect();
        ids.sort();
        ids
    };
    let (parent, reranked) = (show(&run_id), show(child_id));
    assert_eq!(
        ids(&parent),
        ids(&reranked),
        "the same candidates, reordered"
    );
    let scores: Vec<f64> = reranked["trace"]["retrieval"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    assert!(scores.iter().all(|s| (0.0..=1.0).contains(s)), "{scores:?}");
}
