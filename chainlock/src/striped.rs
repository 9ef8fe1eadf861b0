//! Lock striping: a fixed set of locks shared by an unbounded set of keys.
//!
//! [`Striped<L>`] hashes a key onto one of N locks ("stripes"). Memory stays bounded no
//! matter how many keys exist, at the price of rare false sharing: two different keys that
//! land on the same stripe exclude each other. This is Guava's `Striped` (and
//! jkeylockmanager's striping), built on [`lock_api`] so that any lock of the
//! `lock_api` family works as a stripe: `parking_lot::Mutex<T>`, `parking_lot::RwLock<T>`,
//! or your own `lock_api::Mutex<MyRawMutex, T>`.
//!
//! - The stripe count is rounded up to a power of two so that a stripe is picked by a mask.
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

mod semaphore;

use std::fmt;
use std::hash::{BuildHasher, Hash};

use crate::lock_order::ascending_unique;
use crossbeam_utils::CachePadded;
use lock_api::{Mutex, MutexGuard, RawMutex, RawRwLock, RwLock, RwLockReadGuard, RwLockWriteGuard};
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
    /// `stripe_count - 1`; the count is a power of two.
    mask: usize,
    hasher: S,
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
            mask: count - 1,
            hasher,
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
        // Fold the high half in so that hashers weak in their low bits still spread.
        let hash = self.hasher.hash_one(key);
        ((hash ^ (hash >> 32)) as usize) & self.mask
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

impl<R: RawMutex, T, S: BuildHasher> Striped<Mutex<R, T>, S> {
    /// Locks the stripe of `key`, blocking until it is available.
    ///
    /// The stripe's mutex is not reentrant: locking a key whose stripe the current thread
    /// already holds (the same key, or a colliding one) behaves as the mutex `R` does on
    /// relock (it deadlocks with `parking_lot`). Use [`lock_all`](Self::lock_all) to hold
    /// several keys at once.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let balances: Striped<Mutex<i64>> = Striped::new(8);
    /// *balances.lock(&7_u32) += 10;
    /// ```
    #[inline]
    pub fn lock<Q: Hash + ?Sized>(&self, key: &Q) -> MutexGuard<'_, R, T> {
        self.get(key).lock()
    }

    /// Locks the stripe of `key` if it is free right now.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(8);
    /// let held = locks.lock("k");
    /// assert!(locks.try_lock("k").is_none()); // the stripe is taken
    /// drop(held);
    /// assert!(locks.try_lock("k").is_some());
    /// ```
    #[inline]
    pub fn try_lock<Q: Hash + ?Sized>(&self, key: &Q) -> Option<MutexGuard<'_, R, T>> {
        self.get(key).try_lock()
    }

    /// Locks the stripes of all `keys`, each once, in ascending stripe order.
    ///
    /// Because every bulk locker takes stripes in the same (ascending) order, concurrent
    /// calls with overlapping keys never deadlock one another. The calling thread must not
    /// already hold one of these stripes (see [`lock`](Self::lock)).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let accounts: Striped<Mutex<()>> = Striped::new(32);
    /// // Transfer between two accounts: both locked, whatever the argument order.
    /// let held = accounts.lock_all([&"acct-9", &"acct-1"]);
    /// assert_eq!(held.stripes(), accounts.indices_of(["acct-1", "acct-9"]));
    /// ```
    pub fn lock_all<Q, I>(&self, keys: I) -> StripeGuards<MutexGuard<'_, R, T>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        self.lock_each(keys, Mutex::lock)
    }

    /// Locks the stripes of all `keys` if all are free right now; otherwise locks none.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(1);
    /// let held = locks.lock(&1);
    /// assert!(locks.try_lock_all([1, 2]).is_none());
    /// drop(held);
    /// assert!(locks.try_lock_all([1, 2]).is_some());
    /// ```
    pub fn try_lock_all<Q, I>(&self, keys: I) -> Option<StripeGuards<MutexGuard<'_, R, T>>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        self.try_lock_each(keys, Mutex::try_lock)
    }
}

