//! What production recorded beside a trace: where it came from, when, what the user said of it,
//! and what the source did not carry.
//!
//! `oloproof import` and `oloproof collect` turn spans (OTLP, OpenInference, OpenTelemetry
//! GenAI, Phoenix, Langfuse) into trace records; each record's `production` key holds a
//! [`Production`]. Nothing here is guessed: a field the spans did not carry (content capture is
//! opt-in in OpenTelemetry) is named in [`Production::not_recorded`], and evaluators that need
//! it exclude the case with the reason `not_recorded` instead of scoring an empty string.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Production facts of one trace (the `production` key of a trace record).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Production {
    /// The trace id as the source wrote it, lower-case hex (32 digits for OTLP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// Start of the trace's root span, RFC 3339 in UTC with the source's precision
    /// (`2026-11-30T09:15:02.123456789Z`). Windows of `oloproof monitor` are cut on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Where the record came from: `otlp`, `phoenix`, `langfuse` or `collect`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// User feedback and the source's own scores, in the order recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feedback: Vec<Feedback>,
    /// Fields the source did not carry (`input`, `answer`, `context`, `retrieval`,
    /// `retrieval.text`, `usage`, …): evaluators reading one exclude the case (`not_recorded`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_recorded: Vec<String>,
    /// The first span whose status was an error, when one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ProductionError>,
}

impl Production {
    /// Whether the source did not carry `field` (exactly, or a parent of it: `retrieval`
    /// covers `retrieval.text`).
    pub fn lacks(&self, field: &str) -> bool {
        self.not_recorded.iter().any(|f| {
            f == field
                || field
                    .strip_prefix(f.as_str())
                    .is_some_and(|rest| rest.starts_with('.'))
        })
    }

    /// Whether any feedback is negative ([`Feedback::is_negative`]).
    pub fn has_negative_feedback(&self) -> bool {
        self.feedback.iter().any(Feedback::is_negative)
    }
}

/// A span that ended in error.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProductionError {
    /// The stage the span stood for (`retrieve`, `rerank`, `generate`, …), or the span name.
    pub stage: String,
    /// The status message or exception message, empty when the source gave none.
    #[serde(default)]
    pub message: String,
    /// The span's id (hex), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_id: Option<String>,
}

/// One feedback signal or score.
///
/// Conventional names, read by `monitor`'s feedback report: `thumbs` (`1`/`"up"`/`true` up,
/// `0`/`"down"`/`false` down, or -1 down), `regenerated`, `copied` (booleans), `follow_up`
/// (the follow-up question, or `true`). Any other name is a score as the source wrote it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Feedback {
    /// The signal or score name.
    pub name: String,
    /// A number, a string or a boolean.
    pub value: Value,
    /// The user's reason or the score's comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Who gave it (`user`, `langfuse`, `phoenix`, an annotator's name), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl Feedback {
    /// A thumbs-down (`thumbs` or `thumbs_down`/`thumbs_up` as `0`, `-1`, `"down"`, `false`),
    /// or a regeneration.
    pub fn is_negative(&self) -> bool {
        let name = self.name.to_ascii_lowercase();
        match name.as_str() {
            "thumbs" | "thumb" | "user_feedback" | "feedback" | "thumbs_up" => match &self.value {
                Value::Bool(b) => !b,
                Value::Number(n) => n.as_f64().is_some_and(|x| x <= 0.0),
                Value::String(s) => {
                    matches!(
                        s.to_ascii_lowercase().as_str(),
                        "down" | "thumbs_down" | "negative" | "bad" | "0" | "-1"
                    )
                }
                _ => false,
            },
            "thumbs_down" => match &self.value {
                Value::Bool(b) => *b,
                Value::Number(n) => n.as_f64().is_some_and(|x| x > 0.0),
                _ => false,
            },
            "regenerated" | "regeneration" => {
                matches!(&self.value, Value::Bool(true))
                    || self.value.as_f64().is_some_and(|x| x > 0.0)
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fb(name: &str, value: Value) -> Feedback {
        Feedback {
            name: name.into(),
            value,
            comment: None,
            source: None,
        }
    }

    #[test]
    fn negative_feedback() {
        assert!(fb("thumbs", json!(0)).is_negative());
        assert!(fb("thumbs", json!(-1)).is_negative());
        assert!(fb("thumbs", json!("down")).is_negative());
        assert!(fb("thumbs", json!(false)).is_negative());
        assert!(!fb("thumbs", json!(1)).is_negative());
        assert!(!fb("thumbs", json!("up")).is_negative());
        assert!(fb("thumbs_down", json!(true)).is_negative());
        assert!(fb("regenerated", json!(true)).is_negative());
        assert!(!fb("copied", json!(true)).is_negative());
        assert!(!fb("helpfulness", json!(0.1)).is_negative());
    }

    #[test]
    fn lacks_covers_children() {
        let p = Production {
            not_recorded: vec!["retrieval".into(), "answer".into()],
            ..Default::default()
        };
        assert!(p.lacks("answer"));
        assert!(p.lacks("retrieval.text"));
        assert!(!p.lacks("retrievals"));
        assert!(!p.lacks("input"));
    }

    #[test]
    fn unknown_keys_are_refused() {
        let err = serde_json::from_value::<Production>(json!({"trace": "x"})).unwrap_err();
        assert!(err.to_string().contains("unknown field `trace`"), "{err}");
    }
}
