//! Exclusive keyed locks: the core [`LockManager`] (constructors, probes, `try_lock`, the
//! guard), its blocking face [`KeyedLocks`] and its async face `AsyncKeyedLocks`, each
//! adding only its way of waiting on the exclusive engine.
//!
//! Several keys at once (`lock_all` and its `try_` forms, both faces) are in `locks/all.rs`.

mod all;

use std::borrow::Borrow;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;
use std::panic::Location;
use std::time::{Duration, Instant};

use super::flavor::{Blocking, Flavor};
use super::{DefaultHashBuilder, KeyGuard};
#[cfg(feature = "tokio")]
use crate::engine::claim::{until, within};
use crate::engine::default_shards;
use crate::engine::exclusive::Registry;
use crate::engine::sharded::Ticket;
use crate::engine::wait::{Deadline, acquire_exclusive};
use crate::engine::waiter::{Outcome, Wake};
use crate::loom::{thread, unique_token};
use crate::telemetry::hooks::{Held, observe_queued};
#[cfg(feature = "async")]
use {super::flavor::Async, crate::engine::claim::Claim};

/// A manager of named, FIFO-fair locks, one per key of type `K`, generic over its
/// [`Flavor`]. Use it through its faces: [`KeyedLocks`] (blocking, reentrant per thread)
/// and, with the `async` feature, `AsyncKeyedLocks` (futures, one owner per acquisition). The constructors and probes below serve both.
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
    registry: Registry<K, S>,
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
    #[cfg_attr(feature = "telemetry", track_caller)]
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
    #[cfg_attr(feature = "telemetry", track_caller)]
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
    #[cfg_attr(feature = "telemetry", track_caller)]
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

    /// Locks `key` if it is free right now; never waits. With [`KeyedLocks`],
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
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_lock(&self, key: K) -> Option<KeyGuard<'_, K, S, F>> {
        observe_queued!(
            self.registry.telemetry,
            key,
            |key| self.registry.hash(key),
            Location::caller(),
            !F::PER_THREAD,
            |key| self.claim(key, None::<fn() -> Wake>).answer(),
            |_| unreachable!("a try never queues"),
        )
        .map(|(ticket, held)| self.guard(ticket, held))
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

    /// Takes `key` for a new owner of this flavor, or queues a waiter woken by `queue()`.
    #[inline]
    fn claim(&self, key: K, queue: Option<impl FnOnce() -> Wake>) -> Outcome {
        let owner = if F::PER_THREAD {
            thread::token()
        } else {
            unique_token()
        };
        self.registry.acquire(key, owner, F::PER_THREAD, queue)
    }
}

#[cfg(feature = "telemetry")]
#[cfg_attr(docsrs, doc(cfg(feature = "telemetry")))]
impl<K, S, F> LockManager<K, S, F> {
    /// Names this manager in [`telemetry`](crate::telemetry) reports (default: the
    /// location of the constructor's call, `"src/main.rs:12"`).
    ///
    /// # Examples
    ///
    /// ```
    /// let sessions = chainlock::keyed::KeyedLocks::<u64>::new().telemetry_name("sessions");
    /// # drop(sessions);
    /// ```
    #[must_use]
    pub fn telemetry_name(mut self, name: &str) -> Self {
        self.registry
            .telemetry
            .rename(crate::telemetry::hooks::Label::named(name));
        self
    }

    /// Names this manager's hot keys in [`telemetry`](crate::telemetry) reports by their
    /// `Debug` (default: `#<hash>`, as `K` need not be `Debug`).
    ///
    /// # Examples
    ///
    /// ```
    /// let sessions = chainlock::keyed::KeyedLocks::<u64>::new().telemetry_keys_debug();
    /// # drop(sessions);
    /// ```
    #[must_use]
    pub fn telemetry_keys_debug(mut self) -> Self
    where
        K: fmt::Debug,
    {
        self.registry.telemetry.key_debug(|key| format!("{key:?}"));
        self
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
    fn guard(&self, ticket: Ticket, held: Held) -> KeyGuard<'_, K, S, F> {
        KeyGuard::new(&self.registry, ticket, held)
    }
}

impl<K, S, F: Flavor> fmt::Debug for LockManager<K, S, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(F::LOCKS)
            .field("shards", &self.registry.shard_count())
            .field("held", &self.registry.len())
            .finish()
    }
}

/// A manager of named, thread-reentrant, FIFO-fair locks, one per key of type `K`.
///
/// A key is locked with [`lock`](Self::lock) (or [`try_lock`](LockManager::try_lock),
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
    #[cfg_attr(feature = "telemetry", track_caller)]
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
    #[cfg_attr(feature = "telemetry", track_caller)]
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
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_lock_until(&self, key: K, deadline: Instant) -> Option<KeyGuard<'_, K, S>> {
        self.acquire(key, Deadline::At(deadline))
    }

    /// The uncontended path, inlined into each public method (so `deadline` is a
    /// constant there); waiting is out of line, in the engine.
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    fn acquire(&self, key: K, deadline: Deadline) -> Option<KeyGuard<'_, K, S>> {
        acquire_exclusive(&self.registry, key, thread::token(), true, deadline)
            .map(|(ticket, held)| self.guard(ticket, held))
    }
}

