//! Index freshness (seed 000, "délai de fraîcheur des mises à jour"): the time from a
//! document's update (commit) to its availability in retrieval, from RFC 3339 timestamps. The
//! p50 and p99 the seed asks for are quantiles of [`lag_seconds`] over documents
//! (`oloproof_stats::quantile`, numpy's linear definition).

use thiserror::Error;

/// An instant: whole seconds since 1970-01-01T00:00:00Z and nanoseconds within the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Instant {
    /// Seconds since the Unix epoch (negative before 1970).
    pub seconds: i64,
    /// Nanoseconds, `0..1_000_000_000`.
    pub nanos: u32,
}

/// Why a timestamp is not RFC 3339.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("`{text}` is not an RFC 3339 timestamp ({reason}; expected e.g. 2024-05-01T12:00:00Z or 2024-05-01T14:00:00.5+02:00)")]
pub struct TimestampError {
    /// The text given.
    pub text: String,
    /// What is wrong.
    pub reason: &'static str,
}

/// Parses an RFC 3339 `date-time`: `YYYY-MM-DD`, `T` (or `t` or a space, which RFC 3339 §5.6
/// allows), `hh:mm:ss`, an optional fraction of any length (truncated to nanoseconds), and `Z`
/// or a `±hh:mm` offset. A leap second (`:60`) is rejected, as Python's `datetime` does.
///
/// # Errors
///
/// [`TimestampError`] naming the first problem.
///
/// ```
/// use oloproof_metrics::rag::freshness::parse_rfc3339;
///
/// let a = parse_rfc3339("2024-05-01T12:00:00Z")?;
/// let b = parse_rfc3339("2024-05-01T14:00:00.25+02:00")?;
/// assert_eq!((b.seconds - a.seconds, b.nanos), (0, 250_000_000));
/// # Ok::<(), oloproof_metrics::rag::freshness::TimestampError>(())
/// ```
pub fn parse_rfc3339(text: &str) -> Result<Instant, TimestampError> {
    let err = |reason| TimestampError {
        text: text.to_string(),
        reason,
    };
    let b = text.as_bytes();
    let num = |range: std::ops::Range<usize>, what| -> Result<i64, TimestampError> {
        let s = b.get(range).ok_or_else(|| err(what))?;
        if s.iter().all(u8::is_ascii_digit) {
            Ok(s.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0')))
        } else {
            Err(err(what))
        }
    };
    let sep = |i: usize, c: &[u8], what| {
        if b.get(i).is_some_and(|x| c.contains(x)) {
            Ok(())
        } else {
            Err(err(what))
        }
    };
    let year = num(0..4, "year")?;
    sep(4, b"-", "date separator")?;
    let month = num(5..7, "month")?;
    sep(7, b"-", "date separator")?;
    let day = num(8..10, "day")?;
    sep(10, b"Tt ", "date-time separator")?;
    let hour = num(11..13, "hour")?;
    sep(13, b":", "time separator")?;
    let minute = num(14..16, "minute")?;
    sep(16, b":", "time separator")?;
    let second = num(17..19, "second")?;
    if !(1..=12).contains(&month) {
        return Err(err("month out of range"));
    }
    if day < 1 || day > days_in_month(year, month) {
        return Err(err("day out of range"));
    }
    if hour > 23 || minute > 59 || second > 59 {
        return Err(err("time out of range"));
    }
    let mut i = 19;
    let mut nanos = 0u32;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        let mut scale = 100_000_000u32;
        while let Some(d) = b.get(i).filter(|d| d.is_ascii_digit()) {
            nanos += u32::from(d - b'0') * scale;
            scale /= 10;
            i += 1;
        }
        if i == start {
            return Err(err("empty fraction"));
        }
    }
    let offset = match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(sign @ (b'+' | b'-')) if i + 6 == b.len() => {
            let h = num(i + 1..i + 3, "offset hour")?;
            sep(i + 3, b":", "offset separator")?;
            let m = num(i + 4..i + 6, "offset minute")?;
            if h > 23 || m > 59 {
                return Err(err("offset out of range"));
            }
            let o = h * 3600 + m * 60;
            if *sign == b'-' {
                -o
            } else {
                o
            }
        }
        None => return Err(err("missing time zone (Z or ±hh:mm)")),
        _ => return Err(err("bad time zone or trailing text")),
    };
    let days = days_from_civil(year, month, day);
    Ok(Instant {
        seconds: days * 86_400 + hour * 3600 + minute * 60 + second - offset,
        nanos,
    })
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The UTC calendar fields `(year, month, day, hour, minute, second)` of Unix milliseconds
/// (floored to the second).
pub fn utc_parts(ms: i64) -> (i64, i64, i64, i64, i64, i64) {
    let secs = ms.div_euclid(1000);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    (y, m, d, rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The proleptic Gregorian date `(year, month, day)` of a day count since 1970-01-01
/// (H. Hinnant, `civil_from_days`; the inverse of [`days_from_civil`]).
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant, "chrono-Compatible
/// Low-Level Date Algorithms", `days_from_civil`).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `later − earlier` in seconds (exact to the nanosecond before the conversion to `f64`).
pub fn seconds_between(earlier: Instant, later: Instant) -> f64 {
    let whole = later.seconds - earlier.seconds;
    let nanos = i64::from(later.nanos) - i64::from(earlier.nanos);
    whole as f64 + nanos as f64 * 1e-9
}

/// The freshness lag of one document: `indexed_at − updated_at` in seconds. Negative when the
/// index entry predates the update (the update is not yet indexed: a stale entry, which a
/// caller should report rather than average).
pub fn lag_seconds(updated_at: Instant, indexed_at: Instant) -> f64 {
    seconds_between(updated_at, indexed_at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_and_offsets() {
        let t = parse_rfc3339("1970-01-01T00:00:00Z").unwrap();
        assert_eq!(
            t,
            Instant {
                seconds: 0,
                nanos: 0
            }
        );
        let t = parse_rfc3339("2000-03-01T00:00:00+01:00").unwrap();
        assert_eq!(t.seconds, 951_865_200);
        let t = parse_rfc3339("1969-12-31t23:59:59.999999999999-00:00").unwrap();
        assert_eq!(
            t,
            Instant {
                seconds: -1,
                nanos: 999_999_999
            }
        );
        let t = parse_rfc3339("2024-02-29 12:00:00Z").unwrap();
        assert_eq!(t.seconds, 1_709_208_000);
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "2024-02-30T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T00:00:60Z",
            "2024-01-01T00:00:00",
            "2024-01-01T00:00:00.Z",
            "2024-01-01T00:00:00+0100",
            "2024-01-01",
            "2024-1-01T00:00:00Z",
            "2024-01-01T00:00:00Zjunk",
        ] {
            assert!(parse_rfc3339(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn lags() {
        let u = parse_rfc3339("2024-05-01T12:00:00Z").unwrap();
        let i = parse_rfc3339("2024-05-01T12:01:30.5Z").unwrap();
        assert_eq!(lag_seconds(u, i), 90.5);
        assert_eq!(lag_seconds(i, u), -90.5);
    }
}
