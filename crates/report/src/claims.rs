//! The claim lists of claim-level diagnostics (the RAGChecker criteria, `claim_precision` …
//! `generator_faithfulness`) in a case's trace: the answer's claims with whether the reference
//! entails them, the chunks that do and what that makes them (faithful, hallucination,
//! self-knowledge, noise from a relevant or an irrelevant chunk), the reference's claims with
//! whether the answer and which chunks entail them, and which chunks are relevant.
//!
//! Every criterion of one check carries the same detail (`detail.result` with
//! `"diagnostics": "ragchecker"`; per repeat or per judge under `repeats`/`judges` with
//! `repeats:` or an ensemble): it is shown once, naming the criteria that share it.
//! [`claims_text`] is `oloproof show --case`'s block, [`claims_html`] the HTML report's and
//! the viewer's.

use std::fmt::Write as _;

use oloproof_core::verdict::CriterionVerdict;
use serde_json::Value;

use crate::html::escape;

/// One distinct claim check: its detail, where it came from, and the criteria sharing it.
struct Block<'a> {
    detail: &'a Value,
    source: String,
    criteria: Vec<&'a str>,
}

fn is_diagnostics(v: &Value) -> bool {
    v.get("diagnostics").and_then(Value::as_str) == Some("ragchecker")
}

/// The distinct claim checks of `verdicts`, in verdict order.
fn blocks(verdicts: &[CriterionVerdict]) -> Vec<Block<'_>> {
    let mut out: Vec<Block<'_>> = Vec::new();
    for v in verdicts {
        let judge = v.detail.get("judge").and_then(Value::as_str).unwrap_or("?");
        let Some(result) = v.detail.get("result") else {
            continue;
        };
        let mut found: Vec<(&Value, String)> = Vec::new();
        if is_diagnostics(result) {
            found.push((result, format!("judge {judge}")));
        }
        for (i, r) in result
            .get("repeats")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            if let Some(d) = r.get("detail").filter(|d| is_diagnostics(d)) {
                found.push((d, format!("judge {judge}, repeat {}", i + 1)));
            }
        }
        for j in result
            .get("judges")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(d) = j.get("detail").filter(|d| is_diagnostics(d)) {
                let name = j.get("judge").and_then(Value::as_str).unwrap_or("?");
                found.push((d, format!("judge {name}")));
            }
        }
        for (detail, source) in found {
            match out
                .iter_mut()
                .find(|b| b.detail == detail && b.source == source)
            {
                Some(b) => b.criteria.push(&v.criterion),
                None => out.push(Block {
                    detail,
                    source,
                    criteria: vec![&v.criterion],
                }),
            }
        }
    }
    out
}

fn yes_no(v: &Value) -> &'static str {
    match v.as_bool() {
        Some(true) => "yes",
        Some(false) => "no",
        None => "—",
    }
}

fn chunk_list(v: &Value) -> String {
    let ranks: Vec<String> = v
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| r.to_string())
        .collect();
    if ranks.is_empty() {
        "none".to_string()
    } else {
        ranks.join(", ")
    }
}

fn probability(claim: &Value) -> String {
    claim
        .pointer("/probabilities/other")
        .and_then(Value::as_f64)
        .map(|p| format!(" (p {p:.2})"))
        .unwrap_or_default()
}

/// What an answer claim is, in words.
fn answer_label(claim: &Value) -> String {
    let category = match claim.get("category").and_then(Value::as_str) {
        Some("faithful") => "faithful",
        Some("hallucination") => "hallucination",
        Some("self_knowledge") => "self-knowledge",
        Some("unfaithful") => "in no chunk",
        _ => "?",
    };
    match claim.get("noise").and_then(Value::as_str) {
        Some("relevant") => format!("{category}, incorrect, from a relevant chunk"),
        Some("irrelevant") => format!("{category}, incorrect, from an irrelevant chunk"),
        _ => category.to_string(),
    }
}

/// The chunks by relevance: `relevant 1, 3 · irrelevant 2`.
fn chunks_line(detail: &Value) -> String {
    let chunks = detail.get("chunks").and_then(Value::as_array);
    let pick = |relevant: bool| -> Vec<String> {
        chunks
            .into_iter()
            .flatten()
            .filter(|c| c.get("relevant").and_then(Value::as_bool) == Some(relevant))
            .filter_map(|c| c.get("rank").map(|r| r.to_string()))
            .collect()
    };
    let n = chunks.map_or(0, Vec::len);
    if n == 0 {
        return "none given to generation".to_string();
    }
    let (rel, irr) = (pick(true), pick(false));
    if rel.is_empty() && irr.is_empty() {
        return format!("{n} (no reference: relevance unknown)");
    }
    let list = |v: &[String]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    format!("relevant {} · irrelevant {}", list(&rel), list(&irr))
}

fn heading(b: &Block<'_>) -> String {
    let method = b
        .detail
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let threshold = b
        .detail
        .get("threshold")
        .and_then(Value::as_f64)
        .map(|t| format!(", threshold {t}"))
        .unwrap_or_default();
    format!(
        "{method}{threshold}, {} · {}",
        b.source,
        b.criteria.join(", ")
    )
}

