//! Wu–Palmer similarity on a custom taxonomy (Z. Wu and M. Palmer, "Verb semantics and lexical
//! selection", ACL 1994), computed exactly as NLTK's `Synset.wup_similarity` (NLTK 3.x, with
//! its default `simulate_root=True`), on a [`Taxonomy`] instead of WordNet:
//!
//! 1. the candidate subsumers are the common ancestors of `a` and `b` (each node counting as
//!    its own ancestor), plus a simulated root `*ROOT*` when the taxonomy has more than one
//!    parentless node (NLTK simulates a root for taxonomies without a single root, such as
//!    WordNet's verbs);
//! 2. the lowest common subsumers are the candidates of greatest **minimum** depth
//!    (`use_min_depth=True`, NLTK 2's behaviour kept by `wup_similarity`); with multiple
//!    inheritance several may tie, and NLTK takes `a` itself if it is one, else the first by
//!    name (`*ROOT*` sorts before letters and digits);
//! 3. with `depth = max_depth(lcs) + 1` (so a root has depth 1; the simulated root too) and
//!    `len(x)` the shortest path between `x` and the subsumer through a common ancestor
//!    (NLTK's `shortest_path_distance`),
//!
//! ```text
//! WuP(a, b) = 2·depth / (len(a) + len(b) + 2·depth)
//! ```
//!
//! which is the seed's `2·depth(LCA) / (depth(a) + depth(b))` when each node has a single path
//! to the root. `None` when `a` and `b` share no ancestor and no root is simulated.

use std::collections::{BTreeSet, HashMap};

use super::taxonomy::{Taxonomy, SIMULATED_ROOT};

/// A subsumer candidate: a node or the simulated root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    Real(usize),
    Fake,
}

/// Wu–Palmer similarity of nodes `a` and `b` (see the module docs).
///
/// ```
/// use oloproof_metrics::ontology::{taxonomy::Taxonomy, wup::wup_similarity};
///
/// let t = Taxonomy::parse_csv("vehicle,entity\ncar,vehicle\nsedan,car\nhatchback,car\n")?;
/// let (s, h) = (t.id("sedan").unwrap(), t.id("hatchback").unwrap());
/// // LCS `car` at depth 3; each is one edge below it: 2·3 / (4 + 4).
/// assert_eq!(wup_similarity(&t, s, h), Some(0.75));
/// assert_eq!(wup_similarity(&t, s, s), Some(1.0));
/// # Ok::<(), oloproof_metrics::ontology::taxonomy::TaxonomyError>(())
/// ```
pub fn wup_similarity(tax: &Taxonomy, a: usize, b: usize) -> Option<f64> {
    let simulate = tax.roots().len() > 1;
    let mut anc_a = tax.ancestors(a);
    anc_a.insert(a);
    let mut anc_b = tax.ancestors(b);
    anc_b.insert(b);
    let mut candidates: Vec<Node> = anc_a.intersection(&anc_b).map(|&i| Node::Real(i)).collect();
    if simulate {
        candidates.push(Node::Fake);
    }
    let min_depth = |n: Node| match n {
        Node::Real(i) => tax.min_depth(i),
        Node::Fake => 0,
    };
    let name = |n: Node| match n {
        Node::Real(i) => tax.name(i),
        Node::Fake => SIMULATED_ROOT,
    };
    let deepest = candidates.iter().map(|&n| min_depth(n)).max()?;
    let mut lch: Vec<Node> = candidates
        .into_iter()
        .filter(|&n| min_depth(n) == deepest)
        .collect();
    lch.sort_by(|x, y| name(*x).cmp(name(*y)));
    let subsumer = if lch.contains(&Node::Real(a)) {
        Node::Real(a)
    } else {
        lch[0]
    };
    let depth = match subsumer {
        Node::Real(i) => tax.max_depth(i),
        Node::Fake => 0,
    } + 1;
    let len1 = shortest_path_distance(tax, a, subsumer, simulate)?;
    let len2 = shortest_path_distance(tax, b, subsumer, simulate)?;
    Some((2 * depth) as f64 / (len1 + len2 + 2 * depth) as f64)
}

/// Upward distances, with the simulated root at `max distance + 1` when simulating (NLTK's
/// `_shortest_hypernym_paths`).
fn paths(tax: &Taxonomy, n: Node, simulate: bool) -> HashMap<Option<usize>, usize> {
    match n {
        Node::Fake => HashMap::from([(None, 0)]),
        Node::Real(i) => {
            let d = tax.upward_distances(i);
            let mut m: HashMap<Option<usize>, usize> =
                d.iter().map(|&(x, k)| (Some(x), k)).collect();
            if simulate {
                let far = d.iter().map(|&(_, k)| k).max().unwrap_or(0);
                m.insert(None, far + 1);
            }
            m
        }
    }
}

/// NLTK's `shortest_path_distance(x, s)`: 0 when they are the same node, else the least
/// `d(x, c) + d(s, c)` over their common (upward) ancestors `c`.
fn shortest_path_distance(tax: &Taxonomy, x: usize, s: Node, simulate: bool) -> Option<usize> {
    if s == Node::Real(x) {
        return Some(0);
    }
    let px = paths(tax, Node::Real(x), simulate);
    let ps = paths(tax, s, simulate);
    let keys: BTreeSet<&Option<usize>> = px.keys().collect();
    keys.into_iter()
        .filter_map(|k| Some(px[k] + ps.get(k)?))
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiple_roots_use_the_simulated_root() {
        // Two trees: a/b under r1, c under r2.
        let t = Taxonomy::parse_csv("a,r1\nb,r1\nc,r2\n").unwrap();
        let id = |n| t.id(n).unwrap();
        // a, b share r1 (min depth 0) — tied with *ROOT*, which sorts first: depth 1,
        // each is 2 edges from *ROOT* (max upward distance 1, plus 1): 2 / (2 + 2 + 2).
        assert_eq!(wup_similarity(&t, id("a"), id("b")), Some(2.0 / 6.0));
        assert_eq!(wup_similarity(&t, id("a"), id("c")), Some(2.0 / 6.0));
        assert_eq!(wup_similarity(&t, id("a"), id("a")), Some(1.0));
    }

    #[test]
    fn single_root_and_ancestor_pairs() {
        let t = Taxonomy::parse_csv("b,a\nc,b\nd,c\n").unwrap();
        let id = |n| t.id(n).unwrap();
        // d under b: subsumer b (depth 2), d is 2 below: 4 / (2 + 0 + 4).
        assert_eq!(wup_similarity(&t, id("d"), id("b")), Some(4.0 / 6.0));
        assert_eq!(wup_similarity(&t, id("b"), id("d")), Some(4.0 / 6.0));
    }

    #[test]
    fn no_common_ancestor_without_simulated_root_is_impossible() {
        // A single-root taxonomy always shares the root.
        let t = Taxonomy::parse_csv("b,a\nc,a\n").unwrap();
        assert_eq!(
            wup_similarity(&t, t.id("b").unwrap(), t.id("c").unwrap()),
            Some(2.0 / 4.0)
        );
    }
}
