//! How a generated descent waits for each level's lock: one body per chain serves the
//! blocking and the deadline flavors (`descend` and `descend_until`, `run` and `run_until`),
//! given a strategy, [`Blocking`] or [`Deadline`], as the walks' loops are given one
//! (`walk/steps.rs`), through [`Steps`]. The async body takes the deadline as an `Option`
//! instead (its lock traits are the same with and without one): [`AsyncSteps`].
//!
//! Every step goes through the telemetry's per-level helpers (`telemetry/hooks.rs`); a
//! strategy only picks which. Reached by generated code through `__private`.
#![expect(
    clippy::inline_always,
    reason = "the generated code's steps must inline into the caller to cost nothing"
)]

use super::{
    AsyncExclusiveLock, AsyncSharedLock, ExclusiveLock, Exit, SharedLock, TimedExclusiveLock,
    TimedSharedLock, TimedUpgradableLock, Upgradable, UpgradableLock,
};
use crate::telemetry::hooks::{self, Held, Level, Rec};
use std::convert::Infallible;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::Instant;

/// A way of waiting for each lock: [`Blocking`] or [`Deadline`].
pub trait Wait: Copy {
    /// Why a step gives up: never ([`Infallible`], so that a blocking body's steps carry no
    /// error path at all, as the code a person writes), or [`Exit::TimedOut`].
    type Error;
    /// The deadline, if the strategy has one (an optimistic descent's pessimistic pass waits
    /// for its shared holds until it).
    fn deadline(self) -> Option<Instant>;
}

/// Waits for each lock until it is granted (`descend`, `run`).
#[derive(Clone, Copy, Debug)]
pub struct Blocking;

impl Wait for Blocking {
    type Error = Infallible;
    #[inline(always)]
    fn deadline(self) -> Option<Instant> {
        None
    }
}

/// Waits for each lock until the instant (`descend_until`, `run_until`): a lock not taken
/// by then ends the descent with [`Exit::TimedOut`].
#[derive(Clone, Copy, Debug)]
pub struct Deadline(pub Instant);

impl Wait for Deadline {
    type Error = Exit;
    #[inline(always)]
    fn deadline(self) -> Option<Instant> {
        Some(self.0)
    }
}

/// Whether the telemetry follows the hold of a level (see `telemetry/hooks.rs`, the
/// `_unheld` helpers): [`Kept`] for every level a descent releases itself, [`Unheld`] for
/// the leaf a `descend*` hands to its caller.
pub trait Hold: Copy {
    /// The hold is followed.
    const HELD: bool;
    /// What a body returns for a leaf taken so: the guard and its record ([`Kept`], for a
    /// `run*`, which releases the leaf where the telemetry sees it), or the guard alone.
    type Out<G>;
    /// The leaf's guard and its record as [`Hold::Out`].
    fn out<G>(self, guard: G, held: Held) -> Self::Out<G>;
}

/// The hold of a level the descent releases (see [`Hold`]).
#[derive(Clone, Copy, Debug)]
pub struct Kept;

/// The leaf handed to the caller: counted, its hold not followed (see [`Hold`]).
#[derive(Clone, Copy, Debug)]
pub struct Unheld;

impl Hold for Kept {
    const HELD: bool = true;
    type Out<G> = (G, Held);
    #[inline(always)]
    fn out<G>(self, guard: G, held: Held) -> (G, Held) {
        (guard, held)
    }
}

impl Hold for Unheld {
    const HELD: bool = false;
    type Out<G> = G;
    #[inline(always)]
    fn out<G>(self, guard: G, _empty: Held) -> G {
        guard
    }
}

/// A blocking strategy's exclusive step: the guard derefs mutably to the level's data.
pub trait WaitX<L: ?Sized>: Wait {
    /// The level's data.
    type Target: ?Sized;
    /// The lock's owned guard.
    type Guard: DerefMut<Target = Self::Target>;
    /// Takes `lock` (level `index`, named `level` for the telemetry).
    ///
    /// # Errors
    ///
    /// [`Exit::TimedOut`] at `index` when a deadline passes first.
    fn take<R: Rec, H: Hold>(
        self,
        rec: R,
        hold: H,
        lock: &Arc<L>,
        index: usize,
        level: &'static Level,
    ) -> Result<(Self::Guard, Held), Self::Error>;
}

/// A blocking strategy's shared step.
pub trait WaitS<L: ?Sized>: Wait {
    /// The level's data.
    type Target: ?Sized;
    /// The lock's owned guard.
    type Guard: Deref<Target = Self::Target>;
    /// Takes `lock` shared (see [`WaitX::take`]).
    ///
    /// # Errors
    ///
    /// [`Exit::TimedOut`] at `index` when a deadline passes first.
    fn take<R: Rec, H: Hold>(
        self,
        rec: R,
        hold: H,
        lock: &Arc<L>,
        index: usize,
        level: &'static Level,
    ) -> Result<(Self::Guard, Held), Self::Error>;
}

