//! One case's pipeline as a flow (seed 000, Parts 2, 4, 5, 8): rewrite → lanes → fusion →
//! filter → rerank → context → answer, each stage with its ranked list (positions, the case's
//! gold documents marked), its time and its cache use. [`Flow::of`] reads it from a trace once;
//! [`flow_text`] (`oloproof show --case`) and [`flow_html`] (the HTML report and the viewer's
//! case page) render the same [`Flow`].
//!
//! A two-stage trace (no `pipeline`, no predicates, no hops) has no flow: [`Flow::of`] is
//! `None` and the case renders exactly as before.
//!
//! ```
//! use oloproof_core::case::Case;
//! use oloproof_core::trace::Trace;
//! use oloproof_report::pipeline::Flow;
//!
//! let case: Case = serde_json::from_value(serde_json::json!({"id": "c", "input": {}})).unwrap();
//! // Protocol 1: retrieve + generate only, no flow.
//! assert!(Flow::of(&case, &Trace::new("c")).is_none());
//! ```

use std::collections::HashSet;
use std::fmt::Write as _;

use oloproof_core::case::Case;
use oloproof_core::passage::Passage;
use oloproof_core::pipeline::{Filter, Usage};
use oloproof_core::trace::Trace;
use serde_json::Value;

use crate::html::escape;
use crate::svg::{bar_chart, Bar};

/// Ranked rows shown per list before the rest is summarised (gold documents further down are
/// always shown).
pub const LIST_LIMIT: usize = 10;

/// One document of a stage's ranked list.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// 1-based position in the stage's list.
    pub position: usize,
    /// `doc_id`, or `doc_id [chunk_id]`.
    pub id: String,
    /// The score the stage gave.
    pub score: Option<f64>,
    /// Whether it is a gold document of the case (`expected.relevant`, grade ≥ 1).
    pub gold: bool,
    /// Its position in each lane (`bm25 #1 · tri #3`, `not in tri`): fused lists only.
    pub lanes: Vec<String>,
    /// For the reranked list: the position before the rerank (`None`: not in it).
    pub before: Option<usize>,
}

impl Row {
    /// The move of a reranked row: `↑2`, `↓1`, `=`, or empty for other lists.
    pub fn moved(&self) -> String {
        match self.before {
            Some(b) if b > self.position => format!("↑{}", b - self.position),
            Some(b) if b < self.position => format!("↓{}", self.position - b),
            Some(_) => "=".to_string(),
            None => String::new(),
        }
    }
}

/// A ranked list as a stage shows it: the first [`LIST_LIMIT`] rows, then any gold row below,
/// and how many rows were left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ranked {
    /// Rows shown, in position order.
    pub rows: Vec<Row>,
    /// Rows not shown.
    pub hidden: usize,
}

/// Which stage a [`Step`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageKind {
    /// `rewrite`.
    Rewrite,
    /// One lane's ranking (its calls over every query).
    Lane,
    /// Host fusion or the system's `fuse`.
    Fusion,
    /// The metadata predicates applied, with the host's check on the gold documents.
    Filter,
    /// `rerank`: the final list with each document's move.
    Rerank,
    /// One hop of an iterative retrieval.
    Hop,
    /// `generate`: time, time to first token, usage.
    Answer,
}

impl StageKind {
    /// The stage as a word (`rewrite`, `lane`, `fusion`, `filter`, `rerank`, `hop`, `answer`),
    /// the `data-stage` of its HTML block.
    pub const fn as_str(self) -> &'static str {
        match self {
            StageKind::Rewrite => "rewrite",
            StageKind::Lane => "lane",
            StageKind::Fusion => "fusion",
            StageKind::Filter => "filter",
            StageKind::Rerank => "rerank",
            StageKind::Hop => "hop",
            StageKind::Answer => "answer",
        }
    }
}

