//! `JudgeClient`: one configured judge, safe to share between worker threads.
//!
//! A call goes: limiter slot for the endpoint → HTTP request → on 429 halve the endpoint's
//! limit and wait `Retry-After` (or the backoff) → on 5xx, 408, timeouts and connection errors
//! wait an exponential backoff with jitter → at most `max_retries` retries → parse the reply →
//! validate against the schema and the caller's check → on failure one repair request (the
//! conversation plus the model's raw reply and a user message stating the error) → the
//! judgment, or [`JudgeError::InvalidOutput`].
//!
//! A `provider: local` client loads its model once, in [`JudgeClient::new`] (a load error is a
//! settings error), and answers in-process: embeddings from a `kind: embedding` model, pair
//! scores from `nli`/`cross_encoder`, label probabilities from `classifier`, and chat
//! completions from a `generate` model — whose
//! replies go through the same parsing, validation and one repair, the schema being stated in
//! the prompt. Its cache keys add the model's content identity (sha256 of `config.json` and
//! the weights), so replacing the files at the same path is a new model.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};

use crate::cache::{cache_key, CallRecord, JudgeCache};
use crate::error::{JudgeError, ReplyError};
use crate::limiter::{self, Limiter};
use crate::local::{self, LocalFailure, LocalModel, TextClassification};
use crate::request::{JudgeRequest, JudgeResponse, Message, Role, Usage};
use crate::schema;
use crate::settings::{JudgeSettings, Provider, StructuredOutput};

/// The `anthropic-version` header sent to the Messages API.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Texts per `/embeddings` request.
pub const EMBED_BATCH: usize = 64;
/// The longest `Retry-After` honoured; longer values are capped to this.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);
/// The name of the single tool offered to Anthropic models for structured output.
pub const ANTHROPIC_TOOL: &str = "record_judgment";

/// Judge requests of this process waiting for an answer right now (HTTP requests and local
/// chat completions), for progress lines.
static IN_FLIGHT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The number of judge requests of this process waiting for an answer right now.
pub fn calls_in_flight() -> usize {
    IN_FLIGHT.load(Ordering::Relaxed)
}

/// Counts one request in flight for as long as it lives.
struct InFlight;

