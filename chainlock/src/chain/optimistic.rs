//! The `optimistic` level mode of a generated chain locker: optimistic lock coupling over the
//! chain's first levels (each a [`HybridLock`]), `LeanStore`'s protocol, then the first
//! locked level taken and the descent going on as in every other mode.
//!
//! The generated body runs one *pass* at a time through [`optimistic`] (the driver: pin,
//! passes, restart bound, the telemetry's restart hook), given the pass's statements twice,
//! once per [`Kind`] of pass ([`Versions`], [`Holds`]), so that neither copy checks its kind
//! at run time (measured: 1.10× the instructions of the hand-written descent with one copy,
//! 0.99× with two; `docs/benchmarks.md`). A pass walks the optimistic levels
//! with a [`Pass`]: at each level it reads the version ([`Pass::root`], [`Pass::child`]),
//! asks the stage for the child (through the data as `&T`), reads the child's version (or
//! takes the child's lock, at the first locked level), and only then validates the level
//! ([`Seen::validate`], which ends the level): a changed version throws the pass away
//! ([`Stop::Restart`]). An answer computed from a level's data (absent, closed) is acted on
//! only after the level validates ([`Seen::check`]). After [`MAX_RESTARTS`] restarts the
//! last pass is pessimistic: the same steps, each optimistic level held shared hand over hand
//! (a [`Seen`] then holds the lock and validates by holding it), so a reader that keeps
//! meeting writers queues like any reader and always finishes.
//!
//! Reached by generated code through `__private`; the public items are [`OptimisticLock`]
//! and [`MAX_RESTARTS`].
#![expect(
    clippy::inline_always,
    reason = "the generated code's steps must inline into the caller to cost nothing"
)]

mod carry;

pub use carry::{Carry, Carrying, TakeIn, Waits};

use super::wait::{Parent, Wait};
use super::{EpochGuard, Exit};
use crate::hybrid::{HybridLock, RawHybridLock, Version};
use crate::telemetry::hooks::{self, Held, Level, Next, Rec};
use std::convert::Infallible;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::sync::Arc;
use std::time::Instant;

/// How many times a generated descent with `optimistic` levels restarts optimistically
/// before its pessimistic pass (so at most `MAX_RESTARTS + 1` optimistic passes): the same
/// bound as [`Walker::DEFAULT_MAX_RESTARTS`](crate::walk::Walker::DEFAULT_MAX_RESTARTS).
///
/// # Examples
///
/// ```
/// assert_eq!(chainlock::chain::MAX_RESTARTS, chainlock::walk::Walker::DEFAULT_MAX_RESTARTS);
/// ```
pub const MAX_RESTARTS: usize = 8;

mod sealed {
    pub trait Sealed {}
    impl<T: ?Sized> Sealed for crate::hybrid::HybridLock<T> {}
}

/// A lock an `optimistic` level of a chain locker can be: [`HybridLock`], which hands out only
/// `&T` in every mode, so that a reader may read it while a writer changes it (through `T`'s
/// atomics) and validate by version. Sealed: a lock that gives a writer `&mut T` (a mutex, an
/// `RwLock`, [`HybridRwLock`](crate::hybrid::HybridRwLock)) cannot be read optimistically
/// without a data race.
///
/// # Examples
///
/// ```
/// use chainlock::chain::OptimisticLock;
/// use chainlock::hybrid::HybridLock;
/// use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
///
/// fn peek<L: OptimisticLock<Target = AtomicU32> + ?Sized>(lock: &L) -> Option<u32> {
///     lock.hybrid().read_optimistic(|n| n.load(Relaxed)).ok()
/// }
/// assert_eq!(peek(&HybridLock::new(AtomicU32::new(3))), Some(3));
/// ```
#[diagnostic::on_unimplemented(
    message = "an `optimistic` level needs a `HybridLock`, not `{Self}`",
    label = "not a `chainlock::hybrid::HybridLock`",
    note = "an optimistic reader reads the level while a writer changes it: only `HybridLock<T>` (which hands out `&T` alone, its writers changing `T`'s atomics) makes that sound; a mutex, an `RwLock` or a `HybridRwLock` gives a writer `&mut T`",
    note = "use `Arc<HybridLock<T>>` for this level, or drop the `optimistic` modifier"
)]
pub trait OptimisticLock: sealed::Sealed {
    /// The data the lock protects.
    type Target: ?Sized;

