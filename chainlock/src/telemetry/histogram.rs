//! A lock-free log-linear histogram of durations (nanoseconds), written by many threads at
//! once and read while written.
//!
//! Buckets: the values 0..8 ns exactly, then every power of two split into 8 linear
//! sub-buckets (3 bits of mantissa), so a bucket's width is at most 1/8 of its lower bound:
//! percentiles are exact to 12.5 %. Values from 2^40 ns (about 18 minutes) on share the last
//! bucket; `min`, `max`, `count` and `total` are exact (separate atomics).
//!
//! Why not `hdrhistogram`: its `record` takes `&mut self`, so concurrent writers need a
//! lock around it (or a histogram per thread and a merge on every read), and its default
//! resolution costs tens of kilobytes per histogram. Here a record is five relaxed atomic
//! read-modify-writes on the recording thread (bucket, count, total, min, max), no lock, and
//! a snapshot reads the buckets while they are written (each bucket is exact; the snapshot
//! is not one instant, which a statistics report tolerates). 312 buckets of 8 bytes: 2.5 KB.

use std::time::Duration;

use super::report::Summary;
use crate::loom::sync::atomic::{AtomicU64, Ordering};

/// Mantissa bits: 8 sub-buckets per power of two.
const SUB_BITS: u32 = 3;
const SUB: usize = 1 << SUB_BITS;
/// Powers of two covered, from 2^3 to 2^40 (the last bucket takes everything above).
#[cfg(not(loom))]
const POWERS: usize = 38;
/// Fewer buckets under loom (each atomic is a modelled object); the mapping is the same.
#[cfg(loom)]
const POWERS: usize = 2;
/// The number of buckets.
pub(super) const BUCKETS: usize = SUB + POWERS * SUB;

/// The bucket of `nanos`.
#[inline]
pub(super) fn bucket_of(nanos: u64) -> usize {
    if nanos < SUB as u64 {
        return nanos as usize;
    }
    let exponent = nanos.ilog2(); // >= SUB_BITS
    let mantissa = ((nanos >> (exponent - SUB_BITS)) as usize) & (SUB - 1);
    let index = SUB + (exponent - SUB_BITS) as usize * SUB + mantissa;
    index.min(BUCKETS - 1)
}

/// The largest value of bucket `index` (the last bucket: `u64::MAX`).
pub(super) fn upper_bound(index: usize) -> u64 {
    if index < SUB {
        return index as u64;
    }
    if index == BUCKETS - 1 {
        return u64::MAX;
    }
    let exponent = (index - SUB) / SUB + SUB_BITS as usize;
    let mantissa = ((index - SUB) % SUB) as u64;
    let shift = exponent - SUB_BITS as usize;
    ((SUB as u64 + mantissa + 1) << shift) - 1
}

/// Durations recorded by many threads.
pub(super) struct Histogram {
    buckets: Box<[AtomicU64]>,
    count: AtomicU64,
    total: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
}

impl Histogram {
    pub(super) fn new() -> Self {
        Self {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            total: AtomicU64::new(0),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
        }
    }

    /// Records one duration.
    pub(super) fn record(&self, nanos: u64) {
        self.buckets[bucket_of(nanos)].fetch_add(1, Ordering::Relaxed);
        self.total.fetch_add(nanos, Ordering::Relaxed);
        self.min.fetch_min(nanos, Ordering::Relaxed);
        self.max.fetch_max(nanos, Ordering::Relaxed);
        // Last: a reader that sees the count sees a bucket at least as full (see `summary`).
        self.count.fetch_add(1, Ordering::Release);
    }

    /// Adds everything `other` recorded (an evicted hot key folded into the other keys).
    pub(super) fn absorb(&self, other: &Self) {
        for (mine, theirs) in self.buckets.iter().zip(other.buckets.iter()) {
            let n = theirs.load(Ordering::Relaxed);
            if n > 0 {
                mine.fetch_add(n, Ordering::Relaxed);
            }
        }
        self.total
            .fetch_add(other.total.load(Ordering::Relaxed), Ordering::Relaxed);
        self.min
            .fetch_min(other.min.load(Ordering::Relaxed), Ordering::Relaxed);
        self.max
            .fetch_max(other.max.load(Ordering::Relaxed), Ordering::Relaxed);
        self.count
            .fetch_add(other.count.load(Ordering::Acquire), Ordering::Release);
    }

