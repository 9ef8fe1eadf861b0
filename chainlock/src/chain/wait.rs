//! How a generated descent waits for each level's lock: one body per chain serves the
//! blocking and the deadline flavors (`descend` and `descend_until`, `run` and `run_until`),
//! given a strategy, [`Blocking`] or a deadline (an [`Instant`]), as the walks' loops are given one
//! (`walk/steps.rs`), through [`Steps`]. The async body takes the deadline as an `Option`
//! instead (its lock traits are the same with and without one): [`AsyncSteps`].
//!
//! Every step goes through the per-level helpers of `acquire.rs` (the lock's own call, or
//! the telemetry's shapes); a strategy only picks which. Reached by generated code through `__private`.
#![expect(
    clippy::inline_always,
    reason = "the generated code's steps must inline into the caller to cost nothing"
)]

use super::acquire;
use super::end::{End, Hold, ModeS, ModeU, ModeX, Open};
use super::{
    AsyncExclusiveLock, AsyncSharedLock, ExclusiveLock, Exit, SharedLock, TimedExclusiveLock,
    TimedSharedLock, TimedUpgradableLock, Upgradable, UpgradableLock,
};
use crate::telemetry::hooks::{self, Held, Level, Rec};
use std::convert::Infallible;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::Instant;

/// A way of waiting for each lock: [`Blocking`], or until an [`Instant`].
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

/// A deadline waits for each lock until the instant (`descend_until`, `run_until`, given
/// their `deadline` as it is): a lock not taken by then ends the descent with
/// [`Exit::TimedOut`].
impl Wait for Instant {
    type Error = Exit;
    #[inline(always)]
    fn deadline(self) -> Option<Instant> {
        Some(self)
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
    /// Takes `lock` only if that needs no wait (the first locked level under an optimistic
    /// parent, which waits out of its pin: `optimistic/carry.rs`).
    fn try_take<R: Rec, H: Hold>(
        self,
        rec: R,
        hold: H,
        lock: &Arc<L>,
        level: &'static Level,
    ) -> Option<(Self::Guard, Held)>;
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
    /// Takes `lock` only if that needs no wait (the first locked level under an optimistic
    /// parent, which waits out of its pin: `optimistic/carry.rs`).
    fn try_take<R: Rec, H: Hold>(
        self,
        rec: R,
        hold: H,
        lock: &Arc<L>,
        level: &'static Level,
    ) -> Option<(Self::Guard, Held)>;
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
    /// Takes `lock` only if that needs no wait (the first locked level under an optimistic
    /// parent, which waits out of its pin: `optimistic/carry.rs`).
    fn try_take<R: Rec, H: Hold>(
        self,
        rec: R,
        hold: H,
        lock: &Arc<L>,
        level: &'static Level,
    ) -> Option<(Self::Guard, Held)>;
}

/// One `impl` of a step trait for [`Blocking`] (`$lock` trait, `$held`/`$unheld` helpers,
/// which never fail) or a deadline, [`Instant`] (`$timed` trait, the `_until` helpers).
macro_rules! strategies {
    ($step:ident: $lock:ident, $timed:ident, $guard:ty;
     $held:ident, $unheld:ident, $held_until:ident, $unheld_until:ident;
     $held_try:ident, $unheld_try:ident) => {
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
                    acquire::$held(rec, lock, level)
                } else {
                    acquire::$unheld(rec, lock, level)
                })
            }
            #[inline(always)]
            #[cfg_attr(feature = "telemetry", track_caller)]
            fn try_take<R: Rec, H: Hold>(
                self,
                rec: R,
                _: H,
                lock: &Arc<L>,
                level: &'static Level,
            ) -> Option<(Self::Guard, Held)> {
                if H::HELD {
                    acquire::$held_try(rec, lock, level)
                } else {
                    acquire::$unheld_try(rec, lock, level)
                }
            }
        }

        impl<L: ?Sized + $timed> $step<L> for Instant {
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
                    acquire::$held_until(rec, lock, self, index, level)
                } else {
                    acquire::$unheld_until(rec, lock, self, index, level)
                }
            }
            #[inline(always)]
            #[cfg_attr(feature = "telemetry", track_caller)]
            fn try_take<R: Rec, H: Hold>(
                self,
                rec: R,
                _: H,
                lock: &Arc<L>,
                level: &'static Level,
            ) -> Option<(Self::Guard, Held)> {
                if H::HELD {
                    acquire::$held_try(rec, lock, level)
                } else {
                    acquire::$unheld_try(rec, lock, level)
                }
            }
        }
    };
}

