//! The blocking, thread-reentrant keyed lock manager.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;
use std::time::{Duration, Instant};

use lock_api::GuardNoSend;

use super::registry::{Acquire, Registry, Ticket, Waiter, Wake};
use super::{DefaultHashBuilder, default_shards};
use crate::loom::sync::Arc;
use crate::loom::thread;

/// When a blocking acquisition gives up.
#[derive(Clone, Copy, Debug)]
enum Deadline {
    /// Don't wait at all.
    Now,
    /// Wait until this instant (enqueued even if it has passed, so the grant race is real).
    At(Instant),
    /// Wait as long as it takes.
    Never,
}

impl Deadline {
    fn after(timeout: Duration) -> Self {
        if timeout.is_zero() {
            Self::Now
        } else {
            // A timeout too large for the clock is an infinite one.
            Instant::now()
                .checked_add(timeout)
                .map_or(Self::Never, Self::At)
        }
    }
}

/// A manager of named, thread-reentrant, FIFO-fair locks, one per key of type `K`.
///
/// A key is locked with [`lock`](Self::lock) (or [`try_lock`](Self::try_lock),
/// [`try_lock_for`](Self::try_lock_for), [`try_lock_until`](Self::try_lock_until)) and
/// released when the returned [`KeyGuard`] drops. `S` builds the hasher that spreads keys
/// over the registry's shards. See the [module documentation](super) for the guarantees.
///
/// The manager protects no data itself: it is the keys' *names* that are locked. Keep the
/// data elsewhere (a map, files, a database) and touch a key's part only under its guard.
///
/// # Examples
///
/// ```
/// use std::collections::HashMap;
/// use std::sync::Mutex;
/// use chainlock::keyed::KeyedLocks;
///
/// // Serialize slow work per account; unrelated accounts proceed in parallel.
/// let locks = KeyedLocks::new();
/// let balances = Mutex::new(HashMap::from([(1_u32, 100_i64), (2, 0)]));
/// std::thread::scope(|s| {
///     for _ in 0..4 {
///         s.spawn(|| {
///             let _account = locks.lock(1_u32);
///             let balance = balances.lock().unwrap()[&1];
///             // ... a slow computation that must not interleave for account 1 ...
///             balances.lock().unwrap().insert(1, balance - 10);
///         });
///     }
/// });
/// assert_eq!(balances.lock().unwrap()[&1], 60);
/// assert!(locks.is_empty());
/// ```
pub struct KeyedLocks<K, S = DefaultHashBuilder> {
    registry: Registry<K, S>,
}

impl<K: Eq + Hash> KeyedLocks<K> {
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

impl<K: Eq + Hash> Default for KeyedLocks<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Eq + Hash, S: BuildHasher> KeyedLocks<K, S> {
    /// Creates an empty manager that hashes keys with `hasher`, with the default number of
    /// shards.
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
    #[must_use]
    #[track_caller]
    pub fn with_shards_and_hasher(shards: usize, hasher: S) -> Self {
        Self {
            registry: Registry::new(shards, hasher),
        }
    }

    /// Locks `key`, blocking until it is available.
    ///
    /// If the calling thread already holds `key`, this returns at once with one more hold
    /// (reentrancy); the key is released when its last guard drops. Otherwise the thread
    /// queues behind earlier waiters and is handed the key in arrival order.
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
    /// let guard = locks.lock(7);
    /// assert!(locks.is_locked(&7));
    /// drop(guard);
    /// assert!(!locks.is_locked(&7));
    /// ```
    #[inline]
    pub fn lock(&self, key: K) -> KeyGuard<'_, K, S> {
        self.acquire(key, Deadline::Never)
            .expect("an untimed lock always succeeds")
    }

