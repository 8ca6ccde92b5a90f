//! `JudgeSettings`: one entry of the `judges:` map in `oloproof.yaml`.
//!
//! ```yaml
//! judges:
//!   default:
//!     provider: openai              # openai | anthropic
//!     base_url: https://api.openai.com/v1
//!     model: gpt-4o-mini
//!     api_key_env: OPENAI_API_KEY
//!     max_concurrency: 8
//!     prices: {input_per_mtok: 0.15, output_per_mtok: 0.60}
//! ```
//!
//! A local model (feature `local-models`) takes a path instead of an endpoint:
//!
//! ```yaml
//! judges:
//!   mini:
//!     provider: local
//!     kind: embedding               # embedding | cross_encoder | nli | classifier | generate
//!     path: ${OLOPROOF_MINILM_DIR}  # a model folder (or a .gguf file for `generate`)
//!     threads: 2                    # default: every core
//! ```
//!
//! Unknown keys are errors. The API key itself is never part of the settings: only the name of
//! the environment variable that holds it, read at call time.

use serde::{Deserialize, Serialize};

use crate::error::SettingsError;

/// Which wire format the judge speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// The OpenAI Chat Completions API (`POST {base_url}/chat/completions`) and its embeddings
    /// endpoint; also vLLM, Ollama, llama.cpp server, LM Studio, Gemini's compatible endpoint.
    Openai,
    /// The Anthropic Messages API (`POST {base_url}/messages`), structured output by tool use.
    Anthropic,
    /// A model on disk run in-process (`kind`, `path`); needs the `local-models` feature.
    Local,
}

/// What a `provider: local` judge's model does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LocalKind {
    /// A BERT-family sentence embedder (Hugging Face / sentence-transformers folder).
    Embedding,
    /// A sequence-pair classifier scoring relevance (a reranker).
    CrossEncoder,
    /// A sequence-pair classifier with an entailment label.
    Nli,
    /// A single-text sequence classifier (toxicity, PII, refusal, sentiment: any
    /// `…ForSequenceClassification` model of a supported architecture fed one text), giving
    /// each label's probability; the `classifier` evaluator names the label and threshold.
    Classifier,
    /// A GGUF llama-family chat model, used as an LLM judge.
    Generate,
}

impl LocalKind {
    /// The name used in the config.
    pub fn as_str(self) -> &'static str {
        match self {
            LocalKind::Embedding => "embedding",
            LocalKind::CrossEncoder => "cross_encoder",
            LocalKind::Nli => "nli",
            LocalKind::Classifier => "classifier",
            LocalKind::Generate => "generate",
        }
    }
}

impl Provider {
    /// The name used in the config and in cache keys.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Openai => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Local => "local",
        }
    }
}

/// How the judge is asked for JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredOutput {
    /// OpenAI: `response_format: {type: json_schema, json_schema: {name, schema, strict}}` with
    /// the template's schema. Anthropic: always tool use (see [`Provider::Anthropic`]).
    #[default]
    JsonSchema,
    /// OpenAI: `response_format: {type: json_object}` (JSON mode); the schema is in the prompt.
    JsonObject,
    /// No `response_format`: the schema is stated in the prompt only, for servers that support
    /// neither. Anthropic: plain text reply, parsed as JSON.
    Prompt,
}

impl StructuredOutput {
    /// The name used in the config and in cache keys.
    pub fn as_str(self) -> &'static str {
        match self {
            StructuredOutput::JsonSchema => "json_schema",
            StructuredOutput::JsonObject => "json_object",
            StructuredOutput::Prompt => "prompt",
        }
    }
}

/// Prices per million tokens, in US dollars.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// Dollars per million input (prompt) tokens.
    pub input_per_mtok: f64,
    /// Dollars per million output (completion) tokens.
    pub output_per_mtok: f64,
}

impl Prices {
    /// The cost of `input` and `output` tokens.
    pub fn cost(&self, input: u64, output: u64) -> f64 {
        (input as f64 * self.input_per_mtok + output as f64 * self.output_per_mtok) / 1_000_000.0
    }
}

