//! Ontology metrics on JSONL (seed 000 Part 7): hierarchical F1, Wu–Palmer similarity and
//! confusion rates over a taxonomy file, entity linking, JSON Schema validity, vocabulary
//! conformance, citation completeness, provenance depth and reproducibility. The computations
//! are in `crate::ontology`.

use std::collections::BTreeSet;

use crate::ontology::{
    audit, conformance, confusion, hierarchical, linking, taxonomy::Taxonomy, wup,
};
use serde_json::{json, Map, Value};

use super::item::{self, ItemInput};
use super::rag::str_list;
use super::{kind, opt, rate_json, MetricError, MetricInput, MetricOutput, MetricSpec, OptionSpec};

const TAXONOMY: OptionSpec = OptionSpec::file(
    "taxonomy",
    "the DAG: JSON [{\"child\", \"parent\"}] or CSV child,parent lines",
);

pub(crate) fn metrics() -> Vec<MetricSpec> {
    vec![
        MetricSpec {
            name: "hierarchical_f1",
            summary: "hierarchical F1 (Kosmopoulos et al. 2015): label sets augmented with ancestors, root excluded, micro-averaged",
            fields: "predicted: string or [string] — predicted label(s)\ntrue: string or [string] — true label(s)",
            options: &[TAXONOMY],
            run: hierarchical_f1,
        },
        MetricSpec {
            name: "wup_similarity",
            summary: "mean Wu–Palmer similarity of predicted and true nodes, as NLTK's wup_similarity on your taxonomy",
            fields: "predicted: string\ntrue: string",
            options: &[TAXONOMY],
            run: wup_mean,
        },
        MetricSpec {
            name: "hierarchy_confusion",
            summary: "error rate, and the shares of errors toward a sibling, an ancestor (parent), a descendant or elsewhere",
            fields: "predicted: string\ntrue: string",
            options: &[TAXONOMY],
            run: confusion_rates,
        },
        MetricSpec {
            name: "entity_linking",
            summary: "end-to-end entity-linking F1 (exact span and entity), with mention P/R/F1, disambiguation accuracy and NIL scores",
            fields: "gold: [{\"start\": int, \"end\": int, \"entity\": string | null}] — null is NIL\npredicted: [{\"start\", \"end\", \"entity\"}]",
            options: &[],
            run: entity_linking,
        },
        MetricSpec {
            name: "schema_validity",
            summary: "share of outputs that parse and validate against a JSON Schema (draft 2020-12)",
            fields: "output: string (JSON text, parsed) or any JSON value (validated as is)",
            options: const { &[OptionSpec::file("schema", "the JSON Schema file")] },
            run: schema_validity,
        },
        MetricSpec {
            name: "vocabulary_conformance",
            summary: "share of emitted values that belong to the controlled vocabulary",
            fields: "values: [string] — the ids or terms the output used",
            options: const { &[OptionSpec::file("vocabulary", "one term per line, or a JSON array of strings")] },
            run: vocabulary,
        },
        MetricSpec {
            name: "citation_completeness",
            summary: "share of factual claims with at least one verifiable citation (document or chunk id)",
            fields: "claims: [{\"citations\": [{\"document_id\"?: string, \"chunk_id\"?: string}], \"factual\"?: bool (default true)}]",
            options: &[],
            run: citation_completeness,
        },
        MetricSpec {
            name: "provenance_depth",
            summary: "share of citations that reach a source document with a stable id (not only a chunk hash)",
            fields: "claims: [{\"citations\": [{\"document_id\"?: string, \"chunk_id\"?: string}], \"factual\"?: bool (default true)}]",
            options: &[],
            run: provenance_depth,
        },
        MetricSpec {
            name: "reproducibility",
            summary: "share of re-run queries whose answers are all identical (fixed snapshot)",
            fields: "query_id: string\nanswer: string — one row per run",
            options: &[],
            run: reproducibility,
        },
    ]
}

