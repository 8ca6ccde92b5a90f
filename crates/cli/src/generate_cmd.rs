//! `oloproof generate`: draft a synthetic test set from documents with a judge model, and
//! `oloproof generate --review FILE` to read the drafts before accepting them
//! (`oloproof_engine::generate` has the method).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use oloproof_engine::generate::{self, QuestionKind};
use oloproof_engine::judged::{JudgeRegistry, StoreJudgeCache};
use serde_json::Value;

use crate::cli::ConfigLocation;
use crate::commands::{load, CliError};
use crate::exit_codes;

#[derive(Debug, Args)]
pub(crate) struct GenerateArgs {
    /// Folder of Markdown or text documents (the knowledge base).
    #[arg(long, value_name = "DIR", required_unless_present = "review")]
    pub(crate) docs: Option<PathBuf>,
    /// Number of questions to draft.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub(crate) size: usize,
    /// The judge that writes the questions (a key of `judges:`).
    #[arg(long, value_name = "NAME", required_unless_present = "review")]
    pub(crate) judge: Option<String>,
    /// Where to write the draft cases (JSONL).
    #[arg(short, long, value_name = "FILE", required_unless_present = "review")]
    pub(crate) output: Option<PathBuf>,
    /// Seed of the plan (which chunks each question is drawn on).
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Largest chunk, in characters.
    #[arg(long, value_name = "CHARS", default_value_t = 1200)]
    pub(crate) max_chars: usize,
    /// Print the drafts of FILE for review instead of generating.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["docs", "judge", "output"])]
    pub(crate) review: Option<PathBuf>,
    /// Project folder holding oloproof.yaml, where `judges:` is (default: the current
    /// directory).
    #[arg(long)]
    pub(crate) dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) location: ConfigLocation,
}

pub(crate) fn generate(args: GenerateArgs) -> Result<u8, CliError> {
    if let Some(file) = &args.review {
        return review(file);
    }
    let (Some(docs), Some(judge_name), Some(output)) = (&args.docs, &args.judge, &args.output)
    else {
        return Err(CliError::Usage(
            "give --docs DIR, --judge NAME and -o FILE (or --review FILE)".into(),
        ));
    };
    if args.size == 0 {
        return Err(CliError::Usage("--size must be at least 1".into()));
    }
    let config = load(&args.location, args.dir.as_deref(), &[])?;
    let registry = JudgeRegistry::from_options(&config.options.judges)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let Some(judge) = registry.client(judge_name) else {
        let names = config.options.judges.keys().map(String::as_str);
        let hint = oloproof_core::source::did_you_mean(judge_name, names)
            .map(|s| format!("; did you mean `{s}`?"))
            .unwrap_or_default();
        return Err(CliError::Usage(format!(
            "no judge named `{judge_name}` in {}{hint}",
            config.path.display()
        )));
    };
    let documents = generate::read_documents(docs).map_err(|e| CliError::Usage(e.to_string()))?;
    let chunks = generate::chunk_documents(&documents, args.max_chars.max(1));
    let planned = generate::plan(&chunks, args.size, args.seed);
    let location = config.store_location();
    let mut store = oloproof_store::open(&location)?;
    let cache = StoreJudgeCache::new(Some(oloproof_store::open_reader(&location)?));
    let drafted = generate::draft(judge, &cache, &documents, &chunks, &planned, args.seed);
    store.put_cache_entries(&cache.take_writes())?;

    let mut file = std::io::BufWriter::new(std::fs::File::create(output)?);
    let mut written = 0usize;
    let mut failures = Vec::new();
    for (i, d) in drafted.iter().enumerate() {
        match d {
            Ok(case) => {
                writeln!(file, "{case}")?;
                written += 1;
            }
            Err(e) => failures.push(format!(
                "  syn-{:04} ({}): {e}",
                i + 1,
                planned[i].kind.as_str()
            )),
        }
    }
    file.flush()?;
    let mut err = std::io::stderr().lock();
    writeln!(
        err,
        "Drafted {written} of {} questions from {} documents ({} chunks) into {}; review them \
         before use: oloproof generate --review {}",
        planned.len(),
        documents.len(),
        chunks.len(),
        output.display(),
        output.display()
    )?;
    if failures.is_empty() {
        Ok(exit_codes::SUCCESS)
    } else {
        writeln!(
            err,
            "{} questions failed (not written):\n{}",
            failures.len(),
            failures.join("\n")
        )?;
        Ok(exit_codes::INCOMPLETE)
    }
}

/// Prints every case of `file` for review: drafts first, each with its kind, question,
/// reference answer, expected behaviour and evidence.
fn review(file: &std::path::Path) -> Result<u8, CliError> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", file.display())))?;
    let mut out = std::io::stdout().lock();
    let (mut drafts, mut reviewed) = (0usize, 0usize);
    let mut by_kind: Vec<(String, usize)> = QuestionKind::ALL
        .iter()
        .map(|k| (k.as_str().to_string(), 0))
        .collect();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let case: Value = serde_json::from_str(line).map_err(|e| {
            CliError::Usage(format!(
                "{}:{}:{}: not a JSON case: {e}",
                file.display(),
                n + 1,
                e.column()
            ))
        })?;
        let status = case["status"].as_str().unwrap_or("reviewed");
        if status == "draft" {
            drafts += 1;
        } else {
            reviewed += 1;
        }
        let kind = case
            .pointer("/metadata/synthesis/kind")
            .and_then(Value::as_str)
            .unwrap_or("(not synthetic)");
        if let Some(slot) = by_kind.iter_mut().find(|(k, _)| k == kind) {
            slot.1 += 1;
        }
        writeln!(
            out,
            "{} [{status}] {kind}  ({}:{})",
            case["id"].as_str().unwrap_or("?"),
            file.display(),
            n + 1
        )?;
        writeln!(
            out,
            "  Q: {}",
            case.pointer("/input/question")
                .and_then(Value::as_str)
                .unwrap_or("?")
        )?;
        let answer = match &case["expected"]["answer"] {
            Value::String(s) => s.clone(),
            Value::Null => "(none)".into(),
            other => other.to_string(),
        };
        writeln!(out, "  A: {answer}")?;
        if let Some(b) = case["expected"]["behavior"].as_str() {
            writeln!(out, "  expected behaviour: {b}")?;
        }
        for g in case["expected"]["gold_context"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let span = g["metadata"]["span"]
                .as_array()
                .map(|s| format!("[{}, {})", s[0], s[1]))
                .unwrap_or_default();
            writeln!(
                out,
                "  evidence {} {span}: \"{}\"",
                g["doc_id"].as_str().unwrap_or("?"),
                g["text"].as_str().unwrap_or("")
            )?;
        }
        writeln!(out)?;
    }
    let kinds: Vec<String> = by_kind
        .iter()
        .filter(|(_, c)| *c > 0)
        .map(|(k, c)| format!("{k} {c}"))
        .collect();
    writeln!(
        out,
        "{drafts} drafts, {reviewed} reviewed ({}). Edit what is wrong, then set \"status\": \"reviewed\" on each case you accept; `oloproof run` refuses drafts.",
        if kinds.is_empty() {
            "no synthetic cases".to_string()
        } else {
            kinds.join(", ")
        }
    )?;
    Ok(exit_codes::SUCCESS)
}
