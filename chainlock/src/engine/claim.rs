//! How a task waits on an engine: one cancel-safe future for every async face (the
//! exclusive keyed locks, the keyed reader-writer locks and permits), generic over what it
//! asks of which engine ([`Request`]).
#![expect(
    clippy::inline_always,
    reason = "the first poll of an uncontended claim is one inlined path: measured with callgrind"
)]

use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::mem::ManuallyDrop;
use std::panic::Location;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::exclusive::Registry;
use super::sharded::Ticket;
use super::waiter::{Waiter, Wake};
use super::weighted::Weighted;
use crate::loom::sync::{Arc, Mutex};
use crate::loom::unique_token;
use crate::telemetry::hooks::{Held, Started, Waiting, observe_queued_start};

/// What a hold's request comes to on the first poll: the ticket, or the queued waiter.
type Claimed = Started<Ticket, (Ticket, Arc<Waiter>)>;

/// What a [`Claim`] asks of an engine: how to start (take a hold, or queue a waiter woken
/// by `queue()`), and how to undo a grant that came while the claim was being dropped.
pub(crate) trait Request {
    /// What the first poll consumes (the key, or the hold to add to).
    type Start;
    /// Starts the request on the first poll, seen by the telemetry as the first poll of a
    /// task's acquisition (`observe_queued_start`): recorded (rarely), the record's set-up
    /// out of line.
    fn start(&self, start: Self::Start, queue: impl FnOnce() -> Wake) -> Claimed;
    /// Leaves the queue (`false`), or reports that the grant came first (`true`).
    fn cancel(&self, ticket: Ticket, waiter: &Arc<Waiter>) -> bool;
    /// Gives back a grant nobody will use.
    fn give_back(&self, ticket: Ticket);
}

/// Take a key of the exclusive registry for a new owner (one acquisition; no reentrancy).
pub(crate) struct Exclusive<'a, K, S>(pub(crate) &'a Registry<K, S>);

impl<K: Eq + Hash, S: BuildHasher> Request for Exclusive<'_, K, S> {
    type Start = K;

    #[inline(always)]
    fn start(&self, key: K, queue: impl FnOnce() -> Wake) -> Claimed {
        let registry = self.0;
        let hash = |key: &K| registry.hash(key);
        observe_queued_start(
            &registry.telemetry,
            key,
            hash,
            Location::caller(),
            true,
            |key| {
                registry
                    .acquire(key, unique_token(), false, Some(queue))
                    .answer()
            },
        )
    }

    fn cancel(&self, ticket: Ticket, waiter: &Arc<Waiter>) -> bool {
        self.0.cancel(ticket, waiter)
    }

    fn give_back(&self, ticket: Ticket) {
        self.0.release(ticket);
    }
}

/// Take `weight` of a key of a weighted registry.
pub(crate) struct Weight<'a, K, S> {
    registry: &'a Weighted<K, S>,
    weight: u64,
}

/// Add `weight` to a hold of a weighted registry (an upgrade, ahead of every waiter). A
/// request of its own rather than a variant of [`Weight`]'s start, so that the first poll
/// of every claim matches one enum only.
pub(crate) struct Grow<'a, K, S>(Weight<'a, K, S>);

impl<K: Eq + Hash, S: BuildHasher> Request for Weight<'_, K, S> {
    type Start = K;

    #[inline(always)]
    fn start(&self, key: K, queue: impl FnOnce() -> Wake) -> Claimed {
        let (registry, weight) = (self.registry, self.weight);
        let hash = |key: &K| registry.hash(key);
        observe_queued_start(
            &registry.telemetry,
            key,
            hash,
            Location::caller(),
            true,
            |key| registry.acquire(key, weight, Some(queue)).answer(),
        )
    }

    fn cancel(&self, ticket: Ticket, waiter: &Arc<Waiter>) -> bool {
        self.registry.cancel(ticket, waiter)
    }

    fn give_back(&self, ticket: Ticket) {
        self.registry.release(ticket, self.weight);
    }
}

impl<K: Eq + Hash, S: BuildHasher> Request for Grow<'_, K, S> {
    type Start = Ticket;

    /// An upgrade is not a new acquisition: telemetry follows the hold it grows.
    #[inline(always)]
    fn start(&self, ticket: Ticket, queue: impl FnOnce() -> Wake) -> Claimed {
        Started::unobserved(
            self.0
                .registry
                .grow(ticket, self.0.weight, Some(queue))
                .answer(),
        )
    }

    fn cancel(&self, ticket: Ticket, waiter: &Arc<Waiter>) -> bool {
        self.0.cancel(ticket, waiter)
    }

    fn give_back(&self, ticket: Ticket) {
        self.0.give_back(ticket);
    }
}

