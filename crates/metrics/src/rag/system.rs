//! System-level accounting (seed 000, Part 8): cost per request from token counts and prices,
//! and cache hit rates per layer (embedding, retrieval, KV cache, …).

use std::collections::BTreeMap;

/// Cost of one request: `Σ_kind usage[kind] × prices[kind] + Σ fixed costs`, where a kind is a
/// priced quantity (`"generation_input"` tokens, `"embedding"` tokens, `"rerank"` calls, …) —
/// the seed's "$/request = embedding + retrieval + reranking + generation + amortised storage".
/// Terms are added in the key order of `usage`, then `fixed`.
///
/// # Errors
///
/// The first kind of `usage` that has no price (`Err(kind)`): an unpriced quantity must not be
/// silently free.
///
/// ```
/// use std::collections::BTreeMap;
/// use oloproof_metrics::rag::system::request_cost;
///
/// let prices = BTreeMap::from([("input".to_string(), 2.5e-6), ("output".to_string(), 1e-5)]);
/// let usage = BTreeMap::from([("input".to_string(), 1000.0), ("output".to_string(), 200.0)]);
/// let cost = request_cost(&usage, &prices, &[0.0001]).unwrap();
/// assert!((cost - 0.0046).abs() < 1e-15);
/// ```
pub fn request_cost<'a>(
    usage: &'a BTreeMap<String, f64>,
    prices: &BTreeMap<String, f64>,
    fixed: &[f64],
) -> Result<f64, &'a str> {
    let mut total = 0.0;
    for (kind, amount) in usage {
        let price = prices.get(kind).ok_or(kind.as_str())?;
        total += amount * price;
    }
    Ok(total + fixed.iter().sum::<f64>())
}

/// Hits and lookups of one cache layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheCounts {
    /// Lookups answered from the cache.
    pub hits: u64,
    /// All lookups.
    pub lookups: u64,
}

impl CacheCounts {
    /// `hits / lookups` (pooled over requests); `None` without lookups.
    pub fn hit_rate(&self) -> Option<f64> {
        (self.lookups > 0).then(|| self.hits as f64 / self.lookups as f64)
    }
}

/// Adds per-request `(layer, hits, lookups)` records into per-layer totals.
pub fn cache_hit_rates<'a, I>(records: I) -> BTreeMap<String, CacheCounts>
where
    I: IntoIterator<Item = (&'a str, u64, u64)>,
{
    let mut out: BTreeMap<String, CacheCounts> = BTreeMap::new();
    for (layer, hits, lookups) in records {
        let c = out.entry(layer.to_string()).or_default();
        c.hits += hits;
        c.lookups += lookups;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpriced_kind_is_an_error() {
        let usage = BTreeMap::from([("rerank".to_string(), 1.0)]);
        assert_eq!(request_cost(&usage, &BTreeMap::new(), &[]), Err("rerank"));
        assert_eq!(
            request_cost(&BTreeMap::new(), &BTreeMap::new(), &[0.5]),
            Ok(0.5)
        );
    }

    #[test]
    fn pooled_hit_rates() {
        let r = cache_hit_rates([
            ("kv", 1, 1),
            ("kv", 0, 1),
            ("embedding", 3, 4),
            ("kv", 1, 2),
        ]);
        assert_eq!(r["kv"].hit_rate(), Some(0.5));
        assert_eq!(r["embedding"].hit_rate(), Some(0.75));
        assert_eq!(CacheCounts::default().hit_rate(), None);
    }
}
