//! `classifier`: a local sequence classifier's verdict on one text of the output — toxicity,
//! personal data, refusal or sentiment detection by a small trained model (seed 002 §5.2,
//! classifier-based evaluators; cheap and deterministic enough for every trace, §5.7 tier 1).
//!
//! ```yaml
//! judges:
//!   tox: {provider: local, kind: classifier, path: models/toxic-bert}
//! evaluators:
//!   - {type: classifier, judge: tox, label: toxic, threshold: 0.5, criterion: no_toxicity}
//! ```
//!
//! The judge (`provider: local`, `kind: classifier`: any `…ForSequenceClassification` model
//! the local-model crate loads, BERT / RoBERTa / DeBERTa safetensors or an ONNX export)
//! gives each label's probability for the output's `field` (default `answer`): a softmax over
//! the labels, or one sigmoid per label for a `multi_label_classification` model, as
//! `transformers`' text-classification pipeline computes them. `p` is the probability of
//! `label`; a text longer than the model takes is cut into overlapping windows and `p` is the
//! **maximum** over them (`windows: max`, the default: the label *anywhere* in the text, what
//! "detect X" means), or the minimum (`windows: min`: the label *everywhere*).
//!
//! **Polarity.** `pass_when: below` (the default, for a classifier that detects a bad thing):
//! the case **fails when `p ≥ threshold`** and passes when `p < threshold`. `pass_when:
//! above` (a label the output should have, e.g. `polite`): the case passes when `p ≥
//! threshold`. `threshold` is a probability in [0, 1] (default 0.5).
//!
//! **Calibration.** The threshold is calibrated like a judge: the label, threshold,
//! `pass_when` and `windows` join the calibration's identity
//! ([`Evaluator::calibrated_options`]), so `oloproof calibrate --judge tox --evaluator
//! classifier` measures this configuration, and `compare` / `gate` refuse the criterion until
//! a calibration of this model, label and threshold has passed.
//!
//! **Checks.** At configuration time the judge must be a `kind: classifier` local judge and
//! `label` one of its model's labels (`config.json`'s `id2label`, read without loading the
//! weights — for an `hf://` model, from the Hugging Face cache, else once fetched when the
//! run starts; a label it lacks is a located error listing them, with a "did you mean"). An
//! output without the field is `excluded: output_field_absent`, a field that is not a string
//! `excluded: output_field_not_text`, an empty one `excluded: output_field_empty`; a failed
//! stage or model call, a label the loaded model lacks (a model fetched at run time) or a
//! non-finite probability is `missing` — never a pass.
//!
//! The detail holds the label's probability, every label's probability (in the window that
//! decided), the threshold and rule, the windows and the activation.

use oloproof_core::case::Case;
use oloproof_core::config::EvaluatorEntry;
use oloproof_core::source::{did_you_mean, SourceError};
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};
use oloproof_judge::{JudgeSettings, LocalKind, Provider};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{
    missing, missing_with, verdict, CallEstimate, EntryParser, Evaluator, EvaluatorSpec,
    JudgeChoice, SummaryKind,
};
use crate::judged::{failure_detail, JudgeEnv};

/// Default `threshold`: a probability of one half.
pub const DEFAULT_THRESHOLD: f64 = 0.5;

/// When a case passes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PassWhen {
    /// The label is a bad thing to detect: pass when `p < threshold`, fail when `p ≥
    /// threshold`.
    #[default]
    Below,
    /// The label is a thing the output should have: pass when `p ≥ threshold`.
    Above,
}

impl PassWhen {
    fn as_str(self) -> &'static str {
        match self {
            PassWhen::Below => "below",
            PassWhen::Above => "above",
        }
    }
}

/// How the windows of a long text combine into `p`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowRule {
    /// The highest probability over the windows: the label anywhere in the text.
    #[default]
    Max,
    /// The lowest probability over the windows: the label everywhere in the text.
    Min,
}

impl WindowRule {
    fn as_str(self) -> &'static str {
        match self {
            WindowRule::Max => "max",
            WindowRule::Min => "min",
        }
    }
}

fn default_threshold() -> f64 {
    DEFAULT_THRESHOLD
}

fn default_field() -> String {
    "answer".to_string()
}

