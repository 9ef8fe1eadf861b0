//! The acquisitions of the code `chain_locker!` generates, as the telemetry sees them: one
//! [`Level`] per level of a locker (`LockName::Level`), and the lock helpers the generated
//! bodies call, each returning the guard with its [`Held`] record.
//!
//! Without chainlock's `telemetry` feature every helper is an `#[inline(always)]` call of
//! the lock itself and [`Held`] is zero-sized: the generated code compiles to what it was
//! before the telemetry existed (the zero-cost benchmark's callgrind counts are identical).
//! With the feature and the telemetry not enabled, an acquisition costs one relaxed load
//! and a branch more. Enabled, an acquisition first tries the lock (so that a wait is known
//! as one, `waiting`), then waits for it as it would have.
#![expect(
    clippy::inline_always,
    reason = "the generated code's steps must inline into the caller to cost nothing"
)]

use super::{
    AsyncExclusiveLock, AsyncSharedLock, ExclusiveLock, Exit, SharedLock, TimedExclusiveLock,
    TimedSharedLock, TimedUpgradableLock, Upgradable, UpgradableLock,
};
use crate::__private::in_time;
pub use crate::telemetry::Held;
use std::sync::Arc;
use std::time::Instant;

/// One level of a generated locker, as the telemetry names it (`LockName::Level`): a
/// `static` of the generated code, one per level.
pub struct Level {
    #[cfg_attr(
        not(feature = "telemetry"),
        expect(dead_code, reason = "read by the telemetry")
    )]
    locker: &'static str,
    #[cfg_attr(
        not(feature = "telemetry"),
        expect(dead_code, reason = "read by the telemetry")
    )]
    index: usize,
    #[cfg_attr(
        not(feature = "telemetry"),
        expect(dead_code, reason = "read by the telemetry")
    )]
    name: &'static str,
    #[cfg(feature = "telemetry")]
    probe: std::sync::OnceLock<crate::telemetry::Probe>,
}

impl Level {
    /// Level `index` of the locker `locker`, whose node type is `name`.
    #[must_use]
    pub const fn new(locker: &'static str, index: usize, name: &'static str) -> Self {
        Level {
            locker,
            index,
            name,
            #[cfg(feature = "telemetry")]
            probe: std::sync::OnceLock::new(),
        }
    }
}

/// The lock's identity for the telemetry (which holder a waiter waits for).
#[cfg(feature = "telemetry")]
pub(crate) fn address<L: ?Sized>(lock: &Arc<L>) -> crate::telemetry::LockAddr {
    Arc::as_ptr(lock).cast::<()>() as usize
}

#[cfg(feature = "telemetry")]
pub(crate) mod on {
    //! The recording side: try, then wait, each step told to the telemetry.

    use super::Level;
    use crate::telemetry::{Attempt, Held, KeyRef, LockAddr, Probe, ProbeKind};
    use std::future::Future;
    use std::pin::pin;

    impl Level {
        fn probe(&self) -> &Probe {
            self.probe.get_or_init(|| {
                Probe::new(ProbeKind::Level {
                    locker: self.locker,
                    level: self.index,
                    name: self.name,
                })
            })
        }

        /// An attempt at this level from the caller's site.
        #[track_caller]
        pub(crate) fn begin(&'static self) -> Attempt<'static> {
            self.probe().begin(KeyRef::None)
        }
    }

    /// Try first, then wait (`wait` returns `None` when it gives up).
    pub(crate) fn observe<G>(
        mut attempt: Attempt<'_>,
        lock: LockAddr,
        try_lock: impl FnOnce() -> Option<G>,
        wait: impl FnOnce() -> Option<G>,
    ) -> Option<(G, Held)> {
        if let Some(guard) = try_lock() {
            return Some((guard, attempt.acquired(lock)));
        }
        attempt.waiting(lock);
        match wait() {
            Some(guard) => Some((guard, attempt.acquired(lock))),
            None => {
                attempt.gave_up();
                None
            }
        }
    }

