//! The shapes of one acquisition, every lock's way into the recording core: [`observe`]
//! (blocking), [`observe_timed`] (giving up at a deadline), [`observe_try`] (not waiting),
//! [`observe_async`] (a future, waited if its first poll was pending),
//! `observe_async_tried` (a future that can be tried first: the distributed seam's),
//! [`observe_unskipped`] and [`observe_try_unskipped`] (the out-of-line paths of the first
//! three, for a lock that asked the sampler itself) and
//! [`observe_hybrid`] (a hybrid lock, whose take may answer [`Restart`]).
#![expect(
    clippy::inline_always,
    reason = "a hook inlines into the lock's hot path down to its first branch: measured with callgrind"
)]

use crate::hybrid::Restart;
use crate::telemetry::naming::{KeyRef, LockAddr};
use crate::telemetry::probe::{Attempt, Held, Probe};
use crate::telemetry::sampling::Sampled;
use std::future::Future;
use std::panic::Location;
use std::pin::pin;
use std::sync::Arc;

/// The lock's identity for the telemetry (which holder a waiter waits for).
#[inline(always)]
pub(crate) fn address<L: ?Sized>(lock: &Arc<L>) -> LockAddr {
    Arc::as_ptr(lock).cast::<()>().addr()
}

/// The end of an acquisition: the record goes with the guard (`HELD`), or the acquisition
/// is counted without following the hold.
#[inline(always)]
pub(super) fn granted<const HELD: bool>(attempt: Attempt<'_>, lock: LockAddr) -> Held {
    if HELD {
        attempt.acquired(lock)
    } else {
        attempt.acquired_unheld(lock);
        Held::default()
    }
}

/// The end of an acquisition that waited: granted (`outcome`, see [`granted`]) or given up.
#[inline(always)]
pub(super) fn ended<G, const HELD: bool>(
    attempt: Attempt<'_>,
    lock: LockAddr,
    outcome: Option<G>,
) -> Option<(G, Held)> {
    if let Some(guard) = outcome {
        Some((guard, granted::<HELD>(attempt, lock)))
    } else {
        attempt.gave_up();
        None
    }
}

/// A blocking acquisition of the lock `key` of `probe`: when sampled, `try_lock` first (a
/// failed try is a contended acquisition), then `wait`, the record made after the try, at
/// `site`. Not sampled (or the telemetry off at run time), `wait` alone: the rest is out of
/// line.
#[inline(always)]
pub(crate) fn observe<G, const HELD: bool>(
    probe: &Probe,
    site: &'static Location<'static>,
    key: KeyRef<'_>,
    lock: LockAddr,
    try_lock: impl FnOnce() -> Option<G>,
    wait: impl FnOnce() -> G,
) -> (G, Held) {
    if probe.skips() {
        return (wait(), Held::default());
    }
    observe_unskipped::<G, HELD>(probe, key, site, lock, try_lock, || Some(wait()))
        .expect("an untimed wait never gives up")
}

/// A timed acquisition: as [`observe`], `wait` giving up with `None`.
#[inline(always)]
pub(crate) fn observe_timed<G, const HELD: bool>(
    probe: &Probe,
    site: &'static Location<'static>,
    key: KeyRef<'_>,
    lock: LockAddr,
    try_lock: impl FnOnce() -> Option<G>,
    wait: impl FnOnce() -> Option<G>,
) -> Option<(G, Held)> {
    if probe.skips() {
        return wait().map(|guard| (guard, Held::default()));
    }
    observe_unskipped::<G, HELD>(probe, key, site, lock, try_lock, wait)
}

