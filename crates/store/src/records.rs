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
        let criteria = evaluators.criteria(&settings.options.evaluators)?;
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

#[cfg(test)]
mod tests {
    use oloproof_core::case::Case;
    use oloproof_core::config::{validate, EvaluatorCatalog, EvaluatorEntry, ProjectOptions};
    use oloproof_core::run::StoredEvaluatorError;
    use oloproof_core::run::{Evaluators, LoadedRun};
    use oloproof_core::source::{SourceError, YamlDocument};
    use oloproof_core::summary::{RunSummary, SummaryKind};
    use oloproof_core::trace::Trace;
    use oloproof_core::verdict::{CriterionVerdict, Verdict};

    use crate::{CaseResult, NewRun, SqliteStore, StoreError};

    /// Every criterion a proportion, named by its `criterion:` (else its type); nothing else
    /// is asked of it here.
    struct Kinds;
    impl Evaluators for Kinds {
        fn criteria(
            &self,
            entries: &[EvaluatorEntry],
        ) -> Result<Vec<(String, SummaryKind)>, StoredEvaluatorError> {
            Ok(entries
                .iter()
                .map(|e| {
                    // The engine's default names: `<type>`, or `<type>_at_<k>` with a cutoff.
                    let name = match (e.criterion_override(), e.options.get("k")) {
                        (Some(c), _) => c.to_string(),
                        (None, Some(k)) => format!("{}_at_{k}", e.type_name),
                        (None, None) => e.type_name.clone(),
                    };
                    (name, SummaryKind::Proportion)
                })
                .collect())
        }
        fn summarize(&self, _: &LoadedRun) -> Result<RunSummary, StoredEvaluatorError> {
            unreachable!("the loader never summarises")
        }
        fn slice_value(&self, _: &str, _: &Case, _: &Trace) -> String {
            unreachable!("the loader never slices")
        }
    }

    /// The two types of the test config, their options left as written.
    impl EvaluatorCatalog for Kinds {
        fn type_names(&self) -> Vec<&'static str> {
            vec!["contains", "hit_rate"]
        }
        fn check(
            &self,
            _: &YamlDocument,
            _: &[String],
            _: &std::path::Path,
            _: &mut ProjectOptions,
        ) -> Result<(), SourceError> {
            Ok(())
        }
    }

    const CONFIG: &str = "system:\n  rag:\n    object: app:X\n    depth: 2\n    top_k: 1\ncases: cases.jsonl\nevaluators:\n  - {type: contains, criterion: answer_correct}\n  - {type: hit_rate, k: 1}\n";

    /// A store with run `run_1`: case `a` done (trace and one verdict), case `b` pending.
    fn store() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().unwrap();
        let mut store = SqliteStore::open(&dir.path().join("s.db")).unwrap();
        let doc = YamlDocument::parse("oloproof.yaml", CONFIG).unwrap();
        let options = validate(&doc, &doc.value, &[], std::path::Path::new("."), &Kinds).unwrap();
        let settings = serde_json::json!({
            "config_path": "oloproof.yaml", "config_dir": ".", "options": options,
            "system": {"name": "x", "version": "1", "depth": 2, "top_k": 1,
                       "token_budget": null, "index_version": null, "params": {}},
            "workers": 1, "timeout_s": 60.0, "use_cache": true,
        })
        .to_string();
        let case = |id: &str| (id.to_string(), format!(r#"{{"id":"{id}","input":{{}}}}"#));
        store
            .create_run(&NewRun {
                id: "run_1",
                config_path: "oloproof.yaml",
                settings_json: &settings,
                identity: "i",
                system_json: "{}",
                parent: None,
                cases: &[case("a"), case("b")],
            })
            .unwrap();
        let claimed = store
            .claim_pending("run_1", std::time::Duration::from_secs(60))
            .unwrap();
        let trace = serde_json::to_string(&Trace::new("a")).unwrap();
        let verdict = serde_json::to_string(&CriterionVerdict {
            criterion: "answer_correct".into(),
            verdict: Verdict::Pass,
            detail: serde_json::Value::Null,
        })
        .unwrap();
        store
            .complete_cases(
                "run_1",
                &[CaseResult {
                    case_id: "a",
                    attempt: claimed[0].attempt,
                    trace_json: &trace,
                    verdicts: &[("answer_correct".into(), verdict)],
                    cache: &[],
                }],
            )
            .unwrap();
        (dir, store)
    }

    #[test]
    fn a_run_reads_back_typed_with_its_criteria_in_evaluator_order() {
        let (_dir, store) = store();
        let run = store.load_run("run_1", &Kinds).unwrap();
        assert_eq!(run.record.id, "run_1");
        assert_eq!(run.settings.system.top_k, 1);
        let names: Vec<&str> = run.criteria.iter().map(|(c, _)| c.as_str()).collect();
        assert_eq!(names, ["answer_correct", "hit_rate_at_1"]);
        let ids: Vec<&str> = run.cases.iter().map(|(c, _, _)| c.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert!(
            run.cases[0].1.is_some() && run.cases[1].1.is_none(),
            "b is pending"
        );
        assert!(run.verdict("a", "answer_correct").is_some());
        assert!(run.verdict("b", "answer_correct").is_none());
    }

    #[test]
    fn only_the_selected_cases_are_decoded_and_each_is_shaped() {
        let (_dir, store) = store();
        let mut seen = Vec::new();
        let run = store
            .load_run_with(
                "run_1",
                &Kinds,
                |id| {
                    seen.push(id.to_string());
                    id == "a"
                },
                |(_, _, verdicts)| verdicts.clear(),
            )
            .unwrap();
        assert_eq!(seen, ["a", "b"]);
        assert_eq!(run.cases.len(), 1);
        assert!(run.cases[0].2.is_empty(), "shaped");
    }

    #[test]
    fn unknown_and_unreadable_records_are_typed_errors() {
        let (_dir, store) = store();
        assert!(matches!(
            store.load_run("run_2", &Kinds),
            Err(StoreError::UnknownRun(id)) if id == "run_2"
        ));
        assert_eq!(store.load_comparison("abc").unwrap(), None);
        assert_eq!(store.load_diagnosis("sha256:abc").unwrap(), None);
        let mut store = store;
        store
            .save_diagnosis("sha256:d", "run_1", "{not json")
            .unwrap();
        let err = store.load_diagnosis("sha256:d").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("stored record of diagnosis sha256:d is unreadable: "),
            "{err}"
        );
        assert!(store.load_diagnoses_of("run_1").is_err());
    }
}
