//! Score history: one JSON line per run, appended to a JSONL file that outlives the run store
//! (a CI artifact, a file on a `metrics` branch), read back by `oloproof history` and by the
//! windows of `oloproof gate`.
//!
//! This module owns the line's schema ([`HistoryEntry`], seed 003's `track_scores.py` fields done
//! right: intervals and denominators beside every value, `null` rather than a made-up `no-git`),
//! building a line from a stored run ([`entry_for_run`]), reading a history with located errors
//! ([`parse_history`]: `file:line:column` and the field) and appending ([`append_history`]).
//! Finding the git commit is the caller's business (the CLI runs `git rev-parse`); a run outside a
//! repository records `null`.
//!
//! Timestamps are the run's creation time in UTC, RFC 3339 with a `Z` (`2026-09-16T12:00:00Z`),
//! so a line appended later (`oloproof history append RUN_ID`) still carries the run's date.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;

use oloproof_core::history::{
    DatasetIdentity, HistoryCriterion, HistoryEntry, HistoryInterval, JudgeModel,
    HISTORY_SCHEMA_VERSION,
};
use oloproof_core::run::LoadedRun;
use oloproof_core::source::SourceError;
use oloproof_core::summary::RunSummary;
use oloproof_core::verdict::Verdict;
use serde_json::Value;

use crate::summary::CONFIDENCE;

/// The repository state a run was made from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitInfo {
    /// Full commit hash.
    pub commit: Option<String>,
    /// Branch name.
    pub branch: Option<String>,
}

/// Errors of reading or writing a history file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// The file could not be read.
    #[error("cannot read the history {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file could not be written.
    #[error("cannot append to the history {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// One or more lines are invalid.
    #[error("{}", render(.0))]
    Invalid(Vec<SourceError>),
}

fn render(errors: &[SourceError]) -> String {
    let mut out = String::new();
    for e in errors {
        out.push_str(&e.to_string());
    }
    out.push_str(&format!(
        "{} bad line{} in the history; fix or delete {}",
        errors.len(),
        if errors.len() == 1 { "" } else { "s" },
        if errors.len() == 1 { "it" } else { "them" }
    ));
    out
}

