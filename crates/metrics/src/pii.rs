//! Rule-based PII detectors: e-mail addresses, phone numbers, payment card numbers, IBANs, US
//! Social Security numbers, French social security numbers (NIR) and IP addresses, found in a
//! text as character spans with their entity type, so they plug straight into the span scoring
//! of [`crate::ingest::spans`] (`oloproof metric pii`) and into the `pii_in_answer` rule.
//!
//! Seed 002 §5.2: "the detection of simple patterns (a card number, a forbidden word) belongs
//! to a regular expression". Each detector here is a pattern *and* the check that the standard
//! defines for it, so a number that merely looks like one is not reported:
//!
//! | type | what is found | check |
//! | --- | --- | --- |
//! | `IBAN` | ISO 13616, upper case, compact or printed in groups of four | the SWIFT IBAN registry's length and BBAN structure for its country, ISO 7064 mod 97-10 (remainder 1) |
//! | `FR_NIR` | 15 characters (`1 85 05 78 006 084 91`, compact or spaced), Corsica's `2A`/`2B` | sex digit 1–4, 7 or 8; month 01–12, 20–42 or 50–99; key = 97 − (first 13 digits mod 97), `2A`→19, `2B`→18 |
//! | `CREDIT_CARD` | 13–19 digits, compact or in groups split by one kind of separator (space or `-`) | first digit 2–6 (the card networks' ranges), Luhn (ISO/IEC 7812-1), not one repeated digit |
//! | `US_SSN` | `AAA-GG-SSSS` (or with spaces), a number of its own | area not 000, 666 or 9xx, group not 00, serial not 0000, not one of the publicised numbers (078-05-1120, 219-09-9999, 457-55-5462) |
//! | `EMAIL` | ASCII `local@domain.tld` | local part ≤ 64 characters without leading, trailing or doubled dots; whole ≤ 254 |
//! | `IPV6` | RFC 4291 text forms, `::` compression, an embedded IPv4 | parsed by [`std::net::Ipv6Addr`]; at least one decimal digit (so `cafe::babe` or `::` in code is not an address) |
//! | `IPV4` | dotted quad | each octet 0–255 without leading zero; not part of a longer dotted number |
//! | `PHONE` | E.164 (`+33 6 12 34 56 78`, `+44 (0)20 7946 0958`), French national (`06 12 34 56 78`), North American (`(415) 555-2671`, `415-555-2671`) | 8–15 digits after `+` (the `(0)` trunk prefix not counted); French: `0` + 9 digits with one kind of separator; NANP: area and exchange codes 2–9 |
//!
//! The detectors are deliberately conservative (a missed PII in free text is possible; a
//! reported one is a real identifier format with a valid check): every match must stand alone
//! (no letter or digit glued to either side), lower-case IBANs and internationalised e-mail
//! addresses are not found, and a national phone format other than French or North American is
//! found only in its `+` international form. A number separated from an international phone
//! number by a single space may be absorbed into its span.
//!
//! Overlaps: one stretch of text is reported under one type only, the one with the stronger
//! check, in the order of the table (an IBAN's digits are not also a phone number; a 15-digit
//! number that is a valid NIR is not also reported as a card).
//!
//! Offsets are half-open `[start, end)` in Unicode scalar values (Python string indices, as the
//! span scoring expects); [`Detection::bytes`] gives the byte range for slicing. The matched
//! text is never needed to report a finding: [`mask`] gives a form safe to store
//! (`4*** **** **** 1111`).
//!
//! ```
//! use oloproof_metrics::pii::{detect, EntityType};
//!
//! let text = "Card 4111 1111 1111 1111, mail jane.doe@example.com, not 4111 1111 1111 1112.";
//! let found = detect(text, EntityType::ALL);
//! assert_eq!(found.len(), 2);
//! assert_eq!(found[0].entity, EntityType::CreditCard);
//! assert_eq!((found[0].start, found[0].end), (5, 24));
//! assert_eq!(found[0].masked(text), "4*** **** **** 1111");
//! assert_eq!(found[1].entity, EntityType::Email);
//! assert_eq!(found[1].masked(text), "j***.***@*******.com");
//! ```

use std::fmt;
use std::ops::Range;
use std::str::FromStr;
use std::sync::LazyLock;

use regex::Regex;

use crate::error::UnknownWord;
use crate::ingest::spans::Span;

/// A kind of personal identifier the detectors find. The order is the precedence on overlaps
/// (strongest check first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EntityType {
    /// An International Bank Account Number (ISO 13616).
    Iban,
    /// A French social security number (NIR, "numéro de sécurité sociale") with its key.
    FrNir,
    /// A payment card number (ISO/IEC 7812, Luhn checked).
    CreditCard,
    /// A US Social Security number.
    UsSsn,
    /// An e-mail address.
    Email,
    /// An IPv6 address.
    Ipv6,
    /// An IPv4 address.
    Ipv4,
    /// A phone number.
    Phone,
}

/// What [`EntityType::from_str`] accepts, as a phrase.
const ENTITY_NAMES: &str = "one of EMAIL, PHONE, CREDIT_CARD, IBAN, US_SSN, FR_NIR, IPV4, IPV6";

