//! Relation-extraction precision, recall and F1 over `(head, relation, tail)` triples, micro
//! averaged (the usual TACRED/DocRED-style scoring of exact triples).
//!
//! Per item the gold and predicted triples are sets (duplicates count once); a predicted triple
//! is correct when the same triple is in the item's gold set, compared exactly (normalise the
//! strings before if needed). Precision `Σ tp / Σ |predicted|`, recall `Σ tp / Σ |gold|`, F1
//! `2·P·R / (P + R)`. A zero denominator gives `None` (F1 is `None` unless both P and R are
//! defined; it is 0 when both are 0). The same counts are given per relation type.

use std::collections::{BTreeMap, BTreeSet};

/// Counts and scores of a set of triples.
#[derive(Debug, Clone, PartialEq)]
pub struct RelationScores {
    /// Correct predicted triples.
    pub true_positives: u64,
    /// Predicted triples (distinct per item).
    pub predicted: u64,
    /// Gold triples (distinct per item).
    pub gold: u64,
    /// `tp / predicted`.
    pub precision: Option<f64>,
    /// `tp / gold`.
    pub recall: Option<f64>,
    /// Harmonic mean of precision and recall.
    pub f1: Option<f64>,
}

impl RelationScores {
    fn from_counts(tp: u64, predicted: u64, gold: u64) -> Self {
        let precision = (predicted > 0).then(|| tp as f64 / predicted as f64);
        let recall = (gold > 0).then(|| tp as f64 / gold as f64);
        let f1 = match (precision, recall) {
            (Some(p), Some(r)) if p + r > 0.0 => Some(2.0 * p * r / (p + r)),
            (Some(_), Some(_)) => Some(0.0),
            _ => None,
        };
        RelationScores {
            true_positives: tp,
            predicted,
            gold,
            precision,
            recall,
            f1,
        }
    }
}

/// A `(head, relation, tail)` triple.
pub type Triple<S> = (S, S, S);

/// One item: its gold triples and its predicted triples.
pub type TriplePair<S> = (Vec<Triple<S>>, Vec<Triple<S>>);

fn key<S: AsRef<str>>(t: &Triple<S>) -> (&str, &str, &str) {
    (t.0.as_ref(), t.1.as_ref(), t.2.as_ref())
}

/// Micro precision/recall/F1 over items, each a pair `(gold, predicted)` of triple lists, and
/// the same per relation type (sorted by name).
///
/// ```
/// use oloproof_metrics::classify::relation::relation_f1;
///
/// let gold = vec![("Curie", "born_in", "Warsaw"), ("Curie", "field", "physics")];
/// let pred = vec![("Curie", "born_in", "Warsaw"), ("Curie", "born_in", "Paris")];
/// let (all, _per_relation) = relation_f1(&[(gold, pred)]);
/// assert_eq!((all.precision, all.recall, all.f1), (Some(0.5), Some(0.5), Some(0.5)));
/// ```
pub fn relation_f1<S: AsRef<str>>(
    items: &[TriplePair<S>],
) -> (RelationScores, Vec<(String, RelationScores)>) {
    let mut per: BTreeMap<&str, [u64; 3]> = BTreeMap::new();
    for (gold, pred) in items {
        let gold: BTreeSet<_> = gold.iter().map(key).collect();
        let pred: BTreeSet<_> = pred.iter().map(key).collect();
        for g in &gold {
            per.entry(g.1).or_default()[2] += 1;
        }
        for p in &pred {
            let c = per.entry(p.1).or_default();
            c[1] += 1;
            if gold.contains(p) {
                c[0] += 1;
            }
        }
    }
    let mut total = [0u64; 3];
    for c in per.values() {
        for i in 0..3 {
            total[i] += c[i];
        }
    }
    (
        RelationScores::from_counts(total[0], total[1], total[2]),
        per.into_iter()
            .map(|(r, c)| (r.to_string(), RelationScores::from_counts(c[0], c[1], c[2])))
            .collect(),
    )
}
