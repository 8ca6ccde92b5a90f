//! [`Attributes`]: a span's (or event's, or resource's) attributes, one sorted vector.
//!
//! A span holds about fourteen attributes and an import reads millions of spans. A
//! `BTreeMap<String, Value>` of that size is one to three node allocations and one allocation
//! per key, built by sorting and bulk-pushing, and freed piece by piece. Here every key's bytes
//! sit in one buffer and the entries (a key's place and length, its value) in one vector,
//! sorted once. It answers what the readers and [`crate::conventions`] ask of a map — a key's
//! value, the keys from a prefix on, in order — with the same results a `BTreeMap` gives:
//! keys are unique and kept in their byte order (`String`'s `Ord`), and a key inserted again
//! replaces its value. Keys are handed out as `&str`.

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// Attributes: unique keys in byte order, each with its value (a JSON value, as the readers
/// flatten OTLP `AnyValue`s).
#[derive(Clone, Default)]
pub struct Attributes {
    /// Every key's bytes, one after the other (a removed key's stay until the next insert
    /// writes after them: they are only ever read through an entry).
    keys: String,
    /// Sorted by key, keys unique.
    entries: Vec<Entry>,
    /// Bit `len % 64` is set for the length of every key there (and may stay set after a
    /// removal): most lookups are of keys a span does not have (`metadata`, `session.id`,
    /// `gen_ai.system` on an OpenInference span), and a clear bit answers them without a
    /// search.
    lengths: u64,
}

/// One attribute: its key's place in [`Attributes::keys`], and its value.
#[derive(Clone)]
struct Entry {
    start: usize,
    len: usize,
    value: Value,
}

/// Up to this many attributes, a lookup scans them (see [`Attributes::find`]); beyond, it
/// searches.
const SCAN_MAX: usize = 32;

/// The bit of a key's length in [`Attributes::lengths`].
fn length_bit(key: &str) -> u64 {
    1 << (key.len() % 64)
}

impl PartialEq for Attributes {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Attributes {
    /// No attributes.
    pub fn new() -> Self {
        Attributes::default()
    }

    /// The pairs in the order given, the last of equal keys kept (what inserting them one at a
    /// time gives). Keys may be any string (borrowed from a line being decoded, say): each
    /// key's bytes are copied once, into the one buffer.
    pub fn from_pairs<K: AsRef<str>>(mut pairs: Vec<(K, Value)>) -> Self {
        // A stable sort keeps equal keys in their given order; the last of each run wins.
        pairs.sort_by(|a, b| a.0.as_ref().cmp(b.0.as_ref()));
        let mut out = Attributes {
            keys: String::with_capacity(pairs.iter().map(|p| p.0.as_ref().len()).sum()),
            entries: Vec::with_capacity(pairs.len()),
            lengths: 0,
        };
        for (k, v) in pairs {
            let k = k.as_ref();
            match out.entries.last_mut() {
                Some(last) if &out.keys[last.start..last.start + last.len] == k => last.value = v,
                _ => {
                    let entry = out.entry_for(k, v);
                    out.entries.push(entry);
                }
            }
        }
        out
    }

    /// An entry for `key`, its bytes written at the end of the buffer.
    fn entry_for(&mut self, key: &str, value: Value) -> Entry {
        let start = self.keys.len();
        self.keys.push_str(key);
        self.lengths |= length_bit(key);
        Entry {
            start,
            len: key.len(),
            value,
        }
    }

    /// The key of `e`.
    fn key(&self, e: &Entry) -> &str {
        &self.keys[e.start..e.start + e.len]
    }

    fn position(&self, key: &str) -> Result<usize, usize> {
        self.entries.binary_search_by(|e| self.key(e).cmp(key))
    }

    /// Whether `key` may be there (its length's bit is set).
    fn may_hold(&self, key: &str) -> bool {
        self.lengths & length_bit(key) != 0
    }

    /// Where `key` is, if it is there. A span's few attributes are scanned comparing lengths
    /// first (kept in the entries) and bytes only on a length match: a binary search reads
    /// keys at every probe, and the first lookups on a span decoded by another thread miss
    /// the cache.
    fn find(&self, key: &str) -> Option<usize> {
        if !self.may_hold(key) {
            return None;
        }
        if self.entries.len() <= SCAN_MAX {
            self.entries
                .iter()
                .position(|e| e.len == key.len() && self.key(e) == key)
        } else {
            self.position(key).ok()
        }
    }

