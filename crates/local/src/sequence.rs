//! Single-sequence classification: a Hugging Face `…ForSequenceClassification` model fed one
//! text (toxicity, PII, refusal, sentiment classifiers), with the label probabilities
//! `transformers`' `text-classification` pipeline reports.
//!
//! The network, its architectures (BERT, RoBERTa family, DeBERTa v2 / v3 in safetensors; any
//! ONNX export with the `onnx` feature), batching and the thread pool are the pair
//! classifier's (`classify`): one text is tokenised with the tokenizer's single-sequence
//! template (`[CLS] A [SEP]`, RoBERTa's `<s> A </s>`), segment ids all 0.
//!
//! **Probabilities**, as `transformers`' pipeline chooses its `function_to_apply` from
//! `config.json`:
//!
//! * `problem_type: multi_label_classification`, or a single label: the **sigmoid** of each
//!   logit, independently ([`Activation::Sigmoid`]; the labels do not sum to 1);
//! * otherwise (`single_label_classification`, or no `problem_type` and several labels): the
//!   **softmax** over the labels ([`Activation::Softmax`]);
//! * `problem_type: regression` is not a classifier: a load error.
//!
//! **Long texts** are cut into overlapping windows of whole tokens that fit the model
//! (`max_length` less the special tokens; consecutive windows share `window_overlap` tokens,
//! 64 by default, at most half a window), each classified on its own: [`TextScores`] keeps
//! every window's probabilities, and [`TextScores::max`] (a label *anywhere* in the text, the
//! natural reading of "detect X" for toxicity or PII) and [`TextScores::min`] (the label
//! *everywhere*) combine them. A text that fits is one window, scored exactly as the model
//! scores it whole.

use std::path::Path;

use serde_json::Value;

use crate::classify::{Network, NetworkOptions};
use crate::error::{LocalError, Result};
use crate::files;

/// Options of a [`SequenceClassifier`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SequenceOptions {
    /// Threads of the forward pass (default: every core).
    pub threads: Option<usize>,
    /// Tokens per text, special tokens included (default: `max_position_embeddings`, less
    /// `pad_token_id + 1` for the RoBERTa family, lowered to `tokenizer_config.json`'s
    /// `model_max_length` when smaller).
    pub max_length: Option<usize>,
    /// Windows per forward pass (default 16).
    pub batch_size: Option<usize>,
    /// Tokens shared by consecutive windows of a long text (default
    /// [`crate::DEFAULT_WINDOW_OVERLAP`], at most half a window).
    pub window_overlap: Option<usize>,
}

/// How logits become label probabilities (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// `exp(z_k) / Σ_j exp(z_j)`: one label per text, the probabilities sum to 1.
    Softmax,
    /// `1 / (1 + exp(-z_k))` for each label on its own: multi-label models and single-logit
    /// models.
    Sigmoid,
}

impl Activation {
    /// The activation `transformers`' `text-classification` pipeline applies to the model of
    /// `config.json` (at `path`, content `raw`) with `labels` labels; `problem_type:
    /// regression` (or another unknown value) is an error.
    fn of_config(path: &Path, raw: &Value, labels: usize) -> Result<Activation> {
        match raw.get("problem_type") {
            None | Some(Value::Null) if labels == 1 => Ok(Activation::Sigmoid),
            None | Some(Value::Null) => Ok(Activation::Softmax),
            Some(Value::String(t)) if t == "multi_label_classification" => {
                Ok(Activation::Sigmoid)
            }
            Some(Value::String(t)) if t == "single_label_classification" => Ok(if labels == 1 {
                Activation::Sigmoid
            } else {
                Activation::Softmax
            }),
            Some(Value::String(t)) if t == "regression" => Err(LocalError::bad_file(
                path,
                "problem_type `regression`: the model predicts a number, not label probabilities; \
                 a sequence classifier needs single_label_classification or multi_label_classification",
            )),
            Some(other) => Err(LocalError::bad_file(
                path,
                format!(
                    "problem_type {other} is not one of single_label_classification, \
                     multi_label_classification"
                ),
            )),
        }
    }

