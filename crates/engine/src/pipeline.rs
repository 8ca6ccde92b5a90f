//! The retrieval side of a pipeline (seed 000, Parts 2, 4, 5, 8): `rewrite` → one `retrieve`
//! per lane and query → fusion (the host's, with the library's fusion functions, or the
//! system's `fuse` op) → `rerank`. Each stage is called, cached under its own key
//! ([`crate::keys`]), timed and recorded in the trace's [`Pipeline`]; the final list becomes
//! the trace's retrieval, which context assembly cuts as it does for protocol 1.
//!
//! A reply that breaks the stage's contract (a rerank naming a document it was not given, a
//! lane reply for another lane, a fused list naming an unknown document) is a protocol error
//! of that case, naming the field; it is never cached.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use oloproof_core::case::Case;
use oloproof_core::config::{FusionMethodName, FusionNorm, FusionSettings};
use oloproof_core::passage::{Passage, Retrieval};
use oloproof_core::pipeline::{Fused, LaneRetrieval, Pipeline};
use oloproof_core::settings::{Intervention, SystemSettings};
use oloproof_core::system::{RetrieveRequest, TimedRetrieval};
use oloproof_core::trace::{ErrorKind, HitsMisses, StageError, Trace};
use oloproof_metrics::fusion::{fuse, FusionMethod, FusionOptions, Normalization};
use oloproof_metrics::ranking::Retrieved;

use crate::execute::{layer, CacheReader, CacheWrite, ConnectionSource};
use crate::keys::{lane_retrieval_key, rerank_key, rewrite_key};

/// A protocol error of one stage.
fn protocol(stage: &str, message: String) -> StageError {
    StageError {
        stage: stage.into(),
        kind: ErrorKind::Protocol,
        error_type: None,
        message,
        traceback: None,
        stderr_tail: Vec::new(),
    }
}

/// The unit a passage is identified by across lists: its document and chunk.
fn unit(p: &Passage) -> (String, Option<String>) {
    (p.doc_id.clone(), p.chunk_id.clone())
}

fn ms(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1e3
}

