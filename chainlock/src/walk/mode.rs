//! How a walk locks the nodes on its way down and the node it ends at.

use crate::chain::{
    AsyncExclusiveLock, AsyncSharedLock, ExclusiveLock, SharedLock, TimedExclusiveLock,
    TimedSharedLock, TimedUpgradableLock, Upgradable, UpgradableLock,
};
use std::ops::Deref;
use std::sync::Arc;
use std::time::Instant;

/// How a walk locks each node: the nodes it passes through (`Path`) and the node it ends at
/// (`Target`). Implemented by [`Exclusive`], [`Shared`] and [`Crab`]; not meant to be
/// implemented outside this crate.
pub trait Mode<L: ?Sized>: Copy {
    /// The type of the tree's nodes.
    type Node: ?Sized;
    /// The guard held on a node the walk passes through.
    type Path: Deref<Target = Self::Node>;
    /// The guard of the node the walk ends at.
    type Target: Deref<Target = Self::Node>;
    /// Whether a node held on the way down can be the target as it is ([`Mode::settle`]
    /// succeeds): then a key path needs no look-ahead to tell its last key.
    const PATH_IS_TARGET: bool;

    /// Locks a node the walk passes through.
    fn lock_path(lock: &Arc<L>) -> Self::Path;
    /// Locks the node the walk ends at.
    fn lock_target(lock: &Arc<L>) -> Self::Target;
    /// Locks a node the walk passes through if that needs no waiting (how the telemetry
    /// tells a contended acquisition).
    #[doc(hidden)]
    fn try_lock_path(lock: &Arc<L>) -> Option<Self::Path>;
    /// Locks the node the walk ends at if that needs no waiting.
    #[doc(hidden)]
    fn try_lock_target(lock: &Arc<L>) -> Option<Self::Target>;
    /// Makes the node the walk holds on its way down its target, if the modes agree
    /// (`Err` gives the guard back when they do not).
    ///
    /// # Errors
    ///
    /// The guard itself, when the path mode is weaker than the target mode.
    fn settle(path: Self::Path) -> Result<Self::Target, Self::Path>;
}

/// A [`Mode`] whose locks can give up at a deadline.
pub trait TimedMode<L: ?Sized>: Mode<L> {
    /// Locks a node the walk passes through, unless `deadline` passes first.
    fn lock_path_until(lock: &Arc<L>, deadline: Instant) -> Option<Self::Path>;
    /// Locks the node the walk ends at, unless `deadline` passes first.
    fn lock_target_until(lock: &Arc<L>, deadline: Instant) -> Option<Self::Target>;
}

/// Every node exclusively, the target too: the textbook lock coupling of a sorted list,
/// and what a walk that changes nodes on its way needs. Steps get `&mut` access.
#[derive(Debug, Clone, Copy, Default)]
pub struct Exclusive;

/// Every node in shared mode, the target too: lookups.
#[derive(Debug, Clone, Copy, Default)]
pub struct Shared;

/// Latch crabbing: shared on the way down, exclusive at the target, so that readers and
/// writers of other subtrees pass each other above it. The levels must have both modes
/// (an `RwLock`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Crab;

