//! Turning a protocol response's `ok` value into typed stage results, shared by every
//! connector. Errors are [`ReplyError`]s; each connector wraps them into its `StageError`.

use crate::error::ReplyError;
use oloproof_core::passage::{Passage, Retrieval};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
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

/// A request line: the body's fields, then `id` and `op` (`{…,"id":7,"op":"retrieve"}\n`),
/// written straight from borrowed request data. `body` must serialize as a JSON object.
pub(crate) fn request_line(
    op: &str,
    id: u64,
    body: &impl Serialize,
) -> Result<String, serde_json::Error> {
    let mut line = serde_json::to_string(body)?;
    if line.pop() != Some('}') {
        return Err(serde::ser::Error::custom(
            "a request body must be a JSON object",
        ));
    }
    if line.len() > 1 {
        line.push(',');
    }
    line.push_str("\"id\":");
    line.push_str(&id.to_string());
    line.push_str(",\"op\":");
    line.push_str(&serde_json::to_string(op)?);
    // The newline ends the line in the same `write` (one wake-up of the worker, not two).
    line.push_str("}\n");
    Ok(line)
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The body of a `retrieve` request: `input` and `depth`, plus `query`, `lane` and
/// `skip_filters` only when set (a protocol 1 request is byte for byte what it was).
#[derive(Serialize)]
pub(crate) struct RetrieveBody<'a> {
    input: &'a Map<String, Value>,
    depth: usize,
    #[serde(flatten)]
    call: RetrieveCall<'a>,
}

impl<'a> RetrieveBody<'a> {
    /// The body of one retrieve call.
    pub(crate) fn new(
        input: &'a Map<String, Value>,
        depth: usize,
        request: oloproof_core::system::RetrieveRequest<'a>,
    ) -> Self {
        RetrieveBody {
            input,
            depth,
            call: RetrieveCall::from(request),
        }
    }
}

/// One call's `query`, `lane` and `skip_filters`, each only when set.
#[derive(Serialize)]
struct RetrieveCall<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    query: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lane: Option<&'a str>,
    #[serde(skip_serializing_if = "is_false")]
    skip_filters: bool,
}

impl<'a> From<oloproof_core::system::RetrieveRequest<'a>> for RetrieveCall<'a> {
    fn from(r: oloproof_core::system::RetrieveRequest<'a>) -> Self {
        RetrieveCall {
            query: r.query,
            lane: r.lane,
            skip_filters: r.skip_filters,
        }
    }
}

/// A `retrieve_batch` request: the case's input and depth once, then one `{query, lane,
/// skip_filters}` per call (each key only when set).
#[derive(Serialize)]
pub(crate) struct RetrieveBatchBody<'a> {
    input: &'a Map<String, Value>,
    depth: usize,
    calls: Vec<RetrieveCall<'a>>,
}

impl<'a> RetrieveBatchBody<'a> {
    /// The body of several retrieve calls of one case.
    pub(crate) fn new(
        input: &'a Map<String, Value>,
        depth: usize,
        requests: &[oloproof_core::system::RetrieveRequest<'a>],
    ) -> Self {
        RetrieveBatchBody {
            input,
            depth,
            calls: requests.iter().map(|r| RetrieveCall::from(*r)).collect(),
        }
    }
}

/// A `rewrite_retrieve` request: the case's input and depth, the lanes to retrieve each
/// query through (absent for a system without lanes), and `skip_filters` when set.
#[derive(Serialize)]
pub(crate) struct RewriteRetrieveBody<'a> {
    pub(crate) input: &'a Map<String, Value>,
    pub(crate) depth: usize,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub(crate) lanes: &'a [&'a str],
    #[serde(skip_serializing_if = "is_false")]
    pub(crate) skip_filters: bool,
}

