//! Judgment cache keys, the cache trait the engine implements over the store, and an
//! in-memory implementation for tests.
//!
//! The key is `sha256` of the canonical JSON (sorted keys, no whitespace;
//! [`oloproof_core::identity::content_hash`]) of everything that determines a judgment:
//! provider, model, base_url, template id and version, the rendered messages, the schema, the
//! sampling settings (temperature, seed, the `max_tokens` sent, structured_output) and the
//! repeat index.
//! The API key is not part of it. Changing the model, the prompt or the template version gives
//! a new key, so a stale judgment is never reused.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::request::{JudgeRequest, Usage};
use crate::settings::JudgeSettings;

/// The judgment cache key of `request` sent with `settings`.
pub fn cache_key(settings: &JudgeSettings, request: &JudgeRequest) -> String {
    oloproof_core::identity::content_hash(&json!({
        "kind": "judgment",
        "provider": settings.provider.as_str(),
        "model": settings.model,
        "base_url": settings.base(),
        "template_id": request.template_id,
        "template_version": request.template_version,
        "messages": request.messages,
        "schema": request.schema,
        "temperature": settings.temperature,
        "seed": settings.seed,
        "max_tokens": settings.max_tokens_for(request),
        "structured_output": settings.structured_output.as_str(),
        "repeat_index": request.repeat_index,
    }))
}

/// Where validated judgments are kept between runs. Implementations must be `Send + Sync`:
/// worker threads share one.
pub trait JudgeCache: Send + Sync {
    /// The stored `(raw, parsed)` judgment for `key`.
    fn get(&self, key: &str) -> Option<(String, Value)>;
    /// Stores a validated judgment (errors are never stored).
    fn put(&self, key: &str, raw: &str, parsed: &Value);
}

/// A cache that keeps nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoCache;

impl JudgeCache for NoCache {
    fn get(&self, _key: &str) -> Option<(String, Value)> {
        None
    }
    fn put(&self, _key: &str, _raw: &str, _parsed: &Value) {}
}

/// An in-memory cache, for tests and single runs.
#[derive(Debug, Default)]
pub struct MemoryCache {
    entries: Mutex<HashMap<String, (String, Value)>>,
}

impl MemoryCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }
    /// Entries stored.
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl JudgeCache for MemoryCache {
    fn get(&self, key: &str) -> Option<(String, Value)> {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned()
    }
    fn put(&self, key: &str, raw: &str, parsed: &Value) {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_string(), (raw.to_string(), parsed.clone()));
    }
}

/// One judge call as the run records it (the engine stores these with the verdict so
/// `oloproof show` can print raw and parsed judgments).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// The judgment cache key.
    pub cache_key: String,
    /// The template's id.
    pub template_id: String,
    /// The template's version.
    pub template_version: u32,
    /// The self-consistency repeat.
    pub repeat_index: u32,
    /// The reply as received.
    pub raw: String,
    /// The validated judgment.
    pub parsed: Value,
    /// Tokens billed by this call (zero for a cache hit).
    pub usage: Usage,
    /// Cost of this call, when prices are configured (zero for a cache hit).
    pub cost_usd: Option<f64>,
    /// Whether the judgment came from the cache (nothing was sent).
    pub cached: bool,
    /// HTTP attempts made (0 for a cache hit).
    pub attempts: u32,
    /// Whether the judgment needed the repair attempt.
    pub repaired: bool,
}
