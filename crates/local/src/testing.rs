//! Test support, always compiled: writes tiny randomly initialised sequence classifiers
//! (BERT, RoBERTa, and DeBERTa v2 / v3; fed pairs or single texts, [`set_problem_type`] for a
//! multi-label one) and a tiny RoBERTa sentence embedder as `transformers`
//! saves them (safetensors, `config.json`, a word-level `tokenizer.json`) so that tests of the
//! models and of the layers above them need no downloaded model. Their outputs mean nothing;
//! their shapes, masks, positions, labels and windowing are those of a real model, and
//! [`REFERENCE_MODELS`] are the ones whose logits (or embeddings)
//! `bench/classifier_reference.py` records from `transformers` for the numeric comparison.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{Device, Tensor};
use serde_json::{json, Value};

use crate::error::{LocalError, Result};

/// The vocabulary of the tiny tokenizer (besides `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]`).
pub const WORDS: &[&str] = &[
    "the", "refund", "window", "is", "fourteen", "days", "from", "delivery", "shipping", "takes",
    "three", "weeks", "support", "answers", "within", "one", "day", "warranty", "covers", "two",
    "years", "not", "water", "damage", "a", "claim", "needs", "receipt", "and", "photo",
];

/// A deterministic stream of weights in [-0.5, 0.5) (SplitMix64).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((z >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    }
    fn tensor(&mut self, shape: &[usize]) -> Tensor {
        let n: usize = shape.iter().product();
        let v: Vec<f32> = (0..n).map(|_| self.next()).collect();
        Tensor::from_vec(v, shape, &Device::Cpu).expect("the data has the shape's size")
    }
}

/// The tiny word-level `tokenizer.json` (lowercasing, whitespace split, BERT pair template):
/// `[PAD]` 0, `[UNK]` 1, `[CLS]` 2, `[SEP]` 3, then [`WORDS`].
pub fn tokenizer_json() -> Value {
    let specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"];
    word_level_tokenizer(&specials, "[UNK]", cls_sep_template(&specials))
}

/// The tiny word-level `tokenizer.json` with DeBERTa-v3's special-token ids (`[PAD]` 0,
/// `[CLS]` 1, `[SEP]` 2, `[UNK]` 3, then [`WORDS`]) and its pair template
/// `[CLS] A [SEP] B [SEP]` (segment ids 0 for `[CLS] A [SEP]`, 1 for `B [SEP]`).
pub fn deberta_tokenizer_json() -> Value {
    let specials = ["[PAD]", "[CLS]", "[SEP]", "[UNK]"];
    word_level_tokenizer(&specials, "[UNK]", cls_sep_template(&specials))
}

/// The padding id of the tiny RoBERTa models (`pad_token_id`, RoBERTa's).
pub const ROBERTA_PAD: u32 = 1;

/// The tiny word-level `tokenizer.json` with RoBERTa's special tokens and ids (`<s>` 0,
/// `<pad>` 1, `</s>` 2, `<unk>` 3, then [`WORDS`]) and its post-processor
/// (`RobertaProcessing`, as roberta-base's tokenizer.json): `<s> A </s>`, and
/// `<s> A </s></s> B </s>` for a pair, every segment id 0.
pub fn roberta_tokenizer_json() -> Value {
    let specials = ["<s>", "<pad>", "</s>", "<unk>"];
    word_level_tokenizer(
        &specials,
        "<unk>",
        json!({"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
               "trim_offsets": true, "add_prefix_space": false}),
    )
}

/// BERT's `[CLS] A [SEP] B [SEP]` template (segment ids 0 for `[CLS] A [SEP]`, 1 for
/// `B [SEP]`) with the ids of `[CLS]` and `[SEP]` among `specials`.
fn cls_sep_template(specials: &[&str; 4]) -> Value {
    let id = |name: &str| specials.iter().position(|s| *s == name).unwrap_or(0) as u32;
    let (cls, sep) = (id("[CLS]"), id("[SEP]"));
    json!({
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
        "special_tokens": {
            "[CLS]": {"id": "[CLS]", "ids": [cls], "tokens": ["[CLS]"]},
            "[SEP]": {"id": "[SEP]", "ids": [sep], "tokens": ["[SEP]"]}
        }
    })
}

