//! One case through the staged system, behind the content-addressed caches (their keys are
//! in [`crate::keys`]).
//!
//! Errors are never cached: a case that failed runs again next time.

use std::cell::Cell;
use std::time::Instant;

use oloproof_core::case::Case;
use oloproof_core::context::{assemble, within_top_k};
use oloproof_core::store::{CacheLayer, Store};
use oloproof_core::system::SystemConnection;
use oloproof_core::trace::{ErrorKind, StageError, Trace};

use crate::keys::{execution_key, generation_key, retrieval_key, token_count_key};
pub use crate::keys::{layer, CacheWrite};

use oloproof_core::passage::Retrieval;
use oloproof_core::settings::{Intervention, SystemSettings};

/// Where cache lookups go; `None` when caches are bypassed. One per thread of a run.
pub struct CacheReader<'a> {
    store: Option<&'a dyn Store>,
    /// Whether a rewrite the cache does not hold goes to the system with its retrievals in one
    /// request (`rewrite_retrieve`): true until a retrieval so fetched turns out to be cached
    /// already (a changed rewriter whose queries did not change), after which this thread
    /// asks for the rewrite alone and only the retrievals the cache misses.
    rewrite_with_retrievals: Cell<bool>,
}

impl<'a> CacheReader<'a> {
    /// Reads from `store`, or from nothing.
    pub fn new(store: Option<&'a dyn Store>) -> Self {
        CacheReader {
            store,
            rewrite_with_retrievals: Cell::new(true),
        }
    }

    /// Whether to send a rewrite the cache missed together with its retrievals (see
    /// [`SystemConnection::rewrite_retrieve`]).
    pub fn rewrite_with_retrievals(&self) -> bool {
        self.rewrite_with_retrievals.get()
    }

    /// A retrieval fetched with its rewrite was in the cache already: from now on this thread
    /// sends rewrites alone, so that cached retrievals are not asked for again.
    pub(crate) fn retrieval_cached_after_rewrite_miss(&self) {
        self.rewrite_with_retrievals.set(false);
    }

    /// A cached value, if any. A read error is a miss, said on stderr (`-v`/`RUST_LOG`): the
    /// result is recomputed and the entry written again, so nothing is lost but time.
    pub fn get(&self, layer: CacheLayer, key: &str) -> Option<String> {
        match self.store?.cache_get(layer, key) {
            Ok(value) => value,
            Err(e) => {
                tracing::warn!(layer = layer.as_str(), error = %e, "cache read failed; recomputing");
                None
            }
        }
    }

    /// A cached value parsed as `T`. An entry that does not parse (written by another version)
    /// is a miss, said on stderr: the result is recomputed and the entry overwritten.
    pub fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        layer: CacheLayer,
        key: &str,
    ) -> Option<T> {
        let text = self.get(layer, key)?;
        match serde_json::from_str(&text) {
            Ok(value) => Some(value),
            Err(e) => {
                tracing::warn!(layer = layer.as_str(), error = %e, "unreadable cache entry; recomputing");
                None
            }
        }
    }
}

/// Opens connections lazily: a fully cached case never starts a worker.
pub trait ConnectionSource {
    /// The connection, started if needed.
    fn connection(&mut self) -> Result<&mut dyn SystemConnection, StageError>;

    /// The connection, started if needed and made ready for its next call
    /// ([`SystemConnection::ready`]: a worker that crashed or timed out is restarted now).
    /// Take it before a stage's clock starts, so that no start-up, first or after a crash, is
    /// counted in the stage's latency.
    fn ready_connection(&mut self) -> Result<&mut dyn SystemConnection, StageError> {
        let conn = self.connection()?;
        conn.ready();
        Ok(conn)
    }
}

