//! Sequence-pair classification with a BERT `ForSequenceClassification` model: cross-encoders
//! (one relevance logit) and NLI models (entailment / neutral / contradiction).
//!
//! The folder holds `config.json` (with `id2label`), `tokenizer.json` (whose post-processor
//! adds the pair's special tokens and segment ids) and `model.safetensors` with the encoder
//! under `bert.`, the pooler (`bert.pooler.dense`) and the head (`classifier`). The logits are
//! `classifier(tanh(pooler(h[CLS])))`, as `transformers` computes them.
//!
//! A premise longer than the model takes is cut into overlapping windows of whole tokens, each
//! paired with the full hypothesis; the pair's entailment is the **maximum** over its windows
//! (a claim is supported when some part of the context supports it).

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::Linear;
use serde_json::Value;

use crate::bert::Encoded;
use crate::error::{LocalError, Result};
use crate::files;

/// Tokens shared by two consecutive windows of a long premise (default).
pub const DEFAULT_WINDOW_OVERLAP: usize = 64;

/// Options of a [`PairClassifier`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClassifierOptions {
    /// Threads of the forward pass (default: every core).
    pub threads: Option<usize>,
    /// Tokens per pair, special tokens included (default: `max_position_embeddings`, or
    /// `model_max_length` of `tokenizer_config.json` when smaller).
    pub max_length: Option<usize>,
    /// The label that means "entailed" / "relevant" (default: a label named `entailment`,
    /// any case; a single-logit model needs none).
    pub entailment_label: Option<String>,
    /// Pairs per forward pass (default 16).
    pub batch_size: Option<usize>,
    /// Tokens shared by consecutive windows of a long premise (default
    /// [`DEFAULT_WINDOW_OVERLAP`], at most half a window).
    pub window_overlap: Option<usize>,
}

/// A loaded sequence-pair classifier. `Send + Sync`.
pub struct PairClassifier {
    dir: PathBuf,
    model: crate::encoder::Encoder,
    pooler: Linear,
    classifier: Linear,
    tokenizer: tokenizers::Tokenizer,
    labels: Vec<String>,
    positive: Option<usize>,
    max_length: usize,
    batch_size: usize,
    overlap: usize,
    identity: String,
    pool: rayon::ThreadPool,
}

impl std::fmt::Debug for PairClassifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PairClassifier")
            .field("dir", &self.dir)
            .field("labels", &self.labels)
            .field("positive", &self.positive)
            .field("max_length", &self.max_length)
            .finish_non_exhaustive()
    }
}

/// The scores of one pair.
#[derive(Debug, Clone, PartialEq)]
pub struct PairScore {
    /// Probability of the entailment (or relevance) label: softmax over the labels, or the
    /// sigmoid of a single logit; the maximum over the premise's windows.
    pub score: f32,
    /// Windows the premise was cut into.
    pub windows: usize,
    /// The window with the best score (0-based).
    pub best_window: usize,
}