fn load_taxonomy(input: &MetricInput) -> Result<(String, Taxonomy), MetricError> {
    let (path, text) = input.file_text("taxonomy")?;
    let parsed = if path.ends_with(".json") || text.trim_start().starts_with('[') {
        Taxonomy::parse_json(text)
    } else {
        Taxonomy::parse_csv(text)
    };
    parsed
        .map(|t| (path.to_string(), t))
        .map_err(|e| MetricError::usage(format!("--taxonomy {path}: {e}")))
}

fn labels(
    tax: &Taxonomy,
    path: &str,
    line: usize,
    row: &Map<String, Value>,
    field: &str,
) -> Result<Vec<usize>, MetricError> {
    let names = match row.get(field) {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(_)) => str_list(line, row, field)?,
        Some(other) => {
            return Err(MetricError::at(
                line,
                field,
                format!(
                    "expected a label or an array of labels, found {}",
                    kind(other)
                ),
            ))
        }
        None => return Err(MetricError::at(line, field, "missing field".into())),
    };
    names
        .iter()
        .map(|n| {
            tax.id(n).ok_or_else(|| {
                MetricError::at(
                    line,
                    field,
                    format!("unknown label `{n}` (not in --taxonomy {path})"),
                )
            })
        })
        .collect()
}

fn one_label(
    tax: &Taxonomy,
    path: &str,
    line: usize,
    row: &Map<String, Value>,
    field: &str,
) -> Result<usize, MetricError> {
    match row.get(field) {
        Some(Value::String(_)) => Ok(labels(tax, path, line, row, field)?[0]),
        Some(other) => Err(MetricError::at(
            line,
            field,
            format!("expected one label (a string), found {}", kind(other)),
        )),
        None => Err(MetricError::at(line, field, "missing field".into())),
    }
}

fn hierarchical_f1(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let (path, tax) = load_taxonomy(input)?;
    let mut pairs = Vec::new();
    let mut items = Vec::new();
    for (line, row) in &input.rows {
        let p = labels(&tax, &path, *line, row, "predicted")?;
        let t = labels(&tax, &path, *line, row, "true")?;
        let one = hierarchical::hierarchical_scores(&tax, &[(p.clone(), t.clone())]);
        items.push(
            json!({"hP": opt(one.precision()), "hR": opt(one.recall()), "hF1": opt(one.f1())}),
        );
        pairs.push((p, t));
    }
    let c = hierarchical::hierarchical_scores(&tax, &pairs);
    let mut out = MetricOutput::value(c.f1());
    out.extra.insert("hP".into(), opt(c.precision()));
    out.extra.insert("hR".into(), opt(c.recall()));
    out.extra.insert("overlap".into(), json!(c.overlap));
    out.extra.insert("predicted".into(), json!(c.predicted));
    out.extra.insert("true".into(), json!(c.truth));
    out.extra.insert(
        "excluded_root".into(),
        tax.single_root()
            .map_or(Value::Null, |r| json!(tax.name(r))),
    );
    out.items = items;
    Ok(out)
}

fn wup_mean(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let (path, tax) = load_taxonomy(input)?;
    let (mut values, mut items) = (Vec::new(), Vec::new());
    for (line, row) in &input.rows {
        let p = one_label(&tax, &path, *line, row, "predicted")?;
        let t = one_label(&tax, &path, *line, row, "true")?;
        let s = wup::wup_similarity(&tax, p, t);
        if let Some(s) = s {
            values.push(s);
        }
        items.push(json!({"wup_similarity": s}));
    }
    let mut out = MetricOutput::mean(&values)?;
    out.extra
        .insert("simulated_root".into(), json!(tax.roots().len() > 1));
    out.items = items;
    Ok(out)
}

fn confusion_rates(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let (path, tax) = load_taxonomy(input)?;
    let mut c = confusion::ConfusionCounts::default();
    let mut items = Vec::new();
    for (line, row) in &input.rows {
        let p = one_label(&tax, &path, *line, row, "predicted")?;
        let t = one_label(&tax, &path, *line, row, "true")?;
        let k = c.add(&tax, p, t);
        items.push(json!({"error": k.map(confusion::ErrorKind::as_str)}));
    }
    let e = c.errors();
    let mut out = MetricOutput::proportion(e as u64, (e + c.correct) as u64)?;
    for (name, n) in [
        ("sibling", c.sibling),
        ("parent", c.parent),
        ("descendant", c.descendant),
        ("other", c.other),
    ] {
        out.extra.insert(
            format!("{name}_share_of_errors"),
            rate_json(n as u64, e as u64)?,
        );
    }
    out.items = items;
    Ok(out)
}

