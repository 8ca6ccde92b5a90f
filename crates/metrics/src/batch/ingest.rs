//! Ingestion metrics (seed 000, parts 2–3): CER and WER (as jiwer), TEDS and TEDS-S (as
//! PubTabNet's teds.py), near-duplicate detection (MinHash + LSH), PII and boilerplate span
//! scores, extraction completeness, NFC/NFKC agreement, title accuracy, context compression, and
//! structural checks of chunkings (boundary violations, heading paths, attribution).

use std::collections::{BTreeMap, HashMap};

use crate::ingest::{chunking, document, error_rate, minhash, spans, teds};
use serde_json::{json, Map, Value};

use super::{
    kind, opt, ratio_of_sums_interval, Embedder, MetricError, MetricInput, MetricOutput,
    MetricSpec, OptionKind, OptionSpec, RATIO_RESAMPLES,
};

pub(crate) fn metrics() -> Vec<MetricSpec> {
    vec![
        MetricSpec {
            name: "cer",
            summary: "corpus character error rate (S+D+I)/N, as jiwer.cer with its default transforms",
            fields: "reference: string (ground truth text)\nhypothesis: string (OCR / transcription output)",
            options: &[],
            run: cer,
        },
        MetricSpec {
            name: "wer",
            summary: "corpus word error rate (S+D+I)/N, as jiwer.wer with its default transforms",
            fields: "reference: string (ground truth text)\nhypothesis: string (OCR / transcription output)",
            options: &[],
            run: wer,
        },
        MetricSpec {
            name: "teds",
            summary: "mean TEDS of HTML tables (tree edit distance with cell text), as PubTabNet's teds.py",
            fields: "pred_html: string (predicted table HTML)\ntrue_html: string (ground-truth table HTML)",
            options: &[],
            run: teds_full,
        },
        MetricSpec {
            name: "teds_s",
            summary: "mean TEDS-S of HTML tables (structure only), as PubTabNet's teds.py structure_only",
            fields: "pred_html: string (predicted table HTML)\ntrue_html: string (ground-truth table HTML)",
            options: &[],
            run: teds_structure,
        },
        MetricSpec {
            name: "near_duplicates",
            summary: "MinHash + LSH near-duplicate pairs scored against labelled groups (pair F1, merge rates)",
            fields: "id: string (document id, unique)\ntext: string\ngroup: string or null (optional: labelled duplicate group; absent = no duplicate)",
            options: NEAR_DUP_OPTIONS,
            run: near_duplicates,
        },
        MetricSpec {
            name: "duplicate_pairs",
            summary: "F1 of a detector's duplicate pairs against labelled pairs, with false/missed merge rates",
            fields: "a: string (document id)\nb: string (document id)\ndetected: boolean (the detector paired them)\nduplicate: boolean (labelled near-duplicates)",
            options: &[],
            run: duplicate_pairs,
        },
        MetricSpec {
            name: "pii",
            summary: "PII detection micro F1 over character spans, with precision/recall per entity type",
            fields: "predicted: array of {\"start\": int, \"end\": int, \"type\": string} (detected spans, [start, end) in characters)\ngold: array of the same shape (annotated spans)",
            options: const { &[OptionSpec::value("match", "exact (same type, start and end) or overlap (same type, any shared character; one-to-one)", Some("exact"))] },
            run: pii,
        },
        MetricSpec {
            name: "boilerplate",
            summary: "boilerplate removal F1 over characters, with precision and recall (pooled over documents)",
            fields: "predicted: array of [start, end] (character spans the tool removed)\ngold: array of [start, end] (annotated boilerplate spans)",
            options: &[],
            run: boilerplate,
        },
        MetricSpec {
            name: "extraction_completeness",
            summary: "expected characters recovered in order by the extraction (LCS / expected), per document class",
            fields: "extracted: string (parser output)\nexpected: string (manually cleaned reference)\nclass: string (optional document class, e.g. scan, table, handwriting)",
            options: &[],
            run: extraction_completeness,
        },
        MetricSpec {
            name: "nfc_nfkc_agreement",
            summary: "share of documents whose NFC and NFKC forms are identical (a drift signal)",
            fields: "text: string",
            options: &[],
            run: nfc_nfkc_agreement,
        },
        MetricSpec {
            name: "language_id",
            summary: "language-ID macro F1 with per-language precision/recall/F1, as scikit-learn's precision_recall_fscore_support",
            fields: "gold: string (annotated language code)\npredicted: string (detected language code)",
            options: &[],
            run: language_id,
        },
        MetricSpec {
            name: "title_exact_match",
            summary: "share of extracted titles/headings exactly equal to the ground truth",
            fields: "predicted: string\nreference: string",
            options: &[],
            run: title_exact_match,
        },
        MetricSpec {
            name: "title_similarity",
            summary: "mean normalised Levenshtein similarity 1 - lev/max(len) of titles (rapidfuzz normalized_similarity)",
            fields: "predicted: string\nreference: string",
            options: &[],
            run: title_similarity,
        },
        MetricSpec {
            name: "chunk_boundary_violations",
            summary: "share of chunk boundaries falling inside a Markdown table, list, numbered section or code block",
            fields: "document: string (the Markdown source)\nchunks: array of [start, end] (character offsets of each chunk in the document)",
            options: &[],
            run: chunk_boundary_violations,
        },
        MetricSpec {
            name: "chunk_coherence",
            summary: "mean within-chunk minus across-boundary cosine of adjacent sentence embeddings (a local embedding model)",
            fields: "chunks: array of strings (one document's chunks in order; split into sentences) or of arrays of sentences",
            options: const { &[
                OptionSpec { name: "model", help: "a sentence-embedding model folder (Hugging Face layout, e.g. all-MiniLM-L6-v2)", default: None, kind: OptionKind::EmbeddingModel },
                OptionSpec::value("threads", "threads of the forward pass (default: every core)", None),
            ] },
            run: chunk_coherence,
        },
        MetricSpec {
            name: "heading_path_preservation",
            summary: "share of chunks whose recorded heading path equals the Markdown heading path at their start",
            fields: "document: string (the Markdown source)\nchunks: array of {\"start\": int, \"heading_path\": [string, …]} (outermost heading first)",
            options: &[],
            run: heading_path_preservation,
        },
        MetricSpec {
            name: "attribution_fidelity",
            summary: "share of chunks with a resolvable source pointer (non-empty, and listed in --sources when given)",
            fields: "source: string or null (the chunk's source pointer: document id, page, section anchor)",
            options: const { &[OptionSpec::file("sources", "file of known source pointers, one per line (a pointer must be listed to resolve)")] },
            run: attribution_fidelity,
        },
        MetricSpec {
            name: "compression_ratio",
            summary: "context compression ratio, tokens before / tokens after (ratio of sums)",
            fields: "tokens_before: number (context tokens given to the compressor)\ntokens_after: number (context tokens after compression)",
            options: &[],
            run: compression_ratio,
        },
    ]
}

