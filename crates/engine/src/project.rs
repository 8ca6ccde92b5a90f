//! Loading a project: `oloproof.yaml` read, overrides applied and validated in one place.
//!
//! [`load_config`] is what every command and library caller uses: the file's structure and
//! sections (`oloproof_core::config`), every evaluator's own options through the evaluator
//! registry (unknown types and options are located errors; each entry becomes its identity,
//! defaults filled in and schema files read), and `judges:`. A config that loads is fully
//! checked; an error points at file:line:column, names the key path and suggests a fix.

use std::path::Path;

use oloproof_core::config::{ConfigError, ProjectConfig};

use crate::evaluators;

/// Loads `path` with `overrides` (`key.path=value`, applied in order) and validates all of it.
pub fn load_config(path: &Path, overrides: &[String]) -> Result<ProjectConfig, ConfigError> {
    let config = oloproof_core::config::load_config(path, overrides, &evaluators::Catalog)?;
    validate(config)
}

/// Loads `path` like [`load_config`], for a caller that brings its own cases: the file's
/// `system:` runs, `cases:` may be absent (`monitor`'s shadow evaluation).
pub fn load_config_for_given_cases(
    path: &Path,
    overrides: &[String],
) -> Result<ProjectConfig, ConfigError> {
    let config =
        oloproof_core::config::load_config_for_given_cases(path, overrides, &evaluators::Catalog)?;
    validate(config)
}

/// Loads `path` like [`load_config`], evaluating the recorded `dataset` (`run --dataset`)
/// instead of the file's `system:`/`dataset:` (its `cases:` is ignored too).
pub fn load_config_for_dataset(
    path: &Path,
    overrides: &[String],
    dataset: &Path,
) -> Result<ProjectConfig, ConfigError> {
    let config = oloproof_core::config::load_config_for_dataset(
        path,
        overrides,
        dataset,
        &evaluators::Catalog,
    )?;
    validate(config)
}

/// The check core cannot make: the judges (the evaluators were checked while loading, through
/// [`evaluators::Catalog`]).
fn validate(config: ProjectConfig) -> Result<ProjectConfig, ConfigError> {
    crate::judged::validate_judges(&config)?;
    Ok(config)
}

/// What `oloproof run` may change of a loaded config for one run: the sample, the repeats of
/// every judge that takes them, the threads of local models.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunOverrides {
    /// `--sample N`: score a seed-determined subset of N cases.
    pub sample: Option<usize>,
    /// `--seed S` of the sample (default 0).
    pub seed: Option<u64>,
    /// `--repeats N`: every judged evaluator that takes `repeats:` judges each case N times.
    pub repeats: Option<u32>,
    /// `--threads N`: threads of every local-model judge.
    pub threads: Option<usize>,
}

/// A [`RunOverrides`] value that cannot apply.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum OverrideError {
    /// `--sample 0`.
    #[error("--sample takes a number of cases of at least 1, e.g. --sample 30")]
    EmptySample,
    /// `--repeats 0`.
    #[error("--repeats takes a number of judgments per case of at least 1, e.g. --repeats 3")]
    NoRepeats,
    /// `--repeats` on a config whose evaluators call no judge that repeats.
    #[error("--repeats re-runs the judges, but no evaluator of {config} has a judge")]
    NothingToRepeat {
        /// The config file.
        config: String,
    },
    /// `--threads 0`.
    #[error("--threads takes a number of threads of at least 1, e.g. --threads 2")]
    NoThreads,
}

impl RunOverrides {
    /// Applies the overrides to `config` (a validated config: entries are rebuilt, so they stay
    /// their identity). Repeats are part of each repeated evaluator's identity, so every repeat
    /// has its own cache namespace.
    pub fn apply(&self, config: &mut ProjectConfig) -> Result<(), OverrideError> {
        if let Some(size) = self.sample {
            if size == 0 {
                return Err(OverrideError::EmptySample);
            }
            config.options.sample = Some(oloproof_core::config::SampleOptions {
                size,
                seed: self.seed.unwrap_or(0),
            });
        }
        if let Some(repeats) = self.repeats {
            if repeats == 0 {
                return Err(OverrideError::NoRepeats);
            }
            let nothing = || OverrideError::NothingToRepeat {
                config: config.path.display().to_string(),
            };
            // Validated entries always build; one that did not would simply not repeat.
            let built = evaluators::build_all(&config.options.evaluators).map_err(|_| nothing())?;
            let mut repeated = 0;
            for (entry, evaluator) in config.options.evaluators.iter_mut().zip(&built) {
                if evaluator.takes_repeats() {
                    entry
                        .options
                        .insert("repeats".to_string(), serde_json::json!(repeats));
                    repeated += 1;
                }
            }
            if repeated == 0 {
                return Err(nothing());
            }
            let rebuilt =
                evaluators::build_all(&config.options.evaluators).map_err(|_| nothing())?;
            for (entry, evaluator) in config.options.evaluators.iter_mut().zip(&rebuilt) {
                *entry = evaluator.identity().clone();
            }
        }
        if let Some(threads) = self.threads {
            if threads == 0 {
                return Err(OverrideError::NoThreads);
            }
            for judge in config.options.judges.values_mut() {
                if judge.get("provider").and_then(serde_json::Value::as_str) == Some("local") {
                    judge["threads"] = serde_json::json!(threads);
                }
            }
        }
        Ok(())
    }
}

