//! A small JSON Schema validator for the subset the templates use.
//!
//! Supported keywords: `type` (a name or a list of names; `integer` accepts numbers with no
//! fractional part), `enum`, `properties`, `required`, `additionalProperties: false`, `items`,
//! `minItems`, `maxItems`, `minimum`, `maximum`. Other keywords are ignored — `maxLength` too:
//! the templates use it to bound what a grammar-enforcing server generates, not to reject a
//! long reason from a provider that does not enforce it. Errors name the
//! failing location as a path (`$.verdicts[2].verdict`), and that message is what the repair
//! attempt shows the judge.

use serde_json::Value;

use crate::error::ReplyError;

/// Checks `value` against `schema`; the error names the first failing location.
pub fn validate(schema: &Value, value: &Value) -> Result<(), ReplyError> {
    check(schema, value, "$").map_err(ReplyError::new)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn has_type(v: &Value, ty: &str) -> bool {
    match ty {
        "integer" => {
            v.as_i64().is_some()
                || v.as_u64().is_some()
                || v.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        "number" => v.is_number(),
        other => type_name(v) == other,
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s
    }
}

/// [`validate`] at `path`; the message becomes a [`ReplyError`] there.
fn check(schema: &Value, value: &Value, path: &str) -> Result<(), String> {
    let Some(schema) = schema.as_object() else {
        return Ok(());
    };
    if let Some(ty) = schema.get("type") {
        let names: Vec<&str> = match ty {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !names.is_empty() && !names.iter().any(|t| has_type(value, t)) {
            return Err(format!(
                "{path}: expected {}, got {} {}",
                names.join(" or "),
                type_name(value),
                short(value)
            ));
        }
    }
    if let Some(Value::Array(allowed)) = schema.get("enum") {
        let ok = allowed.iter().any(|a| match (a.as_f64(), value.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => a == value,
        });
        if !ok {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            return Err(format!(
                "{path}: {} is not one of {}",
                short(value),
                list.join(", ")
            ));
        }
    }
    if let Some(x) = value.as_f64() {
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
            if x < min {
                return Err(format!("{path}: {x} is below the minimum {min}"));
            }
        }
        if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
            if x > max {
                return Err(format!("{path}: {x} is above the maximum {max}"));
            }
        }
    }
    if let Value::Object(obj) = value {
        if let Some(Value::Array(required)) = schema.get("required") {
            for key in required.iter().filter_map(Value::as_str) {
                if !obj.contains_key(key) {
                    return Err(format!("{path}: missing required property `{key}`"));
                }
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        if let Some(props) = props {
            for (key, sub) in props {
                if let Some(v) = obj.get(key) {
                    check(sub, v, &format!("{path}.{key}"))?;
                }
            }
        }
        if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
            for key in obj.keys() {
                if !props.is_some_and(|p| p.contains_key(key)) {
                    return Err(format!("{path}: unexpected property `{key}`"));
                }
            }
        }
    }
    if let Value::Array(items) = value {
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64) {
            if (items.len() as u64) < min {
                return Err(format!(
                    "{path}: {} item(s), expected at least {min}",
                    items.len()
                ));
            }
        }
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64) {
            if (items.len() as u64) > max {
                return Err(format!(
                    "{path}: {} item(s), expected at most {max}",
                    items.len()
                ));
            }
        }
        if let Some(sub) = schema.get("items") {
            for (i, item) in items.iter().enumerate() {
                check(sub, item, &format!("{path}[{i}]"))?;
            }
        }
    }
    Ok(())
}

/// The schema without its bounds (`minItems`, `maxItems`, `minimum`, `maximum`, and the
/// generation bounds `minLength`, `maxLength`), for a
/// provider whose strict structured outputs refuse them. Requests send the bounds by default
/// (grammar-enforcing servers such as llama.cpp and vLLM honour them: without `maxItems` a
/// two-claim verdict list can run on for dozens of entries); the client falls back to this
/// form after a 400 naming one of them. The bounds are always checked locally.
pub fn without_bounds(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| {
                    !matches!(
                        k.as_str(),
                        "minItems" | "maxItems" | "minimum" | "maximum" | "minLength" | "maxLength"
                    )
                })
                .map(|(k, v)| (k.clone(), without_bounds(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_bounds).collect()),
        other => other.clone(),
    }
}

/// The schema as a strict structured-output request must send it (OpenAI's `strict: true`
/// requires every property of an object to be listed in `required`): each object's optional
/// properties are added to `required`. The templates declare optional properties nullable
/// (`"type": [T, "null"]`), so a strict provider answers `null` where another judge leaves the
/// key out, and both replies validate against the schema as declared.
pub fn strict(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out: serde_json::Map<String, Value> =
                map.iter().map(|(k, v)| (k.clone(), strict(v))).collect();
            if let Some(Value::Object(props)) = map.get("properties") {
                let required: Vec<Value> = props.keys().map(|k| Value::String(k.clone())).collect();
                out.insert("required".into(), Value::Array(required));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(strict).collect()),
        other => other.clone(),
    }
}

