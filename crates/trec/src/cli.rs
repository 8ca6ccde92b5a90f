//! Command-line arguments of `oloproof trec` and `oloproof fuse`, and their entry points.
//!
//! Arguments are parsed by clap in the CLI crate (`#[command(flatten)]` or as subcommand
//! arguments), resolved here into engine options, and run against the `out` writer.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::ArgAction;
use oloproof_metrics::ranking::{Compat, EvalOptions, JudgeOptions, MeasureSet};

use crate::compare::{self, CompareSettings, TestKind};
use crate::driver::{evaluate_file, RunResult};
use crate::error::TrecError;
use crate::format::{write_run, Precision};
use crate::input::read_all;
use crate::parse::parse_qrels;

/// Which trec_eval release to reproduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum CompatArg {
    /// trec_eval 9.0.x (pytrec_eval): 32-bit scores.
    #[value(name = "9")]
    V9,
    /// trec_eval 10.0.
    #[default]
    #[value(name = "10")]
    V10,
}

/// `oloproof trec [OPTIONS] QRELS RUN...`: trec_eval-compatible evaluation.
#[derive(clap::Args, Debug, Clone)]
pub struct TrecArgs {
    /// Print per-topic values as well as the summary (`-q`).
    #[arg(short = 'q')]
    pub per_topic: bool,
    /// Average over every qrels topic; topics missing from the run score 0 (`-c`).
    #[arg(short = 'c')]
    pub complete: bool,
    /// Evaluate only the first N documents of each topic, after ranking (`-M`).
    #[arg(short = 'M', value_name = "N")]
    pub max_docs: Option<usize>,
    /// Rank judged documents only (`-J`).
    #[arg(short = 'J')]
    pub judged_only: bool,
    /// Minimum relevance value counted as relevant (`-l`; not used by ndcg/ndcg_cut).
    #[arg(
        short = 'l',
        value_name = "LEVEL",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    pub level: i64,
    /// Measure, measure with parameters (`P.5,10`, `ndcg.1=3,2=9`) or set (`official`,
    /// `all_trec`, `set`); repeatable. Default `official`.
    #[arg(short = 'm', value_name = "MEASURE[.PARAMS]", action = ArgAction::Append)]
    pub measures: Vec<String>,
    /// No summary (`all`) lines (`-n`).
    #[arg(short = 'n')]
    pub no_summary: bool,
    /// Relevance file format (`-R`); only `qrels` is supported.
    #[arg(short = 'R', value_name = "FORMAT", default_value = "qrels")]
    pub rel_format: String,
    /// Number of documents in the collection, for `utility` (`-N`).
    #[arg(short = 'N', value_name = "NUM", default_value_t = 0)]
    pub num_docs: u64,
    /// Print values as `%6.4f` (standard) or as shortest round-trip floats (full).
    #[arg(long, value_enum, default_value_t = Precision::Standard)]
    pub precision: Precision,
    /// Reproduce trec_eval 10.0 (default) or 9.0.x (32-bit scores; `-c` only changes
    /// denominators).
    #[arg(long, value_enum, default_value_t = CompatArg::V10)]
    pub compat: CompatArg,
    /// Compare the runs: a table of summary values with paired significance tests of each
    /// run against the first.
    #[arg(long)]
    pub compare: bool,
    /// Significance test for `--compare`.
    #[arg(long, value_enum, default_value_t = TestKind::Randomization, requires = "compare")]
    pub test: TestKind,
    /// Seed of the randomization and bootstrap tests (recorded in the header).
    #[arg(long, default_value_t = 0, requires = "compare")]
    pub seed: u64,
    /// Permutations or bootstrap samples.
    #[arg(long, default_value_t = 10_000, requires = "compare")]
    pub samples: usize,
    /// Family-wise significance level after Holm's correction.
    #[arg(long, default_value_t = 0.05, requires = "compare")]
    pub alpha: f64,
    /// Qrels file (`qid iter docno rel`), `-` for standard input, `.gz` accepted.
    #[arg(value_name = "QRELS")]
    pub qrels: PathBuf,
    /// Run files (`qid iter docno rank score runid`), `-` for standard input, `.gz` accepted.
    #[arg(value_name = "RUN", required = true)]
    pub runs: Vec<PathBuf>,
}

