//! The files Ragas and Hugging Face users write, read into records (one JSON object per
//! sample) with where each came from: pandas CSV (`to_csv`), pandas JSON (`to_json`, orients
//! `records`, `columns`, `index`, `split`, `table`), Hugging Face columnar JSON
//! (`{"question": [...], "contexts": [[...]]}`) and Parquet.
//!
//! A CSV cell is text: [`cell_value`] turns it into the JSON value the record reader expects
//! (list columns through [`super::list_repr`], score columns as numbers, an empty cell or
//! `nan` as absent); a broken cell is an error for that row only.

use std::collections::{BTreeMap, HashMap};

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::case::strip_position;
use crate::source::SourceError;

/// One sample read from a file, and where it is.
#[derive(Debug, Clone)]
pub(crate) struct SourceRow {
    /// Its fields.
    pub obj: Map<String, Value>,
    /// 1-based line where it starts (the row number for Parquet).
    pub line: usize,
    /// 1-based column where it starts.
    pub col: usize,
    /// Where each field's value starts, when known.
    pub places: HashMap<String, (usize, usize)>,
    /// The 1-based record number (for `row-N` ids of formats without lines).
    pub number: usize,
    /// CSV cells still to be decoded once the columns are classified.
    pub cells: Vec<(String, String)>,
    /// A JSON Lines record whose line was checked but not parsed yet: `obj` is empty and the
    /// line is parsed when the record is converted, so a trace file's records are never all
    /// held as `Value` trees at once.
    pub deferred: bool,
}

impl SourceRow {
    /// Line and column of `key`'s value, else of the row.
    pub fn place(&self, key: &str) -> (usize, usize) {
        self.places
            .get(key)
            .copied()
            .unwrap_or((self.line, self.col))
    }
}

/// Where each line of a text starts, to find the line and column of any byte offset by a
/// binary search: a JSON dataset places every value of every record, so scanning from the
/// start of the file for each (as a plain `line_col` would) takes quadratic time.
struct LineIndex<'a> {
    text: &'a str,
    /// Byte offset of each line's first byte (the first is 0).
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    fn new(text: &'a str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        LineIndex { text, starts }
    }

    /// Line and column (1-based, the column in characters) of byte `offset` (at most the
    /// text's length; a line ends after its `\n`).
    fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        (line, self.text[start..offset].chars().count() + 1)
    }

    /// The text of 1-based `line` as `str::lines` gives it: without its `\n` or `\r\n` (a
    /// last line without `\n` keeps a final `\r`); empty past the last line.
    fn line(&self, line: usize) -> &'a str {
        let Some(&start) = self.starts.get(line.wrapping_sub(1)) else {
            return "";
        };
        match self.starts.get(line) {
            Some(&next) => {
                let text = &self.text[start..next - 1];
                text.strip_suffix('\r').unwrap_or(text)
            }
            None => &self.text[start..],
        }
    }
}

fn offset_of(text: &str, raw: &RawValue) -> usize {
    (raw.get().as_ptr() as usize).saturating_sub(text.as_ptr() as usize)
}

/// Columns pandas writes for its index: an empty header or `Unnamed: N`.
pub(crate) fn is_index_column(name: &str) -> bool {
    name.is_empty() || name.starts_with("Unnamed: ")
}

/// Reads a CSV file's records; cells stay text in [`SourceRow::cells`].
pub(crate) fn csv_rows(path: &str, text: &str) -> Result<Vec<SourceRow>, Vec<SourceError>> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(false)
        .from_reader(text.as_bytes());
    let headers = match reader.headers() {
        Ok(h) => h.clone(),
        Err(e) => return Err(vec![csv_error(path, text, &e)]),
    };
    let names: Vec<String> = headers.iter().map(str::to_string).collect();
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    for (i, record) in reader.records().enumerate() {
        match record {
            Ok(record) => {
                let line = record.position().map_or(i + 2, |p| p.line() as usize);
                rows.push(SourceRow {
                    obj: Map::new(),
                    line,
                    col: 1,
                    places: HashMap::new(),
                    number: i + 1,
                    cells: names
                        .iter()
                        .zip(record.iter())
                        .filter(|(n, _)| !is_index_column(n))
                        .map(|(n, c)| (n.clone(), c.to_string()))
                        .collect(),
                    deferred: false,
                });
            }
            Err(e) => errors.push(csv_error(path, text, &e)),
        }
    }
    if errors.is_empty() {
        Ok(rows)
    } else {
        Err(errors)
    }
}

fn csv_error(path: &str, text: &str, e: &csv::Error) -> SourceError {
    let line = e.position().map_or(1, |p| p.line() as usize);
    let mut err = SourceError::at(path, text, line, 1, 1, format!("malformed CSV: {e}"));
    err.help = Some(
        "every record needs as many fields as the header; quote fields holding commas, quotes or newlines"
            .into(),
    );
    err
}