impl InFlight {
    fn enter() -> InFlight {
        IN_FLIGHT.fetch_add(1, Ordering::Relaxed);
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Running totals of a client, for run-level usage, cost and `--max-cost`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UsageTotals {
    /// Successful HTTP responses (chat and embeddings) that reported usage.
    pub calls: u64,
    /// Tokens billed.
    pub usage: Usage,
    /// Cost in dollars (0 without prices).
    pub cost_usd: f64,
}

/// A configured judge. `Send + Sync`: share it (e.g. in an `Arc`) between worker threads.
pub struct JudgeClient {
    name: String,
    settings: JudgeSettings,
    agent: ureq::Agent,
    limiter: Arc<Limiter>,
    backoff_base: Duration,
    backoff_max: Duration,
    retry_after_cap: Duration,
    totals: Mutex<UsageTotals>,
    /// The loaded model of a `provider: local` judge.
    local: Option<Arc<LocalModel>>,
    /// The parallel slots a local server reported (llama.cpp's `GET /props` `total_slots`)
    /// when the client was made.
    server_slots: Option<usize>,
    /// The requests let in flight to the endpoint by this client: `max_concurrency` (or its
    /// default) capped at `server_slots`.
    concurrency: usize,
    /// Set once the provider refused a strict schema's bounds (`minItems`, `maxItems`,
    /// `minimum`, `maximum`): later requests send the schema without them.
    strip_schema_bounds: AtomicBool,
}

impl std::fmt::Debug for JudgeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The settings hold only the variable's name, never the key.
        f.debug_struct("JudgeClient")
            .field("name", &self.name)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// One parsed provider reply.
struct Reply {
    raw: String,
    usage: Usage,
    truncated: bool,
    /// OpenAI `choices[0].logprobs.content` (per generated token), when returned.
    logprobs: Option<Value>,
}

/// A response body, or the reason it is not one.
enum Outcome {
    Ok(Value),
    Retry {
        error: JudgeError,
        wait: Option<Duration>,
        rate_limited: bool,
    },
    Fail(JudgeError),
}

impl JudgeClient {
    /// A client for the judge `name` (its key in `judges:`). Checks the settings; the API key
    /// is read later, at each call.
    pub fn new(name: &str, settings: JudgeSettings) -> Result<JudgeClient, JudgeError> {
        settings.validate().map_err(|e| JudgeError::Settings {
            judge: name.into(),
            message: e.to_string(),
        })?;
        // The timeout is set per request (`JudgeSettings::timeout_for`: on a local server it
        // depends on the reply budget).
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .user_agent(concat!("oloproof/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        let (local, endpoint) = if settings.provider == Provider::Local {
            let model = local::load(&settings).map_err(|e| JudgeError::Settings {
                judge: name.into(),
                message: match e {
                    LocalFailure::Load(m) | LocalFailure::Call(m) => m,
                },
            })?;
            let endpoint = format!("local:{}", settings.path.as_deref().unwrap_or(""));
            (Some(Arc::new(model)), endpoint)
        } else {
            (None, settings.base().to_string())
        };
        let server_slots = if settings.provider == Provider::Openai && settings.is_loopback() {
            server_slots(&agent, &settings)
        } else {
            None
        };
        let concurrency = settings.concurrency_with_slots(server_slots);
        if server_slots.is_some_and(|n| n < settings.configured_concurrency()) {
            tracing::debug!(judge = %name, slots = ?server_slots, concurrency, "the local server's slots cap max_concurrency");
        }
        let limiter = limiter::for_endpoint(&endpoint, concurrency);
        Ok(JudgeClient {
            local,
            server_slots,
            concurrency,
            name: name.to_string(),
            settings,
            agent,
            limiter,
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
            retry_after_cap: MAX_RETRY_AFTER,
            totals: Mutex::new(UsageTotals::default()),
            strip_schema_bounds: AtomicBool::new(false),
        })
    }

    /// Sets the backoff schedule (default: 500 ms doubling, capped at 30 s). Tests use small
    /// values.
    pub fn with_backoff(mut self, base: Duration, max: Duration) -> Self {
        self.backoff_base = base;
        self.backoff_max = max;
        self
    }

    /// Sets the longest `Retry-After` honoured (default [`MAX_RETRY_AFTER`]); longer values
    /// are capped to it, with a warning. Tests use small values.
    pub fn with_retry_after_cap(mut self, cap: Duration) -> Self {
        self.retry_after_cap = cap;
        self
    }

    /// The judge's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The judge's settings.
    pub fn settings(&self) -> &JudgeSettings {
        &self.settings
    }

    /// The parallel slots the server reported when the client was made (a loopback
    /// OpenAI-compatible server answering `GET /props` with `total_slots`, as llama.cpp's
    /// `llama-server` does); `None` otherwise.
    pub fn server_slots(&self) -> Option<usize> {
        self.server_slots
    }

    /// The most requests this client lets in flight: `max_concurrency` (default
    /// [`DEFAULT_MAX_CONCURRENCY`](crate::DEFAULT_MAX_CONCURRENCY)) capped at
    /// [`server_slots`](Self::server_slots) (see
    /// [`JudgeSettings::concurrency_with_slots`]); the endpoint's adaptive limit may be lower
    /// still after a 429.
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// The content identity of a `provider: local` judge's model (sha256 over its
    /// `config.json` and weights, or of its GGUF file); `None` for HTTP providers, whose model
    /// is identified by name.
    pub fn model_identity(&self) -> Option<String> {
        self.local.as_ref().map(|m| m.identity())
    }

    /// The judgment cache key of `request`: [`cache_key`], extended with the model identity
    /// for a local model.
    pub fn judgment_key(&self, request: &JudgeRequest) -> String {
        let key = cache_key(&self.settings, request);
        match self.model_identity() {
            None => key,
            Some(identity) => oloproof_core::identity::content_hash(&json!({
                "kind": "local_judgment",
                "judgment": key,
                "model_identity": identity,
            })),
        }
    }

    /// The error of a failed local call.
    fn local_error(&self, failure: LocalFailure) -> JudgeError {
        let message = match failure {
            LocalFailure::Load(m) | LocalFailure::Call(m) => m,
        };
        JudgeError::Protocol {
            judge: self.name.clone(),
            url: format!(
                "local model {}",
                self.settings.path.as_deref().unwrap_or("")
            ),
            message,
        }
    }

    /// Scores `(premise, hypothesis)` pairs with a `kind: nli` (entailment probability) or
    /// `kind: cross_encoder` (relevance) local judge, in `[0, 1]`; long premises are scored
    /// as the best of overlapping windows.
    pub fn score_pairs(&self, pairs: &[(String, String)]) -> Result<Vec<f32>, JudgeError> {
        match &self.local {
            Some(model) => model.score_pairs(pairs).map_err(|e| self.local_error(e)),
            None => Err(JudgeError::Unsupported {
                judge: self.name.clone(),
                message: "pair scores need a `provider: local` judge of `kind: nli` or `kind: cross_encoder`".into(),
            }),
        }
    }

    /// The label probabilities of each text by a `kind: classifier` local judge (softmax
    /// over the labels, or independent sigmoids for a multi-label model, as `transformers`'
    /// text-classification pipeline), long texts windowed.
    pub fn classify(&self, texts: &[String]) -> Result<Vec<TextClassification>, JudgeError> {
        match &self.local {
            Some(model) => {
                let _span =
                    tracing::debug_span!("local_classify", judge = %self.name, texts = texts.len())
                        .entered();
                model.classify(texts).map_err(|e| self.local_error(e))
            }
            None => Err(JudgeError::Unsupported {
                judge: self.name.clone(),
                message:
                    "text classification needs a `provider: local` judge of `kind: classifier`"
                        .into(),
            }),
        }
    }

    /// The endpoint's current concurrency limit (shrinks on 429, grows back on success).
    pub fn concurrency_limit(&self) -> usize {
        self.limiter.limit()
    }

    /// Usage and cost of every successful response of this client so far.
    pub fn totals(&self) -> UsageTotals {
        *self.totals.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Fails early when the API key variable is named but unset.
    pub fn check_api_key(&self) -> Result<(), JudgeError> {
        self.api_key().map(|_| ())
    }

    /// The cost of `usage` with this judge's prices.
    pub fn cost(&self, usage: Usage) -> Option<f64> {
        self.settings
            .prices
            .map(|p| p.cost(usage.input_tokens, usage.output_tokens))
    }

    /// Sends `request` and validates the reply against its schema only.
    pub fn complete(&self, request: &JudgeRequest) -> Result<JudgeResponse, JudgeError> {
        self.complete_validated(request, &|_| Ok(()))
    }

    /// Sends `request`, validates the reply against its schema and then `check` (a semantic
    /// check such as "one verdict per claim, ids matching"); on failure asks once more with
    /// the validation error, then gives up with [`JudgeError::InvalidOutput`].
    pub fn complete_validated(
        &self,
        request: &JudgeRequest,
        check: &dyn Fn(&Value) -> Result<(), ReplyError>,
    ) -> Result<JudgeResponse, JudgeError> {
        self.complete_inner(request, check, None).map(|(r, _)| r)
    }

    /// [`complete_validated`](Self::complete_validated), asking an `openai` provider for
    /// token log-probabilities when `top_logprobs` is given; also returns the provider's
    /// per-token `logprobs.content` of the validated reply, when there is one.
    fn complete_inner(
        &self,
        request: &JudgeRequest,
        check: &dyn Fn(&Value) -> Result<(), ReplyError>,
        top_logprobs: Option<u8>,
    ) -> Result<(JudgeResponse, Option<Value>), JudgeError> {
        let _span = tracing::debug_span!("judge_call", judge = %self.name, template = %request.template_id, repeat = request.repeat_index).entered();
        let validate = |reply: &Reply, max_tokens: u32| -> Result<Value, ReplyError> {
            let parsed = schema::parse_reply(&reply.raw).map_err(|e| {
                if reply.truncated {
                    ReplyError::new(format!(
                        "{e}; the reply was cut off at max_tokens ({max_tokens})"
                    ))
                } else {
                    e
                }
            })?;
            schema::validate(&request.schema, &parsed)?;
            check(&parsed)?;
            Ok(parsed)
        };
        let max_tokens = self.settings.max_tokens_for(request);
        let (first, mut attempts) =
            self.chat(request, &request.messages, top_logprobs, max_tokens)?;
        let mut usage = first.usage;
        let first_error = match validate(&first, max_tokens) {
            Ok(parsed) => return Ok(self.response(first, parsed, usage, attempts, false)),
            Err(e) => e,
        };
        // A reply cut off at the limit gets one fresh request with twice the limit: it is never
        // sent back (a repair conversation would only lengthen the prompt, and overflow a small
        // server's context). Any other invalid reply gets one repair request stating the error.
        let (messages, limit, second_request) = if first.truncated {
            let retry_max = max_tokens.saturating_mul(2);
            tracing::debug!(judge = %self.name, template = %request.template_id, max_tokens, retry_max, "reply cut off at max_tokens, retrying with a larger limit");
            (
                request.messages.clone(),
                retry_max,
                format!("the retry with max_tokens {retry_max}"),
            )
        } else {
            tracing::debug!(judge = %self.name, template = %request.template_id, error = %first_error, "invalid judge output, repairing");
            let mut messages = request.messages.clone();
            messages.push(Message::assistant(first.raw.clone()));
            messages.push(Message::user(format!(
                "Your reply could not be used: {first_error}. Reply again with only one JSON object that \
                 satisfies the required schema and fixes this error."
            )));
            (messages, max_tokens, "the repair request".to_string())
        };
        let (second, more) = match self.chat(request, &messages, top_logprobs, limit) {
            Ok(r) => r,
            // The second request itself failed: both failures are named, the last first.
            Err(e) => {
                tracing::debug!(judge = %self.name, error = %e, "{second_request} failed");
                return Err(JudgeError::InvalidOutput {
                    error: format!("{second_request} failed: {e}"),
                    first_error: Some(first_error.to_string()),
                    raw: first.raw,
                    usage,
                    attempts: attempts + e.attempts(),
                });
            }
        };
        attempts += more;
        usage = usage.plus(second.usage);
        match validate(&second, limit) {
            Ok(parsed) => Ok(self.response(second, parsed, usage, attempts, true)),
            Err(_) if first.truncated && second.truncated => Err(JudgeError::Truncated {
                judge: self.name.clone(),
                max_tokens,
                retry_max_tokens: limit,
                raw: second.raw,
                usage,
                attempts,
            }),
            Err(error) => Err(JudgeError::InvalidOutput {
                error: error.to_string(),
                first_error: Some(first_error.to_string()),
                raw: second.raw,
                usage,
                attempts,
            }),
        }
    }

    /// The validated judgment of `reply`, with the usage and requests of the whole call.
    fn response(
        &self,
        reply: Reply,
        parsed: Value,
        usage: Usage,
        attempts: u32,
        repaired: bool,
    ) -> (JudgeResponse, Option<Value>) {
        (
            JudgeResponse {
                raw: reply.raw,
                parsed,
                usage,
                cost_usd: self.cost(usage),
                attempts,
                repaired,
            },
            reply.logprobs,
        )
    }

    /// [`complete_validated`](Self::complete_validated) through `cache`: a hit (whose stored
    /// judgment still passes the schema and `check`) sends nothing; a fresh judgment is stored.
    /// Errors are never cached.
    pub fn judge(
        &self,
        cache: &dyn JudgeCache,
        request: &JudgeRequest,
        check: &dyn Fn(&Value) -> Result<(), ReplyError>,
    ) -> Result<CallRecord, JudgeError> {
        let key = self.judgment_key(request);
        if let Some((raw, parsed)) = cache.get(&key) {
            if schema::validate(&request.schema, &parsed)
                .and_then(|()| check(&parsed))
                .is_ok()
            {
                return Ok(CallRecord {
                    cache_key: key,
                    template_id: request.template_id.clone(),
                    template_version: request.template_version,
                    repeat_index: request.repeat_index,
                    raw,
                    parsed,
                    usage: Usage::default(),
                    cost_usd: self.cost(Usage::default()),
                    cached: true,
                    attempts: 0,
                    repaired: false,
                });
            }
        }
        let response = self.complete_validated(request, check)?;
        cache.put(&key, &response.raw, &response.parsed);
        Ok(CallRecord {
            cache_key: key,
            template_id: request.template_id.clone(),
            template_version: request.template_version,
            repeat_index: request.repeat_index,
            raw: response.raw,
            parsed: response.parsed,
            usage: response.usage,
            cost_usd: response.cost_usd,
            cached: false,
            attempts: response.attempts,
            repaired: response.repaired,
        })
    }

    /// [`judge`](Self::judge) asking for token log-probabilities (OpenAI `logprobs: true`,
    /// `top_logprobs`), for probability-weighted scores. Returns the call and the reply's
    /// per-token `logprobs.content` — `None` when the provider returned none (Anthropic has no
    /// log-probabilities; some OpenAI-compatible servers ignore the parameter). The cache key
    /// is [`cache_key`] extended with `top_logprobs`, and the cache keeps the log-probabilities
    /// with the judgment (`{"judgment", "logprobs"}`), so a hit returns them too.
    pub fn judge_with_logprobs(
        &self,
        cache: &dyn JudgeCache,
        request: &JudgeRequest,
        check: &dyn Fn(&Value) -> Result<(), ReplyError>,
        top_logprobs: u8,
    ) -> Result<(CallRecord, Option<Value>), JudgeError> {
        let key = oloproof_core::identity::content_hash(&json!({
            "kind": "judgment_with_logprobs",
            "judgment": self.judgment_key(request),
            "top_logprobs": top_logprobs,
        }));
        if let Some((raw, stored)) = cache.get(&key) {
            let parsed = stored.get("judgment").cloned().unwrap_or(Value::Null);
            if schema::validate(&request.schema, &parsed)
                .and_then(|()| check(&parsed))
                .is_ok()
            {
                let logprobs = stored.get("logprobs").cloned().filter(|v| !v.is_null());
                return Ok((
                    CallRecord {
                        cache_key: key,
                        template_id: request.template_id.clone(),
                        template_version: request.template_version,
                        repeat_index: request.repeat_index,
                        raw,
                        parsed,
                        usage: Usage::default(),
                        cost_usd: self.cost(Usage::default()),
                        cached: true,
                        attempts: 0,
                        repaired: false,
                    },
                    logprobs,
                ));
            }
        }
        let (response, logprobs) = self.complete_inner(request, check, Some(top_logprobs))?;
        cache.put(
            &key,
            &response.raw,
            &json!({"judgment": response.parsed, "logprobs": logprobs}),
        );
        Ok((
            CallRecord {
                cache_key: key,
                template_id: request.template_id.clone(),
                template_version: request.template_version,
                repeat_index: request.repeat_index,
                raw: response.raw,
                parsed: response.parsed,
                usage: response.usage,
                cost_usd: response.cost_usd,
                cached: false,
                attempts: response.attempts,
                repaired: response.repaired,
            },
            logprobs,
        ))
    }

    /// Embeds `texts` with the OpenAI `/embeddings` endpoint (`embedding_model`, else `model`),
    /// in batches of [`EMBED_BATCH`], with the same retry policy. Usage is added to the totals.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, JudgeError> {
        if let Some(model) = &self.local {
            let _span =
                tracing::debug_span!("local_embed", judge = %self.name, texts = texts.len())
                    .entered();
            return model.embed(texts).map_err(|e| self.local_error(e));
        }
        if self.settings.provider != Provider::Openai {
            return Err(JudgeError::Unsupported {
                judge: self.name.clone(),
                message:
                    "embeddings need an `openai` provider (Anthropic has no embeddings endpoint)"
                        .into(),
            });
        }
        let url = format!("{}/embeddings", self.settings.base());
        let model = self
            .settings
            .embedding_model
            .as_deref()
            .unwrap_or(&self.settings.model);
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(EMBED_BATCH) {
            let body = json!({"model": model, "input": batch});
            let (value, _) = self.post(&url, &body, self.settings.timeout_for(None))?;
            let protocol = |message: String| JudgeError::Protocol {
                judge: self.name.clone(),
                url: url.clone(),
                message,
            };
            let data = value
                .get("data")
                .and_then(Value::as_array)
                .ok_or_else(|| protocol("no `data` array".into()))?;
            let mut vectors: Vec<Option<Vec<f32>>> = vec![None; batch.len()];
            for (pos, item) in data.iter().enumerate() {
                let index = item
                    .get("index")
                    .and_then(Value::as_u64)
                    .map_or(pos, |i| i as usize);
                let emb = item
                    .get("embedding")
                    .and_then(Value::as_array)
                    .ok_or_else(|| protocol(format!("data[{pos}] has no `embedding` array")))?;
                let v: Vec<f32> = emb
                    .iter()
                    .map(|x| x.as_f64().map(|f| f as f32))
                    .collect::<Option<_>>()
                    .ok_or_else(|| protocol(format!("data[{pos}].embedding is not numeric")))?;
                match vectors.get_mut(index) {
                    Some(slot) => *slot = Some(v),
                    None => return Err(protocol(format!("embedding index {index} out of range"))),
                }
            }
            for (i, v) in vectors.into_iter().enumerate() {
                out.push(v.ok_or_else(|| protocol(format!("no embedding for input {i}")))?);
            }
            let input = value
                .pointer("/usage/prompt_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            self.record(Usage {
                input_tokens: input,
                output_tokens: 0,
            });
        }
        Ok(out)
    }

    /// The embedding cache key of `text`: sha256 of the canonical JSON of the provider, the
    /// embedding model (`embedding_model`, else `model`), the base URL, the local model's
    /// content identity (`None` for HTTP providers) and the text.
    pub fn embedding_key(&self, text: &str) -> String {
        let model = self
            .settings
            .embedding_model
            .as_deref()
            .unwrap_or(&self.settings.model);
        oloproof_core::identity::content_hash(&json!({
            "kind": "embedding",
            "provider": self.settings.provider.as_str(),
            "model": model,
            "base_url": self.settings.base(),
            "model_identity": self.model_identity(),
            "text": text,
        }))
    }

    /// [`JudgeClient::embed`] through `cache`: vectors stored under
    /// [`JudgeClient::embedding_key`] are reused bit for bit, the others are embedded in one
    /// call (in the order given) and stored. Errors are never stored.
    pub fn embed_cached(
        &self,
        cache: &dyn JudgeCache,
        texts: &[String],
    ) -> Result<Vec<Vec<f32>>, JudgeError> {
        let keys: Vec<String> = texts.iter().map(|t| self.embedding_key(t)).collect();
        let mut out: Vec<Option<Vec<f32>>> = keys
            .iter()
            .map(|k| cache.get(k).and_then(|(_, v)| decode_vector(&v)))
            .collect();
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
        if !missing.is_empty() {
            let todo: Vec<String> = missing.iter().map(|&i| texts[i].clone()).collect();
            let vectors = self.embed(&todo)?;
            if vectors.len() != todo.len() {
                return Err(JudgeError::Protocol {
                    judge: self.name.clone(),
                    url: "embeddings".into(),
                    message: format!("{} vectors for {} texts", vectors.len(), todo.len()),
                });
            }
            for (&i, v) in missing.iter().zip(vectors) {
                cache.put(&keys[i], "", &encode_vector(&v));
                out[i] = Some(v);
            }
        }
        Ok(out.into_iter().flatten().collect())
    }

    fn record(&self, usage: Usage) {
        let cost = self.cost(usage).unwrap_or(0.0);
        let mut t = self.totals.lock().unwrap_or_else(|p| p.into_inner());
        t.calls += 1;
        t.usage = t.usage.plus(usage);
        t.cost_usd += cost;
    }

    fn api_key(&self) -> Result<Option<String>, JudgeError> {
        let Some(env) = &self.settings.api_key_env else {
            return Ok(None);
        };
        match std::env::var(env) {
            Ok(k) if !k.trim().is_empty() => Ok(Some(k.trim().to_string())),
            _ => Err(JudgeError::MissingApiKey {
                judge: self.name.clone(),
                env: env.clone(),
            }),
        }
    }

    /// The seed sent for a repeat: `seed + repeat_index`, so repeats are distinct draws.
    fn seed_for(&self, request: &JudgeRequest) -> Option<u64> {
        self.settings
            .seed
            .map(|s| s.wrapping_add(u64::from(request.repeat_index)))
    }

    /// Sends one chat request (with retries) and extracts the reply text; `max_tokens` is
    /// the settings' limit, or the larger one of a retry after a cut-off reply.
    fn chat(
        &self,
        request: &JudgeRequest,
        messages: &[Message],
        top_logprobs: Option<u8>,
        max_tokens: u32,
    ) -> Result<(Reply, u32), JudgeError> {
        if let Some(model) = &self.local {
            // The schema is stated in the prompt; log-probabilities are not available.
            let messages = Self::with_schema_in_prompt(messages, &request.schema);
            let turns: Vec<(&str, &str)> = messages
                .iter()
                .map(|m| {
                    let role = match m.role {
                        Role::System => "system",
                        Role::User => "user",
                        Role::Assistant => "assistant",
                    };
                    (role, m.content.as_str())
                })
                .collect();
            let _in_flight = InFlight::enter();
            let reply = model
                .chat(&turns, max_tokens as usize)
                .map_err(|e| self.local_error(e))?;
            let usage = Usage {
                input_tokens: reply.input_tokens,
                output_tokens: reply.output_tokens,
            };
            self.record(usage);
            return Ok((
                Reply {
                    raw: reply.text,
                    usage,
                    truncated: reply.truncated,
                    logprobs: None,
                },
                1,
            ));
        }
        let body = |strip_bounds: bool| match self.settings.provider {
            Provider::Openai => {
                let mut body = self.openai_body(request, messages, max_tokens, strip_bounds);
                if let Some(n) = top_logprobs {
                    body["logprobs"] = json!(true);
                    body["top_logprobs"] = json!(n);
                }
                body
            }
            Provider::Anthropic | Provider::Local => {
                self.anthropic_body(request, messages, max_tokens)
            }
        };
        let url = match self.settings.provider {
            Provider::Openai => format!("{}/chat/completions", self.settings.base()),
            Provider::Anthropic | Provider::Local => format!("{}/messages", self.settings.base()),
        };
        let stripped = self.strip_schema_bounds.load(Ordering::Relaxed);
        let timeout = self.settings.timeout_for(Some(max_tokens));
        let (value, attempts) = match self.post(&url, &body(stripped), timeout) {
            Err(JudgeError::Http {
                status: 400,
                message,
                attempts,
                ..
            }) if !stripped && self.strict_schema_sent() && rejects_schema_bounds(&message) => {
                // The provider's strict mode refuses bounds that grammar-enforcing servers
                // (llama.cpp, vLLM) honour: send the schema without them from now on; they are
                // still checked locally.
                tracing::debug!(judge = %self.name, %message, "strict schema bounds rejected, resending without them");
                self.strip_schema_bounds.store(true, Ordering::Relaxed);
                let (value, more) = self.post(&url, &body(true), timeout)?;
                (value, attempts + more)
            }
            other => other?,
        };
        let reply = match self.settings.provider {
            Provider::Openai => parse_openai(&value),
            Provider::Anthropic | Provider::Local => parse_anthropic(&value),
        }
        .map_err(|message| JudgeError::Protocol {
            judge: self.name.clone(),
            url,
            message,
        })?;
        self.record(reply.usage);
        Ok((reply, attempts))
    }

    fn schema_instruction(schema: &Value) -> String {
        format!(
            "Reply with one JSON object only, no prose and no code fence, that satisfies this JSON schema:\n{schema}"
        )
    }

    /// The messages with the schema instruction appended to the system message (or as one),
    /// for modes where the provider does not receive the schema itself.
    fn with_schema_in_prompt(messages: &[Message], schema: &Value) -> Vec<Message> {
        let mut out = messages.to_vec();
        let instruction = Self::schema_instruction(schema);
        match out.iter_mut().find(|m| m.role == Role::System) {
            Some(sys) => {
                sys.content.push_str("\n\n");
                sys.content.push_str(&instruction);
            }
            None => out.insert(0, Message::system(instruction)),
        }
        out
    }

    /// Whether requests carry a strict JSON schema (`response_format: json_schema`).
    fn strict_schema_sent(&self) -> bool {
        self.settings.provider == Provider::Openai
            && self.settings.structured_output == StructuredOutput::JsonSchema
    }

    fn openai_body(
        &self,
        request: &JudgeRequest,
        messages: &[Message],
        max_tokens: u32,
        strip_bounds: bool,
    ) -> Value {
        let s = &self.settings;
        let messages = match s.structured_output {
            StructuredOutput::JsonSchema => messages.to_vec(),
            _ => Self::with_schema_in_prompt(messages, &request.schema),
        };
        let mut body = json!({
            "model": s.model,
            "messages": messages,
            "temperature": s.temperature,
            "max_tokens": max_tokens,
        });
        if let Some(seed) = self.seed_for(request) {
            body["seed"] = json!(seed);
        }
        match s.structured_output {
            StructuredOutput::JsonSchema => {
                body["response_format"] = json!({
                    "type": "json_schema",
                    "json_schema": {
                        "name": schema_name(&request.template_id),
                        "schema": schema::strict(&if strip_bounds {
                            schema::without_bounds(&request.schema)
                        } else {
                            request.schema.clone()
                        }),
                        "strict": true,
                    }
                });
            }
            StructuredOutput::JsonObject => {
                body["response_format"] = json!({"type": "json_object"})
            }
            StructuredOutput::Prompt => {}
        }
        body
    }

    fn anthropic_body(
        &self,
        request: &JudgeRequest,
        messages: &[Message],
        max_tokens: u32,
    ) -> Value {
        let s = &self.settings;
        let tool_mode = s.structured_output != StructuredOutput::Prompt;
        let messages = if tool_mode {
            messages.to_vec()
        } else {
            Self::with_schema_in_prompt(messages, &request.schema)
        };
        let system: Vec<&str> = messages
            .iter()
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.as_str())
            .collect();
        let turns: Vec<Value> = messages
            .iter()
            .filter(|m| m.role != Role::System)
            .map(|m| json!({"role": m.role, "content": m.content}))
            .collect();
        let mut body = json!({
            "model": s.model,
            "max_tokens": max_tokens,
            "temperature": s.temperature,
            "messages": turns,
        });
        if !system.is_empty() {
            body["system"] = json!(system.join("\n\n"));
        }
        if tool_mode {
            body["tools"] = json!([{
                "name": ANTHROPIC_TOOL,
                "description": "Record the judgment. Always call this tool exactly once with the complete judgment.",
                "input_schema": request.schema,
            }]);
            body["tool_choice"] = json!({"type": "tool", "name": ANTHROPIC_TOOL});
        }
        body
    }

    /// POSTs `body` to `url` with retries, each attempt bounded by `timeout`; the parsed 2xx
    /// body and the attempts made.
    fn post(&self, url: &str, body: &Value, timeout: Duration) -> Result<(Value, u32), JudgeError> {
        let key = self.api_key()?;
        let max_attempts = self.settings.max_retries.saturating_add(1);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let outcome = {
                let permit = self.limiter.acquire();
                let in_flight = InFlight::enter();
                let outcome = self.post_once(url, body, key.as_deref(), attempt, timeout);
                drop(in_flight);
                match &outcome {
                    Outcome::Retry {
                        rate_limited: true, ..
                    } => self.limiter.on_rate_limited(&permit),
                    Outcome::Ok(_) => self.limiter.on_success(),
                    _ => {}
                }
                outcome
            };
            match outcome {
                Outcome::Ok(v) => return Ok((v, attempt)),
                Outcome::Fail(e) => return Err(e),
                Outcome::Retry { error, wait, .. } => {
                    if attempt >= max_attempts {
                        return Err(error);
                    }
                    if matches!(error, JudgeError::Timeout { .. })
                        && !self.settings.retries_timeouts()
                    {
                        tracing::debug!(judge = %self.name, attempt, "timed out on a local server: not retried (retry_timeouts)");
                        return Err(error);
                    }
                    let wait = match wait {
                        Some(asked) if asked > self.retry_after_cap => {
                            tracing::warn!(
                                judge = %self.name,
                                "{url} asked to wait {:.0} s (Retry-After); waiting {:.0} s, the cap, before retry {attempt}",
                                asked.as_secs_f64(),
                                self.retry_after_cap.as_secs_f64()
                            );
                            self.retry_after_cap
                        }
                        Some(asked) => asked,
                        None => limiter::backoff(self.backoff_base, self.backoff_max, attempt),
                    };
                    tracing::debug!(judge = %self.name, attempt, error = %error, wait_ms = wait.as_millis() as u64, "retrying judge request");
                    std::thread::sleep(wait);
                }
            }
        }
    }

