//! Spans to trace records: grouped by trace id, each tree rebuilt from parent ids, one record
//! per trace in the `trace` dataset format of [`oloproof_core::dataset`] (what `oloproof run
//! --dataset` reads), with its `production` key.
//!
//! What a record holds, and where from ([`crate::conventions`] names the attributes):
//! - `id`: the trace id; `input`: the root span's `input.value` (`{"question": text}`, or the
//!   JSON object itself with `input.mime_type = application/json`), else the root's last user
//!   input message (an `invoke_agent` root);
//! - `answer`: the root's `output.value` (text, or a JSON object's `answer` / `output` /
//!   `response`) or output messages, else the last output message of the generating call;
//! - `pipeline.retrievals`: every retrieval span in start order, its documents ranked by their
//!   index (OpenInference) or list order (GenAI); `pipeline.question` and `pipeline.rewrite`
//!   (the retrieval queries that differ from the question, with the usage of the model calls
//!   that ended before the first retrieval); `pipeline.pre_rerank`: the reranker's input;
//! - `retrieval`: the final candidates — the reranker's output, or the one retrieval's list
//!   (with several retrievals and no reranker the final list was not recorded: the spans do
//!   not say how they were merged). The context given to the generator is that list (the
//!   reader's rule for a record without `context`);
//! - `usage` and `ttft_ms`: the generating call (the last model call that is not a rewrite);
//! - `latency_ms`: per stage, from the first start to the last end of its spans (`rewrite`,
//!   `retrieve`, `rerank`, `generate`), `total` the root span's duration;
//! - `metadata`: segments from the spans' `metadata`, `session.id`, `user.id`, `tag.tags` (the
//!   root's win);
//! - `production`: trace id, timestamp (the root's start, RFC 3339 UTC), source, feedback
//!   (`gen_ai.evaluation.result` events and a reader's own), the first span to end in error
//!   (its stage, message and id), and
//!   `not_recorded`: every field the spans did not carry (`input`, `answer`, `retrieval`,
//!   `retrieval.text`, `context`, `context.text`, `citations`, `usage`, `ttft_ms`,
//!   `pipeline.pre_rerank`, `pipeline.rewrite`, `latency_ms.<stage>`, `timestamp`) — never a
//!   guess or an empty string in its place.
//!
//! Passage text missing from spans (content capture is opt-in) is taken from the corpus by
//! document id when one is given ([`oloproof_core::corpus::Corpus::texts`]).
//!
//! Events from OTLP log records ([`Decoded::log_events`], the GenAI instrumentations' message
//! content) wait by trace id and join their span's events when the trace is written
//! ([`crate::otlp::logs`]); those whose trace or span never comes are counted, by reason.
//!
//! **Streaming.** [`Assembler::push`] takes what a reader decoded, line by line, and returns
//! the records it can already write: a trace is written once its root span is in, every
//! parent it names is in, and [`AssembleOptions::grace_spans`] more spans have been read
//! (children end, and are exported, before their parents, so this is rarely needed; it covers
//! batches flushed out of order). Memory holds the traces in that window, not the file, and
//! 16 bytes per OTLP trace written (its id, to know a late span). A span arriving for a trace
//! already written is dropped as `late_span`. [`Assembler::finish`] writes what is left.
//! [`Assembler::push_batch`] takes many reader outputs at once and builds their records on
//! every core, with the same records, order and accounting as `push` one at a time. A record
//! comes out as its JSON Lines line ([`RecordLine`]), written straight from the spans (no
//! `serde_json::Value` tree in between; the bytes are what `serde_json` writes for the same
//! value).
//!
//! Problems (each counted; `missing_parent`, `extra_root` and `end_before_start` keep the
//! span; `duplicate_span_id` and `late_span` drop it): a span whose parent is not in the
//! input is kept under the root; a second span with the same id is dropped; a span that ends
//! before it starts is kept with its latency unknown.

use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, VecDeque};

// foldhash: these maps are keyed by trace and span ids, hashed for every span read; std's
// SipHash was ~4 % of an import. foldhash is seeded per process, as std's hasher is.
use foldhash::{HashMap, HashMapExt, HashSet};

use oloproof_core::corpus::Corpus;
use oloproof_core::production::{Feedback, Production, ProductionError};
use serde_json::{json, Map, Value};

use crate::conventions::{self, Document, IoValue, Notes, Role};
use crate::json_out::{write_json, Array, Object};
use crate::problems::{ImportSummary, Problem};
use crate::span::{Decoded, LogEvent, Span, TraceFeedback};

/// How records are assembled.
#[derive(Debug, Clone)]
pub struct AssembleOptions {
    /// `production.source` of every record (`otlp`, `phoenix`, `langfuse`, `collect`).
    pub source: String,
    /// Spans read after a trace is complete before it is written (default 20,000).
    pub grace_spans: u64,
}

impl Default for AssembleOptions {
    fn default() -> Self {
        AssembleOptions {
            source: "otlp".into(),
            grace_spans: 20_000,
        }
    }
}

#[derive(Default)]
struct Pending {
    spans: Vec<Span>,
    /// The span count at which the trace was last seen complete.
    complete_at: Option<u64>,
    /// The last [`Assembler::step`] that added a span to it (the steps are numbered from 1).
    touched_in: u64,
}

/// Groups spans into traces and writes one record per trace (see the module doc).
pub struct Assembler<'c> {
    options: AssembleOptions,
    corpus: Option<&'c Corpus>,
    pending: HashMap<String, Pending>,
    /// Traces in the order they were first seen, pruned from the front as they are written
    /// ([`Assembler::finish`] writes what is left in that order).
    arrival: VecDeque<String>,
    ready: VecDeque<(String, u64)>,
    written: WrittenIds,
    feedback: HashMap<String, Vec<Feedback>>,
    /// Events from OTLP log records, by trace id, waiting for their trace to be written.
    log_events: HashMap<String, Vec<LogEvent>>,
    seen: u64,
    /// Reader outputs taken so far ([`Assembler::step`]s).
    steps: u64,
    summary: ImportSummary,
}

impl<'c> Assembler<'c> {
    /// An assembler resolving missing passage text from `corpus` when given.
    pub fn new(options: AssembleOptions, corpus: Option<&'c Corpus>) -> Self {
        Assembler {
            options,
            corpus,
            pending: HashMap::new(),
            arrival: VecDeque::new(),
            ready: VecDeque::new(),
            written: WrittenIds::default(),
            feedback: HashMap::new(),
            log_events: HashMap::new(),
            seen: 0,
            steps: 0,
            summary: ImportSummary::default(),
        }
    }

