//! `oloproof store copy --with-collected`: the OTLP requests `oloproof collect` recorded move
//! between stores byte for byte and in arrival order, a second copy adds nothing, and the
//! copy imports to the same trace records as the original.

mod common;

use common::*;
use oloproof_core::store::{CollectedRequest, OtlpEncoding, OtlpSignal, StoreLocation};

/// A minimal OTLP/JSON request: one retriever span of trace `trace`.
fn json_body(trace: &str, question: &str) -> Vec<u8> {
    serde_json::json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "shop"}}]},
        "scopeSpans": [{"spans": [{
            "traceId": trace,
            "spanId": "00000000000000a1",
            "name": "retrieve",
            "startTimeUnixNano": "1764979200000000000",
            "endTimeUnixNano": "1764979200050000000",
            "attributes": [
                {"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}},
                {"key": "input.value", "value": {"stringValue": question}},
                {"key": "retrieval.documents.0.document.id", "value": {"stringValue": "d1"}}
            ]
        }]}]
    }]})
    .to_string()
    .into_bytes()
}

fn collected(path: &std::path::Path) -> Vec<CollectedRequest> {
    let store = oloproof_store::open(&StoreLocation::Sqlite(path.to_path_buf())).unwrap();
    store.collected_page(0, 1000).unwrap()
}

#[test]
fn collected_requests_are_copied_once_in_order_and_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src.db");
    let dst = tmp.path().join("dst.db");
    let sdk = std::fs::read(repo().join("crates/cli/tests/fixtures/import/sdk_spans.pb")).unwrap();
    let requests = vec![
        (OtlpEncoding::Protobuf, 17, sdk),
        (
            OtlpEncoding::Json,
            1,
            json_body("0000000000000000000000000000000b", "Where is my parcel?"),
        ),
        (
            OtlpEncoding::Json,
            1,
            json_body("0000000000000000000000000000000c", "How do I return it?"),
        ),
    ];
    {
        let mut store = oloproof_store::open(&StoreLocation::Sqlite(src.clone())).unwrap();
        let rows: Vec<CollectedRequest> = requests
            .into_iter()
            .enumerate()
            .map(|(i, (encoding, spans, body))| CollectedRequest {
                seq: 0,
                received_ms: 1_764_979_200_000 + i as i64,
                signal: OtlpSignal::Traces,
                encoding,
                spans,
                body,
            })
            .collect();
        assert_eq!(store.append_collected(&rows).unwrap(), vec![1, 2, 3]);
    }
    let (src_arg, dst_arg) = (src.to_str().unwrap(), dst.to_str().unwrap());

    // Without the flag, nothing collected moves.
    let o = oloproof(tmp.path(), &["store", "copy", src_arg, dst_arg]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&o).contains("collected"), "{}", stdout(&o));
    assert!(collected(&dst).is_empty());

    // Copies with the flag; the summary line must say `said`.
    let copy_collected = |said: &str| {
        let o = oloproof(
            tmp.path(),
            &["store", "copy", src_arg, dst_arg, "--with-collected"],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(stdout(&o).contains(said), "{}", stdout(&o));
    };
    copy_collected("; 3 collected requests (0 already there)");
    let (before, after) = (collected(&src), collected(&dst));
    assert_eq!(after.len(), 3);
    for (a, b) in before.iter().zip(&after) {
        assert_eq!(
            (a.seq, a.received_ms, a.encoding, a.spans, &a.body),
            (b.seq, b.received_ms, b.encoding, b.spans, &b.body)
        );
    }

    // Copied again: nothing added.
    copy_collected("; 0 collected requests (3 already there)");
    assert_eq!(collected(&dst).len(), 3);

    // Both stores import to the same trace records.
    let import = |store: &str, out: &str| {
        let out = tmp.path().join(out);
        let o = oloproof(
            tmp.path(),
            &[
                "import",
                "--collected",
                "--store",
                store,
                "-o",
                out.to_str().unwrap(),
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(
            stdout(&o).contains("3 collected requests"),
            "{}",
            stdout(&o)
        );
        std::fs::read_to_string(out).unwrap()
    };
    let (from_src, from_dst) = (import(src_arg, "src.jsonl"), import(dst_arg, "dst.jsonl"));
    assert!(from_src.lines().count() >= 3, "{from_src}");
    assert_eq!(from_src, from_dst);
}
