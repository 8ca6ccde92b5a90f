//! `retrieve_batch`: a case's retrieve calls in one request to a worker that declared the op,
//! one request per call to one that did not, and the real Python shim answering it.

use std::path::Path;
use std::time::Duration;

use oloproof_connect::{
    install_python_shim, SystemConnection, WorkerCommand, WorkerConnection, WorkerOptions,
};
use oloproof_core::system::RetrieveRequest;
use oloproof_core::trace::ErrorKind;
use serde_json::Map;

/// A worker written straight to the protocol: `hello` declares `ops`; `retrieve_batch` answers
/// each call with a candidate named `lane/query` and `elapsed_ms` 1.5, the call whose lane is
/// `boom` with an error, and `results` one short when the first call's lane is `short`; a plain
/// `retrieve` answers with a candidate named `single/lane/query`.
const RAW_WORKER: &str = r#"
import json, sys
ops = sys.argv[1].split(",")
for line in sys.stdin:
    req = json.loads(line)
    op = req["op"]
    if op == "hello":
        ok = {"protocol": 1, "name": "raw", "version": "1", "ops": ops, "lanes": ["a", "b", "boom", "short"]}
    elif op == "retrieve_batch" and op in ops:
        results = []
        for call in req["calls"]:
            if call.get("lane") == "boom":
                results.append({"error": {"type": "ValueError", "message": "boom", "traceback": "tb"}, "elapsed_ms": 0.5})
            else:
                name = "%s/%s" % (call.get("lane"), call.get("query"))
                results.append({"ok": {"query": call.get("query"), "depth": req["depth"],
                                       "candidates": [{"doc_id": name}, {"doc_id": "second"}]},
                                "elapsed_ms": 1.5})
        if req["calls"][0].get("lane") == "short":
            results.pop()
        ok = {"results": results}
    elif op == "retrieve":
        name = "single/%s/%s" % (req.get("lane"), req.get("query"))
        ok = {"query": req.get("query"), "depth": req["depth"], "candidates": [{"doc_id": name}]}
    else:
        print(json.dumps({"id": req["id"], "error": {"type": "UnknownOp", "message": op, "traceback": ""}}), flush=True)
        continue
    print(json.dumps({"id": req["id"], "ok": ok}), flush=True)
"#;

fn connect(
    program: &str,
    args: &[&str],
    cwd: &Path,
    env: Vec<(String, String)>,
) -> WorkerConnection {
    WorkerConnection::connect(WorkerOptions {
        command: WorkerCommand {
            program: program.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            cwd: cwd.to_path_buf(),
            env,
            fork_server_args: None,
        },
        timeout: Duration::from_secs(30),
        params: Map::new(),
    })
    .expect("the worker says hello")
}

/// A connection to the real Python shim serving `class` of `app` (an `app.py` written in a
/// new folder, kept alive by the returned guard).
fn shim_connection(app: &str, class: &str) -> (tempfile::TempDir, WorkerConnection) {
    let dir = tempfile::tempdir().unwrap();
    let shim = install_python_shim(dir.path()).unwrap();
    std::fs::write(dir.path().join("app.py"), app).unwrap();
    let pythonpath = format!("{}:{}", shim.display(), dir.path().display());
    let target = format!("app:{class}");
    let conn = connect(
        "python3",
        &["-u", "-m", "oloproof.worker", &target],
        dir.path(),
        vec![("PYTHONPATH".into(), pythonpath)],
    );
    (dir, conn)
}

fn raw(ops: &str) -> WorkerConnection {
    connect(
        "python3",
        &["-u", "-c", RAW_WORKER, ops],
        Path::new("."),
        Vec::new(),
    )
}

fn calls<'a>(pairs: &'a [(&'a str, &'a str)]) -> Vec<RetrieveRequest<'a>> {
    pairs
        .iter()
        .map(|(query, lane)| RetrieveRequest {
            query: Some(query),
            lane: Some(lane),
            skip_filters: false,
        })
        .collect()
}

/// Each call's doc ids and time, or its error as `stage: type: message`.
type Outcome = Result<(Vec<String>, f64), String>;

fn doc_ids(conn: &mut WorkerConnection, pairs: &[(&str, &str)], depth: usize) -> Vec<Outcome> {
    conn.retrieve_batch(&Map::new(), depth, &calls(pairs))
        .expect("the exchange itself succeeds")
        .into_iter()
        .map(|r| {
            r.map(|t| {
                let ids = t
                    .retrieval
                    .candidates
                    .iter()
                    .map(|p| p.doc_id.clone())
                    .collect();
                (ids, t.latency_ms)
            })
            .map_err(|e| {
                format!(
                    "{}: {}: {}",
                    e.stage,
                    e.error_type.unwrap_or_default(),
                    e.message
                )
            })
        })
        .collect()
}

