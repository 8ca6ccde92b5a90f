//! Span-level detection scores over character offsets: PII detection per entity type (exact
//! span match, or any overlap) and boilerplate removal (character coverage).
//!
//! Offsets are half-open `[start, end)` in whatever unit the caller uses consistently (the
//! command line uses Unicode scalar values, as Python string indices).

use std::collections::BTreeMap;

/// A labelled span `[start, end)` of type `label`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    /// First offset.
    pub start: usize,
    /// One past the last offset.
    pub end: usize,
    /// Entity type (`EMAIL`, `SSN`, …).
    pub label: String,
}

/// How a predicted span matches a gold one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SpanMatch {
    /// Same type, same start and end (the usual NER/PII convention; seqeval-style).
    #[default]
    Exact,
    /// Same type and at least one offset in common. Each gold span is matched by at most one
    /// predicted span and vice versa (greedy in start order), so counts stay a matching.
    Overlap,
}

/// Counts and scores for one entity type (or all types pooled).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DetectionScores {
    /// Predicted spans that match a gold span.
    pub true_positives: u64,
    /// Predicted spans.
    pub predicted: u64,
    /// Gold spans.
    pub gold: u64,
}

impl DetectionScores {
    /// `tp / predicted`; `None` when nothing was predicted.
    pub fn precision(&self) -> Option<f64> {
        (self.predicted > 0).then(|| self.true_positives as f64 / self.predicted as f64)
    }

    /// `tp / gold`; `None` when there is no gold span.
    pub fn recall(&self) -> Option<f64> {
        (self.gold > 0).then(|| self.true_positives as f64 / self.gold as f64)
    }

    /// `2·tp / (predicted + gold)`; `None` when both are zero.
    pub fn f1(&self) -> Option<f64> {
        let den = self.predicted + self.gold;
        (den > 0).then(|| 2.0 * self.true_positives as f64 / den as f64)
    }

    fn add(&mut self, o: DetectionScores) {
        self.true_positives += o.true_positives;
        self.predicted += o.predicted;
        self.gold += o.gold;
    }
}

/// Per-type and pooled (micro) detection counts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DetectionReport {
    /// One entry per type seen on either side, sorted by type.
    pub per_type: BTreeMap<String, DetectionScores>,
    /// All types pooled.
    pub micro: DetectionScores,
}

impl DetectionReport {
    /// Adds one document's spans (duplicates on one side count once).
    pub fn add_document(&mut self, predicted: &[Span], gold: &[Span], matching: SpanMatch) {
        let doc = match_document(predicted, gold, matching);
        for (label, s) in doc {
            self.per_type.entry(label).or_default().add(s);
            self.micro.add(s);
        }
    }

    /// Macro average of per-type F1 over the types whose F1 is defined; `None` if none is.
    pub fn macro_f1(&self) -> Option<f64> {
        let f: Vec<f64> = self.per_type.values().filter_map(|s| s.f1()).collect();
        (!f.is_empty()).then(|| f.iter().sum::<f64>() / f.len() as f64)
    }
}

/// Detection counts of one document per type.
///
/// ```
/// use oloproof_metrics::ingest::spans::{match_document, Span, SpanMatch};
/// let s = |start, end, label: &str| Span { start, end, label: label.into() };
/// let gold = [s(0, 5, "NAME"), s(10, 25, "EMAIL")];
/// let pred = [s(0, 5, "NAME"), s(10, 24, "EMAIL")];
/// let exact = match_document(&pred, &gold, SpanMatch::Exact);
/// assert_eq!(exact["EMAIL"].true_positives, 0);
/// let overlap = match_document(&pred, &gold, SpanMatch::Overlap);
/// assert_eq!(overlap["EMAIL"].true_positives, 1);
/// ```
pub fn match_document(
    predicted: &[Span],
    gold: &[Span],
    matching: SpanMatch,
) -> BTreeMap<String, DetectionScores> {
    let mut p: Vec<&Span> = predicted.iter().collect();
    let mut g: Vec<&Span> = gold.iter().collect();
    p.sort();
    p.dedup();
    g.sort();
    g.dedup();
    let mut out: BTreeMap<String, DetectionScores> = BTreeMap::new();
    for s in &p {
        out.entry(s.label.clone()).or_default().predicted += 1;
    }
    for s in &g {
        out.entry(s.label.clone()).or_default().gold += 1;
    }
    match matching {
        SpanMatch::Exact => {
            for s in &p {
                if g.binary_search(s).is_ok() {
                    out.entry(s.label.clone()).or_default().true_positives += 1;
                }
            }
        }
        SpanMatch::Overlap => {
            let mut used = vec![false; g.len()];
            for s in &p {
                let hit = g.iter().enumerate().find(|(i, x)| {
                    !used[*i] && x.label == s.label && x.start < s.end && s.start < x.end
                });
                if let Some((i, _)) = hit {
                    used[i] = true;
                    out.entry(s.label.clone()).or_default().true_positives += 1;
                }
            }
        }
    }
    out
}