    /// The hybrid lock itself.
    ///
    /// # Examples
    ///
    /// See [`OptimisticLock`].
    fn hybrid(&self) -> &HybridLock<Self::Target>;
}

impl<T: ?Sized> OptimisticLock for HybridLock<T> {
    type Target = T;

    #[inline(always)]
    fn hybrid(&self) -> &HybridLock<T> {
        self
    }
}

/// Why a pass ended early: a level whose version changed (the pass is thrown away and the
/// telemetry counts a restart at that level), or a validated exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The level at this index met a writer: restart.
    Restart(usize),
    /// The first locked level is held: the driver waits for it out of the pin, then runs
    /// the next pass (`carry.rs`).
    Wait,
    /// The descent's answer, from validated reads or held locks.
    Exit(Exit),
}

impl From<Exit> for Stop {
    #[inline(always)]
    fn from(exit: Exit) -> Self {
        Stop::Exit(exit)
    }
}

impl From<Infallible> for Stop {
    #[inline(always)]
    fn from(never: Infallible) -> Self {
        match never {}
    }
}

/// One pass over the optimistic levels: optimistic (versions) or the pessimistic fallback
/// (shared holds, waiting as the descent's strategy says), with the telemetry's record.
pub struct Pass<R, K> {
    rec: R,
    levels: &'static [Level],
    /// `Some(deadline)` for a descent that gives up at a deadline.
    deadline: Option<Instant>,
    kind: PhantomData<K>,
    /// The user's call, where a call that does not record its locked levels records a
    /// sampled acquisition of its pessimistic pass (sampled in both copies; the recording
    /// copy has it in `rec`).
    #[cfg(feature = "telemetry")]
    site: &'static std::panic::Location<'static>,
}

impl<R: Copy, K> Clone for Pass<R, K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R: Copy, K> Copy for Pass<R, K> {}

/// The kind of a pass, known at compile time in each of the two bodies a generated descent
/// has (so that neither checks it at run time): [`Versions`] or [`Holds`].
pub trait Kind {
    /// Whether the pass holds each level shared.
    const HOLDS: bool;
}

/// The optimistic passes: versions read and validated.
#[derive(Debug)]
pub enum Versions {}

/// The pessimistic pass: each level held shared, hand over hand.
#[derive(Debug)]
pub enum Holds {}

impl Kind for Versions {
    const HOLDS: bool = false;
}

impl Kind for Holds {
    const HOLDS: bool = true;
}

/// What a pass holds of an optimistic level: the version it read, or (pessimistic pass) a
/// shared hold and its record, released when the `Seen` drops.
#[must_use = "a level read optimistically must be validated before what was read is used"]
pub struct Seen<'g, T: ?Sized, K: Kind> {
    lock: &'g HybridLock<T>,
    kind: PhantomData<K>,
    /// The version read; `None`: held shared (the pessimistic pass).
    version: Option<Version>,
    index: usize,
    /// The shared hold's record (the pessimistic pass: the hold is in the live table while
    /// it lasts); not written in an optimistic pass (`MaybeUninit`: no store, no check).
    held: MaybeUninit<Held>,
}

