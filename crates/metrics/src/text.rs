//! Text-answer metrics: SQuAD answer normalisation, exact match and token F1, and
//! case-insensitive containment, and the length of a text in characters and words.
//!
//! [`normalize_answer`], [`exact_match`] and [`token_f1`] follow the official SQuAD evaluation
//! scripts (P. Rajpurkar et al., "SQuAD: 100,000+ questions for machine comprehension of text",
//! EMNLP 2016; `evaluate-v2.0.py` for the empty-answer rule), and are compared with a Python
//! transcription of them on random Unicode strings in `tests/text_reference.rs`.
//!
//! ```
//! use oloproof_metrics::text::{contains, exact_match, normalize_answer, token_f1};
//!
//! assert_eq!(normalize_answer("The  Eiffel Tower!"), "eiffel tower");
//! assert!(exact_match("the Eiffel tower", "Eiffel Tower."));
//! assert_eq!(token_f1("Eiffel Tower in Paris", "the Eiffel Tower"), 2.0 / 3.0);
//! assert!(contains("Refunds are issued within\n14 days.", "within 14 DAYS"));
//! ```

/// Python's `string.punctuation`: the 32 ASCII punctuation characters SQuAD removes.
const PUNCTUATION: &str = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

/// Normalise an answer exactly as the official SQuAD v1.1 / v2.0 evaluation scripts do:
///
/// 1. lowercase (full Unicode lowercasing, Python's `str.lower`);
/// 2. remove every character of Python's `string.punctuation` (ASCII only: `«`, `—` or `…`
///    stay);
/// 3. replace the articles `a`, `an`, `the` by a space where they are whole words (the regex
///    `\b(a|an|the)\b`, i.e. a maximal run of word characters equal to an article);
/// 4. split on whitespace and join with single spaces (Python's `" ".join(text.split())`).
///
/// Fidelity notes. Python's whitespace (`str.isspace`) is Unicode `White_Space` plus the
/// separators U+001C–U+001F, and both are honoured here. Python's regex word characters are
/// `str.isalnum()` plus `_`; here they are [`char::is_alphanumeric`] plus `_`, which differs only
/// for the few combining marks and symbols with the Unicode `Other_Alphabetic` property (such as
/// Indic vowel signs or `Ⓐ`) when they touch an article, e.g. `"a\u{93e}"`.
///
/// ```
/// use oloproof_metrics::text::normalize_answer;
///
/// assert_eq!(normalize_answer("An apple, a day..."), "apple day");
/// assert_eq!(normalize_answer("theatre"), "theatre");
/// assert_eq!(normalize_answer("  "), "");
/// ```
pub fn normalize_answer(s: &str) -> String {
    let lowered = s.to_lowercase();
    let without_punctuation: String = lowered
        .chars()
        .filter(|c| !PUNCTUATION.contains(*c))
        .collect();
    let without_articles = remove_articles(&without_punctuation);
    let mut out = String::with_capacity(without_articles.len());
    for token in python_split(&without_articles) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(token);
    }
    out
}

/// SQuAD exact match: whether the normalised prediction equals the normalised reference.
///
/// Two answers that both normalise to the empty string match (as in the official script).
///
/// ```
/// use oloproof_metrics::text::exact_match;
///
/// assert!(exact_match("The Beatles", "beatles"));
/// assert!(!exact_match("Beatles, The", "The Rolling Stones"));
/// ```
pub fn exact_match(prediction: &str, reference: &str) -> bool {
    normalize_answer(prediction) == normalize_answer(reference)
}

