//! `oloproof monitor` drift (`monitor.drift`) through the real binary with the real
//! all-MiniLM-L6-v2 (`OLOPROOF_MINILM_DIR`, as `scripts/test` sets it): three days of
//! traffic whose first two share one question distribution (shipping and refunds) and whose
//! last asks about something else (accounts and passwords) — the MMD test finds drift on the
//! last day and not on the second; the regeneration rate of one intent leaves its band; the
//! probe set's vectors are stored on the first run, match on the second, and a tampered store
//! fires `probe_drift`. Bad `drift:` keys and judges are located errors (exit 2), which need
//! no model.

mod common;

use common::*;
use serde_json::{json, Value};

const SAME: &[&str] = &[
    "When will my order {n} arrive?",
    "Where is parcel {n} right now?",
    "Can I get a refund for order {n}?",
    "How long does shipping to Lyon take for order {n}?",
    "My package {n} is late, what happened?",
    "How do I return the shoes from order {n}?",
    "Was order {n} shipped with express delivery?",
    "The refund for order {n} has not reached my card yet",
];

const OTHER: &[&str] = &[
    "How do I reset the password of account {n}?",
    "I cannot log in to my account after {n} attempts",
    "How can I turn on two-factor authentication?",
    "Someone changed the email of my account {n}",
    "How do I delete my profile and all my data?",
    "My login code {n} never arrived by SMS",
    "Can I change my username to user{n}?",
    "Why was account {n} locked?",
];

fn config(drift: &str) -> String {
    format!(
        "judges:
  mini:
    provider: local
    kind: embedding
    path: ${{OLOPROOF_MINILM_DIR}}
    threads: 1
evaluators:
  - {{type: regex, criterion: no_refusal, must_not_match: '(?i)cannot help'}}
monitor:
  traffic: traffic.jsonl
  segments: [metadata.intent]
  window: {{size: 1d, rolling: 2d}}
  sampling:
    tiers:
      - {{evaluators: [no_refusal], rate: 1.0}}
{drift}"
    )
}

const DRIFT: &str = "  drift:
    embedder: mini
    reference: {window: first}
    permutations: 500
    alpha: 0.01
    seed: 3
    probes: {file: probes.jsonl}
    performance:
      - {signal: regeneration, by: metadata.intent, band: [0.0, 0.2]}
      - {criterion: no_refusal}
";

/// Three days from 2026-11-28, 24 traces a day, half `refund` and half `shipping`: days 0
/// and 1 ask [`SAME`], day 2 [`OTHER`]; on day 2 every `refund` trace is regenerated.
fn traffic() -> String {
    let mut out = String::new();
    for day in 0..3 {
        for k in 0..24usize {
            let pool = if day == 2 { OTHER } else { SAME };
            // Days 0 and 1 draw the same templates in a different order.
            let t = pool[(k * 3 + day * 5) % pool.len()];
            let n = 100 + (k * 37 + day * 11) % 900;
            let intent = if k % 2 == 0 { "refund" } else { "shipping" };
            let regenerated = (day == 2 && intent == "refund") || k == 7;
            let feedback: Vec<Value> = if regenerated {
                vec![json!({"name": "regenerated", "value": true})]
            } else {
                Vec::new()
            };
            let record = json!({
                "id": format!("d{day}-{k}"),
                "input": {"question": t.replace("{n}", &n.to_string())},
                "metadata": {"intent": intent},
                "answer": if k % 11 == 4 { "sorry, i cannot help with that" } else { "It is on its way." },
                "latency_ms": {"total": 500},
                "production": {
                    "trace_id": format!("{:032x}", day * 1000 + k + 1),
                    "timestamp": format!("2026-11-{:02}T{:02}:00:00Z", 28 + day, k),
                    "feedback": feedback,
                },
            });
            out.push_str(&record.to_string());
            out.push('\n');
        }
    }
    out
}