impl<R: Rec, K: Kind> Pass<R, K> {
    /// Begins the root (level 0): its version, or its shared hold.
    ///
    /// # Errors
    ///
    /// [`Stop::Restart`] while a writer holds it (optimistic pass); [`Exit::TimedOut`] when a
    /// deadline passes first (pessimistic pass).
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn root<L: ?Sized + OptimisticLock>(
        self,
        root: &Arc<L>,
    ) -> Result<Seen<'_, L::Target, K>, Stop> {
        self.enter(root, 0, 0)
    }

    /// The strategy this pass takes the first locked level with: `wait` through the call's
    /// `carry` (the level waited for out of the pin; `carry.rs`), or, in the pessimistic
    /// pass, `wait` itself.
    #[inline(always)]
    pub fn first<W: Wait, C>(self, wait: W, carry: &C) -> Carrying<'_, W, C, K> {
        Carrying::new(wait, carry)
    }

    /// Goes from `parent` to `child` (level `index`): the child's version read (or its shared
    /// hold taken), then the parent validated (or released): lock coupling on versions.
    ///
    /// # Errors
    ///
    /// As [`Pass::root`], and [`Stop::Restart`] at the parent if its version changed.
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn child<'g, P: ?Sized, L: ?Sized + OptimisticLock>(
        self,
        parent: Seen<'g, P, K>,
        child: &'g Arc<L>,
        index: usize,
    ) -> Result<Seen<'g, L::Target, K>, Stop> {
        self.child_at(parent, child, index, index)
    }

    /// [`Pass::child`] in a mixed chain, where a level's place in the declaration
    /// (`declared`: its name for the telemetry, and where a restart is counted) and its level
    /// in this descent (`level`: the repetitions of the repeated level counted, as every
    /// [`Exit`] names it) differ below the repeated level.
    ///
    /// # Errors
    ///
    /// As [`Pass::child`].
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub fn child_at<'g, P: ?Sized, L: ?Sized + OptimisticLock>(
        self,
        parent: Seen<'g, P, K>,
        child: &'g Arc<L>,
        declared: usize,
        level: usize,
    ) -> Result<Seen<'g, L::Target, K>, Stop> {
        let seen = self.enter(child, declared, level)?;
        parent.validate()?;
        Ok(seen)
    }

    /// The level declared at `index` (at level `level` of the descent) begun in this pass's
    /// way.
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    fn enter<L: ?Sized + OptimisticLock>(
        self,
        lock: &Arc<L>,
        index: usize,
        level: usize,
    ) -> Result<Seen<'_, L::Target, K>, Stop> {
        let hybrid = lock.hybrid();
        if !K::HOLDS {
            let version = hybrid
                .raw()
                .optimistic()
                .map_err(|_| Stop::Restart(index))?;
            return Ok(Seen {
                lock: hybrid,
                kind: PhantomData,
                version: Some(version),
                index,
                held: MaybeUninit::uninit(),
            });
        }
        let raw = hybrid.raw();
        let deadline = self.deadline;
        // A shared hold never answers `Restart` (no version is compared). Its record goes
        // with the `Seen`, which ends it when it releases the hold.
        #[cfg(feature = "telemetry")]
        let site = if R::ON { self.rec.site() } else { self.site };
        #[cfg(not(feature = "telemetry"))]
        let site = self.rec.site();
        let taken = hooks::hybrid::<L, (), true>(
            site,
            lock,
            &self.levels[index],
            || Ok(raw.try_take_shared().then_some(())),
            || Ok(raw.take_shared(deadline).then_some(())),
        );
        match taken {
            Ok(Some(((), held))) => Ok(Seen {
                lock: hybrid,
                kind: PhantomData,
                version: None,
                index,
                held: MaybeUninit::new(held),
            }),
            _ => Err(Stop::Exit(Exit::TimedOut { level })),
        }
    }
}