/// A word-level tokenizer (lowercasing, whitespace split) over `specials` (ids 0…) followed
/// by [`WORDS`], with `unk` for unknown words and `post_processor` adding the special tokens.
fn word_level_tokenizer(specials: &[&str; 4], unk: &str, post_processor: Value) -> Value {
    let mut vocab = serde_json::Map::new();
    for (i, t) in specials.iter().enumerate() {
        vocab.insert(t.to_string(), json!(i));
    }
    for (i, w) in WORDS.iter().enumerate() {
        vocab.insert(w.to_string(), json!(i + 4));
    }
    let special = |id: u32, content: &str| {
        json!({"id": id, "content": content, "single_word": false, "lstrip": false,
               "rstrip": false, "normalized": false, "special": true})
    };
    json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": specials.iter().enumerate().map(|(i, t)| special(i as u32, t)).collect::<Vec<_>>(),
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": post_processor,
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": unk}
    })
}

/// Hidden size of the tiny model.
pub const HIDDEN: usize = 16;
/// Encoder layers of the tiny model.
pub const LAYERS: usize = 2;
/// Intermediate size of the tiny model.
pub const INTER: usize = 32;
/// Tokens per input of the tiny model (`max_position_embeddings`).
pub const MAX_POS: usize = 40;

/// Writes a tiny BERT sequence classifier with `labels` (its `id2label`, in order) into
/// `dir`, with weights drawn from a fixed stream seeded by `seed`.
pub fn write_tiny_classifier(dir: &Path, labels: &[&str], seed: u64) -> Result<()> {
    let vocab = WORDS.len() + 4;
    let id2label: serde_json::Map<String, Value> = labels
        .iter()
        .enumerate()
        .map(|(i, l)| (i.to_string(), json!(l)))
        .collect();
    let config = json!({
        "architectures": ["BertForSequenceClassification"],
        "model_type": "bert",
        "vocab_size": vocab, "hidden_size": HIDDEN, "num_hidden_layers": LAYERS,
        "num_attention_heads": 2, "intermediate_size": INTER, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": MAX_POS, "type_vocab_size": 2, "initializer_range": 0.02,
        "layer_norm_eps": 1e-12, "pad_token_id": 0, "id2label": id2label,
    });
    let write = |name: &str, text: String| {
        std::fs::write(dir.join(name), text)
            .map_err(|e| LocalError::bad_file(&dir.join(name), format!("cannot write: {e}")))
    };
    write("config.json", config.to_string())?;
    write("tokenizer.json", tokenizer_json().to_string())?;
    let mut rng = Rng(seed);
    let mut t: HashMap<String, Tensor> = HashMap::new();
    let mut put = |name: &str, shape: &[usize], rng: &mut Rng| {
        t.insert(name.to_string(), rng.tensor(shape));
    };
    let e = "bert.embeddings";
    put(
        &format!("{e}.word_embeddings.weight"),
        &[vocab, HIDDEN],
        &mut rng,
    );
    put(
        &format!("{e}.position_embeddings.weight"),
        &[MAX_POS, HIDDEN],
        &mut rng,
    );
    put(
        &format!("{e}.token_type_embeddings.weight"),
        &[2, HIDDEN],
        &mut rng,
    );
    let ln = |t: &mut HashMap<String, Tensor>, p: &str| {
        t.insert(
            format!("{p}.weight"),
            Tensor::ones(HIDDEN, candle_core::DType::F32, &Device::Cpu).expect("a CPU tensor"),
        );
        t.insert(
            format!("{p}.bias"),
            Tensor::zeros(HIDDEN, candle_core::DType::F32, &Device::Cpu).expect("a CPU tensor"),
        );
    };
    ln(&mut t, &format!("{e}.LayerNorm"));
    for i in 0..LAYERS {
        let l = format!("bert.encoder.layer.{i}");
        for (name, out, inp) in [
            ("attention.self.query", HIDDEN, HIDDEN),
            ("attention.self.key", HIDDEN, HIDDEN),
            ("attention.self.value", HIDDEN, HIDDEN),
            ("attention.output.dense", HIDDEN, HIDDEN),
            ("intermediate.dense", INTER, HIDDEN),
            ("output.dense", HIDDEN, INTER),
        ] {
            let w = rng.tensor(&[out, inp]);
            let b = rng.tensor(&[out]);
            t.insert(format!("{l}.{name}.weight"), w);
            t.insert(format!("{l}.{name}.bias"), b);
        }
        ln(&mut t, &format!("{l}.attention.output.LayerNorm"));
        ln(&mut t, &format!("{l}.output.LayerNorm"));
    }
    t.insert(
        "bert.pooler.dense.weight".into(),
        rng.tensor(&[HIDDEN, HIDDEN]),
    );
    t.insert("bert.pooler.dense.bias".into(), rng.tensor(&[HIDDEN]));
    t.insert(
        "classifier.weight".into(),
        rng.tensor(&[labels.len(), HIDDEN]),
    );
    t.insert("classifier.bias".into(), rng.tensor(&[labels.len()]));
    let path = dir.join("model.safetensors");
    candle_core::safetensors::save(&t, &path).map_err(|e| LocalError::bad_file(&path, e))
}

