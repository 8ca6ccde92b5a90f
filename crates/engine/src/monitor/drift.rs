//! `monitor.drift`: query drift, embedding drift on a probe set, and performance drift
//! (seed 000 Part 10, "Détection du drift").
//!
//! - **Query drift.** Each window's questions (`input.question`; a record without one is
//!   counted, not embedded) are embedded by the `provider: local` embedding judge named in
//!   `drift.embedder` and compared with the reference window's (`first`, `previous`, or a
//!   window's start): the kernel two-sample test [`oloproof_stats::mmd_permutation_test`]
//!   (unbiased MMD², median-heuristic Gaussian kernel, permutation p-value), and the
//!   Jensen–Shannon distance of each query's cosine to the reference centroid, binned on the
//!   reference's quantiles ([`oloproof_stats::binned_divergence`]). Above `max_queries`, the
//!   queries with the smallest `drift:` draw are kept. The p-values of the tests in the
//!   horizon (every window and segment) are Holm-adjusted together, and the `query_drift`
//!   alert fires when one of them is at most `alpha`. The binned divergence is reported, not
//!   decided on (it has no null distribution here).
//! - **Probe drift.** The texts of `drift.probes.file` are re-embedded on every run; the first
//!   run stores their vectors in a JSON file beside it (`<probes>.vectors.json`, or
//!   `probes.vectors`), never overwritten after; later runs compare each probe's cosine to its
//!   stored vector, and `probe_drift` fires when one is under `min_cosine`. The stored and the
//!   current model identity (the local model's content hash) are both reported.
//! - **Performance drift.** A feedback share (`regeneration`, `thumbs_down`, `follow_up`) or a
//!   tiered criterion's mean (on the sampled traces), per segment of `by` and window, against
//!   a control band: a fixed `band` (fires when the window's 95 % interval lies wholly outside
//!   it, as the `regeneration_rate` alert), or without one the reference window's Shewhart
//!   limits ([`super::math::control_limits`]: fires when the window's value is outside them).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use oloproof_core::config::ProjectConfig;
use oloproof_core::monitor::{DriftOptions, MonitorOptions, PerformanceOptions, ProbeOptions};
use oloproof_core::summary::SummaryKind;
use oloproof_core::verdict::Verdict;
use oloproof_judge::{JudgeClient, JudgeSettings, LocalKind, Provider};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::math::{self, ALERT_CONFIDENCE};
use super::{config_error, segment_of, AlertReport, ChangeMarkers, Placed};
use crate::history::{parse_rfc3339_ms, rfc3339_from_ms};
use crate::EngineError;

/// Version of the stored probe vectors file.
pub const PROBE_VECTORS_SCHEMA_VERSION: u32 = 1;

pub use oloproof_core::monitor_report::{
    DriftReport, PerformanceDrift, PerformanceWindow, ProbeDrift, QueryDrift,
};

/// The stored probe vectors.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredProbes {
    schema_version: u32,
    embedder: String,
    model_identity: Option<String>,
    dimension: usize,
    probes: Vec<StoredProbe>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredProbe {
    id: String,
    text: String,
    vector: Vec<f32>,
}

/// What drift reads from the rest of the monitor.
pub(super) struct DriftInput<'a, 'p> {
    pub config: &'a ProjectConfig,
    pub m: &'a MonitorOptions,
    pub d: &'a DriftOptions,
    pub placed: &'a [Placed<'p>],
    pub horizon_start: Option<i64>,
    pub verdicts: &'a HashMap<(String, String), Verdict>,
    pub sampled_for: &'a HashMap<String, HashSet<String>>,
    pub kinds: &'a HashMap<&'a str, SummaryKind>,
    pub changes: &'a ChangeMarkers,
    pub seed: u64,
    pub resamples: usize,
}