/// How one case is executed: normally, or under a diagnosis intervention.
#[derive(Default, Clone, Copy)]
pub struct CaseMode<'a> {
    /// The intervention, for child runs (their executions are never served from or written to
    /// the execution cache).
    pub intervention: Option<&'a Intervention>,
    /// The retrieval to replay instead of calling `retrieve`.
    pub recorded: Option<&'a Retrieval>,
    /// A recorded dataset's trace, returned as it is: no connection, no cache.
    pub trace: Option<&'a Trace>,
    /// The local cross-encoder an intervention's `reranker: judge:NAME` names.
    pub reranker_judge: Option<&'a oloproof_judge::JudgeClient>,
    /// Output fields whose token count an evaluator reads (`max_length` with `unit: tokens`):
    /// asked of the system's `count_tokens` after generation, see [`count_output_tokens`].
    pub count_tokens_of: &'a [String],
    /// Also retrieve the raw question through every lane when the system rewrites it (an
    /// evaluator compares the rewrites against it: `rewrite_uplift`).
    pub raw_query: bool,
    /// `recorded` is the input of the system's `rerank` stage (a lane's recorded ranking,
    /// `lane=NAME`): the rerank stage runs on it, behind its cache, unless the intervention
    /// says `no_rerank` or the system has none. Otherwise `recorded` goes to context assembly
    /// as it is.
    pub rerank_recorded: bool,
    /// The case's [`execution_key`], when the caller computed it already (the runner, which
    /// also keys the case's judgments with it); computed here otherwise.
    pub execution_key: Option<&'a str>,
}

/// The prefix of an intervention's `reranker` that names a judge of `judges:` (a local
/// cross-encoder) instead of the system's `module:function`.
pub const JUDGE_RERANKER_PREFIX: &str = "judge:";

/// Reorders `candidates` by a cross-encoder's relevance to `question`, best first (ties keep
/// their order); each candidate's `score` becomes the model's.
pub fn rerank_with_judge(
    judge: &oloproof_judge::JudgeClient,
    question: &str,
    candidates: &[oloproof_core::passage::Passage],
) -> Result<Vec<oloproof_core::passage::Passage>, StageError> {
    let failure = |message: String| StageError {
        stage: "rerank".into(),
        kind: ErrorKind::Raised,
        error_type: None,
        message,
        traceback: None,
        stderr_tail: Vec::new(),
    };
    let mut pairs = Vec::with_capacity(candidates.len());
    for c in candidates {
        let text = c.text.as_deref().ok_or_else(|| {
            failure(format!(
                "candidate {} has no text: a cross-encoder reranker scores passage texts",
                c.doc_id
            ))
        })?;
        pairs.push((question.to_string(), text.to_string()));
    }
    let scores = if pairs.is_empty() {
        Vec::new()
    } else {
        judge
            .score_pairs(&pairs)
            .map_err(|e| failure(format!("judge {}: {e}", judge.name())))?
    };
    let mut ranked: Vec<(f32, oloproof_core::passage::Passage)> =
        scores.into_iter().zip(candidates.iter().cloned()).collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
    Ok(ranked
        .into_iter()
        .map(|(score, mut p)| {
            p.score = Some(f64::from(score));
            p
        })
        .collect())
}

/// One executed case.
#[derive(Debug)]
pub struct Executed {
    /// What the case did.
    pub trace: Trace,
    /// The cache entries its stages and token counts wrote.
    pub writes: Vec<CacheWrite>,
    /// The execution cache key to store the finished trace under (the caller writes
    /// `serde_json::to_string` of the trace it records, the same text as the case's stored
    /// trace; a reader of the entry drops what is not the execution's: cache use, latency,
    /// stderr, output token counts, the filter check). `None`: nothing to cache — a failed
    /// stage, an intervention, a recorded trace, or an execution read from that cache.
    pub execution_entry: Option<String>,
}