fn mentions(
    line: usize,
    row: &Map<String, Value>,
    field: &str,
) -> Result<Vec<linking::Mention>, MetricError> {
    let Some(Value::Array(list)) = row.get(field) else {
        return Err(MetricError::at(
            line,
            field,
            "expected an array of {start, end, entity} objects".into(),
        ));
    };
    list.iter()
        .enumerate()
        .map(|(i, m)| {
            let bad = |what: &str| MetricError::at(line, field, format!("mention {i}: {what}"));
            let off = |k: &str| {
                m.get(k)
                    .and_then(Value::as_u64)
                    .map(|x| x as usize)
                    .ok_or_else(|| bad(&format!("`{k}` must be a non-negative integer")))
            };
            let (start, end) = (off("start")?, off("end")?);
            if end < start {
                return Err(bad("`end` is before `start`"));
            }
            let entity = match m.get("entity") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => return Err(bad("`entity` must be a string or null (NIL)")),
            };
            Ok(linking::Mention { start, end, entity })
        })
        .collect()
}

fn entity_linking(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let mut c = linking::LinkingCounts::default();
    let mut items = Vec::new();
    for (line, row) in &input.rows {
        let g = mentions(*line, row, "gold")?;
        let p = mentions(*line, row, "predicted")?;
        let mut one = linking::LinkingCounts::default();
        one.add(&g, &p);
        c.add(&g, &p);
        items.push(json!({"linking_f1": opt(one.linking_f1()), "span_matches": one.span_matches, "correct_links": one.correct_links}));
    }
    let mut out = MetricOutput::value(c.linking_f1());
    for (k, v) in [
        ("linking_precision", c.linking_precision()),
        ("linking_recall", c.linking_recall()),
        ("mention_precision", c.mention_precision()),
        ("mention_recall", c.mention_recall()),
        ("mention_f1", c.mention_f1()),
        ("disambiguation_accuracy", c.disambiguation_accuracy()),
        ("nil_precision", c.nil_precision()),
        ("nil_recall", c.nil_recall()),
        ("over_linking_rate", c.over_linking_rate()),
    ] {
        out.extra.insert(k.into(), opt(v));
    }
    out.extra.insert("gold_mentions".into(), json!(c.gold));
    out.extra
        .insert("predicted_mentions".into(), json!(c.predicted));
    out.items = items;
    Ok(out)
}

fn schema_validity(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let (path, text) = input.file_text("schema")?;
    let schema: Value = serde_json::from_str(text)
        .map_err(|e| MetricError::usage(format!("--schema {path}: not JSON: {e}")))?;
    let v = conformance::SchemaValidator::new(&schema)
        .map_err(|e| MetricError::usage(format!("--schema {path}: {e}")))?;
    let (mut valid, mut items) = (0usize, Vec::new());
    for (line, row) in &input.rows {
        let it = ItemInput {
            output: row.get("output"),
            ..ItemInput::default()
        };
        let violations = item::schema_validity(&v, &it)
            .map_err(|_| MetricError::at(*line, "output", "missing field".into()))?;
        valid += usize::from(violations.is_empty());
        items.push(json!({
            "valid": violations.is_empty(),
            "errors": violations.iter().map(|x| json!({"instance_path": x.instance_path, "schema_path": x.schema_path, "message": x.message})).collect::<Vec<_>>(),
        }));
    }
    let mut out = MetricOutput::proportion(valid as u64, input.rows.len() as u64)?;
    out.extra.insert("valid".into(), json!(valid));
    out.extra.insert("n".into(), json!(input.rows.len()));
    out.items = items;
    Ok(out)
}