/// A JSON document as parsed (its `NaN` / `Infinity` rewritten, [`super::nonfinite`]) and as
/// written (what places and messages point at).
struct Doc<'a> {
    /// The text parsed.
    parsed: &'a str,
    /// The file's text, by line.
    original: LineIndex<'a>,
    rewritten: &'a super::nonfinite::Rewritten,
}

impl Doc<'_> {
    /// Line and column, in the file as written, of a value of the parsed text.
    fn place(&self, raw: &RawValue) -> (usize, usize) {
        self.place_at(offset_of(self.parsed, raw))
    }

    /// Line and column, in the file as written, of byte `offset` of the parsed text.
    fn place_at(&self, offset: usize) -> (usize, usize) {
        self.original
            .line_col(self.rewritten.original_offset(offset))
    }
}

/// Reads a JSON document's records: an array of objects (pandas `records`), an object of
/// columns (pandas `columns`: `{col: {index: value}}`; Hugging Face: `{col: [values]}`), an
/// object of rows (pandas `index`), or pandas `split` / `table`. Python's bare `NaN`,
/// `Infinity` and `-Infinity` (`json.dump` of a Ragas result) are absent values.
pub(crate) fn json_rows(path: &str, text: &str) -> Result<Vec<SourceRow>, Vec<SourceError>> {
    let rewritten = super::nonfinite::replace(text);
    let doc = Doc {
        parsed: &rewritten.text,
        original: LineIndex::new(text),
        rewritten: &rewritten,
    };
    let parsed = doc.parsed;
    let root: &RawValue = serde_json::from_str(parsed).map_err(|e| {
        let (line, col) = doc.place_at(byte_of(parsed, e.line(), e.column()));
        let mut err = SourceError::at(
            path,
            text,
            line,
            col,
            1,
            format!("malformed JSON: {}", strip_position(&e.to_string())),
        );
        err.help =
            Some("the file must be one JSON document (or one object per line: JSONL)".into());
        vec![err]
    })?;
    let shape_error = |message: &str| {
        let (line, col) = doc.place(root);
        let mut err = SourceError::at(path, text, line, col, 1, message.to_string());
        err.expected = Some(
            "an array of records, `{column: [values]}` (Hugging Face), or pandas' `to_json` orients records, columns, index, split or table".into(),
        );
        vec![err]
    };
    if let Ok(records) = serde_json::from_str::<Vec<&RawValue>>(root.get()) {
        return records_rows(path, &doc, &records);
    }
    let Ok(top) = serde_json::from_str::<BTreeMap<String, &RawValue>>(root.get()) else {
        return Err(shape_error(
            "the document is neither an array nor an object",
        ));
    };
    // pandas `split` and `table`.
    if let (Some(columns), Some(data)) = (top.get("columns"), top.get("data")) {
        let columns: Vec<String> = serde_json::from_str(columns.get())
            .map_err(|_| shape_error("`columns` of a pandas `split` document must be names"))?;
        let data: Vec<Vec<&RawValue>> = serde_json::from_str(data.get())
            .map_err(|_| shape_error("`data` of a pandas `split` document must be rows"))?;
        let mut rows = Vec::new();
        for (i, cells) in data.iter().enumerate() {
            let mut row = empty_row(&doc, cells.first().copied(), i + 1);
            for (name, raw) in columns.iter().zip(cells) {
                insert(&mut row, &doc, name, raw);
            }
            rows.push(row);
        }
        return Ok(drop_index(rows));
    }
    if let (Some(_), Some(data)) = (top.get("schema"), top.get("data")) {
        let records: Vec<&RawValue> = serde_json::from_str(data.get())
            .map_err(|_| shape_error("`data` of a pandas `table` document must be records"))?;
        return records_rows(path, &doc, &records);
    }
    // Columns in file order.
    let mut columns: Vec<(&String, &&RawValue)> = top.iter().collect();
    columns.sort_by_key(|(_, raw)| offset_of(parsed, raw));
    let arrays: Option<Vec<(&String, Vec<&RawValue>)>> = columns
        .iter()
        .map(|(k, raw)| {
            serde_json::from_str::<Vec<&RawValue>>(raw.get())
                .ok()
                .map(|v| (*k, v))
        })
        .collect();
    if let Some(arrays) = arrays {
        let n = arrays.first().map_or(0, |(_, v)| v.len());
        if let Some((name, v)) = arrays.iter().find(|(_, v)| v.len() != n) {
            return Err(shape_error(&format!(
                "columns of different lengths: `{}` has {n} values, `{name}` has {}",
                arrays[0].0,
                v.len()
            )));
        }
        let mut rows = Vec::new();
        for i in 0..n {
            let mut row = empty_row(&doc, arrays.first().map(|(_, v)| v[i]), i + 1);
            for (name, values) in &arrays {
                insert(&mut row, &doc, name, values[i]);
            }
            rows.push(row);
        }
        return Ok(rows);
    }
    let objects: Option<Vec<(&String, BTreeMap<String, &RawValue>)>> = columns
        .iter()
        .map(|(k, raw)| {
            serde_json::from_str::<BTreeMap<String, &RawValue>>(raw.get())
                .ok()
                .map(|v| (*k, v))
        })
        .collect();
    let Some(objects) = objects else {
        return Err(shape_error(
            "an object whose values are neither all lists nor all objects",
        ));
    };
    let is_sample = |k: &str| {
        super::RAGAS_KEYS.contains(&k) || super::RAGAS_LEGACY.iter().any(|(o, _)| *o == k)
    };
    if objects.iter().any(|(k, _)| is_sample(k)) {
        // pandas `columns`: {column: {index: value}}; rows by index (numeric order).
        let mut index: Vec<&String> = objects.iter().flat_map(|(_, m)| m.keys()).collect();
        index.sort_by(|a, b| index_order(a, b));
        index.dedup();
        let mut rows = Vec::new();
        for (i, key) in index.iter().enumerate() {
            let first = objects.iter().find_map(|(_, m)| m.get(*key).copied());
            let mut row = empty_row(&doc, first, i + 1);
            for (name, m) in &objects {
                if let Some(raw) = m.get(*key) {
                    insert(&mut row, &doc, name, raw);
                }
            }
            rows.push(row);
        }
        return Ok(drop_index(rows));
    }
    // pandas `index`: {index: {column: value}}.
    let mut rows = Vec::new();
    for (i, (_, m)) in objects.iter().enumerate() {
        let mut fields: Vec<(&String, &&RawValue)> = m.iter().collect();
        fields.sort_by_key(|(_, raw)| offset_of(parsed, raw));
        let mut row = empty_row(&doc, fields.first().map(|(_, r)| **r), i + 1);
        for (name, raw) in fields {
            insert(&mut row, &doc, name, raw);
        }
        rows.push(row);
    }
    Ok(drop_index(rows))
}

