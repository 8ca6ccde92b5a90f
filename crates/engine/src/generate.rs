//! Synthetic test sets (`oloproof generate`): draft cases written by a judge model from the
//! user's documents, to be reviewed by a person before they are used (seed 003's test-set
//! generation, with adversarial questions added).
//!
//! 1. **Documents**: every `.md`, `.markdown` and `.txt` file under the folder, in path order;
//!    the document id is the path relative to the folder (`/`-separated).
//! 2. **Chunks**: paragraphs (blank-line separated; a heading starts a new paragraph) merged in
//!    order up to `max_chars` characters; a longer paragraph is its own chunk. Spans are
//!    half-open character offsets (Unicode scalar values) into the document.
//! 3. **Plan**: `size` questions split over [`QuestionKind`]s by [`DEFAULT_MIX`] (largest
//!    remainders), each drawn on one chunk (single-hop, negation, distractor), two chunks of
//!    different documents when there are several (multi-hop), or none (out of scope) — all
//!    from a ChaCha8 generator seeded with `seed`, so the same folder, size and seed give the
//!    same plan.
//! 4. **Drafting**: one judge call per question (template `question_synthesis`); every
//!    evidence quote must occur verbatim in the passage it names (else the reply is repaired
//!    once, then the question fails and is reported, never written half-checked). The quotes'
//!    spans become the case's `gold_context`, and their documents its `relevant` labels.
//!
//! Each draft is a case line with `"status": "draft"` and its provenance under
//! `metadata.synthesis` (kind, source chunks, judge, template version, seed). `oloproof run`
//! refuses draft cases: a person reviews them (`oloproof generate --review FILE`), edits what
//! is wrong and sets `"status": "reviewed"`.

use std::path::{Path, PathBuf};

use oloproof_judge::templates::{self, QUESTION_SYNTHESIS};
use oloproof_judge::{JudgeCache, JudgeClient, JudgeError, ReplyError};
use rand::seq::{IndexedRandom, SliceRandom};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use serde_json::{json, Map, Value};

/// The kinds of synthetic questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionKind {
    /// A specific fact stated in one passage.
    SingleHopSpecific,
    /// A specific fact that needs two passages together.
    MultiHopSpecific,
    /// A broader question that synthesises two passages.
    MultiHopAbstract,
    /// A question phrased with a negation ("which … are not …"), answered by one passage.
    Negation,
    /// A question about a plausible entity that the passage does not mention (abstain).
    Distractor,
    /// A question the documents cannot answer at all (abstain).
    OutOfScope,
}

impl QuestionKind {
    /// Every kind, in plan order.
    pub const ALL: [QuestionKind; 6] = [
        QuestionKind::SingleHopSpecific,
        QuestionKind::MultiHopSpecific,
        QuestionKind::MultiHopAbstract,
        QuestionKind::Negation,
        QuestionKind::Distractor,
        QuestionKind::OutOfScope,
    ];

    /// The name used in files.
    pub fn as_str(self) -> &'static str {
        match self {
            QuestionKind::SingleHopSpecific => "single_hop_specific",
            QuestionKind::MultiHopSpecific => "multi_hop_specific",
            QuestionKind::MultiHopAbstract => "multi_hop_abstract",
            QuestionKind::Negation => "negation",
            QuestionKind::Distractor => "distractor",
            QuestionKind::OutOfScope => "out_of_scope",
        }
    }

    /// Passages shown to the judge.
    fn passages(self) -> usize {
        match self {
            QuestionKind::MultiHopSpecific | QuestionKind::MultiHopAbstract => 2,
            _ => 1,
        }
    }

    /// Whether the expected behaviour is to abstain (no evidence).
    pub fn abstains(self) -> bool {
        matches!(self, QuestionKind::Distractor | QuestionKind::OutOfScope)
    }

    /// The style instruction given to the judge.
    fn style(self) -> &'static str {
        match self {
            QuestionKind::SingleHopSpecific => "single-hop specific: one precise question whose answer is a fact stated in the passage (a number, a name, a condition), as a real user would ask it without quoting the passage.",
            QuestionKind::MultiHopSpecific => "multi-hop specific: one precise question that can only be answered by combining a fact from passage 1 with a fact from passage 2; quote evidence from both.",
            QuestionKind::MultiHopAbstract => "multi-hop abstract: one broader question (compare, summarise, explain how they relate) whose answer synthesises both passages; quote evidence from both.",
            QuestionKind::Negation => "negation: one question phrased with a negation (for example 'which … are not …', 'when can you not …') whose answer is stated in the passage.",
            QuestionKind::Distractor => "distractor entity: one question that looks answerable from the passage but is about a plausible entity, product or number that the passage does NOT mention (swap in a similar name); the passage cannot answer it, so the answer says the documents do not cover it, and evidence is empty.",
            QuestionKind::OutOfScope => "out of scope: one question a user of these documents might ask but that none of them can answer (a different topic of the same business); the answer says the documents do not cover it, and evidence is empty.",
        }
    }
}