/// The retrieval stages of one case: records the pipeline in `trace` and returns the final
/// list (what context assembly cuts). `raw_query`: also retrieve the raw question through
/// every lane (`rewrite_uplift` compares against it).
#[allow(clippy::too_many_arguments)]
pub(crate) fn retrieve_pipeline(
    system: &SystemSettings,
    case: &Case,
    source: &mut dyn ConnectionSource,
    cache: &CacheReader<'_>,
    intervention: Option<&Intervention>,
    raw_query: bool,
    trace: &mut Trace,
    writes: &mut Vec<CacheWrite>,
) -> Result<Retrieval, StageError> {
    let question = crate::judged::question_of(case);
    let mut pipeline = Pipeline {
        question: Some(question.clone()).filter(|q| !q.is_empty()),
        ..Pipeline::default()
    };
    let skip_filters = intervention.is_some_and(|i| i.no_filter);
    let use_rewrite = system.has_stage("rewrite") && !intervention.is_some_and(|i| i.raw_query);

    let lanes: Vec<Option<String>> = match intervention.and_then(|i| i.lane.as_deref()) {
        Some(only) => vec![Some(only.to_string())],
        None if system.lanes.is_empty() => vec![None],
        None => system.lanes.iter().cloned().map(Some).collect(),
    };

    // 1. Rewrite: a rewrite the cache misses goes with its retrievals in one request when the
    // worker speaks `rewrite_retrieve` (their keys depend on the queries it returns, so they
    // cannot be looked up first).
    let mut prefetched = None;
    let queries: Vec<Option<String>> = if use_rewrite {
        let key = rewrite_key(system, case);
        let rewrite = match cache.get_json::<oloproof_core::pipeline::Rewrite>(layer::REWRITE, &key)
        {
            Some(r) => {
                trace.cache.rewrite = Some(true);
                r
            }
            None => {
                trace.cache.rewrite = Some(false);
                let conn = source.ready_connection()?;
                let with_retrievals =
                    cache.rewrite_with_retrievals() && conn.info().implements("rewrite_retrieve");
                let started = Instant::now();
                let r = {
                    let _stage = tracing::debug_span!("stage", stage = "rewrite").entered();
                    if with_retrievals {
                        let names: Vec<&str> = lanes.iter().flatten().map(String::as_str).collect();
                        conn.rewrite_retrieve(&case.input, system.depth, &names, skip_filters)
                            .and_then(|both| {
                                prefetched = Some(both.retrievals);
                                both.rewrite
                            })
                    } else {
                        conn.rewrite(&case.input).map(|r| (r, ms(started)))
                    }
                };
                trace.latency_ms.rewrite = Some(match &r {
                    Ok((_, elapsed)) => *elapsed,
                    Err(_) => ms(started),
                });
                let (r, _) = r?;
                if let Ok(json) = serde_json::to_string(&r) {
                    writes.push((layer::REWRITE, key, json));
                }
                r
            }
        };
        let queries = rewrite.queries.iter().cloned().map(Some).collect();
        pipeline.rewrite = Some(rewrite);
        queries
    } else if system.has_stage("rewrite") {
        // `raw-query`: the raw question, named as the query.
        vec![Some(question.clone())]
    } else {
        vec![None]
    };

    // 2. One retrieve per query and lane.
    let mut calls = HitsMisses::default();
    let mut retrieve_ms: Option<f64> = None;
    let requests: Vec<RetrieveRequest<'_>> = queries
        .iter()
        .flat_map(|query| {
            lanes.iter().map(move |lane| RetrieveRequest {
                query: query.as_deref(),
                lane: lane.as_deref(),
                skip_filters,
            })
        })
        .collect();
    for call in retrieve_calls(system, case, source, cache, &requests, writes, prefetched) {
        count_call(trace, &mut calls, &mut retrieve_ms, call.as_ref().ok());
        pipeline.retrievals.push(call?);
    }
    if raw_query && use_rewrite {
        // A rewrite that kept the raw question already retrieved it through a lane.
        let asked = |lane: &Option<String>| {
            pipeline.retrievals.iter().find(|r| {
                r.query.as_deref() == Some(question.as_str())
                    && r.lane.as_deref() == lane.as_deref()
            })
        };
        let raw_requests: Vec<RetrieveRequest<'_>> = lanes
            .iter()
            .filter(|lane| asked(lane).is_none())
            .map(|lane| RetrieveRequest {
                query: Some(&question),
                lane: lane.as_deref(),
                skip_filters,
            })
            .collect();
        let mut fetched =
            retrieve_calls(system, case, source, cache, &raw_requests, writes, None).into_iter();
        let mut raw_lists = Vec::new();
        for lane in &lanes {
            if let Some(asked) = asked(lane) {
                raw_lists.push(asked.clone());
                continue;
            }
            let Some(call) = fetched.next() else {
                break;
            };
            // Counted as a call, but not in the stage's time: the system under test does not
            // make it (only `rewrite_uplift` asks for it), so `latency` must not see it.
            let mut measured_ms = retrieve_ms;
            count_call(trace, &mut calls, &mut measured_ms, call.as_ref().ok());
            trace.latency_ms.retrieve = retrieve_ms;
            raw_lists.push(call?);
        }
        let candidates = if raw_lists.len() == 1 {
            raw_lists[0].retrieval.candidates.clone()
        } else {
            host_fuse(system, &raw_lists, system.depth)?
        };
        pipeline.raw_query = Some(Retrieval::new(
            Some(question.clone()),
            system.depth,
            candidates,
        ));
        if raw_lists.len() > 1 {
            pipeline.raw_query_lanes = raw_lists;
        }
    }

    // 3. Each lane's own ranking, then fusion.
    if !system.lanes.is_empty() {
        for lane in lanes.iter().flatten() {
            let lists: Vec<LaneRetrieval> = pipeline
                .retrievals
                .iter()
                .filter(|r| r.lane.as_deref() == Some(lane))
                .cloned()
                .collect();
            let ranking = if lists.len() == 1 {
                lists[0].retrieval.candidates.clone()
            } else {
                host_fuse(system, &lists, system.depth)?
            };
            pipeline.lanes.insert(lane.clone(), ranking);
        }
    }
    let mut candidates = if pipeline.retrievals.len() == 1 {
        pipeline.retrievals[0].retrieval.candidates.clone()
    } else {
        let by_system = system
            .fusion
            .as_ref()
            .is_some_and(|f| f.method == FusionMethodName::System);
        let conn = match by_system {
            true => Some(source.ready_connection()?),
            false => None,
        };
        let started = Instant::now();
        let fused = if let Some(conn) = conn {
            let lists = &pipeline.retrievals;
            let fused = conn.fuse(&case.input, lists)?;
            check_subset(
                "fuse",
                "candidates",
                &fused,
                lists.iter().flat_map(|l| l.retrieval.candidates.iter()),
            )?;
            fused
        } else {
            host_fuse(system, &pipeline.retrievals, system.depth)?
        };
        trace.latency_ms.fuse = Some(ms(started));
        pipeline.fused = Some(Fused {
            method: system
                .fusion
                .as_ref()
                .map_or_else(|| FusionSettings::default().label(), FusionSettings::label),
            candidates: fused.clone(),
        });
        fused
    };

    // 4. Rerank.
    if system.has_stage("rerank") && !intervention.is_some_and(|i| i.no_rerank) {
        let reranked = rerank_stage(
            system,
            case,
            source,
            cache,
            &candidates,
            &mut pipeline,
            trace,
            writes,
        )?;
        pipeline.pre_rerank = Some(std::mem::replace(&mut candidates, reranked));
    }

    // 5. The final list carries every predicate and hop of the calls behind it.
    let mut filters = Vec::new();
    for f in pipeline.filters() {
        filters.push(f.clone());
    }
    let hops = pipeline
        .retrievals
        .iter()
        .flat_map(|r| r.retrieval.hops.iter().cloned())
        .collect();
    let first_query = queries.first().cloned().flatten().or_else(|| {
        pipeline
            .retrievals
            .first()
            .and_then(|r| r.retrieval.query.clone())
    });
    let mut retrieval = Retrieval::new(first_query, system.depth, candidates);
    retrieval.filters = filters;
    retrieval.hops = hops;
    trace.pipeline = Some(Box::new(pipeline));
    Ok(retrieval)
}

