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
                crate::canonical::scalar(k, out);
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
        Value::String(text) => crate::canonical::scalar(text, out),
        Value::Number(n) => crate::canonical::scalar(n, out),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Null => out.extend_from_slice(b"null"),
    }
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

/// [`write_canonical`], for the direct writer's raw JSON values.
pub(crate) fn write_canonical_value(value: &Value, out: &mut Vec<u8>) {
    write_canonical(value, out);
}

/// Canonical JSON text of any serialisable value: [`canonical_json`] of
/// `serde_json::to_value(value)`, byte for byte, written without building the value tree (an
/// error where `to_value` fails: a non-string map key, a number beyond 64 bits).
pub fn canonical_json_of<T: serde::Serialize + ?Sized>(
    value: &T,
) -> Result<String, serde_json::Error> {
    let mut out = Vec::new();
    crate::canonical::write(value, &mut out).map_err(serde::ser::Error::custom)?;
    // Only `serde_json`'s own output and the value's UTF-8 strings are written.
    Ok(String::from_utf8(out).expect("canonical JSON is UTF-8"))
}

/// sha256 hex of [`canonical_json_of`] `value` (= [`content_hash`] of its `to_value`).
pub fn content_hash_of<T: serde::Serialize + ?Sized>(
    value: &T,
) -> Result<String, serde_json::Error> {
    thread_local! {
        static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUFFER.with(|buffer| {
        let mut buffer = buffer.borrow_mut();
        buffer.clear();
        crate::canonical::write(value, &mut buffer).map_err(serde::ser::Error::custom)?;
        Ok(sha256_hex(&buffer))
    })
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

    /// A small deterministic generator for the randomized comparisons below.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn random_value(rng: &mut Lcg, depth: u32) -> Value {
        const KEYS: &[&str] = &["a", "b", "B", "é", "a\"q", "10", "9", "", "zz", "\u{1f600}"];
        const FLOATS: &[f64] = &[0.0, -0.0, 1.0, -2.5, 0.1, 1e21, 1e-7, 123456.789, f64::MAX];
        match rng.below(if depth == 0 { 6 } else { 8 }) {
            0 => Value::Null,
            1 => Value::Bool(rng.below(2) == 1),
            2 => json!(rng.next() as i64 - (1 << 30)),
            3 => json!(u64::MAX - rng.below(3)),
            4 => json!(FLOATS[rng.below(FLOATS.len() as u64) as usize]),
            5 => Value::String(
                ["", "x", "é\n\"\\", "\u{1}\u{7f}", "\u{1f600} mixed"][rng.below(5) as usize]
                    .to_string(),
            ),
            6 => Value::Array(
                (0..rng.below(4))
                    .map(|_| random_value(rng, depth - 1))
                    .collect(),
            ),
            _ => Value::Object(
                (0..rng.below(5))
                    .map(|_| {
                        let key = KEYS[rng.below(KEYS.len() as u64) as usize].to_string();
                        (key, random_value(rng, depth - 1))
                    })
                    .collect(),
            ),
        }
    }

    /// The direct writer gives the bytes of `canonical_json(to_value(x))` on random JSON values
    /// (keys in every order, escapes, signed zeros, big and fractional numbers).
    #[test]
    fn the_direct_writer_matches_the_value_tree_on_random_values() {
        let mut rng = Lcg(0x0105_2026);
        for _ in 0..3000 {
            let value = random_value(&mut rng, 4);
            let expected = canonical_json(&value);
            assert_eq!(canonical_json_of(&value).unwrap(), expected, "{value}");
            assert_eq!(content_hash_of(&value).unwrap(), content_hash(&value));
        }
    }

    /// And on typed values: structs with skipped fields, every kind of enum variant, f32
    /// widened as `to_value` widens it, non-finite floats, integer and float map keys, a key
    /// given twice (the last value kept), bytes, tuples, raw JSON.
    #[test]
    fn the_direct_writer_matches_the_value_tree_on_typed_values() {
        use serde::Serialize;
        use std::collections::BTreeMap;

        #[derive(Serialize)]
        #[serde(rename_all = "snake_case")]
        enum Kind {
            Unit,
            Newtype(f32),
            Tuple(u8, Option<String>),
            Struct { z: i128, a: u128 },
        }

        #[derive(Serialize)]
        struct Record<'a> {
            zeta: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            skipped: Option<u8>,
            alpha: Vec<Kind>,
            #[serde(with = "serde_bytes_as_seq")]
            bytes: &'a [u8],
            floats: (f32, f64, f64, f64),
            int_keys: BTreeMap<i32, &'a str>,
            unit: (),
            raw: Box<serde_json::value::RawValue>,
            #[serde(flatten)]
            extra: serde_json::Map<String, Value>,
        }

        mod serde_bytes_as_seq {
            pub fn serialize<S: serde::Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(b)
            }
        }

        /// A map whose key is given twice.
        struct Twice;
        impl Serialize for Twice {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut map = s.serialize_map(None)?;
                map.serialize_entry("k", &1)?;
                map.serialize_entry("j", &2)?;
                map.serialize_entry("k", &3)?;
                map.end()
            }
        }

        let record = Record {
            zeta: "z\u{e9}",
            skipped: None,
            alpha: vec![
                Kind::Unit,
                Kind::Newtype(0.1),
                Kind::Tuple(7, None),
                Kind::Struct {
                    z: -5,
                    a: u128::from(u64::MAX),
                },
            ],
            bytes: b"ab",
            floats: (1.5, f64::NAN, f64::INFINITY, -0.0),
            int_keys: BTreeMap::from([(10, "ten"), (-2, "minus two"), (9, "nine")]),
            unit: (),
            raw: serde_json::value::RawValue::from_string(r#"{"y": [1, 2.0], "x": null}"#.into())
                .unwrap(),
            extra: serde_json::from_value(json!({"mid": true, "aa": "flattened"})).unwrap(),
        };
        let expected = canonical_json(&serde_json::to_value(&record).unwrap());
        assert_eq!(canonical_json_of(&record).unwrap(), expected);
        assert_eq!(
            canonical_json_of(&Twice).unwrap(),
            canonical_json(&serde_json::to_value(&Twice).unwrap())
        );
        assert_eq!(canonical_json_of(&Twice).unwrap(), r#"{"j":2,"k":3}"#);
        /// A map with float keys (finite, or not).
        struct FloatKeys(f64);
        impl Serialize for FloatKeys {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut map = s.serialize_map(None)?;
                map.serialize_entry(&self.0, "f64")?;
                map.serialize_entry(&2.25f32, "f32")?;
                map.serialize_entry(&true, "bool")?;
                map.end()
            }
        }
        assert_eq!(
            canonical_json_of(&FloatKeys(1.5)).unwrap(),
            canonical_json(&serde_json::to_value(FloatKeys(1.5)).unwrap())
        );
        assert!(serde_json::to_value(FloatKeys(f64::NAN)).is_err());
        assert!(canonical_json_of(&FloatKeys(f64::NAN)).is_err());
        // What `to_value` refuses, the writer refuses.
        let bad: BTreeMap<Vec<u8>, u8> = BTreeMap::from([(vec![1], 1)]);
        assert!(serde_json::to_value(&bad).is_err());
        assert!(canonical_json_of(&bad).is_err());
        assert!(serde_json::to_value(i128::MAX).is_err());
        assert!(canonical_json_of(&i128::MAX).is_err());
    }
}