/// Default shares of the kinds: 35 % single-hop, 20 % multi-hop specific, 15 % multi-hop
/// abstract, and 10 % each of negation, distractor and out-of-scope questions.
pub const DEFAULT_MIX: [(QuestionKind, f64); 6] = [
    (QuestionKind::SingleHopSpecific, 0.35),
    (QuestionKind::MultiHopSpecific, 0.20),
    (QuestionKind::MultiHopAbstract, 0.15),
    (QuestionKind::Negation, 0.10),
    (QuestionKind::Distractor, 0.10),
    (QuestionKind::OutOfScope, 0.10),
];

/// A source document.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// Path relative to the documents folder, `/`-separated.
    pub id: String,
    /// The text.
    pub text: String,
}

/// A chunk of a document: `[start, end)` in characters.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    /// Index of the document in the list given to [`chunk_documents`].
    pub document: usize,
    /// First character.
    pub start: usize,
    /// One past the last character.
    pub end: usize,
    /// The chunk's text.
    pub text: String,
}

/// A planned question: its kind and the chunks it is drawn on.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedQuestion {
    /// The kind.
    pub kind: QuestionKind,
    /// Chunk indices shown to the judge (none for out-of-scope questions, which see a sample
    /// of the corpus's headings instead).
    pub chunks: Vec<usize>,
}

/// Why generation could not start or a question failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GenerateError {
    /// The documents folder could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// No usable document.
    #[error("no .md, .markdown or .txt file with text under {0}: point --docs at the folder of your knowledge base")]
    NoDocuments(String),
}

/// Reads every `.md`, `.markdown` and `.txt` file under `dir` (recursively, path order).
pub fn read_documents(dir: &Path) -> Result<Vec<Document>, GenerateError> {
    let mut files = Vec::new();
    collect_files(dir, &mut files)?;
    files.sort();
    let mut documents = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|source| GenerateError::Read {
            path: path.display().to_string(),
            source,
        })?;
        if text.trim().is_empty() {
            continue;
        }
        let id = path
            .strip_prefix(dir)
            .unwrap_or(&path)
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        documents.push(Document { id, text });
    }
    if documents.is_empty() {
        return Err(GenerateError::NoDocuments(dir.display().to_string()));
    }
    Ok(documents)
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), GenerateError> {
    let entries = std::fs::read_dir(dir).map_err(|source| GenerateError::Read {
        path: dir.display().to_string(),
        source,
    })?;
    for entry in entries {
        let entry = entry.map_err(|source| GenerateError::Read {
            path: dir.display().to_string(),
            source,
        })?;
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, out)?;
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "md" | "markdown" | "txt"))
        {
            out.push(path);
        }
    }
    Ok(())
}

