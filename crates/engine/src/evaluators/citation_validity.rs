//! `citation_validity`: every id the answer cites is a passage (or chunk) of the context given
//! to `generate`; with `require_citations`, an answer that cites nothing fails.

use oloproof_core::case::Case;
use oloproof_core::config::EvaluatorEntry;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{missing, verdict, EntryParser, Evaluator, EvaluatorSpec, SummaryKind};
use crate::judged::JudgeEnv;

/// Options of `citation_validity`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CitationOptions {
    /// Criterion name (default `citations_valid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// Fail answers that cite nothing.
    #[serde(default)]
    pub require_citations: bool,
}

/// The `citation_validity` type.
pub(crate) const SPEC: EvaluatorSpec = EvaluatorSpec {
    name: "citation_validity",
    build: |p: &EntryParser<'_>| {
        let options: CitationOptions = p.options()?;
        Ok(Box::new(CitationValidity {
            criterion: options
                .criterion
                .clone()
                .unwrap_or_else(|| "citations_valid".to_string()),
            identity: p.identity(&options),
            options,
        }))
    },
};

struct CitationValidity {
    criterion: String,
    identity: EvaluatorEntry,
    options: CitationOptions,
}

impl Evaluator for CitationValidity {
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
        if trace.generation.is_none() {
            return missing(&self.criterion, trace, "the generation");
        }
        let cited = trace.citations();
        let mut known = std::collections::HashSet::new();
        if let Some(ctx) = &trace.context {
            for p in &ctx.passages {
                known.insert(p.passage.doc_id.as_str());
                if let Some(c) = &p.passage.chunk_id {
                    known.insert(c.as_str());
                }
            }
        }
        let invalid: Vec<&String> = cited
            .iter()
            .filter(|c| !known.contains(c.as_str()))
            .collect();
        if cited.is_empty() {
            let v = Verdict::pass_if(!self.options.require_citations);
            return verdict(&self.criterion, v, json!({"cited": 0}));
        }
        verdict(
            &self.criterion,
            Verdict::pass_if(invalid.is_empty()),
            json!({"cited": cited.len(), "invalid": invalid}),
        )
    }
}