/// Options of `classifier` (its identity: defaults filled in).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassifierOptions {
    /// Criterion name (default `classifier`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// The `provider: local`, `kind: classifier` judge (a key of `judges:`); required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
    /// The label whose probability is compared with `threshold` (one of the model's
    /// `id2label` names); required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The probability threshold, in [0, 1] (default 0.5).
    #[serde(default = "default_threshold")]
    pub threshold: f64,
    /// `below` (default): fail when `p ≥ threshold`; `above`: pass when `p ≥ threshold`.
    #[serde(default)]
    pub pass_when: PassWhen,
    /// The output field classified (default `answer`); it must hold a string.
    #[serde(default = "default_field")]
    pub field: String,
    /// How a long text's windows combine: `max` (default) or `min`.
    #[serde(default)]
    pub windows: WindowRule,
}

/// The `classifier` type.
pub(crate) const SPEC: EvaluatorSpec = EvaluatorSpec {
    name: "classifier",
    build,
};

fn build(p: &EntryParser<'_>) -> Result<Box<dyn Evaluator>, SourceError> {
    let options: ClassifierOptions = p.options()?;
    let Some(judge) = options.judge.clone() else {
        let mut err = p
            .doc
            .error_at(&p.key_path, true, "`classifier` needs a judge");
        err.key_path = Some(p.path("judge"));
        err.help = Some(match p.first_judge() {
            Some(n) => format!("add `judge: {n}` (a `provider: local`, `kind: classifier` judge)"),
            None => "declare one under `judges:` ({provider: local, kind: classifier, path: MODEL_FOLDER}) and name it with `judge:`".to_string(),
        });
        return Err(err);
    };
    p.check_judge("judge", &judge)?;
    let labels = model_labels(p, &judge)?;
    let Some(label) = options.label.clone() else {
        let mut err = p
            .doc
            .error_at(&p.key_path, true, "`classifier` needs a `label`");
        err.key_path = Some(p.path("label"));
        err.expected = Some(match &labels {
            Some(l) => format!("one of the model's labels: {}", l.join(", ")),
            None => "one of the model's labels (config.json's id2label)".to_string(),
        });
        err.help = Some("add `label: NAME`, the label whose probability is thresholded".into());
        return Err(err);
    };
    if let Some(labels) = &labels {
        if !labels.contains(&label) {
            let err = p.error(
                "label",
                format!("judge `{judge}`'s model has no label `{label}`"),
            );
            return Err(unknown_label(err, &label, labels));
        }
    }
    if !(options.threshold.is_finite() && (0.0..=1.0).contains(&options.threshold)) {
        let mut err = p.error(
            "threshold",
            format!(
                "`threshold` must be a probability between 0 and 1, got {}",
                options.threshold
            ),
        );
        err.help = Some("a probability such as 0.5".to_string());
        return Err(err);
    }
    if options.field.trim().is_empty() {
        return Err(p.error("field", "`field` is empty"));
    }
    Ok(Box::new(Classifier {
        criterion: options
            .criterion
            .clone()
            .unwrap_or_else(|| p.entry.type_name.clone()),
        identity: p.identity(&options),
        choice: JudgeChoice {
            judge: Some(judge.clone()),
            ..JudgeChoice::default()
        },
        judge,
        label,
        threshold: options.threshold,
        pass_when: options.pass_when,
        field: options.field,
        windows: options.windows,
    }))
}

/// `err` (at `evaluators[i].label`) completed with the model's `labels` and a "did you mean".
fn unknown_label(mut err: SourceError, label: &str, labels: &[String]) -> SourceError {
    err.expected = Some(format!(
        "one of the model's labels (config.json's id2label): {}",
        labels.join(", ")
    ));
    err.help = Some(
        match did_you_mean(label, labels.iter().map(String::as_str)) {
            Some(s) => format!("did you mean `{s}`?"),
            None => "set `label:` to one of the labels listed".to_string(),
        },
    );
    err
}

/// The label check made when a new run is about to load its models, for the classifiers
/// whose labels the configuration check could not read: an `hf://` model that is not in the
/// Hugging Face cache. Its files are fetched into the cache (what loading the judge does next,
/// which then reads them from there) and a label the model lacks is the same located error
/// at `evaluators[i].label`, listing the model's labels (exit 2), before any case runs — not
/// a `missing` verdict on every case. A model that cannot be fetched is left to the load,
/// which says why.
pub(crate) fn check_fetched_labels(
    config: &oloproof_core::config::ProjectConfig,
) -> Result<(), SourceError> {
    for (i, entry) in config.options.evaluators.iter().enumerate() {
        if entry.type_name != "classifier" {
            continue;
        }
        let text = |key: &str| entry.options.get(key).and_then(Value::as_str);
        let (Some(judge), Some(label)) = (text("judge"), text("label")) else {
            continue;
        };
        let Some(settings) = config
            .options
            .judges
            .get(judge)
            .and_then(|raw| serde_json::from_value::<JudgeSettings>(raw.clone()).ok())
        else {
            continue;
        };
        // Only an `hf://` model the configuration check could not read.
        if !matches!(settings.check_local_path(), Ok(None))
            || !matches!(settings.classifier_labels(&config.dir), Ok(None))
        {
            continue;
        }
        let labels = settings
            .classifier_labels_fetching(&config.dir)
            .map_err(|e| {
                let mut err = config.error_at(
                    &format!("judges.{judge}.path"),
                    format!("cannot read the labels of judge `{judge}`'s model: {e}"),
                );
                err.expected = Some(
                    "a model whose config.json names its labels (id2label), as transformers saves it"
                        .to_string(),
                );
                err
            })?;
        if let Some(labels) = labels {
            if !labels.iter().any(|l| l == label) {
                let err = config.error_at(
                    &format!("evaluators[{i}].label"),
                    format!("judge `{judge}`'s model has no label `{label}`"),
                );
                return Err(unknown_label(err, label, &labels));
            }
        }
    }
    Ok(())
}

