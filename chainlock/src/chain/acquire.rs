//! How a chain locker's level takes its lock: each lock trait's call in each flavor
//! (blocking, timed, async; [`exclusive`], [`shared_until`], [`exclusive_async`], ...), as
//! the lock's own call when the generated call does not record ([`Off`]), else through the
//! telemetry's shapes at the level's probe. Each has an `_unheld` twin for the leaf of a
//! `descend*`: its guard is the lock's own, handed to the caller, who releases it out of the
//! telemetry's sight; it is counted and its wait timed, its hold not followed. `run*`
//! releases the leaf itself, and records its hold. The generated code calls them through
//! `__private`; [`Steps`](super::wait::Steps) through `wait.rs`.
//!
//! [`Off`]: crate::telemetry::hooks::Off
#![expect(
    clippy::inline_always,
    reason = "the generated code's steps must inline into the caller to cost nothing"
)]

use super::exit::{Exit, in_time};
use super::lock::{
    AsyncExclusiveLock, AsyncSharedLock, ExclusiveLock, SharedLock, TimedExclusiveLock,
    TimedSharedLock,
};
use super::upgrade::{TimedUpgradableLock, Upgradable, UpgradableLock};
use crate::telemetry::hooks::{
    Held, KeyRef, Level, Rec, address, observe, observe_async, observe_timed, observe_try,
};
use std::sync::Arc;
use std::time::Instant;

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
            observe::<_, $held>(level.probe(), rec.site(), KeyRef::None, address(lock), || $try(lock), || $lock(lock))
        }
    };
}

twins! {
    blocking;
    /// [`ExclusiveLock::lock_exclusive`] of a level.
    exclusive, exclusive_unheld: [ExclusiveLock, L::Guard, L::lock_exclusive, L::try_lock_exclusive];
    /// [`SharedLock::lock_shared`] of a level.
    shared, shared_unheld: [SharedLock, L::Guard, L::lock_shared, L::try_lock_shared];
    /// [`Upgradable::lock`] of a level, tried first when sampled
    /// ([`UpgradableLock::try_lock_upgradable`]; a lock whose try cannot tell, the trait's
    /// default, counts every sampled acquisition as contended, its wait timed as it is).
    upgradable, upgradable_unheld: [UpgradableLock, Upgradable<L>, Upgradable::lock, |lock| L::try_lock_upgradable(lock).map(Upgradable::from_guard)];
}

/// A level's lock if it is free, without waiting (see [`twins!`]): the first locked level
/// under an optimistic parent, which waits only once out of its pin
/// (`chain/optimistic/carry.rs`). Taken, it is counted (as not contended) as the blocking
/// helper counts it, asking the sampler once; not taken, nothing is recorded and no chance
/// spent: the wait that follows records the acquisition.
macro_rules! tried {
    ([$($doc:tt)*] $name:ident, $held:literal: $trait:ident, $guard:ty, $try:expr) => {
        $($doc)*
        #[inline(always)]
        #[cfg_attr(feature = "telemetry", track_caller)]
        pub(crate) fn $name<R: Rec, L: ?Sized + $trait>(rec: R, lock: &Arc<L>, level: &'static Level) -> Option<($guard, Held)> {
            let guard = $try(lock)?;
            if !R::ON {
                return Some((guard, Held::default()));
            }
            observe_try::<_, $held>(level.probe(), rec.site(), KeyRef::None, address(lock), || Some(guard))
        }
    };
}

twins! {
    tried;
    /// [`ExclusiveLock::try_lock_exclusive`] of a level.
    exclusive_try, exclusive_try_unheld: [ExclusiveLock, L::Guard, L::try_lock_exclusive];
    /// [`SharedLock::try_lock_shared`] of a level.
    shared_try, shared_try_unheld: [SharedLock, L::Guard, L::try_lock_shared];
    /// [`UpgradableLock::try_lock_upgradable`] of a level, held as an [`Upgradable`].
    upgradable_try, upgradable_try_unheld: [UpgradableLock, Upgradable<L>, |lock| L::try_lock_upgradable(lock).map(Upgradable::from_guard)];
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
                probe.probe(),
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
