//! Entity-level NER evaluation exactly as seqeval 1.2.2 (`seqeval.metrics`).
//!
//! **Default mode** (seqeval's `mode=None`, compatible with CoNLL's `conlleval.pl`):
//! [`get_entities`] is a transcription of `seqeval.metrics.sequence_labeling.get_entities`. A
//! tag's prefix is its first character (its last with `suffix`), its type what follows the first
//! `-` (`_` when empty); chunks open and close by the conlleval rules (`end_of_chunk`,
//! `start_of_chunk`), so ill-formed sequences are read leniently: `I-PER` after `O` opens an
//! entity, a type change inside a chunk closes one and opens another, any scheme's prefixes are
//! accepted. As seqeval does, the sentences are concatenated with an `O` after each one and
//! entities are positions in that concatenation.
//!
//! **Strict mode** (`mode='strict'` with a `scheme`): [`strict_entities`] transcribes
//! `seqeval.scheme.Tokens.entities`: a chunk is only an entity when it starts, continues and ends
//! by the scheme's patterns ([`Scheme`]); a tag whose prefix the scheme does not allow is an
//! error (seqeval raises `ValueError`/`KeyError`). The type is the tag without the prefix and
//! with leading and trailing `-` stripped (`_` when empty).
//!
//! **Scores** ([`evaluate`]): for each entity type, true positives are entities identical in
//! type, start and end on both sides; precision `tp / predicted`, recall `tp / true`,
//! F1 `2·P·R / (P + R)` (0 when `P + R = 0`) — seqeval's `_precision_recall_fscore_support`.
//! Micro averages pool the counts; macro is the unweighted mean over types; weighted is the mean
//! weighted by support (number of true entities). A zero denominator gives
//! [`Options::zero_division`] (0 by default, as seqeval's `"warn"`); when no entity exists on
//! the truth side the weighted average is seqeval's special case (`zero_division` for recall,
//! and for precision and F1 only if nothing was predicted, else 0). With no entity anywhere the
//! macro average is undefined (seqeval returns NaN): `None`.

use std::collections::HashMap;

use super::ClassifyError;

/// Value given to a precision or recall whose denominator is zero (seqeval's `zero_division`;
/// its default `"warn"` is 0 plus a warning).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ZeroDivision {
    /// 0 (seqeval's `"warn"` and `0`).
    #[default]
    Zero,
    /// 1.
    One,
}

impl ZeroDivision {
    fn value(self) -> f64 {
        match self {
            ZeroDivision::Zero => 0.0,
            ZeroDivision::One => 1.0,
        }
    }
}

/// A tagging scheme of seqeval's strict mode (`seqeval.scheme`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// IOB1: `B-` only separates two adjacent entities of the same type.
    Iob1,
    /// IOB2 (BIO): every entity starts with `B-`.
    Iob2,
    /// IOE1: `E-` only separates two adjacent entities of the same type (seqeval notes that its
    /// IOE1 does not handle every case; it is transcribed as is).
    Ioe1,
    /// IOE2: every entity ends with `E-`.
    Ioe2,
    /// IOBES: `B-`, `I-`, `E-`, single-token `S-`.
    Iobes,
    /// BILOU: `B-`, `I-`, `L-` (last), single-token `U-` (unit).
    Bilou,
}

impl std::str::FromStr for Scheme {
    type Err = crate::error::UnknownWord;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.to_ascii_uppercase().as_str() {
            "IOB1" => Scheme::Iob1,
            "IOB2" | "BIO" => Scheme::Iob2,
            "IOE1" => Scheme::Ioe1,
            "IOE2" => Scheme::Ioe2,
            "IOBES" => Scheme::Iobes,
            "BILOU" => Scheme::Bilou,
            _ => {
                return Err(crate::error::UnknownWord {
                    what: "unknown scheme",
                    value: s.to_string(),
                    expected: "IOB1, IOB2, IOE1, IOE2, IOBES or BILOU",
                })
            }
        })
    }
}

/// Which entity reading to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// seqeval's default, conlleval-compatible reading ([`get_entities`]).
    #[default]
    Default,
    /// seqeval's `mode='strict'` with this scheme ([`strict_entities`]).
    Strict(Scheme),
}