    fn post_once(
        &self,
        url: &str,
        body: &Value,
        key: Option<&str>,
        attempt: u32,
        timeout: Duration,
    ) -> Outcome {
        let mut req = self
            .agent
            .post(url)
            .config()
            .timeout_global(Some(timeout))
            .build()
            .header("content-type", "application/json");
        match (self.settings.provider, key) {
            (Provider::Openai, Some(k)) => req = req.header("authorization", format!("Bearer {k}")),
            (Provider::Anthropic, Some(k)) => req = req.header("x-api-key", k),
            (Provider::Local, Some(_)) => {}
            (_, None) => {}
        }
        if self.settings.provider == Provider::Anthropic {
            req = req.header("anthropic-version", ANTHROPIC_VERSION);
        }
        let transport = |message: String| JudgeError::Transport {
            judge: self.name.clone(),
            url: url.to_string(),
            message: redact(&message, key),
            attempts: attempt,
        };
        let mut response = match req.send_json(body) {
            Ok(r) => r,
            Err(ureq::Error::Timeout(_)) => {
                return Outcome::Retry {
                    error: JudgeError::Timeout {
                        judge: self.name.clone(),
                        url: url.to_string(),
                        timeout_s: timeout.as_secs_f64(),
                        attempts: attempt,
                    },
                    wait: None,
                    rate_limited: false,
                }
            }
            // The server answered, but not with usable HTTP (a bare 1xx, a redirect without
            // `Location`, oversized headers): its answer, not a failure to reach it.
            Err(
                e @ (ureq::Error::Protocol(_)
                | ureq::Error::RedirectFailed
                | ureq::Error::TooManyRedirects
                | ureq::Error::LargeResponseHeader(..)),
            ) => {
                return Outcome::Fail(JudgeError::Protocol {
                    judge: self.name.clone(),
                    url: url.to_string(),
                    message: format!(
                        "a response that is not usable HTTP: {}",
                        redact(&e.to_string(), key)
                    ),
                })
            }
            Err(e) => {
                return Outcome::Retry {
                    error: transport(e.to_string()),
                    wait: None,
                    rate_limited: false,
                }
            }
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| limiter::parse_retry_after(v, SystemTime::now()));
        // Bytes, then text: a body that is not UTF-8 was received whole, so it is the server's
        // answer (a protocol error), not a failure to reach it.
        let bytes = match response.body_mut().read_to_vec() {
            Ok(b) => b,
            Err(ureq::Error::Timeout(_)) => {
                return Outcome::Retry {
                    error: JudgeError::Timeout {
                        judge: self.name.clone(),
                        url: url.to_string(),
                        timeout_s: timeout.as_secs_f64(),
                        attempts: attempt,
                    },
                    wait: None,
                    rate_limited: false,
                }
            }
            Err(e) => {
                return Outcome::Retry {
                    error: transport(format!("cannot read the response: {e}")),
                    wait: None,
                    rate_limited: false,
                }
            }
        };
        let text = match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => {
                let at = e.utf8_error().valid_up_to();
                return Outcome::Fail(JudgeError::Protocol {
                    judge: self.name.clone(),
                    url: url.to_string(),
                    message: format!(
                        "HTTP {status} with a body that is not UTF-8 (invalid byte 0x{:02x} at offset {at}): {}",
                        e.as_bytes().get(at).copied().unwrap_or(0),
                        excerpt(&String::from_utf8_lossy(e.as_bytes()))
                    ),
                });
            }
        };
        if (200..300).contains(&status) && text.trim().is_empty() {
            // A 2xx without a body (a proxy or a server that dropped the reply): transient.
            return Outcome::Retry {
                error: JudgeError::Protocol {
                    judge: self.name.clone(),
                    url: url.to_string(),
                    message: format!(
                        "HTTP {status} with an empty body (after {attempt} attempt(s))"
                    ),
                },
                wait: None,
                rate_limited: false,
            };
        }
        if (200..300).contains(&status) {
            return match serde_json::from_str::<Value>(&text) {
                Ok(v) => Outcome::Ok(v),
                Err(e) => Outcome::Fail(JudgeError::Protocol {
                    judge: self.name.clone(),
                    url: url.to_string(),
                    message: format!(
                        "HTTP {status} with a body that is not JSON ({e}): {}",
                        excerpt(&text)
                    ),
                }),
            };
        }
        let error = JudgeError::Http {
            judge: self.name.clone(),
            url: url.to_string(),
            status,
            message: redact(&error_message(&text), key),
            attempts: attempt,
        };
        match status {
            429 => Outcome::Retry {
                error,
                wait: retry_after,
                rate_limited: true,
            },
            408 | 409 | 500..=599 => Outcome::Retry {
                error,
                wait: retry_after,
                rate_limited: false,
            },
            _ => Outcome::Fail(error),
        }
    }
}

