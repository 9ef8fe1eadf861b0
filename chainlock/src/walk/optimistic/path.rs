//! The optimistic walk's acquisitions as the telemetry sees them, and the nodes its
//! pessimistic pass holds on the way to the target.

use super::OptimisticMode;
use crate::hybrid::{ArcHybridReadGuard, ArcHybridWriteGuard, HybridLock, Restart};
use crate::telemetry::hooks::{Held, KeyRef, observe_hybrid};
use crate::walk::{WALKS, address};
use std::ops::Deref;
use std::panic::Location;
use std::sync::Arc;
use std::time::Instant;

/// `take`, a hybrid lock's acquisition at `depth` (the target, or a wait for a node a writer
/// holds), recorded by the telemetry as every walk's (`LockName::Depth`): counted and its
/// wait timed (when sampled, `try_take` first: a failed try is a contended acquisition), its
/// hold not followed. `Ok(None)`: the deadline passed; `Err(Restart)`: the version was not
/// the one read. Without the `telemetry` feature, `take`.
#[expect(
    clippy::inline_always,
    reason = "one acquisition of the walk: folds to `take` without the telemetry"
)]
#[inline(always)]
#[cfg_attr(feature = "telemetry", track_caller)]
pub(super) fn observed<N: ?Sized, G>(
    lock: &Arc<HybridLock<N>>,
    depth: usize,
    try_take: impl FnOnce() -> Result<Option<G>, Restart>,
    take: impl FnOnce() -> Result<Option<G>, Restart>,
) -> Result<Option<G>, Restart> {
    let site = Location::caller();
    let key = KeyRef::Index(depth);
    observe_hybrid::<G, false>(&WALKS, site, key, address(lock), try_take, take)
        .map(|taken| taken.map(|(guard, _)| guard))
}

/// A node of the pessimistic pass's path, held in the mode's path mode, with the record of
/// its hold: the live table lists the walking thread as its holder until the walk lets it
/// go (as a pessimistic walk's path nodes), so a writer waiting for it sees who holds it.
pub(super) struct PathHold<N: ?Sized> {
    // Declared first, dropped first: the hold's record ends before the lock is released.
    record: Held,
    node: Path<N>,
}

/// The guard of a [`PathHold`].
enum Path<N: ?Sized> {
    Shared(ArcHybridReadGuard<N>),
    Exclusive(ArcHybridWriteGuard<N>),
}

impl<N: ?Sized> PathHold<N> {
    /// `lock` in `M`'s path mode (`None`: the deadline passed), counted as every walk's
    /// acquisition at `depth` and, when sampled, its hold followed.
    #[cfg_attr(feature = "telemetry", track_caller)]
    pub(super) fn take<M: OptimisticMode<N>>(
        lock: &Arc<HybridLock<N>>,
        deadline: Option<Instant>,
        depth: usize,
    ) -> Option<Self> {
        // Without a version to compare, neither mode ever answers `Restart`.
        let take = |deadline| {
            if M::EXCLUSIVE_PATH {
                HybridLock::write_arc_at(lock, None, deadline).map(|got| got.map(Path::Exclusive))
            } else {
                HybridLock::read_arc_at(lock, None, deadline).map(|got| got.map(Path::Shared))
            }
        };
        let taken = observe_hybrid::<_, true>(
            &WALKS,
            Location::caller(),
            KeyRef::Index(depth),
            address(lock),
            || take(Some(Instant::now())),
            || take(deadline),
        );
        let (node, record) = taken.ok().flatten()?;
        Some(Self { record, node })
    }

    /// The held node as the target ([`Step::Here`](crate::walk::Step::Here)), if `M`'s target
    /// mode is its path mode. The hold's record ends: a walk's target is the caller's guard,
    /// whose hold is not followed.
    pub(super) fn settle<M: OptimisticMode<N>>(self) -> Option<M::Target> {
        let Self { record, node } = self;
        record.released();
        match node {
            Path::Shared(guard) => M::settle_shared(guard),
            Path::Exclusive(guard) => M::settle_exclusive(guard),
        }
    }
}

impl<N: ?Sized> Deref for PathHold<N> {
    type Target = N;
    fn deref(&self) -> &N {
        match &self.node {
            Path::Shared(guard) => guard,
            Path::Exclusive(guard) => guard,
        }
    }
}
