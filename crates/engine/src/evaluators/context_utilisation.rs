//! `context_utilisation`: the share of the context's passages the answer cites
//! (`oloproof_metrics::rag::context::context_utilisation`). Excluded without a context
//! (`no_context`); `missing` when the generation failed.

use oloproof_core::case::Case;
use oloproof_core::config::EvaluatorEntry;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
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
        let Some(context) = trace.context.as_ref() else {
            return excluded(&self.criterion, "no_context");
        };
        let ids: std::collections::BTreeSet<String> = context
            .passages
            .iter()
            .map(|p| p.passage.doc_id.clone())
            .collect();
        let cited: std::collections::BTreeSet<String> = trace.citations().into_iter().collect();
        match oloproof_metrics::rag::context::context_utilisation(&ids, &cited) {
            Some(u) => verdict(
                &self.criterion,
                Verdict::score(u),
                json!({"context": ids.len(), "cited": cited.len()}),
            ),
            None => excluded(&self.criterion, "no_context"),
        }
    }
}
