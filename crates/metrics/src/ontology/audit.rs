//! Auditability (seed 000, Part 7, "Auditabilité"):
//!
//! * **citation completeness** — the share of factual claims with at least one verifiable
//!   citation (one that names a source document or chunk);
//! * **provenance depth** — the share of citations that reach a source document with a stable
//!   id, not only a chunk hash;
//! * **reproducibility rate** — at a fixed snapshot, the share of queries whose re-runs all
//!   return the same answer.

use std::collections::BTreeMap;

/// A citation attached to a claim.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Citation {
    /// Stable id of the source document, if the citation reaches one.
    pub document_id: Option<String>,
    /// Chunk id or hash, if any.
    pub chunk_id: Option<String>,
}

impl Citation {
    /// Verifiable: it names a document or a chunk (a non-empty id).
    pub fn is_verifiable(&self) -> bool {
        self.document_id.as_deref().is_some_and(|s| !s.is_empty())
            || self.chunk_id.as_deref().is_some_and(|s| !s.is_empty())
    }

    /// Reaches a source document with a stable id.
    pub fn reaches_document(&self) -> bool {
        self.document_id.as_deref().is_some_and(|s| !s.is_empty())
    }
}

/// Counts for citation completeness and provenance depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AuditCounts {
    /// Factual claims.
    pub claims: usize,
    /// Factual claims with at least one verifiable citation.
    pub cited_claims: usize,
    /// Citations of factual claims.
    pub citations: usize,
    /// Of those, citations that reach a document id.
    pub document_citations: usize,
}

impl AuditCounts {
    /// Adds one claim (non-factual claims are not counted).
    pub fn add_claim(&mut self, factual: bool, citations: &[Citation]) {
        if !factual {
            return;
        }
        self.claims += 1;
        self.cited_claims += usize::from(citations.iter().any(Citation::is_verifiable));
        self.citations += citations.len();
        self.document_citations += citations.iter().filter(|c| c.reaches_document()).count();
    }

    /// `cited_claims / claims`; `None` without factual claims.
    pub fn citation_completeness(&self) -> Option<f64> {
        (self.claims > 0).then(|| self.cited_claims as f64 / self.claims as f64)
    }

    /// `document_citations / citations`; `None` without citations.
    pub fn provenance_depth(&self) -> Option<f64> {
        (self.citations > 0).then(|| self.document_citations as f64 / self.citations as f64)
    }
}

/// Reproducibility over repeated runs of the same queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reproducibility {
    /// Queries run at least twice.
    pub queries: usize,
    /// Of those, queries whose answers are all identical.
    pub reproducible: usize,
    /// Re-runs (every run after a query's first).
    pub reruns: usize,
    /// Re-runs whose answer equals the query's first answer.
    pub rerun_matches: usize,
    /// Queries run only once (not scored).
    pub single_runs: usize,
}

impl Reproducibility {
    /// `reproducible / queries`; `None` when no query was re-run.
    pub fn rate(&self) -> Option<f64> {
        (self.queries > 0).then(|| self.reproducible as f64 / self.queries as f64)
    }

    /// `rerun_matches / reruns`; `None` without re-runs.
    pub fn rerun_match_rate(&self) -> Option<f64> {
        (self.reruns > 0).then(|| self.rerun_matches as f64 / self.reruns as f64)
    }
}

/// Groups `(query id, answer)` runs by query, in input order, and compares answers byte for
/// byte (normalise whitespace or formatting first if that is not a difference for you).
pub fn reproducibility<'a, I>(runs: I) -> (Reproducibility, BTreeMap<&'a str, bool>)
where
    I: IntoIterator<Item = (&'a str, &'a str)>,
{
    let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (q, a) in runs {
        groups.entry(q).or_default().push(a);
    }
    let mut r = Reproducibility::default();
    let mut per_query = BTreeMap::new();
    for (q, answers) in groups {
        if answers.len() < 2 {
            r.single_runs += 1;
            continue;
        }
        r.queries += 1;
        let first = answers[0];
        let same = answers[1..].iter().filter(|a| **a == first).count();
        r.reruns += answers.len() - 1;
        r.rerun_matches += same;
        let ok = same == answers.len() - 1;
        r.reproducible += usize::from(ok);
        per_query.insert(q, ok);
    }
    (r, per_query)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completeness_and_depth() {
        let doc = Citation {
            document_id: Some("policy-42".into()),
            chunk_id: Some("c7".into()),
        };
        let hash_only = Citation {
            document_id: None,
            chunk_id: Some("sha256:ab".into()),
        };
        let mut c = AuditCounts::default();
        c.add_claim(true, std::slice::from_ref(&doc));
        c.add_claim(true, &[hash_only]);
        c.add_claim(true, &[]);
        c.add_claim(false, &[]);
        assert_eq!(c.citation_completeness(), Some(2.0 / 3.0));
        assert_eq!(c.provenance_depth(), Some(0.5));
        assert_eq!(AuditCounts::default().provenance_depth(), None);
    }

    #[test]
    fn reruns() {
        let (r, per) = reproducibility([
            ("q1", "A"),
            ("q1", "A"),
            ("q2", "B"),
            ("q2", "C"),
            ("q2", "B"),
            ("q3", "D"),
        ]);
        assert_eq!(r.rate(), Some(0.5));
        assert_eq!(r.rerun_match_rate(), Some(2.0 / 3.0));
        assert_eq!(r.single_runs, 1);
        assert!(!per["q2"]);
    }
}
