//! Lock striping: a fixed set of locks shared by an unbounded set of keys.
//!
//! [`Striped<L>`] hashes a key onto one of N locks ("stripes"). Memory stays bounded no
//! matter how many keys exist, at the price of rare false sharing: two different keys that
//! land on the same stripe exclude each other. This is Guava's `Striped`, built on
//! [`lock_api`] so that any lock of the `lock_api` family works as a stripe:
//! `parking_lot::Mutex<T>`, `parking_lot::RwLock<T>`, or your own
//! `lock_api::Mutex<MyRawMutex, T>`. (jkeylockmanager, which stripes only the bookkeeping of
//! its exact per-key locks, is a peer of [`KeyedLocks`](crate::keyed::KeyedLocks) instead.)
//!
//! - The stripe count is rounded up to a power of two so that a stripe is picked
//!   from the top bits of the key's hash, multiplied (Fibonacci hashing).
//! - Each stripe sits in its own cache line ([`CachePadded`]): locking one stripe never
//!   invalidates the line of its neighbour.
//! - Keys are spread with a seeded [foldhash] by default; any [`BuildHasher`] can be given.
//! - [`Striped::lock_all`] (and `read_all`/`write_all`) lock the stripes of many keys
//!   at once, deduplicated and in ascending stripe order, so that any number of bulk
//!   lockers never deadlock with one another (Guava's `bulkGet`, returning held guards).
//!
//! - Semaphore stripes ([`Striped::semaphores`], Guava's `Striped.semaphore`): a
//!   [`Semaphore`] per stripe, FIFO with timeouts, limit how many holders share a stripe.
//!
//! Stripes may also guard data: `Striped<parking_lot::Mutex<HashMap<K, V>>>` is a sharded
//! map whose shard of `k` is `striped.lock(&k)`.
//!
//! # Examples
//!
//! ```
//! use chainlock::parking_lot::Mutex;
//! use chainlock::striped::Striped;
//!
//! // 64 stripes serialize work per user name, whatever the number of users.
//! let locks: Striped<Mutex<()>> = Striped::new(64);
//! {
//!     let _alice = locks.lock("alice");
//!     // ... alice's files are ours until `_alice` drops ...
//! }
//!
//! // Lock the stripes of several keys: deduplicated, ascending, never deadlocking.
//! let held = locks.lock_all(["carol", "bob", "carol"]);
//! assert!(held.len() <= 2);
//! assert!(held.stripes().is_sorted());
//! ```
//!
//! [foldhash]: https://docs.rs/foldhash

mod guards;
mod mutex;
mod rwlock;
mod semaphore;

use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::panic::Location;

use crate::lock_order::ascending_unique;
use crate::spread::Spread;
use crate::telemetry::hooks::{
    KeyRef, Label, Probe, ProbeKind, observe_try_unskipped, observe_unskipped,
};
use crossbeam_utils::CachePadded;
pub use guards::StripeGuards;
pub use semaphore::{Semaphore, SemaphorePermit};

/// The hasher used by [`Striped`] and [`KeyedLocks`](crate::keyed::KeyedLocks) unless
/// another [`BuildHasher`] is given: foldhash's fast hasher, seeded randomly per instance so
/// that keys chosen by an adversary cannot be steered onto one stripe.
pub type DefaultHashBuilder = foldhash::fast::RandomState;

/// A fixed, power-of-two number of cache-padded locks, picked by the hash of a key.
///
/// `L` is the stripe type, typically `parking_lot::Mutex<()>` or `parking_lot::RwLock<()>`
/// (any [`lock_api::Mutex`] or [`lock_api::RwLock`] gets the locking methods); `S` builds
/// the hasher that maps keys to stripes.
///
/// See the [module documentation](self) for the guarantees.
///
/// # Examples
///
/// ```
/// use chainlock::parking_lot::RwLock;
/// use chainlock::striped::Striped;
///
/// let locks: Striped<RwLock<()>> = Striped::new(10);
/// assert_eq!(locks.stripe_count(), 16); // rounded up to a power of two
///
/// let r1 = locks.read(&42_u64);
/// let r2 = locks.read(&42_u64); // readers share a stripe
/// assert!(locks.try_write(&42_u64).is_none());
/// drop((r1, r2));
/// assert!(locks.try_write(&42_u64).is_some());
/// ```
pub struct Striped<L, S = DefaultHashBuilder> {
    stripes: Box<[CachePadded<L>]>,
    /// Picks a stripe for a key's hash; the count is a power of two.
    spread: Spread,
    hasher: S,
    /// What telemetry records of the stripes (nothing without the feature).
    telemetry: Probe,
}

impl<L: Default> Striped<L> {
    /// Creates `stripes` locks (rounded up to a power of two), each `L::default()`, with a
    /// randomly seeded [`DefaultHashBuilder`].
    ///
    /// # Panics
    ///
    /// Panics if `stripes` is 0 or if rounding it up to a power of two overflows `usize`.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(100);
    /// assert_eq!(locks.stripe_count(), 128);
    /// ```
    #[must_use]
    #[track_caller]
    pub fn new(stripes: usize) -> Self {
        Self::with_hasher(stripes, DefaultHashBuilder::default())
    }
}

