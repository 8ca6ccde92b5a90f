//! The viewer over real HTTP: a store built by the engine from recorded (Ragas) datasets, two
//! runs and a recorded comparison, served on a free loopback port and read with ureq.
//! Status codes, the security headers, 404 and 400 pages, server-side filters, the Host check,
//! a hostile answer rendered as text, and monitor reports (listed, served, 404, unreadable).
//!
//! (Moved here from `oloproof-view`, which does not depend on the engine that builds the runs.)

#![cfg(feature = "view")]

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpStream};
use std::path::{Path, PathBuf};

use oloproof_core::dataset::load_dataset;
use oloproof_core::store::{ArtifactStore, RunStore, Store, StoreLocation};
use oloproof_core::summary::RunSummary;
use oloproof_engine::compare::{compare, record_comparison, Policy};
use oloproof_engine::project::load_config_for_dataset;
use oloproof_engine::recorded::start_recorded_run;
use oloproof_engine::run::{EngineEvaluators, RunFlags, Silent};
use oloproof_store::SqliteStore;
use oloproof_view::{ViewError, Viewer, ViewerSettings, CONTENT_SECURITY_POLICY};

const CONFIG: &str = "dataset: baseline.jsonl
evaluators:
  - {type: contains, criterion: answer_correct}
  - {type: hit_rate, k: 2}
slices: [metadata.topic]
min_slice_support: 2
";

const SCRIPT: &str = "<script>window.__xss=1</script>";
const IMG: &str = "<img src=x onerror=\\\"window.__xss=1\\\">";

fn record(id: &str, answer: &str, topic: &str) -> String {
    format!(
        r#"{{"id": "{id}", "user_input": "Question {id}?", "retrieved_contexts": ["The answer to {id} is 14 days.", "Unrelated text."], "response": "{answer}", "reference": "14 days", "reference_contexts": ["The answer to {id} is 14 days."], "metadata": {{"topic": "{topic}"}}}}"#
    )
}

struct Fixture {
    _tmp: tempfile::TempDir,
    store: PathBuf,
    baseline: String,
    candidate: String,
    comparison: String,
}

/// Two recorded runs: the candidate regresses `b/2` and answers `xss` with markup.
fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("oloproof.yaml"), CONFIG).unwrap();
    let lines = |xss: &str, b: &str| {
        [
            record("a1", "It takes 14 days.", "billing"),
            record("b/2", b, "billing"),
            record("c3", "No idea.", "shipping"),
            record("xss", xss, "shipping"),
        ]
        .join("\n")
    };
    std::fs::write(
        dir.join("baseline.jsonl"),
        lines("14 days", "About 14 days."),
    )
    .unwrap();
    std::fs::write(
        dir.join("candidate.jsonl"),
        lines(&format!("{SCRIPT} {IMG} 14 days"), "A month."),
    )
    .unwrap();
    let mut ids = Vec::new();
    for name in ["baseline.jsonl", "candidate.jsonl"] {
        let config =
            load_config_for_dataset(&dir.join("oloproof.yaml"), &[], &dir.join(name)).unwrap();
        let dataset = load_dataset(&dir.join(name), None).unwrap();
        let outcome =
            start_recorded_run(&config, dataset, RunFlags::default(), &mut Silent).unwrap();
        ids.push((outcome.run_id, config.store_path()));
    }
    let store_path = ids[0].1.clone();
    let mut store: Box<dyn Store> = Box::new(SqliteStore::open(&store_path).unwrap());
    let baseline = store.load_run(&ids[0].0, &EngineEvaluators).unwrap();
    let candidate = store.load_run(&ids[1].0, &EngineEvaluators).unwrap();
    let policy = Policy::parse(
        "compare.yaml",
        "decisions:\n  - {name: answers, criterion: answer_correct, kind: non_inferiority, margin_points: 5}\n",
    )
    .unwrap();
    let comparison = compare(&candidate, &baseline, &policy).unwrap();
    record_comparison(store.as_mut(), &comparison).unwrap();
    Fixture {
        store: store_path,
        baseline: ids[0].0.clone(),
        candidate: ids[1].0.clone(),
        comparison: comparison.id,
        _tmp: tmp,
    }
}

/// A viewer on a free loopback port, serving until the test ends.
struct Served {
    base: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), ViewError>>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(store: &Path) -> Served {
    let viewer = Viewer::bind(
        &ViewerSettings {
            store: StoreLocation::Sqlite(store.to_path_buf()),
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            allow_non_loopback: false,
        },
        std::sync::Arc::new(EngineEvaluators),
    )
    .unwrap();
    let base = viewer.url().trim_end_matches('/').to_string();
    assert_ne!(viewer.local_addr().port(), 0);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        viewer.serve_until(async move {
            let _ = rx.await;
        })
    });
    Served {
        base,
        stop: Some(tx),
        thread: Some(thread),
    }
}

