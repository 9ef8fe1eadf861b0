//! Why a descent stopped before the leaf.

/// Why a chain locker stopped before reaching (or finishing at) the leaf.
///
/// Levels are numbered from the root (level 0); every variant names the level where the
/// descent stopped: the level that would have been locked next, or the one whose lock timed
/// out. Whatever the variant, every lock the descent took has been released by the time the
/// caller sees it.
///
/// "No such node at level 2" is one pattern, whether the node is missing or closed:
/// `Err(Exit::Absent { level: 2, .. })`; the [`Absence`] tells the two apart when it matters.
///
/// # Examples
///
/// ```
/// use chainlock::{chain_locker, Exit, chain::Absence};
/// use chainlock::parking_lot::Mutex;
/// use std::sync::Arc;
///
/// struct Dir { child: Option<Arc<Mutex<File>>> }
/// struct File { size: u64 }
///
/// let root = Arc::new(Mutex::new(Dir { child: None }));
/// let outcome = chain_locker!(Dir, File).run(&root, |dir| dir.child.clone(), |file| file.size);
/// assert_eq!(outcome, Err(Exit::Absent { level: 1, cause: Absence::Missing }));
/// assert!(matches!(outcome, Err(Exit::Absent { level: 1, .. })));
/// assert!(root.try_lock().is_some(), "nothing stays locked after an early exit");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum Exit {
    /// There is no node at level `level`: the stage on level `level - 1` found no next lock
    /// (its closure returned `None`, or the key is missing), or the node at `level` was
    /// reached but is closed ([`ChainNode::is_closed`](crate::ChainNode::is_closed)), which
    /// behaves as absent. A closed root gives `level: 0`.
    #[error("the chain ended early: no node at level {level} ({cause})")]
    Absent {
        /// The level that has no node.
        level: usize,
        /// Missing or closed.
        cause: Absence,
    },
    /// The deadline passed while waiting for the lock of level `level`.
    #[error("the deadline passed while waiting for the lock of level {level}")]
    TimedOut {
        /// The level whose lock could not be taken in time.
        level: usize,
    },
    /// In a chain with a repeated level (`Dir*`), the repeated step handed back a lock the
    /// descent already holds, for level `level`: locking it again would deadlock, so the
    /// descent stopped instead (see [`WalkExit::Cycle`](crate::walk::WalkExit::Cycle)).
    #[error("the chain ended early: the lock for level {level} is already held by this descent")]
    Cycle {
        /// The level the held lock was handed back for.
        level: usize,
    },
    /// In a chain with a repeated level (`Dir*`), the repetitions would go deeper than the
    /// walk's depth limit ([`Walker::DEFAULT_MAX_DEPTH`](crate::walk::Walker::DEFAULT_MAX_DEPTH)):
    /// level `level` is the first one past it.
    #[error("the chain ended early: level {level} is deeper than the depth limit")]
    TooDeep {
        /// The first level past the limit.
        level: usize,
    },
}

impl Exit {
    /// The level at which the descent stopped.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::{Exit, chain::Absence};
    /// assert_eq!(Exit::Absent { level: 2, cause: Absence::Closed }.level(), 2);
    /// assert_eq!(Exit::TimedOut { level: 0 }.level(), 0);
    /// ```
    #[must_use]
    pub const fn level(&self) -> usize {
        match *self {
            Exit::Absent { level, .. }
            | Exit::TimedOut { level }
            | Exit::Cycle { level }
            | Exit::TooDeep { level } => level,
        }
    }
}

/// Why a level has no node ([`Exit::Absent`]).
///
/// # Examples
///
/// ```
/// # use chainlock::chain::Absence;
/// assert_eq!(Absence::Closed.to_string(), "closed");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Absence {
    /// The parent's stage found no lock for it (the closure returned `None`, or no child
    /// has the key).
    Missing,
    /// The node was reached and locked, but it is closed, so it was released at once.
    Closed,
}

impl core::fmt::Display for Absence {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Absence::Missing => "missing",
            Absence::Closed => "closed",
        })
    }
}

/// Why `lock_leaves` locked nothing.
///
/// # Examples
///
/// ```
/// # use chainlock::{Exit, chain::{Absence, LeavesExit}};
/// let exit = LeavesExit::Path { path: 1, exit: Exit::Absent { level: 2, cause: Absence::Closed } };
/// assert_eq!(exit.to_string(), "path 1: the chain ended early: no node at level 2 (closed)");
/// let same = LeavesExit::SameLeaf { first: 0, second: 2 };
/// assert_eq!(same.to_string(), "paths 0 and 2 lead to the same leaf");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum LeavesExit {
    /// The descent along path number `path` (in the order the paths were given) ended early.
    #[error("path {path}: {exit}")]
    Path {
        /// The index of the path.
        path: usize,
        /// What happened on that path.
        #[source]
        exit: Exit,
    },
    /// Two of the paths lead to the same leaf; locking it twice would deadlock, so nothing
    /// was locked.
    #[error("paths {first} and {second} lead to the same leaf")]
    SameLeaf {
        /// The index of the first of the two paths.
        first: usize,
        /// The index of the second.
        second: usize,
    },
}