/// A `response_format` schema name: `[A-Za-z0-9_-]`, at most 64 characters.
/// How long [`server_slots`] waits for `GET /props`: a server on this machine answers at once
/// or not at all.
const PROPS_TIMEOUT: Duration = Duration::from_secs(2);

/// The parallel slots a loopback OpenAI-compatible server reports: `total_slots` of
/// llama.cpp's `GET /props`, asked at the server's root (the `base_url` without a trailing
/// `/v1`). `None` when it does not answer (not started yet, restarting), answers with an
/// error (another server: vLLM, Ollama, LM Studio have no `/props`) or without a positive
/// `total_slots`: the configured `max_concurrency` then stands.
fn server_slots(agent: &ureq::Agent, settings: &JudgeSettings) -> Option<usize> {
    let base = settings.base();
    let root = base.strip_suffix("/v1").unwrap_or(base);
    let mut request = agent
        .get(&format!("{root}/props"))
        .config()
        .timeout_global(Some(PROPS_TIMEOUT))
        .build();
    if let Some(key) = settings
        .api_key_env
        .as_deref()
        .and_then(|var| std::env::var(var).ok())
        .filter(|k| !k.is_empty())
    {
        request = request.header("authorization", format!("Bearer {key}"));
    }
    let mut response = request.call().ok()?;
    if response.status().as_u16() != 200 {
        return None;
    }
    let props: Value = response.body_mut().read_json().ok()?;
    let slots = props.get("total_slots")?.as_u64()?;
    usize::try_from(slots).ok().filter(|&n| n > 0)
}