#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
/// A manager of named, FIFO-fair locks for async tasks, one per key of type `K`.
///
/// The async twin of [`KeyedLocks`](super::KeyedLocks), with the same registry: exact per
/// key, strict FIFO hand-off, entries removed with the last release, sharded. The
/// differences:
///
/// - **No reentrancy.** Each acquisition is its own owner (a task can hop threads, so
///   thread identity means nothing, and futures have no identity). Locking a key again
///   while holding it waits forever, as with `tokio::sync::Mutex`.
/// - **Guards are `Send`** (when `K: Send` and `S: Sync`) and may be held across `.await`.
/// - **Timeouts** need Tokio's timer: `try_lock_for` and friends (feature `tokio`), or
///   wrap a lock future in any runtime's timeout. Dropping a pending lock future is
///   always safe (see *Cancel safety* on each method).
///
/// The untimed lock futures are runtime-agnostic (feature `async`): they need no runtime,
/// only a waker.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use chainlock::keyed::AsyncKeyedLocks;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let locks = Arc::new(AsyncKeyedLocks::new());
/// let mut tasks = Vec::new();
/// for i in 0..4 {
///     let locks = Arc::clone(&locks);
///     tasks.push(tokio::spawn(async move {
///         let _user = locks.lock(format!("user-{}", i % 2)).await;
///         tokio::task::yield_now().await; // held across an await
///     }));
/// }
/// for task in tasks {
///     task.await.unwrap();
/// }
/// assert!(locks.is_empty());
/// # }
/// ```
pub type AsyncKeyedLocks<K, S = DefaultHashBuilder> = LockManager<K, S, Async>;

/// A held key of an [`AsyncKeyedLocks`], released when it drops. `Send`: it may be held
/// across `.await` in a multi-threaded runtime.
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub type AsyncKeyGuard<'a, K, S = DefaultHashBuilder> = KeyGuard<'a, K, S, Async>;

#[cfg(feature = "async")]
impl<K: Eq + Hash, S: BuildHasher> LockManager<K, S, Async> {
    /// Locks `key`: the future resolves once the key is handed to it, in FIFO order.
    ///
    /// The future does nothing until first polled; on its first poll it takes the key or
    /// joins the key's queue.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe. Dropping the future before it completes leaves the queue; if the key
    /// had been handed to it already, the key is passed on to the next waiter (or freed)
    /// at once. Nobody waits for a dropped future.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use chainlock::keyed::AsyncKeyedLocks;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = AsyncKeyedLocks::new();
    /// let held = locks.lock(1).await;
    /// // Any runtime's timeout: the pending lock future is dropped, leaving the queue.
    /// let timed = tokio::time::timeout(Duration::from_millis(5), locks.lock(1)).await;
    /// assert!(timed.is_err());
    /// drop(held);
    /// assert!(locks.is_empty());
    /// # }
    /// ```
    pub async fn lock(&self, key: K) -> AsyncKeyGuard<'_, K, S> {
        let registry = &self.registry;
        let (ticket, held) = Claim::exclusive(registry, key).await;
        self.guard(ticket, held)
    }
}

#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
impl<K: Eq + Hash, S: BuildHasher> LockManager<K, S, Async> {
    /// Locks `key`, waiting at most `timeout` on Tokio's timer; `None` if the time ran out.
    ///
    /// A zero timeout still takes a free key; a timeout beyond what the clock can represent
    /// waits forever.
    ///
    /// # Panics
    ///
    /// Panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as [`lock`](Self::lock): a grant racing the timeout or the drop is
    /// given back, never stranded.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedLocks::new();
    /// let held = locks.lock(1).await;
    /// assert!(locks.try_lock_for(1, Duration::from_millis(5)).await.is_none());
    /// drop(held);
    /// assert!(locks.try_lock_for(1, Duration::from_millis(5)).await.is_some());
    /// # }
    /// ```
    pub async fn try_lock_for(&self, key: K, timeout: Duration) -> Option<AsyncKeyGuard<'_, K, S>> {
        within(timeout, self.lock(key)).await
    }

    /// Locks `key`, waiting until `deadline` at the latest on Tokio's timer; `None` if it
    /// passed first.
    ///
    /// # Panics
    ///
    /// Panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as [`lock`](Self::lock).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedLocks::new();
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// let held = locks.try_lock_until("k", deadline).await.expect("a free key");
    /// assert!(locks.try_lock_until("k", deadline).await.is_none());
    /// # drop(held);
    /// # }
    /// ```
    pub async fn try_lock_until(
        &self,
        key: K,
        deadline: Instant,
    ) -> Option<AsyncKeyGuard<'_, K, S>> {
        until(deadline, self.lock(key)).await
    }
}
