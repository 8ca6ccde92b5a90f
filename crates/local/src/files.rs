//! Reading a model folder: required files with clear errors, `config.json`, the tokenizer,
//! safetensors weights checked against the config, the model's content identity, and the
//! thread pool a model runs on.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor};
use candle_nn::VarBuilder;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{LocalError, Result};

/// The folder `path`, or a [`LocalError::MissingPath`] / [`LocalError::BadFile`] saying what
/// it should be.
pub(crate) fn model_dir(path: &Path, what: &str) -> Result<PathBuf> {
    if !path.exists() {
        return Err(LocalError::MissingPath {
            path: path.to_path_buf(),
            expected: format!("a {what} folder in the Hugging Face layout (config.json, tokenizer.json, model.safetensors)"),
        });
    }
    if !path.is_dir() {
        return Err(LocalError::bad_file(
            path,
            format!("expected a {what} folder (config.json, tokenizer.json, model.safetensors), found a file"),
        ));
    }
    Ok(path.to_path_buf())
}

/// `dir/name`, or [`LocalError::MissingFile`].
pub(crate) fn require(dir: &Path, name: &str, expected: &str) -> Result<PathBuf> {
    let p = dir.join(name);
    if p.is_file() {
        Ok(p)
    } else {
        Err(LocalError::MissingFile {
            dir: dir.to_path_buf(),
            file: name.to_string(),
            expected: expected.to_string(),
        })
    }
}

/// The JSON content of `path`.
pub(crate) fn read_json(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| LocalError::bad_file(path, format!("cannot read: {e}")))?;
    serde_json::from_str(&text).map_err(|e| {
        LocalError::bad_file(
            path,
            format!("line {}:{}: not valid JSON: {e}", e.line(), e.column()),
        )
    })
}

/// The encoder architectures a model folder can hold, told apart by `config.json`'s
/// `model_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Architecture {
    /// BERT and the encoders with its weight layout: `model_type` `bert`, `roberta`,
    /// `xlm-roberta` or `camembert` (or no `model_type` at all, as old BERT configs). The
    /// RoBERTa family differs in its position numbering and classification head (see
    /// `encoder` and `classify`).
    Bert,
    /// DeBERTa v2 and v3 (both `model_type` `deberta-v2`): disentangled relative-position
    /// attention.
    DebertaV2,
}

/// The `model_type`s read as [`Architecture::Bert`].
const BERT_MODEL_TYPES: &[&str] = &["bert", "roberta", "xlm-roberta", "camembert"];

impl Architecture {
    /// The `model_type`s this architecture is read from, for error messages.
    fn model_types(self) -> String {
        match self {
            Architecture::Bert => format!("{} (BERT)", BERT_MODEL_TYPES.join(", ")),
            Architecture::DebertaV2 => "deberta-v2 (DeBERTa v2 and v3)".to_string(),
        }
    }
}

/// `config.json` of `dir`: its path and JSON content.
pub(crate) fn read_config(dir: &Path) -> Result<(PathBuf, Value)> {
    let path = require(dir, "config.json", "the model's Hugging Face config.json")?;
    let raw = read_json(&path)?;
    Ok((path, raw))
}

/// The architecture `config.json` (at `path`, content `raw`) names by its `model_type`, if it
/// is one of `supported` (a `what` — "sentence embedder", … — says what the folder is for in
/// the error, which lists the supported `model_type`s). No `model_type` means BERT.
pub(crate) fn architecture(
    path: &Path,
    raw: &Value,
    what: &str,
    supported: &[Architecture],
) -> Result<Architecture> {
    let found = match raw.get("model_type") {
        None | Some(Value::Null) => Some(Architecture::Bert),
        Some(Value::String(t)) if BERT_MODEL_TYPES.contains(&t.as_str()) => {
            Some(Architecture::Bert)
        }
        Some(Value::String(t)) if t == "deberta-v2" => Some(Architecture::DebertaV2),
        Some(_) => None,
    };
    match found {
        Some(a) if supported.contains(&a) => Ok(a),
        _ => {
            let shown = raw.get("model_type").map_or_else(String::new, |t| {
                t.as_str().map_or_else(|| t.to_string(), str::to_string)
            });
            let expected: Vec<String> = supported.iter().map(|a| a.model_types()).collect();
            Err(LocalError::bad_file(
                path,
                format!(
                    "model_type `{shown}` is not supported for a {what}: expected model_type {}",
                    expected.join(" or ")
                ),
            ))
        }
    }
}

