//! Hostile requests to the viewer, sent as raw bytes over TCP: path traversal in every
//! spelling (plain, percent-encoded, double-encoded, backslashes, absolute-form targets),
//! oversized query strings, and URLs that are not UTF-8. Each is answered with a 4xx, never
//! with a byte of a file outside the store (a sentinel file beside it, `/etc/passwd`, the
//! database itself), and the server keeps serving. Also: a damaged store and a store written by
//! an older Oloproof.
//!
//! (Moved here from `oloproof-view`, which does not depend on the engine that builds the runs.)

#![cfg(feature = "view")]

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use oloproof_core::dataset::load_dataset;
use oloproof_engine::project::load_config_for_dataset;
use oloproof_engine::recorded::start_recorded_run;
use oloproof_engine::run::{EngineEvaluators, RunFlags, Silent};
use oloproof_view::{ViewError, Viewer, ViewerSettings, CONTENT_SECURITY_POLICY};

const SENTINEL: &str = "SENTINEL-OUTSIDE-THE-STORE-7f3a";

/// A store with one recorded run (cases `a1` and `b/2`), and a sentinel file next to the
/// project folder.
fn fixture() -> (tempfile::TempDir, PathBuf, String) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("secret.txt"), SENTINEL).unwrap();
    let dir = tmp.path().join("project");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("oloproof.yaml"),
        "dataset: data.jsonl\nevaluators:\n  - {type: contains, criterion: answer_correct}\n",
    )
    .unwrap();
    let record = |id: &str| {
        format!(
            r#"{{"id": "{id}", "user_input": "Question {id}?", "retrieved_contexts": ["It is 14 days."], "response": "14 days", "reference": "14 days"}}"#
        )
    };
    std::fs::write(
        dir.join("data.jsonl"),
        format!("{}\n{}\n", record("a1"), record("b/2")),
    )
    .unwrap();
    let config =
        load_config_for_dataset(&dir.join("oloproof.yaml"), &[], &dir.join("data.jsonl")).unwrap();
    let dataset = load_dataset(&dir.join("data.jsonl"), None).unwrap();
    let outcome = start_recorded_run(&config, dataset, RunFlags::default(), &mut Silent).unwrap();
    (tmp, config.store_path(), outcome.run_id)
}

struct Served {
    addr: String,
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

fn settings(store: &Path) -> ViewerSettings {
    ViewerSettings {
        store: oloproof_core::store::StoreLocation::Sqlite(store.to_path_buf()),
        host: IpAddr::V4(Ipv4Addr::LOCALHOST),
        port: 0,
        allow_non_loopback: false,
    }
}

fn serve(store: &Path) -> Served {
    let viewer = Viewer::bind(&settings(store), std::sync::Arc::new(EngineEvaluators)).unwrap();
    let addr = viewer.local_addr().to_string();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        viewer.serve_until(async move {
            let _ = rx.await;
        })
    });
    Served {
        addr,
        stop: Some(tx),
        thread: Some(thread),
    }
}

/// Sends `target` (raw bytes, as they go on the request line) and returns the status and the
/// whole response.
fn raw(s: &Served, target: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(&s.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut request = b"GET ".to_vec();
    request.extend_from_slice(target);
    request.extend_from_slice(
        format!(" HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", s.addr).as_bytes(),
    );
    stream.write_all(&request).unwrap();
    let mut reply = Vec::new();
    stream
        .read_to_end(&mut reply)
        .expect("the server answers (or closes) within 10 s");
    let text = String::from_utf8_lossy(&reply).into_owned();
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|r| r.get(..3))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {text:?}"));
    (status, text)
}

/// `target` must be a 4xx without anything from outside the store, with the security headers;
/// and the server must still answer its index afterwards.
fn refused(s: &Served, target: &[u8], run_id: &str) -> u16 {
    let shown = String::from_utf8_lossy(target).into_owned();
    let (status, text) = raw(s, target);
    assert!((400..500).contains(&status), "{shown}: {status}\n{text}");
    for leak in [SENTINEL, "root:x:0:0", "SQLite format 3"] {
        assert!(!text.contains(leak), "{shown} leaked {leak:?}:\n{text}");
    }
    // A page carries the security headers; a request the HTTP layer refuses gets no body.
    let lower = text.to_ascii_lowercase();
    assert!(
        lower.contains(&format!(
            "content-security-policy: {}",
            CONTENT_SECURITY_POLICY.to_ascii_lowercase()
        )) || lower.contains("content-length: 0\r\n"),
        "{shown}: a body without the CSP\n{text}"
    );
    assert!(text.len() < 20_000, "{shown}: a {} byte answer", text.len());
    assert!(!text.contains("<script"), "{shown}: {text}");
    let (index, body) = raw(s, b"/");
    assert_eq!(index, 200, "after {shown}: {body}");
    assert!(body.contains(run_id));
    status
}

