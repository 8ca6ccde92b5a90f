//! `oloproof metric NAME --input FILE [options]`: any metric of the library on a JSONL file.
//!
//! The metrics, their computations and their aggregates live in `oloproof_metrics::batch`; this
//! module only builds one clap subcommand per registered [`MetricSpec`] (its fields in the
//! help), reads the input and the files its options name, calls the metric and prints the
//! result.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use clap::{Arg, ArgAction, ArgMatches, Command};
use oloproof_metrics::batch::{
    self, Embedder, MetricError, MetricInput, MetricOutput, MetricSpec, OptionFile, OptionKind,
};
use serde_json::{Map, Value};

use crate::commands::CliError;
use crate::exit_codes;

/// The id of each metric's hidden catch-all argument: what clap did not recognise, reported
/// with a did-you-mean by [`metric`] rather than by clap. (A metric's options are identified
/// by their names, which the library keeps apart from `input`, `per-item` and `json`.)
const UNEXPECTED: &str = "unexpected";

/// Arguments of `oloproof metric`: `--list`, or one metric subcommand.
#[derive(Debug, Default)]
pub(crate) struct MetricArgs {
    /// `--list`.
    list: bool,
    /// The metric subcommand, if one was given.
    call: Option<MetricCall>,
}

/// One metric subcommand as parsed.
#[derive(Debug, Default)]
struct MetricCall {
    /// The name given.
    name: String,
    /// False when no metric has that name.
    known: bool,
    /// `--input`.
    input: Option<PathBuf>,
    /// `--per-item`.
    per_item: bool,
    /// `--json`.
    json: bool,
    /// The metric's options, given or defaulted.
    options: BTreeMap<String, String>,
    /// Arguments clap did not recognise.
    unexpected: Vec<String>,
}

/// The clap subcommand of one metric; its help shows the input fields.
fn metric_command(spec: &MetricSpec) -> Command {
    let mut fields = String::from("Input: one JSON object per line with\n");
    for line in spec.fields.lines() {
        fields.push_str(&format!("  {line}\n"));
    }
    let mut cmd = Command::new(spec.name)
        .about(spec.summary)
        .after_help(fields)
        .arg(
            Arg::new("input")
                .short('i')
                .long("input")
                .value_name("FILE.jsonl")
                .value_parser(clap::value_parser!(PathBuf))
                .help("the items, one JSON object per line (`-` reads stdin)"),
        )
        .arg(
            Arg::new("per-item")
                .long("per-item")
                .action(ArgAction::SetTrue)
                .help("print one row per input item"),
        )
        .arg(
            Arg::new("json")
                .long("json")
                .action(ArgAction::SetTrue)
                .help("print {\"metric\", \"value\", …} as JSON"),
        );
    for o in spec.options {
        let mut arg = Arg::new(o.name)
            .long(o.name)
            .value_name(match o.kind {
                OptionKind::File | OptionKind::FileOrInline => "FILE",
                OptionKind::EmbeddingModel => "DIR",
                _ => "VALUE",
            })
            .allow_hyphen_values(true)
            .help(o.help);
        if let Some(d) = o.default {
            arg = arg.default_value(d);
        }
        cmd = cmd.arg(arg);
    }
    cmd.arg(
        Arg::new(UNEXPECTED)
            .num_args(1..)
            .allow_hyphen_values(true)
            .trailing_var_arg(true)
            .hide(true),
    )
}