/// One judge: provider, endpoint, model, sampling and limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeSettings {
    /// The wire format.
    pub provider: Provider,
    /// The API root, e.g. `https://api.openai.com/v1` or `https://api.anthropic.com/v1`;
    /// `/chat/completions`, `/embeddings` or `/messages` is appended. Not used by `local`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub base_url: String,
    /// The model name sent to the provider (`local`: an optional display name).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model: String,
    /// The model used by [`JudgeClient::embed`](crate::JudgeClient::embed); defaults to `model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_model: Option<String>,
    /// The environment variable holding the API key (read at call time, never stored). A
    /// local server that needs no key may leave it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Most requests in flight to this `base_url` (shared by every client of the endpoint).
    /// Unset: [`DEFAULT_MAX_CONCURRENCY`]. On a server on this machine (a loopback
    /// `base_url`) that reports its parallel slots (llama.cpp's `GET /props` `total_slots`),
    /// set or not, it is capped at that count when the client is made: a request beyond the
    /// slots would only wait in the server's queue, its timeout running.
    #[serde(default, serialize_with = "serialize_max_concurrency")]
    pub max_concurrency: Option<usize>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: f64,
    /// Sampling seed, sent where supported (OpenAI-compatible servers); the repeat index is
    /// added to it so self-consistency repeats are distinct draws.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Most output tokens per call. Unset (the default), each call is sent its template's
    /// reply budget ([`JudgeRequest::reply_tokens`](crate::JudgeRequest::reply_tokens): 256
    /// for a single verdict, 64 + 128 per item for a verdict list, so many per claim for a
    /// text restated as claims), so a judge that rambles — a small local model — stops early instead of running
    /// to a flat limit. A reply cut off at the limit is asked again once with twice the limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// How JSON output is requested.
    #[serde(default)]
    pub structured_output: StructuredOutput,
    /// Retries after the first attempt, for 429, 5xx, timeouts and connection errors.
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    /// Per-request timeout in seconds. Unset: [`DEFAULT_TIMEOUT_S`] for a remote provider; on
    /// a server on this machine (a loopback `base_url`), derived from the request's reply
    /// budget at a pessimistic speed ([`timeout_for`](Self::timeout_for): 60 s plus
    /// `max_tokens` at [`LOCAL_TOKENS_PER_S`] tokens/s), since a CPU shared with other work may
    /// decode a few tokens a second and a timed-out local request is not retried.
    #[serde(default, serialize_with = "serialize_timeout_s")]
    pub timeout_s: Option<f64>,
    /// Whether a request that timed out is retried (within `max_retries`). Unset: retried,
    /// except on a server on this machine (a loopback `base_url`: `localhost`, `127.0.0.0/8`,
    /// `[::1]`), where the same request to the same model would only take as long again; 429,
    /// 5xx and connection errors (a server restarting) are retried either way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_timeouts: Option<bool>,
    /// Prices for cost accounting; without them `cost_usd` is `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<Prices>,
    /// `local`: what the model does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<LocalKind>,
    /// `local`: the model folder (a `.gguf` file or its folder for `generate`), or a Hugging
    /// Face Hub model `hf://ORG/NAME[@REVISION]` (`hf://ORG/NAME[@REVISION]/FILE.gguf` for
    /// `generate`) downloaded into the Hugging Face cache at load time; `${VAR}` is replaced by
    /// the environment variable's value; in `oloproof.yaml`, a relative path is relative to the
    /// file's folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `local`: threads of the forward pass (default: every core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// `local`: tokens per input, special tokens included (default: the model's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<usize>,
    /// `local`: inputs per forward pass (default 32 for embeddings, 16 for pairs and
    /// classifier windows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<usize>,
    /// `local` `nli`/`cross_encoder`: the label that means entailed (default: `entailment`
    /// from `config.json`'s `id2label`; a single-logit model needs none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entailment_label: Option<String>,
}

/// The `max_tokens` of a request that has no reply budget and a judge that sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 1024;

/// `max_concurrency` when unset (before a local server's slot count caps it).
pub const DEFAULT_MAX_CONCURRENCY: usize = 8;

/// `timeout_s` when unset, for a remote provider; also the fixed part of a local server's
/// derived timeout (the prompt's processing and the wait for a slot).
pub const DEFAULT_TIMEOUT_S: f64 = 60.0;

/// The decoding speed a local server's derived timeout assumes, in generated tokens per
/// second: pessimistic on purpose. SmolLM2-135M on 2 CPU cores decodes about 110 tokens/s on
/// an idle machine and was seen at about 2 tokens/s with the cores saturated by compilers
/// (BENCHMARKS.md, "Real model server"); a larger model on the same CPU is slower still.
pub const LOCAL_TOKENS_PER_S: f64 = 2.0;

