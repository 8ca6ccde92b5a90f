//! Metadata filters (seed 000, Part 5): how often a hard filter removes every relevant document
//! before retrieval runs, how well an extractor predicts the filter predicates, and when a
//! predicate should be a hard filter rather than a soft boost.
//!
//! A filter's effect is recorded per query as a [`FilterOutcome`]: the gold (relevant) document
//! ids and the ids that survive the filter. Recall@k keeps its original denominator (all gold
//! documents); the exclusion rate attributes the loss to the filter.
//!
//! The seed's worked example — five documents, four queries, half of them losing their gold
//! document to the filter — gives a false-exclusion rate of 50 %, a standard Recall@10 of 50 %
//! and, for the invalid evaluator that rebuilds the gold set after filtering, 100 % (pinned in
//! this module's tests).

use std::collections::{BTreeMap, BTreeSet};

use crate::rag::query::recall_at_k;
use crate::ranking::kernel;

/// One query's gold documents and the documents its metadata filter let through.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FilterOutcome {
    /// Ids of the query's relevant documents (before any filter).
    pub gold: BTreeSet<String>,
    /// Ids of the documents that pass the query's filter.
    pub survivors: BTreeSet<String>,
}

impl FilterOutcome {
    /// An outcome from gold ids and surviving ids.
    pub fn new<G, S>(gold: G, survivors: S) -> Self
    where
        G: IntoIterator,
        G::Item: Into<String>,
        S: IntoIterator,
        S::Item: Into<String>,
    {
        FilterOutcome {
            gold: gold.into_iter().map(Into::into).collect(),
            survivors: survivors.into_iter().map(Into::into).collect(),
        }
    }

    /// The gold documents the filter removed, in id order.
    pub fn excluded_gold(&self) -> Vec<&str> {
        self.gold
            .iter()
            .filter(|g| !self.survivors.contains(*g))
            .map(String::as_str)
            .collect()
    }

    /// `true` when the query has gold documents and the filter removed all of them (a
    /// catastrophic exclusion: no ranker can recover).
    pub fn all_gold_excluded(&self) -> bool {
        !self.gold.is_empty() && self.gold.iter().all(|g| !self.survivors.contains(g))
    }
}

/// Counts behind the two exclusion rates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExclusionCounts {
    /// Queries with at least one gold document (the query-level denominator).
    pub queries_with_gold: usize,
    /// Of those, queries whose gold documents were all excluded.
    pub queries_all_excluded: usize,
    /// Gold documents over all queries (the document-level denominator).
    pub gold_documents: usize,
    /// Of those, gold documents the filter removed.
    pub gold_excluded: usize,
}

impl ExclusionCounts {
    /// The seed's `filter_false_exclusion_rate`:
    ///
    /// ```text
    /// (# queries where all gold docs were excluded by the metadata filter)
    ///     / (# queries with at least one gold doc)
    /// ```
    ///
    /// `None` when no query has a gold document (the seed's sketch returns 0.0 there; an
    /// undefined rate is not a zero rate).
    pub fn query_rate(&self) -> Option<f64> {
        ratio(self.queries_all_excluded, self.queries_with_gold)
    }

    /// The per-document exclusion rate the seed suggests for queries with several gold
    /// documents: `Σ_q |gold_q \ survivors_q| / Σ_q |gold_q|` (micro-averaged over gold
    /// documents). `None` without gold documents.
    pub fn document_rate(&self) -> Option<f64> {
        ratio(self.gold_excluded, self.gold_documents)
    }
}

/// Counts catastrophic (all gold excluded) and per-document exclusions over `queries`; queries
/// without gold documents are skipped. See [`ExclusionCounts::query_rate`] and
/// [`ExclusionCounts::document_rate`].
pub fn false_exclusion(queries: &[FilterOutcome]) -> ExclusionCounts {
    let mut c = ExclusionCounts::default();
    for q in queries.iter().filter(|q| !q.gold.is_empty()) {
        c.queries_with_gold += 1;
        c.gold_documents += q.gold.len();
        let excluded = q.excluded_gold().len();
        c.gold_excluded += excluded;
        if excluded == q.gold.len() {
            c.queries_all_excluded += 1;
        }
    }
    c
}