/// The future of every async face: resolves to the ticket of the granted hold and its
/// telemetry record. Telemetry asks at the first poll whether it records this acquisition
/// (when the future starts to wait, not when it is made); only a queued claim carries an
/// attempt.
///
/// # Cancel safety
///
/// Dropped while queued, it leaves the queue; dropped after its grant but before it was
/// polled to completion, it gives the grant back at once. Nobody waits for a dropped claim.
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub(crate) struct Claim<R: Request> {
    request: R,
    state: State<R::Start>,
}

enum State<T> {
    /// Not polled yet.
    Start(T),
    /// In the key's queue, with what telemetry records of the wait (dropped unfinished: it
    /// gave up).
    ///
    /// The record is `ManuallyDrop` so that this enum's drop glue is the same as without
    /// telemetry (small enough to inline into every claim's drop); [`Claim::leave_queue`]
    /// drops it, the only way a queued claim ends without its grant.
    Queued(Ticket, Arc<Waiter>, ManuallyDrop<Waiting>),
    /// Resolved (or panicked mid-poll): owns nothing.
    Done,
}

impl<'a, K: Eq + Hash, S: BuildHasher> Claim<Exclusive<'a, K, S>> {
    /// Takes `key` of the exclusive registry.
    pub(crate) fn exclusive(registry: &'a Registry<K, S>, key: K) -> Self {
        Self {
            request: Exclusive(registry),
            state: State::Start(key),
        }
    }
}

impl<'a, K: Eq + Hash, S: BuildHasher> Claim<Weight<'a, K, S>> {
    /// Takes `weight` of `key`.
    pub(crate) fn weight(registry: &'a Weighted<K, S>, key: K, weight: u64) -> Self {
        Self {
            request: Weight { registry, weight },
            state: State::Start(key),
        }
    }
}

impl<'a, K: Eq + Hash, S: BuildHasher> Claim<Grow<'a, K, S>> {
    /// Adds `extra` to the hold `ticket` names (an upgrade), ahead of every waiter.
    pub(crate) fn grow(registry: &'a Weighted<K, S>, ticket: Ticket, extra: u64) -> Self {
        Self {
            request: Grow(Weight {
                registry,
                weight: extra,
            }),
            state: State::Start(ticket),
        }
    }
}

// No field is ever pinned: the key is moved out on the first poll.
impl<R: Request> Unpin for Claim<R> {}

impl<R: Request> Future for Claim<R> {
    type Output = (Ticket, Held);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<(Ticket, Held)> {
        let this = self.get_mut();
        match std::mem::replace(&mut this.state, State::Done) {
            // Asked at the first poll, when the claim starts to wait.
            State::Start(start) => match this
                .request
                .start(start, || Wake::Task(Mutex::new(Some(cx.waker().clone()))))
            {
                Started::Taken(ticket, held) => Poll::Ready((ticket, held)),
                Started::Queued((ticket, waiter), _, waiting) => {
                    this.state = State::Queued(ticket, waiter, ManuallyDrop::new(waiting));
                    Poll::Pending
                }
                Started::Busy => unreachable!("a queueing claim is never busy"),
            },
            State::Queued(ticket, waiter, waiting) => {
                if waiter.poll_granted(cx.waker()) {
                    let held = ManuallyDrop::into_inner(waiting).granted(ticket.lock_addr());
                    Poll::Ready((ticket, held))
                } else {
                    this.state = State::Queued(ticket, waiter, waiting);
                    Poll::Pending
                }
            }
            State::Done => panic!("a keyed lock future polled after completion"),
        }
    }
}

impl<R: Request> Drop for Claim<R> {
    /// Inlined to the check of the state: a claim that resolved (every uncontended one)
    /// owns nothing.
    #[inline]
    fn drop(&mut self) {
        if let State::Queued(..) = self.state {
            self.leave_queue();
        }
    }
}

impl<R: Request> Claim<R> {
    /// Dropped while queued: leaves the queue, or gives back a grant that came first.
    #[cold]
    #[inline(never)]
    fn leave_queue(&mut self) {
        if let State::Queued(ticket, waiter, waiting) =
            std::mem::replace(&mut self.state, State::Done)
        {
            // Dropped at the end: the acquisition gave up.
            let _waiting = ManuallyDrop::into_inner(waiting);
            if self.request.cancel(ticket, &waiter) {
                // Granted while being dropped: give it back rather than strand it.
                self.request.give_back(ticket);
            }
        }
    }
}

/// Runs `future` until `deadline` on Tokio's timer: `None` if the deadline passed first
/// (the future is dropped, which every claim survives).
#[cfg(feature = "tokio")]
pub(crate) async fn until<F: Future>(deadline: std::time::Instant, future: F) -> Option<F::Output> {
    tokio::time::timeout_at(deadline.into(), future).await.ok()
}

/// Runs `future` for at most `timeout` on Tokio's timer: `None` if the time ran out. A
/// timeout too large for the clock waits forever.
#[cfg(feature = "tokio")]
pub(crate) async fn within<F: Future>(
    timeout: std::time::Duration,
    future: F,
) -> Option<F::Output> {
    tokio::time::timeout(timeout, future).await.ok()
}
