//! The shape of an acquisition from a lock that queues its own waiters (the engine's
//! registries): [`observe_queued!`] over the lock's [`Answer`].
#![expect(
    clippy::inline_always,
    reason = "a hook inlines into the lock's hot path down to its first branch: measured with callgrind"
)]

use super::acquisition::ended;
use crate::telemetry::naming::LockAddr;
use crate::telemetry::probe::{Held, KeyProbe};
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

/// An acquisition of `$key` of `$probe` (a [`KeyProbe`]) from a lock that queues its own
/// waiters (the engine's registries, whose one request takes the key or queues for it, so
/// that there is nothing to try first): `|$k| $request` asks (an [`Answer`]), and a queued
/// request is waited for by `|$q| $wait` (`None`: it gave up). When sampled
/// ([`observe_queued_unskipped`]), the record is made before the request (`$hash` names the
/// key, which the request consumes) and the wait timed from the queueing; a busy answer
/// gave up (a try does not wait); `$task`: the acquisition is a task's. Not sampled (or the
/// telemetry off at run time), the request and the wait alone ([`unobserved`]).
///
/// A macro, not a function of closures, only so that each path has its own copy of the
/// request and the wait: one closure called from both paths was not inlined into the hot
/// one (+6 and +21 instructions per uncontended keyed-lock and reader-writer cycle,
/// measured with the feature on and not enabled). `Location::caller()` is the
/// `#[track_caller]` caller's.
macro_rules! observe_queued {
    (
        $probe:expr, $key:expr, $hash:expr, $task:expr,
        |$k:ident| $request:expr,
        |$q:pat_param| $wait:expr $(,)?
    ) => {{
        let probe = &$probe;
        let key = $key;
        if probe.skips() {
            let $k = key;
            $crate::telemetry::hooks::unobserved($request, |$q| $wait)
        } else {
            $crate::telemetry::hooks::observe_queued_unskipped(
                probe,
                key,
                $hash,
                ::std::panic::Location::caller(),
                $task,
                |$k| $request,
                |$q| $wait,
            )
        }
    }};
}
pub(crate) use observe_queued;

/// [`observe_queued!`]'s path for an acquisition the sampler skipped: the answer, and the
/// wait of a queued one.
#[inline(always)]
pub(crate) fn unobserved<G, Q>(
    answer: Answer<G, Q>,
    wait: impl FnOnce(Q) -> Option<G>,
) -> Option<(G, Held)> {
    match answer {
        Answer::Taken(guard, _) => Some((guard, Held::default())),
        Answer::Busy => None,
        Answer::Queued(queued, _) => wait(queued).map(|guard| (guard, Held::default())),
    }
}

/// [`observe_queued!`]'s path for an acquisition the sampler did not skip, out of line:
/// recorded if sampled.
#[cold]
#[inline(never)]
pub(crate) fn observe_queued_unskipped<K, G, Q>(
    probe: &KeyProbe<K>,
    key: K,
    hash: impl FnOnce(&K) -> u64,
    site: &'static Location<'static>,
    task: bool,
    request: impl FnOnce(K) -> Answer<G, Q>,
    wait: impl FnOnce(Q) -> Option<G>,
) -> Option<(G, Held)> {
    let mut attempt = probe.begin_unskipped(&key, hash, site);
    if task {
        attempt.mark_async();
    }
    match request(key) {
        Answer::Taken(guard, lock) => Some((guard, attempt.acquired(lock))),
        Answer::Busy => {
            attempt.gave_up();
            None
        }
        Answer::Queued(queued, lock) => {
            attempt.waiting(lock);
            ended::<G, true>(attempt, lock, wait(queued))
        }
    }
}
