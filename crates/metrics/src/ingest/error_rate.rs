//! Character and word error rates (CER, WER) exactly as jiwer 4.0 computes them, with the
//! substitution / deletion / insertion / hit counts of the alignment jiwer reports.
//!
//! Formula (corpus level, jiwer `process_words` / `process_characters`):
//!
//! `rate = (S + D + I) / (H + S + D)` summed over all pairs, where `H + S + D` is the number of
//! reference tokens. When the whole corpus has no reference token, jiwer returns the number of
//! insertions (so `0` when the hypotheses are empty too); [`ErrorCounts::rate`] does the same.
//!
//! Tokenisation (jiwer 4.0 defaults):
//! - WER, `wer_default` = `RemoveMultipleSpaces` (`re.sub(r"\s\s+", " ", s)`), `Strip`,
//!   `ReduceToListOfListOfWords` (split on a single `" "`, empty words dropped). So a *single*
//!   non-space whitespace character between two words (a lone tab or newline) stays inside the
//!   word, as in jiwer; see [`wer_words`].
//! - CER, `cer_default` = `Strip`, `ReduceToListOfListOfChars`: every Unicode scalar value of the
//!   stripped string, spaces included; see [`cer_chars`].
//!
//! "Whitespace" is Python's `str.isspace` (Unicode `White_Space` plus U+001C–U+001F).
//!
//! Alignment: the distance is the Levenshtein distance (unit costs). The split of the errors
//! into S, D and I follows rapidfuzz's `Levenshtein.opcodes` (which jiwer calls): the common
//! prefix and suffix are matched first, then the alignment is traced back from the end
//! preferring a deletion, then an insertion, then the diagonal, as rapidfuzz's
//! `recover_alignment` does. Above [`FULL_MATRIX_CELLS`] cells (after the common affixes are
//! removed) the alignment is found with Hirschberg's linear-space recursion instead; rapidfuzz
//! also switches to Hirschberg for large inputs but may split at a different column, so on
//! such inputs the S/D/I split among equally cheap alignments may differ from jiwer's. The
//! rate never does (it depends on the distance only).

/// Python's `str.isspace`: Unicode `White_Space` plus U+001C–U+001F.
pub(crate) fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Largest number of DP cells traced with a full matrix (one byte per cell); larger problems use
/// Hirschberg's linear-space recursion.
pub const FULL_MATRIX_CELLS: usize = 1 << 25;

/// Counts of one alignment between a reference and a hypothesis token sequence.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ErrorCounts {
    /// Reference tokens matched by an equal hypothesis token.
    pub hits: usize,
    /// Reference tokens replaced by a different hypothesis token.
    pub substitutions: usize,
    /// Reference tokens missing from the hypothesis.
    pub deletions: usize,
    /// Hypothesis tokens with no reference counterpart.
    pub insertions: usize,
}

impl ErrorCounts {
    /// `S + D + I`: the Levenshtein distance.
    pub fn errors(&self) -> usize {
        self.substitutions + self.deletions + self.insertions
    }

    /// `H + S + D`: the number of reference tokens.
    pub fn reference_len(&self) -> usize {
        self.hits + self.substitutions + self.deletions
    }

    /// `H + S + I`: the number of hypothesis tokens.
    pub fn hypothesis_len(&self) -> usize {
        self.hits + self.substitutions + self.insertions
    }

    /// The error rate as jiwer defines it: `(S + D + I) / (H + S + D)`; when there is no
    /// reference token, the number of insertions (jiwer's convention, never NaN).
    pub fn rate(&self) -> f64 {
        let n = self.reference_len();
        if n == 0 {
            self.insertions as f64
        } else {
            self.errors() as f64 / n as f64
        }
    }
}

impl std::ops::Add for ErrorCounts {
    type Output = ErrorCounts;
    fn add(self, o: ErrorCounts) -> ErrorCounts {
        ErrorCounts {
            hits: self.hits + o.hits,
            substitutions: self.substitutions + o.substitutions,
            deletions: self.deletions + o.deletions,
            insertions: self.insertions + o.insertions,
        }
    }
}

impl std::ops::AddAssign for ErrorCounts {
    fn add_assign(&mut self, o: ErrorCounts) {
        *self = *self + o;
    }
}

impl std::iter::Sum for ErrorCounts {
    fn sum<I: Iterator<Item = ErrorCounts>>(iter: I) -> ErrorCounts {
        iter.fold(ErrorCounts::default(), |a, b| a + b)
    }
}

/// The words of `s` as jiwer's `wer_default` transform yields them.
///
/// ```
/// use oloproof_metrics::ingest::error_rate::wer_words;
/// assert_eq!(wer_words("  two  moons\tand\t\tmore "), ["two", "moons\tand", "more"]);
/// ```
pub fn wer_words(s: &str) -> Vec<&str> {
    let s = s.trim_matches(is_python_space);
    let mut words = Vec::new();
    let mut start = 0; // byte offset where the current word began
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if !is_python_space(c) {
            continue;
        }
        // A run of whitespace starting at i.
        let mut end = i + c.len_utf8();
        let mut run = 1;
        while let Some(&(j, d)) = chars.peek() {
            if !is_python_space(d) {
                break;
            }
            end = j + d.len_utf8();
            run += 1;
            chars.next();
        }
        if run >= 2 || c == ' ' {
            if i > start {
                words.push(&s[start..i]);
            }
            start = end;
        }
    }
    if start < s.len() {
        words.push(&s[start..]);
    }
    words
}

