//! Retrieval and RAG metrics on JSONL: metadata-filter exclusion and predicates (seed 000 Part
//! 5), context use, nugget scores, entity grounding, ANN recall, freshness lag, expansion and
//! multi-query uplift, cost per request and cache hit rates. The computations are in
//! [`crate::rag`]; entity grounding and context utilisation go through the per-item adapters
//! of [`super::item`].

use std::collections::{BTreeMap, BTreeSet};

use crate::rag::{ann, context, filters, freshness, npy, query, system};
use serde_json::{json, Map, Value};

use super::error::unless_insufficient;
use super::item::{self, ItemInput, Passage};
use super::{
    kind, mean, opt, rate_json, Estimate, MetricError, MetricInput, MetricOutput, MetricSpec,
    OptionKind, OptionSpec,
};

pub(crate) fn metrics() -> Vec<MetricSpec> {
    vec![
        MetricSpec {
            name: "filter_false_exclusion",
            summary: "share of queries whose metadata filter removed every gold document (seed 000 Part 5), plus the per-document rate",
            fields: "gold: [string] — relevant document ids\n\
                     survivors: [string] — ids that passed the filter, or\n\
                     excluded: [string] — ids the filter removed, or\n\
                     filter: {field: value | [values]} — the applied conjunction (needs --docs)\n\
                     retrieved: [string] (optional) — the ranked list after filtering, for recall@k\n\
                     query_id: string (optional)",
            options: const { &[
                OptionSpec::file("docs", "JSONL of documents {\"id\", field: value, …} for `filter` rows"),
                OptionSpec::value("k", "cut-off of recall@k", Some("10")),
            ] },
            run: false_exclusion,
        },
        MetricSpec {
            name: "filter_predicates",
            summary: "micro F1 of extracted filter predicates (field = value) against gold filters, per field too",
            fields: "predicted: {field: value | [values]} — the extracted filter\n\
                     gold: {field: value | [values]} — the correct filter",
            options: &[],
            run: predicates,
        },
        MetricSpec {
            name: "filter_decision",
            summary: "hard filter vs soft boost per predicate: recall, precision and exclusion under each (seed 000 Part 5)",
            fields: "predicate: string — the filter predicate's name\n\
                     gold: [string]\n\
                     survivors: [string] or excluded: [string] — under the hard filter\n\
                     hard: [string] — ranked list with the predicate as a hard filter\n\
                     soft: [string] — ranked list with the predicate as a soft boost",
            options: const { &[
                OptionSpec::value("k", "cut-off of recall@k and precision@k", Some("10")),
                OptionSpec::value("epsilon", "hard needs exclusion_rate < epsilon", Some("0.05")),
                OptionSpec::value("precision-margin", "hard needs hard_precision ≥ soft_precision + margin", Some("0.1")),
            ] },
            run: decision,
        },
        MetricSpec {
            name: "context_utilisation",
            summary: "mean share of retrieved chunks the answer cited (|cited ∩ retrieved| / |retrieved|)",
            fields: "retrieved: [string] — chunk ids placed in the context\ncited: [string] — chunk ids the answer cited or used",
            options: &[],
            run: utilisation,
        },
        MetricSpec {
            name: "nugget_recall",
            summary: "nugget scores as TREC 2024 RAG's AutoNuggetizer (all, vital, strict_all, strict_vital; partial support = 0.5)",
            fields: "nuggets: [{\"importance\": \"vital\"|\"okay\", \"assignment\": \"support\"|\"partial_support\"|\"not_support\"}]\n\
                     (nuggetizer's assign output; other keys such as text and qid are ignored)",
            options: const { &[OptionSpec::value("score", "headline: all, vital, strict_all or strict_vital", Some("all"))] },
            run: nuggets,
        },
        MetricSpec {
            name: "entity_grounding",
            summary: "share of the answer's named entities and numbers found in the context (capitalised spans + numbers, no model)",
            fields: "answer: string\ncontext: string or [string]",
            options: &[],
            run: entity_grounding,
        },
        MetricSpec {
            name: "ann_recall",
            summary: "recall@k of approximate neighbours against exact brute-force neighbours from your vectors",
            fields: "neighbours: [id] — the approximate index's answer, nearest first\n\
                     vector: [number] — the query vector, or\n\
                     query_index: integer — a row of --queries\n\
                     ids are row numbers for .npy vectors, the `id` field for JSONL",
            options: const { &[
                OptionSpec::file("vectors", "corpus vectors: .npy (2-D float32/float64, C order) or JSONL {\"id\", \"vector\"}"),
                OptionSpec::file("queries", "query vectors for `query_index` (.npy or JSONL)"),
                OptionSpec::value("k", "number of neighbours", Some("10")),
                OptionSpec::value("distance", "cosine (1 − cos), dot (−a·b) or l2", Some("cosine")),
                OptionSpec::value("epsilon", "distance slack of the tie-robust recall (ann-benchmarks)", Some("0.001")),
            ] },
            run: ann_recall,
        },
        MetricSpec {
            name: "freshness_lag",
            summary: "p50 (value) and p99 of indexed_at − updated_at in seconds (numpy linear quantiles)",
            fields: "updated_at: RFC 3339 timestamp — the document's commit\nindexed_at: RFC 3339 timestamp or null — when retrieval could see it",
            options: &[],
            run: freshness_lag,
        },
        MetricSpec {
            name: "expansion_uplift",
            summary: "mean paired difference recall@k(expanded) − recall@k(raw query), with its interval",
            fields: "gold: [string]\nbaseline: [string] — ranked list for the raw query\nexpanded: [string] — ranked list for the expanded query",
            options: const { &[OptionSpec::value("k", "cut-off", Some("10"))] },
            run: expansion,
        },
        MetricSpec {
            name: "multi_query_recall",
            summary: "mean paired difference of union recall@k over N rewrites minus single-query recall@k",
            fields: "gold: [string]\nsingle: [string] — ranked list for the original query\nrewrites: [[string]] — one ranked list per rewrite",
            options: const { &[
                OptionSpec::value("k", "cut-off per list", Some("10")),
                OptionSpec::value("include-original", "also put the original query's top-k in the union (true/false)", Some("false")),
            ] },
            run: multi_query,
        },
        MetricSpec {
            name: "cost_per_request",
            summary: "mean cost of a request: Σ usage × price + fixed costs (p50 and p99 too)",
            fields: "usage: {kind: number} — tokens or calls per priced kind\ncosts: {stage: number} (optional) — costs already in currency",
            options: const { &[OptionSpec { name: "prices", help: "JSON file (or inline JSON object) of price per unit of each kind", default: None, kind: OptionKind::FileOrInline }] },
            run: cost,
        },
        MetricSpec {
            name: "cache_hit_rate",
            summary: "hits / lookups per cache layer (embedding, retrieval, kv, …), pooled over requests",
            fields: "cache: {layer: true | false | {\"hits\": n, \"lookups\": m}}",
            options: const { &[OptionSpec::value("layer", "the layer for the headline value (default: all layers pooled)", None)] },
            run: cache,
        },
    ]
}

