//! Locking several leaves at once, all or nothing, in one global order.
//!
//! Leaves are locked while holding nothing else, in ascending address order of their locks.
//! Every thread that locks several leaves takes them in that same order, and threads that
//! descend hand over hand hold at most a parent while waiting for a leaf, never a leaf while
//! waiting for anything above it; so no cycle of waits, hence no deadlock, can form.

use super::acquire;
use super::end::FoundLeaf;
use super::wait::{Blocking, Wait};
use super::{ExclusiveLock, Exit, LeavesExit, TimedExclusiveLock};
use crate::telemetry::hooks::{self, Level, Rec};
use std::sync::Arc;
use std::time::Instant;

/// Locks `handles` (leaves at level `level`, named `name` for the telemetry) in ascending
/// address order with `wait` and returns their guards in the order of `handles`. With a
/// deadline, gives up (releasing what it took) when it passes.
///
/// The telemetry is asked once for the leaves, as a generated call asks once for its
/// levels (`__private::recording_branches!`): each leaf is counted and its wait timed at
/// the leaf's level, its hold not followed (the guards returned are the lock's own, as a
/// `descend*`'s leaf).
#[cfg_attr(feature = "telemetry", track_caller)]
fn lock_all<W: LeafLocks<L>, L: ExclusiveLock + ?Sized>(
    wait: W,
    handles: &[Arc<L>],
    level: usize,
    name: &'static Level,
) -> Result<Vec<L::Guard>, LeavesExit> {
    let address = |index: usize| Arc::as_ptr(&handles[index]).cast::<()>();
    let mut order: Vec<usize> = (0..handles.len()).collect();
    order.sort_unstable_by_key(|&index| address(index));
    if let Some(pair) = order
        .windows(2)
        .find(|pair| address(pair[0]) == address(pair[1]))
    {
        let (first, second) = (pair[0].min(pair[1]), pair[0].max(pair[1]));
        return Err(LeavesExit::SameLeaf { first, second });
    }
    // The leaves are the call's levels (its chances: one per leaf).
    crate::__chainlock_recording_branches! { rec, u32::try_from(handles.len()).unwrap_or(u32::MAX) =>
        lock_in_order(wait, rec, handles, &order, level, name)
    }
}

/// The locking of [`lock_all`], `order` its order of `handles`, recording as `rec` says.
#[inline]
fn lock_in_order<W: LeafLocks<L>, R: Rec, L: ExclusiveLock + ?Sized>(
    wait: W,
    rec: R,
    handles: &[Arc<L>],
    order: &[usize],
    level: usize,
    name: &'static Level,
) -> Result<Vec<L::Guard>, LeavesExit> {
    let mut guards: Vec<Option<L::Guard>> = handles.iter().map(|_| None).collect();
    for &index in order {
        // On `TimedOut`, `guards` drops and releases every leaf taken so far.
        let exit = Exit::TimedOut { level };
        let taken = wait.take(rec, &handles[index], level, name);
        guards[index] = Some(taken.ok_or(LeavesExit::Path { path: index, exit })?);
    }
    Ok(guards
        .into_iter()
        .map(|guard| guard.expect("every leaf was locked"))
        .collect())
}

/// What a generated `lock_leaves` returns: the leaves' guards, or why not.
pub type Leaves<G> = Result<Vec<G>, LeavesExit>;

/// How a `lock_leaves` locks its leaves once it found them: [`Blocking`] as long as it takes,
/// until an [`Instant`] (releasing what it took when it passes).
pub trait LeafLocks<L: ExclusiveLock + ?Sized>: Wait {
    /// Takes one leaf, `lock` at level `level` (named `name`), recording as `rec` says
    /// (counted and its wait timed, its hold not followed); `None` when a deadline passed
    /// first.
    fn take<R: Rec>(
        self,
        rec: R,
        lock: &Arc<L>,
        level: usize,
        name: &'static Level,
    ) -> Option<L::Guard>;
}

impl<L: ExclusiveLock + ?Sized> LeafLocks<L> for Blocking {
    #[inline]
    fn take<R: Rec>(
        self,
        rec: R,
        lock: &Arc<L>,
        _: usize,
        name: &'static Level,
    ) -> Option<L::Guard> {
        let (guard, empty) = acquire::exclusive_unheld(rec, lock, name);
        Some(hooks::leaf(guard, empty))
    }
}