/// The characters of `s` as jiwer's `cer_default` transform yields them (Python `strip`, then
/// every code point).
pub fn cer_chars(s: &str) -> Vec<char> {
    s.trim_matches(is_python_space).chars().collect()
}

/// The word-level counts of one pair (jiwer `process_words` with its defaults).
pub fn word_counts(reference: &str, hypothesis: &str) -> ErrorCounts {
    edit_counts(&wer_words(reference), &wer_words(hypothesis))
}

/// The character-level counts of one pair (jiwer `process_characters` with its defaults).
pub fn char_counts(reference: &str, hypothesis: &str) -> ErrorCounts {
    edit_counts(&cer_chars(reference), &cer_chars(hypothesis))
}

/// Corpus WER over `(reference, hypothesis)` pairs, as `jiwer.wer(refs, hyps)`; `None` when there
/// are no pairs.
///
/// ```
/// use oloproof_metrics::ingest::error_rate::{cer, wer};
/// let pairs = [("Mars has two moons, Phobos and Deimos.", "Mars has two m00ns, Phobos and Deirnos.")];
/// assert_eq!(format!("{:.3}", wer(pairs).unwrap()), "0.286");
/// assert_eq!(format!("{:.3}", cer(pairs).unwrap()), "0.105");
/// ```
pub fn wer<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Option<f64> {
    corpus(pairs, word_counts)
}

/// Corpus CER over `(reference, hypothesis)` pairs, as `jiwer.cer(refs, hyps)`; `None` when there
/// are no pairs.
pub fn cer<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Option<f64> {
    corpus(pairs, char_counts)
}

fn corpus<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    count: fn(&str, &str) -> ErrorCounts,
) -> Option<f64> {
    let mut total = ErrorCounts::default();
    let mut any = false;
    for (r, h) in pairs {
        total += count(r, h);
        any = true;
    }
    any.then(|| total.rate())
}

/// The Levenshtein distance between two sequences (unit costs), in linear space.
pub fn levenshtein<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    let (a, b) = strip_affix(a, b).1;
    if a.is_empty() || b.is_empty() {
        return a.len().max(b.len());
    }
    *last_row(a, b).last().unwrap_or(&0)
}

/// `1 - lev(a, b) / max(|a|, |b|)` over Unicode scalar values, `1.0` when both are empty: the
/// normalised Levenshtein similarity (rapidfuzz `Levenshtein.normalized_similarity`).
pub fn normalized_levenshtein_similarity(a: &str, b: &str) -> f64 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let max = a.len().max(b.len());
    if max == 0 {
        return 1.0;
    }
    1.0 - levenshtein(&a, &b) as f64 / max as f64
}

/// The alignment counts between `reference` and `hypothesis` (see the module notes for which of
/// several optimal alignments is reported).
pub fn edit_counts<T: PartialEq>(reference: &[T], hypothesis: &[T]) -> ErrorCounts {
    let (affix, (a, b)) = strip_affix(reference, hypothesis);
    let mut counts = ErrorCounts {
        hits: affix,
        ..ErrorCounts::default()
    };
    counts += align(a, b, FULL_MATRIX_CELLS);
    counts
}

/// Removes the common prefix and suffix; returns their total length and the middles.
fn strip_affix<'a, T: PartialEq>(a: &'a [T], b: &'a [T]) -> (usize, (&'a [T], &'a [T])) {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[prefix..], &b[prefix..]);
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    (
        prefix + suffix,
        (&a[..a.len() - suffix], &b[..b.len() - suffix]),
    )
}

fn align<T: PartialEq>(a: &[T], b: &[T], limit: usize) -> ErrorCounts {
    if a.is_empty() || b.is_empty() {
        return ErrorCounts {
            deletions: a.len(),
            insertions: b.len(),
            ..ErrorCounts::default()
        };
    }
    if a.len().saturating_mul(b.len()) <= limit {
        return align_matrix(a, b);
    }
    // Hirschberg: split the hypothesis in two, find the reference column where an optimal path
    // crosses, recurse on both halves.
    let mid = b.len() / 2;
    let forward = last_row(a, &b[..mid]);
    let a_rev: Vec<&T> = a.iter().rev().collect();
    let b_rev: Vec<&T> = b[mid..].iter().rev().collect();
    let backward = last_row(&a_rev, &b_rev);
    let n = a.len();
    let split = (0..=n)
        .min_by_key(|&c| forward[c] + backward[n - c])
        .unwrap_or(0);
    align(&a[..split], &b[..mid], limit) + align(&a[split..], &b[mid..], limit)
}