/// Checks `drift:`'s references: the embedder is a `provider: local` embedding judge (needed
/// by query and probe drift), a performance criterion is tiered, a reference time parses.
pub(super) fn check_drift(
    config: &ProjectConfig,
    d: &DriftOptions,
    tiered: &[&str],
    criteria: &[&str],
) -> Result<(), EngineError> {
    let w = d.reference.window.as_str();
    if !matches!(w, "first" | "previous") && reference_start(w).is_none() {
        return Err(config_error(
            config,
            "monitor.drift.reference.window",
            format!("unknown reference window `{w}`"),
            Some("`first`, `previous`, or a window's start such as 2026-11-28 or 2026-11-28T06:00:00Z".into()),
        ));
    }
    let needs_embedder = d.queries || d.probes.is_some();
    match &d.embedder {
        Some(name) => {
            let Some(value) = config.options.judges.get(name) else {
                let names: Vec<&str> = config.options.judges.keys().map(String::as_str).collect();
                return Err(config_error(
                    config,
                    "monitor.drift.embedder",
                    format!("no judge named `{name}` in `judges:`"),
                    oloproof_core::source::did_you_mean(name, names.iter().copied())
                        .map(|s| format!("did you mean `{s}`?"))
                        .or_else(|| Some("add a judge with `provider: local`, `kind: embedding`, `path: <model folder>`".into())),
                ));
            };
            let local_embedding =
                serde_json::from_value::<JudgeSettings>(value.clone()).is_ok_and(|s| {
                    s.provider == Provider::Local && s.kind == Some(LocalKind::Embedding)
                });
            if !local_embedding {
                return Err(config_error(
                    config,
                    "monitor.drift.embedder",
                    format!("judge `{name}` is not a local embedding model"),
                    Some("drift embeds offline: name a judge with `provider: local` and `kind: embedding`".into()),
                ));
            }
        }
        None if needs_embedder => {
            return Err(config_error(
                config,
                "monitor.drift",
                "drift needs `embedder:` for query and probe drift".into(),
                Some("add `embedder: <judge>` (a `provider: local`, `kind: embedding` judge), or `queries: false` without `probes:`".into()),
            ));
        }
        None => {}
    }
    for (i, p) in d.performance.iter().enumerate() {
        if let Some(c) = &p.criterion {
            if !tiered.contains(&c.as_str()) {
                let known = criteria.contains(&c.as_str());
                return Err(config_error(
                    config,
                    &format!("monitor.drift.performance[{i}].criterion"),
                    if known {
                        format!("`{c}` is judged by no tier of `monitor.sampling.tiers`")
                    } else {
                        format!("no evaluator reports the criterion `{c}`")
                    },
                    Some(if known {
                        format!("add `{c}` to a tier's `evaluators:`")
                    } else {
                        oloproof_core::source::did_you_mean(c, criteria.iter().copied())
                            .map_or_else(
                                || format!("the config's criteria: {}", criteria.join(", ")),
                                |s| format!("did you mean `{s}`?"),
                            )
                    }),
                ));
            }
        }
    }
    Ok(())
}

/// A reference window's start: a date (`2026-11-28`, its UTC midnight) or an RFC 3339 time.
pub(super) fn reference_start(text: &str) -> Option<i64> {
    let t = text.trim();
    if t.len() == 10 {
        parse_rfc3339_ms(&format!("{t}T00:00:00Z"))
    } else {
        parse_rfc3339_ms(t)
    }
}