/// A blocking strategy's upgradable step: the guard is an [`Upgradable`].
pub trait WaitU<L: ?Sized>: Wait {
    /// The level's data.
    type Target: ?Sized;
    /// [`Upgradable<L>`].
    type Guard: Deref<Target = Self::Target>;
    /// Takes `lock` as the upgradable reader (see [`WaitX::take`]).
    ///
    /// # Errors
    ///
    /// [`Exit::TimedOut`] at `index` when a deadline passes first.
    fn take<R: Rec, H: Hold>(
        self,
        rec: R,
        hold: H,
        lock: &Arc<L>,
        index: usize,
        level: &'static Level,
    ) -> Result<(Self::Guard, Held), Self::Error>;
}

/// One `impl` of a step trait for [`Blocking`] (`$lock` trait, `$held`/`$unheld` helpers,
/// which never fail) or [`Deadline`] (`$timed` trait, the `_until` helpers).
macro_rules! strategies {
    ($step:ident: $lock:ident, $timed:ident, $guard:ty;
     $held:ident, $unheld:ident, $held_until:ident, $unheld_until:ident) => {
        impl<L: ?Sized + $lock> $step<L> for Blocking {
            type Target = L::Target;
            type Guard = $guard;
            #[inline(always)]
            #[cfg_attr(feature = "telemetry", track_caller)]
            fn take<R: Rec, H: Hold>(
                self,
                rec: R,
                _: H,
                lock: &Arc<L>,
                _: usize,
                level: &'static Level,
            ) -> Result<(Self::Guard, Held), Infallible> {
                Ok(if H::HELD {
                    hooks::$held(rec, lock, level)
                } else {
                    hooks::$unheld(rec, lock, level)
                })
            }
        }

        impl<L: ?Sized + $timed> $step<L> for Deadline {
            type Target = L::Target;
            type Guard = $guard;
            #[inline(always)]
            #[cfg_attr(feature = "telemetry", track_caller)]
            fn take<R: Rec, H: Hold>(
                self,
                rec: R,
                _: H,
                lock: &Arc<L>,
                index: usize,
                level: &'static Level,
            ) -> Result<(Self::Guard, Held), Exit> {
                if H::HELD {
                    hooks::$held_until(rec, lock, self.0, index, level)
                } else {
                    hooks::$unheld_until(rec, lock, self.0, index, level)
                }
            }
        }
    };
}

strategies!(WaitX: ExclusiveLock, TimedExclusiveLock, L::Guard;
    exclusive, exclusive_unheld, exclusive_until, exclusive_until_unheld);
strategies!(WaitS: SharedLock, TimedSharedLock, L::Guard;
    shared, shared_unheld, shared_until, shared_until_unheld);
strategies!(WaitU: UpgradableLock, TimedUpgradableLock, Upgradable<L>;
    upgradable, upgradable_unheld, upgradable_until, upgradable_until_unheld);

