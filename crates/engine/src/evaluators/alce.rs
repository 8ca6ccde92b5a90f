//! The `citation_recall` and `citation_precision` evaluators: ALCE's citation quality
//! (`oloproof_metrics::rag::citations`) with an LLM judge deciding entailment.
//!
//! The answer is split into sentences (`oloproof_metrics::rag::sentences`). A sentence cites
//! what its `[n]` markers name — the n-th passage of the context given to `generate`, 1-based,
//! as ALCE numbers its documents. An answer without any marker whose output lists
//! `citations` (passage or chunk ids) has those citations applied to every sentence; an id
//! that is not in the context is out of range. Each round of entailment checks (the joint
//! sets, then precision's single and leave-one-out sets) is one call of the citation-support
//! template, one statement per check, so both evaluators share their calls through the judge
//! cache. With a local `kind: nli` (or `cross_encoder`) judge, each check is one premise–hypothesis
//! pair instead (the cited documents joined by newlines, the sentence), entailed when the model's
//! probability reaches `threshold` (default 0.5) — ALCE's own setting, with an NLI model.

use oloproof_core::trace::Trace;
use oloproof_judge::ragas::{JudgedScore, Sample};
use oloproof_judge::templates::{self, CitedStatement};
use oloproof_judge::{CallRecord, JudgeCache, JudgeClient, JudgeError};
use oloproof_metrics::rag::citations::{
    citation_quality, parse_cited_sentence, CitationQuality, CitedSentence,
    DEFAULT_AT_MOST_CITATIONS,
};
use oloproof_metrics::rag::sentences::split_sentences;
use serde_json::{json, Value};

/// Which number of the citation quality an evaluator reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CitationMeasure {
    /// Entailed sentences / sentences.
    Recall,
    /// Needed citations / counted citations.
    Precision,
}

/// How [`judge_citations`] scores.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CitationSettings {
    /// Citations kept per sentence (`None`: ALCE's default of 3).
    pub at_most_citations: Option<usize>,
    /// With a local NLI judge, the entailment probability that counts as entailed.
    pub nli_threshold: f64,
    /// Recall or precision.
    pub measure: CitationMeasure,
}

/// The context passages' texts in context order (ALCE's `Title: …\n` prefix when the passage
/// has a `title` in its metadata).
fn documents(trace: &Trace) -> Vec<(Vec<String>, String)> {
    trace
        .context
        .as_ref()
        .map(|c| {
            c.passages
                .iter()
                .map(|p| {
                    let p = &p.passage;
                    let mut ids = vec![p.doc_id.clone()];
                    ids.extend(p.chunk_id.clone());
                    let text = p.text.clone().unwrap_or_default(); // a passage without text
                    let title = p
                        .metadata
                        .as_ref()
                        .and_then(|m| m.get("title"))
                        .and_then(Value::as_str);
                    let shown = match title {
                        Some(t) => format!("Title: {t}\n{text}"),
                        None => text,
                    };
                    (ids, shown)
                })
                .collect()
        })
        .unwrap_or_default() // no context: no passages
}

/// The answer's sentences with their citations (see the module docs).
pub fn cited_sentences(answer: &str, trace: &Trace) -> Vec<CitedSentence> {
    let mut sentences: Vec<CitedSentence> = split_sentences(answer)
        .iter()
        .map(|s| parse_cited_sentence(s))
        .collect();
    if sentences.iter().all(|s| s.citations.is_empty()) {
        let docs = documents(trace);
        let cited: Vec<Option<usize>> = trace
            .citations()
            .iter()
            .map(|id| docs.iter().position(|(ids, _)| ids.contains(id)))
            .collect();
        if !cited.is_empty() {
            for s in &mut sentences {
                s.citations = cited.clone();
            }
        }
    }
    sentences
}