/// Options of [`evaluate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// Default or strict reading.
    pub mode: Mode,
    /// Tags carry their prefix at the end (`PER-B`), seqeval's `suffix=True`.
    pub suffix: bool,
    /// Value of a precision or recall with a zero denominator.
    pub zero_division: ZeroDivision,
}

/// Precision, recall, F1 and support (number of true entities).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scores {
    /// Precision.
    pub precision: f64,
    /// Recall.
    pub recall: f64,
    /// F1.
    pub f1: f64,
    /// Number of true entities.
    pub support: u64,
}

/// The scores of one entity type and its counts.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeScores {
    /// The entity type (`PER`).
    pub name: String,
    /// Its scores.
    pub scores: Scores,
    /// Entities identical on both sides.
    pub true_positives: u64,
    /// Predicted entities.
    pub predicted: u64,
}

/// seqeval's classification report: per type (sorted by name, as seqeval) and averaged.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// One row per entity type found on either side, sorted by name.
    pub per_type: Vec<TypeScores>,
    /// Micro average (pooled counts).
    pub micro: Scores,
    /// Macro average; `None` when no entity exists on either side (seqeval: NaN).
    pub macro_avg: Option<Scores>,
    /// Support-weighted average.
    pub weighted: Scores,
    /// Token accuracy (`seqeval.metrics.accuracy_score`): share of tokens whose tags are equal;
    /// `None` without tokens.
    pub accuracy: Option<f64>,
}

/// A chunk reading of one tag (default mode): prefix character and type.
fn lenient_parse(chunk: &str, suffix: bool) -> Result<(char, &str), ClassifyError> {
    let empty = || ClassifyError::BadTag {
        tag: chunk.to_string(),
        reason: "empty tag".to_string(),
    };
    let (tag, ty) = if suffix {
        let tag = chunk.chars().next_back().ok_or_else(empty)?;
        let rest = &chunk[..chunk.len() - tag.len_utf8()];
        (tag, rest.rsplit_once('-').map_or(rest, |(a, _)| a))
    } else {
        let tag = chunk.chars().next().ok_or_else(empty)?;
        let rest = &chunk[tag.len_utf8()..];
        (tag, rest.split_once('-').map_or(rest, |(_, b)| b))
    };
    Ok((tag, if ty.is_empty() { "_" } else { ty }))
}

/// seqeval's `end_of_chunk`.
fn end_of_chunk(prev_tag: char, tag: char, prev_type: &str, ty: &str) -> bool {
    matches!(prev_tag, 'E' | 'S')
        || (matches!(prev_tag, 'B' | 'I') && matches!(tag, 'B' | 'S' | 'O'))
        || (prev_tag != 'O' && prev_tag != '.' && prev_type != ty)
}

/// seqeval's `start_of_chunk`.
fn start_of_chunk(prev_tag: char, tag: char, prev_type: &str, ty: &str) -> bool {
    matches!(tag, 'B' | 'S')
        || (matches!(prev_tag, 'E' | 'S' | 'O') && matches!(tag, 'E' | 'I'))
        || (tag != 'O' && tag != '.' && prev_type != ty)
}

