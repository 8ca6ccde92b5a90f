//! Trace records written straight to their JSON text, with no `serde_json::Value` tree built
//! and walked in between: [`Object`] writes one JSON object's keys in the order they are
//! given, each value through `serde_json` (so strings are escaped and numbers formatted
//! exactly as `serde_json::to_writer` writes them), and [`Array`] one array's elements.
//!
//! The text is byte for byte what `serde_json::to_vec` writes for the `Value` built with the
//! same keys in the same order (`preserve_order`), which the tests of
//! [`crate::assemble`] check on every record they build.

use serde::Serialize;

/// Writes `value`'s JSON to `out`; a value that does not serialize (a map with keys that are
/// not strings: none of the record's values) is written as `null`, as
/// `serde_json::to_value(..).unwrap_or(Value::Null)` wrote it before.
pub(crate) fn write_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let at = out.len();
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.truncate(at);
        out.extend_from_slice(b"null");
    }
}

/// One JSON object being written to a buffer: `{` on [`Object::begin`], `}` on
/// [`Object::end`].
pub(crate) struct Object<'a> {
    out: &'a mut Vec<u8>,
    empty: bool,
}

impl<'a> Object<'a> {
    /// Opens an object at the end of `out`.
    pub(crate) fn begin(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        Object { out, empty: true }
    }

    /// Whether no key was written yet.
    pub(crate) fn is_empty(&self) -> bool {
        self.empty
    }

    fn key(&mut self, key: &str) {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        write_json(self.out, key);
        self.out.push(b':');
    }

    /// `"key": value`.
    pub(crate) fn value<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) {
        self.key(key);
        write_json(self.out, value);
    }

    /// `"key": ` followed by `json`, text already in JSON form (an array or object written
    /// with this module).
    pub(crate) fn raw(&mut self, key: &str, json: &[u8]) {
        self.key(key);
        self.out.extend_from_slice(json);
    }

    /// `"key": ` followed by an object written by `fill`.
    pub(crate) fn object(&mut self, key: &str, fill: impl FnOnce(&mut Object<'_>)) {
        self.key(key);
        let mut inner = Object::begin(self.out);
        fill(&mut inner);
        inner.end();
    }

    /// Closes the object.
    pub(crate) fn end(self) {
        self.out.push(b'}');
    }
}

/// One JSON array being written to a buffer: `[` on [`Array::begin`], `]` on [`Array::end`].
pub(crate) struct Array<'a> {
    out: &'a mut Vec<u8>,
    empty: bool,
}

impl<'a> Array<'a> {
    /// Opens an array at the end of `out`.
    pub(crate) fn begin(out: &'a mut Vec<u8>) -> Self {
        out.push(b'[');
        Array { out, empty: true }
    }

    /// The next element: an object written by `fill`.
    pub(crate) fn object(&mut self, fill: impl FnOnce(&mut Object<'_>)) {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        let mut inner = Object::begin(self.out);
        fill(&mut inner);
        inner.end();
    }

    /// Closes the array.
    pub(crate) fn end(self) {
        self.out.push(b']');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_and_arrays_are_what_serde_json_writes_for_the_same_value() {
        let mut out = Vec::new();
        let mut o = Object::begin(&mut out);
        assert!(o.is_empty());
        o.value("id", "a \"quoted\"\tname\u{1}é");
        o.value("n", &3usize);
        o.value("x", &0.1f64);
        o.value("nan", &f64::NAN);
        o.object("inner", |i| {
            i.value("k", &json!({"b": 1, "a": [true, null]}))
        });
        let mut list = Vec::new();
        let mut a = Array::begin(&mut list);
        a.object(|e| e.value("doc_id", "d1"));
        a.object(|e| e.value("doc_id", "d2"));
        a.end();
        o.raw("list", &list);
        o.end();
        let expected = json!({
            "id": "a \"quoted\"\tname\u{1}é",
            "n": 3,
            "x": 0.1,
            "nan": null,
            "inner": {"k": {"b": 1, "a": [true, null]}},
            "list": [{"doc_id": "d1"}, {"doc_id": "d2"}],
        });
        assert_eq!(out, serde_json::to_vec(&expected).unwrap());
    }
}