    /// Takes one reader's output; returns the records that are complete.
    pub fn push(&mut self, decoded: Decoded) -> Vec<RecordLine> {
        let (before, taken) = self.step(decoded);
        self.summary.merge(before);
        let mut out = Vec::with_capacity(taken.len());
        for t in taken {
            let (record, summary) = t.build(self.corpus, &self.options.source);
            self.summary.merge(summary);
            out.push(record);
        }
        out
    }

    /// [`Assembler::push`] of each reader output of `batch` in turn, the records built on
    /// every core (rayon's pool): the same records in the same order, and the same accounting
    /// (each record's problems counted, and located, where `push` would have).
    pub fn push_batch(&mut self, batch: Vec<Decoded>) -> Vec<RecordLine> {
        let mut steps = Vec::with_capacity(batch.len());
        let mut taken = Vec::new();
        for decoded in batch {
            let (before, t) = self.step(decoded);
            steps.push((before, t.len()));
            taken.extend(t);
        }
        self.build_all(steps, taken)
    }

    /// Writes every trace left (incomplete ones too, their problems counted) and returns the
    /// records with the import's accounting.
    pub fn finish(mut self) -> (Vec<RecordLine>, ImportSummary) {
        let ids: Vec<String> = self
            .arrival
            .iter()
            .filter(|id| self.pending.contains_key(*id))
            .cloned()
            .collect();
        let taken: Vec<Taken> = ids.iter().filter_map(|id| self.take(id)).collect();
        let steps = vec![(ImportSummary::default(), taken.len())];
        let out = self.build_all(steps, taken);
        // Log records whose trace never came.
        for events in std::mem::take(&mut self.log_events).into_values() {
            for _ in events {
                crate::otlp::logs::skip(
                    &mut self.summary,
                    crate::otlp::logs::skipped::TRACE_NOT_IMPORTED,
                );
            }
        }
        (out, self.summary)
    }

    /// The accounting so far.
    pub fn summary(&self) -> &ImportSummary {
        &self.summary
    }

    /// What one reader output changes: its spans routed to their traces, the late ones
    /// dropped, and the traces whose grace window is over taken out. Returns the accounting
    /// to add before those traces' own (the reader's, and the late spans) and the traces.
    fn step(&mut self, decoded: Decoded) -> (ImportSummary, Vec<Taken>) {
        let mut before = decoded.summary;
        for TraceFeedback {
            trace_id, feedback, ..
        } in decoded.feedback
        {
            self.feedback.entry(trace_id).or_default().push(feedback);
        }
        for event in decoded.log_events {
            if self.written.contains(&event.trace_id) {
                crate::otlp::logs::skip(&mut before, crate::otlp::logs::skipped::AFTER_ITS_TRACE);
                continue;
            }
            self.log_events
                .entry(event.trace_id.clone())
                .or_default()
                .push(event);
        }
        self.steps += 1;
        let mut touched: Vec<String> = Vec::new();
        for span in decoded.spans {
            self.seen += 1;
            if self.written.contains(&span.trace_id) {
                before.drop_span(Problem {
                    kind: "late_span".into(),
                    at: span.at.clone(),
                    message: format!(
                        "span `{}` of trace {} arrived after the trace was written ({} spans after it was complete); it is dropped — import the trace's spans closer together",
                        span.name, span.trace_id, self.options.grace_spans
                    ),
                });
                continue;
            }
            let pending = match self.pending.get_mut(&span.trace_id) {
                Some(p) => p,
                None => {
                    self.arrival.push_back(span.trace_id.clone());
                    self.pending.entry(span.trace_id.clone()).or_default()
                }
            };
            if pending.touched_in != self.steps {
                pending.touched_in = self.steps;
                touched.push(span.trace_id.clone());
            }
            pending.spans.push(span);
        }
        for id in touched {
            if let Some(p) = self.pending.get_mut(&id) {
                if complete(&p.spans) {
                    p.complete_at = Some(self.seen);
                    self.ready.push_back((id, self.seen));
                } else {
                    p.complete_at = None;
                }
            }
        }
        let mut out = Vec::new();
        while let Some((_, at)) = self.ready.front() {
            if self.seen - at < self.options.grace_spans {
                break;
            }
            let (id, at) = self.ready.pop_front().unwrap_or_default();
            let still = self
                .pending
                .get(&id)
                .is_some_and(|p| p.complete_at == Some(at));
            if still {
                out.extend(self.take(&id));
            }
        }
        (before, out)
    }

    /// Builds `taken`'s records on every core; `steps` says, in order, the accounting to add
    /// and then how many of the records follow it.
    fn build_all(
        &mut self,
        steps: Vec<(ImportSummary, usize)>,
        taken: Vec<Taken>,
    ) -> Vec<RecordLine> {
        use rayon::prelude::*;
        let (corpus, source) = (self.corpus, self.options.source.as_str());
        let built: Vec<(RecordLine, ImportSummary)> = taken
            .into_par_iter()
            .with_min_len(4)
            .map(|t| t.build(corpus, source))
            .collect();
        let mut built = built.into_iter();
        let mut out = Vec::with_capacity(built.len());
        for (before, n) in steps {
            self.summary.merge(before);
            for (record, summary) in built.by_ref().take(n) {
                self.summary.merge(summary);
                out.push(record);
            }
        }
        out
    }

    /// Takes a trace out to be written: it is no longer pending, and a span of it arriving
    /// later is late.
    fn take(&mut self, id: &str) -> Option<Taken> {
        let pending = self.pending.remove(id)?;
        while self
            .arrival
            .front()
            .is_some_and(|a| !self.pending.contains_key(a))
        {
            self.arrival.pop_front();
        }
        self.written.insert(id);
        let feedback = self.feedback.remove(id).unwrap_or_default();
        // Most imports have no logs: no lookup per trace then.
        let log_events = match self.log_events.is_empty() {
            true => Vec::new(),
            false => self.log_events.remove(id).unwrap_or_default(),
        };
        Some(Taken {
            id: id.to_string(),
            spans: pending.spans,
            feedback,
            log_events,
        })
    }
}

