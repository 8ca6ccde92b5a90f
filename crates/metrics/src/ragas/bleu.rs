//! Ragas' `BleuScore`: sacrebleu's `corpus_bleu` (sacrebleu 2.x defaults: the `13a`
//! tokenizer, exponential smoothing, no lowercasing, maximum order 4) over Ragas' sentence
//! split, divided by 100.
//!
//! Ragas splits both texts on `". "` and calls `corpus_bleu(response_sentences,
//! [[s] for s in reference_sentences])`: every reference sentence becomes a separate reference
//! *stream* of one segment, so sacrebleu scores **only the first response sentence**, against all
//! reference sentences as alternative references (n-gram counts clipped by the largest count in
//! any reference, the reference length closest to the hypothesis' — the shorter on ties). This
//! module reproduces that exactly, quirks included.
//!
//! BLEU (Papineni et al., ACL 2002; sacrebleu: Post, WMT 2018): with `cₙ` clipped matching
//! n-grams and `tₙ` hypothesis n-grams, `pₙ = 100·cₙ/tₙ`, and for `cₙ = 0` the NIST smoothing
//! `pₙ = 100 / (2ᵏ·tₙ)` (`k` counting the zero orders so far); orders with `tₙ = 0` stop the
//! loop and count as `log 0 = −9999999999`. `BP = exp(1 − r/h)` when `h < r`. No match at all
//! gives 0.

use std::collections::HashMap;

use crate::text::{is_python_space, python_split};

const MAX_ORDER: usize = 4;

/// Ragas' `BleuScore` of `response` against `reference`, in `[0, 1]`.
pub fn bleu_score(reference: &str, response: &str) -> f64 {
    let hypothesis = response.split(". ").next().unwrap_or("");
    let references: Vec<&str> = reference.split(". ").collect();
    sentence_bleu(hypothesis, &references) / 100.0
}

/// sacrebleu's BLEU (0–100) of one hypothesis segment against several references.
pub fn sentence_bleu(hypothesis: &str, references: &[&str]) -> f64 {
    let mut ref_ngrams: HashMap<Vec<&str>, usize> = HashMap::new();
    let mut ref_lens = Vec::new();
    let ref_tokens: Vec<String> = references.iter().map(|r| preprocess(r)).collect();
    for tokens in &ref_tokens {
        let words: Vec<&str> = python_split(tokens).collect();
        ref_lens.push(words.len());
        for (ngram, count) in ngrams(&words) {
            let slot = ref_ngrams.entry(ngram).or_insert(0);
            *slot = (*slot).max(count);
        }
    }
    let hyp = preprocess(hypothesis);
    let words: Vec<&str> = python_split(&hyp).collect();
    let hyp_len = words.len();
    let ref_len = closest_ref_len(hyp_len, &ref_lens);
    let mut correct = [0usize; MAX_ORDER];
    let mut total = [0usize; MAX_ORDER];
    for (ngram, count) in ngrams(&words) {
        let n = ngram.len() - 1;
        total[n] += count;
        if let Some(r) = ref_ngrams.get(&ngram) {
            correct[n] += count.min(*r);
        }
    }
    compute_bleu(&correct, &total, hyp_len, ref_len)
}

/// sacrebleu's `BLEU.compute_bleu` with `smooth_method="exp"`, `effective_order=False`.
fn compute_bleu(correct: &[usize], total: &[usize], sys_len: usize, ref_len: usize) -> f64 {
    let mut bp = 1.0;
    if sys_len < ref_len {
        bp = if sys_len > 0 {
            (1.0 - ref_len as f64 / sys_len as f64).exp()
        } else {
            0.0
        };
    }
    if correct.iter().all(|c| *c == 0) {
        return 0.0;
    }
    let mut precisions = [0.0f64; MAX_ORDER];
    let mut smooth = 1.0;
    for n in 0..MAX_ORDER {
        if total[n] == 0 {
            break;
        }
        if correct[n] == 0 {
            smooth *= 2.0;
            precisions[n] = 100.0 / (smooth * total[n] as f64);
        } else {
            precisions[n] = 100.0 * correct[n] as f64 / total[n] as f64;
        }
    }
    let sum = precisions.iter().fold(0.0, |acc, p| {
        acc + if *p == 0.0 { -9_999_999_999.0 } else { p.ln() }
    });
    bp * (sum / MAX_ORDER as f64).exp()
}

