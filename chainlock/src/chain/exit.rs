//! Why a descent stopped before the leaf.

/// Why a chain locker stopped before reaching (or finishing at) the leaf.
///
/// Levels are numbered from the root (level 0). Stage `i` runs on level `i` and finds the
/// lock of level `i + 1`. Whatever the variant, every lock the descent took has been
/// released by the time the caller sees it.
///
/// # Examples
///
/// ```
/// use chainlock::{chain_locker, Exit};
/// use chainlock::parking_lot::Mutex;
/// use std::sync::Arc;
///
/// struct Dir { child: Option<Arc<Mutex<File>>> }
/// struct File { size: u64 }
///
/// let root = Arc::new(Mutex::new(Dir { child: None }));
/// let outcome = chain_locker!(Dir, File).run(&root, |dir| dir.child.clone(), |file| file.size);
/// assert_eq!(outcome, Err(Exit::Absent { stage: 0 }));
/// assert!(root.try_lock().is_some(), "nothing stays locked after an early exit");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum Exit {
    /// Stage `stage` found no next lock (its closure returned `None`, or the key is missing).
    #[error("the chain ended early: stage {stage} found no next lock")]
    Absent {
        /// The stage (= the level it ran on) that returned `None`.
        stage: usize,
    },
    /// Level `level` was reached but is closed: it behaves as absent for new descents
    /// (see [`ChainNode::is_closed`](crate::ChainNode::is_closed)).
    #[error("the chain ended early: level {level} is closed")]
    Closed {
        /// The level whose node is closed.
        level: usize,
    },
    /// Two of the paths given to `lock_leaves` lead to the same leaf; locking it twice
    /// would deadlock, so nothing was locked.
    #[error("paths {first} and {second} lead to the same leaf")]
    SameLeaf {
        /// The index of the first of the two paths.
        first: usize,
        /// The index of the second.
        second: usize,
    },
    /// The deadline passed while waiting for the lock of level `level`.
    #[error("the deadline passed while waiting for the lock of level {level}")]
    TimedOut {
        /// The level whose lock could not be taken in time.
        level: usize,
    },
}

impl Exit {
    /// The level at which the descent stopped: the level the absent lock would have been
    /// (`stage + 1`), the closed level, or the level whose lock timed out; `None` for
    /// [`Exit::SameLeaf`], which stopped before locking anything.
    ///
    /// # Examples
    ///
    /// ```
    /// # use chainlock::Exit;
    /// assert_eq!(Exit::Absent { stage: 1 }.level(), Some(2));
    /// assert_eq!(Exit::TimedOut { level: 0 }.level(), Some(0));
    /// assert_eq!(Exit::SameLeaf { first: 0, second: 1 }.level(), None);
    /// ```
    #[must_use]
    pub const fn level(&self) -> Option<usize> {
        match *self {
            Exit::Absent { stage } => Some(stage + 1),
            Exit::Closed { level } | Exit::TimedOut { level } => Some(level),
            Exit::SameLeaf { .. } => None,
        }
    }
}

/// Why `lock_leaves` locked nothing: the [`Exit`] and the index of the path it concerns
/// (for [`Exit::SameLeaf`], the later of the two paths).
///
/// # Examples
///
/// ```
/// # use chainlock::{Exit, chain::PathExit};
/// let exit = PathExit { path: 1, exit: Exit::Closed { level: 2 } };
/// assert_eq!(exit.to_string(), "path 1: the chain ended early: level 2 is closed");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[error("path {path}: {exit}")]
pub struct PathExit {
    /// The index of the path, in the order the paths were given.
    pub path: usize,
    /// What happened on that path.
    #[source]
    pub exit: Exit,
}