const NEAR_DUP_OPTIONS: &[OptionSpec] = &[
    OptionSpec::value("num-perm", "MinHash permutations k", Some("128")),
    OptionSpec::value(
        "shingle",
        "shingle length in characters (text lowercased)",
        Some("5"),
    ),
    OptionSpec::value(
        "threshold",
        "Jaccard threshold choosing bands x rows as datasketch's MinHashLSH",
        Some("0.8"),
    ),
    OptionSpec::value(
        "bands",
        "LSH bands b (with --rows; overrides --threshold)",
        None,
    ),
    OptionSpec::value("rows", "LSH rows per band r (with --bands)", None),
    OptionSpec::value("seed", "seed of the permutations", Some("1")),
];

// ---- helpers --------------------------------------------------------------------------------

fn pairs<'a>(
    input: &'a MetricInput,
    left: &str,
    right: &str,
) -> Result<Vec<(&'a str, &'a str)>, MetricError> {
    input
        .rows
        .iter()
        .map(|(line, row)| {
            Ok((
                input.str_field(*line, row, left)?,
                input.str_field(*line, row, right)?,
            ))
        })
        .collect()
}

/// [`MetricOutput::proportion`] with `k` and `n` in the extras (this group reports both).
fn proportion_output(k: u64, n: u64) -> Result<MetricOutput, MetricError> {
    let mut out = MetricOutput::proportion(k, n)?;
    out.extra.insert("k".into(), json!(k));
    out.extra.insert("n".into(), json!(n));
    Ok(out)
}

/// Sets the interval of `out`, a ratio of sums `Σ num / Σ den`, to its percentile bootstrap
/// over `unit`s ([`ratio_of_sums_interval`]).
fn ratio_interval(
    out: &mut MetricOutput,
    num: &[f64],
    den: &[f64],
    unit: &str,
) -> Result<(), MetricError> {
    out.estimate = std::mem::take(&mut out.estimate).with_interval(
        ratio_of_sums_interval(num, den)?,
        &format!(
            "percentile bootstrap over {unit} of the ratio of sums, seed 0, {RATIO_RESAMPLES} resamples"
        ),
    );
    Ok(())
}

// ---- CER / WER ------------------------------------------------------------------------------

