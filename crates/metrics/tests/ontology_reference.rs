//! Wu–Palmer similarity against NLTK's own `Synset.wup_similarity` (run on Synset objects whose
//! hypernyms are a random taxonomy's edges) and hierarchical precision/recall counts against
//! `networkx.ancestors`, on random DAGs with multiple inheritance, one or several roots, and
//! node names chosen so that ties between lowest common subsumers are broken by name
//! (`ontology_reference.py` beside this file).
//!
//! The interpreter comes from `OLOPROOF_REFERENCE_PYTHON` (needs nltk and networkx, pinned in
//! scripts/requirements-test.txt; no WordNet data). Without it the test is skipped with a note,
//! unless `OLOPROOF_REQUIRE_REFERENCES=1`. Similarities must agree to the last bit (same
//! integer arithmetic, one division).

use std::path::Path;

use oloproof_metrics::ontology::hierarchical::hierarchical_scores;
use oloproof_metrics::ontology::taxonomy::Taxonomy;
use oloproof_metrics::ontology::wup::wup_similarity;
use oloproof_reference::{json_lines, reference_python, run, SplitMix64};
use serde_json::json;

/// A random DAG: node `i` takes 0–3 parents among nodes `< i` (node 0 is always a root; others
/// become roots with small probability). Names are shuffled letters so that name order and
/// creation order differ.
fn random_case(rng: &mut SplitMix64) -> (Vec<(String, String)>, Vec<String>) {
    let n = 2 + rng.below(18);
    let mut names: Vec<String> = (0..n)
        .map(|i| format!("{}{}", (b'a' + rng.below(26) as u8) as char, i))
        .collect();
    // Occasionally a name that sorts before "*ROOT*" ('!' < '*').
    if rng.below(5) == 0 {
        names[rng.below(n)].insert(0, '!');
    }
    let mut edges = Vec::new();
    for i in 1..n {
        let parents = if rng.below(6) == 0 {
            0
        } else {
            1 + rng.below(3)
        };
        let mut chosen = Vec::new();
        for _ in 0..parents {
            let p = rng.below(i);
            if !chosen.contains(&p) {
                chosen.push(p);
                edges.push((names[i].clone(), names[p].clone()));
            }
        }
        if chosen.is_empty() && rng.below(2) == 0 {
            // Keep the node in the graph: attach it under a fresh root-ish earlier node.
            edges.push((names[i].clone(), names[0].clone()));
        }
    }
    if edges.is_empty() {
        edges.push((names[1].clone(), names[0].clone()));
    }
    let mut present: Vec<String> = edges
        .iter()
        .flat_map(|(c, p)| [c.clone(), p.clone()])
        .collect();
    present.sort();
    present.dedup();
    (edges, present)
}

#[test]
fn wup_and_hierarchical_counts_match_nltk_and_networkx() {
    let Some(python) = reference_python("NLTK/networkx ontology comparison") else {
        return;
    };
    let mut rng = SplitMix64(0x0a70_1095);
    let mut cases = Vec::new();
    for _ in 0..300 {
        let (edges, nodes) = random_case(&mut rng);
        let pick = |rng: &mut SplitMix64| nodes[rng.below(nodes.len())].clone();
        let pairs: Vec<(String, String)> =
            (0..12).map(|_| (pick(&mut rng), pick(&mut rng))).collect();
        let items: Vec<(Vec<String>, Vec<String>)> = (0..8)
            .map(|_| {
                let p = (0..1 + rng.below(2)).map(|_| pick(&mut rng)).collect();
                let t = (0..1 + rng.below(2)).map(|_| pick(&mut rng)).collect();
                (p, t)
            })
            .collect();
        cases.push((edges, pairs, items));
    }
    let input = json!({
        "cases": cases.iter().map(|(e, p, i)| json!({"edges": e, "pairs": p, "items": i})).collect::<Vec<_>>()
    });
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ontology_reference.py");
    let answers = json_lines(&run(&python, &script, &[], input.to_string().as_bytes()));
    assert_eq!(answers.len(), cases.len());
    let mut multi_root = 0;
    let mut values = std::collections::BTreeSet::new();
    for ((edges, pairs, items), reference) in cases.iter().zip(&answers) {
        let tax = Taxonomy::from_edges(
            edges
                .iter()
                .enumerate()
                .map(|(i, (c, p))| (i + 1, c.as_str(), p.as_str())),
        )
        .expect("random DAGs are acyclic");
        multi_root += usize::from(tax.roots().len() > 1);
        for ((a, b), expected) in pairs.iter().zip(reference["wup"].as_array().unwrap()) {
            let ours = wup_similarity(&tax, tax.id(a).unwrap(), tax.id(b).unwrap());
            let expected = expected.as_f64();
            values.insert(ours.map(f64::to_bits));
            assert_eq!(
                ours.map(f64::to_bits),
                expected.map(f64::to_bits),
                "wup({a}, {b}) on {edges:?}: ours {ours:?}, NLTK {expected:?}"
            );
        }
        let ids: Vec<(Vec<usize>, Vec<usize>)> = items
            .iter()
            .map(|(p, t)| {
                let ids = |v: &Vec<String>| v.iter().map(|n| tax.id(n).unwrap()).collect();
                (ids(p), ids(t))
            })
            .collect();
        let c = hierarchical_scores(&tax, &ids);
        let h: Vec<u64> = reference["hier"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        assert_eq!(
            [c.overlap as u64, c.predicted as u64, c.truth as u64],
            h[..],
            "hierarchical counts on {edges:?}, items {items:?}"
        );
    }
    assert!(multi_root > 30, "only {multi_root} multi-root taxonomies");
    assert!(
        values.len() > 20,
        "only {} distinct similarities",
        values.len()
    );
}
