//! TEDS and TEDS-S (Zhong, ShafieiBavani and Jimeno Yepes, "Image-based table recognition:
//! data, model, and evaluation", ECCV 2020), computed as PubTabNet's `src/metric.py` does.
//!
//! `TEDS(Ta, Tb) = 1 - EditDist(Ta, Tb) / max(|Ta|, |Tb|)` where:
//! - the trees are the `<table>` element and its descendants, except that a `td` is a leaf whose
//!   *content* is the token list of its inside: every character of its text, `<tag>` and
//!   `</tag>` for each element inside it (no closing token for `unk`), and the characters of those
//!   elements' tails (teds.py's `tokenize`, minus the `td`'s own tokens);
//! - `EditDist` is the tree edit distance (APTED in teds.py; here Zhang and Shasha's algorithm,
//!   which computes the same minimum) with unit insert and delete costs and a rename cost of 1
//!   when tag, colspan or rowspan differ, else, for two `td`s of which at least one has content,
//!   the normalised Levenshtein distance of the two token lists (`lev / max(len)`), else 0;
//! - `|T|` is the number of elements *below* `<table>` in the HTML, counting elements inside
//!   cells (teds.py's `len(table.xpath(".//*"))`), not the number of tree nodes.
//!
//! TEDS-S is the same with every cell's content emptied (structure only).
//!
//! Only `td` is a cell, as in teds.py (PubTabNet writes header cells as `td` inside `thead`); a
//! `th` is an ordinary node whose child elements are kept as nodes.
//!
//! Edge cases: an empty string on either side scores 0 (teds.py). teds.py reads the first
//! `body/table` of a full HTML document and scores 0 when there is none, so a bare
//! `<table>…</table>` fragment scores 0 there; here the first top-level `<table>` anywhere in the
//! input is used, so fragments work, and an input without a table scores 0 as in teds.py. Two
//! tables with no element below `<table>` score 1 (teds.py divides by zero).
//!
//! HTML is read by a small tolerant parser: comments, doctype and processing instructions are
//! skipped, tag and attribute names are lowercased, character references (`&amp;`, `&#233;`,
//! `&#xE9;` and the common named ones) are decoded, void elements (`br`, `img`, …) have no
//! children, an end tag closes up to its matching open element, and a `td`/`th`/`tr`/`thead`/
//! `tbody`/`tfoot` start tag closes an open cell, row or section as libxml2 does. lxml drops
//! some whitespace-only text nodes that this parser keeps (they only matter inside cells).

use std::fmt;

/// Why a table could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TedsError {
    /// A `colspan` or `rowspan` attribute that is not an integer (teds.py raises too).
    BadSpan {
        /// `colspan` or `rowspan`.
        attribute: &'static str,
        /// The value found.
        value: String,
    },
}

impl fmt::Display for TedsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TedsError::BadSpan { attribute, value } => {
                write!(f, "{attribute}=\"{value}\" is not an integer")
            }
        }
    }
}

impl std::error::Error for TedsError {}

/// TEDS between a predicted and a true HTML table (cell content included).
///
/// ```
/// use oloproof_metrics::ingest::teds::teds;
/// let t = "<table><tr><td>a</td><td>b</td></tr></table>";
/// assert_eq!(teds(t, t).unwrap(), 1.0);
/// let p = "<table><tr><td>a</td><td>c</td></tr></table>";
/// // One cell's content differs by one of one token: distance 1 over 3 elements.
/// assert!((teds(p, t).unwrap() - (1.0 - 1.0 / 3.0)).abs() < 1e-12);
/// ```
pub fn teds(pred_html: &str, true_html: &str) -> Result<f64, TedsError> {
    score(pred_html, true_html, false)
}

/// TEDS-S: TEDS on structure only (cell content ignored).
pub fn teds_structure(pred_html: &str, true_html: &str) -> Result<f64, TedsError> {
    score(pred_html, true_html, true)
}

