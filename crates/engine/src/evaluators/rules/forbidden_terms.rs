//! `forbidden_terms`: the output's `field` (default `answer`) must contain none of `terms`. A
//! pass, or a fail whose detail lists each term found with its count and character spans.
//!
//! ```yaml
//! - {type: forbidden_terms, criterion: no_competitor, terms: [Acme, "Acme Corp", "garantie à vie"]}
//! ```
//!
//! Matching, so that a user gets what they wrote and not a substring:
//! - whole words: a term matches only where neither the character before its start nor the
//!   one after its end is a word character (Unicode letters, digits, `_`), so `art` is not found
//!   in `party` and `C++` is found in `I use C++.`;
//! - multi-word terms: any run of whitespace in a term matches any run of whitespace in the
//!   text (`credit card` finds `credit\ncard`);
//! - case: folded by default (Unicode simple case folding: `ÉTÉ` finds `été`, `ß` does not
//!   find `SS`); `case_sensitive: true` matches the case as written. Text is not normalised
//!   (a decomposed `é` is not a composed one);
//! - terms are literal text: regex metacharacters in them (`C++`, `$5`, `(beta)`) are escaped
//!   (use `regex` for patterns);
//! - overlaps: the text is scanned left to right and the longest term starting at a position
//!   wins (`Acme Corp` is reported once, not also as `Acme`).
//!
//! An empty list or an empty term is a config error at `evaluators[i].terms`. No such field
//! is `excluded` `no_field`, a failed generation `missing`.

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

/// Options of `forbidden_terms`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ForbiddenTermsOptions {
    /// Criterion name (default `forbidden_terms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// The output field checked (default `answer`; a non-string value as compact JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The terms (words or phrases, literal text) that must not occur; at least one.
    #[serde(deserialize_with = "one_or_many")]
    pub terms: Vec<String>,
    /// Match the case as written (default `false`: Unicode case folding).
    #[serde(default)]
    pub case_sensitive: bool,
}

/// The `forbidden_terms` type.
pub(crate) const SPEC: EvaluatorSpec = EvaluatorSpec {
    name: "forbidden_terms",
    build,
};

fn build(p: &EntryParser<'_>) -> Result<Box<dyn Evaluator>, SourceError> {
    let mut options: ForbiddenTermsOptions = p.options()?;
    let field = resolve_field(p, options.field.as_deref())?;
    options.field = Some(field.clone());
    if options.terms.is_empty() {
        let mut err = p.error("terms", "the list of forbidden terms is empty");
        err.expected = Some("at least one word or phrase".into());
        err.help = Some("add the terms the output must not contain, e.g. `terms: [guaranteed, \"risk-free\"]`, or remove this rule".into());
        return Err(err);
    }
    if let Some(i) = options.terms.iter().position(|t| t.trim().is_empty()) {
        let mut err = p.error(&item_path(p, "terms", i), "a forbidden term is empty");
        err.expected = Some("a word or phrase".into());
        err.help = Some("remove the empty term (it would match everywhere)".into());
        return Err(err);
    }
    let (matcher, order) = compile(&options.terms, options.case_sensitive).map_err(|e| {
        let mut err = p.error("terms", format!("the terms do not compile: {e}"));
        err.help = Some("split the list over several `forbidden_terms` rules".into());
        err
    })?;
    Ok(Box::new(ForbiddenTerms {
        criterion: options
            .criterion
            .clone()
            .unwrap_or_else(|| p.entry.type_name.clone()),
        identity: p.identity(&options),
        field,
        terms: options.terms.clone(),
        matcher,
        order,
    }))
}

/// One alternation of the terms, longest first, each in its own group: escaped, whitespace runs
/// as `\s+`, between half word boundaries; with the term index of each group (group `g` is
/// term `order[g - 1]`). Only a list too large for the `regex` crate's size limit fails.
fn compile(terms: &[String], case_sensitive: bool) -> Result<(Regex, Vec<usize>), regex::Error> {
    let mut order: Vec<usize> = (0..terms.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(terms[i].trim().chars().count()));
    let alternatives: Vec<String> = order
        .iter()
        .map(|&i| {
            let words: Vec<String> = terms[i].split_whitespace().map(regex::escape).collect();
            format!(r"(\b{{start-half}}{}\b{{end-half}})", words.join(r"\s+"))
        })
        .collect();
    let regex = RegexBuilder::new(&alternatives.join("|"))
        .case_insensitive(!case_sensitive)
        .build()?;
    Ok((regex, order))
}

struct ForbiddenTerms {
    criterion: String,
    identity: EvaluatorEntry,
    field: String,
    terms: Vec<String>,
    matcher: Regex,
    /// The term of each capture group, in group order.
    order: Vec<usize>,
}