/// The checks that need the system's `hello`: the fusion method, the fusion weights' lanes,
/// and the lanes and stages the evaluators read ([`evaluators::Evaluator::pipeline_needs`]),
/// against what the system declared. A part it does not declare is an error at the config key
/// that names it, listing what the system declares (exit 2), before any case runs.
pub fn check_pipeline(
    config: &ProjectConfig,
    system: &oloproof_core::settings::SystemSettings,
) -> Result<(), crate::error::EngineError> {
    use oloproof_core::config::FusionMethodName;
    use oloproof_core::source::did_you_mean;
    let invalid = |e| crate::error::EngineError::Config(ConfigError::Invalid(e));
    let declared_lanes = || {
        if system.lanes.is_empty() {
            "the system declares no lanes (`lanes` in its hello, `@rag_system(lanes=[...])`)"
                .to_string()
        } else {
            format!("the system declares the lanes {}", system.lanes.join(", "))
        }
    };
    let declared_stages = || {
        if system.stages.is_empty() {
            "the system declares none of the optional stages rewrite, fuse, rerank".to_string()
        } else {
            format!(
                "the system declares the stages {}",
                system.stages.join(", ")
            )
        }
    };
    if let Some(fusion) = &config.options.rag().fusion {
        if fusion.method == FusionMethodName::System && !system.has_stage("fuse") {
            let mut err = config.error_at(
                "system.rag.fusion.method",
                "`method: system` fuses with the system's own `fuse` op, which it does not declare",
            );
            err.expected = Some(declared_stages());
            err.help = Some(
                "define fuse(input, lists) on the system, or let the host fuse: `method: rrf`"
                    .into(),
            );
            return Err(invalid(err));
        }
        for lane in fusion.weights.iter().flat_map(|w| w.keys()) {
            if !system.lanes.contains(lane) {
                let mut err = config.error_at(
                    &format!("system.rag.fusion.weights.{lane}"),
                    format!("a weight for lane `{lane}`, which the system does not declare"),
                );
                err.expected = Some(declared_lanes());
                err.help = did_you_mean(lane, system.lanes.iter().map(String::as_str))
                    .map(|s| format!("did you mean `{s}`?"));
                return Err(invalid(err));
            }
        }
    }
    let built = evaluators::build_all(&config.options.evaluators)?;
    for (i, evaluator) in built.iter().enumerate() {
        for (need, key) in evaluator.pipeline_needs() {
            let key_path = format!("evaluators[{i}].{key}");
            let mut err = match &need {
                evaluators::PipelineNeed::Lane(lane) if !system.lanes.contains(lane) => {
                    let mut err = config.error_at(
                        &key_path,
                        format!(
                            "`{}` reads lane `{lane}`, which the system does not declare",
                            evaluator.criterion()
                        ),
                    );
                    err.expected = Some(declared_lanes());
                    err.help = did_you_mean(lane, system.lanes.iter().map(String::as_str))
                        .map(|s| format!("did you mean `lane:{s}`?"));
                    err
                }
                evaluators::PipelineNeed::Stage(stage) if !system.has_stage(stage) => {
                    let mut err = config.error_at(
                        &key_path,
                        format!(
                            "`{}` reads the `{stage}` stage, which the system does not declare",
                            evaluator.criterion()
                        ),
                    );
                    err.expected = Some(declared_stages());
                    err
                }
                _ => continue,
            };
            if err.help.is_none() {
                err.help = Some(
                    "a system declares its stages in its hello `ops` and `lanes` (the Python \
                     shim: the methods rewrite/fuse/rerank it defines, `@rag_system(lanes=...)`)"
                        .into(),
                );
            }
            return Err(invalid(err));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, evaluators: &str) -> std::path::PathBuf {
        let path = dir.join("oloproof.yaml");
        let text = format!(
            "dataset: data.jsonl\njudges:\n  default: {{provider: openai, base_url: http://127.0.0.1:9/v1, model: m, api_key_env: K}}\nevaluators:\n{evaluators}"
        );
        std::fs::write(&path, text).unwrap();
        path
    }

    fn error(evaluators: &str) -> oloproof_core::source::SourceError {
        let dir = tempfile::tempdir().unwrap();
        match load_config(&write(dir.path(), evaluators), &[]) {
            Err(ConfigError::Invalid(e)) => e,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_option_a_type_does_not_take_is_located_and_names_the_options_it_takes() {
        let e = error("  - {type: groundedness_judge, judge: default, strictness: 3}\n");
        assert_eq!(e.message, "unknown key `strictness`");
        assert_eq!(e.key_path.as_deref(), Some("evaluators[0].strictness"));
        assert!(e.location().ends_with(":5:48"), "{}", e.location());
        let expected = e.expected.unwrap();
        assert!(
            expected.contains("judge") && expected.contains("repeats"),
            "{expected}"
        );
        assert!(!expected.contains("strictness"), "{expected}");
    }

    #[test]
    fn an_unknown_type_is_located_with_a_suggestion() {
        let e = error("  - {type: faithfullness, judge: default}\n");
        assert_eq!(e.message, "unknown evaluator type `faithfullness`");
        assert_eq!(e.key_path.as_deref(), Some("evaluators[0].type"));
        assert_eq!(e.help.as_deref(), Some("did you mean `faithfulness`?"));
    }

    #[test]
    fn entries_become_their_identity_with_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "  - {type: contains}\n  - {type: hit_rate, k: 2}\n  - {type: faithfulness, judge: default}\n",
        );
        let config = load_config(&path, &[]).unwrap();
        let entries: Vec<String> = config
            .options
            .evaluators
            .iter()
            .map(|e| e.to_value().to_string())
            .collect();
        assert_eq!(
            entries,
            [
                r#"{"type":"contains","field":"answer","expected_field":"answer"}"#,
                r#"{"type":"hit_rate","k":2,"relevance_unit":"document"}"#,
                r#"{"type":"faithfulness","judge":"default"}"#,
            ]
        );
    }

    #[test]
    fn every_registered_type_builds_from_its_minimal_entry() {
        for spec in evaluators::REGISTRY {
            let entry = match spec.name {
                "hit_rate" | "recall" | "precision" | "mrr" | "ndcg" | "rerank_uplift"
                | "rewrite_uplift" => {
                    serde_json::json!({"type": spec.name, "k": 3})
                }
                "fusion_uplift" => serde_json::json!({"type": spec.name, "k": 3, "lane": "bm25"}),
                "hop_recall" => serde_json::json!({"type": spec.name, "k": 3, "hop": 1}),
                "abstention" => serde_json::json!({"type": spec.name, "measure": "recall"}),
                "classifier" => serde_json::json!({"type": spec.name, "judge": "j", "label": "x"}),
                "schema_validity" => {
                    serde_json::json!({"type": spec.name, "schema": {"type": "object"}})
                }
                "regex" => serde_json::json!({"type": spec.name, "must_match": "x"}),
                "forbidden_terms" => serde_json::json!({"type": spec.name, "terms": ["x"]}),
                "max_length" => serde_json::json!({"type": spec.name, "max": 1}),
                "cost" => {
                    serde_json::json!({"type": spec.name, "prices": {"m": {"input": 1.0, "output": 2.0}}})
                }
                _ => serde_json::json!({"type": spec.name, "judge": "j"}),
            };
            let evaluator = evaluators::from_json(&entry)
                .or_else(|_| evaluators::from_json(&serde_json::json!({"type": spec.name})))
                .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
            assert_eq!(evaluator.identity().type_name, spec.name);
        }
        // The call estimates match what the metrics send (the judge crate's tests count the
        // requests: noise sensitivity makes 5 calls, question similarity one embedding).
        let case: oloproof_core::case::Case =
            serde_json::from_value(serde_json::json!({"id": "c", "input": {"question": "q"}}))
                .unwrap();
        let estimate = |entry: serde_json::Value| {
            evaluators::from_json(&entry)
                .unwrap()
                .estimate(&case)
                .unwrap()
        };
        let noise = estimate(serde_json::json!({"type": "noise_sensitivity", "judge": "j"}));
        assert_eq!((noise.calls, noise.embeddings), (5, 0));
        let sim = estimate(serde_json::json!({"type": "question_similarity", "judge": "j"}));
        assert_eq!((sim.calls, sim.embeddings), (0, 1));
        let ensemble = estimate(
            serde_json::json!({"type": "faithfulness", "judges": ["a", "b"], "repeats": 3}),
        );
        assert_eq!(ensemble.calls, 2 * 2 * 3);
        assert!(
            evaluators::from_json(&serde_json::json!({"type": "contains"}))
                .unwrap()
                .estimate(&case)
                .is_none()
        );
    }
}