/// Runs seqeval's `get_entities` loop over `tags` followed by one `O`, calling `emit(type,
/// first, last)` (inclusive) for each chunk.
fn lenient_chunks<'a, I, F>(tags: I, suffix: bool, mut emit: F) -> Result<(), ClassifyError>
where
    I: Iterator<Item = &'a str>,
    F: FnMut(&'a str, usize, usize),
{
    let mut prev_tag = 'O';
    let mut prev_type: &str = "";
    let mut begin = 0usize;
    for (i, chunk) in tags.chain(std::iter::once("O")).enumerate() {
        let (tag, ty) = lenient_parse(chunk, suffix)?;
        if end_of_chunk(prev_tag, tag, prev_type, ty) {
            emit(prev_type, begin, i.wrapping_sub(1));
        }
        if start_of_chunk(prev_tag, tag, prev_type, ty) {
            begin = i;
        }
        prev_tag = tag;
        prev_type = ty;
    }
    Ok(())
}

/// The entities of one tag sequence as `(type, first, last)` with `last` inclusive, exactly as
/// `seqeval.metrics.sequence_labeling.get_entities(seq, suffix)` (default mode; see the module
/// documentation). Errors on an empty tag (seqeval raises `IndexError`).
///
/// ```
/// use oloproof_metrics::classify::seqeval::get_entities;
///
/// let seq = ["B-PER", "I-PER", "O", "B-LOC", "I-ORG", "O", "I-MISC"];
/// assert_eq!(
///     get_entities(&seq, false)?,
///     [("PER".into(), 0, 1), ("LOC".into(), 3, 3), ("ORG".into(), 4, 4), ("MISC".into(), 6, 6)]
/// );
/// # Ok::<(), oloproof_metrics::classify::ClassifyError>(())
/// ```
pub fn get_entities<S: AsRef<str>>(
    seq: &[S],
    suffix: bool,
) -> Result<Vec<(String, usize, usize)>, ClassifyError> {
    let mut out = Vec::new();
    lenient_chunks(seq.iter().map(AsRef::as_ref), suffix, |t, a, b| {
        out.push((t.to_string(), a, b));
    })?;
    Ok(out)
}

// Prefix bits of seqeval.scheme.Prefix.
const I: u8 = 1;
const O: u8 = 2;
const B: u8 = 4;
const E: u8 = 8;
const S: u8 = 16;
const U: u8 = 32;
const L: u8 = 64;
const ANY: u8 = I | O | B | E | S | U | L;

#[derive(Clone, Copy, PartialEq, Eq)]
enum TagCond {
    Same,
    Diff,
    Any,
}

type Pattern = (u8, u8, TagCond);

struct SchemeDef {
    allowed: u8,
    start: &'static [Pattern],
    inside: &'static [Pattern],
    end: &'static [Pattern],
}

use TagCond::{Any as TANY, Diff, Same};

fn scheme_def(scheme: Scheme) -> SchemeDef {
    match scheme {
        Scheme::Iob1 => SchemeDef {
            allowed: I | O | B,
            start: &[
                (O, I, TANY),
                (I, I, Diff),
                (B, I, TANY),
                (I, B, Same),
                (B, B, Same),
            ],
            inside: &[(B, I, Same), (I, I, Same)],
            end: &[
                (I, I, Diff),
                (I, O, TANY),
                (I, B, TANY),
                (B, O, TANY),
                (B, I, Diff),
                (B, B, Same),
            ],
        },
        Scheme::Ioe1 => SchemeDef {
            allowed: I | O | E,
            start: &[(O, I, TANY), (I, I, Diff), (E, I, TANY), (E, E, Same)],
            inside: &[(I, I, Same), (I, E, Same)],
            end: &[
                (I, I, Diff),
                (I, O, TANY),
                (I, E, Diff),
                (E, I, Same),
                (E, E, Same),
            ],
        },
        Scheme::Iob2 => SchemeDef {
            allowed: I | O | B,
            start: &[(ANY, B, TANY)],
            inside: &[(B, I, Same), (I, I, Same)],
            end: &[
                (I, O, TANY),
                (I, I, Diff),
                (I, B, TANY),
                (B, O, TANY),
                (B, I, Diff),
                (B, B, TANY),
            ],
        },
        Scheme::Ioe2 => SchemeDef {
            allowed: I | O | E,
            start: &[
                (O, I, TANY),
                (O, E, TANY),
                (E, I, TANY),
                (E, E, TANY),
                (I, I, Diff),
                (I, E, Diff),
            ],
            inside: &[(I, E, Same), (I, I, Same)],
            end: &[(E, ANY, TANY)],
        },
        Scheme::Iobes => SchemeDef {
            allowed: I | O | B | E | S,
            start: &[(ANY, B, TANY), (ANY, S, TANY)],
            inside: &[(B, I, Same), (B, E, Same), (I, I, Same), (I, E, Same)],
            end: &[(S, ANY, TANY), (E, ANY, TANY)],
        },
        Scheme::Bilou => SchemeDef {
            allowed: B | I | L | O | U,
            start: &[(ANY, B, TANY), (ANY, U, TANY)],
            inside: &[(B, I, Same), (B, L, Same), (I, I, Same), (I, L, Same)],
            end: &[(U, ANY, TANY), (L, ANY, TANY)],
        },
    }
}

#[derive(Clone, Copy)]
struct Token<'a> {
    prefix: u8,
    tag: &'a str,
}