impl<R: RawRwLock, T, S: BuildHasher> Striped<RwLock<R, T>, S> {
    /// Locks the stripe of `key` for reading (shared).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let versions: Striped<RwLock<u32>> = Striped::new(8);
    /// let a = versions.read("doc");
    /// let b = versions.read("doc"); // readers share the stripe
    /// assert_eq!(*a + *b, 0);
    /// ```
    #[inline]
    pub fn read<Q: Hash + ?Sized>(&self, key: &Q) -> RwLockReadGuard<'_, R, T> {
        self.get(key).read()
    }

    /// Locks the stripe of `key` for writing (exclusive).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let versions: Striped<RwLock<u32>> = Striped::new(8);
    /// *versions.write("doc") += 1;
    /// assert_eq!(*versions.read("doc"), 1);
    /// ```
    #[inline]
    pub fn write<Q: Hash + ?Sized>(&self, key: &Q) -> RwLockWriteGuard<'_, R, T> {
        self.get(key).write()
    }

    /// Locks the stripe of `key` for reading if possible right now.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<RwLock<()>> = Striped::new(8);
    /// let writer = locks.write("k");
    /// assert!(locks.try_read("k").is_none());
    /// drop(writer);
    /// assert!(locks.try_read("k").is_some());
    /// ```
    #[inline]
    pub fn try_read<Q: Hash + ?Sized>(&self, key: &Q) -> Option<RwLockReadGuard<'_, R, T>> {
        self.get(key).try_read()
    }

    /// Locks the stripe of `key` for writing if possible right now.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<RwLock<()>> = Striped::new(8);
    /// let reader = locks.read("k");
    /// assert!(locks.try_write("k").is_none());
    /// drop(reader);
    /// assert!(locks.try_write("k").is_some());
    /// ```
    #[inline]
    pub fn try_write<Q: Hash + ?Sized>(&self, key: &Q) -> Option<RwLockWriteGuard<'_, R, T>> {
        self.get(key).try_write()
    }

    /// Read-locks the stripes of all `keys`, each once, in ascending stripe order.
    ///
    /// Mixing bulk readers and bulk writers never deadlocks: all take stripes in the same
    /// order. A thread must not already hold one of these stripes: a read lock taken twice
    /// can deadlock behind a queued writer.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<RwLock<()>> = Striped::new(4);
    /// let readers = locks.read_all(["x", "y"]);
    /// assert!(locks.try_read("x").is_some()); // shared
    /// assert!(locks.try_write("x").is_none());
    /// drop(readers);
    /// ```
    pub fn read_all<Q, I>(&self, keys: I) -> StripeGuards<RwLockReadGuard<'_, R, T>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        self.lock_each(keys, RwLock::read)
    }

    /// Write-locks the stripes of all `keys`, each once, in ascending stripe order.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::RwLock;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<RwLock<()>> = Striped::new(4);
    /// let held = locks.write_all(["x", "y"]);
    /// assert!(locks.try_read("x").is_none());
    /// drop(held);
    /// assert!(locks.try_read("x").is_some());
    /// ```
    pub fn write_all<Q, I>(&self, keys: I) -> StripeGuards<RwLockWriteGuard<'_, R, T>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        self.lock_each(keys, RwLock::write)
    }
}

impl<L, S: BuildHasher> Striped<L, S> {
    /// Takes `acquire` (which waits) on the distinct stripes of `keys`, in ascending order.
    fn lock_each<'a, G, Q, I>(
        &'a self,
        keys: I,
        mut acquire: impl FnMut(&'a L) -> G,
    ) -> StripeGuards<G>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        self.try_lock_each(keys, |stripe| Some(acquire(stripe)))
            .expect("blocking locks always succeed")
    }

    /// Takes `acquire` on the distinct stripes of `keys` in ascending order; on the first
    /// `None`, releases what was taken (by dropping it) and returns `None`.
    fn try_lock_each<'a, G, Q, I>(
        &'a self,
        keys: I,
        mut acquire: impl FnMut(&'a L) -> Option<G>,
    ) -> Option<StripeGuards<G>>
    where
        Q: Hash,
        I: IntoIterator<Item = Q>,
    {
        let indices = self.indices_of(keys);
        let mut guards = Vec::with_capacity(indices.len());
        for index in indices {
            guards.push((index, acquire(&self.stripes[index])?));
        }
        Some(StripeGuards { guards })
    }
}

impl<L: fmt::Debug, S> fmt::Debug for Striped<L, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Striped")
            .field("stripe_count", &self.stripes.len())
            .finish_non_exhaustive()
    }
}