fn score(pred_html: &str, true_html: &str, structure_only: bool) -> Result<f64, TedsError> {
    if pred_html.is_empty() || true_html.is_empty() {
        return Ok(0.0);
    }
    let (pred_dom, true_dom) = (parse(pred_html), parse(true_html));
    let (Some(pt), Some(tt)) = (first_table(&pred_dom), first_table(&true_dom)) else {
        return Ok(0.0);
    };
    let n_nodes = descendants(&pred_dom, pt).max(descendants(&true_dom, tt));
    let a = TableTree::build(&pred_dom, pt, structure_only)?;
    let b = TableTree::build(&true_dom, tt, structure_only)?;
    if n_nodes == 0 {
        return Ok(1.0);
    }
    Ok(1.0 - tree_edit_distance(&a, &b) / n_nodes as f64)
}

// ---------------------------------------------------------------------------------------------
// A minimal DOM (lxml's model: element text and tail).

#[derive(Debug, Default)]
struct Element {
    tag: String,
    attrs: Vec<(String, String)>,
    text: String,
    tail: String,
    children: Vec<usize>,
}

struct Dom {
    nodes: Vec<Element>,
}

const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr",
];

fn parse(html: &str) -> Dom {
    let mut nodes = vec![Element {
        tag: "#root".into(),
        ..Element::default()
    }];
    let mut stack: Vec<usize> = vec![0];
    let mut i = 0;
    let bytes = html.as_bytes();
    let push_text = |nodes: &mut Vec<Element>, stack: &[usize], text: &str| {
        let parent = *stack.last().unwrap_or(&0);
        let decoded = decode_entities(text);
        match nodes[parent].children.last() {
            Some(&last) => nodes[last].tail.push_str(&decoded),
            None => nodes[parent].text.push_str(&decoded),
        }
    };
    while i < html.len() {
        let Some(off) = html[i..].find('<') else {
            push_text(&mut nodes, &stack, &html[i..]);
            break;
        };
        if off > 0 {
            push_text(&mut nodes, &stack, &html[i..i + off]);
        }
        i += off;
        let rest = &html[i..];
        if let Some(comment) = rest.strip_prefix("<!--") {
            i += comment.find("-->").map_or(rest.len(), |e| e + 7);
            continue;
        }
        if rest.starts_with("<!") || rest.starts_with("<?") {
            i += rest.find('>').map_or(rest.len(), |e| e + 1);
            continue;
        }
        let closing = rest.starts_with("</");
        let name_start = if closing { 2 } else { 1 };
        let name_len = rest[name_start..]
            .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
            .unwrap_or(rest.len() - name_start);
        if name_len == 0 || !bytes[i + name_start].is_ascii_alphabetic() {
            // A lone '<' is text.
            push_text(&mut nodes, &stack, "<");
            i += 1;
            continue;
        }
        let name = rest[name_start..name_start + name_len].to_ascii_lowercase();
        let (attrs, consumed, self_closing) = parse_attrs(&rest[name_start + name_len..]);
        i += name_start + name_len + consumed;
        if closing {
            if let Some(pos) = stack.iter().rposition(|&n| nodes[n].tag == name) {
                if pos > 0 {
                    stack.truncate(pos);
                }
            }
            continue;
        }
        implicit_close(&nodes, &mut stack, &name);
        let id = nodes.len();
        let parent = *stack.last().unwrap_or(&0);
        nodes.push(Element {
            tag: name.clone(),
            attrs,
            ..Element::default()
        });
        nodes[parent].children.push(id);
        if !self_closing && !VOID.contains(&name.as_str()) {
            stack.push(id);
        }
    }
    Dom { nodes }
}

/// libxml2-style auto-closing for table markup.
fn implicit_close(nodes: &[Element], stack: &mut Vec<usize>, name: &str) {
    let closes: &[&str] = match name {
        "td" | "th" => &["td", "th"],
        "tr" => &["tr", "td", "th"],
        "thead" | "tbody" | "tfoot" => &["thead", "tbody", "tfoot", "tr", "td", "th"],
        _ => return,
    };
    // Close open cells/rows/sections (and inline elements left open inside them), but never
    // cross a table.
    while stack.len() > 1 {
        let top = stack[stack.len() - 1];
        let tag = nodes[top].tag.as_str();
        let closable = tag != "table"
            && stack
                .iter()
                .rev()
                .take_while(|&&n| nodes[n].tag != "table")
                .any(|&n| closes.contains(&nodes[n].tag.as_str()));
        if !closable {
            break;
        }
        stack.pop();
    }
}