/// The **invalid** evaluator of seed 000, kept only to show the mistake in reports: it rebuilds
/// each query's gold set after filtering (`gold ∩ survivors`), drops the queries left with no
/// gold document, and averages `|filtered_gold ∩ top_k| / |filtered_gold|` over the rest. It
/// cannot see filter losses: on the seed's example it gives 100 % where the correct Recall@10
/// gives 50 %. `ranked[i]` is query `i`'s ranked list. `None` when no query keeps a gold
/// document.
pub fn filtered_gold_recall_invalid(
    queries: &[FilterOutcome],
    ranked: &[Vec<String>],
    k: usize,
) -> Option<f64> {
    let values: Vec<f64> = queries
        .iter()
        .zip(ranked)
        .filter_map(|(q, run)| {
            let filtered: BTreeSet<String> = q.gold.intersection(&q.survivors).cloned().collect();
            recall_at_k(&filtered, run, k)
        })
        .collect();
    mean(&values)
}

/// A filter as a conjunction of predicates `field ∈ {values}` (one value is an equality), the
/// shape of `tenant_id = X AND product = Y AND locale = en-US`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Conjunction {
    /// `(field, accepted values)`, in the order given.
    pub predicates: Vec<(String, BTreeSet<String>)>,
}

impl Conjunction {
    /// The fields whose predicate `metadata` fails (a missing field fails). Empty means the
    /// document passes the filter.
    pub fn failing<'a>(&'a self, metadata: &BTreeMap<String, String>) -> Vec<&'a str> {
        self.predicates
            .iter()
            .filter(|(field, values)| metadata.get(field).is_none_or(|v| !values.contains(v)))
            .map(|(field, _)| field.as_str())
            .collect()
    }

    /// `true` when `metadata` satisfies every predicate.
    pub fn passes(&self, metadata: &BTreeMap<String, String>) -> bool {
        self.failing(metadata).is_empty()
    }
}

/// True positives, false positives and false negatives of a set comparison, with precision,
/// recall and F1 as `sklearn.metrics.precision_recall_fscore_support` computes them
/// (`P = tp / (tp + fp)`, `R = tp / (tp + fn)`, `F1 = 2·tp / (2·tp + fp + fn)`), except that a
/// zero denominator gives `None` where scikit-learn warns and returns 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SetCounts {
    /// Predicted and gold.
    pub tp: usize,
    /// Predicted, not gold.
    pub fp: usize,
    /// Gold, not predicted.
    pub fn_: usize,
}

impl SetCounts {
    /// Adds the comparison of one predicted set with one gold set.
    pub fn add<T: Ord>(&mut self, predicted: &BTreeSet<T>, gold: &BTreeSet<T>) {
        let tp = predicted.intersection(gold).count();
        self.tp += tp;
        self.fp += predicted.len() - tp;
        self.fn_ += gold.len() - tp;
    }

    /// `tp / (tp + fp)`; `None` when nothing was predicted.
    pub fn precision(&self) -> Option<f64> {
        ratio(self.tp, self.tp + self.fp)
    }

    /// `tp / (tp + fn)`; `None` when there is no gold item.
    pub fn recall(&self) -> Option<f64> {
        ratio(self.tp, self.tp + self.fn_)
    }

    /// `2·tp / (2·tp + fp + fn)` (the harmonic mean of precision and recall); `None` when there
    /// is neither a prediction nor a gold item.
    pub fn f1(&self) -> Option<f64> {
        ratio(2 * self.tp, 2 * self.tp + self.fp + self.fn_)
    }
}

/// A filter as a set of `(field, value)` predicates.
pub type PredicateSet = BTreeSet<(String, String)>;

/// Predicate extraction scored as classification (seed 000, "précision et rappel du
/// prédicat"): each query's extracted filter and gold filter are sets of `(field, value)`
/// predicates.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PredicateScores {
    /// Micro-averaged over every predicate of every query — `precision_recall_fscore_support`
    /// with `average="micro"` over the multilabel indicator matrix of `(field, value)` labels.
    pub micro: SetCounts,
    /// Per field: the predicates on that field only.
    pub per_field: BTreeMap<String, SetCounts>,
    /// Queries whose extracted filter equals the gold filter exactly.
    pub exact_queries: usize,
    /// Queries scored.
    pub queries: usize,
}