fn schema_name(template_id: &str) -> String {
    let s: String = template_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if s.is_empty() {
        "judgment".into()
    } else {
        s
    }
}

fn excerpt(s: &str) -> String {
    let flat: String = s.chars().take(300).collect();
    if s.chars().count() > 300 {
        format!("{flat}…")
    } else {
        flat
    }
}

/// The provider's error message: `error.message` with `error.type` (OpenAI and Anthropic
/// bodies), `error` as a plain string (Ollama), `detail` (vLLM, FastAPI) or `message`; else an
/// excerpt of the body, or `(empty body)`.
fn error_message(body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        let text = |x: &Value| match x {
            Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
            Value::Null => None,
            Value::String(_) => None,
            other => Some(other.to_string()),
        };
        match v.get("error") {
            Some(Value::Object(e)) => {
                let msg = e.get("message").and_then(text);
                let ty = e.get("type").and_then(Value::as_str);
                match (ty, msg) {
                    (Some(t), Some(m)) => Some(format!("{t}: {m}")),
                    (None, Some(m)) => Some(m),
                    (Some(t), None) => Some(t.to_string()),
                    (None, None) => Some(excerpt(body)),
                }
            }
            Some(other) => text(other),
            None => v.get("detail").or_else(|| v.get("message")).and_then(text),
        }
    });
    match from_json {
        Some(m) => m,
        None if body.trim().is_empty() => "(empty body)".to_string(),
        None => excerpt(body),
    }
}

