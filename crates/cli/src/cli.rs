//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use oloproof_trec::cli::{FuseArgs, TrecArgs};

use crate::exit_codes;

/// Evaluate a staged RAG system: measure every stage, with honest intervals.
#[derive(Debug, Parser)]
#[command(name = "oloproof", version, after_help = exit_codes::HELP)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
    /// Log progress details to stderr (RUST_LOG overrides).
    #[arg(short, long, global = true)]
    pub(crate) verbose: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the system over the case set, judge every case and print the metric table.
    #[command(after_help = exit_codes::HELP)]
    Run(RunArgs),
    /// List the runs of the store, newest first.
    Runs(StoreArgs),
    /// Print a run's summary, or one case's full trace with --case.
    Show(ShowArgs),
    /// Re-execute a run's failed cases under an intervention to find which stage failed.
    Diagnose(DiagnoseArgs),
    /// Compare a candidate run with a baseline, case by case, under a written policy (the gate).
    #[command(after_help = exit_codes::HELP)]
    Compare(crate::compare_cmd::CompareArgs),
    /// Measure a judge's agreement with human labels before it may gate (Cohen's kappa, …).
    #[command(after_help = exit_codes::HELP)]
    Calibrate(CalibrateArgs),
    /// Lost in the middle: re-generate with the gold passage first, middle and last among distractors.
    LostInTheMiddle(LostInTheMiddleArgs),
    /// List the cases behind a diagnosis, a comparison or a run.
    Inspect(InspectArgs),
    /// Write a run, comparison, diagnosis or monitor report as a self-contained HTML page, Markdown or JUnit XML.
    Report(crate::report_cmd::ReportArgs),
    /// Compute any metric of the library on a JSONL file (`oloproof metric --list`).
    Metric(crate::metric_cmd::MetricArgs),
    /// trec_eval-compatible ranking evaluation of run files against qrels.
    Trec(TrecArgs),
    /// Fuse several run files into one (RRF, CombSUM, …).
    Fuse(FuseArgs),
    /// Write a run's finished cases as a Ragas dataset (JSONL), e.g. for `run --dataset`.
    Export(crate::export_cmd::ExportArgs),
    /// Turn production traces (OTLP JSON Lines or protobuf; OpenInference and OpenTelemetry
    /// GenAI attributes; Phoenix and Langfuse exports) into trace records for `run --dataset`, naming what the spans did not
    /// record.
    #[command(after_help = IMPORT_HELP)]
    Import(crate::import_cmd::ImportArgs),
    /// The score history: a table, `--plot FILE.svg`, or `append RUN_ID` to add stored runs.
    History(crate::history_cmd::HistoryArgs),
    /// Absolute quality gate: thresholds on a run's values or interval bounds (or a window of
    /// the history), exit 0 or 3.
    #[command(after_help = exit_codes::HELP)]
    Gate(crate::gate_cmd::GateArgs),
    /// Run the system over saved questions and write a Ragas dataset (JSONL) of what it did.
    #[command(after_help = exit_codes::HELP)]
    Refresh(crate::refresh_cmd::RefreshArgs),
    /// Draft a synthetic test set from documents with a judge model (review before use).
    #[command(after_help = exit_codes::HELP)]
    Generate(crate::generate_cmd::GenerateArgs),
    /// Browse the run store in a local web viewer (runs, cases, comparisons, diagnoses, monitor reports).
    View(crate::view_cmd::ViewArgs),
    /// Execute a run's pending cases with other workers sharing it (a Postgres store): claims
    /// batches under a lease until none is left.
    #[command(after_help = exit_codes::HELP)]
    Worker(crate::worker_cmd::WorkerArgs),
    /// Online evaluation of production traffic: windows, segments, tiered sampling, quality
    /// SLOs on the Wilson lower bound, guardrail alerts, feedback, a human-review queue.
    Monitor(crate::monitor_cmd::MonitorArgs),
    /// Turn a reviewed queue (`monitor --review-queue`, labels filled) into golden cases: a
    /// pass keeps production's answer as the reference, a failure takes the reviewer's.
    Promote(crate::promote_cmd::PromoteArgs),
    /// Receive OTLP/HTTP traces and logs (`POST /v1/traces`, `POST /v1/logs`; protobuf or
    /// JSON) from instrumented apps into the run store, until Ctrl-C; `import --collected`
    /// turns them into trace records.
    Collect(crate::collect_cmd::CollectArgs),
    /// Move runs between stores (`store copy SRC DST`: SQLite to Postgres and back).
    Store(crate::store_cmd::StoreCommandArgs),
}