/// Splits every document into chunks of at most `max_chars` characters (see the module docs).
pub fn chunk_documents(documents: &[Document], max_chars: usize) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    for (d, doc) in documents.iter().enumerate() {
        let chars: Vec<char> = doc.text.chars().collect();
        // Paragraphs as [start, end) over chars, trimmed of surrounding whitespace.
        let mut paragraphs: Vec<(usize, usize)> = Vec::new();
        let mut line_start = 0;
        let mut para: Option<(usize, usize)> = None;
        let mut i = 0;
        while i <= chars.len() {
            if i == chars.len() || chars[i] == '\n' {
                let line: String = chars[line_start..i].iter().collect();
                let trimmed = line.trim();
                if trimmed.is_empty() {
                    paragraphs.extend(para.take());
                } else {
                    if trimmed.starts_with('#') {
                        paragraphs.extend(para.take());
                    }
                    let lead = line.len() - line.trim_start().len();
                    let s = line_start + line[..lead].chars().count();
                    let e = line_start + line.trim_end().chars().count();
                    para = Some(match para {
                        Some((ps, _)) => (ps, e),
                        None => (s, e),
                    });
                }
                line_start = i + 1;
            }
            i += 1;
        }
        paragraphs.extend(para.take());
        let mut current: Option<(usize, usize)> = None;
        for (s, e) in paragraphs {
            current = match current {
                Some((cs, _)) if e - cs <= max_chars => Some((cs, e)),
                Some(done) => {
                    chunks.push(make_chunk(d, &chars, done));
                    Some((s, e))
                }
                None => Some((s, e)),
            };
        }
        if let Some(done) = current {
            chunks.push(make_chunk(d, &chars, done));
        }
    }
    chunks
}

fn make_chunk(document: usize, chars: &[char], (start, end): (usize, usize)) -> Chunk {
    Chunk {
        document,
        start,
        end,
        text: chars[start..end].iter().collect(),
    }
}

/// How many questions of each kind `size` makes under `mix` (largest remainders; ties to the
/// earlier kind).
pub fn kind_counts(size: usize, mix: &[(QuestionKind, f64)]) -> Vec<(QuestionKind, usize)> {
    let total: f64 = mix.iter().map(|(_, w)| w).sum();
    let exact: Vec<f64> = mix.iter().map(|(_, w)| size as f64 * w / total).collect();
    let mut counts: Vec<usize> = exact.iter().map(|x| x.floor() as usize).collect();
    let mut left = size - counts.iter().sum::<usize>();
    let mut order: Vec<usize> = (0..mix.len()).collect();
    order.sort_by(|&a, &b| {
        let ra = exact[a] - exact[a].floor();
        let rb = exact[b] - exact[b].floor();
        rb.total_cmp(&ra).then(a.cmp(&b))
    });
    for &k in order.iter().cycle() {
        if left == 0 {
            break;
        }
        counts[k] += 1;
        left -= 1;
    }
    mix.iter().map(|(k, _)| *k).zip(counts).collect()
}

/// Draws the plan of `size` questions over `chunks` (see the module docs). Within a kind,
/// chunks are drawn without replacement until every chunk has been used once.
pub fn plan(chunks: &[Chunk], size: usize, seed: u64) -> Vec<PlannedQuestion> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let indices: Vec<usize> = (0..chunks.len()).collect();
    let mut planned = Vec::with_capacity(size);
    for (kind, count) in kind_counts(size, &DEFAULT_MIX) {
        let mut deck: Vec<usize> = Vec::new();
        let mut draw = |rng: &mut ChaCha8Rng| -> Option<usize> {
            if deck.is_empty() {
                deck = indices.clone();
                deck.shuffle(rng);
            }
            deck.pop()
        };
        for _ in 0..count {
            let chosen: Vec<usize> = match kind.passages() {
                _ if kind == QuestionKind::OutOfScope || chunks.is_empty() => Vec::new(),
                1 => draw(&mut rng).into_iter().collect(),
                _ => {
                    let Some(first) = draw(&mut rng) else {
                        continue;
                    };
                    let others: Vec<usize> = indices
                        .iter()
                        .copied()
                        .filter(|&i| i != first && chunks[i].document != chunks[first].document)
                        .collect();
                    let fallback: Vec<usize> =
                        indices.iter().copied().filter(|&i| i != first).collect();
                    let pool = if others.is_empty() {
                        &fallback
                    } else {
                        &others
                    };
                    let mut chosen = vec![first];
                    chosen.extend(pool.choose(&mut rng).copied());
                    chosen
                }
            };
            planned.push(PlannedQuestion {
                kind,
                chunks: chosen,
            });
        }
    }
    planned
}

