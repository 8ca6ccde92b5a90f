//! Parsing qrels and runs from bytes: `memchr` line splitting, whitespace-separated fields,
//! and for runs a parallel, block-by-block parse into a compact per-topic form.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use oloproof_metrics::ranking::{Retrieved, TopicQrels};
use rayon::prelude::*;

use crate::error::TrecError;

#[inline]
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | 0x0b | 0x0c)
}

/// Whitespace-separated fields of one line.
struct Fields<'a> {
    line: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for Fields<'a> {
    type Item = &'a [u8];
    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let l = self.line;
        let mut i = self.pos;
        while i < l.len() && is_space(l[i]) {
            i += 1;
        }
        if i == l.len() {
            self.pos = i;
            return None;
        }
        let s = i;
        while i < l.len() && !is_space(l[i]) {
            i += 1;
        }
        self.pos = i;
        Some(&l[s..i])
    }
}

fn fields(line: &[u8]) -> Fields<'_> {
    Fields { line, pos: 0 }
}

/// Physical lines of `data` (without the newline).
fn lines(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= data.len() {
            return None;
        }
        let end = memchr::memchr(b'\n', &data[start..]).map_or(data.len(), |i| start + i);
        let line = &data[start..end];
        start = end + 1;
        Some(line)
    })
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A relevance value: an integer, or a number whose integer part is taken (C `atol`).
fn parse_rel(tok: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(tok).ok()?;
    s.parse::<i64>().ok().or_else(|| {
        s.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .map(|x| x.trunc() as i64)
    })
}

/// Parses a score. Plain decimals with at most 15 significant digits take an exact fast path
/// (an integer mantissa and a power of ten, both exact in a double, so one correctly rounded
/// division); anything else goes through the standard library's parser.
#[inline]
fn parse_score(tok: &[u8]) -> Option<f64> {
    const POW10: [f64; 16] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    ];
    let (neg, digits) = match tok.first() {
        Some(b'-') => (true, &tok[1..]),
        Some(b'+') => (false, &tok[1..]),
        _ => (false, tok),
    };
    let mut mantissa: u64 = 0;
    let mut count = 0usize;
    let mut frac: Option<usize> = None;
    let mut ok = !digits.is_empty() && digits.len() <= 16;
    if ok {
        for (i, &b) in digits.iter().enumerate() {
            match b {
                b'0'..=b'9' => {
                    mantissa = mantissa * 10 + u64::from(b - b'0');
                    count += 1;
                }
                b'.' if frac.is_none() => frac = Some(i),
                _ => {
                    ok = false;
                    break;
                }
            }
        }
    }
    if ok && count > 0 && count <= 15 {
        let scale = frac.map_or(0, |f| digits.len() - f - 1);
        let v = mantissa as f64 / POW10[scale];
        return Some(if neg { -v } else { v });
    }
    std::str::from_utf8(tok).ok()?.parse::<f64>().ok()
}

/// Qrels of every topic, sorted by topic identifier (trec_eval's order), borrowing the text.
pub(crate) struct ParsedQrels<'a> {
    pub(crate) topics: Vec<(&'a [u8], TopicQrels<&'a [u8]>)>,
}

/// Parses qrels lines `qid iter docno rel` (exactly four fields; lines starting with `#` are
/// comments; blank lines are skipped).
pub(crate) fn parse_qrels<'a>(data: &'a [u8], path: &Path) -> Result<ParsedQrels<'a>, TrecError> {
    let mut by_topic: HashMap<&[u8], Vec<(&[u8], i64)>> = HashMap::new();
    let mut order: Vec<&[u8]> = Vec::new();
    for (n, line) in lines(data).enumerate() {
        if line.first() == Some(&b'#') {
            continue;
        }
        let mut f = fields(line);
        let Some(qid) = f.next() else { continue };
        let parts = [Some(qid), f.next(), f.next(), f.next(), f.next()];
        let err = |message: String| TrecError::Parse {
            path: path.to_path_buf(),
            line: n as u64 + 1,
            message,
        };
        let (Some(_), Some(doc), Some(rel), None) = (parts[1], parts[2], parts[3], parts[4]) else {
            let count = 1 + fields(line).skip(1).count();
            return Err(err(format!(
                "expected 4 fields (qid iter docno rel), found {count}"
            )));
        };
        let rel = parse_rel(rel)
            .ok_or_else(|| err(format!("relevance '{}' is not an integer", lossy(rel))))?;
        by_topic
            .entry(qid)
            .or_insert_with(|| {
                order.push(qid);
                Vec::new()
            })
            .push((doc, rel));
    }
    order.sort_unstable();
    let mut topics = Vec::with_capacity(order.len());
    for t in order {
        let entries = by_topic.remove(t).unwrap_or_default();
        let q = TopicQrels::new(entries).map_err(|source| TrecError::Topic {
            path: path.to_path_buf(),
            topic: lossy(t),
            source,
        })?;
        topics.push((t, q));
    }
    Ok(ParsedQrels { topics })
}