impl<L: TimedExclusiveLock + ?Sized> LeafLocks<L> for Instant {
    #[inline]
    fn take<R: Rec>(
        self,
        rec: R,
        lock: &Arc<L>,
        level: usize,
        name: &'static Level,
    ) -> Option<L::Guard> {
        let taken = acquire::exclusive_until_unheld(rec, lock, self, level, name);
        taken.ok().map(|(guard, empty)| hooks::leaf(guard, empty))
    }
}

/// The body of a generated `lock_leaves` (`wait`: [`Blocking`]) or `lock_leaves_until`
/// (an [`Instant`]): the leaf at the end of each path (`find`, the chain's body given `wait`
/// and ended by [`Found`](super::end::Found), which found it hand over hand and released
/// its parent: its lock, level and closed check), in the order of `paths`; then the leaves
/// locked together in one global order ([`LeafLocks`]), recorded at their level (its name
/// found with them); then none kept if one of them is closed.
///
/// # Errors
///
/// [`LeavesExit::Path`] with the [`Exit`] of the first path that failed (its leaf closed:
/// [`Exit::Absent`] at its level), [`LeavesExit::SameLeaf`] when two paths end at the same
/// leaf.
#[inline]
#[cfg_attr(feature = "telemetry", track_caller)]
pub fn leaves<W: LeafLocks<L>, P, L: ExclusiveLock + ?Sized>(
    wait: W,
    paths: impl IntoIterator<Item = P>,
    mut find: impl FnMut(W, P) -> Result<FoundLeaf<L::Guard, L>, Exit>,
) -> Leaves<L::Guard> {
    let (mut handles, mut leaf) = (Vec::new(), None);
    for (path, keys) in paths.into_iter().enumerate() {
        let found = find(wait, keys).map_err(|exit| LeavesExit::Path { path, exit })?;
        leaf = Some((found.level, found.name, found.open));
        handles.push(found.lock);
    }
    // Every path ends at the chain's leaf level, checked the same way.
    let Some((level, name, open)) = leaf else {
        return Ok(Vec::new());
    };
    let guards = lock_all(wait, &handles, level, name)?;
    for (path, guard) in guards.iter().enumerate() {
        open(guard, level).map_err(|exit| LeavesExit::Path { path, exit })?;
    }
    Ok(guards)
}

/// What `lock_leaves` requires of its paths on a chain whose leaf is not exclusive (`shared`
/// or `upgradable`): implemented by nothing, so that such a call is one compiler error in
/// plain words ("`lock_leaves` needs an exclusive leaf"). `lock_leaves` locks every leaf for
/// writing: make the leaf level exclusive (drop its modifier), or lock the leaves one at a
/// time with `run_keys`.
///
/// Sealed: it has no implementation, and none can be written.
///
/// # Examples
///
/// ```compile_fail
/// use chainlock::chain_locker;
/// use chainlock::parking_lot::RwLock;
/// use std::sync::Arc;
///
/// struct Registry;
/// struct Lecture;
///
/// let registry = Arc::new(RwLock::new(Registry));
/// // error: `lock_leaves` needs an exclusive leaf: this chain's leaf `Lecture` is `shared` ..
/// let _ = chain_locker!(Registry, shared Lecture).lock_leaves(&registry, [&0]);
/// ```
#[diagnostic::on_unimplemented(
    message = "`lock_leaves` needs an exclusive leaf: this chain's leaf `{Leaf}` is `shared` or `upgradable`",
    label = "`lock_leaves` locks several leaves for writing at once",
    note = "make the leaf level exclusive (drop its `shared`/`upgradable` modifier), or lock the leaves one at a time with `run_keys`"
)]
pub trait ExclusiveLeaf<Leaf: ?Sized>: sealed::Nothing {}

mod sealed {
    /// Implemented by nothing, and private: no `ExclusiveLeaf` impl can be written.
    pub trait Nothing {}
}

/// The body of the stand-in `lock_leaves`: never called, its bound cannot hold.
///
/// # Panics
///
/// Always; it cannot be reached, [`ExclusiveLeaf`] having no implementation.
#[cold]
pub fn no_exclusive_leaf<L: ?Sized, P>(root: &Arc<L>, paths: P) -> ! {
    let _ = (root, paths);
    unreachable!("`ExclusiveLeaf` has no implementation")
}
