//! `regex`: the output's `field` (default `answer`) must match every `must_match` pattern and
//! no `must_not_match` pattern. A pass or a fail; the detail lists each pattern with its match
//! count, whether it held (`ok`) and the character spans of its first matches (never the
//! matched text: a pattern is often there to catch a card number).
//!
//! ```yaml
//! - {type: regex, criterion: no_card_number, must_not_match: '\b\d(?:[ -]?\d){12,18}\b'}
//! - {type: regex, criterion: cites_a_source, must_match: ['\[kb-\d+\]'], flags: i}
//! ```
//!
//! Patterns are Rust's `regex` syntax: linear-time matching, so no pattern can hang a run on a
//! long answer; hence no look-around and no backreferences. `\b`, `\w`, `\d` and case-insensitive
//! matching are Unicode-aware. Each list takes one pattern or several; at least one pattern in
//! all. `flags:` applies to every pattern (a pattern may also set its own, `(?i)…`): `i` case
//! insensitive, `m` `^`/`$` at line ends, `s` `.` matches `\n`, `x` whitespace and `#`
//! comments ignored, `U` lazy and greedy swapped, `R` CRLF line ends for `m`. Matching is
//! unanchored (`^…$` to match the whole text).
//!
//! The field's text is a string as it is or any other JSON value as compact JSON (see
//! [`super`]); no such field (or `null`) is `excluded` `no_field`, a failed generation
//! `missing`. Config errors are located at `evaluators[i].<key>`: a pattern that does not
//! compile (with the `regex` crate's message), an unknown flag, no pattern at all.

use oloproof_core::case::Case;
use oloproof_core::config::EvaluatorEntry;
use oloproof_core::source::SourceError;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{char_spans, field_text, item_path, one_or_many, resolve_field, MAX_SPANS};
use crate::evaluators::{verdict, EntryParser, Evaluator, EvaluatorSpec, SummaryKind};
use crate::judged::JudgeEnv;

/// Options of `regex`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RegexOptions {
    /// Criterion name (default `regex`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// The output field checked (default `answer`; a non-string value as compact JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Patterns that must each match somewhere in the field (one pattern or a list).
    #[serde(
        default,
        deserialize_with = "one_or_many",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub must_match: Vec<String>,
    /// Patterns none of which may match (one pattern or a list).
    #[serde(
        default,
        deserialize_with = "one_or_many",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub must_not_match: Vec<String>,
    /// Flags for every pattern, letters among `i`, `m`, `s`, `x`, `U`, `R` (e.g. `is`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flags: Option<String>,
}

/// The `regex` type.
pub(crate) const SPEC: EvaluatorSpec = EvaluatorSpec {
    name: "regex",
    build,
};

/// The flag letters `flags:` accepts, as said in errors.
const FLAG_LETTERS: &str = "i (case insensitive), m (multi-line), s (`.` matches newlines), x (verbose), U (swap greed), R (CRLF)";

fn build(p: &EntryParser<'_>) -> Result<Box<dyn Evaluator>, SourceError> {
    let mut options: RegexOptions = p.options()?;
    let field = resolve_field(p, options.field.as_deref())?;
    options.field = Some(field.clone());
    if options.must_match.is_empty() && options.must_not_match.is_empty() {
        let mut err = p.error("", "a `regex` rule needs at least one pattern");
        err.expected = Some("`must_match:` or `must_not_match:`, a pattern or a list".into());
        err.help = Some(
            "add e.g. `must_not_match: '\\b\\d(?:[ -]?\\d){12,18}\\b'` (the answer must not contain a card-like number)".into(),
        );
        return Err(err);
    }
    let flags = options.flags.as_deref().unwrap_or("");
    if let Some(bad) = flags.chars().find(|c| !"imsxUR".contains(*c)) {
        let mut err = p.error("flags", format!("unknown regex flag `{bad}`"));
        err.expected = Some(format!("letters among {FLAG_LETTERS}"));
        err.help = Some(match bad.to_ascii_lowercase() {
            'g' => "remove `g`: every match is found already (the rule is unanchored)".to_string(),
            'u' if bad == 'u' => {
                "remove `u`: patterns are Unicode-aware already (`U` swaps greed)".to_string()
            }
            _ => format!("remove `{bad}` from `flags:`"),
        });
        return Err(err);
    }
    let compile = |key: &str, list: &[String]| -> Result<Vec<Regex>, SourceError> {
        list.iter()
            .enumerate()
            .map(|(i, pattern)| {
                compile(pattern, flags).map_err(|reason| {
                    let mut err = p.error(
                        &item_path(p, key, i),
                        format!("the pattern does not compile: {reason}"),
                    );
                    err.expected = Some(
                        "a regular expression in Rust `regex` syntax (no look-around, no backreferences)"
                            .into(),
                    );
                    err.help = Some(if reason.contains("look-around") || reason.contains("backreference") {
                        "the `regex` crate matches in linear time and has neither: rewrite the pattern without it (a `must_not_match` pattern often replaces a negative look-ahead)".into()
                    } else {
                        "fix the pattern; write it in single quotes in YAML so backslashes stay as they are".into()
                    });
                    err
                })
            })
            .collect()
    };
    let must_match = compile("must_match", &options.must_match)?;
    let must_not_match = compile("must_not_match", &options.must_not_match)?;
    Ok(Box::new(RegexRule {
        criterion: options
            .criterion
            .clone()
            .unwrap_or_else(|| p.entry.type_name.clone()),
        identity: p.identity(&options),
        field,
        must_match: options.must_match.iter().cloned().zip(must_match).collect(),
        must_not_match: options
            .must_not_match
            .iter()
            .cloned()
            .zip(must_not_match)
            .collect(),
    }))
}

