//! What a descent may ask of the data at a level.

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