impl<L: Default, S> Striped<L, S> {
    /// Creates `stripes` locks (rounded up to a power of two), each `L::default()`, mapping
    /// keys with `hasher`.
    ///
    /// # Panics
    ///
    /// Panics if `stripes` is 0 or if rounding it up to a power of two overflows `usize`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::hash::BuildHasherDefault;
    /// use std::collections::hash_map::DefaultHasher;
    ///
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// // A fixed hasher: the same key picks the same stripe in every run.
    /// let locks: Striped<Mutex<()>, BuildHasherDefault<DefaultHasher>> =
    ///     Striped::with_hasher(8, BuildHasherDefault::default());
    /// assert_eq!(locks.stripe_count(), 8);
    /// ```
    #[must_use]
    #[track_caller]
    pub fn with_hasher(stripes: usize, hasher: S) -> Self {
        Self::from_fn(stripes, hasher, |_| L::default())
    }
}

impl<L, S> Striped<L, S> {
    /// Creates `stripes` locks (rounded up to a power of two), stripe `i` being `make(i)`,
    /// mapping keys with `hasher`.
    ///
    /// Use it for stripes that need an argument to be built, such as a lock constructed
    /// with `from_raw`, or per-stripe data.
    ///
    /// # Panics
    ///
    /// Panics if `stripes` is 0 or if rounding it up to a power of two overflows `usize`.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::{DefaultHashBuilder, Striped};
    ///
    /// // Each stripe guards a counter that remembers its own index.
    /// let counters = Striped::from_fn(4, DefaultHashBuilder::default(), |i| Mutex::new(i));
    /// assert_eq!(*counters.stripe(3).unwrap().lock(), 3);
    /// ```
    #[must_use]
    #[track_caller]
    pub fn from_fn(stripes: usize, hasher: S, mut make: impl FnMut(usize) -> L) -> Self {
        assert!(stripes > 0, "a `Striped` needs at least one stripe");
        let count = stripes
            .checked_next_power_of_two()
            .expect("stripe count overflows usize when rounded up to a power of two");
        let stripes: Box<[CachePadded<L>]> =
            (0..count).map(|i| CachePadded::new(make(i))).collect();
        Self {
            stripes,
            spread: Spread::over(count),
            hasher,
            telemetry: Probe::new(ProbeKind::Striped {
                set: Label::caller(),
            }),
        }
    }

    /// The number of stripes (a power of two).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(5);
    /// assert_eq!(locks.stripe_count(), 8);
    /// ```
    #[inline]
    #[must_use]
    pub fn stripe_count(&self) -> usize {
        self.stripes.len()
    }

    /// The stripe at `index`, or `None` if `index >= self.stripe_count()`.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(4);
    /// let stripe = locks.stripe(locks.index_of("k")).unwrap();
    /// let _held = locks.lock("k");
    /// assert!(stripe.is_locked());
    /// assert!(locks.stripe(4).is_none());
    /// ```
    #[inline]
    #[must_use]
    pub fn stripe(&self, index: usize) -> Option<&L> {
        self.stripes.get(index).map(|padded| &**padded)
    }

    /// All stripes, in index order.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<u32>> = Striped::new(4);
    /// *locks.lock("a") += 1;
    /// let total: u32 = locks.iter().map(|stripe| *stripe.lock()).sum();
    /// assert_eq!(total, 1);
    /// ```
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &L> + '_ {
        self.stripes.iter().map(|padded| &**padded)
    }
}

impl<L, S: BuildHasher> Striped<L, S> {
    /// The index of the stripe that `key` maps to.
    ///
    /// Equal keys (and keys whose [`Hash`] agrees, such as `String` and `str`) always map to
    /// the same stripe of a given `Striped`.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(16);
    /// let i = locks.index_of("report.pdf");
    /// assert!(i < 16);
    /// assert_eq!(i, locks.index_of(&String::from("report.pdf")));
    /// ```
    #[inline]
    pub fn index_of<Q: Hash + ?Sized>(&self, key: &Q) -> usize {
        self.spread.slot(self.hasher.hash_one(key))
    }

    /// The stripe that `key` maps to, to use the lock's own API.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(4);
    /// let _held = locks.lock("k");
    /// assert!(locks.get("k").is_locked());
    /// ```
    #[inline]
    pub fn get<Q: Hash + ?Sized>(&self, key: &Q) -> &L {
        &self.stripes[self.index_of(key)]
    }

    /// The distinct stripe indices of `keys`, in ascending order: the order in which the
    /// bulk methods lock them.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(1); // one stripe: everything collides
    /// assert_eq!(locks.indices_of(["a", "b", "c"]), vec![0]);
    /// ```
    pub fn indices_of<Q, I>(&self, keys: I) -> Vec<usize>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        ascending_unique(keys.into_iter().map(|key| self.index_of(&key)))
    }
}