/// SQuAD token F1 between a prediction and a reference answer.
///
/// Both are normalised with [`normalize_answer`] and split on spaces into token multisets `P`
/// and `G`; with `c = |P ∩ G|` (multiset intersection, so a repeated token counts as often as it
/// occurs in both):
///
/// ```text
/// precision = c / |P|,   recall = c / |G|,   F1 = 2 · precision · recall / (precision + recall)
/// ```
///
/// and `F1 = 0` when `c = 0`. **Empty answers** (no tokens after normalisation, e.g. `""`, `"the"`
/// or `"?!"`) follow SQuAD 2.0's rule: F1 is 1 if both are empty and 0 if only one is. (SQuAD
/// v1.1's script divides by zero there.) The arithmetic is done in the same order as the Python
/// script, so results agree to the last bit. The result is in `[0, 1]` and never NaN.
///
/// ```
/// use oloproof_metrics::text::token_f1;
///
/// assert_eq!(token_f1("a cat sat", "the cat sat down"), 0.8);
/// assert_eq!(token_f1("", "the"), 1.0); // both empty after normalisation
/// assert_eq!(token_f1("cat", ""), 0.0);
/// ```
pub fn token_f1(prediction: &str, reference: &str) -> f64 {
    let prediction = normalize_answer(prediction);
    let reference = normalize_answer(reference);
    let mut predicted: Vec<&str> = tokens(&prediction).collect();
    let mut gold: Vec<&str> = tokens(&reference).collect();
    if predicted.is_empty() || gold.is_empty() {
        return f64::from(u8::from(predicted == gold));
    }
    let same = multiset_intersection(&mut predicted, &mut gold);
    if same == 0 {
        return 0.0;
    }
    let precision = same as f64 / predicted.len() as f64;
    let recall = same as f64 / gold.len() as f64;
    (2.0 * precision * recall) / (precision + recall)
}

/// Whether `needle` occurs in `haystack`, ignoring case and whitespace differences.
///
/// Both strings are folded the same way: full Unicode lowercasing ([`str::to_lowercase`]), then
/// every run of whitespace ([`char::is_whitespace`], so also non-breaking and ideographic spaces,
/// tabs and newlines) becomes one space, with leading and trailing whitespace removed. The test
/// is then plain substring containment, so it is not word-bounded (`"cat"` is contained in
/// `"concatenate"`) and punctuation is significant. An empty (or all-whitespace) needle is
/// contained in every haystack, as with [`str::contains`]; an evaluator should treat a case
/// without an expected answer as excluded before calling this.
///
/// ```
/// use oloproof_metrics::text::contains;
///
/// assert!(contains("Le délai est de 14\u{a0}jours.", "DE 14 JOURS"));
/// assert!(!contains("fourteen days", "14 days"));
/// ```
pub fn contains(haystack: &str, needle: &str) -> bool {
    fold(haystack).contains(&fold(needle))
}