    /// Locks `key` if it is free, or already held by this thread; never waits.
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
    pub fn try_lock(&self, key: K) -> Option<KeyGuard<'_, K, S>> {
        self.acquire(key, Deadline::Now)
    }

    /// Locks `key`, waiting at most `timeout`; `None` if the time ran out.
    ///
    /// A zero timeout is [`try_lock`](Self::try_lock); a timeout beyond what the clock can
    /// represent (such as `Duration::MAX`) waits forever. If the key is handed over just as
    /// the time runs out, the key is taken and returned: a grant is never thrown away.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let locks = chainlock::keyed::KeyedLocks::new();
    /// let _held = locks.lock(1);
    /// std::thread::scope(|s| {
    ///     s.spawn(|| assert!(locks.try_lock_for(1, Duration::from_millis(5)).is_none()));
    /// });
    /// ```
    #[inline]
    pub fn try_lock_for(&self, key: K, timeout: Duration) -> Option<KeyGuard<'_, K, S>> {
        self.acquire(key, Deadline::after(timeout))
    }

    /// Locks `key`, waiting until `deadline` at the latest; `None` if it passed first.
    ///
    /// A deadline in the past still joins the queue for an instant: if the key is handed
    /// over meanwhile, it is returned.
    #[inline]
    pub fn try_lock_until(&self, key: K, deadline: Instant) -> Option<KeyGuard<'_, K, S>> {
        self.acquire(key, Deadline::At(deadline))
    }

    /// Whether `key` is held by anyone right now (a snapshot, stale once returned).
    pub fn is_locked<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.registry.probe(key).is_some()
    }

    /// The number of threads waiting for `key` right now (a snapshot).
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

    /// The uncontended path, inlined into each public method (so `deadline` is a
    /// constant there); waiting is [`wait`](Self::wait), out of line.
    #[inline]
    fn acquire(&self, key: K, deadline: Deadline) -> Option<KeyGuard<'_, K, S>> {
        let queue = match deadline {
            Deadline::Now => None,
            Deadline::At(_) | Deadline::Never => Some(|| Wake::Thread(thread::current())),
        };
        let ticket = match self.registry.acquire(key, thread::token(), true, queue) {
            Acquire::Held(ticket) => ticket,
            Acquire::Busy => return None,
            Acquire::Queued(ticket, waiter) => self.wait(ticket, &waiter, deadline)?,
        };
        Some(KeyGuard {
            registry: &self.registry,
            ticket,
            _not_send: PhantomData,
        })
    }

    /// Sleeps until `waiter` is granted its key (`Some`), or until `deadline` passes and it
    /// has left the queue (`None`).
    #[cold]
    #[inline(never)]
    fn wait(&self, ticket: Ticket, waiter: &Arc<Waiter>, deadline: Deadline) -> Option<Ticket> {
        loop {
            if waiter.is_granted() {
                return Some(ticket);
            }
            match deadline {
                Deadline::Never => thread::park(),
                Deadline::At(at) => {
                    let now = Instant::now();
                    if now >= at {
                        // Authoritative re-check: granted meanwhile means ours.
                        return self.registry.cancel(ticket, waiter).then_some(ticket);
                    }
                    thread::park_timeout(at - now);
                }
                Deadline::Now => unreachable!("`Now` never queues"),
            }
        }
    }
}