impl PairClassifier {
    /// Loads the model in `dir`. Errors name the missing or mismatching file, or list the
    /// labels when the entailment label cannot be found.
    pub fn load(dir: &Path, options: &ClassifierOptions) -> Result<PairClassifier> {
        let dir = files::model_dir(dir, "sequence-pair classifier")?;
        let (config_path, raw, config) = files::bert_config(&dir)?;
        let tokenizer = files::tokenizer(&dir)?;
        let labels = read_labels(&config_path, &raw)?;
        let positive =
            resolve_positive(&config_path, &labels, options.entailment_label.as_deref())?;
        let mut max_length = crate::embed::resolve_max_length(&dir, &config, options.max_length)?;
        if options.max_length.is_none() {
            let tc = dir.join("tokenizer_config.json");
            if tc.is_file() {
                if let Some(n) = files::read_json(&tc)?
                    .get("model_max_length")
                    .and_then(Value::as_u64)
                {
                    max_length = max_length.min(n as usize);
                }
            }
        }
        let batch_size = options.batch_size.unwrap_or(16);
        if batch_size == 0 {
            return Err(LocalError::Options {
                message: "`batch_size` must be at least 1".into(),
            });
        }
        let weights = files::safetensors(&dir)?;
        let root = weights.var_builder();
        let prefix = weights.encoder_prefix().unwrap_or("bert");
        let mismatch = |e| weights.mismatch(&config_path, e);
        let model = crate::encoder::Encoder::load(root.pp(prefix), &config).map_err(mismatch)?;
        let h = config.hidden_size;
        let pooler =
            candle_nn::linear(h, h, root.pp(prefix).pp("pooler").pp("dense")).map_err(mismatch)?;
        let classifier =
            candle_nn::linear(h, labels.len(), root.pp("classifier")).map_err(mismatch)?;
        let identity = files::identity("pair_classifier", &raw, &weights.sha256);
        Ok(PairClassifier {
            dir,
            model,
            pooler,
            classifier,
            tokenizer,
            labels,
            positive,
            max_length,
            batch_size,
            overlap: options.window_overlap.unwrap_or(DEFAULT_WINDOW_OVERLAP),
            identity,
            pool: files::thread_pool(options.threads)?,
        })
    }

    /// The labels, by index (`id2label`).
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// The index of the entailment / relevance label (`None`: a single-logit model, scored
    /// by its sigmoid).
    pub fn positive_label(&self) -> Option<usize> {
        self.positive
    }

    /// Tokens per pair.
    pub fn max_length(&self) -> usize {
        self.max_length
    }

    /// sha256 over `config.json`'s content and the weights' sha256.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Raw logits of each `(premise, hypothesis)` pair, truncated to the max length (no
    /// windowing), `[pairs][labels]`.
    pub fn logits(&self, pairs: &[(String, String)]) -> Result<Vec<Vec<f32>>> {
        self.pool.install(|| {
            let encoded = crate::bert::encode_pairs(&self.tokenizer, pairs, self.max_length)?;
            self.forward_all(&encoded)
        })
    }

    /// The entailment (relevance) probability of each `(premise, hypothesis)` pair, with long
    /// premises windowed.
    pub fn score(&self, pairs: &[(String, String)]) -> Result<Vec<PairScore>> {
        self.pool.install(|| {
            let mut inputs = Vec::new();
            let mut owner = Vec::new();
            for (i, (premise, hypothesis)) in pairs.iter().enumerate() {
                for w in self.windows(premise, hypothesis)? {
                    inputs.push((w, hypothesis.clone()));
                    owner.push(i);
                }
            }
            let encoded = crate::bert::encode_pairs(&self.tokenizer, &inputs, self.max_length)?;
            let logits = self.forward_all(&encoded)?;
            let mut out: Vec<PairScore> = (0..pairs.len())
                .map(|_| PairScore {
                    score: f32::NEG_INFINITY,
                    windows: 0,
                    best_window: 0,
                })
                .collect();
            for (row, &i) in logits.iter().zip(&owner) {
                let s = self.positive_probability(row);
                let o = &mut out[i];
                if s > o.score {
                    o.score = s;
                    o.best_window = o.windows;
                }
                o.windows += 1;
            }
            Ok(out)
        })
    }

    /// The probability of the positive label from one row of logits.
    pub fn positive_probability(&self, logits: &[f32]) -> f32 {
        match self.positive {
            None => 1.0 / (1.0 + (-logits[0]).exp()),
            Some(k) => {
                let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let sum: f32 = logits.iter().map(|x| (x - max).exp()).sum();
                (logits[k] - max).exp() / sum
            }
        }
    }

