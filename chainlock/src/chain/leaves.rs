//! Locking several leaves at once, all or nothing, in one global order.
//!
//! Leaves are locked while holding nothing else, in ascending address order of their locks.
//! Every thread that locks several leaves takes them in that same order, and threads that
//! descend hand over hand hold at most a parent while waiting for a leaf, never a leaf while
//! waiting for anything above it; so no cycle of waits, hence no deadlock, can form.

use super::end::FoundLeaf;
use super::wait::{Blocking, Wait};
use super::{ExclusiveLock, Exit, LeavesExit, TimedExclusiveLock};
use std::sync::Arc;
use std::time::Instant;

/// Locks `handles` (leaves at level `level`) in ascending address order and returns their
/// guards in the order of `handles`. With a deadline, gives up (releasing what it took)
/// when it passes.
pub(crate) fn lock_all<L: ExclusiveLock + ?Sized>(
    handles: &[Arc<L>],
    level: usize,
    lock: impl Fn(&Arc<L>) -> Option<L::Guard>,
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
    let mut guards: Vec<Option<L::Guard>> = handles.iter().map(|_| None).collect();
    for index in order {
        // On `TimedOut`, `guards` drops and releases every leaf taken so far.
        let exit = Exit::TimedOut { level };
        guards[index] = Some(lock(&handles[index]).ok_or(LeavesExit::Path { path: index, exit })?);
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
    /// Locks `handles` (leaves at level `level`) in ascending address order, holding nothing
    /// else, and returns their guards in the order of `handles`.
    ///
    /// # Errors
    ///
    /// [`LeavesExit::SameLeaf`] when two handles are the same lock, [`Exit::TimedOut`] (in
    /// [`LeavesExit::Path`]) when a deadline passes first.
    fn lock_all(self, handles: &[Arc<L>], level: usize) -> Result<Vec<L::Guard>, LeavesExit>;
}

impl<L: ExclusiveLock + ?Sized> LeafLocks<L> for Blocking {
    fn lock_all(self, handles: &[Arc<L>], level: usize) -> Result<Vec<L::Guard>, LeavesExit> {
        lock_all(handles, level, |handle| Some(L::lock_exclusive(handle)))
    }
}

impl<L: TimedExclusiveLock + ?Sized> LeafLocks<L> for Instant {
    fn lock_all(self, handles: &[Arc<L>], level: usize) -> Result<Vec<L::Guard>, LeavesExit> {
        lock_all(handles, level, |handle| {
            L::try_lock_exclusive_until(handle, self)
        })
    }
}

/// The body of a generated `lock_leaves` (`wait`: [`Blocking`]) or `lock_leaves_until`
/// (an [`Instant`]): the leaf at the end of each path (`find`, the chain's body given `wait`
/// and ended by [`Found`](super::end::Found), which found it hand over hand and released
/// its parent: its lock, level and closed check), in the order of `paths`; then the leaves
/// locked together in one global order ([`LeafLocks`]); then none kept if one of them is
/// closed.
///
/// # Errors
///
/// [`LeavesExit::Path`] with the [`Exit`] of the first path that failed (its leaf closed:
/// [`Exit::Absent`] at its level), [`LeavesExit::SameLeaf`] when two paths end at the same
/// leaf.
#[inline]
pub fn leaves<W: LeafLocks<L>, P, L: ExclusiveLock + ?Sized>(
    wait: W,
    paths: impl IntoIterator<Item = P>,
    mut find: impl FnMut(W, P) -> Result<FoundLeaf<L::Guard, L>, Exit>,
) -> Leaves<L::Guard> {
    let (mut handles, mut leaf) = (Vec::new(), None);
    for (path, keys) in paths.into_iter().enumerate() {
        let found = find(wait, keys).map_err(|exit| LeavesExit::Path { path, exit })?;
        leaf = Some((found.level, found.open));
        handles.push(found.lock);
    }
    // Every path ends at the chain's leaf level, checked the same way.
    let Some((level, open)) = leaf else {
        return Ok(Vec::new());
    };
    let guards = wait.lock_all(&handles, level)?;
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