/// A trace taken out of the assembler, its record not built yet.
struct Taken {
    id: String,
    spans: Vec<Span>,
    feedback: Vec<Feedback>,
    log_events: Vec<LogEvent>,
}

impl Taken {
    /// The record, and the accounting of its spans and problems.
    fn build(mut self, corpus: Option<&Corpus>, source: &str) -> (RecordLine, ImportSummary) {
        let mut summary = ImportSummary::default();
        crate::otlp::logs::attach(&mut self.spans, self.log_events, &mut summary);
        let record = build(
            &self.id,
            self.spans,
            self.feedback,
            corpus,
            source,
            &mut summary,
        );
        (record, summary)
    }
}

/// The ids of the traces written, all that detecting a late span needs once a trace's spans
/// are gone: OTLP's 32 lower-case hex digits as the 16 bytes they stand for (the set grows by
/// about 16 bytes a trace, not by the id's `String`), other sources' ids as text.
#[derive(Default)]
struct WrittenIds {
    hex: HashSet<u128>,
    other: HashSet<String>,
}

impl WrittenIds {
    /// The 128-bit value of a 32-digit lower-case hex id (upper case is another id: kept as
    /// text, so two spellings never meet).
    fn as_u128(id: &str) -> Option<u128> {
        if id.len() != 32 {
            return None;
        }
        let mut n: u128 = 0;
        for b in id.bytes() {
            let digit = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' => b - b'a' + 10,
                _ => return None,
            };
            n = (n << 4) | u128::from(digit);
        }
        Some(n)
    }

    fn insert(&mut self, id: &str) {
        match Self::as_u128(id) {
            Some(n) => self.hex.insert(n),
            None => self.other.insert(id.to_string()),
        };
    }

    fn contains(&self, id: &str) -> bool {
        match Self::as_u128(id) {
            Some(n) => self.hex.contains(&n),
            None => self.other.contains(id),
        }
    }
}

/// A root is in and every parent named is in.
fn complete(spans: &[Span]) -> bool {
    let ids: HashSet<&str> = spans.iter().map(|s| s.span_id.as_str()).collect();
    spans.iter().any(|s| s.parent_span_id.is_none())
        && spans
            .iter()
            .all(|s| s.parent_span_id.as_deref().is_none_or(|p| ids.contains(p)))
}

