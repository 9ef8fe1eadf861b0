//! The blocking face of the keyed lock manager: threads wait by parking, holds are
//! reentrant per thread.

use std::hash::{BuildHasher, Hash};
use std::time::{Duration, Instant};

use super::DefaultHashBuilder;
use super::manager::{Blocking, KeyGuard, KeySetGuard, LockManager};
use super::registry::{Outcome, Ticket, Waiter, Wake};
use super::weighted::Weighted;
use crate::lock_order::ascending_unique;
use crate::loom::sync::Arc;
use crate::loom::thread;

/// A manager of named, thread-reentrant, FIFO-fair locks, one per key of type `K`.
///
/// A key is locked with [`lock`](LockManager::lock) (or [`try_lock`](LockManager::try_lock),
/// [`try_lock_for`](LockManager::try_lock_for), [`try_lock_until`](LockManager::try_lock_until))
/// and released when the returned [`KeyGuard`] drops. `S` builds the hasher that spreads
/// keys over the registry's shards. See the [module documentation](super) for the
/// guarantees.
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
pub type KeyedLocks<K, S = DefaultHashBuilder> = LockManager<K, S, Blocking>;

/// When a blocking acquisition gives up (shared by every blocking keyed face).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Deadline {
    /// Don't wait at all.
    Now,
    /// Wait until this instant (enqueued even if it has passed, so the grant race is real).
    At(Instant),
    /// Wait as long as it takes.
    Forever,
}

impl Deadline {
    pub(crate) fn after(timeout: Duration) -> Self {
        if timeout.is_zero() {
            Self::Now
        } else {
            // A timeout too large for the clock is an infinite one.
            Instant::now()
                .checked_add(timeout)
                .map_or(Self::Forever, Self::At)
        }
    }
}

impl<K: Eq + Hash, S: BuildHasher> LockManager<K, S, Blocking> {
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
    /// let again = locks.lock(7); // same thread: one more hold
    /// drop(guard);
    /// assert!(locks.is_locked(&7));
    /// drop(again);
    /// assert!(!locks.is_locked(&7));
    /// ```
    #[inline]
    pub fn lock(&self, key: K) -> KeyGuard<'_, K, S> {
        self.acquire(key, Deadline::Forever)
            .expect("an untimed lock always succeeds")
    }

    /// Locks `key`, waiting at most `timeout`; `None` if the time ran out.
    ///
    /// A zero timeout is [`try_lock`](LockManager::try_lock); a timeout beyond what the
    /// clock can represent (such as `Duration::MAX`) waits forever. If the key is handed
    /// over just as the time runs out, the key is taken and returned: a grant is never
    /// thrown away.
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
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let locks = chainlock::keyed::KeyedLocks::new();
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// let held = locks.try_lock_until("k", deadline).expect("a free key is taken at once");
    /// std::thread::scope(|s| {
    ///     s.spawn(|| assert!(locks.try_lock_until("k", deadline).is_none()));
    /// });
    /// drop(held);
    /// ```
    #[inline]
    pub fn try_lock_until(&self, key: K, deadline: Instant) -> Option<KeyGuard<'_, K, S>> {
        self.acquire(key, Deadline::At(deadline))
    }

    /// The uncontended path, inlined into each public method (so `deadline` is a
    /// constant there); waiting is [`wait`](Self::wait), out of line.
    #[inline]
    fn acquire(&self, key: K, deadline: Deadline) -> Option<KeyGuard<'_, K, S>> {
        let queue = match deadline {
            Deadline::Now => None,
            Deadline::At(_) | Deadline::Forever => Some(|| Wake::Thread(thread::current())),
        };
        let ticket = match self.claim(key, queue) {
            Outcome::Held(ticket) => ticket,
            Outcome::Busy => return None,
            Outcome::Queued(ticket, waiter) => self.wait(ticket, &waiter, deadline)?,
        };
        Some(self.guard(ticket))
    }

    /// Sleeps until `waiter` is granted its key (`Some`), or until `deadline` passes and it
    /// has left the queue (`None`).
    #[cold]
    #[inline(never)]
    fn wait(&self, ticket: Ticket, waiter: &Arc<Waiter>, deadline: Deadline) -> Option<Ticket> {
        wait_granted(waiter, deadline, || self.registry.cancel(ticket, waiter)).then_some(ticket)
    }
}