/// Whether a 400 error message says the strict schema's bounds are not supported.
fn rejects_schema_bounds(message: &str) -> bool {
    [
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
    ]
    .iter()
    .any(|k| message.contains(k))
}

/// Removes the key, and anything shaped like an OpenAI or Anthropic key, from a message.
fn redact(message: &str, key: Option<&str>) -> String {
    let mut out = message.to_string();
    if let Some(k) = key.filter(|k| k.len() >= 4) {
        out = out.replace(k, "[redacted]");
    }
    out.split(' ')
        .map(|w| {
            if w.starts_with("sk-") && w.len() > 8 {
                "sk-[redacted]"
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn usage_from(value: &Value, input: &str, output: &str) -> Usage {
    Usage {
        input_tokens: value.pointer(input).and_then(Value::as_u64).unwrap_or(0),
        output_tokens: value.pointer(output).and_then(Value::as_u64).unwrap_or(0),
    }
}

fn parse_openai(value: &Value) -> Result<Reply, String> {
    let choice = value
        .pointer("/choices/0")
        .ok_or("no `choices[0]` in the response")?;
    let message = choice.get("message").ok_or("no `choices[0].message`")?;
    let raw = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        _ => match message.get("refusal").and_then(Value::as_str) {
            Some(r) => format!("(refusal) {r}"),
            None => String::new(),
        },
    };
    Ok(Reply {
        raw,
        usage: usage_from(value, "/usage/prompt_tokens", "/usage/completion_tokens"),
        truncated: choice.get("finish_reason").and_then(Value::as_str) == Some("length"),
        logprobs: choice
            .pointer("/logprobs/content")
            .filter(|v| v.is_array())
            .cloned(),
    })
}

fn parse_anthropic(value: &Value) -> Result<Reply, String> {
    let content = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or("no `content` array in the response")?;
    let tool = content
        .iter()
        .find(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"));
    let raw = match tool.and_then(|t| t.get("input")) {
        Some(input) => input.to_string(),
        None => content
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
    };
    Ok(Reply {
        raw,
        usage: usage_from(value, "/usage/input_tokens", "/usage/output_tokens"),
        truncated: value.get("stop_reason").and_then(Value::as_str) == Some("max_tokens"),
        logprobs: None,
    })
}

/// A vector as the embedding cache keeps it: the f32 values' bits, little-endian, in hex
/// (exact, unlike a decimal round trip through JSON's f64), and the dimension.
fn encode_vector(v: &[f32]) -> Value {
    let mut hex = String::with_capacity(v.len() * 8);
    for x in v {
        for b in x.to_le_bytes() {
            hex.push_str(&format!("{b:02x}"));
        }
    }
    json!({"f32le": hex, "dims": v.len()})
}

/// The vector [`encode_vector`] wrote, or `None` for anything else (then it is embedded again).
fn decode_vector(v: &Value) -> Option<Vec<f32>> {
    let hex = v.get("f32le")?.as_str()?;
    let dims = usize::try_from(v.get("dims")?.as_u64()?).ok()?;
    if hex.len() != dims * 8 || !hex.is_ascii() {
        return None;
    }
    hex.as_bytes()
        .chunks_exact(8)
        .map(|c| {
            let mut bytes = [0u8; 4];
            for (k, pair) in c.chunks_exact(2).enumerate() {
                bytes[k] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
            }
            Some(f32::from_le_bytes(bytes))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_vectors_round_trip_bit_for_bit() {
        let v = vec![
            0.1f32,
            -0.0,
            f32::MIN_POSITIVE / 4.0,
            1.0e-38,
            -3.402_823_5e38,
            0.043_829_385,
        ];
        let back = decode_vector(&encode_vector(&v)).unwrap();
        assert_eq!(
            back.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            v.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        assert_eq!(decode_vector(&encode_vector(&[])), Some(Vec::new()));
        // Anything else is not a cached vector (it is embedded again).
        assert_eq!(decode_vector(&json!({"f32le": "zz", "dims": 1})), None);
        assert_eq!(
            decode_vector(&json!({"f32le": "00000000", "dims": 2})),
            None
        );
        assert_eq!(decode_vector(&json!([0.5])), None);
    }

    #[test]
    fn redaction_and_error_messages() {
        let m = redact(
            "Incorrect API key provided: sk-abcdefghijkl. See docs",
            Some("sk-abcdefghijkl"),
        );
        assert!(!m.contains("abcdefghijkl"), "{m}");
        let m = redact("key sk-proj-XXXXXXXXXX*** is bad", None);
        assert!(!m.contains("XXXXXXXX"), "{m}");
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "overloaded_error: Overloaded"
        );
        assert_eq!(
            error_message("<html>bad gateway</html>"),
            "<html>bad gateway</html>"
        );
        // Ollama's plain-string `error`, vLLM's `detail`, an empty body.
        assert_eq!(
            error_message(r#"{"error":"model 'llama3' not found"}"#),
            "model 'llama3' not found"
        );
        assert_eq!(error_message(r#"{"detail":"Not Found"}"#), "Not Found");
        assert_eq!(error_message(""), "(empty body)");
        assert_eq!(
            error_message(r#"{"error":{"message":"","type":"server_error"}}"#),
            "server_error"
        );
        assert!(rejects_schema_bounds(
            "Invalid schema for response_format 'x': 'minItems' is not permitted."
        ));
        assert!(!rejects_schema_bounds("model not found"));
        assert_eq!(
            schema_name("claim verification/v1"),
            "claim_verification_v1"
        );
    }
}
