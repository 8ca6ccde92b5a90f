//! The text of a list of strings as pandas writes it into a CSV cell: numpy's `str()` of an
//! array (`['a' 'b']`, elements separated by spaces or newlines, no commas), Python's `repr()`
//! of a list (`['a', "it's"]`), or a JSON array (`["a", "b"]`).
//!
//! Adjacent literals are separate elements (`['a' 'b']` is two strings: Python's
//! `ast.literal_eval` would glue them into `'ab'`). Single- and double-quoted literals take
//! Python's escapes (`\\ \' \" \n \r \t \a \b \f \v \0`, `\xhh`, `\uhhhh`, `\Uhhhhhhhh`,
//! octal `\ooo`; an unknown escape keeps its backslash, as Python does) and JSON's (`\/`,
//! surrogate pairs in `\ud83d\ude00`). Bare numbers (`[1 2]`, `[1, 2]`: context ids) are read as
//! their text. numpy's `array([...], dtype=object)` wrapper is accepted, and so are numpy 2's
//! scalar reprs inside a Python list (`[np.str_('a'), np.str_('c')]`, `[np.int64(3)]`: the
//! `str()` of a list of numpy scalars, what `list(array)` gives), read as their literal; a summarised repr
//! (`['a' 'b' ... 'z']`, what numpy prints for more than 1000 elements) is an error, since the
//! elements are not in the file.

use std::fmt;

/// Why a cell is not a list of strings; `offset` is the character offset in the cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListReprError {
    /// What is wrong.
    pub message: String,
    /// 0-based character offset in the cell.
    pub offset: usize,
}

impl fmt::Display for ListReprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at character {})", self.message, self.offset + 1)
    }
}

impl std::error::Error for ListReprError {}

/// Parses one cell. `Ok(None)` for an absent value: an empty cell, `nan`, `NaN`, `None` or
/// `null` (what pandas writes for a missing list).
pub fn parse_list(cell: &str) -> Result<Option<Vec<String>>, ListReprError> {
    let trimmed = cell.trim();
    if matches!(trimmed, "" | "nan" | "NaN" | "None" | "null" | "<NA>") {
        return Ok(None);
    }
    let chars: Vec<char> = trimmed.chars().collect();
    let lead = cell.chars().take_while(|c| c.is_whitespace()).count();
    let mut p = Parser {
        chars: &chars,
        pos: 0,
        lead,
    };
    p.wrapper_start();
    let items = p.list()?;
    p.wrapper_end()?;
    p.skip_space();
    if p.pos < chars.len() {
        return Err(p.error("unexpected text after the closing `]`"));
    }
    Ok(Some(items))
}

struct Parser<'a> {
    chars: &'a [char],
    pos: usize,
    lead: usize,
}

