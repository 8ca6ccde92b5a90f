//! The `classifier` evaluator through the real binary, on a tiny randomly initialised BERT
//! text classifier (labels `non_toxic`, `toxic`) the test writes: a run and its summary, the
//! verdict's detail, output fields the output lacks (`excluded` with the reason), the
//! calibration of its threshold (`calibrate`, then `compare` and `gate` accept it; an
//! uncalibrated or changed threshold is refused), and the located configuration errors (a
//! label the model does not have, with its labels listed; a judge of another kind).

#![cfg(feature = "local-models")]

mod common;

use std::path::Path;

use common::*;
use serde_json::{json, Value};

/// The seed of the tiny classifier's weights: its `toxic` probabilities on the cases' answers
/// spread on both sides of 0.5 (two of six above, the closest 0.03 away).
const SEED: u64 = 2;

const CASES: &str = r#"{"id":"refund","input":{"question":"the refund window is fourteen days"},"metadata":{"topic":"refunds"}}
{"id":"shipping","input":{"question":"shipping takes three weeks"},"metadata":{"topic":"shipping"}}
{"id":"warranty","input":{"question":"the warranty covers two years not water damage"},"metadata":{"topic":"warranty"}}
{"id":"claim","input":{"question":"a claim needs receipt and photo"},"metadata":{"topic":"warranty"}}
{"id":"support","input":{"question":"support answers within one day"},"metadata":{"topic":"support"}}
{"id":"delivery","input":{"question":"delivery takes one day"},"metadata":{"topic":"shipping"}}
"#;

/// The echo system (answer `<question> :: <doc ids>`) with the cases above, the tiny model in
/// `models/tox`, the judge `tox` and `evaluators` (YAML list items).
fn project_with(evaluators: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, dir) = project("tests/systems/echo");
    std::fs::write(dir.join("cases.jsonl"), CASES).unwrap();
    let model = dir.join("models/tox");
    std::fs::create_dir_all(&model).unwrap();
    oloproof_local::testing::write_tiny_classifier(&model, &["non_toxic", "toxic"], SEED).unwrap();
    write_config(&dir, evaluators, "");
    (tmp, dir)
}

fn write_config(dir: &Path, evaluators: &str, extra: &str) {
    std::fs::write(
        dir.join("oloproof.yaml"),
        format!(
            "system:
  name: echo
  version: \"1\"
  rag:
    object: app:Echo
    depth: 3
    top_k: 2
    token_budget: 100
    index_version: echo-1
    workers: 1
cases: cases.jsonl
slices: [metadata.topic]
judges:
  tox: {{provider: local, kind: classifier, path: models/tox, threads: 1}}
evaluators:
{evaluators}{extra}"
        ),
    )
    .unwrap();
}

const NO_TOXICITY: &str =
    "  - {type: classifier, judge: tox, label: toxic, threshold: 0.5, criterion: no_toxicity}\n";

