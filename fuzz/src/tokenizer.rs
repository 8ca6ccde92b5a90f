//! Model files: `tokenizer.json`, read as `oloproof-local`'s `files::tokenizer` reads it (the
//! JSON text into a value, its post-processor's special tokens checked, then
//! `tokenizers::Tokenizer` from that value, padding and
//! truncation removed), then used as the local embedders and pair classifiers use it (one
//! text, one pair, with special tokens). `files::tokenizer` itself cannot be called here (its
//! crate builds candle), so these steps are its own, line for line.
//!
//! Not fuzzed here: `config.json` and GGUF headers. `oloproof-local` reads `config.json` into a
//! JSON value (serde_json) and then into candle's `bert::Config` / `debertav2::Config`
//! (`files::parse_bert_config`, `files::architecture`), and GGUF through candle's
//! `gguf_file`: both are only reachable through candle, which this crate does not build (it
//! would triple the fuzz build; see the crate's Cargo.toml).
//!
//! Asserted on rejection: a JSON syntax error carries its line (≥ 1; serde_json's column is 0
//! at the start of a line); a tokenizer that does not fit has a message (`oloproof-local`
//! prefixes both with the file's path).

use serde_json::Value;
use tokenizers::Tokenizer;

/// `tokenizer`: the input is the whole `tokenizer.json`.
pub fn tokenizer(data: &[u8]) {
    let raw: Value = match serde_json::from_slice(data) {
        Ok(v) => v,
        Err(e) => {
            crate::check::note(&e);
            assert!(e.line() >= 1, "unlocated: {e}");
            return;
        }
    };
    if raw
        .get("post_processor")
        .is_some_and(undefined_special_token)
    {
        return; // files::tokenizer refuses it (tokenizers would panic in `encode`).
    }
    // `files::tokenizer` catches a panic of `tokenizers` while it builds the model.
    let built = quietly(move || serde_json::from_value::<Tokenizer>(raw));
    let mut tok: Tokenizer = match built {
        Some(Ok(t)) => t,
        Some(Err(e)) => {
            crate::check::note(&e);
            assert!(!e.to_string().is_empty(), "an error without a message");
            return;
        }
        None => return,
    };
    tok.with_padding(None);
    if tok.with_truncation(None).is_err() {
        return;
    }
    // `files::encode_trial`: a panic on these two encodings is refused at load.
    let trial = quietly(std::panic::AssertUnwindSafe(|| {
        let _ = tok.encode("How long is the refund window?", true);
        let _ = tok.encode(
            ("Is it 14 days?", "Refunds are accepted within 14 days."),
            true,
        );
    }));
    if trial.is_none() {
        return;
    }
    // Then the tokenizer is used: other texts must not panic either.
    let _ = tok.encode(
        "Combien de jours pour un remboursement ? 14 jours, ou 30 €.",
        true,
    );
    let _ = tok.encode(("", "  \t\n"), true);
}

/// `files::missing_special_token` of `oloproof-local`, line for line: a template
/// post-processor (also inside a `Sequence`, recognised by its shape) placing a special token
/// that its `special_tokens` lacks.
fn undefined_special_token(processor: &Value) -> bool {
    if let Some(items) = processor.get("processors").and_then(Value::as_array) {
        return items.iter().any(undefined_special_token);
    }
    let defined = processor.get("special_tokens");
    ["single", "pair"]
        .iter()
        .filter_map(|k| processor.get(*k).and_then(Value::as_array))
        .flatten()
        .filter_map(|piece| piece.pointer("/SpecialToken/id").and_then(Value::as_str))
        .any(|id| defined.and_then(|d| d.get(id)).is_none())
}

/// `f()`, or `None` if it panicked: where `files::tokenizer` catches a panic, so does the
/// target. The harness's panic hook aborts (that is how AFL++ sees a crash), so it is set aside
/// meanwhile.
fn quietly<T>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> Option<T> {
    let aborting = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let out = std::panic::catch_unwind(f).ok();
    std::panic::set_hook(aborting);
    out
}
