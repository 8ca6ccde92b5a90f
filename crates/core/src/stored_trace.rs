//! The stored form of a trace: a pipeline's passages written once.
//!
//! A pipeline trace lists the same passages many times: each lane's call, each lane's own
//! ranking, the fused list, the rerank's input. [`stored_json`] writes the trace as
//! [`Trace`]'s own JSON except for [`Trace::pipeline`], where every distinct passage (its
//! `doc_id`, `chunk_id`, `text` and `metadata`) goes once into a `passages` table and each
//! list entry refers to it by index beside its own score:
//!
//! ```json
//! "pipeline": {"passages": [{"doc_id": "d1", "text": "…"}],
//!              "lanes": {"bm25": [{"ref": 0, "score": 3.2}]}, …}
//! ```
//!
//! A pipeline trace is about half as long stored this way (the bench pipeline's: 9.1 KB as
//! [`Trace`]'s JSON, 5.1 KB stored); one whose lists share no passage is a few bytes longer
//! per entry. Hops keep their passages whole, and so do the trace's final retrieval and its
//! context, as in every other form.
//!
//! Reading needs nothing special: [`Pipeline`]'s `Deserialize` reads both forms (a list entry
//! with `ref` is resolved against the table; one without is a whole passage), so a stored
//! trace, an execution cache entry and a `trace` dataset written by hand all parse as
//! [`Trace`]. Everything that writes a trace for people or other tools (exports, `--json`,
//! reports) writes the whole form.

use std::collections::BTreeMap;

use foldhash::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::passage::{Passage, Retrieval};
use crate::pipeline::{Fused, Hop, LaneRetrieval, Pipeline, Rewrite, Usage};
use crate::trace::Trace;

/// `trace` as the store keeps it: [`Trace`]'s JSON with its pipeline's passages written once
/// (see the module documentation). Reads back as `trace` with `serde_json::from_str`.
pub fn stored_json(trace: &Trace) -> serde_json::Result<String> {
    // Every field named, none elided: a field added to `Trace` is a compile error here
    // until it is stored too.
    let Trace {
        schema_version,
        case_id,
        retrieval,
        pipeline,
        context,
        generation,
        error,
        latency_ms,
        cache,
        stderr,
        intervention,
        claims,
        filter_check,
        output_tokens,
        production,
    } = trace;
    // Room for a typical pipeline trace at once (a few KB), instead of growing from 128 bytes.
    let mut out = Vec::with_capacity(4096);
    serde_json::to_writer(
        &mut out,
        &StoredTrace {
            schema_version,
            case_id,
            retrieval: retrieval.as_ref(),
            pipeline: pipeline.as_deref().map(CompactPipeline::of),
            context: context.as_ref(),
            generation: generation.as_ref(),
            error: error.as_ref(),
            latency_ms,
            cache,
            stderr,
            intervention: intervention.as_deref(),
            claims: claims.as_ref(),
            filter_check: filter_check.as_ref(),
            output_tokens: output_tokens.as_ref(),
            production: production.as_deref(),
        },
    )?;
    // serde_json writes UTF-8 only: the error is never met.
    String::from_utf8(out).map_err(serde::ser::Error::custom)
}

/// [`Trace`]'s fields, borrowed, serialised as `Trace` serialises them but for the pipeline.
#[derive(Serialize)]
struct StoredTrace<'a> {
    schema_version: &'a u32,
    case_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    retrieval: Option<&'a Retrieval>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pipeline: Option<CompactPipeline<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    context: Option<&'a crate::context::Context>,
    #[serde(skip_serializing_if = "Option::is_none")]
    generation: Option<&'a Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a crate::trace::StageError>,
    latency_ms: &'a crate::trace::StageLatency,
    cache: &'a crate::trace::CacheUse,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stderr: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    intervention: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    claims: Option<&'a Vec<crate::trace::ClaimAnnotation>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    filter_check: Option<&'a crate::pipeline::FilterCheck>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_tokens: Option<&'a crate::trace::OutputTokens>,
    #[serde(skip_serializing_if = "Option::is_none")]
    production: Option<&'a crate::production::Production>,
}

/// What list entries share: a passage without its score.
#[derive(Serialize)]
struct SharedPassage<'a> {
    doc_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    chunk_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a Map<String, Value>>,
}