impl Parser<'_> {
    fn error(&self, message: &str) -> ListReprError {
        ListReprError {
            message: message.to_string(),
            offset: self.lead + self.pos,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn starts_with(&self, s: &str) -> bool {
        let n = s.chars().count();
        self.chars.len() >= self.pos + n
            && self.chars[self.pos..self.pos + n]
                .iter()
                .copied()
                .eq(s.chars())
    }

    /// `array(` before the list (numpy's `repr`).
    fn wrapper_start(&mut self) {
        if self.starts_with("array(") {
            self.pos += "array(".len();
        }
    }

    /// `, dtype=…)` after the list when it opened with `array(`.
    fn wrapper_end(&mut self) -> Result<(), ListReprError> {
        let opened = self.chars.iter().take(6).copied().eq("array(".chars());
        if !opened {
            return Ok(());
        }
        self.skip_space();
        if self.peek() == Some(',') {
            while self.peek().is_some_and(|c| c != ')') {
                self.pos += 1;
            }
        }
        if self.peek() != Some(')') {
            return Err(self.error("`array(` without its closing `)`"));
        }
        self.pos += 1;
        Ok(())
    }

    fn list(&mut self) -> Result<Vec<String>, ListReprError> {
        self.skip_space();
        if self.peek() != Some('[') {
            return Err(self.error("expected a list starting with `[`"));
        }
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            self.skip_space();
            match self.peek() {
                None => return Err(self.error("the list is not closed: no `]`")),
                Some(']') => {
                    self.pos += 1;
                    return Ok(items);
                }
                Some(',') if !items.is_empty() => {
                    self.pos += 1;
                    self.skip_space();
                    if self.peek() == Some(']') {
                        // A trailing comma, as Python allows.
                        continue;
                    }
                }
                _ => {}
            }
            self.skip_space();
            if self.starts_with("...") {
                return Err(self.error(
                    "summarised numpy array (`...`): the elements are not in the file; save the column as a list (`df[col].map(list)`) or write JSON",
                ));
            }
            if let Some(item) = self.numpy_scalar()? {
                items.push(item);
                continue;
            }
            match self.peek() {
                Some(q @ ('\'' | '"')) => items.push(self.string(q)?),
                Some(c) if c.is_ascii_digit() || c == '-' => items.push(self.number()),
                Some('[') => return Err(self.error("nested lists are not a list of strings")),
                Some('{') => {
                    return Err(self.error("a list of objects (messages?) is not a list of strings"))
                }
                Some(',') => return Err(self.error("an empty element between commas")),
                Some(_) => return Err(self.error("expected a quoted string")),
                None => return Err(self.error("the list is not closed: no `]`")),
            }
        }
    }

    /// numpy 2's repr of a scalar, `np.str_('a')` (also `numpy.`, `np.int64(3)`): its literal.
    fn numpy_scalar(&mut self) -> Result<Option<String>, ListReprError> {
        let prefix = if self.starts_with("np.") {
            "np.".len()
        } else if self.starts_with("numpy.") {
            "numpy.".len()
        } else {
            return Ok(None);
        };
        let start = self.pos;
        self.pos += prefix;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            self.pos += 1;
        }
        if self.peek() != Some('(') {
            self.pos = start;
            return Err(
                self.error("expected a quoted string or a numpy scalar such as `np.str_('a')`")
            );
        }
        self.pos += 1;
        self.skip_space();
        let item = match self.peek() {
            Some(q @ ('\'' | '"')) => self.string(q)?,
            Some(c) if c.is_ascii_digit() || c == '-' => self.number(),
            _ => return Err(self.error("a numpy scalar holds a quoted string or a number")),
        };
        self.skip_space();
        if self.peek() != Some(')') {
            return Err(self.error("a numpy scalar is not closed: no `)`"));
        }
        self.pos += 1;
        Ok(Some(item))
    }

    fn number(&mut self) -> String {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '.' | '_'))
        {
            self.pos += 1;
        }
        self.chars[start..self.pos].iter().collect()
    }

    fn hex(&mut self, digits: usize) -> Result<u32, ListReprError> {
        let start = self.pos;
        let mut v = 0u32;
        for _ in 0..digits {
            let Some(d) = self.peek().and_then(|c| c.to_digit(16)) else {
                self.pos = start;
                return Err(self.error(&format!("a `\\x`/`\\u` escape needs {digits} hex digits")));
            };
            v = v * 16 + d;
            self.pos += 1;
        }
        Ok(v)
    }

    fn string(&mut self, quote: char) -> Result<String, ListReprError> {
        let open = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                self.pos = open;
                return Err(self.error("a string is not closed"));
            };
            self.pos += 1;
            if c == quote {
                return Ok(out);
            }
            if c != '\\' {
                out.push(c);
                continue;
            }
            let Some(e) = self.peek() else {
                self.pos = open;
                return Err(self.error("a string is not closed"));
            };
            self.pos += 1;
            match e {
                '\\' | '\'' | '"' | '/' => out.push(e),
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'a' => out.push('\u{7}'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                'v' => out.push('\u{b}'),
                '\n' => {} // a line continuation
                'x' => {
                    let v = self.hex(2)?;
                    out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                }
                'u' => {
                    let v = self.hex(4)?;
                    if (0xd800..0xdc00).contains(&v) && self.starts_with("\\u") {
                        self.pos += 2;
                        let low = self.hex(4)?;
                        let c = 0x10000 + ((v - 0xd800) << 10) + (low.wrapping_sub(0xdc00) & 0x3ff);
                        out.push(char::from_u32(c).unwrap_or('\u{fffd}'));
                    } else {
                        out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                    }
                }
                'U' => {
                    let v = self.hex(8)?;
                    match char::from_u32(v) {
                        Some(c) => out.push(c),
                        None => return Err(self.error("`\\U` escape beyond Unicode")),
                    }
                }
                '0'..='7' => {
                    let mut v = e.to_digit(8).unwrap_or(0);
                    for _ in 0..2 {
                        match self.peek().and_then(|c| c.to_digit(8)) {
                            Some(d) => {
                                v = v * 8 + d;
                                self.pos += 1;
                            }
                            None => break,
                        }
                    }
                    out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                }
                other => {
                    out.push('\\');
                    out.push(other);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(cell: &str) -> Vec<String> {
        parse_list(cell).unwrap().unwrap()
    }

    #[test]
    fn numpy_reprs_keep_adjacent_literals_apart() {
        assert_eq!(ok("['a' 'b']"), ["a", "b"]);
        assert_eq!(
            ok("['Refunds take 14 days.'\n 'Exchanges are free.']"),
            ["Refunds take 14 days.", "Exchanges are free."]
        );
        assert_eq!(ok("[\"it's\" 'say \"hi\"']"), ["it's", "say \"hi\""]);
        assert_eq!(ok("array(['a', 'b'], dtype=object)"), ["a", "b"]);
    }

    #[test]
    fn numpy_2_scalar_reprs_in_a_python_list() {
        // `str(list(np.array(['a', "it's"])))` under numpy 2.
        assert_eq!(ok("[np.str_('a'), np.str_('c')]"), ["a", "c"]);
        assert_eq!(
            ok("[np.str_(\"it's\"), np.str_('line\\nbreak'), numpy.str_('b')]"),
            ["it's", "line\nbreak", "b"]
        );
        assert_eq!(ok("[np.int64(3), np.int64(-1)]"), ["3", "-1"]);
        let e = parse_list("[np.str_('a'").unwrap_err();
        assert!(e.message.contains("not closed"), "{e}");
        let e = parse_list("[np.str_('a', 'b')]").unwrap_err();
        assert!(e.message.contains("numpy scalar is not closed"), "{e}");
        let e = parse_list("[np.nan]").unwrap_err();
        assert!(e.message.contains("np.str_('a')"), "{e}");
    }

    #[test]
    fn python_and_json_lists() {
        assert_eq!(ok("['a', 'b',]"), ["a", "b"]);
        assert_eq!(
            ok(r#"["caf\u00e9", "\ud83d\ude00", "a\/b"]"#),
            ["café", "😀", "a/b"]
        );
        assert_eq!(
            ok(r"['it\'s', 'a\\b', 'line\nbreak', '\x41\u00e9\U0001F600', 'C:\q']"),
            ["it's", "a\\b", "line\nbreak", "Aé😀", "C:\\q"]
        );
        assert_eq!(ok("[]"), Vec::<String>::new());
        assert_eq!(ok(" [ ] "), Vec::<String>::new());
        assert_eq!(ok("[1 2]"), ["1", "2"]);
        assert_eq!(ok("['東京', 'é']"), ["東京", "é"]);
        for absent in ["", "nan", "NaN", " ", "None"] {
            assert_eq!(parse_list(absent), Ok(None), "{absent:?}");
        }
    }

    #[test]
    fn broken_cells_say_where() {
        let e = parse_list("['a' 'b").unwrap_err();
        assert_eq!(e.message, "a string is not closed");
        assert_eq!(e.offset, 5);
        assert!(parse_list("['a', 'b'")
            .unwrap_err()
            .message
            .contains("not closed"));
        assert!(parse_list("a, b")
            .unwrap_err()
            .message
            .contains("starting with `[`"));
        assert!(parse_list("['a' ... 'z']")
            .unwrap_err()
            .message
            .contains("summarised"));
        assert!(parse_list("['a'] x")
            .unwrap_err()
            .message
            .contains("after the closing"));
        assert!(parse_list("[{'content': 'hi'}]")
            .unwrap_err()
            .message
            .contains("objects"));
        assert!(parse_list("['a',, 'b']")
            .unwrap_err()
            .message
            .contains("empty element"));
    }
}
