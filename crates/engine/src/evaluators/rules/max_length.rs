//! `max_length`: the output's `field` (default `answer`) is at most `max` long, in `unit`:
//!
//! - `characters` (the default): Unicode scalar values (Python's `len`), not bytes and not
//!   grapheme clusters (`é` written decomposed counts 2);
//! - `words`: Unicode word segmentation (UAX #29 word boundaries, the `unicode-segmentation`
//!   crate): the segments holding a letter, digit or ideograph, so punctuation and spaces do not
//!   count, `don't` and `14.5` are one word each, and each CJK ideograph is one;
//! - `tokens`: the system's own tokens, from its `count_tokens` op (the one the context budget
//!   uses, `docs/protocol.md`): the run asks it for the field's token count after generation
//!   (one passage, `doc_id` `output.<field>`; cached under the system's identity and the text)
//!   and records it in the trace (`output_tokens`). Excluded `no_token_count` when there is no
//!   count (a recorded dataset: no system to ask); `missing` when the call failed (for example
//!   a system without `count_tokens`), with its error.
//!
//! ```yaml
//! - {type: max_length, criterion: short_answer, max: 80, unit: words}
//! ```
//!
//! A pass or a fail, with `{field, unit, length, max}` in the detail. `max` must be at least 1
//! (a config error at `evaluators[i].max` otherwise). No such field is `excluded` `no_field`, a
//! failed generation `missing`; a non-string field is measured on its compact JSON text.

use oloproof_core::case::Case;
use oloproof_core::config::EvaluatorEntry;
use oloproof_core::source::SourceError;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use oloproof_metrics::text::{char_count, word_count};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{field_text, resolve_field};
use crate::evaluators::{
    missing_with, verdict, EntryParser, Evaluator, EvaluatorSpec, SummaryKind,
};
use crate::judged::JudgeEnv;

/// What `max_length` counts.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum LengthUnit {
    /// Unicode scalar values.
    #[default]
    Characters,
    /// UAX #29 words.
    Words,
    /// The system's tokens (its `count_tokens`).
    Tokens,
}

impl LengthUnit {
    fn as_str(self) -> &'static str {
        match self {
            LengthUnit::Characters => "characters",
            LengthUnit::Words => "words",
            LengthUnit::Tokens => "tokens",
        }
    }
}

/// Options of `max_length`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MaxLengthOptions {
    /// Criterion name (default `max_length`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// The output field measured (default `answer`; a non-string value as compact JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The longest length that passes (at least 1).
    pub max: u64,
    /// What is counted (default `characters`).
    #[serde(default)]
    pub unit: LengthUnit,
}

/// The `max_length` type.
pub(crate) const SPEC: EvaluatorSpec = EvaluatorSpec {
    name: "max_length",
    build,
};

fn build(p: &EntryParser<'_>) -> Result<Box<dyn Evaluator>, SourceError> {
    let mut options: MaxLengthOptions = p.options()?;
    let field = resolve_field(p, options.field.as_deref())?;
    options.field = Some(field.clone());
    if options.max == 0 {
        let mut err = p.error("max", "`max: 0` fails every output that is not empty");
        err.expected = Some(format!(
            "a length of at least 1 ({})",
            options.unit.as_str()
        ));
        err.help = Some(
            "set the longest length that should pass; to require an empty field, use `{type: regex, must_not_match: '.', flags: s}`".into(),
        );
        return Err(err);
    }
    Ok(Box::new(MaxLength {
        criterion: options
            .criterion
            .clone()
            .unwrap_or_else(|| p.entry.type_name.clone()),
        identity: p.identity(&options),
        field,
        max: options.max,
        unit: options.unit,
    }))
}

struct MaxLength {
    criterion: String,
    identity: EvaluatorEntry,
    field: String,
    max: u64,
    unit: LengthUnit,
}

/// The length of `text` in `unit` (`characters` or `words`; tokens come from the system).
pub fn text_length(text: &str, unit: LengthUnit) -> Option<u64> {
    match unit {
        LengthUnit::Characters => Some(char_count(text)),
        LengthUnit::Words => Some(word_count(text)),
        LengthUnit::Tokens => None,
    }
}