fn question_of(p: &Placed<'_>) -> Option<String> {
    match p.record.case.input.get("question") {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// Runs every configured drift check. Embedding failures make the evaluation incomplete
/// (their message is pushed to `incomplete`), never a silent "no drift".
pub(super) fn drift(
    input: &DriftInput<'_, '_>,
    incomplete: &mut Vec<String>,
) -> Result<(DriftReport, Vec<AlertReport>), EngineError> {
    let d = input.d;
    let size = input.m.window.size.ms;
    let in_horizon = |w: i64| input.horizon_start.is_some_and(|h| w >= h);
    let windows: BTreeSet<i64> = input.placed.iter().map(|p| p.window).collect();
    let reference_of = reference_resolver(&d.reference.window, &windows, size);
    let client = match &d.embedder {
        Some(name) => Some(embedder(input.config, name)?),
        None => None,
    };
    let mut report = DriftReport {
        embedder: d.embedder.clone(),
        model_identity: client.as_ref().and_then(JudgeClient::model_identity),
        reference: d.reference.window.clone(),
        alpha: d.alpha,
        permutations: d.permutations,
        without_question: input
            .placed
            .iter()
            .filter(|p| question_of(p).is_none())
            .count() as u64,
        queries: Vec::new(),
        probes: None,
        performance: Vec::new(),
    };
    let mut alerts = Vec::new();
    let alert = |kind: &'static str, subject: String, segment: String| AlertReport {
        kind: kind.to_string(),
        subject,
        segment,
        fired: false,
        status: "insufficient".into(),
        why: String::new(),
        n: 0,
        value: None,
        interval: None,
        changes: input.changes.clone(),
    };

    // Query drift.
    if let (true, Some(client)) = (d.queries, &client) {
        let mut scopes: Vec<String> = vec!["all".to_string()];
        if d.per_segment && !input.m.segments.is_empty() {
            let segs: BTreeSet<&str> = input.placed.iter().map(|p| p.segment.as_str()).collect();
            scopes.extend(segs.into_iter().map(str::to_string));
        }
        // The queries of each (window, scope), subsampled by the drift draw.
        let members = |w: i64, scope: &str| -> (Vec<String>, u64) {
            let mut qs: Vec<(f64, String)> = input
                .placed
                .iter()
                .filter(|p| p.window == w && (scope == "all" || p.segment == scope))
                .filter_map(|p| {
                    question_of(p)
                        .map(|q| (math::draw(d.seed, &format!("drift:{}", p.trace_id)), q))
                })
                .collect();
            qs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let out = qs.len().saturating_sub(d.max_queries) as u64;
            qs.truncate(d.max_queries);
            (qs.into_iter().map(|(_, q)| q).collect(), out)
        };
        let mut planned = Vec::new();
        let mut texts: BTreeSet<String> = BTreeSet::new();
        // A reference time whose window has no traffic: every window says so.
        let missing_reference = reference_start(&d.reference.window)
            .map(|s| math::window_start(s, size))
            .filter(|s| !windows.contains(s));
        for scope in &scopes {
            for &w in &windows {
                let Some(r) = reference_of(w) else {
                    if missing_reference.is_some() {
                        planned.push((w, None, scope.clone(), Vec::new(), Vec::new(), 0));
                    }
                    continue;
                };
                let (ref_q, _) = members(r, scope);
                let (cur_q, out) = members(w, scope);
                texts.extend(ref_q.iter().cloned());
                texts.extend(cur_q.iter().cloned());
                planned.push((w, Some(r), scope.clone(), ref_q, cur_q, out));
            }
        }
        let texts: Vec<String> = texts.into_iter().collect();
        let vectors: Option<HashMap<&str, Vec<f64>>> = if texts.is_empty() {
            Some(HashMap::new())
        } else {
            match client.embed(&texts) {
                Ok(vs) if vs.len() == texts.len() => Some(
                    texts
                        .iter()
                        .map(String::as_str)
                        .zip(
                            vs.into_iter()
                                .map(|v| v.into_iter().map(f64::from).collect()),
                        )
                        .collect(),
                ),
                Ok(vs) => {
                    incomplete.push(format!(
                        "query drift: the embedder returned {} vectors for {} queries",
                        vs.len(),
                        texts.len()
                    ));
                    None
                }
                Err(e) => {
                    incomplete.push(format!("query drift: embedding the queries failed: {e}"));
                    None
                }
            }
        };
        if let Some(vectors) = vectors {
            for (w, r, scope, ref_q, cur_q, out) in planned {
                let embed = |qs: &[String]| -> Vec<Vec<f64>> {
                    qs.iter()
                        .filter_map(|q| vectors.get(q.as_str()).cloned())
                        .collect()
                };
                let mut q = QueryDrift {
                    window: rfc3339_from_ms(w),
                    reference_window: r.map(rfc3339_from_ms),
                    segment: scope.clone(),
                    in_horizon: in_horizon(w),
                    status: "insufficient".into(),
                    reference_queries: ref_q.len() as u64,
                    window_queries: cur_q.len() as u64,
                    subsampled_out: out,
                    mmd2: None,
                    bandwidth: None,
                    p_value: None,
                    p_adjusted: None,
                    js_distance: None,
                    bins: None,
                    why: String::new(),
                };
                if r.is_none() {
                    q.why = format!("no traffic in the reference window {}", d.reference.window);
                    report.queries.push(q);
                    continue;
                }
                let (x, y) = (embed(&ref_q), embed(&cur_q));
                match oloproof_stats::mmd_permutation_test(&x, &y, d.permutations, d.seed) {
                    Ok(t) => {
                        q.mmd2 = Some(t.mmd2);
                        q.bandwidth = Some(t.bandwidth);
                        q.p_value = Some(t.p_value);
                        q.status = "no_drift".into();
                    }
                    Err(e) => {
                        q.why =
                            format!("{} reference and {} window queries: {e}", x.len(), y.len());
                    }
                }
                if q.p_value.is_some() {
                    let projected = oloproof_stats::cosine_to_centroid(&x, &x).and_then(|rp| {
                        let cp = oloproof_stats::cosine_to_centroid(&x, &y)?;
                        oloproof_stats::binned_divergence(&rp, &cp, d.bins)
                    });
                    if let Ok(b) = projected {
                        q.js_distance = Some(b.js_distance);
                        q.bins = Some(b.reference_counts.len());
                    }
                }
                report.queries.push(q);
            }
            // Holm over the horizon's tests.
            let idx: Vec<usize> = (0..report.queries.len())
                .filter(|&i| report.queries[i].in_horizon && report.queries[i].p_value.is_some())
                .collect();
            let ps: Vec<f64> = idx
                .iter()
                .filter_map(|&i| report.queries[i].p_value)
                .collect();
            let adjusted = oloproof_stats::holm(&ps);
            for (&i, a) in idx.iter().zip(adjusted) {
                let q = &mut report.queries[i];
                q.p_adjusted = Some(a);
                if a <= d.alpha {
                    q.status = "drift".into();
                }
            }
            for q in report.queries.iter_mut().filter(|q| q.p_value.is_some()) {
                q.why = format!(
                    "MMD² {:.4} (σ {:.3}), permutation p {}{} on {} reference and {} window queries{}",
                    q.mmd2.unwrap_or(0.0),
                    q.bandwidth.unwrap_or(0.0),
                    fmt_p(q.p_value.unwrap_or(1.0)),
                    q.p_adjusted.map(|a| format!(" (Holm {})", fmt_p(a))).unwrap_or_default(),
                    q.reference_queries,
                    q.window_queries,
                    match (q.js_distance, q.bins) {
                        (Some(js), Some(b)) => format!("; JS distance {js:.3} over {b} bins of the cosine to the reference centroid"),
                        _ => "; JS distance: the reference is too small to bin".to_string(),
                    }
                );
            }
            for scope in &scopes {
                let mut a = alert("query_drift", "queries".into(), scope.clone());
                let tested: Vec<&QueryDrift> = report
                    .queries
                    .iter()
                    .filter(|q| &q.segment == scope && q.in_horizon && q.p_adjusted.is_some())
                    .collect();
                let worst = tested.iter().min_by(|a, b| {
                    a.p_adjusted
                        .unwrap_or(1.0)
                        .total_cmp(&b.p_adjusted.unwrap_or(1.0))
                });
                match worst {
                    Some(q) => {
                        a.fired = q.status == "drift";
                        a.status = if a.fired { "fired" } else { "ok" }.into();
                        a.n = q.window_queries;
                        a.value = q.mmd2;
                        a.why = format!(
                            "{} of {} window{} drifted at α {}; {} {}: {}",
                            tested.iter().filter(|q| q.status == "drift").count(),
                            tested.len(),
                            if tested.len() == 1 { "" } else { "s" },
                            d.alpha,
                            if a.fired { "strongest" } else { "closest" },
                            q.window,
                            q.why
                        );
                    }
                    None => {
                        a.why = match report
                            .queries
                            .iter()
                            .find(|q| &q.segment == scope && q.in_horizon)
                        {
                            Some(q) => format!("{}: {}", q.window, q.why),
                            None => "no window of the horizon has a reference to compare with"
                                .to_string(),
                        };
                    }
                }
                alerts.push(a);
            }
        }
    }

    // Probe drift.
    if let (Some(p), Some(client)) = (&d.probes, &client) {
        match probe_drift(input.config, d.embedder.as_deref().unwrap_or(""), p, client)? {
            Ok(pd) => {
                let mut a = alert("probe_drift", "probes".into(), "all".into());
                a.n = pd.compared;
                a.value = pd.min_cosine;
                match pd.status.as_str() {
                    "baseline_written" => {
                        a.status = "ok".into();
                        a.why = format!(
                            "{} probe vectors stored in {} (the baseline later runs compare with)",
                            pd.probes, pd.vectors
                        );
                    }
                    _ if pd.compared == 0 => {
                        a.why = "no probe matches a stored vector".into();
                    }
                    _ => {
                        a.fired = !pd.below.is_empty();
                        a.status = if a.fired { "fired" } else { "ok" }.into();
                        let model = match (&pd.stored_model, &pd.current_model) {
                            (Some(s), Some(c)) if s != c => {
                                format!("; the model changed ({s} → {c})")
                            }
                            _ => String::new(),
                        };
                        a.why = format!(
                            "{} of {} probes under cosine {} to their stored vectors (min {:.4}, mean {:.4}){}{model}",
                            pd.below.len(),
                            pd.compared,
                            pd.threshold,
                            pd.min_cosine.unwrap_or(0.0),
                            pd.mean_cosine.unwrap_or(0.0),
                            if pd.unmatched.is_empty() {
                                String::new()
                            } else {
                                format!("; {} without a stored vector", pd.unmatched.len())
                            }
                        );
                    }
                }
                alerts.push(a);
                report.probes = Some(pd);
            }
            Err(why) => incomplete.push(why),
        }
    }

    // Performance drift.
    for perf in &d.performance {
        let (pd, mut perf_alerts) = performance_drift(input, perf, &reference_of, &alert);
        report.performance.push(pd);
        alerts.append(&mut perf_alerts);
    }
    Ok((report, alerts))
}

fn fmt_p(p: f64) -> String {
    if p < 0.001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

/// The reference window of each window: `first` → the earliest (none for itself); `previous`
/// → the window before it in the data; a time → the window holding it, when it has traffic.
fn reference_resolver<'a>(
    spec: &'a str,
    windows: &'a BTreeSet<i64>,
    size: i64,
) -> impl Fn(i64) -> Option<i64> + 'a {
    let fixed = match spec {
        "first" => windows.first().copied(),
        "previous" => None,
        other => reference_start(other)
            .map(|s| math::window_start(s, size))
            .filter(|s| windows.contains(s)),
    };
    move |w| match spec {
        "previous" => windows.range(..w).next_back().copied(),
        _ => fixed.filter(|f| *f != w),
    }
}