/// Counts one retrieve call in the trace as it is made (a failed call is a miss), so a case
/// that fails halfway still says which calls ran.
fn count_call(
    trace: &mut Trace,
    calls: &mut HitsMisses,
    retrieve_ms: &mut Option<f64>,
    call: Option<&LaneRetrieval>,
) {
    match call {
        Some(c) if c.cached => calls.hits += 1,
        Some(c) => {
            calls.misses += 1;
            *retrieve_ms = Some(retrieve_ms.unwrap_or(0.0) + c.latency_ms.unwrap_or(0.0));
        }
        None => calls.misses += 1,
    }
    trace.latency_ms.retrieve = *retrieve_ms;
    trace.cache.retrieve = Some(calls.misses == 0);
    trace.cache.retrieve_calls = Some(*calls);
}

/// The system's `rerank` stage on `candidates`, behind its cache (keyed by the candidates, so
/// the same list reranked again is a hit); the reply is checked to name only candidates it was
/// given, and its usage recorded in `pipeline`.
#[allow(clippy::too_many_arguments)]
fn rerank_stage(
    system: &SystemSettings,
    case: &Case,
    source: &mut dyn ConnectionSource,
    cache: &CacheReader<'_>,
    candidates: &[Passage],
    pipeline: &mut Pipeline,
    trace: &mut Trace,
    writes: &mut Vec<CacheWrite>,
) -> Result<Vec<Passage>, StageError> {
    let key = rerank_key(system, case, candidates);
    if let Some(r) = cache.get_json::<Vec<Passage>>(layer::RERANK, &key) {
        trace.cache.rerank = Some(true);
        return Ok(r);
    }
    trace.cache.rerank = Some(false);
    let conn = source.ready_connection()?;
    let started = Instant::now();
    let r = {
        let _stage = tracing::debug_span!("stage", stage = "rerank").entered();
        conn.rerank_stage(&case.input, candidates)
    };
    trace.latency_ms.rerank = Some(ms(started));
    let (r, usage) = r?;
    check_subset("rerank", "candidates", &r, candidates.iter())?;
    pipeline.rerank_usage = usage;
    if let Ok(json) = serde_json::to_string(&r) {
        writes.push((layer::RERANK, key, json));
    }
    Ok(r)
}