/// A list entry: the index of its passage in the table, and its own score.
#[derive(Serialize)]
struct Entry {
    #[serde(rename = "ref")]
    reference: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    score: Option<f64>,
}

/// What tells passages apart before their metadata: `(doc_id, chunk_id, text)`.
type PassageKey<'a> = (&'a str, Option<&'a str>, Option<&'a str>);

/// The distinct passages of one pipeline, in the order first met, and each one's index.
#[derive(Default)]
struct Table<'a> {
    passages: Vec<SharedPassage<'a>>,
    /// By `(doc_id, chunk_id, text)`: the indexes of the passages with those (their metadata
    /// told apart by comparison).
    index: HashMap<PassageKey<'a>, Vec<usize>>,
}

impl<'a> Table<'a> {
    /// The entry of `p`, its shared part added to the table when new.
    fn entry(&mut self, p: &'a Passage) -> Entry {
        let key = (p.doc_id.as_str(), p.chunk_id.as_deref(), p.text.as_deref());
        let same = self.index.entry(key).or_default();
        let found = same
            .iter()
            .copied()
            .find(|&i| self.passages[i].metadata == p.metadata.as_ref());
        let reference = found.unwrap_or_else(|| {
            let i = self.passages.len();
            self.passages.push(SharedPassage {
                doc_id: &p.doc_id,
                chunk_id: p.chunk_id.as_deref(),
                text: p.text.as_deref(),
                metadata: p.metadata.as_ref(),
            });
            same.push(i);
            i
        });
        Entry {
            reference,
            score: p.score,
        }
    }

    fn entries(&mut self, list: &'a [Passage]) -> Vec<Entry> {
        list.iter().map(|p| self.entry(p)).collect()
    }
}

/// [`Pipeline`] with its lists as [`Entry`]s into `passages`.
#[derive(Serialize)]
struct CompactPipeline<'a> {
    passages: Vec<SharedPassage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    question: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rewrite: Option<&'a Rewrite>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    retrievals: Vec<CompactLane<'a>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    lanes: BTreeMap<&'a str, Vec<Entry>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fused: Option<CompactFused<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pre_rerank: Option<Vec<Entry>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rerank_usage: Option<&'a Usage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw_query: Option<CompactRetrieval<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    raw_query_lanes: Vec<CompactLane<'a>>,
}

impl<'a> CompactPipeline<'a> {
    fn of(pipeline: &'a Pipeline) -> Self {
        let Pipeline {
            question,
            rewrite,
            retrievals,
            lanes,
            fused,
            pre_rerank,
            rerank_usage,
            raw_query,
            raw_query_lanes,
        } = pipeline;
        let mut table = Table::default();
        let retrievals = retrievals
            .iter()
            .map(|r| CompactLane::of(r, &mut table))
            .collect();
        let lanes = lanes
            .iter()
            .map(|(lane, list)| (lane.as_str(), table.entries(list)))
            .collect();
        let fused = fused.as_ref().map(|f| {
            let Fused { method, candidates } = f;
            CompactFused {
                method,
                candidates: table.entries(candidates),
            }
        });
        let pre_rerank = pre_rerank.as_deref().map(|l| table.entries(l));
        let raw_query = raw_query
            .as_ref()
            .map(|r| CompactRetrieval::of(r, &mut table));
        let raw_query_lanes = raw_query_lanes
            .iter()
            .map(|r| CompactLane::of(r, &mut table))
            .collect();
        CompactPipeline {
            passages: table.passages,
            question: question.as_deref(),
            rewrite: rewrite.as_ref(),
            retrievals,
            lanes,
            fused,
            pre_rerank,
            rerank_usage: rerank_usage.as_ref(),
            raw_query,
            raw_query_lanes,
        }
    }
}

/// [`LaneRetrieval`] with its candidates as entries.
#[derive(Serialize)]
struct CompactLane<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    lane: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    query: Option<&'a str>,
    retrieval: CompactRetrieval<'a>,
    cached: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_ms: Option<f64>,
}

impl<'a> CompactLane<'a> {
    fn of(r: &'a LaneRetrieval, table: &mut Table<'a>) -> Self {
        let LaneRetrieval {
            lane,
            query,
            retrieval,
            cached,
            latency_ms,
        } = r;
        CompactLane {
            lane: lane.as_deref(),
            query: query.as_deref(),
            retrieval: CompactRetrieval::of(retrieval, table),
            cached: *cached,
            latency_ms: *latency_ms,
        }
    }
}

