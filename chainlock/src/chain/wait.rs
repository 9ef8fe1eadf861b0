//! How a generated descent waits for each level's lock: one body per chain serves the
//! blocking and the deadline flavors (`descend` and `descend_until`, `run` and `run_until`),
//! given a strategy, [`Blocking`] or [`Deadline`], as the walks' loops are given one
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

/// Whether the telemetry follows the hold of a level (see `acquire.rs`, the
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
                    acquire::$held(rec, lock, level)
                } else {
                    acquire::$unheld(rec, lock, level)
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
                    acquire::$held_until(rec, lock, self.0, index, level)
                } else {
                    acquire::$unheld_until(rec, lock, self.0, index, level)
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
        lock: Arc<L>,
        index: usize,
    ) -> Result<(L::Guard, Held), Exit> {
        let (rec, level) = (self.0, &self.2[index]);
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
        lock: Arc<L>,
        index: usize,
    ) -> Result<(L::Guard, Held), Exit> {
        let (rec, level) = (self.0, &self.2[index]);
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

/// How a generated blocking body ends at its leaf: taken and handed out ([`Unheld`], a
/// `descend*`), taken and kept with its record ([`Kept`], a `run*`, which releases the leaf
/// where the telemetry sees it), or only found ([`Found`], `lock_leaves`, which locks the
/// leaves of all its paths together once it found them). One body serves the three, through
/// [`Steps::x_end`] (and `s_end`, `u_end`) at the leaf.
pub trait End: Copy {
    /// The hold the leaf is taken with when it is taken.
    type Hold: Hold;
    /// Whether the leaf is taken (else only its lock is found).
    const TAKES: bool;
    /// What the body returns for a leaf whose guard is `G` and lock `L`.
    type Out<G, L: ?Sized>;
    /// The hold to take the leaf with.
    fn hold(self) -> Self::Hold;
    /// The taken leaf as [`End::Out`] (`TAKES`).
    fn taken<G, L: ?Sized>(guard: G, held: Held) -> Self::Out<G, L>;
    /// The found leaf's lock as [`End::Out`] (not `TAKES`).
    fn found<G, L: ?Sized>(lock: Arc<L>) -> Self::Out<G, L>;
}

/// The leaf's lock only, the leaf not taken (see [`End`]).
#[derive(Clone, Copy, Debug)]
pub struct Found;

impl End for Kept {
    type Hold = Kept;
    const TAKES: bool = true;
    type Out<G, L: ?Sized> = (G, Held);
    #[inline(always)]
    fn hold(self) -> Kept {
        self
    }
    #[inline(always)]
    fn taken<G, L: ?Sized>(guard: G, held: Held) -> (G, Held) {
        (guard, held)
    }
    #[inline(always)]
    fn found<G, L: ?Sized>(_: Arc<L>) -> (G, Held) {
        unreachable!("a kept leaf is taken")
    }
}

impl End for Unheld {
    type Hold = Unheld;
    const TAKES: bool = true;
    type Out<G, L: ?Sized> = G;
    #[inline(always)]
    fn hold(self) -> Unheld {
        self
    }
    #[inline(always)]
    fn taken<G, L: ?Sized>(guard: G, _empty: Held) -> G {
        guard
    }
    #[inline(always)]
    fn found<G, L: ?Sized>(_: Arc<L>) -> G {
        unreachable!("a handed-out leaf is taken")
    }
}

impl End for Found {
    type Hold = Kept;
    const TAKES: bool = false;
    type Out<G, L: ?Sized> = Arc<L>;
    #[inline(always)]
    fn hold(self) -> Kept {
        Kept
    }
    #[inline(always)]
    fn taken<G, L: ?Sized>(_: G, _: Held) -> Arc<L> {
        unreachable!("a found leaf is not taken")
    }
    #[inline(always)]
    fn found<G, L: ?Sized>(lock: Arc<L>) -> Arc<L> {
        lock
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

/// `Steps::x_end`, `s_end`, `u_end`: the leaf's step of a blocking body, as `end` says.
macro_rules! leaf_steps {
    ($($name:ident: $step:ident, $wait:ident;)*) => {
        impl<W: Wait, R: Rec> Steps<W, R> {$(
            /// The leaf's step (level `index`) as `end` says (see [`End`]): the leaf taken
            /// in this step's mode, its `parent` let go, the leaf checked `open`; or, only
            /// found, the parent let go and the leaf's lock returned.
            ///
            /// # Errors
            ///
            /// The step's [`Exit`] (a deadline passed, the leaf closed), or the parent's
            /// restart.
            #[inline(always)]
            #[cfg_attr(feature = "telemetry", track_caller)]
            pub fn $name<L: ?Sized, H: End, E: From<W::Error> + From<Exit>>(
                self,
                end: H,
                lock: impl Handle<L>,
                index: usize,
                parent: impl Parent<E>,
                open: impl FnOnce(&<W as $wait<L>>::Guard) -> Result<(), Exit>,
            ) -> Result<H::Out<<W as $wait<L>>::Guard, L>, E>
            where
                W: $wait<L>,
            {
                if !H::TAKES {
                    parent.let_go(self.1)?;
                    return Ok(H::found(lock.owned()));
                }
                let (guard, held) = self.$step(end.hold(), lock.lock(), index)?;
                parent.let_go(self.1)?;
                open(&guard)?;
                Ok(H::taken(guard, held))
            }
        )*}
    };
}

leaf_steps! {
    x_end: x, WaitX;
    s_end: s, WaitS;
    u_end: u, WaitU;
}