/// A replayed list that enters the pipeline before its rerank stage (`lane=NAME`: the lane's
/// recorded ranking): reranked by the system's `rerank` stage when it has one (and the
/// intervention does not say `no_rerank`), with no retrieval call. The trace's pipeline
/// records the replayed lane (the intervention's `lane`, when it names one) and the rerank's
/// input; the returned list carries the replayed retrieval's predicates and hops.
#[allow(clippy::too_many_arguments)]
pub(crate) fn rerank_replayed(
    system: &SystemSettings,
    case: &Case,
    source: &mut dyn ConnectionSource,
    cache: &CacheReader<'_>,
    intervention: Option<&Intervention>,
    recorded: &Retrieval,
    trace: &mut Trace,
    writes: &mut Vec<CacheWrite>,
) -> Result<Retrieval, StageError> {
    let question = crate::judged::question_of(case);
    let mut pipeline = Pipeline {
        question: Some(question).filter(|q| !q.is_empty()),
        ..Pipeline::default()
    };
    if let Some(lane) = intervention.and_then(|i| i.lane.as_ref()) {
        pipeline
            .lanes
            .insert(lane.clone(), recorded.candidates.clone());
    }
    let mut retrieval = recorded.clone();
    if system.has_stage("rerank") && !intervention.is_some_and(|i| i.no_rerank) {
        let reranked = rerank_stage(
            system,
            case,
            source,
            cache,
            &recorded.candidates,
            &mut pipeline,
            trace,
            writes,
        )?;
        pipeline.pre_rerank = Some(std::mem::replace(&mut retrieval.candidates, reranked));
    }
    trace.pipeline = Some(Box::new(pipeline));
    Ok(retrieval)
}