fn ids(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_worker_that_declares_retrieve_batch_gets_every_call_in_one_request() {
    let mut conn = raw("retrieve,generate,retrieve_batch");
    // Every call answered by the batch (a plain `retrieve` would name `single/…`), in order,
    // cut to the depth asked for, timed as the worker measured.
    let got = doc_ids(&mut conn, &[("q1", "a"), ("q1", "b"), ("q2", "a")], 1);
    assert_eq!(
        got,
        vec![
            Ok((ids(&["a/q1"]), 1.5)),
            Ok((ids(&["b/q1"]), 1.5)),
            Ok((ids(&["a/q2"]), 1.5)),
        ]
    );
    // A call that raised ends the list there, as one request per call would have.
    let got = doc_ids(&mut conn, &[("q1", "a"), ("q1", "boom"), ("q2", "a")], 2);
    assert_eq!(
        got,
        vec![
            Ok((ids(&["a/q1", "second"]), 1.5)),
            Err("retrieve: ValueError: boom".to_string()),
        ]
    );
    // A reply without one result per call is a protocol error of the whole exchange.
    let err = conn
        .retrieve_batch(&Map::new(), 2, &calls(&[("q", "short"), ("q", "a")]))
        .expect_err("one result short");
    assert_eq!(err.kind, ErrorKind::Protocol);
    assert!(
        err.message.contains("1 results for 2 calls"),
        "{}",
        err.message
    );
    // A single call stays a plain `retrieve` (protocol 1's request, byte for byte).
    let got = doc_ids(&mut conn, &[("q", "a")], 2);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].as_ref().unwrap().0, ids(&["single/a/q"]));
}

#[test]
fn a_worker_without_the_op_gets_one_retrieve_per_call() {
    let mut conn = raw("retrieve,generate");
    let got = doc_ids(&mut conn, &[("q1", "a"), ("q2", "b")], 3);
    let got: Vec<Vec<String>> = got.into_iter().map(|r| r.unwrap().0).collect();
    assert_eq!(got, vec![ids(&["single/a/q1"]), ids(&["single/b/q2"])]);
}

#[test]
fn the_python_shim_declares_and_answers_retrieve_batch() {
    let (_dir, mut conn) = shim_connection(
        r#"
from oloproof import Passage, Retrieval, rag_system

@rag_system(name="lanes", version="1", depth=3, top_k=1, lanes=["a", "boom"])
class Lanes:
    def retrieve(self, input, depth, query=None, lane=None):
        if lane == "boom":
            raise ValueError("no such index: " + query)
        return Retrieval(query=query, depth=depth,
                         candidates=[Passage("%s-%d" % (query, i)) for i in range(depth + 2)])

    def generate(self, input, context):
        return "x"
"#,
        "Lanes",
    );
    assert!(
        conn.info().implements("retrieve_batch"),
        "{:?}",
        conn.info().ops
    );
    let got = conn
        .retrieve_batch(
            &Map::new(),
            2,
            &calls(&[("x", "a"), ("y", "a"), ("z", "boom"), ("w", "a")]),
        )
        .unwrap();
    assert_eq!(got.len(), 3, "ends at the failed call: {got:?}");
    let first = got[0].as_ref().unwrap();
    let first_ids: Vec<&str> = first
        .retrieval
        .candidates
        .iter()
        .map(|p| p.doc_id.as_str())
        .collect();
    assert_eq!(first_ids, ["x-0", "x-1"]);
    assert!(first.latency_ms >= 0.0 && first.latency_ms < 10_000.0);
    assert_eq!(
        got[1].as_ref().unwrap().retrieval.query.as_deref(),
        Some("y")
    );
    let err = got[2].as_ref().unwrap_err();
    assert_eq!(
        (err.stage.as_str(), err.error_type.as_deref()),
        ("retrieve", Some("ValueError"))
    );
    assert_eq!(err.message, "no such index: z");
    assert!(
        err.traceback.as_deref().unwrap_or("").contains("app.py"),
        "{err:?}"
    );
}

/// The rewrite and each retrieval of `rewrite_retrieve`, as `query/lane` names or errors as
/// `stage: type: message`.
type RewriteOutcome = (Result<Vec<String>, String>, Vec<Result<String, String>>);

fn rewrite_retrieved(
    conn: &mut WorkerConnection,
    question: &str,
    lanes: &[&str],
) -> RewriteOutcome {
    let mut input = Map::new();
    input.insert("question".into(), question.into());
    let error = |e: oloproof_core::trace::StageError| {
        format!(
            "{}: {}: {}",
            e.stage,
            e.error_type.unwrap_or_default(),
            e.message
        )
    };
    let got = conn
        .rewrite_retrieve(&input, 2, lanes, false)
        .expect("the exchange itself succeeds");
    let rewrite = got.rewrite.map(|(r, _)| r.queries).map_err(error);
    let retrievals = got
        .retrievals
        .into_iter()
        .map(|r| {
            r.map(|t| t.retrieval.candidates[0].doc_id.clone())
                .map_err(error)
        })
        .collect();
    (rewrite, retrievals)
}