// ---- shared helpers (also used by the ontology group) ----

/// A `[string]` field.
pub(crate) fn str_list(
    line: usize,
    row: &Map<String, Value>,
    field: &str,
) -> Result<Vec<String>, MetricError> {
    match row.get(field) {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                other => Err(MetricError::at(
                    line,
                    field,
                    format!("expected an array of strings, found {} inside", kind(other)),
                )),
            })
            .collect(),
        Some(other) => Err(MetricError::at(
            line,
            field,
            format!("expected an array of strings, found {}", kind(other)),
        )),
        None => Err(MetricError::at(line, field, "missing field".into())),
    }
}

fn id_set(
    line: usize,
    row: &Map<String, Value>,
    field: &str,
) -> Result<BTreeSet<String>, MetricError> {
    Ok(str_list(line, row, field)?.into_iter().collect())
}

fn usize_option(input: &MetricInput, name: &str) -> Result<usize, MetricError> {
    let k: usize = input.parsed(name, "a positive integer")?.unwrap_or(10);
    if k == 0 {
        return Err(MetricError::usage(format!("--{name} must be at least 1")));
    }
    Ok(k)
}

fn f64_option(input: &MetricInput, name: &str) -> Result<f64, MetricError> {
    input
        .parsed::<f64>(name, "a number")?
        .filter(|x| x.is_finite())
        .ok_or_else(|| MetricError::usage(format!("--{name} needs a finite number")))
}