fn embedder(config: &ProjectConfig, name: &str) -> Result<JudgeClient, EngineError> {
    let value = config
        .options
        .judges
        .get(name)
        .cloned()
        .unwrap_or(Value::Null);
    let settings: JudgeSettings = serde_json::from_value(value).map_err(|e| {
        config_error(
            config,
            "monitor.drift.embedder",
            format!("judge `{name}`: {e}"),
            None,
        )
    })?;
    JudgeClient::new(name, settings).map_err(|e| {
        config_error(
            config,
            "monitor.drift.embedder",
            format!("the embedding model of judge `{name}` does not load: {e}"),
            None,
        )
    })
}

/// The probe file's path and the stored vectors' path (relative to the config's folder).
fn probe_paths(config: &ProjectConfig, p: &ProbeOptions) -> (PathBuf, PathBuf, String) {
    let file = config.dir.join(&p.file);
    let shown = p.vectors.clone().unwrap_or_else(|| {
        Path::new(&p.file)
            .with_extension("vectors.json")
            .to_string_lossy()
            .into_owned()
    });
    (file, config.dir.join(&shown), shown)
}

/// Reads the probes (`(id, text)` per line), located errors as `file:line: …` (exit 2).
fn read_probes(path: &Path, shown: &str) -> Result<Vec<(String, String)>, EngineError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| EngineError::Usage(format!("{shown}: cannot read the probe file: {e}")))?;
    let mut out = Vec::new();
    let mut ids = HashSet::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{shown}:{}", i + 1);
        let v: Value = serde_json::from_str(line)
            .map_err(|e| EngineError::Usage(format!("{at}: not a JSON object: {e}")))?;
        let t = v
            .get("text")
            .and_then(Value::as_str)
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| EngineError::Usage(format!("{at}: no `text` string")))?;
        let id = match v.get("id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            None => format!("line {}", i + 1),
            Some(other) => {
                return Err(EngineError::Usage(format!(
                    "{at}: `id` must be a string or a number, not {other}"
                )))
            }
        };
        if !ids.insert(id.clone()) {
            return Err(EngineError::Usage(format!(
                "{at}: duplicate probe id `{id}`"
            )));
        }
        out.push((id, t.to_string()));
    }
    if out.is_empty() {
        return Err(EngineError::Usage(format!("{shown}: no probe")));
    }
    Ok(out)
}

