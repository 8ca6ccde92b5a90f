//! From a topic's retrieved documents and its judgments to a judged ranking (trec_eval's
//! `form_res_rels`): ranking by score, the docno tie rule, `-M`, `-J`, duplicate detection and
//! the relevance value of every ranked document.

use super::error::RankingError;

/// Relevance value of a retrieved document that is not in the qrels at all (trec_eval
/// `RELVALUE_NONPOOL`).
pub const REL_NONPOOL: i64 = -1;
/// Relevance value of a retrieved document that is in the qrels with a negative judgment, i.e.
/// pooled but not judged (trec_eval `RELVALUE_UNJUDGED`, used by `infAP`).
pub const REL_UNJUDGED: i64 = -2;

/// One retrieved document of a topic: its identifier and the system's score.
#[derive(Debug, Clone, PartialEq)]
pub struct Retrieved<D> {
    /// Document identifier (compared as bytes).
    pub doc: D,
    /// Retrieval score; higher ranks first.
    pub score: f64,
}

impl<D> Retrieved<D> {
    /// A retrieved document with its score.
    pub fn new(doc: D, score: f64) -> Self {
        Self { doc, score }
    }
}

/// Which trec_eval release to reproduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Compat {
    /// trec_eval 10.0: scores are 64-bit doubles, recall points rounded with `lround`, `-c`
    /// evaluates missing topics as an empty run.
    #[default]
    V10,
    /// trec_eval 9.0.x (and pytrec_eval): scores are 32-bit floats (near-equal scores tie and
    /// fall to the docno rule), recall points are `(long)(x * R + 0.9)`, `-c` only changes the
    /// denominators of the averages.
    V9,
}

/// Options that change how a ranking is judged.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeOptions {
    /// Minimum relevance value for a document to count as relevant (trec_eval `-l`, default 1).
    pub relevance_level: i64,
    /// Keep only the first `n` documents after ranking (trec_eval `-M`).
    pub max_docs_per_topic: Option<usize>,
    /// Rank judged documents only (trec_eval `-J`).
    pub judged_docs_only: bool,
    /// Release semantics.
    pub compat: Compat,
}

impl Default for JudgeOptions {
    fn default() -> Self {
        Self {
            relevance_level: 1,
            max_docs_per_topic: None,
            judged_docs_only: false,
            compat: Compat::V10,
        }
    }
}

/// The judgments of one topic, sorted by document identifier, without duplicates.
#[derive(Debug, Clone)]
pub struct TopicQrels<D> {
    entries: Vec<(D, i64)>,
    /// Number of judged (non-negative) documents at each level `0..levels.len()`; the last
    /// entry is non-zero.
    levels: Vec<u64>,
    /// Hash index over `entries`.
    index: HashIndex,
}

impl<D: AsRef<[u8]>> TopicQrels<D> {
    /// Builds a topic's judgments from `(document, relevance)` pairs in any order. A negative
    /// relevance marks a pooled but unjudged document. Errors on a duplicate document.
    pub fn new(mut entries: Vec<(D, i64)>) -> Result<Self, RankingError> {
        entries.sort_unstable_by(|a, b| a.0.as_ref().cmp(b.0.as_ref()));
        if let Some(w) = entries
            .windows(2)
            .find(|w| w[0].0.as_ref() == w[1].0.as_ref())
        {
            return Err(RankingError::DuplicateJudgment {
                doc: String::from_utf8_lossy(w[0].0.as_ref()).into_owned(),
            });
        }
        let max = entries.iter().map(|e| e.1).max().unwrap_or(-1);
        if max > 1 << 24 {
            return Err(RankingError::RelevanceTooLarge { rel: max });
        }
        let mut levels = vec![0u64; (max.max(-1) + 1) as usize];
        for e in &entries {
            if e.1 >= 0 {
                levels[e.1 as usize] += 1;
            }
        }
        while levels.last() == Some(&0) {
            levels.pop();
        }
        let mut index = HashIndex::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            let d = e.0.as_ref();
            index.find_or_insert(doc_hash(d), i as u32, |_| false);
        }
        Ok(Self {
            entries,
            levels,
            index,
        })
    }

    /// Relevance value of `doc`: its judgment, [`REL_UNJUDGED`] for a negative judgment or
    /// [`REL_NONPOOL`] when it is not in the qrels.
    pub fn relevance(&self, doc: &[u8]) -> i64 {
        self.relevance_hashed(doc, doc_hash(doc))
    }

    #[inline]
    fn relevance_hashed(&self, doc: &[u8], h: u64) -> i64 {
        match self
            .index
            .find(h, |i| self.entries[i as usize].0.as_ref() == doc)
        {
            Some(i) if self.entries[i as usize].1 >= 0 => self.entries[i as usize].1,
            Some(_) => REL_UNJUDGED,
            None => REL_NONPOOL,
        }
    }

    /// The judged documents, sorted by identifier.
    pub fn entries(&self) -> &[(D, i64)] {
        &self.entries
    }

    /// Count of judged documents at each relevance level `0..`.
    pub fn levels(&self) -> &[u64] {
        &self.levels
    }

    /// Number of relevant documents at `relevance_level`.
    pub fn num_relevant(&self, relevance_level: i64) -> u64 {
        let from = relevance_level.max(0) as usize;
        self.levels.iter().skip(from).sum()
    }
}