const PROBES: &str = r#"{"id": "p1", "text": "Where is my parcel?"}
{"id": "p2", "text": "How do I reset my password?"}
{"id": "p3", "text": "Refund policy for damaged items"}
{"text": "Opening hours of the Lyon store"}
"#;

fn project(config: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("project");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("oloproof.yaml"), config).unwrap();
    std::fs::write(dir.join("traffic.jsonl"), traffic()).unwrap();
    std::fs::write(dir.join("probes.jsonl"), PROBES).unwrap();
    (tmp, dir)
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

fn alert<'a>(v: &'a Value, kind: &str, subject: &str, segment: &str) -> &'a Value {
    v["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["type"] == kind && a["subject"] == subject && a["segment"] == segment)
        .unwrap_or_else(|| panic!("no alert {kind} {subject} for {segment}: {}", v["alerts"]))
}

#[cfg(feature = "local-models")]
#[test]
fn a_new_topic_drifts_and_the_same_distribution_does_not() {
    let Some(model) = minilm() else {
        return;
    };
    let env = [("OLOPROOF_MINILM_DIR", model.as_str())];
    let (tmp, dir) = project(&config(DRIFT));
    let o = oloproof_env(&dir, &["monitor", "."], &env);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    insta::assert_snapshot!("monitor_drift", transcript(&o, tmp.path()));
    // The first run stored the probe vectors.
    let stored: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("probes.vectors.json")).unwrap())
            .unwrap();
    assert_eq!(stored["dimension"], 384);
    assert_eq!(stored["probes"].as_array().unwrap().len(), 4);
    assert_eq!(stored["probes"][3]["id"], "line 4");

    // The second run: same numbers, and the probes compared with their stored vectors.
    let o = oloproof_env(&dir, &["monitor", ".", "--json"], &env);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let queries = v["drift"]["queries"].as_array().unwrap();
    assert_eq!(queries.len(), 2, "{queries:?}");
    let same = &queries[0];
    let other = &queries[1];
    assert_eq!(same["window"], "2026-11-29T00:00:00Z");
    assert_eq!(same["reference_window"], "2026-11-28T00:00:00Z");
    assert_eq!(same["status"], "no_drift", "{same}");
    assert!(same["p_adjusted"].as_f64().unwrap() > 0.01, "{same}");
    assert_eq!(other["window"], "2026-11-30T00:00:00Z");
    assert_eq!(other["status"], "drift", "{other}");
    // The smallest p-value 500 permutations can give: (0 + 1) / 501, doubled by Holm.
    assert!(
        other["p_value"].as_f64().unwrap() <= 1.0 / 501.0 + 1e-12,
        "{other}"
    );
    assert!(other["mmd2"].as_f64().unwrap() > 5.0 * same["mmd2"].as_f64().unwrap().abs());
    assert!(other["js_distance"].as_f64().unwrap() > same["js_distance"].as_f64().unwrap());
    assert_eq!(
        (
            other["reference_queries"].as_u64(),
            other["window_queries"].as_u64()
        ),
        (Some(24), Some(24))
    );
    let q = alert(&v, "query_drift", "queries", "all");
    assert_eq!(q["fired"], true, "{q}");
    assert_eq!(q["n"], 24);
    let probes = alert(&v, "probe_drift", "probes", "all");
    assert_eq!(probes["fired"], false, "{probes}");
    assert_eq!(v["drift"]["probes"]["status"], "compared");
    assert_eq!(v["drift"]["probes"]["compared"], 4);
    assert!(v["drift"]["probes"]["min_cosine"].as_f64().unwrap() > 0.9999);
    // The recorded report's page shows each query test with its p-values and why.
    let err = stderr(&o);
    let at = err.find("Recorded as mon_").expect("a recorded report") + "Recorded as ".len();
    let id = &err[at..at + 30];
    let page = dir.join("monitor.html");
    let o = oloproof(&dir, &["report", id, "-o", page.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<section id=\"drift\">"), "no drift section");
    for q in queries {
        let row = format!(
            "<td>{}</td><td>{}</td><td>all</td><td>yes</td><td>{}</td>",
            q["window"].as_str().unwrap(),
            q["reference_window"].as_str().unwrap(),
            q["status"].as_str().unwrap()
        );
        assert!(html.contains(&row), "no row {row}");
        assert!(html.contains(&oloproof_report::html::escape(q["why"].as_str().unwrap())));
    }
    assert!(
        html.contains("<h3>Probe drift</h3>")
            && html.contains("<h3>Performance drift: regeneration by metadata.intent</h3>")
    );
    // Regenerations of `refund` on the last day: 12 of 12, the band's [0, 0.2] is left.
    let regen = alert(&v, "performance_drift", "regeneration", "intent=refund");
    assert_eq!(regen["fired"], true, "{regen}");
    let regen = alert(&v, "performance_drift", "regeneration", "intent=shipping");
    assert_eq!(regen["fired"], false, "{regen}");
    // The refusal rate is the same every day: inside the reference's control band.
    for segment in ["intent=refund", "intent=shipping"] {
        let a = alert(&v, "performance_drift", "no_refusal", segment);
        assert_eq!(a["fired"], false, "{a}");
    }

    // A stored vector swapped for another probe's: that probe drifts.
    let mut stored = stored;
    let swapped = stored["probes"][1]["vector"].clone();
    stored["probes"][0]["vector"] = swapped;
    std::fs::write(dir.join("probes.vectors.json"), stored.to_string()).unwrap();
    let o = oloproof_env(&dir, &["monitor", ".", "--json"], &env);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let probes = alert(&v, "probe_drift", "probes", "all");
    assert_eq!(probes["fired"], true, "{probes}");
    let below = v["drift"]["probes"]["below"].as_array().unwrap();
    assert_eq!(below.len(), 1);
    assert_eq!(below[0][0], "p1");
    assert!(below[0][1].as_f64().unwrap() < 0.9);
}