impl EntityType {
    /// Every type, in the order they are usually listed (`EMAIL`, `PHONE`, …).
    pub const ALL: &'static [EntityType] = &[
        EntityType::Email,
        EntityType::Phone,
        EntityType::CreditCard,
        EntityType::Iban,
        EntityType::UsSsn,
        EntityType::FrNir,
        EntityType::Ipv4,
        EntityType::Ipv6,
    ];

    /// The type's name as written in configs and span labels (`EMAIL`, `CREDIT_CARD`, …).
    pub const fn as_str(&self) -> &'static str {
        match self {
            EntityType::Email => "EMAIL",
            EntityType::Phone => "PHONE",
            EntityType::CreditCard => "CREDIT_CARD",
            EntityType::Iban => "IBAN",
            EntityType::UsSsn => "US_SSN",
            EntityType::FrNir => "FR_NIR",
            EntityType::Ipv4 => "IPV4",
            EntityType::Ipv6 => "IPV6",
        }
    }

    /// The names of [`EntityType::ALL`], in order.
    pub fn names() -> impl Iterator<Item = &'static str> {
        EntityType::ALL.iter().map(EntityType::as_str)
    }
}

impl fmt::Display for EntityType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EntityType {
    type Err = UnknownWord;

    /// The type named exactly as [`EntityType::as_str`] writes it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EntityType::ALL
            .iter()
            .copied()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| UnknownWord {
                what: "unknown PII entity type",
                value: s.to_string(),
                expected: ENTITY_NAMES,
            })
    }
}

/// One identifier found in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detection {
    /// What it is.
    pub entity: EntityType,
    /// First character (Unicode scalar value offset).
    pub start: usize,
    /// One past the last character.
    pub end: usize,
    /// The same range in bytes of the text.
    pub bytes: Range<usize>,
}

impl Detection {
    /// The span as [`crate::ingest::spans`] scores it (label: the type's name).
    pub fn span(&self) -> Span {
        Span {
            start: self.start,
            end: self.end,
            label: self.entity.as_str().to_string(),
        }
    }

    /// The matched text of `text` (the text it was found in) masked by [`mask`].
    pub fn masked(&self, text: &str) -> String {
        text.get(self.bytes.clone())
            .map_or_else(String::new, |m| mask(self.entity, m))
    }
}

/// Every identifier of the types in `entities` found in `text`, in text order, each stretch of
/// text under one type only (see the module doc for the checks and the precedence). Overlaps
/// are resolved among all types before `entities` filters, so choosing only `PHONE` does not
/// report an IBAN's digits as a phone number.
pub fn detect(text: &str, entities: &[EntityType]) -> Vec<Detection> {
    let mut candidates: Vec<(EntityType, Range<usize>)> = Vec::new();
    candidates.extend(ibans(text).map(|r| (EntityType::Iban, r)));
    candidates.extend(fr_nirs(text).map(|r| (EntityType::FrNir, r)));
    let (cards, ssns) = digit_groups(text);
    candidates.extend(cards.into_iter().map(|r| (EntityType::CreditCard, r)));
    candidates.extend(ssns.into_iter().map(|r| (EntityType::UsSsn, r)));
    candidates.extend(emails(text).map(|r| (EntityType::Email, r)));
    candidates.extend(ipv6s(text).map(|r| (EntityType::Ipv6, r)));
    candidates.extend(ipv4s(text).map(|r| (EntityType::Ipv4, r)));
    candidates.extend(phones(text).into_iter().map(|r| (EntityType::Phone, r)));
    // Precedence, then text order, longer first: the first candidate claims its stretch.
    candidates.sort_by(|a, b| {
        (a.0, a.1.start, std::cmp::Reverse(a.1.end)).cmp(&(
            b.0,
            b.1.start,
            std::cmp::Reverse(b.1.end),
        ))
    });
    let mut kept: Vec<(EntityType, Range<usize>)> = Vec::new();
    for (entity, range) in candidates {
        if kept
            .iter()
            .all(|(_, k)| range.end <= k.start || k.end <= range.start)
        {
            kept.push((entity, range));
        }
    }
    kept.retain(|(e, _)| entities.contains(e));
    kept.sort_by_key(|(_, r)| r.start);
    let mut bounds: Vec<usize> = kept.iter().flat_map(|(_, r)| [r.start, r.end]).collect();
    bounds.sort_unstable();
    bounds.dedup();
    let chars = char_offsets(text, &bounds);
    let at = |b: usize| chars[bounds.partition_point(|&x| x < b)];
    kept.into_iter()
        .map(|(entity, bytes)| Detection {
            entity,
            start: at(bytes.start),
            end: at(bytes.end),
            bytes,
        })
        .collect()
}

/// The character offset of each byte offset of `sorted` (ascending, on char boundaries).
fn char_offsets(text: &str, sorted: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(sorted.len());
    let (mut byte, mut chars) = (0usize, 0usize);
    for &b in sorted {
        chars += text.get(byte..b).map_or(0, |s| s.chars().count());
        byte = b;
        out.push(chars);
    }
    out
}

/// `matched` (the text of one detection of type `entity`) with its letters and digits replaced
/// by `*`, separators kept, and only what identifies the kind of number left visible: a card's
/// first digit and last four (`4*** **** **** 1111`, as receipts print them), an IBAN's country
/// and last four, an SSN's last four, a NIR's sex digit, a phone number's last two digits, an
/// e-mail's first character and top-level domain (`j***.***@*******.com`), an IP address's first
/// group.
pub fn mask(entity: EntityType, matched: &str) -> String {
    match entity {
        EntityType::Email => {
            let Some((local, domain)) = matched.split_once('@') else {
                return mask_keeping(matched, 0, 0);
            };
            let (host, tld) = domain.rsplit_once('.').unwrap_or((domain, ""));
            format!(
                "{}@{}.{tld}",
                mask_keeping(local, 1, 0),
                mask_keeping(host, 0, 0)
            )
        }
        EntityType::Ipv4 | EntityType::Ipv6 => {
            let sep = if entity == EntityType::Ipv4 { '.' } else { ':' };
            match matched.split_once(sep) {
                Some((first, rest)) => format!("{first}{sep}{}", mask_keeping(rest, 0, 0)),
                None => mask_keeping(matched, 0, 0),
            }
        }
        EntityType::CreditCard => mask_keeping(matched, 1, 4),
        EntityType::Iban => mask_keeping(matched, 2, 4),
        EntityType::UsSsn => mask_keeping(matched, 0, 4),
        EntityType::FrNir => mask_keeping(matched, 1, 0),
        EntityType::Phone => mask_keeping(matched, 0, 2),
    }
}

