//! What the generator did with its context: context utilisation (seed 000, "utilisation du
//! contexte"), nugget recall as TREC 2024 RAG's AutoNuggetizer scores it, and entity grounding
//! (seed 000, "contrôle d'ancrage des entités").

use std::collections::BTreeSet;

/// Context utilisation of one answer: `|cited ∩ retrieved| / |retrieved|` — of the chunks placed
/// in the context, the share the answer cited or used (seed 000, Part 4). Citations of chunks
/// that were not in the context are not counted here (see [`cited_outside`]). `None` when
/// nothing was retrieved.
///
/// ```
/// use std::collections::BTreeSet;
/// use oloproof_metrics::rag::context::context_utilisation;
///
/// let retrieved: BTreeSet<&str> = ["c1", "c2", "c3", "c4"].into();
/// let cited: BTreeSet<&str> = ["c2", "c4"].into();
/// assert_eq!(context_utilisation(&retrieved, &cited), Some(0.5));
/// ```
pub fn context_utilisation<T: Ord>(retrieved: &BTreeSet<T>, cited: &BTreeSet<T>) -> Option<f64> {
    if retrieved.is_empty() {
        return None;
    }
    Some(cited.intersection(retrieved).count() as f64 / retrieved.len() as f64)
}

/// Cited chunks that were not in the retrieved context (a citation that cannot be checked).
pub fn cited_outside<'a, T: Ord>(retrieved: &BTreeSet<T>, cited: &'a BTreeSet<T>) -> Vec<&'a T> {
    cited.iter().filter(|c| !retrieved.contains(*c)).collect()
}

/// A nugget's importance, as labelled by the TREC 2024 RAG track.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Importance {
    /// Must appear in a good answer.
    Vital,
    /// Worth having, not essential.
    Okay,
}

/// How far an answer supports a nugget (the three-grade assignment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assignment {
    /// `support`: fully supported (credit 1).
    Support,
    /// `partial_support`: partly supported (credit 0.5, or 0 in the strict scores).
    PartialSupport,
    /// `not_support`: absent or contradicted (credit 0).
    NotSupport,
}

impl Importance {
    /// Parses `"vital"` or `"okay"`, the labels of nuggetizer's files.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "vital" => Some(Importance::Vital),
            "okay" => Some(Importance::Okay),
            _ => None,
        }
    }
}

impl Assignment {
    /// Parses `"support"`, `"partial_support"` or `"not_support"`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "support" => Some(Assignment::Support),
            "partial_support" => Some(Assignment::PartialSupport),
            "not_support" => Some(Assignment::NotSupport),
            _ => None,
        }
    }
}

/// The four per-answer nugget scores of the TREC 2024 RAG track (Pradeep et al., "Initial
/// Nugget Evaluation Results for the TREC 2024 RAG Track with the AutoNuggetizer Framework",
/// 2024), as castorini/nuggetizer's `calculate_nugget_scores` computes them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NuggetScores {
    /// `#{vital, support} / #vital`.
    pub strict_vital: Option<f64>,
    /// `#{support} / #nuggets`.
    pub strict_all: Option<f64>,
    /// `(#{vital, support} + 0.5·#{vital, partial_support}) / #vital`.
    pub vital: Option<f64>,
    /// `(#{support} + 0.5·#{partial_support}) / #nuggets`.
    pub all: Option<f64>,
}

/// Scores one answer's nugget assignments (see [`NuggetScores`]). The run-level score is the
/// mean of the per-answer scores (nuggetizer's `calculate_global_metrics`).
///
/// A score with no nugget in its denominator (no vital nugget, or no nugget at all) is `None`;
/// nuggetizer reports 0.0 there, which would count a topic without vital nuggets as a failure.
///
/// ```
/// use oloproof_metrics::rag::context::{nugget_scores, Assignment::*, Importance::*};
///
/// let s = nugget_scores(&[(Vital, Support), (Vital, PartialSupport), (Okay, NotSupport)]);
/// assert_eq!(s.strict_vital, Some(0.5));
/// assert_eq!(s.vital, Some(0.75));
/// assert_eq!(s.all, Some(0.5));
/// ```
pub fn nugget_scores(nuggets: &[(Importance, Assignment)]) -> NuggetScores {
    let count = |vital_only: bool, a: Assignment| {
        nuggets
            .iter()
            .filter(|(i, x)| (!vital_only || *i == Importance::Vital) && *x == a)
            .count()
    };
    let n_vital = nuggets
        .iter()
        .filter(|(i, _)| *i == Importance::Vital)
        .count();
    let n_all = nuggets.len();
    let strict_vital = count(true, Assignment::Support);
    let strict_all = count(false, Assignment::Support);
    // nuggetizer adds 0.5 per partial nugget to the integer count; halves are exact in binary.
    let vital = strict_vital as f64 + 0.5 * count(true, Assignment::PartialSupport) as f64;
    let all = strict_all as f64 + 0.5 * count(false, Assignment::PartialSupport) as f64;
    let div = |num: f64, den: usize| (den > 0).then(|| num / den as f64);
    NuggetScores {
        strict_vital: div(strict_vital as f64, n_vital),
        strict_all: div(strict_all as f64, n_all),
        vital: div(vital, n_vital),
        all: div(all, n_all),
    }
}

