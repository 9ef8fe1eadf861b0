//! The seam between the locks and the telemetry: every instrumented lock (the engine of the
//! named locks, the chain lockers' levels, the walks, the stripes, the rooms, the distributed
//! seam) records its acquisitions through this module, and through it only. The recording
//! core behind it (`probe.rs`, or its zero-sized mirror `off.rs` without the `telemetry`
//! feature) is reached from nowhere else.
//!
//! One acquisition has one shape: [`observe`] (blocking), [`observe_timed`] (giving up at a
//! deadline), [`observe_try`] (not waiting), [`observe_async`] (a future, waited if its first
//! poll was pending), `observe_async_tried` (a future that can be tried first: the
//! distributed seam's), [`observe_unskipped`] (the out-of-line path of the first two, for a
//! lock that asked the sampler itself), and [`observe_queued!`] (a lock that queues its own
//! waiters: the engine's registries, blocking, timed or tried); the chain lockers' levels call
//! them through one helper per lock trait
//! and flavor ([`exclusive`], [`shared_until`], ...), named after a [`Level`]. An optimistic
//! descent records, per level, the passes it throws away ([`observe_restart`], at a level
//! [`restart`], with what comes [`Next`]): never its reads, which write nothing.
//!
//! The code `chain_locker!` generates reaches this module through `__private` only: [`Held`],
//! [`Level`], [`Rec`], [`Next`] and the helpers are `pub` for that re-export, and no public path of
//! `chainlock::telemetry` names them.
//!
//! Without chainlock's `telemetry` feature every helper is an `#[inline(always)]` call of
//! the lock itself, [`Level`] and [`Held`] are zero-sized and the attempt is never
//! recording: the generated code compiles to what it was before the telemetry existed (the
//! zero-cost benchmark's callgrind counts are identical). With the feature, a generated call
//! asks once ([`Rec`], `__private::recording_branches!`): not enabled, or none of its levels
//! due to be sampled, it runs with [`Off`] and every helper is its lock's own call; with
//! [`On`], each level asks the sampler, and a sampled acquisition first tries the lock (so
//! that a wait is known as one), then waits for it as it would have.
//!
//! The `_unheld` helpers are for the leaf of a `descend*`: its guard is the lock's own,
//! handed to the caller, who releases it out of the telemetry's sight; it is counted and its
//! wait timed, its hold not followed. `run*` releases the leaf itself, and records its hold.
#![expect(
    clippy::inline_always,
    reason = "the generated code's steps must inline into the caller to cost nothing"
)]

pub(crate) use super::naming::{KeyRef, Label, LockAddr, ProbeKind};
pub use super::probe::Held;
pub(crate) use super::probe::{Attempt, KeyProbe, Probe};
pub(crate) use super::sampling::{Sampled, skips_all};
pub(crate) use super::state::recording;
use crate::chain::{
    AsyncExclusiveLock, AsyncSharedLock, ExclusiveLock, Exit, SharedLock, TimedExclusiveLock,
    TimedSharedLock, TimedUpgradableLock, Upgradable, UpgradableLock, in_time,
};
use crate::hybrid::Restart;
use std::future::Future;
use std::panic::Location;
use std::pin::pin;
use std::sync::Arc;
use std::time::Instant;

/// One level of a generated locker, as the telemetry names it (`LockName::Level`): a
/// `static` of the generated code, one per level (zero-sized without the feature).
pub struct Level {
    probe: Probe,
}

impl Level {
    /// Level `index` of the locker `locker`, whose node type is `name`.
    #[must_use]
    pub const fn new(locker: &'static str, index: usize, name: &'static str) -> Self {
        Level {
            probe: Probe::new(ProbeKind::Level {
                locker,
                level: index,
                name,
            }),
        }
    }

    /// An acquisition of this level begins, at the caller's site.
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    fn begin(&self) -> Attempt<'_> {
        self.probe.begin(KeyRef::None)
    }
}

/// Whether a generated body records: asked once per call (`__private::recording_branches!`,
/// which runs the body with [`On`] while telemetry is enabled and the sampler is due within
/// the call's levels, with [`Off`] otherwise), not at each level. With [`Off`] a helper is its lock's own call and an empty record, so
/// the whole descent compiles to what it is without the telemetry feature.
pub trait Rec: Copy {
    /// Whether the helpers record (each still asks the sampler).
    const ON: bool;
    /// The site the acquisitions are recorded at: the generated method's caller.
    fn site(self) -> &'static Location<'static>;
}