struct Page {
    status: u16,
    csp: String,
    nosniff: String,
    content_type: String,
    body: String,
}

fn get(base: &str, path: &str) -> Page {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut resp = agent.get(&format!("{base}{path}")).call().unwrap();
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let (csp, nosniff, content_type) = (
        header("content-security-policy"),
        header("x-content-type-options"),
        header("content-type"),
    );
    Page {
        status: resp.status().as_u16(),
        csp,
        nosniff,
        content_type,
        body: resp.body_mut().read_to_string().unwrap(),
    }
}

/// The real tags of a page (stored text has its `<` escaped, so every raw `<` opens a tag)
/// that carry an `on…=` attribute.
fn inline_handlers(body: &str) -> Vec<String> {
    body.split('<')
        .skip(1)
        .filter_map(|rest| rest.split('>').next())
        .filter(|tag| {
            tag.split_whitespace()
                .skip(1)
                .any(|attr| attr.to_ascii_lowercase().starts_with("on") && attr.contains('='))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn every_page_type_is_served_with_the_security_headers() {
    let f = fixture();
    let s = serve(&f.store);
    let comparison = oloproof_view::comparison_link(&f.comparison);
    for path in [
        "/".to_string(),
        oloproof_view::run_link(&f.baseline),
        oloproof_view::case_link(&f.baseline, "a1"),
        oloproof_view::case_link(&f.candidate, "b/2"),
        comparison.clone(),
    ] {
        let page = get(&s.base, &path);
        assert_eq!(page.status, 200, "{path}: {}", page.body);
        assert_eq!(page.csp, CONTENT_SECURITY_POLICY, "{path}");
        assert_eq!(page.nosniff, "nosniff", "{path}");
        assert_eq!(page.content_type, "text/html; charset=utf-8", "{path}");
        assert!(!page.body.contains("<script"), "{path}");
        assert!(!page.body.contains("style=\""), "{path}: inline style");
        assert_eq!(inline_handlers(&page.body), Vec::<String>::new(), "{path}");
    }
    let index = get(&s.base, "/").body;
    assert!(index.contains(&f.baseline) && index.contains(&f.candidate));
    assert!(index.contains(&oloproof_view::comparison_link(&f.comparison)));
    let css = get(&s.base, "/static/style.css");
    assert_eq!(css.status, 200);
    assert_eq!(css.content_type, "text/css; charset=utf-8");
    assert!(css.body.contains("header.top"));
    assert_eq!(get(&s.base, "/static/favicon.svg").status, 200);
}

#[test]
fn the_run_table_carries_the_stored_summary() {
    let f = fixture();
    let s = serve(&f.store);
    let store = SqliteStore::open(&f.store).unwrap();
    let summary: RunSummary = serde_json::from_str(
        &store
            .run(&f.baseline.as_str().into())
            .unwrap()
            .summary_json
            .unwrap(),
    )
    .unwrap();
    let page = get(&s.base, &oloproof_view::run_link(&f.baseline)).body;
    for c in &summary.criteria {
        let row = format!(
            "<tr data-criterion=\"{}\"><td><a href=\"?criterion={}&amp;outcome=fail#cases\">{}</a></td><td class=\"num\" data-value=\"{}\">{}</td>",
            c.criterion,
            c.criterion,
            c.criterion,
            c.value.unwrap(),
            oloproof_report::value_cell(c)
        );
        assert!(page.contains(&row), "missing {row}");
        assert!(page.contains(&oloproof_report::counts_cell(c)));
    }
    assert!(page.contains("id=\"case-count\">4 of 4</span>"));
}

#[test]
fn filters_are_applied_on_the_server() {
    let f = fixture();
    let s = serve(&f.store);
    let run = oloproof_view::run_link(&f.candidate);
    let failing = get(
        &s.base,
        &format!("{run}?criterion=answer_correct&outcome=fail"),
    )
    .body;
    assert!(
        failing.contains("id=\"case-count\">2 of 4</span>"),
        "{failing}"
    );
    assert!(failing.contains("data-case=\"b/2\"") && failing.contains("data-case=\"c3\""));
    assert!(!failing.contains("data-case=\"a1\""));
    let billing = get(&s.base, &format!("{run}?slice=metadata.topic%3Dbilling")).body;
    assert!(billing.contains("id=\"case-count\">2 of 4</span>"));
    assert!(!billing.contains("data-case=\"xss\""));
    let bad = get(&s.base, &format!("{run}?criterion=answer_corect"));
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains(
        "has no criterion `answer_corect`; its criteria are answer_correct, hit_rate_at_2"
    ));
    assert_eq!(get(&s.base, &format!("{run}?outcome=great")).status, 400);
    assert_eq!(get(&s.base, &format!("{run}?slice=topic")).status, 400);

    let comparison = oloproof_view::comparison_link(&f.comparison);
    let all = get(&s.base, &comparison).body;
    let regression = all.find("data-case=\"b/2\" data-direction=\"regression\"");
    let unchanged = all.find("data-direction=\"unchanged\"");
    assert!(regression.is_some() && unchanged.is_some());
    assert!(regression < unchanged, "regressions come first");
    let only = get(&s.base, &format!("{comparison}?direction=regression")).body;
    assert!(only.contains("id=\"case-count\">1 of 4</span>"), "{only}");
    assert_eq!(
        get(&s.base, &format!("{comparison}?direction=sideways")).status,
        400
    );
}

#[test]
fn unknown_ids_are_404_pages_and_paths_are_only_ids() {
    let f = fixture();
    let s = serve(&f.store);
    let run = oloproof_view::run_link(&f.baseline);
    for (path, says) in [
        (
            "/runs/run_nope".to_string(),
            "no run `run_nope` in this store",
        ),
        (format!("{run}/cases/nope"), "has no case `nope`"),
        (
            "/comparisons/sha256:00".to_string(),
            "no comparison `sha256:00`",
        ),
        (
            "/diagnoses/sha256:00".to_string(),
            "no diagnosis `sha256:00`",
        ),
        (
            "/monitors/mon_nope".to_string(),
            "no monitor report `mon_nope`",
        ),
        (
            "/runs/..%2F..%2Fetc%2Fpasswd".to_string(),
            "no run `../../etc/passwd`",
        ),
        ("/etc/passwd".to_string(), "nothing at /etc/passwd"),
        (
            format!("{run}/cases/%3Cscript%3E"),
            "has no case `&lt;script&gt;`",
        ),
    ] {
        let page = get(&s.base, &path);
        assert_eq!(page.status, 404, "{path}");
        assert_eq!(page.csp, CONTENT_SECURITY_POLICY, "{path}");
        assert!(page.body.contains(says), "{path}: {}", page.body);
        assert!(!page.body.contains("<script>"), "{path}");
    }
}

/// A monitor report with a hostile segment, a fired alert and an SLO, as `monitor` records it.
fn monitor_json(segment: &str) -> String {
    let window = |start: &str, end: &str, value: f64| {
        serde_json::json!({
            "start": start, "end": end, "in_horizon": true,
            "segments": [{"segment": segment, "traces": 20, "errors": 0, "criteria": [{
                "summary": {"criterion": "answer_correct", "kind": "proportion", "value": value,
                            "interval": [value - 0.2, value + 0.1], "interval_method": "clopper_pearson",
                            "passed": 10, "observed": 20, "missing": 0, "excluded": 0},
                "targeted": 0}]}],
            "feedback": {"thumbs_up": 0, "thumbs_down": 0, "down_reasons": {}, "regenerated": 0,
                         "copied": 0, "follow_up": 0, "other": {}},
            "changes": {"code": [], "model": [], "config": [], "code_changed": false,
                        "model_changed": false, "config_changed": false},
        })
    };
    serde_json::json!({
        "schema_version": 1,
        "traffic": {"path": "traffic.jsonl", "sha256": "ab", "records": 40, "timed": 40,
                    "untimed": 0, "untimed_examples": [], "skipped_rows": 0},
        "window": {"size": "1d", "rolling": "2d", "horizon_windows": 2,
                   "horizon_start": "2026-11-28T00:00:00Z", "horizon_end": "2026-11-30T00:00:00Z"},
        "segments": ["metadata.intent"],
        "sampling": {"seed": 0, "target_judgments": 20, "always": [], "tiers": []},
        "windows": [window("2026-11-28T00:00:00Z", "2026-11-29T00:00:00Z", 0.5),
                    window("2026-11-29T00:00:00Z", "2026-11-30T00:00:00Z", 0.6)],
        "slos": [{"criterion": "answer_correct", "segment": segment, "score_above": 0.5,
                  "min_share": 0.9, "confidence": 0.95,
                  "decision": {"state": "violated", "share": 0.55, "lower_bound": 0.4,
                               "upper_bound": 0.7, "good": 22, "n": 40, "allowed_failures": 4,
                               "failures": 18, "budget_left": -14}}],
        "alerts": [{"type": "latency_p95", "subject": "total", "segment": segment, "fired": true,
                    "status": "fired", "why": format!("{SCRIPT} slow"), "n": 40, "value": 3000.0,
                    "interval": [2900.0, 3100.0],
                    "changes": {"code": [], "model": [], "config": [], "code_changed": false,
                                "model_changed": false, "config_changed": false}}],
        "errors": {"errors": 0, "traces": 40, "max_error_rate": 0.0},
        "incomplete": [],
    })
    .to_string()
}

#[test]
fn monitor_reports_are_listed_and_served() {
    let f = fixture();
    let (good, bad) = (
        "mon_01KGOOD0000000000000000000",
        "mon_01KBAD00000000000000000000",
    );
    {
        let mut store = SqliteStore::open(&f.store).unwrap();
        store
            .save_monitor(
                good,
                "traffic.jsonl",
                &monitor_json(&format!("intent={SCRIPT}")),
            )
            .unwrap();
        store.save_monitor(bad, "other.jsonl", "{damaged").unwrap();
    }
    let s = serve(&f.store);
    let index = get(&s.base, "/");
    assert_eq!(index.status, 200);
    let link = oloproof_view::monitor_link(good);
    assert!(index
        .body
        .contains(&format!("<a href=\"{link}\">{good}</a>")));
    assert!(
        index.body.contains(
            "<td class=\"num\">2</td><td class=\"num\">1</td><td class=\"num\">1 of 1</td>"
        ),
        "windows, alerts fired, SLOs not met: {}",
        index.body
    );
    assert!(index.body.contains("unreadable"));
    let page = get(&s.base, &link);
    assert_eq!(page.status, 200);
    assert_eq!(page.csp, CONTENT_SECURITY_POLICY);
    assert!(!page.body.contains("<script"), "{}", page.body);
    assert!(inline_handlers(&page.body).is_empty());
    assert!(page
        .body
        .contains("intent=&lt;script&gt;window.__xss=1&lt;/script&gt;"));
    assert!(page
        .body
        .contains("<tr class=\"slo\" data-state=\"violated\">"));
    assert!(page
        .body
        .contains("&lt;script&gt;window.__xss=1&lt;/script&gt; slow"));
    assert_eq!(page.body.matches("<path class=\"band\"").count(), 1);
    assert_eq!(
        page.body
            .matches("<circle class=\"point series-point\"")
            .count(),
        2
    );
    // A report that does not decode is a 500 page naming it, not a panic.
    let page = get(&s.base, &oloproof_view::monitor_link(bad));
    assert_eq!(page.status, 500);
    assert!(
        page.body.contains(&format!("monitor report {bad}")),
        "{}",
        page.body
    );
}

#[test]
fn a_hostile_answer_renders_as_text() {
    let f = fixture();
    let s = serve(&f.store);
    let page = get(&s.base, &oloproof_view::case_link(&f.candidate, "xss"));
    assert_eq!(page.status, 200);
    assert!(page
        .body
        .contains("&lt;script&gt;window.__xss=1&lt;/script&gt; &lt;img src=x onerror=&quot;window.__xss=1&quot;&gt; 14 days"));
    assert!(!page.body.contains("<script") && !page.body.contains("<img"));
    // The comparison shows the same answer side by side, escaped too.
    let side = get(&s.base, &oloproof_view::comparison_link(&f.comparison)).body;
    assert!(side.contains("&lt;script&gt;window.__xss=1&lt;/script&gt;"));
    assert!(!side.contains("<script") && !side.contains("<img"));
}

#[test]
fn requests_for_another_host_are_refused() {
    let f = fixture();
    let s = serve(&f.store);
    let addr = s.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: attacker.example:80\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 421"), "{reply}");
    assert!(reply.to_ascii_lowercase().contains(
        &format!("content-security-policy: {CONTENT_SECURITY_POLICY}").to_ascii_lowercase()
    ));
    assert!(
        !reply.contains(&f.baseline),
        "no store content for another host"
    );
}

#[test]
fn a_non_loopback_address_needs_explicit_permission() {
    let settings = ViewerSettings {
        store: StoreLocation::Sqlite(PathBuf::from("unused.db")),
        host: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        port: 0,
        allow_non_loopback: false,
    };
    let err = Viewer::bind(&settings, std::sync::Arc::new(EngineEvaluators))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("refusing to serve on 0.0.0.0:0: it is not a loopback address")
            && err.ends_with("pass --host 0.0.0.0 explicitly if that is intended"),
        "{err}"
    );
}