/// A named entity or number found in a text by [`extract_entities`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Entity {
    /// A capitalised span, as its words.
    Name(Vec<String>),
    /// A number, with thousands separators (`,`) removed.
    Number(String),
}

impl Entity {
    /// The entity as text (`"Phobos"`, `"New York"`, `"2012"`).
    pub fn text(&self) -> String {
        match self {
            Entity::Name(words) => words.join(" "),
            Entity::Number(n) => n.clone(),
        }
    }
}

/// Sentence-initial words that are capitalised only because they start the sentence.
const SENTENCE_STARTERS: &[&str] = &[
    "A", "An", "And", "As", "At", "But", "By", "For", "From", "He", "Her", "His", "How", "I", "If",
    "In", "It", "Its", "My", "No", "Not", "Of", "On", "Or", "Our", "She", "So", "That", "The",
    "Their", "There", "These", "They", "This", "Those", "To", "We", "What", "When", "Where",
    "Which", "While", "Who", "Why", "With", "Yes", "You", "Your",
];

/// A token of the entity extractor: its text, whether it starts a sentence, and whether it is
/// separated from the previous token by whitespace only.
struct Token<'a> {
    text: &'a str,
    sentence_start: bool,
    joined: bool,
}

/// Splits `text` into word tokens: maximal runs of alphanumeric characters, where a `.` or `,`
/// between two digits stays inside the token (`3.14`, `1,000`).
fn tokens(text: &str) -> Vec<Token<'_>> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut sentence_start = true;
    let mut joined = false;
    while i < chars.len() {
        let (start, c) = chars[i];
        if !c.is_alphanumeric() {
            if matches!(c, '.' | '!' | '?') {
                sentence_start = true;
            }
            joined = joined && c.is_whitespace();
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < chars.len() {
            let c = chars[j].1;
            let digit_sep = matches!(c, '.' | ',')
                && chars[j - 1].1.is_ascii_digit()
                && chars.get(j + 1).is_some_and(|(_, n)| n.is_ascii_digit());
            if c.is_alphanumeric() || digit_sep {
                j += 1;
            } else {
                break;
            }
        }
        let end = chars.get(j).map_or(text.len(), |(b, _)| *b);
        out.push(Token {
            text: &text[start..end],
            sentence_start,
            joined,
        });
        sentence_start = false;
        joined = true;
        i = j;
    }
    out
}

/// Extracts the named entities and numbers of `text`, without a model (the seed's "regex +
/// exact match" check):
///
/// * a **number** is a token containing a digit (`2012`, `3.14`, `1,000`, `5G`); thousands
///   separators `,` are removed, so `1,000` and `1000` are the same number;
/// * a **name** is a maximal run of tokens starting with an uppercase letter and separated by
///   whitespace only (`New York`, `NASA`); a sentence's first word is dropped from its run when
///   it is a common function word (`The`, `In`, `This`, …), so "The Curiosity rover" yields
///   `Curiosity` and "In 2012" yields only the number.
///
/// Tokens are maximal runs of alphanumeric characters (a `.` or `,` between digits stays inside).
/// Entities are returned once each, sorted.
pub fn extract_entities(text: &str) -> Vec<Entity> {
    let toks = tokens(text);
    let mut found = BTreeSet::new();
    let mut run: Vec<String> = Vec::new();
    let flush = |run: &mut Vec<String>, found: &mut BTreeSet<Entity>| {
        if !run.is_empty() {
            found.insert(Entity::Name(std::mem::take(run)));
        }
    };
    for t in &toks {
        if t.text.chars().any(|c| c.is_ascii_digit() || c.is_numeric()) {
            flush(&mut run, &mut found);
            found.insert(Entity::Number(t.text.replace(',', "")));
            continue;
        }
        let capitalised = t.text.chars().next().is_some_and(char::is_uppercase);
        if !capitalised || !t.joined {
            flush(&mut run, &mut found);
        }
        if capitalised && !(t.sentence_start && SENTENCE_STARTERS.contains(&t.text)) {
            run.push(t.text.to_string());
        }
    }
    flush(&mut run, &mut found);
    found.into_iter().collect()
}

/// Entity grounding of one answer against its context.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Grounding {
    /// Entities of the answer found in the context.
    pub grounded: Vec<Entity>,
    /// Entities of the answer not found in the context (candidate hallucinations).
    pub ungrounded: Vec<Entity>,
}