/// Runs one case: stages on cache misses, context assembly, the token counts of output fields
/// evaluators ask for, and the cache entries to write.
pub fn execute_case(
    system: &SystemSettings,
    case: &Case,
    source: &mut dyn ConnectionSource,
    cache: &CacheReader<'_>,
    mode: CaseMode<'_>,
) -> Executed {
    if let Some(recorded) = mode.trace {
        return Executed {
            trace: recorded.clone(),
            writes: Vec::new(),
            execution_entry: None,
        };
    }
    let (mut trace, mut writes, execution_entry) =
        execute_stages(system, case, source, cache, mode);
    count_output_tokens(
        system,
        mode.count_tokens_of,
        source,
        cache,
        &mut trace,
        &mut writes,
    );
    Executed {
        trace,
        writes,
        execution_entry,
    }
}

/// The system's token counts of the output `fields` of a generated `trace`, into
/// `trace.output_tokens`: each field's [`Trace::output_text`] is looked up in the
/// `count_tokens` cache layer, and the misses go to the system's `count_tokens` in one call
/// (one passage per field, `doc_id` `output.<field>`), so a fully cached case starts no
/// worker. A field the output lacks is not counted (its evaluator excludes the case); a failed
/// call is recorded as `output_tokens.error` (the criterion is `missing`, the case is not an
/// error) and never cached. The counts are not part of the execution cache entry: which
/// fields are counted depends on the evaluators, not on the system.
pub fn count_output_tokens(
    system: &SystemSettings,
    fields: &[String],
    source: &mut dyn ConnectionSource,
    cache: &CacheReader<'_>,
    trace: &mut Trace,
    writes: &mut Vec<CacheWrite>,
) {
    if fields.is_empty() || trace.error.is_some() || trace.generation.is_none() {
        return;
    }
    let mut tokens = trace.output_tokens.take().unwrap_or_default();
    let mut ask: Vec<(&String, String, String)> = Vec::new();
    for field in fields {
        if tokens.counts.contains_key(field) {
            continue;
        }
        let Some(text) = trace.output_text(field) else {
            continue;
        };
        let key = token_count_key(system, &text);
        match cache.get_json::<usize>(layer::COUNT_TOKENS, &key) {
            Some(n) => {
                tokens.counts.insert(field.clone(), n);
            }
            None => ask.push((field, text.into_owned(), key)),
        }
    }
    if !ask.is_empty() {
        let passages: Vec<oloproof_core::passage::Passage> = ask
            .iter()
            .map(|(field, text, _)| oloproof_core::passage::Passage {
                doc_id: format!("output.{field}"),
                chunk_id: None,
                score: None,
                text: Some(text.clone()),
                metadata: None,
            })
            .collect();
        // The worker is started (when it is not yet) before the clock: its start-up is not
        // this stage's latency.
        let conn = source.ready_connection();
        let started = Instant::now();
        let counted = conn.and_then(|conn| {
            let _stage = tracing::debug_span!("stage", stage = "count_tokens").entered();
            let counts = conn.count_tokens(&passages);
            trace.stderr.extend(conn.take_stderr());
            counts
        });
        let elapsed = started.elapsed().as_secs_f64() * 1e3;
        trace.latency_ms.count_tokens =
            Some(trace.latency_ms.count_tokens.unwrap_or(0.0) + elapsed);
        match counted {
            Ok(counts) => {
                for ((field, _, key), n) in ask.into_iter().zip(counts) {
                    tokens.counts.insert(field.clone(), n);
                    writes.push((layer::COUNT_TOKENS, key, n.to_string()));
                }
            }
            Err(e) => tokens.error = Some(e),
        }
    }
    if !tokens.counts.is_empty() || tokens.error.is_some() {
        trace.output_tokens = Some(tokens);
    }
}

