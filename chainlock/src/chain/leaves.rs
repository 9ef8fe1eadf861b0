//! Locking several leaves at once, all or nothing, in one global order.
//!
//! Leaves are locked while holding nothing else, in ascending address order of their locks.
//! Every thread that locks several leaves takes them in that same order, and threads that
//! descend hand over hand hold at most a parent while waiting for a leaf, never a leaf while
//! waiting for anything above it; so no cycle of waits, hence no deadlock, can form.

use super::{Absence, ExclusiveLock, Exit, LeavesExit, TimedExclusiveLock};
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

/// Locks `handles` in ascending address order, holding nothing else, and returns their
/// guards in the order of `handles` (used by the generated `lock_leaves`).
///
/// # Errors
///
/// [`LeavesExit::SameLeaf`] when two handles are the same lock.
pub fn lock_leaves<L: ExclusiveLock + ?Sized>(
    handles: &[Arc<L>],
    level: usize,
) -> Result<Vec<L::Guard>, LeavesExit> {
    lock_all(handles, level, |handle| Some(L::lock_exclusive(handle)))
}

/// Like [`lock_leaves`], giving up at `deadline` and releasing what it took.
///
/// # Errors
///
/// [`LeavesExit::SameLeaf`] when two handles are the same lock, [`Exit::TimedOut`] (in
/// [`LeavesExit::Path`]) when the deadline passes first.
pub fn lock_leaves_until<L: TimedExclusiveLock + ?Sized>(
    handles: &[Arc<L>],
    level: usize,
    deadline: Instant,
) -> Result<Vec<L::Guard>, LeavesExit> {
    lock_all(handles, level, |handle| {
        L::try_lock_exclusive_until(handle, deadline)
    })
}

/// The leaf lock at the end of each path, in the order of `paths` (the first half of a
/// generated `lock_leaves`); the first path that fails names itself in the error.
///
/// # Errors
///
/// [`LeavesExit::Path`] with the [`Exit`] `find` returned.
#[inline]
pub fn find_leaves<P, L: ?Sized>(
    paths: impl IntoIterator<Item = P>,
    mut find: impl FnMut(P) -> Result<Arc<L>, Exit>,
) -> Result<Vec<Arc<L>>, LeavesExit> {
    let mut handles = Vec::new();
    for (path, keys) in paths.into_iter().enumerate() {
        handles.push(find(keys).map_err(|exit| LeavesExit::Path { path, exit })?);
    }
    Ok(handles)
}

/// `guards` unless one of the leaves is closed (`closed` asks the node): then none stays
/// locked and the error names its path.
///
/// # Errors
///
/// [`LeavesExit::Path`] with [`Exit::Absent`] (closed) at `level`.
#[inline]
pub fn leaves_open<G>(
    guards: Vec<G>,
    level: usize,
    closed: impl FnMut(&G) -> bool,
) -> Result<Vec<G>, LeavesExit> {
    match guards.iter().position(closed) {
        Some(path) => Err(LeavesExit::Path {
            path,
            exit: Exit::Absent {
                level,
                cause: Absence::Closed,
            },
        }),
        None => Ok(guards),
    }
}

/// What the stand-in `lock_leaves` of a chain whose leaf is not exclusive requires of its
/// `paths`: implemented by nothing, so that a call is one error in plain words.
#[diagnostic::on_unimplemented(
    message = "`lock_leaves` needs an exclusive leaf: this chain's leaf `{Leaf}` is `shared` or `upgradable`",
    label = "`lock_leaves` locks several leaves for writing at once",
    note = "make the leaf level exclusive (drop its `shared`/`upgradable` modifier), or lock the leaves one at a time with `run_keys`"
)]
pub trait ExclusiveLeaf<Leaf: ?Sized> {}

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
