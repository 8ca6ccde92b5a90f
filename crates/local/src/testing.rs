//! Test support, always compiled: writes a tiny randomly initialised BERT sequence-pair
//! classifier (safetensors, `config.json`, a word-level `tokenizer.json`) so that tests of the
//! classifier and of the layers above it need no downloaded model. Its outputs mean nothing;
//! its shapes, masks, labels and windowing are those of a real model.

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

/// The tiny word-level `tokenizer.json` (lowercasing, whitespace split, BERT pair template).
pub fn tokenizer_json() -> Value {
    let mut vocab = serde_json::Map::new();
    for (i, t) in ["[PAD]", "[UNK]", "[CLS]", "[SEP]"].iter().enumerate() {
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
        "added_tokens": [special(0, "[PAD]"), special(1, "[UNK]"), special(2, "[CLS]"), special(3, "[SEP]")],
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}
            }
        },
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
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
