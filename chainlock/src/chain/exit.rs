//! Why a descent stopped before its leaf or target.
//!
//! Also the steps of a generated descent that end it ([`found`], [`open`], [`in_time`]) and
//! the exit of a mixed chain's walk ([`walk_exit`]): `__private` re-exports them for the code
//! `chain_locker!` generates.
#![expect(
    clippy::inline_always,
    reason = "the generated code's steps must inline into the caller to cost nothing"
)]

/// Why a descent stopped early: a chain locker's, a [`Walker`](crate::walk::Walker) walk's, or
/// a mixed chain's (a fixed chain with a level repeated at run time).
///
/// Levels are numbered from the root (level 0), the same number for a chain's level and a
/// walk's depth; in a mixed chain the repetitions count as levels. Every variant names the
/// level where the descent stopped: the level that would have been locked or used next, or
/// the one whose lock timed out ([`level`](Self::level) reads it whatever the variant).
/// Whatever the variant, every lock the descent took has been released by the time the
/// caller sees it.
///
/// "No such node at level 2" is one pattern, whether the node is missing or closed:
/// `Err(Exit::Absent { level: 2, .. })`; the [`Absence`] tells the two apart when it matters.
///
/// # Examples
///
/// A chain locker:
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
///
/// A walk, with the same type and the same numbering:
///
/// ```
/// use chainlock::parking_lot::Mutex;
/// use chainlock::chain::Absence;
/// use chainlock::walk::{Exclusive, Step, Walker};
/// use chainlock::{ChainNode, Exit};
/// use std::sync::Arc;
///
/// struct Node { next: Option<Arc<Mutex<Node>>> }
/// impl ChainNode for Node {}
///
/// let list = Arc::new(Mutex::new(Node { next: None }));
/// let outcome = Walker::new().descend(&list, Exclusive, |node, _level| match &node.next {
///     Some(next) => Step::Descend(next.clone()),
///     None => Step::Absent,
/// });
/// assert_eq!(outcome.err(), Some(Exit::Absent { level: 1, cause: Absence::Missing }));
/// assert!(list.try_lock().is_some(), "nothing stays locked after an early exit");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum Exit {
    /// There is no node at level `level`: the stage or step on level `level - 1` found no
    /// next lock (a chain's closure returned `None`, a walk's step answered
    /// [`Step::Absent`](crate::walk::Step::Absent), or the key is missing:
    /// [`Absence::Missing`]), or the node at `level` was reached but is closed
    /// ([`ChainNode::is_closed`](crate::ChainNode::is_closed), [`Absence::Closed`]), which
    /// behaves as absent. A closed root gives `level: 0`.
    #[error("the descent ended early: no node at level {level} ({cause})")]
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
    /// The step on level `level - 1` handed back, for level `level`, a lock this descent
    /// already holds: locking it again would deadlock, so the descent stopped instead.
    ///
    /// Which descents detect it, and against which locks:
    ///
    /// - a [`Walker`](crate::walk::Walker) walk compares the address of the lock its step
    ///   hands back with the locks it holds at that moment: the current node's (a step that
    ///   answers with the node's own lock), and in a
    ///   [retaining descent](crate::walk::Walker::descend_retaining) every retained
    ///   ancestor's too;
    /// - the repeated level of a mixed chain (`Dir*`) is such a walk: the same check, for the
    ///   repetitions;
    /// - a lock the descent has already *released* is not held: handing it back again is not
    ///   a cycle, the descent locks it once more and goes on (a tree that links back to an
    ///   ancestor is bounded by the depth limit instead: [`Exit::TooDeep`]).
    ///
    /// # Deadlocks
    ///
    /// A fixed chain locker's levels (every level but a mixed chain's repeated one) do not
    /// compare addresses: each stage must return the lock of the *next* level, never the lock
    /// of the level it runs on (the one the descent holds while the stage runs, whose guard
    /// the stage is given). A stage that hands back the lock it holds makes the descent wait
    /// for itself: with a lock that is not reentrant (a mutex, a reader-writer lock taken
    /// for writing) the thread or task deadlocks, and no `Exit` is ever returned.
    #[error("the descent ended early: the lock for level {level} is already held by this descent")]
    Cycle {
        /// The level the held lock was handed back for.
        level: usize,
    },
    /// The descent would go deeper than its depth limit, `max_depth` (a
    /// [`Walker`](crate::walk::Walker)'s [`max_depth`](crate::walk::Walker::max_depth), or
    /// [`Walker::DEFAULT_MAX_DEPTH`](crate::walk::Walker::DEFAULT_MAX_DEPTH) for the walk of a
    /// mixed chain's repeated level, where it counts the repetitions below the first one):
    /// level `level` is the first one past it. The step's answer comes first: at the limit,
    /// a missing child is still [`Exit::Absent`].
    #[error("the descent ended early: level {level} is deeper than the depth limit {max_depth}")]
    TooDeep {
        /// The first level past the limit.
        level: usize,
        /// The depth limit the descent ran with.
        max_depth: usize,
    },
    /// A walk's step answered [`Step::Here`](crate::walk::Step::Here) on a node held in
    /// shared mode by a walk whose target must be exclusive ([`Crab`](crate::walk::Crab)):
    /// the node cannot become exclusive without being released first. Answer
    /// [`Step::Target`](crate::walk::Step::Target) one level higher instead.
    #[error(
        "the descent ended early: the node at level {level} is read-locked and cannot be the exclusive target"
    )]
    NotExclusive {
        /// The level of the node that answered `Here`.
        level: usize,
    },
}

