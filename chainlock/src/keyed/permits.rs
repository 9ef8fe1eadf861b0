//! Keyed permits (a counting semaphore per key): the core [`PermitManager`] (constructors,
//! probes, `try_acquire`, the [`KeyPermit`] guard), its blocking face [`KeyedPermits`] and
//! its async face `AsyncKeyedPermits`, each adding only its way of waiting on the weighted
//! engine.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::time::{Duration, Instant};

use super::flavor::{Blocking, Flavor};
use super::guards::weighted_guard;
use super::{DefaultHashBuilder, KeyGuards};
#[cfg(feature = "tokio")]
use crate::engine::claim::{until, within};
use crate::engine::default_shards;
use crate::engine::sharded::Ticket;
use crate::engine::wait::{Deadline, acquire_weighted, all_or_nothing};
use crate::engine::weighted::Weighted;
#[cfg(feature = "async")]
use {super::flavor::Async, crate::engine::claim::Claim, crate::lock_order::ascending_unique};

/// A manager of named counting semaphores: at most `permits` holders of each key at once,
/// generic over its [`Flavor`]. Use it through its faces: [`KeyedPermits`]
/// (blocking) and, with the `async` feature, `AsyncKeyedPermits` (futures).
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
    registry: Weighted<K, S>,
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
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_acquire(&self, key: K) -> Option<KeyPermit<'_, K, S, F>> {
        self.registry
            .try_acquire(key, 1, !F::PER_THREAD)
            .map(|(ticket, held)| KeyPermit::with_held(&self.registry, ticket, held))
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

impl<K: Eq + Hash + Ord, S: BuildHasher, F: Flavor> PermitManager<K, S, F> {
    /// Takes a permit of every key of `keys` if all have one free right now (in ascending
    /// `Ord` order, duplicates once), or none of them; never waits.
    ///
    /// # Examples
    ///
    /// ```
    /// let hosts = chainlock::keyed::KeyedPermits::new(1);
    /// let b = hosts.acquire("b");
    /// assert!(hosts.try_acquire_all(["a", "b"]).is_none());
    /// assert_eq!(hosts.available("a"), 1); // all or nothing
    /// drop(b);
    /// assert_eq!(hosts.try_acquire_all(["a", "b"]).map(|held| held.len()), Some(2));
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_acquire_all(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> Option<KeyGuards<KeyPermit<'_, K, S, F>>> {
        all_or_nothing!(keys, |key| self.try_acquire(key)).map(KeyGuards::new)
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
        f.debug_struct(F::PERMITS)
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
    KeyPermit,
    1
);

/// A manager of named counting semaphores for threads: at most N holders per key, strict
/// FIFO, timeouts, bounded memory, all-or-nothing multi-key acquisition.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use chainlock::keyed::KeyedPermits;
///
/// let hosts = KeyedPermits::new(2);
/// let (inside, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
/// std::thread::scope(|s| {
///     for _ in 0..6 {
///         s.spawn(|| {
///             let _permit = hosts.acquire("example.org");
///             let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
///             most.fetch_max(now, Ordering::SeqCst);
///             inside.fetch_sub(1, Ordering::SeqCst);
///         });
///     }
/// });
/// assert!(most.load(Ordering::SeqCst) <= 2);
/// assert!(hosts.is_empty());
/// ```
pub type KeyedPermits<K, S = DefaultHashBuilder> = PermitManager<K, S, Blocking>;

impl<K: Eq + Hash, S: BuildHasher> PermitManager<K, S, Blocking> {
    /// Takes a permit of `key`, blocking until one is free and every earlier waiter was
    /// served.
    ///
    /// # Panics
    ///
    /// Panics if `K`'s `Hash` or `Eq` panics (the manager stays consistent).
    ///
    /// # Examples
    ///
    /// ```
    /// let hosts = chainlock::keyed::KeyedPermits::new(2);
    /// let (a, b) = (hosts.acquire("h"), hosts.acquire("h"));
    /// assert_eq!(hosts.available(&"h"), 0);
    /// # drop((a, b));
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn acquire(&self, key: K) -> KeyPermit<'_, K, S> {
        self.acquire_by(key, Deadline::Forever)
            .expect("an untimed acquisition always succeeds")
    }

    /// Takes a permit of `key`, waiting at most `timeout`; `None` if the time ran out. A
    /// grant that races the timeout is taken, never lost.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let hosts = chainlock::keyed::KeyedPermits::new(1);
    /// let _held = hosts.acquire("h");
    /// assert!(hosts.try_acquire_for("h", Duration::from_millis(5)).is_none());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_acquire_for(&self, key: K, timeout: Duration) -> Option<KeyPermit<'_, K, S>> {
        self.acquire_by(key, Deadline::after(timeout))
    }

    /// Takes a permit of `key`, waiting until `deadline` at the latest.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let hosts = chainlock::keyed::KeyedPermits::new(1);
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// assert!(hosts.try_acquire_until("h", deadline).is_some());
    /// ```
    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_acquire_until(&self, key: K, deadline: Instant) -> Option<KeyPermit<'_, K, S>> {
        self.acquire_by(key, Deadline::At(deadline))
    }

    #[inline]
    #[cfg_attr(feature = "telemetry", track_caller)]
    fn acquire_by(&self, key: K, deadline: Deadline) -> Option<KeyPermit<'_, K, S>> {
        acquire_weighted(&self.registry, key, 1, deadline)
            .map(|(ticket, held)| KeyPermit::with_held(&self.registry, ticket, held))
    }
}