/// One retrieved document in compact form: its identifier's place in the topic's arena.
#[derive(Clone, Copy)]
struct Entry {
    off: u32,
    len: u32,
    score: f64,
}

/// The documents of one topic: identifiers packed in one arena.
#[derive(Default)]
pub(crate) struct TopicDocs {
    arena: Vec<u8>,
    entries: Vec<Entry>,
}

impl TopicDocs {
    #[inline]
    fn push(&mut self, doc: &[u8], score: f64) {
        let off = self.arena.len() as u32;
        self.arena.extend_from_slice(doc);
        self.entries.push(Entry {
            off,
            len: doc.len() as u32,
            score,
        });
    }

    fn append(&mut self, other: TopicDocs) {
        if self.entries.is_empty() {
            *self = other;
            return;
        }
        let base = self.arena.len() as u32;
        self.arena.extend_from_slice(&other.arena);
        self.entries.extend(other.entries.iter().map(|e| Entry {
            off: e.off + base,
            ..*e
        }));
    }

    /// The documents as the engine's input, borrowing the arena.
    pub(crate) fn retrieved(&self) -> Vec<Retrieved<&[u8]>> {
        self.entries
            .iter()
            .map(|e| Retrieved {
                doc: &self.arena[e.off as usize..(e.off + e.len) as usize],
                score: e.score,
            })
            .collect()
    }

    /// Number of documents.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Iterates `(document, score)` in file order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], f64)> {
        self.entries.iter().map(|e| {
            (
                &self.arena[e.off as usize..(e.off + e.len) as usize],
                e.score,
            )
        })
    }
}

/// A parsed run: per-topic documents and the run identifier (that of the last line, as
/// trec_eval reports it).
pub(crate) struct ParsedRun {
    pub(crate) path: PathBuf,
    pub(crate) run_id: String,
    pub(crate) topics: HashMap<Vec<u8>, TopicDocs>,
}

struct ChunkOut<'a> {
    segments: Vec<(&'a [u8], TopicDocs)>,
    lines: u64,
    run_id: Option<&'a [u8]>,
}

fn parse_chunk(chunk: &[u8]) -> Result<ChunkOut<'_>, (u64, String)> {
    let mut out = ChunkOut {
        segments: Vec::new(),
        lines: 0,
        run_id: None,
    };
    for line in lines(chunk) {
        out.lines += 1;
        let mut f = fields(line);
        let Some(qid) = f.next() else { continue };
        if qid[0] == b'#' {
            continue;
        }
        let (_iter, doc, _rank, sim, run_id) = (f.next(), f.next(), f.next(), f.next(), f.next());
        let (Some(doc), Some(sim), Some(run_id)) = (doc, sim, run_id) else {
            let count = fields(line).count();
            return Err((
                out.lines,
                format!("expected 6 fields (qid iter docno rank score runid), found {count}"),
            ));
        };
        let Some(score) = parse_score(sim) else {
            return Err((out.lines, format!("score '{}' is not a number", lossy(sim))));
        };
        match out.segments.last_mut() {
            Some((q, docs)) if *q == qid => docs.push(doc, score),
            _ => {
                let mut docs = TopicDocs::default();
                docs.push(doc, score);
                out.segments.push((qid, docs));
            }
        }
        out.run_id = Some(run_id);
    }
    Ok(out)
}

