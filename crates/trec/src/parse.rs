//! Parsing qrels and runs from bytes: `memchr` line splitting, whitespace-separated fields,
//! and for runs a parallel, block-by-block parse into a compact per-topic form.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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

/// One retrieved document in compact form: its identifier's place in the chunk's arena.
#[derive(Clone, Copy)]
struct Entry {
    off: u32,
    len: u32,
    score: f64,
}

/// The parsed form of one chunk of a run: every document of the chunk, identifiers packed in
/// one arena (two allocations per chunk rather than two per topic segment). When dropped, its
/// buffers go back to the builder's pool, so that evaluating a run topic by topic reuses
/// memory that is already mapped instead of faulting in fresh pages.
struct ChunkStore {
    arena: Vec<u8>,
    entries: Vec<Entry>,
    pool: Option<Arc<Pool>>,
}

/// Buffers of dropped chunks, ready for reuse.
type Pool = Mutex<Vec<(Vec<u8>, Vec<Entry>)>>;

impl Drop for ChunkStore {
    fn drop(&mut self) {
        if let Some(pool) = &self.pool {
            if let Ok(mut p) = pool.lock() {
                if p.len() < 64 {
                    let mut arena = std::mem::take(&mut self.arena);
                    let mut entries = std::mem::take(&mut self.entries);
                    arena.clear();
                    entries.clear();
                    p.push((arena, entries));
                }
            }
        }
    }
}

impl ChunkStore {
    #[inline]
    fn doc(&self, e: &Entry) -> &[u8] {
        &self.arena[e.off as usize..(e.off + e.len) as usize]
    }
}

/// The documents of one topic, in file order: ranges of entries of the chunks that hold them.
#[derive(Default)]
pub(crate) struct TopicDocs {
    pieces: Vec<(Arc<ChunkStore>, u32, u32)>,
    len: usize,
}

impl TopicDocs {
    /// The documents as the engine's input, borrowing the chunks' arenas.
    pub(crate) fn retrieved(&self) -> Vec<Retrieved<&[u8]>> {
        let mut out = Vec::with_capacity(self.len);
        for (c, s, e) in &self.pieces {
            out.extend(
                c.entries[*s as usize..*e as usize]
                    .iter()
                    .map(|en| Retrieved {
                        doc: c.doc(en),
                        score: en.score,
                    }),
            );
        }
        out
    }

    /// Number of documents.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Iterates `(document, score)` in file order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], f64)> {
        self.pieces.iter().flat_map(|(c, s, e)| {
            c.entries[*s as usize..*e as usize]
                .iter()
                .map(move |en| (c.doc(en), en.score))
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
    store: ChunkStore,
    /// `(qid, first entry, end entry)` of each run of consecutive lines of one topic.
    segments: Vec<(&'a [u8], u32, u32)>,
    lines: u64,
    run_id: Option<&'a [u8]>,
}

/// Byte equality of short identifiers without a `memcmp` call for the common lengths.
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    if a.len() <= 8 {
        let mut x = [0u8; 8];
        let mut y = [0u8; 8];
        x[..a.len()].copy_from_slice(a);
        y[..b.len()].copy_from_slice(b);
        return x == y;
    }
    a == b
}

/// Positions (bit `i` for byte `i`) of the bytes `<= 0x20` in a 64-byte window: every field
/// separator and newline is among them, so fields are found by walking set bits.
#[inline]
fn low_mask(w: &[u8; 64]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8,
            _mm_set1_epi8,
        };
        let mut m = 0u64;
        // SAFETY: SSE2 is part of the x86_64 baseline; every load reads 16 bytes inside `w`.
        #[allow(unsafe_code)]
        unsafe {
            let limit = _mm_set1_epi8(0x20);
            for k in 0..4 {
                let v = _mm_loadu_si128(w.as_ptr().add(16 * k).cast::<__m128i>());
                let le = _mm_cmpeq_epi8(_mm_max_epu8(v, limit), limit);
                m |= u64::from(_mm_movemask_epi8(le) as u16) << (16 * k);
            }
        }
        m
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut m = 0u64;
        for (i, &b) in w.iter().enumerate() {
            m |= u64::from(b <= 0x20) << i;
        }
        m
    }
}