/// The stages of one case (or its execution from the cache), without output token counts;
/// with the execution cache key its trace is to be stored under ([`Executed`]).
fn execute_stages(
    system: &SystemSettings,
    case: &Case,
    source: &mut dyn ConnectionSource,
    cache: &CacheReader<'_>,
    mode: CaseMode<'_>,
) -> (Trace, Vec<CacheWrite>, Option<String>) {
    let exec_key = match mode.execution_key {
        Some(key) => key.to_string(),
        None => execution_key(system, case),
    };
    let cached = if mode.intervention.is_none() {
        cache.get(layer::EXECUTION, &exec_key)
    } else {
        None
    };
    if let Some(stored) = cached {
        if let Ok(mut trace) = serde_json::from_str::<Trace>(&stored) {
            trace.case_id = case.id.clone();
            trace.cache = oloproof_core::trace::CacheUse {
                execution: true,
                ..Default::default()
            };
            trace.latency_ms = Default::default();
            trace.stderr.clear();
            // Per run, not the execution's (the entry is the text of a case's stored trace).
            trace.output_tokens = None;
            trace.filter_check = None;
            return (trace, Vec::new(), None);
        }
    }
    let mut trace = Trace::new(&case.id);
    trace.intervention = mode.intervention.map(|i| i.label.clone());
    let mut writes = Vec::new();
    let result = run_stages(system, case, source, cache, mode, &mut trace, &mut writes);
    let execution_entry = match result {
        Ok(()) if mode.intervention.is_some() => None,
        Ok(()) => Some(exec_key),
        Err(e) => {
            trace.error = Some(e);
            None
        }
    };
    if let Ok(conn) = source.connection() {
        trace.stderr = conn.take_stderr();
    }
    (trace, writes, execution_entry)
}

