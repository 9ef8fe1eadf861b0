//! An optimistic pass thrown away ([`observe_restart`], with what comes [`Next`]): counted
//! where it failed, never the reads that validate.
#![expect(
    clippy::inline_always,
    reason = "a hook inlines into the lock's hot path down to its first branch: measured with callgrind"
)]

use crate::telemetry::naming::KeyRef;
use crate::telemetry::probe::Probe;
use crate::telemetry::sampling::Sampled;
use std::panic::Location;

/// What an optimistic descent does after a pass failed (a level's `restart`, a walk's
/// `observe_restart`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Another optimistic pass: its restart bound is not reached.
    Optimistic,
    /// The pessimistic pass (locks, hand over hand): the bound is reached, the descent falls
    /// back.
    Pessimistic,
}

/// An optimistic pass failed at the lock `key` of `probe` (a level, a walk's depth): the
/// version read there changed, or a writer held it. The descent restarts, into another
/// optimistic pass or its pessimistic one (`next`, the fallback). Counted, sampled as an
/// acquisition is (a sampled restart counts for the sampling rate), at the level whose
/// validation failed, into [`LockStats::restarts`] and, for [`Next::Pessimistic`],
/// [`LockStats::fallbacks`].
///
/// Called only on the restart path, which already writes (the pass is thrown away): the
/// optimistic read that succeeds writes nothing and is never counted. Sampled on the side
/// countdown (`sampling.rs`, `side_sampled_now`), which a chain-locker call's copies ask
/// alike whether or not they record. Not sampled (or the telemetry off at run time), a
/// relaxed load and this thread's side countdown; without the `telemetry` feature, nothing.
///
/// [`LockStats::restarts`]: crate::telemetry::LockStats::restarts
/// [`LockStats::fallbacks`]: crate::telemetry::LockStats::fallbacks
#[inline(always)]
pub(crate) fn observe_restart(probe: &Probe, key: KeyRef<'_>, next: Next) {
    if probe.is_sampled_side() {
        observe_restart_sampled(probe, key, next);
    }
}

/// The path of [`observe_restart`] for a sampled restart.
#[cold]
#[inline(never)]
fn observe_restart_sampled(probe: &Probe, key: KeyRef<'_>, next: Next) {
    // A restart records no site: this one is only the sample's placeholder.
    let sampled = Sampled::start_side(Location::caller());
    probe.restarted(key, sampled, next == Next::Pessimistic);
}