/// One trace's record (see the module doc). Spans dropped or kept with a problem are counted
/// in `summary`.
fn build(
    trace_id: &str,
    spans: Vec<Span>,
    external_feedback: Vec<Feedback>,
    corpus: Option<&Corpus>,
    source: &str,
    summary: &mut ImportSummary,
) -> RecordLine {
    // Duplicates: the first span with an id is kept.
    let mut first_of: HashMap<&str, usize> = HashMap::with_capacity(spans.len());
    let mut duplicates: Vec<(usize, usize)> = Vec::new();
    for (i, span) in spans.iter().enumerate() {
        match first_of.entry(span.span_id.as_str()) {
            Entry::Occupied(first) => duplicates.push((i, *first.get())),
            Entry::Vacant(slot) => {
                slot.insert(i);
            }
        }
    }
    drop(first_of);
    let mut kept: Vec<Span> = if duplicates.is_empty() {
        spans
    } else {
        for &(i, first) in &duplicates {
            let (span, first) = (&spans[i], &spans[first]);
            summary.drop_span(Problem {
                kind: "duplicate_span_id".into(),
                at: span.at.clone(),
                message: format!(
                    "span id {} appears twice in trace {trace_id} (first at {}); the second (`{}`) is dropped",
                    span.span_id, first.at, span.name
                ),
            });
        }
        let mut dropped = duplicates.iter().map(|&(i, _)| i).peekable();
        spans
            .into_iter()
            .enumerate()
            .filter(|(i, _)| dropped.next_if_eq(i).is_none())
            .map(|(_, s)| s)
            .collect()
    };
    for s in &kept {
        if let (Some(start), Some(end)) = (s.start_unix_nano, s.end_unix_nano) {
            if end < start {
                summary.note(Problem {
                    kind: "end_before_start".into(),
                    at: s.at.clone(),
                    message: format!(
                        "span `{}` ({}) ends {} ms before it starts; kept, its latency unknown",
                        s.name,
                        s.span_id,
                        (start - end) as f64 / 1e6
                    ),
                });
            }
        }
    }
    // Time order (input order among equal or unknown starts).
    kept.sort_by_key(|s| s.start_unix_nano.unwrap_or(u64::MAX));
    let ids: HashSet<&str> = kept.iter().map(|s| s.span_id.as_str()).collect();
    let root_index = kept
        .iter()
        .position(|s| s.parent_span_id.is_none())
        .unwrap_or(0);
    let mut problems: Vec<Problem> = Vec::new();
    for (i, s) in kept.iter().enumerate() {
        match &s.parent_span_id {
            Some(p) if !ids.contains(p.as_str()) => problems.push(Problem {
                kind: "missing_parent".into(),
                at: s.at.clone(),
                message: format!(
                    "span `{}` names parent {p}, which is not in the input (trace {trace_id}); kept under the root",
                    s.name
                ),
            }),
            None if i != root_index => problems.push(Problem {
                kind: "extra_root".into(),
                at: s.at.clone(),
                message: format!(
                    "span `{}` is a second root of trace {trace_id}; kept under the first (`{}`)",
                    s.name, kept[root_index].name
                ),
            }),
            _ => {}
        }
    }
    for p in problems {
        summary.note(p);
    }
    summary.spans_used += kept.len() as u64;
    summary.records += 1;

    let mut notes: Vec<(usize, Notes)> = Vec::new();
    let root = &kept[root_index];
    let roles: Vec<Role> = kept.iter().map(conventions::role).collect();
    let of = |r: Role| -> Vec<usize> { (0..kept.len()).filter(|&i| roles[i] == r).collect() };
    let retrievers = of(Role::Retriever);
    let rerankers = of(Role::Reranker);
    let llms = of(Role::Llm);
    let first_retrieval_start = retrievers
        .iter()
        .filter_map(|&i| kept[i].start_unix_nano)
        .min();
    let (rewrite_llms, gen_llms): (Vec<usize>, Vec<usize>) =
        llms.iter()
            .copied()
            .partition(|&i| match (first_retrieval_start, kept[i].end_unix_nano) {
                (Some(first), Some(end)) => end <= first,
                _ => false,
            });
    let generate = gen_llms
        .last()
        .copied()
        .or_else(|| rewrite_llms.last().copied());
    let rewrite_llms: Vec<usize> = rewrite_llms
        .into_iter()
        .filter(|i| Some(*i) != generate)
        .collect();

    let mut not_recorded: Vec<&str> = Vec::new();

    // The question.
    let mut n = Notes::new();
    let input = conventions::io_value(root, "input", &mut n).or_else(|| {
        // An agent or model root (GenAI) carries the question as its last user message.
        conventions::input_messages(root, &mut n)?
            .into_iter()
            .rev()
            .find(|m| m.role.as_deref().is_none_or(|r| r == "user"))?
            .content
            .map(IoValue::Text)
    });
    keep(&mut notes, root_index, n);
    let question: Option<String> = input
        .as_ref()
        .and_then(|v| v.text(&["question", "query", "input"]))
        .map(str::to_string);
    let mut input_json = Vec::new();
    match &input {
        None => {
            not_recorded.push("input");
            Object::begin(&mut input_json).end();
        }
        Some(IoValue::Json(Value::Object(o))) => write_json(&mut input_json, o),
        Some(IoValue::Text(t)) | Some(IoValue::Json(Value::String(t))) => {
            let mut m = Object::begin(&mut input_json);
            m.value("question", t);
            m.end();
        }
        Some(IoValue::Json(other)) => {
            let mut m = Object::begin(&mut input_json);
            m.value("input", other);
            m.end();
        }
    }

    // Segments.
    let mut metadata = Map::new();
    for i in std::iter::once(root_index).chain((0..kept.len()).filter(|&i| i != root_index)) {
        let mut n = Notes::new();
        for (k, v) in conventions::segments(&kept[i], &mut n) {
            if !metadata.contains_key(&k) {
                metadata.insert(k, v);
            }
        }
        keep(&mut notes, i, n);
    }

    // Retrievals. A list of passages is written once, as its JSON array.
    let passages = |docs: Vec<Document>,
                    span: usize,
                    notes: &mut Vec<(usize, Notes)>|
     -> PassageList {
        let mut all_text = true;
        let mut len = 0;
        let mut json = Vec::new();
        let mut list = Array::begin(&mut json);
        let mut n = Notes::new();
        for (rank, d) in docs.into_iter().enumerate() {
            let doc_id = match (&d.id, &d.content) {
                (Some(id), _) => Cow::Borrowed(id.as_ref()),
                (None, Some(text)) => Cow::Owned(oloproof_core::dataset::stable_id(text)),
                (None, None) => {
                    n.push(format!(
                        "document {} has neither an id nor content: left out (the ranks after it move up)",
                        rank + 1
                    ));
                    continue;
                }
            };
            let text = d
                .content
                .as_deref()
                .or_else(|| corpus.and_then(|c| c.texts.get(doc_id.as_ref()).map(String::as_str)));
            all_text &= text.is_some();
            len += 1;
            list.object(|p| {
                p.value("doc_id", doc_id.as_ref());
                if let Some(s) = d.score {
                    p.value("score", &s);
                }
                if let Some(t) = text {
                    p.value("text", t);
                }
                if let Some(m) = &d.metadata {
                    p.value("metadata", m.as_ref());
                }
            });
        }
        list.end();
        if !n.is_empty() {
            notes.push((span, n));
        }
        PassageList {
            json,
            len,
            all_text,
        }
    };
    let mut lane_retrievals = Vec::new();
    let mut lanes = Array::begin(&mut lane_retrievals);
    let mut any_lane = false;
    let mut lists: Vec<(PassageList, Option<String>)> = Vec::new();
    let mut queries: Vec<String> = Vec::new();
    let mut retrieval_unrecorded = false;
    for &i in &retrievers {
        let s = &kept[i];
        let mut n = Notes::new();
        let query = conventions::retrieval_query(s, &mut n);
        let docs = conventions::openinference_documents(s, "retrieval.documents", &mut n)
            .or_else(|| conventions::genai_documents(s, &mut n));
        keep(&mut notes, i, n);
        if let Some(q) = &query {
            if !queries.contains(q) {
                queries.push(q.clone());
            }
        }
        let Some(docs) = docs else {
            retrieval_unrecorded = true;
            continue;
        };
        let candidates = passages(docs, i, &mut notes);
        any_lane = true;
        lanes.object(|lane| {
            if let Some(q) = &query {
                lane.value("query", q);
            }
            lane.object("retrieval", |r| {
                write_retrieval(r, query.as_deref(), &candidates)
            });
            if let Some(ms) = s.duration_ms() {
                lane.value("latency_ms", &ms);
            }
        });
        lists.push((candidates, query));
    }
    lanes.end();
    let mut pipeline_json = Vec::new();
    let mut pipeline = Object::begin(&mut pipeline_json);
    if let Some(q) = &question {
        if !retrievers.is_empty() {
            pipeline.value("question", q);
        }
    }
    // Rewrites: retrieval queries that differ from the question.
    match &question {
        Some(q) => {
            let rewrites: Vec<&String> = queries.iter().filter(|r| *r != q).collect();
            if !rewrites.is_empty() {
                let usage = usage_of(&kept, &rewrite_llms, &mut notes);
                pipeline.object("rewrite", |rw| {
                    rw.value("queries", &rewrites);
                    if let Some(u) = &usage {
                        rw.value("usage", u);
                    }
                });
            }
        }
        None if !queries.is_empty() => not_recorded.push("pipeline.rewrite"),
        None => {}
    }
    if any_lane {
        pipeline.raw("retrievals", &lane_retrievals);
    }
    // Rerank, and the final list.
    let mut final_list: Option<(PassageList, Option<String>)> = None;
    if let Some(&i) = rerankers.last() {
        let s = &kept[i];
        let mut n = Notes::new();
        let query = conventions::rerank_query(s, &mut n);
        let input_docs =
            conventions::openinference_documents(s, "reranker.input_documents", &mut n);
        let output_docs =
            conventions::openinference_documents(s, "reranker.output_documents", &mut n);
        keep(&mut notes, i, n);
        match input_docs {
            Some(docs) => {
                let pre = passages(docs, i, &mut notes);
                pipeline.raw("pre_rerank", &pre.json);
            }
            None => not_recorded.push("pipeline.pre_rerank"),
        }
        if let Some(docs) = output_docs {
            let list = passages(docs, i, &mut notes);
            final_list = Some((list, query.or_else(|| question.clone())));
        }
    } else if lists.len() == 1 && !retrieval_unrecorded {
        final_list = lists.pop();
    }
    let has_pipeline = !pipeline.is_empty();
    pipeline.end();
    let mut retrieval_json = None;
    match final_list {
        Some((candidates, query)) => {
            let mut json = Vec::new();
            let mut r = Object::begin(&mut json);
            write_retrieval(&mut r, query.as_deref(), &candidates);
            r.end();
            retrieval_json = Some(json);
            if !candidates.all_text {
                not_recorded.extend(["retrieval.text", "context.text"]);
            }
        }
        None => not_recorded.extend(["retrieval", "context"]),
    }

    // The answer.
    let mut n = Notes::new();
    let root_answer = conventions::io_value(root, "output", &mut n)
        .and_then(|v| {
            v.text(&["answer", "output", "response"])
                .map(str::to_string)
        })
        .or_else(|| {
            conventions::output_messages(root, &mut n)?
                .into_iter()
                .rev()
                .find_map(|m| m.content)
        });
    keep(&mut notes, root_index, n);
    let answer = root_answer.or_else(|| {
        let i = generate?;
        let mut n = Notes::new();
        let out = conventions::output_messages(&kept[i], &mut n)
            .and_then(|m| m.into_iter().rev().find_map(|m| m.content))
            .or_else(|| {
                conventions::io_value(&kept[i], "output", &mut n).and_then(|v| {
                    v.text(&["answer", "output", "response"])
                        .map(str::to_string)
                })
            });
        keep(&mut notes, i, n);
        out
    });
    if answer.is_none() {
        not_recorded.push("answer");
    }
    // Spans carry no citations in either convention.
    not_recorded.push("citations");

    // Usage and time to first token of the generating call.
    let usage = generate.and_then(|i| usage_of(&kept, &[i], &mut notes));
    if usage.is_none() {
        not_recorded.push("usage");
    }
    let ttft = generate.and_then(|i| {
        let mut n = Notes::new();
        let t = conventions::ttft_ms(&kept[i], &mut n);
        notes.push((i, n));
        t
    });
    if ttft.is_none() {
        not_recorded.push("ttft_ms");
    }

    // Latency per stage.
    let mut latency: Vec<(&str, f64)> = Vec::new();
    let gen_spans: Vec<usize> = generate.into_iter().collect();
    for (stage, spans, key) in [
        ("rewrite", &rewrite_llms, "latency_ms.rewrite"),
        ("retrieve", &retrievers, "latency_ms.retrieve"),
        ("rerank", &rerankers, "latency_ms.rerank"),
        ("generate", &gen_spans, "latency_ms.generate"),
    ] {
        if spans.is_empty() {
            continue;
        }
        match window_ms(&kept, spans) {
            Some(ms) => latency.push((stage, ms)),
            None => not_recorded.push(key),
        }
    }
    match root.duration_ms() {
        Some(ms) => latency.push(("total", ms)),
        None => not_recorded.push("latency_ms.total"),
    }

    // Production.
    let timestamp = root
        .start_unix_nano
        .or_else(|| kept.iter().filter_map(|s| s.start_unix_nano).min())
        .map(rfc3339);
    if timestamp.is_none() {
        not_recorded.push("timestamp");
    }
    let mut feedback: Vec<Feedback> = Vec::new();
    for (i, s) in kept.iter().enumerate() {
        let mut n = Notes::new();
        feedback.extend(conventions::feedback(s, &mut n));
        keep(&mut notes, i, n);
    }
    feedback.extend(external_feedback);
    // The first span to end in error (a failed call ends before the parents it fails).
    let error = kept
        .iter()
        .enumerate()
        .filter_map(|(i, s)| conventions::error_message(s).map(|m| (i, s, m)))
        .min_by_key(|(_, s, _)| s.end_unix_nano.unwrap_or(u64::MAX))
        .map(|(i, s, message)| ProductionError {
            stage: roles[i]
                .stage()
                .map(str::to_string)
                .unwrap_or_else(|| s.name.clone()),
            message,
            span_id: Some(s.span_id.clone()),
        });
    let not_recorded: Vec<String> = not_recorded.iter().map(|s| s.to_string()).collect();
    let production = Production {
        trace_id: Some(trace_id.to_string()),
        timestamp,
        source: Some(source.to_string()),
        feedback,
        not_recorded,
        error,
    };

    // The record, its keys in this order.
    let mut json = Vec::with_capacity(
        input_json.len() + pipeline_json.len() + retrieval_json.as_ref().map_or(0, Vec::len) + 512,
    );
    let mut record = Object::begin(&mut json);
    record.value("id", trace_id);
    record.raw("input", &input_json);
    if !metadata.is_empty() {
        record.value("metadata", &metadata);
    }
    if let Some(r) = &retrieval_json {
        record.raw("retrieval", r);
    }
    if let Some(a) = &answer {
        record.value("answer", a);
    }
    if let Some(u) = &usage {
        record.value("usage", u);
    }
    if let Some(ms) = ttft {
        record.value("ttft_ms", &ms);
    }
    if has_pipeline {
        record.raw("pipeline", &pipeline_json);
    }
    if !latency.is_empty() {
        record.object("latency_ms", |l| {
            for (stage, ms) in &latency {
                l.value(stage, ms);
            }
        });
    }
    record.value("production", &production);
    record.end();
    json.push(b'\n');

    // Notes: one problem per wrong value, at its span.
    let mut by_span: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (i, n) in notes {
        by_span.entry(i).or_default().extend(n);
    }
    for (i, messages) in by_span {
        let s = &kept[i];
        for m in messages {
            summary.note(Problem {
                kind: "wrong_attribute_type".into(),
                at: s.at.clone(),
                message: format!("span `{}` of trace {trace_id}: {m}; not recorded", s.name),
            });
        }
    }
    RecordLine {
        json,
        not_recorded: production.not_recorded,
    }
}

