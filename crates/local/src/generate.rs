//! Text generation with a GGUF llama-family chat model (candle's quantized llama), greedy.
//!
//! The GGUF file carries the weights, the tokenizer (`tokenizer.ggml.*`, a GPT-2 style BPE) and
//! the chat template (`tokenizer.chat_template`). The template is a Jinja program; rather than
//! embed a Jinja interpreter, the family is recognised from its markers and rendered here:
//! ChatML (`<|im_start|>role\n…<|im_end|>`, SmolLM2, Qwen), Llama 3
//! (`<|start_header_id|>role<|end_header_id|>`), Zephyr (`<|user|>`) and Llama 2 / Mistral
//! (`[INST] … [/INST]`). Another template is a load error naming the file.
//!
//! Decoding is greedy (argmax) up to a maximum number of new tokens, stopping at the end of
//! sequence token or the template's end-of-turn token. A model holds one KV cache, so calls
//! on one [`ChatModel`] run one at a time.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use candle_core::quantized::gguf_file;
use candle_core::quantized::tokenizer::TokenizerFromGguf;
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::{ModelWeights, MAX_SEQ_LEN};

use crate::error::{LocalError, Result};
use crate::files;

/// A chat template family, recognised from the GGUF's `tokenizer.chat_template`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatTemplate {
    /// `<|im_start|>{role}\n{content}<|im_end|>\n`, then `<|im_start|>assistant\n`.
    ChatMl,
    /// `<|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>`.
    Llama3,
    /// `<|{role}|>\n{content}</s>\n`, then `<|assistant|>\n`.
    Zephyr,
    /// `[INST] {system}\n\n{user} [/INST]` (system folded into the first user turn).
    Llama2,
}

impl ChatTemplate {
    /// Recognises the family of a Jinja chat template.
    pub fn detect(template: &str) -> Option<ChatTemplate> {
        if template.contains("<|im_start|>") {
            Some(ChatTemplate::ChatMl)
        } else if template.contains("<|start_header_id|>") {
            Some(ChatTemplate::Llama3)
        } else if template.contains("<|user|>") || template.contains("'<|' + message['role']") {
            Some(ChatTemplate::Zephyr)
        } else if template.contains("[INST]") {
            Some(ChatTemplate::Llama2)
        } else {
            None
        }
    }

    /// The prompt for `messages` (`(role, content)`, roles `system`, `user`, `assistant`),
    /// ending where the assistant's reply starts.
    pub fn render(self, messages: &[(&str, &str)]) -> String {
        let mut s = String::new();
        match self {
            ChatTemplate::ChatMl => {
                for (role, content) in messages {
                    s.push_str(&format!("<|im_start|>{role}\n{content}<|im_end|>\n"));
                }
                s.push_str("<|im_start|>assistant\n");
            }
            ChatTemplate::Llama3 => {
                s.push_str("<|begin_of_text|>");
                for (role, content) in messages {
                    s.push_str(&format!(
                        "<|start_header_id|>{role}<|end_header_id|>\n\n{}<|eot_id|>",
                        content.trim()
                    ));
                }
                s.push_str("<|start_header_id|>assistant<|end_header_id|>\n\n");
            }
            ChatTemplate::Zephyr => {
                for (role, content) in messages {
                    s.push_str(&format!("<|{role}|>\n{content}</s>\n"));
                }
                s.push_str("<|assistant|>\n");
            }
            ChatTemplate::Llama2 => {
                let system: Vec<&str> = messages
                    .iter()
                    .filter(|(r, _)| *r == "system")
                    .map(|(_, c)| *c)
                    .collect();
                let mut pending_system = (!system.is_empty()).then(|| system.join("\n\n"));
                s.push_str("<s>");
                for (role, content) in messages.iter().filter(|(r, _)| *r != "system") {
                    if *role == "assistant" {
                        s.push_str(&format!(" {} </s><s>", content.trim()));
                    } else {
                        let body = match pending_system.take() {
                            Some(sys) => format!("{sys}\n\n{}", content.trim()),
                            None => content.trim().to_string(),
                        };
                        s.push_str(&format!("[INST] {body} [/INST]"));
                    }
                }
            }
        }
        s
    }

