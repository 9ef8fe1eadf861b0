//! The one core of both keyed permit managers (a counting semaphore per key): constructors,
//! probes, `try_acquire` and the guard, generic over the [`Flavor`]. `permits_blocking.rs`
//! and `permits_future.rs` add only their way of waiting.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;

use super::manager::{Blocking, Flavor};
use super::registry::Ticket;
use super::registry::{Outcome, Wake};
use super::rw::weighted_guard;
use super::weighted::Weighted;
use super::{DefaultHashBuilder, default_shards};

/// A manager of named counting semaphores: at most `permits` holders of each key at once,
/// generic over its [`Flavor`]. Use it through its faces: [`KeyedPermits`](super::KeyedPermits)
/// (blocking) and, with the `tokio` feature, `AsyncKeyedPermits` (futures).
///
/// The number of permits is the same for every key and given at construction (a key is a
/// *name*: nothing could tell two callers' per-call counts apart). Strict FIFO per key,
/// timeouts, entries removed with the last release: see the
/// [module documentation](super#reader-writer-locks-and-permits).
///
/// # Examples
///
/// ```
/// use chainlock::keyed::KeyedPermits;
///
/// // At most two downloads per host at once.
/// let hosts = KeyedPermits::new(2);
/// let a = hosts.acquire("example.org");
/// let b = hosts.acquire("example.org");
/// assert!(hosts.try_acquire("example.org").is_none());
/// assert!(hosts.try_acquire("example.com").is_some()); // other hosts are independent
/// drop((a, b));
/// assert!(hosts.is_empty());
/// ```
pub struct PermitManager<K, S, F> {
    pub(super) registry: Weighted<K, S>,
    _flavor: PhantomData<fn() -> F>,
}

impl<K: Eq + Hash, F: Flavor> PermitManager<K, DefaultHashBuilder, F> {
    /// Creates an empty manager giving out `permits` permits per key, with the default
    /// number of shards and a randomly seeded [`DefaultHashBuilder`].
    ///
    /// # Panics
    ///
    /// Panics if `permits` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let hosts = chainlock::keyed::KeyedPermits::<&str>::new(4);
    /// assert_eq!(hosts.permits(), 4);
    /// ```
    #[must_use]
    #[track_caller]
    pub fn new(permits: usize) -> Self {
        Self::with_shards_and_hasher(permits, default_shards(), DefaultHashBuilder::default())
    }

    /// Creates an empty manager of `permits` permits per key with `shards` shards (rounded
    /// up to a power of two, at most 65 536).
    ///
    /// # Panics
    ///
    /// Panics if `permits` or `shards` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let hosts = chainlock::keyed::KeyedPermits::<&str>::with_shards(2, 3);
    /// assert_eq!(hosts.shard_count(), 4);
    /// ```
    #[must_use]
    #[track_caller]
    pub fn with_shards(permits: usize, shards: usize) -> Self {
        Self::with_shards_and_hasher(permits, shards, DefaultHashBuilder::default())
    }
}

impl<K: Eq + Hash, S: BuildHasher, F: Flavor> PermitManager<K, S, F> {
    /// Creates an empty manager of `permits` permits per key that hashes keys with `hasher`.
    ///
    /// # Panics
    ///
    /// Panics if `permits` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::hash::BuildHasherDefault;
    /// use std::collections::hash_map::DefaultHasher;
    /// use chainlock::keyed::KeyedPermits;
    ///
    /// let hosts: KeyedPermits<u32, BuildHasherDefault<DefaultHasher>> =
    ///     KeyedPermits::with_hasher(3, BuildHasherDefault::default());
    /// drop(hosts.acquire(1));
    /// ```
    #[must_use]
    #[track_caller]
    pub fn with_hasher(permits: usize, hasher: S) -> Self {
        Self::with_shards_and_hasher(permits, default_shards(), hasher)
    }

    /// Creates an empty manager of `permits` permits per key with `shards` shards that
    /// hashes keys with `hasher`.
    ///
    /// # Panics
    ///
    /// Panics if `permits` or `shards` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::keyed::{DefaultHashBuilder, KeyedPermits};
    ///
    /// let hosts: KeyedPermits<&str> = KeyedPermits::with_shards_and_hasher(1, 1, DefaultHashBuilder::default());
    /// assert_eq!((hosts.permits(), hosts.shard_count()), (1, 1));
    /// ```
    #[must_use]
    #[track_caller]
    pub fn with_shards_and_hasher(permits: usize, shards: usize, hasher: S) -> Self {
        assert!(
            permits > 0,
            "a keyed permit manager needs at least one permit per key"
        );
        Self {
            registry: Weighted::new(shards, permits as u64, hasher),
            _flavor: PhantomData,
        }
    }