/// Builds the history line of a stored run from its summary and verdicts.
pub fn entry_for_run(run: &LoadedRun, summary: &RunSummary, git: GitInfo) -> HistoryEntry {
    let settings = &run.settings;
    let mut names = BTreeSet::new();
    // Per criterion, the judges that score it.
    let mut by_criterion: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    // Stored entries that no longer build name no judge here (the run still has a line).
    let evaluators = crate::evaluators::build_all(&settings.options.evaluators).unwrap_or_default();
    for ev in &evaluators {
        if let Some(j) = ev.judge_choice() {
            let judges = by_criterion.entry(ev.criterion().to_string()).or_default();
            judges.extend(j.llm_judges());
            judges.extend(j.embedding_judge.clone());
            names.extend(judges.iter().cloned());
        }
    }
    let model_of = |name: &String| {
        let declared = settings.options.judges.get(name);
        let field = |k: &str| {
            declared
                .and_then(|v| v.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        JudgeModel {
            provider: field("provider"),
            model: field("model"),
            name: name.clone(),
        }
    };
    let judge_models = names.iter().map(model_of).collect();
    let criteria = summary
        .criteria
        .iter()
        .map(|c| {
            let scores: Vec<f64> = run
                .cases
                .iter()
                .filter_map(|(_, trace, vs)| trace.as_ref().map(|_| vs))
                .filter_map(|vs| vs.iter().find(|v| v.criterion == c.criterion))
                .filter_map(|v| match v.verdict {
                    Verdict::Missing { .. } | Verdict::Excluded { .. } => None,
                    ref other => other.value(),
                })
                .collect();
            HistoryCriterion {
                criterion: c.criterion.clone(),
                kind: c.kind,
                value: c.value,
                interval: match (c.interval, &c.interval_method) {
                    (Some([lower, upper]), Some(method)) => Some(HistoryInterval {
                        lower,
                        upper,
                        method: method.clone(),
                        level: CONFIDENCE,
                    }),
                    _ => None,
                },
                passed: c.passed,
                std_dev: if c.passed.is_none() {
                    oloproof_stats::pooled::sample_std_dev(&scores)
                } else {
                    None
                },
                observed: c.observed,
                missing: c.missing,
                excluded: c.excluded,
                judges: by_criterion
                    .get(&c.criterion)
                    .map(|names| names.iter().map(model_of).collect())
                    .unwrap_or_default(),
            }
        })
        .collect();
    HistoryEntry {
        schema_version: HISTORY_SCHEMA_VERSION,
        timestamp: rfc3339_from_ms(run.record.created_ms),
        run_id: run.record.id.clone(),
        commit: git.commit,
        branch: git.branch,
        config_hash: run.record.identity.clone(),
        system: settings.system.name.clone(),
        version: settings.system.version.clone(),
        dataset: settings.dataset.as_ref().map(|d| DatasetIdentity {
            path: d.path.display().to_string(),
            sha256: d.sha256.clone(),
        }),
        judge_models,
        cases: summary.cases,
        sample: settings.options.sample,
        criteria,
    }
}

/// Parses a history (`path` as the user named it, for error locations). Empty lines are skipped;
/// every bad line is reported at `file:line:column` with the field.
pub fn parse_history(path: &str, text: &str) -> Result<Vec<HistoryEntry>, Vec<SourceError>> {
    let mut entries = Vec::new();
    let mut errors = Vec::new();
    for (idx, line) in text.lines().enumerate() {
        let line_no = idx + 1;
        if line.trim().is_empty() {
            continue;
        }
        let mut de = serde_json::Deserializer::from_str(line);
        let parsed = match serde_path_to_error::deserialize::<_, HistoryEntry>(&mut de) {
            Ok(entry) => de.end().map(|()| entry).map_err(|e| (String::new(), e)),
            Err(e) => Err((e.path().to_string(), e.into_inner())),
        };
        match parsed {
            Ok(entry) => {
                if entry_time_ms(&entry).is_none() {
                    let mut err = SourceError::at_line(
                        path,
                        line,
                        line_no,
                        value_column(line, "timestamp"),
                        entry.timestamp.chars().count() + 2,
                        format!("`{}` is not an RFC 3339 time", entry.timestamp),
                    );
                    err.key_path = Some("timestamp".into());
                    err.expected = Some("a UTC time such as \"2026-09-16T12:00:00Z\"".into());
                    errors.push(err);
                } else {
                    entries.push(entry);
                }
            }
            Err((field, inner)) => {
                let message = inner.to_string();
                let message = message
                    .split(" at line ")
                    .next()
                    .unwrap_or(&message)
                    .to_string();
                let (head, expected) = match message.split_once(", expected ") {
                    Some((h, want)) => (h.to_string(), Some(want.replace('`', ""))),
                    None => (message.clone(), None),
                };
                let unknown = head
                    .strip_prefix("unknown field `")
                    .and_then(|r| r.split('`').next())
                    .map(str::to_string);
                // serde_json reports an unknown key after it: point at the key itself.
                let (column, width) = match &unknown {
                    Some(key) => {
                        let needle = format!("\"{key}\"");
                        let end = line
                            .char_indices()
                            .nth(inner.column())
                            .map_or(line.len(), |(b, _)| b);
                        match line[..end].rfind(&needle) {
                            Some(b) => (line[..b].chars().count() + 1, needle.chars().count()),
                            None => (inner.column().max(1), 1),
                        }
                    }
                    None => (inner.column().max(1), 1),
                };
                let mut err = SourceError::at_line(
                    path,
                    line,
                    line_no,
                    column,
                    width,
                    if inner.is_syntax() || inner.is_eof() {
                        format!("malformed JSON: {head}")
                    } else {
                        head
                    },
                );
                if field != "." && field != "?" && !field.is_empty() {
                    err.key_path = Some(field);
                }
                let suggestion = unknown
                    .as_ref()
                    .zip(expected.as_ref())
                    .and_then(|(key, want)| {
                        let options: Vec<&str> = want
                            .split(", ")
                            .map(|o| o.trim_start_matches("one of "))
                            .collect();
                        oloproof_core::source::did_you_mean(key, options)
                            .map(|s| format!("did you mean `{s}`?"))
                    });
                err.expected = expected;
                err.help = Some(suggestion.unwrap_or_else(|| {
                    "each line is one run, as `oloproof run --history` or `oloproof history append` writes it"
                        .into()
                }));
                errors.push(err);
            }
        }
    }
    if errors.is_empty() {
        Ok(entries)
    } else {
        Err(errors)
    }
}

/// 1-based column of the value following `"key":` in a JSON line (1 when absent).
fn value_column(line: &str, key: &str) -> usize {
    let needle = format!("\"{key}\"");
    match line.find(&needle) {
        Some(b) => {
            let after = &line[b + needle.len()..];
            let skip = after
                .chars()
                .take_while(|c| c.is_whitespace() || *c == ':')
                .count();
            line[..b].chars().count() + needle.chars().count() + skip + 1
        }
        None => 1,
    }
}

/// Reads the history at `path`; `Ok(None)` when the file does not exist yet.
pub fn read_history(path: &Path) -> Result<Option<Vec<HistoryEntry>>, HistoryError> {
    let shown = path.display().to_string();
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(HistoryError::Read {
                path: shown,
                source,
            })
        }
    };
    let text = oloproof_core::source::decode_utf8(&shown, bytes)
        .map_err(|e| HistoryError::Invalid(vec![e]))?;
    parse_history(&shown, &text)
        .map(Some)
        .map_err(HistoryError::Invalid)
}

