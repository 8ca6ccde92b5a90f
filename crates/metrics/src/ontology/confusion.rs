//! Where wrong predictions land in the taxonomy (seed 000, Part 7, "taux de confusion entre
//! frères et parents"): `count_sibling / total_errors`, `count_parent / total_errors`,
//! `count_descendant / total_errors`, and the rest.

use super::taxonomy::Taxonomy;

/// The relation of a wrong prediction to the true node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ErrorKind {
    /// The prediction is a proper ancestor of the truth (over-generalisation), direct parent
    /// or higher.
    Parent,
    /// The prediction is a proper descendant of the truth (over-specialisation).
    Descendant,
    /// The prediction shares a direct parent with the truth (and is neither of the above).
    Sibling,
    /// Anything else.
    Other,
}

impl ErrorKind {
    /// `"parent"`, `"descendant"`, `"sibling"` or `"other"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Parent => "parent",
            ErrorKind::Descendant => "descendant",
            ErrorKind::Sibling => "sibling",
            ErrorKind::Other => "other",
        }
    }
}

/// Classifies a prediction: `None` when it is correct, else the first that applies of
/// [`ErrorKind::Parent`], [`ErrorKind::Descendant`], [`ErrorKind::Sibling`] (in a DAG a node
/// can be both a parent and a sibling of another; the ancestry relation wins).
pub fn classify(tax: &Taxonomy, predicted: usize, truth: usize) -> Option<ErrorKind> {
    if predicted == truth {
        return None;
    }
    Some(if tax.is_ancestor(predicted, truth) {
        ErrorKind::Parent
    } else if tax.is_ancestor(truth, predicted) {
        ErrorKind::Descendant
    } else if tax
        .parents(predicted)
        .iter()
        .any(|p| tax.parents(truth).contains(p))
    {
        ErrorKind::Sibling
    } else {
        ErrorKind::Other
    })
}

/// Counts of correct predictions and of each kind of error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConfusionCounts {
    /// Correct predictions.
    pub correct: usize,
    /// Errors toward an ancestor.
    pub parent: usize,
    /// Errors toward a descendant.
    pub descendant: usize,
    /// Errors toward a sibling.
    pub sibling: usize,
    /// Other errors.
    pub other: usize,
}

impl ConfusionCounts {
    /// All errors.
    pub fn errors(&self) -> usize {
        self.parent + self.descendant + self.sibling + self.other
    }

    /// `count_kind / total_errors`; `None` when there is no error.
    pub fn rate(&self, kind: ErrorKind) -> Option<f64> {
        let n = match kind {
            ErrorKind::Parent => self.parent,
            ErrorKind::Descendant => self.descendant,
            ErrorKind::Sibling => self.sibling,
            ErrorKind::Other => self.other,
        };
        let e = self.errors();
        (e > 0).then(|| n as f64 / e as f64)
    }

    /// Adds one `(predicted, truth)` pair.
    pub fn add(&mut self, tax: &Taxonomy, predicted: usize, truth: usize) -> Option<ErrorKind> {
        let kind = classify(tax, predicted, truth);
        match kind {
            None => self.correct += 1,
            Some(ErrorKind::Parent) => self.parent += 1,
            Some(ErrorKind::Descendant) => self.descendant += 1,
            Some(ErrorKind::Sibling) => self.sibling += 1,
            Some(ErrorKind::Other) => self.other += 1,
        }
        kind
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_of_errors() {
        let t =
            Taxonomy::parse_csv("car,vehicle\nsedan,car\nhatchback,car\nboat,vehicle\n").unwrap();
        let id = |n| t.id(n).unwrap();
        let mut c = ConfusionCounts::default();
        assert_eq!(
            c.add(&t, id("sedan"), id("hatchback")),
            Some(ErrorKind::Sibling)
        );
        assert_eq!(
            c.add(&t, id("vehicle"), id("sedan")),
            Some(ErrorKind::Parent)
        );
        assert_eq!(
            c.add(&t, id("sedan"), id("car")),
            Some(ErrorKind::Descendant)
        );
        assert_eq!(c.add(&t, id("sedan"), id("boat")), Some(ErrorKind::Other));
        assert_eq!(c.add(&t, id("boat"), id("boat")), None);
        assert_eq!(c.errors(), 4);
        assert_eq!(c.rate(ErrorKind::Sibling), Some(0.25));
        assert_eq!(ConfusionCounts::default().rate(ErrorKind::Parent), None);
    }
}