    /// Takes a permit of `key` if one is free right now and nobody waits for one; never
    /// waits.
    ///
    /// # Panics
    ///
    /// Panics if `K`'s `Hash` or `Eq` panics (the manager stays consistent).
    ///
    /// # Examples
    ///
    /// ```
    /// let hosts = chainlock::keyed::KeyedPermits::new(1);
    /// let held = hosts.try_acquire("h").unwrap();
    /// assert!(hosts.try_acquire("h").is_none());
    /// drop(held);
    /// assert!(hosts.try_acquire("h").is_some());
    /// ```
    #[inline]
    pub fn try_acquire(&self, key: K) -> Option<PermitGuard<'_, K, S, F>> {
        match self.registry.acquire(key, 1, None::<fn() -> Wake>) {
            Outcome::Held(ticket) => Some(PermitGuard::new(&self.registry, ticket)),
            Outcome::Busy => None,
            Outcome::Queued(..) => unreachable!("a try never queues"),
        }
    }

    /// The number of permits of `key` free right now (a snapshot).
    ///
    /// # Examples
    ///
    /// ```
    /// let hosts = chainlock::keyed::KeyedPermits::new(3);
    /// let held = hosts.acquire("h");
    /// assert_eq!(hosts.available(&"h"), 2);
    /// assert_eq!(hosts.available(&"other"), 3);
    /// # drop(held);
    /// ```
    pub fn available<Q>(&self, key: &Q) -> usize
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let used = self.registry.probe(key).map_or(0, |(used, _)| used);
        (self.registry.capacity() - used) as usize
    }

    /// The number of callers waiting for a permit of `key` right now (a snapshot).
    ///
    /// # Examples
    ///
    /// ```
    /// let hosts = chainlock::keyed::KeyedPermits::new(1);
    /// let held = hosts.acquire("h");
    /// assert_eq!(hosts.waiting(&"h"), 0);
    /// # drop(held);
    /// ```
    pub fn waiting<Q>(&self, key: &Q) -> usize
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.registry.probe(key).map_or(0, |(_, waiting)| waiting)
    }
}

impl<K, S, F> PermitManager<K, S, F> {
    /// The number of permits of every key.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(chainlock::keyed::KeyedPermits::<u8>::new(5).permits(), 5);
    /// ```
    #[must_use]
    pub fn permits(&self) -> usize {
        self.registry.capacity() as usize
    }

    /// The number of keys with a permit held right now; 0 means the manager holds no memory
    /// for any key. Counted shard by shard.
    ///
    /// # Examples
    ///
    /// ```
    /// let hosts = chainlock::keyed::KeyedPermits::new(2);
    /// let held = (hosts.acquire("a"), hosts.acquire("a"), hosts.acquire("b"));
    /// assert_eq!(hosts.len(), 2);
    /// drop(held);
    /// assert_eq!(hosts.len(), 0);
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.registry.len()
    }

    /// Whether no permit is held (see [`len`](Self::len)).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(chainlock::keyed::KeyedPermits::<u8>::new(1).is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of shards of the registry (a power of two).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(chainlock::keyed::KeyedPermits::<u8>::with_shards(1, 5).shard_count(), 8);
    /// ```
    #[must_use]
    pub fn shard_count(&self) -> usize {
        self.registry.shard_count()
    }
}

impl<K, S, F: Flavor> fmt::Debug for PermitManager<K, S, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = if F::PER_THREAD {
            "KeyedPermits"
        } else {
            "AsyncKeyedPermits"
        };
        f.debug_struct(name)
            .field("permits", &self.registry.capacity())
            .field("shards", &self.registry.shard_count())
            .field("held", &self.registry.len())
            .finish()
    }
}

weighted_guard!(
    /// One permit of a key of a keyed permit manager, given back when it drops. `Send` in
    /// both flavors.
    ///
    /// # Examples
    ///
    /// ```
    /// let hosts = chainlock::keyed::KeyedPermits::new(1);
    /// let permit = hosts.acquire("h");
    /// std::thread::scope(|s| {
    ///     s.spawn(move || drop(permit)); // given back by another thread
    /// });
    /// assert!(hosts.is_empty());
    /// ```
    PermitGuard,
    1
);