/// One drafted case, or why its question failed.
pub type Drafted = Result<Value, crate::error::DraftError>;

/// Drafts the planned questions with `judge`; item `i` gets the id `syn-<i+1>` (4 digits).
pub fn draft(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    documents: &[Document],
    chunks: &[Chunk],
    planned: &[PlannedQuestion],
    seed: u64,
) -> Vec<Drafted> {
    planned
        .iter()
        .enumerate()
        .map(|(i, q)| {
            // A question planned on the same kind and chunks as an earlier one is a separate
            // draw (another repeat index), not a cached copy.
            let repeat = planned[..i].iter().filter(|p| *p == q).count() as u32;
            draft_one(judge, cache, documents, chunks, q, seed, i, repeat)
                .map_err(|source| crate::error::DraftError { source })
        })
        .collect()
}

fn shown_passages(documents: &[Document], chunks: &[Chunk], q: &PlannedQuestion) -> Vec<String> {
    if q.kind == QuestionKind::OutOfScope {
        // The corpus's headings (or first lines) show what it covers.
        let outline: Vec<String> = documents
            .iter()
            .map(|d| {
                let headings: Vec<&str> = d
                    .text
                    .lines()
                    .filter(|l| l.trim_start().starts_with('#'))
                    .map(str::trim)
                    .collect();
                if headings.is_empty() {
                    format!("{}: {}", d.id, d.text.lines().next().unwrap_or("").trim())
                } else {
                    format!("{}: {}", d.id, headings.join(" / "))
                }
            })
            .collect();
        return vec![format!("What the documents cover:\n{}", outline.join("\n"))];
    }
    q.chunks.iter().map(|&c| chunks[c].text.clone()).collect()
}