/// Keeps the notes `n` of span `i`.
fn keep(notes: &mut Vec<(usize, Notes)>, i: usize, n: Notes) {
    if !n.is_empty() {
        notes.push((i, n));
    }
}

/// `{model?, input_tokens?, output_tokens?}` of the model calls `spans` (tokens summed, the
/// last model named); `None` when no count was recorded.
fn usage_of(spans: &[Span], which: &[usize], notes: &mut Vec<(usize, Notes)>) -> Option<Value> {
    let mut input: Option<u64> = None;
    let mut output: Option<u64> = None;
    let mut model: Option<String> = None;
    for &i in which {
        let mut n = Notes::new();
        let t = conventions::tokens(&spans[i], &mut n);
        notes.push((i, n));
        if let Some(x) = t.input {
            input = Some(input.unwrap_or(0) + x);
        }
        if let Some(x) = t.output {
            output = Some(output.unwrap_or(0) + x);
        }
        if let Some(m) = conventions::model(&spans[i]) {
            model = Some(m);
        }
    }
    if input.is_none() && output.is_none() {
        return None;
    }
    let mut u = Map::new();
    if let Some(m) = model {
        u.insert("model".into(), Value::String(m));
    }
    if let Some(x) = input {
        u.insert("input_tokens".into(), json!(x));
    }
    if let Some(x) = output {
        u.insert("output_tokens".into(), json!(x));
    }
    Some(Value::Object(u))
}

