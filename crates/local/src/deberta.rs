//! DeBERTa v2 / v3 sequence-pair classification (`DebertaV2ForSequenceClassification`):
//! `config.json` read with Hugging Face's defaults, and padded, masked batches run through
//! candle-transformers' DeBERTa-v2 encoder (disentangled attention with relative positions)
//! and context pooler.
//!
//! The weights are those `transformers` saves: the encoder under `deberta.`, the context
//! pooler `pooler.dense` and the head `classifier`. The logits are
//! `classifier(act(pooler(h[CLS])))` with the pooler's activation `pooler_hidden_act`.
//!
//! The embedding layer is our own: candle-transformers 0.11's `DebertaV2Embeddings` adds the
//! absolute position embeddings (`position_biased_input: true`, DeBERTa v2) with a
//! same-shape `add`, which fails for any batch of more than one text, and sizes the token
//! type table by `hidden_size` where `transformers` uses `embedding_size`. Ours follows
//! `transformers`' `DebertaV2Embeddings`; the encoder and pooler agree with `transformers`
//! to float rounding (`tests/deberta.rs` checks the logits against the committed
//! `transformers` fixture).

use std::path::Path;

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder};
use candle_transformers::models::debertav2::{Config, DebertaV2ContextPooler, DebertaV2Encoder};
use serde_json::{json, Value};

use crate::bert::Encoded;
use crate::error::{LocalError, Result};