/// The `retrieve` calls of one case behind their caches, in order, each reply checked against
/// the lane asked for. The calls the caches do not hold go to the system together
/// ([`SystemConnection::retrieve_batch`]: one request for a worker that declared
/// `retrieve_batch`), unless `prefetched` has them already: the calls' results as the
/// rewrite's request returned them (one per request, in order, ending at the first error). A
/// prefetched call the cache holds after all is served from the cache, and tells `cache` to
/// stop prefetching. The list ends at the first failed call, as the case does.
fn retrieve_calls(
    system: &SystemSettings,
    case: &Case,
    source: &mut dyn ConnectionSource,
    cache: &CacheReader<'_>,
    requests: &[RetrieveRequest<'_>],
    writes: &mut Vec<CacheWrite>,
    prefetched: Option<Vec<Result<TimedRetrieval, StageError>>>,
) -> Vec<Result<LaneRetrieval, StageError>> {
    let record = |request: &RetrieveRequest<'_>,
                  retrieval: Retrieval,
                  cached: bool,
                  latency_ms: Option<f64>| LaneRetrieval {
        lane: request.lane.map(str::to_string),
        query: request.query.map(str::to_string),
        retrieval,
        cached,
        latency_ms,
    };
    let keys: Vec<String> = requests
        .iter()
        .map(|r| lane_retrieval_key(system, case, *r))
        .collect();
    let hits: Vec<Option<Retrieval>> = keys
        .iter()
        .map(|key| cache.get_json::<Retrieval>(layer::RETRIEVE, key))
        .collect();
    // The misses' results, in order: prefetched, or fetched now.
    let mut given = Vec::new();
    let mut first_unfetched = 0;
    if let Some(results) = prefetched {
        first_unfetched = results.len();
        let mut last_was_hit = false;
        for (result, hit) in results.into_iter().zip(&hits) {
            last_was_hit = hit.is_some();
            match hit {
                Some(_) => cache.retrieval_cached_after_rewrite_miss(),
                None => given.push(result),
            }
        }
        // The prefetched list ended at an error of a call the cache holds: the calls after it
        // were not made, and are fetched below as if nothing had been prefetched.
        if !(first_unfetched < requests.len() && last_was_hit) {
            first_unfetched = requests.len();
        }
    }
    let missed: Vec<RetrieveRequest<'_>> = requests[first_unfetched..]
        .iter()
        .zip(&hits[first_unfetched..])
        .filter(|(_, hit)| hit.is_none())
        .map(|(r, _)| *r)
        .collect();
    if !missed.is_empty() {
        let _stage =
            tracing::debug_span!("stage", stage = "retrieve", calls = missed.len()).entered();
        // A failed exchange is the error of the first call it was to make.
        match source
            .ready_connection()
            .and_then(|conn| conn.retrieve_batch(&case.input, system.depth, &missed))
        {
            Ok(more) => given.extend(more),
            Err(e) => given.push(Err(e)),
        }
    }
    let mut fetched = given.into_iter();
    let mut out = Vec::with_capacity(requests.len());
    for ((request, key), hit) in requests.iter().zip(keys).zip(hits) {
        if let Some(r) = hit {
            out.push(Ok(record(request, r, true, None)));
            continue;
        }
        // A shorter list ended at its failed call, which was pushed already.
        let Some(call) = fetched.next() else {
            break;
        };
        let call = call.and_then(|timed| {
            let r = checked_reply(system, *request, timed.retrieval)?;
            if let Ok(json) = serde_json::to_string(&r) {
                writes.push((layer::RETRIEVE, key, json));
            }
            Ok(record(request, r, false, Some(timed.latency_ms)))
        });
        let failed = call.is_err();
        out.push(call);
        if failed {
            break;
        }
    }
    out
}

/// A retrieve reply checked against the request: the lane it names, and its predicates'
/// (and its hops' predicates') shapes.
fn checked_reply(
    system: &SystemSettings,
    request: RetrieveRequest<'_>,
    r: Retrieval,
) -> Result<Retrieval, StageError> {
    if let Some(said) = &r.lane {
        if request.lane != Some(said.as_str()) {
            let declared = if system.lanes.is_empty() {
                "none".to_string()
            } else {
                system.lanes.join(", ")
            };
            return Err(protocol(
                "retrieve",
                format!(
                    "`lane`: the reply is for lane `{said}`, asked for {} (declared lanes: {declared})",
                    request.lane.map_or("no lane".to_string(), |l| format!("`{l}`"))
                ),
            ));
        }
    }
    for (i, hop) in r.hops.iter().enumerate() {
        for f in &hop.filters {
            f.check()
                .map_err(|e| protocol("retrieve", format!("`hops[{i}].filters`: {e}")))?;
        }
    }
    for (i, f) in r.filters.iter().enumerate() {
        f.check()
            .map_err(|e| protocol("retrieve", format!("`filters[{i}]`: {e}")))?;
    }
    Ok(r)
}

/// Checks that every passage of a stage's reply was among the passages it was given (and
/// named once).
fn check_subset<'a>(
    stage: &str,
    field: &str,
    reply: &[Passage],
    given: impl Iterator<Item = &'a Passage>,
) -> Result<(), StageError> {
    let known: HashSet<(String, Option<String>)> = given.map(unit).collect();
    let mut seen = HashSet::new();
    for (i, p) in reply.iter().enumerate() {
        let u = unit(p);
        let name = match &p.chunk_id {
            Some(c) => format!("{} ({c})", p.doc_id),
            None => p.doc_id.clone(),
        };
        if !known.contains(&u) {
            return Err(protocol(
                stage,
                format!("`{field}[{i}]`: {name} was not among the candidates given to {stage}"),
            ));
        }
        if !seen.insert(u) {
            return Err(protocol(
                stage,
                format!("`{field}[{i}]`: {name} is named twice"),
            ));
        }
    }
    Ok(())
}