/// One stage of the flow.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Which stage.
    pub kind: StageKind,
    /// `Rewrite`, `Lane bm25`, `Fusion rrf k=60`, `Hop 2`, …
    pub title: String,
    /// Time and cache facts (`1.2 ms`, `cached`, `2 calls`, `ttft 40.0 ms`, `usage m 812 in /
    /// 40 out`), in order.
    pub facts: Vec<String>,
    /// Lines under the title: queries, predicates, the gold documents' filter outcomes.
    pub notes: Vec<String>,
    /// The stage's ranked list, if it has one.
    pub list: Option<Ranked>,
}

/// The pipeline of one case, read from its trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    /// The stages that ran, as the flow line names them (`rewrite`, `lanes (bm25, tri)`,
    /// `fusion (rrf k=60)`, `filter`, `rerank`, `context`, `answer`).
    pub line: Vec<String>,
    /// The stages in pipeline order.
    pub steps: Vec<Step>,
    /// Per-stage wall time in milliseconds, the stages that ran (`trace.latency_ms`).
    pub latency: Vec<(&'static str, f64)>,
    /// The whole request's time as production recorded it (`latency_ms.total`, the root
    /// span's duration), which may exceed the sum of the stages; `None` for a run.
    pub recorded_total: Option<f64>,
    /// Cache use per stage (`rewrite hit`, `retrieve 3 hit/1 miss`, …).
    pub cache: Vec<String>,
}

fn ms(x: f64) -> String {
    format!("{x:.1} ms")
}

fn passage_id(p: &Passage) -> String {
    match &p.chunk_id {
        Some(c) => format!("{} [{c}]", p.doc_id),
        None => p.doc_id.clone(),
    }
}

fn same_passage(a: &Passage, b: &Passage) -> bool {
    a.doc_id == b.doc_id && a.chunk_id == b.chunk_id
}

fn usage_fact(u: &Usage) -> Option<String> {
    if u == &Usage::default() {
        return None;
    }
    let mut parts = vec!["usage".to_string()];
    if let Some(m) = &u.model {
        parts.push(m.clone());
    }
    if let Some(i) = u.input_tokens {
        parts.push(format!("{i} in"));
    }
    if let Some(o) = u.output_tokens {
        parts.push(format!("{o} out"));
    }
    Some(parts.join(" "))
}

fn hit(cached: Option<bool>) -> Option<&'static str> {
    cached.map(|c| if c { "hit" } else { "miss" })
}