fn strict_token(token: &str, suffix: bool, allowed: u8) -> Result<Token<'_>, ClassifyError> {
    let bad = |reason: String| ClassifyError::BadTag {
        tag: token.to_string(),
        reason,
    };
    let (c, rest) = if suffix {
        let c = token
            .chars()
            .next_back()
            .ok_or_else(|| bad("empty tag".into()))?;
        (c, &token[..token.len() - c.len_utf8()])
    } else {
        let c = token
            .chars()
            .next()
            .ok_or_else(|| bad("empty tag".into()))?;
        (c, &token[c.len_utf8()..])
    };
    let prefix = match c {
        'I' => I,
        'O' => O,
        'B' => B,
        'E' => E,
        'S' => S,
        'U' => U,
        'L' => L,
        _ => {
            return Err(bad(format!(
                "unknown prefix `{c}` (expected one of IOBESUL)"
            )))
        }
    };
    if prefix & allowed == 0 {
        return Err(bad(format!("prefix `{c}` is not allowed by the scheme")));
    }
    let tag = rest.trim_matches('-');
    Ok(Token {
        prefix,
        tag: if tag.is_empty() { "_" } else { tag },
    })
}

fn matches(prev: Token<'_>, cur: Token<'_>, patterns: &[Pattern]) -> bool {
    patterns.iter().any(|&(p, c, cond)| {
        prev.prefix & p != 0
            && cur.prefix & c != 0
            && match cond {
                TagCond::Any => true,
                TagCond::Same => prev.tag == cur.tag,
                TagCond::Diff => prev.tag != cur.tag,
            }
    })
}

fn strict_chunks<'a, F>(
    tokens: &[Token<'a>],
    def: &SchemeDef,
    mut emit: F,
) -> Result<(), ClassifyError>
where
    F: FnMut(&'a str, usize, usize),
{
    let outside = Token {
        prefix: O,
        tag: "_",
    };
    let n = tokens.len();
    let at = |i: usize| if i < n { tokens[i] } else { outside };
    let mut i = 0usize;
    let mut prev = outside;
    while i <= n {
        let token = at(i);
        if matches(prev, token, def.start) {
            // Tokens._forward: the first token that does not continue the chunk.
            let mut end = i + 1;
            let mut p = token;
            while end <= n && matches(p, at(end), def.inside) {
                p = at(end);
                end += 1;
            }
            // `end <= n` always holds: the outside token never continues a chunk.
            if matches(at(end - 1), at(end), def.end) {
                emit(token.tag, i, end);
            }
            i = end;
        } else {
            i += 1;
        }
        prev = at(i - 1);
    }
    Ok(())
}

/// The entities of one sentence in seqeval's strict mode as `(type, start, end)` with `end`
/// exclusive, exactly as `seqeval.scheme.Tokens(tokens, scheme, suffix).entities`. Errors on a
/// tag whose prefix the scheme does not allow.
///
/// ```
/// use oloproof_metrics::classify::seqeval::{strict_entities, Scheme};
///
/// // `I-PER` after `O` is no entity in strict IOB2 (the default mode would read one).
/// let seq = ["B-PER", "I-PER", "O", "I-PER", "B-LOC"];
/// assert_eq!(
///     strict_entities(&seq, Scheme::Iob2, false)?,
///     [("PER".into(), 0, 2), ("LOC".into(), 4, 5)]
/// );
/// # Ok::<(), oloproof_metrics::classify::ClassifyError>(())
/// ```
pub fn strict_entities<S: AsRef<str>>(
    tokens: &[S],
    scheme: Scheme,
    suffix: bool,
) -> Result<Vec<(String, usize, usize)>, ClassifyError> {
    let def = scheme_def(scheme);
    let parsed = tokens
        .iter()
        .map(|t| strict_token(t.as_ref(), suffix, def.allowed))
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = Vec::new();
    strict_chunks(&parsed, &def, |t, a, b| out.push((t.to_string(), a, b)))?;
    Ok(out)
}

/// Interns entity types and collects `(type id, position, position)` keys of one side.
struct Collector<'a> {
    ids: HashMap<&'a str, u32>,
    names: Vec<&'a str>,
}

impl<'a> Collector<'a> {
    fn id(&mut self, name: &'a str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.ids.insert(name, id);
        self.names.push(name);
        id
    }
}