/// `raw` (the content of the DeBERTa `config.json` at `path`) as candle's configuration,
/// with the defaults of `transformers`' `DebertaV2Config` for the fields a config may omit
/// (`relative_attention: false`, `position_biased_input: true`, `type_vocab_size: 0`,
/// `pooler_hidden_size: hidden_size`, `pooler_dropout: 0`, `pooler_hidden_act: gelu`, …),
/// `pos_att_type` given as `"p2c|c2p"` or a list, and `norm_rel_ebd` as `"layer_norm"` or
/// `"none"`. A feature candle cannot run (the convolution layer of `conv_kernel_size`, an
/// activation other than GELU or ReLU) is a [`LocalError::BadFile`] naming it.
pub(crate) fn parse_config(path: &Path, raw: &Value) -> Result<Config> {
    let bad = |message: String| LocalError::bad_file(path, message);
    let Some(given) = raw.as_object() else {
        return Err(bad("expected a JSON object".into()));
    };
    let mut c = given.clone();
    let hidden = c.get("hidden_size").cloned().unwrap_or(json!(1536));
    let defaults = [
        ("vocab_size", json!(128_100)),
        ("hidden_size", json!(1536)),
        ("num_hidden_layers", json!(24)),
        ("num_attention_heads", json!(24)),
        ("intermediate_size", json!(6144)),
        ("hidden_act", json!("gelu")),
        ("hidden_dropout_prob", json!(0.1)),
        ("attention_probs_dropout_prob", json!(0.1)),
        ("max_position_embeddings", json!(512)),
        ("type_vocab_size", json!(0)),
        ("initializer_range", json!(0.02)),
        ("layer_norm_eps", json!(1e-7)),
        ("relative_attention", json!(false)),
        ("max_relative_positions", json!(-1)),
        ("position_biased_input", json!(true)),
        ("pos_att_type", json!([])),
        ("pooler_dropout", json!(0.0)),
        ("pooler_hidden_act", json!("gelu")),
        ("pooler_hidden_size", hidden),
    ];
    for (key, value) in defaults {
        match c.get(key) {
            None | Some(Value::Null) => {
                c.insert(key.to_string(), value);
            }
            Some(_) => {}
        }
    }
    // `"p2c|c2p"` (older configs) or a list; `transformers` lower-cases and trims the parts.
    let pos_att: Vec<String> = match &c["pos_att_type"] {
        Value::String(s) => s.split('|').map(|p| p.trim().to_lowercase()).collect(),
        Value::Array(items) => items
            .iter()
            .map(|p| {
                p.as_str()
                    .map(|p| p.trim().to_lowercase())
                    .ok_or_else(|| bad(format!("pos_att_type: expected strings, found {p}")))
            })
            .collect::<Result<_>>()?,
        other => return Err(bad(format!("pos_att_type: expected a list, found {other}"))),
    };
    if let Some(p) = pos_att
        .iter()
        .find(|p| !matches!(p.as_str(), "c2p" | "p2c"))
    {
        return Err(bad(format!(
            "pos_att_type `{p}` is not supported (expected c2p and/or p2c)"
        )));
    }
    c.insert("pos_att_type".into(), json!(pos_att));
    // `transformers` applies the layer norm when `layer_norm` is one of the `|`-parts.
    let norm_rel = c
        .get("norm_rel_ebd")
        .and_then(Value::as_str)
        .is_some_and(|s| {
            s.to_lowercase()
                .split('|')
                .any(|p| p.trim() == "layer_norm")
        });
    c.insert(
        "norm_rel_ebd".into(),
        json!(if norm_rel { "layer_norm" } else { "none" }),
    );
    for key in ["hidden_act", "pooler_hidden_act"] {
        let act = c[key]
            .as_str()
            .map_or_else(|| c[key].to_string(), str::to_string);
        let candle = match act.as_str() {
            "gelu" => "gelu",
            "gelu_new" | "gelu_pytorch_tanh" => "geluapproximate",
            "relu" => "relu",
            _ => {
                return Err(bad(format!(
                    "{key} `{act}` is not supported (expected gelu, gelu_new, gelu_pytorch_tanh or relu)"
                )))
            }
        };
        c.insert(key.into(), json!(candle));
    }
    if c.get("conv_kernel_size")
        .and_then(Value::as_u64)
        .is_some_and(|k| k > 0)
    {
        return Err(bad(
            "conv_kernel_size > 0 (the convolution layer of DeBERTa-v2 xlarge / xxlarge) is not supported"
                .into(),
        ));
    }
    // The labels are read and checked by the caller; candle's own id2label parsing is not used.
    c.remove("id2label");
    c.remove("label2id");
    let config: Config = serde_json::from_value(Value::Object(c))
        .map_err(|e| bad(format!("not a DeBERTa-v2 config.json: {e}")))?;
    let head = config
        .attention_head_size
        .unwrap_or(config.hidden_size / config.num_attention_heads.max(1));
    if config.hidden_size == 0
        || config.num_attention_heads == 0
        || !config
            .hidden_size
            .is_multiple_of(config.num_attention_heads)
        || head * config.num_attention_heads != config.hidden_size
    {
        return Err(bad(format!(
            "hidden_size ({}) must be a positive multiple of num_attention_heads ({}) and equal heads × attention_head_size",
            config.hidden_size, config.num_attention_heads
        )));
    }
    let pooler = config.pooler_hidden_size.unwrap_or(config.hidden_size);
    if pooler != config.hidden_size {
        return Err(bad(format!(
            "pooler_hidden_size ({pooler}) must equal hidden_size ({}) (the pooler reads the [CLS] vector)",
            config.hidden_size
        )));
    }
    Ok(config)
}

/// A loaded DeBERTa-v2 / v3 sequence classifier.
pub(crate) struct DebertaClassifier {
    embeddings: Embeddings,
    encoder: DebertaV2Encoder,
    pooler: DebertaV2ContextPooler,
    classifier: Linear,
    pad_id: u32,
}

impl DebertaClassifier {
    /// Loads the model from the root of a `DebertaV2ForSequenceClassification` checkpoint
    /// (`deberta.*`, `pooler.dense.*`, `classifier.*`) with `labels` outputs.
    pub fn load(
        root: VarBuilder,
        config: &Config,
        labels: usize,
    ) -> candle_core::Result<DebertaClassifier> {
        let deberta = root.pp("deberta");
        let embeddings = Embeddings::load(deberta.pp("embeddings"), config)?;
        let encoder = DebertaV2Encoder::load(deberta.pp("encoder"), config)?;
        let pooler = DebertaV2ContextPooler::load(root.clone(), config)?;
        let classifier = candle_nn::linear(config.hidden_size, labels, root.pp("classifier"))?;
        Ok(DebertaClassifier {
            embeddings,
            encoder,
            pooler,
            classifier,
            pad_id: config.pad_token_id.unwrap_or(0) as u32,
        })
    }