#[test]
fn path_traversal_in_every_spelling_is_refused() {
    let (_tmp, store, run_id) = fixture();
    let s = serve(&store);
    for target in [
        "/../secret.txt",
        "/../../../../../../etc/passwd",
        "/static/../../secret.txt",
        "/static/..%2F..%2Fsecret.txt",
        "/static/%2e%2e/%2e%2e/secret.txt",
        "/static/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
        "/static/%252e%252e%252fsecret.txt",
        "/static/..%5C..%5Csecret.txt",
        "/static/..\\..\\secret.txt",
        "/static/style.css%00../../secret.txt",
        "/static/oloproof.db",
        "/oloproof.db",
        "/.oloproof/oloproof.db",
        "//etc/passwd",
        "/runs/..%2F..%2Fsecret.txt",
        "/runs/..%2F..%2F.oloproof%2Foloproof.db",
        "/runs/%2e%2e/cases/%2e%2e%2f%2e%2e%2fsecret.txt",
        "/runs/run_x/cases/..%2F..%2F..%2Fetc%2Fpasswd",
        "/runs/run_x/case?id=../../secret.txt",
        "/comparisons/..%2Fsecret.txt",
        "/diagnoses/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "http://127.0.0.1/../../etc/passwd",
        "file:///etc/passwd",
        "*",
    ] {
        refused(&s, target.as_bytes(), &run_id);
    }
    // A real case id with a slash is still found (it is looked up, never used as a path).
    let (status, body) = raw(&s, format!("/runs/{run_id}/cases/b%2F2").as_bytes());
    assert_eq!(status, 200, "{body}");
}

#[test]
fn oversized_query_strings_are_refused() {
    let (_tmp, store, run_id) = fixture();
    let s = serve(&store);
    let run = format!("/runs/{run_id}");
    // Under the server's URI limit: an unknown criterion, said once and briefly.
    let long = "a".repeat(60_000);
    let (status, text) = raw(&s, format!("{run}?criterion={long}").as_bytes());
    assert_eq!(status, 400, "{}", &text[..text.len().min(2000)]);
    assert!(
        text.len() < 20_000,
        "the 400 page echoes {} bytes",
        text.len()
    );
    assert!(text.contains("has no criterion `aaaa"), "{}", &text[..2000]);
    // A filter given twice: the viewer's 400 page.
    let (status, page) = raw(&s, format!("{run}?criterion=a&criterion=b").as_bytes());
    assert_eq!(status, 400);
    assert!(
        page.contains("<h1>Bad request</h1>")
            && page.contains("the query string cannot be read (each filter may be given once)")
            && page.contains("duplicate field `criterion`"),
        "{page}"
    );
    // Over it, and with thousands of parameters or repeated ones.
    for target in [
        format!("{run}?criterion={}", "a".repeat(200_000)),
        format!("{run}?slice={}", "x%3D".repeat(50_000)),
        format!("{run}?{}", "outcome=fail&".repeat(20_000)),
        format!("{run}?criterion=a&criterion=b"),
        format!("{run}/case?id={}", "%41".repeat(100_000)),
        format!("/?{}", "q".repeat(1_000_000)),
    ] {
        let status = refused(&s, target.as_bytes(), &run_id);
        assert!(
            [400, 404, 414, 431].contains(&status),
            "{}: {status}",
            &target[..80]
        );
    }
}

#[test]
fn urls_that_are_not_utf8_are_refused() {
    let (_tmp, store, run_id) = fixture();
    let s = serve(&store);
    let run = format!("/runs/{run_id}");
    for target in [
        b"/runs/%FF%FE".to_vec(),
        b"/runs/%C0%AF%C0%AF".to_vec(),
        format!("{run}/cases/%ED%A0%80").into_bytes(),
        format!("{run}/case?id=%FF").into_bytes(),
        format!("{run}?criterion=%FF%FE").into_bytes(),
        format!("{run}?slice=%80").into_bytes(),
        b"/comparisons/%FF".to_vec(),
        b"/diagnoses/sha256:%FF".to_vec(),
        b"/runs/\xff\xfe".to_vec(),
        b"/\xc3\x28".to_vec(),
        b"/static/\xe9t\xe9.css".to_vec(),
        b"/runs/%00".to_vec(),
    ] {
        refused(&s, &target, &run_id);
    }
    // An id that does not decode gets the viewer's own 400 page, saying why.
    let (status, page) = raw(&s, b"/runs/%FF%FE");
    assert_eq!(status, 400);
    assert!(
        page.contains("<h1>Bad request</h1>")
            && page.contains(
                "this address cannot be read (an id in it is not UTF-8 text once percent-decoded?)"
            ),
        "{page}"
    );
}

#[test]
fn a_damaged_store_is_refused_when_the_viewer_starts() {
    let (_tmp, store, _run_id) = fixture();
    let mut bytes = std::fs::read(&store).unwrap();
    bytes[..16].copy_from_slice(b"not a database!!");
    std::fs::write(&store, &bytes).unwrap();
    let err = Viewer::bind(&settings(&store), std::sync::Arc::new(EngineEvaluators))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!(
            "cannot serve {}: run store {}: file is not a database: the file is damaged",
            store.display(),
            store.display()
        )),
        "{err}"
    );
    assert_eq!(std::fs::read(&store).unwrap(), bytes, "left as it was");
}

/// The store fixture of the CLI's fault tests, written by Oloproof at commit cad00c9: no
/// diagnoses, comparisons or calibrations tables.
#[test]
fn a_store_written_by_an_older_oloproof_is_served() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("oloproof.db");
    let sql = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store_cad00c9.sql"),
    )
    .unwrap();
    let mut child = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nc.executescript(sys.stdin.read())\nc.close()\n",
        ])
        .arg(&store)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(sql.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    let s = serve(&store);
    let (status, index) = raw(&s, b"/");
    assert_eq!(status, 200, "{index}");
    for run in [
        "run_01M8RM961ZHEAETW78YC41XSHM",
        "run_01M8RM97S6390PS7Z7RGPE66PF",
    ] {
        assert!(index.contains(run), "{index}");
        let (status, page) = raw(&s, format!("/runs/{run}").as_bytes());
        assert_eq!(status, 200, "{page}");
        let (status, page) = raw(&s, format!("/runs/{run}/cases/c00").as_bytes());
        assert_eq!(status, 200, "{page}");
        assert!(page.contains("word0 question 0"));
    }
}