/// The body of a request on a case's input and a list of passages: `rerank`
/// (`{"input", "candidates"}`, with the intervention's `function` first when set).
#[derive(Serialize)]
pub(crate) struct CandidatesBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) function: Option<&'a str>,
    pub(crate) input: &'a Map<String, Value>,
    pub(crate) candidates: &'a [Passage],
}

/// The body of a `generate` request.
#[derive(Serialize)]
pub(crate) struct GenerateBody<'a> {
    pub(crate) input: &'a Map<String, Value>,
    pub(crate) context: &'a [oloproof_core::context::ContextPassage],
}

/// The body of a `rewrite` request.
#[derive(Serialize)]
pub(crate) struct InputBody<'a> {
    pub(crate) input: &'a Map<String, Value>,
}

/// The body of a `count_tokens` request.
#[derive(Serialize)]
pub(crate) struct PassagesBody<'a> {
    pub(crate) passages: &'a [Passage],
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

/// One timed entry of a batch reply, `{"ok": …, "elapsed_ms": n}` or `{"error": {…},
/// "elapsed_ms": n}`: its `ok` (`Ok`) or `error` (`Err`) and its milliseconds, or why it is out
/// of protocol.
fn timed_entry(entry: &Value) -> Result<(Result<&Value, &Value>, f64), &'static str> {
    let Some(elapsed) = entry.get("elapsed_ms").and_then(Value::as_f64) else {
        return Err("no `elapsed_ms` (the call's milliseconds, a number)");
    };
    if !(elapsed.is_finite() && elapsed >= 0.0) {
        return Err("`elapsed_ms` must be a non-negative number");
    }
    match (entry.get("ok"), entry.get("error")) {
        (Some(ok), None) => Ok((Ok(ok), elapsed)),
        (None, Some(err)) => Ok((Err(err), elapsed)),
        _ => Err("exactly one of `ok` and `error`"),
    }
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
        .map(|(i, entry)| batch_entry(i, entry, depth))
        .collect())
}

/// Entry `i` of a batch reply.
fn batch_entry(i: usize, entry: &Value, depth: usize) -> BatchEntry {
    match timed_entry(entry) {
        Err(reason) => BatchEntry::Bad(ReplyError::RetrieveBatch {
            reason: format!("`results[{i}]`: {reason}"),
            reply: entry.to_string(),
        }),
        Ok((Ok(ok), elapsed)) => match retrieval(ok, depth) {
            Ok(r) => BatchEntry::Retrieved(r, elapsed),
            Err(e) => BatchEntry::Bad(e),
        },
        Ok((Err(err), _)) => BatchEntry::Raised(err.clone()),
    }
}

/// Entry `i` of a batch reply, read from its text: an entry that answered (`ok` a retrieve
/// reply, no `error`, a valid `elapsed_ms`) is deserialised straight into its retrieval, in
/// one pass; anything else is read as [`batch_entry`] reads its value, for the same outcome
/// and message.
fn batch_entry_text(i: usize, entry: &RawValue, depth: usize) -> BatchEntry {
    /// Whether the key is there at all (`null` included): an `error` beside `ok` is out of
    /// protocol even when `null`.
    fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| true)
    }
    #[derive(Deserialize)]
    struct Answered {
        ok: Option<Retrieval>,
        #[serde(default, deserialize_with = "present")]
        error: bool,
        elapsed_ms: Option<f64>,
    }
    if let Ok(Answered {
        ok: Some(mut r),
        error: false,
        elapsed_ms: Some(elapsed),
    }) = serde_json::from_str::<Answered>(entry.get())
    {
        if elapsed.is_finite() && elapsed >= 0.0 {
            r.candidates.truncate(depth);
            return BatchEntry::Retrieved(r, elapsed);
        }
    }
    match serde_json::from_str::<Value>(entry.get()) {
        Ok(value) => batch_entry(i, &value, depth),
        // Not reached: a `RawValue` holds valid JSON.
        Err(e) => BatchEntry::Bad(ReplyError::RetrieveBatch {
            reason: format!("`results[{i}]`: {e}"),
            reply: entry.get().to_string(),
        }),
    }
}