/// Probe drift; the inner `Err` is an embedding failure (the evaluation is incomplete).
fn probe_drift(
    config: &ProjectConfig,
    embedder_name: &str,
    p: &ProbeOptions,
    client: &JudgeClient,
) -> Result<Result<ProbeDrift, String>, EngineError> {
    let (file, vectors_path, vectors_shown) = probe_paths(config, p);
    let probes = read_probes(&file, &p.file)?;
    let texts: Vec<String> = probes.iter().map(|(_, t)| t.clone()).collect();
    let current = match client.embed(&texts) {
        Ok(v) if v.len() == texts.len() => v,
        Ok(v) => {
            return Ok(Err(format!(
                "probe drift: the embedder returned {} vectors for {} probes",
                v.len(),
                texts.len()
            )))
        }
        Err(e) => {
            return Ok(Err(format!(
                "probe drift: embedding the probes failed: {e}"
            )))
        }
    };
    let current_model = client.model_identity();
    let mut pd = ProbeDrift {
        file: p.file.clone(),
        vectors: vectors_shown.clone(),
        status: "compared".into(),
        probes: probes.len() as u64,
        compared: 0,
        unmatched: Vec::new(),
        min_cosine: None,
        mean_cosine: None,
        threshold: p.min_cosine,
        below: Vec::new(),
        stored_model: None,
        current_model: current_model.clone(),
    };
    if !vectors_path.exists() {
        let stored = StoredProbes {
            schema_version: PROBE_VECTORS_SCHEMA_VERSION,
            embedder: embedder_name.to_string(),
            model_identity: current_model.clone(),
            dimension: current.first().map_or(0, Vec::len),
            probes: probes
                .iter()
                .zip(&current)
                .map(|((id, text), v)| StoredProbe {
                    id: id.clone(),
                    text: text.clone(),
                    vector: v.clone(),
                })
                .collect(),
        };
        let json = serde_json::to_string(&stored).map_err(|e| {
            EngineError::Usage(format!("{vectors_shown}: cannot encode the vectors: {e}"))
        })?;
        std::fs::write(&vectors_path, json + "\n").map_err(|e| {
            EngineError::Usage(format!(
                "{vectors_shown}: cannot write the probe vectors: {e}"
            ))
        })?;
        pd.status = "baseline_written".into();
        pd.stored_model = current_model;
        return Ok(Ok(pd));
    }
    let text = std::fs::read_to_string(&vectors_path)
        .map_err(|e| EngineError::Usage(format!("{vectors_shown}: cannot read: {e}")))?;
    let stored: StoredProbes = serde_json::from_str(&text).map_err(|e| {
        EngineError::Usage(format!(
            "{vectors_shown}:{}:{}: not a probe vectors file: {e}",
            e.line(),
            e.column()
        ))
    })?;
    pd.stored_model = stored.model_identity.clone();
    let by_id: BTreeMap<&str, &StoredProbe> =
        stored.probes.iter().map(|s| (s.id.as_str(), s)).collect();
    let mut cosines = Vec::new();
    for ((id, text), v) in probes.iter().zip(&current) {
        let Some(s) = by_id.get(id.as_str()).filter(|s| &s.text == text) else {
            pd.unmatched.push(id.clone());
            continue;
        };
        let a: Vec<f64> = s.vector.iter().copied().map(f64::from).collect();
        let b: Vec<f64> = v.iter().copied().map(f64::from).collect();
        // A stored vector of another dimension (another model) is as far as can be: -1.
        let c = oloproof_stats::cosine(&a, &b).unwrap_or(-1.0);
        if c < p.min_cosine {
            pd.below.push((id.clone(), c));
        }
        cosines.push(c);
    }
    pd.compared = cosines.len() as u64;
    pd.min_cosine = cosines.iter().copied().reduce(f64::min);
    pd.mean_cosine =
        (!cosines.is_empty()).then(|| cosines.iter().sum::<f64>() / cosines.len() as f64);
    Ok(Ok(pd))
}