fn error_rate_metric(
    input: &MetricInput,
    count: fn(&str, &str) -> error_rate::ErrorCounts,
    name: &str,
) -> Result<MetricOutput, MetricError> {
    let pairs = pairs(input, "reference", "hypothesis")?;
    let counts: Vec<error_rate::ErrorCounts> = pairs.iter().map(|(r, h)| count(r, h)).collect();
    let total: error_rate::ErrorCounts = counts.iter().copied().sum();
    let mut out = MetricOutput::value((!counts.is_empty()).then(|| total.rate()));
    let num: Vec<f64> = counts.iter().map(|c| c.errors() as f64).collect();
    let den: Vec<f64> = counts.iter().map(|c| c.reference_len() as f64).collect();
    ratio_interval(&mut out, &num, &den, "items")?;
    out.extra.insert("n".into(), json!(counts.len()));
    out.extra
        .insert("substitutions".into(), json!(total.substitutions));
    out.extra.insert("deletions".into(), json!(total.deletions));
    out.extra
        .insert("insertions".into(), json!(total.insertions));
    out.extra.insert("hits".into(), json!(total.hits));
    out.extra
        .insert("reference_length".into(), json!(total.reference_len()));
    out.items = counts
        .iter()
        .map(|c| {
            json!({
                name: c.rate(),
                "substitutions": c.substitutions,
                "deletions": c.deletions,
                "insertions": c.insertions,
                "hits": c.hits,
            })
        })
        .collect();
    Ok(out)
}

fn cer(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    error_rate_metric(input, error_rate::char_counts, "cer")
}

fn wer(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    error_rate_metric(input, error_rate::word_counts, "wer")
}

// ---- TEDS -----------------------------------------------------------------------------------

fn teds_metric(
    input: &MetricInput,
    f: fn(&str, &str) -> Result<f64, teds::TedsError>,
    name: &str,
) -> Result<MetricOutput, MetricError> {
    let mut values = Vec::with_capacity(input.rows.len());
    for (line, row) in &input.rows {
        let p = input.str_field(*line, row, "pred_html")?;
        let t = input.str_field(*line, row, "true_html")?;
        let v =
            f(p, t).map_err(|e| MetricError::at(*line, "pred_html/true_html", e.to_string()))?;
        values.push(v);
    }
    let mut out = MetricOutput::mean(&values)?;
    out.items = values.iter().map(|v| json!({ name: v })).collect();
    Ok(out)
}

fn teds_full(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    teds_metric(input, teds::teds, "teds")
}

fn teds_structure(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    teds_metric(input, teds::teds_structure, "teds_s")
}

// ---- near-duplicates ------------------------------------------------------------------------