/// The rewrite entry of a `rewrite_retrieve` reply.
#[derive(Debug)]
pub(crate) enum RewriteEntry {
    /// The rewrite (checked as a `rewrite` reply) and the milliseconds the worker measured.
    Rewritten(oloproof_core::pipeline::Rewrite, f64),
    /// The rewrite raised: the protocol's error object.
    Raised(Value),
    /// The entry is out of protocol.
    Bad(ReplyError),
}

/// A `rewrite_retrieve` reply: `{"rewrite": entry, "results": [entry, …]}`, the rewrite's
/// entry as a `retrieve_batch` entry holding a `rewrite` reply, then one retrieve entry per
/// query of the rewrite and per lane (`lanes` a query, at least 1), or none when the rewrite
/// failed. A reply without its `rewrite` entry, or without that many results, is an error of
/// the whole exchange.
pub(crate) fn rewrite_retrieve(
    mut reply: Value,
    lanes: usize,
    depth: usize,
) -> Result<(RewriteEntry, Vec<BatchEntry>), ReplyError> {
    let Some(entry) = reply.as_object_mut().and_then(|o| o.remove("rewrite")) else {
        return Err(ReplyError::RetrieveBatch {
            reason: "no `rewrite` entry".into(),
            reply: reply.to_string(),
        });
    };
    let rewrite = rewrite_entry(&entry);
    let calls = match &rewrite {
        RewriteEntry::Rewritten(r, _) => r.queries.len() * lanes,
        _ => 0,
    };
    let results = match &rewrite {
        // A failed rewrite's results are not read.
        RewriteEntry::Rewritten(..) => retrieve_batch(reply, calls, depth)?,
        _ => Vec::new(),
    };
    Ok((rewrite, results))
}

/// The `rewrite` entry of a `rewrite_retrieve` reply.
fn rewrite_entry(entry: &Value) -> RewriteEntry {
    match timed_entry(entry) {
        Err(reason) => RewriteEntry::Bad(ReplyError::RetrieveBatch {
            reason: format!("`rewrite`: {reason}"),
            reply: entry.to_string(),
        }),
        Ok((Ok(ok), elapsed)) => match rewrite(ok.clone()) {
            Ok(r) => RewriteEntry::Rewritten(r, elapsed),
            Err(e) => RewriteEntry::Bad(e),
        },
        Ok((Err(err), _)) => RewriteEntry::Raised(err.clone()),
    }
}