/// sacrebleu's `_get_closest_ref_len`: the closest length, the shorter on ties.
fn closest_ref_len(hyp_len: usize, ref_lens: &[usize]) -> usize {
    let mut best: Option<(usize, usize)> = None;
    for &len in ref_lens {
        let diff = hyp_len.abs_diff(len);
        match best {
            None => best = Some((diff, len)),
            Some((d, l)) if diff < d || (diff == d && len < l) => best = Some((diff, len)),
            _ => {}
        }
    }
    best.map_or(0, |(_, l)| l)
}

/// Every n-gram of order 1 to 4 with its count.
fn ngrams<'a>(words: &[&'a str]) -> HashMap<Vec<&'a str>, usize> {
    let mut out = HashMap::new();
    for n in 1..=MAX_ORDER {
        for w in words.windows(n) {
            *out.entry(w.to_vec()).or_insert(0) += 1;
        }
    }
    out
}

/// sacrebleu's `_preprocess_segment`: `rstrip()`, then [`tokenize_13a`].
fn preprocess(segment: &str) -> String {
    tokenize_13a(segment.trim_end_matches(is_python_space))
}

/// sacrebleu's `13a` tokenizer (mteval-v13a's, as used by WMT): drops `<skipped>` and `-\n`,
/// turns newlines into spaces, unescapes `&quot; &amp; &lt; &gt;`, splits off punctuation and
/// symbols (`{|}~ [\]^_` `` ` `` ` !"#$%& ()*+ :;<=>?@ /`), periods and commas unless between
/// digits, and a dash after a digit; then joins the tokens with single spaces.
pub fn tokenize_13a(line: &str) -> String {
    let mut line = line
        .replace("<skipped>", "")
        .replace("-\n", "")
        .replace('\n', " ");
    if line.contains('&') {
        line = line
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">");
    }
    let line: Vec<char> = format!(" {line} ").chars().collect();
    // 1: ([\{-\~\[-\` -\&\(-\+\:-\@\/]) → " \1 "
    let mut a = Vec::with_capacity(line.len() * 2);
    for &c in &line {
        if is_13a_symbol(c) {
            a.extend([' ', c, ' ']);
        } else {
            a.push(c);
        }
    }
    // 2: ([^0-9])([\.,]) → "\1 \2 " (non-overlapping, left to right)
    let mut b = Vec::with_capacity(a.len() * 2);
    let mut i = 0;
    while i < a.len() {
        if i + 1 < a.len() && !a[i].is_ascii_digit() && matches!(a[i + 1], '.' | ',') {
            b.extend([a[i], ' ', a[i + 1], ' ']);
            i += 2;
        } else {
            b.push(a[i]);
            i += 1;
        }
    }
    // 3: ([\.,])([^0-9]) → " \1 \2"
    let mut c = Vec::with_capacity(b.len() * 2);
    let mut i = 0;
    while i < b.len() {
        if i + 1 < b.len() && matches!(b[i], '.' | ',') && !b[i + 1].is_ascii_digit() {
            c.extend([' ', b[i], ' ', b[i + 1]]);
            i += 2;
        } else {
            c.push(b[i]);
            i += 1;
        }
    }
    // 4: ([0-9])(-) → "\1 \2 "
    let mut d = String::with_capacity(c.len() * 2);
    let mut i = 0;
    while i < c.len() {
        if i + 1 < c.len() && c[i].is_ascii_digit() && c[i + 1] == '-' {
            d.push(c[i]);
            d.push_str(" - ");
            i += 2;
        } else {
            d.push(c[i]);
            i += 1;
        }
    }
    python_split(&d).collect::<Vec<_>>().join(" ")
}

/// The first 13a class: `{`–`~`, `[`–`` ` ``, space–`&`, `(`–`+`, `:`–`@`, `/`.
fn is_13a_symbol(c: char) -> bool {
    matches!(c, '{'..='~' | '['..='`' | ' '..='&' | '('..='+' | ':'..='@' | '/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_13a_splits_like_mteval() {
        assert_eq!(tokenize_13a("Hello, world."), "Hello , world .");
        assert_eq!(tokenize_13a("3.14 and 1,000 items"), "3.14 and 1,000 items");
        assert_eq!(tokenize_13a("it's 5-6 &amp; (x)"), "it's 5 - 6 & ( x )");
        assert_eq!(tokenize_13a("a-\nb\nc"), "ab c");
    }

    #[test]
    fn identical_sentences_score_one() {
        let s = "the quick brown fox jumps over the lazy dog";
        assert!((bleu_score(s, s) - 1.0).abs() < 1e-12);
        assert_eq!(bleu_score("a b c d", ""), 0.0);
        // Only the first response sentence is scored (Ragas passes one-segment streams).
        let two = format!("{s}. something else entirely here");
        assert!((bleu_score(s, &two) - 1.0).abs() < 1e-12);
    }
}