/// The library's fusion options for the system's `fusion:` (RRF k = 60 by default).
fn fusion_options(
    settings: Option<&FusionSettings>,
    lists: &[LaneRetrieval],
    depth: usize,
) -> FusionOptions {
    let default = FusionSettings::default();
    let s = settings.unwrap_or(&default);
    let method = match s.method {
        FusionMethodName::Rrf | FusionMethodName::System => FusionMethod::Rrf {
            k: s.k.unwrap_or(60.0),
        },
        FusionMethodName::Combsum => FusionMethod::CombSum,
        FusionMethodName::Combmnz => FusionMethod::CombMnz,
        FusionMethodName::Combmax => FusionMethod::CombMax,
        FusionMethodName::Combmin => FusionMethod::CombMin,
        FusionMethodName::Combmed => FusionMethod::CombMed,
        FusionMethodName::Combanz => FusionMethod::CombAnz,
        FusionMethodName::Wsum => FusionMethod::WeightedSum,
        FusionMethodName::Convex => FusionMethod::Convex {
            alpha: s.alpha.unwrap_or(0.5),
        },
    };
    let normalization = match s.norm.unwrap_or_default() {
        FusionNorm::None => Normalization::None,
        FusionNorm::Minmax => Normalization::MinMax,
        FusionNorm::Zscore => Normalization::ZScore,
        FusionNorm::Sum => Normalization::Sum,
        FusionNorm::Max => Normalization::Max,
        FusionNorm::Rank => Normalization::Rank,
    };
    let weights = match &s.weights {
        Some(w) => lists
            .iter()
            .map(|l| {
                l.lane
                    .as_ref()
                    .and_then(|n| w.get(n))
                    .copied()
                    .unwrap_or(1.0)
            })
            .collect(),
        None => Vec::new(),
    };
    FusionOptions {
        method,
        normalization,
        weights,
        depth: Some(depth),
    }
}

