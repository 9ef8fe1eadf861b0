//! The one core of both keyed lock managers: the registry, the constructors, the probes and
//! the guards, generic over the [`Flavor`] (blocking or async) that decides how a caller
//! waits and who owns a hold. `blocking.rs` and `future.rs` add only their way of waiting.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;
use std::ops::Deref;

use lock_api::GuardNoSend;

use super::registry::{Outcome, Registry, Ticket, Wake};
use super::{DefaultHashBuilder, default_shards};
use crate::loom::{thread, unique_token};

/// How a keyed lock manager's callers wait and own their holds: [`Blocking`] (the
/// [`KeyedLocks`](super::KeyedLocks) face) or `Async` (the `AsyncKeyedLocks` face, feature
/// `tokio`). Sealed: there is no other flavor.
///
/// # Examples
///
/// ```
/// use chainlock::keyed::{Blocking, Flavor, KeyGuard};
///
/// // The flavor is a type parameter of the guards too.
/// fn count<F: Flavor>(guards: Vec<KeyGuard<'_, u8, chainlock::keyed::DefaultHashBuilder, F>>) -> usize {
///     guards.len()
/// }
/// let locks = chainlock::keyed::KeyedLocks::new();
/// let guards: Vec<KeyGuard<'_, u8, _, Blocking>> = vec![locks.lock(1), locks.lock(2)];
/// assert_eq!(count(guards), 2);
/// ```
pub trait Flavor: sealed::Sealed {}

pub(super) mod sealed {
    /// What the core needs to know about a [`Flavor`](super::Flavor).
    pub trait Sealed: 'static {
        /// The public name of the manager of this flavor (for `Debug`).
        const MANAGER: &'static str;
        /// Whether holds belong to the calling thread, which may then take a key it holds
        /// again; otherwise each acquisition is its own owner.
        const PER_THREAD: bool;
    }
}

/// The blocking flavor: a thread owns its holds, reentrantly; guards are `!Send`.
#[derive(Debug)]
pub struct Blocking(PhantomData<GuardNoSend>);

impl Flavor for Blocking {}

impl sealed::Sealed for Blocking {
    const MANAGER: &'static str = "KeyedLocks";
    const PER_THREAD: bool = true;
}

/// A manager of named, FIFO-fair locks, one per key of type `K`, generic over its
/// [`Flavor`]. Use it through its faces: [`KeyedLocks`](super::KeyedLocks) (blocking,
/// reentrant per thread) and, with the `tokio` feature, `AsyncKeyedLocks` (futures,
/// one owner per acquisition). The constructors and probes below serve both.
///
/// `S` builds the hasher that spreads keys over the registry's shards. See the
/// [module documentation](super) for the guarantees.
///
/// # Examples
///
/// Code that only builds or probes a manager can serve both faces:
///
/// ```
/// use chainlock::keyed::{DefaultHashBuilder, Flavor, KeyedLocks, LockManager};
///
/// fn busy<F: Flavor>(locks: &LockManager<String, DefaultHashBuilder, F>, keys: &[&str]) -> usize {
///     keys.iter().filter(|key| locks.is_locked(**key)).count()
/// }
///
/// let locks = KeyedLocks::new();
/// let _a = locks.lock("a".to_owned());
/// assert_eq!(busy(&locks, &["a", "b"]), 1);
/// ```
pub struct LockManager<K, S, F> {
    pub(super) registry: Registry<K, S>,
    /// The manager is `Send + Sync` whatever the flavor's guards are.
    _flavor: PhantomData<fn() -> F>,
}

impl<K: Eq + Hash, F: Flavor> LockManager<K, DefaultHashBuilder, F> {
    /// Creates an empty manager with the default number of shards (four per core) and a
    /// randomly seeded [`DefaultHashBuilder`].
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedLocks::<String>::new();
    /// assert!(locks.is_empty());
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self::with_shards_and_hasher(default_shards(), DefaultHashBuilder::default())
    }

    /// Creates an empty manager with `shards` shards (rounded up to a power of two, at
    /// most 65 536).
    ///
    /// One shard is one lock for all keys' bookkeeping; more shards let more unrelated
    /// keys be locked and released at the same instant.
    ///
    /// # Panics
    ///
    /// Panics if `shards` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedLocks::<u64>::with_shards(100);
    /// assert_eq!(locks.shard_count(), 128);
    /// ```
    #[must_use]
    #[track_caller]
    pub fn with_shards(shards: usize) -> Self {
        Self::with_shards_and_hasher(shards, DefaultHashBuilder::default())
    }
}