/// `oloproof fuse RUN... --method rrf -o fused.run`: rank fusion of several runs.
#[derive(clap::Args, Debug, Clone)]
pub struct FuseArgs {
    /// Runs to fuse (`-` for standard input, `.gz` accepted).
    #[arg(value_name = "RUN", required = true)]
    pub runs: Vec<PathBuf>,
    /// Fusion method.
    #[arg(long, value_enum, default_value_t = crate::fuse::MethodArg::Rrf)]
    pub method: crate::fuse::MethodArg,
    /// RRF constant k.
    #[arg(long, default_value_t = 60.0)]
    pub k: f64,
    /// Per-run weights (comma separated), for `rrf` and `wsum`.
    #[arg(long, value_delimiter = ',')]
    pub weights: Vec<f64>,
    /// Score normalisation applied before combining (CombSUM family, `wsum`, `convex`).
    #[arg(long, value_enum, default_value_t = crate::fuse::NormArg::Minmax)]
    pub norm: crate::fuse::NormArg,
    /// Weight α of the first run in `convex` (α·first + (1−α)·second).
    #[arg(long, default_value_t = 0.5)]
    pub alpha: f64,
    /// Keep this many documents per topic in the output.
    #[arg(long, default_value_t = 1000)]
    pub depth: usize,
    /// Run identifier written in the output.
    #[arg(long, default_value = "fused")]
    pub run_id: String,
    /// Output file (default: the `out` writer, i.e. standard output).
    #[arg(short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Resolved settings of `oloproof trec`.
struct TrecSettings {
    set: MeasureSet,
    options: EvalOptions,
}

fn resolve(args: &TrecArgs) -> Result<TrecSettings, TrecError> {
    if args.rel_format != "qrels" {
        return Err(TrecError::Usage(format!(
            "-R {}: only the 'qrels' relevance format is supported",
            args.rel_format
        )));
    }
    if args.runs.iter().filter(|p| p.as_os_str() == "-").count()
        + usize::from(args.qrels.as_os_str() == "-")
        > 1
    {
        return Err(TrecError::Usage(
            "standard input ('-') can be read only once".into(),
        ));
    }
    let compat = match args.compat {
        CompatArg::V9 => Compat::V9,
        CompatArg::V10 => Compat::V10,
    };
    let set = MeasureSet::from_specs(&args.measures, compat)?;
    let options = EvalOptions {
        judge: JudgeOptions {
            relevance_level: args.level,
            max_docs_per_topic: args.max_docs,
            judged_docs_only: args.judged_only,
            compat,
        },
        complete: args.complete,
        num_docs_in_coll: args.num_docs,
    };
    Ok(TrecSettings { set, options })
}

/// Runs `oloproof trec`: evaluates each run against the qrels and writes trec_eval's output
/// (runs one after another), or with `--compare` a comparison table.
pub fn run_trec(args: &TrecArgs, out: &mut dyn Write) -> Result<(), TrecError> {
    let settings = resolve(args)?;
    let qbytes = read_all(&args.qrels)?;
    let mut results: Vec<RunResult> = Vec::new();
    let qrels = parse_qrels(qbytes.as_slice(), &args.qrels)?;
    for path in &args.runs {
        let res = evaluate_file(&qrels, path, &settings.set, &settings.options)?;
        if args.compare {
            results.push(res);
        } else {
            write_run(
                out,
                &settings.set,
                &res,
                args.per_topic,
                !args.no_summary,
                args.precision,
            )
            .map_err(TrecError::Output)?;
        }
    }
    if args.compare {
        let cs = CompareSettings {
            test: args.test,
            seed: args.seed,
            samples: args.samples,
            alpha: args.alpha,
            precision: args.precision,
        };
        compare::write_comparison(out, &settings.set, &results, &cs)?;
    }
    Ok(())
}

/// Runs `oloproof fuse`: fuses the runs and writes a TREC run to `-o FILE` or to `out`.
pub fn run_fuse(args: &FuseArgs, out: &mut dyn Write) -> Result<(), TrecError> {
    crate::fuse::fuse_files(args, out)
}

/// Evaluates one run file against one qrels file with `args`' options and returns the result
/// (library entry point for callers that want values rather than text).
pub fn evaluate_files(args: &TrecArgs, run: &Path) -> Result<RunResult, TrecError> {
    let settings = resolve(args)?;
    let qbytes = read_all(&args.qrels)?;
    let qrels = parse_qrels(qbytes.as_slice(), &args.qrels)?;
    evaluate_file(&qrels, run, &settings.set, &settings.options)
}