/// ALCE citation quality of one case, entailment decided by `judge`.
pub fn judge_citations(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    sample: &Sample<'_>,
    trace: &Trace,
    settings: CitationSettings,
    repeat: u32,
) -> Result<JudgedScore, JudgeError> {
    let CitationSettings {
        at_most_citations,
        nli_threshold,
        measure,
    } = settings;
    let docs = documents(trace);
    let sentences = cited_sentences(sample.answer, trace);
    let at_most = Some(at_most_citations.unwrap_or(DEFAULT_AT_MOST_CITATIONS));
    let mut calls: Vec<CallRecord> = Vec::new();
    let nli = super::claim_support::is_pair_classifier(judge);
    let quality = citation_quality(&sentences, docs.len(), at_most, |checks| {
        if nli {
            // A local NLI model: premise = the cited documents joined by newlines (as ALCE
            // joins them), hypothesis = the sentence; entailed at probability ≥ threshold.
            let pairs: Vec<(String, String)> = checks
                .iter()
                .map(|c| {
                    let premise: Vec<&str> =
                        c.documents.iter().map(|&d| docs[d].1.as_str()).collect();
                    (premise.join("\n"), sentences[c.sentence].text.clone())
                })
                .collect();
            let scores = judge.score_pairs(&pairs)?;
            return Ok(scores
                .iter()
                .map(|&p| f64::from(p) >= nli_threshold)
                .collect());
        }
        let items: Vec<CitedStatement> = checks
            .iter()
            .map(|c| CitedStatement {
                statement: sentences[c.sentence].text.clone(),
                sources: c.documents.iter().map(|&d| docs[d].1.clone()).collect(),
            })
            .collect();
        let n = items.len();
        let check = move |v: &Value| templates::check_ids(v, "verdicts", n);
        let record = judge.judge(
            cache,
            &templates::citation_support(sample.question, &items, repeat),
            &check,
        )?;
        let flags = templates::flags_by_id(&record.parsed, "verdicts", "supported", n);
        calls.push(record);
        Ok(flags.into_iter().map(|(ok, _)| ok).collect())
    })?;
    Ok(score(quality, measure, calls))
}

