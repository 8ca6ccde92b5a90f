//! A sentence splitter for answers: rule-based, deterministic, linear in the text.
//!
//! A sentence ends at `.`, `!` or `?` (with any closing quotes or brackets after it) followed by
//! whitespace and a character that is not a lowercase letter, or at a blank line or a line that
//! starts a list item. It does not end inside a number (`3.5`, `1,000.25`), after a known
//! abbreviation (`Dr.`, `e.g.`, `U.S.`, `approx.`, months, …) or a single-letter initial
//! (`J. Smith`). Citation markers written after the full stop (`… refund. [2] Next`) stay with
//! the sentence they follow. Empty pieces are dropped; each sentence is trimmed.
//!
//! It is not NLTK's Punkt (which learns abbreviations from a corpus): on answers written by a
//! model, the rules above are what matter, and they are stated.
//!
//! ```
//! use oloproof_metrics::rag::sentences::split_sentences;
//!
//! let text = "Dr. Smith approved a 3.5 % fee, e.g. for U.S. orders. It is not refundable! Ask [2].";
//! assert_eq!(
//!     split_sentences(text),
//!     vec![
//!         "Dr. Smith approved a 3.5 % fee, e.g. for U.S. orders.",
//!         "It is not refundable!",
//!         "Ask [2].",
//!     ]
//! );
//! ```

/// Lowercased abbreviations (without their final dot) after which a full stop does not end a
/// sentence.
const ABBREVIATIONS: &[&str] = &[
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "etc", "e.g", "i.e", "cf", "al",
    "approx", "incl", "excl", "no", "nos", "nr", "fig", "figs", "vol", "p", "pp", "ch", "sec",
    "art", "inc", "ltd", "co", "corp", "dept", "est", "min", "max", "govt", "u.s", "u.k", "u.n",
    "e.u", "a.m", "p.m", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct",
    "nov", "dec", "mon", "tue", "wed", "thu", "fri", "sat", "sun", "gen", "col", "lt", "sgt",
    "capt", "rev", "hon", "ave", "blvd", "rd", "ph.d", "m.d", "b.a", "m.a",
];

/// Splits `text` into sentences by the rules of this module.
pub fn split_sentences(text: &str) -> Vec<String> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut sentences = Vec::new();
    let mut start = 0usize;
    let mut i = 0usize;
    let push = |sentences: &mut Vec<String>, piece: &str| {
        let piece = piece.trim();
        if !piece.is_empty() {
            sentences.push(piece.to_string());
        }
    };
    while i < chars.len() {
        let (at, c) = chars[i];
        if c == '\n' {
            // A blank line, or a new list item, ends the sentence.
            let mut j = i + 1;
            while j < chars.len() && chars[j].1 != '\n' && chars[j].1.is_whitespace() {
                j += 1;
            }
            let blank = j < chars.len() && chars[j].1 == '\n';
            if blank || starts_list_item(&chars, j) {
                push(&mut sentences, &text[start..at]);
                start = at;
            }
            i += 1;
            continue;
        }
        if matches!(c, '.' | '!' | '?' | '…') {
            // Take the whole run of terminal punctuation and closing quotes/brackets.
            let mut j = i + 1;
            while j < chars.len() && matches!(chars[j].1, '.' | '!' | '?' | '…') {
                j += 1;
            }
            while j < chars.len() && is_closing(chars[j].1) {
                j += 1;
            }
            if j < chars.len() && !chars[j].1.is_whitespace() {
                i = j;
                continue;
            }
            if c == '.' && j == i + 1 && !ends_sentence_at_dot(text, &chars, i) {
                i = j;
                continue;
            }
            // Skip the whitespace; a citation marker right after stays with this sentence.
            let mut k = j;
            while k < chars.len() && chars[k].1.is_whitespace() {
                k += 1;
            }
            let mut end = j;
            while k < chars.len() && chars[k].1 == '[' {
                let mut m = k + 1;
                while m < chars.len() && chars[m].1.is_ascii_digit() {
                    m += 1;
                }
                if m > k + 1 && m < chars.len() && chars[m].1 == ']' {
                    end = m + 1;
                    k = m + 1;
                    while k < chars.len() && chars[k].1.is_whitespace() {
                        k += 1;
                    }
                } else {
                    break;
                }
            }
            if k < chars.len() && chars[k].1.is_lowercase() {
                i = k;
                continue;
            }
            let end_byte = chars.get(end).map_or(text.len(), |&(b, _)| b);
            push(&mut sentences, &text[start..end_byte]);
            start = end_byte;
            i = end;
            continue;
        }
        i += 1;
    }
    push(&mut sentences, &text[start..]);
    sentences
}