/// [`Retrieval`] with its candidates as entries (its hops whole).
#[derive(Serialize)]
struct CompactRetrieval<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    query: Option<&'a str>,
    depth: usize,
    candidates: Vec<Entry>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    filters: &'a [crate::pipeline::Filter],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    hops: &'a [Hop],
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<&'a Usage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lane: Option<&'a str>,
}

impl<'a> CompactRetrieval<'a> {
    fn of(r: &'a Retrieval, table: &mut Table<'a>) -> Self {
        let Retrieval {
            query,
            depth,
            candidates,
            filters,
            hops,
            usage,
            lane,
        } = r;
        CompactRetrieval {
            query: query.as_deref(),
            depth: *depth,
            candidates: table.entries(candidates),
            filters,
            hops,
            usage: usage.as_ref(),
            lane: lane.as_deref(),
        }
    }
}

/// [`Fused`] with its candidates as entries.
#[derive(Serialize)]
struct CompactFused<'a> {
    method: &'a str,
    candidates: Vec<Entry>,
}

// --- reading: both forms ------------------------------------------------------------------------

/// A list entry as read: `{"ref": i, "score": s}` against the table, or a whole passage.
#[derive(Deserialize)]
pub(crate) struct EntryWire {
    #[serde(default, rename = "ref")]
    reference: Option<usize>,
    #[serde(default)]
    doc_id: Option<String>,
    #[serde(default)]
    chunk_id: Option<String>,
    #[serde(default)]
    score: Option<f64>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

/// The passages table of a stored pipeline, resolving its entries.
struct Resolver<'t> {
    table: &'t [Passage],
}

impl Resolver<'_> {
    fn passage(&self, e: EntryWire) -> Result<Passage, String> {
        // A `ref` means something only beside a table: without one, the entry is a whole
        // passage (a hand-written trace whose passages carry a `ref` field of their own).
        if let (Some(i), false) = (e.reference, self.table.is_empty()) {
            let shared = self.table.get(i).ok_or_else(|| {
                format!(
                    "passage reference {i} is out of range: the pipeline's `passages` table has {} entries",
                    self.table.len()
                )
            })?;
            return Ok(Passage {
                score: e.score,
                ..shared.clone()
            });
        }
        Ok(Passage {
            doc_id: e.doc_id.ok_or("missing field `doc_id`")?,
            chunk_id: e.chunk_id,
            score: e.score,
            text: e.text,
            metadata: e.metadata,
        })
    }

    fn list(&self, list: Vec<EntryWire>) -> Result<Vec<Passage>, String> {
        list.into_iter().map(|e| self.passage(e)).collect()
    }

    fn retrieval(&self, r: RetrievalWire) -> Result<Retrieval, String> {
        Ok(Retrieval {
            query: r.query,
            depth: r.depth,
            candidates: self.list(r.candidates)?,
            filters: r.filters,
            hops: r.hops,
            usage: r.usage,
            lane: r.lane,
        })
    }

    fn lane(&self, r: LaneWire) -> Result<LaneRetrieval, String> {
        Ok(LaneRetrieval {
            lane: r.lane,
            query: r.query,
            retrieval: self.retrieval(r.retrieval)?,
            cached: r.cached,
            latency_ms: r.latency_ms,
        })
    }
}

/// [`Pipeline`] as read, in either form.
#[derive(Deserialize)]
pub(crate) struct PipelineWire {
    #[serde(default)]
    passages: Vec<Passage>,
    #[serde(default)]
    question: Option<String>,
    #[serde(default)]
    rewrite: Option<Rewrite>,
    #[serde(default)]
    retrievals: Vec<LaneWire>,
    #[serde(default)]
    lanes: BTreeMap<String, Vec<EntryWire>>,
    #[serde(default)]
    fused: Option<FusedWire>,
    #[serde(default)]
    pre_rerank: Option<Vec<EntryWire>>,
    #[serde(default)]
    rerank_usage: Option<Usage>,
    #[serde(default)]
    raw_query: Option<RetrievalWire>,
    #[serde(default)]
    raw_query_lanes: Vec<LaneWire>,
}