impl Evaluator for ForbiddenTerms {
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
        // Per term (in list order): count and first spans.
        let mut hits: Vec<(usize, Vec<std::ops::Range<usize>>)> =
            vec![(0, Vec::new()); self.terms.len()];
        for caps in self.matcher.captures_iter(&text) {
            // The one group that took part in the match names the term.
            let Some((i, m)) = caps
                .iter()
                .skip(1)
                .zip(&self.order)
                .find_map(|(g, &i)| g.map(|m| (i, m)))
            else {
                continue;
            };
            hits[i].0 += 1;
            if hits[i].1.len() < MAX_SPANS {
                hits[i].1.push(m.range());
            }
        }
        let found: Vec<Value> = hits
            .iter()
            .enumerate()
            .filter(|(_, (count, _))| *count > 0)
            .map(|(i, (count, ranges))| {
                json!({"term": self.terms[i], "count": count, "spans": char_spans(&text, ranges)})
            })
            .collect();
        verdict(
            &self.criterion,
            Verdict::pass_if(found.is_empty()),
            json!({"field": self.field, "found": found}),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::from_json;
    use oloproof_core::case::parse_cases;

    fn eval(options: Value, answer: &str) -> CriterionVerdict {
        let case = parse_cases("c.jsonl", r#"{"id":"c","input":{}}"#)
            .unwrap()
            .remove(0);
        let mut t = Trace::new("c");
        t.generation = Some(json!({"answer": answer}).as_object().unwrap().clone());
        from_json(&options).unwrap().evaluate(&case, &t, None)
    }

    fn terms(list: Value) -> Value {
        json!({"type": "forbidden_terms", "terms": list})
    }

    #[test]
    fn whole_words_case_folded_with_offsets() {
        let v = eval(
            terms(json!(["art", "ÉTÉ"])),
            "Une party d'été, ART moderne.",
        );
        assert_eq!(v.verdict, Verdict::Fail);
        // `art` is not found inside `party`; `ART` and `été` are (characters, not bytes).
        assert_eq!(
            v.detail["found"],
            json!([
                {"term": "art", "count": 1, "spans": [[17, 20]]},
                {"term": "ÉTÉ", "count": 1, "spans": [[12, 15]]},
            ])
        );
        assert_eq!(
            eval(terms(json!(["art"])), "Une party, un départ.").verdict,
            Verdict::Pass
        );
    }

    #[test]
    fn case_sensitive_on_request() {
        let rule = json!({"type": "forbidden_terms", "terms": ["Acme"], "case_sensitive": true});
        assert_eq!(eval(rule.clone(), "acme rockets").verdict, Verdict::Pass);
        assert_eq!(eval(rule, "Acme rockets").verdict, Verdict::Fail);
    }

    #[test]
    fn multi_word_terms_and_the_longest_first() {
        let v = eval(
            terms(json!(["Acme", "Acme   Corp"])),
            "Ask Acme\ncorp, or Acme.",
        );
        assert_eq!(
            v.detail["found"],
            json!([
                {"term": "Acme", "count": 1, "spans": [[18, 22]]},
                {"term": "Acme   Corp", "count": 1, "spans": [[4, 13]]},
            ])
        );
    }

    #[test]
    fn metacharacters_are_literal() {
        for (term, text, found) in [
            ("C++", "I use C++.", true),
            ("C++", "I use C.", false),
            ("$5", "only $5 today", true),
            ("(beta)", "the (beta) channel", true),
            ("a.b", "axb", false),
        ] {
            let v = eval(terms(json!([term])), text);
            assert_eq!(
                v.verdict == Verdict::Fail,
                found,
                "{term} in {text}: {}",
                v.detail
            );
        }
    }

    #[test]
    fn absent_field_and_failed_generation() {
        let case = parse_cases("c.jsonl", r#"{"id":"c","input":{}}"#)
            .unwrap()
            .remove(0);
        let rule = from_json(&json!({"type": "forbidden_terms", "terms": "x", "field": "summary"}))
            .unwrap();
        let mut t = Trace::new("c");
        assert!(matches!(
            rule.evaluate(&case, &t, None).verdict,
            Verdict::Missing { .. }
        ));
        t.generation = Some(json!({"answer": "x"}).as_object().unwrap().clone());
        let v = rule.evaluate(&case, &t, None);
        assert_eq!(
            v.verdict,
            Verdict::Excluded {
                reason: "no_field".into()
            }
        );
        assert_eq!(v.detail["field"], "summary");
    }

    #[test]
    fn config_errors() {
        for (entry, needle) in [
            (terms(json!([])), "the list of forbidden terms is empty"),
            (terms(json!(["ok", "  "])), "a forbidden term is empty"),
            (json!({"type": "forbidden_terms"}), "missing key `terms`"),
        ] {
            let err = from_json(&entry)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(needle), "{entry}: {err}");
        }
    }
}