/// Lowercase and collapse whitespace runs into single spaces, trimmed.
fn fold(s: &str) -> String {
    let lowered = s.to_lowercase();
    let mut out = String::with_capacity(lowered.len());
    for word in lowered.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Whitespace as Python's `str.split()` sees it: Unicode `White_Space` plus U+001C–U+001F.
pub(crate) fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.split()` with no argument: non-empty runs between whitespace.
pub(crate) fn python_split(s: &str) -> impl Iterator<Item = &str> {
    s.split(is_python_space).filter(|t| !t.is_empty())
}

/// The tokens of an already normalised answer (single spaces, no leading or trailing ones).
fn tokens(normalized: &str) -> impl Iterator<Item = &str> {
    normalized.split(' ').filter(|t| !t.is_empty())
}

/// A regex word character: alphanumeric or underscore (see [`normalize_answer`]).
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `re.sub(r"\b(a|an|the)\b", " ", text)`: every maximal run of word characters that is an
/// article is replaced by one space.
fn remove_articles(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(is_word_char) {
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest.find(|c| !is_word_char(c)).unwrap_or(rest.len());
        let word = &rest[..end];
        if matches!(word, "a" | "an" | "the") {
            out.push(' ');
        } else {
            out.push_str(word);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The size of the multiset intersection of two token lists (sorts both in place).
fn multiset_intersection(left: &mut [&str], right: &mut [&str]) -> usize {
    left.sort_unstable();
    right.sort_unstable();
    let (mut i, mut j, mut same) = (0, 0, 0);
    while i < left.len() && j < right.len() {
        match left[i].cmp(right[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                same += 1;
                i += 1;
                j += 1;
            }
        }
    }
    same
}

/// The number of characters of `text`: Unicode scalar values (`é` is one, whether written
/// precomposed or not is up to the text).
pub fn char_count(text: &str) -> u64 {
    text.chars().count() as u64
}

/// The number of words of `text`: Unicode word segmentation (UAX #29, the `unicode-segmentation`
/// crate's `unicode_words`): `Don't`, `14.5` and `it's` are one word each, punctuation and
/// spaces are none, and each ideograph is a word (`東京へ` is three).
///
/// ```
/// use oloproof_metrics::text::word_count;
///
/// assert_eq!(word_count("Don't panic: it's 14.5 days, OK?"), 6);
/// assert_eq!(word_count("  ...  "), 0);
/// ```
pub fn word_count(text: &str) -> u64 {
    use unicode_segmentation::UnicodeSegmentation;
    text.unicode_words().count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation_steps() {
        assert_eq!(normalize_answer("The Cat"), "cat");
        assert_eq!(normalize_answer("a"), "");
        assert_eq!(normalize_answer("A, an, THE."), "");
        // Articles only as whole words.
        assert_eq!(
            normalize_answer("another theme, anthem"),
            "another theme anthem"
        );
        // Punctuation removed before articles: "the-cat" → "thecat".
        assert_eq!(normalize_answer("the-cat"), "thecat");
        assert_eq!(normalize_answer("the cat's"), "cats");
        // Underscore is punctuation.
        assert_eq!(normalize_answer("a_b"), "ab");
        // Non-ASCII punctuation stays (and is a word boundary).
        assert_eq!(normalize_answer("«the» — end…"), "« » — end…");
        // Unicode lowercasing, including final sigma and İ.
        assert_eq!(normalize_answer("ΟΔΥΣΣΕΥΣ"), "οδυσσευς");
        assert_eq!(normalize_answer("İ"), "i\u{307}");
        // Unicode and Python-only whitespace.
        assert_eq!(normalize_answer("x\u{a0}\u{3000}y\u{1c}z\tw\n"), "x y z w");
        // An article after a non-ASCII letter is still a separate word.
        assert_eq!(normalize_answer("é the é"), "é é");
        assert_eq!(normalize_answer("éthe"), "éthe");
    }

    #[test]
    fn exact_match_cases() {
        assert!(exact_match("Paris", "paris."));
        assert!(exact_match("", "the"));
        assert!(!exact_match("Paris, France", "Paris"));
    }

    #[test]
    fn f1_cases() {
        assert_eq!(token_f1("Paris", "Paris"), 1.0);
        assert_eq!(token_f1("Paris France", "Paris"), 2.0 / 3.0);
        assert_eq!(token_f1("London", "Paris"), 0.0);
        // Multisets: "the" removed; "cat cat" vs "cat": c = 1, p = 1/2, r = 1.
        assert_eq!(token_f1("cat cat", "the cat"), 2.0 / 3.0);
        assert_eq!(token_f1("", ""), 1.0);
        assert_eq!(token_f1("...", "an"), 1.0);
        assert_eq!(token_f1("", "x"), 0.0);
        assert_eq!(token_f1("x", "!"), 0.0);
        // Symmetric.
        assert_eq!(token_f1("a b c d", "b e"), token_f1("b e", "a b c d"));
    }

    #[test]
    fn contains_cases() {
        assert!(contains("Refunds within 14 days.", "14 DAYS"));
        assert!(contains("  Multi\n\tline   text ", "multi line TEXT"));
        assert!(contains("STRASSE", "strasse"));
        assert!(contains("anything", ""));
        assert!(contains("anything", " \n"));
        assert!(!contains("14days", "14 days"));
        assert!(!contains("", "x"));
        assert!(contains("ΟΔΥΣΣΕΥΣ", "οδυσσ"));
    }

    #[test]
    fn intersection_counts_multiplicity() {
        let mut a = vec!["x", "y", "x", "z"];
        let mut b = vec!["x", "x", "x", "y"];
        assert_eq!(multiset_intersection(&mut a, &mut b), 3);
        assert_eq!(multiset_intersection(&mut [], &mut ["x"]), 0);
    }
}