/// Appends one line to the history at `path` (creating the file and its folder).
pub fn append_history(path: &Path, entry: &HistoryEntry) -> Result<(), HistoryError> {
    let write_err = |source| HistoryError::Write {
        path: path.display().to_string(),
        source,
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(write_err)?;
    }
    let line = serde_json::to_string(entry).map_err(|e| write_err(std::io::Error::other(e)))?;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(write_err)?;
    // One write of the whole line, so concurrent appenders do not interleave within a line.
    file.write_all(format!("{line}\n").as_bytes())
        .map_err(write_err)
}

// ----------------------------------------------------------------------------------------------
// RFC 3339 in UTC (no clock: the caller passes the time)
// ----------------------------------------------------------------------------------------------

/// Unix milliseconds as RFC 3339 UTC to the second: `2026-09-16T12:00:00Z`.
pub fn rfc3339_from_ms(ms: i64) -> String {
    let (y, m, d, h, mi, s) = oloproof_metrics::rag::freshness::utc_parts(ms);
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// A history line's timestamp as Unix milliseconds (`None` when it is not RFC 3339).
pub fn entry_time_ms(entry: &HistoryEntry) -> Option<i64> {
    parse_rfc3339_ms(&entry.timestamp)
}

/// Parses an RFC 3339 time (`2026-09-16T12:00:00Z`, fractional seconds and `±HH:MM` offsets
/// accepted; `t`/`z` and a space for `T` too) into Unix milliseconds
/// (`oloproof_metrics::rag::freshness::parse_rfc3339`, truncated to the millisecond).
pub fn parse_rfc3339_ms(text: &str) -> Option<i64> {
    // `None` is this function's documented answer for text that is not a timestamp.
    let t = oloproof_metrics::rag::freshness::parse_rfc3339(text).ok()?;
    Some(t.seconds * 1000 + i64::from(t.nanos / 1_000_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(run: &str, ts: &str) -> String {
        format!(
            r#"{{"schema_version":1,"timestamp":"{ts}","run_id":"{run}","commit":null,"branch":null,"config_hash":"abc","system":"s","version":"v","judge_models":[],"cases":13,"criteria":[{{"criterion":"answer_correct","kind":"proportion","value":0.6923076923076923,"interval":{{"lower":0.385,"upper":0.91,"method":"clopper_pearson","level":0.95}},"passed":9,"observed":13,"missing":0,"excluded":0}}]}}"#
        )
    }

    #[test]
    fn times_round_trip_and_offsets_apply() {
        assert_eq!(rfc3339_from_ms(0), "1970-01-01T00:00:00Z");
        // 2026-09-16T12:34:56Z, checked with `date -u -d @1789562096`.
        assert_eq!(rfc3339_from_ms(1_789_562_096_000), "2026-09-16T12:34:56Z");
        assert_eq!(
            parse_rfc3339_ms("2026-09-16T12:34:56Z"),
            Some(1_789_562_096_000)
        );
        assert_eq!(
            parse_rfc3339_ms("2026-09-16T14:34:56.25+02:00"),
            Some(1_789_562_096_250)
        );
        assert_eq!(
            parse_rfc3339_ms("2024-02-29T00:00:00Z").map(|m| m / 1000),
            Some(1_709_164_800)
        );
        for bad in [
            "2026-02-30T00:00:00Z",
            "2026-09-16 12:34",
            "2026-09-16T12:34:56",
            "x",
        ] {
            assert_eq!(parse_rfc3339_ms(bad), None, "{bad}");
        }
        for ms in [-86_400_000i64, 951_782_400_000, 4_102_444_800_000] {
            assert_eq!(parse_rfc3339_ms(&rfc3339_from_ms(ms)), Some(ms));
        }
    }

    #[test]
    fn parses_lines_and_locates_bad_fields() {
        let good = line("run_a", "2026-09-16T12:00:00Z");
        let text = format!(
            "{good}\n\n{}\n",
            good.replace("\"cases\":13", "\"cases\":\"13\"")
        );
        let errs = parse_history("h.jsonl", &text).unwrap_err();
        assert_eq!(errs.len(), 1);
        let e = &errs[0];
        assert_eq!(e.key_path.as_deref(), Some("cases"));
        let col = good.find("\"cases\":").unwrap() + "\"cases\":\"13\"".len();
        assert_eq!(e.location(), format!("h.jsonl:3:{col}"));
        assert!(e.message.contains("invalid type"), "{}", e.message);

        let typo = good.replace("\"observed\"", "\"observd\"");
        let errs = parse_history("h.jsonl", &typo).unwrap_err();
        assert_eq!(errs[0].key_path.as_deref(), Some("criteria[0].observd"));
        assert!(errs[0].message.contains("unknown field `observd`"));
        let col = typo.find("\"observd\"").unwrap() + 1;
        assert_eq!(errs[0].location(), format!("h.jsonl:1:{col}"));
        assert_eq!(errs[0].help.as_deref(), Some("did you mean `observed`?"));

        let bad_time = line("run_b", "yesterday");
        let errs = parse_history("h.jsonl", &bad_time).unwrap_err();
        assert_eq!(errs[0].key_path.as_deref(), Some("timestamp"));
        let col = bad_time.find("\"yesterday\"").unwrap() + 1;
        assert_eq!(errs[0].location(), format!("h.jsonl:1:{col}"));

        let entries = parse_history("h.jsonl", &format!("{good}\n{good}")).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(
            entries[0].criterion("answer_correct").unwrap().passed,
            Some(9)
        );
        assert_eq!(entries[0].short_label(), "run…run_a");

        let errs = parse_history("h.jsonl", "{\"schema_version\": 1,").unwrap_err();
        assert!(
            errs[0].message.starts_with("malformed JSON"),
            "{}",
            errs[0].message
        );
    }
}