/// Scores extracted filters against gold filters, one `(predicted, gold)` pair of predicate
/// sets per query.
pub fn predicate_scores(queries: &[(PredicateSet, PredicateSet)]) -> PredicateScores {
    let mut s = PredicateScores::default();
    for (predicted, gold) in queries {
        s.queries += 1;
        s.exact_queries += usize::from(predicted == gold);
        s.micro.add(predicted, gold);
        let fields: BTreeSet<&String> = predicted.iter().chain(gold).map(|(f, _)| f).collect();
        for field in fields {
            let p: BTreeSet<&(String, String)> =
                predicted.iter().filter(|(f, _)| f == field).collect();
            let g: BTreeSet<&(String, String)> = gold.iter().filter(|(f, _)| f == field).collect();
            s.per_field.entry(field.clone()).or_default().add(&p, &g);
        }
    }
    s
}

/// One query evaluated with a predicate `F` applied both ways.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HardSoftQuery {
    /// Gold documents and the survivors of `F` as a hard filter.
    pub outcome: FilterOutcome,
    /// The ranked list with `F` as a hard filter.
    pub hard: Vec<String>,
    /// The ranked list with `F` as a soft (rerank) boost.
    pub soft: Vec<String>,
}

/// The thresholds of the decision rule, which the seed leaves to the user ("choose ε from the
/// harm of a false exclusion, the precision gained and the sample size").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecisionRule {
    /// The cut-off `k` of recall@k and precision@k.
    pub k: usize,
    /// `ε`: the hard filter needs `exclusion_rate < ε`.
    pub epsilon: f64,
    /// How much better "≫" is: the hard filter needs
    /// `hard_precision ≥ soft_precision + precision_margin`.
    pub precision_margin: f64,
}

/// The recommendation for one predicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterDecision {
    /// Apply the predicate as a hard filter.
    Hard,
    /// Apply it as a soft boost.
    Soft,
}

impl FilterDecision {
    /// `"hard"` or `"soft"`.
    pub fn as_str(self) -> &'static str {
        match self {
            FilterDecision::Hard => "hard",
            FilterDecision::Soft => "soft",
        }
    }
}

/// The measurements of the seed's decision rule for one predicate, averaged over the queries
/// with at least one gold document.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HardSoftReport {
    /// Queries with gold documents (the denominator of every mean).
    pub queries: usize,
    /// Mean recall@k with the predicate as a hard filter.
    pub hard_recall: f64,
    /// Mean recall@k with the predicate as a soft boost.
    pub soft_recall: f64,
    /// Mean `relevant_in_top_k / k` under the hard filter.
    pub hard_precision: f64,
    /// Mean `relevant_in_top_k / k` under the soft boost.
    pub soft_precision: f64,
    /// Share of queries whose gold documents were all filtered out by the hard filter.
    pub exclusion_rate: f64,
    /// `Hard` iff `exclusion_rate < ε` and `hard_precision ≥ soft_precision + margin`.
    pub decision: FilterDecision,
}

