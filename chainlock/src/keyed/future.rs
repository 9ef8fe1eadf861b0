//! The async face of the keyed lock manager: tasks wait on a waker, each acquisition is
//! its own owner, lock futures are cancel-safe.

use std::fmt;
use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::DefaultHashBuilder;
use super::manager::{Flavor, KeyGuard, KeySetGuard, LockManager, sealed};
use super::registry::{Outcome, Ticket, Waiter, Wake};
use super::weighted::Weighted;
use crate::lock_order::ascending_unique;
use crate::loom::sync::{Arc, Mutex};

/// The async flavor: each acquisition is its own owner (no reentrancy); guards are `Send`.
#[derive(Debug)]
pub struct Async(());

impl Flavor for Async {}

impl sealed::Sealed for Async {
    const MANAGER: &'static str = "AsyncKeyedLocks";
    const PER_THREAD: bool = false;
}

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
pub type AsyncKeyedLocks<K, S = DefaultHashBuilder> = LockManager<K, S, Async>;

/// A held key of an [`AsyncKeyedLocks`], released when it drops. `Send`: it may be held
/// across `.await` in a multi-threaded runtime.
pub type AsyncKeyGuard<'a, K, S = DefaultHashBuilder> = KeyGuard<'a, K, S, Async>;

/// The keys taken by [`AsyncKeyedLocks::lock_all`], released together when it drops.
pub type AsyncKeySetGuard<'a, K, S = DefaultHashBuilder> = KeySetGuard<'a, K, S, Async>;

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
    /// // A timed wait: the pending lock future is dropped on timeout, leaving the queue.
    /// let timed = tokio::time::timeout(Duration::from_millis(5), locks.lock(1)).await;
    /// assert!(timed.is_err());
    /// drop(held);
    /// assert!(locks.is_empty());
    /// # }
    /// ```
    pub fn lock(&self, key: K) -> Acquire<'_, K, S> {
        Acquire {
            locks: self,
            state: State::Start(key),
        }
    }
}

impl<K: Eq + Hash + Ord, S: BuildHasher> LockManager<K, S, Async> {
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
    pub async fn lock_all(&self, keys: impl IntoIterator<Item = K>) -> AsyncKeySetGuard<'_, K, S> {
        let keys = ascending_unique(keys);
        let mut guards = Vec::with_capacity(keys.len());
        for key in keys {
            guards.push(self.lock(key).await);
        }
        KeySetGuard::new(guards)
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
    locks: &'a AsyncKeyedLocks<K, S>,
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
        let locks = this.locks;
        let held = |ticket| Poll::Ready(locks.guard(ticket));
        match std::mem::replace(&mut this.state, State::Done) {
            State::Start(key) => {
                let queue = || Wake::Task(Mutex::new(Some(cx.waker().clone())));
                match locks.claim(key, Some(queue)) {
                    Outcome::Held(ticket) => held(ticket),
                    Outcome::Queued(ticket, waiter) => {
                        this.state = State::Queued(ticket, waiter);
                        Poll::Pending
                    }
                    Outcome::Busy => unreachable!("a queueing acquire is never busy"),
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
            let registry = &self.locks.registry;
            if registry.cancel(*ticket, waiter) {
                registry.release(*ticket);
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

/// The way every async weighted face (reader-writer locks, permits) waits: takes `weight`
/// of a key, or adds it to a hold (an upgrade), resolving to the hold's ticket.
///
/// Cancel-safe: dropped while queued, it leaves the queue; dropped after its grant (before
/// it was polled to completion), it gives the weight back.
pub(super) struct Claim<'a, K, S> {
    registry: &'a Weighted<K, S>,
    weight: u64,
    state: ClaimState<K>,
}

enum ClaimState<K> {
    /// Not polled yet: take `weight` of this key.
    Start(K),
    /// Not polled yet: add `weight` to this hold.
    Grow(Ticket),
    /// In the key's queue.
    Queued(Ticket, Arc<Waiter>),
    /// Resolved (or panicked mid-poll): owns nothing.
    Done,
}

impl<'a, K, S> Claim<'a, K, S> {
    /// Takes `weight` of `key`.
    pub(super) fn acquire(registry: &'a Weighted<K, S>, key: K, weight: u64) -> Self {
        Self {
            registry,
            weight,
            state: ClaimState::Start(key),
        }
    }

    /// Adds `extra` to the hold `ticket` names, ahead of every waiter.
    pub(super) fn grow(registry: &'a Weighted<K, S>, ticket: Ticket, extra: u64) -> Self {
        Self {
            registry,
            weight: extra,
            state: ClaimState::Grow(ticket),
        }
    }
}

// No field is ever pinned.
impl<K, S> Unpin for Claim<'_, K, S> {}

impl<K: Eq + Hash, S: BuildHasher> Future for Claim<'_, K, S> {
    type Output = Ticket;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Ticket> {
        let this = self.get_mut();
        let queue = || Wake::Task(Mutex::new(Some(cx.waker().clone())));
        let outcome = match std::mem::replace(&mut this.state, ClaimState::Done) {
            ClaimState::Start(key) => this.registry.acquire(key, this.weight, Some(queue)),
            ClaimState::Grow(ticket) => this.registry.grow(ticket, this.weight, Some(queue)),
            ClaimState::Queued(ticket, waiter) => {
                if waiter.poll_granted(cx.waker()) {
                    Outcome::Held(ticket)
                } else {
                    Outcome::Queued(ticket, waiter)
                }
            }
            ClaimState::Done => panic!("a keyed lock future polled after completion"),
        };
        match outcome {
            Outcome::Held(ticket) => Poll::Ready(ticket),
            Outcome::Queued(ticket, waiter) => {
                this.state = ClaimState::Queued(ticket, waiter);
                Poll::Pending
            }
            Outcome::Busy => unreachable!("a queueing claim is never busy"),
        }
    }
}

impl<K, S> Drop for Claim<'_, K, S> {
    fn drop(&mut self) {
        if let ClaimState::Queued(ticket, waiter) = &self.state
            && self.registry.cancel(*ticket, waiter)
        {
            // Granted while being dropped: give the weight back rather than strand it.
            self.registry.release(*ticket, self.weight);
        }
    }
}