/// `config.json` as candle's BERT configuration (the raw JSON is returned too, for
/// `id2label` and the identity). A `model_type` other than BERT's is an error.
pub(crate) fn bert_config(
    dir: &Path,
) -> Result<(PathBuf, Value, candle_transformers::models::bert::Config)> {
    let (path, raw) = read_config(dir)?;
    architecture(&path, &raw, "sentence embedder", &[Architecture::Bert])?;
    let config = parse_bert_config(&path, &raw)?;
    Ok((path, raw, config))
}

/// `raw` (the content of the `config.json` at `path`) as candle's BERT configuration.
pub(crate) fn parse_bert_config(
    path: &Path,
    raw: &Value,
) -> Result<candle_transformers::models::bert::Config> {
    let config: candle_transformers::models::bert::Config = serde_json::from_value(raw.clone())
        .map_err(|e| LocalError::bad_file(path, format!("not a BERT config.json: {e}")))?;
    check_heads(path, config.hidden_size, config.num_attention_heads)?;
    let tokens = crate::encoder::max_tokens(&config);
    if tokens < 2 {
        let note = if crate::encoder::is_roberta(config.model_type.as_deref()) {
            format!(
                " after the RoBERTa family's offset of pad_token_id + 1 = {}",
                config.pad_token_id.saturating_add(1)
            )
        } else {
            String::new()
        };
        return Err(LocalError::bad_file(
            path,
            format!(
                "max_position_embeddings ({}) leaves {tokens} positions for a text{note}: expected at least 2",
                config.max_position_embeddings
            ),
        ));
    }
    Ok(config)
}

/// `hidden_size` must be a positive multiple of `num_attention_heads`.
fn check_heads(path: &Path, hidden: usize, heads: usize) -> Result<()> {
    if hidden == 0 || heads == 0 || !hidden.is_multiple_of(heads) {
        return Err(LocalError::bad_file(
            path,
            format!(
                "hidden_size ({hidden}) must be a positive multiple of num_attention_heads ({heads})"
            ),
        ));
    }
    Ok(())
}

/// `tokenizer.json` of `dir`, with padding and truncation removed (callers set their own).
pub(crate) fn tokenizer(dir: &Path) -> Result<tokenizers::Tokenizer> {
    let path = require(
        dir,
        "tokenizer.json",
        "the fast tokenizer file saved by Hugging Face `tokenizers` (tokenizer.save or save_pretrained)",
    )?;
    // JSON first, then the tokenizer from the value: `Tokenizer::from_file` panics on a JSON
    // syntax error inside `decoder` (tokenizers 0.23's `expect("Helper")`, found by fuzzing),
    // and this way a syntax error is reported at its line and column.
    let raw = read_json(&path)?;
    if let Some(missing) = raw.get("post_processor").and_then(missing_special_token) {
        // tokenizers 0.23 accepts this file and then panics in every `encode`.
        return Err(LocalError::bad_file(
            &path,
            format!("post_processor: the template uses special token `{missing}`, which its `special_tokens` does not define"),
        ));
    }
    // `tokenizers` panics on some malformed files while building its model (a BPE vocabulary
    // with an empty token, found by fuzzing): a panic there is a bad file, not a crash.
    let mut tok: tokenizers::Tokenizer = match std::panic::catch_unwind(move || {
        serde_json::from_value::<tokenizers::Tokenizer>(raw)
    }) {
        Ok(Ok(tok)) => tok,
        Ok(Err(e)) => {
            return Err(LocalError::bad_file(
                &path,
                format!("not a tokenizers JSON file: {e}"),
            ))
        }
        Err(panic) => {
            return Err(LocalError::bad_file(
                &path,
                format!(
                    "tokenizers cannot build a tokenizer from it (it panicked: {}); the file is malformed",
                    panic_message(panic.as_ref())
                ),
            ))
        }
    };
    tok.with_padding(None);
    tok.with_truncation(None)
        .map_err(|e| LocalError::bad_file(&path, e))?;
    if let Some(panic) = encode_trial(&tok) {
        return Err(LocalError::bad_file(
            &path,
            format!("the tokenizer fails on a test text (tokenizers panicked: {panic}); the file is malformed"),
        ));
    }
    Ok(tok)
}