/// `import --help`'s epilogue: what is read and the exit codes.
const IMPORT_HELP: &str = "Reads OTLP JSON Lines of TracesData (the Collector's file exporter; camelCase or snake_case keys,
hex or base64 ids), one OTLP JSON document, binary ExportTraceServiceRequest protobuf, Phoenix
exports (span pages, the spans dataframe, otlpv1 pages; annotations as feedback) and Langfuse
exports (observations, traces, scores as feedback; JSON, JSON Lines or CSV). Spans are
grouped by trace id into one record each: question, rewrites, every retrieval, rerank in and out,
answer, per-stage latency, tokens, TTFT, feedback (gen_ai.evaluation.result events), error and
segments (metadata, session.id, user.id, tag.tags), from OpenInference and OpenTelemetry GenAI
attributes. What the spans did not carry is listed in production.not_recorded; evaluators that
read it exclude the case (not_recorded).

Example:
  oloproof import traces.jsonl -o traffic.jsonl --corpus corpus.jsonl
  oloproof import observations.jsonl traces.json scores.csv -o traffic.jsonl   # Langfuse
  oloproof run --dataset traffic.jsonl

Exit codes:
  0  imported
  2  unusable arguments: a missing or unreadable file, a corpus that does not parse
  4  more spans dropped (unreadable lines, truncated protobuf, duplicate ids, ...) than --max-error-rate";

/// Where the config (and so the store) is.
#[derive(Debug, Args, Clone)]
pub(crate) struct ConfigLocation {
    /// The config file (default: DIR/oloproof.yaml, or ./oloproof.yaml).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// The run store, instead of the config's `store:`: a SQLite file, or
    /// `postgres://user@host/db` (the password from PGPASSWORD, or the variable named by
    /// `?password_env=NAME`; never in the URL).
    #[arg(long, value_name = "PATH|URL")]
    pub(crate) store: Option<String>,
}

impl ConfigLocation {
    /// `--store` read as a location (a path relative to the current directory).
    pub(crate) fn store_flag(
        &self,
    ) -> Result<Option<oloproof_core::store::StoreLocation>, std::io::Error> {
        use oloproof_core::store::StoreLocation;
        Ok(match &self.store {
            None => None,
            Some(s) if StoreLocation::is_url(s) => Some(StoreLocation::Postgres(s.clone())),
            Some(s) => Some(StoreLocation::Sqlite(std::path::absolute(s)?)),
        })
    }

