//! The evaluation driver: qrels topics in trec_eval order, evaluated in parallel, summed in
//! order.

use std::path::PathBuf;

use oloproof_metrics::ranking::{evaluate_topic, summarize, EvalOptions, MeasureSet, TopicValues};
use rayon::prelude::*;

use crate::error::TrecError;
use crate::parse::{ParsedQrels, ParsedRun, TopicDocs};

/// One run's evaluation: per-topic values in qrels topic order and the summary.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The run file.
    pub path: PathBuf,
    /// The run identifier (`runid`).
    pub run_id: String,
    /// Evaluated topics and their values.
    pub topics: Vec<(String, TopicValues)>,
    /// Summary values, one per slot of the measure set.
    pub summary: Vec<f64>,
    /// Number of topics evaluated.
    pub num_q: usize,
}

/// Evaluates a parsed run. The run is consumed so that each topic's documents are freed as
/// soon as the topic is done.
pub(crate) fn evaluate_run(
    qrels: &ParsedQrels<'_>,
    mut run: ParsedRun,
    set: &MeasureSet,
    options: &EvalOptions,
) -> Result<RunResult, TrecError> {
    let work: Vec<(&[u8], _, Option<TopicDocs>)> = qrels
        .topics
        .iter()
        .map(|(t, q)| (*t, q, run.topics.remove(*t)))
        .collect();
    drop(std::mem::take(&mut run.topics));
    let path = run.path.clone();
    let outcomes: Vec<Result<Option<(String, TopicValues)>, TrecError>> =
        work.into_par_iter()
            .map(|(topic, q, docs)| {
                let mut retrieved = docs.as_ref().map(TopicDocs::retrieved);
                let values = evaluate_topic(set, q, retrieved.as_deref_mut(), options).map_err(
                    |source| TrecError::Topic {
                        path: path.clone(),
                        topic: String::from_utf8_lossy(topic).into_owned(),
                        source,
                    },
                )?;
                Ok(values.map(|v| (String::from_utf8_lossy(topic).into_owned(), v)))
            })
            .collect();
    let mut topics = Vec::with_capacity(outcomes.len());
    for o in outcomes {
        if let Some(t) = o? {
            topics.push(t);
        }
    }
    if topics.is_empty() {
        return Err(TrecError::NoTopics { path });
    }
    let (summary, num_q) = summarize(
        set,
        topics.iter().map(|t| &t.1),
        qrels.topics.len(),
        options,
    );
    Ok(RunResult {
        path,
        run_id: run.run_id,
        topics,
        summary,
        num_q,
    })
}
