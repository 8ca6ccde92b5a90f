//! The Porter stemmer as NLTK implements it in its default `NLTK_EXTENSIONS` mode (what
//! `rouge_score` uses): M. F. Porter, "An algorithm for suffix stripping", *Program* 14(3),
//! 1980, with NLTK's departures — irregular forms (`dying → die`, `skies → sky`, …), words of
//! at most two letters kept, `ies`/`ied` on four-letter words (`ties → tie`), step 1c only after
//! a consonant, `alli → al` recursion, `bli → ble`, `fulli → ful` and `logi → log` in step 2,
//! and the two-letter `vc` ending counted as `cvc`.
//!
//! Input is one lowercase ASCII token (`[a-z0-9]+`, as `rouge_score` gives it); other bytes are
//! treated as consonants. Compared with NLTK on a dictionary of words and random tokens in
//! `tests/ragas_reference.rs`.

/// `PorterStemmer().stem(word)` for a lowercase ASCII word.
pub fn stem(word: &str) -> String {
    const IRREGULAR: &[(&str, &str)] = &[
        ("sky", "sky"),
        ("skies", "sky"),
        ("dying", "die"),
        ("lying", "lie"),
        ("tying", "tie"),
        ("news", "news"),
        ("innings", "inning"),
        ("inning", "inning"),
        ("outings", "outing"),
        ("outing", "outing"),
        ("cannings", "canning"),
        ("canning", "canning"),
        ("howe", "howe"),
        ("proceed", "proceed"),
        ("exceed", "exceed"),
        ("succeed", "succeed"),
    ];
    if let Some((_, s)) = IRREGULAR.iter().find(|(w, _)| *w == word) {
        return (*s).to_string();
    }
    if word.chars().count() <= 2 {
        return word.to_string();
    }
    let mut w: Vec<u8> = word.as_bytes().to_vec();
    w = step1a(w);
    w = step1b(w);
    w = step1c(w);
    w = step2(w);
    w = step3(w);
    w = step4(w);
    w = step5a(w);
    w = step5b(w);
    String::from_utf8_lossy(&w).into_owned()
}

fn is_vowel(c: u8) -> bool {
    matches!(c, b'a' | b'e' | b'i' | b'o' | b'u')
}

/// Consonant flags: `y` is a consonant at the start and after a vowel, a vowel after a
/// consonant.
fn consonant_flags(w: &[u8]) -> Vec<bool> {
    let mut flags: Vec<bool> = Vec::with_capacity(w.len());
    for (i, &c) in w.iter().enumerate() {
        let f = if is_vowel(c) {
            false
        } else if c == b'y' {
            i == 0 || !flags[i - 1]
        } else {
            true
        };
        flags.push(f);
    }
    flags
}

fn is_consonant(w: &[u8], i: usize) -> bool {
    consonant_flags(&w[..=i])[i]
}

/// Porter's `m`: the number of vowel-consonant sequences.
fn measure(stem: &[u8]) -> usize {
    let f = consonant_flags(stem);
    f.windows(2).filter(|p| !p[0] && p[1]).count()
}

fn contains_vowel(stem: &[u8]) -> bool {
    !consonant_flags(stem).iter().all(|c| *c)
}

fn ends_double_consonant(w: &[u8]) -> bool {
    w.len() >= 2 && w[w.len() - 1] == w[w.len() - 2] && is_consonant(w, w.len() - 1)
}

fn ends_cvc(w: &[u8]) -> bool {
    let n = w.len();
    (n >= 3
        && is_consonant(w, n - 3)
        && !is_consonant(w, n - 2)
        && is_consonant(w, n - 1)
        && !matches!(w[n - 1], b'w' | b'x' | b'y'))
        || (n == 2 && !is_consonant(w, 0) && is_consonant(w, 1))
}

fn positive(stem: &[u8]) -> bool {
    measure(stem) > 0
}

type Condition<'a> = Option<&'a dyn Fn(&[u8]) -> bool>;

