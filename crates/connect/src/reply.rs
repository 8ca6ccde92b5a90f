//! Turning a protocol response's `ok` value into typed stage results, shared by every
//! connector. Errors are [`ReplyError`]s; each connector wraps them into its `StageError`.

use crate::error::ReplyError;
use oloproof_core::passage::{Passage, Retrieval};
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// At most `max` characters of `s`, with `…` when cut.
pub(crate) fn excerpt(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(max).collect::<String>())
    }
}

/// A `retrieve` reply, cut to `depth` candidates.
pub(crate) fn retrieval(reply: &Value, depth: usize) -> Result<Retrieval, ReplyError> {
    // Read from the reference: the reply is kept whole only for the error message.
    let mut r = Retrieval::deserialize(reply).map_err(|source| ReplyError::Retrieve {
        reply: reply.to_string(),
        source,
    })?;
    r.candidates.truncate(depth);
    Ok(r)
}

/// A `retrieve_batch` request: the case's input and depth once, then one `{query, lane,
/// skip_filters}` per call (each key only when set).
pub(crate) fn retrieve_batch_request(
    input: &Map<String, Value>,
    depth: usize,
    requests: &[oloproof_core::system::RetrieveRequest<'_>],
) -> Value {
    let calls: Vec<Value> = requests
        .iter()
        .map(|r| {
            let mut call = Map::new();
            if let Some(q) = r.query {
                call.insert("query".into(), json!(q));
            }
            if let Some(l) = r.lane {
                call.insert("lane".into(), json!(l));
            }
            if r.skip_filters {
                call.insert("skip_filters".into(), json!(true));
            }
            Value::Object(call)
        })
        .collect();
    json!({"input": input, "depth": depth, "calls": calls})
}

/// One entry of a `retrieve_batch` reply.
#[derive(Debug)]
pub(crate) enum BatchEntry {
    /// The call's retrieval (cut to `depth`) and the milliseconds the worker measured.
    Retrieved(Retrieval, f64),
    /// The call raised: the protocol's error object (`type`, `message`, `traceback`).
    Raised(Value),
    /// The entry is out of protocol.
    Bad(ReplyError),
}

/// A `retrieve_batch` reply: `{"results": [entry, …]}` with one entry per call, in order; an
/// entry is `{"ok": <retrieve reply>, "elapsed_ms": n}` or `{"error": {…}, "elapsed_ms": n}`.
/// A reply without one entry per call is an error of the whole exchange; a malformed entry is
/// an error of its call only.
pub(crate) fn retrieve_batch(
    reply: Value,
    calls: usize,
    depth: usize,
) -> Result<Vec<BatchEntry>, ReplyError> {
    let whole = |reason: String| ReplyError::RetrieveBatch {
        reason,
        reply: reply.to_string(),
    };
    let Some(results) = reply.get("results").and_then(Value::as_array) else {
        return Err(whole("no `results` array".into()));
    };
    if results.len() != calls {
        return Err(whole(format!(
            "{} results for {calls} calls; `results` has one entry per call, in order",
            results.len()
        )));
    }
    Ok(results
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let bad = |reason: &str| {
                BatchEntry::Bad(ReplyError::RetrieveBatch {
                    reason: format!("`results[{i}]`: {reason}"),
                    reply: entry.to_string(),
                })
            };
            let Some(elapsed) = entry.get("elapsed_ms").and_then(Value::as_f64) else {
                return bad("no `elapsed_ms` (the call's milliseconds, a number)");
            };
            if !(elapsed.is_finite() && elapsed >= 0.0) {
                return bad("`elapsed_ms` must be a non-negative number");
            }
            match (entry.get("ok"), entry.get("error")) {
                (Some(ok), None) => match retrieval(ok, depth) {
                    Ok(r) => BatchEntry::Retrieved(r, elapsed),
                    Err(e) => BatchEntry::Bad(e),
                },
                (None, Some(err)) => BatchEntry::Raised(err.clone()),
                _ => bad("exactly one of `ok` and `error`"),
            }
        })
        .collect())
}

/// A `count_tokens` reply: one non-negative integer per passage.
pub(crate) fn token_counts(reply: Value, passages: usize) -> Result<Vec<usize>, ReplyError> {
    // Why the reply does not parse adds nothing to "expected N non-negative integers, got …".
    serde_json::from_value::<Vec<usize>>(reply.clone())
        .ok()
        .filter(|c| c.len() == passages)
        .ok_or_else(|| ReplyError::TokenCounts {
            expected: passages,
            reply: reply.to_string(),
        })
}

