//! Structural checks of a chunking against the Markdown structure of its source document:
//! boundary violations (a chunk boundary inside a table, list, numbered section or code block),
//! heading-path (hierarchical metadata) preservation, and attribution fidelity; and the semantic
//! coherence of chunks from sentence embeddings ([`chunk_coherence`]).
//!
//! Offsets are in Unicode scalar values (Python string indices), half-open `[start, end)`.
//!
//! **Blocks** ([`markdown_blocks`]), found line by line (CommonMark/GFM subset):
//! - `table`: a line containing `|` followed by a GFM delimiter row (`| --- | :-: |`), and the
//!   following non-blank lines containing `|`;
//! - `list`: consecutive list items (`-`, `*`, `+`, `1.` or `1)` followed by a space, indented
//!   at most 3 spaces) with their indented continuation lines; a blank line ends the list unless
//!   the next line is another item or indented;
//! - `numbered_section`: an ATX heading whose text starts with a number (`## 3.2 Refunds`), up
//!   to the next heading of the same or a higher level;
//! - `code`: a fenced block (three or more backticks or tildes) through its closing fence.
//!
//! A block spans from the start of its first line to the end of its last line (newline
//! excluded). A boundary `p` (a chunk start or end other than `0` and the document length)
//! violates a block when `start < p < end`.

use std::collections::BTreeMap;

/// A structural block of a Markdown document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// `table`, `list`, `numbered_section` or `code`.
    pub kind: &'static str,
    /// Offset of the first character of the block.
    pub start: usize,
    /// Offset one past its last character (the final newline excluded).
    pub end: usize,
}

struct Line {
    start: usize,
    end: usize,
    text: String,
}

fn lines(chars: &[char]) -> Vec<Line> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, &c) in chars.iter().enumerate() {
        if c == '\n' {
            let end = if i > start && chars[i - 1] == '\r' {
                i - 1
            } else {
                i
            };
            out.push(Line {
                start,
                end,
                text: chars[start..end].iter().collect(),
            });
            start = i + 1;
        }
    }
    if start < chars.len() {
        out.push(Line {
            start,
            end: chars.len(),
            text: chars[start..].iter().collect(),
        });
    }
    out
}

fn indent(s: &str) -> usize {
    s.chars().take_while(|&c| c == ' ').count()
}

fn is_blank(s: &str) -> bool {
    s.trim().is_empty()
}

fn is_list_item(s: &str) -> bool {
    if indent(s) > 3 {
        return false;
    }
    let t = s.trim_start();
    let mut it = t.chars();
    match it.next() {
        Some('-' | '*' | '+') => matches!(it.next(), Some(' ' | '\t') | None),
        Some(c) if c.is_ascii_digit() => {
            let digits = t.chars().take_while(char::is_ascii_digit).count();
            let rest = &t[digits..];
            digits <= 9
                && (rest.starts_with(". ") || rest.starts_with(") ") || rest == "." || rest == ")")
        }
        _ => false,
    }
}

fn is_delimiter_row(s: &str) -> bool {
    let t = s.trim();
    if !t.contains('-') {
        return false;
    }
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    t.split('|').all(|cell| {
        let c = cell.trim();
        let c = c.strip_prefix(':').unwrap_or(c);
        let c = c.strip_suffix(':').unwrap_or(c);
        !c.is_empty() && c.chars().all(|x| x == '-')
    })
}

fn fence(s: &str) -> Option<(char, usize)> {
    if indent(s) > 3 {
        return None;
    }
    let t = s.trim_start();
    let c = t.chars().next()?;
    if c != '`' && c != '~' {
        return None;
    }
    let n = t.chars().take_while(|&x| x == c).count();
    (n >= 3).then_some((c, n))
}

