//! The async keyed lock manager: per-acquisition ownership, cancel-safe lock futures.

use std::borrow::Borrow;
use std::fmt;
use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::registry::{self, Registry, Ticket, Waiter, Wake};
use super::{DefaultHashBuilder, default_shards};
use crate::loom::sync::{Arc, Mutex};
use crate::loom::unique_token;

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
/// - **Timeouts** come from the runtime: wrap the future in `tokio::time::timeout`.
///   Dropping a pending [`Acquire`] future is always safe (see its *Cancel safety*).
///
/// The lock futures are runtime-agnostic: they need no tokio runtime, only a waker.
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
pub struct AsyncKeyedLocks<K, S = DefaultHashBuilder> {
    registry: Registry<K, S>,
}

impl<K: Eq + Hash> AsyncKeyedLocks<K> {
    /// Creates an empty manager with the default number of shards (four per core) and a
    /// randomly seeded [`DefaultHashBuilder`].
    #[must_use]
    pub fn new() -> Self {
        Self::with_shards_and_hasher(default_shards(), DefaultHashBuilder::default())
    }

    /// Creates an empty manager with `shards` shards (rounded up to a power of two, at
    /// most 65 536).
    ///
    /// # Panics
    ///
    /// Panics if `shards` is 0.
    #[must_use]
    #[track_caller]
    pub fn with_shards(shards: usize) -> Self {
        Self::with_shards_and_hasher(shards, DefaultHashBuilder::default())
    }
}

impl<K: Eq + Hash> Default for AsyncKeyedLocks<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Eq + Hash, S: BuildHasher> AsyncKeyedLocks<K, S> {
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
    /// // A timed wait: the pending lock future is dropped on timeout, leaving the queue.
    /// let timed = tokio::time::timeout(Duration::from_millis(5), locks.lock(1)).await;
    /// assert!(timed.is_err());
    /// drop(held);
    /// assert!(locks.is_empty());
    /// # }
    /// ```
    pub fn lock(&self, key: K) -> Acquire<'_, K, S> {
        Acquire {
            registry: &self.registry,
            state: State::Start(key),
        }
    }

    /// Locks `key` if it is free right now; never waits.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedLocks::new();
    /// let held = locks.lock("k").await;
    /// assert!(locks.try_lock("k").is_none()); // no reentrancy
    /// drop(held);
    /// assert!(locks.try_lock("k").is_some());
    /// # }
    /// ```
    pub fn try_lock(&self, key: K) -> Option<AsyncKeyGuard<'_, K, S>> {
        let queue: Option<fn() -> Wake> = None;
        match self.registry.acquire(key, unique_token(), false, queue) {
            registry::Acquire::Held(ticket) => Some(AsyncKeyGuard {
                registry: &self.registry,
                ticket,
            }),
            registry::Acquire::Busy => None,
            registry::Acquire::Queued(..) => unreachable!("a try never queues"),
        }
    }

    /// Whether `key` is held right now (a snapshot).
    pub fn is_locked<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.registry.probe(key).is_some()
    }

    /// The number of lock futures waiting for `key` right now (a snapshot).
    pub fn waiting<Q>(&self, key: &Q) -> usize
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.registry.probe(key).unwrap_or(0)
    }
}

impl<K: Eq + Hash + Ord, S: BuildHasher> AsyncKeyedLocks<K, S> {
    /// Locks every key of `keys`, in ascending `Ord` order (duplicates once), so that
    /// concurrent calls with overlapping sets never deadlock one another.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe and all-or-nothing: dropping the future releases the keys it took so
    /// far and leaves the queue of the one it waits for. Wrap it in `tokio::time::timeout`
    /// for a single deadline over the whole set.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let locks = chainlock::keyed::AsyncKeyedLocks::new();
    /// let both = locks.lock_all(["b", "a", "b"]).await;
    /// assert_eq!(both.len(), 2);
    /// # }
    /// ```
    pub async fn lock_all(&self, keys: impl IntoIterator<Item = K>) -> AsyncKeysGuard<'_, K, S> {
        let mut keys: Vec<K> = keys.into_iter().collect();
        keys.sort_unstable();
        keys.dedup();
        let mut guards = Vec::with_capacity(keys.len());
        for key in keys {
            guards.push(self.lock(key).await);
        }
        AsyncKeysGuard { guards }
    }
}