/// A `{field: value | [values]}` object as a conjunction / predicate set.
fn predicate_object(
    line: usize,
    row: &Map<String, Value>,
    field: &str,
) -> Result<Vec<(String, BTreeSet<String>)>, MetricError> {
    let Some(v) = row.get(field) else {
        return Err(MetricError::at(line, field, "missing field".into()));
    };
    let Value::Object(map) = v else {
        return Err(MetricError::at(
            line,
            field,
            format!("expected an object {{field: value}}, found {}", kind(v)),
        ));
    };
    map.iter()
        .map(|(k, v)| {
            let values = match v {
                Value::Array(items) => items
                    .iter()
                    .map(scalar)
                    .collect::<Option<BTreeSet<String>>>(),
                other => scalar(other).map(|s| BTreeSet::from([s])),
            }
            .ok_or_else(|| {
                MetricError::at(
                    line,
                    field,
                    format!("`{k}`: expected a string, number or boolean, or an array of them"),
                )
            })?;
            Ok((k.clone(), values))
        })
        .collect()
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Gold and survivors from `survivors` or `excluded`.
fn outcome(
    line: usize,
    row: &Map<String, Value>,
    gold: BTreeSet<String>,
) -> Result<Option<filters::FilterOutcome>, MetricError> {
    if row.contains_key("survivors") {
        let survivors = id_set(line, row, "survivors")?;
        return Ok(Some(filters::FilterOutcome { gold, survivors }));
    }
    if row.contains_key("excluded") {
        let excluded = id_set(line, row, "excluded")?;
        let survivors = gold.difference(&excluded).cloned().collect();
        return Ok(Some(filters::FilterOutcome { gold, survivors }));
    }
    Ok(None)
}

/// Documents with their metadata fields, as `--docs` lists them.
type DocFields = Vec<(String, BTreeMap<String, String>)>;

fn load_docs(input: &MetricInput) -> Result<DocFields, MetricError> {
    let (path, text) = input.file_text("docs")?;
    let mut docs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |m: String| MetricError::usage(format!("{path}:{}: {m}", i + 1));
        let Ok(Value::Object(map)) = serde_json::from_str::<Value>(line) else {
            return Err(at("expected a JSON object {\"id\", field: value, …}".into()));
        };
        let id = map
            .get("id")
            .and_then(scalar)
            .ok_or_else(|| at("missing string `id`".into()))?;
        let meta = map
            .iter()
            .filter(|(k, _)| *k != "id")
            .filter_map(|(k, v)| scalar(v).map(|s| (k.clone(), s)))
            .collect();
        docs.push((id, meta));
    }
    Ok(docs)
}

// ---- filters ----

fn false_exclusion(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let k = usize_option(input, "k")?;
    let docs = if input.option("docs").is_some() {
        Some(load_docs(input)?)
    } else {
        None
    };
    let mut outcomes = Vec::new();
    let mut ranked = Vec::new();
    let mut recalls = Vec::new();
    let mut by_predicate: BTreeMap<String, usize> = BTreeMap::new();
    let mut items = Vec::new();
    for (line, row) in &input.rows {
        let gold = id_set(*line, row, "gold")?;
        let (o, failing) = match outcome(*line, row, gold.clone())? {
            Some(o) => (o, None),
            None if row.contains_key("filter") => {
                let Some(docs) = &docs else {
                    return Err(MetricError::at(
                        *line,
                        "filter",
                        "a `filter` row needs --docs FILE with the documents' metadata".into(),
                    ));
                };
                let conj = filters::Conjunction {
                    predicates: predicate_object(*line, row, "filter")?,
                };
                let survivors = docs
                    .iter()
                    .filter(|(_, m)| conj.passes(m))
                    .map(|(id, _)| id.clone())
                    .collect();
                let o = filters::FilterOutcome {
                    gold: gold.clone(),
                    survivors,
                };
                let mut failing: BTreeMap<String, Vec<String>> = BTreeMap::new();
                for g in o.excluded_gold() {
                    let fields = match docs.iter().find(|(id, _)| id == g) {
                        Some((_, m)) => conj.failing(m).into_iter().map(str::to_string).collect(),
                        None => vec!["(not in --docs)".to_string()],
                    };
                    for f in &fields {
                        *by_predicate.entry(f.clone()).or_default() += 1;
                    }
                    failing.insert(g.to_string(), fields);
                }
                (o, Some(failing))
            }
            None => {
                return Err(MetricError::at(
                    *line,
                    "survivors",
                    "missing: give `survivors`, `excluded`, or `filter` with --docs".into(),
                ));
            }
        };
        let run = if row.contains_key("retrieved") {
            Some(str_list(*line, row, "retrieved")?)
        } else {
            None
        };
        let recall = run.as_ref().and_then(|r| query::recall_at_k(&o.gold, r, k));
        if let Some(r) = recall {
            recalls.push(r);
        }
        let mut item = json!({
            "all_gold_excluded": o.all_gold_excluded(),
            "excluded_gold": o.excluded_gold(),
            "recall_at_k": recall,
        });
        if let Some(q) = row.get("query_id") {
            item["query_id"] = q.clone();
        }
        if let Some(f) = failing {
            item["failing_predicates"] = json!(f);
        }
        items.push(item);
        ranked.push(run.unwrap_or_default());
        outcomes.push(o);
    }
    let c = filters::false_exclusion(&outcomes);
    let mut out =
        MetricOutput::proportion(c.queries_all_excluded as u64, c.queries_with_gold as u64)?;
    out.extra
        .insert("queries_with_gold".into(), json!(c.queries_with_gold));
    out.extra
        .insert("queries_all_excluded".into(), json!(c.queries_all_excluded));
    out.extra.insert(
        "document_exclusion_rate".into(),
        rate_json(c.gold_excluded as u64, c.gold_documents as u64)?,
    );
    if !recalls.is_empty() {
        out.extra
            .insert(format!("recall_at_{k}"), opt(mean(&recalls)));
        out.extra.insert(
            "filtered_gold_recall_invalid".into(),
            opt(filters::filtered_gold_recall_invalid(&outcomes, &ranked, k)),
        );
    }
    if !by_predicate.is_empty() {
        out.extra
            .insert("excluded_gold_by_predicate".into(), json!(by_predicate));
    }
    out.items = items;
    Ok(out)
}