/// From the first start to the last end of `which`, in milliseconds; `None` when one of them
/// has no valid duration.
fn window_ms(spans: &[Span], which: &[usize]) -> Option<f64> {
    let mut start = u64::MAX;
    let mut end = 0u64;
    for &i in which {
        let s = &spans[i];
        s.duration_ms()?;
        start = start.min(s.start_unix_nano?);
        end = end.max(s.end_unix_nano?);
    }
    Some((end - start) as f64 / 1e6)
}

/// Nanoseconds since the Unix epoch as RFC 3339 UTC with nanoseconds
/// (`2023-11-14T22:13:20.123456789Z`); the civil date by Howard Hinnant's `civil_from_days`.
pub fn rfc3339(nanos: u64) -> String {
    let secs = nanos / 1_000_000_000;
    let frac = nanos % 1_000_000_000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{frac:09}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// One trace record as a line of JSON Lines.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordLine {
    /// The record's compact JSON and its newline.
    pub json: Vec<u8>,
    /// The record's `production.not_recorded` fields (what its spans did not carry).
    pub not_recorded: Vec<String>,
}

impl RecordLine {
    /// The record as a JSON value (parsed from [`RecordLine::json`]; for readers that work
    /// on values, such as tests).
    ///
    /// # Errors
    ///
    /// Never for a line the assembler wrote; `serde_json`'s error for any other bytes.
    pub fn value(&self) -> serde_json::Result<Value> {
        serde_json::from_slice(&self.json)
    }
}

/// A list of passages written as its JSON array, with its length and whether every passage
/// has its text.
struct PassageList {
    json: Vec<u8>,
    len: usize,
    all_text: bool,
}