/// `show --case`'s claim lists (empty when no verdict holds claim diagnostics).
pub fn claims_text(verdicts: &[CriterionVerdict]) -> String {
    let mut out = String::new();
    for b in blocks(verdicts) {
        let _ = writeln!(out, "Claim diagnostics ({}):", heading(&b));
        let _ = writeln!(out, "  Chunks: {}", chunks_line(b.detail));
        let answer = b.detail.get("answer_claims").and_then(Value::as_array);
        let _ = writeln!(out, "  Answer claims ({}):", answer.map_or(0, Vec::len));
        for (i, c) in answer.into_iter().flatten().enumerate() {
            let text = c.get("claim").and_then(Value::as_str).unwrap_or("");
            let _ = writeln!(out, "    {:>2}. {text}", i + 1);
            let in_reference = match c.get("in_reference") {
                Some(Value::Bool(_)) => format!(
                    "in reference: {}{} · ",
                    yes_no(&c["in_reference"]),
                    probability(c)
                ),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "        {in_reference}chunks: {} · {}",
                chunk_list(&c["chunks"]),
                answer_label(c)
            );
        }
        match b.detail.get("reference_claims").and_then(Value::as_array) {
            None => out.push_str("  Reference claims: no reference answer\n"),
            Some(claims) => {
                let _ = writeln!(out, "  Reference claims ({}):", claims.len());
                for (j, c) in claims.iter().enumerate() {
                    let text = c.get("claim").and_then(Value::as_str).unwrap_or("");
                    let _ = writeln!(out, "    {:>2}. {text}", j + 1);
                    let retrieved = if c.get("retrieved").and_then(Value::as_bool) == Some(true) {
                        "retrieved"
                    } else {
                        "not retrieved"
                    };
                    let _ = writeln!(
                        out,
                        "        in answer: {}{} · chunks: {} · {retrieved}",
                        yes_no(&c["in_answer"]),
                        probability(c),
                        chunk_list(&c["chunks"])
                    );
                }
            }
        }
    }
    out
}

/// The HTML report's and the viewer's claim lists (empty when no verdict holds claim
/// diagnostics); every value escaped.
pub fn claims_html(verdicts: &[CriterionVerdict]) -> String {
    let mut out = String::new();
    for b in blocks(verdicts) {
        let _ = writeln!(
            out,
            "<div class=\"claims\"><b>Claim diagnostics</b> <span class=\"muted\">{}</span>",
            escape(&heading(&b))
        );
        let _ = writeln!(out, "<p>Chunks: {}</p>", escape(&chunks_line(b.detail)));
        out.push_str(
            "<table>\n<tr><th>#</th><th>answer claim</th><th>in reference</th><th>chunks</th><th>what it is</th></tr>\n",
        );
        for (i, c) in b
            .detail
            .get("answer_claims")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}{}</td><td>{}</td><td>{}</td></tr>",
                i + 1,
                escape(c.get("claim").and_then(Value::as_str).unwrap_or("")),
                yes_no(&c["in_reference"]),
                escape(&probability(c)),
                escape(&chunk_list(&c["chunks"])),
                escape(&answer_label(c))
            );
        }
        out.push_str("</table>\n");
        if let Some(claims) = b.detail.get("reference_claims").and_then(Value::as_array) {
            out.push_str(
                "<table>\n<tr><th>#</th><th>reference claim</th><th>in answer</th><th>chunks</th></tr>\n",
            );
            for (j, c) in claims.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "<tr><td>{}</td><td>{}</td><td>{}{}</td><td>{}</td></tr>",
                    j + 1,
                    escape(c.get("claim").and_then(Value::as_str).unwrap_or("")),
                    yes_no(&c["in_answer"]),
                    escape(&probability(c)),
                    escape(&chunk_list(&c["chunks"]))
                );
            }
            out.push_str("</table>\n");
        }
        out.push_str("</div>\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use oloproof_core::verdict::Verdict;
    use serde_json::json;

    fn detail() -> Value {
        json!({
            "diagnostics": "ragchecker",
            "method": "llm",
            "chunks": [{"rank": 1, "relevant": true}, {"rank": 2, "relevant": false}],
            "answer_claims": [
                {"claim": "Refunds take <14> days", "in_reference": true, "chunks": [1],
                 "category": "faithful", "noise": null},
                {"claim": "Shipping is free", "in_reference": false, "chunks": [2],
                 "category": "faithful", "noise": "irrelevant"},
                {"claim": "It rains", "in_reference": false, "chunks": [],
                 "category": "hallucination", "noise": null}
            ],
            "reference_claims": [
                {"claim": "Refunds take 14 days", "in_answer": true, "chunks": [1], "retrieved": true}
            ]
        })
    }

    fn verdict(criterion: &str, value: f64) -> CriterionVerdict {
        CriterionVerdict {
            criterion: criterion.into(),
            verdict: Verdict::Score { value },
            detail: json!({"judge": "default", "result": detail()}),
        }
    }

    #[test]
    fn one_block_for_the_criteria_sharing_a_check() {
        let vs = [
            verdict("claim_precision", 1.0 / 3.0),
            verdict("generator_hallucination", 1.0 / 3.0),
            CriterionVerdict {
                criterion: "contains".into(),
                verdict: Verdict::Pass,
                detail: Value::Null,
            },
        ];
        let text = claims_text(&vs);
        assert_eq!(text.matches("Claim diagnostics").count(), 1, "{text}");
        assert!(text.contains(
            "Claim diagnostics (llm, judge default · claim_precision, generator_hallucination):"
        ));
        assert!(text.contains("Chunks: relevant 1 · irrelevant 2"), "{text}");
        assert!(text.contains(
            "in reference: no · chunks: 2 · faithful, incorrect, from an irrelevant chunk"
        ));
        assert!(text.contains("in reference: no · chunks: none · hallucination"));
        assert!(text.contains("in answer: yes · chunks: 1 · retrieved"));
        let html = claims_html(&vs);
        assert!(html.contains("Refunds take &lt;14&gt; days"), "{html}");
        assert_eq!(html.matches("<div class=\"claims\">").count(), 1);
        assert_eq!(claims_text(&vs[2..]), "");
    }
}
