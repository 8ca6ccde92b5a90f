//! `context_utilisation`: the share of the context's passages the answer cites
//! (`oloproof_metrics::rag::context::context_utilisation`). Excluded without a context
//! (`no_context`); `missing` when the generation failed.

use oloproof_core::case::Case;
use oloproof_core::config::EvaluatorEntry;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use oloproof_metrics::batch::item::{self, ItemInput, Passage, Utilisation};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{excluded, missing, verdict, EntryParser, Evaluator, EvaluatorSpec, SummaryKind};
use crate::judged::JudgeEnv;

/// Options of `context_utilisation`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct ContextUtilisationOptions {
    /// Criterion name (default `context_utilisation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
}

/// The `context_utilisation` type.
pub(crate) const SPEC: EvaluatorSpec = EvaluatorSpec {
    name: "context_utilisation",
    build: |p: &EntryParser<'_>| {
        let options: ContextUtilisationOptions = p.options()?;
        Ok(Box::new(ContextUtilisation {
            criterion: options
                .criterion
                .clone()
                .unwrap_or_else(|| p.entry.type_name.clone()),
            identity: p.identity(&options),
        }))
    },
};

struct ContextUtilisation {
    criterion: String,
    identity: EvaluatorEntry,
}

impl Evaluator for ContextUtilisation {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        SummaryKind::Mean
    }

    fn identity(&self) -> &EvaluatorEntry {
        &self.identity
    }

    fn evaluate(&self, _: &Case, trace: &Trace, _: Option<&JudgeEnv<'_>>) -> CriterionVerdict {
        if trace.generation.is_none() {
            return missing(&self.criterion, trace, "the generation");
        }
        // The same per-item adapter as `oloproof metric context_utilisation` (passages by
        // document id).
        let citations = trace.citations();
        let item = ItemInput {
            context: trace.context.as_ref().map(|c| {
                c.passages
                    .iter()
                    .map(|p| Passage {
                        id: Some(p.passage.doc_id.as_str()),
                        text: None,
                    })
                    .collect()
            }),
            citations: citations.iter().map(String::as_str).collect(),
            ..ItemInput::default()
        };
        match item::context_utilisation(&item) {
            Ok(Utilisation {
                value: Some(u),
                context,
                cited,
                ..
            }) => verdict(
                &self.criterion,
                Verdict::score(u),
                json!({"context": context, "cited": cited}),
            ),
            Ok(_) | Err(_) => excluded(&self.criterion, "no_context"),
        }
    }
}