fn predicate_set(
    line: usize,
    row: &Map<String, Value>,
    field: &str,
) -> Result<filters::PredicateSet, MetricError> {
    Ok(predicate_object(line, row, field)?
        .into_iter()
        .flat_map(|(f, vs)| vs.into_iter().map(move |v| (f.clone(), v)))
        .collect())
}

fn counts_json(c: &filters::SetCounts) -> Value {
    json!({"precision": opt(c.precision()), "recall": opt(c.recall()), "f1": opt(c.f1()), "tp": c.tp, "fp": c.fp, "fn": c.fn_})
}

fn predicates(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let mut pairs = Vec::new();
    let mut items = Vec::new();
    for (line, row) in &input.rows {
        let p = predicate_set(*line, row, "predicted")?;
        let g = predicate_set(*line, row, "gold")?;
        let mut c = filters::SetCounts::default();
        c.add(&p, &g);
        items.push(json!({"tp": c.tp, "fp": c.fp, "fn": c.fn_, "exact": p == g}));
        pairs.push((p, g));
    }
    let s = filters::predicate_scores(&pairs);
    let mut out = MetricOutput::value(s.micro.f1());
    out.extra
        .insert("precision".into(), opt(s.micro.precision()));
    out.extra.insert("recall".into(), opt(s.micro.recall()));
    out.extra.insert(
        "exact_filter_rate".into(),
        rate_json(s.exact_queries as u64, s.queries as u64)?,
    );
    out.extra.insert(
        "per_field".into(),
        Value::Object(
            s.per_field
                .iter()
                .map(|(f, c)| (f.clone(), counts_json(c)))
                .collect(),
        ),
    );
    out.items = items;
    Ok(out)
}

fn decision(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let rule = filters::DecisionRule {
        k: usize_option(input, "k")?,
        epsilon: f64_option(input, "epsilon")?,
        precision_margin: f64_option(input, "precision-margin")?,
    };
    let mut groups: BTreeMap<String, Vec<filters::HardSoftQuery>> = BTreeMap::new();
    for (line, row) in &input.rows {
        let predicate = input.str_field(*line, row, "predicate")?.to_string();
        let gold = id_set(*line, row, "gold")?;
        let outcome = outcome(*line, row, gold)?.ok_or_else(|| {
            MetricError::at(
                *line,
                "survivors",
                "missing: give `survivors` or `excluded` under the hard filter".into(),
            )
        })?;
        groups
            .entry(predicate)
            .or_default()
            .push(filters::HardSoftQuery {
                outcome,
                hard: str_list(*line, row, "hard")?,
                soft: str_list(*line, row, "soft")?,
            });
    }
    let (mut excluded, mut total) = (0usize, 0usize);
    let mut per = Map::new();
    for (p, qs) in &groups {
        let Some(r) = filters::hard_or_soft(qs, &rule) else {
            per.insert(p.clone(), json!({"queries": 0, "decision": null}));
            continue;
        };
        let e = qs.iter().filter(|q| q.outcome.all_gold_excluded()).count();
        excluded += e;
        total += r.queries;
        per.insert(
            p.clone(),
            json!({
                "queries": r.queries,
                "hard_recall": r.hard_recall,
                "soft_recall": r.soft_recall,
                "hard_precision": r.hard_precision,
                "soft_precision": r.soft_precision,
                "exclusion_rate": rate_json(e as u64, r.queries as u64)?,
                "decision": r.decision.as_str(),
            }),
        );
    }
    let mut out = MetricOutput::proportion(excluded as u64, total as u64)?;
    out.extra.insert(
        "rule".into(),
        json!(format!(
            "hard iff exclusion_rate < {} and hard_precision ≥ soft_precision + {} (k = {})",
            rule.epsilon, rule.precision_margin, rule.k
        )),
    );
    out.extra.insert("predicates".into(), Value::Object(per));
    Ok(out)
}

// ---- context and generation ----