/// Upgradable reads all the way: plain readers pass each node the walk holds, other
/// upgraders and writers wait; a step may make the node it holds writable in place
/// ([`Upgradable::upgrade`]) and go on, and the walk hands back the target still as the
/// upgradable reader, for the caller to upgrade only if it must change it. The levels must
/// have an upgradable read mode (parking_lot's `RwLock`). Upgrades wait for the node's plain
/// readers without a deadline (readers only pass through); two upgradable walks exclude each
/// other node by node, so they pass through the root one at a time.
///
/// # Examples
///
/// `mkdir -p`: upgrade a directory only where a component is missing.
///
/// ```
/// use chainlock::parking_lot::RwLock;
/// use chainlock::walk::{Step, Upgrade, Walker};
/// use chainlock::ChainNode;
/// use std::collections::BTreeMap;
/// use std::sync::Arc;
///
/// #[derive(ChainNode, Default)]
/// struct Dir {
///     #[chain(children)]
///     entries: BTreeMap<String, Arc<RwLock<Dir>>>,
/// }
///
/// let root = Arc::new(RwLock::new(Dir::default()));
/// let path = ["usr", "local", "lib"];
/// let lib = Walker::new()
///     .descend(&root, Upgrade, |dir, depth| {
///         let Some(name) = path.get(depth) else { return Step::Here };
///         if let Some(child) = dir.entries.get(*name) {
///             return Step::Descend(child.clone()); // exists: readers were never blocked
///         }
///         let child = Arc::new(RwLock::new(Dir::default()));
///         dir.upgrade().entries.insert((*name).to_owned(), child.clone()); // in place
///         Step::Descend(child)
///     })
///     .unwrap();
/// assert!(lib.entries.is_empty() && !lib.is_upgraded()); // the target is not write-locked
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Upgrade;

impl<L: ExclusiveLock + ?Sized> Mode<L> for Exclusive {
    type Node = L::Target;
    type Path = L::Guard;
    type Target = L::Guard;
    const PATH_IS_TARGET: bool = true;

    #[inline]
    fn lock_path(lock: &Arc<L>) -> L::Guard {
        L::lock_exclusive(lock)
    }

    #[inline]
    fn lock_target(lock: &Arc<L>) -> L::Guard {
        L::lock_exclusive(lock)
    }

    #[inline]
    fn try_lock_path(lock: &Arc<L>) -> Option<Self::Path> {
        L::try_lock_exclusive(lock)
    }

    #[inline]
    fn try_lock_target(lock: &Arc<L>) -> Option<Self::Target> {
        L::try_lock_exclusive(lock)
    }

    #[inline]
    fn settle(path: L::Guard) -> Result<L::Guard, L::Guard> {
        Ok(path)
    }
}

impl<L: TimedExclusiveLock + ?Sized> TimedMode<L> for Exclusive {
    #[inline]
    fn lock_path_until(lock: &Arc<L>, deadline: Instant) -> Option<L::Guard> {
        L::try_lock_exclusive_until(lock, deadline)
    }

    #[inline]
    fn lock_target_until(lock: &Arc<L>, deadline: Instant) -> Option<L::Guard> {
        L::try_lock_exclusive_until(lock, deadline)
    }
}

impl<L: SharedLock + ?Sized> Mode<L> for Shared {
    type Node = L::Target;
    type Path = L::Guard;
    type Target = L::Guard;
    const PATH_IS_TARGET: bool = true;

    #[inline]
    fn lock_path(lock: &Arc<L>) -> L::Guard {
        L::lock_shared(lock)
    }

    #[inline]
    fn lock_target(lock: &Arc<L>) -> L::Guard {
        L::lock_shared(lock)
    }

    #[inline]
    fn try_lock_path(lock: &Arc<L>) -> Option<Self::Path> {
        L::try_lock_shared(lock)
    }

    #[inline]
    fn try_lock_target(lock: &Arc<L>) -> Option<Self::Target> {
        L::try_lock_shared(lock)
    }

    #[inline]
    fn settle(path: L::Guard) -> Result<L::Guard, L::Guard> {
        Ok(path)
    }
}

impl<L: TimedSharedLock + ?Sized> TimedMode<L> for Shared {
    #[inline]
    fn lock_path_until(lock: &Arc<L>, deadline: Instant) -> Option<L::Guard> {
        L::try_lock_shared_until(lock, deadline)
    }

    #[inline]
    fn lock_target_until(lock: &Arc<L>, deadline: Instant) -> Option<L::Guard> {
        L::try_lock_shared_until(lock, deadline)
    }
}