/// An ATX heading: `(level, text)` with the closing `#`s and surrounding spaces removed.
pub fn atx_heading(line: &str) -> Option<(usize, String)> {
    if indent(line) > 3 {
        return None;
    }
    let t = line.trim_start();
    let level = t.chars().take_while(|&c| c == '#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &t[level..];
    if !(rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t')) {
        return None;
    }
    let mut text = rest.trim();
    let without_closing = text.trim_end_matches('#');
    if without_closing.is_empty() || without_closing.ends_with([' ', '\t']) {
        text = without_closing.trim_end();
    }
    Some((level, text.to_string()))
}

/// The structural blocks of a Markdown document, in document order (see the module notes).
///
/// ```
/// use oloproof_metrics::ingest::chunking::markdown_blocks;
/// let doc = "Intro\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- x\n- y\n";
/// let kinds: Vec<&str> = markdown_blocks(doc).iter().map(|b| b.kind).collect();
/// assert_eq!(kinds, ["table", "list"]);
/// ```
pub fn markdown_blocks(document: &str) -> Vec<Block> {
    let chars: Vec<char> = document.chars().collect();
    let ls = lines(&chars);
    let mut blocks = Vec::new();
    let mut headings: Vec<(usize, usize)> = Vec::new(); // (line index, level) of numbered ones
    let mut all_headings: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < ls.len() {
        let text = &ls[i].text;
        if let Some((c, n)) = fence(text) {
            let mut j = i + 1;
            while j < ls.len() {
                if let Some((c2, n2)) = fence(&ls[j].text) {
                    if c2 == c && n2 >= n && ls[j].text.trim().chars().all(|x| x == c) {
                        break;
                    }
                }
                j += 1;
            }
            let last = j.min(ls.len() - 1);
            blocks.push(Block {
                kind: "code",
                start: ls[i].start,
                end: ls[last].end,
            });
            i = last + 1;
            continue;
        }
        if let Some((level, htext)) = atx_heading(text) {
            all_headings.push((i, level));
            if htext.starts_with(|c: char| c.is_ascii_digit()) {
                headings.push((i, level));
            }
            i += 1;
            continue;
        }
        if text.contains('|') && i + 1 < ls.len() && is_delimiter_row(&ls[i + 1].text) {
            let mut j = i + 2;
            while j < ls.len() && !is_blank(&ls[j].text) && ls[j].text.contains('|') {
                j += 1;
            }
            blocks.push(Block {
                kind: "table",
                start: ls[i].start,
                end: ls[j - 1].end,
            });
            i = j;
            continue;
        }
        if is_list_item(text) {
            let mut last = i;
            let mut j = i + 1;
            while j < ls.len() {
                let t = &ls[j].text;
                if is_list_item(t) || (!is_blank(t) && indent(t) >= 2) {
                    last = j;
                    j += 1;
                } else if is_blank(t) {
                    // A blank line continues the list only if an item or indented line follows.
                    let next = (j + 1..ls.len()).find(|&k| !is_blank(&ls[k].text));
                    match next {
                        Some(k) if is_list_item(&ls[k].text) || indent(&ls[k].text) >= 2 => {
                            j = k;
                        }
                        _ => break,
                    }
                } else {
                    break;
                }
            }
            blocks.push(Block {
                kind: "list",
                start: ls[i].start,
                end: ls[last].end,
            });
            i = last + 1;
            continue;
        }
        i += 1;
    }
    for &(line, level) in &headings {
        let next = all_headings
            .iter()
            .find(|&&(l, lv)| l > line && lv <= level)
            .map(|&(l, _)| l);
        // The section ends with the last non-blank line before the next heading (or the end).
        let stop = next.unwrap_or(ls.len());
        let last = (line..stop)
            .rev()
            .find(|&k| !is_blank(&ls[k].text))
            .unwrap_or(line);
        blocks.push(Block {
            kind: "numbered_section",
            start: ls[line].start,
            end: ls[last].end,
        });
    }
    blocks.sort_by_key(|b| (b.start, b.end));
    blocks
}

/// Boundary violations of one chunking.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BoundaryReport {
    /// Distinct boundaries (chunk starts and ends other than 0 and the document length).
    pub boundaries: u64,
    /// Boundaries strictly inside at least one block.
    pub violations: u64,
    /// Blocks found.
    pub blocks: u64,
    /// Blocks with at least one boundary inside.
    pub blocks_split: u64,
    /// Violating boundaries per block kind (a boundary inside a list inside a numbered section
    /// counts for both kinds).
    pub per_kind: BTreeMap<&'static str, u64>,
}

impl BoundaryReport {
    /// `violations / boundaries`; `None` without boundaries.
    pub fn violation_rate(&self) -> Option<f64> {
        (self.boundaries > 0).then(|| self.violations as f64 / self.boundaries as f64)
    }

    /// `blocks_split / blocks`; `None` without blocks.
    pub fn split_rate(&self) -> Option<f64> {
        (self.blocks > 0).then(|| self.blocks_split as f64 / self.blocks as f64)
    }

    /// Adds another document's report.
    pub fn add(&mut self, o: &BoundaryReport) {
        self.boundaries += o.boundaries;
        self.violations += o.violations;
        self.blocks += o.blocks;
        self.blocks_split += o.blocks_split;
        for (k, v) in &o.per_kind {
            *self.per_kind.entry(k).or_default() += v;
        }
    }
}

