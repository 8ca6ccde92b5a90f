//! Turning a protocol response's `ok` value into typed stage results, shared by every
//! connector. Errors are [`ReplyError`]s; each connector wraps them into its `StageError`.

use crate::error::ReplyError;
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
pub(crate) fn retrieval(reply: Value, depth: usize) -> Result<Retrieval, ReplyError> {
    let mut r: Retrieval =
        serde_json::from_value(reply.clone()).map_err(|source| ReplyError::Retrieve {
            reply: reply.to_string(),
            source,
        })?;
    r.candidates.truncate(depth);
    Ok(r)
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