/// Character-coverage precision and recall of removed spans (boilerplate): the predicted and
/// gold spans are each merged into sets of offsets, and `tp` is the size of their intersection.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Coverage {
    /// Offsets in both.
    pub overlap: u64,
    /// Offsets predicted.
    pub predicted: u64,
    /// Offsets in gold.
    pub gold: u64,
}

impl Coverage {
    /// `overlap / predicted`; `None` when nothing was predicted.
    pub fn precision(&self) -> Option<f64> {
        (self.predicted > 0).then(|| self.overlap as f64 / self.predicted as f64)
    }

    /// `overlap / gold`; `None` when there is no gold offset.
    pub fn recall(&self) -> Option<f64> {
        (self.gold > 0).then(|| self.overlap as f64 / self.gold as f64)
    }

    /// `2·overlap / (predicted + gold)`; `None` when both are zero.
    pub fn f1(&self) -> Option<f64> {
        let den = self.predicted + self.gold;
        (den > 0).then(|| 2.0 * self.overlap as f64 / den as f64)
    }

    /// Adds another document's counts (micro pooling).
    pub fn add(&mut self, o: Coverage) {
        self.overlap += o.overlap;
        self.predicted += o.predicted;
        self.gold += o.gold;
    }
}

/// Sorted, merged, non-empty intervals.
fn merge(spans: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut v: Vec<(usize, usize)> = spans.iter().copied().filter(|(s, e)| s < e).collect();
    v.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(v.len());
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Character coverage of one document's predicted vs gold `[start, end)` spans (overlapping
/// spans on one side count once; empty or reversed spans are ignored).
///
/// ```
/// use oloproof_metrics::ingest::spans::span_coverage;
/// let c = span_coverage(&[(0, 10), (5, 20)], &[(10, 30)]);
/// assert_eq!((c.overlap, c.predicted, c.gold), (10, 20, 20));
/// ```
pub fn span_coverage(predicted: &[(usize, usize)], gold: &[(usize, usize)]) -> Coverage {
    let (p, g) = (merge(predicted), merge(gold));
    let len = |v: &[(usize, usize)]| v.iter().map(|(s, e)| (e - s) as u64).sum::<u64>();
    let (mut i, mut j, mut overlap) = (0, 0, 0u64);
    while i < p.len() && j < g.len() {
        let lo = p[i].0.max(g[j].0);
        let hi = p[i].1.min(g[j].1);
        if lo < hi {
            overlap += (hi - lo) as u64;
        }
        if p[i].1 < g[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    Coverage {
        overlap,
        predicted: len(&p),
        gold: len(&g),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(start: usize, end: usize, label: &str) -> Span {
        Span {
            start,
            end,
            label: label.into(),
        }
    }

    #[test]
    fn per_type_report() {
        let mut r = DetectionReport::default();
        r.add_document(
            &[s(0, 4, "NAME"), s(10, 20, "EMAIL"), s(30, 41, "SSN")],
            &[s(0, 4, "NAME"), s(10, 20, "EMAIL"), s(50, 60, "ADDRESS")],
            SpanMatch::Exact,
        );
        r.add_document(&[s(0, 4, "NAME")], &[s(0, 4, "EMAIL")], SpanMatch::Exact);
        assert_eq!(r.micro.true_positives, 2);
        assert_eq!(r.micro.precision(), Some(0.5));
        assert_eq!(r.micro.recall(), Some(0.5));
        assert_eq!(r.per_type["SSN"].precision(), Some(0.0));
        assert_eq!(r.per_type["SSN"].recall(), None);
        assert_eq!(r.per_type["ADDRESS"].precision(), None);
        assert_eq!(r.per_type["EMAIL"].f1(), Some(2.0 / 3.0));
    }

    #[test]
    fn overlap_matching_is_one_to_one() {
        let d = match_document(
            &[s(0, 5, "X"), s(2, 6, "X")],
            &[s(1, 3, "X")],
            SpanMatch::Overlap,
        );
        assert_eq!(d["X"].true_positives, 1);
    }

    #[test]
    fn coverage_edges() {
        assert_eq!(span_coverage(&[], &[]).precision(), None);
        assert_eq!(span_coverage(&[(5, 5), (7, 3)], &[(0, 2)]).predicted, 0);
        let c = span_coverage(&[(0, 4), (6, 8)], &[(2, 7)]);
        assert_eq!((c.overlap, c.predicted, c.gold), (3, 6, 5));
    }
}
