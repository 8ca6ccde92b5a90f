//! Sentence embeddings with a BERT-family encoder in the Hugging Face / sentence-transformers
//! layout, computed as sentence-transformers computes them.
//!
//! A folder holds `config.json`, `tokenizer.json` and `model.safetensors`, and optionally
//! `1_Pooling/config.json` (mean or CLS pooling; mean when absent), `modules.json` (a
//! `sentence_transformers.models.Normalize` module turns on L2 normalisation) and
//! `sentence_bert_config.json` (`max_seq_length`, the truncation length). Texts are tokenised
//! without the padding and truncation saved in `tokenizer.json` (the all-MiniLM-L6-v2 package
//! pads and truncates to a fixed 128), truncated to the model's max length (special tokens
//! included), sorted by length, batched, and run packed without padding (each text attends to
//! its own tokens only; see `encoder`), then pooled over the text's tokens — so a text's
//! embedding does not depend on the batch it is in.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{LocalError, Result};
use crate::files;

/// Texts per forward pass, as sentence-transformers' default `batch_size`.
pub const DEFAULT_BATCH_SIZE: usize = 32;

/// How token vectors become one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// Mean of the real (unmasked) tokens' vectors.
    Mean,
    /// The first (`[CLS]`) token's vector.
    Cls,
    /// Element-wise maximum over the real tokens.
    Max,
}

/// Options of a [`SentenceEmbedder`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmbedderOptions {
    /// Threads of the forward pass (default: every core).
    pub threads: Option<usize>,
    /// Truncation length in tokens, special tokens included (default: `max_seq_length` of
    /// `sentence_bert_config.json`, else the model's `max_position_embeddings`, less
    /// `pad_token_id + 1` for the RoBERTa family).
    pub max_length: Option<usize>,
    /// Texts per forward pass (default [`DEFAULT_BATCH_SIZE`]).
    pub batch_size: Option<usize>,
}

/// A loaded sentence embedder. `Send + Sync`; calls from several threads share its thread
/// pool.
pub struct SentenceEmbedder {
    dir: PathBuf,
    model: crate::encoder::Encoder,
    tokenizer: tokenizers::Tokenizer,
    pooling: Pooling,
    normalize: bool,
    max_length: usize,
    batch_size: usize,
    dimension: usize,
    identity: String,
    pool: rayon::ThreadPool,
}

impl std::fmt::Debug for SentenceEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentenceEmbedder")
            .field("dir", &self.dir)
            .field("pooling", &self.pooling)
            .field("normalize", &self.normalize)
            .field("max_length", &self.max_length)
            .field("dimension", &self.dimension)
            .finish_non_exhaustive()
    }
}

impl SentenceEmbedder {
    /// Loads the model in `dir`. Errors name the missing or mismatching file.
    pub fn load(dir: &Path, options: &EmbedderOptions) -> Result<SentenceEmbedder> {
        let dir = files::model_dir(dir, "sentence-embedding model")?;
        let (config_path, raw_config, config) = files::bert_config(&dir)?;
        let tokenizer = files::tokenizer(&dir)?;
        let pooling = read_pooling(&dir)?;
        let normalize = read_normalize(&dir)?;
        let max_length = resolve_max_length(&dir, &config, options.max_length)?;
        let batch_size = options.batch_size.unwrap_or(DEFAULT_BATCH_SIZE);
        if batch_size == 0 {
            return Err(LocalError::Options {
                message: "`batch_size` must be at least 1".into(),
            });
        }
        let weights = files::safetensors(&dir)?;
        let vb = weights.var_builder();
        let vb = match weights.encoder_prefix() {
            Some(p) => vb.pp(p),
            None => vb,
        };
        let model = crate::encoder::Encoder::load(vb, &config)
            .map_err(|e| weights.mismatch(&config_path, e))?;
        let identity = files::identity("embedding", &raw_config, &weights.sha256);
        let pool = files::thread_pool(options.threads)?;
        tracing::debug!(dir = %dir.display(), ?pooling, normalize, max_length, "loaded sentence embedder");
        Ok(SentenceEmbedder {
            dir,
            model,
            tokenizer,
            pooling,
            normalize,
            max_length,
            batch_size,
            dimension: config.hidden_size,
            identity,
            pool,
        })
    }

    /// The embedding size.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// The truncation length in tokens.
    pub fn max_length(&self) -> usize {
        self.max_length
    }