impl<K, S> AsyncKeyedLocks<K, S> {
    /// The number of keys held right now (each with its waiters).
    #[must_use]
    pub fn len(&self) -> usize {
        self.registry.len()
    }

    /// Whether no key is held.
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

impl<K, S> fmt::Debug for AsyncKeyedLocks<K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncKeyedLocks")
            .field("shards", &self.registry.shard_count())
            .field("held", &self.registry.len())
            .finish()
    }
}

/// The future returned by [`AsyncKeyedLocks::lock`].
///
/// # Cancel safety
///
/// Dropping it before completion leaves the key's queue, passing the key on if it had been
/// handed to this future already.
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Acquire<'a, K, S = DefaultHashBuilder> {
    registry: &'a Registry<K, S>,
    state: State<K>,
}

enum State<K> {
    /// Not polled yet.
    Start(K),
    /// In the key's queue.
    Queued(Ticket, Arc<Waiter>),
    /// Resolved (or panicked mid-poll): owns nothing.
    Done,
}

// No field is ever pinned: the key is moved out on the first poll.
impl<K, S> Unpin for Acquire<'_, K, S> {}

impl<'a, K: Eq + Hash, S: BuildHasher> Future for Acquire<'a, K, S> {
    type Output = AsyncKeyGuard<'a, K, S>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let registry = this.registry;
        let held = |ticket| Poll::Ready(AsyncKeyGuard { registry, ticket });
        match std::mem::replace(&mut this.state, State::Done) {
            State::Start(key) => {
                let queue = || Wake::Task(Mutex::new(Some(cx.waker().clone())));
                match registry.acquire(key, unique_token(), false, Some(queue)) {
                    registry::Acquire::Held(ticket) => held(ticket),
                    registry::Acquire::Queued(ticket, waiter) => {
                        this.state = State::Queued(ticket, waiter);
                        Poll::Pending
                    }
                    registry::Acquire::Busy => unreachable!("a queueing acquire is never busy"),
                }
            }
            State::Queued(ticket, waiter) => {
                if waiter.poll_granted(cx.waker()) {
                    held(ticket)
                } else {
                    this.state = State::Queued(ticket, waiter);
                    Poll::Pending
                }
            }
            State::Done => panic!("`Acquire` polled after completion"),
        }
    }
}

impl<K, S> Drop for Acquire<'_, K, S> {
    fn drop(&mut self) {
        if let State::Queued(ticket, waiter) = &self.state {
            // Granted while we were being dropped: pass the key on rather than strand it.
            if self.registry.cancel(*ticket, waiter) {
                self.registry.release(*ticket);
            }
        }
    }
}

impl<K, S> fmt::Debug for Acquire<'_, K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            State::Start(_) => "start",
            State::Queued(..) => "queued",
            State::Done => "done",
        };
        f.debug_struct("Acquire").field("state", &state).finish()
    }
}

/// A held key of an [`AsyncKeyedLocks`], released when it drops. `Send`: it may be held
/// across `.await` in a multi-threaded runtime.
#[must_use = "if unused the lock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct AsyncKeyGuard<'a, K, S = DefaultHashBuilder> {
    registry: &'a Registry<K, S>,
    ticket: Ticket,
}

impl<K, S> Drop for AsyncKeyGuard<'_, K, S> {
    fn drop(&mut self) {
        self.registry.release(self.ticket);
    }
}

impl<K, S> fmt::Debug for AsyncKeyGuard<'_, K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncKeyGuard").finish_non_exhaustive()
    }
}

/// The keys taken by [`AsyncKeyedLocks::lock_all`], released together when it drops.
#[must_use = "if unused the locks will immediately unlock"]
#[clippy::has_significant_drop]
pub struct AsyncKeysGuard<'a, K, S = DefaultHashBuilder> {
    guards: Vec<AsyncKeyGuard<'a, K, S>>,
}

impl<'a, K, S> AsyncKeysGuard<'a, K, S> {
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

    /// The individual guards, in locking (ascending key) order.
    #[must_use]
    pub fn into_guards(self) -> Vec<AsyncKeyGuard<'a, K, S>> {
        self.guards
    }
}

impl<K, S> fmt::Debug for AsyncKeysGuard<'_, K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncKeysGuard")
            .field("len", &self.guards.len())
            .finish()
    }
}