const LOCAL_ONLY: &str = "is only for `provider: local`";

fn default_max_retries() -> u32 {
    4
}

/// An unset `max_concurrency` is recorded as [`DEFAULT_MAX_CONCURRENCY`], as before it could
/// be unset: a judge's recorded settings are its identity (judgment cache keys, run records),
/// which the derived defaults must not change.
fn serialize_max_concurrency<S: serde::Serializer>(
    value: &Option<usize>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(value.unwrap_or(DEFAULT_MAX_CONCURRENCY) as u64)
}

/// An unset `timeout_s` is recorded as [`DEFAULT_TIMEOUT_S`], for the same reason as
/// [`serialize_max_concurrency`].
fn serialize_timeout_s<S: serde::Serializer>(
    value: &Option<f64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(value.unwrap_or(DEFAULT_TIMEOUT_S))
}

impl JudgeSettings {
    /// Settings with the defaults for everything but the four required fields.
    pub fn new(provider: Provider, base_url: &str, model: &str, api_key_env: Option<&str>) -> Self {
        JudgeSettings {
            provider,
            base_url: base_url.to_string(),
            model: model.to_string(),
            embedding_model: None,
            api_key_env: api_key_env.map(str::to_string),
            max_concurrency: None,
            temperature: 0.0,
            seed: None,
            max_tokens: None,
            structured_output: StructuredOutput::default(),
            max_retries: default_max_retries(),
            timeout_s: None,
            retry_timeouts: None,
            prices: None,
            kind: None,
            path: None,
            threads: None,
            max_length: None,
            batch_size: None,
            entailment_label: None,
        }
    }

    /// Settings of a `provider: local` judge of `kind` at `path`, with the defaults.
    pub fn local(kind: LocalKind, path: &str) -> Self {
        let mut s = JudgeSettings::new(Provider::Local, "", "", None);
        s.kind = Some(kind);
        s.path = Some(path.to_string());
        s
    }

    /// The model path of a `local` judge with `${VAR}` replaced from the environment; an
    /// `hf://ORG/NAME[@REVISION][/FILE.gguf]` path is resolved to the Hugging Face cache,
    /// downloading what it lacks (`oloproof_local::hub`; `HF_ENDPOINT`, `HF_HUB_CACHE`,
    /// `HF_TOKEN`, `HF_HUB_OFFLINE` from the environment).
    pub fn local_path(&self) -> Result<std::path::PathBuf, SettingsError> {
        let spec = self.local_spec()?;
        if spec.starts_with("hf://") {
            return crate::local::resolve_hub(&spec, self.kind);
        }
        Ok(std::path::PathBuf::from(spec))
    }

    /// The model path checked without the network: `Ok(Some(path))` for a path on disk (which
    /// may not exist), `Ok(None)` for a well-formed `hf://` path of the right form for `kind`
    /// (downloaded only when the model loads), an error for an unset `${VAR}` or a malformed
    /// `hf://` path.
    pub fn check_local_path(&self) -> Result<Option<std::path::PathBuf>, SettingsError> {
        let spec = self.local_spec()?;
        if spec.starts_with("hf://") {
            return crate::local::check_hub(&spec, self.kind).map(|()| None);
        }
        Ok(Some(std::path::PathBuf::from(spec)))
    }

    /// The labels of a `kind: classifier` judge's model (`config.json`'s `id2label`), read
    /// without loading the weights and without the network, for a configuration check; a
    /// relative path is taken against `base` (the config's folder), an `hf://` path is looked
    /// up in the Hugging Face cache (the snapshot its revision last pointed to; `HF_HUB_CACHE`
    /// and the other Hub variables of the environment). `Ok(None)` when they cannot be known
    /// so: an `hf://` model not in the cache (see
    /// [`classifier_labels_fetching`](Self::classifier_labels_fetching)), a path that does
    /// not exist or has no `config.json`, another kind, or a build without local models — the
    /// judge's own validation or load reports those. An error for a `config.json` that cannot
    /// be read, or whose `id2label` is malformed (naming the file).
    pub fn classifier_labels(
        &self,
        base: &std::path::Path,
    ) -> Result<Option<Vec<String>>, SettingsError> {
        if self.provider != Provider::Local || self.kind != Some(LocalKind::Classifier) {
            return Ok(None);
        }
        let path = match self.check_local_path() {
            Ok(Some(path)) if path.is_relative() => base.join(path),
            Ok(Some(path)) => path,
            // A well-formed `hf://` path: its cached snapshot, if any.
            Ok(None) => match self
                .local_spec()
                .ok()
                .and_then(|spec| crate::local::cached_hub_folder(&spec))
            {
                Some(dir) => dir,
                None => return Ok(None),
            },
            // A `${VAR}` or malformed path, which validation reports.
            Err(_) => return Ok(None),
        };
        if !path.join("config.json").is_file() {
            return Ok(None);
        }
        crate::local::classifier_labels(&path)
    }