    /// The probabilities of one row of logits.
    pub fn apply(self, logits: &[f32]) -> Vec<f32> {
        match self {
            Activation::Sigmoid => logits.iter().map(|z| 1.0 / (1.0 + (-z).exp())).collect(),
            Activation::Softmax => {
                let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let exps: Vec<f32> = logits.iter().map(|z| (z - max).exp()).collect();
                let sum: f32 = exps.iter().sum();
                exps.into_iter().map(|e| e / sum).collect()
            }
        }
    }
}

/// The label probabilities of one text: one row per window (`[windows][labels]`, at least one
/// window).
#[derive(Debug, Clone, PartialEq)]
pub struct TextScores {
    /// Each window's probabilities, by label index (`id2label` order).
    pub windows: Vec<Vec<f32>>,
}

impl TextScores {
    /// The highest probability of label `k` over the windows and the window it comes from
    /// (the label *anywhere* in the text); `None` for an index out of range.
    pub fn max(&self, k: usize) -> Option<(f32, usize)> {
        self.extreme(k, |a, b| a > b)
    }

    /// The lowest probability of label `k` over the windows and the window it comes from (the
    /// label *everywhere* in the text); `None` for an index out of range.
    pub fn min(&self, k: usize) -> Option<(f32, usize)> {
        self.extreme(k, |a, b| a < b)
    }

    /// The first window whose label-`k` probability beats every other by `better`. A NaN
    /// probability wins (so the caller sees it, never a neighbour's value in its place).
    fn extreme(&self, k: usize, better: fn(f32, f32) -> bool) -> Option<(f32, usize)> {
        let mut best: Option<(f32, usize)> = None;
        for (w, row) in self.windows.iter().enumerate() {
            let p = *row.get(k)?;
            let replace = match best {
                None => true,
                Some((b, _)) => !b.is_nan() && (p.is_nan() || better(p, b)),
            };
            if replace {
                best = Some((p, w));
            }
        }
        best
    }
}

/// A loaded single-sequence classifier. `Send + Sync`.
pub struct SequenceClassifier {
    net: Network,
    activation: Activation,
    identity: String,
}

// The judges share one classifier between threads.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<SequenceClassifier>();
};

impl std::fmt::Debug for SequenceClassifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SequenceClassifier")
            .field("dir", &self.net.dir)
            .field("backend", &self.net.backend_name())
            .field("labels", &self.net.labels)
            .field("activation", &self.activation)
            .field("max_length", &self.net.max_length)
            .finish_non_exhaustive()
    }
}

impl SequenceClassifier {
    /// Loads the model in `dir`, its network chosen by `config.json`'s `model_type` (as
    /// [`crate::PairClassifier::load`]) and its activation by `problem_type` (see the module
    /// docs). Errors name the missing or mismatching file.
    pub fn load(dir: &Path, options: &SequenceOptions) -> Result<SequenceClassifier> {
        let loaded = Network::load(
            dir,
            "sequence classifier",
            &NetworkOptions {
                threads: options.threads,
                max_length: options.max_length,
                batch_size: options.batch_size,
                window_overlap: options.window_overlap,
            },
        )?;
        let activation =
            Activation::of_config(&loaded.config_path, &loaded.config, loaded.net.labels.len())?;
        let identity = files::identity(
            "sequence_classifier",
            &loaded.config,
            &loaded.weights_sha256,
        );
        Ok(SequenceClassifier {
            net: loaded.net,
            activation,
            identity,
        })
    }

    /// The labels of the model folder `dir` (`config.json`'s `id2label` in index order, else
    /// `num_labels` names `LABEL_i`), read without loading the weights: what a configuration
    /// check needs to know whether a label exists.
    pub fn read_labels(dir: &Path) -> Result<Vec<String>> {
        let dir = files::model_dir(dir, "sequence classifier")?;
        let (path, raw) = files::read_config(&dir)?;
        crate::classify::read_labels(&path, &raw)
    }

    /// The labels, by index (`id2label`).
    pub fn labels(&self) -> &[String] {
        &self.net.labels
    }

    /// How logits become probabilities.
    pub fn activation(&self) -> Activation {
        self.activation
    }