fn utilisation(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let (mut values, mut items) = (Vec::new(), Vec::new());
    let (mut cited_in, mut retrieved_n, mut outside, mut skipped) =
        (0usize, 0usize, 0usize, 0usize);
    for (line, row) in &input.rows {
        let retrieved = str_list(*line, row, "retrieved")?;
        let cited = str_list(*line, row, "cited")?;
        let it = ItemInput {
            context: Some(
                retrieved
                    .iter()
                    .map(|id| Passage {
                        id: Some(id),
                        text: None,
                    })
                    .collect(),
            ),
            citations: cited.iter().map(String::as_str).collect(),
            ..ItemInput::default()
        };
        let u = item::context_utilisation(&it)
            .map_err(|e| MetricError::at(*line, "retrieved", e.to_string()))?;
        outside += u.cited_outside.len();
        cited_in += u.cited - u.cited_outside.len();
        retrieved_n += u.context;
        match u.value {
            Some(v) => values.push(v),
            None => skipped += 1,
        }
        items.push(
            json!({"context_utilisation": u.value, "cited_outside_context": u.cited_outside}),
        );
    }
    let mut out = MetricOutput::mean(&values)?;
    out.extra.insert(
        "pooled".into(),
        opt((retrieved_n > 0).then(|| cited_in as f64 / retrieved_n as f64)),
    );
    out.extra
        .insert("cited_outside_context".into(), json!(outside));
    out.extra
        .insert("skipped_no_retrieved".into(), json!(skipped));
    out.items = items;
    Ok(out)
}

fn nuggets(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let headline = input.option("score").unwrap_or("all");
    if !["all", "vital", "strict_all", "strict_vital"].contains(&headline) {
        return Err(MetricError::usage(format!(
            "--score {headline}: expected all, vital, strict_all or strict_vital"
        )));
    }
    let mut cols: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut items = Vec::new();
    for (line, row) in &input.rows {
        let Some(Value::Array(list)) = row.get("nuggets") else {
            return Err(MetricError::at(
                *line,
                "nuggets",
                "expected an array of {importance, assignment} objects".into(),
            ));
        };
        let mut parsed = Vec::new();
        for (i, n) in list.iter().enumerate() {
            let get = |k: &str| n.get(k).and_then(Value::as_str);
            let imp = get("importance")
                .and_then(context::Importance::parse)
                .ok_or_else(|| {
                    MetricError::at(
                        *line,
                        "nuggets",
                        format!("nugget {i}: `importance` must be \"vital\" or \"okay\""),
                    )
                })?;
            let asg = get("assignment").and_then(context::Assignment::parse).ok_or_else(|| {
                MetricError::at(*line, "nuggets", format!("nugget {i}: `assignment` must be \"support\", \"partial_support\" or \"not_support\""))
            })?;
            parsed.push((imp, asg));
        }
        let s = context::nugget_scores(&parsed);
        for (name, v) in [
            ("all", s.all),
            ("vital", s.vital),
            ("strict_all", s.strict_all),
            ("strict_vital", s.strict_vital),
        ] {
            if let Some(v) = v {
                cols.entry(name).or_default().push(v);
            }
        }
        let mut item = json!({"all_score": s.all, "vital_score": s.vital, "strict_all_score": s.strict_all, "strict_vital_score": s.strict_vital});
        if let Some(q) = row.get("qid") {
            item["qid"] = q.clone();
        }
        items.push(item);
    }
    let mut out = MetricOutput::mean(cols.get(headline).map_or(&[][..], Vec::as_slice))?;
    for name in ["all", "vital", "strict_all", "strict_vital"] {
        let v = cols.get(name).map_or(&[][..], Vec::as_slice);
        out.extra.insert(format!("{name}_score"), opt(mean(v)));
    }
    out.extra.insert(
        "answers_without_vital_nuggets".into(),
        json!(input.rows.len() - cols.get("vital").map_or(0, Vec::len)),
    );
    out.items = items;
    Ok(out)
}

/// A string field, or an array of strings (as passages).
fn text_or_list(
    line: usize,
    row: &Map<String, Value>,
    field: &str,
) -> Result<Vec<String>, MetricError> {
    match row.get(field) {
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(_)) => str_list(line, row, field),
        Some(other) => Err(MetricError::at(
            line,
            field,
            format!(
                "expected a string or an array of strings, found {}",
                kind(other)
            ),
        )),
        None => Err(MetricError::at(line, field, "missing field".into())),
    }
}

fn entity_grounding(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let (mut values, mut items) = (Vec::new(), Vec::new());
    let (mut grounded, mut total) = (0usize, 0usize);
    for (line, row) in &input.rows {
        let answer = input.str_field(*line, row, "answer")?;
        let ctx = text_or_list(*line, row, "context")?;
        let it = ItemInput {
            answer: Some(answer),
            context: Some(
                ctx.iter()
                    .map(|text| Passage {
                        id: None,
                        text: Some(text),
                    })
                    .collect(),
            ),
            ..ItemInput::default()
        };
        let g = item::entity_grounding(&it)
            .map_err(|e| MetricError::at(*line, "context", e.to_string()))?;
        grounded += g.grounded.len();
        total += g.grounded.len() + g.ungrounded.len();
        if let Some(r) = g.rate() {
            values.push(r);
        }
        items.push(json!({
            "entity_grounding": g.rate(),
            "grounded": g.grounded.iter().map(context::Entity::text).collect::<Vec<_>>(),
            "ungrounded": g.ungrounded.iter().map(context::Entity::text).collect::<Vec<_>>(),
        }));
    }
    let mut out = MetricOutput::mean(&values)?;
    out.extra.insert(
        "pooled".into(),
        opt((total > 0).then(|| grounded as f64 / total as f64)),
    );
    out.extra.insert(
        "answers_without_entities".into(),
        json!(input.rows.len() - values.len()),
    );
    out.items = items;
    Ok(out)
}