#[allow(clippy::too_many_arguments)]
fn draft_one(
    judge: &JudgeClient,
    cache: &dyn JudgeCache,
    documents: &[Document],
    chunks: &[Chunk],
    q: &PlannedQuestion,
    seed: u64,
    index: usize,
    repeat: u32,
) -> Result<Value, JudgeError> {
    let passages = shown_passages(documents, chunks, q);
    let abstains = q.kind.abstains();
    let n = passages.len();
    let check_passages = passages.clone();
    let check = move |v: &Value| -> Result<(), ReplyError> {
        for field in ["question", "answer"] {
            if v[field].as_str().is_none_or(|s| s.trim().is_empty()) {
                return Err(ReplyError::new(format!("`{field}` is empty")));
            }
        }
        // No `evidence` array is no evidence; the checks below say what that means here.
        let evidence = v["evidence"].as_array().cloned().unwrap_or_default();
        if abstains && !evidence.is_empty() {
            return Err(ReplyError::new(
                "this question must not be answerable: `evidence` must be empty",
            ));
        }
        if !abstains && evidence.is_empty() {
            return Err(ReplyError::new(
                "`evidence` must quote the passage(s) the answer rests on",
            ));
        }
        for e in &evidence {
            let p = e["passage"].as_u64().unwrap_or(0) as usize;
            if p == 0 || p > n {
                return Err(ReplyError::new(format!(
                    "evidence passage {p} is not between 1 and {n}"
                )));
            }
            let quote = e["quote"].as_str().unwrap_or("");
            if quote.trim().is_empty() || !check_passages[p - 1].contains(quote.trim()) {
                return Err(ReplyError::new(format!(
                    "evidence quote {quote:?} is not copied verbatim from passage {p}"
                )));
            }
        }
        Ok(())
    };
    let request = templates::question_synthesis(q.kind.style(), &passages, repeat);
    let record = judge.judge(cache, &request, &check)?;
    let reply = &record.parsed;
    let mut gold = Vec::new();
    let mut relevant: Vec<String> = Vec::new();
    for e in reply["evidence"].as_array().into_iter().flatten() {
        let p = e["passage"].as_u64().unwrap_or(1) as usize - 1;
        let chunk = &chunks[q.chunks[p]];
        let quote = e["quote"].as_str().unwrap_or("").trim();
        let byte = chunk.text.find(quote).unwrap_or(0);
        let start = chunk.start + chunk.text[..byte].chars().count();
        let end = start + quote.chars().count();
        let doc_id = &documents[chunk.document].id;
        if !relevant.contains(doc_id) {
            relevant.push(doc_id.clone());
        }
        gold.push(json!({"doc_id": doc_id, "text": quote, "metadata": {"span": [start, end]}}));
    }
    let mut expected = Map::new();
    expected.insert("answer".into(), reply["answer"].clone());
    if abstains {
        expected.insert("behavior".into(), json!("abstain"));
    } else {
        expected.insert(
            "relevant".into(),
            Value::Array(relevant.iter().map(|d| json!({"doc_id": d})).collect()),
        );
        expected.insert("gold_context".into(), Value::Array(gold));
    }
    let sources: Vec<Value> = q
        .chunks
        .iter()
        .map(|&c| {
            let ch = &chunks[c];
            json!({"doc_id": documents[ch.document].id, "span": [ch.start, ch.end]})
        })
        .collect();
    Ok(json!({
        "id": format!("syn-{:04}", index + 1),
        "status": "draft",
        "input": {"question": reply["question"]},
        "expected": expected,
        "metadata": {
            "synthesis": {
                "kind": q.kind.as_str(),
                "sources": sources,
                "judge": judge.name(),
                "model": judge.settings().model,
                "template": format!("{}@{}", QUESTION_SYNTHESIS.id, QUESTION_SYNTHESIS.version),
                "seed": seed,
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: &str, text: &str) -> Document {
        Document {
            id: id.into(),
            text: text.into(),
        }
    }

    #[test]
    fn chunks_follow_paragraphs_and_headings_with_char_spans() {
        let text = "# Refunds\nÉlan: refunds within 14 days.\n\nKeep the receipt.\n# Shipping\nFree over 50 EUR.\n";
        let docs = [doc("a.md", text)];
        let chunks = chunk_documents(&docs, 60);
        let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(
            texts,
            vec![
                "# Refunds\nÉlan: refunds within 14 days.\n\nKeep the receipt.",
                "# Shipping\nFree over 50 EUR."
            ]
        );
        let chars: Vec<char> = text.chars().collect();
        for c in &chunks {
            assert_eq!(chars[c.start..c.end].iter().collect::<String>(), c.text);
        }
        // A small budget keeps each paragraph alone (a heading stays with its paragraph).
        assert_eq!(chunk_documents(&docs, 10).len(), 3);
    }

    #[test]
    fn counts_use_largest_remainders_and_sum_to_size() {
        for size in [0, 1, 7, 10, 33] {
            let counts = kind_counts(size, &DEFAULT_MIX);
            assert_eq!(counts.iter().map(|c| c.1).sum::<usize>(), size);
        }
        let ten: Vec<usize> = kind_counts(10, &DEFAULT_MIX).iter().map(|c| c.1).collect();
        assert_eq!(ten, vec![4, 2, 1, 1, 1, 1]);
    }

    #[test]
    fn plans_are_seeded_and_multi_hop_crosses_documents() {
        let docs = [doc("a.md", "One.\n\nTwo."), doc("b.md", "Three.")];
        let chunks = chunk_documents(&docs, 3);
        assert_eq!(chunks.len(), 3);
        let a = plan(&chunks, 20, 7);
        assert_eq!(a, plan(&chunks, 20, 7));
        assert_ne!(a, plan(&chunks, 20, 8));
        for q in &a {
            match q.kind {
                QuestionKind::OutOfScope => assert!(q.chunks.is_empty()),
                QuestionKind::MultiHopSpecific | QuestionKind::MultiHopAbstract => {
                    assert_eq!(q.chunks.len(), 2);
                    assert_ne!(chunks[q.chunks[0]].document, chunks[q.chunks[1]].document);
                }
                _ => assert_eq!(q.chunks.len(), 1),
            }
        }
    }
}