fn index_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        _ => a.cmp(b),
    }
}

fn drop_index(mut rows: Vec<SourceRow>) -> Vec<SourceRow> {
    for r in &mut rows {
        r.obj.retain(|k, _| !is_index_column(k));
    }
    rows
}

fn empty_row(doc: &Doc<'_>, first: Option<&RawValue>, number: usize) -> SourceRow {
    let (line, col) = first.map_or((1, 1), |raw| doc.place(raw));
    SourceRow {
        obj: Map::new(),
        line,
        col,
        places: HashMap::new(),
        number,
        cells: Vec::new(),
        deferred: false,
    }
}

fn insert(row: &mut SourceRow, doc: &Doc<'_>, name: &str, raw: &RawValue) {
    let value: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
    row.places.insert(name.to_string(), doc.place(raw));
    row.obj.insert(name.to_string(), value);
}

fn records_rows(
    path: &str,
    doc: &Doc<'_>,
    records: &[&RawValue],
) -> Result<Vec<SourceRow>, Vec<SourceError>> {
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in records.iter().enumerate() {
        match serde_json::from_str::<BTreeMap<String, &RawValue>>(raw.get()) {
            Ok(m) => {
                let mut fields: Vec<(&String, &&RawValue)> = m.iter().collect();
                fields.sort_by_key(|(_, r)| offset_of(doc.parsed, r));
                let mut row = empty_row(doc, Some(raw), i + 1);
                for (name, r) in fields {
                    insert(&mut row, doc, name, r);
                }
                rows.push(row);
            }
            Err(_) => {
                let (line, col) = doc.place(raw);
                errors.push(SourceError::at_line(
                    path,
                    doc.original.line(line),
                    line,
                    col,
                    1,
                    "a record must be a JSON object",
                ));
            }
        }
    }
    if errors.is_empty() {
        Ok(drop_index(rows))
    } else {
        Err(errors)
    }
}