    /// Forgets everything (racing records may survive in part).
    pub(super) fn reset(&self) {
        self.count.store(0, Ordering::Relaxed);
        for bucket in &self.buckets {
            bucket.store(0, Ordering::Relaxed);
        }
        self.total.store(0, Ordering::Relaxed);
        self.min.store(u64::MAX, Ordering::Relaxed);
        self.max.store(0, Ordering::Relaxed);
    }

    /// How many durations were recorded.
    pub(super) fn count(&self) -> u64 {
        self.count.load(Ordering::Acquire)
    }

    /// The summary now. Read while written, its buckets may hold a few records more than
    /// its count; percentiles are taken over the buckets' own sum and clamped to
    /// `[min, max]`, so they are always values the histogram could have produced.
    pub(super) fn summary(&self) -> Summary {
        let count = self.count.load(Ordering::Acquire);
        let counts: Vec<u64> = self
            .buckets
            .iter()
            .map(|bucket| bucket.load(Ordering::Relaxed))
            .collect();
        let total = self.total.load(Ordering::Relaxed);
        let min = self.min.load(Ordering::Relaxed);
        let max = self.max.load(Ordering::Relaxed);
        if count == 0 && counts.iter().all(|&n| n == 0) {
            return Summary::default();
        }
        let min = if min == u64::MAX { 0 } else { min };
        let in_buckets: u64 = counts.iter().sum();
        let clamp = |nanos: u64| Duration::from_nanos(nanos.clamp(min, max.max(min)));
        let percentile = |per_mille: u64| {
            // The smallest bucket whose cumulative count reaches the rank.
            let rank = (in_buckets * per_mille).div_ceil(1000).max(1);
            let mut seen = 0;
            for (index, &n) in counts.iter().enumerate() {
                seen += n;
                if seen >= rank {
                    return clamp(upper_bound(index));
                }
            }
            clamp(max)
        };
        Summary {
            count,
            total: Duration::from_nanos(total),
            min: Duration::from_nanos(min),
            max: Duration::from_nanos(max),
            p50: percentile(500),
            p99: percentile(990),
            buckets: counts
                .iter()
                .enumerate()
                .filter(|&(_, &n)| n > 0)
                .map(|(index, &n)| (Duration::from_nanos(upper_bound(index)), n))
                .collect(),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_values_in_order_within_an_eighth() {
        for nanos in 1..10_000 {
            assert!(
                bucket_of(nanos) >= bucket_of(nanos - 1),
                "monotone at {nanos}"
            );
        }
        for nanos in (0..10_000).chain([1 << 20, (1 << 30) + 12_345, 1 << 39]) {
            let index = bucket_of(nanos);
            assert!(upper_bound(index) >= nanos, "{nanos} above its bucket");
            let lower = if index == 0 {
                0
            } else {
                upper_bound(index - 1) + 1
            };
            assert!(lower <= nanos, "{nanos} below its bucket");
            assert!(
                upper_bound(index) - lower <= lower / 8 + 1,
                "bucket {index} of {nanos} wider than an eighth"
            );
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
        assert_eq!(bucket_of(1 << 41), BUCKETS - 1);
    }

    #[test]
    fn summary_of_known_values() {
        let histogram = Histogram::new();
        for micros in 1..=100 {
            histogram.record(micros * 1000);
        }
        let summary = histogram.summary();
        assert_eq!(summary.count, 100);
        assert_eq!(summary.min, Duration::from_micros(1));
        assert_eq!(summary.max, Duration::from_micros(100));
        assert_eq!(summary.total, Duration::from_micros(5050));
        let p50 = summary.p50.as_nanos();
        assert!((50_000..=50_000 * 9 / 8).contains(&p50), "p50 {p50}");
        let p99 = summary.p99.as_nanos();
        assert!((99_000..=100_000).contains(&p99), "p99 {p99}");
        assert_eq!(summary.buckets().map(|(_, n)| n).sum::<u64>(), 100);
        histogram.reset();
        assert_eq!(histogram.summary().count, 0);
    }
}