/// The call may record (see [`Rec`]): each level asks the sampler, and records at
/// the method's caller (taken when the call began: the recording copy of a blocking body
/// runs in a closure, which cannot be `#[track_caller]`).
#[derive(Clone, Copy, Debug)]
pub struct On(&'static Location<'static>);

impl On {
    /// At the caller's site (the user's call, through the `#[track_caller]` method).
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    #[must_use]
    pub fn here() -> Self {
        On(Location::caller())
    }
}

/// The call does not record: telemetry not enabled, or none of its levels due to be
/// sampled.
#[derive(Clone, Copy, Debug)]
pub struct Off;

impl Rec for On {
    const ON: bool = true;
    #[inline(always)]
    fn site(self) -> &'static Location<'static> {
        self.0
    }
}

impl Rec for Off {
    const ON: bool = false;
    #[inline(always)]
    fn site(self) -> &'static Location<'static> {
        Location::caller()
    }
}

/// Runs the recording copy of a generated blocking body out of line, so that the copy that
/// does not record keeps its function as small as without the telemetry (inlined, the
/// second copy cost the inliner's budget: a guard's drop of an eight-level chain went out
/// of line).
#[inline(never)]
pub fn out_of_line<T>(body: impl FnOnce() -> T) -> T {
    body()
}

/// The lock's identity for the telemetry (which holder a waiter waits for).
#[inline(always)]
pub(crate) fn address<L: ?Sized>(lock: &Arc<L>) -> LockAddr {
    Arc::as_ptr(lock).cast::<()>().addr()
}

/// The end of an acquisition: the record goes with the guard (`HELD`), or the acquisition
/// is counted without following the hold.
#[inline(always)]
fn granted<const HELD: bool>(attempt: Attempt<'_>, lock: LockAddr) -> Held {
    if HELD {
        attempt.acquired(lock)
    } else {
        attempt.acquired_unheld(lock);
        Held::default()
    }
}