/// The path of [`observe`] and [`observe_timed`] for an acquisition the sampler did not
/// skip (and of a lock that asked the sampler itself): if sampled, the try comes before the record is made (see [`Probe::is_sampled`]);
/// if not, `wait` alone.
#[cold]
#[inline(never)]
pub(crate) fn observe_unskipped<G, const HELD: bool>(
    probe: &Probe,
    key: KeyRef<'_>,
    site: &'static Location<'static>,
    lock: LockAddr,
    try_lock: impl FnOnce() -> Option<G>,
    wait: impl FnOnce() -> Option<G>,
) -> Option<(G, Held)> {
    if !probe.is_sampled() {
        return wait().map(|guard| (guard, Held::default()));
    }
    let sampled = Sampled::start(site);
    if let Some(guard) = try_lock() {
        return Some((guard, granted::<HELD>(probe.attempt(key, sampled), lock)));
    }
    let mut attempt = probe.attempt(key, sampled);
    attempt.waiting(lock);
    ended::<G, HELD>(attempt, lock, wait())
}

/// An acquisition that does not wait (a `try_*`): counted, as not contended, when `try_lock`
/// takes the lock; nothing is recorded when it does not (it did not wait, and holds
/// nothing). Not sampled (or the telemetry off at run time), `try_lock` alone.
#[inline(always)]
pub(crate) fn observe_try<G, const HELD: bool>(
    probe: &Probe,
    site: &'static Location<'static>,
    key: KeyRef<'_>,
    lock: LockAddr,
    try_lock: impl FnOnce() -> Option<G>,
) -> Option<(G, Held)> {
    if probe.skips() {
        return try_lock().map(|guard| (guard, Held::default()));
    }
    observe_try_unskipped::<G, HELD>(probe, key, site, lock, try_lock)
}

/// The path of [`observe_try`] for an acquisition the sampler did not skip (and of a lock
/// that asked the sampler itself).
#[cold]
#[inline(never)]
pub(crate) fn observe_try_unskipped<G, const HELD: bool>(
    probe: &Probe,
    key: KeyRef<'_>,
    site: &'static Location<'static>,
    lock: LockAddr,
    try_lock: impl FnOnce() -> Option<G>,
) -> Option<(G, Held)> {
    if !probe.is_sampled() {
        return try_lock().map(|guard| (guard, Held::default()));
    }
    let sampled = Sampled::start(site);
    let guard = try_lock()?;
    Some((guard, granted::<HELD>(probe.attempt(key, sampled), lock)))
}

/// An async acquisition: it waited if its first poll was pending. The hold is a task's
/// (`hold_across_await`).
pub(crate) async fn observe_async<G, const HELD: bool>(
    attempt: Attempt<'_>,
    lock: LockAddr,
    acquire: impl Future<Output = Option<G>>,
) -> Option<(G, Held)> {
    let mut attempt = attempt;
    if !attempt.is_recording() {
        return acquire.await.map(|guard| (guard, Held::default()));
    }
    attempt.mark_async();
    let mut acquire = pin!(acquire);
    let mut first = true;
    let outcome = std::future::poll_fn(|cx| {
        let poll = acquire.as_mut().poll(cx);
        if first && poll.is_pending() {
            attempt.waiting(lock);
        }
        first = false;
        poll
    })
    .await;
    ended::<G, HELD>(attempt, lock, outcome)
}

/// A hybrid lock's acquisition by a descent ([`HybridLock`]: the target of an optimistic
/// pass, kept only if its version is still the one read, or a node of the pessimistic pass):
/// as [`observe_timed`], each take answering [`Restart`] when the version changed (the lock
/// was let go: not an acquisition; the descent records its restart). When sampled,
/// `try_take` first (no lock: a contended acquisition), then `take` (`Ok(None)`: the
/// deadline passed). Not sampled (or the telemetry off at run time), `take` alone; without
/// the `telemetry` feature, `take`.
///
/// [`HybridLock`]: crate::hybrid::HybridLock
#[inline(always)]
pub(crate) fn observe_hybrid<G, const HELD: bool>(
    probe: &Probe,
    site: &'static Location<'static>,
    key: KeyRef<'_>,
    lock: LockAddr,
    try_take: impl FnOnce() -> Result<Option<G>, Restart>,
    take: impl FnOnce() -> Result<Option<G>, Restart>,
) -> Result<Option<(G, Held)>, Restart> {
    if probe.skips() {
        return take().map(|taken| taken.map(|guard| (guard, Held::default())));
    }
    let sampled = || probe.is_sampled().then(|| Sampled::start(site));
    observe_hybrid_unskipped::<G, HELD>(probe, sampled, key, lock, try_take, take)
}