    /// The logits of a batch of tokenised pairs, `[rows][labels]`: the rows are padded to the
    /// longest with `pad_token_id` and masked.
    pub fn logits(&self, rows: &[&Encoded]) -> candle_core::Result<Vec<Vec<f32>>> {
        let width = rows.iter().map(|r| r.len()).max().unwrap_or(0);
        let n = rows.len();
        let mut ids = vec![self.pad_id; n * width];
        let mut types = vec![0u32; n * width];
        let mut mask = vec![0u32; n * width];
        for (i, r) in rows.iter().enumerate() {
            let at = i * width;
            ids[at..at + r.len()].copy_from_slice(&r.ids);
            types[at..at + r.len()].copy_from_slice(&r.type_ids);
            mask[at..at + r.len()].fill(1);
        }
        let cpu = Device::Cpu;
        let ids = Tensor::from_vec(ids, (n, width), &cpu)?;
        let types = Tensor::from_vec(types, (n, width), &cpu)?;
        let mask = Tensor::from_vec(mask, (n, width), &cpu)?;
        let hidden = self.embeddings.forward(&ids, &types, &mask)?;
        let hidden = self.encoder.forward(&hidden, &mask, None, None)?;
        let pooled = self.pooler.forward(&hidden)?;
        self.classifier
            .forward(&pooled)?
            .to_dtype(DType::F32)?
            .to_vec2::<f32>()
    }
}

/// `transformers`' `DebertaV2Embeddings`: word embeddings, plus absolute position embeddings
/// when `position_biased_input`, plus token type embeddings when `type_vocab_size > 0`,
/// projected to `hidden_size` when `embedding_size` differs, layer-normed, and zeroed at
/// padded positions.
struct Embeddings {
    word: Embedding,
    position: Option<Embedding>,
    token_type: Option<Embedding>,
    projection: Option<Linear>,
    norm: LayerNorm,
}

impl Embeddings {
    fn load(vb: VarBuilder, config: &Config) -> candle_core::Result<Embeddings> {
        let size = config.embedding_size.unwrap_or(config.hidden_size);
        let word = candle_nn::embedding(config.vocab_size, size, vb.pp("word_embeddings"))?;
        let position = if config.position_biased_input {
            Some(candle_nn::embedding(
                config.max_position_embeddings,
                size,
                vb.pp("position_embeddings"),
            )?)
        } else {
            None
        };
        let token_type = if config.type_vocab_size > 0 {
            Some(candle_nn::embedding(
                config.type_vocab_size,
                size,
                vb.pp("token_type_embeddings"),
            )?)
        } else {
            None
        };
        let projection = if size == config.hidden_size {
            None
        } else {
            Some(candle_nn::linear_no_bias(
                size,
                config.hidden_size,
                vb.pp("embed_proj"),
            )?)
        };
        let norm = candle_nn::layer_norm(
            config.hidden_size,
            config.layer_norm_eps,
            vb.pp("LayerNorm"),
        )?;
        Ok(Embeddings {
            word,
            position,
            token_type,
            projection,
            norm,
        })
    }

    /// `[batch, tokens, hidden]` from `ids`, `types` and `mask` (`[batch, tokens]`, 1 for a
    /// real token).
    fn forward(&self, ids: &Tensor, types: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        let mut x = self.word.forward(ids)?;
        if let Some(position) = &self.position {
            let positions = Tensor::arange(0u32, ids.dim(1)? as u32, ids.device())?;
            x = x.broadcast_add(&position.forward(&positions)?.unsqueeze(0)?)?;
        }
        if let Some(token_type) = &self.token_type {
            x = (x + token_type.forward(types)?)?;
        }
        if let Some(projection) = &self.projection {
            x = projection.forward(&x)?;
        }
        let x = self.norm.forward(&x)?;
        x.broadcast_mul(&mask.to_dtype(x.dtype())?.unsqueeze(2)?)
    }
}

#[cfg(test)]
mod tests {
    use candle_transformers::models::debertav2::HiddenAct;

    use super::*;

    fn parse(raw: Value) -> Result<Config> {
        parse_config(Path::new("config.json"), &raw)
    }