// ---- index and query ----

/// Vectors from `.npy` (ids = row numbers) or JSONL `{"id", "vector"}`.
fn load_vectors(
    input: &MetricInput,
    option: &str,
) -> Result<(npy::Matrix, Vec<String>), MetricError> {
    let file = input.file(option)?;
    let (path, bytes) = (&file.path, &file.bytes);
    if bytes.starts_with(b"\x93NUMPY") {
        let m = npy::parse_npy(bytes)
            .map_err(|e| MetricError::usage(format!("--{option} {path}: {e}")))?;
        let ids = (0..m.rows).map(|i| i.to_string()).collect();
        return Ok((m, ids));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| {
        MetricError::usage(format!("--{option} {path}: neither .npy nor UTF-8 JSONL"))
    })?;
    let (mut data, mut ids, mut cols) = (Vec::new(), Vec::new(), None);
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |m: &str| MetricError::usage(format!("{path}:{}: {m}", i + 1));
        let v: Value = serde_json::from_str(line).map_err(|_| at("malformed JSON"))?;
        let id = v
            .get("id")
            .and_then(scalar)
            .ok_or_else(|| at("missing `id`"))?;
        let vec: Vec<f64> = v
            .get("vector")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().map(Value::as_f64).collect())
            .ok_or_else(|| at("`vector` must be an array of numbers"))?;
        if *cols.get_or_insert(vec.len()) != vec.len() {
            return Err(at("vectors of different lengths"));
        }
        ids.push(id);
        data.extend(vec);
    }
    Ok((
        npy::Matrix {
            rows: ids.len(),
            cols: cols.unwrap_or(0),
            data,
        },
        ids,
    ))
}