    /// How many attributes.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.find(key).map(|i| &self.entries[i].value)
    }

    /// Whether `key` is there.
    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_some()
    }

    /// Sets `key` to `value`; the value it replaces, if any.
    pub fn insert(&mut self, key: impl AsRef<str>, value: Value) -> Option<Value> {
        let key = key.as_ref();
        match self.position(key) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].value, value)),
            Err(i) => {
                let entry = self.entry_for(key, value);
                self.entries.insert(i, entry);
                None
            }
        }
    }

    /// Sets `key` to `value` unless it is there already (`entry(key).or_insert(value)`).
    pub fn insert_if_absent(&mut self, key: impl AsRef<str>, value: Value) {
        let key = key.as_ref();
        if let Err(i) = self.position(key) {
            let entry = self.entry_for(key, value);
            self.entries.insert(i, entry);
        }
    }

    /// The value of `key`, set to `default()` first when it is not there
    /// (`entry(key).or_insert_with(default)`).
    pub fn get_or_insert_with(
        &mut self,
        key: impl AsRef<str>,
        default: impl FnOnce() -> Value,
    ) -> &mut Value {
        let key = key.as_ref();
        let i = match self.position(key) {
            Ok(i) => i,
            Err(i) => {
                let entry = self.entry_for(key, default());
                self.entries.insert(i, entry);
                i
            }
        };
        &mut self.entries[i].value
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &str> + '_ {
        self.entries.iter().map(|e| self.key(e))
    }

    /// Removes `key`; its value, if it was there.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.find(key).map(|i| self.entries.remove(i).value)
    }

    /// Keeps the attributes for which `keep` is true, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &mut Value) -> bool) {
        let keys = &self.keys;
        self.entries.retain_mut(|e| {
            let key = &keys[e.start..e.start + e.len];
            keep(key, &mut e.value)
        });
    }

    /// The attributes in key order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            keys: &self.keys,
            inner: self.entries.iter(),
        }
    }

    /// The attributes whose key is `head` or after it, in key order (`range(head..)` of a
    /// `BTreeMap`): where a prefix scan starts.
    pub fn range_from(&self, head: &str) -> Iter<'_> {
        let start = self.entries.partition_point(|e| self.key(e) < head);
        Iter {
            keys: &self.keys,
            inner: self.entries[start..].iter(),
        }
    }
}

/// The attributes of an [`Attributes`], in key order.
pub struct Iter<'a> {
    keys: &'a str,
    inner: std::slice::Iter<'a, Entry>,
}