/// Sets `problem_type` in the `config.json` a writer of this module put in `dir`, as
/// `transformers` saves a model fine-tuned with that problem type (e.g.
/// `multi_label_classification` for a toxicity classifier with one sigmoid per category).
pub fn set_problem_type(dir: &Path, problem_type: &str) -> Result<()> {
    let path = dir.join("config.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| LocalError::bad_file(&path, format!("cannot read: {e}")))?;
    let mut config: Value =
        serde_json::from_str(&text).map_err(|e| LocalError::bad_file(&path, e))?;
    let Some(map) = config.as_object_mut() else {
        return Err(LocalError::bad_file(&path, "not a JSON object"));
    };
    map.insert("problem_type".into(), json!(problem_type));
    std::fs::write(&path, config.to_string())
        .map_err(|e| LocalError::bad_file(&path, format!("cannot write: {e}")))
}

/// Tensors drawn one after another from one stream, by name.
struct Draw {
    rng: Rng,
    tensors: HashMap<String, Tensor>,
}

impl Draw {
    fn put(&mut self, name: String, shape: &[usize]) {
        let t = self.rng.tensor(shape);
        self.tensors.insert(name, t);
    }

    /// A layer norm's gain and bias (the gain is shifted to 1 by the caller).
    fn norm(&mut self, prefix: &str) {
        self.put(format!("{prefix}.weight"), &[HIDDEN]);
        self.put(format!("{prefix}.bias"), &[HIDDEN]);
    }
}

/// Attention heads of the tiny DeBERTa models (head size 4).
pub const DEBERTA_HEADS: usize = 4;
/// `position_buckets` of the tiny DeBERTa-v3 model: relative distances beyond half of it
/// (8) fall into logarithmic buckets, as beyond 128 in the real v3 models (256).
pub const DEBERTA_BUCKETS: usize = 16;
/// `max_relative_positions` of the [`DebertaStyle::Separate`] model: farther distances are
/// clamped.
pub const DEBERTA_MAX_RELATIVE: usize = 12;

/// The configuration of a tiny DeBERTa model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DebertaStyle {
    /// As DeBERTa-v3 and the NLI models fine-tuned from it (e.g.
    /// MoritzLaurer/DeBERTa-v3-base-mnli-fever-anli): content and position projections
    /// shared (`share_att_key`), log-bucketed relative positions ([`DEBERTA_BUCKETS`]),
    /// layer-normed relative embeddings, no absolute positions, no token types
    /// (`type_vocab_size: 0`), `pos_att_type: ["p2c", "c2p"]`.
    V3,
    /// The other code paths of the architecture: separate position projections
    /// (`pos_key_proj`, `pos_query_proj`), relative positions clamped at
    /// [`DEBERTA_MAX_RELATIVE`] without buckets and without layer norm, absolute position
    /// embeddings (`position_biased_input`), two token types, and `pos_att_type` written as
    /// the string `"c2p|p2c"`.
    Separate,
    /// As [`DebertaStyle::V3`] with DeBERTa-v3-base's position geometry: 512 positions
    /// (`max_position_embeddings`, so `max_relative_positions` 512) and 256
    /// `position_buckets`, for inputs of hundreds of tokens.
    V3Base,
}

