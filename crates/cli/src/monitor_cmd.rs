//! `oloproof monitor`: online evaluation of production traffic — windows and segments, tiered
//! sampling through the recorded-run path, quality SLOs on the Wilson lower bound, the minimum
//! guardrails as alerts, feedback signals, and a human-review queue (`oloproof_engine::monitor`).
//!
//! The config is loaded over the traffic (`monitor.traffic`, or `--traffic FILE`) as
//! `run --dataset` loads it; a bad `monitor:` key or value is a located error (exit 2).
//! Exit 4 when error traces of the horizon, or a criterion's missing verdicts, exceed
//! `--max-error-rate`; else 3 when an alert fired or an SLO is not met; else 0. The report is
//! recorded in the store as `mon_<ULID>` (named on stderr) for `oloproof report` and the viewer.

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use oloproof_core::config::ConfigError;
use oloproof_core::dataset::{load_dataset_with, DatasetEncoding, DatasetFormat, ReadOptions};
use oloproof_core::store::MonitorRecord;
use oloproof_engine::compare::Policy;
use oloproof_engine::monitor::math::SloState;
use oloproof_engine::monitor::shadow::ShadowRequest;
use oloproof_engine::monitor::{
    monitor, AlertReport, CriterionAggregate, MonitorReport, MonitorRequest,
};
use oloproof_engine::run::{RunFlags, Silent};
use oloproof_engine::EngineError;

use crate::cli::ConfigLocation;
use crate::commands::{config_path, validate_rate, CliError};
use crate::exit_codes;

/// The `traffic:` (or `--traffic`) that names the store's collected requests, not a file.
const COLLECTED: &str = "collected";

const AFTER_HELP: &str = "The monitor: section (oloproof.yaml, or the file given with --config):
  monitor:
    traffic: traffic.jsonl            # trace records with `production` (oloproof import),
                                      # or `collected`: what `oloproof collect` stored
    segments: [metadata.intent]       # one report per segment value
    window: {size: 1d, rolling: 7d}   # windows on production.timestamp (UTC); SLO/alert horizon
    sampling:
      target_judgments: 200           # rate: auto = min(1, 200 / traces per segment and window)
      seed: 0                         # the draw: sha256(\"<seed>:<trace id>\")
      always: [errors, negative_feedback]
      tiers:
        - {evaluators: [schema_validity], rate: 1.0}
        - {evaluators: [faithfulness], rate: auto}      # + 100 % of traces tier 0 flagged
    slos:
      - {criterion: faithfulness, score_above: 0.8, min_share: 0.95, on: wilson_lower_bound}
    alerts:
      - {type: latency_p95, stage: total, max_ms: 1500}
      - {type: cost_per_request, max_usd: 0.01}         # prices: system.rag.prices
      - {type: criterion_below, criterion: faithfulness, min: 0.8}
      - {type: filter_false_exclusion, max_rate: 0.02}
      - {type: regeneration_rate, band: [0.0, 0.1]}
    drift:
      embedder: mini                  # a judges: key with provider: local, kind: embedding
      reference: {window: first}      # first | previous | a window's start (2026-11-28)
      permutations: 1000              # MMD permutation test; alpha after Holm
      alpha: 0.01
      probes: {file: probes.jsonl, min_cosine: 0.99}   # vectors stored on the first run
      performance:
        - {signal: regeneration, by: metadata.intent, band: [0.0, 0.1]}
        - {criterion: faithfulness}   # no band: the reference window's 3-sigma limits
    shadow:
      policy: shadow-policy.yaml      # the candidate (this file's system:) against production
      window: latest                  # latest | horizon | a window's start
      evaluators: [faithfulness]      # default: every tier's criteria
      max_cases: 200                  # the smallest sampling draws

Decisions read intervals, never points: an SLO is met when the Wilson lower bound reaches
min_share; latency_p95 and cost_per_request fire when the lower bound is above the maximum,
criterion_below when the upper bound is below the minimum, filter_false_exclusion when the
Wilson lower bound is above max_rate, regeneration_rate when the Wilson interval is outside
the band. Drift: query_drift fires when a horizon window's MMD permutation p-value,
Holm-adjusted over the horizon's tests, is at most alpha; probe_drift when a probe's cosine
to its stored vector is under min_cosine; performance_drift when a window's 95 % interval
lies wholly outside a fixed band, or its value outside the reference's control limits.
Estimates use only the traces the rate drew; always-included and flagged traces
are judged and counted as `targeted`.