fn score(
    quality: Option<CitationQuality>,
    measure: CitationMeasure,
    calls: Vec<CallRecord>,
) -> JudgedScore {
    let Some(q) = quality else {
        return JudgedScore {
            value: None,
            excluded_reason: Some("no_sentences"),
            detail: json!({"sentences": []}),
            calls,
        };
    };
    let sentences: Vec<Value> = q
        .sentences
        .iter()
        .map(|s| {
            json!({
                "sentence": s.text,
                "citations": s.citations.iter().map(|c| c.map(|d| d + 1)).collect::<Vec<_>>(),
                "unchecked": s.unchecked,
                "entailed": s.entailed,
                "relevant_citations": s.relevant_citations,
                "counted_citations": s.counted_citations,
                "overcited": s.overcited,
            })
        })
        .collect();
    let detail = json!({
        "recall": q.recall,
        "precision": q.precision,
        "citations": q.citations,
        "multi_cited": q.multi_cited,
        "multi_cited_supported": q.multi_cited_supported,
        "overcited": q.overcited,
        "sentences": sentences,
    });
    let value = match measure {
        CitationMeasure::Recall => q.recall,
        CitationMeasure::Precision => q.precision,
    };
    JudgedScore {
        value: Some(value),
        excluded_reason: None,
        detail,
        calls,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oloproof_judge::mock::{MockReply, MockServer, RecordedRequest};
    use oloproof_judge::{JudgeSettings, MemoryCache, Provider};

    /// A judge that finds a statement supported when its cited sources contain the
    /// statement's number: the user message lists `[i] Statement: …\nCited sources:\n…`.
    fn number_judge(r: &RecordedRequest) -> MockReply {
        let user = r.body["messages"][1]["content"].as_str().unwrap_or("");
        let verdicts: Vec<Value> = user
            .split("\n\n---\n\n")
            .enumerate()
            .map(|(i, block)| {
                let statement = block
                    .split("Statement: ")
                    .nth(1)
                    .and_then(|s| s.split('\n').next())
                    .unwrap_or("");
                let sources = block.split("Cited sources:").nth(1).unwrap_or("");
                let number: String = statement
                    .split_whitespace()
                    .find(|w| w.chars().all(|c| c.is_ascii_digit()))
                    .unwrap_or("-")
                    .to_string();
                json!({"id": i + 1, "reason": "r", "supported": u8::from(sources.contains(&number))})
            })
            .collect();
        MockReply::json(json!({ "verdicts": verdicts }))
    }

    fn trace(answer: &str, citations: &[&str]) -> Trace {
        serde_json::from_value(json!({
            "schema_version": 1,
            "case_id": "c",
            "context": {
                "passages": [
                    {"position": 1, "doc_id": "refunds", "text": "Refunds within 14 days."},
                    {"position": 2, "doc_id": "shipping", "text": "Free shipping over 50 EUR.",
                     "metadata": {"title": "Shipping"}},
                    {"position": 3, "doc_id": "phones", "text": "No phone line; 14 agents answer mail."}
                ],
                "dropped": [],
                "truncated": false
            },
            "generation": {"answer": answer, "citations": citations}
        }))
        .unwrap()
    }

    fn run(
        answer: &str,
        citations: &[&str],
        measure: CitationMeasure,
    ) -> (JudgedScore, usize, String) {
        let server = MockServer::start();
        server.respond_with(number_judge);
        let judge = JudgeClient::new(
            "j",
            JudgeSettings::new(Provider::Openai, &server.base_url(), "m", None),
        )
        .unwrap();
        let t = trace(answer, citations);
        let sample = Sample {
            question: "q",
            answer,
            contexts: &[],
            reference: None,
        };
        let s = judge_citations(
            &judge,
            &MemoryCache::new(),
            &sample,
            &t,
            CitationSettings {
                at_most_citations: None,
                nli_threshold: 0.5,
                measure,
            },
            0,
        )
        .unwrap();
        let sent: String = server
            .requests()
            .iter()
            .map(|r| {
                r.body["messages"][1]["content"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            })
            .collect();
        (s, server.request_count(), sent)
    }

    #[test]
    fn inline_markers_through_a_judge() {
        let answer = "Refunds take 14 days [1][3]. Shipping is free over 50 EUR [2]. Call us.";
        let (recall, calls, _) = run(answer, &[], CitationMeasure::Recall);
        assert_eq!(recall.value, Some(2.0 / 3.0));
        // Round one (joint sets) and round two (first sentence: both documents contain 14,
        // so each is needed alone and nothing is overcited).
        assert_eq!(calls, 2);
        let (precision, _, _) = run(answer, &[], CitationMeasure::Precision);
        assert_eq!(precision.value, Some(1.0));
        assert_eq!(precision.detail["overcited"], 0);
        assert_eq!(
            precision.detail["sentences"][2]["unchecked"],
            "no_citations"
        );
        assert_eq!(precision.detail["sentences"][0]["citations"], json!([1, 3]));
    }

    #[test]
    fn an_unneeded_citation_lowers_precision() {
        let (s, _, sent) = run(
            "Shipping is free over 50 EUR [1][2].",
            &[],
            CitationMeasure::Precision,
        );
        assert_eq!(s.value, Some(0.5));
        assert_eq!(s.detail["overcited"], 1);
        // The titled passage is shown to the judge as ALCE formats it.
        assert!(sent.contains("Title: Shipping\nFree shipping over 50 EUR."));
        assert_eq!(s.calls.len(), 2);
    }

    #[test]
    fn answer_level_citations_apply_to_every_sentence() {
        let (s, calls, _) = run(
            "Refunds take 14 days. Shipping costs 50 EUR.",
            &["refunds"],
            CitationMeasure::Recall,
        );
        assert_eq!(s.value, Some(0.5));
        assert_eq!(calls, 1);
        let (s, calls, _) = run(
            "Refunds take 14 days.",
            &["unknown"],
            CitationMeasure::Recall,
        );
        assert_eq!(s.value, Some(0.0));
        assert_eq!(
            s.detail["sentences"][0]["unchecked"],
            "citation_out_of_range"
        );
        assert_eq!(calls, 0);
    }

    #[test]
    fn empty_answer_is_excluded() {
        let (s, _, _) = run("  ", &[], CitationMeasure::Recall);
        assert_eq!((s.value, s.excluded_reason), (None, Some("no_sentences")));
    }
}

super::judged::llm_judged_options! {
    /// Options of `citation_recall` and `citation_precision`.
    AlceOptions {
        /// With a local `nli` judge: the entailment probability that counts as entailed
        /// (default 0.5).
        threshold: f64,
        /// Citations per sentence kept (ALCE's `--at_most_citations`, default 3).
        at_most_citations: usize,
    }
}

/// `citation_recall`: sentences their cited passages entail / sentences.
pub(crate) const CITATION_RECALL: super::EvaluatorSpec = super::EvaluatorSpec {
    name: "citation_recall",
    build: |p| build(p, CitationMeasure::Recall),
};

/// `citation_precision`: citations needed for an entailed sentence / citations.
pub(crate) const CITATION_PRECISION: super::EvaluatorSpec = super::EvaluatorSpec {
    name: "citation_precision",
    build: |p| build(p, CitationMeasure::Precision),
};

fn build(
    p: &super::EntryParser<'_>,
    measure: CitationMeasure,
) -> Result<Box<dyn super::Evaluator>, oloproof_core::source::SourceError> {
    super::judged::build(p, super::judged::JudgeNeed::Llm, |o: AlceOptions| {
        Box::new(Alce(CitationSettings {
            at_most_citations: o.at_most_citations,
            nli_threshold: o
                .threshold
                .unwrap_or(super::claim_support::DEFAULT_NLI_THRESHOLD),
            measure,
        }))
    })
}

/// ALCE citation quality as a judged metric.
struct Alce(CitationSettings);

impl super::judged::JudgedMetric for Alce {
    fn score(
        &self,
        input: &super::judged::JudgedInput<'_>,
        judge: Option<&JudgeClient>,
        repeat: u32,
    ) -> Result<JudgedScore, JudgeError> {
        judge_citations(
            super::judged::need(judge)?,
            input.cache,
            &input.sample,
            input.trace,
            self.0,
            repeat,
        )
    }

    fn max_calls(&self) -> (u32, u32) {
        (2, 0)
    }
}