    /// [`classifier_labels`](Self::classifier_labels), and for an `hf://` model not in the
    /// cache, its files fetched into the cache first — what loading the judge does a moment
    /// later, which then reads them from there. For the check made once the run is about to
    /// load its models. `Ok(None)` when the model cannot be fetched (no network, a private
    /// repository): loading it reports why.
    pub fn classifier_labels_fetching(
        &self,
        base: &std::path::Path,
    ) -> Result<Option<Vec<String>>, SettingsError> {
        if let Some(labels) = self.classifier_labels(base)? {
            return Ok(Some(labels));
        }
        if self.provider != Provider::Local || self.kind != Some(LocalKind::Classifier) {
            return Ok(None);
        }
        if !matches!(self.check_local_path(), Ok(None)) {
            return Ok(None);
        }
        match self.local_path() {
            Ok(dir) if dir.join("config.json").is_file() => crate::local::classifier_labels(&dir),
            _ => Ok(None),
        }
    }

    /// `path` with each `${VAR}` replaced from the environment.
    fn local_spec(&self) -> Result<String, SettingsError> {
        let raw = self.path.as_deref().unwrap_or("");
        let mut out = String::new();
        let mut rest = raw;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let end = after
                .find('}')
                .ok_or_else(|| SettingsError::UnclosedVariable(raw.to_string()))?;
            let var = &after[..end];
            match std::env::var(var) {
                Ok(v) if !v.is_empty() => out.push_str(&v),
                _ => return Err(SettingsError::UnsetVariable(var.to_string())),
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    /// Checks the values serde cannot: non-empty names, positive limits.
    pub fn validate(&self) -> Result<(), SettingsError> {
        if self.provider == Provider::Local {
            return self.validate_local();
        }
        for (key, set) in [
            ("kind", self.kind.is_some()),
            ("path", self.path.is_some()),
            ("threads", self.threads.is_some()),
            ("max_length", self.max_length.is_some()),
            ("batch_size", self.batch_size.is_some()),
            ("entailment_label", self.entailment_label.is_some()),
        ] {
            if set {
                return Err(SettingsError::Invalid(format!("`{key}` {LOCAL_ONLY}")));
            }
        }
        if self.model.trim().is_empty() {
            return Err(SettingsError::Invalid("`model` is empty".into()));
        }
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return Err(SettingsError::Invalid(format!(
                "`base_url` must start with http:// or https://, got `{}`",
                self.base_url
            )));
        }
        if self.max_concurrency == Some(0) {
            return Err(SettingsError::Invalid(
                "`max_concurrency` must be at least 1".into(),
            ));
        }
        if self.max_tokens == Some(0) {
            return Err(SettingsError::Invalid(
                "`max_tokens` must be at least 1".into(),
            ));
        }
        if self.timeout_s.is_some_and(|t| !(t.is_finite() && t > 0.0)) {
            return Err(SettingsError::Invalid(
                "`timeout_s` must be a positive number".into(),
            ));
        }
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            return Err(SettingsError::Invalid(
                "`temperature` must be a non-negative number".into(),
            ));
        }
        if let Some(p) = &self.prices {
            if !(p.input_per_mtok >= 0.0 && p.output_per_mtok >= 0.0) {
                return Err(SettingsError::Invalid(
                    "`prices` must be non-negative".into(),
                ));
            }
        }
        if let Some(env) = &self.api_key_env {
            if env.trim().is_empty() {
                return Err(SettingsError::Invalid("`api_key_env` is empty".into()));
            }
        }
        Ok(())
    }