impl<K: Eq + Hash, F: Flavor> Default for LockManager<K, DefaultHashBuilder, F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Eq + Hash, S: BuildHasher, F: Flavor> LockManager<K, S, F> {
    /// Creates an empty manager that hashes keys with `hasher`, with the default number of
    /// shards.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::hash::BuildHasherDefault;
    /// use std::collections::hash_map::DefaultHasher;
    /// use chainlock::keyed::KeyedLocks;
    ///
    /// // A fixed hasher: the same key picks the same shard in every run.
    /// let locks: KeyedLocks<u32, BuildHasherDefault<DefaultHasher>> =
    ///     KeyedLocks::with_hasher(BuildHasherDefault::default());
    /// drop(locks.lock(1));
    /// ```
    #[must_use]
    pub fn with_hasher(hasher: S) -> Self {
        Self::with_shards_and_hasher(default_shards(), hasher)
    }

    /// Creates an empty manager with `shards` shards (rounded up to a power of two, at most
    /// 65 536) that hashes keys with `hasher`.
    ///
    /// # Panics
    ///
    /// Panics if `shards` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::keyed::{DefaultHashBuilder, KeyedLocks};
    ///
    /// let locks: KeyedLocks<&str> = KeyedLocks::with_shards_and_hasher(3, DefaultHashBuilder::default());
    /// assert_eq!(locks.shard_count(), 4);
    /// ```
    #[must_use]
    #[track_caller]
    pub fn with_shards_and_hasher(shards: usize, hasher: S) -> Self {
        Self {
            registry: Registry::new(shards, hasher),
            _flavor: PhantomData,
        }
    }

    /// Locks `key` if it is free right now; never waits. With [`KeyedLocks`](super::KeyedLocks),
    /// a key the calling thread holds already counts as free (one more hold); with
    /// `AsyncKeyedLocks` each acquisition is its own owner, so a held key is never free.
    ///
    /// # Panics
    ///
    /// Panics if the thread would hold `key` more than `usize::MAX` times, or if `K`'s
    /// `Hash` or `Eq` panics (the manager stays consistent).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedLocks::new();
    /// let held = locks.lock("k");
    /// assert!(locks.try_lock("k").is_some()); // reentrant
    /// std::thread::scope(|s| {
    ///     s.spawn(|| assert!(locks.try_lock("k").is_none()));
    /// });
    /// # drop(held);
    /// ```
    #[inline]
    pub fn try_lock(&self, key: K) -> Option<KeyGuard<'_, K, S, F>> {
        match self.claim(key, None::<fn() -> Wake>) {
            Outcome::Held(ticket) => Some(self.guard(ticket)),
            Outcome::Busy => None,
            Outcome::Queued(..) => unreachable!("a try never queues"),
        }
    }

    /// Whether `key` is held by anyone right now (a snapshot, stale once returned).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedLocks::new();
    /// let guard = locks.lock(7);
    /// assert!(locks.is_locked(&7));
    /// drop(guard);
    /// assert!(!locks.is_locked(&7));
    /// ```
    pub fn is_locked<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.registry.probe(key).is_some()
    }

    /// The number of callers (threads, or lock futures) waiting for `key` right now (a
    /// snapshot).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedLocks::new();
    /// let held = locks.lock("k");
    /// assert_eq!(locks.waiting(&"k"), 0);
    /// # drop(held);
    /// ```
    pub fn waiting<Q>(&self, key: &Q) -> usize
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.registry.probe(key).unwrap_or(0)
    }

    /// Takes `key` for a new owner of this flavor, or queues a waiter woken by `queue()`
    /// (see [`Registry::acquire`]).
    #[inline]
    pub(super) fn claim(&self, key: K, queue: Option<impl FnOnce() -> Wake>) -> Outcome {
        let owner = if F::PER_THREAD {
            thread::token()
        } else {
            unique_token()
        };
        self.registry.acquire(key, owner, F::PER_THREAD, queue)
    }
}

impl<K, S, F> LockManager<K, S, F> {
    /// The number of keys held right now (each with its waiters); 0 means the manager holds
    /// no memory for any key.
    ///
    /// Counted shard by shard: exact when no other thread locks or releases meanwhile.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedLocks::new();
    /// let both = locks.lock_all(["a", "b"]);
    /// assert_eq!(locks.len(), 2);
    /// drop(both);
    /// assert_eq!(locks.len(), 0);
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.registry.len()
    }

    /// Whether no key is held (see [`len`](Self::len)).
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedLocks::new();
    /// let held = locks.lock(1);
    /// assert!(!locks.is_empty());
    /// drop(held);
    /// assert!(locks.is_empty());
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
    /// let locks = chainlock::keyed::KeyedLocks::<u8>::with_shards(5);
    /// assert_eq!(locks.shard_count(), 8);
    /// ```
    #[must_use]
    pub fn shard_count(&self) -> usize {
        self.registry.shard_count()
    }

    /// The guard of a hold taken for this flavor.
    #[inline]
    pub(super) fn guard(&self, ticket: Ticket) -> KeyGuard<'_, K, S, F> {
        KeyGuard {
            registry: &self.registry,
            ticket,
            _flavor: PhantomData,
        }
    }
}

