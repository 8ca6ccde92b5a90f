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
    #[serde(default = "default_max_concurrency")]
    pub max_concurrency: usize,
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
    /// Per-request timeout in seconds.
    #[serde(default = "default_timeout_s")]
    pub timeout_s: f64,
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

const LOCAL_ONLY: &str = "is only for `provider: local`";

fn default_max_concurrency() -> usize {
    8
}
fn default_max_retries() -> u32 {
    4
}
fn default_timeout_s() -> f64 {
    60.0
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
            max_concurrency: default_max_concurrency(),
            temperature: 0.0,
            seed: None,
            max_tokens: None,
            structured_output: StructuredOutput::default(),
            max_retries: default_max_retries(),
            timeout_s: default_timeout_s(),
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
    /// without loading the weights, for a configuration check; a relative path is taken
    /// against `base` (the config's folder). `Ok(None)` when they cannot be known without
    /// loading or fetching the model: an `hf://` path (downloaded only when the model loads),
    /// a path that does not exist or has no `config.json`, another kind, or a build without
    /// local models — the judge's own validation or load reports those. An error for a
    /// `config.json` that cannot be read, or whose `id2label` is malformed (naming the file).
    pub fn classifier_labels(
        &self,
        base: &std::path::Path,
    ) -> Result<Option<Vec<String>>, SettingsError> {
        if self.provider != Provider::Local || self.kind != Some(LocalKind::Classifier) {
            return Ok(None);
        }
        let Ok(Some(path)) = self.check_local_path() else {
            // An `hf://` path, or a `${VAR}` / malformed path that validation reports.
            return Ok(None);
        };
        let path = if path.is_relative() {
            base.join(path)
        } else {
            path
        };
        if !path.join("config.json").is_file() {
            return Ok(None);
        }
        crate::local::classifier_labels(&path)
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
        if self.max_concurrency == 0 {
            return Err(SettingsError::Invalid(
                "`max_concurrency` must be at least 1".into(),
            ));
        }
        if self.max_tokens == Some(0) {
            return Err(SettingsError::Invalid(
                "`max_tokens` must be at least 1".into(),
            ));
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0) {
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
        assert_eq!(s.max_concurrency, 8);
        assert_eq!(s.max_tokens, None);
        assert_eq!(s.max_retries, 4);
        assert_eq!(s.temperature, 0.0);
        assert_eq!(s.timeout_s, 60.0);
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
