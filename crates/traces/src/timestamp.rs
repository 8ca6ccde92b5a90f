//! Timestamps as the span exports of other tools write them, to nanoseconds since the Unix
//! epoch.
//!
//! Accepted (ISO 8601 / RFC 3339, what Phoenix's REST API, pandas' `to_json(date_format="iso")`
//! and Langfuse's API and exports write):
//! - `2024-05-29T13:46:19Z`, `2024-05-29T13:46:19.963Z` (Langfuse's API: milliseconds and `Z`),
//!   `2024-05-29T13:46:19.963123+00:00` (Phoenix: Python's `isoformat()`),
//!   `2024-05-29T15:46:19.963+02:00`, `…+0200`, `…-05`;
//! - a space instead of `T`: `2024-05-29 13:46:19.963000` (Langfuse's blob-storage export:
//!   microseconds, UTC, no zone);
//! - 1 to 9 fractional digits (more are an error, not rounded);
//! - no zone at all: read as UTC (both tools write UTC; the message of a problem says so).
//!
//! A number is not read here: callers decide its unit (pandas writes epoch milliseconds).

/// Why a timestamp could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not an ISO 8601 timestamp ({reason}); expected e.g. 2024-05-29T13:46:19.963Z")]
pub struct TimestampError {
    /// The text given.
    pub text: String,
    /// What was wrong.
    pub reason: &'static str,
}

