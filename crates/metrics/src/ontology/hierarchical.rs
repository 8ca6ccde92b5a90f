//! Hierarchical precision, recall and F1 (A. Kosmopoulos, I. Partalas, E. Gaussier, G. Paliouras
//! and I. Androutsopoulos, "Evaluation measures for hierarchical classification: a unified view
//! and novel approaches", *Data Mining and Knowledge Discovery* 29 (2015)), as seed 000 Part 7
//! states them: each item's predicted and true label sets are augmented with all their
//! ancestors, the root excluded, and
//!
//! ```text
//! hP = Σ_q |P̂_q ∩ T̂_q| / Σ_q |P̂_q|      hR = Σ_q |P̂_q ∩ T̂_q| / Σ_q |T̂_q|
//! hF1 = 2·hP·hR / (hP + hR)
//! ```
//!
//! (micro-averaged over items). The excluded root is [`Taxonomy::single_root`]: the only
//! parentless node when there is one; with several parentless nodes the shared root is
//! implicit and nothing is excluded.

use std::collections::BTreeSet;

use super::taxonomy::Taxonomy;

/// `labels` with all their ancestors, without the taxonomy's root.
pub fn augment(tax: &Taxonomy, labels: &[usize]) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    for &l in labels {
        out.insert(l);
        out.extend(tax.ancestors(l));
    }
    if let Some(root) = tax.single_root() {
        out.remove(&root);
    }
    out
}

/// The sums behind hP, hR and hF1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HierarchicalCounts {
    /// `Σ |P̂ ∩ T̂|`.
    pub overlap: usize,
    /// `Σ |P̂|`.
    pub predicted: usize,
    /// `Σ |T̂|`.
    pub truth: usize,
}

impl HierarchicalCounts {
    /// hP; `None` when every augmented prediction is empty (only the root was predicted).
    pub fn precision(&self) -> Option<f64> {
        (self.predicted > 0).then(|| self.overlap as f64 / self.predicted as f64)
    }

    /// hR; `None` when every augmented truth is empty.
    pub fn recall(&self) -> Option<f64> {
        (self.truth > 0).then(|| self.overlap as f64 / self.truth as f64)
    }

    /// hF1, the harmonic mean of hP and hR; 0 when both are 0; `None` when either is undefined.
    pub fn f1(&self) -> Option<f64> {
        let (p, r) = (self.precision()?, self.recall()?);
        Some(if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        })
    }
}

/// Sums the augmented-set sizes over `(predicted labels, true labels)` items (each a set of
/// node ids; several labels per item are allowed, as in multi-label classification).
pub fn hierarchical_scores(
    tax: &Taxonomy,
    items: &[(Vec<usize>, Vec<usize>)],
) -> HierarchicalCounts {
    let mut c = HierarchicalCounts::default();
    for (pred, truth) in items {
        let p = augment(tax, pred);
        let t = augment(tax, truth);
        c.overlap += p.intersection(&t).count();
        c.predicted += p.len();
        c.truth += t.len();
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tax() -> Taxonomy {
        Taxonomy::parse_csv(
            "vehicle,thing\ncar,vehicle\nsedan,car\nhatchback,car\nboat,vehicle\nsubmarine,boat\n",
        )
        .unwrap()
    }

    #[test]
    fn seed_sedan_examples() {
        let t = tax();
        let id = |n| t.id(n).unwrap();
        // Sedan vs Hatchback: {sedan, car, vehicle} ∩ {hatchback, car, vehicle} = 2 of 3.
        let c = hierarchical_scores(&t, &[(vec![id("sedan")], vec![id("hatchback")])]);
        assert_eq!(
            c,
            HierarchicalCounts {
                overlap: 2,
                predicted: 3,
                truth: 3
            }
        );
        assert_eq!(c.f1(), Some(2.0 / 3.0));
        // Sedan vs Submarine: only `vehicle` is shared.
        let c = hierarchical_scores(&t, &[(vec![id("sedan")], vec![id("submarine")])]);
        assert_eq!(c.precision(), Some(1.0 / 3.0));
        // Over-generalising to `car` for a sedan: perfect precision, partial recall.
        let c = hierarchical_scores(&t, &[(vec![id("car")], vec![id("sedan")])]);
        assert_eq!((c.precision(), c.recall()), (Some(1.0), Some(2.0 / 3.0)));
        // Predicting the root alone: nothing predicted.
        let c = hierarchical_scores(&t, &[(vec![id("thing")], vec![id("sedan")])]);
        assert_eq!((c.precision(), c.recall(), c.f1()), (None, Some(0.0), None));
    }
}