/// The config with an OpenAI judge in place of the local one (these errors need no model).
fn remote(drift: &str) -> String {
    config(drift).replace(
        "  mini:\n    provider: local\n    kind: embedding\n    path: ${OLOPROOF_MINILM_DIR}\n    threads: 1\n",
        "  mini:\n    provider: openai\n    base_url: http://127.0.0.1:9/v1\n    model: text-embedding-3-small\n",
    )
}

#[test]
fn bad_drift_config_is_located() {
    let (tmp, dir) = project(&remote(
        &DRIFT.replace("permutations: 500", "permutatons: 500"),
    ));
    let o = oloproof(&dir, &["monitor", "."]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    insta::assert_snapshot!("monitor_drift_bad_key", transcript(&o, tmp.path()));

    // An embedder that is not a local embedding model: located at `embedder`.
    let (tmp, dir) = project(&remote(DRIFT));
    let o = oloproof(&dir, &["monitor", "."]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    insta::assert_snapshot!("monitor_drift_not_local", transcript(&o, tmp.path()));

    let (tmp, dir) = project(&remote(
        &DRIFT.replace("signal: regeneration", "signal: regenerations"),
    ));
    let o = oloproof(&dir, &["monitor", "."]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let text = transcript(&o, tmp.path());
    assert!(text.contains("unknown signal `regenerations`"), "{text}");
    assert!(text.contains("did you mean `regeneration`?"), "{text}");
    assert!(text.contains("oloproof.yaml:"), "{text}");

    let (tmp, dir) = project(&remote(
        &DRIFT.replace("{window: first}", "{window: yesterday}"),
    ));
    let o = oloproof(&dir, &["monitor", "."]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let text = transcript(&o, tmp.path());
    assert!(
        text.contains("unknown reference window `yesterday`"),
        "{text}"
    );
    assert!(text.contains("oloproof.yaml:"), "{text}");
}
