//! `oloproof report ID -o FILE`: a run, a comparison or a diagnosis written as one
//! self-contained HTML page, a compact Markdown summary or JUnit XML; a monitor report
//! (`mon_…`, recorded by `oloproof monitor`) as an HTML page.
//!
//! The format comes from `--format`, else from the file's extension (`.html`/`.htm`, `.md`,
//! `.xml`); anything else is a usage error (exit 2). Writing the report never gates: it exits 0
//! even for a comparison whose gate blocked (that is `oloproof compare`'s job).

use std::io::Write;
use std::path::{Path, PathBuf};

use oloproof_core::run::LoadedRun;
use oloproof_core::store::{MonitorRecord, Store};
use oloproof_core::summary::{CacheCounts, RunSummary};
use oloproof_engine::run::{summarize_stored, EngineEvaluators};

use crate::cli::ConfigLocation;
use crate::commands::{open_store, CliError};
use crate::exit_codes;

/// The report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ReportFormat {
    /// One self-contained HTML page (inline CSS and SVG, no script).
    Html,
    /// A compact Markdown summary for a pull-request comment.
    Md,
    /// JUnit XML: one testcase per case and criterion.
    Junit,
}

#[derive(clap::Args, Debug)]
pub(crate) struct ReportArgs {
    /// A run id (`run_…`), a comparison or diagnosis id (`sha256:…`), or a monitor report id
    /// (`mon_…`, HTML only).
    pub(crate) id: String,
    /// The file to write; its extension picks the format (.html, .md, .xml).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub(crate) output: PathBuf,
    /// The format, whatever the extension says.
    #[arg(long, value_enum)]
    pub(crate) format: Option<ReportFormat>,
    /// Project folder holding oloproof.yaml (default: the current directory).
    #[arg(long)]
    pub(crate) dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) location: ConfigLocation,
}

/// The format from `--format`, else from the extension.
fn resolve_format(explicit: Option<ReportFormat>, path: &Path) -> Result<ReportFormat, CliError> {
    if let Some(f) = explicit {
        return Ok(f);
    }
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("html" | "htm") => Ok(ReportFormat::Html),
        Some("md" | "markdown") => Ok(ReportFormat::Md),
        Some("xml") => Ok(ReportFormat::Junit),
        _ => Err(CliError::Usage(format!(
            "cannot tell the report format from `{}`; name it .html, .md or .xml, or pass --format html|md|junit",
            path.display()
        ))),
    }
}

/// The stored summary of a run, recomputed from its verdicts when none was stored.
fn summary_of(store: &dyn Store, run: &LoadedRun) -> Result<RunSummary, CliError> {
    match run
        .record
        .summary_json
        .as_deref()
        .and_then(|s| serde_json::from_str::<RunSummary>(s).ok())
    {
        Some(s) => Ok(s),
        None => Ok(summarize_stored(
            store,
            &run.record.id,
            CacheCounts::default(),
        )?),
    }
}

/// Renders the report of `id` in `format`, and a short description of what it is.
fn render(
    store: &dyn Store,
    id: &str,
    format: ReportFormat,
) -> Result<(String, &'static str), CliError> {
    use oloproof_report::{html, junit, markdown, monitor};
    if MonitorRecord::is_id(id) {
        let Some(record) = store.monitor(id)? else {
            return Err(CliError::Usage(format!(
                "no monitor report `{id}` in this store"
            )));
        };
        if format != ReportFormat::Html {
            return Err(CliError::Usage(
                "a monitor report is written as HTML only: name the file .html, or pass --format html"
                    .into(),
            ));
        }
        let report = record.report()?;
        let text = monitor::monitor_html(&record.id, Some(record.created_ms), &report);
        return Ok((text, "monitor report"));
    }
    if id.starts_with("sha256:") {
        if let Some(d) = store.load_diagnosis(id)? {
            let run = store.load_run(&d.content.run_id, &EngineEvaluators)?;
            let text = match format {
                ReportFormat::Html => html::diagnosis_html(&d, Some(&run)),
                ReportFormat::Md => markdown::diagnosis_markdown(&d),
                ReportFormat::Junit => junit::run_junit(&run),
            };
            return Ok((text, "diagnosis"));
        }
        if let Some(c) = store.load_comparison(id)? {
            let candidate = store.load_run(&c.candidate, &EngineEvaluators)?;
            let text = match format {
                ReportFormat::Html => html::comparison_html(&c, Some(&candidate)),
                ReportFormat::Md => markdown::comparison_markdown(&c),
                ReportFormat::Junit => junit::comparison_junit(&c, &candidate),
            };
            return Ok((text, "comparison"));
        }
        return Err(CliError::Usage(format!(
            "no diagnosis or comparison `{id}` in this store"
        )));
    }
    let run = store.load_run(id, &EngineEvaluators)?;
    let text = match format {
        ReportFormat::Html => html::run_html(&run, &summary_of(store, &run)?),
        ReportFormat::Md => markdown::run_markdown(&run, &summary_of(store, &run)?),
        ReportFormat::Junit => junit::run_junit(&run),
    };
    Ok((text, "run"))
}

/// `oloproof report`: writes the file and says so on stdout.
pub(crate) fn report(args: ReportArgs) -> Result<u8, CliError> {
    let format = resolve_format(args.format, &args.output)?;
    let store = open_store(&args.location, args.dir.as_deref())?;
    let (text, what) = render(store.as_ref(), &args.id, format)?;
    std::fs::write(&args.output, text)?;
    let name = match format {
        ReportFormat::Html => "HTML",
        ReportFormat::Md => "Markdown",
        ReportFormat::Junit => "JUnit",
    };
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Wrote the {name} report of {what} {} to {}",
        args.id,
        args.output.display()
    )?;
    Ok(exit_codes::SUCCESS)
}