fn run_stages(
    system: &SystemSettings,
    case: &Case,
    source: &mut dyn ConnectionSource,
    cache: &CacheReader<'_>,
    mode: CaseMode<'_>,
    trace: &mut Trace,
    writes: &mut Vec<CacheWrite>,
) -> Result<(), StageError> {
    let intervention = mode.intervention;
    let gold = intervention.is_some_and(|i| i.gold_context);
    let context = if gold {
        let Some(passages) = case
            .expected
            .gold_context
            .as_ref()
            .filter(|g| !g.is_empty())
        else {
            return Err(StageError {
                stage: "context".into(),
                kind: oloproof_core::trace::ErrorKind::Raised,
                error_type: Some("NoGoldContext".into()),
                message: "the case has no expected.gold_context".into(),
                traceback: None,
                stderr_tail: Vec::new(),
            });
        };
        match intervention.and_then(|i| i.gold_slot) {
            Some(slot) => {
                let wanted = intervention.map_or(0, |i| i.distractors);
                let relevant: std::collections::HashSet<&str> = case
                    .expected
                    .relevant
                    .iter()
                    .flatten()
                    .map(|r| r.doc_id.as_str())
                    .chain(passages.iter().map(|g| g.doc_id.as_str()))
                    .collect();
                let distractors: Vec<oloproof_core::passage::Passage> = mode
                    .recorded
                    .map(|r| {
                        r.candidates
                            .iter()
                            .filter(|c| !relevant.contains(c.doc_id.as_str()) && c.text.is_some())
                            .take(wanted)
                            .cloned()
                            .collect()
                    })
                    .unwrap_or_default();
                oloproof_core::context::gold_among(passages, &distractors, slot)
            }
            None => oloproof_core::context::gold(passages),
        }
    } else {
        let through_pipeline = system.is_pipeline()
            || intervention.is_some_and(|i| i.no_filter || i.raw_query || i.lane.is_some());
        let mut retrieval = match mode.recorded {
            Some(recorded) if mode.rerank_recorded => crate::pipeline::rerank_replayed(
                system,
                case,
                source,
                cache,
                intervention,
                recorded,
                trace,
                writes,
            )?,
            Some(recorded) => recorded.clone(),
            None if through_pipeline => crate::pipeline::retrieve_pipeline(
                system,
                case,
                source,
                cache,
                intervention,
                mode.raw_query,
                trace,
                writes,
            )?,
            None => retrieve(system, case, source, cache, trace, writes)?,
        };
        if let Some(function) = intervention.and_then(|i| i.reranker.as_deref()) {
            let by_judge = function.starts_with(JUDGE_RERANKER_PREFIX);
            let conn = match by_judge {
                true => None,
                false => Some(source.ready_connection()?),
            };
            let started = Instant::now();
            let reranked = if let Some(conn) = conn {
                conn.rerank(function, &case.input, &retrieval.candidates)
            } else {
                match mode.reranker_judge {
                    Some(judge) => rerank_with_judge(
                        judge,
                        &crate::judged::question_of(case),
                        &retrieval.candidates,
                    ),
                    None => Err(StageError {
                        stage: "rerank".into(),
                        kind: ErrorKind::Raised,
                        error_type: None,
                        message: format!("no judge for the reranker `{function}`"),
                        traceback: None,
                        stderr_tail: Vec::new(),
                    }),
                }
            };
            trace.latency_ms.rerank = Some(started.elapsed().as_secs_f64() * 1e3);
            retrieval.candidates = reranked?;
        }
        trace.retrieval = Some(retrieval);
        let candidates = &trace
            .retrieval
            .as_ref()
            .map(|r| r.candidates.clone())
            .unwrap_or_default();
        match system.token_budget {
            Some(budget) => {
                let counted = within_top_k(candidates, system.top_k);
                let conn = match counted.is_empty() {
                    true => None,
                    false => Some(source.ready_connection()?),
                };
                let started = Instant::now();
                let counts = match conn {
                    None => Ok(Vec::new()),
                    Some(conn) => conn.count_tokens(counted),
                };
                if !counted.is_empty() {
                    trace.latency_ms.count_tokens = Some(started.elapsed().as_secs_f64() * 1e3);
                }
                assemble(candidates, system.top_k, Some((budget, &counts?)))
            }
            None => assemble(candidates, system.top_k, None),
        }
    };
    let g_key = generation_key(system, case, &context.passages);
    trace.context = Some(context);
    let fresh = intervention.is_some_and(|i| i.fresh_generation);
    let cached = if fresh {
        None
    } else {
        cache.get_json(layer::GENERATE, &g_key)
    };
    let generation = match cached {
        Some(g) => {
            trace.cache.generate = Some(true);
            g
        }
        None => {
            trace.cache.generate = Some(false);
            let passages = trace
                .context
                .as_ref()
                .map(|c| c.passages.clone())
                .unwrap_or_default();
            let conn = source.ready_connection()?;
            let started = Instant::now();
            let g = {
                let _stage = tracing::debug_span!("stage", stage = "generate").entered();
                conn.generate(&case.input, &passages)
            };
            trace.latency_ms.generate = Some(started.elapsed().as_secs_f64() * 1e3);
            let g = g?;
            if let Ok(json) = serde_json::to_string(&g) {
                writes.push((layer::GENERATE, g_key, json));
            }
            g
        }
    };
    trace.generation = Some(generation);
    Ok(())
}