/// One performance-drift item per window and segment, and its alerts per segment.
fn performance_drift(
    input: &DriftInput<'_, '_>,
    perf: &PerformanceOptions,
    reference_of: &dyn Fn(i64) -> Option<i64>,
    alert: &dyn Fn(&'static str, String, String) -> AlertReport,
) -> (PerformanceDrift, Vec<AlertReport>) {
    let by: Vec<String> = match &perf.by {
        Some(b) => vec![b.clone()],
        None => input.m.segments.clone(),
    };
    let subject = perf
        .signal
        .clone()
        .or_else(|| perf.criterion.clone())
        .unwrap_or_default();
    let in_horizon = |w: i64| input.horizon_start.is_some_and(|h| w >= h);
    let mut groups: BTreeMap<(String, i64), Vec<&Placed<'_>>> = BTreeMap::new();
    for p in input.placed {
        groups
            .entry((segment_of(&p.record.case.metadata, &by), p.window))
            .or_default()
            .push(p);
    }
    // (value, n, interval, per-observation values for a criterion)
    let measure = |ps: &[&Placed<'_>]| -> (Option<f64>, u64, Option<[f64; 2]>, Vec<f64>) {
        if let Some(signal) = &perf.signal {
            let k = ps.iter().filter(|p| has_signal(p, signal)).count() as u64;
            let n = ps.len() as u64;
            let interval = oloproof_stats::wilson(k, n, ALERT_CONFIDENCE)
                .ok()
                .map(|i| [i.lo, i.hi]);
            (
                (n > 0).then(|| k as f64 / n as f64),
                n,
                interval,
                Vec::new(),
            )
        } else {
            let c = perf.criterion.as_deref().unwrap_or_default();
            let sampled = input.sampled_for.get(c);
            let drawn: Vec<&Verdict> = ps
                .iter()
                .filter(|p| sampled.is_some_and(|s| s.contains(&p.record.case.id)))
                .filter_map(|p| {
                    input
                        .verdicts
                        .get(&(p.record.case.id.clone(), c.to_string()))
                })
                .collect();
            let values: Vec<f64> = drawn.iter().filter_map(|v| v.value()).collect();
            let kind = input.kinds.get(c).copied().unwrap_or(SummaryKind::Mean);
            let s =
                crate::summary::summarize_criterion(c, kind, &drawn, input.seed, input.resamples);
            (s.value, s.observed, s.interval, values)
        }
    };
    let mut windows = Vec::new();
    let mut per_segment: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for ((segment, w), ps) in &groups {
        let (value, n, interval, values) = measure(ps);
        let mut pw = PerformanceWindow {
            window: rfc3339_from_ms(*w),
            segment: segment.clone(),
            in_horizon: in_horizon(*w),
            status: "insufficient".into(),
            n,
            value,
            interval,
            band: perf.band,
            reference: None,
        };
        match perf.band {
            Some(band) => {
                if let Some([lo, hi]) = interval {
                    pw.status = if math::outside(oloproof_stats::Interval::new(lo, hi), band) {
                        "out_of_band"
                    } else {
                        "in_band"
                    }
                    .into();
                }
            }
            None => match reference_of(*w) {
                None => pw.status = "reference".into(),
                Some(r) => {
                    if let Some(rps) = groups.get(&(segment.clone(), r)) {
                        let (rv, rn, _, rvalues) = measure(rps);
                        // A share, or a criterion scored in [0, 1], cannot leave [0, 1]: its
                        // x̄-chart limits are clipped there, as the p-chart's are.
                        let bounded = perf.signal.is_some()
                            || perf.criterion.as_deref().is_some_and(|c| {
                                matches!(
                                    input.kinds.get(c),
                                    Some(SummaryKind::Proportion | SummaryKind::Rate)
                                )
                            });
                        let limits = rv.and_then(|rv| {
                            let l = if perf.signal.is_some() {
                                math::control_limits_share(rv, n)
                            } else {
                                math::control_limits_mean(&rvalues, values.len() as u64)
                            };
                            l.map(|[lo, hi]| match bounded {
                                true => (rv, [lo.max(0.0), hi.min(1.0)]),
                                false => (rv, [lo, hi]),
                            })
                        });
                        if let (Some((rv, band)), Some(v)) = (limits, value) {
                            pw.band = Some(band);
                            pw.reference = Some((rv, rn));
                            pw.status = if v < band[0] || v > band[1] {
                                "out_of_band"
                            } else {
                                "in_band"
                            }
                            .into();
                        }
                    }
                }
            },
        }
        per_segment
            .entry(segment.clone())
            .or_default()
            .push(windows.len());
        windows.push(pw);
    }
    let mut alerts = Vec::new();
    for (segment, idx) in &per_segment {
        let mut a = alert("performance_drift", subject.clone(), segment.clone());
        let decided: Vec<&PerformanceWindow> = idx
            .iter()
            .map(|&i| &windows[i])
            .filter(|w| w.in_horizon && matches!(w.status.as_str(), "out_of_band" | "in_band"))
            .collect();
        let out: Vec<&PerformanceWindow> = decided
            .iter()
            .copied()
            .filter(|w| w.status == "out_of_band")
            .collect();
        let shown = out.last().or(decided.last()).copied();
        match shown {
            Some(w) => {
                a.fired = !out.is_empty();
                a.status = if a.fired { "fired" } else { "ok" }.into();
                a.n = w.n;
                a.value = w.value;
                a.interval = w.interval;
                let band = w.band.unwrap_or([0.0, 0.0]);
                a.why = format!(
                    "{} of {} window{} outside the {}; {}: {} {} on {} {}{} against [{:.3}, {:.3}]",
                    out.len(),
                    decided.len(),
                    if decided.len() == 1 { "" } else { "s" },
                    if perf.band.is_some() {
                        "band (95% interval wholly outside)"
                    } else {
                        "reference window's 3-sigma control band"
                    },
                    w.window,
                    subject,
                    w.value.map_or("—".to_string(), |v| format!("{v:.3}")),
                    w.n,
                    if perf.signal.is_some() {
                        "traces"
                    } else {
                        "sampled judgments"
                    },
                    w.interval
                        .map(|[lo, hi]| format!(", 95% [{lo:.3}, {hi:.3}]"))
                        .unwrap_or_default(),
                    band[0],
                    band[1],
                );
                if let Some((rv, rn)) = w.reference {
                    let _ = write!(a.why, " (reference {rv:.3} on {rn})");
                }
            }
            None => {
                a.why = "no window of the horizon has a band to compare with (the reference window has no data, or is the only one)".into();
            }
        }
        alerts.push(a);
    }
    (
        PerformanceDrift {
            subject,
            by,
            band: perf.band,
            windows,
        },
        alerts,
    )
}

/// Whether a trace carries a feedback signal (`regeneration`: a `regenerated` feedback;
/// `thumbs_down`: a negative thumbs; `follow_up`: a follow-up question).
fn has_signal(p: &Placed<'_>, signal: &str) -> bool {
    let Some(pr) = &p.record.trace.production else {
        return false;
    };
    pr.feedback.iter().any(|f| {
        let name = f.name.to_ascii_lowercase();
        match signal {
            "regeneration" => {
                matches!(name.as_str(), "regenerated" | "regeneration") && f.is_negative()
            }
            "thumbs_down" => {
                matches!(
                    name.as_str(),
                    "thumbs" | "thumb" | "user_feedback" | "feedback" | "thumbs_up" | "thumbs_down"
                ) && f.is_negative()
            }
            "follow_up" => {
                matches!(name.as_str(), "follow_up" | "followup")
                    && f.value.as_bool() != Some(false)
            }
            _ => false,
        }
    })
}