impl Evaluator for MaxLength {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        SummaryKind::Proportion
    }

    fn identity(&self) -> &EvaluatorEntry {
        &self.identity
    }

    fn counts_tokens_of(&self) -> Option<&str> {
        (self.unit == LengthUnit::Tokens).then_some(self.field.as_str())
    }

    fn evaluate(&self, _: &Case, trace: &Trace, _: Option<&JudgeEnv<'_>>) -> CriterionVerdict {
        let text = match field_text(&self.criterion, trace, &self.field) {
            Ok(text) => text,
            Err(v) => return v,
        };
        let length = match text_length(&text, self.unit) {
            Some(n) => n,
            None => {
                let tokens = trace.output_tokens.as_ref();
                match tokens.and_then(|t| t.counts.get(&self.field)) {
                    Some(&n) => n as u64,
                    None => match tokens.and_then(|t| t.error.as_ref()) {
                        Some(e) => {
                            return missing_with(
                                &self.criterion,
                                format!("counting the tokens of `{}`: {}", self.field, e.summary()),
                            )
                        }
                        None => {
                            return verdict(
                                &self.criterion,
                                Verdict::Excluded {
                                    reason: "no_token_count".into(),
                                },
                                json!({
                                    "field": self.field,
                                    "why": "the trace has no token count of this field (a recorded dataset, or a trace stored without one): no system to ask",
                                }),
                            )
                        }
                    },
                }
            }
        };
        verdict(
            &self.criterion,
            Verdict::pass_if(length <= self.max),
            json!({"field": self.field, "unit": self.unit.as_str(), "length": length, "max": self.max}),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::from_json;
    use oloproof_core::case::parse_cases;
    use oloproof_core::trace::{ErrorKind, OutputTokens, StageError};
    use serde_json::Value;

    fn case() -> Case {
        parse_cases("c.jsonl", r#"{"id":"c","input":{}}"#)
            .unwrap()
            .remove(0)
    }

    fn trace(answer: &str) -> Trace {
        let mut t = Trace::new("c");
        t.generation = Some(json!({"answer": answer}).as_object().unwrap().clone());
        t
    }

    fn eval(options: Value, t: &Trace) -> CriterionVerdict {
        from_json(&options).unwrap().evaluate(&case(), t, None)
    }

    #[test]
    fn characters_are_scalar_values() {
        let rule = json!({"type": "max_length", "max": 5});
        let v = eval(rule.clone(), &trace("été!!"));
        assert_eq!(v.verdict, Verdict::Pass);
        assert_eq!(
            v.detail,
            json!({"field": "answer", "unit": "characters", "length": 5, "max": 5})
        );
        assert_eq!(eval(rule, &trace("été!!!")).verdict, Verdict::Fail);
    }

    #[test]
    fn words_by_unicode_segmentation() {
        assert_eq!(
            text_length("Don't panic: it's 14.5 days, OK?", LengthUnit::Words),
            Some(6)
        );
        assert_eq!(text_length("  ...  ", LengthUnit::Words), Some(0));
        assert_eq!(text_length("東京へ", LengthUnit::Words), Some(3));
        let rule = json!({"type": "max_length", "max": 3, "unit": "words"});
        assert_eq!(
            eval(rule.clone(), &trace("Refunds take 14 days.")).verdict,
            Verdict::Fail
        );
        assert_eq!(eval(rule, &trace("Within 14 days.")).verdict, Verdict::Pass);
    }

    #[test]
    fn tokens_come_from_the_trace() {
        let rule = json!({"type": "max_length", "max": 3, "unit": "tokens"});
        let evaluator = from_json(&rule).unwrap();
        assert_eq!(evaluator.counts_tokens_of(), Some("answer"));
        let mut t = trace("Refunds take 14 days.");
        // No count recorded (a recorded dataset): excluded, never a pass.
        let v = eval(rule.clone(), &t);
        assert_eq!(
            v.verdict,
            Verdict::Excluded {
                reason: "no_token_count".into()
            }
        );
        t.output_tokens = Some(OutputTokens {
            counts: [("answer".to_string(), 7)].into(),
            error: None,
        });
        let v = eval(rule.clone(), &t);
        assert_eq!(v.verdict, Verdict::Fail);
        assert_eq!(v.detail["length"], 7);
        assert_eq!(v.detail["unit"], "tokens");
        t.output_tokens = Some(OutputTokens {
            counts: Default::default(),
            error: Some(StageError {
                stage: "count_tokens".into(),
                kind: ErrorKind::Raised,
                error_type: Some("NotImplementedError".into()),
                message: "count_tokens".into(),
                traceback: None,
                stderr_tail: vec![],
            }),
        });
        let v = eval(rule, &t);
        assert_eq!(
            v.verdict,
            Verdict::Missing {
                error: "counting the tokens of `answer`: count_tokens: NotImplementedError: count_tokens"
                    .into()
            }
        );
        let chars = from_json(&json!({"type": "max_length", "max": 3})).unwrap();
        assert_eq!(chars.counts_tokens_of(), None);
    }

    #[test]
    fn absent_field_and_failed_generation() {
        let rule = json!({"type": "max_length", "max": 3, "field": "summary"});
        let v = eval(rule.clone(), &trace("x"));
        assert_eq!(
            v.verdict,
            Verdict::Excluded {
                reason: "no_field".into()
            }
        );
        assert!(matches!(
            eval(rule, &Trace::new("c")).verdict,
            Verdict::Missing { .. }
        ));
    }

    #[test]
    fn config_errors() {
        for (entry, needle) in [
            (json!({"type": "max_length", "max": 0}), "`max: 0`"),
            (
                json!({"type": "max_length", "max": 10, "unit": "lines"}),
                "unknown value `lines`",
            ),
            (json!({"type": "max_length"}), "missing key `max`"),
            (json!({"type": "max_length", "max": -3}), "-3"),
        ] {
            let err = from_json(&entry)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(needle), "{entry}: {err}");
        }
    }
}