/// Encodes one text and one pair, as the embedders and pair classifiers do, and returns the
/// panic message if `tokenizers` panicked. Some malformed files load and only fail inside
/// `encode` (found by fuzzing); trying now makes them an error at load, not a crash mid-run.
/// An encoding *error* is left for the real call to report.
pub(crate) fn encode_trial(tok: &tokenizers::Tokenizer) -> Option<String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = tok.encode("How long is the refund window?", true);
        let _ = tok.encode(
            ("Is it 14 days?", "Refunds are accepted within 14 days."),
            true,
        );
    }))
    .err()
    .map(|p| panic_message(p.as_ref()))
}

/// The message of a caught panic (`&str` or `String` payloads), else `no message`.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string())
}

/// A special token that a template post-processor (also inside a `Sequence`) places in its
/// `single` or `pair` template without defining it in its `special_tokens`. Recognised by its
/// shape, not its `type`: `tokenizers` reads post-processors untagged, so a misspelt `type`
/// still loads as a template.
fn missing_special_token(processor: &Value) -> Option<String> {
    if let Some(items) = processor.get("processors").and_then(Value::as_array) {
        return items.iter().find_map(missing_special_token);
    }
    let defined = processor.get("special_tokens");
    ["single", "pair"]
        .iter()
        .filter_map(|k| processor.get(*k).and_then(Value::as_array))
        .flatten()
        .filter_map(|piece| piece.pointer("/SpecialToken/id").and_then(Value::as_str))
        .find(|id| defined.and_then(|d| d.get(*id)).is_none())
        .map(str::to_string)
}

/// Loaded safetensors weights: their path, tensors and sha256.
pub(crate) struct Weights {
    pub path: PathBuf,
    pub tensors: HashMap<String, Tensor>,
    pub sha256: String,
}

/// Reads `model.safetensors` of `dir` (once: its bytes are hashed and parsed, then dropped).
pub(crate) fn safetensors(dir: &Path) -> Result<Weights> {
    let path = require(
        dir,
        "model.safetensors",
        "the weights in safetensors format (pytorch_model.bin is not read: convert it with `safetensors`)",
    )?;
    let bytes = std::fs::read(&path)
        .map_err(|e| LocalError::bad_file(&path, format!("cannot read: {e}")))?;
    let sha256 = hex(&Sha256::digest(&bytes));
    let tensors = candle_core::safetensors::load_buffer(&bytes, &Device::Cpu)
        .map_err(|e| LocalError::bad_file(&path, format!("not a safetensors file: {e}")))?;
    Ok(Weights {
        path,
        tensors,
        sha256,
    })
}

impl Weights {
    /// A variable builder over the tensors, converted to f32.
    pub fn var_builder(&self) -> VarBuilder<'static> {
        VarBuilder::from_tensors(self.tensors.clone(), candle_core::DType::F32, &Device::Cpu)
    }

    /// The prefix under which the encoder's tensors are stored (`bert.`, `roberta.` or none).
    pub fn encoder_prefix(&self) -> Option<&'static str> {
        ["bert", "roberta", "model"].into_iter().find(|p| {
            self.tensors
                .contains_key(&format!("{p}.embeddings.word_embeddings.weight"))
        })
    }

    /// Maps a candle loading error to [`LocalError::WeightsMismatch`].
    pub fn mismatch(&self, config: &Path, e: impl std::fmt::Display) -> LocalError {
        LocalError::WeightsMismatch {
            weights: self.path.clone(),
            config: config.to_path_buf(),
            message: e.to_string(),
        }
    }
}

/// Lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The sha256 of a file, streamed.
pub(crate) fn sha256_file(path: &Path) -> Result<String> {
    let mut f = std::fs::File::open(path)
        .map_err(|e| LocalError::bad_file(path, format!("cannot read: {e}")))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h)
        .map_err(|e| LocalError::bad_file(path, format!("cannot read: {e}")))?;
    Ok(hex(&h.finalize()))
}

/// The identity of a model: sha256 over the kind, the content of its `config.json` and the
/// sha256 of its weights. Two folders with the same files have the same identity wherever
/// they are.
pub(crate) fn identity(kind: &str, config: &Value, weights_sha256: &str) -> String {
    let mut h = Sha256::new();
    h.update(kind.as_bytes());
    h.update([0]);
    h.update(config.to_string().as_bytes());
    h.update([0]);
    h.update(weights_sha256.as_bytes());
    hex(&h.finalize())
}

/// A thread pool of `threads` threads (default: every core). The model's forward passes run
/// inside it, so candle's matrix products (which split work over the current rayon pool) use
/// at most that many threads.
pub(crate) fn thread_pool(threads: Option<usize>) -> Result<rayon::ThreadPool> {
    let n = threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if n == 0 {
        return Err(LocalError::Options {
            message: "`threads` must be at least 1".into(),
        });
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("oloproof-local-{i}"))
        .build()
        .map_err(|e| LocalError::Options {
            message: format!("cannot start {n} model threads: {e}"),
        })
}

