//! Turning a protocol response's `ok` value into typed stage results, shared by every
//! connector. Errors are messages; each connector wraps them into its `StageError`.

use oloproof_core::passage::{Passage, Retrieval};
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
pub(crate) fn retrieval(reply: Value, depth: usize) -> Result<Retrieval, String> {
    let mut r: Retrieval = serde_json::from_value(reply.clone()).map_err(|e| {
        format!(
            "bad retrieve reply ({e}): {}",
            excerpt(&reply.to_string(), 300)
        )
    })?;
    r.candidates.truncate(depth);
    Ok(r)
}

/// A `count_tokens` reply: one non-negative integer per passage.
pub(crate) fn token_counts(reply: Value, passages: usize) -> Result<Vec<usize>, String> {
    serde_json::from_value::<Vec<usize>>(reply.clone())
        .ok()
        .filter(|c| c.len() == passages)
        .ok_or_else(|| {
            format!(
                "expected {passages} non-negative integers, got {}",
                excerpt(&reply.to_string(), 200)
            )
        })
}

/// A `generate` reply: an object, or a string taken as the answer with no citations.
pub(crate) fn generation(reply: Value) -> Result<Map<String, Value>, String> {
    match reply {
        Value::Object(m) => Ok(m),
        Value::String(s) => {
            let mut m = Map::new();
            m.insert("answer".into(), Value::String(s));
            m.insert("citations".into(), json!([]));
            Ok(m)
        }
        other => Err(format!(
            "generate must return an object or a string, got {}",
            excerpt(&other.to_string(), 200)
        )),
    }
}

/// A `rerank` reply: `{"candidates": [Passage, …]}`.
pub(crate) fn reranked(reply: Value) -> Result<Vec<Passage>, String> {
    reply
        .get("candidates")
        .cloned()
        .and_then(|c| serde_json::from_value::<Vec<Passage>>(c).ok())
        .ok_or_else(|| format!("bad rerank reply: {}", excerpt(&reply.to_string(), 300)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies() {
        let r = retrieval(
            json!({"depth": 2, "candidates": [{"doc_id": "a"}, {"doc_id": "b"}, {"doc_id": "c"}]}),
            2,
        )
        .unwrap();
        assert_eq!(r.candidates.len(), 2);
        assert!(retrieval(json!({"candidates": 3}), 2)
            .unwrap_err()
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
    }
}