#[derive(Deserialize)]
struct LaneWire {
    #[serde(default)]
    lane: Option<String>,
    #[serde(default)]
    query: Option<String>,
    retrieval: RetrievalWire,
    #[serde(default)]
    cached: bool,
    #[serde(default)]
    latency_ms: Option<f64>,
}

#[derive(Deserialize)]
struct RetrievalWire {
    #[serde(default)]
    query: Option<String>,
    depth: usize,
    candidates: Vec<EntryWire>,
    #[serde(default)]
    filters: Vec<crate::pipeline::Filter>,
    #[serde(default)]
    hops: Vec<Hop>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    lane: Option<String>,
}

#[derive(Deserialize)]
struct FusedWire {
    method: String,
    candidates: Vec<EntryWire>,
}

impl TryFrom<PipelineWire> for Pipeline {
    type Error = String;

    fn try_from(w: PipelineWire) -> Result<Self, String> {
        let r = Resolver { table: &w.passages };
        Ok(Pipeline {
            question: w.question,
            rewrite: w.rewrite,
            retrievals: w
                .retrievals
                .into_iter()
                .map(|l| r.lane(l))
                .collect::<Result<_, _>>()?,
            lanes: w
                .lanes
                .into_iter()
                .map(|(lane, list)| Ok((lane, r.list(list)?)))
                .collect::<Result<_, String>>()?,
            fused: w
                .fused
                .map(|f| {
                    Ok::<_, String>(Fused {
                        method: f.method,
                        candidates: r.list(f.candidates)?,
                    })
                })
                .transpose()?,
            pre_rerank: w.pre_rerank.map(|l| r.list(l)).transpose()?,
            rerank_usage: w.rerank_usage,
            raw_query: w.raw_query.map(|q| r.retrieval(q)).transpose()?,
            raw_query_lanes: w
                .raw_query_lanes
                .into_iter()
                .map(|l| r.lane(l))
                .collect::<Result<_, _>>()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{Filter, FilterOp};
    use serde_json::json;

    fn passage(doc: &str, score: Option<f64>, text: Option<&str>) -> Passage {
        Passage {
            doc_id: doc.into(),
            chunk_id: None,
            score,
            text: text.map(str::to_string),
            metadata: None,
        }
    }

    /// A small deterministic generator (a 64-bit LCG): no dependency for a test.
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }
    }

    /// A passage drawn from a small pool, so that lists share passages, with variants that
    /// must stay apart: the same document with another text, chunk or metadata.
    fn drawn(g: &mut Lcg) -> Passage {
        let doc = g.next(6);
        let mut p = passage(&format!("d{doc}"), None, Some(&format!("text of d{doc}")));
        match g.next(8) {
            0 => p.text = Some(format!("another text of d{doc}")),
            1 => p.chunk_id = Some(format!("c{}", g.next(2))),
            2 => {
                p.metadata = Some(
                    json!({"tenant": format!("t{}", g.next(2))})
                        .as_object()
                        .unwrap()
                        .clone(),
                )
            }
            3 => p.text = None,
            _ => {}
        }
        p.score = match g.next(4) {
            0 => None,
            1 => Some(-0.0),
            _ => Some(g.next(1000) as f64 / 7.0),
        };
        p
    }

    fn list(g: &mut Lcg) -> Vec<Passage> {
        (0..g.next(7)).map(|_| drawn(g)).collect()
    }

    fn retrieval(g: &mut Lcg) -> Retrieval {
        let mut r = Retrieval::new(Some(format!("q{}", g.next(3))), 6, list(g));
        if g.next(3) == 0 {
            r.filters = vec![Filter {
                field: "tenant".into(),
                op: FilterOp::Eq,
                value: json!("acme"),
            }];
        }
        if g.next(3) == 0 {
            r.hops = vec![Hop {
                query: Some("hop".into()),
                candidates: list(g),
                filters: Vec::new(),
            }];
        }
        if g.next(2) == 0 {
            r.lane = Some("bm25".into());
            r.usage = Some(Usage {
                model: Some("m".into()),
                input_tokens: Some(3),
                output_tokens: None,
            });
        }
        r
    }

    fn lane_call(g: &mut Lcg) -> LaneRetrieval {
        LaneRetrieval {
            lane: ["bm25", "dense"]
                .get(g.next(3) as usize)
                .map(|s| s.to_string()),
            query: Some("q".into()),
            retrieval: retrieval(g),
            cached: g.next(2) == 0,
            latency_ms: (g.next(2) == 0).then_some(1.25),
        }
    }

    fn pipeline(g: &mut Lcg) -> Pipeline {
        Pipeline {
            question: Some("what?".into()),
            rewrite: Some(Rewrite {
                queries: vec!["a".into(), "b".into()],
                usage: None,
            }),
            retrievals: (0..g.next(5)).map(|_| lane_call(g)).collect(),
            lanes: (0..g.next(3))
                .map(|i| (format!("lane{i}"), list(g)))
                .collect(),
            fused: (g.next(2) == 0).then(|| Fused {
                method: "rrf k=60".into(),
                candidates: list(g),
            }),
            pre_rerank: (g.next(2) == 0).then(|| list(g)),
            rerank_usage: None,
            raw_query: (g.next(3) == 0).then(|| retrieval(g)),
            raw_query_lanes: (0..g.next(3)).map(|_| lane_call(g)).collect(),
        }
    }

    fn trace_with(pipeline: Option<Pipeline>) -> Trace {
        let mut t = Trace::new("case-1");
        t.retrieval = Some(Retrieval::new(
            None,
            6,
            vec![passage("d1", Some(2.0), Some("text of d1"))],
        ));
        t.pipeline = pipeline.map(Box::new);
        t.generation = Some(json!({"answer": "14 days"}).as_object().unwrap().clone());
        t.latency_ms.retrieve = Some(3.5);
        t.intervention = Some("no-rerank".into());
        t
    }

    #[test]
    fn stored_traces_read_back_as_the_trace() {
        let mut g = Lcg(7);
        for _ in 0..500 {
            let trace = trace_with(Some(pipeline(&mut g)));
            let stored = stored_json(&trace).unwrap();
            let back: Trace = serde_json::from_str(&stored).unwrap();
            assert_eq!(back, trace, "{stored}");
            // The whole form still reads as before.
            let whole = serde_json::to_string(&trace).unwrap();
            assert_eq!(serde_json::from_str::<Trace>(&whole).unwrap(), trace);
        }
    }

    #[test]
    fn each_passage_is_written_once() {
        let shared = passage("d1", None, Some("a long passage text"));
        let scored = |s: f64| Passage {
            score: Some(s),
            ..shared.clone()
        };
        let p = Pipeline {
            lanes: [
                ("bm25".to_string(), vec![scored(3.0)]),
                ("dense".to_string(), vec![scored(0.5)]),
            ]
            .into(),
            pre_rerank: Some(vec![scored(0.1)]),
            ..Pipeline::default()
        };
        let stored = stored_json(&trace_with(Some(p))).unwrap();
        let v: Value = serde_json::from_str(&stored).unwrap();
        assert_eq!(stored.matches("a long passage text").count(), 1, "{stored}");
        assert_eq!(
            v["pipeline"]["passages"],
            json!([{"doc_id": "d1", "text": "a long passage text"}])
        );
        assert_eq!(
            v["pipeline"]["lanes"]["dense"],
            json!([{"ref": 0, "score": 0.5}])
        );
        assert_eq!(
            v["pipeline"]["pre_rerank"],
            json!([{"ref": 0, "score": 0.1}])
        );
    }

    #[test]
    fn a_trace_without_pipeline_is_stored_as_its_json() {
        let trace = trace_with(None);
        assert_eq!(
            stored_json(&trace).unwrap(),
            serde_json::to_string(&trace).unwrap()
        );
    }

    #[test]
    fn a_reference_out_of_the_table_is_an_error() {
        let bad = json!({"passages": [{"doc_id": "d1"}], "pre_rerank": [{"ref": 1}]});
        let e = serde_json::from_value::<Pipeline>(bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains("passage reference 1 is out of range"), "{e}");
        // Without a table an entry is a whole passage, which needs its doc_id.
        let whole = json!({"pre_rerank": [{"ref": 0, "text": "t"}]});
        let e = serde_json::from_value::<Pipeline>(whole)
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing field `doc_id`"), "{e}");
        let ok = json!({"pre_rerank": [{"ref": 0, "doc_id": "d9"}]});
        let p: Pipeline = serde_json::from_value(ok).unwrap();
        assert_eq!(p.pre_rerank.unwrap()[0].doc_id, "d9");
    }
}
