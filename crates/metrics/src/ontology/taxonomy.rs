//! A taxonomy as a directed acyclic graph of `child → parent` edges (multiple inheritance
//! allowed), read from JSON (`[{"child": "sedan", "parent": "car"}, …]`) or CSV (`child,parent`
//! lines, optional header) text. A cycle is an error naming its nodes in order.

use std::collections::{BTreeSet, HashMap, VecDeque};

use serde::Deserialize;
use thiserror::Error;

/// The name NLTK gives its simulated root; reserved.
pub const SIMULATED_ROOT: &str = "*ROOT*";

/// Why a taxonomy could not be built.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaxonomyError {
    /// The edges form a cycle; the nodes in order, each the parent of the one before, the
    /// first repeated at the end (`a → b → c → a`).
    #[error("the taxonomy has a cycle: {}", .0.join(" → "))]
    Cycle(Vec<String>),
    /// A line of the file is malformed.
    #[error("line {line}: {message}")]
    Parse {
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A node uses the reserved name [`SIMULATED_ROOT`] or is empty.
    #[error("line {line}: `{name}` cannot name a node")]
    BadName {
        /// 1-based line.
        line: usize,
        /// The name.
        name: String,
    },
}

/// A taxonomy DAG with precomputed depths.
#[derive(Debug, Clone)]
pub struct Taxonomy {
    names: Vec<String>,
    index: HashMap<String, usize>,
    parents: Vec<Vec<usize>>,
    children: Vec<Vec<usize>>,
    min_depth: Vec<usize>,
    max_depth: Vec<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Edge {
    child: String,
    parent: String,
}

impl Taxonomy {
    /// Builds the taxonomy from `(line, child, parent)` edges (`line` only for messages).
    /// Nodes are numbered in order of first appearance; duplicate edges count once.
    ///
    /// # Errors
    ///
    /// [`TaxonomyError::Cycle`] (a self-edge is a cycle of one node) and
    /// [`TaxonomyError::BadName`].
    pub fn from_edges<'a, I>(edges: I) -> Result<Self, TaxonomyError>
    where
        I: IntoIterator<Item = (usize, &'a str, &'a str)>,
    {
        let mut t = Taxonomy {
            names: Vec::new(),
            index: HashMap::new(),
            parents: Vec::new(),
            children: Vec::new(),
            min_depth: Vec::new(),
            max_depth: Vec::new(),
        };
        for (line, child, parent) in edges {
            let c = t.intern(line, child)?;
            let p = t.intern(line, parent)?;
            if !t.parents[c].contains(&p) {
                t.parents[c].push(p);
                t.children[p].push(c);
            }
        }
        if let Some(cycle) = t.find_cycle() {
            return Err(TaxonomyError::Cycle(
                cycle.into_iter().map(|i| t.names[i].clone()).collect(),
            ));
        }
        t.compute_depths();
        Ok(t)
    }

    /// Parses CSV text: one `child,parent` edge per line; a first line `child,parent` is a
    /// header; blank lines and lines starting with `#` are skipped; fields may be
    /// double-quoted (`""` inside quotes is a quote) and are trimmed.
    ///
    /// # Errors
    ///
    /// [`TaxonomyError::Parse`] with the line for a line without exactly two fields, then as
    /// [`Taxonomy::from_edges`].
    pub fn parse_csv(text: &str) -> Result<Self, TaxonomyError> {
        let mut edges = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let fields = csv_fields(t).map_err(|message| TaxonomyError::Parse {
                line: i + 1,
                message,
            })?;
            let [child, parent] = &fields[..] else {
                return Err(TaxonomyError::Parse {
                    line: i + 1,
                    message: format!("expected `child,parent`, found {} fields", fields.len()),
                });
            };
            if edges.is_empty() && child == "child" && parent == "parent" {
                continue;
            }
            edges.push((i + 1, child.clone(), parent.clone()));
        }
        Self::from_edges(edges.iter().map(|(l, c, p)| (*l, c.as_str(), p.as_str())))
    }