/// The tokens per input a model runs with: `option` when given (an error outside
/// `2..=limit`, naming `limit_source`), else `limit` lowered by each `(file, key)` hint
/// present in `dir` (e.g. `sentence_bert_config.json`'s `max_seq_length`).
pub(crate) fn resolve_max_length(
    dir: &Path,
    limit: usize,
    limit_source: &str,
    option: Option<usize>,
    hints: &[(&str, &str)],
) -> Result<usize> {
    if let Some(n) = option {
        if n < 2 || n > limit {
            return Err(LocalError::Options {
                message: format!(
                    "`max_length` {n} is out of range: this model takes 2 to {limit} tokens ({limit_source})"
                ),
            });
        }
        return Ok(n);
    }
    let mut n = limit;
    for (file, key) in hints {
        let path = dir.join(file);
        if path.is_file() {
            if let Some(m) = read_json(&path)?.get(*key).and_then(Value::as_u64) {
                n = n.min(usize::try_from(m).unwrap_or(usize::MAX));
            }
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Found by the `tokenizer` fuzz target (issue 19): a JSON syntax error inside `decoder`
    /// made `tokenizers::Tokenizer::from_file` panic (`expect("Helper")`).
    #[test]
    fn tokenizer_with_a_syntax_error_in_its_decoder_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let text =
            "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":[],\n\
                    \"normalizer\":null,\"pre_tokenizer\":null,\"post_processor\":null,\n\
                    \"decoder\":{\"type\":x},\n\
                    \"model\":{\"type\":\"WordLevel\",\"vocab\":{},\"unk_token\":\"[UNK]\"}}";
        std::fs::write(dir.path().join("tokenizer.json"), text).unwrap();
        let err = tokenizer(dir.path()).expect_err("a malformed tokenizer.json");
        let message = err.to_string();
        assert!(message.contains("tokenizer.json"), "{message}");
        assert!(message.contains("line 3:"), "{message}");
    }

    /// Found by the `tokenizer` fuzz target (issue 19): tokenizers panics while building a BPE
    /// model whose vocabulary has an empty token; it is a bad file, not a crash.
    #[test]
    fn tokenizer_whose_model_panics_tokenizers_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let text = r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
            "normalizer":null,"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true},
            "post_processor":null,"decoder":null,
            "model":{"type":"BPE","dropout":null,"unk_token":null,"end_of_word_suffix":null,
              "fuse_unk":false,"byte_fallback":false,
              "vocab":{"r":0,"e":1,"f":2,"":9},"merges":["r e","re f"]}}"#;
        std::fs::write(dir.path().join("tokenizer.json"), text).unwrap();
        let err = tokenizer(dir.path()).expect_err("an unusable tokenizer.json");
        assert!(
            err.to_string()
                .contains("tokenizers cannot build a tokenizer"),
            "{err}"
        );
    }

    /// Found by the `tokenizer` fuzz target in CI (issue 19): a misspelt post-processor `type`
    /// still loads as a template (tokenizers reads it untagged) and panicked in `encode` on a
    /// special token its `special_tokens` lacks; recognised by shape, it is refused at load.
    #[test]
    fn tokenizer_template_with_a_misspelt_type_is_still_checked() {
        let dir = tempfile::tempdir().unwrap();
        let text = r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
            "normalizer":null,"pre_tokenizer":{"type":"Whitespace"},
            "post_processor":{"type":"Templat~Processing",
              "single":[{"SpecialToken":{"id":"[CLZ]","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],
              "pair":[{"Sequence":{"id":"A","type_id":0}},{"Sequence":{"id":"B","type_id":1}}],
              "special_tokens":{"[CLS]":{"id":"[CLS]","ids":[0],"tokens":["[CLS]"]}}},
            "decoder":null,
            "model":{"type":"WordLevel","vocab":{"[UNK]":0,"a":1},"unk_token":"[UNK]"}}"#;
        std::fs::write(dir.path().join("tokenizer.json"), text).unwrap();
        let err = tokenizer(dir.path()).expect_err("an unusable tokenizer.json");
        assert!(err.to_string().contains("`[CLZ]`"), "{err}");
    }

    /// Found by the `tokenizer` fuzz target (issue 19): a template naming a special token that
    /// `special_tokens` lacks loaded, then made every `encode` panic ("no entry found for key").
    #[test]
    fn tokenizer_template_with_an_undefined_special_token_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let text = r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
            "normalizer":null,"pre_tokenizer":{"type":"Whitespace"},
            "post_processor":{"type":"TemplateProcessing",
              "single":[{"SpecialToken":{"id":"[CLS]","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],
              "pair":[{"Sequence":{"id":"A","type_id":0}},{"Sequence":{"id":"B","type_id":1}}],
              "special_tokens":{}},
            "decoder":null,
            "model":{"type":"WordLevel","vocab":{"[UNK]":0,"a":1},"unk_token":"[UNK]"}}"#;
        std::fs::write(dir.path().join("tokenizer.json"), text).unwrap();
        let err = tokenizer(dir.path()).expect_err("an unusable tokenizer.json");
        assert!(err.to_string().contains("special token `[CLS]`"), "{err}");
    }

    #[test]
    fn model_types_are_dispatched() {
        let both = [Architecture::Bert, Architecture::DebertaV2];
        let arch = |raw: Value, supported: &[Architecture]| {
            architecture(Path::new("config.json"), &raw, "classifier", supported)
        };
        assert_eq!(arch(json!({}), &both).unwrap(), Architecture::Bert);
        for t in ["bert", "roberta", "xlm-roberta", "camembert"] {
            assert_eq!(
                arch(json!({"model_type": t}), &both).unwrap(),
                Architecture::Bert
            );
        }
        assert_eq!(
            arch(json!({"model_type": "deberta-v2"}), &both).unwrap(),
            Architecture::DebertaV2
        );
        // `deberta-v2` contains "bert" but is not BERT.
        let err = arch(json!({"model_type": "deberta-v2"}), &[Architecture::Bert]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "config.json: model_type `deberta-v2` is not supported for a classifier: expected model_type bert, roberta, xlm-roberta, camembert (BERT)"
        );
        let err = arch(json!({"model_type": 7}), &both).unwrap_err();
        assert!(
            err.to_string().contains("model_type `7` is not supported")
                && err
                    .to_string()
                    .contains("or deberta-v2 (DeBERTa v2 and v3)"),
            "{err}"
        );
    }
}
