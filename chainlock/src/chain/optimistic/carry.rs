//! The first locked level's wait, out of the pin. An optimistic pass holds the thread pinned
//! (its references into the tree are the epoch guard's), and a pinned thread holds back the
//! reclamation of every epoch container in the process. So a pass never waits for its first
//! locked level: it tries it ([`Carrying`], the strategy the generated pass takes that level
//! with), and if it is held, the pass validates the parent and ends with [`Stop::Wait`]
//! after noting the lock in the call's [`Carry`]. The driver (`optimistic.rs`) unpins,
//! waits for the lock with the call's strategy ([`Waits::wait`]: until granted, or
//! until the deadline), pins again and runs the next pass, which finds the level it carries
//! if its path still leads there (the address compared), or lets it go and takes the level
//! its path now leads to. A deadline passed while waiting makes the next pass's contended
//! try end the call with [`Exit::TimedOut`] — only once its parent validates, so that the
//! time-out is for a child the path still leads to.
//!
//! The carried lock is held across a pass's optimistic levels, which never wait (they
//! restart), and released before the pessimistic pass, which waits for its shared holds:
//! a call never waits while it carries a lock it took out of order.
//!
//! The pessimistic pass itself takes its first locked level as every other mode does,
//! waiting pinned while it holds the optimistic levels shared (see the guide's known limit).
#![expect(
    clippy::inline_always,
    reason = "the generated code's steps must inline into the caller to cost nothing"
)]

use super::{Kind, Stop};
use crate::chain::Exit;
use crate::chain::end::{Hold, Kept, Unheld};
use crate::chain::end::{ModeS, ModeU, ModeX};
use crate::chain::wait::{Wait, WaitS, WaitU, WaitX};
use crate::telemetry::hooks::{Held, Level, Rec};
use std::cell::Cell;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::time::Instant;

/// How the first locked level is taken in its mode (the mode marker of
/// [`End`](crate::chain::end::End)): through [`WaitX`], [`WaitS`] or [`WaitU`].
pub trait TakeIn<W: Wait, L: ?Sized> {
    /// The level's owned guard.
    type Guard;
    /// Waits for `lock` with the strategy `wait` (see [`WaitX::take`]).
    ///
    /// # Errors
    ///
    /// The strategy's: a deadline passed.
    fn take<R: Rec, H: Hold>(
        wait: W,
        rec: R,
        hold: H,
        lock: &Arc<L>,
        index: usize,
        level: &'static Level,
    ) -> Result<(Self::Guard, Held), W::Error>;
}

macro_rules! take_in {
    ($($mode:ident: $wait:ident;)*) => {$(
        impl<W: $wait<L>, L: ?Sized> TakeIn<W, L> for $mode {
            type Guard = <W as $wait<L>>::Guard;
            #[inline]
            fn take<R: Rec, H: Hold>(
                wait: W,
                rec: R,
                hold: H,
                lock: &Arc<L>,
                index: usize,
                level: &'static Level,
            ) -> Result<(Self::Guard, Held), W::Error> {
                $wait::take(wait, rec, hold, lock, index, level)
            }
        }
    )*};
}

take_in! {
    ModeX: WaitX;
    ModeS: WaitS;
    ModeU: WaitU;
}

/// Where a call is with its first locked level between passes (see the module docs).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// Nothing carried: the pass tries the level.
    Clear,
    /// The pass found the level held: the driver waits for it.
    Wanted,
    /// The driver took it: the next pass uses it if its path leads there.
    Taken,
    /// The deadline passed while waiting: a contended try ends the call.
    Expired,
}

/// The lock a pass found held, for the driver to wait for.
struct Want<L: ?Sized> {
    lock: Arc<L>,
    index: usize,
    level: &'static Level,
    /// Whether its hold is followed ([`Kept`]) or not ([`Unheld`], a `descend*`'s leaf).
    held: bool,
}

/// The level the driver took, waiting for the next pass.
struct Taken<G> {
    // The record first, so that it drops before the guard unlocks (as a released level's).
    held: Held,
    guard: G,
    address: usize,
}

