//! Errors in files the user wrote, pointing at `file:line:col`, and YAML loading with spans.
//!
//! YAML is parsed with `marked-yaml` into a JSON value plus a map from key path
//! (`system.rag.top_k`, `evaluators[1].k`) to source positions. Typed deserialisation goes
//! through `serde_path_to_error`, so a serde error comes back with the key path, which the span
//! map turns into a line and column.

use std::collections::HashMap;
use std::fmt;

use marked_yaml::types::{MarkedScalarNode, Node};
use serde::de::DeserializeOwned;
use serde_json::{Map, Number, Value};

/// Where an error was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A position in a file (1-based line and column).
    File {
        /// The file as the user named it.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The text of that line, for the snippet.
        source_line: Option<String>,
        /// How many characters to underline from `column`.
        width: usize,
    },
    /// A command-line override such as `--set system.rag.top_k=4`.
    Override(String),
}

/// An error in user input, with its location, the key path, what was expected and a fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError {
    /// What is wrong, in one line.
    pub message: String,
    /// Where.
    pub origin: Origin,
    /// The key path (`system.rag.top_k`), when the error is about a key.
    pub key_path: Option<String>,
    /// What was expected, when known.
    pub expected: Option<String>,
    /// A suggested fix ("did you mean `top_k`?").
    pub help: Option<String>,
}

impl SourceError {
    /// An error at `line:column` of `path`, with the snippet taken from `text` (the whole
    /// file: finding the line reads the text up to it, so a reader that reports an error per
    /// line uses [`SourceError::at_line`] with the line it holds).
    pub fn at(
        path: &str,
        text: &str,
        line: usize,
        column: usize,
        width: usize,
        message: impl Into<String>,
    ) -> Self {
        let mut err = Self::at_line(path, "", line, column, width, message);
        if let Origin::File { source_line, .. } = &mut err.origin {
            *source_line = text.lines().nth(line.saturating_sub(1)).map(str::to_string);
        }
        err
    }

    /// An error at `line:column` of `path`, whose text is `source_line` (the snippet): what
    /// [`SourceError::at`] gives for that line of the file, without looking for it.
    pub fn at_line(
        path: &str,
        source_line: &str,
        line: usize,
        column: usize,
        width: usize,
        message: impl Into<String>,
    ) -> Self {
        SourceError {
            message: message.into(),
            origin: Origin::File {
                path: path.to_string(),
                line,
                column,
                source_line: Some(source_line.to_string()),
                width: width.max(1),
            },
            key_path: None,
            expected: None,
            help: None,
        }
    }