    /// Puts `--store` in place of the config's `store:`.
    pub(crate) fn apply_store(
        &self,
        config: &mut oloproof_core::config::ProjectConfig,
    ) -> Result<(), std::io::Error> {
        use oloproof_core::store::StoreLocation;
        match self.store_flag()? {
            None => {}
            Some(StoreLocation::Postgres(url)) => config.options.store = Some(url),
            Some(StoreLocation::Sqlite(path)) => {
                config.options.store = Some(path.display().to_string())
            }
        }
        Ok(())
    }
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Project folder holding oloproof.yaml (default: the current directory).
    pub(crate) dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) location: ConfigLocation,
    /// Override a config value, e.g. `--set system.rag.top_k=4` (repeatable; wins over the file).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub(crate) overrides: Vec<String>,
    /// Do not read the caches (fresh results are still stored).
    #[arg(long)]
    pub(crate) no_cache: bool,
    /// Finish an interrupted run instead of starting a new one.
    #[arg(long, value_name = "RUN_ID", conflicts_with = "overrides")]
    pub(crate) resume: Option<String>,
    /// Print the summary as JSON on stdout instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Largest share of cases that may end in an error before the run exits 4 (default: the
    /// config's `max_error_rate`, else 0).
    #[arg(long, value_name = "SHARE")]
    pub(crate) max_error_rate: Option<f64>,
    /// Stop taking new cases once the judges have spent this many dollars (resume later).
    #[arg(long, value_name = "USD")]
    pub(crate) max_cost: Option<f64>,
    /// Print the number of judge calls and an estimated token count, then stop: nothing is sent.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Judge every case N times with every judged evaluator (separate cache namespaces) and
    /// report how far the repeats agree (cases identical in every repeat, Krippendorff's alpha).
    #[arg(long, value_name = "N", conflicts_with = "resume")]
    pub(crate) repeats: Option<u32>,
    /// Threads of every `provider: local` model's forward pass (default: each judge's
    /// `threads:`, else every core).
    #[arg(long, value_name = "N")]
    pub(crate) threads: Option<usize>,
    /// Evaluate recorded cases instead of running the system: Ragas or trace JSONL, Ragas'
    /// pandas CSV / JSON exports (score columns become external scores), Hugging Face
    /// columnar JSON or Parquet.
    #[arg(long, value_name = "FILE", conflicts_with = "resume")]
    pub(crate) dataset: Option<PathBuf>,
    /// The dataset's format (default: detected from the extension and content; JSONL
    /// records as Ragas or trace from the first one).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub(crate) dataset_format: Option<DatasetFormatArg>,
    /// Append the run's line to this score history (JSONL; default: `history:` of oloproof.yaml,
    /// else none).
    #[arg(long, value_name = "FILE")]
    pub(crate) history: Option<PathBuf>,
    /// Score a fixed subset of N cases, chosen from the case ids and `--seed` only (reordering
    /// the case file keeps the sample).
    #[arg(long, value_name = "N", conflicts_with = "resume")]
    pub(crate) sample: Option<usize>,
    /// Seed of `--sample` (default 0).
    #[arg(long, value_name = "S", requires = "sample")]
    pub(crate) seed: Option<u64>,
    /// Record the run and return its id without executing it: `oloproof worker --run ID`
    /// processes execute it (on a shared Postgres store, from any machine).
    #[arg(long)]
    pub(crate) detach: bool,
}

/// Formats of `run --dataset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum DatasetFormatArg {
    /// Ragas `EvaluationDataset` JSONL (`user_input`, `retrieved_contexts`, `response`, …).
    Ragas,
    /// Oloproof's trace JSONL (a case plus `retrieval`, `context`, `answer`, `citations`).
    Trace,
    /// JSONL, Ragas or trace records told apart by the first one (pandas `lines=True`).
    Jsonl,
    /// One JSON document: pandas `to_json` (records, columns, index, split, table orients).
    Json,
    /// Hugging Face columnar JSON (`{"question": [...], "contexts": [[...]], ...}`).
    HfJson,
    /// pandas `to_csv` of a Ragas result or dataset (list columns as numpy/Python reprs).
    Csv,
    /// Parquet (Hugging Face datasets, pandas `to_parquet`).
    Parquet,
}

#[derive(Debug, Args)]
pub(crate) struct StoreArgs {
    /// Project folder holding oloproof.yaml (default: the current directory).
    pub(crate) dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) location: ConfigLocation,
    /// JSON on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    /// The run id (`run_…`).
    pub(crate) run_id: String,
    /// Show one case's trace: retrieval with positions, context, answer, citations, verdicts.
    #[arg(long, value_name = "CASE_ID")]
    pub(crate) case: Option<String>,
    /// Project folder holding oloproof.yaml (default: the current directory).
    #[arg(long)]
    pub(crate) dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) location: ConfigLocation,
    /// JSON on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The interventions of `diagnose`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InterventionArg {
    /// The gold passages replace the assembled context.
    GoldContext,
    /// Replay the recorded retrieval with `--top-k N`.
    TopK,
    /// Replay the recorded retrieval with `--token-budget N`.
    TokenBudget,
    /// Replay the recorded candidates through `--reranker module:function`.
    Reranker,
    /// Replay the recorded input of the rerank stage, without the rerank.
    NoRerank,
    /// Retrieve again with the system told to skip its metadata filters.
    NoFilter,
    /// Retrieve with the raw question instead of the rewrites.
    RawQuery,
    /// One lane's recorded ranking, no fusion (`lane=NAME`).
    Lane(String),
}

/// The names `--intervention` takes.
const INTERVENTIONS: &str =
    "gold-context, top-k, token-budget, reranker, no-rerank, no-filter, raw-query, lane=NAME";

