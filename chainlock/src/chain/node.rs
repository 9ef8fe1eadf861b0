//! What a descent may ask of the data at a level, and how the generated code asks it
//! ([`ClosedProbe`], re-exported by `__private`).

use super::Exit;
use super::exit::open;

/// A node of a locked tree that can be *closed*: still present, but treated as absent by
/// every new descent, so that it can be removed later while threads already inside it
/// finish their work.
///
/// Generated lockers ask this of every level, the root included, after locking it, when the
/// level's type implements the trait; a closed level ends the descent with
/// [`Exit::Absent`](crate::Exit::Absent) (cause [`Absence::Closed`](crate::chain::Absence::Closed))
/// and releases its lock. Types that do not
/// implement it are never closed, at no cost.
///
/// # Examples
///
/// ```
/// use chainlock::{chain_locker, ChainNode, Exit, chain::Absence};
/// use chainlock::parking_lot::Mutex;
/// use std::sync::Arc;
///
/// struct Lecture { class: Arc<Mutex<Class>> }
/// struct Class { cancelled: bool, students: u32 }
/// impl ChainNode for Class {
///     fn is_closed(&self) -> bool { self.cancelled }
/// }
///
/// let class = Arc::new(Mutex::new(Class { cancelled: false, students: 1 }));
/// let lecture = Arc::new(Mutex::new(Lecture { class: class.clone() }));
/// let locker = chain_locker!(Lecture, Class);
///
/// assert_eq!(locker.run(&lecture, |l| Some(l.class.clone()), |c| c.students), Ok(1));
/// class.lock().cancelled = true;
/// assert_eq!(
///     locker.run(&lecture, |l| Some(l.class.clone()), |c| c.students),
///     Err(Exit::Absent { level: 1, cause: Absence::Closed }),
/// );
/// ```
pub trait ChainNode {
    /// Whether new descents must treat this node as absent. Defaults to never.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::ChainNode;
    ///
    /// struct Plain;
    /// impl ChainNode for Plain {}
    /// assert!(!Plain.is_closed());
    ///
    /// struct Door { shut: bool }
    /// impl ChainNode for Door {
    ///     fn is_closed(&self) -> bool { self.shut }
    /// }
    /// assert!(Door { shut: true }.is_closed());
    /// ```
    #[inline]
    fn is_closed(&self) -> bool {
        false
    }
}

/// Asks the node at level `.1` whether it is closed, when its type implements
/// [`ChainNode`], and answers "no" at compile time otherwise (autoref specialization: the
/// generated code calls `(&ClosedProbe(node, level)).open()?` on a concrete level type, and
/// method resolution prefers [`ProbeNode`] over [`ProbeOther`] when both apply).
pub struct ClosedProbe<'a, T: ?Sized>(pub &'a T, pub usize);

/// The [`ClosedProbe`] answer for level types that implement [`ChainNode`].
pub trait ProbeNode {
    /// Whether the probed node is closed.
    fn level_is_closed(&self) -> bool;
    /// `Ok` unless the node is closed: then [`Exit::Absent`] (closed) at its level.
    ///
    /// # Errors
    ///
    /// When the node is closed.
    fn open(&self) -> Result<(), Exit>;
}

impl<T: ?Sized + ChainNode> ProbeNode for ClosedProbe<'_, T> {
    #[inline]
    fn level_is_closed(&self) -> bool {
        self.0.is_closed()
    }

    #[inline]
    fn open(&self) -> Result<(), Exit> {
        open(self.0.is_closed(), self.1)
    }
}

/// The [`ClosedProbe`] answer for all other level types: never closed.
pub trait ProbeOther {
    /// Always `false`.
    fn level_is_closed(&self) -> bool;
    /// Always `Ok`.
    ///
    /// # Errors
    ///
    /// Never.
    fn open(&self) -> Result<(), Exit>;
}

impl<T: ?Sized> ProbeOther for &ClosedProbe<'_, T> {
    #[inline]
    fn level_is_closed(&self) -> bool {
        false
    }

    #[inline]
    fn open(&self) -> Result<(), Exit> {
        Ok(())
    }
}