/// Writes a tiny DeBERTa-v3-style sequence classifier ([`DebertaStyle::V3`]) with `labels`
/// (its `id2label`, in order) into `dir`, with weights drawn from a fixed stream seeded by
/// `seed`: `config.json`, [`deberta_tokenizer_json`] and `model.safetensors` holding exactly
/// the tensors of `transformers`' `DebertaV2ForSequenceClassification` for that config.
pub fn write_tiny_deberta_classifier(dir: &Path, labels: &[&str], seed: u64) -> Result<()> {
    write_tiny_deberta(dir, labels, seed, DebertaStyle::V3)
}

/// Writes a tiny DeBERTa sequence classifier of `style` with `labels` into `dir` (see
/// [`write_tiny_deberta_classifier`]). Layer norms get random gains and biases too, so a
/// layer norm read under the wrong name changes the logits.
pub fn write_tiny_deberta(
    dir: &Path,
    labels: &[&str],
    seed: u64,
    style: DebertaStyle,
) -> Result<()> {
    let vocab = WORDS.len() + 4;
    let v3 = style != DebertaStyle::Separate;
    let (positions, buckets) = if style == DebertaStyle::V3Base {
        (512, 256)
    } else {
        (MAX_POS, DEBERTA_BUCKETS)
    };
    let id2label: serde_json::Map<String, Value> = labels
        .iter()
        .enumerate()
        .map(|(i, l)| (i.to_string(), json!(l)))
        .collect();
    let label2id: serde_json::Map<String, Value> = labels
        .iter()
        .enumerate()
        .map(|(i, l)| (l.to_string(), json!(i)))
        .collect();
    let mut config = json!({
        "architectures": ["DebertaV2ForSequenceClassification"],
        "model_type": "deberta-v2",
        "vocab_size": vocab, "hidden_size": HIDDEN, "num_hidden_layers": LAYERS,
        "num_attention_heads": DEBERTA_HEADS, "intermediate_size": INTER, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": positions, "initializer_range": 0.02,
        "layer_norm_eps": 1e-7, "pad_token_id": 0, "relative_attention": true,
        "pooler_dropout": 0, "pooler_hidden_act": "gelu", "pooler_hidden_size": HIDDEN,
        "id2label": id2label, "label2id": label2id,
    });
    let extra = if v3 {
        json!({
            "type_vocab_size": 0, "position_biased_input": false, "max_relative_positions": -1,
            "position_buckets": buckets, "norm_rel_ebd": "layer_norm",
            "share_att_key": true, "pos_att_type": ["p2c", "c2p"],
        })
    } else {
        json!({
            "type_vocab_size": 2, "position_biased_input": true,
            "max_relative_positions": DEBERTA_MAX_RELATIVE, "norm_rel_ebd": "none",
            "share_att_key": false, "pos_att_type": "c2p|p2c",
        })
    };
    if let (Some(c), Some(e)) = (config.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    let write = |name: &str, text: String| {
        std::fs::write(dir.join(name), text)
            .map_err(|e| LocalError::bad_file(&dir.join(name), format!("cannot write: {e}")))
    };
    write("config.json", config.to_string())?;
    write("tokenizer.json", deberta_tokenizer_json().to_string())?;

    let mut d = Draw {
        rng: Rng(seed),
        tensors: HashMap::new(),
    };
    let e = "deberta.embeddings";
    d.put(format!("{e}.word_embeddings.weight"), &[vocab, HIDDEN]);
    if !v3 {
        d.put(
            format!("{e}.position_embeddings.weight"),
            &[positions, HIDDEN],
        );
        d.put(format!("{e}.token_type_embeddings.weight"), &[2, HIDDEN]);
    }
    d.norm(&format!("{e}.LayerNorm"));
    let mut linears = vec![
        ("attention.self.query_proj", HIDDEN, HIDDEN),
        ("attention.self.key_proj", HIDDEN, HIDDEN),
        ("attention.self.value_proj", HIDDEN, HIDDEN),
        ("attention.output.dense", HIDDEN, HIDDEN),
        ("intermediate.dense", INTER, HIDDEN),
        ("output.dense", HIDDEN, INTER),
    ];
    if !v3 {
        linears.push(("attention.self.pos_key_proj", HIDDEN, HIDDEN));
        linears.push(("attention.self.pos_query_proj", HIDDEN, HIDDEN));
    }
    for i in 0..LAYERS {
        let l = format!("deberta.encoder.layer.{i}");
        for &(name, out, inp) in &linears {
            d.put(format!("{l}.{name}.weight"), &[out, inp]);
            d.put(format!("{l}.{name}.bias"), &[out]);
        }
        d.norm(&format!("{l}.attention.output.LayerNorm"));
        d.norm(&format!("{l}.output.LayerNorm"));
    }
    let relative = if v3 {
        2 * buckets
    } else {
        2 * DEBERTA_MAX_RELATIVE
    };
    d.put(
        "deberta.encoder.rel_embeddings.weight".into(),
        &[relative, HIDDEN],
    );
    if v3 {
        d.norm("deberta.encoder.LayerNorm");
    }
    d.put("pooler.dense.weight".into(), &[HIDDEN, HIDDEN]);
    d.put("pooler.dense.bias".into(), &[HIDDEN]);
    d.put("classifier.weight".into(), &[labels.len(), HIDDEN]);
    d.put("classifier.bias".into(), &[labels.len()]);
    save_with_unit_gains(dir, d.tensors)
}

/// Writes a tiny RoBERTa sequence classifier with `labels` (its `id2label`, in order) into
/// `dir`, with weights drawn from a fixed stream seeded by `seed`: `config.json`
/// (`model_type` `roberta`, `pad_token_id` [`ROBERTA_PAD`], one token type, [`MAX_POS`]
/// tokens, so `max_position_embeddings` `MAX_POS + 2`), [`roberta_tokenizer_json`] and
/// `model.safetensors` holding exactly the tensors of `transformers`'
/// `RobertaForSequenceClassification`: the encoder under `roberta.` (no pooler) and the head
/// `classifier.dense`, `classifier.out_proj`.
pub fn write_tiny_roberta_classifier(dir: &Path, labels: &[&str], seed: u64) -> Result<()> {
    write_tiny_roberta(dir, Some(labels), seed)
}

/// Writes a tiny RoBERTa sentence embedder into `dir` (as [`write_tiny_roberta_classifier`],
/// seeded by `seed`): the tensors of `transformers`' `RobertaModel` without a prefix (its
/// pooler included), as sentence-transformers saves them, and `1_Pooling/config.json` with
/// mean pooling (no `modules.json`: vectors are not normalised; no
/// `sentence_bert_config.json`: the max length is the model's [`MAX_POS`] positions).
pub fn write_tiny_roberta_embedder(dir: &Path, seed: u64) -> Result<()> {
    write_tiny_roberta(dir, None, seed)
}

/// A tiny RoBERTa: a classifier with `labels`, or (`None`) a sentence embedder.
fn write_tiny_roberta(dir: &Path, labels: Option<&[&str]>, seed: u64) -> Result<()> {
    let vocab = WORDS.len() + 4;
    let positions = MAX_POS + ROBERTA_PAD as usize + 1;
    let mut config = json!({
        "architectures": [if labels.is_some() { "RobertaForSequenceClassification" } else { "RobertaModel" }],
        "model_type": "roberta",
        "vocab_size": vocab, "hidden_size": HIDDEN, "num_hidden_layers": LAYERS,
        "num_attention_heads": 2, "intermediate_size": INTER, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": positions, "type_vocab_size": 1, "initializer_range": 0.02,
        "layer_norm_eps": 1e-5, "pad_token_id": ROBERTA_PAD, "bos_token_id": 0, "eos_token_id": 2,
    });
    if let (Some(labels), Some(c)) = (labels, config.as_object_mut()) {
        let id2label: serde_json::Map<String, Value> = labels
            .iter()
            .enumerate()
            .map(|(i, l)| (i.to_string(), json!(l)))
            .collect();
        let label2id: serde_json::Map<String, Value> = labels
            .iter()
            .enumerate()
            .map(|(i, l)| (l.to_string(), json!(i)))
            .collect();
        c.insert("id2label".into(), id2label.into());
        c.insert("label2id".into(), label2id.into());
    }
    let write = |path: &Path, text: String| {
        std::fs::write(path, text)
            .map_err(|e| LocalError::bad_file(path, format!("cannot write: {e}")))
    };
    write(&dir.join("config.json"), config.to_string())?;
    write(
        &dir.join("tokenizer.json"),
        roberta_tokenizer_json().to_string(),
    )?;
    if labels.is_none() {
        let pooling = dir.join("1_Pooling");
        std::fs::create_dir_all(&pooling)
            .map_err(|e| LocalError::bad_file(&pooling, format!("cannot create: {e}")))?;
        write(
            &pooling.join("config.json"),
            json!({"word_embedding_dimension": HIDDEN, "pooling_mode_cls_token": false,
                   "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": false,
                   "pooling_mode_mean_sqrt_len_tokens": false})
            .to_string(),
        )?;
    }

    let prefix = if labels.is_some() { "roberta." } else { "" };
    let mut d = Draw {
        rng: Rng(seed),
        tensors: HashMap::new(),
    };
    let e = format!("{prefix}embeddings");
    d.put(format!("{e}.word_embeddings.weight"), &[vocab, HIDDEN]);
    d.put(
        format!("{e}.position_embeddings.weight"),
        &[positions, HIDDEN],
    );
    d.put(format!("{e}.token_type_embeddings.weight"), &[1, HIDDEN]);
    d.norm(&format!("{e}.LayerNorm"));
    for i in 0..LAYERS {
        let l = format!("{prefix}encoder.layer.{i}");
        for (name, out, inp) in [
            ("attention.self.query", HIDDEN, HIDDEN),
            ("attention.self.key", HIDDEN, HIDDEN),
            ("attention.self.value", HIDDEN, HIDDEN),
            ("attention.output.dense", HIDDEN, HIDDEN),
            ("intermediate.dense", INTER, HIDDEN),
            ("output.dense", HIDDEN, INTER),
        ] {
            d.put(format!("{l}.{name}.weight"), &[out, inp]);
            d.put(format!("{l}.{name}.bias"), &[out]);
        }
        d.norm(&format!("{l}.attention.output.LayerNorm"));
        d.norm(&format!("{l}.output.LayerNorm"));
    }
    match labels {
        Some(labels) => {
            d.put("classifier.dense.weight".into(), &[HIDDEN, HIDDEN]);
            d.put("classifier.dense.bias".into(), &[HIDDEN]);
            d.put("classifier.out_proj.weight".into(), &[labels.len(), HIDDEN]);
            d.put("classifier.out_proj.bias".into(), &[labels.len()]);
        }
        None => {
            d.put("pooler.dense.weight".into(), &[HIDDEN, HIDDEN]);
            d.put("pooler.dense.bias".into(), &[HIDDEN]);
        }
    }
    save_with_unit_gains(dir, d.tensors)
}

/// Shifts the layer-norm gains of `t` to around 1 (a random gain near 0 would silence a
/// layer) and saves `t` as `dir/model.safetensors`.
fn save_with_unit_gains(dir: &Path, mut t: HashMap<String, Tensor>) -> Result<()> {
    for (name, w) in t.iter_mut() {
        if name.ends_with("LayerNorm.weight") {
            *w = (w.clone() + 1.0).map_err(|e| LocalError::bad_file(&dir.join(name), e))?;
        }
    }
    let path = dir.join("model.safetensors");
    candle_core::safetensors::save(&t, &path).map_err(|e| LocalError::bad_file(&path, e))
}

/// The architecture of a tiny model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TinyArchitecture {
    /// [`write_tiny_classifier`].
    Bert,
    /// [`write_tiny_deberta`] of that style.
    Deberta(DebertaStyle),
    /// [`write_tiny_roberta_classifier`].
    Roberta,
    /// [`write_tiny_roberta_embedder`] (a sentence embedder: no labels).
    RobertaEmbedder,
}