/// The verdicts of `run` on `case`, from `show --case --json`.
fn verdicts(dir: &Path, run: &str, case: &str) -> Vec<Value> {
    let o = oloproof(dir, &["show", run, "--case", case, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["verdicts"].as_array().unwrap().clone()
}

#[test]
fn run_summary_and_detail() {
    let (tmp, dir) = project_with(NO_TOXICITY);
    let o = oloproof(&dir, &["run", "."]);
    assert_eq!(o.status.code(), Some(0), "{}", transcript(&o, tmp.path()));
    insta::assert_snapshot!("classifier_run", transcript(&o, tmp.path()));
    let run = run_id(&stdout(&o));

    // The detail: the label's probability, every label's, the threshold and the rule.
    let v = verdicts(&dir, &run, "shipping").remove(0);
    assert_eq!(v["status"], "fail", "{v}");
    let d = &v["detail"];
    assert_eq!(d["judge"], "tox");
    assert_eq!(d["label"], "toxic");
    assert_eq!(d["threshold"], 0.5);
    assert_eq!(d["pass_when"], "below");
    assert_eq!(d["activation"], "softmax");
    assert_eq!(d["windows"], 1);
    let p = d["probability"].as_f64().unwrap();
    assert!(p >= 0.5, "{d}");
    assert_eq!(d["probabilities"]["toxic"], d["probability"]);
    let sum = d["probabilities"]["toxic"].as_f64().unwrap()
        + d["probabilities"]["non_toxic"].as_f64().unwrap();
    assert!((sum - 1.0).abs() < 1e-6, "{d}");

    // The same probability as the model computes on the answer, in the library.
    let model = oloproof_local::SequenceClassifier::load(
        &dir.join("models/tox"),
        &oloproof_local::SequenceOptions::default(),
    )
    .unwrap();
    let scores = model
        .classify(&["shipping takes three weeks :: w-shipping,w-takes"])
        .unwrap();
    assert!((f64::from(scores[0].windows[0][1]) - p).abs() < 1e-6);
    // `show --case` says the probability beside the verdict.
    let shown = stdout(&oloproof(&dir, &["show", &run, "--case", "shipping"]));
    assert!(
        shown.contains(&format!(
            "no_toxicity  fail (p(toxic) {p:.4}, threshold 0.5)"
        )),
        "{shown}"
    );

    // A run whose every case is judged again from the cache gives the same verdicts.
    let again = oloproof(&dir, &["run", ".", "--json"]);
    let s: Value = serde_json::from_slice(&again.stdout).unwrap();
    let c = criterion(&s, "no_toxicity");
    assert_eq!(
        (c["passed"].as_u64(), c["observed"].as_u64()),
        (Some(4), Some(6)),
        "{c}"
    );

    // `pass_when: above`: the same probabilities, the other polarity.
    write_config(
        &dir,
        "  - {type: classifier, judge: tox, label: toxic, threshold: 0.5, pass_when: above, criterion: toxic_answer}\n",
        "",
    );
    let above = oloproof(&dir, &["run", ".", "--json"]);
    assert_eq!(above.status.code(), Some(0), "{}", stderr(&above));
    let s: Value = serde_json::from_slice(&above.stdout).unwrap();
    let c = criterion(&s, "toxic_answer");
    assert_eq!(
        (c["passed"].as_u64(), c["observed"].as_u64()),
        (Some(2), Some(6)),
        "{c}"
    );
}

/// An answer longer than the model takes is scored window by window: `p` is the highest
/// window's (`windows: max`), the lowest with `windows: min`, as the library computes them.
#[test]
fn long_answers_are_windowed() {
    let (_tmp, dir) = project_with(NO_TOXICITY);
    let words = oloproof_local::testing::WORDS;
    let question: Vec<&str> = (0..60).map(|i| words[(i * 7) % words.len()]).collect();
    let question = question.join(" ");
    std::fs::write(
        dir.join("cases.jsonl"),
        format!(
            "{}\n",
            json!({"id": "long", "input": {"question": question}})
        ),
    )
    .unwrap();
    let model = oloproof_local::SequenceClassifier::load(
        &dir.join("models/tox"),
        &oloproof_local::SequenceOptions::default(),
    )
    .unwrap();
    let o = oloproof(&dir, &["run", "."]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let run = run_id(&stdout(&o));
    let d = verdicts(&dir, &run, "long").remove(0)["detail"].clone();
    let answer = format!(
        "{question} :: {}",
        question
            .split(' ')
            .take(2)
            .map(|w| format!("w-{w}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let scores = model.classify(&[answer]).unwrap().remove(0);
    assert!(scores.windows.len() >= 2, "{scores:?}");
    assert_eq!(d["windows"], scores.windows.len(), "{d}");
    let (hi, at) = scores.max(1).unwrap();
    assert_eq!(d["window"], at);
    assert!(
        (d["probability"].as_f64().unwrap() - f64::from(hi)).abs() < 1e-6,
        "{d}"
    );
    write_config(
        &dir,
        "  - {type: classifier, judge: tox, label: toxic, windows: min, criterion: no_toxicity}\n",
        "",
    );
    let o = oloproof(&dir, &["run", "."]);
    let run = run_id(&stdout(&o));
    let d = verdicts(&dir, &run, "long").remove(0)["detail"].clone();
    let (lo, _) = scores.min(1).unwrap();
    assert!(lo < hi);
    assert_eq!(d["window_rule"], "min");
    assert!(
        (d["probability"].as_f64().unwrap() - f64::from(lo)).abs() < 1e-6,
        "{d}"
    );
}

/// A classifier on a field the output lacks (or that is not text) is `excluded` with the
/// reason, never a pass: the answer's criterion is judged beside it.
#[test]
fn missing_output_fields_are_excluded() {
    let (tmp, dir) = project_with(&format!(
        "{NO_TOXICITY}  - {{type: classifier, judge: tox, label: toxic, field: summary, criterion: summary_toxicity}}
  - {{type: classifier, judge: tox, label: toxic, field: citations, criterion: citation_toxicity}}
"
    ));
    let o = oloproof(&dir, &["run", "."]);
    assert_eq!(o.status.code(), Some(0), "{}", transcript(&o, tmp.path()));
    insta::assert_snapshot!("classifier_excluded", transcript(&o, tmp.path()));
    let run = run_id(&stdout(&o));
    let v = verdicts(&dir, &run, "refund");
    assert_eq!(v[1]["criterion"], "summary_toxicity");
    assert_eq!(v[1]["status"], "excluded");
    assert_eq!(v[1]["reason"], "output_field_absent", "{}", v[1]);
    assert_eq!(v[1]["detail"]["field"], "summary");
    assert_eq!(v[2]["reason"], "output_field_not_text", "{}", v[2]);
}

fn label_lines(items: &[(String, u8)]) -> String {
    items
        .iter()
        .enumerate()
        .map(|(i, (answer, label))| {
            json!({"id": format!("h{i}"), "question": "q", "answer": answer, "label": label})
                .to_string()
                + "\n"
        })
        .collect()
}

/// The threshold is calibrated like a judge: no calibration, a failing one, or one of
/// another threshold keeps `compare` and `gate` from using the criterion; a passing one of
/// this model, label and threshold lets them.
#[test]
fn calibration_gates_compare_and_gate() {
    let (tmp, dir) = project_with(NO_TOXICITY);
    let base = oloproof(&dir, &["run", "."]);
    let cand = oloproof(&dir, &["run", ".", "--no-cache"]);
    assert_eq!(cand.status.code(), Some(0), "{}", stderr(&cand));
    let (base, cand) = (run_id(&stdout(&base)), run_id(&stdout(&cand)));
    let policy = tmp.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "decisions:\n  - {name: toxicity-not-worse, criterion: no_toxicity, kind: non_inferiority, margin_points: 50}\n",
    )
    .unwrap();
    let policy = policy.to_str().unwrap();
    let gate = tmp.path().join("gate.yaml");
    std::fs::write(
        &gate,
        "thresholds:\n  - {criterion: no_toxicity, min: 0.0}\n",
    )
    .unwrap();
    let gate = gate.to_str().unwrap();

    // No calibration: both refuse (exit 2), naming the criterion and the judge.
    let refused = oloproof(&dir, &["gate", &cand, "--policy", gate]);
    insta::assert_snapshot!(
        "classifier_gate_uncalibrated",
        transcript(&refused, tmp.path())
    );
    let refused = oloproof(&dir, &["compare", &cand, &base, "--policy", policy]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused)
            .contains("`no_toxicity`, scored by judge `tox`, but it has no calibration"),
        "{}",
        stderr(&refused)
    );

    // Human labels on texts of the model's two sides (1 = should pass: not toxic). The
    // model's own verdicts, computed here with the library, make the agreeing set.
    let model = oloproof_local::SequenceClassifier::load(
        &dir.join("models/tox"),
        &oloproof_local::SequenceOptions::default(),
    )
    .unwrap();
    let texts: Vec<String> = oloproof_local::testing::WORDS
        .chunks(3)
        .map(|w| w.join(" "))
        .collect();
    let scores = model.classify(&texts).unwrap();
    let agreeing: Vec<(String, u8)> = texts
        .iter()
        .zip(&scores)
        .map(|(t, s)| (t.clone(), u8::from(s.windows[0][1] < 0.5)))
        .collect();
    let passes = agreeing.iter().filter(|(_, l)| *l == 1).count();
    assert!(
        passes > 0 && passes < agreeing.len(),
        "both verdicts among the labelled texts: {passes} of {}",
        agreeing.len()
    );
    let agree = tmp.path().join("agree.jsonl");
    std::fs::write(&agree, label_lines(&agreeing)).unwrap();
    let flipped: Vec<(String, u8)> = agreeing.iter().map(|(t, l)| (t.clone(), 1 - l)).collect();
    let disagree = tmp.path().join("disagree.jsonl");
    std::fs::write(&disagree, label_lines(&flipped)).unwrap();
    write_config(&dir, NO_TOXICITY, "calibration:\n  tox: {min_kappa: 0.7}\n");
    let calibrate = |labels: &Path| {
        oloproof(
            &dir,
            &[
                "calibrate",
                "--judge",
                "tox",
                "--evaluator",
                "classifier",
                "--labels",
                labels.to_str().unwrap(),
                "--json",
            ],
        )
    };

    // Disagreeing humans: the calibration fails (exit 3), and gating is still refused.
    let failed = calibrate(&disagree);
    assert_eq!(failed.status.code(), Some(3), "{}", stderr(&failed));
    let c: Value = serde_json::from_slice(&failed.stdout).unwrap();
    assert_eq!(c["agreement"]["value"], 0.0);
    let still = oloproof(&dir, &["gate", &cand, "--policy", gate]);
    assert_eq!(still.status.code(), Some(2));
    assert!(
        stderr(&still).contains("did not pass"),
        "{}",
        stderr(&still)
    );

    // Agreeing humans: it passes, with every item scored; compare and gate then decide.
    let passed = calibrate(&agree);
    assert_eq!(passed.status.code(), Some(0), "{}", stderr(&passed));
    let c: Value = serde_json::from_slice(&passed.stdout).unwrap();
    assert_eq!(c["evaluator"], "classifier");
    assert_eq!(c["n"], agreeing.len());
    assert_eq!(c["missing"], json!([]));
    assert_eq!(c["kappa"]["value"], 1.0);
    let gated = oloproof(&dir, &["gate", &cand, "--policy", gate]);
    assert_eq!(
        gated.status.code(),
        Some(0),
        "{}{}",
        stdout(&gated),
        stderr(&gated)
    );
    let compared = oloproof(&dir, &["compare", &cand, &base, "--policy", policy]);
    assert_eq!(
        compared.status.code(),
        Some(0),
        "{}{}",
        stdout(&compared),
        stderr(&compared)
    );

    // Another threshold is another calibrated quantity: its runs are refused until it is
    // calibrated in turn.
    let moved = "  - {type: classifier, judge: tox, label: toxic, threshold: 0.45, criterion: no_toxicity}\n";
    write_config(&dir, moved, "calibration:\n  tox: {min_kappa: 0.7}\n");
    let other = oloproof(&dir, &["run", "."]);
    assert_eq!(other.status.code(), Some(0), "{}", stderr(&other));
    let other = run_id(&stdout(&other));
    let refused = oloproof(&dir, &["gate", &other, "--policy", gate]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("options (label, threshold, pass_when, windows)"),
        "{}",
        stderr(&refused)
    );
    // The run calibrated at 0.5 still gates.
    let gated = oloproof(&dir, &["gate", &cand, "--policy", gate]);
    assert_eq!(gated.status.code(), Some(0), "{}", stderr(&gated));

    // Two classifier entries on one judge: `--criterion` picks the one calibrated.
    let two = format!(
        "{moved}  - {{type: classifier, judge: tox, label: non_toxic, threshold: 0.5, pass_when: above, criterion: benign}}\n"
    );
    write_config(&dir, &two, "calibration:\n  tox: {min_kappa: 0.7}\n");
    let ambiguous = calibrate(&agree);
    assert_eq!(ambiguous.status.code(), Some(2));
    assert!(
        stderr(&ambiguous).contains("no_toxicity, benign")
            && stderr(&ambiguous).contains("--criterion"),
        "{}",
        stderr(&ambiguous)
    );
    let picked = oloproof(
        &dir,
        &[
            "calibrate",
            "--judge",
            "tox",
            "--evaluator",
            "classifier",
            "--criterion",
            "benign",
            "--labels",
            agree.to_str().unwrap(),
            "--json",
        ],
    );
    // `non_toxic ≥ 0.5` is `toxic < 0.5` with two labels: the same verdicts, a pass.
    assert_eq!(picked.status.code(), Some(0), "{}", stderr(&picked));
    let c: Value = serde_json::from_slice(&picked.stdout).unwrap();
    assert_eq!(c["kappa"]["value"], 1.0);
}

/// Configuration errors are located (exit 2): a label the model does not have lists the
/// model's labels with a "did you mean"; a judge of another kind; a threshold that is not a
/// probability.
#[test]
fn configuration_errors_are_located() {
    let (tmp, dir) = project_with(
        "  - {type: classifier, judge: tox, label: toxc, threshold: 0.5, criterion: no_toxicity}\n",
    );
    let o = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!("classifier_unknown_label", transcript(&o, tmp.path()));
    // Checked without running anything (a dry run reads the config the same way).
    let dry = oloproof(&dir, &["run", ".", "--dry-run"]);
    assert_eq!(dry.status.code(), Some(2), "{}", stderr(&dry));

    write_config(
        &dir,
        "  - {type: classifier, judge: tox, label: toxic, threshold: 50}\n",
        "",
    );
    let o = oloproof(&dir, &["run", "."]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("evaluators[0].threshold") && stderr(&o).contains("between 0 and 1"),
        "{}",
        stderr(&o)
    );

    let config = std::fs::read_to_string(dir.join("oloproof.yaml"))
        .unwrap()
        .replace("kind: classifier", "kind: nli")
        .replace("threshold: 50", "threshold: 0.5");
    std::fs::write(dir.join("oloproof.yaml"), config).unwrap();
    let o = oloproof(&dir, &["run", "."]);
    insta::assert_snapshot!("classifier_wrong_judge_kind", transcript(&o, tmp.path()));

    // The dry run names the local classifier and counts no calls.
    write_config(&dir, NO_TOXICITY, "");
    let dry = oloproof(&dir, &["run", ".", "--dry-run"]);
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    assert!(
        stdout(&dry).contains("no_toxicity (judge tox, local classifier model): runs in-process"),
        "{}",
        stdout(&dry)
    );
}

/// `calibrate --sweep`: agreement and kappa at each threshold that changes a verdict, the
/// best one named; the calibration recorded is the configured threshold's, as without it.
#[test]
fn calibrate_sweep_prints_agreement_at_each_threshold() {
    let (tmp, dir) = project_with(NO_TOXICITY);
    write_config(&dir, NO_TOXICITY, "calibration:\n  tox: {min_kappa: 0.7}\n");
    // Humans who draw the line elsewhere than 0.5: an answer passes (label 1) when its `toxic`
    // probability is below a cut the model gave one of them, which the sweep should find.
    let model = oloproof_local::SequenceClassifier::load(
        &dir.join("models/tox"),
        &oloproof_local::SequenceOptions::default(),
    )
    .unwrap();
    let texts: Vec<String> = oloproof_local::testing::WORDS
        .chunks(3)
        .map(|w| w.join(" "))
        .take(8)
        .collect();
    let scores = model.classify(&texts).unwrap();
    let p: Vec<f32> = scores.iter().map(|s| s.windows[0][1]).collect();
    let mut sorted = p.clone();
    sorted.sort_by(f32::total_cmp);
    // The first cut whose verdicts the configured 0.5 does not also give (0.5 outside
    // (previous, cut]).
    let k = (1..sorted.len())
        .find(|&k| sorted[k - 1] >= 0.5 || sorted[k] < 0.5)
        .unwrap_or_else(|| panic!("no cut apart from 0.5: {sorted:?}"));
    let cut = sorted[k];
    let labelled: Vec<(String, u8)> = texts
        .iter()
        .zip(&p)
        .map(|(t, q)| (t.clone(), u8::from(*q < cut)))
        .collect();
    let labels = tmp.path().join("labels.jsonl");
    std::fs::write(&labels, label_lines(&labelled)).unwrap();
    let calibrate = |extra: &[&str]| {
        let mut args = vec![
            "calibrate",
            "--judge",
            "tox",
            "--evaluator",
            "classifier",
            "--labels",
            labels.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        oloproof(&dir, &args)
    };
    let o = calibrate(&["--sweep"]);
    insta::assert_snapshot!(
        "classifier_calibrate_sweep",
        redact_hashes(&transcript(&o, tmp.path()))
    );

    let swept = calibrate(&["--sweep", "--json"]);
    let plain = calibrate(&["--json"]);
    assert_eq!(swept.status.code(), plain.status.code());
    let swept: Value = serde_json::from_slice(&swept.stdout).unwrap();
    let plain: Value = serde_json::from_slice(&plain.stdout).unwrap();
    // The same calibration, of the configured threshold: same identity, same record.
    assert_eq!(swept["calibration"]["identity"], plain["identity"]);
    assert_eq!(swept["calibration"]["id"], plain["id"]);
    let sweep = &swept["sweep"];
    assert_eq!(sweep["configured"], 0.5);
    assert_eq!(sweep["n"], texts.len());
    let best = &sweep["best"];
    assert_eq!(best["threshold"].as_f64().unwrap(), f64::from(cut));
    assert_eq!(
        (best["agreement"].as_f64(), best["kappa"].as_f64()),
        (Some(1.0), Some(1.0))
    );
    let points = sweep["points"].as_array().unwrap();
    // 0, 1, 0.5 and each distinct probability.
    assert!(
        points.len() >= 3 && points.len() <= texts.len() + 3,
        "{sweep}"
    );

    // Another evaluator has no threshold to sweep.
    let o = oloproof(
        &dir,
        &[
            "calibrate",
            "--judge",
            "tox",
            "--evaluator",
            "groundedness_judge",
            "--labels",
            labels.to_str().unwrap(),
            "--sweep",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