/// The boundary violations of `chunks` (`[start, end)` offsets) over `document`.
///
/// ```
/// use oloproof_metrics::ingest::chunking::boundary_violations;
/// let doc = "Intro\n| a | b |\n|---|---|\n| 1 | 2 |\nEnd";
/// // A cut at 20 falls inside the table (which spans offsets 6..35).
/// let r = boundary_violations(doc, &[(0, 20), (20, 39)]);
/// assert_eq!((r.boundaries, r.violations), (1, 1));
/// let ok = boundary_violations(doc, &[(0, 6), (6, 39)]);
/// assert_eq!(ok.violations, 0);
/// ```
pub fn boundary_violations(document: &str, chunks: &[(usize, usize)]) -> BoundaryReport {
    let len = document.chars().count();
    let blocks = markdown_blocks(document);
    let mut cuts: Vec<usize> = chunks
        .iter()
        .flat_map(|&(s, e)| [s, e])
        .filter(|&p| p > 0 && p < len)
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut report = BoundaryReport {
        boundaries: cuts.len() as u64,
        blocks: blocks.len() as u64,
        ..BoundaryReport::default()
    };
    let mut split = vec![false; blocks.len()];
    for &p in &cuts {
        let mut inside = false;
        let mut kinds: Vec<&'static str> = Vec::new();
        for (bi, b) in blocks.iter().enumerate() {
            if b.start < p && p < b.end {
                inside = true;
                split[bi] = true;
                if !kinds.contains(&b.kind) {
                    kinds.push(b.kind);
                }
            }
        }
        if inside {
            report.violations += 1;
            for k in kinds {
                *report.per_kind.entry(k).or_default() += 1;
            }
        }
    }
    report.blocks_split = split.iter().filter(|&&s| s).count() as u64;
    report
}

/// The heading path at `offset`: the texts of the enclosing ATX headings, outermost first (a
/// heading whose line starts at or before `offset` applies; a deeper or equal level replaces the
/// tail of the path). Headings inside fenced code blocks are ignored.
///
/// ```
/// use oloproof_metrics::ingest::chunking::heading_path;
/// let doc = "# Policy\n## Refunds\ntext\n## Returns\nmore";
/// assert_eq!(heading_path(doc, 20), ["Policy", "Refunds"]);
/// assert_eq!(heading_path(doc, 30), ["Policy", "Returns"]);
/// assert!(heading_path(doc, 0).len() == 1);
/// ```
pub fn heading_path(document: &str, offset: usize) -> Vec<String> {
    let chars: Vec<char> = document.chars().collect();
    let mut path: Vec<(usize, String)> = Vec::new();
    let mut in_fence: Option<(char, usize)> = None;
    for line in lines(&chars) {
        if line.start > offset {
            break;
        }
        if let Some((c, n)) = in_fence {
            if let Some((c2, n2)) = fence(&line.text) {
                if c2 == c && n2 >= n {
                    in_fence = None;
                }
            }
            continue;
        }
        if let Some(f) = fence(&line.text) {
            in_fence = Some(f);
            continue;
        }
        if let Some((level, text)) = atx_heading(&line.text) {
            while path.last().is_some_and(|(l, _)| *l >= level) {
                path.pop();
            }
            path.push((level, text));
        }
    }
    path.into_iter().map(|(_, t)| t).collect()
}

/// Whether a chunk's recorded heading path equals the one at its start offset (texts compared
/// after trimming whitespace).
pub fn heading_path_preserved(document: &str, start: usize, recorded: &[&str]) -> bool {
    let expected = heading_path(document, start);
    expected.len() == recorded.len()
        && expected
            .iter()
            .zip(recorded)
            .all(|(e, r)| e.trim() == r.trim())
}

/// Semantic coherence of a chunking from sentence embeddings, in document order.
///
/// `within` is the mean cosine similarity of adjacent sentences inside the same chunk, `across`
/// the mean cosine of the two sentences that straddle each chunk boundary (the last sentence of
/// a chunk and the first of the next), and `coherence = within − across`: positive when the
/// chunker cuts where the topic changes. Adjacent pairs keep the cost linear in the sentences.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Coherence {
    /// Mean adjacent-sentence cosine inside chunks (`None` when no chunk has two sentences).
    pub within: Option<f64>,
    /// Mean cosine across boundaries (`None` with fewer than two non-empty chunks).
    pub across: Option<f64>,
    /// Sentence pairs inside chunks.
    pub within_pairs: usize,
    /// Sentence pairs across boundaries.
    pub boundary_pairs: usize,
}