fn check_lengths<S: AsRef<str>>(y_true: &[Vec<S>], y_pred: &[Vec<S>]) -> Result<(), ClassifyError> {
    if y_true.len() != y_pred.len() {
        return Err(ClassifyError::LengthMismatch {
            what: "sentences".into(),
            left: y_true.len(),
            right: y_pred.len(),
        });
    }
    for (k, (t, p)) in y_true.iter().zip(y_pred).enumerate() {
        if t.len() != p.len() {
            return Err(ClassifyError::LengthMismatch {
                what: format!("tokens of sentence {k}"),
                left: t.len(),
                right: p.len(),
            });
        }
    }
    Ok(())
}

fn side<'a, S: AsRef<str>>(
    sentences: &'a [Vec<S>],
    options: &Options,
    types: &mut Collector<'a>,
) -> Result<Vec<(u32, u64, u64)>, ClassifyError> {
    let mut keys: Vec<(u32, u64, u64)> = Vec::new();
    match options.mode {
        Mode::Default => {
            // seqeval flattens the sentences with an `O` after each.
            let flat = sentences
                .iter()
                .flat_map(|s| s.iter().map(AsRef::as_ref).chain(std::iter::once("O")));
            let mut names: Vec<(&'a str, usize, usize)> = Vec::new();
            lenient_chunks(flat, options.suffix, |t, a, b| names.push((t, a, b)))?;
            keys.extend(
                names
                    .into_iter()
                    .map(|(t, a, b)| (types.id(t), a as u64, b as u64)),
            );
        }
        Mode::Strict(scheme) => {
            let def = scheme_def(scheme);
            let mut parsed = Vec::new();
            for (k, sentence) in sentences.iter().enumerate() {
                parsed.clear();
                for t in sentence {
                    parsed.push(strict_token(t.as_ref(), options.suffix, def.allowed)?);
                }
                let mut found: Vec<(&'a str, usize, usize)> = Vec::new();
                strict_chunks(&parsed, &def, |t, a, b| found.push((t, a, b)))?;
                let base = (k as u64) << 32;
                keys.extend(
                    found
                        .into_iter()
                        .map(|(t, a, b)| (types.id(t), base | a as u64, b as u64)),
                );
            }
        }
    }
    keys.sort_unstable();
    keys.dedup();
    Ok(keys)
}

/// Precision, recall and F1 from counts, as seqeval's `_precision_recall_fscore_support`
/// (beta = 1).
fn prf(tp: u64, predicted: u64, actual: u64, zd: ZeroDivision) -> (f64, f64, f64) {
    let divide = |num: u64, den: u64| {
        if den == 0 {
            zd.value()
        } else {
            num as f64 / den as f64
        }
    };
    let p = divide(tp, predicted);
    let r = divide(tp, actual);
    let denom = p + r;
    let f = if denom == 0.0 {
        0.0
    } else {
        2.0 * p * r / denom
    };
    (p, r, f)
}

/// Scores `y_pred` against `y_true` (lists of sentences, each a list of tags) at entity level,
/// exactly as seqeval 1.2.2's `classification_report(y_true, y_pred, mode=…, scheme=…,
/// suffix=…, zero_division=…, output_dict=True)` and `accuracy_score`. Errors when the two
/// sides differ in shape (seqeval's `check_consistent_length`) or a tag cannot be read.
pub fn evaluate<S: AsRef<str>>(
    y_true: &[Vec<S>],
    y_pred: &[Vec<S>],
    options: &Options,
) -> Result<Report, ClassifyError> {
    check_lengths(y_true, y_pred)?;
    let mut types = Collector {
        ids: HashMap::new(),
        names: Vec::new(),
    };
    let truth = side(y_true, options, &mut types)?;
    let pred = side(y_pred, options, &mut types)?;
    let k = types.names.len();
    let mut tp = vec![0u64; k];
    let mut n_true = vec![0u64; k];
    let mut n_pred = vec![0u64; k];
    for key in &truth {
        n_true[key.0 as usize] += 1;
    }
    for key in &pred {
        n_pred[key.0 as usize] += 1;
    }
    let (mut a, mut b) = (0, 0);
    while a < truth.len() && b < pred.len() {
        match truth[a].cmp(&pred[b]) {
            std::cmp::Ordering::Less => a += 1,
            std::cmp::Ordering::Greater => b += 1,
            std::cmp::Ordering::Equal => {
                tp[truth[a].0 as usize] += 1;
                a += 1;
                b += 1;
            }
        }
    }
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_unstable_by(|&x, &y| types.names[x].cmp(types.names[y]));
    let zd = options.zero_division;
    let per_type: Vec<TypeScores> = order
        .iter()
        .map(|&t| {
            let (precision, recall, f1) = prf(tp[t], n_pred[t], n_true[t], zd);
            TypeScores {
                name: types.names[t].to_string(),
                scores: Scores {
                    precision,
                    recall,
                    f1,
                    support: n_true[t],
                },
                true_positives: tp[t],
                predicted: n_pred[t],
            }
        })
        .collect();
    let (sum_tp, sum_pred, sum_true) = (
        tp.iter().sum::<u64>(),
        n_pred.iter().sum::<u64>(),
        n_true.iter().sum::<u64>(),
    );
    let (precision, recall, f1) = prf(sum_tp, sum_pred, sum_true, zd);
    let micro = Scores {
        precision,
        recall,
        f1,
        support: sum_true,
    };
    let macro_avg = (k > 0).then(|| {
        let mean =
            |f: fn(&Scores) -> f64| per_type.iter().map(|t| f(&t.scores)).sum::<f64>() / k as f64;
        Scores {
            precision: mean(|s| s.precision),
            recall: mean(|s| s.recall),
            f1: mean(|s| s.f1),
            support: sum_true,
        }
    });
    let weighted = if sum_true == 0 {
        let z = zd.value();
        let pf = if sum_pred == 0 { z } else { 0.0 };
        Scores {
            precision: pf,
            recall: z,
            f1: pf,
            support: 0,
        }
    } else {
        let avg = |f: fn(&Scores) -> f64| {
            per_type
                .iter()
                .map(|t| f(&t.scores) * t.scores.support as f64)
                .sum::<f64>()
                / sum_true as f64
        };
        Scores {
            precision: avg(|s| s.precision),
            recall: avg(|s| s.recall),
            f1: avg(|s| s.f1),
            support: sum_true,
        }
    };
    let (mut tokens, mut equal) = (0u64, 0u64);
    for (t, p) in y_true.iter().zip(y_pred) {
        tokens += t.len() as u64;
        equal += t
            .iter()
            .zip(p)
            .filter(|(a, b)| a.as_ref() == b.as_ref())
            .count() as u64;
    }
    Ok(Report {
        per_type,
        micro,
        macro_avg,
        weighted,
        accuracy: (tokens > 0).then(|| equal as f64 / tokens as f64),
    })
}

/// Per-sentence entity counts `[true positives, predicted, true]` under the same reading as
/// [`evaluate`], each entity counted in the sentence of its first token (for resampling
/// sentences, e.g. a bootstrap interval of the micro F1). The sums over sentences are the micro
/// counts of [`evaluate`].
pub fn sentence_counts<S: AsRef<str>>(
    y_true: &[Vec<S>],
    y_pred: &[Vec<S>],
    options: &Options,
) -> Result<Vec<[u64; 3]>, ClassifyError> {
    check_lengths(y_true, y_pred)?;
    let mut types = Collector {
        ids: HashMap::new(),
        names: Vec::new(),
    };
    let truth = side(y_true, options, &mut types)?;
    let pred = side(y_pred, options, &mut types)?;
    // Default mode positions are offsets in the concatenation with one `O` after each sentence.
    let mut starts = Vec::with_capacity(y_true.len());
    let mut offset = 0u64;
    for s in y_true {
        starts.push(offset);
        offset += s.len() as u64 + 1;
    }
    let sentence = |key: &(u32, u64, u64)| -> usize {
        match options.mode {
            Mode::Default => starts.partition_point(|&s| s <= key.1).saturating_sub(1),
            Mode::Strict(_) => (key.1 >> 32) as usize,
        }
    };
    let mut counts = vec![[0u64; 3]; y_true.len()];
    for key in &truth {
        counts[sentence(key)][2] += 1;
    }
    for key in &pred {
        counts[sentence(key)][1] += 1;
    }
    let (mut a, mut b) = (0, 0);
    while a < truth.len() && b < pred.len() {
        match truth[a].cmp(&pred[b]) {
            std::cmp::Ordering::Less => a += 1,
            std::cmp::Ordering::Greater => b += 1,
            std::cmp::Ordering::Equal => {
                counts[sentence(&truth[a])][0] += 1;
                a += 1;
                b += 1;
            }
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&[&'static str]]) -> Vec<Vec<&'static str>> {
        v.iter().map(|x| x.to_vec()).collect()
    }

    #[test]
    fn seqeval_docstring_examples() {
        let t = s(&[
            &["O", "O", "B-MISC", "I-MISC", "B-MISC", "O", "O"],
            &["B-PER", "I-PER", "O"],
        ]);
        let p = s(&[
            &["O", "O", "B-MISC", "I-MISC", "B-MISC", "I-MISC", "O"],
            &["B-PER", "I-PER", "O"],
        ]);
        let r = evaluate(&t, &p, &Options::default()).unwrap();
        assert_eq!(r.micro.f1, 0.6666666666666666);
        assert_eq!(r.macro_avg.unwrap().f1, 0.75);
        assert_eq!(r.weighted.f1, 0.6666666666666666);
        assert_eq!(r.per_type[0].scores.f1, 0.5);
        assert_eq!(r.per_type[1].scores.f1, 1.0);
        let t = s(&[
            &["O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"],
            &["B-PER", "I-PER", "O"],
        ]);
        let p = s(&[
            &["O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"],
            &["B-PER", "I-PER", "O"],
        ]);
        let r = evaluate(&t, &p, &Options::default()).unwrap();
        assert_eq!(r.accuracy, Some(0.8));
        assert_eq!(r.micro.support, 2);
        let counts = sentence_counts(&t, &p, &Options::default()).unwrap();
        assert_eq!(counts, [[0, 1, 1], [1, 1, 1]]);
    }

    #[test]
    fn strict_differs_from_default_on_ill_formed_input() {
        let t = s(&[&["B-PER", "I-PER", "O"]]);
        let p = s(&[&["I-PER", "I-PER", "O"]]);
        let lenient = evaluate(&t, &p, &Options::default()).unwrap();
        assert_eq!(lenient.micro.f1, 1.0);
        let strict = Options {
            mode: Mode::Strict(Scheme::Iob2),
            ..Options::default()
        };
        let r = evaluate(&t, &p, &strict).unwrap();
        assert_eq!(r.micro.f1, 0.0);
        assert_eq!(r.micro.precision, 0.0);
    }

    #[test]
    fn strict_rejects_foreign_prefixes_and_ragged_input() {
        let strict = Options {
            mode: Mode::Strict(Scheme::Iob2),
            ..Options::default()
        };
        let t = s(&[&["B-PER", "E-PER"]]);
        assert!(matches!(
            evaluate(&t, &t, &strict),
            Err(ClassifyError::BadTag { .. })
        ));
        let p = s(&[&["B-PER"]]);
        assert!(matches!(
            evaluate(&t, &p, &Options::default()),
            Err(ClassifyError::LengthMismatch { .. })
        ));
    }

    #[test]
    fn no_entities_follow_seqeval_zero_division() {
        let t = s(&[&["O", "O"]]);
        let r = evaluate(&t, &t, &Options::default()).unwrap();
        assert_eq!(r.macro_avg, None);
        assert_eq!(r.micro.f1, 0.0);
        let one = Options {
            zero_division: ZeroDivision::One,
            ..Options::default()
        };
        let r = evaluate(&t, &t, &one).unwrap();
        assert_eq!((r.micro.precision, r.micro.f1), (1.0, 1.0));
        assert_eq!((r.weighted.precision, r.weighted.recall), (1.0, 1.0));
    }

    #[test]
    fn bilou_and_suffix() {
        let seq = ["U-PER", "B-LOC", "I-LOC", "L-LOC", "O"];
        assert_eq!(
            strict_entities(&seq, Scheme::Bilou, false).unwrap(),
            [("PER".into(), 0, 1), ("LOC".into(), 1, 4)]
        );
        let seq = ["PER-B", "PER-I", "O"];
        assert_eq!(get_entities(&seq, true).unwrap(), [("PER".into(), 0, 1)]);
    }
}
