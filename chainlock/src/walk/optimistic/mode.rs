//! The modes of the optimistic descent ([`OptimisticMode`]): what [`Shared`], [`Crab`] and
//! [`Exclusive`] lock at the target and on the pessimistic pass.

use crate::hybrid::{ArcHybridReadGuard, ArcHybridWriteGuard, HybridLock, Restart, Version};
use crate::walk::{Crab, Exclusive, Shared};
#[cfg(doc)]
use crate::walk::{Step, Walker};
use std::ops::Deref;
use std::sync::Arc;
use std::time::Instant;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Shared {}
    impl Sealed for super::Crab {}
    impl Sealed for super::Exclusive {}
}

/// A mode of the optimistic descent: [`Shared`], [`Crab`] or [`Exclusive`] (see the table in
/// [`Walker::descend_optimistic`]). Sealed: the walk relies on what each mode locks.
///
/// # Examples
///
/// ```
/// use chainlock::hybrid::{ArcHybridWriteGuard, HybridLock};
/// use chainlock::walk::{Crab, OptimisticMode};
///
/// struct Node;
/// fn target_of<M: OptimisticMode<Node>>(_: M) -> &'static str {
///     std::any::type_name::<M::Target>()
/// }
/// assert!(target_of(Crab).contains("ArcHybridWriteGuard"));
/// ```
pub trait OptimisticMode<N: ?Sized>: Copy + sealed::Sealed {
    /// The target's guard: [`ArcHybridReadGuard`] for [`Shared`], [`ArcHybridWriteGuard`]
    /// otherwise.
    type Target: Deref<Target = N>;

    /// Whether the pessimistic pass holds the path exclusively.
    #[doc(hidden)]
    const EXCLUSIVE_PATH: bool;

    /// Whether [`Step::Here`] ends at the current node (its path mode is its target mode).
    #[doc(hidden)]
    const HERE: bool;

    /// Takes the target's lock (`None`: the deadline passed), kept only if its version is
    /// still `seen` (when given).
    #[doc(hidden)]
    fn take_target(
        lock: &Arc<HybridLock<N>>,
        seen: Option<Version>,
        deadline: Option<Instant>,
    ) -> Result<Option<Self::Target>, Restart>;

    /// The pessimistic pass's shared path guard as the target ([`Step::Here`]), if the
    /// mode's target is shared.
    /// [`take_target`](Self::take_target) only if that needs no wait (`None` otherwise).
    #[doc(hidden)]
    fn try_target(
        lock: &Arc<HybridLock<N>>,
        seen: Option<Version>,
    ) -> Result<Option<Self::Target>, Restart>;

    #[doc(hidden)]
    fn settle_shared(path: ArcHybridReadGuard<N>) -> Option<Self::Target>;

    /// The pessimistic pass's exclusive path guard as the target ([`Step::Here`]).
    #[doc(hidden)]
    fn settle_exclusive(path: ArcHybridWriteGuard<N>) -> Option<Self::Target>;
}

impl<N: ?Sized> OptimisticMode<N> for Shared {
    type Target = ArcHybridReadGuard<N>;
    const EXCLUSIVE_PATH: bool = false;
    const HERE: bool = true;

    fn take_target(
        lock: &Arc<HybridLock<N>>,
        seen: Option<Version>,
        deadline: Option<Instant>,
    ) -> Result<Option<Self::Target>, Restart> {
        HybridLock::read_arc_at(lock, seen, deadline)
    }

    fn try_target(
        lock: &Arc<HybridLock<N>>,
        seen: Option<Version>,
    ) -> Result<Option<Self::Target>, Restart> {
        HybridLock::try_read_arc_at(lock, seen)
    }

    fn settle_shared(path: ArcHybridReadGuard<N>) -> Option<Self::Target> {
        Some(path)
    }

    fn settle_exclusive(_: ArcHybridWriteGuard<N>) -> Option<Self::Target> {
        None
    }
}

impl<N: ?Sized> OptimisticMode<N> for Crab {
    type Target = ArcHybridWriteGuard<N>;
    const EXCLUSIVE_PATH: bool = false;
    const HERE: bool = false;

    fn take_target(
        lock: &Arc<HybridLock<N>>,
        seen: Option<Version>,
        deadline: Option<Instant>,
    ) -> Result<Option<Self::Target>, Restart> {
        HybridLock::write_arc_at(lock, seen, deadline)
    }

    fn try_target(
        lock: &Arc<HybridLock<N>>,
        seen: Option<Version>,
    ) -> Result<Option<Self::Target>, Restart> {
        HybridLock::try_write_arc_at(lock, seen)
    }

    fn settle_shared(_: ArcHybridReadGuard<N>) -> Option<Self::Target> {
        None
    }

    fn settle_exclusive(path: ArcHybridWriteGuard<N>) -> Option<Self::Target> {
        Some(path)
    }
}

impl<N: ?Sized> OptimisticMode<N> for Exclusive {
    type Target = ArcHybridWriteGuard<N>;
    const EXCLUSIVE_PATH: bool = true;
    const HERE: bool = true;

    fn take_target(
        lock: &Arc<HybridLock<N>>,
        seen: Option<Version>,
        deadline: Option<Instant>,
    ) -> Result<Option<Self::Target>, Restart> {
        HybridLock::write_arc_at(lock, seen, deadline)
    }

    fn try_target(
        lock: &Arc<HybridLock<N>>,
        seen: Option<Version>,
    ) -> Result<Option<Self::Target>, Restart> {
        HybridLock::try_write_arc_at(lock, seen)
    }

    fn settle_shared(_: ArcHybridReadGuard<N>) -> Option<Self::Target> {
        None
    }

    fn settle_exclusive(path: ArcHybridWriteGuard<N>) -> Option<Self::Target> {
        Some(path)
    }
}