/// Nanoseconds since the Unix epoch of an ISO 8601 / RFC 3339 timestamp (see the module doc).
/// Times before 1970 are an error (spans are not that old), and so are times after 2554
/// (nanoseconds since 1970 no longer fit in 64 bits).
pub fn parse_iso8601(text: &str) -> Result<u64, TimestampError> {
    let err = |reason| TimestampError {
        text: text.to_string(),
        reason,
    };
    let s = text.trim().as_bytes();
    if s.len() < 19 {
        return Err(err("too short for a date and a time"));
    }
    let digits = |from: usize, n: usize| -> Option<i64> {
        let part = s.get(from..from + n)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0i64, |a, b| a * 10 + i64::from(b - b'0')))
    };
    let (Some(y), Some(mo), Some(d)) = (digits(0, 4), digits(5, 2), digits(8, 2)) else {
        return Err(err("the date is not YYYY-MM-DD"));
    };
    if s[4] != b'-' || s[7] != b'-' {
        return Err(err("the date is not YYYY-MM-DD"));
    }
    if s[10] != b'T' && s[10] != b't' && s[10] != b' ' {
        return Err(err(
            "the date and the time must be separated by `T` or a space",
        ));
    }
    let (Some(h), Some(mi), Some(sec)) = (digits(11, 2), digits(14, 2), digits(17, 2)) else {
        return Err(err("the time is not HH:MM:SS"));
    };
    if s[13] != b':' || s[16] != b':' {
        return Err(err("the time is not HH:MM:SS"));
    }
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) {
        return Err(err("no such date"));
    }
    if h > 23 || mi > 59 || sec > 60 {
        return Err(err("no such time of day"));
    }
    let mut i = 19;
    let mut nanos: i64 = 0;
    if s.get(i) == Some(&b'.') || s.get(i) == Some(&b',') {
        i += 1;
        let start = i;
        while s.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let n = i - start;
        if n == 0 {
            return Err(err("a decimal point without digits"));
        }
        if n > 9 {
            return Err(err("more than 9 fractional digits"));
        }
        let frac = s[start..i]
            .iter()
            .fold(0i64, |a, b| a * 10 + i64::from(b - b'0'));
        nanos = frac * 10i64.pow(9 - n as u32);
    }
    let offset_s: i64 = match s.get(i) {
        None => 0,
        Some(b'Z') | Some(b'z') if i + 1 == s.len() => 0,
        Some(&sign @ (b'+' | b'-')) => {
            let rest = &s[i + 1..];
            let (oh, om) = match rest.len() {
                2 => (digits(i + 1, 2), Some(0)),
                4 => (digits(i + 1, 2), digits(i + 3, 2)),
                5 if rest[2] == b':' => (digits(i + 1, 2), digits(i + 4, 2)),
                _ => (None, None),
            };
            let (Some(oh), Some(om)) = (oh, om) else {
                return Err(err("the zone offset is not ±HH:MM"));
            };
            if oh > 23 || om > 59 {
                return Err(err("the zone offset is out of range"));
            }
            let off = oh * 3600 + om * 60;
            if sign == b'+' {
                off
            } else {
                -off
            }
        }
        Some(_) => return Err(err("unexpected text after the time")),
    };
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_s;
    if secs < 0 {
        return Err(err("before 1970"));
    }
    (secs as u64)
        .checked_mul(1_000_000_000)
        .and_then(|ns| ns.checked_add(nanos as u64))
        .ok_or_else(|| err("after 2554, beyond nanoseconds since 1970 in 64 bits"))
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(y) => 29,
        _ => 28,
    }
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assemble::rfc3339;

    const BASE: u64 = 1_716_990_379_000_000_000; // 2024-05-29T13:46:19Z

    #[test]
    fn every_written_form() {
        assert_eq!(parse_iso8601("2024-05-29T13:46:19Z"), Ok(BASE));
        assert_eq!(
            parse_iso8601("2024-05-29T13:46:19.963Z"),
            Ok(BASE + 963_000_000)
        );
        assert_eq!(
            parse_iso8601("2024-05-29 13:46:19.963000"),
            Ok(BASE + 963_000_000)
        );
        assert_eq!(
            parse_iso8601("2024-05-29T13:46:19.963123+00:00"),
            Ok(BASE + 963_123_000)
        );
        assert_eq!(
            parse_iso8601("2024-05-29T15:46:19.5+02:00"),
            Ok(BASE + 500_000_000)
        );
        assert_eq!(parse_iso8601("2024-05-29T08:46:19-0500"), Ok(BASE));
        assert_eq!(parse_iso8601("2024-05-29T14:46:19+01"), Ok(BASE));
        assert_eq!(
            parse_iso8601("2024-05-29T13:46:19.123456789Z"),
            Ok(BASE + 123_456_789)
        );
        assert_eq!(parse_iso8601("1970-01-01T00:00:00Z"), Ok(0));
    }

    #[test]
    fn round_trips_through_rfc3339_on_random_instants() {
        // A small linear congruential sequence: deterministic, spread over 1970..2100.
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..2000 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let nanos = x % 4_102_444_800_000_000_000;
            assert_eq!(parse_iso8601(&rfc3339(nanos)), Ok(nanos), "{nanos}");
        }
    }

    #[test]
    fn malformed_ones_say_why() {
        for (bad, why) in [
            ("2024-05-29", "too short"),
            ("2024/05/29T13:46:19Z", "YYYY-MM-DD"),
            ("2024-02-30T13:46:19Z", "no such date"),
            ("2023-02-29T00:00:00Z", "no such date"),
            ("2024-05-29T25:46:19Z", "no such time"),
            ("2024-05-29T13:46:19.Z", "without digits"),
            ("2024-05-29T13:46:19.1234567891Z", "more than 9"),
            ("2024-05-29T13:46:19+2", "offset"),
            ("2024-05-29T13:46:19 UTC", "unexpected text"),
            ("1969-12-31T23:59:59Z", "before 1970"),
            // Found by the `langfuse` fuzz target: nanoseconds overflowed 64 bits.
            ("9999-12-31T23:59:59Z", "after 2554"),
        ] {
            let e = parse_iso8601(bad).unwrap_err();
            assert!(e.reason.contains(why), "{bad}: {e}");
            assert!(e.to_string().contains(bad), "{e}");
        }
        assert!(parse_iso8601("2024-02-29T00:00:00Z").is_ok());
    }
}
