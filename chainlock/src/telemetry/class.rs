//! The statistics of one lock class (a level, a depth, a hot key, the other keys, a stripe,
//! a room, a distributed name), and the bounded set of hot keys of a keyed manager.
//!
//! Everything a recording thread touches is an atomic of `crate::loom` (the loom models in
//! `tests/` check it under concurrent records and snapshots); the hot-key table is behind
//! its probe's mutex.

use std::collections::HashMap;
use std::panic::Location;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use super::histogram::Histogram;
use super::report::{LockName, LockStats, OtherSites, SiteStats};
use crate::loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Sites kept per side: the first eight seen (`lock_stat` keeps four); a report shows the
/// four with the most time.
#[cfg(not(loom))]
const SITE_SLOTS: usize = 8;
/// Two under loom (each slot is three modelled atomics); the claim race is the same.
#[cfg(loom)]
const SITE_SLOTS: usize = 2;
/// Sites a report shows per side, as `lock_stat`.
const SITES_SHOWN: usize = 4;

/// Call sites and their share, lock-free: a slot is claimed once by a compare-exchange of
/// its site from 0, then only added to; what a site with no slot left brings is summed
/// unnamed, so that the sites' figures always add up to the class's.
pub(super) struct Sites {
    slots: [Slot; SITE_SLOTS],
    /// The events of sites that found every slot taken.
    unnamed_count: AtomicU64,
    unnamed_total: AtomicU64,
}

struct Slot {
    /// The address of a `&'static Location<'static>`, or 0 while free.
    site: AtomicUsize,
    count: AtomicU64,
    total: AtomicU64,
}

impl Sites {
    fn new() -> Self {
        Self {
            slots: std::array::from_fn(|_| Slot {
                site: AtomicUsize::new(0),
                count: AtomicU64::new(0),
                total: AtomicU64::new(0),
            }),
            unnamed_count: AtomicU64::new(0),
            unnamed_total: AtomicU64::new(0),
        }
    }

    /// Adds `count` events of `nanos` in all at `site`; unnamed if every slot holds another
    /// site (as `lock_stat`, which keeps the first points it sees).
    pub(super) fn record(&self, site: &'static Location<'static>, count: u64, nanos: u64) {
        let address = std::ptr::from_ref(site) as usize;
        for slot in &self.slots {
            let mut seen = slot.site.load(Ordering::Acquire);
            if seen == 0 {
                seen = match slot.site.compare_exchange(
                    0,
                    address,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => address,
                    Err(other) => other,
                };
            }
            if seen == address {
                slot.count.fetch_add(count, Ordering::Relaxed);
                slot.total.fetch_add(nanos, Ordering::Relaxed);
                return;
            }
        }
        self.unnamed_count.fetch_add(count, Ordering::Relaxed);
        self.unnamed_total.fetch_add(nanos, Ordering::Relaxed);
    }