/// What a generated blocking body takes each level with: the strategy, whether the call
/// records ([`Rec`]) and the levels' names for the telemetry (the locker's `__CL_LEVELS`),
/// bound once at the top of the body so that each step is one short call.
#[derive(Clone, Copy)]
pub struct Steps<W, R>(pub W, pub R, pub &'static [Level]);

impl<W: Wait, R: Rec> Steps<W, R> {
    /// Takes `lock`, level `index`, exclusively.
    ///
    /// # Errors
    ///
    /// [`Exit::TimedOut`] at `index` when a deadline passes first.
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn x<L: ?Sized, H: Hold>(
        self,
        hold: H,
        lock: &Arc<L>,
        index: usize,
    ) -> Result<(<W as WaitX<L>>::Guard, Held), W::Error>
    where
        W: WaitX<L>,
    {
        self.0.take(self.1, hold, lock, index, &self.2[index])
    }

    /// Takes `lock`, level `index`, shared.
    ///
    /// # Errors
    ///
    /// [`Exit::TimedOut`] at `index` when a deadline passes first.
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn s<L: ?Sized, H: Hold>(
        self,
        hold: H,
        lock: &Arc<L>,
        index: usize,
    ) -> Result<(<W as WaitS<L>>::Guard, Held), W::Error>
    where
        W: WaitS<L>,
    {
        self.0.take(self.1, hold, lock, index, &self.2[index])
    }

    /// Takes `lock`, level `index`, as the upgradable reader.
    ///
    /// # Errors
    ///
    /// [`Exit::TimedOut`] at `index` when a deadline passes first.
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn u<L: ?Sized, H: Hold>(
        self,
        hold: H,
        lock: &Arc<L>,
        index: usize,
    ) -> Result<(<W as WaitU<L>>::Guard, Held), W::Error>
    where
        W: WaitU<L>,
    {
        self.0.take(self.1, hold, lock, index, &self.2[index])
    }

    /// [`Steps::x`] of the level declared at `declared` (its name for the telemetry), at
    /// level `index` of the descent (a mixed chain counts the repetitions of its repeated
    /// level).
    ///
    /// # Errors
    ///
    /// [`Exit::TimedOut`] at `index` when a deadline passes first.
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn x_at<L: ?Sized, H: Hold>(
        self,
        hold: H,
        lock: &Arc<L>,
        index: usize,
        declared: usize,
    ) -> Result<(<W as WaitX<L>>::Guard, Held), W::Error>
    where
        W: WaitX<L>,
    {
        self.0.take(self.1, hold, lock, index, &self.2[declared])
    }

    /// [`Steps::s`] at level `index`, declared at `declared` (see [`Steps::x_at`]).
    ///
    /// # Errors
    ///
    /// [`Exit::TimedOut`] at `index` when a deadline passes first.
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn s_at<L: ?Sized, H: Hold>(
        self,
        hold: H,
        lock: &Arc<L>,
        index: usize,
        declared: usize,
    ) -> Result<(<W as WaitS<L>>::Guard, Held), W::Error>
    where
        W: WaitS<L>,
    {
        self.0.take(self.1, hold, lock, index, &self.2[declared])
    }

    /// [`Steps::u`] at level `index`, declared at `declared` (see [`Steps::x_at`]).
    ///
    /// # Errors
    ///
    /// [`Exit::TimedOut`] at `index` when a deadline passes first.
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn u_at<L: ?Sized, H: Hold>(
        self,
        hold: H,
        lock: &Arc<L>,
        index: usize,
        declared: usize,
    ) -> Result<(<W as WaitU<L>>::Guard, Held), W::Error>
    where
        W: WaitU<L>,
    {
        self.0.take(self.1, hold, lock, index, &self.2[declared])
    }
}

/// What a generated async body takes each level with: whether the call records, the
/// deadline if there is one (then Tokio's timer), the levels' names.
#[derive(Clone, Copy)]
pub struct AsyncSteps<R>(pub R, pub Option<Instant>, pub &'static [Level]);

impl<R: Rec> AsyncSteps<R> {
    /// Takes `lock`, level `index`, exclusively: until granted, or until the deadline.
    ///
    /// # Errors
    ///
    /// [`Exit::TimedOut`] at `index` when the deadline passes first.
    #[inline]
    pub async fn x<H: Hold, L: ?Sized + AsyncExclusiveLock>(
        self,
        _: H,
        lock: Arc<L>,
        index: usize,
    ) -> Result<(L::Guard, Held), Exit> {
        let (rec, level) = (self.0, &self.2[index]);
        match (self.1, H::HELD) {
            (None, true) => Ok(hooks::exclusive_async(rec, lock, level).await),
            (None, false) => Ok(hooks::exclusive_async_unheld(rec, lock, level).await),
            (Some(at), true) => hooks::exclusive_until_async(rec, lock, at, index, level).await,
            (Some(at), false) => {
                hooks::exclusive_until_async_unheld(rec, lock, at, index, level).await
            }
        }
    }

    /// Takes `lock`, level `index`, shared (see [`AsyncSteps::x`]).
    ///
    /// # Errors
    ///
    /// [`Exit::TimedOut`] at `index` when the deadline passes first.
    #[inline]
    pub async fn s<H: Hold, L: ?Sized + AsyncSharedLock>(
        self,
        _: H,
        lock: Arc<L>,
        index: usize,
    ) -> Result<(L::Guard, Held), Exit> {
        let (rec, level) = (self.0, &self.2[index]);
        match (self.1, H::HELD) {
            (None, true) => Ok(hooks::shared_async(rec, lock, level).await),
            (None, false) => Ok(hooks::shared_async_unheld(rec, lock, level).await),
            (Some(at), true) => hooks::shared_until_async(rec, lock, at, index, level).await,
            (Some(at), false) => {
                hooks::shared_until_async_unheld(rec, lock, at, index, level).await
            }
        }
    }
}

/// The leaf's lock at the end of a key path, the path's last parent released: what
/// `lock_leaves` finds for each path before it locks the leaves.
///
/// # Errors
///
/// The path's [`Exit`].
#[inline(always)]
pub fn parent_released<G, L: ?Sized>(
    path: Result<(G, Held, Arc<L>), Exit>,
) -> Result<Arc<L>, Exit> {
    let (parent, held, leaf) = path?;
    hooks::release(parent, held);
    Ok(leaf)
}
