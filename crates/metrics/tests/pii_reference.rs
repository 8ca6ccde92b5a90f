//! The PII detectors' checks (`oloproof_metrics::pii`) against python-stdnum 2.2, on seeded
//! random numbers through `pii_reference.py` beside this file:
//! - Luhn on random digit strings of 2–19 digits (about one in ten valid);
//! - IBAN: for every country of the registry, random BBANs in and out of its structure, each
//!   with every pair of check digits (exactly one valid per in-structure BBAN), plus lengths
//!   one off;
//! - US SSN on random numbers biased to the excluded areas, groups and serials and the
//!   publicised numbers;
//! - French NIR: random bases (some in Corsica, `2A`/`2B`) with every key 00–99.
//!
//! Every string is also checked to be decided as stdnum decides it, so the detectors report
//! exactly the numbers a standard validator accepts. The interpreter comes from
//! `OLOPROOF_REFERENCE_PYTHON`; without it the test is skipped with a note, unless
//! `OLOPROOF_REQUIRE_REFERENCES=1`.

use std::path::Path;

use oloproof_metrics::pii::{
    detect, fr_nir_key_valid, iban_valid, luhn_valid, us_ssn_valid, EntityType, IBAN_BBAN,
};
use oloproof_reference::{run_json, SplitMix64};
use serde_json::{json, Value};

fn digits(rng: &mut SplitMix64, n: usize) -> String {
    (0..n)
        .map(|_| char::from(b'0' + rng.below(10) as u8))
        .collect()
}

fn letters(rng: &mut SplitMix64, n: usize) -> String {
    (0..n)
        .map(|_| char::from(b'A' + rng.below(26) as u8))
        .collect()
}

/// A random BBAN of `structure` (registry notation); with `break_one`, one character of the
/// wrong class where the class allows only digits or only letters.
fn bban(rng: &mut SplitMix64, structure: &str, break_one: bool) -> String {
    let mut out = String::new();
    let mut kinds = Vec::new();
    for part in structure.split_inclusive(['n', 'a', 'c']) {
        let (count, class) = part.split_at(part.len() - 1);
        let count: usize = count.trim_end_matches('!').parse().unwrap();
        for _ in 0..count {
            let c = match class {
                "n" => digits(rng, 1),
                "a" => letters(rng, 1),
                _ if rng.below(2) == 0 => digits(rng, 1),
                _ => letters(rng, 1),
            };
            out.push_str(&c);
            kinds.push(class.to_string());
        }
    }
    if break_one {
        let strict: Vec<usize> = (0..kinds.len()).filter(|&i| kinds[i] != "c").collect();
        if let Some(&i) = strict.get(rng.below(strict.len().max(1))) {
            let wrong = if kinds[i] == "n" {
                letters(rng, 1)
            } else {
                digits(rng, 1)
            };
            out.replace_range(i..i + 1, &wrong);
        }
    }
    out
}

#[test]
fn checks_agree_with_python_stdnum() {
    let Some(python) = oloproof_reference::reference_python("python-stdnum PII comparison") else {
        return;
    };
    let mut rng = SplitMix64(20_260_916);

    let luhn: Vec<String> = (0..3000)
        .map(|_| {
            let n = 2 + rng.below(18);
            digits(&mut rng, n)
        })
        .collect();

    let mut iban: Vec<String> = Vec::new();
    for (country, structure) in IBAN_BBAN {
        for variant in 0..3 {
            let mut b = bban(&mut rng, structure, variant == 2);
            for check in 0..100 {
                iban.push(format!("{country}{check:02}{b}"));
            }
            if variant == 1 {
                // One character too many, then one too few.
                b.push_str(&digits(&mut rng, 1));
                iban.push(format!("{country}00{b}"));
                b.truncate(b.len() - 2);
                for check in 0..100 {
                    iban.push(format!("{country}{check:02}{b}"));
                }
            }
        }
    }

    let special = ["000", "666", "900", "999", "078", "219", "457"];
    let mut ssn: Vec<String> = (0..3000)
        .map(|_| {
            let area = match rng.below(4) {
                0 => rng.pick(&special).to_string(),
                _ => digits(&mut rng, 3),
            };
            let group = if rng.below(6) == 0 {
                "00".to_string()
            } else {
                digits(&mut rng, 2)
            };
            let serial = if rng.below(6) == 0 {
                "0000".to_string()
            } else {
                digits(&mut rng, 4)
            };
            format!("{area}-{group}-{serial}")
        })
        .collect();
    ssn.extend(["078-05-1120", "219-09-9999", "457-55-5462", "536-90-4399"].map(String::from));

    let mut nir: Vec<String> = Vec::new();
    for i in 0..30 {
        let dept = match i % 5 {
            0 => "2A".to_string(),
            1 => "2B".to_string(),
            _ => digits(&mut rng, 2),
        };
        let base = format!(
            "{}{}{dept}{}",
            rng.pick(&["1", "2", "3", "7", "8"]),
            digits(&mut rng, 4),
            digits(&mut rng, 6)
        );
        for key in 0..100 {
            nir.push(format!("{base}{key:02}"));
        }
    }

    let cases = json!({"luhn": luhn, "iban": iban, "ssn": ssn, "nir": nir});
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pii_reference.py");
    let answers = run_json(&python, &script, &[], &cases);

    type Check = fn(&str) -> bool;
    let checks: [(&str, Check); 4] = [
        ("luhn", luhn_valid),
        ("iban", iban_valid),
        ("ssn", us_ssn_valid),
        ("nir", fr_nir_key_valid),
    ];
    for (key, check) in checks {
        let inputs = cases[key].as_array().unwrap();
        let expected = answers[key].as_array().unwrap();
        assert_eq!(inputs.len(), expected.len(), "{key}");
        let mut valid = 0;
        for (input, want) in inputs.iter().zip(expected) {
            let s = input.as_str().unwrap();
            assert_eq!(Value::Bool(check(s)), *want, "{key}: {s}");
            valid += usize::from(want == &Value::Bool(true));
        }
        // Both outcomes are exercised.
        assert!(valid > 0 && valid < inputs.len(), "{key}: {valid} valid");
    }

    // The detectors find exactly the valid ones (printed as people print them).
    for (input, want) in cases["iban"]
        .as_array()
        .unwrap()
        .iter()
        .zip(answers["iban"].as_array().unwrap())
    {
        let compact = input.as_str().unwrap();
        let printed: Vec<String> = compact
            .as_bytes()
            .chunks(4)
            .map(|c| String::from_utf8(c.to_vec()).unwrap())
            .collect();
        let text = format!("IBAN {} .", printed.join(" "));
        let found = detect(&text, &[EntityType::Iban]);
        assert_eq!(!found.is_empty(), want == &Value::Bool(true), "{text}");
    }
}
