//! Rubrex (seed 004): recognising an abstention or a request for clarification in an answer's
//! text, for systems that do not declare their `behavior`.
//!
//! The detector is deliberately conservative: a pattern is a phrase matched case-insensitively
//! on word boundaries after the text is normalised (lower case, typographic apostrophes made
//! straight, runs of whitespace made one space). The defaults are first-person refusals and
//! explicit requests to clarify, which an ordinary factual answer does not contain; an answer
//! that merely says "no" is not taken for an abstention. Configure other phrases per evaluator
//! (`abstain_patterns`, `clarify_patterns`), or have the system declare `behavior`.
//!
//! ```
//! use oloproof_metrics::rag::rubrex::{find_phrase, DEFAULT_ABSTAIN_PATTERNS};
//!
//! let hit = find_phrase("I don’t know: no document lists a phone number.", DEFAULT_ABSTAIN_PATTERNS);
//! assert_eq!(hit, Some("i don't know"));
//! assert_eq!(find_phrase("Orders ship in 3 to 5 business days.", DEFAULT_ABSTAIN_PATTERNS), None);
//! ```

/// Default abstention phrases (matched after normalisation).
pub const DEFAULT_ABSTAIN_PATTERNS: &[&str] = &[
    "i don't know",
    "i do not know",
    "i cannot answer",
    "i can't answer",
    "i am unable to answer",
    "i'm unable to answer",
    "i'm not able to answer",
    "i am not able to answer",
    "i could not find",
    "i couldn't find",
    "i can't find",
    "i cannot find",
    "the documents do not say",
    "the provided documents do not",
    "the context does not contain",
    "not enough information to answer",
];

/// Default clarification phrases (matched after normalisation).
pub const DEFAULT_CLARIFY_PATTERNS: &[&str] = &[
    "could you clarify",
    "can you clarify",
    "could you specify",
    "can you specify",
    "please clarify",
    "please specify",
    "which one do you mean",
    "could you tell me which",
];

/// Lower case, straight apostrophes and single spaces.
pub fn normalise(text: &str) -> String {
    let mapped: String = text
        .chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' | '\u{02bc}' | '`' => '\'',
            other => other,
        })
        .flat_map(char::to_lowercase)
        .collect();
    mapped.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first pattern found in `text` on word boundaries (both normalised), if any.
pub fn find_phrase<'a, S: AsRef<str>>(text: &str, patterns: &'a [S]) -> Option<&'a str> {
    let hay = normalise(text);
    patterns.iter().map(AsRef::as_ref).find(|p| {
        let needle = normalise(p);
        !needle.is_empty()
            && hay.match_indices(&needle).any(|(at, m)| {
                let before = hay[..at].chars().next_back();
                let after = hay[at + m.len()..].chars().next();
                !before.is_some_and(char::is_alphanumeric)
                    && !after.is_some_and(char::is_alphanumeric)
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phrases_match_on_word_boundaries_after_normalisation() {
        assert_eq!(
            find_phrase("Sorry —  I  DON'T know.", DEFAULT_ABSTAIN_PATTERNS),
            Some("i don't know")
        );
        assert_eq!(find_phrase("Unknownable", &["unknown"]), None);
        assert_eq!(find_phrase("It is unknown.", &["unknown"]), Some("unknown"));
        assert_eq!(find_phrase("anything", &[""]), None);
        assert_eq!(
            find_phrase("Could you clarify which plan?", DEFAULT_CLARIFY_PATTERNS),
            Some("could you clarify")
        );
    }

    #[test]
    fn factual_answers_are_not_refusals() {
        for answer in [
            "Refunds are available within 14 days of purchase.",
            "No, you keep access until the end of the paid period.",
            "Go to Settings > Billing and choose Cancel.",
        ] {
            assert_eq!(
                find_phrase(answer, DEFAULT_ABSTAIN_PATTERNS),
                None,
                "{answer}"
            );
            assert_eq!(
                find_phrase(answer, DEFAULT_CLARIFY_PATTERNS),
                None,
                "{answer}"
            );
        }
    }
}