/// The last row of the DP matrix, `D[c][|b|]` for `c` in `0..=|a|`, in `O(|a|)` space.
fn last_row<T: PartialEq>(a: &[T], b: &[T]) -> Vec<usize> {
    let mut row: Vec<usize> = (0..=a.len()).collect();
    for (r, y) in b.iter().enumerate() {
        let mut diag = row[0];
        row[0] = r + 1;
        for (c, x) in a.iter().enumerate() {
            let up = row[c + 1];
            let best = (diag + usize::from(x != y)).min(up + 1).min(row[c] + 1);
            diag = up;
            row[c + 1] = best;
        }
    }
    row
}

/// Full-matrix alignment with rapidfuzz's trace-back preferences. `delta[r][c - 1]` stores
/// `D[c][r] - D[c - 1][r] + 1` (0, 1 or 2), where `D[c][r]` is the distance between the first `c`
/// reference tokens and the first `r` hypothesis tokens.
fn align_matrix<T: PartialEq>(a: &[T], b: &[T]) -> ErrorCounts {
    let (n, m) = (a.len(), b.len());
    let mut delta = vec![0u8; n * (m + 1)];
    let mut row: Vec<usize> = (0..=n).collect();
    delta[..n].fill(2);
    for (r, y) in b.iter().enumerate() {
        let mut diag = row[0];
        row[0] = r + 1;
        let out = &mut delta[(r + 1) * n..(r + 2) * n];
        for (c, x) in a.iter().enumerate() {
            let up = row[c + 1];
            let best = (diag + usize::from(x != y)).min(up + 1).min(row[c] + 1);
            diag = up;
            row[c + 1] = best;
            // D[c+1][r+1] - D[c][r+1] is in {-1, 0, 1}.
            out[c] = (best + 1 - row[c]) as u8;
        }
    }
    let d = |r: usize, c: usize| delta[r * n + c - 1];
    let mut counts = ErrorCounts::default();
    let (mut r, mut c) = (m, n);
    while r > 0 && c > 0 {
        if d(r, c) == 2 {
            counts.deletions += 1;
            c -= 1;
        } else {
            r -= 1;
            if r > 0 && d(r, c) == 0 {
                counts.insertions += 1;
            } else {
                c -= 1;
                if a[c] == b[r] {
                    counts.hits += 1;
                } else {
                    counts.substitutions += 1;
                }
            }
        }
    }
    counts.deletions += c;
    counts.insertions += r;
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    const REF: &str = "Mars has two moons, Phobos and Deimos.";
    const HYP: &str = "Mars has two m00ns, Phobos and Deirnos.";

    #[test]
    fn seed_mars_example() {
        // Seed 000: jiwer prints CER = 0.105 and WER = 0.286.
        let w = word_counts(REF, HYP);
        assert_eq!(
            w,
            ErrorCounts {
                hits: 5,
                substitutions: 2,
                deletions: 0,
                insertions: 0
            }
        );
        assert_eq!(format!("{:.3}", w.rate()), "0.286");
        let c = char_counts(REF, HYP);
        assert_eq!(c.reference_len(), 38);
        assert_eq!(c.errors(), 4);
        assert_eq!(format!("{:.3}", c.rate()), "0.105");
        assert_eq!(wer([(REF, HYP)]), Some(2.0 / 7.0));
        assert_eq!(cer([(REF, HYP)]), Some(4.0 / 38.0));
    }

    #[test]
    fn words_follow_jiwer_default() {
        assert_eq!(wer_words(""), Vec::<&str>::new());
        assert_eq!(wer_words(" \t "), Vec::<&str>::new());
        assert_eq!(wer_words("a\tb"), ["a\tb"]);
        assert_eq!(wer_words("a \tb"), ["a", "b"]);
        assert_eq!(wer_words("a\u{a0}\u{a0}b c"), ["a", "b", "c"]);
        assert_eq!(wer_words("\u{1f}a"), ["a"]);
        assert_eq!(cer_chars(" ab c\n"), ['a', 'b', ' ', 'c']);
    }

    #[test]
    fn empty_references_follow_jiwer() {
        assert_eq!(word_counts("", "a b").rate(), 2.0);
        assert_eq!(word_counts("", "").rate(), 0.0);
        assert_eq!(word_counts("a b", "").rate(), 1.0);
        assert_eq!(wer(std::iter::empty()), None);
    }

    #[test]
    fn hirschberg_matches_matrix_distance() {
        let a: Vec<u8> = (0..3000u32).map(|i| (i * 7 % 5) as u8).collect();
        let b: Vec<u8> = (0..2900u32).map(|i| (i * 3 % 4) as u8).collect();
        let via_split = align(&a, &b, 1000);
        assert_eq!(via_split.errors(), levenshtein(&a, &b));
        assert_eq!(via_split.reference_len(), a.len());
        assert_eq!(via_split.hypothesis_len(), b.len());
        let small = align_matrix(&a[..300], &b[..200]);
        assert_eq!(small.errors(), levenshtein(&a[..300], &b[..200]));
    }

    #[test]
    fn similarity() {
        assert_eq!(normalized_levenshtein_similarity("", ""), 1.0);
        assert_eq!(normalized_levenshtein_similarity("abcd", "abce"), 0.75);
        assert_eq!(normalized_levenshtein_similarity("", "ab"), 0.0);
    }
}