    fn validate_local(&self) -> Result<(), SettingsError> {
        let Some(kind) = self.kind else {
            return Err(SettingsError::Invalid(
                "`provider: local` needs `kind` (embedding, cross_encoder, nli, classifier or generate)".into(),
            ));
        };
        match &self.path {
            None => {
                return Err(SettingsError::Invalid(
                    "`provider: local` needs `path` (the model folder or file)".into(),
                ))
            }
            Some(p) if p.trim().is_empty() => {
                return Err(SettingsError::Invalid("`path` is empty".into()))
            }
            Some(_) => {}
        }
        if !self.base_url.is_empty() {
            return Err(SettingsError::Invalid(
                "`base_url` is not used by `provider: local` (remove it; `path` names the model)"
                    .into(),
            ));
        }
        if self.api_key_env.is_some() {
            return Err(SettingsError::Invalid(
                "`api_key_env` is not used by `provider: local`".into(),
            ));
        }
        if self.threads == Some(0) {
            return Err(SettingsError::Invalid(
                "`threads` must be at least 1".into(),
            ));
        }
        if self.batch_size == Some(0) {
            return Err(SettingsError::Invalid(
                "`batch_size` must be at least 1".into(),
            ));
        }
        if self.max_tokens == Some(0) {
            return Err(SettingsError::Invalid(
                "`max_tokens` must be at least 1".into(),
            ));
        }
        if self.entailment_label.is_some()
            && !matches!(kind, LocalKind::Nli | LocalKind::CrossEncoder)
        {
            return Err(SettingsError::Invalid(
                "`entailment_label` is only for `kind: nli` or `kind: cross_encoder`".into(),
            ));
        }
        Ok(())
    }

    /// The `max_tokens` sent with `request`: the configured limit, else the template's reply
    /// budget, else [`DEFAULT_MAX_TOKENS`].
    pub fn max_tokens_for(&self, request: &crate::JudgeRequest) -> u32 {
        match (self.max_tokens, request.reply_tokens) {
            (Some(limit), _) => limit,
            (None, 0) => DEFAULT_MAX_TOKENS,
            (None, budget) => budget,
        }
    }

    /// Whether `base_url` names this machine: host `localhost`, an address in `127.0.0.0/8`,
    /// or `[::1]`.
    pub fn is_loopback(&self) -> bool {
        let rest = self
            .base()
            .split_once("://")
            .map_or(self.base(), |(_, rest)| rest);
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let authority = authority
            .rsplit_once('@')
            .map_or(authority, |(_, host)| host);
        let host = if let Some(v6) = authority.strip_prefix('[') {
            v6.split(']').next().unwrap_or("")
        } else {
            authority.split(':').next().unwrap_or("")
        };
        if host.eq_ignore_ascii_case("localhost") {
            return true;
        }
        host.parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
    }

    /// Whether a timed-out request is retried: `retry_timeouts`, else not on a loopback
    /// server ([`is_loopback`](Self::is_loopback)), else yes.
    pub fn retries_timeouts(&self) -> bool {
        self.retry_timeouts.unwrap_or(!self.is_loopback())
    }

    /// `max_concurrency`, else [`DEFAULT_MAX_CONCURRENCY`] (before a local server's slot
    /// count caps it: [`concurrency_with_slots`](Self::concurrency_with_slots)).
    pub fn configured_concurrency(&self) -> usize {
        self.max_concurrency.unwrap_or(DEFAULT_MAX_CONCURRENCY)
    }

    /// The requests let in flight to a server that reported `slots` parallel slots:
    /// [`configured_concurrency`](Self::configured_concurrency) capped at `slots` on a
    /// loopback server (a remote endpoint's slot count, were it reported, is shared with other
    /// users and is not a cap), at least 1; `slots: None` (not reported) leaves it as
    /// configured.
    pub fn concurrency_with_slots(&self, slots: Option<usize>) -> usize {
        let configured = self.configured_concurrency();
        match slots {
            Some(n) if n > 0 && self.is_loopback() => configured.min(n),
            _ => configured,
        }
    }

    /// The timeout of one request whose reply may be `max_tokens` long (`None`: a request
    /// without a reply budget, such as embeddings): `timeout_s` when set; else, on a loopback
    /// server, [`DEFAULT_TIMEOUT_S`] + `max_tokens` / [`LOCAL_TOKENS_PER_S`] (256 tokens: 188
    /// s; 2,048: 1,084 s), never less than [`DEFAULT_TIMEOUT_S`]; else [`DEFAULT_TIMEOUT_S`].
    pub fn timeout_for(&self, max_tokens: Option<u32>) -> std::time::Duration {
        let seconds = match (self.timeout_s, max_tokens) {
            (Some(t), _) => t,
            (None, Some(tokens)) if self.is_loopback() => {
                DEFAULT_TIMEOUT_S + f64::from(tokens) / LOCAL_TOKENS_PER_S
            }
            (None, _) => DEFAULT_TIMEOUT_S,
        };
        std::time::Duration::from_secs_f64(seconds)
    }