impl<'g, T: ?Sized, K: Kind> Seen<'g, T, K> {
    /// The level's data, for its stage: maybe changing under an optimistic reader (through
    /// `T`'s atomics), so that what the stage computes is used only after [`Seen::check`] or
    /// [`Seen::validate`].
    #[inline(always)]
    #[must_use]
    pub fn data(&self) -> &'g T {
        self.lock.data()
    }

    /// The address of the level's lock, as [`Arc::as_ptr`] of its `Arc` gives it (what a
    /// walk compares to refuse a step that hands back the lock it runs on).
    #[inline(always)]
    pub(crate) fn address(&self) -> usize {
        std::ptr::from_ref(self.lock).cast::<()>().addr()
    }

    /// An answer computed from the level's data: an exit (absent child, closed level) is
    /// returned only if the level validates, a restart otherwise; a found child goes on
    /// (it is validated with the next level, [`Pass::child`]).
    ///
    /// # Errors
    ///
    /// The exit, validated, or [`Stop::Restart`] at this level.
    #[inline(always)]
    pub fn check<X>(&self, answer: Result<X, Exit>) -> Result<X, Stop> {
        match answer {
            Ok(found) => Ok(found),
            Err(exit) => {
                self.still()?;
                Err(Stop::Exit(exit))
            }
        }
    }

    /// The first locked level's step under this level: taken, or its exit (a deadline
    /// passed) returned only if this level still validates (else the child waited for may
    /// have been unlinked meanwhile: [`Stop::Restart`]). Does not end the level.
    ///
    /// # Errors
    ///
    /// The step's exit, validated, or [`Stop::Restart`] at this level.
    #[inline(always)]
    pub fn taken<X, E: Into<Stop>>(&self, step: Result<X, E>) -> Result<X, Stop> {
        match step {
            Ok(taken) => Ok(taken),
            Err(exit) => {
                self.still()?;
                Err(exit.into())
            }
        }
    }

    /// Ends the level: its version is still the one read (or the level was held shared).
    ///
    /// # Errors
    ///
    /// [`Stop::Restart`] at this level if a writer held it since its version was read.
    #[inline(always)]
    pub fn validate(self) -> Result<(), Stop> {
        self.still()
    }

    #[inline(always)]
    fn still(&self) -> Result<(), Stop> {
        if K::HOLDS {
            return Ok(());
        }
        match self.version {
            Some(version) => self
                .lock
                .raw()
                .validate(version)
                .map_err(|_| Stop::Restart(self.index)),
            None => Ok(()),
        }
    }
}

impl<T: ?Sized, K: Kind> Drop for Seen<'_, T, K> {
    #[inline(always)]
    fn drop(&mut self) {
        if K::HOLDS && self.version.is_none() {
            // SAFETY: `version` is `None` only when `Pass::enter` took the lock shared and
            // wrote its record; read once, here.
            unsafe { release_shared(self.lock.raw(), self.held.assume_init_read()) };
        }
    }
}

/// The end of a pessimistic pass's shared hold of `raw`: its record `held` first, then the
/// lock. Out of line with the telemetry feature: the pass is the rare path, and its
/// record's check inline cost the optimistic passes of the same body an instruction a call;
/// inline without it (out of line, it cost them three; callgrind `optimistic_generated_3`).
///
/// # Safety
///
/// The caller holds `raw` shared.
#[cfg_attr(feature = "telemetry", cold, inline(never))]
#[cfg_attr(not(feature = "telemetry"), inline(always))]
unsafe fn release_shared(raw: &RawHybridLock, held: Held) {
    held.released();
    // SAFETY: the caller holds it shared.
    unsafe { raw.release_shared() };
}

/// Runs a generated descent's optimistic levels: pins the thread once, then runs
/// `optimistic` until it finishes or [`MAX_RESTARTS`] restarts were made (each counted by the
/// telemetry at the level that failed, the last as the fallback), then `pessimistic` (the same
/// body, generated twice so that each knows its kind). `stages` are the optimistic levels'
/// stages, lent to the pass that runs. `wait` is the descent's strategy (its deadline, if it
/// has one, bounds the pessimistic pass's waits; the first locked level is taken with it by
/// the pass itself). An optimistic pass that finds its first locked level held ends with
/// [`Stop::Wait`]: the driver waits for that level out of the pin, with `wait`, and runs the
/// next pass, which finds it in `carry` (`carry.rs`); a second wait of the call counts as a
/// restart.
///
/// # Errors
///
/// The pass's validated [`Exit`].
#[inline(always)]
#[cfg_attr(feature = "telemetry", track_caller)]
pub fn optimistic<W: Wait, R: Rec, S, T, C: Waits<W, R>>(
    wait: W,
    rec: R,
    levels: &'static [Level],
    carry: &C,
    stages: &mut S,
    optimistic: impl FnMut(Pass<R, Versions>, &EpochGuard, &mut S) -> Result<T, Stop>,
    pessimistic: impl FnMut(Pass<R, Holds>, &EpochGuard, &mut S) -> Result<T, Stop>,
) -> Result<T, Exit> {
    bounded(
        MAX_RESTARTS,
        wait,
        rec,
        levels,
        carry,
        stages,
        optimistic,
        pessimistic,
    )
}

