//! The shape of an acquisition from a lock that queues its own waiters (the engine's
//! registries): [`observe_queued!`] over the lock's [`Answer`] for a thread, built on
//! [`observe_queued_start`], the request alone, which is also a future's first poll (the
//! engine's claim keeps the record of its wait, [`Waiting`], until it resolves).
#![expect(
    clippy::inline_always,
    reason = "a hook inlines into the lock's hot path down to its first branch: measured with callgrind"
)]

use super::acquisition::ended;
use crate::telemetry::naming::LockAddr;
use crate::telemetry::probe::{Attempt, Held, KeyProbe};
use std::panic::Location;

/// What a lock that queues its own waiters (the engine's registries) answers a request for
/// it: taken at once, busy (the request asked not to queue), or queued, each with the lock's
/// identity for the live table ([`observe_queued!`]).
pub(crate) enum Answer<G, Q> {
    /// Taken at once: the guard.
    Taken(G, LockAddr),
    /// Held by another owner, and the request did not queue.
    Busy,
    /// Queued behind the holders: what waits for the grant.
    Queued(Q, LockAddr),
}

/// What a request to a lock that queues its own waiters comes to, with its record: an
/// [`Answer`] seen by the telemetry ([`observe_queued_start`]).
pub(crate) enum Started<G, Q> {
    /// Taken at once: the guard and its record.
    Taken(G, Held),
    /// Held by another owner, and the request did not queue (it gave up).
    Busy,
    /// Queued behind the holders: what waits for the grant, the lock, and the record of the
    /// wait.
    Queued(Q, LockAddr, Waiting),
}

impl<G, Q> Started<G, Q> {
    /// An acquisition the telemetry does not follow (an upgrade, whose hold it follows
    /// already): the answer, recording nothing.
    #[cfg(feature = "async")]
    #[inline(always)]
    pub(crate) fn unobserved(answer: Answer<G, Q>) -> Self {
        started(Attempt::off(), answer)
    }
}

/// The record of a queued acquisition, kept while it waits (by a future, between its polls):
/// the hold's record once [`granted`](Self::granted); dropped before, the acquisition gave
/// up.
pub(crate) struct Waiting(Attempt<'static>);

impl Waiting {
    /// The lock `lock` was granted: the record of the hold, for the guard.
    #[cfg(feature = "async")]
    #[inline(always)]
    pub(crate) fn granted(self, lock: LockAddr) -> Held {
        self.0.acquired(lock)
    }
}

/// An acquisition of `$key` of `$probe` (a [`KeyProbe`]) from a lock that queues its own
/// waiters (the engine's registries, whose one request takes the key or queues for it, so
/// that there is nothing to try first): `|$k| $request` asks (an [`Answer`]), and a queued
/// request is waited for by `|$q| $wait` (`None`: it gave up), the wait timed from the
/// queueing when sampled; a busy answer gave up (a try does not wait). The record is begun
/// as in [`observe_queued_start`] (`$hash` names the key, `$site` and `$task` as there).
///
/// One copy of the request, after a record that is empty unless sampled (with one codegen
/// unit, a second copy in the recording path, this hook's shape until then, kept the
/// registry's acquire out of line in both: +51 instructions per uncontended keyed-lock cycle
/// with the feature on and not enabled). A macro, not a function of closures, only so that
/// the request stays in its caller's body: as a closure, the weighted registry's was not
/// inlined (+15 per reader-writer and permit cycle, feature off; callgrind).
macro_rules! observe_queued {
    (
        $probe:expr, $key:expr, $hash:expr, $site:expr, $task:expr,
        |$k:ident| $request:expr,
        |$q:pat_param| $wait:expr $(,)?
    ) => {{
        let key = $key;
        let attempt = $crate::telemetry::hooks::begin_queued(&$probe, &key, $hash, $site, $task);
        let $k = key;
        $crate::telemetry::hooks::queued_ended(attempt, $request, |$q| $wait)
    }};
}
pub(crate) use observe_queued;

/// [`observe_queued!`]'s end: the answer recorded by `attempt`, and the wait of a queued
/// request.
#[inline(always)]
pub(crate) fn queued_ended<G, Q>(
    attempt: Attempt<'static>,
    answer: Answer<G, Q>,
    wait: impl FnOnce(Q) -> Option<G>,
) -> Option<(G, Held)> {
    match started(attempt, answer) {
        Started::Taken(guard, held) => Some((guard, held)),
        Started::Busy => None,
        Started::Queued(queued, lock, waiting) => ended::<G, true>(waiting.0, lock, wait(queued)),
    }
}

/// The request of [`observe_queued!`] by itself, for a lock whose wait is not one call (a
/// future's first poll: the engine's claim, whose wait is its later polls): `request` asks
/// for `key` of `probe`; the result is [`Started`], whose [`Waiting`] a queued acquisition
/// keeps until it is granted or gives up. Unless the sampler skips it, the record is begun
/// out of line before the request (`hash` names the key, which the request consumes), at
/// `site`, a task's if `task`; recorded if sampled.
#[cfg(feature = "async")]
#[inline(always)]
pub(crate) fn observe_queued_start<K, G, Q>(
    probe: &KeyProbe<K>,
    key: K,
    hash: impl FnOnce(&K) -> u64,
    site: &'static Location<'static>,
    task: bool,
    request: impl FnOnce(K) -> Answer<G, Q>,
) -> Started<G, Q> {
    let attempt = begin_queued(probe, &key, hash, site, task);
    started(attempt, request(key))
}

/// The record of a request to a lock that queues its own waiters: empty if the sampler
/// skips it (one load and a branch), else begun out of line.
#[inline(always)]
pub(crate) fn begin_queued<K>(
    probe: &KeyProbe<K>,
    key: &K,
    hash: impl FnOnce(&K) -> u64,
    site: &'static Location<'static>,
    task: bool,
) -> Attempt<'static> {
    if probe.skips() {
        Attempt::off()
    } else {
        begin_unskipped(probe, key, hash, site, task)
    }
}

/// [`observe_queued_start`]'s record, for an acquisition the sampler did not skip, out of
/// line: recording if sampled.
#[cold]
#[inline(never)]
fn begin_unskipped<K>(
    probe: &KeyProbe<K>,
    key: &K,
    hash: impl FnOnce(&K) -> u64,
    site: &'static Location<'static>,
    task: bool,
) -> Attempt<'static> {
    let mut attempt = probe.begin_unskipped(key, hash, site).detach();
    if task {
        attempt.mark_async();
    }
    attempt
}

/// The answer to a request, recorded by `attempt` (begun before the request).
#[inline(always)]
fn started<G, Q>(mut attempt: Attempt<'static>, answer: Answer<G, Q>) -> Started<G, Q> {
    match answer {
        Answer::Taken(guard, lock) => Started::Taken(guard, attempt.acquired(lock)),
        Answer::Busy => {
            attempt.gave_up();
            Started::Busy
        }
        Answer::Queued(queued, lock) => {
            attempt.waiting(lock);
            Started::Queued(queued, lock, Waiting(attempt))
        }
    }
}