Shadow: the config's system: answers the questions of the window's traces (production's
error traces and traces without a question left out), both sides are judged by the same
evaluators, and the two runs are compared case by case under the policy; the comparison is
recorded (oloproof report sha256:...) and a BLOCK gate exits 3.

The report is recorded in the run store (its id, mon_…, is printed on stderr):
`oloproof report mon_… -o monitor.html` writes it as a page, and `oloproof view` lists it.

Review: --review-queue N -o review.jsonl writes N blind random judged traces plus the
low-confidence and thumbs-down ones as `calibrate --labels` rows (label: null); fill each
label and run `oloproof calibrate --judge J --evaluator E --labels review.jsonl`, and
`oloproof promote review.jsonl -o golden.jsonl` to turn them into golden cases.

Exit codes:
  0  no alert fired and every SLO is met
  2  usage or configuration error (a bad monitor: key or value, at file:line:col)
  3  an alert fired, an SLO is not met, or the shadow comparison's gate blocked
  4  error traces of the horizon, or a criterion's missing verdicts, above --max-error-rate";

#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct MonitorArgs {
    /// Project folder holding oloproof.yaml (default: the current directory).
    pub(crate) dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) location: ConfigLocation,
    /// Override a config value, e.g. `--set monitor.window.size=6h` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub(crate) overrides: Vec<String>,
    /// The traffic (trace JSONL with `production`), instead of `monitor.traffic`; `collected`
    /// reads the requests `oloproof collect` recorded in the store (a file named so: ./collected).
    #[arg(long, value_name = "FILE")]
    pub(crate) traffic: Option<PathBuf>,
    /// Do not read the judgment cache (fresh results are still stored).
    #[arg(long)]
    pub(crate) no_cache: bool,
    /// Largest share of error traces in the horizon (and of missing verdicts per criterion)
    /// before the monitor exits 4 (default: the config's `max_error_rate`, else 0).
    #[arg(long, value_name = "SHARE")]
    pub(crate) max_error_rate: Option<f64>,
    /// Stop judging once the judges have spent this many dollars.
    #[arg(long, value_name = "USD")]
    pub(crate) max_cost: Option<f64>,
    /// Write a human-review queue of N blind random judged traces, plus the low-confidence and
    /// thumbs-down ones, to -o.
    #[arg(long, value_name = "N", requires = "output")]
    pub(crate) review_queue: Option<usize>,
    /// Where --review-queue writes (JSONL rows `calibrate --labels` reads).
    #[arg(short, long, value_name = "FILE", requires = "review_queue")]
    pub(crate) output: Option<PathBuf>,
    /// The report as JSON on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `oloproof monitor`.