/// Parks the calling thread until `waiter` is granted (`true`), or until `deadline` passes
/// and `cancel` (the registry's authoritative re-check under its lock) reports whether the
/// grant came meanwhile. The one way every blocking keyed face waits.
pub(super) fn wait_granted(
    waiter: &Waiter,
    deadline: Deadline,
    cancel: impl FnOnce() -> bool,
) -> bool {
    loop {
        if waiter.is_granted() {
            return true;
        }
        match deadline {
            Deadline::Forever => thread::park(),
            Deadline::At(at) => {
                let now = Instant::now();
                if now >= at {
                    // Authoritative re-check: granted meanwhile means ours.
                    return cancel();
                }
                thread::park_timeout(at - now);
            }
            Deadline::Now => unreachable!("`Now` never queues"),
        }
    }
}

impl<K: Eq + Hash + Ord, S: BuildHasher> LockManager<K, S, Blocking> {
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
    pub fn lock_all(&self, keys: impl IntoIterator<Item = K>) -> KeySetGuard<'_, K, S> {
        self.acquire_all(keys, Deadline::Forever)
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
    ) -> Option<KeySetGuard<'_, K, S>> {
        self.acquire_all(keys, Deadline::after(timeout))
    }

    /// Locks every key of `keys` before `deadline`, or none of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let locks = chainlock::keyed::KeyedLocks::new();
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// let _a = locks.lock("a");
    /// std::thread::scope(|s| {
    ///     s.spawn(|| {
    ///         assert!(locks.try_lock_all_until(["b", "a"], deadline).is_none());
    ///         assert!(!locks.is_locked("b")); // all or nothing
    ///     });
    /// });
    /// ```
    pub fn try_lock_all_until(
        &self,
        keys: impl IntoIterator<Item = K>,
        deadline: Instant,
    ) -> Option<KeySetGuard<'_, K, S>> {
        self.acquire_all(keys, Deadline::At(deadline))
    }

    fn acquire_all(
        &self,
        keys: impl IntoIterator<Item = K>,
        deadline: Deadline,
    ) -> Option<KeySetGuard<'_, K, S>> {
        all_or_nothing(keys, |key| self.acquire(key, deadline)).map(KeySetGuard::new)
    }
}

/// Takes `one` on each key of `keys` in ascending order (each once); on the first `None`,
/// the guards taken so far drop and `None` is returned: all or nothing.
pub(super) fn all_or_nothing<K: Ord, G>(
    keys: impl IntoIterator<Item = K>,
    mut one: impl FnMut(K) -> Option<G>,
) -> Option<Vec<G>> {
    let keys = ascending_unique(keys);
    let mut guards = Vec::with_capacity(keys.len());
    for key in keys {
        guards.push(one(key)?);
    }
    Some(guards)
}

/// Takes `weight` of `key` in a weighted registry (reader-writer locks, permits), waiting
/// by parking the thread until `deadline`.
#[inline]
pub(crate) fn acquire_weighted<K: Eq + Hash, S: BuildHasher>(
    registry: &Weighted<K, S>,
    key: K,
    weight: u64,
    deadline: Deadline,
) -> Option<Ticket> {
    let queue = match deadline {
        Deadline::Now => None,
        Deadline::At(_) | Deadline::Forever => Some(|| Wake::Thread(thread::current())),
    };
    match registry.acquire(key, weight, queue) {
        Outcome::Held(ticket) => Some(ticket),
        Outcome::Busy => None,
        Outcome::Queued(ticket, waiter) => wait_weighted(registry, ticket, &waiter, deadline),
    }
}

/// Adds `extra` to the hold `ticket` names (an upgrade), ahead of every waiter, waiting by
/// parking the thread until `deadline`.
pub(super) fn grow_weighted<K, S>(
    registry: &Weighted<K, S>,
    ticket: Ticket,
    extra: u64,
    deadline: Deadline,
) -> bool {
    let queue = match deadline {
        Deadline::Now => None,
        Deadline::At(_) | Deadline::Forever => Some(|| Wake::Thread(thread::current())),
    };
    match registry.grow(ticket, extra, queue) {
        Outcome::Held(_) => true,
        Outcome::Busy => false,
        Outcome::Queued(ticket, waiter) => {
            wait_weighted(registry, ticket, &waiter, deadline).is_some()
        }
    }
}

#[cold]
#[inline(never)]
fn wait_weighted<K, S>(
    registry: &Weighted<K, S>,
    ticket: Ticket,
    waiter: &Arc<Waiter>,
    deadline: Deadline,
) -> Option<Ticket> {
    wait_granted(waiter, deadline, || registry.cancel(ticket, waiter)).then_some(ticket)
}
