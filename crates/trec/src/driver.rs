//! The evaluation driver: qrels topics in trec_eval order, evaluated in parallel, summed in
//! order.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use oloproof_metrics::ranking::{
    evaluate_topic, summarize, EvalOptions, MeasureSet, TopicQrels, TopicValues,
};
use rayon::prelude::*;

use crate::error::TrecError;
use crate::parse::{read_run, ParsedQrels, ParsedRun, RunBuilder, TopicDocs};

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

type Outcome = Result<Option<TopicValues>, TrecError>;

fn evaluate_one(
    path: &Path,
    topic: &[u8],
    q: &TopicQrels<&[u8]>,
    docs: Option<&TopicDocs>,
    set: &MeasureSet,
    options: &EvalOptions,
) -> Outcome {
    let mut retrieved = docs.map(TopicDocs::retrieved);
    evaluate_topic(set, q, retrieved.as_deref_mut(), options).map_err(|source| TrecError::Topic {
        path: path.to_path_buf(),
        topic: String::from_utf8_lossy(topic).into_owned(),
        source,
    })
}

/// Evaluates complete topics of the run in parallel (run-only topics are dropped).
fn evaluate_ready<'a>(
    index: &HashMap<&'a [u8], &TopicQrels<&'a [u8]>>,
    ready: Vec<(Vec<u8>, TopicDocs)>,
    done: &mut HashMap<&'a [u8], Outcome>,
    path: &Path,
    set: &MeasureSet,
    options: &EvalOptions,
) {
    let outs: Vec<(&[u8], Outcome)> = ready
        .into_par_iter()
        .filter_map(|(t, docs)| {
            let (&key, &q) = index.get_key_value(t.as_slice())?;
            Some((key, evaluate_one(path, key, q, Some(&docs), set, options)))
        })
        .collect();
    done.extend(outs);
}

/// Reads, parses and evaluates a run file, evaluating each topic as soon as the input has
/// moved past it so that its documents are freed early: memory then holds a block's worth of
/// topics rather than the whole run, and freed memory is reused instead of fresh pages being
/// faulted in. If a topic reappears after it was evaluated (a run whose topics are not
/// contiguous), the file is read again and evaluated as a whole; standard input, which cannot
/// be read twice, is always read whole first. Output is identical either way.
pub(crate) fn evaluate_file(
    qrels: &ParsedQrels<'_>,
    path: &Path,
    set: &MeasureSet,
    options: &EvalOptions,
) -> Result<RunResult, TrecError> {
    if path.as_os_str() == "-" {
        return evaluate_run(qrels, read_run(path)?, set, options);
    }
    let index: HashMap<&[u8], &TopicQrels<&[u8]>> =
        qrels.topics.iter().map(|(t, q)| (*t, q)).collect();
    let mut done: HashMap<&[u8], Outcome> = HashMap::with_capacity(index.len());
    let mut b = RunBuilder::new(path);
    crate::input::for_each_block(path, |block| {
        b.feed(block)?;
        if b.reopened() {
            return Ok(false);
        }
        evaluate_ready(&index, b.take_complete(), &mut done, path, set, options);
        Ok(true)
    })?;
    if b.reopened() {
        return evaluate_run(qrels, read_run(path)?, set, options);
    }
    let run_id = b.run_id();
    let rest = b.take_all();
    evaluate_ready(&index, rest, &mut done, path, set, options);
    let mut topics = Vec::with_capacity(qrels.topics.len());
    for (t, q) in &qrels.topics {
        let outcome = match done.remove(t) {
            Some(o) => o,
            None => evaluate_one(path, t, q, None, set, options),
        };
        if let Some(v) = outcome? {
            topics.push((String::from_utf8_lossy(t).into_owned(), v));
        }
    }
    if topics.is_empty() {
        return Err(TrecError::NoTopics {
            path: path.to_path_buf(),
        });
    }
    let (summary, num_q) = summarize(
        set,
        topics.iter().map(|t| &t.1),
        qrels.topics.len(),
        options,
    );
    Ok(RunResult {
        path: path.to_path_buf(),
        run_id,
        topics,
        summary,
        num_q,
    })
}