/// The labels of the model of `judge` when the config can tell them (the judge parses and is
/// a local classifier whose folder holds a `config.json`); a judge of another kind is an error
/// at `evaluators[i].judge`, a `config.json` that cannot be read one at `judges.<judge>.path`.
/// `None` when not checked: a stored run, a judge that does not parse (its own validation
/// reports it), an `hf://` model not in the Hugging Face cache (checked by
/// [`check_fetched_labels`] when the run fetches it) or a folder that does not exist.
fn model_labels(p: &EntryParser<'_>, judge: &str) -> Result<Option<Vec<String>>, SourceError> {
    let (Some(judges), Some(dir)) = (p.judges, p.dir) else {
        return Ok(None);
    };
    let Some(raw) = judges.get(judge) else {
        return Ok(None);
    };
    // Settings that do not parse are reported at `judges.<judge>` when the judges are checked.
    let Ok(settings) = serde_json::from_value::<JudgeSettings>(raw.clone()) else {
        return Ok(None);
    };
    if settings.provider != Provider::Local || settings.kind != Some(LocalKind::Classifier) {
        let what = match (settings.provider, settings.kind) {
            (Provider::Local, Some(k)) => format!("a `kind: {}` local judge", k.as_str()),
            (Provider::Local, None) => "a local judge without `kind`".to_string(),
            (provider, _) => format!("a `provider: {}` judge", provider.as_str()),
        };
        let mut err = p.error(
            "judge",
            format!("judge `{judge}` is {what}, not a sequence classifier"),
        );
        err.expected = Some("a judge with `provider: local` and `kind: classifier`".to_string());
        err.help = Some(format!(
            "declare `judges.{judge}` as {{provider: local, kind: classifier, path: MODEL_FOLDER}}, or name such a judge"
        ));
        return Err(err);
    }
    settings.classifier_labels(dir).map_err(|e| {
        let path = format!("judges.{judge}.path");
        let mut err = p.doc.error_at(
            &path,
            false,
            format!("cannot read the labels of judge `{judge}`'s model: {e}"),
        );
        err.expected = Some(
            "a model folder whose config.json names its labels (id2label), as transformers saves it"
                .to_string(),
        );
        oloproof_core::config::attribute(err, p.overrides, &path)
    })
}

/// A local classifier's verdict on one output field.
struct Classifier {
    criterion: String,
    identity: EvaluatorEntry,
    choice: JudgeChoice,
    judge: String,
    label: String,
    threshold: f64,
    pass_when: PassWhen,
    field: String,
    windows: WindowRule,
}

impl Classifier {
    /// `excluded` with `reason`, the field named in the detail.
    fn excluded(&self, reason: &str) -> CriterionVerdict {
        verdict(
            &self.criterion,
            Verdict::Excluded {
                reason: reason.to_string(),
            },
            json!({"judge": self.judge, "field": self.field}),
        )
    }

    /// The rule in words, for the detail.
    fn rule(&self) -> String {
        match self.pass_when {
            PassWhen::Below => format!(
                "fails when p({}) >= {}, passes below",
                self.label, self.threshold
            ),
            PassWhen::Above => format!(
                "passes when p({}) >= {}, fails below",
                self.label, self.threshold
            ),
        }
    }
}

impl Evaluator for Classifier {
    fn criterion(&self) -> &str {
        &self.criterion
    }

    fn kind(&self) -> SummaryKind {
        SummaryKind::Proportion
    }

    fn identity(&self) -> &EvaluatorEntry {
        &self.identity
    }

    fn judge_names(&self) -> Vec<String> {
        vec![self.judge.clone()]
    }

