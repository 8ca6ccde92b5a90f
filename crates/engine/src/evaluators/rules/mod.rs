//! Rule evaluators (seed 002 §5.2: "a regular expression catches a card number, a forbidden
//! word"): fast, deterministic, no model. Each is a pass/fail criterion on one output field:
//!
//! - [`regex_rule`] (`regex`): patterns the field must match / must not match;
//! - [`forbidden_terms`]: whole-word terms, case-folded, that must not occur;
//! - [`max_length`]: at most `max` characters, words or the system's own tokens;
//! - [`pii_in_answer`]: no personal identifier of the chosen types
//!   (`oloproof_metrics::pii`'s detectors).
//!
//! (`schema_validity` is the fourth rule family of the seed, a JSON Schema.)
//!
//! What they share, here: the field they read and what happens when it is not there. `field:`
//! (default `answer`) names any key of the system's output; a string is read as it is and any
//! other JSON value as its compact JSON text (`Trace::output_text`), so a rule can check a
//! structured output or the `citations` array too. When the generation failed the criterion
//! is `missing` with the stage's error; when the output has no such field, or it is `null`, the
//! case is `excluded` with reason `no_field` and the field named in the detail (a rule that
//! cannot read its field neither passes nor fails).
//!
//! Offsets in details are character offsets (Unicode scalar values) into that text, `[start,
//! end)`; a detail lists at most [`MAX_SPANS`] spans per pattern, term or entity type, with the
//! full count beside them, and never the matched text of a pattern or a detector (it may be the
//! personal data the rule is there to catch).

pub mod forbidden_terms;
pub mod max_length;
pub mod pii_in_answer;
pub mod regex_rule;

use std::borrow::Cow;
use std::ops::Range;

use oloproof_core::source::SourceError;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde_json::{json, Value};

use super::{missing, verdict, EntryParser};

/// The most spans a detail lists for one pattern, term or entity type (the count is always
/// complete).
pub const MAX_SPANS: usize = 20;

/// The output field a rule reads by default.
pub(crate) const DEFAULT_FIELD: &str = "answer";

/// The text of `field` in `trace`'s output, or the verdict when there is none: `missing` when
/// the generation failed, `excluded` (`no_field`, the field in the detail) when the output lacks
/// the field or it is `null`.
pub(crate) fn field_text<'t>(
    criterion: &str,
    trace: &'t Trace,
    field: &str,
) -> Result<Cow<'t, str>, CriterionVerdict> {
    if trace.generation.is_none() {
        return Err(missing(criterion, trace, "the generation"));
    }
    trace.output_text(field).ok_or_else(|| {
        let why = match trace.output_field(field) {
            Some(Value::Null) => format!("the output's `{field}` is null"),
            _ => format!("the output has no `{field}` field"),
        };
        verdict(
            criterion,
            Verdict::Excluded {
                reason: "no_field".into(),
            },
            json!({"field": field, "why": why}),
        )
    })
}

/// The `field:` option resolved: the default when absent; an empty name is an error at
/// `evaluators[i].field`.
pub(crate) fn resolve_field(
    p: &EntryParser<'_>,
    field: Option<&str>,
) -> Result<String, SourceError> {
    match field {
        None => Ok(DEFAULT_FIELD.to_string()),
        Some(f) if f.trim().is_empty() => {
            let mut err = p.error("field", "the field name is empty");
            err.expected = Some("a key of the system's output, e.g. `answer`".into());
            err.help = Some("remove `field:` to read `answer`".into());
            Err(err)
        }
        Some(f) => Ok(f.to_string()),
    }
}

/// Character offsets `[start, end]` of byte ranges of `text` (ascending starts, on char
/// boundaries), counted in one pass.
pub(crate) fn char_spans(text: &str, ranges: &[Range<usize>]) -> Vec<[usize; 2]> {
    let mut out = Vec::with_capacity(ranges.len());
    let (mut byte, mut chars) = (0usize, 0usize);
    let mut advance = |to: usize| {
        if to >= byte {
            chars += text.get(byte..to).map_or(0, |s| s.chars().count());
        } else {
            chars -= text.get(to..byte).map_or(0, |s| s.chars().count());
        }
        byte = to;
        chars
    };
    for r in ranges {
        let start = advance(r.start);
        let end = advance(r.end);
        out.push([start, end]);
    }
    out
}

/// The key path of item `i` of a list option `key` as written: `key[i]` when a list was written,
/// `key` when one value was (both forms are accepted).
pub(crate) fn item_path(p: &EntryParser<'_>, key: &str, i: usize) -> String {
    match p.entry.options.get(key) {
        Some(Value::Array(_)) => format!("{key}[{i}]"),
        _ => key.to_string(),
    }
}

/// Deserialises a string or a list of strings into a list (`must_match: 'x'` is
/// `must_match: ['x']`).
pub(crate) fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    struct OneOrMany;
    impl<'de> Visitor<'de> for OneOrMany {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a string or a list of strings")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(vec![v.to_string()])
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(s) = seq.next_element::<String>()? {
                out.push(s);
            }
            Ok(out)
        }
    }
    d.deserialize_any(OneOrMany)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn char_spans_count_characters_not_bytes() {
        let text = "é1 ü22 ö333";
        let ranges = [2..3, 6..8, 11..14];
        assert_eq!(&text[6..8], "22");
        assert_eq!(char_spans(text, &ranges), vec![[1, 2], [4, 6], [8, 11]]);
        // Overlapping ranges (several patterns) go back as well as forward.
        assert_eq!(char_spans(text, &[6..8, 2..3]), vec![[4, 6], [1, 2]]);
    }

    #[test]
    fn field_text_reads_strings_and_json() {
        let mut t = Trace::new("c");
        let excluded = field_text("r", &t, "answer").unwrap_err();
        assert!(matches!(excluded.verdict, Verdict::Missing { .. }));
        let mut out = serde_json::Map::new();
        out.insert("answer".into(), json!("14 days"));
        out.insert("citations".into(), json!(["kb-01", "kb-02"]));
        out.insert("none".into(), Value::Null);
        t.generation = Some(out);
        assert_eq!(field_text("r", &t, "answer").unwrap(), "14 days");
        assert_eq!(
            field_text("r", &t, "citations").unwrap(),
            r#"["kb-01","kb-02"]"#
        );
        for field in ["none", "absent"] {
            let v = field_text("r", &t, field).unwrap_err();
            assert_eq!(
                v.verdict,
                Verdict::Excluded {
                    reason: "no_field".into()
                }
            );
            assert_eq!(v.detail["field"], field);
        }
    }
}
