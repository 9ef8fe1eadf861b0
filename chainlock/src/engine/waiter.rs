//! What every engine's waiter is: a queued request, how it is woken, and the outcome of a
//! request. Shared by the exclusive registry (`exclusive.rs`) and the weighted one
//! (`weighted.rs`), and by both ways of waiting (`wait.rs` parks a thread, `claim.rs` is a
//! future).

use super::sharded::Ticket;
use crate::loom::sync::Arc;
#[cfg(feature = "async")]
use crate::loom::sync::Mutex;
use crate::loom::sync::atomic::{AtomicBool, Ordering};
use crate::loom::thread::Thread;
use crate::telemetry::hooks::Answer;

/// One queued request for a key.
pub(crate) struct Waiter {
    /// What the waiter asks for: the owner the key is handed to (this registry), or the
    /// weight it takes of the key's capacity (`weighted::Weighted`).
    pub(crate) claim: u64,
    /// Set (under the shard lock) when the key was handed to this waiter.
    pub(crate) granted: AtomicBool,
    wake: Wake,
}

/// How a waiter is woken when granted.
pub(crate) enum Wake {
    /// A blocked thread, unparked.
    Thread(Thread),
    /// A pending future; the slot holds the waker of its latest poll.
    #[cfg(feature = "async")]
    Task(Mutex<Option<std::task::Waker>>),
}

/// The outcome of a request to an engine (`Registry::acquire`, `Weighted::acquire`,
/// `Weighted::grow`).
pub(crate) enum Outcome {
    /// The key is held by the caller.
    Held(Ticket),
    /// The key is held by another owner and the caller asked not to queue.
    Busy,
    /// The caller was queued: it owns the key once `Waiter::is_granted`.
    Queued(Ticket, Arc<Waiter>),
}

impl Outcome {
    /// The outcome as the telemetry's hooks read it (`observe_queued`): the key's hold, or
    /// the queued request (its ticket and waiter), each with the lock it is of.
    #[expect(
        clippy::inline_always,
        reason = "inlined into every acquire's uncontended path: measured with callgrind"
    )]
    #[inline(always)]
    pub(crate) fn answer(self) -> Answer<Ticket, (Ticket, Arc<Waiter>)> {
        match self {
            Self::Held(ticket) => Answer::Taken(ticket, ticket.lock_addr()),
            Self::Busy => Answer::Busy,
            Self::Queued(ticket, waiter) => Answer::Queued((ticket, waiter), ticket.lock_addr()),
        }
    }
}

impl Waiter {
    /// A waiter for `claim` (see [`Waiter::claim`]), not granted yet.
    pub(crate) fn new(claim: u64, wake: Wake) -> Arc<Self> {
        Arc::new(Self {
            claim,
            granted: AtomicBool::new(false),
            wake,
        })
    }

    /// Whether the key was handed to this waiter (acquire: the previous owner's writes
    /// are visible once this returns `true`).
    #[inline]
    pub(crate) fn is_granted(&self) -> bool {
        self.granted.load(Ordering::Acquire)
    }

    /// Wakes the waiter after its grant.
    pub(crate) fn wake(&self) {
        match &self.wake {
            Wake::Thread(thread) => thread.unpark(),
            #[cfg(feature = "async")]
            Wake::Task(slot) => {
                let waker = slot.lock().take();
                if let Some(waker) = waker {
                    waker.wake();
                }
            }
        }
    }

    /// For a task: records `waker` to be woken on the grant, then reports whether the grant
    /// already happened. Seen in this order against [`wake`](Self::wake)'s "grant, then
    /// take the waker" (both ends under the slot lock), a grant is never missed.
    #[cfg(feature = "async")]
    pub(crate) fn poll_granted(&self, waker: &std::task::Waker) -> bool {
        if self.is_granted() {
            return true;
        }
        let Wake::Task(slot) = &self.wake else {
            unreachable!("only task waiters are polled");
        };
        {
            let mut slot = slot.lock();
            if !slot.as_ref().is_some_and(|old| old.will_wake(waker)) {
                *slot = Some(waker.clone());
            }
        }
        self.is_granted()
    }
}
