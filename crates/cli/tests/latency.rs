//! Latency, TTFT, tokens and cost as criteria, through the real binary, on a pipeline system
//! whose generation sleeps a configured number of milliseconds (`tests/fixtures/latency`):
//! the run's summary, seed 000's contract as one gate file, a fully cached re-run (latency
//! excluded `cached`, never 0) and `compare` guardrails ("not more than 10 % worse", paired by
//! case). Measured milliseconds vary from run to run: the snapshots redact every number on a
//! latency line, and the assertions are on decisions, exact token counts and exact costs.

mod common;

use std::path::{Path, PathBuf};

use common::*;

const CASES: usize = 200;

/// The fixture in a temporary folder, with `CASES` cases.
fn fixture() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("latency");
    std::fs::create_dir_all(&dir).unwrap();
    let src = repo().join("crates/cli/tests/fixtures/latency");
    for f in [
        "app.py",
        "oloproof.yaml",
        "seed000_gate.yaml",
        "guardrail.yaml",
    ] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    let questions = [
        "how long do refunds take",
        "how long is refund review",
        "how long does shipping take",
        "are returns free",
    ];
    let cases: String = (0..CASES)
        .map(|i| {
            format!(
                "{{\"id\": \"c{i:03}\", \"input\": {{\"question\": \"{} (case {i})\"}}, \"expected\": {{\"answer\": \"days\"}}}}\n",
                questions[i % questions.len()]
            )
        })
        .collect();
    std::fs::write(dir.join("cases.jsonl"), cases).unwrap();
    (tmp, dir)
}

