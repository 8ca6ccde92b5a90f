//! One line of a score history (`oloproof history`): a run's criteria with their intervals and
//! denominators, its identity (config hash, system, dataset, judges) and the git state it was
//! made from. One JSON line per run, appended to a JSONL file that outlives the run store.
//!
//! These are data. Building a line from a stored run, reading a history file with located
//! errors and appending are `oloproof_engine::history`; the report renders the trend and the
//! gate pools windows of lines. Lines reject unknown fields, so a typo in a hand-edited history
//! is an error, not a silently dropped value.

use serde::{Deserialize, Serialize};

use crate::config::SampleOptions;
use crate::summary::SummaryKind;

/// Schema version of history lines.
pub const HISTORY_SCHEMA_VERSION: u32 = 1;

/// A criterion's interval as a history line records it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HistoryInterval {
    /// Lower bound.
    pub lower: f64,
    /// Upper bound.
    pub upper: f64,
    /// `clopper_pearson`, `wilson`, `percentile_bootstrap` or `normal_pooled`.
    pub method: String,
    /// Two-sided confidence level (0.95).
    pub level: f64,
}

/// One criterion of a history line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HistoryCriterion {
    /// Criterion name.
    pub criterion: String,
    /// How it is summarised.
    pub kind: SummaryKind,
    /// The proportion or mean; `null` when nothing was observed.
    pub value: Option<f64>,
    /// The 95 % interval of the run summary; `null` when there is none.
    pub interval: Option<HistoryInterval>,
    /// Passes, when the criterion is summarised as a proportion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed: Option<u64>,
    /// Sample standard deviation of the observed scores (score criteria with 2 or more
    /// observations), so that windows can pool means and spreads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub std_dev: Option<f64>,
    /// Observed verdicts.
    pub observed: u64,
    /// Missing verdicts (errors).
    pub missing: u64,
    /// Excluded verdicts.
    pub excluded: u64,
    /// The judges that scored it (provider and model), for a judged criterion; empty for a
    /// rule, and on lines written before criteria recorded their judges (then the line's
    /// [`HistoryEntry::judge_models`] is all that is known).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judges: Vec<JudgeModel>,
}

impl HistoryCriterion {
    /// Share of the criterion's cases that are missing (0 without cases).
    pub fn missing_share(&self) -> f64 {
        let total = self.observed + self.missing + self.excluded;
        if total == 0 {
            0.0
        } else {
            self.missing as f64 / total as f64
        }
    }
}

/// A judge that scored the run: its name in `judges:`, provider and model.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(deny_unknown_fields)]
pub struct JudgeModel {
    /// Name in `judges:`.
    pub name: String,
    /// `openai`, `anthropic`, … (`null` when not declared).
    pub provider: Option<String>,
    /// The model (`null` when not declared).
    pub model: Option<String>,
}

impl JudgeModel {
    /// `provider/model` (`?` for what was not declared): what two runs must share to be
    /// judged alike (the name in `judges:` may differ).
    pub fn label(&self) -> String {
        format!(
            "{}/{}",
            self.provider.as_deref().unwrap_or("?"),
            self.model.as_deref().unwrap_or("?")
        )
    }
}

/// A recorded dataset's identity.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DatasetIdentity {
    /// The file as given.
    pub path: String,
    /// sha256 (hex) of the file.
    pub sha256: String,
}

/// One line of a score history.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HistoryEntry {
    /// [`HISTORY_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The run's creation time, UTC, RFC 3339 (`2026-09-16T12:00:00Z`).
    pub timestamp: String,
    /// The run.
    pub run_id: String,
    /// `git rev-parse HEAD` in the project's folder; `null` outside a repository.
    pub commit: Option<String>,
    /// The current branch; `null` outside a repository or on a detached HEAD.
    pub branch: Option<String>,
    /// The run's configuration identity (system, evaluators, slices: sha256).
    pub config_hash: String,
    /// System name.
    pub system: String,
    /// System version.
    pub version: String,
    /// The recorded dataset, for runs of `--dataset`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<DatasetIdentity>,
    /// The judges of the run's judged criteria.
    #[serde(default)]
    pub judge_models: Vec<JudgeModel>,
    /// Cases scored.
    pub cases: u64,
    /// The sample the run scored (`run --sample`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<SampleOptions>,
    /// Per criterion, in evaluator order.
    pub criteria: Vec<HistoryCriterion>,
}

impl HistoryEntry {
    /// The judge models (`provider/model`, sorted) that scored `criterion` on this line: the
    /// criterion's own judges when recorded, else — a line written before criteria recorded
    /// them — the run's judges; empty for a rule criterion or an unknown one.
    pub fn judges_of(&self, criterion: &str) -> Vec<String> {
        let Some(c) = self.criterion(criterion) else {
            return Vec::new();
        };
        let judges = if c.judges.is_empty() {
            &self.judge_models
        } else {
            &c.judges
        };
        let mut labels: Vec<String> = judges.iter().map(JudgeModel::label).collect();
        labels.sort();
        labels.dedup();
        labels
    }

    /// The criterion named `name`.
    pub fn criterion(&self, name: &str) -> Option<&HistoryCriterion> {
        self.criteria.iter().find(|c| c.criterion == name)
    }

    /// A short label for the run: the first 7 characters of the commit, else the end of the
    /// run id.
    pub fn short_label(&self) -> String {
        match &self.commit {
            Some(c) => c.chars().take(7).collect(),
            None => {
                let tail: String = self
                    .run_id
                    .chars()
                    .rev()
                    .take(6)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                format!("run…{tail}")
            }
        }
    }
}