    /// The token text that ends an assistant turn.
    fn end_of_turn(self) -> &'static str {
        match self {
            ChatTemplate::ChatMl => "<|im_end|>",
            ChatTemplate::Llama3 => "<|eot_id|>",
            ChatTemplate::Zephyr | ChatTemplate::Llama2 => "</s>",
        }
    }
}

/// Options of a [`ChatModel`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GenerateOptions {
    /// Threads of the forward pass (default: every core).
    pub threads: Option<usize>,
}

/// What one generation produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generation {
    /// The reply text (special tokens removed).
    pub text: String,
    /// Tokens of the rendered prompt.
    pub prompt_tokens: usize,
    /// Tokens generated.
    pub output_tokens: usize,
    /// Whether generation stopped at the token limit rather than at end of turn.
    pub truncated: bool,
}

/// A loaded GGUF chat model. `Send + Sync`; generations run one at a time.
pub struct ChatModel {
    path: PathBuf,
    model: Mutex<ModelWeights>,
    tokenizer: tokenizers::Tokenizer,
    template: ChatTemplate,
    stop: Vec<u32>,
    context_length: usize,
    identity: String,
    pool: rayon::ThreadPool,
}

impl std::fmt::Debug for ChatModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatModel")
            .field("path", &self.path)
            .field("template", &self.template)
            .field("context_length", &self.context_length)
            .finish_non_exhaustive()
    }
}

impl ChatModel {
    /// Loads a `.gguf` file (or the single `.gguf` file of a folder).
    pub fn load(path: &Path, options: &GenerateOptions) -> Result<ChatModel> {
        let path = gguf_path(path)?;
        let sha256 = files::sha256_file(&path)?;
        let mut file = std::fs::File::open(&path)
            .map_err(|e| LocalError::bad_file(&path, format!("cannot read: {e}")))?;
        let content = gguf_file::Content::read(&mut file)
            .map_err(|e| LocalError::bad_file(&path, format!("not a GGUF file: {e}")))?;
        let meta = |k: &str| content.metadata.get(k);
        let arch = meta("general.architecture")
            .and_then(|v| v.to_string().ok().cloned())
            .unwrap_or_default();
        if arch != "llama" {
            return Err(LocalError::bad_file(
                &path,
                format!(
                    "general.architecture is `{arch}`: expected a llama-family model (`llama`)"
                ),
            ));
        }
        let template_text = meta("tokenizer.chat_template")
            .and_then(|v| v.to_string().ok().cloned())
            .ok_or_else(|| {
                LocalError::bad_file(&path, "no tokenizer.chat_template in the GGUF metadata: expected a chat (instruct) model")
            })?;
        let template = ChatTemplate::detect(&template_text).ok_or_else(|| {
            LocalError::bad_file(
                &path,
                "tokenizer.chat_template is not a supported family (ChatML, Llama 3, Zephyr, Llama 2 [INST])",
            )
        })?;
        let tokenizer = tokenizers::Tokenizer::from_gguf(&content).map_err(|e| {
            LocalError::bad_file(
                &path,
                format!("cannot build the tokenizer from tokenizer.ggml.*: {e}"),
            )
        })?;
        let mut stop = Vec::new();
        if let Some(id) = meta("tokenizer.ggml.eos_token_id").and_then(|v| v.to_u32().ok()) {
            stop.push(id);
        }
        if let Some(id) = tokenizer.token_to_id(template.end_of_turn()) {
            stop.push(id);
        }
        let context_length = meta("llama.context_length")
            .and_then(|v| v.to_u32().ok())
            .map_or(MAX_SEQ_LEN, |n| (n as usize).min(MAX_SEQ_LEN));
        let model = ModelWeights::from_gguf(content, &mut file, &Device::Cpu).map_err(|e| {
            LocalError::bad_file(&path, format!("cannot load the llama weights: {e}"))
        })?;
        let identity = files::identity("generate", &serde_json::Value::Null, &sha256);
        Ok(ChatModel {
            path,
            model: Mutex::new(model),
            tokenizer,
            template,
            stop,
            context_length,
            identity,
            pool: files::thread_pool(options.threads)?,
        })
    }