fn near_duplicates(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let num_perm: usize = input
        .parsed("num-perm", "a positive integer")?
        .filter(|&k| k > 0)
        .ok_or_else(|| MetricError::usage("--num-perm must be a positive integer".into()))?;
    let k: usize = input
        .parsed("shingle", "a positive integer")?
        .filter(|&k| k > 0)
        .ok_or_else(|| MetricError::usage("--shingle must be a positive integer".into()))?;
    let seed: u64 = input.parsed("seed", "an integer")?.unwrap_or(1);
    let threshold: f64 = input
        .parsed("threshold", "a number in [0, 1]")?
        .unwrap_or(0.8);
    let bands: Option<usize> = input.parsed("bands", "a positive integer")?;
    let rows: Option<usize> = input.parsed("rows", "a positive integer")?;
    let (b, r) = match (bands, rows) {
        (Some(b), Some(r)) if b > 0 && r > 0 && b * r <= num_perm => (b, r),
        (None, None) => minhash::optimal_bands(threshold, num_perm).ok_or_else(|| {
            MetricError::usage(format!("--threshold {threshold}: expected a number in [0, 1]"))
        })?,
        _ => {
            return Err(MetricError::usage(format!(
                "--bands and --rows go together, are positive, and bands x rows <= --num-perm ({num_perm})"
            )))
        }
    };
    let mut ids: Vec<&str> = Vec::new();
    let mut groups: Vec<String> = Vec::new();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut texts = Vec::new();
    let mut labelled = false;
    for (line, row) in &input.rows {
        let id = input.str_field(*line, row, "id")?;
        if let Some(first) = seen.insert(id, *line) {
            return Err(MetricError::at(
                *line,
                "id",
                format!("duplicate id `{id}` (first on line {first})"),
            ));
        }
        let group = match row.get("group") {
            None | Some(Value::Null) => format!("\u{0}singleton:{id}"),
            Some(Value::String(g)) => {
                labelled = true;
                g.clone()
            }
            Some(other) => {
                return Err(MetricError::at(
                    *line,
                    "group",
                    format!("expected a string or null, found {}", kind(other)),
                ))
            }
        };
        ids.push(id);
        groups.push(group);
        texts.push(input.str_field(*line, row, "text")?);
    }
    let hasher = minhash::MinHasher::new(num_perm, seed);
    let sigs: Vec<Vec<u64>> = texts.iter().map(|t| hasher.text_signature(t, k)).collect();
    let candidates = minhash::lsh_candidate_pairs(&sigs, b, r);
    let mut by_group: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, g) in groups.iter().enumerate() {
        by_group.entry(g.as_str()).or_default().push(i);
    }
    let mut gold_pairs = Vec::new();
    for members in by_group.values() {
        for (x, &i) in members.iter().enumerate() {
            for &j in &members[x + 1..] {
                gold_pairs.push((i, j));
            }
        }
    }
    let scores = minhash::pair_scores(&candidates, &gold_pairs);
    let merges = minhash::merge_rates(ids.len(), &candidates, &groups);
    if !labelled {
        return Err(MetricError::usage(
            "near_duplicates needs labelled duplicate groups: give a `group` string to the documents that are near-duplicates of each other".into(),
        ));
    }
    let mut out = MetricOutput::value(scores.f1);
    let e = &mut out.extra;
    e.insert("n".into(), json!(ids.len()));
    e.insert("bands".into(), json!(b));
    e.insert("rows".into(), json!(r));
    e.insert("candidate_pairs".into(), json!(scores.detected));
    e.insert("labelled_pairs".into(), json!(scores.labelled));
    e.insert("true_positive_pairs".into(), json!(scores.true_positives));
    e.insert("precision".into(), opt(scores.precision));
    e.insert("recall".into(), opt(scores.recall));
    e.insert("false_merge_rate".into(), opt(merges.false_merge_rate));
    e.insert("missed_merge_rate".into(), opt(merges.missed_merge_rate));
    e.insert(
        "hash_family".into(),
        json!(format!(
            "{k}-character shingles, FNV-1a+SplitMix64 base hash, {num_perm} affine permutations mod 2^61-1, seed {seed}"
        )),
    );
    out.items = candidates
        .iter()
        .map(|&(i, j)| {
            json!({
                "a": ids[i],
                "b": ids[j],
                "estimated_jaccard": opt(minhash::estimate_jaccard(&sigs[i], &sigs[j])),
                "duplicate": groups[i] == groups[j],
            })
        })
        .collect();
    Ok(out)
}

fn bool_field(line: usize, row: &Map<String, Value>, field: &str) -> Result<bool, MetricError> {
    match row.get(field) {
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(MetricError::at(
            line,
            field,
            format!("expected a boolean, found {}", kind(other)),
        )),
        None => Err(MetricError::at(line, field, "missing field".to_string())),
    }
}

fn duplicate_pairs(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    let (mut detected, mut labelled) = (Vec::new(), Vec::new());
    let mut items = Vec::new();
    for (line, row) in &input.rows {
        let a = input.str_field(*line, row, "a")?;
        let b = input.str_field(*line, row, "b")?;
        let d = bool_field(*line, row, "detected")?;
        let l = bool_field(*line, row, "duplicate")?;
        let next = index.len();
        let ia = *index.entry(a).or_insert(next);
        let next = index.len();
        let ib = *index.entry(b).or_insert(next);
        if d {
            detected.push((ia, ib));
        }
        if l {
            labelled.push((ia, ib));
        }
        items.push(json!({"a": a, "b": b, "outcome": match (d, l) {
            (true, true) => "true positive",
            (true, false) => "false positive",
            (false, true) => "false negative",
            (false, false) => "true negative",
        }}));
    }
    let scores = minhash::pair_scores(&detected, &labelled);
    // Merge rates over the documents named in the file: labelled groups are the connected
    // components of the labelled pairs.
    let n = index.len();
    let mut gold = vec![0usize; n];
    {
        let mut parent: Vec<usize> = (0..n).collect();
        fn find(p: &mut [usize], mut x: usize) -> usize {
            while p[x] != x {
                p[x] = p[p[x]];
                x = p[x];
            }
            x
        }
        for &(a, b) in &labelled {
            let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
            parent[ra.max(rb)] = ra.min(rb);
        }
        for (i, g) in gold.iter_mut().enumerate() {
            *g = find(&mut parent, i);
        }
    }
    let merges = minhash::merge_rates(n, &detected, &gold);
    let mut out = MetricOutput::value(scores.f1);
    let e = &mut out.extra;
    e.insert("n".into(), json!(input.rows.len()));
    e.insert("detected_pairs".into(), json!(scores.detected));
    e.insert("labelled_pairs".into(), json!(scores.labelled));
    e.insert("true_positive_pairs".into(), json!(scores.true_positives));
    e.insert("precision".into(), opt(scores.precision));
    e.insert("recall".into(), opt(scores.recall));
    e.insert("false_merge_rate".into(), opt(merges.false_merge_rate));
    e.insert("missed_merge_rate".into(), opt(merges.missed_merge_rate));
    out.items = items;
    Ok(out)
}

