//! `entity_grounding`: the share of the answer's named entities and numbers found in its
//! context (`oloproof_metrics::rag::context::grounding`, no model). Excluded when the answer
//! has none (`no_entities`) or there is no context (`no_context`); `missing` when the
//! generation failed or the output has no `answer`.

use oloproof_core::case::Case;
use oloproof_core::config::EvaluatorEntry;
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use oloproof_metrics::batch::item::{self, ItemError, ItemInput, Passage};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::SummaryKind;
use super::{excluded, missing, missing_with, verdict, EntryParser, Evaluator, EvaluatorSpec};
use crate::judged::JudgeEnv;

/// Options of `entity_grounding`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct EntityGroundingOptions {
    /// Criterion name (default `entity_grounding`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
}

/// The `entity_grounding` type.
pub(crate) const SPEC: EvaluatorSpec = EvaluatorSpec {
    name: "entity_grounding",
    build: |p: &EntryParser<'_>| {
        let options: EntityGroundingOptions = p.options()?;
        Ok(Box::new(EntityGrounding {
            criterion: options
                .criterion
                .clone()
                .unwrap_or_else(|| p.entry.type_name.clone()),
            identity: p.identity(&options),
        }))
    },
};

struct EntityGrounding {
    criterion: String,
    identity: EvaluatorEntry,
}

impl Evaluator for EntityGrounding {
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
        // The same per-item adapter as `oloproof metric entity_grounding`.
        let item = ItemInput {
            answer: trace.answer(),
            context: trace.context.as_ref().map(|c| {
                c.passages
                    .iter()
                    .map(|p| Passage {
                        id: Some(p.passage.doc_id.as_str()),
                        text: p.passage.text.as_deref(),
                    })
                    .collect()
            }),
            ..ItemInput::default()
        };
        let g = match item::entity_grounding(&item) {
            Ok(g) => g,
            Err(ItemError::NoContext) => return excluded(&self.criterion, "no_context"),
            Err(_) => return missing_with(&self.criterion, "the system's output has no `answer`"),
        };
        let detail = json!({
            "grounded": g.grounded.iter().map(|e| e.text()).collect::<Vec<_>>(),
            "ungrounded": g.ungrounded.iter().map(|e| e.text()).collect::<Vec<_>>(),
        });
        match g.rate() {
            Some(r) => verdict(&self.criterion, Verdict::score(r), detail),
            None => verdict(
                &self.criterion,
                Verdict::Excluded {
                    reason: "no_entities".into(),
                },
                detail,
            ),
        }
    }
}