/// A judged ranking (trec_eval's `RES_RELS`): the relevance value of every ranked document
/// plus the counts the measures need.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JudgedRanking {
    /// Relevance value per rank (index 0 is rank 1): a judgment `>= 0`, [`REL_NONPOOL`] or
    /// [`REL_UNJUDGED`].
    pub rels: Vec<i64>,
    /// Judged documents of the topic per level (`rel_levels`).
    pub levels: Vec<u64>,
    /// Relevance level in force.
    pub relevance_level: i64,
    /// Number of relevant documents of the topic (judgment `>= relevance_level`).
    pub num_rel: u64,
    /// Number of relevant documents retrieved.
    pub num_rel_ret: u64,
    /// Number of retrieved (ranked) documents.
    pub num_ret: u64,
}

impl JudgedRanking {
    /// Builds a judged ranking directly from relevance values in rank order, for callers that
    /// already ranked and judged their documents.
    pub fn from_rels(rels: Vec<i64>, levels: Vec<u64>, relevance_level: i64) -> Self {
        let mut levels = levels;
        while levels.last() == Some(&0) {
            levels.pop();
        }
        let from = relevance_level.max(0) as usize;
        let num_rel = levels.iter().skip(from).sum();
        let num_rel_ret = rels
            .iter()
            .filter(|&&r| r >= relevance_level && r >= 0)
            .count() as u64;
        let num_ret = rels.len() as u64;
        Self {
            rels,
            levels,
            relevance_level,
            num_rel,
            num_rel_ret,
            num_ret,
        }
    }

    /// Whether the document at zero-based `index` is relevant.
    #[inline]
    pub fn is_rel(&self, index: usize) -> bool {
        let r = self.rels[index];
        r >= 0 && r >= self.relevance_level
    }
}

/// Sorts retrieved documents into trec_eval's ranking order: score descending, ties broken by
/// document identifier in descending byte order (`strcmp`). With [`Compat::V9`] the scores
/// are first rounded to 32-bit floats, as trec_eval 9.0 stores them.
pub fn rank<D: AsRef<[u8]>>(retrieved: &mut [Retrieved<D>], compat: Compat) {
    let v9 = compat == Compat::V9;
    for r in retrieved.iter_mut() {
        if v9 {
            r.score = r.score as f32 as f64;
        }
        // -0.0 and 0.0 compare equal in C; make them identical for the total order.
        r.score += 0.0;
    }
    let order = |a: &Retrieved<D>, b: &Retrieved<D>| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| b.doc.as_ref().cmp(a.doc.as_ref()))
    };
    // Runs usually arrive ranked already, up to the order of tied documents: an insertion
    // sort with a bounded number of moves finishes those in linear time. The order is total
    // (equal elements are identical), so the result does not depend on the algorithm.
    let budget = 4 * retrieved.len() + 64;
    if !insertion_sort_bounded(retrieved, order, budget) {
        retrieved.sort_unstable_by(order);
    }
}

/// Insertion sort that gives up (leaving a permutation of the input) after `budget` moves.
fn insertion_sort_bounded<T>(
    v: &mut [T],
    order: impl Fn(&T, &T) -> std::cmp::Ordering,
    budget: usize,
) -> bool {
    let mut moves = 0usize;
    for i in 1..v.len() {
        let mut j = i;
        while j > 0 && order(&v[j - 1], &v[j]) == std::cmp::Ordering::Greater {
            v.swap(j - 1, j);
            j -= 1;
            moves += 1;
            if moves > budget {
                return false;
            }
        }
    }
    true
}

/// FxHash-style multiply-rotate hash of a document identifier (non-cryptographic, fast).
#[inline]
fn doc_hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h: u64 = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    h
}

/// An open-addressing table of `(hash, index + 1)` slots; 0 marks an empty slot.
#[derive(Debug, Clone)]
struct HashIndex {
    slots: Vec<(u64, u32)>,
    shift: u32,
}

impl HashIndex {
    fn with_capacity(n: usize) -> Self {
        let size = (2 * n).max(8).next_power_of_two();
        Self {
            slots: vec![(0, 0); size],
            shift: 64 - size.trailing_zeros(),
        }
    }