    /// `file:line:col` (or `--set …`) of this error.
    pub fn location(&self) -> String {
        match &self.origin {
            Origin::File {
                path, line, column, ..
            } => format!("{path}:{line}:{column}"),
            Origin::Override(arg) => format!("--set {arg}"),
        }
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "error: {}", self.message)?;
        writeln!(f, "  --> {}", self.location())?;
        if let Origin::File {
            line,
            column,
            source_line: Some(src),
            width,
            ..
        } = &self.origin
        {
            let num = line.to_string();
            let pad = " ".repeat(num.len());
            writeln!(f, "{pad} |")?;
            writeln!(f, "{num} | {src}")?;
            let lead: String = src
                .chars()
                .take(column.saturating_sub(1))
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            writeln!(f, "{pad} | {lead}{}", "^".repeat(*width))?;
        }
        if let Some(key) = &self.key_path {
            writeln!(f, "  = key: {key}")?;
        }
        if let Some(expected) = &self.expected {
            writeln!(f, "  = expected: {expected}")?;
        }
        if let Some(help) = &self.help {
            writeln!(f, "  = help: {help}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SourceError {}

/// The closest candidate to `word` among `candidates`, if it is close enough to be a likely typo.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(word, c), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// A source position (1-based) and the width of the token there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// Width of the token.
    pub width: usize,
}

/// A YAML file loaded as JSON, with the position of every key and value.
#[derive(Debug, Clone)]
pub struct YamlDocument {
    /// The path as the user named it.
    pub path: String,
    /// The file's text.
    pub text: String,
    /// The document as a JSON value.
    pub value: Value,
    keys: HashMap<String, Pos>,
    values: HashMap<String, Pos>,
}

impl YamlDocument {
    /// Parses `text` (read from `path`) into a JSON value with positions.
    pub fn parse(path: &str, text: &str) -> Result<Self, SourceError> {
        let node = marked_yaml::parse_yaml_with_options(
            0,
            text,
            marked_yaml::LoaderOptions::default()
                .error_on_duplicate_keys(true)
                .prevent_coercion(true),
        )
        .map_err(|e| load_error(path, text, e))?;
        let mut doc = YamlDocument {
            path: path.to_string(),
            text: text.to_string(),
            value: Value::Null,
            keys: HashMap::new(),
            values: HashMap::new(),
        };
        doc.value = doc.convert(&node, String::new());
        Ok(doc)
    }

    fn convert(&mut self, node: &Node, path: String) -> Value {
        let width = match node {
            Node::Scalar(s) => Some(s.as_str().chars().count()),
            _ => None,
        };
        if let Some(pos) = span_pos(node.span(), width) {
            self.values.insert(path.clone(), pos);
        }
        match node {
            Node::Scalar(s) => scalar_value(s),
            Node::Sequence(items) => Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| self.convert(item, format!("{path}[{i}]")))
                    .collect(),
            ),
            Node::Mapping(map) => {
                let mut out = Map::new();
                for (key, value) in map.iter() {
                    let key_str = key.as_str().to_string();
                    let child = if path.is_empty() {
                        key_str.clone()
                    } else {
                        format!("{path}.{key_str}")
                    };
                    if let Some(pos) = span_pos(key.span(), Some(key_str.chars().count())) {
                        self.keys.insert(child.clone(), pos);
                    }
                    let v = self.convert(value, child);
                    out.insert(key_str, v);
                }
                Value::Object(out)
            }
        }
    }

    /// Position of the key at `key_path`, else of its value, else of the nearest parent.
    pub fn locate(&self, key_path: &str) -> Option<Pos> {
        let mut path = key_path.to_string();
        loop {
            if let Some(p) = self.keys.get(&path).or_else(|| self.values.get(&path)) {
                return Some(*p);
            }
            let cut = path.rfind(['.', '['])?;
            path.truncate(cut);
        }
    }

    /// Position of the value at `key_path` (falling back as [`YamlDocument::locate`]).
    pub fn locate_value(&self, key_path: &str) -> Option<Pos> {
        self.values
            .get(key_path)
            .copied()
            .or_else(|| self.locate(key_path))
    }

    /// An error located at `key_path`.
    pub fn error_at(
        &self,
        key_path: &str,
        value_position: bool,
        message: impl Into<String>,
    ) -> SourceError {
        let pos = if value_position {
            self.locate_value(key_path)
        } else {
            self.locate(key_path)
        }
        .unwrap_or(Pos {
            line: 1,
            column: 1,
            width: 1,
        });
        let mut err = SourceError::at(
            &self.path, &self.text, pos.line, pos.column, pos.width, message,
        );
        if !key_path.is_empty() {
            err.key_path = Some(key_path.to_string());
        }
        err
    }

    /// Deserialises `value` (this document's value, possibly with overrides applied) into `T`,
    /// turning serde's message into a located [`SourceError`] with a "did you mean".
    pub fn deserialize<T: DeserializeOwned>(&self, value: &Value) -> Result<T, SourceError> {
        serde_path_to_error::deserialize::<_, T>(value).map_err(|e| {
            let path = e.path().to_string();
            let path = if path == "." { String::new() } else { path };
            self.serde_error(&path, &e.inner().to_string())
        })
    }

    /// Deserialises the value found at `key_path` of `value` into `T`; errors are located under
    /// that path (e.g. `judges.default.modle`).
    pub fn deserialize_at<T: DeserializeOwned>(
        &self,
        value: &Value,
        key_path: &str,
    ) -> Result<T, SourceError> {
        serde_path_to_error::deserialize::<_, T>(value).map_err(|e| {
            let inner = e.path().to_string();
            let path = if inner == "." {
                key_path.to_string()
            } else {
                format!("{key_path}.{inner}")
            };
            self.serde_error(&path, &e.inner().to_string())
        })
    }