// ---- spans ----------------------------------------------------------------------------------

fn usize_of(v: Option<&Value>) -> Option<usize> {
    v.and_then(Value::as_u64).map(|x| x as usize)
}

fn pii_spans(
    line: usize,
    row: &Map<String, Value>,
    field: &str,
) -> Result<Vec<spans::Span>, MetricError> {
    let Some(Value::Array(items)) = row.get(field) else {
        return Err(MetricError::at(
            line,
            field,
            "expected an array of {\"start\", \"end\", \"type\"}".into(),
        ));
    };
    items
        .iter()
        .map(|item| {
            let obj = item.as_object();
            let start = usize_of(obj.and_then(|o| o.get("start")));
            let end = usize_of(obj.and_then(|o| o.get("end")));
            let label = obj.and_then(|o| o.get("type")).and_then(Value::as_str);
            match (start, end, label) {
                (Some(start), Some(end), Some(label)) if start <= end => Ok(spans::Span {
                    start,
                    end,
                    label: label.to_string(),
                }),
                _ => Err(MetricError::at(
                    line,
                    field,
                    format!("expected {{\"start\": int, \"end\": int >= start, \"type\": string}}, found {item}"),
                )),
            }
        })
        .collect()
}

fn pii(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let matching = match input.option("match").unwrap_or("exact") {
        "exact" => spans::SpanMatch::Exact,
        "overlap" => spans::SpanMatch::Overlap,
        other => {
            return Err(MetricError::usage(format!(
                "--match {other}: expected exact or overlap"
            )))
        }
    };
    let mut report = spans::DetectionReport::default();
    let mut items = Vec::new();
    for (line, row) in &input.rows {
        let p = pii_spans(*line, row, "predicted")?;
        let g = pii_spans(*line, row, "gold")?;
        let doc = spans::match_document(&p, &g, matching);
        let (tp, np, ng) = doc.values().fold((0, 0, 0), |a, s| {
            (a.0 + s.true_positives, a.1 + s.predicted, a.2 + s.gold)
        });
        items.push(json!({"true_positives": tp, "predicted": np, "gold": ng}));
        report.add_document(&p, &g, matching);
    }
    let m = report.micro;
    let mut out = MetricOutput::value(m.f1());
    out.extra.insert("n".into(), json!(input.rows.len()));
    out.extra.insert("precision".into(), opt(m.precision()));
    out.extra.insert("recall".into(), opt(m.recall()));
    out.extra.insert("macro_f1".into(), opt(report.macro_f1()));
    let per_type: Map<String, Value> = report
        .per_type
        .iter()
        .map(|(t, s)| {
            (
                t.clone(),
                json!({
                    "precision": opt(s.precision()),
                    "recall": opt(s.recall()),
                    "f1": opt(s.f1()),
                    "true_positives": s.true_positives,
                    "predicted": s.predicted,
                    "gold": s.gold,
                }),
            )
        })
        .collect();
    out.extra.insert("per_type".into(), Value::Object(per_type));
    out.items = items;
    Ok(out)
}

fn intervals(
    line: usize,
    row: &Map<String, Value>,
    field: &str,
) -> Result<Vec<(usize, usize)>, MetricError> {
    let Some(Value::Array(items)) = row.get(field) else {
        return Err(MetricError::at(
            line,
            field,
            "expected an array of [start, end]".into(),
        ));
    };
    items
        .iter()
        .map(|item| match item.as_array().map(Vec::as_slice) {
            Some([s, e]) => match (usize_of(Some(s)), usize_of(Some(e))) {
                (Some(s), Some(e)) if s <= e => Ok((s, e)),
                _ => Err(MetricError::at(
                    line,
                    field,
                    format!("expected [start, end] with 0 <= start <= end, found {item}"),
                )),
            },
            _ => Err(MetricError::at(
                line,
                field,
                format!("expected [start, end], found {item}"),
            )),
        })
        .collect()
}

