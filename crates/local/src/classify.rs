//! Sequence-pair classification: cross-encoders (one relevance logit) and NLI models
//! (entailment / neutral / contradiction), any Hugging Face `…ForSequenceClassification`
//! model of a supported architecture.
//!
//! The folder holds `config.json` (with `id2label` and `model_type`), `tokenizer.json` (whose
//! post-processor adds the pair's special tokens and segment ids) and `model.safetensors`.
//! The network is chosen by `model_type`:
//!
//! * BERT (`bert`, or no `model_type`): the encoder under `bert.`, the pooler
//!   `bert.pooler.dense` and the head `classifier`; the logits are
//!   `classifier(tanh(pooler(h[CLS])))`, as `transformers`' `BertForSequenceClassification`
//!   computes them.
//! * RoBERTa family (`roberta`, `xlm-roberta`, `camembert`): the encoder under `roberta.`
//!   (positions from `pad_token_id + 1`, see `encoder`), no pooler, and the head
//!   `classifier.dense` and `classifier.out_proj`; the logits are
//!   `out_proj(tanh(dense(h[<s>])))`, as `RobertaForSequenceClassification` (and its
//!   XLM-RoBERTa and CamemBERT copies) computes them.
//! * DeBERTa v2 / v3 (`deberta-v2`): the encoder under `deberta.`, the context pooler
//!   `pooler.dense` and the head `classifier`; the logits are
//!   `classifier(act(pooler(h[CLS])))` (see `deberta.rs`).
//! * ONNX (cargo feature `onnx`): a folder with `model.onnx` (or `onnx/model.onnx`, as
//!   `optimum-cli export onnx --task text-classification` writes it) and no
//!   `model.safetensors` runs through ONNX Runtime, loaded at run time from `ORT_DYLIB_PATH`,
//!   whatever the architecture: the graph takes `input_ids`, `attention_mask` (and
//!   `token_type_ids` when it declares them) and returns the logits.
//!
//! Everything else is shared: labels, the entailment label, batching, the thread pool, the
//! identity, and windows: a premise longer than the model takes is cut into overlapping
//! windows of whole tokens, each paired with the full hypothesis; the pair's entailment is
//! the **maximum** over its windows (a claim is supported when some part of the context
//! supports it).

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::Linear;
use serde_json::Value;

use crate::bert::Encoded;
use crate::error::{LocalError, Result};
use crate::files::{self, Architecture};

/// Tokens shared by two consecutive windows of a long premise (default).
pub const DEFAULT_WINDOW_OVERLAP: usize = 64;

/// Options of a [`PairClassifier`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClassifierOptions {
    /// Threads of the forward pass (default: every core).
    pub threads: Option<usize>,
    /// Tokens per pair, special tokens included (default: `max_position_embeddings`, less
    /// `pad_token_id + 1` for the RoBERTa family, lowered
    /// to `sentence_bert_config.json`'s `max_seq_length` or `tokenizer_config.json`'s
    /// `model_max_length` when smaller).
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
    net: Network,
    positive: Option<usize>,
    identity: String,
}

/// What a sequence-pair and a single-sequence classifier share: the network and its
/// tokenizer, the labels, the max length, batching, windowing and the thread pool. Both are
/// the same `…ForSequenceClassification` network; a pair classifier feeds it two segments, a
/// [`crate::SequenceClassifier`] one.
pub(crate) struct Network {
    pub(crate) dir: PathBuf,
    backend: Backend,
    tokenizer: tokenizers::Tokenizer,
    pub(crate) labels: Vec<String>,
    pub(crate) max_length: usize,
    batch_size: usize,
    overlap: usize,
    pool: rayon::ThreadPool,
}

/// What [`Network::load`] reads besides the folder.
pub(crate) struct NetworkOptions {
    pub(crate) threads: Option<usize>,
    pub(crate) max_length: Option<usize>,
    pub(crate) batch_size: Option<usize>,
    pub(crate) window_overlap: Option<usize>,
}

/// A loaded [`Network`] with what its owner needs to finish loading: `config.json`'s path and
/// content, and the sha256 of the weights (for the identity).
pub(crate) struct LoadedNetwork {
    pub(crate) net: Network,
    pub(crate) config_path: PathBuf,
    pub(crate) config: Value,
    pub(crate) weights_sha256: String,
}