/// Records one complete line (`count` fields, the first six located by `spans`).
#[inline]
fn finish_line<'a>(
    chunk: &'a [u8],
    count: usize,
    spans: &[(usize, usize); 6],
    line_no: u64,
    out_segments: &mut Vec<(&'a [u8], u32, u32)>,
    store: &mut ChunkStore,
    run_id: &mut Option<&'a [u8]>,
) -> Result<(), (u64, String)> {
    if count == 0 {
        return Ok(());
    }
    let qid = &chunk[spans[0].0..spans[0].1];
    if qid[0] == b'#' {
        return Ok(());
    }
    if count < 6 {
        return Err((
            line_no,
            format!("expected 6 fields (qid iter docno rank score runid), found {count}"),
        ));
    }
    let doc = &chunk[spans[2].0..spans[2].1];
    let sim = &chunk[spans[4].0..spans[4].1];
    let Some(score) = parse_score(sim) else {
        return Err((line_no, format!("score '{}' is not a number", lossy(sim))));
    };
    let off = store.arena.len() as u32;
    store.arena.extend_from_slice(doc);
    let idx = store.entries.len() as u32;
    store.entries.push(Entry {
        off,
        len: doc.len() as u32,
        score,
    });
    match out_segments.last_mut() {
        Some((q, _, end)) if same(q, qid) => *end = idx + 1,
        _ => out_segments.push((qid, idx, idx + 1)),
    }
    *run_id = Some(&chunk[spans[5].0..spans[5].1]);
    Ok(())
}

/// Parses whole lines `qid iter docno rank score runid` of one chunk in a single pass: a
/// 64-byte window at a time, the separators and newlines are located with one vector compare,
/// and each line's fields are the gaps between them.
fn parse_chunk<'a>(chunk: &'a [u8], pool: &Arc<Pool>) -> Result<ChunkOut<'a>, (u64, String)> {
    let n = chunk.len();
    // Upper bounds (the shortest line is 12 bytes); unused capacity is never touched.
    let (mut arena, mut entries) = pool
        .lock()
        .ok()
        .and_then(|mut p| p.pop())
        .unwrap_or_default();
    arena.reserve(n);
    entries.reserve(n / 12 + 1);
    let mut store = ChunkStore {
        arena,
        entries,
        pool: Some(Arc::clone(pool)),
    };
    let mut out_segments: Vec<(&[u8], u32, u32)> = Vec::new();
    let mut lines: u64 = 0;
    let mut run_id: Option<&[u8]> = None;

    // State of the current line: field count and the spans of fields 0, 2, 4 and 5.
    let mut count = 0usize;
    let mut spans = [(0usize, 0usize); 6];
    let mut field_start = 0usize;

    let mut base = 0usize;
    while base < n {
        let take = (n - base).min(64);
        let mut w = [b'x'; 64];
        w[..take].copy_from_slice(&chunk[base..base + take]);
        let mut m = low_mask(&w);
        while m != 0 {
            let i = base + m.trailing_zeros() as usize;
            m &= m - 1;
            let b = chunk[i];
            let newline = b == b'\n';
            if !newline && !is_space(b) {
                continue;
            }
            if i > field_start {
                if count < 6 {
                    spans[count] = (field_start, i);
                }
                count += 1;
            }
            field_start = i + 1;
            if newline {
                lines += 1;
                finish_line(
                    chunk,
                    count,
                    &spans,
                    lines,
                    &mut out_segments,
                    &mut store,
                    &mut run_id,
                )?;
                count = 0;
            }
        }
        base += 64;
    }
    if field_start < n || count > 0 {
        if n > field_start {
            if count < 6 {
                spans[count] = (field_start, n);
            }
            count += 1;
        }
        lines += 1;
        finish_line(
            chunk,
            count,
            &spans,
            lines,
            &mut out_segments,
            &mut store,
            &mut run_id,
        )?;
    }
    Ok(ChunkOut {
        store,
        segments: out_segments,
        lines,
        run_id,
    })
}