impl<K: Eq + Hash + Ord, S: BuildHasher> PermitManager<K, S, Blocking> {
    /// Takes a permit of every key of `keys`, in ascending `Ord` order (duplicates once),
    /// blocking until all are held. Concurrent multi-key calls never deadlock one another.
    ///
    /// # Examples
    ///
    /// ```
    /// let hosts = chainlock::keyed::KeyedPermits::new(1);
    /// let both = hosts.acquire_all(["b", "a", "b"]);
    /// assert_eq!(both.len(), 2);
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn acquire_all(&self, keys: impl IntoIterator<Item = K>) -> KeyGuards<KeyPermit<'_, K, S>> {
        self.acquire_all_by(keys, Deadline::Forever)
            .expect("untimed acquisitions always succeed")
    }

    /// Takes a permit of every key of `keys` within `timeout` in total, or none of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let hosts = chainlock::keyed::KeyedPermits::new(1);
    /// let _b = hosts.acquire("b");
    /// assert!(hosts.try_acquire_all_for(["a", "b"], Duration::from_millis(5)).is_none());
    /// assert_eq!(hosts.available(&"a"), 1); // all or nothing
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_acquire_all_for(
        &self,
        keys: impl IntoIterator<Item = K>,
        timeout: Duration,
    ) -> Option<KeyGuards<KeyPermit<'_, K, S>>> {
        self.acquire_all_by(keys, Deadline::after(timeout))
    }

    /// Takes a permit of every key of `keys` before `deadline`, or none of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let hosts = chainlock::keyed::KeyedPermits::new(1);
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// let b = hosts.acquire("b");
    /// assert!(hosts.try_acquire_all_until(["a", "b"], deadline).is_none());
    /// assert_eq!(hosts.available("a"), 1); // all or nothing
    /// drop(b);
    /// assert!(hosts.try_acquire_all_until(["a", "b"], deadline).is_some());
    /// ```
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn try_acquire_all_until(
        &self,
        keys: impl IntoIterator<Item = K>,
        deadline: Instant,
    ) -> Option<KeyGuards<KeyPermit<'_, K, S>>> {
        self.acquire_all_by(keys, Deadline::At(deadline))
    }

    #[cfg_attr(feature = "telemetry", track_caller)]
    fn acquire_all_by(
        &self,
        keys: impl IntoIterator<Item = K>,
        deadline: Deadline,
    ) -> Option<KeyGuards<KeyPermit<'_, K, S>>> {
        all_or_nothing!(keys, |key| self.acquire_by(key, deadline)).map(KeyGuards::new)
    }
}

/// A manager of named counting semaphores for async tasks: at most N holders per key.
///
/// The async twin of [`KeyedPermits`], on the same core. Timed waits
/// (`try_acquire_for`, …) need Tokio's timer (feature `tokio`); dropping a pending future is always safe.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use chainlock::keyed::AsyncKeyedPermits;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let hosts = Arc::new(AsyncKeyedPermits::new(2));
/// let mut tasks = Vec::new();
/// for _ in 0..5 {
///     let hosts = Arc::clone(&hosts);
///     tasks.push(tokio::spawn(async move {
///         let _permit = hosts.acquire("example.org").await;
///         tokio::task::yield_now().await;
///     }));
/// }
/// for task in tasks {
///     task.await.unwrap();
/// }
/// assert!(hosts.is_empty());
/// # }
/// ```
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub type AsyncKeyedPermits<K, S = DefaultHashBuilder> = PermitManager<K, S, Async>;

/// A permit of an [`AsyncKeyedPermits`] key.
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub type AsyncKeyPermit<'a, K, S = DefaultHashBuilder> = KeyPermit<'a, K, S, Async>;

#[cfg(feature = "async")]
impl<K: Eq + Hash, S: BuildHasher> PermitManager<K, S, Async> {
    /// Takes a permit of `key`, in FIFO order.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future leaves the queue, or gives the permit back if it
    /// was granted already.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let hosts = chainlock::keyed::AsyncKeyedPermits::new(1);
    /// let held = hosts.acquire("h").await;
    /// let timed = tokio::time::timeout(Duration::from_millis(5), hosts.acquire("h")).await;
    /// assert!(timed.is_err());
    /// drop(held);
    /// assert!(hosts.is_empty());
    /// # }
    /// ```
    pub async fn acquire(&self, key: K) -> AsyncKeyPermit<'_, K, S> {
        let (ticket, held) = Claim::weight(&self.registry, key, 1).await;
        KeyPermit::with_held(&self.registry, ticket, held)
    }
}

