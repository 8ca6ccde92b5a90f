//! Bounded, adaptive concurrency per endpoint, and the retry delays.
//!
//! Every [`JudgeClient`](crate::JudgeClient) of one `base_url` shares one [`Limiter`] (a
//! process-wide registry keyed by the normalised URL; its ceiling is the smallest
//! `max_concurrency` among those clients). A 429 halves the current limit (at least 1) once per
//! "generation": requests that started before the last decrease do not decrease it again, so a
//! burst of 429s from one overload halves the limit once, not eight times. After as many
//! consecutive successes as the current limit, the limit grows back by one, up to the ceiling
//! (additive increase, multiplicative decrease).

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[derive(Debug)]
struct State {
    ceiling: usize,
    limit: usize,
    in_flight: usize,
    successes: usize,
    generation: u64,
}

/// A counting semaphore whose size adapts to rate limiting.
#[derive(Debug)]
pub(crate) struct Limiter {
    state: Mutex<State>,
    freed: Condvar,
}

/// One slot; released on drop.
pub(crate) struct Permit {
    limiter: Arc<Limiter>,
    generation: u64,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut s = self.limiter.lock();
        s.in_flight = s.in_flight.saturating_sub(1);
        drop(s);
        self.limiter.freed.notify_all();
    }
}

impl Limiter {
    pub(crate) fn new(ceiling: usize) -> Self {
        let ceiling = ceiling.max(1);
        Limiter {
            state: Mutex::new(State {
                ceiling,
                limit: ceiling,
                in_flight: 0,
                successes: 0,
                generation: 0,
            }),
            freed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock leaves only counters behind: keep going.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for a free slot.
    pub(crate) fn acquire(self: &Arc<Self>) -> Permit {
        let mut s = self.lock();
        while s.in_flight >= s.limit {
            s = self.freed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        s.in_flight += 1;
        Permit {
            limiter: Arc::clone(self),
            generation: s.generation,
        }
    }

    /// A request finished without being rate limited.
    pub(crate) fn on_success(&self) {
        let mut s = self.lock();
        if s.limit < s.ceiling {
            s.successes += 1;
            if s.successes >= s.limit {
                s.limit += 1;
                s.successes = 0;
            }
        }
        drop(s);
        self.freed.notify_all();
    }

    /// The request holding `permit` got a 429.
    pub(crate) fn on_rate_limited(&self, permit: &Permit) {
        let mut s = self.lock();
        if permit.generation == s.generation {
            s.limit = (s.limit / 2).max(1);
            s.successes = 0;
            s.generation += 1;
        }
    }

    /// The current limit.
    pub(crate) fn limit(&self) -> usize {
        self.lock().limit
    }

    /// The largest limit (the smallest `max_concurrency` of the endpoint's clients).
    fn lower_ceiling(&self, ceiling: usize) {
        let mut s = self.lock();
        if ceiling.max(1) < s.ceiling {
            s.ceiling = ceiling.max(1);
            s.limit = s.limit.min(s.ceiling);
        }
    }
}

/// The shared limiter of an endpoint.
pub(crate) fn for_endpoint(base_url: &str, max_concurrency: usize) -> Arc<Limiter> {
    static REGISTRY: OnceLock<Mutex<HashMap<String, Arc<Limiter>>>> = OnceLock::new();
    let key = base_url.trim_end_matches('/').to_ascii_lowercase();
    let mut map = REGISTRY
        .get_or_init(|| Mutex::new(HashMap::new()))
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let limiter = map
        .entry(key)
        .or_insert_with(|| Arc::new(Limiter::new(max_concurrency)))
        .clone();
    limiter.lower_ceiling(max_concurrency);
    limiter
}

/// How long to wait before retry number `retry` (1-based) after a 5xx, a timeout or a
/// connection error: exponential from `base`, capped at `max`, with "equal jitter" (a uniform
/// draw in the upper half of the window), so concurrent workers do not retry in lockstep.
pub(crate) fn backoff(base: Duration, max: Duration, retry: u32) -> Duration {
    let exp = base.saturating_mul(1u32 << retry.saturating_sub(1).min(16));
    let window = exp.min(max);
    let half = window / 2;
    half + half.mul_f64(unit_random())
}

fn unit_random() -> f64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Parses a `Retry-After` value: delay seconds (`"2"`, also `"1.5"` as some servers send), or
/// an HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110 IMF-fixdate), measured from `now`.
/// A date in the past means "now".
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = parse_http_date(v)?;
    let now_s = now.duration_since(UNIX_EPOCH).ok()?.as_secs() as i64;
    Some(Duration::from_secs((at - now_s).max(0) as u64))
}

/// Seconds since the Unix epoch of an IMF-fixdate.
fn parse_http_date(v: &str) -> Option<i64> {
    // "Sun, 06 Nov 1994 08:49:37 GMT"
    let rest = v.split_once(", ")?.1;
    let parts: Vec<&str> = rest.split_whitespace().collect();
    if parts.len() != 5 || parts[4] != "GMT" {
        return None;
    }
    let day: i64 = parts[0].parse().ok()?;
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| *m == parts[1])? as i64 + 1;
    let year: i64 = parts[2].parse().ok()?;
    let hms: Vec<i64> = parts[3]
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    if hms.len() != 3 || !(1..=31).contains(&day) {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hms[0] * 3600 + hms[1] * 60 + hms[2])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_seconds_and_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_770); // Sun, 06 Nov 1994 08:49:30 GMT
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after("0.5", now),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            parse_http_date("Tue, 29 Feb 2028 12:00:00 GMT"),
            Some(1_835_438_400)
        );
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let base = Duration::from_millis(100);
        let max = Duration::from_secs(1);
        for _ in 0..50 {
            let d1 = backoff(base, max, 1);
            assert!(d1 >= Duration::from_millis(50) && d1 <= base, "{d1:?}");
            let d3 = backoff(base, max, 3);
            assert!(
                d3 >= Duration::from_millis(200) && d3 <= Duration::from_millis(400),
                "{d3:?}"
            );
            assert!(backoff(base, max, 30) <= max);
        }
    }

    #[test]
    fn halves_once_per_generation_and_grows_back() {
        let l = Arc::new(Limiter::new(8));
        let a = l.acquire();
        let b = l.acquire();
        l.on_rate_limited(&a);
        l.on_rate_limited(&b); // same overload: no second halving
        assert_eq!(l.limit(), 4);
        drop((a, b));
        let c = l.acquire();
        l.on_rate_limited(&c);
        assert_eq!(l.limit(), 2);
        drop(c);
        for _ in 0..2 {
            l.on_success();
        }
        assert_eq!(l.limit(), 3);
        for _ in 0..100 {
            l.on_success();
        }
        assert_eq!(l.limit(), 8);
    }
}
