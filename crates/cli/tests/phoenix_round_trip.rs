//! A round trip through a real Arize Phoenix (`arize-phoenix` from PyPI, installed by
//! scripts/test into its own venv and named by `OLOPROOF_PHOENIX`): Phoenix is started offline
//! on free loopback ports, the app of `fixtures/otel_app` (the real OpenTelemetry SDK and
//! OpenInference conventions) sends it its spans over OTLP/HTTP, a user's thumbs-down is logged
//! as a span annotation through Phoenix's REST API, and Phoenix's own exports — the spans
//! (`GET /v1/projects/default/spans`), the OTLP-shaped spans (`…/spans/otlpv1`) and the span
//! annotations, and the spans dataframe of its Python client written by pandas — are
//! imported. Each gives the records the app's own OTLP file gives, field for
//! field, apart from the source (`phoenix`), the annotation's feedback, and, for the OTLP-shaped
//! export, times Phoenix rounds through a float (under a microsecond).

mod common;

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

/// A running Phoenix, killed when dropped.
struct Phoenix {
    child: Child,
    base: String,
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

fn get_json(url: &str) -> Value {
    let mut resp = agent().get(url).call().unwrap();
    assert_eq!(resp.status().as_u16(), 200, "GET {url}");
    serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap()
}

/// Starts `phoenix serve` with its data in `dir`, and waits for `/healthz` (three minutes at
/// most: a cold start imports a large Python tree).
fn start(phoenix: &str, dir: &Path) -> Phoenix {
    let (http, grpc) = (free_port(), free_port());
    let log = std::fs::File::create(dir.join("phoenix.log")).unwrap();
    let child = Command::new(phoenix)
        .arg("serve")
        .env("PHOENIX_WORKING_DIR", dir.join("phoenix-data"))
        .env("PHOENIX_HOST", "127.0.0.1")
        .env("PHOENIX_PORT", http.to_string())
        .env("PHOENIX_GRPC_PORT", grpc.to_string())
        .env("PHOENIX_TELEMETRY_ENABLED", "false")
        .stdout(Stdio::from(log.try_clone().unwrap()))
        .stderr(Stdio::from(log))
        .spawn()
        .unwrap();
    let running = Phoenix {
        child,
        base: format!("http://127.0.0.1:{http}"),
    };
    let started = Instant::now();
    loop {
        let up = agent()
            .get(&format!("{}/healthz", running.base))
            .call()
            .is_ok_and(|r| r.status().as_u16() == 200);
        if up {
            return running;
        }
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "Phoenix did not start in 3 minutes:\n{}",
            std::fs::read_to_string(dir.join("phoenix.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn records(path: &Path) -> BTreeMap<String, Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["id"].as_str().unwrap().to_string(), v)
        })
        .collect()
}

/// `got` equals `want` but for `production.source`, and numbers within `tolerance`.
fn same_record(want: &Value, got: &Value, tolerance: f64, path: &str) {
    match (want, got) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let at = format!("{path}.{k}");
                if at.ends_with(".production.source") {
                    assert_eq!(b[k], "phoenix", "{at}");
                    continue;
                }
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => same_record(x, y, tolerance, &at),
                    (x, y) => panic!("{at}: from the file {x:?}, through Phoenix {y:?}"),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            assert_eq!(a.len(), b.len(), "{path}: {want} against {got}");
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                same_record(x, y, tolerance, &format!("{path}[{i}]"));
            }
        }
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!((x - y).abs() <= tolerance, "{path}: {x} against {y}");
        }
        (x, y) => assert_eq!(x, y, "{path}"),
    }
}

fn import(dir: &Path, files: &[&str], output: &str) -> String {
    let mut args = vec!["import"];
    args.extend_from_slice(files);
    args.extend_from_slice(&["-o", output]);
    let o = oloproof(dir, &args);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    stdout(&o)
}