    /// The recognised chat template family.
    pub fn template(&self) -> ChatTemplate {
        self.template
    }

    /// sha256 of the GGUF file (with the kind): the model's identity in cache keys.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Tokens the model attends to (prompt and reply together).
    pub fn context_length(&self) -> usize {
        self.context_length
    }

    /// Generates the assistant's reply to `messages` (`(role, content)`), greedily, at most
    /// `max_tokens` new tokens.
    pub fn generate(&self, messages: &[(&str, &str)], max_tokens: usize) -> Result<Generation> {
        let prompt = self.template.render(messages);
        let encoding = self
            .tokenizer
            .encode(prompt.as_str(), false)
            .map_err(LocalError::inference)?;
        let prompt_ids = encoding.get_ids().to_vec();
        if prompt_ids.is_empty() {
            return Err(LocalError::inference("the prompt has no tokens"));
        }
        if prompt_ids.len() + 1 >= self.context_length {
            return Err(LocalError::inference(format!(
                "the prompt has {} tokens: more than this model's context of {} tokens",
                prompt_ids.len(),
                self.context_length
            )));
        }
        let budget = max_tokens.min(self.context_length - prompt_ids.len());
        let mut model = self.model.lock().unwrap_or_else(|p| p.into_inner());
        model.clear_kv_cache();
        let inf = LocalError::inference;
        let weights: &mut ModelWeights = &mut model;
        let out = self.pool.install(|| -> Result<(Vec<u32>, bool)> {
            let mut generated: Vec<u32> = Vec::new();
            let input = Tensor::new(prompt_ids.as_slice(), &Device::Cpu)
                .and_then(|t| t.unsqueeze(0))
                .map_err(inf)?;
            let mut logits = weights.forward(&input, 0).map_err(inf)?;
            let mut pos = prompt_ids.len();
            loop {
                let next = logits
                    .squeeze(0)
                    .and_then(|l| l.argmax(0))
                    .and_then(|t| t.to_scalar::<u32>())
                    .map_err(inf)?;
                if self.stop.contains(&next) {
                    return Ok((generated, false));
                }
                generated.push(next);
                if generated.len() >= budget {
                    return Ok((generated, true));
                }
                let input = Tensor::new(&[next], &Device::Cpu)
                    .and_then(|t| t.unsqueeze(0))
                    .map_err(inf)?;
                logits = weights.forward(&input, pos).map_err(inf)?;
                pos += 1;
            }
        });
        model.clear_kv_cache();
        drop(model);
        let (ids, truncated) = out?;
        let text = self
            .tokenizer
            .decode(&ids, true)
            .map_err(LocalError::inference)?;
        Ok(Generation {
            text,
            prompt_tokens: prompt_ids.len(),
            output_tokens: ids.len(),
            truncated,
        })
    }
}

/// The `.gguf` file at `path`, or the only `.gguf` file in the folder `path`.
fn gguf_path(path: &Path) -> Result<PathBuf> {
    if !path.exists() {
        return Err(LocalError::MissingPath {
            path: path.to_path_buf(),
            expected: "a GGUF chat model file (.gguf) or a folder holding one".into(),
        });
    }
    if path.is_file() {
        return Ok(path.to_path_buf());
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| LocalError::bad_file(path, format!("cannot list: {e}")))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|x| x.eq_ignore_ascii_case("gguf"))
        })
        .collect();
    found.sort();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(LocalError::MissingFile {
            dir: path.to_path_buf(),
            file: "*.gguf".into(),
            expected: "a GGUF chat model file".into(),
        }),
        n => Err(LocalError::bad_file(
            path,
            format!("holds {n} .gguf files: set `path` to one of them"),
        )),
    }
}