/// Accumulates a run block by block.
pub(crate) struct RunBuilder {
    path: PathBuf,
    lines: u64,
    run_id: Vec<u8>,
    topics: HashMap<Vec<u8>, TopicDocs>,
}

impl RunBuilder {
    pub(crate) fn new(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            lines: 0,
            run_id: Vec::new(),
            topics: HashMap::new(),
        }
    }

    /// Parses one block (whole lines) in parallel and merges it.
    pub(crate) fn feed(&mut self, block: &[u8]) -> Result<(), TrecError> {
        let parts = rayon::current_num_threads() * 4;
        let target = (block.len() / parts).max(1 << 18);
        let mut bounds = Vec::new();
        let mut start = 0;
        while start < block.len() {
            let mut end = (start + target).min(block.len());
            if end < block.len() {
                end = memchr::memchr(b'\n', &block[end..]).map_or(block.len(), |i| end + i + 1);
            }
            bounds.push((start, end));
            start = end;
        }
        let outs: Vec<_> = bounds
            .par_iter()
            .map(|&(s, e)| parse_chunk(&block[s..e]))
            .collect();
        for out in outs {
            match out {
                Err((line, message)) => {
                    return Err(TrecError::Parse {
                        path: self.path.clone(),
                        line: self.lines + line,
                        message,
                    })
                }
                Ok(out) => {
                    self.lines += out.lines;
                    if let Some(r) = out.run_id {
                        self.run_id.clear();
                        self.run_id.extend_from_slice(r);
                    }
                    for (qid, docs) in out.segments {
                        match self.topics.get_mut(qid) {
                            Some(t) => t.append(docs),
                            None => {
                                self.topics.insert(qid.to_vec(), docs);
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    pub(crate) fn finish(self) -> ParsedRun {
        ParsedRun {
            path: self.path,
            run_id: lossy(&self.run_id),
            topics: self.topics,
        }
    }
}

/// Reads and parses a run file (`-` for standard input, `.gz` accepted).
pub(crate) fn read_run(path: &Path) -> Result<ParsedRun, TrecError> {
    let mut b = RunBuilder::new(path);
    crate::input::for_each_block(path, |block| b.feed(block))?;
    Ok(b.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qrels_need_four_fields() {
        let p = Path::new("q");
        assert!(parse_qrels(b"1 0 d 1\n", p).is_ok());
        let e = parse_qrels(b"# c\n1 0 d 1\n1 0 e\n", p).err().unwrap();
        assert_eq!(
            e.to_string(),
            "q:3: expected 4 fields (qid iter docno rel), found 3"
        );
        assert!(parse_qrels(b"1 0 d 1 x\n", p).is_err());
        assert!(parse_qrels(b"1 0 d 1\n1 0 d 0\n", p).is_err());
    }

    #[test]
    fn scores_parse_exactly() {
        for s in [
            "2.129133",
            "-0.5",
            "49.19109429178723",
            "1e-3",
            "7",
            "+3.25",
            ".5",
            "5.",
            "0.1",
            "123456789012345",
            "1234567890123456",
            "-0",
            "nan",
        ] {
            let want: f64 = s.parse().unwrap();
            let got = parse_score(s.as_bytes()).unwrap();
            assert!(
                got == want || (got.is_nan() && want.is_nan()),
                "{s}: {got} vs {want}"
            );
            assert!(got.to_bits() == want.to_bits() || got.is_nan(), "{s}");
        }
        assert_eq!(parse_score(b"1.2.3"), None);
        assert_eq!(parse_score(b"-"), None);
    }

    #[test]
    fn run_lines_and_errors() {
        let p = Path::new("r");
        let mut b = RunBuilder::new(p);
        b.feed(b"1 Q0 a 1 2.5 x\n\n# c\n1 Q0 b 2 1.5 y extra\n2 Q0 a 1 1 y\n")
            .unwrap();
        let r = b.finish();
        assert_eq!(r.run_id, "y");
        assert_eq!(r.topics[&b"1"[..]].len(), 2);
        let mut b = RunBuilder::new(p);
        let e = b.feed(b"1 Q0 a 1 2.5 x\n1 Q0 b 2 zz x\n").err().unwrap();
        assert_eq!(e.to_string(), "r:2: score 'zz' is not a number");
    }
}