impl Coherence {
    /// `within − across`, when both are defined.
    pub fn coherence(&self) -> Option<f64> {
        Some(self.within? - self.across?)
    }
}

/// Cosine similarity of two vectors, accumulated in `f64`; 0 when either is all zeros or
/// their lengths differ (vectors of two models never compare).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// [`Coherence`] of `chunks`, each the embeddings of its sentences in order. Empty chunks are
/// skipped (they have no sentence at a boundary).
pub fn chunk_coherence(chunks: &[Vec<Vec<f32>>]) -> Coherence {
    let (mut within, mut within_pairs) = (0.0, 0usize);
    let (mut across, mut boundary_pairs) = (0.0, 0usize);
    let mut previous_last: Option<&Vec<f32>> = None;
    for chunk in chunks.iter().filter(|c| !c.is_empty()) {
        for pair in chunk.windows(2) {
            within += cosine(&pair[0], &pair[1]);
            within_pairs += 1;
        }
        if let Some(last) = previous_last {
            across += cosine(last, &chunk[0]);
            boundary_pairs += 1;
        }
        previous_last = chunk.last();
    }
    Coherence {
        within: (within_pairs > 0).then(|| within / within_pairs as f64),
        across: (boundary_pairs > 0).then(|| across / boundary_pairs as f64),
        within_pairs,
        boundary_pairs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_of_a_policy_document() {
        let doc = "# Policy\n\n## 1. Refunds\nWithin 30 days.\n\n1. Ask\n2. Wait\n   for mail\n\n3. Done\n\n```\n# not a heading\n```\n## Other\n| a |\n|:-:|\n| 1 |\n";
        let blocks = markdown_blocks(doc);
        let kinds: Vec<&str> = blocks.iter().map(|b| b.kind).collect();
        assert_eq!(kinds, ["numbered_section", "list", "code", "table"]);
        let list = &blocks[1];
        let text: String = doc
            .chars()
            .skip(list.start)
            .take(list.end - list.start)
            .collect();
        assert_eq!(text, "1. Ask\n2. Wait\n   for mail\n\n3. Done");
        let section = &blocks[0];
        let text: String = doc
            .chars()
            .skip(section.start)
            .take(section.end - section.start)
            .collect();
        assert!(text.starts_with("## 1. Refunds") && text.ends_with("```"));
    }

    #[test]
    fn violations_by_kind() {
        let doc = "- a\n- b\n- c\nplain text here\n";
        let r = boundary_violations(doc, &[(0, 6), (6, 28)]);
        assert_eq!((r.boundaries, r.violations, r.blocks_split), (1, 1, 1));
        assert_eq!(r.per_kind["list"], 1);
        assert_eq!(r.violation_rate(), Some(1.0));
        let r = boundary_violations(doc, &[(0, 12), (12, 28)]);
        assert_eq!(r.violations, 0);
        assert_eq!(boundary_violations("", &[]).violation_rate(), None);
    }

    #[test]
    fn heading_paths() {
        let doc = "# A #\n## B\n### C\ntext\n## D\n```\n# no\n```\nend";
        assert_eq!(heading_path(doc, 17), ["A", "B", "C"]);
        assert_eq!(heading_path(doc, doc.chars().count() - 1), ["A", "D"]);
        assert!(heading_path_preserved(doc, 17, &["A", " B", "C"]));
        assert!(!heading_path_preserved(doc, 17, &["A", "C"]));
        assert_eq!(atx_heading("#hashtag"), None);
        assert_eq!(atx_heading("## Title ##"), Some((2, "Title".into())));
    }

    #[test]
    fn coherence_is_within_minus_across() {
        let a = vec![1.0f32, 0.0];
        let b = vec![0.0f32, 1.0];
        let ab = vec![1.0f32, 1.0];
        // Chunk 1: a, a (cos 1); chunk 2: b, ab (cos 1/√2); boundary a→b (cos 0).
        let c = chunk_coherence(&[vec![a.clone(), a.clone()], vec![], vec![b.clone(), ab]]);
        assert_eq!((c.within_pairs, c.boundary_pairs), (2, 1));
        let within = (1.0 + std::f64::consts::FRAC_1_SQRT_2) / 2.0;
        assert!((c.within.unwrap() - within).abs() < 1e-12);
        assert_eq!(c.across, Some(0.0));
        assert!((c.coherence().unwrap() - within).abs() < 1e-12);
        let single = chunk_coherence(&[vec![a.clone()]]);
        assert_eq!(
            (single.within, single.across, single.coherence()),
            (None, None, None)
        );
        assert_eq!(cosine(&[0.0, 0.0], &a), 0.0);
    }
}
