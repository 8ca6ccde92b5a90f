//! Entity linking (seed 000, Part 7): mention detection precision/recall/F1 against gold mention
//! spans, end-to-end linking scores, disambiguation accuracy, and NIL handling (mentions whose
//! entity is not in the ontology).
//!
//! A mention is a character span `[start, end)` with an entity id, or `None` for NIL. Spans
//! match exactly (GERBIL's "strong annotation match"); a list with the same span twice keeps
//! the first.

use std::collections::BTreeMap;

/// One mention.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    /// Start offset (inclusive).
    pub start: usize,
    /// End offset (exclusive).
    pub end: usize,
    /// The linked entity, `None` for NIL.
    pub entity: Option<String>,
}

/// Counts over documents; every score is a ratio of two of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkingCounts {
    /// Gold mentions.
    pub gold: usize,
    /// Predicted mentions.
    pub predicted: usize,
    /// Predicted mentions whose span is a gold span.
    pub span_matches: usize,
    /// Span matches with the same entity (NIL = NIL counts).
    pub correct_links: usize,
    /// Gold NIL mentions.
    pub gold_nil: usize,
    /// Predicted NIL mentions.
    pub predicted_nil: usize,
    /// Span matches where both are NIL.
    pub nil_matches: usize,
    /// Span matches where the gold is NIL and the prediction links an entity (over-linking).
    pub over_linked: usize,
}

fn ratio(a: usize, b: usize) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

fn f1(p: Option<f64>, r: Option<f64>) -> Option<f64> {
    let (p, r) = (p?, r?);
    Some(if p + r == 0.0 {
        0.0
    } else {
        2.0 * p * r / (p + r)
    })
}

impl LinkingCounts {
    /// Mention detection precision: `span_matches / predicted`.
    pub fn mention_precision(&self) -> Option<f64> {
        ratio(self.span_matches, self.predicted)
    }
    /// Mention detection recall: `span_matches / gold`.
    pub fn mention_recall(&self) -> Option<f64> {
        ratio(self.span_matches, self.gold)
    }
    /// Mention detection F1.
    pub fn mention_f1(&self) -> Option<f64> {
        f1(self.mention_precision(), self.mention_recall())
    }
    /// End-to-end linking precision: `correct_links / predicted` (span and entity right).
    pub fn linking_precision(&self) -> Option<f64> {
        ratio(self.correct_links, self.predicted)
    }
    /// End-to-end linking recall: `correct_links / gold`.
    pub fn linking_recall(&self) -> Option<f64> {
        ratio(self.correct_links, self.gold)
    }
    /// End-to-end linking F1.
    pub fn linking_f1(&self) -> Option<f64> {
        f1(self.linking_precision(), self.linking_recall())
    }
    /// Disambiguation accuracy: of the correctly detected mentions, the share linked to the
    /// right entity — `correct_links / span_matches`.
    pub fn disambiguation_accuracy(&self) -> Option<f64> {
        ratio(self.correct_links, self.span_matches)
    }
    /// NIL precision: `nil_matches / predicted_nil` (predicted NILs that are gold NILs).
    pub fn nil_precision(&self) -> Option<f64> {
        ratio(self.nil_matches, self.predicted_nil)
    }
    /// NIL recall: `nil_matches / gold_nil` (gold NILs predicted as NIL at the same span).
    pub fn nil_recall(&self) -> Option<f64> {
        ratio(self.nil_matches, self.gold_nil)
    }
    /// Over-linking rate: `over_linked / gold_nil` (gold NILs linked to some entity instead).
    pub fn over_linking_rate(&self) -> Option<f64> {
        ratio(self.over_linked, self.gold_nil)
    }

    /// Adds one document's gold and predicted mentions.
    pub fn add(&mut self, gold: &[Mention], predicted: &[Mention]) {
        let g = by_span(gold);
        let p = by_span(predicted);
        self.gold += g.len();
        self.predicted += p.len();
        self.gold_nil += g.values().filter(|e| e.is_none()).count();
        self.predicted_nil += p.values().filter(|e| e.is_none()).count();
        for (span, pe) in &p {
            let Some(ge) = g.get(span) else { continue };
            self.span_matches += 1;
            self.correct_links += usize::from(ge == pe);
            self.nil_matches += usize::from(ge.is_none() && pe.is_none());
            self.over_linked += usize::from(ge.is_none() && pe.is_some());
        }
    }
}

fn by_span(mentions: &[Mention]) -> BTreeMap<(usize, usize), &Option<String>> {
    let mut m = BTreeMap::new();
    for x in mentions {
        m.entry((x.start, x.end)).or_insert(&x.entity);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(start: usize, end: usize, e: Option<&str>) -> Mention {
        Mention {
            start,
            end,
            entity: e.map(str::to_string),
        }
    }

    #[test]
    fn aspirin_and_the_737() {
        // Gold: "Aspirin" → wikidata:Q18216, "the 737" → aircraft:Boeing_737, "Zorblax" → NIL.
        let gold = [
            m(0, 7, Some("wikidata:Q18216")),
            m(20, 27, Some("aircraft:Boeing_737")),
            m(40, 47, None),
        ];
        let pred = [
            m(0, 7, Some("wikidata:Q18216")),
            m(20, 27, Some("aircraft:Boeing_747")),
            m(40, 47, Some("wikidata:Q1")),
            m(50, 55, None),
        ];
        let mut c = LinkingCounts::default();
        c.add(&gold, &pred);
        assert_eq!(c.mention_precision(), Some(0.75));
        assert_eq!(c.mention_recall(), Some(1.0));
        assert_eq!(c.disambiguation_accuracy(), Some(1.0 / 3.0));
        assert_eq!(
            c.linking_f1(),
            Some(2.0 * 0.25 * (1.0 / 3.0) / (0.25 + 1.0 / 3.0))
        );
        assert_eq!(c.nil_precision(), Some(0.0));
        assert_eq!(c.nil_recall(), Some(0.0));
        assert_eq!(c.over_linking_rate(), Some(1.0));
        assert_eq!(LinkingCounts::default().mention_f1(), None);
    }
}