    fn serde_error(&self, path: &str, message: &str) -> SourceError {
        let (head, expected) = split_expected(message);
        if let Some(field) = backticked(head, "unknown field `") {
            let key = if path.ends_with(&field) {
                path.to_string()
            } else {
                join_key(path, &field)
            };
            let mut err = self.error_at(&key, false, format!("unknown key `{field}`"));
            err.key_path = Some(key);
            err.expected = expected
                .as_ref()
                .map(|list| format!("one of {}", list.join(", ")));
            err.help = expected
                .as_ref()
                .and_then(|list| did_you_mean(&field, list.iter().map(String::as_str)))
                .map(|s| format!("did you mean `{s}`?"));
            return err;
        }
        if let Some(field) = backticked(head, "missing field `") {
            let mut err = self.error_at(path, false, format!("missing key `{field}`"));
            err.key_path = Some(join_key(path, &field));
            err.help = Some(format!("add `{field}:` here"));
            return err;
        }
        if let Some(variant) = backticked(head, "unknown variant `") {
            let mut err = self.error_at(path, true, format!("unknown value `{variant}`"));
            err.expected = expected
                .as_ref()
                .map(|list| format!("one of {}", list.join(", ")));
            err.help = expected
                .as_ref()
                .and_then(|list| did_you_mean(&variant, list.iter().map(String::as_str)))
                .map(|s| format!("did you mean `{s}`?"));
            return err;
        }
        if let Some(rest) = head.strip_prefix("invalid type: ") {
            let (found, want) = rest.split_once(", expected ").unwrap_or((rest, ""));
            let mut err = self.error_at(path, true, format!("wrong type: found {found}"));
            if !want.is_empty() {
                err.expected = Some(friendly_type(want));
            }
            return err;
        }
        if let Some(rest) = head.strip_prefix("invalid value: ") {
            let (found, want) = rest.split_once(", expected ").unwrap_or((rest, ""));
            let mut err = self.error_at(path, true, format!("invalid value: {found}"));
            if !want.is_empty() {
                err.expected = Some(want.to_string());
            }
            return err;
        }
        self.error_at(path, true, head.to_string())
    }
}

/// Rust type names in serde messages, said the way a YAML author thinks of them.
fn friendly_type(want: &str) -> String {
    match want {
        "usize" | "u64" | "u32" => "a non-negative integer".to_string(),
        "i64" | "i32" => "an integer".to_string(),
        "f64" | "f32" => "a number".to_string(),
        "a boolean" => "true or false".to_string(),
        other => other.to_string(),
    }
}

fn join_key(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

/// Splits serde's "…, expected one of `a`, `b`" into the head and the list.
fn split_expected(message: &str) -> (&str, Option<Vec<String>>) {
    for marker in [", expected one of ", ", expected "] {
        if let Some((head, tail)) = message.split_once(marker) {
            if tail.starts_with('`') {
                let list = tail
                    .split('`')
                    .enumerate()
                    .filter(|(i, _)| i % 2 == 1)
                    .map(|(_, s)| s.to_string())
                    .collect();
                return (head, Some(list));
            }
        }
    }
    (message, None)
}

fn backticked(message: &str, prefix: &str) -> Option<String> {
    let rest = message.strip_prefix(prefix)?;
    Some(rest.split('`').next().unwrap_or_default().to_string())
}

fn span_pos(span: &marked_yaml::Span, width: Option<usize>) -> Option<Pos> {
    let start = span.start()?;
    let width = width
        .or_else(|| {
            span.end()
                .filter(|e| e.line() == start.line())
                .map(|e| e.column().saturating_sub(start.column()))
        })
        .unwrap_or(1);
    Some(Pos {
        line: start.line(),
        column: start.column(),
        width: width.max(1),
    })
}

/// YAML 1.2 core-schema typing of an unquoted scalar; quoted scalars stay strings.
fn scalar_value(s: &MarkedScalarNode) -> Value {
    let text = s.as_str();
    if !s.may_coerce() {
        return Value::String(text.to_string());
    }
    yaml_scalar(text)
}

/// Types a plain YAML scalar the way the YAML 1.2 core schema does (null, bool, int, float,
/// else string). Used for file scalars and `--set` values.
pub fn yaml_scalar(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    if let Ok(i) = text.parse::<i64>() {
        return Value::Number(i.into());
    }
    let looks_numeric = text
        .trim_start_matches(['-', '+'])
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_digit() || c == '.');
    if looks_numeric {
        if let Ok(f) = text.parse::<f64>() {
            if let Some(n) = Number::from_f64(f) {
                return Value::Number(n);
            }
        }
    }
    Value::String(text.to_string())
}

