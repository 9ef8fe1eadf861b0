//! How a thread waits on an engine: park until the grant, or until a deadline passes and
//! the engine's authoritative re-check says whether the grant came meanwhile. The one way
//! every blocking face of `keyed` and `striped::Semaphore` waits.

use std::hash::{BuildHasher, Hash};
use std::panic::Location;
use std::time::{Duration, Instant};

use super::exclusive::Registry;
use super::sharded::Ticket;
use super::waiter::{Outcome, Waiter, Wake};
use super::weighted::Weighted;
use crate::loom::sync::Arc;
use crate::loom::thread;
use crate::telemetry::hooks::{Held, observe_queued};

/// When a blocking acquisition gives up.
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

    /// How a request made with this deadline is queued: not at all for `Now`.
    #[inline]
    fn queue(self) -> Option<impl FnOnce() -> Wake> {
        match self {
            Self::Now => None,
            Self::At(_) | Self::Forever => Some(|| Wake::Thread(thread::current())),
        }
    }
}

/// Takes `key` for `owner` in the exclusive registry, parking the thread until `deadline`.
/// The uncontended path is inlined into each caller (so `deadline` is a constant there);
/// waiting is out of line. Through `observe_queued`: unless telemetry samples it, the
/// registry's acquire alone; the hold's record goes into the guard.
#[inline]
#[cfg_attr(feature = "telemetry", track_caller)]
pub(crate) fn acquire_exclusive<K: Eq + Hash, S: BuildHasher>(
    registry: &Registry<K, S>,
    key: K,
    owner: u64,
    per_thread: bool,
    deadline: Deadline,
) -> Option<(Ticket, Held)> {
    observe_queued!(
        registry.telemetry,
        key,
        |key| registry.hash(key),
        Location::caller(),
        false,
        |key| {
            registry
                .acquire(key, owner, per_thread, deadline.queue())
                .answer()
        },
        |(ticket, waiter)| wait_exclusive(registry, ticket, &waiter, deadline),
    )
}

#[cold]
#[inline(never)]
fn wait_exclusive<K, S>(
    registry: &Registry<K, S>,
    ticket: Ticket,
    waiter: &Arc<Waiter>,
    deadline: Deadline,
) -> Option<Ticket> {
    wait_granted(waiter, deadline, || registry.cancel(ticket, waiter)).then_some(ticket)
}

/// Takes `weight` of `key` in a weighted registry, parking the thread until `deadline`.
/// Through `observe_queued`: unless telemetry samples it, the registry's acquire alone.
#[inline]
#[cfg_attr(feature = "telemetry", track_caller)]
pub(crate) fn acquire_weighted<K: Eq + Hash, S: BuildHasher>(
    registry: &Weighted<K, S>,
    key: K,
    weight: u64,
    deadline: Deadline,
) -> Option<(Ticket, Held)> {
    observe_queued!(
        registry.telemetry,
        key,
        |key| registry.hash(key),
        Location::caller(),
        false,
        |key| registry.acquire(key, weight, deadline.queue()).answer(),
        |(ticket, waiter)| wait_weighted(registry, ticket, &waiter, deadline),
    )
}

/// Adds `extra` to the hold `ticket` names (an upgrade), ahead of every waiter, parking the
/// thread until `deadline`.
pub(crate) fn grow_weighted<K, S>(
    registry: &Weighted<K, S>,
    ticket: Ticket,
    extra: u64,
    deadline: Deadline,
) -> bool {
    match registry.grow(ticket, extra, deadline.queue()) {
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

/// Parks the calling thread until `waiter` is granted (`true`), or until `deadline` passes
/// and `cancel` (the registry's authoritative re-check under its lock) reports whether the
/// grant came meanwhile.
fn wait_granted(waiter: &Waiter, deadline: Deadline, cancel: impl FnOnce() -> bool) -> bool {
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

/// Takes `$one` on each key of `$keys` in ascending order (each once), binding the key to
/// `$key`; on the first `None`, the guards taken so far drop and the result is `None`: all
/// or nothing. A macro, not a function of a closure: `$one` stays in the body of the
/// calling function, so that a `#[track_caller]` caller's location reaches telemetry.
macro_rules! all_or_nothing {
    ($keys:expr, |$key:ident| $one:expr) => {{
        let keys = $crate::lock_order::ascending_unique($keys);
        let mut guards = ::std::vec::Vec::with_capacity(keys.len());
        let mut complete = true;
        for $key in keys {
            match $one {
                Some(guard) => guards.push(guard),
                None => {
                    complete = false;
                    break;
                }
            }
        }
        complete.then_some(guards)
    }};
}
pub(crate) use all_or_nothing;