/// Attributes after a tag name: returns them, the bytes consumed through `>`, and whether the tag
/// ended with `/>`.
fn parse_attrs(s: &str) -> (Vec<(String, String)>, usize, bool) {
    let mut attrs = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    let mut self_closing = false;
    while i < b.len() {
        match b[i] {
            b'>' => return (attrs, i + 1, self_closing),
            b'/' => {
                self_closing = true;
                i += 1;
            }
            c if c.is_ascii_whitespace() => i += 1,
            _ => {
                self_closing = false;
                let start = i;
                while i < b.len() && !b[i].is_ascii_whitespace() && !matches!(b[i], b'=' | b'>') {
                    i += 1;
                }
                let name = s[start..i].to_ascii_lowercase();
                while i < b.len() && b[i].is_ascii_whitespace() {
                    i += 1;
                }
                let mut value = String::new();
                if i < b.len() && b[i] == b'=' {
                    i += 1;
                    while i < b.len() && b[i].is_ascii_whitespace() {
                        i += 1;
                    }
                    if i < b.len() && (b[i] == b'"' || b[i] == b'\'') {
                        let q = b[i];
                        let end = s[i + 1..].find(q as char).map_or(s.len(), |e| i + 1 + e);
                        value = decode_entities(&s[i + 1..end]);
                        i = (end + 1).min(s.len());
                    } else {
                        let start = i;
                        while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'>' {
                            i += 1;
                        }
                        value = decode_entities(&s[start..i]);
                    }
                }
                if !attrs.iter().any(|(n, _)| *n == name) {
                    attrs.push((name, value));
                }
            }
        }
    }
    (attrs, s.len(), self_closing)
}

fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find('&') {
        out.push_str(&rest[..pos]);
        rest = &rest[pos..];
        let end = rest[1..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '#'))
            .map_or(rest.len(), |e| e + 1);
        let name = &rest[1..end];
        let decoded = if let Some(num) = name.strip_prefix('#') {
            let v = match num.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok(),
                None => num.parse().ok(),
            };
            v.and_then(char::from_u32)
        } else {
            named_entity(name)
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[end..];
                if rest.starts_with(';') {
                    rest = &rest[1..];
                }
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn named_entity(name: &str) -> Option<char> {
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => '\u{a0}',
        "copy" => '©',
        "reg" => '®',
        "deg" => '°',
        "plusmn" => '±',
        "times" => '×',
        "divide" => '÷',
        "middot" => '·',
        "ndash" => '–',
        "mdash" => '—',
        "hellip" => '…',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "micro" => 'µ',
        "alpha" => 'α',
        "beta" => 'β',
        "gamma" => 'γ',
        "delta" => 'δ',
        "mu" => 'μ',
        "sigma" => 'σ',
        "le" => '≤',
        "ge" => '≥',
        "minus" => '−',
        "euro" => '€',
        "pound" => '£',
        "sect" => '§',
        _ => return None,
    })
}

fn first_table(dom: &Dom) -> Option<usize> {
    fn find(dom: &Dom, n: usize) -> Option<usize> {
        dom.nodes[n].children.iter().find_map(|&c| {
            if dom.nodes[c].tag == "table" {
                Some(c)
            } else {
                find(dom, c)
            }
        })
    }
    find(dom, 0)
}

fn descendants(dom: &Dom, n: usize) -> usize {
    dom.nodes[n]
        .children
        .iter()
        .map(|&c| 1 + descendants(dom, c))
        .sum()
}

// ---------------------------------------------------------------------------------------------
// The tree teds.py hands to APTED, in postorder.