impl<K: Eq + Hash + Ord, S: BuildHasher> KeyedLocks<K, S> {
    /// Locks every key of `keys`, blocking until all are held.
    ///
    /// Keys are taken in ascending `Ord` order (duplicates once), so that concurrent
    /// `lock_all` calls with overlapping sets never deadlock one another. See
    /// [the module documentation](super#ordering-of-multi-key-locking) for why `Ord`.
    ///
    /// # Examples
    ///
    /// ```
    /// let locks = chainlock::keyed::KeyedLocks::new();
    /// std::thread::scope(|s| {
    ///     s.spawn(|| drop(locks.lock_all(["b", "a"])));
    ///     s.spawn(|| drop(locks.lock_all(["a", "b", "a"])));
    /// });
    /// assert!(locks.is_empty());
    /// ```
    pub fn lock_all(&self, keys: impl IntoIterator<Item = K>) -> KeysGuard<'_, K, S> {
        self.acquire_all(keys, Deadline::Never)
            .expect("untimed locks always succeed")
    }

    /// Locks every key of `keys` within `timeout` in total, or none of them: on timeout the
    /// keys taken so far are released and `None` is returned.
    ///
    /// A zero timeout tries each key once without waiting.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let locks = chainlock::keyed::KeyedLocks::new();
    /// let _b = locks.lock("b");
    /// std::thread::scope(|s| {
    ///     s.spawn(|| {
    ///         assert!(locks.try_lock_all_for(["a", "b"], Duration::from_millis(5)).is_none());
    ///         assert!(!locks.is_locked("a")); // all or nothing
    ///     });
    /// });
    /// ```
    pub fn try_lock_all_for(
        &self,
        keys: impl IntoIterator<Item = K>,
        timeout: Duration,
    ) -> Option<KeysGuard<'_, K, S>> {
        self.acquire_all(keys, Deadline::after(timeout))
    }

    /// Locks every key of `keys` before `deadline`, or none of them.
    pub fn try_lock_all_until(
        &self,
        keys: impl IntoIterator<Item = K>,
        deadline: Instant,
    ) -> Option<KeysGuard<'_, K, S>> {
        self.acquire_all(keys, Deadline::At(deadline))
    }

    fn acquire_all(
        &self,
        keys: impl IntoIterator<Item = K>,
        deadline: Deadline,
    ) -> Option<KeysGuard<'_, K, S>> {
        let mut keys: Vec<K> = keys.into_iter().collect();
        keys.sort_unstable();
        keys.dedup();
        let mut guards = Vec::with_capacity(keys.len());
        for key in keys {
            // On `None`, the guards taken so far drop: all or nothing.
            guards.push(self.acquire(key, deadline)?);
        }
        Some(KeysGuard { guards })
    }
}

impl<K, S> KeyedLocks<K, S> {
    /// The number of keys held right now (each with its waiters); 0 means the manager holds
    /// no memory for any key.
    ///
    /// Counted shard by shard: exact when no other thread locks or releases meanwhile.
    #[must_use]
    pub fn len(&self) -> usize {
        self.registry.len()
    }

    /// Whether no key is held (see [`len`](Self::len)).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of shards of the registry (a power of two).
    #[must_use]
    pub fn shard_count(&self) -> usize {
        self.registry.shard_count()
    }
}

impl<K, S> fmt::Debug for KeyedLocks<K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedLocks")
            .field("shards", &self.registry.shard_count())
            .field("held", &self.registry.len())
            .finish()
    }
}

/// One hold of a key of a [`KeyedLocks`]; the hold is released when it drops.
///
/// A guard is `!Send`: the hold belongs to the thread that took it (reentrancy is per
/// thread), so it cannot be released from another thread. This is checked at compile time:
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
#[must_use = "if unused the lock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct KeyGuard<'a, K, S = DefaultHashBuilder> {
    registry: &'a Registry<K, S>,
    ticket: Ticket,
    /// `!Send` (the hold is the thread's), but `Sync`: sharing `&KeyGuard` is harmless.
    _not_send: PhantomData<GuardNoSend>,
}

impl<K, S> Drop for KeyGuard<'_, K, S> {
    #[inline]
    fn drop(&mut self) {
        self.registry.release(self.ticket);
    }
}

impl<K, S> fmt::Debug for KeyGuard<'_, K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyGuard").finish_non_exhaustive()
    }
}

/// The holds of a set of keys taken by [`KeyedLocks::lock_all`] and friends, released
/// together when it drops. `!Send`, like [`KeyGuard`].
#[must_use = "if unused the locks will immediately unlock"]
#[clippy::has_significant_drop]
pub struct KeysGuard<'a, K, S = DefaultHashBuilder> {
    guards: Vec<KeyGuard<'a, K, S>>,
}

impl<'a, K, S> KeysGuard<'a, K, S> {
    /// The number of distinct keys held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.guards.len()
    }

    /// Whether no key is held (an empty set was locked).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.guards.is_empty()
    }

    /// The individual guards, in locking (ascending key) order, to release them one by one.
    #[must_use]
    pub fn into_guards(self) -> Vec<KeyGuard<'a, K, S>> {
        self.guards
    }
}

impl<K, S> fmt::Debug for KeysGuard<'_, K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeysGuard")
            .field("len", &self.guards.len())
            .finish()
    }
}