/// A `generate` reply: an object, or a string taken as the answer with no citations.
pub(crate) fn generation(reply: Value) -> Result<Map<String, Value>, ReplyError> {
    match reply {
        Value::Object(m) => Ok(m),
        Value::String(s) => {
            let mut m = Map::new();
            m.insert("answer".into(), Value::String(s));
            m.insert("citations".into(), json!([]));
            Ok(m)
        }
        other => Err(ReplyError::Generation {
            reply: other.to_string(),
        }),
    }
}

/// A `rerank` reply: `{"candidates": [Passage, …]}`.
pub(crate) fn reranked(reply: Value) -> Result<Vec<Passage>, ReplyError> {
    // The message shows the reply itself, which says more than serde's complaint about it.
    reply
        .get("candidates")
        .cloned()
        .and_then(|c| serde_json::from_value::<Vec<Passage>>(c).ok())
        .ok_or_else(|| ReplyError::Rerank {
            reply: reply.to_string(),
        })
}

/// The body of a `retrieve` request: `input` and `depth`, plus `query`, `lane` and
/// `skip_filters` only when set (a protocol 1 request is byte for byte what it was).
pub(crate) fn retrieve_request(
    input: &Map<String, Value>,
    depth: usize,
    request: oloproof_core::system::RetrieveRequest<'_>,
) -> Value {
    let mut body = json!({"input": input, "depth": depth});
    if let Some(q) = request.query {
        body["query"] = json!(q);
    }
    if let Some(l) = request.lane {
        body["lane"] = json!(l);
    }
    if request.skip_filters {
        body["skip_filters"] = json!(true);
    }
    body
}

/// A `rewrite` reply: `{"queries": [str, …], "usage": …}` or a bare list of strings, with at
/// least one query and no empty one.
pub(crate) fn rewrite(reply: Value) -> Result<oloproof_core::pipeline::Rewrite, ReplyError> {
    let bad = |reason: &str| ReplyError::Rewrite {
        reason: reason.to_string(),
        reply: reply.to_string(),
    };
    let (queries, usage) = match &reply {
        Value::Array(_) => (reply.clone(), None),
        Value::Object(o) => (
            o.get("queries")
                .cloned()
                .ok_or_else(|| bad("no `queries`"))?,
            o.get("usage").cloned().filter(|u| !u.is_null()),
        ),
        _ => return Err(bad("expected an object with `queries`")),
    };
    let queries: Vec<String> =
        serde_json::from_value(queries).map_err(|_| bad("`queries` must be a list of strings"))?;
    if queries.is_empty() {
        return Err(bad("`queries` is empty"));
    }
    if queries.iter().any(|q| q.trim().is_empty()) {
        return Err(bad("a query is empty"));
    }
    let usage = usage
        .map(serde_json::from_value)
        .transpose()
        .map_err(|e| bad(&format!("`usage`: {e}")))?;
    Ok(oloproof_core::pipeline::Rewrite { queries, usage })
}

/// The system's `rerank` stage reply: `{"candidates": [Passage, …], "usage": …}`.
pub(crate) fn rerank_stage(
    reply: Value,
) -> Result<(Vec<Passage>, Option<oloproof_core::pipeline::Usage>), ReplyError> {
    let candidates = reranked(reply.clone())?;
    let usage = reply
        .get("usage")
        .cloned()
        .filter(|u| !u.is_null())
        .map(serde_json::from_value)
        .transpose()
        .map_err(|_| ReplyError::Rerank {
            reply: reply.to_string(),
        })?;
    Ok((candidates, usage))
}

/// A `fuse` reply: `{"candidates": [Passage, …]}`.
pub(crate) fn fused(reply: Value) -> Result<Vec<Passage>, ReplyError> {
    let candidates = reply
        .get("candidates")
        .cloned()
        .ok_or_else(|| ReplyError::Fuse {
            reason: "no `candidates`".into(),
            reply: reply.to_string(),
        })?;
    serde_json::from_value(candidates).map_err(|e| ReplyError::Fuse {
        reason: e.to_string(),
        reply: reply.to_string(),
    })
}