fn boilerplate(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let mut total = spans::Coverage::default();
    let mut items = Vec::new();
    for (line, row) in &input.rows {
        let c = spans::span_coverage(
            &intervals(*line, row, "predicted")?,
            &intervals(*line, row, "gold")?,
        );
        items.push(json!({
            "precision": opt(c.precision()),
            "recall": opt(c.recall()),
            "overlap": c.overlap,
            "predicted": c.predicted,
            "gold": c.gold,
        }));
        total.add(c);
    }
    let mut out = MetricOutput::value(total.f1());
    out.extra.insert("n".into(), json!(input.rows.len()));
    out.extra.insert("precision".into(), opt(total.precision()));
    out.extra.insert("recall".into(), opt(total.recall()));
    out.extra
        .insert("overlap_characters".into(), json!(total.overlap));
    out.extra
        .insert("predicted_characters".into(), json!(total.predicted));
    out.extra
        .insert("gold_characters".into(), json!(total.gold));
    out.items = items;
    Ok(out)
}

// ---- documents ------------------------------------------------------------------------------

fn extraction_completeness(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let mut total = document::Completeness::default();
    let mut per_class: BTreeMap<String, document::Completeness> = BTreeMap::new();
    let (mut num, mut den) = (Vec::new(), Vec::new());
    let mut items = Vec::new();
    for (line, row) in &input.rows {
        let extracted = input.str_field(*line, row, "extracted")?;
        let expected = input.str_field(*line, row, "expected")?;
        let class = match row.get("class") {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) => Some(c.clone()),
            Some(other) => {
                return Err(MetricError::at(
                    *line,
                    "class",
                    format!("expected a string, found {}", kind(other)),
                ))
            }
        };
        let c = document::completeness(extracted, expected);
        total.add(c);
        if let Some(class) = &class {
            per_class.entry(class.clone()).or_default().add(c);
        }
        num.push(c.recovered as f64);
        den.push(c.expected as f64);
        items.push(json!({
            "completeness": opt(c.ratio()),
            "length_ratio": opt(c.length_ratio()),
            "recovered": c.recovered,
            "expected": c.expected,
            "extracted": c.extracted,
            "class": class,
        }));
    }
    let mut out = MetricOutput::value(total.ratio());
    ratio_interval(&mut out, &num, &den, "items")?;
    out.extra.insert("n".into(), json!(input.rows.len()));
    out.extra
        .insert("length_ratio".into(), opt(total.length_ratio()));
    if !per_class.is_empty() {
        let table: Map<String, Value> = per_class
            .iter()
            .map(|(k, c)| {
                (
                    k.clone(),
                    json!({
                        "completeness": opt(c.ratio()),
                        "length_ratio": opt(c.length_ratio()),
                        "expected": c.expected,
                    }),
                )
            })
            .collect();
        out.extra.insert("per_class".into(), Value::Object(table));
    }
    out.items = items;
    Ok(out)
}

fn nfc_nfkc_agreement(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let mut agree = 0u64;
    let mut items = Vec::new();
    for (line, row) in &input.rows {
        let a = document::nfc_nfkc_agree(input.str_field(*line, row, "text")?);
        agree += u64::from(a);
        items.push(json!({ "agree": a }));
    }
    let mut out = proportion_output(agree, input.rows.len() as u64)?;
    out.items = items;
    Ok(out)
}

fn title_exact_match(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let pairs = pairs(input, "predicted", "reference")?;
    let k = pairs.iter().filter(|(p, r)| p == r).count() as u64;
    let mut out = proportion_output(k, pairs.len() as u64)?;
    out.items = pairs
        .iter()
        .map(|(p, r)| json!({ "exact_match": p == r }))
        .collect();
    Ok(out)
}

fn title_similarity(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let pairs = pairs(input, "predicted", "reference")?;
    let values: Vec<f64> = pairs
        .iter()
        .map(|(p, r)| error_rate::normalized_levenshtein_similarity(p, r))
        .collect();
    let mut out = MetricOutput::mean(&values)?;
    out.items = values.iter().map(|v| json!({ "similarity": v })).collect();
    Ok(out)
}

fn compression_ratio(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let mut total = document::Compression::default();
    let (mut num, mut den) = (Vec::new(), Vec::new());
    let mut items = Vec::new();
    for (line, row) in &input.rows {
        let count = |field: &str| -> Result<u64, MetricError> {
            let v = input.f64_field(*line, row, field)?;
            if v < 0.0 || v.fract() != 0.0 {
                return Err(MetricError::at(
                    *line,
                    field,
                    format!("expected a non-negative whole number of tokens, found {v}"),
                ));
            }
            Ok(v as u64)
        };
        let c = document::Compression {
            before: count("tokens_before")?,
            after: count("tokens_after")?,
        };
        total.add(c);
        num.push(c.before as f64);
        den.push(c.after as f64);
        items.push(json!({ "compression_ratio": opt(c.ratio()), "kept": opt(c.kept()) }));
    }
    let mut out = MetricOutput::value(total.ratio());
    ratio_interval(&mut out, &num, &den, "items")?;
    out.extra.insert("n".into(), json!(input.rows.len()));
    out.extra.insert("kept_share".into(), opt(total.kept()));
    out.extra
        .insert("tokens_before".into(), json!(total.before));
    out.extra.insert("tokens_after".into(), json!(total.after));
    out.items = items;
    Ok(out)
}