    /// Parses JSON text: an array of `{"child": …, "parent": …}` objects (no other keys).
    ///
    /// # Errors
    ///
    /// [`TaxonomyError::Parse`] with serde_json's line for malformed JSON or a bad edge object,
    /// then as [`Taxonomy::from_edges`] (a JSON edge's "line" is its 1-based position).
    pub fn parse_json(text: &str) -> Result<Self, TaxonomyError> {
        let edges: Vec<Edge> = serde_json::from_str(text).map_err(|e| TaxonomyError::Parse {
            line: e.line(),
            message: e.to_string(),
        })?;
        Self::from_edges(
            edges
                .iter()
                .enumerate()
                .map(|(i, e)| (i + 1, e.child.as_str(), e.parent.as_str())),
        )
    }

    fn intern(&mut self, line: usize, name: &str) -> Result<usize, TaxonomyError> {
        if name.is_empty() || name == SIMULATED_ROOT {
            return Err(TaxonomyError::BadName {
                line,
                name: name.to_string(),
            });
        }
        if let Some(&i) = self.index.get(name) {
            return Ok(i);
        }
        let i = self.names.len();
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), i);
        self.parents.push(Vec::new());
        self.children.push(Vec::new());
        Ok(i)
    }

    /// Iterative depth-first search along `child → parent` edges; the first back edge found
    /// gives the cycle, listed from its first node and closed by repeating it.
    fn find_cycle(&self) -> Option<Vec<usize>> {
        let n = self.names.len();
        let mut state = vec![0u8; n]; // 0 new, 1 on the stack, 2 done
        for start in 0..n {
            if state[start] != 0 {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
            state[start] = 1;
            while let Some(&mut (node, ref mut next)) = stack.last_mut() {
                if let Some(&p) = self.parents[node].get(*next) {
                    *next += 1;
                    match state[p] {
                        0 => {
                            state[p] = 1;
                            stack.push((p, 0));
                        }
                        1 => {
                            let from = stack.iter().position(|(x, _)| *x == p).unwrap_or(0);
                            let mut cycle: Vec<usize> =
                                stack[from..].iter().map(|(x, _)| *x).collect();
                            cycle.push(p);
                            return Some(cycle);
                        }
                        _ => {}
                    }
                } else {
                    state[node] = 2;
                    stack.pop();
                }
            }
        }
        None
    }

    fn compute_depths(&mut self) {
        let n = self.names.len();
        let mut pending: Vec<usize> = self.parents.iter().map(Vec::len).collect();
        let mut queue: VecDeque<usize> = (0..n).filter(|&i| pending[i] == 0).collect();
        self.min_depth = vec![0; n];
        self.max_depth = vec![0; n];
        while let Some(x) = queue.pop_front() {
            if let Some(lo) = self.parents[x].iter().map(|&p| self.min_depth[p]).min() {
                self.min_depth[x] = lo + 1;
                self.max_depth[x] = 1 + self.parents[x]
                    .iter()
                    .map(|&p| self.max_depth[p])
                    .max()
                    .unwrap_or(0);
            }
            for &c in &self.children[x] {
                pending[c] -= 1;
                if pending[c] == 0 {
                    queue.push_back(c);
                }
            }
        }
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// `true` for a taxonomy without nodes.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The node named `name`.
    pub fn id(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// The name of node `id`.
    pub fn name(&self, id: usize) -> &str {
        &self.names[id]
    }

    /// The direct parents of `id`, in file order.
    pub fn parents(&self, id: usize) -> &[usize] {
        &self.parents[id]
    }

    /// The nodes without a parent.
    pub fn roots(&self) -> Vec<usize> {
        (0..self.len())
            .filter(|&i| self.parents[i].is_empty())
            .collect()
    }

    /// The root excluded from hierarchical scores: the only parentless node when there is
    /// exactly one. With several parentless nodes, the root they share is implicit (not in the
    /// file) and nothing is excluded.
    pub fn single_root(&self) -> Option<usize> {
        match self.roots()[..] {
            [r] => Some(r),
            _ => None,
        }
    }

    /// Proper ancestors of `id` (every node reachable through parent edges), without `id`.
    pub fn ancestors(&self, id: usize) -> BTreeSet<usize> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![id];
        while let Some(x) = todo.pop() {
            for &p in &self.parents[x] {
                if seen.insert(p) {
                    todo.push(p);
                }
            }
        }
        seen
    }

    /// `true` when `a` is a proper ancestor of `b`.
    pub fn is_ancestor(&self, a: usize, b: usize) -> bool {
        a != b && self.ancestors(b).contains(&a)
    }

    /// Length of the shortest path from `id` up to a root (0 for a root) — NLTK's `min_depth`.
    pub fn min_depth(&self, id: usize) -> usize {
        self.min_depth[id]
    }

    /// Length of the longest path from `id` up to a root (0 for a root) — NLTK's `max_depth`.
    pub fn max_depth(&self, id: usize) -> usize {
        self.max_depth[id]
    }

    /// Shortest upward distances from `id` to itself (0) and each of its ancestors
    /// (breadth-first, NLTK's `_shortest_hypernym_paths`).
    pub fn upward_distances(&self, id: usize) -> Vec<(usize, usize)> {
        let mut dist: HashMap<usize, usize> = HashMap::new();
        let mut order = Vec::new();
        let mut queue = VecDeque::from([(id, 0usize)]);
        while let Some((x, d)) = queue.pop_front() {
            if dist.contains_key(&x) {
                continue;
            }
            dist.insert(x, d);
            order.push((x, d));
            for &p in &self.parents[x] {
                queue.push_back((p, d + 1));
            }
        }
        order
    }
}

/// Splits one CSV line into trimmed fields, honouring double quotes.
fn csv_fields(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut was_quoted = false;
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                cur.push('"');
            }
            ('"', true) => quoted = false,
            ('"', false) if cur.trim().is_empty() => {
                cur.clear();
                quoted = true;
                was_quoted = true;
            }
            (',', false) => {
                fields.push(if was_quoted {
                    cur.clone()
                } else {
                    cur.trim().to_string()
                });
                cur.clear();
                was_quoted = false;
            }
            _ => cur.push(c),
        }
    }
    if quoted {
        return Err("unterminated quoted field".into());
    }
    fields.push(if was_quoted {
        cur
    } else {
        cur.trim().to_string()
    });
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_with_header_quotes_and_comments() {
        let t = Taxonomy::parse_csv(
            "child,parent\n# vehicles\ncar, vehicle\n\"sedan, 4-door\",car\nsedan,car\n",
        )
        .unwrap();
        assert_eq!(t.len(), 4);
        let s = t.id("sedan, 4-door").unwrap();
        assert_eq!(t.name(t.parents(s)[0]), "car");
        assert_eq!(t.single_root(), t.id("vehicle"));
        assert_eq!(t.max_depth(s), 2);
        let e = Taxonomy::parse_csv("a,b\nc\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 2: expected `child,parent`, found 1 fields"
        );
    }

    #[test]
    fn cycles_are_named_in_order() {
        let e = Taxonomy::parse_csv("a,root\nb,a\nc,b\na,c\n").unwrap_err();
        assert_eq!(
            e,
            TaxonomyError::Cycle(vec!["a".into(), "c".into(), "b".into(), "a".into()])
        );
        assert_eq!(e.to_string(), "the taxonomy has a cycle: a → c → b → a");
        let e = Taxonomy::parse_csv("x,x\n").unwrap_err();
        assert_eq!(e, TaxonomyError::Cycle(vec!["x".into(), "x".into()]));
    }

    #[test]
    fn json_edges_and_errors() {
        let t = Taxonomy::parse_json(r#"[{"child":"b","parent":"a"},{"child":"c","parent":"a"}]"#)
            .unwrap();
        assert_eq!(t.roots(), vec![t.id("a").unwrap()]);
        let e = Taxonomy::parse_json("[\n{\"child\":\"b\"}\n]").unwrap_err();
        assert!(matches!(e, TaxonomyError::Parse { line: 2, .. }), "{e}");
        let e = Taxonomy::parse_json(r#"[{"child":"*ROOT*","parent":"a"}]"#).unwrap_err();
        assert!(matches!(e, TaxonomyError::BadName { .. }));
    }

    #[test]
    fn depths_with_multiple_inheritance() {
        // d has parents b (depth 1) and c (depth 2).
        let t = Taxonomy::parse_csv("b,a\nc,b\nd,b\nd,c\n").unwrap();
        let d = t.id("d").unwrap();
        assert_eq!((t.min_depth(d), t.max_depth(d)), (2, 3));
        assert_eq!(t.ancestors(d).len(), 3);
        assert!(t.is_ancestor(t.id("a").unwrap(), d));
        assert!(!t.is_ancestor(d, d));
    }
}