    fn judge_choice(&self) -> Option<&JudgeChoice> {
        Some(&self.choice)
    }

    fn calibrated_options(&self) -> Option<Value> {
        Some(json!({
            "label": self.label,
            "threshold": self.threshold,
            "pass_when": self.pass_when.as_str(),
            "windows": self.windows.as_str(),
        }))
    }

    fn estimate(&self, _case: &Case) -> Option<CallEstimate> {
        // A local model: no LLM calls, no embedding requests.
        Some(CallEstimate::default())
    }

    fn evaluate(
        &self,
        _case: &Case,
        trace: &Trace,
        judges: Option<&JudgeEnv<'_>>,
    ) -> CriterionVerdict {
        let Some(env) = judges else {
            return missing_with(
                &self.criterion,
                "no judges are configured for this evaluation",
            );
        };
        if trace.generation.is_none() {
            return missing(&self.criterion, trace, "the generation");
        }
        let text = match trace.output_field(&self.field) {
            None | Some(Value::Null) => return self.excluded("output_field_absent"),
            Some(Value::String(s)) if s.trim().is_empty() => {
                return self.excluded("output_field_empty")
            }
            Some(Value::String(s)) => s.clone(),
            Some(_) => return self.excluded("output_field_not_text"),
        };
        let Some(client) = env.judges.client(&self.judge) else {
            return missing_with(&self.criterion, format!("no judge named `{}`", self.judge));
        };
        let _span =
            tracing::info_span!("classify", criterion = %self.criterion, judge = %self.judge)
                .entered();
        let scores = match client.classify(std::slice::from_ref(&text)) {
            Ok(mut s) if s.len() == 1 => s.remove(0),
            Ok(s) => {
                return missing_with(
                    &self.criterion,
                    format!(
                        "judge {}: {} classifications for one text",
                        self.judge,
                        s.len()
                    ),
                )
            }
            Err(e) => {
                return verdict(
                    &self.criterion,
                    Verdict::Missing {
                        error: format!("judge {}: {}: {e}", self.judge, e.kind()),
                    },
                    json!({"judge": self.judge, "failed_call": failure_detail(&e, Some(client))}),
                )
            }
        };
        let Some(k) = scores.labels.iter().position(|l| *l == self.label) else {
            return missing_with(
                &self.criterion,
                format!(
                    "judge {}: the model has no label `{}` (its labels: {})",
                    self.judge,
                    self.label,
                    scores.labels.join(", ")
                ),
            );
        };
        if let Some(bad) = scores.windows.iter().flatten().find(|p| !p.is_finite()) {
            return missing_with(
                &self.criterion,
                format!(
                    "judge {}: the model gave a non-finite probability ({bad})",
                    self.judge
                ),
            );
        }
        let picked = match self.windows {
            WindowRule::Max => windows_extreme(&scores.windows, k, |a, b| a > b),
            WindowRule::Min => windows_extreme(&scores.windows, k, |a, b| a < b),
        };
        let Some((window, p)) = picked else {
            return missing_with(
                &self.criterion,
                format!("judge {}: the model classified no window", self.judge),
            );
        };
        let p = f64::from(p);
        let pass = match self.pass_when {
            PassWhen::Below => p < self.threshold,
            PassWhen::Above => p >= self.threshold,
        };
        let probabilities: Map<String, Value> = scores
            .labels
            .iter()
            .zip(&scores.windows[window])
            .map(|(l, q)| (l.clone(), json!(f64::from(*q))))
            .collect();
        verdict(
            &self.criterion,
            Verdict::pass_if(pass),
            json!({
                "judge": self.judge,
                "field": self.field,
                "label": self.label,
                "probability": p,
                "threshold": self.threshold,
                "pass_when": self.pass_when.as_str(),
                "rule": self.rule(),
                "probabilities": probabilities,
                "activation": if scores.sigmoid { "sigmoid" } else { "softmax" },
                "windows": scores.windows.len(),
                "window": window,
                "window_rule": self.windows.as_str(),
            }),
        )
    }
}