    /// The pooling read from `1_Pooling/config.json`.
    pub fn pooling(&self) -> Pooling {
        self.pooling
    }

    /// Whether vectors are L2-normalised (a `Normalize` module in `modules.json`).
    pub fn normalizes(&self) -> bool {
        self.normalize
    }

    /// sha256 over `config.json`'s content and the weights' sha256: the model's identity in
    /// cache keys.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Embeds `texts`, one vector per text, in order.
    pub fn embed<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Result<Vec<Vec<f32>>> {
        self.pool.install(|| self.embed_inner(texts))
    }

    fn embed_inner<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Result<Vec<Vec<f32>>> {
        let ids = crate::bert::encode_singles(&self.tokenizer, texts, self.max_length)?;
        // Longest first, as sentence-transformers does (nothing is padded: the encoder packs
        // each batch, so the order only decides which texts share a forward pass).
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(ids[i].len()));
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for batch in order.chunks(self.batch_size) {
            let rows: Vec<&crate::bert::Encoded> = batch.iter().map(|&i| &ids[i]).collect();
            let vectors = self.forward(&rows)?;
            for (&i, v) in batch.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    fn forward(&self, rows: &[&crate::bert::Encoded]) -> Result<Vec<Vec<f32>>> {
        let packed = self.model.forward(rows).map_err(LocalError::inference)?;
        let h = packed.width;
        Ok((0..rows.len())
            .map(|i| {
                let tokens = packed.text(i);
                let mut v = match self.pooling {
                    Pooling::Mean => {
                        let mut sum = vec![0f32; h];
                        for t in tokens.chunks_exact(h) {
                            sum.iter_mut().zip(t).for_each(|(s, &x)| *s += x);
                        }
                        let count = (tokens.len() / h).max(1) as f32;
                        sum.iter_mut().for_each(|s| *s /= count);
                        sum
                    }
                    Pooling::Cls => tokens[..h].to_vec(),
                    Pooling::Max => {
                        let mut max = vec![f32::NEG_INFINITY; h];
                        for t in tokens.chunks_exact(h) {
                            max.iter_mut().zip(t).for_each(|(m, &x)| *m = m.max(x));
                        }
                        max
                    }
                };
                if self.normalize {
                    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
                    v.iter_mut().for_each(|x| *x /= norm);
                }
                v
            })
            .collect())
    }
}

fn read_pooling(dir: &Path) -> Result<Pooling> {
    let path = dir.join("1_Pooling").join("config.json");
    if !path.is_file() {
        return Ok(Pooling::Mean);
    }
    let v = files::read_json(&path)?;
    let on = |k: &str| v.get(k).and_then(Value::as_bool).unwrap_or(false);
    if on("pooling_mode_mean_tokens") {
        Ok(Pooling::Mean)
    } else if on("pooling_mode_cls_token") {
        Ok(Pooling::Cls)
    } else if on("pooling_mode_max_tokens") {
        Ok(Pooling::Max)
    } else {
        Err(LocalError::bad_file(
            &path,
            "expected one of pooling_mode_mean_tokens, pooling_mode_cls_token or pooling_mode_max_tokens set to true",
        ))
    }
}

fn read_normalize(dir: &Path) -> Result<bool> {
    let path = dir.join("modules.json");
    if !path.is_file() {
        return Ok(false);
    }
    let v = files::read_json(&path)?;
    let modules = v.as_array().ok_or_else(|| {
        LocalError::bad_file(&path, "expected an array of sentence-transformers modules")
    })?;
    Ok(modules.iter().any(|m| {
        m.get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.ends_with(".Normalize"))
    }))
}

/// Tokens per text: `option`, else `sentence_bert_config.json`'s `max_seq_length`, within
/// what the position table allows (see [`files::resolve_max_length`]).
pub(crate) fn resolve_max_length(
    dir: &Path,
    config: &candle_transformers::models::bert::Config,
    option: Option<usize>,
) -> Result<usize> {
    let limit = crate::encoder::max_tokens(config);
    let source = if limit == config.max_position_embeddings {
        "max_position_embeddings in config.json".to_string()
    } else {
        format!(
            "max_position_embeddings {} in config.json less RoBERTa's offset of pad_token_id + 1",
            config.max_position_embeddings
        )
    };
    files::resolve_max_length(
        dir,
        limit,
        &source,
        option,
        &[("sentence_bert_config.json", "max_seq_length")],
    )
}
