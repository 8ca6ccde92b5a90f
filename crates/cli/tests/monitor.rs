//! `oloproof monitor` through the real binary, on traffic written by [`traffic`] below (trace
//! records with `production`, as `oloproof import` writes them): a healthy week that passes
//! (exit 0), traffic that trips every alert kind and breaks the SLO (exit 3), error traces
//! above `--max-error-rate` (exit 4), a re-run that judges nothing twice (and a grown file
//! that judges only its new window), the review queue in the format `calibrate --labels`
//! reads, bad `monitor:` keys and values located at file:line:col (exit 2), and the recorded
//! report (`mon_…`) read back as `--json` printed it and written as a page by `report`.

mod common;

use std::path::Path;

use common::*;
use serde_json::{json, Value};

const CORPUS: &str = r#"{"doc_id": "d1", "metadata": {"tenant": "acme"}}
{"doc_id": "d2", "metadata": {"tenant": "acme"}}
"#;

/// The project: three reference-free evaluators in two tiers, an SLO, every alert kind.
const CONFIG: &str = "corpus: corpus.jsonl
evaluators:
  - {type: regex, criterion: no_refusal, must_not_match: '(?i)cannot help'}
  - {type: filter_exclusion}
  - {type: entity_grounding}
monitor:
  traffic: traffic.jsonl
  segments: [metadata.intent]
  window: {size: 1d, rolling: 2d}
  sampling:
    target_judgments: 20
    seed: 7
    tiers:
      - {evaluators: [no_refusal, filter_false_exclusion], rate: 1.0}
      - {evaluators: [entity_grounding], rate: auto}
  slos:
    - {criterion: entity_grounding, score_above: 0.5, min_share: 0.8}
  alerts:
    - {type: latency_p95, stage: total, max_ms: 1500}
    - {type: cost_per_request, max_usd: 0.01, prices: {gen-model: {input: 0.5, output: 1.5}}}
    - {type: criterion_below, criterion: entity_grounding, min: 0.9}
    - {type: filter_false_exclusion, max_rate: 0.2}
    - {type: regeneration_rate, band: [0.0, 0.3]}
";

/// What the generated traffic does on its last day (the days before are healthy).
#[derive(Clone, Copy, Default)]
struct LastDay {
    slow: bool,
    expensive: bool,
    ungrounded: bool,
    filtered: bool,
    regenerations: bool,
    errors_every: Option<usize>,
    new_version: bool,
}

/// `days` days from 2026-11-28, `per` traces per intent (`refund`, `shipping`) and day, with
/// a thumbs-down every 9th trace and a refusal every 13th; `last` breaks the last day.
fn traffic(days: usize, per: usize, last: LastDay) -> String {
    let mut out = String::new();
    for d in 0..days {
        let broken = if d + 1 == days {
            last
        } else {
            LastDay::default()
        };
        for intent in ["refund", "shipping"] {
            for k in 0..per {
                let id = format!("{intent}-{d}-{k}");
                let n = 10 + k % 7;
                let answer = if k % 13 == 5 {
                    "sorry, that one i cannot help with.".to_string()
                } else if broken.ungrounded {
                    format!("Order {} shipped on {} June via Fedex.", n + 50, k % 27 + 1)
                } else {
                    format!("Order {n} shipped on 3 March.")
                };
                let filters = if broken.filtered {
                    json!([{"field": "tenant", "op": "=", "value": "globex"}])
                } else {
                    json!([{"field": "tenant", "op": "=", "value": "acme"}])
                };
                let mut feedback = Vec::new();
                if k % 9 == 4 {
                    feedback.push(json!({"name": "thumbs", "value": "down", "comment": "wrong date", "source": "user"}));
                } else if k % 5 == 0 {
                    feedback.push(json!({"name": "thumbs", "value": 1, "source": "user"}));
                }
                if broken.regenerations || k % 20 == 3 {
                    feedback.push(json!({"name": "regenerated", "value": true}));
                }
                if k % 4 == 1 {
                    feedback.push(json!({"name": "copied", "value": true}));
                }
                if k % 11 == 2 {
                    feedback.push(json!({"name": "follow_up", "value": "are you sure?"}));
                }
                let mut production = json!({
                    "trace_id": format!("{:032x}", (d * 1000 + k) as u128 * 7919 + if intent == "refund" { 1 } else { 2 }),
                    "timestamp": format!("2026-11-{:02}T{:02}:{:02}:00Z", 28 + d, k % 24, (k * 7) % 60),
                    "source": "otlp",
                    "feedback": feedback,
                });
                if broken.errors_every.is_some_and(|e| k % e == 0) {
                    production["error"] =
                        json!({"stage": "generate", "message": "upstream timeout"});
                }
                let total = if broken.slow {
                    3000 + 10 * k
                } else {
                    400 + 10 * (k % 30)
                };
                let (input_tokens, output_tokens) = if broken.expensive {
                    (50_000, 5_000)
                } else {
                    (1_000, 200)
                };
                let record = json!({
                    "id": id,
                    "input": {"question": format!("When did order {n} ship?")},
                    "expected": {"relevant": [{"doc_id": "d1"}]},
                    "metadata": {
                        "intent": intent,
                        "service.version": if broken.new_version { "1.1.0" } else { "1.0.0" },
                    },
                    "retrieval": {
                        "candidates": [{"doc_id": "d1", "text": format!("Order {n} shipped on 3 March.")}],
                        "filters": filters,
                    },
                    "answer": answer,
                    "usage": {"model": "gen-model", "input_tokens": input_tokens, "output_tokens": output_tokens},
                    "latency_ms": {"retrieve": 40, "generate": total - 100, "total": total},
                    "production": production,
                });
                out.push_str(&record.to_string());
                out.push('\n');
            }
        }
    }
    out
}

