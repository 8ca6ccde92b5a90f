//! Judges for Oloproof: OpenAI-compatible and Anthropic clients, versioned prompt templates,
//! validated structured outputs, retries, and the Ragas-style judged metrics.
//!
//! A [`JudgeClient`] is one configured judge ([`JudgeSettings`], an entry of `judges:` in
//! `oloproof.yaml`). It is `Send + Sync` and blocking: the engine's worker threads share it.
//! Each call is bounded by a per-endpoint concurrency limit that halves on 429 and grows back,
//! honours `Retry-After`, backs off exponentially with jitter on 5xx, timeouts and connection
//! errors, validates the reply against the template's JSON schema and a caller's semantic
//! check, repairs once, and otherwise returns a [`JudgeError`] — which the engine records as
//! `missing`, never as a pass or a fail. Judgments are cached under [`cache_key`], which covers
//! everything that determines them (provider, model, endpoint, template and version, rendered
//! messages, sampling, repeat index) and never the API key.
//!
//! [`templates`] renders the prompts (groundedness, rubric, pairwise, citation support, claim
//! extraction and verification, question generation, context precision and recall);
//! [`ragas`] computes the judged metrics from them. [`mock::MockServer`] is a real loopback
//! HTTP server speaking both wire formats, always compiled, for tests without a paid API.
//! A `provider: local` judge runs a model from disk in-process instead (`oloproof-local`,
//! behind the `local-models` feature; without it, building one fails with a message saying
//! so).
//!
//! ```
//! use oloproof_judge::mock::{MockReply, MockServer};
//! use oloproof_judge::{templates, JudgeClient, JudgeSettings, MemoryCache, Provider};
//! use serde_json::json;
//!
//! let server = MockServer::start();
//! server.push(MockReply::json(json!({"grounded": 1, "reason": "Stated in the context."})));
//!
//! let mut settings = JudgeSettings::new(Provider::Openai, &server.base_url(), "gpt-4o-mini", None);
//! settings.prices = Some(oloproof_judge::Prices { input_per_mtok: 0.15, output_per_mtok: 0.60 });
//! let judge = JudgeClient::new("default", settings)?;
//!
//! let request = templates::groundedness(
//!     "How long is the refund window?",
//!     &["Contact support within 14 days of delivery for a full refund.".to_string()],
//!     "14 days from delivery.",
//!     0,
//! );
//! let cache = MemoryCache::new();
//! let first = judge.judge(&cache, &request, &|_| Ok(()))?;
//! assert_eq!(first.parsed["grounded"], 1);
//! assert!(!first.cached && first.cost_usd.unwrap() > 0.0);
//!
//! // The same request again is a cache hit: nothing is sent.
//! let again = judge.judge(&cache, &request, &|_| Ok(()))?;
//! assert!(again.cached);
//! assert_eq!(server.request_count(), 1);
//! # Ok::<(), oloproof_judge::JudgeError>(())
//! ```

#![warn(missing_docs)]

mod cache;
mod client;
mod error;
mod limiter;
mod local;
pub mod mock;
pub mod model_server;
pub mod ragas;
pub mod ragchecker;
mod request;
pub mod schema;
mod settings;
pub mod templates;
mod tokens;

pub use cache::{cache_key, CallRecord, JudgeCache, MemoryCache, NoCache};
pub use client::{
    calls_in_flight, JudgeClient, UsageTotals, ANTHROPIC_TOOL, ANTHROPIC_VERSION, EMBED_BATCH,
    MAX_RETRY_AFTER,
};
pub use error::{JudgeError, ReplyError, SettingsError, WeightedScoreError};
pub use local::{TextClassification, LOCAL_MODELS, WITHOUT_LOCAL_MODELS};
pub use request::{JudgeRequest, JudgeResponse, Message, Role, Usage};
pub use settings::{
    JudgeSettings, LocalKind, Prices, Provider, StructuredOutput, DEFAULT_MAX_CONCURRENCY,
    DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT_S, LOCAL_TOKENS_PER_S,
};
pub use tokens::{
    estimate_request_tokens, estimate_tokens, PER_MESSAGE_OVERHEAD, PER_REQUEST_OVERHEAD,
};