/// A call's first locked level carried between its passes (see the module docs): the lock
/// `L` taken in the mode `M` with the strategy `W`. A local of the generated body, lent to
/// its passes and to the driver.
pub struct Carry<L: ?Sized, W: Wait, M: TakeIn<W, L>> {
    phase: Cell<Phase>,
    // Each `Some` only in its phase (`Wanted`, `Taken`), so that the drop of a call that
    // carried nothing is one compare (`Drop for Carry`; as plain fields, their drop glue
    // was an out-of-line call per call: 13 instructions, callgrind).
    wanted: ManuallyDrop<Cell<Option<Want<L>>>>,
    taken: ManuallyDrop<Cell<Option<Taken<M::Guard>>>>,
    strategy: PhantomData<W>,
}

impl<L: ?Sized, W: Wait, M: TakeIn<W, L>> Drop for Carry<L, W, M> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.phase.get() != Phase::Clear {
            self.drop_carried();
        }
    }
}

impl<L: ?Sized, W: Wait, M: TakeIn<W, L>> Carry<L, W, M> {
    /// Nothing carried yet.
    #[inline(always)]
    #[must_use]
    pub fn new() -> Self {
        Carry {
            phase: Cell::new(Phase::Clear),
            wanted: ManuallyDrop::new(Cell::new(None)),
            taken: ManuallyDrop::new(Cell::new(None)),
            strategy: PhantomData,
        }
    }

    /// The first locked level for a pass: the level carried if it is `lock`, else tried.
    #[inline(always)]
    fn take<H: Hold>(
        &self,
        lock: &Arc<L>,
        index: usize,
        level: &'static Level,
        try_take: impl FnOnce() -> Option<(M::Guard, Held)>,
    ) -> Result<(M::Guard, Held), Stop> {
        if self.phase.get() != Phase::Clear
            && let Some(carried) = self.carried(lock)
        {
            return Ok(carried);
        }
        match try_take() {
            Some(taken) => Ok(taken),
            None => Err(self.want(lock, index, level, H::HELD)),
        }
    }

    /// Lets go of what the call carries as it ends (returned, or unwinding).
    #[cold]
    #[inline(never)]
    fn drop_carried(&mut self) {
        self.phase.set(Phase::Clear);
        // SAFETY: called once, from `drop`; the fields are not used after.
        unsafe {
            ManuallyDrop::drop(&mut self.wanted);
            ManuallyDrop::drop(&mut self.taken);
        }
    }

    /// The carried level if it is `lock`; any other carried level is let go.
    #[cold]
    #[inline(never)]
    fn carried(&self, lock: &Arc<L>) -> Option<(M::Guard, Held)> {
        if self.phase.get() != Phase::Taken {
            return None;
        }
        self.phase.set(Phase::Clear);
        let taken = self.taken.take()?;
        if taken.address == address(lock) {
            Some((taken.guard, taken.held))
        } else {
            drop(taken);
            None
        }
    }

    /// The pass's answer for a held level: [`Stop::Wait`], the lock noted for the driver;
    /// past the deadline, [`Exit::TimedOut`] at `index`.
    #[cold]
    #[inline(never)]
    fn want(&self, lock: &Arc<L>, index: usize, level: &'static Level, held: bool) -> Stop {
        if self.phase.get() == Phase::Expired {
            return Stop::Exit(Exit::TimedOut { level: index });
        }
        self.wanted.set(Some(Want {
            lock: Arc::clone(lock),
            index,
            level,
            held,
        }));
        self.phase.set(Phase::Wanted);
        Stop::Wait
    }
}

impl<L: ?Sized, W: Wait, M: TakeIn<W, L>> Default for Carry<L, W, M> {
    fn default() -> Self {
        Self::new()
    }
}

#[inline(always)]
fn address<L: ?Sized>(lock: &Arc<L>) -> usize {
    Arc::as_ptr(lock).cast::<()>().addr()
}

/// What the driver does with a call's [`Carry`] between passes.
pub trait Waits<W: Wait, R: Rec> {
    /// Waits, unpinned, for the lock the last pass found held: taken (the next pass uses
    /// it), or, a deadline passed, expired. Returns the level's name, where a second wait
    /// of the call counts as a restart.
    fn wait(&self, wait: W, rec: R) -> Option<&'static Level>;