    /// The [`SITES_SHOWN`] sites with the most time (then the most events), and the rest
    /// summed: the other named sites and the unnamed ones.
    fn top(&self) -> (Vec<SiteStats>, OtherSites) {
        let mut sites: Vec<SiteStats> = self
            .slots
            .iter()
            .filter_map(|slot| {
                let address = slot.site.load(Ordering::Acquire);
                let count = slot.count.load(Ordering::Relaxed);
                (address != 0 && count > 0).then(|| SiteStats {
                    // SAFETY: the only non-zero values ever stored are addresses of
                    // `&'static Location<'static>` (see `record`).
                    site: unsafe { &*(address as *const Location<'static>) },
                    count,
                    total: Duration::from_nanos(slot.total.load(Ordering::Relaxed)),
                })
            })
            .collect();
        sites.sort_by_key(|site| std::cmp::Reverse((site.total, site.count)));
        let mut other = OtherSites {
            count: self.unnamed_count.load(Ordering::Relaxed),
            total: Duration::from_nanos(self.unnamed_total.load(Ordering::Relaxed)),
        };
        for site in sites.iter().skip(SITES_SHOWN) {
            other.count += site.count;
            other.total += site.total;
        }
        sites.truncate(SITES_SHOWN);
        (sites, other)
    }

    fn absorb(&self, other: &Self) {
        for slot in &other.slots {
            let address = slot.site.load(Ordering::Acquire);
            if address != 0 {
                // SAFETY: as in `top`.
                let site = unsafe { &*(address as *const Location<'static>) };
                self.record(
                    site,
                    slot.count.load(Ordering::Relaxed),
                    slot.total.load(Ordering::Relaxed),
                );
            }
        }
        self.unnamed_count.fetch_add(
            other.unnamed_count.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        self.unnamed_total.fetch_add(
            other.unnamed_total.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
    }

    fn reset(&self) {
        for slot in &self.slots {
            slot.count.store(0, Ordering::Relaxed);
            slot.total.store(0, Ordering::Relaxed);
            slot.site.store(0, Ordering::Release);
        }
        self.unnamed_count.store(0, Ordering::Relaxed);
        self.unnamed_total.store(0, Ordering::Relaxed);
    }
}

/// Shards of a [`Counter`]: a few, so that threads counting into one class mostly write
/// cache lines of their own.
#[cfg(not(loom))]
const SHARDS: usize = 8;
/// One under loom (each shard is a modelled atomic).
#[cfg(loom)]
const SHARDS: usize = 1;

/// The next shard handed to a thread counting for the first time (a plain `std` atomic
/// also under loom: it only spreads threads, it orders nothing).
static NEXT_SHARD: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

std::thread_local! {
    /// This thread's shard of every counter; `usize::MAX` until first used.
    static SHARD: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}

/// This thread's shard, handed out round-robin.
#[inline]
fn shard() -> usize {
    SHARD
        .try_with(|shard| {
            let index = shard.get();
            if index < SHARDS {
                index
            } else {
                let index = NEXT_SHARD.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % SHARDS;
                shard.set(index);
                index
            }
        })
        .unwrap_or(0)
}

/// An exact count written by many threads at once (every acquisition of a class): each
/// thread adds to its own cache-padded shard, a reader sums them.
pub(super) struct Counter {
    shards: [CachePadded<AtomicU64>; SHARDS],
}

impl Counter {
    pub(super) fn new() -> Self {
        Self {
            shards: std::array::from_fn(|_| CachePadded::new(AtomicU64::new(0))),
        }
    }

    /// Adds `n` (relaxed: a count, ordered with nothing).
    #[inline]
    pub(super) fn fetch_add(&self, n: u64, order: Ordering) {
        self.shards[shard()].fetch_add(n, order);
    }

    /// The sum of the shards.
    pub(super) fn load(&self, order: Ordering) -> u64 {
        self.shards
            .iter()
            .fold(0u64, |sum, shard| sum.wrapping_add(shard.load(order)))
    }

    /// Zeroes every shard.
    pub(super) fn store(&self, value: u64, order: Ordering) {
        for (index, shard) in self.shards.iter().enumerate() {
            shard.store(if index == 0 { value } else { 0 }, order);
        }
    }
}

/// The statistics of one lock class.
pub(super) struct Class {
    pub(super) name: LockName,
    pub(super) acquisitions: Counter,
    pub(super) contended: AtomicU64,
    pub(super) wait: Histogram,
    /// The waits that ended without the lock (timed out, failed, cancelled).
    pub(super) gave_up: Histogram,
    pub(super) hold: Histogram,
    pub(super) hold_across_await: Histogram,
    pub(super) waiters_at_release: AtomicU64,
    pub(super) waiter_sites: Sites,
    pub(super) holder_sites: Sites,
    /// Optimistic passes that failed here (a version changed, or a writer held it), and of
    /// those, the ones after which the descent took locks instead (its pessimistic pass).
    pub(super) restarts: Counter,
    pub(super) fallbacks: Counter,
    /// A hot key evicted from its manager's table: its statistics went to the other keys,
    /// and reports skip it.
    pub(super) retired: AtomicBool,
}

impl Class {
    pub(super) fn new(name: LockName) -> Self {
        Self {
            name,
            acquisitions: Counter::new(),
            contended: AtomicU64::new(0),
            wait: Histogram::new(),
            gave_up: Histogram::new(),
            hold: Histogram::new(),
            hold_across_await: Histogram::new(),
            waiters_at_release: AtomicU64::new(0),
            waiter_sites: Sites::new(),
            holder_sites: Sites::new(),
            restarts: Counter::new(),
            fallbacks: Counter::new(),
            retired: AtomicBool::new(false),
        }
    }

    /// Whether anything was recorded since the last reset.
    pub(super) fn is_used(&self) -> bool {
        self.acquisitions.load(Ordering::Relaxed) > 0
            || self.contended.load(Ordering::Relaxed) > 0
            || self.wait.count() > 0
            || self.gave_up.count() > 0
            || self.hold.count() > 0
            || self.hold_across_await.count() > 0
            || self.restarts.load(Ordering::Relaxed) > 0
    }

    /// The statistics now.
    pub(super) fn stats(&self) -> LockStats {
        let (waiter_sites, other_waiter_sites) = self.waiter_sites.top();
        let (holder_sites, other_holder_sites) = self.holder_sites.top();
        LockStats {
            lock: self.name.clone(),
            acquisitions: self.acquisitions.load(Ordering::Relaxed),
            contended: self.contended.load(Ordering::Relaxed),
            wait: self.wait.summary(),
            gave_up: self.gave_up.summary(),
            hold: self.hold.summary(),
            hold_across_await: self.hold_across_await.summary(),
            waiters_at_release: self.waiters_at_release.load(Ordering::Relaxed),
            waiter_sites,
            other_waiter_sites,
            holder_sites,
            other_holder_sites,
            restarts: self.restarts.load(Ordering::Relaxed),
            fallbacks: self.fallbacks.load(Ordering::Relaxed),
        }
    }

    /// Adds `other`'s statistics to these.
    pub(super) fn absorb(&self, other: &Self) {
        self.acquisitions.fetch_add(
            other.acquisitions.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        self.contended
            .fetch_add(other.contended.load(Ordering::Relaxed), Ordering::Relaxed);
        self.wait.absorb(&other.wait);
        self.gave_up.absorb(&other.gave_up);
        self.hold.absorb(&other.hold);
        self.hold_across_await.absorb(&other.hold_across_await);
        self.waiters_at_release.fetch_add(
            other.waiters_at_release.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        self.waiter_sites.absorb(&other.waiter_sites);
        self.holder_sites.absorb(&other.holder_sites);
        self.restarts
            .fetch_add(other.restarts.load(Ordering::Relaxed), Ordering::Relaxed);
        self.fallbacks
            .fetch_add(other.fallbacks.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// Zeroes the statistics.
    pub(super) fn reset(&self) {
        self.acquisitions.store(0, Ordering::Relaxed);
        self.contended.store(0, Ordering::Relaxed);
        self.wait.reset();
        self.gave_up.reset();
        self.hold.reset();
        self.hold_across_await.reset();
        self.waiters_at_release.store(0, Ordering::Relaxed);
        self.waiter_sites.reset();
        self.holder_sites.reset();
        self.restarts.store(0, Ordering::Relaxed);
        self.fallbacks.store(0, Ordering::Relaxed);
    }
}

/// The hot keys of one keyed manager: at most `capacity` keys have statistics of their
/// own, every other key is summed into `other`. Which keys are hot is decided by
/// Space-Saving (Metwally et al.): keys outside the table keep an approximate count in a
/// bounded candidate table (a new candidate evicts the smallest and inherits its count), and
/// a candidate whose count passes the coldest hot key's takes its place; the evicted key's
/// statistics are added to `other`.
/// What [`HotKeys::class_of`] found.
pub(super) enum Found {
    Class(Arc<Class>),
    /// The key becomes hot, coming in with the count `base`.
    Promote {
        base: u64,
    },
}

/// What a hot key's [`LockName`] is.
#[derive(Clone, Copy)]
pub(super) enum HotName {
    /// A keyed manager's key: `LockName::Key`.
    Key,
    /// A distributed backend's name: `LockName::Distributed`.
    #[cfg(feature = "distributed")]
    Distributed(&'static str),
    /// The type a hybrid lock protects: `LockName::Hybrid`.
    Hybrid,
}

pub(super) struct HotKeys {
    manager: Arc<str>,
    /// How a key that becomes hot is named.
    naming: HotName,
    /// Hot keys by hash: their class, and the count they came in with.
    hot: HashMap<u64, (Arc<Class>, u64)>,
    candidates: HashMap<u64, u64>,
    pub(super) other: Arc<Class>,
}

impl HotKeys {
    pub(super) fn new(manager: Arc<str>, naming: HotName) -> Self {
        let other = Arc::new(Class::new(match naming {
            // Still a hybrid lock's class: its locks are told apart by address (`live.rs`).
            HotName::Hybrid => LockName::Hybrid {
                data: "other types".into(),
            },
            _ => LockName::OtherKeys {
                manager: manager.clone(),
            },
        }));
        Self {
            manager,
            naming,
            hot: HashMap::new(),
            candidates: HashMap::new(),
            other,
        }
    }

    /// The class of the key with `hash`, or [`Found::Promote`] when the key becomes hot:
    /// the caller then names it ([`promote`](Self::promote)) — with the table unlocked, since
    /// the name is the user's `Debug`. `weight`: how many acquisitions this sampled one
    /// stands for (a candidate's count grows by it, as a hot key's acquisitions do).
    pub(super) fn class_of(&mut self, hash: u64, capacity: usize, weight: u64) -> Found {
        if let Some((class, _)) = self.hot.get(&hash) {
            return Found::Class(class.clone());
        }
        if self.hot.len() < capacity {
            return Found::Promote { base: 0 };
        }
        if capacity == 0 {
            return Found::Class(self.other.clone());
        }
        // Space-Saving over the keys outside the table.
        let bound = capacity.saturating_mul(4).max(64);
        let count = if let Some(count) = self.candidates.get_mut(&hash) {
            *count = count.saturating_add(weight);
            *count
        } else {
            let inherited = if self.candidates.len() >= bound {
                let (&coldest, &count) = self
                    .candidates
                    .iter()
                    .min_by_key(|&(_, &count)| count)
                    .expect("a full table has entries");
                self.candidates.remove(&coldest);
                count
            } else {
                0
            };
            let count = inherited.saturating_add(weight);
            self.candidates.insert(hash, count);
            count
        };
        let (&coldest, coldest_count) = self
            .hot
            .iter()
            .map(|(hash, (class, base))| (hash, base + class.acquisitions.load(Ordering::Relaxed)))
            .min_by_key(|&(_, count)| count)
            .expect("a full table has entries");
        if count <= coldest_count {
            return Found::Class(self.other.clone());
        }
        let (evicted, _) = self.hot.remove(&coldest).expect("found above");
        evicted.retired.store(true, Ordering::Relaxed);
        self.other.absorb(&evicted);
        self.candidates.remove(&hash);
        self.candidates.insert(coldest, coldest_count);
        Found::Promote { base: count }
    }

    /// Makes the key with `hash` hot under the name `key` (after [`Found::Promote`]). The
    /// table was unlocked while the name was made: if another thread made the key hot
    /// meanwhile, its class is the one. Concurrent promotions may pass `capacity` by at most
    /// one key per thread promoting at that moment.
    pub(super) fn promote(
        &mut self,
        hash: u64,
        base: u64,
        key: String,
        register: &impl Fn(&Arc<Class>),
    ) -> Arc<Class> {
        if let Some((class, _)) = self.hot.get(&hash) {
            return class.clone();
        }
        let name = match self.naming {
            #[cfg(feature = "distributed")]
            HotName::Distributed(backend) => LockName::Distributed {
                backend,
                name: key.into(),
            },
            HotName::Key => LockName::Key {
                manager: self.manager.clone(),
                key: key.into(),
            },
            HotName::Hybrid => LockName::Hybrid { data: key.into() },
        };
        let class = Arc::new(Class::new(name));
        register(&class);
        self.hot.insert(hash, (class.clone(), base));
        class
    }
}