/// [`optimistic`] with `max_restarts` (its loom model sends the first restart to the
/// pessimistic pass).
#[inline(always)]
#[cfg_attr(feature = "telemetry", track_caller)]
#[expect(
    clippy::too_many_arguments,
    reason = "the driver's inputs, each used; one struct would only be taken apart again"
)]
fn bounded<W: Wait, R: Rec, S, T, C: Waits<W, R>>(
    max_restarts: usize,
    wait: W,
    rec: R,
    levels: &'static [Level],
    carry: &C,
    stages: &mut S,
    mut optimistic: impl FnMut(Pass<R, Versions>, &EpochGuard, &mut S) -> Result<T, Stop>,
    mut pessimistic: impl FnMut(Pass<R, Holds>, &EpochGuard, &mut S) -> Result<T, Stop>,
) -> Result<T, Exit> {
    let mut pinned = EpochGuard::pin();
    let (deadline, kind) = (wait.deadline(), PhantomData);
    #[cfg(feature = "telemetry")]
    let site = std::panic::Location::caller();
    let (mut restarts, mut waited) = (0, false);
    loop {
        let pass = Pass {
            rec,
            levels,
            deadline,
            kind,
            #[cfg(feature = "telemetry")]
            site,
        };
        let restarted = match optimistic(pass, &pinned, stages) {
            Ok(found) => return Ok(found),
            Err(Stop::Exit(exit)) => return Err(exit),
            Err(Stop::Restart(level)) => {
                carry.unwanted();
                &levels[level]
            }
            Err(Stop::Wait) => {
                // Out of the pin while it waits: removed children can be freed meanwhile.
                drop(pinned);
                let level = carry.wait(wait, rec);
                pinned = EpochGuard::pin();
                match level {
                    Some(level) if waited => level,
                    _ => {
                        waited = true;
                        continue;
                    }
                }
            }
        };
        let next = if restarts < max_restarts {
            Next::Optimistic
        } else {
            Next::Pessimistic
        };
        hooks::restart(restarted, next);
        if next == Next::Pessimistic {
            break;
        }
        restarts += 1;
        std::hint::spin_loop();
    }
    // The pessimistic pass waits for its shared holds: never while carrying a level.
    carry.release();
    let pass = Pass {
        rec,
        levels,
        deadline,
        kind: PhantomData,
        #[cfg(feature = "telemetry")]
        site,
    };
    // A pessimistic pass validates by holding: it never restarts (were it to, it would run
    // again, pessimistically).
    loop {
        match pessimistic(pass, &pinned, stages) {
            Ok(found) => return Ok(found),
            Err(Stop::Exit(exit)) => return Err(exit),
            Err(Stop::Restart(_) | Stop::Wait) => {}
        }
    }
}

/// An optimistic level as the parent of the first locked level: validated once that level
/// is taken (or, `lock_leaves`, once its lock is found).
impl<T: ?Sized, K: Kind> Parent<Stop> for Seen<'_, T, K> {
    #[inline(always)]
    fn let_go<R: Rec>(self, _: R) -> Result<(), Stop> {
        self.validate()
    }

    #[inline(always)]
    fn still_leads(&self) -> Result<(), Stop> {
        self.still()
    }
}

#[cfg(test)]
mod tests {
    #[cfg(not(loom))]
    mod miri;

    #[cfg(loom)]
    mod loom_passes;
}