impl Flow {
    /// The flow of a case, or `None` for a two-stage trace (no `pipeline`, and a final
    /// retrieval without predicates or hops).
    pub fn of(case: &Case, trace: &Trace) -> Option<Flow> {
        let final_list = trace.retrieval.as_ref();
        let has_extras = final_list.is_some_and(|r| !r.filters.is_empty() || !r.hops.is_empty());
        if trace.pipeline.is_none() && !has_extras {
            return None;
        }
        let gold: HashSet<&str> = case
            .expected
            .relevant
            .iter()
            .flatten()
            .filter(|r| r.grade >= 1.0)
            .map(|r| r.doc_id.as_str())
            .collect();
        let ranked = |list: &[Passage], annotate: &dyn Fn(usize, &Passage) -> Row| {
            let mut out = Ranked::default();
            for (i, p) in list.iter().enumerate() {
                let is_gold = gold.contains(p.doc_id.as_str());
                if i < LIST_LIMIT || is_gold {
                    out.rows.push(annotate(i + 1, p));
                } else {
                    out.hidden += 1;
                }
            }
            out
        };
        let plain = |pos: usize, p: &Passage| Row {
            position: pos,
            id: passage_id(p),
            score: p.score,
            gold: gold.contains(p.doc_id.as_str()),
            lanes: Vec::new(),
            before: None,
        };
        let mut line = Vec::new();
        let mut steps = Vec::new();
        let pipeline = trace.pipeline.as_ref();

        if let Some(rw) = pipeline.and_then(|p| p.rewrite.as_ref()) {
            line.push("rewrite".to_string());
            let mut facts = Vec::new();
            if trace.cache.rewrite == Some(true) {
                facts.push("cached".to_string());
            } else if let Some(t) = trace.latency_ms.rewrite {
                facts.push(ms(t));
            }
            facts.extend(rw.usage.as_ref().and_then(usage_fact));
            let mut notes = Vec::new();
            if let Some(q) = pipeline.and_then(|p| p.question.as_deref()) {
                notes.push(format!("question: {q}"));
            }
            for (i, q) in rw.queries.iter().enumerate() {
                notes.push(format!("query {}: {q}", i + 1));
            }
            steps.push(Step {
                kind: StageKind::Rewrite,
                title: "Rewrite".to_string(),
                facts,
                notes,
                list: None,
            });
        }

        let lanes: Vec<&String> = pipeline
            .map(|p| p.lanes.keys().collect())
            .unwrap_or_default();
        if !lanes.is_empty() {
            line.push(format!(
                "lanes ({})",
                lanes
                    .iter()
                    .map(|l| l.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if let Some(p) = pipeline {
            for (lane, list) in &p.lanes {
                let calls: Vec<_> = p
                    .retrievals
                    .iter()
                    .filter(|r| r.lane.as_deref() == Some(lane.as_str()))
                    .collect();
                let mut facts = vec![format!(
                    "{} call{}",
                    calls.len(),
                    if calls.len() == 1 { "" } else { "s" }
                )];
                let cached = calls.iter().filter(|c| c.cached).count();
                let timed: Vec<f64> = calls.iter().filter_map(|c| c.latency_ms).collect();
                if !timed.is_empty() {
                    facts.push(ms(timed.iter().sum()));
                }
                if cached > 0 {
                    facts.push(format!("{cached} cached"));
                }
                let notes = calls
                    .iter()
                    .filter_map(|c| c.query.as_deref())
                    .map(|q| format!("query: {q}"))
                    .collect();
                steps.push(Step {
                    kind: StageKind::Lane,
                    title: format!("Lane {lane}"),
                    facts,
                    notes,
                    list: Some(ranked(list, &plain)),
                });
            }
        }

        if let Some(f) = pipeline.and_then(|p| p.fused.as_ref()) {
            line.push(format!("fusion ({})", f.method));
            let lane_lists: Vec<(&String, &Vec<Passage>)> = pipeline
                .map(|p| p.lanes.iter().collect())
                .unwrap_or_default();
            let annotate = |pos: usize, p: &Passage| {
                let mut row = plain(pos, p);
                row.lanes = lane_lists
                    .iter()
                    .map(
                        |(lane, list)| match list.iter().position(|q| same_passage(q, p)) {
                            Some(i) => format!("{lane} #{}", i + 1),
                            None => format!("not in {lane}"),
                        },
                    )
                    .collect();
                row
            };
            let mut facts = Vec::new();
            facts.extend(trace.latency_ms.fuse.map(ms));
            steps.push(Step {
                kind: StageKind::Fusion,
                title: format!("Fusion {}", f.method),
                facts,
                notes: Vec::new(),
                list: Some(ranked(&f.candidates, &annotate)),
            });
        }

        let filters: Vec<&Filter> = match pipeline {
            Some(p) if !p.retrievals.is_empty() => p.filters(),
            _ => {
                let mut out: Vec<&Filter> = Vec::new();
                if let Some(r) = final_list {
                    for f in r
                        .filters
                        .iter()
                        .chain(r.hops.iter().flat_map(|h| &h.filters))
                    {
                        if !out.contains(&f) {
                            out.push(f);
                        }
                    }
                }
                out
            }
        };
        if !filters.is_empty() || trace.filter_check.is_some() {
            line.push("filter".to_string());
            let mut notes: Vec<String> = filters
                .iter()
                .map(|f| format!("predicate: {}", f.describe()))
                .collect();
            if let Some(check) = &trace.filter_check {
                for g in &check.gold {
                    let outcome = if !g.in_corpus {
                        "not in the corpus file (not judged)".to_string()
                    } else if !g.failed.is_empty() {
                        format!("removed by {}", g.failed.join(", "))
                    } else if !g.unknown_fields.is_empty() {
                        format!("not judged: no field {}", g.unknown_fields.join(", "))
                    } else {
                        "passes every predicate".to_string()
                    };
                    notes.push(format!("gold {}: {outcome}", g.doc_id));
                }
            }
            steps.push(Step {
                kind: StageKind::Filter,
                title: "Filter".to_string(),
                facts: Vec::new(),
                notes,
                list: None,
            });
        }

        if let (Some(pre), Some(post)) = (pipeline.and_then(|p| p.pre_rerank.as_ref()), final_list)
        {
            line.push("rerank".to_string());
            let annotate = |pos: usize, p: &Passage| {
                let mut row = plain(pos, p);
                row.before = pre.iter().position(|q| same_passage(q, p)).map(|i| i + 1);
                row
            };
            let mut facts = Vec::new();
            if trace.cache.rerank == Some(true) {
                facts.push("cached".to_string());
            } else if let Some(t) = trace.latency_ms.rerank {
                facts.push(ms(t));
            }
            facts.extend(
                pipeline
                    .and_then(|p| p.rerank_usage.as_ref())
                    .and_then(usage_fact),
            );
            steps.push(Step {
                kind: StageKind::Rerank,
                title: "Rerank".to_string(),
                facts,
                notes: vec![format!(
                    "{} candidates in, {} out",
                    pre.len(),
                    post.candidates.len()
                )],
                list: Some(ranked(&post.candidates, &annotate)),
            });
        }

        // Hops: each retrieve call's (the host gathers them into the final retrieval too),
        // else the final retrieval's.
        let mut hop_sources: Vec<(Option<String>, &oloproof_core::passage::Retrieval)> = Vec::new();
        if let Some(p) =
            pipeline.filter(|p| p.retrievals.iter().any(|r| !r.retrieval.hops.is_empty()))
        {
            for (i, r) in p.retrievals.iter().enumerate() {
                let calls = p.retrievals.iter().filter(|o| o.lane == r.lane).count();
                let nth = p.retrievals[..i]
                    .iter()
                    .filter(|o| o.lane == r.lane)
                    .count()
                    + 1;
                let label = match (&r.lane, calls > 1) {
                    (Some(l), true) => Some(format!("lane {l}, call {nth}")),
                    (Some(l), false) => Some(format!("lane {l}")),
                    (None, true) => Some(format!("call {nth}")),
                    (None, false) => None,
                };
                hop_sources.push((label, &r.retrieval));
            }
        } else if let Some(r) = final_list {
            hop_sources.push((None, r));
        }
        let mut hops_seen = false;
        for (lane, r) in hop_sources {
            let lane = lane.as_deref();
            for (i, hop) in r.hops.iter().enumerate() {
                hops_seen = true;
                let mut notes = Vec::new();
                if let Some(q) = &hop.query {
                    notes.push(format!("query: {q}"));
                }
                for f in &hop.filters {
                    notes.push(format!("predicate: {}", f.describe()));
                }
                steps.push(Step {
                    kind: StageKind::Hop,
                    title: match lane {
                        Some(l) => format!("Hop {} ({l})", i + 1),
                        None => format!("Hop {}", i + 1),
                    },
                    facts: Vec::new(),
                    notes,
                    list: Some(ranked(&hop.candidates, &plain)),
                });
            }
        }
        if hops_seen {
            // Hops come before the final list is cut: name them before the context.
            line.push("hops".to_string());
        }
        if trace.context.is_some() {
            line.push("context".to_string());
        }
        if let Some(g) = &trace.generation {
            line.push("answer".to_string());
            let mut facts = Vec::new();
            if trace.cache.generate == Some(true) {
                facts.push("cached".to_string());
            } else if let Some(t) = trace.latency_ms.generate {
                facts.push(ms(t));
            }
            if let Some(t) = g.get("ttft_ms").and_then(Value::as_f64) {
                facts.push(format!("ttft {}", ms(t)));
            }
            if let Some(u) = g
                .get("usage")
                .and_then(|u| serde_json::from_value::<Usage>(u.clone()).ok())
            {
                facts.extend(usage_fact(&u));
            }
            steps.push(Step {
                kind: StageKind::Answer,
                title: "Answer".to_string(),
                facts,
                notes: Vec::new(),
                list: None,
            });
        }

        let c = &trace.cache;
        let mut cache = Vec::new();
        if c.execution {
            cache.push("execution hit".to_string());
        }
        cache.extend(hit(c.rewrite).map(|h| format!("rewrite {h}")));
        match (c.retrieve_calls, hit(c.retrieve)) {
            (Some(hm), _) => cache.push(format!("retrieve {} hit/{} miss", hm.hits, hm.misses)),
            (None, Some(h)) => cache.push(format!("retrieve {h}")),
            _ => {}
        }
        cache.extend(hit(c.rerank).map(|h| format!("rerank {h}")));
        cache.extend(hit(c.generate).map(|h| format!("generate {h}")));
        Some(Flow {
            line,
            steps,
            latency: trace.latency_ms.stages(),
            recorded_total: trace.latency_ms.total,
            cache,
        })
    }

    /// The recorded total when production gave one, else the sum of the stage times
    /// (`None` when no stage was timed).
    pub fn total_ms(&self) -> Option<f64> {
        self.recorded_total
            .or_else(|| (!self.latency.is_empty()).then(|| self.latency.iter().map(|s| s.1).sum()))
    }
}

/// A score with at most four decimals (`0.0656`, `2`): fused scores are long fractions.
pub fn score_text(score: f64) -> String {
    let text = format!("{score:.4}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    match text {
        "" | "-" | "-0" => "0".to_string(),
        t => t.to_string(),
    }
}

fn row_text(row: &Row) -> String {
    let mut s = format!("    {:>3}. {}", row.position, row.id);
    if let Some(score) = row.score {
        let _ = write!(s, " score {}", score_text(score));
    }
    let moved = row.moved();
    if !moved.is_empty() {
        let _ = write!(
            s,
            " {moved}{}",
            row.before
                .map(|b| format!(" (was #{b})"))
                .unwrap_or_default()
        );
    } else if row.before.is_none() && !row.lanes.is_empty() {
        let _ = write!(s, " · {}", row.lanes.join(" · "));
    }
    if row.gold {
        s.push_str(" ★ relevant");
    }
    s
}

/// The flow as terminal text (`oloproof show --case`), printed before the final candidates;
/// empty for a two-stage trace.
pub fn flow_text(case: &Case, trace: &Trace) -> String {
    let Some(flow) = Flow::of(case, trace) else {
        return String::new();
    };
    let mut out = format!("Pipeline: {}\n", flow.line.join(" → "));
    for step in &flow.steps {
        let facts = if step.facts.is_empty() {
            String::new()
        } else {
            format!(" · {}", step.facts.join(" · "))
        };
        let _ = writeln!(out, "  {}{facts}", step.title);
        for n in &step.notes {
            let _ = writeln!(out, "      {n}");
        }
        if let Some(list) = &step.list {
            if list.rows.is_empty() {
                out.push_str("      (empty)\n");
            }
            for row in &list.rows {
                let _ = writeln!(out, "{}", row_text(row));
            }
            if list.hidden > 0 {
                let _ = writeln!(out, "      … {} more", list.hidden);
            }
        }
    }
    if let Some(total) = flow.total_ms() {
        let stages: Vec<String> = flow
            .latency
            .iter()
            .map(|(s, t)| format!("{s} {}", ms(*t)))
            .collect();
        let _ = writeln!(
            out,
            "  Latency: {} · total {}",
            stages.join(" · "),
            ms(total)
        );
    }
    if !flow.cache.is_empty() {
        let _ = writeln!(out, "  Cache: {}", flow.cache.join(" · "));
    }
    out
}

fn row_html(row: &Row) -> String {
    let mut s = format!(
        "<li data-doc=\"{}\"><span class=\"pos\">{}.</span>{}",
        escape(&row.id),
        row.position,
        escape(&row.id)
    );
    if let Some(score) = row.score {
        let _ = write!(
            s,
            "<span class=\"muted\"> score {}</span>",
            escape(&score_text(score))
        );
    }
    let moved = row.moved();
    if !moved.is_empty() {
        let class = match moved.chars().next() {
            Some('↑') => "up",
            Some('↓') => "down",
            _ => "same",
        };
        let _ = write!(
            s,
            " <span class=\"move {class}\">{}</span><span class=\"muted\">{}</span>",
            escape(&moved),
            row.before.map(|b| format!(" was #{b}")).unwrap_or_default()
        );
    } else if !row.lanes.is_empty() {
        let _ = write!(
            s,
            "<span class=\"lanepos\"> · {}</span>",
            escape(&row.lanes.join(" · "))
        );
    }
    if row.gold {
        s.push_str(" <span class=\"relevant\">★ relevant</span>");
    }
    s.push_str("</li>\n");
    s
}

/// The flow as HTML (a `<div class="flow">` of stage blocks, each `data-stage` and with its
/// list as `<ol class="candidates">`, and a per-stage time chart), every value escaped; empty
/// for a two-stage trace.
pub fn flow_html(case: &Case, trace: &Trace) -> String {
    let Some(flow) = Flow::of(case, trace) else {
        return String::new();
    };
    let mut out = String::from("<div class=\"flow\"><b>Pipeline</b>\n<p class=\"flow-line\">");
    let line: Vec<String> = flow
        .line
        .iter()
        .map(|s| format!("<span class=\"flow-stage\">{}</span>", escape(s)))
        .collect();
    out.push_str(&line.join("<span class=\"arrow\"> → </span>"));
    out.push_str("</p>\n<div class=\"stages\">\n");
    for step in &flow.steps {
        let _ = write!(
            out,
            "<div class=\"stage\" data-stage=\"{}\"><h4>{}",
            step.kind.as_str(),
            escape(&step.title)
        );
        for f in &step.facts {
            let _ = write!(out, " <span class=\"fact\">{}</span>", escape(f));
        }
        out.push_str("</h4>\n");
        for n in &step.notes {
            let _ = writeln!(out, "<div class=\"note\">{}</div>", escape(n));
        }
        if let Some(list) = &step.list {
            out.push_str("<ol class=\"candidates\">\n");
            for row in &list.rows {
                out.push_str(&row_html(row));
            }
            out.push_str("</ol>\n");
            if list.hidden > 0 {
                let _ = writeln!(out, "<div class=\"muted\">… {} more</div>", list.hidden);
            }
        }
        out.push_str("</div>\n");
    }
    out.push_str("</div>\n");
    if let Some(total) = flow.total_ms() {
        let bars: Vec<Bar> = flow
            .latency
            .iter()
            .map(|(s, t)| Bar {
                label: s.to_string(),
                value: *t,
                note: ms(*t),
            })
            .collect();
        let _ = writeln!(
            out,
            "<div class=\"stage-latency\"><b>Stage latency</b> <span class=\"muted\">total {}</span>",
            escape(&ms(total))
        );
        out.push_str(&bar_chart(&bars));
        out.push_str("</div>\n");
    }
    if !flow.cache.is_empty() {
        let _ = writeln!(
            out,
            "<div class=\"muted\">Cache: {}</div>",
            escape(&flow.cache.join(" · "))
        );
    }
    out.push_str("</div>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(id: &str, score: f64) -> Value {
        json!({"doc_id": id, "score": score, "text": format!("text of {id}")})
    }

    fn ctx(id: &str, score: f64, position: usize) -> Value {
        let mut v = p(id, score);
        v["position"] = json!(position);
        v
    }

    /// Two lanes over two rewritten queries, RRF, a tenant predicate that removed the gold
    /// `d3`, a rerank that moved `d4` up, a hop, usage and latency of every stage.
    fn fixture() -> (Case, Trace) {
        let case: Case = serde_json::from_value(json!({
            "id": "refunds", "input": {"question": "refund time"},
            "expected": {"relevant": [{"doc_id": "d1"}, {"doc_id": "d3"}]}
        }))
        .unwrap();
        let filter = json!({"field": "tenant", "op": "=", "value": "acme"});
        let call = |lane: &str, q: &str, ids: &[(&str, f64)], cached: bool| {
            let mut v = json!({"lane": lane, "query": q, "cached": cached,
                "retrieval": {"query": q, "depth": 4,
                    "candidates": ids.iter().map(|(d, s)| p(d, *s)).collect::<Vec<_>>(),
                    "filters": [filter.clone()]}});
            if !cached {
                v["latency_ms"] = json!(1.25);
            }
            v
        };
        let trace: Trace = serde_json::from_value(json!({
            "schema_version": 1, "case_id": "refunds",
            "retrieval": {"depth": 4, "candidates": [p("d4", 0.9), p("d1", 0.8), p("d2", 0.1)],
                "hops": [{"query": "refund days", "candidates": [p("d1", 1.0)]}]},
            "pipeline": {
                "question": "refund time",
                "rewrite": {"queries": ["refund time", "refund time days"],
                            "usage": {"model": "rw", "input_tokens": 9, "output_tokens": 5}},
                "retrievals": [call("bm25", "refund time", &[("d1", 2.0), ("d2", 1.0)], false),
                               call("tri", "refund time", &[("d4", 0.5), ("d1", 0.2)], true)],
                "lanes": {"bm25": [p("d1", 2.0), p("d2", 1.0)], "tri": [p("d4", 0.5), p("d1", 0.2)]},
                "fused": {"method": "rrf k=60", "candidates": [p("d1", 0.0325), p("d4", 0.0164), p("d2", 0.0161)]},
                "pre_rerank": [p("d1", 0.0325), p("d4", 0.0164), p("d2", 0.0161)]
            },
            "context": {"passages": [ctx("d4", 0.9, 1),
                                     ctx("d1", 0.8, 2)],
                        "dropped": [{"position": 3, "doc_id": "d2", "reason": "below_top_k"}], "truncated": false},
            "generation": {"answer": "14 days", "citations": ["d1"],
                           "usage": {"model": "gen", "input_tokens": 812, "output_tokens": 40},
                           "ttft_ms": 40.0},
            "latency_ms": {"rewrite": 2.0, "retrieve": 1.25, "fuse": 0.05, "rerank": 3.5, "generate": 50.0},
            "cache": {"execution": false, "rewrite": false, "retrieve": false, "rerank": false,
                      "generate": false, "retrieve_calls": {"hits": 1, "misses": 1}},
            "filter_check": {"predicates": ["tenant = \"acme\""],
                             "gold": [{"doc_id": "d1", "in_corpus": true},
                                      {"doc_id": "d3", "in_corpus": true, "failed": ["tenant = \"acme\""]}]}
        }))
        .unwrap();
        (case, trace)
    }

    #[test]
    fn a_two_stage_trace_has_no_flow() {
        let (case, mut trace) = fixture();
        trace.pipeline = None;
        trace.filter_check = None;
        trace.retrieval.as_mut().unwrap().hops.clear();
        assert!(Flow::of(&case, &trace).is_none());
        assert_eq!(flow_text(&case, &trace), "");
        assert_eq!(flow_html(&case, &trace), "");
        // Predicates alone (a protocol-1 system that reports them) make a flow.
        trace.retrieval.as_mut().unwrap().filters =
            vec![
                serde_json::from_value(json!({"field": "tenant", "op": "=", "value": "acme"}))
                    .unwrap(),
            ];
        let flow = Flow::of(&case, &trace).unwrap();
        assert_eq!(flow.line, ["filter", "context", "answer"]);
    }

    #[test]
    fn the_flow_has_positions_moves_and_lane_positions() {
        let (case, trace) = fixture();
        let flow = Flow::of(&case, &trace).unwrap();
        assert_eq!(
            flow.line,
            [
                "rewrite",
                "lanes (bm25, tri)",
                "fusion (rrf k=60)",
                "filter",
                "rerank",
                "hops",
                "context",
                "answer"
            ]
        );
        let step = |kind| flow.steps.iter().find(|s| s.kind == kind).unwrap();
        let fused = step(StageKind::Fusion).list.as_ref().unwrap();
        assert_eq!(fused.rows[0].lanes, ["bm25 #1", "tri #2"]);
        assert_eq!(fused.rows[2].lanes, ["bm25 #2", "not in tri"]);
        assert!(fused.rows[0].gold);
        let reranked = step(StageKind::Rerank).list.as_ref().unwrap();
        let moves: Vec<String> = reranked.rows.iter().map(Row::moved).collect();
        assert_eq!(moves, ["↑1", "↓1", "="]);
        let filter = step(StageKind::Filter);
        assert!(filter
            .notes
            .contains(&"gold d3: removed by tenant = \"acme\"".to_string()));
        let tri = flow.steps.iter().find(|s| s.title == "Lane tri").unwrap();
        assert_eq!(tri.facts, ["1 call", "1 cached"]);
        assert_eq!(flow.total_ms(), Some(56.8));
        // An imported trace's recorded total (the root span) wins over the sum of its stages.
        let mut recorded = trace.clone();
        recorded.latency_ms.total = Some(70.0);
        assert_eq!(Flow::of(&case, &recorded).unwrap().total_ms(), Some(70.0));
    }

    #[test]
    fn long_lists_keep_gold_documents_below_the_limit() {
        let (case, mut trace) = fixture();
        let many: Vec<Passage> = (0..15)
            .map(|i| serde_json::from_value(p(if i == 13 { "d3" } else { "x" }, 0.0)).unwrap())
            .collect();
        trace
            .pipeline
            .as_mut()
            .unwrap()
            .lanes
            .insert("bm25".into(), many);
        let flow = Flow::of(&case, &trace).unwrap();
        let list = flow
            .steps
            .iter()
            .find(|s| s.title == "Lane bm25")
            .unwrap()
            .list
            .clone()
            .unwrap();
        assert_eq!(list.rows.len(), LIST_LIMIT + 1);
        assert_eq!(list.rows.last().unwrap().position, 14);
        assert_eq!(list.hidden, 4);
    }

    #[test]
    fn flow_text_and_html() {
        let (case, trace) = fixture();
        insta::assert_snapshot!("flow_text", flow_text(&case, &trace));
        insta::assert_snapshot!("flow_html", flow_html(&case, &trace));
    }

    #[test]
    fn flow_html_escapes_what_the_system_returned() {
        let (case, mut trace) = fixture();
        let pipeline = trace.pipeline.as_mut().unwrap();
        pipeline.rewrite.as_mut().unwrap().queries[0] = "<script>x</script>".into();
        pipeline.fused.as_mut().unwrap().method = "<img src=x>".into();
        let html = flow_html(&case, &trace);
        assert!(
            !html.contains("<script>") && !html.contains("<img"),
            "{html}"
        );
        assert!(html.contains("&lt;script&gt;x&lt;/script&gt;"));
    }
}
