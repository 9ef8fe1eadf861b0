//! Why a walk of run-time depth stopped before its target.

use crate::chain::Absence;

/// Why a [`Walker`](super::Walker) walk stopped before reaching its target.
///
/// Depths count from the root (depth 0); every variant names the depth of the node the walk
/// could not reach or use. Whatever the variant, every lock the walk took has been released
/// by the time the caller sees it.
///
/// "No such node at depth `d`" is one match whether the node is missing or closed, as for
/// the chain lockers' [`Exit`](crate::Exit): `Err(WalkExit::Absent { depth: d, .. })`; the
/// [`Absence`] says which.
///
/// # Examples
///
/// ```
/// use chainlock::parking_lot::Mutex;
/// use chainlock::chain::Absence;
/// use chainlock::walk::{Exclusive, Step, WalkExit, Walker};
/// use chainlock::ChainNode;
/// use std::sync::Arc;
///
/// struct Node { next: Option<Arc<Mutex<Node>>> }
/// impl ChainNode for Node {}
///
/// let list = Arc::new(Mutex::new(Node { next: None }));
/// let outcome = Walker::new().descend(&list, Exclusive, |node, _depth| match &node.next {
///     Some(next) => Step::Descend(next.clone()),
///     None => Step::Absent,
/// });
/// assert_eq!(outcome.err(), Some(WalkExit::Absent { depth: 1, cause: Absence::Missing }));
/// assert!(list.try_lock().is_some(), "nothing stays locked after an early exit");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum WalkExit {
    /// There is no node at `depth`: the step at `depth - 1` answered
    /// [`Step::Absent`](super::Step::Absent) or the key was missing
    /// ([`Absence::Missing`]), or the node was reached but is closed
    /// ([`ChainNode::is_closed`](crate::ChainNode::is_closed), [`Absence::Closed`]): a closed
    /// node behaves as absent.
    #[error("the walk ended early: no node at depth {depth} ({cause})")]
    Absent {
        /// The depth of the missing or closed node.
        depth: usize,
        /// Missing, or closed.
        cause: Absence,
    },
    /// The deadline passed while waiting for the lock of the node at `depth`.
    #[error("the deadline passed while waiting for the lock of the node at depth {depth}")]
    TimedOut {
        /// The depth of the node whose lock could not be taken in time.
        depth: usize,
    },
    /// The step at `depth - 1` handed back a lock the walk already holds (the node's own, or a
    /// retained ancestor's): locking it again would deadlock, so the walk stopped instead.
    #[error("the walk ended early: the lock for depth {depth} is already held by this walk")]
    Cycle {
        /// The depth the held lock was handed back for.
        depth: usize,
    },
    /// The walk would go deeper than the walker's [`max_depth`](super::Walker::max_depth).
    /// (The step's answer comes first: at the limit, a missing child is still
    /// [`WalkExit::Absent`].)
    #[error("the walk ended early: it would go deeper than {max_depth}")]
    TooDeep {
        /// The walker's depth limit.
        max_depth: usize,
    },
    /// A step answered [`Step::Here`](super::Step::Here) on a node held in shared mode by a
    /// walk whose target must be exclusive ([`Crab`](super::Crab)): the node cannot become
    /// exclusive without being released first. Answer [`Step::Target`](super::Step::Target)
    /// one level higher instead.
    #[error(
        "the walk ended early: the node at depth {depth} is read-locked and cannot be the exclusive target"
    )]
    NotExclusive {
        /// The depth of the node that answered `Here`.
        depth: usize,
    },
}

impl WalkExit {
    /// The depth at which the walk stopped; `None` for [`WalkExit::TooDeep`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::walk::WalkExit;
    /// # use chainlock::chain::Absence;
    /// assert_eq!(WalkExit::Absent { depth: 3, cause: Absence::Closed }.depth(), Some(3));
    /// assert_eq!(WalkExit::TooDeep { max_depth: 8 }.depth(), None);
    /// ```
    #[must_use]
    pub const fn depth(&self) -> Option<usize> {
        match *self {
            WalkExit::Absent { depth, .. }
            | WalkExit::TimedOut { depth }
            | WalkExit::Cycle { depth }
            | WalkExit::NotExclusive { depth } => Some(depth),
            WalkExit::TooDeep { .. } => None,
        }
    }
}