impl<K, S, F: Flavor> fmt::Debug for LockManager<K, S, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(F::MANAGER)
            .field("shards", &self.registry.shard_count())
            .field("held", &self.registry.len())
            .finish()
    }
}

/// One hold of a key of a keyed lock manager; the hold is released when it drops.
///
/// With the [`Blocking`] flavor ([`KeyedLocks`](super::KeyedLocks)) a guard is `!Send`: the
/// hold belongs to the thread that took it (reentrancy is per thread), so it cannot be
/// released from another thread. This is checked at compile time:
///
/// ```compile_fail
/// let locks = chainlock::keyed::KeyedLocks::new();
/// let guard = locks.lock(1);
/// std::thread::scope(|s| {
///     s.spawn(move || drop(guard)); // error: `KeyGuard` cannot be sent between threads
/// });
/// ```
///
/// The same program passes when the guard stays on its thread:
///
/// ```
/// let locks = chainlock::keyed::KeyedLocks::new();
/// let guard = locks.lock(1);
/// std::thread::scope(|s| {
///     s.spawn(|| assert!(locks.try_lock(1).is_none()));
/// });
/// drop(guard);
/// ```
///
/// An `AsyncKeyGuard` (the async flavor) is `Send` and may be held across `.await` in a
/// multi-threaded runtime.
#[must_use = "if unused the lock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct KeyGuard<'a, K, S = DefaultHashBuilder, F = Blocking> {
    registry: &'a Registry<K, S>,
    ticket: Ticket,
    /// `!Send` for [`Blocking`] (the hold is the thread's), but always `Sync`: sharing
    /// `&KeyGuard` is harmless.
    _flavor: PhantomData<F>,
}

impl<K, S, F> Drop for KeyGuard<'_, K, S, F> {
    #[inline]
    fn drop(&mut self) {
        self.registry.release(self.ticket);
    }
}

impl<K, S, F> fmt::Debug for KeyGuard<'_, K, S, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyGuard").finish_non_exhaustive()
    }
}

/// The holds of a set of keys taken by one `lock_all` call (and friends), in ascending key
/// order, released together when it drops. `!Send` for the [`Blocking`] flavor, like
/// [`KeyGuard`].
///
/// It dereferences to the slice of its guards, one per distinct key (`len`, `is_empty`,
/// `iter`).
///
/// # Examples
///
/// ```
/// let locks = chainlock::keyed::KeyedLocks::new();
/// let held = locks.lock_all(["b", "a", "b"]);
/// assert_eq!(held.len(), 2); // distinct keys
/// assert!(locks.lock_all(Vec::<&str>::new()).is_empty());
/// ```
#[must_use = "if unused the locks will immediately unlock"]
#[clippy::has_significant_drop]
pub struct KeySetGuard<'a, K, S = DefaultHashBuilder, F = Blocking> {
    guards: Vec<KeyGuard<'a, K, S, F>>,
}

impl<'a, K, S, F> KeySetGuard<'a, K, S, F> {
    pub(super) fn new(guards: Vec<KeyGuard<'a, K, S, F>>) -> Self {
        Self { guards }
    }

    /// The individual guards, in locking (ascending key) order, to release them one by one.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedLocks::new();
    /// let mut guards = locks.lock_all([2, 1]).into_guards();
    /// drop(guards.remove(0)); // releases key 1 only
    /// assert!(!locks.is_locked(&1));
    /// assert!(locks.is_locked(&2));
    /// ```
    #[must_use]
    pub fn into_guards(self) -> Vec<KeyGuard<'a, K, S, F>> {
        self.guards
    }
}

impl<'a, K, S, F> Deref for KeySetGuard<'a, K, S, F> {
    type Target = [KeyGuard<'a, K, S, F>];

    fn deref(&self) -> &Self::Target {
        &self.guards
    }
}

impl<K, S, F> fmt::Debug for KeySetGuard<'_, K, S, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeySetGuard")
            .field("len", &self.guards.len())
            .finish()
    }
}