/// The retrieval stage, behind its cache.
fn retrieve(
    system: &SystemSettings,
    case: &Case,
    source: &mut dyn ConnectionSource,
    cache: &CacheReader<'_>,
    trace: &mut Trace,
    writes: &mut Vec<CacheWrite>,
) -> Result<Retrieval, StageError> {
    let r_key = retrieval_key(system, case);
    if let Some(r) = cache.get_json::<Retrieval>(layer::RETRIEVE, &r_key) {
        trace.cache.retrieve = Some(true);
        return Ok(r);
    }
    trace.cache.retrieve = Some(false);
    let conn = source.ready_connection()?;
    let started = Instant::now();
    let r = {
        let _stage = tracing::debug_span!("stage", stage = "retrieve").entered();
        conn.retrieve(&case.input, system.depth)
    };
    trace.latency_ms.retrieve = Some(started.elapsed().as_secs_f64() * 1e3);
    let r = r?;
    if let Ok(json) = serde_json::to_string(&r) {
        writes.push((layer::RETRIEVE, r_key, json));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use oloproof_core::case::parse_cases;
    use serde_json::{json, Value};

    fn system() -> SystemSettings {
        SystemSettings {
            name: "s".into(),
            version: "1".into(),
            depth: 6,
            top_k: 2,
            token_budget: Some(40),
            index_version: Some("kb-1".into()),
            params: Default::default(),
            lanes: Vec::new(),
            stages: Vec::new(),
            fusion: None,
        }
    }

    #[test]
    fn retrieval_keys_ignore_top_k_and_budget_but_not_the_index() {
        let case = parse_cases("c", r#"{"id":"a","input":{"question":"q"}}"#)
            .unwrap()
            .remove(0);
        let base = system();
        let k = retrieval_key(&base, &case);
        let wider = SystemSettings {
            top_k: 4,
            token_budget: Some(120),
            ..base.clone()
        };
        assert_eq!(retrieval_key(&wider, &case), k);
        assert_ne!(execution_key(&wider, &case), execution_key(&base, &case));
        let reindexed = SystemSettings {
            index_version: Some("kb-2".into()),
            ..base.clone()
        };
        assert_ne!(retrieval_key(&reindexed, &case), k);
        let deeper = SystemSettings {
            depth: 10,
            ..base.clone()
        };
        assert_ne!(retrieval_key(&deeper, &case), k);
        let other_input = parse_cases("c", r#"{"id":"a","input":{"question":"r"}}"#)
            .unwrap()
            .remove(0);
        assert_ne!(retrieval_key(&base, &other_input), k);
    }

    #[test]
    fn generation_keys_follow_the_context_not_top_k() {
        let case = parse_cases("c", r#"{"id":"a","input":{"question":"q"}}"#)
            .unwrap()
            .remove(0);
        let base = system();
        let ctx = json!([{"position": 1, "doc_id": "d"}]);
        let k = generation_key(&base, &case, &ctx);
        assert_eq!(
            generation_key(
                &SystemSettings {
                    top_k: 4,
                    ..base.clone()
                },
                &case,
                &ctx
            ),
            k
        );
        assert_ne!(
            generation_key(&base, &case, &json!([{"position": 2, "doc_id": "d"}])),
            k
        );
        assert_ne!(
            generation_key(
                &SystemSettings {
                    version: "2".into(),
                    ..base
                },
                &case,
                &ctx
            ),
            k
        );
    }

    /// Answers `count_tokens` with the whitespace word count of each passage (or fails), and
    /// records what it was asked.
    struct Counter {
        info: oloproof_core::system::SystemInfo,
        asked: Vec<Vec<(String, String)>>,
        fail: bool,
    }

    impl SystemConnection for Counter {
        fn info(&self) -> &oloproof_core::system::SystemInfo {
            &self.info
        }
        fn retrieve(
            &mut self,
            _: &serde_json::Map<String, Value>,
            _: usize,
        ) -> Result<Retrieval, StageError> {
            unreachable!("only count_tokens is called")
        }
        fn count_tokens(
            &mut self,
            passages: &[oloproof_core::passage::Passage],
        ) -> Result<Vec<usize>, StageError> {
            self.asked.push(
                passages
                    .iter()
                    .map(|p| (p.doc_id.clone(), p.text.clone().unwrap_or_default()))
                    .collect(),
            );
            if self.fail {
                return Err(StageError {
                    stage: "count_tokens".into(),
                    kind: ErrorKind::Raised,
                    error_type: Some("NotImplementedError".into()),
                    message: "no count_tokens".into(),
                    traceback: None,
                    stderr_tail: Vec::new(),
                });
            }
            Ok(passages
                .iter()
                .map(|p| p.text.as_deref().unwrap_or("").split_whitespace().count())
                .collect())
        }
        fn generate(
            &mut self,
            _: &serde_json::Map<String, Value>,
            _: &[oloproof_core::context::ContextPassage],
        ) -> Result<serde_json::Map<String, Value>, StageError> {
            unreachable!("only count_tokens is called")
        }
        fn rerank(
            &mut self,
            _: &str,
            _: &serde_json::Map<String, Value>,
            _: &[oloproof_core::passage::Passage],
        ) -> Result<Vec<oloproof_core::passage::Passage>, StageError> {
            unreachable!("only count_tokens is called")
        }
        fn take_stderr(&mut self) -> Vec<String> {
            Vec::new()
        }
    }

    impl ConnectionSource for Counter {
        fn connection(&mut self) -> Result<&mut dyn SystemConnection, StageError> {
            Ok(self)
        }
    }

    fn counter(fail: bool) -> Counter {
        Counter {
            info: oloproof_core::system::SystemInfo {
                protocol: 1,
                name: "s".into(),
                version: "1".into(),
                defaults: Default::default(),
                ops: vec!["count_tokens".into()],
                lanes: Vec::new(),
            },
            asked: Vec::new(),
            fail,
        }
    }

    fn generated() -> Trace {
        let mut t = Trace::new("a");
        t.generation = Some(
            json!({"answer": "fourteen days at most", "citations": ["kb-1", "kb-2"], "none": null})
                .as_object()
                .unwrap()
                .clone(),
        );
        t
    }

    #[test]
    fn output_fields_are_counted_by_the_system_in_one_call() {
        let mut source = counter(false);
        let mut trace = generated();
        let mut writes = Vec::new();
        let fields = ["answer", "citations", "none", "absent"].map(String::from);
        count_output_tokens(
            &system(),
            &fields,
            &mut source,
            &CacheReader::new(None),
            &mut trace,
            &mut writes,
        );
        // One call; absent and null fields are not asked about; non-strings as JSON text.
        assert_eq!(
            source.asked,
            vec![vec![
                (
                    "output.answer".to_string(),
                    "fourteen days at most".to_string()
                ),
                (
                    "output.citations".to_string(),
                    r#"["kb-1","kb-2"]"#.to_string()
                ),
            ]]
        );
        let tokens = trace.output_tokens.as_ref().unwrap();
        assert_eq!(tokens.counts["answer"], 4);
        assert_eq!(tokens.counts["citations"], 1);
        assert!(tokens.error.is_none());
        assert!(trace.latency_ms.count_tokens.is_some());
        // Each count is a cache entry under the system's identity and the text.
        assert_eq!(writes.len(), 2);
        assert_eq!(writes[0].0, layer::COUNT_TOKENS);
        assert_eq!(
            writes[0].1,
            token_count_key(&system(), "fourteen days at most")
        );
        assert_eq!(writes[0].2, "4");
        assert_ne!(
            token_count_key(
                &SystemSettings {
                    version: "2".into(),
                    ..system()
                },
                "fourteen days at most"
            ),
            writes[0].1
        );
    }

    #[test]
    fn a_failed_count_is_recorded_never_cached_and_nothing_is_asked_without_fields() {
        let mut source = counter(true);
        let mut trace = generated();
        let mut writes = Vec::new();
        let cache = CacheReader::new(None);
        count_output_tokens(
            &system(),
            &["answer".to_string()],
            &mut source,
            &cache,
            &mut trace,
            &mut writes,
        );
        let tokens = trace.output_tokens.as_ref().unwrap();
        assert!(tokens.counts.is_empty());
        assert_eq!(tokens.error.as_ref().unwrap().stage, "count_tokens");
        assert!(trace.error.is_none(), "the case itself did not fail");
        assert!(writes.is_empty());

        let mut quiet = counter(false);
        let mut trace = generated();
        count_output_tokens(&system(), &[], &mut quiet, &cache, &mut trace, &mut writes);
        let mut failed = Trace::new("a");
        failed.error = source.count_tokens(&[]).err();
        count_output_tokens(
            &system(),
            &["answer".to_string()],
            &mut quiet,
            &cache,
            &mut failed,
            &mut writes,
        );
        assert!(quiet.asked.is_empty());
        assert!(trace.output_tokens.is_none() && failed.output_tokens.is_none());
    }
}