// ---- chunking -------------------------------------------------------------------------------

fn document_field<'a>(
    input: &'a MetricInput,
    line: usize,
    row: &'a Map<String, Value>,
) -> Result<&'a str, MetricError> {
    input.str_field(line, row, "document")
}

fn chunk_boundary_violations(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let mut total = chunking::BoundaryReport::default();
    let (mut num, mut den) = (Vec::new(), Vec::new());
    let mut items = Vec::new();
    for (line, row) in &input.rows {
        let doc = document_field(input, *line, row)?;
        let chunks = intervals(*line, row, "chunks")?;
        let r = chunking::boundary_violations(doc, &chunks);
        num.push(r.violations as f64);
        den.push(r.boundaries as f64);
        items.push(json!({
            "violation_rate": opt(r.violation_rate()),
            "boundaries": r.boundaries,
            "violations": r.violations,
            "blocks": r.blocks,
            "blocks_split": r.blocks_split,
            "per_kind": r.per_kind,
        }));
        total.add(&r);
    }
    let mut out = MetricOutput::value(total.violation_rate());
    ratio_interval(&mut out, &num, &den, "items")?;
    out.extra.insert("n".into(), json!(input.rows.len()));
    out.extra
        .insert("boundaries".into(), json!(total.boundaries));
    out.extra
        .insert("violations".into(), json!(total.violations));
    out.extra.insert("blocks".into(), json!(total.blocks));
    out.extra
        .insert("blocks_split".into(), json!(total.blocks_split));
    out.extra
        .insert("block_split_rate".into(), opt(total.split_rate()));
    out.extra.insert("per_kind".into(), json!(total.per_kind));
    out.items = items;
    Ok(out)
}

/// Sentences of each chunk of one row's `chunks` (strings are split into sentences).
fn chunk_sentences(line: usize, row: &Map<String, Value>) -> Result<Vec<Vec<String>>, MetricError> {
    let Some(Value::Array(chunks)) = row.get("chunks") else {
        return Err(MetricError::at(
            line,
            "chunks",
            "expected an array of chunk texts (or of arrays of sentences)".into(),
        ));
    };
    chunks
        .iter()
        .map(|chunk| match chunk {
            Value::String(text) => Ok(crate::rag::sentences::split_sentences(text)),
            Value::Array(sentences) => sentences
                .iter()
                .map(|s| {
                    s.as_str().map(str::to_string).ok_or_else(|| {
                        MetricError::at(
                            line,
                            "chunks",
                            format!("a sentence must be a string, got {}", super::kind(s)),
                        )
                    })
                })
                .collect(),
            other => Err(MetricError::at(
                line,
                "chunks",
                format!(
                    "a chunk must be a string or an array of sentences, got {}",
                    super::kind(other)
                ),
            )),
        })
        .collect()
}

fn chunk_coherence(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let (Some(model), Some(embedder)) = (input.option("model"), input.embedder.as_deref()) else {
        return Err(MetricError::usage(
            "this metric needs --model DIR (a sentence-embedding model folder)".into(),
        ));
    };
    let documents: Vec<(usize, Vec<Vec<String>>)> = input
        .rows
        .iter()
        .map(|(line, row)| Ok((*line, chunk_sentences(*line, row)?)))
        .collect::<Result<_, MetricError>>()?;
    // One embedding call over every sentence of the file (the model batches them).
    let texts: Vec<String> = documents
        .iter()
        .flat_map(|(_, chunks)| chunks.iter().flatten().cloned())
        .collect();
    let vectors = Embedder::embed(embedder, &texts).map_err(|source| MetricError::Embedding {
        model: model.to_string(),
        source,
    })?;
    let mut next = vectors.into_iter();
    let (mut values, mut items) = (Vec::new(), Vec::new());
    for (_, chunks) in &documents {
        let embedded: Vec<Vec<Vec<f32>>> = chunks
            .iter()
            .map(|c| next.by_ref().take(c.len()).collect())
            .collect();
        let c = chunking::chunk_coherence(&embedded);
        values.extend(c.coherence());
        items.push(json!({
            "coherence": opt(c.coherence()),
            "within": opt(c.within),
            "across": opt(c.across),
            "within_pairs": c.within_pairs,
            "boundary_pairs": c.boundary_pairs,
        }));
    }
    let mut out = MetricOutput::mean(&values)?;
    out.extra
        .insert("documents".into(), json!(input.rows.len()));
    out.extra
        .insert("undefined".into(), json!(input.rows.len() - values.len()));
    out.items = items;
    Ok(out)
}