impl<L, S: BuildHasher> Striped<L, S> {
    /// Takes the stripe of `key` by `take` (`None`: not within its wait), recorded by
    /// telemetry (see [`take_index`](Self::take_index)).
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    fn take_stripe<'a, G, Q: Hash + ?Sized>(
        &'a self,
        key: &Q,
        wait: bool,
        try_take: impl FnOnce(&'a L) -> Option<G>,
        take: impl FnOnce(&'a L) -> Option<G>,
    ) -> Option<G> {
        self.take_index(self.index_of(key), wait, try_take, take)
    }

    /// Takes the stripe `index` by `take` (`None`: not within its wait), recorded by
    /// telemetry (see [`take_recorded`](Self::take_recorded)). Not sampled (or telemetry
    /// off), the stripe's own lock and nothing else, the rest out of line (it kept registers
    /// busy in every caller, and the shapes' guard-and-record pairs cost 16 instructions per
    /// uncontended cycle with the feature on).
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    fn take_index<'a, G>(
        &'a self,
        index: usize,
        wait: bool,
        try_take: impl FnOnce(&'a L) -> Option<G>,
        take: impl FnOnce(&'a L) -> Option<G>,
    ) -> Option<G> {
        let stripe: &'a L = &self.stripes[index];
        if self.telemetry.skips() {
            return take(stripe);
        }
        Self::take_recorded(
            &self.telemetry,
            Location::caller(),
            stripe,
            index,
            wait,
            try_take,
            take,
        )
    }

    /// [`take_index`](Self::take_index) of an acquisition the sampler did not skip, through
    /// the telemetry's shapes: a wait ([`observe_unskipped`]) tries `try_take` first while
    /// it records, so that a wait is seen; with `wait` false (`try_` forms, whose `take` is
    /// a try) a busy stripe is not a wait ([`observe_try_unskipped`]). The stripe's own guard
    /// is returned, so the hold is not followed.
    #[cold]
    #[inline(never)]
    fn take_recorded<'a, G>(
        probe: &Probe,
        site: &'static Location<'static>,
        stripe: &'a L,
        index: usize,
        wait: bool,
        try_take: impl FnOnce(&'a L) -> Option<G>,
        take: impl FnOnce(&'a L) -> Option<G>,
    ) -> Option<G> {
        let key = KeyRef::Index(index);
        let taken = if wait {
            observe_unskipped::<G, false>(
                probe,
                key,
                site,
                index,
                || try_take(stripe),
                || take(stripe),
            )
        } else {
            observe_try_unskipped::<G, false>(probe, key, site, index, || take(stripe))
        };
        taken.map(|(guard, _)| guard)
    }

    /// Takes `acquire` (which waits) on the distinct stripes of `keys`, in ascending order,
    /// each recorded by telemetry like a single stripe (`try_take`: see
    /// [`take_index`](Self::take_index)) at the caller's site.
    #[cfg_attr(feature = "telemetry", track_caller)]
    fn lock_each<'a, G, Q, I>(
        &'a self,
        keys: I,
        try_take: impl FnMut(&'a L) -> Option<G>,
        mut acquire: impl FnMut(&'a L) -> G,
    ) -> StripeGuards<G>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        self.try_lock_each(keys, true, try_take, |stripe| Some(acquire(stripe)))
            .expect("blocking locks always succeed")
    }

    /// Takes `take` on the distinct stripes of `keys` in ascending order, each recorded
    /// like a single stripe (see [`take_index`](Self::take_index)) at the caller's site; on
    /// the first `None`, releases what was taken (by dropping it) and returns `None`.
    #[cfg_attr(feature = "telemetry", track_caller)]
    fn try_lock_each<'a, G, Q, I>(
        &'a self,
        keys: I,
        wait: bool,
        mut try_take: impl FnMut(&'a L) -> Option<G>,
        mut take: impl FnMut(&'a L) -> Option<G>,
    ) -> Option<StripeGuards<G>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        let indices = self.indices_of(keys);
        let mut guards = Vec::with_capacity(indices.len());
        for index in indices {
            // A direct call (not in a closure): the caller's location reaches `begin`.
            let guard = self.take_index(index, wait, &mut try_take, &mut take)?;
            guards.push((index, guard));
        }
        Some(StripeGuards { guards })
    }
}

#[cfg(feature = "telemetry")]
#[cfg_attr(docsrs, doc(cfg(feature = "telemetry")))]
impl<L, S> Striped<L, S> {
    /// Names these stripes in [`telemetry`](crate::telemetry) reports (default: the
    /// location of the constructor's call, `"src/main.rs:12"`).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let accounts: Striped<Mutex<()>> = Striped::new(16).telemetry_name("accounts");
    /// # drop(accounts);
    /// ```
    #[must_use]
    pub fn telemetry_name(mut self, name: &str) -> Self {
        self.telemetry.rename(Label::named(name));
        self
    }
}

impl<L: fmt::Debug, S> fmt::Debug for Striped<L, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Striped")
            .field("stripe_count", &self.stripes.len())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, loom))]
mod tests {
    mod loom_striped;
}