/// The seed's measurable rule, for one predicate `F`:
///
/// ```text
/// hard_recall_F  = recall@k with F as a hard filter
/// soft_recall_F  = recall@k with F as a +0.X rerank boost
/// hard_precision = relevant_in_top_k / k under hard filter
/// soft_precision = relevant_in_top_k / k under soft boost
/// exclusion_rate = % of queries where the gold doc was filtered out (hard)
/// use a hard filter only if exclusion_rate < ε AND hard_precision ≫ soft_precision,
/// otherwise prefer a soft boost
/// ```
///
/// with "≫" made explicit as [`DecisionRule::precision_margin`]. Recall is
/// [`kernel::recall`] and precision [`kernel::precision`] (trec_eval's `recall_k` and `P_k`,
/// counting each id once). `None` when no query has a gold document.
pub fn hard_or_soft(queries: &[HardSoftQuery], rule: &DecisionRule) -> Option<HardSoftReport> {
    let scored: Vec<&HardSoftQuery> = queries
        .iter()
        .filter(|q| !q.outcome.gold.is_empty())
        .collect();
    if scored.is_empty() {
        return None;
    }
    let n = scored.len() as f64;
    let (mut hr, mut sr, mut hp, mut sp, mut excluded) = (0.0, 0.0, 0.0, 0.0, 0usize);
    for q in &scored {
        let gold = &q.outcome.gold;
        let found_hard = found_in_top_k(gold, &q.hard, rule.k);
        let found_soft = found_in_top_k(gold, &q.soft, rule.k);
        hr += kernel::recall(found_hard, gold.len()).unwrap_or(0.0);
        sr += kernel::recall(found_soft, gold.len()).unwrap_or(0.0);
        hp += kernel::precision(found_hard, rule.k);
        sp += kernel::precision(found_soft, rule.k);
        excluded += usize::from(q.outcome.all_gold_excluded());
    }
    let report = |decision| HardSoftReport {
        queries: scored.len(),
        hard_recall: hr / n,
        soft_recall: sr / n,
        hard_precision: hp / n,
        soft_precision: sp / n,
        exclusion_rate: excluded as f64 / n,
        decision,
    };
    let r = report(FilterDecision::Soft);
    let hard = r.exclusion_rate < rule.epsilon
        && r.hard_precision >= r.soft_precision + rule.precision_margin;
    Some(if hard {
        report(FilterDecision::Hard)
    } else {
        r
    })
}

/// Distinct gold ids among the first `k` entries of `ranked`.
pub(crate) fn found_in_top_k(gold: &BTreeSet<String>, ranked: &[String], k: usize) -> usize {
    let top: BTreeSet<&String> = ranked.iter().take(k).collect();
    top.into_iter().filter(|d| gold.contains(*d)).count()
}