fn load_error(path: &str, text: &str, err: marked_yaml::LoadError) -> SourceError {
    use marked_yaml::LoadError as E;
    let (marker, message) = match &err {
        E::TopLevelMustBeMapping(m) => (*m, "the top level must be a mapping of keys".to_string()),
        E::TopLevelMustBeSequence(m) => (*m, "the top level must be a sequence".to_string()),
        E::UnexpectedAnchor(m) => (*m, "YAML anchors are not supported".to_string()),
        E::MappingKeyMustBeScalar(m) => (*m, "mapping keys must be plain scalars".to_string()),
        E::UnexpectedTag(m) => (*m, "YAML tags are not supported".to_string()),
        E::ScanError(m, e) => (*m, format!("invalid YAML: {}", e.info())),
        E::DuplicateKey(inner) => (
            *inner
                .key
                .span()
                .start()
                .unwrap_or(&marked_yaml::Marker::new(0, 0, 1, 1)),
            format!("duplicate key `{}`", inner.key.as_str()),
        ),
    };
    SourceError::at(
        path,
        text,
        marker.line().max(1),
        marker.column().max(1),
        1,
        message,
    )
}

/// Decodes a file's bytes as UTF-8, or a located error at the first invalid byte (its line
/// and column, counted in characters of the valid text before it), so that a file saved in
/// another encoding is pointed at like any other bad input.
pub fn decode_utf8(path: &str, bytes: Vec<u8>) -> Result<String, SourceError> {
    match String::from_utf8(bytes) {
        Ok(text) => Ok(text),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let bytes = e.into_bytes();
            let byte = bytes[at];
            // The valid prefix is UTF-8 by definition; the rest is shown lossily.
            let before = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            let shown = String::from_utf8_lossy(&bytes);
            let mut err = SourceError::at(
                path,
                &shown,
                line,
                column,
                1,
                format!("the file is not UTF-8: byte 0x{byte:02x} at line {line}, column {column}"),
            );
            err.help = Some(
                "save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`, or your editor's encoding menu)"
                    .to_string(),
            );
            Err(err)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_at_a_line_it_holds_is_the_error_at_that_line_of_the_file() {
        let text = "first\r\n  second line\nthird";
        for (i, line) in text.lines().enumerate() {
            let by_file = SourceError::at("c.jsonl", text, i + 1, 3, 2, "bad");
            let by_line = SourceError::at_line("c.jsonl", line, i + 1, 3, 2, "bad");
            assert_eq!(by_file, by_line);
            assert_eq!(by_line.to_string(), by_file.to_string());
        }
        // Past the end of the file there is no snippet.
        let past = SourceError::at("c.jsonl", text, 9, 1, 1, "bad");
        assert!(matches!(
            past.origin,
            Origin::File {
                source_line: None,
                ..
            }
        ));
    }

    #[test]
    fn positions_of_keys_and_values() {
        let doc = YamlDocument::parse("x.yaml", "a:\n  b: 3\n  c: [1, 'x']\n").unwrap();
        assert_eq!(doc.value, serde_json::json!({"a": {"b": 3, "c": [1, "x"]}}));
        assert_eq!(
            doc.locate("a.b"),
            Some(Pos {
                line: 2,
                column: 3,
                width: 1
            })
        );
        assert_eq!(doc.locate("a.c[1]").unwrap().line, 3);
        assert_eq!(doc.locate("a.zz").unwrap().line, 1);
    }

    #[test]
    fn quoted_scalars_stay_strings() {
        let doc = YamlDocument::parse("x.yaml", "a: '4'\nb: 4\nc: 0.5\nd: yes\n").unwrap();
        assert_eq!(
            doc.value,
            serde_json::json!({"a": "4", "b": 4, "c": 0.5, "d": "yes"})
        );
    }

    #[test]
    fn suggestion() {
        assert_eq!(
            did_you_mean("top_kk", ["depth", "top_k", "workers"]),
            Some("top_k")
        );
        assert_eq!(did_you_mean("zzz", ["depth", "top_k"]), None);
    }
}