fn project(config: &str, traffic_text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("project");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("oloproof.yaml"), config).unwrap();
    std::fs::write(dir.join("corpus.jsonl"), CORPUS).unwrap();
    std::fs::write(dir.join("traffic.jsonl"), traffic_text).unwrap();
    (tmp, dir)
}

fn json_of(dir: &Path, extra: &[&str]) -> (Option<i32>, Value) {
    let mut args = vec!["monitor", ".", "--json"];
    args.extend_from_slice(extra);
    let o = oloproof(dir, &args);
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&o), stderr(&o)));
    (o.status.code(), v)
}

fn alert<'a>(v: &'a Value, kind: &str, segment: &str) -> &'a Value {
    v["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["type"] == kind && a["segment"] == segment)
        .unwrap_or_else(|| panic!("no alert {kind} for {segment}"))
}

#[test]
fn healthy_traffic_passes() {
    let (tmp, dir) = project(CONFIG, &traffic(2, 40, LastDay::default()));
    let o = oloproof(&dir, &["monitor", "."]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    insta::assert_snapshot!("monitor_pass", transcript(&o, tmp.path()));
}

#[test]
fn broken_traffic_trips_every_alert_and_the_slo() {
    let last = LastDay {
        slow: true,
        expensive: true,
        ungrounded: true,
        filtered: true,
        regenerations: true,
        errors_every: Some(10),
        new_version: true,
    };
    let mut text = traffic(2, 40, last);
    // Two records the windows cannot place: counted and shown, never dropped.
    text.push_str(r#"{"id": "no-time", "input": {"question": "q"}, "answer": "a", "production": {"trace_id": "ff01"}}"#);
    text.push('\n');
    text.push_str(r#"{"id": "bad-time", "input": {"question": "q"}, "answer": "a", "production": {"trace_id": "ff02", "timestamp": "yesterday"}}"#);
    text.push('\n');
    let (tmp, dir) = project(CONFIG, &text);
    let o = oloproof(&dir, &["monitor", ".", "--max-error-rate", "0.2"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    insta::assert_snapshot!("monitor_breach", transcript(&o, tmp.path()));

    let (code, v) = json_of(&dir, &["--max-error-rate", "0.2"]);
    assert_eq!(code, Some(3));
    assert_eq!(v["traffic"]["untimed"], 2);
    for kind in [
        "latency_p95",
        "cost_per_request",
        "criterion_below",
        "filter_false_exclusion",
        "regeneration_rate",
    ] {
        for segment in ["intent=refund", "intent=shipping"] {
            let a = alert(&v, kind, segment);
            assert_eq!(a["fired"], true, "{a}");
            assert!(a["n"].as_u64().unwrap() > 0, "{a}");
            assert_eq!(a["changes"]["code_changed"], true, "{a}");
        }
    }
    // The latency alert's sample is the horizon's 80 traces of the segment.
    assert_eq!(alert(&v, "latency_p95", "intent=refund")["n"], 80);
    for slo in v["slos"].as_array().unwrap() {
        assert_eq!(slo["decision"]["state"], "violated", "{slo}");
        assert!(
            slo["decision"]["budget_left"].as_i64().unwrap() < 0,
            "{slo}"
        );
    }
    // Tier 0 judges every trace; tier 1 its auto-rate draw plus errors, thumbs-downs and the
    // refusals tier 0 failed — each with its reasons recorded.
    let tiers = v["sampling"]["tiers"].as_array().unwrap();
    assert_eq!(tiers[0]["selected"], 160);
    let selection = tiers[1]["selection"].as_array().unwrap();
    let with = |reason: &str| {
        selection
            .iter()
            .filter(|s| s["reasons"].as_array().unwrap().iter().any(|r| r == reason))
            .count()
    };
    assert_eq!(
        with("errors"),
        8,
        "every error trace: 4 per intent on the last day"
    );
    assert_eq!(
        with("negative_feedback"),
        selection
            .iter()
            .filter(|s| {
                let id = s["id"].as_str().unwrap();
                let k: usize = id.rsplit('-').next().unwrap().parse().unwrap();
                let last_day = id.contains("-1-");
                k % 9 == 4 || last_day || k % 20 == 3
            })
            .count()
    );
    assert!(
        with("flagged") >= 2 * 2 * 3,
        "the refusals (k = 5, 18, 31) of every intent and day"
    );
    assert!(with("sampled") > 0);
    // The rate is min(1, 20 / 40) = 0.5 per segment and day, and a trace is drawn below it.
    for s in selection {
        assert_eq!(s["rate"], 0.5);
        let drawn = s["draw"].as_f64().unwrap() < 0.5;
        let reasons = s["reasons"].as_array().unwrap();
        assert_eq!(drawn, reasons.iter().any(|r| r == "sampled"), "{s}");
    }
    // Estimates read only the draw: targeted judgments are counted beside them.
    let window = &v["windows"][1];
    assert_eq!(window["changes"]["code_changed"], true);
    assert_eq!(window["feedback"]["down_reasons"]["wrong date"], 8);
    let eg = window["segments"][0]["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["summary"]["criterion"] == "entity_grounding")
        .unwrap();
    assert!(eg["targeted"].as_u64().unwrap() > 0, "{eg}");
}

#[test]
fn error_traces_above_the_allowed_share_exit_4() {
    let last = LastDay {
        errors_every: Some(2),
        ..Default::default()
    };
    let (tmp, dir) = project(CONFIG, &traffic(2, 40, last));
    let o = oloproof(&dir, &["monitor", ".", "--max-error-rate", "0.1"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let text = transcript(&o, tmp.path());
    assert!(
        text.contains("error: 40 of 160 traces of the horizon ended in an error (25.0%), above the allowed 10.0% (--max-error-rate); exit 4"),
        "{text}"
    );
}

#[test]
fn a_rerun_judges_nothing_twice_and_new_traffic_only_its_window() {
    let (_tmp, dir) = project(CONFIG, &traffic(2, 40, LastDay::default()));
    let (code, first) = json_of(&dir, &[]);
    assert_eq!(code, Some(0), "{first}");
    let (code, again) = json_of(&dir, &[]);
    assert_eq!(code, Some(0));
    for (a, b) in first["sampling"]["tiers"]
        .as_array()
        .unwrap()
        .iter()
        .zip(again["sampling"]["tiers"].as_array().unwrap())
    {
        assert!(a["judgments_fresh"].as_u64().unwrap() > 0, "{a}");
        assert_eq!(b["judgments_fresh"], 0, "{b}");
        assert_eq!(b["judgments_cached"], a["judgments_fresh"], "{b}");
        // The same draw selects the same traces.
        assert_eq!(a["selection"], b["selection"]);
    }
    // A third day appended: only its selection is judged; the first two days come from the
    // judgment cache, whatever the file's hash.
    std::fs::write(
        dir.join("traffic.jsonl"),
        traffic(3, 40, LastDay::default()),
    )
    .unwrap();
    let (code, grown) = json_of(&dir, &[]);
    assert_eq!(code, Some(0), "{grown}");
    for (t, (before, after)) in first["sampling"]["tiers"]
        .as_array()
        .unwrap()
        .iter()
        .zip(grown["sampling"]["tiers"].as_array().unwrap())
        .enumerate()
    {
        let new_window = after["selection"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["window"] == "2026-11-30T00:00:00Z")
            .count() as u64;
        let criteria = after["evaluators"].as_array().unwrap().len() as u64;
        let judged = |x: &Value| {
            x["judgments_fresh"].as_u64().unwrap() + x["judgments_cached"].as_u64().unwrap()
        };
        assert_eq!(
            after["judgments_cached"], before["judgments_fresh"],
            "tier {t}"
        );
        assert_eq!(
            judged(after) - judged(before),
            new_window * criteria,
            "tier {t}"
        );
    }
}

#[test]
fn the_review_queue_is_blind_and_reads_back_as_calibration_labels() {
    let last = LastDay {
        ungrounded: true,
        ..Default::default()
    };
    let (tmp, dir) = project(CONFIG, &traffic(2, 40, last));
    let (code, v) = json_of(&dir, &["--review-queue", "5", "-o", "review.jsonl"]);
    assert_eq!(code, Some(3), "{v}");
    let text = std::fs::read_to_string(dir.join("review.jsonl")).unwrap();
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let review = &v["review"];
    assert_eq!(review["rows"], rows.len() as u64);
    assert_eq!(review["by_reason"]["random"], 5);
    assert!(review["by_reason"]["thumbs_down"].as_u64().unwrap() > 0);
    for row in &rows {
        // What `calibrate --labels` reads, the label to fill, and no judge's score.
        for key in [
            "id", "question", "answer", "contexts", "label", "trace_id", "window", "segment",
        ] {
            assert!(row.get(key).is_some(), "{key} in {row}");
        }
        assert_eq!(row["label"], Value::Null);
        assert_eq!(row.as_object().unwrap().len(), 8, "{row}");
        assert!(review["reasons"].get(row["id"].as_str().unwrap()).is_some());
    }
    // The same seed gives the same queue.
    let (_, again) = json_of(&dir, &["--review-queue", "5", "-o", "review2.jsonl"]);
    assert_eq!(again["review"], v["review"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("review2.jsonl")).unwrap(),
        text
    );
    // Unlabelled rows are refused at the first row's `label`; labelled, every row reads back
    // as a calibration item (`oloproof calibrate --labels review.jsonl` reads them so).
    let err = oloproof_engine::calibrate::read_labels(&dir.join("review.jsonl"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("review.jsonl:1: field `label`"), "{err}");
    let labelled: String = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut r = r.clone();
            r["label"] = json!(i % 2);
            format!("{r}\n")
        })
        .collect();
    std::fs::write(dir.join("labelled.jsonl"), labelled).unwrap();
    let items = oloproof_engine::calibrate::read_labels(&dir.join("labelled.jsonl")).unwrap();
    assert_eq!(items.len(), rows.len());
    assert_eq!(items[0].id, rows[0]["id"].as_str().unwrap());
    assert_eq!(items[0].answer, rows[0]["answer"].as_str().unwrap());
    assert!(!items[0].contexts.is_empty());
    assert_eq!(items[1].label, 1.0);
    drop(tmp);
}

fn bad_config(name: &str, find: &str, replace: &str) {
    assert!(CONFIG.contains(find), "{find}");
    let (tmp, dir) = project(
        &CONFIG.replacen(find, replace, 1),
        &traffic(1, 2, LastDay::default()),
    );
    let o = oloproof(&dir, &["monitor", "."]);
    assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
    insta::assert_snapshot!(name, transcript(&o, tmp.path()));
}

#[test]
fn bad_monitor_config_is_located() {
    bad_config("monitor_bad_key", "  segments:", "  segmnts:");
    bad_config("monitor_bad_span", "size: 1d", "size: 1x");
    bad_config("monitor_bad_rolling", "rolling: 2d", "rolling: 36h");
    bad_config("monitor_bad_rate", "rate: 1.0", "rate: 1.5");
    bad_config(
        "monitor_bad_alert_type",
        "type: latency_p95",
        "type: latency_p99",
    );
    bad_config("monitor_bad_alert_key", "max_ms: 1500", "max_msec: 1500");
    bad_config(
        "monitor_unknown_criterion",
        "evaluators: [entity_grounding], rate: auto",
        "evaluators: [entity_grouding], rate: auto",
    );
    bad_config("monitor_bad_segment", "[metadata.intent]", "[intent]");
    bad_config("monitor_bad_share", "min_share: 0.8", "min_share: 80");
}

#[test]
fn a_config_without_monitor_says_what_to_add() {
    let (tmp, dir) = project(
        "evaluators:\n  - {type: entity_grounding}\n",
        &traffic(1, 2, LastDay::default()),
    );
    let o = oloproof(&dir, &["monitor", "."]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    insta::assert_snapshot!("monitor_missing_section", transcript(&o, tmp.path()));
}

/// The id `monitor` names on stderr (`Recorded as mon_…`).
fn recorded_id(o: &std::process::Output) -> String {
    let text = stderr(o);
    let i = text
        .find("Recorded as mon_")
        .unwrap_or_else(|| panic!("no recorded id: {text}"));
    text[i + "Recorded as ".len()..i + "Recorded as ".len() + 30].to_string()
}

#[test]
fn the_report_is_recorded_and_written_as_a_page() {
    let last = LastDay {
        slow: true,
        ungrounded: true,
        new_version: true,
        ..Default::default()
    };
    let (_tmp, dir) = project(CONFIG, &traffic(2, 40, last));
    let o = oloproof(&dir, &["monitor", ".", "--json"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let id = recorded_id(&o);
    let printed: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        !stdout(&o).contains("mon_"),
        "--json stays the report alone"
    );

    // The store holds the same report as --json printed.
    let location = oloproof_core::store::StoreLocation::Sqlite(dir.join(".oloproof/oloproof.db"));
    let store = oloproof_store::open_reader(&location).unwrap();
    let listed = store.list_monitors().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, id);
    assert_eq!(listed[0].traffic, "traffic.jsonl");
    let stored: Value = serde_json::from_str(&listed[0].content_json).unwrap();
    assert_eq!(stored, printed);
    let typed = store.load_monitor(&id).unwrap().unwrap();
    assert_eq!(serde_json::to_value(&typed).unwrap(), printed);

    // `report mon_… -o x.html` writes the page: every SLO row with its state, the fired
    // alerts first with their why.
    let o = oloproof(&dir, &["report", &id, "-o", "monitor.html"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(&format!("Wrote the HTML report of monitor report {id}")),
        "{}",
        stdout(&o)
    );
    let html = std::fs::read_to_string(dir.join("monitor.html")).unwrap();
    let slos = printed["slos"].as_array().unwrap();
    assert!(!slos.is_empty());
    for slo in slos {
        let state = slo["decision"]["state"].as_str().unwrap();
        assert!(
            html.contains(&format!(
                "<tr class=\"slo\" data-state=\"{state}\"><td>{}</td><td>{}</td>",
                slo["criterion"].as_str().unwrap(),
                slo["segment"].as_str().unwrap()
            )),
            "{slo}"
        );
    }
    let fired: Vec<&Value> = printed["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["fired"] == true)
        .collect();
    assert!(fired.len() >= 2, "the latency alert fires in both segments");
    let first_quiet = html.find("data-status=\"ok\"").unwrap();
    for a in &fired {
        let why = oloproof_report::html::escape(a["why"].as_str().unwrap());
        let at = html.find(&why).unwrap_or_else(|| panic!("no {why}"));
        assert!(at < first_quiet, "fired alerts come first: {why}");
    }
    assert!(html.contains("<svg class=\"chart series\""));
    assert!(html.contains("Content-Security-Policy") && !html.contains("<script"));

    // `store copy` carries it: the copy renders the same page.
    let o = oloproof(&dir, &["store", "copy", ".oloproof/oloproof.db", "copy.db"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains(", 1 monitor reports"), "{}", stdout(&o));
    let o = oloproof(
        &dir,
        &["report", &id, "--store", "copy.db", "-o", "copy.html"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(dir.join("copy.html")).unwrap(),
        html,
        "the same report, recorded at the same time"
    );

    // With --run, a report goes with the runs its tiers judged with: a second monitor (new
    // runs, every judgment from the cache) stays behind.
    let o = oloproof(&dir, &["monitor", "."]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let second = recorded_id(&o);
    assert_ne!(second, id);
    let tier_run = printed["sampling"]["tiers"][0]["run_id"].as_str().unwrap();
    let o = oloproof(
        &dir,
        &[
            "store",
            "copy",
            ".oloproof/oloproof.db",
            "one.db",
            "--run",
            tier_run,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains(", 1 monitor reports"), "{}", stdout(&o));
    let one = oloproof_store::open_reader(&oloproof_core::store::StoreLocation::Sqlite(
        dir.join("one.db"),
    ))
    .unwrap();
    let copied: Vec<String> = one
        .list_monitors()
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(copied, std::slice::from_ref(&id));

    // Other formats and unknown ids are usage errors.
    let o = oloproof(&dir, &["report", &id, "-o", "monitor.md"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("HTML only"), "{}", stderr(&o));
    let o = oloproof(&dir, &["report", "mon_nothing", "-o", "x.html"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no monitor report `mon_nothing`"));
}