/// The first window whose probability of label `k` beats every other by `better`, with that
/// probability (the probabilities are finite, checked by the caller).
fn windows_extreme(
    windows: &[Vec<f32>],
    k: usize,
    better: fn(f32, f32) -> bool,
) -> Option<(usize, f32)> {
    let mut best: Option<(usize, f32)> = None;
    for (w, row) in windows.iter().enumerate() {
        let p = *row.get(k)?;
        if best.is_none_or(|(_, b)| better(p, b)) {
            best = Some((w, p));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judged::{JudgeRegistry, StoreJudgeCache};
    use oloproof_core::case::parse_cases;
    use std::collections::BTreeMap;

    fn case() -> Case {
        parse_cases("c.jsonl", r#"{"id":"c","input":{"question":"q"}}"#)
            .unwrap()
            .remove(0)
    }

    fn trace(output: Value) -> Trace {
        let mut t = Trace::new("c");
        if let Value::Object(map) = output {
            t.generation = Some(map);
        }
        t
    }

    #[test]
    fn windows_extremes_take_the_first_best() {
        let w = vec![vec![0.2, 0.8], vec![0.9, 0.1], vec![0.9, 0.3]];
        assert_eq!(windows_extreme(&w, 0, |a, b| a > b), Some((1, 0.9)));
        assert_eq!(windows_extreme(&w, 1, |a, b| a < b), Some((1, 0.1)));
        assert_eq!(windows_extreme(&w, 2, |a, b| a > b), None);
        assert_eq!(windows_extreme(&[], 0, |a, b| a > b), None);
    }

    #[test]
    fn options_identity_and_calibrated_options() {
        let e = super::super::from_json(
            &json!({"type": "classifier", "judge": "tox", "label": "toxic"}),
        )
        .unwrap();
        assert_eq!(e.criterion(), "classifier");
        assert_eq!(e.kind(), SummaryKind::Proportion);
        assert_eq!(e.judge_names(), ["tox"]);
        assert_eq!(
            e.judge_choice().and_then(|c| c.judge.clone()).as_deref(),
            Some("tox")
        );
        // Defaults filled in: the identity changes with any of them.
        assert_eq!(
            e.identity().to_value(),
            json!({"type": "classifier", "judge": "tox", "label": "toxic", "threshold": 0.5,
                   "pass_when": "below", "field": "answer", "windows": "max"})
        );
        assert_eq!(
            e.calibrated_options(),
            Some(
                json!({"label": "toxic", "threshold": 0.5, "pass_when": "below", "windows": "max"})
            )
        );
        for bad in [
            json!({"type": "classifier", "judge": "tox", "label": "toxic", "threshold": 1.5}),
            json!({"type": "classifier", "judge": "tox", "label": "toxic", "threshold": -0.1}),
            json!({"type": "classifier", "label": "toxic"}),
            json!({"type": "classifier", "judge": "tox"}),
            json!({"type": "classifier", "judge": "tox", "label": "toxic", "pass_when": "over"}),
            json!({"type": "classifier", "judge": "tox", "label": "toxic", "field": " "}),
            json!({"type": "classifier", "judge": "tox", "label": "toxic", "top_k": 3}),
        ] {
            assert!(super::super::from_json(&bad).is_err(), "{bad}");
        }
    }

    /// Without the model: the case-level absences are `excluded` with their reason, a failed
    /// stage and a missing judge are `missing`.
    #[test]
    fn absences_are_excluded_and_failures_missing() {
        let e = super::super::from_json(
            &json!({"type": "classifier", "judge": "tox", "label": "toxic", "field": "summary"}),
        )
        .unwrap();
        let registry = JudgeRegistry::from_options(&BTreeMap::new()).unwrap();
        let cache = StoreJudgeCache::new(None);
        let env = JudgeEnv {
            judges: &registry,
            cache: &cache,
        };
        let c = case();
        let reason = |out: Value| match e.evaluate(&c, &trace(out), Some(&env)).verdict {
            Verdict::Excluded { reason } => reason,
            other => panic!("{other:?}"),
        };
        assert_eq!(reason(json!({"answer": "x"})), "output_field_absent");
        assert_eq!(reason(json!({"summary": null})), "output_field_absent");
        assert_eq!(reason(json!({"summary": 3})), "output_field_not_text");
        assert_eq!(reason(json!({"summary": "  "})), "output_field_empty");
        let v = e.evaluate(&c, &trace(json!({"answer": "x"})), Some(&env));
        assert_eq!(v.detail["field"], "summary");
        // A field to classify but no such judge: missing, never a pass.
        let v = e.evaluate(&c, &trace(json!({"summary": "hello"})), Some(&env));
        assert!(
            matches!(&v.verdict, Verdict::Missing { error } if error.contains("tox")),
            "{v:?}"
        );
        // No generation (a failed stage) and no judges at all: missing.
        let v = e.evaluate(&c, &Trace::new("c"), Some(&env));
        assert!(matches!(v.verdict, Verdict::Missing { .. }), "{v:?}");
        let v = e.evaluate(&c, &trace(json!({"summary": "hello"})), None);
        assert!(matches!(v.verdict, Verdict::Missing { .. }), "{v:?}");
    }
}
