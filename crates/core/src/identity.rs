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
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Lower-case hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for b in digest {
        hex.push_str(&format!("{b:02x}"));
    }
    hex
}

/// sha256 hex of the canonical JSON of `value`.
pub fn content_hash(value: &Value) -> String {
    sha256_hex(canonical_json(value).as_bytes())
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