impl Network {
    /// Loads the classifier in `dir` (a `what` — "sequence-pair classifier", … — names it in
    /// errors), its network chosen by `config.json`'s `model_type` (see the module docs).
    pub(crate) fn load(dir: &Path, what: &str, options: &NetworkOptions) -> Result<LoadedNetwork> {
        let dir = files::model_dir(dir, what)?;
        let (config_path, raw) = files::read_config(&dir)?;
        let onnx = !dir.join("model.safetensors").is_file()
            && ONNX_FILES.iter().any(|f| dir.join(f).is_file());
        let spec = if onnx {
            Spec::Onnx(onnx_positions(&config_path, &raw)?)
        } else {
            Spec::read(&config_path, &raw, what)?
        };
        let tokenizer = files::tokenizer(&dir)?;
        let labels = read_labels(&config_path, &raw)?;
        let max_length = resolve_max_length(&dir, spec.positions(), options.max_length)?;
        let batch_size = options.batch_size.unwrap_or(16);
        if batch_size == 0 {
            return Err(LocalError::Options {
                message: "`batch_size` must be at least 1".into(),
            });
        }
        let (backend, weights_sha256) =
            Backend::load(&dir, &config_path, &spec, labels.len(), options.threads)?;
        Ok(LoadedNetwork {
            net: Network {
                dir,
                backend,
                tokenizer,
                labels,
                max_length,
                batch_size,
                overlap: options.window_overlap.unwrap_or(DEFAULT_WINDOW_OVERLAP),
                pool: files::thread_pool(options.threads)?,
            },
            config_path,
            config: raw,
            weights_sha256,
        })
    }

    /// The backend's architecture name, for `Debug`.
    pub(crate) fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// Runs `f` in the model's thread pool.
    pub(crate) fn install<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        self.pool.install(f)
    }

    /// Tokenises `pairs` (truncated to the max length) and returns their logits.
    pub(crate) fn pair_logits(&self, pairs: &[(String, String)]) -> Result<Vec<Vec<f32>>> {
        let encoded = crate::bert::encode_pairs(&self.tokenizer, pairs, self.max_length)?;
        self.forward_all(&encoded)
    }

    /// Tokenises single `texts` (truncated to the max length) and returns their logits.
    pub(crate) fn single_logits<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Result<Vec<Vec<f32>>> {
        let encoded = crate::bert::encode_singles(&self.tokenizer, texts, self.max_length)?;
        self.forward_all(&encoded)
    }

    /// Special tokens the tokenizer's post-processor adds to a pair (`pair: true`) or a single
    /// text.
    pub(crate) fn special_tokens(&self, pair: bool) -> usize {
        self.tokenizer
            .get_post_processor()
            .map_or(0, |pp| tokenizers::PostProcessor::added_tokens(pp, pair))
    }

    /// Tokens of `text` without special tokens.
    pub(crate) fn token_count(&self, text: &str) -> Result<usize> {
        Ok(self
            .tokenizer
            .encode(text, false)
            .map_err(LocalError::inference)?
            .get_ids()
            .len())
    }

    /// `text` cut into windows of at most `budget` tokens: the text itself when it fits (or
    /// when the budget is under 8 tokens: one window, truncated by the tokenizer), else
    /// overlapping runs of whole tokens (text slices of `text`), consecutive windows sharing
    /// the overlap (at most half a window).
    pub(crate) fn windows(&self, text: &str, budget: usize) -> Result<Vec<String>> {
        let encoding = self
            .tokenizer
            .encode(text, false)
            .map_err(LocalError::inference)?;
        let offsets = encoding.get_offsets();
        if offsets.len() <= budget || budget < 8 {
            return Ok(vec![text.to_string()]);
        }
        let overlap = self.overlap.min(budget / 2);
        let step = budget - overlap;
        let mut out = Vec::new();
        let mut start = 0;
        loop {
            let end = (start + budget).min(offsets.len());
            let (a, b) = (offsets[start].0, offsets[end - 1].1);
            out.push(text[a..b].to_string());
            if end == offsets.len() {
                break;
            }
            start += step;
        }
        Ok(out)
    }

    /// The logits of every row, in order, `batch_size` rows per forward pass. The rows are
    /// batched by length, so that a padded batch (DeBERTa) holds rows of similar lengths.
    fn forward_all(&self, encoded: &[Encoded]) -> Result<Vec<Vec<f32>>> {
        let mut order: Vec<usize> = (0..encoded.len()).collect();
        order.sort_by_key(|&i| encoded[i].len());
        let mut out = vec![Vec::new(); encoded.len()];
        for batch in order.chunks(self.batch_size) {
            let rows: Vec<&Encoded> = batch.iter().map(|&i| &encoded[i]).collect();
            for (&i, logits) in batch.iter().zip(self.backend.logits(&rows)?) {
                out[i] = logits;
            }
        }
        Ok(out)
    }
}