impl Exit {
    /// The level at which the descent stopped, whatever the variant.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::{Exit, chain::Absence};
    /// assert_eq!(Exit::Absent { level: 2, cause: Absence::Closed }.level(), 2);
    /// assert_eq!(Exit::TimedOut { level: 0 }.level(), 0);
    /// assert_eq!(Exit::TooDeep { level: 9, max_depth: 8 }.level(), 9);
    /// ```
    #[must_use]
    pub const fn level(&self) -> usize {
        match *self {
            Exit::Absent { level, .. }
            | Exit::TimedOut { level }
            | Exit::Cycle { level }
            | Exit::TooDeep { level, .. }
            | Exit::NotExclusive { level } => level,
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
/// assert_eq!(exit.to_string(), "path 1: the descent ended early: no node at level 2 (closed)");
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

/// What every generated descent returns.
pub type Res<T> = Result<T, Exit>;

/// A step that cannot fail (a blocking descent's wait for a lock) gives up with
/// [`Infallible`](core::convert::Infallible): never, so this conversion, which `?` needs in
/// the generated code, is never called.
///
/// # Examples
///
/// ```
/// use chainlock::Exit;
/// use std::convert::Infallible;
///
/// fn step() -> Result<u8, Infallible> { Ok(1) }
/// fn descent() -> Result<u8, Exit> { Ok(step()? + 1) }
/// assert_eq!(descent(), Ok(2));
/// ```
impl From<core::convert::Infallible> for Exit {
    fn from(never: core::convert::Infallible) -> Self {
        match never {}
    }
}

/// The lock a stage found for level `level`, or [`Exit::Absent`] (missing).
///
/// # Errors
///
/// [`Exit::Absent`] (missing) at `level` when the stage found nothing.
#[inline(always)]
pub fn found<T>(next: Option<T>, level: usize) -> Result<T, Exit> {
    match next {
        Some(next) => Ok(next),
        None => missing(level),
    }
}

/// [`found`]'s exit, out of the descent's way: `#[cold]`, so that the compiler weighs every
/// level's found child as the likely path (without it a deep chain's last levels looked
/// rare enough to LLVM that their locks and releases stayed calls: callgrind, 8 levels).
#[cold]
fn missing<T>(level: usize) -> Result<T, Exit> {
    Err(Exit::Absent {
        level,
        cause: Absence::Missing,
    })
}

/// `Ok` unless the node just locked at `level` is closed: then [`Exit::Absent`] (closed).
#[inline(always)]
pub(crate) fn open(closed: bool, level: usize) -> Result<(), Exit> {
    if closed {
        Err(Exit::Absent {
            level,
            cause: Absence::Closed,
        })
    } else {
        Ok(())
    }
}

/// The guard of a timed acquisition of level `level`, or [`Exit::TimedOut`].
#[inline(always)]
pub(crate) fn in_time<G>(guard: Option<G>, level: usize) -> Result<G, Exit> {
    guard.ok_or(Exit::TimedOut { level })
}

/// The walk's exit as the chain's: its level offset by `first` (the level of the first
/// repetition, the walk's root), whatever the variant.
#[inline]
#[must_use]
pub fn walk_exit(exit: Exit, first: usize) -> Exit {
    match exit {
        Exit::Absent { level, cause } => Exit::Absent {
            level: first + level,
            cause,
        },
        Exit::TimedOut { level } => Exit::TimedOut {
            level: first + level,
        },
        Exit::Cycle { level } => Exit::Cycle {
            level: first + level,
        },
        Exit::TooDeep { level, max_depth } => Exit::TooDeep {
            level: first + level,
            max_depth,
        },
        // Not from the walks the macro generates (`Shared` or `Exclusive`, whose path is
        // their target), offset all the same.
        Exit::NotExclusive { level } => Exit::NotExclusive {
            level: first + level,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::{Absence, Exit, walk_exit};

    #[test]
    fn a_walk_exit_becomes_the_chain_exit_at_its_level_from_the_chain_root() {
        let first = 2;
        for (walk, chain) in [
            (
                Exit::Absent {
                    level: 1,
                    cause: Absence::Closed,
                },
                Exit::Absent {
                    level: 3,
                    cause: Absence::Closed,
                },
            ),
            (Exit::TimedOut { level: 0 }, Exit::TimedOut { level: 2 }),
            (Exit::Cycle { level: 4 }, Exit::Cycle { level: 6 }),
            (
                Exit::TooDeep {
                    level: 9,
                    max_depth: 8,
                },
                Exit::TooDeep {
                    level: 11,
                    max_depth: 8,
                },
            ),
            (
                Exit::NotExclusive { level: 1 },
                Exit::NotExclusive { level: 3 },
            ),
        ] {
            assert_eq!(walk_exit(walk, first), chain);
            assert_eq!(walk_exit(walk, first).level(), walk.level() + first);
        }
    }
}