fn heading_path_preservation(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let (mut num, mut den) = (Vec::new(), Vec::new());
    let (mut kept, mut total) = (0u64, 0u64);
    let mut items = Vec::new();
    for (line, row) in &input.rows {
        let doc = document_field(input, *line, row)?;
        let Some(Value::Array(chunks)) = row.get("chunks") else {
            return Err(MetricError::at(
                *line,
                "chunks",
                "expected an array of {\"start\", \"heading_path\"}".into(),
            ));
        };
        let mut doc_kept = 0u64;
        for chunk in chunks {
            let start = usize_of(chunk.get("start"));
            let path: Option<Vec<&str>> = chunk
                .get("heading_path")
                .and_then(Value::as_array)
                .and_then(|a| a.iter().map(Value::as_str).collect());
            let (Some(start), Some(path)) = (start, path) else {
                return Err(MetricError::at(
                    *line,
                    "chunks",
                    format!(
                        "expected {{\"start\": int, \"heading_path\": [string, …]}}, found {chunk}"
                    ),
                ));
            };
            let ok = chunking::heading_path_preserved(doc, start, &path);
            doc_kept += u64::from(ok);
            items.push(json!({
                "line": line,
                "start": start,
                "preserved": ok,
                "expected": chunking::heading_path(doc, start),
            }));
        }
        kept += doc_kept;
        total += chunks.len() as u64;
        num.push(doc_kept as f64);
        den.push(chunks.len() as f64);
    }
    let mut out = MetricOutput::value((total > 0).then(|| kept as f64 / total as f64));
    ratio_interval(&mut out, &num, &den, "documents")?;
    out.extra.insert("n".into(), json!(input.rows.len()));
    out.extra.insert("chunks".into(), json!(total));
    out.extra.insert("preserved".into(), json!(kept));
    out.items = items;
    Ok(out)
}

fn attribution_fidelity(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    let known: Option<std::collections::HashSet<String>> = match input.option("sources") {
        None => None,
        Some(_) => {
            let (_, text) = input.file_text("sources")?;
            Some(
                text.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(String::from)
                    .collect(),
            )
        }
    };
    let mut resolved = 0u64;
    let mut items = Vec::new();
    for (line, row) in &input.rows {
        let ok = match row.get("source") {
            None | Some(Value::Null) => false,
            Some(Value::String(s)) => {
                let s = s.trim();
                !s.is_empty() && known.as_ref().is_none_or(|k| k.contains(s))
            }
            Some(other) => {
                return Err(MetricError::at(
                    *line,
                    "source",
                    format!("expected a string or null, found {}", kind(other)),
                ))
            }
        };
        resolved += u64::from(ok);
        items.push(json!({ "resolvable": ok }));
    }
    let mut out = proportion_output(resolved, input.rows.len() as u64)?;
    out.items = items;
    Ok(out)
}

// ---- language ID ----------------------------------------------------------------------------

fn language_id(input: &MetricInput) -> Result<MetricOutput, MetricError> {
    use crate::classify::report::{classification_report, ZeroDivision};
    let pairs = pairs(input, "gold", "predicted")?;
    let gold: Vec<&str> = pairs.iter().map(|p| p.0).collect();
    let pred: Vec<&str> = pairs.iter().map(|p| p.1).collect();
    let report = classification_report(&gold, &pred, ZeroDivision::Zero)
        .map_err(|e| MetricError::usage(e.to_string()))?;
    let Some(report) = report else {
        return Ok(MetricOutput::value(None));
    };
    let mut out = MetricOutput::value(report.macro_avg.f1);
    let scores = |s: &crate::classify::report::ClassScores| {
        json!({
            "precision": opt(s.precision),
            "recall": opt(s.recall),
            "f1": opt(s.f1),
            "support": s.support,
        })
    };
    out.extra.insert("n".into(), json!(pairs.len()));
    out.extra.insert("accuracy".into(), json!(report.accuracy));
    out.extra.insert("macro".into(), scores(&report.macro_avg));
    out.extra
        .insert("weighted".into(), scores(&report.weighted));
    out.extra.insert("micro".into(), scores(&report.micro));
    let per: Map<String, Value> = report
        .per_class
        .iter()
        .map(|row| (row.label.clone(), scores(&row.scores)))
        .collect();
    out.extra.insert("per_language".into(), Value::Object(per));
    out.items = pairs
        .iter()
        .map(|(g, p)| json!({ "correct": g == p }))
        .collect();
    Ok(out)
}