    /// Tokens per window, special tokens included.
    pub fn max_length(&self) -> usize {
        self.net.max_length
    }

    /// sha256 over the kind, `config.json`'s content and the weights' sha256.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Raw logits of each text, truncated to the max length (no windowing), `[texts][labels]`.
    pub fn logits<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Result<Vec<Vec<f32>>> {
        self.net.install(|| self.net.single_logits(texts))
    }

    /// The label probabilities of each text, long texts windowed (see the module docs).
    pub fn classify<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Result<Vec<TextScores>> {
        self.net.install(|| {
            let mut inputs = Vec::new();
            let mut owner = Vec::new();
            for (i, text) in texts.iter().enumerate() {
                for w in self.windows(text.as_ref())? {
                    inputs.push(w);
                    owner.push(i);
                }
            }
            let logits = self.net.single_logits(&inputs)?;
            let mut out: Vec<TextScores> = (0..texts.len())
                .map(|_| TextScores {
                    windows: Vec::new(),
                })
                .collect();
            for (row, &i) in logits.iter().zip(&owner) {
                out[i].windows.push(self.activation.apply(row));
            }
            Ok(out)
        })
    }

    /// `text` cut into windows that fit the model with its special tokens: the text itself
    /// when it fits, else overlapping runs of whole tokens (as text slices).
    pub fn windows(&self, text: &str) -> Result<Vec<String>> {
        let budget = self
            .net
            .max_length
            .saturating_sub(self.net.special_tokens(false));
        self.net.windows(text, budget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activations() {
        let p = Activation::Softmax.apply(&[1.0, 2.0, 3.0]);
        let z: f32 = [1f32, 2.0, 3.0].iter().map(|x| x.exp()).sum();
        for (a, x) in p.iter().zip([1f32, 2.0, 3.0]) {
            assert!((a - x.exp() / z).abs() < 1e-6);
        }
        assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        // Large logits do not overflow.
        let p = Activation::Softmax.apply(&[1000.0, 0.0]);
        assert!(p.iter().all(|x| x.is_finite()) && (p[0] - 1.0).abs() < 1e-6);
        let s = Activation::Sigmoid.apply(&[0.0, 2.0, -2.0]);
        assert_eq!(s[0], 0.5);
        assert!((s[1] - 1.0 / (1.0 + (-2f32).exp())).abs() < 1e-6);
        assert!((s[1] + s[2] - 1.0).abs() < 1e-6);
    }

    #[test]
    fn activation_follows_the_pipeline() {
        let p = Path::new("config.json");
        let of = |v: Value, n| Activation::of_config(p, &v, n);
        assert_eq!(of(serde_json::json!({}), 2).unwrap(), Activation::Softmax);
        assert_eq!(of(serde_json::json!({}), 1).unwrap(), Activation::Sigmoid);
        assert_eq!(
            of(
                serde_json::json!({"problem_type": "multi_label_classification"}),
                6
            )
            .unwrap(),
            Activation::Sigmoid
        );
        assert_eq!(
            of(
                serde_json::json!({"problem_type": "single_label_classification"}),
                3
            )
            .unwrap(),
            Activation::Softmax
        );
        let err = of(serde_json::json!({"problem_type": "regression"}), 1).unwrap_err();
        assert!(err.to_string().contains("regression"), "{err}");
        assert!(of(serde_json::json!({"problem_type": "ranking"}), 2).is_err());
    }

    #[test]
    fn window_extremes() {
        let s = TextScores {
            windows: vec![vec![0.2, 0.8], vec![0.9, 0.1], vec![0.9, 0.1]],
        };
        assert_eq!(s.max(0), Some((0.9, 1)), "the first of equal maxima");
        assert_eq!(s.min(0), Some((0.2, 0)));
        assert_eq!(s.max(1), Some((0.8, 0)));
        assert_eq!(s.max(2), None);
        let nan = TextScores {
            windows: vec![vec![0.5], vec![f32::NAN], vec![0.7]],
        };
        assert!(nan.max(0).unwrap().0.is_nan(), "a NaN is never hidden");
        assert!(nan.min(0).unwrap().0.is_nan());
    }
}