    /// An async acquisition: it waited if its first poll was pending. The hold is a task's
    /// (`hold_across_await`).
    pub(crate) fn observe_async<'a, G>(
        attempt: Attempt<'a>,
        lock: LockAddr,
        acquire: impl Future<Output = Option<G>> + 'a,
    ) -> impl Future<Output = Option<(G, Held)>> + 'a {
        async move {
            let mut attempt = attempt;
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
            match outcome {
                Some(guard) => {
                    let mut held = attempt.acquired(lock);
                    held.mark_async();
                    Some((guard, held))
                }
                None => {
                    attempt.gave_up();
                    None
                }
            }
        }
    }

    /// Whether the telemetry records now (one relaxed load).
    #[inline(always)]
    pub(crate) fn enabled() -> bool {
        crate::telemetry::is_enabled()
    }
}

/// Blocking helpers: `$name(lock, [deadline, level,] probe)`.
macro_rules! blocking {
    ($(
        $(#[$doc:meta])*
        $name:ident: $trait:ident, $guard:ty, $lock:expr, $try:expr;
    )*) => {$(
        $(#[$doc])*
        #[inline(always)]
        #[cfg_attr(feature = "telemetry", track_caller)]
        pub fn $name<L: ?Sized + $trait>(lock: &Arc<L>, probe: &'static Level) -> ($guard, Held) {
            #[cfg(feature = "telemetry")]
            if on::enabled() {
                let (guard, held) = on::observe(probe.begin(), address(lock), || $try(lock), || Some($lock(lock)))
                    .expect("an untimed wait never gives up");
                return (guard, held);
            }
            let _ = probe;
            ($lock(lock), Held::default())
        }
    )*};
}

blocking! {
    /// [`ExclusiveLock::lock_exclusive`] of a level.
    exclusive: ExclusiveLock, L::Guard, L::lock_exclusive, L::try_lock_exclusive;
    /// [`SharedLock::lock_shared`] of a level.
    shared: SharedLock, L::Guard, L::lock_shared, L::try_lock_shared;
    /// [`Upgradable::lock`] of a level. `UpgradableLock` has no way to try without waiting:
    /// its acquisitions are counted, never as contended.
    upgradable: UpgradableLock, Upgradable<L>, Upgradable::lock, |lock| Some(Upgradable::lock(lock));
}

/// Timed helpers: `$name(lock, deadline, level, probe)`.
macro_rules! timed {
    ($(
        $(#[$doc:meta])*
        $name:ident: $trait:ident, $guard:ty, $lock:expr, $try:expr;
    )*) => {$(
        $(#[$doc])*
        ///
        /// # Errors
        ///
        /// [`Exit::TimedOut`] at `level` when `deadline` passes first.
        #[inline(always)]
        #[cfg_attr(feature = "telemetry", track_caller)]
        pub fn $name<L: ?Sized + $trait>(
            lock: &Arc<L>,
            deadline: Instant,
            level: usize,
            probe: &'static Level,
        ) -> Result<($guard, Held), Exit> {
            #[cfg(feature = "telemetry")]
            if on::enabled() {
                let outcome = on::observe(
                    probe.begin(),
                    address(lock),
                    || $try(lock),
                    || $lock(lock, deadline),
                );
                return in_time(outcome, level);
            }
            let _ = probe;
            in_time($lock(lock, deadline), level).map(|guard| (guard, Held::default()))
        }
    )*};
}

timed! {
    /// [`TimedExclusiveLock::try_lock_exclusive_until`] of a level.
    exclusive_until: TimedExclusiveLock, L::Guard, L::try_lock_exclusive_until, L::try_lock_exclusive;
    /// [`TimedSharedLock::try_lock_shared_until`] of a level.
    shared_until: TimedSharedLock, L::Guard, L::try_lock_shared_until, L::try_lock_shared;
    /// [`TimedUpgradableLock::try_lock_upgradable_until`] of a level, held as an [`Upgradable`].
    upgradable_until: TimedUpgradableLock, Upgradable<L>, upgradable_until_raw, |lock| upgradable_until_raw(lock, Instant::now());
}

/// [`TimedUpgradableLock::try_lock_upgradable_until`] as an [`Upgradable`].
#[inline(always)]
fn upgradable_until_raw<L: ?Sized + TimedUpgradableLock>(
    lock: &Arc<L>,
    deadline: Instant,
) -> Option<Upgradable<L>> {
    L::try_lock_upgradable_until(lock, deadline).map(Upgradable::from_guard)
}

/// [`AsyncExclusiveLock::lock_exclusive_async`] of a level.
#[inline]
pub async fn exclusive_async<L: ?Sized + AsyncExclusiveLock>(
    lock: Arc<L>,
    probe: &'static Level,
) -> (L::Guard, Held) {
    #[cfg(feature = "telemetry")]
    if on::enabled() {
        let address = address(&lock);
        let acquire = async move { Some(L::lock_exclusive_async(lock).await) };
        return on::observe_async(probe.begin(), address, acquire)
            .await
            .expect("an untimed wait never gives up");
    }
    let _ = probe;
    (L::lock_exclusive_async(lock).await, Held::default())
}

/// [`AsyncSharedLock::lock_shared_async`] of a level.
#[inline]
pub async fn shared_async<L: ?Sized + AsyncSharedLock>(
    lock: Arc<L>,
    probe: &'static Level,
) -> (L::Guard, Held) {
    #[cfg(feature = "telemetry")]
    if on::enabled() {
        let address = address(&lock);
        let acquire = async move { Some(L::lock_shared_async(lock).await) };
        return on::observe_async(probe.begin(), address, acquire)
            .await
            .expect("an untimed wait never gives up");
    }
    let _ = probe;
    (L::lock_shared_async(lock).await, Held::default())
}

/// [`AsyncExclusiveLock::try_lock_exclusive_until_async`] of a level, or [`Exit::TimedOut`].
///
/// # Errors
///
/// When `deadline` passes first.
#[inline]
pub async fn exclusive_until_async<L: ?Sized + AsyncExclusiveLock>(
    lock: Arc<L>,
    deadline: Instant,
    level: usize,
    probe: &'static Level,
) -> Result<(L::Guard, Held), Exit> {
    #[cfg(feature = "telemetry")]
    if on::enabled() {
        let address = address(&lock);
        let acquire = L::try_lock_exclusive_until_async(lock, deadline);
        return in_time(
            on::observe_async(probe.begin(), address, acquire).await,
            level,
        );
    }
    let _ = probe;
    in_time(
        L::try_lock_exclusive_until_async(lock, deadline).await,
        level,
    )
    .map(|guard| (guard, Held::default()))
}

/// [`AsyncSharedLock::try_lock_shared_until_async`] of a level, or [`Exit::TimedOut`].
///
/// # Errors
///
/// When `deadline` passes first.
#[inline]
pub async fn shared_until_async<L: ?Sized + AsyncSharedLock>(
    lock: Arc<L>,
    deadline: Instant,
    level: usize,
    probe: &'static Level,
) -> Result<(L::Guard, Held), Exit> {
    #[cfg(feature = "telemetry")]
    if on::enabled() {
        let address = address(&lock);
        let acquire = L::try_lock_shared_until_async(lock, deadline);
        return in_time(
            on::observe_async(probe.begin(), address, acquire).await,
            level,
        );
    }
    let _ = probe;
    in_time(L::try_lock_shared_until_async(lock, deadline).await, level)
        .map(|guard| (guard, Held::default()))
}

/// Releases a level the descent has passed: its guard, then its record (the hold's end).
#[inline(always)]
pub fn release<G>(guard: G, held: Held) {
    drop(guard);
    held.released();
}

/// [`release`] of the parent a mixed chain keeps until its walk's first step.
#[inline(always)]
pub fn release_taken<G>(parent: Option<(G, Held)>) {
    if let Some((guard, held)) = parent {
        release(guard, held);
    }
}

/// The leaf's guard, handed to the caller. Its hold ends when the caller drops it, which the
/// telemetry does not see (the guard is the lock's own type): the record ends here, so a
/// leaf's recorded hold is the descent's part of it (`run*` records the whole hold).
#[inline(always)]
pub fn leaf<G>(guard: G, held: Held) -> G {
    held.released();
    guard
}