impl Grounding {
    /// `grounded / (grounded + ungrounded)`; `None` when the answer has no entity.
    pub fn rate(&self) -> Option<f64> {
        let n = self.grounded.len() + self.ungrounded.len();
        (n > 0).then(|| self.grounded.len() as f64 / n as f64)
    }
}

/// Checks every entity of `answer` ([`extract_entities`]) against `context`: a name is grounded
/// when its words appear consecutively among the context's tokens (case-insensitive, so
/// "Phobos" matches "PHOBOS"); a number when the same number (thousands separators removed)
/// is a token of the context.
///
/// ```
/// use oloproof_metrics::rag::context::grounding;
///
/// let context = "Mars has two moons, Phobos and Deimos. NASA's Curiosity rover landed in 2012.";
/// let g = grounding("Phobos orbits Mars. Curiosity landed in 2013.", context);
/// assert_eq!(g.rate(), Some(0.75)); // 2013 is not in the context
/// ```
pub fn grounding(answer: &str, context: &str) -> Grounding {
    let ctx: Vec<String> = tokens(context)
        .iter()
        .map(|t| t.text.to_lowercase())
        .collect();
    let numbers: BTreeSet<String> = tokens(context)
        .iter()
        .filter(|t| t.text.chars().any(|c| c.is_ascii_digit() || c.is_numeric()))
        .map(|t| t.text.replace(',', ""))
        .collect();
    let mut g = Grounding::default();
    for e in extract_entities(answer) {
        let ok = match &e {
            Entity::Number(n) => numbers.contains(n),
            Entity::Name(words) => {
                let words: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
                ctx.windows(words.len()).any(|w| w == words.as_slice())
            }
        };
        if ok {
            g.grounded.push(e);
        } else {
            g.ungrounded.push(e);
        }
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use Assignment::*;
    use Importance::*;

    #[test]
    fn utilisation_and_outside_citations() {
        let r: BTreeSet<&str> = ["a", "b", "c"].into();
        let c: BTreeSet<&str> = ["a", "z"].into();
        assert_eq!(context_utilisation(&r, &c), Some(1.0 / 3.0));
        assert_eq!(cited_outside(&r, &c), vec![&"z"]);
        assert_eq!(context_utilisation(&BTreeSet::<&str>::new(), &c), None);
    }

    #[test]
    fn nugget_scores_match_nuggetizer_definitions() {
        let s = nugget_scores(&[
            (Vital, Support),
            (Vital, PartialSupport),
            (Vital, NotSupport),
            (Okay, Support),
            (Okay, PartialSupport),
        ]);
        assert_eq!(s.strict_vital, Some(1.0 / 3.0));
        assert_eq!(s.vital, Some(1.5 / 3.0));
        assert_eq!(s.strict_all, Some(2.0 / 5.0));
        assert_eq!(s.all, Some(3.0 / 5.0));
        let okay_only = nugget_scores(&[(Okay, Support)]);
        assert_eq!(okay_only.vital, None);
        assert_eq!(okay_only.all, Some(1.0));
        assert_eq!(nugget_scores(&[]).all, None);
    }

    fn names(text: &str) -> Vec<String> {
        extract_entities(text).iter().map(Entity::text).collect()
    }

    #[test]
    fn entity_extraction_heuristic() {
        assert_eq!(
            names("The Curiosity rover landed on Mars in 2012."),
            vec!["Curiosity", "Mars", "2012"]
        );
        assert_eq!(
            names("In New York, prices rose 3.5% to 1,200 dollars."),
            vec!["New York", "1200", "3.5"]
        );
        assert_eq!(names("NASA's rover"), vec!["NASA"]);
        assert_eq!(names("no entities here"), Vec::<String>::new());
        assert_eq!(names("Paris. London"), vec!["London", "Paris"]);
    }

    #[test]
    fn seed_mars_answer_is_grounded_except_nothing() {
        // Seed 000, Part 6: the answer's entities all appear in the context.
        let context = "Mars has two moons, Phobos and Deimos. NASA's Curiosity rover \
                       landed on Mars in 2012.";
        let answer = "Mars has two moons. Phobos and Deimos orbit Mars. Mars has a thick \
                      atmosphere. Curiosity landed in 2012.";
        let g = grounding(answer, context);
        let grounded: Vec<String> = g.grounded.iter().map(Entity::text).collect();
        assert_eq!(
            grounded,
            vec!["Curiosity", "Deimos", "Mars", "Phobos", "2012"]
        );
        assert_eq!(g.rate(), Some(1.0));
        let g = grounding("Elon Musk landed on Mars in 2030.", context);
        let ungrounded: Vec<String> = g.ungrounded.iter().map(Entity::text).collect();
        assert_eq!(ungrounded, vec!["Elon Musk", "2030"]);
        assert_eq!(grounding("nothing to check", context).rate(), None);
    }
}