fn ratio(num: usize, den: usize) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seed 000, Part 5: five documents, four queries.
    fn seed_example() -> (Vec<FilterOutcome>, Vec<Vec<String>>) {
        let docs = [
            ("d1", "acme", "en-US"),
            ("d2", "acme", "en-GB"),
            ("d3", "globex", "en-US"),
            ("d4", "acme", "en-US"),
            ("d5", "acme", "de-DE"),
        ];
        let meta = |(id, tenant, locale): (&str, &str, &str)| {
            (
                id.to_string(),
                BTreeMap::from([
                    ("tenant".to_string(), tenant.to_string()),
                    ("locale".to_string(), locale.to_string()),
                ]),
            )
        };
        let docs: Vec<(String, BTreeMap<String, String>)> = docs.into_iter().map(meta).collect();
        let filter = |field: &str, value: &str| Conjunction {
            predicates: vec![(field.to_string(), BTreeSet::from([value.to_string()]))],
        };
        let queries = [
            ("d2", filter("locale", "en-US")),
            ("d4", filter("tenant", "acme")),
            ("d3", filter("tenant", "acme")),
            ("d5", filter("locale", "de-DE")),
        ];
        let mut outcomes = Vec::new();
        let mut ranked = Vec::new();
        for (gold, f) in queries {
            // As in the seed's demo, the survivors in corpus order stand in for a ranked run.
            let survivors: Vec<String> = docs
                .iter()
                .filter(|(_, m)| f.passes(m))
                .map(|(id, _)| id.clone())
                .collect();
            outcomes.push(FilterOutcome::new([gold], survivors.clone()));
            ranked.push(survivors);
        }
        (outcomes, ranked)
    }

    #[test]
    fn seed_false_exclusion_rate_is_fifty_percent() {
        let (outcomes, _) = seed_example();
        let c = false_exclusion(&outcomes);
        assert_eq!(c.query_rate(), Some(0.5));
        assert_eq!(c.document_rate(), Some(0.5));
        assert_eq!(c.queries_with_gold, 4);
    }

    #[test]
    fn seed_standard_recall_at_10_is_fifty_percent() {
        let (outcomes, ranked) = seed_example();
        let recalls: Vec<f64> = outcomes
            .iter()
            .zip(&ranked)
            .filter_map(|(q, r)| recall_at_k(&q.gold, r, 10))
            .collect();
        assert_eq!(mean(&recalls), Some(0.5));
    }

    #[test]
    fn seed_invalid_filtered_gold_recall_is_one_hundred_percent() {
        let (outcomes, ranked) = seed_example();
        assert_eq!(
            filtered_gold_recall_invalid(&outcomes, &ranked, 10),
            Some(1.0)
        );
    }

    #[test]
    fn document_rate_sees_partial_loss() {
        let q = [FilterOutcome::new(["a", "b"], ["a"])];
        let c = false_exclusion(&q);
        assert_eq!(c.query_rate(), Some(0.0));
        assert_eq!(c.document_rate(), Some(0.5));
        assert_eq!(false_exclusion(&[]).query_rate(), None);
        let no_gold = [FilterOutcome::new(Vec::<String>::new(), ["a"])];
        assert_eq!(false_exclusion(&no_gold).query_rate(), None);
    }

    #[test]
    fn conjunction_reports_failing_fields() {
        let c = Conjunction {
            predicates: vec![
                ("tenant".into(), BTreeSet::from(["acme".into()])),
                (
                    "locale".into(),
                    BTreeSet::from(["en-US".into(), "en-GB".into()]),
                ),
            ],
        };
        let m = BTreeMap::from([("tenant".to_string(), "globex".to_string())]);
        assert_eq!(c.failing(&m), vec!["tenant", "locale"]);
        let m = BTreeMap::from([
            ("tenant".to_string(), "acme".to_string()),
            ("locale".to_string(), "en-GB".to_string()),
        ]);
        assert!(c.passes(&m));
    }

    fn preds(items: &[(&str, &str)]) -> BTreeSet<(String, String)> {
        items
            .iter()
            .map(|(f, v)| (f.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn predicate_scores_micro_and_per_field() {
        let q = vec![
            (
                preds(&[("tenant", "acme"), ("locale", "en-US")]),
                preds(&[("tenant", "acme"), ("locale", "en-GB")]),
            ),
            (preds(&[("tenant", "acme")]), preds(&[("tenant", "acme")])),
        ];
        let s = predicate_scores(&q);
        assert_eq!(
            s.micro,
            SetCounts {
                tp: 2,
                fp: 1,
                fn_: 1
            }
        );
        assert_eq!(s.micro.precision(), Some(2.0 / 3.0));
        assert_eq!(s.micro.f1(), Some(4.0 / 6.0));
        assert_eq!(
            s.per_field["locale"],
            SetCounts {
                tp: 0,
                fp: 1,
                fn_: 1
            }
        );
        assert_eq!(s.per_field["locale"].f1(), Some(0.0));
        assert_eq!(s.exact_queries, 1);
        assert_eq!(SetCounts::default().precision(), None);
    }

    #[test]
    fn decision_rule_prefers_soft_when_the_filter_excludes() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let rule = DecisionRule {
            k: 2,
            epsilon: 0.1,
            precision_margin: 0.2,
        };
        // Hard filter: precise but drops q2's gold document.
        let q = vec![
            HardSoftQuery {
                outcome: FilterOutcome::new(["a", "b"], ["a", "b"]),
                hard: s(&["a", "b"]),
                soft: s(&["a", "x"]),
            },
            HardSoftQuery {
                outcome: FilterOutcome::new(["c"], ["y"]),
                hard: s(&["y"]),
                soft: s(&["c", "y"]),
            },
        ];
        let r = hard_or_soft(&q, &rule).unwrap();
        assert_eq!(r.exclusion_rate, 0.5);
        assert_eq!(r.hard_recall, 0.5);
        assert_eq!(r.soft_recall, 0.75);
        assert_eq!(r.hard_precision, 0.5);
        assert_eq!(r.soft_precision, 0.5);
        assert_eq!(r.decision, FilterDecision::Soft);
        // Without the exclusion and with a clear precision gain, hard wins.
        let q = vec![HardSoftQuery {
            outcome: FilterOutcome::new(["a", "b"], ["a", "b"]),
            hard: s(&["a", "b"]),
            soft: s(&["a", "x"]),
        }];
        let r = hard_or_soft(&q, &rule).unwrap();
        assert_eq!(r.decision, FilterDecision::Hard);
        assert_eq!(hard_or_soft(&[], &rule), None);
    }
}