/// Guards of the stripes locked by one bulk call, in ascending stripe order.
///
/// Dropping it releases every stripe. Returned by [`Striped::lock_all`],
/// [`Striped::try_lock_all`], [`Striped::read_all`] and [`Striped::write_all`].
#[must_use = "if unused the locks will immediately unlock"]
#[clippy::has_significant_drop]
pub struct StripeGuards<G> {
    /// `(stripe index, guard)`, strictly ascending by index.
    guards: Vec<(usize, G)>,
}

impl<G> StripeGuards<G> {
    /// The number of distinct stripes held.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(1);
    /// assert_eq!(locks.lock_all(["a", "b"]).len(), 1); // one stripe holds both
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.guards.len()
    }

    /// Whether no stripe is held (no keys were given).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(4);
    /// assert!(locks.lock_all(Vec::<u32>::new()).is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.guards.is_empty()
    }

    /// The indices of the held stripes, strictly ascending.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(16);
    /// let held = locks.lock_all(["c", "a", "b"]);
    /// assert_eq!(held.stripes(), locks.indices_of(["a", "b", "c"]));
    /// ```
    #[must_use]
    pub fn stripes(&self) -> Vec<usize> {
        self.guards.iter().map(|(index, _)| *index).collect()
    }

    /// The guard of stripe `index`, if it is held.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let totals: Striped<Mutex<u32>> = Striped::new(4);
    /// let held = totals.lock_all(["a"]);
    /// assert_eq!(held.get(totals.index_of("a")).map(|guard| **guard), Some(0));
    /// ```
    #[must_use]
    pub fn get(&self, index: usize) -> Option<&G> {
        self.position(index).map(|at| &self.guards[at].1)
    }

    /// The guard of stripe `index`, mutably, if it is held (to reach the guarded data).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let totals: Striped<Mutex<u32>> = Striped::new(4);
    /// let mut held = totals.lock_all(["a", "b"]);
    /// **held.get_mut(totals.index_of("a")).unwrap() += 1;
    /// drop(held);
    /// assert_eq!(*totals.lock("a"), 1);
    /// ```
    #[must_use]
    pub fn get_mut(&mut self, index: usize) -> Option<&mut G> {
        self.position(index).map(|at| &mut self.guards[at].1)
    }

    /// `(stripe index, guard)` pairs in ascending index order.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let totals: Striped<Mutex<u32>> = Striped::new(4);
    /// let held = totals.lock_all(["a", "b"]);
    /// let sum: u32 = held.iter().map(|(_, guard)| **guard).sum();
    /// assert_eq!(sum, 0);
    /// ```
    #[must_use]
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (usize, &G)> {
        self.guards.iter().map(|(index, guard)| (*index, guard))
    }

    /// `(stripe index, guard)` pairs in ascending index order, guards mutable.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let totals: Striped<Mutex<usize>> = Striped::new(4);
    /// let mut held = totals.lock_all(["a", "b"]);
    /// for (index, guard) in held.iter_mut() {
    ///     **guard = index;
    /// }
    /// drop(held);
    /// assert_eq!(*totals.lock("a"), totals.index_of("a"));
    /// ```
    pub fn iter_mut(&mut self) -> impl ExactSizeIterator<Item = (usize, &mut G)> {
        self.guards.iter_mut().map(|(index, guard)| (*index, guard))
    }

    /// The individual guards, in ascending stripe order (the order of
    /// [`stripes`](Self::stripes)), to release them one by one.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(64);
    /// let held = locks.lock_all(["a", "b"]);
    /// let first = held.stripes()[0];
    /// let mut guards = held.into_guards();
    /// drop(guards.remove(0)); // release the first stripe early
    /// assert!(locks.stripe(first).unwrap().try_lock().is_some());
    /// ```
    #[must_use]
    pub fn into_guards(self) -> Vec<G> {
        self.guards.into_iter().map(|(_, guard)| guard).collect()
    }

    fn position(&self, index: usize) -> Option<usize> {
        self.guards.binary_search_by_key(&index, |(at, _)| *at).ok()
    }
}

impl<G> fmt::Debug for StripeGuards<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StripeGuards")
            .field("stripes", &self.stripes())
            .finish()
    }
}

#[cfg(all(test, loom))]
mod tests {
    mod loom_striped;
}
