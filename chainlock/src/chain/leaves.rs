//! Locking several leaves at once, all or nothing, in one global order.
//!
//! Leaves are locked while holding nothing else, in ascending address order of their locks.
//! Every thread that locks several leaves takes them in that same order, and threads that
//! descend hand over hand hold at most a parent while waiting for a leaf, never a leaf while
//! waiting for anything above it; so no cycle of waits, hence no deadlock, can form.

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