strategies!(WaitX: ExclusiveLock, TimedExclusiveLock, L::Guard;
    exclusive, exclusive_unheld, exclusive_until, exclusive_until_unheld;
    exclusive_try, exclusive_try_unheld);
strategies!(WaitS: SharedLock, TimedSharedLock, L::Guard;
    shared, shared_unheld, shared_until, shared_until_unheld;
    shared_try, shared_try_unheld);
strategies!(WaitU: UpgradableLock, TimedUpgradableLock, Upgradable<L>;
    upgradable, upgradable_unheld, upgradable_until, upgradable_until_unheld;
    upgradable_try, upgradable_try_unheld);

/// What a generated blocking body takes each level with: the strategy, whether the call
/// records ([`Rec`]) and the levels' names for the telemetry (the locker's `__CL_LEVELS`),
/// bound once at the top of the body so that each step is one short call.
#[derive(Clone, Copy)]
pub struct Steps<W, R>(pub W, pub R, pub &'static [Level]);

impl<W: Wait, R: Rec> Steps<W, R> {
    /// Releases a level the descent has passed (see [`hooks::release_as`]).
    #[inline(always)]
    pub fn release<G>(self, guard: G, held: Held) {
        hooks::release_as(self.1, guard, held);
    }

    /// Takes `lock`, level `index`, exclusively.
    ///
    /// # Errors
    ///
    /// [`Exit::TimedOut`] at `index` when a deadline passes first.
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    #[expect(
        clippy::needless_pass_by_value,
        reason = "an owned lock is dropped once the level is taken (see `Handle`)"
    )]
    pub fn x<L: ?Sized, H: Hold>(
        self,
        hold: H,
        lock: impl Handle<L>,
        index: usize,
    ) -> Result<(<W as WaitX<L>>::Guard, Held), W::Error>
    where
        W: WaitX<L>,
    {
        self.0
            .take(self.1, hold, lock.lock(), index, &self.2[index])
    }

    /// Takes `lock`, level `index`, shared.
    ///
    /// # Errors
    ///
    /// [`Exit::TimedOut`] at `index` when a deadline passes first.
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    #[expect(
        clippy::needless_pass_by_value,
        reason = "an owned lock is dropped once the level is taken (see `Handle`)"
    )]
    pub fn s<L: ?Sized, H: Hold>(
        self,
        hold: H,
        lock: impl Handle<L>,
        index: usize,
    ) -> Result<(<W as WaitS<L>>::Guard, Held), W::Error>
    where
        W: WaitS<L>,
    {
        self.0
            .take(self.1, hold, lock.lock(), index, &self.2[index])
    }

    /// Takes `lock`, level `index`, as the upgradable reader.
    ///
    /// # Errors
    ///
    /// [`Exit::TimedOut`] at `index` when a deadline passes first.
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    #[expect(
        clippy::needless_pass_by_value,
        reason = "an owned lock is dropped once the level is taken (see `Handle`)"
    )]
    pub fn u<L: ?Sized, H: Hold>(
        self,
        hold: H,
        lock: impl Handle<L>,
        index: usize,
    ) -> Result<(<W as WaitU<L>>::Guard, Held), W::Error>
    where
        W: WaitU<L>,
    {
        self.0
            .take(self.1, hold, lock.lock(), index, &self.2[index])
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
    /// Releases a level the descent has passed (see [`hooks::release_as`]).
    #[inline(always)]
    pub fn release<G>(&self, guard: G, held: Held) {
        hooks::release_as(self.0, guard, held);
    }

    /// Takes `lock`, level `index`, exclusively: until granted, or until the deadline.
    ///
    /// # Errors
    ///
    /// [`Exit::TimedOut`] at `index` when the deadline passes first.
    #[inline]
    pub async fn x<H: Hold, L: ?Sized + AsyncExclusiveLock>(
        self,
        _: H,
        lock: impl NextLock<L>,
        index: usize,
    ) -> Result<(L::Guard, Held), Exit> {
        let (rec, level, lock) = (self.0, &self.2[index], lock.found(index)?.owned());
        match (self.1, H::HELD) {
            (None, true) => Ok(acquire::exclusive_async(rec, lock, level).await),
            (None, false) => Ok(acquire::exclusive_async_unheld(rec, lock, level).await),
            (Some(at), true) => acquire::exclusive_until_async(rec, lock, at, index, level).await,
            (Some(at), false) => {
                acquire::exclusive_until_async_unheld(rec, lock, at, index, level).await
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
        lock: impl NextLock<L>,
        index: usize,
    ) -> Result<(L::Guard, Held), Exit> {
        let (rec, level, lock) = (self.0, &self.2[index], lock.found(index)?.owned());
        match (self.1, H::HELD) {
            (None, true) => Ok(acquire::shared_async(rec, lock, level).await),
            (None, false) => Ok(acquire::shared_async_unheld(rec, lock, level).await),
            (Some(at), true) => acquire::shared_until_async(rec, lock, at, index, level).await,
            (Some(at), false) => {
                acquire::shared_until_async_unheld(rec, lock, at, index, level).await
            }
        }
    }
}

/// The leaf's parent as the leaf's step lets it go once the leaf is taken (or found): a
/// locked level's guard and record, released; an optimistic level (`optimistic.rs`'s
/// `Seen`), validated; `()` for a chain of one level, whose leaf is its root.
pub trait Parent<E> {
    /// Lets the parent go.
    ///
    /// # Errors
    ///
    /// An optimistic parent's restart.
    fn let_go<R: Rec>(self, rec: R) -> Result<(), E>;

    /// Whether the child's step may answer with its own exit (a deadline passed): an
    /// optimistic parent must still lead to the child it was waited for, else the pass
    /// restarts (the child may have been unlinked and replaced meanwhile); a held parent
    /// always does.
    ///
    /// # Errors
    ///
    /// An optimistic parent's restart.
    #[inline(always)]
    fn still_leads(&self) -> Result<(), E> {
        Ok(())
    }
}

impl<G, E> Parent<E> for (G, Held) {
    #[inline(always)]
    fn let_go<R: Rec>(self, rec: R) -> Result<(), E> {
        hooks::release_as(rec, self.0, self.1);
        Ok(())
    }
}

impl<E> Parent<E> for () {
    #[inline(always)]
    fn let_go<R: Rec>(self, _: R) -> Result<(), E> {
        Ok(())
    }
}

/// A level's lock as its step is given it: owned (the `Arc` a held parent's stage found,
/// dropped as soon as the level is taken, so that a long chain keeps no `Arc` per level
/// alive to its end: measured, `docs/benchmarks.md`) or lent (the root; a lock found under an
/// optimistic parent, lent by the epoch guard).
pub trait Handle<L: ?Sized> {
    /// The lock.
    fn lock(&self) -> &Arc<L>;
    /// The lock, owned (cloned if lent).
    fn owned(self) -> Arc<L>;
}

impl<L: ?Sized> Handle<L> for Arc<L> {
    #[inline(always)]
    fn lock(&self) -> &Arc<L> {
        self
    }
    #[inline(always)]
    fn owned(self) -> Arc<L> {
        self
    }
}

impl<L: ?Sized> Handle<L> for &Arc<L> {
    #[inline(always)]
    fn lock(&self) -> &Arc<L> {
        self
    }
    #[inline(always)]
    fn owned(self) -> Arc<L> {
        Arc::clone(self)
    }
}

/// A level's lock as a step is given it, perhaps not found: a [`Handle`], or the answer of a
/// held parent's stage (`None`: the level is missing, [`Exit::Absent`]), so that a body hands
/// a stage's answer to the step that takes the level.
pub trait NextLock<L: ?Sized> {
    /// The lock found.
    type Handle: Handle<L>;
    /// The lock, or [`Exit::Absent`] (missing) at `level`.
    ///
    /// # Errors
    ///
    /// [`Exit::Absent`] when the stage found nothing.
    fn found(self, level: usize) -> Result<Self::Handle, Exit>;
}

impl<L: ?Sized> NextLock<L> for Arc<L> {
    type Handle = Self;
    #[inline(always)]
    fn found(self, _: usize) -> Result<Self, Exit> {
        Ok(self)
    }
}

impl<L: ?Sized> NextLock<L> for &Arc<L> {
    type Handle = Self;
    #[inline(always)]
    fn found(self, _: usize) -> Result<Self, Exit> {
        Ok(self)
    }
}

impl<L: ?Sized> NextLock<L> for Option<Arc<L>> {
    type Handle = Arc<L>;
    #[inline(always)]
    fn found(self, level: usize) -> Result<Arc<L>, Exit> {
        super::exit::found(self, level)
    }
}

/// `Steps::x_end`, `s_end`, `u_end`: the leaf's step of a blocking body, as `end` says.
macro_rules! leaf_steps {
    ($($name:ident, $leaf:ident: $step:ident, $wait:ident, $mode:ident;)*) => {
        impl<W: Wait, R: Rec> Steps<W, R> {$(
            /// The leaf's step (level `index`, its `lock` as the parent's stage found it)
            /// as `end` says (see [`End`]): the leaf taken in this step's mode, its `parent`
            /// let go, the leaf checked `open`; or, only found, the parent let go and the
            /// leaf's lock returned with its level and check ([`FoundLeaf`](super::end::FoundLeaf)).
            ///
            /// # Errors
            ///
            /// The step's [`Exit`] (a deadline passed, the leaf closed), or the parent's
            /// restart.
            #[inline(always)]
            #[cfg_attr(feature = "telemetry", track_caller)]
            pub fn $name<L: ?Sized, H, E: From<W::Error> + From<Exit>>(
                self,
                end: H,
                lock: impl NextLock<L>,
                index: usize,
                parent: impl Parent<E>,
                open: Open<<W as $wait<L>>::Guard>,
            ) -> Result<H::Out, E>
            where
                W: $wait<L>,
                H: End<<W as $wait<L>>::Guard, L, $mode>,
            {
                // The leaf's end once its step returned: the step's locals (the parent, the
                // lock's `Arc`) are gone by then, so that a `run*`'s closure, run here, finds
                // their stack slots free (callgrind: one register saved less).
                let lock = match lock.found(index) {
                    Ok(lock) => lock,
                    Err(exit) => {
                        parent.let_go(self.1)?;
                        return Err(exit.into());
                    }
                };
                match self.$leaf(end.hold(), H::TAKES, lock, index, parent, open)? {
                    Leaf::Taken(guard, held) => end.taken(guard, held),
                    Leaf::Found(lock) => Ok(H::found(lock, index, &self.2[index], open)),
                }
            }

            #[inline(always)]
            #[cfg_attr(feature = "telemetry", track_caller)]
            fn $leaf<L: ?Sized, K: Hold, E: From<W::Error> + From<Exit>>(
                self,
                hold: K,
                takes: bool,
                lock: impl Handle<L>,
                index: usize,
                parent: impl Parent<E>,
                open: Open<<W as $wait<L>>::Guard>,
            ) -> Result<Leaf<<W as $wait<L>>::Guard, L>, E>
            where
                W: $wait<L>,
            {
                if !takes {
                    parent.let_go(self.1)?;
                    return Ok(Leaf::Found(lock.owned()));
                }
                let (guard, held) = match self.$step(hold, lock.lock(), index) {
                    Ok(taken) => taken,
                    Err(exit) => {
                        parent.still_leads()?;
                        return Err(exit.into());
                    }
                };
                parent.let_go(self.1)?;
                open(&guard, index)?;
                Ok(Leaf::Taken(guard, held))
            }
        )*}
    };
}

/// The leaf as a leaf's step took it, or only found it (see [`End`]).
enum Leaf<G, L: ?Sized> {
    /// Taken: its guard and record.
    Taken(G, Held),
    /// Found: its lock.
    Found(Arc<L>),
}

leaf_steps! {
    x_end, x_leaf: x, WaitX, ModeX;
    s_end, s_leaf: s, WaitS, ModeS;
    u_end, u_leaf: u, WaitU, ModeU;
}