fn is_closing(c: char) -> bool {
    matches!(c, '"' | '\'' | ')' | ']' | '”' | '’' | '»' | '*' | '_')
}

fn starts_list_item(chars: &[(usize, char)], j: usize) -> bool {
    match chars.get(j).map(|c| c.1) {
        Some('-' | '*' | '•') => chars.get(j + 1).is_some_and(|c| c.1 == ' '),
        Some(d) if d.is_ascii_digit() => {
            let mut k = j;
            while k < chars.len() && chars[k].1.is_ascii_digit() {
                k += 1;
            }
            matches!(chars.get(k).map(|c| c.1), Some('.' | ')'))
                && chars.get(k + 1).is_some_and(|c| c.1 == ' ')
        }
        _ => false,
    }
}

/// Whether the `.` at `chars[i]` (followed by whitespace) ends a sentence: not after an
/// abbreviation or a single-letter initial.
fn ends_sentence_at_dot(text: &str, chars: &[(usize, char)], i: usize) -> bool {
    let mut k = i;
    while k > 0 && !chars[k - 1].1.is_whitespace() && !matches!(chars[k - 1].1, '(' | '"' | '“') {
        k -= 1;
    }
    let word = &text[chars[k].0..chars[i].0];
    if word.is_empty() {
        return true;
    }
    let lower = word.to_lowercase();
    if ABBREVIATIONS.contains(&lower.as_str()) {
        return false;
    }
    // A list marker such as `2.` at the start of a line.
    if word.chars().all(|ch| ch.is_ascii_digit()) {
        let mut b = k;
        while b > 0 && chars[b - 1].1 != '\n' && chars[b - 1].1.is_whitespace() {
            b -= 1;
        }
        if b == 0 || chars[b - 1].1 == '\n' {
            return false;
        }
    }
    let letters: Vec<char> = word.chars().collect();
    // A single-letter initial such as `J.` (but not a lone digit: "in step 3.").
    if letters.len() == 1 && letters[0].is_alphabetic() && letters[0].is_uppercase() {
        return false;
    }
    // Dotted initialisms not in the list (`A.B.C.`).
    if letters.len() >= 3
        && letters.iter().enumerate().all(|(n, ch)| {
            if n % 2 == 1 {
                *ch == '.'
            } else {
                ch.is_alphabetic()
            }
        })
    {
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_abbreviations_and_negations_stay_whole() {
        assert_eq!(
            split_sentences("The fee is 1,000.50 EUR. It isn't refundable. Mr. J. Doe signed."),
            vec![
                "The fee is 1,000.50 EUR.",
                "It isn't refundable.",
                "Mr. J. Doe signed."
            ]
        );
        assert_eq!(
            split_sentences("Open 9 a.m. to 5 p.m. Closed on Sundays."),
            vec!["Open 9 a.m. to 5 p.m. Closed on Sundays."],
            "an abbreviation before a capital is kept: the cost of not splitting wrongly"
        );
    }

    #[test]
    fn lists_blank_lines_quotes_and_markers() {
        assert_eq!(
            split_sentences("Steps:\n1. Log in\n2. Click refund\n\nDone."),
            vec!["Steps:", "1. Log in", "2. Click refund", "Done."]
        );
        assert_eq!(
            split_sentences("He said \"no.\" Then left. See [1]. [2] Next one?"),
            vec!["He said \"no.\"", "Then left.", "See [1]. [2]", "Next one?"]
        );
        assert_eq!(
            split_sentences("lowercase after. does not split"),
            vec!["lowercase after. does not split"]
        );
        assert!(split_sentences("  ").is_empty());
        assert_eq!(split_sentences("No final stop"), vec!["No final stop"]);
        assert_eq!(
            split_sentences("Wait... What?! Yes."),
            vec!["Wait...", "What?!", "Yes."]
        );
        assert_eq!(
            split_sentences("Émile est là. Ça va."),
            vec!["Émile est là.", "Ça va."]
        );
    }
}