/// Every alphanumeric character but the first `first` and the last `last` replaced by `*`.
fn mask_keeping(s: &str, first: usize, last: usize) -> String {
    let total = s.chars().filter(|c| c.is_alphanumeric()).count();
    let mut seen = 0;
    s.chars()
        .map(|c| {
            if !c.is_alphanumeric() {
                return c;
            }
            seen += 1;
            if seen <= first || seen > total.saturating_sub(last) {
                c
            } else {
                '*'
            }
        })
        .collect()
}

// ---- validators -------------------------------------------------------------------------------

/// Whether `digits` (ASCII digits only, at least two) passes the Luhn check (ISO/IEC 7812-1
/// annex B): doubling every second digit from the right, the digit sum is a multiple of 10.
pub fn luhn_valid(digits: &str) -> bool {
    if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let sum: u32 = digits
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, b)| {
            let d = u32::from(b - b'0');
            match i % 2 {
                0 => d,
                _ if d * 2 > 9 => d * 2 - 9,
                _ => d * 2,
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// The BBAN structure of each country of the SWIFT IBAN registry (release 101), in its
/// notation: `4!n` four digits, `3!a` three upper-case letters, `12!c` twelve letters or digits.
pub const IBAN_BBAN: &[(&str, &str)] = &[
    ("AD", "4!n4!n12!c"),
    ("AE", "3!n16!n"),
    ("AL", "8!n16!c"),
    ("AT", "5!n11!n"),
    ("AZ", "4!a20!c"),
    ("BA", "3!n3!n8!n2!n"),
    ("BE", "3!n7!n2!n"),
    ("BG", "4!a4!n2!n8!c"),
    ("BH", "4!a14!c"),
    ("BI", "5!n5!n11!n2!n"),
    ("BR", "8!n5!n10!n1!a1!c"),
    ("BY", "4!c4!n16!c"),
    ("CH", "5!n12!c"),
    ("CR", "4!n14!n"),
    ("CY", "3!n5!n16!c"),
    ("CZ", "4!n16!n"),
    ("DE", "8!n10!n"),
    ("DJ", "5!n5!n11!n2!n"),
    ("DK", "4!n9!n1!n"),
    ("DO", "4!c20!n"),
    ("EE", "2!n14!n"),
    ("EG", "4!n4!n17!n"),
    ("ES", "4!n4!n1!n1!n10!n"),
    ("FI", "3!n11!n"),
    ("FK", "2!a12!n"),
    ("FO", "4!n9!n1!n"),
    ("FR", "5!n5!n11!c2!n"),
    ("GB", "4!a6!n8!n"),
    ("GE", "2!a16!n"),
    ("GI", "4!a15!c"),
    ("GL", "4!n9!n1!n"),
    ("GR", "3!n4!n16!c"),
    ("GT", "4!c20!c"),
    ("HN", "4!a20!n"),
    ("HR", "7!n10!n"),
    ("HU", "3!n4!n1!n15!n1!n"),
    ("IE", "4!a6!n8!n"),
    ("IL", "3!n3!n13!n"),
    ("IQ", "4!a3!n12!n"),
    ("IS", "4!n2!n6!n10!n"),
    ("IT", "1!a5!n5!n12!c"),
    ("JO", "4!a4!n18!c"),
    ("KW", "4!a22!c"),
    ("KZ", "3!n13!c"),
    ("LB", "4!n20!c"),
    ("LC", "4!a24!c"),
    ("LI", "5!n12!c"),
    ("LT", "5!n11!n"),
    ("LU", "3!n13!c"),
    ("LV", "4!a13!c"),
    ("LY", "3!n3!n15!n"),
    ("MC", "5!n5!n11!c2!n"),
    ("MD", "2!c18!c"),
    ("ME", "3!n13!n2!n"),
    ("MK", "3!n10!c2!n"),
    ("MN", "4!n12!n"),
    ("MR", "5!n5!n11!n2!n"),
    ("MT", "4!a5!n18!c"),
    ("MU", "4!a2!n2!n12!n3!n3!a"),
    ("NI", "4!a20!n"),
    ("NL", "4!a10!n"),
    ("NO", "4!n6!n1!n"),
    ("OM", "3!n16!c"),
    ("PK", "4!a16!c"),
    ("PL", "8!n16!n"),
    ("PS", "4!a21!c"),
    ("PT", "4!n4!n11!n2!n"),
    ("QA", "4!a21!c"),
    ("RO", "4!a16!c"),
    ("RS", "3!n13!n2!n"),
    ("RU", "9!n5!n15!c"),
    ("SA", "2!n18!c"),
    ("SC", "4!a2!n2!n16!n3!a"),
    ("SD", "2!n12!n"),
    ("SE", "3!n16!n1!n"),
    ("SI", "5!n8!n2!n"),
    ("SK", "4!n6!n10!n"),
    ("SM", "1!a5!n5!n12!c"),
    ("SO", "4!n3!n12!n"),
    ("ST", "4!n4!n11!n2!n"),
    ("SV", "4!a20!n"),
    ("TL", "3!n14!n2!n"),
    ("TN", "2!n3!n13!n2!n"),
    ("TR", "5!n1!n16!c"),
    ("UA", "6!n19!c"),
    ("VA", "3!n15!n"),
    ("VG", "4!a16!n"),
    ("XK", "4!n10!n2!n"),
    ("YE", "4!a4!n18!c"),
];

/// The BBAN structure of `country` as (count, class) pairs, and its length.
fn bban_structure(country: &str) -> Option<(Vec<(usize, u8)>, usize)> {
    let (_, text) = IBAN_BBAN.iter().find(|(c, _)| *c == country)?;
    let mut parts = Vec::new();
    for part in text.split_inclusive(['n', 'a', 'c']) {
        let (count, class) = part.split_at(part.len() - 1);
        let count: usize = count.trim_end_matches('!').parse().ok()?;
        parts.push((count, class.as_bytes()[0]));
    }
    let len = parts.iter().map(|(n, _)| n).sum();
    Some((parts, len))
}

/// The full length (country, check digits and BBAN) of an IBAN of `country`, per the registry.
pub fn iban_length(country: &str) -> Option<usize> {
    bban_structure(country).map(|(_, len)| 4 + len)
}

/// Whether `iban` (compact: no spaces, upper case) is a valid IBAN (ISO 13616): a country of
/// the registry, that country's length and BBAN structure, and the ISO 7064 mod 97-10 check
/// (the BBAN, then the country and check digits, letters as 10–35, is 1 modulo 97).
pub fn iban_valid(iban: &str) -> bool {
    let bytes = iban.as_bytes();
    if bytes.len() < 5
        || !bytes[..2].iter().all(u8::is_ascii_uppercase)
        || !bytes[2..4].iter().all(u8::is_ascii_digit)
    {
        return false;
    }
    let Some((parts, len)) = bban_structure(&iban[..2]) else {
        return false;
    };
    if bytes.len() != 4 + len {
        return false;
    }
    let mut at = 4;
    for (count, class) in parts {
        let ok = bytes[at..at + count].iter().all(|b| match class {
            b'n' => b.is_ascii_digit(),
            b'a' => b.is_ascii_uppercase(),
            _ => b.is_ascii_digit() || b.is_ascii_uppercase(),
        });
        if !ok {
            return false;
        }
        at += count;
    }
    let rearranged = bytes[4..].iter().chain(&bytes[..4]);
    let mut rem: u32 = 0;
    for &b in rearranged {
        rem = if b.is_ascii_digit() {
            (rem * 10 + u32::from(b - b'0')) % 97
        } else {
            (rem * 100 + u32::from(b - b'A') + 10) % 97
        };
    }
    rem == 1
}

/// The numbers the Social Security Administration lists as never valid although publicised
/// (the Woolworth wallet card, an SSA advertisement, LifeLock's).
const SSN_BLOCKED: &[&str] = &["078051120", "219099999", "457555462"];

/// Whether `ssn` (`AAA-GG-SSSS` or nine digits) is a possible US Social Security number: area
/// not 000, 666 or 900–999, group not 00, serial not 0000, not a publicised invalid number.
pub fn us_ssn_valid(ssn: &str) -> bool {
    let compact: String = match ssn.len() {
        11 if ssn.as_bytes()[3] == b'-' && ssn.as_bytes()[6] == b'-' => {
            ssn.chars().filter(|&c| c != '-').collect()
        }
        9 => ssn.to_string(),
        _ => return false,
    };
    if compact.len() != 9 || !compact.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let (area, group, serial) = (&compact[..3], &compact[3..5], &compact[5..]);
    !(area == "000"
        || area == "666"
        || area.starts_with('9')
        || group == "00"
        || serial == "0000"
        || SSN_BLOCKED.contains(&compact.as_str()))
}

/// Whether `nir` (compact: 15 characters) has a French NIR's form and a valid key: 13
/// characters, digits but the department (positions 6–7) which may be `2A` or `2B` (Corsica,
/// counted as 19 and 18), then the two-digit key `97 − (number mod 97)`. The sex and month
/// plausibility checks of the detector are not part of it.
pub fn fr_nir_key_valid(nir: &str) -> bool {
    let b = nir.as_bytes();
    if b.len() != 15 {
        return false;
    }
    let digits = |r: Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if !digits(0..5) || !digits(7..15) {
        return false;
    }
    let dept = match &nir[5..7] {
        "2A" => "19",
        "2B" => "18",
        d if d.bytes().all(|c| c.is_ascii_digit()) => d,
        _ => return false,
    };
    let number = format!("{}{dept}{}", &nir[..5], &nir[7..13]);
    let Ok(n) = number.parse::<u64>() else {
        return false;
    };
    let Ok(key) = nir[13..].parse::<u64>() else {
        return false;
    };
    97 - n % 97 == key
}

// ---- detectors --------------------------------------------------------------------------------

/// A fixed pattern of this module (each one is compiled by the unit tests).
fn pattern(re: &str) -> Regex {
    Regex::new(re).expect("the detectors' patterns compile")
}

fn prev_char(text: &str, at: usize) -> Option<char> {
    text[..at].chars().next_back()
}

fn next_char(text: &str, at: usize) -> Option<char> {
    text[at..].chars().next()
}

/// No letter or digit glued to either side of `r`.
fn stands_alone(text: &str, r: &Range<usize>) -> bool {
    !prev_char(text, r.start).is_some_and(char::is_alphanumeric)
        && !next_char(text, r.end).is_some_and(char::is_alphanumeric)
}

/// `r` is not the middle of a longer number: no digit right before or after it, nor one behind
/// a single character of `separators` on either side.
fn not_in_longer_number(text: &str, r: &Range<usize>, separators: &[char]) -> bool {
    fn glued(mut chars: impl Iterator<Item = char>, separators: &[char]) -> bool {
        match chars.next() {
            Some(c) if c.is_ascii_digit() => true,
            Some(c) if separators.contains(&c) => chars.next().is_some_and(|d| d.is_ascii_digit()),
            _ => false,
        }
    }
    !glued(text[..r.start].chars().rev(), separators) && !glued(text[r.end..].chars(), separators)
}

/// The one separator used between the digit groups of `s`, if there is exactly one kind
/// (`Some(None)`: no separator at all; `None`: mixed).
fn one_separator(s: &str, separators: &[char]) -> Option<Option<char>> {
    let mut seen: Option<char> = None;
    for c in s.chars().filter(|c| separators.contains(c)) {
        match seen {
            None => seen = Some(c),
            Some(s) if s != c => return None,
            Some(_) => {}
        }
    }
    Some(seen)
}

fn ibans(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    static IBAN: LazyLock<Regex> =
        LazyLock::new(|| pattern(r"[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}"));
    IBAN.find_iter(text).filter_map(move |m| {
        let len = iban_length(&m.as_str()[..2])?;
        // The country's length decides where it ends (a following word may have been taken).
        let mut compact = String::with_capacity(len);
        let mut spaces = Vec::new(); // how many characters precede each space
        let mut end = m.start();
        for (i, c) in m.as_str().char_indices() {
            if compact.len() == len {
                break;
            }
            if c == ' ' {
                spaces.push(compact.len());
                continue;
            }
            compact.push(c);
            end = m.start() + i + c.len_utf8();
        }
        // Compact, or printed: a space after every group of four.
        let printed = (1..).map(|k| 4 * k).take_while(|&p| p < len);
        let spacing_ok = spaces.is_empty() || spaces.iter().copied().eq(printed);
        let range = m.start()..end;
        (compact.len() == len && spacing_ok && stands_alone(text, &range) && iban_valid(&compact))
            .then_some(range)
    })
}

fn fr_nirs(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    static NIR: LazyLock<Regex> = LazyLock::new(|| {
        pattern(r"[1-478] ?[0-9]{2} ?[0-9]{2} ?(?:[0-9]{2}|2[AB]) ?[0-9]{3} ?[0-9]{3} ?[0-9]{2}")
    });
    NIR.find_iter(text).filter_map(move |m| {
        let compact: String = m.as_str().chars().filter(|&c| c != ' ').collect();
        let month: u32 = compact[3..5].parse().ok()?;
        let plausible = matches!(month, 1..=12 | 20..=42 | 50..=99);
        let range = m.range();
        (plausible && stands_alone(text, &range) && fr_nir_key_valid(&compact)).then_some(range)
    })
}

/// Card numbers and SSNs, from the runs of digit groups split by single spaces or dashes.
fn digit_groups(text: &str) -> (Vec<Range<usize>>, Vec<Range<usize>>) {
    static CHUNK: LazyLock<Regex> = LazyLock::new(|| pattern(r"[0-9]+(?:[ \-][0-9]+)*"));
    let mut cards = Vec::new();
    let mut ssns = Vec::new();
    for m in CHUNK.find_iter(text) {
        let chunk = m.range();
        // Not glued to a word, not the decimals of a number.
        if !stands_alone(text, &chunk) || !not_in_longer_number(text, &chunk, &['.', ',']) {
            continue;
        }
        // (range, separator before it)
        let mut groups: Vec<(Range<usize>, Option<char>)> = Vec::new();
        let mut start = chunk.start;
        let mut sep = None;
        for (i, c) in m.as_str().char_indices() {
            if c == ' ' || c == '-' {
                groups.push((start..chunk.start + i, sep));
                sep = Some(c);
                start = chunk.start + i + 1;
            }
        }
        groups.push((start..chunk.end, sep));
        // US SSN: the whole run is AAA-GG-SSSS with one separator.
        if let [a, g, s] = groups.as_slice() {
            let sizes = (a.0.len(), g.0.len(), s.0.len());
            if sizes == (3, 2, 4)
                && g.1 == s.1
                && us_ssn_valid(&text[chunk.clone()].replace(' ', "-"))
            {
                ssns.push(chunk.clone());
                continue;
            }
        }
        // Cards: the longest valid window of whole groups from each start, left to right.
        let mut i = 0;
        while i < groups.len() {
            let mut best = None;
            let mut digits = String::new();
            for j in i..groups.len() {
                // One kind of separator inside a card number.
                if j > i + 1 && groups[j].1 != groups[i + 1].1 {
                    break;
                }
                digits.push_str(&text[groups[j].0.clone()]);
                if digits.len() > 19 {
                    break;
                }
                if digits.len() >= 13
                    && matches!(digits.as_bytes()[0], b'2'..=b'6')
                    && !digits.bytes().all(|b| b == digits.as_bytes()[0])
                    && luhn_valid(&digits)
                {
                    best = Some(j);
                }
            }
            match best {
                Some(j) => {
                    cards.push(groups[i].0.start..groups[j].0.end);
                    i = j + 1;
                }
                None => i += 1,
            }
        }
    }
    (cards, ssns)
}

fn emails(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    static EMAIL: LazyLock<Regex> = LazyLock::new(|| {
        pattern(
            r"[A-Za-z0-9._%+_\-]+@(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}",
        )
    });
    EMAIL.find_iter(text).filter_map(move |m| {
        let s = m.as_str();
        let trimmed = s.trim_start_matches('.');
        let start = m.start() + (s.len() - trimmed.len());
        let (local, _) = trimmed.split_once('@')?;
        let ok = !local.is_empty()
            && local.len() <= 64
            && !local.ends_with('.')
            && !local.contains("..")
            && trimmed.len() <= 254
            && !prev_char(text, start).is_some_and(char::is_alphanumeric)
            && !next_char(text, m.end()).is_some_and(|c| c.is_alphanumeric() || "-_@".contains(c));
        ok.then_some(start..m.end())
    })
}

fn ipv4_text_valid(s: &str) -> bool {
    let octets: Vec<&str> = s.split('.').collect();
    octets.len() == 4
        && octets.iter().all(|o| {
            !o.is_empty()
                && o.len() <= 3
                && (o.len() == 1 || !o.starts_with('0'))
                && o.parse::<u16>().is_ok_and(|v| v <= 255)
        })
}

fn ipv4s(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    static IPV4: LazyLock<Regex> = LazyLock::new(|| pattern(r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}"));
    IPV4.find_iter(text).filter_map(move |m| {
        let range = m.range();
        let dotted_on = |c: Option<char>, then: Option<char>| {
            c == Some('.') && then.is_some_and(|d| d.is_ascii_digit())
        };
        let mut after = text[range.end..].chars();
        let (a1, a2) = (after.next(), after.next());
        let ok = ipv4_text_valid(m.as_str())
            && stands_alone(text, &range)
            && prev_char(text, range.start) != Some('.')
            && !dotted_on(a1, a2);
        ok.then_some(range)
    })
}

fn ipv6s(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    static IPV6: LazyLock<Regex> = LazyLock::new(|| {
        pattern(r"(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}|[0-9A-Fa-f]{1,4})?")
    });
    IPV6.find_iter(text).filter_map(move |m| {
        let mut range = m.range();
        let mut s = m.as_str();
        let after = m.end();
        if s.ends_with(':') && !s.ends_with("::") {
            // A colon after the address ("at fe80::1: …").
            s = &s[..s.len() - 1];
            range.end -= 1;
        }
        let ok = s.parse::<std::net::Ipv6Addr>().is_ok()
            && s.bytes().any(|b| b.is_ascii_digit())
            && !prev_char(text, range.start)
                .is_some_and(|c| c.is_alphanumeric() || c == ':' || c == '.')
            && !next_char(text, after).is_some_and(|c| c.is_alphanumeric() || c == ':');
        ok.then_some(range)
    })
}

fn phones(text: &str) -> Vec<Range<usize>> {
    static INTERNATIONAL: LazyLock<Regex> = LazyLock::new(|| {
        pattern(r"\+[1-9][0-9]{0,3}(?:[ .\-]?(?:\([0-9]{1,4}\)|[0-9]{1,5})){1,8}")
    });
    static FRENCH: LazyLock<Regex> = LazyLock::new(|| pattern(r"0[1-9](?:[ .\-]?[0-9]{2}){4}"));
    static NANP: LazyLock<Regex> = LazyLock::new(|| {
        pattern(r"(?:\([2-9][0-9]{2}\) ?|[2-9][0-9]{2}[.\-])[2-9][0-9]{2}[.\-][0-9]{4}")
    });
    let mut out = Vec::new();
    for m in INTERNATIONAL.find_iter(text) {
        let s = m.as_str();
        let trunk = s.contains("(0)");
        let digits = s.bytes().filter(u8::is_ascii_digit).count() - usize::from(trunk);
        let opens = s.matches('(').count();
        let range = m.range();
        if (8..=15).contains(&digits)
            && opens <= 1
            && opens == s.matches(')').count()
            && !s.ends_with(')')
            && !prev_char(text, range.start).is_some_and(|c| c.is_alphanumeric() || c == '+')
            && !next_char(text, range.end).is_some_and(char::is_alphanumeric)
        {
            out.push(range);
        }
    }
    for m in FRENCH.find_iter(text) {
        let range = m.range();
        if one_separator(m.as_str(), &[' ', '.', '-']).is_some()
            && prev_char(text, range.start) != Some('+')
            && stands_alone(text, &range)
            && not_in_longer_number(text, &range, &[' ', '.', '-'])
        {
            out.push(range);
        }
    }
    for m in NANP.find_iter(text) {
        let range = m.range();
        let s = m.as_str();
        let consistent = s.starts_with('(') || one_separator(s, &['.', '-']).is_some();
        let open_ok =
            !s.starts_with('(') || !prev_char(text, range.start).is_some_and(char::is_alphanumeric);
        if consistent
            && open_ok
            && !next_char(text, range.end).is_some_and(char::is_alphanumeric)
            && (s.starts_with('(') || stands_alone(text, &range))
            && not_in_longer_number(text, &range, &[' ', '.', '-'])
        {
            out.push(range);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A valid NIR (sex 2, 1955, August) whose digits also pass the Luhn check.
    const NIR_AND_LUHN: &str = "255081416812040";

    fn found(text: &str) -> Vec<(&'static str, &str)> {
        detect(text, EntityType::ALL)
            .into_iter()
            .map(|d| (d.entity.as_str(), &text[d.bytes]))
            .collect()
    }

    fn only(text: &str) -> (&'static str, &str) {
        let f = found(text);
        assert_eq!(f.len(), 1, "{text}: {f:?}");
        f[0]
    }

    #[test]
    fn luhn_on_the_card_networks_test_numbers() {
        for valid in [
            "4111111111111111",
            "5555555555554444",
            "378282246310005",
            "6011111111111117",
            "4222222222222",
            "79927398713",
        ] {
            assert!(luhn_valid(valid), "{valid}");
        }
        for invalid in ["4111111111111112", "79927398710", "", "7", "4111 1111"] {
            assert!(!luhn_valid(invalid), "{invalid}");
        }
    }

    #[test]
    fn cards_are_found_with_separators_and_checked() {
        assert_eq!(
            only("pay with 4111 1111 1111 1111 today"),
            ("CREDIT_CARD", "4111 1111 1111 1111")
        );
        assert_eq!(
            only("4111-1111-1111-1111."),
            ("CREDIT_CARD", "4111-1111-1111-1111")
        );
        assert_eq!(
            only("Amex 3782 822463 10005"),
            ("CREDIT_CARD", "3782 822463 10005")
        );
        assert_eq!(
            only("card 5555555555554444, exp 12/29"),
            ("CREDIT_CARD", "5555555555554444")
        );
        // Followed by other digit groups: the valid window is kept.
        assert_eq!(
            only("4111 1111 1111 1111 2024"),
            ("CREDIT_CARD", "4111 1111 1111 1111")
        );
        for not_a_card in [
            "4111 1111 1111 1112",       // Luhn fails
            "0000 0000 0000 0000",       // repeated digit (and a leading 0)
            "4111 1111-1111 1111",       // mixed separators
            "ref4111111111111111",       // glued to a word
            "4111  1111 1111 1111",      // double space: groups too short on their own
            "8111 1111 1111 1116",       // outside the networks' ranges
            "1111111111111111111111111", // a long number, not a card
        ] {
            assert!(
                found(not_a_card).iter().all(|(e, _)| *e != "CREDIT_CARD"),
                "{not_a_card}: {:?}",
                found(not_a_card)
            );
        }
    }

    #[test]
    fn ibans_from_the_registry_examples() {
        for iban in [
            "DE89 3704 0044 0532 0130 00",
            "GB82 WEST 1234 5698 7654 32",
            "FR14 2004 1010 0505 0001 3M02 606",
            "NL91 ABNA 0417 1643 00",
            "BE68 5390 0754 7034",
            "CH93 0076 2011 6238 5295 7",
            "IT60 X054 2811 1010 0000 0123 456",
            "NO93 8601 1117 947",
            "MT84 MALT 0110 0001 2345 MTLC AST0 01S",
            "SC18 SSCB 1101 0000 0000 0000 1497 USD",
        ] {
            assert!(iban_valid(&iban.replace(' ', "")), "{iban}");
            let text = format!("Virement sur {iban}, merci.");
            assert_eq!(only(&text), ("IBAN", iban), "{text}");
            let compact = iban.replace(' ', "");
            assert_eq!(
                only(&format!("IBAN: {compact}")),
                ("IBAN", compact.as_str())
            );
        }
        // The country's length ends it, even before another upper-case word.
        assert_eq!(
            only("FR76 3000 6000 0112 3456 7890 189 IS the account"),
            ("IBAN", "FR76 3000 6000 0112 3456 7890 189")
        );
        for bad in [
            "DE89370400440532013001",      // check digits
            "GB82WEST12345698765423",      // transposed digits
            "GB82 1234 1234 5698 7654 32", // letters expected in the bank code
            "XX89370400440532013000",      // no such country
            "DE8937040044053201300",       // one short
            "DE89 3704 00440532 0130 00",  // irregular grouping
        ] {
            assert!(found(bad).iter().all(|(e, _)| *e != "IBAN"), "{bad}");
        }
        assert!(
            !iban_valid("GB82 WEST 1234 5698 7654 32"),
            "compact form only"
        );
        assert_eq!(iban_length("FR"), Some(27));
        assert_eq!(iban_length("NO"), Some(15));
    }

    #[test]
    fn us_ssn_rules() {
        assert_eq!(only("SSN 536-90-4399."), ("US_SSN", "536-90-4399"));
        assert_eq!(only("SSN 536 90 4399"), ("US_SSN", "536 90 4399"));
        for bad in [
            "000-12-3456",
            "666-12-3456",
            "900-12-3456",
            "123-00-4567",
            "123-45-0000",
            "078-05-1120",
            "536-90 4399",
            "1-536-90-4399",
        ] {
            assert!(
                found(bad).iter().all(|(e, _)| *e != "US_SSN"),
                "{bad}: {:?}",
                found(bad)
            );
        }
        assert!(us_ssn_valid("536904399"));
        assert!(!us_ssn_valid("536-904-399"));
    }

    #[test]
    fn french_nir_with_its_key() {
        assert!(fr_nir_key_valid("185057800608491"));
        assert!(fr_nir_key_valid("255081416802538"));
        assert!(fr_nir_key_valid("189122A12345646"), "2A counts as 19");
        assert!(fr_nir_key_valid("289122B12345623"), "2B counts as 18");
        assert!(!fr_nir_key_valid("185057800608492"));
        assert_eq!(
            only("NIR : 1 85 05 78 006 084 91"),
            ("FR_NIR", "1 85 05 78 006 084 91")
        );
        assert_eq!(only("n° 255081416802538."), ("FR_NIR", "255081416802538"));
        assert_eq!(
            only("1 89 12 2A 123 456 46"),
            ("FR_NIR", "1 89 12 2A 123 456 46")
        );
        // A wrong key, an impossible month, an impossible sex digit.
        for bad in [
            "1 85 05 78 006 084 92",
            "1 85 13 78 006 084 39",
            "5 85 05 78 006 084 91",
        ] {
            assert!(found(bad).iter().all(|(e, _)| *e != "FR_NIR"), "{bad}");
        }
    }

    #[test]
    fn emails() {
        assert_eq!(
            only("write to jane.doe+rag@mail.example.co.uk."),
            ("EMAIL", "jane.doe+rag@mail.example.co.uk")
        );
        assert_eq!(
            only("(support@example.com)"),
            ("EMAIL", "support@example.com")
        );
        for bad in [
            "jane..doe@example.com",
            "jane.@example.com",
            "@example.com",
            "jane@example",
            "jane@exa_mple.com",
            "x@y.c",
        ] {
            assert!(
                found(bad).iter().all(|(e, _)| *e != "EMAIL"),
                "{bad}: {:?}",
                found(bad)
            );
        }
    }

    #[test]
    fn ip_addresses() {
        assert_eq!(only("host 192.168.1.20 is up"), ("IPV4", "192.168.1.20"));
        assert_eq!(
            only("ping 2001:db8::8a2e:370:7334 now"),
            ("IPV6", "2001:db8::8a2e:370:7334")
        );
        assert_eq!(only("at fe80::1: unreachable"), ("IPV6", "fe80::1"));
        assert_eq!(
            only("mapped ::ffff:192.0.2.1"),
            ("IPV6", "::ffff:192.0.2.1")
        );
        assert_eq!(only("loopback ::1"), ("IPV6", "::1"));
        for bad in [
            "256.1.1.1",
            "192.168.01.1",
            "1.2.3.4.5",
            "v1.2.3.4",
            "12:30:45",
            "std::vec::Vec",
            "cafe::babe",
            "a::",
            "1:2:3:4:5:6:7:8:9",
        ] {
            assert!(found(bad).is_empty(), "{bad}: {:?}", found(bad));
        }
    }

    #[test]
    fn phones() {
        for (text, phone) in [
            ("call +33 6 12 34 56 78 now", "+33 6 12 34 56 78"),
            ("+33612345678", "+33612345678"),
            ("+44 (0)20 7946 0958.", "+44 (0)20 7946 0958"),
            ("+1 (415) 555-2671", "+1 (415) 555-2671"),
            ("appelez le 06 12 34 56 78", "06 12 34 56 78"),
            ("01.23.45.67.89", "01.23.45.67.89"),
            ("0612345678", "0612345678"),
            ("(415) 555-2671", "(415) 555-2671"),
            ("415-555-2671", "415-555-2671"),
            ("415.555.2671", "415.555.2671"),
        ] {
            assert_eq!(only(text), ("PHONE", phone), "{text}");
        }
        for bad in [
            "+33 6 12",            // too few digits
            "+1234567890123456",   // too many
            "06 12.34 56 78",      // mixed separators
            "12 06 12 34 56 78",   // inside a longer number
            "415-555.2671",        // mixed separators
            "115-555-2671",        // area code 1xx
            "2024-01-15",          // a date
            "order 0612345678901", // a longer number
            "+0 612 345 678",      // no country code 0
        ] {
            assert!(
                found(bad).iter().all(|(e, _)| *e != "PHONE"),
                "{bad}: {:?}",
                found(bad)
            );
        }
    }

    #[test]
    fn overlaps_go_to_the_stronger_check() {
        // An IBAN's digit groups are not also a phone number or a card.
        let text = "FR76 3000 6000 0112 3456 7890 189";
        let d = detect(text, &[EntityType::Phone, EntityType::CreditCard]);
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(only("FR76 3000 6000 0112 3456 7890 189").0, "IBAN");
        // A NIR that also passes Luhn is a NIR.
        assert!(luhn_valid(NIR_AND_LUHN) && fr_nir_key_valid(NIR_AND_LUHN));
        assert_eq!(only(NIR_AND_LUHN).0, "FR_NIR");
    }

    #[test]
    fn offsets_are_characters_and_masks_hide_the_digits() {
        let text = "Réf. élève : 4111 1111 1111 1111 — écrire à zoé@x.fr ou jean@exemple.fr";
        let d = detect(text, EntityType::ALL);
        assert_eq!(d.len(), 2, "{d:?}");
        let chars: Vec<char> = text.chars().collect();
        let at = |i: usize| chars[d[i].start..d[i].end].iter().collect::<String>();
        assert_eq!(at(0), "4111 1111 1111 1111");
        assert_eq!(d[0].start, 13);
        assert_eq!(at(1), "jean@exemple.fr");
        assert_eq!(d[1].span().label, "EMAIL");
        assert_eq!(d[0].masked(text), "4*** **** **** 1111");
        assert_eq!(d[1].masked(text), "j***@*******.fr");
        assert_eq!(
            mask(EntityType::Iban, "FR76 3000 6000 0112 3456 7890 189"),
            "FR** **** **** **** **** ***0 189"
        );
        assert_eq!(mask(EntityType::UsSsn, "536-90-4399"), "***-**-4399");
        assert_eq!(
            mask(EntityType::Phone, "+33 6 12 34 56 78"),
            "+** * ** ** ** 78"
        );
        assert_eq!(
            mask(EntityType::FrNir, "1 85 05 78 006 084 91"),
            "1 ** ** ** *** *** **"
        );
        assert_eq!(mask(EntityType::Ipv4, "192.168.1.20"), "192.***.*.**");
        assert_eq!(mask(EntityType::Ipv6, "2001:db8::1"), "2001:***::*");
    }

    #[test]
    fn selection_and_names() {
        let text = "jane@example.com, 415-555-2671";
        let d = detect(text, &[EntityType::Phone]);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].entity, EntityType::Phone);
        assert_eq!(
            "CREDIT_CARD".parse::<EntityType>(),
            Ok(EntityType::CreditCard)
        );
        let err = "CREDITCARD".parse::<EntityType>().unwrap_err();
        assert!(err.to_string().contains("one of EMAIL"), "{err}");
        assert_eq!(EntityType::names().count(), EntityType::ALL.len());
        assert!(detect("", EntityType::ALL).is_empty());
        assert!(detect("nothing personal here, 14 days.", EntityType::ALL).is_empty());
    }
}