/// Accumulates a run block by block.
pub(crate) struct RunBuilder {
    path: PathBuf,
    lines: u64,
    run_id: Vec<u8>,
    topics: HashMap<Vec<u8>, TopicDocs>,
    /// Topic of the last line fed (it may continue in the next block).
    open: Vec<u8>,
    /// Topics handed out by [`RunBuilder::take_complete`].
    closed: HashSet<Vec<u8>>,
    /// Whether a topic handed out as complete reappeared later in the run.
    reopened: bool,
    pool: Arc<Pool>,
}

impl RunBuilder {
    pub(crate) fn new(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            lines: 0,
            run_id: Vec::new(),
            topics: HashMap::new(),
            open: Vec::new(),
            closed: HashSet::new(),
            reopened: false,
            pool: Arc::default(),
        }
    }

    /// Removes and returns every topic except the one the input ended in so far. In a run
    /// whose topics are contiguous (as every system writes them) these are complete; if one
    /// of them shows up again later, [`RunBuilder::reopened`] turns true.
    pub(crate) fn take_complete(&mut self) -> Vec<(Vec<u8>, TopicDocs)> {
        let open = self.topics.remove(&self.open);
        let out: Vec<_> = self.topics.drain().collect();
        for (t, _) in &out {
            self.closed.insert(t.clone());
        }
        if let Some(o) = open {
            self.topics.insert(self.open.clone(), o);
        }
        out
    }

    /// Removes and returns every remaining topic (at the end of the input).
    pub(crate) fn take_all(&mut self) -> Vec<(Vec<u8>, TopicDocs)> {
        self.topics.drain().collect()
    }

    /// Whether a topic returned by [`RunBuilder::take_complete`] had more lines later.
    pub(crate) fn reopened(&self) -> bool {
        self.reopened
    }

    /// The run identifier so far (that of the last line).
    pub(crate) fn run_id(&self) -> String {
        lossy(&self.run_id)
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
            .map(|&(s, e)| parse_chunk(&block[s..e], &self.pool))
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
                    let store = Arc::new(out.store);
                    if let Some((q, _, _)) = out.segments.last() {
                        self.open.clear();
                        self.open.extend_from_slice(q);
                    }
                    for (qid, s, e) in out.segments {
                        let piece = (Arc::clone(&store), s, e);
                        let len = (e - s) as usize;
                        match self.topics.get_mut(qid) {
                            Some(t) => {
                                t.pieces.push(piece);
                                t.len += len;
                            }
                            None => {
                                if !self.closed.is_empty() && self.closed.contains(qid) {
                                    self.reopened = true;
                                }
                                self.topics.insert(
                                    qid.to_vec(),
                                    TopicDocs {
                                        pieces: vec![piece],
                                        len,
                                    },
                                );
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
    crate::input::for_each_block(path, |block| b.feed(block).map(|()| true))?;
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
    fn reopened_topics_are_detected() {
        let mut b = RunBuilder::new(Path::new("r"));
        b.feed(b"1 Q0 a 1 2.5 x\n2 Q0 a 1 1 x\n").unwrap();
        let done = b.take_complete();
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].0, b"1");
        b.feed(b"2 Q0 b 2 0.5 x\n3 Q0 a 1 1 x\n").unwrap();
        assert!(!b.reopened());
        assert_eq!(b.take_complete().len(), 1);
        b.feed(b"1 Q0 c 1 1 x\n").unwrap();
        assert!(b.reopened());
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