impl<L> Mode<L> for Crab
where
    L: SharedLock + ExclusiveLock<Target = <L as SharedLock>::Target> + ?Sized,
{
    type Node = <L as SharedLock>::Target;
    type Path = <L as SharedLock>::Guard;
    type Target = <L as ExclusiveLock>::Guard;
    const PATH_IS_TARGET: bool = false;

    #[inline]
    fn lock_path(lock: &Arc<L>) -> Self::Path {
        L::lock_shared(lock)
    }

    #[inline]
    fn lock_target(lock: &Arc<L>) -> Self::Target {
        L::lock_exclusive(lock)
    }

    #[inline]
    fn try_lock_path(lock: &Arc<L>) -> Option<Self::Path> {
        L::try_lock_shared(lock)
    }

    #[inline]
    fn try_lock_target(lock: &Arc<L>) -> Option<Self::Target> {
        L::try_lock_exclusive(lock)
    }

    #[inline]
    fn settle(path: Self::Path) -> Result<Self::Target, Self::Path> {
        Err(path)
    }
}

impl<L> TimedMode<L> for Crab
where
    L: TimedSharedLock + TimedExclusiveLock<Target = <L as SharedLock>::Target> + ?Sized,
{
    #[inline]
    fn lock_path_until(lock: &Arc<L>, deadline: Instant) -> Option<Self::Path> {
        L::try_lock_shared_until(lock, deadline)
    }

    #[inline]
    fn lock_target_until(lock: &Arc<L>, deadline: Instant) -> Option<Self::Target> {
        L::try_lock_exclusive_until(lock, deadline)
    }
}

/// How an async walk locks each node: [`Exclusive`], [`Shared`] or [`Crab`] over locks with
/// owned async guards (`tokio::sync::{Mutex, RwLock}`, feature `tokio`).
pub trait AsyncMode<L: ?Sized>: Copy {
    /// The type of the tree's nodes.
    type Node: ?Sized;
    /// The guard held on a node the walk passes through.
    type Path: Deref<Target = Self::Node>;
    /// The guard of the node the walk ends at.
    type Target: Deref<Target = Self::Node>;
    /// As [`Mode::PATH_IS_TARGET`].
    const PATH_IS_TARGET: bool;

    /// Locks a node the walk passes through, unless `deadline` passes first.
    fn lock_path(
        lock: Arc<L>,
        deadline: Option<Instant>,
    ) -> impl Future<Output = Option<Self::Path>> + Send;
    /// Locks the node the walk ends at, unless `deadline` passes first.
    fn lock_target(
        lock: Arc<L>,
        deadline: Option<Instant>,
    ) -> impl Future<Output = Option<Self::Target>> + Send;
    /// As [`Mode::settle`].
    ///
    /// # Errors
    ///
    /// The guard itself, when the path mode is weaker than the target mode.
    fn settle(path: Self::Path) -> Result<Self::Target, Self::Path>;
}

async fn exclusive_async<L: AsyncExclusiveLock + ?Sized>(
    lock: Arc<L>,
    deadline: Option<Instant>,
) -> Option<L::Guard> {
    match deadline {
        None => Some(L::lock_exclusive_async(lock).await),
        Some(deadline) => L::try_lock_exclusive_until_async(lock, deadline).await,
    }
}

async fn shared_async<L: AsyncSharedLock + ?Sized>(
    lock: Arc<L>,
    deadline: Option<Instant>,
) -> Option<L::Guard> {
    match deadline {
        None => Some(L::lock_shared_async(lock).await),
        Some(deadline) => L::try_lock_shared_until_async(lock, deadline).await,
    }
}

