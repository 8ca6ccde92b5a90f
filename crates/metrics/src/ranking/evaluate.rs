//! Evaluating a whole run: topic selection (`-c`), missing topics, and the summary, over
//! in-memory qrels and runs.

use std::collections::BTreeMap;

use super::error::RankingError;
use super::judged::{judge, Compat, JudgeOptions, Retrieved, TopicQrels};
use super::measures::{EvalContext, MeasureSet, Summary, TopicValues};

/// Options of a whole evaluation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EvalOptions {
    /// How each ranking is judged (`-l`, `-M`, `-J`, compat).
    pub judge: JudgeOptions,
    /// Average over every qrels topic, scoring topics missing from the run as an empty run
    /// (trec_eval `-c`).
    pub complete: bool,
    /// Number of documents in the collection (`-N`).
    pub num_docs_in_coll: u64,
}

impl EvalOptions {
    fn context(&self) -> EvalContext {
        EvalContext {
            compat: self.judge.compat,
            num_docs_in_coll: self.num_docs_in_coll,
        }
    }
}

/// Evaluates one qrels topic. `retrieved` is the run's documents for the topic, if any.
/// Returns `None` when the topic is not evaluated: absent from the run without `-c`, or
/// with `-c` under [`Compat::V9`] (which only counts it in the denominators).
pub fn evaluate_topic<D: AsRef<[u8]>, Q: AsRef<[u8]>>(
    set: &MeasureSet,
    qrels: &TopicQrels<Q>,
    retrieved: Option<&mut [Retrieved<D>]>,
    options: &EvalOptions,
) -> Result<Option<TopicValues>, RankingError> {
    let ctx = options.context();
    match retrieved {
        Some(r) => {
            let jr = judge(r, qrels, &options.judge)?;
            Ok(Some(set.evaluate(&jr, &ctx)))
        }
        None if options.complete && options.judge.compat == Compat::V10 => Ok(Some(
            set.evaluate_missing(qrels.levels(), options.judge.relevance_level, &ctx),
        )),
        None => Ok(None),
    }
}

/// Summary values over the evaluated topics, added in the order given (qrels topic order, as
/// trec_eval, so that sums agree to the last bit). `num_qrels_topics` is the denominator
/// under `-c`.
pub fn summarize<'a>(
    set: &MeasureSet,
    topics: impl IntoIterator<Item = &'a TopicValues>,
    num_qrels_topics: usize,
    options: &EvalOptions,
) -> (Vec<f64>, usize) {
    let mut summary = Summary::new(set);
    for t in topics {
        summary.add(t);
    }
    let denominator = if options.complete {
        num_qrels_topics
    } else {
        summary.topics()
    };
    (summary.finish(set, denominator), summary.topics())
}

/// Relevance judgments of many topics, owned.
#[derive(Debug, Clone, Default)]
pub struct Qrels {
    topics: BTreeMap<String, TopicQrels<String>>,
}

impl Qrels {
    /// Builds qrels from `(topic, document, relevance)` triples in any order.
    pub fn from_triples<I, T, D>(triples: I) -> Result<Self, RankingError>
    where
        I: IntoIterator<Item = (T, D, i64)>,
        T: Into<String>,
        D: Into<String>,
    {
        let mut by_topic: BTreeMap<String, Vec<(String, i64)>> = BTreeMap::new();
        for (t, d, r) in triples {
            by_topic.entry(t.into()).or_default().push((d.into(), r));
        }
        let mut topics = BTreeMap::new();
        for (t, entries) in by_topic {
            topics.insert(t, TopicQrels::new(entries)?);
        }
        Ok(Self { topics })
    }

    /// The topics in trec_eval order (byte order of their identifiers).
    pub fn topics(&self) -> impl Iterator<Item = (&str, &TopicQrels<String>)> {
        self.topics.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Number of topics.
    pub fn len(&self) -> usize {
        self.topics.len()
    }

    /// Whether there are no topics.
    pub fn is_empty(&self) -> bool {
        self.topics.is_empty()
    }
}

/// A run: ranked (scored) documents per topic, owned.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// The run identifier printed as `runid`.
    pub run_id: String,
    topics: BTreeMap<String, Vec<Retrieved<String>>>,
}

impl Run {
    /// An empty run named `run_id`.
    pub fn new(run_id: impl Into<String>) -> Self {
        Self {
            run_id: run_id.into(),
            topics: BTreeMap::new(),
        }
    }

    /// Adds one retrieved document.
    pub fn push(&mut self, topic: impl Into<String>, doc: impl Into<String>, score: f64) {
        self.topics
            .entry(topic.into())
            .or_default()
            .push(Retrieved::new(doc.into(), score));
    }

    /// The documents retrieved for `topic`, in insertion order.
    pub fn topic(&self, topic: &str) -> Option<&[Retrieved<String>]> {
        self.topics.get(topic).map(Vec::as_slice)
    }
}

/// The result of evaluating one run.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// The measures and their output slots.
    pub set: MeasureSet,
    /// Values of every evaluated topic, in trec_eval order.
    pub topics: Vec<(String, TopicValues)>,
    /// Summary values, one per slot.
    pub summary: Vec<f64>,
    /// Number of topics evaluated (`num_q`).
    pub num_q: usize,
    /// The run identifier.
    pub run_id: String,
}

impl Evaluation {
    /// Summary value of the slot named `name` (`"map"`, `"P_10"`).
    pub fn summary_value(&self, name: &str) -> Option<f64> {
        self.set.slot_index(name).map(|i| self.summary[i])
    }

    /// Value of slot `name` for `topic`.
    pub fn topic_value(&self, topic: &str, name: &str) -> Option<f64> {
        let i = self.set.slot_index(name)?;
        self.topics
            .iter()
            .find(|(t, _)| t == topic)
            .map(|(_, v)| v.values[i])
    }
}

/// Evaluates `run` against `qrels` with the measures of `set`, as trec_eval does: topics in
/// qrels order, run-only topics ignored, missing topics skipped (or scored under `-c`).
pub fn evaluate(
    qrels: &Qrels,
    run: &Run,
    set: &MeasureSet,
    options: &EvalOptions,
) -> Result<Evaluation, RankingError> {
    let mut topics = Vec::new();
    for (topic, q) in qrels.topics() {
        let mut docs = run.topic(topic).map(<[_]>::to_vec);
        if let Some(v) = evaluate_topic(set, q, docs.as_deref_mut(), options)? {
            topics.push((topic.to_string(), v));
        }
    }
    let (summary, num_q) = summarize(set, topics.iter().map(|t| &t.1), qrels.len(), options);
    Ok(Evaluation {
        set: set.clone(),
        topics,
        summary,
        num_q,
        run_id: run.run_id.clone(),
    })
}