/// [`observe_hybrid`] sampled on the side countdown (`sampling.rs`, `side_sampled_now`): an
/// acquisition of a generated descent's pessimistic pass, which the call's two copies ask
/// for alike (its number is not among the call's levels).
#[inline(always)]
pub(crate) fn observe_hybrid_side<G, const HELD: bool>(
    probe: &Probe,
    site: &'static Location<'static>,
    key: KeyRef<'_>,
    lock: LockAddr,
    try_take: impl FnOnce() -> Result<Option<G>, Restart>,
    take: impl FnOnce() -> Result<Option<G>, Restart>,
) -> Result<Option<(G, Held)>, Restart> {
    if !probe.is_sampled_side() {
        return take().map(|taken| taken.map(|guard| (guard, Held::default())));
    }
    let sampled = || Some(Sampled::start_side(site));
    observe_hybrid_unskipped::<G, HELD>(probe, sampled, key, lock, try_take, take)
}

/// The path of [`observe_hybrid`] for an acquisition the sampler did not skip: `sampled`
/// says whether it is sampled (and starts its sample).
#[cold]
#[inline(never)]
fn observe_hybrid_unskipped<G, const HELD: bool>(
    probe: &Probe,
    sampled: impl FnOnce() -> Option<Sampled>,
    key: KeyRef<'_>,
    lock: LockAddr,
    try_take: impl FnOnce() -> Result<Option<G>, Restart>,
    take: impl FnOnce() -> Result<Option<G>, Restart>,
) -> Result<Option<(G, Held)>, Restart> {
    let Some(sampled) = sampled() else {
        return take().map(|taken| taken.map(|guard| (guard, Held::default())));
    };
    if let Some(guard) = try_take()? {
        return Ok(Some((
            guard,
            granted::<HELD>(probe.attempt(key, sampled), lock),
        )));
    }
    let mut attempt = probe.attempt(key, sampled);
    attempt.waiting(lock);
    match take() {
        Ok(Some(guard)) => Ok(Some((guard, granted::<HELD>(attempt, lock)))),
        other => {
            attempt.gave_up();
            other.map(|_| None)
        }
    }
}

/// An async acquisition that can be tried without waiting, each answer a `Result` (the
/// distributed seam: every try is a request to a server, so that a future's first poll says
/// nothing of a wait): as [`observe_timed`] for a future. When `attempt` records, `try_lock`
/// first (no lock: a contended acquisition, then `wait`, if the acquisition may wait); not
/// recording, `wait` alone (`try_lock` alone if it may not). An error ends the attempt as
/// given up. (Only the distributed seam's, and only while the telemetry is compiled in.)
#[cfg(all(feature = "telemetry", feature = "distributed"))]
pub(crate) async fn observe_async_tried<G, E, T, W>(
    attempt: Attempt<'_>,
    lock: LockAddr,
    try_lock: impl FnOnce() -> T,
    wait: Option<impl FnOnce() -> W>,
) -> Result<Option<(G, Held)>, E>
where
    T: Future<Output = Result<Option<G>, E>>,
    W: Future<Output = Result<Option<G>, E>>,
{
    let mut attempt = attempt;
    let outcome = match wait {
        None => try_lock().await,
        Some(wait) if !attempt.is_recording() => wait().await,
        Some(wait) => match try_lock().await {
            Ok(None) => {
                attempt.waiting(lock);
                wait().await
            }
            tried => tried,
        },
    };
    match outcome {
        Ok(Some(guard)) => Ok(Some((guard, attempt.acquired(lock)))),
        Ok(None) => {
            attempt.gave_up();
            Ok(None)
        }
        Err(error) => {
            attempt.gave_up();
            Err(error)
        }
    }
}