#[test]
fn the_python_shim_rewrites_and_retrieves_in_one_request() {
    let (_dir, mut conn) = shim_connection(
        r#"
from oloproof import Passage, Retrieval, rag_system

@rag_system(name="rw", version="1", depth=3, top_k=1, lanes=["a", "b", "boom"])
class Rewriting:
    def rewrite(self, input):
        q = input["question"]
        if q == "raise":
            raise KeyError("no rewriter")
        if q == "none":
            return []
        return [q, q + "+"]

    def retrieve(self, input, depth, query=None, lane=None):
        if lane == "boom":
            raise ValueError("lane down")
        return Retrieval(query=query, depth=depth, candidates=[Passage("%s/%s" % (query, lane))])

    def generate(self, input, context):
        return "x"
"#,
        "Rewriting",
    );
    assert!(
        conn.info().implements("rewrite_retrieve"),
        "{:?}",
        conn.info().ops
    );
    // Queries outer, lanes inner, in one request.
    let (rewrite, retrievals) = rewrite_retrieved(&mut conn, "q", &["a", "b"]);
    assert_eq!(rewrite, Ok(ids(&["q", "q+"])));
    assert_eq!(
        retrievals,
        vec![
            Ok("q/a".to_string()),
            Ok("q/b".to_string()),
            Ok("q+/a".to_string()),
            Ok("q+/b".to_string()),
        ]
    );
    // A call that raised ends the list there, as `retrieve_batch` does.
    let (_, retrievals) = rewrite_retrieved(&mut conn, "q", &["a", "boom", "b"]);
    assert_eq!(
        retrievals,
        vec![
            Ok("q/a".to_string()),
            Err("retrieve: ValueError: lane down".to_string()),
        ]
    );
    // A rewrite that raised, or returned no query, is the rewrite's error, and nothing was
    // retrieved.
    let (rewrite, retrievals) = rewrite_retrieved(&mut conn, "raise", &["a"]);
    assert_eq!(rewrite, Err("rewrite: KeyError: 'no rewriter'".to_string()));
    assert!(retrievals.is_empty());
    let (rewrite, _) = rewrite_retrieved(&mut conn, "none", &["a"]);
    assert_eq!(
        rewrite,
        Err("rewrite: ValueError: rewrite() returned no query".to_string())
    );
}

/// A worker written straight to the protocol whose `rewrite_retrieve` replies break it in the
/// way the question names.
const RAW_REWRITER: &str = r#"
import json, sys
for line in sys.stdin:
    req = json.loads(line)
    op = req["op"]
    if op == "hello":
        ok = {"protocol": 1, "name": "raw", "version": "1",
              "ops": ["retrieve", "generate", "rewrite", "rewrite_retrieve"], "lanes": ["a"]}
    else:
        q = req["input"]["question"]
        hit = {"ok": {"query": q, "depth": 2, "candidates": [{"doc_id": "d"}]}, "elapsed_ms": 1.0}
        if q == "short":
            ok = {"rewrite": {"ok": {"queries": ["x", "y"]}, "elapsed_ms": 0.5}, "results": [hit]}
        elif q == "empty-query":
            ok = {"rewrite": {"ok": {"queries": [" "]}, "elapsed_ms": 0.5}, "results": [hit]}
        elif q == "untimed":
            ok = {"rewrite": {"ok": {"queries": ["x"]}}, "results": [hit]}
        else:
            ok = {"results": [hit]}
    print(json.dumps({"id": req["id"], "ok": ok}), flush=True)
"#;

#[test]
fn rewrite_retrieve_replies_out_of_protocol_are_errors_naming_what_is_wrong() {
    let mut conn = connect(
        "python3",
        &["-u", "-c", RAW_REWRITER],
        Path::new("."),
        Vec::new(),
    );
    let mut input = Map::new();
    let mut ask = |q: &str| {
        input.insert("question".into(), q.into());
        conn.rewrite_retrieve(&input, 2, &["a"], false)
    };
    // Not one result per query and lane: the whole exchange.
    let err = ask("short").expect_err("one result for two calls");
    assert_eq!(err.kind, ErrorKind::Protocol);
    assert!(
        err.message.contains("1 results for 2 calls"),
        "{}",
        err.message
    );
    let err = ask("no-rewrite").expect_err("no rewrite entry");
    assert!(
        err.message.contains("no `rewrite` entry"),
        "{}",
        err.message
    );
    // A bad rewrite entry: the rewrite's protocol error, no retrieval read.
    let got = ask("empty-query").unwrap();
    let err = got.rewrite.unwrap_err();
    assert_eq!(
        (err.stage.as_str(), err.kind),
        ("rewrite", ErrorKind::Protocol)
    );
    assert!(err.message.contains("a query is empty"), "{}", err.message);
    assert!(got.retrievals.is_empty());
    let err = ask("untimed").unwrap().rewrite.unwrap_err();
    assert!(
        err.message.contains("`rewrite`: no `elapsed_ms`"),
        "{}",
        err.message
    );
}