/// The keys of a retrieval object: `query` (when known), `depth` (the list's length) and
/// `candidates`.
fn write_retrieval(r: &mut Object<'_>, query: Option<&str>, list: &PassageList) {
    if let Some(q) = query {
        r.value("query", q);
    }
    r.value("depth", &list.len);
    r.raw("candidates", &list.json);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::span::{Location, SpanEvent, SpanStatus, StatusCode};

    const T: &str = "0af7651916cd43dd8448eb211c80319c";
    const BASE: u64 = 1_700_000_000_000_000_000;

    fn span(id: &str, parent: Option<&str>, start_ms: u64, end_ms: u64, attrs: Value) -> Span {
        Span {
            trace_id: T.into(),
            span_id: id.into(),
            parent_span_id: parent.map(str::to_string),
            name: id.into(),
            kind: None,
            start_unix_nano: Some(BASE + start_ms * 1_000_000),
            end_unix_nano: Some(BASE + end_ms * 1_000_000),
            attributes: attrs
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            events: Vec::new(),
            status: None,
            resource: Default::default(),
            at: Location {
                file: "t.jsonl".into(),
                line: Some(1),
                byte_offset: None,
            },
        }
    }

    fn rag_spans() -> Vec<Span> {
        vec![
            span(
                "0000000000000001",
                None,
                0,
                900,
                json!({
                    "openinference.span.kind": "CHAIN",
                    "input.value": "How long do refunds take?",
                    "output.value": "Refunds take 14 days.",
                    "metadata": "{\"intent\": \"refund\"}",
                    "session.id": "s-1",
                }),
            ),
            span(
                "0000000000000002",
                Some("0000000000000001"),
                10,
                60,
                json!({
                    "openinference.span.kind": "RETRIEVER",
                    "input.value": "refund duration",
                    "retrieval.documents.0.document.id": "d1",
                    "retrieval.documents.0.document.content": "Refunds take 14 days.",
                    "retrieval.documents.0.document.score": 0.9,
                    "retrieval.documents.1.document.id": "d2",
                    "retrieval.documents.1.document.content": "Shipping takes 3 days.",
                    "retrieval.documents.1.document.score": 0.4,
                }),
            ),
            span(
                "0000000000000003",
                Some("0000000000000001"),
                60,
                100,
                json!({
                    "openinference.span.kind": "RERANKER",
                    "reranker.query": "How long do refunds take?",
                    "reranker.input_documents.0.document.id": "d1",
                    "reranker.input_documents.1.document.id": "d2",
                    "reranker.output_documents.0.document.id": "d2",
                    "reranker.output_documents.0.document.content": "Shipping takes 3 days.",
                    "reranker.output_documents.1.document.id": "d1",
                    "reranker.output_documents.1.document.content": "Refunds take 14 days.",
                }),
            ),
            span(
                "0000000000000004",
                Some("0000000000000001"),
                100,
                880,
                json!({
                    "openinference.span.kind": "LLM",
                    "llm.model_name": "gpt-4o-mini",
                    "llm.token_count.prompt": 120,
                    "llm.token_count.completion": 9,
                    "gen_ai.response.time_to_first_chunk": 0.2,
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": "Refunds take 14 days.",
                }),
            ),
        ]
    }

    fn one(spans: Vec<Span>, corpus: Option<&Corpus>) -> (Value, ImportSummary) {
        let mut a = Assembler::new(AssembleOptions::default(), corpus);
        let n = spans.len() as u64;
        let early = a.push(Decoded {
            spans,
            feedback: Vec::new(),
            log_events: Vec::new(),
            summary: ImportSummary {
                spans_read: n,
                ..Default::default()
            },
        });
        assert!(early.is_empty(), "held for the grace window");
        let (mut records, summary) = a.finish();
        assert_eq!(records.len(), 1);
        let line = records.remove(0);
        let record = line.value().unwrap();
        // Written straight to JSON: byte for byte what serde_json writes for the same value.
        let mut expected = serde_json::to_vec(&record).unwrap();
        expected.push(b'\n');
        assert_eq!(
            String::from_utf8(line.json.clone()).unwrap(),
            String::from_utf8(expected).unwrap()
        );
        assert_eq!(
            json!(line.not_recorded),
            record["production"]["not_recorded"],
            "not_recorded is the record's"
        );
        (record, summary)
    }

    #[test]
    fn a_rag_trace_becomes_one_record() {
        let (r, summary) = one(rag_spans(), None);
        assert!(summary.adds_up(), "{summary:?}");
        assert!(summary.problems.is_empty(), "{:?}", summary.first);
        assert_eq!(r["id"], json!(T));
        assert_eq!(r["input"], json!({"question": "How long do refunds take?"}));
        assert_eq!(r["answer"], json!("Refunds take 14 days."));
        assert_eq!(
            r["metadata"],
            json!({"intent": "refund", "session_id": "s-1"})
        );
        assert_eq!(
            r["pipeline"]["question"],
            json!("How long do refunds take?")
        );
        assert_eq!(
            r["pipeline"]["rewrite"]["queries"],
            json!(["refund duration"])
        );
        let lane = &r["pipeline"]["retrievals"][0];
        assert_eq!(lane["query"], json!("refund duration"));
        assert_eq!(lane["retrieval"]["candidates"][1]["doc_id"], json!("d2"));
        assert_eq!(lane["latency_ms"], json!(50.0));
        assert_eq!(r["pipeline"]["pre_rerank"][0], json!({"doc_id": "d1"}));
        assert_eq!(r["retrieval"]["candidates"][0]["doc_id"], json!("d2"));
        assert_eq!(
            r["usage"],
            json!({"model": "gpt-4o-mini", "input_tokens": 120, "output_tokens": 9})
        );
        assert_eq!(r["ttft_ms"], json!(200.0));
        assert_eq!(
            r["latency_ms"],
            json!({"retrieve": 50.0, "rerank": 40.0, "generate": 780.0, "total": 900.0})
        );
        let p = &r["production"];
        assert_eq!(p["timestamp"], json!("2023-11-14T22:13:20.000000000Z"));
        assert_eq!(p["source"], json!("otlp"));
        assert_eq!(p["not_recorded"], json!(["citations"]));
        // The record reads back as a trace dataset.
        let text = serde_json::to_string(&r).unwrap();
        let d = oloproof_core::dataset::parse_dataset("traffic.jsonl", &text, None).unwrap();
        let rec = &d.records[0];
        assert_eq!(
            rec.trace.production.as_ref().unwrap().trace_id.as_deref(),
            Some(T)
        );
        assert_eq!(rec.trace.latency_ms.get("total"), Some(900.0));
        assert_eq!(rec.trace.context.as_ref().unwrap().passages.len(), 2);
    }

    #[test]
    fn content_not_captured_is_named_never_guessed() {
        let mut spans = rag_spans();
        for s in &mut spans {
            s.attributes.retain(|k, _| {
                !(k.ends_with(".content")
                    || k.starts_with("input.")
                    || k.starts_with("output.")
                    || k.starts_with("llm.output"))
            });
        }
        let (r, _) = one(spans, None);
        assert_eq!(r["input"], json!({}));
        assert!(r.get("answer").is_none());
        assert!(r["retrieval"]["candidates"][0].get("text").is_none());
        assert_eq!(
            r["production"]["not_recorded"],
            json!([
                "input",
                "retrieval.text",
                "context.text",
                "answer",
                "citations"
            ])
        );
        // With a corpus, the text comes back by document id.
        let corpus = Corpus::parse(
            "corpus.jsonl",
            "{\"doc_id\": \"d1\", \"text\": \"Refunds take 14 days.\"}\n{\"doc_id\": \"d2\", \"text\": \"Shipping takes 3 days.\"}\n",
        )
        .unwrap();
        let mut spans = rag_spans();
        for s in &mut spans {
            s.attributes.retain(|k, _| !k.ends_with(".content"));
        }
        let (r, _) = one(spans, Some(&corpus));
        assert_eq!(
            r["retrieval"]["candidates"][0]["text"],
            json!("Shipping takes 3 days.")
        );
        assert_eq!(r["production"]["not_recorded"], json!(["citations"]));
    }

    #[test]
    fn orphans_duplicates_and_reversed_times() {
        let mut spans = rag_spans();
        let mut dup = spans[1].clone();
        dup.name = "again".into();
        spans.push(dup);
        spans[3].parent_span_id = Some("00000000000000ff".into());
        let mut reversed = spans[2].clone();
        reversed.span_id = "0000000000000009".into();
        std::mem::swap(&mut reversed.start_unix_nano, &mut reversed.end_unix_nano);
        spans[2] = reversed;
        let (r, summary) = one(spans, None);
        assert_eq!(summary.spans_dropped["duplicate_span_id"], 1);
        assert_eq!(summary.problems["missing_parent"], 1);
        assert_eq!(summary.problems["end_before_start"], 1);
        assert_eq!(summary.spans_used, 4);
        assert!(summary.adds_up());
        assert!(r["latency_ms"].get("rerank").is_none());
        assert!(r["production"]["not_recorded"]
            .as_array()
            .unwrap()
            .contains(&json!("latency_ms.rerank")));
        // The orphan LLM span still gives the answer's usage.
        assert_eq!(r["usage"]["input_tokens"], json!(120));
    }

    #[test]
    fn errors_feedback_and_genai_names() {
        let mut root = span(
            "0000000000000001",
            None,
            0,
            500,
            json!({
                "input.value": "What is the SLA?",
            }),
        );
        root.events.push(SpanEvent {
            name: "gen_ai.evaluation.result".into(),
            time_unix_nano: None,
            attributes: [
                ("gen_ai.evaluation.name".to_string(), json!("thumbs")),
                ("gen_ai.evaluation.score.label".to_string(), json!("down")),
            ]
            .into(),
        });
        let retr = span(
            "0000000000000002",
            Some("0000000000000001"),
            5,
            25,
            json!({
                "gen_ai.operation.name": "retrieval",
                "gen_ai.retrieval.query.text": "What is the SLA?",
                "gen_ai.retrieval.documents": [{"id": "sla", "score": 0.8}],
            }),
        );
        let mut llm = span(
            "0000000000000003",
            Some("0000000000000001"),
            30,
            490,
            json!({
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "m",
                "gen_ai.usage.input_tokens": 50,
                "gen_ai.usage.output_tokens": "x",
            }),
        );
        llm.status = Some(SpanStatus {
            code: StatusCode::Error,
            message: "rate limited".into(),
        });
        let (r, summary) = one(vec![root, retr, llm], None);
        let p = &r["production"];
        assert_eq!(
            p["error"],
            json!({"stage": "generate", "message": "rate limited", "span_id": "0000000000000003"})
        );
        assert_eq!(p["feedback"][0], json!({"name": "thumbs", "value": "down"}));
        assert!(
            r["pipeline"].get("rewrite").is_none(),
            "the query is the question"
        );
        assert_eq!(r["usage"], json!({"model": "m", "input_tokens": 50}));
        assert_eq!(summary.problems["wrong_attribute_type"], 1);
        assert!(summary.first[0]
            .message
            .contains("gen_ai.usage.output_tokens"));
        let nr = p["not_recorded"].as_array().unwrap();
        for f in ["retrieval.text", "answer", "ttft_ms"] {
            assert!(nr.contains(&json!(f)), "{f} in {nr:?}");
        }
    }

    #[test]
    fn streaming_writes_complete_traces_after_the_grace_window() {
        let options = AssembleOptions {
            grace_spans: 1,
            ..Default::default()
        };
        let mut a = Assembler::new(options, None);
        let batch = |spans: Vec<Span>| Decoded {
            summary: ImportSummary {
                spans_read: spans.len() as u64,
                ..Default::default()
            },
            spans,
            feedback: Vec::new(),
            log_events: Vec::new(),
        };
        let mut spans = rag_spans();
        let root = spans.remove(0);
        assert!(a.push(batch(spans)).is_empty(), "no root yet");
        assert!(
            a.push(batch(vec![root])).is_empty(),
            "complete, in its window"
        );
        let mut other = rag_spans().remove(0);
        other.trace_id = "1af7651916cd43dd8448eb211c80319c".into();
        let written = a.push(batch(vec![other]));
        assert_eq!(written.len(), 1, "one span later the first trace is out");
        assert_eq!(written[0].value().unwrap()["id"], json!(T));
        let mut late = rag_spans().remove(1);
        late.span_id = "00000000000000aa".into();
        assert_eq!(
            a.push(batch(vec![late])).len(),
            1,
            "the second trace's window is over"
        );
        let (rest, summary) = a.finish();
        assert!(rest.is_empty());
        assert_eq!(summary.spans_dropped["late_span"], 1);
        assert_eq!(summary.records, 2);
        assert!(summary.adds_up(), "{summary:?}");
    }

    #[test]
    fn push_batch_gives_what_push_gives() {
        // 40 traces spread over lines of 7 spans, some with a duplicate span, an orphan, a
        // wrong attribute, an uppercase (non-OTLP) id, and spans arriving after their trace
        // was written; a short grace window so that traces are written while lines come in.
        let mut spans: Vec<Span> = Vec::new();
        for t in 0..40u32 {
            let id = if t % 9 == 4 {
                format!("TRACE-{t:04}")
            } else {
                format!("{:032x}", 0x0af7_6519_16cd_43dd_u128 << 64 | u128::from(t))
            };
            let mut trace = rag_spans();
            if t % 5 == 1 {
                trace.push(trace[2].clone());
            }
            if t % 7 == 2 {
                trace[3].parent_span_id = Some("00000000000000ff".into());
                trace[3]
                    .attributes
                    .insert("llm.token_count.prompt", json!("many"));
            }
            for (k, s) in trace.iter_mut().enumerate() {
                s.trace_id = id.clone();
                s.at.line = Some(t as usize * 10 + k + 1);
            }
            // The root last, as exporters write it.
            trace.rotate_left(1);
            spans.extend(trace);
            if t % 6 == 5 {
                // A late span of the first trace.
                let mut late = rag_spans().remove(1);
                late.trace_id = format!("{:032x}", 0x0af7_6519_16cd_43dd_u128 << 64);
                late.span_id = format!("{:016x}", 0x100 + t);
                spans.push(late);
            }
        }
        let lines: Vec<Decoded> = spans
            .chunks(7)
            .map(|c| Decoded {
                summary: ImportSummary {
                    spans_read: c.len() as u64,
                    ..Default::default()
                },
                spans: c.to_vec(),
                feedback: Vec::new(),
                log_events: Vec::new(),
            })
            .collect();
        let options = AssembleOptions {
            grace_spans: 12,
            ..Default::default()
        };
        let mut one = Assembler::new(options.clone(), None);
        let mut one_records = Vec::new();
        for d in lines.clone() {
            one_records.extend(one.push(d));
        }
        let (rest, one_summary) = one.finish();
        one_records.extend(rest);
        for batch in [1, 3, 8, 1000] {
            let mut many = Assembler::new(options.clone(), None);
            let mut records = Vec::new();
            for chunk in lines.chunks(batch) {
                records.extend(many.push_batch(chunk.to_vec()));
            }
            let (rest, summary) = many.finish();
            records.extend(rest);
            assert_eq!(records, one_records, "batches of {batch}");
            assert_eq!(summary, one_summary, "batches of {batch}");
        }
        assert_eq!(one_records.len(), 40);
        assert!(one_summary.adds_up());
        assert!(
            one_summary.spans_dropped["late_span"] > 0,
            "{one_summary:?}"
        );
        assert!(one_summary.spans_dropped["duplicate_span_id"] > 0);
        assert!(one_summary.first.len() == ImportSummary::FIRST);
    }

    #[test]
    fn timestamps() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000000000Z");
        assert_eq!(
            rfc3339(951_782_400_000_000_001),
            "2000-02-29T00:00:00.000000001Z"
        );
        assert_eq!(
            rfc3339(1_764_633_600_500_000_000),
            "2025-12-02T00:00:00.500000000Z"
        );
    }
}