fn run(dir: &Path, extra: &[&str]) -> (String, std::process::Output) {
    let mut args = vec!["run", "."];
    args.extend_from_slice(extra);
    let o = oloproof(dir, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    (run_id(&stdout(&o)), o)
}

/// Every decimal number on a line naming a latency or TTFT criterion is `#`: they are
/// measured (counts, whole thresholds and the other lines are kept). With sleeps of 5 and
/// 40 ms every measured value prints with decimals (four significant digits, below 1,000 ms).
fn redact_ms(text: &str) -> String {
    text.lines()
        // The comparison's descriptive stage deltas are all measured times: dropped.
        .filter(|line| !line.starts_with("  latency "))
        .map(|line| {
            let measured = ["latency_", "ttft_", "p95-latency"]
                .iter()
                .any(|w| line.contains(w));
            if !measured {
                return line.to_string();
            }
            let chars: Vec<char> = line.chars().collect();
            let mut out = String::new();
            let mut i = 0;
            while i < chars.len() {
                let start = i;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
                let decimal = i > start
                    && i + 1 < chars.len()
                    && chars[i] == '.'
                    && chars[i + 1].is_ascii_digit();
                if decimal {
                    i += 1;
                    while i < chars.len() && chars[i].is_ascii_digit() {
                        i += 1;
                    }
                    out.push('#');
                } else if i > start {
                    out.extend(&chars[start..i]);
                } else {
                    out.push(chars[i]);
                    i += 1;
                }
            }
            out
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn summary(dir: &Path, run: &str) -> serde_json::Value {
    let o = oloproof(dir, &["show", run, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v.get("summary").cloned().unwrap_or(v)
}

#[test]
fn latency_criteria_gate_and_a_fully_cached_rerun() {
    let (tmp, dir) = fixture();
    let (first, o) = run(&dir, &[]);
    insta::assert_snapshot!("latency_run", redact_ms(&transcript(&o, tmp.path())));
    let s = summary(&dir, &first);
    let latency = criterion(&s, "latency_total_p95");
    assert_eq!(latency["kind"], serde_json::json!({"quantile": 0.95}));
    assert_eq!(latency["observed"], CASES as u64);
    assert_eq!(latency["interval_method"], "order_statistic");
    let [lo, hi] = [&latency["interval"][0], &latency["interval"][1]].map(|v| v.as_f64().unwrap());
    let p95 = latency["value"].as_f64().unwrap();
    assert!(lo <= p95 && p95 <= hi && p95 >= 5.0, "{latency}");
    // TTFT is what the generation reported: half the sleep, exactly.
    let ttft = criterion(&s, "ttft_p95");
    assert_eq!(
        (ttft["value"].as_f64(), ttft["interval"].clone()),
        (Some(2.5), serde_json::json!([2.5, 2.5]))
    );
    // Tokens: 100 + the question's length in, 10 out, by the generation alone.
    let tokens = criterion(&s, "tokens");
    assert_eq!(tokens["kind"], "amount");
    assert!(tokens["value"].as_f64().unwrap() > 110.0);
    // Cost: small's prices; a p99 of 200 cases has no distribution-free interval (368 needed).
    let cost_p99 = criterion(&s, "cost_p99");
    assert_eq!(cost_p99["interval"], serde_json::Value::Null);
    assert!(
        cost_p99["no_interval"]
            .as_str()
            .unwrap()
            .contains("at least 368"),
        "{cost_p99}"
    );

    // Seed 000's contract, one gate file: passes.
    let gate = oloproof(&dir, &["gate", &first, "--policy", "seed000_gate.yaml"]);
    assert_eq!(gate.status.code(), Some(0), "{}", stdout(&gate));
    insta::assert_snapshot!(
        "latency_gate_seed000",
        redact_ms(&transcript(&gate, tmp.path()))
    );
    // A p95 bound it cannot meet blocks, and a p99 of too few cases has no bound to judge.
    std::fs::write(
        dir.join("strict.yaml"),
        "thresholds:\n  - {criterion: latency_total_p95, max: 1, on: upper_bound}\n  - {criterion: cost_p99, max: 1, on: upper_bound}\n  - {criterion: cost, max: 0.001}\n",
    )
    .unwrap();
    let strict = oloproof(&dir, &["gate", &first, "--policy", "strict.yaml", "--json"]);
    assert_eq!(strict.status.code(), Some(3), "{}", stdout(&strict));
    let v: serde_json::Value = serde_json::from_slice(&strict.stdout).unwrap();
    assert_eq!(v["thresholds"][0]["reasons"][0], "above_max");
    assert_eq!(v["thresholds"][1]["reasons"][0], "no_interval");
    assert_eq!(v["thresholds"][2]["verdict"], "PASS");
    // A latency criterion is bounded from above: `min:` is a located error.
    std::fs::write(
        dir.join("wrong.yaml"),
        "thresholds:\n  - {criterion: latency_total_p95, min: 1500}\n",
    )
    .unwrap();
    let wrong = oloproof(&dir, &["gate", &first, "--policy", "wrong.yaml"]);
    assert_eq!(wrong.status.code(), Some(2));
    insta::assert_snapshot!("latency_gate_min_refused", transcript(&wrong, tmp.path()));

    // A fully cached re-run measures nothing: latency and TTFT are excluded `cached` on every
    // case (never 0), tokens and cost are what the cached replies reported.
    let (second, _) = run(&dir, &[]);
    let s = summary(&dir, &second);
    let latency = criterion(&s, "latency_total_p95");
    assert_eq!(
        (latency["observed"].as_u64(), latency["excluded"].as_u64()),
        (Some(0), Some(CASES as u64))
    );
    assert_eq!(latency["excluded_reasons"]["cached"], CASES as u64);
    assert_eq!(latency["value"], serde_json::Value::Null);
    assert_eq!(
        criterion(&s, "ttft_p95")["excluded_reasons"]["cached"],
        CASES as u64
    );
    assert_eq!(criterion(&s, "cost")["observed"], CASES as u64);
    let gate = oloproof(
        &dir,
        &["gate", &second, "--policy", "seed000_gate.yaml", "--json"],
    );
    assert_eq!(gate.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&gate.stdout).unwrap();
    assert_eq!(v["thresholds"][1]["reasons"][0], "no_observed_value");
}

#[test]
fn compare_guards_latency_and_cost_paired_by_case() {
    let (tmp, dir) = fixture();
    let (fast, _) = run(
        &dir,
        &["--no-cache", "--set", "system.rag.params.sleep_ms=5"],
    );
    let (slow, _) = run(
        &dir,
        &["--no-cache", "--set", "system.rag.params.sleep_ms=40"],
    );
    // Slower candidate: the p95 ratio's interval lies far above 1.10.
    let o = oloproof(
        &dir,
        &["compare", &slow, &fast, "--policy", "guardrail.yaml"],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    insta::assert_snapshot!(
        "latency_compare_slower",
        redact_ms(&transcript(&o, tmp.path()))
    );
    let json = oloproof(
        &dir,
        &[
            "compare",
            &slow,
            &fast,
            "--policy",
            "guardrail.yaml",
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let d = &v["decisions"];
    assert_eq!(
        (d[0]["verdict"].as_str(), d[0]["reason"].as_str()),
        (Some("FAIL"), Some("ratio_above_limit"))
    );
    assert!(
        d[0]["ratio_interval"][0].as_f64().unwrap() > 2.0,
        "{}",
        d[0]
    );
    // Same prices and tokens: the cost ratio is exactly 1 on every resample.
    assert_eq!(
        (d[1]["verdict"].as_str(), d[1]["ratio_interval"].clone()),
        (Some("PASS"), serde_json::json!([1.0, 1.0]))
    );
    // Faster candidate: passes the latency guardrail.
    let o = oloproof(
        &dir,
        &[
            "compare",
            &fast,
            &slow,
            "--policy",
            "guardrail.yaml",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["decisions"][0]["reason"], "ratio_below_limit");
    // A costlier model fails the cost guardrail (16.7× the price).
    let (large, _) = run(&dir, &["--set", "system.rag.params.model=large"]);
    let o = oloproof(
        &dir,
        &[
            "compare",
            &large,
            &fast,
            "--policy",
            "guardrail.yaml",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["decisions"][1]["reason"], "ratio_above_limit");
    // That run re-used the cached retrievals (only the generation's identity changed), so its
    // total latency is excluded `partly_cached` on every case: nothing to pair, and the
    // decision says how to measure it.
    let latency = &v["decisions"][0];
    assert_eq!(latency["verdict"], "INSUFFICIENT_EVIDENCE");
    assert!(
        latency["detail"][0]
            .as_str()
            .unwrap()
            .contains("--no-cache"),
        "{latency}"
    );
    // A guardrail on a quality criterion, or a points margin on a latency, is refused.
    std::fs::write(
        dir.join("bad.yaml"),
        "decisions:\n  - {name: q, kind: non_inferiority, criterion: latency_total_p95, margin_points: 5}\n",
    )
    .unwrap();
    let o = oloproof(&dir, &["compare", &slow, &fast, "--policy", "bad.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    insta::assert_snapshot!("latency_compare_points_refused", transcript(&o, tmp.path()));
}

/// A worker's start-up (here a 1.5 s `__init__`, as a model loading) is not the latency of the
/// stage that happened to start it: every stage of every case is timed from a started worker.
/// Each case's recorded stage latencies and error (`null` when none), read from the store.
fn recorded_latencies(
    dir: &Path,
) -> Vec<(
    serde_json::Map<String, serde_json::Value>,
    serde_json::Value,
)> {
    let script = "import json, sqlite3, sys\n\
        c = sqlite3.connect(sys.argv[1])\n\
        rows = c.execute('SELECT trace_json FROM run_cases')\n\
        print(json.dumps([[json.loads(t)['latency_ms'], json.loads(t).get('error')] for (t,) in rows]))\n";
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(dir.join(".oloproof/oloproof.db"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_workers_start_up_is_not_a_stages_latency() {
    let (_tmp, dir) = fixture();
    let o = oloproof_env(
        &dir,
        &["run", ".", "--set", "system.rag.workers=2", "--no-cache"],
        &[("TIMED_START_S", "1.5")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let latencies = recorded_latencies(&dir);
    assert_eq!(latencies.len(), CASES);
    for (stages, _) in &latencies {
        assert!(stages.contains_key("rewrite"), "{stages:?}");
        for (stage, ms) in stages {
            let ms = ms.as_f64().unwrap();
            assert!(ms < 1000.0, "{stage} took {ms} ms: {stages:?}");
        }
    }
}

/// A worker that crashed is restarted before the next stage's clock starts: the case after
/// the crash does not carry the new worker's start-up (1.5 s here) in its first stage.
#[test]
fn a_restart_after_a_crash_is_not_a_stages_latency() {
    let (_tmp, dir) = fixture();
    let o = oloproof_env(
        &dir,
        &[
            "run",
            ".",
            "--set",
            "system.rag.workers=1",
            "--no-cache",
            "--max-error-rate",
            "1",
        ],
        &[("TIMED_START_S", "1.5"), ("TIMED_CRASH", "(case 7)")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let latencies = recorded_latencies(&dir);
    assert_eq!(latencies.len(), CASES);
    let crashed: Vec<&serde_json::Value> = latencies
        .iter()
        .map(|(_, error)| error)
        .filter(|e| !e.is_null())
        .collect();
    assert_eq!(crashed.len(), 1, "{crashed:?}");
    assert_eq!(crashed[0]["kind"], "crash", "{crashed:?}");
    for (stages, error) in &latencies {
        if !error.is_null() {
            continue;
        }
        for (stage, ms) in stages {
            let ms = ms.as_f64().unwrap();
            assert!(ms < 1000.0, "{stage} took {ms} ms: {stages:?}");
        }
    }
}