    /// The premise cut into windows that fit beside the hypothesis: the premise itself when
    /// it fits, else overlapping runs of whole tokens (as text slices of the premise).
    pub fn windows(&self, premise: &str, hypothesis: &str) -> Result<Vec<String>> {
        let p = self
            .tokenizer
            .encode(premise, false)
            .map_err(LocalError::inference)?;
        let h = self
            .tokenizer
            .encode(hypothesis, false)
            .map_err(LocalError::inference)?;
        let specials = self
            .tokenizer
            .get_post_processor()
            .map_or(0, |pp| tokenizers::PostProcessor::added_tokens(pp, true));
        let offsets = p.get_offsets();
        let budget = self.max_length.saturating_sub(specials + h.get_ids().len());
        // A hypothesis that leaves almost no room: one window, truncated by the tokenizer.
        if offsets.len() <= budget || budget < 8 {
            return Ok(vec![premise.to_string()]);
        }
        let overlap = self.overlap.min(budget / 2);
        let step = budget - overlap;
        let mut out = Vec::new();
        let mut start = 0;
        loop {
            let end = (start + budget).min(offsets.len());
            let (a, b) = (offsets[start].0, offsets[end - 1].1);
            out.push(premise[a..b].to_string());
            if end == offsets.len() {
                break;
            }
            start += step;
        }
        Ok(out)
    }

    fn forward_all(&self, encoded: &[Encoded]) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(encoded.len());
        let rows: Vec<&Encoded> = encoded.iter().collect();
        for batch in rows.chunks(self.batch_size) {
            out.extend(self.forward(batch)?);
        }
        Ok(out)
    }

    fn forward(&self, rows: &[&Encoded]) -> Result<Vec<Vec<f32>>> {
        let inf = LocalError::inference;
        let packed = self.model.forward(rows).map_err(inf)?;
        let h = packed.width;
        let cls: Vec<f32> = (0..rows.len())
            .flat_map(|i| packed.text(i)[..h].iter().copied())
            .collect();
        let cls = Tensor::from_vec(cls, (rows.len(), h), &Device::Cpu).map_err(inf)?;
        let pooled = self
            .pooler
            .forward(&cls)
            .map_err(inf)?
            .tanh()
            .map_err(inf)?;
        let logits = self.classifier.forward(&pooled).map_err(inf)?;
        logits
            .to_dtype(DType::F32)
            .map_err(inf)?
            .to_vec2::<f32>()
            .map_err(inf)
    }
}

/// `id2label` in index order (else `num_labels` generic names, else one label).
fn read_labels(path: &Path, raw: &Value) -> Result<Vec<String>> {
    if let Some(map) = raw.get("id2label").and_then(Value::as_object) {
        let mut labels = vec![None; map.len()];
        for (k, v) in map {
            let i: usize = k.parse().map_err(|_| {
                LocalError::bad_file(path, format!("id2label key `{k}` is not an index"))
            })?;
            let slot = labels.get_mut(i).ok_or_else(|| {
                LocalError::bad_file(
                    path,
                    format!("id2label index {i} is out of range 0..{}", map.len()),
                )
            })?;
            *slot = Some(v.as_str().map_or_else(|| v.to_string(), str::to_string));
        }
        return labels
            .into_iter()
            .enumerate()
            .map(|(i, l)| {
                l.ok_or_else(|| LocalError::bad_file(path, format!("id2label has no label {i}")))
            })
            .collect();
    }
    let n = raw.get("num_labels").and_then(Value::as_u64).unwrap_or(1) as usize;
    Ok((0..n.max(1)).map(|i| format!("LABEL_{i}")).collect())
}

/// The index of the positive label: the configured name, else `entailment`; a single label
/// needs none.
fn resolve_positive(path: &Path, labels: &[String], wanted: Option<&str>) -> Result<Option<usize>> {
    let find = |name: &str| labels.iter().position(|l| l.eq_ignore_ascii_case(name));
    match wanted {
        Some(name) => find(name).map(Some).ok_or_else(|| LocalError::Options {
            message: format!(
                "`entailment_label: {name}` is not a label of {} (id2label: {})",
                path.display(),
                labels.join(", ")
            ),
        }),
        None if labels.len() == 1 => Ok(None),
        None => find("entailment").map(Some).ok_or_else(|| LocalError::Options {
            message: format!(
                "{} has no `entailment` label (id2label: {}): set `entailment_label` to the label that means entailed",
                path.display(),
                labels.join(", ")
            ),
        }),
    }
}
