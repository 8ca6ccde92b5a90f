//! Python's non-standard JSON numbers: `NaN`, `Infinity` and `-Infinity`, read as absent.
//!
//! Python's `json.dumps` (`allow_nan=True`, its default) writes a float NaN or infinity as the
//! bare tokens `NaN`, `Infinity`, `-Infinity`, which RFC 8259 does not allow and serde_json
//! refuses. Ragas writes them: its experiment backend (`ragas.backends.LocalJSONLBackend`,
//! plain `json.dumps`) records a failed score as `NaN`, and so does
//! `json.dump(result.to_pandas().to_dict("records"), f)`. [`replace`] rewrites those tokens,
//! outside strings, to `null` — an absent value: a NaN score is "not scored" on Ragas' side
//! (counted among the cases where one side only has a value), a NaN sample field is a missing
//! one. (pandas' own `to_json` writes `null` already.)
//!
//! `null` is one byte longer than `NaN` and shorter than the infinities, so byte offsets in the
//! rewritten text are mapped back to the original ([`Rewritten::original_offset`]): errors
//! and the places of fields point at the file as written.

/// A JSON text with its non-finite tokens rewritten to `null`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rewritten {
    /// The text to parse.
    pub text: String,
    /// After each replacement: (end offset in `text`, end offset in the original), in order.
    ends: Vec<(usize, usize)>,
}

impl Rewritten {
    /// The byte offset in the original text of byte `offset` of [`Rewritten::text`] (the
    /// start of a replaced `null` maps to the start of the original token).
    pub fn original_offset(&self, offset: usize) -> usize {
        let i = self.ends.partition_point(|&(clean, _)| clean <= offset);
        if i == 0 {
            return offset;
        }
        let (clean, orig) = self.ends[i - 1];
        orig + (offset - clean)
    }

    /// Whether any token was replaced.
    #[cfg(test)]
    pub fn changed(&self) -> bool {
        !self.ends.is_empty()
    }
}

/// The tokens replaced, longest first (`-Infinity` before `Infinity`).
const TOKENS: &[&str] = &["-Infinity", "Infinity", "NaN"];

/// Rewrites every `NaN`, `Infinity` and `-Infinity` outside a JSON string to `null`. A token
/// glued to a letter, digit or `_` (`NaNa`, `xInfinity`) is left alone: it is not one of
/// Python's tokens, and the parser's error then points at it.
pub(crate) fn replace(text: &str) -> Rewritten {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut ends = Vec::new();
    let mut copied = 0usize;
    let mut in_string = false;
    let mut i = 0usize;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 2,
                b'"' => {
                    in_string = false;
                    i += 1;
                }
                _ => i += 1,
            }
            continue;
        }
        if b == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        if matches!(b, b'N' | b'I' | b'-') {
            let glued = |at: usize| {
                bytes
                    .get(at)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
            };
            let before = i.checked_sub(1).is_some_and(glued);
            let token = TOKENS
                .iter()
                .find(|t| bytes[i..].starts_with(t.as_bytes()) && !glued(i + t.len()));
            if let (Some(token), false) = (token, before) {
                out.push_str(&text[copied..i]);
                out.push_str("null");
                i += token.len();
                copied = i;
                ends.push((out.len(), i));
                continue;
            }
        }
        i += 1;
    }
    if ends.is_empty() {
        return Rewritten {
            text: text.to_string(),
            ends,
        };
    }
    out.push_str(&text[copied..]);
    Rewritten { text: out, ends }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn parsed(text: &str) -> Value {
        serde_json::from_str(&replace(text).text).unwrap()
    }

    #[test]
    fn python_tokens_are_null_outside_strings() {
        // What `json.dumps({"s": "NaN", "f": float("nan"), ...}, separators=(",", ":"))` writes.
        let text = r#"{"s":"NaN \"Infinity\"","f":NaN,"i":Infinity,"n":-Infinity,"l":[NaN,1.5]}"#;
        assert_eq!(
            parsed(text),
            json!({"s": "NaN \"Infinity\"", "f": null, "i": null, "n": null, "l": [null, 1.5]})
        );
        let plain = r#"{"a": [1, "x"]}"#;
        let r = replace(plain);
        assert!(!r.changed());
        assert_eq!(r.text, plain);
    }

    #[test]
    fn glued_tokens_are_left_for_the_parser() {
        for text in [r#"{"a": NaNa}"#, r#"{"a": xNaN}"#, r#"{"a": Infinity_}"#] {
            assert!(!replace(text).changed(), "{text}");
        }
    }

    #[test]
    fn offsets_map_back_to_the_original() {
        let text = r#"[NaN,"é",-Infinity,{"k":Infinity},7]"#;
        let r = replace(text);
        assert_eq!(r.text, r#"[null,"é",null,{"k":null},7]"#);
        for needle in ["\"é\"", "{\"k\"", "7]"] {
            let clean = r.text.find(needle).unwrap();
            assert_eq!(
                r.original_offset(clean),
                text.find(needle).unwrap(),
                "{needle}"
            );
        }
        // Inside a replaced `null`: the start of the token.
        let first = r.text.find("null").unwrap();
        assert_eq!(r.original_offset(first), 1);
        assert_eq!(r.original_offset(0), 0);
    }
}