impl clap::Args for MetricArgs {
    fn augment_args(cmd: Command) -> Command {
        let mut cmd = cmd
            .arg(
                Arg::new("list")
                    .long("list")
                    .action(ArgAction::SetTrue)
                    .help("List every metric (as `oloproof metric` without a name)"),
            )
            .subcommand_value_name("NAME")
            .subcommand_help_heading("Metrics")
            .disable_help_subcommand(true)
            .allow_external_subcommands(true)
            .after_help("`oloproof metric NAME --help` shows a metric's input fields and options.");
        for spec in batch::registry() {
            cmd = cmd.subcommand(metric_command(&spec));
        }
        cmd
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl clap::FromArgMatches for MetricArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let list = matches.get_flag("list");
        let call = matches.subcommand().map(|(name, sub)| {
            let Some(spec) = batch::find(name) else {
                return MetricCall {
                    name: name.to_string(),
                    ..MetricCall::default()
                };
            };
            let options = spec
                .options
                .iter()
                .filter_map(|o| {
                    sub.get_one::<String>(o.name)
                        .map(|v| (o.name.to_string(), v.clone()))
                })
                .collect();
            MetricCall {
                name: name.to_string(),
                known: true,
                input: sub.get_one::<PathBuf>("input").cloned(),
                per_item: sub.get_flag("per-item"),
                json: sub.get_flag("json"),
                options,
                unexpected: sub
                    .get_many::<String>(UNEXPECTED)
                    .map(|v| v.cloned().collect())
                    .unwrap_or_default(),
            }
        });
        Ok(MetricArgs { list, call })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

/// A local embedding model (`--model DIR`) as the library's [`Embedder`].
struct LocalEmbedder(oloproof_judge::JudgeClient);

impl Embedder for LocalEmbedder {
    fn embed(
        &self,
        texts: &[String],
    ) -> Result<Vec<Vec<f32>>, Box<dyn std::error::Error + Send + Sync>> {
        Ok(self.0.embed(texts)?)
    }
}

/// Reads the files and loads the model the options of `spec` name.
fn resolve_options(spec: &MetricSpec, input: &mut MetricInput) -> Result<(), CliError> {
    for o in spec.options {
        let Some(value) = input.option(o.name).map(str::to_string) else {
            continue;
        };
        match o.kind {
            OptionKind::File => {}
            OptionKind::FileOrInline if !value.trim_start().starts_with('{') => {}
            OptionKind::EmbeddingModel => {
                let mut settings = oloproof_judge::JudgeSettings::local(
                    oloproof_judge::LocalKind::Embedding,
                    &value,
                );
                settings.threads = input
                    .parsed("threads", "a positive integer")
                    .map_err(|e| CliError::Usage(e.message()))?;
                let client = oloproof_judge::JudgeClient::new("model", settings)
                    .map_err(|e| CliError::Usage(format!("--model {value}: {e}")))?;
                input.embedder = Some(Box::new(LocalEmbedder(client)));
                continue;
            }
            _ => continue,
        }
        let bytes = std::fs::read(&value)
            .map_err(|e| CliError::Usage(format!("--{} {value}: cannot read: {e}", o.name)))?;
        input.files.insert(
            o.name.to_string(),
            OptionFile {
                path: value.clone(),
                bytes,
            },
        );
    }
    Ok(())
}

/// Runs `oloproof metric`.
pub(crate) fn metric(args: MetricArgs) -> Result<u8, CliError> {
    let specs = batch::registry();
    let mut out = std::io::stdout().lock();
    let call = match args.call {
        Some(call) if !args.list => call,
        _ => {
            writeln!(
                out,
                "Metrics (oloproof metric NAME --help for the input fields):"
            )?;
            let width = specs.iter().map(|s| s.name.len()).max().unwrap_or(0);
            for s in &specs {
                writeln!(out, "  {:width$}  {}", s.name, s.summary)?;
            }
            return Ok(exit_codes::SUCCESS);
        }
    };
    let name = call.name.as_str();
    let spec = match specs.iter().find(|s| s.name == name) {
        Some(spec) if call.known => spec,
        _ => {
            let hint = oloproof_core::source::did_you_mean(name, specs.iter().map(|s| s.name))
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_else(|| "; `oloproof metric --list` lists them".to_string());
            return Err(CliError::Usage(format!("unknown metric `{name}`{hint}")));
        }
    };
    if let Some(first) = call.unexpected.first() {
        let Some(key) = first.strip_prefix("--") else {
            return Err(CliError::Usage(format!(
                "unexpected argument `{first}`; see oloproof metric {name} --help"
            )));
        };
        let key = key.split_once('=').map_or(key, |(k, _)| k);
        let known = spec
            .options
            .iter()
            .map(|o| o.name)
            .chain(["input", "per-item", "json"]);
        let hint = oloproof_core::source::did_you_mean(key, known)
            .map(|s| format!("; did you mean `--{s}`?"))
            .unwrap_or_else(|| format!("; see oloproof metric {name} --help"));
        return Err(CliError::Usage(format!(
            "`{name}` has no option `--{key}`{hint}"
        )));
    }
    let Some(path) = call.input else {
        return Err(CliError::Usage(format!(
            "oloproof metric {name} needs --input FILE.jsonl (see --help)"
        )));
    };
    let shown = path.display().to_string();
    let text = if shown == "-" {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(&path)
            .map_err(|e| CliError::Usage(format!("cannot read {shown}: {e}")))?
    };
    let rows =
        batch::parse_json_lines(&text).map_err(|e| CliError::Usage(format!("{shown}:{e}")))?;
    let mut input = MetricInput {
        rows,
        options: call.options,
        ..MetricInput::default()
    };
    resolve_options(spec, &mut input)?;
    let result = (spec.run)(&input).map_err(|e| located(&shown, &e))?;
    print(&mut out, name, &result, call.json, call.per_item)?;
    Ok(exit_codes::SUCCESS)
}

/// A metric error as `FILE:LINE: field `F`: message` when it is about a row.
fn located(shown: &str, e: &MetricError) -> CliError {
    match e {
        MetricError::Field {
            line,
            field,
            message,
        } => CliError::Usage(format!("{shown}:{line}: field `{field}`: {message}")),
        other => CliError::Usage(other.to_string()),
    }
}

/// Prints a result: `NAME = value  95% [lo, hi] (method)` and the extras, or JSON.
fn print(
    out: &mut impl Write,
    name: &str,
    result: &MetricOutput,
    json: bool,
    per_item: bool,
) -> Result<(), CliError> {
    let Some(value) = result.estimate.value else {
        return Err(CliError::Usage(format!(
            "`{name}` is undefined on this input (no items it applies to)"
        )));
    };
    let interval = result.estimate.interval.as_ref();
    if json {
        let mut obj = Map::new();
        obj.insert("metric".into(), Value::String(name.to_string()));
        obj.insert("value".into(), serde_json::json!(value));
        if let Some(ci) = interval {
            obj.insert("interval".into(), serde_json::json!([ci.lo, ci.hi]));
            obj.insert("interval_method".into(), serde_json::json!(ci.method));
        }
        for (k, v) in &result.extra {
            obj.insert(k.clone(), v.clone());
        }
        if per_item {
            obj.insert("items".into(), Value::Array(result.items.clone()));
        }
        let text = serde_json::to_string_pretty(&Value::Object(obj))
            .map_err(|e| CliError::Output(e.into()))?;
        writeln!(out, "{text}")?;
        return Ok(());
    }
    let interval = interval
        .map(|ci| format!("  95% [{:.4}, {:.4}] ({})", ci.lo, ci.hi, ci.method))
        .unwrap_or_default();
    writeln!(out, "{name} = {value:.4}{interval}")?;
    for (k, v) in &result.extra {
        match v {
            Value::Number(n) => writeln!(out, "  {k}: {n}")?,
            Value::String(s) => writeln!(out, "  {k}: {s}")?,
            other => writeln!(out, "  {k}: {other}")?,
        }
    }
    if per_item {
        for item in &result.items {
            writeln!(out, "{item}")?;
        }
    }
    Ok(())
}