pub(crate) fn monitor_cmd(args: MonitorArgs) -> Result<u8, CliError> {
    validate_rate(args.max_error_rate)?;
    if args.max_cost.is_some_and(|c| !(c.is_finite() && c >= 0.0)) {
        return Err(CliError::Usage(
            "--max-cost takes a non-negative amount of dollars, e.g. 2.50".into(),
        ));
    }
    let path = config_path(&args.location, args.dir.as_deref())?;
    let collected_flag = args.traffic.as_deref() == Some(std::path::Path::new(COLLECTED));
    let given = match &args.traffic {
        Some(_) if collected_flag => Some(PathBuf::from(COLLECTED)),
        other => other.as_deref().map(std::path::absolute).transpose()?,
    };
    // The traffic is the config's dataset; `monitor.traffic` is only known once it is read,
    // so a stand-in is named until then (nothing opens it before it is replaced).
    let stand_in = given
        .clone()
        .unwrap_or_else(|| PathBuf::from("monitor.traffic"));
    let mut config =
        oloproof_engine::project::load_config_for_dataset(&path, &args.overrides, &stand_in)?;
    args.location.apply_store(&mut config)?;
    let m = oloproof_engine::monitor::monitor_options(&config)?.clone();
    let from_store = collected_flag || (given.is_none() && m.traffic.as_deref() == Some(COLLECTED));
    let traffic = match (&given, &m.traffic) {
        _ if from_store => PathBuf::from(COLLECTED),
        (Some(t), _) => t.clone(),
        (None, Some(t)) => std::path::absolute(config.dir.join(t))?,
        (None, None) => {
            let mut err = config.error_at("monitor", "no traffic to monitor");
            err.help = Some(
                "add `traffic: traffic.jsonl` under `monitor:`, or pass --traffic FILE".into(),
            );
            return Err(CliError::Config(ConfigError::Invalid(err)));
        }
    };
    config.options.dataset = Some(traffic.display().to_string());
    let read = ReadOptions {
        format: Some(DatasetFormat::Trace),
        encoding: Some(DatasetEncoding::Jsonl),
        max_error_rate: args.max_error_rate.unwrap_or(config.options.max_error_rate),
    };
    let dataset = if from_store {
        collected_dataset(&config, &read)?
    } else {
        load_dataset_with(&traffic, &read).map_err(EngineError::from)?
    };
    {
        let mut err = std::io::stderr().lock();
        for warning in &dataset.warnings {
            writeln!(err, "warning: {warning}")?;
        }
        for skipped in &dataset.skipped {
            write!(err, "warning: row skipped: {skipped}")?;
        }
    }
    // Shadow evaluation: the candidate is the file's own `system:`, judged like production.
    let shadow_parts = match &m.shadow {
        Some(options) => Some(shadow_setup(&path, &args, &config, options)?),
        None => None,
    };
    crate::interrupt::watch(config.store_location());
    let shown = args
        .traffic
        .clone()
        .or_else(|| m.traffic.as_ref().map(PathBuf::from))
        .unwrap_or_else(|| traffic.clone());
    let out = monitor(
        &MonitorRequest {
            config: &config,
            traffic: &dataset,
            traffic_path: &shown,
            flags: RunFlags {
                no_cache: args.no_cache,
                max_error_rate: args.max_error_rate,
                max_cost: args.max_cost,
                detach: false,
            },
            review_queue: args.review_queue,
            shadow: shadow_parts
                .as_ref()
                .map(|(candidate, policy)| ShadowRequest { candidate, policy }),
        },
        &mut Silent,
    )?;
    if let Some(file) = &args.output {
        let mut text = String::new();
        for row in &out.review_rows {
            text.push_str(&serde_json::to_string(row).unwrap_or_default());
            text.push('\n');
        }
        std::fs::write(file, text)?;
    }
    let report = &out.report;
    // The report is kept in the store (`oloproof report mon_…`, the viewer's monitor page).
    let monitor_id = MonitorRecord::new_id();
    let content = oloproof_core::store::encode(report, || format!("monitor report {monitor_id}"))?;
    oloproof_store::open(&config.store_location())?.save_monitor(
        &monitor_id,
        &report.traffic.path,
        &content,
    )?;
    {
        let mut stdout = std::io::stdout().lock();
        if args.json {
            writeln!(
                stdout,
                "{}",
                serde_json::to_string_pretty(report).unwrap_or_default()
            )?;
        } else {
            write!(stdout, "{}", render(report, args.output.as_deref()))?;
        }
    }
    let mut err = std::io::stderr().lock();
    writeln!(
        err,
        "Recorded as {monitor_id}: `oloproof report {monitor_id} -o monitor.html`, or `oloproof view`"
    )?;
    if !report.incomplete.is_empty() {
        for line in &report.incomplete {
            writeln!(err, "error: {line}; exit 4")?;
        }
        return Ok(exit_codes::INCOMPLETE);
    }
    if report.breached() {
        return Ok(exit_codes::GATE_BLOCKED);
    }
    Ok(exit_codes::SUCCESS)
}

