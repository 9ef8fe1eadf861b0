//! One level of a generated locker ([`Level`]) and what the generated code does with a
//! level's record besides taking its lock: a hybrid lock taken by an optimistic descent
//! ([`hybrid`]), a pass thrown away there ([`restart`]), the hold's end ([`release`]) and the
//! leaf handed out ([`leaf`]). The chain lockers take their levels' locks through
//! `chain/acquire.rs`, which calls the shapes of `acquisition.rs` with a level's probe.
#![expect(
    clippy::inline_always,
    reason = "the generated code's steps must inline into the caller to cost nothing"
)]

use super::acquisition::{address, observe_hybrid_side};
use super::call::Rec;
use super::restart::{Next, observe_restart};
use crate::hybrid::Restart;
use crate::telemetry::naming::{KeyRef, ProbeKind};
use crate::telemetry::probe::{Attempt, Held, Probe};
use crate::telemetry::sampling::level_chance;
use std::panic::Location;
use std::sync::Arc;

/// One level of a generated locker, as the telemetry names it (`LockName::Level`): a
/// `static` of the generated code, one per level (zero-sized without the feature).
pub struct Level {
    probe: Probe,
}

impl Level {
    /// A level no one names: what every level of a locker is without the telemetry feature
    /// (see `__chainlock_levels!`; zero-sized, nothing inside to share).
    #[cfg(not(feature = "telemetry"))]
    pub const UNNAMED: Level = Level::new("", 0, "");

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

    /// The level's probe, for the shapes of an acquisition (`chain/acquire.rs`) in a call's
    /// recording copy: the acquisition asks the sampler, and the call counts the chance
    /// (`CallChances`: a call that ends early spends its unreached levels' chances).
    #[inline(always)]
    pub(crate) fn probe(&self) -> &Probe {
        level_chance();
        &self.probe
    }

    /// An acquisition of this level begins, at the caller's site (counted as
    /// [`probe`](Self::probe) is).
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub(crate) fn begin(&self) -> Attempt<'_> {
        self.probe().begin(KeyRef::None)
    }
}

/// A level of a generated optimistic locker's pessimistic pass: the hybrid lock `lock`
/// taken by `take` (tried first by `try_take` when sampled), recorded at `site` (the
/// user's call). The record goes with the
/// guard (`HELD`), or the acquisition is counted without following the hold. Sampled on the
/// side countdown in both of the call's copies, as its restarts are
/// (`observe_hybrid_side`): how many such acquisitions a call makes is not known when it
/// decides whether it records, so they are not among its levels' chances.
///
/// # Errors
///
/// [`Restart`] when `take` (or `try_take`) answers it: the version changed.
#[inline(always)]
#[cfg_attr(feature = "telemetry", track_caller)]
pub fn hybrid<L: ?Sized, G, const HELD: bool>(
    site: &'static Location<'static>,
    lock: &Arc<L>,
    level: &'static Level,
    try_take: impl FnOnce() -> Result<Option<G>, Restart>,
    take: impl FnOnce() -> Result<Option<G>, Restart>,
) -> Result<Option<(G, Held)>, Restart> {
    let lock = address(lock);
    observe_hybrid_side::<G, HELD>(&level.probe, site, KeyRef::None, lock, try_take, take)
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

/// Releases a level the descent has passed: its record (the hold's end), then its guard.
#[inline(always)]
pub fn release<G>(guard: G, held: Held) {
    held.released();
    drop(guard);
}

/// [`release`] in a body that runs with `rec`: with [`Off`], whose helpers return empty
/// records only, the record is not looked at (`ManuallyDrop`: nothing to end), so that the copy
/// that does not record carries no check of it (the record lives in memory, for the unwind
/// path, and was read back and tested at every level).
///
/// [`Off`]: super::Off
#[inline(always)]
pub fn release_as<R: Rec, G>(_: R, guard: G, held: Held) {
    if R::ON {
        release(guard, held);
    } else {
        let _unread = std::mem::ManuallyDrop::new(held);
        drop(guard);
    }
}

/// [`release_as`] of the parent a mixed chain keeps until its walk's first step.
#[inline(always)]
pub fn release_taken<R: Rec, G>(rec: R, parent: Option<(G, Held)>) {
    if let Some((guard, held)) = parent {
        release_as(rec, guard, held);
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

/// The `static` `$name` of a generated locker's levels (`__CL_LEVELS`: each a [`Level`]
/// naming the locker, the level's place and its type for the telemetry), its types reached
/// through the generated code's path `$cl` (`__private`). Without chainlock's `telemetry`
/// feature nothing reads the names: the levels are `Level::UNNAMED`, zero-sized.
#[cfg(feature = "telemetry")]
#[doc(hidden)]
#[macro_export]
macro_rules! __chainlock_levels {
    ($cl:ident, $name:ident: [$($locker:literal $index:literal $level:literal),*; $n:literal]) => {
        static $name: [$cl::Level; $n] = [$($cl::Level::new($locker, $index, $level)),*];
    };
}

/// See the `telemetry` twin above: without the feature, unnamed levels.
#[cfg(not(feature = "telemetry"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __chainlock_levels {
    ($cl:ident, $name:ident: [$($locker:literal $index:literal $level:literal),*; $n:literal]) => {
        static $name: [$cl::Level; $n] = [$cl::Level::UNNAMED; $n];
    };
}