/// The body of a `fuse` request: the input and every lane list.
pub(crate) fn fuse_request(
    input: &Map<String, Value>,
    lists: &[oloproof_core::pipeline::LaneRetrieval],
) -> Value {
    let lists: Vec<Value> = lists
        .iter()
        .map(|l| {
            json!({"lane": l.lane, "query": l.retrieval.query.clone().or(l.query.clone()),
                   "candidates": l.retrieval.candidates})
        })
        .collect();
    json!({"input": input, "lists": lists})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_batch_entry_fails_its_call_only() {
        let reply = json!({"results": [
            {"ok": {"depth": 2, "candidates": [{"doc_id": "a"}, {"doc_id": "b"}]}, "elapsed_ms": 2.5},
            {"ok": {"candidates": []}},
            {"ok": {"candidates": []}, "error": {"message": "x"}, "elapsed_ms": 1},
            {"ok": {"candidates": []}, "elapsed_ms": -1},
            {"ok": {"depth": 1, "candidates": "none"}, "elapsed_ms": 1},
            {"error": {"type": "KeyError", "message": "k"}, "elapsed_ms": 0},
        ]});
        let entries = retrieve_batch(reply, 6, 1).unwrap();
        match &entries[0] {
            BatchEntry::Retrieved(r, ms) => {
                assert_eq!((r.candidates.len(), *ms), (1, 2.5));
            }
            other => panic!("{other:?}"),
        }
        let reason = |e: &BatchEntry| match e {
            BatchEntry::Bad(e) => e.to_string(),
            other => panic!("{other:?}"),
        };
        assert!(reason(&entries[1]).contains("`results[1]`: no `elapsed_ms`"));
        assert!(reason(&entries[2]).contains("`results[2]`: exactly one of `ok` and `error`"));
        assert!(reason(&entries[3]).contains("`elapsed_ms` must be a non-negative number"));
        assert!(reason(&entries[4]).starts_with("bad retrieve reply"));
        assert!(matches!(&entries[5], BatchEntry::Raised(e) if e["type"] == "KeyError"));
        let whole = retrieve_batch(json!({"results": {}}), 1, 1).unwrap_err();
        assert!(whole.to_string().contains("no `results` array"), "{whole}");
    }

    #[test]
    fn replies() {
        let r = retrieval(
            &json!({"depth": 2, "candidates": [{"doc_id": "a"}, {"doc_id": "b"}, {"doc_id": "c"}]}),
            2,
        )
        .unwrap();
        assert_eq!(r.candidates.len(), 2);
        assert!(retrieval(&json!({"candidates": 3}), 2)
            .unwrap_err()
            .to_string()
            .starts_with("bad retrieve reply"));
        assert_eq!(token_counts(json!([1, 2]), 2).unwrap(), [1, 2]);
        assert!(token_counts(json!([1]), 2).is_err());
        assert!(token_counts(json!([-1, 2]), 2).is_err());
        assert_eq!(generation(json!("x")).unwrap()["answer"], "x");
        assert!(generation(json!(3)).is_err());
        assert_eq!(
            reranked(json!({"candidates": [{"doc_id": "a"}]})).unwrap()[0].doc_id,
            "a"
        );
        assert_eq!(excerpt("abcdef", 3), "abc…");
        let rw =
            rewrite(json!({"queries": ["a", "b"], "usage": {"model": "m", "input_tokens": 3}}))
                .unwrap();
        assert_eq!(rw.queries, ["a", "b"]);
        assert_eq!(rw.usage.unwrap().input_tokens, Some(3));
        assert_eq!(rewrite(json!(["q"])).unwrap().queries, ["q"]);
        assert_eq!(
            rewrite(json!({"queries": []})).unwrap_err().to_string(),
            r#"bad rewrite reply (`queries` is empty): {"queries":[]}"#
        );
        assert!(rewrite(json!({"queries": [1]})).is_err());
        assert!(rewrite(json!("q")).is_err());
        let filtered = retrieval(
            &json!({"depth": 1, "candidates": [], "filters": [{"field": "tenant", "op": "=", "value": "a"}]}),
            1,
        )
        .unwrap();
        assert_eq!(filtered.filters[0].field, "tenant");
        let bad_op = retrieval(
            &json!({"depth": 1, "candidates": [], "filters": [{"field": "tenant", "op": "~"}]}),
            1,
        );
        assert!(bad_op
            .unwrap_err()
            .to_string()
            .contains("unknown variant `~`"));
        let hopless = retrieval(
            &json!({"depth": 1, "candidates": [], "hops": [{"query": "x"}]}),
            1,
        );
        assert!(hopless
            .unwrap_err()
            .to_string()
            .contains("missing field `candidates`"));
        let body = retrieve_request(
            &Map::new(),
            3,
            oloproof_core::system::RetrieveRequest::default(),
        );
        assert_eq!(body.to_string(), r#"{"input":{},"depth":3}"#);
        let body = retrieve_request(
            &Map::new(),
            3,
            oloproof_core::system::RetrieveRequest {
                query: Some("q"),
                lane: Some("bm25"),
                skip_filters: false,
            },
        );
        assert_eq!(
            body.to_string(),
            r#"{"input":{},"depth":3,"query":"q","lane":"bm25"}"#
        );
        assert_eq!(
            token_counts(json!([1]), 2).unwrap_err().to_string(),
            "expected 2 non-negative integers, got [1]"
        );
        assert_eq!(
            generation(json!(3)).unwrap_err().to_string(),
            "generate must return an object or a string, got 3"
        );
        assert_eq!(
            reranked(json!({"x": 1})).unwrap_err().to_string(),
            r#"bad rerank reply: {"x":1}"#
        );
    }
}