#[cfg(feature = "async")]
impl<K: Eq + Hash + Ord, S: BuildHasher> PermitManager<K, S, Async> {
    /// Takes a permit of every key of `keys`, in ascending `Ord` order (duplicates once).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe and all-or-nothing: dropping the future gives back the permits taken so
    /// far.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let hosts = chainlock::keyed::AsyncKeyedPermits::new(1);
    /// let both = hosts.acquire_all([2, 1, 2]).await;
    /// assert_eq!(both.len(), 2);
    /// # }
    /// ```
    pub async fn acquire_all(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> KeyGuards<AsyncKeyPermit<'_, K, S>> {
        let mut guards = Vec::new();
        for key in ascending_unique(keys) {
            guards.push(self.acquire(key).await);
        }
        KeyGuards::new(guards)
    }
}

#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
impl<K: Eq + Hash, S: BuildHasher> PermitManager<K, S, Async> {
    /// Takes a permit of `key`, waiting at most `timeout` on Tokio's timer; `None` if the
    /// time ran out.
    ///
    /// # Panics
    ///
    /// Panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as [`acquire`](Self::acquire).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let hosts = chainlock::keyed::AsyncKeyedPermits::new(1);
    /// let held = hosts.acquire("h").await;
    /// assert!(hosts.try_acquire_for("h", Duration::from_millis(5)).await.is_none());
    /// drop(held);
    /// assert!(hosts.try_acquire_for("h", Duration::from_millis(5)).await.is_some());
    /// # }
    /// ```
    pub async fn try_acquire_for(
        &self,
        key: K,
        timeout: Duration,
    ) -> Option<AsyncKeyPermit<'_, K, S>> {
        within(timeout, self.acquire(key)).await
    }

    /// Takes a permit of `key`, waiting until `deadline` at the latest on Tokio's timer.
    ///
    /// # Panics
    ///
    /// Panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as [`acquire`](Self::acquire).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let hosts = chainlock::keyed::AsyncKeyedPermits::new(1);
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// let held = hosts.try_acquire_until("h", deadline).await.expect("a free permit");
    /// assert!(hosts.try_acquire_until("h", deadline).await.is_none());
    /// # drop(held);
    /// # }
    /// ```
    pub async fn try_acquire_until(
        &self,
        key: K,
        deadline: Instant,
    ) -> Option<AsyncKeyPermit<'_, K, S>> {
        until(deadline, self.acquire(key)).await
    }
}

#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
impl<K: Eq + Hash + Ord, S: BuildHasher> PermitManager<K, S, Async> {
    /// Takes a permit of every key of `keys` within `timeout` in total (Tokio's timer), or
    /// none of them.
    ///
    /// # Panics
    ///
    /// Panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe and all-or-nothing, as [`acquire_all`](Self::acquire_all).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let hosts = chainlock::keyed::AsyncKeyedPermits::new(1);
    /// let b = hosts.acquire("b").await;
    /// assert!(hosts.try_acquire_all_for(["a", "b"], Duration::from_millis(5)).await.is_none());
    /// assert_eq!(hosts.available("a"), 1); // all or nothing
    /// # drop(b);
    /// # }
    /// ```
    pub async fn try_acquire_all_for(
        &self,
        keys: impl IntoIterator<Item = K>,
        timeout: Duration,
    ) -> Option<KeyGuards<AsyncKeyPermit<'_, K, S>>> {
        within(timeout, self.acquire_all(keys)).await
    }

    /// Takes a permit of every key of `keys` before `deadline` (Tokio's timer), or none of
    /// them.
    ///
    /// # Panics
    ///
    /// Panics outside a Tokio runtime with the time driver enabled.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe and all-or-nothing, as [`acquire_all`](Self::acquire_all).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let hosts = chainlock::keyed::AsyncKeyedPermits::new(2);
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// let held = hosts.try_acquire_all_until(["a", "b"], deadline).await.expect("free");
    /// assert_eq!(held.len(), 2);
    /// # }
    /// ```
    pub async fn try_acquire_all_until(
        &self,
        keys: impl IntoIterator<Item = K>,
        deadline: Instant,
    ) -> Option<KeyGuards<AsyncKeyPermit<'_, K, S>>> {
        until(deadline, self.acquire_all(keys)).await
    }
}

#[cfg(feature = "telemetry")]
#[cfg_attr(docsrs, doc(cfg(feature = "telemetry")))]
impl<K, S, F> PermitManager<K, S, F> {
    /// Names this manager in [`telemetry`](crate::telemetry) reports (default: the
    /// location of the constructor's call, `"src/main.rs:12"`).
    ///
    /// # Examples
    ///
    /// ```
    /// let named = chainlock::keyed::KeyedPermits::<u64>::new(2).telemetry_name("hosts");
    /// # drop(named);
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
    /// let named = chainlock::keyed::KeyedPermits::<u64>::new(2).telemetry_keys_debug();
    /// # drop(named);
    /// ```
    #[must_use]
    pub fn telemetry_keys_debug(mut self) -> Self
    where
        K: std::fmt::Debug,
    {
        self.registry.telemetry.key_debug(|key| format!("{key:?}"));
        self
    }
}
