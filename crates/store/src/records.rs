//! Typed reads of what the store holds as JSON: a whole run ([`SqliteStore::load_run`]), a
//! comparison and a diagnosis. This is the one place stored rows are decoded; a row that does
//! not decode is a [`StoreError::Corrupt`] naming the record.

use std::collections::HashMap;

use oloproof_core::comparison::Comparison;
use oloproof_core::diagnosis::Diagnosis;
use oloproof_core::run::{Evaluators, LoadedCase, LoadedRun};
use oloproof_core::settings::RunSettings;
use oloproof_core::verdict::CriterionVerdict;
use serde::de::DeserializeOwned;

use crate::{Result, SqliteStore, StoreError};

/// Decodes one stored JSON record, or says which one is unreadable.
fn decode<T: DeserializeOwned>(json: &str, what: impl FnOnce() -> String) -> Result<T> {
    serde_json::from_str(json).map_err(|source| StoreError::Corrupt {
        what: what(),
        source,
    })
}

impl SqliteStore {
    /// Reads a stored run back: its record, its settings, and every case in order with its
    /// trace (`None` while pending) and verdicts; the criteria (with their summary kinds, which
    /// `evaluators` decides) in evaluator order.
    ///
    /// An unknown run is [`StoreError::UnknownRun`]; a row that does not decode is
    /// [`StoreError::Corrupt`] naming it (`case c1`, `the trace of c1`, `a verdict of c1`).
    pub fn load_run(&self, run_id: &str, evaluators: &dyn Evaluators) -> Result<LoadedRun> {
        self.load_run_with(run_id, evaluators, |_| true, |_| {})
    }

    /// [`load_run`](Self::load_run) reading only part of the run: the cases whose id `select`
    /// keeps (the others are not decoded, and are absent from [`LoadedRun::cases`]), each passed
    /// through `shape` as soon as it is decoded, so that a reader of a large run can drop what
    /// it does not need (texts) before the next case is read.
    pub fn load_run_with(
        &self,
        run_id: &str,
        evaluators: &dyn Evaluators,
        mut select: impl FnMut(&str) -> bool,
        mut shape: impl FnMut(&mut LoadedCase),
    ) -> Result<LoadedRun> {
        let record = self.run(run_id)?;
        let settings: RunSettings =
            decode(&record.settings_json, || format!("run {run_id}'s settings"))?;
        let criteria = settings
            .options
            .evaluators
            .iter()
            .map(|o| (o.criterion(), evaluators.kind(o)))
            .collect();
        let rows = self.cases(run_id)?;
        let selected: Vec<bool> = rows.iter().map(|r| select(&r.case_id)).collect();
        let wanted: std::collections::HashSet<&str> = rows
            .iter()
            .zip(&selected)
            .filter(|(_, keep)| **keep)
            .map(|(r, _)| r.case_id.as_str())
            .collect();
        let mut by_case: HashMap<String, Vec<CriterionVerdict>> = HashMap::new();
        for v in self.verdicts(run_id)? {
            if !wanted.contains(v.case_id.as_str()) {
                continue;
            }
            let parsed = decode(&v.verdict_json, || format!("a verdict of {}", v.case_id))?;
            by_case.entry(v.case_id).or_default().push(parsed);
        }
        drop(wanted);
        let mut cases = Vec::new();
        // Each row's JSON is dropped once decoded and shaped.
        for (row, keep) in rows.into_iter().zip(selected) {
            if !keep {
                continue;
            }
            let case = decode(&row.case_json, || format!("case {}", row.case_id))?;
            let trace = match &row.trace_json {
                Some(t) => Some(decode(t, || format!("the trace of {}", row.case_id))?),
                None => None,
            };
            let verdicts = by_case.remove(&row.case_id).unwrap_or_default();
            let mut loaded = (case, trace, verdicts);
            shape(&mut loaded);
            cases.push(loaded);
        }
        Ok(LoadedRun {
            record,
            settings,
            cases,
            criteria,
        })
    }

    /// Reads a recorded comparison back (`id` with or without the `sha256:` prefix); `None`
    /// when the store has no such comparison.
    pub fn load_comparison(&self, id: &str) -> Result<Option<Comparison>> {
        let id = if id.starts_with("sha256:") {
            id.to_string()
        } else {
            format!("sha256:{id}")
        };
        let Some(record) = self.comparison(&id)? else {
            return Ok(None);
        };
        decode(&record.content_json, || format!("comparison {id}")).map(Some)
    }

    /// Reads a recorded diagnosis back by its full id (`sha256:…`); `None` when the store has
    /// no such diagnosis.
    pub fn load_diagnosis(&self, id: &str) -> Result<Option<Diagnosis>> {
        match self.diagnosis(id)? {
            Some(d) => decode(&d.content_json, || format!("diagnosis {id}")).map(Some),
            None => Ok(None),
        }
    }

    /// Every recorded diagnosis of `run_id`, newest first; one that does not decode is an error
    /// naming it.
    pub fn load_diagnoses_of(&self, run_id: &str) -> Result<Vec<Diagnosis>> {
        self.diagnoses_of(run_id)?
            .iter()
            .map(|a| decode(&a.content_json, || format!("diagnosis {}", a.id)))
            .collect()
    }
}