/// `pattern` compiled with `flags` (already checked), or the `regex` crate's reason.
fn compile(pattern: &str, flags: &str) -> Result<Regex, String> {
    RegexBuilder::new(pattern)
        .case_insensitive(flags.contains('i'))
        .multi_line(flags.contains('m'))
        .dot_matches_new_line(flags.contains('s'))
        .ignore_whitespace(flags.contains('x'))
        .swap_greed(flags.contains('U'))
        .crlf(flags.contains('R'))
        .build()
        .map_err(|e| match e {
            // "regex parse error:\n    (abc\n    ^\nerror: unclosed group": the last line says it.
            regex::Error::Syntax(text) => text
                .lines()
                .rev()
                .find_map(|l| l.strip_prefix("error: "))
                .map_or_else(
                    || text.split_whitespace().collect::<Vec<_>>().join(" "),
                    str::to_string,
                ),
            other => other.to_string(),
        })
}

struct RegexRule {
    criterion: String,
    identity: EvaluatorEntry,
    field: String,
    must_match: Vec<(String, Regex)>,
    must_not_match: Vec<(String, Regex)>,
}

/// One pattern's outcome: `{pattern, ok, matches, spans}`.
fn outcome(pattern: &str, re: &Regex, text: &str, want: bool) -> (bool, Value) {
    let mut count = 0usize;
    let mut ranges = Vec::new();
    for m in re.find_iter(text) {
        count += 1;
        if ranges.len() < MAX_SPANS {
            ranges.push(m.range());
        }
    }
    let ok = (count > 0) == want;
    (
        ok,
        json!({"pattern": pattern, "ok": ok, "matches": count, "spans": char_spans(text, &ranges)}),
    )
}