/// The end of an acquisition that waited: granted (`outcome`, see [`granted`]) or given up.
#[inline(always)]
fn ended<G, const HELD: bool>(
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

/// The path of [`observe`] and [`observe_timed`] (and of a stripe's wait) for an
/// acquisition the sampler did not skip: if sampled, the try comes before the record is
/// made (see [`Probe::is_sampled`]); if not, `wait` alone.
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

/// The path of [`observe_try`] for an acquisition the sampler did not skip.
#[cold]
#[inline(never)]
fn observe_try_unskipped<G, const HELD: bool>(
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
    observe_hybrid_unskipped::<G, HELD>(probe, site, key, lock, try_take, take)
}

/// The path of [`observe_hybrid`] for an acquisition the sampler did not skip.
#[cold]
#[inline(never)]
fn observe_hybrid_unskipped<G, const HELD: bool>(
    probe: &Probe,
    site: &'static Location<'static>,
    key: KeyRef<'_>,
    lock: LockAddr,
    try_take: impl FnOnce() -> Result<Option<G>, Restart>,
    take: impl FnOnce() -> Result<Option<G>, Restart>,
) -> Result<Option<(G, Held)>, Restart> {
    if !probe.is_sampled() {
        return take().map(|taken| taken.map(|guard| (guard, Held::default())));
    }
    let sampled = Sampled::start(site);
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

/// `observe_hybrid` at a level of a generated optimistic locker: its target, or a level of
/// its pessimistic pass, the hybrid lock `lock` taken by `take` (tried first by `try_take` when sampled). The record
/// goes with the guard (`HELD`), or the acquisition is counted without following the hold
/// (the leaf a `descend*` hands out). With [`Off`], `take` alone.
///
/// # Errors
///
/// [`Restart`] when `take` (or `try_take`) answers it: the version changed.
#[inline(always)]
#[cfg_attr(feature = "telemetry", track_caller)]
pub fn hybrid<R: Rec, L: ?Sized, G, const HELD: bool>(
    rec: R,
    lock: &Arc<L>,
    level: &'static Level,
    try_take: impl FnOnce() -> Result<Option<G>, Restart>,
    take: impl FnOnce() -> Result<Option<G>, Restart>,
) -> Result<Option<(G, Held)>, Restart> {
    if !R::ON {
        return take().map(|taken| taken.map(|guard| (guard, Held::default())));
    }
    let lock = address(lock);
    observe_hybrid::<G, HELD>(&level.probe, rec.site(), KeyRef::None, lock, try_take, take)
}

/// What an optimistic descent does after a pass failed (see [`restart`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Another optimistic pass: its restart bound is not reached.
    Optimistic,
    /// The pessimistic pass (locks, hand over hand): the bound is reached, the descent falls
    /// back.
    Pessimistic,
}

/// An optimistic pass failed at the lock `key` of `probe` (a level, a walk's depth): the
/// version read there changed, or a writer held it. The descent restarts, into another
/// optimistic pass or its pessimistic one (`next`, the fallback). Counted, sampled as an
/// acquisition is (a sampled restart counts for the sampling rate), at the level whose
/// validation failed, into [`LockStats::restarts`] and, for [`Next::Pessimistic`],
/// [`LockStats::fallbacks`].
///
/// Called only on the restart path, which already writes (the pass is thrown away): the
/// optimistic read that succeeds writes nothing and is never counted. Not sampled (or the
/// telemetry off at run time), a relaxed load and this thread's countdown; without the
/// `telemetry` feature, nothing.
///
/// [`LockStats::restarts`]: crate::telemetry::LockStats::restarts
/// [`LockStats::fallbacks`]: crate::telemetry::LockStats::fallbacks
#[inline(always)]
pub(crate) fn observe_restart(probe: &Probe, key: KeyRef<'_>, next: Next) {
    if probe.skips() {
        return;
    }
    observe_restart_unskipped(probe, key, next);
}

/// The path of [`observe_restart`] for a restart the sampler did not skip.
#[cold]
#[inline(never)]
fn observe_restart_unskipped(probe: &Probe, key: KeyRef<'_>, next: Next) {
    if probe.is_sampled() {
        // A restart records no site: this one is only the sample's placeholder.
        let sampled = Sampled::start(Location::caller());
        probe.restarted(key, sampled, next == Next::Pessimistic);
    }
}

/// `observe_restart` at a level of a generated locker: its optimistic pass failed at
/// `level` (a version read there changed, or a writer held it), and the descent goes on
/// with `next`. The generated code calls it where the pass is thrown away, never on a read
/// that validates. Counted into the level's `LockStats::restarts` (and, for
/// [`Next::Pessimistic`], `fallbacks`), sampled as an acquisition is; without the
/// `telemetry` feature, nothing (the call compiles away).
///
/// It takes no [`Rec`]: a restart asks the sampler itself, so that a call not recording its
/// acquisitions still counts its restarts (else the restarts of the calls that skipped the
/// sampler would be lost, and the estimate biased).
#[inline(always)]
pub fn restart(level: &'static Level, next: Next) {
    observe_restart(&level.probe, KeyRef::None, next);
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

/// Each helper of a level and its `_unheld` twin for a `descend*`'s leaf, from one body: the
/// `$shape` macro's, whose record goes with the guard (`$held = true`) or not.
macro_rules! twins {
    ($shape:ident; $(
        $(#[$doc:meta])*
        $name:ident, $unheld:ident: [$($rest:tt)*];
    )*) => {$(
        $shape!([$(#[$doc])*] $name, true: $($rest)*);
        $shape!(
            [$(#[$doc])* #[doc = " Its hold is not followed (a `descend*`'s leaf)."]]
            $unheld, false: $($rest)*
        );
    )*};
}

/// A blocking helper of a level (see [`twins!`]).
macro_rules! blocking {
    ([$($doc:tt)*] $name:ident, $held:literal: $trait:ident, $guard:ty, $lock:expr, $try:expr) => {
        $($doc)*
        #[inline(always)]
        #[cfg_attr(feature = "telemetry", track_caller)]
        pub fn $name<R: Rec, L: ?Sized + $trait>(rec: R, lock: &Arc<L>, level: &'static Level) -> ($guard, Held) {
            if !R::ON {
                return ($lock(lock), Held::default());
            }
            observe::<_, $held>(&level.probe, rec.site(), KeyRef::None, address(lock), || $try(lock), || $lock(lock))
        }
    };
}

twins! {
    blocking;
    /// [`ExclusiveLock::lock_exclusive`] of a level.
    exclusive, exclusive_unheld: [ExclusiveLock, L::Guard, L::lock_exclusive, L::try_lock_exclusive];
    /// [`SharedLock::lock_shared`] of a level.
    shared, shared_unheld: [SharedLock, L::Guard, L::lock_shared, L::try_lock_shared];
    /// [`Upgradable::lock`] of a level. `UpgradableLock` has no way to try without waiting:
    /// its acquisitions are counted, never as contended.
    upgradable, upgradable_unheld: [UpgradableLock, Upgradable<L>, Upgradable::lock, |lock| Some(Upgradable::lock(lock))];
}

/// A timed helper of a level: `$name(lock, deadline, level, probe)` (see [`twins!`]).
macro_rules! timed {
    ([$($doc:tt)*] $name:ident, $held:literal: $trait:ident, $guard:ty, $lock:expr, $try:expr) => {
        $($doc)*
        ///
        /// # Errors
        ///
        /// [`Exit::TimedOut`] at `level` when `deadline` passes first.
        #[inline(always)]
        #[cfg_attr(feature = "telemetry", track_caller)]
        pub fn $name<R: Rec, L: ?Sized + $trait>(
            rec: R,
            lock: &Arc<L>,
            deadline: Instant,
            level: usize,
            probe: &'static Level,
        ) -> Result<($guard, Held), Exit> {
            if !R::ON {
                return in_time($lock(lock, deadline).map(|guard| (guard, Held::default())), level);
            }
            let outcome = observe_timed::<_, $held>(
                &probe.probe,
                rec.site(),
                KeyRef::None,
                address(lock),
                || $try(lock),
                || $lock(lock, deadline),
            );
            in_time(outcome, level)
        }
    };
}

twins! {
    timed;
    /// [`TimedExclusiveLock::try_lock_exclusive_until`] of a level.
    exclusive_until, exclusive_until_unheld: [TimedExclusiveLock, L::Guard, L::try_lock_exclusive_until, L::try_lock_exclusive];
    /// [`TimedSharedLock::try_lock_shared_until`] of a level.
    shared_until, shared_until_unheld: [TimedSharedLock, L::Guard, L::try_lock_shared_until, L::try_lock_shared];
    /// [`TimedUpgradableLock::try_lock_upgradable_until`] of a level, held as an [`Upgradable`].
    upgradable_until, upgradable_until_unheld: [TimedUpgradableLock, Upgradable<L>, upgradable_until_raw, |lock| upgradable_until_raw(lock, Instant::now())];
}

/// [`TimedUpgradableLock::try_lock_upgradable_until`] as an [`Upgradable`].
#[inline(always)]
fn upgradable_until_raw<L: ?Sized + TimedUpgradableLock>(
    lock: &Arc<L>,
    deadline: Instant,
) -> Option<Upgradable<L>> {
    L::try_lock_upgradable_until(lock, deadline).map(Upgradable::from_guard)
}

/// An async helper of a level: `$name(lock, probe)` (see [`twins!`]).
macro_rules! asynchronous {
    ([$($doc:tt)*] $name:ident, $held:literal: $trait:ident, $lock:ident) => {
        $($doc)*
        #[inline]
        pub async fn $name<R: Rec, L: ?Sized + $trait>(_: R, lock: Arc<L>, level: &'static Level) -> (L::Guard, Held) {
            if !R::ON {
                return (L::$lock(lock).await, Held::default());
            }
            let address = address(&lock);
            let acquire = async move { Some(L::$lock(lock).await) };
            observe_async::<_, $held>(level.begin(), address, acquire)
                .await
                .expect("an untimed wait never gives up")
        }
    };
}

/// A timed async helper of a level: `$name(lock, deadline, level, probe)` (see [`twins!`]).
macro_rules! asynchronous_timed {
    ([$($doc:tt)*] $name:ident, $held:literal: $trait:ident, $lock:ident) => {
        $($doc)*
        ///
        /// # Errors
        ///
        /// [`Exit::TimedOut`] at `level` when `deadline` passes first.
        #[inline]
        pub async fn $name<R: Rec, L: ?Sized + $trait>(
            _: R,
            lock: Arc<L>,
            deadline: Instant,
            level: usize,
            probe: &'static Level,
        ) -> Result<(L::Guard, Held), Exit> {
            if !R::ON {
                let outcome = L::$lock(lock, deadline).await;
                return in_time(outcome.map(|guard| (guard, Held::default())), level);
            }
            let address = address(&lock);
            let acquire = L::$lock(lock, deadline);
            in_time(observe_async::<_, $held>(probe.begin(), address, acquire).await, level)
        }
    };
}

twins! {
    asynchronous;
    /// [`AsyncExclusiveLock::lock_exclusive_async`] of a level.
    exclusive_async, exclusive_async_unheld: [AsyncExclusiveLock, lock_exclusive_async];
    /// [`AsyncSharedLock::lock_shared_async`] of a level.
    shared_async, shared_async_unheld: [AsyncSharedLock, lock_shared_async];
}

twins! {
    asynchronous_timed;
    /// [`AsyncExclusiveLock::try_lock_exclusive_until_async`] of a level.
    exclusive_until_async, exclusive_until_async_unheld: [AsyncExclusiveLock, try_lock_exclusive_until_async];
    /// [`AsyncSharedLock::try_lock_shared_until_async`] of a level.
    shared_until_async, shared_until_async_unheld: [AsyncSharedLock, try_lock_shared_until_async];
}

/// Releases a level the descent has passed: its record (the hold's end), then its guard.
#[inline(always)]
pub fn release<G>(guard: G, held: Held) {
    held.released();
    drop(guard);
}

/// [`release`] of the parent a mixed chain keeps until its walk's first step.
#[inline(always)]
pub fn release_taken<G>(parent: Option<(G, Held)>) {
    if let Some((guard, held)) = parent {
        release(guard, held);
    }
}

/// An empty record, for `run*` to fill (generated code has no prelude: no `Default::default`).
#[inline(always)]
#[must_use]
pub fn no_hold() -> Held {
    Held::default()
}

/// The leaf's guard, handed to the caller (its record is an `_unheld` helper's: empty).
#[inline(always)]
pub fn leaf<G>(guard: G, _empty: Held) -> G {
    guard
}

/// Makes the generated method it wraps `#[track_caller]` when chainlock's `telemetry`
/// feature is on, so that the sites the telemetry records are the user's calls; without the
/// feature, the method as it is (no hidden location argument, nothing to pay).
#[cfg(feature = "telemetry")]
#[doc(hidden)]
#[macro_export]
macro_rules! __chainlock_tracked {
    ($($item:tt)*) => { #[track_caller] $($item)* };
}

/// See the `telemetry` twin above: without the feature, the method unchanged.
#[cfg(not(feature = "telemetry"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __chainlock_tracked {
    ($($item:tt)*) => { $($item)* };
}

/// Runs a generated descent's body with `$rec` bound to [`On`] when this call may record,
/// with [`Off`] otherwise: the telemetry is asked once per call, and with `Off` every
/// level's helper is its lock's own call (the body, duplicated, compiles to what it is
/// without the feature). The call may record when the telemetry is enabled and this
/// thread's sampling countdown ends within the call's `$levels` acquisitions
/// ([`records`]): else the countdown moves past them all at once and the call runs
/// without hooks, so that a call costs one check, not one per level, unless one of its
/// acquisitions is sampled. Without chainlock's `telemetry` feature: the body with
/// `Off`, once.
#[cfg(feature = "telemetry")]
#[doc(hidden)]
#[macro_export]
macro_rules! __chainlock_recording_branches {
    // A blocking body: its recording copy runs out of line (`out_of_line`), the site taken
    // here, in the `#[track_caller]` method.
    ($rec:ident, $levels:expr => $($body:tt)*) => {
        if $crate::__private::records($levels) {
            let $rec = $crate::__private::RecOn::here();
            $crate::__private::out_of_line(move || { $($body)* })
        } else {
            let $rec = $crate::__private::RecOff;
            $($body)*
        }
    };
    // An async body: both copies in the future (`async fn`s are not `#[track_caller]`).
    (async $rec:ident, $levels:expr => $($body:tt)*) => {
        if $crate::__private::records($levels) {
            let $rec = $crate::__private::RecOn::here();
            $($body)*
        } else {
            let $rec = $crate::__private::RecOff;
            $($body)*
        }
    };
}

/// See the `telemetry` twin above: without the feature, the body once, not recording.
#[cfg(not(feature = "telemetry"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __chainlock_recording_branches {
    (async $rec:ident, $levels:expr => $($body:tt)*) => {
        $crate::__private::recording_branches!($rec, $levels => $($body)*)
    };
    ($rec:ident, $levels:expr => $($body:tt)*) => {{
        let $rec = $crate::__private::RecOff;
        $($body)*
    }};
}

/// Whether a generated call of (at most) `levels` acquisitions may record: the telemetry
/// is enabled and this thread's sampling countdown ends within them. If not, the countdown
/// moves past all of them (none is sampled; each real acquisition still had its chance of
/// one in `sample_every`, so the estimates stay unbiased: a call that exits early only
/// spends the chances of acquisitions that did not happen). `u32::MAX`: the count is not
/// known (records whenever enabled).
#[inline(always)]
#[must_use]
pub fn records(levels: u32) -> bool {
    recording() && !skips_all(levels)
}
