//! Canonical JSON and content hashes.
//!
//! Every id and cache key is the sha256 of the canonical JSON of exactly what determines the
//! result: object keys sorted by their UTF-8 bytes, no insignificant whitespace, numbers as
//! `serde_json` prints them (integers without a fraction, floats in shortest round-trip form).
//! The same inputs give the same ids on every machine.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Canonical JSON text of `value`: sorted keys, no whitespace.
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    // Only `serde_json`'s own output and the input's UTF-8 strings are written.
    String::from_utf8(out).expect("canonical JSON is UTF-8")
}

/// Appends the canonical JSON of `value` to `out`. Strings and numbers are written by
/// `serde_json` (its escaping, its shortest round-trip floats); objects' keys in UTF-8 byte
/// order. Nothing is allocated but `out`'s growth and one list of entries per object.
fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_scalar(k, out);
                out.push(b':');
                write_canonical(v, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(v, out);
            }
            out.push(b']');
        }
        Value::String(text) => write_scalar(text, out),
        Value::Number(n) => write_scalar(n, out),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Null => out.extend_from_slice(b"null"),
    }
}

/// A string or number as `serde_json` prints it, appended to `out`.
fn write_scalar<T: serde::Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) {
    // Writing a string or a number into a `Vec` cannot fail.
    serde_json::to_writer(&mut *out, value).expect("a JSON scalar serialises");
}

/// Lower-case hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(digest: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(digest.len() * 2);
    for b in digest {
        text.push(DIGITS[usize::from(b >> 4)] as char);
        text.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    text
}

/// sha256 hex of the canonical JSON of `value`.
pub fn content_hash(value: &Value) -> String {
    thread_local! {
        // The canonical text is only hashed: one buffer per thread, re-used.
        static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUFFER.with(|buffer| {
        let mut buffer = buffer.borrow_mut();
        buffer.clear();
        write_canonical(value, &mut buffer);
        sha256_hex(&buffer)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_and_whitespace_do_not_change_the_hash() {
        let a: Value = serde_json::from_str(r#"{ "x": 1, "y": {"b": 2.5, "a": "é"} }"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"y":{"a":"é","b":2.5},"x":1}"#).unwrap();
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_eq!(content_hash(&a), content_hash(&b));
        assert_eq!(canonical_json(&a), r#"{"x":1,"y":{"a":"é","b":2.5}}"#);
    }

    /// The canonical text is what a plain recursive definition gives: sorted keys, serde_json's
    /// scalars (escapes, non-ASCII, floats, big integers).
    #[test]
    fn canonical_text_matches_the_definition() {
        fn reference(value: &Value) -> String {
            match value {
                Value::Object(map) => {
                    let mut keys: Vec<&String> = map.keys().collect();
                    keys.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
                    let parts: Vec<String> = keys
                        .iter()
                        .map(|k| format!("{}:{}", Value::String((*k).clone()), reference(&map[*k])))
                        .collect();
                    format!("{{{}}}", parts.join(","))
                }
                Value::Array(items) => {
                    let parts: Vec<String> = items.iter().map(reference).collect();
                    format!("[{}]", parts.join(","))
                }
                other => other.to_string(),
            }
        }
        let value = json!({
            "z": [1, -2, 3.5, 1e300, 0.1, u64::MAX, i64::MIN, null, true, false],
            "é": "quote \" backslash \\ tab \t nul \u{0} emoji \u{1f600}",
            "a": {"Z": {}, "a": [], "B": [{"y": 1, "x": 2}]},
            "": "empty key",
        });
        assert_eq!(canonical_json(&value), reference(&value));
        assert_eq!(
            content_hash(&value),
            sha256_hex(reference(&value).as_bytes())
        );
    }

    #[test]
    fn known_digest() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_ne!(
            content_hash(&json!({"a": 1})),
            content_hash(&json!({"a": 2}))
        );
    }
}