/// `traffic: collected` (or `--traffic collected`): the requests `oloproof collect` recorded
/// in the store, assembled as `import --collected` assembles them (the config's `corpus:`
/// resolving passage text), read as the traffic. What the import dropped is said on stderr.
fn collected_dataset(
    config: &oloproof_core::config::ProjectConfig,
    read: &ReadOptions,
) -> Result<oloproof_core::dataset::Dataset, CliError> {
    let location = config.store_location();
    if location.sqlite_path().is_some_and(|p| !p.exists()) {
        return Err(CliError::Usage(format!(
            "there is no store at {location}, so no collected requests: run `oloproof collect` and point the app's OTLP exporter at it, or give `--traffic FILE`"
        )));
    }
    let store = oloproof_store::open_reader(&location)?;
    let corpus = match &config.options.corpus {
        Some(file) => Some(oloproof_engine::filter_check::load_corpus_file(
            file,
            &config.dir,
            Some(config),
        )?),
        None => None,
    };
    let collected = oloproof_collect::read::collected_traffic(store.as_ref(), corpus.as_ref())?;
    let summary = &collected.summary;
    if collected.requests == 0 {
        return Err(CliError::Usage(format!(
            "the store {location} holds no collected requests: run `oloproof collect` and point the app's OTLP exporter at it, or give `--traffic FILE`"
        )));
    }
    {
        let mut err = std::io::stderr().lock();
        let dropped: Vec<String> = summary
            .spans_dropped
            .iter()
            .chain(&summary.records_dropped_by)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        writeln!(
            err,
            "Traffic from the store: {} collected request{} · {} spans read = {} used + {} dropped{} · {} trace records",
            collected.requests,
            if collected.requests == 1 { "" } else { "s" },
            summary.spans_read,
            summary.spans_used,
            summary.dropped(),
            if dropped.is_empty() { String::new() } else { format!(" ({})", dropped.join(", ")) },
            summary.records
        )?;
        for p in &summary.first {
            writeln!(err, "  {}: {}: {}", p.at, p.kind, p.message)?;
        }
    }
    let mut dataset = oloproof_core::dataset::parse_text(
        COLLECTED,
        &collected.text,
        DatasetEncoding::Jsonl,
        read,
    )
    .map_err(|errors| EngineError::from(oloproof_core::case::CaseFileError::Invalid(errors)))?;
    dataset.sha256 = oloproof_core::identity::sha256_hex(collected.text.as_bytes());
    Ok(dataset)
}

/// The candidate config (the same file and overrides, with its `system:`) and the policy of
/// `monitor.shadow`; a file without `system:` and a bad policy are located errors (exit 2).
fn shadow_setup(
    path: &std::path::Path,
    args: &MonitorArgs,
    config: &oloproof_core::config::ProjectConfig,
    options: &oloproof_core::monitor::ShadowOptions,
) -> Result<(oloproof_core::config::ProjectConfig, Policy), CliError> {
    let mut candidate =
        oloproof_engine::project::load_config_for_given_cases(path, &args.overrides)?;
    args.location.apply_store(&mut candidate)?;
    let policy_path = config.dir.join(&options.policy);
    let shown = policy_path.display().to_string();
    let text = std::fs::read_to_string(&policy_path).map_err(|source| ConfigError::Read {
        path: shown.clone(),
        source,
    })?;
    let policy =
        Policy::parse(&shown, &text).map_err(|e| CliError::Config(ConfigError::Invalid(e)))?;
    Ok((candidate, policy))
}