impl Evaluator for RegexRule {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        SummaryKind::Proportion
    }

    fn identity(&self) -> &EvaluatorEntry {
        &self.identity
    }

    fn evaluate(&self, _: &Case, trace: &Trace, _: Option<&JudgeEnv<'_>>) -> CriterionVerdict {
        let text = match field_text(&self.criterion, trace, &self.field) {
            Ok(text) => text,
            Err(v) => return v,
        };
        let mut pass = true;
        let mut detail = json!({"field": self.field});
        for (key, patterns, want) in [
            ("must_match", &self.must_match, true),
            ("must_not_match", &self.must_not_match, false),
        ] {
            if patterns.is_empty() {
                continue;
            }
            let results: Vec<Value> = patterns
                .iter()
                .map(|(pattern, re)| {
                    let (ok, v) = outcome(pattern, re, &text, want);
                    pass &= ok;
                    v
                })
                .collect();
            detail[key] = Value::Array(results);
        }
        verdict(&self.criterion, Verdict::pass_if(pass), detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::from_json;
    use oloproof_core::case::parse_cases;

    fn case() -> Case {
        parse_cases("c.jsonl", r#"{"id":"c","input":{}}"#)
            .unwrap()
            .remove(0)
    }

    fn trace(output: Value) -> Trace {
        let mut t = Trace::new("c");
        t.generation = Some(output.as_object().unwrap().clone());
        t
    }

    fn eval(options: Value, output: Value) -> CriterionVerdict {
        from_json(&options)
            .unwrap()
            .evaluate(&case(), &trace(output), None)
    }

    #[test]
    fn a_card_number_fails_must_not_match_with_its_span() {
        let rule = json!({"type": "regex", "must_not_match": r"\b\d(?:[ -]?\d){12,18}\b"});
        let v = eval(
            rule.clone(),
            json!({"answer": "Payé avec 4111 1111 1111 1111, merci."}),
        );
        assert_eq!(v.verdict, Verdict::Fail);
        let p = &v.detail["must_not_match"][0];
        assert_eq!(p["ok"], false);
        assert_eq!(p["matches"], 1);
        // Character offsets: "Payé" is 4 characters and 5 bytes.
        assert_eq!(p["spans"], json!([[10, 29]]));
        assert!(
            !v.detail.to_string().contains("4111"),
            "no matched text stored"
        );
        let v = eval(rule, json!({"answer": "Refunds take 14 days."}));
        assert_eq!(v.verdict, Verdict::Pass);
        assert_eq!(v.detail["must_not_match"][0]["matches"], 0);
    }

    #[test]
    fn every_must_match_pattern_must_match_and_flags_apply() {
        let rule =
            json!({"type": "regex", "must_match": [r"\[kb-\d+\]", "^refunds"], "flags": "i"});
        let v = eval(
            rule.clone(),
            json!({"answer": "Refunds take 14 days [KB-01]."}),
        );
        assert_eq!(v.verdict, Verdict::Pass, "{}", v.detail);
        let v = eval(rule, json!({"answer": "It takes 14 days [kb-01]."}));
        assert_eq!(v.verdict, Verdict::Fail);
        assert_eq!(v.detail["must_match"][0]["ok"], true);
        assert_eq!(v.detail["must_match"][1]["ok"], false);
        // Without `i` the case matters; `s` lets `.` cross lines; `m` anchors at lines.
        let strict = json!({"type": "regex", "must_match": "^refunds"});
        assert_eq!(
            eval(strict, json!({"answer": "Refunds"})).verdict,
            Verdict::Fail
        );
        let dotall = json!({"type": "regex", "must_match": "a.b", "flags": "s"});
        assert_eq!(
            eval(dotall, json!({"answer": "a\nb"})).verdict,
            Verdict::Pass
        );
        let lines = json!({"type": "regex", "must_match": "^b$", "flags": "m"});
        assert_eq!(
            eval(lines, json!({"answer": "a\nb\nc"})).verdict,
            Verdict::Pass
        );
    }

    #[test]
    fn any_output_field_non_strings_as_json() {
        let rule = json!({"type": "regex", "field": "citations", "must_match": r#""kb-\d+""#});
        let v = eval(rule.clone(), json!({"answer": "x", "citations": ["kb-01"]}));
        assert_eq!(v.verdict, Verdict::Pass);
        assert_eq!(v.detail["field"], "citations");
        let v = eval(rule.clone(), json!({"answer": "x", "citations": []}));
        assert_eq!(v.verdict, Verdict::Fail);
        let v = eval(rule, json!({"answer": "x"}));
        assert_eq!(
            v.verdict,
            Verdict::Excluded {
                reason: "no_field".into()
            }
        );
        assert_eq!(v.detail["field"], "citations");
        assert_eq!(v.detail["why"], "the output has no `citations` field");
    }

    #[test]
    fn a_failed_generation_is_missing() {
        let mut t = Trace::new("c");
        t.error = Some(oloproof_core::trace::StageError {
            stage: "generate".into(),
            kind: oloproof_core::trace::ErrorKind::Raised,
            error_type: Some("RuntimeError".into()),
            message: "boom".into(),
            traceback: None,
            stderr_tail: vec![],
        });
        let rule = from_json(&json!({"type": "regex", "must_match": "x"})).unwrap();
        let v = rule.evaluate(&case(), &t, None);
        assert_eq!(
            v.verdict,
            Verdict::Missing {
                error: "generate: RuntimeError: boom".into()
            }
        );
    }

    #[test]
    fn spans_are_capped_but_counts_complete() {
        let rule = json!({"type": "regex", "must_not_match": "a"});
        let v = eval(rule, json!({"answer": "a".repeat(50)}));
        let p = &v.detail["must_not_match"][0];
        assert_eq!(p["matches"], 50);
        assert_eq!(p["spans"].as_array().unwrap().len(), MAX_SPANS);
    }

    #[test]
    fn identity_has_the_default_field_and_lists() {
        let rule = from_json(&json!({"type": "regex", "must_match": "x"})).unwrap();
        let id = rule.identity().to_value();
        assert_eq!(id["field"], "answer");
        assert_eq!(id["must_match"], json!(["x"]));
        assert_eq!(rule.criterion(), "regex");
    }

    #[test]
    fn config_errors() {
        for (entry, needle) in [
            (
                json!({"type": "regex", "must_match": "(abc"}),
                "unclosed group",
            ),
            (
                json!({"type": "regex", "must_match": ["ok", "(?=x)"]}),
                "look-around",
            ),
            (
                json!({"type": "regex", "must_match": "x", "flags": "ig"}),
                "unknown regex flag `g`",
            ),
            (json!({"type": "regex"}), "at least one pattern"),
            (
                json!({"type": "regex", "must_match": 3}),
                "wrong type: found integer `3`",
            ),
            (
                json!({"type": "regex", "must_match": "x", "field": ""}),
                "field name is empty",
            ),
        ] {
            let err = from_json(&entry)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(needle), "{entry}: {err}");
        }
    }
}