fn vocabulary(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let (path, text) = input.file_text("vocabulary")?;
    let vocab: BTreeSet<String> = if text.trim_start().starts_with('[') {
        serde_json::from_str::<Vec<String>>(text)
            .map_err(|e| {
                MetricError::usage(format!(
                    "--vocabulary {path}: expected a JSON array of strings: {e}"
                ))
            })?
            .into_iter()
            .collect()
    } else {
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut c = conformance::VocabularyCounts::default();
    let mut items = Vec::new();
    for (line, row) in &input.rows {
        let values = str_list(*line, row, "values")?;
        let refs: Vec<&str> = values.iter().map(String::as_str).collect();
        let outside = c.add(&refs, &vocab);
        items.push(json!({"outside_vocabulary": outside}));
    }
    let mut out = MetricOutput::value(c.rate());
    out.extra.insert("values".into(), json!(c.values));
    out.extra
        .insert("in_vocabulary".into(), json!(c.in_vocabulary));
    out.items = items;
    Ok(out)
}

fn audit_counts(input: &MetricInput) -> Result<(audit::AuditCounts, Vec<Value>), MetricError> {
    let mut total = audit::AuditCounts::default();
    let mut items = Vec::new();
    for (line, row) in &input.rows {
        let Some(Value::Array(claims)) = row.get("claims") else {
            return Err(MetricError::at(
                *line,
                "claims",
                "expected an array of {citations, factual} objects".into(),
            ));
        };
        let mut one = audit::AuditCounts::default();
        for (i, claim) in claims.iter().enumerate() {
            let bad = |what: &str| MetricError::at(*line, "claims", format!("claim {i}: {what}"));
            let factual = match claim.get("factual") {
                None => true,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err(bad("`factual` must be a boolean")),
            };
            let cites = match claim.get("citations") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(list)) => list
                    .iter()
                    .map(|c| {
                        let id = |k: &str| match c.get(k) {
                            None | Some(Value::Null) => Ok(None),
                            Some(Value::String(s)) => Ok(Some(s.clone())),
                            Some(_) => Err(bad(&format!("citation `{k}` must be a string"))),
                        };
                        Ok(audit::Citation {
                            document_id: id("document_id")?,
                            chunk_id: id("chunk_id")?,
                        })
                    })
                    .collect::<Result<_, MetricError>>()?,
                Some(_) => return Err(bad("`citations` must be an array")),
            };
            one.add_claim(factual, &cites);
            total.add_claim(factual, &cites);
        }
        items.push(json!({"citation_completeness": opt(one.citation_completeness()), "provenance_depth": opt(one.provenance_depth())}));
    }
    Ok((total, items))
}

fn citation_completeness(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let (c, items) = audit_counts(input)?;
    let mut out = MetricOutput::proportion(c.cited_claims as u64, c.claims as u64)?;
    out.extra.insert("factual_claims".into(), json!(c.claims));
    out.extra
        .insert("provenance_depth".into(), opt(c.provenance_depth()));
    out.items = items;
    Ok(out)
}

fn provenance_depth(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let (c, items) = audit_counts(input)?;
    let mut out = MetricOutput::proportion(c.document_citations as u64, c.citations as u64)?;
    out.extra.insert("citations".into(), json!(c.citations));
    out.extra.insert(
        "citation_completeness".into(),
        opt(c.citation_completeness()),
    );
    out.items = items;
    Ok(out)
}

fn reproducibility(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let mut runs = Vec::new();
    for (line, row) in &input.rows {
        runs.push((
            input.str_field(*line, row, "query_id")?,
            input.str_field(*line, row, "answer")?,
        ));
    }
    let (r, per) = audit::reproducibility(runs);
    let mut out = MetricOutput::proportion(r.reproducible as u64, r.queries as u64)?;
    out.extra
        .insert("rerun_match_rate".into(), opt(r.rerun_match_rate()));
    out.extra
        .insert("queries_run_once".into(), json!(r.single_runs));
    out.items = per
        .iter()
        .map(|(q, ok)| json!({"query_id": q, "reproducible": ok}))
        .collect();
    Ok(out)
}