/// The shadow evaluation's section of the report.
fn render_shadow(o: &mut String, s: &oloproof_core::shadow::ShadowReport) {
    let left: Vec<String> = s.left_out.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let _ = writeln!(
        o,
        "\nShadow: {} over {} of {} eligible traces of {} (window {}; the smallest draws, seed {}, at most {}){} · criteria: {}",
        if s.candidate_system.is_empty() { "the candidate" } else { s.candidate_system.as_str() },
        s.selected,
        s.eligible,
        if s.windows.is_empty() { "no window".to_string() } else { s.windows.join(", ") },
        s.window,
        s.seed,
        s.max_cases,
        if left.is_empty() { String::new() } else { format!(" · left out: {}", left.join(", ")) },
        s.criteria.join(", ")
    );
    if let (Some(candidate), Some(production)) = (&s.candidate_run, &s.production_run) {
        let _ = writeln!(
            o,
            "  candidate run {candidate}{} · production run {production}",
            if s.candidate_errors > 0 {
                format!(" ({} cases ended in an error)", s.candidate_errors)
            } else {
                String::new()
            }
        );
    }
    if let Some(c) = &s.comparison {
        for line in oloproof_report::compare::comparison_report(c).lines() {
            let _ = writeln!(o, "  {line}");
        }
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

fn num(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

fn criterion_cell(a: &CriterionAggregate) -> String {
    let s = &a.summary;
    let mut cell = format!("{:<22}", s.criterion);
    match (s.value, s.passed) {
        (Some(v), Some(k)) => {
            let _ = write!(cell, " {}/{} = {}", k, s.observed, pct(v));
        }
        (Some(v), None) => {
            let _ = write!(cell, " mean {}", num(v));
        }
        (None, _) => cell.push_str(" —"),
    }
    if let Some([lo, hi]) = s.interval {
        let _ = if s.passed.is_some() {
            write!(cell, " [{}, {}]", pct(lo), pct(hi))
        } else {
            write!(cell, " [{}, {}]", num(lo), num(hi))
        };
    }
    let _ = write!(
        cell,
        " · {} observed · {} missing · {} excluded",
        s.observed, s.missing, s.excluded
    );
    if a.targeted > 0 {
        let _ = write!(cell, " · {} targeted (not in the estimate)", a.targeted);
    }
    for (name, q) in [("p10", &a.p10), ("p25", &a.p25)] {
        if let Some(q) = q {
            let _ = write!(cell, " · {name} {}", num(q.value));
            match q.interval {
                Some([lo, hi]) => {
                    let _ = write!(cell, " [{}, {}]", num(lo), num(hi));
                }
                None => cell.push_str(" (no interval)"),
            }
        }
    }
    if let Some(u) = &a.under {
        if let (Some(share), Some([lo, hi])) = (u.share, u.interval) {
            let _ = write!(
                cell,
                " · ≤ {} {} [{}, {}]",
                num(u.threshold),
                pct(share),
                pct(lo),
                pct(hi)
            );
        }
    }
    cell
}

fn changes_text(c: &oloproof_engine::monitor::ChangeMarkers) -> Option<String> {
    let mut parts = Vec::new();
    for (what, changed, values) in [
        ("code", c.code_changed, &c.code),
        ("model", c.model_changed, &c.model),
        ("config", c.config_changed, &c.config),
    ] {
        if changed {
            parts.push(format!("{what} changed ({})", values.join(", ")));
        }
    }
    (!parts.is_empty()).then(|| parts.join(" · "))
}

fn alert_line(a: &AlertReport) -> String {
    let head = match a.status.as_str() {
        "fired" => "FIRED",
        "insufficient" => "n/a  ",
        _ => "ok   ",
    };
    let mut line = format!(
        "  {head} {} {} · {}: {}",
        a.kind, a.subject, a.segment, a.why
    );
    if a.fired {
        match changes_text(&a.changes) {
            Some(c) => {
                let _ = write!(line, "; in the horizon: {c}");
            }
            None => line.push_str("; no code, model or config change seen in the horizon"),
        }
    }
    line.push('\n');
    line
}

/// The drift section: each query test, the probe set, each performance window.
fn render_drift(o: &mut String, d: &oloproof_engine::monitor::drift::DriftReport) {
    let _ = writeln!(
        o,
        "\nDrift (embedder {}, reference window: {}, {} permutations, α {} after Holm over the horizon){}:",
        d.embedder.as_deref().unwrap_or("none"),
        d.reference,
        d.permutations,
        d.alpha,
        if d.without_question > 0 {
            format!(" · {} records without a question (not embedded)", d.without_question)
        } else {
            String::new()
        }
    );
    for q in &d.queries {
        let state = match q.status.as_str() {
            "drift" => "DRIFT   ",
            "no_drift" => "no drift",
            _ => "n/a     ",
        };
        let _ = writeln!(
            o,
            "  queries {state} {}{} · {}: {}{}",
            q.window,
            q.reference_window
                .as_ref()
                .map(|r| format!(" vs {r}"))
                .unwrap_or_default(),
            q.segment,
            q.why,
            if q.subsampled_out > 0 {
                format!(" ({} more left out by max_queries)", q.subsampled_out)
            } else {
                String::new()
            }
        );
    }
    if let Some(p) = &d.probes {
        let _ = writeln!(
            o,
            "  probes {} · {} probes, {} compared{}{}",
            p.file,
            p.probes,
            p.compared,
            match (p.status.as_str(), p.min_cosine, p.mean_cosine) {
                ("baseline_written", _, _) => format!(" · baseline written to {}", p.vectors),
                (_, Some(min), Some(mean)) => format!(
                    " · cosine to the stored vectors min {min:.4}, mean {mean:.4} (threshold {}): {} under",
                    p.threshold,
                    p.below.len()
                ),
                _ => String::new(),
            },
            if p.unmatched.is_empty() {
                String::new()
            } else {
                format!(" · without a stored vector: {}", p.unmatched.join(", "))
            }
        );
    }
    for perf in &d.performance {
        let _ = writeln!(
            o,
            "  performance {} by {}{}:",
            perf.subject,
            if perf.by.is_empty() {
                "(all)".to_string()
            } else {
                perf.by.join(", ")
            },
            perf.band
                .map(|[lo, hi]| format!(" · band [{}, {}]", num(lo), num(hi)))
                .unwrap_or_else(|| " · control band from the reference window".to_string())
        );
        for w in &perf.windows {
            let _ = writeln!(
                o,
                "    {} {} · {}: {} on {}{}{}{}",
                match w.status.as_str() {
                    "out_of_band" => "OUT    ",
                    "in_band" => "in band",
                    "reference" => "ref    ",
                    _ => "n/a    ",
                },
                w.window,
                w.segment,
                w.value.map_or_else(|| "—".to_string(), num),
                w.n,
                w.interval
                    .map(|[lo, hi]| format!(" [{}, {}]", num(lo), num(hi)))
                    .unwrap_or_default(),
                match (w.status.as_str(), w.band) {
                    ("reference", _) => String::new(),
                    (_, Some([lo, hi])) => format!(" · band [{}, {}]", num(lo), num(hi)),
                    _ => String::new(),
                },
                w.reference
                    .map(|(v, n)| format!(" (reference {} on {n})", num(v)))
                    .unwrap_or_default()
            );
        }
    }
}

/// The terminal report.
fn render(r: &MonitorReport, review_file: Option<&std::path::Path>) -> String {
    let mut o = String::new();
    let t = &r.traffic;
    let _ = writeln!(
        o,
        "Traffic: {} · {} records, {} in windows, {} without a timestamp{}",
        t.path,
        t.records,
        t.timed,
        t.untimed,
        if t.skipped_rows > 0 {
            format!(", {} rows skipped", t.skipped_rows)
        } else {
            String::new()
        }
    );
    for u in &t.untimed_examples {
        let _ = writeln!(o, "  not in a window: {} ({})", u.id, u.reason);
    }
    let w = &r.window;
    let _ = writeln!(
        o,
        "Windows: {} · horizon {} ({} window{}){}",
        w.size,
        w.rolling,
        w.horizon_windows,
        if w.horizon_windows == 1 { "" } else { "s" },
        match (&w.horizon_start, &w.horizon_end) {
            (Some(a), Some(b)) => format!(": {a} → {b}"),
            _ => String::new(),
        }
    );
    let s = &r.sampling;
    let _ = writeln!(
        o,
        "Sampling: seed {} · target {} judgments per segment and window · always: {}",
        s.seed,
        s.target_judgments,
        if s.always.is_empty() {
            "(none)".to_string()
        } else {
            s.always.join(", ")
        }
    );
    for tier in &s.tiers {
        let reasons: Vec<String> = tier
            .by_reason
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let _ = writeln!(
            o,
            "  tier {} [{}] rate {}{}: {} selected ({}) · {} judged, {} from the judgment cache · {} flagged{}",
            tier.tier,
            tier.evaluators.join(", "),
            tier.rate.as_str().map_or_else(|| tier.rate.to_string(), str::to_string),
            if tier.takes_flagged { " + flagged" } else { "" },
            tier.selected,
            if reasons.is_empty() { "none".to_string() } else { reasons.join(", ") },
            tier.judgments_fresh,
            tier.judgments_cached,
            tier.flagged,
            tier.run_id.as_ref().map(|id| format!(" · {id}")).unwrap_or_default()
        );
    }
    for win in &r.windows {
        let _ = writeln!(
            o,
            "\nWindow {} → {}{}",
            win.start,
            win.end,
            if win.in_horizon {
                " (in the horizon)"
            } else {
                ""
            }
        );
        for seg in &win.segments {
            let _ = writeln!(
                o,
                "  {} · {} traces · {} errors",
                seg.segment, seg.traces, seg.errors
            );
            for c in &seg.criteria {
                let _ = writeln!(o, "    {}", criterion_cell(c));
            }
        }
        let f = &win.feedback;
        let reasons: Vec<String> = f
            .down_reasons
            .iter()
            .map(|(k, v)| format!("\"{k}\" {v}"))
            .collect();
        let _ = writeln!(
            o,
            "  feedback: thumbs up {} · thumbs down {}{} · regenerated {} · copied {} · follow-ups {}",
            f.thumbs_up,
            f.thumbs_down,
            if reasons.is_empty() { String::new() } else { format!(" ({})", reasons.join(", ")) },
            f.regenerated,
            f.copied,
            f.follow_up
        );
        if let Some(c) = changes_text(&win.changes) {
            let _ = writeln!(o, "  changes: {c}");
        }
    }
    if !r.slos.is_empty() {
        let _ = writeln!(
            o,
            "\nSLOs over the horizon (decided on the Wilson lower bound):"
        );
        for slo in &r.slos {
            let d = &slo.decision;
            let state = match d.state {
                SloState::Met => "MET",
                SloState::NotDemonstrated => "NOT DEMONSTRATED",
                SloState::Violated => "VIOLATED",
                SloState::NoData => "NO DATA",
            };
            let detail = match (d.share, d.lower_bound) {
                (Some(share), Some(lb)) => format!(
                    "{}/{} above {} ({}), lower bound {} {} {} · error budget: {} failures allowed, {} seen, {}",
                    d.good,
                    d.n,
                    num(slo.score_above),
                    pct(share),
                    pct(lb),
                    if lb >= slo.min_share { "≥" } else { "<" },
                    pct(slo.min_share),
                    d.allowed_failures,
                    d.failures,
                    if d.budget_left >= 0 {
                        format!("{} left", d.budget_left)
                    } else {
                        format!("{} over", -d.budget_left)
                    }
                ),
                _ => "no sampled judgment in the horizon".to_string(),
            };
            let _ = writeln!(
                o,
                "  {state} {} > {} for ≥ {} · {}: {detail}",
                slo.criterion,
                num(slo.score_above),
                pct(slo.min_share),
                slo.segment
            );
        }
    }
    if let Some(d) = &r.drift {
        render_drift(&mut o, d);
    }
    if let Some(shadow) = &r.shadow {
        render_shadow(&mut o, shadow);
    }
    if !r.alerts.is_empty() {
        let _ = writeln!(o, "\nAlerts over the horizon (decided on intervals):");
        for a in &r.alerts {
            o.push_str(&alert_line(a));
        }
    }
    if let (Some(review), Some(file)) = (&r.review, review_file) {
        let reasons: Vec<String> = review
            .by_reason
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let _ = writeln!(
            o,
            "\nReview queue: {} rows ({}) written to {}; fill each `label`, then `oloproof calibrate --judge J --evaluator E --labels {}`",
            review.rows,
            if reasons.is_empty() { "none".to_string() } else { reasons.join(", ") },
            file.display(),
            file.display()
        );
    }
    let fired = r.alerts.iter().filter(|a| a.fired).count();
    let unmet = r.slos.iter().filter(|s| s.decision.state.fails()).count();
    let _ = writeln!(
        o,
        "\nMonitor: {} · {fired} alert{} fired · {unmet} of {} SLO{} not met{} · {} of {} traces of the horizon in error",
        if !r.incomplete.is_empty() {
            "INCOMPLETE (exit 4)"
        } else if r.breached() {
            "BREACH (exit 3)"
        } else {
            "OK"
        },
        if fired == 1 { "" } else { "s" },
        r.slos.len(),
        if r.slos.len() == 1 { "" } else { "s" },
        match r.shadow.as_ref().and_then(|s| s.comparison.as_ref()) {
            Some(c) if c.gate == oloproof_core::comparison::Gate::Block => " · shadow gate BLOCK",
            Some(_) => " · shadow gate PASS",
            None => "",
        },
        r.errors.errors,
        r.errors.traces
    );
    o
}