impl<'a> Iter<'a> {
    fn pair(&self, e: &'a Entry) -> (&'a str, &'a Value) {
        (&self.keys[e.start..e.start + e.len], &e.value)
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a str, &'a Value);

    fn next(&mut self) -> Option<Self::Item> {
        let e = self.inner.next()?;
        Some(self.pair(e))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let e = self.inner.next_back()?;
        Some(self.pair(e))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a Attributes {
    type Item = (&'a str, &'a Value);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl IntoIterator for Attributes {
    type Item = (String, Value);
    type IntoIter = std::vec::IntoIter<(String, Value)>;

    /// The pairs in key order, each key a new `String`.
    fn into_iter(self) -> Self::IntoIter {
        let Attributes { keys, entries, .. } = self;
        entries
            .into_iter()
            .map(|e| {
                let key = keys[e.start..e.start + e.len].to_string();
                (key, e.value)
            })
            .collect::<Vec<_>>()
            .into_iter()
    }
}

impl FromIterator<(String, Value)> for Attributes {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Self {
        Attributes::from_pairs(iter.into_iter().collect())
    }
}

impl<const N: usize> From<[(String, Value); N]> for Attributes {
    fn from(pairs: [(String, Value); N]) -> Self {
        Attributes::from_pairs(pairs.into())
    }
}

impl Extend<(String, Value)> for Attributes {
    fn extend<I: IntoIterator<Item = (String, Value)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl std::ops::Index<&str> for Attributes {
    type Output = Value;

    /// The value of `key`; panics when it is not there (as `BTreeMap`'s index does).
    fn index(&self, key: &str) -> &Value {
        self.get(key)
            .unwrap_or_else(|| panic!("no attribute `{key}`"))
    }
}

impl fmt::Debug for Attributes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Serialize for Attributes {
    /// A JSON object, keys in order (as a `BTreeMap` serializes).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.entries.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Attributes {
    /// A JSON object; a key given twice keeps its last value.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Attributes;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of attributes")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Attributes, A::Error> {
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some((k, v)) = map.next_entry::<String, Value>()? {
                    pairs.push((k, v));
                }
                Ok(Attributes::from_pairs(pairs))
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use serde_json::json;
    use std::collections::BTreeMap;

    /// Every operation gives what a `BTreeMap` gives, on random keys with repeats, shared
    /// prefixes and lengths that collide modulo 64, below and above [`SCAN_MAX`] keys (both
    /// ways of finding one).
    #[test]
    fn behaves_as_a_btreemap() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut keys: Vec<String> = [
            "a", "a.b", "a.b.0", "a.b.10", "a.b.2", "b", "", "é", "a\u{1f}", "z",
        ]
        .iter()
        .map(|k| k.to_string())
        .collect();
        keys.extend((0..60).map(|i| format!("retrieval.documents.{i}.document.id")));
        keys.push("x".repeat(65));
        keys.push("y".to_string());
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        for round in 0..1000 {
            let n = rng.random_range(0..if round % 2 == 0 { 20 } else { 120 });
            let pairs: Vec<(String, Value)> = (0..n)
                .map(|i| {
                    let k = keys[rng.random_range(0..keys.len())].to_string();
                    (k, json!(i))
                })
                .collect();
            let mut ours: Attributes = pairs.iter().cloned().collect();
            let mut theirs: BTreeMap<String, Value> = pairs.iter().cloned().collect();
            assert_eq!(
                ours.iter().collect::<Vec<_>>(),
                theirs
                    .iter()
                    .map(|(k, v)| (k.as_str(), v))
                    .collect::<Vec<_>>()
            );
            let head = keys[rng.random_range(0..keys.len())];
            assert_eq!(
                ours.range_from(head).collect::<Vec<_>>(),
                theirs
                    .range(head.to_string()..)
                    .map(|(k, v)| (k.as_str(), v))
                    .collect::<Vec<_>>()
            );
            for &k in &keys {
                assert_eq!(ours.get(k), theirs.get(k));
                assert_eq!(ours.contains_key(k), theirs.contains_key(k));
            }
            let k = keys[rng.random_range(0..keys.len())].to_string();
            assert_eq!(
                ours.insert(k.clone(), json!("x")),
                theirs.insert(k, json!("x"))
            );
            let k = keys[rng.random_range(0..keys.len())];
            assert_eq!(ours.remove(k), theirs.remove(k));
            let k = keys[rng.random_range(0..keys.len())].to_string();
            ours.insert_if_absent(k.clone(), json!("y"));
            theirs.entry(k).or_insert(json!("y"));
            ours.retain(|k, _| !k.ends_with('0'));
            theirs.retain(|k, _| !k.ends_with('0'));
            assert_eq!(ours.len(), theirs.len());
            assert_eq!(
                ours.clone().into_iter().collect::<Vec<_>>(),
                theirs.clone().into_iter().collect::<Vec<_>>()
            );
            assert_eq!(
                serde_json::to_string(&ours).unwrap(),
                serde_json::to_string(&theirs).unwrap()
            );
            let back: Attributes =
                serde_json::from_str(&serde_json::to_string(&ours).unwrap()).unwrap();
            assert_eq!(back, ours);
        }
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value() {
        let a: Attributes = serde_json::from_str(r#"{"k": 1, "j": 0, "k": 2}"#).unwrap();
        assert_eq!(a["k"], json!(2));
        assert_eq!(a.len(), 2);
        let b = Attributes::from([("k".to_string(), json!(1)), ("k".to_string(), json!(3))]);
        assert_eq!(b["k"], json!(3));
    }
}