/// Parses `--intervention`: a name, or `lane=NAME`.
fn parse_intervention(text: &str) -> Result<InterventionArg, String> {
    Ok(match text {
        "gold-context" => InterventionArg::GoldContext,
        "top-k" => InterventionArg::TopK,
        "token-budget" => InterventionArg::TokenBudget,
        "reranker" => InterventionArg::Reranker,
        "no-rerank" => InterventionArg::NoRerank,
        "no-filter" => InterventionArg::NoFilter,
        "raw-query" => InterventionArg::RawQuery,
        other => match other.strip_prefix("lane=") {
            Some(lane) if !lane.is_empty() => InterventionArg::Lane(lane.to_string()),
            Some(_) => return Err("`lane=NAME` needs the lane's name".into()),
            None => return Err(format!("expected one of {INTERVENTIONS}")),
        },
    })
}

#[derive(Debug, Args)]
pub(crate) struct DiagnoseArgs {
    /// The run to diagnose (`run_…`).
    pub(crate) run_id: String,
    /// The intervention: gold-context, top-k, token-budget, reranker, no-rerank, no-filter,
    /// raw-query or lane=NAME.
    #[arg(long, value_parser = parse_intervention)]
    pub(crate) intervention: InterventionArg,
    /// The pass/fail criterion whose failures are diagnosed.
    #[arg(long)]
    pub(crate) criterion: String,
    /// New cut-off for `--intervention top-k`.
    #[arg(long, value_name = "N")]
    pub(crate) top_k: Option<usize>,
    /// New budget for `--intervention token-budget`.
    #[arg(long, value_name = "N")]
    pub(crate) token_budget: Option<usize>,
    /// For `--intervention reranker`: `module:function` (imported beside oloproof.yaml), or
    /// `judge:NAME`, a local cross-encoder of `judges:` scoring (question, passage) pairs.
    #[arg(long, value_name = "MODULE:FUNCTION|judge:NAME")]
    pub(crate) reranker: Option<String>,
    /// Project folder holding oloproof.yaml (default: the current directory).
    #[arg(long)]
    pub(crate) dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) location: ConfigLocation,
    /// JSON on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
    /// A diagnosis or comparison id (`sha256:…`) or a run id (`run_…`).
    pub(crate) id: String,
    /// Project folder holding oloproof.yaml (default: the current directory).
    #[arg(long)]
    pub(crate) dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) location: ConfigLocation,
    /// JSON on stdout: a run's every case (`{"run_id", "cases": [{"case", "trace", "verdicts"}]}`,
    /// each as `show --case --json` prints it), or the stored diagnosis or comparison.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CalibrateArgs {
    /// The judge (a key of `judges:` in oloproof.yaml).
    #[arg(long)]
    pub(crate) judge: String,
    /// Human labels, JSONL: `{"id", "question", "answer", "contexts": [..], "reference"?, "output"?, "label"}`
    /// (`output`: further output fields; `label`: 1 = should pass, 0 = should fail, or a score).
    #[arg(long, value_name = "FILE")]
    pub(crate) labels: PathBuf,
    /// The judged evaluator to calibrate.
    #[arg(long, default_value = "groundedness_judge")]
    pub(crate) evaluator: String,
    /// The criterion of the config's `evaluators:` entry to calibrate, when several entries of
    /// the type call the judge (e.g. two `classifier` labels of one model).
    #[arg(long)]
    pub(crate) criterion: Option<String>,
    /// `--evaluator classifier`: also print agreement and kappa at every threshold that
    /// changes a verdict (0, 1 and each probability the model gave) and the best one. The
    /// calibration recorded stays that of the configured threshold.
    #[arg(long)]
    pub(crate) sweep: bool,
    /// Project folder holding oloproof.yaml (default: the current directory).
    #[arg(long)]
    pub(crate) dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) location: ConfigLocation,
    /// JSON on stdout (with `--sweep`: `{"calibration", "sweep"}`).
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct LostInTheMiddleArgs {
    /// The run whose cases are re-generated (`run_…`).
    pub(crate) run_id: String,
    /// The pass/fail criterion compared across positions.
    #[arg(long)]
    pub(crate) criterion: String,
    /// Non-relevant passages of the recorded retrieval around the gold passages.
    #[arg(long, default_value_t = 4)]
    pub(crate) distractors: usize,
    /// Project folder holding oloproof.yaml (default: the current directory).
    #[arg(long)]
    pub(crate) dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) location: ConfigLocation,
    /// JSON on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}