struct TreeNode {
    tag: String,
    spans: Option<(i64, i64)>,
    content: Vec<String>,
    /// Postorder index of the leftmost leaf descendant.
    leftmost: usize,
}

struct TableTree {
    nodes: Vec<TreeNode>,
}

impl TableTree {
    fn build(dom: &Dom, root: usize, structure_only: bool) -> Result<TableTree, TedsError> {
        let mut tree = TableTree { nodes: Vec::new() };
        tree.visit(dom, root, structure_only)?;
        Ok(tree)
    }

    /// Appends `n`'s subtree in postorder; returns the postorder index of its leftmost leaf.
    fn visit(&mut self, dom: &Dom, n: usize, structure_only: bool) -> Result<usize, TedsError> {
        let e = &dom.nodes[n];
        if e.tag == "td" {
            let span = |attribute: &'static str| -> Result<i64, TedsError> {
                match e.attrs.iter().find(|(k, _)| k == attribute) {
                    None => Ok(1),
                    Some((_, v)) => v.trim().parse().map_err(|_| TedsError::BadSpan {
                        attribute,
                        value: v.clone(),
                    }),
                }
            };
            let spans = Some((span("colspan")?, span("rowspan")?));
            let mut content = Vec::new();
            if !structure_only {
                content.extend(e.text.chars().map(String::from));
                for &c in &e.children {
                    tokenize(dom, c, &mut content);
                }
            }
            let idx = self.nodes.len();
            self.nodes.push(TreeNode {
                tag: e.tag.clone(),
                spans,
                content,
                leftmost: idx,
            });
            return Ok(idx);
        }
        let mut leftmost = None;
        for &c in &e.children {
            let l = self.visit(dom, c, structure_only)?;
            leftmost.get_or_insert(l);
        }
        let idx = self.nodes.len();
        let leftmost = leftmost.unwrap_or(idx);
        self.nodes.push(TreeNode {
            tag: e.tag.clone(),
            spans: None,
            content: Vec::new(),
            leftmost,
        });
        Ok(leftmost)
    }
}

/// teds.py's `tokenize` for an element inside a cell.
fn tokenize(dom: &Dom, n: usize, out: &mut Vec<String>) {
    let e = &dom.nodes[n];
    out.push(format!("<{}>", e.tag));
    out.extend(e.text.chars().map(String::from));
    for &c in &e.children {
        tokenize(dom, c, out);
    }
    if e.tag != "unk" {
        out.push(format!("</{}>", e.tag));
    }
    if e.tag != "td" {
        out.extend(e.tail.chars().map(String::from));
    }
}

fn rename_cost(a: &TreeNode, b: &TreeNode) -> f64 {
    if a.tag != b.tag || a.spans != b.spans {
        return 1.0;
    }
    if a.tag == "td" && (!a.content.is_empty() || !b.content.is_empty()) {
        let max = a.content.len().max(b.content.len());
        return super::error_rate::levenshtein(&a.content, &b.content) as f64 / max as f64;
    }
    0.0
}

