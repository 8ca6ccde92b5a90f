//! The run's judges: the clients of `judges:` ([`JudgeRegistry`]), their validation with
//! source positions, and the judge-call cache over the run store ([`StoreJudgeCache`]). The
//! judged evaluators themselves are in [`crate::evaluators::judged`].
//!
//! Every judge call goes through the `judge_call` cache layer (keyed by provider, model,
//! base URL, template and version, rendered messages, sampling and repeat index).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use oloproof_core::case::Case;
use oloproof_core::source::SourceError;
use oloproof_core::store::Store;
use oloproof_judge::{CallRecord, JudgeCache, JudgeClient, JudgeError, JudgeSettings};
use serde_json::{json, Value};

use crate::execute::CacheWrite;

/// Cache layer of single judge calls.
pub const JUDGE_CALL_LAYER: oloproof_core::store::CacheLayer =
    oloproof_core::store::CacheLayer::JudgeCall;

/// Why the run's judges cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JudgeSetupError {
    /// A `judges:` entry does not read as judge settings (a stored run's, since a loaded
    /// config was validated with positions).
    #[error("judges.{name}: {source}")]
    Settings {
        /// The judge.
        name: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A client could not be built (a local model that does not load, …).
    #[error(transparent)]
    Client(#[from] JudgeError),
}

/// The run's judges, by name.
#[derive(Default)]
pub struct JudgeRegistry {
    clients: BTreeMap<String, Arc<JudgeClient>>,
    settings: BTreeMap<String, JudgeSettings>,
}

impl JudgeRegistry {
    /// Builds the clients of `judges:` (keys are read from the environment only when a call
    /// is made).
    pub fn from_options(judges: &BTreeMap<String, Value>) -> Result<Self, JudgeSetupError> {
        Self::from_options_shared(judges, 1)
    }

    /// [`from_options`](Self::from_options) for one of `share` worker processes executing a
    /// run together (`oloproof worker --share N`): each judge's `max_concurrency`, the budget
    /// of its endpoint for the whole run, is divided among them (rounded up, at least 1) for
    /// this process's clients, so N machines together keep to it; the adaptive limit still
    /// halves on a 429. The judges' settings as recorded (their identity, and so the cache
    /// keys) keep the configured value.
    pub fn from_options_shared(
        judges: &BTreeMap<String, Value>,
        share: usize,
    ) -> Result<Self, JudgeSetupError> {
        let mut registry = JudgeRegistry::default();
        for (name, value) in judges {
            let settings: JudgeSettings =
                serde_json::from_value(value.clone()).map_err(|source| {
                    JudgeSetupError::Settings {
                        name: name.clone(),
                        source,
                    }
                })?;
            let mut budget = settings.clone();
            if share > 1 {
                // Unset, one process's client derives it (a local server's slots cap it).
                budget.max_concurrency =
                    Some(budget.configured_concurrency().div_ceil(share).max(1));
            }
            let client = JudgeClient::new(name, budget)?;
            registry.clients.insert(name.clone(), Arc::new(client));
            registry.settings.insert(name.clone(), settings);
        }
        Ok(registry)
    }

    /// The client named `name`.
    pub fn client(&self, name: &str) -> Option<&Arc<JudgeClient>> {
        self.clients.get(name)
    }

    /// Settings of `name` (what identifies its judgments), as JSON.
    pub fn identity(&self, name: &str) -> Value {
        let mut identity = self
            .settings
            .get(name)
            // Derived `Serialize` with string keys: a `JudgeSettings` always serialises.
            .and_then(|s| serde_json::to_value(s).ok())
            .unwrap_or(Value::Null);
        // A local model is identified by its content, not only by its path.
        if let (Some(model), Value::Object(map)) = (
            self.clients.get(name).and_then(|c| c.model_identity()),
            &mut identity,
        ) {
            map.insert("model_identity".into(), Value::String(model));
        }
        identity
    }

    /// Dollars spent by every judge of this process so far.
    pub fn spent_usd(&self) -> f64 {
        self.clients.values().map(|c| c.totals().cost_usd).sum()
    }
}

/// Checks `judges:` with source positions (unknown keys, wrong types, bad values, a local
/// model path that does not exist).
pub fn validate_judges(config: &oloproof_core::config::ProjectConfig) -> Result<(), SourceError> {
    let Some(Value::Object(judges)) = config.value.get("judges") else {
        return Ok(());
    };
    for (name, value) in judges {
        let path = format!("judges.{name}");
        let settings: JudgeSettings = config.source.deserialize_at(value, &path)?;
        if let Err(message) = settings.validate() {
            return Err(config.source.error_at(&path, false, message.to_string()));
        }
        // A local model's path is checked here, where the error can point at it; the files
        // themselves are checked when the model loads.
        if settings.provider == oloproof_judge::Provider::Local && !oloproof_judge::LOCAL_MODELS {
            let key = format!("{path}.provider");
            return Err(config
                .source
                .error_at(&key, false, oloproof_judge::WITHOUT_LOCAL_MODELS));
        }
        if settings.provider == oloproof_judge::Provider::Local {
            let key = format!("{path}.path");
            // An `hf://` path is only checked for its form here: it downloads when the model
            // loads, not on `--dry-run` or a validation.
            match settings.check_local_path() {
                Err(message) => {
                    return Err(config.source.error_at(&key, false, message.to_string()))
                }
                Ok(Some(p)) if !p.exists() => {
                    let mut err = config.source.error_at(
                        &key,
                        false,
                        format!("{}: no such file or folder", p.display()),
                    );
                    err.expected = Some(match settings.kind {
                        Some(oloproof_judge::LocalKind::Generate) => {
                            "a GGUF chat model file (.gguf) or a folder holding one".to_string()
                        }
                        _ => "a model folder in the Hugging Face layout (config.json, tokenizer.json, model.safetensors)".to_string(),
                    });
                    return Err(err);
                }
                Ok(_) => {}
            }
        }
    }
    Ok(())
}

/// A judge-call cache over the run store: reads through its own read-only connection, and
/// collects new entries to be committed with the case.
pub struct StoreJudgeCache {
    reader: Mutex<Option<Box<dyn Store>>>,
    writes: Mutex<Vec<CacheWrite>>,
    /// Calls answered during this run by this worker, so an identical call made by a second
    /// evaluator of the same case (before the case commits) is not sent again.
    answered: Mutex<std::collections::HashMap<String, (String, Value)>>,
    /// Lookups that found an entry the store could not read back (a miss, warned about).
    unreadable: std::sync::atomic::AtomicUsize,
}

impl StoreJudgeCache {
    /// A cache reading from `reader` (`None`: caches bypassed; entries are still written).
    pub fn new(reader: Option<Box<dyn Store>>) -> Self {
        StoreJudgeCache {
            reader: Mutex::new(reader),
            writes: Mutex::new(Vec::new()),
            answered: Mutex::new(std::collections::HashMap::new()),
            unreadable: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Lookups so far whose stored entry could not be read (each was a miss, and the call was
    /// made again).
    pub fn unreadable(&self) -> usize {
        self.unreadable.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn unreadable_entry(&self, key: &str, why: &dyn std::fmt::Display) {
        self.unreadable
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tracing::warn!(
            key,
            "judge-call cache entry unreadable ({why}); the call is made again and the entry overwritten"
        );
    }

    /// The entries added since the last call.
    pub fn take_writes(&self) -> Vec<CacheWrite> {
        std::mem::take(&mut *self.writes.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl JudgeCache for StoreJudgeCache {
    fn get(&self, key: &str) -> Option<(String, Value)> {
        if let Some(hit) = self
            .answered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
        {
            return Some(hit.clone());
        }
        let guard = self.reader.lock().unwrap_or_else(|p| p.into_inner());
        // An entry that cannot be read is a miss: the call is made again and its entry
        // overwritten when the case commits; it is counted and warned about, not hidden.
        let stored = match guard.as_ref()?.cache_get(JUDGE_CALL_LAYER, key) {
            Ok(found) => found?,
            Err(e) => {
                self.unreadable_entry(key, &e);
                return None;
            }
        };
        let entry = serde_json::from_str::<Value>(&stored)
            .map_err(|e| e.to_string())
            .and_then(|v| {
                let raw = v.get("raw").and_then(Value::as_str).map(str::to_string);
                match (raw, v.get("parsed")) {
                    (Some(raw), Some(parsed)) => Ok((raw, parsed.clone())),
                    _ => Err("no `raw` text or no `parsed` value".to_string()),
                }
            });
        match entry {
            Ok(hit) => Some(hit),
            Err(why) => {
                self.unreadable_entry(key, &why);
                None
            }
        }
    }

    fn put(&self, key: &str, raw: &str, parsed: &Value) {
        self.answered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_string(), (raw.to_string(), parsed.clone()));
        let value = json!({"raw": raw, "parsed": parsed}).to_string();
        self.writes.lock().unwrap_or_else(|p| p.into_inner()).push((
            JUDGE_CALL_LAYER,
            key.to_string(),
            value,
        ));
    }
}

/// What a judged evaluator needs at evaluation time.
pub struct JudgeEnv<'a> {
    /// The run's judges.
    pub judges: &'a JudgeRegistry,
    /// The judge-call cache.
    pub cache: &'a dyn JudgeCache,
}

/// The question text of a case: `input.question`, else `query`, `user_input`, else the input.
pub fn question_of(case: &Case) -> String {
    for key in ["question", "query", "user_input"] {
        if let Some(Value::String(q)) = case.input.get(key) {
            return q.clone();
        }
    }
    Value::Object(case.input.clone()).to_string()
}

/// The reference answer of a case: `expected.answer` (the first string of a list).
pub(crate) fn reference_of(case: &Case) -> Option<String> {
    match &case.expected.answer {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Array(items)) => items.iter().find_map(|v| v.as_str().map(str::to_string)),
        _ => None,
    }
}

pub(crate) fn call_detail(calls: &[CallRecord]) -> Value {
    Value::Array(
        calls
            .iter()
            .map(|c| {
                json!({
                    "template": format!("{}@{}", c.template_id, c.template_version),
                    "repeat": c.repeat_index,
                    "cached": c.cached,
                    "attempts": c.attempts,
                    "repaired": c.repaired,
                    "input_tokens": c.usage.input_tokens,
                    "output_tokens": c.usage.output_tokens,
                    "cost_usd": c.cost_usd,
                    "raw": c.raw,
                    "parsed": c.parsed,
                })
            })
            .collect(),
    )
}

/// What a missing verdict keeps of the judge call that failed: the error's kind and message,
/// the HTTP requests made, the last raw reply when there was one, and the tokens billed for
/// unusable replies (counted in the run's judge usage as a failed call).
pub(crate) fn failure_detail(e: &JudgeError, judge: Option<&JudgeClient>) -> Value {
    let usage = e.usage();
    json!({
        "kind": e.kind(),
        "error": e.to_string(),
        "attempts": e.attempts(),
        "raw": e.raw(),
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cost_usd": judge.and_then(|j| j.cost(usage)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use oloproof_core::store::CacheStore;

    #[test]
    fn an_unreadable_cache_entry_is_a_counted_miss() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.sqlite");
        let mut store = oloproof_store::SqliteStore::open(&path).unwrap();
        store
            .put_cache_entries(&[
                (JUDGE_CALL_LAYER, "bad".into(), "not json".into()),
                (JUDGE_CALL_LAYER, "shapeless".into(), "{}".into()),
                (
                    JUDGE_CALL_LAYER,
                    "good".into(),
                    json!({"raw": "r", "parsed": {"a": 1}}).to_string(),
                ),
            ])
            .unwrap();
        let cache = StoreJudgeCache::new(Some(Box::new(
            oloproof_store::SqliteStore::open_reader(&path).unwrap(),
        )));
        assert_eq!(cache.get("bad"), None);
        assert_eq!(cache.get("shapeless"), None);
        assert_eq!(cache.get("absent"), None);
        assert_eq!(cache.unreadable(), 2, "an absent entry is a plain miss");
        assert_eq!(cache.get("good"), Some(("r".into(), json!({"a": 1}))));
    }
}