/// Host-side fusion of `lists` with the library's [`fuse`]: RRF ranks are each list's own
/// positions (the host never re-orders a list), score-based methods read each candidate's
/// `score` (a candidate without one is an error of the case). Each fused passage is the first
/// occurrence of its unit, its `score` the fused score; at most `depth` are kept.
pub(crate) fn host_fuse(
    system: &SystemSettings,
    lists: &[LaneRetrieval],
    depth: usize,
) -> Result<Vec<Passage>, StageError> {
    let options = fusion_options(system.fusion.as_ref(), lists, depth);
    let rank_based = matches!(options.method, FusionMethod::Rrf { .. })
        || options.normalization == Normalization::Rank;
    // Units keyed by a string the fusion can order (doc id, U+001F, chunk id), made once per
    // candidate and borrowed from here on; the first occurrence of each unit is kept.
    let keys: Vec<Vec<String>> = lists
        .iter()
        .map(|list| {
            list.retrieval
                .candidates
                .iter()
                .map(|p| format!("{}\u{1f}{}", p.doc_id, p.chunk_id.as_deref().unwrap_or("")))
                .collect()
        })
        .collect();
    let mut first: HashMap<&str, &Passage> = HashMap::new();
    let mut inputs: Vec<Vec<Retrieved<&str>>> = Vec::with_capacity(lists.len());
    for (list, keys) in lists.iter().zip(&keys) {
        let mut seen = HashSet::new();
        let mut ranked = Vec::with_capacity(keys.len());
        for (i, (p, key)) in list.retrieval.candidates.iter().zip(keys).enumerate() {
            let key = key.as_str();
            if !seen.insert(key) {
                continue;
            }
            let score = if rank_based {
                -(i as f64)
            } else {
                p.score.ok_or_else(|| {
                    protocol(
                        "fuse",
                        format!(
                            "fusion `{}` reads scores, and candidate {} ({}) of lane {} has no `score`",
                            system
                                .fusion
                                .as_ref()
                                .map_or_else(|| "rrf".into(), FusionSettings::label),
                            i + 1,
                            p.doc_id,
                            list.lane.as_deref().unwrap_or("-")
                        ),
                    )
                })?
            };
            first.entry(key).or_insert(p);
            ranked.push(Retrieved::new(key, score));
        }
        inputs.push(ranked);
    }
    if matches!(options.method, FusionMethod::Convex { .. }) && inputs.len() != 2 {
        return Err(protocol(
            "fuse",
            format!(
                "fusion `convex` combines exactly two lists, and this case has {}",
                inputs.len()
            ),
        ));
    }
    Ok(fuse(&inputs, &options)
        .into_iter()
        .filter_map(|r| {
            first.get(r.doc).map(|p| Passage {
                score: Some(r.score),
                ..(*p).clone()
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(lane: &str, docs: &[&str]) -> LaneRetrieval {
        LaneRetrieval {
            lane: Some(lane.into()),
            query: None,
            retrieval: Retrieval::new(
                None,
                10,
                docs.iter()
                    .map(|d| Passage {
                        doc_id: d.to_string(),
                        chunk_id: None,
                        score: None,
                        text: None,
                        metadata: None,
                    })
                    .collect(),
            ),
            cached: false,
            latency_ms: None,
        }
    }

    fn system() -> SystemSettings {
        SystemSettings {
            name: "s".into(),
            version: "1".into(),
            depth: 10,
            top_k: 2,
            token_budget: None,
            index_version: None,
            params: Default::default(),
            lanes: vec!["dense".into(), "sparse".into()],
            stages: Vec::new(),
            fusion: None,
        }
    }

    /// Seed 000's RRF example, through the host's fusion of two lanes: d3, d2, d1 first, with
    /// d3 = 1/61 + 1/62.
    #[test]
    fn host_fusion_is_the_seed_rrf_in_each_lists_own_order() {
        let dense = list("dense", &["d3", "d7", "d1", "d4", "d2", "d9", "d10"]);
        let sparse = list("sparse", &["d2", "d3", "d8", "d1", "d11", "d4", "d6"]);
        let fused = host_fuse(&system(), &[dense, sparse], 10).unwrap();
        let ids: Vec<&str> = fused.iter().map(|p| p.doc_id.as_str()).collect();
        assert_eq!(&ids[..3], ["d3", "d2", "d1"]);
        assert_eq!(fused[0].score, Some(1.0 / 61.0 + 1.0 / 62.0));
        assert_eq!(fused.len(), 10);
    }

    #[test]
    fn score_fusion_needs_scores_and_convex_needs_two_lists() {
        let mut s = system();
        s.fusion = Some(FusionSettings {
            method: FusionMethodName::Combsum,
            ..FusionSettings::default()
        });
        let err = host_fuse(&s, &[list("dense", &["a"]), list("sparse", &["b"])], 10).unwrap_err();
        assert!(err.message.contains("has no `score`"), "{}", err.message);
        s.fusion = Some(FusionSettings {
            method: FusionMethodName::Convex,
            norm: Some(FusionNorm::Rank),
            ..FusionSettings::default()
        });
        let three = [list("a", &["x"]), list("b", &["y"]), list("c", &["z"])];
        assert!(host_fuse(&s, &three, 10)
            .unwrap_err()
            .message
            .contains("exactly two lists"));
    }

    #[test]
    fn a_reply_naming_an_unknown_or_repeated_candidate_is_a_protocol_error() {
        let given = list("x", &["a", "b"]).retrieval.candidates;
        let reply = list("x", &["b", "c"]).retrieval.candidates;
        let err = check_subset("rerank", "candidates", &reply, given.iter()).unwrap_err();
        assert_eq!(
            err.message,
            "`candidates[1]`: c was not among the candidates given to rerank"
        );
        assert_eq!(err.kind, ErrorKind::Protocol);
        let twice = list("x", &["a", "a"]).retrieval.candidates;
        assert!(check_subset("rerank", "candidates", &twice, given.iter())
            .unwrap_err()
            .message
            .contains("named twice"));
        assert!(check_subset("rerank", "candidates", &given, given.iter()).is_ok());
    }
}