// The judges share one classifier between threads.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<PairClassifier>();
};

impl std::fmt::Debug for PairClassifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PairClassifier")
            .field("dir", &self.net.dir)
            .field("backend", &self.net.backend_name())
            .field("labels", &self.net.labels)
            .field("positive", &self.positive)
            .field("max_length", &self.net.max_length)
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
    /// Loads the model in `dir`, its network chosen by `config.json`'s `model_type` (see the
    /// module docs). Errors name the missing or mismatching file, list the supported
    /// `model_type`s, or list the labels when the entailment label cannot be found.
    pub fn load(dir: &Path, options: &ClassifierOptions) -> Result<PairClassifier> {
        let loaded = Network::load(
            dir,
            "sequence-pair classifier",
            &NetworkOptions {
                threads: options.threads,
                max_length: options.max_length,
                batch_size: options.batch_size,
                window_overlap: options.window_overlap,
            },
        )?;
        let positive = resolve_positive(
            &loaded.config_path,
            &loaded.net.labels,
            options.entailment_label.as_deref(),
        )?;
        let identity = files::identity("pair_classifier", &loaded.config, &loaded.weights_sha256);
        Ok(PairClassifier {
            net: loaded.net,
            positive,
            identity,
        })
    }

    /// The labels, by index (`id2label`).
    pub fn labels(&self) -> &[String] {
        &self.net.labels
    }

    /// The index of the entailment / relevance label (`None`: a single-logit model, scored
    /// by its sigmoid).
    pub fn positive_label(&self) -> Option<usize> {
        self.positive
    }

    /// Tokens per pair.
    pub fn max_length(&self) -> usize {
        self.net.max_length
    }

    /// sha256 over `config.json`'s content and the weights' sha256.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Raw logits of each `(premise, hypothesis)` pair, truncated to the max length (no
    /// windowing), `[pairs][labels]`.
    pub fn logits(&self, pairs: &[(String, String)]) -> Result<Vec<Vec<f32>>> {
        self.net.install(|| self.net.pair_logits(pairs))
    }

    /// The entailment (relevance) probability of each `(premise, hypothesis)` pair, with long
    /// premises windowed.
    pub fn score(&self, pairs: &[(String, String)]) -> Result<Vec<PairScore>> {
        self.net.install(|| {
            let mut inputs = Vec::new();
            let mut owner = Vec::new();
            for (i, (premise, hypothesis)) in pairs.iter().enumerate() {
                for w in self.windows(premise, hypothesis)? {
                    inputs.push((w, hypothesis.clone()));
                    owner.push(i);
                }
            }
            let logits = self.net.pair_logits(&inputs)?;
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
        let reserved = self.net.special_tokens(true) + self.net.token_count(hypothesis)?;
        // A hypothesis that leaves almost no room: one window, truncated by the tokenizer.
        self.net
            .windows(premise, self.net.max_length.saturating_sub(reserved))
    }
}

/// `config.json` parsed for the architecture its `model_type` names.
enum Spec {
    Bert(candle_transformers::models::bert::Config),
    DebertaV2(Box<candle_transformers::models::debertav2::Config>),
    /// An ONNX graph (any architecture), with the tokens per input it takes.
    Onnx(usize),
}

impl Spec {
    fn read(path: &Path, raw: &Value, what: &str) -> Result<Spec> {
        let supported = [Architecture::Bert, Architecture::DebertaV2];
        match files::architecture(path, raw, what, &supported)? {
            Architecture::Bert => Ok(Spec::Bert(files::parse_bert_config(path, raw)?)),
            Architecture::DebertaV2 => Ok(Spec::DebertaV2(Box::new(crate::deberta::parse_config(
                path, raw,
            )?))),
        }
    }

    /// The most tokens a pair may have: `max_position_embeddings`, less `pad_token_id + 1`
    /// for the RoBERTa family.
    fn positions(&self) -> usize {
        match self {
            Spec::Bert(c) => crate::encoder::max_tokens(c),
            Spec::DebertaV2(c) => c.max_position_embeddings,
            Spec::Onnx(n) => *n,
        }
    }
}

/// The network behind a [`PairClassifier`]: each variant turns a batch of tokenised pairs
/// into raw logits (`[rows][labels]`), and nothing else differs between them. A further
/// backend (e.g. an ONNX runtime) is one more variant, built in [`Backend::load`] (with the
/// sha256 of its own weights file, for the identity) and run in [`Backend::logits`].
enum Backend {
    /// A BERT-family encoder (packed, unpadded batches) with a tanh head on the first token
    /// (BERT's pooler + classifier, or RoBERTa's classification head).
    Bert(Box<BertHead>),
    /// DeBERTa v2 / v3 (our embeddings, candle-transformers' encoder and pooler) on padded,
    /// masked batches.
    DebertaV2(Box<crate::deberta::DebertaClassifier>),
    /// An ONNX graph run by ONNX Runtime on padded, masked batches.
    #[cfg(feature = "onnx")]
    Onnx(Box<crate::onnx::OnnxPairModel>),
}

/// A BERT-family encoder and its head, `classifier(tanh(pooler(h[0])))`: BERT's
/// `<encoder>.pooler.dense` and `classifier`, or RoBERTa's `classifier.dense` and
/// `classifier.out_proj` (the same function under other names).
struct BertHead {
    model: crate::encoder::Encoder,
    pooler: Linear,
    classifier: Linear,
    /// The head is RoBERTa's (`model_type` `roberta`, `xlm-roberta` or `camembert`).
    roberta: bool,
}

impl Backend {
    /// Loads the weights of `dir` for `spec` with `labels` outputs; returns the backend and
    /// the sha256 of the weights. A weight that is absent or of another shape is a
    /// [`LocalError::WeightsMismatch`] naming the weights file and `config.json`.
    fn load(
        dir: &Path,
        config_path: &Path,
        spec: &Spec,
        labels: usize,
        threads: Option<usize>,
    ) -> Result<(Backend, String)> {
        // The candle networks read `model.safetensors`; its tensors not matching the config
        // name both files.
        let candle = |build: &dyn Fn(&files::Weights) -> candle_core::Result<Backend>| {
            let weights = files::safetensors(dir)?;
            let backend = build(&weights).map_err(|e| weights.mismatch(config_path, e))?;
            Ok((backend, weights.sha256.clone()))
        };
        match spec {
            Spec::Onnx(_) => Backend::load_onnx(dir, config_path, labels, threads),
            Spec::Bert(config) => candle(&|weights| {
                let root = weights.var_builder();
                let roberta = crate::encoder::is_roberta(config.model_type.as_deref());
                let prefix =
                    weights
                        .encoder_prefix()
                        .unwrap_or(if roberta { "roberta" } else { "bert" });
                let model = crate::encoder::Encoder::load(root.pp(prefix), config)?;
                let h = config.hidden_size;
                let head = root.pp("classifier");
                let (pooler, classifier) = if roberta {
                    (head.pp("dense"), head.pp("out_proj"))
                } else {
                    (root.pp(prefix).pp("pooler").pp("dense"), head)
                };
                Ok(Backend::Bert(Box::new(BertHead {
                    model,
                    pooler: candle_nn::linear(h, h, pooler)?,
                    classifier: candle_nn::linear(h, labels, classifier)?,
                    roberta,
                })))
            }),
            Spec::DebertaV2(config) => candle(&|weights| {
                crate::deberta::DebertaClassifier::load(weights.var_builder(), config, labels)
                    .map(|m| Backend::DebertaV2(Box::new(m)))
            }),
        }
    }

    /// Loads the ONNX graph of `dir`, checking that its logits have one column per label of
    /// `config.json`; returns the backend and the graph file's sha256.
    #[cfg(feature = "onnx")]
    fn load_onnx(
        dir: &Path,
        config_path: &Path,
        labels: usize,
        threads: Option<usize>,
    ) -> Result<(Backend, String)> {
        let model = crate::onnx::OnnxPairModel::load(dir, threads)?;
        if let Some(n) = model.labels() {
            if n != labels {
                return Err(LocalError::bad_file(
                    model.path(),
                    format!(
                        "the graph's logits have {n} columns but {} names {labels} labels (id2label)",
                        config_path.display()
                    ),
                ));
            }
        }
        let sha256 = crate::sha256_file(model.path())?;
        Ok((Backend::Onnx(Box::new(model)), sha256))
    }

    /// Without the `onnx` feature an ONNX folder is an error that says so.
    #[cfg(not(feature = "onnx"))]
    fn load_onnx(
        dir: &Path,
        _config_path: &Path,
        _labels: usize,
        _threads: Option<usize>,
    ) -> Result<(Backend, String)> {
        Err(LocalError::bad_file(
            dir,
            "an ONNX model (model.onnx, no model.safetensors), but this build of oloproof-local \
             lacks the `onnx` cargo feature: rebuild with it, or export the model as safetensors",
        ))
    }

    /// The architecture's `model_type`, for `Debug`.
    fn name(&self) -> &'static str {
        match self {
            Backend::Bert(b) if b.roberta => "roberta",
            Backend::Bert(_) => "bert",
            Backend::DebertaV2(_) => "deberta-v2",
            #[cfg(feature = "onnx")]
            Backend::Onnx(_) => "onnx",
        }
    }

    /// The raw logits of a batch, `[rows][labels]`.
    fn logits(&self, rows: &[&Encoded]) -> Result<Vec<Vec<f32>>> {
        let inf = LocalError::inference;
        match self {
            Backend::Bert(b) => b.logits(rows),
            Backend::DebertaV2(m) => m.logits(rows).map_err(inf),
            #[cfg(feature = "onnx")]
            Backend::Onnx(m) => m.logits(rows),
        }
    }
}