    #[test]
    fn a_deberta_v3_nli_config_parses_as_written() {
        // The fields of MoritzLaurer/DeBERTa-v3-base-mnli-fever-anli's config.json.
        let c = parse(json!({
            "_name_or_path": "microsoft/deberta-v3-base",
            "architectures": ["DebertaV2ForSequenceClassification"],
            "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1, "hidden_size": 768,
            "id2label": {"0": "entailment", "1": "neutral", "2": "contradiction"},
            "initializer_range": 0.02, "intermediate_size": 3072,
            "label2id": {"contradiction": 2, "entailment": 0, "neutral": 1},
            "layer_norm_eps": 1e-07, "max_position_embeddings": 512,
            "max_relative_positions": -1, "model_type": "deberta-v2",
            "norm_rel_ebd": "layer_norm", "num_attention_heads": 12, "num_hidden_layers": 12,
            "pad_token_id": 0, "pooler_dropout": 0, "pooler_hidden_act": "gelu",
            "pooler_hidden_size": 768, "pos_att_type": ["p2c", "c2p"],
            "position_biased_input": false, "position_buckets": 256,
            "relative_attention": true, "share_att_key": true, "torch_dtype": "float32",
            "transformers_version": "4.13.0", "type_vocab_size": 0, "vocab_size": 128100
        }))
        .unwrap();
        assert!(c.relative_attention && !c.position_biased_input);
        assert_eq!(c.position_buckets, Some(256));
        assert_eq!(c.max_relative_positions, -1);
        assert_eq!(c.norm_rel_ebd.as_deref(), Some("layer_norm"));
        assert_eq!(c.pos_att_type, ["p2c", "c2p"]);
        assert_eq!(c.type_vocab_size, 0);
        assert_eq!(c.share_att_key, Some(true));
        assert_eq!(c.pooler_hidden_size, Some(768));
        assert_eq!(c.pooler_dropout, Some(0.0));
        assert_eq!(c.pooler_hidden_act, Some(HiddenAct::Gelu));
        assert_eq!(c.hidden_act, HiddenAct::Gelu);
    }

    #[test]
    fn omitted_fields_take_transformers_defaults() {
        let c = parse(json!({
            "model_type": "deberta-v2", "vocab_size": 10, "hidden_size": 8,
            "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16,
            "pos_att_type": "C2P|p2c", "hidden_act": "gelu_new", "norm_rel_ebd": "layer_norm|x"
        }))
        .unwrap();
        assert!(!c.relative_attention && c.position_biased_input);
        assert_eq!(c.type_vocab_size, 0);
        assert_eq!(c.max_position_embeddings, 512);
        assert_eq!(c.layer_norm_eps, 1e-7);
        assert_eq!(c.pos_att_type, ["c2p", "p2c"]);
        assert_eq!(c.hidden_act, HiddenAct::GeluApproximate);
        assert_eq!(c.norm_rel_ebd.as_deref(), Some("layer_norm"));
        assert_eq!(c.pooler_hidden_size, Some(8));
        assert_eq!(c.pooler_hidden_act, Some(HiddenAct::Gelu));
        let c = parse(json!({"hidden_size": 8, "num_attention_heads": 2, "pos_att_type": null}))
            .unwrap();
        assert!(c.pos_att_type.is_empty());
        assert_eq!(c.norm_rel_ebd.as_deref(), Some("none"));
    }

    #[test]
    fn unsupported_features_are_errors() {
        for (raw, message) in [
            (json!([1]), "expected a JSON object"),
            (json!({"conv_kernel_size": 3}), "conv_kernel_size"),
            (
                json!({"hidden_act": "silu"}),
                "hidden_act `silu` is not supported",
            ),
            (json!({"pos_att_type": 3}), "pos_att_type: expected a list"),
            (
                json!({"hidden_size": 10, "num_attention_heads": 4}),
                "multiple",
            ),
            (
                json!({"hidden_size": "big"}),
                "not a DeBERTa-v2 config.json",
            ),
        ] {
            let err = parse(raw).unwrap_err();
            assert!(err.to_string().contains(message), "{err}");
        }
    }
}