/// NLTK's `_apply_rule_list`: the first rule whose suffix matches decides (its condition
/// failing leaves the word as it is). The suffix `*d` is a double consonant.
fn apply_rules(w: Vec<u8>, rules: &[(&str, &[u8], Condition<'_>)]) -> Vec<u8> {
    for (suffix, replacement, condition) in rules {
        if *suffix == "*d" && ends_double_consonant(&w) {
            let stem = &w[..w.len() - 2];
            return if condition.is_none_or(|c| c(stem)) {
                [stem, replacement].concat()
            } else {
                w
            };
        }
        if w.ends_with(suffix.as_bytes()) {
            let stem = &w[..w.len() - suffix.len()];
            return if condition.is_none_or(|c| c(stem)) {
                [stem, replacement].concat()
            } else {
                w
            };
        }
    }
    w
}

fn replace_suffix(w: &[u8], suffix: &str, replacement: &str) -> Vec<u8> {
    [&w[..w.len() - suffix.len()], replacement.as_bytes()].concat()
}

fn step1a(w: Vec<u8>) -> Vec<u8> {
    if w.ends_with(b"ies") && w.len() == 4 {
        return replace_suffix(&w, "ies", "ie");
    }
    apply_rules(
        w,
        &[
            ("sses", b"ss", None),
            ("ies", b"i", None),
            ("ss", b"ss", None),
            ("s", b"", None),
        ],
    )
}

fn step1b(w: Vec<u8>) -> Vec<u8> {
    if w.ends_with(b"ied") {
        return if w.len() == 4 {
            replace_suffix(&w, "ied", "ie")
        } else {
            replace_suffix(&w, "ied", "i")
        };
    }
    if w.ends_with(b"eed") {
        let stem = &w[..w.len() - 3];
        return if measure(stem) > 0 {
            [stem, b"ee"].concat()
        } else {
            w
        };
    }
    let mut intermediate = None;
    for suffix in ["ed", "ing"] {
        if w.ends_with(suffix.as_bytes()) {
            let stem = &w[..w.len() - suffix.len()];
            if contains_vowel(stem) {
                intermediate = Some(stem.to_vec());
                break;
            }
        }
    }
    let Some(stem) = intermediate else {
        return w;
    };
    let last = *stem.last().unwrap_or(&b' ');
    let double_ok = |_: &[u8]| !matches!(last, b'l' | b's' | b'z');
    let add_e = |s: &[u8]| measure(s) == 1 && ends_cvc(s);
    apply_rules(
        stem,
        &[
            ("at", b"ate", None),
            ("bl", b"ble", None),
            ("iz", b"ize", None),
            ("*d", &[last], Some(&double_ok)),
            ("", b"e", Some(&add_e)),
        ],
    )
}

fn step1c(w: Vec<u8>) -> Vec<u8> {
    let cond = |s: &[u8]| s.len() > 1 && is_consonant(s, s.len() - 1);
    apply_rules(w, &[("y", b"i", Some(&cond))])
}

fn step2(w: Vec<u8>) -> Vec<u8> {
    if w.ends_with(b"alli") && positive(&w[..w.len() - 4]) {
        return step2(replace_suffix(&w, "alli", "al"));
    }
    let word = w.clone();
    let logi = move |_: &[u8]| positive(&word[..word.len() - 3]);
    let p: &dyn Fn(&[u8]) -> bool = &positive;
    apply_rules(
        w,
        &[
            ("ational", b"ate", Some(p)),
            ("tional", b"tion", Some(p)),
            ("enci", b"ence", Some(p)),
            ("anci", b"ance", Some(p)),
            ("izer", b"ize", Some(p)),
            ("bli", b"ble", Some(p)),
            ("alli", b"al", Some(p)),
            ("entli", b"ent", Some(p)),
            ("eli", b"e", Some(p)),
            ("ousli", b"ous", Some(p)),
            ("ization", b"ize", Some(p)),
            ("ation", b"ate", Some(p)),
            ("ator", b"ate", Some(p)),
            ("alism", b"al", Some(p)),
            ("iveness", b"ive", Some(p)),
            ("fulness", b"ful", Some(p)),
            ("ousness", b"ous", Some(p)),
            ("aliti", b"al", Some(p)),
            ("iviti", b"ive", Some(p)),
            ("biliti", b"ble", Some(p)),
            ("fulli", b"ful", Some(p)),
            ("logi", b"log", Some(&logi)),
        ],
    )
}

fn step3(w: Vec<u8>) -> Vec<u8> {
    let p: &dyn Fn(&[u8]) -> bool = &positive;
    apply_rules(
        w,
        &[
            ("icate", b"ic", Some(p)),
            ("ative", b"", Some(p)),
            ("alize", b"al", Some(p)),
            ("iciti", b"ic", Some(p)),
            ("ical", b"ic", Some(p)),
            ("ful", b"", Some(p)),
            ("ness", b"", Some(p)),
        ],
    )
}

fn step4(w: Vec<u8>) -> Vec<u8> {
    let gt1 = |s: &[u8]| measure(s) > 1;
    let ion = |s: &[u8]| measure(s) > 1 && matches!(s.last(), Some(b's' | b't'));
    let g: &dyn Fn(&[u8]) -> bool = &gt1;
    apply_rules(
        w,
        &[
            ("al", b"", Some(g)),
            ("ance", b"", Some(g)),
            ("ence", b"", Some(g)),
            ("er", b"", Some(g)),
            ("ic", b"", Some(g)),
            ("able", b"", Some(g)),
            ("ible", b"", Some(g)),
            ("ant", b"", Some(g)),
            ("ement", b"", Some(g)),
            ("ment", b"", Some(g)),
            ("ent", b"", Some(g)),
            ("ion", b"", Some(&ion)),
            ("ou", b"", Some(g)),
            ("ism", b"", Some(g)),
            ("ate", b"", Some(g)),
            ("iti", b"", Some(g)),
            ("ous", b"", Some(g)),
            ("ive", b"", Some(g)),
            ("ize", b"", Some(g)),
        ],
    )
}

fn step5a(w: Vec<u8>) -> Vec<u8> {
    if w.ends_with(b"e") {
        let stem = &w[..w.len() - 1];
        let m = measure(stem);
        if m > 1 || (m == 1 && !ends_cvc(stem)) {
            return stem.to_vec();
        }
    }
    w
}

fn step5b(w: Vec<u8>) -> Vec<u8> {
    let word = w.clone();
    let cond = move |_: &[u8]| measure(&word[..word.len() - 1]) > 1;
    apply_rules(w, &[("ll", b"l", Some(&cond))])
}

#[cfg(test)]
mod tests {
    use super::stem;

    #[test]
    fn porter_paper_examples_and_nltk_extensions() {
        for (word, stemmed) in [
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("ties", "tie"),
            ("cats", "cat"),
            ("feed", "feed"),
            ("agreed", "agre"),
            ("plastered", "plaster"),
            ("motoring", "motor"),
            ("sing", "sing"),
            ("conflated", "conflat"),
            ("hopping", "hop"),
            ("falling", "fall"),
            ("filing", "file"),
            ("happy", "happi"),
            ("relational", "relat"),
            ("generalization", "gener"),
            ("dying", "die"),
            ("running", "run"),
            ("electricity", "electr"),
            ("controll", "control"),
            ("is", "is"),
        ] {
            assert_eq!(stem(word), stemmed, "{word}");
        }
    }
}