/// Zhang and Shasha (1989) tree edit distance with unit insert/delete costs.
fn tree_edit_distance(a: &TableTree, b: &TableTree) -> f64 {
    let (n, m) = (a.nodes.len(), b.nodes.len());
    let keyroots = |t: &TableTree| -> Vec<usize> {
        let mut roots: Vec<usize> = (0..t.nodes.len())
            .filter(|&i| {
                !(i + 1..t.nodes.len()).any(|j| t.nodes[j].leftmost == t.nodes[i].leftmost)
            })
            .collect();
        roots.sort_unstable();
        roots
    };
    let mut td = vec![0.0f64; n * m];
    let mut fd = vec![0.0f64; (n + 1) * (m + 1)];
    for &i in &keyroots(a) {
        for &j in &keyroots(b) {
            let (li, lj) = (a.nodes[i].leftmost, b.nodes[j].leftmost);
            let (rows, cols) = (i - li + 2, j - lj + 2);
            let at = |x: usize, y: usize| x * cols + y;
            fd[at(0, 0)] = 0.0;
            for x in 1..rows {
                fd[at(x, 0)] = fd[at(x - 1, 0)] + 1.0;
            }
            for y in 1..cols {
                fd[at(0, y)] = fd[at(0, y - 1)] + 1.0;
            }
            for x in 1..rows {
                let ni = li + x - 1;
                for y in 1..cols {
                    let nj = lj + y - 1;
                    let del = fd[at(x - 1, y)] + 1.0;
                    let ins = fd[at(x, y - 1)] + 1.0;
                    if a.nodes[ni].leftmost == li && b.nodes[nj].leftmost == lj {
                        let ren = fd[at(x - 1, y - 1)] + rename_cost(&a.nodes[ni], &b.nodes[nj]);
                        let v = del.min(ins).min(ren);
                        fd[at(x, y)] = v;
                        td[ni * m + nj] = v;
                    } else {
                        let (px, py) = (a.nodes[ni].leftmost - li, b.nodes[nj].leftmost - lj);
                        let sub = fd[at(px, py)] + td[ni * m + nj];
                        fd[at(x, y)] = del.min(ins).min(sub);
                    }
                }
            }
        }
    }
    td[(n - 1) * m + (m - 1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrap(body: &str) -> String {
        format!("<html><body><table>{body}</table></body></html>")
    }

    #[test]
    fn identical_tables_score_one() {
        let t = wrap("<thead><tr><td><b>Name</b></td><td>Age</td></tr></thead><tbody><tr><td>Ann</td><td>3</td></tr></tbody>");
        assert_eq!(teds(&t, &t).unwrap(), 1.0);
        assert_eq!(teds_structure(&t, &t).unwrap(), 1.0);
    }

    #[test]
    fn content_and_structure() {
        let truth = wrap("<tr><td>ab</td><td>cd</td></tr><tr><td>ef</td><td>gh</td></tr>");
        // One cell's text half wrong: rename cost 0.5 over 6 elements.
        let pred = wrap("<tr><td>ab</td><td>cx</td></tr><tr><td>ef</td><td>gh</td></tr>");
        assert!((teds(&pred, &truth).unwrap() - (1.0 - 0.5 / 6.0)).abs() < 1e-12);
        assert_eq!(teds_structure(&pred, &truth).unwrap(), 1.0);
        // A missing row: delete tr and its two cells (3) over max(6, 3) elements.
        let short = wrap("<tr><td>ab</td><td>cd</td></tr>");
        assert!((teds(&short, &truth).unwrap() - 0.5).abs() < 1e-12);
        // A colspan changes the structure: rename cost 1.
        let span =
            wrap("<tr><td colspan=\"2\">ab</td><td>cd</td></tr><tr><td>ef</td><td>gh</td></tr>");
        assert!((teds_structure(&span, &truth).unwrap() - (1.0 - 1.0 / 6.0)).abs() < 1e-12);
    }

    #[test]
    fn edge_cases() {
        assert_eq!(teds("", "<table></table>").unwrap(), 0.0);
        assert_eq!(
            teds("<p>no table</p>", &wrap("<tr><td>a</td></tr>")).unwrap(),
            0.0
        );
        assert_eq!(teds("<table></table>", "<table></table>").unwrap(), 1.0);
        assert!(matches!(
            teds(&wrap("<tr><td colspan=x>a</td></tr>"), &wrap("")),
            Err(TedsError::BadSpan { .. })
        ));
    }

    #[test]
    fn parser_handles_entities_and_implicit_closes() {
        let dom = parse("<table><tr><td>a &amp; b<td>&#233;<br>x</table>");
        let t = first_table(&dom).unwrap();
        assert_eq!(descendants(&dom, t), 4);
        let tree = TableTree::build(&dom, t, false).unwrap();
        let cells: Vec<String> = tree
            .nodes
            .iter()
            .filter(|n| n.tag == "td")
            .map(|n| n.content.concat())
            .collect();
        assert_eq!(cells, ["a & b", "é<br></br>x"]);
    }
}