impl BertHead {
    fn logits(&self, rows: &[&Encoded]) -> Result<Vec<Vec<f32>>> {
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

/// Where an ONNX export keeps its graph, in the order looked for.
const ONNX_FILES: [&str; 2] = ["model.onnx", "onnx/model.onnx"];

/// Tokens per input of an ONNX-exported model: `config.json`'s `max_position_embeddings`,
/// less RoBERTa's position offset (`pad_token_id + 1`) for the RoBERTa family, whose position
/// table starts after the padding index.
fn onnx_positions(path: &Path, raw: &Value) -> Result<usize> {
    let n = raw
        .get("max_position_embeddings")
        .and_then(Value::as_u64)
        .ok_or_else(|| {
            LocalError::bad_file(
                path,
                "no `max_position_embeddings`: the tokens per input of the ONNX model are unknown",
            )
        })?;
    let roberta = crate::encoder::is_roberta(raw.get("model_type").and_then(Value::as_str));
    let offset = if roberta {
        raw.get("pad_token_id").and_then(Value::as_u64).unwrap_or(1) + 1
    } else {
        0
    };
    usize::try_from(n.saturating_sub(offset)).map_err(|_| {
        LocalError::bad_file(path, format!("`max_position_embeddings` {n} is too large"))
    })
}

/// Tokens per pair: `option`, else the smallest of the position table's `positions` and the
/// hints of `sentence_bert_config.json` and `tokenizer_config.json`.
fn resolve_max_length(dir: &Path, positions: usize, option: Option<usize>) -> Result<usize> {
    files::resolve_max_length(
        dir,
        positions,
        "max_position_embeddings in config.json, less pad_token_id + 1 for the RoBERTa family",
        option,
        &[
            ("sentence_bert_config.json", "max_seq_length"),
            ("tokenizer_config.json", "model_max_length"),
        ],
    )
}

/// `id2label` in index order (else `num_labels` generic names, else one label).
pub(crate) fn read_labels(path: &Path, raw: &Value) -> Result<Vec<String>> {
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
