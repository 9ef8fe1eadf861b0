//! The seam between the locks and the telemetry: every instrumented lock (the engine of the
//! named locks, the chain lockers' levels, the walks, the stripes, the rooms, the distributed
//! seam) records its acquisitions through this module, and through it only. The recording
//! core behind it (`probe.rs`, or its zero-sized mirror `off.rs` without the `telemetry`
//! feature) is reached from nowhere else. This file only names what the rest of the crate
//! uses; one file per concept behind it:
//!
//! - `acquisition.rs`, the shapes of one acquisition: [`observe`] (blocking),
//!   [`observe_timed`] (giving up at a deadline), [`observe_try`] (not waiting),
//!   [`observe_async`] (a future, waited if its first poll was pending),
//!   `observe_async_tried` (a future that can be tried first: the distributed seam's),
//!   [`observe_unskipped`] and [`observe_try_unskipped`] (the out-of-line paths of the
//!   first three, for a lock that asked the sampler itself), [`observe_hybrid`] (a hybrid
//!   lock, whose take may answer a restart);
//! - `queued.rs`, [`observe_queued!`]: a lock that queues its own waiters (the engine's
//!   registries, blocking, timed or tried), and its request alone, [`observe_queued_start`]
//!   (a future's first poll: the engine's claim);
//! - `restart.rs`, [`observe_restart`]: an optimistic descent's pass thrown away, with what
//!   comes [`Next`] (never its reads, which write nothing);
//! - `level.rs`, one level of a generated locker ([`Level`]), and what generated code does
//!   with its record besides taking its lock ([`hybrid`], [`restart`], [`release`], ...);
//!   the chain lockers take their levels' locks through `chain/acquire.rs`, one helper per
//!   lock trait and flavor over these shapes;
//! - `call.rs`, whether a generated call records ([`Rec`]: [`On`] or [`Off`], asked once
//!   per call by [`records`]).
//!
//! The code `chain_locker!` generates reaches this module through `__private` only: [`Held`],
//! [`Level`], [`Rec`], [`Next`] and the helpers are `pub` for that re-export, and no public
//! path of `chainlock::telemetry` names them.
//!
//! Without chainlock's `telemetry` feature every helper is an `#[inline(always)]` call of
//! the lock itself, [`Level`] and [`Held`] are zero-sized and the attempt is never
//! recording: the generated code compiles to what it was before the telemetry existed (the
//! zero-cost benchmark's callgrind counts are identical). With the feature, a generated call
//! asks once ([`Rec`], `__private::recording_branches!`): not enabled, or none of its levels
//! due to be sampled, it runs with [`Off`] and every helper is its lock's own call; with
//! [`On`], each level asks the sampler, and a sampled acquisition first tries the lock (so
//! that a wait is known as one), then waits for it as it would have.

mod acquisition;
mod call;
mod level;
mod queued;
mod restart;

pub(crate) use super::naming::{KeyRef, Label, LockAddr, ProbeKind};
#[cfg(feature = "async")]
pub(crate) use super::probe::Attempt;
pub use super::probe::Held;
pub(crate) use super::probe::{KeyProbe, Probe};
pub(crate) use super::state::recording;
#[cfg(all(feature = "telemetry", feature = "distributed"))]
pub(crate) use acquisition::observe_async_tried;
pub(crate) use acquisition::{
    address, observe, observe_async, observe_hybrid, observe_timed, observe_try,
    observe_try_unskipped, observe_unskipped,
};
pub use call::{Off, On, Rec, out_of_line, records, spend_unreached_async};
pub use level::{Level, hybrid, leaf, no_hold, release, release_as, release_taken, restart};
pub(crate) use queued::{Answer, begin_queued, observe_queued, queued_ended};
#[cfg(feature = "async")]
pub(crate) use queued::{Started, Waiting, observe_queued_start};
pub use restart::Next;
pub(crate) use restart::observe_restart;