    /// Finds `doc` (with hash `h`), or inserts it as `index` when absent. Returns the index
    /// already present, if any.
    #[inline]
    fn find_or_insert(&mut self, h: u64, index: u32, key: impl Fn(u32) -> bool) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut i = (h >> self.shift) as usize;
        loop {
            let (sh, si) = self.slots[i];
            if si == 0 {
                self.slots[i] = (h, index + 1);
                return None;
            }
            if sh == h && key(si - 1) {
                return Some(si - 1);
            }
            i = (i + 1) & mask;
        }
    }

    #[inline]
    fn find(&self, h: u64, key: impl Fn(u32) -> bool) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut i = (h >> self.shift) as usize;
        loop {
            let (sh, si) = self.slots[i];
            if si == 0 {
                return None;
            }
            if sh == h && key(si - 1) {
                return Some(si - 1);
            }
            i = (i + 1) & mask;
        }
    }
}

/// Ranks `retrieved` (see [`rank`]), applies `-M` and `-J`, rejects duplicate documents and
/// looks every document up in `qrels` (trec_eval `te_form_res_rels`).
pub fn judge<D: AsRef<[u8]>, Q: AsRef<[u8]>>(
    retrieved: &mut [Retrieved<D>],
    qrels: &TopicQrels<Q>,
    options: &JudgeOptions,
) -> Result<JudgedRanking, RankingError> {
    rank(retrieved, options.compat);
    let n = options
        .max_docs_per_topic
        .map_or(retrieved.len(), |m| m.min(retrieved.len()));
    let kept = &retrieved[..n];
    let mut seen = HashIndex::with_capacity(n);
    let mut rels: Vec<i64> = Vec::with_capacity(n);
    for (i, r) in kept.iter().enumerate() {
        let doc = r.doc.as_ref();
        let h = doc_hash(doc);
        if seen
            .find_or_insert(h, i as u32, |j| kept[j as usize].doc.as_ref() == doc)
            .is_some()
        {
            return Err(RankingError::DuplicateDocument {
                doc: String::from_utf8_lossy(doc).into_owned(),
            });
        }
        let rel = qrels.relevance_hashed(doc, h);
        if !options.judged_docs_only || rel >= 0 {
            rels.push(rel);
        }
    }
    Ok(JudgedRanking::from_rels(
        rels,
        qrels.levels().to_vec(),
        options.relevance_level,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_fall_to_descending_docno() {
        let mut r = vec![
            Retrieved::new("a", 1.0),
            Retrieved::new("c", 1.0),
            Retrieved::new("b", 2.0),
        ];
        rank(&mut r, Compat::V10);
        let docs: Vec<&str> = r.iter().map(|x| x.doc).collect();
        assert_eq!(docs, ["b", "c", "a"]);
    }

    #[test]
    fn v9_rounds_scores_to_f32() {
        let mut r = vec![Retrieved::new("a", 1.0 + 1e-12), Retrieved::new("b", 1.0)];
        rank(&mut r, Compat::V9);
        assert_eq!(r[0].doc, "b");
        let mut r = vec![Retrieved::new("a", 1.0 + 1e-12), Retrieved::new("b", 1.0)];
        rank(&mut r, Compat::V10);
        assert_eq!(r[0].doc, "a");
    }

    #[test]
    fn ranking_matches_a_full_sort() {
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        };
        for n in [0usize, 1, 2, 5, 50, 300] {
            for shape in 0..3 {
                let mut r: Vec<Retrieved<String>> = (0..n)
                    .map(|i| {
                        let s = match shape {
                            0 => (n - i) as f64 + (next() % 2) as f64,
                            1 => i as f64,
                            _ => (next() % 5) as f64,
                        };
                        Retrieved::new(format!("d{}", next() % 1000), s)
                    })
                    .collect();
                let mut want = r.clone();
                want.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| b.doc.cmp(&a.doc)));
                rank(&mut r, Compat::V10);
                assert_eq!(r, want);
            }
        }
    }

    #[test]
    fn duplicates_are_errors() {
        let q = TopicQrels::new(vec![("a", 1)]).unwrap();
        let mut r = vec![Retrieved::new("a", 1.0), Retrieved::new("a", 0.5)];
        assert!(judge(&mut r, &q, &JudgeOptions::default()).is_err());
        assert!(TopicQrels::new(vec![("a", 1), ("a", 0)]).is_err());
    }

    #[test]
    fn judged_only_drops_unjudged() {
        let q = TopicQrels::new(vec![("a", 1), ("b", 0), ("c", -1)]).unwrap();
        let mut r = vec![
            Retrieved::new("x", 4.0),
            Retrieved::new("a", 3.0),
            Retrieved::new("c", 2.0),
            Retrieved::new("b", 1.0),
        ];
        let all = judge(&mut r.clone(), &q, &JudgeOptions::default()).unwrap();
        assert_eq!(all.rels, [REL_NONPOOL, 1, REL_UNJUDGED, 0]);
        let opts = JudgeOptions {
            judged_docs_only: true,
            ..Default::default()
        };
        let j = judge(&mut r, &q, &opts).unwrap();
        assert_eq!(j.rels, [1, 0]);
        assert_eq!(j.num_rel, 1);
    }
}