impl<L> AsyncMode<L> for Exclusive
where
    L: AsyncExclusiveLock + Send + Sync + ?Sized,
{
    type Node = L::Target;
    type Path = L::Guard;
    type Target = L::Guard;
    const PATH_IS_TARGET: bool = true;

    fn lock_path(
        lock: Arc<L>,
        deadline: Option<Instant>,
    ) -> impl Future<Output = Option<L::Guard>> + Send {
        exclusive_async(lock, deadline)
    }

    fn lock_target(
        lock: Arc<L>,
        deadline: Option<Instant>,
    ) -> impl Future<Output = Option<L::Guard>> + Send {
        exclusive_async(lock, deadline)
    }

    fn settle(path: L::Guard) -> Result<L::Guard, L::Guard> {
        Ok(path)
    }
}

impl<L> AsyncMode<L> for Shared
where
    L: AsyncSharedLock + Send + Sync + ?Sized,
{
    type Node = L::Target;
    type Path = L::Guard;
    type Target = L::Guard;
    const PATH_IS_TARGET: bool = true;

    fn lock_path(
        lock: Arc<L>,
        deadline: Option<Instant>,
    ) -> impl Future<Output = Option<L::Guard>> + Send {
        shared_async(lock, deadline)
    }

    fn lock_target(
        lock: Arc<L>,
        deadline: Option<Instant>,
    ) -> impl Future<Output = Option<L::Guard>> + Send {
        shared_async(lock, deadline)
    }

    fn settle(path: L::Guard) -> Result<L::Guard, L::Guard> {
        Ok(path)
    }
}

impl<L> AsyncMode<L> for Crab
where
    L: AsyncSharedLock
        + AsyncExclusiveLock<Target = <L as AsyncSharedLock>::Target>
        + Send
        + Sync
        + ?Sized,
{
    type Node = <L as AsyncSharedLock>::Target;
    type Path = <L as AsyncSharedLock>::Guard;
    type Target = <L as AsyncExclusiveLock>::Guard;
    const PATH_IS_TARGET: bool = false;

    fn lock_path(
        lock: Arc<L>,
        deadline: Option<Instant>,
    ) -> impl Future<Output = Option<Self::Path>> + Send {
        shared_async(lock, deadline)
    }

    fn lock_target(
        lock: Arc<L>,
        deadline: Option<Instant>,
    ) -> impl Future<Output = Option<Self::Target>> + Send {
        exclusive_async(lock, deadline)
    }

    fn settle(path: Self::Path) -> Result<Self::Target, Self::Path> {
        Err(path)
    }
}

impl<L: UpgradableLock + ?Sized> Mode<L> for Upgrade {
    type Node = L::Target;
    type Path = Upgradable<L>;
    type Target = Upgradable<L>;
    const PATH_IS_TARGET: bool = true;

    #[inline]
    fn lock_path(lock: &Arc<L>) -> Upgradable<L> {
        Upgradable::lock(lock)
    }

    #[inline]
    fn lock_target(lock: &Arc<L>) -> Upgradable<L> {
        Upgradable::lock(lock)
    }

    #[inline]
    fn try_lock_path(lock: &Arc<L>) -> Option<Self::Path> {
        // A lock whose try cannot tell (the trait's default) counts every sampled
        // acquisition as contended, its wait timed as it is.
        L::try_lock_upgradable(lock).map(Upgradable::from_guard)
    }

    #[inline]
    fn try_lock_target(lock: &Arc<L>) -> Option<Self::Target> {
        Self::try_lock_path(lock)
    }

    #[inline]
    fn settle(path: Upgradable<L>) -> Result<Upgradable<L>, Upgradable<L>> {
        Ok(path)
    }
}

impl<L: TimedUpgradableLock + ?Sized> TimedMode<L> for Upgrade {
    #[inline]
    fn lock_path_until(lock: &Arc<L>, deadline: Instant) -> Option<Upgradable<L>> {
        L::try_lock_upgradable_until(lock, deadline).map(Upgradable::from_guard)
    }

    #[inline]
    fn lock_target_until(lock: &Arc<L>, deadline: Instant) -> Option<Upgradable<L>> {
        L::try_lock_upgradable_until(lock, deadline).map(Upgradable::from_guard)
    }
}