/// A tiny model whose logits (an embedder's mean-pooled embeddings) `transformers` computed
/// for the committed fixture `tests/fixtures/tiny_classifier_reference.json` (written by
/// `bench/classifier_reference.py` from the folders of `examples/write_tiny_models.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReferenceModel {
    /// The folder name (and the key in the fixture).
    pub name: &'static str,
    /// The architecture.
    pub architecture: TinyArchitecture,
    /// `id2label`, in order (none for an embedder).
    pub labels: &'static [&'static str],
    /// The weights' seed.
    pub seed: u64,
}

impl ReferenceModel {
    /// Writes the model into `dir` (which must exist).
    pub fn write(&self, dir: &Path) -> Result<()> {
        match self.architecture {
            TinyArchitecture::Bert => write_tiny_classifier(dir, self.labels, self.seed),
            TinyArchitecture::Deberta(style) => {
                write_tiny_deberta(dir, self.labels, self.seed, style)
            }
            TinyArchitecture::Roberta => write_tiny_roberta_classifier(dir, self.labels, self.seed),
            TinyArchitecture::RobertaEmbedder => write_tiny_roberta_embedder(dir, self.seed),
        }
    }

    /// Whether the model is a sentence embedder (else a sequence-pair classifier).
    pub fn is_embedder(&self) -> bool {
        self.architecture == TinyArchitecture::RobertaEmbedder
    }
}

