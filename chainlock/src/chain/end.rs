//! How a generated body ends at its leaf ([`End`]): the leaf handed out, given to a
//! `run*`'s last closure, kept, or only found for `lock_leaves` ([`FoundLeaf`]); what the
//! leaf's step of `wait.rs` (`Steps::x_end`, ...) and the async body end with; and whether
//! the telemetry follows a level's hold ([`Hold`]: [`Kept`], [`Unheld`]), which every step
//! of `wait.rs` takes its level with. `wait.rs` imports this file, never the other way.
//! Reached by generated code through `__private`.
#![expect(
    clippy::inline_always,
    reason = "the generated code's steps must inline into the caller to cost nothing"
)]

use super::{Exit, Upgradable, UpgradableLock};
use crate::telemetry::hooks::{Held, Level};
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

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

/// How a generated body ends at its leaf, a guard `G` of the lock `L` seen in mode `M`
/// ([`ModeX`], [`ModeS`], [`ModeU`]): taken and handed out ([`Unheld`], a `descend*`),
/// taken and kept with its record ([`Kept`]), taken and given to the `run*`'s last closure,
/// which is its own end (it runs on the leaf, which is released after it, the record first,
/// where the telemetry sees it, whether the closure returns or panics), or, blocking only,
/// only found ([`Found`], `lock_leaves`, which locks the leaves of all its paths together
/// once it found them). One body serves them all, through [`Steps::x_end`](super::wait::Steps::x_end) (and `s_end`,
/// `u_end`) at a blocking body's leaf.
pub trait End<G, L: ?Sized, M> {
    /// The hold the leaf is taken with when it is taken.
    type Hold: Hold;
    /// Whether the leaf is taken (else only its lock is found).
    const TAKES: bool;
    /// What the body returns.
    type Out;
    /// The hold to take the leaf with.
    fn hold(&self) -> Self::Hold;
    /// The taken leaf as [`End::Out`] (`TAKES`), as the body's answer (`Ok`, built before
    /// a `run*`'s leaf is released, as a person writes it: then the answer's store stays on
    /// the straight path, callgrind).
    ///
    /// # Errors
    ///
    /// None: `Ok` always.
    fn taken<E>(self, guard: G, held: Held) -> Result<Self::Out, E>;
    /// The found leaf's lock, at `level` (named `name` for the telemetry), checked by `open`
    /// once taken, as [`End::Out`] (not `TAKES`).
    fn found(lock: Arc<L>, level: usize, name: &'static Level, open: Open<G>) -> Self::Out;
}

/// The check that a leaf just taken at a level is open (its node not closed), written where
/// the leaf's type is known (`__private::ClosedProbe`): `Err` with [`Exit::Absent`]
/// (closed) at that level.
pub type Open<G> = fn(&G, usize) -> Result<(), Exit>;

/// A leaf only found (see [`Found`]): its lock, its level, and the check that it is open
/// once `lock_leaves` took it.
pub struct FoundLeaf<G, L: ?Sized> {
    /// The leaf's lock.
    pub lock: Arc<L>,
    /// The leaf's level.
    pub level: usize,
    /// The leaf's level as the telemetry names it (the locker's `__CL_LEVELS[level]`).
    pub name: &'static Level,
    /// Whether the taken leaf is open.
    pub open: Open<G>,
}

/// A leaf seen exclusively (`&mut` its data; see [`End`]).
#[derive(Clone, Copy, Debug)]
pub struct ModeX;

/// A leaf seen shared (`&` its data; see [`End`]).
#[derive(Clone, Copy, Debug)]
pub struct ModeS;

/// A leaf seen as the upgradable reader (`&mut Upgradable<L>`; see [`End`]).
#[derive(Clone, Copy, Debug)]
pub struct ModeU;

/// The leaf's lock only, the leaf not taken (see [`End`]).
#[derive(Clone, Copy, Debug)]
pub struct Found;

impl<G, L: ?Sized, M> End<G, L, M> for Kept {
    type Hold = Kept;
    const TAKES: bool = true;
    type Out = (G, Held);
    #[inline(always)]
    fn hold(&self) -> Kept {
        Kept
    }
    #[inline(always)]
    fn taken<E>(self, guard: G, held: Held) -> Result<(G, Held), E> {
        Ok((guard, held))
    }
    #[inline(always)]
    fn found(_: Arc<L>, _: usize, _: &'static Level, _: Open<G>) -> (G, Held) {
        unreachable!("a kept leaf is taken")
    }
}

impl<G, L: ?Sized, M> End<G, L, M> for Unheld {
    type Hold = Unheld;
    const TAKES: bool = true;
    type Out = G;
    #[inline(always)]
    fn hold(&self) -> Unheld {
        Unheld
    }
    #[inline(always)]
    fn taken<E>(self, guard: G, _empty: Held) -> Result<G, E> {
        Ok(guard)
    }
    #[inline(always)]
    fn found(_: Arc<L>, _: usize, _: &'static Level, _: Open<G>) -> G {
        unreachable!("a handed-out leaf is taken")
    }
}

impl<G, L: ?Sized, M> End<G, L, M> for Found {
    type Hold = Kept;
    const TAKES: bool = false;
    type Out = FoundLeaf<G, L>;
    #[inline(always)]
    fn hold(&self) -> Kept {
        Kept
    }
    #[inline(always)]
    fn taken<E>(self, _: G, _: Held) -> Result<FoundLeaf<G, L>, E> {
        unreachable!("a found leaf is not taken")
    }
    #[inline(always)]
    fn found(lock: Arc<L>, level: usize, name: &'static Level, open: Open<G>) -> FoundLeaf<G, L> {
        FoundLeaf {
            lock,
            level,
            name,
            open,
        }
    }
}

/// A `run*`'s last closure as the end of its body (see [`End`]): `$mode`'s leaf, whose
/// guard `$guard` (bounded by `$bound`) the closure sees as `$arg`, borrowed by `$borrow`.
macro_rules! leaf_closures {
    ($($mode:ident, $guard:ty, [$($bound:tt)*], $arg:ty, |$g:ident| $borrow:expr;)*) => {$(
        impl<F, L: ?Sized, R, $($bound)*> End<$guard, L, $mode> for F
        where
            F: FnOnce($arg) -> R,
        {
            type Hold = Kept;
            const TAKES: bool = true;
            type Out = R;
            #[inline(always)]
            fn hold(&self) -> Kept {
                Kept
            }
            #[inline(always)]
            fn taken<E>(self, guard: $guard, held: Held) -> Result<R, E> {
                // The record binds after the guard, so it drops first: the hold ends just
                // before the guard unlocks, whether the closure returns or panics.
                #[allow(unused_mut)]
                let (mut $g, _held) = (guard, held);
                Ok(self($borrow))
            }
            #[inline(always)]
            fn found(_: Arc<L>, _: usize, _: &'static Level, _: Open<$guard>) -> R {
                unreachable!("a run's leaf is taken")
            }
        }
    )*};
}

leaf_closures! {
    ModeX, G, [G: DerefMut], &mut G::Target, |guard| &mut *guard;
    ModeS, G, [G: Deref], &G::Target, |guard| &*guard;
}

impl<F, L, R> End<Upgradable<L>, L, ModeU> for F
where
    F: FnOnce(&mut Upgradable<L>) -> R,
    L: ?Sized + UpgradableLock,
{
    type Hold = Kept;
    const TAKES: bool = true;
    type Out = R;
    #[inline(always)]
    fn hold(&self) -> Kept {
        Kept
    }
    #[inline(always)]
    fn taken<E>(self, guard: Upgradable<L>, held: Held) -> Result<R, E> {
        // As `leaf_closures!`: the record drops first.
        let (mut guard, _held) = (guard, held);
        Ok(self(&mut guard))
    }
    #[inline(always)]
    fn found(_: Arc<L>, _: usize, _: &'static Level, _: Open<Upgradable<L>>) -> R {
        unreachable!("a run's leaf is taken")
    }
}