    /// Forgets a lock a pass wanted but did not wait for (its parent changed: a restart).
    fn unwanted(&self);

    /// Lets go of the carried level, before a pass that waits (the pessimistic one).
    fn release(&self);
}

impl<L: ?Sized, W: Wait, M: TakeIn<W, L>, R: Rec> Waits<W, R> for Carry<L, W, M> {
    #[cold]
    #[inline(never)]
    fn wait(&self, strategy: W, rec: R) -> Option<&'static Level> {
        let want = self.wanted.take()?;
        let taken = if want.held {
            M::take(strategy, rec, Kept, &want.lock, want.index, want.level)
        } else {
            M::take(strategy, rec, Unheld, &want.lock, want.index, want.level)
        };
        match taken {
            Ok((guard, held)) => {
                self.taken.set(Some(Taken {
                    held,
                    guard,
                    address: address(&want.lock),
                }));
                self.phase.set(Phase::Taken);
            }
            Err(_) => self.phase.set(Phase::Expired),
        }
        Some(want.level)
    }

    #[inline(always)]
    fn unwanted(&self) {
        if self.phase.get() == Phase::Wanted {
            self.wanted.set(None);
            self.phase.set(Phase::Clear);
        }
    }

    #[inline(always)]
    fn release(&self) {
        if self.phase.get() == Phase::Taken {
            self.taken.set(None);
            self.phase.set(Phase::Clear);
        }
    }
}

/// The strategy a pass of kind `K` takes its first locked level with (see the module docs):
/// the call's strategy `W` and its carry `C`. Its steps answer [`Stop`]: [`Stop::Wait`] for
/// a held level, which the parent validates first, as it does a deadline's exit.
pub struct Carrying<'c, W, C, K>(W, &'c C, PhantomData<K>);

impl<'c, W, C, K> Carrying<'c, W, C, K> {
    /// `wait` through `carry` in a pass of kind `K` ([`Pass::first`](super::Pass::first)).
    #[inline(always)]
    pub(super) fn new(wait: W, carry: &'c C) -> Self {
        Carrying(wait, carry, PhantomData)
    }
}

impl<W: Copy, C, K> Clone for Carrying<'_, W, C, K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<W: Copy, C, K> Copy for Carrying<'_, W, C, K> {}

impl<W: Wait, C, K> Wait for Carrying<'_, W, C, K> {
    type Error = Stop;
    #[inline(always)]
    fn deadline(self) -> Option<Instant> {
        self.0.deadline()
    }
}

macro_rules! carrying {
    ($($step:ident: $mode:ident;)*) => {$(
        impl<W, L: ?Sized, K: Kind> $step<L> for Carrying<'_, W, Carry<L, W, $mode>, K>
        where
            W: $step<L>,
            Stop: From<W::Error>,
        {
            type Target = <W as $step<L>>::Target;
            type Guard = <W as $step<L>>::Guard;
            #[inline(always)]
            #[cfg_attr(feature = "telemetry", track_caller)]
            fn take<R: Rec, H: Hold>(
                self,
                rec: R,
                hold: H,
                lock: &Arc<L>,
                index: usize,
                level: &'static Level,
            ) -> Result<(Self::Guard, Held), Stop> {
                if K::HOLDS {
                    return self.0.take(rec, hold, lock, index, level).map_err(Stop::from);
                }
                self.1
                    .take::<H>(lock, index, level, || self.0.try_take(rec, hold, lock, level))
            }
            #[inline(always)]
            #[cfg_attr(feature = "telemetry", track_caller)]
            fn try_take<R: Rec, H: Hold>(
                self,
                rec: R,
                hold: H,
                lock: &Arc<L>,
                level: &'static Level,
            ) -> Option<(Self::Guard, Held)> {
                self.0.try_take(rec, hold, lock, level)
            }
        }
    )*};
}

carrying! {
    WaitX: ModeX;
    WaitS: ModeS;
    WaitU: ModeU;
}