fn ann_recall(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let k = usize_option(input, "k")?;
    let distance = input
        .option("distance")
        .and_then(ann::Distance::parse)
        .ok_or_else(|| MetricError::usage("--distance: expected cosine, dot or l2".into()))?;
    let epsilon = f64_option(input, "epsilon")?;
    let (corpus, ids) = load_vectors(input, "vectors")?;
    let index: BTreeMap<&str, usize> = ids
        .iter()
        .enumerate()
        .map(|(i, s)| (s.as_str(), i))
        .collect();
    let queries = if input.option("queries").is_some() {
        Some(load_vectors(input, "queries")?)
    } else {
        None
    };
    let (mut by_id, mut by_distance, mut items) = (Vec::new(), Vec::new(), Vec::new());
    for (line, row) in &input.rows {
        let q: Vec<f64> = if let Some(v) = row.get("vector") {
            v.as_array()
                .and_then(|a| a.iter().map(Value::as_f64).collect())
                .ok_or_else(|| {
                    MetricError::at(*line, "vector", "expected an array of numbers".into())
                })?
        } else if let Some(v) = row.get("query_index") {
            let i = v.as_u64().ok_or_else(|| {
                MetricError::at(
                    *line,
                    "query_index",
                    "expected a non-negative integer".into(),
                )
            })? as usize;
            let Some((m, _)) = &queries else {
                return Err(MetricError::at(
                    *line,
                    "query_index",
                    "needs --queries FILE".into(),
                ));
            };
            if i >= m.rows {
                return Err(MetricError::at(
                    *line,
                    "query_index",
                    format!("{i} is past the {} query vectors", m.rows),
                ));
            }
            m.row(i).to_vec()
        } else {
            return Err(MetricError::at(
                *line,
                "vector",
                "missing: give `vector` or `query_index`".into(),
            ));
        };
        if q.len() != corpus.cols {
            return Err(MetricError::at(
                *line,
                "vector",
                format!(
                    "{} dimensions where the corpus has {}",
                    q.len(),
                    corpus.cols
                ),
            ));
        }
        let approx: Vec<usize> = str_list(*line, row, "neighbours")?
            .iter()
            .map(|n| {
                index.get(n.as_str()).copied().ok_or_else(|| {
                    MetricError::at(
                        *line,
                        "neighbours",
                        format!("unknown id `{n}` (not in --vectors)"),
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        let exact = ann::exact_neighbours(&corpus, &q, k, distance);
        let Some(r) = ann::ann_recall(&corpus, &q, &approx, &exact, distance, epsilon) else {
            return Err(MetricError::usage("--vectors holds no vector".into()));
        };
        by_id.push(r.ids);
        by_distance.push(r.distance);
        items.push(json!({
            "recall": r.ids,
            "distance_recall": r.distance,
            "exact": exact.iter().map(|(i, _)| ids[*i].clone()).collect::<Vec<_>>(),
        }));
    }
    let mut out = MetricOutput::mean(&by_id)?;
    out.extra
        .insert("distance_recall".into(), opt(mean(&by_distance)));
    out.extra.insert("k".into(), json!(k));
    out.items = items;
    Ok(out)
}

fn timestamp(
    line: usize,
    row: &Map<String, Value>,
    field: &str,
) -> Result<Option<freshness::Instant>, MetricError> {
    match row.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => freshness::parse_rfc3339(s)
            .map(Some)
            .map_err(|e| MetricError::at(line, field, e.to_string())),
        Some(other) => Err(MetricError::at(
            line,
            field,
            format!("expected an RFC 3339 string, found {}", kind(other)),
        )),
    }
}

fn freshness_lag(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let (mut lags, mut items) = (Vec::new(), Vec::new());
    let (mut not_indexed, mut stale) = (0usize, 0usize);
    for (line, row) in &input.rows {
        let updated = timestamp(*line, row, "updated_at")?
            .ok_or_else(|| MetricError::at(*line, "updated_at", "missing field".into()))?;
        let lag = match timestamp(*line, row, "indexed_at")? {
            None => {
                not_indexed += 1;
                None
            }
            Some(indexed) => {
                let l = freshness::lag_seconds(updated, indexed);
                if l < 0.0 {
                    stale += 1;
                } else {
                    lags.push(l);
                }
                Some(l)
            }
        };
        items.push(json!({"lag_seconds": lag}));
    }
    let q = |p: f64| unless_insufficient(oloproof_stats::quantile(&lags, p));
    let mut out = MetricOutput::value(q(0.5)?);
    out.extra.insert("p50_seconds".into(), opt(q(0.5)?));
    out.extra.insert("p99_seconds".into(), opt(q(0.99)?));
    out.extra.insert("max_seconds".into(), opt(q(1.0)?));
    out.extra.insert("n".into(), json!(lags.len()));
    out.extra.insert("not_indexed".into(), json!(not_indexed));
    out.extra.insert("stale_index_entries".into(), json!(stale));
    out.extra.insert(
        "quantile_method".into(),
        json!("linear interpolation (numpy default, Hyndman-Fan 7)"),
    );
    out.items = items;
    Ok(out)
}

/// [`Estimate::paired_difference`] of `a − b`, with its p-value and both means in the extras.
fn paired_output(
    a: &[f64],
    b: &[f64],
    a_name: &str,
    b_name: &str,
) -> Result<MetricOutput, MetricError> {
    let (estimate, p_value) = Estimate::paired_difference(a, b)?;
    let mut out = MetricOutput {
        estimate,
        ..MetricOutput::default()
    };
    if let Some(p) = p_value {
        out.extra.insert("p_value".into(), json!(p));
    }
    out.extra.insert(a_name.into(), opt(mean(a)));
    out.extra.insert(b_name.into(), opt(mean(b)));
    out.extra.insert("n".into(), json!(a.len()));
    Ok(out)
}

fn expansion(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let k = usize_option(input, "k")?;
    let (mut base, mut exp, mut items, mut skipped) = (Vec::new(), Vec::new(), Vec::new(), 0usize);
    for (line, row) in &input.rows {
        let gold = id_set(*line, row, "gold")?;
        let b = query::recall_at_k(&gold, &str_list(*line, row, "baseline")?, k);
        let e = query::recall_at_k(&gold, &str_list(*line, row, "expanded")?, k);
        if let (Some(b), Some(e)) = (b, e) {
            base.push(b);
            exp.push(e);
        } else {
            skipped += 1;
        }
        items.push(json!({"baseline_recall": b, "expanded_recall": e}));
    }
    let mut out = paired_output(&exp, &base, "expanded_recall", "baseline_recall")?;
    out.extra.insert("skipped_no_gold".into(), json!(skipped));
    out.items = items;
    Ok(out)
}

fn multi_query(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let k = usize_option(input, "k")?;
    let include = match input.option("include-original").unwrap_or("false") {
        "true" => true,
        "false" => false,
        other => {
            return Err(MetricError::usage(format!(
                "--include-original {other}: expected true or false"
            )))
        }
    };
    let (mut single, mut union, mut sizes, mut items) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (line, row) in &input.rows {
        let gold = id_set(*line, row, "gold")?;
        let s = str_list(*line, row, "single")?;
        let Some(Value::Array(lists)) = row.get("rewrites") else {
            return Err(MetricError::at(
                *line,
                "rewrites",
                "expected an array of ranked lists".into(),
            ));
        };
        let mut rewrites = Vec::new();
        for l in lists {
            let mut m = Map::new();
            m.insert("rewrites".into(), l.clone());
            rewrites.push(str_list(*line, &m, "rewrites")?);
        }
        if include {
            rewrites.push(s.clone());
        }
        let sr = query::recall_at_k(&gold, &s, k);
        let ur = query::union_recall_at_k(&gold, &rewrites, k);
        if let (Some(sr), Some(ur)) = (sr, ur) {
            single.push(sr);
            union.push(ur.recall);
            sizes.push(ur.union_size as f64);
        }
        items.push(json!({"single_recall": sr, "union_recall": ur.map(|u| u.recall), "union_size": ur.map(|u| u.union_size)}));
    }
    let mut out = paired_output(&union, &single, "union_recall", "single_recall")?;
    out.extra
        .insert("mean_union_size".into(), opt(mean(&sizes)));
    out.items = items;
    Ok(out)
}

// ---- system ----

fn number_map(
    line: usize,
    row: &Map<String, Value>,
    field: &str,
) -> Result<BTreeMap<String, f64>, MetricError> {
    match row.get(field) {
        None => Ok(BTreeMap::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| {
                v.as_f64()
                    .filter(|x| x.is_finite())
                    .map(|x| (k.clone(), x))
                    .ok_or_else(|| {
                        MetricError::at(line, field, format!("`{k}`: expected a finite number"))
                    })
            })
            .collect(),
        Some(other) => Err(MetricError::at(
            line,
            field,
            format!("expected an object {{kind: number}}, found {}", kind(other)),
        )),
    }
}

fn cost(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let spec = input.option("prices").ok_or_else(|| {
        MetricError::usage(
            "cost_per_request needs --prices FILE (JSON {kind: price per unit})".into(),
        )
    })?;
    let text = if spec.trim_start().starts_with('{') {
        spec.to_string()
    } else {
        input.file_text("prices")?.1.to_string()
    };
    let prices: BTreeMap<String, f64> = serde_json::from_str(&text).map_err(|e| {
        MetricError::usage(format!("--prices: expected a JSON object of numbers: {e}"))
    })?;
    let (mut costs, mut items) = (Vec::new(), Vec::new());
    for (line, row) in &input.rows {
        let usage = number_map(*line, row, "usage")?;
        let fixed: Vec<f64> = number_map(*line, row, "costs")?.into_values().collect();
        let c = system::request_cost(&usage, &prices, &fixed).map_err(|k| {
            MetricError::at(*line, "usage", format!("no price for `{k}` in --prices"))
        })?;
        costs.push(c);
        items.push(json!({"cost": c}));
    }
    let mut out = MetricOutput::mean(&costs)?;
    let q = |p: f64| unless_insufficient(oloproof_stats::quantile(&costs, p));
    out.extra.insert("p50".into(), opt(q(0.5)?));
    out.extra.insert("p99".into(), opt(q(0.99)?));
    out.extra
        .insert("total".into(), json!(costs.iter().sum::<f64>()));
    out.items = items;
    Ok(out)
}

fn cache(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let mut records: Vec<(String, u64, u64)> = Vec::new();
    let mut items = Vec::new();
    for (line, row) in &input.rows {
        let Some(Value::Object(layers)) = row.get("cache") else {
            return Err(MetricError::at(
                *line,
                "cache",
                "expected an object {layer: hit}".into(),
            ));
        };
        for (layer, v) in layers {
            let (h, l) = match v {
                Value::Bool(b) => (u64::from(*b), 1),
                Value::Object(m) => {
                    let get = |k: &str| m.get(k).and_then(Value::as_u64);
                    match (get("hits"), get("lookups")) {
                        (Some(h), Some(l)) if h <= l => (h, l),
                        _ => {
                            return Err(MetricError::at(
                                *line,
                                "cache",
                                format!(
                                "`{layer}`: expected {{\"hits\": n, \"lookups\": m}} with n ≤ m"
                            ),
                            ))
                        }
                    }
                }
                other => {
                    return Err(MetricError::at(
                        *line,
                        "cache",
                        format!(
                            "`{layer}`: expected a boolean or {{hits, lookups}}, found {}",
                            kind(other)
                        ),
                    ))
                }
            };
            records.push((layer.clone(), h, l));
        }
        items.push(Value::Object(layers.clone()));
    }
    let rates = system::cache_hit_rates(records.iter().map(|(l, h, n)| (l.as_str(), *h, *n)));
    let (hits, lookups) = match input.option("layer") {
        Some(layer) => {
            let c = rates.get(layer).ok_or_else(|| {
                MetricError::usage(format!("--layer {layer}: no such layer in the input"))
            })?;
            (c.hits, c.lookups)
        }
        None => rates
            .values()
            .fold((0, 0), |(h, l), c| (h + c.hits, l + c.lookups)),
    };
    let mut out = MetricOutput::proportion(hits, lookups)?;
    out.extra.insert(
        "layers".into(),
        Value::Object(
            rates
                .iter()
                .map(|(l, c)| Ok((l.clone(), rate_json(c.hits, c.lookups)?)))
                .collect::<Result<_, MetricError>>()?,
        ),
    );
    out.items = items;
    Ok(out)
}