/// Parses a judge's text reply as JSON: the whole text, else the text inside a Markdown code
/// fence, else the span from the first `{` to the last `}`.
pub fn parse_reply(raw: &str) -> Result<Value, ReplyError> {
    let trimmed = raw.trim();
    if let Ok(v) = serde_json::from_str(trimmed) {
        return Ok(v);
    }
    if let Some(start) = trimmed.find("```") {
        let after = &trimmed[start + 3..];
        let after = after.strip_prefix("json").unwrap_or(after);
        if let Some(end) = after.find("```") {
            if let Ok(v) = serde_json::from_str(after[..end].trim()) {
                return Ok(v);
            }
        }
    }
    if let (Some(a), Some(b)) = (trimmed.find('{'), trimmed.rfind('}')) {
        if a < b {
            if let Ok(v) = serde_json::from_str(&trimmed[a..=b]) {
                return Ok(v);
            }
        }
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(v) => Ok(v),
        Err(e) => Err(ReplyError::new(format!(
            "the reply is not valid JSON ({e})"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strict_requires_every_property_and_both_replies_validate() {
        let schema = json!({"type": "object", "additionalProperties": false,
            "properties": {"grounded": {"type": "integer"},
                           "failure_mode": {"type": ["string", "null"], "enum": ["fabrication", null]},
                           "items": {"type": "array", "items": {"type": "object",
                               "properties": {"a": {"type": "integer"}, "b": {"type": ["string", "null"]}},
                               "required": ["a"]}}},
            "required": ["grounded", "items"]});
        let s = strict(&schema);
        assert_eq!(s["required"], json!(["grounded", "failure_mode", "items"]));
        assert_eq!(
            s["properties"]["items"]["items"]["required"],
            json!(["a", "b"])
        );
        // As declared: the optional key may be absent or null, never outside its list.
        for ok in [
            json!({"grounded": 1, "items": []}),
            json!({"grounded": 0, "failure_mode": null, "items": [{"a": 1, "b": null}]}),
            json!({"grounded": 0, "failure_mode": "fabrication", "items": [{"a": 1}]}),
        ] {
            assert!(validate(&schema, &ok).is_ok(), "{ok}");
        }
        assert!(validate(
            &schema,
            &json!({"grounded": 0, "failure_mode": "guess", "items": []})
        )
        .is_err());
    }

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "verdicts": {"type": "array", "minItems": 1, "maxItems": 2, "items": {
                    "type": "object",
                    "properties": {"id": {"type": "integer"}, "verdict": {"type": "integer", "enum": [0, 1]}},
                    "required": ["id", "verdict"],
                    "additionalProperties": false
                }}
            },
            "required": ["verdicts"],
            "additionalProperties": false
        })
    }

    #[test]
    fn accepts_and_rejects_with_paths() {
        let s = schema();
        assert!(validate(&s, &json!({"verdicts": [{"id": 1, "verdict": 0}]})).is_ok());
        assert!(validate(&s, &json!({"verdicts": [{"id": 1.0, "verdict": 1.0}]})).is_ok());
        let e = validate(&s, &json!({"verdicts": [{"id": 1, "verdict": 2}]}))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("$.verdicts[0].verdict: 2 is not one of"),
            "{e}"
        );
        let e = validate(&s, &json!({"verdicts": []}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least 1"), "{e}");
        let e = validate(&s, &json!({"verdicts": [{"id": 1, "verdict": 1}], "x": 1}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unexpected property `x`"), "{e}");
        let e = validate(&s, &json!({})).unwrap_err().to_string();
        assert!(e.contains("missing required property `verdicts`"), "{e}");
        let e = validate(&s, &json!({"verdicts": [{"id": "a", "verdict": 1}]}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected integer, got string"), "{e}");
    }

    #[test]
    fn strict_mode_strips_bounds_and_parse_reply_is_lenient_on_fences() {
        let s = without_bounds(&schema());
        assert!(!s.to_string().contains("minItems"));
        assert_eq!(
            parse_reply("```json\n{\"a\": 1}\n```").unwrap(),
            json!({"a": 1})
        );
        assert_eq!(parse_reply("Sure: {\"a\": 1}").unwrap(), json!({"a": 1}));
        assert!(parse_reply("{\"a\": ").is_err());
    }

    #[test]
    fn max_length_bounds_generation_only() {
        let s = json!({"type": "object", "properties": {
            "reason": {"type": "string", "maxLength": 5}}});
        // Not checked on replies: a provider that ignores the bound is not failed for it.
        assert!(validate(&s, &json!({"reason": "longer than five"})).is_ok());
        // Stripped with the other bounds for a provider that refuses them.
        assert!(!without_bounds(&s).to_string().contains("maxLength"));
    }
}