/// The tiny models of the numeric reference: BERT, DeBERTa-v3 (three labels, a single
/// logit, and v3-base's 512 positions), the [`DebertaStyle::Separate`] variant, RoBERTa
/// (three labels, a single logit) and the RoBERTa sentence embedder. Changing one (or its
/// writer) means running `bench/classifier_reference.sh` again.
pub const REFERENCE_MODELS: &[ReferenceModel] = &[
    ReferenceModel {
        name: "bert-nli",
        architecture: TinyArchitecture::Bert,
        labels: &["contradiction", "neutral", "entailment"],
        seed: 101,
    },
    ReferenceModel {
        name: "deberta-v3-nli",
        architecture: TinyArchitecture::Deberta(DebertaStyle::V3),
        labels: &["entailment", "neutral", "contradiction"],
        seed: 102,
    },
    ReferenceModel {
        name: "deberta-v3-cross-encoder",
        architecture: TinyArchitecture::Deberta(DebertaStyle::V3),
        labels: &["LABEL_0"],
        seed: 103,
    },
    ReferenceModel {
        name: "deberta-v3-base-positions",
        architecture: TinyArchitecture::Deberta(DebertaStyle::V3Base),
        labels: &["entailment", "neutral", "contradiction"],
        seed: 105,
    },
    ReferenceModel {
        name: "deberta-separate-nli",
        architecture: TinyArchitecture::Deberta(DebertaStyle::Separate),
        labels: &["entailment", "not_entailment"],
        seed: 104,
    },
    ReferenceModel {
        name: "roberta-nli",
        architecture: TinyArchitecture::Roberta,
        labels: &["contradiction", "entailment", "neutral"],
        seed: 106,
    },
    ReferenceModel {
        name: "roberta-cross-encoder",
        architecture: TinyArchitecture::Roberta,
        labels: &["LABEL_0"],
        seed: 107,
    },
    ReferenceModel {
        name: "roberta-embedder",
        architecture: TinyArchitecture::RobertaEmbedder,
        labels: &[],
        seed: 108,
    },
];