/// [`rewrite_retrieve`] of the reply's text: its retrieve entries are deserialised straight
/// into retrievals (a pipeline case's reply carries every lane's passages for every query),
/// without a `serde_json::Value` of the whole reply. A reply or entry out of protocol is read
/// as [`rewrite_retrieve`] reads it, with the same errors.
pub(crate) fn rewrite_retrieve_text(
    reply: &RawValue,
    lanes: usize,
    depth: usize,
) -> Result<(RewriteEntry, Vec<BatchEntry>), ReplyError> {
    #[derive(Deserialize)]
    struct Wire<'a> {
        #[serde(borrow)]
        rewrite: &'a RawValue,
        #[serde(borrow)]
        results: Vec<&'a RawValue>,
    }
    let as_value = || match serde_json::from_str::<Value>(reply.get()) {
        Ok(value) => rewrite_retrieve(value, lanes, depth),
        // Not reached: a `RawValue` holds valid JSON.
        Err(e) => Err(ReplyError::RetrieveBatch {
            reason: e.to_string(),
            reply: reply.get().to_string(),
        }),
    };
    let Ok(wire) = serde_json::from_str::<Wire<'_>>(reply.get()) else {
        return as_value();
    };
    let Ok(entry) = serde_json::from_str::<Value>(wire.rewrite.get()) else {
        return as_value();
    };
    let rewrite = rewrite_entry(&entry);
    let calls = match &rewrite {
        RewriteEntry::Rewritten(r, _) => r.queries.len() * lanes,
        // A failed rewrite's results are not read.
        _ => return Ok((rewrite, Vec::new())),
    };
    if wire.results.len() != calls {
        return as_value();
    }
    let results = wire
        .results
        .iter()
        .enumerate()
        .map(|(i, entry)| batch_entry_text(i, entry, depth))
        .collect();
    Ok((rewrite, results))
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
    given: &[Passage],
) -> Result<(Vec<Passage>, Option<oloproof_core::pipeline::Usage>), ReplyError> {
    let candidates = match reply.get("order") {
        Some(order) => reordered(order, given).map_err(|reason| ReplyError::RerankOrder {
            reason,
            reply: reply.to_string(),
        })?,
        None => reranked(reply.clone())?,
    };
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

/// The candidates a rerank reply's `order` names: each entry the 0-based position of one of
/// the `given` candidates, which is returned unchanged, each at most once.
fn reordered(order: &Value, given: &[Passage]) -> Result<Vec<Passage>, String> {
    let Some(order) = order.as_array() else {
        return Err("`order` must be an array of positions".into());
    };
    let mut taken = vec![false; given.len()];
    let mut out = Vec::with_capacity(order.len());
    for (i, position) in order.iter().enumerate() {
        let Some(k) = position.as_u64().and_then(|k| usize::try_from(k).ok()) else {
            return Err(format!(
                "`order[{i}]` must be a non-negative integer, got {position}"
            ));
        };
        let Some(passage) = given.get(k) else {
            return Err(format!(
                "`order[{i}]` is {k}, and the rerank was given {} candidates",
                given.len()
            ));
        };
        if std::mem::replace(&mut taken[k], true) {
            return Err(format!(
                "`order[{i}]`: candidate {k} ({}) is named twice",
                passage.doc_id
            ));
        }
        out.push(passage.clone());
    }
    Ok(out)
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

    /// A rerank reply by positions returns the given candidates themselves, in that order; a
    /// position out of range, repeated or not an integer is an error naming `order[i]`.
    #[test]
    fn a_rerank_reply_by_positions_names_given_candidates_once() {
        let given: Vec<Passage> = ["a", "b", "c"]
            .iter()
            .map(|d| {
                serde_json::from_value(json!({"doc_id": d, "text": "t", "score": 1.0})).unwrap()
            })
            .collect();
        let (ranked, usage) = rerank_stage(
            json!({"order": [2, 0], "usage": {"model": "m", "input_tokens": 3, "output_tokens": 0}}),
            &given,
        )
        .unwrap();
        assert_eq!(ranked, vec![given[2].clone(), given[0].clone()]);
        assert_eq!(usage.unwrap().input_tokens, Some(3));
        let reason = |order: Value| {
            rerank_stage(json!({ "order": order }), &given)
                .unwrap_err()
                .to_string()
        };
        assert!(reason(json!([0, 3]))
            .contains("`order[1]` is 3, and the rerank was given 3 candidates"));
        assert!(reason(json!([1, 1])).contains("`order[1]`: candidate 1 (b) is named twice"));
        assert!(reason(json!([-1])).contains("`order[0]` must be a non-negative integer, got -1"));
        assert!(reason(json!({"0": 1})).contains("`order` must be an array"));
    }

    #[test]
    fn a_rewrite_retrieve_reply_reads_the_same_from_its_text() {
        let good = |q: &str| {
            json!({"ok": {"query": q, "depth": 3, "candidates": [
                {"doc_id": "a", "score": 2.5, "text": "t\u{e9}\"q", "metadata": {"k": [1, null]}},
                {"doc_id": "b", "chunk_id": "c1", "score": -0.0}, {"doc_id": "c"}],
                "filters": [{"field": "tenant", "op": "=", "value": "acme"}],
                "usage": {"model": "m", "input_tokens": 4}, "lane": "bm25"},
             "elapsed_ms": 1.5})
        };
        let rewrite = json!({"ok": {"queries": ["q1", "q2"]}, "elapsed_ms": 0.25});
        let replies = [
            json!({"rewrite": rewrite, "results": [good("q1"), good("q1"), good("q2"), good("q2")]}),
            // Each entry out of protocol in its own way, beside good ones.
            json!({"rewrite": rewrite, "results": [
                {"ok": {"candidates": []}},
                {"ok": {"depth": 1, "candidates": []}, "error": null, "elapsed_ms": 1},
                {"ok": null, "elapsed_ms": 1},
                {"ok": {"depth": 1, "candidates": "none"}, "elapsed_ms": 1},
                {"ok": {"depth": 1, "candidates": [{"text": "no id"}]}, "elapsed_ms": 1},
                {"ok": {"depth": 1, "candidates": []}, "elapsed_ms": "1"},
                {"ok": {"depth": 1, "candidates": []}, "elapsed_ms": -1},
            ]}),
            json!({"rewrite": rewrite, "results": [good("q1"), {"error": {"type": "KeyError", "message": "k"}, "elapsed_ms": 0}, good("q2"), good("q2")]}),
            // Whole replies out of protocol, and failed rewrites (whose results are not read).
            json!({"rewrite": rewrite, "results": [good("q1")]}),
            json!({"rewrite": rewrite, "results": {}}),
            json!({"results": []}),
            json!([]),
            json!({"rewrite": {"error": {"type": "E", "message": "m"}, "elapsed_ms": 1}}),
            json!({"rewrite": {"ok": {"queries": []}, "elapsed_ms": 1}, "results": 3}),
            json!({"rewrite": {"ok": ["only"], "elapsed_ms": 1}, "results": [good("only"), good("only")]}),
        ];
        for reply in replies {
            let text = serde_json::value::to_raw_value(&reply).unwrap();
            let from_value = format!("{:?}", rewrite_retrieve(reply.clone(), 2, 2));
            let from_text = format!("{:?}", rewrite_retrieve_text(&text, 2, 2));
            assert_eq!(from_text, from_value, "{reply}");
        }
        // The first reply's entries are retrievals, cut to the depth.
        let text = serde_json::value::to_raw_value(&json!({"rewrite": rewrite, "results": [good("q1"), good("q1"), good("q2"), good("q2")]})).unwrap();
        let (_, entries) = rewrite_retrieve_text(&text, 2, 2).unwrap();
        assert!(
            matches!(&entries[3], BatchEntry::Retrieved(r, ms) if r.candidates.len() == 2 && *ms == 1.5)
        );
    }

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
        let input = Map::new();
        let body = RetrieveBody::new(&input, 3, oloproof_core::system::RetrieveRequest::default());
        assert_eq!(
            request_line("retrieve", 7, &body).unwrap(),
            "{\"input\":{},\"depth\":3,\"id\":7,\"op\":\"retrieve\"}\n"
        );
        let call = oloproof_core::system::RetrieveRequest {
            query: Some("q"),
            lane: Some("bm25"),
            skip_filters: false,
        };
        assert_eq!(
            serde_json::to_string(&RetrieveBody::new(&input, 3, call)).unwrap(),
            r#"{"input":{},"depth":3,"query":"q","lane":"bm25"}"#
        );
        let skip = oloproof_core::system::RetrieveRequest {
            skip_filters: true,
            ..call
        };
        assert_eq!(
            serde_json::to_string(&RetrieveBatchBody::new(&input, 2, &[call, skip])).unwrap(),
            r#"{"input":{},"depth":2,"calls":[{"query":"q","lane":"bm25"},{"query":"q","lane":"bm25","skip_filters":true}]}"#
        );
        assert_eq!(
            request_line("shutdown", 9, &json!({})).unwrap(),
            "{\"id\":9,\"op\":\"shutdown\"}\n"
        );
        assert!(request_line("x", 1, &json!([1])).is_err());
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