#[test]
fn spans_exported_by_a_real_phoenix_import_as_the_app_wrote_them() {
    let Some(phoenix) = reference_tool("OLOPROOF_PHOENIX") else {
        return;
    };
    let Some(py) = reference_python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let server = start(&phoenix, dir);

    // The app writes its files and sends the same spans to Phoenix.
    let app: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/otel_app/app.py");
    let out = Command::new(&py)
        .arg(&app)
        .arg(dir)
        .args(["--endpoint", &format!("{}/v1/traces", server.base)])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the app failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("Failed to export"));

    // Phoenix ingests asynchronously: wait for the 17 spans.
    let spans_url = format!("{}/v1/projects/default/spans?limit=1000", server.base);
    let started = Instant::now();
    let spans = loop {
        let page = get_json(&spans_url);
        if page["data"].as_array().is_some_and(|d| d.len() == 17) {
            break page;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "Phoenix holds {} spans, not 17",
            page["data"].as_array().map_or(0, Vec::len)
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    // A user's thumbs-down on the fifth trace, logged as Phoenix logs human feedback.
    let root = spans["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["parent_id"].is_null()
                && s["context"]["trace_id"]
                    .as_str()
                    .is_some_and(|t| t.ends_with("05"))
        })
        .unwrap();
    let root_span = root["context"]["span_id"].as_str().unwrap().to_string();
    let trace = root["context"]["trace_id"].as_str().unwrap().to_string();
    let body = json!({"data": [{"span_id": root_span, "name": "thumbs", "annotator_kind": "HUMAN",
        "result": {"label": "down", "score": 0, "explanation": "missed the gift cards"}}]});
    let resp = agent()
        .post(&format!("{}/v1/span_annotations?sync=true", server.base))
        .header("content-type", "application/json")
        .send(body.to_string())
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let annotations = get_json(&format!(
        "{}/v1/projects/default/span_annotations?span_ids={root_span}",
        server.base
    ));
    let otlp = get_json(&format!(
        "{}/v1/projects/default/spans/otlpv1?limit=1000",
        server.base
    ));
    // The spans dataframe, as Phoenix's own Python client returns it, written by pandas.
    let python = Path::new(&phoenix).with_file_name("python");
    let script = format!(
        "from phoenix.client import Client\n\
         df = Client(base_url={:?}).spans.get_spans_dataframe(project_identifier='default')\n\
         assert len(df) == 17, len(df)\n\
         df.to_json('phoenix-df.jsonl', orient='records', lines=True, date_format='iso')\n",
        server.base
    );
    let out = Command::new(&python)
        .args(["-c", &script])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the dataframe export failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(dir.join("phoenix-spans.json"), spans.to_string()).unwrap();
    std::fs::write(
        dir.join("phoenix-annotations.json"),
        annotations.to_string(),
    )
    .unwrap();
    std::fs::write(dir.join("phoenix-otlp.json"), otlp.to_string()).unwrap();
    drop(server);

    import(dir, &["spans.pb"], "files.jsonl");
    let summary = import(
        dir,
        &["phoenix-spans.json", "phoenix-annotations.json"],
        "rest.jsonl",
    );
    assert!(
        summary.starts_with("Imported 2 files (phoenix): 17 spans read = 17 used + 0 dropped"),
        "{summary}"
    );
    let summary = import(dir, &["phoenix-otlp.json"], "otlp.jsonl");
    assert!(
        summary.starts_with("Imported 1 file (phoenix): 17 spans read = 17 used + 0 dropped"),
        "{summary}"
    );
    assert!(!summary.contains("Problems"), "{summary}");

    let want = records(&dir.join("files.jsonl"));
    assert_eq!(want.len(), 5);
    let mut rest = records(&dir.join("rest.jsonl"));
    // The annotation is the one difference of the REST export: the trace's feedback.
    let annotated = rest.get_mut(&trace).unwrap();
    let feedback = annotated["production"]["feedback"].as_array_mut().unwrap();
    let logged = feedback.pop().unwrap();
    assert_eq!(
        logged,
        json!({"name": "thumbs", "value": 0.0, "comment": "missed the gift cards", "source": "phoenix:HUMAN"})
    );
    if feedback.is_empty() && want[&trace]["production"].get("feedback").is_none() {
        annotated["production"]
            .as_object_mut()
            .unwrap()
            .remove("feedback");
    }
    assert_eq!(
        rest.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (id, record) in &want {
        same_record(record, &rest[id], 0.0, id);
    }
    // The dataframe: the same records.
    let summary = import(dir, &["phoenix-df.jsonl"], "df.jsonl");
    assert!(
        summary.starts_with("Imported 1 file (phoenix): 17 spans read = 17 used + 0 dropped"),
        "{summary}"
    );
    let df = records(&dir.join("df.jsonl"));
    assert_eq!(
        df.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (id, record) in &want {
        same_record(record, &df[id], 0.0, id);
    }
    // The OTLP-shaped export: Phoenix keeps times as floats, off by under a microsecond.
    let otlp = records(&dir.join("otlp.jsonl"));
    assert_eq!(
        otlp.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (id, record) in &want {
        same_record(record, &otlp[id], 1e-3, id);
    }
}