/// The byte offset of serde_json's 1-based `line` and `column` (bytes) in `text`.
fn byte_of(text: &str, line: usize, column: usize) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let mut at = (start + column.saturating_sub(1)).min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Reads a Parquet file's rows (every column, nested lists and structs as JSON).
pub(crate) fn parquet_rows(path: &str, bytes: Vec<u8>) -> Result<Vec<SourceRow>, Vec<SourceError>> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let fail = |message: String| {
        let mut err = SourceError::at(path, "", 1, 1, 1, message);
        err.help = Some(
            "Parquet files written by pyarrow / pandas / Hugging Face `datasets` (snappy, gzip, lz4 or no compression) are read; re-save with `df.to_parquet(path, compression=\"snappy\")`".into(),
        );
        vec![err]
    };
    let reader = SerializedFileReader::new(bytes::Bytes::from(bytes))
        .map_err(|e| fail(format!("not a readable Parquet file: {e}")))?;
    let iter = reader
        .get_row_iter(None)
        .map_err(|e| fail(format!("cannot read the Parquet rows: {e}")))?;
    let mut rows = Vec::new();
    for (i, row) in iter.enumerate() {
        let row = row.map_err(|e| fail(format!("row {}: {e}", i + 1)))?;
        let mut obj = Map::new();
        for (name, field) in row.get_column_iter() {
            obj.insert(name.clone(), field_value(field));
        }
        rows.push(SourceRow {
            obj,
            line: i + 1,
            col: 1,
            places: HashMap::new(),
            number: i + 1,
            cells: Vec::new(),
            deferred: false,
        });
    }
    Ok(drop_index(rows))
}

/// One Parquet field as JSON: numbers, strings, booleans, lists, maps and structs as
/// themselves; a NaN as absent; dates, times, decimals and bytes as their text.
fn field_value(field: &parquet::record::Field) -> Value {
    use parquet::record::{Field, MapAccessor};
    match field {
        Field::Null => Value::Null,
        Field::Bool(b) => Value::Bool(*b),
        Field::Byte(v) => Value::from(*v),
        Field::Short(v) => Value::from(*v),
        Field::Int(v) => Value::from(*v),
        Field::Long(v) => Value::from(*v),
        Field::UByte(v) => Value::from(*v),
        Field::UShort(v) => Value::from(*v),
        Field::UInt(v) => Value::from(*v),
        Field::ULong(v) => Value::from(*v),
        Field::Float(v) => {
            serde_json::Number::from_f64(f64::from(*v)).map_or(Value::Null, Value::Number)
        }
        Field::Double(v) => serde_json::Number::from_f64(*v).map_or(Value::Null, Value::Number),
        Field::Str(s) => Value::String(s.clone()),
        Field::Group(row) => Value::Object(
            row.get_column_iter()
                .map(|(k, v)| (k.clone(), field_value(v)))
                .collect(),
        ),
        Field::ListInternal(list) => {
            Value::Array(list.elements().iter().map(field_value).collect())
        }
        Field::MapInternal(map) => {
            let keys = map.get_keys();
            let values = map.get_values();
            let mut out = Map::new();
            for i in 0..map.len() {
                let k = keys
                    .get_string(i)
                    .cloned()
                    .unwrap_or_else(|_| i.to_string());
                let v = values
                    .get_string(i)
                    .map(|s| Value::String(s.clone()))
                    .unwrap_or(Value::Null);
                out.insert(k, v);
            }
            Value::Object(out)
        }
        other => Value::String(other.to_string()),
    }
}

/// `nan`, `NaN`, an empty cell and the like: what pandas writes for a missing value.
pub(crate) fn is_absent(cell: &str) -> bool {
    matches!(
        cell.trim(),
        "" | "nan" | "NaN" | "None" | "null" | "<NA>" | "NA"
    )
}

/// A score cell as a number (`None` for an absent value or text that is not a number).
pub(crate) fn number(cell: &str) -> Option<f64> {
    cell.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::LineIndex;

    /// Line and column by scanning from the start (what the index replaces).
    fn scanned(text: &str, offset: usize) -> (usize, usize) {
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let start = before.rfind('\n').map_or(0, |i| i + 1);
        (line, before[start..].chars().count() + 1)
    }

    #[test]
    fn the_line_index_places_every_offset_as_a_scan_from_the_start() {
        for text in [
            "",
            "\n",
            "[\n  {\"a\": 1},\n  {\"b\": \"é\"}\n]",
            "no line end",
            "\r\nx\r\n\r\nlast",
            "a bare\rcarriage return\r\nand a last line\r",
            "ü\nüü\n\n",
        ] {
            let index = LineIndex::new(text);
            for offset in (0..=text.len()).filter(|&o| text.is_char_boundary(o)) {
                assert_eq!(
                    index.line_col(offset),
                    scanned(text, offset),
                    "{text:?} at {offset}"
                );
            }
            for (i, line) in text.lines().enumerate() {
                assert_eq!(index.line(i + 1), line, "{text:?} line {}", i + 1);
            }
            assert_eq!(index.line(text.lines().count() + 2), "");
        }
    }
}