    /// The base URL without a trailing slash.
    pub fn base(&self) -> &str {
        self.base_url.trim_end_matches('/')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_unknown_keys() {
        let s: JudgeSettings = serde_json::from_str(
            r#"{"provider":"openai","base_url":"http://x/v1","model":"m","api_key_env":"K"}"#,
        )
        .unwrap();
        assert_eq!(s.max_concurrency, None);
        assert_eq!(s.configured_concurrency(), 8);
        assert_eq!(s.max_tokens, None);
        assert_eq!(s.max_retries, 4);
        assert_eq!(s.temperature, 0.0);
        assert_eq!(s.timeout_s, None);
        assert_eq!(s.timeout_for(Some(256)), std::time::Duration::from_secs(60));
        // Recorded as before they could be unset: the settings are the judge's identity.
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["max_concurrency"], 8);
        assert_eq!(v["timeout_s"], 60.0);
        assert_eq!(s.structured_output, StructuredOutput::JsonSchema);
        assert!(s.validate().is_ok());
        let err = serde_json::from_str::<JudgeSettings>(
            r#"{"provider":"openai","base_url":"http://x","model":"m","top_k":3}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.to_string().contains("top_k"), "{err}");
        let err = serde_json::from_str::<JudgeSettings>(
            r#"{"provider":"localhost","base_url":"http://x","model":"m"}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.to_string().contains("localhost"), "{err}");
    }

    #[test]
    fn local_settings() {
        let s: JudgeSettings =
            serde_json::from_str(r#"{"provider":"local","kind":"embedding","path":"m/mini"}"#)
                .unwrap();
        assert!(s.validate().is_ok());
        // Serialised without the HTTP fields it does not use.
        let v = serde_json::to_value(&s).unwrap();
        assert!(v.get("base_url").is_none() && v.get("model").is_none());
        let no_kind: JudgeSettings =
            serde_json::from_str(r#"{"provider":"local","path":"m"}"#).unwrap();
        assert!(no_kind
            .validate()
            .unwrap_err()
            .to_string()
            .contains("needs `kind`"));
        let no_path: JudgeSettings =
            serde_json::from_str(r#"{"provider":"local","kind":"nli"}"#).unwrap();
        assert!(no_path
            .validate()
            .unwrap_err()
            .to_string()
            .contains("needs `path`"));
        let http: JudgeSettings = serde_json::from_str(
            r#"{"provider":"openai","base_url":"http://x/v1","model":"m","path":"p"}"#,
        )
        .unwrap();
        assert_eq!(
            http.validate().unwrap_err(),
            SettingsError::Invalid("`path` is only for `provider: local`".into())
        );
        let classifier: JudgeSettings =
            serde_json::from_str(r#"{"provider":"local","kind":"classifier","path":"m/tox"}"#)
                .unwrap();
        assert!(classifier.validate().is_ok());
        assert_eq!(LocalKind::Classifier.as_str(), "classifier");
        // No such folder: nothing to read, the judge's validation says so.
        assert_eq!(
            classifier
                .classifier_labels(std::path::Path::new("/nonexistent"))
                .unwrap(),
            None
        );
        let mut label = JudgeSettings::local(LocalKind::Embedding, "m");
        label.entailment_label = Some("entailment".into());
        assert!(label
            .validate()
            .unwrap_err()
            .to_string()
            .contains("only for `kind: nli`"));
        // `${VAR}` in the path comes from the environment.
        let s = JudgeSettings::local(LocalKind::Embedding, "${HOME}/models");
        let home = std::env::var("HOME").unwrap();
        assert_eq!(
            s.local_path().unwrap(),
            std::path::PathBuf::from(format!("{home}/models"))
        );
        let s = JudgeSettings::local(LocalKind::Embedding, "${OLOPROOF_SURELY_UNSET_VAR}/m");
        assert!(s
            .local_path()
            .unwrap_err()
            .to_string()
            .contains("OLOPROOF_SURELY_UNSET_VAR"));
    }

    #[test]
    fn loopback_servers_do_not_retry_timeouts_by_default() {
        for (url, loopback) in [
            ("http://127.0.0.1:8080/v1", true),
            ("http://localhost/v1", true),
            ("http://LOCALHOST:1234", true),
            ("http://127.3.2.1:9/v1", true),
            ("http://[::1]:8080/v1", true),
            ("http://user:pw@127.0.0.1:8080/v1", true),
            ("https://api.openai.com/v1", false),
            ("http://10.0.0.5:8000/v1", false),
            ("http://[2001:db8::1]:8080/v1", false),
            ("http://localhost.example.com/v1", false),
        ] {
            let s = JudgeSettings::new(Provider::Openai, url, "m", None);
            assert_eq!(s.is_loopback(), loopback, "{url}");
            assert_eq!(s.retries_timeouts(), !loopback, "{url}");
        }
        let mut s = JudgeSettings::new(Provider::Openai, "http://127.0.0.1:8080/v1", "m", None);
        s.retry_timeouts = Some(true);
        assert!(s.retries_timeouts());
        let mut s = JudgeSettings::new(Provider::Openai, "https://api.openai.com/v1", "m", None);
        s.retry_timeouts = Some(false);
        assert!(!s.retries_timeouts());
    }

    #[test]
    fn local_servers_get_a_timeout_from_the_reply_budget_and_their_slots() {
        use std::time::Duration;
        let local = JudgeSettings::new(Provider::Openai, "http://127.0.0.1:8080/v1", "m", None);
        let remote = JudgeSettings::new(Provider::Openai, "https://api.openai.com/v1", "m", None);
        // 60 s plus the reply budget at 2 tokens/s on this machine; 60 s elsewhere.
        assert_eq!(local.timeout_for(Some(256)), Duration::from_secs(60 + 128));
        assert_eq!(
            local.timeout_for(Some(2048)),
            Duration::from_secs(60 + 1024)
        );
        assert_eq!(local.timeout_for(None), Duration::from_secs(60));
        assert_eq!(remote.timeout_for(Some(2048)), Duration::from_secs(60));
        // A configured timeout wins everywhere.
        let mut set = local.clone();
        set.timeout_s = Some(5.0);
        assert_eq!(set.timeout_for(Some(2048)), Duration::from_secs(5));
        // Concurrency: the configured value (default 8), capped by a local server's slots.
        assert_eq!(local.concurrency_with_slots(Some(2)), 2);
        assert_eq!(local.concurrency_with_slots(None), 8);
        assert_eq!(
            local.concurrency_with_slots(Some(0)),
            8,
            "no slots reported"
        );
        assert_eq!(local.concurrency_with_slots(Some(32)), 8);
        assert_eq!(
            remote.concurrency_with_slots(Some(2)),
            8,
            "not a cap remotely"
        );
        let mut one = local.clone();
        one.max_concurrency = Some(1);
        assert_eq!(one.concurrency_with_slots(Some(2)), 1);
        // Zero and non-positive values are refused, not defaulted.
        let mut zero = local.clone();
        zero.max_concurrency = Some(0);
        assert!(zero
            .validate()
            .unwrap_err()
            .to_string()
            .contains("max_concurrency"));
        let mut never = local;
        never.timeout_s = Some(0.0);
        assert!(never
            .validate()
            .unwrap_err()
            .to_string()
            .contains("timeout_s"));
    }

    #[test]
    fn max_tokens_defaults_to_the_templates_budget() {
        let mut s = JudgeSettings::new(Provider::Openai, "http://x/v1", "m", None);
        let verdict = crate::templates::groundedness("Q?", &["c".into()], "A.", 0);
        assert_eq!(s.max_tokens_for(&verdict), 256);
        let claims: Vec<String> = (0..10).map(|i| format!("claim {i}")).collect();
        let list = crate::templates::claim_verification(&["c".into()], &claims, 0);
        assert_eq!(s.max_tokens_for(&list), 64 + 128 * 10);
        let mut bare = verdict.clone();
        bare.reply_tokens = 0;
        assert_eq!(s.max_tokens_for(&bare), DEFAULT_MAX_TOKENS);
        s.max_tokens = Some(100);
        assert_eq!(s.max_tokens_for(&list), 100, "a configured limit wins");
    }

    #[test]
    fn cost_from_prices() {
        let p = Prices {
            input_per_mtok: 0.15,
            output_per_mtok: 0.60,
        };
        assert!((p.cost(1_000_000, 500_000) - 0.45).abs() < 1e-12);
    }
}
